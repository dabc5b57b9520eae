/* SPDX-License-Identifier: MIT
 *
 * store/layout (disk layout v2, docs/DISK-FORMAT.md) over the simulated disk of
 * tests/support/fake_blk: the superblock codec (round trip, one case per rejection
 * reason); the plan (figures for 512 and 4096-byte blocks, optimal_io 4 MiB, no ESP, no
 * telemetry, the minimum size computed exactly and every larger size planning too); the
 * probe of blank, formatted, interrupted, damaged, other-version and foreign disks (a
 * foreign disk receives no write request and keeps every byte); the choice between the
 * two superblock slots (stale, torn, wrong slot, another version); and power cut at
 * every request of store_disk_format and store_super_commit over many seeds: a cut
 * format probes BLANK, INTERRUPTED or OURS and formats again, a cut commit leaves OURS
 * with the old or the new generation.
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
#include "lib/crc32c.h"
#include "lib/err.h"
#include "store/gpt.h"
#include "store/layout.h"
#include "store/wire_disk.h"
#include "tests/support/fake_blk.h"

#define MiB (UINT64_C(1) << 20)

static uint64_t fake_ns;

static uint64_t clock_ns(void *ctx)
{
	(void)ctx;
	return fake_ns += 1000000u;
}

struct fx {
	struct fake_blk *fb;
	struct store_dev d;
	uint8_t bounce[64 * 1024];
};

static uint8_t scratch[STORE_LAYOUT_SCRATCH] __attribute__((aligned(8)));

static struct fx *fx_wrap(struct fake_blk *fb)
{
	struct fx *x = calloc(1, sizeof *x);
	assert_non_null(x);
	assert_non_null(fb);
	x->fb = fb;
	struct store_dev_port port = { clock_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&x->d, fake_blk_dev(fb), x->bounce, sizeof x->bounce, 1000, &port), 0);
	return x;
}

static struct fx *fx_new(uint64_t bytes, uint32_t bs, uint32_t optimal_io)
{
	struct fake_blk_config c = { .blocks = bytes / bs, .block_size = bs, .optimal_io = optimal_io };
	return fx_wrap(fake_blk_new(&c));
}

static void fx_free(struct fx *x)
{
	fake_blk_free(x->fb);
	free(x);
}

/* A healthy device holding what a power cut leaves on x. */
static struct fx *fx_after_cut(const struct fx *x, uint64_t seed)
{
	return fx_wrap(fake_blk_after_power_cut(x->fb, seed, NULL));
}

static uint64_t fx_requests(const struct fx *x)
{
	struct fake_blk_counts c;
	fake_blk_counts(x->fb, &c);
	return c.requests;
}

static void assert_never_written(const struct fx *x)
{
	struct fake_blk_counts c;
	fake_blk_counts(x->fb, &c);
	assert_int_equal(c.writes, 0);
	assert_int_equal(c.zeroes, 0);
	assert_int_equal(c.discards, 0);
	assert_int_equal(c.flushes, 0);
	assert_int_equal(c.blocks_written, 0);
}

static const struct store_layout_config small_cfg = { .esp_bytes = 1 * MiB, .wal_bytes = 1 * MiB, .telemetry_pct = 25 };
/* The smallest disk small_cfg plans on, rounded up to MiB (its loops copy whole disks). */
#define SMALL_DISK (9 * MiB)

static void guids_for(uint8_t guids[48], uint8_t seed)
{
	for (int i = 0; i < 48; i++)
		guids[i] = (uint8_t)(seed * 31u + (unsigned)i * 7u + 1u);
}

static void plan_for(const struct fx *x, const struct store_layout_config *cfg, struct store_plan *p)
{
	const struct blk_dev *b = x->d.blk;
	assert_int_equal(store_layout_plan(cfg, b->topo.capacity, b->topo.logical_block, b->topo.optimal_io, p, NULL), 0);
}

static void format(struct fx *x, const struct store_layout_config *cfg, uint8_t seed, struct store_super *sb)
{
	struct store_plan p;
	uint8_t guids[48];
	plan_for(x, cfg, &p);
	guids_for(guids, seed);
	assert_int_equal(store_disk_format(&x->d, &p, guids, 1700000000u, scratch, sizeof scratch, sb), 0);
}

static void probe(struct fx *x, struct store_disk_info *info)
{
	assert_int_equal(store_disk_probe(&x->d, scratch, sizeof scratch, info), 0);
}

/* Put sb (encoded, whole slot) into slot i of the disk directly. */
static void put_slot(struct fx *x, uint64_t part_start, int i, const uint8_t *hdr512)
{
	uint32_t bs = x->d.blk->topo.logical_block, slot = bs > 4096u ? bs : 4096u;
	uint8_t *buf = calloc(1, slot);
	assert_non_null(buf);
	if (hdr512)
		memcpy(buf, hdr512, 512);
	fake_blk_set(x->fb, part_start * bs + (uint64_t)i * slot, buf, slot);
	free(buf);
}

static void put_super(struct fx *x, const struct store_super *sb, int i)
{
	uint8_t hdr[512];
	assert_int_equal(store_super_encode(sb, hdr, sizeof hdr), 0);
	put_slot(x, sb->part_start, i, hdr);
}

/* ---- the superblock codec ---- */

/* A valid superblock: 4096-byte blocks, 1 MiB units (256 blocks), 20 units. */
static void make_sb(struct store_super *sb)
{
	memset(sb, 0, sizeof *sb);
	sb->version = 2;
	sb->generation = 7;
	for (int i = 0; i < 16; i++)
		sb->part_guid[i] = (uint8_t)(0xa0 + i);
	sb->block_size = 4096;
	sb->align_bytes = 1u << 20;
	sb->part_start = 512;
	sb->part_blocks = 20 * 256;
	sb->created_s = 1700000000u;
	sb->db_state = STORE_DB_READY;
	sb->backup_slot = 2;
	sb->backup_generation = 5;
	sb->n_regions = 5;
	const uint32_t kinds[5] = { STORE_REGION_DB, STORE_REGION_WAL, STORE_REGION_TELEMETRY, STORE_REGION_BACKUP_A,
				    STORE_REGION_BACKUP_B };
	const uint64_t units[5] = { 5, 1, 4, 5, 4 };
	uint64_t at = 256;
	for (int i = 0; i < 5; i++) {
		sb->regions[i].kind = kinds[i];
		sb->regions[i].start = at;
		sb->regions[i].blocks = units[i] * 256;
		at += units[i] * 256;
	}
}

static void assert_super_equal(const struct store_super *a, const struct store_super *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->generation, b->generation);
	assert_memory_equal(a->part_guid, b->part_guid, 16);
	assert_int_equal(a->block_size, b->block_size);
	assert_int_equal(a->align_bytes, b->align_bytes);
	assert_int_equal(a->part_start, b->part_start);
	assert_int_equal(a->part_blocks, b->part_blocks);
	assert_int_equal(a->created_s, b->created_s);
	assert_int_equal(a->db_state, b->db_state);
	assert_int_equal(a->backup_slot, b->backup_slot);
	assert_int_equal(a->backup_generation, b->backup_generation);
	assert_int_equal(a->n_regions, b->n_regions);
	for (uint32_t i = 0; i < a->n_regions; i++) {
		assert_int_equal(a->regions[i].kind, b->regions[i].kind);
		assert_int_equal(a->regions[i].flags, b->regions[i].flags);
		assert_int_equal(a->regions[i].start, b->regions[i].start);
		assert_int_equal(a->regions[i].blocks, b->regions[i].blocks);
	}
}

static void t_super_roundtrip(void **state)
{
	(void)state;
	struct store_super sb, back;
	uint8_t buf[600];
	enum store_layout_rej rej;
	uint32_t version;
	make_sb(&sb);
	memset(buf, 0xee, sizeof buf);
	assert_int_equal(store_super_encode(&sb, buf, sizeof buf), 0);
	assert_int_equal(buf[512], 0xee); /* exactly 512 bytes written */
	/* the byte layout of docs/DISK-FORMAT.md */
	assert_memory_equal(buf, "URMQTTSB", 8);
	assert_int_equal(ld_le32(buf + 8), 2);
	assert_int_equal(ld_le32(buf + 12), 512);
	assert_int_equal(ld_le64(buf + 16), 7);
	assert_int_equal(buf[24], 0xa0);
	assert_int_equal(ld_le32(buf + 40), 4096);
	assert_int_equal(ld_le32(buf + 44), 1u << 20);
	assert_int_equal(ld_le64(buf + 48), 512);
	assert_int_equal(ld_le64(buf + 56), 20 * 256);
	assert_int_equal(ld_le64(buf + 64), 1700000000u);
	assert_int_equal(ld_le32(buf + 72), 1);
	assert_int_equal(ld_le32(buf + 76), 2);
	assert_int_equal(ld_le64(buf + 80), 5);
	assert_int_equal(ld_le32(buf + 88), 5);
	assert_int_equal(ld_le32(buf + 92), 0);
	assert_int_equal(ld_le32(buf + 96), STORE_REGION_DB);
	assert_int_equal(ld_le64(buf + 96 + 8), 256);
	assert_int_equal(ld_le64(buf + 96 + 16), 5 * 256);
	assert_int_equal(ld_le32(buf + 96 + 4 * 24), STORE_REGION_BACKUP_B);
	for (int i = 96 + 5 * 24; i < 508; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(ld_le32(buf + 508), crc32c(0, buf, 508));
	assert_int_equal(store_super_decode(buf, 512, &back, &rej, &version), 0);
	assert_int_equal(rej, STORE_REJ_NONE);
	assert_super_equal(&sb, &back);
	/* and 512-byte blocks with regions in another order, a 4 MiB unit */
	sb.block_size = 512;
	sb.align_bytes = 4u << 20;
	sb.part_blocks = 20 * 8192;
	for (int i = 0; i < 5; i++) {
		sb.regions[i].start = (uint64_t)(5 - i) * 8192 * 3;
		sb.regions[i].blocks = 8192;
	}
	assert_int_equal(store_super_encode(&sb, buf, 512), 0);
	assert_int_equal(store_super_decode(buf, 512, &back, &rej, &version), 0);
	assert_super_equal(&sb, &back);
	/* refusals of the codec itself */
	sb.n_regions = 17;
	assert_int_equal(store_super_encode(&sb, buf, sizeof buf), -E_INVAL);
	sb.n_regions = 5;
	assert_int_equal(store_super_encode(&sb, buf, 511), -E_INVAL);
	assert_int_equal(store_super_decode(buf, 511, &back, &rej, &version), -E_INVAL);
}

struct rej_case {
	const char *name;
	void (*mut)(struct store_super *sb); /* before encoding, or NULL */
	uint32_t off, width;                  /* a patch after encoding (width 0: none) */
	uint64_t value;
	bool fix_crc;                         /* recompute the CRC after the patch */
	enum store_layout_rej want;
	uint32_t want_version;
};

static void m_gen0(struct store_super *s) { s->generation = 0; }
static void m_bs1000(struct store_super *s) { s->block_size = 1000; }
static void m_bs256(struct store_super *s) { s->block_size = 256; s->align_bytes = 1u << 20; }
static void m_bs128k(struct store_super *s) { s->block_size = 131072; s->align_bytes = 1u << 20; }
static void m_align_small(struct store_super *s) { s->align_bytes = 512u << 10; }
static void m_align_odd(struct store_super *s) { s->align_bytes = (1u << 20) + 512u; }
static void m_db_state(struct store_super *s) { s->db_state = 2; }
static void m_backup_slot(struct store_super *s) { s->backup_slot = 3; }
static void m_no_regions(struct store_super *s) { s->n_regions = 0; }
static void m_part0(struct store_super *s) { s->part_start = 0; }
static void m_part_huge(struct store_super *s) { s->part_blocks = UINT64_MAX - 100; }
static void m_kind0(struct store_super *s) { s->regions[2].kind = 0; }
static void m_kind6(struct store_super *s) { s->regions[2].kind = STORE_REGION__KINDS; }
static void m_dup_wal(struct store_super *s) { s->regions[4].kind = STORE_REGION_WAL; }
static void m_dup_tel(struct store_super *s) { s->regions[0].kind = STORE_REGION_TELEMETRY; }
/* a second database extent over the telemetry region */
static void m_extent_overlap(struct store_super *s)
{
	s->regions[5] = (struct store_region){ STORE_REGION_DB, 0, s->regions[2].start + 256, 256 };
	s->n_regions = 6;
}
static void m_flags(struct store_super *s) { s->regions[1].flags = 1; }
static void m_start_odd(struct store_super *s) { s->regions[0].start += 1; }
static void m_blocks_odd(struct store_super *s) { s->regions[0].blocks -= 1; }
static void m_blocks0(struct store_super *s) { s->regions[3].blocks = 0; }
static void m_in_meta(struct store_super *s) { s->regions[0].start = 0; }
static void m_past_end(struct store_super *s) { s->regions[4].blocks += 256; }
static void m_start_huge(struct store_super *s) { s->regions[4].start = UINT64_MAX - 255; }
static void m_overlap(struct store_super *s) { s->regions[1].start = s->regions[0].start + 256; }
static void m_no_db(struct store_super *s)
{
	memmove(&s->regions[0], &s->regions[1], 4 * sizeof s->regions[0]);
	s->n_regions = 4;
}
static void m_no_wal(struct store_super *s)
{
	memmove(&s->regions[1], &s->regions[2], 3 * sizeof s->regions[0]);
	s->n_regions = 4;
}

static const struct rej_case rej_cases[] = {
	{ "magic", NULL, 0, 1, 'X', true, STORE_REJ_MAGIC, 0 },
	{ "version 7, CRC not ours", NULL, 8, 4, 7, false, STORE_REJ_VERSION, 7 },
	{ "version 1", NULL, 8, 4, 1, true, STORE_REJ_VERSION, 1 },
	{ "version ~0", NULL, 8, 4, 0xffffffffu, false, STORE_REJ_VERSION, 0xffffffffu },
	{ "crc of a changed field", NULL, 64, 1, 0x55, false, STORE_REJ_CRC, 0 },
	{ "crc field", NULL, 508, 4, 0, false, STORE_REJ_CRC, 0 },
	{ "header bytes", NULL, 12, 4, 256, true, STORE_REJ_FIELD, 0 },
	{ "generation 0", m_gen0, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "block size 1000", m_bs1000, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "block size 256", m_bs256, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "block size 128 KiB", m_bs128k, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "align 512 KiB", m_align_small, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "align not a block multiple", m_align_odd, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "db_state 2", m_db_state, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "backup_slot 3", m_backup_slot, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "n_regions 0", m_no_regions, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "n_regions 17", NULL, 88, 4, 17, true, STORE_REJ_FIELD, 0 },
	{ "reserved", NULL, 92, 4, 1, true, STORE_REJ_FIELD, 0 },
	{ "tail not zero", NULL, 500, 1, 1, true, STORE_REJ_FIELD, 0 },
	{ "unused region slot not zero", NULL, 96 + 5 * 24 + 8, 1, 1, true, STORE_REJ_FIELD, 0 },
	{ "partition at LBA 0", m_part0, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "partition end overflows", m_part_huge, 0, 0, 0, false, STORE_REJ_FIELD, 0 },
	{ "region kind 0", m_kind0, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "region kind out of range", m_kind6, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "WAL twice", m_dup_wal, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "telemetry twice", m_dup_tel, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "an extent over another region", m_extent_overlap, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "region flags", m_flags, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "region start misaligned", m_start_odd, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "region length misaligned", m_blocks_odd, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "region empty", m_blocks0, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "region in the meta area", m_in_meta, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "region past the partition", m_past_end, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "region start huge", m_start_huge, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "regions overlap", m_overlap, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "no database", m_no_db, 0, 0, 0, false, STORE_REJ_REGION, 0 },
	{ "no write-ahead log", m_no_wal, 0, 0, 0, false, STORE_REJ_REGION, 0 },
};

static void t_super_rejections(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof rej_cases / sizeof rej_cases[0]; i++) {
		const struct rej_case *c = &rej_cases[i];
		struct store_super sb, out;
		uint8_t buf[512];
		make_sb(&sb);
		if (c->mut)
			c->mut(&sb);
		assert_int_equal(store_super_encode(&sb, buf, sizeof buf), 0);
		if (c->width == 1)
			buf[c->off] = (uint8_t)c->value;
		else if (c->width == 4)
			st_le32(buf + c->off, (uint32_t)c->value);
		if (c->fix_crc)
			st_le32(buf + 508, crc32c(0, buf, 508));
		enum store_layout_rej rej = STORE_REJ_NONE;
		uint32_t version = 12345;
		int err = store_super_decode(buf, sizeof buf, &out, &rej, &version);
		if (rej != c->want)
			print_error("%s: %s, expected %s\n", c->name, store_layout_rej_name(rej),
				    store_layout_rej_name(c->want));
		assert_int_equal(err, -E_CORRUPT);
		assert_int_equal(rej, c->want);
		assert_int_equal(version, c->want_version);
		assert_int_equal(out.generation, 0); /* nothing half-decoded */
	}
	/* a slot never written */
	uint8_t zero[512] = { 0 };
	struct store_super out;
	enum store_layout_rej rej;
	uint32_t version;
	assert_int_equal(store_super_decode(zero, sizeof zero, &out, &rej, &version), -E_CORRUPT);
	assert_int_equal(rej, STORE_REJ_MAGIC);
}

static void t_names(void **state)
{
	(void)state;
	for (int r = 0; r < STORE_REJ__COUNT; r++)
		assert_string_not_equal(store_layout_rej_name((enum store_layout_rej)r), "?");
	assert_string_equal(store_layout_rej_name(STORE_REJ__COUNT), "?");
	assert_string_equal(store_layout_rej_name(STORE_REJ_VERSION), "version");
	for (int k = STORE_DISK_BLANK; k <= STORE_DISK_DAMAGED; k++)
		assert_string_not_equal(store_disk_kind_name((enum store_disk_kind)k), "?");
	assert_string_equal(store_disk_kind_name(STORE_DISK_INTERRUPTED), "interrupted");
	struct store_super sb;
	make_sb(&sb);
	const struct store_region *r = store_super_region(&sb, STORE_REGION_WAL);
	assert_non_null(r);
	assert_int_equal(r->start, 6 * 256);
	sb.n_regions = 2;
	assert_null(store_super_region(&sb, STORE_REGION_TELEMETRY));
	assert_null(store_super_region(NULL, STORE_REGION_DB));
	assert_null(store_super_extent(NULL, STORE_REGION_DB, 0));
	assert_int_equal(store_super_extents(NULL, STORE_REGION_DB, NULL), 0);
}

/* The database and the backup slots may have several extents (what a growth appends), in
 * any order on the disk; the accessors walk them in superblock order. */
static void t_super_extents(void **state)
{
	(void)state;
	struct store_super sb, back;
	uint8_t buf[512];
	enum store_layout_rej rej;
	uint32_t version;
	make_sb(&sb);
	sb.part_blocks = 40 * 256;
	/* the 20 units of make_sb, then DB, BACKUP_B, BACKUP_A, DB extents of 2 units each,
	 * and BACKUP_B again */
	const uint32_t more[5] = { STORE_REGION_DB, STORE_REGION_BACKUP_B, STORE_REGION_BACKUP_A, STORE_REGION_DB,
				   STORE_REGION_BACKUP_B };
	for (uint32_t i = 0; i < 5; i++)
		sb.regions[5 + i] = (struct store_region){ more[i], 0, (20 + 2 * (uint64_t)i) * 256, 2 * 256 };
	sb.n_regions = 10;
	assert_int_equal(store_super_encode(&sb, buf, sizeof buf), 0);
	assert_int_equal(store_super_decode(buf, sizeof buf, &back, &rej, &version), 0);
	assert_super_equal(&sb, &back);
	uint64_t blocks = 0;
	assert_int_equal(store_super_extents(&back, STORE_REGION_DB, &blocks), 3);
	assert_int_equal(blocks, (5 + 2 + 2) * 256);
	assert_int_equal(store_super_extents(&back, STORE_REGION_BACKUP_B, &blocks), 3);
	assert_int_equal(blocks, (4 + 2 + 2) * 256);
	assert_int_equal(store_super_extents(&back, STORE_REGION_WAL, NULL), 1);
	assert_ptr_equal(store_super_extent(&back, STORE_REGION_DB, 0), &back.regions[0]);
	assert_ptr_equal(store_super_region(&back, STORE_REGION_DB), &back.regions[0]);
	assert_ptr_equal(store_super_extent(&back, STORE_REGION_DB, 1), &back.regions[5]);
	assert_ptr_equal(store_super_extent(&back, STORE_REGION_DB, 2), &back.regions[8]);
	assert_null(store_super_extent(&back, STORE_REGION_DB, 3));
	assert_ptr_equal(store_super_extent(&back, STORE_REGION_BACKUP_B, 2), &back.regions[9]);
	/* the most a table holds: 16 regions, 12 of them extents of the three files */
	sb.part_blocks = 60 * 256;
	for (uint32_t i = 10; i < 16; i++)
		sb.regions[i] = (struct store_region){ more[i % 3], 0, (30 + 2 * (uint64_t)(i - 10)) * 256, 2 * 256 };
	sb.n_regions = 16;
	assert_int_equal(store_super_encode(&sb, buf, sizeof buf), 0);
	assert_int_equal(store_super_decode(buf, sizeof buf, &back, &rej, &version), 0);
	assert_super_equal(&sb, &back);
	/* an extent of the WAL is refused however it is placed */
	sb.regions[15].kind = STORE_REGION_WAL;
	assert_int_equal(store_super_encode(&sb, buf, sizeof buf), 0);
	assert_int_equal(store_super_decode(buf, sizeof buf, &back, &rej, &version), -E_CORRUPT);
	assert_int_equal(rej, STORE_REJ_REGION);
}

/* ---- the plan ---- */

struct plan_case {
	const char *name;
	uint32_t bs, optimal_io;
	uint64_t disk, esp, wal;
	uint32_t pct;
	/* expected, in MiB (regions in the order DB, WAL, TELEMETRY, BACKUP_A, BACKUP_B) */
	uint32_t align, esp_start, esp_len, part_start, part_len;
	uint32_t units[5];
};

static const struct plan_case plan_cases[] = {
	/* 64 MiB: ESP at 1 MiB (first aligned LBA after the primary GPT), data from 33 MiB to
	 * 63 MiB (the backup GPT takes the last 33 blocks, rounded down to 1 MiB): 30 MiB, 1
	 * meta, R = 29: WAL min(16, 29/16) = 1, telemetry 29 * 25 / 100 = 7, 21 / 3 = 7. */
	{ "64 MiB, 512", 512, 0, 64 * MiB, 32 * MiB, 16 * MiB, 25, 1, 1, 32, 33, 30, { 7, 1, 7, 7, 7 } },
	{ "64 MiB, 4096", 4096, 0, 64 * MiB, 32 * MiB, 16 * MiB, 25, 1, 1, 32, 33, 30, { 7, 1, 7, 7, 7 } },
	/* 256 MiB: data 33..255 MiB, R = 221: WAL 13, telemetry 55, 153 / 3 = 51 */
	{ "256 MiB, 512", 512, 0, 256 * MiB, 32 * MiB, 16 * MiB, 25, 1, 1, 32, 33, 222, { 51, 13, 55, 51, 51 } },
	/* 16 GiB: data 33..16383 MiB, R = 16349: WAL 16, telemetry 4087, 12246 / 3 = 4082 */
	{ "16 GiB, 512", 512, 0, 16384 * MiB, 32 * MiB, 16 * MiB, 25, 1, 1, 32, 33, 16350,
	  { 4082, 16, 4087, 4082, 4082 } },
	{ "16 GiB, 4096", 4096, 0, 16384 * MiB, 32 * MiB, 16 * MiB, 25, 1, 1, 32, 33, 16350,
	  { 4082, 16, 4087, 4082, 4082 } },
	/* optimal_io 4 MiB: 4 MiB units; ESP 4..36 MiB, data 36..252 MiB (54 units), R = 53:
	 * WAL min(4, 3) = 3 units, telemetry 13, 37 / 3 = 12 (one unit unused) */
	{ "optimal_io 4 MiB", 4096, 4u << 20, 256 * MiB, 32 * MiB, 16 * MiB, 25, 4, 4, 32, 36, 216,
	  { 48, 12, 52, 48, 48 } },
	/* no ESP: data from 1 MiB, 62 MiB, R = 61: WAL 3, telemetry 15, 43 / 3 = 14 */
	{ "no ESP", 512, 0, 64 * MiB, 0, 16 * MiB, 25, 1, 0, 0, 1, 62, { 14, 3, 15, 14, 14 } },
	/* no telemetry: R = 29: WAL 1, 28 / 3 = 9, no TELEMETRY region */
	{ "telemetry 0", 512, 0, 64 * MiB, 32 * MiB, 16 * MiB, 0, 1, 1, 32, 33, 30, { 9, 1, 0, 9, 9 } },
	/* ignored optimal_io values: not a MiB multiple, above 64 MiB */
	{ "optimal_io 64 KiB", 512, 64u << 10, 64 * MiB, 0, 16 * MiB, 0, 1, 0, 0, 1, 62, { 19, 3, 0, 19, 19 } },
	{ "optimal_io 128 MiB", 512, 128u << 20, 64 * MiB, 0, 16 * MiB, 0, 1, 0, 0, 1, 62, { 19, 3, 0, 19, 19 } },
	/* 3 MiB units: data 3..63 MiB = 20 units, R = 19: WAL 1, telemetry 1 (19 * 10 / 100),
	 * 17 / 3 = 5 */
	{ "optimal_io 3 MiB", 512, 3u << 20, 64 * MiB, 0, 1 * MiB, 10, 3, 0, 0, 3, 60, { 15, 3, 3, 15, 15 } },
	/* a high percentage on a small disk: telemetry gives back what the others need */
	{ "telemetry 90, small", 512, 0, 30 * MiB, 0, 1 * MiB, 90, 1, 0, 0, 1, 28, { 1, 1, 23, 1, 1 } },
};

static void check_plan_shape(const struct store_plan *p)
{
	uint64_t ab = p->align_bytes / p->block_size, fu, lu;
	assert_int_equal(store_gpt_geometry(p->block_size, p->disk_blocks, &fu, &lu), 0);
	assert_int_equal(p->part_start % ab, 0);
	assert_int_equal(p->part_blocks % ab, 0);
	assert_true(p->part_start >= fu && p->part_start + p->part_blocks - 1 <= lu);
	if (p->esp_blocks) {
		assert_int_equal(p->esp_start % ab, 0);
		assert_true(p->esp_start >= fu);
		assert_int_equal(p->esp_start + p->esp_blocks, p->part_start);
	}
	uint64_t scratch_blocks = (p->block_size > 4096 ? p->block_size : 4096) / p->block_size;
	assert_int_equal(p->scratch_lba, p->part_start + ab - scratch_blocks);
	/* regions: in order, back to back from the end of the meta area, inside the partition */
	uint64_t at = ab;
	for (uint32_t i = 0; i < p->n_regions; i++) {
		assert_int_equal(p->regions[i].start, at);
		assert_true(p->regions[i].blocks >= ab);
		assert_int_equal(p->regions[i].blocks % ab, 0);
		assert_int_equal(p->regions[i].flags, 0);
		at += p->regions[i].blocks;
	}
	assert_true(at <= p->part_blocks);
	/* and a superblock of this plan decodes */
	struct store_super sb = { .generation = 1, .block_size = p->block_size, .align_bytes = p->align_bytes,
				  .part_start = p->part_start, .part_blocks = p->part_blocks, .n_regions = p->n_regions };
	memcpy(sb.regions, p->regions, sizeof sb.regions);
	uint8_t buf[512];
	struct store_super out;
	enum store_layout_rej rej;
	uint32_t version;
	assert_int_equal(store_super_encode(&sb, buf, sizeof buf), 0);
	assert_int_equal(store_super_decode(buf, sizeof buf, &out, &rej, &version), 0);
}

static void t_plan_figures(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof plan_cases / sizeof plan_cases[0]; i++) {
		const struct plan_case *c = &plan_cases[i];
		struct store_layout_config cfg = { c->esp, c->wal, c->pct };
		struct store_plan p;
		uint64_t min = 0;
		int err = store_layout_plan(&cfg, c->disk / c->bs, c->bs, c->optimal_io, &p, &min);
		if (err)
			print_error("%s: %d (min %llu)\n", c->name, err, (unsigned long long)min);
		assert_int_equal(err, 0);
		uint64_t mib = MiB / c->bs;
		assert_int_equal(p.align_bytes, (uint64_t)c->align * MiB);
		assert_int_equal(p.esp_start, c->esp_start * mib);
		assert_int_equal(p.esp_blocks, c->esp_len * mib);
		assert_int_equal(p.part_start, c->part_start * mib);
		assert_int_equal(p.part_blocks, c->part_len * mib);
		assert_int_equal(p.n_regions, c->units[2] ? 5 : 4);
		const uint32_t kinds[5] = { STORE_REGION_DB, STORE_REGION_WAL, STORE_REGION_TELEMETRY,
					    STORE_REGION_BACKUP_A, STORE_REGION_BACKUP_B };
		uint32_t k = 0;
		for (uint32_t j = 0; j < 5; j++) {
			if (!c->units[j])
				continue;
			if (p.regions[k].blocks != c->units[j] * mib)
				print_error("%s: region %u: %llu MiB\n", c->name, j,
					    (unsigned long long)(p.regions[k].blocks / mib));
			assert_int_equal(p.regions[k].kind, kinds[j]);
			assert_int_equal(p.regions[k].blocks, c->units[j] * mib);
			k++;
		}
		assert_true(min > 0 && min <= c->disk);
		check_plan_shape(&p);
	}
}

/* For a configuration: the minimum plans, 1 MiB less does not, and every size above plans. */
static void check_minimum(const struct store_layout_config *cfg, uint32_t bs, uint32_t optimal_io)
{
	struct store_plan p;
	uint64_t min = 0, min2 = 0;
	assert_int_equal(store_layout_plan(cfg, (UINT64_C(1) << 40) / bs, bs, optimal_io, &p, &min), 0);
	assert_int_equal(min % bs, 0);
	assert_int_equal(store_layout_plan(cfg, min / bs, bs, optimal_io, &p, &min2), 0);
	assert_int_equal(min2, min);
	check_plan_shape(&p);
	assert_int_equal(store_layout_plan(cfg, (min - MiB) / bs, bs, optimal_io, &p, &min2), -E_RANGE);
	assert_int_equal(min2, min);
	assert_int_equal(store_layout_plan(cfg, min / bs - 1, bs, optimal_io, &p, &min2), -E_RANGE);
	for (uint64_t b = min / bs; b < (min + 80 * MiB) / bs; b += 97)
		assert_int_equal(store_layout_plan(cfg, b, bs, optimal_io, &p, NULL), 0);
}

static void t_plan_minimum(void **state)
{
	(void)state;
	/* The brief's configuration, worked by hand: R = 5 is the first that plans
	 * (telemetry 1, WAL 1, 3 / 3 = 1 each; R = 4 leaves 2 for the three equal parts), so the
	 * partition is 6 MiB from 33 MiB, and the backup array and header follow: 39 MiB + 33
	 * blocks of 512. */
	struct store_layout_config cfg = { 32 * MiB, 16 * MiB, 25 };
	struct store_plan p;
	uint64_t min = 0;
	assert_int_equal(store_layout_plan(&cfg, 64 * MiB / 512, 512, 0, &p, &min), 0);
	assert_int_equal(min, 39 * MiB + 33 * 512);
	assert_int_equal(store_layout_plan(&cfg, 64 * MiB / 4096, 4096, 0, &p, &min), 0);
	assert_int_equal(min, 39 * MiB + 5 * 4096);
	assert_int_equal(store_layout_plan(&cfg, 32 * MiB / 512, 512, 0, &p, &min), -E_RANGE);
	assert_int_equal(min, 39 * MiB + 33 * 512);
	check_minimum(&cfg, 512, 0);
	check_minimum(&cfg, 4096, 0);
	check_minimum(&cfg, 4096, 4u << 20);
	check_minimum(&cfg, 65536, 0);
	static const struct store_layout_config more[] = {
		{ 0, 0, 0 }, { 0, 16 * MiB, 0 }, { 100 * MiB, 1, 90 }, { 1, 64 * MiB, 88 }, { 0, 1 * MiB, 50 },
		{ 512 * MiB, UINT64_MAX, 10 }, { 0, 2 * MiB, 75 },
	};
	for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
		check_minimum(&more[i], 512, 0);
		check_minimum(&more[i], 4096, 8u << 20);
	}
}

static void t_plan_invalid(void **state)
{
	(void)state;
	struct store_layout_config cfg = small_cfg;
	struct store_plan p;
	uint64_t min = 1;
	assert_int_equal(store_layout_plan(&cfg, 1u << 20, 1000, 0, &p, &min), -E_INVAL);
	assert_int_equal(min, 0);
	assert_int_equal(store_layout_plan(&cfg, 1u << 20, 256, 0, &p, &min), -E_INVAL);
	assert_int_equal(store_layout_plan(&cfg, 1u << 20, 131072, 0, &p, &min), -E_INVAL);
	assert_int_equal(store_layout_plan(NULL, 1u << 20, 512, 0, &p, &min), -E_INVAL);
	assert_int_equal(store_layout_plan(&cfg, 1u << 20, 512, 0, NULL, &min), -E_INVAL);
	assert_int_equal(store_layout_plan(&cfg, UINT64_MAX / 256, 512, 0, &p, &min), -E_INVAL);
	cfg.telemetry_pct = 91;
	assert_int_equal(store_layout_plan(&cfg, 1u << 20, 512, 0, &p, &min), -E_INVAL);
	cfg = small_cfg;
	cfg.esp_bytes = UINT64_MAX;
	assert_int_equal(store_layout_plan(&cfg, 1u << 20, 512, 0, &p, &min), -E_INVAL);
	cfg.esp_bytes = UINT64_MAX / 2; /* a disk of 8 EiB would do */
	assert_int_equal(store_layout_plan(&cfg, 1u << 20, 512, 0, &p, &min), -E_RANGE);
	assert_true(min > UINT64_MAX / 2);
	cfg = small_cfg;
	assert_int_equal(store_layout_plan(&cfg, 0, 512, 0, &p, &min), -E_RANGE);
	assert_true(min > 0);
	/* a huge disk and a huge WAL wish still plan */
	cfg.wal_bytes = UINT64_MAX;
	assert_int_equal(store_layout_plan(&cfg, UINT64_MAX / 512, 512, 0, &p, &min), 0);
	assert_int_equal(p.regions[1].blocks, (p.part_blocks / 2048 - 1) / 16 * 2048);
	check_plan_shape(&p);
}

/* ---- probe and format ---- */

static void t_probe_blank(void **state)
{
	(void)state;
	static const uint32_t sizes[] = { 512, 4096, 65536 };
	for (size_t i = 0; i < 3; i++) {
		struct fx *x = fx_new(16 * MiB, sizes[i], 0);
		struct store_disk_info info;
		probe(x, &info);
		assert_int_equal(info.kind, STORE_DISK_BLANK);
		assert_int_equal(info.super_slot, -1);
		assert_never_written(x);
		fx_free(x);
	}
	/* tiny disks: smaller than a GPT, smaller than 2 MiB */
	struct fx *x = fx_new(20 * 512, 512, 0);
	struct store_disk_info info;
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_BLANK);
	fake_blk_set(x->fb, 19 * 512 + 3, "\1", 1);
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_FOREIGN);
	assert_string_equal(info.what, "non-zero data at byte 9731");
	assert_never_written(x);
	fx_free(x);
}

static void t_format_then_probe(void **state)
{
	(void)state;
	static const struct { uint32_t bs, optimal_io; uint64_t bytes; } cases[] = {
		{ 512, 0, 64 * MiB }, { 4096, 0, 64 * MiB }, { 4096, 4u << 20, 80 * MiB }, { 65536, 0, 32 * MiB },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fx *x = fx_new(cases[i].bytes, cases[i].bs, cases[i].optimal_io);
		struct store_plan p;
		struct store_super sb;
		plan_for(x, &small_cfg, &p);
		format(x, &small_cfg, 1, &sb);
		assert_int_equal(sb.generation, 1);
		assert_int_equal(sb.db_state, STORE_DB_FRESH);
		assert_int_equal(sb.created_s, 1700000000u);
		struct fake_blk_counts before, after;
		fake_blk_counts(x->fb, &before);
		struct store_disk_info info;
		probe(x, &info);
		fake_blk_counts(x->fb, &after);
		assert_int_equal(after.blocks_written, before.blocks_written); /* the probe only reads */
		assert_int_equal(after.flushes, before.flushes);
		assert_int_equal(info.kind, STORE_DISK_OURS);
		assert_string_equal(info.what, "urMQTT layout version 2, generation 1 (slot A)");
		assert_int_equal(info.super_slot, 0);
		assert_false(info.gpt_from_backup);
		assert_int_equal(info.slot_rej[0], STORE_REJ_NONE);
		assert_int_equal(info.slot_rej[1], STORE_REJ_MAGIC);
		assert_int_equal(info.esp_start, p.esp_start);
		assert_int_equal(info.esp_blocks, p.esp_blocks);
		assert_int_equal(info.part_start, p.part_start);
		assert_int_equal(info.part_blocks, p.part_blocks);
		assert_super_equal(&info.sb, &sb);
		assert_int_equal(info.sb.n_regions, p.n_regions);
		for (uint32_t r = 0; r < p.n_regions; r++) {
			assert_int_equal(info.sb.regions[r].kind, p.regions[r].kind);
			assert_int_equal(info.sb.regions[r].start, p.regions[r].start);
			assert_int_equal(info.sb.regions[r].blocks, p.regions[r].blocks);
		}
		/* the GUIDs: version 4, and the superblock's is the GPT entry's */
		assert_int_equal(sb.part_guid[7] >> 4, 4);
		assert_int_equal(sb.part_guid[8] >> 6, 2);
		/* the protective MBR in LBA 0, the ESP and the self-test scratch left alone */
		size_t size;
		const uint8_t *img = fake_blk_bytes(x->fb, &size);
		assert_int_equal(img[446 + 4], 0xee);
		assert_int_equal(img[510], 0x55);
		assert_int_equal(img[511], 0xaa);
		assert_int_equal(fake_blk_durable(x->fb)[446 + 4], 0xee); /* flushed */
		uint64_t scratch_off = p.scratch_lba * cases[i].bs;
		for (uint64_t b = scratch_off; b < scratch_off + 4096; b++)
			assert_int_equal(img[b], 0);
		assert_true(p.scratch_lba * cases[i].bs >= (p.part_start * cases[i].bs) + 2 * 4096);
		fx_free(x);
	}
}

static void t_commit_alternates(void **state)
{
	(void)state;
	struct fx *x = fx_new(16 * MiB, 4096, 0);
	struct store_super sb;
	struct store_disk_info info;
	format(x, &small_cfg, 2, &sb);
	for (uint64_t g = 2; g <= 5; g++) {
		sb.db_state = STORE_DB_READY;
		sb.backup_slot = 1;
		sb.backup_generation = g * 10;
		assert_int_equal(store_super_commit(&x->d, &sb, scratch, sizeof scratch), 0);
		assert_int_equal(sb.generation, g);
		probe(x, &info);
		assert_int_equal(info.kind, STORE_DISK_OURS);
		assert_int_equal(info.sb.generation, g);
		assert_int_equal(info.super_slot, (int)((g - 1) % 2));
		assert_int_equal(info.slot_rej[0], STORE_REJ_NONE); /* the older one is valid too */
		assert_int_equal(info.slot_rej[1], STORE_REJ_NONE);
		assert_int_equal(info.sb.backup_generation, g * 10);
		assert_int_equal(info.sb.db_state, STORE_DB_READY);
	}
	/* refusals: nothing written */
	uint64_t req = fx_requests(x);
	struct store_super bad = sb;
	bad.generation = 0;
	assert_int_equal(store_super_commit(&x->d, &bad, scratch, sizeof scratch), -E_INVAL);
	bad = sb;
	bad.generation = UINT64_MAX;
	assert_int_equal(store_super_commit(&x->d, &bad, scratch, sizeof scratch), -E_RANGE);
	bad = sb;
	bad.regions[0].start = 0; /* would not decode */
	assert_int_equal(store_super_commit(&x->d, &bad, scratch, sizeof scratch), -E_INVAL);
	assert_int_equal(bad.generation, sb.generation);
	bad = sb;
	bad.block_size = 512;
	assert_int_equal(store_super_commit(&x->d, &bad, scratch, sizeof scratch), -E_INVAL);
	assert_int_equal(store_super_commit(&x->d, &sb, scratch, sizeof scratch - 1), -E_INVAL);
	assert_int_equal(fx_requests(x), req);
	fx_free(x);
}

/* A new device holding the durable bytes of x. */
static struct fx *fx_copy(const struct fx *x)
{
	struct fake_blk_config c = { .blocks = x->d.blk->topo.capacity, .block_size = x->d.blk->topo.logical_block };
	struct fake_blk *f = fake_blk_new(&c);
	assert_non_null(f);
	size_t size;
	(void)fake_blk_bytes(x->fb, &size);
	fake_blk_set(f, 0, fake_blk_durable(x->fb), size);
	return fx_wrap(f);
}

static void t_torn_commit(void **state)
{
	(void)state;
	static const uint32_t sizes[] = { 512, 4096 };
	for (size_t s = 0; s < 2; s++) {
		struct fx *base = fx_new(SMALL_DISK, sizes[s], 0);
		struct store_super sb0;
		format(base, &small_cfg, 3, &sb0);
		for (uint64_t from = 1; from <= 2; from++) { /* slot B torn, then slot A torn */
			if (from == 2)
				assert_int_equal(store_super_commit(&base->d, &sb0, scratch, sizeof scratch), 0);
			/* how many requests a commit makes */
			struct fx *probe_x = fx_copy(base);
			struct store_super sb = sb0;
			uint64_t r0 = fx_requests(probe_x);
			assert_int_equal(store_super_commit(&probe_x->d, &sb, scratch, sizeof scratch), 0);
			uint64_t n_req = fx_requests(probe_x) - r0;
			fx_free(probe_x);
			assert_true(n_req >= 2);
			uint32_t saw_old = 0, saw_new = 0;
			for (uint64_t k = 0; k < n_req; k++)
				for (uint64_t seed = 1; seed <= 24; seed++) {
					struct fx *x = fx_copy(base);
					sb = sb0;
					sb.backup_generation = 99;
					fake_blk_die_at(x->fb, fx_requests(x) + k, seed);
					assert_int_equal(store_super_commit(&x->d, &sb, scratch, sizeof scratch), -E_IO);
					assert_int_equal(sb.generation, sb0.generation); /* unchanged on failure */
					struct fx *after = fx_after_cut(x, seed * 131 + k);
					struct store_disk_info info;
					probe(after, &info);
					assert_int_equal(info.kind, STORE_DISK_OURS);
					assert_true(info.sb.generation == from || info.sb.generation == from + 1);
					if (info.sb.generation == from + 1) {
						assert_int_equal(info.sb.backup_generation, 99);
						saw_new++;
					} else {
						saw_old++;
					}
					fx_free(after);
					fx_free(x);
				}
			assert_true(saw_old > 0);
			assert_true(saw_new > 0); /* the test can see the write happen */
		}
		fx_free(base);
	}
}

static void t_slot_choice(void **state)
{
	(void)state;
	struct fx *x = fx_new(16 * MiB, 512, 0);
	struct store_super sb, s;
	struct store_disk_info info;
	format(x, &small_cfg, 4, &sb);
	assert_int_equal(store_super_commit(&x->d, &sb, scratch, sizeof scratch), 0); /* 2 in B */

	/* stale: generation 1 in A loses to 2 in B */
	probe(x, &info);
	assert_int_equal(info.super_slot, 1);
	assert_int_equal(info.sb.generation, 2);
	/* a generation in the wrong slot (4 belongs in B) is not taken */
	s = sb;
	s.generation = 4;
	put_super(x, &s, 0);
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_OURS);
	assert_int_equal(info.sb.generation, 2);
	assert_int_equal(info.slot_rej[0], STORE_REJ_FIELD);
	/* a newer one in its slot wins */
	s.generation = 5;
	put_super(x, &s, 0);
	probe(x, &info);
	assert_int_equal(info.sb.generation, 5);
	assert_int_equal(info.super_slot, 0);
	/* one slot of another version: the valid v2 one is used, the other's reason kept */
	uint8_t hdr[512];
	assert_int_equal(store_super_encode(&s, hdr, sizeof hdr), 0);
	st_le32(hdr + 8, 7);
	put_slot(x, sb.part_start, 0, hdr);
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_OURS);
	assert_int_equal(info.sb.generation, 2);
	assert_int_equal(info.slot_rej[0], STORE_REJ_VERSION);
	/* both of another version / one of it and one garbage: OTHER_VERSION */
	put_slot(x, sb.part_start, 1, NULL);
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_OTHER_VERSION);
	assert_int_equal(info.other_version, 7);
	assert_string_equal(info.what, "urMQTT layout version 7 (this image reads version 2)");
	assert_int_equal(info.super_slot, -1);
	/* a valid superblock and a torn one: the valid one */
	s = sb;
	s.generation = 3;
	put_super(x, &s, 0);
	memset(hdr, 0x5a, sizeof hdr);
	put_slot(x, sb.part_start, 1, hdr);
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_OURS);
	assert_int_equal(info.sb.generation, 3);
	assert_int_equal(info.slot_rej[1], STORE_REJ_MAGIC);
	fx_free(x);
}

static void t_damaged(void **state)
{
	(void)state;
	struct fx *x = fx_new(16 * MiB, 512, 0);
	struct store_super sb, s;
	struct store_disk_info info;
	format(x, &small_cfg, 5, &sb);
	uint8_t junk[512];
	memset(junk, 0x5a, sizeof junk);

	static const char *const want[] = {
		"our GPT, but neither superblock slot is valid (A: magic, B: magic)",
		"our GPT, but neither superblock slot is valid (A: crc, B: blank)",
	};
	for (int k = 0; k < 2; k++) {
		struct fx *y = fx_copy(x);
		if (k == 0) {
			put_slot(y, sb.part_start, 0, junk);
			put_slot(y, sb.part_start, 1, junk);
		} else {
			uint8_t hdr[512];
			assert_int_equal(store_super_encode(&sb, hdr, sizeof hdr), 0);
			hdr[100] ^= 1;
			put_slot(y, sb.part_start, 0, hdr);
		}
		size_t size;
		const uint8_t *img = fake_blk_bytes(y->fb, &size);
		uint8_t *copy = malloc(size);
		assert_non_null(copy);
		memcpy(copy, img, size);
		probe(y, &info);
		assert_int_equal(info.kind, STORE_DISK_DAMAGED);
		assert_string_equal(info.what, want[k]);
		assert_never_written(y);
		assert_memory_equal(fake_blk_bytes(y->fb, &size), copy, size);
		free(copy);
		fx_free(y);
	}

	/* the superblock and the GPT disagree about the data partition */
	static const char *const what_mismatch[] = { "guid", "start", "length", "block size" };
	for (int k = 0; k < 4; k++) {
		struct fx *y = fx_copy(x);
		s = sb;
		if (k == 0)
			s.part_guid[3] ^= 1;
		else if (k == 1)
			s.part_start += 2048;
		else if (k == 2)
			s.part_blocks += 2048;
		else
			s.block_size = 4096; /* the same numbers in blocks of another size */
		uint8_t hdr[512];
		assert_int_equal(store_super_encode(&s, hdr, sizeof hdr), 0);
		put_slot(y, sb.part_start, 0, hdr);
		probe(y, &info);
		if (info.kind != STORE_DISK_DAMAGED)
			print_error("mismatch in %s: %s\n", what_mismatch[k], info.what);
		assert_int_equal(info.kind, STORE_DISK_DAMAGED);
		assert_string_equal(info.what, "superblock A (generation 1) disagrees with the GPT about the data partition");
		assert_never_written(y);
		fx_free(y);
	}

	/* A GPT entry longer than the superblock's partition by whole units: a growth cut after
	 * its GPT (OURS, growth pending); longer by less than a unit: damaged. Both only read. */
	for (int k = 0; k < 2; k++) {
		struct fx *y = fx_copy(x);
		uint64_t ab = sb.align_bytes / sb.block_size;
		s = sb;
		s.part_blocks -= k == 0 ? ab : 1u;
		struct store_region *last = &s.regions[s.n_regions - 1];
		if (last->start + last->blocks > s.part_blocks) {
			assert_true(last->blocks >= 2u * ab);
			last->blocks -= ab;
		}
		uint8_t hdr[512];
		assert_int_equal(store_super_encode(&s, hdr, sizeof hdr), 0);
		put_slot(y, sb.part_start, 0, hdr);
		probe(y, &info);
		if (k == 0) {
			assert_int_equal(info.kind, STORE_DISK_OURS);
			assert_true(info.grow_pending);
			assert_int_equal(info.sb.part_blocks, s.part_blocks);
			assert_int_equal(info.part_blocks, sb.part_blocks); /* the GPT's */
			assert_string_equal(info.what,
					    "urMQTT layout version 2, generation 1 (slot A); a growth of the partition to finish");
		} else {
			assert_int_equal(info.kind, STORE_DISK_DAMAGED);
			assert_false(info.grow_pending);
		}
		assert_never_written(y);
		fx_free(y);
	}
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_OURS);
	assert_false(info.grow_pending);

	/* an MBR partition table written over our protective MBR */
	struct fx *y = fx_copy(x);
	uint8_t t = 0x83;
	fake_blk_set(y->fb, 446 + 4, &t, 1);
	probe(y, &info);
	assert_int_equal(info.kind, STORE_DISK_DAMAGED);
	assert_string_equal(info.what, "our GPT, but LBA 0 holds an MBR partition table with 1 partition");
	assert_never_written(y);
	fx_free(y);
	fx_free(x);
}

static void t_backup_gpt_used(void **state)
{
	(void)state;
	static const uint32_t sizes[] = { 512, 4096 };
	for (size_t i = 0; i < 2; i++) {
		uint32_t bs = sizes[i];
		struct fx *x = fx_new(16 * MiB, bs, 0);
		struct store_super sb;
		struct store_disk_info info;
		format(x, &small_cfg, 6, &sb);
		for (int k = 0; k < 2; k++) {
			struct fx *y = fx_copy(x);
			uint8_t junk = 0x77;
			/* the primary header, then the primary array */
			fake_blk_set(y->fb, k == 0 ? bs + 40 : 2 * bs + 300, &junk, 1);
			probe(y, &info);
			assert_int_equal(info.kind, STORE_DISK_OURS);
			assert_true(info.gpt_from_backup);
			assert_int_equal(info.part_start, sb.part_start);
			assert_never_written(y);
			fx_free(y);
		}
		fx_free(x);
	}
}

/* ---- foreign disks: named, never written ---- */

enum foreign_kind { F_EXT4, F_GPT3, F_GPT1, F_ONES, F_MBR, F_FAT, F_MIDDLE, F_BAD_GPT, F_OUR_GPT_BROKEN };

static void build_other_gpt(struct fx *x, uint32_t n_parts)
{
	uint32_t bs = x->d.blk->topo.logical_block;
	uint64_t n = x->d.blk->topo.capacity, fu, lu;
	assert_int_equal(store_gpt_geometry(bs, n, &fu, &lu), 0);
	uint64_t each = n / 8;
	struct store_gpt_new g = { .block_size = bs, .disk_blocks = n, .n_parts = n_parts };
	memset(g.disk_guid, 0x42, 16);
	for (uint32_t i = 0; i < n_parts; i++) {
		assert_int_equal(store_guid_from_text(i == 1 ? STORE_GPT_TYPE_ESP : "0fc63daf-8483-4772-8e79-3d69d8477de4",
						      g.parts[i].type), 0);
		memset(g.parts[i].guid, (int)(i + 1), 16);
		g.parts[i].first_lba = fu + i * each;
		g.parts[i].last_lba = g.parts[i].first_lba + each - 1;
		g.parts[i].name = "linux";
	}
	uint8_t *blk = calloc(1, 65536);
	uint32_t crc, eb = store_gpt_array_blocks(bs);
	assert_non_null(blk);
	assert_int_equal(store_gpt_entries_encode(&g, blk, 65536, &crc), 0);
	fake_blk_set(x->fb, 2 * (uint64_t)bs, blk, (size_t)eb * bs);
	fake_blk_set(x->fb, (n - 1 - eb) * bs, blk, (size_t)eb * bs);
	assert_int_equal(store_gpt_header_encode(&g, false, crc, blk, bs), 0);
	fake_blk_set(x->fb, bs, blk, bs);
	assert_int_equal(store_gpt_header_encode(&g, true, crc, blk, bs), 0);
	fake_blk_set(x->fb, (n - 1) * bs, blk, bs);
	store_gpt_mbr_encode(blk, bs, n);
	fake_blk_set(x->fb, 0, blk, bs);
	/* and data inside a partition */
	memset(blk, 0xab, 4096);
	fake_blk_set(x->fb, (fu + each / 2) * bs, blk, 4096);
	free(blk);
}

/* Byte offset of sample i (of 64) of the probe on a disk of n blocks of bs bytes. */
static uint64_t sample_off(uint64_t n, uint32_t bs, uint64_t i)
{
	uint64_t edge = MiB / bs, sample = (bs > 4096 ? bs : 4096) / bs;
	uint64_t span = n - 2 * edge - sample;
	return (edge + i * span / 63) * bs;
}

static void build_foreign(struct fx *x, enum foreign_kind k)
{
	uint32_t bs = x->d.blk->topo.logical_block;
	uint64_t n = x->d.blk->topo.capacity;
	size_t size;
	(void)fake_blk_bytes(x->fb, &size);
	uint8_t b[512];
	memset(b, 0, sizeof b);
	switch (k) {
	case F_EXT4: /* an ext4 superblock's first fields and its magic */
		st_le32(b + 0, 4096);     /* s_inodes_count */
		st_le32(b + 4, 16384);    /* s_blocks_count */
		st_le16(b + 56, 0xef53);  /* s_magic */
		fake_blk_set(x->fb, 1024, b, sizeof b);
		break;
	case F_GPT3:
		build_other_gpt(x, 3);
		break;
	case F_GPT1:
		build_other_gpt(x, 1);
		break;
	case F_ONES: {
		uint8_t *ones = malloc(size);
		assert_non_null(ones);
		memset(ones, 0xff, size);
		fake_blk_set(x->fb, 0, ones, size);
		free(ones);
		break;
	}
	case F_MBR: /* one Linux partition from 1 MiB */
		b[446 + 4] = 0x83;
		st_le32(b + 446 + 8, 2048);
		st_le32(b + 446 + 12, 8192);
		b[510] = 0x55;
		b[511] = 0xaa;
		fake_blk_set(x->fb, 0, b, sizeof b);
		break;
	case F_FAT: /* a FAT boot sector: jump, OEM name, no partition records */
		b[0] = 0xeb, b[1] = 0x3c, b[2] = 0x90;
		memcpy(b + 3, "MSDOS5.0", 8);
		st_le16(b + 11, 512);
		b[510] = 0x55;
		b[511] = 0xaa;
		fake_blk_set(x->fb, 0, b, sizeof b);
		break;
	case F_MIDDLE: /* one byte in the middle sample (32 of 64) */
		fake_blk_set(x->fb, sample_off(n, bs, 32) + 100, "\x01", 1);
		break;
	case F_BAD_GPT: /* someone else's GPT with both headers damaged */
		build_other_gpt(x, 2);
		fake_blk_set(x->fb, (uint64_t)bs + 60, "\x01", 1);
		fake_blk_set(x->fb, (n - 1) * bs + 60, "\x01", 1);
		break;
	case F_OUR_GPT_BROKEN: { /* our disk with both GPT headers damaged: never "interrupted" */
		struct store_super sb;
		format(x, &small_cfg, 9, &sb);
		fake_blk_set(x->fb, (uint64_t)bs + 60, "\x01", 1);
		fake_blk_set(x->fb, (n - 1) * bs + 60, "\x01", 1);
		break;
	}
	}
}

static void t_foreign_never_written(void **state)
{
	(void)state;
	static const struct { enum foreign_kind k; uint32_t bs; const char *what; } cases[] = {
		{ F_EXT4, 512, "an ext2/3/4 filesystem (magic at byte 1080)" },
		{ F_EXT4, 4096, "an ext2/3/4 filesystem (magic at byte 1080)" },
		{ F_GPT3, 512, "a GPT with 3 partitions, none of type urMQTT data" },
		{ F_GPT3, 4096, "a GPT with 3 partitions, none of type urMQTT data" },
		{ F_GPT1, 512, "a GPT with 1 partition, none of type urMQTT data" },
		{ F_ONES, 512, "non-zero data at byte 0" },
		{ F_MBR, 512, "an MBR partition table with 1 partition" },
		{ F_FAT, 4096, "a FAT/NTFS boot sector (0x55AA at byte 510, no partition table)" },
		{ F_MIDDLE, 512, NULL },
		{ F_MIDDLE, 4096, NULL },
		{ F_BAD_GPT, 512, "a GPT whose headers fail their checks (protective MBR at LBA 0)" },
		{ F_OUR_GPT_BROKEN, 512, "a GPT whose headers fail their checks (protective MBR at LBA 0)" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct fx *built = fx_new(16 * MiB, cases[i].bs, 0);
		build_foreign(built, cases[i].k);
		struct fx *x = fx_copy(built); /* counts from zero: the builder may have formatted */
		fx_free(built);
		size_t size;
		const uint8_t *img = fake_blk_bytes(x->fb, &size);
		uint8_t *copy = malloc(size);
		assert_non_null(copy);
		memcpy(copy, img, size);
		struct store_disk_info info;
		probe(x, &info);
		char want[160];
		if (cases[i].what)
			snprintf(want, sizeof want, "%s", cases[i].what);
		else
			snprintf(want, sizeof want, "non-zero data at byte %llu",
				 (unsigned long long)(sample_off(x->d.blk->topo.capacity, cases[i].bs, 32) + 100));
		if (info.kind != STORE_DISK_FOREIGN || strcmp(info.what, want) != 0)
			print_error("case %zu: %s: %s\n", i, store_disk_kind_name(info.kind), info.what);
		assert_int_equal(info.kind, STORE_DISK_FOREIGN);
		assert_string_equal(info.what, want);
		assert_int_equal(info.super_slot, -1);
		assert_never_written(x);
		assert_memory_equal(fake_blk_bytes(x->fb, &size), copy, size);
		free(copy);
		fx_free(x);
	}
	/* what the samples cannot see: a byte between two samples */
	struct fx *x = fx_new(16 * MiB, 512, 0);
	fake_blk_set(x->fb, sample_off(x->d.blk->topo.capacity, 512, 32) + 8192, "\x01", 1);
	struct store_disk_info info;
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_BLANK);
	fx_free(x);
}

static void t_probe_reads_bounded(void **state)
{
	(void)state;
	uint64_t reads[3];
	const uint64_t sizes[3] = { 16 * MiB, 256 * MiB, 2048 * MiB };
	for (int i = 0; i < 3; i++) {
		struct fx *x = fx_new(sizes[i], 4096, 0);
		struct store_disk_info info;
		probe(x, &info);
		assert_int_equal(info.kind, STORE_DISK_BLANK);
		struct fake_blk_counts c;
		fake_blk_counts(x->fb, &c);
		reads[i] = c.reads;
		fx_free(x);
	}
	assert_int_equal(reads[0], reads[1]);
	assert_int_equal(reads[1], reads[2]);
	/* both GPT headers (2), the footprint (MBR, headers, arrays: 5), the first MiB (16
	 * reads of 64 KiB), 64 samples, the last MiB (16) */
	assert_int_equal(reads[0], 2 + 5 + 16 + 64 + 16);
}

static void t_device_errors(void **state)
{
	(void)state;
	struct fx *x = fx_new(16 * MiB, 512, 0);
	struct store_disk_info info;
	struct store_super sb;
	struct store_plan p;
	uint8_t guids[48];
	guids_for(guids, 1);
	plan_for(x, &small_cfg, &p);
	fake_blk_fail_request(x->fb, 0, -E_IO);
	assert_int_equal(store_disk_probe(&x->d, scratch, sizeof scratch, &info), -E_IO);
	assert_int_equal(info.super_slot, -1);
	fake_blk_fail_request(x->fb, fx_requests(x) + 3, -E_IO);
	assert_int_equal(store_disk_format(&x->d, &p, guids, 0, scratch, sizeof scratch, &sb), -E_IO);
	assert_int_equal(sb.generation, 0);
	/* refusals before any request */
	uint64_t req = fx_requests(x);
	struct store_plan bad = p;
	bad.disk_blocks++;
	assert_int_equal(store_disk_format(&x->d, &bad, guids, 0, scratch, sizeof scratch, &sb), -E_INVAL);
	bad = p;
	bad.block_size = 4096;
	assert_int_equal(store_disk_format(&x->d, &bad, guids, 0, scratch, sizeof scratch, &sb), -E_INVAL);
	bad = p;
	bad.part_blocks += 2048; /* over the backup GPT */
	assert_int_equal(store_disk_format(&x->d, &bad, guids, 0, scratch, sizeof scratch, &sb), -E_INVAL);
	bad = p;
	bad.regions[1].start = bad.regions[0].start; /* overlapping regions */
	assert_int_equal(store_disk_format(&x->d, &bad, guids, 0, scratch, sizeof scratch, &sb), -E_INVAL);
	bad = p;
	bad.esp_start = 1; /* over the primary GPT */
	assert_int_equal(store_disk_format(&x->d, &bad, guids, 0, scratch, sizeof scratch, &sb), -E_INVAL);
	assert_int_equal(store_disk_format(&x->d, &p, guids, 0, scratch, sizeof scratch - 8, &sb), -E_INVAL);
	assert_int_equal(store_disk_probe(&x->d, scratch, sizeof scratch - 8, &info), -E_INVAL);
	assert_int_equal(fx_requests(x), req);
	fx_free(x);
}

/* Power cut at every request of a format, over seeds. */
static void cut_every_request(struct fx *base, const struct store_layout_config *cfg, uint8_t guid_seed,
			      uint32_t n_seeds, bool may_be_blank, uint32_t seen[6])
{
	struct store_plan p;
	uint8_t guids[48];
	struct store_super sb;
	plan_for(base, cfg, &p);
	guids_for(guids, guid_seed);
	struct fx *count = fx_copy(base);
	uint64_t r0 = fx_requests(count);
	assert_int_equal(store_disk_format(&count->d, &p, guids, 7, scratch, sizeof scratch, &sb), 0);
	uint64_t n_req = fx_requests(count) - r0;
	uint8_t part_guid[16];
	memcpy(part_guid, sb.part_guid, 16);
	fx_free(count);
	assert_true(n_req >= 12);
	for (uint64_t k = 0; k < n_req; k++)
		for (uint64_t seed = 1; seed <= n_seeds; seed++) {
			struct fx *x = fx_copy(base);
			fake_blk_die_at(x->fb, fx_requests(x) + k, seed);
			assert_int_equal(store_disk_format(&x->d, &p, guids, 7, scratch, sizeof scratch, &sb), -E_IO);
			struct fx *after = fx_after_cut(x, seed * 977 + k);
			struct store_disk_info info;
			probe(after, &info);
			bool ok = info.kind == STORE_DISK_INTERRUPTED || info.kind == STORE_DISK_OURS ||
				  (may_be_blank && info.kind == STORE_DISK_BLANK);
			if (!ok)
				print_error("cut at request %llu seed %llu: %s: %s\n", (unsigned long long)k,
					    (unsigned long long)seed, store_disk_kind_name(info.kind), info.what);
			assert_true(ok);
			seen[info.kind]++;
			if (info.kind == STORE_DISK_OURS) {
				assert_int_equal(info.sb.generation, 1);
				assert_memory_equal(info.sb.part_guid, part_guid, 16);
			} else { /* may be formatted again, and then it is ours */
				assert_int_equal(store_disk_format(&after->d, &p, guids, 7, scratch, sizeof scratch, &sb), 0);
				probe(after, &info);
				assert_int_equal(info.kind, STORE_DISK_OURS);
				assert_int_equal(info.sb.generation, 1);
			}
			fx_free(after);
			fx_free(x);
		}
}

static void t_interrupted_format(void **state)
{
	(void)state;
	uint32_t seen[6] = { 0 };
	struct fx *blank = fx_new(SMALL_DISK, 512, 0);
	cut_every_request(blank, &small_cfg, 10, 6, true, seen);
	fx_free(blank);
	blank = fx_new(SMALL_DISK, 4096, 0);
	cut_every_request(blank, &small_cfg, 11, 3, true, seen);
	fx_free(blank);
	assert_true(seen[STORE_DISK_BLANK] > 0);
	assert_true(seen[STORE_DISK_INTERRUPTED] > 0);
	assert_true(seen[STORE_DISK_OURS] > 0);

	/* Formatting an INTERRUPTED disk again (another plan, other GUIDs) and cutting that:
	 * never BLANK (our GPT pieces are there), never anything but ours. */
	struct fx *x = fx_new(SMALL_DISK + 2 * MiB, 512, 0);
	struct store_super sb;
	struct store_layout_config other = { 2 * MiB, 1 * MiB, 25 };
	format(x, &other, 12, &sb);
	put_slot(x, sb.part_start, 0, NULL);
	struct store_disk_info info;
	probe(x, &info);
	assert_int_equal(info.kind, STORE_DISK_INTERRUPTED);
	assert_string_equal(info.what, "an unfinished urMQTT format (GPT written, no superblock yet)");
	struct fx *base = fx_copy(x);
	fx_free(x);
	memset(seen, 0, sizeof seen);
	cut_every_request(base, &small_cfg, 13, 4, false, seen);
	assert_true(seen[STORE_DISK_INTERRUPTED] > 0);
	assert_true(seen[STORE_DISK_OURS] > 0);
	fx_free(base);
}

/* The release disk as it leaves images.sh: GRUB's boot code in LBA 0, a BIOS boot partition
 * between the primary array and the ESP holding GRUB's core, the ESP and the data partition
 * of the plan, both superblock slots zero. The first boot's format keeps the boot code, the
 * disk signature, the BIOS boot entry (place and unique GUID) and its bytes. */
static void t_format_keeps_bios_boot(void **state)
{
	(void)state;
	static const uint32_t sizes[] = { 512, 4096 };
	for (size_t k = 0; k < 2; k++) {
		uint32_t bs = sizes[k];
		struct fx *x = fx_new(SMALL_DISK, bs, 0);
		uint64_t n = x->d.blk->topo.capacity, fu, lu;
		uint32_t eb = store_gpt_array_blocks(bs);
		assert_int_equal(store_gpt_geometry(bs, n, &fu, &lu), 0);
		struct store_plan p;
		plan_for(x, &small_cfg, &p);
		struct store_gpt_new g = { .block_size = bs, .disk_blocks = n, .n_parts = 3 };
		memset(g.disk_guid, 0x42, 16);
		static const char *const types[3] = { STORE_GPT_TYPE_BIOS, STORE_GPT_TYPE_ESP, STORE_GPT_TYPE_DATA };
		const uint64_t first[3] = { fu, p.esp_start, p.part_start };
		const uint64_t last[3] = { p.esp_start - 1u, p.esp_start + p.esp_blocks - 1u,
					   p.part_start + p.part_blocks - 1u };
		for (int i = 0; i < 3; i++) {
			assert_int_equal(store_guid_from_text(types[i], g.parts[i].type), 0);
			memset(g.parts[i].guid, 0x61 + i, 16);
			g.parts[i].first_lba = first[i];
			g.parts[i].last_lba = last[i];
			g.parts[i].name = "made by sfdisk";
		}
		uint8_t *blk = calloc(1, 65536);
		uint32_t crc;
		assert_non_null(blk);
		assert_int_equal(store_gpt_entries_encode(&g, blk, 65536, &crc), 0);
		fake_blk_set(x->fb, 2 * (uint64_t)bs, blk, (size_t)eb * bs);
		fake_blk_set(x->fb, (n - 1 - eb) * bs, blk, (size_t)eb * bs);
		assert_int_equal(store_gpt_header_encode(&g, false, crc, blk, bs), 0);
		fake_blk_set(x->fb, bs, blk, bs);
		assert_int_equal(store_gpt_header_encode(&g, true, crc, blk, bs), 0);
		fake_blk_set(x->fb, (n - 1) * bs, blk, bs);
		store_gpt_mbr_encode(blk, bs, n);
		for (uint32_t i = 0; i < STORE_MBR_OFF_PARTS; i++)
			blk[i] = (uint8_t)(i * 5u + 7u); /* boot code, disk signature */
		fake_blk_set(x->fb, 0, blk, bs);
		uint8_t mbr_before[512];
		memcpy(mbr_before, blk, sizeof mbr_before);
		memset(blk, 0xcd, 4096); /* GRUB's core in the BIOS boot partition */
		fake_blk_set(x->fb, fu * bs, blk, 4096);

		struct store_disk_info info;
		probe(x, &info);
		assert_int_equal(info.kind, STORE_DISK_INTERRUPTED);
		assert_int_equal(info.bios_start, fu);
		assert_int_equal(info.bios_blocks, p.esp_start - fu);
		assert_true(store_plan_keep_bios(&p, &info));
		assert_int_equal(p.bios_start, fu);
		uint8_t guids[48];
		struct store_super sb;
		guids_for(guids, 3);
		assert_int_equal(store_disk_format(&x->d, &p, guids, 1700000000u, scratch, sizeof scratch, &sb), 0);
		probe(x, &info);
		assert_int_equal(info.kind, STORE_DISK_OURS);
		assert_int_equal(info.bios_start, fu);
		assert_int_equal(info.bios_blocks, p.esp_start - fu);
		assert_memory_equal(info.bios_guid, g.parts[0].guid, 16);
		assert_memory_equal(info.sb.part_guid, sb.part_guid, 16);
		size_t size;
		const uint8_t *img = fake_blk_bytes(x->fb, &size);
		assert_memory_equal(img, mbr_before, 512); /* boot code kept, our records */
		for (uint32_t i = 0; i < 4096; i++)
			assert_int_equal(img[fu * bs + i], 0xcd);
		/* ESP, data, then the BIOS boot entry */
		struct store_gpt dg;
		enum store_gpt_rej rej;
		assert_int_equal(store_gpt_header_decode(img + bs, bs, bs, n, 1, &dg, &rej), 0);
		assert_int_equal(store_gpt_entries_decode(img + 2 * (size_t)bs, (size_t)eb * bs, &dg, &rej), 0);
		assert_int_equal(dg.n_used, 3);
		assert_int_equal(dg.esp.index, 0);
		assert_int_equal(dg.data.index, 1);
		assert_int_equal(dg.bios.index, 2);

		/* kept only when it is wholly before the plan's first partition, on an INTERRUPTED disk */
		struct store_plan q;
		plan_for(x, &small_cfg, &q);
		struct store_disk_info bad = info;
		bad.kind = STORE_DISK_INTERRUPTED;
		bad.bios_blocks = q.esp_start - fu + 1u; /* over the ESP */
		assert_false(store_plan_keep_bios(&q, &bad));
		bad.bios_start = fu - 1u; /* over the primary array */
		bad.bios_blocks = 1;
		assert_false(store_plan_keep_bios(&q, &bad));
		bad = info; /* OURS: nothing to keep, the format does not run */
		assert_false(store_plan_keep_bios(&q, &bad));
		bad.kind = STORE_DISK_INTERRUPTED;
		bad.bios_blocks = 0;
		assert_false(store_plan_keep_bios(&q, &bad));
		assert_int_equal(q.bios_blocks, 0);
		free(blk);
		fx_free(x);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_super_roundtrip),
		cmocka_unit_test(t_super_rejections),
		cmocka_unit_test(t_names),
		cmocka_unit_test(t_super_extents),
		cmocka_unit_test(t_plan_figures),
		cmocka_unit_test(t_plan_minimum),
		cmocka_unit_test(t_plan_invalid),
		cmocka_unit_test(t_probe_blank),
		cmocka_unit_test(t_format_then_probe),
		cmocka_unit_test(t_commit_alternates),
		cmocka_unit_test(t_torn_commit),
		cmocka_unit_test(t_slot_choice),
		cmocka_unit_test(t_damaged),
		cmocka_unit_test(t_backup_gpt_used),
		cmocka_unit_test(t_foreign_never_written),
		cmocka_unit_test(t_probe_reads_bounded),
		cmocka_unit_test(t_device_errors),
		cmocka_unit_test(t_interrupted_format),
		cmocka_unit_test(t_format_keeps_bios_boot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
