/* SPDX-License-Identifier: MIT
 *
 * dp/dp_store.h. The broker's events map one to one onto storage records (the same
 * kinds); restore records map onto the broker's restore calls. Keys from storage carry
 * the boot's generation; this core adds its index (bits 34..39), so keys made by
 * different cores and boots never meet.
 * States: CLOSED -(RESTORE_BEGIN)-> RESTORING -(RESTORE_END)-> SERVING;
 *         CLOSED -(OFF: no usable disk)-> SERVING without persistence.
 * Telemetry queries: per broker slot, at most one ROWS message at a time (the storage core
 * sends the next after the broker took every row: query_more), kept here until the reader's
 * connection took its rows; the END after it is delivered once the rows are.
 */
#include "dp/dp_store.h"

#include "lib/align.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"

#define KEY_CORE_SHIFT 34u
#define RESTORE_LOG_MAX 8u /* refused restore records named one by one, then counted */

/* A telemetry query's rows waiting for the reader (one ROWS message), and its end. */
struct dp_tlq {
	uint32_t len, off;        /* ROWS bytes held, the next row's offset (0: none held) */
	bool end_due;             /* END arrived: deliver once the rows are out */
	uint32_t end_flags;
	uint64_t end_matched;
	uint8_t *rows;            /* link.payload_max bytes */
};

struct dp_store {
	struct dp_store_config cfg;
	struct store_link *link;
	struct dp_tlq *tlq;       /* cfg.max_queries */
	struct mqtt_broker *broker;
	void (*log)(void *ctx, const char *line, const struct log_fields *f);
	void *log_ctx;
	bool restoring, serving;
	uint64_t restored, refused;
};

size_t dp_store_mem_size(const struct dp_store_config *cfg)
{
	size_t l = store_link_mem_size(&cfg->link);
	return l ? align8(sizeof(struct dp_store)) + align8(l) +
			   (size_t)cfg->max_queries * (align8(sizeof(struct dp_tlq)) + align8(cfg->link.payload_max))
		 : 0;
}

static void say(struct dp_store *st, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void say(struct dp_store *st, const char *fmt, ...)
{
	char line[160];
	va_list ap;
	if (!st->log)
		return;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	st->log(st->log_ctx, line, NULL);
}

/* ---- the storage core's answers ---------------------------------------------------------- */

static void up_done(void *ctx, uint32_t ticket, bool ok)
{
	struct dp_store *st = ctx;
	mqtt_broker_durable(st->broker, ticket, ok);
}

static void up_restore_begin(void *ctx, uint64_t key_base)
{
	struct dp_store *st = ctx;
	uint64_t base = key_base | (uint64_t)(st->cfg.self & 63u) << KEY_CORE_SHIFT;
	int err = mqtt_broker_restore_begin(st->broker, base);
	if (err) {
		say(st, "store: core %u: restore refused by the broker (%s)", (unsigned)st->cfg.self, err_name(err));
		return;
	}
	st->restoring = true;
}

static void up_restored(void *ctx, const struct store_rec *r)
{
	struct dp_store *st = ctx;
	struct mqtt_broker *b = st->broker;
	int err = -E_INVAL;
	if (!st->restoring) {
		st->refused++;
		return;
	}
	/* a delivery's message (its own qos) or a retained message */
	struct mqtt_message m = { .topic = r->topic, .topic_len = r->topic_len, .payload = r->payload,
				  .payload_len = r->payload_len, .props = r->props, .props_len = r->props_len,
				  .expiry_s = r->expiry_s, .qos = r->msg_qos };
	switch (r->kind) {
	case STORE_REC_SESS_PUT:
		err = mqtt_broker_restore_session(b, r->skey, r->id_kind ? MQTT_ID_SERVICE : MQTT_ID_DEVICE, r->id,
						  r->id_len, r->expiry_s);
		break;
	case STORE_REC_SUB_PUT:
		err = mqtt_broker_restore_sub(b, r->skey, r->topic, r->topic_len, r->qos, r->sub_id);
		break;
	case STORE_REC_RX2_PUT:
		err = mqtt_broker_restore_rx2(b, r->skey, r->pid);
		break;
	case STORE_REC_DLV_PUT:
		err = mqtt_broker_restore_dlv(b, r->skey, r->mkey, r->seq, r->qos, r->retain != 0,
					      (enum mqtt_restore_dlv)r->state, r->pid, &m);
		break;
	case STORE_REC_RET_PUT:
		m.qos = r->qos;
		err = mqtt_broker_restore_retained(b, &m);
		break;
	case STORE_REC_REVOKED:
		if (st->cfg.revoked)
			st->cfg.revoked(st->cfg.revoked_ctx, r->id_kind == 1, r->id, r->id_len);
		err = 0;
		break;
	case STORE_REC_ALLOWED:
		if (st->cfg.allowed)
			st->cfg.allowed(st->cfg.revoked_ctx, r->id, r->id_len);
		err = 0;
		break;
	default:
		break;
	}
	if (!err) {
		st->restored++;
		return;
	}
	/* Restored state that does not fit (a configuration with smaller limits than the one
	 * that stored it) is said loudly: these are acknowledged messages and sessions. */
	if (st->refused++ < RESTORE_LOG_MAX)
		say(st, "store: core %u: a restored record of kind %u was refused (%s)%s", (unsigned)st->cfg.self,
		    (unsigned)r->kind, err_name(err), st->refused == RESTORE_LOG_MAX ? "; further ones only counted" : "");
}

static void up_restore_end(void *ctx, uint64_t records)
{
	struct dp_store *st = ctx;
	(void)records; /* the storage core's total over every core; ours is st->restored */
	if (st->restoring)
		mqtt_broker_restore_end(st->broker);
	st->restoring = false;
	st->serving = true;
}

static void up_off(void *ctx)
{
	struct dp_store *st = ctx;
	if (st->restoring || st->serving)
		return; /* only before restore: a late OFF would leave sessions unrecorded */
	st->serving = true; /* the broker records nothing: restore_begin never came */
	say(st, "store: core %u: storage is off: serving WITHOUT persistence", (unsigned)st->cfg.self);
}

static void up_lag(void *ctx, bool lagging)
{
	struct dp_store *st = ctx;
	if (lagging)
		say(st, "store: core %u: the storage core lags: new connections are refused, reads pause",
		    (unsigned)st->cfg.self);
}

/* ---- telemetry queries ---------------------------------------------------------------------- */

#define TLQ_BATCH 32u /* rows offered to the broker per call */

/* Hand what the slot holds to the broker: its rows, then its end. */
static void tlq_deliver(struct dp_store *st, uint32_t slot)
{
	struct dp_tlq *q = &st->tlq[slot];
	while (q->len && q->off < q->len) {
		struct mqtt_trow rows[TLQ_BATCH];
		size_t offs[TLQ_BATCH + 1];
		uint32_t n = 0;
		size_t off = q->off;
		struct store_rec r;
		int rc = 0;
		while (n < TLQ_BATCH && (rc = store_tlq_rows_next(q->rows, q->len, &off, &r)) == 1) {
			rows[n] = (struct mqtt_trow){ .wall_ms = (int64_t)r.seq, .qos = r.qos, .id_kind = r.id_kind,
						      .id = r.id, .id_len = (uint8_t)r.id_len, .topic = r.topic,
						      .topic_len = r.topic_len, .payload = r.payload,
						      .payload_len = r.payload_len };
			offs[n++] = off;
		}
		if (rc < 0) {
			say(st, "store: core %u: telemetry query rows that do not decode: dropped", (unsigned)st->cfg.self);
			off = q->len; /* the rest of this message cannot be trusted */
		}
		uint32_t took = n ? mqtt_broker_query_rows(st->broker, slot, rows, n) : 0;
		if (took < n) {
			q->off = (uint32_t)(took ? offs[took - 1] : q->off);
			return; /* the reader is full: again at the next poll */
		}
		q->off = (uint32_t)off;
	}
	q->len = q->off = 0;
	if (q->end_due && mqtt_broker_query_end(st->broker, slot, q->end_matched, q->end_flags & STORE_TLQ_TRUNCATED,
						(q->end_flags & STORE_TLQ_FAILED) ? "the telemetry log could not be read"
										  : NULL))
		q->end_due = false;
}

static void up_tlq(void *ctx, uint16_t kind, const uint8_t *d, uint32_t len)
{
	struct dp_store *st = ctx;
	uint32_t slot = ld_le32(d);
	if (slot >= st->cfg.max_queries) {
		say(st, "store: core %u: telemetry rows for query slot %u: no such slot", (unsigned)st->cfg.self,
		    (unsigned)slot);
		return;
	}
	struct dp_tlq *q = &st->tlq[slot];
	if (kind == STORE_K_TLQ_END) {
		if (len != STORE_TLQ_END_LEN)
			return;
		q->end_due = true;
		q->end_matched = ld_le64(d + 4);
		q->end_flags = ld_le32(d + 12);
	} else {
		if (q->len || len > st->cfg.link.payload_max || len < STORE_TLQ_ROWS_HDR)
			return; /* one ROWS at a time: the storage core waits for query_more */
		memcpy(q->rows, d, len);
		q->len = len;
		q->off = STORE_TLQ_ROWS_HDR;
	}
	tlq_deliver(st, slot);
}

static int op_query(void *ctx, uint32_t slot, const struct mqtt_tquery *mq)
{
	struct dp_store *st = ctx;
	if (slot >= st->cfg.max_queries)
		return -E_INVAL;
	uint8_t m[STORE_TLQ_HDR + 255u + MQTT_TQUERY_TOPIC_MAX];
	const struct store_tlq q = { .slot = slot, .limit = mq->limit, .since_ms = mq->since_ms, .until_ms = mq->until_ms,
				     .id = mq->identity, .id_len = mq->identity_len, .topic = mq->topic,
				     .topic_len = mq->topic_len };
	size_t n = store_tlq_encode(&q, m, sizeof m);
	if (!n)
		return -E_INVAL;
	st->tlq[slot].len = st->tlq[slot].off = 0;
	st->tlq[slot].end_due = false;
	return store_link_control(st->link, STORE_K_TLQ, m, (uint32_t)n);
}

static void tlq_flow(struct dp_store *st, uint16_t kind, uint32_t slot)
{
	uint8_t m[4];
	st_le32(m, slot);
	if (store_link_control(st->link, kind, m, sizeof m) != 0)
		say(st, "store: core %u: a telemetry query's flow message found the link full", (unsigned)st->cfg.self);
}

static void op_query_more(void *ctx, uint32_t slot)
{
	tlq_flow(ctx, STORE_K_TLQ_MORE, slot);
}

static void op_query_cancel(void *ctx, uint32_t slot)
{
	tlq_flow(ctx, STORE_K_TLQ_CANCEL, slot);
}

/* ---- the broker's store ops -------------------------------------------------------------- */

static int op_record(void *ctx, const struct mqtt_pev *ev)
{
	struct dp_store *st = ctx;
	struct store_rec r = {
		.kind = ev->kind, /* the same kinds (static assertions below) */
		.id_kind = ev->id_kind,
		.qos = ev->qos,
		.retain = ev->retain,
		.msg_qos = ev->qos,
		.pid = ev->pid,
		.skey = ev->skey,
		.mkey = ev->mkey,
		.seq = ev->seq,
		.id = ev->id,
		.id_len = (uint16_t)ev->id_len,
		.topic = ev->topic,
		.topic_len = (uint16_t)ev->topic_len,
		.payload = ev->payload,
		.payload_len = (uint32_t)ev->payload_len,
		.props = ev->props,
		.props_len = (uint16_t)ev->props_len,
		.expiry_s = ev->expiry_s,
		.sub_id = ev->sub_id,
	};
	if (ev->kind == MQTT_PEV_DLV_PUT && ev->pid)
		r.state = STORE_DLV_SENT; /* queued and sent before it was recorded: one record */
	if (ev->id_len > 255u || ev->topic_len > UINT16_MAX || ev->payload_len > UINT32_MAX ||
	    ev->props_len > UINT16_MAX)
		return -E_INVAL;
	return store_link_record(st->link, &r);
}

int dp_store_revocation(struct dp_store *st, bool put, bool identity, const uint8_t *id, size_t len)
{
	if (!len || len > 255u)
		return -E_INVAL;
	struct store_rec r = {
		.kind = put ? STORE_REC_REV_PUT : STORE_REC_REV_DEL,
		.id_kind = identity ? 1u : 0u,
		.id = id,
		.id_len = (uint16_t)len,
	};
	return store_link_record(st->link, &r);
}

int dp_store_allowlist(struct dp_store *st, bool put, const uint8_t *id, size_t len)
{
	if (!len || len > 255u)
		return -E_INVAL;
	struct store_rec r = { .kind = put ? STORE_REC_ALLOW_PUT : STORE_REC_ALLOW_DEL, .id = id, .id_len = (uint16_t)len };
	return store_link_record(st->link, &r);
}

static int op_barrier(void *ctx, uint32_t ticket)
{
	struct dp_store *st = ctx;
	return store_link_barrier(st->link, st->cfg.self, ticket);
}

static bool op_room(void *ctx, size_t bytes)
{
	struct dp_store *st = ctx;
	return store_link_room(st->link, bytes);
}

STATIC_ASSERT((int)MQTT_PEV_SESS_PUT == (int)STORE_REC_SESS_PUT && (int)MQTT_PEV_SESS_DEL == (int)STORE_REC_SESS_DEL &&
		      (int)MQTT_PEV_SUB_PUT == (int)STORE_REC_SUB_PUT && (int)MQTT_PEV_SUB_DEL == (int)STORE_REC_SUB_DEL &&
		      (int)MQTT_PEV_MSG_PUT == (int)STORE_REC_MSG_PUT && (int)MQTT_PEV_DLV_PUT == (int)STORE_REC_DLV_PUT &&
		      (int)MQTT_PEV_DLV_SENT == (int)STORE_REC_DLV_SENT && (int)MQTT_PEV_DLV_REC == (int)STORE_REC_DLV_REC &&
		      (int)MQTT_PEV_DLV_DEL == (int)STORE_REC_DLV_DEL && (int)MQTT_PEV_DLV_DONE == (int)STORE_REC_DLV_DONE &&
		      (int)MQTT_PEV_RX2_PUT == (int)STORE_REC_RX2_PUT && (int)MQTT_PEV_RX2_DEL == (int)STORE_REC_RX2_DEL &&
		      (int)MQTT_PEV_RET_PUT == (int)STORE_REC_RET_PUT && (int)MQTT_PEV_RET_DEL == (int)STORE_REC_RET_DEL &&
		      (int)MQTT_PEV_SEEN == (int)STORE_REC_SEEN && (int)MQTT_PEV_TLOG == (int)STORE_REC_TLOG,
	      "broker events and storage records are the same kinds");

struct mqtt_store_ops dp_store_broker_ops(struct dp_store *st)
{
	return (struct mqtt_store_ops){ .record = op_record, .barrier = op_barrier, .room = op_room,
					.query = st->cfg.max_queries ? op_query : NULL, .query_more = op_query_more,
					.query_cancel = op_query_cancel, .ctx = st };
}

/* ---- life cycle ----------------------------------------------------------------------------- */

int dp_store_init(struct dp_store **out, void *mem, size_t len, const struct dp_store_config *cfg,
		  void (*log)(void *ctx, const char *line, const struct log_fields *f), void *log_ctx)
{
	*out = NULL;
	size_t need = dp_store_mem_size(cfg);
	if (!need || !mem || len < need || ((uintptr_t)mem & 7u) || !cfg->held_acks)
		return -E_INVAL;
	uint8_t *p = mem;
	memset(p, 0, need);
	struct dp_store *st = (struct dp_store *)(void *)p;
	p += align8(sizeof *st);
	st->cfg = *cfg;
	st->log = log;
	st->log_ctx = log_ctx;
	const struct store_link_upcalls up = { .done = up_done, .restore_begin = up_restore_begin,
						.restored = up_restored, .restore_end = up_restore_end, .lag = up_lag,
						.off = up_off, .tlq = up_tlq, .ctx = st };
	size_t ll = store_link_mem_size(&cfg->link);
	int err = store_link_init(&st->link, p, ll, &cfg->link, &up);
	if (err)
		return err;
	p += align8(ll);
	st->tlq = (struct dp_tlq *)(void *)p;
	p += (size_t)cfg->max_queries * align8(sizeof(struct dp_tlq));
	for (uint32_t i = 0; i < cfg->max_queries; i++) {
		st->tlq[i].rows = p;
		p += align8(cfg->link.payload_max);
	}
	*out = st;
	return 0;
}

void dp_store_bind(struct dp_store *st, struct mqtt_broker *b)
{
	st->broker = b;
}

int dp_store_barrier(struct dp_store *st, uint32_t origin, uint32_t ticket)
{
	return store_link_barrier(st->link, origin, ticket);
}

void dp_store_in(struct dp_store *st, uint16_t kind, const uint8_t *data, uint32_t len)
{
	store_link_recv(st->link, kind, data, len);
}

uint32_t dp_store_poll(struct dp_store *st)
{
	for (uint32_t i = 0; i < st->cfg.max_queries; i++)
		if (st->tlq[i].len || st->tlq[i].end_due)
			tlq_deliver(st, i); /* a reader that was full may take more now */
	return store_link_poll(st->link);
}

bool dp_store_serving(const struct dp_store *st)
{
	return st->serving;
}

uint32_t dp_store_backlog(const struct dp_store *st)
{
	return store_link_backlog(st->link);
}

bool dp_store_congested(const struct dp_store *st)
{
	/* Held acknowledgements past three quarters: stop taking PUBLISHes before the ring
	 * refuses one (which would close its connection). */
	return store_link_congested(st->link) || mqtt_broker_held(st->broker) >= st->cfg.held_acks / 4u * 3u;
}

void dp_store_counts(const struct dp_store *st, struct store_link_stats *link, uint64_t *restored, uint64_t *refused)
{
	store_link_stats(st->link, link);
	*restored = st->restored;
	*refused = st->refused;
}

int dp_store_check(const struct dp_store *st)
{
	if (st->serving && st->restoring)
		return -E_CORRUPT;
	return store_link_check(st->link);
}
