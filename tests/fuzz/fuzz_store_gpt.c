/* SPDX-License-Identifier: MIT
 * Fuzz target for store/gpt (the GPT loader and the recogniser of our interrupted GPT
 * writes): the input is a whole disk image, read as 512-byte and as 4096-byte blocks (a
 * trailing partial block is not part of the disk). Pass 1 parses the bytes as they are;
 * pass 2 with the header and entry-array CRCs recomputed where a header at LBA 1 or at
 * the last LBA points, so mutations reach the range and overlap checks. The read
 * callback aborts on any request outside the disk, and copies into a buffer of exactly
 * the requested size (ASan catches a parser reading past what it asked for). On success
 * the GPT must be self-consistent: usable range inside the disk, partitions inside it
 * and disjoint. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/crc32.h"
#include "lib/err.h"
#include "store/gpt.h"
#include "store/wire_disk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct disk {
	const uint8_t *img;
	uint64_t blocks;
	uint32_t bs;
};

static int disk_read(void *ctx, uint64_t lba, uint32_t n, void *buf)
{
	const struct disk *d = ctx;
	if (n == 0 || lba >= d->blocks || n > d->blocks - lba)
		abort(); /* the loader asked for something outside the disk */
	memcpy(buf, d->img + lba * d->bs, (size_t)n * d->bs);
	return 0;
}

static uint8_t scratch[64 * 1024];

static void parse(const uint8_t *img, size_t size, uint32_t bs)
{
	struct disk d = { img, size / bs, bs };
	struct store_gpt_src src = { disk_read, &d, bs, d.blocks };
	struct store_gpt g;
	struct store_gpt_verdict v;
	int err = store_gpt_load(&src, scratch, sizeof scratch, &g, &v);
	if (err == 0) {
		if (g.first_usable > g.last_usable || g.last_usable >= d.blocks || g.n_used > g.n_entries ||
		    (v.from_backup && v.primary == STORE_GPT_OK) || (!v.from_backup && v.primary != STORE_GPT_OK))
			abort();
		if (g.has_data && (g.data.first_lba < g.first_usable || g.data.last_lba > g.last_usable ||
				   g.data.first_lba > g.data.last_lba))
			abort();
		if (g.has_esp && g.has_data && g.esp.index != g.data.index && g.esp.first_lba <= g.data.last_lba &&
		    g.data.first_lba <= g.esp.last_lba)
			abort();
	} else if (err != -E_CORRUPT || v.primary == STORE_GPT_OK || g.has_data) {
		abort();
	}
	enum store_gpt_footprint fp;
	err = store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp);
	if (err != 0 && err != -E_RANGE)
		abort();
}

/* Recompute the CRCs of the header at lba and of the array it names, when both lie in
 * the image (the harness's own bounds, not the parser's). */
static void fix_crcs(uint8_t *img, size_t size, uint32_t bs, uint64_t lba)
{
	uint64_t blocks = size / bs;
	if (lba >= blocks)
		return;
	uint8_t *h = img + lba * bs;
	uint32_t hs = ld_le32(h + STORE_GPT_OFF_HDR_SIZE);
	uint64_t ents = ld_le64(h + STORE_GPT_OFF_ENTRIES_LBA);
	uint32_t n = ld_le32(h + STORE_GPT_OFF_N_ENTRIES);
	if (ents < blocks && n > 0 && n <= STORE_GPT_N_ENTRIES &&
	    (uint64_t)n * STORE_GPT_ENTRY_BYTES <= (blocks - ents) * bs)
		st_le32(h + STORE_GPT_OFF_ENTRIES_CRC, crc32_ieee(0, img + ents * bs, (size_t)n * STORE_GPT_ENTRY_BYTES));
	if (hs >= STORE_GPT_HDR_BYTES && hs <= bs) {
		st_le32(h + STORE_GPT_OFF_HDR_CRC, 0);
		st_le32(h + STORE_GPT_OFF_HDR_CRC, crc32_ieee(0, h, hs));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t sizes[] = { 512, 4096 };
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		uint32_t bs = sizes[i];
		size_t disk = size - size % bs;
		if (disk == 0)
			continue;
		parse(data, disk, bs);
		memcpy(copy, data, disk);
		fix_crcs(copy, disk, bs, 1);
		fix_crcs(copy, disk, bs, disk / bs - 1);
		parse(copy, disk, bs);
	}
	free(copy);
	return 0;
}
