/* SPDX-License-Identifier: MIT
 *
 * The database of persistent state (schema in store/db.c and docs/DURABILITY.md): the
 * device registry, the revocation list, retained messages, and persistent sessions with
 * their subscriptions, deliveries (queued, in flight, released) and inbound QoS 2
 * identifiers. It applies the storage records of store/ops.h inside transactions the
 * caller opens and commits, and iterates over everything at boot for the restore. SQL
 * lives only here; callers see records.
 *
 * Opening: the VFS (store/sqlite/vfs.h) must be registered over the database regions. A
 * fresh database (the superblock says FRESH) is created from nothing: exclusive locking,
 * page size 4096, the switch to WAL made with an in-memory journal (so no rollback journal
 * file is ever needed), then the schema. An existing one is quick_checked first: a
 * database that fails is refused (-E_CORRUPT) and never written.
 *
 * Only the core that runs the database calls this (SQLite is built single-threaded).
 * Every call returns 0 or a negative error; SQLite's own message for the last failure is
 * kept in `why` for the log.
 */
#ifndef STORE_DB_H
#define STORE_DB_H

#include "lib/compiler.h"
#include "store/ops.h"

struct sqlite3;
struct sqlite3_stmt;

/* The schema this build creates and opens (meta 'schema'); any other is refused. */
/* 2: revoked_id; 3: allowed_id; 4: messages' MQTT 5.0 properties and expiry (older
 * databases are upgraded at open) */
#define STORE_DB_SCHEMA_VERSION 5

enum store_db_stmt {
	DB_SESS_FIND, DB_SESS_PUT, DB_SESS_DEL, DB_SUB_DEL_ALL, DB_RX2_DEL_ALL, DB_DLV_UNREF_ALL,
	DB_DLV_DEL_ALL, DB_MSG_GC, DB_SUB_PUT, DB_SUB_DEL, DB_MSG_PUT, DB_DLV_PUT, DB_MSG_REF,
	DB_DLV_SENT, DB_DLV_FIND, DB_DLV_FIND_ANY, DB_DLV_REL, DB_DLV_DEL, DB_MSG_UNREF, DB_DLV_DONE,
	DB_DLV_DEL_SENT, DB_MSG_DROP_LAST,
	DB_RX2_PUT, DB_RX2_DEL, DB_RET_PUT, DB_RET_DEL, DB_SEEN,
	/* restore */
	DB_R_SESS, DB_R_SUB, DB_R_RX2, DB_R_DLV, DB_R_RET, DB_R_REV, DB_R_REVID, DB_R_ALLOW,
	DB_REV_PUT, DB_REV_DEL, DB_REVID_PUT, DB_REVID_DEL, DB_ALLOW_PUT, DB_ALLOW_DEL,
	DB__STMTS
};

enum store_db_restore_phase {
	DB_RP_SESS, DB_RP_SUB, DB_RP_RX2, DB_RP_DLV, DB_RP_RET, DB_RP_REV, DB_RP_REVID, DB_RP_ALLOW, DB_RP_DONE
};

struct store_db_stats {
	uint64_t applied, apply_failed, commits, commit_failed, checkpoints, checkpoint_pages;
	uint64_t skipped_restore; /* rows the restore could not use (orphans, missing messages) */
	uint64_t vacuums, vacuum_pages; /* incremental vacuums and the free pages they gave back */
};

struct store_db {
	struct sqlite3 *h;
	struct sqlite3_stmt *st[DB__STMTS];
	bool in_txn;
	uint32_t checkpoint_pages;    /* the WAL size (pages) that makes store_db_maintain copy */
	uint32_t wal_pages;           /* the WAL's size after the last commit (the WAL hook's) */
	int64_t (*wall_s)(void *ctx); /* registry time stamps; 0 unknown */
	void (*progress)(void *ctx);  /* may be NULL */
	void *ctx;
	/* restore iteration */
	enum store_db_restore_phase rp;
	uint64_t r_skey;              /* the session being restored */
	struct store_db_stats st_;
	char why[128];                /* the last failure, for the log */
};

struct store_db_config {
	uint32_t cache_kb;            /* page cache */
	uint32_t checkpoint_pages;    /* WAL pages that make store_db_maintain checkpoint */
	bool fresh;                   /* create from nothing (the regions' headers are zero) */
	int64_t (*wall_s)(void *ctx);
	/* Called every few thousand steps of a long statement (quick_check, a checkpoint's
	 * planning): the kernel's watchdog hears the storage core is alive. May be NULL. */
	void (*progress)(void *ctx);
	void *ctx;                    /* linked */
};

/* Open (see the head). 0, -E_CORRUPT (quick_check failed or not our schema), -E_IO,
 * -E_NOMEM. On failure everything is closed again. */
MUST_CHECK int store_db_open(struct store_db *db, const struct store_db_config *cfg);
void store_db_close(struct store_db *db);
/* PRAGMA quick_check: 0 or -E_CORRUPT (why says the first problem). */
MUST_CHECK int store_db_quick_check(struct store_db *db);
/* The meta table's value for key: 0, -E_NOENT (no such row; *v = -1), or SQLite's error
 * mapped. */
MUST_CHECK int store_db_meta(struct store_db *db, const char *key, int64_t *v /* out */);
/* The boot generation: the stored one plus one, committed before it is returned. */
MUST_CHECK int store_db_next_generation(struct store_db *db, uint64_t *gen /* out */);
/* Put the image's revoked serials in (kept: they come back at every restore). */
MUST_CHECK int store_db_revoked_put(struct store_db *db, const uint8_t *serial, size_t len);
/* Remove what nothing can reach (rows of sessions that are gone, messages nobody
 * references): in its own transaction, at boot. */
MUST_CHECK int store_db_tidy(struct store_db *db, uint64_t *removed /* out */);

MUST_CHECK int store_db_begin(struct store_db *db);
MUST_CHECK int store_db_commit(struct store_db *db);
void store_db_rollback(struct store_db *db);
/* One record inside the open transaction. 0, -E_INVAL (a kind that is not a change), or
 * the SQL failure (-E_IO, -E_NOMEM, -E_RANGE for a full disk). */
MUST_CHECK int store_db_apply(struct store_db *db, const struct store_rec *r, int64_t now_s);
/* Checkpoint when the WAL holds at least checkpoint_pages (or always when force): 0 and
 * the pages copied, or the failure. Outside a transaction. */
MUST_CHECK int store_db_maintain(struct store_db *db, bool force, uint32_t *pages /* out */);

/* The restore, one record per call: every session (SESS_PUT) followed by its
 * subscriptions (SUB_PUT), inbound QoS 2 identifiers (RX2_PUT) and deliveries (DLV_PUT with
 * state, pid and message) in queue order; then the retained messages (RET_PUT) and the
 * revoked serials (REVOKED). 0 with *r (pointers valid until the next call), -E_NOENT at
 * the end, or a failure. */
MUST_CHECK int store_db_restore_start(struct store_db *db);
MUST_CHECK int store_db_restore_next(struct store_db *db, struct store_rec *r /* out */);
void store_db_restore_stop(struct store_db *db);

/* Counts for a report. */
struct store_db_counts {
	uint64_t sessions, subs, dlvs, msgs, rx2, retained, registry, revoked;
};
MUST_CHECK int store_db_count(struct store_db *db, struct store_db_counts *out /* out */);
const struct store_db_stats *store_db_stats(const struct store_db *db);
/* The database's size in pages as this connection sees it (WAL included; cheap: one
 * header read). 0 when it cannot be read. */
uint64_t store_db_pages(struct store_db *db);

#endif
