/* SPDX-License-Identifier: MIT
 *
 * tools/disk/check.c, the pure pieces of urmqtt-disk: where a telemetry segment's valid
 * records end and why, on segments the broker's own writer (store/tlog.h over
 * tests/support/fake_blk) wrote: a clean end, a record damaged inside a sector at every
 * position (BROKEN, with the offset), a damaged skip marker, a newer segment over an older one
 * in a reused slot (a stale tail at a sector boundary: not damage), a first record of a later
 * write-out damaged (indistinguishable from a stale tail: the documented limit), a slot filled
 * to its last byte, headers absent or damaged; SQLite's database and WAL headers (every field,
 * page size 1 = 65536, refused page sizes, the size-validity rule, absent and zero bytes) and
 * a header's size against its file's room; the names of regions and extents on a grown disk;
 * sizes, GUID text; times, numbers and backup slot names from the command line, with their
 * rejections.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "store/tlog.h"
#include "store/tlog_scan.h"
#include "tests/support/fake_blk.h"
#include "tools/disk/disk.h"

#define KiB 1024u
#define SECTOR 512u
#define SEG (8u * KiB)
#define NSEG 4u
#define WALL0 INT64_C(1700000000000)

static uint64_t fake_ns;

static uint64_t clock_ns(void *ctx)
{
	(void)ctx;
	return fake_ns += 1000u;
}

/* ---- a telemetry log written by the broker's writer on a simulated disk ---- */

struct fx {
	struct fake_blk *fb;
	struct store_dev d;
	uint8_t bounce[64 * KiB];
	uint8_t io[SEG];
	struct store_tlog_config cfg;
	void *mem;
	size_t mem_len;
	struct store_tlog *t;
	uint8_t seg[SEG];
	uint32_t n_rec;
};

static uint64_t region_bytes(void)
{
	return 2u * SECTOR + (uint64_t)NSEG * SEG;
}

static struct fx *fx_new(void)
{
	struct fx *x = calloc(1, sizeof *x);
	assert_non_null(x);
	const struct fake_blk_config c = { .blocks = region_bytes() / SECTOR, .block_size = SECTOR };
	x->fb = fake_blk_new(&c);
	assert_non_null(x->fb);
	const struct store_dev_port port = { .now_ns = clock_ns };
	assert_int_equal(store_dev_init(&x->d, fake_blk_dev(x->fb), x->bounce, sizeof x->bounce, 1000, &port), 0);
	x->cfg = (struct store_tlog_config){ .dev = &x->d, .lba = 0, .blocks = region_bytes() / SECTOR,
					     .partitions = 1, .segment_bytes = SEG, .flush_bytes = 64 * KiB,
					     .io = x->io, .io_len = sizeof x->io };
	x->mem_len = store_tlog_mem_size(&x->cfg);
	assert_true(x->mem_len > 0);
	x->mem = aligned_alloc(8, (x->mem_len + 7u) & ~(size_t)7u);
	assert_non_null(x->mem);
	assert_int_equal(store_tlog_open(&x->t, x->mem, x->mem_len, &x->cfg, WALL0), 0);
	assert_int_equal(store_tlog_geometry(x->t)->segments, NSEG);
	assert_int_equal(store_tlog_geometry(x->t)->sector, SECTOR);
	return x;
}

static void fx_free(struct fx *x)
{
	fake_blk_free(x->fb);
	free(x->mem);
	free(x);
}

/* Append n records (payload "p-<i>" padded to plen bytes), then write out. */
static void fx_write(struct fx *x, uint32_t n, uint32_t plen)
{
	for (uint32_t i = 0; i < n; i++) {
		uint8_t payload[256];
		memset(payload, 'x', sizeof payload);
		snprintf((char *)payload, sizeof payload, "p-%u", (unsigned)++x->n_rec);
		static const char id[] = "dev-1", topic[] = "devices/dev-1/telemetry";
		const struct store_tlog_rec r = { .wall_ms = WALL0 + x->n_rec, .mono_ns = x->n_rec, .qos = 1,
						  .id = (const uint8_t *)id, .id_len = sizeof id - 1,
						  .topic = (const uint8_t *)topic, .topic_len = sizeof topic - 1,
						  .payload = payload, .payload_len = plen };
		assert_int_equal(store_tlog_append(x->t, 0, &r), 0);
	}
	assert_int_equal(store_tlog_write_out(x->t), 0);
	assert_int_equal(store_dev_flush(&x->d), 0);
}

/* The segment in slot k, as the disk holds it, into x->seg. */
static void fx_slot(struct fx *x, uint32_t k)
{
	size_t size;
	const uint8_t *img = fake_blk_bytes(x->fb, &size);
	const struct store_tlog_geom *g = store_tlog_geometry(x->t);
	uint64_t off = store_tlog_slot_off(g, 0, k);
	assert_true(off + SEG <= size);
	memcpy(x->seg, img + off, SEG);
}

/* The slot of the partition's newest segment. */
static uint32_t fx_newest(struct fx *x)
{
	struct store_tlog_slot_ref order[NSEG];
	struct store_tlog_scan s;
	assert_int_equal(store_tlog_scan_start(&s, &x->d, 0, store_tlog_geometry(x->t), 0, x->io, order, 0), 0);
	assert_true(s.n_order > 0);
	return order[s.n_order - 1u].slot;
}

/* Record offsets in a segment: walk the cursor, noting where each record starts. */
static uint32_t rec_offsets(const uint8_t *seg, size_t *offs, uint32_t cap)
{
	struct store_tlog_cursor c;
	assert_int_equal(store_tlog_cursor_init(&c, seg, SEG, SECTOR), 0);
	struct store_tlog_rec r;
	uint32_t n = 0;
	size_t at = c.off;
	while (store_tlog_cursor_next(&c, &r) == 1 && n < cap) {
		while (ld_le32(seg + at) == 0) /* a valid skip marker first */
			at = (at / SECTOR + 1u) * SECTOR;
		offs[n++] = at;
		at = c.off;
	}
	return n;
}

static void t_clean_end(void **state)
{
	(void)state;
	struct fx *x = fx_new();
	fx_write(x, 5, 20);
	fx_slot(x, 0);
	struct disk_seg_check c;
	assert_int_equal(disk_seg_check(x->seg, SEG, SECTOR, &c), 0);
	assert_int_equal(c.records, 5);
	assert_int_equal(c.end, DISK_SEG_END_ZERO);
	assert_int_equal(c.end_off, SECTOR); /* the write-out's marker skips to the sector's end */
	assert_int_equal(c.end_len, 0);
	assert_true(c.skipped_bytes > 0);
	assert_int_equal(c.first_wall_ms, WALL0 + 1);
	assert_int_equal(c.last_wall_ms, WALL0 + 5);
	assert_int_equal(c.hdr.partition, 0);
	assert_int_equal(c.hdr.slot, 0);
	assert_string_equal(disk_seg_end_name(c.end), "end");
	fx_free(x);
}

/* A byte of every record changed, one at a time: BROKEN exactly there, the records before it
 * still counted. Every position of the body and the record header is tried. */
static void t_damage_every_record(void **state)
{
	(void)state;
	struct fx *x = fx_new();
	fx_write(x, 5, 20);
	fx_slot(x, 0);
	size_t offs[8];
	assert_int_equal(rec_offsets(x->seg, offs, 8), 5);
	uint8_t orig[SEG];
	memcpy(orig, x->seg, SEG);
	for (uint32_t i = 0; i < 5; i++) {
		uint32_t body = ld_le32(orig + offs[i]);
		for (uint32_t b = 0; b < 8u + body; b++) {
			memcpy(x->seg, orig, SEG);
			x->seg[offs[i] + b] ^= 0x40;
			struct disk_seg_check c;
			assert_int_equal(disk_seg_check(x->seg, SEG, SECTOR, &c), 0);
			assert_int_equal(c.records, i);
			assert_int_equal(c.end, DISK_SEG_END_BROKEN);
			assert_int_equal(c.end_off, offs[i]);
			assert_int_equal(c.end_len, ld_le32(x->seg + offs[i]));
		}
	}
	/* The skip marker after the last record: its CRC changed. */
	size_t marker = offs[4] + ((8u + ld_le32(orig + offs[4]) + 7u) & ~7u);
	assert_int_equal(ld_le32(orig + marker), 0);
	memcpy(x->seg, orig, SEG);
	x->seg[marker + 5] ^= 1;
	struct disk_seg_check c;
	assert_int_equal(disk_seg_check(x->seg, SEG, SECTOR, &c), 0);
	assert_int_equal(c.records, 5);
	assert_int_equal(c.end, DISK_SEG_END_BROKEN);
	assert_int_equal(c.end_off, marker);
	assert_int_equal(c.end_len, 0);
	assert_string_equal(disk_seg_end_name(c.end), "BROKEN");
	fx_free(x);
}

/* Two write-outs: the second starts at a sector boundary. Damage to its first record cannot be
 * told from a stale tail (the limit docs/DISK.md states); damage to its second one can. */
static void t_second_writeout(void **state)
{
	(void)state;
	struct fx *x = fx_new();
	fx_write(x, 3, 20);
	fx_write(x, 3, 20);
	fx_slot(x, 0);
	size_t offs[8];
	assert_int_equal(rec_offsets(x->seg, offs, 8), 6);
	assert_int_equal(offs[3], SECTOR);
	struct disk_seg_check c;
	assert_int_equal(disk_seg_check(x->seg, SEG, SECTOR, &c), 0);
	assert_int_equal(c.records, 6);
	assert_int_equal(c.end, DISK_SEG_END_ZERO);
	assert_int_equal(c.end_off, 2u * SECTOR);
	uint8_t orig[SEG];
	memcpy(orig, x->seg, SEG);
	x->seg[offs[3] + 40] ^= 1;
	assert_int_equal(disk_seg_check(x->seg, SEG, SECTOR, &c), 0);
	assert_int_equal(c.records, 3);
	assert_int_equal(c.end, DISK_SEG_END_TAIL);
	assert_int_equal(c.end_off, SECTOR);
	memcpy(x->seg, orig, SEG);
	x->seg[offs[4] + 40] ^= 1;
	assert_int_equal(disk_seg_check(x->seg, SEG, SECTOR, &c), 0);
	assert_int_equal(c.records, 4);
	assert_int_equal(c.end, DISK_SEG_END_BROKEN);
	assert_int_equal(c.end_off, offs[4]);
	fx_free(x);
}

/* The ring wraps: the newest segment lies over a fuller, older one in the same slot. Its data
 * ends at a sector boundary followed by the older segment's records, salted with another
 * sequence: a stale tail, not damage. */
static void t_stale_tail_after_wrap(void **state)
{
	(void)state;
	struct fx *x = fx_new();
	/* 2 records of ~200 bytes per write-out: each write-out takes one sector. */
	uint32_t rounds = 0;
	do {
		fx_write(x, 2, 150);
		rounds++;
	} while ((fx_newest(x) != 0 || rounds < 2u * NSEG * (SEG / SECTOR) / 2u) && rounds < 1000);
	/* Now the newest segment is in slot 0 again, after at least one full pass. */
	assert_int_equal(fx_newest(x), 0);
	fx_slot(x, 0);
	struct disk_seg_check c;
	assert_int_equal(disk_seg_check(x->seg, SEG, SECTOR, &c), 0);
	assert_true(c.records >= 2);
	assert_int_equal(c.end_off % SECTOR, 0);
	assert_int_equal(c.end, DISK_SEG_END_TAIL);
	assert_true(c.end_len > 0);
	assert_string_equal(disk_seg_end_name(c.end), "stale-or-cut-tail");
	fx_free(x);
}

/* A slot filled to its last byte (records built with the codec): FULL. */
static void t_full_slot(void **state)
{
	(void)state;
	static const char id[] = "d", topic[] = "t";
	const struct store_tlog_rec r = { .wall_ms = WALL0, .qos = 0, .id = (const uint8_t *)id, .id_len = 1,
					  .topic = (const uint8_t *)topic, .topic_len = 1 };
	size_t sz = store_tlog_rec_size(&r);
	size_t len = STORE_TLOG_SEG_HDR + 10u * sz;
	uint8_t *seg = calloc(1, len);
	assert_non_null(seg);
	const struct store_tlog_seg h = { .partition = 0, .slot = 2, .seq = 77, .first_wall_ms = WALL0 };
	store_tlog_seg_encode(&h, seg);
	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(store_tlog_rec_encode(&r, 77, seg + STORE_TLOG_SEG_HDR + i * sz, sz), sz);
	struct disk_seg_check c;
	assert_int_equal(disk_seg_check(seg, len, SECTOR, &c), 0);
	assert_int_equal(c.records, 10);
	assert_int_equal(c.end, DISK_SEG_END_FULL);
	assert_int_equal(c.end_off, len);
	assert_int_equal(c.hdr.seq, 77);
	assert_int_equal(c.hdr.slot, 2);
	/* The same records under another segment's sequence: none validates (the salt). */
	const struct store_tlog_seg h2 = { .partition = 0, .slot = 2, .seq = 78, .first_wall_ms = WALL0 };
	store_tlog_seg_encode(&h2, seg);
	assert_int_equal(disk_seg_check(seg, len, SECTOR, &c), 0);
	assert_int_equal(c.records, 0);
	assert_int_equal(c.end, DISK_SEG_END_BROKEN);
	assert_int_equal(c.end_off, STORE_TLOG_SEG_HDR);
	free(seg);
}

static void t_headers(void **state)
{
	(void)state;
	uint8_t seg[4096] = { 0 };
	struct disk_seg_check c;
	assert_int_equal(disk_seg_check(seg, sizeof seg, SECTOR, &c), -E_NOENT);
	seg[3] = 1;
	assert_int_equal(disk_seg_check(seg, sizeof seg, SECTOR, &c), -E_CORRUPT);
	const struct store_tlog_seg h = { .partition = 1, .slot = 0, .seq = 5 };
	store_tlog_seg_encode(&h, seg);
	assert_int_equal(disk_seg_check(seg, sizeof seg, SECTOR, &c), 0);
	assert_int_equal(c.records, 0);
	assert_int_equal(c.end, DISK_SEG_END_BROKEN); /* the writer never leaves a header alone */
	seg[60] ^= 1;                                 /* the header's CRC */
	assert_int_equal(disk_seg_check(seg, sizeof seg, SECTOR, &c), -E_CORRUPT);
	assert_int_equal(disk_seg_check(seg, sizeof seg, 1000, &c), -E_INVAL);
	assert_int_equal(disk_seg_check(seg, sizeof seg, 256, &c), -E_INVAL);
	assert_int_equal(disk_seg_check(NULL, 0, SECTOR, &c), -E_INVAL);
	assert_int_equal(disk_seg_check(seg, 10, SECTOR, &c), -E_CORRUPT); /* shorter than a header */
}

/* ---- SQLite's headers ---- */

static void sqlite_hdr(uint8_t h[100], uint16_t ps, uint32_t counter, uint32_t pages, uint32_t valid_for)
{
	memset(h, 0, 100);
	memcpy(h, "SQLite format 3", 16);
	st_be16(h + 16, ps);
	h[18] = 2;
	h[19] = 2;
	h[20] = 8;
	st_be32(h + 24, counter);
	st_be32(h + 28, pages);
	st_be32(h + 32, 9);
	st_be32(h + 36, 3);
	st_be32(h + 40, 4);
	st_be32(h + 44, 4);
	st_be32(h + 56, 1);
	st_be32(h + 60, 7);
	st_be32(h + 68, 0x75726d71);
	st_be32(h + 92, valid_for);
	st_be32(h + 96, 3046001);
}

static void t_sqlite_header(void **state)
{
	(void)state;
	uint8_t h[100];
	struct disk_sqlite_hdr d;
	bool zero = true;
	sqlite_hdr(h, 4096, 5, 13, 5);
	assert_int_equal(disk_sqlite_hdr_decode(h, sizeof h, &d, &zero), 0);
	assert_false(zero);
	assert_int_equal(d.page_size, 4096);
	assert_int_equal(d.write_version, 2);
	assert_int_equal(d.read_version, 2);
	assert_int_equal(d.reserved, 8);
	assert_int_equal(d.change_counter, 5);
	assert_int_equal(d.pages, 13);
	assert_int_equal(d.freelist_trunk, 9);
	assert_int_equal(d.freelist_pages, 3);
	assert_int_equal(d.schema_cookie, 4);
	assert_int_equal(d.schema_format, 4);
	assert_int_equal(d.text_encoding, 1);
	assert_int_equal(d.user_version, 7);
	assert_int_equal(d.application_id, 0x75726d71);
	assert_int_equal(d.version_valid_for, 5);
	assert_int_equal(d.sqlite_version, 3046001);
	assert_true(d.pages_valid);
	assert_int_equal(d.bytes, 13u * 4096u);
	/* Page size 1 means 65536. */
	sqlite_hdr(h, 1, 5, 2, 5);
	assert_int_equal(disk_sqlite_hdr_decode(h, sizeof h, &d, NULL), 0);
	assert_int_equal(d.page_size, 65536);
	assert_int_equal(d.bytes, 131072);
	/* The in-header size is not valid when the counters disagree, or it is zero. */
	sqlite_hdr(h, 4096, 6, 13, 5);
	assert_int_equal(disk_sqlite_hdr_decode(h, sizeof h, &d, NULL), 0);
	assert_false(d.pages_valid);
	assert_int_equal(d.bytes, 0);
	sqlite_hdr(h, 4096, 5, 0, 5);
	assert_int_equal(disk_sqlite_hdr_decode(h, sizeof h, &d, NULL), 0);
	assert_false(d.pages_valid);
	/* Page sizes SQLite refuses. */
	static const uint16_t bad[] = { 0, 256, 511, 1000, 4095, 4097, 32769 };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sqlite_hdr(h, bad[i], 5, 13, 5);
		assert_int_equal(disk_sqlite_hdr_decode(h, sizeof h, &d, NULL), -E_CORRUPT);
		assert_int_equal(d.page_size, 0);
	}
	/* No magic: zero, or something else. */
	memset(h, 0, sizeof h);
	assert_int_equal(disk_sqlite_hdr_decode(h, sizeof h, &d, &zero), -E_NOENT);
	assert_true(zero);
	h[99] = 1;
	assert_int_equal(disk_sqlite_hdr_decode(h, sizeof h, &d, &zero), -E_NOENT);
	assert_false(zero);
	sqlite_hdr(h, 4096, 5, 13, 5);
	h[15] = '!'; /* the magic's NUL */
	assert_int_equal(disk_sqlite_hdr_decode(h, sizeof h, &d, &zero), -E_NOENT);
	assert_int_equal(disk_sqlite_hdr_decode(h, 99, &d, &zero), -E_INVAL);
	assert_int_equal(disk_sqlite_hdr_decode(NULL, 100, &d, &zero), -E_INVAL);
}

static void t_wal_header(void **state)
{
	(void)state;
	uint8_t w[32] = { 0 };
	struct disk_wal_hdr d;
	assert_int_equal(disk_wal_hdr_decode(w, sizeof w, &d), -E_NOENT);
	for (uint32_t magic = 0x377f0682u; magic <= 0x377f0683u; magic++) {
		st_be32(w, magic);
		st_be32(w + 4, 3007000);
		st_be32(w + 8, 4096);
		st_be32(w + 12, 17);
		st_be32(w + 16, 0xdeadbeef);
		st_be32(w + 20, 0x01020304);
		assert_int_equal(disk_wal_hdr_decode(w, sizeof w, &d), 0);
		assert_int_equal(d.version, 3007000);
		assert_int_equal(d.page_size, 4096);
		assert_int_equal(d.checkpoint_seq, 17);
		assert_int_equal(d.salt1, 0xdeadbeef);
		assert_int_equal(d.salt2, 0x01020304);
	}
	st_be32(w, 0x377f0684u);
	assert_int_equal(disk_wal_hdr_decode(w, sizeof w, &d), -E_NOENT);
	assert_int_equal(disk_wal_hdr_decode(w, 31, &d), -E_INVAL);
}

/* ---- text and numbers ---- */

static void t_guid_text(void **state)
{
	(void)state;
	/* docs/DISK-FORMAT.md: the data partition's type on disk and as text. */
	static const uint8_t data[16] = { 0x73, 0xa3, 0x15, 0xe1, 0x22, 0xfb, 0x52, 0x4a,
					  0x96, 0xf0, 0x86, 0xc1, 0x1c, 0x6f, 0xb7, 0x6c };
	char t[37];
	disk_guid_text(data, t);
	assert_string_equal(t, STORE_GPT_TYPE_DATA);
	static const uint8_t zero[16] = { 0 };
	disk_guid_text(zero, t);
	assert_string_equal(t, "00000000-0000-0000-0000-000000000000");
}

static void t_times(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		int64_t ms;
	} cases[] = {
		{ "1700000000", WALL0 },
		{ "1700000000123", WALL0 + 123 },
		{ "0", 0 },
		{ "2023-11-14T22:13:20Z", WALL0 },
		{ "2023-11-14T22:13:20.123Z", WALL0 + 123 },
		{ "2023-11-14T22:13:20.5Z", -1 },   /* milliseconds are three digits */
		{ "2023-11-14T22:13:20", -1 },      /* no Z: no time zone guessed */
		{ "2023-11-14T22:13:20+01:00", -1 },
		{ "2023-11-14", -1 },
		{ "-5", -1 },
		{ "12abc", -1 },
		{ "", -1 },
		{ "99999999999999999999", -1 },      /* beyond 64 bits */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t got = disk_parse_time(cases[i].in);
		if (got != cases[i].ms)
			fail_msg("'%s': %lld, want %lld", cases[i].in, (long long)got, (long long)cases[i].ms);
	}
	char t[40];
	disk_iso_time(WALL0 + 123, t, sizeof t);
	assert_string_equal(t, "2023-11-14T22:13:20.123Z");
	disk_iso_time(0, t, sizeof t);
	assert_string_equal(t, "unknown");
	disk_iso_time(-1, t, sizeof t);
	assert_string_equal(t, "unknown");
}

static void t_numbers(void **state)
{
	(void)state;
	uint32_t v = 7;
	assert_int_equal(disk_parse_u32("0", 90, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(disk_parse_u32("90", 90, &v), 0);
	assert_int_equal(v, 90);
	static const char *const bad[] = { "91", "-1", "", " 1", "1 ", "12x", "+5", "0x10", "99999999999999999999" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		v = 7;
		if (disk_parse_u32(bad[i], 90, &v) != -E_INVAL || v != 7)
			fail_msg("'%s' accepted", bad[i]);
	}
	assert_int_equal(disk_parse_u32(NULL, 90, &v), -E_INVAL);
	assert_int_equal(disk_parse_u32("4294967295", UINT32_MAX, &v), 0);
	assert_int_equal(v, UINT32_MAX);
	uint8_t z[9] = { 0 };
	assert_true(disk_all_zero(z, sizeof z));
	z[8] = 1;
	assert_false(disk_all_zero(z, sizeof z));
	assert_true(disk_all_zero(z, 8));
}

/* restore --slot: A or B in either case, nothing else. */
static void t_slot_names(void **state)
{
	(void)state;
	static const struct {
		const char *v;
		uint32_t slot;
	} good[] = { { "A", 1 }, { "a", 1 }, { "B", 2 }, { "b", 2 } };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		uint32_t slot = 0;
		assert_int_equal(disk_parse_slot(good[i].v, &slot), 0);
		assert_int_equal(slot, good[i].slot);
	}
	static const char *const bad[] = { "", "C", "AB", "A ", " B", "1", "2", "0", "slot-a" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint32_t slot = 7;
		if (disk_parse_slot(bad[i], &slot) != -E_INVAL || slot != 7)
			fail_msg("'%s' accepted as a slot", bad[i]);
	}
	uint32_t slot = 7;
	assert_int_equal(disk_parse_slot(NULL, &slot), -E_INVAL);
	assert_int_equal(slot, 7);
}

/* inspect's region rows: the first extent of a kind keeps the kind's name (scripts read the
 * first "region database:" row), later ones say which of how many, in superblock order. */
static void t_region_names(void **state)
{
	(void)state;
	/* A disk formatted, then grown twice (DISK-FORMAT.md section 9): B lengthened, DB and A
	 * appended; then A lengthened, B and DB appended. */
	static const uint32_t kinds[] = { STORE_REGION_DB,	 STORE_REGION_WAL, STORE_REGION_TELEMETRY,
					  STORE_REGION_BACKUP_A, STORE_REGION_BACKUP_B, STORE_REGION_DB,
					  STORE_REGION_BACKUP_A, STORE_REGION_BACKUP_B, STORE_REGION_DB };
	static const char *const want[] = { "database",
					    "wal",
					    "telemetry",
					    "backup-a",
					    "backup-b",
					    "database (extent 2 of 3)",
					    "backup-a (extent 2 of 2)",
					    "backup-b (extent 2 of 2)",
					    "database (extent 3 of 3)" };
	struct store_super sb;
	memset(&sb, 0, sizeof sb);
	sb.n_regions = (uint32_t)(sizeof kinds / sizeof kinds[0]);
	for (uint32_t i = 0; i < sb.n_regions; i++)
		sb.regions[i] = (struct store_region){ .kind = kinds[i], .start = 2048u * (i + 1u), .blocks = 2048u };
	char name[48];
	for (uint32_t i = 0; i < sb.n_regions; i++) {
		disk_region_name(&sb, i, name, sizeof name);
		assert_string_equal(name, want[i]);
	}
	disk_region_name(&sb, sb.n_regions, name, sizeof name); /* past the table */
	assert_string_equal(name, "?");
	sb.n_regions = STORE_MAX_REGIONS + 1u;                 /* a count the decoder would refuse */
	disk_region_name(&sb, STORE_MAX_REGIONS, name, sizeof name);
	assert_string_equal(name, "?");
	sb.n_regions = 9;
	sb.regions[2].kind = 77; /* not a kind: named "?", never indexes past the names */
	disk_region_name(&sb, 2, name, sizeof name);
	assert_string_equal(name, "?");
	assert_string_equal(disk_region_kind_name(STORE_REGION__KINDS), "?");
	assert_string_equal(disk_region_kind_name(STORE_REGION_NONE), "?");
	char small[10];
	disk_region_name(&sb, 8, small, sizeof small); /* truncated, terminated */
	assert_string_equal(small, "database ");
	/* A disk never grown: every region is its kind's only one. */
	sb.n_regions = 5;
	sb.regions[2].kind = STORE_REGION_TELEMETRY;
	for (uint32_t i = 0; i < sb.n_regions; i++) {
		disk_region_name(&sb, i, name, sizeof name);
		assert_string_equal(name, want[i]);
	}
}

/* A header's size against the file's room (all its extents), and sizes as inspect says them. */
static void t_room(void **state)
{
	(void)state;
	struct disk_sqlite_hdr h = { .page_size = 4096, .pages = 4865, .pages_valid = true, .bytes = 4865u * 4096u };
	uint64_t room = 19u << 20; /* 4864 pages */
	assert_true(disk_sqlite_hdr_too_big(&h, room));
	assert_false(disk_sqlite_hdr_too_big(&h, room + 4096u));
	assert_false(disk_sqlite_hdr_too_big(&h, room + 8192u));
	h.pages_valid = false; /* SQLite then takes the file's size: nothing to judge */
	h.bytes = 0;
	assert_false(disk_sqlite_hdr_too_big(&h, 0));
	static const struct {
		uint64_t bytes;
		const char *text;
	} sizes[] = { { 0, "0 B" },
		      { 512, "512 B" },
		      { 1024, "1 KiB" },
		      { 1536, "1536 B" },
		      { 56u * 1024u, "56 KiB" },
		      { 1u << 20, "1 MiB" },
		      { 37u << 20, "37 MiB" },
		      { (3u << 20) + (512u << 10), "3.5 MiB" },
		      { UINT64_C(1) << 40, "1048576 MiB" } };
	char buf[32];
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		assert_string_equal(disk_size_text(sizes[i].bytes, buf, sizeof buf), sizes[i].text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_clean_end),		  cmocka_unit_test(t_damage_every_record),
		cmocka_unit_test(t_second_writeout),	  cmocka_unit_test(t_stale_tail_after_wrap),
		cmocka_unit_test(t_full_slot),		  cmocka_unit_test(t_headers),
		cmocka_unit_test(t_sqlite_header),	  cmocka_unit_test(t_wal_header),
		cmocka_unit_test(t_guid_text),		  cmocka_unit_test(t_times),
		cmocka_unit_test(t_numbers),		  cmocka_unit_test(t_slot_names),
		cmocka_unit_test(t_region_names),	  cmocka_unit_test(t_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
