/* SPDX-License-Identifier: MIT
 *
 * The aarch64 implementation of struct drv_port (drivers/port.h): PCI configuration space
 * through the ECAM window of the device tree's host bridge (segment 0), device BARs at
 * their physical addresses (the kernel is identity-mapped), DMA memory from the page
 * allocator, and the barriers the Arm memory model needs. The bus is enumerated before
 * the MMU is on (a64_drv_port_scan_begin): map_bar then only records each BAR so the page
 * tables map exactly those ranges as Device-nGnRE (mmu.c); once the tables are live,
 * map_bar succeeds only for a range recorded then. Owns the one port every driver shares.
 *
 * Context: configuration access and DMA allocation on the boot core at boot; MMIO and
 * barriers from any core (each device queue is driven by one core).
 */
#include "arch/aarch64/a64.h"
#include "drivers/port.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "lib/err.h"
#include "lib/mem.h"

#define DP_MAX_BARS 32u

static struct {
	uint64_t ecam; /* byte 0 of bus bus_start, or 0: no configuration space */
	uint8_t bus_start, bus_end;
	bool early;    /* MMU off: record BARs, log raw */
	uint32_t n_bars;
	struct a64_mmu_region bars[DP_MAX_BARS];
} dp;

static bool dp_in_window(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
	return dp.ecam && bus >= dp.bus_start && bus <= dp.bus_end && dev < 32 && fn < 8 && off < 4096;
}

static volatile uint32_t *dp_ecam_reg(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
	uint64_t o = ((uint64_t)(bus - dp.bus_start) << 20) | ((uint64_t)(dev & 31u) << 15) |
		     ((uint64_t)(fn & 7u) << 12) | (off & 0xffcu);
	return (volatile uint32_t *)(uintptr_t)(dp.ecam + o);
}

static uint32_t dp_cfg_read32(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
	(void)ctx;
	if (!dp_in_window(bus, dev, fn, off))
		return 0xffffffffu;
	uint32_t v = *dp_ecam_reg(bus, dev, fn, off);
	__asm__ volatile("dmb oshld" : : : "memory");
	return v;
}

static void dp_cfg_write32(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off, uint32_t v)
{
	(void)ctx;
	if (!dp_in_window(bus, dev, fn, off))
		return;
	__asm__ volatile("dmb oshst" : : : "memory");
	*dp_ecam_reg(bus, dev, fn, off) = v;
}

static int dp_map_bar(void *ctx, uint64_t phys, uint64_t len, uintptr_t *va)
{
	(void)ctx;
	*va = 0;
	if (len == 0 || phys + len < phys || (phys >> 48))
		return -E_INVAL;
	if (dp.early) {
		if (dp.n_bars == DP_MAX_BARS)
			return -E_NOMEM;
		dp.bars[dp.n_bars++] = (struct a64_mmu_region){ phys, len };
		*va = (uintptr_t)phys;
		return 0;
	}
	for (uint32_t i = 0; i < dp.n_bars; i++)
		if (phys >= dp.bars[i].base && phys + len <= dp.bars[i].base + dp.bars[i].len) {
			*va = (uintptr_t)phys;
			return 0;
		}
	return -E_PERM; /* not mapped when the tables were built */
}

/* Device registers: one access of the exact width. A write first waits for every earlier
 * store to DMA memory to be observable by the device (dmb oshst), so a notification
 * never overtakes the ring update it announces; a read completes before any later access
 * (dmb oshld), so a status read is not satisfied after the data it guards is used. */
static uint8_t dp_rd8(void *ctx, uintptr_t va)
{
	(void)ctx;
	uint8_t v = *(volatile uint8_t *)va;
	__asm__ volatile("dmb oshld" : : : "memory");
	return v;
}
static uint16_t dp_rd16(void *ctx, uintptr_t va)
{
	(void)ctx;
	uint16_t v = *(volatile uint16_t *)va;
	__asm__ volatile("dmb oshld" : : : "memory");
	return v;
}
static uint32_t dp_rd32(void *ctx, uintptr_t va)
{
	(void)ctx;
	uint32_t v = *(volatile uint32_t *)va;
	__asm__ volatile("dmb oshld" : : : "memory");
	return v;
}
static uint64_t dp_rd64(void *ctx, uintptr_t va)
{
	(void)ctx;
	uint64_t v = *(volatile uint64_t *)va;
	__asm__ volatile("dmb oshld" : : : "memory");
	return v;
}
static void dp_wr8(void *ctx, uintptr_t va, uint8_t v)
{
	(void)ctx;
	__asm__ volatile("dmb oshst" : : : "memory");
	*(volatile uint8_t *)va = v;
}
static void dp_wr16(void *ctx, uintptr_t va, uint16_t v)
{
	(void)ctx;
	__asm__ volatile("dmb oshst" : : : "memory");
	*(volatile uint16_t *)va = v;
}
static void dp_wr32(void *ctx, uintptr_t va, uint32_t v)
{
	(void)ctx;
	__asm__ volatile("dmb oshst" : : : "memory");
	*(volatile uint32_t *)va = v;
}
static void dp_wr64(void *ctx, uintptr_t va, uint64_t v)
{
	(void)ctx;
	__asm__ volatile("dmb oshst" : : : "memory");
	*(volatile uint64_t *)va = v;
}

static int dp_dma_alloc(void *ctx, size_t len, void **va, uint64_t *pa)
{
	(void)ctx;
	if (len == 0 || len > (64u << 20))
		return -E_NOMEM;
	uint32_t n = (uint32_t)((len + A64_PAGE - 1) / A64_PAGE);
	/* Normal write-back memory: virtio devices of a virtual machine are cache-coherent. */
	return kheap_pages_alloc(n, 1, va, pa);
}

static uint64_t dp_dma_phys(void *ctx, const void *va)
{
	(void)ctx;
	/* Identity map; a heap buffer's pointer may carry an MTE tag in its top byte. */
	return (uint64_t)(uintptr_t)va & 0x00ffffffffffffffull;
}

/* The ring memory is shared with the device in the outer-shareable domain: full, load
 * and store barriers over it. */
static void dp_mb(void *ctx)
{
	(void)ctx;
	__asm__ volatile("dmb osh" : : : "memory");
}
static void dp_rmb(void *ctx)
{
	(void)ctx;
	__asm__ volatile("dmb oshld" : : : "memory");
}
static void dp_wmb(void *ctx)
{
	(void)ctx;
	__asm__ volatile("dmb oshst" : : : "memory");
}

static void dp_log(void *ctx, const char *line)
{
	(void)ctx;
	if (dp.early) { /* MMU off: no log (its rate limits use atomics), the console itself */
		a64_uart_write("drv: ", 5);
		a64_uart_write(line, strlen(line));
		a64_uart_write("\n", 1);
		return;
	}
	LOG_INFO("drv", "%s", line);
}

static const struct drv_port dp_port = {
	.ctx = NULL,
	.cfg_read32 = dp_cfg_read32,
	.cfg_write32 = dp_cfg_write32,
	.map_bar = dp_map_bar,
	.mmio_read8 = dp_rd8,
	.mmio_read16 = dp_rd16,
	.mmio_read32 = dp_rd32,
	.mmio_read64 = dp_rd64,
	.mmio_write8 = dp_wr8,
	.mmio_write16 = dp_wr16,
	.mmio_write32 = dp_wr32,
	.mmio_write64 = dp_wr64,
	.dma_alloc = dp_dma_alloc,
	.dma_phys = dp_dma_phys,
	.mb = dp_mb,
	.rmb = dp_rmb,
	.wmb = dp_wmb,
	.log = dp_log,
};

int a64_drv_port_scan_begin(const struct platform *p, uint64_t *ecam, uint64_t *ecam_len)
{
	*ecam = *ecam_len = 0;
	for (uint32_t i = 0; i < p->n_ecam && i < PLAT_MAX_ECAM; i++) {
		const struct plat_ecam *e = &p->ecam[i];
		if (e->segment != 0 || e->bus_end < e->bus_start)
			continue;
		/* base is the address of bus 0, as in ACPI's MCFG. */
		dp.ecam = e->base + ((uint64_t)e->bus_start << 20);
		dp.bus_start = e->bus_start;
		dp.bus_end = e->bus_end;
		dp.early = true;
		*ecam = dp.ecam;
		*ecam_len = ((uint64_t)(e->bus_end - e->bus_start) + 1u) << 20;
		return 0;
	}
	return -E_NOENT;
}

uint32_t a64_drv_port_bars(const struct a64_mmu_region **bars)
{
	*bars = dp.bars;
	return dp.n_bars;
}

void a64_drv_port_scan_end(void)
{
	dp.early = false;
}

const struct drv_port *a64_drv_port(void)
{
	return &dp_port;
}

void a64_drv_port_buses(uint8_t *start, uint8_t *end)
{
	*start = dp.bus_start;
	*end = dp.bus_end;
}
