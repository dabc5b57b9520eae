/* SPDX-License-Identifier: MIT
 *
 * The SQLite side of the raw disk: the build's SQLite library (SQLite 3.46.1 compiled
 * freestanding with store/sqlite/sqlite_config.h in every flavour, plus SQLite's page
 * checksum shim ext/misc/cksumvfs.c from the same pinned tree), its memory from the
 * caller's accounted allocator with a hard bound, and the VFS that maps SQLite's files onto
 * regions of the data disk. No filesystem, no shared memory (WAL in exclusive locking mode
 * keeps the WAL index in heap memory), no other file: SQLite's temporary files live in
 * memory (SQLITE_TEMP_STORE=3) and opening anything else fails loudly (SQLITE_CANTOPEN,
 * counted by reason).
 *
 * The files. The database ("urmqtt.db", any name but the two below) on the DB extents; its
 * write-ahead log ("<db name>-wal") on the WAL region; and two backup files,
 * STORE_VFS_BACKUP_A and STORE_VFS_BACKUP_B, on the BACKUP_A and BACKUP_B extents (a slot
 * without extents is absent: opening its file fails). A file of several extents (the disk
 * grew: store/grow.h) is their concatenation in order; a request that crosses from one
 * extent into the next is split there, and store_vfs_extend appends one while the file is
 * open. A backup file has no write-ahead log and
 * no journal (open it with journal_mode=OFF and locking_mode=EXCLUSIVE; any journal or WAL
 * named after it is refused). At most one backup file is open at a time, next to the
 * database and its WAL. A backup slot holds, on the disk, the image the DB region would
 * hold (a WAL-mode database, header bytes 18-19 = 2: a raw copy of it over the DB region
 * opens as the database); SQLite sees it through the VFS as a database without a log
 * (bytes 18-19 = 1), so it opens alone, without a WAL, and the page checksum of page 1 is
 * kept valid in both forms.
 *
 * File sizes without a file table: a database's (and a backup's) size is read from its own
 * header (page size x page count, bytes 16 and 28; 0 when the region does not start with
 * "SQLite format 3\0"), and grows with writes past it; the write-ahead log reports its
 * region's size (SQLite validates every frame by its salted checksums and stops at the
 * first invalid one, so bytes past the live frames are harmless) and is "deleted" by
 * zeroing its header block. Reads past a file's end return zeros and
 * SQLITE_IOERR_SHORT_READ, as SQLite wants. Writes past a file's extents fail with
 * SQLITE_FULL.
 * Truncating a database or a backup (incremental_vacuum, a checkpoint of a smaller
 * database, the end of a backup) hands the whole blocks past the new end back to the
 * device (store_dev_discard; a device without discard keeps them, not an error).
 *
 * Page checksums. The stack SQLite opens, from the top: STORE_VFS_NAME ("urmqtt", the
 * default VFS: it only routes each open), SQLite's cksumvfs ("cksmvfs"), and the block
 * layer STORE_VFS_RAW_NAME. A database whose pages reserve STORE_VFS_RESERVE_BYTES bytes
 * carries cksumvfs's checksum in them: every page read from the database or a backup is
 * verified by cksumvfs, every page read from the WAL (by a query, a checkpoint or a
 * backup step) by the block layer, and a mismatch fails the read with SQLITE_IOERR_DATA
 * instead of serving the bytes. The write-ahead log does not go through cksumvfs: on a WAL
 * it breaks crash recovery (SQLite checksums each frame before cksumvfs rewrites the
 * page's last 8 bytes, so recovery drops every frame after the first) and writes wrong
 * bytes when SQLite splits a padding frame at the sync point; the block layer puts the
 * same checksum in each WAL page and recomputes the frame checksums over the bytes it
 * writes. Not covered: frames SQLite's recovery reads after a crash (its own salted
 * frame checksums end the log at the first bad frame, as at a torn write, so a flipped
 * committed frame loses it and every later frame), and a database created without
 * reserve bytes (it works, unchecked).
 *
 * Sectors: xSectorSize is max(logical, physical block); the device is not power-safe
 * overwrite (SQLITE_IOCAP_POWERSAFE_OVERWRITE is not claimed), so SQLite pads every commit
 * to a sector boundary and a later transaction never rewrites a sector that holds
 * committed frames. Requests are whole blocks: a write that does not cover whole blocks is
 * a read-modify-write of its first and last block through the caller's I/O buffer. xSync
 * is a device FLUSH (store_dev_flush: durable once it returns).
 *
 * Calling context: only the core that runs the database (SQLITE_THREADSAFE=0), never an
 * interrupt handler. Every disk access goes through store/dev.h, so it is bounded in time.
 */
#ifndef STORE_SQLITE_VFS_H
#define STORE_SQLITE_VFS_H

#include "lib/compiler.h"
#include "store/dev.h"

/* The VFS to open every file with (sqlite3_open_v2's zVfs, or NULL: it is the default). */
#define STORE_VFS_NAME "urmqtt"
/* The layers under it: SQLite's checksum shim, then the block layer (tests, tools). */
#define STORE_VFS_CKSUM_NAME "cksmvfs"
#define STORE_VFS_RAW_NAME "urmqtt-raw"
/* The backup files: MAIN_DB names mapped to the backup regions A and B. */
#define STORE_VFS_BACKUP_A "urmqtt-backup-a.db"
#define STORE_VFS_BACKUP_B "urmqtt-backup-b.db"
#define STORE_VFS_BACKUP_SLOTS 2u
/* Bytes each page reserves for cksumvfs's checksum. A NEW database gets them with
 *   int n = STORE_VFS_RESERVE_BYTES;
 *   sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &n);
 * right after sqlite3_open_v2, before the first statement that writes page 1 (the switch
 * to journal_mode=WAL writes it): n then holds the previous value, 0. A database created
 * without them keeps working, unchecked (a VACUUM can add them later). */
#define STORE_VFS_RESERVE_BYTES 8

/* The accounted allocator SQLite's memory comes from (the kernel heap with tag "store",
 * malloc on the host). alloc returns 8-byte-aligned memory or NULL; free takes the length
 * given to alloc. */
struct store_sqlite_mem {
	void *(*alloc)(void *ctx, size_t len);
	void (*free)(void *ctx, void *p, size_t len);
	void *ctx;                /* linked */
	size_t limit;             /* bytes SQLite may hold at once (storage.db_heap_mb) */
};

struct store_sqlite_mem_stats {
	size_t used, peak, limit;
	uint64_t allocs, frees, refused; /* refused: over the limit or the allocator said no */
};

/* Configure and initialise the SQLite library once per process (sqlite3_config:
 * allocator through mem with the bound, no memory statistics, page cache from the heap;
 * then sqlite3_initialize). mem copied (ctx linked). 0, -E_EXIST (already done) or
 * -E_INVAL. Core that runs the database. */
MUST_CHECK int store_sqlite_init(const struct store_sqlite_mem *mem);
/* Unregister the VFS (store_vfs_unregister), then sqlite3_shutdown; afterwards
 * store_sqlite_init may run again (tests). 0 or -E_CLOSED when a connection is still open. */
MUST_CHECK int store_sqlite_fini(void);
void store_sqlite_mem_stats(struct store_sqlite_mem_stats *out /* out */);

/* A file's place on the disk: its extents, runs of blocks (absolute LBA, length) that its
 * bytes go through in order (the superblock's regions of its kind, store/layout.h). */
#define STORE_VFS_MAX_EXTENTS 16u
struct store_vfs_extent {
	uint64_t lba, blocks;
};
struct store_vfs_extents {
	uint32_t n;                       /* 0 .. STORE_VFS_MAX_EXTENTS */
	struct store_vfs_extent ext[STORE_VFS_MAX_EXTENTS];
};

struct store_vfs_config {
	struct store_dev *dev;            /* linked */
	struct store_vfs_extents db;      /* the database file: at least one extent */
	uint64_t wal_lba, wal_blocks;     /* the WAL region (one extent: the log never grows) */
	uint8_t *io_buf;                  /* linked: read-modify-write buffer, >= 2 blocks */
	size_t io_buf_len;
	void (*random)(void *ctx, void *buf, size_t len); /* xRandomness (CSPRNG) */
	int64_t (*wall_ms)(void *ctx);    /* xCurrentTimeInt64: Unix milliseconds, 0 unknown */
	void *ctx;                        /* linked: for random and wall_ms */
	/* The backup files A ([0]) and B ([1]); no extent: that slot is absent. */
	struct store_vfs_extents backup[STORE_VFS_BACKUP_SLOTS];
};

/* The kinds of file, for the per-file counters (both backup slots count as BACKUP). */
enum store_vfs_file { STORE_VFS_FILE_DB, STORE_VFS_FILE_WAL, STORE_VFS_FILE_BACKUP, STORE_VFS__FILES };

/* Why an open (or shared memory) was refused. */
enum store_vfs_refusal {
	STORE_VFS_REFUSED_OTHER,         /* not one of our files: the DB's journal, ATTACH, a stray WAL */
	STORE_VFS_REFUSED_TEMP,          /* a temporary file (they live in memory) */
	STORE_VFS_REFUSED_TWICE,         /* already open: a second connection, a second backup file */
	STORE_VFS_REFUSED_BACKUP_ABSENT, /* a backup file whose slot has no region */
	STORE_VFS_REFUSED_BACKUP_LOG,    /* a journal or WAL named after a backup file */
	STORE_VFS_REFUSED_SHM,           /* shared memory: a WAL opened without exclusive locking */
	STORE_VFS__REFUSALS
};

struct store_vfs_file_stats {
	uint64_t opens, reads, writes, syncs, truncates;
	uint64_t read_bytes, write_bytes;
	uint64_t discarded_blocks;        /* handed back to the device by truncations */
	uint64_t bad_pages;               /* page reads whose checksum did not match */
};

struct store_vfs_stats {
	uint64_t reads, writes, syncs, rmw;          /* xRead/xWrite/xSync calls, partial-block writes */
	uint64_t read_bytes, write_bytes;
	uint64_t short_reads;                        /* reads past a file's end */
	uint64_t errors;                             /* calls that returned an I/O error */
	uint64_t refused_opens;                      /* xOpen refusals, every reason */
	uint64_t full;                               /* writes past a region: SQLITE_FULL */
	uint64_t refused[STORE_VFS__REFUSALS];       /* by reason (SHM: xShmMap, not an open) */
	uint64_t discarded_blocks;                   /* by truncations, every file */
	uint64_t discard_unsupported;                /* truncations the device could not discard */
	uint64_t frames_sealed;                      /* WAL frames given their page checksum */
	uint64_t frames_unsealable;                  /* padding frames not like the one before: refused */
	struct store_vfs_file_stats file[STORE_VFS__FILES];
};

struct store_vfs; /* opaque: lives in static storage of vfs.c (one VFS per process) */

/* Register the VFS stack (the block layer, cksumvfs over it, STORE_VFS_NAME over that as
 * SQLite's default) over the extents of cfg (copied; dev and io_buf linked). After
 * store_sqlite_init. 0, -E_EXIST (registered already: unregister first; or a cksumvfs
 * registered by someone else), -E_INVAL (an extent empty, past the device or overlapping
 * another, no database extent, more than STORE_VFS_MAX_EXTENTS, buffer too small),
 * -E_NOMEM (SQLite's memory bound). */
MUST_CHECK int store_vfs_register(const struct store_vfs_config *cfg);
/* Unregister the stack, undoing both registrations (no connection may be open: refused,
 * silently, while a file is). */
void store_vfs_unregister(void);
void store_vfs_stats(struct store_vfs_stats *out /* out */);

/* Append the extent [lba, lba + blocks) to the database file (file STORE_VFS_FILE_DB, slot
 * 0) or to backup slot `slot` (file STORE_VFS_FILE_BACKUP, 0: A, 1: B; an absent slot
 * becomes present), also while it is open: the disk grew (store/grow.h) and the superblock
 * naming the new extent is committed. Writes past the file's old room then succeed instead
 * of SQLITE_FULL; nothing in the file moves. An extent that continues the file's last one
 * lengthens it. 0, or -E_INVAL (not registered, the WAL, no such slot, an extent empty,
 * past the device or overlapping any file's), -E_RANGE (the file has STORE_VFS_MAX_EXTENTS
 * already). Core that runs the database. */
MUST_CHECK int store_vfs_extend(enum store_vfs_file file, uint32_t slot, uint64_t lba, uint64_t blocks);

/* Empty backup slot `slot` (0: A, 1: B) before a new backup is written into it: its blocks
 * (every extent) are handed back to the device (discard, when the device can) and its first
 * block zeroed,
 * so the backup file opens empty whatever an interrupted or damaged copy left there. Not
 * flushed (the backup's own flush covers it). Never call it for the slot the superblock
 * names. 0, -E_INVAL (no such slot, or absent), -E_EXIST (its file is open), or the
 * device's error. Core that runs the database. */
MUST_CHECK int store_vfs_backup_clear(uint32_t slot);

#endif
