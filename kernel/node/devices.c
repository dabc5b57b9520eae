/* SPDX-License-Identifier: MIT
 *
 * The node's devices (kernel/node/devices.h): on the PCI bus the platform scanned (its
 * BARs mapped), each virtio function probed and driven. virtio-rng reseeds every core's
 * CSPRNG; virtio-blk and virtio-scsi run the block read test on their last 4 KiB
 * (nothing written) and the first one becomes the data disk; virtio-net becomes the
 * node's NIC. Then the TLS self-test, then the node (kernel/node/node.c) over the NIC
 * and the disk. MSI-X messages come from the platform (kernel/node/port.h,
 * node_port_msi): the NIC's queue pairs interrupt their cores, each virtio-blk's
 * configuration change the storage core; a platform without MSI gets polled devices.
 * Owns the driver instances. Never drives a device the PCI layer rejected and never stops
 * the boot for a broken device (it is reported and left alone; a failed self-test is
 * reported FAIL and counted).
 */
#include "kernel/node/devices.h"

#include "drivers/virtio_blk.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_rng.h"
#include "drivers/virtio_scsi.h"
#include "kernel/csprng.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/node/disks.h"
#include "kernel/node/install.h"
#include "kernel/node/node.h"
#include "kernel/node/port.h"
#include "kernel/node/tls_selftest.h"
#include "kernel/panic.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "store/layout.h"

/* Sizes (from the configuration file at integration). */
#define DEV_MAX_BLK NODE_MAX_DISKS
#define DEV_MAX_VIRTIO 16
#define DEV_BLK_QUEUE 64
#define DEV_BLK_POLLS 200000000u  /* bound on polls per self-test request */
#define DEV_SCSI_SPINS 200000000u /* bound on polls per SCSI command at init */
#define DEV_RNG_BYTES 48u         /* CSPRNG_SEED_LEN */
#define DEV_RNG_SPINS 200000000u
#define DEV_NET_QUEUE 256
#define DEV_NET_FRAME 2048u
#define DEV_NET_FRAMES_PER_PAIR 512u
#define DEV_NET_MAX_PAIRS 8
#define DEV_NET_CTRL_SPINS 200000000u

static struct pci_bus *dev_bus; /* the platform's, linked by node_devices_init */
static enum boot_mode dev_mode = BOOT_MODE_SERVE; /* node_devices_set_boot, then read-only */
static const uint8_t *dev_esp, *dev_bios;
static size_t dev_esp_len, dev_bios_len;

/* The configuration vector of virtio-blk i: counted down from the top of the device
 * vectors so it never meets the NIC's (one per queue pair and its configuration). */
static uint32_t dev_blk_cfg_vector(uint32_t i)
{
	return node_port_msi_vectors() - 1u - i;
}

/* MSI-X entry `entry` of m to raise device vector `vec` on `core`. */
static int dev_msi_set(struct pci_msix *m, uint16_t entry, uint32_t core, uint32_t vec)
{
	uint64_t addr;
	uint32_t data;
	const struct pci_dev *d = m->dev;
	uint16_t rid = (uint16_t)(d->bus << 8 | (d->dev & 31u) << 3 | (d->fn & 7u));
	int err = node_port_msi(core, vec, rid, &addr, &data);
	return err ? err : pci_msix_set(dev_bus, m, entry, addr, data);
}

static const char *dev_type_name(uint16_t t)
{
	switch (t) {
	case VIRTIO_ID_NET: return "virtio-net";
	case VIRTIO_ID_BLOCK: return "virtio-blk";
	case VIRTIO_ID_RNG: return "virtio-rng";
	case VIRTIO_ID_SCSI: return "virtio-scsi";
	default: return "virtio (unsupported type)";
	}
}

static struct virtio_dev dev_vd[DEV_MAX_VIRTIO];
static uint32_t dev_n_vd;
static struct vrng dev_rng;
static bool dev_rng_ok;
static struct vblk dev_vblk[DEV_MAX_BLK];
static struct vscsi dev_vscsi[DEV_MAX_BLK];
static uint32_t dev_n_vblk, dev_n_vscsi;
/* virtio-blk i's MSI-X (its configuration vector; the changes themselves are
 * kernel/node/disks.c's). Boot core only. */
static struct pci_msix dev_blk_msix[DEV_MAX_BLK];
static struct vnet dev_net;
static bool dev_net_ok;
static struct pci_msix dev_net_msix;
static bool dev_net_msix_ok;
static uint32_t dev_n_selftest_fail;

/* Whole zeroed pages from the page allocator, or a boot stop: these are boot-time
 * tables sized by the configuration, so running out is a configuration error. */
static void *dev_pages(size_t len, uint64_t *pa)
{
	void *va;
	uint64_t phys;
	uint32_t n = (uint32_t)((len + HEAP_PAGE_SIZE - 1) / HEAP_PAGE_SIZE);
	int err = kheap_pages_alloc(n, 1, &va, &phys);
	if (err)
		PANIC("devices: cannot allocate %lu KiB of driver memory (%s)", (unsigned long)(len >> 10),
		      err_name(err));
	if (pa)
		*pa = phys;
	return va;
}

/* One seed per core, read on the boot core (the device's queue belongs to it) and mixed
 * into each core's CSPRNG by that core itself as it enters its loop
 * (node_devices_loop_add), then wiped. Written by the boot core before it starts the other
 * cores, read once by each: the platform's start of a core orders the boot core's earlier
 * stores before that core runs (x86_64: the STARTUP IPI after TSO stores; aarch64: a DSB
 * before the PSCI call), so no fence is needed here. */
static uint8_t dev_rng_seeds[PLAT_MAX_CPUS][DEV_RNG_BYTES];
static uint32_t dev_rng_n_seeds;

static void dev_rng_init(struct virtio_dev *vd, uint32_t n_cores)
{
	uint32_t n = MIN(MAX(n_cores, 1u), (uint32_t)PLAT_MAX_CPUS);
	struct vq_slot *slots = dev_pages(sizeof(struct vq_slot) * 4u, NULL);
	int err = vrng_init(&dev_rng, vd, slots, DEV_RNG_BYTES);
	for (uint32_t c = 0; c < n && !err; c++)
		err = vrng_read(&dev_rng, dev_rng_seeds[c], DEV_RNG_BYTES, DEV_RNG_SPINS);
	if (!err)
		err = csprng_kernel_reseed(dev_rng_seeds[0], DEV_RNG_BYTES);
	memset(dev_rng_seeds[0], 0, DEV_RNG_BYTES);
	if (err) {
		memset(dev_rng_seeds, 0, sizeof dev_rng_seeds);
		LOG_ERR("boot", "virtio-rng: unusable (%s); the CSPRNGs keep their CPU seeds", err_name(err));
		return;
	}
	dev_rng_ok = true;
	dev_rng_n_seeds = n;
	LOG_INFO("boot", "virtio-rng: features 0x%llx; %u bytes mixed into the CSPRNG of each of %u core(s)",
		 (unsigned long long)vd->features, (unsigned)DEV_RNG_BYTES, (unsigned)n);
}

/* DMA memory for a self-test of b (twice its scratch area); *len (out) its size. */
static uint8_t *dev_selftest_buf(const struct blk_dev *b, size_t *len)
{
	*len = 2 * MAX((size_t)4096u, (size_t)b->topo.logical_block);
	return dev_pages(*len, NULL);
}

/* The boot test of a disk reads its last 4 KiB and writes nothing: a disk is written only
 * once storage recognised it (store/boot.h writes its self-test on its own scratch block). */
static void dev_selftest(const char *name, uint32_t idx, struct blk_dev *b, const struct vq *q, uint8_t *buf,
			 size_t buf_len)
{
	const char *why = "";
	int err = blk_readtest(b, buf, buf_len, DEV_BLK_POLLS, &why);
	if (err)
		dev_n_selftest_fail++;
	LOG_INFO("boot", "%s%u: %lu blocks of %u B (physical %u, optimal %u)%s%s%s; block read test on "
			 "the last 4 KiB (nothing written): %s%s%s",
		 name, (unsigned)idx, (unsigned long)b->topo.capacity, (unsigned)b->topo.logical_block,
		 (unsigned)b->topo.physical_block, (unsigned)b->topo.optimal_io,
		 b->topo.flush ? ", flush" : "", b->topo.discard ? ", discard" : "",
		 b->topo.read_only ? ", read-only" : "", err ? "FAIL (" : "PASS", err ? why : "",
		 err ? ")" : "");
	if (err)
		LOG_ERR("boot", "%s%u: queue rejections: id range %u, id idle %u, length %u, index jump %u",
			name, (unsigned)idx, (unsigned)q->stats.rejected[VQ_REJ_ID_RANGE],
			(unsigned)q->stats.rejected[VQ_REJ_ID_IDLE], (unsigned)q->stats.rejected[VQ_REJ_LEN],
			(unsigned)q->stats.rejected[VQ_REJ_IDX_JUMP]);
}

static void dev_blk_init(struct virtio_dev *vd)
{
	if (dev_n_vblk == DEV_MAX_BLK)
		return;
	uint32_t i = dev_n_vblk;
	struct vblk *v = &dev_vblk[i];
	struct pci_msix *msix = &dev_blk_msix[i];
	/* MSI-X on with the function masked until the entry is programmed (after DRIVER_OK:
	 * a change signalled before that stays pending in the device's PBA). */
	int merr = node_port_msi_vectors() ? pci_msix_init(dev_bus, vd->pci, msix) : -E_NOSYS;
	struct vblk_config c = {
		.slots = dev_pages(sizeof(struct vq_slot) * DEV_BLK_QUEUE, NULL),
		.queue_size = DEV_BLK_QUEUE,
		.msix = VIRTIO_MSI_NO_VECTOR, /* the request queue is polled */
		.config_irq = merr == 0,
		.config_msix = 0,
	};
	int err = vblk_init(v, vd, &c);
	if (err) {
		LOG_ERR("boot", "virtio-blk%u: initialisation failed (%s)", (unsigned)i, err_name(err));
		dev_n_selftest_fail++;
		return;
	}
	bool irq = false;
	if (v->cfg_irq && dev_msi_set(msix, 0, 0, dev_blk_cfg_vector(i)) == 0) {
		pci_msix_enable(dev_bus, msix);
		irq = true;
	}
	LOG_INFO("boot", "virtio-blk%u: features 0x%llx; configuration changes %s", (unsigned)i,
		 (unsigned long long)vd->features, irq ? "by MSI-X to core 0" : "polled once a second by core 0");
	size_t buf_len;
	uint8_t *buf = dev_selftest_buf(&v->blk, &buf_len);
	dev_selftest("virtio-blk", i, &v->blk, &v->q, buf, buf_len);
	if (node_disk_add(v, buf, buf_len, irq) != 0) /* DEV_MAX_BLK == NODE_MAX_DISKS */
		PANIC("virtio-blk%u: the node's disk table is full", (unsigned)i);
	dev_n_vblk++;
}

/* Failed requests are logged with their sense data (the self-test only says "failed"). */
static const struct blk_ops *dev_scsi_inner;

static int dev_scsi_submit(void *impl, struct blk_req *r)
{
	return dev_scsi_inner->submit(impl, r);
}

static void dev_scsi_kick(void *impl)
{
	dev_scsi_inner->kick(impl);
}

static int dev_scsi_poll(void *impl, struct blk_req **done)
{
	int err = dev_scsi_inner->poll(impl, done);
	if (!err && (*done)->status)
		LOG_WARN("blk", "virtio-scsi: op %u at block %lu failed (%s, sense %06x)", (unsigned)(*done)->op,
			 (unsigned long)(*done)->lba, err_name((*done)->status), (unsigned)(*done)->sense);
	return err;
}

static const struct blk_ops dev_scsi_ops = { dev_scsi_submit, dev_scsi_kick, dev_scsi_poll };

static void dev_scsi_init(struct virtio_dev *vd)
{
	if (dev_n_vscsi == DEV_MAX_BLK)
		return;
	struct vscsi *v = &dev_vscsi[dev_n_vscsi];
	struct vscsi_config c = {
		.slots = dev_pages(sizeof(struct vq_slot) * DEV_BLK_QUEUE, NULL),
		.queue_size = DEV_BLK_QUEUE,
		.msix = VIRTIO_MSI_NO_VECTOR,
		.target = 0,
		.lun = 0,
		.init_spins = DEV_SCSI_SPINS,
	};
	int err = vscsi_init(v, vd, &c);
	if (err) {
		LOG_ERR("boot", "virtio-scsi%u: initialisation failed (%s)", (unsigned)dev_n_vscsi, err_name(err));
		dev_n_selftest_fail++;
		return;
	}
	dev_scsi_inner = v->blk.ops;
	v->blk.ops = &dev_scsi_ops;
	LOG_INFO("boot", "virtio-scsi%u: features 0x%llx; target 0 LUN 0", (unsigned)dev_n_vscsi,
		 (unsigned long long)vd->features);
	size_t buf_len;
	uint8_t *buf = dev_selftest_buf(&v->blk, &buf_len);
	dev_selftest("virtio-scsi", dev_n_vscsi, &v->blk, &v->q, buf, buf_len);
	dev_n_vscsi++;
}

/* Program MSI-X entry `entry` of the NIC to reach core `core` (device vector `entry`). */
static int dev_net_vector(uint16_t entry, uint32_t core)
{
	return dev_msi_set(&dev_net_msix, entry, core, entry);
}

static void dev_net_init(struct virtio_dev *vd, uint32_t n_cores)
{
	int merr = node_port_msi_vectors() ? pci_msix_init(dev_bus, vd->pci, &dev_net_msix) : -E_NOSYS;
	dev_net_msix_ok = merr == 0;
	if (merr)
		LOG_WARN("boot", "virtio-net: no usable MSI-X (%s); polling on the tick only", err_name(merr));
	uint16_t pairs = (uint16_t)MIN(MAX(n_cores, 1u), (uint32_t)DEV_NET_MAX_PAIRS);
	uint32_t n_frames = DEV_NET_FRAMES_PER_PAIR * pairs;
	struct vnet_config c = {
		.frames = dev_pages((size_t)n_frames * DEV_NET_FRAME, NULL),
		.n_frames = n_frames,
		.frame_size = DEV_NET_FRAME,
		.frame_stack = dev_pages(sizeof(uint32_t) * n_frames, NULL),
		.slots = dev_pages(sizeof(struct vq_slot) * (2u * pairs + 1u) * DEV_NET_QUEUE, NULL),
		.n_slots = (2u * pairs + 1u) * DEV_NET_QUEUE,
		.queue_size = DEV_NET_QUEUE,
		.max_pairs = pairs,
		.tx_csum = false,
		.msix = dev_net_msix_ok,
		.ctrl_spins = DEV_NET_CTRL_SPINS,
		.fallback_mac = { 0x02, 0x75, 0x72, 0x6d, 0x71, 0x01 }, /* locally administered */
	};
	int err = vnet_init(&dev_net, vd, &c);
	if (err) {
		LOG_ERR("boot", "virtio-net: initialisation failed (%s)", err_name(err));
		return;
	}
	dev_net_ok = true;
	const uint8_t *m = dev_net.mac;
	LOG_INFO("boot", "virtio-net: MAC %02x:%02x:%02x:%02x:%02x:%02x, features 0x%llx (%s%s%s%s%s), "
			 "%u queue pair(s) of %u offered, link %s",
		 m[0], m[1], m[2], m[3], m[4], m[5], (unsigned long long)vd->features,
		 (vd->features & VIRTIO_F_EVENT_IDX) ? "EVENT_IDX " : "",
		 (vd->features & VIRTIO_NET_F_MAC) ? "MAC " : "",
		 (vd->features & VIRTIO_NET_F_STATUS) ? "STATUS " : "",
		 (vd->features & VIRTIO_NET_F_MQ) ? "CTRL_VQ+MQ" : "single queue",
		 dev_net.has_rss ? "+RSS" : "",
		 (unsigned)dev_net.n_pairs, (unsigned)dev_net.dev_max_pairs,
		 vnet_link_up(&dev_net) ? "up" : "down");
}

/* With a pair per core, pair p interrupts core p (which drains it once the device steers;
 * until then core 0 polls it); otherwise every pair interrupts core 0, which receives
 * from all of them. The configuration-change entry goes to core 0. Then the function
 * mask is cleared. */
bool node_devices_nic_vectors(bool own_pairs, uint32_t n_net)
{
	int err = 0;
	if (!dev_net_msix_ok)
		return false;
	for (uint16_t p = 0; p <= dev_net.n_pairs && !err; p++)
		err = dev_net_vector(p, own_pairs && p < n_net ? p : 0);
	if (err) {
		LOG_WARN("boot", "virtio-net: MSI-X programming failed (%s); polling on the tick only",
			 err_name(err));
		dev_net_msix_ok = false;
		return false;
	}
	pci_msix_enable(dev_bus, &dev_net_msix);
	return true;
}

/* The data disk: the first virtio-blk, else the first virtio-scsi disk; NULL if none. */
static struct blk_dev *dev_data_disk(const char **name)
{
	if (dev_n_vblk) {
		*name = "virtio-blk0";
		return &dev_vblk[0].blk;
	}
	if (dev_n_vscsi) {
		*name = "virtio-scsi0";
		return &dev_vscsi[0].blk;
	}
	*name = "no disk";
	return NULL;
}

void node_devices_disk_vectors(uint32_t store_core)
{
	for (uint32_t i = 0; i < dev_n_vblk; i++) {
		if (node_disk_irq(i) && dev_msi_set(&dev_blk_msix[i], 0, store_core, dev_blk_cfg_vector(i)) != 0) {
			LOG_WARN("blk", "virtio-blk%u: configuration vector not moved to core %u: polled instead",
				 (unsigned)i, (unsigned)store_core);
			node_disk_polled(i);
		}
	}
}

static void dev_init_devices(const struct node_devices_config *cfg)
{
	uint32_t n_cores = cfg->n_cores;
	if (cfg->scan_err && (!dev_bus || dev_bus->n_devs == 0)) {
		LOG_WARN("boot", "pci: enumeration failed (%s)", err_name(cfg->scan_err));
		return;
	}
	uint32_t n_bad = 0;
	const struct pci_dev *devs = dev_bus->cfg.devs;
	for (uint32_t i = 0; i < dev_bus->n_devs; i++)
		if (devs[i].flags & PCI_DEV_BAD)
			n_bad++;
	LOG_INFO("boot", "pci: %u functions over %s, %u rejected%s", (unsigned)dev_bus->n_devs,
		 cfg->cfg_how ? cfg->cfg_how : "?", (unsigned)n_bad, cfg->scan_err ? " (device table full)" : "");
	for (uint32_t i = 0; i < dev_bus->n_devs; i++) {
		const struct pci_dev *d = &devs[i];
		uint16_t t = virtio_pci_device_type(d);
		LOG_INFO("boot", "pci %02x:%02x.%u %04x:%04x class %02x.%02x.%02x%s%s", d->bus, d->dev,
			 d->fn, d->vendor, d->device, d->class_code, d->subclass, d->prog_if,
			 t ? " " : "", t ? dev_type_name(t) : ((d->flags & PCI_DEV_BAD) ? " REJECTED" : ""));
	}
	for (uint32_t i = 0; i < dev_bus->n_devs && dev_n_vd < DEV_MAX_VIRTIO; i++) {
		struct pci_dev *d = &dev_bus->cfg.devs[i];
		uint16_t t = virtio_pci_device_type(d);
		if (!t || (d->flags & PCI_DEV_BAD))
			continue;
		if (!(t == VIRTIO_ID_NET || t == VIRTIO_ID_BLOCK || t == VIRTIO_ID_RNG || t == VIRTIO_ID_SCSI))
			continue;
		if ((t == VIRTIO_ID_NET && dev_net_ok) || (t == VIRTIO_ID_RNG && dev_rng_ok))
			continue; /* one of each for now */
		struct virtio_dev *vd = &dev_vd[dev_n_vd];
		int err = virtio_pci_probe(vd, dev_bus, d);
		if (err) {
			LOG_ERR("boot", "%s at %02x:%02x.%u: refused (%s)", dev_type_name(t), d->bus, d->dev,
				d->fn, err_name(err));
			continue;
		}
		dev_n_vd++;
		switch (t) {
		case VIRTIO_ID_RNG: dev_rng_init(vd, n_cores); break;
		case VIRTIO_ID_BLOCK: dev_blk_init(vd); break;
		case VIRTIO_ID_SCSI: dev_scsi_init(vd); break;
		case VIRTIO_ID_NET: dev_net_init(vd, n_cores); break;
		default: break;
		}
	}
}

uint32_t node_devices_map_bars(struct pci_bus *b)
{
	uint32_t failed = 0;
	for (uint32_t i = 0; i < b->n_devs; i++) {
		struct pci_dev *d = &b->cfg.devs[i];
		if ((d->flags & PCI_DEV_BAD) || !virtio_pci_device_type(d))
			continue;
		for (uint32_t k = 0; k < PCI_MAX_BARS; k++) {
			uintptr_t va;
			if ((d->bars[k].flags & PCI_BAR_OK) && !(d->bars[k].flags & PCI_BAR_IO) &&
			    pci_bar_map(b, d, k, &va) != 0)
				failed++;
		}
	}
	return failed;
}

void node_devices_set_boot(enum boot_mode mode, const uint8_t *esp, size_t esp_len, const uint8_t *bios,
			   size_t bios_len)
{
	dev_mode = mode;
	dev_esp = esp;
	dev_esp_len = esp ? esp_len : 0;
	dev_bios = bios;
	dev_bios_len = bios ? bios_len : 0;
}

/* urmqtt.mode=install / install-erase: every block device goes to the installer. */
static void dev_install(void)
{
	static struct node_install_config ic;
	ic.erase = dev_mode == BOOT_MODE_INSTALL_ERASE;
	static const char *const vblk_names[] = { "virtio-blk0", "virtio-blk1", "virtio-blk2", "virtio-blk3" };
	static const char *const vscsi_names[] = { "virtio-scsi0", "virtio-scsi1", "virtio-scsi2", "virtio-scsi3" };
	STATIC_ASSERT(ARRAY_LEN(vblk_names) >= DEV_MAX_BLK && 2u * DEV_MAX_BLK <= NODE_INSTALL_MAX_DISKS,
		      "a name for every disk");
	for (uint32_t i = 0; i < dev_n_vblk; i++) {
		ic.disks[ic.n_disks] = &dev_vblk[i].blk;
		ic.names[ic.n_disks++] = vblk_names[i];
	}
	for (uint32_t i = 0; i < dev_n_vscsi; i++) {
		ic.disks[ic.n_disks] = &dev_vscsi[i].blk;
		ic.names[ic.n_disks++] = vscsi_names[i];
	}
	ic.esp = dev_esp;
	ic.esp_len = dev_esp_len;
	ic.bios = dev_bios;
	ic.bios_len = dev_bios_len;
	ic.bounce_len = (size_t)128u << 10;
	ic.bounce = dev_pages(ic.bounce_len, NULL);
	ic.scratch_len = (size_t)STORE_LAYOUT_SCRATCH;
	ic.scratch = dev_pages(ic.scratch_len, NULL);
	node_install(&ic);
}

void node_devices_init(const struct node_devices_config *cfg)
{
	dev_bus = cfg->bus;
	if (dev_bus)
		dev_init_devices(cfg);
	if (dev_mode == BOOT_MODE_INSTALL || dev_mode == BOOT_MODE_INSTALL_ERASE) {
		dev_install();
		return;
	}
	/* After virtio-rng (if any) reseeded the CSPRNG; a failure counts like a failed
	 * block self-test (the drivers scenario exits non-zero), and no broker is built on
	 * a TLS stack that failed its known answers. */
	if (node_tls_selftest() != 0) {
		dev_n_selftest_fail++;
		if (dev_net_ok)
			LOG_ERR("boot", "broker: not started (TLS self-test failed)");
		return;
	}
	if (dev_net_ok) {
		const char *disk_name;
		struct blk_dev *disk = dev_data_disk(&disk_name);
		/* Live (and diagnostics): no disk reaches storage, so none is ever written. */
		bool live = dev_mode == BOOT_MODE_LIVE || dev_mode == BOOT_MODE_DIAG;
		const struct node_config nc = { .nic = &dev_net, .disk = live ? NULL : disk,
						.disk_name = live ? "no disk (live)" : disk_name,
						.cmdline = cfg->cmdline, .cmdline_len = cfg->cmdline_len,
						.n_cores = cfg->n_cores, .live = live };
		node_init(&nc);
	}
}

void node_devices_loop_add(struct kloop *l, uint32_t core)
{
	if (core > 0 && core < dev_rng_n_seeds) {
		if (csprng_kernel_reseed(dev_rng_seeds[core], DEV_RNG_BYTES) != 0)
			PANIC("core %u: CSPRNG refused the virtio-rng seed", (unsigned)core);
		memset(dev_rng_seeds[core], 0, DEV_RNG_BYTES);
	}
	node_loop_add(l, core);
}

uint32_t node_devices_selftest_failures(void)
{
	return dev_n_selftest_fail;
}

uint32_t node_devices_block_count(void)
{
	return dev_n_vblk + dev_n_vscsi;
}
