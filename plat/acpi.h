/* SPDX-License-Identifier: MIT
 *
 * ACPI discovery: finds the RSDP and fills the ACPI part of `struct platform` (plat/plat.h)
 * from the XSDT/RSDT, MADT, MCFG, FADT and the DSDT's \_S5 package. Portable C, run once
 * on the boot core before anything else is shared; the same file is compiled into host
 * tests and fuzzers. It reads firmware memory only through the caller's phys reader and a
 * bounds-checked cursor, verifies every checksum it relies on, never trusts a length or
 * an offset, follows pointers a fixed number of hops (no loops possible), and never
 * asserts or writes outside `*out` on hostile tables.
 */
#ifndef PLAT_ACPI_H
#define PLAT_ACPI_H

#include "lib/compiler.h"
#include "plat/plat.h"

/* Access to physical memory for the parser. `map` returns a pointer to `len` readable
 * bytes at physical address `phys`, or NULL if that range is not readable (outside RAM or
 * the firmware area, too long, wraps). Pointers returned must stay valid until the call
 * into this module that asked for them returns (the kernel uses its direct map; tests
 * use a byte array). The reader is borrowed for the call. */
struct plat_phys_reader {
	void *ctx;
	const void *(*map)(void *ctx, uint64_t phys, size_t len);
};

/* Limits on what the parser will map (bytes). Larger tables are rejected. */
#define PLAT_ACPI_MAX_TABLE_LEN (4u << 20)   /* any SDT, including the DSDT */
#define PLAT_ACPI_MAX_RSDP_LEN 4096u         /* RSDP v2 `length` field */
#define PLAT_ACPI_MAX_SDT_ENTRIES 256u       /* XSDT/RSDT entries looked at; more are ignored */

/* Where a table was rejected or a value ignored: one counter per site. */
enum plat_acpi_site {
	PLAT_ACPI_RSDP_MAP,
	PLAT_ACPI_RSDP_SIG,
	PLAT_ACPI_RSDP_CSUM,
	PLAT_ACPI_RSDP_LEN,
	PLAT_ACPI_RSDP_XCSUM,
	PLAT_ACPI_RSDP_NO_ROOT,
	PLAT_ACPI_SDT_MAP,
	PLAT_ACPI_SDT_LEN,
	PLAT_ACPI_SDT_SIG,
	PLAT_ACPI_SDT_CSUM,
	PLAT_ACPI_SDT_CHANGED,
	PLAT_ACPI_ROOT_ENTRIES,     /* XSDT/RSDT body not a whole number of entries */
	PLAT_ACPI_ROOT_TOO_MANY,    /* entries beyond PLAT_ACPI_MAX_SDT_ENTRIES ignored */
	PLAT_ACPI_ROOT_BAD_ENTRY,   /* an entry pointing at unreadable memory (skipped) */
	PLAT_ACPI_DUP_TABLE,        /* second MADT/MCFG/FADT (ignored) */
	PLAT_ACPI_NO_MADT,
	PLAT_ACPI_MADT_SHORT,
	PLAT_ACPI_MADT_ENTRY_LEN,   /* entry length < 2, past the table, or < its type's minimum */
	PLAT_ACPI_MADT_BAD_ID,      /* APIC id 0xff / 0xffffffff, duplicate id (ignored) */
	PLAT_ACPI_MADT_TOO_MANY,    /* CPUs/IOAPICs/ISOs beyond PLAT_MAX_* (ignored) */
	PLAT_ACPI_MADT_NO_CPU,
	PLAT_ACPI_MCFG_SHORT,
	PLAT_ACPI_MCFG_ENTRIES,
	PLAT_ACPI_MCFG_BAD_ENTRY,   /* end bus < start bus or address overflow (ignored) */
	PLAT_ACPI_MCFG_TOO_MANY,
	PLAT_ACPI_FADT_SHORT,
	PLAT_ACPI_FADT_BAD_PORT,    /* PM1 control block not an I/O port (ignored) */
	PLAT_ACPI_FADT_BAD_PMTMR,   /* PM timer block not an I/O port or not 4 bytes (ignored) */
	PLAT_ACPI_DSDT_BAD,         /* DSDT unreadable or bad checksum: no S5 (warning) */
	PLAT_ACPI_S5_MISSING,       /* no well-formed \_S5 package: no S5 (warning) */
	PLAT_ACPI_S5_BAD,           /* an _S5_ candidate that was not well formed (skipped) */
	/* Arm (plat/acpi_arm.c) */
	PLAT_ACPI_GICC_BAD,         /* GICC entry with a duplicate or unusable MPIDR (ignored) */
	PLAT_ACPI_GIC_DUP,          /* a second GICD, GICR range, ITS or MSI frame (ignored) */
	PLAT_ACPI_GIC_NONE,         /* no GICD entry, or a GIC version this kernel lacks */
	PLAT_ACPI_GTDT_BAD,         /* GTDT missing or short: no timer interrupts (warning) */
	PLAT_ACPI_SPCR_BAD,         /* SPCR missing or not a PL011/SBSA UART in memory (warning) */
	PLAT_ACPI_PSCI_NONE,        /* FADT missing, short or not PSCI-compliant (warning) */
	PLAT_ACPI_CRS_BAD,          /* no usable PCI host bridge _CRS in the DSDT (warning) */
	PLAT_ACPI__SITES
};

/* Rejection counters and the last warning of the most recent calls. Written only by this
 * module on the boot core; read afterwards by the boot log and telemetry. */
struct plat_acpi_stats {
	uint32_t rejects[PLAT_ACPI__SITES];
	const char *warning; /* last non-fatal problem (static string) or NULL */
};

/* Scan the EBDA's first KiB (segment at phys 0x40e, trusted only if it lies in
 * 0x80000..0x9ffff) and then 0xe0000..0xfffff on 16-byte boundaries for an RSDP with a
 * valid checksum (and valid extended checksum if revision >= 2). Returns 0 and sets
 * *rsdp_phys, or -E_NOENT. `rd` borrowed. */
int plat_acpi_find_rsdp(const struct plat_phys_reader *rd, uint64_t *rsdp_phys /* out */) MUST_CHECK;

/* Parse the ACPI tables reachable from the RSDP at `rsdp_phys` and fill the ACPI fields
 * of *out: cpus, ioapics, isos, lapic_addr, ecam, pm1a/pm1b_cnt, slp_typa/b, has_s5,
 * pm_tmr_port, pm_tmr_32.
 * The other fields (mem, uart_base, GIC) are left as the caller set them.
 * The first enabled CPU of the MADT is marked boot_cpu (ACPI lists the boot processor
 * first; the arch code may correct it from its own APIC id).
 * Returns 0, or a negative -E_* with *why set to a one-line static reason; on failure the
 * ACPI fields of *out are zero. A missing MCFG, FADT or \_S5 is not a failure (the
 * fields stay zero, has_s5 false; see plat_acpi_stats()->warning). Boot core only. */
int plat_acpi_parse(struct platform *out, const struct plat_phys_reader *rd, uint64_t rsdp_phys,
		    const char **why /* out */) MUST_CHECK;

/* Counters since boot (never NULL). */
const struct plat_acpi_stats *plat_acpi_stats(void);
/* Short name of a site for logs; never NULL. */
const char *plat_acpi_site_name(enum plat_acpi_site site);

#endif
