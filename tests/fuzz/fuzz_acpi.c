/* SPDX-License-Identifier: MIT
 * Fuzz target for plat/acpi: the input is a fake physical memory image. It is visible at
 * physical address 0 and again at 0xe0000 (the BIOS area), so both the RSDP scan and
 * tables that point at each other can be reached. Pass 1 parses from the RSDP whose
 * address is the image's first two bytes (little-endian); pass 2 scans for an RSDP and
 * parses from it. After every parse: counts within PLAT_MAX_*, and on failure a reason
 * and cleared fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plat/acpi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct image {
	const uint8_t *data;
	size_t size;
};

static const void *image_map(void *ctx, uint64_t phys, size_t len)
{
	const struct image *im = ctx;
	if (phys < im->size && len <= im->size - phys)
		return im->data + phys;
	if (phys >= 0xe0000 && phys - 0xe0000 < im->size && len <= im->size - (phys - 0xe0000))
		return im->data + (phys - 0xe0000);
	return NULL;
}

static void check(const struct platform *p, int err, const char *why)
{
	if (p->n_cpus > PLAT_MAX_CPUS || p->n_ioapics > PLAT_MAX_IOAPICS || p->n_isos > PLAT_MAX_ISO ||
	    p->n_ecam > PLAT_MAX_ECAM)
		abort();
	if (err && (!why || p->n_cpus || p->n_ioapics || p->n_isos || p->n_ecam || p->has_s5))
		abort();
	if (!err && (why || p->n_cpus == 0))
		abort();
	if (p->has_s5 && (p->slp_typa > 7 || p->slp_typb > 7 || p->pm1a_cnt == 0))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct platform plat;
	struct image im = { data, size };
	struct plat_phys_reader rd = { &im, image_map };
	const char *why = NULL;
	uint64_t rsdp;
	int err;

	if (size < 2)
		return 0;
	rsdp = (uint64_t)data[0] | (uint64_t)data[1] << 8;
	memset(&plat, 0, sizeof plat);
	err = plat_acpi_parse(&plat, &rd, rsdp, &why);
	check(&plat, err, why);

	if (plat_acpi_find_rsdp(&rd, &rsdp) == 0) {
		why = NULL;
		err = plat_acpi_parse(&plat, &rd, rsdp, &why);
		check(&plat, err, why);
	}
	return 0;
}
