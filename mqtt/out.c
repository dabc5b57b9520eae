/* SPDX-License-Identifier: MIT
 *
 * The broker's output (declared in mqtt_int.h, "out.c"): packets encoded into the shared
 * b->out scratch buffer and handed to ops.send, with the counts of what left and what the
 * transport refused. Below the broker, sessions, durability and telemetry queries: it
 * calls only the codec and the transport. Must never keep a pointer to what it sends (the
 * transport copies or refuses), never retry (-E_AGAIN goes back to the caller, who keeps
 * the record), and never call the transport from inside a transport callback (the callers
 * guarantee it: see broker.c).
 */
#include "lib/err.h"
#include "lib/mem.h"
#include "mqtt/codec5.h"
#include "mqtt/mqtt_int.h"

int mqtt_send_encoded(struct mqtt_broker *b, struct mqtt_conn *c, const struct wcur *w)
{
	if (!wcur_ok(w))
		return -E_OVERFLOW;
	int rc = b->ops.send(b->ops.ctx, c->user, w->buf, w->pos);
	if (rc)
		b->st.send_again++;
	return rc;
}

int mqtt_send_bytes(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *p, size_t n)
{
	int rc = b->ops.send(b->ops.ctx, c->user, p, n);
	if (rc)
		b->st.send_again++;
	return rc;
}

int mqtt_send_ack(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t type, uint16_t pid)
{
	struct wcur w = wcur_make(b->out, b->out_len);
	if (mqtt_encode_ack(&w, (enum mqtt_type)type, pid))
		return -E_OVERFLOW;
	return mqtt_send_encoded(b, c, &w);
}

int mqtt_send_publish(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *topic,
		      uint16_t tlen, const uint8_t *payload, size_t plen, uint8_t qos, bool dup,
		      bool retain, uint16_t pid)
{
	struct wcur w = wcur_make(b->out, b->out_len);
	if (mqtt_encode_publish(&w, topic, tlen, payload, plen, qos, dup, retain, pid))
		return -E_OVERFLOW;
	int rc = mqtt_send_encoded(b, c, &w);
	if (rc == 0) {
		b->st.msgs_out++;
		b->st.msgs_out_qos[MIN(qos, 2u)]++;
	}
	return rc;
}

/* ---- Topic Alias tables (5.0) ----------------------------------------------------------- */

static size_t aliases_size(const struct mqtt_broker *b, const struct mqtt_conn5 *x)
{
	return sizeof(struct mqtt_aliases) + (size_t)b->cfg.topic_alias_max * sizeof(struct mqtt_alias) +
	       (size_t)x->alias_out_max * sizeof(struct mqtt_alias_out);
}

struct mqtt_aliases *mqtt_aliases_get(struct mqtt_broker *b, struct mqtt_conn *c)
{
	struct mqtt_conn5 *x = c->x5;
	if (!x->aliases) {
		size_t n = aliases_size(b, x);
		x->aliases = mqtt_heap_alloc(b, n);
		if (x->aliases)
			memset(x->aliases, 0, n);
	}
	return x->aliases;
}

void mqtt_aliases_free(struct mqtt_broker *b, struct mqtt_conn *c)
{
	struct mqtt_conn5 *x = c->x5;
	if (!x->aliases)
		return;
	struct mqtt_alias *in = mqtt_aliases_in(x->aliases);
	for (uint32_t i = 0; i < b->cfg.topic_alias_max; i++)
		if (in[i].topic)
			mqtt_heap_free(b, in[i].topic, in[i].len);
	mqtt_heap_free(b, x->aliases, aliases_size(b, x));
	x->aliases = NULL;
}

/* The outbound Topic Alias for a PUBLISH of topic t to 5.0 connection c: *alias (0: none),
 * *known (the client has it: the topic is left out) and *slot (to take, when not known;
 * taken only once the PUBLISH was sent, so the table is what the client saw). An entry is
 * taken in order while some are free, then round robin. */
static void alias_choose(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *t, size_t tlen, uint16_t *alias,
			 bool *known)
{
	*alias = 0;
	*known = false;
	struct mqtt_conn5 *x = c->x5;
	if (!x->alias_out_max || !tlen || tlen > MQTT_ALIAS_OUT_TOPIC_MAX)
		return;
	struct mqtt_aliases *tab = mqtt_aliases_get(b, c);
	if (!tab)
		return; /* no memory: the topic goes in full */
	struct mqtt_alias_out *out = mqtt_aliases_out(tab, b->cfg.topic_alias_max);
	for (uint16_t i = 0; i < tab->out_used; i++)
		if (out[i].len == tlen && memcmp(out[i].topic, t, tlen) == 0) {
			*alias = (uint16_t)(i + 1);
			*known = true;
			return;
		}
	*alias = (uint16_t)((tab->out_used < x->alias_out_max ? tab->out_used : tab->out_hand) + 1);
}

/* The PUBLISH that set alias (not known before) was sent: the client now has it. */
static void alias_taken(struct mqtt_broker *b, struct mqtt_conn *c, uint16_t alias, const uint8_t *t, size_t tlen)
{
	struct mqtt_conn5 *x = c->x5;
	struct mqtt_aliases *tab = x->aliases;
	struct mqtt_alias_out *e = &mqtt_aliases_out(tab, b->cfg.topic_alias_max)[alias - 1];
	e->len = (uint8_t)tlen;
	memcpy(e->topic, t, tlen);
	if (tab->out_used < x->alias_out_max)
		tab->out_used++;
	else
		tab->out_hand = (uint16_t)((tab->out_hand + 1u) % x->alias_out_max);
	b->st.aliases_out_set++;
}

int mqtt_send_message(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt_message *m, uint8_t qos,
		      bool dup, bool retain, uint16_t pid, const uint32_t *sub_ids, uint32_t n_sub_ids)
{
	if (m->topic_len > UINT16_MAX)
		return -E_RANGE;
	if (!c->v5)
		return mqtt_send_publish(b, c, m->topic, (uint16_t)m->topic_len, m->payload, m->payload_len, qos, dup,
					 retain, pid);
	struct mqtt5_publish p = { .topic = { m->topic, (uint16_t)m->topic_len }, .payload = m->payload,
				   .payload_len = m->payload_len, .pid = pid, .qos = qos, .dup = dup, .retain = retain };
	if (m->props_len) {
		/* stored as a PUBLISH carried them: decoded again (they were valid then) */
		struct cur cu = cur_make(m->props, m->props_len);
		enum mqtt_props_rej rej;
		if (mqtt_props_decode(&cu, MQTT_PROPS_PUBLISH, &p.props, &rej) != 0 || cur_left(&cu))
			memset(&p.props, 0, sizeof p.props); /* cannot happen: sent without them */
	}
	p.props.present &= ~(MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS) | MQTT_PROP_BIT(MQTT_PROP_SUB_ID) |
			     MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY));
	memset(&p.props.sub_ids, 0, sizeof p.props.sub_ids);
	if (m->expiry_s) {
		p.props.present |= MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY);
		p.props.message_expiry_s = m->expiry_s;
	}
	if (n_sub_ids) {
		p.props.present |= MQTT_PROP_BIT(MQTT_PROP_SUB_ID);
		p.props.sub_ids.n = n_sub_ids;
		p.props.sub_id_vals = sub_ids;
	}
	/* an outbound Topic Alias (MQTT 5.0 3.3.2.3.4): its topic left out once the client has it */
	uint16_t alias;
	bool known;
	alias_choose(b, c, m->topic, m->topic_len, &alias, &known);
	if (alias) {
		p.props.present |= MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS);
		p.props.topic_alias = alias;
		if (known)
			p.topic.len = 0;
	}
	size_t size = mqtt5_publish_size(&p);
	if (!size || size > b->out_len || (c->x5->max_packet && size > c->x5->max_packet))
		return -E_RANGE;
	struct wcur w = wcur_make(b->out, b->out_len);
	if (mqtt5_encode_publish(&w, &p))
		return -E_RANGE;
	int rc = mqtt_send_encoded(b, c, &w);
	if (rc == 0) {
		if (alias && !known)
			alias_taken(b, c, alias, m->topic, m->topic_len);
		b->st.msgs_out++;
		b->st.msgs_out_qos[MIN(qos, 2u)]++;
	}
	return rc;
}

int mqtt_send_publish0(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *topic, size_t tlen,
		       const uint8_t *payload, size_t plen)
{
	if (tlen > UINT16_MAX)
		return -E_OVERFLOW;
	/* in the reader's version: a 5.0 console or query reader needs a 5.0 PUBLISH */
	struct mqtt_message m = { .topic = topic, .topic_len = tlen, .payload = payload, .payload_len = plen };
	int rc = mqtt_send_message(b, c, &m, 0, false, false, 0, NULL, 0);
	return rc == -E_RANGE ? -E_OVERFLOW : rc;
}
