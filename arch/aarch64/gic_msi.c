/* SPDX-License-Identifier: MIT
 *
 * Message-signalled interrupts for the PCI devices: through the GICv2m frame (GICv2: a
 * write of an SPI number to MSI_SETSPI_NS raises that SPI, routed to one core by the
 * distributor) or the GICv3 ITS (a write of an EventID to GITS_TRANSLATER, translated by
 * the device's table into an LPI delivered to a core's collection). Either way the kernel
 * hands node_port_msi a message for (core, vector, device). The interrupt only marks work
 * on that core (trap.c counts it); the node polls what it marked.
 * Design note. Boot core only, after the heap and before the other cores start
 * (a64_msi_init, then every message); each core enables its own LPIs (a64_msi_core_init).
 * Invariants: (1) every ITS command is complete (CREADR caught up) before the next
 * message is handed out; (2) an LPI or SPI is given once, never reused; (3) an EventID is
 * unique per device (a device's vector moved to another core gets a new EventID and LPI);
 * (4) every table the ITS or a redistributor reads is in zeroed page frames, written
 * before the register that names it, with a DSB between.
 */
#include "arch/aarch64/a64.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "lib/err.h"
#include "lib/mem.h"

/* GICv2 distributor (SPIs) and the v2m frame. */
#define GICD_ISENABLER 0x100u
#define GICD_IPRIORITYR 0x400u
#define GICD_ITARGETSR 0x800u
#define GICD_ICFGR 0xc00u
#define V2M_MSI_TYPER 0x008u
#define V2M_MSI_SETSPI_NS 0x040u
/* GICv3 ITS (its control frame, then the translation frame 64 KiB above). */
#define GITS_CTLR 0x0000u
#define GITS_TYPER 0x0008u
#define GITS_CBASER 0x0080u
#define GITS_CWRITER 0x0088u
#define GITS_CREADR 0x0090u
#define GITS_BASER(n) (0x0100u + 8u * (n))
#define GITS_TRANSLATER 0x10040u
#define GICR_CTLR 0x0000u
#define GICR_PROPBASER 0x0070u
#define GICR_PENDBASER 0x0078u
#define LPI_FIRST 8192u
#define LPI_ID_BITS 14u             /* INTIDs below 16384: 8192 LPIs */
#define LPI_COUNT ((1u << LPI_ID_BITS) - LPI_FIRST)
#define ITS_CMDQ_PAGES 1u           /* 128 commands of 32 bytes */
#define ITS_DEV_TABLE_PAGES 16u     /* flat device table: DeviceIDs up to 64 KiB / entry size */
#define ITS_EVENT_BITS 5u           /* 32 events per device */
#define ITS_MAX_DEVICES 32u
#define ITS_SPINS 10000000u
#define MSI_PRIORITY 0xa0u
#define MSI_MAX_VECTORS 16u         /* per core */
/* Memory attributes the ITS and redistributors use for their tables: inner write-back
 * read/write-allocate, inner shareable (the page frames are normal cacheable memory). */
#define TBL_ATTR ((7ull << 59) | (1ull << 10)) /* ..BASER/CBASER InnerCache, Shareability */
#define RD_ATTR ((7ull << 7) | (1ull << 10))   /* PROPBASER/PENDBASER */

enum msi_kind { MSI_NONE, MSI_V2M, MSI_ITS };

/* A device the ITS knows (its translation table is mapped): the EventIDs it used. */
struct msi_dev {
	uint16_t rid;
	uint8_t next_event;
};

static struct {
	enum msi_kind kind;
	uint32_t n_cores, per_core; /* device vectors per core */
	uint32_t iface[PLAT_MAX_CPUS]; /* GICv2: each core's CPU interface number */
	uint64_t gicd, frame;       /* v2m: the distributor and the frame */
	uint32_t spi_base, n_spis, spi_next;
	/* ITS */
	uint8_t *cmdq;
	uint32_t cmd_wr;            /* byte offset of the next command */
	bool pta;                   /* collections name redistributors by address */
	uint8_t *prop;              /* the LPI configuration table (shared) */
	uint8_t *pend[PLAT_MAX_CPUS];
	uint64_t rd[PLAT_MAX_CPUS]; /* each core's redistributor */
	uint32_t rd_procnum[PLAT_MAX_CPUS];
	uint32_t lpi_next;
	uint32_t n_devs;
	struct msi_dev devs[ITS_MAX_DEVICES];
} msi;

static void *msi_pages(uint32_t n, uint32_t align_pages, uint64_t *pa)
{
	void *va;
	uint64_t phys;
	if (kheap_pages_alloc(n, align_pages, &va, &phys) != 0)
		return NULL;
	if (pa)
		*pa = phys;
	memset(va, 0, (size_t)n * A64_PAGE);
	return va;
}

/* ---- GICv2m ------------------------------------------------------------------------ */

static int msi_v2m_init(uint64_t gicd, uint64_t frame, uint32_t n_cores, const uint32_t *aff)
{
	uint32_t typer = a64_mmio_r32(frame + V2M_MSI_TYPER);
	msi.spi_base = (typer >> 16) & 0x3ffu;
	msi.n_spis = typer & 0x3ffu;
	if (msi.spi_base < 32u || msi.n_spis == 0 || msi.spi_base + msi.n_spis > 1020u)
		return -E_NOSYS;
	msi.gicd = gicd;
	msi.frame = frame;
	for (uint32_t c = 0; c < n_cores; c++)
		msi.iface[c] = aff[c] & 7u; /* GICv2: at most 8 interfaces, numbered by Aff0 */
	msi.kind = MSI_V2M;
	return 0;
}

static int msi_v2m_message(uint32_t core, uint64_t *addr, uint32_t *data)
{
	if (msi.spi_next == msi.n_spis)
		return -E_NOMEM;
	uint32_t spi = msi.spi_base + msi.spi_next++;
	uint32_t cfg = a64_mmio_r32(msi.gicd + GICD_ICFGR + 4u * (spi / 16u));
	a64_mmio_w32(msi.gicd + GICD_ICFGR + 4u * (spi / 16u), cfg | 2u << (2u * (spi % 16u))); /* edge */
	a64_mmio_w8(msi.gicd + GICD_IPRIORITYR + spi, MSI_PRIORITY);
	a64_mmio_w8(msi.gicd + GICD_ITARGETSR + spi, (uint8_t)(1u << msi.iface[core]));
	a64_mmio_w32(msi.gicd + GICD_ISENABLER + 4u * (spi / 32u), 1u << (spi % 32u));
	*addr = msi.frame + V2M_MSI_SETSPI_NS;
	*data = spi;
	return 0;
}

/* ---- GICv3 ITS --------------------------------------------------------------------- */

/* Queue one command and wait until the ITS has consumed everything (invariant 1). */
static int its_cmd(uint64_t d0, uint64_t d1, uint64_t d2, uint64_t d3)
{
	uint64_t *c = (uint64_t *)(void *)(msi.cmdq + msi.cmd_wr);
	c[0] = d0;
	c[1] = d1;
	c[2] = d2;
	c[3] = d3;
	msi.cmd_wr = (msi.cmd_wr + 32u) % (ITS_CMDQ_PAGES * A64_PAGE);
	a64_dsb_sy(); /* the command is in memory before the ITS is told (invariant 4) */
	a64_mmio_w64(msi.frame + GITS_CWRITER, msi.cmd_wr);
	for (uint32_t i = 0; i < ITS_SPINS; i++)
		if ((a64_mmio_r64(msi.frame + GITS_CREADR) & 0xfffe0u) == msi.cmd_wr)
			return 0;
	return -E_TIMEOUT;
}

static uint64_t its_rdbase(uint32_t core)
{
	return msi.pta ? (msi.rd[core] >> 16) << 16 : (uint64_t)msi.rd_procnum[core] << 16;
}

static int msi_its_init(uint64_t its, uint32_t n_cores)
{
	uint64_t typer = a64_mmio_r64(its + GITS_TYPER);
	uint32_t dev_bits = (uint32_t)((typer >> 13) & 0x1fu) + 1u;
	uint32_t event_bits = (uint32_t)((typer >> 8) & 0x1fu) + 1u;
	if (!(typer & 1u) || event_bits < ITS_EVENT_BITS || dev_bits < 16u)
		return -E_NOSYS; /* physical LPIs, 32 events, 16-bit requester IDs */
	msi.frame = its;
	msi.pta = (typer >> 19) & 1u;
	/* A device's translation table is one page: entries of at most 16 bytes (GITS_TYPER's
	 * ITT_entry_size field is 4 bits) for 2^ITS_EVENT_BITS events fit in 512. */
	uint64_t pa = 0;
	/* The tables the ITS asks for: a flat device table and a collection table. */
	for (uint32_t n = 0; n < 8; n++) {
		uint64_t baser = a64_mmio_r64(its + GITS_BASER(n));
		uint32_t type = (uint32_t)((baser >> 56) & 7u);
		if (type != 1u && type != 4u)
			continue;
		uint32_t pages = type == 1u ? ITS_DEV_TABLE_PAGES : 1u;
		if (!msi_pages(pages, 1, &pa))
			return -E_NOMEM;
		a64_dsb_sy();
		a64_mmio_w64(its + GITS_BASER(n), (1ull << 63) | TBL_ATTR | (baser & (0x1full << 48)) |
							  (pa & 0x0000fffffffff000ull) | (pages - 1u));
	}
	msi.cmdq = msi_pages(ITS_CMDQ_PAGES, 1, &pa);
	msi.prop = msi_pages(LPI_COUNT / A64_PAGE, 1, NULL);
	if (!msi.cmdq || !msi.prop)
		return -E_NOMEM;
	a64_dsb_sy();
	a64_mmio_w64(its + GITS_CBASER,
		     (1ull << 63) | TBL_ATTR | (pa & 0x000ffffffffff000ull) | (ITS_CMDQ_PAGES - 1u));
	a64_mmio_w64(its + GITS_CWRITER, 0);
	a64_mmio_w32(its + GITS_CTLR, 1u);
	for (uint32_t c = 0; c < n_cores; c++) {
		/* 2^14 pending bits, 64 KiB aligned, zeroed (PENDBASER.PTZ says so). */
		msi.pend[c] = msi_pages(16, 16, NULL);
		if (!msi.pend[c])
			return -E_NOMEM;
		msi.rd[c] = a64_gic_redist(a64_cores[c].aff);
		if (!msi.rd[c])
			return -E_NOENT;
		msi.rd_procnum[c] = (uint32_t)((a64_mmio_r64(msi.rd[c] + 0x8u) >> 8) & 0xffffu);
	}
	msi.lpi_next = LPI_FIRST;
	msi.kind = MSI_ITS;
	for (uint32_t c = 0; c < n_cores; c++) /* collection c: core c's redistributor */
		if (its_cmd(0x09u, 0, (1ull << 63) | its_rdbase(c) | c, 0) != 0)
			return -E_TIMEOUT;
	return 0;
}

void a64_msi_core_init(uint32_t core)
{
	if (msi.kind != MSI_ITS || core >= msi.n_cores)
		return;
	uint64_t rd = msi.rd[core];
	uint64_t prop = (uint64_t)(uintptr_t)msi.prop, pend = (uint64_t)(uintptr_t)msi.pend[core];
	a64_mmio_w64(rd + GICR_PROPBASER, RD_ATTR | (prop & 0x000ffffffffff000ull) | (LPI_ID_BITS - 1u));
	a64_mmio_w64(rd + GICR_PENDBASER, (1ull << 62) | RD_ATTR | (pend & 0x000fffffffff0000ull));
	a64_mmio_w32(rd + GICR_CTLR, a64_mmio_r32(rd + GICR_CTLR) | 1u); /* EnableLPIs */
	a64_isb();
}

static int msi_its_message(uint32_t core, uint16_t rid, uint64_t *addr, uint32_t *data)
{
	uint32_t i = 0;
	while (i < msi.n_devs && msi.devs[i].rid != rid)
		i++;
	if (i == msi.n_devs) { /* first vector of this device: its translation table */
		uint64_t itt;
		if (msi.n_devs == ITS_MAX_DEVICES || !msi_pages(1, 1, &itt))
			return -E_NOMEM;
		/* MAPD: the device, its event bits, its table */
		int err = its_cmd((uint64_t)rid << 32 | 0x08u, ITS_EVENT_BITS - 1u,
				  (1ull << 63) | (itt & 0x000fffffffffff00ull), 0);
		if (err)
			return err;
		msi.devs[msi.n_devs++] = (struct msi_dev){ rid, 0 };
	}
	if (msi.devs[i].next_event >= (1u << ITS_EVENT_BITS) || msi.lpi_next == LPI_FIRST + LPI_COUNT)
		return -E_NOMEM;
	uint32_t event = msi.devs[i].next_event++, lpi = msi.lpi_next++;
	msi.prop[lpi - LPI_FIRST] = MSI_PRIORITY | 1u; /* enabled */
	a64_dsb_sy();
	int err = its_cmd((uint64_t)rid << 32 | 0x0au, (uint64_t)lpi << 32 | event, core, 0); /* MAPTI */
	if (!err)
		err = its_cmd((uint64_t)rid << 32 | 0x0cu, event, 0, 0); /* INV: read the configuration */
	if (!err)
		err = its_cmd(0x05u, 0, its_rdbase(core), 0); /* SYNC */
	*addr = msi.frame + GITS_TRANSLATER;
	*data = event;
	return err;
}

/* ---- the kernel's side -------------------------------------------------------------- */

int a64_msi_init(const struct platform *p, uint64_t v2m, uint64_t its, uint32_t n_cores)
{
	uint32_t aff[PLAT_MAX_CPUS];
	msi.n_cores = n_cores;
	for (uint32_t c = 0; c < n_cores; c++)
		aff[c] = a64_cores[c].aff;
	int err = -E_NOSYS;
	if (p->gic_version == 2 && v2m)
		err = msi_v2m_init(p->gicd_addr, v2m, n_cores, aff);
	else if (p->gic_version == 3 && its)
		err = msi_its_init(its, n_cores);
	if (err) {
		msi.kind = MSI_NONE;
		return err;
	}
	uint32_t total = msi.kind == MSI_V2M ? msi.n_spis : LPI_COUNT;
	msi.per_core = total / n_cores < MSI_MAX_VECTORS ? total / n_cores : MSI_MAX_VECTORS;
	return 0;
}

uint32_t a64_msi_vectors(void)
{
	return msi.kind == MSI_NONE ? 0 : msi.per_core;
}

int a64_msi_message(uint32_t core, uint32_t vec, uint16_t rid, uint64_t *addr, uint32_t *data)
{
	if (msi.kind == MSI_NONE)
		return -E_NOSYS;
	if (core >= msi.n_cores || vec >= msi.per_core)
		return -E_RANGE;
	return msi.kind == MSI_V2M ? msi_v2m_message(core, addr, data) : msi_its_message(core, rid, addr, data);
}

const char *a64_msi_name(void)
{
	return msi.kind == MSI_V2M ? "GICv2m" : msi.kind == MSI_ITS ? "GICv3 ITS" : "none (devices polled)";
}
