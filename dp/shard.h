/* SPDX-License-Identifier: MIT
 *
 * Broker shards across cores (layer dp/, used by dp.c only): home cores, plain MQTT
 * forwarded between the core that holds a connection's TCP and TLS and the session's home
 * core, and the fan-out of routed messages to the other shards. One object per core,
 * inside that core's struct dp; the cores talk only through the mesh ops (the kernel's
 * xcore rings; an in-process mesh in the tests).
 *
 * The protocol (all multi-byte fields little-endian, written and read by this file only):
 *   connection core -> home core:  OPEN (identity), DATA (plaintext MQTT), LOST (the
 *                                   connection ended without the broker asking), CREDIT
 *                                   (bytes of OUT sealed and acknowledged by the peer)
 *   home core -> connection core:  OUT (plaintext MQTT to seal and send), CLOSE (the
 *                                   broker ended the connection: takeover, DISCONNECT...),
 *                                   DCREDIT (bytes of DATA the home core took and routed)
 *   any shard -> every other:       FANOUT_HEAD / FANOUT_MORE (a routed message: topic,
 *                                   payload, QoS, retain, ticket; cut into slot-sized parts)
 *   any shard -> every other:       INTEREST (an interest key of this shard's
 *                                   subscriptions appeared or went; a sync asking for a
 *                                   DONE once everything before it is applied; ready: the
 *                                   shard's keys are complete, its summary may be trusted)
 *   any shard -> every other:       SHARE (this shard got its first member of a shared
 *                                   subscription's group, or lost its last; ADR-070)
 *   any shard -> a routed message's origin: PRESS (on: a connected subscriber here
 *                                   dropped copies from it, slow the heavy publishers
 *                                   for press_ms; off: it takes again, read on)
 *   any shard -> a ticket's origin: DONE (answers: ticket, stored or not) for routed
 *                                   messages whose acknowledgement waits on the origin;
 *                                   storage answers instead when this shard recorded
 *                                   events for the message (after a barrier)
 * A connection is named by (connection core, TCP id, generation); the generation makes
 * messages about a connection that has since ended harmless to its id's next user.
 *
 * Flow control. Every message to a core goes through that core's bounded backlog when the
 * mesh has no credit, so order is kept per pair of cores. Data messages (DATA, OUT,
 * FANOUT) may fill backlog_bytes; control messages (OPEN, LOST, CLOSE, CREDIT) may use a
 * quarter more, so ending a connection can be said while data is stuck (a CLOSE or a
 * LOST that still finds no room is owed and sent by dp_shard_poll as soon as there is;
 * only a LOST beyond max_lost_owed is dropped, counted, and left to the home core's
 * keepalive). OUT is also limited
 * per forwarded connection by credit (out_window bytes in flight, returned by CREDIT once
 * the peer's TCP has acknowledged the ciphertext), so one slow reader holds at most
 * out_window of the home core's backlog. DATA is limited the same way by credit the home
 * core grants (data_window bytes per forwarded connection, returned by DCREDIT once the
 * broker took them, and withheld while the home core's own backlogs are congested: from
 * publishers over their fair share at a quarter, from all at three eighths), so a
 * home core that cannot route as fast as its forwarded publishers write slows them through
 * their TCP window instead of dropping what they sent. A connection core whose backlog to
 * a home core is half full advertises a zero TCP window to the connections that forward
 * there.
 *
 * Calling context: core-local, single-threaded; nothing here is shared except through the
 * mesh ops. Never allocates (caller memory), never parses MQTT (the home broker does).
 */
#ifndef DP_SHARD_H
#define DP_SHARD_H

#include "lib/compiler.h"
#include "mqtt/broker.h"

/* Message kinds on the mesh (the range 0x0200-0x02ff belongs to the shards). */
enum dp_shard_kind {
	DP_SHARD_OPEN = 0x0200,
	DP_SHARD_DATA = 0x0201,
	DP_SHARD_LOST = 0x0202,
	DP_SHARD_CREDIT = 0x0203,
	DP_SHARD_OUT = 0x0204,
	DP_SHARD_CLOSE = 0x0205,
	DP_SHARD_FANOUT_HEAD = 0x0206,
	DP_SHARD_FANOUT_MORE = 0x0207,
	DP_SHARD_DONE = 0x0208,
	DP_SHARD_DCREDIT = 0x0209,
	DP_SHARD_INTEREST = 0x020a,
	DP_SHARD_SHARE = 0x020b,
	DP_SHARD_PRESS = 0x020c,
};
#define DP_SHARD_KIND_FIRST 0x0200u
#define DP_SHARD_KIND_LAST 0x02ffu

/* The mesh below: send one message to core dst. 0, or -E_AGAIN when dst's ring has no
 * credit (nothing sent). Messages to one dst arrive in the order they were sent. */
struct dp_mesh_ops {
	int (*send)(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len);
	void *ctx; /* linked */
};

struct dp_shard_config {
	uint32_t n_cores;        /* 1: no shards (everything is local); <= 256 */
	uint32_t self;           /* this core's index, < n_cores */
	uint8_t home_key[16];    /* SipHash key of the home-core hash: the same on every core */
	uint32_t payload_max;    /* bytes one mesh message carries (>= 64) */
	uint32_t backlog_bytes;  /* per destination core, data part */
	uint32_t out_window;     /* OUT bytes in flight per forwarded connection */
	uint32_t data_window;    /* DATA bytes in flight per forwarded connection (<= 2^24) */
	uint32_t max_proxies;    /* connections of other cores whose session lives here */
	uint32_t max_conns;      /* this core's connection records (the reserve's size) */
	uint32_t max_packet;     /* largest routed message (topic + payload) to reassemble */
	uint32_t max_done;       /* answers owed per origin core (>= its held acknowledgements) */
	uint32_t interest_slots; /* interest summary per core (power of two <= 65536; 0: every
				  * routed message goes to every shard) */
	uint32_t max_lost_owed;  /* LOSTs kept for a later pass when even the control reserve
				  * of the backlog to their home is full (0: counted, dropped) */
	uint32_t press_ms;       /* a subscriber's dropped copies slow the publishers over their
				  * fair share (HEAVY) this long, on the core that dropped them
				  * and on the routed copies' origin (PRESS); 0: off */
	struct dp_mesh_ops mesh; /* copied; ctx linked */
};

/* What the shard calls on the connection side (dp.c): OUT bytes for a connection of this
 * core (borrowed), and CLOSE. Both ignore a (conn, gen) that no longer names a forwarded
 * connection. */
struct dp_shard_conn_ops {
	void (*out)(void *ctx, uint32_t conn, uint32_t gen, const uint8_t *p, size_t n);
	void (*close)(void *ctx, uint32_t conn, uint32_t gen);
	/* This shard recorded events for a message with a ticket of core origin: ask storage
	 * to answer origin once they are committed. 0, or an error (the shard then answers
	 * "not stored" itself). */
	int (*barrier)(void *ctx, uint32_t origin, uint32_t ticket);
	/* An answer for one of this core's tickets, from another shard. */
	void (*done)(void *ctx, uint32_t ticket, bool ok);
	/* The home core took `bytes` more of a forwarded connection's DATA: they may be sent. */
	void (*data_credit)(void *ctx, uint32_t conn, uint32_t gen, uint32_t bytes);
	void *ctx;
};

struct dp_shard_stats {
	uint64_t opens_out, opens_in, opens_refused;
	uint64_t data_msgs, data_bytes, out_msgs, out_bytes;
	uint64_t lost_out, lost_in, lost_owed, lost_dropped, close_out, close_in, credit_out, credit_in;
	uint64_t dcredit_out, dcredit_in, dcredit_withheld; /* DATA credit; times withheld */
	uint64_t fanout_out, fanout_in, fanout_refused, fanout_bad;
	uint64_t fanout_skipped;  /* copies not sent: the shard holds no matching subscription */
	uint64_t interest_out, interest_in, interest_lost; /* key changes said / heard / unsaid */
	uint64_t share_out, share_in, share_lost; /* shared subscription groups said / heard / unsaid */
	uint64_t backlogged, backlog_full, stale, bad;
	uint64_t done_out, done_in, done_dropped; /* answers to tickets */
	uint64_t press_out, press_in, press_lost; /* PRESS said / heard / not said (no room) */
	uint64_t pressed;        /* times a subscriber's drops started slowing this core's publishers */
	uint64_t press_remote_drops; /* copies routed here from other shards a subscriber dropped */
	uint32_t proxies, blocked;
	uint32_t queued; /* messages waiting in the backlogs now, every destination */
};

struct dp_shard;

/* Bytes of caller memory for cfg (0 if invalid). */
size_t dp_shard_mem_size(const struct dp_shard_config *cfg);
/* Build in mem (linked, 8-aligned, zeroed, >= dp_shard_mem_size). broker: this core's
 * shard (linked); conn: the connection side's ops (copied). 0 or -E_INVAL. */
MUST_CHECK int dp_shard_init(struct dp_shard **out /* out */, void *mem, size_t len,
			     const struct dp_shard_config *cfg, struct mqtt_broker *broker,
			     const struct dp_shard_conn_ops *conn);

/* The home core of an identity (the same answer on every core). */
uint32_t dp_shard_home(const struct dp_shard *sh, enum mqtt_id_kind kind, const uint8_t *id,
		       size_t len);
/* The same function for whoever holds the key and the core count (the storage core,
 * restoring each session onto its home core). */
uint32_t dp_shard_home_of(const uint8_t key[16], uint32_t n_cores, enum mqtt_id_kind kind, const uint8_t *id,
			  size_t len);
uint32_t dp_shard_self(const struct dp_shard *sh);

/* ---- the connection side: a connection of this core whose home is elsewhere ---- */
/* 0, or -E_AGAIN / -E_NOMEM when it cannot be said now (the caller refuses the
 * connection). */
MUST_CHECK int dp_shard_open(struct dp_shard *sh, uint32_t home, uint32_t conn, uint32_t gen,
			     enum mqtt_id_kind kind, const uint8_t *id, size_t len);
/* Plaintext received (borrowed). 0, or -E_NOMEM when the backlog to home is full (the
 * caller ends the connection: the bytes cannot be carried). */
MUST_CHECK int dp_shard_data(struct dp_shard *sh, uint32_t home, uint32_t conn, uint32_t gen,
			     const uint8_t *p, size_t n);
/* The connection ended without CLOSE from the home core: its will is due there. Control
 * class (may use the backlog's reserve); when even the reserve is full it is owed and
 * sent by a later dp_shard_poll (lost_owed). 0, or -E_AGAIN when max_lost_owed are owed
 * already (counted in lost_dropped; the home core then ends the session's connection at
 * its keepalive). */
MUST_CHECK int dp_shard_lost(struct dp_shard *sh, uint32_t home, uint32_t conn, uint32_t gen);
/* Return `bytes` of OUT credit. 0 or -E_AGAIN (keep owing; try again later). */
MUST_CHECK int dp_shard_credit(struct dp_shard *sh, uint32_t home, uint32_t conn, uint32_t gen,
			       uint32_t bytes);
/* The backlog to home is at least half full: stop taking bytes from the peer. */
bool dp_shard_congested(const struct dp_shard *sh, uint32_t home);
/* Some backlog holds at least a quarter of its data part (half of what routed messages may
 * take): publishers are slowed before a routed copy is refused. */
bool dp_shard_routing_congested(const struct dp_shard *sh);
/* How far the fullest backlog is (ADR-053, ADR-075, and the window rule beside
 * dp_shard_routing_level in shard.c):
 *   CLEAR  below a quarter of its data part: every connection is read;
 *   HEAVY  from a quarter: the caller stops reading the local publishers over their fair
 *          share of the recent routed bytes (mqtt_conn_over_share), and the home side
 *          withholds DATA credit from such proxies only; everyone else is still read;
 *   ALL    from three eighths (where the heavy publishers' QoS 0 copies start to be
 *          dropped): the caller stops reading every connection, DATA credit is withheld
 *          from every proxy. Copies are refused from half (dp_shard_fanout_room). */
enum dp_shard_route_level { DP_SHARD_ROUTE_CLEAR, DP_SHARD_ROUTE_HEAVY, DP_SHARD_ROUTE_ALL };
enum dp_shard_route_level dp_shard_routing_level(const struct dp_shard *sh);
/* Backpressure from subscribers (ADR-092): the level is at least HEAVY until press_ms
 * after the last copy a connected subscriber dropped (the broker's sub_full_dropped):
 * here, for what this core's own publishers and proxies sent, or on a shard this core
 * routed copies to (it says PRESS). Call every loop pass: it moves the shard's clock and
 * looks at the broker's count (dp_shard_recv moves the clock too). */
void dp_shard_now(struct dp_shard *sh, uint64_t now_ms);
uint32_t dp_shard_out_window(const struct dp_shard *sh);
/* DATA bytes a forwarded connection may send before its home core returns credit. */
uint32_t dp_shard_data_window(const struct dp_shard *sh);

/* ---- the home side: the broker's ops for proxy connections ---- */
/* Is `user` (a broker connection's user pointer) one of this shard's proxies? */
bool dp_shard_is_proxy(const struct dp_shard *sh, const void *user);
/* The broker's send/close for a proxy. send: 0 or -E_AGAIN (no credit or backlog room:
 * mqtt_conn_writable follows when there is). */
int dp_shard_proxy_send(struct dp_shard *sh, void *user, const uint8_t *buf, size_t len);
void dp_shard_proxy_close(struct dp_shard *sh, void *user);

/* ---- routing between shards (the broker's fanout ops) ---- */
/* Room for a routed message of `bytes` on every link it will take (those to shards whose
 * summary may hold a match, every link for a retained message). */
bool dp_shard_fanout_room(struct dp_shard *sh, const uint8_t *topic, size_t tlen, size_t bytes, bool retain);
/* ticket != 0: every shard that gets the message answers it once (DONE, or storage after
 * a barrier). Returns how many will answer. */
uint32_t dp_shard_fanout(struct dp_shard *sh, const struct mqtt_message *m, uint32_t ticket);
/* Would such a message leave some link it takes above three eighths of its data part
 * (past where dp stops reading its connections, a quarter, short of where copies are
 * refused, half)? The broker then drops the QoS 0 PUBLISHes of publishers over their fair
 * share first (ADR-075). */
bool dp_shard_fanout_busy(const struct dp_shard *sh, const uint8_t *topic, size_t tlen, size_t bytes, bool retain);

/* ---- shared subscriptions (ADR-070) ----
 * This shard got its first member of the group named by the whole filter
 * "$share/<name>/<filter>" (add) or lost its last: every other shard is told (they hand it
 * to mqtt_broker_share_remote), an add before the next interest sync, whose answers fail if
 * a shard could not record it. 0; -E_AGAIN when a shard could not be told (an add is then
 * taken back from those that heard it); -E_RANGE for a filter longer than a mesh slot. */
MUST_CHECK int dp_shard_share(struct dp_shard *sh, const uint8_t *filter, size_t len, bool add);

/* ---- interest summaries (ADR-055) ----
 * A subscription with interest key `key` (mqtt_interest_filter_key) was added or removed
 * on this shard. The other shards hear of a key when it appears here and when it goes. 0,
 * or -E_AGAIN when an appearing key could not be said (the caller refuses the
 * subscription). */
MUST_CHECK int dp_shard_interest(struct dp_shard *sh, uint16_t key, bool add);
/* After the keys of one SUBSCRIBE: when any appeared since the last sync, ask every other
 * shard to answer `ticket` once it applied them (the SUBACK waits). Returns how many will
 * answer, or -E_AGAIN when one could not be asked. */
MUST_CHECK int dp_shard_interest_sync(struct dp_shard *sh, uint32_t ticket);
/* This shard's keys are complete (its restored sessions are in): tell the others, which
 * until then send it every routed message. Repeated by dp_shard_poll until said. */
void dp_shard_interest_ready(struct dp_shard *sh);

/* ---- the mesh ---- */
/* One message from core src (data borrowed for the call). */
void dp_shard_recv(struct dp_shard *sh, uint32_t src, uint16_t kind, const uint8_t *data,
		   uint32_t len, uint64_t now_ms);
/* Send what the backlogs hold, then wake proxies that waited for room. Returns the work
 * still waiting that this pass made progress on (the loop should poll again soon while it
 * is not 0): a backlog or an owed item (CLOSE, DONE, LOST, DATA credit) counts only when
 * this pass sent some of it, so a core whose backlogs wait for mesh credit halts; the
 * credit's return wakes it (kernel/xcore's credit wake-up). */
uint32_t dp_shard_poll(struct dp_shard *sh);

/* Home-side bytes per proxy slot (proxy record + its share of the hash table). */
size_t dp_shard_bytes_per_proxy(const struct dp_shard *sh);
void dp_shard_stats_get(const struct dp_shard *sh, struct dp_shard_stats *out /* out */);
/* Numbered invariants of shard.c; 0 or -E_CORRUPT (tests). */
MUST_CHECK int dp_shard_check(const struct dp_shard *sh);

#endif
