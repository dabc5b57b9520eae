/* SPDX-License-Identifier: MIT
 *
 * SPSC ring (lib/ring.h). Memory-ordering argument, once for the whole file:
 *  - The producer fills a slot, then publishes it with a release store of head; the
 *    consumer's acquire load of head therefore sees the slot's bytes.
 *  - The consumer finishes reading a slot, then frees it with a release store of tail;
 *    the producer's acquire load of tail therefore cannot reuse a slot still being read.
 *  - Each side reads its own index relaxed: only it ever writes that index.
 * The cached copy of the other side's index saves a shared cache-line read per call while
 * the ring is neither full nor empty.
 */
#include "lib/ring.h"
#include "lib/err.h"
#include "lib/mem.h"

int spsc_init(struct spsc_ring *r, void *storage, uint32_t slot_count, uint32_t slot_size)
{
	if (!storage || slot_count < 2 || (slot_count & (slot_count - 1)) || slot_size == 0)
		return -E_INVAL;
	/* Relaxed: the ring is not shared yet; publication to other cores happens through
	 * whatever starts them (a release/acquire pair or IPI) after init. */
	atomic_store_explicit(&r->head, 0, memory_order_relaxed);
	atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
	r->tail_cache = 0;
	r->head_cache = 0;
	r->slots = storage;
	r->mask = slot_count - 1;
	r->slot_size = slot_size;
	return 0;
}

void *spsc_reserve(struct spsc_ring *r)
{
	/* Relaxed: only the producer writes head. */
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	if (head - r->tail_cache > r->mask) {
		/* Acquire: pairs with the consumer's release in spsc_release, so the slot we
		 * are about to overwrite has been completely read. */
		r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (head - r->tail_cache > r->mask)
			return NULL;
	}
	return r->slots + (size_t)(head & r->mask) * r->slot_size;
}

void spsc_commit(struct spsc_ring *r)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	/* Release: the slot's contents become visible before the new head. */
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
}

int spsc_push(struct spsc_ring *r, const void *msg)
{
	void *slot = spsc_reserve(r);
	if (!slot)
		return -E_AGAIN;
	memcpy(slot, msg, r->slot_size);
	spsc_commit(r);
	return 0;
}

uint32_t spsc_free_slots(struct spsc_ring *r)
{
	uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	/* Acquire: same pairing as spsc_reserve. */
	r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
	return r->mask + 1 - (head - r->tail_cache);
}

const void *spsc_peek(struct spsc_ring *r)
{
	/* Relaxed: only the consumer writes tail. */
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	if (tail == r->head_cache) {
		/* Acquire: pairs with the producer's release in spsc_commit, so the slot's
		 * bytes are visible. */
		r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
		if (tail == r->head_cache)
			return NULL;
	}
	return r->slots + (size_t)(tail & r->mask) * r->slot_size;
}

void spsc_release(struct spsc_ring *r)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	/* Release: our reads of the slot complete before the producer may reuse it. */
	atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
}

int spsc_pop(struct spsc_ring *r, void *out)
{
	const void *slot = spsc_peek(r);
	if (!slot)
		return -E_AGAIN;
	memcpy(out, slot, r->slot_size);
	spsc_release(r);
	return 0;
}

uint32_t spsc_used_slots(struct spsc_ring *r)
{
	uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	/* Acquire: same pairing as spsc_peek. */
	r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
	return r->head_cache - tail;
}
