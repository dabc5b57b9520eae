/* SPDX-License-Identifier: MIT
 * Fuzz target for the device-configuration parsers of drivers/virtio_{blk,net,scsi}: the
 * input is a device type selector, 8 bytes of offered features and up to 256 bytes of
 * device configuration of the simulated device. Initialisation must succeed with a sane
 * result (block sizes powers of two, physical >= logical, pairs within bounds, RSS limits
 * usable: a power-of-two table of at most VNET_RSS_INDIR_MAX entries, a key of at least a
 * byte) or fail cleanly with the device marked failed; an RSS configuration built to the
 * limits read is then either taken by the device as sent or refused with an error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/virtio_blk.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_scsi.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "../unit/drivers/fake_dev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct pci_dev devs[2];
static struct pci_bus bus;
static struct virtio_dev vd;
static struct vq_slot slots[9 * 8];
static uint8_t frames[16 * 2048] __attribute__((aligned(4096)));
static uint32_t stack[16];

static void check_topo(const struct blk_topology *t)
{
	if (t->logical_block < 512 || t->logical_block > 65536 || (t->logical_block & (t->logical_block - 1)) ||
	    t->physical_block < t->logical_block || (t->physical_block & (t->physical_block - 1)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint16_t types[3] = { VIRTIO_ID_BLOCK, VIRTIO_ID_NET, VIRTIO_ID_SCSI };
	struct pci_config pc = { .bus_start = 0, .bus_end = 0, .devs = devs, .max_devs = 2 };
	uint16_t type, nq;
	uint64_t feats;
	size_t cfg_len;
	int err;

	if (size < 9)
		return 0;
	type = types[(data[0] & 3u) % 3u];
	nq = (uint16_t)(1 + (data[0] >> 2) % 9);
	feats = ld_le64(data + 1) | VIRTIO_F_VERSION_1;
	cfg_len = size - 9 > 256 ? 256 : size - 9;
	fake_reset();
	fake_add_virtio(type, feats, nq, 8, 4);
	memcpy(&fake_bar[FAKE_OFF_DEVCFG], data + 9, cfg_len);
	if (pci_bus_init(&bus, fake_port(), &pc) || pci_bus_scan(&bus) || virtio_pci_probe(&vd, &bus, &devs[0]))
		abort();
	if (type == VIRTIO_ID_BLOCK) {
		static struct vblk v;
		struct vblk_config c = { .slots = slots, .queue_size = 8, .msix = 0 };
		err = vblk_init(&v, &vd, &c);
		if (!err) {
			struct vblk_cap_event ev;
			check_topo(&v.blk.topo);
			if (vblk_config_changed(&v, &ev) == 0)
				check_topo(&v.blk.topo);
		}
	} else if (type == VIRTIO_ID_NET) {
		static struct vnet n;
		struct vnet_config c = { .frames = frames, .n_frames = 16, .frame_size = 2048, .frame_stack = stack,
					 .slots = slots, .n_slots = sizeof slots / sizeof slots[0], .queue_size = 8,
					 .max_pairs = 4, .msix = false, .ctrl_spins = 8 };
		err = vnet_init(&n, &vd, &c);
		if (!err && (n.n_pairs < 1 || n.n_pairs > 4 || (n.n_pairs > 1 && fake_vio.mq_pairs_set != n.n_pairs)))
			abort();
		if (!err)
			(void)vnet_link_up(&n);
		if (!err && n.has_rss) {
			static uint16_t indir[VNET_RSS_INDIR_MAX];
			static const uint8_t key[255];
			uint32_t m = n.rss_max_indir;
			if (m == 0 || m > VNET_RSS_INDIR_MAX || (m & (m - 1)) || n.rss_max_key == 0 || !n.has_ctrl)
				abort();
			for (uint32_t i = 0; i < m; i++)
				indir[i] = (uint16_t)(i % n.n_pairs);
			const struct vnet_rss r = { .hash_types = n.rss_hash_types & VNET_RSS_HASH_TCPV4, .indir = indir,
						    .n_indir = m, .unclassified = 0, .n_tx = n.n_pairs, .key = key,
						    .key_len = n.rss_max_key };
			int rerr = vnet_rss_set(&n, &r);
			if (rerr > 0 || (rerr == 0 && (!fake_vio.rss_on || fake_vio.rss_n_indir != m)))
				abort();
		}
	} else {
		static struct vscsi s;
		struct vscsi_config c = { .slots = slots, .queue_size = 8, .msix = 0, .init_spins = 4 };
		err = vscsi_init(&s, &vd, &c);
		if (!err)
			check_topo(&s.blk.topo);
	}
	if (err > 0 || (err && !vd.failed))
		abort();
	return 0;
}
