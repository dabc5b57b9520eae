/* SPDX-License-Identifier: MIT
 *
 * virtio-blk driver (virtio 1.2 section 5.2) behind drivers/blk.h: one request queue,
 * read, write, flush, discard, write-zeroes, topology from the device configuration and
 * re-reading capacity after a configuration change (the owner's loop calls
 * vblk_config_changed when the configuration vector fired or vblk_config_pending says
 * so; the interrupt handler itself only marks work). It owns the request headers
 * (in DMA memory it allocates at init) and must never trust a status byte or length the
 * device wrote without checking it. Without VIRTIO_BLK_F_FLUSH the device has no volatile
 * cache to flush and FLUSH is refused with -E_NOSYS (topology.flush false).
 *
 * Design note.
 * Invariants:
 *  1. A request slot is either free (on the stack) or holds exactly one caller request
 *     posted to the queue.
 *  2. A request completes once: only vq_get_used (validated) releases its slot.
 *  3. blk.topo.capacity == sectors / sectors_per_block, and sectors is the capacity of
 *     configuration generation cfg_gen (read as one stable copy): a submit is checked
 *     against the newest capacity the driver has seen, so after a shrink nothing beyond
 *     the new end is accepted.
 * Request: FREE -(vblk submit)-> POSTED -(poll)-> DONE (returned to the caller).
 * Capacity: KNOWN(gen g) -(device changes config: generation moves)-> PENDING
 *   -(vblk_config_changed: stable read)-> KNOWN(new gen) {SAME | GREW | SHRANK};
 *   a read that never settles leaves it PENDING with the old capacity.
 */
#ifndef DRIVERS_VIRTIO_BLK_H
#define DRIVERS_VIRTIO_BLK_H

#include "drivers/blk.h"
#include "drivers/virtio.h"

#define VBLK_MAX_INFLIGHT 256

#define VIRTIO_BLK_F_SIZE_MAX (1ull << 1)
#define VIRTIO_BLK_F_SEG_MAX (1ull << 2)
#define VIRTIO_BLK_F_RO (1ull << 5)
#define VIRTIO_BLK_F_BLK_SIZE (1ull << 6)
#define VIRTIO_BLK_F_FLUSH (1ull << 9)
#define VIRTIO_BLK_F_TOPOLOGY (1ull << 10)
#define VIRTIO_BLK_F_DISCARD (1ull << 13)
#define VIRTIO_BLK_F_WRITE_ZEROES (1ull << 14)

struct vblk_config {
	struct vq_slot *slots; /* linked: queue_size entries */
	uint16_t queue_size;   /* power of two, <= VBLK_MAX_INFLIGHT */
	uint16_t msix;         /* MSI-X entry of the queue, or VIRTIO_MSI_NO_VECTOR */
	bool config_irq;       /* bind the configuration-change interrupt to config_msix */
	uint16_t config_msix;  /* MSI-X entry for configuration changes (config_irq only) */
};

/* What a configuration change did to the capacity (512-byte sectors, as the device
 * counts them). */
enum vblk_cap_change { VBLK_CAP_SAME, VBLK_CAP_GREW, VBLK_CAP_SHRANK };
struct vblk_cap_event {
	enum vblk_cap_change what;
	uint64_t old_sectors, new_sectors;
};

enum vblk_reject {
	VBLK_REJ_CONFIG, /* block size or topology out of range */
	VBLK_REJ_SHORT,  /* completion shorter than the status byte (+ data for reads) */
	VBLK_REJ_STATUS, /* status byte not OK/IOERR/UNSUPP */
	VBLK_REJ_QUEUE,  /* the queue broke */
	VBLK_REJ__COUNT
};

struct vblk {
	struct virtio_dev *vd; /* linked */
	struct vq q;
	struct blk_dev blk;    /* hand &blk to the storage layer */
	uint8_t *hdrs;         /* DMA: one 64-byte header area per slot */
	uint64_t hdrs_pa;
	uint32_t sectors_per_block;
	uint32_t size_max; /* bytes per data segment; 0: no limit */
	uint64_t sectors;  /* capacity in 512-byte sectors as last read (invariant 3) */
	uint8_t cfg_gen;   /* configuration generation `sectors` belongs to */
	bool cfg_irq;      /* the device took the configuration vector */
	uint32_t n_grew, n_shrank;
	struct blk_req *inflight[VBLK_MAX_INFLIGHT];
	uint16_t free[VBLK_MAX_INFLIGHT];
	uint16_t n_free;
	uint32_t rejected[VBLK_REJ__COUNT];
};

/* Bring a probed virtio-blk device to DRIVER_OK and fill v->blk (ops + topology). */
int vblk_init(struct vblk *v, struct virtio_dev *vd, const struct vblk_config *cfg) MUST_CHECK;
/* True when the device's configuration generation moved since the capacity was last
 * read (one register read). Loop context of the owning core; never from an interrupt
 * handler (handlers only mark work). */
bool vblk_config_pending(struct vblk *v);
/* After a configuration-change interrupt (or vblk_config_pending): re-read the capacity
 * as one stable copy and apply it. 0 with ev->what SAME or GREW; -E_RANGE when the disk
 * shrank (applied: requests beyond the new end now fail with -E_RANGE, those in flight
 * fail on the device); -E_AGAIN if the configuration never settled (nothing applied,
 * still pending); -E_CLOSED for a failed device. ev (out) always says old and new. */
int vblk_config_changed(struct vblk *v, struct vblk_cap_event *ev /* out */) MUST_CHECK;

#endif
