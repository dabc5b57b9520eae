/* SPDX-License-Identifier: MIT
 *
 * The scrubber (store/): reads, a little at a time and within an I/O budget per second,
 * everything on the data disk that carries its own check, and reports each piece that no
 * longer matches it with its location. One pass reads, in order: the database file's pages
 * 1..size (through the broker's connection: SQLite's cksumvfs verifies each page's
 * checksum), the backup slot the superblock names (its file opened read only through the
 * VFS for the pass, its pages read the same way), then the telemetry log (its region
 * header, every partition's hint, and every slot: the segment header, and for a valid one
 * the whole segment, every record through store/tlog.h's validating cursor). Then the next
 * pass starts.
 *
 * What counts as damage follows the readers' rules, so nothing the writers leave by design
 * is reported: a page past the database file's end is never read; SQLite's lock-byte page
 * (never written) is skipped; a telemetry slot whose header is all zero (never written or
 * discarded) or does not validate is skipped as store/tlog_scan.c skips it (counted, not
 * reported); a segment's records ending at a sector boundary is its end (zeros, or an
 * earlier segment's bytes in the slot), while a record or skip marker that stops
 * validating inside a sector, after valid data, was written whole and changed since: that
 * is a bad record (tools/disk/verify.c applies the same rule). The database file as it is
 * on disk is read: committed pages still in the write-ahead log are the log's business
 * (SQLite checks each frame as it reads it).
 *
 * It never writes: only page reads through the database file's and a backup file's
 * methods, and block reads through store/dev.h. It never allocates: the caller lends the
 * read buffer and the struct (which holds the backup file's handle). Budget: a token bucket
 * filled at bytes_per_s and capped at one second of it, so a long pause is never followed
 * by a burst larger than that. A unit of work (a page; a telemetry slot: its header, then
 * for a valid segment the rest of it) starts when the bucket holds its first read's bytes
 * (or is full, when that is more than one second of budget) and is charged all it read, so
 * over T seconds from the start the scrubber reads at most T x bytes_per_s plus one unit
 * (a page, or a telemetry segment).
 *
 * Single core: the core that runs the database, between the service's other calls (never
 * inside a database statement, a backup step or a telemetry write-out); never from an
 * interrupt handler.
 */
#ifndef STORE_SCRUB_H
#define STORE_SCRUB_H

#include "lib/compiler.h"
#include "store/dev.h"
#include "store/tlog.h"

struct store_db;
struct store_super;

/* Where a finding is. */
enum store_scrub_file {
	STORE_SCRUB_DB,          /* the database file (DB region) */
	STORE_SCRUB_BACKUP_A,    /* the backup slots (BACKUP_A and BACKUP_B regions) */
	STORE_SCRUB_BACKUP_B,
	STORE_SCRUB_TELEMETRY,   /* the telemetry log (TELEMETRY region) */
	STORE_SCRUB__FILES
};

/* What is wrong with it. */
enum store_scrub_kind {
	STORE_SCRUB_BAD_PAGE,    /* a page whose checksum does not match (SQLITE_IOERR_DATA) */
	STORE_SCRUB_BAD_RECORD,  /* a telemetry record or skip marker that fails inside a sector */
	STORE_SCRUB_BAD_HEADER,  /* page 1 holds no usable database header; the telemetry region
				  * header or a partition's hint does not validate */
	STORE_SCRUB_UNREADABLE,  /* the device failed the read */
	STORE_SCRUB__KINDS
};

#define STORE_SCRUB_NONE UINT32_MAX /* partition or slot not applicable */

/* One finding. Each damaged page or segment is found once per pass (it is read once). */
struct store_scrub_finding {
	enum store_scrub_file file;
	enum store_scrub_kind kind;
	uint64_t pass;           /* the pass that found it: 1 for the first */
	uint64_t lba;            /* absolute LBA of the block holding its first byte */
	uint64_t page;           /* database and backups: the page number (1..); 0 otherwise */
	/* telemetry: partition and slot (STORE_SCRUB_NONE for the region header; slot NONE for
	 * a hint), the segment's sequence number and the byte offset in the segment where the
	 * valid data stops, and the valid records before it (the rest of the segment is not
	 * checked: the cursor cannot resynchronise past a bad record) */
	uint32_t partition, slot;
	uint64_t seq;
	uint32_t seg_off;
	uint64_t records_before;
	int err;                 /* UNREADABLE: the error (the device's, or -E_IO from SQLite) */
};

struct store_scrub_config {
	uint64_t bytes_per_s;            /* the budget (storage.scrub_kb_per_s x 1024); 0: off.
					  * At most STORE_SCRUB_MAX_BYTES_PER_S. */
	struct store_dev *dev;           /* linked: the data disk */
	const struct store_super *sb;    /* linked: the regions, and the backup slot it names
					  * (read at the start of each slot's scrub) */
	struct store_db *db;             /* linked: the broker's open database (NULL: not read) */
	bool telemetry;                  /* read the TELEMETRY region (the log is in use) */
	/* linked: the read buffer, 8-aligned, at least the database's page size, the device's
	 * block, and the telemetry log's segment size (else those are skipped, counted).
	 * Used only inside store_scrub_step: between two steps it holds nothing the scrubber
	 * needs, so it may be scratch that other code uses only inside its own calls (the
	 * telemetry writer's io, for one). */
	uint8_t *buf;
	size_t buf_len;
	/* Each finding, as it is made (may be NULL). f borrowed for the call. Called from inside
	 * store_scrub_step: it must not call back into the scrubber. */
	void (*found)(void *ctx, const struct store_scrub_finding *f);
	void *ctx;                       /* linked */
};

#define STORE_SCRUB_MAX_BYTES_PER_S (UINT64_C(1) << 31)

struct store_scrub_stats {
	uint64_t passes;              /* passes completed */
	uint64_t bytes_read;          /* bytes of every read, as charged to the budget */
	uint64_t pages_checked;       /* database and backup pages read */
	uint64_t records_checked;     /* telemetry records that validated */
	uint64_t segments_checked;    /* telemetry segments walked */
	uint64_t found[STORE_SCRUB__KINDS]; /* findings by kind: bad_pages = found[BAD_PAGE]... */
	uint64_t seg_headers_skipped; /* slot headers that do not validate: not data (as tlog_scan) */
	uint64_t backups_skipped;     /* passes that left the backup slot out: held (a backup ran)
				       * or its file refused */
	uint64_t unchecked_files;     /* files read whose pages carry no checksum (reserve != 8):
				       * only read errors can be found in them */
	uint64_t skipped;             /* files or telemetry regions too large for the buffer */
	uint64_t pass_findings;       /* findings of the pass in progress */
	uint64_t last_pass_findings;  /* and of the last completed one */
	uint64_t last_pass_ns;        /* duration of the last completed pass */
};

enum store_scrub_phase { STORE_SCRUB_PH_DB, STORE_SCRUB_PH_BACKUP, STORE_SCRUB_PH_TLOG };

/* Room for the backup file's handle (the VFS's szOsFile: cksumvfs's file around the block
 * layer's; checked when the file is opened). */
#define STORE_SCRUB_FILE_WORDS 32u

/* Caller memory; the fields are the scrubber's (read stats through store_scrub_stats). */
struct store_scrub {
	struct store_scrub_config cfg;
	enum store_scrub_phase phase;
	/* the database or backup file being read */
	uint64_t page;                /* the next page; 0: its head not read yet */
	uint32_t page_size;           /* from its head */
	bool checked;                 /* its pages carry checksums */
	uint32_t region;              /* its enum store_region_kind: its extents give LBAs */
	bool bk_open, bk_held;        /* the backup file is open; backups held by the service */
	uint32_t bk_slot;             /* 1 A, 2 B: the slot open */
	/* the telemetry log */
	bool geom_ok;                 /* the region header read: g, tl_lba */
	struct store_tlog_geom g;
	uint64_t tl_lba;
	uint32_t part, idx;           /* partition; 0 its hint, 1 + k slot k */
	/* the budget, in byte-nanoseconds: one byte per second for a nanosecond is 1 */
	int64_t tokens;
	uint64_t last_ns, pass_t0_ns;
	bool started;
	struct store_scrub_stats st;
	uint64_t bk_file[STORE_SCRUB_FILE_WORDS]; /* the backup file's handle while bk_open */
};

/* Set up (cfg copied; its pointers linked): sc is new or was given to store_scrub_fini. No
 * I/O. 0 or -E_INVAL (no dev, sb or buffer, a buffer smaller than one block or not
 * 8-aligned, a budget above the maximum). */
MUST_CHECK int store_scrub_init(struct store_scrub *sc, const struct store_scrub_config *cfg);
/* Read what the budget allows since the last step (now_ns: monotonic; the first step only
 * starts the clock), continuing the pass; a pass that ends stops the step. Each finding goes
 * to cfg.found. Returns the bytes read (0 when off, or the budget is not there yet, or the
 * device is broken). */
uint64_t store_scrub_step(struct store_scrub *sc, uint64_t now_ns);
/* When (monotonic ns) the next step has something to read; UINT64_MAX when off. */
uint64_t store_scrub_due_ns(const struct store_scrub *sc);
/* hold true: the service is about to start a backup (the VFS opens one backup file at a
 * time): the backup file is closed at once, and the backup slot is left out of passes
 * (counted backups_skipped) until hold false, once the backup has ended either way. */
void store_scrub_hold_backups(struct store_scrub *sc, bool hold);
/* Close the backup file if open; the scrubber does nothing more until init. Call it before
 * the database is closed (the VFS will not go while a file is open). */
void store_scrub_fini(struct store_scrub *sc);
const struct store_scrub_stats *store_scrub_stats(const struct store_scrub *sc);
/* One log line for a finding (NUL-terminated; the length it would have), e.g.
 *   "scrub: CORRUPT page 17 of the database (LBA 34952): its checksum does not match (pass 3)"
 *   "scrub: CORRUPT telemetry record: partition 1 slot 5 sequence 1234 at segment offset 4168
 *    (LBA 901234), after 12 valid records, the rest of its segment unchecked (pass 3)"
 * A realistic line fits 200 characters; a longer one is cut by the caller's cap. */
size_t store_scrub_finding_text(const struct store_scrub_finding *f, char *out, size_t cap);
/* The figures for the periodic report (0 chars when off):
 *   "scrub pass=N bytes=B pages=P records=R bad_pages=X bad_records=Y bad_headers=Z
 *    unreadable=U last_pass_ms=D" */
size_t store_scrub_line(const struct store_scrub *sc, char *out, size_t cap);
/* The invariants of scrub.c's head: 0 or -E_CORRUPT (a bug). */
MUST_CHECK int store_scrub_check(const struct store_scrub *sc);

#endif
