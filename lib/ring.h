/* SPDX-License-Identifier: MIT
 *
 * Bounded lock-free single-producer single-consumer ring of fixed-size slots: the only
 * mutable state cores share. The caller owns the storage (slot_count * slot_size bytes,
 * slot_count a power of two) and the ring struct; nothing here allocates.
 *
 * Invariants:
 *  1. head is written only by the producer, tail only by the consumer.
 *  2. 0 <= head - tail <= slot_count (indices are free-running uint32_t).
 *  3. A slot is written by the producer only while it is outside [tail, head), and read
 *     by the consumer only while it is inside it.
 * Zero-copy use: spsc_reserve()/spsc_commit() on the producer side, spsc_peek()/
 * spsc_release() on the consumer side; spsc_push()/spsc_pop() copy one slot.
 */
#ifndef LIB_RING_H
#define LIB_RING_H

#include <stdatomic.h>
#include "lib/compiler.h"

#define SPSC_CACHELINE 64

struct spsc_ring {
	/* Producer-owned line. */
	_Atomic uint32_t head ALIGNED(SPSC_CACHELINE);
	uint32_t tail_cache; /* producer's last view of tail */
	/* Consumer-owned line. */
	_Atomic uint32_t tail ALIGNED(SPSC_CACHELINE);
	uint32_t head_cache; /* consumer's last view of head */
	/* Read-only after init. */
	uint8_t *slots ALIGNED(SPSC_CACHELINE); /* linked: must outlive the ring */
	uint32_t mask;
	uint32_t slot_size;
};

/* Initialise over caller storage. slot_count must be a power of two >= 2.
 * Returns 0 or -E_INVAL. Not thread-safe: call before sharing the ring. */
int spsc_init(struct spsc_ring *r, void *storage, uint32_t slot_count, uint32_t slot_size) MUST_CHECK;

/* Producer side. */
void *spsc_reserve(struct spsc_ring *r);   /* NULL when full */
void spsc_commit(struct spsc_ring *r);      /* publish the reserved slot */
int spsc_push(struct spsc_ring *r, const void *msg) MUST_CHECK; /* -E_AGAIN when full */
uint32_t spsc_free_slots(struct spsc_ring *r);

/* Consumer side. */
const void *spsc_peek(struct spsc_ring *r); /* NULL when empty */
void spsc_release(struct spsc_ring *r);      /* done with the peeked slot */
int spsc_pop(struct spsc_ring *r, void *out) MUST_CHECK; /* -E_AGAIN when empty */
uint32_t spsc_used_slots(struct spsc_ring *r);

#endif
