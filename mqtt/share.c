/* SPDX-License-Identifier: MIT
 *
 * Shared subscriptions (MQTT 5.0 4.8.2; declared in mqtt_int.h): "$share/<name>/<filter>".
 * A group is (ShareName, filter node); its members are subscription records flagged
 * MQTT_SUB_SHARED, linked through next_in_node in the group's list instead of the node's
 * own list, so ordinary matching never sees them; routing asks mqtt_share_mark at every node
 * it matches that holds groups, and each group gives the message to one member: in turn,
 * the next one whose session has a connection, else the one whose turn it is (its session
 * queues it). Groups live in a table of cfg.max_shared_groups entries hashed by node.
 *
 * Offered only while this broker is the only shard (no ops.fanout): members on different
 * cores would each see the message routed to their own shard, and choosing one member
 * across shards needs the shards to agree, which they do not yet. The CONNACK says so
 * (Shared Subscription Available 0 otherwise, and a $share filter is refused 0x9E).
 *
 * Invariants (mqtt_share_check): 1. a group is in its node's chain iff it is in use, and
 * (node, name) is unique; 2. n_members equals its member list, which is never empty; 3. a
 * member record is in use, flagged MQTT_SUB_SHARED, names the group's node and is in exactly
 * one group's list; 4. a node holding groups counts each in rel_refs (which keeps it alive);
 * 5. n_groups equals the groups in use.
 */
#include "lib/err.h"
#include "lib/mem.h"
#include "mqtt/codec5.h"
#include "mqtt/mqtt_int.h"
#include "mqtt/topic.h"

bool mqtt_share_offered(const struct mqtt_broker *b)
{
	return b->cfg.max_shared_groups && !b->ops.fanout;
}

static uint32_t *bucket(const struct mqtt_broker *b, uint32_t node)
{
	uint8_t k[4] = { (uint8_t)node, (uint8_t)(node >> 8), (uint8_t)(node >> 16), (uint8_t)(node >> 24) };
	return &b->grp_bkt[(uint32_t)siphash24(&b->key, k, sizeof k) & b->grp_mask];
}

/* The link that holds group (node, name), or the chain's end when there is none. */
static uint32_t *group_link(struct mqtt_broker *b, uint32_t node, const uint8_t *name, size_t nl)
{
	uint32_t *pp = bucket(b, node);
	for (; *pp != MQTT_NIL; pp = &b->groups[*pp].next) {
		const struct mqtt_group *g = &b->groups[*pp];
		if (g->node == node && g->name_len == nl && memcmp(g->name, name, nl) == 0)
			break;
	}
	return pp;
}

static void group_free(struct mqtt_broker *b, uint32_t *link)
{
	uint32_t gi = *link;
	struct mqtt_group *g = &b->groups[gi];
	*link = g->next;
	uint32_t node = g->node;
	mqtt_heap_free(b, g->name, g->name_len);
	memset(g, 0, sizeof *g);
	g->next = b->grp_free;
	b->grp_free = gi;
	b->n_groups--;
	b->nodes[node].rel_refs--;
	mqtt_node_prune(b, node);
}

/* The ShareName and filter of a validated "$share/..." filter f (false: not shared). */
static bool share_parts(const uint8_t *f, size_t fl, struct mqtt_str *name, struct mqtt_str *match)
{
	return fl <= UINT16_MAX && mqtt5_share_split(f, (uint16_t)fl, name, match) == 1;
}

int mqtt_share_add(struct mqtt_broker *b, uint32_t si, const uint8_t *f, size_t fl, uint8_t opts, uint32_t sub_id)
{
	struct mqtt_str name, match;
	if (!mqtt_share_offered(b) || !share_parts(f, fl, &name, &match))
		return -E_INVAL;
	int n = mqtt_topic_split(b, match.p, match.len);
	if (n <= 0)
		return -E_INVAL;
	if (sub_id && !mqtt_subid_room(b))
		return -E_NOMEM;
	uint32_t node = mqtt_node_path(b, MQTT_ROOT_ABS, match.p, 0, n, true);
	if (node == MQTT_NIL)
		return -E_NOMEM;
	opts = (uint8_t)((opts & MQTT_SUB_OPTS) | MQTT_SUB_SHARED);
	uint32_t *link = group_link(b, node, name.p, name.len);
	if (*link != MQTT_NIL) { /* the same $share filter again: options replaced */
		for (uint32_t r = b->groups[*link].members; r != MQTT_NIL; r = b->subs[r].next_in_node)
			if (b->subs[r].session == si) {
				b->subs[r].qos = mqtt_sub_id_apply(b, r, opts, sub_id);
				return 1;
			}
	}
	struct mqtt_session *s = &b->sess[si];
	bool new_group = *link == MQTT_NIL;
	if (s->n_subs >= b->cfg.max_subs_per_session || b->sub_free == MQTT_NIL ||
	    (new_group && b->grp_free == MQTT_NIL)) {
		if (b->sub_free == MQTT_NIL || (new_group && b->grp_free == MQTT_NIL))
			b->st.pool_exhausted++;
		mqtt_node_prune(b, node);
		return -E_RANGE;
	}
	uint32_t gi = *link;
	if (new_group) {
		uint8_t *copy = mqtt_heap_alloc(b, name.len);
		if (!copy) {
			mqtt_node_prune(b, node);
			return -E_NOMEM;
		}
		memcpy(copy, name.p, name.len);
		gi = b->grp_free;
		struct mqtt_group *g = &b->groups[gi];
		b->grp_free = g->next;
		*g = (struct mqtt_group){ .name = copy, .node = node, .next = MQTT_NIL, .members = MQTT_NIL,
					  .name_len = name.len };
		*link = gi;
		b->n_groups++;
		b->nodes[node].rel_refs++; /* invariant 4 */
	}
	struct mqtt_group *g = &b->groups[gi];
	uint32_t r = b->sub_free;
	struct mqtt_sub *sub = &b->subs[r];
	b->sub_free = sub->next_in_session;
	sub->node = node;
	sub->session = si;
	sub->rel = 0;
	sub->key = mqtt_interest_filter_key(match.p, match.len);
	sub->qos = mqtt_sub_id_apply(b, r, opts, sub_id);
	sub->next_in_session = s->subs;
	s->subs = r;
	s->n_subs++;
	b->n_subs++;
	sub->next_in_node = g->members;
	g->members = r;
	g->n_members++;
	return 0;
}

void mqtt_share_unlink(struct mqtt_broker *b, uint32_t r)
{
	uint32_t node = b->subs[r].node;
	uint32_t *link = bucket(b, node);
	for (; *link != MQTT_NIL; link = &b->groups[*link].next) {
		struct mqtt_group *g = &b->groups[*link];
		if (g->node != node)
			continue;
		for (uint32_t *pp = &g->members; *pp != MQTT_NIL; pp = &b->subs[*pp].next_in_node)
			if (*pp == r) {
				*pp = b->subs[r].next_in_node;
				if (--g->n_members == 0)
					group_free(b, link);
				return;
			}
	}
}

bool mqtt_share_remove(struct mqtt_broker *b, uint32_t si, const uint8_t *f, size_t fl)
{
	struct mqtt_str name, match;
	if (!b->groups || !share_parts(f, fl, &name, &match))
		return false;
	int n = mqtt_topic_split(b, match.p, match.len);
	if (n <= 0)
		return false;
	uint32_t node = mqtt_node_path(b, MQTT_ROOT_ABS, match.p, 0, n, false);
	if (node == MQTT_NIL)
		return false;
	uint32_t gi = *group_link(b, node, name.p, name.len);
	if (gi == MQTT_NIL)
		return false;
	for (uint32_t r = b->groups[gi].members; r != MQTT_NIL; r = b->subs[r].next_in_node)
		if (b->subs[r].session == si) {
			mqtt_sub_drop(b, si, r);
			return true;
		}
	return false;
}

void mqtt_share_mark(struct mqtt_broker *b, uint32_t node)
{
	if (!b->groups)
		return;
	for (uint32_t gi = *bucket(b, node); gi != MQTT_NIL; gi = b->groups[gi].next) {
		struct mqtt_group *g = &b->groups[gi];
		if (g->node != node)
			continue;
		/* the member whose turn it is, or the next one after it that is connected */
		uint32_t start = g->turn++ % g->n_members, i = 0;
		uint32_t at_start = MQTT_NIL, after = MQTT_NIL, before = MQTT_NIL;
		for (uint32_t r = g->members; r != MQTT_NIL; r = b->subs[r].next_in_node, i++) {
			bool up = b->sess[b->subs[r].session].conn != MQTT_NIL;
			if (i == start)
				at_start = r;
			if (up && i >= start && after == MQTT_NIL)
				after = r;
			if (up && i < start && before == MQTT_NIL)
				before = r;
		}
		uint32_t chosen = after != MQTT_NIL ? after : before != MQTT_NIL ? before : at_start;
		b->st.shared_delivered++;
		mqtt_mark(b, b->subs[chosen].session, b->subs[chosen].qos);
	}
}

int mqtt_share_check(const struct mqtt_broker *b)
{
	uint32_t used = 0;
	for (uint32_t h = 0; b->groups && h <= b->grp_mask; h++)
		for (uint32_t gi = b->grp_bkt[h]; gi != MQTT_NIL; gi = b->groups[gi].next) {
			const struct mqtt_group *g = &b->groups[gi];
			if (++used > b->cfg.max_shared_groups || !g->name || !g->n_members || g->node >= b->cfg.max_nodes + 2 ||
			    !b->nodes[g->node].rel_refs)
				return -E_CORRUPT;
			uint32_t n = 0;
			for (uint32_t r = g->members; r != MQTT_NIL; r = b->subs[r].next_in_node) {
				const struct mqtt_sub *sub = &b->subs[r];
				if (++n > g->n_members || sub->node != g->node || !(sub->qos & MQTT_SUB_SHARED) ||
				    sub->session >= b->cfg.max_sessions || !(b->sess[sub->session].flags & MQTT_SESS_USED))
					return -E_CORRUPT;
			}
			if (n != g->n_members)
				return -E_CORRUPT;
		}
	return used == b->n_groups ? 0 : -E_CORRUPT;
}
