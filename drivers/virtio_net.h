/* SPDX-License-Identifier: MIT
 *
 * virtio-net driver (virtio 1.2 section 5.1): per-worker queue pairs over a fixed frame
 * pool the caller provides; receive hands out borrowed frame views, transmit takes a frame
 * by descriptor, no copy and no allocation per packet. It owns the device's queues and
 * the frames while they are posted; it must never parse packet contents (the net layer
 * does) nor let a frame be posted twice.
 *
 * Negotiated: VERSION_1, EVENT_IDX, MAC, STATUS, CTRL_VQ + MQ (several pairs), and CSUM
 * (transmit checksum offload) only when the caller asks. Never GUEST_CSUM: it would let
 * the device hand us partially checksummed packets or packets marked "checksum already
 * valid", moving trust into the host backend; the net layer verifies every received
 * checksum in software instead. Never MRG_RXBUF or GSO: every receive buffer holds a whole
 * frame, so frame_size must be at least VNET_HDR_LEN + 1514.
 *
 * Design note.
 * Invariants:
 *  1. Each frame belongs to exactly one pair and is in exactly one place: posted to rx,
 *     lent to the caller (rx view), on the pair's tx free stack, lent for filling (tx
 *     alloc), or posted to tx.
 *  2. Frame ids given back by the caller are checked against the pair's ranges.
 * Frame cycle, receive: POSTED -(vnet_rx_poll)-> LENT -(vnet_rx_release)-> POSTED.
 * Transmit: FREE -(vnet_tx_alloc)-> FILLING -(vnet_tx_send)-> POSTED -(vnet_tx_reap)-> FREE.
 * Context: pair p is used only by its worker core; vnet_init runs once on the boot core.
 */
#ifndef DRIVERS_VIRTIO_NET_H
#define DRIVERS_VIRTIO_NET_H

#include "drivers/virtio.h"

#define VNET_MAX_PAIRS 16
#define VNET_HDR_LEN 12u

#define VIRTIO_NET_F_CSUM (1ull << 0)
#define VIRTIO_NET_F_GUEST_CSUM (1ull << 1)
#define VIRTIO_NET_F_MAC (1ull << 5)
#define VIRTIO_NET_F_MRG_RXBUF (1ull << 15)
#define VIRTIO_NET_F_STATUS (1ull << 16)
#define VIRTIO_NET_F_CTRL_VQ (1ull << 17)
#define VIRTIO_NET_F_MQ (1ull << 22)

struct vnet_config {
	void *frames;          /* linked: n_frames * frame_size bytes of DMA memory */
	uint32_t n_frames;     /* split evenly between pairs, then between rx and tx */
	uint32_t frame_size;   /* >= VNET_HDR_LEN + 1514 */
	uint32_t *frame_stack; /* linked: n_frames entries (tx free stacks) */
	struct vq_slot *slots; /* linked: (2 * max_pairs + 1) * queue_size entries */
	uint32_t n_slots;
	uint16_t queue_size;   /* per queue, power of two; capped by the device */
	uint16_t max_pairs;    /* worker cores wanting a pair, 1..VNET_MAX_PAIRS */
	bool tx_csum;          /* negotiate VIRTIO_NET_F_CSUM if offered */
	bool msix;             /* pair p uses MSI-X entry p, config changes entry n_pairs */
	uint32_t ctrl_spins;   /* bound on polls for a control command at init (> 0) */
	uint8_t fallback_mac[6];
};

/* A frame lent to the caller. data points past the virtio header. */
struct vnet_frame {
	uint8_t *data;
	uint32_t len; /* rx: bytes received; tx: ignored */
	uint32_t cap; /* bytes available at data */
	uint32_t id;
};

/* Optional transmit checksum request (only with VIRTIO_NET_F_CSUM negotiated): the device
 * sums from csum_start to the end and stores it at csum_start + csum_offset. */
struct vnet_tx_csum {
	uint16_t csum_start, csum_offset;
};

enum vnet_reject {
	VNET_REJ_RUNT,     /* device returned fewer bytes than header + Ethernet header */
	VNET_REJ_PAIRS,    /* max_virtqueue_pairs out of range */
	VNET_REJ_CTRL,     /* control command refused or never completed */
	VNET_REJ_QUEUE,    /* a queue broke (its own counters say why) */
	VNET_REJ__COUNT
};

struct vnet_pair {
	struct vq rx, tx;
	uint32_t rx_first, n_rx, tx_first, n_tx;
	uint32_t *free;  /* stack of tx frame ids */
	uint32_t n_free;
	uint64_t rx_packets, tx_packets;
};

struct vnet {
	struct virtio_dev *vd; /* linked */
	struct vnet_config cfg;
	uint8_t mac[6];
	uint16_t n_pairs, dev_max_pairs;
	struct vq ctrl;
	bool has_ctrl;
	uint8_t *ctrl_buf;
	uint64_t ctrl_pa;
	uint32_t rejected[VNET_REJ__COUNT];
	struct vnet_pair pairs[VNET_MAX_PAIRS];
};

/* Bring a probed virtio-net device (virtio_pci_probe done) to DRIVER_OK with
 * min(max_pairs, device pairs) queue pairs, every receive frame posted. */
int vnet_init(struct vnet *n, struct virtio_dev *vd, const struct vnet_config *cfg) MUST_CHECK;

/* Next received frame of pair p, lent until vnet_rx_release. -E_AGAIN when none,
 * -E_PROTO / -E_CLOSED when the queue broke. Runts are counted and reposted. */
int vnet_rx_poll(struct vnet *n, uint16_t p, struct vnet_frame *f /* out */) MUST_CHECK;
/* Give a received frame back (reposted; visible to the device at vnet_flush). */
int vnet_rx_release(struct vnet *n, uint16_t p, uint32_t id) MUST_CHECK;

/* Take a free transmit frame of pair p to fill (reaps completions first if needed).
 * -E_AGAIN when every frame is in flight. */
int vnet_tx_alloc(struct vnet *n, uint16_t p, struct vnet_frame *f /* out */) MUST_CHECK;
/* Post len bytes of frame id (taken: the driver owns it until reaped). csum may be NULL.
 * -E_AGAIN when the queue is full (the frame stays the caller's). */
int vnet_tx_send(struct vnet *n, uint16_t p, uint32_t id, uint32_t len, const struct vnet_tx_csum *csum) MUST_CHECK;
/* Return a filled-but-unsent frame to the free stack. */
int vnet_tx_cancel(struct vnet *n, uint16_t p, uint32_t id) MUST_CHECK;
/* Reclaim completed transmissions; returns how many, or a negative error. */
int vnet_tx_reap(struct vnet *n, uint16_t p) MUST_CHECK;
/* Notify the device of everything posted on pair p (subject to EVENT_IDX). */
void vnet_flush(struct vnet *n, uint16_t p);

/* Adaptive polling. Before halting, the worker enables interrupts for its pair; true means
 * completions are already pending (poll again instead of halting). Under load it disables
 * them and polls. The MSI-X handler for pair p only marks work; no acknowledge needed. */
bool vnet_irq_enable(struct vnet *n, uint16_t p);
void vnet_irq_disable(struct vnet *n, uint16_t p);

/* Link state from the device (VIRTIO_NET_F_STATUS); always up without that feature. */
bool vnet_link_up(struct vnet *n);

#endif
