/* SPDX-License-Identifier: MIT
 *
 * Hierarchical timer wheel (4 levels x 64 slots) over caller-owned intrusive nodes
 * addressed by 32-bit index, used by TCP for its one timer per control block. Insert and
 * cancel are O(1); advancing costs O(1) per tick plus the nodes it fires or cascades.
 * It never allocates, never calls back from insert/cancel, and owns no node memory.
 *
 * Design note.
 *  Ticks are unsigned 32-bit and compared with serial arithmetic, so the horizon of one
 *  insertion is 2^24 ticks (longer delays are clamped and re-cascaded, never lost).
 *  Invariants:
 *   1. A node is linked (next != TCP_TW_NIL) iff it sits in exactly one slot list.
 *   2. Level L holds nodes whose delay from `now` was in [64^L, 64^(L+1)) when they were
 *      (re)inserted; the slot is (expires >> 6L) & 63, so a level-L slot is cascaded no
 *      later than the node's expiry tick.
 *   3. `now` is the next tick not yet processed; a node inserted with expires < now is
 *      placed to fire at `now` (at most one tick late, never skipped).
 *   4. n_linked equals the number of linked nodes.
 *   5. Bit s of occupied[L] is set iff slot s of level L is not empty.
 *  State of a node:  unlinked --insert--> linked --fire/cancel--> unlinked
 *                    linked --insert--> linked (moved)
 */
#ifndef NET_TCP_TIMER_WHEEL_H
#define NET_TCP_TIMER_WHEEL_H

#include "lib/compiler.h"

#define TCP_TW_LEVELS 4
#define TCP_TW_SLOT_BITS 6
#define TCP_TW_SLOTS (1u << TCP_TW_SLOT_BITS)
#define TCP_TW_NIL 0xffffffffu

/* Embedded in the caller's objects; 12 bytes. */
struct tcp_tw_node {
	uint32_t next, prev;
	uint32_t expires; /* tick */
};

struct tcp_tw_wheel {
	uint8_t *base;    /* linked: the caller's node array */
	size_t stride;    /* bytes between objects */
	size_t node_off;  /* offset of the tcp_tw_node inside an object */
	uint32_t n_nodes; /* objects 0..n_nodes-1; sentinels follow */
	uint32_t now;     /* next tick to process */
	uint32_t n_linked;
	uint64_t occupied[TCP_TW_LEVELS]; /* bit per non-empty slot: skips empty ticks */
	/* One sentinel per slot plus a scratch list used while firing. */
	struct tcp_tw_node heads[TCP_TW_LEVELS * TCP_TW_SLOTS + 1];
};

/* Callback for expired nodes. The node is already unlinked; the callback may re-insert
 * or cancel any node (including this one). */
typedef void (*tcp_tw_fire_fn)(void *ctx, uint32_t idx);

/* Set up an empty wheel. base/stride/node_off locate node i at base + i*stride + node_off
 * (base linked: must outlive the wheel); every node starts unlinked. n_nodes must be
 * below TCP_TW_NIL - the number of sentinels. */
void tcp_tw_init(struct tcp_tw_wheel *w, void *base, size_t stride, size_t node_off,
		 uint32_t n_nodes, uint32_t now_tick);
/* Mark node idx unlinked (for objects that are reused). */
void tcp_tw_node_reset(struct tcp_tw_wheel *w, uint32_t idx);
/* Arm (or re-arm) node idx to fire at expires_tick. O(1). */
void tcp_tw_insert(struct tcp_tw_wheel *w, uint32_t idx, uint32_t expires_tick);
/* Disarm node idx; no effect if it is not armed. O(1). */
void tcp_tw_cancel(struct tcp_tw_wheel *w, uint32_t idx);
bool tcp_tw_armed(const struct tcp_tw_wheel *w, uint32_t idx);
/* Process every tick up to and including now_tick, firing expired nodes in expiry order
 * (ties in insertion order within a slot). Returns the number of nodes fired. */
size_t tcp_tw_advance(struct tcp_tw_wheel *w, uint32_t now_tick, tcp_tw_fire_fn fire, void *ctx);
/* Check invariants 1, 4 and 5 (O(n)); 0 or -E_CORRUPT. For tests and fuzzing. */
MUST_CHECK int tcp_tw_check(const struct tcp_tw_wheel *w);

#endif
