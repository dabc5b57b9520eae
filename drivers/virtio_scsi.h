/* SPDX-License-Identifier: MIT
 *
 * virtio-scsi driver (virtio 1.2 section 5.6) for one LUN behind drivers/blk.h: READ(16),
 * WRITE(16), SYNCHRONIZE CACHE(10) (LBA 0, 0 blocks: the whole medium; QEMU's scsi-hd
 * refuses the 16-byte form), UNMAP, and READ CAPACITY(16) + TEST UNIT READY at
 * init; sense data decoded (fixed and descriptor formats) into key/ASC/ASCQ. It owns the
 * request/response headers in DMA memory it allocates at init; responses, sense bytes and
 * residuals are device input and are parsed through cursors and range-checked. Only the
 * first request queue is used; the control and event queues are left disabled (no
 * hot-plug, no task management). The request queue is lenient about used lengths (QEMU
 * counts data-out bytes in them; see virtqueue.h): the response is read only within
 * RESP_HDR + sense_size whatever the length says. WRITE_ZEROES is not offered (-E_NOSYS); optimal I/O size
 * is unknown (0: no Block Limits VPD query yet); DISCARD (UNMAP) is offered only when
 * READ CAPACITY(16) reports logical block provisioning, at most VSCSI_MAX_UNMAP blocks.
 *
 * Design note.
 * Invariants:
 *  1. A request slot is free or holds exactly one posted caller request (as virtio_blk).
 *  2. Sense and capacity data are read only within the lengths the device reported and
 *     the buffers we posted, whichever is smaller.
 * Request: FREE -(submit)-> POSTED -(poll)-> DONE.
 */
#ifndef DRIVERS_VIRTIO_SCSI_H
#define DRIVERS_VIRTIO_SCSI_H

#include "drivers/blk.h"
#include "drivers/virtio.h"

#define VSCSI_MAX_INFLIGHT 256
#define VSCSI_MAX_UNMAP 65536u

struct vscsi_config {
	struct vq_slot *slots; /* linked: queue_size entries */
	uint16_t queue_size;   /* power of two, <= VSCSI_MAX_INFLIGHT */
	uint16_t msix;         /* MSI-X entry of the request queue, or VIRTIO_MSI_NO_VECTOR */
	uint8_t target;
	uint16_t lun;          /* < 16384 */
	uint32_t init_spins;   /* bound on polls per command at init */
};

struct vscsi_sense {
	uint8_t key, asc, ascq;
};

enum vscsi_reject {
	VSCSI_REJ_CONFIG,   /* cdb/sense size or READ CAPACITY data out of range */
	VSCSI_REJ_RESPONSE, /* virtio response code undefined */
	VSCSI_REJ_SENSE,    /* sense data malformed */
	VSCSI_REJ_RESIDUAL, /* residual larger than the transfer */
	VSCSI_REJ_QUEUE,    /* the queue broke */
	VSCSI_REJ__COUNT
};

struct vscsi {
	struct virtio_dev *vd; /* linked */
	struct vq q;
	struct blk_dev blk;
	uint8_t *areas;        /* DMA: one 256-byte area per slot */
	uint64_t areas_pa;
	uint32_t cdb_size, sense_size;
	uint8_t lun[8];
	struct blk_req *inflight[VSCSI_MAX_INFLIGHT];
	uint16_t free[VSCSI_MAX_INFLIGHT];
	uint16_t n_free;
	uint32_t rejected[VSCSI_REJ__COUNT];
};

/* Bring a probed virtio-scsi device to DRIVER_OK, wait out UNIT ATTENTION and read the
 * LUN's capacity; fills v->blk. */
int vscsi_init(struct vscsi *v, struct virtio_dev *vd, const struct vscsi_config *cfg) MUST_CHECK;

/* Decode len bytes of SCSI sense data (fixed 0x70/0x71 or descriptor 0x72/0x73 format).
 * -E_PROTO for anything else or too short. */
int vscsi_sense_decode(const uint8_t *sense, uint32_t len, struct vscsi_sense *out /* out */) MUST_CHECK;

#endif
