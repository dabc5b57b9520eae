/* SPDX-License-Identifier: MIT
 *
 * store/db.h: the schema, one prepared statement per change, the restore iteration.
 * Design note.
 *  Tables (keys are the broker's: skey a persistent session, mkey a message, seq a
 *  session's delivery order; all from the boot-generation-prefixed key generator):
 *    meta(k, v)                       schema version, boot generation, creation time
 *    registry(kind, id, first_seen, last_seen, connects)
 *    revoked(serial, added), revoked_id(identity, added), allowed_id(identity, added)
 *    retained(topic, qos, payload, props, expires)
 *    session(skey, kind, id, created, expiry)  unique (kind, id); expiry: its Session
 *                                     Expiry Interval in seconds (NULL: never)
 *    sub(skey, filter, qos, subid)    qos: the options byte; subid: its Subscription
 *                                     Identifier (NULL: none)
 *    msg(mkey, qos, refs, topic, payload, props, expires)   refs: deliveries QUEUED or SENT
 *                                     naming it; props: MQTT 5.0 properties (NULL: none);
 *                                     expires: Unix seconds of its expiry (NULL: never)
 *    dlv(skey, seq, mkey, qos, state, pid, retain)   state 0 QUEUED, 1 SENT, 2 RELEASED
 *    rx2(skey, pid)
 *  Invariants (restored state is only what they allow; store_db_tidy re-establishes the
 *  first two after a crash left nothing inconsistent anyway, since every change of one
 *  record is one transaction's part):
 *   1. Every sub, dlv and rx2 row names a session row.
 *   2. msg.refs == the dlv rows with that mkey and state < 2; a msg row with refs 0 is
 *      deleted in the same transaction that dropped its last reference.
 *   3. A session's deliveries in seq order are its queue in arrival order.
 *  Nothing here is reached by peer bytes except through records the broker built; the
 *  values bound are never spliced into SQL text.
 */
#include "store/db.h"

#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"

#define SQL_NUMBER_(n) #n
#define SQL_NUMBER(n) SQL_NUMBER_(n)


/* A session's undelivered messages lose its references (before its dlv rows go). */
static const char unref_all_sql[] = "UPDATE msg SET refs=refs-(SELECT count(*) FROM dlv WHERE dlv.skey=?1 AND "
				    "dlv.mkey=msg.mkey AND dlv.state<2) WHERE mkey IN (SELECT mkey FROM dlv WHERE "
				    "skey=?1 AND state<2)";

/* A session stored again (the same key) keeps its creation time: a new expiry interval. */
static const char sess_put_sql[] = "INSERT INTO session(skey,kind,id,created,expiry) VALUES(?1,?2,?3,?4,?5) "
				   "ON CONFLICT(skey) DO UPDATE SET expiry=excluded.expiry";

/* A connection of an identity: its registry row made or counted. */
static const char seen_sql[] = "INSERT INTO registry(kind,id,first_seen,last_seen,connects) VALUES(?1,?2,?3,?3,1) "
			       "ON CONFLICT(kind,id) DO UPDATE SET last_seen=?3, connects=connects+1";

/* The restore: a session's deliveries in order, with their messages (NULL when missing). */
static const char restore_dlv_sql[] = "SELECT d.seq,d.mkey,d.qos,d.state,d.pid,d.retain,m.qos,m.topic,m.payload,"
				      "m.props,m.expires "
				      "FROM dlv d LEFT JOIN msg m ON m.mkey=d.mkey WHERE d.skey=?1 ORDER BY d.seq";

static const char *const sql[DB__STMTS] = {
	[DB_SESS_FIND] = "SELECT skey FROM session WHERE kind=?1 AND id=?2",
	[DB_SESS_PUT] = sess_put_sql,
	[DB_SESS_DEL] = "DELETE FROM session WHERE skey=?1",
	[DB_SUB_DEL_ALL] = "DELETE FROM sub WHERE skey=?1",
	[DB_RX2_DEL_ALL] = "DELETE FROM rx2 WHERE skey=?1",
	[DB_DLV_UNREF_ALL] = unref_all_sql,
	[DB_DLV_DEL_ALL] = "DELETE FROM dlv WHERE skey=?1",
	[DB_MSG_GC] = "DELETE FROM msg WHERE refs<=0",
	[DB_SUB_PUT] = "INSERT OR REPLACE INTO sub(skey,filter,qos,subid) VALUES(?1,?2,?3,?4)",
	[DB_SUB_DEL] = "DELETE FROM sub WHERE skey=?1 AND filter=?2",
	[DB_MSG_PUT] = "INSERT OR IGNORE INTO msg(mkey,qos,refs,topic,payload,props,expires) VALUES(?1,?2,0,?3,?4,?5,?6)",
	[DB_DLV_PUT] = "INSERT OR REPLACE INTO dlv(skey,seq,mkey,qos,state,pid,retain) VALUES(?1,?2,?3,?4,?6,?7,?5)",
	[DB_MSG_REF] = "UPDATE msg SET refs=refs+1 WHERE mkey=?1",
	[DB_DLV_SENT] = "UPDATE dlv SET state=1,pid=?3 WHERE skey=?1 AND seq=?2",
	[DB_DLV_FIND] = "SELECT seq FROM dlv WHERE skey=?1 AND mkey=?2 AND pid=?3 AND state=?4 ORDER BY seq LIMIT 1",
	[DB_DLV_FIND_ANY] = "SELECT seq FROM dlv WHERE skey=?1 AND mkey=?2 AND state<2 ORDER BY seq LIMIT 1",
	[DB_DLV_REL] = "UPDATE dlv SET state=2 WHERE skey=?1 AND seq=?2",
	/* an acknowledged delivery: its packet id is unique among the session's sent ones */
	[DB_DLV_DEL_SENT] = "DELETE FROM dlv WHERE skey=?1 AND mkey=?2 AND pid=?3 AND state=1",
	[DB_MSG_DROP_LAST] = "DELETE FROM msg WHERE mkey=?1 AND refs<=1",
	[DB_DLV_DEL] = "DELETE FROM dlv WHERE skey=?1 AND seq=?2",
	[DB_MSG_UNREF] = "UPDATE msg SET refs=refs-1 WHERE mkey=?1",
	[DB_DLV_DONE] = "DELETE FROM dlv WHERE skey=?1 AND pid=?2 AND state=2",
	[DB_RX2_PUT] = "INSERT OR IGNORE INTO rx2(skey,pid) VALUES(?1,?2)",
	[DB_RX2_DEL] = "DELETE FROM rx2 WHERE skey=?1 AND pid=?2",
	[DB_RET_PUT] = "INSERT OR REPLACE INTO retained(topic,qos,payload,props,expires) VALUES(?1,?2,?3,?4,?5)",
	[DB_RET_DEL] = "DELETE FROM retained WHERE topic=?1",
	[DB_SEEN] = seen_sql,
	[DB_R_SESS] = "SELECT skey,kind,id,expiry FROM session ORDER BY skey",
	[DB_R_SUB] = "SELECT filter,qos,subid FROM sub WHERE skey=?1",
	[DB_R_RX2] = "SELECT pid FROM rx2 WHERE skey=?1",
	[DB_R_DLV] = restore_dlv_sql,
	[DB_R_RET] = "SELECT topic,qos,payload,props,expires FROM retained",
	[DB_R_REV] = "SELECT serial FROM revoked",
	[DB_R_REVID] = "SELECT identity FROM revoked_id",
	[DB_REV_PUT] = "INSERT OR IGNORE INTO revoked(serial,added) VALUES(?1,?2)",
	[DB_REV_DEL] = "DELETE FROM revoked WHERE serial=?1",
	[DB_REVID_PUT] = "INSERT OR IGNORE INTO revoked_id(identity,added) VALUES(?1,?2)",
	[DB_REVID_DEL] = "DELETE FROM revoked_id WHERE identity=?1",
	[DB_R_ALLOW] = "SELECT identity FROM allowed_id",
	[DB_ALLOW_PUT] = "INSERT OR IGNORE INTO allowed_id(identity,added) VALUES(?1,?2)",
	[DB_ALLOW_DEL] = "DELETE FROM allowed_id WHERE identity=?1",
};

static const char schema[] =
	"CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID;"
	"CREATE TABLE registry(kind INTEGER NOT NULL, id BLOB NOT NULL, first_seen INTEGER, last_seen INTEGER,"
	" connects INTEGER NOT NULL, PRIMARY KEY(kind,id)) WITHOUT ROWID;"
	"CREATE TABLE revoked(serial BLOB PRIMARY KEY, added INTEGER) WITHOUT ROWID;"
	"CREATE TABLE revoked_id(identity BLOB PRIMARY KEY, added INTEGER) WITHOUT ROWID;"
	"CREATE TABLE allowed_id(identity BLOB PRIMARY KEY, added INTEGER) WITHOUT ROWID;"
	"CREATE TABLE retained(topic BLOB PRIMARY KEY, qos INTEGER NOT NULL, payload BLOB NOT NULL, props BLOB,"
	" expires INTEGER) WITHOUT ROWID;"
	"CREATE TABLE session(skey INTEGER PRIMARY KEY, kind INTEGER NOT NULL, id BLOB NOT NULL, created INTEGER,"
	" expiry INTEGER);"
	"CREATE UNIQUE INDEX session_id ON session(kind,id);"
	"CREATE TABLE sub(skey INTEGER NOT NULL, filter BLOB NOT NULL, qos INTEGER NOT NULL, subid INTEGER,"
	" PRIMARY KEY(skey,filter)) WITHOUT ROWID;"
	"CREATE TABLE msg(mkey INTEGER PRIMARY KEY, qos INTEGER NOT NULL, refs INTEGER NOT NULL,"
	" topic BLOB NOT NULL, payload BLOB NOT NULL, props BLOB, expires INTEGER);"
	"CREATE INDEX msg_unreferenced ON msg(mkey) WHERE refs<=0;"
	"CREATE TABLE dlv(skey INTEGER NOT NULL, seq INTEGER NOT NULL, mkey INTEGER NOT NULL,"
	" qos INTEGER NOT NULL, state INTEGER NOT NULL, pid INTEGER NOT NULL, retain INTEGER NOT NULL,"
	" PRIMARY KEY(skey,seq)) WITHOUT ROWID;"
	"CREATE INDEX dlv_mkey ON dlv(skey,mkey);"
	"CREATE TABLE rx2(skey INTEGER NOT NULL, pid INTEGER NOT NULL, PRIMARY KEY(skey,pid)) WITHOUT ROWID;"
	"INSERT INTO meta(k,v) VALUES('schema'," SQL_NUMBER(STORE_DB_SCHEMA_VERSION) "),('generation',0);";

/* ---- errors ----------------------------------------------------------------------------- */

static int map_rc(int rc)
{
	if (rc == SQLITE_IOERR_DATA) /* cksumvfs: a page's checksum does not match */
		return -E_CORRUPT;
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_NOMEM:
		return -E_NOMEM;
	case SQLITE_FULL:
		return -E_RANGE;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -E_CORRUPT;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
	case SQLITE_TOOBIG:
		return -E_INVAL;
	default:
		return -E_IO;
	}
}

/* Keep SQLite's words for the log; returns the mapped error. */
static int fail(struct store_db *db, int rc, const char *what)
{
	(void)fmt_snprintf(db->why, sizeof db->why, "%s: %s (%d)", what,
			   db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc), rc);
	return map_rc(rc);
}

/* Parsing is not a VM step: the progress handler does not see it, so say alive here. */
static void alive(struct store_db *db)
{
	if (db->progress)
		db->progress(db->ctx);
}

static int exec(struct store_db *db, const char *s, const char *what)
{
	int rc = sqlite3_exec(db->h, s, NULL, NULL, NULL);
	alive(db);
	return rc == SQLITE_OK ? 0 : fail(db, rc, what);
}

/* ---- statements ------------------------------------------------------------------------ */

/* A column's byte length for a 16-bit length field (topics: at most 65535 when written). */
static uint16_t col_len16(struct sqlite3_stmt *s, int col)
{
	int n = sqlite3_column_bytes(s, col);
	return n <= 0 ? 0 : n > (int)UINT16_MAX ? (uint16_t)UINT16_MAX : (uint16_t)n;
}

static struct sqlite3_stmt *stmt(struct store_db *db, enum store_db_stmt i)
{
	struct sqlite3_stmt *s = db->st[i];
	(void)sqlite3_reset(s);
	(void)sqlite3_clear_bindings(s);
	return s;
}

static void bind_u64(struct sqlite3_stmt *s, int i, uint64_t v)
{
	(void)sqlite3_bind_int64(s, i, (sqlite3_int64)v);
}

static void bind_blob(struct sqlite3_stmt *s, int i, const uint8_t *p, size_t n)
{
	/* STATIC: the statement is stepped before the caller's buffer changes. An empty
	 * value is a zero-length blob, never NULL (the columns are NOT NULL). */
	static const uint8_t none[1];
	(void)sqlite3_bind_blob(s, i, n ? p : none, (int)n, SQLITE_STATIC);
}

/* A message's MQTT 5.0 part at columns i (props) and i + 1 (expires): the properties
 * (NULL when none) and the expiry as Unix seconds, from what is left of it now (NULL: never,
 * or no wall clock to count from). */
static void bind_props(struct store_db *db, struct sqlite3_stmt *s, int i, const struct store_rec *r)
{
	if (r->props_len)
		(void)sqlite3_bind_blob(s, i, r->props, (int)r->props_len, SQLITE_STATIC);
	else
		(void)sqlite3_bind_null(s, i);
	int64_t now = db->wall_s ? db->wall_s(db->ctx) : 0;
	if (r->expiry_s && now > 0)
		(void)sqlite3_bind_int64(s, i + 1, now + (int64_t)r->expiry_s);
	else
		(void)sqlite3_bind_null(s, i + 1);
}

/* The reverse for a restored row: r's props and expiry_s (what is left, at least 1).
 * false when it has expired. */
static bool col_props(struct store_db *db, struct sqlite3_stmt *s, int i, struct store_rec *r)
{
	r->props_len = (uint16_t)MIN(sqlite3_column_bytes(s, i), (int)UINT16_MAX);
	r->props = r->props_len ? sqlite3_column_blob(s, i) : NULL;
	if (!r->props)
		r->props_len = 0;
	if (sqlite3_column_type(s, i + 1) == SQLITE_NULL)
		return true;
	int64_t at = sqlite3_column_int64(s, i + 1), now = db->wall_s ? db->wall_s(db->ctx) : 0;
	if (now <= 0)
		return true; /* no clock to judge by: kept (it cannot expire too early) */
	if (at <= now)
		return false;
	r->expiry_s = (uint32_t)MIN(at - now, (int64_t)UINT32_MAX);
	return true;
}

/* Step a statement that returns no row. */
static int run(struct store_db *db, struct sqlite3_stmt *s, const char *what)
{
	int rc = sqlite3_step(s);
	(void)sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : fail(db, rc, what);
}

static uint64_t col_u64(struct sqlite3_stmt *s, int i)
{
	return (uint64_t)sqlite3_column_int64(s, i);
}

/* ---- open and close ---------------------------------------------------------------------- */

static int pragmas(struct store_db *db, const struct store_db_config *cfg)
{
	char p[256];
	/* Exclusive before WAL: the WAL index then lives in heap memory (no shared memory). A
	 * fresh file switches to WAL through an in-memory journal, so no rollback journal is
	 * ever opened (the VFS has no file for one). */
	int err = exec(db, "PRAGMA locking_mode=EXCLUSIVE", "locking_mode");
	if (!err && cfg->fresh) {
		/* Every page of a new file reserves room for the checksum the cksumvfs layer
		 * keeps (a corrupted page is then an I/O error, not a wrong answer). This must
		 * precede the first write of page 1. */
		int reserve = STORE_VFS_RESERVE_BYTES;
		if (sqlite3_file_control(db->h, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve) != SQLITE_OK)
			err = fail(db, SQLITE_ERROR, "reserve bytes");
	}
	if (!err && cfg->fresh)
		/* auto_vacuum before the first table so freed pages can be given back
		 * (store_db_maintain's incremental vacuum; the VFS discards the tail); it follows
		 * the in-memory journal because setting it may write page 1. */
		err = exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=MEMORY; PRAGMA auto_vacuum=INCREMENTAL; "
			       "PRAGMA journal_mode=WAL", "fresh file");
	/* An existing database is never converted: check_wal refuses one that is not WAL. */
	if (!err && sqlite3_db_config(db->h, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL) != SQLITE_OK)
		err = fail(db, SQLITE_ERROR, "defensive");
	(void)fmt_snprintf(p, sizeof p,
			   "PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=0; PRAGMA cache_size=-%u;"
			   " PRAGMA temp_store=MEMORY; PRAGMA foreign_keys=OFF; PRAGMA cell_size_check=ON;"
			   " PRAGMA trusted_schema=OFF",
			   (unsigned)cfg->cache_kb);
	if (!err)
		err = exec(db, p, "pragmas");
	return err;
}

/* Is the file in WAL mode now? (journal_mode reports it.) */
static int check_wal(struct store_db *db)
{
	struct sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h, "PRAGMA journal_mode", -1, &s, NULL);
	bool wal = false;
	if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
		const unsigned char *m = sqlite3_column_text(s, 0);
		wal = m && m[0] == 'w' && m[1] == 'a' && m[2] == 'l' && m[3] == 0;
	}
	(void)sqlite3_finalize(s);
	if (!wal) {
		(void)fmt_snprintf(db->why, sizeof db->why, "the database is not in WAL mode");
		return -E_CORRUPT;
	}
	return 0;
}

/* what: the words for the log when SQLite fails. */
static int meta_get(struct store_db *db, const char *key, int64_t *v, const char *what)
{
	struct sqlite3_stmt *s = NULL;
	*v = -1;
	int rc = sqlite3_prepare_v2(db->h, "SELECT v FROM meta WHERE k=?1", -1, &s, NULL);
	if (rc != SQLITE_OK)
		return fail(db, rc, what);
	rc = sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	int err = rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -E_NOENT : fail(db, rc, what);
	if (!err)
		*v = sqlite3_column_int64(s, 0);
	(void)sqlite3_finalize(s);
	return err;
}

int store_db_meta(struct store_db *db, const char *key, int64_t *v)
{
	return meta_get(db, key, v, "meta");
}

/* *v -1 when the row is missing (refused by the caller as not ours). */
static int schema_version(struct store_db *db, int64_t *v)
{
	int err = meta_get(db, "schema", v, "not our schema");
	return err == -E_NOENT ? 0 : err;
}

static int wal_hook(void *ctx, struct sqlite3 *h, const char *name, int pages)
{
	(void)h;
	(void)name;
	struct store_db *db = ctx;
	db->wal_pages = pages > 0 ? (uint32_t)pages : 0;
	return SQLITE_OK;
}

static int db_progress(void *ctx)
{
	struct store_db *db = ctx;
	db->progress(db->ctx);
	return 0; /* never interrupt: a statement is bounded by the database's size */
}

int store_db_open(struct store_db *db, const struct store_db_config *cfg)
{
	memset(db, 0, sizeof *db);
	db->checkpoint_pages = cfg->checkpoint_pages;
	db->wall_s = cfg->wall_s;
	db->ctx = cfg->ctx;
	db->progress = cfg->progress;
	int rc = sqlite3_open_v2("urmqtt.db", &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, STORE_VFS_NAME);
	alive(db);
	int err = rc == SQLITE_OK ? 0 : fail(db, rc, "open");
	if (!err)
		(void)sqlite3_extended_result_codes(db->h, 1);
	if (!err && cfg->progress)
		sqlite3_progress_handler(db->h, 4096, db_progress, db);
	if (!err && !cfg->fresh)
		err = store_db_quick_check(db); /* before anything is written */
	if (!err)
		err = pragmas(db, cfg);
	if (!err)
		err = check_wal(db);
	if (!err && cfg->fresh) {
		err = exec(db, "BEGIN", "begin");
		if (!err)
			err = exec(db, schema, "schema");
		if (!err)
			err = exec(db, "COMMIT", "commit schema");
	}
	int64_t v = -1;
	if (!err)
		err = schema_version(db, &v);
	if (!err && v == 1) { /* version 2 added the identities revoked at run time */
		err = exec(db, "BEGIN;CREATE TABLE revoked_id(identity BLOB PRIMARY KEY, added INTEGER) WITHOUT ROWID;"
			       "UPDATE meta SET v=2 WHERE k='schema';COMMIT",
			   "schema 1 -> 2");
		if (err)
			store_db_rollback(db);
		else
			v = 2;
	}
	if (!err && v == 2) { /* version 3 added the allowlist */
		err = exec(db, "BEGIN;CREATE TABLE allowed_id(identity BLOB PRIMARY KEY, added INTEGER) WITHOUT ROWID;"
			       "UPDATE meta SET v=3 WHERE k='schema';COMMIT",
			   "schema 2 -> 3");
		if (err)
			store_db_rollback(db);
		else
			v = 3;
	}
	if (!err && v == 3) { /* version 4 keeps MQTT 5.0 messages' properties and expiry */
		err = exec(db, "BEGIN;ALTER TABLE msg ADD COLUMN props BLOB;ALTER TABLE msg ADD COLUMN expires INTEGER;"
			       "ALTER TABLE retained ADD COLUMN props BLOB;ALTER TABLE retained ADD COLUMN expires INTEGER;"
			       "UPDATE meta SET v=4 WHERE k='schema';COMMIT",
			   "schema 3 -> 4");
		if (err)
			store_db_rollback(db);
		else
			v = 4;
	}
	if (!err && v == 4) { /* version 5 keeps MQTT 5.0 Session Expiry and Subscription Identifiers */
		err = exec(db, "BEGIN;ALTER TABLE session ADD COLUMN expiry INTEGER;ALTER TABLE sub ADD COLUMN subid INTEGER;"
			       "UPDATE meta SET v=5 WHERE k='schema';COMMIT",
			   "schema 4 -> 5");
		if (err)
			store_db_rollback(db);
		else
			v = 5;
	}
	if (!err && v != STORE_DB_SCHEMA_VERSION) {
		(void)fmt_snprintf(db->why, sizeof db->why, "database schema version %ld (this image reads %d)",
				   (long)v, STORE_DB_SCHEMA_VERSION);
		err = -E_CORRUPT;
	}
	for (int i = 0; !err && i < DB__STMTS; i++) {
		rc = sqlite3_prepare_v3(db->h, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &db->st[i], NULL);
		alive(db);
		if (rc != SQLITE_OK)
			err = fail(db, rc, "prepare");
	}
	if (err) {
		char why[sizeof db->why];
		memcpy(why, db->why, sizeof why);
		store_db_close(db);
		memcpy(db->why, why, sizeof why);
		return err;
	}
	(void)sqlite3_wal_hook(db->h, wal_hook, db);
	return 0;
}

void store_db_close(struct store_db *db)
{
	for (int i = 0; i < DB__STMTS; i++)
		(void)sqlite3_finalize(db->st[i]);
	if (db->h)
		(void)sqlite3_close(db->h); /* clean: checkpoints and resets the WAL */
	memset(db, 0, offsetof(struct store_db, st_));
}

int store_db_quick_check(struct store_db *db)
{
	struct sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h, "PRAGMA quick_check(1)", -1, &s, NULL);
	if (rc != SQLITE_OK)
		return fail(db, rc, "quick_check");
	rc = sqlite3_step(s);
	int err = 0;
	if (rc != SQLITE_ROW) {
		err = fail(db, rc, "quick_check");
	} else {
		const unsigned char *m = sqlite3_column_text(s, 0);
		if (!m || m[0] != 'o' || m[1] != 'k' || m[2]) {
			/* One console line: without SQLite's "*** in database main ***" heading,
			 * control characters as spaces. */
			static const char heading[] = "*** in database main ***";
			const char *t = m ? (const char *)m : "?";
			if (!strncmp(t, heading, sizeof heading - 1))
				t += sizeof heading - 1;
			while (*t == '\n' || *t == ' ')
				t++;
			(void)fmt_snprintf(db->why, sizeof db->why, "quick_check: %.100s", t);
			for (char *c = db->why; *c; c++)
				if ((unsigned char)*c < 0x20)
					*c = ' ';
			err = -E_CORRUPT;
		}
	}
	(void)sqlite3_finalize(s);
	return err;
}

/* ---- transactions ---------------------------------------------------------------------------- */

int store_db_begin(struct store_db *db)
{
	if (db->in_txn)
		return 0;
	int err = exec(db, "BEGIN", "begin");
	db->in_txn = err == 0;
	return err;
}

int store_db_commit(struct store_db *db)
{
	if (!db->in_txn)
		return 0;
	int rc = sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL);
	if (rc == SQLITE_OK) {
		db->in_txn = false;
		db->st_.commits++;
		return 0;
	}
	db->st_.commit_failed++;
	int err = fail(db, rc, "commit");
	store_db_rollback(db);
	return err;
}

void store_db_rollback(struct store_db *db)
{
	if (sqlite3_get_autocommit(db->h) == 0)
		(void)sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
	db->in_txn = false;
}

int store_db_next_generation(struct store_db *db, uint64_t *gen)
{
	int err = exec(db, "BEGIN; UPDATE meta SET v=v+1 WHERE k='generation'", "generation");
	struct sqlite3_stmt *s = NULL;
	if (!err) {
		int rc = sqlite3_prepare_v2(db->h, "SELECT v FROM meta WHERE k='generation'", -1, &s, NULL);
		if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
			*gen = (uint64_t)sqlite3_column_int64(s, 0);
		} else {
			err = fail(db, rc == SQLITE_OK ? SQLITE_CORRUPT : rc, "generation");
		}
		(void)sqlite3_finalize(s);
	}
	if (!err)
		err = exec(db, "COMMIT", "commit generation");
	if (err)
		store_db_rollback(db);
	return err;
}

int store_db_revoked_put(struct store_db *db, const uint8_t *serial, size_t len)
{
	struct sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h, "INSERT OR IGNORE INTO revoked(serial,added) VALUES(?1,?2)", -1, &s, NULL);
	if (rc != SQLITE_OK)
		return fail(db, rc, "revoked");
	bind_blob(s, 1, serial, len);
	(void)sqlite3_bind_int64(s, 2, db->wall_s ? db->wall_s(db->ctx) : 0);
	rc = sqlite3_step(s);
	(void)sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : fail(db, rc, "revoked");
}

int store_db_tidy(struct store_db *db, uint64_t *removed)
{
	*removed = 0;
	int err = exec(db, "BEGIN", "tidy");
	static const char *const steps[] = {
		"DELETE FROM sub WHERE skey NOT IN (SELECT skey FROM session)",
		"DELETE FROM rx2 WHERE skey NOT IN (SELECT skey FROM session)",
		"DELETE FROM dlv WHERE skey NOT IN (SELECT skey FROM session)",
		"UPDATE msg SET refs=(SELECT count(*) FROM dlv WHERE dlv.mkey=msg.mkey AND dlv.state<2)",
		"DELETE FROM msg WHERE refs<=0",
	};
	for (size_t i = 0; !err && i < ARRAY_LEN(steps); i++) {
		err = exec(db, steps[i], "tidy");
		if (!err && i != 3)
			*removed += (uint64_t)sqlite3_changes(db->h);
	}
	if (!err)
		err = exec(db, "COMMIT", "commit tidy");
	if (err)
		store_db_rollback(db);
	return err;
}

/* ---- applying changes ------------------------------------------------------------------------ */

/* A session and everything of it (a SESS_DEL, or a SESS_PUT replacing another key for the
 * same identity). */
static int drop_session(struct store_db *db, uint64_t skey)
{
	static const enum store_db_stmt order[] = { DB_SUB_DEL_ALL, DB_RX2_DEL_ALL, DB_DLV_UNREF_ALL,
						    DB_DLV_DEL_ALL, DB_MSG_GC, DB_SESS_DEL };
	for (size_t i = 0; i < ARRAY_LEN(order); i++) {
		struct sqlite3_stmt *s = stmt(db, order[i]);
		if (order[i] != DB_MSG_GC)
			bind_u64(s, 1, skey);
		int err = run(db, s, "drop session");
		if (err)
			return err;
	}
	return 0;
}

/* The seq of the oldest delivery of (skey, mkey) with this pid and state, else (a row the
 * restore had to re-queue when the in-flight window shrank) of any state before RELEASED;
 * 0 if none. */
static int find_dlv(struct store_db *db, uint64_t skey, uint64_t mkey, uint16_t pid, int state, uint64_t *seq)
{
	*seq = 0;
	for (int pass = 0; pass < 2 && !*seq; pass++) {
		struct sqlite3_stmt *s = stmt(db, pass ? DB_DLV_FIND_ANY : DB_DLV_FIND);
		bind_u64(s, 1, skey);
		bind_u64(s, 2, mkey);
		if (!pass) {
			(void)sqlite3_bind_int(s, 3, pid);
			(void)sqlite3_bind_int(s, 4, state);
		}
		int rc = sqlite3_step(s);
		*seq = rc == SQLITE_ROW ? col_u64(s, 0) : 0;
		(void)sqlite3_reset(s);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			return fail(db, rc, "find delivery");
	}
	return 0;
}

/* The delivery's message is no longer needed by it (invariant 2). */
static int unref_msg(struct store_db *db, uint64_t mkey)
{
	/* The last reference (the common case): one statement drops the message. */
	struct sqlite3_stmt *s = stmt(db, DB_MSG_DROP_LAST);
	bind_u64(s, 1, mkey);
	int err = run(db, s, "drop message");
	if (err || sqlite3_changes(db->h) > 0)
		return err;
	s = stmt(db, DB_MSG_UNREF);
	bind_u64(s, 1, mkey);
	return run(db, s, "unref message");
}

/* A delivery (skey, seq) changes: to SENT with pid, RELEASED, or deleted. */
static int dlv_change(struct store_db *db, enum store_db_stmt what, uint64_t skey, uint64_t seq, uint16_t pid)
{
	struct sqlite3_stmt *s = stmt(db, what);
	bind_u64(s, 1, skey);
	bind_u64(s, 2, seq);
	if (what == DB_DLV_SENT)
		(void)sqlite3_bind_int(s, 3, pid);
	return run(db, s, "delivery");
}

static int apply_dlv(struct store_db *db, const struct store_rec *r)
{
	uint64_t seq = 0;
	int err;
	switch (r->kind) {
	case STORE_REC_DLV_SENT: /* the oldest queued copy of that message is the one sent */
		err = find_dlv(db, r->skey, r->mkey, 0, STORE_DLV_QUEUED, &seq);
		return err || !seq ? err : dlv_change(db, DB_DLV_SENT, r->skey, seq, r->pid);
	case STORE_REC_DLV_REC:
		err = find_dlv(db, r->skey, r->mkey, r->pid, STORE_DLV_SENT, &seq);
		if (!err && seq)
			err = dlv_change(db, DB_DLV_REL, r->skey, seq, 0);
		return err || !seq ? err : unref_msg(db, r->mkey);
	case STORE_REC_DLV_DEL: /* acknowledged (SENT, its pid) or dropped from the queue (pid 0) */
		if (r->pid) {
			struct sqlite3_stmt *s = stmt(db, DB_DLV_DEL_SENT);
			bind_u64(s, 1, r->skey);
			bind_u64(s, 2, r->mkey);
			(void)sqlite3_bind_int(s, 3, r->pid);
			err = run(db, s, "delivery");
			return err || sqlite3_changes(db->h) == 0 ? err : unref_msg(db, r->mkey);
		}
		err = find_dlv(db, r->skey, r->mkey, 0, STORE_DLV_QUEUED, &seq);
		if (!err && seq)
			err = dlv_change(db, DB_DLV_DEL, r->skey, seq, 0);
		return err || !seq ? err : unref_msg(db, r->mkey);
	default: {
		struct sqlite3_stmt *s = stmt(db, DB_DLV_DONE);
		bind_u64(s, 1, r->skey);
		(void)sqlite3_bind_int(s, 2, r->pid);
		return run(db, s, "delivery done");
	}
	}
}

int store_db_apply(struct store_db *db, const struct store_rec *r, int64_t now_s)
{
	struct sqlite3_stmt *s;
	int err = 0;
	switch (r->kind) {
	case STORE_REC_SESS_PUT: {
		s = stmt(db, DB_SESS_FIND);
		(void)sqlite3_bind_int(s, 1, r->id_kind);
		bind_blob(s, 2, r->id, r->id_len);
		int rc = sqlite3_step(s);
		uint64_t old = rc == SQLITE_ROW ? col_u64(s, 0) : 0;
		(void)sqlite3_reset(s);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			err = fail(db, rc, "find session");
		if (!err && old && old != r->skey) /* a SESS_DEL lost with a crash: replace it */
			err = drop_session(db, old);
		if (err)
			break;
		s = stmt(db, DB_SESS_PUT);
		bind_u64(s, 1, r->skey);
		(void)sqlite3_bind_int(s, 2, r->id_kind);
		bind_blob(s, 3, r->id, r->id_len);
		(void)sqlite3_bind_int64(s, 4, now_s);
		if (r->expiry_s && r->expiry_s != UINT32_MAX)
			(void)sqlite3_bind_int64(s, 5, r->expiry_s);
		else
			(void)sqlite3_bind_null(s, 5); /* never */
		err = run(db, s, "session");
		break;
	}
	case STORE_REC_SESS_DEL:
		err = drop_session(db, r->skey);
		break;
	case STORE_REC_SUB_PUT:
	case STORE_REC_SUB_DEL:
		s = stmt(db, r->kind == STORE_REC_SUB_PUT ? DB_SUB_PUT : DB_SUB_DEL);
		bind_u64(s, 1, r->skey);
		bind_blob(s, 2, r->topic, r->topic_len);
		if (r->kind == STORE_REC_SUB_PUT) {
			(void)sqlite3_bind_int(s, 3, r->qos);
			if (r->sub_id)
				(void)sqlite3_bind_int64(s, 4, r->sub_id);
			else
				(void)sqlite3_bind_null(s, 4);
		}
		err = run(db, s, "subscription");
		break;
	case STORE_REC_MSG_PUT:
		s = stmt(db, DB_MSG_PUT);
		bind_u64(s, 1, r->mkey);
		(void)sqlite3_bind_int(s, 2, r->qos);
		bind_blob(s, 3, r->topic, r->topic_len);
		bind_blob(s, 4, r->payload, r->payload_len);
		bind_props(db, s, 5, r);
		err = run(db, s, "message");
		break;
	case STORE_REC_DLV_PUT:
		s = stmt(db, DB_DLV_PUT);
		bind_u64(s, 1, r->skey);
		bind_u64(s, 2, r->seq);
		bind_u64(s, 3, r->mkey);
		(void)sqlite3_bind_int(s, 4, r->qos);
		(void)sqlite3_bind_int(s, 5, r->retain);
		(void)sqlite3_bind_int(s, 6, r->state); /* queued, or sent already (with its pid) */
		(void)sqlite3_bind_int(s, 7, r->pid);
		err = run(db, s, "delivery");
		if (!err) {
			s = stmt(db, DB_MSG_REF);
			bind_u64(s, 1, r->mkey);
			err = run(db, s, "ref message");
		}
		break;
	case STORE_REC_DLV_SENT:
	case STORE_REC_DLV_REC:
	case STORE_REC_DLV_DEL:
	case STORE_REC_DLV_DONE:
		err = apply_dlv(db, r);
		break;
	case STORE_REC_RX2_PUT:
	case STORE_REC_RX2_DEL:
		s = stmt(db, r->kind == STORE_REC_RX2_PUT ? DB_RX2_PUT : DB_RX2_DEL);
		bind_u64(s, 1, r->skey);
		(void)sqlite3_bind_int(s, 2, r->pid);
		err = run(db, s, "qos2 identifier");
		break;
	case STORE_REC_RET_PUT:
		s = stmt(db, DB_RET_PUT);
		bind_blob(s, 1, r->topic, r->topic_len);
		(void)sqlite3_bind_int(s, 2, r->qos);
		bind_blob(s, 3, r->payload, r->payload_len);
		bind_props(db, s, 4, r);
		err = run(db, s, "retained");
		break;
	case STORE_REC_RET_DEL:
		s = stmt(db, DB_RET_DEL);
		bind_blob(s, 1, r->topic, r->topic_len);
		err = run(db, s, "retained");
		break;
	case STORE_REC_REV_PUT:
	case STORE_REC_REV_DEL: {
		bool put = r->kind == STORE_REC_REV_PUT;
		s = stmt(db, r->id_kind ? (put ? DB_REVID_PUT : DB_REVID_DEL) : (put ? DB_REV_PUT : DB_REV_DEL));
		bind_blob(s, 1, r->id, r->id_len);
		if (put)
			(void)sqlite3_bind_int64(s, 2, now_s);
		err = run(db, s, "revocation");
		break;
	}
	case STORE_REC_ALLOW_PUT:
	case STORE_REC_ALLOW_DEL: {
		bool put = r->kind == STORE_REC_ALLOW_PUT;
		s = stmt(db, put ? DB_ALLOW_PUT : DB_ALLOW_DEL);
		bind_blob(s, 1, r->id, r->id_len);
		if (put)
			(void)sqlite3_bind_int64(s, 2, now_s);
		err = run(db, s, "allowlist");
		break;
	}
	case STORE_REC_SEEN:
		s = stmt(db, DB_SEEN);
		(void)sqlite3_bind_int(s, 1, r->id_kind);
		bind_blob(s, 2, r->id, r->id_len);
		(void)sqlite3_bind_int64(s, 3, now_s);
		err = run(db, s, "registry");
		break;
	default:
		err = -E_INVAL;
		break;
	}
	if (err)
		db->st_.apply_failed++;
	else
		db->st_.applied++;
	return err;
}

/* Give free pages back: with more than VACUUM_FREE_PAGES on the freelist, move pages into
 * the holes and truncate the file (the VFS hands the tail back to the device). */
#define VACUUM_FREE_PAGES 256
static int vacuum(struct store_db *db)
{
	struct sqlite3_stmt *s = NULL;
	uint64_t free_pages = 0;
	if (sqlite3_prepare_v2(db->h, "PRAGMA freelist_count", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		free_pages = col_u64(s, 0);
	(void)sqlite3_finalize(s);
	if (free_pages <= VACUUM_FREE_PAGES)
		return 0;
	int err = exec(db, "PRAGMA incremental_vacuum", "incremental vacuum");
	if (!err) {
		db->st_.vacuums++;
		db->st_.vacuum_pages += free_pages;
	}
	return err;
}

int store_db_maintain(struct store_db *db, bool force, uint32_t *pages)
{
	*pages = 0;
	if (db->in_txn || (!force && db->wal_pages < db->checkpoint_pages))
		return 0;
	int log = 0, done = 0;
	int rc = sqlite3_wal_checkpoint_v2(db->h, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
	if (rc != SQLITE_OK)
		return fail(db, rc, "checkpoint");
	*pages = done > 0 ? (uint32_t)done : 0;
	db->st_.checkpoints++;
	db->st_.checkpoint_pages += *pages;
	db->wal_pages = 0; /* the next writer starts the WAL over */
	return vacuum(db);
}

/* ---- restore -------------------------------------------------------------------------------- */

int store_db_restore_start(struct store_db *db)
{
	(void)stmt(db, DB_R_SESS);
	db->rp = DB_RP_SESS;
	db->r_skey = 0;
	return 0;
}

void store_db_restore_stop(struct store_db *db)
{
	for (int i = DB_R_SESS; i <= DB_R_ALLOW; i++)
		(void)sqlite3_reset(db->st[i]);
	db->rp = DB_RP_DONE;
}

static void next_session(struct store_db *db)
{
	db->rp = DB_RP_SESS;
}

int store_db_restore_next(struct store_db *db, struct store_rec *r)
{
	memset(r, 0, sizeof *r);
	for (;;) {
		struct sqlite3_stmt *s;
		int rc;
		switch (db->rp) {
		case DB_RP_SESS:
			s = db->st[DB_R_SESS];
			rc = sqlite3_step(s);
			if (rc == SQLITE_DONE) {
				(void)stmt(db, DB_R_RET);
				db->rp = DB_RP_RET;
				continue;
			}
			if (rc != SQLITE_ROW)
				return fail(db, rc, "restore sessions");
			db->r_skey = col_u64(s, 0);
			r->kind = STORE_REC_SESS_PUT;
			r->skey = db->r_skey;
			r->id_kind = (uint8_t)(sqlite3_column_int(s, 1) != 0);
			r->id = sqlite3_column_blob(s, 2);
			r->id_len = (uint16_t)MIN(sqlite3_column_bytes(s, 2), 256);
			r->expiry_s = sqlite3_column_type(s, 3) == SQLITE_NULL
					      ? UINT32_MAX
					      : (uint32_t)MAX(MIN(sqlite3_column_int64(s, 3), (int64_t)UINT32_MAX), 1);
			for (int i = DB_R_SUB; i <= DB_R_DLV; i++)
				bind_u64(stmt(db, (enum store_db_stmt)i), 1, db->r_skey);
			db->rp = DB_RP_SUB;
			if (!r->id_len || r->id_len > 255) {
				db->st_.skipped_restore++;
				db->rp = DB_RP_SESS; /* unusable: skip the session and its rows */
				continue;
			}
			return 0;
		case DB_RP_SUB:
			s = db->st[DB_R_SUB];
			rc = sqlite3_step(s);
			if (rc == SQLITE_DONE) {
				db->rp = DB_RP_RX2;
				continue;
			}
			if (rc != SQLITE_ROW)
				return fail(db, rc, "restore subscriptions");
			r->kind = STORE_REC_SUB_PUT;
			r->skey = db->r_skey;
			r->topic = sqlite3_column_blob(s, 0);
			r->topic_len = col_len16(s, 0);
			r->qos = (uint8_t)MIN(sqlite3_column_int(s, 1), 0xff); /* options included (5.0) */
			r->sub_id = (uint32_t)MAX(MIN(sqlite3_column_int64(s, 2), (int64_t)UINT32_MAX), 0);
			return 0;
		case DB_RP_RX2:
			s = db->st[DB_R_RX2];
			rc = sqlite3_step(s);
			if (rc == SQLITE_DONE) {
				db->rp = DB_RP_DLV;
				continue;
			}
			if (rc != SQLITE_ROW)
				return fail(db, rc, "restore qos2 identifiers");
			r->kind = STORE_REC_RX2_PUT;
			r->skey = db->r_skey;
			r->pid = (uint16_t)sqlite3_column_int(s, 0);
			return 0;
		case DB_RP_DLV:
			s = db->st[DB_R_DLV];
			rc = sqlite3_step(s);
			if (rc == SQLITE_DONE) {
				next_session(db);
				continue;
			}
			if (rc != SQLITE_ROW)
				return fail(db, rc, "restore deliveries");
			r->kind = STORE_REC_DLV_PUT;
			r->skey = db->r_skey;
			r->seq = col_u64(s, 0);
			r->mkey = col_u64(s, 1);
			r->qos = (uint8_t)MIN(sqlite3_column_int(s, 2), 3);
			r->state = (uint8_t)MIN(sqlite3_column_int(s, 3), 3);
			r->pid = (uint16_t)sqlite3_column_int(s, 4);
			r->retain = (uint8_t)(sqlite3_column_int(s, 5) != 0);
			if (r->state != STORE_DLV_RELEASED) {
				if (sqlite3_column_type(s, 7) == SQLITE_NULL) { /* its message is gone */
					db->st_.skipped_restore++;
					continue;
				}
				r->msg_qos = (uint8_t)MIN(sqlite3_column_int(s, 6), 3);
				r->topic = sqlite3_column_blob(s, 7);
				r->topic_len = col_len16(s, 7);
				r->payload = sqlite3_column_blob(s, 8);
				r->payload_len = (uint32_t)sqlite3_column_bytes(s, 8);
				if (!col_props(db, s, 9, r) && r->state == STORE_DLV_QUEUED) {
					db->st_.skipped_restore++; /* expired before it was ever sent */
					continue;
				}
			}
			return 0;
		case DB_RP_RET:
			s = db->st[DB_R_RET];
			rc = sqlite3_step(s);
			if (rc == SQLITE_DONE) {
				(void)stmt(db, DB_R_REV);
				db->rp = DB_RP_REV;
				continue;
			}
			if (rc != SQLITE_ROW)
				return fail(db, rc, "restore retained");
			r->kind = STORE_REC_RET_PUT;
			r->topic = sqlite3_column_blob(s, 0);
			r->topic_len = col_len16(s, 0);
			r->qos = (uint8_t)MIN(sqlite3_column_int(s, 1), 3);
			r->payload = sqlite3_column_blob(s, 2);
			r->payload_len = (uint32_t)sqlite3_column_bytes(s, 2);
			if (!col_props(db, s, 3, r)) {
				db->st_.skipped_restore++; /* expired: never sent again */
				continue;
			}
			return 0;
		case DB_RP_REV:
		case DB_RP_REVID:
			s = db->st[db->rp == DB_RP_REV ? DB_R_REV : DB_R_REVID];
			rc = sqlite3_step(s);
			if (rc == SQLITE_DONE && db->rp == DB_RP_REV) {
				(void)stmt(db, DB_R_REVID);
				db->rp = DB_RP_REVID;
				continue;
			}
			if (rc == SQLITE_DONE) {
				(void)stmt(db, DB_R_ALLOW);
				db->rp = DB_RP_ALLOW;
				continue;
			}
			if (rc != SQLITE_ROW)
				return fail(db, rc, "restore revocations");
			r->kind = STORE_REC_REVOKED;
			r->id_kind = db->rp == DB_RP_REVID ? 1u : 0u;
			r->id = sqlite3_column_blob(s, 0);
			r->id_len = (uint16_t)MIN(sqlite3_column_bytes(s, 0), 255);
			return 0;
		case DB_RP_ALLOW:
			s = db->st[DB_R_ALLOW];
			rc = sqlite3_step(s);
			if (rc == SQLITE_DONE) {
				db->rp = DB_RP_DONE;
				continue;
			}
			if (rc != SQLITE_ROW)
				return fail(db, rc, "restore the allowlist");
			r->kind = STORE_REC_ALLOWED;
			r->id = sqlite3_column_blob(s, 0);
			r->id_len = (uint16_t)MIN(sqlite3_column_bytes(s, 0), 255);
			return 0;
		default:
			return -E_NOENT;
		}
	}
}

int store_db_count(struct store_db *db, struct store_db_counts *out)
{
	memset(out, 0, sizeof *out);
	struct sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h,
				    "SELECT (SELECT count(*) FROM session),(SELECT count(*) FROM sub),"
				    "(SELECT count(*) FROM dlv),(SELECT count(*) FROM msg),(SELECT count(*) FROM rx2),"
				    "(SELECT count(*) FROM retained),(SELECT count(*) FROM registry),"
				    "(SELECT count(*) FROM revoked)",
				    -1, &s, NULL);
	if (rc != SQLITE_OK)
		return fail(db, rc, "count");
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		uint64_t *v[] = { &out->sessions, &out->subs, &out->dlvs, &out->msgs, &out->rx2, &out->retained,
				  &out->registry, &out->revoked };
		for (int i = 0; i < 8; i++)
			*v[i] = col_u64(s, i);
	}
	(void)sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 0 : fail(db, rc, "count");
}

uint64_t store_db_pages(struct store_db *db)
{
	struct sqlite3_stmt *s = NULL;
	uint64_t pages = 0;
	if (sqlite3_prepare_v2(db->h, "PRAGMA page_count", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		pages = col_u64(s, 0);
	(void)sqlite3_finalize(s);
	return pages;
}

const struct store_db_stats *store_db_stats(const struct store_db *db)
{
	return &db->st_;
}
