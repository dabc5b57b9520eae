/* SPDX-License-Identifier: MIT
 *
 * Private to tools/disk: the facts about an image that inspect prints, verify judges and
 * restore checks before it writes (facts.c), each gathered read only through store/'s own
 * decoders and the broker's SQLite and VFS. Host code.
 */
#ifndef TOOLS_DISK_FACTS_H
#define TOOLS_DISK_FACTS_H

#include "store/db.h"
#include "store/gpt.h"
#include "tools/disk/disk.h"

/* Both GPT copies. */
struct disk_gpt_facts {
	bool loaded;                    /* store_gpt_load found a valid copy: g, verdict */
	struct store_gpt g;
	struct store_gpt_verdict verdict;
	enum store_gpt_rej primary, backup; /* each copy checked on its own: OK or why not
					     * (STORE_GPT_REJ__COUNT: unreadable) */
	uint64_t backup_lba;            /* where the backup header was looked for */
};
/* 0 or the device's error. */
MUST_CHECK int disk_gpt_facts(struct disk_image *im, struct disk_gpt_facts *out /* out */);
const char *disk_gpt_rej_text(enum store_gpt_rej r);

/* One superblock slot of the data partition the GPT names. */
struct disk_slot_fact {
	uint64_t lba;
	bool zero, valid, in_charge;
	enum store_layout_rej rej;      /* the probe's verdict */
	uint32_t version;               /* STORE_REJ_VERSION: the version found */
	struct store_super sb;          /* valid */
};
/* 0, -E_NOENT (no data partition known), or the device's error. */
MUST_CHECK int disk_slot_facts(struct disk_image *im, struct disk_slot_fact out[2] /* out */);
const char *disk_slot_text(const struct disk_slot_fact *s);

/* A file that may hold a SQLite database (DB, BACKUP_A, BACKUP_B): its extents (a disk that
 * grew has several, store/layout.h) and the header in the first one's first block. */
struct disk_sqlite_region {
	bool present;                   /* the layout has the file (a first extent with blocks) */
	uint64_t lba;                   /* the first extent's first absolute LBA: the header */
	uint64_t blocks;                /* the file's room: every extent's blocks, summed */
	uint32_t n_extents;
	int read_err;
	int err;                        /* disk_sqlite_hdr_decode's */
	bool zero;
	struct disk_sqlite_hdr hdr;
	bool too_big;                   /* the header's size (valid) is more than the room */
};
const char *disk_sqlite_region_text(const struct disk_sqlite_region *r);
/* The file's room as text: "2 MiB", or "37 MiB in 3 extents". */
void disk_sqlite_room_text(const struct disk_sqlite_region *r, uint32_t block_size, char *out, size_t cap);
/* A too_big file in words: "its header says P pages of S bytes (B bytes), more than the
 * <whose> room of R bytes (<room text>)". */
void disk_sqlite_too_big_text(const struct disk_sqlite_region *r, uint32_t block_size, const char *whose, char *out,
			      size_t cap);

#define DISK_DB_MSGS 20u
#define DISK_DB_SCHEMA_VERSION STORE_DB_SCHEMA_VERSION /* the version this build's broker opens */
#define DISK_DB_SCHEMA_OLDEST 1 /* older versions it upgrades at open (store/db.c) */

/* A backup slot (store/backup.h) as SQLite reads it: its file alone, read only. */
struct disk_backup_facts {
	uint32_t slot;                  /* 1 A, 2 B */
	struct disk_sqlite_region file; /* the slot's first block: the header as on the disk */
	bool named;                     /* the superblock names it (backup_slot) */
	uint64_t generation;            /* named: the superblock's backup_generation */
	bool opened;                    /* SQLite read it: the rest is filled */
	int open_err;                   /* opening or reading it (why) */
	int64_t page_size, pages, schema, boot_generation;
	int64_t backup_ms;              /* meta backup_ms, stamped into the copy when it completed; -1 none */
	bool check_ok;                  /* quick_check (integrity_check when full) said ok */
	int check_err;
	char first_msg[200];            /* its first complaint */
	uint32_t n_msgs;
	bool rows_ok;
	struct disk_rows rows;
	char why[256];
	/* Why the broker's restore would not use it (empty: it would): no database, a header
	 * larger than the slot's room, SQLite cannot read it, quick_check, not our schema, not a
	 * WAL-mode image on the disk. */
	char unusable[320];
};
/* Gather them for slot (1 A, 2 B). 0 (failures are in the facts) or the device's error. */
MUST_CHECK int disk_backup_facts(struct disk_image *im, uint32_t slot, bool full, struct disk_backup_facts *f /* out */);

struct disk_db_facts {
	struct disk_sqlite_region file; /* the DB region's header */
	bool wal_present;
	int wal_read_err, wal_err;      /* wal_err -E_NOENT: no WAL header (empty) */
	struct disk_wal_hdr wal;
	struct disk_sqlite_region backup[2]; /* A, B */
	bool fresh;                     /* db_state FRESH: not created yet, not opened */
	int open_err;                   /* opening or reading through SQLite (why) */
	int64_t page_size, pages, free_pages, schema, generation;
	char journal[16];
	bool checked, check_ok;
	int check_err;
	uint32_t n_msgs;                /* messages quick_check / integrity_check gave (first
					 * DISK_DB_MSGS kept) */
	char msgs[DISK_DB_MSGS][200];
	bool rows_ok;
	struct disk_rows rows;
	int64_t backup_ms;              /* meta backup_ms: a database restored from a backup carries
					 * that backup's stamp; -1 none */
	struct disk_backup_facts bk[2]; /* A, B: with_backups only */
	char why[256];
	/* Opened and read, but this build's broker would refuse it (as store_db_open does: no
	 * database where the superblock says READY, not WAL mode, another schema version);
	 * empty when it would not. quick_check is judged apart (check_ok). */
	char refusal[160];
};
/* Everything about the database, its WAL and backups; opens SQLite read only when the
 * superblock says READY (and each backup slot that holds a database header, with_backups).
 * 0 (failures are in the facts) or the device's error. */
MUST_CHECK int disk_db_facts(struct disk_image *im, bool full, uint32_t max_msgs, bool with_backups,
			     struct disk_db_facts *f /* out */);
/* "stamped as taken 2026-12-01T17:00:00.123Z" (meta backup_ms: written into a copy when its
 * backup completes, and carried on by a database restored from it), or that there is none. */
void disk_backup_when(int64_t backup_ms, char *out, size_t cap);

#endif
