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
#include "mqtt/msg.h"
#include "mqtt/session.h"

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
 * lists). A node lives while it has subs, retained, children or rel_refs; below the
 * absolute root rel_refs counts the shared subscription groups of the node (share.c). */
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

/* A subscription's options byte (struct mqtt_sub.qos, mqtt_session.sub0_qos): its QoS and
 * MQTT 5.0's No Local and Retain As Published, at their SUBSCRIBE bits (3.1.1: QoS only). */
#define MQTT_SUB_QOS 0x03u
#define MQTT_SUB_NO_LOCAL 0x04u
#define MQTT_SUB_RAP 0x08u
#define MQTT_SUB_OPTS 0x0fu
/* Not SUBSCRIBE bits: the subscription has a Subscription Identifier (subid.c); it is a
 * member of a shared subscription's group (share.c). */
#define MQTT_SUB_HAS_ID 0x10u
#define MQTT_SUB_SHARED 0x20u
#define MQTT_SUB_ID_MAX 268435455u

/* A Subscription Identifier (subid.c): key names the subscription (a record's index, or
 * MQTT_SUBID_INLINE | a session's index for its inline one). */
struct mqtt_subid {
	uint32_t key, id;
	uint32_t next; /* hash chain, or free-list link */
};
#define MQTT_SUBID_INLINE 0x80000000u

/* A shared subscription's group (share.c): its whole filter "$share/<name>/<filter>", its
 * filter node, its members on this shard, and the other shards that hold members. 40 B. */
struct mqtt_group {
	uint8_t *text;    /* heap, text_len bytes; the ShareName is text[7 .. 7 + name_len) */
	uint64_t remote;  /* bit s: shard s (not this one) holds members (mqtt_broker_share_remote) */
	uint32_t node;    /* the filter's node below the absolute root */
	uint32_t next;    /* chain of its node's bucket, or free-list link */
	uint32_t members; /* member subscription records, linked by next_in_node */
	uint32_t turn;    /* messages given here so far: the next goes to member turn % n_members */
	uint16_t n_members;
	uint16_t name_len;
	uint16_t text_len;
};

/* During a route: b->mark[session] = 1 + the highest QoS granted by its matching
 * subscriptions (low two bits), MARK_RAP when one of them has Retain As Published. */
#define MQTT_MARK_QOS 0x03u
#define MQTT_MARK_RAP 0x04u

/* A matching subscription's options into session si's mark (No Local: not the route's
 * publisher, b->route_origin). */
static inline void mqtt_mark(struct mqtt_broker *b, uint32_t si, uint8_t opts);

struct mqtt_sub {
	uint32_t node;
	uint32_t session;
	uint32_t next_in_session; /* or free-list link */
	uint32_t next_in_node;
	uint8_t qos;              /* options: MQTT_SUB_* */
	uint8_t rel;
	uint16_t key; /* interest key of its filter (mqtt_interest_filter_key) */
};

enum mqtt_conn_state { MQTT_CONN_FREE = 0, MQTT_CONN_NEW, MQTT_CONN_UP };

/* An inbound Topic Alias of a 5.0 connection: the topic it stands for (heap). */
struct mqtt_alias {
	uint8_t *topic;
	uint16_t len;
};

/* An outbound Topic Alias (one the broker set on its PUBLISHes): the topic's bytes inline,
 * so choosing and replacing aliases never allocates; longer topics are sent in full. */
#define MQTT_ALIAS_OUT_TOPIC_MAX 62u
struct mqtt_alias_out {
	uint8_t len; /* 0: free */
	uint8_t topic[MQTT_ALIAS_OUT_TOPIC_MAX];
};

/* A 5.0 connection's Topic Alias tables (heap, made at the first alias either way, freed
 * with the connection; mqtt_aliases_get): cfg.topic_alias_max inbound entries, then
 * mqtt_conn5.alias_out_max outbound ones, after this header. */
struct mqtt_aliases {
	uint16_t out_hand; /* the outbound entry replaced next once all are taken */
	uint16_t out_used; /* outbound entries taken, in order */
	uint32_t pad;
};

/* What an MQTT 5.0 connection adds (heap, 24 bytes, from its CONNECT to its end; a 3.1.1
 * connection has none): its will, its Topic Alias tables, and what the client allowed. The
 * Will Delay Interval lives in the session (mqtt_session.will_delay_s). */
struct mqtt_conn5 {
	struct mqtt_msg *will;          /* as mqtt_conn.will of a 3.1.1 connection */
	struct mqtt_aliases *aliases;   /* NULL until the first Topic Alias either way */
	uint32_t max_packet;            /* the client's Maximum Packet Size; 0: no limit */
	uint16_t recv_max;              /* the client's Receive Maximum */
	uint16_t alias_out_max;         /* aliases the broker may set: the client's Topic Alias
					 * Maximum within cfg.topic_alias_max */
};

static inline struct mqtt_alias *mqtt_aliases_in(struct mqtt_aliases *a)
{
	return (struct mqtt_alias *)(void *)(a + 1);
}

static inline struct mqtt_alias_out *mqtt_aliases_out(struct mqtt_aliases *a, uint16_t n_in)
{
	return (struct mqtt_alias_out *)(void *)(mqtt_aliases_in(a) + n_in);
}

STATIC_ASSERT(sizeof(struct mqtt_conn5) <= 24, "a 5.0 connection costs at most 24 B more (issue 23: +32 B)");

/* 48 bytes (docs/ARCHITECTURE.md, Memory): what is needed only in one state shares storage (identity before
 * CONNECT, will after), the reassembly state is one pointer to a heap block that exists
 * only while a packet is split, and the rate-limit tokens live in the per-identity table. */
struct mqtt_conn {
	void *user;                /* linked: the transport's handle */
	union {
		uint8_t *identity;     /* NEW: heap, identity_len bytes, until CONNECT is done */
		struct mqtt_msg *will; /* UP, 3.1.1: heap, while a will is set (else NULL) */
		struct mqtt_conn5 *x5; /* UP, 5.0: heap, always */
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
	uint8_t v5;                /* its CONNECT was MQTT 5.0 (protocol level 5) */
};

STATIC_ASSERT(sizeof(struct mqtt_conn) <= 48, "MQTT connection must fit 48 bytes (docs/ARCHITECTURE.md)");

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

	/* per-identity rate buckets (rate.c; laid out by broker.c when limits are on) */
	struct mqtt_rate *rates;
	uint32_t *rate_bkt;
	uint32_t rate_cap, rate_mask, rate_hw, rate_hand; /* cap: table entries */
	struct mqtt_log_bucket logb[MQTT_LOG__COUNT];
	/* QoS 0 drops per identity and fair shares (fair.c; cfg.drop_ids entries, or none) */
	struct mqtt_fair *fair;
	uint32_t fair_cap;
	uint64_t fair_ms, fair_total; /* last halving; sum of the entries' recent bytes */

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

	/* durability (durable.c) */
	bool store_on;          /* store ops given and the key generator set (restore_begin) */
	uint64_t key_base, key_count;
	struct mqtt_held *held; /* ring of held_mask + 1 entries */
	uint32_t held_mask, held_head, held_n; /* held_head: sequence of the oldest entry */
	/* what the route in progress did, for the acknowledgement that follows it */
	uint32_t route_ticket;  /* carried by the fan-out (0: nobody waits) */
	uint32_t route_owed;    /* shards that will answer the ticket */
	uint32_t share_seq;     /* messages this shard routed from a local origin */
	uint32_t share_pick;    /* the routed message's mqtt_message.share_pick (share.c) */
	uint32_t route_events;  /* events recorded since the acknowledgement's tracking began */
	uint32_t route_origin;  /* the session publishing what is routed now (No Local), or MQTT_NIL */
	uint8_t disc_reason;    /* the 5.0 DISCONNECT reason the next conn_end sends (0: none) */
	const char *disc_why;   /* its Reason String (static), or NULL */
	uint8_t *rcodes;        /* per SUBSCRIBE filter: the QoS its retained messages go at, or
				 * 0x80: none (5.0 Retain Handling), codes_cap */
	struct mqtt_dwill *dwills; /* delayed wills (5.0), cfg.max_delayed_wills */
	uint32_t n_dwills;
	/* Per session (max_sessions): while a connection is attached, its Session Expiry
	 * Interval in seconds; once a kept session is left, the second of the broker's clock
	 * it ends at (mqtt_broker_tick). UINT32_MAX: never, either way. */
	uint32_t *sess_exp;
	/* Subscription Identifiers (subid.c): cfg.max_sub_ids entries, none when 0 */
	struct mqtt_subid *sids;
	uint32_t *sid_bkt;
	uint32_t sid_mask, sid_free, n_sids;
	uint32_t *sid_out;      /* scratch: one PUBLISH's identifiers (max_subs_per_session + 1) */
	/* shared subscriptions (share.c): cfg.max_shared_groups groups, none when 0 */
	struct mqtt_group *groups;
	uint32_t *grp_bkt;
	uint32_t grp_mask, grp_free, n_groups;
	bool route_lost;        /* one of them could not be carried */
	/* telemetry queries (tq.c) */
	struct mqtt_tq *tq;     /* cfg.max_queries slots */
	uint8_t *tq_json;       /* a row's JSON (cfg.max_packet bytes) */
	/* restore */
	uint32_t restore_sess;  /* the session restored last, or MQTT_NIL */
	struct mqtt_restore_slot *restore_map; /* mkey -> message cache, restore_mask + 1 */
	uint32_t restore_mask;
};

/* A will waiting for its Will Delay Interval (5.0): published at due_s unless its session
 * comes back or ends first. */
struct mqtt_dwill {
	struct mqtt_msg *msg; /* one reference */
	uint32_t sess;
	uint32_t due_s;       /* the broker's clock, seconds */
};
/* Session si is freed: its delayed will (if any) is dropped (session.c calls it). */
void mqtt_will_session_gone(struct mqtt_broker *b, uint32_t si);

/* An acknowledgement waiting for its commit (durable.c). */
struct mqtt_held {
	uint8_t *pkt;     /* SUBACK: heap copy of the packet (pkt_len bytes), else NULL */
	uint8_t *subs;    /* SUBACK: heap copy of the SUBSCRIBE's filter list then one code per
			   * filter (subs_len bytes, n_subs filters): its retained messages go
			   * out after the SUBACK; NULL when none are due */
	uint16_t subs_len, n_subs;
	uint32_t conn;    /* connection index, MQTT_NIL once the connection ended */
	uint32_t sess;    /* the connection's session when held (its n_held counts us) */
	uint16_t owed;    /* parties (storage, other shards) still to answer */
	uint16_t pid;
	uint16_t pkt_len;
	uint8_t type;     /* enum mqtt_type of the acknowledgement */
	uint8_t failed;   /* some party could not store its part */
};

/* A telemetry query in progress: its reader's connection (MQTT_NIL: free, or the reader
 * left and storage has not ended it yet: cancelled) and its reply topic's last level. */
struct mqtt_tq {
	uint32_t conn;
	bool busy, cancelled;
	uint8_t req_len;
	char req[MQTT_TQUERY_REQ_MAX + 1];
	uint64_t sent, skipped;
};

struct mqtt_restore_slot {
	uint64_t mkey;
	struct mqtt_msg *msg; /* one reference held by the map */
};

static inline void mqtt_mark(struct mqtt_broker *b, uint32_t si, uint8_t opts)
{
	if ((opts & MQTT_SUB_NO_LOCAL) && si == b->route_origin)
		return; /* MQTT 5.0 3.8.3.1: not to the publisher's own session */
	uint8_t m = b->mark[si];
	if (m == 0)
		b->touched[b->n_touched++] = si;
	uint8_t q = (uint8_t)((opts & MQTT_SUB_QOS) + 1u);
	b->mark[si] = (uint8_t)(MAX(m & MQTT_MARK_QOS, q) | (m & MQTT_MARK_RAP) |
				((opts & MQTT_SUB_RAP) ? MQTT_MARK_RAP : 0u));
}

/* A kept session's Session Expiry Interval within cfg.max_session_expiry_s (0: no limit);
 * UINT32_MAX never ends. */
static inline uint32_t mqtt_expiry_capped(const struct mqtt_broker *b, uint32_t want)
{
	uint32_t cap = b->cfg.max_session_expiry_s;
	return cap && want > cap ? cap : want;
}

/* The broker second (b->now_ms / 1000) that is at least interval_s whole seconds from now:
 * the current second rounded up, so what waits for it never ends early. */
static inline uint64_t mqtt_second_after(const struct mqtt_broker *b, uint32_t interval_s)
{
	return (b->now_ms + 999u) / 1000u + interval_s;
}

/* The broker second a session left now with this interval ends at (UINT32_MAX: never). */
static inline uint32_t mqtt_expiry_deadline(const struct mqtt_broker *b, uint32_t interval_s)
{
	if (interval_s == UINT32_MAX)
		return UINT32_MAX;
	uint64_t at = mqtt_second_after(b, interval_s);
	return at >= UINT32_MAX ? UINT32_MAX - 1u : (uint32_t)at;
}

/* durable.c: events, held acknowledgements, restore */
static inline bool mqtt_persistent(const struct mqtt_session *s)
{
	return s->skey != 0;
}
uint64_t mqtt_key_new(struct mqtt_broker *b);
/* Record one event; counts it for the acknowledgement being tracked. */
void mqtt_rec(struct mqtt_broker *b, const struct mqtt_pev *ev);
void mqtt_rec_sess(struct mqtt_broker *b, uint8_t kind, const struct mqtt_session *s);
void mqtt_rec_dlv(struct mqtt_broker *b, uint8_t kind, const struct mqtt_session *s,
		  const struct mqtt_dlv *d);
/* Start tracking the events and fan-out answers an acknowledgement will wait for; the
 * ticket to give the fan-out (0 when acknowledgements need no storage). */
uint32_t mqtt_ack_track(struct mqtt_broker *b, bool needs_store);
/* The ticket the acknowledgement being tracked takes if it must be held (other shards
 * will answer it), 0 when there is no ring to hold it in. */
uint32_t mqtt_ack_hold_ticket(struct mqtt_broker *b);
/* Is the acknowledgement of sequence seq (held_head + held_n before its mqtt_ack) still
 * held? Then keep the SUBSCRIBE's filters and codes with it (0, or -E_NOMEM). */
bool mqtt_held_pending(const struct mqtt_broker *b, uint32_t seq);
int mqtt_held_attach_subs(struct mqtt_broker *b, uint32_t seq, const struct mqtt_filters *f,
			  const uint8_t *codes);
/* The retained messages matching a SUBSCRIBE's granted filters, to session si (broker.c);
 * called right after its SUBACK went out. */
void mqtt_subscribe_retained(struct mqtt_broker *b, uint32_t si, const struct mqtt_filters *f,
			     const uint8_t *codes);
/* Send an acknowledgement (type + pid, or the packet pkt of pkt_len bytes) once what was
 * tracked since mqtt_ack_track is durable, after every acknowledgement held before it.
 * Returns 0, or -E_CLOSED when the connection was ended (a refusal sent at once). */
int mqtt_ack(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t type, uint16_t pid,
	     const uint8_t *pkt, size_t pkt_len);
/* Room to hold one more acknowledgement and about `bytes` of its events? */
bool mqtt_ack_room(struct mqtt_broker *b, size_t bytes);
/* A connection ends: its held acknowledgements will not be sent. */
void mqtt_held_forget(struct mqtt_broker *b, uint32_t conn, uint32_t sess);
void mqtt_held_fini(struct mqtt_broker *b);

/* tq.c: telemetry queries. Is this PUBLISH a query (handled: true)? A reader's connection
 * ended: its query is cancelled. */
bool mqtt_tq_publish(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *topic, size_t tlen,
		     const uint8_t *payload, size_t plen);
void mqtt_tq_conn_end(struct mqtt_broker *b, uint32_t conn);

/* out.c: the Topic Alias tables of 5.0 connection c, made at the first use (NULL: no
 * memory); given back with mqtt_aliases_free. */
struct mqtt_aliases *mqtt_aliases_get(struct mqtt_broker *b, struct mqtt_conn *c);
void mqtt_aliases_free(struct mqtt_broker *b, struct mqtt_conn *c);

/* out.c: packets to a connection through ops.send, encoded in b->out. Each returns 0, or
 * the transport's error (-E_AGAIN: full, counted in st.send_again) or -E_OVERFLOW (does
 * not encode in max_packet). Pointers are borrowed for the call. */
int mqtt_send_encoded(struct mqtt_broker *b, struct mqtt_conn *c, const struct wcur *w);
int mqtt_send_bytes(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *p, size_t n);
int mqtt_send_ack(struct mqtt_broker *b, struct mqtt_conn *c, uint8_t type, uint16_t pid);
/* A PUBLISH; counted in st.msgs_out once the transport took it. */
int mqtt_send_publish(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *topic,
		      uint16_t tlen, const uint8_t *payload, size_t plen, uint8_t qos, bool dup,
		      bool retain, uint16_t pid);
/* A message as a PUBLISH in the connection's version (m borrowed; its qos and retain unused:
 * the delivery's are given). 5.0: its properties without the publisher's Topic Alias and
 * Subscription Identifiers, the Message Expiry Interval left, the subscriber's n_sub_ids
 * identifiers (borrowed). -E_RANGE: larger than the 5.0 client's
 * Maximum Packet Size or than max_packet (to be discarded as if delivered). */
int mqtt_send_message(struct mqtt_broker *b, struct mqtt_conn *c, const struct mqtt_message *m, uint8_t qos,
		      bool dup, bool retain, uint16_t pid, const uint32_t *sub_ids, uint32_t n_sub_ids);
/* One QoS 0 PUBLISH in the connection's version (console and telemetry query replies);
 * -E_OVERFLOW also for tlen > 65535 or above a 5.0 client's Maximum Packet Size. */
int mqtt_send_publish0(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *topic, size_t tlen,
		       const uint8_t *payload, size_t plen);

/* broker.c, for durable.c: end a connection (a refusal is logged first). */
void mqtt_conn_fail(struct mqtt_broker *b, struct mqtt_conn *c, const char *why);
/* Subscribe session si to a validated filter as SUBSCRIBE does (relative to the device's
 * own prefix when it is under it), with options qos (MQTT_SUB_*). 0 (new), 1 (it replaced
 * one), -E_INVAL (too many levels), -E_RANGE (the session's limit), -E_AGAIN (shard links)
 * or -E_NOMEM (pools). */
int mqtt_sub_apply(struct mqtt_broker *b, uint32_t si, const uint8_t *f, size_t fl, uint8_t qos, uint32_t sub_id);
/* Store or clear the retained message of a topic from outside a route (restore). */
int mqtt_retain_set(struct mqtt_broker *b, const struct mqtt_message *m);

/* subid.c: the Subscription Identifier of the subscription named key (0: none). set with
 * id 0 clears; -E_NOMEM when the table is full (room: one more fits). */
bool mqtt_subid_room(const struct mqtt_broker *b);
int mqtt_subid_set(struct mqtt_broker *b, uint32_t key, uint32_t id);
void mqtt_subid_clear(struct mqtt_broker *b, uint32_t key);
uint32_t mqtt_subid_get(const struct mqtt_broker *b, uint32_t key);
int mqtt_subid_check(const struct mqtt_broker *b);

/* share.c: shared subscriptions. offered: this broker has them (cfg.max_shared_groups, and
 * it is the only shard or the shards can agree: ops.share). add: session si joins "$share/<name>/<filter>" f (validated) with
 * options opts and identifier sub_id: 0 (joined), 1 (options replaced), or -E_INVAL (not
 * offered, not shared, too deep), -E_RANGE (the session's or a pool's limit), -E_NOMEM,
 * -E_AGAIN (the other shards could not be told).
 * remove: si leaves it (false: it was not a member). unlink: member record r leaves its
 * group (session.c frees r). mark: routing matched node: of each of its groups whose pick
 * (b->share_pick) is this shard, one member is marked (b->mark). remote: see
 * mqtt_broker_share_remote. */
bool mqtt_share_offered(const struct mqtt_broker *b);
int mqtt_share_add(struct mqtt_broker *b, uint32_t si, const uint8_t *f, size_t fl, uint8_t opts, uint32_t sub_id);
bool mqtt_share_remove(struct mqtt_broker *b, uint32_t si, const uint8_t *f, size_t fl);
void mqtt_share_unlink(struct mqtt_broker *b, uint32_t r);
void mqtt_share_mark(struct mqtt_broker *b, uint32_t node);
int mqtt_share_remote(struct mqtt_broker *b, uint32_t shard, const uint8_t *f, size_t fl, bool add);
void mqtt_share_fini(struct mqtt_broker *b); /* frees every group (after every session) */
int mqtt_share_check(const struct mqtt_broker *b);

/* session.c: the session table, subscriptions and delivery records */
uint32_t mqtt_sess_find(const struct mqtt_broker *b, bool service, const uint8_t *id, size_t len);
uint32_t mqtt_sess_new(struct mqtt_broker *b, bool service, const uint8_t *id, size_t len);
void mqtt_sess_free(struct mqtt_broker *b, uint32_t s);
uint32_t mqtt_dlv_alloc(struct mqtt_broker *b);
void mqtt_dlv_release(struct mqtt_broker *b, uint32_t d);
/* Add or replace (same filter) a subscription with options qos (MQTT_SUB_OPTS) and
 * Subscription Identifier sub_id (0: none): 0 (added), 1 (replaced), or
 * -E_NOMEM/-E_RANGE/-E_AGAIN. rel: the filter levels [from, n) of the last split are
 * relative to devices/<id>/. */
int mqtt_sub_add(struct mqtt_broker *b, uint32_t s, const uint8_t *filter, int from, int n,
		 bool rel, uint8_t qos, uint32_t sub_id);
/* Subscription record r gets options qos and identifier sub_id (0: none; a new one needs
 * mqtt_subid_room): the options byte to store (MQTT_SUB_HAS_ID when it has one). */
uint8_t mqtt_sub_id_apply(struct mqtt_broker *b, uint32_t key, uint8_t qos, uint32_t sub_id);
/* Session si's subscription record r is removed (unlinked from the session, freed). */
void mqtt_sub_drop(struct mqtt_broker *b, uint32_t si, uint32_t r);
/* The Subscription Identifiers of session si's subscriptions that match topic (5.0
 * PUBLISH), in b->sid_out; how many. */
uint32_t mqtt_sub_ids_matching(struct mqtt_broker *b, uint32_t si, const uint8_t *topic, size_t tlen);
/* Remove the subscription with this filter if the session has it (true). */
bool mqtt_sub_remove(struct mqtt_broker *b, uint32_t s, const uint8_t *filter, int from, int n,
		     bool rel);

#endif
