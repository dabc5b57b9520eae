/* SPDX-License-Identifier: MIT
 *
 * store/backup.h. Design note:
 *   IDLE -start (a connection on the next slot's file, journal off, exclusive; backup_init)->
 *   RUNNING -step x n-> DONE inside step: stamp, close, flush, superblock commit -> IDLE
 *   RUNNING -step fails / abort-> IDLE (the slot is not named)
 * Invariants: dst and bk are set exactly while RUNNING; the superblock names a slot only
 * after that slot's copy was flushed (the commit comes last, and store_super_commit flushes
 * its own write). The raw restore reads and writes whole blocks through store/dev.h only,
 * and is idempotent under power cuts: the damaged copy is kept (flushed) before the database
 * region changes; then the WAL's head and the database's first block are zeroed (flushed);
 * then the backup's blocks after the first (flushed), its first block last (flushed). A
 * boot cut anywhere finds the damaged database (restores and keeps again), no database
 * (restores again, keeps nothing: the copy kept is there) or the backup whole.
 */
#include "store/backup.h"

#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"

#define SQLITE_MAGIC "SQLite format 3"
#define SQLITE_HDR_BYTES 100u       /* a database file's header (SQLite's file format, 1.3) */
#define WAL_HEAD_BYTES (64u * 1024u) /* zeroed at a restore: the WAL header and first frames */

uint32_t store_backup_next_slot(const struct store_super *sb)
{
	return sb->backup_slot == 1u ? 2u : 1u;
}

static int fail(struct store_backup *b, int rc, const char *what)
{
	(void)fmt_snprintf(b->why, sizeof b->why, "%s: %s (%d)", what, b->dst ? sqlite3_errmsg(b->dst) : sqlite3_errstr(rc),
			   rc);
	return rc == SQLITE_NOMEM ? -E_NOMEM : rc == SQLITE_FULL ? -E_RANGE : -E_IO;
}

static void close_dst(struct store_backup *b)
{
	if (b->bk)
		(void)sqlite3_backup_finish(b->bk);
	if (b->dst)
		(void)sqlite3_close(b->dst);
	b->bk = NULL;
	b->dst = NULL;
	b->state = STORE_BACKUP_IDLE;
}

int store_backup_start(struct store_backup *b, struct store_db *db, const struct store_super *sb)
{
	if (b->state != STORE_BACKUP_IDLE)
		return -E_EXIST;
	uint32_t slot = store_backup_next_slot(sb);
	const struct store_region *r = store_super_region(sb, slot == 1u ? STORE_REGION_BACKUP_A : STORE_REGION_BACKUP_B);
	if (!r || !r->blocks) {
		(void)fmt_snprintf(b->why, sizeof b->why, "the layout has no backup regions");
		return -E_NOSYS;
	}
	b->why[0] = 0;
	b->slot = slot;
	/* The slot may hold an interrupted copy: start it empty (the superblock names the
	 * other slot, or none, so nothing is lost). */
	int err = store_vfs_backup_clear(slot - 1u);
	if (err) {
		(void)fmt_snprintf(b->why, sizeof b->why, "emptying backup slot %c: %s", 'A' + (int)slot - 1, err_name(err));
		b->st.failed++;
		return err;
	}
	int rc = sqlite3_open_v2(slot == 1u ? STORE_VFS_BACKUP_A : STORE_VFS_BACKUP_B, &b->dst,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	/* A copy needs no journal: only a complete, flushed one is named. Its page cache is
	 * small (256 KiB): a backup step reads each page once. */
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(b->dst, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=OFF; "
							"PRAGMA cache_size=-256", NULL, NULL, NULL);
	if (rc == SQLITE_OK) {
		b->bk = sqlite3_backup_init(b->dst, "main", db->h, "main");
		if (!b->bk)
			rc = sqlite3_errcode(b->dst);
	}
	if (rc != SQLITE_OK) {
		err = fail(b, rc, "starting the backup");
		close_dst(b);
		b->st.failed++;
		return err;
	}
	b->state = STORE_BACKUP_RUNNING;
	b->st.started++;
	b->t0_us = 0;
	return 0;
}

/* The copy is complete: stamp it, close it, flush, name it in the superblock. */
static int complete(struct store_backup *b, struct store_dev *dev, struct store_super *sb, uint8_t *scratch,
		    size_t scratch_len, int64_t wall_ms)
{
	char sql[96];
	(void)fmt_snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(k,v) VALUES('backup_ms',%ld)", (long)wall_ms);
	(void)sqlite3_backup_finish(b->bk);
	b->bk = NULL;
	int rc = sqlite3_exec(b->dst, sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return fail(b, rc, "stamping the backup");
	rc = sqlite3_close(b->dst);
	b->dst = NULL;
	if (rc != SQLITE_OK)
		return fail(b, rc, "closing the backup");
	int err = store_dev_flush(dev);
	if (err) {
		(void)fmt_snprintf(b->why, sizeof b->why, "flushing the backup: %s", err_name(err));
		return err;
	}
	struct store_super next = *sb;
	next.backup_slot = b->slot;
	next.backup_generation = sb->generation + 1u;
	err = store_super_commit(dev, &next, scratch, scratch_len);
	if (err) {
		(void)fmt_snprintf(b->why, sizeof b->why, "naming the backup in the superblock: %s", err_name(err));
		return err;
	}
	*sb = next;
	return 0;
}

int store_backup_step(struct store_backup *b, uint32_t pages, struct store_dev *dev, struct store_super *sb,
		      uint8_t *scratch, size_t scratch_len, uint64_t now_us, int64_t wall_ms)
{
	if (b->state != STORE_BACKUP_RUNNING)
		return -E_INVAL;
	if (!b->t0_us)
		b->t0_us = now_us;
	int rc = sqlite3_backup_step(b->bk, pages ? (int)pages : 1);
	b->st.steps++;
	if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		return -E_AGAIN;
	int err = 0;
	if (rc != SQLITE_DONE) {
		err = fail(b, rc, "a backup step");
	} else {
		uint64_t copied = (uint64_t)sqlite3_backup_pagecount(b->bk);
		err = complete(b, dev, sb, scratch, scratch_len, wall_ms);
		if (!err) {
			b->st.completed++;
			b->st.last_pages = copied;
			b->st.pages += copied;
			b->st.last_ms = wall_ms;
		}
	}
	if (err)
		b->st.failed++;
	close_dst(b);
	return err;
}

void store_backup_abort(struct store_backup *b)
{
	close_dst(b);
}

/* ---- the raw restore at boot ------------------------------------------------------------------- */

/* A database's page size from its header block, 0 when the block is not one. */
static uint32_t db_page_size(const uint8_t *h)
{
	if (memcmp(h, SQLITE_MAGIC, sizeof SQLITE_MAGIC) != 0) /* the magic and its NUL */
		return 0;
	uint32_t ps = (uint32_t)h[16] << 8 | h[17];
	if (ps == 1u)
		ps = 65536u;
	return ps >= 512u && !(ps & (ps - 1u)) ? ps : 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Its size in bytes (page size x page count), 0 when the block is not a database header. */
static uint64_t db_bytes(const uint8_t *h)
{
	uint32_t pc = (uint32_t)h[28] << 24 | (uint32_t)h[29] << 16 | (uint32_t)h[30] << 8 | h[31];
	return (uint64_t)db_page_size(h) * pc;
}

/* Block i of the file made of the extents of kind k (superblock order): its absolute LBA,
 * and in *run how many blocks of that extent start there (0: past the file's extents). */
static uint64_t file_lba(const struct store_super *sb, enum store_region_kind k, uint64_t i, uint64_t *run)
{
	const struct store_region *r;
	for (uint32_t j = 0; (r = store_super_extent(sb, k, j)) != NULL; j++) {
		if (i < r->blocks) {
			*run = r->blocks - i;
			return sb->part_start + r->start + i;
		}
		i -= r->blocks;
	}
	*run = 0;
	return 0;
}

/* Copy the first n blocks of the file of kind `from` over those of `to`, through buf, in
 * pieces that never cross the end of an extent on either side. */
static int copy_blocks(struct store_dev *dev, const struct store_super *sb, enum store_region_kind from,
		       enum store_region_kind to, uint64_t n, uint8_t *buf, size_t buf_len)
{
	uint32_t bs = store_dev_block_size(dev);
	uint32_t chunk = (uint32_t)(buf_len / bs);
	for (uint64_t done = 0; done < n;) {
		uint64_t run_from, run_to;
		uint64_t lba_from = file_lba(sb, from, done, &run_from), lba_to = file_lba(sb, to, done, &run_to);
		uint32_t k = (uint32_t)MIN(MIN((uint64_t)chunk, n - done), MIN(run_from, run_to));
		if (!k)
			return -E_RANGE; /* the caller sized n to both files: cannot happen */
		int err = store_dev_read(dev, lba_from, k, buf);
		if (!err)
			err = store_dev_write(dev, lba_to, k, buf);
		if (err)
			return err;
		done += k;
	}
	return 0;
}

/* sb as seen from the second block of files a and b on: their first extents start one
 * block later (copy_blocks then copies blocks 1.. of a over those of b). */
static struct store_super past_first_block(const struct store_super *sb, enum store_region_kind a,
					   enum store_region_kind b)
{
	struct store_super v = *sb;
	bool seen_a = false, seen_b = false;
	for (uint32_t i = 0; i < v.n_regions && i < STORE_MAX_REGIONS; i++) {
		struct store_region *r = &v.regions[i];
		bool first = (r->kind == a && !seen_a) || (r->kind == b && !seen_b);
		seen_a |= r->kind == a;
		seen_b |= r->kind == b;
		if (first && r->blocks) {
			r->start++;
			r->blocks--;
		}
	}
	return v;
}

int store_backup_restore(struct store_dev *dev, const struct store_super *sb, uint8_t *buf, size_t buf_len,
			 uint64_t *pages, bool *kept_damaged)
{
	*pages = 0;
	*kept_damaged = false;
	uint32_t bs = store_dev_block_size(dev);
	if (buf_len < bs || sb->backup_slot < 1u || sb->backup_slot > 2u)
		return -E_NOENT;
	/* Every file through all of its extents (a disk that grew has several). */
	enum store_region_kind good = sb->backup_slot == 1u ? STORE_REGION_BACKUP_A : STORE_REGION_BACKUP_B;
	enum store_region_kind other = sb->backup_slot == 1u ? STORE_REGION_BACKUP_B : STORE_REGION_BACKUP_A;
	const struct store_region *db = store_super_region(sb, STORE_REGION_DB);
	const struct store_region *wal = store_super_region(sb, STORE_REGION_WAL);
	const struct store_region *good1 = store_super_region(sb, good);
	uint64_t db_blocks = 0, good_blocks = 0, other_blocks = 0;
	(void)store_super_extents(sb, STORE_REGION_DB, &db_blocks);
	(void)store_super_extents(sb, good, &good_blocks);
	(void)store_super_extents(sb, other, &other_blocks);
	if (!db || !wal || !good1 || !good_blocks)
		return -E_NOENT;
	int err = store_dev_read(dev, sb->part_start + good1->start, 1, buf);
	if (err)
		return err;
	uint64_t bytes = db_bytes(buf);
	uint32_t page = db_page_size(buf);
	if (!bytes || bytes > good_blocks * bs || bytes > db_blocks * bs)
		return -E_NOENT;
	uint64_t n = (bytes + bs - 1u) / bs;
	/* The damaged copy first, into the other slot, as much as fits (it may be garbage), and
	 * flushed before the database region changes. Not when that region starts with a zeroed
	 * header, what a restore cut short leaves (below): the copy it kept is there. */
	if (other_blocks) {
		err = store_dev_read(dev, sb->part_start + db->start, 1, buf);
		bool resumed = !err && all_zero(buf, SQLITE_HDR_BYTES);
		uint64_t damaged = err ? 0 : db_bytes(buf);
		uint64_t dn = damaged ? (damaged + bs - 1u) / bs : db_blocks;
		dn = MIN(MIN(dn, other_blocks), db_blocks);
		if (!err && !resumed)
			err = copy_blocks(dev, sb, STORE_REGION_DB, other, dn, buf, buf_len);
		if (!err && !resumed)
			err = store_dev_flush(dev);
		if (err)
			return err;
		*kept_damaged = !resumed;
	}
	/* The WAL's frames belong to the damaged copy: gone before any block of the backup
	 * lands, so none is ever replayed over it. The database's first block zeroed too: until
	 * the backup's own is written, last, a boot cut short finds no database and restores
	 * again (without keeping). */
	err = store_dev_zero(dev, sb->part_start + wal->start, MIN((uint64_t)WAL_HEAD_BYTES / bs, wal->blocks));
	if (!err)
		err = store_dev_zero(dev, sb->part_start + db->start, 1);
	if (!err)
		err = store_dev_flush(dev);
	if (!err && n > 1u) {
		struct store_super rest = past_first_block(sb, good, STORE_REGION_DB);
		err = copy_blocks(dev, &rest, good, STORE_REGION_DB, n - 1u, buf, buf_len);
	}
	if (!err)
		err = store_dev_flush(dev);
	if (!err)
		err = copy_blocks(dev, sb, good, STORE_REGION_DB, 1, buf, buf_len);
	if (!err)
		err = store_dev_flush(dev);
	if (!err)
		*pages = page ? bytes / page : 0;
	return err;
}
