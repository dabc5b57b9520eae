/* SPDX-License-Identifier: MIT
 *
 * Storage bring-up at boot (store/): from the machine's data disk to an open database.
 * It recognises the disk (store/layout.h) and formats it only when it is blank or a format
 * of ours was interrupted; refuses anything else without writing a byte and says what it
 * found; grows our layout when the disk grew (store/grow.h: it finishes a growth a power
 * cut interrupted too); runs the block self-test on our own scratch block only; registers
 * the SQLite VFS over every extent of the database, its WAL and the backup slots; creates the database (and marks the superblock READY)
 * or opens the existing one after PRAGMA quick_check; takes a new boot generation; tidies
 * rows nothing can reach. The SQLite library must be initialised (store_sqlite_init).
 *
 * The core that will run the database calls it, once; it waits for the disk (bounded by
 * store/dev.h's timeout) and so belongs to that core's boot, never to a data core's loop.
 */
#ifndef STORE_BOOT_H
#define STORE_BOOT_H

#include "lib/compiler.h"
#include "store/db.h"
#include "store/dev.h"
#include "store/grow.h"
#include "store/layout.h"

struct store_vfs_config;

struct store_serial {
	const uint8_t *bytes; /* linked */
	size_t len;
};

struct store_boot_config {
	struct store_layout_config layout;
	uint32_t cache_kb, checkpoint_pages;
	const uint8_t *guids;        /* 48 random bytes (disk, ESP, data partition) for a format */
	int64_t now_s;               /* the creation time written by a format; 0 unknown */
	uint8_t *scratch;            /* linked: STORE_LAYOUT_SCRATCH bytes, 8-aligned */
	size_t scratch_len;
	uint8_t *io_buf;             /* linked: the VFS's read-modify-write buffer (>= 2 blocks) */
	size_t io_buf_len;
	void (*random)(void *ctx, void *buf, size_t len);
	int64_t (*wall_ms)(void *ctx);
	int64_t (*wall_s)(void *ctx);
	void (*progress)(void *ctx); /* long database statements say they are alive (may be NULL) */
	void *ctx;                   /* linked */
	const struct store_serial *revoked; /* the image's revoked serials: stored at creation */
	uint32_t n_revoked;
};

struct store_boot_result {
	enum store_disk_kind found;  /* what the disk was before we did anything */
	bool formatted;              /* this boot formatted it */
	bool created;                /* this boot created the database */
	int selftest;                /* the self-test on the scratch block: 0 or the error */
	uint64_t generation;         /* this boot's */
	uint64_t tidied;             /* unreachable rows removed */
	uint64_t wal_frames;         /* 4096-byte pages the WAL's region holds */
	uint64_t disk_bytes, min_bytes;
	/* quick_check failed and the backup replaced the database: its slot (1 A, 2 B), pages,
	 * whether the damaged copy was kept (in the other slot), and what quick_check said */
	uint32_t restored_slot;
	uint64_t restored_pages;
	int64_t restored_backup_ms;  /* when that backup was taken (Unix ms; 0 unknown) */
	bool kept_damaged;
	char damaged[128];
	struct store_super sb;
	char what[320];              /* one line for the console: what was found, what was done */
	/* our disk: what the growth to the disk's size did; grow.what is a second console
	 * line (empty when the disk was formatted by this boot) */
	struct store_grow_result grow;
};

/* 0 with db open (and the VFS registered) and *out filled; else, with *out->what saying
 * why: -E_PERM (a disk that is not ours and not blank: never written), -E_RANGE (too small
 * for the layout), -E_NOSYS (a layout version this image does not read), -E_CORRUPT (our
 * layout or database is damaged: not written), or the device's or database's error. */
MUST_CHECK int store_boot(struct store_dev *dev, const struct store_boot_config *cfg, struct store_db *db,
			  struct store_boot_result *out /* out */);
/* Undo a successful store_boot (close the database, unregister the VFS). */
void store_boot_close(struct store_db *db);

/* The files of layout sb for the VFS (store/sqlite/vfs.h): every DB, BACKUP_A and BACKUP_B
 * extent in superblock order and the WAL region, as absolute LBAs, into vc->db, vc->backup,
 * vc->wal_lba and vc->wal_blocks (the rest of *vc untouched; sb borrowed). 0, or
 * -E_CORRUPT (no DB or WAL region). */
MUST_CHECK int store_boot_vfs_map(const struct store_super *sb, struct store_vfs_config *vc /* out */);

/* Run-time growth: the device's capacity grew (the virtio-blk configuration change). Runs
 * store_grow on *sb (the superblock in charge: updated on success), then appends the new
 * extents to the open database and backup files (store_vfs_extend), so the space is used
 * without a restart. The storage core calls it between transactions (no backup step in
 * between, though a backup may be running: its file grows too). scratch:
 * STORE_LAYOUT_SCRATCH bytes (borrowed). 0 (out->what: the console line), or store_grow's
 * error, or store_vfs_extend's (the disk is grown; the database sees the space from the
 * next boot; out->what says so). */
MUST_CHECK int store_boot_grow(struct store_dev *dev, struct store_super *sb, uint8_t *scratch, size_t scratch_len,
			       struct store_grow_result *out /* out */);

#endif
