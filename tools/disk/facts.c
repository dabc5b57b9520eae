/* SPDX-License-Identifier: MIT
 *
 * tools/disk/facts.h: what inspect prints, verify judges and restore checks, gathered once,
 * read only, through store/'s decoders: both GPT copies (store/gpt.h, the parser the probe
 * runs; private to store/ and used here so that no second GPT parser exists), both superblock
 * slots (the probe's verdict, each valid slot decoded again for its generation), SQLite's
 * headers of the database, WAL and backup regions, and the database and each backup slot as
 * SQLite reads them (quick_check, our meta rows, the rows of every table). Host code.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "store/gpt.h"
#include "tools/disk/facts.h"

static int gpt_read(void *ctx, uint64_t lba, uint32_t n, void *buf)
{
	return store_dev_read(ctx, lba, n, buf);
}

/* One GPT copy, header at lba: decoded with its entries (OK), why not, or STORE_GPT_REJ__COUNT
 * with *io_err when it could not be read. */
static enum store_gpt_rej gpt_copy(struct disk_image *im, uint64_t lba, struct store_gpt *g, int *io_err)
{
	uint32_t bs = store_dev_block_size(&im->dev);
	uint64_t n = store_dev_blocks(&im->dev);
	enum store_gpt_rej rej = STORE_GPT_OK;
	memset(g, 0, sizeof *g);
	*io_err = 0;
	if (lba >= n)
		return STORE_GPT_REJ_DISK;
	uint8_t *buf = im->scratch;
	*io_err = store_dev_read(&im->dev, lba, 1, buf);
	if (*io_err)
		return STORE_GPT_REJ__COUNT;
	if (store_gpt_header_decode(buf, bs, bs, n, lba, g, &rej) != 0)
		return rej;
	/* The decode checked the array's place inside the disk; its size is at most 16 KiB. */
	uint64_t eblocks = ((uint64_t)g->n_entries * 128u + bs - 1u) / bs;
	if (eblocks * bs > STORE_LAYOUT_SCRATCH || g->entries_lba + eblocks > n)
		return STORE_GPT_REJ_ENTRIES_LBA;
	*io_err = store_dev_read(&im->dev, g->entries_lba, (uint32_t)eblocks, buf);
	if (*io_err)
		return STORE_GPT_REJ__COUNT;
	if (store_gpt_entries_decode(buf, (size_t)(eblocks * bs), g, &rej) != 0)
		return rej;
	return STORE_GPT_OK;
}

int disk_gpt_facts(struct disk_image *im, struct disk_gpt_facts *out)
{
	memset(out, 0, sizeof *out);
	const struct store_gpt_src src = { .read = gpt_read, .ctx = &im->dev,
					   .block_size = store_dev_block_size(&im->dev),
					   .disk_blocks = store_dev_blocks(&im->dev) };
	int err = store_gpt_load(&src, im->scratch, STORE_LAYOUT_SCRATCH, &out->g, &out->verdict);
	if (err && err != -E_CORRUPT)
		return err;
	out->loaded = err == 0;
	/* Each copy on its own (the loader stops at the first valid one). The backup is at the
	 * primary's AlternateLBA when the primary's header is sound, else at the last block. */
	struct store_gpt g;
	out->primary = gpt_copy(im, 1, &g, &err);
	if (err)
		return err;
	uint64_t alt = out->primary == STORE_GPT_OK ? g.alt_lba : store_dev_blocks(&im->dev) - 1u;
	out->backup_lba = alt;
	out->backup = gpt_copy(im, alt, &g, &err);
	return err;
}

const char *disk_gpt_rej_text(enum store_gpt_rej r)
{
	return r == STORE_GPT_OK ? "valid" : r == STORE_GPT_REJ__COUNT ? "unreadable" : store_gpt_rej_name(r);
}

int disk_slot_facts(struct disk_image *im, struct disk_slot_fact out[2])
{
	memset(out, 0, 2 * sizeof *out);
	const struct store_disk_info *info = &im->info;
	uint32_t bs = store_dev_block_size(&im->dev);
	uint32_t sbytes = MAX(STORE_SLOT_MIN, bs), sblocks = sbytes / bs;
	if (!info->part_blocks || info->part_blocks < 2u * (uint64_t)sblocks)
		return -E_NOENT;
	for (int i = 0; i < 2; i++) {
		struct disk_slot_fact *s = &out[i];
		s->lba = info->part_start + (uint64_t)i * sblocks;
		int err = store_dev_read(&im->dev, s->lba, sblocks, im->scratch);
		if (err)
			return err;
		s->zero = disk_all_zero(im->scratch, sbytes);
		s->rej = info->slot_rej[i]; /* the probe's verdict (the generation's slot rule included) */
		enum store_layout_rej rej;
		uint32_t version = 0;
		if (s->rej == STORE_REJ_NONE && store_super_decode(im->scratch, sbytes, &s->sb, &rej, &version) == 0)
			s->valid = true;
		s->in_charge = info->kind == STORE_DISK_OURS && info->super_slot == i;
		if (s->rej == STORE_REJ_VERSION)
			s->version = info->other_version;
	}
	return 0;
}

const char *disk_slot_text(const struct disk_slot_fact *s)
{
	if (s->valid)
		return "valid, CRC ok";
	if (s->zero)
		return "empty (all zero: never written)";
	switch (s->rej) {
	case STORE_REJ_MAGIC:
		return "not a superblock (magic)";
	case STORE_REJ_VERSION:
		return "another layout version";
	case STORE_REJ_CRC:
		return "CRC mismatch (a torn or damaged write)";
	case STORE_REJ_FIELD:
		return "a field out of range, or a generation that belongs in the other slot";
	case STORE_REJ_REGION:
		return "a region outside the partition, misaligned or overlapping";
	default:
		return "not decoded";
	}
}

/* A file's first bytes as SQLite's database header, and its room: every extent of kind k
 * (the VFS serves the file through all of them, store_boot_vfs_map), not the first alone. */
static void sqlite_region(struct disk_image *im, enum store_region_kind k, struct disk_sqlite_region *out)
{
	memset(out, 0, sizeof *out);
	uint64_t first_blocks;
	out->present = disk_image_region(im, k, &out->lba, &first_blocks);
	if (!out->present)
		return;
	uint32_t bs = store_dev_block_size(&im->dev);
	out->n_extents = store_super_extents(&im->info.sb, k, &out->blocks);
	out->read_err = store_dev_read(&im->dev, out->lba, 1, im->scratch);
	if (!out->read_err)
		out->err = disk_sqlite_hdr_decode(im->scratch, bs, &out->hdr, &out->zero);
	out->too_big = !out->read_err && !out->err && disk_sqlite_hdr_too_big(&out->hdr, out->blocks * bs);
}

void disk_sqlite_room_text(const struct disk_sqlite_region *r, uint32_t block_size, char *out, size_t cap)
{
	char sz[32];
	disk_size_text(r->blocks * block_size, sz, sizeof sz);
	if (r->n_extents > 1u)
		snprintf(out, cap, "%s in %u extents", sz, (unsigned)r->n_extents);
	else
		snprintf(out, cap, "%s", sz);
}

void disk_sqlite_too_big_text(const struct disk_sqlite_region *r, uint32_t block_size, const char *whose, char *out,
			      size_t cap)
{
	char room[64];
	disk_sqlite_room_text(r, block_size, room, sizeof room);
	snprintf(out, cap,
		 "its header says %" PRIu32 " pages of %u bytes (%" PRIu64 " bytes), more than the %s room of %" PRIu64
		 " bytes (%s)",
		 r->hdr.pages, (unsigned)r->hdr.page_size, r->hdr.bytes, whose, r->blocks * block_size, room);
}

const char *disk_sqlite_region_text(const struct disk_sqlite_region *r)
{
	if (!r->present)
		return "no such region in this layout";
	if (r->read_err)
		return "unreadable";
	if (!r->err)
		return "a SQLite database";
	if (r->err == -E_CORRUPT)
		return "SQLite's magic, but a page size SQLite refuses";
	return r->zero ? "no database (its first bytes are zero)" : "no database (no SQLite header)";
}

/* One row of quick_check / integrity_check: SQLite joins its messages with newlines and
 * heads them with "*** in database main ***"; kept one message per entry, without the head. */
static void db_put(void *ctx, const char *msg)
{
	struct disk_db_facts *f = ctx;
	while (*msg) {
		size_t n = strcspn(msg, "\n");
		if (n && strncmp(msg, "*** in database ", 16) != 0) {
			if (f->n_msgs < DISK_DB_MSGS)
				snprintf(f->msgs[f->n_msgs], sizeof f->msgs[0], "%.*s", (int)n, msg);
			f->n_msgs++;
		}
		msg += n;
		msg += *msg == '\n';
	}
}

void disk_backup_when(int64_t backup_ms, char *out, size_t cap)
{
	char t[40];
	disk_iso_time(backup_ms, t, sizeof t);
	if (backup_ms > 0)
		snprintf(out, cap, "stamped as taken %s", t);
	else
		snprintf(out, cap,
			 "no backup_ms stamp (not a completed backup: a copy cut short, or a database a restore kept)");
}

static void bk_put(void *ctx, const char *msg)
{
	struct disk_backup_facts *f = ctx;
	while (*msg) {
		size_t n = strcspn(msg, "\n");
		if (n && strncmp(msg, "*** in database ", 16) != 0) {
			if (!f->n_msgs)
				snprintf(f->first_msg, sizeof f->first_msg, "%.*s", (int)n, msg);
			f->n_msgs++;
		}
		msg += n;
		msg += *msg == '\n';
	}
}

int disk_backup_facts(struct disk_image *im, uint32_t slot, bool full, struct disk_backup_facts *f)
{
	memset(f, 0, sizeof *f);
	f->slot = slot;
	f->backup_ms = -1;
	const struct store_super *sb = &im->info.sb;
	f->named = sb->backup_slot == slot;
	f->generation = f->named ? sb->backup_generation : 0;
	sqlite_region(im, slot == 1u ? STORE_REGION_BACKUP_A : STORE_REGION_BACKUP_B, &f->file);
	if (f->file.read_err)
		return f->file.read_err;
	if (!f->file.present || f->file.err) {
		snprintf(f->unusable, sizeof f->unusable, "it holds %s", disk_sqlite_region_text(&f->file));
		return 0;
	}
	struct disk_db db;
	f->open_err = disk_db_open_backup(&db, im, slot);
	if (!f->open_err) {
		f->opened = true;
		int err = disk_db_int(&db, "PRAGMA page_size", &f->page_size);
		if (!err)
			err = disk_db_int(&db, "PRAGMA page_count", &f->pages);
		f->open_err = err;
	}
	if (!f->open_err) {
		if (disk_db_int(&db, "SELECT v FROM meta WHERE k='schema'", &f->schema) != 0)
			f->schema = -1;
		if (disk_db_int(&db, "SELECT v FROM meta WHERE k='generation'", &f->boot_generation) != 0)
			f->boot_generation = -1;
		if (disk_db_int(&db, "SELECT v FROM meta WHERE k='backup_ms'", &f->backup_ms) != 0)
			f->backup_ms = -1;
		f->check_err = disk_db_check(&db, full, 10, &f->check_ok, bk_put, f);
		f->check_ok = f->check_ok && !f->check_err && !f->n_msgs;
		f->rows_ok = f->schema >= 0 && disk_db_rows(&db, &f->rows) == 0;
	}
	f->opened = f->opened && !f->open_err;
	snprintf(f->why, sizeof f->why, "%s", db.why);
	disk_db_close(&db);
	if (f->file.too_big) /* SQLite refuses it too, in words that do not name the cause */
		disk_sqlite_too_big_text(&f->file, store_dev_block_size(&im->dev), "slot's", f->unusable,
					 sizeof f->unusable);
	else if (!f->opened)
		snprintf(f->unusable, sizeof f->unusable, "SQLite cannot read it: %.256s", f->why);
	else if (!f->check_ok)
		snprintf(f->unusable, sizeof f->unusable, "%s failed: %.256s", full ? "integrity_check" : "quick_check",
			 f->n_msgs ? f->first_msg : f->why);
	else if (f->schema < DISK_DB_SCHEMA_OLDEST || f->schema > DISK_DB_SCHEMA_VERSION)
		snprintf(f->unusable, sizeof f->unusable, "not our schema (schema version %lld, this build reads %d..%d)",
			 (long long)f->schema, DISK_DB_SCHEMA_OLDEST, DISK_DB_SCHEMA_VERSION);
	else if (f->file.hdr.write_version != 2)
		snprintf(f->unusable, sizeof f->unusable, "not a WAL-mode image on the disk (header byte 18 is %u)",
			 (unsigned)f->file.hdr.write_version);
	return 0;
}

int disk_db_facts(struct disk_image *im, bool full, uint32_t max_msgs, bool with_backups, struct disk_db_facts *f)
{
	memset(f, 0, sizeof *f);
	f->backup_ms = -1;
	sqlite_region(im, STORE_REGION_DB, &f->file);
	uint64_t lba, blocks;
	if (disk_image_region(im, STORE_REGION_WAL, &lba, &blocks)) {
		f->wal_present = true;
		f->wal_read_err = store_dev_read(&im->dev, lba, 1, im->scratch);
		if (!f->wal_read_err)
			f->wal_err = disk_wal_hdr_decode(im->scratch, store_dev_block_size(&im->dev), &f->wal);
	}
	sqlite_region(im, STORE_REGION_BACKUP_A, &f->backup[0]);
	sqlite_region(im, STORE_REGION_BACKUP_B, &f->backup[1]);
	for (uint32_t i = 0; with_backups && i < 2; i++) {
		int err = disk_backup_facts(im, i + 1u, full, &f->bk[i]);
		if (err)
			return err;
	}
	if (im->info.sb.db_state != STORE_DB_READY) {
		f->fresh = true; /* the broker (re)creates it at its next boot: nothing to read */
		return 0;
	}
	if (f->file.read_err)
		return f->file.read_err;
	struct disk_db db;
	f->open_err = disk_db_open(&db, im);
	if (!f->open_err) {
		int err = disk_db_int(&db, "PRAGMA page_size", &f->page_size);
		if (!err)
			err = disk_db_int(&db, "PRAGMA page_count", &f->pages);
		if (!err)
			err = disk_db_int(&db, "PRAGMA freelist_count", &f->free_pages);
		f->open_err = err;
	}
	if (!f->open_err) {
		/* Ours: meta(k, v) (store/db.c). A database without it says -1. */
		if (disk_db_int(&db, "SELECT v FROM meta WHERE k='schema'", &f->schema) != 0)
			f->schema = -1;
		if (disk_db_int(&db, "SELECT v FROM meta WHERE k='generation'", &f->generation) != 0)
			f->generation = -1;
		if (disk_db_int(&db, "SELECT v FROM meta WHERE k='backup_ms'", &f->backup_ms) != 0)
			f->backup_ms = -1;
		if (disk_db_text(&db, "PRAGMA journal_mode", f->journal, sizeof f->journal) != 0)
			snprintf(f->journal, sizeof f->journal, "?");
		f->rows_ok = f->schema >= 0 && disk_db_rows(&db, &f->rows) == 0;
		f->check_err = disk_db_check(&db, full, max_msgs, &f->check_ok, db_put, f);
		f->checked = true;
		if (f->file.err)
			snprintf(f->refusal, sizeof f->refusal, "the superblock says the database was created, but its "
								"region holds %s", disk_sqlite_region_text(&f->file));
		else if (strcmp(f->journal, "wal") != 0)
			snprintf(f->refusal, sizeof f->refusal, "journal mode %s, not WAL", f->journal);
		else if (f->schema < 0)
			snprintf(f->refusal, sizeof f->refusal, "no schema version (meta table): not our schema");
		else if (f->schema < DISK_DB_SCHEMA_OLDEST || f->schema > DISK_DB_SCHEMA_VERSION)
			snprintf(f->refusal, sizeof f->refusal, "schema version %lld (this build's broker reads %d..%d)",
				 (long long)f->schema, DISK_DB_SCHEMA_OLDEST, DISK_DB_SCHEMA_VERSION);
	}
	snprintf(f->why, sizeof f->why, "%s", db.why);
	disk_db_close(&db);
	return 0;
}
