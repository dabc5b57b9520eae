/* SPDX-License-Identifier: MIT
 * Fuzz target for tools/reloc/elfrel (ELF64 relocation sites of the kernel image): the
 * input is an ELF file. When its extent parses (and is small), it is flattened, its sites
 * collected and applied with a 2 MiB move. After every step: a failure is a documented
 * error code; collected sites are sorted, distinct and inside the image. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "tools/reloc/elfrel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_IMAGE (1u << 20)
#define MAX_SITES 256u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfrel_image img;
	int rc = elfrel_image_extent(data, size, &img);
	if (rc) {
		if (rc != -E_INVAL)
			abort();
		return 0;
	}
	if (img.len == 0 || img.len > MAX_IMAGE)
		return 0;
	uint8_t *flat = malloc(img.len);
	if (!flat)
		return 0;
	if (elfrel_image_flatten(data, size, &img, flat) != 0)
		abort(); /* the extent came from the same file */
	static struct elfrel_site sites[MAX_SITES];
	size_t n = 0;
	rc = elfrel_sites_collect(data, size, &img, sites, MAX_SITES, &n);
	if (rc == 0) {
		for (size_t i = 0; i < n; i++) {
			size_t w = sites[i].width == ELFREL_ABS64 ? 8 : 4;
			if (sites[i].width < ELFREL_ABS64 || sites[i].width > ELFREL_ABS32S ||
			    sites[i].offset + w > img.len || (i && sites[i].offset <= sites[i - 1].offset))
				abort();
		}
		rc = elfrel_sites_apply(flat, img.len, sites, n, 0x200000);
		if (rc != 0 && rc != -E_RANGE)
			abort();
	} else if (rc != -E_INVAL && rc != -E_NOSYS && rc != -E_OVERFLOW) {
		abort();
	}
	free(flat);
	return 0;
}
