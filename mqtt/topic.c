/* SPDX-License-Identifier: MIT
 *
 * Topic tree and level interning (see topic.h). Owns the node and level pools and their
 * hashes. Must never recurse (depth comes from peers), never keep pointers into packets,
 * and never leave a half-built path behind after an exhaustion.
 *
 * Invariants: 1. a node is in the edge hash and in its parent's child list iff it is in
 * use and not a root; 2. a non-root node is in use iff it has subs, a retained message,
 * children or rel_refs (mqtt_node_prune restores this after every removal); 3. a level's
 * refs equals the number of nodes naming it (+1 for the permanent + and #); 4. depth
 * below a root never exceeds cfg.max_topic_levels.
 */
#include "mqtt/topic.h"

#include "lib/mem.h"
#include "mqtt/msg.h"

int mqtt_topic_split(struct mqtt_broker *b, const uint8_t *p, size_t len)
{
	int n = 0;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i == len || p[i] == '/') {
			if (n >= b->cfg.max_topic_levels)
				return -1;
			b->lv_off[n] = (uint16_t)start;
			b->lv_len[n] = (uint16_t)(i - start);
			n++;
			start = i + 1;
		}
	}
	return n;
}

static uint32_t level_hash(const struct mqtt_broker *b, const uint8_t *p, size_t len)
{
	return (uint32_t)siphash24(&b->key, p, len) & b->level_mask;
}

uint32_t mqtt_level_find(const struct mqtt_broker *b, const uint8_t *p, size_t len)
{
	for (uint32_t i = b->level_bkt[level_hash(b, p, len)]; i != MQTT_NIL;
	     i = b->levels[i].hash_next) {
		const struct mqtt_level *l = &b->levels[i];
		if (l->len == len && (len == 0 || memcmp(l->s, p, len) == 0))
			return i;
	}
	return MQTT_NIL;
}

/* Find or create; a new level has refs 0 until a node takes it. */
static uint32_t level_get(struct mqtt_broker *b, const uint8_t *p, size_t len)
{
	uint32_t id = mqtt_level_find(b, p, len);
	if (id != MQTT_NIL)
		return id;
	if (b->level_free == MQTT_NIL) {
		b->st.pool_exhausted++;
		return MQTT_NIL;
	}
	uint8_t *s = NULL;
	if (len) {
		s = mqtt_heap_alloc(b, len);
		if (!s)
			return MQTT_NIL;
		memcpy(s, p, len);
	}
	id = b->level_free;
	struct mqtt_level *l = &b->levels[id];
	b->level_free = l->hash_next;
	l->s = s;
	l->len = (uint16_t)len;
	l->refs = 0;
	uint32_t h = level_hash(b, p, len);
	l->hash_next = b->level_bkt[h];
	b->level_bkt[h] = id;
	b->n_levels++;
	return id;
}

static void level_put(struct mqtt_broker *b, uint32_t id)
{
	struct mqtt_level *l = &b->levels[id];
	if (l->refs)
		return;
	uint32_t *pp = &b->level_bkt[level_hash(b, l->s, l->len)];
	while (*pp != id)
		pp = &b->levels[*pp].hash_next;
	*pp = l->hash_next;
	if (l->s)
		mqtt_heap_free(b, l->s, l->len);
	l->s = NULL;
	l->hash_next = b->level_free;
	b->level_free = id;
	b->n_levels--;
}

static uint32_t edge_hash(const struct mqtt_broker *b, uint32_t parent, uint32_t level)
{
	uint8_t k[8];
	for (int i = 0; i < 4; i++) {
		k[i] = (uint8_t)(parent >> (8 * i));
		k[4 + i] = (uint8_t)(level >> (8 * i));
	}
	return (uint32_t)siphash24(&b->key, k, sizeof k) & b->edge_mask;
}

static uint32_t child_find(const struct mqtt_broker *b, uint32_t parent, uint32_t level)
{
	if (level == MQTT_NIL)
		return MQTT_NIL;
	for (uint32_t i = b->edge_bkt[edge_hash(b, parent, level)]; i != MQTT_NIL;
	     i = b->nodes[i].hash_next)
		if (b->nodes[i].parent == parent && b->nodes[i].level == level)
			return i;
	return MQTT_NIL;
}

void mqtt_topic_ids(struct mqtt_broker *b, const uint8_t *p, int n)
{
	for (int i = 0; i < n; i++)
		b->lv_id[i] = mqtt_level_find(b, p + b->lv_off[i], b->lv_len[i]);
}

static bool node_live(const struct mqtt_node *nd)
{
	return nd->subs != MQTT_NIL || nd->retained || nd->first_child != MQTT_NIL ||
	       nd->rel_refs;
}

void mqtt_node_prune(struct mqtt_broker *b, uint32_t id)
{
	while (id != MQTT_ROOT_ABS && id != MQTT_ROOT_REL && id != MQTT_NIL) {
		struct mqtt_node *nd = &b->nodes[id];
		if (node_live(nd))
			return;
		uint32_t parent = nd->parent;
		/* unlink from the parent's children */
		if (nd->prev_sibling != MQTT_NIL)
			b->nodes[nd->prev_sibling].next_sibling = nd->next_sibling;
		else
			b->nodes[parent].first_child = nd->next_sibling;
		if (nd->next_sibling != MQTT_NIL)
			b->nodes[nd->next_sibling].prev_sibling = nd->prev_sibling;
		/* and from the edge hash */
		uint32_t *pp = &b->edge_bkt[edge_hash(b, parent, nd->level)];
		while (*pp != id)
			pp = &b->nodes[*pp].hash_next;
		*pp = nd->hash_next;
		b->levels[nd->level].refs--;
		level_put(b, nd->level);
		nd->level = MQTT_NIL;
		nd->parent = MQTT_NIL;
		nd->hash_next = b->node_free;
		b->node_free = id;
		b->n_nodes--;
		id = parent;
	}
}

static uint32_t node_new(struct mqtt_broker *b, uint32_t parent, uint32_t level)
{
	if (b->node_free == MQTT_NIL) {
		b->st.pool_exhausted++;
		return MQTT_NIL;
	}
	uint32_t id = b->node_free;
	struct mqtt_node *nd = &b->nodes[id];
	b->node_free = nd->hash_next;
	nd->parent = parent;
	nd->level = level;
	b->levels[level].refs++;
	nd->first_child = MQTT_NIL;
	nd->subs = MQTT_NIL;
	nd->rel_refs = 0;
	nd->retained = NULL;
	nd->prev_sibling = MQTT_NIL;
	nd->next_sibling = b->nodes[parent].first_child;
	if (nd->next_sibling != MQTT_NIL)
		b->nodes[nd->next_sibling].prev_sibling = id;
	b->nodes[parent].first_child = id;
	uint32_t h = edge_hash(b, parent, level);
	nd->hash_next = b->edge_bkt[h];
	b->edge_bkt[h] = id;
	b->n_nodes++;
	return id;
}

uint32_t mqtt_node_path(struct mqtt_broker *b, uint32_t root, const uint8_t *p, int from, int n,
			bool create)
{
	uint32_t cur = root;
	for (int i = from; i < n; i++) {
		const uint8_t *s = p + b->lv_off[i];
		size_t len = b->lv_len[i];
		uint32_t lvl = create ? level_get(b, s, len) : mqtt_level_find(b, s, len);
		uint32_t next = child_find(b, cur, lvl);
		if (next == MQTT_NIL && create && lvl != MQTT_NIL) {
			next = node_new(b, cur, lvl);
			if (next == MQTT_NIL)
				level_put(b, lvl);
		}
		if (next == MQTT_NIL) {
			if (create)
				mqtt_node_prune(b, cur); /* nothing half-built */
			return MQTT_NIL;
		}
		cur = next;
	}
	return cur;
}

static bool level_dollar(const struct mqtt_broker *b, uint32_t level)
{
	const struct mqtt_level *l = &b->levels[level];
	return l->len && l->s[0] == '$';
}

bool mqtt_node_match(const struct mqtt_broker *b, uint32_t node, int from, int n, bool dollar)
{
	uint32_t depth = 0;
	for (uint32_t i = node; i != MQTT_ROOT_ABS && i != MQTT_ROOT_REL; i = b->nodes[i].parent)
		depth++;
	if (depth > b->cfg.max_topic_levels)
		return false;
	uint32_t k = depth;
	for (uint32_t i = node; k > 0; i = b->nodes[i].parent)
		b->fl_id[--k] = b->nodes[i].level;
	int t = from;
	for (k = 0; k < depth; k++, t++) {
		uint32_t f = b->fl_id[k];
		if (f == b->lvl_hash)
			return !(k == 0 && dollar); /* [MQTT-4.7.2-1] */
		if (t >= n)
			return false;
		if (f == b->lvl_plus) {
			if (k == 0 && dollar)
				return false;
			continue;
		}
		if (f != b->lv_id[t])
			return false;
	}
	return t == n;
}

static void mark_subs(struct mqtt_broker *b, uint32_t node)
{
	for (uint32_t s = b->nodes[node].subs; s != MQTT_NIL; s = b->subs[s].next_in_node) {
		mqtt_mark(b, b->subs[s].session, b->subs[s].qos);
	}
	if (b->nodes[node].rel_refs) /* below the absolute root: only shared groups count there */
		mqtt_share_mark(b, node);
}

void mqtt_tree_match_subs(struct mqtt_broker *b, int n, bool dollar)
{
	/* DFS over (node, depth): at most one pending sibling per depth, so the stack needs
	 * 2 entries per level (exact child and + child) plus the root. */
	uint32_t sp = 0;
	b->stack[sp++] = MQTT_ROOT_ABS;
	b->stack[sp++] = 0;
	while (sp) {
		uint32_t d = b->stack[--sp];
		uint32_t node = b->stack[--sp];
		bool wild_ok = !(d == 0 && dollar); /* [MQTT-4.7.2-1] */
		uint32_t h = child_find(b, node, b->lvl_hash);
		if (h != MQTT_NIL && wild_ok)
			mark_subs(b, h); /* # matches this level and everything below */
		if (d == (uint32_t)n) {
			mark_subs(b, node);
			continue;
		}
		uint32_t c = child_find(b, node, b->lv_id[d]);
		if (c != MQTT_NIL && sp + 2 <= b->stack_cap) {
			b->stack[sp++] = c;
			b->stack[sp++] = d + 1;
		}
		uint32_t pl = child_find(b, node, b->lvl_plus);
		if (pl != MQTT_NIL && wild_ok && sp + 2 <= b->stack_cap) {
			b->stack[sp++] = pl;
			b->stack[sp++] = d + 1;
		}
	}
}

/* Pre-order walk of the subtree under `top` (top included), via parent links. */
static void retained_subtree(struct mqtt_broker *b, uint32_t top, mqtt_retained_fn fn, void *arg)
{
	uint32_t node = top;
	for (;;) {
		if (b->nodes[node].retained)
			fn(b, b->nodes[node].retained, arg);
		if (b->nodes[node].first_child != MQTT_NIL) {
			node = b->nodes[node].first_child;
			continue;
		}
		while (node != top && b->nodes[node].next_sibling == MQTT_NIL)
			node = b->nodes[node].parent;
		if (node == top)
			return;
		node = b->nodes[node].next_sibling;
	}
}

void mqtt_tree_retained(struct mqtt_broker *b, int n, mqtt_retained_fn fn, void *arg)
{
	const uint32_t root = MQTT_ROOT_ABS;
	uint32_t node = b->nodes[root].first_child;
	int depth = 1;
	while (node != MQTT_NIL) {
		const struct mqtt_node *nd = &b->nodes[node];
		int k = depth - 1;
		uint32_t f = b->fl_id[k];
		bool dollar = k == 0 && level_dollar(b, nd->level);
		bool descend = false;
		if (f == b->lvl_hash) {
			if (!dollar)
				retained_subtree(b, node, fn, arg);
		} else if ((f == b->lvl_plus && !dollar) || f == nd->level) {
			if (k + 1 == n) {
				if (nd->retained)
					fn(b, nd->retained, arg);
			} else {
				/* "a/#" also matches "a" [MQTT-4.7.1-2] */
				if (k + 2 == n && b->fl_id[k + 1] == b->lvl_hash && nd->retained)
					fn(b, nd->retained, arg);
				descend = nd->first_child != MQTT_NIL;
			}
		}
		if (descend) {
			node = nd->first_child;
			depth++;
			continue;
		}
		while (node != root && b->nodes[node].next_sibling == MQTT_NIL) {
			node = b->nodes[node].parent;
			depth--;
		}
		if (node == root)
			return;
		node = b->nodes[node].next_sibling;
	}
}

/* [start, end) of level idx of t (idx below its level count). */
static void level_at(const uint8_t *t, size_t tlen, int idx, size_t *start, size_t *end)
{
	size_t i = 0;
	for (int l = 0; l < idx; i++)
		if (t[i] == '/')
			l++;
	*start = i;
	while (i < tlen && t[i] != '/')
		i++;
	*end = i;
}

bool mqtt_node_matches_topic(const struct mqtt_broker *b, uint32_t node, int from, const uint8_t *t, size_t tlen)
{
	int depth = 0;
	uint32_t top = node;
	for (uint32_t x = node; x > MQTT_ROOT_REL; x = b->nodes[x].parent) {
		depth++;
		top = x;
	}
	int levels = 1;
	for (size_t i = 0; i < tlen; i++)
		levels += t[i] == '/';
	int left = levels - from; /* topic levels the filter must match */
	uint32_t first = b->nodes[top].level;
	if (from == 0 && tlen && t[0] == '$' && (first == b->lvl_plus || first == b->lvl_hash))
		return false; /* wildcards never match a first level starting with '$' */
	uint32_t x = node;
	int cmp = depth;
	if (b->nodes[node].level == b->lvl_hash) { /* '#' also matches the parent level */
		if (left < depth - 1)
			return false;
		x = b->nodes[node].parent;
		cmp = depth - 1;
	} else if (left != depth) {
		return false;
	}
	if (cmp == 0)
		return true;
	/* the filter's levels from its last compared one back to its first, with the topic's */
	size_t start, end;
	level_at(t, tlen, from + cmp - 1, &start, &end);
	for (int j = cmp; j > 0; j--) {
		uint32_t l = b->nodes[x].level;
		const struct mqtt_level *lv = &b->levels[l];
		if (l != b->lvl_plus && (lv->len != end - start || (lv->len && memcmp(lv->s, t + start, lv->len) != 0)))
			return false;
		x = b->nodes[x].parent;
		if (j > 1) { /* the level before: it ends at the '/' before start */
			end = start - 1;
			start = end;
			while (start > 0 && t[start - 1] != '/')
				start--;
		}
	}
	return true;
}
