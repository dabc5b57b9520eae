/* SPDX-License-Identifier: MIT
 * Test fake for drivers/: an in-memory platform (drivers/port.h ops) with a PCI
 * configuration space of up to FAKE_MAX_FNS functions and one simulated virtio 1.x PCI
 * device. The device consumes available descriptors and produces used entries like a
 * real one (with EVENT_IDX), and can be told to misbehave. Host-only code (libc). */
#ifndef TESTS_UNIT_DRIVERS_FAKE_DEV_H
#define TESTS_UNIT_DRIVERS_FAKE_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/port.h"

#define FAKE_MAX_FNS 16
#define FAKE_MAX_Q 9
#define FAKE_BAR_PHYS 0xfe000000ull
#define FAKE_BAR_SIZE 0x8000u
#define FAKE_DISK_SECTORS 256u

/* Layout of the virtio BAR (BAR 4, 64-bit). */
#define FAKE_OFF_COMMON 0x0000u
#define FAKE_OFF_ISR 0x1000u
#define FAKE_OFF_DEVCFG 0x2000u
#define FAKE_OFF_NOTIFY 0x3000u
#define FAKE_OFF_MSIX 0x4000u
#define FAKE_OFF_PBA 0x5000u
#define FAKE_NOTIFY_MULT 4u

struct fake_fn {
	bool present;
	uint8_t bus, dev, fn;
	uint8_t cfg[256];
	uint32_t bar_wmask[6]; /* writable bits of each BAR register */
	uint32_t n_cfg_writes;
};

struct fake_queue {
	uint16_t size, max_size, msix, enable;
	uint64_t desc, drv, dev;
	uint16_t last_avail, used_idx;
	uint32_t n_notify, n_irq;
};

struct fake_virtio {
	uint16_t type;
	uint64_t features, driver_features;
	bool refuse_features_ok, no_vectors;
	uint8_t status, gen;
	uint16_t num_queues, config_msix;
	uint16_t q_select;
	struct fake_queue q[FAKE_MAX_Q];
	uint8_t isr;
	bool auto_process;  /* process a queue when notified */
	bool no_event_write; /* don't update avail_event (tests of driver->device suppression) */
	/* device state for the device types */
	uint8_t last_tx[2048];
	uint32_t last_tx_len, n_tx;
	uint16_t mq_pairs_set;
	/* VIRTIO_NET_CTRL_MQ_RSS_CONFIG as the device took it, checked against the limits in
	 * the device configuration (rss_max_key_size at 17, rss_max_indirection_table_length
	 * at 18) and max_virtqueue_pairs like QEMU; rss_refuse: refuse every one. */
	bool rss_on, rss_refuse;
	uint32_t n_rss_cmds, rss_cmd_len, rss_hash_types;
	uint16_t rss_n_indir, rss_unclassified, rss_max_tx;
	uint16_t rss_indir[2048];
	uint8_t rss_key_len, rss_key[255];
	uint32_t n_rng_bytes;
	uint8_t disk[FAKE_DISK_SECTORS * 512];
	uint32_t n_flush, n_discard, n_wzero;
	bool scsi_unit_attention; /* next SCSI command gets CHECK CONDITION, UNIT ATTENTION */
	uint32_t scsi_pending_ua;
	/* QEMU behaviours (off by default): */
	uint16_t num_queues_early; /* nonzero: num_queues reads this until FEATURES_OK with
				    * VIRTIO_NET_F_MQ (QEMU virtio-net: one pair + control) */
	bool scsi_len_counts_out;  /* SCSI used.len also counts data-out bytes */
	bool scsi_no_sync16;       /* SYNCHRONIZE CACHE(16) -> ILLEGAL REQUEST (scsi-hd) */
	uint32_t scsi_last_opcode;
	/* Called before each driver read of the device-specific configuration (offset in
	 * it), e.g. to change it mid-read; cleared by fake_add_virtio. */
	void (*devcfg_read_hook)(uint32_t off);
	uint32_t n_devcfg_reads;
};

extern struct fake_fn fake_fns[FAKE_MAX_FNS];
extern struct fake_virtio fake_vio;
extern uint8_t fake_bar[FAKE_BAR_SIZE];
extern uint32_t fake_log_lines;
extern char fake_last_log[200];
extern size_t fake_dma_used;

const struct drv_port *fake_port(void);
void fake_reset(void);
/* Add a function with a blank header; returns it (vendor/device set, header type 0). */
struct fake_fn *fake_add_fn(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t vendor, uint16_t device);
/* Add a 32-bit or 64-bit memory BAR at index i (64-bit uses i and i+1). */
void fake_set_bar(struct fake_fn *f, unsigned i, uint64_t phys, uint64_t size, bool is64);
/* Append a capability with `len` bytes of body (after id/next) at config offset off. */
void fake_add_cap(struct fake_fn *f, uint8_t off, uint8_t id, const uint8_t *body, uint8_t len);
/* A complete virtio-pci function at 00:01.0 of the given type with the standard caps and
 * MSI-X (n_vectors) in the virtio BAR. */
struct fake_fn *fake_add_virtio(uint16_t type, uint64_t features, uint16_t num_queues, uint16_t qsize,
				uint16_t n_vectors);

/* Device side of queue qi. */
bool fake_vq_pop(uint16_t qi, uint16_t *head /* out */);
void fake_vq_push(uint16_t qi, uint32_t id, uint32_t len);
/* Process every available chain of a queue with the device type's logic. */
void fake_process(uint16_t qi);
/* Deliver a frame into the next posted receive buffer of queue qi (net). */
bool fake_net_inject(uint16_t qi, const uint8_t *frame, uint32_t len);
/* The receive pair the device's RSS picks for an Ethernet frame (rss_on): a TCP/IPv4
 * packet that is not a fragment, with TCPv4 among the hash types, by the Toeplitz hash of
 * its addresses and ports (computed bit by bit here from the definition) through the
 * indirection table; anything else the unclassified queue. */
uint16_t fake_net_rss_pair(const uint8_t *frame, uint32_t len);

#endif
