/* SPDX-License-Identifier: MIT
 * The scrubber (store/scrub.h) over the simulated disk of tests/support/fake_blk: a disk
 * formatted and its database created by store/boot, rows written and checkpointed, a backup
 * run to completion into slot A, telemetry records written into two partitions. Then:
 *  - a clean pass reports nothing, and reads exactly the database's and the backup's pages,
 *    the telemetry header, hints and slot headers, and every written segment whole (its
 *    byte count is computed here from the disk), every record validated;
 *  - a byte flipped inside a row's page of the DB region: the next pass reports exactly
 *    that page with its LBA, and the pass after it again (once per pass);
 *  - page 1's reserve byte changed: reported as page 1's header, page 1 not read whole (the
 *    live connection keeps checking), the other pages still checked;
 *  - the same inside backup slot A;
 *  - a byte flipped in a telemetry record: reported with its partition, slot, sequence,
 *    segment offset and LBA, and the valid records before it;
 *  - what writers leave by design is not reported: a discarded segment, a slot header of
 *    garbage, stale bytes after a segment's data at a sector boundary, garbage past the
 *    database file's end;
 *  - the budget: with bytes_per_s = X and a fake clock, the bytes read over 10 simulated
 *    seconds (as the device counts them) stay <= 10 X + one segment, and it uses it; a long
 *    pause is followed by no more than one second of budget and one segment;
 *  - a backup held: the scrubber closes the backup file so a backup can start (it cannot
 *    while the scrubber holds it), and scrubs the new slot once released;
 *  - nothing is ever written: the fake disk's write, discard, zero and flush counters and
 *    its bytes are unchanged by any number of passes.
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
#include "store/backup.h"
#include "store/boot.h"
#include "store/scrub.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"
#include "store/tlog.h"
#include "tests/support/fake_blk.h"
#include "tests/support/host_hooks.h"

#define BS 512u
#define DISK_BYTES (32u << 20)
#define SEG 16384u            /* telemetry segment */
#define PARTS 2u
#define N_ROWS 300
#define PAYLOAD 60u           /* small rows: a short fixture */
#define REC_P0 120u           /* telemetry records per partition */
#define REC_P1 40u
#define WALL_MS INT64_C(1800000000000)
#define FAST (UINT64_C(1) << 30) /* a budget no pass here reaches in a second */
#define NS UINT64_C(1000000000)
#define MAX_FOUND 64u

/* ---- clock, randomness, allocators ---- */
static uint64_t g_ns = 1000u * NS; /* the scrubber's fake clock; the device's ticks on its own */
static uint64_t g_dev_ns;
static uint64_t g_rng = 7;

static uint64_t dev_now_ns(void *ctx)
{
	(void)ctx;
	return g_dev_ns += 1000u;
}
static int64_t wall_s(void *ctx)
{
	(void)ctx;
	return WALL_MS / 1000;
}
static int64_t wall_ms(void *ctx)
{
	(void)ctx;
	return WALL_MS;
}
static void random_bytes(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	host_hooks_fill(&g_rng, buf, len);
}
#define h_alloc host_hooks_alloc
#define h_free host_hooks_free

/* ---- the fixture: a disk with a database, a backup in slot A and telemetry ---- */
struct fx {
	struct fake_blk *disk;
	struct store_dev dev;
	uint8_t bounce[65536] ALIGNED(8);
	uint8_t scratch[STORE_LAYOUT_SCRATCH] ALIGNED(8);
	uint8_t io_buf[16384] ALIGNED(8);
	struct store_db db;
	struct store_boot_result boot;
	struct store_backup bk;
	void *tmem;
	uint8_t *tio;
	struct store_tlog *t;
	struct store_tlog_geom g;
	uint64_t tl_lba;
	uint8_t *buf;
	struct store_scrub sc;
	struct fake_blk_counts before;
	/* what the found callback saw */
	uint32_t n_found;
	struct store_scrub_finding found[MAX_FOUND];
	char text[MAX_FOUND][320];
};
static struct fx *G;

static void on_found(void *ctx, const struct store_scrub_finding *f)
{
	struct fx *x = ctx;
	if (x->n_found < MAX_FOUND) {
		x->found[x->n_found] = *f;
		(void)store_scrub_finding_text(f, x->text[x->n_found], sizeof x->text[0]);
	}
	x->n_found++;
}

/* n retained messages r/<i> whose payload starts with "SCRUB-ROW-<i>", in transactions of
 * 16, as the storage engine applies them. */
static void put_rows(struct store_db *db, int n)
{
	for (int i = 0; i < n;) {
		assert_int_equal(store_db_begin(db), 0);
		for (int k = 0; k < 16 && i < n; k++, i++) {
			char topic[32];
			uint8_t payload[PAYLOAD];
			int tl = snprintf(topic, sizeof topic, "r/%05d", i);
			for (uint32_t j = 0; j < PAYLOAD; j++)
				payload[j] = (uint8_t)('a' + (i + (int)j) % 26);
			char mark[16];
			int ml = snprintf(mark, sizeof mark, "SCRUB-ROW-%05d", i);
			memcpy(payload, mark, (size_t)ml);
			const struct store_rec r = { .kind = STORE_REC_RET_PUT, .qos = 1, .topic = (const uint8_t *)topic,
						     .topic_len = (uint16_t)tl, .payload = payload, .payload_len = PAYLOAD };
			assert_int_equal(store_db_apply(db, &r, WALL_MS / 1000), 0);
		}
		assert_int_equal(store_db_commit(db), 0);
	}
}

static void put_telemetry(struct fx *x, uint32_t p, uint32_t n)
{
	static const uint8_t id[] = "dev-1";
	static const uint8_t topic[] = "devices/dev-1/telemetry";
	uint8_t payload[200];
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < sizeof payload; k++)
			payload[k] = (uint8_t)(i * 13u + k);
		const struct store_tlog_rec r = { .wall_ms = WALL_MS + i, .mono_ns = i, .qos = 1, .id_kind = 0,
						  .id = id, .id_len = 5, .topic = topic, .topic_len = sizeof topic - 1u,
						  .payload = payload, .payload_len = sizeof payload };
		int err = store_tlog_append(x->t, p, &r);
		if (err == -E_AGAIN) {
			assert_int_equal(store_tlog_write_out(x->t), 0);
			err = store_tlog_append(x->t, p, &r);
		}
		assert_int_equal(err, 0);
	}
	assert_int_equal(store_tlog_write_out(x->t), 0);
}

static uint64_t region_byte(const struct fx *x, enum store_region_kind k)
{
	const struct store_region *r = store_super_region(&x->boot.sb, k);
	assert_non_null(r);
	return (x->boot.sb.part_start + r->start) * BS;
}

static uint64_t region_bytes(const struct fx *x, enum store_region_kind k)
{
	const struct store_region *r = store_super_region(&x->boot.sb, k);
	assert_non_null(r);
	return r->blocks * BS;
}

static struct fx *fx_up(void)
{
	struct fx *x = calloc(1, sizeof *x);
	assert_non_null(x);
	G = x;
	const struct fake_blk_config c = { .blocks = DISK_BYTES / BS, .block_size = BS, .discard = true,
					   .write_zeroes = true };
	x->disk = fake_blk_new(&c);
	assert_non_null(x->disk);
	const struct store_dev_port dport = { dev_now_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&x->dev, fake_blk_dev(x->disk), x->bounce, sizeof x->bounce, 1000, &dport), 0);
	const struct store_sqlite_mem m = { h_alloc, h_free, NULL, (size_t)32 << 20 };
	assert_int_equal(store_sqlite_init(&m), 0);
	uint8_t guids[48];
	random_bytes(NULL, guids, sizeof guids);
	const struct store_boot_config bc = {
		.layout = { .esp_bytes = 0, .wal_bytes = 1u << 20, .telemetry_pct = 10 },
		.cache_kb = 1024, .checkpoint_pages = 64, .guids = guids, .now_s = WALL_MS / 1000,
		.scratch = x->scratch, .scratch_len = sizeof x->scratch, .io_buf = x->io_buf,
		.io_buf_len = sizeof x->io_buf, .random = random_bytes, .wall_ms = wall_ms, .wall_s = wall_s,
	};
	int err = store_boot(&x->dev, &bc, &x->db, &x->boot);
	if (err)
		fail_msg("boot: %s", x->boot.what);
	/* rows, then every page of them in the database file */
	put_rows(&x->db, N_ROWS);
	uint32_t pages;
	assert_int_equal(store_db_maintain(&x->db, true, &pages), 0);
	/* a backup into slot A, run to completion */
	assert_int_equal(store_backup_start(&x->bk, &x->db, &x->boot.sb), 0);
	int rc;
	uint64_t us = 1;
	while ((rc = store_backup_step(&x->bk, 64, &x->dev, &x->boot.sb, x->scratch, sizeof x->scratch, us++, WALL_MS)) ==
	       -E_AGAIN)
		;
	assert_int_equal(rc, 0);
	assert_int_equal(x->boot.sb.backup_slot, 1);
	/* the telemetry log: two partitions of 16 KiB segments */
	const struct store_region *tr = store_super_region(&x->boot.sb, STORE_REGION_TELEMETRY);
	assert_non_null(tr);
	x->tl_lba = x->boot.sb.part_start + tr->start;
	x->tio = aligned_alloc(4096, SEG);
	assert_non_null(x->tio);
	struct store_tlog_config tc = { .dev = &x->dev, .lba = x->tl_lba, .blocks = tr->blocks, .partitions = PARTS,
					.segment_bytes = SEG, .flush_bytes = 65536, .io = x->tio, .io_len = SEG };
	size_t tl = store_tlog_mem_size(&tc);
	assert_true(tl > 0);
	x->tmem = aligned_alloc(8, (tl + 7u) & ~(size_t)7u);
	assert_non_null(x->tmem);
	assert_int_equal(store_tlog_open(&x->t, x->tmem, tl, &tc, WALL_MS), 0);
	x->g = *store_tlog_geometry(x->t);
	assert_int_equal(x->g.segment_bytes, SEG);
	put_telemetry(x, 0, REC_P0);
	put_telemetry(x, 1, REC_P1);
	assert_int_equal(store_dev_flush(&x->dev), 0);
	/* the scrubber's buffer: a segment (also more than a page) */
	x->buf = aligned_alloc(4096, SEG);
	assert_non_null(x->buf);
	fake_blk_counts(x->disk, &x->before);
	return x;
}

static void fx_down(struct fx *x)
{
	store_scrub_fini(&x->sc);
	store_backup_abort(&x->bk);
	if (x->db.h)
		store_boot_close(&x->db);
	assert_int_equal(store_sqlite_fini(), 0);
	fake_blk_free(x->disk);
	free(x->tmem);
	free(x->tio);
	free(x->buf);
	free(x);
	G = NULL;
}

static int teardown(void **state)
{
	(void)state;
	if (G) {
		store_scrub_fini(&G->sc);
		store_backup_abort(&G->bk);
		if (G->db.h)
			store_boot_close(&G->db);
		(void)!store_sqlite_fini();
		fake_blk_free(G->disk);
		free(G->tmem);
		free(G->tio);
		free(G->buf);
		free(G);
		G = NULL;
	}
	return 0;
}

static void scrub_up(struct fx *x, uint64_t bytes_per_s)
{
	const struct store_scrub_config cfg = { .bytes_per_s = bytes_per_s, .dev = &x->dev, .sb = &x->boot.sb,
						.db = &x->db, .telemetry = true, .buf = x->buf, .buf_len = SEG,
						.found = on_found, .ctx = x };
	store_scrub_fini(&x->sc); /* a scrubber of an earlier call lets go of its backup file */
	assert_int_equal(store_scrub_init(&x->sc, &cfg), 0);
	x->n_found = 0;
	(void)store_scrub_step(&x->sc, g_ns); /* starts the clock */
}

/* Steps a second apart until one more pass is complete (bounded). */
static void one_pass(struct fx *x)
{
	uint64_t passes = store_scrub_stats(&x->sc)->passes;
	for (int i = 0; i < 1000; i++) {
		g_ns += NS;
		(void)store_scrub_step(&x->sc, g_ns);
		assert_int_equal(store_scrub_check(&x->sc), 0);
		if (store_scrub_stats(&x->sc)->passes > passes) {
			assert_int_equal(store_scrub_stats(&x->sc)->passes, passes + 1u);
			return;
		}
	}
	fail_msg("no pass completed");
}

/* Nothing written since the fixture was built. */
static void assert_unwritten(const struct fx *x)
{
	struct fake_blk_counts k;
	fake_blk_counts(x->disk, &k);
	assert_int_equal(k.writes, x->before.writes);
	assert_int_equal(k.discards, x->before.discards);
	assert_int_equal(k.zeroes, x->before.zeroes);
	assert_int_equal(k.flushes, x->before.flushes);
	assert_int_equal(k.blocks_written, x->before.blocks_written);
}

/* Byte offset on the disk of the first `needle` within [from, from + len), or fail. */
static uint64_t find_bytes(const struct fx *x, uint64_t from, uint64_t len, const char *needle)
{
	size_t size, n = strlen(needle);
	const uint8_t *d = fake_blk_bytes(x->disk, &size);
	assert_true(from + len <= size);
	for (uint64_t i = from; i + n <= from + len; i++)
		if (memcmp(d + i, needle, n) == 0)
			return i;
	fail_msg("%s not found", needle);
	return 0;
}

static void flip(struct fx *x, uint64_t off)
{
	size_t size;
	uint8_t b = fake_blk_bytes(x->disk, &size)[off] ^ 0x20u;
	fake_blk_set(x->disk, off, &b, 1);
	fake_blk_counts(x->disk, &x->before); /* the test's own write is not the scrubber's */
}

/* Pages of the database file whose header is at byte off of the disk. */
static uint64_t pages_at(const struct fx *x, uint64_t off)
{
	size_t size;
	const uint8_t *h = fake_blk_bytes(x->disk, &size) + off;
	assert_memory_equal(h, "SQLite format 3", 16);
	assert_int_equal(ld_be16(h + 16), 4096);
	return ld_be32(h + 28);
}

/* The segment header of slot k of partition p on the disk: 0 when valid there. */
static int seg_at(const struct fx *x, uint32_t p, uint32_t k, struct store_tlog_seg *h)
{
	size_t size;
	const uint8_t *d = fake_blk_bytes(x->disk, &size) + x->tl_lba * BS + store_tlog_slot_off(&x->g, p, k);
	int err = store_tlog_seg_decode(d, x->g.sector, h);
	return err ? err : h->partition == p && h->slot == k ? 0 : -E_CORRUPT;
}

/* ---- tests ---- */

static void t_clean_pass(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	uint64_t db_pages = pages_at(x, region_byte(x, STORE_REGION_DB));
	uint64_t bk_pages = pages_at(x, region_byte(x, STORE_REGION_BACKUP_A));
	assert_true(db_pages > 10 && bk_pages == db_pages);
	/* what one pass must read: the database's head (a block) and pages; the backup's open and
	 * head (a block each) and pages; the telemetry header, the hints, every slot's header and
	 * the rest of each written segment */
	uint64_t want = BS + db_pages * 4096u + 2u * BS + bk_pages * 4096u + BS + PARTS * (uint64_t)x->g.sector;
	uint64_t segments = 0;
	for (uint32_t p = 0; p < PARTS; p++)
		for (uint32_t k = 0; k < x->g.segments; k++) {
			struct store_tlog_seg h;
			bool valid = seg_at(x, p, k, &h) == 0;
			segments += valid;
			want += valid ? SEG : x->g.sector;
		}
	assert_true(segments >= 3); /* partition 0 spans two or more */
	struct store_dev_stats d0 = x->dev.st;
	scrub_up(x, FAST);
	one_pass(x);
	const struct store_scrub_stats *s = store_scrub_stats(&x->sc);
	if (x->n_found)
		fail_msg("a clean disk reported: %s", x->text[0]);
	for (int k = 0; k < STORE_SCRUB__KINDS; k++)
		assert_int_equal(s->found[k], 0);
	assert_int_equal(s->pages_checked, db_pages + bk_pages);
	assert_int_equal(s->records_checked, REC_P0 + REC_P1);
	assert_int_equal(s->segments_checked, segments);
	assert_int_equal(s->seg_headers_skipped, 0);
	assert_int_equal(s->unchecked_files, 0);
	assert_int_equal(s->bytes_read, want);
	/* what the device read: no more (the backup's head came from the VFS's block cache) */
	uint64_t dev_bytes = (x->dev.st.blocks[STORE_DEV_READ] - d0.blocks[STORE_DEV_READ]) * BS;
	assert_true(dev_bytes <= want && dev_bytes >= want - BS);
	char line[256];
	assert_true(store_scrub_line(&x->sc, line, sizeof line) > 0);
	char want_line[128];
	snprintf(want_line, sizeof want_line, "scrub pass=1 bytes=%lu pages=%lu records=%u bad_pages=0 bad_records=0",
		 (unsigned long)want, (unsigned long)(db_pages + bk_pages), REC_P0 + REC_P1);
	assert_non_null(strstr(line, want_line));
	/* and again: the same, nothing found */
	one_pass(x);
	assert_int_equal(s->bytes_read, 2u * want);
	assert_int_equal(x->n_found, 0);
	assert_unwritten(x);
	fx_down(x);
}

static void t_bad_db_page(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	uint64_t db = region_byte(x, STORE_REGION_DB);
	uint64_t at = find_bytes(x, db, region_bytes(x, STORE_REGION_DB), "SCRUB-ROW-00150");
	uint64_t page = (at - db) / 4096u + 1u, lba = (db + (page - 1u) * 4096u) / BS;
	flip(x, at + 12u);
	scrub_up(x, FAST);
	one_pass(x);
	assert_int_equal(x->n_found, 1);
	const struct store_scrub_finding *f = &x->found[0];
	assert_int_equal(f->file, STORE_SCRUB_DB);
	assert_int_equal(f->kind, STORE_SCRUB_BAD_PAGE);
	assert_int_equal(f->page, page);
	assert_int_equal(f->lba, lba);
	assert_int_equal(f->pass, 1);
	char want[96];
	snprintf(want, sizeof want, "CORRUPT page %lu of the database (LBA %lu)", (unsigned long)page, (unsigned long)lba);
	assert_non_null(strstr(x->text[0], want));
	const struct store_scrub_stats *s = store_scrub_stats(&x->sc);
	assert_int_equal(s->found[STORE_SCRUB_BAD_PAGE], 1);
	assert_int_equal(s->last_pass_findings, 1);
	/* the next pass: the same page, once */
	one_pass(x);
	assert_int_equal(x->n_found, 2);
	assert_int_equal(x->found[1].page, page);
	assert_int_equal(x->found[1].pass, 2);
	assert_int_equal(s->found[STORE_SCRUB_BAD_PAGE], 2);
	assert_int_equal(s->found[STORE_SCRUB_BAD_RECORD] + s->found[STORE_SCRUB_BAD_HEADER] +
				 s->found[STORE_SCRUB_UNREADABLE],
			 0);
	assert_unwritten(x);
	fx_down(x);
}

/* Page 1's reserve byte changed on the disk: damage (the live connection says 8), reported
 * as page 1's header without reading page 1 whole through cksumvfs (that read would switch
 * the live connection's checksums off); the other pages are still read. */
static void t_bad_db_header(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	uint64_t db = region_byte(x, STORE_REGION_DB);
	uint64_t db_pages = pages_at(x, db);
	uint64_t bk_pages = pages_at(x, region_byte(x, STORE_REGION_BACKUP_A));
	uint8_t zero = 0;
	fake_blk_set(x->disk, db + 20u, &zero, 1);
	fake_blk_counts(x->disk, &x->before);
	scrub_up(x, FAST);
	one_pass(x);
	assert_int_equal(x->n_found, 1);
	assert_int_equal(x->found[0].file, STORE_SCRUB_DB);
	assert_int_equal(x->found[0].kind, STORE_SCRUB_BAD_HEADER);
	assert_int_equal(x->found[0].page, 1);
	assert_int_equal(x->found[0].lba, db / BS);
	assert_non_null(strstr(x->text[0], "CORRUPT page 1 of the database"));
	const struct store_scrub_stats *s = store_scrub_stats(&x->sc);
	assert_int_equal(s->pages_checked, db_pages - 1u + bk_pages);
	assert_int_equal(s->unchecked_files, 0);
	/* the connection still checks pages: a page damaged now is found */
	uint64_t at = find_bytes(x, db, region_bytes(x, STORE_REGION_DB), "SCRUB-ROW-00007");
	flip(x, at + 12u);
	one_pass(x);
	assert_int_equal(s->found[STORE_SCRUB_BAD_PAGE], 1);
	assert_int_equal(s->found[STORE_SCRUB_BAD_HEADER], 2);
	assert_unwritten(x);
	fx_down(x);
}

static void t_bad_backup_page(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	uint64_t bk = region_byte(x, STORE_REGION_BACKUP_A);
	uint64_t at = find_bytes(x, bk, region_bytes(x, STORE_REGION_BACKUP_A), "SCRUB-ROW-00150");
	uint64_t page = (at - bk) / 4096u + 1u, lba = (bk + (page - 1u) * 4096u) / BS;
	flip(x, at + 12u);
	scrub_up(x, FAST);
	one_pass(x);
	assert_int_equal(x->n_found, 1);
	const struct store_scrub_finding *f = &x->found[0];
	assert_int_equal(f->file, STORE_SCRUB_BACKUP_A);
	assert_int_equal(f->kind, STORE_SCRUB_BAD_PAGE);
	assert_int_equal(f->page, page);
	assert_int_equal(f->lba, lba);
	char want[96];
	snprintf(want, sizeof want, "CORRUPT page %lu of backup A (LBA %lu)", (unsigned long)page, (unsigned long)lba);
	assert_non_null(strstr(x->text[0], want));
	assert_unwritten(x);
	fx_down(x);
}

static void t_bad_telemetry_record(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	/* partition 0's oldest segment, and a record in it (the fifth or later) that does not
	 * start on a sector boundary */
	uint32_t slot = UINT32_MAX;
	uint64_t seq = UINT64_MAX;
	for (uint32_t k = 0; k < x->g.segments; k++) {
		struct store_tlog_seg h;
		if (seg_at(x, 0, k, &h) == 0 && h.seq < seq) {
			seq = h.seq;
			slot = k;
		}
	}
	assert_true(slot != UINT32_MAX);
	size_t size;
	uint64_t seg_byte = x->tl_lba * BS + store_tlog_slot_off(&x->g, 0, slot);
	const uint8_t *seg = fake_blk_bytes(x->disk, &size) + seg_byte;
	struct store_tlog_cursor c;
	assert_int_equal(store_tlog_cursor_init(&c, seg, SEG, x->g.sector), 0);
	struct store_tlog_rec r;
	uint64_t idx = 0, rec_off = 0, in_seg = 0;
	while (store_tlog_cursor_next(&c, &r) == 1) {
		uint64_t off = (uint64_t)(r.id - seg) - STORE_TLOG_BODY_FIXED - STORE_TLOG_REC_HDR;
		if (!rec_off && in_seg >= 4 && off % x->g.sector) {
			rec_off = off;
			idx = in_seg;
		}
		in_seg++;
	}
	assert_true(rec_off > 0);
	flip(x, seg_byte + rec_off + STORE_TLOG_REC_HDR + 30u); /* inside its body */
	scrub_up(x, FAST);
	one_pass(x);
	assert_int_equal(x->n_found, 1);
	const struct store_scrub_finding *f = &x->found[0];
	assert_int_equal(f->file, STORE_SCRUB_TELEMETRY);
	assert_int_equal(f->kind, STORE_SCRUB_BAD_RECORD);
	assert_int_equal(f->partition, 0);
	assert_int_equal(f->slot, slot);
	assert_int_equal(f->seq, seq);
	assert_int_equal(f->seg_off, rec_off);
	assert_int_equal(f->records_before, idx);
	assert_int_equal(f->lba, (seg_byte + rec_off) / BS);
	char want[128];
	snprintf(want, sizeof want, "CORRUPT telemetry record: partition 0 slot %u sequence %lu at segment offset %lu",
		 (unsigned)slot, (unsigned long)seq, (unsigned long)rec_off);
	assert_non_null(strstr(x->text[0], want));
	const struct store_scrub_stats *s = store_scrub_stats(&x->sc);
	assert_int_equal(s->found[STORE_SCRUB_BAD_RECORD], 1);
	/* every record but the bad one and those after it in its segment */
	assert_int_equal(s->records_checked, REC_P0 + REC_P1 - (in_seg - idx));
	assert_unwritten(x);
	fx_down(x);
}

/* Nothing the writers leave by design is damage. */
static void t_not_damage(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	size_t size;
	const uint8_t *d = fake_blk_bytes(x->disk, &size);
	uint8_t junk[4096];
	random_bytes(NULL, junk, sizeof junk);
	/* a discarded segment (partition 0's oldest: zeros now) */
	uint32_t oldest = UINT32_MAX, newest = UINT32_MAX;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (uint32_t k = 0; k < x->g.segments; k++) {
		struct store_tlog_seg h;
		if (seg_at(x, 1, k, &h) == 0 && h.seq > hi) {
			hi = h.seq;
			newest = k;
		}
		if (seg_at(x, 0, k, &h) == 0 && h.seq < lo) {
			lo = h.seq;
			oldest = k;
		}
	}
	assert_true(oldest != UINT32_MAX && newest != UINT32_MAX);
	uint64_t old_byte = x->tl_lba * BS + store_tlog_slot_off(&x->g, 0, oldest);
	struct store_tlog_cursor c;
	assert_int_equal(store_tlog_cursor_init(&c, d + old_byte, SEG, x->g.sector), 0);
	struct store_tlog_rec r;
	while (store_tlog_cursor_next(&c, &r) == 1)
		;
	uint64_t discarded = c.records;
	uint8_t *zeros = calloc(1, SEG);
	assert_non_null(zeros);
	fake_blk_set(x->disk, old_byte, zeros, SEG);
	free(zeros);
	/* garbage in a never-written slot's header */
	uint32_t empty = UINT32_MAX;
	for (uint32_t k = 0; k < x->g.segments && empty == UINT32_MAX; k++) {
		struct store_tlog_seg h;
		if (seg_at(x, 1, k, &h) == -E_NOENT)
			empty = k;
	}
	assert_true(empty != UINT32_MAX);
	fake_blk_set(x->disk, x->tl_lba * BS + store_tlog_slot_off(&x->g, 1, empty), junk, x->g.sector);
	/* stale bytes after partition 1's newest segment's data, from the next sector boundary */
	uint64_t new_byte = x->tl_lba * BS + store_tlog_slot_off(&x->g, 1, newest);
	assert_int_equal(store_tlog_cursor_init(&c, d + new_byte, SEG, x->g.sector), 0);
	while (store_tlog_cursor_next(&c, &r) == 1)
		;
	uint64_t end = (c.off + x->g.sector - 1u) / x->g.sector * x->g.sector;
	assert_true(end + x->g.sector <= SEG);
	fake_blk_set(x->disk, new_byte + end, junk, x->g.sector);
	/* a page of garbage right after the database file's end */
	uint64_t db = region_byte(x, STORE_REGION_DB);
	fake_blk_set(x->disk, db + pages_at(x, db) * 4096u, junk, sizeof junk);
	fake_blk_counts(x->disk, &x->before);

	scrub_up(x, FAST);
	one_pass(x);
	if (x->n_found)
		fail_msg("reported: %s", x->text[0]);
	const struct store_scrub_stats *s = store_scrub_stats(&x->sc);
	assert_int_equal(s->seg_headers_skipped, 1);
	assert_int_equal(s->records_checked, REC_P0 + REC_P1 - discarded);
	assert_unwritten(x);
	fx_down(x);
}

/* (e) the budget */
static void t_budget(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	const uint64_t rate = 32768; /* bytes per second: a pass takes several seconds */
	scrub_up(x, rate);
	uint64_t dev0 = x->dev.st.blocks[STORE_DEV_READ];
	uint64_t got = 0;
	for (int i = 1; i <= 1000; i++) { /* 10 s in steps of 10 ms */
		g_ns += 10u * 1000000u;
		got += store_scrub_step(&x->sc, g_ns);
		assert_int_equal(store_scrub_check(&x->sc), 0);
	}
	uint64_t dev_bytes = (x->dev.st.blocks[STORE_DEV_READ] - dev0) * BS;
	const struct store_scrub_stats *s = store_scrub_stats(&x->sc);
	assert_int_equal(got, s->bytes_read);
	assert_true(dev_bytes <= s->bytes_read);
	assert_true(s->bytes_read <= 10u * rate + SEG);
	assert_true(s->bytes_read >= 10u * rate - 2u * SEG); /* and it uses what it has */
	assert_true(s->passes >= 1);
	/* when it is due next, it reads */
	uint64_t due = store_scrub_due_ns(&x->sc);
	assert_true(due > g_ns && due < g_ns + NS);
	assert_int_equal(store_scrub_step(&x->sc, due - 1u), 0);
	g_ns = due;
	assert_true(store_scrub_step(&x->sc, g_ns) > 0);
	/* a long pause: no more than one second of budget and one read at once */
	g_ns += 100u * NS;
	uint64_t burst = store_scrub_step(&x->sc, g_ns);
	assert_true(burst > 0 && burst <= rate + SEG);
	/* off: nothing */
	scrub_up(x, 0);
	g_ns += NS;
	assert_int_equal(store_scrub_step(&x->sc, g_ns), 0);
	assert_int_equal(store_scrub_due_ns(&x->sc), UINT64_MAX);
	char line[64];
	assert_int_equal(store_scrub_line(&x->sc, line, sizeof line), 0);
	assert_unwritten(x);
	fx_down(x);
}

/* A backup held: the scrubber lets go of the backup file. */
static void t_hold_for_backup(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	scrub_up(x, 8192); /* slow: stops inside the backup file */
	for (int i = 0; i < 10000 && !x->sc.bk_open; i++) {
		g_ns += 10u * 1000000u;
		(void)store_scrub_step(&x->sc, g_ns);
	}
	assert_true(x->sc.bk_open);
	/* not held: the VFS opens one backup file at a time, so a backup cannot start */
	assert_int_not_equal(store_backup_start(&x->bk, &x->db, &x->boot.sb), 0);
	assert_non_null(strstr(x->bk.why, "unable to open"));
	store_scrub_hold_backups(&x->sc, true);
	assert_false(x->sc.bk_open);
	assert_int_equal(store_scrub_check(&x->sc), 0);
	assert_int_equal(store_backup_start(&x->bk, &x->db, &x->boot.sb), 0);
	/* the scrubber keeps going (not into the backup) while the backup runs */
	int rc;
	uint64_t us = 1;
	do {
		g_ns += 10u * 1000000u;
		(void)store_scrub_step(&x->sc, g_ns);
		assert_false(x->sc.bk_open);
		rc = store_backup_step(&x->bk, 4, &x->dev, &x->boot.sb, x->scratch, sizeof x->scratch, us++, WALL_MS);
	} while (rc == -E_AGAIN);
	assert_int_equal(rc, 0);
	assert_int_equal(x->boot.sb.backup_slot, 2);
	store_scrub_hold_backups(&x->sc, false);
	/* released: the pass in progress ends, and the next one reads backup B, clean */
	const struct store_scrub_stats *s = store_scrub_stats(&x->sc);
	assert_true(s->backups_skipped >= 1);
	x->sc.cfg.bytes_per_s = FAST;
	one_pass(x);
	uint64_t db_pages = pages_at(x, region_byte(x, STORE_REGION_DB));
	uint64_t b_pages = pages_at(x, region_byte(x, STORE_REGION_BACKUP_B));
	uint64_t before = s->pages_checked;
	one_pass(x);
	assert_int_equal(s->pages_checked - before, db_pages + b_pages);
	if (x->n_found)
		fail_msg("reported: %s", x->text[0]);
	fx_down(x);
}

/* (f) with damage in every file, any number of passes: not one write, not one byte changed. */
static void t_reads_only(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	flip(x, find_bytes(x, region_byte(x, STORE_REGION_DB), region_bytes(x, STORE_REGION_DB), "SCRUB-ROW-00010") + 12u);
	flip(x, find_bytes(x, region_byte(x, STORE_REGION_BACKUP_A), region_bytes(x, STORE_REGION_BACKUP_A),
			   "SCRUB-ROW-00290") +
			12u);
	uint64_t tl = x->tl_lba * BS;
	flip(x, tl + x->g.sector + 8u); /* partition 0's hint */
	size_t size;
	uint8_t *img = malloc(DISK_BYTES);
	assert_non_null(img);
	memcpy(img, fake_blk_bytes(x->disk, &size), DISK_BYTES);
	scrub_up(x, FAST);
	for (int i = 0; i < 3; i++)
		one_pass(x);
	const struct store_scrub_stats *s = store_scrub_stats(&x->sc);
	assert_int_equal(s->found[STORE_SCRUB_BAD_PAGE], 6);   /* two pages, once per pass */
	assert_int_equal(s->found[STORE_SCRUB_BAD_HEADER], 3); /* the hint */
	assert_int_equal(s->last_pass_findings, 3);
	assert_int_equal(x->found[2].file, STORE_SCRUB_TELEMETRY);
	assert_int_equal(x->found[2].partition, 0);
	assert_int_equal(x->found[2].slot, STORE_SCRUB_NONE);
	assert_non_null(strstr(x->text[2], "CORRUPT telemetry hint of partition 0"));
	assert_unwritten(x);
	assert_memory_equal(fake_blk_bytes(x->disk, &size), img, DISK_BYTES);
	free(img);
	fx_down(x);
}

static void t_init_rules(void **state)
{
	(void)state;
	struct fx *x = fx_up();
	struct store_scrub_config cfg = { .bytes_per_s = 1024, .dev = &x->dev, .sb = &x->boot.sb, .db = &x->db,
					  .buf = x->buf, .buf_len = SEG };
	struct store_scrub sc;
	assert_int_equal(store_scrub_init(&sc, &cfg), 0);
	struct store_scrub_config bad = cfg;
	bad.buf = NULL;
	assert_int_equal(store_scrub_init(&sc, &bad), -E_INVAL);
	bad = cfg;
	bad.buf_len = BS - 1u;
	assert_int_equal(store_scrub_init(&sc, &bad), -E_INVAL);
	bad = cfg;
	bad.buf = x->buf + 1;
	assert_int_equal(store_scrub_init(&sc, &bad), -E_INVAL);
	bad = cfg;
	bad.sb = NULL;
	assert_int_equal(store_scrub_init(&sc, &bad), -E_INVAL);
	bad = cfg;
	bad.bytes_per_s = STORE_SCRUB_MAX_BYTES_PER_S + 1u;
	assert_int_equal(store_scrub_init(&sc, &bad), -E_INVAL);
	/* a buffer smaller than a segment: the telemetry log is skipped, counted; the rest read */
	cfg.buf_len = 4096;
	cfg.telemetry = true;
	cfg.bytes_per_s = FAST;
	store_scrub_fini(&x->sc);
	assert_int_equal(store_scrub_init(&x->sc, &cfg), 0);
	(void)store_scrub_step(&x->sc, g_ns);
	one_pass(x);
	assert_int_equal(store_scrub_stats(&x->sc)->skipped, 1);
	assert_int_equal(store_scrub_stats(&x->sc)->records_checked, 0);
	assert_true(store_scrub_stats(&x->sc)->pages_checked > 0);
	assert_unwritten(x);
	fx_down(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(t_clean_pass, teardown),
		cmocka_unit_test_teardown(t_bad_db_page, teardown),
		cmocka_unit_test_teardown(t_bad_db_header, teardown),
		cmocka_unit_test_teardown(t_bad_backup_page, teardown),
		cmocka_unit_test_teardown(t_bad_telemetry_record, teardown),
		cmocka_unit_test_teardown(t_not_damage, teardown),
		cmocka_unit_test_teardown(t_budget, teardown),
		cmocka_unit_test_teardown(t_hold_for_backup, teardown),
		cmocka_unit_test_teardown(t_reads_only, teardown),
		cmocka_unit_test_teardown(t_init_rules, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
