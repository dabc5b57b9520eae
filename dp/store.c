/* SPDX-License-Identifier: MIT
 *
 * dp/dp_store.h. The broker's events map one to one onto storage records (the same
 * kinds); restore records map onto the broker's restore calls. Keys from storage carry
 * the boot's generation; this core adds its index (bits 34..39), so keys made by
 * different cores and boots never meet.
 * States: CLOSED -(RESTORE_BEGIN)-> RESTORING -(RESTORE_END)-> SERVING;
 *         CLOSED -(OFF: no usable disk)-> SERVING without persistence.
 */
#include "dp/dp_store.h"

#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"

#define KEY_CORE_SHIFT 34u
#define RESTORE_LOG_MAX 8u /* refused restore records named one by one, then counted */

struct dp_store {
	struct dp_store_config cfg;
	struct store_link *link;
	struct mqtt_broker *broker;
	void (*log)(void *ctx, const char *line);
	void *log_ctx;
	bool restoring, serving;
	uint64_t restored, refused;
};

static size_t align8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

size_t dp_store_mem_size(const struct dp_store_config *cfg)
{
	size_t l = store_link_mem_size(&cfg->link);
	return l ? align8(sizeof(struct dp_store)) + align8(l) : 0;
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
	st->log(st->log_ctx, line);
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
	switch (r->kind) {
	case STORE_REC_SESS_PUT:
		err = mqtt_broker_restore_session(b, r->skey, r->id_kind ? MQTT_ID_SERVICE : MQTT_ID_DEVICE, r->id,
						  r->id_len);
		break;
	case STORE_REC_SUB_PUT:
		err = mqtt_broker_restore_sub(b, r->skey, r->topic, r->topic_len, r->qos);
		break;
	case STORE_REC_RX2_PUT:
		err = mqtt_broker_restore_rx2(b, r->skey, r->pid);
		break;
	case STORE_REC_DLV_PUT:
		err = mqtt_broker_restore_dlv(b, r->skey, r->mkey, r->seq, r->qos, r->retain != 0,
					      (enum mqtt_restore_dlv)r->state, r->pid, r->topic, r->topic_len,
					      r->payload, r->payload_len, r->msg_qos);
		break;
	case STORE_REC_RET_PUT:
		err = mqtt_broker_restore_retained(b, r->topic, r->topic_len, r->payload, r->payload_len, r->qos);
		break;
	case STORE_REC_REVOKED:
		if (st->cfg.revoked)
			st->cfg.revoked(st->cfg.revoked_ctx, r->id, r->id_len);
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
	};
	if (ev->id_len > 255u || ev->topic_len > UINT16_MAX || ev->payload_len > UINT32_MAX)
		return -E_INVAL;
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
		      (int)MQTT_PEV_SEEN == (int)STORE_REC_SEEN,
	      "broker events and storage records are the same kinds");

struct mqtt_store_ops dp_store_broker_ops(struct dp_store *st)
{
	return (struct mqtt_store_ops){ op_record, op_barrier, op_room, st };
}

/* ---- life cycle ----------------------------------------------------------------------------- */

int dp_store_init(struct dp_store **out, void *mem, size_t len, const struct dp_store_config *cfg,
		  void (*log)(void *ctx, const char *line), void *log_ctx)
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
	const struct store_link_upcalls up = { up_done, up_restore_begin, up_restored, up_restore_end, up_lag, up_off,
						st };
	int err = store_link_init(&st->link, p, store_link_mem_size(&cfg->link), &cfg->link, &up);
	if (err)
		return err;
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
	return store_link_poll(st->link);
}

bool dp_store_serving(const struct dp_store *st)
{
	return st->serving;
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
