/* SPDX-License-Identifier: MIT
 *
 * Private to plat/: the ACPI table walker of plat/acpi.c shared with the Arm tables'
 * parser (plat/acpi_arm.c). Everything here counts its rejections in plat_acpi_stats().
 */
#ifndef PLAT_ACPI_INT_H
#define PLAT_ACPI_INT_H

#include "lib/cursor.h"
#include "plat/acpi.h"

#define PLAT_ACPI_SDT_HDR_LEN 36u

/* A validated system description table: `c` covers the whole table (length checked,
 * checksum verified) and is positioned just after the 36-byte header. `oem_id` and
 * `oem_table_id` are copied from the header. */
struct plat_acpi_sdt {
	struct cur c;
	uint32_t len;
	uint8_t revision;
	char oem_id[6], oem_table_id[8];
};

/* A fatal rejection at `site`: counted, *why set (when not NULL), `err` returned. */
int plat_acpi_reject(enum plat_acpi_site site, const char **why, int err);
/* A non-fatal problem: counted and remembered as the last warning. */
void plat_acpi_warn(enum plat_acpi_site site);
/* A value ignored: counted only. */
void plat_acpi_count(enum plat_acpi_site site);

/* Map and validate the table at `phys`, whose signature must be `sig` (4 bytes). */
int plat_acpi_sdt_map(const struct plat_phys_reader *rd, uint64_t phys, const char *sig,
		      struct plat_acpi_sdt *t /* out */, const char **why) MUST_CHECK;

/* From the RSDP at rsdp_phys through the XSDT (or RSDT): for each of the n signatures
 * sigs[i] (4 bytes each), the physical address of the first table with it in phys[i]
 * (0 when absent; later duplicates counted at PLAT_ACPI_DUP_TABLE). Only headers are
 * read here; the caller maps each table it uses. */
int plat_acpi_find_tables(const struct plat_phys_reader *rd, uint64_t rsdp_phys, const char *const *sigs,
			  size_t n, uint64_t *phys /* out */, const char **why) MUST_CHECK;

/* The MCFG's entries into out->ecam (plat/acpi.c). */
int plat_acpi_mcfg_parse(struct platform *out, struct plat_acpi_sdt *t, const char **why) MUST_CHECK;

#endif
