/* SPDX-License-Identifier: MIT
 *
 * What the UEFI entry (arch/aarch64/efi.c) hands to a64_main (arch/aarch64/main.c): set
 * while boot services last, read once on the boot core afterwards, in .data (the boot path
 * clears .bss). magic is A64_EFI_MAGIC only when the image was started by UEFI firmware.
 */
#ifndef ARCH_AARCH64_EFI_H
#define ARCH_AARCH64_EFI_H

#include "lib/compiler.h"
#include "plat/plat.h"

#define A64_EFI_MAGIC 0x75524d5145464921ull /* "urMQEFI!" */
#define A64_EFI_MAX_ACPI 8u

struct a64_efi_boot {
	uint64_t magic;
	uint64_t rsdp;        /* ACPI 2.0 RSDP (0: none) */
	uint64_t dtb;         /* the device tree the firmware installed (0: none) */
	uint32_t n_mem;       /* usable RAM after ExitBootServices, adjacent ranges merged */
	uint32_t mem_dropped; /* ranges beyond PLAT_MAX_MEM_RANGES (not used) */
	struct plat_mem_range mem[PLAT_MAX_MEM_RANGES];
	uint32_t n_acpi;      /* ACPI reclaim/NVS areas: cleaned to memory before the MMU goes off */
	struct plat_mem_range acpi[A64_EFI_MAX_ACPI];
	char cmdline[256];    /* the load options (or the menu's choice), as ASCII */
	uint64_t esp_base;    /* the install entries: the ESP image read by efi_menu.c (LoaderData */
	uint64_t esp_len;     /* pages the kernel keeps out of its allocator); 0: none */
};

extern struct a64_efi_boot a64_efi_boot;

#endif
