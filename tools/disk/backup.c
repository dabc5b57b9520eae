/* SPDX-License-Identifier: MIT
 *
 * urmqtt-disk backup and restore (tools/disk/disk.h): the database's A/B backup offline, with
 * the code the broker runs (store/backup.h), never a second implementation of it.
 *
 * backup: the database must pass quick_check first (read only: facts.c), so the bring-up
 * below never restores it on its own and a damaged database is never copied over the good
 * backup; then the broker's bring-up (store_boot: bringup.c), then store_backup_start and
 * store_backup_step until the copy is complete, stamped, flushed and named by the next
 * superblock generation, exactly as the storage core does online. --to FILE then reads the
 * new slot back through SQLite (its pages' checksums verified) into a new host file: the
 * export is the backup just taken, additionally, never instead of it.
 *
 * restore: the slot (the one the superblock names, or --slot) is checked read only as the
 * broker would need it (SQLite reads it alone, quick_check, our schema, a WAL-mode image);
 * then store_backup_restore copies it over the database region as the broker's boot does
 * when quick_check fails. The database as it was is kept in the other slot, except when
 * that slot holds the backup the superblock names (--slot names the older one): the newest
 * backup is never overwritten. The superblock is not changed (boot does not change it either).
 *
 * Both refuse, before any write, a disk that is not ours (the probe's words), a database that
 * was never created, and a layout without backup slots. Host code; the image opened
 * read-write.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/err.h"
#include "store/backup.h"
#include "store/boot.h"
#include "store/sqlite/vfs.h"
#include "tools/disk/facts.h"
#include "urmqtt_config.h"

#define RESTORE_BUF_BYTES (1u << 20) /* the raw copy's bounce: whole blocks of any size */

static char slot_name(uint32_t slot)
{
	return slot == 1u ? 'A' : 'B';
}

/* What both commands refuse before writing anything: DISK_EXIT_BAD (said) or 0. */
static int usable(struct disk_image *im, const char *cmd)
{
	if (im->info.kind != STORE_DISK_OURS)
		return disk_image_not_ours(im);
	const struct store_super *sb = &im->info.sb;
	if (sb->db_state != STORE_DB_READY) {
		fprintf(stderr,
			"urmqtt-disk: %s: %s refused: the database was never created (superblock db_state FRESH: the "
			"broker creates it at its next boot); nothing written\n",
			im->path, cmd);
		return DISK_EXIT_BAD;
	}
	uint64_t lba, blocks;
	if (!disk_image_region(im, STORE_REGION_BACKUP_A, &lba, &blocks) ||
	    !disk_image_region(im, STORE_REGION_BACKUP_B, &lba, &blocks)) {
		fprintf(stderr, "urmqtt-disk: %s: %s refused: this layout has no backup slots; nothing written\n", im->path,
			cmd);
		return DISK_EXIT_BAD;
	}
	return 0;
}

/* The database as it is now, read only: a phrase for the output; *ok when it passes
 * quick_check and the broker would open it. 0 or the device's error. */
static int db_state(struct disk_image *im, struct disk_db_facts *f, bool *ok, char *out, size_t cap)
{
	int err = disk_db_facts(im, false, 10, false, f);
	if (err)
		return err;
	*ok = false;
	if (f->open_err)
		snprintf(out, cap, "SQLite cannot read it: %s", f->why);
	else if (!f->check_ok || f->check_err || f->n_msgs)
		snprintf(out, cap, "it FAILS quick_check: %s", f->n_msgs ? f->msgs[0] : f->why);
	else if (f->refusal[0])
		snprintf(out, cap, "the broker would refuse it: %s", f->refusal);
	else
		*ok = true;
	if (*ok) {
		char rows[256] = "unreadable";
		if (f->rows_ok)
			disk_rows_text(&f->rows, rows, sizeof rows);
		snprintf(out, cap, "%lld pages, quick_check ok; rows: %s", (long long)f->pages, rows);
	}
	return 0;
}

static void no_msg(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

/* --to FILE: the slot just written, read back alone through SQLite, checked, exported. */
static int export_slot(struct disk_image *im, uint32_t slot, const char *path)
{
	struct disk_db x;
	memset(&x, 0, sizeof x);
	int err = disk_db_attach(&x, slot == 1u ? STORE_VFS_BACKUP_A : STORE_VFS_BACKUP_B);
	bool ok = false;
	if (!err)
		err = disk_db_check(&x, false, 1, &ok, no_msg, NULL);
	if (!err && !ok) {
		snprintf(x.why, sizeof x.why, "the copy does not pass quick_check");
		err = -E_CORRUPT;
	}
	int64_t page_size = 0;
	uint64_t bytes = 0;
	if (!err)
		err = disk_db_int(&x, "PRAGMA page_size", &page_size);
	if (!err)
		err = disk_db_export(&x, path, &bytes);
	disk_db_close(&x);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: backup: slot %c was written and named, but --to %s failed (%s): %s\n",
			im->path, slot_name(slot), path, err_name(err), x.why);
		return DISK_EXIT_BAD;
	}
	printf("backup: wrote slot %c to %s: %" PRIu64 " bytes (%" PRIu64 " pages of %lld bytes), quick_check ok; "
	       "SQLite's rollback-journal format with 8 reserved bytes per page (page checksums): any sqlite3 opens "
	       "it\n",
	       slot_name(slot), path, bytes, page_size > 0 ? bytes / (uint64_t)page_size : 0, (long long)page_size);
	return 0;
}

/* The online backup's loop, run to its end. */
static int run_backup(struct disk_image *im, struct disk_up *up, const char *to)
{
	struct store_super *sb = &up->out->sb;
	uint32_t prev = sb->backup_slot;
	uint64_t prev_gen = sb->backup_generation;
	struct store_backup bk;
	memset(&bk, 0, sizeof bk);
	int err = store_backup_start(&bk, up->db, sb);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: backup: not started (%s): %s\n", im->path, err_name(err), bk.why);
		return DISK_EXIT_BAD;
	}
	uint64_t t0 = disk_mono_ns(NULL);
	int64_t wall = 0;
	do {
		wall = disk_wall_ms(NULL);
		err = store_backup_step(&bk, CONF_STORAGE_BACKUP_STEP_PAGES, &im->dev, sb, im->scratch, STORE_LAYOUT_SCRATCH,
					disk_mono_ns(NULL) / 1000u, wall);
	} while (err == -E_AGAIN);
	store_backup_abort(&bk); /* idle already: nothing to give up, but said for every path */
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: backup into slot %c FAILED (%s): %s; the previous backup stays in charge\n",
			im->path, slot_name(bk.slot), err_name(err), bk.why);
		return DISK_EXIT_BAD;
	}
	char when[80] = "taken ";
	disk_iso_time(bk.st.last_ms, when + 6, sizeof when - 6); /* the stamp it carries (meta backup_ms) */
	printf("backup: slot %c now holds the database: %" PRIu64 " pages in %" PRIu64 " step%s of up to %u (%" PRIu64
	       " ms), %s; superblock generation %" PRIu64 " names it (backup generation %" PRIu64 ")\n",
	       slot_name(bk.slot), bk.st.last_pages, bk.st.steps, bk.st.steps == 1 ? "" : "s",
	       (unsigned)CONF_STORAGE_BACKUP_STEP_PAGES, (disk_mono_ns(NULL) - t0) / 1000000u, when, sb->generation,
	       sb->backup_generation);
	if (prev)
		printf("backup: slot %c keeps the previous backup (backup generation %" PRIu64
		       ") until the next backup overwrites it\n",
		       slot_name(prev), prev_gen);
	else
		printf("backup: the superblock named no backup before: slot %c is the only one\n", slot_name(bk.slot));
	return to ? export_slot(im, bk.slot, to) : 0;
}

int disk_cmd_backup(const struct disk_opts *o)
{
	struct stat st;
	if (o->to && lstat(o->to, &st) == 0) {
		fprintf(stderr, "urmqtt-disk: %s: exists: backup --to writes a new file, never over one; nothing done\n",
			o->to);
		return DISK_EXIT_BAD;
	}
	struct disk_image im;
	struct disk_db_facts *f = calloc(1, sizeof *f);
	int rc = disk_image_open(&im, o->image, true);
	if (!rc && !f) {
		fprintf(stderr, "urmqtt-disk: %s: out of memory\n", o->image);
		rc = DISK_EXIT_BAD;
	}
	if (!rc)
		rc = usable(&im, "backup");
	bool ok = false;
	char state[512];
	if (!rc) {
		int err = db_state(&im, f, &ok, state, sizeof state);
		if (err) {
			fprintf(stderr, "urmqtt-disk: %s: reading the database failed (%s)\n", o->image, err_name(err));
			rc = DISK_EXIT_BAD;
		} else if (!ok) {
			fprintf(stderr,
				"urmqtt-disk: %s: backup refused: the database is not fit to be copied (%s); the backups stay "
				"as they are (urmqtt-disk restore brings the named one back); nothing written\n",
				o->image, state);
			rc = DISK_EXIT_BAD;
		}
	}
	free(f);
	if (rc) {
		disk_image_close(&im);
		return rc;
	}
	printf("backup: %s: the database: %s\n", o->image, state);
	struct disk_up up;
	rc = disk_up_boot(&up, &im, NULL);
	if (rc) {
		if (up.out)
			fprintf(stderr, "urmqtt-disk: %s: backup: the broker's bring-up failed: %s\n", o->image, up.out->what);
	} else if (up.out->restored_slot) { /* it passed quick_check a moment ago: not expected */
		fprintf(stderr, "urmqtt-disk: %s: backup: the bring-up found the database damaged and restored it: %s; no "
				"backup taken\n",
			o->image, up.out->what);
		rc = DISK_EXIT_BAD;
	} else {
		printf("backup: bring-up: %s\n", up.out->what);
		if (up.out->grow.outcome != STORE_GROW_NONE && up.out->grow.what[0])
			printf("backup: bring-up: %s\n", up.out->grow.what);
		rc = run_backup(&im, &up, o->to);
	}
	int rc2 = disk_up_close(&up, &im);
	disk_image_close(&im);
	return rc ? rc : rc2;
}

/* rs: sb without any extent of kind k (the restore then keeps nothing there). */
static void drop_kind(struct store_super *rs, enum store_region_kind k)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < rs->n_regions && i < STORE_MAX_REGIONS; i++)
		if (rs->regions[i].kind != (uint32_t)k)
			rs->regions[n++] = rs->regions[i];
	rs->n_regions = n;
}

int disk_cmd_restore(const struct disk_opts *o)
{
	struct disk_image im;
	struct disk_db_facts *f = calloc(1, sizeof *f);
	struct disk_backup_facts *bf = calloc(1, sizeof *bf);
	uint8_t *buf = disk_alloc(RESTORE_BUF_BYTES);
	int rc = disk_image_open(&im, o->image, true);
	if (!rc && (!f || !bf || !buf)) {
		fprintf(stderr, "urmqtt-disk: %s: out of memory\n", o->image);
		rc = DISK_EXIT_BAD;
	}
	if (!rc)
		rc = usable(&im, "restore");
	const struct store_super sb = im.info.sb;
	uint32_t slot = o->slot ? o->slot : sb.backup_slot;
	if (!rc && !slot) {
		fprintf(stderr,
			"urmqtt-disk: %s: restore refused: no backup: the superblock names none (backup_slot 0; "
			"urmqtt-disk backup takes one, --slot A|B names a slot); nothing written\n",
			o->image);
		rc = DISK_EXIT_BAD;
	}
	int err = rc ? 0 : disk_backup_facts(&im, slot, false, bf);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: reading backup slot %c failed (%s)\n", o->image, slot_name(slot),
			err_name(err));
		rc = DISK_EXIT_BAD;
	}
	char gen[96], when[80];
	if (!rc) {
		if (bf->named)
			snprintf(gen, sizeof gen, "backup generation %" PRIu64, bf->generation);
		else
			snprintf(gen, sizeof gen, "not named by the superblock: an older backup, or a database a restore kept");
		disk_backup_when(bf->backup_ms, when, sizeof when);
		if (bf->unusable[0]) {
			fprintf(stderr, "urmqtt-disk: %s: restore refused: backup slot %c (%s) cannot be restored: %s; nothing "
					"written\n",
				o->image, slot_name(slot), gen, bf->unusable);
			rc = DISK_EXIT_BAD;
		}
	}
	bool ok = false;
	char before[512];
	if (!rc && (err = db_state(&im, f, &ok, before, sizeof before)) != 0) {
		fprintf(stderr, "urmqtt-disk: %s: reading the database failed (%s)\n", o->image, err_name(err));
		rc = DISK_EXIT_BAD;
	}
	if (rc)
		goto out;
	char rows[256] = "unreadable";
	if (bf->rows_ok)
		disk_rows_text(&bf->rows, rows, sizeof rows);
	printf("restore: %s: backup slot %c (%s): %lld pages of %lld bytes, %s, quick_check ok; rows: %s\n", o->image,
	       slot_name(slot), gen, (long long)bf->pages, (long long)bf->page_size, when, rows);
	printf("restore: the database before: %s\n", before);

	/* The restore of boot, for this slot. The other slot keeps the database as it was,
	 * unless it holds the backup the superblock names. */
	struct store_super rs = sb;
	rs.backup_slot = slot;
	uint32_t other = 3u - slot;
	if (sb.backup_slot == other)
		drop_kind(&rs, other == 1u ? STORE_REGION_BACKUP_A : STORE_REGION_BACKUP_B);
	uint64_t pages = 0;
	bool kept = false;
	err = store_backup_restore(&im.dev, &rs, buf, RESTORE_BUF_BYTES, &pages, &kept);
	if (err) {
		fprintf(stderr,
			"urmqtt-disk: %s: restore FAILED (%s): the database region may hold part of the backup; the same "
			"command again finishes it (the restore is idempotent)\n",
			o->image, err_name(err));
		rc = DISK_EXIT_BAD;
		goto out;
	}
	printf("restore: RESTORED from backup slot %c (%s, %s, %" PRIu64 " pages); %s\n", slot_name(slot), gen, when,
	       pages,
	       kept ? (other == 1u ? "the database as it was is kept in slot A"
				   : "the database as it was is kept in slot B")
		    : sb.backup_slot == other ? "the database as it was is not kept: the other slot holds the named backup"
					      : "the database as it was is not kept");
	rc = disk_image_probe(&im);
	if (!rc && (err = db_state(&im, f, &ok, before, sizeof before)) != 0) {
		fprintf(stderr, "urmqtt-disk: %s: reading the database back failed (%s)\n", o->image, err_name(err));
		rc = DISK_EXIT_BAD;
	}
	if (!rc) {
		printf("restore: the database now: %s\n", before);
		if (!ok)
			rc = DISK_EXIT_BAD;
	}
out:
	free(f);
	free(bf);
	free(buf);
	disk_image_close(&im);
	return rc;
}
