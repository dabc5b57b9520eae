/* SPDX-License-Identifier: MIT
 *
 * The broker's side of durability (mqtt/, see broker.h "durability" and
 * docs/DURABILITY.md): the key generator, the recording of events through the store ops,
 * the FIFO of acknowledgements held until what they promise is committed, and the
 * restore of persistent state at boot. It never waits (a held acknowledgement is a
 * record in a bounded ring, released by mqtt_broker_durable) and never sends an
 * acknowledgement whose events were not all stored: such a connection is closed instead
 * (a transient error: the client sends again).
 *
 * Design note: the held ring.
 *  Entries are acknowledgements in the order their packets arrived; the entry of
 *  sequence number q lives at held[q & held_mask]; live entries are the held_n sequences
 *  from held_head. A ticket names a sequence: 0x80000000 | (q & 0x7fffffff), so it is
 *  never 0 (0 means "nobody waits") and survives the counter wrapping.
 *  Invariants (mqtt_broker_check calls held_check):
 *   1. held_n <= held_mask + 1 <= 2^31.
 *   2. An entry is released only from the head, and only when owed == 0: so
 *      acknowledgements leave in arrival order on every connection.
 *   3. For every session, n_held == the live entries whose sess is it and whose conn is not
 *      MQTT_NIL.
 *   4. pkt != NULL only for SUBACK entries, and then it is a heap block of pkt_len bytes.
 *  Entry: (mqtt_ack) HELD(owed) -(mqtt_broker_durable: owed--)-> DUE(owed 0)
 *         -(head reached)-> sent, or refused (failed: connection closed) -> FREE;
 *         HELD/DUE -(connection ends: mqtt_held_forget)-> conn NIL, dropped when reached.
 */
#include "lib/err.h"
#include "lib/mem.h"
#include "mqtt/codec5.h"
#include "mqtt/msg.h"
#include "mqtt/topic.h"

#define TICKET_BIT 0x80000000u
#define TICKET_MASK 0x7fffffffu
#define KEY_COUNTER_MAX (UINT64_C(1) << 34) /* keys per boot and shard (key_base's low bits) */

/* ---- keys and events ------------------------------------------------------------------- */

uint64_t mqtt_key_new(struct mqtt_broker *b)
{
	/* 2^34 keys at a million per second last 4.8 hours... of continuous key making per
	 * boot and shard: the counter is checked, and storage stops on overflow. */
	if (b->key_count + 1u >= KEY_COUNTER_MAX) {
		b->store_on = false;
		b->st.store_lost++;
		return 0;
	}
	return b->key_base + ++b->key_count;
}

void mqtt_rec(struct mqtt_broker *b, const struct mqtt_pev *ev)
{
	if (!b->store_on)
		return;
	b->route_events++;
	b->st.store_events++;
	if (b->ops.store.record(b->ops.store.ctx, ev) != 0) {
		b->st.store_lost++;
		b->route_lost = true;
	}
}

void mqtt_rec_sess(struct mqtt_broker *b, uint8_t kind, const struct mqtt_session *s)
{
	/* SESS_PUT is recorded while its connection is attached: sess_exp holds the interval */
	struct mqtt_pev ev = { .kind = kind, .skey = s->skey,
			       .id_kind = (s->flags & MQTT_SESS_SERVICE) ? MQTT_ID_SERVICE : MQTT_ID_DEVICE,
			       .id = s->id, .id_len = s->id_len, .expiry_s = b->sess_exp[s - b->sess] };
	mqtt_rec(b, &ev);
}

void mqtt_rec_dlv(struct mqtt_broker *b, uint8_t kind, const struct mqtt_session *s, const struct mqtt_dlv *d)
{
	struct mqtt_pev ev = { .kind = kind, .skey = s->skey, .pid = d->pid, .qos = d->qos,
			       .mkey = d->msg ? d->msg->mkey : 0 };
	mqtt_rec(b, &ev);
}

/* ---- the held ring ------------------------------------------------------------------------ */

static uint32_t ticket_of(uint32_t seq)
{
	return TICKET_BIT | (seq & TICKET_MASK);
}

static struct mqtt_held *held_at(struct mqtt_broker *b, uint32_t seq)
{
	return &b->held[seq & b->held_mask];
}

uint32_t mqtt_ack_track(struct mqtt_broker *b, bool needs_store)
{
	b->route_owed = 0;
	b->route_events = 0;
	b->route_lost = false;
	b->route_ticket = needs_store && b->store_on ? ticket_of(b->held_head + b->held_n) : 0;
	return b->route_ticket;
}

uint32_t mqtt_ack_hold_ticket(struct mqtt_broker *b)
{
	return b->held ? ticket_of(b->held_head + b->held_n) : 0;
}

bool mqtt_ack_room(struct mqtt_broker *b, size_t bytes)
{
	if (!b->store_on)
		return true;
	if (b->held_n > b->held_mask) {
		b->st.held_full++;
		return false;
	}
	return b->ops.store.room(b->ops.store.ctx, bytes);
}

static void held_release(struct mqtt_broker *b)
{
	while (b->held_n) {
		struct mqtt_held *h = held_at(b, b->held_head);
		if (h->owed)
			return; /* invariant 2: nothing overtakes the head */
		struct mqtt_held e = *h;
		memset(h, 0, sizeof *h);
		b->held_head++;
		b->held_n--;
		if (e.conn != MQTT_NIL) {
			struct mqtt_conn *c = &b->conns[e.conn];
			b->sess[e.sess].n_held--;
			if (e.failed) {
				b->st.held_failed++;
				mqtt_conn_fail(b, c, "storage could not commit what this acknowledgement promises");
			} else if (e.pkt) {
				(void)mqtt_send_bytes(b, c, e.pkt, e.pkt_len);
				if (e.subs && c->state == MQTT_CONN_UP) {
					struct mqtt_filters f = { e.subs, (size_t)e.subs_len - e.n_subs, e.n_subs, true };
					mqtt_subscribe_retained(b, e.sess, &f, e.subs + f.len);
				}
			} else {
				(void)mqtt_send_ack(b, c, e.type, e.pid);
			}
		}
		if (e.pkt)
			mqtt_heap_free(b, e.pkt, e.pkt_len);
		if (e.subs)
			mqtt_heap_free(b, e.subs, e.subs_len);
	}
}

bool mqtt_held_pending(const struct mqtt_broker *b, uint32_t seq)
{
	return b->held && seq - b->held_head < b->held_n;
}

int mqtt_held_attach_subs(struct mqtt_broker *b, uint32_t seq, const struct mqtt_filters *f,
			  const uint8_t *codes)
{
	struct mqtt_held *h = held_at(b, seq);
	size_t len = f->len + f->n;
	if (len > UINT16_MAX)
		return -E_NOMEM;
	uint8_t *copy = mqtt_heap_alloc(b, len);
	if (!copy)
		return -E_NOMEM;
	memcpy(copy, f->p, f->len);
	memcpy(copy + f->len, codes, f->n);
	h->subs = copy;
	h->subs_len = (uint16_t)len;
	h->n_subs = f->n;
	return 0;
}

int mqtt_ack(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t type, uint16_t pid, const uint8_t *pkt,
	     size_t pkt_len)
{
	uint32_t ticket = b->route_ticket;
	uint32_t owed = b->route_owed;
	bool failed = b->route_lost;
	b->route_ticket = 0;
	if (ticket && b->route_events) {
		owed++;
		if (b->ops.store.barrier(b->ops.store.ctx, ticket) != 0) {
			owed--;
			failed = true;
			b->st.store_lost++;
		}
	}
	if (failed && !owed && !b->held_n) {
		b->st.held_failed++;
		mqtt_conn_fail(b, c, "storage could not carry what this acknowledgement promises");
		return -E_CLOSED;
	}
	if (!owed && !b->held_n) /* nothing to wait for, nobody ahead: at once */
		return pkt ? mqtt_send_bytes(b, c, pkt, pkt_len) : mqtt_send_ack(b, c, type, pid);
	if (!ticket) {
		/* Held only to keep the order behind earlier ones: take the next sequence. */
		ticket = ticket_of(b->held_head + b->held_n);
	}
	if (b->held_n > b->held_mask || (ticket & TICKET_MASK) != ((b->held_head + b->held_n) & TICKET_MASK)) {
		/* No room (mqtt_ack_room was asked first for PUBLISH) or a ticket taken by a
		 * fan-out whose acknowledgement never came (a bug): refuse, do not reorder. */
		b->st.held_full++;
		mqtt_conn_fail(b, c, "no room to hold an acknowledgement");
		return -E_CLOSED;
	}
	uint8_t *copy = NULL;
	if (pkt) {
		copy = mqtt_heap_alloc(b, pkt_len);
		if (!copy) {
			mqtt_conn_fail(b, c, "no memory to hold a SUBACK");
			return -E_CLOSED;
		}
		memcpy(copy, pkt, pkt_len);
	}
	struct mqtt_held *h = held_at(b, b->held_head + b->held_n);
	h->conn = (uint32_t)(c - b->conns);
	h->sess = c->session;
	h->owed = (uint16_t)owed;
	h->failed = failed;
	h->type = type;
	h->pid = pid;
	h->pkt = copy;
	h->pkt_len = (uint16_t)pkt_len;
	b->sess[c->session].n_held++;
	b->held_n++;
	b->st.held++;
	held_release(b); /* owed 0 behind a head that is due: goes now */
	return 0;
}

void mqtt_broker_durable(struct mqtt_broker *b, uint32_t ticket, bool ok)
{
	uint32_t dist = ((ticket & TICKET_MASK) - (b->held_head & TICKET_MASK)) & TICKET_MASK;
	if (!(ticket & TICKET_BIT) || dist >= b->held_n || !held_at(b, b->held_head + dist)->owed) {
		b->st.durable_bad++;
		return;
	}
	struct mqtt_held *h = held_at(b, b->held_head + dist);
	h->owed--;
	if (!ok)
		h->failed = 1;
	b->st.durable_done++;
	held_release(b);
}

uint32_t mqtt_broker_held(const struct mqtt_broker *b)
{
	return b->held_n;
}

void mqtt_held_forget(struct mqtt_broker *b, uint32_t conn, uint32_t sess)
{
	if (sess == MQTT_NIL || !b->sess[sess].n_held)
		return;
	for (uint32_t i = 0; i < b->held_n && b->sess[sess].n_held; i++) {
		struct mqtt_held *h = held_at(b, b->held_head + i);
		if (h->conn == conn) {
			h->conn = MQTT_NIL;
			b->sess[sess].n_held--;
			b->st.held_dropped++;
		}
	}
}

void mqtt_held_fini(struct mqtt_broker *b)
{
	for (uint32_t i = 0; i < b->held_n; i++) {
		struct mqtt_held *h = held_at(b, b->held_head + i);
		if (h->conn != MQTT_NIL)
			b->sess[h->sess].n_held--;
		if (h->pkt)
			mqtt_heap_free(b, h->pkt, h->pkt_len);
		if (h->subs)
			mqtt_heap_free(b, h->subs, h->subs_len);
		memset(h, 0, sizeof *h);
	}
	b->held_n = 0;
}

int mqtt_held_check(const struct mqtt_broker *b);
int mqtt_held_check(const struct mqtt_broker *b)
{
	if (!b->held)
		return b->held_n == 0 ? 0 : -E_CORRUPT;
	if (b->held_n > b->held_mask + 1u)
		return -E_CORRUPT; /* 1 */
	for (uint32_t i = 0; i < b->held_n; i++) {
		const struct mqtt_held *h = &b->held[(b->held_head + i) & b->held_mask];
		if ((h->pkt != NULL) != (h->type == MQTT_SUBACK && h->pkt_len))
			return -E_CORRUPT; /* 4 */
		if (h->conn != MQTT_NIL && (h->conn >= b->cfg.max_conns || h->sess >= b->cfg.max_sessions))
			return -E_CORRUPT;
	}
	for (uint32_t s = 0; s < b->cfg.max_sessions; s++) {
		if (!b->sess[s].n_held)
			continue;
		uint32_t n = 0;
		for (uint32_t i = 0; i < b->held_n; i++) {
			const struct mqtt_held *h = &b->held[(b->held_head + i) & b->held_mask];
			n += h->conn != MQTT_NIL && h->sess == s;
		}
		if (n != b->sess[s].n_held)
			return -E_CORRUPT; /* 3 */
	}
	return 0;
}

/* ---- restore ---------------------------------------------------------------------------- */

#define RESTORE_MAP_SLOTS 4096u /* mkey -> message cache; a miss only costs a second copy */

int mqtt_broker_restore_begin(struct mqtt_broker *b, uint64_t key_base)
{
	if (!b->ops.store.record || !b->held || b->restore_map || b->n_conns)
		return -E_INVAL;
	if (key_base & (KEY_COUNTER_MAX - 1u))
		return -E_INVAL;
	b->restore_map = mqtt_heap_alloc(b, RESTORE_MAP_SLOTS * sizeof *b->restore_map);
	if (!b->restore_map)
		return -E_NOMEM;
	memset(b->restore_map, 0, RESTORE_MAP_SLOTS * sizeof *b->restore_map);
	b->restore_mask = RESTORE_MAP_SLOTS - 1u;
	b->restore_sess = MQTT_NIL;
	b->key_base = key_base;
	b->key_count = 0;
	b->store_on = false; /* restoring records nothing: it is what storage holds */
	return 0;
}

static int refuse_restore(struct mqtt_broker *b, int err)
{
	b->st.restore_refused++;
	return err;
}

int mqtt_broker_restore_session(struct mqtt_broker *b, uint64_t skey, enum mqtt_id_kind kind, const uint8_t *id,
				size_t id_len, uint32_t expiry_s)
{
	b->restore_sess = MQTT_NIL;
	if (!b->restore_map || !skey || !id_len || id_len > UINT8_MAX || !mqtt_utf8_valid(id, id_len) ||
	    kind > MQTT_ID_SERVICE)
		return refuse_restore(b, -E_INVAL);
	bool service = kind == MQTT_ID_SERVICE;
	if (mqtt_sess_find(b, service, id, id_len) != MQTT_NIL)
		return refuse_restore(b, -E_EXIST);
	uint32_t si = mqtt_sess_new(b, service, id, id_len);
	if (si == MQTT_NIL)
		return refuse_restore(b, -E_NOMEM);
	b->sess[si].skey = skey;
	/* left at the restore: the interval runs from now, within today's limit */
	b->sess_exp[si] = mqtt_expiry_deadline(b, mqtt_expiry_capped(b, expiry_s ? expiry_s : UINT32_MAX));
	b->restore_sess = si;
	b->st.restored_sessions++;
	return 0;
}

static struct mqtt_session *restore_cur(struct mqtt_broker *b, uint64_t skey)
{
	if (!b->restore_map || b->restore_sess == MQTT_NIL || b->sess[b->restore_sess].skey != skey)
		return NULL;
	return &b->sess[b->restore_sess];
}

int mqtt_broker_restore_sub(struct mqtt_broker *b, uint64_t skey, const uint8_t *filter, size_t len, uint8_t qos,
			    uint32_t sub_id)
{
	if (!restore_cur(b, skey) || (qos & MQTT_SUB_QOS) > 2 || qos > MQTT_SUB_OPTS || len > UINT16_MAX ||
	    !mqtt_filter_valid(filter, len) || sub_id > MQTT_SUB_ID_MAX)
		return refuse_restore(b, -E_INVAL);
	/* identifiers no longer offered (max_sub_ids 0): the subscription stays, without one */
	sub_id = b->cfg.max_sub_ids ? sub_id : 0;
	struct mqtt_str name, match;
	bool shared = len <= UINT16_MAX && mqtt5_share_split(filter, (uint16_t)len, &name, &match) == 1 &&
		      mqtt_share_offered(b); /* else a filter like any other, as 3.1.1 reads it */
	int err = shared ? mqtt_share_add(b, b->restore_sess, filter, len, qos, sub_id)
			 : mqtt_sub_apply(b, b->restore_sess, filter, len, qos, sub_id);
	if (err < 0)
		return refuse_restore(b, err);
	b->st.restored_subs++;
	return 0;
}

int mqtt_broker_restore_rx2(struct mqtt_broker *b, uint64_t skey, uint16_t pid)
{
	struct mqtt_session *s = restore_cur(b, skey);
	if (!s || !pid)
		return refuse_restore(b, -E_INVAL);
	if (s->n_rx2 >= b->cfg.max_qos2_rx)
		return refuse_restore(b, -E_NOMEM);
	for (uint32_t d = s->rx2; d != MQTT_NIL; d = b->dlvs[d].next)
		if (b->dlvs[d].pid == pid)
			return refuse_restore(b, -E_EXIST);
	uint32_t d = mqtt_dlv_alloc(b);
	if (d == MQTT_NIL)
		return refuse_restore(b, -E_NOMEM);
	b->dlvs[d].pid = pid;
	b->dlvs[d].state = MQTT_DLV_RX2;
	b->dlvs[d].next = s->rx2;
	s->rx2 = d;
	s->n_rx2++;
	return 0;
}

/* The restored message of mkey: from the cache, or made (and cached, one reference held
 * by the map). NULL on no memory. */
static struct mqtt_msg *restore_msg(struct mqtt_broker *b, uint64_t mkey, const struct mqtt_message *in)
{
	struct mqtt_restore_slot *slot = &b->restore_map[(uint32_t)(mkey * 0x9e3779b97f4a7c15ull >> 32) &
							 b->restore_mask];
	if (slot->msg && slot->mkey == mkey)
		return slot->msg;
	struct mqtt_msg *m = mqtt_msg_new(b, in, (uint32_t)(b->now_ms / 1000u));
	if (!m)
		return NULL;
	m->mkey = mkey;
	if (slot->msg)
		mqtt_msg_unref(b, slot->msg);
	slot->mkey = mkey;
	slot->msg = m; /* the map's reference */
	return m;
}

/* A restored message's fields as the broker accepts them (max_packet bounds the rest). */
static bool restored_ok(const struct mqtt_broker *b, const struct mqtt_message *m)
{
	return m && m->topic_len <= UINT16_MAX && mqtt_topic_valid(m->topic, m->topic_len) && m->qos <= 2 &&
	       (!m->payload_len || m->payload) && m->payload_len <= b->cfg.max_packet &&
	       m->props_len <= MQTT_PROPS_MAX && (!m->props_len || m->props);
}

int mqtt_broker_restore_dlv(struct mqtt_broker *b, uint64_t skey, uint64_t mkey, uint64_t seq, uint8_t qos,
			    bool retain, enum mqtt_restore_dlv state, uint16_t pid, const struct mqtt_message *msg)
{
	(void)seq; /* the order is the order of the calls */
	struct mqtt_session *s = restore_cur(b, skey);
	if (!s || !mkey || (qos != 1 && qos != 2) || state > MQTT_RESTORE_RELEASED ||
	    (state != MQTT_RESTORE_QUEUED && !pid) || (state == MQTT_RESTORE_RELEASED && qos != 2))
		return refuse_restore(b, -E_INVAL);
	if (state != MQTT_RESTORE_RELEASED && !restored_ok(b, msg))
		return refuse_restore(b, -E_INVAL);
	if (s->n_queued >= b->cfg.max_queue)
		return refuse_restore(b, -E_NOMEM);
	if (state != MQTT_RESTORE_QUEUED) {
		if (s->n_inflight >= b->cfg.max_inflight) {
			if (state == MQTT_RESTORE_RELEASED)
				return refuse_restore(b, -E_NOMEM);
			state = MQTT_RESTORE_QUEUED; /* the window shrank: sent again with a new pid */
			pid = 0;
		}
		for (uint32_t d = s->q_head; d != MQTT_NIL; d = b->dlvs[d].next)
			if (b->dlvs[d].pid == pid && pid)
				return refuse_restore(b, -E_EXIST);
	}
	struct mqtt_msg *m = NULL;
	if (state != MQTT_RESTORE_RELEASED) {
		m = restore_msg(b, mkey, msg);
		if (!m)
			return refuse_restore(b, -E_NOMEM);
	}
	uint32_t d = mqtt_dlv_alloc(b);
	if (d == MQTT_NIL)
		return refuse_restore(b, -E_NOMEM);
	struct mqtt_dlv *r = &b->dlvs[d];
	r->msg = m;
	if (m)
		mqtt_msg_ref(m);
	r->qos = qos;
	r->pid = pid;
	uint8_t st = state == MQTT_RESTORE_QUEUED ? MQTT_DLV_QUEUED
		     : state == MQTT_RESTORE_RELEASED ? MQTT_DLV_WAIT_COMP
		     : qos == 1 ? MQTT_DLV_WAIT_ACK : MQTT_DLV_WAIT_REC;
	r->state = (uint8_t)(st | (retain ? MQTT_DLV_RETAIN : 0));
	if (s->q_tail == MQTT_NIL)
		s->q_head = d;
	else
		b->dlvs[s->q_tail].next = d;
	s->q_tail = d;
	s->n_queued++;
	if (st != MQTT_DLV_QUEUED)
		s->n_inflight++;
	b->st.restored_dlvs++;
	return 0;
}

int mqtt_broker_restore_retained(struct mqtt_broker *b, const struct mqtt_message *m)
{
	if (!b->restore_map || !restored_ok(b, m) || !m->payload_len)
		return refuse_restore(b, -E_INVAL);
	int err = mqtt_retain_set(b, m);
	if (err)
		return refuse_restore(b, err);
	b->st.restored_retained++;
	return 0;
}

void mqtt_broker_restore_end(struct mqtt_broker *b)
{
	if (!b->restore_map)
		return;
	for (uint32_t i = 0; i <= b->restore_mask; i++)
		if (b->restore_map[i].msg)
			mqtt_msg_unref(b, b->restore_map[i].msg);
	mqtt_heap_free(b, b->restore_map, (b->restore_mask + 1u) * sizeof *b->restore_map);
	b->restore_map = NULL;
	b->restore_sess = MQTT_NIL;
	b->store_on = b->ops.store.record != NULL;
}
