/* SPDX-License-Identifier: MIT
 * Fuzz target for store/biosimg (the installer's BIOS boot image, the ISO's "bios" module).
 * Input: byte 0 says which header fields are made valid before the parse, so the deeper
 * checks are reached past the magic and the length: bit 0 the magic, version and boot code
 * length, bit 1 the reserved tail zeroed and core_sectors set from the length when it is
 * whole sectors, bit 2 the boot code's LBA and the core's block list made to follow
 * core_lba; the rest is the image, copied into a heap block of exactly its length (ASan
 * sees any read past it). After every parse: 0 or -E_CORRUPT with a named rejection; on 0
 * the fields obey the format (pointers inside the image, length 952 + sectors * 512, LBA
 * 1..2^32-1, sectors 2..4096) and store_biosimg_plan on a 256 MiB disk of 512-byte blocks
 * either refuses with a reason and leaves the plan alone, or puts the partition from the
 * core's LBA to the ESP, after the GPT's entry array and holding the whole core. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "store/biosimg.h"
#include "store/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t how = data[0];
	size_t len = size - 1;
	uint8_t *img = malloc(len ? len : 1);
	if (!img)
		abort();
	memcpy(img, data + 1, len);
	if (len >= 952) {
		if (how & 1u) {
			memcpy(img, STORE_BIOSIMG_MAGIC, 8);
			le(img + STORE_BIOSIMG_OFF_VERSION, STORE_BIOSIMG_VERSION, 4);
			le(img + STORE_BIOSIMG_OFF_CODE_BYTES, STORE_BIOSIMG_CODE_BYTES, 4);
		}
		if ((how & 2u) && (len - 952) % 512 == 0) {
			memset(img + STORE_BIOSIMG_OFF_RESERVED, 0, 512 - STORE_BIOSIMG_OFF_RESERVED);
			le(img + STORE_BIOSIMG_OFF_CORE_SECTORS, (len - 952) / 512, 4);
		}
		if ((how & 4u) && len >= 952 + 512) {
			uint64_t lba = rd(img + STORE_BIOSIMG_OFF_CORE_LBA, 8);
			le(img + 512 + STORE_BIOSIMG_CODE_OFF_CORE_LBA, lba, 8);
			le(img + 952 + STORE_BIOSIMG_CORE_OFF_BLOCKLIST, lba + 1u, 8);
			le(img + 952 + STORE_BIOSIMG_CORE_OFF_BLOCKLIST + 8, rd(img + STORE_BIOSIMG_OFF_CORE_SECTORS, 4) - 1u, 2);
		}
	}
	struct store_biosimg im;
	enum store_biosimg_rej rej;
	int err = store_biosimg_parse(img, len, &im, &rej);
	if (err != 0 && err != -E_CORRUPT)
		abort();
	if (err) {
		if (rej == STORE_BIOSIMG_OK || rej >= STORE_BIOSIMG_REJ__COUNT || !store_biosimg_rej_name(rej))
			abort();
		free(img);
		return 0;
	}
	if (rej != STORE_BIOSIMG_OK || im.code != img + 512 || im.core != img + 952 || im.core_lba == 0 ||
	    im.core_lba > UINT32_MAX || im.core_sectors < 2 || im.core_sectors > STORE_BIOSIMG_MAX_CORE ||
	    len != 952 + (size_t)im.core_sectors * 512)
		abort();
	static const struct store_layout_config lc = { .esp_bytes = 32u << 20, .wal_bytes = 16u << 20,
						       .telemetry_pct = 25 };
	struct store_plan p, before;
	if (store_layout_plan(&lc, (256u << 20) / 512, 512, 0, &p, NULL) != 0)
		abort();
	before = p;
	static const uint8_t guid[16] = { 1 };
	const char *why = NULL;
	if (store_biosimg_plan(&p, &im, guid, &why) != 0) {
		if (!why || memcmp(&p, &before, sizeof p) != 0)
			abort();
	} else if (why || p.bios_start != im.core_lba || p.bios_start < 34 || p.bios_start + p.bios_blocks != p.esp_start ||
		   p.bios_blocks < im.core_sectors) {
		abort();
	}
	free(img);
	return 0;
}
