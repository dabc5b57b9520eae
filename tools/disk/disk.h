/* SPDX-License-Identifier: MIT
 *
 * Private to tools/disk (urmqtt-disk): what its files share. An image opened through
 * hosted/blk_file.h under store/dev.h and recognised by store/layout.h's probe (image.c);
 * the database and its backups read through the VFS of store/sqlite/ (db.c); the broker's
 * bring-up, store_boot, for the commands that write (bringup.c); the commands (inspect.c,
 * verify.c, format.c, telemetry.c, backup.c); and the pure pieces the unit tests reach
 * (check.c: tests/unit/tools/test_disk_check.c). Host code (libc). The disk format is
 * store/'s: nothing here decodes our own bytes a second way; only SQLite's file and WAL
 * headers (SQLite's format, for a summary) are read here.
 *
 * Exit codes of every command: DISK_EXIT_OK (0), DISK_EXIT_BAD (1: not our disk, damage
 * found, refused, or the image could not be read or written), DISK_EXIT_USAGE (2).
 */
#ifndef TOOLS_DISK_DISK_H
#define TOOLS_DISK_DISK_H

#include <stddef.h>
#include <stdint.h>

#include "hosted/blk_file.h"
#include "lib/compiler.h"
#include "store/dev.h"
#include "store/layout.h"
#include "store/tlog.h"

enum { DISK_EXIT_OK = 0, DISK_EXIT_BAD = 1, DISK_EXIT_USAGE = 2 };

/* ---- the command line ---------------------------------------------------------------------- */
struct disk_opts {
	const char *cmd, *image, *identity, *topic;
	const char *to;            /* backup --to FILE: the new backup also as a plain SQLite file */
	uint32_t slot;             /* restore --slot: 1 A, 2 B; 0 the one the superblock names */
	int64_t since_ms, until_ms;
	bool csv;                  /* telemetry --format csv */
	bool force;                /* format --force */
	bool full;                 /* verify --full: integrity_check instead of quick_check */
	bool verbose;              /* verify --verbose: every segment, tails included */
	bool esp_set, wal_set, pct_set;
	uint32_t esp_mib, wal_mib, telemetry_pct; /* format: the layout (defaults: the build's) */
};

int disk_cmd_inspect(const struct disk_opts *o);
int disk_cmd_verify(const struct disk_opts *o);
int disk_cmd_format(const struct disk_opts *o);
int disk_cmd_telemetry(const struct disk_opts *o);
int disk_cmd_backup(const struct disk_opts *o);
int disk_cmd_restore(const struct disk_opts *o);

/* ---- an image (image.c) ---------------------------------------------------------------------- */
struct disk_image {
	const char *path;          /* borrowed (argv) */
	struct hosted_blk_file f;
	struct store_dev dev;
	uint8_t *bounce, *scratch; /* returned owned: freed by disk_image_close */
	bool open, writable;
	uint64_t file_bytes;
	struct store_disk_info info; /* the probe's verdict */
};

/* Open path (read only unless writable) with 512-byte blocks, probe it, and when it is ours
 * with another block size open it again with that one. Says on stderr what failed, naming
 * the file (cannot open it, not a regular file, I/O) and returns DISK_EXIT_BAD; the probe's
 * verdict itself is not judged here (im->info.kind). im: zeroed by the call. */
MUST_CHECK int disk_image_open(struct disk_image *im, const char *path, bool writable);
/* Probe again (after writes). 0 or DISK_EXIT_BAD (said). */
MUST_CHECK int disk_image_probe(struct disk_image *im);
void disk_image_close(struct disk_image *im);
/* Say on stderr that the image is not a usable urMQTT data disk, in the probe's words (and what
 * would make it one); returns DISK_EXIT_BAD. */
int disk_image_not_ours(const struct disk_image *im);
/* The first region of kind k in the probed superblock: its first absolute LBA and its own
 * blocks; false when the layout has none (or it is empty). For WAL and TELEMETRY that is the
 * whole region; a file that grew (DB, BACKUP_A, BACKUP_B) has more extents, and its room is
 * their sum (store_super_extents: facts.c). */
bool disk_image_region(const struct disk_image *im, enum store_region_kind k, uint64_t *lba /* out */,
		       uint64_t *blocks /* out */);
/* Read len bytes (a multiple of the block size) at absolute byte offset off (block aligned)
 * into buf. 0 or the device's error. */
MUST_CHECK int disk_image_read(struct disk_image *im, uint64_t off, size_t len, void *buf);
uint64_t disk_mono_ns(void *ctx);
/* len bytes aligned to 4096 (len rounded up: aligned_alloc wants a multiple), or NULL.
 * Returned owned: free(). */
void *disk_alloc(size_t len);

/* The telemetry log's geometry: 0, -E_NOENT (no region, or a region never used), or the
 * decode's / device's error; what (may be NULL) gets a phrase for the output either way. */
MUST_CHECK int disk_tlog_geometry(struct disk_image *im, uint64_t *lba /* out */, struct store_tlog_geom *g /* out */,
				  const char **what /* out */);

/* ---- the database and its backups, read only (db.c) --------------------------------------- */
struct sqlite3;
struct disk_db {
	struct sqlite3 *h;
	bool lib_up, vfs_up;
	char why[256];             /* SQLite's words for the last failure */
};
/* Register the VFS over the image's files (the database's and the backups' extents, the WAL
 * region) and open the database read only, WAL recovered in memory. 0, or -E_NOENT (the layout
 * names no database region), or a failure with db->why. Always pair with disk_db_close. */
MUST_CHECK int disk_db_open(struct disk_db *db, struct disk_image *im);
/* The same for backup slot `slot` (1 A, 2 B): its file alone, read only (no log). 0, -E_NOENT
 * (the layout has no such slot), or a failure with db->why. */
MUST_CHECK int disk_db_open_backup(struct disk_db *db, struct disk_image *im, uint32_t slot);
/* Open the file `name` (STORE_VFS_BACKUP_A/B) read only on the VFS someone else registered
 * (store_boot: the backup command), next to their database. 0 or a failure with why. */
MUST_CHECK int disk_db_attach(struct disk_db *db, const char *name);
void disk_db_close(struct disk_db *db);
/* One integer from a statement's first row (-1 when there is no row); 0 or -E_IO with why. */
MUST_CHECK int disk_db_int(struct disk_db *db, const char *sql, int64_t *out /* out */);
/* The same for text (truncated to cap - 1 bytes; "" when there is no row). */
MUST_CHECK int disk_db_text(struct disk_db *db, const char *sql, char *out, size_t cap);
/* PRAGMA quick_check (full: integrity_check) with up to max_msgs messages; each message
 * through put (ctx); *ok true when SQLite said "ok". 0 or the statement's failure (why). */
MUST_CHECK int disk_db_check(struct disk_db *db, bool full, uint32_t max_msgs, bool *ok /* out */,
			     void (*put)(void *ctx, const char *msg), void *ctx);
/* Rows of our schema's tables (store/db.c), counted. 0 or the first failure (why). */
struct disk_rows {
	int64_t sessions, subs, dlvs, msgs, rx2, retained, registry, revoked;
};
MUST_CHECK int disk_db_rows(struct disk_db *db, struct disk_rows *out /* out */);
/* The rows as one phrase: "2 sessions, 2 subscriptions, ..., 25 retained, ...". */
void disk_rows_text(const struct disk_rows *r, char *out, size_t cap);
/* Write the open file's pages, as SQLite reads them through the VFS (page checksums verified;
 * a backup's page 1 in the form without a log: SQLite's rollback-journal format, which any
 * sqlite3 opens), to a new file at path (never an existing one: -E_EXIST). 0 with *bytes, or
 * the failure (why; a partial file is removed). */
MUST_CHECK int disk_db_export(struct disk_db *db, const char *path, uint64_t *bytes /* out */);

/* ---- the broker's bring-up, read-write (bringup.c) ---------------------------------------- */
struct store_db;
struct store_boot_result;
struct disk_up {
	struct store_db *db;                /* returned owned: disk_up_close */
	struct store_boot_result *out;      /* returned owned: what store_boot said (out->what) */
	bool lib_up, db_up;
};
/* SQLite initialised as the broker does (bounded by storage.db_heap_mb), then store_boot on
 * the writable image im with this build's storage configuration (layout: NULL for the build's;
 * a format uses it): probe, format a blank disk, block self-test, the database opened after
 * quick_check (restored from its backup when it fails) or created, a new boot generation.
 * 0 with up->db open, or DISK_EXIT_BAD (up->out->what says why when out is set; otherwise said
 * on stderr). Always pair with disk_up_close. */
MUST_CHECK int disk_up_boot(struct disk_up *up, struct disk_image *im, const struct store_layout_config *layout);
/* Close the database (a clean close: the WAL checkpointed), unregister the VFS, shut SQLite
 * down. 0, or DISK_EXIT_BAD when SQLite still held a connection (said on stderr). */
MUST_CHECK int disk_up_close(struct disk_up *up, struct disk_image *im);
/* Host services for store/ and SQLite: getrandom (aborts when the kernel gives none: never
 * GUIDs or salts from a fallback), the wall clock, malloc for SQLite. */
void disk_random(void *ctx, void *buf, size_t len);
int64_t disk_wall_ms(void *ctx);
int64_t disk_wall_s(void *ctx);
void *disk_sqlite_alloc(void *ctx, size_t len);
void disk_sqlite_free(void *ctx, void *p, size_t len);

/* ---- pure pieces (check.c) ------------------------------------------------------------------- */

/* Where a segment's valid records end, and why. The writer always ends its data on a sector
 * boundary (each write-out padded by a skip marker), so what follows the data there is either
 * nothing (zeros), the end of the slot, or bytes of an earlier segment in the same slot (or of
 * a write-out a power cut kept only partly): none of that is damage. Records that stop
 * validating inside a sector, after valid data, were written whole and changed since. */
enum disk_seg_end {
	DISK_SEG_END_ZERO,   /* a zero length at a sector boundary */
	DISK_SEG_END_FULL,   /* fewer than a record header's bytes left in the slot */
	DISK_SEG_END_TAIL,   /* bytes that do not validate, from a sector boundary: stale or cut */
	DISK_SEG_END_BROKEN, /* bytes that do not validate inside a sector: damage */
};
const char *disk_seg_end_name(enum disk_seg_end e);

struct disk_seg_check {
	struct store_tlog_seg hdr;  /* the segment's header */
	uint64_t records;           /* valid records before the end */
	uint64_t skipped_bytes;     /* padding skipped by valid skip markers */
	int64_t first_wall_ms, last_wall_ms; /* of the valid records (0: none) */
	size_t end_off;             /* segment offset where the valid data ends */
	enum disk_seg_end end;
	uint32_t end_len;           /* the length field found at end_off (when 8 bytes were left) */
};
/* Walk the segment seg (len bytes, borrowed; its header first) with store/tlog.h's cursor
 * and classify its end. 0, -E_NOENT (the header's bytes all zero: no segment), -E_CORRUPT (a
 * header that does not decode), -E_INVAL (sector not a power of two in 512..65536). */
MUST_CHECK int disk_seg_check(const uint8_t *seg, size_t len, uint32_t sector, struct disk_seg_check *out /* out */);

/* SQLite's database header (the file's first 100 bytes; SQLite's file format, section 1.3). */
struct disk_sqlite_hdr {
	uint32_t page_size;         /* 512..65536 (the header's 1 means 65536) */
	uint8_t write_version, read_version; /* 1 rollback journal, 2 WAL */
	uint8_t reserved;           /* bytes reserved at each page's end (8: page checksums) */
	uint32_t change_counter, pages, freelist_trunk, freelist_pages, schema_cookie, schema_format;
	uint32_t text_encoding, user_version, application_id, version_valid_for, sqlite_version;
	bool pages_valid;           /* the in-header size holds (pages > 0, counters agree) */
	uint64_t bytes;             /* page_size * pages when pages_valid, else 0 */
};
/* 0; -E_NOENT (no "SQLite format 3" magic; *zero says whether the bytes were all zero);
 * -E_CORRUPT (the magic, but a page size SQLite would refuse); -E_INVAL (len < 100). */
MUST_CHECK int disk_sqlite_hdr_decode(const uint8_t *p, size_t len, struct disk_sqlite_hdr *out /* out */,
				      bool *zero /* out, may be NULL */);

/* SQLite's WAL header (first 32 bytes of the log). */
struct disk_wal_hdr {
	uint32_t version, page_size, checkpoint_seq, salt1, salt2;
};
/* 0 or -E_NOENT (no WAL magic: the log is empty), -E_INVAL (len < 32). */
MUST_CHECK int disk_wal_hdr_decode(const uint8_t *p, size_t len, struct disk_wal_hdr *out /* out */);

/* bytes as "N MiB" (whole MiB), "N.N MiB", "N KiB" or "N B"; returns buf. */
const char *disk_size_text(uint64_t bytes, char *buf, size_t cap);
/* A SQLite header's size against its file's room (every extent of the file, in bytes): true
 * when the header's size is valid (pages_valid) and larger. The broker's VFS then serves only
 * the room, and SQLite refuses the file. */
bool disk_sqlite_hdr_too_big(const struct disk_sqlite_hdr *h, uint64_t room_bytes);

/* A region kind as inspect names it: "database", "wal", "telemetry", "backup-a", "backup-b";
 * "?" for any other value. Static text. */
const char *disk_region_kind_name(uint32_t kind);
/* Region i of sb (decoded; borrowed) as inspect names its row: the kind's name for the first
 * extent of its kind, "database (extent 2 of 3)" for a later one (counted in superblock order,
 * the order of the file's bytes). "?" when i is past the table. out: cap bytes, terminated. */
void disk_region_name(const struct store_super *sb, uint32_t i, char *out, size_t cap);

/* A GPT GUID in its on-disk (mixed-endian) form as text (36 characters and a NUL). */
void disk_guid_text(const uint8_t g[16], char out[37]);
/* Unix milliseconds as YYYY-MM-DDTHH:MM:SS.mmmZ, "unknown" when ms <= 0. */
void disk_iso_time(int64_t ms, char *out, size_t cap);
/* A --since / --until value: Unix seconds, Unix milliseconds (13 digits or more) or
 * YYYY-MM-DDTHH:MM:SS[.mmm]Z, as Unix milliseconds; -1 when it is not a time. */
int64_t disk_parse_time(const char *v);
/* A decimal number 0..max with nothing after it: 0 or -E_INVAL. */
MUST_CHECK int disk_parse_u32(const char *v, uint32_t max, uint32_t *out /* out */);
/* A backup slot's name, A or B (either case), as 1 or 2: 0 or -E_INVAL. */
MUST_CHECK int disk_parse_slot(const char *v, uint32_t *slot /* out */);
/* Are all n bytes zero? */
bool disk_all_zero(const uint8_t *p, size_t n);

#endif
