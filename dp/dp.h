/* SPDX-License-Identifier: MIT
 *
 * The data plane of one core (layer dp/): it joins our TCP (as its upper layer on the
 * MQTT port), the TLS 1.3 handshake (mbedTLS, tls/handshake.h) and our record layer
 * (tls/record.h), and the MQTT broker shard of the core (mqtt/broker.h). It owns a fixed
 * pool of connection records indexed by TCP connection id, admission before any
 * cryptography (heap low watermark, handshakes in flight per core and per source address,
 * handshake rate), and the output buffers that hold ciphertext only while TCP has not
 * acknowledged it. It never parses protocol bytes itself (TLS and MQTT do), never frees a
 * connection inside a callback that is using it (closes are marked and reaped in
 * dp_poll or when TCP reuses the id), and never touches anything of another core.
 *
 * Calling context: core-local, single-threaded, not interrupt-safe. Everything mutable
 * lives in the struct dp carved out of caller memory; the only shared object is the
 * handshake env (mbedTLS's hooks are process-global: one env per image until the
 * per-core heap exists; see tls/handshake.h), which the caller creates and links here.
 */
#ifndef DP_DP_H
#define DP_DP_H

#include "lib/heap_tag.h"
#include "lib/compiler.h"
#include "dp/shard.h"
#include "mqtt/broker.h"
#include "net/tcp/tcp.h"
#include "store/link.h"
#include "tls/handshake.h"
#include "tls/record.h"

struct dp;

/* Accounted heap of the core. Every allocation of dp, the record layer's reassembly
 * buffers and the broker goes through it; the handshake env should use the same heap so
 * that used() covers mbedTLS too. */
struct dp_heap_ops {
	void *(*alloc)(void *ctx, size_t len, enum heap_tag tag); /* NULL on exhaustion */
	void (*free)(void *ctx, void *p, size_t len);
	size_t (*used)(void *ctx);  /* requested bytes live now */
	size_t (*avail)(void *ctx); /* bytes that may still be allocated */
	void *ctx;                  /* linked */
};

/* What dp calls below itself: TCP. dp_lower_tcp wraps net/tcp (ctx = struct tcp_stack *);
 * tests substitute a fake. Same contracts as tcp_send/tcp_close/tcp_abort. */
struct dp_lower_ops {
	int (*send)(void *ctx, uint32_t conn, const struct tcp_iov *iov, size_t n_iov);
	int (*close)(void *ctx, uint32_t conn);
	void (*abort)(void *ctx, uint32_t conn);
	void (*window_update)(void *ctx, uint32_t conn);
};
extern const struct dp_lower_ops dp_lower_tcp;

struct dp_config {
	uint32_t max_conns;         /* records: must equal TCP's max_conns (ids index them) */
	uint16_t port;              /* the MQTT-over-TLS port; other ports are refused */
	uint16_t hs_per_core;       /* handshakes in flight on this core */
	uint16_t hs_per_source;     /* handshakes in flight from one IPv4 address */
	uint32_t hs_rate_per_s;     /* new handshakes per second (token bucket) */
	uint32_t hs_burst;          /* bucket depth */
	uint32_t hs_timeout_ms;     /* a handshake not done by then is aborted */
	/* Handshake bytes are staged (hs_stage_bytes per slot, advertised as the receive
	 * window) and the cryptography runs in dp_poll, at most hs_steps_per_poll steps per
	 * call: established connections never wait behind a burst of handshakes (ADR-024). */
	uint32_t hs_stage_bytes;
	uint32_t hs_steps_per_poll;
	size_t heap_low_watermark;  /* refuse SYNs while avail() is below this */
	uint32_t max_out_bytes;     /* unacknowledged ciphertext per connection; above it the
				     * broker is told -E_AGAIN and resumes on acknowledgement */
	uint32_t rx_window;         /* receive window advertised while open */
	struct tls_hs_env *hs_env;  /* linked, created by the caller (process-global hooks) */
	/* Record layer: ops are replaced by the dp heap, and key_cache by rec.key_cache_slots
	 * entries carved from dp's memory (0: no cache, keys expanded per record). */
	struct tls_rec_config rec;
	struct mqtt_broker_config mqtt; /* services linked */
	struct dp_heap_ops heap;    /* copied; ctx linked */
	struct dp_lower_ops lower;  /* copied */
	void *lower_ctx;            /* linked */
	/* One log line (NUL-terminated, borrowed) for refusals and closes, with its
	 * structured fields (NULL when none; lib/log_fields.h); may be NULL. */
	void (*log)(void *ctx, const char *line, const struct log_fields *f);
	void *log_ctx;
	uint64_t (*now_ms)(void *ctx); /* monotonic clock */
	void *clock_ctx;
	/* Broker shards across cores (dp/shard.h). n_cores 0 or 1: this dp's broker is the
	 * only one. Otherwise a session lives on its home core and this dp forwards plain
	 * MQTT there; max_conns and max_packet are taken from the fields above. */
	struct dp_shard_config shard;
	/* Storage (docs/DURABILITY.md). on: the broker records its persistent state over
	 * store.link to the storage core and holds each acknowledgement until what it
	 * promises is committed; the port admits no SYN until the storage core has restored
	 * this core's sessions (RESTORE_END). off: in memory only, serving at once. */
	struct dp_store_config {
		bool on;
		uint32_t self;               /* this core's index: the origin of its tickets */
		uint32_t held_acks;          /* acknowledgements waiting for a commit */
		uint32_t max_queries;        /* telemetry queries at once (the broker's slots) */
		struct store_link_config link; /* send and ctx from the platform (linked) */
		/* A revocation storage restores (borrowed): a certificate serial, or (identity)
		 * a certificate identity revoked at run time; may be NULL. */
		void (*revoked)(void *ctx, bool identity, const uint8_t *id, size_t len);
		/* An identity of the allowlist storage restores (borrowed); may be NULL. */
		void (*allowed)(void *ctx, const uint8_t *id, size_t len);
		void *revoked_ctx; /* both */
	} store;
};

/* Per-site counters and the memory figure. */
struct dp_stats {
	uint32_t open, handshaking, established;
	uint64_t admitted, accepted;
	uint64_t refused_heap, refused_records, refused_inflight, refused_source, refused_rate,
		refused_port, accept_refused;
	uint64_t hs_failed, hs_timeouts, hs_done, id_refused, mqtt_open_failed;
	uint64_t hs_steps, hs_staged_bytes, hs_stage_full; /* staged handshakes (ADR-024) */
	uint64_t close_peer_fin, close_tls_alert, close_tls_error, close_mqtt, close_tcp,
		reaped;
	uint64_t out_alloc_failed, out_blocked, out_send_failed, out_chunks_live;
	uint64_t bytes_in, bytes_out;
	uint64_t fwd_opened, fwd_full; /* connections forwarded to a home core; closed: no room */
	uint64_t refused_not_serving, refused_store_lag; /* SYNs before restore ended / while storage lags */
	uint64_t store_windows_shut;   /* times reads stopped for storage (backlog or held acks) */
	uint64_t route_windows_shut;   /* times reads stopped for a backlog to another shard */
	uint64_t route_heavy_shut;     /* times reads of the publishers over their fair share
					* stopped first (dp_shard_routing_level HEAVY) */
	uint64_t restore_records, restore_refused; /* from storage at boot / that did not fit */
	/* Received ciphertext copied before decryption (records split across segments);
	 * records that arrive whole in one segment are decrypted in place in the frame. */
	uint64_t rx_copied;
	uint64_t key_hits, key_misses, key_evictions; /* the record layer's key cache */
	size_t heap_used, heap_baseline;
	size_t rate_per_conn;  /* MQTT per-identity rate table / connection slots (ADR-022) */
	size_t fixed_per_conn; /* dp record + TCP cb + TCP slot + MQTT conn + MQTT session + rate share */
	size_t heap_per_conn;  /* (heap_used - heap_baseline) / open, 0 when none */
	size_t bytes_per_conn; /* heap_per_conn + fixed_per_conn */
};

/* What a data plane's tables cost, from its configuration and its TCP stack's: every table
 * sized by the connection count (TCP control blocks and slots, send references and pending
 * acknowledgements, dp records, MQTT connection records, shard proxies, rate buckets)
 * gives slot_bytes per connection slot; what does not scale with it (handshake staging,
 * the key cache, session and topic tables, shard backlogs, storage rings) is core_bytes.
 * Measured by sizing both at the configured count and at half of it (the difference is
 * what the slots cost). */
struct dp_footprint {
	uint32_t slots;        /* the configured connection count */
	size_t slot_bytes;     /* per connection slot */
	size_t core_bytes;     /* per core, whatever the connection count */
};
/* 0, or -E_INVAL when either configuration is rejected or has fewer than 2 slots. */
MUST_CHECK int dp_footprint(const struct dp_config *g, const struct tcp_config *tc, struct dp_footprint *out);
/* The connection count in every setting sized by it (dp, MQTT connections, shard proxies;
 * TCP control blocks, send references, pending acknowledgements). */
void dp_config_set_conns(struct dp_config *g, uint32_t n);
void dp_tcp_config_set_conns(struct tcp_config *tc, uint32_t n);

/* Fill cfg from the configuration constants (CONF_*): limits, ACL service patterns,
 * identity source is read by the handshake env (dp_hs_id_config). Heap, lower, log,
 * clock, hs_env and mqtt.hash_key are left for the caller. */
void dp_config_from_conf(struct dp_config *cfg /* out */);
/* TCP settings from CONF_* (port, connections, RTO, delayed ACK, MSS...). */
void dp_tcp_config_from_conf(struct tcp_config *tc /* out */);
/* Identity rules from CONF_TLS_* for the handshake env. */
void dp_hs_id_config(struct tls_id_config *id /* out */);
/* The handshake environment's settings from the configuration and the certificates
 * embedded in the image (CA, server chain and key; linked, static). The caller adds
 * what is platform-specific: revocation lookup and allocator/clock/random ops. */
void dp_hs_config_from_conf(struct tls_hs_config *hc /* out */);

/* Bytes of memory dp_init needs (records, key cache, broker region); 0 if cfg is invalid. */
size_t dp_mem_size(const struct dp_config *cfg);
/* Build the data plane in mem (linked, 8-byte aligned, >= dp_mem_size). cfg copied.
 * -E_INVAL, -E_NOMEM, or the broker's error. */
MUST_CHECK int dp_init(struct dp **out /* out */, void *mem, size_t len, const struct dp_config *cfg);
/* Abort every connection through lower.abort, reap, and give every heap byte back. TCP
 * must not call dp after this (its closed() for aborted ids is ignored). */
void dp_fini(struct dp *dp);
/* Link the TCP stack's handle (lower_ctx) once it exists. */
void dp_set_lower_ctx(struct dp *dp, void *lower_ctx);

/* The TCP upper ops (ctx = struct dp *). */
extern const struct tcp_upper_ops dp_tcp_upper;

/* Safe point of the loop, after tcp_input/tcp_poll: reap closed connections (free their
 * records exactly once, publish wills), run up to hs_steps_per_poll staged handshake
 * steps, abort handshakes past their deadline, tick the broker once a second. Returns
 * the handshakes still waiting with staged bytes: while it is not 0 the caller's loop
 * should call again soon instead of sleeping. */
uint32_t dp_poll(struct dp *dp);

void dp_stats_get(const struct dp *dp, struct dp_stats *out /* out */);
struct mqtt_broker *dp_broker(struct dp *dp);
/* One message from core src's mesh ring in the shards' kind range (dp/shard.h): data
 * borrowed for the call. Core-local, like dp_poll. */
void dp_mesh_recv(struct dp *dp, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len);
/* Boot time, before any connection: this dp becomes the only shard (the platform could
 * not start every core its shards were built for). */
void dp_shards_off(struct dp *dp);
/* A message from the storage core (kinds 0x0380-0x03ff of store/ops.h; data borrowed).
 * Core-local, like dp_poll. */
void dp_store_recv(struct dp *dp, uint16_t kind, const uint8_t *data, uint32_t len);
/* Serving: restore has ended (or storage is off). */
bool dp_serving(const struct dp *dp);
/* Run-time revocation (kernel/node's console): close this core's open connections whose
 * client certificate has this serial (DER integer, borrowed) with the alert
 * certificate_revoked; end the sessions homed here of this identity (a device's, or a
 * service's "name" and "name/suffix"), wherever their connection is. Return how many. */
uint32_t dp_revoke_serial(struct dp *dp, const uint8_t *serial, size_t len);
uint32_t dp_kick_identity(struct dp *dp, const char *name, size_t len);
/* A run-time revocation (put) or its removal to the database, restored to every core at
 * the next boot: 0; -E_NOSYS without storage; the storage link's error otherwise. */
MUST_CHECK int dp_revocation_record(struct dp *dp, bool put, bool identity, const uint8_t *id, size_t len);
/* An allowlist addition (put) or removal to the database, as dp_revocation_record. */
MUST_CHECK int dp_allowlist_record(struct dp *dp, bool put, const uint8_t *id, size_t len);
/* Whether storage lags (this core then refuses SYNs and stops reading PUBLISHes), and the
 * bytes waiting for the storage core in *backlog; false, 0 when storage is off. */
bool dp_store_lag(const struct dp *dp, uint32_t *backlog /* out */);
/* The storage link's counters; false when storage is off. */
bool dp_store_stats(const struct dp *dp, struct store_link_stats *out /* out */);
/* The home core of an identity (0 when this dp is the only shard). */
uint32_t dp_home_core(const struct dp *dp, bool service, const uint8_t *id, size_t len);
/* The shard counters; false when this dp is the only shard. */
bool dp_shard_stats(const struct dp *dp, struct dp_shard_stats *out /* out */);
/* Numbered invariants of dp.c; 0 or -E_CORRUPT (tests). */
MUST_CHECK int dp_check(const struct dp *dp);
size_t dp_conn_sizeof(void);

/* Tests and benchmarks only (no network input reaches it): take an accepted connection
 * (state handshake, as after accept()) straight to open as a finished handshake would,
 * with the record state rec (copied; the caller's copy should be wiped) and the device or
 * service identity id (borrowed, NUL-terminated). 0, -E_INVAL, or the broker's error. */
#ifndef URMQTT_KERNEL /* tests and host benchmarks only, never in an image */
MUST_CHECK int dp_test_establish(struct dp *dp, uint32_t conn, const struct tls_rec *rec,
				 const char *id, bool service);
#endif

#endif
