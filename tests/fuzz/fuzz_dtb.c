/* SPDX-License-Identifier: MIT
 * Fuzz target for plat/dtb: the input is a flattened device tree blob. Pass 1 parses it
 * with the first enabled cpu as boot cpu; pass 2 again with the MPIDR of the last cpu
 * found (or 0), so the boot-cpu matching and slot replacement run too; pass 3 with the
 * length cut by one byte (a blob must never be read past `len`). After every parse:
 * counts within PLAT_MAX_*, exactly one boot cpu on success, bootargs NUL-terminated
 * inside the input, and on failure a reason and cleared fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plat/dtb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size, const struct platform *p,
		  const struct plat_dtb_extra *ex, int err, const char *why)
{
	static const struct plat_dtb_extra zero;
	unsigned n_boot = 0;

	if (p->n_cpus > PLAT_MAX_CPUS || p->n_mem > PLAT_MAX_MEM_RANGES || p->n_ecam > PLAT_MAX_ECAM ||
	    ex->n_reserved > PLAT_DTB_MAX_RESERVED)
		abort();
	if (err) {
		if (err > 0 || !why || p->n_cpus || p->n_mem || p->n_ecam || p->gic_version ||
		    p->gicd_addr || p->gicr_addr || p->gicc_addr || p->uart_base ||
		    memcmp(ex, &zero, sizeof zero) != 0)
			abort();
		return;
	}
	if (why || p->n_cpus == 0 || p->n_mem == 0 || (p->gic_version != 2 && p->gic_version != 3))
		abort();
	for (uint32_t i = 0; i < p->n_cpus; i++) {
		if (p->cpus[i].boot_cpu) {
			n_boot++;
			if (!p->cpus[i].enabled)
				abort();
		}
	}
	if (n_boot != 1)
		abort();
	for (uint32_t i = 0; i < p->n_mem; i++)
		if (p->mem[i].len == 0 || p->mem[i].len - 1 > UINT64_MAX - p->mem[i].base)
			abort();
	for (uint32_t i = 0; i < p->n_ecam; i++)
		if (p->ecam[i].bus_start > p->ecam[i].bus_end || p->ecam[i].base == 0)
			abort();
	if (ex->bootargs) {
		const uint8_t *b = (const uint8_t *)ex->bootargs;
		if (b < data || b >= data + size || ex->bootargs_len >= (size_t)(data + size - b) ||
		    b[ex->bootargs_len] != 0 || memchr(b, 0, ex->bootargs_len) != NULL)
			abort();
	}
	if (ex->has_timer && (ex->timer_phys_ppi > 15 || ex->timer_virt_ppi > 15))
		abort();
	if (ex->psci != PLAT_DTB_PSCI_NONE && ex->psci != PLAT_DTB_PSCI_HVC && ex->psci != PLAT_DTB_PSCI_SMC)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct platform plat;
	static struct plat_dtb_extra extra;
	const char *why = NULL;
	uint64_t mpidr = 0;
	int err;

	memset(&plat, 0, sizeof plat);
	err = plat_dtb_parse(data, size, PLAT_DTB_BOOT_FIRST, &plat, &extra, &why);
	check(data, size, &plat, &extra, err, why);
	if (plat.n_cpus > 0) {
		uint32_t aff = plat.cpus[plat.n_cpus - 1].apic_id;
		mpidr = (uint64_t)(aff >> 24) << 32 | (aff & 0xffffffu) | 0x80000000u;
		if (plat_dtb_mpidr_aff(mpidr) != aff)
			abort();
	}

	why = NULL;
	err = plat_dtb_parse(data, size, mpidr, &plat, &extra, &why);
	check(data, size, &plat, &extra, err, why);

	if (size > 0) {
		why = NULL;
		err = plat_dtb_parse(data, size - 1, PLAT_DTB_BOOT_FIRST, &plat, &extra, &why);
		check(data, size - 1, &plat, &extra, err, why);
	}
	for (unsigned i = 0; i <= PLAT_DTB__SITES; i++)
		if (!plat_dtb_site_name((enum plat_dtb_site)i))
			abort();
	(void)plat_dtb_stats()->warning;
	return 0;
}
