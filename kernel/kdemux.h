/* SPDX-License-Identifier: MIT
 *
 * The mesh demultiplexer: one per core, the only xcore_poll handler of that core. It
 * hands each received mesh message to the module that registered the range of message
 * kinds it falls in, so that several modules (the network data plane, the broker shards,
 * ...) share one mesh without knowing each other. Portable; the table is caller memory.
 * It never looks inside a message and never keeps one past the handler call.
 *
 * Kind ranges (uint16_t `kind` of struct xcore_msg), fixed here so modules cannot clash:
 *   0x0000-0x00ff  unassigned (tests)
 *   0x0100-0x01ff  network data plane: frames and control (arch glue, kernel/ksteer.h)
 *   0x0200-0x02ff  broker shards (reserved: routing between dp/ shards)
 *   0x0300-0x03ff  storage (data cores <-> the storage core)
 *   0x0400-0x040f  the console's changes (revocations, kicks) to every data core
 *   0x0410-0xffff  unassigned
 *
 * Calling context: kdemux_register on the owning core before it polls (or on the boot
 * core before the owning core starts: the start publishes the table); kdemux_poll and
 * the handlers on the owning core only.
 *
 * Design note.
 *  1. Registered ranges are disjoint, each first <= last, n <= cap; the table is kept
 *     sorted by first.
 *  2. Every message handed to kdemux_recv goes to exactly one handler or is counted in
 *     n_unclaimed; either way xcore consumes it when kdemux_recv returns.
 * States: INIT (kdemux_init) -> REGISTERING (kdemux_register)* -> POLLING; registering
 * while polling is allowed on the owning core (a handler may register a range).
 */
#ifndef KERNEL_KDEMUX_H
#define KERNEL_KDEMUX_H

#include "kernel/xcore.h"

#define KDEMUX_NET_FIRST 0x0100u
#define KDEMUX_NET_LAST 0x01ffu
#define KDEMUX_SHARD_FIRST 0x0200u
#define KDEMUX_SHARD_LAST 0x02ffu
#define KDEMUX_STORE_IN_FIRST 0x0300u  /* data cores -> the storage core (store/ops.h) */
#define KDEMUX_STORE_IN_LAST 0x037fu
#define KDEMUX_STORE_OUT_FIRST 0x0380u /* the storage core -> data cores */
#define KDEMUX_STORE_OUT_LAST 0x03ffu
#define KDEMUX_CTL_FIRST 0x0400u       /* the console's changes to every data core (kernel/node) */
#define KDEMUX_CTL_LAST 0x040fu

struct kdemux_entry { /* fields private; the caller only provides the array */
	uint16_t first, last;
	xcore_recv_fn fn;
	void *ctx;
	uint64_t n_msgs;
};

struct kdemux {
	struct kdemux_entry *tab; /* linked: cap entries */
	uint32_t cap, n;
	uint64_t n_unclaimed; /* messages of a kind nobody registered (a bug or a version skew) */
};

/* Empty table over tab (linked, cap >= 1 entries). 0 or -E_INVAL. */
MUST_CHECK int kdemux_init(struct kdemux *d /* out */, struct kdemux_entry *tab, uint32_t cap);

/* Claim kinds first..last (inclusive) for fn (ctx linked). 0; -E_INVAL for first > last
 * or no fn; -E_EXIST when the range overlaps a registered one; -E_NOMEM when full. */
MUST_CHECK int kdemux_register(struct kdemux *d, uint16_t first, uint16_t last, xcore_recv_fn fn,
			       void *ctx);

/* The xcore_recv_fn (ctx = struct kdemux *): dispatch msg by kind (invariant 2). */
void kdemux_recv(void *ctx, uint32_t src, struct xcore_msg *msg);

/* xcore_poll(m, self) through this table; returns the messages handled (loop work). */
uint32_t kdemux_poll(struct kdemux *d, struct xcore_mesh *m, uint32_t self);

/* Messages delivered to the range containing `kind` (0 if none registered). */
uint64_t kdemux_count(const struct kdemux *d, uint16_t kind);

#endif
