/* SPDX-License-Identifier: MIT
 * Fuzz target for arch/x86_64/kreloc (the KASLR relocation applier): the first 8 bytes
 * pick the slide (masked to the window, so both aligned and unaligned values come), the
 * next 2 the image length (at most 512 bytes of the input after the table); the rest is
 * split into the table and the image. After every call: the result is 0 or -E_INVAL with
 * a named reason; a refusal leaves the image unchanged; an accepted table changed only
 * bytes inside the image, and check and apply agree. ASan sees every access: the image
 * is a heap copy of exactly its length. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86_64/kreloc.h"
#include "lib/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 10)
		return 0;
	uint64_t slide = 0;
	for (int i = 7; i >= 0; i--)
		slide = slide << 8 | data[i];
	slide &= (KRELOC_WINDOW_LEN - 1) | ((data[0] & 1) ? 0 : 0xfff00000ull);
	size_t img_len = (size_t)(data[8] | (data[9] & 1) << 8);
	data += 10;
	size -= 10;
	if (img_len > size)
		img_len = size;
	size_t table_len = size - img_len;
	uint8_t *img = malloc(img_len ? img_len : 1), *copy = malloc(img_len ? img_len : 1);
	if (!img || !copy)
		abort();
	memcpy(img, data + table_len, img_len);
	memcpy(copy, img, img_len);
	struct kreloc_report rc_check, rc_apply;
	int a = kreloc_check(data, table_len, img, img_len, slide, &rc_check);
	int b = kreloc_apply(data, table_len, img, img_len, slide, &rc_apply);
	if (a != b || (a != 0 && a != -E_INVAL) || rc_check.why != rc_apply.why)
		abort();
	if (a != 0 && (rc_apply.why == KRELOC_OK || memcmp(img, copy, img_len) != 0))
		abort();
	if (a == 0 && rc_apply.n_moved + rc_apply.n_phys != rc_apply.n_sites && slide != 0)
		abort();
	free(img);
	free(copy);
	return 0;
}
