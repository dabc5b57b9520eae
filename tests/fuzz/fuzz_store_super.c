/* SPDX-License-Identifier: MIT
 * Fuzz target for store_super_decode (store/layout.h, layout v2): the input is one
 * superblock slot's bytes, zero-padded to 512. Pass 1 decodes them as they are; pass 2
 * with the CRC-32C recomputed, so mutations reach the field and region checks. Never
 * crashes; whenever a decode succeeds, encoding the result gives back the same 512
 * bytes, the decoded fields are in range, the database has one extent or more and the
 * WAL exactly one, the telemetry region is there at most once, every region lies inside
 * the partition and no two overlap (the extents of one file included); a VERSION verdict
 * never names version 2. Inputs longer than 512 bytes are also decoded
 * in place (ASan sees any read past the 512 bytes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/crc32c.h"
#include "store/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *buf, size_t len)
{
	struct store_super sb;
	enum store_layout_rej rej = STORE_REJ__COUNT;
	uint32_t version = 0;
	uint8_t again[STORE_SUPER_BYTES];
	int err = store_super_decode(buf, len, &sb, &rej, &version);
	if ((unsigned)rej >= STORE_REJ__COUNT)
		abort();
	if (err) {
		if (rej == STORE_REJ_NONE || (rej == STORE_REJ_VERSION && version == STORE_LAYOUT_VERSION) ||
		    (rej != STORE_REJ_VERSION && version != 0) || sb.generation != 0)
			abort();
		return;
	}
	if (rej != STORE_REJ_NONE || sb.version != STORE_LAYOUT_VERSION || sb.generation == 0 || sb.n_regions == 0 ||
	    sb.n_regions > STORE_MAX_REGIONS || sb.align_bytes % sb.block_size != 0 ||
	    !store_super_region(&sb, STORE_REGION_DB) || store_super_extents(&sb, STORE_REGION_WAL, NULL) != 1 ||
	    store_super_extents(&sb, STORE_REGION_TELEMETRY, NULL) > 1)
		abort();
	uint32_t n = 0;
	for (uint32_t k = STORE_REGION_DB; k < STORE_REGION__KINDS; k++)
		n += store_super_extents(&sb, (enum store_region_kind)k, NULL);
	if (n != sb.n_regions)
		abort();
	for (uint32_t i = 0; i < sb.n_regions; i++) {
		const struct store_region *r = &sb.regions[i];
		if (r->start < sb.align_bytes / sb.block_size || r->start > sb.part_blocks ||
		    r->blocks > sb.part_blocks - r->start)
			abort();
		for (uint32_t j = 0; j < i; j++) {
			const struct store_region *o = &sb.regions[j];
			if (r->start < o->start + o->blocks && o->start < r->start + r->blocks)
				abort();
		}
	}
	if (store_super_encode(&sb, again, sizeof again) != 0 || memcmp(again, buf, STORE_SUPER_BYTES) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[STORE_SUPER_BYTES];
	memset(buf, 0, sizeof buf);
	memcpy(buf, data, size < sizeof buf ? size : sizeof buf);
	check(buf, sizeof buf);
	st_le32(buf + 508, crc32c(0, buf, 508));
	check(buf, sizeof buf);
	if (size >= STORE_SUPER_BYTES)
		check(data, size);
	return 0;
}
