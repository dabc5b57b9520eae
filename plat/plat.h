/* SPDX-License-Identifier: MIT
 *
 * The platform description: what the machine has, filled once at boot from ACPI
 * (x86_64; aarch64 under UEFI) or a device tree (aarch64) and read-only afterwards. Both sources must give
 * the same result for the same machine. Parsers live in plat/acpi.c and plat/dtb.c, read
 * the firmware tables only through lib/cursor, and never trust a length or offset.
 */
#ifndef PLAT_PLAT_H
#define PLAT_PLAT_H

#include "lib/compiler.h"

#define PLAT_MAX_CPUS 64
#define PLAT_MAX_IOAPICS 8
#define PLAT_MAX_ECAM 4
#define PLAT_MAX_MEM_RANGES 32
#define PLAT_MAX_ISO 16

struct plat_cpu {
	uint32_t apic_id;  /* x86: local APIC / x2APIC id; aarch64: MPIDR affinity */
	uint32_t acpi_uid; /* processor UID, or DT cpu node index */
	bool enabled;
	bool boot_cpu;
};

struct plat_ioapic {
	uint8_t id;
	uint32_t addr;
	uint32_t gsi_base;
};

/* Interrupt source override (ISA IRQ -> GSI), from the MADT. */
struct plat_iso {
	uint8_t bus_irq;
	uint32_t gsi;
	uint16_t flags;
};

struct plat_ecam {
	uint64_t base;
	uint16_t segment;
	uint8_t bus_start, bus_end;
};

struct plat_mem_range {
	uint64_t base, len;
};

struct platform {
	uint32_t n_cpus;
	struct plat_cpu cpus[PLAT_MAX_CPUS];
	uint32_t n_ioapics;
	struct plat_ioapic ioapics[PLAT_MAX_IOAPICS];
	uint32_t n_isos;
	struct plat_iso isos[PLAT_MAX_ISO];
	uint64_t lapic_addr;  /* x86 local APIC MMIO (0 if x2APIC only) */
	uint64_t gicd_addr, gicr_addr, gicc_addr; /* aarch64 GIC (0 when absent) */
	uint32_t gic_version;
	uint32_t n_ecam;
	struct plat_ecam ecam[PLAT_MAX_ECAM];
	/* ACPI power-off: PM1a/PM1b control ports and SLP_TYPa/b for S5 (0 when unknown). */
	uint32_t pm1a_cnt, pm1b_cnt;
	uint16_t slp_typa, slp_typb;
	bool has_s5;
	/* ACPI PM timer (3,579,545 Hz): its I/O port (0 when absent, in an MMIO space, or the
	 * machine is hardware-reduced) and whether it counts 32 bits (else 24). */
	uint32_t pm_tmr_port;
	bool pm_tmr_32;
	uint32_t n_mem;
	struct plat_mem_range mem[PLAT_MAX_MEM_RANGES]; /* usable RAM from the boot map */
	uint64_t uart_base;   /* MMIO UART (aarch64 PL011) or 0x3f8 I/O port on x86 */
};

#endif
