/* SPDX-License-Identifier: MIT
 *
 * The SQLite side of the raw disk: the build's SQLite library (SQLite 3.46.1 compiled
 * freestanding with store/sqlite/sqlite_config.h in every flavour), its memory from the caller's
 * accounted allocator with a hard bound, and the VFS "urmqtt" that maps SQLite's two files
 * onto two regions of the data disk: the database file onto the DB region, its
 * write-ahead log onto the WAL region. No filesystem, no shared memory (WAL in exclusive
 * locking mode keeps the WAL index in heap memory), no other file: SQLite's temporary
 * files live in memory (SQLITE_TEMP_STORE=3) and opening anything else fails loudly.
 *
 * File sizes without a file table: the database's size is read from its own header (page
 * size x page count, bytes 16 and 28; 0 when the region does not start with "SQLite
 * format 3"), and grows with writes past it; the write-ahead log reports its region's size
 * (SQLite validates every frame by its salted checksums and stops at the first invalid
 * one, so bytes past the live frames are harmless) and is "deleted" by zeroing its header
 * block. Reads past a file's end return zeros and SQLITE_IOERR_SHORT_READ, as SQLite wants.
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

#define STORE_VFS_NAME "urmqtt"

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
/* sqlite3_shutdown; afterwards store_sqlite_init may run again (tests). 0 or -E_CLOSED
 * when a connection is still open. */
MUST_CHECK int store_sqlite_fini(void);
void store_sqlite_mem_stats(struct store_sqlite_mem_stats *out /* out */);

struct store_vfs_config {
	struct store_dev *dev;            /* linked */
	uint64_t db_lba, db_blocks;       /* the DB region: absolute LBA and length in blocks */
	uint64_t wal_lba, wal_blocks;     /* the WAL region */
	uint8_t *io_buf;                  /* linked: read-modify-write buffer, >= 2 blocks */
	size_t io_buf_len;
	void (*random)(void *ctx, void *buf, size_t len); /* xRandomness (CSPRNG) */
	int64_t (*wall_ms)(void *ctx);    /* xCurrentTimeInt64: Unix milliseconds, 0 unknown */
	void *ctx;                        /* linked: for random and wall_ms */
};

struct store_vfs_stats {
	uint64_t reads, writes, syncs, rmw;          /* xRead/xWrite/xSync calls, partial-block writes */
	uint64_t read_bytes, write_bytes;
	uint64_t short_reads;                        /* reads past a file's end */
	uint64_t errors;                             /* calls that returned an I/O error */
	uint64_t refused_opens;                      /* files other than the DB and its WAL */
	uint64_t full;                               /* writes past a region: SQLITE_FULL */
};

struct store_vfs; /* opaque: lives in static storage of vfs.c (one VFS per process) */

/* Register the VFS as SQLite's default, over the regions of cfg (copied; dev and io_buf
 * linked). After store_sqlite_init. 0, -E_EXIST (registered already: unregister first),
 * -E_INVAL (regions empty or overlapping, buffer too small). */
MUST_CHECK int store_vfs_register(const struct store_vfs_config *cfg);
/* Unregister (no connection may be open). */
void store_vfs_unregister(void);
void store_vfs_stats(struct store_vfs_stats *out /* out */);

#endif
