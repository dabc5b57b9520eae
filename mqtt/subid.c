/* SPDX-License-Identifier: MIT
 *
 * Subscription Identifiers (MQTT 5.0 3.8.2.1.2; declared in mqtt_int.h): the identifier a
 * subscription was made with, in a table of cfg.max_sub_ids entries beside the
 * subscription pools, so subscriptions without one (every 3.1.1 one, most 5.0 ones) cost
 * nothing for it. A subscription that has one carries MQTT_SUB_HAS_ID in its options byte;
 * it is named by its key: a subscription record's index, or MQTT_SUBID_INLINE | the
 * session's index for a session's inline subscription.
 *
 * Invariants: 1. a key is in the table at most once, and iff the subscription it names is
 * in use and has MQTT_SUB_HAS_ID; 2. n_sids equals the entries in use; 3. an identifier is
 * 1..MQTT_SUB_ID_MAX.
 */
#include "lib/err.h"
#include "mqtt/mqtt_int.h"

static uint32_t hash(const struct mqtt_broker *b, uint32_t key)
{
	uint8_t k[4] = { (uint8_t)key, (uint8_t)(key >> 8), (uint8_t)(key >> 16), (uint8_t)(key >> 24) };
	return (uint32_t)siphash24(&b->key, k, sizeof k) & b->sid_mask;
}

static uint32_t *bucket(struct mqtt_broker *b, uint32_t key)
{
	return &b->sid_bkt[hash(b, key)];
}

static uint32_t *find(struct mqtt_broker *b, uint32_t key)
{
	uint32_t *pp = bucket(b, key);
	while (*pp != MQTT_NIL && b->sids[*pp].key != key)
		pp = &b->sids[*pp].next;
	return pp;
}

bool mqtt_subid_room(const struct mqtt_broker *b)
{
	return b->sid_free != MQTT_NIL;
}

int mqtt_subid_set(struct mqtt_broker *b, uint32_t key, uint32_t id)
{
	if (!id) {
		mqtt_subid_clear(b, key);
		return 0;
	}
	uint32_t *pp = find(b, key);
	if (*pp != MQTT_NIL) {
		b->sids[*pp].id = id;
		return 0;
	}
	if (b->sid_free == MQTT_NIL)
		return -E_NOMEM;
	uint32_t i = b->sid_free;
	b->sid_free = b->sids[i].next;
	b->sids[i] = (struct mqtt_subid){ .key = key, .id = id, .next = MQTT_NIL };
	*pp = i;
	b->n_sids++;
	return 0;
}

void mqtt_subid_clear(struct mqtt_broker *b, uint32_t key)
{
	if (!b->sids)
		return;
	uint32_t *pp = find(b, key);
	uint32_t i = *pp;
	if (i == MQTT_NIL)
		return;
	*pp = b->sids[i].next;
	b->sids[i].next = b->sid_free;
	b->sid_free = i;
	b->n_sids--;
}

uint32_t mqtt_subid_get(const struct mqtt_broker *b, uint32_t key)
{
	if (!b->sids)
		return 0;
	uint32_t i = b->sid_bkt[hash(b, key)];
	while (i != MQTT_NIL && b->sids[i].key != key)
		i = b->sids[i].next;
	return i == MQTT_NIL ? 0 : b->sids[i].id;
}

int mqtt_subid_check(const struct mqtt_broker *b)
{
	uint32_t used = 0;
	for (uint32_t h = 0; b->sids && h <= b->sid_mask; h++)
		for (uint32_t i = b->sid_bkt[h]; i != MQTT_NIL; i = b->sids[i].next) {
			const struct mqtt_subid *e = &b->sids[i];
			if (++used > b->cfg.max_sub_ids || !e->id || e->id > MQTT_SUB_ID_MAX)
				return -E_CORRUPT;
			bool inl = e->key & MQTT_SUBID_INLINE;
			uint32_t x = e->key & ~MQTT_SUBID_INLINE;
			if (inl ? x >= b->cfg.max_sessions || b->sess[x].sub0_node == MQTT_NIL ||
					  !(b->sess[x].sub0_qos & MQTT_SUB_HAS_ID)
				: x >= b->cfg.max_subs || b->subs[x].node == MQTT_NIL ||
					  !(b->subs[x].qos & MQTT_SUB_HAS_ID))
				return -E_CORRUPT;
		}
	uint32_t flagged = 0;
	for (uint32_t i = 0; i < b->cfg.max_sessions; i++)
		flagged += b->sess[i].sub0_node != MQTT_NIL && (b->sess[i].sub0_qos & MQTT_SUB_HAS_ID);
	for (uint32_t i = 0; i < b->cfg.max_subs; i++)
		flagged += b->subs[i].node != MQTT_NIL && (b->subs[i].qos & MQTT_SUB_HAS_ID);
	return used == b->n_sids && flagged == used ? 0 : -E_CORRUPT;
}
