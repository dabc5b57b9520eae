/* SPDX-License-Identifier: MIT
 * The database's A/B backup (store/backup.h) and its restore at boot (store/boot.h) under
 * power cuts, over the simulated disk of tests/support/fake_blk (a cut drops or reorders
 * the writes not yet flushed and tears the write in flight at sector granularity).
 *  - The backup and its slot flip: a complete backup is run once to count its disk
 *    requests (start, steps, stamp, flush, superblock commit); then, for every request k,
 *    the disk as it was before the backup is cut at request k of the backup and brought up
 *    again. It must be ours, its database must pass quick_check with every row, and the
 *    superblock must name the previous backup (or none) or the new one, never anything
 *    else; whichever it names must restore (store_backup_restore) to a database that passes
 *    quick_check and holds the rows as of that backup. Swept from a disk with no backup
 *    (into slot A) and from one whose slot A is named (into slot B).
 *  - The restore at boot: a row's page of the database region is damaged, so quick_check
 *    fails and the boot restores the named backup. Cut at every request of that boot, the
 *    next boot must still serve exactly the backup's rows, with the damaged copy kept
 *    byte for byte in the other slot (the restore is idempotent). A database restored once
 *    and damaged again (it starts with the backup's very header) is kept again.
 *  - A backup while the database keeps committing between its steps: the copy is the
 *    database as it is when the backup completes (the backup follows writes made through
 *    the same connection), passes quick_check, and restores to it.
 * The numbers of cut points covered are printed.
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
#include "store/backup.h"
#include "store/boot.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"
#include "tests/support/fake_blk.h"
#include "tests/support/host_hooks.h"

#define DISK_BLOCKS 16384u /* 8 MiB of 512-byte blocks */
#define BS 512u
#define STEP_PAGES 4u
#define SEEDS 3u /* power cuts per cut point: which unflushed writes survive, which sectors tear */
/* Small rows keep the retained table (WITHOUT ROWID: whole rows in interior pages) at two
 * levels, so the cut sweeps stay short. */
#define PAYLOAD 60u

/* ---- clock, randomness, allocators ---- */
static uint64_t g_us;
static uint64_t g_rng = 1;
static uint64_t g_seed; /* the power cut's number at a cut point (failure messages) */

static uint64_t now_ns(void *ctx)
{
	(void)ctx;
	return g_us * 1000u;
}
static int64_t wall_s(void *ctx)
{
	(void)ctx;
	return HOST_HOOKS_WALL_S;
}
static int64_t wall_ms(void *ctx)
{
	(void)ctx;
	return INT64_C(1800000000000) + (int64_t)(g_us / 1000u);
}
static void random_bytes(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	host_hooks_fill(&g_rng, buf, len);
}
#define h_alloc host_hooks_alloc
#define h_free host_hooks_free

/* ---- a node: the storage core's bring-up on a disk ---- */
struct node {
	struct fake_blk *disk; /* borrowed */
	struct store_dev dev;
	uint8_t bounce[65536] ALIGNED(8);
	uint8_t scratch[STORE_LAYOUT_SCRATCH] ALIGNED(8);
	uint8_t io_buf[16384] ALIGNED(8);
	struct store_db db;
	struct store_boot_result boot;
	struct store_backup bk;
};
static struct node g_node;

static void dev_up(struct node *n, struct fake_blk *disk)
{
	n->disk = disk;
	const struct store_dev_port dport = { now_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&n->dev, fake_blk_dev(disk), n->bounce, sizeof n->bounce, 1000, &dport), 0);
}

/* store_boot as the storage core runs it: 0 with the database open, or its error (SQLite
 * shut down again). */
static int node_up(struct node *n, struct fake_blk *disk)
{
	memset(&n->db, 0, sizeof n->db);
	memset(&n->bk, 0, sizeof n->bk);
	dev_up(n, disk);
	const struct store_sqlite_mem m = { h_alloc, h_free, NULL, (size_t)32 << 20 };
	assert_int_equal(store_sqlite_init(&m), 0);
	uint8_t guids[48];
	random_bytes(NULL, guids, sizeof guids);
	const struct store_boot_config bc = {
		.layout = { .esp_bytes = 0, .wal_bytes = 1u << 20, .telemetry_pct = 0 },
		.cache_kb = 1024, .checkpoint_pages = 64, .guids = guids, .now_s = 1800000000,
		.scratch = n->scratch, .scratch_len = sizeof n->scratch, .io_buf = n->io_buf,
		.io_buf_len = sizeof n->io_buf, .random = random_bytes, .wall_ms = wall_ms, .wall_s = wall_s,
	};
	int err = store_boot(&n->dev, &bc, &n->db, &n->boot);
	if (err)
		assert_int_equal(store_sqlite_fini(), 0);
	return err;
}

static void node_down(struct node *n)
{
	store_backup_abort(&n->bk);
	store_boot_close(&n->db);
	assert_int_equal(store_sqlite_fini(), 0);
	struct store_sqlite_mem_stats ms;
	store_sqlite_mem_stats(&ms);
	assert_int_equal(ms.used, 0); /* every byte SQLite took is back */
}

/* After a failed test: whatever it left up goes down, so the next test starts clean. */
static int teardown(void **state)
{
	(void)state;
	store_backup_abort(&g_node.bk);
	if (g_node.db.h)
		store_boot_close(&g_node.db);
	(void)!store_sqlite_fini();
	return 0;
}

/* A disk holding img (size bytes), all of it durable. */
static struct fake_blk *disk_from(const uint8_t *img, size_t size)
{
	const struct fake_blk_config c = { .blocks = DISK_BLOCKS, .block_size = BS, .discard = true };
	struct fake_blk *d = fake_blk_new(&c);
	assert_non_null(d);
	if (img)
		fake_blk_set(d, 0, img, size);
	return d;
}

/* A private copy of what reads of d see now. */
static uint8_t *snapshot(const struct fake_blk *d, size_t *size)
{
	const uint8_t *p = fake_blk_bytes(d, size);
	uint8_t *c = malloc(*size);
	assert_non_null(c);
	memcpy(c, p, *size);
	return c;
}

static uint64_t requests(const struct fake_blk *d)
{
	struct fake_blk_counts c;
	fake_blk_counts(d, &c);
	return c.requests;
}

/* ---- rows ---- */

/* n retained messages r/<tag>/<i> (i from `from`), PAYLOAD bytes each, in transactions of
 * 16 through store_db_apply, as the storage engine applies them. */
static void put_rows(struct store_db *db, char tag, int from, int n)
{
	for (int i = from; i < from + n;) {
		assert_int_equal(store_db_begin(db), 0);
		for (int k = 0; k < 16 && i < from + n; k++, i++) {
			char topic[32];
			uint8_t payload[PAYLOAD];
			int tl = snprintf(topic, sizeof topic, "r/%c/%05d", tag, i);
			for (uint32_t j = 0; j < PAYLOAD; j++)
				payload[j] = (uint8_t)(tag + i * 7 + (int)j);
			const struct store_rec r = { .kind = STORE_REC_RET_PUT, .qos = 1, .topic = (const uint8_t *)topic,
						     .topic_len = (uint16_t)tl, .payload = payload, .payload_len = PAYLOAD };
			assert_int_equal(store_db_apply(db, &r, 1800000000), 0);
		}
		assert_int_equal(store_db_commit(db), 0);
	}
}

/* What a database holds: its retained rows, counted and hashed in topic order. */
struct fp {
	int64_t rows;
	uint64_t hash;
};

static void fnv(uint64_t *h, const void *p, int n)
{
	for (int i = 0; i < n; i++)
		*h = (*h ^ ((const uint8_t *)p)[i]) * 0x100000001b3ull;
}

static int fingerprint(sqlite3 *h, struct fp *out)
{
	out->rows = 0;
	out->hash = 0xcbf29ce484222325ull;
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(h, "SELECT topic, qos, payload FROM retained ORDER BY topic", -1, &s, NULL);
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		if ((rc = sqlite3_step(s)) != SQLITE_ROW)
			break;
		out->rows++;
		fnv(&out->hash, sqlite3_column_blob(s, 0), sqlite3_column_bytes(s, 0));
		int q = sqlite3_column_int(s, 1);
		fnv(&out->hash, &q, sizeof q);
		fnv(&out->hash, sqlite3_column_blob(s, 2), sqlite3_column_bytes(s, 2));
	}
	(void)sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : rc;
}

static struct fp db_fp(struct node *n)
{
	struct fp f;
	assert_int_equal(fingerprint(n->db.h, &f), 0);
	return f;
}

static bool fp_eq(struct fp a, struct fp b)
{
	return a.rows == b.rows && a.hash == b.hash;
}

/* The backup file of slot (1 A, 2 B) opened alone, read only, next to the database: 0 with
 * its quick_check ok and *f, or why not. */
static int backup_file_fp(uint32_t slot, struct fp *f, int64_t *stamp_ms)
{
	sqlite3 *h = NULL;
	int rc = sqlite3_open_v2(slot == 1u ? STORE_VFS_BACKUP_A : STORE_VFS_BACKUP_B, &h, SQLITE_OPEN_READONLY,
				 STORE_VFS_NAME);
	sqlite3_stmt *s = NULL;
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(h, "PRAGMA quick_check", -1, &s, NULL);
	if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		rc = strcmp((const char *)sqlite3_column_text(s, 0), "ok") ? SQLITE_CORRUPT : SQLITE_OK;
	(void)sqlite3_finalize(s);
	s = NULL;
	if (rc == SQLITE_OK)
		rc = fingerprint(h, f);
	*stamp_ms = 0;
	if (rc == SQLITE_OK &&
	    sqlite3_prepare_v2(h, "SELECT v FROM meta WHERE k='backup_ms'", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		*stamp_ms = sqlite3_column_int64(s, 0);
	(void)sqlite3_finalize(s);
	(void)sqlite3_close(h);
	return rc;
}

/* A whole online backup, as the storage core runs it: 0 or the first failure. */
static int run_backup(struct node *n, uint32_t *steps)
{
	int err = store_backup_start(&n->bk, &n->db, &n->boot.sb);
	uint32_t k = 0;
	while (!err) {
		g_us += 1000;
		err = store_backup_step(&n->bk, STEP_PAGES, &n->dev, &n->boot.sb, n->scratch, sizeof n->scratch, g_us,
					wall_ms(NULL));
		k++;
		if (err == -E_AGAIN)
			err = 0;
		else
			break;
	}
	if (steps)
		*steps = k;
	return err;
}

/* Restore the backup sb names on a copy of img and bring the copy up: it must pass
 * quick_check (the boot's) and hold want. */
static void check_restores_to(const uint8_t *img, size_t size, const struct store_super *sb, struct fp want,
			      const char *what, uint64_t k)
{
	struct node *n = &g_node;
	struct fake_blk *d = disk_from(img, size);
	dev_up(n, d);
	uint64_t pages = 0;
	bool kept = false;
	int err = store_backup_restore(&n->dev, sb, n->scratch, sizeof n->scratch, &pages, &kept);
	if (err || !pages)
		fail_msg("%s, cut %llu.%llu: restoring slot %u: %s, %llu pages", what,
			 (unsigned long long)k, (unsigned long long)g_seed,
			 (unsigned)sb->backup_slot, err_name(err), (unsigned long long)pages);
	err = node_up(n, d);
	if (err)
		fail_msg("%s, cut %llu.%llu: the restored slot %u does not come up: %s", what,
			 (unsigned long long)k, (unsigned long long)g_seed,
			 (unsigned)sb->backup_slot, n->boot.what);
	struct fp got = db_fp(n);
	if (!fp_eq(got, want))
		fail_msg("%s, cut %llu.%llu: slot %u restored %lld rows (hash %llx), the backup had %lld (%llx)", what,
			 (unsigned long long)k, (unsigned long long)g_seed, (unsigned)sb->backup_slot, (long long)got.rows,
			 (unsigned long long)got.hash, (long long)want.rows, (unsigned long long)want.hash);
	assert_int_equal(n->boot.restored_slot, 0);
	node_down(n);
	fake_blk_free(d);
}

/* ---- the base disks ---- */
struct base {
	uint8_t *img;
	size_t size;
	struct fp rows;           /* the database's */
	struct fp named;          /* the named backup's (rows 0: none) */
	uint32_t backup_slot;
	uint64_t backup_generation;
	struct store_super sb;
};

static void base_free(struct base *b)
{
	free(b->img);
	memset(b, 0, sizeof *b);
}

/* A formatted disk with 300 rows; with_backup: backed up into slot A, then 150 more rows. */
static void make_base(struct base *b, bool with_backup)
{
	memset(b, 0, sizeof *b);
	struct node *n = &g_node;
	struct fake_blk *d = disk_from(NULL, 0);
	assert_int_equal(node_up(n, d), 0);
	assert_true(n->boot.formatted && n->boot.created);
	put_rows(&n->db, 'a', 0, 300);
	if (with_backup) {
		b->named = db_fp(n);
		assert_int_equal(run_backup(n, NULL), 0);
		assert_int_equal(n->boot.sb.backup_slot, 1);
		put_rows(&n->db, 'b', 0, 150);
	}
	b->rows = db_fp(n);
	b->sb = n->boot.sb;
	b->backup_slot = n->boot.sb.backup_slot;
	b->backup_generation = n->boot.sb.backup_generation;
	node_down(n);
	b->img = snapshot(d, &b->size);
	fake_blk_free(d);
}

/* ---- the backup under power cuts ---- */
static uint64_t sweep_backup(bool with_backup, uint64_t *flipped)
{
	struct base b;
	make_base(&b, with_backup);
	struct node *n = &g_node;
	uint32_t next = with_backup ? 2u : 1u;

	/* Calibration: the requests of one complete backup. */
	struct fake_blk *d = disk_from(b.img, b.size);
	assert_int_equal(node_up(n, d), 0);
	assert_true(fp_eq(db_fp(n), b.rows));
	uint64_t base = requests(d);
	uint32_t steps = 0;
	assert_int_equal(run_backup(n, &steps), 0);
	uint64_t total = requests(d) - base;
	assert_int_equal(n->boot.sb.backup_slot, next);
	struct fp f;
	int64_t stamp;
	assert_int_equal(backup_file_fp(next, &f, &stamp), 0);
	assert_true(fp_eq(f, b.rows));
	assert_true(stamp > 0);
	node_down(n);
	fake_blk_free(d);
	printf("# backup into slot %c: %llu pages in %u steps, %llu disk requests\n", next == 1u ? 'A' : 'B',
	       (unsigned long long)n->bk.st.last_pages, steps, (unsigned long long)total);
	assert_true(total > 4);

	/* k == total: the cut comes at the first request after the backup completed (the
	 * database's close): the superblock must name the new slot. */
	for (uint64_t k = 0, seed = 0; k <= total; seed = (seed + 1u) % SEEDS, k += !seed) {
		g_seed = seed;
		d = disk_from(b.img, b.size);
		assert_int_equal(node_up(n, d), 0);
		fake_blk_die_at(d, requests(d) + k, k * 7919u + seed * 104729u + 1u);
		int err = run_backup(n, NULL);
		if (k < total ? !err || !fake_blk_dead(d) : err != 0)
			fail_msg("cut %llu.%llu of %llu: the backup did not meet the cut (%s)",
				 (unsigned long long)k, (unsigned long long)g_seed,
				 (unsigned long long)total, err_name(err));
		node_down(n);
		assert_true(fake_blk_dead(d));
		struct fake_blk *after = fake_blk_after_power_cut(d, k * 31u + seed * 1299709u + 7u, NULL);
		assert_non_null(after);
		fake_blk_free(d);

		err = node_up(n, after);
		if (err)
			fail_msg("cut %llu.%llu: the disk does not come up: %s",
				 (unsigned long long)k, (unsigned long long)g_seed, n->boot.what);
		assert_int_equal(n->boot.found, STORE_DISK_OURS);
		assert_int_equal(n->boot.restored_slot, 0);
		if (!fp_eq(db_fp(n), b.rows))
			fail_msg("cut %llu.%llu: the database lost rows", (unsigned long long)k, (unsigned long long)g_seed);
		struct store_super sb = n->boot.sb;
		struct fp want = b.named;
		if (k == total && sb.backup_slot != next)
			fail_msg("the backup completed, yet the superblock names slot %u", (unsigned)sb.backup_slot);
		if (sb.backup_slot == next) {
			assert_true(sb.backup_generation > b.backup_generation);
			want = b.rows;
			++*flipped;
		} else if (sb.backup_slot != b.backup_slot || sb.backup_generation != b.backup_generation) {
			fail_msg("cut %llu.%llu: the superblock names slot %u generation %llu (before: %u %llu, new: %u)",
				 (unsigned long long)k, (unsigned long long)g_seed, (unsigned)sb.backup_slot,
				 (unsigned long long)sb.backup_generation, (unsigned)b.backup_slot,
				 (unsigned long long)b.backup_generation, (unsigned)next);
		}
		if (sb.backup_slot) { /* the named copy, read alone through the VFS */
			err = backup_file_fp(sb.backup_slot, &f, &stamp);
			if (err || !fp_eq(f, want) || stamp <= 0)
				fail_msg("cut %llu.%llu: named slot %u: SQLite %d, %lld rows, stamp %lld",
					 (unsigned long long)k, (unsigned long long)g_seed,
					 (unsigned)sb.backup_slot, err, (long long)f.rows, (long long)stamp);
		}
		node_down(n);
		size_t size;
		uint8_t *img = snapshot(after, &size);
		fake_blk_free(after);
		if (sb.backup_slot)
			check_restores_to(img, size, &sb, want, "backup", k);
		free(img);
	}
	base_free(&b);
	return total + 1u;
}

static void t_backup_power_cuts(void **state)
{
	(void)state;
	uint64_t flipped0 = 0, flipped1 = 0;
	uint64_t n0 = sweep_backup(false, &flipped0);
	uint64_t n1 = sweep_backup(true, &flipped1);
	printf("# backup power cuts: %llu cut points from no backup (%u cuts each; slot A named after %llu cuts), "
	       "%llu from slot A named (slot B named after %llu)\n",
	       (unsigned long long)n0, SEEDS, (unsigned long long)flipped0, (unsigned long long)n1,
	       (unsigned long long)flipped1);
	/* Cuts before the superblock commit keep the old name; after it, the new one. */
	assert_true(flipped0 >= SEEDS && flipped0 < n0 * SEEDS && flipped1 >= SEEDS && flipped1 < n1 * SEEDS);
}

/* ---- the restore at boot under power cuts ---- */

/* The bytes the database region holds (its header's size), copied. */
static uint8_t *db_region_copy(const uint8_t *img, const struct store_super *sb, size_t *len)
{
	const struct store_region *r = store_super_region(sb, STORE_REGION_DB);
	assert_non_null(r);
	const uint8_t *h = img + (sb->part_start + r->start) * BS;
	assert_memory_equal(h, "SQLite format 3", 16);
	size_t ps = (size_t)(h[16] << 8 | h[17]);
	size_t pages = (size_t)h[28] << 24 | (size_t)h[29] << 16 | (size_t)h[30] << 8 | h[31];
	*len = ps * pages;
	uint8_t *c = malloc(*len);
	assert_non_null(c);
	memcpy(c, h, *len);
	return c;
}

static const uint8_t *region_at(const uint8_t *img, const struct store_super *sb, enum store_region_kind k)
{
	const struct store_region *r = store_super_region(sb, k);
	assert_non_null(r);
	return img + (sb->part_start + r->start) * BS;
}

/* The retained table's root page (a page that holds rows). */
static int retained_root(struct node *n)
{
	sqlite3_stmt *s = NULL;
	assert_int_equal(sqlite3_prepare_v2(n->db.h, "SELECT rootpage FROM sqlite_schema WHERE name='retained'", -1, &s,
					    NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	int root = sqlite3_column_int(s, 0);
	(void)sqlite3_finalize(s);
	assert_true(root > 1);
	return root;
}

/* A byte of page `page` of the database region flipped in img: its checksum no longer holds. */
static void damage(uint8_t *img, const struct store_super *sb, int page)
{
	img[(size_t)(region_at(img, sb, STORE_REGION_DB) - img) + (size_t)(page - 1) * 4096u + 200u] ^= 0x5a;
}

static void t_restore_at_boot_power_cuts(void **state)
{
	(void)state;
	struct base b;
	make_base(&b, true); /* slot A named: 300 rows; the database 450 */
	struct node *n = &g_node;
	/* Slot B named with the 450 rows; then 100 rows more that only the database holds. */
	struct fake_blk *d = disk_from(b.img, b.size);
	assert_int_equal(node_up(n, d), 0);
	assert_int_equal(run_backup(n, NULL), 0);
	struct fp backed = db_fp(n);
	struct store_super sb = n->boot.sb;
	assert_int_equal(sb.backup_slot, 2);
	put_rows(&n->db, 'c', 0, 100);
	int root = retained_root(n);
	node_down(n); /* a clean close: everything checkpointed into the database region */
	size_t size;
	uint8_t *img = snapshot(d, &size);
	fake_blk_free(d);
	damage(img, &sb, root);
	size_t dlen;
	uint8_t *damaged = db_region_copy(img, &sb, &dlen);

	/* Calibration: the boot that finds the damage and restores. */
	d = disk_from(img, size);
	assert_int_equal(node_up(n, d), 0);
	assert_int_equal(n->boot.restored_slot, 2);
	assert_true(n->boot.kept_damaged);
	assert_true(fp_eq(db_fp(n), backed));
	node_down(n);
	uint64_t total = requests(d);
	const uint8_t *now = fake_blk_bytes(d, &size);
	assert_memory_equal(region_at(now, &sb, STORE_REGION_BACKUP_A), damaged, dlen);

	/* Damaged again after the restore: the database now starts with the backup's very
	 * header (in WAL mode commits do not change it), yet it is kept again (only a zeroed
	 * header means a restore that was cut short). */
	uint8_t *again = snapshot(d, &size);
	fake_blk_free(d);
	d = disk_from(again, size);
	assert_int_equal(node_up(n, d), 0);
	put_rows(&n->db, 'e', 0, 5);
	root = retained_root(n);
	node_down(n);
	free(again);
	again = snapshot(d, &size);
	fake_blk_free(d);
	damage(again, &sb, root);
	size_t alen;
	uint8_t *damaged2 = db_region_copy(again, &sb, &alen);
	assert_memory_equal(damaged2, region_at(again, &sb, STORE_REGION_BACKUP_B), 100); /* the same header */
	d = disk_from(again, size);
	assert_int_equal(node_up(n, d), 0);
	assert_int_equal(n->boot.restored_slot, 2);
	assert_true(n->boot.kept_damaged);
	assert_true(fp_eq(db_fp(n), backed));
	node_down(n);
	assert_memory_equal(region_at(fake_blk_bytes(d, &size), &sb, STORE_REGION_BACKUP_A), damaged2, alen);
	fake_blk_free(d);
	free(damaged2);
	free(again);
	printf("# restore at boot: %zu bytes of damaged database kept in slot A; %llu disk requests from power-on "
	       "to close (quick_check, restore, open, generation, tidy)\n",
	       dlen, (unsigned long long)total);

	uint64_t restored_first = 0, restored_second = 0;
	for (uint64_t k = 0, seed = 0; k < total; seed = (seed + 1u) % SEEDS, k += !seed) {
		g_seed = seed;
		d = disk_from(img, size);
		fake_blk_die_at(d, k, k * 104729u + seed * 7919u + 3u);
		int err = node_up(n, d);
		if (!err) {
			restored_first++;
			node_down(n);
		}
		assert_true(fake_blk_dead(d));
		struct fake_blk *after = fake_blk_after_power_cut(d, k * 13u + seed * 15485863u + 5u, NULL);
		assert_non_null(after);
		fake_blk_free(d);
		err = node_up(n, after);
		if (err)
			fail_msg("cut %llu.%llu of %llu: the next boot fails: %s",
				 (unsigned long long)k, (unsigned long long)g_seed, (unsigned long long)total,
				 n->boot.what);
		restored_second += n->boot.restored_slot != 0;
		struct fp got = db_fp(n);
		if (!fp_eq(got, backed))
			fail_msg("cut %llu.%llu: %lld rows served (hash %llx), the backup holds %lld (%llx); %s",
				 (unsigned long long)k, (unsigned long long)g_seed, (long long)got.rows,
				 (unsigned long long)got.hash, (long long)backed.rows, (unsigned long long)backed.hash,
				 n->boot.what);
		assert_int_equal(n->boot.sb.backup_slot, 2);
		node_down(n);
		const uint8_t *kept = region_at(fake_blk_bytes(after, &size), &sb, STORE_REGION_BACKUP_A);
		if (memcmp(kept, damaged, dlen) != 0)
			fail_msg("cut %llu.%llu: slot A no longer holds the damaged copy", (unsigned long long)k,
				 (unsigned long long)g_seed);
		fake_blk_free(after);
	}
	printf("# restore at boot power cuts: %llu cut points, %u cuts each; the cut boot still served after %llu "
	       "cuts, the next boot restored after %llu\n",
	       (unsigned long long)total, SEEDS, (unsigned long long)restored_first,
	       (unsigned long long)restored_second);
	free(damaged);
	free(img);
	base_free(&b);
}

/* ---- a backup of a database that keeps committing ---- */
static void t_backup_while_committing(void **state)
{
	(void)state;
	struct base b;
	make_base(&b, false);
	struct node *n = &g_node;
	struct fake_blk *d = disk_from(b.img, b.size);
	assert_int_equal(node_up(n, d), 0);
	assert_int_equal(store_backup_start(&n->bk, &n->db, &n->boot.sb), 0);
	uint32_t steps = 0, commits = 0, checkpoints = 0;
	int err;
	do {
		g_us += 1000;
		err = store_backup_step(&n->bk, 2, &n->dev, &n->boot.sb, n->scratch, sizeof n->scratch, g_us,
					wall_ms(NULL));
		steps++;
		if (err == -E_AGAIN) { /* between steps: commits, now and then a checkpoint */
			put_rows(&n->db, 'w', (int)commits * 3, 3);
			commits++;
			if (steps % 5 == 0) {
				uint32_t pages;
				assert_int_equal(store_db_maintain(&n->db, true, &pages), 0);
				checkpoints++;
			}
		}
	} while (err == -E_AGAIN && steps < 10000);
	assert_int_equal(err, 0);
	assert_int_equal(n->boot.sb.backup_slot, 1);
	struct fp live = db_fp(n);
	assert_int_equal(live.rows, 300 + 3 * (int64_t)commits);
	struct fp f;
	int64_t stamp;
	assert_int_equal(backup_file_fp(1, &f, &stamp), 0);
	assert_true(fp_eq(f, live));
	assert_int_equal(stamp, wall_ms(NULL));
	struct store_super sb = n->boot.sb;
	node_down(n);
	size_t size;
	uint8_t *img = snapshot(d, &size);
	fake_blk_free(d);
	g_seed = 0;
	check_restores_to(img, size, &sb, live, "committing", 0);
	printf("# backup while committing: %u steps of 2 pages, %u commits and %u checkpoints between them; the "
	       "copy holds all %lld rows\n",
	       steps, commits, checkpoints, (long long)live.rows);
	assert_true(commits >= 10);
	free(img);
	base_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(t_backup_power_cuts, teardown),
		cmocka_unit_test_teardown(t_restore_at_boot_power_cuts, teardown),
		cmocka_unit_test_teardown(t_backup_while_committing, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
