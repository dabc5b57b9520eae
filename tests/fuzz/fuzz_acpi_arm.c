/* SPDX-License-Identifier: MIT
 * Fuzz target for plat/acpi_arm: the input is a fake physical memory window, readable at
 * physical address 0 and again at 0x5c430000 (where QEMU's firmware puts its ACPI tables
 * on a 512 MiB virt machine, so the corpus can be a raw dump of that area). Bytes 0-1:
 * the RSDP's offset in the window (little-endian); byte 2: the boot cpu's affinity
 * (0xff: the first enabled). After every parse: counts within PLAT_MAX_*, on failure a
 * reason and cleared fields, on success a boot cpu and a GIC; the canonical line stays
 * within its buffer and is NUL-terminated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plat/acpi_arm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define ALIAS 0x5c430000ull

struct image {
	const uint8_t *data;
	size_t size;
};

static const void *image_map(void *ctx, uint64_t phys, size_t len)
{
	const struct image *im = ctx;
	if (phys >= ALIAS)
		phys -= ALIAS;
	if (phys < im->size && len <= im->size - phys)
		return im->data + phys;
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct platform plat;
	static struct plat_dtb_extra extra;
	static char line[1024];
	struct image im = { data, size };
	struct plat_phys_reader rd = { &im, image_map };
	const char *why = NULL;

	if (size < 3)
		return 0;
	uint64_t rsdp = (uint64_t)data[0] | (uint64_t)data[1] << 8;
	uint64_t mpidr = data[2] == 0xff ? PLAT_DTB_BOOT_FIRST : data[2];
	memset(&plat, 0x5a, sizeof plat);
	memset(&extra, 0x5a, sizeof extra);
	int err = plat_acpi_parse_arm(&rd, rsdp, mpidr, &plat, &extra, &why);
	if (plat.n_cpus > PLAT_MAX_CPUS || plat.n_ecam > PLAT_MAX_ECAM)
		abort();
	if (err && (!why || plat.n_cpus || plat.n_ecam || plat.gic_version || plat.gicd_addr || extra.gits_base ||
		    extra.has_timer || extra.pci_mem32.len))
		abort();
	if (!err) {
		bool boot = false;
		for (uint32_t i = 0; i < plat.n_cpus; i++)
			boot |= plat.cpus[i].boot_cpu && plat.cpus[i].enabled;
		if (why || !boot || (plat.gic_version != 2 && plat.gic_version != 3) || plat.gicd_addr == 0)
			abort();
		if (extra.has_timer && (extra.timer_virt_ppi > 15 || extra.timer_phys_ppi > 15))
			abort();
	}
	size_t n = plat_arm_describe(&plat, &extra, line, sizeof line);
	if (n >= sizeof line || line[n] != '\0' || strlen(line) != n)
		abort();
	return 0;
}
