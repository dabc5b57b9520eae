/* SPDX-License-Identifier: MIT
 *
 * The hosted platform: the portable stack (net/, net/tcp/) run as one Linux process, with
 * a TAP device as the NIC. This header is private to hosted/ and names the pieces main.c
 * wires together: a fixed frame pool, a link impairment (loss, reorder, delay) for tests
 * on kernels without netem, the TAP device, an echo service on our TCP, and the command
 * line. Host code (libc allowed), never linked into the kernel image; nothing here may
 * allocate per packet: every pool and queue is sized once at start-up from the options.
 * Single-threaded: everything runs on the loop of main.c.
 */
#ifndef HOSTED_HOSTED_H
#define HOSTED_HOSTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/node/broker.h"
#include "lib/compiler.h"
#include "tls/revoke.h"

struct tcp_stack;

/* ---- frame pool --------------------------------------------------------------------
 * n frames of frame_size bytes in one allocation made at init. A frame is either free
 * (on the free stack) or lent (in_use); hosted_pool_put() of a pointer that is not a
 * lent frame of this pool is a bug and aborts. */
struct hosted_pool {
	uint8_t *mem;
	size_t frame_size;
	uint32_t n;
	uint32_t *free_idx; /* stack of free frame indices */
	uint32_t n_free;
	uint8_t *in_use;    /* one flag per frame */
	uint32_t low_water; /* fewest free frames seen */
	uint64_t exhausted; /* hosted_pool_get() found none */
};

/* Allocate the pool (once, at start-up). -E_NOMEM or -E_INVAL. */
MUST_CHECK int hosted_pool_init(struct hosted_pool *p, uint32_t n, size_t frame_size);
void hosted_pool_fini(struct hosted_pool *p);
/* Lend a frame (returned owned until hosted_pool_put), NULL when none is free. */
uint8_t *hosted_pool_get(struct hosted_pool *p);
/* Give a lent frame back (taken). Aborts on a foreign or double put. */
void hosted_pool_put(struct hosted_pool *p, uint8_t *frame);

/* ---- link impairment ----------------------------------------------------------------
 * netem's model for one direction: each frame is dropped with loss_pct, else sent at once
 * with reorder_pct (overtaking the delayed ones), else held delay_ms in a bounded FIFO.
 * Deterministic for a given seed. Frames in the queue belong to the impairment until
 * hosted_impair_pop() returns them. */
enum hosted_impair_verdict {
	HOSTED_IMPAIR_PASS = 0,  /* deliver now; caller keeps the frame */
	HOSTED_IMPAIR_DROP = 1,  /* caller gives the frame back to its pool */
	HOSTED_IMPAIR_QUEUED = 2 /* taken: comes back from hosted_impair_pop() */
};
struct hosted_impair_item {
	uint8_t *frame;
	size_t len;
	uint64_t due_ms;
};
struct hosted_impair {
	uint32_t loss_pct, reorder_pct, delay_ms; /* all 0: impairment off */
	uint64_t rng;
	struct hosted_impair_item *q; /* ring of cap items */
	uint32_t cap, head, n;
	uint64_t dropped, reordered, delayed, queue_full;
};

/* Allocate the queue (cap items) and seed the generator. -E_INVAL, -E_NOMEM. */
MUST_CHECK int hosted_impair_init(struct hosted_impair *im, uint32_t loss_pct,
				  uint32_t reorder_pct, uint32_t delay_ms, uint32_t cap,
				  uint64_t seed);
void hosted_impair_fini(struct hosted_impair *im);
bool hosted_impair_on(const struct hosted_impair *im);
/* Decide the fate of one frame (`frame` borrowed unless QUEUED is returned). */
enum hosted_impair_verdict hosted_impair_offer(struct hosted_impair *im, uint8_t *frame,
					       size_t len, uint64_t now_ms);
/* The next frame whose delay is over, or NULL (returned owned; `len` out). */
uint8_t *hosted_impair_pop(struct hosted_impair *im, uint64_t now_ms, size_t *len /* out */);
/* Due time of the queue head, UINT64_MAX when empty. */
uint64_t hosted_impair_next_ms(const struct hosted_impair *im);

/* ---- TAP device ------------------------------------------------------------------- */
/* Attach to (or create) TAP device `name` with IFF_TAP|IFF_NO_PI, non-blocking. Returns
 * the fd or a negative errno; `err` gets a short reason. */
int hosted_tap_open(const char *name, const char **err /* out */);

/* ---- echo service on our TCP: tests/support/tcp_echo.h (shared with kernel/knet's unit
 * test); main.c gives it malloc'd memory. */

/* ---- MQTT broker (the node's broker, kernel/node/broker.h) on our TCP -----------------
 * The image's broker glue over the hosted port (hosted/node_port.c: malloc, getrandom,
 * clock_gettime): embedded development certificates, configuration limits, an accounted
 * heap. One per process: it owns the TLS handshake env, whose mbedTLS hooks are
 * process-global. */
struct dp;
struct blk_dev;
struct hosted_store;
struct hosted_broker {
	struct node_broker nb;
	struct node_revoked image;     /* the image's serials, as storage keeps them */
	struct hosted_store *store;    /* NULL without --disk: in memory only */
};
/* Create the handshake env and the data plane for max_conn connections, with storage on
 * disk (linked; its name for the log) when disk is not NULL; client_id_override: the
 * broker takes any client id from a device (mqtt.client_id_policy "override", for tests of
 * generic clients). 0 or -E_*. */
/* Storage knobs the command line may change (tests and benchmarks): the configuration's
 * values otherwise. */
struct hosted_storage_opts {
	bool no_telemetry_log;
	uint32_t backup_first_s, backup_interval_s; /* 0: the configuration's */
	bool scrub_set;             /* scrub_kb_per_s given (0 turns the scrubber off) */
	uint32_t scrub_kb_per_s;
};
/* The fleet's ring from the command line (--fleet-member, --fleet-self; ADR-072): members
 * "name=host:port" and self linked (argv); n 0: the configuration's [fleet]. */
#define HOSTED_FLEET_MAX 16u
struct hosted_fleet_opts {
	const char *members[HOSTED_FLEET_MAX];
	uint32_t n;
	const char *self;
};
MUST_CHECK int hosted_broker_init(struct hosted_broker *hb, uint32_t max_conn, struct blk_dev *disk,
				  const char *disk_name, const struct hosted_storage_opts *so,
				  bool client_id_override, const struct hosted_fleet_opts *fleet);
/* Link the TCP stack (created with dp_tcp_upper and the dp as ctx). */
void hosted_broker_attach(struct hosted_broker *hb, struct tcp_stack *tcp);
/* Safe point of the loop (after tcp_poll): reap, handshake deadlines, broker tick, then
 * storage's pass. Returns the work left for the next pass at once (staged handshakes,
 * storage with work now). */
uint32_t hosted_broker_poll(struct hosted_broker *hb);
/* When storage next has work (CLOCK_MONOTONIC ms; UINT64_MAX none). */
uint64_t hosted_broker_due_ms(const struct hosted_broker *hb);
/* Two stats lines on stdout: connections, bytes per connection, refusals. */
void hosted_broker_stats(struct hosted_broker *hb, const char *tag);
/* Abort every connection (TCP must still exist), free everything, report leaks. */
void hosted_broker_fini(struct hosted_broker *hb);

/* ---- storage (hosted/store.c): store/service.h over the file disk ------------------
 * One core: the data plane's link feeds the service's local queue, the service's messages
 * go straight into the data plane from hosted_store_poll. create: the service, idle until
 * the first poll (blk, name and revoked linked). link: storage's fields of the broker's
 * configuration. bind: the data plane, once it exists. finish: commit what
 * is queued and close the database (a clean stop). */
MUST_CHECK int hosted_store_create(struct hosted_store **out /* out */, struct blk_dev *blk, const char *name,
				   const struct tls_revoke_list *revoked, const struct hosted_storage_opts *so);
void hosted_store_link(struct hosted_store *st, struct node_broker_config *bc /* in/out */);
void hosted_store_bind(struct hosted_store *st, struct dp *dp);
uint32_t hosted_store_poll(struct hosted_store *st);
uint64_t hosted_store_due_ms(const struct hosted_store *st);
void hosted_store_stats(struct hosted_store *st, const char *tag);
void hosted_store_finish(struct hosted_store *st);
void hosted_store_destroy(struct hosted_store *st); /* NULL: no-op */

/* ---- packet capture (debugging aid) ------------------------------------------------ */
struct hosted_pcap {
	void *f; /* FILE *, NULL when off */
};
/* Create `path` and write the pcap header. 0 or -1 (errno set). */
MUST_CHECK int hosted_pcap_open(struct hosted_pcap *pc, const char *path);
/* Append one frame (borrowed for the call); stops capturing after a write error. */
void hosted_pcap_frame(struct hosted_pcap *pc, const uint8_t *frame, size_t len);
void hosted_pcap_close(struct hosted_pcap *pc);

/* ---- command line ------------------------------------------------------------------ */
struct hosted_opts {
	const char *tap;
	bool dhcp;
	uint32_t ip, mask, gw; /* host order */
	uint8_t mac[6];
	bool mac_set;
	uint16_t echo_port;
	uint32_t max_conn;
	uint32_t frames;       /* frame pool size */
	uint32_t echo_bufs, echo_buf_size;
	uint32_t tick_ms;
	uint32_t stats_ms;     /* 0: no periodic stats */
	uint16_t mtu;
	uint32_t loss_pct, reorder_pct, delay_ms; /* --impair */
	bool impair_rx, impair_tx; /* --impair-dir: frames to us (like netem on the
				    * TAP's Linux side), from us, or both */
	uint64_t seed;         /* impairment seed, 0: random */
	uint32_t run_ms;       /* 0: until a signal */
	const char *pcap;      /* capture file, NULL: none */
	const char *disk;      /* file behind the block interface, NULL: none */
	uint32_t disk_mib;     /* create/extend the disk file to this size (0: as is) */
	bool broker;           /* MQTT over TLS on CONF_TCP_PORT instead of echo */
	struct hosted_storage_opts storage; /* --no-telemetry-log, --backup-s, --scrub-kb-s */
	uint32_t broker_stats_ms; /* broker line period (default 10000), 0: off */
	bool client_id_override;  /* --client-id-policy override */
	bool no_curve_driver;     /* --no-curve-driver: mbedTLS's own curve arithmetic (make bench) */
	struct hosted_fleet_opts fleet; /* --fleet-member (repeated), --fleet-self */
};
/* Parse argv into `o` (defaults first). 0, or -E_INVAL with `err` (a static message)
 * naming the bad option; 1 when --help was asked. */
MUST_CHECK int hosted_opts_parse(struct hosted_opts *o /* out */, int argc, char **argv,
				 const char **err /* out */);
void hosted_opts_usage(const char *prog);

#endif
