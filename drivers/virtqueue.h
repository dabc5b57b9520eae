/* SPDX-License-Identifier: MIT
 *
 * Split virtqueues (virtio 1.x, section 2.7): descriptor table, available and used rings
 * in DMA memory, with VIRTIO_F_EVENT_IDX notification suppression. This file owns the
 * driver side of one queue: it posts descriptor chains from the fixed table, publishes
 * them, decides whether to notify, and takes completions back. The used ring is written
 * by the device and is hostile input: an entry is used only after its id is in range and
 * names an outstanding chain head, its length fits what that chain let the device write,
 * and the used index has not moved by more than the number of outstanding chains.
 * A queue marked lenient_len (virtio-scsi: QEMU counts the device-readable data-out bytes
 * in used.len too) accepts a length up to the whole chain and clamps it to the writable
 * part, counted in n_len_clamped; above the whole chain it still breaks.
 * A queue that saw one bad entry stays broken (fail closed) until re-initialised.
 * Never allocates; the caller gives the ring memory and the per-descriptor slot array.
 *
 * Design note.
 * Invariants:
 *  1. n_free + (descriptors in outstanding chains) == size; free descriptors form a list
 *     through slots[].next that the device never sees.
 *  2. slots[h].outstanding is true exactly for chain heads published and not yet returned;
 *     n_outstanding counts them.
 *  3. last_used only advances over validated entries; (uidx - last_used) <= n_outstanding.
 * Queue states: READY (vq_init) -> [vq_post / vq_kick / vq_get_used]* ; any validation
 * failure -> BROKEN (every later call returns -E_CLOSED).
 * Context: one core owns the queue; nothing here is interrupt-safe except vq_has_used.
 */
#ifndef DRIVERS_VIRTQUEUE_H
#define DRIVERS_VIRTQUEUE_H

#include "drivers/port.h"

#define VQ_MAX_SIZE 32768u

struct vq_slot {
	void *token;    /* caller cookie of a chain head */
	uint32_t wlen;  /* bytes the device may write into the chain (head only) */
	uint32_t rlen;  /* bytes the device may read from the chain (head only) */
	uint16_t next;  /* free list or chain link */
	uint16_t n_desc;
	bool outstanding;
};

struct vq_buf {
	uint64_t pa;
	uint32_t len;
	bool device_writes;
};

enum vq_reject {
	VQ_REJ_ID_RANGE,   /* used id >= queue size */
	VQ_REJ_ID_IDLE,    /* used id not an outstanding chain head */
	VQ_REJ_LEN,        /* used len larger than the writable part of the chain */
	VQ_REJ_IDX_JUMP,   /* used index moved past every outstanding chain */
	VQ_REJ__COUNT
};

struct vq_stats {
	uint32_t rejected[VQ_REJ__COUNT];
	uint64_t n_kicks, n_kicks_suppressed, n_completed;
	uint64_t n_len_clamped; /* lenient_len: used lengths above wlen clamped to it */
};

struct vq {
	const struct drv_port *port; /* linked */
	uint8_t *desc, *avail, *used; /* DMA memory, linked */
	uint64_t desc_pa, avail_pa, used_pa;
	struct vq_slot *slots;        /* linked: size entries */
	uintptr_t notify_va;          /* 0: notification disabled (tests, before binding) */
	uint16_t size, index;
	uint16_t free_head, n_free;
	uint16_t avail_idx;  /* next available index to publish */
	uint16_t kicked_idx; /* avail_idx at the last notification decision */
	uint16_t last_used;  /* next used entry to consume */
	uint16_t n_outstanding;
	bool event_idx, cb_enabled, broken;
	bool lenient_len; /* set by the driver after vq_init; see the top of this file */
	struct vq_stats stats;
};

/* Bytes of DMA memory a queue of `size` entries needs (16-byte aligned base). */
size_t vq_ring_bytes(uint16_t size);

/* Set up a queue over ring memory (va/pa, len >= vq_ring_bytes(size), pa 16-aligned,
 * zeroed) and a slot array of `size` entries (both linked). size: power of two,
 * 1..VQ_MAX_SIZE. Interrupts start enabled. -E_INVAL on bad arguments. */
int vq_init(struct vq *q, const struct drv_port *port, uint16_t index, uint16_t size, void *ring_va,
	    uint64_t ring_pa, size_t ring_len, struct vq_slot *slots, bool event_idx) MUST_CHECK;

/* Post one chain of n buffers (device-readable ones first) with a cookie (borrowed until
 * it comes back from vq_get_used) and publish it. Does not notify: call vq_kick.
 * -E_AGAIN when fewer than n descriptors are free, -E_INVAL on a bad chain, -E_CLOSED
 * when broken. */
int vq_post(struct vq *q, const struct vq_buf *bufs, uint16_t n, void *token) MUST_CHECK;

/* Notify the device of everything published since the last kick, unless it asked not to
 * be (EVENT_IDX avail_event, or VIRTQ_USED_F_NO_NOTIFY). Returns true if it notified. */
bool vq_kick(struct vq *q);

/* Take the next completion: its cookie and the byte count the device wrote (never more
 * than the chain's device-writable bytes; see lenient_len). -E_AGAIN
 * when none, -E_PROTO when the device produced a bad entry (counted; queue now broken),
 * -E_CLOSED when already broken. */
int vq_get_used(struct vq *q, void **token /* out */, uint32_t *len /* out */) MUST_CHECK;

/* Whether the device has returned entries not yet consumed (a hint; may race). */
bool vq_has_used(const struct vq *q);

/* Ask for an interrupt at the next completion. Returns true if completions are already
 * pending (poll again before sleeping, or one may be missed). */
bool vq_cb_enable(struct vq *q);
/* Ask the device not to interrupt (polling mode). Best effort: a device may still. */
void vq_cb_disable(struct vq *q);

/* Invariants 1 and 2 of the design note (O(size)); for tests, fuzzers and ASSERT(). */
bool vq_check_invariants(const struct vq *q);

#endif
