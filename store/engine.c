/* SPDX-License-Identifier: MIT
 *
 * store/engine.h.
 * Design note.
 *  States: RESTORING -(every record sent, RESTORE_END queued to every data core)->
 *          SERVING -(a commit or a record failed on a broken device)-> FAILED.
 *  A batch: the first record after a commit opens a transaction (BEGIN) — a telemetry
 *  record goes to the log's buffer instead (store/tlog.h) — ; records are applied as they
 *  come; a barrier joins the batch's answer list; the batch commits when
 *  batch_ops records are in it or batch_ms passed since it opened (or at once when only
 *  barriers wait and nothing is open: what they cover is committed already); and at once
 *  when a barrier waits and nothing is queued behind it (the pass saw every record that
 *  had arrived: holding the commit would only hold acknowledgements).
 *  Invariants (store_engine_check):
 *   1. in_txn iff the database has a transaction open; tlog_open iff telemetry was
 *      appended since the last write-out (then a log is attached); the batch is open iff
 *      either; answers[] holds only barriers that arrived while it was open.
 *   2. dirty[src] is set iff src sent a record since its last barrier that is not known
 *      committed; lost[src] iff one of those was lost (a failed commit or record): the next
 *      barrier of src is answered "not stored" and clears it.
 *   3. Every barrier is answered exactly once (answers[] at commit, or at once).
 *   4. Everything sent to a data core goes through out[dst] while it is not empty (order).
 */
#include "store/engine.h"

#include "lib/align.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "lib/msgq.h"
#include "store/tlq.h"

#define KEY_GEN_SHIFT 40u
#define MAX_ANSWERS 65536u /* barriers in one batch (the data cores' held acks bound them) */

struct answer {
	uint32_t origin, ticket;
	bool ok; /* false: its source had lost records */
};

struct store_engine {
	struct store_engine_config cfg;
	struct store_engine_port port;
	struct store_db *db;
	uint64_t gen;
	/* input */
	struct store_asm in[STORE_ENGINE_MAX_DATA];
	struct msgq local;
	uint8_t *scratch;          /* max_record bytes: a record or a local message */
	/* the batch: a database transaction and/or telemetry appended since the last write-out */
	uint64_t txn_start_us;
	struct store_tlog *tlog;   /* NULL: no telemetry log */
	struct store_tlq_runner *tlq; /* NULL: no telemetry queries */
	struct store_dev *tlog_dev;
	uint64_t tlog_start_us, retain_us;
	uint64_t batch_bytes;      /* database record bytes in the open batch */
	struct answer *answers;    /* MAX_ANSWERS */
	/* output */
	struct msgq out[STORE_ENGINE_MAX_DATA];
	uint8_t *part;             /* payload_max bytes */
	/* restore: the record being sent (copied, with its destinations) */
	uint8_t *pending;          /* max_record bytes */
	uint64_t restore_t0;
	struct store_engine_stats st;
	/* the narrow fields last (no padding between the wide ones) */
	enum store_engine_state state;
	uint32_t n_batch;
	uint32_t n_answers;
	uint32_t pending_len;
	int32_t pending_dst;       /* a data core, -1 all, -2 none */
	uint32_t cur_home;
	bool in_txn, tlog_open, restore_done;
	bool dirty[STORE_ENGINE_MAX_DATA], lost[STORE_ENGINE_MAX_DATA];
};

static bool cfg_ok(const struct store_engine_config *c)
{
	return c->n_data >= 1 && c->n_data <= STORE_ENGINE_MAX_DATA && c->payload_max >= 64u &&
	       c->max_record >= STORE_REC_HDR + 255u && c->max_record <= (1u << 28) &&
	       c->out_bytes >= 4u * c->payload_max && c->batch_ops >= 1u && c->lag_commit_ms >= 1u;
}

size_t store_engine_mem_size(const struct store_engine_config *cfg)
{
	if (!cfg || !cfg_ok(cfg))
		return 0;
	return align8(sizeof(struct store_engine)) + (size_t)cfg->n_data * align8(cfg->max_record) +
	       align8(cfg->local_bytes) + 2u * align8(cfg->max_record) + align8(MAX_ANSWERS * sizeof(struct answer)) +
	       (size_t)cfg->n_data * align8(cfg->out_bytes) + align8(cfg->payload_max);
}

static void say(struct store_engine *e, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void say(struct store_engine *e, const char *fmt, ...)
{
	char line[200];
	va_list ap;
	if (!e->port.log)
		return;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	e->port.log(e->port.ctx, line);
}

static uint64_t now_us(const struct store_engine *e)
{
	return e->port.now_us(e->port.ctx);
}

/* A batch is open while a transaction is or telemetry waits for its write-out. */
static bool batch_open(const struct store_engine *e)
{
	return e->in_txn || e->tlog_open;
}

/* ---- output -------------------------------------------------------------------------- */

/* One message to dst: straight out while nothing waits, else behind (invariant 4). */
static int emit(struct store_engine *e, uint32_t dst, uint16_t kind, const void *p, uint32_t n)
{
	struct msgq *q = &e->out[dst];
	if (msgq_empty(q) && e->port.send(e->port.ctx, dst, kind, p, n) == 0)
		return 0;
	e->st.out_waited++;
	return msgq_put(q, kind, p, n, NULL, 0);
}

/* Out-queue bytes a record of n bytes takes in the worst case. */
static uint64_t record_room(const struct store_engine *e, uint32_t n)
{
	if (n <= e->cfg.payload_max)
		return msgq_entry_size(n);
	uint64_t rest = n - (e->cfg.payload_max - STORE_PART_HDR);
	return (uint64_t)n + STORE_PART_HDR + (2u + rest / e->cfg.payload_max) * MSGQ_HDR;
}

/* A restored record to dst, whole or in parts; the caller checked the room. */
static void emit_record(struct store_engine *e, uint32_t dst, const uint8_t *rec, uint32_t n)
{
	if (n <= e->cfg.payload_max) {
		(void)emit(e, dst, STORE_K_RESTORED, rec, n);
		return;
	}
	uint32_t first = e->cfg.payload_max - STORE_PART_HDR;
	st_le32(e->part, n);
	memcpy(e->part + STORE_PART_HDR, rec, first);
	(void)emit(e, dst, STORE_K_RESTORED_HEAD, e->part, e->cfg.payload_max);
	for (uint32_t off = first; off < n; off += e->cfg.payload_max)
		(void)emit(e, dst, STORE_K_RESTORED_MORE, rec + off, MIN(e->cfg.payload_max, n - off));
}

static bool out_room(const struct store_engine *e, uint32_t dst, uint64_t bytes)
{
	return e->out[dst].used + bytes <= e->out[dst].cap;
}

/* Send what waits, to every data core. */
static uint32_t flush_out(struct store_engine *e)
{
	uint32_t waiting = 0;
	uint16_t kind;
	uint32_t len;
	for (uint32_t d = 0; d < e->cfg.n_data; d++) {
		struct msgq *q = &e->out[d];
		while (msgq_front(q, &kind, e->part, e->cfg.payload_max, &len) == 0 &&
		       e->port.send(e->port.ctx, d, kind, e->part, len) == 0)
			msgq_pop(q);
		waiting += q->n;
	}
	return waiting;
}

static void send_lag(struct store_engine *e, bool lagging)
{
	if (e->st.lagging == lagging)
		return;
	e->st.lagging = lagging;
	uint8_t m[4];
	st_le32(m, lagging ? 1u : 0u);
	for (uint32_t d = 0; d < e->cfg.n_data; d++)
		if (emit(e, d, STORE_K_LAG, m, sizeof m))
			e->st.lost_answers++;
}

/* ---- answers ---------------------------------------------------------------------------- */

/* The answers of one batch, grouped by origin, as many per DONE message as fit. */
static void send_answers(struct store_engine *e, const struct answer *a, uint32_t n, bool committed)
{
	uint32_t per = e->cfg.payload_max / STORE_DONE_ENT;
	for (uint32_t d = 0; d < e->cfg.n_data; d++) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < n; i++) {
			if (a[i].origin != d)
				continue;
			bool ok = committed && a[i].ok;
			st_le32(e->part + (size_t)k * STORE_DONE_ENT, a[i].ticket);
			st_le32(e->part + (size_t)k * STORE_DONE_ENT + 4, ok ? 1u : 0u);
			if (ok)
				e->st.answered_ok++;
			else
				e->st.answered_fail++;
			if (++k == per || i + 1 == n) {
				/* room: out_bytes is sized for every held acknowledgement (invariant 3) */
				if (emit(e, d, STORE_K_DONE, e->part, k * STORE_DONE_ENT))
					e->st.lost_answers += k;
				k = 0;
			}
		}
		if (k && emit(e, d, STORE_K_DONE, e->part, k * STORE_DONE_ENT))
			e->st.lost_answers += k;
	}
}

static void lat_note(struct store_engine *e, uint64_t us, bool tlog)
{
	uint32_t b = 0;
	while (b + 1 < STORE_ENGINE_LAT_BUCKETS && us >= (UINT64_C(1) << b))
		b++;
	e->st.lat[b]++;
	if (tlog)
		e->st.tlog_lat[b]++;
	if (us > e->st.commit_us_max)
		e->st.commit_us_max = us;
}

static uint64_t hist_pct(const uint64_t *h, uint32_t p)
{
	uint64_t total = 0, seen = 0;
	for (uint32_t b = 0; b < STORE_ENGINE_LAT_BUCKETS; b++)
		total += h[b];
	if (!total)
		return 0;
	uint64_t want = (total * MIN(p, 100u) + 99u) / 100u;
	for (uint32_t b = 0; b < STORE_ENGINE_LAT_BUCKETS; b++) {
		seen += h[b];
		if (seen >= want && seen)
			return UINT64_C(1) << b;
	}
	return UINT64_C(1) << (STORE_ENGINE_LAT_BUCKETS - 1);
}

uint64_t store_engine_commit_us(const struct store_engine *e, uint32_t p)
{
	return hist_pct(e->st.lat, p);
}

uint64_t store_engine_tlog_us(const struct store_engine *e, uint32_t p)
{
	return hist_pct(e->st.tlog_lat, p);
}

static void fail_state(struct store_engine *e, const char *what)
{
	if (e->state == STORE_ENG_FAILED)
		return;
	e->state = STORE_ENG_FAILED;
	say(e, "FAILED: %s (%s); from now on every acknowledgement that needs storage is refused and "
	       "new connections wait",
	    what, e->db->why);
	send_lag(e, true);
}

/* Commit the open batch (if any) and answer its barriers: the telemetry written out first,
 * then the transaction, whose commit's FLUSH makes both durable (a batch of telemetry alone
 * flushes the device itself). */
static void commit(struct store_engine *e)
{
	if (!batch_open(e))
		return;
	uint64_t t0 = now_us(e);
	int err = 0;
	bool tlog = e->tlog_open;
	if (e->tlog_open) {
		err = store_tlog_write_out(e->tlog);
		e->tlog_open = false;
		if (err)
			say(e, "the telemetry write-out failed (%s)", err_name(err));
	}
	if (e->in_txn) {
		int db_err = store_db_commit(e->db); /* committed even after a failed write-out */
		err = err ? err : db_err;
	} else if (!err) {
		err = store_dev_flush(e->tlog_dev);
	}
	uint64_t dt = now_us(e) - t0;
	e->in_txn = false;
	lat_note(e, dt, tlog);
	if (e->n_batch > e->st.batch_ops_max)
		e->st.batch_ops_max = e->n_batch;
	if (err) {
		e->st.commit_failed++;
		for (uint32_t s = 0; s < e->cfg.n_data; s++)
			if (e->dirty[s])
				e->lost[s] = true; /* invariant 2 */
		say(e, "commit of %u records failed (%s): %s", (unsigned)e->n_batch, err_name(err), e->db->why);
		if (err == -E_IO || err == -E_CORRUPT || err == -E_TIMEOUT || err == -E_CLOSED)
			fail_state(e, "the database could not commit");
	} else {
		e->st.commits++;
		for (uint32_t s = 0; s < e->cfg.n_data; s++)
			e->dirty[s] = false;
	}
	send_answers(e, e->answers, e->n_answers, err == 0);
	e->n_answers = 0;
	e->n_batch = 0;
	e->batch_bytes = 0;
	bool slow = dt > (uint64_t)e->cfg.lag_commit_ms * 1000u;
	if (slow != e->st.lagging && (slow || dt * 2u < (uint64_t)e->cfg.lag_commit_ms * 1000u) &&
	    e->state != STORE_ENG_FAILED) {
		if (slow)
			say(e, "a commit took %lu ms (storage.lag_commit_ms %u): lagging", (unsigned long)(dt / 1000u),
			    (unsigned)e->cfg.lag_commit_ms);
		send_lag(e, slow);
	}
	/* Checkpoint while nothing waits: copying the WAL into the database is the long
	 * write of the storage core, so it happens between batches. */
	uint32_t pages = 0;
	uint64_t c0 = now_us(e);
	if (!err && store_db_maintain(e->db, false, &pages) == 0 && pages) {
		uint64_t cdt = now_us(e) - c0;
		e->st.checkpoints++;
		e->st.checkpoint_pages += pages;
		if (cdt > e->st.checkpoint_us_max)
			e->st.checkpoint_us_max = cdt;
	}
}

/* ---- input ------------------------------------------------------------------------------- */

/* A telemetry record into the log's buffer of src's partition; a full buffer is written out
 * (the batch commits) first. Its wall-clock time: now, less its age on this clock (data
 * cores and this core share the monotonic clock). */
static void apply_tlog(struct store_engine *e, uint32_t src, const struct store_rec *r)
{
	if (!e->tlog) {
		e->st.tlog_ignored++;
		return;
	}
	uint64_t now = now_us(e), at_us = r->seq / 1000u;
	int64_t wall = e->port.wall_ms ? e->port.wall_ms(e->port.ctx) : 0;
	if (wall > 0 && at_us <= now)
		wall -= (int64_t)((now - at_us) / 1000u);
	const struct store_tlog_rec t = {
		.wall_ms = wall, .mono_ns = r->seq, .qos = r->qos, .id_kind = r->id_kind, .id = r->id,
		.id_len = (uint8_t)r->id_len, .topic = r->topic, .topic_len = r->topic_len, .payload = r->payload,
		.payload_len = r->payload_len,
	};
	int err = store_tlog_append(e->tlog, src, &t);
	if (err == -E_AGAIN) {
		commit(e);
		err = store_tlog_append(e->tlog, src, &t);
	}
	if (err) {
		e->st.tlog_dropped++;
		e->lost[src] = true; /* its barrier must not claim it */
		return;
	}
	e->st.tlog_records++;
	if (!e->tlog_open) {
		e->tlog_open = true;
		e->tlog_start_us = now_us(e);
	}
	e->n_batch++;
	e->dirty[src] = true;
}

static void apply(struct store_engine *e, uint32_t src, const uint8_t *rec, uint32_t len)
{
	struct store_rec r;
	if (store_rec_decode(rec, len, &r) != 0 || r.kind == STORE_REC_REVOKED || r.kind == STORE_REC_ALLOWED) {
		e->st.bad_in++;
		e->lost[src] = true; /* its barrier must not claim it */
		return;
	}
	e->st.records++;
	if (e->state == STORE_ENG_FAILED) {
		e->lost[src] = true;
		return;
	}
	if (r.kind == STORE_REC_TLOG) {
		apply_tlog(e, src, &r);
		return;
	}
	if (!e->in_txn) {
		if (store_db_begin(e->db) != 0) {
			e->lost[src] = true;
			fail_state(e, "the database could not begin a transaction");
			return;
		}
		e->in_txn = true;
		e->txn_start_us = now_us(e);
	}
	int err = store_db_apply(e->db, &r, e->port.wall_s(e->port.ctx));
	e->n_batch++;
	e->batch_bytes += len;
	e->dirty[src] = true;
	if (err) {
		e->st.apply_failed++;
		e->lost[src] = true;
		if (e->st.apply_failed < 8)
			say(e, "a record of kind %u from core %u was not stored (%s): %s", (unsigned)r.kind,
			    (unsigned)src, err_name(err), e->db->why);
	}
	if (e->cfg.batch_bytes && e->batch_bytes >= e->cfg.batch_bytes)
		commit(e); /* the WAL's region bounds a batch (its barriers are answered as usual) */
}

static void barrier(struct store_engine *e, uint32_t src, const uint8_t *d, uint32_t len)
{
	if (len != 8u) {
		e->st.bad_in++;
		return;
	}
	uint32_t origin = ld_le32(d), ticket = ld_le32(d + 4);
	if (origin >= e->cfg.n_data) {
		e->st.bad_in++;
		return;
	}
	e->st.barriers++;
	struct answer a = { origin, ticket, !e->lost[src] && e->state != STORE_ENG_FAILED };
	/* Invariant 2: this barrier covers src's records so far; their fate is now its answer's
	 * (the batch's commit), so later barriers of src do not inherit it. */
	e->lost[src] = false;
	e->dirty[src] = false;
	if (!batch_open(e)) {
		send_answers(e, &a, 1, true); /* what it covers was committed (or lost: a.ok) */
		return;
	}
	if (e->n_answers == MAX_ANSWERS)
		commit(e); /* the batch is full of barriers: close it now */
	if (!batch_open(e)) {
		send_answers(e, &a, 1, true);
		return;
	}
	e->answers[e->n_answers++] = a;
}

/* Telemetry queries: to the runner, or ended at once (as failed) when there is none. */
static void tlq_input(struct store_engine *e, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len)
{
	if (e->tlq) {
		store_tlq_input(e->tlq, src, kind, data, len);
		return;
	}
	if (kind != STORE_K_TLQ || len < 4u)
		return;
	uint8_t m[STORE_TLQ_END_LEN];
	memcpy(m, data, 4);
	st_le64(m + 4, 0);
	st_le32(m + 12, STORE_TLQ_FAILED);
	(void)emit(e, src, STORE_K_TLQ_END, m, sizeof m);
}

static int tlq_emit(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	return emit(ctx, dst, kind, data, len);
}

static bool tlq_room(void *ctx, uint32_t dst, uint32_t bytes)
{
	struct store_engine *e = ctx;
	return dst < e->cfg.n_data && out_room(e, dst, msgq_entry_size(bytes));
}

static int64_t tlq_wall_ms(void *ctx)
{
	struct store_engine *e = ctx;
	return e->port.wall_ms ? e->port.wall_ms(e->port.ctx) : 0;
}

size_t store_engine_tlq_mem_size(const struct store_engine *e, uint32_t runs)
{
	return e->tlog ? store_tlq_mem_size(store_tlog_geometry(e->tlog), runs, e->cfg.payload_max) : 0;
}

int store_engine_tlq_attach(struct store_engine *e, void *mem, size_t len, uint32_t runs, uint64_t region_lba)
{
	if (!e->tlog)
		return -E_INVAL;
	const struct store_tlq_port port = { tlq_emit, tlq_room, tlq_wall_ms, e };
	return store_tlq_init(&e->tlq, mem, len, store_tlog_geometry(e->tlog), runs, e->cfg.payload_max, e->tlog_dev,
			      region_lba, &port);
}

const struct store_tlq_stats *store_engine_tlq_stats(const struct store_engine *e)
{
	return e->tlq ? store_tlq_stats(e->tlq) : NULL;
}

void store_engine_input(struct store_engine *e, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len)
{
	if (src >= e->cfg.n_data) {
		e->st.bad_in++;
		return;
	}
	if (kind == STORE_K_BARRIER) {
		barrier(e, src, data, len);
		return;
	}
	if (kind == STORE_K_TLQ || kind == STORE_K_TLQ_MORE || kind == STORE_K_TLQ_CANCEL) {
		tlq_input(e, src, kind, data, len);
		return;
	}
	const uint8_t *rec;
	uint32_t rec_len;
	int err = store_asm_feed(&e->in[src], kind, data, len, STORE_K_REC, &rec, &rec_len);
	if (err == -E_NEED_MORE)
		return;
	if (err) {
		e->st.bad_in++;
		e->lost[src] = true;
		return;
	}
	apply(e, src, rec, rec_len);
}

int store_engine_local(struct store_engine *e, uint16_t kind, const void *data, uint32_t len)
{
	if (!e->local.cap || e->local.used + msgq_entry_size(len) > e->local.cap)
		return -E_AGAIN;
	return msgq_put(&e->local, kind, data, len, NULL, 0);
}

/* ---- restore ------------------------------------------------------------------------------- */

static void restore_begin(struct store_engine *e)
{
	uint8_t m[8];
	st_le64(m, e->gen << KEY_GEN_SHIFT);
	for (uint32_t d = 0; d < e->cfg.n_data; d++)
		(void)emit(e, d, STORE_K_RESTORE_BEGIN, m, sizeof m);
	e->restore_t0 = now_us(e);
	e->pending_dst = -2;
	if (store_db_restore_start(e->db) != 0)
		fail_state(e, "the restore could not start");
}

/* Place the pending record; false when some destination has no room now. */
static bool place_pending(struct store_engine *e)
{
	uint64_t need = record_room(e, e->pending_len);
	uint32_t lo = e->pending_dst < 0 ? 0 : (uint32_t)e->pending_dst;
	uint32_t hi = e->pending_dst < 0 ? e->cfg.n_data : lo + 1;
	for (uint32_t d = lo; d < hi; d++)
		if (!out_room(e, d, need))
			return false;
	for (uint32_t d = lo; d < hi; d++)
		emit_record(e, d, e->pending, e->pending_len);
	e->st.restore_records++;
	e->pending_dst = -2;
	return true;
}

static void restore_end(struct store_engine *e)
{
	uint8_t m[8];
	st_le64(m, e->st.restore_records);
	for (uint32_t d = 0; d < e->cfg.n_data; d++)
		(void)emit(e, d, STORE_K_RESTORE_END, m, sizeof m);
	store_db_restore_stop(e->db);
	e->st.restore_us = now_us(e) - e->restore_t0;
	e->state = STORE_ENG_SERVING;
	const struct store_db_stats *ds = store_db_stats(e->db);
	say(e, "restored %lu records to %u core(s) in %lu ms%s", (unsigned long)e->st.restore_records,
	    (unsigned)e->cfg.n_data, (unsigned long)(e->st.restore_us / 1000u),
	    ds->skipped_restore ? " (some unusable rows skipped: see the counters)" : "");
}

/* Restore records while the queues take them and the budget lasts. */
static uint32_t restore_steps(struct store_engine *e, uint64_t deadline)
{
	uint32_t n = 0;
	while (e->state == STORE_ENG_RESTORING) {
		if (e->pending_dst != -2 && !place_pending(e))
			return n; /* a queue is full: the mesh takes it on a later pass */
		if (n && now_us(e) >= deadline)
			return n;
		struct store_rec r;
		int err = store_db_restore_next(e->db, &r);
		if (err == -E_NOENT) {
			restore_end(e);
			return n + 1;
		}
		if (err) {
			fail_state(e, "the restore could not read the database");
			return n;
		}
		size_t len = store_rec_size(&r);
		if (len > e->cfg.max_record || store_rec_encode(&r, e->pending, e->cfg.max_record) != 0) {
			e->st.bad_in++; /* a row that no longer fits this configuration */
			continue;
		}
		e->pending_len = (uint32_t)len;
		if (r.kind == STORE_REC_SESS_PUT)
			e->cur_home = e->port.home(e->port.ctx, r.id_kind, r.id, r.id_len) % e->cfg.n_data;
		e->pending_dst = (r.kind == STORE_REC_RET_PUT || r.kind == STORE_REC_REVOKED || r.kind == STORE_REC_ALLOWED)
					 ? -1
					 : (int32_t)e->cur_home;
		n++;
	}
	return n;
}

/* ---- the pass ------------------------------------------------------------------------------ */

uint32_t store_engine_poll(struct store_engine *e, uint64_t budget_us)
{
	uint64_t t0 = now_us(e), deadline = t0 + budget_us;
	uint32_t work = 0;
	if (e->state == STORE_ENG_RESTORING)
		work += restore_steps(e, deadline);
	/* One core: the link's records, queued, within the budget. */
	uint16_t kind;
	uint32_t len;
	while (msgq_front(&e->local, &kind, e->scratch, e->cfg.max_record, &len) == 0) {
		msgq_pop(&e->local);
		store_engine_input(e, 0, kind, e->scratch, len);
		work++;
		if (now_us(e) >= deadline)
			break;
	}
	/* Commit when the batch is full, when it is batch_ms old, or at once when a barrier
	 * waits and no record is waiting to join it: the data cores then have nothing more in
	 * flight, and waiting out batch_ms would only hold their acknowledgements (records keep
	 * arriving during a commit, so batches still grow with the load). */
	bool waiting = e->n_answers && msgq_empty(&e->local);
	uint64_t now = now_us(e);
	bool txn_due = e->in_txn && (e->n_batch >= e->cfg.batch_ops ||
				     now - e->txn_start_us >= (uint64_t)e->cfg.batch_ms * 1000u);
	bool tlog_due = e->tlog_open && (store_tlog_pending(e->tlog) >= e->cfg.tlog_flush_bytes ||
					 now - e->tlog_start_us >= (uint64_t)e->cfg.tlog_flush_ms * 1000u);
	if (batch_open(e) && (waiting || txn_due || tlog_due)) {
		commit(e);
		work++;
	}
	if (e->tlq && e->state == STORE_ENG_SERVING)
		work += store_tlq_poll(e->tlq); /* at most one segment read per query */
	if (e->tlog && !batch_open(e) && now - e->retain_us >= 1000000u) { /* retention: once a second */
		e->retain_us = now;
		int64_t wall = e->port.wall_ms ? e->port.wall_ms(e->port.ctx) : 0;
		if (wall > 0)
			work += store_tlog_retain(e->tlog, wall);
	}
	return work + flush_out(e);
}

int store_engine_init(struct store_engine **out, void *mem, size_t len, const struct store_engine_config *cfg,
		      const struct store_engine_port *port, struct store_db *db, uint64_t gen)
{
	*out = NULL;
	size_t need = store_engine_mem_size(cfg);
	if (!need || !mem || len < need || ((uintptr_t)mem & 7u) || !port || !port->send || !port->now_us ||
	    !port->wall_s || !port->home || !db || gen >= (UINT64_C(1) << (63u - KEY_GEN_SHIFT)))
		return -E_INVAL;
	uint8_t *p = mem;
	memset(p, 0, need);
	struct store_engine *e = (struct store_engine *)(void *)p;
	p += align8(sizeof *e);
	e->cfg = *cfg;
	e->port = *port;
	e->db = db;
	e->gen = gen;
	for (uint32_t d = 0; d < cfg->n_data; d++) {
		e->in[d].buf = p;
		e->in[d].cap = cfg->max_record;
		p += align8(cfg->max_record);
	}
	msgq_init(&e->local, p, cfg->local_bytes);
	p += align8(cfg->local_bytes);
	e->scratch = p;
	p += align8(cfg->max_record);
	e->pending = p;
	p += align8(cfg->max_record);
	e->answers = (struct answer *)(void *)p;
	p += align8(MAX_ANSWERS * sizeof(struct answer));
	for (uint32_t d = 0; d < cfg->n_data; d++) {
		msgq_init(&e->out[d], p, cfg->out_bytes);
		p += align8(cfg->out_bytes);
	}
	e->part = p;
	e->state = STORE_ENG_RESTORING;
	restore_begin(e);
	*out = e;
	return 0;
}

void store_engine_finish(struct store_engine *e)
{
	/* The local queue first: records the core sent before it stopped belong to the batch. */
	uint16_t kind;
	uint32_t len;
	while (e->state == STORE_ENG_SERVING &&
	       msgq_front(&e->local, &kind, e->scratch, e->cfg.max_record, &len) == 0) {
		msgq_pop(&e->local);
		store_engine_input(e, 0, kind, e->scratch, len);
	}
	commit(e);
	(void)flush_out(e);
}

uint64_t store_engine_due_us(const struct store_engine *e)
{
	if (e->state == STORE_ENG_RESTORING || !msgq_empty(&e->local))
		return 0;
	for (uint32_t d = 0; d < e->cfg.n_data; d++)
		if (!msgq_empty(&e->out[d]))
			return 0; /* waiting for credit: the platform retries soon */
	if (batch_open(e) && e->n_answers)
		return 0; /* a barrier waits: the next pass commits */
	uint64_t due = e->in_txn ? e->txn_start_us + (uint64_t)e->cfg.batch_ms * 1000u : UINT64_MAX;
	if (e->tlog_open)
		due = MIN(due, e->tlog_start_us + (uint64_t)e->cfg.tlog_flush_ms * 1000u);
	return due;
}

void store_engine_attach_tlog(struct store_engine *e, struct store_tlog *t, struct store_dev *dev)
{
	e->tlog = t;
	e->tlog_dev = dev;
}

bool store_engine_busy(const struct store_engine *e)
{
	return batch_open(e);
}

enum store_engine_state store_engine_state(const struct store_engine *e)
{
	return e->state;
}

const struct store_engine_stats *store_engine_stats(const struct store_engine *e)
{
	return &e->st;
}

int store_engine_check(const struct store_engine *e)
{
	if (e->in_txn != e->db->in_txn)
		return -E_CORRUPT; /* 1 */
	if (!batch_open(e) && e->n_answers)
		return -E_CORRUPT; /* 1, 3 */
	if (e->tlog_open && !e->tlog)
		return -E_CORRUPT;
	if (msgq_check(&e->local))
		return -E_CORRUPT;
	for (uint32_t d = 0; d < e->cfg.n_data; d++)
		if (msgq_check(&e->out[d]))
			return -E_CORRUPT; /* 4 */
	return 0;
}
