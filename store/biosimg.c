/* SPDX-License-Identifier: MIT
 *
 * store/biosimg.h: the BIOS boot image the installer writes (format in the header). Owns
 * its parser, the placement of its partition in a plan and its write before the GPT.
 * Never trusts the image: every field is read through lib/cursor and checked before any
 * length or LBA derived from it is used; never writes LBA 0 beyond the boot code (the
 * protective MBR is the GPT format's, store/layout.c).
 */
#include "store/biosimg.h"

#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "store/gpt.h"

#define CORE_OFF (STORE_BIOSIMG_HDR_BYTES + STORE_BIOSIMG_CODE_BYTES)

static const char *const rej_names[STORE_BIOSIMG_REJ__COUNT] = {
	[STORE_BIOSIMG_OK] = "valid",
	[STORE_BIOSIMG_REJ_SHORT] = "shorter than its header and boot code (952 B)",
	[STORE_BIOSIMG_REJ_MAGIC] = "its magic is not URMQBIOS (not this format, or passed gzipped with --nounzip)",
	[STORE_BIOSIMG_REJ_VERSION] = "a format version this kernel does not read (it reads 1)",
	[STORE_BIOSIMG_REJ_CODE_BYTES] = "its boot code length is not 440 B",
	[STORE_BIOSIMG_REJ_RESERVED] = "a non-zero byte in its header's reserved bytes",
	[STORE_BIOSIMG_REJ_CORE_SECTORS] = "its core's sector count is outside 2..4096",
	[STORE_BIOSIMG_REJ_CORE_LBA] = "its core LBA is 0 or beyond 32 bits",
	[STORE_BIOSIMG_REJ_LENGTH] = "its length is not 952 B plus the core's sectors",
	[STORE_BIOSIMG_REJ_CODE_LBA] = "its boot code points at another sector than the core LBA",
	[STORE_BIOSIMG_REJ_BLOCKLIST] = "its core's block list does not follow the core LBA",
};

const char *store_biosimg_rej_name(enum store_biosimg_rej r)
{
	if ((unsigned)r >= STORE_BIOSIMG_REJ__COUNT)
		return "unknown";
	return rej_names[r];
}

static int reject(enum store_biosimg_rej *rej, enum store_biosimg_rej why)
{
	*rej = why;
	return -E_CORRUPT;
}

int store_biosimg_parse(const uint8_t *img, size_t len, struct store_biosimg *out, enum store_biosimg_rej *rej)
{
	memset(out, 0, sizeof *out);
	*rej = STORE_BIOSIMG_OK;
	if (!img || len < CORE_OFF)
		return reject(rej, STORE_BIOSIMG_REJ_SHORT);
	struct cur c = cur_make(img, len);
	struct cur h = cur_sub(&c, STORE_BIOSIMG_HDR_BYTES);
	const uint8_t *magic = cur_ptr(&h, 8);
	out->version = cur_le32(&h);
	uint32_t code_bytes = cur_le32(&h);
	uint64_t core_lba = cur_le64(&h);
	uint32_t core_sectors = cur_le32(&h);
	if (!cur_ok(&h) || !magic) /* not reached: len >= CORE_OFF was checked */
		return reject(rej, STORE_BIOSIMG_REJ_SHORT);
	if (memcmp(magic, STORE_BIOSIMG_MAGIC, 8) != 0)
		return reject(rej, STORE_BIOSIMG_REJ_MAGIC);
	if (out->version != STORE_BIOSIMG_VERSION)
		return reject(rej, STORE_BIOSIMG_REJ_VERSION);
	if (code_bytes != STORE_BIOSIMG_CODE_BYTES)
		return reject(rej, STORE_BIOSIMG_REJ_CODE_BYTES);
	while (cur_left(&h))
		if (cur_u8(&h) != 0)
			return reject(rej, STORE_BIOSIMG_REJ_RESERVED);
	if (core_sectors < STORE_BIOSIMG_MIN_CORE || core_sectors > STORE_BIOSIMG_MAX_CORE)
		return reject(rej, STORE_BIOSIMG_REJ_CORE_SECTORS);
	if (core_lba == 0 || core_lba > UINT32_MAX)
		return reject(rej, STORE_BIOSIMG_REJ_CORE_LBA);
	/* core_sectors <= 4096: the product cannot overflow */
	if (cur_left(&c) - STORE_BIOSIMG_CODE_BYTES != (size_t)core_sectors * STORE_BIOSIMG_SECTOR)
		return reject(rej, STORE_BIOSIMG_REJ_LENGTH);
	struct cur code = cur_sub(&c, STORE_BIOSIMG_CODE_BYTES);
	struct cur core = cur_sub(&c, (size_t)core_sectors * STORE_BIOSIMG_SECTOR);
	const uint8_t *code_p = code.buf, *core_p = core.buf;
	cur_skip(&code, STORE_BIOSIMG_CODE_OFF_CORE_LBA);
	uint64_t code_lba = cur_le64(&code);
	cur_skip(&core, STORE_BIOSIMG_CORE_OFF_BLOCKLIST);
	uint64_t bl_start = cur_le64(&core);
	uint16_t bl_sectors = cur_le16(&core);
	if (!cur_ok(&c) || !cur_done(&c) || !cur_ok(&code) || !cur_ok(&core))
		return reject(rej, STORE_BIOSIMG_REJ_LENGTH); /* not reached: the length was checked */
	if (code_lba != core_lba)
		return reject(rej, STORE_BIOSIMG_REJ_CODE_LBA);
	if (bl_start != core_lba + 1u || bl_sectors != core_sectors - 1u)
		return reject(rej, STORE_BIOSIMG_REJ_BLOCKLIST);
	out->code = code_p;
	out->core = core_p;
	out->core_lba = core_lba;
	out->core_sectors = core_sectors;
	return 0;
}

int store_biosimg_plan(struct store_plan *p, const struct store_biosimg *im, const uint8_t guid[16], const char **why)
{
	*why = NULL;
	if (!p || !im || !guid || !im->core || !im->code) {
		*why = "no BIOS boot image";
		return -E_RANGE;
	}
	if (p->block_size != STORE_BIOSIMG_SECTOR) {
		*why = "its logical blocks are not 512 B (a BIOS boots 512-byte sectors only)";
		return -E_RANGE;
	}
	uint64_t fu, lu;
	if (store_gpt_geometry(p->block_size, p->disk_blocks, &fu, &lu)) {
		*why = "it is too small for a GPT";
		return -E_RANGE;
	}
	uint64_t first = p->esp_blocks ? p->esp_start : p->part_start;
	if (im->core_lba < fu || im->core_lba >= first || im->core_sectors > first - im->core_lba) {
		*why = "the layout leaves no room for GRUB's core between the GPT's first usable block and the "
		       "first partition at the block the core was built for";
		return -E_RANGE;
	}
	p->bios_start = im->core_lba;
	p->bios_blocks = first - im->core_lba;
	memcpy(p->bios_guid, guid, 16);
	return 0;
}

int store_biosimg_write(struct store_dev *d, const struct store_plan *p, const struct store_biosimg *im,
			uint8_t *scratch, size_t scratch_len)
{
	if (!d || !p || !im || !im->code || !im->core || !scratch || scratch_len < STORE_BIOSIMG_SECTOR ||
	    store_dev_block_size(d) != STORE_BIOSIMG_SECTOR || p->block_size != STORE_BIOSIMG_SECTOR ||
	    p->disk_blocks != store_dev_blocks(d) || p->bios_start != im->core_lba || p->bios_blocks < im->core_sectors ||
	    p->bios_start > p->disk_blocks || p->bios_blocks > p->disk_blocks - p->bios_start)
		return -E_INVAL;
	int err = store_dev_write(d, im->core_lba, im->core_sectors, im->core);
	if (!err && p->bios_blocks > im->core_sectors)
		err = store_dev_zero(d, im->core_lba + im->core_sectors, p->bios_blocks - im->core_sectors);
	if (!err) {
		memset(scratch, 0, STORE_BIOSIMG_SECTOR);
		memcpy(scratch, im->code, STORE_BIOSIMG_CODE_BYTES);
		err = store_dev_write(d, 0, 1, scratch);
	}
	if (!err)
		err = store_dev_flush(d);
	return err;
}
