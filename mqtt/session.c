/* SPDX-License-Identifier: MIT
 *
 * Session table, subscriptions and delivery records (see session.h for the invariants and
 * state diagram). Owns the session, subscription and delivery pools. Must never free a
 * session that has a connection attached (the broker detaches first) and never leave a
 * tree node alive that nothing references.
 */
#include "lib/err.h"
#include "lib/mem.h"
#include "mqtt/acl.h"
#include "mqtt/fair.h"
#include "mqtt/msg.h"
#include "mqtt/topic.h"

static uint32_t sess_hash(const struct mqtt_broker *b, bool service, const uint8_t *id, size_t len)
{
	uint64_t h = siphash24(&b->key, id, len);
	return (uint32_t)(h ^ (service ? 0x9e3779b9u : 0u)) & b->sess_mask;
}

uint32_t mqtt_sess_find(const struct mqtt_broker *b, bool service, const uint8_t *id, size_t len)
{
	for (uint32_t i = b->sess_bkt[sess_hash(b, service, id, len)]; i != MQTT_NIL;
	     i = b->sess[i].hash_next) {
		const struct mqtt_session *s = &b->sess[i];
		if (s->id_len == len && !!(s->flags & MQTT_SESS_SERVICE) == service &&
		    memcmp(s->id, id, len) == 0)
			return i;
	}
	return MQTT_NIL;
}

uint32_t mqtt_sess_new(struct mqtt_broker *b, bool service, const uint8_t *id, size_t len)
{
	if (b->sess_free == MQTT_NIL) {
		b->st.pool_exhausted++;
		return MQTT_NIL;
	}
	uint8_t *copy = mqtt_heap_alloc(b, len ? len : 1);
	if (!copy)
		return MQTT_NIL;
	memcpy(copy, id, len);
	uint32_t i = b->sess_free;
	struct mqtt_session *s = &b->sess[i];
	b->sess_free = s->hash_next;
	memset(s, 0, sizeof *s);
	s->id = copy;
	s->id_len = (uint16_t)len;
	s->flags = (uint8_t)(MQTT_SESS_USED | (service ? MQTT_SESS_SERVICE : 0));
	b->sess_exp[i] = UINT32_MAX; /* the caller gives it its interval */
	s->conn = s->q_head = s->q_tail = s->rx2 = s->subs = s->sub0_node = MQTT_NIL;
	s->next_pid = 1;
	uint32_t h = sess_hash(b, service, id, len);
	s->hash_next = b->sess_bkt[h];
	b->sess_bkt[h] = i;
	b->n_sess++;
	return i;
}

uint32_t mqtt_dlv_alloc(struct mqtt_broker *b)
{
	if (b->dlv_free == MQTT_NIL) {
		b->st.pool_exhausted++;
		return MQTT_NIL;
	}
	uint32_t d = b->dlv_free;
	b->dlv_free = b->dlvs[d].next;
	memset(&b->dlvs[d], 0, sizeof b->dlvs[d]);
	b->dlvs[d].next = MQTT_NIL;
	b->n_dlvs++;
	return d;
}

void mqtt_dlv_release(struct mqtt_broker *b, uint32_t d)
{
	struct mqtt_dlv *r = &b->dlvs[d];
	if (r->msg)
		mqtt_msg_unref(b, r->msg);
	r->msg = NULL;
	r->state = MQTT_DLV_FREE;
	r->next = b->dlv_free;
	b->dlv_free = d;
	b->n_dlvs--;
}

/* The shards' interest summaries follow every subscription added or dropped here. */
static void interest_gone(struct mqtt_broker *b, uint16_t key)
{
	if (b->ops.interest)
		(void)b->ops.interest(b->ops.ctx, key, false);
}

static void rel_unref(struct mqtt_broker *b, uint32_t node)
{
	b->nodes[node].rel_refs--;
	mqtt_node_prune(b, node);
}

static void sub_unlink_node(struct mqtt_broker *b, uint32_t r)
{
	struct mqtt_sub *sub = &b->subs[r];
	uint32_t *pp = &b->nodes[sub->node].subs;
	while (*pp != r)
		pp = &b->subs[*pp].next_in_node;
	*pp = sub->next_in_node;
	mqtt_node_prune(b, sub->node);
}

static void sub_free(struct mqtt_broker *b, uint32_t r)
{
	if (b->subs[r].qos & MQTT_SUB_HAS_ID)
		mqtt_subid_clear(b, r);
	interest_gone(b, b->subs[r].key);
	if (b->subs[r].qos & MQTT_SUB_SHARED)
		mqtt_share_unlink(b, r); /* its group's list (a last member ends the group) */
	else if (b->subs[r].rel)
		rel_unref(b, b->subs[r].node);
	else
		sub_unlink_node(b, r);
	b->subs[r].node = MQTT_NIL;
	b->subs[r].next_in_session = b->sub_free;
	b->sub_free = r;
	b->n_subs--;
}

void mqtt_sess_free(struct mqtt_broker *b, uint32_t i)
{
	struct mqtt_session *s = &b->sess[i];
	mqtt_will_session_gone(b, i);
	mqtt_fair_session_gone(b, i);
	if (mqtt_persistent(s))
		mqtt_rec_sess(b, MQTT_PEV_SESS_DEL, s); /* storage drops it with everything of it */
	while (s->subs != MQTT_NIL) {
		uint32_t r = s->subs;
		s->subs = b->subs[r].next_in_session;
		sub_free(b, r);
	}
	if (s->sub0_node != MQTT_NIL) {
		if (s->sub0_qos & MQTT_SUB_HAS_ID)
			mqtt_subid_clear(b, MQTT_SUBID_INLINE | i);
		interest_gone(b, s->sub0_key);
		rel_unref(b, s->sub0_node);
	}
	for (uint32_t d = s->q_head; d != MQTT_NIL;) {
		uint32_t next = b->dlvs[d].next;
		mqtt_dlv_release(b, d);
		d = next;
	}
	for (uint32_t d = s->rx2; d != MQTT_NIL;) {
		uint32_t next = b->dlvs[d].next;
		mqtt_dlv_release(b, d);
		d = next;
	}
	uint32_t *pp = &b->sess_bkt[sess_hash(b, s->flags & MQTT_SESS_SERVICE, s->id, s->id_len)];
	while (*pp != i)
		pp = &b->sess[*pp].hash_next;
	*pp = s->hash_next;
	mqtt_heap_free(b, s->id, s->id_len ? s->id_len : 1);
	memset(s, 0, sizeof *s);
	s->hash_next = b->sess_free;
	b->sess_free = i;
	b->n_sess--;
}

uint8_t mqtt_sub_id_apply(struct mqtt_broker *b, uint32_t key, uint8_t qos, uint32_t sub_id)
{
	if (!sub_id) {
		mqtt_subid_clear(b, key);
		return qos;
	}
	(void)mqtt_subid_set(b, key, sub_id); /* an update, or a new entry mqtt_subid_room allowed */
	return (uint8_t)(qos | MQTT_SUB_HAS_ID);
}

int mqtt_sub_add(struct mqtt_broker *b, uint32_t i, const uint8_t *filter, int from, int n,
		 bool rel, uint8_t qos, uint32_t sub_id)
{
	struct mqtt_session *s = &b->sess[i];
	qos &= MQTT_SUB_OPTS;
	/* a new identifier needs a free entry (an identifier replaced reuses its own) */
	if (sub_id && !mqtt_subid_room(b))
		return -E_NOMEM;
	uint32_t node = mqtt_node_path(b, rel ? MQTT_ROOT_REL : MQTT_ROOT_ABS, filter, from, n, true);
	if (node == MQTT_NIL)
		return -E_NOMEM;
	/* the whole filter's bytes: its levels were split by the caller */
	uint16_t key = mqtt_interest_filter_key(filter, (size_t)b->lv_off[n - 1] + b->lv_len[n - 1]);
	/* an identical filter replaces the existing subscription [MQTT-3.8.4-3] */
	if (rel && s->sub0_node == node) {
		s->sub0_qos = mqtt_sub_id_apply(b, MQTT_SUBID_INLINE | i, qos, sub_id);
		return 1;
	}
	for (uint32_t r = s->subs; r != MQTT_NIL; r = b->subs[r].next_in_session) {
		if (b->subs[r].node == node && b->subs[r].rel == rel && !(b->subs[r].qos & MQTT_SUB_SHARED)) {
			b->subs[r].qos = mqtt_sub_id_apply(b, r, qos, sub_id);
			return 1;
		}
	}
	bool inline0 = rel && s->sub0_node == MQTT_NIL;
	if (!inline0 && (s->n_subs >= b->cfg.max_subs_per_session || b->sub_free == MQTT_NIL)) {
		if (b->sub_free == MQTT_NIL)
			b->st.pool_exhausted++;
		mqtt_node_prune(b, node);
		return -E_RANGE;
	}
	if (b->ops.interest && b->ops.interest(b->ops.ctx, key, true) != 0) {
		mqtt_node_prune(b, node); /* the other shards could not be told: not subscribed */
		return -E_AGAIN;
	}
	if (inline0) {
		s->sub0_node = node;
		s->sub0_qos = mqtt_sub_id_apply(b, MQTT_SUBID_INLINE | i, qos, sub_id);
		s->sub0_key = key;
		b->nodes[node].rel_refs++;
		return 0;
	}
	uint32_t r = b->sub_free;
	struct mqtt_sub *sub = &b->subs[r];
	b->sub_free = sub->next_in_session;
	sub->node = node;
	sub->session = i;
	sub->qos = mqtt_sub_id_apply(b, r, qos, sub_id);
	sub->rel = rel;
	sub->key = key;
	sub->next_in_session = s->subs;
	s->subs = r;
	s->n_subs++;
	b->n_subs++;
	if (rel) {
		b->nodes[node].rel_refs++;
		sub->next_in_node = MQTT_NIL;
	} else {
		sub->next_in_node = b->nodes[node].subs;
		b->nodes[node].subs = r;
	}
	return 0;
}

bool mqtt_sub_remove(struct mqtt_broker *b, uint32_t i, const uint8_t *filter, int from, int n,
		     bool rel)
{
	struct mqtt_session *s = &b->sess[i];
	uint32_t node = mqtt_node_path(b, rel ? MQTT_ROOT_REL : MQTT_ROOT_ABS, filter, from, n, false);
	if (node == MQTT_NIL)
		return false;
	if (rel && s->sub0_node == node) {
		if (s->sub0_qos & MQTT_SUB_HAS_ID)
			mqtt_subid_clear(b, MQTT_SUBID_INLINE | i);
		s->sub0_node = MQTT_NIL;
		interest_gone(b, s->sub0_key);
		rel_unref(b, node);
		return true;
	}
	for (uint32_t r = s->subs; r != MQTT_NIL; r = b->subs[r].next_in_session) {
		if (b->subs[r].node == node && b->subs[r].rel == rel && !(b->subs[r].qos & MQTT_SUB_SHARED)) {
			mqtt_sub_drop(b, i, r);
			return true;
		}
	}
	return false;
}

void mqtt_sub_drop(struct mqtt_broker *b, uint32_t si, uint32_t r)
{
	struct mqtt_session *s = &b->sess[si];
	uint32_t *pp = &s->subs;
	while (*pp != r)
		pp = &b->subs[*pp].next_in_session;
	*pp = b->subs[r].next_in_session;
	s->n_subs--;
	sub_free(b, r);
}

uint32_t mqtt_sub_ids_matching(struct mqtt_broker *b, uint32_t i, const uint8_t *topic, size_t tlen)
{
	const struct mqtt_session *s = &b->sess[i];
	/* identity-relative subscriptions match only below the device's own devices/<id> */
	size_t pl = MQTT_ACL_DEV_PREFIX_LEN;
	bool own = !(s->flags & MQTT_SESS_SERVICE) && tlen >= pl + s->id_len &&
		   memcmp(topic, MQTT_ACL_DEV_PREFIX, pl) == 0 && memcmp(topic + pl, s->id, s->id_len) == 0 &&
		   (tlen == pl + s->id_len || topic[pl + s->id_len] == '/');
	uint32_t n = 0;
	if (s->sub0_node != MQTT_NIL && (s->sub0_qos & MQTT_SUB_HAS_ID) && own &&
	    mqtt_node_matches_topic(b, s->sub0_node, 2, topic, tlen))
		b->sid_out[n++] = mqtt_subid_get(b, MQTT_SUBID_INLINE | i);
	for (uint32_t r = s->subs; r != MQTT_NIL; r = b->subs[r].next_in_session) {
		const struct mqtt_sub *sub = &b->subs[r];
		if ((sub->qos & MQTT_SUB_HAS_ID) && (!sub->rel || own) &&
		    mqtt_node_matches_topic(b, sub->node, sub->rel ? 2 : 0, topic, tlen))
			b->sid_out[n++] = mqtt_subid_get(b, r);
	}
	return n;
}
