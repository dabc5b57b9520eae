/* SPDX-License-Identifier: MIT
 *
 * Device bring-up on x86_64: PCI enumeration over the drivers' port (drv_port.c), the
 * BARs of every virtio function mapped before the page tables are sealed, then (once the
 * page allocator and the CSPRNG exist) each virtio device probed and driven: virtio-rng
 * reseeds every core's CSPRNG, virtio-blk and virtio-scsi run the block self-test on
 * their last 4 KiB, the first virtio-net gets the multicore data plane: every core runs a
 * network stack (kernel/knet) with its own broker (kernel/kbroker: dp/ = TCP 8883, TLS
 * 1.3 with client certificates, MQTT shard) as its upper layer. Core 0 receives from
 * every queue pair and steers (kernel/ksteer): TCP flows to our address go to the core
 * net/rss picks, copied through the core mesh (kernel/xcore, dispatched per core by
 * kernel/kdemux), ARP is handled on core 0 and copied to every core, the rest stays on
 * core 0. A worker transmits on its own pair when the device has one per core, else it
 * hands its frames back to core 0, which sends them on pair 0. Core 0 runs DHCP (or takes
 * ip= from the command line) and tells every worker its address by a control message.
 * The NIC's queues interrupt core 0 through MSI-X (the handler only marks work) and are
 * polled under load; a core that sends a mesh message to a halted core wakes it with an
 * IPI (see the wake-up protocol below); the block and rng queues
 * are polled (boot-time use only so far). Each virtio-blk device's configuration-change
 * interrupt goes through MSI-X to core 0, whose loop ("blk" handler) then re-reads the
 * capacity: growth is logged and handed to the storage service when the disk is its data
 * disk (kstore_disk_grew: the layout grows), else the self-test runs again, stepwise, on the
 * new last 4 KiB; a shrink is logged as an error and I/O beyond the new end fails. Without MSI-X
 * the loop looks at the configuration generation once a second instead. The TLS
 * self-test (tls_selftest.c) runs before the broker is built (the broker's handshake
 * env then owns mbedTLS's hooks). Everything found goes into the boot banner.
 * Owns the PCI device table and the driver instances. Never maps anything after the
 * seal, never drives a device the PCI layer rejected, and never stops the boot for a
 * broken device (it is reported and left alone; a failed self-test is reported FAIL).
 */
#include "arch/x86_64/tls_selftest.h"
#include "arch/x86_64/x86.h"
#include "drivers/virtio_blk.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_rng.h"
#include "drivers/virtio_scsi.h"
#include "kernel/cmdline.h"
#include "kernel/csprng.h"
#include "kernel/heap.h"
#include "kernel/kbroker.h"
#include "kernel/kdemux.h"
#include "kernel/kstore.h"
#include "kernel/ksteer.h"
#include "kernel/knet.h"
#include "kernel/log.h"
#include "kernel/panic.h"
#include "kernel/time.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "kernel/xcore.h"
#include "net/rss.h"
#include "store/ops.h"
#include "urmqtt_config.h"

/* Sizes (from the configuration file at integration). */
#define DEV_MAX_PCI 64
#define DEV_MAX_BLK 4
#define DEV_MAX_VIRTIO 16
#define DEV_BLK_QUEUE 64
#define DEV_BLK_POLLS 200000000u  /* bound on polls per self-test request */
#define DEV_BLK_CFG_POLL_MS 1000u /* configuration changes without MSI-X, or after a read that
				   * never settled */
#define DEV_BLK_RETEST_STEPS 5000u /* loop steps (at most one per ms) per request of the
				    * self-test after growth: >= 5 s */
/* The configuration vector of virtio-blk i: counted down from the top of the device
 * vectors so it never meets the NIC's (X86_VEC_DEV_BASE + its MSI-X entry). */
#define DEV_BLK_CFG_VECTOR(i) (X86_VEC_DEV_BASE + X86_VEC_DEV_COUNT - 1u - (i))
#define DEV_SCSI_SPINS 200000000u /* bound on polls per SCSI command at init */
#define DEV_RNG_BYTES 48u         /* CSPRNG_SEED_LEN */
#define DEV_RNG_SPINS 200000000u
#define DEV_NET_QUEUE 256
#define DEV_NET_FRAME 2048u
#define DEV_NET_FRAMES_PER_PAIR 512u
#define DEV_NET_MAX_PAIRS 8
#define DEV_NET_DEMUX 4u     /* kind ranges one core's mesh demultiplexer holds */
#define DEV_NET_CTRL_SPINS 200000000u
#define DEV_NET_ARP 64u
#define DEV_NET_PENDING 32u
#define DEV_NET_RX_BATCH 8u  /* frames per poll: a few full TLS handshakes stay far below the
                               * 200 ms watchdog limit under TCG */
#define DEV_BROKER_REPORT_MS 10000u /* the memory line of kernel/kbroker */

static struct pci_dev dev_pci[DEV_MAX_PCI];
static struct pci_bus dev_bus;
static struct pci_range dev_forbid[PLAT_MAX_MEM_RANGES + 2];
static const char *dev_cfg_how;
static bool dev_scanned;
static int dev_scan_err;

static struct virtio_dev dev_vd[DEV_MAX_VIRTIO];
static uint32_t dev_n_vd;
static struct vrng dev_rng;
static bool dev_rng_ok;
static struct vblk dev_vblk[DEV_MAX_BLK];
static struct vscsi dev_vscsi[DEV_MAX_BLK];
static uint32_t dev_n_vblk, dev_n_vscsi;
/* virtio-blk configuration changes, all on core 0 (boot core, then its loop only). */
struct dev_blk_state {
	struct pci_msix msix;
	bool irq;     /* the configuration vector is programmed and enabled */
	bool retry;   /* the last read never settled: look again on the next poll */
	bool running; /* a self-test on the new end is in progress */
	bool retest;  /* it grew again meanwhile: test the newest end next */
	uint8_t *buf; /* DMA, buf_len bytes: the boot self-test's, reused */
	size_t buf_len;
	struct blk_selftest_run run;
	uint64_t run_lba;
};
static struct dev_blk_state dev_blk_st[DEV_MAX_BLK];
static uint64_t dev_blk_seen_irqs, dev_blk_next_poll_ms, dev_blk_last_step_ms;
static struct vnet dev_net;
static bool dev_net_ok;
static struct pci_msix dev_net_msix;
static bool dev_net_msix_ok;
/* Per core: its stack, its broker, its mesh demultiplexer and its counters. Built on the
 * boot core before the other cores start, then each touched only by its own core (the
 * counters are read by their core only: the log lines are per core). */
struct dev_core {
	struct knet knet;
	struct kbroker broker;
	struct kdemux demux;
	struct kdemux_entry demux_tab[DEV_NET_DEMUX];
	struct ksteer steer;  /* worker, with the device steering: its own classifier */
	bool take_pair;       /* core 0's view of a worker: TAKE_PAIR still to send */
	bool ok;           /* knet and broker built */
	bool storage;      /* the storage core (kernel/kstore.h): a mesh demultiplexer, no stack */
	bool addr_dirty;   /* core 0's view of a worker: its address message still to send */
	uint64_t steer_drops;  /* core 0: frames for this core dropped, no mesh credit */
	uint64_t arp_drops;    /* core 0: ARP copies for this core dropped */
	uint64_t tx_drops;     /* worker: frames for core 0 to send dropped, no credit */
	uint64_t addr_bad;     /* worker: malformed address messages */
	uint64_t n_ipis;       /* wake-ups this core sent */
	uint64_t stats_last_ms, stats_last_sum;
};
static struct dev_core dev_cores[PLAT_MAX_CPUS];
static uint32_t dev_n_net;   /* cores with a stack: 0 .. dev_n_net - 1 */
static bool dev_own_pairs;   /* every worker transmits on its own pair */
/* The device steers (a queue pair per core): after the cores started, each core drains its
 * own pair and frames stay on the core the device chose; else core 0 steers them all. */
static bool dev_device_steers;
static struct xcore_mesh *dev_mesh; /* NULL with one core */
static struct rss_steer dev_rss;    /* core 0's */
static uint16_t *dev_rss_indir;
static struct ksteer dev_steer;     /* core 0's */
static bool dev_broker_ok;
static uint32_t dev_n_selftest_fail;
/* Storage (kernel/kstore.h): with a data disk and several cores, the highest core runs it
 * and nothing else; with one core, core 0 runs it from its loop. Decided once, before the
 * cores start; read-only after. */
static bool dev_store_on;        /* a data disk exists: data cores record and hold acks */
static bool dev_store_dedicated; /* the storage core is not a data core */
static uint32_t dev_store_core;
static const char *dev_store_disk_name;

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

void x86_dev_scan(const struct platform *p, const struct x86_mem_range *ram, uint32_t n_ram)
{
	int err = x86_drv_port_init(p, &dev_cfg_how);
	if (err) {
		dev_scan_err = err;
		return;
	}
	uint32_t n = 0;
	for (uint32_t i = 0; i < n_ram && n < PLAT_MAX_MEM_RANGES; i++)
		dev_forbid[n++] = (struct pci_range){ ram[i].base, ram[i].len };
	dev_forbid[n++] = (struct pci_range){ x86_virt_to_phys_image(x86_image_start),
					      (uint64_t)(x86_image_end - x86_image_start) };
	dev_forbid[n++] = (struct pci_range){ 0, 1u << 20 }; /* real-mode area and BIOS */
	struct pci_config pc = {
		.devs = dev_pci,
		.max_devs = DEV_MAX_PCI,
		.forbidden = dev_forbid,
		.n_forbidden = n,
		.max_caps = PCI_MAX_CAPS,
	};
	x86_drv_port_buses(&pc.bus_start, &pc.bus_end);
	err = pci_bus_init(&dev_bus, x86_drv_port(), &pc);
	if (!err)
		err = pci_bus_scan(&dev_bus);
	dev_scan_err = err;
	dev_scanned = dev_bus.n_devs > 0;
	/* Map every usable memory BAR of every virtio function now: after the seal nothing
	 * new can be mapped, and the drivers reach their registers only through these. */
	for (uint32_t i = 0; i < dev_bus.n_devs; i++) {
		struct pci_dev *d = &dev_pci[i];
		if ((d->flags & PCI_DEV_BAD) || !virtio_pci_device_type(d))
			continue;
		for (uint32_t b = 0; b < PCI_MAX_BARS; b++) {
			uintptr_t va;
			if (!(d->bars[b].flags & PCI_BAR_OK) || (d->bars[b].flags & PCI_BAR_IO))
				continue;
			if (pci_bar_map(&dev_bus, d, b, &va) != 0)
				LOG_WARN("pci", "%02x:%02x.%u BAR %u could not be mapped", d->bus, d->dev,
					 d->fn, (unsigned)b);
		}
	}
}

/* Whole zeroed pages from the page allocator, or a boot stop: these are boot-time
 * tables sized by the configuration, so running out is a configuration error. */
static void *dev_pages(size_t len, uint64_t *pa)
{
	void *va;
	uint64_t phys;
	uint32_t n = (uint32_t)((len + X86_PAGE_SIZE - 1) / X86_PAGE_SIZE);
	int err = kheap_pages_alloc(n, 1, &va, &phys);
	if (err)
		kpanic(X86_EXIT_HEAP, "devices: cannot allocate %lu KiB of driver memory (%s)",
		       (unsigned long)(len >> 10), err_name(err));
	if (pa)
		*pa = phys;
	return va;
}

/* One seed per core, read on the boot core (the device's queue belongs to it) and mixed
 * into each core's CSPRNG by that core itself as it enters its loop (x86_dev_loop_add),
 * then wiped. Written by the boot core before it starts the APs, read once by each AP:
 * the STARTUP IPI is an MMIO/MSR write that x86 orders after these stores (TSO, and
 * wrmsr serialises), as for the AP parameters in smp.c, so no fence is needed. */
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
	struct dev_blk_state *st = &dev_blk_st[i];
	/* MSI-X on with the function masked until the entry is programmed (after DRIVER_OK:
	 * a change signalled before that stays pending in the device's PBA). */
	int merr = pci_msix_init(&dev_bus, vd->pci, &st->msix);
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
	if (v->cfg_irq) {
		merr = pci_msix_set(&dev_bus, &st->msix, 0, x86_msi_addr(x86_cores[0].apic_id),
				    DEV_BLK_CFG_VECTOR(i));
		if (!merr) {
			pci_msix_enable(&dev_bus, &st->msix);
			st->irq = true;
		}
	}
	LOG_INFO("boot", "virtio-blk%u: features 0x%llx; configuration changes %s", (unsigned)i,
		 (unsigned long long)vd->features,
		 st->irq ? "by MSI-X to core 0" : "polled once a second by core 0");
	st->buf = dev_selftest_buf(&v->blk, &st->buf_len);
	dev_selftest("virtio-blk", i, &v->blk, &v->q, st->buf, st->buf_len);
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

/* Program MSI-X entry `entry` of the NIC to reach core `core` (vector base + entry). */
static int dev_net_vector(uint16_t entry, uint32_t core)
{
	if (entry >= X86_VEC_DEV_COUNT)
		return -E_RANGE;
	return pci_msix_set(&dev_bus, &dev_net_msix, entry, x86_msi_addr(x86_cores[core].apic_id),
			    X86_VEC_DEV_BASE + entry);
}

static void dev_net_init(struct virtio_dev *vd, uint32_t n_cores)
{
	int merr = pci_msix_init(&dev_bus, vd->pci, &dev_net_msix);
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
	LOG_INFO("boot", "virtio-net: MAC %02x:%02x:%02x:%02x:%02x:%02x, features 0x%llx (%s%s%s%s), "
			 "%u queue pair(s) of %u offered, link %s",
		 m[0], m[1], m[2], m[3], m[4], m[5], (unsigned long long)vd->features,
		 (vd->features & VIRTIO_F_EVENT_IDX) ? "EVENT_IDX " : "",
		 (vd->features & VIRTIO_NET_F_MAC) ? "MAC " : "",
		 (vd->features & VIRTIO_NET_F_STATUS) ? "STATUS " : "",
		 (vd->features & VIRTIO_NET_F_MQ) ? "CTRL_VQ+MQ" : "single queue",
		 (unsigned)dev_net.n_pairs, (unsigned)dev_net.dev_max_pairs,
		 vnet_link_up(&dev_net) ? "up" : "down");
}

/* ---- the network stack on core 0 ---- */

static uint64_t dev_now_ms(void)
{
	return x86_now_ns() / 1000000u;
}

static void dev_random(void *buf, size_t len)
{
	if (csprng_kernel_bytes(buf, len) != 0)
		PANIC("csprng: generator unavailable on core %u", (unsigned)x86_core_self()->index);
}

/* Development builds: "ip=a.b.c.d/len" and optional "gw=a.b.c.d" replace DHCP. */
static bool dev_static_ip(const char *cmdline, size_t len, uint32_t *ip, uint32_t *mask, uint32_t *gw)
{
#ifdef URMQTT_PROD
	(void)cmdline;
	(void)len;
	(void)ip;
	(void)mask;
	(void)gw;
	return false;
#else
	char v[32];
	*gw = 0;
	if (cmdline_get(cmdline, len, "ip", v, sizeof v) != 0)
		return false;
	if (cmdline_parse_ipv4_prefix(v, ip, mask) != 0 || *mask == 0 || (*mask & 3u) || !(*ip & ~*mask)) {
		LOG_WARN("net", "ignoring ip= on the command line (want a.b.c.d/len, len 1..30, a host address)");
		return false;
	}
	if (cmdline_get(cmdline, len, "gw", v, sizeof v) == 0 && cmdline_parse_ipv4(v, gw) != 0) {
		LOG_WARN("net", "ignoring malformed gw= on the command line");
		*gw = 0;
	}
	return true;
#endif
}

/* With a pair per core, pair p interrupts core p (which drains it once the device steers;
 * until then core 0 polls it); otherwise every pair interrupts core 0, which receives from
 * all of them. The configuration-change entry goes to core 0. Then the function mask is
 * cleared. */
static void dev_net_irqs(void)
{
	int err = 0;
	if (!dev_net_msix_ok)
		return;
	for (uint16_t p = 0; p <= dev_net.n_pairs && !err; p++)
		err = dev_net_vector(p, dev_own_pairs && p < dev_n_net ? p : 0);
	if (err) {
		LOG_WARN("boot", "virtio-net: MSI-X programming failed (%s); polling on the tick only",
			 err_name(err));
		dev_net_msix_ok = false;
		return;
	}
	pci_msix_enable(&dev_bus, &dev_net_msix);
}

/* The wall clock for certificate validity: the CMOS RTC read once, then the TSC clock. */
static uint64_t dev_wall_base_s, dev_wall_base_ns;

static int64_t dev_wall_s(void)
{
	if (!dev_wall_base_s)
		return 0; /* 1970: every certificate looks "not yet valid", visibly */
	return (int64_t)(dev_wall_base_s + (x86_now_ns() - dev_wall_base_ns) / 1000000000u);
}

/* The same clock in milliseconds (storage's time stamps: the registry, telemetry). */
static int64_t dev_wall_ms(void)
{
	if (!dev_wall_base_s)
		return 0;
	return (int64_t)(dev_wall_base_s * 1000u + (x86_now_ns() - dev_wall_base_ns) / 1000000u);
}

/* Development builds: the whole number "key=N" of the command line when it lies in
 * [lo, hi] (true, *out set); absent or out of range (said on the console): false, *out
 * unchanged. A production build has no such knobs: always false. */
static bool dev_knob_u32(const char *cmdline, size_t len, const char *key, uint32_t lo, uint32_t hi,
			 uint32_t *out)
{
#ifndef URMQTT_PROD
	char v[16];
	uint64_t n = 0;
	if (cmdline_get(cmdline, len, key, v, sizeof v) != 0)
		return false;
	for (const char *c = v; *c && n <= hi; c++)
		n = (*c >= '0' && *c <= '9') ? n * 10u + (uint64_t)(*c - '0') : UINT64_MAX;
	if (v[0] && n >= lo && n <= hi) {
		*out = (uint32_t)n;
		return true;
	}
	LOG_WARN("boot", "ignoring %s= (want %lu..%lu)", key, (unsigned long)lo, (unsigned long)hi);
#else
	(void)cmdline;
	(void)len;
	(void)key;
	(void)lo;
	(void)hi;
	(void)out;
#endif
	return false;
}

/* "broker_report_ms=N" (1000..600000) changes the memory line's period (the smoke test
 * reads it every second instead of every 10 s). */
static uint32_t dev_report_ms(const char *cmdline, size_t len)
{
	uint32_t ms = DEV_BROKER_REPORT_MS;
	(void)dev_knob_u32(cmdline, len, "broker_report_ms", 1000u, 600000u, &ms);
	return ms;
}

/* The storage knobs of development builds, for tests that cannot wait for the
 * configuration's hours and days (0: the configuration's value): the first backup and
 * the interval (seconds), telemetry retention (seconds), the WAL pages that make the
 * storage core checkpoint (1: after every commit, so the database region is current). */
static void dev_store_knobs(const char *cmdline, size_t len, struct kstore_knobs *k)
{
	(void)dev_knob_u32(cmdline, len, "store_backup_first_s", 1u, 86400u, &k->backup_first_s);
	(void)dev_knob_u32(cmdline, len, "store_backup_interval_s", 1u, 86400u * 30u, &k->backup_interval_s);
	(void)dev_knob_u32(cmdline, len, "store_retention_s", 1u, 86400u * 3650u, &k->retention_s);
	(void)dev_knob_u32(cmdline, len, "store_checkpoint_pages", 1u, 1000000u, &k->checkpoint_pages);
}

/* storage.required, or "storage_required=1" on the command line: it can only make a build
 * stricter (a prod image requires storage already), so every build honours it. */
static bool dev_storage_required(const char *cmdline, size_t len)
{
	char v[8];
	if (CONF_STORAGE_REQUIRED)
		return true;
	return cmdline_get(cmdline, len, "storage_required", v, sizeof v) == 0 && v[0] == '1' && v[1] == 0;
}

/* ---- the multicore data plane ----
 * Wake-up protocol (a core halts only when its loop found no work; a mesh message must
 * not wait for its tick): a core about to halt stores sleeping = true, issues a seq_cst
 * fence and then looks at its incoming rings (x86_dev_mesh_pending, with interrupts off,
 * from main_idle); a sender commits its message (release), issues a seq_cst fence and
 * then reads the receiver's sleeping flag, sending the wake-up IPI when it is set. With
 * the two fences at least one side sees the other's store: either the receiver finds
 * the message and does not halt, or the sender sees it asleep and interrupts it (an IPI
 * that arrives between the check and hlt stays pending and ends the halt: sti;hlt). */
static void dev_wake(uint32_t dst)
{
	/* seq_cst: orders the message's commit (a release store of the ring's head) before
	 * the load of the flag below; pairs with the fence in main_idle (see above). */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&x86_cores[dst].sleeping, memory_order_relaxed)) {
		x86_apic_send_wake(x86_cores[dst].apic_id);
		dev_cores[x86_core_index()].n_ipis++;
	}
}

bool x86_dev_mesh_pending(uint32_t core)
{
	return dev_mesh && core < PLAT_MAX_CPUS && (dev_cores[core].ok || dev_cores[core].storage) &&
	       xcore_pending(dev_mesh, core);
}

/* ARP received on core `self`: a copy to every other core, so each core's ARP cache
 * learns the replies to its own requests wherever they arrived. */
static void dev_arp_copies(uint32_t self, const uint8_t *frame, size_t len)
{
	for (uint32_t c = 0; c < dev_n_net; c++) {
		if (c == self)
			continue;
		if (xcore_send(dev_mesh, self, c, KSTEER_KIND_RX_FRAME, frame, (uint32_t)len) == 0)
			dev_wake(c);
		else
			dev_cores[self].arp_drops++;
	}
}

/* A worker draining its own pair (the device steers), knet's rx_steer hook: a TCP flow to
 * our address stays here (the device picked this queue, and our replies leave on it, so
 * the device keeps the flow here); ARP is handled here and copied to every other core;
 * anything else (ICMP, DHCP) is core 0's. */
static bool dev_rx_worker(void *ctx, const uint8_t *frame, size_t len)
{
	struct dev_core *dc = ctx;
	uint32_t self = (uint32_t)(dc - dev_cores), w;
	enum ksteer_class k = ksteer_classify(&dc->steer, frame, len, &w);
	if (k == KSTEER_FLOW)
		return false;
	if (k == KSTEER_ARP) {
		dev_arp_copies(self, frame, len);
		return false;
	}
	if (xcore_send(dev_mesh, self, 0, KSTEER_KIND_RX_FRAME, frame, (uint32_t)len) == 0)
		dev_wake(0);
	else
		dc->steer_drops++;
	return true;
}

/* A worker's address changed: its classifier follows. */
static void dev_worker_addr(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw)
{
	struct dev_core *dc = ctx;
	(void)mask, (void)gw;
	ksteer_set_addr(&dc->steer, ip);
}

/* Core 0, knet's rx_steer hook: where a received frame goes (kernel/ksteer.h). */
static bool dev_rx_steer(void *ctx, const uint8_t *frame, size_t len)
{
	(void)ctx;
	uint32_t w;
	enum ksteer_class k = ksteer_classify(&dev_steer, frame, len, &w);
	if (k == KSTEER_ARP) {
		dev_arp_copies(0, frame, len);
		return false; /* and on core 0 itself */
	}
	if (k != KSTEER_FLOW || w == 0 || dev_device_steers)
		return false;
	/* Frames never exceed the slot (mesh_slot_bytes >= 1536 > 1514): a refusal here is
	 * lack of credit; the peer's TCP retransmits. Never block. */
	if (xcore_send(dev_mesh, 0, w, KSTEER_KIND_RX_FRAME, frame, (uint32_t)len) == 0)
		dev_wake(w);
	else
		dev_cores[w].steer_drops++;
	return true;
}

/* A worker without its own pair, knet's tx hook: core 0 sends it on pair 0. */
static int dev_tx_to_core0(void *ctx, const uint8_t *frame, size_t len)
{
	struct dev_core *dc = ctx;
	uint32_t self = x86_core_index();
	int err = xcore_send(dev_mesh, self, 0, KSTEER_KIND_TX_FRAME, frame, (uint32_t)len);
	if (err) {
		dc->tx_drops++;
		return err;
	}
	dev_wake(0);
	return 0;
}

/* Core 0: tell worker c the address; a full ring (more control messages in flight than
 * the reserve) leaves it marked and the mesh handler retries on later passes. */
static void dev_addr_send(uint32_t c)
{
	uint8_t m[KSTEER_ADDR_LEN];
	uint32_t mask, gw;
	uint32_t ip = net_stack_addr(&dev_cores[0].knet.ns, &mask, &gw);
	if (!dev_cores[0].knet.net_up)
		ip = mask = gw = 0;
	ksteer_addr_encode(m, ip, mask, gw);
	if (xcore_send_ctrl(dev_mesh, 0, c, KSTEER_KIND_ADDR, m, sizeof m) == 0) {
		dev_cores[c].addr_dirty = false;
		dev_wake(c);
	} else {
		dev_cores[c].addr_dirty = true;
	}
}

/* Core 0, knet's addr_changed hook: steer to the new address, tell every worker. */
static void dev_addr_changed(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw)
{
	(void)ctx;
	(void)mask;
	(void)gw;
	ksteer_set_addr(&dev_steer, ip);
	for (uint32_t c = 1; c < dev_n_net; c++)
		dev_cores[c].addr_dirty = true; /* sent from the mesh handler, after knet took it */
}

/* The network kinds (kernel/ksteer.h) on every core. */
static void dev_net_recv(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct dev_core *dc = ctx;
	uint32_t ip, mask, gw;
	switch (msg->kind) {
	case KSTEER_KIND_RX_FRAME: /* from our own cores only: never steered again */
		(void)src;
		(void)knet_input(&dc->knet, msg->data, msg->len);
		break;
	case KSTEER_KIND_TAKE_PAIR: /* the device steers: drain our own pair from now on */
		if (src == 0 && dc != &dev_cores[0] && knet_set_rx_pairs(&dc->knet, 1) != 0)
			dc->addr_bad++;
		break;
	case KSTEER_KIND_TX_FRAME:
		if (dc == &dev_cores[0])
			(void)!knet_send_frame(&dc->knet, msg->data, msg->len); /* counted in knet */
		break;
	case KSTEER_KIND_ADDR:
		if (src == 0 && ksteer_addr_decode(msg->data, msg->len, &ip, &mask, &gw) == 0)
			knet_set_addr(&dc->knet, ip, mask, gw);
		else
			dc->addr_bad++;
		break;
	default:
		break;
	}
}

/* Loop handler "mesh" (ctx = struct dev_core *): this core's incoming messages, and on
 * core 0 the address messages still owed to workers. */
static int dev_mesh_poll(void *ctx)
{
	struct dev_core *dc = ctx;
	uint32_t self = (uint32_t)(dc - dev_cores);
	if (self == 0)
		for (uint32_t c = 1; c < dev_n_net; c++) {
			if (dev_cores[c].addr_dirty)
				dev_addr_send(c);
			static const uint8_t none[1];
			if (dev_cores[c].take_pair && xcore_send_ctrl(dev_mesh, 0, c, KSTEER_KIND_TAKE_PAIR, none, 0) == 0) {
				dev_cores[c].take_pair = false;
				dev_wake(c);
			}
		}
	return (int)kdemux_poll(&dc->demux, dev_mesh, self);
}

/* The broker shards' messages (dp/shard.h, kinds 0x0200-0x02ff) to this core's broker. */
static void dev_shard_recv(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct dev_core *dc = ctx;
	kbroker_mesh_recv(&dc->broker, src, msg->kind, msg->data, msg->len);
}

/* The shards' mesh op: from the calling core (the dp's own) to dst; -E_AGAIN without
 * credit (the shard backlogs it). */
static int dev_shard_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	int err = xcore_send(dev_mesh, x86_core_index(), dst, kind, data, len);
	if (err == 0)
		dev_wake(dst);
	return err;
}

/* ---- storage: the links between data cores and the storage core ----
 * Data core -> storage core: the mesh (dedicated storage core) or, with one core, the
 * storage engine's local queue. Storage core -> data core: the mesh, or with one core a
 * direct call into core 0's broker from the storage handler (a loop handler of core 0: no
 * broker call is in progress). */
static int dev_store_send(void *ctx, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	if (!dev_store_dedicated)
		return kstore_local(kind, data, len);
	int err = xcore_send(dev_mesh, x86_core_index(), dev_store_core, kind, data, len);
	if (err == 0)
		dev_wake(dev_store_core);
	return err;
}

static int dev_store_out(uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	if (!dev_store_dedicated) {
		kbroker_store_recv(&dev_cores[0].broker, kind, data, len);
		return 0;
	}
	int err = xcore_send(dev_mesh, dev_store_core, dst, kind, data, len);
	if (err == 0)
		dev_wake(dst);
	return err;
}

/* The storage core's mesh handler: what data cores record. */
static void dev_store_in(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	(void)ctx;
	kstore_input(src, msg->kind, msg->data, msg->len);
}

/* A data core's: what the storage core answers. */
static void dev_store_back(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct dev_core *dc = ctx;
	(void)src;
	kbroker_store_recv(&dc->broker, msg->kind, msg->data, msg->len);
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

/* The storage core's own set-up: a demultiplexer for the storage kinds (boot core). */
static bool dev_store_core_init(uint32_t c)
{
	struct dev_core *dc = &dev_cores[c];
	int err = kdemux_init(&dc->demux, dc->demux_tab, DEV_NET_DEMUX);
	if (!err)
		err = kdemux_register(&dc->demux, KDEMUX_STORE_IN_FIRST, KDEMUX_STORE_IN_LAST, dev_store_in, dc);
	if (err) {
		LOG_ERR("boot", "core %u: storage core set-up failed (%s)", (unsigned)c, err_name(err));
		return false;
	}
	dc->storage = true;
	return true;
}

/* The virtio-blk configuration vectors go to the storage core (which owns the disks). */
static void dev_blk_irqs(void)
{
	for (uint32_t i = 0; i < dev_n_vblk; i++) {
		struct dev_blk_state *st = &dev_blk_st[i];
		if (st->irq && pci_msix_set(&dev_bus, &st->msix, 0, x86_msi_addr(x86_cores[dev_store_core].apic_id),
					    DEV_BLK_CFG_VECTOR(i)) != 0) {
			LOG_WARN("blk", "virtio-blk%u: configuration vector not moved to core %u: polled instead",
				 (unsigned)i, (unsigned)dev_store_core);
			st->irq = false;
		}
	}
}

static const struct knet_hooks dev_core0_hooks = { .rx_steer = dev_rx_steer, .addr_changed = dev_addr_changed };
static const struct knet_hooks dev_worker_hooks = { .tx = dev_tx_to_core0 };
static const struct knet_hooks dev_worker_mq_hooks = { .rx_steer = dev_rx_worker, .addr_changed = dev_worker_addr };

/* The mesh between n cores, from the configuration. False (logged) when it cannot be
 * built: then only core 0 serves. */
static bool dev_mesh_init(uint32_t n)
{
	struct xcore_config xc = {
		.n_cores = n,
		.slots_per_ring = CONF_CORE_MESH_SLOTS,
		.slot_size = (CONF_CORE_MESH_SLOT_BYTES + 7u) & ~7u,
		.ctrl_slots = CONF_CORE_MESH_CTRL_SLOTS,
		.credit_batch = CONF_CORE_MESH_CREDIT_BATCH,
		.poll_max = CONF_CORE_MESH_POLL_MAX,
		.poll_per_source = CONF_CORE_MESH_POLL_MAX,
	};
	size_t len;
	void *va;
	uint64_t pa;
	int err = xcore_mesh_size(&xc, &len);
	if (!err)
		err = kheap_pages_alloc((uint32_t)((len + X86_PAGE_SIZE - 1) / X86_PAGE_SIZE), 1, &va, &pa);
	if (!err)
		err = xcore_mesh_init(&dev_mesh, va, len, &xc);
	if (err) {
		dev_mesh = NULL;
		LOG_ERR("boot", "net: no core mesh for %u cores (%s); only core 0 serves", (unsigned)n,
			err_name(err));
		return false;
	}
	LOG_INFO("boot", "net: core mesh of %u cores, %u rings of %u slots of %u B (%lu KiB)", (unsigned)n,
		 (unsigned)(n * (n - 1)), (unsigned)xc.slots_per_ring, (unsigned)xc.slot_size,
		 (unsigned long)(len >> 10));
	return true;
}

/* Steering over n cores: a random Toeplitz key, the indirection table from the
 * configuration. False (logged) when refused. */
static bool dev_steer_init(uint32_t n)
{
	uint8_t key[RSS_KEY_LEN];
	dev_random(key, sizeof key);
	if (!dev_rss_indir) /* kept when steering is rebuilt over fewer cores */
		dev_rss_indir = dev_pages(sizeof(uint16_t) * CONF_NET_RSS_INDIRECTION_ENTRIES, NULL);
	struct rss_config rc = { .key = key, .n_workers = n, .n_indir = CONF_NET_RSS_INDIRECTION_ENTRIES,
				 .indir = dev_rss_indir };
	int err = rss_steer_init(&dev_rss, &rc);
	if (!err)
		err = ksteer_init(&dev_steer, &dev_rss);
	memset(key, 0, sizeof key);
	if (err)
		LOG_ERR("boot", "net: steering over %u cores refused (%s: net.rss_indirection_entries %u); only core 0 "
				"serves", (unsigned)n, err_name(err), (unsigned)CONF_NET_RSS_INDIRECTION_ENTRIES);
	return err == 0;
}

/* Core c's broker and stack (on the boot core). False (logged) on failure. */
static bool dev_core_net_init(uint32_t c, const struct kbroker_config *bc0, const struct knet_config *kc0)
{
	struct dev_core *dc = &dev_cores[c];
	struct kbroker_config bc = *bc0;
	bc.core = c;
	int err = kbroker_init(&dc->broker, &bc);
	if (err) {
		LOG_ERR("boot", "core %u: broker initialisation failed (%s)", (unsigned)c, err_name(err));
		return false;
	}
	struct knet_config kc = *kc0;
	kc.core = c;
	kc.upper = kbroker_upper(&dc->broker);
	if (c > 0) {
		kc.use_dhcp = false;
		kc.ext_addr = true;
		kc.ip = kc.mask = kc.gw = 0;
		kc.n_rx_pairs = 0;
		kc.pair = dev_own_pairs ? (uint16_t)c : 0;
		kc.tx_hook = !dev_own_pairs;
		kc.n_tx_stage = CONF_NET_TX_STAGE_FRAMES;
		kc.hooks = dev_own_pairs ? &dev_worker_mq_hooks : &dev_worker_hooks;
		kc.hooks_ctx = dc;
		if (dev_own_pairs && ksteer_init(&dc->steer, &dev_rss) != 0)
			return false;
	} else if (dev_mesh) {
		kc.hooks = &dev_core0_hooks;
	}
	size_t len = knet_mem_size(&kc);
	if (!len) {
		LOG_ERR("boot", "core %u: net configuration rejected", (unsigned)c);
		return false;
	}
	/* Sized by the configuration (TCP connections): too little RAM for it is reported
	 * with the remedy instead of stopping the boot. */
	void *mem;
	uint64_t pa;
	err = kheap_pages_alloc((uint32_t)((len + X86_PAGE_SIZE - 1) / X86_PAGE_SIZE), 1, &mem, &pa);
	if (err) {
		LOG_ERR("boot", "core %u: no %lu KiB for the TCP tables (%s): give the VM more memory "
				"(URMQTT_MEM) or configure fewer TCP connections", (unsigned)c,
			(unsigned long)(len >> 10), err_name(err));
		return false;
	}
	err = knet_init(&dc->knet, &kc, mem, len);
	if (!err && dev_mesh) {
		err = kdemux_init(&dc->demux, dc->demux_tab, DEV_NET_DEMUX);
		if (!err)
			err = kdemux_register(&dc->demux, KDEMUX_NET_FIRST, KDEMUX_NET_LAST, dev_net_recv, dc);
		if (!err)
			err = kdemux_register(&dc->demux, KDEMUX_SHARD_FIRST, KDEMUX_SHARD_LAST, dev_shard_recv, dc);
		if (!err && dev_store_dedicated)
			err = kdemux_register(&dc->demux, KDEMUX_STORE_OUT_FIRST, KDEMUX_STORE_OUT_LAST, dev_store_back, dc);
	}
	if (err) {
		LOG_ERR("boot", "core %u: stack initialisation failed (%s)", (unsigned)c, err_name(err));
		return false;
	}
	dc->ok = true;
	return true;
}

/* Fewer cores than the shards were built for: the home-core hash would name cores that
 * do not serve, so core 0 serves every flow and every session alone (logged). */
static void dev_serve_alone(const char *why)
{
	LOG_ERR("boot", "net: %s: core 0 serves alone (no steering, one broker shard)", why);
	dev_n_net = 1;
	if (!dev_steer_init(1))
		dev_mesh = NULL;
	else
		ksteer_set_addr(&dev_steer, dev_cores[0].knet.ip);
	kbroker_shards_off(&dev_cores[0].broker);
}

static void dev_knet_init(const char *cmdline, size_t cmdline_len, uint32_t n_cores)
{
	struct time_civil civ;
	uint64_t wall = 0;
	if (x86_rtc_read(&wall, &civ) == 0) {
		dev_wall_base_s = wall;
		dev_wall_base_ns = x86_now_ns();
	} else {
		LOG_WARN("boot", "broker: no usable RTC; certificates will look not yet valid");
	}
	struct kbroker_config bc = {
		.core = 0,
		.report_ms = dev_report_ms(cmdline, cmdline_len),
		.now_ms = dev_now_ms,
		.wall_s = dev_wall_s,
		.core_self = x86_core_index,
	};
	struct knet_config kc = {
		.nic = &dev_net,
		.pair = 0,
		.n_rx_pairs = dev_net.n_pairs,
		.use_dhcp = true,
		.n_arp = DEV_NET_ARP,
		.n_pending = DEV_NET_PENDING,
		.rx_batch = DEV_NET_RX_BATCH,
		.now_ms = dev_now_ms,
		.random = dev_random,
	};
	if (dev_static_ip(cmdline, cmdline_len, &kc.ip, &kc.mask, &kc.gw))
		kc.use_dhcp = false;
	uint32_t n = MIN(MAX(n_cores, 1u), (uint32_t)PLAT_MAX_CPUS);
	/* Storage: with a data disk, the highest core runs it and nothing else (one core:
	 * core 0 runs it from its loop); the data cores are the others (ADR-031). */
	struct blk_dev *disk = dev_data_disk(&dev_store_disk_name);
	bool required = dev_storage_required(cmdline, cmdline_len);
	if (!disk && required)
		PANIC("storage is required (storage.required) but unusable: this machine has no data disk "
		      "(virtio-blk or virtio-scsi)");
	if (!disk)
		LOG_WARN("boot", "storage: no data disk (virtio-blk or virtio-scsi): serving WITHOUT persistence (a "
				 "restart forgets sessions, queued and retained messages)");
	dev_store_on = disk != NULL;
	dev_store_dedicated = dev_store_on && n > 1;
	uint32_t n_data = dev_store_dedicated ? n - 1 : n;
	if (n > 1 && !(dev_mesh_init(n) && dev_steer_init(n_data))) {
		dev_mesh = NULL;
		n = n_data = 1;
		dev_store_dedicated = false;
	}
	dev_store_core = dev_store_dedicated ? n - 1 : 0;
	dev_own_pairs = dev_net.n_pairs >= n_data;
	if (n_data > 1) { /* one broker shard per data core, sessions on their home core (ADR-027) */
		bc.n_cores = n_data;
		bc.mesh = (struct dp_mesh_ops){ dev_shard_send, NULL };
		dev_random(bc.home_key, sizeof bc.home_key);
	}
	bc.mesh_payload_max = dev_mesh ? xcore_payload_max(dev_mesh) : ((CONF_CORE_MESH_SLOT_BYTES + 7u) & ~7u) - 8u;
	if (dev_store_on) {
		bc.store_on = true;
		bc.store_send = dev_store_send;
		bc.store_payload_max = bc.mesh_payload_max;
		const struct kstore_config ks = {
			.blk = disk, .disk_name = dev_store_disk_name, .core = dev_store_core, .n_data = n_data,
			.dedicated = dev_store_dedicated, .required = required, .send = dev_store_out,
			.payload_max = bc.mesh_payload_max,
			.now_ns = x86_now_ns, .wall_ms = dev_wall_ms, .report_ms = bc.report_ms,
		};
		struct kstore_config kcfg = ks;
		memcpy(kcfg.home_key, bc.home_key, sizeof kcfg.home_key);
		dev_store_knobs(cmdline, cmdline_len, &kcfg.knobs);
		if (kstore_init(&kcfg) != 0) {
			LOG_ERR("broker", "storage could not be set up; no network service");
			return;
		}
		mem_wipe(kcfg.home_key, sizeof kcfg.home_key);
		if (dev_store_dedicated && !dev_store_core_init(dev_store_core))
			return;
		dev_blk_irqs();
		LOG_INFO("boot", "storage: %s, run by core %u%s", dev_store_disk_name, (unsigned)dev_store_core,
			 dev_store_dedicated ? " (nothing else runs there)" : " from its loop (one core)");
	}
	/* Core 0 first: its failure means no network at all; a worker's only shrinks the
	 * set of cores flows are steered to (the cores after it are not started either). */
	if (!dev_core_net_init(0, &bc, &kc)) {
		LOG_ERR("boot", "broker: initialisation failed; no network service");
		return;
	}
	dev_broker_ok = true;
	dev_n_net = 1;
	for (uint32_t c = 1; c < n_data && dev_core_net_init(c, &bc, &kc); c++)
		dev_n_net = c + 1;
	mem_wipe(bc.home_key, sizeof bc.home_key);
	if (dev_n_net < n_data)
		dev_serve_alone("a worker's stack or broker could not be built");
	if (dev_mesh) {
		/* A static address was taken inside core 0's knet_init, before the workers
		 * existed: (re)state it for the steering and every worker. */
		ksteer_set_addr(&dev_steer, dev_cores[0].knet.ip);
		for (uint32_t c = 1; c < dev_n_net; c++)
			dev_cores[c].addr_dirty = true;
	}
	dev_net_irqs();
	const char *irq = dev_net_msix_ok ? " (MSI-X + polling)" : " (polled)";
	const char *addr = kc.use_dhcp ? "DHCP" : "static address from the command line";
	if (dev_n_net == 1)
		LOG_INFO("boot", "net: one stack, on core 0, receiving from %u pair(s)%s; %s",
			 (unsigned)dev_net.n_pairs, irq, addr);
	else
		LOG_INFO("boot", "net: %u stacks, one per core; core 0 receives from %u pair(s)%s and steers; "
				 "workers transmit %s; %s",
			 (unsigned)dev_n_net, (unsigned)dev_net.n_pairs, irq,
			 dev_own_pairs ? "on their own pairs" : "through core 0 on pair 0", addr);
	LOG_INFO("broker", "listening on TCP %u (MQTT over TLS 1.3, client certificates required)%s",
		 (unsigned)kbroker_upper(&dev_cores[0].broker)->tcp->ports[0],
		 kc.use_dhcp ? " once the DHCP lease is in" : "");
}

/* After the APs started: steer only over the cores that run (a core that did not start
 * would never drain its rings). Boot core, before its own loop runs. */
/* Storage gets its final view of the data cores (kernel/kstore.h: it waits for this). A
 * dedicated storage core that did not start cannot serve: the data cores are told storage
 * is off (or the machine stops, storage.required). Boot core, after the cores started. */
static void dev_store_go(uint32_t n_started)
{
	if (!dev_store_on)
		return;
	if (dev_store_dedicated && n_started <= dev_store_core) {
		if (CONF_STORAGE_REQUIRED)
			PANIC("storage is required (storage.required) but its core %u did not start", (unsigned)dev_store_core);
		LOG_ERR("store", "the storage core %u did not start: serving WITHOUT persistence", (unsigned)dev_store_core);
		kbroker_store_recv(&dev_cores[0].broker, STORE_K_OFF, NULL, 0);
		for (uint32_t c = 1; c < dev_n_net; c++)
			if (xcore_send_ctrl(dev_mesh, 0, c, STORE_K_OFF, NULL, 0) == 0)
				dev_wake(c);
		return;
	}
	kstore_go(dev_n_net);
}

void x86_dev_cores_started(uint32_t n_started)
{
	uint32_t n_data_started = dev_store_dedicated ? MIN(n_started, dev_store_core) : n_started;
	if (dev_mesh && dev_own_pairs && n_data_started >= dev_n_net && dev_n_net > 1) {
		/* Every core runs: the device steers from now on. Core 0 stops draining the
		 * workers' pairs before it tells each worker to take its own (frames wait in
		 * the queue meanwhile); this runs on core 0 before its loop does. */
		if (knet_set_rx_pairs(&dev_cores[0].knet, 1) == 0) {
			dev_device_steers = true;
			for (uint32_t c = 1; c < dev_n_net; c++)
				dev_cores[c].take_pair = true;
			LOG_INFO("boot", "net: the device steers: each of %u cores drains its own queue pair",
				 (unsigned)dev_n_net);
		}
		dev_store_go(n_started);
		return;
	}
	if (dev_mesh && n_data_started < dev_n_net) {
		LOG_WARN("boot", "net: only %u of %u cores started", (unsigned)n_started, (unsigned)dev_n_net);
		dev_serve_alone("not every core started");
	}
	dev_store_go(n_started);
}

static void dev_init_devices(uint32_t n_cores)
{
	if (dev_scan_err && !dev_scanned) {
		LOG_WARN("boot", "pci: enumeration failed (%s)", err_name(dev_scan_err));
		return;
	}
	uint32_t n_bad = 0;
	for (uint32_t i = 0; i < dev_bus.n_devs; i++)
		if (dev_pci[i].flags & PCI_DEV_BAD)
			n_bad++;
	LOG_INFO("boot", "pci: %u functions over %s, %u rejected%s", (unsigned)dev_bus.n_devs,
		 dev_cfg_how ? dev_cfg_how : "?", (unsigned)n_bad,
		 dev_scan_err ? " (device table full)" : "");
	for (uint32_t i = 0; i < dev_bus.n_devs; i++) {
		const struct pci_dev *d = &dev_pci[i];
		uint16_t t = virtio_pci_device_type(d);
		LOG_INFO("boot", "pci %02x:%02x.%u %04x:%04x class %02x.%02x.%02x%s%s", d->bus, d->dev,
			 d->fn, d->vendor, d->device, d->class_code, d->subclass, d->prog_if,
			 t ? " " : "", t ? dev_type_name(t) : ((d->flags & PCI_DEV_BAD) ? " REJECTED" : ""));
	}
	for (uint32_t i = 0; i < dev_bus.n_devs && dev_n_vd < DEV_MAX_VIRTIO; i++) {
		struct pci_dev *d = &dev_pci[i];
		uint16_t t = virtio_pci_device_type(d);
		if (!t || (d->flags & PCI_DEV_BAD))
			continue;
		if (!(t == VIRTIO_ID_NET || t == VIRTIO_ID_BLOCK || t == VIRTIO_ID_RNG || t == VIRTIO_ID_SCSI))
			continue;
		if ((t == VIRTIO_ID_NET && dev_net_ok) || (t == VIRTIO_ID_RNG && dev_rng_ok))
			continue; /* one of each for now */
		struct virtio_dev *vd = &dev_vd[dev_n_vd];
		int err = virtio_pci_probe(vd, &dev_bus, d);
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

void x86_dev_init(const char *cmdline, size_t cmdline_len, uint32_t n_cores)
{
	dev_init_devices(n_cores);
	/* After virtio-rng (if any) reseeded the CSPRNG; a failure counts like a failed
	 * block self-test (the drivers scenario exits non-zero), and no broker is built on
	 * a TLS stack that failed its known answers. */
	if (x86_tls_selftest() != 0) {
		dev_n_selftest_fail++;
		if (dev_net_ok)
			LOG_ERR("boot", "broker: not started (TLS self-test failed)");
		return;
	}
	if (dev_net_ok)
		dev_knet_init(cmdline, cmdline_len, n_cores);
}

/* Development builds, test=net: each core with a stack logs its own counters at most once
 * a second when they changed (its own state only: no cross-core reads). */
static bool dev_stats_on;

void x86_dev_stats_enable(void)
{
	dev_stats_on = true;
}

static int dev_stats_poll(void *ctx)
{
	struct dev_core *dc = ctx;
	const struct knet *k = &dc->knet;
	uint32_t core = (uint32_t)(dc - dev_cores);
	uint64_t now = dev_now_ms();
	if (now < dc->stats_last_ms + 1000u)
		return 0;
	dc->stats_last_ms = now;
	uint64_t irqs = atomic_load_explicit(&x86_cores[core].n_dev_irqs, memory_order_relaxed);
	uint64_t sum = k->st.rx_frames + k->st.tx_frames + irqs + k->st.rx_steered;
	if (sum == dc->stats_last_sum)
		return 0;
	dc->stats_last_sum = sum;
	struct dp_stats ds;
	dp_stats_get(dc->broker.dp, &ds); /* this core's broker, on this core */
	LOG_INFO("net", "core %u pair %u: %lu frames in, %lu out, %lu device interrupts, %u connections, "
			"%lu TLS handshakes, %lu bytes in, %lu ICMP echo replies, %lu frames of unknown type",
		 (unsigned)core, (unsigned)k->cfg.pair, (unsigned long)k->st.rx_frames,
		 (unsigned long)k->st.tx_frames, (unsigned long)irqs, (unsigned)tcp_conn_count(k->tcp),
		 (unsigned long)ds.hs_done, (unsigned long)ds.bytes_in,
		 (unsigned long)k->ns.cnt.icmp_echo_replies, (unsigned long)k->ns.cnt.eth_type);
	if (dev_mesh && core == 0) {
		uint64_t sd = 0, ad = 0;
		for (uint32_t c = 1; c < dev_n_net; c++) {
			sd += dev_cores[c].steer_drops;
			ad += dev_cores[c].arp_drops;
		}
		LOG_INFO("net", "core 0 steering: %lu frames to workers, %lu flows, %lu ARP, %lu dropped (no mesh "
				"credit), %lu ARP copies dropped, %lu worker frames sent (%lu dropped), %lu wake-ups",
			 (unsigned long)k->st.rx_steered, (unsigned long)dev_steer.cnt.flows,
			 (unsigned long)dev_steer.cnt.arp, (unsigned long)sd, (unsigned long)ad,
			 (unsigned long)k->st.fwd_frames, (unsigned long)k->st.fwd_drops, (unsigned long)dc->n_ipis);
	} else if (dev_mesh) {
		LOG_INFO("net", "core %u mesh: %lu frames from core 0 (%lu before an address), %lu sent back "
				"(%lu dropped: no credit), %lu wake-ups sent",
			 (unsigned)core, (unsigned long)k->st.rx_frames, (unsigned long)k->st.rx_no_addr,
			 (unsigned long)k->st.tx_frames, (unsigned long)dc->tx_drops, (unsigned long)dc->n_ipis);
	}
	return 0;
}

/* ---- virtio-blk configuration changes, core 0's loop ---- */

static void dev_blk_retest_start(uint32_t i)
{
	struct dev_blk_state *st = &dev_blk_st[i];
	const char *why = NULL;
	st->retest = false;
	int err = blk_readtest_start(&st->run, &dev_vblk[i].blk, st->buf, st->buf_len, DEV_BLK_RETEST_STEPS, &why);
	if (err) {
		LOG_ERR("blk", "virtio-blk%u: block read test on the new last 4 KiB: FAIL (%s)", (unsigned)i,
			why ? why : err_name(err));
		return;
	}
	st->run_lba = st->run.lba;
	st->running = true;
}

/* One step of a running self-test; 1 when it finished. */
static int dev_blk_retest_step(uint32_t i)
{
	struct dev_blk_state *st = &dev_blk_st[i];
	const char *why = NULL;
	int err = blk_selftest_step(&st->run, &why);
	if (err == -E_AGAIN)
		return 0;
	st->running = false;
	if (err)
		LOG_ERR("blk", "virtio-blk%u: block read test on the new last 4 KiB (block %lu): FAIL (%s)",
			(unsigned)i, (unsigned long)st->run_lba, why ? why : err_name(err));
	else
		LOG_INFO("blk", "virtio-blk%u: block read test on the new last 4 KiB (block %lu): PASS",
			 (unsigned)i, (unsigned long)st->run_lba);
	if (st->retest)
		dev_blk_retest_start(i);
	return 1;
}

static void dev_blk_config(uint32_t i)
{
	struct dev_blk_state *st = &dev_blk_st[i];
	struct vblk_cap_event ev;
	int err = vblk_config_changed(&dev_vblk[i], &ev);
	st->retry = err == -E_AGAIN;
	if (ev.what == VBLK_CAP_GREW) {
		LOG_INFO("blk", "virtio-blk%u: capacity grew from %lu to %lu sectors (%lu MiB)", (unsigned)i,
			 (unsigned long)ev.old_sectors, (unsigned long)ev.new_sectors,
			 (unsigned long)(ev.new_sectors >> 11));
		/* The data disk (dev_data_disk) belongs to the storage service, whose requests share
		 * its one queue: a read test there would take the service's completions. Its growth
		 * writes and flushes the new end itself (the backup GPT), which tests it. This loop
		 * runs on the storage core. */
		if (dev_store_on && i == 0)
			kstore_disk_grew();
		else if (st->running)
			st->retest = true;
		else
			dev_blk_retest_start(i);
	} else if (ev.what == VBLK_CAP_SHRANK) {
		LOG_ERR("blk", "virtio-blk%u: capacity SHRANK from %lu to %lu sectors: data beyond the new end "
			       "is gone, I/O there now fails",
			(unsigned)i, (unsigned long)ev.old_sectors, (unsigned long)ev.new_sectors);
	} else if (err) {
		LOG_WARN("blk", "virtio-blk%u: configuration change not read (%s)%s", (unsigned)i, err_name(err),
			 st->retry ? "; trying again in a second" : "");
	}
}

/* The configuration vector only counted an interrupt on this core and woke it (trap.c:
 * device handlers acknowledge and mark work, nothing else); here, in the loop, the
 * devices whose vector may have fired (any device interrupt of core 0: the count does not
 * say which) and, once a second, the polled ones look at their configuration generation
 * (one register read) and re-read what changed. */
static int dev_blk_poll(void *ctx)
{
	(void)ctx;
	int work = 0;
	uint64_t now = dev_now_ms();
	/* Written only by this core's own interrupt handler: relaxed is enough. */
	uint64_t irqs = atomic_load_explicit(&x86_cores[dev_store_core].n_dev_irqs, memory_order_relaxed);
	bool irq = irqs != dev_blk_seen_irqs, tick = now >= dev_blk_next_poll_ms;
	bool step = now != dev_blk_last_step_ms;

	if (step)
		dev_blk_last_step_ms = now;
	for (uint32_t i = 0; i < dev_n_vblk; i++)
		if (dev_blk_st[i].running && step)
			work += dev_blk_retest_step(i);
	if (!irq && !tick)
		return work;
	dev_blk_seen_irqs = irqs;
	if (tick)
		dev_blk_next_poll_ms = now + DEV_BLK_CFG_POLL_MS;
	for (uint32_t i = 0; i < dev_n_vblk; i++) {
		const struct dev_blk_state *st = &dev_blk_st[i];
		bool look = st->irq ? (irq || (tick && st->retry)) : tick;
		if (look && vblk_config_pending(&dev_vblk[i])) {
			dev_blk_config(i);
			work++;
		}
	}
	return work;
}

void x86_dev_loop_add(struct kloop *l, uint32_t core)
{
	/* The disks' configuration changes: on the core that owns the disks (the storage
	 * core; core 0 when there is one core). */
	if (core == dev_store_core && dev_n_vblk && kloop_add(l, "blk", dev_blk_poll, NULL) != 0)
		PANIC("core %u: loop full", (unsigned)core);
	if (core > 0 && core < dev_rng_n_seeds) {
		if (csprng_kernel_reseed(dev_rng_seeds[core], DEV_RNG_BYTES) != 0)
			PANIC("core %u: CSPRNG refused the virtio-rng seed", (unsigned)core);
		memset(dev_rng_seeds[core], 0, DEV_RNG_BYTES);
	}
	if (core < PLAT_MAX_CPUS && dev_cores[core].storage) { /* the storage core: nothing else */
		if (kloop_add(l, "mesh", dev_mesh_poll, &dev_cores[core]) != 0)
			PANIC("core %u: loop full", (unsigned)core);
		kstore_loop_add(l);
		return;
	}
	if (core >= PLAT_MAX_CPUS || !dev_cores[core].ok)
		return;
	struct dev_core *dc = &dev_cores[core];
	if (dev_stats_on && kloop_add(l, "net-stats", dev_stats_poll, dc) != 0)
		PANIC("core %u: loop full", (unsigned)core);
	/* The mesh before the stack: frames a worker handed back are posted in the same pass
	 * as knet_poll's kick. */
	if (dev_mesh && kloop_add(l, "mesh", dev_mesh_poll, dc) != 0)
		PANIC("core %u: loop full", (unsigned)core);
	if (kloop_add(l, "net", knet_poll, &dc->knet) != 0)
		PANIC("core %u: loop full", (unsigned)core);
	if (dev_store_on && !dev_store_dedicated && core == 0)
		kstore_loop_add(l); /* one core: storage from core 0's loop, within its pass budget */
}

uint32_t x86_dev_selftest_failures(void)
{
	return dev_n_selftest_fail;
}

uint32_t x86_dev_block_count(void)
{
	return dev_n_vblk + dev_n_vscsi;
}
