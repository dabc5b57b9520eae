/* SPDX-License-Identifier: MIT
 *
 * Private to mqtt/: the broker's pools and records. Nothing outside mqtt/ includes this.
 * Every record is named by a 32-bit pool index (MQTT_NIL = none); pools are arrays carved
 * from the caller's region at init, with a free list threaded through one link field.
 */
#ifndef MQTT_MQTT_INT_H
#define MQTT_MQTT_INT_H

#include "lib/siphash.h"
#include "mqtt/broker.h"
#include "mqtt/session.h"

/* A message shared by every delivery and retained slot that references it. Heap block
 * of sizeof + topic_len + payload_len; freed when refs drops to 0. */
struct mqtt_msg {
	uint32_t refs;
	uint32_t payload_len;
	uint16_t topic_len;
	uint8_t qos;
	uint8_t retain;
	uint8_t data[]; /* topic, then payload */
};

/* An interned topic level string; refs = nodes naming it (+ and # are permanent). */
struct mqtt_level {
	uint8_t *s; /* heap, len bytes (NULL for the empty level) */
	uint32_t hash_next;
	uint32_t refs;
	uint16_t len;
};

/* A topic-tree node. Two roots: MQTT_ROOT_ABS (absolute topics, retained messages,
 * subscription lists) and MQTT_ROOT_REL (filters relative to a device's own
 * devices/<id>/ prefix: shared by every device, counted in rel_refs, no subscriber
 * lists). A node lives while it has subs, retained, children or rel_refs. */
struct mqtt_node {
	uint32_t parent, first_child, next_sibling;
	uint32_t hash_next; /* edge (parent, level) hash chain, or free-list link */
	uint32_t level;
	uint32_t subs;      /* subscription records, linked by next_in_node */
	uint32_t rel_refs;
	uint32_t prev_sibling;
	struct mqtt_msg *retained;
};

#define MQTT_ROOT_ABS 0u
#define MQTT_ROOT_REL 1u

struct mqtt_sub {
	uint32_t node;
	uint32_t session;
	uint32_t next_in_session; /* or free-list link */
	uint32_t next_in_node;
	uint8_t qos;
	uint8_t rel;
};

enum mqtt_conn_state { MQTT_CONN_FREE = 0, MQTT_CONN_NEW, MQTT_CONN_UP };

/* 48 bytes (DESIGN.md): what is needed only in one state shares storage (identity before
 * CONNECT, will after), the reassembly state is one pointer to a heap block that exists
 * only while a packet is split, and the rate-limit tokens live in the per-identity table. */
struct mqtt_conn {
	void *user;                /* linked: the transport's handle */
	union {
		uint8_t *identity;     /* NEW: heap, identity_len bytes, until CONNECT is done */
		struct mqtt_msg *will; /* UP: heap, while a will is set (else NULL) */
	};
	struct mqtt_framer fr;     /* NULL unless a packet is split */
	uint32_t last_rx_ms;       /* low 32 bits of the clock: differences are taken mod 2^32 */
	uint32_t session;          /* or free-list link */
	uint32_t rate;             /* per-identity bucket index, or MQTT_NIL (none / limits off) */
	uint16_t keepalive_s;
	uint16_t violations;
	uint16_t acl;              /* service rule index, or UINT16_MAX */
	uint8_t identity_len;
	uint8_t state;
	uint8_t kind;
};

STATIC_ASSERT(sizeof(struct mqtt_conn) <= 48, "MQTT connection must fit 48 bytes (DESIGN.md)");

/* A per-identity token bucket (ADR-020; broker.h rate_idle_ids). Entries [0, rate_hw)
 * are in use: an entry is never freed, only recycled in place by eviction, which takes
 * only entries no connection references (refs == 0) and whose buckets are full, i.e.
 * equal to a fresh one. */
struct mqtt_rate {
	uint64_t key;      /* siphash of (kind, identity); collisions share a bucket */
	uint64_t ms;       /* clock of the last refill */
	uint32_t msgs;     /* milli-messages */
	uint32_t bytes;
	uint32_t hash_next;
	uint32_t refs;     /* UP connections of this identity */
};

STATIC_ASSERT(sizeof(struct mqtt_rate) == 32, "rate bucket is 32 bytes");

/* Rate limit of the log, one per reason. */
struct mqtt_log_bucket {
	uint64_t ms;
	uint32_t milli;      /* tokens in 1/1000 lines */
	uint32_t suppressed; /* lines dropped since the last one written */
};

struct mqtt_broker {
	struct mqtt_broker_config cfg;
	struct mqtt_broker_ops ops;
	struct mqtt_broker_stats st;
	struct siphash_key key;
	size_t heap_used;

	struct mqtt_conn *conns;
	struct mqtt_session *sess;
	struct mqtt_sub *subs;
	struct mqtt_dlv *dlvs;
	struct mqtt_node *nodes;
	struct mqtt_level *levels;
	uint32_t conn_free, sess_free, sub_free, dlv_free, node_free, level_free;
	uint32_t n_conns, n_sess, n_subs, n_dlvs, n_nodes, n_levels, n_retained;
	uint32_t max_levels;
	uint32_t *sess_bkt, *edge_bkt, *level_bkt;
	uint32_t sess_mask, edge_mask, level_mask;
	uint32_t lvl_plus, lvl_hash;
	uint64_t now_ms;    /* latest clock seen at an entry point */

	struct mqtt_rate *rates;
	uint32_t *rate_bkt;
	uint32_t rate_cap, rate_mask, rate_hw, rate_hand; /* cap: table entries */
	struct mqtt_log_bucket logb[MQTT_LOG__COUNT];

	/* scratch, used within one call */
	uint8_t *out;
	size_t out_len;
	uint8_t *mark;      /* per session: 0, or max granted QoS + 1 during routing */
	uint32_t *touched;
	uint32_t n_touched;
	uint32_t *stack;    /* DFS (node, depth) pairs */
	uint32_t stack_cap;
	uint16_t *lv_off, *lv_len;
	uint32_t *lv_id;
	uint32_t *fl_id;
	uint8_t *codes;
	size_t codes_cap;
	struct mqtt_alloc acct; /* heap ops with accounting, for the framers */
};

/* heap with accounting against cfg.heap_limit */
void *mqtt_heap_alloc(struct mqtt_broker *b, size_t n);
void mqtt_heap_free(struct mqtt_broker *b, void *p, size_t n);
void mqtt_msg_unref(struct mqtt_broker *b, struct mqtt_msg *m);

/* session.c: the session table, subscriptions and delivery records */
uint32_t mqtt_sess_find(const struct mqtt_broker *b, bool service, const uint8_t *id, size_t len);
uint32_t mqtt_sess_new(struct mqtt_broker *b, bool service, const uint8_t *id, size_t len);
void mqtt_sess_free(struct mqtt_broker *b, uint32_t s);
uint32_t mqtt_dlv_alloc(struct mqtt_broker *b);
void mqtt_dlv_release(struct mqtt_broker *b, uint32_t d);
/* Add or replace (same filter) a subscription; 0 or -E_NOMEM/-E_RANGE. rel: the filter
 * levels [from, n) of the last split are relative to devices/<id>/. */
int mqtt_sub_add(struct mqtt_broker *b, uint32_t s, const uint8_t *filter, int from, int n,
		 bool rel, uint8_t qos);
/* Remove the subscription with this filter if the session has it. */
void mqtt_sub_remove(struct mqtt_broker *b, uint32_t s, const uint8_t *filter, int from, int n,
		     bool rel);

#endif
