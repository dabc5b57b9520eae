/* SPDX-License-Identifier: MIT
 *
 * store/sqlite (the SQLite library set-up and the VFS stack "urmqtt": cksumvfs over the
 * block layer) over the simulated disk of tests/support/fake_blk through store/dev: a WAL
 * database on a raw region pair, the block layer's file rules called directly (sizes from
 * the header, short reads, read-modify-write, refusals, SQLITE_FULL), device faults
 * surfacing as SQLITE_IOERR_* codes, the memory bound, and durability: power cuts after
 * commits, a death at every request of a commit and of a checkpoint, the sector discipline
 * that replaces POWERSAFE_OVERWRITE, and a seeded random crash loop (the seed is printed
 * on failure: URMQTT_VFS_SEED=n replays one iteration), with and without page checksums.
 * The disk lifecycle: backups into the backup slots (steps over a live database, the slot
 * rules, a power cut at every request), truncations that discard exactly the freed
 * blocks, and page checksums (a flipped bit in the DB, the WAL or a backup refused with
 * SQLITE_IOERR_DATA; what recovery does with a damaged frame; reserve bytes and when to
 * set them). Files of several extents (a disk that grew): requests across an extent's end,
 * truncation discarding in every extent, a database spanning two extents, an extent added
 * while the file is open (SQLITE_FULL before, room after). Every test ends with
 * store_vfs_unregister + store_sqlite_fini and checks that SQLite's memory went back to 0.
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
#include "store/dev.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"
#include "tests/support/fake_blk.h"

/* ---- the host allocator behind SQLite (malloc, checked lengths) ---- */

static uint64_t heap_live;

static void *sqlite_host_alloc(void *ctx, size_t len)
{
	(void)ctx;
	void *p = malloc(len);
	if (p)
		heap_live++;
	return p;
}

static void sqlite_host_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	assert_true(len >= 16);
	heap_live--;
	free(p);
}

static void sqlite_up(size_t limit)
{
	struct store_sqlite_mem mem = { sqlite_host_alloc, sqlite_host_free, NULL, limit };
	assert_int_equal(store_sqlite_init(&mem), 0);
}

/* The end of every test: nothing of SQLite's left, in its accounting and in the heap. */
static void sqlite_down(void)
{
	store_vfs_unregister();
	assert_int_equal(store_vfs_check(), 0);
	assert_int_equal(store_sqlite_check(), 0);
	assert_int_equal(store_sqlite_fini(), 0);
	struct store_sqlite_mem_stats ms;
	store_sqlite_mem_stats(&ms);
	assert_int_equal(ms.used, 0);
	assert_int_equal(ms.allocs, ms.frees);
	assert_int_equal(heap_live, 0);
}

/* ---- the disk: a fake_blk, a store_dev over it, the two regions ---- */

static uint64_t fake_ns;

static uint64_t clock_ns(void *ctx)
{
	(void)ctx;
	return fake_ns += 1000000u; /* every look at the clock: 1 ms later */
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t vfs_rng = 1;

static void rnd(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rng_next(&vfs_rng);
}

static int64_t wall_ms(void *ctx)
{
	(void)ctx;
	return INT64_C(1764547200000); /* 2025-12-01T00:00:00Z */
}

/* Regions in bytes (multiples of 4096): the DB after a 64 KiB gap, the WAL at wal_off (0:
 * 64 KiB after the DB), backup slots A and B of backup_bytes each (0: none) 64 KiB apart
 * after the WAL. */
struct geom {
	uint32_t bs, phys;
	uint64_t db_bytes, wal_bytes;
	uint64_t disk_bytes; /* room after the WAL for tests that grow it */
	uint64_t wal_off;
	uint64_t backup_bytes;
	bool discard;        /* the device takes DISCARD requests */
	uint64_t db2_off, db2_bytes; /* a second database extent there (0 bytes: none) */
};

struct fx {
	struct geom g;
	struct fake_blk *fb;
	struct store_dev dev;
	uint8_t bounce[65536];
	uint8_t *io_buf;
	struct store_vfs_config vcfg;
};

static struct fx *cur_fx; /* the test's fixture, for the teardown */

static const struct geom G512 = { 512, 0, 1u << 20, 1u << 20, 4u << 20, 0, 0, false, 0, 0 };
static const struct geom G4K = { 4096, 0, 1u << 20, 1u << 20, 4u << 20, 0, 0, false, 0, 0 };
static const struct geom G512P4K = { 512, 4096, 1u << 20, 1u << 20, 4u << 20, 0, 0, false, 0, 0 };
/* With backup slots (and discard) for the disk-lifecycle tests. */
static const struct geom GB4K = { 4096, 0, 1u << 20, 1u << 20, 6u << 20, 0, 1u << 20, true, 0, 0 };
static const struct geom GB512 = { 512, 0, 1u << 20, 1u << 20, 6u << 20, 0, 1u << 20, true, 0, 0 };

static struct fake_blk *disk_new(const struct geom *g)
{
	struct fake_blk_config c = { .blocks = g->disk_bytes / g->bs, .block_size = g->bs,
				     .physical_block = g->phys, .discard = g->discard };
	struct fake_blk *fb = fake_blk_new(&c);
	assert_non_null(fb);
	return fb;
}

/* Point the VFS at fb (linked): a fresh store_dev, the regions of x->g. */
static void fx_attach(struct fx *x, struct fake_blk *fb)
{
	store_vfs_unregister();
	x->fb = fb;
	struct store_dev_port port = { clock_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&x->dev, fake_blk_dev(fb), x->bounce, sizeof x->bounce, 50, &port), 0);
	uint32_t bs = x->g.bs;
	x->vcfg = (struct store_vfs_config){
		.dev = &x->dev,
		.db = { 1, { { 65536 / bs, x->g.db_bytes / bs } } },
		.wal_lba = (x->g.wal_off ? x->g.wal_off : 65536 + x->g.db_bytes + 65536) / bs,
		.wal_blocks = x->g.wal_bytes / bs,
		.io_buf = x->io_buf,
		.io_buf_len = 2 * (size_t)bs,
		.random = rnd,
		.wall_ms = wall_ms,
	};
	if (x->g.db2_bytes)
		x->vcfg.db.ext[x->vcfg.db.n++] = (struct store_vfs_extent){ x->g.db2_off / bs, x->g.db2_bytes / bs };
	uint64_t at = (x->vcfg.wal_lba + x->vcfg.wal_blocks) * bs;
	for (uint32_t i = 0; x->g.backup_bytes && i < STORE_VFS_BACKUP_SLOTS; i++) {
		at += 65536;
		x->vcfg.backup[i].n = 1;
		x->vcfg.backup[i].ext[0] = (struct store_vfs_extent){ at / bs, x->g.backup_bytes / bs };
		at += x->g.backup_bytes;
	}
	assert_int_equal(store_vfs_register(&x->vcfg), 0);
}

static struct fx *fx_new(const struct geom *g, size_t mem_limit)
{
	struct fx *x = calloc(1, sizeof *x);
	assert_non_null(x);
	x->g = *g;
	x->io_buf = malloc(2 * (size_t)g->bs);
	assert_non_null(x->io_buf);
	sqlite_up(mem_limit);
	fx_attach(x, disk_new(g));
	cur_fx = x;
	return x;
}

/* Replace the disk by fb (taken); no file may be open. */
static void fx_swap(struct fx *x, struct fake_blk *fb)
{
	assert_int_equal(store_vfs_open_files(), 0);
	store_vfs_unregister();
	fake_blk_free(x->fb);
	fx_attach(x, fb);
}

/* Replace the disk by what a power cut now leaves (seeded). */
static void fx_power_cut(struct fx *x, uint64_t seed)
{
	struct fake_blk *after = fake_blk_after_power_cut(x->fb, seed, NULL);
	assert_non_null(after);
	fx_swap(x, after);
}

/* A healthy disk holding exactly what reads of fb see now, all of it durable. */
static struct fake_blk *disk_copy(const struct fake_blk *fb)
{
	struct fake_blk *n = fake_blk_after_power_cut(fb, 0, NULL);
	assert_non_null(n);
	size_t size;
	const uint8_t *cur = fake_blk_bytes(fb, &size);
	fake_blk_set(n, 0, cur, size);
	return n;
}

static void fx_free(struct fx *x)
{
	sqlite_down();
	cur_fx = NULL;
	fake_blk_free(x->fb);
	free(x->io_buf);
	free(x);
}

static uint64_t fx_requests(const struct fx *x)
{
	struct fake_blk_counts c;
	fake_blk_counts(x->fb, &c);
	return c.requests;
}

/* ---- SQL helpers ---- */

/* Connections a test holds, so that a failed test's teardown can close them and the next
 * test starts from a clean library (a failure does not cascade). */
static sqlite3 *held[4];
static sqlite3_backup *held_bk; /* a backup in progress, finished by the teardown */

static void hold(sqlite3 *db)
{
	for (size_t i = 0; db && i < ARRAY_LEN(held); i++)
		if (!held[i]) {
			held[i] = db;
			return;
		}
	assert_null(db); /* more than the tests ever open */
}

/* Close db whatever its state (a failed checkpoint at close is not an error here). */
static void db_drop(sqlite3 *db)
{
	for (size_t i = 0; i < ARRAY_LEN(held); i++)
		if (held[i] == db)
			held[i] = NULL;
	sqlite3_stmt *st;
	while (db && (st = sqlite3_next_stmt(db, NULL)) != NULL)
		sqlite3_finalize(st);
	sqlite3_close(db);
}

static int raw_open(const char *name, sqlite3 **db, int flags)
{
	*db = NULL;
	int rc = sqlite3_open_v2(name, db, flags, STORE_VFS_NAME);
	hold(*db);
	return rc;
}

static int exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

/* The first column of the first row as an integer; rc of the statement in *rc. */
static int64_t q_int(sqlite3 *db, const char *sql, int *rc)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;
	*rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (*rc == SQLITE_OK) {
		*rc = sqlite3_step(st);
		if (*rc == SQLITE_ROW) {
			v = sqlite3_column_int64(st, 0);
			*rc = SQLITE_OK;
		}
		int rc2 = sqlite3_finalize(st);
		if (*rc == SQLITE_OK || *rc == SQLITE_DONE)
			*rc = rc2;
	}
	return v;
}

/* The first column of the first row as text into out (len bytes, NUL-terminated). */
static int q_text(sqlite3 *db, const char *sql, char *out, size_t len)
{
	sqlite3_stmt *st = NULL;
	out[0] = '\0';
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);
		snprintf(out, len, "%s", t ? (const char *)t : "");
		rc = SQLITE_OK;
	}
	int rc2 = sqlite3_finalize(st);
	return rc == SQLITE_OK || rc == SQLITE_DONE ? rc2 : rc;
}

/* The sequence that opens the database correctly, fresh or existing (the integrator's):
 * exclusive locking first (WAL without shared memory needs it), then WAL; on a fresh file
 * through journal_mode=MEMORY, so that the one-time switch never opens a rollback
 * journal (our VFS would refuse it). An existing file that is not in WAL mode is not
 * ours: refused (SQLITE_NOTADB), never converted. */
static int db_open_with(sqlite3 **db, int reserve, const char *fresh_pragmas);

static int db_open(sqlite3 **db)
{
	return db_open_with(db, 0, NULL);
}

/* The same for a new file with `reserve` bytes per page (0: none) and fresh_pragmas (may be
 * NULL: auto_vacuum...), both before page 1 is first written. */
static int db_open_with(sqlite3 **db, int reserve, const char *fresh_pragmas)
{
	int rc = raw_open("urmqtt.db", db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_extended_result_codes(*db, 1);
	char mode[16];
	rc = q_text(*db, "PRAGMA locking_mode=EXCLUSIVE", mode, sizeof mode);
	if (rc != SQLITE_OK)
		return rc;
	rc = q_text(*db, "PRAGMA journal_mode", mode, sizeof mode);
	if (rc != SQLITE_OK)
		return rc;
	if (strcmp(mode, "wal") != 0) {
		int64_t pages = q_int(*db, "PRAGMA page_count", &rc);
		if (rc != SQLITE_OK)
			return rc;
		if (pages != 0)
			return SQLITE_NOTADB;
		if (reserve) { /* vfs.h's instruction: n comes back as the previous value */
			int n = reserve;
			rc = sqlite3_file_control(*db, "main", SQLITE_FCNTL_RESERVE_BYTES, &n);
			if (rc != SQLITE_OK || n != 0)
				return rc != SQLITE_OK ? rc : SQLITE_ERROR;
		}
		rc = q_text(*db, "PRAGMA journal_mode=MEMORY", mode, sizeof mode);
		if (rc != SQLITE_OK)
			return rc;
		/* After MEMORY: auto_vacuum writes page 1 at once, through a journal. */
		if (fresh_pragmas && (rc = exec(*db, fresh_pragmas)) != SQLITE_OK)
			return rc;
		rc = q_text(*db, "PRAGMA journal_mode=WAL", mode, sizeof mode);
		if (rc != SQLITE_OK)
			return rc;
		if (strcmp(mode, "wal") != 0)
			return SQLITE_CANTOPEN;
	}
	return SQLITE_OK;
}

static void db_close(sqlite3 *db)
{
	assert_null(sqlite3_next_stmt(db, NULL)); /* every statement finalized */
	db_drop(db);
}

static void must_open(sqlite3 **db)
{
	int rc = db_open(db);
	if (rc != SQLITE_OK)
		fail_msg("open: %d %s", rc, *db ? sqlite3_errmsg(*db) : "");
}

/* A database with page checksums (reserve bytes set when it is new). */
static void must_open_ck(sqlite3 **db)
{
	int rc = db_open_with(db, STORE_VFS_RESERVE_BYTES, NULL);
	if (rc != SQLITE_OK)
		fail_msg("open: %d %s", rc, *db ? sqlite3_errmsg(*db) : "");
}

static void must_exec(sqlite3 *db, const char *sql)
{
	int rc = exec(db, sql);
	if (rc != SQLITE_OK)
		fail_msg("%s: %d %s", sql, rc, sqlite3_errmsg(db));
}

static bool check_ok(sqlite3 *db, const char *pragma)
{
	char res[64];
	return q_text(db, pragma, res, sizeof res) == SQLITE_OK && strcmp(res, "ok") == 0;
}

/* count(*) and a checksum of the table t(k, v): the logical state compared below. */
struct state {
	int64_t n, sum;
};

static int read_state(sqlite3 *db, struct state *s)
{
	int rc;
	s->n = q_int(db, "SELECT count(*) FROM t", &rc);
	if (rc != SQLITE_OK)
		return rc;
	s->sum = q_int(db, "SELECT total(k * 7 + length(v) * 13 + unicode(v)) FROM t", &rc);
	return rc;
}

static bool state_eq(const struct state *a, const struct state *b)
{
	return a->n == b->n && a->sum == b->sum;
}

/* Rows k in [from, to) with values of len bytes (several rows per page). */
static int insert_rows(sqlite3 *db, int from, int to, int len)
{
	char sql[256];
	snprintf(sql, sizeof sql,
		 "WITH RECURSIVE c(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM c WHERE i + 1 < %d) "
		 "INSERT INTO t SELECT i, char(65 + i %% 26) || printf('%%.*c', %d, 'x') FROM c",
		 from, to, len);
	return exec(db, sql);
}

static const char *const schema = "CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)";

/* ---- the library set-up ---- */

static void t_init_and_fini(void **state)
{
	(void)state;
	assert_int_equal(store_sqlite_init(NULL), -E_INVAL);
	struct store_sqlite_mem bad = { sqlite_host_alloc, NULL, NULL, 1u << 20 };
	assert_int_equal(store_sqlite_init(&bad), -E_INVAL);
	sqlite_up(1u << 20);
	struct store_sqlite_mem mem = { sqlite_host_alloc, sqlite_host_free, NULL, 1u << 20 };
	assert_int_equal(store_sqlite_init(&mem), -E_EXIST);
	/* Idle, the library holds no memory of ours. */
	struct store_sqlite_mem_stats ms;
	store_sqlite_mem_stats(&ms);
	assert_int_equal(ms.used, 0);
	assert_int_equal(ms.limit, 1u << 20);
	/* A string SQLite returned is alive: fini refuses until it is freed. */
	char *s = sqlite3_mprintf("%d", 42);
	assert_non_null(s);
	assert_int_equal(store_sqlite_fini(), -E_CLOSED);
	sqlite3_free(s);
	sqlite_down();
	assert_int_equal(store_sqlite_fini(), 0); /* twice: nothing to do */
	/* And again: tests run it many times per process. */
	sqlite_up(1u << 20);
	sqlite_down();
}

static void t_register_rules(void **state)
{
	(void)state;
	struct fake_blk *fb = disk_new(&G512);
	struct store_dev dev;
	uint8_t bounce[4096], io[1024];
	struct store_dev_port port = { clock_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&dev, fake_blk_dev(fb), bounce, sizeof bounce, 50, &port), 0);
	struct store_vfs_config c = { .dev = &dev, .db = { 1, { { 128, 2048 } } }, .wal_lba = 4096,
				      .wal_blocks = 2048, .io_buf = io, .io_buf_len = sizeof io,
				      .random = rnd, .wall_ms = wall_ms };
	assert_int_equal(store_vfs_register(&c), -E_INVAL); /* before store_sqlite_init */
	sqlite_up(1u << 20);
	struct store_vfs_config b = c;
	b.io_buf_len = 1023;
	assert_int_equal(store_vfs_register(&b), -E_INVAL); /* less than two blocks */
	b = c;
	b.wal_lba = 2000;
	assert_int_equal(store_vfs_register(&b), -E_INVAL); /* overlapping */
	b = c;
	b.wal_blocks = 8192 - 4096 + 1;
	assert_int_equal(store_vfs_register(&b), -E_INVAL); /* past the device */
	b = c;
	b.db.ext[0].blocks = 0;
	assert_int_equal(store_vfs_register(&b), -E_INVAL); /* empty */
	b = c;
	b.db.n = 0;
	assert_int_equal(store_vfs_register(&b), -E_INVAL); /* no database extent */
	b = c;
	b.db.n = STORE_VFS_MAX_EXTENTS + 1;
	assert_int_equal(store_vfs_register(&b), -E_INVAL); /* more than the VFS holds */
	b = c;
	b.db.n = 2;
	b.db.ext[1] = (struct store_vfs_extent){ 4096 + 1024, 16 };
	assert_int_equal(store_vfs_register(&b), -E_INVAL); /* a second extent over the WAL */
	b.db.ext[1] = (struct store_vfs_extent){ 1024, 16 };
	assert_int_equal(store_vfs_register(&b), -E_INVAL); /* over the first extent */
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, 7000, 16), -E_INVAL); /* not registered */
	b = c;
	b.random = NULL;
	assert_int_equal(store_vfs_register(&b), -E_INVAL);
	assert_int_equal(store_vfs_register(&c), 0);
	assert_int_equal(store_vfs_register(&c), -E_EXIST);
	assert_ptr_equal(sqlite3_vfs_find(NULL), sqlite3_vfs_find(STORE_VFS_NAME)); /* the default */
	/* The stack: cksumvfs over the block layer, under the top. */
	sqlite3_vfs *ck = sqlite3_vfs_find(STORE_VFS_CKSUM_NAME), *raw = sqlite3_vfs_find(STORE_VFS_RAW_NAME);
	assert_non_null(ck);
	assert_non_null(raw);
	assert_ptr_equal(ck->pAppData, raw);
	assert_true(sqlite3_vfs_find(STORE_VFS_NAME)->szOsFile >= ck->szOsFile);
	assert_null(raw->xCurrentTime); /* no double in our code */
	assert_non_null(raw->xGetLastError); /* cksumvfs calls it after any I/O error */
	sqlite_down();
	assert_null(sqlite3_vfs_find(STORE_VFS_NAME)); /* both registrations undone */
	assert_null(sqlite3_vfs_find(STORE_VFS_CKSUM_NAME));
	assert_null(sqlite3_vfs_find(STORE_VFS_RAW_NAME));
	assert_null(sqlite3_vfs_find(NULL));
	fake_blk_free(fb);
}

/* ---- the VFS's file rules, called directly ---- */

struct vf {
	sqlite3_vfs *vfs;
	sqlite3_file *f;
};

static sqlite3_file *held_files[4]; /* for the teardown, as held[] */

static int vf_open(struct vf *v, const char *name, int type)
{
	v->vfs = sqlite3_vfs_find(STORE_VFS_RAW_NAME); /* the block layer itself */
	assert_non_null(v->vfs);
	v->f = calloc(1, (size_t)v->vfs->szOsFile);
	assert_non_null(v->f);
	int out = 0;
	int rc = v->vfs->xOpen(v->vfs, name, v->f, type | SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &out);
	if (rc != SQLITE_OK) {
		assert_null(v->f->pMethods); /* SQLite's rule for a failed open */
		free(v->f);
		v->f = NULL;
		return rc;
	}
	for (size_t i = 0; i < ARRAY_LEN(held_files); i++)
		if (!held_files[i]) {
			held_files[i] = v->f;
			break;
		}
	return rc;
}

static void vf_drop(sqlite3_file *f)
{
	for (size_t i = 0; i < ARRAY_LEN(held_files); i++)
		if (held_files[i] == f)
			held_files[i] = NULL;
	(void)f->pMethods->xClose(f);
	free(f);
}

static void vf_close(struct vf *v)
{
	assert_non_null(v->f->pMethods);
	vf_drop(v->f);
	v->f = NULL;
}

static sqlite3_int64 vf_size(struct vf *v)
{
	sqlite3_int64 n = -1;
	assert_int_equal(v->f->pMethods->xFileSize(v->f, &n), SQLITE_OK);
	return n;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void t_db_size_from_header(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G512, 1u << 20);
	uint64_t db_off = x->vcfg.db.ext[0].lba * 512;
	sqlite3_int64 region = (sqlite3_int64)x->g.db_bytes;
	static const struct {
		uint16_t ps_field;
		uint32_t pages, counter, valid_for;
		bool magic;
		sqlite3_int64 want; /* -1: the region's size */
	} cases[] = {
		{ 4096, 3, 7, 7, true, 3 * 4096 },
		{ 1, 2, 1, 1, true, 2 * 65536 },      /* 1 means 65536 */
		{ 512, 1, 0, 0, true, 512 },
		{ 4096, 3, 7, 6, true, -1 },          /* in-header size not valid */
		{ 4096, 0, 7, 7, true, -1 },          /* no pages */
		{ 4096, 1000000, 7, 7, true, -1 },    /* larger than the region */
		{ 1000, 3, 7, 7, true, -1 },          /* not a power of two */
		{ 256, 3, 7, 7, true, -1 },           /* too small */
		{ 4096, 3, 7, 7, false, 0 },          /* not a database: empty */
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint8_t h[512] = { 0 };
		if (cases[i].magic)
			memcpy(h, "SQLite format 3", 16);
		h[16] = (uint8_t)(cases[i].ps_field >> 8);
		h[17] = (uint8_t)cases[i].ps_field;
		put_be32(h + 24, cases[i].counter);
		put_be32(h + 28, cases[i].pages);
		put_be32(h + 92, cases[i].valid_for);
		fake_blk_set(x->fb, db_off, h, sizeof h);
		struct vf v;
		assert_int_equal(vf_open(&v, "x.db", SQLITE_OPEN_MAIN_DB), SQLITE_OK);
		sqlite3_int64 want = cases[i].want < 0 ? region : cases[i].want;
		if (vf_size(&v) != want)
			fail_msg("case %zu: size %lld, want %lld", i, (long long)vf_size(&v), (long long)want);
		vf_close(&v);
	}
	fx_free(x);
}

static void t_file_rules(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G512, 1u << 20);
	uint64_t db_off = x->vcfg.db.ext[0].lba * 512;
	/* Old bytes on the region: reads past the file's end must not show them. */
	uint8_t junk[8192];
	memset(junk, 0xAB, sizeof junk);
	fake_blk_set(x->fb, db_off, junk, sizeof junk);
	struct vf v;
	assert_int_equal(vf_open(&v, "a.db", SQLITE_OPEN_MAIN_DB), SQLITE_OK);
	const sqlite3_io_methods *m = v.f->pMethods;
	assert_int_equal(vf_size(&v), 0);
	assert_int_equal(m->xSectorSize(v.f), 512);
	assert_int_equal(m->xDeviceCharacteristics(v.f) & SQLITE_IOCAP_POWERSAFE_OVERWRITE, 0);
	int persist = -1;
	assert_int_equal(m->xFileControl(v.f, SQLITE_FCNTL_PERSIST_WAL, &persist), SQLITE_NOTFOUND);
	assert_int_equal(m->xLock(v.f, SQLITE_LOCK_EXCLUSIVE), SQLITE_OK);
	int res = 1;
	assert_int_equal(m->xCheckReservedLock(v.f, &res), SQLITE_OK);
	assert_int_equal(res, 0);
	assert_int_equal(m->xUnlock(v.f, SQLITE_LOCK_NONE), SQLITE_OK);

	/* An unaligned write in the middle of blocks: read-modify-write of both ends. */
	uint8_t w[1000], r[1200];
	for (size_t i = 0; i < sizeof w; i++)
		w[i] = (uint8_t)(i * 7 + 1);
	struct store_vfs_stats st0, st1;
	store_vfs_stats(&st0);
	assert_int_equal(m->xWrite(v.f, w, sizeof w, 100), SQLITE_OK);
	store_vfs_stats(&st1);
	assert_int_equal(st1.rmw - st0.rmw, 2);
	assert_int_equal(vf_size(&v), 1100);
	size_t sz;
	const uint8_t *img = fake_blk_bytes(x->fb, &sz);
	assert_memory_equal(img + db_off + 100, w, sizeof w);
	assert_int_equal(img[db_off + 99], 0xAB);   /* outside the write: kept */
	assert_int_equal(img[db_off + 1100], 0xAB);
	/* Short reads: data up to the end, zeros after, SQLITE_IOERR_SHORT_READ. */
	memset(r, 0x55, sizeof r);
	assert_int_equal(m->xRead(v.f, r, 200, 1000), SQLITE_IOERR_SHORT_READ);
	assert_memory_equal(r, w + 900, 100);
	for (size_t i = 100; i < 200; i++)
		assert_int_equal(r[i], 0);
	memset(r, 0x55, sizeof r);
	assert_int_equal(m->xRead(v.f, r, 512, 4096), SQLITE_IOERR_SHORT_READ);
	for (size_t i = 0; i < 512; i++)
		assert_int_equal(r[i], 0);
	assert_int_equal(m->xRead(v.f, r, 1000, 100), SQLITE_OK);
	assert_memory_equal(r, w, 1000);
	store_vfs_stats(&st1);
	assert_int_equal(st1.short_reads - st0.short_reads, 2);
	/* Aligned whole blocks: no read-modify-write. */
	uint8_t page[4096];
	memset(page, 0x3C, sizeof page);
	store_vfs_stats(&st0);
	assert_int_equal(m->xWrite(v.f, page, sizeof page, 8192), SQLITE_OK);
	store_vfs_stats(&st1);
	assert_int_equal(st1.rmw, st0.rmw);
	assert_int_equal(vf_size(&v), 12288);
	/* Writes past the region: SQLITE_FULL, nothing written. */
	sqlite3_int64 region = (sqlite3_int64)x->g.db_bytes;
	assert_int_equal(m->xWrite(v.f, page, sizeof page, region - 100), SQLITE_FULL);
	assert_int_equal(m->xWrite(v.f, page, 100, region - 100), SQLITE_OK);
	assert_int_equal(m->xTruncate(v.f, region + 1), SQLITE_FULL);
	store_vfs_stats(&st1);
	assert_int_equal(st1.full - st0.full, 2);
	assert_int_equal(m->xTruncate(v.f, 4096), SQLITE_OK);
	assert_int_equal(vf_size(&v), 4096);
	assert_int_equal(m->xSync(v.f, SQLITE_SYNC_FULL), SQLITE_OK);
	struct fake_blk_counts c;
	fake_blk_counts(x->fb, &c);
	assert_int_equal(c.unflushed, 0);

	/* The WAL: its region's size; exists by its header; deleted by zeroing it. */
	int exists = 1;
	assert_int_equal(v.vfs->xAccess(v.vfs, "a.db-wal", SQLITE_ACCESS_EXISTS, &exists), SQLITE_OK);
	assert_int_equal(exists, 0);
	assert_int_equal(v.vfs->xAccess(v.vfs, "a.db", SQLITE_ACCESS_EXISTS, &exists), SQLITE_OK);
	assert_int_equal(exists, 1);
	assert_int_equal(v.vfs->xAccess(v.vfs, "a.db-journal", SQLITE_ACCESS_EXISTS, &exists), SQLITE_OK);
	assert_int_equal(exists, 0);
	struct vf wal;
	assert_int_equal(vf_open(&wal, "b.db-wal", SQLITE_OPEN_WAL), SQLITE_CANTOPEN); /* not ours */
	assert_int_equal(vf_open(&wal, "a.db-wal", SQLITE_OPEN_WAL), SQLITE_OK);
	assert_int_equal(vf_size(&wal), (sqlite3_int64)x->g.wal_bytes);
	uint8_t hdr[32] = { 0x37, 0x7f, 0x06, 0x83 };
	assert_int_equal(wal.f->pMethods->xWrite(wal.f, hdr, sizeof hdr, 0), SQLITE_OK);
	assert_int_equal(v.vfs->xAccess(v.vfs, "a.db-wal", SQLITE_ACCESS_EXISTS, &exists), SQLITE_OK);
	assert_int_equal(exists, 1);
	assert_int_equal(wal.f->pMethods->xTruncate(wal.f, 1000), SQLITE_OK); /* no change */
	assert_int_equal(v.vfs->xAccess(v.vfs, "a.db-wal", SQLITE_ACCESS_EXISTS, &exists), SQLITE_OK);
	assert_int_equal(exists, 1);
	assert_int_equal(wal.f->pMethods->xTruncate(wal.f, 0), SQLITE_OK);
	assert_int_equal(v.vfs->xAccess(v.vfs, "a.db-wal", SQLITE_ACCESS_EXISTS, &exists), SQLITE_OK);
	assert_int_equal(exists, 0);
	assert_int_equal(wal.f->pMethods->xWrite(wal.f, hdr, sizeof hdr, 0), SQLITE_OK);
	assert_int_equal(v.vfs->xDelete(v.vfs, "a.db-wal", 1), SQLITE_OK);
	assert_int_equal(v.vfs->xAccess(v.vfs, "a.db-wal", SQLITE_ACCESS_EXISTS, &exists), SQLITE_OK);
	assert_int_equal(exists, 0);
	fake_blk_counts(x->fb, &c);
	assert_int_equal(c.unflushed, 0); /* syncDir: the deletion is durable */
	assert_int_equal(v.vfs->xDelete(v.vfs, "a.db", 0), SQLITE_IOERR_DELETE_NOENT); /* never */
	assert_int_equal(vf_size(&v), 4096);
	/* The WAL's end is its region's: zeros and a short read past it, SQLITE_FULL to write. */
	sqlite3_int64 wend = (sqlite3_int64)x->g.wal_bytes;
	memset(r, 0x55, sizeof r);
	assert_int_equal(wal.f->pMethods->xRead(wal.f, r, 100, wend - 10), SQLITE_IOERR_SHORT_READ);
	for (size_t i = 10; i < 100; i++)
		assert_int_equal(r[i], 0);
	assert_int_equal(wal.f->pMethods->xWrite(wal.f, w, 100, wend - 10), SQLITE_FULL);
	assert_int_equal(wal.f->pMethods->xWrite(wal.f, w, 10, wend - 10), SQLITE_OK);
	assert_int_equal(wal.f->pMethods->xRead(wal.f, r, 10, wend - 10), SQLITE_OK);
	assert_memory_equal(r, w, 10);
	vf_close(&wal);

	/* Anything but the DB and its WAL: refused and counted. */
	store_vfs_stats(&st0);
	struct vf o;
	assert_int_equal(vf_open(&o, "a.db-journal", SQLITE_OPEN_MAIN_JOURNAL), SQLITE_CANTOPEN);
	assert_int_equal(vf_open(&o, "other.db", SQLITE_OPEN_MAIN_DB), SQLITE_CANTOPEN); /* second DB */
	assert_int_equal(vf_open(&o, NULL, SQLITE_OPEN_TEMP_JOURNAL | SQLITE_OPEN_DELETEONCLOSE), SQLITE_CANTOPEN);
	assert_int_equal(vf_open(&o, "t", SQLITE_OPEN_TEMP_DB), SQLITE_CANTOPEN);
	store_vfs_stats(&st1);
	assert_int_equal(st1.refused_opens - st0.refused_opens, 4);
	assert_int_equal(store_vfs_open_files(), 1);
	vf_close(&v);
	assert_int_equal(store_vfs_open_files(), 0);

	/* The VFS's own services. */
	sqlite3_vfs *vfs = sqlite3_vfs_find(STORE_VFS_RAW_NAME);
	char name[128];
	assert_int_equal(vfs->xFullPathname(vfs, "a.db", vfs->mxPathname + 1, name), SQLITE_OK);
	assert_string_equal(name, "a.db");
	char longname[100];
	memset(longname, 'n', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	assert_int_equal(vfs->xFullPathname(vfs, longname, (int)sizeof name, name), SQLITE_CANTOPEN);
	sqlite3_int64 now = 0;
	assert_int_equal(vfs->xCurrentTimeInt64(vfs, &now), SQLITE_OK);
	assert_int_equal(now, INT64_C(210866760000000) + INT64_C(1764547200000));
	assert_null(vfs->xCurrentTime); /* no double in our code */
	assert_int_equal(vfs->xSleep(vfs, 1000000), 0);
	char rb[16] = { 0 };
	assert_int_equal(vfs->xRandomness(vfs, (int)sizeof rb, rb), (int)sizeof rb);
	assert_int_equal(store_vfs_check(), 0);
	fx_free(x);
}

/* ---- a database on a blank region pair ---- */

static void t_fresh_database_in_wal_mode(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G512, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	char res[32];
	assert_int_equal(q_text(db, "PRAGMA journal_mode", res, sizeof res), SQLITE_OK);
	assert_string_equal(res, "wal");
	assert_int_equal(q_text(db, "PRAGMA locking_mode", res, sizeof res), SQLITE_OK);
	assert_string_equal(res, "exclusive");
	int rc;
	assert_int_equal(q_int(db, "PRAGMA synchronous", &rc), 2);
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 500, 100), SQLITE_OK);
	struct state s0;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	assert_int_equal(s0.n, 500);
	assert_true(check_ok(db, "PRAGMA quick_check"));
	assert_int_equal(store_vfs_open_files(), 2);
	assert_int_equal(store_vfs_check(), 0);
	/* A connection is open: the library cannot go down, the VFS stays. */
	assert_int_equal(store_sqlite_fini(), -E_CLOSED);
	store_vfs_unregister();
	assert_non_null(sqlite3_vfs_find(STORE_VFS_NAME));
	db_close(db);
	/* Closed cleanly: checkpointed into the DB region, the WAL deleted (header zeroed). */
	size_t sz;
	const uint8_t *img = fake_blk_bytes(x->fb, &sz);
	assert_memory_equal(img + x->vcfg.db.ext[0].lba * 512, "SQLite format 3", 16);
	assert_int_equal(img[x->vcfg.db.ext[0].lba * 512 + 18], 2); /* WAL file format */
	assert_int_equal(img[x->vcfg.wal_lba * 512], 0);
	struct store_vfs_stats vs;
	store_vfs_stats(&vs);
	assert_int_equal(vs.refused_opens, 0); /* no journal was ever asked for */
	assert_int_equal(vs.errors, 0);
	assert_true(vs.rmw > 0);               /* WAL frames at unaligned offsets */

	must_open(&db);
	struct state s1;
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(db, "PRAGMA quick_check"));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	/* Temporary tables and big sorts stay in memory (no file). */
	must_exec(db, "CREATE TEMP TABLE tt AS SELECT * FROM t ORDER BY v DESC, k");
	assert_int_equal(q_int(db, "SELECT count(*) FROM (SELECT DISTINCT v FROM t ORDER BY v)", &rc), 26);
	must_exec(db, "PRAGMA incremental_vacuum");
	db_close(db);
	store_vfs_stats(&vs);
	assert_int_equal(vs.refused_opens, 0);
	fx_free(x);
}

/* Frames stay in the WAL region across a close without checkpoint (a "crash" with all
 * writes flushed): the next open replays them. */
static void t_wal_replayed_at_open(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G4K, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 300, 50), SQLITE_OK);
	struct state s0;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	/* Copy the disk now (all commits flushed), as a machine that stopped here. */
	struct fake_blk *copy = disk_copy(x->fb);
	db_close(db);
	fx_swap(x, copy);
	size_t sz;
	const uint8_t *img = fake_blk_bytes(x->fb, &sz);
	assert_int_equal(img[x->vcfg.wal_lba * 4096], 0x37); /* a live WAL */
	must_open(&db);
	struct state s1;
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	fx_free(x);
}

static void t_not_a_wal_database_refused(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G512, 8u << 20);
	/* A database that was written in rollback mode (as a tool might): not ours. */
	sqlite3 *db;
	assert_int_equal(raw_open("urmqtt.db", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), SQLITE_OK);
	must_exec(db, "PRAGMA journal_mode=MEMORY");
	must_exec(db, schema);
	db_close(db);
	assert_int_equal(db_open(&db), SQLITE_NOTADB);
	db_close(db);
	/* Garbage that claims to be a database is refused, never formatted over. */
	uint8_t h[512];
	memset(h, 0xEE, sizeof h);
	memcpy(h, "SQLite format 3", 16);
	fake_blk_set(x->fb, x->vcfg.db.ext[0].lba * 512, h, sizeof h);
	int rc = db_open(&db);
	assert_true(rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT);
	db_close(db);
	size_t sz;
	assert_int_equal(fake_blk_bytes(x->fb, &sz)[x->vcfg.db.ext[0].lba * 512 + 100], 0xEE);
	fx_free(x);
}

/* A read-only device (what a host tool inspecting a disk would open): the database reads,
 * writes are refused by SQLite (SQLITE_READONLY), and the disk is never written. */
static void t_read_only_device(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G512, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 100, 100), SQLITE_OK);
	struct state s0;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	struct fake_blk *copy = disk_copy(x->fb); /* with a live WAL */
	db_close(db);
	struct fake_blk_config c = { .blocks = x->g.disk_bytes / 512, .block_size = 512, .read_only = true };
	struct fake_blk *ro = fake_blk_new(&c);
	assert_non_null(ro);
	size_t size;
	const uint8_t *img = fake_blk_bytes(copy, &size);
	fake_blk_set(ro, 0, img, size);
	fake_blk_free(copy);
	fx_swap(x, ro);
	assert_int_equal(raw_open("urmqtt.db", &db, SQLITE_OPEN_READONLY), SQLITE_OK);
	struct state s1;
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(db, "PRAGMA quick_check"));
	assert_int_equal(exec(db, "INSERT INTO t VALUES(100000, 'no')") & 0xff, SQLITE_READONLY);
	db_drop(db);
	struct fake_blk_counts cnt;
	fake_blk_counts(x->fb, &cnt);
	assert_int_equal(cnt.blocks_written, 0);
	fx_free(x);
}

static void t_attach_and_second_connection_refused(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G512, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	must_exec(db, schema);
	struct store_vfs_stats a, b;
	store_vfs_stats(&a);
	assert_int_equal(exec(db, "ATTACH 'other.db' AS o"), SQLITE_CANTOPEN);
	assert_int_equal(exec(db, "ATTACH 'urmqtt.db' AS o"), SQLITE_CANTOPEN);
	store_vfs_stats(&b);
	assert_int_equal(b.refused_opens - a.refused_opens, 2);
	/* In-memory schemas need no file: allowed. */
	must_exec(db, "ATTACH ':memory:' AS m");
	must_exec(db, "CREATE TABLE m.x(a)");
	must_exec(db, "DETACH m");
	sqlite3 *db2;
	assert_int_equal(raw_open("urmqtt.db", &db2, SQLITE_OPEN_READWRITE), SQLITE_CANTOPEN);
	db_drop(db2);
	/* Leaving WAL for a rollback journal: the journal cannot be opened. */
	int rc = exec(db, "PRAGMA journal_mode=DELETE");
	if (rc == SQLITE_OK)
		rc = exec(db, "INSERT INTO t VALUES(1, 'a')");
	assert_int_equal(rc & 0xff, SQLITE_CANTOPEN);
	store_vfs_stats(&b);
	assert_true(b.refused_opens - a.refused_opens >= 3);
	db_close(db);
	/* Still a WAL database, intact. */
	must_open(&db);
	must_exec(db, "INSERT INTO t VALUES(2, 'b')");
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	fx_free(x);
}

/* ---- device faults ---- */

/* Fail (or stall) request i of a commit, for every i the commit makes: the statement gets
 * SQLITE_IOERR_* (never a crash), the connection closes without a leak, and the database
 * reopens intact in the old or the new state. */
static void fault_sweep(const struct geom *g, bool stall)
{
	struct fx *x = fx_new(g, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 200, 60), SQLITE_OK);
	db_close(db);
	assert_int_equal(store_dev_flush(&x->dev), 0);
	struct fake_blk *base = disk_copy(x->fb);
	struct state old, neu;
	/* Measure the transaction once. */
	fx_swap(x, disk_copy(base));
	must_open(&db);
	assert_int_equal(read_state(db, &old), SQLITE_OK);
	uint64_t r0 = fx_requests(x);
	must_exec(db, "BEGIN; UPDATE t SET v = v || 'y' WHERE k % 3 = 0; DELETE FROM t WHERE k % 7 = 0;");
	assert_int_equal(insert_rows(db, 1000, 1100, 70), SQLITE_OK);
	must_exec(db, "COMMIT");
	uint64_t r1 = fx_requests(x);
	assert_int_equal(read_state(db, &neu), SQLITE_OK);
	db_close(db);
	uint32_t seen_write = 0, seen_fsync = 0, seen_read = 0, n_old = 0, n_new = 0;
	for (uint64_t i = r0; i < r1; i++) {
		fx_swap(x, disk_copy(base));
		must_open(&db);
		struct state s;
		assert_int_equal(read_state(db, &s), SQLITE_OK);
		assert_int_equal(fx_requests(x), r0); /* the same path as measured */
		if (stall)
			fake_blk_stall_request(x->fb, i);
		else
			fake_blk_fail_request(x->fb, i, -E_IO);
		int rc = exec(db, "BEGIN; UPDATE t SET v = v || 'y' WHERE k % 3 = 0; DELETE FROM t WHERE k % 7 = 0;");
		if (rc == SQLITE_OK)
			rc = insert_rows(db, 1000, 1100, 70);
		if (rc == SQLITE_OK)
			rc = exec(db, "COMMIT");
		int ext = sqlite3_extended_errcode(db);
		if (rc != SQLITE_OK) {
			if ((rc & 0xff) != SQLITE_IOERR)
				fail_msg("request %llu: rc %d (%s)", (unsigned long long)(i - r0), rc, sqlite3_errmsg(db));
			seen_write += ext == SQLITE_IOERR_WRITE;
			seen_fsync += ext == SQLITE_IOERR_FSYNC;
			seen_read += ext == SQLITE_IOERR_READ;
		}
		if (stall && rc != SQLITE_OK) {
			/* The device is broken for good: every later call fails, cleanly. */
			assert_true(x->dev.broken);
			assert_int_equal(exec(db, "INSERT INTO t VALUES(5000, 'z')") & 0xff, SQLITE_IOERR);
			uint8_t blk[512];
			assert_int_equal(store_dev_read(&x->dev, 0, 1, blk), -E_CLOSED);
			(void)exec(db, "INSERT INTO t VALUES(5000, 'z')");
		}
		db_drop(db); /* may fail to checkpoint: must still close and free */
		assert_int_equal(store_vfs_open_files(), 0);
		/* A power cut now (the device healthy again): old or new, intact. */
		fx_power_cut(x, i);
		must_open(&db);
		assert_int_equal(read_state(db, &s), SQLITE_OK);
		if (!state_eq(&s, &old) && !state_eq(&s, &neu))
			fail_msg("request %llu: mixed state", (unsigned long long)(i - r0));
		if (rc == SQLITE_OK && !state_eq(&s, &neu))
			fail_msg("request %llu: committed, then lost", (unsigned long long)(i - r0));
		assert_true(check_ok(db, "PRAGMA integrity_check"));
		db_close(db);
		n_old += state_eq(&s, &old);
		n_new += state_eq(&s, &neu);
	}
	print_message("[ faults   ] %u-byte blocks, %s: %llu requests; IOERR_WRITE %u, _FSYNC %u, _READ %u; "
		      "%u old, %u new\n", g->bs, stall ? "stalled" : "failed", (unsigned long long)(r1 - r0),
		      seen_write, seen_fsync, seen_read, n_old, n_new);
	assert_true(seen_write > 0);
	assert_true(seen_fsync > 0);
	fake_blk_free(base);
	fx_free(x);
}

static void t_failing_requests_in_a_commit(void **state)
{
	(void)state;
	fault_sweep(&G512, false);
	fault_sweep(&G4K, false);
}

static void t_stalled_request_times_out(void **state)
{
	(void)state;
	fault_sweep(&G512, true);
}

static void t_failing_read(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G4K, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 2000, 100), SQLITE_OK);
	db_close(db);
	/* Cold cache: every read of the scan is a request; fail one in the middle. */
	must_open(&db);
	uint64_t r0 = fx_requests(x);
	fake_blk_fail_request(x->fb, r0 + 20, -E_IO);
	int rc;
	(void)q_int(db, "SELECT sum(length(v)) FROM t", &rc);
	assert_int_equal(rc, SQLITE_IOERR_READ);
	assert_int_equal(sqlite3_extended_errcode(db), SQLITE_IOERR_READ);
	struct store_vfs_stats vs;
	store_vfs_stats(&vs);
	assert_true(vs.errors > 0);
	/* One fault, then the device is healthy again: the same query works. */
	assert_int_equal(q_int(db, "SELECT count(*) FROM t", &rc), 2000);
	assert_int_equal(rc, SQLITE_OK);
	assert_true(check_ok(db, "PRAGMA quick_check"));
	db_close(db);
	/* A failing read when opening: an error, no leak. */
	fake_blk_fail_request(x->fb, fx_requests(x), -E_IO);
	rc = db_open(&db);
	assert_int_equal(rc & 0xff, SQLITE_IOERR);
	db_drop(db);
	fx_free(x);
}

/* ---- regions too small ---- */

static void t_wal_region_full(void **state)
{
	(void)state;
	struct geom g = G512;
	g.wal_bytes = 64u << 10; /* 15 frames of 4 KiB pages */
	struct fx *x = fx_new(&g, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 50, 100), SQLITE_OK);
	struct state s0;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	int rc = insert_rows(db, 100, 2000, 100);
	assert_int_equal(rc, SQLITE_FULL);
	struct store_vfs_stats vs;
	store_vfs_stats(&vs);
	assert_true(vs.full > 0);
	/* The failed transaction left nothing; a checkpoint makes room again. */
	struct state s1;
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(insert_rows(db, 100, 130, 100), SQLITE_OK);
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	assert_int_equal(insert_rows(db, 200, 2000, 100), SQLITE_FULL);
	db_close(db);
	/* Reopened on a larger WAL region over the same disk: intact, and it grows. */
	x->g.wal_bytes = 1u << 20;
	fx_attach(x, x->fb);
	must_open(&db);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	assert_int_equal(insert_rows(db, 200, 2000, 100), SQLITE_OK);
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	fx_free(x);
}

static void t_db_region_full(void **state)
{
	(void)state;
	struct geom g = G512;
	g.db_bytes = 32u << 10; /* 8 pages */
	g.wal_off = 2u << 20;   /* room to grow the DB region in place */
	struct fx *x = fx_new(&g, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	/* Committed to the WAL: fine, the database is larger than its region though. */
	assert_int_equal(insert_rows(db, 0, 400, 100), SQLITE_OK);
	struct state s0;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	int rc = exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(rc, SQLITE_FULL);
	/* Nothing lost: the WAL still holds every commit. */
	struct state s1;
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_drop(db); /* its checkpoint fails too: the WAL stays */
	assert_int_equal(store_vfs_open_files(), 0);
	/* Reopened with a larger DB region (the WAL region stays where it was). */
	uint64_t wal_lba = x->vcfg.wal_lba;
	x->g.db_bytes = x->g.wal_off - 65536 - 65536;
	fx_attach(x, x->fb);
	assert_int_equal(x->vcfg.wal_lba, wal_lba);
	must_open(&db);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	must_open(&db);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	db_close(db);
	fx_free(x);
}

/* ---- the memory bound ---- */

static void t_memory_bound(void **state)
{
	(void)state;
	/* Every limit from tiny to enough: statements fail with SQLITE_NOMEM, gracefully, and
	 * the database stays intact for the next run. */
	struct fake_blk *fb = disk_new(&G512);
	bool saw_nomem = false, saw_ok = false;
	for (size_t limit = 4096; limit <= (768u << 10); limit += limit / 4) {
		struct fx x = { .g = G512 };
		x.io_buf = malloc(1024);
		assert_non_null(x.io_buf);
		sqlite_up(limit);
		fx_attach(&x, fb);
		sqlite3 *db = NULL;
		int rc = db_open(&db);
		if (rc == SQLITE_OK)
			rc = exec(db, "CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY, v TEXT)");
		if (rc == SQLITE_OK)
			rc = insert_rows(db, (int)limit, (int)limit + 300, 200);
		struct state s;
		if (rc == SQLITE_OK)
			rc = read_state(db, &s);
		if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_NOMEM)
			fail_msg("limit %zu: rc %d", limit, rc);
		saw_nomem |= rc != SQLITE_OK;
		saw_ok |= rc == SQLITE_OK;
		struct store_sqlite_mem_stats ms;
		store_sqlite_mem_stats(&ms);
		assert_true(ms.peak <= limit);
		if (rc != SQLITE_OK)
			assert_true(ms.refused > 0);
		db_drop(db);
		sqlite_down();
		free(x.io_buf);
	}
	assert_true(saw_nomem && saw_ok);
	/* With room again: every commit that succeeded is there, intact. */
	struct fx x = { .g = G512 };
	x.io_buf = malloc(1024);
	sqlite_up(8u << 20);
	fx_attach(&x, fb);
	sqlite3 *db;
	must_open(&db);
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	int rc;
	int64_t n = q_int(db, "SELECT count(*) FROM t", &rc);
	assert_int_equal(rc, SQLITE_OK);
	assert_true(n > 0 && n % 300 == 0);
	db_close(db);
	sqlite_down();
	free(x.io_buf);
	fake_blk_free(fb);
}

/* ---- durability ---- */

/* Each of n disks (taken) must open with state want, intact. */
static void verify_cuts(struct fx *x, struct fake_blk **cuts, size_t n, const struct state *want,
			const char *what)
{
	for (size_t i = 0; i < n; i++) {
		assert_non_null(cuts[i]);
		fx_swap(x, cuts[i]);
		sqlite3 *db;
		must_open(&db);
		struct state s;
		assert_int_equal(read_state(db, &s), SQLITE_OK);
		if (!state_eq(want, &s))
			fail_msg("%s, cut %zu: state (%lld, %lld), want (%lld, %lld)", what, i, (long long)s.n,
				 (long long)s.sum, (long long)want->n, (long long)want->sum);
		if (!check_ok(db, "PRAGMA integrity_check"))
			fail_msg("%s, cut %zu: integrity_check", what, i);
		db_close(db);
	}
}

#define N_CUTS 40

static void t_committed_rows_survive_power_cuts(void **state)
{
	(void)state;
	const struct geom *geoms[] = { &G512, &G4K, &G512P4K };
	for (size_t gi = 0; gi < ARRAY_LEN(geoms); gi++) {
		struct fx *x = fx_new(geoms[gi], 8u << 20);
		sqlite3 *db;
		must_open(&db);
		must_exec(db, schema);
		assert_int_equal(insert_rows(db, 0, 100, 300), SQLITE_OK);
		assert_int_equal(insert_rows(db, 100, 150, 300), SQLITE_OK);
		must_exec(db, "UPDATE t SET v = 'short' WHERE k < 20");
		struct state s0;
		assert_int_equal(read_state(db, &s0), SQLITE_OK);
		/* Cut right after the commits, and again in the middle of a transaction that
		 * never commits (its pages spill to the WAL: a small cache): never seen. */
		struct fake_blk *cuts[2 * N_CUTS];
		for (uint64_t seed = 0; seed < N_CUTS; seed++)
			cuts[seed] = fake_blk_after_power_cut(x->fb, seed + 1, NULL);
		must_exec(db, "PRAGMA cache_size=10");
		must_exec(db, "BEGIN; DELETE FROM t WHERE k > 50");
		assert_int_equal(insert_rows(db, 1000, 1400, 300), SQLITE_OK);
		for (uint64_t seed = 0; seed < N_CUTS; seed++)
			cuts[N_CUTS + seed] = fake_blk_after_power_cut(x->fb, seed + 100, NULL);
		must_exec(db, "ROLLBACK");
		db_close(db);
		verify_cuts(x, cuts, 2 * N_CUTS, &s0, geoms[gi] == &G4K ? "4096" : "512");
		fx_free(x);
	}
}

/* The power dies at request i of a commit (the request torn at sector granularity), for
 * every i; what survives is the old or the new state, intact. */
static void die_sweep(const struct geom *g, bool checkpoint, bool ck)
{
	struct fx *x = fx_new(g, 8u << 20);
	sqlite3 *db;
	if (ck)
		must_open_ck(&db);
	else
		must_open(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 300, 80), SQLITE_OK);
	if (checkpoint) /* frames waiting in the WAL for the checkpoint below */
		assert_int_equal(insert_rows(db, 300, 600, 80), SQLITE_OK);
	struct fake_blk *base = disk_copy(x->fb); /* every commit is flushed */
	db_close(db);
	static const char *const txn = "BEGIN; UPDATE t SET v = v || 'z' WHERE k % 5 = 0; "
				       "DELETE FROM t WHERE k % 11 = 0; INSERT INTO t SELECT k + 10000, v FROM t WHERE k < 40; COMMIT";
	static const char *const ckpts[] = { "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA wal_checkpoint(PASSIVE)" };
	for (size_t ci = 0; ci < (checkpoint ? 2u : 1u); ci++) {
		const char *op = checkpoint ? ckpts[ci] : txn;
		/* Measure: the requests of the operation, the states before and after. */
		fx_swap(x, disk_copy(base));
		sqlite3_randomness(0, NULL);
		vfs_rng = 7;
		must_open(&db);
		if (!checkpoint)
			must_exec(db, "PRAGMA wal_autocheckpoint=0");
		struct state old, neu;
		assert_int_equal(read_state(db, &old), SQLITE_OK);
		uint64_t r0 = fx_requests(x);
		must_exec(db, op);
		uint64_t r1 = fx_requests(x);
		assert_int_equal(read_state(db, &neu), SQLITE_OK);
		assert_true(checkpoint == state_eq(&old, &neu));
		db_close(db);
		uint32_t n_old = 0, n_new = 0, n_died = 0;
		for (uint64_t i = r0; i <= r1; i++) {
			fx_swap(x, disk_copy(base));
			sqlite3_randomness(0, NULL);
			vfs_rng = 7;
			must_open(&db);
			if (!checkpoint)
				must_exec(db, "PRAGMA wal_autocheckpoint=0");
			struct state s;
			assert_int_equal(read_state(db, &s), SQLITE_OK);
			assert_int_equal(fx_requests(x), r0); /* the same path as measured */
			fake_blk_die_at(x->fb, i, i * 31 + 5);
			int rc = exec(db, op);
			bool died = fake_blk_dead(x->fb);
			assert_true(rc == SQLITE_OK || died);
			struct fake_blk *after = fake_blk_after_power_cut(x->fb, i * 17 + 3, NULL);
			assert_non_null(after);
			db_drop(db);
			fx_swap(x, after);
			must_open(&db);
			assert_int_equal(read_state(db, &s), SQLITE_OK);
			if (!state_eq(&s, &old) && !state_eq(&s, &neu))
				fail_msg("%s, death at request %llu: a mixed state", op, (unsigned long long)(i - r0));
			if (rc == SQLITE_OK && !state_eq(&s, &neu))
				fail_msg("%s, death at request %llu: committed, then lost", op,
					 (unsigned long long)(i - r0));
			if (!check_ok(db, "PRAGMA integrity_check"))
				fail_msg("%s, death at request %llu: integrity_check", op, (unsigned long long)(i - r0));
			db_close(db);
			n_died += died;
			n_old += state_eq(&s, &old);
			n_new += state_eq(&s, &neu);
		}
		/* Not vacuous: the death hit the operation at every request, and for a commit
		 * both outcomes happened (before and after its flush). */
		print_message("[ sweep    ] %u-byte blocks%s, %s: %llu requests, %u died, %u old, %u new\n",
			      g->bs, ck ? ", page checksums" : "", checkpoint ? ckpts[ci] : "commit",
			      (unsigned long long)(r1 - r0), n_died, n_old, n_new);
		assert_true(r1 - r0 >= 4);
		assert_int_equal(n_died, r1 - r0);
		if (!checkpoint)
			assert_true(n_old > 0 && n_new > 0);
	}
	fake_blk_free(base);
	fx_free(x);
}

static void t_death_at_every_request_of_a_commit(void **state)
{
	(void)state;
	die_sweep(&G512, false, false);
	die_sweep(&G4K, false, false);
	die_sweep(&G512P4K, false, false);
	die_sweep(&G512P4K, false, true); /* held frame headers, split padding frames */
	die_sweep(&G512, false, true);
}

static void t_death_at_every_request_of_a_checkpoint(void **state)
{
	(void)state;
	die_sweep(&G512, true, false);
	die_sweep(&G512P4K, true, true);
}

/* ---- the sector discipline (why POWERSAFE_OVERWRITE is not claimed) ---- */

/* A block device in front of the fake that watches WAL writes: after a commit returned,
 * no later write may touch a sector that held bytes flushed by that commit. */
struct watch {
	struct blk_dev dev;
	struct blk_dev *inner;
	uint64_t wal_lba, wal_blocks;
	uint32_t bs, sector;
	uint64_t end_now;      /* bytes: end of the highest WAL write so far */
	uint64_t end_flushed;  /* the same, at the last flush */
	uint64_t guard;        /* no WAL write may start below (sector aligned) */
	uint64_t violations, wal_writes;
};

static int w_submit(void *impl, struct blk_req *r)
{
	struct watch *w = impl;
	if (r->op == BLK_WRITE && r->lba >= w->wal_lba && r->lba < w->wal_lba + w->wal_blocks) {
		uint64_t start = (r->lba - w->wal_lba) * w->bs;
		uint64_t end = start + (uint64_t)r->n_blocks * w->bs;
		w->wal_writes++;
		if (start < w->guard)
			w->violations++;
		if (end > w->end_now)
			w->end_now = end;
	}
	if (r->op == BLK_FLUSH)
		w->end_flushed = w->end_now;
	return w->inner->ops->submit(w->inner->impl, r);
}

static void w_kick(void *impl)
{
	struct watch *w = impl;
	w->inner->ops->kick(w->inner->impl);
}

static int w_poll(void *impl, struct blk_req **done)
{
	struct watch *w = impl;
	return w->inner->ops->poll(w->inner->impl, done);
}

static const struct blk_ops watch_ops = { w_submit, w_kick, w_poll };

static void sector_discipline(const struct geom *g, bool ck)
{
	struct fx *x = fx_new(g, 8u << 20);
	static struct watch w; /* static: a failed test's teardown still closes through it */
	w = (struct watch){ .inner = fake_blk_dev(x->fb), .bs = g->bs };
	w.dev = (struct blk_dev){ .ops = &watch_ops, .impl = &w, .topo = w.inner->topo };
	w.sector = MAX(g->bs, w.inner->topo.physical_block);
	/* Re-register over the watching device (same disk). */
	store_vfs_unregister();
	struct store_dev_port port = { clock_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&x->dev, &w.dev, x->bounce, sizeof x->bounce, 50, &port), 0);
	assert_int_equal(store_vfs_register(&x->vcfg), 0);
	w.wal_lba = x->vcfg.wal_lba;
	w.wal_blocks = x->vcfg.wal_blocks;
	sqlite3 *db;
	if (ck)
		must_open_ck(&db);
	else
		must_open(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	for (int i = 0; i < 40; i++) {
		char sql[96];
		snprintf(sql, sizeof sql, "INSERT INTO t VALUES(%d, printf('%%.*c', %d, 'q'))", i, 10 + i * 37);
		must_exec(db, sql);
		/* Committed: its frames end at a sector boundary (the padding did that). */
		assert_int_equal(w.end_flushed % w.sector, 0);
		w.guard = w.end_flushed;
	}
	assert_true(w.wal_writes > 40);
	assert_int_equal(w.violations, 0);
	/* And a power cut after all that keeps all 40 rows. */
	struct state s0;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	assert_int_equal(s0.n, 40);
	struct fake_blk *cuts[10];
	for (uint64_t seed = 0; seed < 10; seed++)
		cuts[seed] = fake_blk_after_power_cut(x->fb, seed + 1, NULL);
	w.guard = 0; /* closing checkpoints and deletes the WAL: its header is rewritten */
	db_close(db);
	verify_cuts(x, cuts, 10, &s0, "sector discipline");
	fx_free(x);
}

static void t_sector_discipline(void **state)
{
	(void)state;
	sector_discipline(&G512, false);
	sector_discipline(&G4K, false);
	sector_discipline(&G512P4K, false);
	/* With page checksums the block layer writes the frame headers itself: same rule. */
	sector_discipline(&G512, true);
	sector_discipline(&G512P4K, true);
}

/* ---- the random crash loop ---- */

/* One iteration: a random geometry, random transactions (insert, update, delete, some
 * checkpoints) against a model, the power dying at a random request with a random torn
 * write and a random subset of the unflushed writes surviving; the database must then
 * hold the last committed state or the one being committed, intact. */
enum crash_outcome { CRASH_NONE, CRASH_OLD, CRASH_NEW, CRASH__N };

static enum crash_outcome crash_once(uint64_t seed)
{
	uint64_t s = seed;
	const struct geom *geoms[] = { &G512, &G4K, &G512P4K };
	const struct geom *g = geoms[rng_next(&s) % 3];
	struct fx *x = fx_new(g, 8u << 20);
	sqlite3_randomness(0, NULL); /* replays see the same salts */
	vfs_rng = seed;
	sqlite3 *db;
	if (seed & 1) /* half the iterations with page checksums */
		must_open_ck(&db);
	else
		must_open(&db);
	must_exec(db, schema);
	char sql[256];
	snprintf(sql, sizeof sql, "PRAGMA wal_autocheckpoint=%d", (int)(rng_next(&s) % 40));
	must_exec(db, sql);
	struct state committed;
	assert_int_equal(read_state(db, &committed), SQLITE_OK);
	uint64_t die = fx_requests(x) + 5 + rng_next(&s) % 400;
	fake_blk_die_at(x->fb, die, rng_next(&s));
	struct state inflight = committed;
	for (int t = 0; t < 60 && !fake_blk_dead(x->fb); t++) {
		int a = (int)(rng_next(&s) % 500), b = a + 1 + (int)(rng_next(&s) % 60);
		switch (rng_next(&s) % 5) {
		case 0:
		case 1:
			snprintf(sql, sizeof sql,
				 "WITH RECURSIVE c(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM c WHERE i + 1 < %d) "
				 "INSERT OR REPLACE INTO t SELECT i, char(65 + i %% 26) || printf('%%.*c', %d, 'r') FROM c",
				 a, b, (int)(rng_next(&s) % 900));
			break;
		case 2:
			snprintf(sql, sizeof sql, "UPDATE t SET v = v || 'u' WHERE k BETWEEN %d AND %d", a, b);
			break;
		case 3:
			snprintf(sql, sizeof sql, "DELETE FROM t WHERE k BETWEEN %d AND %d", a, b);
			break;
		default:
			snprintf(sql, sizeof sql, "PRAGMA wal_checkpoint(%s)", rng_next(&s) & 1 ? "PASSIVE" : "TRUNCATE");
			break;
		}
		int rc;
		if (strncmp(sql, "PRAGMA", 6) == 0) { /* a checkpoint: the state stays */
			rc = exec(db, sql);
			if (rc != SQLITE_OK && !fake_blk_dead(x->fb))
				fail_msg("seed %llu: %s: %d", (unsigned long long)seed, sql, rc);
			continue;
		}
		/* The state this transaction commits, read inside it first. */
		struct state next;
		rc = exec(db, "BEGIN");
		if (rc == SQLITE_OK)
			rc = exec(db, sql);
		if (rc == SQLITE_OK)
			rc = read_state(db, &next);
		if (rc != SQLITE_OK) {
			if (!fake_blk_dead(x->fb))
				fail_msg("seed %llu: %s: %d", (unsigned long long)seed, sql, rc);
			(void)exec(db, "ROLLBACK");
			break;
		}
		inflight = next;
		rc = exec(db, "COMMIT");
		if (rc != SQLITE_OK) {
			if (!fake_blk_dead(x->fb))
				fail_msg("seed %llu: commit: %d", (unsigned long long)seed, rc);
			break;
		}
		committed = inflight;
	}
	bool died = fake_blk_dead(x->fb);
	struct fake_blk *after = fake_blk_after_power_cut(x->fb, rng_next(&s), NULL);
	assert_non_null(after);
	db_drop(db);
	fx_swap(x, after);
	int rc = db_open(&db);
	if (rc != SQLITE_OK)
		fail_msg("seed %llu: reopen %d", (unsigned long long)seed, rc);
	struct state got;
	assert_int_equal(read_state(db, &got), SQLITE_OK);
	if (!state_eq(&got, &committed) && !state_eq(&got, &inflight))
		fail_msg("seed %llu: state (%lld, %lld) is neither committed (%lld, %lld) nor in flight (%lld, %lld)",
			 (unsigned long long)seed, (long long)got.n, (long long)got.sum, (long long)committed.n,
			 (long long)committed.sum, (long long)inflight.n, (long long)inflight.sum);
	if (!check_ok(db, "PRAGMA integrity_check"))
		fail_msg("seed %llu: integrity_check", (unsigned long long)seed);
	db_close(db);
	fx_free(x);
	if (!died)
		return CRASH_NONE;
	return state_eq(&got, &committed) ? CRASH_OLD : CRASH_NEW;
}

static void t_random_crash_loop(void **state)
{
	(void)state;
	const char *env = getenv("URMQTT_VFS_SEED");
	if (env) {
		(void)crash_once(strtoull(env, NULL, 0));
		return;
	}
	uint32_t n[CRASH__N] = { 0 };
	for (uint64_t i = 1; i <= 50; i++) {
		uint64_t seed = i * 0x9e3779b97f4a7c15ull;
		print_message("[ crash    ] seed %llu\n", (unsigned long long)seed);
		n[crash_once(seed)]++;
	}
	/* Not vacuous: most iterations died mid-way (a death after a commit's flush and before
	 * it returned is rare here; the sweeps above cover that window request by request). */
	print_message("[ crash    ] 50 iterations: %u without a death, %u died and kept the last commit, "
		      "%u died and kept the one in flight\n", n[CRASH_NONE], n[CRASH_OLD], n[CRASH_NEW]);
	assert_true(n[CRASH_OLD] + n[CRASH_NEW] >= 25);
}

/* ---- disk lifecycle: backup files ---- */

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const uint8_t *disk_at(const struct fx *x, uint64_t off)
{
	size_t size;
	const uint8_t *img = fake_blk_bytes(x->fb, &size);
	assert_true(off < size);
	return img + off;
}

/* The first offset of needle in [off, off + len) of the disk, or -1. */
static int64_t disk_find(const struct fx *x, uint64_t off, uint64_t len, const char *needle)
{
	size_t n = strlen(needle);
	const uint8_t *p = disk_at(x, off);
	for (uint64_t i = 0; i + n <= len; i++)
		if (p[i] == (uint8_t)needle[0] && memcmp(p + i, needle, n) == 0)
			return (int64_t)(off + i);
	return -1;
}

/* Flip bits of one byte on the disk (durable, as rot would be). */
static void disk_flip(struct fx *x, uint64_t at, uint8_t mask)
{
	uint8_t b = *disk_at(x, at) ^ mask;
	fake_blk_set(x->fb, at, &b, 1);
}

static uint64_t db_off(const struct fx *x)
{
	return x->vcfg.db.ext[0].lba * x->g.bs;
}

static uint64_t wal_off(const struct fx *x)
{
	return x->vcfg.wal_lba * x->g.bs;
}

static uint64_t backup_off(const struct fx *x, int slot)
{
	return x->vcfg.backup[slot].ext[0].lba * x->g.bs;
}

/* Rows k in [from, to) whose values start with tag and k ("B00110..."), ~300 bytes. */
static void insert_marked(sqlite3 *db, char tag, int from, int to)
{
	char sql[256];
	snprintf(sql, sizeof sql,
		 "WITH RECURSIVE c(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM c WHERE i + 1 < %d) "
		 "INSERT INTO t SELECT i, printf('%c%%05d', i) || printf('%%.*c', 290, 'm') FROM c",
		 from, to, tag);
	must_exec(db, sql);
}

/* Open a backup file as the integrator does: exclusive, no journal. */
static int bk_open(const char *name, sqlite3 **dst)
{
	int rc = raw_open(name, dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	if (rc == SQLITE_OK) {
		sqlite3_extended_result_codes(*dst, 1);
		rc = exec(*dst, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=OFF");
	}
	return rc;
}

/* A whole backup of db into `name` in steps of `pages`; the first error or SQLITE_OK. */
static int bk_copy(sqlite3 *db, const char *name, int pages)
{
	sqlite3 *dst;
	int rc = bk_open(name, &dst);
	sqlite3_backup *bk = rc == SQLITE_OK ? sqlite3_backup_init(dst, "main", db, "main") : NULL;
	if (rc == SQLITE_OK && !bk)
		rc = sqlite3_errcode(dst);
	held_bk = bk;
	while (rc == SQLITE_OK)
		rc = sqlite3_backup_step(bk, pages);
	held_bk = NULL;
	if (bk)
		(void)sqlite3_backup_finish(bk);
	db_drop(dst);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int64_t q_int_ok(sqlite3 *db, const char *sql)
{
	int rc;
	int64_t v = q_int(db, sql, &rc);
	if (rc != SQLITE_OK)
		fail_msg("%s: %d %s", sql, rc, sqlite3_errmsg(db));
	return v;
}

/* A backup of a live WAL database (part in the DB region, part in its WAL) in steps, the
 * source written between them; the copy stamped on its own connection; then the DB's WAL
 * replays as before, the backup opens alone (no log) intact and checked, and a raw copy of
 * the slot over the DB region opens as the WAL database it was (the integrator's restore). */
static void t_backup_of_a_live_database(void **state)
{
	(void)state;
	struct fx *x = fx_new(&GB4K, 8u << 20);
	sqlite3 *db, *dst = NULL;
	must_open_ck(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 300, 300), SQLITE_OK);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(insert_rows(db, 300, 400, 300), SQLITE_OK);
	/* The integrator's connection: the default VFS, exclusive, no journal. */
	assert_int_equal(sqlite3_open_v2(STORE_VFS_BACKUP_A, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
			 SQLITE_OK);
	hold(dst);
	sqlite3_extended_result_codes(dst, 1);
	char mode[16];
	must_exec(dst, "PRAGMA locking_mode=EXCLUSIVE");
	assert_int_equal(q_text(dst, "PRAGMA journal_mode=OFF", mode, sizeof mode), SQLITE_OK);
	assert_string_equal(mode, "off");
	assert_int_equal(store_vfs_open_files(), 3);
	assert_int_equal(store_vfs_check(), 0);
	/* One backup file at a time. */
	sqlite3 *other;
	assert_int_equal(raw_open(STORE_VFS_BACKUP_B, &other, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE),
			 SQLITE_CANTOPEN);
	db_drop(other);
	struct store_vfs_stats st0, st1;
	store_vfs_stats(&st0);
	assert_int_equal(st0.refused[STORE_VFS_REFUSED_TWICE], 1);
	sqlite3_backup *bk = held_bk = sqlite3_backup_init(dst, "main", db, "main");
	assert_non_null(bk);
	int rc, steps = 0;
	while ((rc = sqlite3_backup_step(bk, 7)) == SQLITE_OK) {
		/* The source changes between steps (the same connection: the copy follows). */
		char sql[160];
		snprintf(sql, sizeof sql, "INSERT INTO t VALUES(%d, 'between steps'); UPDATE t SET v = v || 'u' WHERE k = %d",
			 1000 + steps, steps * 37);
		must_exec(db, sql);
		steps++;
	}
	if (rc != SQLITE_DONE)
		fail_msg("backup step %d: %d (%s / %s)", steps, rc, sqlite3_errmsg(dst), sqlite3_errmsg(db));
	assert_true(steps >= 3);
	assert_int_equal(store_vfs_check(), 0);
	held_bk = NULL;
	assert_int_equal(sqlite3_backup_finish(bk), SQLITE_OK);
	/* Stamped on the same connection: page 1 is SQLite's again, and no log is asked for. */
	must_exec(dst, "CREATE TABLE stamp(ms INTEGER); INSERT INTO stamp VALUES(1764547200000)");
	store_vfs_stats(&st1);
	assert_int_equal(st1.refused_opens, st0.refused_opens);
	assert_int_equal(st1.errors, 0);
	struct state src, copy;
	assert_int_equal(read_state(db, &src), SQLITE_OK);
	assert_int_equal(read_state(dst, &copy), SQLITE_OK);
	assert_true(state_eq(&src, &copy));
	assert_int_equal(src.n, 400 + steps);
	db_close(dst);
	/* A machine stopped now: the database's live WAL must replay (below). */
	struct fake_blk *stopped = disk_copy(x->fb);
	db_close(db);

	/* On the disk the slot holds a WAL-mode image with checksums, as the DB region would. */
	const uint8_t *bh = disk_at(x, backup_off(x, 0));
	assert_memory_equal(bh, "SQLite format 3", 16);
	assert_int_equal(bh[18], 2);
	assert_int_equal(bh[19], 2);
	assert_int_equal(bh[20], STORE_VFS_RESERVE_BYTES);
	uint64_t bytes = (uint64_t)get_be32(bh + 28) * 4096u;
	assert_true(bytes > 0 && bytes <= x->g.backup_bytes);

	/* The backup alone: no log, intact, its pages checked. */
	assert_int_equal(raw_open(STORE_VFS_BACKUP_A, &dst, SQLITE_OPEN_READWRITE), SQLITE_OK);
	must_exec(dst, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=OFF");
	assert_int_equal(read_state(dst, &copy), SQLITE_OK);
	assert_true(state_eq(&src, &copy));
	assert_int_equal(q_int_ok(dst, "SELECT count(*) FROM stamp"), 1);
	assert_int_equal(q_int_ok(dst, "PRAGMA checksum_verification"), 1);
	assert_true(check_ok(dst, "PRAGMA integrity_check"));
	assert_int_equal(q_text(dst, "PRAGMA journal_mode", mode, sizeof mode), SQLITE_OK);
	assert_string_equal(mode, "off");
	assert_int_equal(store_vfs_open_files(), 1);
	db_close(dst);
	store_vfs_stats(&st1);
	assert_int_equal(st1.refused_opens, st0.refused_opens);

	/* The integrator's restore: the slot's bytes raw over the DB region, the WAL's head
	 * zeroed: the database it was, in WAL mode. */
	uint8_t *img = malloc(bytes);
	assert_non_null(img);
	memcpy(img, bh, bytes);
	fake_blk_set(x->fb, db_off(x), img, bytes);
	memset(img, 0, 4096);
	fake_blk_set(x->fb, wal_off(x), img, 4096);
	free(img);
	must_open(&db);
	assert_int_equal(read_state(db, &copy), SQLITE_OK);
	assert_true(state_eq(&src, &copy));
	assert_int_equal(q_text(db, "PRAGMA journal_mode", mode, sizeof mode), SQLITE_OK);
	assert_string_equal(mode, "wal");
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);

	/* The stopped machine's database: its WAL replays, intact. */
	fx_swap(x, stopped);
	must_open(&db);
	assert_int_equal(read_state(db, &copy), SQLITE_OK);
	assert_true(state_eq(&src, &copy));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	fx_free(x);
}

/* The backup files' rules: slots checked at registration, an absent slot, journals and
 * WALs named after a backup, the region's end, sizes from the header, whole-block
 * discards on truncation, and clearing a slot a damaged copy would block. */
static void t_backup_file_rules(void **state)
{
	(void)state;
	struct fx *x = fx_new(&GB4K, 8u << 20);
	uint32_t bs = x->g.bs;
	store_vfs_unregister();
	struct store_vfs_config c = x->vcfg;
	c.backup[0].ext[0].lba = c.db.ext[0].lba + 1;
	assert_int_equal(store_vfs_register(&c), -E_INVAL); /* over the DB */
	c = x->vcfg;
	c.backup[1].ext[0].lba = c.backup[0].ext[0].lba + 3;
	assert_int_equal(store_vfs_register(&c), -E_INVAL); /* over the other slot */
	c = x->vcfg;
	c.backup[1].ext[0].blocks = store_dev_blocks(&x->dev);
	assert_int_equal(store_vfs_register(&c), -E_INVAL); /* past the device */
	c = x->vcfg;
	c.backup[1].n = 0;                                   /* slot B absent */
	assert_int_equal(store_vfs_register(&c), 0);

	struct store_vfs_stats a, b;
	store_vfs_stats(&a);
	sqlite3 *db, *dst;
	assert_int_equal(raw_open(STORE_VFS_BACKUP_B, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), SQLITE_CANTOPEN);
	db_drop(dst);
	assert_int_equal(store_vfs_backup_clear(1), -E_INVAL);
	assert_int_equal(store_vfs_backup_clear(2), -E_INVAL);
	store_vfs_stats(&b);
	assert_int_equal(b.refused[STORE_VFS_REFUSED_BACKUP_ABSENT] - a.refused[STORE_VFS_REFUSED_BACKUP_ABSENT], 1);

	/* The block layer's rules, called directly: size from the header, the region's end,
	 * discards of whole blocks only, no journal or WAL after a backup's name. */
	uint8_t junk[8192];
	memset(junk, 0xAB, sizeof junk);
	fake_blk_set(x->fb, backup_off(x, 0), junk, sizeof junk);
	struct vf v, o;
	assert_int_equal(vf_open(&v, STORE_VFS_BACKUP_A, SQLITE_OPEN_MAIN_DB), SQLITE_OK);
	const sqlite3_io_methods *m = v.f->pMethods;
	assert_int_equal(vf_size(&v), 0); /* no "SQLite format 3": empty */
	uint8_t w[10000];
	for (size_t i = 0; i < sizeof w; i++)
		w[i] = (uint8_t)(i * 13 + 7);
	assert_int_equal(m->xWrite(v.f, w, sizeof w, 0), SQLITE_OK);
	assert_int_equal(vf_size(&v), 10000);
	sqlite3_int64 region = (sqlite3_int64)x->g.backup_bytes;
	assert_int_equal(m->xWrite(v.f, w, 4096, region - 100), SQLITE_FULL);
	assert_int_equal(m->xTruncate(v.f, region + 1), SQLITE_FULL);
	store_vfs_stats(&a);
	uint64_t dev_discarded = x->dev.st.blocks[STORE_DEV_DISCARD];
	assert_int_equal(m->xTruncate(v.f, 5000), SQLITE_OK); /* block 1 keeps bytes 4096..4999 */
	store_vfs_stats(&b);
	assert_int_equal(vf_size(&v), 5000);
	assert_int_equal(b.discarded_blocks - a.discarded_blocks, 1);
	assert_int_equal(b.file[STORE_VFS_FILE_BACKUP].discarded_blocks - a.file[STORE_VFS_FILE_BACKUP].discarded_blocks,
			 1);
	assert_int_equal(x->dev.st.blocks[STORE_DEV_DISCARD] - dev_discarded, 1);
	assert_memory_equal(disk_at(x, backup_off(x, 0) + bs), w + bs, 5000 - bs);
	for (uint32_t i = 0; i < bs; i++) /* a discard reads as zeros on this device */
		assert_int_equal(disk_at(x, backup_off(x, 0) + 2u * bs)[i], 0);
	uint8_t r[100];
	assert_int_equal(m->xRead(v.f, r, sizeof r, 4990), SQLITE_IOERR_SHORT_READ);
	assert_memory_equal(r, w + 4990, 10);
	assert_int_equal(m->xTruncate(v.f, 5000), SQLITE_OK); /* the same size: nothing more */
	store_vfs_stats(&a);
	assert_int_equal(a.discarded_blocks, b.discarded_blocks);
	assert_int_equal(vf_open(&o, STORE_VFS_BACKUP_A "-journal", SQLITE_OPEN_MAIN_JOURNAL), SQLITE_CANTOPEN);
	assert_int_equal(vf_open(&o, STORE_VFS_BACKUP_A "-wal", SQLITE_OPEN_WAL), SQLITE_CANTOPEN);
	assert_int_equal(vf_open(&o, STORE_VFS_BACKUP_A, SQLITE_OPEN_MAIN_DB), SQLITE_CANTOPEN); /* twice */
	assert_int_equal(store_vfs_backup_clear(0), -E_EXIST); /* open */
	store_vfs_stats(&b);
	assert_int_equal(b.refused[STORE_VFS_REFUSED_BACKUP_LOG] - a.refused[STORE_VFS_REFUSED_BACKUP_LOG], 2);
	assert_int_equal(b.refused[STORE_VFS_REFUSED_TWICE] - a.refused[STORE_VFS_REFUSED_TWICE], 1);
	vf_close(&v);

	/* Through SQLite: a backup file written with a journal (the default mode) or switched
	 * to WAL is refused its log, loudly; the file itself stays usable. */
	assert_int_equal(store_vfs_backup_clear(0), 0);
	assert_int_equal(raw_open(STORE_VFS_BACKUP_A, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), SQLITE_OK);
	store_vfs_stats(&a);
	assert_int_equal(exec(dst, "CREATE TABLE j(a)") & 0xff, SQLITE_CANTOPEN);
	int rc = exec(dst, "PRAGMA journal_mode=OFF; PRAGMA journal_mode=WAL; CREATE TABLE j(a)");
	assert_int_equal(rc & 0xff, SQLITE_CANTOPEN); /* SQLite's pager is in WAL mode: its WAL refused */
	store_vfs_stats(&b);
	assert_int_equal(b.refused[STORE_VFS_REFUSED_BACKUP_LOG] - a.refused[STORE_VFS_REFUSED_BACKUP_LOG], 2);
	assert_int_equal(b.refused_opens - a.refused_opens, 2);
	db_drop(dst);
	/* Opened again as it must be (no journal), the file is usable: it never gets a log. */
	char mode[16];
	assert_int_equal(bk_open(STORE_VFS_BACKUP_A, &dst), SQLITE_OK);
	must_exec(dst, "CREATE TABLE j(a); INSERT INTO j VALUES(1)");
	assert_int_equal(q_text(dst, "PRAGMA journal_mode", mode, sizeof mode), SQLITE_OK);
	assert_string_equal(mode, "off");
	assert_true(check_ok(dst, "PRAGMA integrity_check"));
	db_drop(dst);

	/* A copy larger than its slot: SQLITE_FULL, counted. */
	must_open_ck(&db);
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 200, 300), SQLITE_OK);
	store_vfs_unregister(); /* refused: files are open */
	assert_non_null(sqlite3_vfs_find(STORE_VFS_RAW_NAME));
	assert_int_equal(store_vfs_backup_clear(0), 0);
	c.backup[0].ext[0].blocks = 16384 / bs; /* 4 pages */
	db_close(db);
	store_vfs_unregister();
	assert_int_equal(store_vfs_register(&c), 0);
	must_open(&db);
	assert_int_equal(bk_copy(db, STORE_VFS_BACKUP_A, 5), SQLITE_FULL);
	store_vfs_stats(&b); /* counted since this registration */
	assert_true(b.full > 0);
	db_close(db);
	store_vfs_unregister();
	c.backup[0].ext[0].blocks = x->vcfg.backup[0].ext[0].blocks;
	assert_int_equal(store_vfs_register(&c), 0);

	/* A damaged copy in the slot blocks the next one (SQLite reads the pages it replaces);
	 * clearing the slot first lets it through. */
	must_open(&db);
	assert_int_equal(bk_copy(db, STORE_VFS_BACKUP_A, -1), SQLITE_OK);
	disk_flip(x, backup_off(x, 0) + 3u * 4096u + 1000u, 0x20);
	assert_int_equal(bk_copy(db, STORE_VFS_BACKUP_A, -1), SQLITE_IOERR_DATA);
	assert_int_equal(store_vfs_backup_clear(0), 0);
	assert_int_equal(raw_open(STORE_VFS_BACKUP_A, &dst, SQLITE_OPEN_READWRITE), SQLITE_OK);
	assert_int_equal(q_int_ok(dst, "SELECT count(*) FROM sqlite_schema"), 0); /* empty */
	db_close(dst);
	assert_int_equal(bk_copy(db, STORE_VFS_BACKUP_A, -1), SQLITE_OK);
	struct state s0, s1;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	db_close(db);
	assert_int_equal(raw_open(STORE_VFS_BACKUP_A, &dst, SQLITE_OPEN_READONLY), SQLITE_OK);
	assert_int_equal(read_state(dst, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(dst, "PRAGMA integrity_check"));
	db_close(dst);
	assert_int_equal(store_vfs_check(), 0);
	fx_free(x);
}

/* The backup sequence of the power-cut sweep: the slot cleared, a copy in steps of 6
 * pages, two commits to the source between steps. *n_ok: the commits that returned OK. */
static int backup_sequence(sqlite3 *db, int *n_ok)
{
	sqlite3 *dst = NULL;
	sqlite3_backup *bk = NULL;
	*n_ok = 0;
	int rc = store_vfs_backup_clear(0) == 0 ? bk_open(STORE_VFS_BACKUP_A, &dst) : SQLITE_IOERR;
	if (rc == SQLITE_OK && !(bk = sqlite3_backup_init(dst, "main", db, "main")))
		rc = sqlite3_errcode(dst);
	held_bk = bk;
	for (int i = 0; rc == SQLITE_OK; i++) {
		rc = sqlite3_backup_step(bk, 6);
		if (rc != SQLITE_OK)
			break;
		if (i < 2) {
			char sql[96];
			snprintf(sql, sizeof sql, "INSERT INTO t VALUES(%d, 'during the backup')", 5000 + i);
			rc = exec(db, sql);
			*n_ok += rc == SQLITE_OK;
		}
	}
	held_bk = NULL;
	if (bk)
		(void)sqlite3_backup_finish(bk);
	db_drop(dst);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The power dies at every request of a backup (and of the commits made to the source
 * meanwhile): the database always reopens intact, in the state of its last commit that
 * returned (or the one in flight). The backup may be garbage: nobody named it. */
static void t_power_cut_during_backup(void **state)
{
	(void)state;
	struct fx *x = fx_new(&GB4K, 8u << 20);
	sqlite3 *db;
	must_open_ck(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 120, 300), SQLITE_OK);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(insert_rows(db, 120, 160, 300), SQLITE_OK);
	struct fake_blk *base = disk_copy(x->fb);
	db_close(db);
	/* The states after 0, 1 and 2 of the sequence's commits. */
	struct state s[3];
	fx_swap(x, disk_copy(base));
	must_open(&db);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(read_state(db, &s[i]), SQLITE_OK);
		char sql[96];
		snprintf(sql, sizeof sql, "INSERT INTO t VALUES(%d, 'during the backup')", 5000 + i);
		must_exec(db, sql);
	}
	db_close(db);
	/* Measure the sequence. */
	fx_swap(x, disk_copy(base));
	sqlite3_randomness(0, NULL);
	vfs_rng = 7;
	must_open(&db);
	assert_int_equal(read_state(db, &s[0]), SQLITE_OK);
	uint64_t r0 = fx_requests(x);
	int n_ok;
	assert_int_equal(backup_sequence(db, &n_ok), SQLITE_OK);
	assert_int_equal(n_ok, 2);
	uint64_t r1 = fx_requests(x);
	db_close(db);
	uint32_t died = 0, seen[3] = { 0 };
	for (uint64_t i = r0; i < r1; i++) {
		fx_swap(x, disk_copy(base));
		sqlite3_randomness(0, NULL);
		vfs_rng = 7;
		must_open(&db);
		struct state got;
		assert_int_equal(read_state(db, &got), SQLITE_OK);
		assert_int_equal(fx_requests(x), r0); /* the same path as measured */
		fake_blk_die_at(x->fb, i, i * 29 + 1);
		int rc = backup_sequence(db, &n_ok);
		assert_true(rc == SQLITE_OK || fake_blk_dead(x->fb));
		died += fake_blk_dead(x->fb);
		struct fake_blk *after = fake_blk_after_power_cut(x->fb, i * 13 + 5, NULL);
		assert_non_null(after);
		db_drop(db);
		fx_swap(x, after);
		must_open(&db);
		assert_int_equal(read_state(db, &got), SQLITE_OK);
		int k = state_eq(&got, &s[n_ok]) ? n_ok : n_ok < 2 && state_eq(&got, &s[n_ok + 1]) ? n_ok + 1 : -1;
		if (k < 0)
			fail_msg("death at request %llu of the backup: the database lost a commit or mixed states",
				 (unsigned long long)(i - r0));
		if (!check_ok(db, "PRAGMA integrity_check"))
			fail_msg("death at request %llu of the backup: integrity_check", (unsigned long long)(i - r0));
		seen[k]++;
		db_close(db);
	}
	print_message("[ backup   ] %llu requests, %u died; database after: %u, %u, %u (commits kept 0, 1, 2)\n",
		      (unsigned long long)(r1 - r0), died, seen[0], seen[1], seen[2]);
	assert_true(r1 - r0 >= 20);
	assert_int_equal(died, r1 - r0);
	assert_true(seen[2] > 0 && seen[0] + seen[1] > 0);
	fake_blk_free(base);
	fx_free(x);
}

/* ---- disk lifecycle: truncation hands blocks back ---- */

/* auto_vacuum=INCREMENTAL, rows deleted, incremental_vacuum: the checkpoint shrinks the
 * file and exactly the freed whole blocks are discarded; the rest is untouched. A device
 * without discard: the same, no error. */
static void vacuum_discards(const struct geom *g, bool device_discards)
{
	struct geom gg = *g;
	gg.discard = device_discards;
	struct fx *x = fx_new(&gg, 8u << 20);
	sqlite3 *db;
	int rc = db_open_with(&db, STORE_VFS_RESERVE_BYTES, "PRAGMA auto_vacuum=INCREMENTAL");
	if (rc != SQLITE_OK)
		fail_msg("open: %d", rc);
	assert_int_equal(q_int_ok(db, "PRAGMA auto_vacuum"), 2);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 600, 1000), SQLITE_OK);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	int64_t pages0 = q_int_ok(db, "PRAGMA page_count");
	must_exec(db, "DELETE FROM t WHERE k >= 100");
	assert_true(q_int_ok(db, "PRAGMA freelist_count") > 0);
	must_exec(db, "PRAGMA incremental_vacuum");
	int64_t pages1 = q_int_ok(db, "PRAGMA page_count");
	assert_int_equal(q_int_ok(db, "PRAGMA freelist_count"), 0);
	assert_true(pages1 < pages0 / 2);
	struct store_vfs_stats v0, v1;
	store_vfs_stats(&v0);
	struct store_dev_stats d0 = x->dev.st;
	struct fake_blk_counts c0, c1;
	fake_blk_counts(x->fb, &c0);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)"); /* the file shrinks in the DB region */
	store_vfs_stats(&v1);
	fake_blk_counts(x->fb, &c1);
	uint64_t freed = (uint64_t)(pages0 - pages1) * 4096u / g->bs;
	assert_int_equal(v1.errors, 0);
	if (device_discards) {
		assert_int_equal(x->dev.st.blocks[STORE_DEV_DISCARD] - d0.blocks[STORE_DEV_DISCARD], freed);
		assert_int_equal(v1.discarded_blocks - v0.discarded_blocks, freed);
		assert_int_equal(v1.file[STORE_VFS_FILE_DB].discarded_blocks - v0.file[STORE_VFS_FILE_DB].discarded_blocks,
				 freed);
		assert_true(c1.discards > c0.discards);
		/* Exactly those: zeros past the new end, the last page below it intact. */
		const uint8_t *p = disk_at(x, db_off(x) + (uint64_t)pages1 * 4096u);
		for (uint64_t i = 0; i < (uint64_t)(pages0 - pages1) * 4096u; i++)
			if (p[i])
				fail_msg("byte %llu past the new end not discarded", (unsigned long long)i);
		const uint8_t *last = p - 4096;
		bool data = false;
		for (size_t i = 0; i < 4096; i++)
			data |= last[i] != 0;
		assert_true(data);
	} else {
		assert_int_equal(c1.discards, c0.discards);
		assert_true(v1.discard_unsupported > v0.discard_unsupported);
		assert_int_equal(v1.discarded_blocks, 0);
	}
	struct state s0, s1;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	assert_int_equal(s0.n, 100);
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	must_open(&db);
	assert_int_equal(q_int_ok(db, "PRAGMA page_count"), pages1);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	/* And it grows again over the discarded blocks. */
	assert_int_equal(insert_rows(db, 1000, 1300, 1000), SQLITE_OK);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	fx_free(x);
}

static void t_truncate_discards_freed_blocks(void **state)
{
	(void)state;
	vacuum_discards(&GB4K, true);
	vacuum_discards(&GB512, true);
	vacuum_discards(&GB4K, false);
}

/* ---- page checksums ---- */

/* The offset of the first of the marked rows tag[from, to) found in [off, off + len) of
 * the disk, or -1. */
static int64_t find_marked(const struct fx *x, uint64_t off, uint64_t len, char tag, int from, int to)
{
	for (int k = from; k < to; k++) {
		char m[16];
		snprintf(m, sizeof m, "%c%05d", tag, k);
		int64_t at = disk_find(x, off, len, m);
		if (at >= 0)
			return at;
	}
	return -1;
}

/* A new database with reserve bytes: cksumvfs runs on it; a bit flipped in a table page
 * on the disk fails the read of that row with SQLITE_IOERR_DATA (other pages still read),
 * and quick_check says so too. */
static void t_page_checksum_catches_a_flipped_bit(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G4K, 8u << 20);
	sqlite3 *db;
	must_open_ck(&db);
	assert_int_equal(q_int_ok(db, "PRAGMA checksum_verification"), 1);
	must_exec(db, schema);
	insert_marked(db, 'R', 0, 300);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)"); /* in the DB region now */
	db_close(db);
	assert_int_equal(disk_at(x, db_off(x))[20], STORE_VFS_RESERVE_BYTES);
	int64_t at = disk_find(x, db_off(x), x->g.db_bytes, "R00150");
	assert_true(at > 0);
	disk_flip(x, (uint64_t)at + 3, 0x04);
	must_open(&db);
	char v[400];
	assert_int_equal(q_text(db, "SELECT v FROM t WHERE k = 150", v, sizeof v), SQLITE_IOERR_DATA);
	assert_int_equal(sqlite3_extended_errcode(db), SQLITE_IOERR_DATA);
	assert_int_equal(q_text(db, "SELECT v FROM t WHERE k = 3", v, sizeof v), SQLITE_OK); /* another page */
	assert_memory_equal(v, "R00003", 6);
	/* quick_check reads every page: it reports the page SQLite could not get, and why. */
	assert_int_equal(q_text(db, "PRAGMA quick_check", v, sizeof v), SQLITE_OK);
	if (!strstr(v, "error code=8202")) /* SQLITE_IOERR_DATA */
		fail_msg("quick_check: %s", v);
	struct store_vfs_stats st;
	store_vfs_stats(&st);
	assert_true(st.file[STORE_VFS_FILE_DB].bad_pages >= 1);
	db_close(db);
	disk_flip(x, (uint64_t)at + 3, 0x04); /* repaired */
	must_open(&db);
	assert_int_equal(q_text(db, "SELECT v FROM t WHERE k = 150", v, sizeof v), SQLITE_OK);
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	/* Page 1 (the schema's root): nothing reads without it, quick_check not even starts:
	 * the error is SQLITE_IOERR_DATA itself (the caller must take it for damage). */
	disk_flip(x, db_off(x) + 2000, 0x01);
	assert_int_equal(raw_open("urmqtt.db", &db, SQLITE_OPEN_READWRITE), SQLITE_OK);
	sqlite3_extended_result_codes(db, 1);
	assert_int_equal(q_text(db, "PRAGMA quick_check(1)", v, sizeof v), SQLITE_IOERR_DATA);
	db_drop(db);
	fx_free(x);
}

/* Pages in the WAL: a flipped bit is refused when the page is read again (the cache
 * dropped), and a checkpoint stops with SQLITE_IOERR_DATA instead of copying it. After a
 * crash it is SQLite's recovery that meets it: its own frame checksums end the log there,
 * so that transaction and every later one are gone (not covered: documented). */
static void t_wal_page_checksums(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G512, 8u << 20);
	sqlite3 *db;
	must_open_ck(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	insert_marked(db, 'A', 0, 60);
	struct state s1, s3, got;
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	insert_marked(db, 'B', 100, 160);
	insert_marked(db, 'C', 200, 260); /* the block caches move past B's frames */
	assert_int_equal(read_state(db, &s3), SQLITE_OK);
	int64_t at = find_marked(x, wal_off(x), x->g.wal_bytes, 'B', 120, 140);
	assert_true(at > 0);
	int64_t at_db = disk_find(x, db_off(x), x->g.db_bytes, "B00120");
	assert_int_equal(at_db, -1); /* never checkpointed */
	disk_flip(x, (uint64_t)at + 1, 0x10);
	struct fake_blk *crashed = disk_copy(x->fb);
	sqlite3_db_release_memory(db); /* the next read goes to the WAL */
	char v[400];
	struct store_vfs_stats st;
	int n = 0;
	for (int k = 120; k < 140; k++) { /* the row on the damaged page, whichever it is */
		char sql[64];
		snprintf(sql, sizeof sql, "SELECT v FROM t WHERE k = %d", k);
		n += q_text(db, sql, v, sizeof v) == SQLITE_IOERR_DATA;
	}
	assert_true(n > 0);
	store_vfs_stats(&st);
	assert_true(st.file[STORE_VFS_FILE_WAL].bad_pages > 0);
	int nlog = -1, nckpt = -1;
	sqlite3_db_release_memory(db);
	assert_int_equal(sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_TRUNCATE, &nlog, &nckpt),
			 SQLITE_IOERR_DATA);
	assert_int_equal(disk_find(x, db_off(x), x->g.db_bytes, "B00120"), -1); /* nothing of it copied */
	db_drop(db); /* its checkpoint fails again: the WAL stays */
	disk_flip(x, (uint64_t)at + 1, 0x10); /* repaired: the log replays whole */
	must_open(&db);
	assert_int_equal(read_state(db, &got), SQLITE_OK);
	assert_true(state_eq(&got, &s3));
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	/* The machine stopped with the damaged frame: recovery ends the log before it. */
	fx_swap(x, crashed);
	must_open(&db);
	assert_int_equal(read_state(db, &got), SQLITE_OK);
	assert_true(state_eq(&got, &s1));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	fx_free(x);
}

/* cksumvfs over a WAL loses every frame after the first at recovery (SQLite checksums a
 * frame before the page's checksum goes in) and writes wrong bytes when SQLite splits a
 * padding frame at the sync point; with the block layer sealing the frames instead,
 * commits survive power cuts on every geometry, spilled and rewritten frames included. */
static void t_checksummed_commits_survive_power_cuts(void **state)
{
	(void)state;
	const struct geom *geoms[] = { &G512, &G4K, &G512P4K };
	for (size_t gi = 0; gi < ARRAY_LEN(geoms); gi++) {
		struct fx *x = fx_new(geoms[gi], 8u << 20);
		sqlite3 *db;
		must_open_ck(&db);
		must_exec(db, "PRAGMA wal_autocheckpoint=0");
		must_exec(db, schema);
		for (int t = 0; t < 12; t++) /* small commits: padding frames, split at sync points */
			assert_int_equal(insert_rows(db, t * 7, t * 7 + 7, 50 + t * 97), SQLITE_OK);
		/* A transaction larger than the cache: frames spilled, then rewritten in place
		 * (SQLite recomputes the checksums from the disk before its commit). */
		must_exec(db, "PRAGMA cache_size=8");
		must_exec(db, "BEGIN");
		assert_int_equal(insert_rows(db, 1000, 1400, 300), SQLITE_OK);
		must_exec(db, "UPDATE t SET v = v || 'again' WHERE k % 3 = 0");
		must_exec(db, "COMMIT");
		must_exec(db, "PRAGMA cache_size=-2000");
		must_exec(db, "DELETE FROM t WHERE k % 4 = 1");
		struct state s0;
		assert_int_equal(read_state(db, &s0), SQLITE_OK);
		struct store_vfs_stats st;
		store_vfs_stats(&st);
		assert_true(st.frames_sealed > 0);
		assert_int_equal(st.frames_unsealable, 0);
		struct fake_blk *cuts[12];
		for (uint64_t seed = 0; seed < ARRAY_LEN(cuts); seed++)
			cuts[seed] = fake_blk_after_power_cut(x->fb, seed + 1, NULL);
		db_drop(db); /* as after the cuts: unchecked close */
		verify_cuts(x, cuts, ARRAY_LEN(cuts), &s0, "page checksums");
		fx_free(x);
	}
}

/* A database created without reserve bytes: cksumvfs leaves it alone (no checksums, a
 * flipped bit is served), everything else works; a VACUUM after setting them adds them. */
static void t_database_without_reserve_bytes(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G4K, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	assert_int_equal(q_int_ok(db, "PRAGMA checksum_verification"), 0);
	must_exec(db, schema);
	insert_marked(db, 'N', 0, 200);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	db_close(db);
	assert_int_equal(disk_at(x, db_off(x))[20], 0);
	int64_t at = disk_find(x, db_off(x), x->g.db_bytes, "N00100");
	disk_flip(x, (uint64_t)at + 2, 0x01);
	must_open(&db);
	char v[400];
	assert_int_equal(q_text(db, "SELECT v FROM t WHERE k = 100", v, sizeof v), SQLITE_OK);
	assert_memory_equal(v, "N01100", 6); /* served as it is: unchecked */
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	struct store_vfs_stats st;
	store_vfs_stats(&st);
	assert_int_equal(st.frames_sealed, 0);
	assert_int_equal(st.file[STORE_VFS_FILE_DB].bad_pages, 0);
	/* Adding them later: the reserve bytes, a VACUUM, a checkpoint. */
	int n = STORE_VFS_RESERVE_BYTES;
	assert_int_equal(sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &n), SQLITE_OK);
	assert_int_equal(n, 0);
	must_exec(db, "VACUUM");
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	struct state s0, s1;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	db_close(db);
	assert_int_equal(disk_at(x, db_off(x))[20], STORE_VFS_RESERVE_BYTES);
	must_open(&db);
	assert_int_equal(q_int_ok(db, "PRAGMA checksum_verification"), 1);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	db_close(db);
	at = disk_find(x, db_off(x), x->g.db_bytes, "N00050");
	disk_flip(x, (uint64_t)at + 2, 0x01);
	must_open(&db);
	assert_int_equal(q_text(db, "SELECT v FROM t WHERE k = 50", v, sizeof v), SQLITE_IOERR_DATA);
	db_close(db);
	fx_free(x);
}

/* When the reserve bytes must be set: before page 1 is first written. The switch to WAL
 * writes it; setting them after it (even before the first table) changes nothing. */
static void t_reserve_bytes_before_the_wal_switch(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G4K, 8u << 20);
	sqlite3 *db;
	assert_int_equal(raw_open("urmqtt.db", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), SQLITE_OK);
	must_exec(db, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=MEMORY; PRAGMA journal_mode=WAL");
	int n = STORE_VFS_RESERVE_BYTES;
	assert_int_equal(sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &n), SQLITE_OK);
	must_exec(db, schema);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(q_int_ok(db, "PRAGMA checksum_verification"), 0);
	db_close(db);
	assert_int_equal(disk_at(x, db_off(x))[20], 0); /* too late */
	fx_swap(x, disk_new(&G4K));
	must_open_ck(&db); /* before the switch: applied */
	must_exec(db, schema);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(q_int_ok(db, "PRAGMA checksum_verification"), 1);
	assert_int_equal(q_int_ok(db, "PRAGMA page_size"), 4096);
	db_close(db);
	assert_int_equal(disk_at(x, db_off(x))[20], STORE_VFS_RESERVE_BYTES);
	fx_free(x);
}

/* A backup carries the checksums (cksumvfs runs on it: a flipped bit in the copy is
 * refused), and a bad page in the source fails the backup step: never copied. */
static void t_backup_carries_checksums(void **state)
{
	(void)state;
	struct fx *x = fx_new(&GB4K, 8u << 20);
	sqlite3 *db, *dst;
	must_open_ck(&db);
	must_exec(db, schema);
	insert_marked(db, 'K', 0, 300);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_int_equal(bk_copy(db, STORE_VFS_BACKUP_B, 10), SQLITE_OK);
	assert_int_equal(disk_at(x, backup_off(x, 1))[20], STORE_VFS_RESERVE_BYTES);
	int64_t at = disk_find(x, backup_off(x, 1), x->g.backup_bytes, "K00200");
	assert_true(at > 0);
	disk_flip(x, (uint64_t)at + 4, 0x02);
	assert_int_equal(raw_open(STORE_VFS_BACKUP_B, &dst, SQLITE_OPEN_READONLY), SQLITE_OK);
	sqlite3_extended_result_codes(dst, 1);
	assert_int_equal(q_int_ok(dst, "PRAGMA checksum_verification"), 1);
	char v[400];
	assert_int_equal(q_text(dst, "SELECT v FROM t WHERE k = 200", v, sizeof v), SQLITE_IOERR_DATA);
	assert_int_equal(q_text(dst, "SELECT v FROM t WHERE k = 2", v, sizeof v), SQLITE_OK);
	db_close(dst);
	struct store_vfs_stats st;
	store_vfs_stats(&st);
	assert_true(st.file[STORE_VFS_FILE_BACKUP].bad_pages >= 1);
	/* A bad page in the source: the step fails, the page is not in the copy. */
	assert_int_equal(store_vfs_backup_clear(1), 0);
	at = disk_find(x, db_off(x), x->g.db_bytes, "K00100");
	assert_true(at > 0);
	disk_flip(x, (uint64_t)at + 4, 0x02);
	sqlite3_db_release_memory(db);
	assert_int_equal(bk_copy(db, STORE_VFS_BACKUP_B, 10), SQLITE_IOERR_DATA);
	assert_int_equal(disk_find(x, backup_off(x, 1), x->g.backup_bytes, "K00100"), -1);
	db_close(db);
	fx_free(x);
}

/* Shared memory is never given: a WAL database opened without exclusive locking fails
 * loudly (counted), and opens again with it. */
static void t_shared_memory_refused(void **state)
{
	(void)state;
	struct fx *x = fx_new(&G512, 8u << 20);
	sqlite3 *db;
	must_open_ck(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 50, 100), SQLITE_OK);
	struct state s0, s1;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	struct fake_blk *copy = disk_copy(x->fb); /* with a live WAL */
	db_close(db);
	fx_swap(x, copy);
	assert_int_equal(raw_open("urmqtt.db", &db, SQLITE_OPEN_READWRITE), SQLITE_OK);
	must_exec(db, "PRAGMA locking_mode=NORMAL");
	int rc;
	(void)q_int(db, "SELECT count(*) FROM t", &rc);
	assert_int_equal(rc & 0xff, SQLITE_IOERR);
	struct store_vfs_stats st;
	store_vfs_stats(&st);
	assert_true(st.refused[STORE_VFS_REFUSED_SHM] > 0);
	db_drop(db);
	must_open(&db);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	db_close(db);
	fx_free(x);
}

/* After every test (a failed one included): nothing may be left for the next. */
/* ---- files of several extents (the disk grew: store/grow.h) ---- */

/* The block layer on a database of two extents: 8 blocks at 64 KiB, 16 blocks at 3 MiB;
 * requests split at the extent's end, reads back across it, SQLITE_FULL past both,
 * truncation discarding in both, an extent appended while open, store_vfs_extend's rules,
 * and a backup slot of two extents cleared whole. */
static void t_extent_file_rules(void **state)
{
	(void)state;
	struct geom g = GB512;
	g.db_bytes = 4096;
	g.db2_off = 5u << 20; /* after the backup slots (the disk: 6 MiB) */
	g.db2_bytes = 8192;
	struct fx *x = fx_new(&g, 8u << 20);
	const uint64_t e0 = db_off(x), e1 = g.db2_off;
	uint8_t junk[8192];
	memset(junk, 0xAB, sizeof junk);
	fake_blk_set(x->fb, e0, junk, 4096);
	fake_blk_set(x->fb, e1, junk, sizeof junk);
	struct vf v;
	assert_int_equal(vf_open(&v, "e.db", SQLITE_OPEN_MAIN_DB), SQLITE_OK);
	const sqlite3_io_methods *m = v.f->pMethods;
	uint8_t w[6000], r[6000];
	for (size_t i = 0; i < sizeof w; i++)
		w[i] = (uint8_t)(i * 13 + 5);
	/* Unaligned at both ends, across the end of the first extent. */
	struct store_vfs_stats st0, st1;
	store_vfs_stats(&st0);
	assert_int_equal(m->xWrite(v.f, w, 3000, 4096 - 1000), SQLITE_OK);
	store_vfs_stats(&st1);
	assert_int_equal(st1.rmw - st0.rmw, 2);
	assert_memory_equal(disk_at(x, e0 + 3096), w, 1000);
	assert_memory_equal(disk_at(x, e1), w + 1000, 2000);
	assert_int_equal(*disk_at(x, e0 + 3095), 0xAB);
	assert_int_equal(*disk_at(x, e1 + 2000), 0xAB);
	assert_int_equal(vf_size(&v), 4096 + 2000);
	/* Whole blocks across it: one device write per extent. */
	struct fake_blk_counts c0, c1;
	fake_blk_counts(x->fb, &c0);
	assert_int_equal(m->xWrite(v.f, w, 4096, 2048), SQLITE_OK);
	fake_blk_counts(x->fb, &c1);
	assert_int_equal(c1.writes - c0.writes, 2);
	assert_memory_equal(disk_at(x, e0 + 2048), w, 2048);
	assert_memory_equal(disk_at(x, e1), w + 2048, 2048);
	memset(r, 0, sizeof r);
	assert_int_equal(m->xRead(v.f, r, 4096, 2048), SQLITE_OK);
	assert_memory_equal(r, w, 4096);
	assert_int_equal(m->xRead(v.f, r, 999, 4096 - 333), SQLITE_OK); /* unaligned, across */
	assert_memory_equal(r, w + 2048 - 333, 333);
	/* The room is the sum of the extents. */
	assert_int_equal(m->xWrite(v.f, w, 4096, 12288 - 2048), SQLITE_FULL);
	assert_int_equal(m->xWrite(v.f, w, 2048, 12288 - 2048), SQLITE_OK);
	assert_int_equal(vf_size(&v), 12288);
	assert_int_equal(m->xTruncate(v.f, 12289), SQLITE_FULL);
	/* Truncation: the whole blocks past the new end, in both extents. */
	fake_blk_counts(x->fb, &c0);
	store_vfs_stats(&st0);
	assert_int_equal(m->xTruncate(v.f, 1000), SQLITE_OK);
	store_vfs_stats(&st1);
	fake_blk_counts(x->fb, &c1);
	assert_int_equal(st1.discarded_blocks - st0.discarded_blocks, 6 + 16);
	assert_int_equal(c1.discards - c0.discards, 2);
	for (uint64_t i = 1024; i < 4096; i++)
		assert_int_equal(*disk_at(x, e0 + i), 0);
	for (uint64_t i = 0; i < 8192; i++)
		assert_int_equal(*disk_at(x, e1 + i), 0);
	assert_int_not_equal(*disk_at(x, e0 + 999), 0); /* below the new end: kept */
	/* An extent appended while the file is open: the room grows, nothing moves. */
	assert_int_equal(m->xWrite(v.f, w, 4096, 12288), SQLITE_FULL);
	const uint64_t e2 = (uint64_t)(5u << 20) + 65536; /* blocks: */
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, e2 / 512, 8), 0);
	assert_int_equal(m->xWrite(v.f, w, 4096, 12288), SQLITE_OK);
	assert_memory_equal(disk_at(x, e2), w, 4096);
	assert_int_equal(m->xWrite(v.f, w, 512, 12288 + 4096), SQLITE_FULL);
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, e2 / 512 + 8, 8), 0); /* continues it */
	assert_int_equal(m->xWrite(v.f, w, 4096, 12288 + 4096), SQLITE_OK);
	assert_memory_equal(disk_at(x, e2 + 4096), w, 4096);
	assert_int_equal(m->xRead(v.f, r, 1000, 0), SQLITE_OK);
	assert_memory_equal(r, disk_at(x, e0), 1000);
	assert_int_equal(store_vfs_check(), 0);
	/* store_vfs_extend's rules. */
	uint64_t wal_lba = x->vcfg.wal_lba, end = store_dev_blocks(&x->dev);
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_WAL, 0, e2 / 512 + 64, 8), -E_INVAL); /* never grows */
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 1, e2 / 512 + 64, 8), -E_INVAL);
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_BACKUP, 2, e2 / 512 + 64, 8), -E_INVAL);
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, e2 / 512 + 64, 0), -E_INVAL);
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, wal_lba + 4, 8), -E_INVAL);  /* over the WAL */
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, e2 / 512 + 4, 8), -E_INVAL); /* over itself */
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, end - 4, 8), -E_INVAL);      /* past the device */
	/* The DB has 3 extents: 13 more fit, the 17th does not (each apart from the last). */
	for (uint64_t i = 0; i < STORE_VFS_MAX_EXTENTS - 3; i++)
		assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, e2 / 512 + 64 + 16 * i, 8), 0);
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, e2 / 512 + 64 + 16 * 13, 8), -E_RANGE);
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, e2 / 512 + 64 + 16 * 12 + 8, 8), 0); /* continues */
	assert_int_equal(store_vfs_check(), 0);
	vf_close(&v);

	/* A backup slot of two extents (slot A: its region and 16 blocks at the end of the
	 * disk): store_vfs_backup_clear discards both and zeroes the first block. */
	store_vfs_unregister();
	struct store_vfs_config c = x->vcfg;
	c.backup[0].ext[1] = (struct store_vfs_extent){ end - 16, 16 };
	c.backup[0].n = 2;
	assert_int_equal(store_vfs_register(&c), 0);
	memset(junk, 0xCD, sizeof junk);
	fake_blk_set(x->fb, backup_off(x, 0), junk, sizeof junk);
	fake_blk_set(x->fb, (end - 16) * 512, junk, sizeof junk);
	assert_int_equal(store_vfs_backup_clear(0), 0);
	for (uint64_t i = 0; i < sizeof junk; i++) {
		assert_int_equal(*disk_at(x, backup_off(x, 0) + i), 0);
		assert_int_equal(*disk_at(x, (end - 16) * 512 + i), 0);
	}
	/* and the backup file's room is both */
	struct vf b;
	assert_int_equal(vf_open(&b, STORE_VFS_BACKUP_A, SQLITE_OPEN_MAIN_DB), SQLITE_OK);
	sqlite3_int64 room = (sqlite3_int64)(g.backup_bytes + 8192);
	assert_int_equal(b.f->pMethods->xWrite(b.f, w, 4096, room - 4096), SQLITE_OK);
	assert_memory_equal(disk_at(x, (end - 8) * 512), w, 4096);
	assert_int_equal(b.f->pMethods->xWrite(b.f, w, 512, room), SQLITE_FULL);
	vf_close(&b);
	assert_int_equal(store_vfs_check(), 0);
	fx_free(x);
}

/* A database larger than its first extent: created, checkpointed across the extents,
 * reopened, cut by a power failure after commits; then an extent added while the
 * connection is open lets a checkpoint that failed with SQLITE_FULL through. */
static void t_database_across_extents(void **state)
{
	(void)state;
	struct geom g = G512;
	g.db_bytes = 32u << 10;  /* 8 pages in the first extent */
	g.db2_off = 3u << 20;    /* 256 KiB more after the WAL */
	g.db2_bytes = 256u << 10;
	struct fx *x = fx_new(&g, 8u << 20);
	sqlite3 *db;
	must_open(&db);
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	must_exec(db, schema);
	assert_int_equal(insert_rows(db, 0, 400, 300), SQLITE_OK); /* ~40 pages */
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	int64_t pages = q_int_ok(db, "PRAGMA page_count");
	assert_true(pages > 16);
	/* page 9 on: in the second extent */
	static const uint8_t zero16[16];
	assert_memory_not_equal(disk_at(x, g.db2_off), zero16, 16);
	struct state s0, s1;
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	must_open(&db);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	/* more commits, then a power cut: every commit is there */
	assert_int_equal(insert_rows(db, 400, 600, 300), SQLITE_OK);
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	db_drop(db);
	fx_power_cut(x, 7);
	must_open(&db);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_true(check_ok(db, "PRAGMA integrity_check"));

	/* Full: the checkpoint cannot copy past both extents... */
	must_exec(db, "PRAGMA wal_autocheckpoint=0");
	int rc = insert_rows(db, 600, 1700, 300);
	if (rc != SQLITE_OK)
		fail_msg("insert: %d %s", rc, sqlite3_errmsg(db));
	assert_int_equal(read_state(db, &s0), SQLITE_OK);
	assert_int_equal(exec(db, "PRAGMA wal_checkpoint(TRUNCATE)"), SQLITE_FULL);
	/* ...until a third extent arrives, the connection still open. */
	const uint64_t e2 = g.db2_off + g.db2_bytes + 65536;
	assert_int_equal(store_vfs_extend(STORE_VFS_FILE_DB, 0, e2 / 512, (512u << 10) / 512), 0);
	must_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	assert_true(q_int_ok(db, "PRAGMA page_count") * 4096 > (int64_t)(g.db_bytes + g.db2_bytes));
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	/* The next registration names all three (what the superblock now says). */
	assert_int_equal(store_vfs_open_files(), 0);
	store_vfs_unregister();
	struct store_vfs_config c = x->vcfg;
	c.db.ext[c.db.n++] = (struct store_vfs_extent){ e2 / 512, (512u << 10) / 512 };
	assert_int_equal(store_vfs_register(&c), 0);
	must_open(&db);
	assert_int_equal(read_state(db, &s1), SQLITE_OK);
	assert_true(state_eq(&s0, &s1));
	assert_true(check_ok(db, "PRAGMA integrity_check"));
	db_close(db);
	fx_free(x);
}

static int teardown(void **state)
{
	(void)state;
	if (held_bk)
		(void)sqlite3_backup_finish(held_bk);
	held_bk = NULL;
	for (size_t i = 0; i < ARRAY_LEN(held); i++)
		if (held[i])
			db_drop(held[i]);
	for (size_t i = 0; i < ARRAY_LEN(held_files); i++)
		if (held_files[i])
			vf_drop(held_files[i]);
	if (cur_fx) {
		struct fx *x = cur_fx;
		cur_fx = NULL;
		store_vfs_unregister();
		fake_blk_free(x->fb);
		free(x->io_buf);
		free(x);
	}
	store_vfs_unregister();
	int err = store_sqlite_fini();
	heap_live = 0;
	return err;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(t_init_and_fini, teardown),
		cmocka_unit_test_teardown(t_register_rules, teardown),
		cmocka_unit_test_teardown(t_db_size_from_header, teardown),
		cmocka_unit_test_teardown(t_file_rules, teardown),
		cmocka_unit_test_teardown(t_fresh_database_in_wal_mode, teardown),
		cmocka_unit_test_teardown(t_wal_replayed_at_open, teardown),
		cmocka_unit_test_teardown(t_not_a_wal_database_refused, teardown),
		cmocka_unit_test_teardown(t_read_only_device, teardown),
		cmocka_unit_test_teardown(t_attach_and_second_connection_refused, teardown),
		cmocka_unit_test_teardown(t_failing_requests_in_a_commit, teardown),
		cmocka_unit_test_teardown(t_stalled_request_times_out, teardown),
		cmocka_unit_test_teardown(t_failing_read, teardown),
		cmocka_unit_test_teardown(t_wal_region_full, teardown),
		cmocka_unit_test_teardown(t_db_region_full, teardown),
		cmocka_unit_test_teardown(t_memory_bound, teardown),
		cmocka_unit_test_teardown(t_committed_rows_survive_power_cuts, teardown),
		cmocka_unit_test_teardown(t_death_at_every_request_of_a_commit, teardown),
		cmocka_unit_test_teardown(t_death_at_every_request_of_a_checkpoint, teardown),
		cmocka_unit_test_teardown(t_sector_discipline, teardown),
		cmocka_unit_test_teardown(t_random_crash_loop, teardown),
		cmocka_unit_test_teardown(t_backup_of_a_live_database, teardown),
		cmocka_unit_test_teardown(t_backup_file_rules, teardown),
		cmocka_unit_test_teardown(t_power_cut_during_backup, teardown),
		cmocka_unit_test_teardown(t_truncate_discards_freed_blocks, teardown),
		cmocka_unit_test_teardown(t_page_checksum_catches_a_flipped_bit, teardown),
		cmocka_unit_test_teardown(t_wal_page_checksums, teardown),
		cmocka_unit_test_teardown(t_checksummed_commits_survive_power_cuts, teardown),
		cmocka_unit_test_teardown(t_database_without_reserve_bytes, teardown),
		cmocka_unit_test_teardown(t_reserve_bytes_before_the_wal_switch, teardown),
		cmocka_unit_test_teardown(t_backup_carries_checksums, teardown),
		cmocka_unit_test_teardown(t_shared_memory_refused, teardown),
		cmocka_unit_test_teardown(t_extent_file_rules, teardown),
		cmocka_unit_test_teardown(t_database_across_extents, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
