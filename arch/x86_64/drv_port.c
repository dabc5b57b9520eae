/* SPDX-License-Identifier: MIT
 *
 * The x86_64 implementation of struct drv_port (drivers/port.h): PCI configuration space
 * through the ECAM window the ACPI MCFG names (segment 0; the legacy 0xcf8/0xcfc ports,
 * first 256 bytes only, on machines without MCFG), device BARs mapped uncached and NX
 * into the physmap, DMA memory from the page allocator (kheap_pages_alloc) reached
 * through the physmap, and the CPU's barriers. Owns the one port every driver shares.
 * Never maps anything after the page tables are sealed: the ECAM window and every BAR
 * are mapped at x86_drv_port_init / before the seal (see devices.c); later map_bar calls
 * succeed only for ranges mapped then.
 *
 * Context: configuration access and DMA allocation on the boot core at boot; MMIO and
 * barriers from any core (each device queue is driven by one core).
 */
#include "arch/x86_64/x86.h"
#include "drivers/port.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "lib/err.h"

#define CF8_ADDR 0xcf8
#define CF8_DATA 0xcfc
#define CF8_ENABLE 0x80000000u

static struct {
	volatile uint8_t *ecam; /* byte 0 of bus ecam_bus0, or NULL: legacy ports */
	uint8_t bus_start, bus_end;
	uint64_t ecam_phys;
} dp;

static volatile uint32_t *dp_ecam_reg(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
	uint64_t o = ((uint64_t)(bus - dp.bus_start) << 20) | ((uint64_t)(dev & 31u) << 15) |
		     ((uint64_t)(fn & 7u) << 12) | (off & 0xffcu);
	return (volatile uint32_t *)(dp.ecam + o);
}

static bool dp_in_window(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
	return bus >= dp.bus_start && bus <= dp.bus_end && dev < 32 && fn < 8 && off < 4096;
}

static uint32_t dp_cfg_read32(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off)
{
	(void)ctx;
	if (!dp_in_window(bus, dev, fn, off))
		return 0xffffffffu;
	if (dp.ecam)
		return *dp_ecam_reg(bus, dev, fn, off);
	if (off >= 256)
		return 0xffffffffu; /* the legacy mechanism reaches only the first 256 bytes */
	x86_outl(CF8_ADDR, CF8_ENABLE | (uint32_t)bus << 16 | (uint32_t)dev << 11 | (uint32_t)fn << 8 |
				   (off & 0xfcu));
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"((uint16_t)CF8_DATA));
	return v;
}

static void dp_cfg_write32(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off, uint32_t v)
{
	(void)ctx;
	if (!dp_in_window(bus, dev, fn, off))
		return;
	if (dp.ecam) {
		*dp_ecam_reg(bus, dev, fn, off) = v;
		return;
	}
	if (off >= 256)
		return;
	x86_outl(CF8_ADDR, CF8_ENABLE | (uint32_t)bus << 16 | (uint32_t)dev << 11 | (uint32_t)fn << 8 |
				   (off & 0xfcu));
	x86_outl(CF8_DATA, v);
}

static int dp_map_bar(void *ctx, uint64_t phys, uint64_t len, uintptr_t *va)
{
	(void)ctx;
	*va = 0;
	if (len == 0 || len > SIZE_MAX)
		return -E_INVAL;
	void *p = x86_mmu_map_mmio(phys, (size_t)len);
	if (!p)
		return -E_PERM;
	*va = (uintptr_t)p;
	return 0;
}

/* Device registers: one access of the exact width through a volatile pointer, with a
 * compiler barrier ("memory") on each side. Ordering with DMA memory needs nothing more
 * on x86: the BARs are mapped UC, and UC accesses are not reordered with earlier loads
 * and stores to write-back memory (stores are ordered under TSO; a UC access waits for
 * earlier stores to be globally visible), so a notification never overtakes the ring
 * update it announces. */
static uint8_t dp_rd8(void *ctx, uintptr_t va)
{
	(void)ctx;
	uint8_t v;
	__asm__ volatile("movb %1, %0" : "=q"(v) : "m"(*(volatile uint8_t *)va) : "memory");
	return v;
}
static uint16_t dp_rd16(void *ctx, uintptr_t va)
{
	(void)ctx;
	uint16_t v;
	__asm__ volatile("movw %1, %0" : "=r"(v) : "m"(*(volatile uint16_t *)va) : "memory");
	return v;
}
static uint32_t dp_rd32(void *ctx, uintptr_t va)
{
	(void)ctx;
	uint32_t v;
	__asm__ volatile("movl %1, %0" : "=r"(v) : "m"(*(volatile uint32_t *)va) : "memory");
	return v;
}
static uint64_t dp_rd64(void *ctx, uintptr_t va)
{
	(void)ctx;
	uint64_t v;
	__asm__ volatile("movq %1, %0" : "=r"(v) : "m"(*(volatile uint64_t *)va) : "memory");
	return v;
}
static void dp_wr8(void *ctx, uintptr_t va, uint8_t v)
{
	(void)ctx;
	__asm__ volatile("movb %1, %0" : "=m"(*(volatile uint8_t *)va) : "q"(v) : "memory");
}
static void dp_wr16(void *ctx, uintptr_t va, uint16_t v)
{
	(void)ctx;
	__asm__ volatile("movw %1, %0" : "=m"(*(volatile uint16_t *)va) : "r"(v) : "memory");
}
static void dp_wr32(void *ctx, uintptr_t va, uint32_t v)
{
	(void)ctx;
	__asm__ volatile("movl %1, %0" : "=m"(*(volatile uint32_t *)va) : "r"(v) : "memory");
}
static void dp_wr64(void *ctx, uintptr_t va, uint64_t v)
{
	(void)ctx;
	__asm__ volatile("movq %1, %0" : "=m"(*(volatile uint64_t *)va) : "r"(v) : "memory");
}

static int dp_dma_alloc(void *ctx, size_t len, void **va, uint64_t *pa)
{
	(void)ctx;
	if (len == 0 || len > (64u << 20))
		return -E_NOMEM;
	uint32_t n = (uint32_t)((len + X86_PAGE_SIZE - 1) / X86_PAGE_SIZE);
	/* The physmap is write-back cached; virtio devices are cache-coherent on x86. */
	return kheap_pages_alloc(n, 1, va, pa);
}

static uint64_t dp_dma_phys(void *ctx, const void *va)
{
	(void)ctx;
	uint64_t v = (uint64_t)(uintptr_t)va;
	if (v >= X86_PHYSMAP_BASE && v < X86_STACK_AREA)
		return v - X86_PHYSMAP_BASE;
	/* Kernel image (static buffers): reached only through the image mapping. */
	if (v >= (uint64_t)(uintptr_t)x86_image_start && v < (uint64_t)(uintptr_t)x86_image_end)
		return x86_virt_to_phys_image(va);
	return 0;
}

/* mb: store->load order is the one thing x86-TSO reorders; mfence forbids it (the
 * EVENT_IDX check reads the device's event index after publishing our index).
 * rmb/wmb: TSO never reorders loads with loads or stores with stores on write-back
 * memory, so only the compiler must be stopped. */
static void dp_mb(void *ctx)
{
	(void)ctx;
	__asm__ volatile("mfence" ::: "memory");
}
static void dp_rmb(void *ctx)
{
	(void)ctx;
	__asm__ volatile("" ::: "memory");
}
static void dp_wmb(void *ctx)
{
	(void)ctx;
	__asm__ volatile("" ::: "memory");
}

static void dp_log(void *ctx, const char *line)
{
	(void)ctx;
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

int x86_drv_port_init(const struct platform *p, const char **how)
{
	dp.ecam = NULL;
	dp.bus_start = 0;
	dp.bus_end = 255;
	*how = "legacy 0xcf8 ports (no MCFG), 256-byte configuration space";
	for (uint32_t i = 0; p && i < p->n_ecam && i < PLAT_MAX_ECAM; i++) {
		const struct plat_ecam *e = &p->ecam[i];
		if (e->segment != 0 || e->bus_end < e->bus_start)
			continue;
		/* MCFG's base is the address of bus 0 even when bus_start is higher. */
		uint64_t first = e->base + ((uint64_t)e->bus_start << 20);
		uint64_t len = ((uint64_t)(e->bus_end - e->bus_start) + 1u) << 20;
		uint64_t lo = first & ~((2ull << 20) - 1), hi = (first + len + (2ull << 20) - 1) & ~((2ull << 20) - 1);
		uint8_t *va = x86_mmu_map_mmio_window(lo, hi - lo);
		if (!va) {
			LOG_WARN("pci", "ECAM window of segment 0 unusable (overlaps a mapping or not aligned)");
			return -E_INVAL;
		}
		dp.ecam = va + (first - lo);
		dp.ecam_phys = first;
		dp.bus_start = e->bus_start;
		dp.bus_end = e->bus_end;
		*how = "ECAM (ACPI MCFG), uncached NX window";
		return 0;
	}
	return 0;
}

const struct drv_port *x86_drv_port(void)
{
	return &dp_port;
}

void x86_drv_port_buses(uint8_t *start, uint8_t *end)
{
	*start = dp.bus_start;
	*end = dp.bus_end;
}
