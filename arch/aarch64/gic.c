/* SPDX-License-Identifier: MIT
 *
 * The interrupt controller, GICv2 or GICv3 as the platform says (plat/plat.h), in the
 * one security state QEMU virt and hypervisors give a guest. The kernel uses few
 * interrupts: each core's virtual-timer PPI (its tick), one SGI (the mesh wake-up) and the
 * devices' MSIs (gic_msi.c: SPIs of the GICv2m frame or LPIs of the ITS). The distributor is set
 * up once on the boot core before any other core starts; each core then sets up its own
 * CPU interface (GICv2 banked registers, GICv3 system registers) and, on GICv3, wakes its
 * redistributor, found by affinity. Registers are read and written only through the
 * MMIO helpers below; no state is shared between cores after the start except the
 * read-only addresses.
 */
#include "arch/aarch64/a64.h"
#include "lib/err.h"

/* GICv2 distributor and CPU interface (IHI 0048). */
#define GICD_CTLR 0x000u
#define GICD_ISENABLER 0x100u
#define GICD_IPRIORITYR 0x400u
#define GICD_SGIR 0xf00u
#define GICC_CTLR 0x000u
#define GICC_PMR 0x004u
#define GICC_IAR 0x00cu
#define GICC_EOIR 0x010u
/* GICv3 (IHI 0069). */
#define GICD_CTLR_ARE (1u << 4)
#define GICD_CTLR_GRP1 (1u << 1)
#define GICR_FRAME 0x20000u /* RD_base + SGI_base */
#define GICR_TYPER 0x008u
#define GICR_WAKER 0x014u
#define GICR_WAKER_SLEEP (1u << 1)
#define GICR_WAKER_ASLEEP (1u << 2)
#define GICR_SGI 0x10000u
#define GICR_IGROUPR0 0x080u
#define GICR_ISENABLER0 0x100u
#define GICR_IPRIORITYR 0x400u
#define GIC_MAX_REDIST 256u
#define GIC_WAKE_SPINS 1000000u
#define GIC_PRIORITY 0xa0u

static uint32_t gic_version;
static uint64_t gic_d, gic_c, gic_r;
static uint32_t gic_timer_intid;

int a64_gic_init(const struct platform *p, uint32_t timer_intid)
{
	gic_version = p->gic_version;
	gic_d = p->gicd_addr;
	gic_c = p->gicc_addr;
	gic_r = p->gicr_addr;
	gic_timer_intid = timer_intid;
	if (!gic_d || (gic_version == 2 && !gic_c) || (gic_version == 3 && !gic_r) ||
	    (gic_version != 2 && gic_version != 3))
		return -E_NOSYS;
	if (gic_version == 3) {
		/* The system-register interface at EL1 (boot.S enabled it at EL2 when entered
		 * there). */
		uint64_t sre = A64_SYSREG_READ(s3_0_c12_c12_5); /* ICC_SRE_EL1 */
		A64_SYSREG_WRITE(s3_0_c12_c12_5, sre | 1u);
		a64_isb();
		if (!(A64_SYSREG_READ(s3_0_c12_c12_5) & 1u))
			return -E_NOSYS;
		a64_mmio_w32(gic_d + GICD_CTLR, GICD_CTLR_ARE | GICD_CTLR_GRP1);
	} else {
		a64_mmio_w32(gic_d + GICD_CTLR, 1u);
	}
	return 0;
}

/* GICv3: a core's redistributor frame, by affinity (GICR_TYPER[63:32]); 0 if none. */
uint64_t a64_gic_redist(uint32_t aff)
{
	uint64_t f = gic_r;
	for (uint32_t i = 0; i < GIC_MAX_REDIST; i++, f += GICR_FRAME) {
		uint64_t typer = a64_mmio_r64(f + GICR_TYPER);
		if ((uint32_t)(typer >> 32) == aff)
			return f;
		if (typer & (1u << 4)) /* Last */
			break;
	}
	return 0;
}

int a64_gic_init_core(uint32_t core, uint32_t aff)
{
	uint32_t ppi_bits = (1u << A64_SGI_WAKE) | (1u << gic_timer_intid);
	if (gic_version == 3) {
		uint64_t rd = a64_gic_redist(aff);
		if (!rd)
			return -E_NOENT;
		a64_mmio_w32(rd + GICR_WAKER, a64_mmio_r32(rd + GICR_WAKER) & ~GICR_WAKER_SLEEP);
		for (uint32_t i = 0; i < GIC_WAKE_SPINS && (a64_mmio_r32(rd + GICR_WAKER) & GICR_WAKER_ASLEEP); i++)
			;
		a64_mmio_w32(rd + GICR_SGI + GICR_IGROUPR0, ~0u); /* SGIs and PPIs in group 1 */
		a64_mmio_w8(rd + GICR_SGI + GICR_IPRIORITYR + A64_SGI_WAKE, GIC_PRIORITY);
		a64_mmio_w8(rd + GICR_SGI + GICR_IPRIORITYR + gic_timer_intid, GIC_PRIORITY);
		a64_mmio_w32(rd + GICR_SGI + GICR_ISENABLER0, ppi_bits);
		A64_SYSREG_WRITE(s3_0_c4_c6_0, 0xf0u);  /* ICC_PMR_EL1: priorities above 0xf0 */
		A64_SYSREG_WRITE(s3_0_c12_c12_4, 0u);   /* ICC_CTLR_EL1: EOI also deactivates */
		A64_SYSREG_WRITE(s3_0_c12_c12_7, 1u);   /* ICC_IGRPEN1_EL1 */
		a64_isb();
		a64_msi_core_init(core); /* its LPIs, when the ITS carries the devices' MSIs */
		return 0;
	}
	/* GICv2: SGIs and PPIs are banked per core in the distributor. */
	a64_mmio_w8(gic_d + GICD_IPRIORITYR + A64_SGI_WAKE, GIC_PRIORITY);
	a64_mmio_w8(gic_d + GICD_IPRIORITYR + gic_timer_intid, GIC_PRIORITY);
	a64_mmio_w32(gic_d + GICD_ISENABLER, ppi_bits);
	a64_mmio_w32(gic_c + GICC_PMR, 0xf0u);
	a64_mmio_w32(gic_c + GICC_CTLR, 1u);
	return 0;
}

uint32_t a64_gic_ack(void)
{
	if (gic_version == 3)
		return (uint32_t)A64_SYSREG_READ(s3_0_c12_c12_0) & 0xffffffu; /* ICC_IAR1_EL1 */
	return a64_mmio_r32(gic_c + GICC_IAR) & 0x3ffu; /* the source CPU (bits 12:10) dropped */
}

void a64_gic_eoi(uint32_t intid)
{
	if (gic_version == 3) {
		A64_SYSREG_WRITE(s3_0_c12_c12_1, intid); /* ICC_EOIR1_EL1 */
		a64_isb();
	} else {
		a64_mmio_w32(gic_c + GICC_EOIR, intid);
	}
}

void a64_gic_send_wake(uint32_t aff)
{
	/* The message that asks for the wake-up is committed before the SGI is sent. */
	__asm__ volatile("dsb ishst" : : : "memory");
	if (gic_version == 3) {
		uint64_t v = (uint64_t)((aff >> 24) & 0xffu) << 48 | (uint64_t)((aff >> 16) & 0xffu) << 32 |
			     (uint64_t)A64_SGI_WAKE << 24 | (uint64_t)((aff >> 8) & 0xffu) << 16 |
			     (1ull << (aff & 0xfu));
		A64_SYSREG_WRITE(s3_0_c12_c11_5, v); /* ICC_SGI1R_EL1 */
		a64_isb();
	} else {
		/* GICv2 targets by CPU interface number; QEMU numbers them by Aff0. */
		a64_mmio_w32(gic_d + GICD_SGIR, (1u << (16u + (aff & 7u))) | A64_SGI_WAKE);
	}
}

const char *a64_gic_name(void)
{
	return gic_version == 3 ? "GICv3" : "GICv2";
}
