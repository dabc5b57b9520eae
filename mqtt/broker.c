/* SPDX-License-Identifier: MIT
 *
 * MQTT 3.1.1 broker core (see broker.h): connections, the CONNECT/DISCONNECT life cycle,
 * takeover, wills, keepalive, QoS 0/1/2 flows, routing, retained messages, and where the
 * ACL and rate limits are applied. Owns the connection pool and the region layout. What it
 * builds on, none of which calls back into this file: msg.c (the accounted heap and the
 * refcounted message blocks), acl.c (the ACL decision, pure), rate.c (the per-identity
 * token buckets), out.c (encoding and sending), session.c and topic.c. Must never call the
 * transport back from inside a transport callback, never keep a pointer into a received
 * packet after the call that carried it (messages are copied into refcounted heap blocks
 * when they must outlive it), never recurse, and never let an exhaustion corrupt state: a
 * refused allocation drops and counts.
 *
 * Design note: connection states
 *   FREE --mqtt_conn_open--> NEW --CONNECT accepted: CONNACK 0--> UP
 *   NEW  --bad first packet, CONNACK refusal, connect timeout--> FREE (close called)
 *   UP   --DISCONNECT--> FREE (will discarded; close called)
 *   UP   --protocol error, ACL/rate close, keepalive 1.5x, takeover--> FREE (will
 *          published; close called)
 *   NEW/UP --mqtt_conn_lost--> FREE (will published if UP; close not called)
 * Invariants (mqtt_broker_check): 1. a connection is UP iff it has a session and that
 * session's conn names it; 2. pool counters equal the records in use; 3. the session
 * invariants of session.h; 4. the framer holds a buffer only while a packet is split;
 * 5. heap_used never exceeds cfg.heap_limit (msg.c); 6. a rate bucket's refs equals the
 * connections naming it, every entry below rate_hw is in the identity hash exactly once,
 * and rate_hw <= rate_cap (max_conns + rate_idle_ids) (rate.c, mqtt_rate_check); 7. no
 * two drop-table entries name one identity or one session, a named session is in use,
 * and the recent bytes add up (fair.c, mqtt_fair_check).
 * Every refusal calls say() before the connection is freed (the identity is still known).
 */
#include "mqtt/broker.h"

#include "lib/align.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "mqtt/acl.h"
#include "mqtt/codec5.h"
#include "mqtt/fair.h"
#include "mqtt/fleet.h"
#include "mqtt/msg.h"
#include "mqtt/rate.h"
#include "mqtt/topic.h"

/* ---- rate-limited log ------------------------------------------------------------------ */

static const char *const reason_name[MQTT_LOG__COUNT] = {
	[MQTT_LOG_MALFORMED] = "malformed", [MQTT_LOG_TOO_BIG] = "too big",
	[MQTT_LOG_PROTOCOL] = "protocol", [MQTT_LOG_IDENTITY] = "identity",
	[MQTT_LOG_ACL] = "acl", [MQTT_LOG_RATE] = "rate", [MQTT_LOG_RESOURCE] = "resource",
	[MQTT_LOG_TIMEOUT] = "timeout",
};

static const char *const rej_name[MQTT_REJ__COUNT] = {
	[MQTT_REJ_NONE] = "none", [MQTT_REJ_RLEN] = "remaining length",
	[MQTT_REJ_TYPE] = "packet type", [MQTT_REJ_FLAGS] = "reserved flags",
	[MQTT_REJ_SHORT] = "short body", [MQTT_REJ_TRAILING] = "trailing bytes",
	[MQTT_REJ_UTF8] = "bad UTF-8", [MQTT_REJ_PROTO_NAME] = "protocol name",
	[MQTT_REJ_PROTO_LEVEL] = "protocol level", [MQTT_REJ_CONNECT_FLAGS] = "connect flags",
	[MQTT_REJ_CLIENT_ID] = "empty client id with clean session 0",
	[MQTT_REJ_QOS] = "QoS/DUP", [MQTT_REJ_TOPIC] = "topic name",
	[MQTT_REJ_FILTER] = "topic filter", [MQTT_REJ_PID] = "packet id 0",
	[MQTT_REJ_EMPTY] = "no filters", [MQTT_REJ_SUB_QOS] = "requested QoS",
	[MQTT_REJ_TOO_BIG] = "packet too big",
};

#define LOG_ID_MAX 48u

/* May a line for this reason be written now? Token bucket in 1/1000 lines. */
static bool log_take(struct mqtt_broker *b, struct mqtt_log_bucket *lb)
{
	const struct mqtt_broker_config *g = &b->cfg;
	if (!g->log_burst)
		return true;
	uint64_t el = b->now_ms > lb->ms ? b->now_ms - lb->ms : 0;
	lb->ms = b->now_ms > lb->ms ? b->now_ms : lb->ms;
	el = MIN(el, (uint64_t)UINT32_MAX);
	uint64_t t = lb->milli + el * g->log_per_min / 60u; /* per minute = milli per ms / 60 */
	lb->milli = (uint32_t)MIN(t, (uint64_t)g->log_burst * 1000u);
	if (lb->milli < 1000u)
		return false;
	lb->milli -= 1000u;
	return true;
}

/* Peer bytes made safe for a log line: at most LOG_ID_MAX, printable ASCII, others '?'.
 * out holds LOG_ID_MAX + 1 bytes; returns the length written before the NUL. */
static size_t log_bytes(char *out, const uint8_t *p, size_t n)
{
	n = MIN(n, (size_t)LOG_ID_MAX);
	for (size_t i = 0; i < n; i++)
		out[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
	out[n] = 0;
	return n;
}

/* The identity to name in a line: the certificate identity before CONNECT, the client
 * identifier (which starts with it) after. */
static size_t log_identity(const struct mqtt_broker *b, const struct mqtt_conn *c, char *out)
{
	const uint8_t *id = NULL;
	size_t n = 0;
	if (c && c->state == MQTT_CONN_NEW) {
		id = c->identity;
		n = c->identity_len;
	} else if (c && c->state == MQTT_CONN_UP) {
		id = b->sess[c->session].id;
		n = b->sess[c->session].id_len;
	}
	return log_bytes(out, id, n);
}

static void say(struct mqtt_broker *b, enum mqtt_log_reason r, const struct mqtt_conn *c,
		const char *fmt, ...) PRINTF_LIKE(4, 5);
static void say(struct mqtt_broker *b, enum mqtt_log_reason r, const struct mqtt_conn *c,
		const char *fmt, ...)
{
	struct mqtt_log_bucket *lb = &b->logb[r];
	if (!b->cfg.log)
		return;
	if (!log_take(b, lb)) {
		lb->suppressed++;
		b->st.log_suppressed++;
		return;
	}
	char line[160], id[LOG_ID_MAX + 1], detail[96];
	va_list ap;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	size_t idl = log_identity(b, c, id);
	if (lb->suppressed)
		(void)fmt_snprintf(line, sizeof line, "mqtt: %s: %s id=%s (+%u suppressed)",
				   reason_name[r], detail, idl ? id : "-", lb->suppressed);
	else
		(void)fmt_snprintf(line, sizeof line, "mqtt: %s: %s id=%s", reason_name[r],
				   detail, idl ? id : "-");
	lb->suppressed = 0;
	b->st.log_lines++;
	struct log_fields f = { .reason = reason_name[r], .identity = idl ? id : NULL, .peer = NULL };
	b->cfg.log(b->cfg.log_ctx, line, &f);
}

static void clock_see(struct mqtt_broker *b, uint64_t now_ms)
{
	if (now_ms > b->now_ms)
		b->now_ms = now_ms;
}

/* ---- output (encoding and sending: out.c) ------------------------------------------------ */

static uint32_t conn_idx(const struct mqtt_broker *b, const struct mqtt_conn *c)
{
	return (uint32_t)(c - b->conns);
}

/* A 3.1.1 return code as a 5.0 reason code (5.0 codes, 0x80 and above, pass). */
static uint8_t rc5_of(uint8_t rc)
{
	static const uint8_t map[] = { [MQTT_CONNACK_ACCEPTED] = MQTT_RC_SUCCESS,
				       [MQTT_CONNACK_BAD_PROTOCOL] = MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION,
				       [MQTT_CONNACK_ID_REJECTED] = MQTT_RC_CLIENT_ID_NOT_VALID,
				       [MQTT_CONNACK_UNAVAILABLE] = MQTT_RC_SERVER_UNAVAILABLE,
				       [MQTT_CONNACK_BAD_AUTH] = MQTT_RC_BAD_USERNAME_OR_PASSWORD,
				       [MQTT_CONNACK_NOT_AUTHORIZED] = MQTT_RC_NOT_AUTHORIZED };
	return rc < ARRAY_LEN(map) ? map[rc] : rc;
}

/* What a 5.0 CONNACK tells the client of this broker: its limits (Receive Maximum: the
 * inbound QoS 2 window; Maximum Packet Size; Topic Alias Maximum), whether it offers
 * Subscription Identifiers and Shared Subscriptions, the Session Expiry Interval of a
 * kept session (the client's, or lower: cfg.max_session_expiry_s). */
static void connack_props(const struct mqtt_broker *b, const struct mqtt_conn *c, struct mqtt_props *p)
{
	memset(p, 0, sizeof *p);
	p->present = MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAX) | MQTT_PROP_BIT(MQTT_PROP_MAX_PACKET_SIZE) |
		     MQTT_PROP_BIT(MQTT_PROP_SUB_ID_AVAILABLE) | MQTT_PROP_BIT(MQTT_PROP_SHARED_SUB_AVAILABLE);
	p->sub_id_available = b->cfg.max_sub_ids ? 1 : 0;
	p->shared_sub_available = mqtt_share_offered(b) ? 1 : 0;
	p->receive_max = (uint16_t)MAX(b->cfg.max_qos2_rx, 1u);
	p->max_packet_size = b->cfg.max_packet;
	if (b->cfg.topic_alias_max) {
		p->present |= MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAX);
		p->topic_alias_max = b->cfg.topic_alias_max;
	}
	if (c->session != MQTT_NIL && !(b->sess[c->session].flags & MQTT_SESS_CLEAN)) {
		p->present |= MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY);
		p->session_expiry_s = b->sess_exp[c->session];
	}
}

/* Does a packet of n bytes fit the 5.0 client's Maximum Packet Size [MQTT-3.1.2-24]? */
static bool fits_client(const struct mqtt_conn *c, size_t n)
{
	/* before the CONNACK that accepts it, a connection has no x5 (it holds the identity) */
	return !c->v5 || c->state != MQTT_CONN_UP || !c->x5->max_packet || n <= c->x5->max_packet;
}

/* A CONNACK's properties for a client whose Maximum Packet Size is too small for them all:
 * left out one at a time, first those whose absence means the same (Subscription
 * Identifiers and Shared Subscriptions available: absent is 1), then those whose absence
 * only makes the client ask less (Topic Alias Maximum: absent is 0), then the rest. */
static void connack_shrink(const struct mqtt_conn *c, struct mqtt_props *p)
{
	uint32_t order[] = { p->sub_id_available ? MQTT_PROP_SUB_ID_AVAILABLE : 0u,
			     p->shared_sub_available ? MQTT_PROP_SHARED_SUB_AVAILABLE : 0u,
			     MQTT_PROP_TOPIC_ALIAS_MAX, MQTT_PROP_RECEIVE_MAX, MQTT_PROP_SESSION_EXPIRY,
			     MQTT_PROP_MAX_PACKET_SIZE, MQTT_PROP_SUB_ID_AVAILABLE, MQTT_PROP_SHARED_SUB_AVAILABLE };
	for (size_t i = 0; i < ARRAY_LEN(order) && !fits_client(c, mqtt5_connack_size(p)); i++)
		if (order[i])
			p->present &= ~MQTT_PROP_BIT(order[i]);
}

static int send_connack(struct mqtt_broker *b, struct mqtt_conn *c, bool sp, uint8_t rc)
{
	struct wcur w = wcur_make(b->out, b->out_len);
	if (c->v5) {
		struct mqtt_props p;
		if (rc == MQTT_CONNACK_ACCEPTED)
			connack_props(b, c, &p);
		else
			memset(&p, 0, sizeof p);
		connack_shrink(c, &p);
		if (!fits_client(c, mqtt5_connack_size(&p)))
			return -E_RANGE; /* not even a bare CONNACK fits: the caller closes */
		if (mqtt5_encode_connack(&w, rc == 0 && sp, rc5_of(rc), &p))
			return -E_OVERFLOW;
	} else if (mqtt_encode_connack(&w, rc == 0 && sp, rc)) { /* [MQTT-3.2.2-4] */
		return -E_OVERFLOW;
	}
	return mqtt_send_encoded(b, c, &w);
}

/* The broker's clock in seconds (message expiry). */
static uint32_t now_s(const struct mqtt_broker *b)
{
	return (uint32_t)(b->now_ms / 1000u);
}

/* The Subscription Identifiers a 5.0 PUBLISH of topic to connection c carries (b->sid_out):
 * those of the session's matching subscriptions [MQTT-3.3.4-3]; 0 for 3.1.1. */
static uint32_t sub_ids_for(struct mqtt_broker *b, const struct mqtt_conn *c, const uint8_t *topic, size_t tlen)
{
	if (!c->v5 || !b->n_sids)
		return 0;
	return mqtt_sub_ids_matching(b, c->session, topic, tlen);
}

static int send_dlv(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt_dlv *d, bool dup)
{
	const struct mqtt_msg *m = d->msg;
	struct mqtt_message v = { .topic = m->data, .topic_len = m->topic_len, .payload = mqtt_msg_payload(m),
				  .payload_len = m->payload_len, .props = mqtt_msg_props(m), .props_len = m->props_len,
				  .expiry_s = mqtt_msg_expiry_left(m, now_s(b)) };
	uint32_t n_ids = sub_ids_for(b, c, v.topic, v.topic_len);
	return mqtt_send_message(b, c, &v, d->qos, dup, (d->state & MQTT_DLV_RETAIN) != 0, d->pid, b->sid_out, n_ids);
}

/* The in-flight window of a session's connection: ours, or the 5.0 client's Receive
 * Maximum when smaller [MQTT-3.3.4-9]. */
static uint32_t window(const struct mqtt_broker *b, const struct mqtt_conn *c)
{
	return c->v5 ? MIN((uint32_t)b->cfg.max_inflight, (uint32_t)c->x5->recv_max) : b->cfg.max_inflight;
}

/* ---- sessions: delivery ---------------------------------------------------------------- */

static uint8_t dlv_state(const struct mqtt_dlv *d)
{
	return (uint8_t)(d->state & ~(MQTT_DLV_RETAIN | MQTT_DLV_FRESH | MQTT_DLV_OWED));
}

static void dlv_set_state(struct mqtt_dlv *d, uint8_t st)
{
	d->state = (uint8_t)((d->state & (MQTT_DLV_RETAIN | MQTT_DLV_FRESH)) | st);
}

static void record_queued(struct mqtt_broker *b, const struct mqtt_session *s, const struct mqtt_dlv *r,
			  uint16_t sent_pid);

static bool pid_in_flight(const struct mqtt_broker *b, const struct mqtt_session *s, uint16_t pid)
{
	for (uint32_t d = s->q_head; d != MQTT_NIL; d = b->dlvs[d].next)
		if (b->dlvs[d].pid == pid && dlv_state(&b->dlvs[d]) != MQTT_DLV_QUEUED)
			return true;
	return false;
}

static uint16_t pid_alloc(struct mqtt_broker *b, struct mqtt_session *s)
{
	/* n_inflight < max_inflight < 65535, so a free identifier is always found */
	for (;;) {
		uint16_t pid = s->next_pid;
		s->next_pid = (uint16_t)(pid == UINT16_MAX ? 1 : pid + 1);
		if (!pid_in_flight(b, s, pid))
			return pid;
	}
}

static void q_unlink(struct mqtt_broker *b, struct mqtt_session *s, uint32_t d, uint32_t prev)
{
	if (prev == MQTT_NIL)
		s->q_head = b->dlvs[d].next;
	else
		b->dlvs[prev].next = b->dlvs[d].next;
	if (s->q_tail == d)
		s->q_tail = prev;
	s->n_queued--;
}

static int resend_inflight(struct mqtt_broker *b, uint32_t si, bool owed_only);

static void pump(struct mqtt_broker *b, uint32_t si)
{
	struct mqtt_session *s = &b->sess[si];
	if (s->conn == MQTT_NIL)
		return;
	if ((s->flags & MQTT_SESS_OWED) && resend_inflight(b, si, true) != 0)
		return;
	struct mqtt_conn *c = &b->conns[s->conn];
	uint32_t prev = MQTT_NIL, win = window(b, c);
	for (uint32_t d = s->q_head; d != MQTT_NIL && s->n_inflight < win;) {
		struct mqtt_dlv *r = &b->dlvs[d];
		uint32_t next = r->next;
		if (dlv_state(r) != MQTT_DLV_QUEUED) {
			prev = d;
			d = next;
			continue;
		}
		bool gone = !(r->state & MQTT_DLV_FRESH) && mqtt_msg_expired(r->msg, now_s(b));
		if (!gone) {
			r->pid = pid_alloc(b, s);
			dlv_set_state(r, r->qos == 1 ? MQTT_DLV_WAIT_ACK : MQTT_DLV_WAIT_REC);
			s->n_inflight++;
			int rc = send_dlv(b, c, r, false);
			if (rc == -E_RANGE) {
				/* larger than the 5.0 client's Maximum Packet Size: discarded as
				 * if delivered [MQTT-3.1.2-25] */
				s->n_inflight--;
				b->st.too_big_dropped++;
				gone = true;
			} else if (rc) {
				dlv_set_state(r, MQTT_DLV_QUEUED); /* retried on writable or reconnect */
				r->pid = 0;
				s->n_inflight--;
				return;
			}
		} else {
			/* never sent once its Message Expiry Interval passed (MQTT 5.0 3.3.2.3.3) */
			b->st.expired_dropped++;
		}
		if (gone) {
			if (mqtt_persistent(s) && !(r->state & MQTT_DLV_FRESH))
				mqtt_rec_dlv(b, MQTT_PEV_DLV_DEL, s, r);
			r->state = (uint8_t)(r->state & ~MQTT_DLV_FRESH); /* nothing left to record */
			q_unlink(b, s, d, prev);
			mqtt_dlv_release(b, d);
			d = next;
			continue;
		}
		if (r->state & MQTT_DLV_FRESH) { /* recorded now, as sent */
			r->state = (uint8_t)(r->state & ~MQTT_DLV_FRESH);
			record_queued(b, s, r, r->pid);
		} else if (mqtt_persistent(s)) {
			mqtt_rec_dlv(b, MQTT_PEV_DLV_SENT, s, r);
		}
		prev = d;
		d = next;
	}
}

/* Send again, with DUP and their identifiers [MQTT-4.4.0-1], the deliveries in flight since
 * an earlier connection (owed_only: those still owed), at most as many as the window lets
 * the client hold [MQTT-3.3.4-9]: the rest stay owed (MQTT_DLV_OWED) for the pump. 0, or the
 * transport's error (what was not sent stays as it was). */
static int resend_inflight(struct mqtt_broker *b, uint32_t si, bool owed_only)
{
	struct mqtt_session *s = &b->sess[si];
	struct mqtt_conn *c = &b->conns[s->conn];
	uint32_t prev = MQTT_NIL, held = 0, win = window(b, c);
	if (owed_only) /* the client holds those in flight that are not owed */
		for (uint32_t d = s->q_head; d != MQTT_NIL; d = b->dlvs[d].next)
			held += dlv_state(&b->dlvs[d]) != MQTT_DLV_QUEUED && !(b->dlvs[d].state & MQTT_DLV_OWED);
	bool owed = false;
	for (uint32_t d = s->q_head; d != MQTT_NIL;) {
		struct mqtt_dlv *r = &b->dlvs[d];
		uint32_t next = r->next;
		uint8_t st = dlv_state(r);
		if (st == MQTT_DLV_QUEUED || (owed_only && !(r->state & MQTT_DLV_OWED))) {
			prev = d;
			d = next;
			continue;
		}
		if (held >= win) {
			r->state |= MQTT_DLV_OWED;
			owed = true;
			prev = d;
			d = next;
			continue;
		}
		int rc = st == MQTT_DLV_WAIT_COMP ? mqtt_send_ack(b, c, MQTT_PUBREL, r->pid) : send_dlv(b, c, r, true);
		if (rc == -E_RANGE) {
			/* too large for the client that came back (5.0): discarded as if delivered */
			if (mqtt_persistent(s))
				mqtt_rec_dlv(b, MQTT_PEV_DLV_DEL, s, r);
			b->st.too_big_dropped++;
			s->n_inflight--;
			q_unlink(b, s, d, prev);
			mqtt_dlv_release(b, d);
			d = next;
			continue;
		}
		if (rc) {
			s->flags |= MQTT_SESS_OWED; /* this one and those after it: sent when writable */
			for (; d != MQTT_NIL; d = b->dlvs[d].next)
				if (dlv_state(&b->dlvs[d]) != MQTT_DLV_QUEUED && (!owed_only || (b->dlvs[d].state & MQTT_DLV_OWED)))
					b->dlvs[d].state |= MQTT_DLV_OWED;
			return rc;
		}
		r->state = (uint8_t)(r->state & ~MQTT_DLV_OWED);
		held++;
		prev = d;
		d = next;
	}
	s->flags = (uint8_t)(owed ? s->flags | MQTT_SESS_OWED : s->flags & ~MQTT_SESS_OWED);
	return 0;
}

/* At a reconnect: redeliver what is in flight, then fill the window. */
static void resend(struct mqtt_broker *b, uint32_t si)
{
	if (resend_inflight(b, si, false) == 0)
		pump(b, si);
}

struct msg_view {
	const struct mqtt_message *m; /* borrowed */
	struct mqtt_msg *msg; /* created lazily by deliver, one reference held by the router */
};

/* v's message block: made once (one reference held by the router), NULL on no memory. */
static struct mqtt_msg *view_msg(struct mqtt_broker *b, struct msg_view *v)
{
	if (!v->msg)
		v->msg = mqtt_msg_new(b, v->m, now_s(b));
	return v->msg;
}

/* A persistent session's new delivery: its message once per shard (MSG_PUT), then the
 * delivery (DLV_PUT), queued, or sent already with sent_pid (not 0) when the pump sent it
 * before it was recorded. */
static void record_queued(struct mqtt_broker *b, const struct mqtt_session *s, const struct mqtt_dlv *r,
			  uint16_t sent_pid)
{
	struct mqtt_msg *m = r->msg;
	if (!m->mkey) {
		m->mkey = mqtt_key_new(b);
		struct mqtt_pev ev = { .kind = MQTT_PEV_MSG_PUT, .mkey = m->mkey, .qos = m->qos,
				       .topic = m->data, .topic_len = m->topic_len,
				       .payload = mqtt_msg_payload(m), .payload_len = m->payload_len,
				       .props = mqtt_msg_props(m), .props_len = m->props_len,
				       .expiry_s = mqtt_msg_expiry_left(m, now_s(b)) };
		mqtt_rec(b, &ev);
	}
	struct mqtt_pev ev = { .kind = MQTT_PEV_DLV_PUT, .skey = s->skey, .mkey = m->mkey,
			       .seq = mqtt_key_new(b), .qos = r->qos, .pid = sent_pid,
			       .retain = (r->state & MQTT_DLV_RETAIN) ? 1 : 0 };
	mqtt_rec(b, &ev);
}

static void deliver(struct mqtt_broker *b, uint32_t si, struct msg_view *v, uint8_t qos,
		    bool retain)
{
	struct mqtt_session *s = &b->sess[si];
	if (v->msg && mqtt_msg_expired(v->msg, now_s(b))) {
		b->st.expired_dropped++; /* a retained message past its expiry */
		return;
	}
	if (qos == 0) {
		if (s->conn != MQTT_NIL) {
			struct mqtt_conn *c = &b->conns[s->conn];
			uint32_t n_ids = sub_ids_for(b, c, v->m->topic, v->m->topic_len);
			if (mqtt_send_message(b, c, v->m, 0, false, retain, 0, b->sid_out, n_ids) == -E_AGAIN) {
				/* the subscriber reads slower than the publishers write: a drop,
				 * counted against who caused it, and the signal dp slows them by */
				b->st.qos0_busy_dropped++;
				b->st.sub_full_dropped++;
				if (b->route_origin != MQTT_NIL)
					mqtt_fair_drop(b, b->route_origin, MQTT_DROP_QUEUE);
			}
		}
		else {
			b->st.qos0_offline_dropped++;
			if (b->route_origin != MQTT_NIL) /* a publisher on this core */
				mqtt_fair_drop(b, b->route_origin, MQTT_DROP_QUEUE);
		}
		return;
	}
	if (!view_msg(b, v))
		return;
	if (s->n_queued >= b->cfg.max_queue) {
		uint32_t prev = MQTT_NIL, d = s->q_head;
		if (b->cfg.queue_drop_oldest)
			while (d != MQTT_NIL && dlv_state(&b->dlvs[d]) != MQTT_DLV_QUEUED) {
				prev = d;
				d = b->dlvs[d].next;
			}
		if (!b->cfg.queue_drop_oldest || d == MQTT_NIL) {
			b->st.queue_refused++;
			/* A copy owed to a persistent session that cannot be kept: the PUBLISH is
			 * not acknowledged (docs/DURABILITY.md), its connection closed instead. */
			if (mqtt_persistent(s))
				b->route_lost = true;
			return;
		}
		if (mqtt_persistent(s))
			mqtt_rec_dlv(b, MQTT_PEV_DLV_DEL, s, &b->dlvs[d]);
		q_unlink(b, s, d, prev);
		mqtt_dlv_release(b, d);
		b->st.queue_dropped_oldest++;
		if (s->conn != MQTT_NIL) /* a reader that is behind, not one that is away */
			b->st.sub_full_dropped++;
		if (b->route_origin != MQTT_NIL) /* charged to who made the queue overflow */
			mqtt_fair_drop(b, b->route_origin, MQTT_DROP_QUEUE);
	}
	uint32_t d = mqtt_dlv_alloc(b);
	if (d == MQTT_NIL) {
		b->st.queue_refused++;
		return;
	}
	struct mqtt_dlv *r = &b->dlvs[d];
	r->msg = v->msg;
	mqtt_msg_ref(v->msg);
	r->qos = qos;
	r->state = (uint8_t)(MQTT_DLV_QUEUED | (retain ? MQTT_DLV_RETAIN : 0));
	bool fresh = mqtt_persistent(s) && b->store_on;
	if (fresh)
		r->state |= MQTT_DLV_FRESH; /* the pump records it if it sends it now */
	if (s->q_tail == MQTT_NIL)
		s->q_head = d;
	else
		b->dlvs[s->q_tail].next = d;
	s->q_tail = d;
	s->n_queued++;
	pump(b, si);
	if (fresh && (r->state & MQTT_DLV_FRESH)) { /* not sent: recorded queued */
		r->state = (uint8_t)(r->state & ~MQTT_DLV_FRESH);
		record_queued(b, s, r, 0);
	}
}

/* ---- routing ----------------------------------------------------------------------------- */

static bool bytes_eq(const uint8_t *a, size_t al, const uint8_t *c, size_t cl)
{
	return al == cl && (al == 0 || memcmp(a, c, al) == 0);
}

static bool sys_topic(const uint8_t *t, size_t len);

/* The retained message of the topic changed here (a local origin): recorded once, by the
 * shard the PUBLISH arrived on; the other shards keep replicas in memory only. The broker's
 * own $SYS messages are never stored: every boot publishes them anew. */
static void record_retained(struct mqtt_broker *b, const struct msg_view *v)
{
	const struct mqtt_message *m = v->m;
	if (sys_topic(m->topic, m->topic_len))
		return;
	struct mqtt_pev ev = { .kind = m->payload_len ? MQTT_PEV_RET_PUT : MQTT_PEV_RET_DEL, .qos = m->qos,
			       .topic = m->topic, .topic_len = m->topic_len, .payload = m->payload,
			       .payload_len = m->payload_len, .props = m->props, .props_len = m->props_len,
			       .expiry_s = m->expiry_s };
	mqtt_rec(b, &ev);
}

/* Store (or clear, with an empty payload) the retained message of v's topic. 0, or
 * -E_NOMEM when it was refused (the retained limit, the tree or the heap), counted. */
static int retain_store(struct mqtt_broker *b, struct msg_view *v, int n, bool local)
{
	bool clear = v->m->payload_len == 0; /* [MQTT-3.3.1-10], [MQTT-3.3.1-11] */
	if (local && clear)
		record_retained(b, v); /* even with nothing retained here: storage may hold one */
	uint32_t node = mqtt_node_path(b, MQTT_ROOT_ABS, v->m->topic, 0, n, !clear);
	if (node == MQTT_NIL) {
		if (clear)
			return 0;
		b->st.retained_refused++;
		return -E_NOMEM;
	}
	struct mqtt_node *nd = &b->nodes[node];
	if (clear) {
		if (nd->retained) {
			mqtt_msg_unref(b, nd->retained);
			nd->retained = NULL;
			b->n_retained--;
			mqtt_node_prune(b, node);
		}
		return 0;
	}
	if (!nd->retained && b->n_retained >= b->cfg.max_retained) {
		b->st.retained_refused++;
		mqtt_node_prune(b, node);
		return -E_NOMEM;
	}
	if (!view_msg(b, v)) {
		b->st.retained_refused++;
		mqtt_node_prune(b, node);
		return -E_NOMEM;
	}
	/* replaces any earlier retained message on this topic [MQTT-3.3.1-5] */
	if (nd->retained)
		mqtt_msg_unref(b, nd->retained);
	else
		b->n_retained++;
	nd->retained = v->msg;
	mqtt_msg_ref(v->msg);
	if (local)
		record_retained(b, v);
	return 0;
}

int mqtt_retain_set(struct mqtt_broker *b, const struct mqtt_message *m)
{
	struct msg_view v = { m, NULL };
	int n = mqtt_topic_split(b, m->topic, (uint16_t)m->topic_len);
	if (n < 0)
		return -E_INVAL;
	int err = retain_store(b, &v, n, false);
	if (v.msg)
		mqtt_msg_unref(b, v.msg);
	return err;
}

/* Deliver to this shard's subscribers (and the retained store); a message of local
 * origin then goes to the other shards (ops.fanout), once. */
static void route(struct mqtt_broker *b, const struct mqtt_message *m, bool local)
{
	const uint8_t *topic = m->topic;
	uint16_t tlen = (uint16_t)m->topic_len;
	uint8_t qos = m->qos;
	/* every shard holding members of a shared subscription's group picks by this value */
	b->share_pick = local ? ++b->share_seq : m->share_pick;
	if (local && b->ops.fanout) {
		b->st.fanout_out++;
		uint32_t ticket = qos ? b->route_ticket : 0;
		struct mqtt_message picked = *m;
		picked.share_pick = b->share_pick;
		b->route_owed += b->ops.fanout(b->ops.ctx, &picked, ticket);
	}
	struct msg_view v = { m, NULL };
	int n = mqtt_topic_split(b, topic, tlen);
	if (n < 0)
		return;
	if (m->retain)
		(void)retain_store(b, &v, n, local); /* a refusal is counted; delivery goes on */
	mqtt_topic_ids(b, topic, n);
	bool dollar = tlen && topic[0] == '$';
	b->n_touched = 0;
	mqtt_tree_match_subs(b, n, dollar);
	/* identity-relative subscriptions of the device named by devices/<id>/... */
	if (n >= 2 && bytes_eq(topic, b->lv_len[0], (const uint8_t *)MQTT_ACL_DEV_PREFIX,
			       MQTT_ACL_DEV_PREFIX_LEN - 1)) {
		uint32_t si = mqtt_sess_find(b, false, topic + b->lv_off[1], b->lv_len[1]);
		if (si != MQTT_NIL) {
			struct mqtt_session *s = &b->sess[si];
			if (s->sub0_node != MQTT_NIL && mqtt_node_match(b, s->sub0_node, 2, n, false))
				mqtt_mark(b, si, s->sub0_qos);
			for (uint32_t r = s->subs; r != MQTT_NIL; r = b->subs[r].next_in_session)
				if (b->subs[r].rel && mqtt_node_match(b, b->subs[r].node, 2, n, false))
					mqtt_mark(b, si, b->subs[r].qos);
		}
	}
	/* once per session, at the maximum QoS of its matching subscriptions; RETAIN 0 on a
	 * live delivery [MQTT-3.3.1-9] unless one of them asked Retain As Published (5.0) */
	for (uint32_t i = 0; i < b->n_touched; i++) {
		uint32_t si = b->touched[i];
		uint8_t mk = b->mark[si];
		uint8_t q = (uint8_t)MIN(qos, (mk & MQTT_MARK_QOS) - 1u);
		b->mark[si] = 0;
		deliver(b, si, &v, q, m->retain && (mk & MQTT_MARK_RAP));
	}
	b->n_touched = 0;
	if (v.msg)
		mqtt_msg_unref(b, v.msg);
}

/* ---- ACL (the decision: acl.c) ----------------------------------------------------------- */

/* Who a connection is for the ACL; id: the certificate identity before CONNECT, the
 * client identifier after (a device's are equal). */
static struct mqtt_acl_subject acl_subject(const struct mqtt_broker *b, const struct mqtt_conn *c,
					   const uint8_t *id, size_t idl)
{
	struct mqtt_acl_subject who = { .kind = (enum mqtt_id_kind)c->kind, .id = id, .id_len = idl };
	if (c->kind != MQTT_ID_DEVICE && c->acl != MQTT_ACL_NO_RULE)
		who.rule = &b->cfg.services[c->acl];
	return who;
}

/* "$SYS" or under "$SYS/": the broker's own topics (mqtt_broker_publish_sys). */
static bool sys_topic(const uint8_t *t, size_t len)
{
	return len >= 4 && memcmp(t, "$SYS", 4) == 0 && (len == 4 || t[4] == '/');
}

/* "$CONTROL" or under "$CONTROL/": the console's topics. */
#define CONTROL_PREFIX "$CONTROL/urmqtt/"
#define CONTROL_REPLY CONTROL_PREFIX "reply/"
static bool control_topic(const uint8_t *t, size_t len)
{
	return len >= 8 && memcmp(t, "$CONTROL", 8) == 0 && (len == 8 || t[8] == '/');
}

/* A service named in list: "name", or one of its connections "name/suffix". */
static bool named_service(const char *const *list, uint16_t n_list, enum mqtt_id_kind kind, const uint8_t *id,
			  size_t idl)
{
	if (kind != MQTT_ID_SERVICE)
		return false;
	for (uint16_t i = 0; i < n_list; i++) {
		size_t n = strlen(list[i]);
		if (idl >= n && memcmp(id, list[i], n) == 0 && (idl == n || id[n] == '/'))
			return true;
	}
	return false;
}

static bool sys_reader(const struct mqtt_broker *b, enum mqtt_id_kind kind, const uint8_t *id, size_t idl)
{
	return named_service(b->cfg.sys_readers, b->cfg.n_sys_readers, kind, id, idl);
}

static bool console_id(const struct mqtt_broker *b, enum mqtt_id_kind kind, const uint8_t *id, size_t idl)
{
	return b->cfg.control && named_service(b->cfg.console_ids, b->cfg.n_console_ids, kind, id, idl);
}

/* The filters a console identity may subscribe to under $CONTROL/: its replies. */
static bool control_reply_filter(const uint8_t *f, size_t len)
{
	size_t n = sizeof CONTROL_REPLY - 1;
	return len >= n && memcmp(f, CONTROL_REPLY, n) == 0;
}

static bool acl_pub(const struct mqtt_broker *b, const struct mqtt_conn *c,
		    const uint8_t *id, size_t idl, const uint8_t *t, size_t tl)
{
	if (sys_topic(t, tl) || control_topic(t, tl))
		return false; /* only the broker speaks there (the console's commands never get here) */
	struct mqtt_acl_subject who = acl_subject(b, c, id, idl);
	return mqtt_acl_pub_ok(&who, t, tl);
}

static bool acl_sub(const struct mqtt_broker *b, const struct mqtt_conn *c,
		    const uint8_t *id, size_t idl, const uint8_t *f, size_t fl)
{
	if (sys_topic(f, fl))
		return sys_reader(b, (enum mqtt_id_kind)c->kind, id, idl);
	if (control_topic(f, fl))
		return control_reply_filter(f, fl) && console_id(b, (enum mqtt_id_kind)c->kind, id, idl);
	struct mqtt_acl_subject who = acl_subject(b, c, id, idl);
	return mqtt_acl_sub_ok(&who, f, fl);
}

static uint16_t acl_rule(const struct mqtt_broker *b, const uint8_t *id, size_t idl)
{
	return mqtt_acl_rule_find(b->cfg.services, b->cfg.n_services, id, idl);
}

bool mqtt_acl_may_read(const struct mqtt_broker *b, enum mqtt_id_kind kind,
		       const uint8_t *identity, size_t id_len, const uint8_t *topic,
		       size_t topic_len)
{
	if (sys_topic(topic, topic_len))
		return sys_reader(b, kind, identity, id_len);
	if (control_topic(topic, topic_len))
		return control_reply_filter(topic, topic_len) && console_id(b, kind, identity, id_len);
	struct mqtt_acl_subject who = { .kind = kind, .id = identity, .id_len = id_len };
	uint16_t rule = kind == MQTT_ID_DEVICE ? MQTT_ACL_NO_RULE : acl_rule(b, identity, id_len);
	if (rule != MQTT_ACL_NO_RULE)
		who.rule = &b->cfg.services[rule];
	return mqtt_acl_read_ok(&who, topic, topic_len);
}

int mqtt_broker_publish_sys(struct mqtt_broker *b, const uint8_t *topic, size_t tlen, const uint8_t *payload,
			    size_t plen)
{
	if (tlen < 5 || tlen > UINT16_MAX || !sys_topic(topic, tlen) || !mqtt_topic_valid(topic, tlen) ||
	    !mqtt_utf8_valid(topic, tlen))
		return -E_INVAL;
	struct mqtt_message m = { .topic = topic, .topic_len = tlen, .payload = payload, .payload_len = plen,
				  .qos = 0, .retain = true };
	route(b, &m, true);
	return 0;
}

/* ---- connections ------------------------------------------------------------------- */

/* End a connection: detach the session (freeing it if clean), publish the will when
 * asked, give back every buffer, then tell the transport if we initiated it. */
/* A 5.0 connection's own block and its Topic Aliases are given back (its will is the
 * caller's). */
static void conn5_free(struct mqtt_broker *b, struct mqtt_conn *c)
{
	struct mqtt_conn5 *x = c->x5;
	mqtt_aliases_free(b, c);
	mqtt_heap_free(b, x, sizeof *x);
	c->x5 = NULL;
}

/* Publish a will now (its reference stays the caller's). */
static void will_publish(struct mqtt_broker *b, struct mqtt_msg *m)
{
	b->st.wills_published++;
	struct mqtt_message wm = { .topic = m->data, .topic_len = m->topic_len, .payload = mqtt_msg_payload(m),
				   .payload_len = m->payload_len, .props = mqtt_msg_props(m), .props_len = m->props_len,
				   .expiry_s = mqtt_msg_expiry_left(m, now_s(b)), .qos = m->qos,
				   .retain = m->retain != 0 };
	route(b, &wm, true);
}

/* ---- delayed wills (5.0): at most cfg.max_delayed_wills wait; more are sent at once ---- */

/* Hold session si's will m (its reference taken) for delay_s: true, or false when every
 * slot is taken (the caller publishes it now). */
static bool will_defer(struct mqtt_broker *b, uint32_t si, struct mqtt_msg *m, uint32_t delay_s)
{
	if (b->n_dwills >= b->cfg.max_delayed_wills) {
		b->st.wills_undelayed++;
		return false;
	}
	/* never early: the current second rounded up (the tick then sends it within a second) */
	b->dwills[b->n_dwills++] = (struct mqtt_dwill){ .msg = m, .sess = si,
							.due_s = (uint32_t)mqtt_second_after(b, delay_s) };
	return true;
}

static void will_drop_at(struct mqtt_broker *b, uint32_t i)
{
	mqtt_msg_unref(b, b->dwills[i].msg);
	b->dwills[i] = b->dwills[--b->n_dwills];
}

/* Session si is back or gone: its delayed will is never sent. */
static void will_cancel(struct mqtt_broker *b, uint32_t si)
{
	for (uint32_t i = 0; i < b->n_dwills; i++)
		if (b->dwills[i].sess == si) {
			will_drop_at(b, i);
			return;
		}
}

void mqtt_will_session_gone(struct mqtt_broker *b, uint32_t si)
{
	will_cancel(b, si);
}

/* The delayed wills whose time came are published (from the tick). */
static void wills_due(struct mqtt_broker *b)
{
	for (uint32_t i = 0; i < b->n_dwills;) {
		if ((int32_t)(now_s(b) - b->dwills[i].due_s) < 0) {
			i++;
			continue;
		}
		will_publish(b, b->dwills[i].msg);
		will_drop_at(b, i);
	}
}

/* ---- session expiry ---------------------------------------------------------------- */

/* Kept sessions whose Session Expiry Interval passed since their connection ended are
 * ended (from the tick): a will still delayed goes out first, as its session ends
 * (MQTT 5.0 3.1.3.2.2), then the session and everything stored of it [MQTT-4.1.0-2]. */
static void sessions_expire(struct mqtt_broker *b)
{
	uint32_t now = now_s(b);
	for (uint32_t si = 0; si < b->cfg.max_sessions; si++) {
		uint32_t at = b->sess_exp[si];
		if (at == UINT32_MAX || now < at)
			continue;
		const struct mqtt_session *s = &b->sess[si];
		if (!(s->flags & MQTT_SESS_USED) || s->conn != MQTT_NIL)
			continue;
		for (uint32_t i = 0; i < b->n_dwills; i++)
			if (b->dwills[i].sess == si) {
				will_publish(b, b->dwills[i].msg);
				will_drop_at(b, i);
				break;
			}
		b->st.sessions_expired++;
		mqtt_sess_free(b, si);
		b->sess_exp[si] = UINT32_MAX;
	}
}

static void conn_end(struct mqtt_broker *b, struct mqtt_conn *c, bool notify, bool will)
{
	void *user = c->user;
	uint32_t si = c->session;
	mqtt_held_forget(b, conn_idx(b, c), si); /* its held acknowledgements go nowhere now */
	mqtt_tq_conn_end(b, conn_idx(b, c));
	if (si != MQTT_NIL)
		b->sess[si].conn = MQTT_NIL;
	mqtt_rate_release(b, c->rate); /* the bucket stays: a reconnect finds it */
	c->rate = MQTT_NIL;
	uint8_t reason = b->disc_reason;
	const char *why = b->disc_why;
	b->disc_reason = 0;
	b->disc_why = NULL;
	if (notify && reason && c->v5 && c->state == MQTT_CONN_UP) {
		/* the 5.0 client is told why (MQTT 5.0 3.14), with a Reason String (allowed on
		 * DISCONNECT whatever Request Problem Information says): best effort, the close
		 * follows */
		struct mqtt_props p = { 0 };
		if (why) {
			p.present = MQTT_PROP_BIT(MQTT_PROP_REASON_STRING);
			p.reason_string = (struct mqtt_str){ (const uint8_t *)why, (uint16_t)strlen(why) };
		}
		struct wcur w = wcur_make(b->out, b->out_len);
		int enc = mqtt5_encode_disconnect(&w, reason, &p);
		if (enc == 0 && c->x5->max_packet && w.pos > c->x5->max_packet) {
			/* above the client's Maximum Packet Size: without its Reason String
			 * [MQTT-3.14.2-3] (the code alone is 4 bytes: within the maximum of any
			 * client that took its CONNACK, 5 bytes at least) */
			memset(&p, 0, sizeof p);
			w = wcur_make(b->out, b->out_len);
			enc = mqtt5_encode_disconnect(&w, reason, &p);
		}
		if (enc == 0)
			(void)mqtt_send_encoded(b, c, &w);
	}
	if (c->state == MQTT_CONN_NEW) {
		mqtt_heap_free(b, c->identity, c->identity_len);
		c->identity = NULL;
	} else {
		struct mqtt_msg *m = c->v5 ? c->x5->will : c->will;
		uint32_t delay = si != MQTT_NIL ? b->sess[si].will_delay_s : 0;
		if (c->v5)
			conn5_free(b, c);
		c->will = NULL;
		bool kept = si != MQTT_NIL && !(b->sess[si].flags & MQTT_SESS_CLEAN);
		/* a Will Delay Interval holds it while the session lives on (5.0 3.1.3.2.2) */
		if (m && will && delay && kept && will_defer(b, si, m, delay))
			m = NULL;
		if (m && will)
			will_publish(b, m);
		if (m)
			mqtt_msg_unref(b, m);
	}
	if (si != MQTT_NIL && (b->sess[si].flags & MQTT_SESS_CLEAN))
		mqtt_sess_free(b, si); /* [MQTT-3.1.2-6] */
	else if (si != MQTT_NIL && c->state == MQTT_CONN_UP)
		b->sess_exp[si] = mqtt_expiry_deadline(b, b->sess_exp[si]); /* counted from now */
	mqtt_framer_reset(&c->fr, &b->acct);
	memset(c, 0, sizeof *c);
	c->state = MQTT_CONN_FREE;
	c->session = b->conn_free;
	b->conn_free = conn_idx(b, c);
	b->n_conns--;
	if (notify)
		b->ops.close(b->ops.ctx, user);
}

uint32_t mqtt_broker_kick(struct mqtt_broker *b, const uint8_t *id, size_t len)
{
	uint32_t n = 0;
	for (uint32_t i = 0; len && i < b->cfg.max_conns; i++) {
		struct mqtt_conn *c = &b->conns[i];
		if (c->state != MQTT_CONN_UP || c->session == MQTT_NIL)
			continue;
		const struct mqtt_session *s = &b->sess[c->session];
		bool service = s->flags & MQTT_SESS_SERVICE;
		if (s->id_len < len || memcmp(s->id, id, len) != 0 ||
		    (s->id_len != len && !(service && s->id[len] == '/')))
			continue;
		b->st.kicked++;
		say(b, MQTT_LOG_IDENTITY, c, "ended: its identity was revoked");
		b->disc_reason = MQTT_RC_ADMINISTRATIVE_ACTION;
		b->disc_why = "identity revoked or kicked by an operator";
		conn_end(b, c, true, false); /* no will: the device is not trusted any more */
		n++;
	}
	return n;
}

int mqtt_conn_open(struct mqtt_broker *b, const uint8_t *identity, size_t id_len,
		   enum mqtt_id_kind kind, void *user, uint64_t now_ms, struct mqtt_conn **out)
{
	*out = NULL;
	clock_see(b, now_ms);
	if (id_len == 0 || id_len > UINT8_MAX || !mqtt_utf8_valid(identity, id_len)) {
		say(b, MQTT_LOG_IDENTITY, NULL, "identity refused (length %zu or UTF-8)", id_len);
		return -E_INVAL;
	}
	if (kind == MQTT_ID_DEVICE)
		for (size_t i = 0; i < id_len; i++)
			if (identity[i] == '/' || identity[i] == '+' || identity[i] == '#') {
				/* must name exactly one topic level */
				say(b, MQTT_LOG_IDENTITY, NULL, "device identity with / + or #");
				return -E_INVAL;
			}
	if (b->conn_free == MQTT_NIL) {
		b->st.pool_exhausted++;
		say(b, MQTT_LOG_RESOURCE, NULL, "connection pool full");
		return -E_NOMEM;
	}
	uint8_t *idc = mqtt_heap_alloc(b, id_len);
	if (!idc) {
		say(b, MQTT_LOG_RESOURCE, NULL, "heap full at connection open");
		return -E_NOMEM;
	}
	memcpy(idc, identity, id_len);
	uint32_t ci = b->conn_free;
	struct mqtt_conn *c = &b->conns[ci];
	b->conn_free = c->session;
	memset(c, 0, sizeof *c);
	c->user = user;
	c->identity = idc;
	c->identity_len = (uint8_t)id_len;
	c->kind = (uint8_t)kind;
	c->acl = kind == MQTT_ID_SERVICE ? acl_rule(b, identity, id_len) : MQTT_ACL_NO_RULE;
	c->session = MQTT_NIL;
	c->rate = MQTT_NIL;
	c->state = MQTT_CONN_NEW;
	c->last_rx_ms = (uint32_t)now_ms;
	b->n_conns++;
	*out = c;
	return 0;
}

void mqtt_conn_fail(struct mqtt_broker *b, struct mqtt_conn *c, const char *why)
{
	say(b, MQTT_LOG_RESOURCE, c, "closed before acknowledging: %s", why);
	conn_end(b, c, true, true);
}

static int refuse(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t rc, enum mqtt_log_reason why,
		  const char *fmt, ...) PRINTF_LIKE(5, 6);
static int refuse(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t rc, enum mqtt_log_reason why,
		  const char *fmt, ...)
{
	char what[96];
	va_list ap;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	b->st.connack_refused++;
	say(b, why, c, "CONNECT refused with 0x%02x: %s", rc, what);
	(void)send_connack(b, c, false, rc);
	conn_end(b, c, true, false);
	return -E_CLOSED;
}

/* The client identifier a CONNECT may use: the certificate identity (or, for a service,
 * identity/suffix); mqtt.client_id_policy "override" replaces another by it. 0 with *id,
 * *idl set, or the refusal (-E_CLOSED). */
static int connect_identity(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t **id, size_t *idl)
{
	bool service = c->kind == MQTT_ID_SERVICE;
	if (!bytes_eq(*id, *idl, c->identity, c->identity_len) &&
	    !(service && *idl > c->identity_len && memcmp(*id, c->identity, c->identity_len) == 0 &&
	      (*id)[c->identity_len] == '/')) {
		char sent[LOG_ID_MAX + 1];
		(void)log_bytes(sent, *id, *idl);
		if (service || !b->cfg.client_id_override)
			return refuse(b, c, MQTT_CONNACK_NOT_AUTHORIZED, MQTT_LOG_IDENTITY,
				      "client id '%s' is not the certificate identity", sent);
		/* client_id_policy "override": the session is the certificate identity's */
		b->st.client_id_overridden++;
		say(b, MQTT_LOG_IDENTITY, c, "client id '%s' replaced by the certificate identity", sent);
		*id = c->identity;
		*idl = c->identity_len;
	}
	return 0;
}

/* A CONNECT's will: the ACL, then its message block (refs 1; retain set). 0 with *out (NULL
 * when there is none), or the refusal. */
static int connect_will(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt_message *wm,
			struct mqtt_msg **out)
{
	*out = NULL;
	if (!wm)
		return 0;
	if (!acl_pub(b, c, c->identity, c->identity_len, wm->topic, wm->topic_len)) {
		b->st.acl_denied_pub++;
		return refuse(b, c, MQTT_CONNACK_NOT_AUTHORIZED, MQTT_LOG_ACL, "will topic denied");
	}
	*out = mqtt_msg_new(b, wm, now_s(b));
	if (!*out)
		return refuse(b, c, MQTT_CONNACK_UNAVAILABLE, MQTT_LOG_RESOURCE, "no memory for the will");
	(*out)->retain = wm->retain;
	return 0;
}

/* What a CONNECT asks, either version. */
struct connect_req {
	const uint8_t *id;
	size_t idl;
	uint16_t keepalive_s;
	bool clean_start;     /* discard a session that exists */
	bool ends_with_conn;  /* the session ends when this connection does */
	uint32_t expiry_s;    /* else: its Session Expiry Interval (UINT32_MAX: never) */
	struct mqtt_msg *will; /* taken: given to the connection, or dropped on refusal */
	uint32_t will_delay_s; /* 5.0 */
	struct mqtt_conn5 *x5; /* 5.0: taken likewise */
};

static void connect_req_drop(struct mqtt_broker *b, struct connect_req *r)
{
	if (r->will)
		mqtt_msg_unref(b, r->will);
	if (r->x5)
		mqtt_heap_free(b, r->x5, sizeof *r->x5);
	r->will = NULL;
	r->x5 = NULL;
}

static int connect_refuse(struct mqtt_broker *b, struct mqtt_conn *c, struct connect_req *r, const char *why)
{
	connect_req_drop(b, r);
	return refuse(b, c, MQTT_CONNACK_UNAVAILABLE, MQTT_LOG_RESOURCE, "%s", why);
}

static void will_cancel(struct mqtt_broker *b, uint32_t si);

/* Attached session si's Session Expiry Interval becomes interval_s; a persistent session's
 * is stored anew when it changed. */
static void session_interval(struct mqtt_broker *b, uint32_t si, uint32_t interval_s)
{
	if (b->sess_exp[si] == interval_s)
		return;
	b->sess_exp[si] = interval_s;
	if (mqtt_persistent(&b->sess[si]))
		mqtt_rec_sess(b, MQTT_PEV_SESS_PUT, &b->sess[si]);
}

/* The rest of a CONNECT, both versions: rate bucket, takeover, session, CONNACK. */
static int connect_finish(struct mqtt_broker *b, struct mqtt_conn *c, struct connect_req *r, uint64_t now_ms)
{
	bool service = c->kind == MQTT_ID_SERVICE;
	if (mqtt_rate_on(&b->cfg)) {
		/* before the takeover: the old connection's reference keeps the bucket */
		c->rate = mqtt_rate_acquire(b, service, c->identity, c->identity_len);
		if (c->rate == MQTT_NIL)
			return connect_refuse(b, c, r, "rate table full of unrefilled buckets");
	}
	uint32_t si = mqtt_sess_find(b, service, r->id, r->idl);
	if (si != MQTT_NIL && b->sess[si].conn != MQTT_NIL) {
		/* takeover: the existing connection is closed [MQTT-3.1.4-2] */
		b->st.takeovers++;
		b->disc_reason = MQTT_RC_SESSION_TAKEN_OVER;
		b->disc_why = "session taken over by a new connection";
		conn_end(b, &b->conns[b->sess[si].conn], true, true);
		si = mqtt_sess_find(b, service, r->id, r->idl);
	}
	if (si != MQTT_NIL)
		will_cancel(b, si); /* a delayed will is not sent once its session is back (5.0) */
	if (si != MQTT_NIL && r->clean_start) {
		mqtt_sess_free(b, si); /* [MQTT-3.1.2-6] (and SESS_DEL when it was stored) */
		si = MQTT_NIL;
	}
	bool present = si != MQTT_NIL; /* [MQTT-3.2.2-1..3] */
	if (si == MQTT_NIL) {
		si = mqtt_sess_new(b, service, r->id, r->idl);
		if (si == MQTT_NIL)
			return connect_refuse(b, c, r, "no session record");
		b->sess_exp[si] = r->expiry_s;
		if (!r->ends_with_conn && b->store_on) {
			b->sess[si].skey = mqtt_key_new(b); /* session invariant 8 */
			if (b->sess[si].skey)
				mqtt_rec_sess(b, MQTT_PEV_SESS_PUT, &b->sess[si]);
		}
	} else {
		session_interval(b, si, r->expiry_s); /* resumed: its deadline becomes an interval */
	}
	struct mqtt_session *s = &b->sess[si];
	s->will_delay_s = r->will_delay_s;
	if (r->ends_with_conn)
		s->flags |= MQTT_SESS_CLEAN;
	else
		s->flags = (uint8_t)(s->flags & ~MQTT_SESS_CLEAN);
	if (b->store_on) { /* the device registry: who connected, when (storage stamps it) */
		struct mqtt_pev seen = { .kind = MQTT_PEV_SEEN, .id_kind = c->kind, .id = c->identity,
					 .id_len = c->identity_len };
		mqtt_rec(b, &seen);
	}
	mqtt_heap_free(b, c->identity, c->identity_len);
	c->identity = NULL;
	if (r->x5) { /* 5.0 (handle_connect5 always makes it) */
		r->x5->will = r->will;
		c->x5 = r->x5;
	} else {
		c->will = r->will;
	}
	r->x5 = NULL;
	r->will = NULL;
	s->conn = conn_idx(b, c);
	c->session = si;
	c->state = MQTT_CONN_UP;
	c->keepalive_s = r->keepalive_s;
	c->last_rx_ms = (uint32_t)now_ms;
	if (send_connack(b, c, present, MQTT_CONNACK_ACCEPTED) == -E_RANGE) { /* [MQTT-3.2.0-1] */
		/* a Maximum Packet Size below a bare CONNACK's 5 bytes: nothing can be said */
		b->st.proto_closes++;
		say(b, MQTT_LOG_PROTOCOL, c, "Maximum Packet Size %u: below a CONNACK", (unsigned)c->x5->max_packet);
		conn_end(b, c, true, false);
		return -E_CLOSED;
	}
	resend(b, si);
	return 0;
}

static int handle_connect(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt_connect *k,
			  uint64_t now_ms)
{
	/* 3.1.1's kept session asks for no end: cfg.max_session_expiry_s, if any, gives one */
	struct connect_req r = { .id = k->client_id.p, .idl = k->client_id.len, .keepalive_s = k->keepalive_s,
				 .clean_start = k->clean, .ends_with_conn = k->clean,
				 .expiry_s = mqtt_expiry_capped(b, UINT32_MAX) };
	if (r.idl == 0) {
		/* server-assigned identifier [MQTT-3.1.3-6]: the authenticated identity */
		r.id = c->identity;
		r.idl = c->identity_len;
	}
	int rc = connect_identity(b, c, &r.id, &r.idl);
	if (rc)
		return rc;
	struct mqtt_message wm = { .topic = k->will_topic.p, .topic_len = k->will_topic.len, .payload = k->will_msg.p,
				   .payload_len = k->will_msg.len, .qos = k->will_qos, .retain = k->will_retain };
	if ((rc = connect_will(b, c, k->will ? &wm : NULL, &r.will)) != 0)
		return rc;
	return connect_finish(b, c, &r, now_ms);
}

/* A fleet (mqtt/fleet.h, ADR-072): a 5.0 device whose home is another appliance is told
 * where it is, CONNACK 0x9C (Use another server) with the home's "host:port" as Server
 * Reference (MQTT 5.0 4.11), and its connection ends: -E_CLOSED. 0 when there is no fleet,
 * the device is at home, or the identity is a service's (backends connect everywhere).
 * max_packet: the CONNECT's Maximum Packet Size (0: none). */
static int connect_redirect(struct mqtt_broker *b, struct mqtt_conn *c, uint32_t max_packet)
{
	const struct mqtt_fleet *f = b->cfg.fleet;
	if (!f || c->kind != MQTT_ID_DEVICE)
		return 0;
	uint32_t home = mqtt_fleet_home(f, c->identity, c->identity_len);
	if (home == f->self)
		return 0;
	const struct mqtt_fleet_member *m = mqtt_fleet_member(f, home);
	struct mqtt_props p;
	memset(&p, 0, sizeof p);
	p.present = MQTT_PROP_BIT(MQTT_PROP_SERVER_REFERENCE);
	p.server_reference = (struct mqtt_str){ (const uint8_t *)m->ref, m->ref_len };
	if (max_packet && mqtt5_connack_size(&p) > max_packet)
		p.present = 0; /* beyond the client's Maximum Packet Size [MQTT-3.1.2-24]: 0x9C alone */
	struct wcur w = wcur_make(b->out, b->out_len);
	b->st.redirected++;
	if (mqtt5_encode_connack(&w, false, MQTT_RC_USE_ANOTHER_SERVER, &p) == 0)
		(void)mqtt_send_encoded(b, c, &w);
	conn_end(b, c, true, false);
	return -E_CLOSED;
}

/* A 5.0 CONNECT (MQTT 5.0 3.1): the same identity and ACL rules as 3.1.1; an empty client
 * identifier is refused (never assigned: the identity is the certificate's), enhanced
 * authentication is refused (the certificate authenticates); Session Expiry Interval 0 ends
 * the session with the connection, any other keeps it that long after it (at most
 * cfg.max_session_expiry_s; the CONNACK says what was granted). */
static int handle_connect5(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt5_connect *k,
			   uint64_t now_ms)
{
	const struct mqtt_props *pr = &k->props;
	if (pr->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD))
		return refuse(b, c, MQTT_RC_BAD_AUTHENTICATION_METHOD, MQTT_LOG_IDENTITY,
			      "enhanced authentication (the certificate authenticates)");
	if (k->client_id.len == 0)
		return refuse(b, c, MQTT_RC_CLIENT_ID_NOT_VALID, MQTT_LOG_IDENTITY,
			      "empty client identifier (never assigned: it must be the certificate identity)");
	uint32_t expiry = (pr->present & MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY)) ? pr->session_expiry_s : 0;
	struct connect_req r = { .id = k->client_id.p, .idl = k->client_id.len, .keepalive_s = k->keepalive_s,
				 .clean_start = k->clean_start, .ends_with_conn = expiry == 0,
				 .expiry_s = mqtt_expiry_capped(b, expiry) };
	int rc = connect_identity(b, c, &r.id, &r.idl);
	if (rc)
		return rc;
	uint32_t max_packet = (pr->present & MQTT_PROP_BIT(MQTT_PROP_MAX_PACKET_SIZE)) ? pr->max_packet_size : 0;
	if ((rc = connect_redirect(b, c, max_packet)) != 0)
		return rc;
	r.x5 = mqtt_heap_alloc(b, sizeof *r.x5);
	if (!r.x5)
		return refuse(b, c, MQTT_CONNACK_UNAVAILABLE, MQTT_LOG_RESOURCE, "no memory for a 5.0 connection");
	memset(r.x5, 0, sizeof *r.x5);
	r.x5->max_packet = (pr->present & MQTT_PROP_BIT(MQTT_PROP_MAX_PACKET_SIZE)) ? pr->max_packet_size : 0;
	r.x5->recv_max = (pr->present & MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAX)) ? pr->receive_max : UINT16_MAX;
	/* outbound Topic Aliases: as many as the client takes, within our own maximum */
	r.x5->alias_out_max = (pr->present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAX))
				      ? (uint16_t)MIN(pr->topic_alias_max, b->cfg.topic_alias_max)
				      : 0;
	if (k->will) {
		/* The will's properties as a PUBLISH carries them (Will Delay Interval and Message
		 * Expiry Interval kept apart), written in b->out until the CONNACK needs it. */
		const struct mqtt_props *wp = &k->will_props;
		struct mqtt_props fwd = *wp;
		fwd.present &= ~(MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY) | MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY));
		struct wcur w = wcur_make(b->out, b->out_len);
		if (mqtt_props_write(&w, &fwd) != 0) {
			connect_req_drop(b, &r);
			return refuse(b, c, MQTT_RC_PACKET_TOO_LARGE, MQTT_LOG_TOO_BIG, "will properties too large");
		}
		r.will_delay_s = (wp->present & MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY)) ? wp->will_delay_s : 0;
		struct mqtt_message wm = {
			.topic = k->will_topic.p, .topic_len = k->will_topic.len, .payload = k->will_payload.p,
			.payload_len = k->will_payload.len, .props = w.buf, .props_len = w.pos,
			.expiry_s = (wp->present & MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY)) ? wp->message_expiry_s : 0,
			.qos = k->will_qos, .retain = k->will_retain };
		if ((rc = connect_will(b, c, &wm, &r.will)) != 0) {
			connect_req_drop(b, &r);
			return rc;
		}
	}
	return connect_finish(b, c, &r, now_ms);
}

static bool rate_ok(struct mqtt_broker *b, struct mqtt_conn *c, size_t bytes, uint64_t now_ms)
{
	if (c->rate == MQTT_NIL)
		return true; /* limits off */
	return mqtt_rate_take(b, c->rate, bytes, now_ms);
}

static uint32_t rx2_find(const struct mqtt_broker *b, const struct mqtt_session *s, uint16_t pid,
			 uint32_t *prev)
{
	*prev = MQTT_NIL;
	for (uint32_t d = s->rx2; d != MQTT_NIL; d = b->dlvs[d].next) {
		if (b->dlvs[d].pid == pid)
			return d;
		*prev = d;
	}
	return MQTT_NIL;
}

static int violation(struct mqtt_broker *b, struct mqtt_conn *c)
{
	if (c->violations < UINT16_MAX)
		c->violations++;
	if (b->cfg.max_violations && c->violations >= b->cfg.max_violations) {
		b->st.acl_closes++;
		say(b, MQTT_LOG_ACL, c, "closed after %u ACL violations", (unsigned)c->violations);
		conn_end(b, c, true, true);
		return -E_CLOSED;
	}
	return 0;
}

/* A 5.0 PUBACK or PUBREC with a failure reason (MQTT 5.0 3.4.2.1, 3.5.2.1): the message is
 * not accepted and, for QoS 2, no PUBREL is expected [MQTT-4.3.3-4]. Held behind earlier
 * acknowledgements like any other (mqtt_ack), so the order of answers is kept. */
static int disconnect5(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t reason, const char *why);

static int ack_refused(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t type, uint16_t pid, uint8_t reason)
{
	uint8_t buf[8];
	struct wcur w = wcur_make(buf, sizeof buf);
	(void)mqtt_ack_track(b, false);
	if (mqtt5_encode_ack(&w, (enum mqtt_type)type, pid, reason, NULL) != 0)
		return disconnect5(b, c, MQTT_RC_IMPLEMENTATION_SPECIFIC, "acknowledgement does not encode");
	return mqtt_ack(b, c, type, pid, w.buf, w.pos);
}

/* Is this topic kept in the telemetry log (storage.telemetry_topics)? */
static bool telemetry_topic(const struct mqtt_broker *b, const uint8_t *t, size_t tlen)
{
	for (uint16_t i = 0; i < b->cfg.n_telemetry_filters; i++) {
		const char *f = b->cfg.telemetry_filters[i];
		if (mqtt_filter_match((const uint8_t *)f, strlen(f), t, tlen))
			return true;
	}
	return false;
}

/* The telemetry record of an accepted PUBLISH: who, what, when (this core's clock; the
 * storage core turns it into wall-clock time). Its acknowledgement, if any, waits for it. */
static void record_telemetry(struct mqtt_broker *b, const struct mqtt_session *s, const struct mqtt_publish *p,
			     uint64_t now_ms)
{
	struct mqtt_pev ev = { .kind = MQTT_PEV_TLOG, .qos = p->qos,
			       .id_kind = (s->flags & MQTT_SESS_SERVICE) ? MQTT_ID_SERVICE : MQTT_ID_DEVICE,
			       .id = s->id, .id_len = s->id_len, .topic = p->topic.p, .topic_len = p->topic.len,
			       .payload = p->payload, .payload_len = p->payload_len, .seq = now_ms * 1000000u };
	uint64_t lost = b->st.store_lost;
	mqtt_rec(b, &ev);
	b->st.tlog_records++;
	if (b->st.store_lost != lost)
		b->st.tlog_lost++;
}

/* A console command (cfg.control): logged with who sent it, answered to this connection. */
static void console(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt_session *s,
		    const struct mqtt_publish *p)
{
	size_t n = sizeof CONTROL_PREFIX - 1;
	const uint8_t *cmd = p->topic.p + n;
	size_t cmd_len = p->topic.len > n && memcmp(p->topic.p, CONTROL_PREFIX, n) == 0 ? p->topic.len - n : 0;
	char reply[MQTT_CONTROL_REPLY_MAX], topic[96];
	size_t rl = cmd_len ? b->cfg.control(b->cfg.control_ctx, s->id, s->id_len, cmd, cmd_len, p->payload,
					     p->payload_len, reply, sizeof reply)
			    : (size_t)fmt_snprintf(reply, sizeof reply, "error: no command (%s<command>)", CONTROL_PREFIX);
	b->st.console_commands++;
	int tl = fmt_snprintf(topic, sizeof topic, "%s%.*s", CONTROL_REPLY, (int)MIN(cmd_len, 64u), (const char *)cmd);
	if (tl > 0 && mqtt_topic_valid((const uint8_t *)topic, (size_t)tl) &&
	    mqtt_send_publish0(b, c, (const uint8_t *)topic, (size_t)tl, (const uint8_t *)reply,
			       MIN(rl, sizeof reply)) != 0)
		b->st.send_again++; /* the reply is lost: the command was still carried out */
}

/* A PUBLISH of either version; x: a 5.0 PUBLISH's properties block (as received) and
 * Message Expiry Interval, NULL for 3.1.1. */
static int handle_publish(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt_publish *p,
			  size_t pkt_len, uint64_t now_ms, const struct mqtt_message *x)
{
	uint32_t si = c->session;
	struct mqtt_session *s = &b->sess[si];
	b->st.msgs_in++;
	b->st.msgs_in_qos[MIN(p->qos, 2u)]++; /* decoded: 0..2 */
	b->st.bytes_in += pkt_len;
	bool drop = false;
	if (!rate_ok(b, c, p->payload_len, now_ms)) {
		if (b->cfg.rate_disconnect) {
			b->st.rate_dropped++;
			b->st.rate_closes++;
			say(b, MQTT_LOG_RATE, c, "over the rate limit: closed");
			conn_end(b, c, true, true);
			return -E_CLOSED;
		}
		if (p->qos) {
			/* Never acknowledge what is dropped (docs/DURABILITY.md): a QoS 1/2 PUBLISH
			 * over the limit closes the connection unacknowledged, a transient error
			 * [MQTT-4.8.0-2]; the client sends it again. */
			b->st.rate_closes++;
			say(b, MQTT_LOG_RATE, c, "over the rate limit: QoS %u PUBLISH not acknowledged, closed",
			    (unsigned)p->qos);
			conn_end(b, c, true, true);
			return -E_CLOSED;
		}
		b->st.rate_dropped++;
		say(b, MQTT_LOG_RATE, c, "over the rate limit: PUBLISH dropped");
		drop = true;
	} else if (mqtt_tq_publish(b, c, p->topic.p, p->topic.len, p->payload, p->payload_len)) {
		drop = true; /* a telemetry query: answered on its reply topic, never routed */
	} else if (control_topic(p->topic.p, p->topic.len) &&
		   console_id(b, (enum mqtt_id_kind)c->kind, s->id, s->id_len)) {
		console(b, c, s, p);
		drop = true; /* a console command: answered on its reply topic, never routed */
	} else if (!acl_pub(b, c, s->id, s->id_len, p->topic.p, p->topic.len)) {
		b->st.acl_denied_pub++;
		char t[LOG_ID_MAX + 1];
		(void)log_bytes(t, p->topic.p, p->topic.len);
		say(b, MQTT_LOG_ACL, c, "PUBLISH to %s denied", t);
		if (violation(b, c))
			return -E_CLOSED;
		drop = true; /* dropped, but acknowledged so the client does not retry forever */
		if (c->v5 && p->qos) /* 5.0 says why: 0x87 ends the flow, no PUBREL follows */
			return ack_refused(b, c, p->qos == 1 ? MQTT_PUBACK : MQTT_PUBREC, p->pid,
					   MQTT_RC_NOT_AUTHORIZED);
	}
	if (p->qos && !mqtt_ack_room(b, (size_t)p->topic.len + p->payload_len + 256u)) {
		/* Storage cannot take what the acknowledgement would promise now: never
		 * acknowledge it (a transient error [MQTT-4.8.0-2]; the client sends again). */
		say(b, MQTT_LOG_RESOURCE, c, "storage link or held acknowledgements full: closed before acknowledging");
		conn_end(b, c, true, true);
		return -E_CLOSED;
	}
	struct mqtt_message msg = { .topic = p->topic.p, .topic_len = p->topic.len, .payload = p->payload,
				    .payload_len = p->payload_len, .props = x ? x->props : NULL,
				    .props_len = x ? x->props_len : 0, .expiry_s = x ? x->expiry_s : 0,
				    .qos = p->qos, .retain = p->retain };
	size_t routed = msg.topic_len + msg.props_len + msg.payload_len;
	uint32_t fe = !drop && b->ops.fanout_room ? mqtt_fair_see(b, si, routed) : MQTT_NIL;
	if (!drop && p->qos == 0 && fe != MQTT_NIL && b->ops.fanout_busy &&
	    b->ops.fanout_busy(b->ops.ctx, msg.topic, msg.topic_len, routed, msg.retain) && mqtt_fair_heavy(b, fe)) {
		/* ADR-075: the links this message takes are congested (its readers are being
		 * slowed) and its publisher sent more than its share of the recent routed
		 * bytes: its QoS 0 copy goes first, so the room left until the links are full
		 * is kept for publishers under their share. */
		b->st.fair_qos0_dropped++;
		mqtt_fair_drop(b, si, MQTT_DROP_FAIR);
		say(b, MQTT_LOG_RESOURCE, c, "shard links congested: QoS 0 PUBLISH over the fair share dropped");
		return 0;
	}
	if (!drop && b->ops.fanout_room &&
	    !b->ops.fanout_room(b->ops.ctx, msg.topic, msg.topic_len, routed, msg.retain)) {
		/* The other shards cannot take it now. Never acknowledge what was not carried:
		 * QoS 0 is dropped; QoS 1/2 close the connection unacknowledged (a transient
		 * error [MQTT-4.8.0-2]) and the client sends it again on reconnect. */
		b->st.fanout_refused++;
		if (p->qos == 0) {
			b->st.fanout_qos0_dropped++;
			mqtt_fair_drop(b, si, MQTT_DROP_LINKS);
			say(b, MQTT_LOG_RESOURCE, c, "shard links full: QoS 0 PUBLISH dropped");
			return 0;
		}
		say(b, MQTT_LOG_RESOURCE, c, "shard links full: closed before acknowledging");
		conn_end(b, c, true, true);
		return -E_CLOSED;
	}
	/* From here the acknowledgement waits for what this PUBLISH makes durable. */
	(void)mqtt_ack_track(b, p->qos > 0);
	if (p->qos == 2) {
		uint32_t prev;
		if (rx2_find(b, s, p->pid, &prev) != MQTT_NIL) {
			b->st.qos2_dups++; /* delivered once already [MQTT-4.3.3-2] */
			return mqtt_ack(b, c, MQTT_PUBREC, p->pid, NULL, 0);
		}
		if (s->n_rx2 >= b->cfg.max_qos2_rx) {
			b->st.proto_closes++;
			say(b, MQTT_LOG_PROTOCOL, c, "more than %u inbound QoS 2 awaiting PUBREL",
			    (unsigned)b->cfg.max_qos2_rx);
			b->disc_reason = MQTT_RC_RECEIVE_MAXIMUM_EXCEEDED; /* 5.0: above our Receive Maximum */
			b->disc_why = "more QoS 2 PUBLISHes awaiting PUBREL than the Receive Maximum";
			conn_end(b, c, true, true);
			return -E_CLOSED;
		}
		uint32_t d = mqtt_dlv_alloc(b);
		if (d == MQTT_NIL) {
			/* transient error: close [MQTT-4.8.0-2] */
			say(b, MQTT_LOG_RESOURCE, c, "delivery pool full for inbound QoS 2");
			conn_end(b, c, true, true);
			return -E_CLOSED;
		}
		b->dlvs[d].pid = p->pid;
		b->dlvs[d].state = MQTT_DLV_RX2;
		b->dlvs[d].next = s->rx2;
		s->rx2 = d;
		s->n_rx2++;
		if (mqtt_persistent(s))
			mqtt_rec_dlv(b, MQTT_PEV_RX2_PUT, s, &b->dlvs[d]);
	}
	if (!drop) {
		b->route_origin = si; /* No Local (5.0) */
		route(b, &msg, true);
		b->route_origin = MQTT_NIL;
		if (b->store_on && telemetry_topic(b, p->topic.p, p->topic.len))
			record_telemetry(b, s, p, now_ms);
	}
	if (p->qos == 1) /* [MQTT-4.3.2-2], once durable (docs/DURABILITY.md) */
		return mqtt_ack(b, c, MQTT_PUBACK, p->pid, NULL, 0);
	if (p->qos == 2) /* [MQTT-4.3.3-2], once durable */
		return mqtt_ack(b, c, MQTT_PUBREC, p->pid, NULL, 0);
	return 0;
}

static int handle_ack(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t type, uint16_t pid)
{
	uint32_t si = c->session;
	struct mqtt_session *s = &b->sess[si];
	if (type == MQTT_PUBREL) {
		uint32_t prev;
		(void)mqtt_ack_track(b, true);
		uint32_t d = rx2_find(b, s, pid, &prev);
		if (d != MQTT_NIL) {
			if (mqtt_persistent(s))
				mqtt_rec_dlv(b, MQTT_PEV_RX2_DEL, s, &b->dlvs[d]);
			if (prev == MQTT_NIL)
				s->rx2 = b->dlvs[d].next;
			else
				b->dlvs[prev].next = b->dlvs[d].next;
			s->n_rx2--;
			mqtt_dlv_release(b, d);
		}
		/* [MQTT-3.6.4-1], [MQTT-4.3.3-2]; once the identifier is forgotten durably, so
		 * that a new PUBLISH reusing it after a crash is not taken for a duplicate */
		return mqtt_ack(b, c, MQTT_PUBCOMP, pid, NULL, 0);
	}
	uint8_t want = type == MQTT_PUBACK ? MQTT_DLV_WAIT_ACK
		       : type == MQTT_PUBREC ? MQTT_DLV_WAIT_REC : MQTT_DLV_WAIT_COMP;
	uint32_t prev = MQTT_NIL;
	for (uint32_t d = s->q_head; d != MQTT_NIL; prev = d, d = b->dlvs[d].next) {
		struct mqtt_dlv *r = &b->dlvs[d];
		uint8_t st = dlv_state(r);
		if (r->pid != pid || st == MQTT_DLV_QUEUED)
			continue;
		if (type == MQTT_PUBREC && st == MQTT_DLV_WAIT_COMP) {
			(void)mqtt_send_ack(b, c, MQTT_PUBREL, pid); /* duplicate PUBREC */
			return 0;
		}
		if (st != want)
			break;
		if (type == MQTT_PUBREC) {
			/* the message is delivered: keep only the identifier [MQTT-4.3.3-1] */
			if (mqtt_persistent(s))
				mqtt_rec_dlv(b, MQTT_PEV_DLV_REC, s, r);
			mqtt_msg_unref(b, r->msg);
			r->msg = NULL;
			dlv_set_state(r, MQTT_DLV_WAIT_COMP);
			(void)mqtt_send_ack(b, c, MQTT_PUBREL, pid);
			return 0;
		}
		if (mqtt_persistent(s))
			mqtt_rec_dlv(b, type == MQTT_PUBACK ? MQTT_PEV_DLV_DEL : MQTT_PEV_DLV_DONE, s, r);
		q_unlink(b, s, d, prev);
		s->n_inflight--;
		mqtt_dlv_release(b, d);
		pump(b, si);
		return 0;
	}
	b->st.unknown_acks++;
	return 0;
}

/* Is this (validated) filter relative to the device's own devices/<id>/ prefix? Then the
 * levels after it are stored below the shared relative root: no per-device nodes. */
static bool filter_rel(const struct mqtt_conn *c, const struct mqtt_session *s,
		       const uint8_t *f, size_t fl)
{
	return c->kind == MQTT_ID_DEVICE && mqtt_acl_device_filter(s->id, s->id_len, f, fl);
}

int mqtt_sub_apply(struct mqtt_broker *b, uint32_t si, const uint8_t *f, size_t fl, uint8_t qos, uint32_t sub_id)
{
	const struct mqtt_session *s = &b->sess[si];
	int nl = mqtt_topic_split(b, f, fl);
	if (nl <= 0)
		return -E_INVAL;
	bool rel = !(s->flags & MQTT_SESS_SERVICE) && mqtt_acl_device_filter(s->id, s->id_len, f, fl);
	return mqtt_sub_add(b, si, f, rel ? 2 : 0, nl, rel, qos, sub_id);
}

struct retained_arg {
	uint32_t si;
	uint8_t qos;
};

static void retained_cb(struct mqtt_broker *b, struct mqtt_msg *m, void *arg)
{
	const struct retained_arg *a = arg;
	struct mqtt_message in = { .topic = m->data, .topic_len = m->topic_len, .payload = mqtt_msg_payload(m),
				   .payload_len = m->payload_len, .props = mqtt_msg_props(m), .props_len = m->props_len,
				   .expiry_s = mqtt_msg_expiry_left(m, now_s(b)), .qos = m->qos, .retain = true };
	struct msg_view v = { &in, m };
	/* sent with RETAIN 1 on a new subscription [MQTT-3.3.1-8] */
	deliver(b, a->si, &v, (uint8_t)MIN(m->qos, a->qos), true);
}

void mqtt_subscribe_retained(struct mqtt_broker *b, uint32_t si, const struct mqtt_filters *filters,
			     const uint8_t *codes)
{
	struct mqtt_filters it = *filters;
	struct mqtt_str f;
	uint8_t q;
	for (size_t i = 0; mqtt_filters_next(&it, &f, &q); i++) {
		if (codes[i] >= MQTT_SUBACK_FAILURE) /* any refusal, 3.1.1 or 5.0 */
			continue;
		int nl = mqtt_topic_split(b, f.p, f.len);
		for (int k = 0; k < nl; k++)
			b->fl_id[k] = mqtt_level_find(b, f.p + b->lv_off[k], b->lv_len[k]);
		struct retained_arg a = { si, codes[i] };
		mqtt_tree_retained(b, nl, retained_cb, &a);
	}
}

/* The end of a SUBSCRIBE, both versions: subscriptions new to this shard's interest
 * summary hold the SUBACK (w, encoded; w->err when it did not encode) until every other
 * shard applied them, so no message published after it can skip this shard; the SUBACK
 * goes once durable for a persistent session; then the retained messages of the filters
 * whose `rcodes` grant one (now, or when the held SUBACK goes out). denied: an ACL
 * refusal counts as a violation. 0, or -E_CLOSED. */
static int suback_then_retained(struct mqtt_broker *b, struct mqtt_conn *c, const struct wcur *w,
				const struct mqtt_filters *filters, const uint8_t *rcodes, bool denied)
{
	uint32_t si = c->session;
	if (b->ops.interest_sync) {
		uint32_t t = mqtt_ack_hold_ticket(b);
		int k = b->ops.interest_sync(b->ops.ctx, t);
		if (k < 0) {
			say(b, MQTT_LOG_RESOURCE, c, "shard links full: closed before acknowledging");
			conn_end(b, c, true, true);
			return -E_CLOSED;
		}
		if (k > 0) {
			b->route_ticket = t;
			b->route_owed += (uint32_t)k;
		}
	}
	uint32_t seq = b->held_head + b->held_n;
	if (wcur_ok(w) && mqtt_ack(b, c, MQTT_SUBACK, 0, w->buf, w->pos))
		return -E_CLOSED;
	if (!mqtt_held_pending(b, seq))
		mqtt_subscribe_retained(b, si, filters, rcodes);
	else if (mqtt_held_attach_subs(b, seq, filters, rcodes) != 0) {
		mqtt_conn_fail(b, c, "no memory to hold a SUBSCRIBE's retained messages");
		return -E_CLOSED;
	}
	if (denied)
		return violation(b, c);
	return 0;
}

static int handle_subscribe(struct mqtt_broker *b, struct mqtt_conn *c,
			    const struct mqtt_packet *pk)
{
	uint32_t si = c->session;
	struct mqtt_filters it = pk->u.filters;
	struct mqtt_str f;
	uint8_t q;
	size_t n = 0;
	bool denied = false;
	if (pk->u.filters.n > b->codes_cap) {
		b->st.proto_closes++;
		say(b, MQTT_LOG_PROTOCOL, c, "SUBSCRIBE with %u filters", (unsigned)pk->u.filters.n);
		conn_end(b, c, true, true);
		return -E_CLOSED;
	}
	(void)mqtt_ack_track(b, true);
	while (mqtt_filters_next(&it, &f, &q)) {
		struct mqtt_session *s = &b->sess[si];
		uint8_t code = MQTT_SUBACK_FAILURE;
		if (!acl_sub(b, c, s->id, s->id_len, f.p, f.len)) {
			b->st.acl_denied_sub++;
			char t[LOG_ID_MAX + 1];
			(void)log_bytes(t, f.p, f.len);
			say(b, MQTT_LOG_ACL, c, "SUBSCRIBE to %s denied", t);
			denied = true;
		} else {
			int rc = mqtt_sub_apply(b, si, f.p, f.len, q, 0);
			if (rc == -E_INVAL)
				say(b, MQTT_LOG_PROTOCOL, c, "filter with too many levels refused");
			else if (rc < 0)
				say(b, rc == -E_RANGE ? MQTT_LOG_PROTOCOL : MQTT_LOG_RESOURCE, c,
				    "subscription refused (%s)",
				    rc == -E_RANGE   ? "per-session limit"
				    : rc == -E_AGAIN ? "shard links full"
						     : "pools full");
			else
				code = q; /* granted as requested [MQTT-3.8.4-5] */
			if (code != MQTT_SUBACK_FAILURE && mqtt_persistent(s)) {
				struct mqtt_pev ev = { .kind = MQTT_PEV_SUB_PUT, .skey = s->skey, .qos = code,
						       .topic = f.p, .topic_len = f.len };
				mqtt_rec(b, &ev);
			}
		}
		b->codes[n++] = code;
	}
	struct wcur w = wcur_make(b->out, b->out_len);
	/* one SUBACK, one code per filter in order [MQTT-3.8.4-1], -4, -5, [MQTT-3.9.3-1] */
	if (mqtt_encode_suback(&w, pk->pid, b->codes, n) != 0)
		w.err = true;
	return suback_then_retained(b, c, &w, &pk->u.filters, b->codes, denied);
}

static int handle_unsubscribe(struct mqtt_broker *b, struct mqtt_conn *c,
			      const struct mqtt_packet *pk)
{
	uint32_t si = c->session;
	struct mqtt_filters it = pk->u.filters;
	struct mqtt_str f;
	uint8_t q;
	(void)mqtt_ack_track(b, true);
	while (mqtt_filters_next(&it, &f, &q)) {
		int nl = mqtt_topic_split(b, f.p, f.len);
		if (nl <= 0)
			continue;
		bool rel = filter_rel(c, &b->sess[si], f.p, f.len);
		(void)mqtt_sub_remove(b, si, f.p, rel ? 2 : 0, nl, rel);
		if (mqtt_persistent(&b->sess[si])) {
			struct mqtt_pev ev = { .kind = MQTT_PEV_SUB_DEL, .skey = b->sess[si].skey,
					       .topic = f.p, .topic_len = f.len };
			mqtt_rec(b, &ev);
		}
	}
	/* [MQTT-3.10.4-4], [MQTT-3.10.4-5]; once durable for a persistent session */
	return mqtt_ack(b, c, MQTT_UNSUBACK, pk->pid, NULL, 0);
}

static int dispatch5(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *pkt, size_t len,
		     uint64_t now_ms);

static int dispatch(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *pkt, size_t len,
		    uint64_t now_ms)
{
	struct mqtt_packet pk;
	enum mqtt_rej rej;
	uint8_t level;
	if (c->v5)
		return dispatch5(b, c, pkt, len, now_ms);
	if (c->state == MQTT_CONN_NEW && (pkt[0] >> 4) == MQTT_CONNECT && mqtt5_connect_level(pkt, len, &level) == 0 &&
	    level == MQTT5_LEVEL) {
		c->v5 = 1; /* from here on every packet, and every answer, is 5.0 */
		return dispatch5(b, c, pkt, len, now_ms);
	}
	if (mqtt_decode(pkt, len, &pk, &rej)) {
		b->st.rej[rej]++;
		b->st.proto_closes++;
		if (c->state == MQTT_CONN_NEW && rej == MQTT_REJ_PROTO_LEVEL)
			return refuse(b, c, MQTT_CONNACK_BAD_PROTOCOL, MQTT_LOG_MALFORMED, "%s",
				      rej_name[rej]); /* [MQTT-3.1.2-2] */
		if (c->state == MQTT_CONN_NEW && rej == MQTT_REJ_CLIENT_ID)
			return refuse(b, c, MQTT_CONNACK_ID_REJECTED, MQTT_LOG_MALFORMED, "%s",
				      rej_name[rej]); /* [MQTT-3.1.3-8] */
		say(b, MQTT_LOG_MALFORMED, c, "packet type %u rejected: %s", (unsigned)(pkt[0] >> 4),
		    rej_name[rej]);
		conn_end(b, c, true, true);
		return -E_CLOSED;
	}
	if ((c->state == MQTT_CONN_NEW) != (pk.type == MQTT_CONNECT)) {
		/* first packet must be CONNECT [MQTT-3.1.0-1]; a second is an error [MQTT-3.1.0-2] */
		b->st.proto_closes++;
		say(b, MQTT_LOG_PROTOCOL, c, "%s", c->state == MQTT_CONN_NEW ?
		    "first packet is not CONNECT" : "second CONNECT");
		conn_end(b, c, true, true);
		return -E_CLOSED;
	}
	switch (pk.type) {
	case MQTT_CONNECT:
		return handle_connect(b, c, &pk.u.connect, now_ms);
	case MQTT_PUBLISH:
		return handle_publish(b, c, &pk.u.publish, len, now_ms, NULL);
	case MQTT_PUBACK:
	case MQTT_PUBREC:
	case MQTT_PUBREL:
	case MQTT_PUBCOMP:
		return handle_ack(b, c, pk.type, pk.pid);
	case MQTT_SUBSCRIBE:
		return handle_subscribe(b, c, &pk);
	case MQTT_UNSUBSCRIBE:
		return handle_unsubscribe(b, c, &pk);
	case MQTT_PINGREQ: {
		struct wcur w = wcur_make(b->out, b->out_len);
		if (mqtt_encode_pingresp(&w) == 0) /* [MQTT-3.12.4-1] */
			(void)mqtt_send_encoded(b, c, &w);
		return 0;
	}
	default: /* DISCONNECT: discard the will [MQTT-3.14.4-3]; the client closes next */
		conn_end(b, c, true, false);
		return -E_CLOSED;
	}
}

/* ---- MQTT 5.0 ------------------------------------------------------------------------------ */

/* End a 5.0 connection, telling the client why (its will is published: not a normal end). */
static int disconnect5(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t reason, const char *why)
{
	b->st.proto_closes++;
	say(b, MQTT_LOG_PROTOCOL, c, "5.0 DISCONNECT 0x%02x: %s", (unsigned)reason, why);
	b->disc_reason = reason;
	b->disc_why = why;
	conn_end(b, c, true, true);
	return -E_CLOSED;
}

/* A 5.0 PUBLISH (MQTT 5.0 3.3): its Topic Alias resolved (a topic sets an alias, an empty
 * topic uses one [MQTT-3.3.2-12]), then as 3.1.1's with its properties carried as received
 * and its Message Expiry Interval. */
static int handle_publish5(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *pkt, size_t len,
			   const struct mqtt5_publish *p5, uint64_t now_ms)
{
	const struct mqtt_props *pr = &p5->props;
	struct mqtt_publish p = { .topic = p5->topic, .payload = p5->payload, .payload_len = p5->payload_len,
				  .pid = p5->pid, .qos = p5->qos, .dup = p5->dup, .retain = p5->retain };
	if (pr->present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS)) {
		uint16_t a = pr->topic_alias;
		if (a == 0 || a > b->cfg.topic_alias_max) /* [MQTT-3.3.2-8], [MQTT-3.3.2-9] */
			return disconnect5(b, c, MQTT_RC_TOPIC_ALIAS_INVALID, "Topic Alias out of range");
		struct mqtt_aliases *tab = mqtt_aliases_get(b, c);
		if (!tab)
			return disconnect5(b, c, MQTT_RC_QUOTA_EXCEEDED, "no memory for Topic Aliases");
		struct mqtt_alias *al = &mqtt_aliases_in(tab)[a - 1];
		if (p.topic.len) {
			uint8_t *t = mqtt_heap_alloc(b, p.topic.len);
			if (!t)
				return disconnect5(b, c, MQTT_RC_QUOTA_EXCEEDED, "no memory for a Topic Alias");
			memcpy(t, p.topic.p, p.topic.len);
			if (al->topic)
				mqtt_heap_free(b, al->topic, al->len);
			al->topic = t;
			al->len = p.topic.len;
			b->st.aliases_set++;
		} else if (!al->topic) {
			return disconnect5(b, c, MQTT_RC_PROTOCOL_ERROR, "Topic Alias never set");
		} else {
			p.topic.p = al->topic;
			p.topic.len = al->len;
		}
	}
	/* the properties block as received: after the topic and packet identifier */
	size_t hl = 2;
	while (hl < 5 && hl < len && (pkt[hl - 1] & 0x80))
		hl++;
	const uint8_t *props = pkt + hl + 2 + p5->topic.len + (p5->qos ? 2 : 0);
	struct mqtt_message x = { .props = props, .props_len = (size_t)(p5->payload - props),
				  .expiry_s = (pr->present & MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY)) ? pr->message_expiry_s : 0 };
	return handle_publish(b, c, &p, len, now_ms, &x);
}

/* A 5.0 PUBREC with a failure reason: the receiver refused the message, so its QoS 2 flow
 * ends there (no PUBREL, MQTT 5.0 4.3.3): the delivery is done. */
static int pubrec_refused(struct mqtt_broker *b, struct mqtt_conn *c, uint16_t pid)
{
	uint32_t si = c->session;
	struct mqtt_session *s = &b->sess[si];
	uint32_t prev = MQTT_NIL;
	for (uint32_t d = s->q_head; d != MQTT_NIL; prev = d, d = b->dlvs[d].next) {
		struct mqtt_dlv *r = &b->dlvs[d];
		if (r->pid != pid || dlv_state(r) != MQTT_DLV_WAIT_REC)
			continue;
		if (mqtt_persistent(s))
			mqtt_rec_dlv(b, MQTT_PEV_DLV_DEL, s, r);
		q_unlink(b, s, d, prev);
		s->n_inflight--;
		mqtt_dlv_release(b, d);
		pump(b, si);
		return 0;
	}
	b->st.unknown_acks++;
	return 0;
}

/* A 5.0 SUBSCRIBE (MQTT 5.0 3.8): options kept with the subscription (No Local, Retain As
 * Published in its options byte) and its Subscription Identifier (subid.c; when they are
 * not offered, cfg.max_sub_ids 0, one ends the connection with 0xA1), Retain Handling
 * applied to the retained messages that follow the SUBACK; a shared subscription is refused
 * per filter (0x9E: the CONNACK said so). */
static int handle_subscribe5(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt5_packet *pk)
{
	uint32_t si = c->session;
	const struct mqtt5_subscribe *sub = &pk->u.sub;
	uint32_t sub_id = 0;
	if (sub->props.present & MQTT_PROP_BIT(MQTT_PROP_SUB_ID)) {
		if (!b->cfg.max_sub_ids) /* the CONNACK said they are not available */
			return disconnect5(b, c, MQTT_RC_SUB_IDS_NOT_SUPPORTED, "Subscription Identifier (not offered)");
		sub_id = sub->props.sub_id;
	}
	if (sub->filters.n > b->codes_cap)
		return disconnect5(b, c, MQTT_RC_QUOTA_EXCEEDED, "too many filters in one SUBSCRIBE");
	struct mqtt5_filters it = sub->filters;
	struct mqtt5_sub f;
	size_t n = 0;
	bool denied = false;
	(void)mqtt_ack_track(b, true);
	while (mqtt5_filters_next(&it, &f)) {
		struct mqtt_session *s = &b->sess[si];
		uint8_t code = MQTT_RC_UNSPECIFIED_ERROR, rcode = MQTT_SUBACK_FAILURE;
		uint8_t opts = (uint8_t)(f.qos | (f.no_local ? MQTT_SUB_NO_LOCAL : 0u) |
					 (f.retain_as_published ? MQTT_SUB_RAP : 0u));
		if (f.share.len && !mqtt_share_offered(b)) {
			code = MQTT_RC_SHARED_SUBS_NOT_SUPPORTED; /* as the CONNACK said */
		} else if (!acl_sub(b, c, s->id, s->id_len, f.match.p, f.match.len)) {
			b->st.acl_denied_sub++;
			char t[LOG_ID_MAX + 1];
			(void)log_bytes(t, f.filter.p, f.filter.len);
			say(b, MQTT_LOG_ACL, c, "SUBSCRIBE to %s denied", t);
			code = MQTT_RC_NOT_AUTHORIZED;
			denied = true;
		} else {
			int rc = f.share.len ? mqtt_share_add(b, si, f.filter.p, f.filter.len, opts, sub_id)
					     : mqtt_sub_apply(b, si, f.filter.p, f.filter.len, opts, sub_id);
			if (rc < 0) {
				say(b, MQTT_LOG_RESOURCE, c, "subscription refused (%s)", err_name(rc));
				code = rc == -E_RANGE || rc == -E_NOMEM ? MQTT_RC_QUOTA_EXCEEDED : MQTT_RC_UNSPECIFIED_ERROR;
			} else {
				code = f.qos; /* granted as requested */
				/* Retain Handling: 0 always, 1 only for a new subscription, 2 never;
				 * never for a shared subscription (MQTT 5.0 4.8.2) */
				if (!f.share.len && (f.retain_handling == 0 || (f.retain_handling == 1 && rc == 0)))
					rcode = f.qos;
				if (mqtt_persistent(s)) {
					struct mqtt_pev ev = { .kind = MQTT_PEV_SUB_PUT, .skey = s->skey, .qos = opts,
							       .topic = f.filter.p, .topic_len = f.filter.len,
							       .sub_id = sub_id };
					mqtt_rec(b, &ev);
				}
			}
		}
		b->codes[n] = code;
		b->rcodes[n++] = rcode;
	}
	struct wcur w = wcur_make(b->out, b->out_len);
	if (mqtt5_encode_suback(&w, pk->pid, NULL, b->codes, n) != 0)
		w.err = true;
	else if (!fits_client(c, w.pos)) /* no way to answer within it: nothing larger is sent */
		return disconnect5(b, c, MQTT_RC_IMPLEMENTATION_SPECIFIC, "SUBACK above the client's Maximum Packet Size");
	/* the filters in 3.1.1's layout (a filter, then a byte whose low bits are its QoS) */
	struct mqtt_filters f311 = { .p = sub->filters.p, .len = sub->filters.len, .n = sub->filters.n,
				     .with_qos = true };
	return suback_then_retained(b, c, &w, &f311, b->rcodes, denied);
}

/* A 5.0 UNSUBSCRIBE: UNSUBACK says per filter whether a subscription existed (0x11). */
static int handle_unsubscribe5(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt5_packet *pk)
{
	uint32_t si = c->session;
	if (pk->u.sub.filters.n > b->codes_cap)
		return disconnect5(b, c, MQTT_RC_QUOTA_EXCEEDED, "too many filters in one UNSUBSCRIBE");
	struct mqtt5_filters it = pk->u.sub.filters;
	struct mqtt5_sub f;
	size_t n = 0;
	(void)mqtt_ack_track(b, true);
	while (mqtt5_filters_next(&it, &f)) {
		uint8_t code = MQTT_RC_NO_SUBSCRIPTION_EXISTED;
		bool gone;
		if (f.share.len) {
			gone = mqtt_share_remove(b, si, f.filter.p, f.filter.len);
		} else {
			int nl = mqtt_topic_split(b, f.filter.p, f.filter.len);
			bool rel = filter_rel(c, &b->sess[si], f.filter.p, f.filter.len);
			gone = nl > 0 && mqtt_sub_remove(b, si, f.filter.p, rel ? 2 : 0, nl, rel);
		}
		if (gone) {
			code = MQTT_RC_SUCCESS;
			if (mqtt_persistent(&b->sess[si])) {
				struct mqtt_pev ev = { .kind = MQTT_PEV_SUB_DEL, .skey = b->sess[si].skey,
						       .topic = f.filter.p, .topic_len = f.filter.len };
				mqtt_rec(b, &ev);
			}
		}
		b->codes[n++] = code;
	}
	struct wcur w = wcur_make(b->out, b->out_len);
	if (mqtt5_encode_unsuback(&w, pk->pid, NULL, b->codes, n) != 0)
		return disconnect5(b, c, MQTT_RC_IMPLEMENTATION_SPECIFIC, "UNSUBACK does not encode");
	if (!fits_client(c, w.pos))
		return disconnect5(b, c, MQTT_RC_IMPLEMENTATION_SPECIFIC, "UNSUBACK above the client's Maximum Packet Size");
	return mqtt_ack(b, c, MQTT_UNSUBACK, 0, w.buf, w.pos);
}

static int dispatch5(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *pkt, size_t len,
		     uint64_t now_ms)
{
	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	if (mqtt5_decode(pkt, len, &pk, &rej)) {
		uint8_t rc = (uint8_t)mqtt5_rej_rc(&rej);
		b->st.v5_rej++;
		if (c->state == MQTT_CONN_NEW)
			return refuse(b, c, rc, MQTT_LOG_MALFORMED, "5.0 CONNECT rejected (site %u)", (unsigned)rej.site);
		if (rc == MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION)
			rc = MQTT_RC_PROTOCOL_ERROR; /* a second CONNECT: 0x84 is a CONNACK code only */
		return disconnect5(b, c, rc, "5.0 packet rejected");
	}
	if ((c->state == MQTT_CONN_NEW) != (pk.type == MQTT_CONNECT)) {
		if (c->state == MQTT_CONN_NEW) {
			b->st.proto_closes++;
			say(b, MQTT_LOG_PROTOCOL, c, "first packet is not CONNECT");
			conn_end(b, c, true, true);
			return -E_CLOSED;
		}
		return disconnect5(b, c, MQTT_RC_PROTOCOL_ERROR, "second CONNECT");
	}
	switch (pk.type) {
	case MQTT_CONNECT:
		b->st.v5_connects++;
		return handle_connect5(b, c, &pk.u.connect, now_ms);
	case MQTT_PUBLISH:
		return handle_publish5(b, c, pkt, len, &pk.u.publish, now_ms);
	case MQTT_PUBREC:
		if (pk.u.reason.reason >= 0x80)
			return pubrec_refused(b, c, pk.pid);
		return handle_ack(b, c, pk.type, pk.pid);
	case MQTT_PUBACK:
	case MQTT_PUBREL:
	case MQTT_PUBCOMP:
		return handle_ack(b, c, pk.type, pk.pid);
	case MQTT_SUBSCRIBE:
		return handle_subscribe5(b, c, &pk);
	case MQTT_UNSUBSCRIBE:
		return handle_unsubscribe5(b, c, &pk);
	case MQTT_PINGREQ: {
		struct wcur w = wcur_make(b->out, b->out_len);
		if (mqtt_encode_pingresp(&w) == 0)
			(void)mqtt_send_encoded(b, c, &w);
		return 0;
	}
	case MQTT_DISCONNECT: {
		const struct mqtt_props *pr = &pk.u.reason.props;
		/* a session kept was asked with a non-zero expiry: CLEAN means its CONNECT said 0 */
		if ((pr->present & MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY)) && c->session != MQTT_NIL &&
		    (b->sess[c->session].flags & MQTT_SESS_CLEAN) && pr->session_expiry_s) /* MQTT 5.0 3.14.2.2.2 */
			return disconnect5(b, c, MQTT_RC_PROTOCOL_ERROR, "Session Expiry raised from 0 at DISCONNECT");
		if ((pr->present & MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY)) && c->session != MQTT_NIL) {
			uint32_t si = c->session;
			if (!pr->session_expiry_s) {
				b->sess[si].flags |= MQTT_SESS_CLEAN; /* it ends now, with its connection */
			} else {
				session_interval(b, si, mqtt_expiry_capped(b, pr->session_expiry_s)); /* 3.14.2.2.2 */
			}
		}
		/* 0x04: the will is published [MQTT-3.14.4-3] */
		conn_end(b, c, true, pk.u.reason.reason == MQTT_RC_DISCONNECT_WITH_WILL);
		return -E_CLOSED;
	}
	default: /* AUTH: enhanced authentication was never begun */
		return disconnect5(b, c, MQTT_RC_PROTOCOL_ERROR, "AUTH without an authentication method");
	}
}

int mqtt_conn_input(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *data, size_t len,
		    uint64_t now_ms)
{
	if (c->state == MQTT_CONN_FREE)
		return -E_CLOSED;
	struct cur in = cur_make(data, len);
	clock_see(b, now_ms);
	c->last_rx_ms = (uint32_t)now_ms;
	for (;;) {
		const uint8_t *pkt;
		size_t pkt_len;
		enum mqtt_rej rej;
		int rc = mqtt_framer_next(&c->fr, &in, b->cfg.max_packet, &b->acct, &pkt, &pkt_len,
					  &rej);
		if (rc == -E_NEED_MORE)
			return 0;
		if (rc) {
			b->st.rej[rej]++;
			b->st.proto_closes++;
			if (rc == -E_NOMEM)
				say(b, MQTT_LOG_RESOURCE, c, "no memory to reassemble a packet");
			else if (rej == MQTT_REJ_TOO_BIG)
				say(b, MQTT_LOG_TOO_BIG, c, "packet above %u bytes",
				    (unsigned)b->cfg.max_packet);
			else
				say(b, MQTT_LOG_MALFORMED, c, "fixed header rejected: %s",
				    rej_name[rej]);
			/* a 5.0 client is told why (conn_end sends it once CONNECT was accepted) */
			b->disc_reason = rej == MQTT_REJ_TOO_BIG ? MQTT_RC_PACKET_TOO_LARGE : MQTT_RC_MALFORMED_PACKET;
			conn_end(b, c, true, true);
			return -E_CLOSED;
		}
		rc = dispatch(b, c, pkt, pkt_len, now_ms);
		if (rc)
			return rc;
	}
}

void mqtt_conn_writable(struct mqtt_broker *b, struct mqtt_conn *c)
{
	b->st.conns_writable++;
	if (c->state == MQTT_CONN_UP)
		pump(b, c->session);
}

void mqtt_conn_lost(struct mqtt_broker *b, struct mqtt_conn *c, uint64_t now_ms)
{
	clock_see(b, now_ms);
	if (c->state != MQTT_CONN_FREE)
		conn_end(b, c, false, true); /* abnormal end: will [MQTT-3.1.2-8] */
}

int mqtt_broker_share_remote(struct mqtt_broker *b, uint32_t shard, const uint8_t *filter, size_t len, bool add)
{
	int rc = mqtt_share_remote(b, shard, filter, len, add);
	if (rc == -E_RANGE || rc == -E_NOMEM) {
		b->st.share_refused++;
		say(b, MQTT_LOG_RESOURCE, NULL, "a shared subscription group of shard %u not recorded (%s)",
		    (unsigned)shard, rc == -E_RANGE ? "group table full" : "no memory");
	}
	return rc;
}

int mqtt_broker_route_remote(struct mqtt_broker *b, const struct mqtt_message *m, bool *recorded)
{
	*recorded = false;
	if (!m->topic || m->topic_len > UINT16_MAX || !mqtt_topic_valid(m->topic, m->topic_len) || m->qos > 2 ||
	    (m->payload_len && !m->payload) || m->props_len > MQTT_PROPS_MAX || (m->props_len && !m->props)) {
		b->st.fanout_bad++;
		return -E_INVAL;
	}
	b->st.fanout_in++;
	(void)mqtt_ack_track(b, false);
	route(b, m, false);
	if (b->route_lost)
		return -E_NOMEM; /* the origin refuses its acknowledgement */
	*recorded = b->route_events != 0; /* the origin's ticket waits for their commit */
	return 0;
}

void mqtt_broker_tick(struct mqtt_broker *b, uint64_t now_ms)
{
	clock_see(b, now_ms);
	for (uint32_t i = 0; i < b->cfg.max_conns; i++) {
		struct mqtt_conn *c = &b->conns[i];
		/* 32-bit differences: correct while ticks come more often than every 49 days */
		uint64_t idle = (uint32_t)((uint32_t)now_ms - c->last_rx_ms);
		if (c->state == MQTT_CONN_NEW && idle > b->cfg.connect_timeout_ms) {
			b->st.connect_timeouts++;
			say(b, MQTT_LOG_TIMEOUT, c, "no CONNECT within %u ms",
			    (unsigned)b->cfg.connect_timeout_ms);
			conn_end(b, c, true, false);
		} else if (c->state == MQTT_CONN_UP && c->keepalive_s &&
			   idle > (uint64_t)c->keepalive_s * 1500u) {
			b->st.keepalive_closes++; /* [MQTT-3.1.2-24] */
			say(b, MQTT_LOG_TIMEOUT, c, "keepalive %u s expired", (unsigned)c->keepalive_s);
			b->disc_reason = MQTT_RC_KEEP_ALIVE_TIMEOUT;
			b->disc_why = "nothing received for 1.5 keep alive intervals";
			conn_end(b, c, true, true);
		}
	}
	wills_due(b);
	sessions_expire(b);
}

/* ---- init, layout, checks -------------------------------------------------------------- */

/* A hash table's buckets for n entries: a power of two, at least 16, at most 2^30 (the
 * broker's own bounds around lib/align.h's). */
static uint32_t table_size(uint64_t n)
{
	uint64_t p = pow2_at_least(n);
	if (p == 0 || p > (1u << 30)) /* 0: n above 2^63 */
		return 1u << 30;
	return p < 16u ? 16u : (uint32_t)p;
}

/* Lay out every array after the broker struct; with base == NULL only measure. */
static size_t layout(struct mqtt_broker *b, uint8_t *base, const struct mqtt_broker_config *g)
{
	size_t off = align8(sizeof *b);
	uint32_t n_nodes = g->max_nodes + 2;
	uint32_t n_levels = n_nodes + 2;
	uint32_t stack = ((uint32_t)g->max_topic_levels + 2u) * 4u;
	size_t codes = g->max_packet / 4u + 1u;
#define TAKE(field, type, count)                                                   \
	do {                                                                       \
		b->field = base ? (type *)(void *)(base + off) : NULL;             \
		off += align8((size_t)(count) * sizeof(type));                     \
	} while (0)
	TAKE(conns, struct mqtt_conn, g->max_conns);
	TAKE(sess, struct mqtt_session, g->max_sessions);
	TAKE(subs, struct mqtt_sub, g->max_subs ? g->max_subs : 1);
	TAKE(dlvs, struct mqtt_dlv, g->max_deliveries ? g->max_deliveries : 1);
	TAKE(nodes, struct mqtt_node, n_nodes);
	TAKE(levels, struct mqtt_level, n_levels);
	b->sess_mask = table_size(2ull * g->max_sessions) - 1;
	b->edge_mask = table_size(2ull * n_nodes) - 1;
	b->level_mask = table_size(2ull * n_levels) - 1;
	TAKE(sess_bkt, uint32_t, b->sess_mask + 1);
	TAKE(edge_bkt, uint32_t, b->edge_mask + 1);
	TAKE(level_bkt, uint32_t, b->level_mask + 1);
	b->out_len = (size_t)g->max_packet + 8u;
	TAKE(out, uint8_t, b->out_len);
	TAKE(mark, uint8_t, g->max_sessions);
	TAKE(touched, uint32_t, g->max_sessions);
	b->stack_cap = stack;
	TAKE(stack, uint32_t, stack);
	TAKE(lv_off, uint16_t, g->max_topic_levels);
	TAKE(lv_len, uint16_t, g->max_topic_levels);
	TAKE(lv_id, uint32_t, g->max_topic_levels);
	TAKE(fl_id, uint32_t, (size_t)g->max_topic_levels + 1);
	b->codes_cap = codes;
	TAKE(codes, uint8_t, codes);
	TAKE(rcodes, uint8_t, codes);
	if (g->max_delayed_wills)
		TAKE(dwills, struct mqtt_dwill, g->max_delayed_wills);
	TAKE(sess_exp, uint32_t, g->max_sessions);
	if (g->max_sub_ids) {
		b->sid_mask = table_size(g->max_sub_ids) - 1;
		TAKE(sids, struct mqtt_subid, g->max_sub_ids);
		TAKE(sid_bkt, uint32_t, b->sid_mask + 1);
	}
	TAKE(sid_out, uint32_t, (size_t)g->max_subs_per_session + 1u);
	if (g->max_shared_groups) {
		b->grp_mask = table_size(g->max_shared_groups) - 1;
		TAKE(groups, struct mqtt_group, g->max_shared_groups);
		TAKE(grp_bkt, uint32_t, b->grp_mask + 1);
	}
	if (g->max_held) {
		b->held_mask = table_size(g->max_held) - 1;
		TAKE(held, struct mqtt_held, b->held_mask + 1);
	}
	if (g->max_queries) {
		TAKE(tq, struct mqtt_tq, g->max_queries);
		TAKE(tq_json, uint8_t, g->max_packet);
	}
	if (mqtt_rate_on(g)) {
		b->rate_cap = g->max_conns + g->rate_idle_ids;
		b->rate_mask = table_size(b->rate_cap) - 1; /* load factor <= 1 */
		TAKE(rates, struct mqtt_rate, b->rate_cap);
		TAKE(rate_bkt, uint32_t, b->rate_mask + 1);
	}
	b->fair_cap = g->drop_ids;
	if (g->drop_ids)
		TAKE(fair, struct mqtt_fair, g->drop_ids);
#undef TAKE
	b->max_levels = n_levels;
	return off;
}

static bool cfg_valid(const struct mqtt_broker_config *g)
{
	return g->max_conns && g->max_sessions && g->max_nodes && g->max_packet >= 16 &&
	       g->max_packet <= MQTT_MAX_REMAINING && g->max_topic_levels >= 3 &&
	       g->max_topic_levels <= 1024 && g->max_inflight && g->max_inflight < UINT16_MAX &&
	       g->max_queue && g->max_conns < MQTT_NIL / 2 && g->max_sessions < MQTT_NIL / 2 &&
	       g->max_nodes < (1u << 28) && (!g->n_services || g->services) &&
	       (!g->rate_msgs_per_s || g->rate_burst_msgs) &&
	       (!g->rate_bytes_per_s || g->rate_burst_bytes) &&
	       g->rate_burst_msgs <= UINT32_MAX / 1000u &&
	       (!g->service_rate_msgs_per_s || g->service_rate_burst_msgs) &&
	       (!g->service_rate_bytes_per_s || g->service_rate_burst_bytes) &&
	       g->service_rate_burst_msgs <= UINT32_MAX / 1000u &&
	       g->rate_idle_ids < MQTT_NIL / 2 && g->drop_ids <= 4096u &&
	       g->log_burst <= UINT32_MAX / 1000u && g->max_held <= (1u << 24);
}

size_t mqtt_broker_mem_size(const struct mqtt_broker_config *cfg)
{
	struct mqtt_broker tmp;
	if (!cfg_valid(cfg))
		return 0;
	return layout(&tmp, NULL, cfg);
}

static uint32_t level_permanent(struct mqtt_broker *b, uint8_t ch)
{
	uint32_t id = MQTT_NIL;
	const uint8_t s[1] = { ch };
	/* create through a one-level path below the relative root, then pin the level */
	b->lv_off[0] = 0;
	b->lv_len[0] = 1;
	uint32_t node = mqtt_node_path(b, MQTT_ROOT_REL, s, 0, 1, true);
	if (node == MQTT_NIL)
		return MQTT_NIL;
	id = b->nodes[node].level;
	b->levels[id].refs++;
	mqtt_node_prune(b, node);
	return id;
}

int mqtt_broker_init(struct mqtt_broker **out, void *mem, size_t len,
		     const struct mqtt_broker_config *cfg, const struct mqtt_broker_ops *ops)
{
	*out = NULL;
	size_t need = mqtt_broker_mem_size(cfg);
	if (!need || !mem || ((uintptr_t)mem & 7u) || !ops->send || !ops->close ||
	    !ops->heap.alloc || !ops->heap.free)
		return -E_INVAL;
	/* Storage: all three ops and room to hold acknowledgements, or none at all. */
	bool store = ops->store.record || ops->store.barrier || ops->store.room;
	if (store && (!ops->store.record || !ops->store.barrier || !ops->store.room || !cfg->max_held))
		return -E_INVAL;
	if (len < need)
		return -E_NOMEM;
	memset(mem, 0, need);
	struct mqtt_broker *b = mem;
	layout(b, mem, cfg);
	b->cfg = *cfg;
	b->ops = *ops;
	b->key = siphash_key_from_bytes(cfg->hash_key);
	b->acct = mqtt_heap_ops(b);
	/* free lists, threaded through one link field per record */
	b->conn_free = b->sess_free = b->sub_free = b->dlv_free = b->node_free = b->level_free =
		MQTT_NIL;
	for (uint32_t i = cfg->max_conns; i-- > 0;) {
		b->conns[i].session = b->conn_free;
		b->conn_free = i;
	}
	for (uint32_t i = cfg->max_sessions; i-- > 0;) {
		b->sess[i].hash_next = b->sess_free;
		b->sess_free = i;
	}
	for (uint32_t i = cfg->max_subs; i-- > 0;) {
		b->subs[i].next_in_session = b->sub_free;
		b->sub_free = i;
	}
	for (uint32_t i = cfg->max_deliveries; i-- > 0;) {
		b->dlvs[i].next = b->dlv_free;
		b->dlv_free = i;
	}
	for (uint32_t i = cfg->max_nodes + 2; i-- > 2;) {
		b->nodes[i].hash_next = b->node_free;
		b->nodes[i].level = MQTT_NIL;
		b->node_free = i;
	}
	for (uint32_t i = b->max_levels; i-- > 0;) {
		b->levels[i].hash_next = b->level_free;
		b->level_free = i;
	}
	memset(b->sess_bkt, 0xff, (b->sess_mask + 1) * sizeof(uint32_t));
	memset(b->sess_exp, 0xff, (size_t)cfg->max_sessions * sizeof(uint32_t)); /* never */
	b->sid_free = MQTT_NIL;
	for (uint32_t i = cfg->max_sub_ids; i-- > 0;) {
		b->sids[i].next = b->sid_free;
		b->sid_free = i;
	}
	if (b->sid_bkt)
		memset(b->sid_bkt, 0xff, (b->sid_mask + 1) * sizeof(uint32_t));
	b->grp_free = MQTT_NIL;
	for (uint32_t i = cfg->max_shared_groups; i-- > 0;) {
		b->groups[i].next = b->grp_free;
		b->grp_free = i;
	}
	if (b->grp_bkt)
		memset(b->grp_bkt, 0xff, (b->grp_mask + 1) * sizeof(uint32_t));
	memset(b->edge_bkt, 0xff, (b->edge_mask + 1) * sizeof(uint32_t));
	memset(b->level_bkt, 0xff, (b->level_mask + 1) * sizeof(uint32_t));
	if (b->rate_bkt)
		memset(b->rate_bkt, 0xff, (b->rate_mask + 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < b->fair_cap; i++)
		b->fair[i].sess = MQTT_NIL; /* free: key 0, names no session */
	for (int r = 0; r < MQTT_LOG__COUNT; r++)
		b->logb[r].milli = cfg->log_burst * 1000u;
	for (uint32_t r = 0; r < 2; r++) {
		struct mqtt_node *nd = &b->nodes[r];
		nd->parent = nd->first_child = nd->next_sibling = nd->prev_sibling = MQTT_NIL;
		nd->hash_next = nd->level = nd->subs = MQTT_NIL;
	}
	b->lvl_plus = level_permanent(b, '+');
	b->route_origin = MQTT_NIL;
	b->lvl_hash = level_permanent(b, '#');
	if (b->lvl_plus == MQTT_NIL || b->lvl_hash == MQTT_NIL) {
		mqtt_broker_fini(b);
		return -E_NOMEM;
	}
	*out = b;
	return 0;
}

void mqtt_broker_fini(struct mqtt_broker *b)
{
	b->store_on = false; /* shutting down is not a change of persistent state */
	b->ops.interest = NULL; /* ... nor of where subscriptions are: the other shards go too */
	b->ops.share = NULL;
	mqtt_broker_restore_end(b);
	b->store_on = false;
	mqtt_held_fini(b);
	for (uint32_t i = 0; i < b->cfg.max_conns; i++)
		if (b->conns[i].state != MQTT_CONN_FREE) {
			struct mqtt_conn *c = &b->conns[i];
			if (c->session != MQTT_NIL)
				b->sess[c->session].flags |= MQTT_SESS_CLEAN;
			conn_end(b, c, false, false);
		}
	for (uint32_t i = 0; i < b->cfg.max_sessions; i++)
		if (b->sess[i].flags & MQTT_SESS_USED)
			mqtt_sess_free(b, i);
	mqtt_share_fini(b); /* the groups other shards' members kept */
	for (uint32_t i = 2; i < b->cfg.max_nodes + 2; i++) {
		struct mqtt_node *nd = &b->nodes[i];
		if (nd->level != MQTT_NIL && nd->retained) {
			mqtt_msg_unref(b, nd->retained);
			nd->retained = NULL;
			b->n_retained--;
			mqtt_node_prune(b, i);
		}
	}
	uint32_t perm[2] = { b->lvl_plus, b->lvl_hash };
	for (int k = 0; k < 2; k++) {
		if (perm[k] == MQTT_NIL)
			continue;
		struct mqtt_level *l = &b->levels[perm[k]];
		mqtt_heap_free(b, l->s, l->len);
		l->s = NULL;
	}
	b->lvl_plus = b->lvl_hash = MQTT_NIL;
}

const struct mqtt_broker_stats *mqtt_broker_stats(const struct mqtt_broker *b)
{
	return &b->st;
}

void mqtt_broker_usage(const struct mqtt_broker *b, struct mqtt_broker_usage *u)
{
	u->conns = b->n_conns;
	u->sessions = b->n_sess;
	u->nodes = b->n_nodes;
	u->subs = b->n_subs;
	u->deliveries = b->n_dlvs;
	u->levels = b->n_levels;
	u->retained = b->n_retained;
	u->rate_ids = b->rate_hw;
	u->heap_bytes = b->heap_used;
}

size_t mqtt_sizeof_session(void)
{
	return sizeof(struct mqtt_session);
}

size_t mqtt_sizeof_conn(void)
{
	return sizeof(struct mqtt_conn);
}

#define CHECK(c)                         \
	do {                             \
		if (!(c))                \
			return -E_CORRUPT; \
	} while (0)

int mqtt_held_check(const struct mqtt_broker *b); /* durable.c */

int mqtt_broker_check(const struct mqtt_broker *b)
{
	uint32_t n_conns = 0, n_sess = 0, n_dlv = 0, n_subs = 0;
	CHECK(b->heap_used <= b->cfg.heap_limit);
	CHECK(mqtt_held_check(b) == 0);
	for (uint32_t i = 0; i < b->cfg.max_conns; i++) {
		const struct mqtt_conn *c = &b->conns[i];
		if (c->state == MQTT_CONN_FREE)
			continue;
		n_conns++;
		CHECK((c->state == MQTT_CONN_UP) == (c->session != MQTT_NIL));
		if (c->session != MQTT_NIL)
			CHECK(b->sess[c->session].conn == i);
		CHECK(c->state == MQTT_CONN_UP || c->identity != NULL);
		(void)mqtt_framer_busy(&c->fr); /* 4: see mqtt_conn_input's loop (no cheap check) */
	}
	for (uint32_t i = 0; i < b->cfg.max_sessions; i++) {
		const struct mqtt_session *s = &b->sess[i];
		if (!(s->flags & MQTT_SESS_USED))
			continue;
		n_sess++;
		CHECK(mqtt_sess_find(b, s->flags & MQTT_SESS_SERVICE, s->id, s->id_len) == i);
		if (s->conn != MQTT_NIL)
			CHECK(b->conns[s->conn].state == MQTT_CONN_UP && b->conns[s->conn].session == i);
		else
			CHECK(!(s->flags & MQTT_SESS_CLEAN));
		CHECK(!s->skey || !(s->flags & MQTT_SESS_CLEAN)); /* session 8 */
		uint32_t nq = 0, nf = 0, last = MQTT_NIL;
		for (uint32_t d = s->q_head; d != MQTT_NIL; d = b->dlvs[d].next) {
			const struct mqtt_dlv *r = &b->dlvs[d];
			uint8_t st = dlv_state(r);
			CHECK(++nq <= b->cfg.max_queue);
			CHECK(st >= MQTT_DLV_QUEUED && st <= MQTT_DLV_WAIT_COMP);
			CHECK((st == MQTT_DLV_WAIT_COMP) == (r->msg == NULL));
			CHECK(r->qos == 1 || r->qos == 2);
			/* owed only while in flight, and the session knows it (MQTT_DLV_OWED) */
			CHECK(!(r->state & MQTT_DLV_OWED) || (st != MQTT_DLV_QUEUED && (s->flags & MQTT_SESS_OWED)));
			if (st != MQTT_DLV_QUEUED) {
				nf++;
				CHECK(r->pid != 0);
				for (uint32_t e = r->next; e != MQTT_NIL; e = b->dlvs[e].next)
					CHECK(b->dlvs[e].pid != r->pid ||
					      dlv_state(&b->dlvs[e]) == MQTT_DLV_QUEUED);
			}
			last = d;
		}
		CHECK(last == s->q_tail);
		CHECK(nq == s->n_queued && nf == s->n_inflight && nf <= b->cfg.max_inflight);
		uint32_t nr = 0;
		for (uint32_t d = s->rx2; d != MQTT_NIL; d = b->dlvs[d].next) {
			CHECK(b->dlvs[d].state == MQTT_DLV_RX2 && !b->dlvs[d].msg);
			CHECK(++nr <= b->cfg.max_qos2_rx);
		}
		CHECK(nr == s->n_rx2);
		n_dlv += nq + nr;
		uint32_t ns = 0;
		for (uint32_t r = s->subs; r != MQTT_NIL; r = b->subs[r].next_in_session) {
			CHECK(b->subs[r].session == i && (b->subs[r].qos & MQTT_SUB_QOS) <= 2 &&
			      b->subs[r].qos <= (MQTT_SUB_OPTS | MQTT_SUB_HAS_ID | MQTT_SUB_SHARED));
			CHECK(++ns <= b->cfg.max_subs_per_session);
		}
		CHECK(ns == s->n_subs);
		n_subs += ns;
	}
	CHECK(n_conns == b->n_conns && n_sess == b->n_sess && n_dlv == b->n_dlvs);
	CHECK(n_subs == b->n_subs);
	CHECK(mqtt_rate_check(b) == 0); /* 6 */
	CHECK(mqtt_fair_check(b) == 0); /* 7 */
	CHECK(mqtt_subid_check(b) == 0); /* subid.c */
	CHECK(mqtt_share_check(b) == 0); /* share.c */
	return 0;
}
