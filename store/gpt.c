/* SPDX-License-Identifier: MIT
 *
 * store/gpt.h: the GPT of UEFI 2.10 section 5.3 (and the protective MBR of 5.2.3), built
 * and checked for layout.c. Layer: store/, portable, freestanding.
 *
 * What we write: a protective MBR at LBA 0 (over a boot loader's code there, which is
 * kept: store_gpt_mbr_protect); the primary header at LBA 1 and its entry
 * array right after it (LBA 2, 128 entries of 128 bytes: 16 KiB, so 32 blocks of 512 or
 * 4 of 4096, one block from 16 KiB up); first usable LBA after that array; the backup
 * array just before the backup header in the disk's last LBA; last usable LBA just
 * before the backup array.
 *
 * What we accept: any header that passes every check of header_decode and entries_decode
 * (a header read at LBA 1 is a primary, anything else a backup); only 128-byte entries
 * and at most 128 of them, so an array always fits one scratch buffer. Anything else is
 * "no valid GPT", and a disk without one is never written unless it is blank.
 *
 * Invariants:
 *  1. Disk bytes are read only through lib/cursor (header fields, entries, the ranges the
 *     CRCs cover); no LBA sum or product is formed before its operands were checked to
 *     keep it inside the disk.
 *  2. Encoders produce only what the decoders accept (the format checks this before it
 *     writes: store_disk_format decodes what it is about to write).
 *  3. Nothing here writes to a disk or keeps a pointer after returning.
 */
#include "store/gpt.h"

#include "lib/bytes.h"
#include "lib/crc32.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "store/layout.h"
#include "store/wire_disk.h"

STATIC_ASSERT(STORE_GPT_ARRAY_BYTES == STORE_GPT_ENTRY_BYTES * STORE_GPT_N_ENTRIES, "the array we write");
STATIC_ASSERT(STORE_GPT_OFF_ENTRIES_CRC + 4u == STORE_GPT_HDR_BYTES, "header field offsets");

static const char *const gpt_rej_names[STORE_GPT_REJ__COUNT] = {
	[STORE_GPT_OK] = "ok",
	[STORE_GPT_REJ_DISK] = "disk too small",
	[STORE_GPT_REJ_SIGNATURE] = "signature",
	[STORE_GPT_REJ_REVISION] = "revision",
	[STORE_GPT_REJ_HDR_SIZE] = "header size",
	[STORE_GPT_REJ_HDR_CRC] = "header crc",
	[STORE_GPT_REJ_RESERVED] = "reserved field",
	[STORE_GPT_REJ_MY_LBA] = "my lba",
	[STORE_GPT_REJ_ALT_LBA] = "alternate lba",
	[STORE_GPT_REJ_USABLE] = "usable range",
	[STORE_GPT_REJ_ENTRY_SIZE] = "entry size",
	[STORE_GPT_REJ_N_ENTRIES] = "entry count",
	[STORE_GPT_REJ_ENTRIES_LBA] = "entry array location",
	[STORE_GPT_REJ_ENTRIES_CRC] = "entry array crc",
	[STORE_GPT_REJ_PART_RANGE] = "partition range",
	[STORE_GPT_REJ_PART_OVERLAP] = "partition overlap",
};

const char *store_gpt_rej_name(enum store_gpt_rej r)
{
	if ((unsigned)r >= STORE_GPT_REJ__COUNT)
		return "?";
	return gpt_rej_names[r];
}

static bool block_size_ok(uint32_t bs)
{
	return bs >= 512u && bs <= 65536u && (bs & (bs - 1u)) == 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

uint32_t store_gpt_array_blocks(uint32_t bs)
{
	if (!block_size_ok(bs))
		return 0;
	return (STORE_GPT_ARRAY_BYTES + bs - 1u) / bs;
}

int store_gpt_geometry(uint32_t bs, uint64_t disk_blocks, uint64_t *first_usable, uint64_t *last_usable)
{
	*first_usable = *last_usable = 0;
	if (!block_size_ok(bs))
		return -E_INVAL;
	uint64_t eb = store_gpt_array_blocks(bs);
	/* MBR, header, array | at least one usable block | array, header */
	if (disk_blocks < 2u * eb + 5u)
		return -E_RANGE;
	*first_usable = 2u + eb;
	*last_usable = disk_blocks - 2u - eb;
	return 0;
}

/* ---- building ---- */

void store_gpt_mbr_encode(uint8_t *out, size_t len, uint64_t disk_blocks)
{
	if (!out || len < STORE_MBR_BYTES)
		return;
	memset(out, 0, STORE_MBR_OFF_PARTS);
	store_gpt_mbr_protect(out, len, disk_blocks);
}

void store_gpt_mbr_protect(uint8_t *out, size_t len, uint64_t disk_blocks)
{
	if (!out || len < STORE_MBR_BYTES)
		return; /* the contract says len >= 512 */
	memset(out + STORE_MBR_OFF_PARTS, 0, len - STORE_MBR_OFF_PARTS); /* bytes [0, 446) kept */
	uint8_t *rec = out + STORE_MBR_OFF_PARTS;
	rec[STORE_MBR_PART_OFF_STATUS] = 0;
	rec[STORE_MBR_PART_OFF_CHS_START + 0] = 0x00; /* CHS 0/0/2: LBA 1 */
	rec[STORE_MBR_PART_OFF_CHS_START + 1] = 0x02;
	rec[STORE_MBR_PART_OFF_CHS_START + 2] = 0x00;
	rec[STORE_MBR_PART_OFF_TYPE] = STORE_MBR_TYPE_PROTECTIVE;
	rec[STORE_MBR_PART_OFF_CHS_END + 0] = 0xff; /* not representable: 0xFFFFFF (5.2.3) */
	rec[STORE_MBR_PART_OFF_CHS_END + 1] = 0xff;
	rec[STORE_MBR_PART_OFF_CHS_END + 2] = 0xff;
	st_le32(rec + STORE_MBR_PART_OFF_LBA, 1u);
	uint64_t size = disk_blocks > 0 ? disk_blocks - 1u : 0;
	st_le32(rec + STORE_MBR_PART_OFF_SIZE, size > 0xffffffffu ? 0xffffffffu : (uint32_t)size);
	out[STORE_MBR_OFF_SIG] = STORE_MBR_SIG0;
	out[STORE_MBR_OFF_SIG + 1] = STORE_MBR_SIG1;
}

/* The geometry of g, or -E_INVAL. */
static int new_geometry(const struct store_gpt_new *g, uint64_t *fu, uint64_t *lu)
{
	if (!g || g->n_parts > STORE_GPT_NEW_MAX_PARTS)
		return -E_INVAL;
	return store_gpt_geometry(g->block_size, g->disk_blocks, fu, lu) ? -E_INVAL : 0;
}

int store_gpt_entries_encode(const struct store_gpt_new *g, uint8_t *out, size_t len, uint32_t *crc)
{
	uint64_t fu, lu;
	*crc = 0;
	if (new_geometry(g, &fu, &lu))
		return -E_INVAL;
	size_t bytes = (size_t)store_gpt_array_blocks(g->block_size) * g->block_size;
	if (!out || len < bytes)
		return -E_INVAL;
	memset(out, 0, bytes);
	for (uint32_t i = 0; i < g->n_parts; i++) {
		const struct store_gpt_new_part *p = &g->parts[i];
		if (all_zero(p->type, 16) || p->first_lba > p->last_lba || p->first_lba < fu || p->last_lba > lu ||
		    !p->name)
			return -E_INVAL;
		size_t n = strnlen(p->name, STORE_GPT_NAME_UNITS + 1u);
		if (n > STORE_GPT_NAME_UNITS)
			return -E_INVAL;
		struct wcur w = wcur_make(out + (size_t)i * STORE_GPT_ENTRY_BYTES, STORE_GPT_ENTRY_BYTES);
		wcur_bytes(&w, p->type, 16);
		wcur_bytes(&w, p->guid, 16);
		wcur_le64(&w, p->first_lba);
		wcur_le64(&w, p->last_lba);
		wcur_le64(&w, 0); /* attributes */
		for (size_t k = 0; k < n; k++) {
			uint8_t ch = (uint8_t)p->name[k];
			if (ch < 0x20u || ch > 0x7eu) /* ASCII, so UTF-16LE is the byte and a zero */
				return -E_INVAL;
			wcur_le16(&w, ch);
		}
		if (!wcur_ok(&w))
			return -E_INVAL;
	}
	*crc = crc32_ieee(0, out, STORE_GPT_ARRAY_BYTES);
	return 0;
}

int store_gpt_header_encode(const struct store_gpt_new *g, bool backup, uint32_t entries_crc, uint8_t *out,
			    size_t len)
{
	uint64_t fu, lu;
	if (new_geometry(g, &fu, &lu) || !out || len < g->block_size)
		return -E_INVAL;
	uint64_t last = g->disk_blocks - 1u;
	uint64_t eb = store_gpt_array_blocks(g->block_size);
	memset(out, 0, g->block_size);
	struct wcur w = wcur_make(out, STORE_GPT_HDR_BYTES);
	wcur_bytes(&w, STORE_GPT_SIGNATURE, 8);
	wcur_le32(&w, STORE_GPT_REVISION);
	wcur_le32(&w, STORE_GPT_HDR_BYTES);
	wcur_le32(&w, 0); /* CRC, filled below */
	wcur_le32(&w, 0); /* reserved */
	wcur_le64(&w, backup ? last : 1u);
	wcur_le64(&w, backup ? 1u : last);
	wcur_le64(&w, fu);
	wcur_le64(&w, lu);
	wcur_bytes(&w, g->disk_guid, 16);
	wcur_le64(&w, backup ? last - eb : 2u);
	wcur_le32(&w, STORE_GPT_N_ENTRIES);
	wcur_le32(&w, STORE_GPT_ENTRY_BYTES);
	wcur_le32(&w, entries_crc);
	if (!wcur_ok(&w) || w.pos != STORE_GPT_HDR_BYTES)
		return -E_INVAL;
	st_le32(out + STORE_GPT_OFF_HDR_CRC, crc32_ieee(0, out, STORE_GPT_HDR_BYTES));
	return 0;
}

int store_gpt_entry_resize(uint8_t *arr, size_t len, uint32_t index, uint64_t last_lba, uint32_t *crc)
{
	*crc = 0;
	if (!arr || len < STORE_GPT_ARRAY_BYTES || index >= STORE_GPT_N_ENTRIES)
		return -E_INVAL;
	struct cur c = cur_make(arr, STORE_GPT_ARRAY_BYTES);
	cur_skip(&c, (size_t)index * STORE_GPT_ENTRY_BYTES);
	uint8_t type[16];
	cur_bytes(&c, type, 16);
	cur_skip(&c, STORE_GPT_ENT_OFF_FIRST - 16u);
	uint64_t first = cur_le64(&c);
	if (!cur_ok(&c) || all_zero(type, 16) || last_lba < first)
		return -E_INVAL;
	struct wcur w = wcur_make(arr, STORE_GPT_ARRAY_BYTES);
	(void)wcur_reserve(&w, (size_t)index * STORE_GPT_ENTRY_BYTES + STORE_GPT_ENT_OFF_LAST); /* kept */
	wcur_le64(&w, last_lba);
	if (!wcur_ok(&w))
		return -E_INVAL;
	*crc = crc32_ieee(0, arr, STORE_GPT_ARRAY_BYTES);
	return 0;
}

/* ---- decoding ---- */

static int reject(enum store_gpt_rej *rej, enum store_gpt_rej why)
{
	*rej = why;
	return -E_CORRUPT;
}

int store_gpt_header_decode(const uint8_t *blk, size_t len, uint32_t bs, uint64_t disk_blocks, uint64_t at_lba,
			    struct store_gpt *out, enum store_gpt_rej *rej)
{
	memset(out, 0, sizeof *out);
	*rej = STORE_GPT_OK;
	if (!blk || !block_size_ok(bs))
		return -E_INVAL;
	if (disk_blocks < 3u || at_lba == 0 || at_lba >= disk_blocks)
		return reject(rej, STORE_GPT_REJ_DISK);
	struct cur c = cur_make(blk, len);
	uint8_t sig[8];
	cur_bytes(&c, sig, sizeof sig);
	uint32_t revision = cur_le32(&c);
	uint32_t hdr_size = cur_le32(&c);
	uint32_t hdr_crc = cur_le32(&c);
	uint32_t reserved = cur_le32(&c);
	uint64_t my = cur_le64(&c);
	uint64_t alt = cur_le64(&c);
	uint64_t fu = cur_le64(&c);
	uint64_t lu = cur_le64(&c);
	uint8_t disk_guid[16];
	cur_bytes(&c, disk_guid, 16);
	uint64_t ents = cur_le64(&c);
	uint32_t n_ents = cur_le32(&c);
	uint32_t ent_size = cur_le32(&c);
	uint32_t ents_crc = cur_le32(&c);
	if (!cur_ok(&c)) /* shorter than a header */
		return reject(rej, STORE_GPT_REJ_HDR_SIZE);
	if (memcmp(sig, STORE_GPT_SIGNATURE, 8) != 0)
		return reject(rej, STORE_GPT_REJ_SIGNATURE);
	if (revision != STORE_GPT_REVISION)
		return reject(rej, STORE_GPT_REJ_REVISION);
	if (hdr_size < STORE_GPT_HDR_BYTES || hdr_size > len || hdr_size > bs)
		return reject(rej, STORE_GPT_REJ_HDR_SIZE);
	/* The CRC covers HeaderSize bytes with its own field taken as zero. */
	struct cur all = cur_make(blk, len);
	const uint8_t *h = cur_ptr(&all, hdr_size);
	static const uint8_t zero4[4];
	if (!h)
		return reject(rej, STORE_GPT_REJ_HDR_SIZE);
	uint32_t crc = crc32_ieee(0, h, STORE_GPT_OFF_HDR_CRC);
	crc = crc32_ieee(crc, zero4, 4);
	crc = crc32_ieee(crc, h + STORE_GPT_OFF_RESERVED, hdr_size - STORE_GPT_OFF_RESERVED);
	if (crc != hdr_crc)
		return reject(rej, STORE_GPT_REJ_HDR_CRC);
	if (reserved != 0)
		return reject(rej, STORE_GPT_REJ_RESERVED);
	if (my != at_lba)
		return reject(rej, STORE_GPT_REJ_MY_LBA);
	if (ent_size != STORE_GPT_ENTRY_BYTES)
		return reject(rej, STORE_GPT_REJ_ENTRY_SIZE);
	if (n_ents == 0 || n_ents > STORE_GPT_N_ENTRIES)
		return reject(rej, STORE_GPT_REJ_N_ENTRIES);
	uint64_t eb = ((uint64_t)n_ents * STORE_GPT_ENTRY_BYTES + bs - 1u) / bs;
	if (fu > lu || lu >= disk_blocks)
		return reject(rej, STORE_GPT_REJ_USABLE);
	if (at_lba == 1u) {
		/* primary: header, array, usable range, and the backup beyond it */
		if (fu <= 1u)
			return reject(rej, STORE_GPT_REJ_USABLE);
		if (alt <= lu || alt >= disk_blocks)
			return reject(rej, STORE_GPT_REJ_ALT_LBA);
		if (ents < 2u || ents > fu || eb > fu - ents)
			return reject(rej, STORE_GPT_REJ_ENTRIES_LBA);
	} else {
		/* backup: usable range, array, then this header; the primary at LBA 1 */
		if (at_lba <= lu)
			return reject(rej, STORE_GPT_REJ_USABLE);
		if (alt != 1u || fu <= 1u)
			return reject(rej, STORE_GPT_REJ_ALT_LBA);
		if (ents <= lu || ents >= at_lba || eb > at_lba - ents)
			return reject(rej, STORE_GPT_REJ_ENTRIES_LBA);
	}
	memcpy(out->disk_guid, disk_guid, 16);
	out->block_size = bs;
	out->disk_blocks = disk_blocks;
	out->my_lba = my;
	out->alt_lba = alt;
	out->first_usable = fu;
	out->last_usable = lu;
	out->entries_lba = ents;
	out->n_entries = n_ents;
	out->entries_crc = ents_crc;
	return 0;
}

/* Entry i of the array arr (bytes long), through a cursor. 0 or -E_INVAL (outside). */
static int entry_at(const uint8_t *arr, size_t bytes, uint32_t i, struct store_gpt_part *p)
{
	memset(p, 0, sizeof *p);
	struct cur c = cur_make(arr, bytes);
	cur_skip(&c, (size_t)i * STORE_GPT_ENTRY_BYTES);
	cur_bytes(&c, p->type, 16);
	cur_bytes(&c, p->guid, 16);
	p->first_lba = cur_le64(&c);
	p->last_lba = cur_le64(&c);
	p->attrs = cur_le64(&c);
	p->index = i;
	return cur_ok(&c) ? 0 : -E_INVAL;
}

int store_gpt_entries_decode(const uint8_t *ents, size_t len, struct store_gpt *g, enum store_gpt_rej *rej)
{
	*rej = STORE_GPT_OK;
	if (!ents || !g || g->n_entries == 0 || g->n_entries > STORE_GPT_N_ENTRIES)
		return -E_INVAL;
	g->n_used = 0;
	g->has_esp = g->has_data = g->has_bios = false;
	memset(&g->esp, 0, sizeof g->esp);
	memset(&g->data, 0, sizeof g->data);
	memset(&g->bios, 0, sizeof g->bios);
	size_t bytes = (size_t)g->n_entries * STORE_GPT_ENTRY_BYTES;
	struct cur all = cur_make(ents, len);
	const uint8_t *arr = cur_ptr(&all, bytes);
	if (!arr)
		return -E_INVAL;
	if (crc32_ieee(0, arr, bytes) != g->entries_crc)
		return reject(rej, STORE_GPT_REJ_ENTRIES_CRC);
	uint8_t type_esp[16], type_data[16], type_bios[16];
	if (store_guid_from_text(STORE_GPT_TYPE_ESP, type_esp) || store_guid_from_text(STORE_GPT_TYPE_DATA, type_data) ||
	    store_guid_from_text(STORE_GPT_TYPE_BIOS, type_bios))
		return -E_INVAL; /* our own constants: cannot happen */
	/* the result goes to g only once the whole array passed */
	struct store_gpt_part esp, data, bios;
	bool has_esp = false, has_data = false, has_bios = false;
	uint32_t n_used = 0;
	memset(&esp, 0, sizeof esp);
	memset(&data, 0, sizeof data);
	memset(&bios, 0, sizeof bios);
	for (uint32_t i = 0; i < g->n_entries; i++) {
		struct store_gpt_part p;
		if (entry_at(arr, bytes, i, &p))
			return -E_INVAL; /* bytes was checked above: cannot happen */
		if (all_zero(p.type, 16))
			continue; /* unused entry */
		if (p.first_lba > p.last_lba || p.first_lba < g->first_usable || p.last_lba > g->last_usable)
			return reject(rej, STORE_GPT_REJ_PART_RANGE);
		/* against every used entry before it (each already inside the usable range):
		 * at most 128 * 127 / 2 pairs, read again rather than kept on the stack */
		for (uint32_t j = 0; j < i; j++) {
			struct store_gpt_part o;
			if (entry_at(arr, bytes, j, &o))
				return -E_INVAL;
			if (!all_zero(o.type, 16) && p.first_lba <= o.last_lba && o.first_lba <= p.last_lba)
				return reject(rej, STORE_GPT_REJ_PART_OVERLAP);
		}
		n_used++;
		if (!has_esp && memcmp(p.type, type_esp, 16) == 0) {
			has_esp = true;
			esp = p;
		}
		if (!has_data && memcmp(p.type, type_data, 16) == 0) {
			has_data = true;
			data = p;
		}
		if (!has_bios && memcmp(p.type, type_bios, 16) == 0) {
			has_bios = true;
			bios = p;
		}
	}
	g->n_used = n_used;
	g->has_esp = has_esp;
	g->has_data = has_data;
	g->has_bios = has_bios;
	g->esp = esp;
	g->data = data;
	g->bios = bios;
	return 0;
}

/* ---- loading ---- */

/* Read and check the copy whose header is at lba. 0 with *rej OK (valid), 0 with *rej
 * set (invalid; *hdr_ok says whether the header alone passed), or the read's error. */
static int load_copy(const struct store_gpt_src *src, uint8_t *scratch, uint64_t lba, struct store_gpt *g,
		     enum store_gpt_rej *rej, bool *hdr_ok)
{
	uint32_t bs = src->block_size;
	*hdr_ok = false;
	int err = src->read(src->ctx, lba, 1, scratch);
	if (err)
		return err;
	if (store_gpt_header_decode(scratch, bs, bs, src->disk_blocks, lba, g, rej))
		return 0;
	*hdr_ok = true;
	/* n_entries <= 128: at most max(16 KiB, one block), which the caller's scratch holds */
	uint32_t eb = (uint32_t)(((uint64_t)g->n_entries * STORE_GPT_ENTRY_BYTES + bs - 1u) / bs);
	err = src->read(src->ctx, g->entries_lba, eb, scratch);
	if (err)
		return err;
	if (store_gpt_entries_decode(scratch, (size_t)eb * bs, g, rej) && *rej == STORE_GPT_OK)
		*rej = STORE_GPT_REJ_ENTRIES_CRC; /* -E_INVAL cannot happen after a good header */
	return 0;
}

static bool src_ok(const struct store_gpt_src *src, const uint8_t *scratch, size_t scratch_len)
{
	return src && src->read && block_size_ok(src->block_size) && scratch &&
	       scratch_len >= MAX((size_t)src->block_size, (size_t)STORE_GPT_ARRAY_BYTES);
}

int store_gpt_load(const struct store_gpt_src *src, uint8_t *scratch, size_t scratch_len, struct store_gpt *out,
		   struct store_gpt_verdict *v)
{
	memset(out, 0, sizeof *out);
	memset(v, 0, sizeof *v);
	if (!src_ok(src, scratch, scratch_len))
		return -E_INVAL;
	uint64_t n = src->disk_blocks;
	if (n < 3u) {
		v->primary = v->backup = STORE_GPT_REJ_DISK;
		return -E_CORRUPT;
	}
	bool hdr_ok, unused;
	int err = load_copy(src, scratch, 1, out, &v->primary, &hdr_ok);
	if (err)
		return err;
	if (v->primary == STORE_GPT_OK)
		return 0;
	/* The primary's AlternateLBA, when its header was sound (decode checked it is past the
	 * usable range and inside the disk): where the backup is after the disk grew. */
	uint64_t alt = hdr_ok ? out->alt_lba : 0;
	err = load_copy(src, scratch, n - 1u, out, &v->backup, &unused);
	if (err)
		return err;
	if (v->backup != STORE_GPT_OK && alt > 1u && alt < n - 1u) {
		err = load_copy(src, scratch, alt, out, &v->backup, &unused);
		if (err)
			return err;
	}
	if (v->backup == STORE_GPT_OK) {
		v->from_backup = true;
		return 0;
	}
	memset(out, 0, sizeof *out);
	return -E_CORRUPT;
}

/* ---- what an interrupted GPT write of ours leaves ---- */

enum piece { PIECE_ZERO, PIECE_OURS, PIECE_OTHER };

/* The header block at lba: zero, or a sound header exactly as store_gpt_header_encode
 * writes it for this disk (only the disk GUID and the array CRC unknown). */
static enum piece header_piece(const struct store_gpt_src *src, const uint8_t *blk, uint64_t lba, uint64_t fu,
			       uint64_t lu, uint64_t eb)
{
	uint32_t bs = src->block_size;
	if (all_zero(blk, bs))
		return PIECE_ZERO;
	struct store_gpt g;
	enum store_gpt_rej rej;
	if (store_gpt_header_decode(blk, bs, bs, src->disk_blocks, lba, &g, &rej))
		return PIECE_OTHER;
	bool backup = lba != 1u;
	uint64_t last = src->disk_blocks - 1u;
	struct cur c = cur_make(blk, bs);
	cur_skip(&c, STORE_GPT_HDR_BYTES);
	const uint8_t *rest = cur_ptr(&c, bs - STORE_GPT_HDR_BYTES);
	if (g.first_usable != fu || g.last_usable != lu || g.n_entries != STORE_GPT_N_ENTRIES ||
	    g.alt_lba != (backup ? 1u : last) || g.entries_lba != (backup ? last - eb : 2u) || !rest ||
	    ld_le32(blk + STORE_GPT_OFF_HDR_SIZE) != STORE_GPT_HDR_BYTES || !all_zero(rest, bs - STORE_GPT_HDR_BYTES))
		return PIECE_OTHER;
	return PIECE_OURS;
}

/* An array: zero, or only entries of our three types inside the usable range, unused
 * entries and the padding zero. */
static enum piece array_piece(const uint8_t *arr, size_t bytes, uint64_t fu, uint64_t lu)
{
	if (all_zero(arr, bytes))
		return PIECE_ZERO;
	uint8_t type_esp[16], type_data[16], type_bios[16];
	if (store_guid_from_text(STORE_GPT_TYPE_ESP, type_esp) || store_guid_from_text(STORE_GPT_TYPE_DATA, type_data) ||
	    store_guid_from_text(STORE_GPT_TYPE_BIOS, type_bios))
		return PIECE_OTHER;
	struct cur c = cur_make(arr, bytes);
	for (uint32_t i = 0; i < STORE_GPT_N_ENTRIES; i++) {
		struct cur e = cur_sub(&c, STORE_GPT_ENTRY_BYTES);
		const uint8_t *raw = e.buf;
		uint8_t type[16];
		cur_bytes(&e, type, 16);
		cur_skip(&e, 16);
		uint64_t first = cur_le64(&e), last = cur_le64(&e);
		if (!cur_ok(&e))
			return PIECE_OTHER;
		if (all_zero(type, 16)) {
			if (!all_zero(raw, STORE_GPT_ENTRY_BYTES))
				return PIECE_OTHER;
			continue;
		}
		if ((memcmp(type, type_esp, 16) != 0 && memcmp(type, type_data, 16) != 0 &&
		     memcmp(type, type_bios, 16) != 0) ||
		    first > last || first < fu || last > lu)
			return PIECE_OTHER;
	}
	const uint8_t *pad = cur_ptr(&c, cur_left(&c));
	if (pad && !all_zero(pad, bytes - STORE_GPT_ARRAY_BYTES))
		return PIECE_OTHER;
	return PIECE_OURS;
}

int store_gpt_footprint_check(const struct store_gpt_src *src, uint8_t *scratch, size_t scratch_len,
			      enum store_gpt_footprint *out)
{
	*out = STORE_GPT_FP_OTHER;
	if (!src_ok(src, scratch, scratch_len))
		return -E_INVAL;
	uint32_t bs = src->block_size;
	uint64_t fu, lu, n = src->disk_blocks;
	if (store_gpt_geometry(bs, n, &fu, &lu))
		return -E_RANGE;
	uint32_t eb = store_gpt_array_blocks(bs);
	size_t arr_bytes = (size_t)eb * bs;
	bool any = false, other = false;

	/* LBA 0: zero or our protective MBR, its boot code and disk signature (what the format
	 * keeps, store_gpt_mbr_protect) whatever they are. */
	int err = src->read(src->ctx, 0, 1, scratch);
	if (err)
		return err;
	if (!all_zero(scratch, bs)) {
		uint8_t mbr[STORE_MBR_BYTES];
		store_gpt_mbr_encode(mbr, sizeof mbr, n);
		any = true;
		if (memcmp(scratch + STORE_MBR_OFF_PARTS, mbr + STORE_MBR_OFF_PARTS, STORE_MBR_BYTES - STORE_MBR_OFF_PARTS) !=
			    0 ||
		    !all_zero(scratch + STORE_MBR_BYTES, bs - STORE_MBR_BYTES))
			other = true;
	}
	/* Each copy: header and array, each zero or ours, never both present (a header of
	 * ours with its array would have been a valid GPT). */
	const uint64_t hdr_lba[2] = { 1u, n - 1u };
	const uint64_t arr_lba[2] = { 2u, n - 1u - eb };
	for (int k = 0; k < 2; k++) {
		err = src->read(src->ctx, hdr_lba[k], 1, scratch);
		if (err)
			return err;
		enum piece h = header_piece(src, scratch, hdr_lba[k], fu, lu, eb);
		err = src->read(src->ctx, arr_lba[k], eb, scratch);
		if (err)
			return err;
		enum piece a = array_piece(scratch, arr_bytes, fu, lu);
		any |= h != PIECE_ZERO || a != PIECE_ZERO;
		if (h == PIECE_OTHER || a == PIECE_OTHER || (h == PIECE_OURS && a == PIECE_OURS))
			other = true;
	}
	*out = other ? STORE_GPT_FP_OTHER : any ? STORE_GPT_FP_PARTIAL : STORE_GPT_FP_ZERO;
	return 0;
}
