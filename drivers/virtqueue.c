/* SPDX-License-Identifier: MIT
 *
 * drivers/: split virtqueue engine (see the design note in virtqueue.h). Owns the driver
 * side of the rings; reads the device's used ring once per field through single aligned
 * accesses and validates every entry before it touches driver state. Never allocates,
 * never trusts a device-written index or length, never dereferences device data as a
 * pointer.
 */
#include "drivers/virtqueue.h"
#include "lib/err.h"
#include "lib/mem.h"

#define DESC_F_NEXT 1u
#define DESC_F_WRITE 2u
#define AVAIL_F_NO_INTERRUPT 1u
#define USED_F_NO_NOTIFY 1u

/* Shared-memory accessors: one aligned access of the field's width (never torn), through
 * volatile so the compiler neither caches nor splits it. Rings are little-endian; every
 * target we build for is little-endian too (checked below). */
STATIC_ASSERT(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "virtio rings are little-endian");

static inline uint16_t sh_ld16(const uint8_t *p) { return *(const volatile uint16_t *)(const void *)p; }
static inline uint32_t sh_ld32(const uint8_t *p) { return *(const volatile uint32_t *)(const void *)p; }
static inline void sh_st16(uint8_t *p, uint16_t v) { *(volatile uint16_t *)(void *)p = v; }
static inline void sh_st32(uint8_t *p, uint32_t v) { *(volatile uint32_t *)(void *)p = v; }
static inline void sh_st64(uint8_t *p, uint64_t v) { *(volatile uint64_t *)(void *)p = v; }

static size_t avail_off(uint16_t size) { return (size_t)16 * size; }
static size_t used_off(uint16_t size) { return (avail_off(size) + 6 + (size_t)2 * size + 3) & ~(size_t)3; }

size_t vq_ring_bytes(uint16_t size)
{
	return used_off(size) + 6 + (size_t)8 * size;
}

/* Ring field addresses. */
static uint8_t *avail_ring(const struct vq *q, uint16_t i) { return q->avail + 4 + (size_t)2 * i; }
static uint8_t *used_event(const struct vq *q) { return q->avail + 4 + (size_t)2 * q->size; }
static uint8_t *used_elem(const struct vq *q, uint16_t i) { return q->used + 4 + (size_t)8 * i; }
static uint8_t *avail_event(const struct vq *q) { return q->used + 4 + (size_t)8 * q->size; }

int vq_init(struct vq *q, const struct drv_port *port, uint16_t index, uint16_t size, void *ring_va,
	    uint64_t ring_pa, size_t ring_len, struct vq_slot *slots, bool event_idx)
{
	if (!q || !port || !ring_va || !slots || size == 0 || size > VQ_MAX_SIZE || (size & (size - 1)) ||
	    ring_len < vq_ring_bytes(size) || (ring_pa & 15u) || ((uintptr_t)ring_va & 15u))
		return -E_INVAL;
	memset(q, 0, sizeof *q);
	q->port = port;
	q->index = index;
	q->size = size;
	q->desc = ring_va;
	q->avail = q->desc + avail_off(size);
	q->used = q->desc + used_off(size);
	q->desc_pa = ring_pa;
	q->avail_pa = ring_pa + avail_off(size);
	q->used_pa = ring_pa + used_off(size);
	q->slots = slots;
	q->event_idx = event_idx;
	q->cb_enabled = true;
	memset(ring_va, 0, vq_ring_bytes(size));
	for (uint32_t i = 0; i < size; i++) {
		memset(&slots[i], 0, sizeof slots[i]);
		slots[i].next = (uint16_t)((i + 1) & (size - 1u));
	}
	q->n_free = size;
	q->free_head = 0;
	return 0;
}

int vq_post(struct vq *q, const struct vq_buf *bufs, uint16_t n, void *token)
{
	uint16_t head, d, prev = 0;
	uint32_t wlen = 0, rlen = 0;
	bool seen_write = false;

	if (q->broken)
		return -E_CLOSED;
	if (n == 0 || !bufs)
		return -E_INVAL;
	for (uint16_t i = 0; i < n; i++) {
		if (bufs[i].device_writes) {
			seen_write = true;
			if (bufs[i].len > UINT32_MAX - wlen)
				return -E_INVAL;
			wlen += bufs[i].len;
		} else if (seen_write) {
			return -E_INVAL; /* readable after writable: the device would misread it */
		} else {
			if (bufs[i].len > UINT32_MAX - rlen)
				return -E_INVAL;
			rlen += bufs[i].len;
		}
	}
	if (n > q->size)
		return -E_INVAL; /* could never fit */
	if (n > q->n_free)
		return -E_AGAIN;

	head = d = q->free_head;
	for (uint16_t i = 0; i < n; i++) {
		uint8_t *desc = q->desc + (size_t)16 * d;
		uint16_t flags = (uint16_t)((bufs[i].device_writes ? DESC_F_WRITE : 0) |
					    (i + 1 < n ? DESC_F_NEXT : 0));
		uint16_t nx = q->slots[d].next;
		sh_st64(desc, bufs[i].pa);
		sh_st32(desc + 8, bufs[i].len);
		sh_st16(desc + 12, flags);
		sh_st16(desc + 14, i + 1 < n ? nx : 0);
		prev = d;
		d = nx;
	}
	q->free_head = d;
	q->n_free = (uint16_t)(q->n_free - n);
	q->slots[prev].next = d; /* chain end links on; freeing walks n_desc, not this */
	q->slots[head].token = token;
	q->slots[head].wlen = wlen;
	q->slots[head].rlen = rlen;
	q->slots[head].n_desc = n;
	q->slots[head].outstanding = true;
	q->n_outstanding++;

	sh_st16(avail_ring(q, (uint16_t)(q->avail_idx & (q->size - 1u))), head);
	q->avail_idx++;
	/* wmb: the descriptors and the ring slot must be visible before the index that
	 * publishes them; the device reads the index first. */
	q->port->wmb(q->port->ctx);
	sh_st16(q->avail + 2, q->avail_idx);
	return 0;
}

bool vq_kick(struct vq *q)
{
	uint16_t old = q->kicked_idx, now = q->avail_idx;
	bool need;

	if (q->broken || old == now)
		return false;
	/* mb: our avail index store must be globally visible before we load the device's
	 * avail_event / flags; otherwise the device may have gone idle having read the old
	 * index while we read a stale "don't notify" and neither side acts (lost wakeup). */
	q->port->mb(q->port->ctx);
	q->kicked_idx = now;
	if (q->event_idx) {
		uint16_t ev = sh_ld16(avail_event(q));
		need = (uint16_t)(now - ev - 1) < (uint16_t)(now - old);
	} else {
		need = !(sh_ld16(q->used) & USED_F_NO_NOTIFY);
	}
	if (!need || !q->notify_va) {
		q->stats.n_kicks_suppressed++;
		return false;
	}
	q->stats.n_kicks++;
	q->port->mmio_write16(q->port->ctx, q->notify_va, q->index);
	return true;
}

bool vq_has_used(const struct vq *q)
{
	return !q->broken && sh_ld16(q->used + 2) != q->last_used;
}

static int broken(struct vq *q, enum vq_reject site)
{
	q->stats.rejected[site]++;
	q->broken = true;
	return -E_PROTO;
}

int vq_get_used(struct vq *q, void **token, uint32_t *len)
{
	uint16_t uidx, slot;
	uint32_t id, ulen;
	uint8_t *e;

	*token = NULL;
	*len = 0;
	if (q->broken)
		return -E_CLOSED;
	uidx = sh_ld16(q->used + 2);
	if (uidx == q->last_used)
		return -E_AGAIN;
	if ((uint16_t)(uidx - q->last_used) > q->n_outstanding)
		return broken(q, VQ_REJ_IDX_JUMP);
	/* rmb: the entries the index covers must be read after the index itself. */
	q->port->rmb(q->port->ctx);
	slot = (uint16_t)(q->last_used & (q->size - 1u));
	e = used_elem(q, slot);
	id = sh_ld32(e);
	ulen = sh_ld32(e + 4);
	if (id >= q->size)
		return broken(q, VQ_REJ_ID_RANGE);
	if (!q->slots[id].outstanding)
		return broken(q, VQ_REJ_ID_IDLE);
	if (ulen > q->slots[id].wlen) {
		/* Lenient queues: a device that also counts what it read (bounded by the whole
		 * chain) is tolerated; the caller only ever sees the writable part. */
		if (!q->lenient_len || ulen - q->slots[id].wlen > q->slots[id].rlen)
			return broken(q, VQ_REJ_LEN);
		ulen = q->slots[id].wlen;
		q->stats.n_len_clamped++;
	}

	q->last_used++;
	{
		struct vq_slot *h = &q->slots[id];
		uint16_t d = (uint16_t)id, n = h->n_desc;
		for (uint16_t i = 1; i < n; i++)
			d = q->slots[d].next;
		q->slots[d].next = q->free_head; /* splice the chain in front of the free list */
		q->free_head = (uint16_t)id;
		q->n_free = (uint16_t)(q->n_free + n);
		*token = h->token;
		*len = ulen;
		h->token = NULL;
		h->outstanding = false;
		h->n_desc = 0;
		h->wlen = 0;
		h->rlen = 0;
	}
	q->n_outstanding--;
	q->stats.n_completed++;
	/* Interrupts on: ask for one at the next entry. Off: keep the "never" point just
	 * behind us so it does not come round again after 2^16 completions. */
	if (q->event_idx)
		sh_st16(used_event(q), q->cb_enabled ? q->last_used : (uint16_t)(q->last_used - 1));
	return 0;
}

bool vq_cb_enable(struct vq *q)
{
	q->cb_enabled = true;
	if (q->event_idx)
		sh_st16(used_event(q), q->last_used);
	else
		sh_st16(q->avail, (uint16_t)(sh_ld16(q->avail) & ~AVAIL_F_NO_INTERRUPT));
	/* mb: the request must be visible before we re-read the used index, or a completion
	 * landing in between would neither interrupt nor be seen. */
	q->port->mb(q->port->ctx);
	return vq_has_used(q);
}

void vq_cb_disable(struct vq *q)
{
	q->cb_enabled = false;
	if (q->event_idx)
		sh_st16(used_event(q), (uint16_t)(q->last_used - 1));
	else
		sh_st16(q->avail, (uint16_t)(sh_ld16(q->avail) | AVAIL_F_NO_INTERRUPT));
}

bool vq_check_invariants(const struct vq *q)
{
	uint32_t in_chains = 0, heads = 0;

	for (uint32_t i = 0; i < q->size; i++) {
		if (!q->slots[i].outstanding)
			continue;
		heads++;
		in_chains += q->slots[i].n_desc;
	}
	return heads == q->n_outstanding && in_chains + q->n_free == q->size && q->n_free <= q->size;
}
