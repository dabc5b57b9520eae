/* SPDX-License-Identifier: MIT
 * Fuzz target for arch/x86_64/bootinfo (PVH start_info and Multiboot2 information): the
 * input is a fake physical memory image visible at physical address 0 through a
 * plat_phys_reader. The first two bytes (little-endian) give the address of the PVH
 * start_info, the next two the address of the Multiboot2 information; both parsers run.
 * After every parse: the command line is NUL-terminated inside its buffer, the range
 * count is within BOOTINFO_MAX_MEM, and every range is whole pages, non-empty and does
 * not wrap; a module (Multiboot2 only) lies inside 32-bit addresses, every module tag is
 * kept (one per name) or counted as ignored; a failure is one of
 * the documented error codes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86_64/bootinfo.h"
#include "lib/err.h"

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
	return NULL;
}

static void check(const struct boot_info *bi, int err)
{
	if (err != 0 && err != -E_INVAL && err != -E_NOENT)
		abort();
	if (memchr(bi->cmdline, 0, sizeof bi->cmdline) == NULL)
		abort();
	if (err != 0)
		return;
	if (bi->kind == BOOTINFO_PVH && bi->n_mods != 0)
		abort();
	if (bi->n_mods_ignored > bi->n_mods)
		abort();
	uint32_t kept = 0;
	for (uint32_t k = 0; k < BOOTINFO_MOD__COUNT; k++) {
		const struct bootinfo_range *m = &bi->mods[k];
		kept += bi->has_mod[k];
		if (!bi->has_mod[k] && (m->base || m->len))
			abort();
		if (m->base > UINT32_MAX || m->len > UINT32_MAX - m->base)
			abort();
	}
	if (kept + bi->n_mods_ignored != bi->n_mods)
		abort();
	if (bi->n_mem == 0 || bi->n_mem > BOOTINFO_MAX_MEM)
		abort();
	for (uint32_t i = 0; i < bi->n_mem; i++) {
		const struct bootinfo_range *r = &bi->mem[i];
		if (r->len == 0 || (r->base & 0xfff) || (r->len & 0xfff) || r->base + r->len < r->base)
			abort();
	}
	(void)bootinfo_mem_total(bi);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct boot_info bi;
	struct image im = { data, size };
	struct plat_phys_reader rd = { &im, image_map };
	if (size < 4)
		return 0;
	uint64_t pvh = (uint64_t)data[0] | (uint64_t)data[1] << 8;
	uint64_t mb2 = (uint64_t)data[2] | (uint64_t)data[3] << 8;
	check(&bi, bootinfo_parse_pvh(&bi, &rd, pvh));
	check(&bi, bootinfo_parse_mb2(&bi, &rd, mb2));
	return 0;
}
