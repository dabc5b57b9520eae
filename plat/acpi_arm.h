/* SPDX-License-Identifier: MIT
 *
 * ACPI discovery on Arm (aarch64 booted by UEFI firmware): fills the same fields of
 * `struct platform` and `struct plat_dtb_extra` that plat_dtb_parse() fills from a device
 * tree, from the MADT (GICC, GICD, GICR, ITS, GICv2m MSI frame), GTDT, SPCR, MCFG, the
 * FADT's ARM boot flags and the DSDT (the PCI host bridge's _CRS). Portable C, boot core
 * only, compiled into host tests and fuzzers; reads firmware memory only through the
 * caller's phys reader and the walker of plat/acpi.c, never asserts on table contents,
 * counts every rejection in plat_acpi_stats().
 */
#ifndef PLAT_ACPI_ARM_H
#define PLAT_ACPI_ARM_H

#include "plat/acpi.h"
#include "plat/dtb.h"

/* QEMU virt's PL031 (hw/arm/virt.c, VIRT_RTC): QEMU's ACPI tables do not describe it
 * (no DSDT device), so plat_acpi_parse_arm() reports it at this fixed address only when
 * the tables are QEMU's own (OEM ID "BOCHS ", table id "BXPC" in the FADT or MADT). */
#define PLAT_ACPI_QEMU_VIRT_RTC 0x09010000ull

/* Parse the Arm ACPI tables reachable from the RSDP at `rsdp_phys`. Fills, exactly as
 * plat_dtb_parse() documents for a device tree: out->cpus (one per GICC entry, enabled
 * or online-capable, in MADT order; apic_id the packed affinity of its MPIDR, acpi_uid
 * its processor UID, boot_cpu the one whose affinity is plat_dtb_mpidr_aff(boot_mpidr),
 * or the first enabled for PLAT_DTB_BOOT_FIRST), gic_version (GICD's version; 4 reported
 * as 3, as the device tree's "arm,gic-v3" does), gicd_addr, gicr_addr (v3: the first
 * GICR range), gicc_addr (v2: the first GICC's base), ecam (MCFG), uart_base (SPCR, PL011
 * or SBSA UART in memory space); and in *extra: gits_base (first ITS), gicv2m_base (first
 * MSI frame), psci (FADT ARM_BOOT_ARCH), the timer PPIs (GTDT GSIVs - 16), pci_mem32/64
 * (the first DWord and QWord memory ranges of the first DSDT _CRS holding a bus-number
 * range), rtc_base (PLAT_ACPI_QEMU_VIRT_RTC on QEMU's tables, else 0). mem, reserved and
 * bootargs are not in ACPI: the caller takes them from the boot loader (the UEFI memory
 * map, the load options); they are left zero.
 * Returns 0, or a negative -E_* with *why set to a one-line static reason; on failure
 * those fields and *extra are zero. No enabled boot cpu or no GIC distributor is a
 * failure; a missing GTDT, SPCR, MCFG, PSCI or _CRS is a warning. `rd` borrowed; `out`
 * and `extra` borrowed (out). Boot core only. */
int plat_acpi_parse_arm(const struct plat_phys_reader *rd, uint64_t rsdp_phys, uint64_t boot_mpidr,
			struct platform *out /* out */, struct plat_dtb_extra *extra /* out */,
			const char **why /* out */) MUST_CHECK;

/* The Arm platform description as one canonical line ("key=value" fields separated by
 * one space, NUL-terminated, cut at len - 1), the same for the same machine whichever
 * source (device tree or ACPI) filled it: cpus, GIC, ITS/v2m, ECAM, PCI windows, UART,
 * RTC, PSCI method, timer PPIs. Memory is left out (it comes from the boot loader's map,
 * not the description). Returns the length written. Pointers borrowed. */
size_t plat_arm_describe(const struct platform *p, const struct plat_dtb_extra *extra, char *buf /* out */,
			 size_t len);

#endif
