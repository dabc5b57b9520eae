/* SPDX-License-Identifier: MIT
 *
 * store/gpt (the GPT of UEFI 2.10 5.3 as the layout uses it) on in-memory disk images:
 * GUID text to the mixed-endian disk form; byte-for-byte agreement with a GPT written by
 * util-linux sfdisk 2.38 (its protective MBR record, both headers with their CRCs, the
 * entries); round trips for 512, 4096 and 65536-byte blocks; one case per rejection
 * site of the header and the entry array; the backup used when the primary fails (at
 * the last LBA, or where the primary's AlternateLBA says after the disk grew); device
 * errors passed back; and the recogniser of what an interrupted GPT write of ours leaves.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/bytes.h"
#include "lib/crc32.h"
#include "lib/err.h"
#include "store/gpt.h"
#include "store/layout.h"
#include "store/wire_disk.h"

/* ---- an in-memory disk behind the loader's read callback ---- */
struct memdisk {
	uint8_t *img;
	uint64_t blocks;
	uint32_t bs;
	uint32_t reads;
	int fail_read; /* >= 0: that read fails with -E_IO */
};

static int mem_read(void *ctx, uint64_t lba, uint32_t n, void *buf)
{
	struct memdisk *m = ctx;
	if (m->fail_read >= 0 && m->reads == (uint32_t)m->fail_read) {
		m->reads++;
		return -E_IO;
	}
	m->reads++;
	assert_true(n > 0 && lba < m->blocks && n <= m->blocks - lba); /* never outside the disk */
	memcpy(buf, m->img + lba * m->bs, (size_t)n * m->bs);
	return 0;
}

static struct memdisk *md_new(uint64_t blocks, uint32_t bs)
{
	struct memdisk *m = calloc(1, sizeof *m);
	assert_non_null(m);
	m->img = calloc(blocks, bs);
	assert_non_null(m->img);
	m->blocks = blocks;
	m->bs = bs;
	m->fail_read = -1;
	return m;
}

static void md_free(struct memdisk *m)
{
	free(m->img);
	free(m);
}

static struct store_gpt_src md_src(struct memdisk *m)
{
	struct store_gpt_src s = { mem_read, m, m->bs, m->blocks };
	return s;
}

static uint8_t scratch[64 * 1024];

static void guid(const char *text, uint8_t out[16])
{
	assert_int_equal(store_guid_from_text(text, out), 0);
}

/* A GPT like the format's: ESP and data partition (plus extra Linux partitions). */
static void spec(struct store_gpt_new *g, uint32_t bs, uint64_t blocks, uint32_t n_linux)
{
	uint64_t fu, lu;
	memset(g, 0, sizeof *g);
	assert_int_equal(store_gpt_geometry(bs, blocks, &fu, &lu), 0);
	g->block_size = bs;
	g->disk_blocks = blocks;
	guid("01234567-89ab-4cde-8f01-23456789abcd", g->disk_guid);
	uint64_t span = (lu - fu + 1u) / 4u;
	g->n_parts = 2 + n_linux;
	if (span == 0) { /* the smallest disk: one block, the data partition alone */
		g->n_parts = 1;
		guid(STORE_GPT_TYPE_DATA, g->parts[0].type);
		guid("11111111-2222-4333-8444-555555555555", g->parts[0].guid);
		g->parts[0].first_lba = g->parts[0].last_lba = fu;
		g->parts[0].name = "urMQTT data";
		return;
	}
	for (uint32_t i = 0; i < g->n_parts; i++) {
		struct store_gpt_new_part *p = &g->parts[i];
		guid(i == 0 ? STORE_GPT_TYPE_ESP : i == 1 ? STORE_GPT_TYPE_DATA : "0fc63daf-8483-4772-8e79-3d69d8477de4",
		     p->type);
		guid("11111111-2222-4333-8444-555555555555", p->guid);
		p->guid[0] = (uint8_t)(p->guid[0] + i);
		p->first_lba = fu + i * span;
		p->last_lba = p->first_lba + span - 1u;
		p->name = i == 0 ? "EFI system partition" : i == 1 ? "urMQTT data" : "linux";
	}
}

/* Write g's MBR, both arrays and both headers into m. */
static void build(struct memdisk *m, const struct store_gpt_new *g)
{
	uint32_t bs = m->bs, eb = store_gpt_array_blocks(bs), crc;
	uint8_t *img = m->img;
	store_gpt_mbr_encode(img, bs, m->blocks);
	assert_int_equal(store_gpt_entries_encode(g, scratch, sizeof scratch, &crc), 0);
	memcpy(img + 2u * bs, scratch, (size_t)eb * bs);
	memcpy(img + (m->blocks - 1u - eb) * bs, scratch, (size_t)eb * bs);
	assert_int_equal(store_gpt_header_encode(g, false, crc, img + bs, bs), 0);
	assert_int_equal(store_gpt_header_encode(g, true, crc, img + (m->blocks - 1u) * bs, bs), 0);
}

static void fix_hdr_crc(uint8_t *h)
{
	uint32_t size = ld_le32(h + STORE_GPT_OFF_HDR_SIZE);
	st_le32(h + STORE_GPT_OFF_HDR_CRC, 0);
	st_le32(h + STORE_GPT_OFF_HDR_CRC, crc32_ieee(0, h, size));
}

/* ---- GUIDs ---- */

static void t_guid_text(void **state)
{
	(void)state;
	static const uint8_t esp[16] = { 0x28, 0x73, 0x2a, 0xc1, 0x1f, 0xf8, 0xd2, 0x11,
					 0xba, 0x4b, 0x00, 0xa0, 0xc9, 0x3e, 0xc9, 0x3b };
	static const uint8_t data[16] = { 0x73, 0xa3, 0x15, 0xe1, 0x22, 0xfb, 0x52, 0x4a,
					  0x96, 0xf0, 0x86, 0xc1, 0x1c, 0x6f, 0xb7, 0x6c };
	uint8_t g[16];
	char text[37];
	guid(STORE_GPT_TYPE_ESP, g);
	assert_memory_equal(g, esp, 16);
	store_guid_to_text(g, text);
	assert_string_equal(text, STORE_GPT_TYPE_ESP);
	guid("E115A373-FB22-4A52-96F0-86C11C6FB76C", g); /* upper case too */
	assert_memory_equal(g, data, 16);
	store_guid_to_text(g, text);
	assert_string_equal(text, STORE_GPT_TYPE_DATA);
	static const char *const bad[] = { "", "e115a373-fb22-4a52-96f0-86c11c6fb76", "e115a373xfb22-4a52-96f0-86c11c6fb76c",
					   "g115a373-fb22-4a52-96f0-86c11c6fb76c", "e115a373-fb22-4a52-96f0-86c11c6fb7 c" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(store_guid_from_text(bad[i], g), -1);
}

/* ---- agreement with sfdisk ---- */

/* `sfdisk` (util-linux 2.38.1) on an 8 MiB image: label-id 01234567-89AB-4CDE-8F01-
 * 23456789ABCD, first-lba 34, partition 1 at 2048 size 2048 type ESP uuid
 * 11111111-2222-4333-8444-555555555555 name "EFI system partition", partition 2 at 4096
 * size 8192 type urMQTT data uuid AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE name "urMQTT data". */
static const uint8_t sf_mbr_rec[16] = {
	0x00, 0x00, 0x02, 0x00, 0xee, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0xff, 0x3f, 0x00, 0x00,
};
static const uint8_t sf_primary[92] = {
	0x45, 0x46, 0x49, 0x20, 0x50, 0x41, 0x52, 0x54, 0x00, 0x00, 0x01, 0x00, 0x5c, 0x00, 0x00, 0x00,
	0xb7, 0x38, 0x84, 0xb3, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xff, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xde, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x67, 0x45, 0x23, 0x01, 0xab, 0x89, 0xde, 0x4c,
	0x8f, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x80, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x11, 0x8f, 0x8e, 0x77,
};
static const uint8_t sf_backup[92] = {
	0x45, 0x46, 0x49, 0x20, 0x50, 0x41, 0x52, 0x54, 0x00, 0x00, 0x01, 0x00, 0x5c, 0x00, 0x00, 0x00,
	0x82, 0x2d, 0xb1, 0x07, 0x00, 0x00, 0x00, 0x00, 0xff, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xde, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x67, 0x45, 0x23, 0x01, 0xab, 0x89, 0xde, 0x4c,
	0x8f, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xdf, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x80, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x11, 0x8f, 0x8e, 0x77,
};
static const uint8_t sf_entries[256] = {
	0x28, 0x73, 0x2a, 0xc1, 0x1f, 0xf8, 0xd2, 0x11, 0xba, 0x4b, 0x00, 0xa0, 0xc9, 0x3e, 0xc9, 0x3b,
	0x11, 0x11, 0x11, 0x11, 0x22, 0x22, 0x33, 0x43, 0x84, 0x44, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55,
	0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x46, 0x00, 0x49, 0x00, 0x20, 0x00,
	0x73, 0x00, 0x79, 0x00, 0x73, 0x00, 0x74, 0x00, 0x65, 0x00, 0x6d, 0x00, 0x20, 0x00, 0x70, 0x00,
	0x61, 0x00, 0x72, 0x00, 0x74, 0x00, 0x69, 0x00, 0x74, 0x00, 0x69, 0x00, 0x6f, 0x00, 0x6e, 0x00,
	[128] = 0x73, 0xa3, 0x15, 0xe1, 0x22, 0xfb, 0x52, 0x4a, 0x96, 0xf0, 0x86, 0xc1, 0x1c, 0x6f, 0xb7, 0x6c,
	0xaa, 0xaa, 0xaa, 0xaa, 0xbb, 0xbb, 0xcc, 0x4c, 0x8d, 0xdd, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,
	0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x2f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x75, 0x00, 0x72, 0x00, 0x4d, 0x00, 0x51, 0x00,
	0x54, 0x00, 0x54, 0x00, 0x20, 0x00, 0x64, 0x00, 0x61, 0x00, 0x74, 0x00, 0x61, 0x00,
};

static void sf_spec(struct store_gpt_new *g)
{
	memset(g, 0, sizeof *g);
	g->block_size = 512;
	g->disk_blocks = 16384;
	guid("01234567-89AB-4CDE-8F01-23456789ABCD", g->disk_guid);
	g->n_parts = 2;
	guid(STORE_GPT_TYPE_ESP, g->parts[0].type);
	guid("11111111-2222-4333-8444-555555555555", g->parts[0].guid);
	g->parts[0].first_lba = 2048;
	g->parts[0].last_lba = 4095;
	g->parts[0].name = "EFI system partition";
	guid(STORE_GPT_TYPE_DATA, g->parts[1].type);
	guid("AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE", g->parts[1].guid);
	g->parts[1].first_lba = 4096;
	g->parts[1].last_lba = 12287;
	g->parts[1].name = "urMQTT data";
}

static void t_known_header_crc(void **state)
{
	(void)state;
	/* the header CRC: CRC-32 of the 92 bytes with the CRC field taken as zero */
	uint8_t h[92];
	memcpy(h, sf_primary, sizeof h);
	uint32_t stored = ld_le32(h + STORE_GPT_OFF_HDR_CRC);
	assert_int_equal(stored, 0xb38438b7u);
	st_le32(h + STORE_GPT_OFF_HDR_CRC, 0);
	assert_int_equal(crc32_ieee(0, h, sizeof h), stored);
	/* the entries CRC over the whole 16 KiB array */
	static uint8_t arr[STORE_GPT_ARRAY_BYTES];
	memcpy(arr, sf_entries, sizeof sf_entries);
	assert_int_equal(crc32_ieee(0, arr, sizeof arr), 0x778e8f11u);
}

static void t_matches_sfdisk(void **state)
{
	(void)state;
	struct store_gpt_new g;
	sf_spec(&g);
	uint8_t blk[512];
	uint32_t crc;
	store_gpt_mbr_encode(blk, sizeof blk, g.disk_blocks);
	assert_memory_equal(blk + STORE_MBR_OFF_PARTS, sf_mbr_rec, 16);
	assert_int_equal(blk[510], 0x55);
	assert_int_equal(blk[511], 0xaa);
	for (size_t i = 0; i < STORE_MBR_OFF_PARTS; i++)
		assert_int_equal(blk[i], 0);
	assert_int_equal(store_gpt_entries_encode(&g, scratch, sizeof scratch, &crc), 0);
	assert_int_equal(crc, 0x778e8f11u);
	assert_memory_equal(scratch, sf_entries, sizeof sf_entries);
	for (size_t i = sizeof sf_entries; i < STORE_GPT_ARRAY_BYTES; i++)
		assert_int_equal(scratch[i], 0);
	assert_int_equal(store_gpt_header_encode(&g, false, crc, blk, sizeof blk), 0);
	assert_memory_equal(blk, sf_primary, 92);
	assert_int_equal(store_gpt_header_encode(&g, true, crc, blk, sizeof blk), 0);
	assert_memory_equal(blk, sf_backup, 92);

	/* and sfdisk's headers decode */
	struct store_gpt d;
	enum store_gpt_rej rej;
	memset(blk, 0, sizeof blk);
	memcpy(blk, sf_primary, 92);
	assert_int_equal(store_gpt_header_decode(blk, 512, 512, 16384, 1, &d, &rej), 0);
	assert_int_equal(d.first_usable, 34);
	assert_int_equal(d.last_usable, 16350);
	assert_int_equal(d.alt_lba, 16383);
	assert_int_equal(d.entries_lba, 2);
	assert_memory_equal(d.disk_guid, g.disk_guid, 16);
	memcpy(blk, sf_backup, 92);
	assert_int_equal(store_gpt_header_decode(blk, 512, 512, 16384, 16383, &d, &rej), 0);
	assert_int_equal(d.entries_lba, 16351);
	static uint8_t arr[STORE_GPT_ARRAY_BYTES];
	memcpy(arr, sf_entries, sizeof sf_entries);
	assert_int_equal(store_gpt_entries_decode(arr, sizeof arr, &d, &rej), 0);
	assert_int_equal(d.n_used, 2);
	assert_true(d.has_esp && d.has_data);
	assert_int_equal(d.esp.first_lba, 2048);
	assert_int_equal(d.data.last_lba, 12287);
	assert_int_equal(d.data.index, 1);
}

/* ---- round trips ---- */

static void t_roundtrip_block_sizes(void **state)
{
	(void)state;
	static const struct { uint32_t bs; uint64_t blocks; uint32_t eb; } cases[] = {
		{ 512, 4096, 32 }, { 4096, 512, 4 }, { 65536, 64, 1 }, { 512, 2 * 32 + 5, 32 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct memdisk *m = md_new(cases[i].blocks, cases[i].bs);
		assert_int_equal(store_gpt_array_blocks(cases[i].bs), cases[i].eb);
		struct store_gpt_new g;
		spec(&g, cases[i].bs, cases[i].blocks, 0);
		build(m, &g);
		struct store_gpt_src src = md_src(m);
		struct store_gpt d;
		struct store_gpt_verdict v;
		assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), 0);
		assert_false(v.from_backup);
		assert_int_equal(d.first_usable, 2u + cases[i].eb);
		assert_int_equal(d.last_usable, cases[i].blocks - 2u - cases[i].eb);
		assert_int_equal(d.alt_lba, cases[i].blocks - 1u);
		assert_int_equal(d.n_entries, 128);
		assert_int_equal(d.n_used, g.n_parts);
		assert_true(d.has_data);
		assert_int_equal(d.has_esp, g.n_parts == 2);
		assert_int_equal(d.data.first_lba, g.parts[g.n_parts - 1].first_lba);
		assert_int_equal(d.data.last_lba, g.parts[g.n_parts - 1].last_lba);
		assert_memory_equal(d.data.guid, g.parts[g.n_parts - 1].guid, 16);
		assert_memory_equal(d.disk_guid, g.disk_guid, 16);
		/* the backup on its own is the same GPT seen from the other end */
		memset(m->img + cases[i].bs, 0, cases[i].bs);
		assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), 0);
		assert_true(v.from_backup);
		assert_int_equal(v.primary, STORE_GPT_REJ_SIGNATURE);
		assert_int_equal(d.my_lba, cases[i].blocks - 1u);
		assert_int_equal(d.data.first_lba, g.parts[g.n_parts - 1].first_lba);
		md_free(m);
	}
	uint64_t fu, lu;
	assert_int_equal(store_gpt_geometry(512, 2 * 32 + 4, &fu, &lu), -E_RANGE);
	assert_int_equal(store_gpt_geometry(1000, 4096, &fu, &lu), -E_INVAL);
}

static void t_encode_refuses(void **state)
{
	(void)state;
	struct store_gpt_new g;
	uint32_t crc;
	uint8_t blk[512];
	spec(&g, 512, 4096, 0);
	g.parts[1].last_lba = 4096 - 33; /* into the backup array */
	assert_int_equal(store_gpt_entries_encode(&g, scratch, sizeof scratch, &crc), -E_INVAL);
	spec(&g, 512, 4096, 0);
	g.parts[0].first_lba = 33;
	assert_int_equal(store_gpt_entries_encode(&g, scratch, sizeof scratch, &crc), -E_INVAL);
	spec(&g, 512, 4096, 0);
	g.parts[0].name = "a name of thirty-seven characters....";
	assert_int_equal(store_gpt_entries_encode(&g, scratch, sizeof scratch, &crc), -E_INVAL);
	g.parts[0].name = "tab\there";
	assert_int_equal(store_gpt_entries_encode(&g, scratch, sizeof scratch, &crc), -E_INVAL);
	spec(&g, 512, 4096, 0);
	memset(g.parts[0].type, 0, 16);
	assert_int_equal(store_gpt_entries_encode(&g, scratch, sizeof scratch, &crc), -E_INVAL);
	spec(&g, 512, 4096, 0);
	assert_int_equal(store_gpt_entries_encode(&g, scratch, 16383, &crc), -E_INVAL);
	assert_int_equal(store_gpt_header_encode(&g, false, 0, blk, 511), -E_INVAL);
	g.disk_blocks = 60;
	assert_int_equal(store_gpt_header_encode(&g, false, 0, blk, sizeof blk), -E_INVAL);
}

/* ---- rejections ---- */

struct hdr_case {
	const char *name;
	bool backup;   /* mutate and decode the backup header */
	uint32_t off;  /* field offset */
	uint32_t width; /* 1, 4 or 8 bytes */
	uint64_t value;
	bool keep_crc; /* do not fix the header CRC after the change */
	enum store_gpt_rej want;
};

#define N_BLK 4096u /* the test disk: 4096 blocks of 512 bytes */
static const struct hdr_case hdr_cases[] = {
	{ "signature", false, STORE_GPT_OFF_SIG, 1, 'X', false, STORE_GPT_REJ_SIGNATURE },
	{ "revision 2.0", false, STORE_GPT_OFF_REVISION, 4, 0x00020000u, false, STORE_GPT_REJ_REVISION },
	{ "header size 91", false, STORE_GPT_OFF_HDR_SIZE, 4, 91, false, STORE_GPT_REJ_HDR_SIZE },
	{ "header size > block", false, STORE_GPT_OFF_HDR_SIZE, 4, 513, true, STORE_GPT_REJ_HDR_SIZE },
	{ "header crc", false, STORE_GPT_OFF_FIRST_USABLE, 1, 35, true, STORE_GPT_REJ_HDR_CRC },
	{ "reserved", false, STORE_GPT_OFF_RESERVED, 4, 1, false, STORE_GPT_REJ_RESERVED },
	{ "my lba", false, STORE_GPT_OFF_MY_LBA, 8, 2, false, STORE_GPT_REJ_MY_LBA },
	{ "alternate outside", false, STORE_GPT_OFF_ALT_LBA, 8, N_BLK, false, STORE_GPT_REJ_ALT_LBA },
	{ "alternate in usable", false, STORE_GPT_OFF_ALT_LBA, 8, 100, false, STORE_GPT_REJ_ALT_LBA },
	{ "first after last", false, STORE_GPT_OFF_FIRST_USABLE, 8, N_BLK - 33, false, STORE_GPT_REJ_USABLE },
	{ "last outside", false, STORE_GPT_OFF_LAST_USABLE, 8, N_BLK, false, STORE_GPT_REJ_USABLE },
	{ "first over header", false, STORE_GPT_OFF_FIRST_USABLE, 8, 1, false, STORE_GPT_REJ_USABLE },
	{ "entry size 256", false, STORE_GPT_OFF_ENTRY_SIZE, 4, 256, false, STORE_GPT_REJ_ENTRY_SIZE },
	{ "no entries", false, STORE_GPT_OFF_N_ENTRIES, 4, 0, false, STORE_GPT_REJ_N_ENTRIES },
	{ "129 entries", false, STORE_GPT_OFF_N_ENTRIES, 4, 129, false, STORE_GPT_REJ_N_ENTRIES },
	{ "array over header", false, STORE_GPT_OFF_ENTRIES_LBA, 8, 1, false, STORE_GPT_REJ_ENTRIES_LBA },
	{ "array into usable", false, STORE_GPT_OFF_ENTRIES_LBA, 8, 3, false, STORE_GPT_REJ_ENTRIES_LBA },
	{ "array huge lba", false, STORE_GPT_OFF_ENTRIES_LBA, 8, UINT64_MAX, false, STORE_GPT_REJ_ENTRIES_LBA },
	{ "backup my lba", true, STORE_GPT_OFF_MY_LBA, 8, 1, false, STORE_GPT_REJ_MY_LBA },
	{ "backup alternate", true, STORE_GPT_OFF_ALT_LBA, 8, 2, false, STORE_GPT_REJ_ALT_LBA },
	{ "backup inside usable", true, STORE_GPT_OFF_LAST_USABLE, 8, N_BLK - 1, false, STORE_GPT_REJ_USABLE },
	{ "backup array in usable", true, STORE_GPT_OFF_ENTRIES_LBA, 8, N_BLK - 40, false, STORE_GPT_REJ_ENTRIES_LBA },
	{ "backup array over header", true, STORE_GPT_OFF_ENTRIES_LBA, 8, N_BLK - 32, false, STORE_GPT_REJ_ENTRIES_LBA },
};

static void t_header_rejections(void **state)
{
	(void)state;
	struct memdisk *m = md_new(N_BLK, 512);
	struct store_gpt_new g;
	spec(&g, 512, N_BLK, 1);
	build(m, &g);
	for (size_t i = 0; i < sizeof hdr_cases / sizeof hdr_cases[0]; i++) {
		const struct hdr_case *c = &hdr_cases[i];
		uint64_t lba = c->backup ? N_BLK - 1u : 1u;
		uint8_t blk[512];
		memcpy(blk, m->img + lba * 512u, sizeof blk);
		if (c->width == 1)
			blk[c->off] = (uint8_t)c->value;
		else if (c->width == 4)
			st_le32(blk + c->off, (uint32_t)c->value);
		else
			st_le64(blk + c->off, c->value);
		if (!c->keep_crc)
			fix_hdr_crc(blk);
		struct store_gpt d;
		enum store_gpt_rej rej = STORE_GPT_OK;
		int err = store_gpt_header_decode(blk, sizeof blk, 512, N_BLK, lba, &d, &rej);
		if (rej != c->want)
			print_error("%s: %s, expected %s\n", c->name, store_gpt_rej_name(rej), store_gpt_rej_name(c->want));
		assert_int_equal(err, -E_CORRUPT);
		assert_int_equal(rej, c->want);
	}
	/* a disk too small, a buffer too short for a header */
	struct store_gpt d;
	enum store_gpt_rej rej;
	assert_int_equal(store_gpt_header_decode(m->img + 512, 512, 512, 2, 1, &d, &rej), -E_CORRUPT);
	assert_int_equal(rej, STORE_GPT_REJ_DISK);
	assert_int_equal(store_gpt_header_decode(m->img + 512, 91, 512, N_BLK, 1, &d, &rej), -E_CORRUPT);
	assert_int_equal(rej, STORE_GPT_REJ_HDR_SIZE);
	/* a larger header (with zeros after the 92 bytes) is fine */
	uint8_t blk[512];
	memcpy(blk, m->img + 512, sizeof blk);
	st_le32(blk + STORE_GPT_OFF_HDR_SIZE, 512);
	fix_hdr_crc(blk);
	assert_int_equal(store_gpt_header_decode(blk, sizeof blk, 512, N_BLK, 1, &d, &rej), 0);
	md_free(m);
}

static void t_entry_rejections(void **state)
{
	(void)state;
	struct memdisk *m = md_new(N_BLK, 512);
	struct store_gpt_new g;
	spec(&g, 512, N_BLK, 1);
	build(m, &g);
	struct store_gpt h, d;
	enum store_gpt_rej rej;
	assert_int_equal(store_gpt_header_decode(m->img + 512, 512, 512, N_BLK, 1, &h, &rej), 0);
	static const struct {
		const char *name;
		uint32_t entry, off;
		uint64_t value;
		bool keep_crc;
		enum store_gpt_rej want;
	} cases[] = {
		{ "array crc", 5, STORE_GPT_ENT_OFF_NAME, 'x', true, STORE_GPT_REJ_ENTRIES_CRC },
		{ "last before first", 0, STORE_GPT_ENT_OFF_LAST, 33, false, STORE_GPT_REJ_PART_RANGE },
		{ "before first usable", 0, STORE_GPT_ENT_OFF_FIRST, 33, false, STORE_GPT_REJ_PART_RANGE },
		{ "after last usable", 2, STORE_GPT_ENT_OFF_LAST, N_BLK - 33, false, STORE_GPT_REJ_PART_RANGE },
		{ "huge last", 2, STORE_GPT_ENT_OFF_LAST, UINT64_MAX, false, STORE_GPT_REJ_PART_RANGE },
		{ "overlap", 1, STORE_GPT_ENT_OFF_FIRST, 100, false, STORE_GPT_REJ_PART_OVERLAP },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint8_t *arr = scratch;
		memcpy(arr, m->img + 2u * 512u, STORE_GPT_ARRAY_BYTES);
		uint8_t *e = arr + cases[i].entry * STORE_GPT_ENTRY_BYTES + cases[i].off;
		if (cases[i].off == STORE_GPT_ENT_OFF_NAME)
			e[0] = (uint8_t)cases[i].value;
		else
			st_le64(e, cases[i].value);
		d = h;
		if (!cases[i].keep_crc)
			d.entries_crc = crc32_ieee(0, arr, STORE_GPT_ARRAY_BYTES);
		rej = STORE_GPT_OK;
		assert_int_equal(store_gpt_entries_decode(arr, STORE_GPT_ARRAY_BYTES, &d, &rej), -E_CORRUPT);
		assert_false(d.has_esp || d.has_data || d.n_used); /* nothing half-filled */
		if (rej != cases[i].want)
			print_error("%s: %s\n", cases[i].name, store_gpt_rej_name(rej));
		assert_int_equal(rej, cases[i].want);
	}
	/* fewer entries than 128: only those are covered by the CRC and checked */
	d = h;
	d.n_entries = 4;
	memcpy(scratch, m->img + 2u * 512u, STORE_GPT_ARRAY_BYTES);
	st_le64(scratch + 10 * STORE_GPT_ENTRY_BYTES + STORE_GPT_ENT_OFF_FIRST, 7); /* entry 10: not looked at */
	scratch[10 * STORE_GPT_ENTRY_BYTES] = 1;
	d.entries_crc = crc32_ieee(0, scratch, 4 * STORE_GPT_ENTRY_BYTES);
	assert_int_equal(store_gpt_entries_decode(scratch, 4 * STORE_GPT_ENTRY_BYTES, &d, &rej), 0);
	assert_int_equal(d.n_used, 3);
	assert_int_equal(store_gpt_entries_decode(scratch, 4 * STORE_GPT_ENTRY_BYTES - 1, &d, &rej), -E_INVAL);
	md_free(m);
}

/* ---- loading: fallback and errors ---- */

static void t_backup_fallback(void **state)
{
	(void)state;
	struct memdisk *m = md_new(N_BLK, 512);
	struct store_gpt_new g;
	spec(&g, 512, N_BLK, 0);
	build(m, &g);
	struct store_gpt_src src = md_src(m);
	struct store_gpt d;
	struct store_gpt_verdict v;

	/* primary entries damaged: the header alone is sound, the backup is used */
	m->img[2 * 512 + 60] ^= 1;
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), 0);
	assert_true(v.from_backup);
	assert_int_equal(v.primary, STORE_GPT_REJ_ENTRIES_CRC);
	assert_int_equal(v.backup, STORE_GPT_OK);
	assert_int_equal(d.my_lba, N_BLK - 1);
	assert_true(d.has_data && d.has_esp);

	/* and the backup damaged too: no GPT */
	m->img[(N_BLK - 1) * 512 + STORE_GPT_OFF_DISK_GUID] ^= 1;
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), -E_CORRUPT);
	assert_int_equal(v.primary, STORE_GPT_REJ_ENTRIES_CRC);
	assert_int_equal(v.backup, STORE_GPT_REJ_HDR_CRC);
	assert_false(d.has_data);
	md_free(m);

	/* The disk grew by 1000 blocks: the backup is where the primary's AlternateLBA says. */
	m = md_new(N_BLK + 1000, 512);
	struct memdisk *old = md_new(N_BLK, 512);
	build(old, &g);
	memcpy(m->img, old->img, (size_t)N_BLK * 512);
	md_free(old);
	src = md_src(m);
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), 0);
	assert_false(v.from_backup);
	assert_int_equal(d.alt_lba, N_BLK - 1);
	m->img[2 * 512 + 60] ^= 1; /* primary array: the header still points at the old end */
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), 0);
	assert_true(v.from_backup);
	assert_int_equal(d.my_lba, N_BLK - 1);
	m->img[512 + STORE_GPT_OFF_DISK_GUID] ^= 1; /* primary header unsound: nothing says where */
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), -E_CORRUPT);
	assert_int_equal(v.primary, STORE_GPT_REJ_HDR_CRC);
	assert_int_equal(v.backup, STORE_GPT_REJ_SIGNATURE);
	md_free(m);
}

static void t_load_errors(void **state)
{
	(void)state;
	struct memdisk *m = md_new(N_BLK, 512);
	struct store_gpt_new g;
	spec(&g, 512, N_BLK, 0);
	build(m, &g);
	struct store_gpt_src src = md_src(m);
	struct store_gpt d;
	struct store_gpt_verdict v;
	m->img[512 + 70] ^= 1; /* primary header invalid: three reads until the backup is loaded */
	for (int k = 0; k < 3; k++) {
		m->reads = 0;
		m->fail_read = k;
		assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), -E_IO);
	}
	m->reads = 0;
	m->fail_read = -1;
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), 0);
	assert_int_equal(m->reads, 3); /* the primary header failed: its array was never read */
	assert_int_equal(store_gpt_load(&src, scratch, 16383, &d, &v), -E_INVAL);
	src.block_size = 768;
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), -E_INVAL);
	src = md_src(m);
	src.disk_blocks = 2;
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), -E_CORRUPT);
	assert_int_equal(v.primary, STORE_GPT_REJ_DISK);
	md_free(m);
}

/* ---- what an interrupted GPT write leaves ---- */

static void t_footprint(void **state)
{
	(void)state;
	struct store_gpt_new g;
	spec(&g, 512, N_BLK, 0);
	struct memdisk *full = md_new(N_BLK, 512);
	build(full, &g);
	const uint64_t eb = 32;
	/* the pieces: MBR, primary header, primary array, backup array, backup header */
	const uint64_t at[5] = { 0, 1, 2, N_BLK - 1 - eb, N_BLK - 1 };
	const uint64_t len[5] = { 1, 1, eb, eb, 1 };
	for (uint32_t mask = 0; mask < 32; mask++) {
		struct memdisk *m = md_new(N_BLK, 512);
		for (int p = 0; p < 5; p++)
			if (mask & (1u << p))
				memcpy(m->img + at[p] * 512, full->img + at[p] * 512, len[p] * 512);
		struct store_gpt_src src = md_src(m);
		struct store_gpt d;
		struct store_gpt_verdict v;
		bool primary = (mask & 6u) == 6u, backup = (mask & 24u) == 24u;
		int err = store_gpt_load(&src, scratch, sizeof scratch, &d, &v);
		assert_int_equal(err, primary || backup ? 0 : -E_CORRUPT);
		enum store_gpt_footprint fp;
		assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), 0);
		/* a header with its own array is a valid copy, so not a partial write */
		enum store_gpt_footprint want = mask == 0 ? STORE_GPT_FP_ZERO
					      : primary || backup ? STORE_GPT_FP_OTHER
								  : STORE_GPT_FP_PARTIAL;
		assert_int_equal(fp, want);
		md_free(m);
	}
	/* pieces that are not ours */
	struct store_gpt_new other;
	spec(&other, 512, N_BLK, 1);
	struct memdisk *o = md_new(N_BLK, 512);
	build(o, &other);
	static const struct { const char *name; int piece; } cases[] = {
		{ "array with a Linux partition", 2 }, { "backup array with a Linux partition", 3 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct memdisk *m = md_new(N_BLK, 512);
		int p = cases[i].piece;
		memcpy(m->img + at[p] * 512, o->img + at[p] * 512, len[p] * 512);
		struct store_gpt_src src = md_src(m);
		enum store_gpt_footprint fp;
		assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), 0);
		assert_int_equal(fp, STORE_GPT_FP_OTHER);
		md_free(m);
	}
	struct memdisk *m = md_new(N_BLK, 512);
	struct store_gpt_src src = md_src(m);
	enum store_gpt_footprint fp;
	/* a header of another geometry (first usable 2048, as many tools write) */
	memcpy(m->img + 512, full->img + 512, 512);
	st_le64(m->img + 512 + STORE_GPT_OFF_FIRST_USABLE, 2048);
	fix_hdr_crc(m->img + 512);
	assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), 0);
	assert_int_equal(fp, STORE_GPT_FP_OTHER);
	/* our protective MBR over a boot loader's code and disk signature (what the format
	 * keeps): ours; a partition record or the signature changed: not ours */
	memset(m->img, 0, 1024);
	memcpy(m->img, full->img, 512);
	m->img[0] = 0xeb;
	m->img[STORE_MBR_OFF_PARTS - 8] = 0x5a; /* the disk signature at 440 */
	assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), 0);
	assert_int_equal(fp, STORE_GPT_FP_PARTIAL);
	m->img[STORE_MBR_OFF_PARTS + STORE_MBR_PART_OFF_TYPE] = 0x83;
	assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), 0);
	assert_int_equal(fp, STORE_GPT_FP_OTHER);
	memcpy(m->img, full->img, 512);
	m->img[510] = 0;
	assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), 0);
	assert_int_equal(fp, STORE_GPT_FP_OTHER);
	/* an array holding a BIOS boot partition besides ESP and data (the release disk's) */
	memset(m->img, 0, 1024);
	{
		struct store_gpt_new gb = g;
		struct store_gpt_new_part *b = &gb.parts[gb.n_parts++];
		guid(STORE_GPT_TYPE_BIOS, b->type);
		guid("21212121-2222-4333-8444-555555555555", b->guid);
		b->first_lba = gb.parts[1].last_lba + 1u;
		b->last_lba = b->first_lba + 7u;
		b->name = "BIOS boot partition";
		uint32_t crc;
		assert_int_equal(store_gpt_entries_encode(&gb, scratch, sizeof scratch, &crc), 0);
		memcpy(m->img + 2 * 512, scratch, eb * 512);
		assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), 0);
		assert_int_equal(fp, STORE_GPT_FP_PARTIAL);
		memset(m->img + 2 * 512, 0, eb * 512);
	}
	/* a byte after our header in its block */
	memset(m->img, 0, 1024);
	memcpy(m->img + 512, full->img + 512, 512);
	m->img[512 + 200] = 1;
	assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), 0);
	assert_int_equal(fp, STORE_GPT_FP_OTHER);
	/* a disk too small for a GPT has no footprint */
	src.disk_blocks = 60;
	assert_int_equal(store_gpt_footprint_check(&src, scratch, sizeof scratch, &fp), -E_RANGE);
	md_free(m);
	md_free(o);
	md_free(full);
}

/* The format and a growth write the protective MBR over LBA 0 as read: a boot loader's
 * code and disk signature (bytes 0..445) stay, the records, the signature and the rest of
 * the block are ours. */
static void t_mbr_keeps_boot_code(void **state)
{
	(void)state;
	static const uint32_t sizes[] = { 512, 4096 };
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		uint32_t bs = sizes[k];
		uint8_t *blk = malloc(bs), *want = malloc(bs);
		assert_non_null(blk);
		assert_non_null(want);
		for (uint32_t i = 0; i < bs; i++)
			blk[i] = (uint8_t)(i * 7u + 3u); /* boot code, signature, old records, junk after */
		store_gpt_mbr_encode(want, bs, 123456);
		memcpy(want, blk, STORE_MBR_OFF_PARTS);
		store_gpt_mbr_protect(blk, bs, 123456);
		assert_memory_equal(blk, want, bs);
		assert_int_equal(blk[STORE_MBR_OFF_PARTS + STORE_MBR_PART_OFF_TYPE], STORE_MBR_TYPE_PROTECTIVE);
		assert_int_equal(ld_le32(blk + STORE_MBR_OFF_PARTS + STORE_MBR_PART_OFF_SIZE), 123455);
		/* the plain encoder zeroes them */
		store_gpt_mbr_encode(blk, bs, 123456);
		for (size_t i = 0; i < STORE_MBR_OFF_PARTS; i++)
			assert_int_equal(blk[i], 0);
		free(blk);
		free(want);
	}
}

/* A BIOS boot partition entry decodes as such (the release disk's GRUB core). */
static void t_bios_entry(void **state)
{
	(void)state;
	struct store_gpt_new g;
	spec(&g, 512, N_BLK, 0);
	struct store_gpt_new_part *b = &g.parts[g.n_parts++];
	guid(STORE_GPT_TYPE_BIOS, b->type);
	guid("21212121-2222-4333-8444-555555555555", b->guid);
	b->first_lba = g.parts[1].last_lba + 1u;
	b->last_lba = b->first_lba + 7u;
	b->name = "BIOS boot partition";
	struct memdisk *m = md_new(N_BLK, 512);
	build(m, &g);
	struct store_gpt_src src = md_src(m);
	struct store_gpt d;
	struct store_gpt_verdict v;
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), 0);
	assert_int_equal(d.n_used, 3);
	assert_true(d.has_esp && d.has_data && d.has_bios);
	assert_int_equal(d.bios.index, 2);
	assert_int_equal(d.bios.first_lba, b->first_lba);
	assert_int_equal(d.bios.last_lba, b->last_lba);
	assert_memory_equal(d.bios.guid, b->guid, 16);
	/* without it: has_bios false */
	g.n_parts--;
	struct memdisk *m2 = md_new(N_BLK, 512);
	build(m2, &g);
	src = md_src(m2);
	assert_int_equal(store_gpt_load(&src, scratch, sizeof scratch, &d, &v), 0);
	assert_false(d.has_bios);
	md_free(m);
	md_free(m2);
}

static void t_rej_names(void **state)
{
	(void)state;
	for (int r = 0; r < STORE_GPT_REJ__COUNT; r++) {
		assert_non_null(store_gpt_rej_name((enum store_gpt_rej)r));
		assert_string_not_equal(store_gpt_rej_name((enum store_gpt_rej)r), "?");
	}
	assert_string_equal(store_gpt_rej_name(STORE_GPT_REJ__COUNT), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_guid_text),
		cmocka_unit_test(t_known_header_crc),
		cmocka_unit_test(t_matches_sfdisk),
		cmocka_unit_test(t_roundtrip_block_sizes),
		cmocka_unit_test(t_encode_refuses),
		cmocka_unit_test(t_header_rejections),
		cmocka_unit_test(t_entry_rejections),
		cmocka_unit_test(t_backup_fallback),
		cmocka_unit_test(t_load_errors),
		cmocka_unit_test(t_footprint),
		cmocka_unit_test(t_mbr_keeps_boot_code),
		cmocka_unit_test(t_bios_entry),
		cmocka_unit_test(t_rej_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
