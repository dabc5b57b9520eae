/* SPDX-License-Identifier: MIT
 *
 * Boot-information abstraction for x86_64: whatever loader started us (PVH start_info or
 * a Multiboot2 information structure), the kernel sees one struct boot_info: usable RAM,
 * where the ACPI RSDP is, and the command line. The loader's structures are external
 * input: they are read through a physical-memory reader and lib/cursor, never trusted
 * for lengths, and a malformed one is an error, not a crash. Portable (host-tested).
 */
#ifndef ARCH_X86_64_BOOTINFO_H
#define ARCH_X86_64_BOOTINFO_H

#include "lib/compiler.h"
#include "plat/acpi.h" /* struct plat_phys_reader */

#define BOOTINFO_MAX_MEM 32
#define BOOTINFO_CMDLINE_MAX 256
#define BOOTINFO_PVH_MAGIC 0x336ec578u
#define BOOTINFO_MB2_MAGIC 0x36d76289u

enum bootinfo_kind { BOOTINFO_PVH = 1, BOOTINFO_MB2 = 2 };
/* The Multiboot2 modules the kernel uses, by their string (exactly, NUL-terminated). */
enum bootinfo_mod { BOOTINFO_MOD_ESP, BOOTINFO_MOD_BIOS, BOOTINFO_MOD__COUNT };

struct bootinfo_range {
	uint64_t base, len;
};

struct boot_info {
	enum bootinfo_kind kind;
	uint32_t n_mem;                         /* usable RAM ranges (E820 type 1) */
	struct bootinfo_range mem[BOOTINFO_MAX_MEM];
	uint32_t n_mem_dropped;                 /* usable ranges beyond BOOTINFO_MAX_MEM */
	uint64_t rsdp_phys;                     /* 0 when the loader did not say */
	char cmdline[BOOTINFO_CMDLINE_MAX];     /* NUL-terminated, truncated if longer */
	bool cmdline_truncated;
	/* Multiboot2 module tags (GRUB's module2 lines), recognised by their string: "esp" (the
	 * installer's ESP image), "bios" (its BIOS boot image, store/biosimg.h). mods[k]: where
	 * the loader put the first module of kind k ([base, base + len), len may be 0; not
	 * checked against the memory map: the caller does), has_mod[k] whether there was one.
	 * n_mods counts every module tag, n_mods_ignored those of another string or a second
	 * of a kind. PVH: none. */
	uint32_t n_mods, n_mods_ignored;
	bool has_mod[BOOTINFO_MOD__COUNT];
	struct bootinfo_range mods[BOOTINFO_MOD__COUNT];
};

/* Parse a PVH hvm_start_info at start_info_phys. 0, or -E_INVAL (bad magic/layout),
 * -E_NOENT (no memory map). rd is borrowed. */
MUST_CHECK int bootinfo_parse_pvh(struct boot_info *out, const struct plat_phys_reader *rd,
				  uint64_t start_info_phys);
/* Parse a Multiboot2 information structure at mbi_phys (same results; a module tag whose
 * end is below its start, or that is too short, is -E_INVAL; one of an unknown string is
 * counted and ignored). */
MUST_CHECK int bootinfo_parse_mb2(struct boot_info *out, const struct plat_phys_reader *rd,
				  uint64_t mbi_phys);
/* Total bytes of usable RAM. */
uint64_t bootinfo_mem_total(const struct boot_info *bi);

#endif
