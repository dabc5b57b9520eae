/* SPDX-License-Identifier: MIT
 *
 * The core mesh: the only channel between worker cores. One lib/ring SPSC ring per ordered
 * pair of cores (i -> j, i != j) of fixed-size message slots, with credit-based flow
 * control so that a slow or flooded destination never makes a sender block or lose a
 * message silently, and a reserve of slots that only control messages may use. Portable;
 * the mesh lives in caller memory sized by xcore_mesh_size(); nothing here allocates,
 * blocks, spins or takes a lock.
 *
 * Calling context: xcore_send*() for source core s, and xcore_poll() for core s, run only
 * on core s (they touch s's private state without synchronisation); different cores call
 * them concurrently. Statistics are read by their owner, or by another core after a
 * release/acquire handoff (or with every core quiescent). Not from interrupt handlers.
 * A slot's header is a struct because only our own code on another core writes it: the
 * mesh never carries bytes from outside before a layer has parsed them.
 */
#ifndef KERNEL_XCORE_H
#define KERNEL_XCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/compiler.h"

#define XCORE_MAX_CORES 64u
#define XCORE_MAX_SLOTS 65536u     /* per ring */
#define XCORE_MAX_SLOT_SIZE 65536u /* bytes, header included */
#define XCORE_HDR_SIZE 8u          /* kind, class, length */
#define XCORE_MEM_ALIGN 64u        /* alignment the caller's memory must have */

/* Message classes: data is limited by credits; control may also use the reserve; bulk is
 * limited by credits and leaves bulk_reserve of them to data (a flood of bulk messages can
 * never take the last slots data needs). */
enum xcore_class {
	XCORE_DATA = 0,
	XCORE_CTRL = 1,
	XCORE_BULK = 2,
};

struct xcore_config {
	uint32_t n_cores;        /* 1..XCORE_MAX_CORES */
	uint32_t slots_per_ring; /* power of two, 2..XCORE_MAX_SLOTS */
	uint32_t slot_size;      /* bytes incl. the 8-byte header; multiple of 8, 16..XCORE_MAX_SLOT_SIZE */
	uint32_t ctrl_slots;     /* reserve only control may use: 1..slots_per_ring-1 */
	uint32_t credit_batch;   /* a sender out of credit takes new credit only in batches of
				  * at least this many: 1..slots_per_ring-ctrl_slots */
	uint32_t poll_max;       /* messages one xcore_poll() call handles at most: >= 1 */
	uint32_t poll_per_source; /* ... and at most this many from one source: >= 1 */
	uint32_t bulk_reserve;   /* data credits bulk messages leave unused:
				  * 0..slots_per_ring-ctrl_slots-credit_batch (0: bulk is data) */
};

/* A received message, borrowed for the duration of the handler call only (it lives in the
 * ring slot, which is released when the handler returns). The receiver owns the slot
 * until then, so the handler may modify data[] in place (TLS decrypts a forwarded frame
 * where it lies); it must not change kind, cls or len, nor keep a pointer into it. */
struct xcore_msg {
	uint16_t kind;  /* the sender's, opaque here */
	uint8_t cls;    /* enum xcore_class */
	uint8_t pad;
	uint32_t len;   /* bytes of data[], <= xcore_payload_max() */
	uint8_t data[]; /* 8-byte aligned */
};

/* Per ordered pair src -> dst: the tx counters are written by src, the rx ones by dst. */
struct xcore_pair_stats {
	uint64_t n_sent;       /* data messages sent */
	uint64_t n_ctrl_sent;  /* control messages sent */
	uint64_t n_stall;      /* data sends refused for lack of credit (-E_AGAIN) */
	uint64_t n_ctrl_stall; /* control sends refused: the ring, reserve included, is full */
	uint64_t n_bulk_stall; /* bulk sends refused: no credit beyond bulk_reserve */
	uint64_t n_refill;     /* times the sender re-read the consumer's index for credit */
	uint64_t n_recv;       /* messages (both classes) handed to the receiver */
	uint64_t n_bad;        /* slots with an impossible length (a bug), skipped */
};

struct xcore_mesh; /* opaque, in caller memory */

/* Bytes of caller memory a mesh with *cfg needs (*out). 0 or -E_INVAL (config out of range). */
MUST_CHECK int xcore_mesh_size(const struct xcore_config *cfg, size_t *out /* out */);

/* Lay the mesh out in mem (linked: must outlive the mesh; XCORE_MEM_ALIGN-aligned, len >=
 * xcore_mesh_size) with every core holding full credit. *cfg is copied. Returns 0 and
 * *out, or -E_INVAL. Call before any core uses it; the cores must then be started (or
 * told) through a release/acquire handoff or an IPI, which publishes the layout. */
MUST_CHECK int xcore_mesh_init(struct xcore_mesh **out /* out */, void *mem, size_t len,
			       const struct xcore_config *cfg);

/* Largest payload one message carries: slot_size - XCORE_HDR_SIZE. */
uint32_t xcore_payload_max(const struct xcore_mesh *m);
uint32_t xcore_n_cores(const struct xcore_mesh *m);

/* On core src: copy len bytes of data (borrowed) into a message of class XCORE_DATA to
 * core dst. 0; -E_AGAIN when src holds no credit for dst (counted in n_stall; nothing
 * was sent, retry on a later pass or drop and count); -E_INVAL for src == dst, a core out
 * of range or len > xcore_payload_max (a caller bug; nothing sent). */
MUST_CHECK int xcore_send(struct xcore_mesh *m, uint32_t src, uint32_t dst, uint16_t kind,
			  const void *data, uint32_t len);

/* As xcore_send but class XCORE_CTRL: needs no credit and may use the ctrl_slots reserve,
 * so data can never block it. -E_AGAIN (n_ctrl_stall) only when the ring is completely
 * full, which needs more than ctrl_slots control messages in flight to dst: a protocol
 * that keeps at most ctrl_slots outstanding per destination is never refused. Messages of
 * both classes stay in one FIFO per pair: a control message is received after every
 * message src sent to dst before it. */
MUST_CHECK int xcore_send_ctrl(struct xcore_mesh *m, uint32_t src, uint32_t dst, uint16_t kind,
			       const void *data, uint32_t len);

/* As xcore_send but class XCORE_BULK: sent only while src holds more than bulk_reserve
 * credits for dst (re-read when not), so bulk traffic leaves data messages at least
 * bulk_reserve slots of every ring. -E_AGAIN (n_bulk_stall) otherwise; counted with data in
 * n_sent. One FIFO per pair with the other classes. */
MUST_CHECK int xcore_send_bulk(struct xcore_mesh *m, uint32_t src, uint32_t dst, uint16_t kind,
			       const void *data, uint32_t len);

/* Data credits src currently holds for dst, after re-reading the consumer's index (for
 * tests and telemetry; core src only). */
uint32_t xcore_credits(struct xcore_mesh *m, uint32_t src, uint32_t dst);

/* The receiver's handler: msg is borrowed (writable, see struct xcore_msg) until it
 * returns and is consumed whatever it does, so consumption never depends on the
 * receiver's own sends (see the design note). */
typedef void (*xcore_recv_fn)(void *ctx, uint32_t src, struct xcore_msg *msg);

/* On core self: hand incoming messages to fn (ctx linked for the call), visiting sources
 * round-robin from one past the previous call's first, at most poll_per_source from each
 * and poll_max in all. Returns the number handed (for the loop's work count). */
uint32_t xcore_poll(struct xcore_mesh *m, uint32_t self, xcore_recv_fn fn, void *ctx);

/* On core self: true when some ring into self holds a message (the idle path asks this
 * after announcing that it halts; see the platform's wake-up protocol). Reads each
 * ring's head with acquire; changes nothing. */
bool xcore_pending(struct xcore_mesh *m, uint32_t self);

/* Credit wake-up (invariant 7 of xcore.c). On core self, after xcore_poll: the sources
 * whose last data or bulk send to self was refused for credit and whose ring into self
 * now has the room that send needs (bit s for core s); issues a seq_cst fence first when
 * anything was consumed since the last call. The caller wakes each of them (the
 * platform's wake-up reads their `sleeping` flag after this fence). Changes only self's
 * own record of what it consumed. */
uint64_t xcore_credit_waiters(struct xcore_mesh *m, uint32_t self);

/* On core self, from the idle path after its seq_cst fence (as xcore_pending): true when a
 * ring self was refused credit on now has the room the refused send needed (that wish is
 * then forgotten: the core runs one more pass to use it instead of halting). */
bool xcore_credit_back(struct xcore_mesh *m, uint32_t self);

/* Counters of the pair src -> dst (*out). See the calling context above. */
void xcore_stats(const struct xcore_mesh *m, uint32_t src, uint32_t dst,
		 struct xcore_pair_stats *out /* out */);

/* Check the invariants of the design note that the calling core can see without racing
 * (core self's own state; all cores when quiescent). 0 or -E_CORRUPT. */
MUST_CHECK int xcore_check_invariants(struct xcore_mesh *m, uint32_t self);

#endif
