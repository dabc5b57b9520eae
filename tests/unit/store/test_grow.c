/* SPDX-License-Identifier: MIT
 *
 * store/grow (docs/DISK-FORMAT.md section 9) over the simulated disk of
 * tests/support/fake_blk, which grows like a virtio-blk device whose capacity changed:
 *  - the plan, pure: 64 MiB -> 256 MiB for 512 and 4096-byte blocks (the figures of the
 *    specification), growths under one and under three units, the rotation that lengthens
 *    the partition's last region, a region table that fills up, a GPT already longer (a
 *    growth cut short), and the refusals;
 *  - the procedure: what it writes and in which order, nothing when the disk did not grow
 *    by a unit, space left unused and used by the next growth, a table that fills up;
 *  - with the database (store_boot): a boot that grows the disk and a database that then
 *    holds more than its old region could, growth twice (64 -> 128 -> 256 MiB), and the
 *    run-time growth (store_boot_grow) that lets a checkpoint that failed with SQLITE_FULL
 *    through without a restart;
 *  - a power cut at every request of the growth (torn and unflushed writes, as fake_blk
 *    models them), for 512 and 4096-byte blocks: the disk probes OURS, boots, the database
 *    passes quick_check with every row, and the boot finishes the growth to exactly the
 *    GPT bytes and regions of an uncut run; and a second cut at every request of that
 *    finishing growth converges the same way.
 * Every test that opens SQLite checks that its memory went back to zero.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/err.h"
#include "store/boot.h"
#include "store/gpt.h"
#include "store/grow.h"
#include "store/layout.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"
#include "store/wire_disk.h"
#include "tests/support/fake_blk.h"

#define MiB (UINT64_C(1) << 20)
/* Rows of 128 KiB (overflow pages), two per transaction (the WAL is 1 MiB): few rows, so
 * the table's b-tree never splits an interior page (the host build's UBSan stops SQLite's
 * balance_nonroot there on a false positive, see test_backup.c). 8 rows a MiB. */
#define ROW_BYTES (128u * 1024u)
#define ROWS_PER_TXN 2u
#define ROWS_PER_MIB 8u

/* ---- clocks, randomness, memory ---- */

static uint64_t fake_ns;

static uint64_t clock_ns(void *ctx)
{
	(void)ctx;
	return fake_ns += 1000000u;
}

static uint64_t rng_state = 1;

static void rnd(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++) {
		uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		p[i] = (uint8_t)(z ^ (z >> 31));
	}
}

static int64_t wall_ms(void *ctx)
{
	(void)ctx;
	return INT64_C(1800000000000);
}

static int64_t wall_s(void *ctx)
{
	(void)ctx;
	return 1800000000;
}

static uint64_t heap_live;

static void *h_alloc(void *ctx, size_t len)
{
	(void)ctx;
	void *p = malloc(len);
	heap_live += p != NULL;
	return p;
}

static void h_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	heap_live--;
	free(p);
}

static uint8_t scratch[STORE_LAYOUT_SCRATCH] __attribute__((aligned(8)));

/* ---- the plan, pure ---- */

/* The specification's configuration (section 4's figures). */
static const struct store_layout_config doc_cfg = { .esp_bytes = 32 * MiB, .wal_bytes = 16 * MiB, .telemetry_pct = 25 };

/* The superblock a format of plan p writes. */
static void sb_of_plan(const struct store_plan *p, struct store_super *sb)
{
	memset(sb, 0, sizeof *sb);
	sb->version = STORE_LAYOUT_VERSION;
	sb->generation = 3;
	for (int i = 0; i < 16; i++)
		sb->part_guid[i] = (uint8_t)(0x40 + i);
	sb->block_size = p->block_size;
	sb->align_bytes = p->align_bytes;
	sb->part_start = p->part_start;
	sb->part_blocks = p->part_blocks;
	sb->db_state = STORE_DB_READY;
	sb->n_regions = p->n_regions;
	memcpy(sb->regions, p->regions, sizeof sb->regions);
}

static void sb_for_disk(uint64_t bytes, uint32_t bs, const struct store_layout_config *cfg, struct store_super *sb)
{
	struct store_plan p;
	assert_int_equal(store_layout_plan(cfg, bytes / bs, bs, 0, &p, NULL), 0);
	sb_of_plan(&p, sb);
}

/* A loaded GPT whose data partition is sb's, part_blocks long. */
static struct store_gpt gpt_of(const struct store_super *sb, uint64_t part_blocks)
{
	struct store_gpt g;
	memset(&g, 0, sizeof g);
	g.block_size = sb->block_size;
	g.has_data = true;
	g.data.first_lba = sb->part_start;
	g.data.last_lba = sb->part_start + part_blocks - 1u;
	g.data.index = 1;
	memcpy(g.data.guid, sb->part_guid, 16);
	return g;
}

static void must_plan(const struct store_super *sb, uint64_t gpt_blocks, uint64_t disk_bytes, struct store_grow_plan *p)
{
	struct store_gpt g = gpt_of(sb, gpt_blocks);
	assert_int_equal(store_grow_plan(sb, &g, disk_bytes / sb->block_size, p), 0);
	/* what it would commit decodes */
	uint8_t buf[STORE_SUPER_BYTES];
	struct store_super back;
	enum store_layout_rej rej;
	uint32_t version;
	assert_int_equal(store_super_encode(&p->sb, buf, sizeof buf), 0);
	assert_int_equal(store_super_decode(buf, sizeof buf, &back, &rej, &version), 0);
}

static void assert_region(const struct store_region *r, uint32_t kind, uint64_t start_mib, uint64_t mib, uint32_t bs)
{
	uint64_t per = MiB / bs;
	if (r->kind != kind || r->start != start_mib * per || r->blocks != mib * per)
		fail_msg("region kind %u at %llu MiB, %llu MiB; want kind %u at %llu, %llu", r->kind,
			 (unsigned long long)(r->start / per), (unsigned long long)(r->blocks / per), kind,
			 (unsigned long long)start_mib, (unsigned long long)mib);
}

static uint64_t kind_mib(const struct store_super *sb, enum store_region_kind k, uint32_t *n)
{
	uint64_t blocks;
	*n = store_super_extents(sb, k, &blocks);
	return blocks * sb->block_size / MiB;
}

/* 64 MiB -> 256 MiB: the new 192 units in three parts of 64; BACKUP_B ended the partition,
 * so it goes first and is lengthened; the database and BACKUP_A get a new extent each. */
static void t_plan_64_to_256(void **state)
{
	(void)state;
	static const uint32_t sizes[] = { 512, 4096 };
	for (size_t i = 0; i < 2; i++) {
		uint32_t bs = sizes[i];
		struct store_super sb;
		struct store_grow_plan p;
		sb_for_disk(64 * MiB, bs, &doc_cfg, &sb);
		assert_int_equal(sb.part_blocks * bs, 30 * MiB);
		must_plan(&sb, sb.part_blocks, 256 * MiB, &p);
		assert_int_equal(p.outcome, STORE_GROW_FILES);
		assert_false(p.pending);
		assert_false(p.table_full);
		assert_int_equal(p.old_part_blocks * bs, 30 * MiB);
		assert_int_equal(p.new_part_blocks * bs, 222 * MiB);
		assert_int_equal(p.free_blocks * bs, 192 * MiB);
		assert_int_equal(p.unused_blocks, 0);
		assert_int_equal(p.n_parts, 3);
		uint64_t per = MiB / bs;
		assert_int_equal(p.parts[0].kind, STORE_REGION_BACKUP_B);
		assert_true(p.parts[0].merged);
		assert_int_equal(p.parts[0].start, 30 * per);
		assert_int_equal(p.parts[1].kind, STORE_REGION_DB);
		assert_false(p.parts[1].merged);
		assert_int_equal(p.parts[1].start, 94 * per);
		assert_int_equal(p.parts[2].kind, STORE_REGION_BACKUP_A);
		assert_int_equal(p.parts[2].start, 158 * per);
		for (int k = 0; k < 3; k++)
			assert_int_equal(p.parts[k].blocks, 64 * per);
		assert_int_equal(p.sb.n_regions, 7);
		assert_int_equal(p.sb.part_blocks, 222 * per);
		assert_region(&p.sb.regions[0], STORE_REGION_DB, 1, 7, bs);
		assert_region(&p.sb.regions[1], STORE_REGION_WAL, 8, 1, bs);
		assert_region(&p.sb.regions[2], STORE_REGION_TELEMETRY, 9, 7, bs);
		assert_region(&p.sb.regions[3], STORE_REGION_BACKUP_A, 16, 7, bs);
		assert_region(&p.sb.regions[4], STORE_REGION_BACKUP_B, 23, 71, bs);
		assert_region(&p.sb.regions[5], STORE_REGION_DB, 94, 64, bs);
		assert_region(&p.sb.regions[6], STORE_REGION_BACKUP_A, 158, 64, bs);
		uint32_t n;
		assert_int_equal(kind_mib(&p.sb, STORE_REGION_DB, &n), 71);
		assert_int_equal(n, 2);
		assert_int_equal(kind_mib(&p.sb, STORE_REGION_BACKUP_A, &n), 71);
		assert_int_equal(kind_mib(&p.sb, STORE_REGION_BACKUP_B, &n), 71);
		assert_int_equal(n, 1);
		assert_int_equal(kind_mib(&p.sb, STORE_REGION_WAL, &n), 1);     /* never grows */
		assert_int_equal(kind_mib(&p.sb, STORE_REGION_TELEMETRY, &n), 7);
		assert_int_equal(p.sb.generation, sb.generation); /* the commit takes the next */
		/* A GPT already at 222 MiB (a growth cut after its GPT): the same plan. */
		struct store_grow_plan q;
		must_plan(&sb, p.new_part_blocks, 256 * MiB, &q);
		assert_true(q.pending);
		assert_int_equal(q.outcome, STORE_GROW_FILES);
		assert_memory_equal(&q.sb, &p.sb, sizeof q.sb);
		/* and planning from the grown superblock: nothing more */
		must_plan(&p.sb, p.sb.part_blocks, 256 * MiB, &q);
		assert_int_equal(q.outcome, STORE_GROW_NONE);
	}
}

/* Under one unit: nothing. Under three: the partition grows, the space stays unused, and
 * counts at the next growth (the free space runs from the last region's end). */
static void t_plan_small_growths(void **state)
{
	(void)state;
	struct store_super sb;
	struct store_grow_plan p, q;
	sb_for_disk(64 * MiB, 512, &doc_cfg, &sb);
	must_plan(&sb, sb.part_blocks, 64 * MiB + 16 * 1024, &p); /* the last usable LBA + 1 was 0.98 units past */
	assert_int_equal(p.outcome, STORE_GROW_NONE);
	assert_int_equal(p.new_part_blocks, sb.part_blocks);
	assert_memory_equal(&p.sb, &sb, sizeof sb);
	must_plan(&sb, sb.part_blocks, 66 * MiB, &p);
	assert_int_equal(p.outcome, STORE_GROW_UNUSED);
	assert_false(p.table_full);
	assert_int_equal(p.n_parts, 0);
	assert_int_equal(p.new_part_blocks * 512, 32 * MiB);
	assert_int_equal(p.free_blocks * 512, 2 * MiB);
	assert_int_equal(p.unused_blocks * 512, 2 * MiB);
	assert_int_equal(p.sb.part_blocks * 512, 32 * MiB);
	assert_int_equal(p.sb.n_regions, 5);
	assert_memory_equal(p.sb.regions, sb.regions, sizeof sb.regions);
	/* one more MiB: three units, one each */
	must_plan(&p.sb, p.sb.part_blocks, 67 * MiB, &q);
	assert_int_equal(q.outcome, STORE_GROW_FILES);
	assert_int_equal(q.free_blocks * 512, 3 * MiB);
	assert_int_equal(q.sb.n_regions, 7);
	assert_region(&q.sb.regions[4], STORE_REGION_BACKUP_B, 23, 8, 512);
	assert_region(&q.sb.regions[5], STORE_REGION_DB, 31, 1, 512);
	assert_region(&q.sb.regions[6], STORE_REGION_BACKUP_A, 32, 1, 512);
	/* four units: three parts of one, one unit left at the end */
	must_plan(&p.sb, p.sb.part_blocks, 68 * MiB, &q);
	assert_int_equal(q.outcome, STORE_GROW_FILES);
	assert_int_equal(q.unused_blocks * 512, 1 * MiB);
	assert_int_equal(q.parts[2].start + q.parts[2].blocks + q.unused_blocks, q.new_part_blocks);
}

/* Growth after growth: the order rotates (the kind of the last region first, lengthened),
 * two regions per growth, until the table is full; then the partition still grows and the
 * space stays unused. A last region of a kind that never grows: three new extents. */
static void t_plan_rotation_and_full_table(void **state)
{
	(void)state;
	static const struct store_layout_config cfg = { .esp_bytes = 0, .wal_bytes = 1 * MiB, .telemetry_pct = 0 };
	struct store_super sb;
	struct store_grow_plan p;
	sb_for_disk(12 * MiB, 512, &cfg, &sb);
	assert_int_equal(sb.n_regions, 4);
	static const uint32_t first[] = { STORE_REGION_BACKUP_B, STORE_REGION_BACKUP_A, STORE_REGION_DB };
	uint64_t disk = 12 * MiB;
	uint32_t step = 0;
	for (;; step++) {
		disk += 3 * MiB;
		must_plan(&sb, sb.part_blocks, disk, &p);
		if (p.outcome != STORE_GROW_FILES)
			break;
		assert_int_equal(p.parts[0].kind, first[step % 3]);
		assert_true(p.parts[0].merged);
		assert_int_equal(p.sb.n_regions, sb.n_regions + 2);
		uint32_t na, nb, nd;
		uint64_t a = kind_mib(&p.sb, STORE_REGION_BACKUP_A, &na), b = kind_mib(&p.sb, STORE_REGION_BACKUP_B, &nb),
			 d = kind_mib(&p.sb, STORE_REGION_DB, &nd);
		assert_true(a == d && b == d); /* the backups keep room for a copy */
		sb = p.sb;
		sb.generation++;
	}
	assert_int_equal(step, 6); /* 4 + 2 x 6 = 16 regions */
	assert_int_equal(sb.n_regions, 16);
	assert_int_equal(p.outcome, STORE_GROW_UNUSED);
	assert_true(p.table_full);
	assert_true(p.free_blocks * 512 >= 3 * MiB); /* and what the divisions by 3 left before */
	assert_int_equal(p.unused_blocks, p.free_blocks);
	assert_int_equal(p.new_part_blocks, sb.part_blocks + 3 * MiB / 512);
	assert_memory_equal(p.sb.regions, sb.regions, sizeof sb.regions);

	/* The telemetry region last: no merge, DB, BACKUP_A, BACKUP_B in that order. */
	sb_for_disk(64 * MiB, 512, &doc_cfg, &sb);
	uint64_t per = MiB / 512;
	sb.regions[3].start = 9 * per;  /* BACKUP_A */
	sb.regions[4].start = 16 * per; /* BACKUP_B */
	sb.regions[2].start = 23 * per; /* TELEMETRY, the last */
	must_plan(&sb, sb.part_blocks, 256 * MiB, &p);
	assert_int_equal(p.outcome, STORE_GROW_FILES);
	assert_int_equal(p.sb.n_regions, 8);
	assert_region(&p.sb.regions[5], STORE_REGION_DB, 30, 64, 512);
	assert_region(&p.sb.regions[6], STORE_REGION_BACKUP_A, 94, 64, 512);
	assert_region(&p.sb.regions[7], STORE_REGION_BACKUP_B, 158, 64, 512);
	/* The same with the files in more extents (the database in 7, BACKUP_A in 4: 14
	 * regions): three more would make 17, the space stays unused; with 13 they fit. */
	for (uint32_t total = 14; total >= 13; total--) {
		struct store_super full = sb;
		full.regions[0].blocks = per; /* DB [1, 2), then [2, 3) ... [7, 8) */
		uint32_t n = 5;
		for (uint64_t u = 2; u < 8; u++)
			full.regions[n++] = (struct store_region){ STORE_REGION_DB, 0, u * per, per };
		full.regions[3].blocks = per; /* BACKUP_A [9, 10), then up to 16 */
		uint32_t extra = total - 11u;
		for (uint32_t e = 0; e < extra; e++) {
			uint64_t u = 10u + e, len = e + 1u == extra ? 16u - u : 1u;
			full.regions[n++] = (struct store_region){ STORE_REGION_BACKUP_A, 0, u * per, len * per };
		}
		full.n_regions = n;
		assert_int_equal(n, total);
		must_plan(&full, full.part_blocks, 256 * MiB, &p);
		if (total == 14) {
			assert_int_equal(p.outcome, STORE_GROW_UNUSED);
			assert_true(p.table_full);
		} else {
			assert_int_equal(p.outcome, STORE_GROW_FILES);
			assert_int_equal(p.sb.n_regions, 16);
		}
	}
}

static void t_plan_refusals(void **state)
{
	(void)state;
	struct store_super sb;
	struct store_grow_plan p;
	sb_for_disk(64 * MiB, 512, &doc_cfg, &sb);
	uint64_t n = 256 * MiB / 512, ab = MiB / 512;
	struct store_gpt g = gpt_of(&sb, sb.part_blocks + 1u); /* longer, not by whole units */
	assert_int_equal(store_grow_plan(&sb, &g, n, &p), -E_CORRUPT);
	g = gpt_of(&sb, sb.part_blocks - ab); /* shorter */
	assert_int_equal(store_grow_plan(&sb, &g, n, &p), -E_CORRUPT);
	g = gpt_of(&sb, sb.part_blocks);
	g.data.guid[0] ^= 1;
	assert_int_equal(store_grow_plan(&sb, &g, n, &p), -E_CORRUPT);
	g = gpt_of(&sb, sb.part_blocks);
	g.data.first_lba += ab;
	g.data.last_lba += ab;
	assert_int_equal(store_grow_plan(&sb, &g, n, &p), -E_CORRUPT);
	g = gpt_of(&sb, sb.part_blocks);
	assert_int_equal(store_grow_plan(&sb, &g, 60 * MiB / 512, &p), -E_RANGE); /* never shrinks */
	g = gpt_of(&sb, sb.part_blocks + 64 * ab);
	assert_int_equal(store_grow_plan(&sb, &g, 64 * MiB / 512, &p), -E_RANGE); /* the GPT's is larger */
	g = gpt_of(&sb, sb.part_blocks);
	g.block_size = 4096;
	assert_int_equal(store_grow_plan(&sb, &g, n, &p), -E_INVAL);
	g.block_size = 512;
	g.has_data = false;
	assert_int_equal(store_grow_plan(&sb, &g, n, &p), -E_INVAL);
	assert_int_equal(store_grow_plan(&sb, NULL, n, &p), -E_INVAL);
	assert_int_equal(store_grow_plan(&sb, &g, n, NULL), -E_INVAL);
}

/* store_gpt_entry_resize: one field of one entry changes, the CRC follows; refusals. */
static void t_gpt_entry_resize(void **state)
{
	(void)state;
	struct store_gpt_new g;
	memset(&g, 0, sizeof g);
	g.block_size = 512;
	g.disk_blocks = 131072;
	g.n_parts = 2;
	g.parts[0] = (struct store_gpt_new_part){ .guid = { 2 }, .first_lba = 2048, .last_lba = 4095,
						  .name = "EFI system partition" };
	g.parts[1] = (struct store_gpt_new_part){ .guid = { 4 }, .first_lba = 4096, .last_lba = 8191,
						  .name = "urMQTT data" };
	assert_int_equal(store_guid_from_text(STORE_GPT_TYPE_ESP, g.parts[0].type), 0);
	assert_int_equal(store_guid_from_text(STORE_GPT_TYPE_DATA, g.parts[1].type), 0);
	static uint8_t arr[16384], before[16384];
	uint32_t crc0, crc;
	assert_int_equal(store_gpt_entries_encode(&g, arr, sizeof arr, &crc0), 0);
	memcpy(before, arr, sizeof arr);
	assert_int_equal(store_gpt_entry_resize(arr, sizeof arr, 1, 100000, &crc), 0);
	assert_int_not_equal(crc, crc0);
	for (size_t i = 0; i < sizeof arr; i++)
		if (i < 128 + 40 || i >= 128 + 48)
			assert_int_equal(arr[i], before[i]);
	assert_int_equal(arr[128 + 40], (uint8_t)100000);
	assert_int_equal(arr[128 + 41], (uint8_t)(100000 >> 8));
	assert_int_equal(arr[128 + 42], (uint8_t)(100000 >> 16));
	/* decoded against a header for a disk where it fits */
	struct store_gpt h;
	enum store_gpt_rej rej;
	static uint8_t hdr[512];
	assert_int_equal(store_gpt_header_encode(&g, false, crc, hdr, sizeof hdr), 0);
	assert_int_equal(store_gpt_header_decode(hdr, sizeof hdr, 512, g.disk_blocks, 1, &h, &rej), 0);
	assert_int_equal(store_gpt_entries_decode(arr, sizeof arr, &h, &rej), 0);
	assert_int_equal(h.data.last_lba, 100000);
	assert_int_equal(h.esp.last_lba, 4095);
	/* refusals: nothing changed */
	memcpy(before, arr, sizeof arr);
	assert_int_equal(store_gpt_entry_resize(arr, sizeof arr, 2, 100000, &crc), -E_INVAL);   /* unused */
	assert_int_equal(store_gpt_entry_resize(arr, sizeof arr, 128, 100000, &crc), -E_INVAL); /* past the array */
	assert_int_equal(store_gpt_entry_resize(arr, sizeof arr, 1, 4095, &crc), -E_INVAL);     /* before its first */
	assert_int_equal(store_gpt_entry_resize(arr, sizeof arr - 1, 1, 100000, &crc), -E_INVAL);
	assert_int_equal(crc, 0);
	assert_memory_equal(arr, before, sizeof arr);
}

/* ---- the procedure on a disk ---- */

struct disk {
	struct fake_blk *fb;
	struct store_dev dev;
	uint8_t bounce[64 * 1024];
};

static struct disk *disk_wrap(struct fake_blk *fb)
{
	struct disk *d = calloc(1, sizeof *d);
	assert_non_null(d);
	assert_non_null(fb);
	d->fb = fb;
	const struct store_dev_port port = { clock_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&d->dev, fake_blk_dev(fb), d->bounce, sizeof d->bounce, 1000, &port), 0);
	return d;
}

static struct disk *disk_new(uint64_t bytes, uint32_t bs)
{
	struct fake_blk_config c = { .blocks = bytes / bs, .block_size = bs, .discard = true, .write_zeroes = true };
	return disk_wrap(fake_blk_new(&c));
}

static void disk_free(struct disk *d)
{
	fake_blk_free(d->fb);
	free(d);
}

static struct fake_blk_counts counts(const struct disk *d);

/* A healthy disk holding exactly what reads of d see now, all of it durable. */
static struct disk *disk_copy(const struct disk *d)
{
	struct fake_blk *n = fake_blk_after_power_cut(d->fb, 0, NULL);
	assert_non_null(n);
	if (counts(d).unflushed) { /* else the durable image is what reads see */
		size_t size;
		const uint8_t *cur = fake_blk_bytes(d->fb, &size);
		fake_blk_set(n, 0, cur, size);
	}
	return disk_wrap(n);
}

static void disk_grow(struct disk *d, uint64_t bytes)
{
	fake_blk_grow(d->fb, bytes / store_dev_block_size(&d->dev));
}

static void format_disk(struct disk *d, const struct store_layout_config *cfg, struct store_super *sb)
{
	struct store_plan p;
	const struct blk_dev *b = d->dev.blk;
	assert_int_equal(store_layout_plan(cfg, b->topo.capacity, b->topo.logical_block, 0, &p, NULL), 0);
	uint8_t guids[48];
	for (int i = 0; i < 48; i++)
		guids[i] = (uint8_t)(i * 37 + 11);
	assert_int_equal(store_disk_format(&d->dev, &p, guids, 1800000000u, scratch, sizeof scratch, sb), 0);
}

static void probe_ours(struct disk *d, struct store_disk_info *info)
{
	assert_int_equal(store_disk_probe(&d->dev, scratch, sizeof scratch, info), 0);
	if (info->kind != STORE_DISK_OURS)
		fail_msg("probe: %s: %s", store_disk_kind_name(info->kind), info->what);
}

static struct fake_blk_counts counts(const struct disk *d)
{
	struct fake_blk_counts c;
	fake_blk_counts(d->fb, &c);
	return c;
}

/* Both GPT copies valid for the disk's size: the primary at LBA 1 and the backup at the
 * last LBA, describing a data partition of part_blocks; the protective MBR sized too. */
static void assert_gpt_whole(struct disk *d, const struct store_super *sb)
{
	uint32_t bs = store_dev_block_size(&d->dev), eb = store_gpt_array_blocks(bs);
	uint64_t n = store_dev_blocks(&d->dev);
	size_t size;
	const uint8_t *img = fake_blk_bytes(d->fb, &size);
	for (int backup = 0; backup < 2; backup++) {
		uint64_t at = backup ? n - 1u : 1u;
		struct store_gpt g;
		enum store_gpt_rej rej;
		assert_int_equal(store_gpt_header_decode(img + at * bs, bs, bs, n, at, &g, &rej), 0);
		assert_int_equal(g.last_usable, n - 2u - eb);
		assert_int_equal(store_gpt_entries_decode(img + g.entries_lba * bs, (size_t)eb * bs, &g, &rej), 0);
		assert_true(g.has_data);
		assert_int_equal(g.data.first_lba, sb->part_start);
		assert_int_equal(g.data.last_lba, sb->part_start + sb->part_blocks - 1u);
		assert_memory_equal(g.data.guid, sb->part_guid, 16);
	}
	uint8_t mbr[512];
	store_gpt_mbr_encode(mbr, sizeof mbr, n);
	assert_memory_equal(img, mbr, sizeof mbr);
}

/* The procedure: nothing written under a unit; then the writes it makes, their result, the
 * console line; and nothing more the second time. */
static void t_grow_procedure(void **state)
{
	(void)state;
	static const uint32_t sizes[] = { 512, 4096 };
	for (size_t i = 0; i < 2; i++) {
		uint32_t bs = sizes[i];
		struct disk *d = disk_new(64 * MiB, bs);
		struct store_super sb, before;
		struct store_disk_info info;
		struct store_grow_result r;
		format_disk(d, &doc_cfg, &sb);
		disk_grow(d, 64 * MiB + 16 * 1024);
		struct fake_blk_counts c0 = counts(d), c1;
		before = sb;
		assert_int_equal(store_grow(&d->dev, &sb, scratch, sizeof scratch, &r), 0);
		c1 = counts(d);
		assert_int_equal(r.outcome, STORE_GROW_NONE);
		assert_string_equal(r.what, "the disk (64 MiB) did not grow by a unit (1 MiB) past the data partition "
					    "(30 MiB): nothing changes");
		assert_int_equal(c1.blocks_written, c0.blocks_written);
		assert_int_equal(c1.flushes, c0.flushes);
		assert_memory_equal(&sb, &before, sizeof sb);
		probe_ours(d, &info);
		assert_false(info.grow_pending);

		disk_grow(d, 256 * MiB);
		/* a boot loader's code and disk signature in LBA 0 (the release disk's GRUB
		 * boot.img): the growth rewrites the protective MBR around them */
		uint8_t code[446];
		for (size_t k = 0; k < sizeof code; k++)
			code[k] = (uint8_t)(k * 13u + 1u);
		fake_blk_set(d->fb, 0, code, sizeof code);
		c0 = counts(d);
		assert_int_equal(store_grow(&d->dev, &sb, scratch, sizeof scratch, &r), 0);
		c1 = counts(d);
		assert_int_equal(r.outcome, STORE_GROW_FILES);
		{
			size_t size;
			assert_memory_equal(fake_blk_bytes(d->fb, &size), code, sizeof code);
			memset(code, 0, sizeof code); /* assert_gpt_whole below wants the bare MBR */
			fake_blk_set(d->fb, 0, code, sizeof code);
		}
		assert_string_equal(r.what, "the disk grew: data partition 30 MiB -> 222 MiB; database +64 MiB, "
					    "backup A +64 MiB, backup B +64 MiB");
		/* backup array and header; MBR and primary array; primary header; superblock */
		assert_int_equal(c1.writes - c0.writes, 6);
		assert_int_equal(c1.flushes - c0.flushes, 4);
		assert_int_equal(sb.generation, before.generation + 1u);
		assert_int_equal(sb.n_regions, 7);
		assert_int_equal(sb.part_blocks * bs, 222 * MiB);
		assert_int_equal(r.gained[STORE_REGION_DB] * bs, 64 * MiB);
		assert_int_equal(r.gained[STORE_REGION_WAL], 0);
		probe_ours(d, &info);
		assert_false(info.grow_pending);
		assert_false(info.gpt_from_backup);
		assert_memory_equal(&info.sb, &sb, sizeof sb);
		assert_gpt_whole(d, &sb);
		c0 = counts(d);
		assert_int_equal(store_grow(&d->dev, &sb, scratch, sizeof scratch, &r), 0);
		assert_int_equal(r.outcome, STORE_GROW_NONE);
		assert_int_equal(counts(d).blocks_written, c0.blocks_written);
		disk_free(d);
	}
}

/* Two MiB: the partition grows, the space stays unused; one MiB more: three parts. */
static void t_grow_unused_then_used(void **state)
{
	(void)state;
	struct disk *d = disk_new(64 * MiB, 512);
	struct store_super sb;
	struct store_disk_info info;
	struct store_grow_result r;
	format_disk(d, &doc_cfg, &sb);
	disk_grow(d, 66 * MiB);
	assert_int_equal(store_grow(&d->dev, &sb, scratch, sizeof scratch, &r), 0);
	assert_int_equal(r.outcome, STORE_GROW_UNUSED);
	assert_string_equal(r.what, "the disk grew: data partition 30 MiB -> 32 MiB; the new 2 MiB stay unused "
				    "(the files grow by 3 units of 1 MiB at least)");
	assert_int_equal(sb.part_blocks * 512, 32 * MiB);
	assert_int_equal(sb.n_regions, 5);
	probe_ours(d, &info);
	assert_false(info.grow_pending);
	assert_gpt_whole(d, &sb);
	disk_grow(d, 67 * MiB);
	assert_int_equal(store_grow(&d->dev, &sb, scratch, sizeof scratch, &r), 0);
	assert_int_equal(r.outcome, STORE_GROW_FILES);
	assert_string_equal(r.what, "the disk grew: data partition 32 MiB -> 33 MiB; database +1 MiB, backup A +1 MiB, "
				    "backup B +1 MiB");
	assert_int_equal(sb.n_regions, 7);
	probe_ours(d, &info);
	assert_memory_equal(&info.sb, &sb, sizeof sb);
	assert_gpt_whole(d, &sb);
	disk_free(d);
}

/* Growth after growth until the region table is full: then the partition grows alone and
 * the console line says so, with the numbers. */
static void t_grow_until_the_table_is_full(void **state)
{
	(void)state;
	static const struct store_layout_config cfg = { .esp_bytes = 1 * MiB, .wal_bytes = 1 * MiB, .telemetry_pct = 0 };
	struct disk *d = disk_new(12 * MiB, 4096);
	struct store_super sb;
	struct store_grow_result r;
	struct store_disk_info info;
	format_disk(d, &cfg, &sb);
	uint64_t disk = 12 * MiB;
	int files = 0;
	do {
		disk += 3 * MiB;
		disk_grow(d, disk);
		assert_int_equal(store_grow(&d->dev, &sb, scratch, sizeof scratch, &r), 0);
		files += r.outcome == STORE_GROW_FILES;
		assert_gpt_whole(d, &sb);
	} while (r.outcome == STORE_GROW_FILES);
	assert_int_equal(files, 6);
	assert_int_equal(r.outcome, STORE_GROW_UNUSED);
	assert_true(r.table_full);
	assert_int_equal(sb.n_regions, 16);
	char want[160];
	uint64_t unused = r.unused_blocks * 4096 / MiB;
	assert_true(unused >= 3);
	snprintf(want, sizeof want, "; the region table is full (16 of 16 regions): the new %llu MiB stay unused until a "
		 "re-format", (unsigned long long)unused);
	assert_non_null(strstr(r.what, want));
	disk += 3 * MiB;
	disk_grow(d, disk);
	assert_int_equal(store_grow(&d->dev, &sb, scratch, sizeof scratch, &r), 0);
	assert_int_equal(r.outcome, STORE_GROW_UNUSED);
	assert_int_equal(r.unused_blocks * 4096 / MiB, unused + 3); /* it adds up */
	probe_ours(d, &info);
	assert_memory_equal(&info.sb, &sb, sizeof sb);
	disk_free(d);
}

/* ---- with the database ---- */

struct node {
	struct disk *d;
	uint8_t io_buf[2u * 65536u];
	struct store_db db;
	struct store_boot_result boot;
	bool up;
};

static struct node *node_up; /* the open node, for the teardown of a failed test */

static int node_boot(struct node *n, struct disk *d, const struct store_layout_config *cfg)
{
	memset(&n->db, 0, sizeof n->db);
	memset(&n->boot, 0, sizeof n->boot);
	n->d = d;
	const struct store_sqlite_mem m = { h_alloc, h_free, NULL, (size_t)32 << 20 };
	assert_int_equal(store_sqlite_init(&m), 0);
	uint8_t guids[48];
	rnd(NULL, guids, sizeof guids);
	const struct store_boot_config bc = {
		.layout = *cfg, .cache_kb = 1024, .checkpoint_pages = 64, .guids = guids, .now_s = 1800000000,
		.scratch = scratch, .scratch_len = sizeof scratch, .io_buf = n->io_buf, .io_buf_len = sizeof n->io_buf,
		.random = rnd, .wall_ms = wall_ms, .wall_s = wall_s,
	};
	int err = store_boot(&d->dev, &bc, &n->db, &n->boot);
	if (err) {
		assert_int_equal(store_sqlite_fini(), 0);
		return err;
	}
	n->up = true;
	node_up = n;
	return 0;
}

static void node_must_boot(struct node *n, struct disk *d, const struct store_layout_config *cfg)
{
	int err = node_boot(n, d, cfg);
	if (err)
		fail_msg("boot: %s: %s", err_name(err), n->boot.what);
}

static void node_down(struct node *n)
{
	if (!n->up)
		return;
	store_boot_close(&n->db);
	n->up = false;
	node_up = NULL;
	assert_int_equal(store_sqlite_fini(), 0);
	assert_int_equal(heap_live, 0);
}

/* After a failure: close what the test left open, so the next test starts clean. */
static int teardown(void **state)
{
	(void)state;
	if (node_up) {
		sqlite3_stmt *st;
		while (node_up->db.h && (st = sqlite3_next_stmt(node_up->db.h, NULL)) != NULL)
			(void)sqlite3_finalize(st);
		store_boot_close(&node_up->db);
		node_up->up = false;
		node_up = NULL;
		(void)!store_sqlite_fini();
	}
	heap_live = 0;
	return 0;
}

static void row_value(uint32_t k, uint8_t *v)
{
	for (uint32_t i = 0; i < ROW_BYTES; i++)
		v[i] = (uint8_t)(k * 131u + i * 7u + (i >> 8));
}

/* Rows [from, to) of big(k, v), ROWS_PER_TXN per transaction, each followed by a
 * checkpoint (the database file grows on the disk). 0 or the first failure; *done: rows
 * committed. */
static int put_rows(struct store_db *db, uint32_t from, uint32_t to, uint32_t *done)
{
	static uint8_t v[ROW_BYTES];
	sqlite3_stmt *s = NULL;
	*done = from;
	int rc = sqlite3_exec(db->h, "CREATE TABLE IF NOT EXISTS big(k INTEGER PRIMARY KEY, v BLOB)", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db->h, "INSERT INTO big(k, v) VALUES(?, ?)", -1, &s, NULL);
	int err = rc == SQLITE_OK ? 0 : -E_IO;
	for (uint32_t k = from; k < to && !err;) {
		err = store_db_begin(db);
		uint32_t end = k + ROWS_PER_TXN < to ? k + ROWS_PER_TXN : to;
		for (uint32_t j = k; j < end && !err; j++) {
			row_value(j, v);
			(void)sqlite3_bind_int64(s, 1, j);
			(void)sqlite3_bind_blob(s, 2, v, ROW_BYTES, SQLITE_STATIC);
			rc = sqlite3_step(s);
			(void)sqlite3_reset(s);
			err = rc == SQLITE_DONE ? 0 : (rc & 0xff) == SQLITE_FULL ? -E_RANGE : -E_IO;
		}
		if (!err)
			err = store_db_commit(db);
		else
			store_db_rollback(db);
		if (err)
			break;
		*done = k = end;
		uint32_t pages;
		err = store_db_maintain(db, true, &pages);
	}
	(void)sqlite3_finalize(s);
	return err;
}

static void must_put_rows(struct store_db *db, uint32_t from, uint32_t to)
{
	uint32_t done;
	int err = put_rows(db, from, to, &done);
	if (err)
		fail_msg("rows %u..%u: %s at %u (%s)", from, to, err_name(err), done, db->why);
}

/* Exactly rows [0, n), each with its value. */
static void check_rows(struct store_db *db, uint32_t n)
{
	static uint8_t want[ROW_BYTES];
	sqlite3_stmt *s = NULL;
	assert_int_equal(sqlite3_prepare_v2(db->h, "SELECT k, v FROM big ORDER BY k", -1, &s, NULL), SQLITE_OK);
	uint32_t k = 0;
	int rc;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		assert_int_equal(sqlite3_column_int64(s, 0), k);
		row_value(k, want);
		assert_int_equal(sqlite3_column_bytes(s, 1), ROW_BYTES);
		assert_memory_equal(sqlite3_column_blob(s, 1), want, ROW_BYTES);
		k++;
	}
	assert_int_equal(rc, SQLITE_DONE);
	assert_int_equal(sqlite3_finalize(s), SQLITE_OK);
	assert_int_equal(k, n);
}

/* The database file's size in bytes (page size x page count). */
static uint64_t db_bytes(struct store_db *db)
{
	sqlite3_stmt *s = NULL;
	uint64_t v = 0;
	assert_int_equal(sqlite3_prepare_v2(db->h, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size",
					    -1, &s, NULL),
			 SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = (uint64_t)sqlite3_column_int64(s, 0);
	(void)sqlite3_finalize(s);
	return v;
}

static uint64_t first_extent_bytes(const struct store_super *sb, enum store_region_kind k)
{
	return store_super_region(sb, k)->blocks * sb->block_size;
}

/* Another partition right after ours: the GPT cannot be rewritten, nothing is written
 * (-E_NOSYS), and a boot goes on with the layout as it is. */
static void t_grow_refused_by_another_partition(void **state)
{
	(void)state;
	struct disk *d = disk_new(64 * MiB, 512);
	struct store_super sb;
	format_disk(d, &doc_cfg, &sb);
	/* our GPT again, with a third partition in the last MiB before the backup array */
	uint64_t n = store_dev_blocks(&d->dev), fu, lu;
	assert_int_equal(store_gpt_geometry(512, n, &fu, &lu), 0);
	struct store_disk_info info;
	probe_ours(d, &info);
	struct store_gpt_new g;
	memset(&g, 0, sizeof g);
	g.block_size = 512;
	g.disk_blocks = n;
	g.n_parts = 3;
	g.parts[0] = (struct store_gpt_new_part){ .first_lba = info.esp_start,
						  .last_lba = info.esp_start + info.esp_blocks - 1u, .name = "esp" };
	g.parts[1] = (struct store_gpt_new_part){ .first_lba = sb.part_start, .last_lba = sb.part_start + sb.part_blocks - 1u,
						  .name = "urMQTT data" };
	g.parts[2] = (struct store_gpt_new_part){ .first_lba = sb.part_start + sb.part_blocks, .last_lba = lu,
						  .name = "someone else's" };
	assert_int_equal(store_guid_from_text(STORE_GPT_TYPE_ESP, g.parts[0].type), 0);
	assert_int_equal(store_guid_from_text(STORE_GPT_TYPE_DATA, g.parts[1].type), 0);
	assert_int_equal(store_guid_from_text("0fc63daf-8483-4772-8e79-3d69d8477de4", g.parts[2].type), 0);
	memcpy(g.parts[1].guid, sb.part_guid, 16);
	static uint8_t arr[16384], hdr[512];
	uint32_t crc;
	assert_int_equal(store_gpt_entries_encode(&g, arr, sizeof arr, &crc), 0);
	fake_blk_set(d->fb, 2 * 512, arr, sizeof arr);
	fake_blk_set(d->fb, (n - 33) * 512, arr, sizeof arr);
	assert_int_equal(store_gpt_header_encode(&g, false, crc, hdr, sizeof hdr), 0);
	fake_blk_set(d->fb, 512, hdr, sizeof hdr);
	assert_int_equal(store_gpt_header_encode(&g, true, crc, hdr, sizeof hdr), 0);
	fake_blk_set(d->fb, (n - 1) * 512, hdr, sizeof hdr);
	probe_ours(d, &info);
	disk_grow(d, 256 * MiB);
	struct store_grow_result r;
	struct fake_blk_counts c0 = counts(d);
	assert_int_equal(store_grow(&d->dev, &sb, scratch, sizeof scratch, &r), -E_NOSYS);
	assert_int_equal(r.outcome, STORE_GROW_NONE);
	assert_non_null(strstr(r.what, "cannot be rewritten by this image"));
	assert_int_equal(counts(d).blocks_written, c0.blocks_written);
	assert_int_equal(counts(d).flushes, c0.flushes);
	/* a boot: the layout as it is, the line saying why */
	struct node nd;
	node_must_boot(&nd, d, &doc_cfg);
	assert_int_equal(nd.boot.grow.outcome, STORE_GROW_NONE);
	assert_non_null(strstr(nd.boot.grow.what, "not grown"));
	assert_int_equal(nd.boot.sb.part_blocks, sb.part_blocks);
	node_down(&nd);
	disk_free(d);
}

/* A boot grows the disk; the database then holds more than its old region could. */
static void t_boot_grows_the_disk(void **state)
{
	(void)state;
	struct disk *d = disk_new(64 * MiB, 512);
	struct node n;
	node_must_boot(&n, d, &doc_cfg);
	assert_true(n.boot.created);
	assert_int_equal(n.boot.grow.what[0], 0); /* formatted by this boot: no growth line */
	must_put_rows(&n.db, 0, 4 * ROWS_PER_MIB);
	uint64_t old_room = first_extent_bytes(&n.boot.sb, STORE_REGION_DB);
	node_down(&n);

	disk_grow(d, 256 * MiB);
	node_must_boot(&n, d, &doc_cfg);
	assert_int_equal(n.boot.found, STORE_DISK_OURS);
	assert_int_equal(n.boot.grow.outcome, STORE_GROW_FILES);
	assert_string_equal(n.boot.grow.what, "the disk grew: data partition 30 MiB -> 222 MiB; database +64 MiB, "
					      "backup A +64 MiB, backup B +64 MiB");
	assert_non_null(strstr(n.boot.what, "our disk, grown; database opened and checked"));
	assert_int_equal(n.boot.sb.n_regions, 7);
	check_rows(&n.db, 4 * ROWS_PER_MIB);
	must_put_rows(&n.db, 4 * ROWS_PER_MIB, 16 * ROWS_PER_MIB);
	assert_true(db_bytes(&n.db) > old_room + 4 * MiB);
	check_rows(&n.db, 16 * ROWS_PER_MIB);
	node_down(&n);
	/* the pages past the first extent are in the second */
	const struct store_region *e1 = store_super_extent(&n.boot.sb, STORE_REGION_DB, 1);
	assert_non_null(e1);
	size_t size;
	const uint8_t *img = fake_blk_bytes(d->fb, &size);
	static const uint8_t zero[512];
	assert_memory_not_equal(img + (n.boot.sb.part_start + e1->start) * 512, zero, sizeof zero);

	node_must_boot(&n, d, &doc_cfg);
	assert_int_equal(n.boot.grow.outcome, STORE_GROW_NONE);
	assert_non_null(strstr(n.boot.grow.what, "nothing changes"));
	assert_non_null(strstr(n.boot.what, "our disk; database opened and checked"));
	check_rows(&n.db, 16 * ROWS_PER_MIB);
	node_down(&n);
	disk_free(d);
}

/* 64 -> 128 -> 256 MiB, rows added after each growth past what the database had room for. */
static void t_boot_grows_twice(void **state)
{
	(void)state;
	struct disk *d = disk_new(64 * MiB, 4096);
	struct node n;
	node_must_boot(&n, d, &doc_cfg);
	must_put_rows(&n.db, 0, 5 * ROWS_PER_MIB);
	node_down(&n);

	disk_grow(d, 128 * MiB);
	node_must_boot(&n, d, &doc_cfg);
	assert_int_equal(n.boot.grow.outcome, STORE_GROW_FILES);
	assert_string_equal(n.boot.grow.what, "the disk grew: data partition 30 MiB -> 94 MiB; database +21 MiB, "
					      "backup A +21 MiB, backup B +21 MiB; 1 MiB unused at the end");
	check_rows(&n.db, 5 * ROWS_PER_MIB);
	must_put_rows(&n.db, 5 * ROWS_PER_MIB, 24 * ROWS_PER_MIB); /* 24 MiB: past the first 7 MiB */
	node_down(&n);

	disk_grow(d, 256 * MiB);
	node_must_boot(&n, d, &doc_cfg);
	assert_int_equal(n.boot.grow.outcome, STORE_GROW_FILES);
	assert_string_equal(n.boot.grow.what, "the disk grew: data partition 94 MiB -> 222 MiB; database +43 MiB, "
					      "backup A +43 MiB, backup B +43 MiB");
	const struct store_super *sb = &n.boot.sb;
	assert_int_equal(sb->n_regions, 9);
	/* A lengthened (it ended the partition), then B and the database's third extent */
	assert_region(&sb->regions[6], STORE_REGION_BACKUP_A, 72, 64, 4096);
	assert_region(&sb->regions[7], STORE_REGION_BACKUP_B, 136, 43, 4096);
	assert_region(&sb->regions[8], STORE_REGION_DB, 179, 43, 4096);
	uint32_t k;
	assert_int_equal(kind_mib(sb, STORE_REGION_DB, &k), 71);
	assert_int_equal(k, 3);
	assert_int_equal(kind_mib(sb, STORE_REGION_BACKUP_A, &k), 71);
	assert_int_equal(kind_mib(sb, STORE_REGION_BACKUP_B, &k), 71);
	check_rows(&n.db, 24 * ROWS_PER_MIB);
	must_put_rows(&n.db, 24 * ROWS_PER_MIB, 50 * ROWS_PER_MIB); /* 50 MiB: past 7 + 21, into the third extent */
	check_rows(&n.db, 50 * ROWS_PER_MIB);
	node_down(&n);
	node_must_boot(&n, d, &doc_cfg);
	assert_int_equal(n.boot.grow.outcome, STORE_GROW_NONE);
	check_rows(&n.db, 50 * ROWS_PER_MIB);
	node_down(&n);
	disk_free(d);
}

/* The run-time growth: the database is full (its checkpoint fails with SQLITE_FULL), the
 * device grows, store_boot_grow, and the same connection checkpoints and grows on. */
static void t_runtime_growth(void **state)
{
	(void)state;
	struct disk *d = disk_new(64 * MiB, 512);
	struct node n;
	node_must_boot(&n, d, &doc_cfg);
	uint32_t done;
	int err = put_rows(&n.db, 0, 100 * ROWS_PER_MIB, &done);
	assert_int_equal(err, -E_RANGE); /* the checkpoint found no room */
	assert_true(done > 4 * ROWS_PER_MIB);
	struct store_grow_result r;
	/* not grown yet: nothing to do */
	assert_int_equal(store_boot_grow(&d->dev, &n.boot.sb, scratch, sizeof scratch, &r), 0);
	assert_int_equal(r.outcome, STORE_GROW_NONE);
	disk_grow(d, 256 * MiB);
	uint64_t gen = n.boot.sb.generation;
	assert_int_equal(store_boot_grow(&d->dev, &n.boot.sb, scratch, sizeof scratch, &r), 0);
	assert_int_equal(r.outcome, STORE_GROW_FILES);
	assert_int_equal(n.boot.sb.generation, gen + 1u);
	uint32_t pages;
	err = store_db_maintain(&n.db, true, &pages);
	if (err)
		fail_msg("checkpoint after the growth: %s (%s)", err_name(err), n.db.why);
	check_rows(&n.db, done);
	must_put_rows(&n.db, done, done + 12 * ROWS_PER_MIB);
	check_rows(&n.db, done + 12 * ROWS_PER_MIB);
	assert_int_equal(store_vfs_check(), 0);
	struct store_super grown = n.boot.sb;
	node_down(&n);
	node_must_boot(&n, d, &doc_cfg);
	assert_int_equal(n.boot.grow.outcome, STORE_GROW_NONE);
	assert_int_equal(n.boot.sb.n_regions, 7);
	assert_int_equal(n.boot.sb.part_blocks, grown.part_blocks);
	assert_memory_equal(n.boot.sb.regions, grown.regions, sizeof grown.regions);
	check_rows(&n.db, done + 12 * ROWS_PER_MIB);
	node_down(&n);
	disk_free(d);
}

/* ---- power cuts ---- */

static const struct store_layout_config cut_cfg = { .esp_bytes = 1 * MiB, .wal_bytes = 1 * MiB, .telemetry_pct = 0 };
#define CUT_ROWS (ROWS_PER_MIB / 2u) /* 512 KiB in a 1 MiB database region */

/* The places the GPT takes: LBA 0 to the first usable block, and the backup at the end. */
static void assert_same_gpt(const struct disk *a, const struct disk *b)
{
	uint32_t bs = store_dev_block_size(&a->dev), eb = store_gpt_array_blocks(bs);
	size_t sa, sz;
	const uint8_t *ia = fake_blk_bytes(a->fb, &sa), *ib = fake_blk_bytes(b->fb, &sz);
	assert_int_equal(sa, sz);
	size_t head = (size_t)(2u + eb) * bs, tail = (size_t)(1u + eb) * bs;
	assert_memory_equal(ia, ib, head);
	assert_memory_equal(ia + sa - tail, ib + sz - tail, tail);
}

static void assert_same_layout(const struct store_super *a, const struct store_super *b)
{
	assert_int_equal(a->part_blocks, b->part_blocks);
	assert_int_equal(a->n_regions, b->n_regions);
	assert_memory_equal(a->regions, b->regions, sizeof a->regions);
}

/* Run store_grow on d with the power cut at its request k (counted from its first), seed
 * picking the torn sectors; the disk the cut leaves, or NULL when the growth finished
 * before request k. */
static struct disk *grow_cut_at(struct disk *d, uint64_t k, uint64_t seed)
{
	struct store_disk_info info;
	probe_ours(d, &info);
	struct store_super sb = info.sb;
	struct store_grow_result r;
	fake_blk_die_at(d->fb, counts(d).requests + k, seed);
	int err = store_grow(&d->dev, &sb, scratch, sizeof scratch, &r);
	if (!fake_blk_dead(d->fb)) {
		assert_int_equal(err, 0);
		return NULL;
	}
	assert_int_not_equal(err, 0);
	struct fake_blk *after = fake_blk_after_power_cut(d->fb, seed * 7919u + k, NULL);
	assert_non_null(after);
	return disk_wrap(after);
}

static void cut_sweep(uint32_t bs)
{
	/* A disk of ours with a database, grown from 8 to 12 MiB (its partition from 5 to 9
	 * units: one more for each file, one unused). */
	struct disk *d = disk_new(8 * MiB, bs);
	struct node n;
	node_must_boot(&n, d, &cut_cfg);
	must_put_rows(&n.db, 0, CUT_ROWS);
	node_down(&n);
	disk_grow(d, 12 * MiB);
	struct disk *base = disk_copy(d);
	disk_free(d);

	/* The uncut run: the final GPT and regions every cut must converge to. */
	struct disk *ref = disk_copy(base);
	struct store_disk_info info;
	probe_ours(ref, &info);
	struct store_super want = info.sb;
	struct store_grow_result r;
	uint64_t r0 = counts(ref).requests;
	assert_int_equal(store_grow(&ref->dev, &want, scratch, sizeof scratch, &r), 0);
	assert_int_equal(r.outcome, STORE_GROW_FILES);
	uint64_t n_req = counts(ref).requests - r0;

	uint32_t pending = 0, outcomes[2] = { 0, 0 };
	for (uint64_t k = 0; k <= n_req; k++) {
		for (uint64_t seed = 1; seed <= 3; seed++) {
			struct disk *y = disk_copy(base);
			struct disk *cut = grow_cut_at(y, k, seed);
			disk_free(y);
			if (!cut) {
				assert_int_equal(k, n_req); /* only past the last request */
				continue;
			}
			probe_ours(cut, &info);
			pending += info.grow_pending;
			/* A second cut at every request of the growth that finishes it (no SQL). */
			for (uint64_t j = 0; seed == 1; j++) {
				struct disk *z = disk_copy(cut);
				struct disk *cut2 = grow_cut_at(z, j, 3);
				disk_free(z);
				if (!cut2)
					break;
				struct store_disk_info i2;
				probe_ours(cut2, &i2);
				struct store_super s2 = i2.sb;
				assert_int_equal(store_grow(&cut2->dev, &s2, scratch, sizeof scratch, &r), 0);
				assert_same_layout(&s2, &want);
				assert_same_gpt(cut2, ref);
				disk_free(cut2);
			}
			/* The boot: ours, the growth finished, the database whole. */
			node_must_boot(&n, cut, &cut_cfg);
			outcomes[n.boot.grow.outcome == STORE_GROW_NONE]++;
			if (n.boot.grow.outcome == STORE_GROW_NONE) /* the cut came after the commit */
				assert_false(info.grow_pending);
			assert_int_equal(n.boot.grow.pending, info.grow_pending);
			if (info.grow_pending)
				assert_non_null(strstr(n.boot.grow.what, "the disk grew (finishing a growth cut short): "));
			assert_same_layout(&n.boot.sb, &want);
			check_rows(&n.db, CUT_ROWS);
			node_down(&n);
			assert_same_gpt(cut, ref);
			assert_gpt_whole(cut, &want);
			/* and the next boot has nothing left to do */
			node_must_boot(&n, cut, &cut_cfg);
			assert_int_equal(n.boot.grow.outcome, STORE_GROW_NONE);
			check_rows(&n.db, CUT_ROWS);
			node_down(&n);
			disk_free(cut);
		}
	}
	print_message("[ cuts     ] %u-byte blocks: %llu requests, %u cuts with the growth pending, %u finished at "
		      "boot, %u found done\n",
		      bs, (unsigned long long)n_req, pending, outcomes[0], outcomes[1]);
	assert_true(pending > 0);
	assert_true(outcomes[0] > 0);
	disk_free(ref);
	disk_free(base);
}

static void t_power_cut_at_every_request(void **state)
{
	(void)state;
	cut_sweep(512);
	cut_sweep(4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_plan_64_to_256),
		cmocka_unit_test(t_plan_small_growths),
		cmocka_unit_test(t_plan_rotation_and_full_table),
		cmocka_unit_test(t_plan_refusals),
		cmocka_unit_test(t_gpt_entry_resize),
		cmocka_unit_test(t_grow_procedure),
		cmocka_unit_test_teardown(t_grow_refused_by_another_partition, teardown),
		cmocka_unit_test(t_grow_unused_then_used),
		cmocka_unit_test(t_grow_until_the_table_is_full),
		cmocka_unit_test_teardown(t_boot_grows_the_disk, teardown),
		cmocka_unit_test_teardown(t_boot_grows_twice, teardown),
		cmocka_unit_test_teardown(t_runtime_growth, teardown),
		cmocka_unit_test_teardown(t_power_cut_at_every_request, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
