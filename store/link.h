/* SPDX-License-Identifier: MIT
 *
 * A data core's link to the storage core (store/ops.h is the protocol): it carries the
 * broker's changes of persistent state and its barriers, in order, over the mesh (or, with
 * one core, straight into the storage engine's input), and decodes what the storage core
 * answers: committed tickets, the state to restore at boot, its lag. A data core never
 * waits for the disk: what the mesh cannot take now waits in a bounded backlog, in order;
 * when the backlog cannot take a record it is refused (-E_NOMEM) and the broker refuses
 * the acknowledgement that depended on it. Past lag_bytes of backlog the link says it is
 * congested: the data core then refuses new connections at the SYN and stops reading from
 * its connections until the storage core catches up.
 *
 * Lives in caller memory (store_link_mem_size); never allocates. Core-local, not
 * interrupt-safe.
 */
#ifndef STORE_LINK_H
#define STORE_LINK_H

#include "lib/compiler.h"
#include "store/ops.h"

struct store_link_config {
	uint32_t backlog_bytes;  /* what may wait for the mesh */
	uint32_t lag_bytes;      /* congested above this (< backlog_bytes / 2) */
	uint32_t payload_max;    /* bytes one mesh message carries (>= 64) */
	uint32_t max_record;     /* largest encoded record either way (restore included) */
	/* One message to the storage core: 0, or -E_AGAIN when the mesh has no credit now. */
	int (*send)(void *ctx, uint16_t kind, const void *data, uint32_t len);
	void *ctx;               /* linked */
};

/* What the storage core's messages become (all called from store_link_recv). */
struct store_link_upcalls {
	void (*done)(void *ctx, uint32_t ticket, bool ok);
	void (*restore_begin)(void *ctx, uint64_t key_base);
	void (*restored)(void *ctx, const struct store_rec *r); /* borrowed for the call */
	void (*restore_end)(void *ctx, uint64_t records);
	void (*lag)(void *ctx, bool lagging);
	void (*off)(void *ctx);  /* storage is off: serve without persistence */
	/* A telemetry query's rows or end (STORE_K_TLQ_ROWS / _END; data borrowed; may be NULL). */
	void (*tlq)(void *ctx, uint16_t kind, const uint8_t *data, uint32_t len);
	void *ctx;               /* linked */
};

struct store_link_stats {
	uint64_t records, parts, bytes, barriers;
	uint64_t backlogged, refused;   /* waited in the backlog / no room: the caller was told */
	uint64_t done_in, restored_in, bad_in;
};

struct store_link;

size_t store_link_mem_size(const struct store_link_config *cfg); /* 0 if invalid */
/* cfg copied (ctx linked), up copied (ctx linked). 0 or -E_INVAL. */
MUST_CHECK int store_link_init(struct store_link **out /* out */, void *mem, size_t len,
			       const struct store_link_config *cfg, const struct store_link_upcalls *up);

/* One record (borrowed), after every earlier one: 0, -E_INVAL (breaks the record rules: a
 * bug of the caller), or -E_NOMEM (no room: nothing of it was sent). */
MUST_CHECK int store_link_record(struct store_link *l, const struct store_rec *r);
/* Ask the storage core to answer (origin, ticket) once everything sent before is
 * committed. Control: it may use the backlog's last quarter. 0 or -E_NOMEM. */
MUST_CHECK int store_link_barrier(struct store_link *l, uint32_t origin, uint32_t ticket);
/* A control message in order behind the records (a telemetry query and its flow, at most
 * payload_max bytes): like a barrier, it may use the backlog's last quarter. 0 or -E_NOMEM. */
MUST_CHECK int store_link_control(struct store_link *l, uint16_t kind, const void *data, uint32_t len);
/* Room for about `bytes` more of records? */
bool store_link_room(const struct store_link *l, size_t bytes);
/* Backlog above lag_bytes, or the storage core said it lags. */
bool store_link_congested(const struct store_link *l);
/* Send what waits; returns the messages still waiting (poll again soon while not 0). */
uint32_t store_link_poll(struct store_link *l);
/* A message from the storage core (kinds 0x0380-0x03ff; data borrowed). */
void store_link_recv(struct store_link *l, uint16_t kind, const uint8_t *data, uint32_t len);
void store_link_stats(const struct store_link *l, struct store_link_stats *out /* out */);
uint32_t store_link_backlog(const struct store_link *l); /* bytes waiting */
MUST_CHECK int store_link_check(const struct store_link *l);

#endif
