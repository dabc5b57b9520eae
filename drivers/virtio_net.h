/* SPDX-License-Identifier: MIT
 *
 * virtio-net driver (virtio 1.2 section 5.1): per-worker queue pairs over a fixed frame
 * pool the caller provides; receive hands out borrowed frame views, transmit takes a frame
 * by descriptor, no copy and no allocation per packet. It owns the device's queues and
 * the frames while they are posted; it must never parse packet contents (the net layer
 * does) nor let a frame be posted twice.
 *
 * Negotiated: VERSION_1, EVENT_IDX, MAC, STATUS, CTRL_VQ + MQ (several pairs), RSS with
 * them when offered (the caller programs it by vnet_rss_set; until then, or without it, the
 * device steers by its own choice as with MQ alone), and CSUM (transmit checksum offload)
 * only when the caller asks. Never GUEST_CSUM: it would let
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
#define VIRTIO_NET_F_HASH_REPORT (1ull << 57)
#define VIRTIO_NET_F_RSS (1ull << 60)

/* Receive-side scaling (virtio 1.2 section 5.1.6.5.7): hash types (supported_hash_types,
 * virtio_net_rss_config.hash_types). With TCPV4 alone, a TCP/IPv4 packet that is not a
 * fragment is hashed over source address, destination address, source port, destination
 * port (the Toeplitz hash of net/rss); every other packet goes to the unclassified queue. */
#define VNET_RSS_HASH_IPV4 (1u << 0)
#define VNET_RSS_HASH_TCPV4 (1u << 1)
#define VNET_RSS_HASH_UDPV4 (1u << 2)
/* The largest indirection table the driver sends (a power of two; the command, key and
 * table fit in the control page). The device's own limit may be lower. */
#define VNET_RSS_INDIR_MAX 1024u
/* Bytes of a VIRTIO_NET_CTRL_MQ_RSS_CONFIG command body with n indirection entries and a
 * key of key_len bytes. */
#define VNET_RSS_CMD_LEN(n, key_len) (4u + 2u + 2u + 2u * (uint32_t)(n) + 2u + 1u + (uint32_t)(key_len))

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
	VNET_REJ_RSS,      /* RSS offered with unusable limits (key size or table length 0,
			    * or the configuration unreadable): not used */
	VNET_REJ__COUNT
};

struct vnet_pair {
	struct vq rx, tx;
	uint32_t rx_first, n_rx, tx_first, n_tx;
	uint32_t *free;  /* stack of tx frame ids */
	uint32_t n_free;
	uint64_t rx_packets, tx_packets;
};

/* An RSS configuration for the device (vnet_rss_set). Borrowed for the call. */
struct vnet_rss {
	uint32_t hash_types;   /* VNET_RSS_HASH_*, a nonzero subset of the device's */
	const uint16_t *indir; /* n_indir receive queue (pair) indices, each < n_pairs */
	uint32_t n_indir;      /* a power of two, 1..min(VNET_RSS_INDIR_MAX, device limit) */
	uint16_t unclassified; /* pair for packets no hash type covers, < n_pairs */
	uint16_t n_tx;         /* transmit queues the driver uses (max_tx_vq), 1..n_pairs */
	const uint8_t *key;    /* Toeplitz key, key_len bytes (secret: wiped after sending) */
	uint32_t key_len;      /* 1..device rss_max_key_size */
};

struct vnet {
	struct virtio_dev *vd; /* linked */
	struct vnet_config cfg;
	uint8_t mac[6];
	uint16_t n_pairs, dev_max_pairs;
	struct vq ctrl;
	bool has_ctrl;
	bool ctrl_broken;      /* a command never completed: no further commands */
	uint8_t *ctrl_buf;     /* one DMA page: class, command, body; the ack in the last byte */
	uint64_t ctrl_pa;
	/* RSS (VIRTIO_NET_F_RSS negotiated and its limits usable): the device's limits, the
	 * indirection limit rounded down to a power of two and capped at VNET_RSS_INDIR_MAX. */
	bool has_rss;
	bool rss_on;           /* the device accepted an RSS configuration */
	uint8_t rss_max_key;
	uint32_t rss_max_indir;
	uint32_t rss_hash_types;
	uint32_t rss_n_indir;  /* entries of the accepted configuration */
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

/* Encode the body of VIRTIO_NET_CTRL_MQ_RSS_CONFIG (after class and command) into out
 * (cap bytes): le32 hash_types, le16 indirection_table_mask, le16 unclassified_queue,
 * le16 indirection_table[n_indir], le16 max_tx_vq, u8 hash_key_length, the key. Checks
 * only the structure (n_indir a power of two up to VNET_RSS_INDIR_MAX, key_len 1..255,
 * hash_types and n_tx nonzero, indir and key present); the device's limits are
 * vnet_rss_set's. Returns 0 and *len, -E_INVAL for a malformed r, -E_RANGE when cap is
 * too small. Pure; out is untouched on error. */
int vnet_rss_encode(const struct vnet_rss *r, uint8_t *out /* out */, size_t cap, size_t *len /* out */) MUST_CHECK;
/* Program the device's RSS (has_rss): r checked against the device's limits and the
 * active pairs, then sent on the control queue (bounded wait) and the key wiped from the
 * control page. 0 (rss_on set), -E_NOSYS without RSS, -E_INVAL / -E_RANGE for r outside
 * the limits, or the command's failure (refused: -E_IO; never completed: -E_TIMEOUT, and
 * the control queue is then unusable). Boot core; the pairs' workers may run meanwhile. */
int vnet_rss_set(struct vnet *n, const struct vnet_rss *r) MUST_CHECK;

/* Link state from the device (VIRTIO_NET_F_STATUS); always up without that feature. */
bool vnet_link_up(struct vnet *n);

#endif
