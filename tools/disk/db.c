/* SPDX-License-Identifier: MIT
 *
 * tools/disk/disk.h: the database and its backups, read only. SQLite (the build's library, the
 * broker's configuration) through the broker's VFS over the image's files (store_boot_vfs_map:
 * the database's and the backups' extents, the WAL region). Connections are opened read only
 * and never checkpoint on close, so nothing is written even on a writable image (the backup
 * and restore commands read through here too); on a read-only image the VFS cannot write at
 * all. Exclusive locking (the configuration's default) keeps the WAL index in memory: a WAL the
 * broker left un-checkpointed is recovered in memory and read, never written back. A backup
 * file opens alone, without a log (store/sqlite/vfs.h). The export reads each page through the
 * VFS stack (cksumvfs verifies its checksum) and writes it to a host file with libc. Memory:
 * malloc, bounded by storage.db_heap_mb as in the broker. Host code.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/err.h"
#include "store/boot.h"
#include "store/sqlite/sqlite_int.h" /* the only way to sqlite3.h: the library's options */
#include "store/sqlite/vfs.h"
#include "tools/disk/disk.h"
#include "urmqtt_config.h"

static int db_fail(struct disk_db *db, int rc, const char *what)
{
	/* SQLITE_IOERR_DATA: the VFS's page checksum (when the database reserves its bytes) did
	 * not match: damage found below SQLite's own checks. */
	snprintf(db->why, sizeof db->why, "%s: %s (%d)%s", what, db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc), rc,
		 rc == SQLITE_IOERR_DATA ? ": a page's checksum does not match" : "");
	return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB || rc == SQLITE_IOERR_DATA ? -E_CORRUPT
													  : -E_IO;
}

/* SQLite up and the VFS registered over every file of the image's layout. */
static int vfs_up(struct disk_db *db, struct disk_image *im)
{
	static uint8_t io_buf[2u * 65536u] ALIGNED(8); /* the VFS's two one-block slots */
	memset(db, 0, sizeof *db);
	uint64_t lba, blocks;
	if (!disk_image_region(im, STORE_REGION_DB, &lba, &blocks) ||
	    !disk_image_region(im, STORE_REGION_WAL, &lba, &blocks)) {
		snprintf(db->why, sizeof db->why, "the superblock names no database or WAL region");
		return -E_NOENT;
	}
	const struct store_sqlite_mem mem = { .alloc = disk_sqlite_alloc, .free = disk_sqlite_free,
					      .limit = (size_t)CONF_STORAGE_DB_HEAP_MB << 20 };
	int err = store_sqlite_init(&mem);
	if (err) {
		snprintf(db->why, sizeof db->why, "SQLite could not be initialised (%s)", err_name(err));
		return err;
	}
	db->lib_up = true;
	/* every extent of the database and the backups (a disk that grew has several) */
	struct store_vfs_config vc = { .dev = &im->dev, .io_buf = io_buf, .io_buf_len = sizeof io_buf,
				       .random = disk_random, .wall_ms = disk_wall_ms };
	err = store_boot_vfs_map(&im->info.sb, &vc);
	if (!err)
		err = store_vfs_register(&vc);
	if (err) {
		snprintf(db->why, sizeof db->why, "the VFS refused the regions (%s)", err_name(err));
		return err;
	}
	db->vfs_up = true;
	return 0;
}

int disk_db_attach(struct disk_db *db, const char *name)
{
	int rc = sqlite3_open_v2(name, &db->h, SQLITE_OPEN_READONLY, STORE_VFS_NAME);
	if (rc != SQLITE_OK)
		return db_fail(db, rc, "open");
	(void)sqlite3_extended_result_codes(db->h, 1);
	/* Read only: SQLite would not checkpoint anyway; said twice, since the device may be
	 * writable (backup, restore). */
	(void)sqlite3_db_config(db->h, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	/* Exclusive before the first read: the WAL index lives in memory (no shared memory). */
	rc = sqlite3_exec(db->h, "PRAGMA locking_mode=EXCLUSIVE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return db_fail(db, rc, "locking_mode");
	/* Reading the schema reads page 1 and the WAL: a file that is no database fails here. */
	int64_t n;
	return disk_db_int(db, "SELECT count(*) FROM sqlite_schema", &n);
}

int disk_db_open(struct disk_db *db, struct disk_image *im)
{
	int err = vfs_up(db, im);
	return err ? err : disk_db_attach(db, "urmqtt.db");
}

int disk_db_open_backup(struct disk_db *db, struct disk_image *im, uint32_t slot)
{
	uint64_t lba, blocks;
	enum store_region_kind k = slot == 1u ? STORE_REGION_BACKUP_A : STORE_REGION_BACKUP_B;
	if ((slot != 1u && slot != 2u) || !disk_image_region(im, k, &lba, &blocks)) {
		memset(db, 0, sizeof *db);
		snprintf(db->why, sizeof db->why, "the layout has no backup slot %c", slot == 2u ? 'B' : 'A');
		return -E_NOENT;
	}
	int err = vfs_up(db, im);
	return err ? err : disk_db_attach(db, slot == 1u ? STORE_VFS_BACKUP_A : STORE_VFS_BACKUP_B);
}

void disk_db_close(struct disk_db *db)
{
	if (db->h)
		(void)sqlite3_close(db->h); /* read only: no checkpoint, nothing written */
	db->h = NULL;
	if (db->vfs_up)
		store_vfs_unregister();
	db->vfs_up = false;
	if (db->lib_up)
		(void)!store_sqlite_fini();
	db->lib_up = false;
}

int disk_db_int(struct disk_db *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *s = NULL;
	*out = -1;
	int rc = sqlite3_prepare_v2(db->h, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return db_fail(db, rc, sql);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(s, 0);
	int err = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_fail(db, rc, sql);
	(void)sqlite3_finalize(s);
	return err;
}

int disk_db_text(struct disk_db *db, const char *sql, char *out, size_t cap)
{
	sqlite3_stmt *s = NULL;
	out[0] = '\0';
	int rc = sqlite3_prepare_v2(db->h, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return db_fail(db, rc, sql);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(s, 0);
		snprintf(out, cap, "%s", t ? t : "");
	}
	int err = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_fail(db, rc, sql);
	(void)sqlite3_finalize(s);
	return err;
}

int disk_db_check(struct disk_db *db, bool full, uint32_t max_msgs, bool *ok, void (*put)(void *ctx, const char *msg),
		  void *ctx)
{
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA %s(%u)", full ? "integrity_check" : "quick_check", (unsigned)max_msgs);
	*ok = false;
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return db_fail(db, rc, sql);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *m = (const char *)sqlite3_column_text(s, 0);
		if (m && !strcmp(m, "ok"))
			*ok = true;
		else
			put(ctx, m ? m : "(no message)");
	}
	int err = rc == SQLITE_DONE ? 0 : db_fail(db, rc, sql);
	(void)sqlite3_finalize(s);
	return err;
}

int disk_db_rows(struct disk_db *db, struct disk_rows *out)
{
	static const char *const sql[] = { "SELECT count(*) FROM session", "SELECT count(*) FROM sub",
					   "SELECT count(*) FROM dlv",	   "SELECT count(*) FROM msg",
					   "SELECT count(*) FROM rx2",	   "SELECT count(*) FROM retained",
					   "SELECT count(*) FROM registry", "SELECT count(*) FROM revoked" };
	int64_t *at[] = { &out->sessions, &out->subs,	  &out->dlvs,	  &out->msgs,
			  &out->rx2,	  &out->retained, &out->registry, &out->revoked };
	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < ARRAY_LEN(sql); i++) {
		int err = disk_db_int(db, sql[i], at[i]);
		if (err)
			return err;
	}
	return 0;
}

void disk_rows_text(const struct disk_rows *r, char *out, size_t cap)
{
	snprintf(out, cap,
		 "%lld sessions, %lld subscriptions, %lld deliveries, %lld messages, %lld inbound QoS 2 ids, %lld "
		 "retained, %lld registry entries, %lld revoked serials",
		 (long long)r->sessions, (long long)r->subs, (long long)r->dlvs, (long long)r->msgs, (long long)r->rx2,
		 (long long)r->retained, (long long)r->registry, (long long)r->revoked);
}

int disk_db_export(struct disk_db *db, const char *path, uint64_t *bytes)
{
	*bytes = 0;
	int64_t page_size, pages;
	int err = disk_db_int(db, "PRAGMA page_size", &page_size);
	if (!err)
		err = disk_db_int(db, "PRAGMA page_count", &pages);
	if (err)
		return err;
	sqlite3_file *f = NULL;
	if (sqlite3_file_control(db->h, "main", SQLITE_FCNTL_FILE_POINTER, &f) != SQLITE_OK || !f || !f->pMethods ||
	    page_size < 512 || page_size > 65536 || pages < 1) {
		snprintf(db->why, sizeof db->why, "the file's pages cannot be reached (%lld of %lld bytes)",
			 (long long)pages, (long long)page_size);
		return -E_IO;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(db->why, sizeof db->why, "%s: %s", path, strerror(e));
		return e == EEXIST ? -E_EXIST : -E_IO;
	}
	uint8_t *page = malloc((size_t)page_size);
	err = page ? 0 : -E_NOMEM;
	for (int64_t i = 0; !err && i < pages; i++) {
		/* Through the stack SQLite reads with: cksumvfs verifies the page's checksum. */
		int rc = f->pMethods->xRead(f, page, (int)page_size, i * page_size);
		if (rc != SQLITE_OK) {
			err = db_fail(db, rc, "reading a page");
			break;
		}
		for (size_t done = 0; done < (size_t)page_size;) {
			ssize_t n = write(fd, page + done, (size_t)page_size - done);
			if (n <= 0) {
				snprintf(db->why, sizeof db->why, "%s: %s", path, n < 0 ? strerror(errno) : "short write");
				err = -E_IO;
				break;
			}
			done += (size_t)n;
		}
	}
	free(page);
	if (!err && fsync(fd) != 0) {
		snprintf(db->why, sizeof db->why, "%s: %s", path, strerror(errno));
		err = -E_IO;
	}
	if (close(fd) != 0 && !err) {
		snprintf(db->why, sizeof db->why, "%s: %s", path, strerror(errno));
		err = -E_IO;
	}
	if (err)
		(void)unlink(path);
	else
		*bytes = (uint64_t)pages * (uint64_t)page_size;
	return err;
}
