/* SPDX-License-Identifier: MIT
 *
 * Telemetry queries on the broker (mqtt/broker.h "telemetry queries", mqtt/tquery.h): a
 * reader's PUBLISH to MQTT_TQUERY_TOPIC takes a slot, storage streams the rows back, they
 * go to the reader's connection only, then the end message frees the slot.
 * Design note. A slot is FREE (busy false) -> BUSY (conn set; storage is running it) ->
 * FREE at the end message; BUSY -> CANCELLED (conn MQTT_NIL) when the reader leaves, until
 * storage's end arrives (so a slot is never reused while storage still sends for it).
 * Invariants: a busy slot's conn is a live connection or MQTT_NIL (cancelled); a
 * connection owns at most one slot.
 */
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "mqtt/mqtt_int.h"

static bool reader(const struct mqtt_broker *b, const struct mqtt_session *s)
{
	if (!(s->flags & MQTT_SESS_SERVICE))
		return false;
	for (uint16_t i = 0; i < b->cfg.n_telemetry_readers; i++) {
		const char *r = b->cfg.telemetry_readers[i];
		size_t n = strlen(r);
		/* a service's connections are "name" and "name/suffix" (one identity) */
		if (s->id_len >= n && memcmp(s->id, r, n) == 0 && (s->id_len == n || s->id[n] == '/'))
			return true;
	}
	return false;
}

/* The reply topic of a slot or of a request id. */
static size_t reply_topic(char *out, size_t cap, const char *req)
{
	int n = fmt_snprintf(out, cap, "%s%s", MQTT_TQUERY_REPLY, req);
	return n > 0 ? (size_t)n : 0;
}

/* One JSON message on the reply topic (best effort for errors: the reader may be full). */
static int reply(struct mqtt_broker *b, struct mqtt_conn *c, const char *req, const char *json)
{
	char topic[sizeof MQTT_TQUERY_REPLY + MQTT_TQUERY_REQ_MAX];
	size_t tl = reply_topic(topic, sizeof topic, req);
	return mqtt_send_publish0(b, c, (const uint8_t *)topic, tl, (const uint8_t *)json, strlen(json));
}

static void refuse(struct mqtt_broker *b, struct mqtt_conn *c, const char *req, const char *why)
{
	char json[160];
	b->st.query_refused++;
	(void)fmt_snprintf(json, sizeof json, "{\"error\":\"%s\"}", why);
	(void)reply(b, c, req[0] ? req : "-", json);
}

bool mqtt_tq_publish(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *topic, size_t tlen,
		     const uint8_t *payload, size_t plen)
{
	static const char qt[] = MQTT_TQUERY_TOPIC;
	if (tlen != sizeof qt - 1 || memcmp(topic, qt, tlen) != 0)
		return false;
	const struct mqtt_session *s = &b->sess[c->session];
	if (!reader(b, s))
		return false; /* not a reader: the ACL decides (and denies) */
	struct mqtt_tquery q;
	const char *why;
	if (mqtt_tquery_parse(payload, plen, b->cfg.query_limit ? b->cfg.query_limit : 1, &q, &why) != 0) {
		refuse(b, c, q.req, why);
		return true;
	}
	if (!b->ops.store.query || !b->store_on) {
		refuse(b, c, q.req, "no telemetry log on this broker");
		return true;
	}
	uint32_t conn = (uint32_t)(c - b->conns), free_slot = MQTT_NIL;
	for (uint32_t i = 0; i < b->cfg.max_queries; i++) {
		if (b->tq[i].busy && b->tq[i].conn == conn) {
			refuse(b, c, q.req, "one query at a time per connection");
			return true;
		}
		if (!b->tq[i].busy && free_slot == MQTT_NIL)
			free_slot = i;
	}
	if (free_slot == MQTT_NIL) {
		refuse(b, c, q.req, "too many queries in progress, try again");
		return true;
	}
	struct mqtt_tq *t = &b->tq[free_slot];
	if (b->ops.store.query(b->ops.store.ctx, free_slot, &q) != 0) {
		refuse(b, c, q.req, "storage cannot take the query now, try again");
		return true;
	}
	memset(t, 0, sizeof *t);
	t->busy = true;
	t->conn = conn;
	memcpy(t->req, q.req, sizeof t->req);
	t->req_len = q.req_len;
	b->st.queries++;
	return true;
}

void mqtt_tq_conn_end(struct mqtt_broker *b, uint32_t conn)
{
	for (uint32_t i = 0; i < b->cfg.max_queries; i++) {
		struct mqtt_tq *t = &b->tq[i];
		if (t->busy && t->conn == conn) {
			t->conn = MQTT_NIL;
			t->cancelled = true;
			if (b->ops.store.query_cancel)
				b->ops.store.query_cancel(b->ops.store.ctx, i);
		}
	}
}

uint32_t mqtt_broker_query_rows(struct mqtt_broker *b, uint32_t slot, const struct mqtt_trow *rows, uint32_t n)
{
	if (slot >= b->cfg.max_queries || !b->tq[slot].busy)
		return n;
	struct mqtt_tq *t = &b->tq[slot];
	if (t->conn == MQTT_NIL)
		return n; /* the reader left */
	struct mqtt_conn *c = &b->conns[t->conn];
	char topic[sizeof MQTT_TQUERY_REPLY + MQTT_TQUERY_REQ_MAX];
	size_t tl = reply_topic(topic, sizeof topic, t->req);
	for (uint32_t i = 0; i < n; i++) {
		size_t jl = mqtt_tquery_row_json(&rows[i], b->tq_json, b->cfg.max_packet - tl - 16u);
		if (!jl) { /* larger than a packet may be: said in the end message */
			t->skipped++;
			b->st.query_rows_skipped++;
			continue;
		}
		int rc = mqtt_send_publish0(b, c, (const uint8_t *)topic, tl, b->tq_json, jl);
		if (rc == -E_AGAIN)
			return i; /* the reader is full: the rest later */
		t->sent++;
		b->st.query_rows++;
	}
	if (b->ops.store.query_more)
		b->ops.store.query_more(b->ops.store.ctx, slot);
	return n;
}

bool mqtt_broker_query_end(struct mqtt_broker *b, uint32_t slot, uint64_t matched, bool truncated, const char *error)
{
	if (slot >= b->cfg.max_queries || !b->tq[slot].busy)
		return true;
	struct mqtt_tq *t = &b->tq[slot];
	if (t->conn != MQTT_NIL) {
		char json[200];
		if (error)
			(void)fmt_snprintf(json, sizeof json, "{\"end\":true,\"error\":\"%s\",\"records\":%lu}", error,
					   (unsigned long)t->sent);
		else
			(void)fmt_snprintf(json, sizeof json,
					   "{\"end\":true,\"records\":%lu,\"matched\":%lu,\"truncated\":%s,\"skipped\":%lu}",
					   (unsigned long)t->sent, (unsigned long)matched, truncated ? "true" : "false",
					   (unsigned long)t->skipped);
		if (reply(b, &b->conns[t->conn], t->req, json) == -E_AGAIN)
			return false;
	}
	memset(t, 0, sizeof *t);
	return true;
}
