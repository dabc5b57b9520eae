/* SPDX-License-Identifier: MIT
 *
 * MQTT 3.1.1 broker core (layer mqtt/): sessions, QoS 0/1/2, topic tree, retained
 * messages, wills, keepalive, ACL and rate limits for one core's shard. It takes bytes and
 * an authenticated identity from the layer below and hands bytes back through `send`;
 * it knows nothing of TCP or TLS and never allocates except through the caller's pools
 * (carved from one region sized by mqtt_broker_mem_size) and the `heap` ops (variable-size
 * messages, identities, level strings), with an accounted limit. Core-local: one broker
 * per core, no locks, not interrupt-safe.
 */
#ifndef MQTT_BROKER_H
#define MQTT_BROKER_H

#include "lib/compiler.h"
#include "lib/log_fields.h"
#include "mqtt/tquery.h"
#include "mqtt/codec.h"

struct mqtt_broker;
struct mqtt_conn;
struct mqtt_fleet;

enum mqtt_id_kind { MQTT_ID_DEVICE = 0, MQTT_ID_SERVICE = 1 };

/* Why the broker refused or ended something; each reason has its own log rate limit. */
enum mqtt_log_reason {
	MQTT_LOG_MALFORMED = 0, /* a packet the decoder or framer rejected */
	MQTT_LOG_TOO_BIG,       /* packet above cfg.max_packet */
	MQTT_LOG_PROTOCOL,      /* valid packet at the wrong time, or a per-session limit hit */
	MQTT_LOG_IDENTITY,      /* client identifier does not match the certificate identity */
	MQTT_LOG_ACL,           /* publish, subscribe or will topic the ACL denies */
	MQTT_LOG_RATE,          /* over the per-identity rate limit */
	MQTT_LOG_RESOURCE,      /* pool, heap or rate table exhausted */
	MQTT_LOG_TIMEOUT,       /* CONNECT timeout or keepalive expiry */
	MQTT_LOG__COUNT
};

/* ACL for service identities: topic patterns (MQTT filter syntax). A service may publish
 * to topics matching a `pub` pattern and subscribe to filters covered by a `sub` pattern.
 * identity NULL applies to every service without a more specific rule. All linked. */
struct mqtt_acl_service {
	const char *identity;
	const char *const *pub;
	const char *const *sub;
	uint16_t n_pub, n_sub;
};

#define MQTT_CONTROL_REPLY_MAX 512u /* bytes of a console reply */

struct mqtt_broker_config {
	uint32_t max_conns, max_sessions;
	uint32_t max_nodes;      /* topic-tree nodes (absolute and identity-relative) */
	uint32_t max_subs;       /* subscription records beyond each session's inline one */
	uint32_t max_deliveries; /* queued/in-flight delivery records, all sessions */
	uint32_t max_retained;
	uint32_t max_packet;     /* bytes, fixed header included */
	size_t heap_limit;       /* bytes the broker may hold through heap ops */
	uint16_t max_topic_levels;
	uint16_t max_inflight;   /* outbound QoS 1/2 window per session */
	uint16_t max_queue;      /* outbound records (queued + in flight) per session */
	uint16_t max_qos2_rx;    /* inbound QoS 2 awaiting PUBREL per session (a 5.0 client's Receive
				  * Maximum) */
	uint16_t topic_alias_max;   /* Topic Aliases a 5.0 client may set (0: none) */
	uint32_t max_delayed_wills; /* 5.0 wills waiting for their Will Delay Interval */
	/* The longest a kept session outlives its connection, in seconds (0: no limit): a 5.0
	 * client's Session Expiry Interval is lowered to it (the CONNACK says so), a 3.1.1
	 * clean-session-0 session (which asks for no end) ends after it. */
	uint32_t max_session_expiry_s;
	/* Subscriptions with an MQTT 5.0 Subscription Identifier (12 B each); 0: identifiers
	 * are not offered (the CONNACK says so, one in a SUBSCRIBE ends the connection). */
	uint32_t max_sub_ids;
	/* MQTT 5.0 shared subscription groups ($share/<name>/<filter>; 40 B each), those with
	 * members on any shard; 0: not offered. With several shards offered only when they can
	 * agree on a group's members (ops.share). */
	uint32_t max_shared_groups;
	uint8_t max_subs_per_session;
	bool queue_drop_oldest;  /* full queue: drop the oldest queued (else refuse newest) */
	uint16_t max_violations; /* ACL violations before close; 0 = never close */
	uint32_t connect_timeout_ms;
	uint32_t rate_msgs_per_s, rate_burst_msgs;   /* devices; 0 = unlimited */
	uint32_t rate_bytes_per_s, rate_burst_bytes; /* devices; 0 = unlimited */
	/* The same for service identities (operator consoles and the like, which publish to
	 * and query many devices), in buckets of their own; 0 = unlimited. */
	uint32_t service_rate_msgs_per_s, service_rate_burst_msgs;
	uint32_t service_rate_bytes_per_s, service_rate_burst_bytes;
	bool rate_disconnect;    /* over the limit: disconnect (else drop and count) */
	/* A device's client id other than its certificate identity: refused with CONNACK 5
	 * (false, "require"), or replaced by the identity and the connection accepted (true,
	 * "override"). Services always need <identity> or <identity>/<suffix>. */
	bool client_id_override;
	/* Buckets are per authenticated identity, kept across connections in a table of
	 * max_conns + rate_idle_ids entries (32 B each): one per connection slot, plus room
	 * for identities that left. A new identity recycles only a bucket that is full and
	 * unused; if none is found the CONNECT is refused with 0x03 until one refills. */
	uint32_t rate_idle_ids;
	/* QoS 0 drops per publisher identity and the fair-share rule (ADR-075): a table of
	 * drop_ids entries (64 B each) naming the identities that published or were dropped
	 * most recently. 0: no table (drops are counted per reason only, no fair-share rule). */
	uint32_t drop_ids;
	/* One line (NUL-terminated, borrowed) per refusal: reason and identity. May be NULL.
	 * At most log_burst lines per reason, refilled at log_per_min per minute; dropped
	 * lines are counted and reported on the next line written for that reason. Called
	 * from inside broker calls: must not call the broker. log_burst 0 = no limit. */
	void (*log)(void *ctx, const char *line, const struct log_fields *f);
	void *log_ctx;
	uint32_t log_burst, log_per_min;
	const struct mqtt_acl_service *services; /* linked */
	uint16_t n_services;
	uint8_t hash_key[16];    /* siphash key for tables keyed by peer-chosen strings */
	uint32_t max_held;       /* with store ops: acknowledgements waiting for their commit */
	/* Telemetry (storage.telemetry_topics): an accepted PUBLISH whose topic matches one of
	 * these valid filters is also recorded for the telemetry log (MQTT_PEV_TLOG), when
	 * storage is on; its acknowledgement then waits for the log like any promise. Linked. */
	const char *const *telemetry_filters;
	uint16_t n_telemetry_filters;
	/* Telemetry queries (mqtt/tquery.h): service identities (exact names) that may query the
	 * log; at most max_queries at once on this shard, each at most query_limit records. */
	const char *const *telemetry_readers;
	uint16_t n_telemetry_readers;
	uint16_t max_queries;
	uint32_t query_limit;
	/* $SYS/...: the broker's own figures (mqtt_broker_publish_sys). Only these service
	 * identities ("name" and its connections "name/suffix") may subscribe there, whatever
	 * the ACL's rules; nobody may publish there. Linked. */
	const char *const *sys_readers;
	uint16_t n_sys_readers;
	/* The console (kernel/node): a PUBLISH to "$CONTROL/urmqtt/<command>" from one of these
	 * service identities ("name", "name/suffix") is never routed: control() gets the
	 * command and the payload (borrowed), writes a reply (at most cap bytes) and returns
	 * its length; the broker sends it to that connection as a QoS 0 PUBLISH on
	 * "$CONTROL/urmqtt/reply/<command>" (which the console identities may also subscribe
	 * to). Anyone else's PUBLISH or SUBSCRIBE under $CONTROL/ is refused by the ACL. May
	 * call mqtt_broker_kick; must not end the calling connection. NULL: no console. */
	size_t (*control)(void *ctx, const uint8_t *id, size_t id_len, const uint8_t *cmd, size_t cmd_len,
			  const uint8_t *args, size_t args_len, char *reply, size_t cap);
	void *control_ctx;
	const char *const *console_ids;
	uint16_t n_console_ids;
	/* A fleet behind one name (mqtt/fleet.h, ADR-072): an MQTT 5.0 device whose home is
	 * another appliance gets CONNACK 0x9C (Use another server) with the home's "host:port"
	 * as Server Reference, and its connection ends; services and 3.1.1 devices are never
	 * redirected. Linked, read-only (one ring may serve every core); NULL: no fleet. */
	const struct mqtt_fleet *fleet;
};

/* ---- durability (storage: docs/DURABILITY.md) --------------------------------------
 * With store ops, the broker records every change of persistent state as an event, in
 * order, and holds each acknowledgement that promises durability (PUBACK, PUBREC and
 * PUBCOMP to a publisher, SUBACK and UNSUBACK to a persistent session) until the events it
 * depends on are committed: on this shard (a barrier after its own events) and on every
 * other shard the message was fanned out to (each answers once for the ticket the
 * fan-out carried). Completions arrive through mqtt_broker_durable(); acknowledgements
 * leave in the order their packets arrived (one FIFO per shard), and one whose events
 * could not be stored is never sent: the connection is closed instead. What a persistent
 * session is: a session of clean session 0; clean sessions and QoS 0 never wait. */
/* A message as it travels between shards, to storage and back at restore: borrowed views.
 * The MQTT 5.0 part is empty for a 3.1.1 message: props is its PUBLISH's property block
 * as received (Property Length included; a 3.1.1 subscriber gets none), from which each
 * 5.0 delivery drops Topic Alias and Subscription Identifiers and writes the Message Expiry
 * Interval anew; expiry_s is what is left of that interval when handed over (0: it never
 * expires). */
struct mqtt_message {
	const uint8_t *topic, *payload, *props;
	size_t topic_len, payload_len, props_len;
	uint32_t expiry_s;
	/* Routed between shards: the value every shard holding members of a shared
	 * subscription's group picks the same shard by (the origin's count of routed messages;
	 * set by the origin, 0 elsewhere). */
	uint32_t share_pick;
	uint8_t qos;
	bool retain;
};
#define MQTT_PROPS_MAX 65535u /* a message's properties: at most this many bytes */

enum mqtt_pev_kind {
	MQTT_PEV_SESS_PUT = 1, /* skey, id_kind, id: a persistent session exists */
	MQTT_PEV_SESS_DEL,     /* skey: it and everything of it are gone */
	MQTT_PEV_SUB_PUT,      /* skey, topic = filter, qos: subscribe (or change QoS) */
	MQTT_PEV_SUB_DEL,      /* skey, topic = filter */
	MQTT_PEV_MSG_PUT,      /* mkey, topic, payload, qos, props, expiry_s: a message some
				* delivery needs */
	MQTT_PEV_DLV_PUT,      /* skey, mkey, seq, qos, retain: queued for the session */
	MQTT_PEV_DLV_SENT,     /* skey, mkey, pid: sent, waiting for PUBACK / PUBREC */
	MQTT_PEV_DLV_REC,      /* skey, mkey: PUBREC received, PUBREL sent (message done) */
	MQTT_PEV_DLV_DEL,      /* skey, mkey: acknowledged (PUBACK) or dropped from the queue */
	MQTT_PEV_DLV_DONE,     /* skey, pid: PUBCOMP received for a released delivery */
	MQTT_PEV_RX2_PUT,      /* skey, pid: inbound QoS 2 received, PUBREL awaited */
	MQTT_PEV_RX2_DEL,      /* skey, pid: PUBREL received */
	MQTT_PEV_RET_PUT,      /* topic, payload, qos, props, expiry_s: the retained message
				* of a topic */
	MQTT_PEV_RET_DEL,      /* topic: no retained message any more */
	MQTT_PEV_SEEN,         /* id_kind, id: an identity connected (device registry) */
	/* (16 is storage's own REVOKED: the kinds stay storage's numbers) */
	MQTT_PEV_TLOG = 17,    /* id_kind, id, topic, qos, payload, seq = monotonic ns: a
				* telemetry PUBLISH accepted here (storage.telemetry_topics) */
	MQTT_PEV__END
};

/* One event; pointers borrowed for the record call only. Keys: skey names a persistent
 * session, mkey a message, seq orders a session's deliveries; all come from the key
 * generator of mqtt_broker_restore_begin (never 0). */
struct mqtt_pev {
	uint8_t kind;    /* enum mqtt_pev_kind */
	uint8_t id_kind; /* enum mqtt_id_kind */
	uint8_t qos;
	uint8_t retain;
	uint16_t pid;
	uint64_t skey, mkey, seq;
	const uint8_t *id;
	size_t id_len;
	const uint8_t *topic; /* a topic, or a filter for SUB_* */
	size_t topic_len;
	const uint8_t *payload;
	size_t payload_len;
	const uint8_t *props; /* MSG_PUT, RET_PUT: struct mqtt_message's */
	size_t props_len;
	uint32_t expiry_s;    /* MSG_PUT, RET_PUT: Message Expiry Interval left, 0: never;
			       * SESS_PUT: the Session Expiry Interval, UINT32_MAX: never */
	uint32_t sub_id;      /* SUB_PUT: its Subscription Identifier (5.0), 0: none */
};

struct mqtt_store_ops {
	/* Carry one event to storage, after every earlier one. 0, or -E_NOMEM when it could
	 * not be carried: the acknowledgement that depends on it (if any) fails. */
	int (*record)(void *ctx, const struct mqtt_pev *ev);
	/* Everything recorded so far must be durable before `ticket` completes
	 * (mqtt_broker_durable(ticket) follows). 0 or -E_NOMEM (the ticket fails). */
	int (*barrier)(void *ctx, uint32_t ticket);
	/* Is there room for about `bytes` of events? Asked before a PUBLISH whose
	 * acknowledgement will wait is accepted. */
	bool (*room)(void *ctx, size_t bytes);
	/* Telemetry queries (may be NULL: none). query: start query slot `slot` (q borrowed);
	 * 0, or an error (the reader is told). more: slot may send its next rows. cancel: the
	 * reader left; the slot's rows and end are ignored from now on. */
	int (*query)(void *ctx, uint32_t slot, const struct mqtt_tquery *q);
	void (*query_more)(void *ctx, uint32_t slot);
	void (*query_cancel)(void *ctx, uint32_t slot);
	void *ctx; /* linked */
};

struct mqtt_broker_ops {
	/* Queue `len` bytes (borrowed: copy or send before returning) on a connection.
	 * 0, or -E_AGAIN when the transport cannot take them now. Must not call back. */
	int (*send)(void *ctx, void *conn_user, const uint8_t *buf, size_t len);
	/* The broker ended this connection (protocol error, DISCONNECT, takeover, keepalive):
	 * the transport closes it and forgets the handle. Must not call back. */
	void (*close)(void *ctx, void *conn_user);
	struct mqtt_alloc heap;
	/* Cross-shard routing (both NULL: this broker is the only shard). `fanout_room` says
	 * whether a message of `bytes` (topic + payload + properties) can be carried to the other shards
	 * now; it is asked before a PUBLISH is accepted, so an acknowledged message is never
	 * one that could not be carried. `fanout` carries a message routed here from a local
	 * origin (a PUBLISH, a will) to the other shards, which hand it to
	 * mqtt_broker_route_remote. Must not call back. */
	bool (*fanout_room)(void *ctx, const uint8_t *topic, size_t tlen, size_t bytes, bool retain);
	/* May be NULL. Are the links such a message takes congested (readers are being slowed,
	 * copies not yet refused)? Then a QoS 0 PUBLISH of a publisher over its fair share of
	 * recent routed bytes is dropped first (ADR-075). Must not call back. */
	bool (*fanout_busy)(void *ctx, const uint8_t *topic, size_t tlen, size_t bytes, bool retain);
	/* ticket != 0: the acknowledgement of this message waits for every other shard to
	 * answer it (after committing what it stored for the message). Returns how many
	 * shards will answer. */
	uint32_t (*fanout)(void *ctx, const struct mqtt_message *m, uint32_t ticket);
	/* Interest summaries (both NULL: every routed message goes to every shard). interest:
	 * a subscription with this key (mqtt_interest_filter_key) was added or removed here;
	 * 0, or negative when an add could not be said (the subscription is refused).
	 * interest_sync: after a SUBSCRIBE's adds, the shards that must confirm them before its
	 * SUBACK answer `ticket`; returns how many will (0: none needed), negative when they
	 * could not be asked (the connection is ended unacknowledged). */
	int (*interest)(void *ctx, uint16_t key, bool add);
	int (*interest_sync)(void *ctx, uint32_t ticket);
	/* Shared subscriptions across shards (NULL: offered only while this broker is the only
	 * shard; needs interest_sync, which holds the SUBACK until every shard heard). share:
	 * this shard got its first member of the group named by the whole filter
	 * "$share/<name>/<filter>" (add), or lost its last; 0, or negative when the other
	 * shards could not be told (an add is then refused). The other shards hand it to
	 * mqtt_broker_share_remote. share_self: this shard's number (< MQTT_SHARE_SHARDS). */
	int (*share)(void *ctx, const uint8_t *filter, size_t len, bool add);
	uint32_t share_self;
	void *ctx;
	/* Storage (all NULL: no persistence, acknowledgements are sent at once). */
	struct mqtt_store_ops store;
};

struct mqtt_broker_stats {
	uint64_t rej[MQTT_REJ__COUNT]; /* decode rejections per site */
	uint64_t msgs_in, msgs_out, bytes_in;
	uint64_t msgs_in_qos[3], msgs_out_qos[3]; /* the same by QoS (PUBLISH received / sent) */
	uint64_t acl_denied_pub, acl_denied_sub, acl_closes;
	uint64_t rate_dropped, rate_closes;
	uint64_t tlog_records, tlog_lost; /* telemetry records handed to storage / refused by its link */
	uint64_t queries, query_refused, query_rows, query_rows_skipped; /* telemetry queries */
	uint64_t queue_dropped_oldest, queue_refused, qos0_offline_dropped;
	uint64_t qos0_busy_dropped; /* QoS 0 copies a connected subscriber's transport refused
				     * (its output full, or its home core's credit spent) */
	uint64_t sub_full_dropped;  /* copies dropped for a connected subscriber (qos0_busy_dropped
				     * plus queue_dropped_oldest while connected): dp slows the
				     * heavy publishers while these grow (ADR-092) */
	uint64_t conns_writable;    /* times a transport that refused a send took again
				     * (mqtt_conn_writable): what ends that slowing early */
	uint64_t expired_dropped; /* deliveries and retained messages past their Message Expiry Interval */
	uint64_t too_big_dropped; /* deliveries above a 5.0 client's Maximum Packet Size (discarded) */
	uint64_t v5_connects, aliases_set, v5_rej; /* 5.0 CONNECTs seen; Topic Aliases set; 5.0 packets rejected */
	uint64_t aliases_out_set; /* Topic Aliases the broker set on its 5.0 PUBLISHes */
	uint64_t shared_delivered; /* messages a shared subscription's group gave to one member */
	uint64_t shared_elsewhere; /* ... that the group's pick left to a member on another shard */
	uint64_t share_refused;    /* another shard's member this one could not record (pools) */
	uint64_t share_unsaid;     /* a group's last member here left and the shards were not told */
	uint64_t wills_undelayed; /* 5.0 wills sent at once: every delayed-will slot was taken */
	uint64_t sessions_expired; /* kept sessions ended by their Session Expiry Interval */
	uint64_t qos2_dups, unknown_acks, send_again;
	uint64_t nomem, pool_exhausted, retained_refused;
	uint64_t connack_refused, proto_closes, keepalive_closes, connect_timeouts;
	uint64_t client_id_overridden; /* client_id_policy "override": another id replaced */
	uint64_t redirected; /* 5.0 devices sent to their home appliance (CONNACK 0x9C, fleet) */
	uint64_t takeovers, wills_published, kicked, console_commands;
	uint64_t fanout_out, fanout_in, fanout_refused, fanout_bad; /* cross-shard routing */
	uint64_t fanout_qos0_dropped; /* of fanout_refused: QoS 0 PUBLISHes dropped (links full) */
	uint64_t fair_qos0_dropped;   /* QoS 0 PUBLISHes of a publisher over its fair share
				       * dropped while the links were congested (ADR-075) */
	uint64_t fair_ids_recycled;   /* drop table: entries given to a new identity */
	uint64_t rate_ids_evicted, rate_ids_full; /* identity table: recycled / no room */
	uint64_t log_lines, log_suppressed;
	/* durability */
	uint64_t store_events, store_lost;        /* recorded / not carried (refused by the link) */
	uint64_t held, held_failed, held_dropped; /* acks held / refused (connection closed) /
						   * dropped with their connection */
	uint64_t held_full;                       /* PUBLISH refused: no room to hold its ack */
	uint64_t durable_done, durable_bad;       /* completions / for no waiting ticket */
	uint64_t restored_sessions, restored_subs, restored_dlvs, restored_retained;
	uint64_t restore_refused;                 /* restore records that did not fit or decode */
};

/* ---- interest keys (mqtt/interest.c) ----
 * Summaries of where subscriptions are, so a shard can skip a routed copy to another shard
 * that holds nothing the message could match. A filter's key (of a valid filter) is among
 * the keys of every topic it matches (a topic has one per depth 0..MQTT_INTEREST_DEPTH). */
#define MQTT_INTEREST_DEPTH 3u
uint16_t mqtt_interest_filter_key(const uint8_t *f, size_t len);
/* Fills keys; returns how many (1..MQTT_INTEREST_DEPTH + 1). */
uint32_t mqtt_interest_topic_keys(const uint8_t *t, size_t len, uint16_t keys[MQTT_INTEREST_DEPTH + 1]);

/* Bytes of the region mqtt_broker_init needs for this configuration (0 if invalid). */
size_t mqtt_broker_mem_size(const struct mqtt_broker_config *cfg);

/* Build a broker in `mem` (linked, len >= mqtt_broker_mem_size, 8-byte aligned).
 * cfg is copied; ops copied; services linked. 0, -E_INVAL or -E_NOMEM. */
MUST_CHECK int mqtt_broker_init(struct mqtt_broker **out /* out */, void *mem, size_t len,
				const struct mqtt_broker_config *cfg,
				const struct mqtt_broker_ops *ops);
/* Drop every connection (no close callbacks, no wills), session and retained message;
 * afterwards the heap holds nothing of the broker. */
void mqtt_broker_fini(struct mqtt_broker *b);

/* A new authenticated transport connection. identity borrowed (copied), user linked.
 * 0 with *out, or -E_NOMEM (pool or heap exhausted), -E_INVAL (empty identity). */
MUST_CHECK int mqtt_conn_open(struct mqtt_broker *b, const uint8_t *identity, size_t id_len,
			      enum mqtt_id_kind kind, void *user, uint64_t now_ms,
			      struct mqtt_conn **out /* out */);
/* Bytes received on a connection (borrowed). 0, or -E_CLOSED when the broker ended the
 * connection during the call (close was called; the handle is gone). */
MUST_CHECK int mqtt_conn_input(struct mqtt_broker *b, struct mqtt_conn *c, const uint8_t *data,
			       size_t len, uint64_t now_ms);
/* The transport can take more bytes: resume delivery of queued messages. */
void mqtt_conn_writable(struct mqtt_broker *b, struct mqtt_conn *c);
/* The transport lost the connection (no DISCONNECT seen): the will is published. The
 * handle is gone afterwards; close is not called. */
void mqtt_conn_lost(struct mqtt_broker *b, struct mqtt_conn *c, uint64_t now_ms);
/* Shared subscriptions across shards (ADR-070): shard `shard` got its first member of the
 * group named by the whole filter "$share/<name>/<filter>" (add) or lost its last one. 0;
 * -E_INVAL for a filter that is not a valid shared one or a shard number out of range;
 * -E_RANGE / -E_NOMEM when an add finds the group table or the tree full (counted in
 * share_refused: the member's SUBSCRIBE is then not acknowledged). */
#define MQTT_SHARE_SHARDS 64u
MUST_CHECK int mqtt_broker_share_remote(struct mqtt_broker *b, uint32_t shard, const uint8_t *filter,
					size_t len, bool add);
/* A message another shard routed (its origin's ACL and rate checks already passed): the
 * retained store and this shard's subscribers get it; it is not fanned out again.
 * m borrowed. *recorded: events went to storage (the origin's answer
 * waits for their commit). 0; -E_NOMEM when a copy owed to a persistent session could not
 * be kept (its queue full under refuse_newest, or storage could not take a record): the
 * origin must not acknowledge; -E_INVAL for a topic that is not a valid topic name or a
 * QoS above 2 (counted in fanout_bad). */
MUST_CHECK int mqtt_broker_route_remote(struct mqtt_broker *b, const struct mqtt_message *m,
					bool *recorded /* out: events were recorded */);

/* The broker's own message on topic (a "$SYS/..." name, borrowed, valid: the caller's
 * own), QoS 0 and retained: this shard's readers and retained store get it, then the other
 * shards (ops.fanout). 0, or -E_INVAL for a topic outside $SYS/ or not a topic name. */
MUST_CHECK int mqtt_broker_publish_sys(struct mqtt_broker *b, const uint8_t *topic, size_t tlen,
				       const uint8_t *payload, size_t plen);

/* End every connection of identity id (borrowed): the sessions homed on this shard named
 * id (a device) or id and id/<suffix> (a service's), wherever their transport is (a
 * connection forwarded from another core is ended there through ops.close). No will is
 * published. Returns how many were ended. */
uint32_t mqtt_broker_kick(struct mqtt_broker *b, const uint8_t *id, size_t len);

/* ---- telemetry queries (mqtt/tq.c) ----
 * Rows of query slot `slot` for its reader, in order: each sent as one QoS 0 PUBLISH on
 * "$telemetry/reply/<id>" (JSON, mqtt/tquery.h). Returns how many were taken: fewer than n
 * when the reader's connection cannot take more now (offer the rest again after
 * mqtt_conn_writable or a pass), n when the reader left (they are dropped). */
uint32_t mqtt_broker_query_rows(struct mqtt_broker *b, uint32_t slot, const struct mqtt_trow *rows, uint32_t n);
/* The query ended: matched rows in all, truncated by its limit, or failed (error: a
 * static reason, else NULL). Sends the end message; the slot is free again. false when the
 * reader's connection cannot take it now (call again later). */
bool mqtt_broker_query_end(struct mqtt_broker *b, uint32_t slot, uint64_t matched, bool truncated, const char *error);

/* ---- durability ---- */
/* Ticket t (of this broker's acknowledgements) completed on one of the parties it waited
 * for: storage after a barrier, or another shard. ok false: its events were not stored
 * (the acknowledgement is refused). Acknowledgements whose every party answered leave in
 * order. Unknown tickets are counted (durable_bad) and ignored. */
void mqtt_broker_durable(struct mqtt_broker *b, uint32_t ticket, bool ok);
/* Acknowledgements held now (for the transport's backpressure), and the capacity. */
uint32_t mqtt_broker_held(const struct mqtt_broker *b);

/* Restore at boot, before any connection: begin (sets the key generator: every key this
 * broker makes is key_base + a counter, so keys of different boots and shards never meet),
 * then sessions, each followed by its subscriptions, inbound QoS 2 identifiers and
 * deliveries (in queue order); retained messages at any point; then end. Records that do
 * not fit the pools or are malformed are refused (-E_NOMEM / -E_INVAL, counted: the
 * caller logs them). Pointers borrowed. */
MUST_CHECK int mqtt_broker_restore_begin(struct mqtt_broker *b, uint64_t key_base);
/* expiry_s: its Session Expiry Interval (0 or UINT32_MAX: never), counted again from the
 * restore (the time it was left is not stored: a session never ends earlier than asked). */
MUST_CHECK int mqtt_broker_restore_session(struct mqtt_broker *b, uint64_t skey, enum mqtt_id_kind kind,
					   const uint8_t *id, size_t id_len, uint32_t expiry_s);
/* For the session restored last (skey must name it); sub_id: its Subscription Identifier
 * (0: none). */
MUST_CHECK int mqtt_broker_restore_sub(struct mqtt_broker *b, uint64_t skey, const uint8_t *filter,
				       size_t len, uint8_t qos, uint32_t sub_id);
MUST_CHECK int mqtt_broker_restore_rx2(struct mqtt_broker *b, uint64_t skey, uint16_t pid);
/* state: enum mqtt_restore_dlv (QUEUED, SENT = waiting for PUBACK/PUBREC, RELEASED =
 * PUBREL sent); the message (mkey, msg: its qos is the message's own, retain unused) is
 * shared by every delivery of the same mkey; RELEASED deliveries need no message (msg
 * may be NULL). */
enum mqtt_restore_dlv { MQTT_RESTORE_QUEUED = 0, MQTT_RESTORE_SENT = 1, MQTT_RESTORE_RELEASED = 2 };
MUST_CHECK int mqtt_broker_restore_dlv(struct mqtt_broker *b, uint64_t skey, uint64_t mkey, uint64_t seq,
				       uint8_t qos, bool retain, enum mqtt_restore_dlv state, uint16_t pid,
				       const struct mqtt_message *msg);
MUST_CHECK int mqtt_broker_restore_retained(struct mqtt_broker *b, const struct mqtt_message *m);
/* Frees the restore tables. */
void mqtt_broker_restore_end(struct mqtt_broker *b);
/* Timers: keepalive (1.5 x), CONNECT timeout, delayed wills and session expiry. Call at
 * least every second. */
void mqtt_broker_tick(struct mqtt_broker *b, uint64_t now_ms);

const struct mqtt_broker_stats *mqtt_broker_stats(const struct mqtt_broker *b);

/* QoS 0 drops per publisher identity (cfg.drop_ids, ADR-075). Reasons: the shard links
 * were full (fanout_qos0_dropped), the publisher was over its fair share while they were
 * congested (fair_qos0_dropped), a subscriber's queue dropped its copy (offline QoS 0,
 * queue full: counted against a publisher on this core). */
enum mqtt_drop_reason { MQTT_DROP_LINKS, MQTT_DROP_FAIR, MQTT_DROP_QUEUE, MQTT_DROP__COUNT };
#define MQTT_DROPPER_ID_MAX 34u /* identity bytes kept per entry */
struct mqtt_dropper {
	enum mqtt_id_kind kind;
	bool truncated;                      /* the identity is longer than id shows */
	char id[MQTT_DROPPER_ID_MAX + 1];    /* NUL-terminated; bytes other than printable
					      * ASCII (and space, '=') shown as '?' */
	uint32_t dropped[MQTT_DROP__COUNT];
};
/* The identities with the most drops, most first: up to n written to out; returns how
 * many. Core-local, allocates nothing. */
size_t mqtt_broker_droppers(const struct mqtt_broker *b, struct mqtt_dropper *out /* out */, size_t n);
/* " <id>=<links>/<fair>/<queue>" for each of d[0..n) (services "svc:<id>", "~" after a
 * truncated identity) into out (cap bytes, always NUL-terminated when cap > 0), as the
 * report line and the console's stats print them; whole entries only. Returns the length. */
size_t mqtt_droppers_text(const struct mqtt_dropper *d, size_t n, char *out /* out */, size_t cap);
/* The statsd/$SYS name of one dropper's count for reason r: "droppers.<device|service>.
 * <id>.<links|fair|queue>", the identity as one level (bytes other than [A-Za-z0-9_-]
 * written '_', a truncated one ending in "_"). Returns the length, 0 when cap is too small. */
size_t mqtt_dropper_metric(const struct mqtt_dropper *d, enum mqtt_drop_reason r, char *out /* out */, size_t cap);
/* Is connection c's publisher over its fair share of the recent routed bytes (its
 * identity's recent bytes at least the mean of the identities that published recently; a
 * lone recent publisher is)? False before CONNECT and for an identity that has not
 * published recently; true for every connection without the table (cfg.drop_ids 0). dp stops reading such connections first when a shard
 * backlog is congested (dp_shard_routing_level). Core-local, a scan of the table. */
bool mqtt_conn_over_share(const struct mqtt_broker *b, const struct mqtt_conn *c);

/* Introspection for tests, fuzzing and the memory report. */
struct mqtt_broker_usage {
	uint32_t conns, sessions, nodes, subs, deliveries, levels, retained;
	uint32_t rate_ids; /* identity buckets in use (<= max_conns + rate_idle_ids) */
	size_t heap_bytes;
};
void mqtt_broker_usage(const struct mqtt_broker *b, struct mqtt_broker_usage *u /* out */);
/* Check every numbered invariant of broker.c; returns 0 or -E_CORRUPT. */
MUST_CHECK int mqtt_broker_check(const struct mqtt_broker *b);
/* Would the ACL let this identity receive a message on `topic`? (fuzz oracle) */
bool mqtt_acl_may_read(const struct mqtt_broker *b, enum mqtt_id_kind kind,
		       const uint8_t *identity, size_t id_len, const uint8_t *topic,
		       size_t topic_len);
size_t mqtt_sizeof_session(void);
size_t mqtt_sizeof_conn(void);

#endif
