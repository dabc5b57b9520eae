/* SPDX-License-Identifier: MIT
 *
 * The database's A/B backup (store/). Online: the storage core copies the live database into
 * the backup slot the superblock does not name, with SQLite's online backup API, a few pages
 * per step between its other work (the copy follows writes made meanwhile: the source is the
 * same connection). When the copy is complete it stamps it (meta "backup_ms" in the copy),
 * flushes the device, and commits the next superblock generation naming that slot
 * (backup_slot, backup_generation): that commit is the backup's one point of truth. A copy cut
 * by a crash leaves the named slot untouched. At boot: when quick_check fails, the damaged
 * database is kept (copied raw into the other slot, flushed); the write-ahead log's head and
 * the database's first block are zeroed (flushed: the WAL's frames belong to the damaged copy);
 * the named slot is copied raw over the database region, every block after the first (flushed),
 * its first block last (flushed); the database is opened again (store/boot.c). A power cut
 * anywhere in that order leaves a disk whose next boot restores again (store/backup.c).
 * Storage core only; caller memory; SQLite through store/db.h's connection.
 */
#ifndef STORE_BACKUP_H
#define STORE_BACKUP_H

#include "lib/compiler.h"
#include "store/db.h"
#include "store/dev.h"
#include "store/layout.h"

struct sqlite3;
struct sqlite3_backup;

enum store_backup_state { STORE_BACKUP_IDLE, STORE_BACKUP_RUNNING };

struct store_backup_stats {
	uint64_t started, completed, failed;
	uint64_t steps, pages;           /* over every backup */
	uint64_t last_us, last_pages;    /* the last completed one: duration, pages */
	uint64_t longest_step_us;        /* the longest single step (the storage core's stall) */
	int64_t last_ms;                 /* wall clock of the last completed one (0 unknown) */
};

struct store_backup {
	enum store_backup_state state;
	struct sqlite3 *dst;
	struct sqlite3_backup *bk;
	uint32_t slot;                   /* 1 (A) or 2 (B): the one being written */
	uint64_t t0_us;
	struct store_backup_stats st;
	char why[128];
};

/* The slot a new backup goes to: the one the superblock does not name (A when none). */
uint32_t store_backup_next_slot(const struct store_super *sb);
/* Start a backup of db into the next slot (its file: store/sqlite/vfs.h). 0, -E_NOSYS (the
 * layout has no backup regions), or SQLite's failure (why). */
MUST_CHECK int store_backup_start(struct store_backup *b, struct store_db *db, const struct store_super *sb);
/* Copy up to `pages` pages; time it with now_us. -E_AGAIN while pages remain; 0 when the copy
 * is complete, stamped (wall_ms), flushed and named in a new superblock generation (sb is
 * updated); another error when it failed (state IDLE again; the named slot untouched). */
MUST_CHECK int store_backup_step(struct store_backup *b, uint32_t pages, struct store_dev *dev, struct store_super *sb,
				 uint8_t *scratch, size_t scratch_len, uint64_t now_us, int64_t wall_ms);
/* Give up a running backup (the slot stays unnamed). */
void store_backup_abort(struct store_backup *b);

/* Boot: copy the backup slot sb names over the database region (the damaged database first
 * raw into the other slot when there is room: kept for inspection), zero the WAL region's
 * head, flush. buf: a bounce of buf_len bytes (a multiple of the block size). 0, -E_NOENT (no
 * backup named, or its region does not hold a database), or the device's error. *pages: the
 * backup's size in pages. */
MUST_CHECK int store_backup_restore(struct store_dev *dev, const struct store_super *sb, uint8_t *buf, size_t buf_len,
				    uint64_t *pages /* out */, bool *kept_damaged /* out */);

#endif
