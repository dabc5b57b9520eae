/* SPDX-License-Identifier: MIT
 *
 * Topic tree (private to mqtt/): interned level strings, nodes keyed by (parent, level)
 * in a keyed hash, subscription lists, retained messages, and iterative matching (no
 * recursion: depth is bounded by cfg.max_topic_levels and walks use explicit stacks or
 * parent links). Must never keep pointers into packets: level strings are copied.
 */
#ifndef MQTT_TOPIC_H
#define MQTT_TOPIC_H

#include "mqtt/mqtt_int.h"

/* Split a topic or filter into b->lv_off/lv_len; number of levels, or -1 if deeper than
 * cfg.max_topic_levels. */
int mqtt_topic_split(struct mqtt_broker *b, const uint8_t *p, size_t len);
/* Interned id of a level string, or MQTT_NIL if no node names it. */
uint32_t mqtt_level_find(const struct mqtt_broker *b, const uint8_t *p, size_t len);
/* Node for the levels [from, n) of the last split, below root; created when `create`.
 * MQTT_NIL if absent or a pool/heap is exhausted (nothing is left half-built). */
uint32_t mqtt_node_path(struct mqtt_broker *b, uint32_t root, const uint8_t *p, int from,
			int n, bool create);
/* Free node and its now-empty ancestors. */
void mqtt_node_prune(struct mqtt_broker *b, uint32_t node);
/* Does the filter ending at `node` (below its root) match the levels [from, n) of the
 * last split (ids in b->lv_id)? dollar: the first compared level starts with '$'. */
bool mqtt_node_match(const struct mqtt_broker *b, uint32_t node, int from, int n, bool dollar);
/* Does the filter ending at `node` (below its root) match the levels from `from` on of
 * topic t? Uses no scratch (parent links and the topic's bytes only), so it may run while
 * a split or a walk is in progress. The '$' rule applies when from is 0. */
bool mqtt_node_matches_topic(const struct mqtt_broker *b, uint32_t node, int from, const uint8_t *t, size_t tlen);
/* Topic levels of the last split to interned ids in b->lv_id (MQTT_NIL if unknown). */
void mqtt_topic_ids(struct mqtt_broker *b, const uint8_t *p, int n);

/* Callback-free walks: fill b->touched/b->mark with sessions whose absolute
 * subscriptions match the topic of the last split (ids in lv_id). */
void mqtt_tree_match_subs(struct mqtt_broker *b, int n, bool dollar);
/* Visit every retained message matching the filter of the last split (ids in fl_id).
 * fn is called for each; it must not change the tree. */
typedef void (*mqtt_retained_fn)(struct mqtt_broker *b, struct mqtt_msg *m, void *arg);
void mqtt_tree_retained(struct mqtt_broker *b, int n, mqtt_retained_fn fn, void *arg);

#endif
