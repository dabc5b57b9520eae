/* SPDX-License-Identifier: MIT
 *
 * store/scrub.h: the scrubber. Owns a cursor over everything on the data disk that carries
 * its own check, the budget's token bucket, and the backup file it holds open for a pass.
 * Layer: store/, portable; pages through the SQLite files' own methods (so cksumvfs checks
 * each one), telemetry through store/dev.h and store/tlog.h's codec. It must never write,
 * never allocate, and never report what a writer leaves by design (the head of scrub.h).
 *
 * Design note. A pass, one unit of work at a time (each unit is one read, or a transition
 * that reads nothing):
 *
 *   DB      head (64 bytes of page 1: page size, reserve) -> page 1..size/page (unit_db)
 *     | file done, or no database
 *   BACKUP  the slot sb names: open (read only) -> head -> pages -> close (unit_backup)
 *     | none named, held (store_scrub_hold_backups), refused, or done
 *   TLOG    region header -> per partition: hint, slot 0..N-1 (unit_tlog)
 *     | telemetry off, region never used, or the last slot read
 *   END     passes++ (pass_end) -> DB
 *
 *   hold(true) in BACKUP with the file open: close it -> TLOG.
 *
 * Page 1 is read whole only when its head says its pages reserve the checksum's 8 bytes
 * and, for the live database, its connection does too: cksumvfs takes its verify/compute
 * flags from every whole read of page 1 (for the live connection and its WAL), so a head
 * that disagrees with the connection must never reach it through a read of ours. A head
 * whose reserve differs from the connection's is damage (page 1 reported; the other pages
 * are still read); a database without checksums is read for read errors only (counted
 * unchecked). The head read (64 bytes, below SQLite's 100-byte header) is neither verified
 * nor looked at by cksumvfs.
 *
 * The budget, in byte-nanoseconds: refill adds elapsed ns x bytes_per_s, capped at one
 * second of budget (cap); a unit starts when tokens >= min(its first read, cap) x 1e9 and is
 * then charged its bytes, so tokens may go below zero by at most one unit. From a start at
 * zero, bytes read over T seconds <= T x bytes_per_s + the largest unit.
 *
 * Invariants (store_scrub_check):
 *  1. bk_open only in BACKUP, not held, with bk_slot 1 or 2.
 *  2. tokens <= cap.
 *  3. page > 0 only in DB or BACKUP, with page_size a power of two in 512..65536 that fits buf.
 *  4. geom_ok only in TLOG, with part < partitions, idx <= segments and a segment that fits buf.
 *  5. Nothing is written: xRead, xFileSize, xOpen (read only), xClose and store_dev_read only.
 */
#include "store/scrub.h"

#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "store/db.h"
#include "store/layout.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"
#include "store/tlog_scan.h"

#define NS_PER_S INT64_C(1000000000)
/* Of page 1: below SQLite's 100-byte header, so cksumvfs neither verifies it nor sets its
 * flags from it; enough for the magic, the page size (16) and the reserve (20). */
#define HEAD_BYTES 64
#define HDR_PAGE_SIZE 16u
#define HDR_RESERVE 20u
/* SQLite's PENDING_BYTE (the default; SQLITE_UNTESTABLE leaves no way to move it): the page
 * holding it is never written, so its bytes are whatever the disk had. */
#define LOCK_BYTE UINT64_C(0x40000000)

static const char db_magic[16] = "SQLite format 3"; /* and its NUL */

STATIC_ASSERT(STORE_SCRUB_MAX_BYTES_PER_S <= (uint64_t)INT64_MAX / NS_PER_S / 2u,
	      "one second of budget in byte-nanoseconds, plus a unit's debt, fits an int64");

static uint32_t bs_of(const struct store_scrub *sc)
{
	return store_dev_block_size(sc->cfg.dev);
}

static const struct store_region *region(const struct store_scrub *sc, enum store_region_kind k)
{
	const struct store_region *r = store_super_region(sc->cfg.sb, k);
	return r && r->blocks ? r : NULL;
}

/* The absolute LBA of byte off of the file on the extents of kind k (in superblock order:
 * the order of the file's bytes, as the VFS maps them). */
static uint64_t file_lba(const struct store_scrub *sc, uint32_t k, uint64_t off)
{
	const struct store_super *sb = sc->cfg.sb;
	uint64_t blk = off / bs_of(sc);
	const struct store_region *r;
	for (uint32_t i = 0; (r = store_super_extent(sb, (enum store_region_kind)k, i)) != NULL; i++) {
		if (blk < r->blocks)
			return sb->part_start + r->start + blk;
		blk -= r->blocks;
	}
	return UINT64_MAX; /* past its extents: cannot happen for a byte the file holds */
}

static sqlite3_file *bk_file(struct store_scrub *sc)
{
	return (sqlite3_file *)(void *)sc->bk_file;
}

/* ---- findings ---------------------------------------------------------------------------- */

static void report(struct store_scrub *sc, struct store_scrub_finding *f)
{
	f->pass = sc->st.passes + 1u;
	sc->st.found[f->kind]++;
	sc->st.pass_findings++;
	if (sc->cfg.found)
		sc->cfg.found(sc->cfg.ctx, f);
}

/* A page of the file being read (page_size 0 before the head: page 1 only). */
static void page_finding(struct store_scrub *sc, enum store_scrub_kind kind, uint64_t page, int err)
{
	struct store_scrub_finding f = {
		.file = sc->phase == STORE_SCRUB_PH_DB ? STORE_SCRUB_DB
			: sc->bk_slot == 1u	       ? STORE_SCRUB_BACKUP_A
						       : STORE_SCRUB_BACKUP_B,
		.kind = kind, .page = page, .partition = STORE_SCRUB_NONE, .slot = STORE_SCRUB_NONE, .err = err,
		.lba = file_lba(sc, sc->region, (page - 1u) * sc->page_size),
	};
	report(sc, &f);
}

static void tlog_finding(struct store_scrub *sc, enum store_scrub_kind kind, uint64_t lba, uint32_t part,
			 uint32_t slot, int err)
{
	struct store_scrub_finding f = { .file = STORE_SCRUB_TELEMETRY, .kind = kind, .lba = lba,
					 .partition = part, .slot = slot, .err = err };
	report(sc, &f);
}

/* ---- the cursor --------------------------------------------------------------------------- */

static void to_phase(struct store_scrub *sc, enum store_scrub_phase ph)
{
	sc->phase = ph;
	sc->page = 0;
	sc->page_size = 0;
	sc->checked = false;
	sc->geom_ok = false;
	sc->part = 0;
	sc->idx = 0;
}

static void close_backup(struct store_scrub *sc)
{
	if (!sc->bk_open)
		return;
	sqlite3_file *f = bk_file(sc);
	if (f->pMethods)
		(void)f->pMethods->xClose(f); /* a read-only file: nothing to lose */
	sc->bk_open = false;
}

static void pass_end(struct store_scrub *sc, uint64_t now_ns)
{
	close_backup(sc);
	sc->st.passes++;
	sc->st.last_pass_ns = now_ns - sc->pass_t0_ns;
	sc->st.last_pass_findings = sc->st.pass_findings;
	sc->st.pass_findings = 0;
	sc->pass_t0_ns = now_ns;
	to_phase(sc, STORE_SCRUB_PH_DB);
}

/* ---- database files (the database, a backup) -------------------------------------------- */

/* The reserve bytes at the end of each page of the broker's database, as its connection
 * has them (no I/O); -1 unknown. */
static int db_reserve(const struct store_scrub *sc)
{
	int n = -1; /* negative: a question, nothing changes */
	if (!sc->cfg.db || !sc->cfg.db->h ||
	    sqlite3_file_control(sc->cfg.db->h, "main", SQLITE_FCNTL_RESERVE_BYTES, &n) != SQLITE_OK)
		return -1;
	return n;
}

/* The head of page 1. True when the file is done (nothing more to read in it). */
static bool file_head(struct store_scrub *sc, sqlite3_file *f, uint64_t *cost)
{
	uint8_t *h = sc->cfg.buf;
	*cost += bs_of(sc); /* one block, through the VFS's block slot */
	int rc = f->pMethods->xRead(f, h, HEAD_BYTES, 0);
	if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) {
		page_finding(sc, STORE_SCRUB_UNREADABLE, 1, -E_IO);
		return true;
	}
	/* An empty file (its header says no database) has no header either. */
	uint32_t ps = ld_be16(h + HDR_PAGE_SIZE);
	if (ps == 1u)
		ps = 65536u;
	if (rc != SQLITE_OK || memcmp(h, db_magic, sizeof db_magic) != 0 || ps < 512u || ps > 65536u ||
	    (ps & (ps - 1u))) {
		page_finding(sc, STORE_SCRUB_BAD_HEADER, 1, 0);
		return true;
	}
	if (ps > sc->cfg.buf_len) {
		sc->st.skipped++;
		return true;
	}
	sc->page_size = ps;
	/* The broker's database reserves the checksum's bytes: then so must this file's head
	 * (the backup is a copy of it), or page 1 is damaged. Page 1 of the live database is
	 * read whole only when both say so (the design note). */
	int want = db_reserve(sc);
	bool has = h[HDR_RESERVE] == STORE_VFS_RESERVE_BYTES;
	sc->checked = has && (want == STORE_VFS_RESERVE_BYTES || sc->phase == STORE_SCRUB_PH_BACKUP);
	if (want == STORE_VFS_RESERVE_BYTES && !has)
		page_finding(sc, STORE_SCRUB_BAD_HEADER, 1, 0);
	else if (!sc->checked)
		sc->st.unchecked_files++;
	sc->page = 1;
	return false;
}

/* The next page (whole: cksumvfs verifies it). True when the file is done. */
static bool file_page(struct store_scrub *sc, sqlite3_file *f, uint64_t *cost)
{
	sqlite3_int64 size = 0;
	if (f->pMethods->xFileSize(f, &size) != SQLITE_OK || size < 0)
		size = 0;
	uint64_t n = (uint64_t)size / sc->page_size; /* never a page past the file's end */
	if (sc->page == 1u && !sc->checked)
		sc->page++; /* see the design note */
	if (sc->page == LOCK_BYTE / sc->page_size + 1u)
		sc->page++;
	if (sc->page > n)
		return true;
	uint64_t off = (sc->page - 1u) * sc->page_size;
	*cost += MAX(sc->page_size, bs_of(sc));
	int rc = f->pMethods->xRead(f, sc->cfg.buf, (int)sc->page_size, (sqlite3_int64)off);
	if (rc == SQLITE_IOERR_SHORT_READ)
		return true; /* its end after all */
	sc->st.pages_checked++;
	if (rc == SQLITE_IOERR_DATA)
		page_finding(sc, STORE_SCRUB_BAD_PAGE, sc->page, 0);
	else if (rc != SQLITE_OK)
		page_finding(sc, STORE_SCRUB_UNREADABLE, sc->page, -E_IO);
	sc->page++;
	return false;
}

/* The database file of the broker's connection (cksumvfs's file around the block layer's). */
static sqlite3_file *db_file(const struct store_scrub *sc)
{
	sqlite3_file *f = NULL;
	if (!sc->cfg.db || !sc->cfg.db->h ||
	    sqlite3_file_control(sc->cfg.db->h, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f ||
	    !f->pMethods)
		return NULL;
	return f;
}

static uint64_t unit_db(struct store_scrub *sc)
{
	uint64_t cost = 0;
	sqlite3_file *f = db_file(sc);
	const struct store_region *r = region(sc, STORE_REGION_DB);
	bool done = !f || !r;
	if (!done) {
		sc->region = STORE_REGION_DB;
		done = sc->page ? file_page(sc, f, &cost) : file_head(sc, f, &cost);
	}
	if (done)
		to_phase(sc, STORE_SCRUB_PH_BACKUP);
	return cost;
}

/* Open the backup slot the superblock names, read only. False when there is none to read. */
static bool backup_open(struct store_scrub *sc, uint64_t *cost)
{
	const struct store_super *sb = sc->cfg.sb;
	uint32_t slot = sb->backup_slot;
	const struct store_region *r = slot == 1u ? region(sc, STORE_REGION_BACKUP_A)
				       : slot == 2u ? region(sc, STORE_REGION_BACKUP_B)
						    : NULL;
	if (!r)
		return false; /* no backup named yet */
	if (sc->bk_held) {
		sc->st.backups_skipped++;
		return false;
	}
	sqlite3_vfs *vfs = sqlite3_vfs_find(STORE_VFS_NAME);
	if (!vfs || vfs->szOsFile <= 0 || (size_t)vfs->szOsFile > sizeof sc->bk_file) {
		sc->st.skipped++;
		return false;
	}
	memset(sc->bk_file, 0, sizeof sc->bk_file);
	sc->bk_slot = slot;
	sc->region = slot == 1u ? STORE_REGION_BACKUP_A : STORE_REGION_BACKUP_B;
	*cost += bs_of(sc); /* the open reads the file's first block: its size is in its header */
	int out = 0;
	int rc = vfs->xOpen(vfs, slot == 1u ? STORE_VFS_BACKUP_A : STORE_VFS_BACKUP_B, bk_file(sc),
			    SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_READONLY, &out);
	if (rc == SQLITE_CANTOPEN) { /* refused: another backup file is open (a backup not held) */
		sc->st.backups_skipped++;
		return false;
	}
	if (rc != SQLITE_OK) {
		page_finding(sc, STORE_SCRUB_UNREADABLE, 1, -E_IO);
		return false;
	}
	sc->bk_open = true;
	sc->page = 0;
	return true;
}

static uint64_t unit_backup(struct store_scrub *sc)
{
	uint64_t cost = 0;
	bool done;
	if (!sc->bk_open)
		done = !backup_open(sc, &cost);
	else if (sc->page)
		done = file_page(sc, bk_file(sc), &cost);
	else
		done = file_head(sc, bk_file(sc), &cost);
	if (done) {
		close_backup(sc);
		to_phase(sc, STORE_SCRUB_PH_TLOG);
	}
	return cost;
}

/* ---- the telemetry log ------------------------------------------------------------------ */

/* The region header. True when the log is done (nothing to read in it). */
static bool tlog_geometry(struct store_scrub *sc, const struct store_region *r, uint64_t *cost)
{
	uint64_t lba = sc->cfg.sb->part_start + r->start;
	*cost += bs_of(sc);
	int err = store_tlog_scan_geometry(sc->cfg.dev, lba, r->blocks, sc->cfg.buf, &sc->g);
	if (err == -E_NOENT)
		return true; /* never used: nothing written, nothing to check */
	if (err) {
		bool decode = err == -E_CORRUPT || err == -E_NOSYS || err == -E_INVAL;
		tlog_finding(sc, decode ? STORE_SCRUB_BAD_HEADER : STORE_SCRUB_UNREADABLE, lba, STORE_SCRUB_NONE,
			     STORE_SCRUB_NONE, decode ? 0 : err);
		return true;
	}
	if (sc->g.segment_bytes > sc->cfg.buf_len || sc->g.sector % bs_of(sc)) {
		sc->st.skipped++;
		return true;
	}
	sc->tl_lba = lba;
	sc->geom_ok = true;
	sc->part = 0;
	sc->idx = 0;
	return false;
}

/* Partition part's hint: the sector after the header's and those of the partitions before. */
static void tlog_hint(struct store_scrub *sc, uint64_t *cost)
{
	uint32_t bs = bs_of(sc), sector = sc->g.sector;
	uint64_t lba = sc->tl_lba + (uint64_t)(1u + sc->part) * sector / bs;
	*cost += sector;
	int err = store_dev_read(sc->cfg.dev, lba, sector / bs, sc->cfg.buf);
	struct store_tlog_hint h;
	int rc = err ? err : store_tlog_hint_decode(sc->cfg.buf, sector, &h);
	/* All zero (missing) is what a power cut before the hints' write leaves: not damage. */
	if (err)
		tlog_finding(sc, STORE_SCRUB_UNREADABLE, lba, sc->part, STORE_SCRUB_NONE, err);
	else if ((rc && rc != -E_NOENT) || (!rc && (h.partition != sc->part || h.slot >= sc->g.segments)))
		tlog_finding(sc, STORE_SCRUB_BAD_HEADER, lba, sc->part, STORE_SCRUB_NONE, 0);
	sc->idx = 1;
}

/* Walk a whole segment (its header valid) and judge where its data ends. */
static void tlog_walk(struct store_scrub *sc, const uint8_t *seg, uint64_t lba, uint32_t slot)
{
	const struct store_tlog_geom *g = &sc->g;
	struct store_tlog_cursor c;
	if (store_tlog_cursor_init(&c, seg, g->segment_bytes, g->sector) != 0) {
		sc->st.seg_headers_skipped++; /* cannot happen: the header decoded */
		return;
	}
	struct store_tlog_rec r;
	while (store_tlog_cursor_next(&c, &r) == 1)
		;
	sc->st.records_checked += c.records;
	sc->st.segments_checked++;
	/* The data ends at a sector boundary (zeros, an earlier segment's bytes in the slot, a
	 * write-out a power cut kept in part) or with less than a record header left: the
	 * segment's end. Inside a sector, after valid data, the bytes were written whole and
	 * changed since (tools/disk/check.c judges them the same way). */
	if (c.off >= g->segment_bytes || g->segment_bytes - c.off < STORE_TLOG_REC_HDR || c.off % g->sector == 0)
		return;
	struct store_scrub_finding f = {
		.file = STORE_SCRUB_TELEMETRY, .kind = STORE_SCRUB_BAD_RECORD, .lba = lba + c.off / bs_of(sc),
		.partition = sc->part, .slot = slot, .seq = c.seq, .seg_off = (uint32_t)c.off,
		.records_before = c.records,
	};
	report(sc, &f);
}

/* Slot idx - 1 of the partition: its header, and for a valid one the rest of the segment,
 * read in the same unit (the writer cannot start another segment in the slot in between). */
static void tlog_slot(struct store_scrub *sc, uint64_t *cost)
{
	const struct store_tlog_geom *g = &sc->g;
	uint32_t bs = bs_of(sc), slot = sc->idx - 1u;
	uint64_t lba = sc->tl_lba + store_tlog_slot_off(g, sc->part, slot) / bs;
	uint8_t *seg = sc->cfg.buf;
	*cost += g->sector;
	int err = store_dev_read(sc->cfg.dev, lba, g->sector / bs, seg);
	struct store_tlog_seg h;
	int rc = err ? err : store_tlog_seg_decode(seg, g->sector, &h);
	if (err) {
		tlog_finding(sc, STORE_SCRUB_UNREADABLE, lba, sc->part, slot, err);
	} else if (rc == -E_NOENT) {
		/* never written, or discarded */
	} else if (rc || h.partition != sc->part || h.slot != slot) {
		sc->st.seg_headers_skipped++; /* as store/tlog_scan.c: not a segment of this slot */
	} else {
		uint32_t rest = g->segment_bytes - g->sector;
		*cost += rest;
		err = rest ? store_dev_read(sc->cfg.dev, lba + g->sector / bs, rest / bs, seg + g->sector) : 0;
		if (err)
			tlog_finding(sc, STORE_SCRUB_UNREADABLE, lba + g->sector / bs, sc->part, slot, err);
		else
			tlog_walk(sc, seg, lba, slot);
	}
	if (++sc->idx > g->segments) {
		sc->idx = 0;
		sc->part++;
	}
}

/* True when the pass is done. */
static uint64_t unit_tlog(struct store_scrub *sc, bool *ended)
{
	const struct store_region *r = sc->cfg.telemetry ? region(sc, STORE_REGION_TELEMETRY) : NULL;
	uint64_t cost = 0;
	if (!r) {
		*ended = true;
		return 0;
	}
	if (!sc->geom_ok) {
		*ended = tlog_geometry(sc, r, &cost);
		return cost;
	}
	if (sc->idx == 0)
		tlog_hint(sc, &cost);
	else
		tlog_slot(sc, &cost);
	*ended = sc->part >= sc->g.partitions;
	return cost;
}

/* ---- the budget and the step ------------------------------------------------------------- */

/* Bytes the next unit reads first (what the bucket must hold before it starts). */
static uint64_t unit_need(const struct store_scrub *sc)
{
	uint32_t bs = bs_of(sc);
	if (sc->phase != STORE_SCRUB_PH_TLOG)
		return sc->page ? MAX(sc->page_size, bs) : bs;
	return !sc->geom_ok ? bs : sc->g.sector;
}

static int64_t need_tokens(const struct store_scrub *sc)
{
	return (int64_t)MIN(unit_need(sc), sc->cfg.bytes_per_s) * NS_PER_S;
}

static void refill(struct store_scrub *sc, uint64_t now_ns)
{
	uint64_t rate = sc->cfg.bytes_per_s;
	int64_t cap = (int64_t)rate * NS_PER_S;
	if (!sc->started) {
		sc->started = true;
		sc->last_ns = sc->pass_t0_ns = now_ns;
		sc->tokens = 0;
		return;
	}
	if (now_ns <= sc->last_ns)
		return;
	uint64_t dt = now_ns - sc->last_ns;
	sc->last_ns = now_ns;
	/* No more time than fills the bucket: the product then stays below 2^63. */
	uint64_t room = (uint64_t)(cap - sc->tokens);
	dt = MIN(dt, room / rate + 1u);
	int64_t t = sc->tokens + (int64_t)(dt * rate);
	sc->tokens = t < cap ? t : cap;
}

uint64_t store_scrub_step(struct store_scrub *sc, uint64_t now_ns)
{
	if (!sc->cfg.bytes_per_s || sc->cfg.dev->broken)
		return 0;
	refill(sc, now_ns);
	uint64_t done = 0;
	/* Each turn reads (tokens fall) or moves the cursor on to the next phase without
	 * reading (three at most), and the pass's end stops the step: bounded. */
	while (sc->tokens >= need_tokens(sc)) {
		bool ended = false;
		uint64_t cost;
		switch (sc->phase) {
		case STORE_SCRUB_PH_DB:
			cost = unit_db(sc);
			break;
		case STORE_SCRUB_PH_BACKUP:
			cost = unit_backup(sc);
			break;
		default:
			cost = unit_tlog(sc, &ended);
			break;
		}
		sc->tokens -= (int64_t)cost * NS_PER_S;
		sc->st.bytes_read += cost;
		done += cost;
		if (ended) {
			pass_end(sc, now_ns);
			break;
		}
		if (sc->cfg.dev->broken)
			break; /* every later read would fail: the service says why */
	}
	return done;
}

uint64_t store_scrub_due_ns(const struct store_scrub *sc)
{
	uint64_t rate = sc->cfg.bytes_per_s;
	if (!rate || sc->cfg.dev->broken)
		return UINT64_MAX;
	if (!sc->started)
		return 0;
	int64_t need = need_tokens(sc);
	if (sc->tokens >= need)
		return sc->last_ns;
	return sc->last_ns + ((uint64_t)(need - sc->tokens) + rate - 1u) / rate;
}

/* ---- the rest of the interface ---------------------------------------------------------- */

int store_scrub_init(struct store_scrub *sc, const struct store_scrub_config *cfg)
{
	memset(sc, 0, sizeof *sc);
	if (!cfg || !cfg->dev || !cfg->dev->blk || !cfg->sb || !cfg->buf || ((uintptr_t)cfg->buf & 7u) ||
	    cfg->buf_len < store_dev_block_size(cfg->dev) || cfg->bytes_per_s > STORE_SCRUB_MAX_BYTES_PER_S)
		return -E_INVAL;
	sc->cfg = *cfg;
	to_phase(sc, STORE_SCRUB_PH_DB);
	return 0;
}

void store_scrub_hold_backups(struct store_scrub *sc, bool hold)
{
	sc->bk_held = hold;
	if (hold && sc->bk_open) {
		close_backup(sc);
		sc->st.backups_skipped++;
		to_phase(sc, STORE_SCRUB_PH_TLOG);
	}
}

void store_scrub_fini(struct store_scrub *sc)
{
	close_backup(sc);
	sc->cfg.bytes_per_s = 0; /* off until init */
	to_phase(sc, STORE_SCRUB_PH_DB);
}

const struct store_scrub_stats *store_scrub_stats(const struct store_scrub *sc)
{
	return &sc->st;
}

static const char *file_name(enum store_scrub_file f)
{
	switch (f) {
	case STORE_SCRUB_DB:
		return "the database";
	case STORE_SCRUB_BACKUP_A:
		return "backup A";
	case STORE_SCRUB_BACKUP_B:
		return "backup B";
	default:
		return "telemetry";
	}
}

size_t store_scrub_finding_text(const struct store_scrub_finding *f, char *out, size_t cap)
{
	const char *what = f->kind == STORE_SCRUB_UNREADABLE ? "UNREADABLE" : "CORRUPT";
	const char *err = f->kind == STORE_SCRUB_UNREADABLE ? err_name(f->err) : "";
	unsigned long lba = (unsigned long)f->lba, pass = (unsigned long)f->pass;
	int n;
	if (f->file != STORE_SCRUB_TELEMETRY) {
		const char *why = f->kind == STORE_SCRUB_BAD_PAGE	? "its checksum does not match"
				  : f->kind == STORE_SCRUB_BAD_HEADER ? "it holds no usable database header"
								      : "the read failed: ";
		n = fmt_snprintf(out, cap, "scrub: %s page %lu of %s (LBA %lu): %s%s (pass %lu)", what,
				 (unsigned long)f->page, file_name(f->file), lba, why, err, pass);
	} else if (f->kind == STORE_SCRUB_BAD_RECORD) {
		n = fmt_snprintf(out, cap,
				 "scrub: CORRUPT telemetry record: partition %u slot %u sequence %lu at segment offset %u "
				 "(LBA %lu), after %lu valid records, the rest of its segment unchecked (pass %lu)",
				 (unsigned)f->partition, (unsigned)f->slot, (unsigned long)f->seq, (unsigned)f->seg_off,
				 lba, (unsigned long)f->records_before, pass);
	} else if (f->partition == STORE_SCRUB_NONE) {
		n = fmt_snprintf(out, cap, "scrub: %s telemetry region header (LBA %lu)%s%s (pass %lu)", what, lba,
				 *err ? ": " : "", err, pass);
	} else if (f->slot == STORE_SCRUB_NONE) {
		n = fmt_snprintf(out, cap, "scrub: %s telemetry hint of partition %u (LBA %lu)%s%s (pass %lu)", what,
				 (unsigned)f->partition, lba, *err ? ": " : "", err, pass);
	} else {
		n = fmt_snprintf(out, cap, "scrub: %s telemetry partition %u slot %u (LBA %lu)%s%s (pass %lu)", what,
				 (unsigned)f->partition, (unsigned)f->slot, lba, *err ? ": " : "", err, pass);
	}
	return n > 0 ? (size_t)n : 0;
}

size_t store_scrub_line(const struct store_scrub *sc, char *out, size_t cap)
{
	if (cap)
		out[0] = 0;
	if (!sc->cfg.bytes_per_s)
		return 0;
	const struct store_scrub_stats *s = &sc->st;
	int n = fmt_snprintf(out, cap,
			     "scrub pass=%lu bytes=%lu pages=%lu records=%lu bad_pages=%lu bad_records=%lu "
			     "bad_headers=%lu unreadable=%lu last_pass_ms=%lu",
			     (unsigned long)s->passes, (unsigned long)s->bytes_read, (unsigned long)s->pages_checked,
			     (unsigned long)s->records_checked, (unsigned long)s->found[STORE_SCRUB_BAD_PAGE],
			     (unsigned long)s->found[STORE_SCRUB_BAD_RECORD], (unsigned long)s->found[STORE_SCRUB_BAD_HEADER],
			     (unsigned long)s->found[STORE_SCRUB_UNREADABLE], (unsigned long)(s->last_pass_ns / 1000000u));
	return n > 0 ? (size_t)n : 0;
}

int store_scrub_check(const struct store_scrub *sc)
{
	if (sc->bk_open && (sc->phase != STORE_SCRUB_PH_BACKUP || sc->bk_held || (sc->bk_slot != 1u && sc->bk_slot != 2u)))
		return -E_CORRUPT; /* 1 */
	if (sc->tokens > (int64_t)sc->cfg.bytes_per_s * NS_PER_S)
		return -E_CORRUPT; /* 2 */
	uint32_t ps = sc->page_size;
	if (sc->page && (sc->phase == STORE_SCRUB_PH_TLOG || ps < 512u || ps > 65536u || (ps & (ps - 1u)) ||
			 ps > sc->cfg.buf_len))
		return -E_CORRUPT; /* 3 */
	if (sc->geom_ok && (sc->phase != STORE_SCRUB_PH_TLOG || sc->part >= sc->g.partitions ||
			    sc->idx > sc->g.segments || sc->g.segment_bytes > sc->cfg.buf_len))
		return -E_CORRUPT; /* 4 */
	return 0;
}
