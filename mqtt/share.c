/* SPDX-License-Identifier: MIT
 *
 * Shared subscriptions (MQTT 5.0 4.8.2; declared in mqtt_int.h): "$share/<name>/<filter>".
 * A group is (ShareName, filter node); its members are subscription records flagged
 * MQTT_SUB_SHARED, linked through next_in_node in the group's list instead of the node's
 * own list, so ordinary matching never sees them; routing asks mqtt_share_mark at every node
 * it matches that holds groups. Groups live in a table of cfg.max_shared_groups entries
 * hashed by node.
 *
 * Across shards (ADR-070): a shard tells the others (ops.share) when it gets its first
 * member of a group and when it loses its last one, before the SUBACK (the SUBSCRIBE's
 * interest sync waits for every shard to have applied it); every shard keeps, per group,
 * the set of other shards holding members (`remote`; a group known only from others has no
 * member here). A routed message reaches every shard that holds members (their interest
 * keys), and each one picks the same shard from the set, by the value the origin gave the
 * message (b->share_pick, its count of routed messages): the picked shard gives it to one of
 * its members, the others skip the group. Within a shard: in turn, the next member whose
 * session has a connection, else the one whose turn it is (its session queues it). While a
 * change of the set is on its way the shards may disagree for the messages in between:
 * one may go to two members or to none (ADR-070).
 *
 * Invariants (mqtt_share_check): 1. a group is in its node's chain iff it is in use, and
 * (node, name) is unique; 2. n_members equals its member list; a group has members here or
 * on another shard (remote != 0), never neither, and never remote bits without ops.share
 * nor its own shard's bit; 3. a member record is in use, flagged MQTT_SUB_SHARED, names the
 * group's node and is in exactly one group's list; 4. a node holding groups counts each in
 * rel_refs (which keeps it alive); 5. n_groups equals the groups in use.
 */
#include "lib/err.h"
#include "lib/mem.h"
#include "mqtt/codec5.h"
#include "mqtt/mqtt_int.h"
#include "mqtt/topic.h"

#define SHARE_PREFIX_LEN 7u /* "$share/" */

bool mqtt_share_offered(const struct mqtt_broker *b)
{
	return b->cfg.max_shared_groups && (!b->ops.fanout || b->ops.share);
}

/* This shard's bit in a group's set of shards (bit 0 when it is the only shard). */
static uint64_t self_bit(const struct mqtt_broker *b)
{
	return b->ops.share ? (uint64_t)1 << b->ops.share_self : 1u;
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
		if (g->node == node && g->name_len == nl && memcmp(g->text + SHARE_PREFIX_LEN, name, nl) == 0)
			break;
	}
	return pp;
}

/* A new group at *link (its chain's end) for the whole filter f of ShareName length nl:
 * its index, or MQTT_NIL (table full: counted; no memory for its text). */
static uint32_t group_new(struct mqtt_broker *b, uint32_t *link, uint32_t node, const uint8_t *f, size_t fl,
			  size_t nl)
{
	if (b->grp_free == MQTT_NIL) {
		b->st.pool_exhausted++;
		return MQTT_NIL;
	}
	uint8_t *copy = mqtt_heap_alloc(b, fl);
	if (!copy)
		return MQTT_NIL;
	memcpy(copy, f, fl);
	uint32_t gi = b->grp_free;
	struct mqtt_group *g = &b->groups[gi];
	b->grp_free = g->next;
	*g = (struct mqtt_group){ .text = copy, .node = node, .next = MQTT_NIL, .members = MQTT_NIL,
				  .name_len = (uint16_t)nl, .text_len = (uint16_t)fl };
	*link = gi;
	b->n_groups++;
	b->nodes[node].rel_refs++; /* invariant 4 */
	return gi;
}

static void group_free(struct mqtt_broker *b, uint32_t *link)
{
	uint32_t gi = *link;
	struct mqtt_group *g = &b->groups[gi];
	*link = g->next;
	uint32_t node = g->node;
	mqtt_heap_free(b, g->text, g->text_len);
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
	if (s->n_subs >= b->cfg.max_subs_per_session || b->sub_free == MQTT_NIL) {
		if (b->sub_free == MQTT_NIL)
			b->st.pool_exhausted++;
		mqtt_node_prune(b, node);
		return -E_RANGE;
	}
	bool new_group = *link == MQTT_NIL;
	uint32_t gi = new_group ? group_new(b, link, node, f, fl, name.len) : *link;
	if (gi == MQTT_NIL) {
		mqtt_node_prune(b, node);
		return b->grp_free == MQTT_NIL ? -E_RANGE : -E_NOMEM;
	}
	/* The other shards must route the group's messages here (the filter's interest key)
	 * and count this shard among the group's before the SUBACK. */
	uint16_t key = mqtt_interest_filter_key(match.p, match.len);
	bool told_key = false;
	if (b->ops.interest) {
		if (b->ops.interest(b->ops.ctx, key, true) != 0)
			goto untold;
		told_key = true;
	}
	if (b->groups[gi].n_members == 0 && b->ops.share && b->ops.share(b->ops.ctx, f, fl, true) != 0)
		goto untold;
	struct mqtt_group *g = &b->groups[gi];
	uint32_t r = b->sub_free;
	struct mqtt_sub *sub = &b->subs[r];
	b->sub_free = sub->next_in_session;
	sub->node = node;
	sub->session = si;
	sub->rel = 0;
	sub->key = key;
	sub->qos = mqtt_sub_id_apply(b, r, opts, sub_id);
	sub->next_in_session = s->subs;
	s->subs = r;
	s->n_subs++;
	b->n_subs++;
	sub->next_in_node = g->members;
	g->members = r;
	g->n_members++;
	return 0;
untold:
	if (told_key)
		(void)b->ops.interest(b->ops.ctx, key, false);
	if (new_group)
		group_free(b, link); /* prunes the node */
	else
		mqtt_node_prune(b, node);
	return -E_AGAIN;
}

/* A group with no member here any more: the other shards are told; it stays while they
 * hold members. */
static void group_emptied(struct mqtt_broker *b, uint32_t *link)
{
	struct mqtt_group *g = &b->groups[*link];
	if (b->ops.share && b->ops.share(b->ops.ctx, g->text, g->text_len, false) != 0)
		b->st.share_unsaid++; /* they may still pick this shard: such messages go to nobody */
	if (!g->remote)
		group_free(b, link);
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
					group_emptied(b, link);
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

int mqtt_share_remote(struct mqtt_broker *b, uint32_t shard, const uint8_t *f, size_t fl, bool add)
{
	struct mqtt_str name, match;
	if (!b->groups || !b->ops.share || shard >= MQTT_SHARE_SHARDS || shard == b->ops.share_self ||
	    fl > UINT16_MAX || !mqtt_filter_valid(f, fl) || !share_parts(f, fl, &name, &match))
		return -E_INVAL;
	int n = mqtt_topic_split(b, match.p, match.len);
	if (n <= 0)
		return -E_INVAL;
	uint32_t node = mqtt_node_path(b, MQTT_ROOT_ABS, match.p, 0, n, add);
	if (node == MQTT_NIL)
		return add ? -E_NOMEM : 0; /* a group this shard never knew: nothing to forget */
	uint64_t bit = (uint64_t)1 << shard;
	uint32_t *link = group_link(b, node, name.p, name.len);
	if (!add) {
		if (*link == MQTT_NIL)
			return 0;
		struct mqtt_group *g = &b->groups[*link];
		g->remote &= ~bit;
		if (!g->remote && !g->n_members)
			group_free(b, link);
		return 0;
	}
	if (*link == MQTT_NIL && group_new(b, link, node, f, fl, name.len) == MQTT_NIL) {
		mqtt_node_prune(b, node);
		return b->grp_free == MQTT_NIL ? -E_RANGE : -E_NOMEM;
	}
	b->groups[*link].remote |= bit;
	return 0;
}

/* The shard that takes a message with pick value v among the shards of set (not empty):
 * the (v mod their count)-th of them, counted from the lowest. */
static uint64_t shard_picked(uint64_t set, uint32_t v)
{
	uint32_t k = 0;
	for (uint64_t x = set; x; x &= x - 1u)
		k++;
	if (k == 0)
		return 0;
	for (uint32_t i = v % k; i; i--)
		set &= set - 1u;
	return set & (~set + 1u);
}

void mqtt_share_mark(struct mqtt_broker *b, uint32_t node)
{
	if (!b->groups)
		return;
	uint64_t self = self_bit(b);
	for (uint32_t gi = *bucket(b, node); gi != MQTT_NIL; gi = b->groups[gi].next) {
		struct mqtt_group *g = &b->groups[gi];
		if (g->node != node || !g->n_members)
			continue;
		if (g->remote && shard_picked(g->remote | self, b->share_pick) != self) {
			b->st.shared_elsewhere++;
			continue;
		}
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

void mqtt_share_fini(struct mqtt_broker *b)
{
	for (uint32_t h = 0; b->groups && h <= b->grp_mask; h++)
		while (b->grp_bkt[h] != MQTT_NIL)
			group_free(b, &b->grp_bkt[h]); /* members are gone: only other shards' remain */
}

int mqtt_share_check(const struct mqtt_broker *b)
{
	uint32_t used = 0;
	uint64_t self = self_bit(b);
	for (uint32_t h = 0; b->groups && h <= b->grp_mask; h++)
		for (uint32_t gi = b->grp_bkt[h]; gi != MQTT_NIL; gi = b->groups[gi].next) {
			const struct mqtt_group *g = &b->groups[gi];
			if (++used > b->cfg.max_shared_groups || !g->text || g->text_len <= SHARE_PREFIX_LEN + g->name_len ||
			    (!g->n_members && !g->remote) || (g->remote && !b->ops.share) || (g->remote & self) ||
			    g->node >= b->cfg.max_nodes + 2 || !b->nodes[g->node].rel_refs)
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
