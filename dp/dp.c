/* SPDX-License-Identifier: MIT
 *
 * The per-core data plane (dp/dp.h): TCP upper ops for the MQTT port, admission, the
 * connection records (TCP id -> handshake or record layer -> MQTT connection), the
 * ciphertext output chunks, and the close/reap paths. It must never free a record inside
 * a callback that is using it, never hand TCP bytes it may change before they are
 * acknowledged, and never start cryptography for a SYN admission refused.
 *
 * Design note.
 * A record is indexed by its TCP connection id. States:
 *
 *   FREE --accept()--> HS --hs_input()==1, finish, mqtt_conn_open--> OPEN
 *    ^                  |                                              |
 *    |                  | failure / timeout / FIN     MQTT close, TLS alert or error,
 *    |                  v                             peer FIN: conn_begin_close()
 *    |               CLOSING <--------------------------------------------+
 *    |                  |
 *    +---reap()---------+--- TCP closed() sets GONE and links the record on the reap list
 *
 * Invariants (dp_check):
 * 1. state HS <=> hs != NULL <=> the record holds one of the hs_slots entries; only a
 *    slot in use has staged bytes (stage_len <= hs_stage_bytes).
 * 2. mq != NULL only in OPEN (the broker's handle; cleared when the broker closes it or
 *    after mqtt_conn_lost).
 * 3. out_bytes equals the bytes of the chunk list not yet acknowledged; no chunk exists
 *    in state FREE.
 * 4. A record is on the reap list exactly when GONE is set; a GONE record is never
 *    handed to TCP again.
 * 5. n_open counts records not FREE.
 * 6. DP_F_FWD only in OPEN or CLOSING; then hs/mq are not pointers (fwd/fq share
 *    their bytes) and every message about it on the mesh carries (id, fwd.gen). It is
 *    cleared once the home core knows the connection ended (LOST sent or owed, or CLOSE
 *    received). DP_F_OWE only with DP_F_FWD; n_owe counts them. fq.credit is the DATA
 *    the home core still takes; the TCP window never exceeds it while it is positive.
 */
#include "dp/dp.h"
#include "dp/dp_store.h"

#include "lib/align.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "lib/siphash.h"

#define DP_FREE 0u
#define DP_HS 1u
#define DP_OPEN 2u
#define DP_CLOSING 3u

#define DP_F_GONE 0x01u    /* TCP closed(): id released by TCP, waiting for reap */
#define DP_F_BLOCKED 0x02u /* the broker got -E_AGAIN: call writable on ack */
#define DP_F_FIN 0x04u     /* we asked TCP to close */
#define DP_F_FWD 0x08u     /* OPEN, session on another core: fwd/owed, not hs/mq */
#define DP_F_OWE 0x10u     /* forwarded: OUT credit owed that the mesh refused (n_owe) */

#define DP_NIL UINT32_MAX
/* Sanity bound on the key cache (entries of ~88 B per core). */
#define DP_KEY_CACHE_MAX 65536u
/* Room for the control records tls_rec_flush may write at once (its contract). */
#define DP_CTRL_CAP ((size_t)2u * (TLS_REC_OVERHEAD + 5u))

/* Ciphertext waiting for TCP's acknowledgement; data[] is what TCP references. */
struct dp_chunk {
	struct dp_chunk *next;
	uint32_t len;
	uint32_t alloc_len;
	uint8_t data[];
};

struct dp_conn {
	struct tls_rec rec;
	/* A forwarded connection (DP_F_FWD, only in OPEN) has no handshake and no broker
	 * handle here: the same bytes name its home core instead (invariant 6). */
	union {
		struct tls_hs *hs;
		struct {
			uint32_t gen;  /* names it on the mesh with its id (dp/shard.h) */
			uint16_t home; /* the core of its session */
			uint16_t pad;
		} fwd;
	};
	union {
		struct mqtt_conn *mq;
		struct {
			uint32_t owed;  /* OUT bytes sealed, credit not yet returned to home */
			int32_t credit; /* DATA bytes home still takes (one record may overdraw) */
		} fq;           /* forwarded */
	};
	struct dp_chunk *out_head, *out_tail;
	uint32_t out_bytes; /* unacknowledged bytes in the chunks */
	uint32_t head_acked; /* acknowledged bytes of out_head */
	uint32_t reap_next;
	uint8_t state;
	uint8_t flags;
	/* SipHash of the client certificate's serial (leading zero bytes dropped; 0: none), so a
	 * serial revoked at run time finds its open connections (dp_revoke_serial). */
	uint64_t serial_key;
};

/* Issue 6's budget: TLS state per idle connection, the connection record included (152 B,
 * and 8 more for the serial key of run-time revocation: ADR-064). */
STATIC_ASSERT(sizeof(void *) != 8 || sizeof(struct dp_conn) <= 160, "dp_conn over its 160 B budget");

struct dp_hs_slot {
	struct dp *dp; /* back pointer: the slot is the handshake's send context */
	uint32_t conn; /* DP_NIL when free */
	uint32_t src_ip;
	uint64_t deadline_ms;
	uint8_t *stage;     /* hs_stage_bytes carved at init: received, not yet processed */
	uint32_t stage_len;
};

struct dp {
	struct dp_config cfg;
	struct tls_rec_env renv;
	struct mqtt_broker *broker;
	struct dp_conn *conns;
	struct dp_hs_slot *hs_slots;
	uint32_t n_open, n_hs, n_est;
	uint32_t hs_hand; /* round-robin start of the next staged handshake step */
	size_t rate_per_conn; /* the MQTT rate table's bytes per connection slot */
	uint32_t reap_head;
	uint64_t tokens_milli; /* handshake token bucket, in 1/1000 tokens */
	uint64_t tokens_ms;
	uint64_t last_tick_ms;
	struct dp_shard *shard; /* NULL: one shard (every session is local) */
	uint32_t next_gen;
	uint32_t n_owe;
	struct dp_store *store; /* NULL: storage off (in memory only, serving at once) */
	bool store_shut;        /* reads stopped for storage: windows reopen when it clears */
	bool route_shut;        /* reads stopped for a shard backlog (dp_shard_routing_level ALL) */
	bool route_heavy;       /* ... of the publishers over their fair share only (HEAVY) */
	struct dp_stats st;
};

static uint64_t now_ms(const struct dp *dp)
{
	return dp->cfg.now_ms(dp->cfg.clock_ctx);
}

static uint32_t conn_id(const struct dp *dp, const struct dp_conn *c)
{
	return (uint32_t)(c - dp->conns);
}

static void say_fields(struct dp *dp, const struct log_fields *f, const char *fmt, va_list ap)
{
	char line[192];
	if (!dp->cfg.log)
		return;
	(void)fmt_vsnprintf(line, sizeof line, fmt, ap);
	dp->cfg.log(dp->cfg.log_ctx, line, f);
}

static void say(struct dp *dp, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void say(struct dp *dp, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say_fields(dp, NULL, fmt, ap);
	va_end(ap);
}

/* A refusal: the line, and why and whom as structured fields (identity may be NULL). */
static void say_refused(struct dp *dp, const char *reason, const char *identity, const char *peer,
			const char *fmt, ...) PRINTF_LIKE(5, 6);
static void say_refused(struct dp *dp, const char *reason, const char *identity, const char *peer,
			const char *fmt, ...)
{
	struct log_fields f = { .reason = reason, .identity = identity, .peer = peer };
	va_list ap;
	va_start(ap, fmt);
	say_fields(dp, &f, fmt, ap);
	va_end(ap);
}

/* ---- heap adapters ------------------------------------------------------------------ */

static void *dp_heap_alloc(struct dp *dp, size_t len, enum heap_tag tag)
{
	return dp->cfg.heap.alloc(dp->cfg.heap.ctx, len, tag);
}

static void dp_heap_free(struct dp *dp, void *p, size_t len)
{
	dp->cfg.heap.free(dp->cfg.heap.ctx, p, len);
}

static void *rec_alloc(void *ctx, size_t len)
{
	return dp_heap_alloc(ctx, len, HEAP_TAG_TLS_RECORD);
}

static void rec_free(void *ctx, void *p, size_t len)
{
	dp_heap_free(ctx, p, len);
}

static void *mq_alloc(void *ctx, size_t len)
{
	return dp_heap_alloc(ctx, len, HEAP_TAG_MQTT);
}

static void mq_free(void *ctx, void *p, size_t len)
{
	dp_heap_free(ctx, p, len);
}

/* ---- output ------------------------------------------------------------------------- */

static void out_free_all(struct dp *dp, struct dp_conn *c)
{
	struct dp_chunk *k = c->out_head;
	while (k) {
		struct dp_chunk *n = k->next;
		dp_heap_free(dp, k, k->alloc_len);
		dp->st.out_chunks_live--;
		k = n;
	}
	c->out_head = c->out_tail = NULL;
	c->out_bytes = 0;
	c->head_acked = 0;
}

/* Hand a filled chunk to TCP. On failure the chunk is freed and the stream is broken
 * (bytes already encrypted with a sequence number TCP never carried): abort. */
static int out_queue(struct dp *dp, struct dp_conn *c, struct dp_chunk *k)
{
	struct tcp_iov iov = { k->data, k->len };
	k->next = NULL;
	if (c->out_tail)
		c->out_tail->next = k;
	else
		c->out_head = k;
	c->out_tail = k;
	c->out_bytes += k->len;
	int rc = dp->cfg.lower.send(dp->cfg.lower_ctx, conn_id(dp, c), &iov, 1);
	if (rc) {
		/* Not referenced by TCP: unlink (it is the tail) before freeing. */
		struct dp_chunk **pp = &c->out_head;
		struct dp_chunk *prev = NULL;
		while (*pp != k) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		*pp = NULL;
		c->out_tail = prev;
		c->out_bytes -= k->len;
		if (!c->out_head)
			c->head_acked = 0;
		dp_heap_free(dp, k, k->alloc_len);
		dp->st.out_chunks_live--;
		dp->st.out_send_failed++;
		return rc;
	}
	dp->st.bytes_out += k->len;
	return 0;
}

static struct dp_chunk *chunk_new(struct dp *dp, size_t len)
{
	size_t alloc_len = sizeof(struct dp_chunk) + len;
	struct dp_chunk *k = dp_heap_alloc(dp, alloc_len, HEAP_TAG_TLS_RECORD) /* sealed TLS output: TLS, not TCP */;
	if (!k) {
		dp->st.out_alloc_failed++;
		return NULL;
	}
	dp->st.out_chunks_live++;
	k->next = NULL;
	k->len = 0;
	k->alloc_len = (uint32_t)alloc_len;
	return k;
}

/* Raw bytes (handshake flight) out. */
static int out_raw(struct dp *dp, struct dp_conn *c, const uint8_t *p, size_t len)
{
	if (len > UINT32_MAX / 2)
		return -E_RANGE;
	struct dp_chunk *k = chunk_new(dp, len);
	if (!k)
		return -E_NOMEM;
	memcpy(k->data, p, len);
	k->len = (uint32_t)len;
	return out_queue(dp, c, k);
}

/* Pending TLS control records (KeyUpdate, alert, close_notify) out. */
static void out_flush_tls(struct dp *dp, struct dp_conn *c)
{
	if (!tls_rec_want_flush(&c->rec) || (c->flags & DP_F_GONE))
		return;
	struct dp_chunk *k = chunk_new(dp, DP_CTRL_CAP);
	if (!k)
		return;
	size_t n = 0;
	if (tls_rec_flush(&dp->renv, &c->rec, k->data, DP_CTRL_CAP, &n) || !n) {
		dp_heap_free(dp, k, k->alloc_len);
		dp->st.out_chunks_live--;
		return;
	}
	k->len = (uint32_t)n;
	(void)out_queue(dp, c, k);
}

/* ---- closing ------------------------------------------------------------------------ */

static void hs_slot_release(struct dp *dp, struct dp_conn *c)
{
	uint32_t id = conn_id(dp, c);
	for (uint32_t i = 0; i < dp->cfg.hs_per_core; i++)
		if (dp->hs_slots[i].conn == id) {
			dp->hs_slots[i].conn = DP_NIL;
			dp->hs_slots[i].stage_len = 0;
			dp->n_hs--;
			return;
		}
}

static void hs_end(struct dp *dp, struct dp_conn *c)
{
	if (!(c->flags & DP_F_FWD) && c->hs) {
		tls_hs_abort(c->hs);
		c->hs = NULL;
		hs_slot_release(dp, c);
	}
}

/* Leave HS or OPEN for CLOSING: say what TLS must say, then FIN. The broker handle must
 * already be gone (closed by the broker or lost). */
static void conn_begin_close(struct dp *dp, struct dp_conn *c, bool tls_open)
{
	if (c->state == DP_OPEN)
		dp->n_est--;
	hs_end(dp, c);
	c->state = DP_CLOSING;
	if (c->flags & DP_F_GONE)
		return;
	if (tls_open) {
		if (!tls_rec_failed(&c->rec))
			tls_rec_shutdown(&c->rec);
		out_flush_tls(dp, c);
	}
	if (!(c->flags & DP_F_FIN)) {
		c->flags |= DP_F_FIN;
		if (dp->cfg.lower.close(dp->cfg.lower_ctx, conn_id(dp, c)) != 0)
			dp->cfg.lower.abort(dp->cfg.lower_ctx, conn_id(dp, c));
	}
}

/* Stop forwarding: the home core knows (LOST sent or CLOSE received), or never will. */
static void fwd_end(struct dp *dp, struct dp_conn *c)
{
	if (c->flags & DP_F_OWE)
		dp->n_owe--;
	c->flags = (uint8_t)(c->flags & ~(DP_F_FWD | DP_F_OWE));
	c->hs = NULL;
	c->mq = NULL;
}

static void mq_lose(struct dp *dp, struct dp_conn *c)
{
	if (c->flags & DP_F_FWD) {
		/* The will is due on the home core. A refusal (even the control reserve is
		 * full) is counted by the shard; the home ends it at its keepalive. */
		(void)!dp_shard_lost(dp->shard, c->fwd.home, conn_id(dp, c), c->fwd.gen);
		fwd_end(dp, c);
		return;
	}
	if (c->mq) {
		struct mqtt_conn *m = c->mq;
		c->mq = NULL;
		mqtt_conn_lost(dp->broker, m, now_ms(dp));
	}
}

/* Free everything of a record whose TCP id TCP has released. Safe point only. */
static void conn_reap(struct dp *dp, struct dp_conn *c)
{
	if (c->state == DP_OPEN)
		dp->n_est--;
	hs_end(dp, c);
	c->state = DP_CLOSING; /* the broker's sends during mq_lose now refuse */
	mq_lose(dp, c);
	tls_rec_close(&dp->renv, &c->rec);
	out_free_all(dp, c);
	memset(c, 0, sizeof *c);
	c->state = DP_FREE;
	c->reap_next = DP_NIL;
	dp->n_open--;
	dp->st.reaped++;
}

static void reap_all(struct dp *dp)
{
	while (dp->reap_head != DP_NIL) {
		struct dp_conn *c = &dp->conns[dp->reap_head];
		dp->reap_head = c->reap_next;
		c->reap_next = DP_NIL;
		conn_reap(dp, c);
	}
}

/* Unlink one record from the reap list (TCP reuses its id before dp_poll ran). */
static void reap_one(struct dp *dp, struct dp_conn *c)
{
	uint32_t id = conn_id(dp, c);
	uint32_t *pp = &dp->reap_head;
	while (*pp != DP_NIL && *pp != id)
		pp = &dp->conns[*pp].reap_next;
	if (*pp == id)
		*pp = c->reap_next;
	c->reap_next = DP_NIL;
	conn_reap(dp, c);
}

/* ---- broker ops ----------------------------------------------------------------------- */

/* Seal plaintext into one chunk TCP keeps until acknowledged. 0, -E_NOMEM (no chunk:
 * nothing happened), or -E_CLOSED (sealed but not carried: the connection was aborted). */
static int seal_out(struct dp *dp, struct dp_conn *c, const uint8_t *buf, size_t len)
{
	size_t wire = tls_rec_wire_len(&dp->renv, &c->rec, len);
	struct dp_chunk *k = chunk_new(dp, wire);
	if (!k)
		return -E_NOMEM;
	size_t n = 0;
	int rc = tls_rec_write(&dp->renv, &c->rec, buf, len, k->data, wire, &n);
	if (rc) {
		dp_heap_free(dp, k, k->alloc_len);
		dp->st.out_chunks_live--;
		return -E_NOMEM;
	}
	k->len = (uint32_t)n;
	rc = out_queue(dp, c, k);
	if (rc) {
		/* Encrypted but not carried: the record stream has a hole. End it hard. */
		say(dp, "dp: conn %u: TCP refused %zu bytes (%s), aborting", conn_id(dp, c), n,
		     err_name(rc));
		c->flags |= DP_F_FIN;
		dp->cfg.lower.abort(dp->cfg.lower_ctx, conn_id(dp, c));
		return -E_CLOSED;
	}
	return 0;
}

static int mq_send(void *ctx, void *user, const uint8_t *buf, size_t len)
{
	struct dp *dp = ctx;
	if (dp->shard && dp_shard_is_proxy(dp->shard, user))
		return dp_shard_proxy_send(dp->shard, user, buf, len);
	struct dp_conn *c = user;
	if (c->state != DP_OPEN || (c->flags & DP_F_GONE))
		return -E_AGAIN;
	if (c->out_bytes >= dp->cfg.max_out_bytes) {
		c->flags |= DP_F_BLOCKED;
		dp->st.out_blocked++;
		return -E_AGAIN;
	}
	int rc = seal_out(dp, c, buf, len);
	if (rc == -E_NOMEM)
		c->flags |= DP_F_BLOCKED;
	return rc ? -E_AGAIN : 0;
}

static void mq_close(void *ctx, void *user)
{
	struct dp *dp = ctx;
	if (dp->shard && dp_shard_is_proxy(dp->shard, user)) {
		dp_shard_proxy_close(dp->shard, user);
		return;
	}
	struct dp_conn *c = user;
	c->mq = NULL;
	dp->st.close_mqtt++;
	if (c->state == DP_OPEN)
		conn_begin_close(dp, c, true);
}

/* ---- broker shards (dp/shard.h) --------------------------------------------------------- */

static bool mq_fanout_room(void *ctx, const uint8_t *topic, size_t tlen, size_t bytes, bool retain)
{
	struct dp *dp = ctx;
	return !dp->shard || dp_shard_fanout_room(dp->shard, topic, tlen, bytes, retain);
}

static bool mq_fanout_busy(void *ctx, const uint8_t *topic, size_t tlen, size_t bytes, bool retain)
{
	struct dp *dp = ctx;
	return dp->shard && dp_shard_fanout_busy(dp->shard, topic, tlen, bytes, retain);
}

static int mq_interest(void *ctx, uint16_t key, bool add)
{
	struct dp *dp = ctx;
	return dp_shard_interest(dp->shard, key, add);
}

static int mq_interest_sync(void *ctx, uint32_t ticket)
{
	struct dp *dp = ctx;
	return dp_shard_interest_sync(dp->shard, ticket);
}

static int mq_share(void *ctx, const uint8_t *filter, size_t len, bool add)
{
	struct dp *dp = ctx;
	return dp_shard_share(dp->shard, filter, len, add);
}

static uint32_t mq_fanout(void *ctx, const struct mqtt_message *m, uint32_t ticket)
{
	struct dp *dp = ctx;
	return dp->shard ? dp_shard_fanout(dp->shard, m, ticket) : 0;
}

/* The shard's ticket hooks: a routed message recorded here is answered by storage; an
 * answer from another shard goes to the broker. */
static int sh_barrier(void *ctx, uint32_t origin, uint32_t ticket)
{
	struct dp *dp = ctx;
	return dp->store ? dp_store_barrier(dp->store, origin, ticket) : -E_NOSYS;
}

static void sh_done(void *ctx, uint32_t ticket, bool ok)
{
	struct dp *dp = ctx;
	mqtt_broker_durable(dp->broker, ticket, ok);
}

/* The forwarded connection (id, gen) names, or NULL if it has ended since. */
static struct dp_conn *fwd_conn(struct dp *dp, uint32_t conn, uint32_t gen)
{
	if (conn >= dp->cfg.max_conns)
		return NULL;
	struct dp_conn *c = &dp->conns[conn];
	if (!(c->flags & DP_F_FWD) || c->fwd.gen != gen || c->state != DP_OPEN ||
	    (c->flags & DP_F_GONE))
		return NULL;
	return c;
}

/* Give the home core its OUT credit back: all of it once everything sealed is
 * acknowledged, else in quarters of the window (few messages, no stall). */
static void fwd_credit(struct dp *dp, struct dp_conn *c, bool force)
{
	uint32_t w = dp_shard_out_window(dp->shard);
	if (!c->fq.owed || (!force && c->out_bytes && c->fq.owed < w / 4u + 1u))
		return;
	uint32_t give = c->fq.owed;
	if (dp_shard_credit(dp->shard, c->fwd.home, conn_id(dp, c), c->fwd.gen, give) == 0) {
		c->fq.owed -= give;
		if (c->flags & DP_F_OWE) {
			c->flags = (uint8_t)(c->flags & ~DP_F_OWE);
			dp->n_owe--;
		}
	} else if (!(c->flags & DP_F_OWE)) {
		c->flags |= DP_F_OWE; /* dp_poll tries again */
		dp->n_owe++;
	}
}

/* DCREDIT from the home core: it took `bytes` more of what this connection forwarded.
 * TCP is told every time: a small positive credit can still mean a zero window (below one
 * unit of the window scale), and TCP itself decides whether the new window is worth a
 * segment (a window credit had closed is reopened at once, not at the peer's probe). */
static void fwd_data_credit(void *ctx, uint32_t conn, uint32_t gen, uint32_t bytes)
{
	struct dp *dp = ctx;
	struct dp_conn *c = fwd_conn(dp, conn, gen);
	if (!c)
		return;
	int64_t v = (int64_t)c->fq.credit + bytes;
	c->fq.credit = (int32_t)MIN(v, (int64_t)dp_shard_data_window(dp->shard));
	dp->cfg.lower.window_update(dp->cfg.lower_ctx, conn);
}

/* OUT from the home core: plaintext MQTT for one of our forwarded connections. */
static void fwd_out(void *ctx, uint32_t conn, uint32_t gen, const uint8_t *p, size_t n)
{
	struct dp *dp = ctx;
	struct dp_conn *c = fwd_conn(dp, conn, gen);
	if (!c || !n)
		return;
	/* The home core's credit bounds what arrives, so there is no refusing here; a chunk
	 * we cannot get loses bytes of the stream: end the connection. */
	int rc = seal_out(dp, c, p, n);
	if (rc == -E_NOMEM) {
		say(dp, "dp: conn %u: no memory for %zu forwarded bytes, aborting", conn, n);
		c->flags |= DP_F_FIN;
		dp->cfg.lower.abort(dp->cfg.lower_ctx, conn);
		return;
	}
	if (rc == 0) /* n is one mesh payload; the home's credit keeps owed near out_window */
		c->fq.owed += (uint32_t)n;
}

/* CLOSE from the home core: its broker ended the session's connection. */
static void fwd_close(void *ctx, uint32_t conn, uint32_t gen)
{
	struct dp *dp = ctx;
	struct dp_conn *c = fwd_conn(dp, conn, gen);
	if (!c)
		return;
	fwd_end(dp, c);
	dp->st.close_mqtt++;
	conn_begin_close(dp, c, true);
}

void dp_mesh_recv(struct dp *dp, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len)
{
	if (!dp->shard)
		return;
	dp_shard_recv(dp->shard, src, kind, data, len, now_ms(dp));
	reap_all(dp); /* aborts above report closed() at once */
}

void dp_store_recv(struct dp *dp, uint16_t kind, const uint8_t *data, uint32_t len)
{
	if (!dp->store)
		return;
	dp_store_in(dp->store, kind, data, len);
	reap_all(dp); /* an acknowledgement refused closes its connection */
}

bool dp_serving(const struct dp *dp)
{
	return !dp->store || dp_store_serving(dp->store);
}

int dp_revocation_record(struct dp *dp, bool put, bool identity, const uint8_t *id, size_t len)
{
	return dp->store ? dp_store_revocation(dp->store, put, identity, id, len) : -E_NOSYS;
}

int dp_allowlist_record(struct dp *dp, bool put, const uint8_t *id, size_t len)
{
	return dp->store ? dp_store_allowlist(dp->store, put, id, len) : -E_NOSYS;
}

bool dp_store_lag(const struct dp *dp, uint32_t *backlog)
{
	*backlog = dp->store ? dp_store_backlog(dp->store) : 0;
	return dp->store && dp_store_congested(dp->store);
}

bool dp_store_stats(const struct dp *dp, struct store_link_stats *out)
{
	if (!dp->store)
		return false;
	uint64_t restored, refused;
	dp_store_counts(dp->store, out, &restored, &refused);
	return true;
}

/* ---- TCP upper ops ------------------------------------------------------------------ */

static void bucket_refill(struct dp *dp, uint64_t now)
{
	uint64_t cap = (uint64_t)dp->cfg.hs_burst * 1000u;
	if (now > dp->tokens_ms) {
		uint64_t add = (now - dp->tokens_ms) * dp->cfg.hs_rate_per_s;
		dp->tokens_milli = MIN(cap, dp->tokens_milli + MIN(add, cap));
	}
	dp->tokens_ms = now;
}

static bool up_admit(void *ctx, uint32_t src_ip, uint16_t src_port, uint16_t dst_port)
{
	struct dp *dp = ctx;
	(void)src_port;
	if (dst_port != dp->cfg.port) {
		dp->st.refused_port++;
		return false;
	}
	if (!dp_serving(dp)) { /* storage has not restored this core's sessions yet */
		dp->st.refused_not_serving++;
		return false;
	}
	if (dp->store && dp_store_congested(dp->store)) { /* before any cryptography */
		dp->st.refused_store_lag++;
		return false;
	}
	if (dp->cfg.heap.avail(dp->cfg.heap.ctx) < dp->cfg.heap_low_watermark) {
		dp->st.refused_heap++;
		return false;
	}
	if (dp->n_open >= dp->cfg.max_conns) {
		dp->st.refused_records++;
		return false;
	}
	if (dp->n_hs >= dp->cfg.hs_per_core) {
		dp->st.refused_inflight++;
		return false;
	}
	uint32_t same = 0;
	for (uint32_t i = 0; i < dp->cfg.hs_per_core; i++)
		if (dp->hs_slots[i].conn != DP_NIL && dp->hs_slots[i].src_ip == src_ip)
			same++;
	if (same >= dp->cfg.hs_per_source) {
		dp->st.refused_source++;
		return false;
	}
	bucket_refill(dp, now_ms(dp));
	if (dp->tokens_milli < 1000u) {
		dp->st.refused_rate++;
		return false;
	}
	dp->tokens_milli -= 1000u;
	dp->st.admitted++;
	return true;
}

/* The handshake's send callback; ctx is its slot (which names the dp and the record). */
static int hs_send(void *ctx, const uint8_t *p, size_t len)
{
	struct dp_hs_slot *s = ctx;
	struct dp *dp = s->dp;
	struct dp_conn *c = &dp->conns[s->conn];
	if (c->flags & DP_F_GONE)
		return -E_CLOSED;
	return out_raw(dp, c, p, len);
}

static int up_accept(void *ctx, uint32_t conn, uint32_t src_ip, uint16_t src_port, uint16_t dst_port)
{
	struct dp *dp = ctx;
	(void)src_port;
	if (conn >= dp->cfg.max_conns || dst_port != dp->cfg.port) {
		dp->st.accept_refused++;
		return -E_INVAL;
	}
	struct dp_conn *c = &dp->conns[conn];
	if (c->state != DP_FREE) {
		if (!(c->flags & DP_F_GONE)) {
			dp->st.accept_refused++; /* TCP reused a live id: refuse, keep ours */
			return -E_EXIST;
		}
		reap_one(dp, c); /* not inside any callback of the old connection */
	}
	struct dp_hs_slot *s = NULL;
	for (uint32_t i = 0; i < dp->cfg.hs_per_core; i++)
		if (dp->hs_slots[i].conn == DP_NIL) {
			s = &dp->hs_slots[i];
			break;
		}
	if (!s) {
		dp->st.accept_refused++;
		return -E_NOMEM;
	}
	struct tls_hs *hs;
	int rc = tls_hs_start(dp->cfg.hs_env, hs_send, s, &hs);
	if (rc) {
		dp->st.accept_refused++;
		return rc;
	}
	s->dp = dp;
	s->conn = conn;
	s->src_ip = src_ip;
	s->stage_len = 0;
	s->deadline_ms = now_ms(dp) + dp->cfg.hs_timeout_ms;
	memset(c, 0, sizeof *c);
	c->reap_next = DP_NIL;
	c->hs = hs;
	c->state = DP_HS;
	dp->n_hs++;
	dp->n_open++;
	dp->st.accepted++;
	return 0;
}

struct data_ctx {
	struct dp *dp;
	struct dp_conn *c;
};

/* Plaintext of one record: straight into the broker. */
static int on_data(void *ctx, const uint8_t *data, size_t len)
{
	struct data_ctx *d = ctx;
	struct dp_conn *c = d->c;
	if (c->state != DP_OPEN)
		return -E_CLOSED;
	if (c->flags & DP_F_FWD) {
		int rc = dp_shard_data(d->dp->shard, c->fwd.home, conn_id(d->dp, c), c->fwd.gen, data, len);
		if (rc)
			d->dp->st.fwd_full++; /* cannot be carried: the connection ends */
		else /* len <= one record's plaintext: the overdraw stays far above INT32_MIN */
			c->fq.credit -= (int32_t)len;
		return rc;
	}
	if (!c->mq)
		return -E_CLOSED;
	return mqtt_conn_input(d->dp->broker, c->mq, data, len, now_ms(d->dp));
}

/* Received ciphertext (TCP's mutable view of the frame or of its hold slot): whole
 * records are decrypted in place there; only a record split across segments is copied,
 * into the record layer's reassembly buffer. */
static void records_in(struct dp *dp, struct dp_conn *c, uint8_t *data, size_t len)
{
	struct data_ctx d = { dp, c };
	int rc = tls_rec_input(&dp->renv, &c->rec, data, len, on_data, &d);
	if (c->state != DP_OPEN)
		return; /* the broker closed it (DISCONNECT, protocol error, ACL) */
	if (rc == -E_CLOSED) {
		dp->st.close_tls_alert++;
		say(dp, "dp: conn %u: peer ended TLS (alert %u)", conn_id(dp, c),
		     tls_rec_alert(&c->rec));
		mq_lose(dp, c);
		conn_begin_close(dp, c, true);
		return;
	}
	if (rc < 0) {
		dp->st.close_tls_error++;
		say(dp, "dp: conn %u: record error %s, alert %u", conn_id(dp, c), err_name(rc),
		     tls_rec_alert(&c->rec));
		mq_lose(dp, c);
		conn_begin_close(dp, c, true);
		return;
	}
	out_flush_tls(dp, c);
}

static void ip_str(char *buf, size_t len, uint32_t ip)
{
	(void)fmt_snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255u, (ip >> 8) & 255u,
			   ip & 255u);
}

/* The broker connection of a record just OPEN; on refusal the connection closes. */
static int mq_open(struct dp *dp, struct dp_conn *c, const struct tls_identity *id, const char *ip,
		   bool resumed)
{
	const char *how = resumed ? " resumed" : "";
	enum mqtt_id_kind kind = id->kind == TLS_ID_SERVICE ? MQTT_ID_SERVICE : MQTT_ID_DEVICE;
	uint32_t home = dp->shard ? dp_shard_home(dp->shard, kind, (const uint8_t *)id->name, id->len) : 0;
	int rc;
	if (dp->shard && home != dp_shard_self(dp->shard)) {
		/* The session lives on its home core: TCP and TLS stay here, plain MQTT goes
		 * there (invariant 6). */
		uint32_t gen = ++dp->next_gen;
		rc = dp_shard_open(dp->shard, home, conn_id(dp, c), gen, kind, (const uint8_t *)id->name,
				   id->len);
		if (rc == 0) {
			c->fwd.gen = gen;
			c->fwd.home = (uint16_t)home;
			c->fwd.pad = 0;
			c->fq.owed = 0;
			c->fq.credit = (int32_t)dp_shard_data_window(dp->shard);
			c->flags |= DP_F_FWD;
			dp->st.fwd_opened++;
			say(dp, "dp: conn %u from %s: %s identity %s (home core %u)%s", conn_id(dp, c), ip,
			    kind == MQTT_ID_SERVICE ? "service" : "device", id->name, home, how);
			return 0;
		}
	} else {
		rc = mqtt_conn_open(dp->broker, (const uint8_t *)id->name, id->len, kind, c, now_ms(dp),
				    &c->mq);
	}
	if (rc) {
		dp->st.mqtt_open_failed++;
		say_refused(dp, err_name(rc), id->name, ip, "dp: conn %u from %s: identity %s refused by the broker: %s",
			    conn_id(dp, c), ip, id->name, err_name(rc));
		c->mq = NULL;
		tls_rec_abort(&c->rec, TLS_ALERT_INTERNAL_ERROR);
		conn_begin_close(dp, c, true);
		return rc;
	}
	say(dp, "dp: conn %u from %s: %s identity %s%s", conn_id(dp, c), ip,
	    id->kind == TLS_ID_SERVICE ? "service" : "device", id->name, how);
	return 0;
}

/* A serial's key (lib/siphash over the DER integer without its leading zero bytes, as the
 * revocation list compares them); never 0 for a serial, 0 for none. */
static uint64_t dp_serial_key(const struct dp *dp, const uint8_t *serial, size_t len)
{
	while (len > 1 && serial[0] == 0) {
		serial++;
		len--;
	}
	if (!len)
		return 0;
	struct siphash_key k = siphash_key_from_bytes(dp->cfg.mqtt.hash_key);
	uint64_t h = siphash24(&k, serial, len);
	return h ? h : 1u;
}

uint32_t dp_revoke_serial(struct dp *dp, const uint8_t *serial, size_t len)
{
	uint64_t key = dp_serial_key(dp, serial, len);
	uint32_t n = 0;
	for (uint32_t i = 0; key && i < dp->cfg.max_conns; i++) {
		struct dp_conn *c = &dp->conns[i];
		if (c->state != DP_OPEN || c->serial_key != key || (c->flags & DP_F_GONE))
			continue;
		say_refused(dp, "certificate-revoked", NULL, NULL, "dp: conn %u: its certificate's serial was revoked: closed",
			    i);
		tls_rec_abort(&c->rec, TLS_ALERT_CERTIFICATE_REVOKED);
		conn_begin_close(dp, c, true); /* flushes the alert */
		n++;
	}
	return n;
}

uint32_t dp_kick_identity(struct dp *dp, const char *name, size_t len)
{
	return mqtt_broker_kick(dp->broker, (const uint8_t *)name, len);
}

/* The handshake finished: record layer, identity, broker connection. */
static void hs_complete(struct dp *dp, struct dp_conn *c, uint32_t src_ip)
{
	struct tls_identity id;
	char ip[16];
	ip_str(ip, sizeof ip, src_ip);
	bool resumed = tls_hs_resumed(c->hs);
	size_t serial_len;
	const uint8_t *serial = tls_hs_serial(c->hs, &serial_len);
	c->serial_key = dp_serial_key(dp, serial, serial_len);
	const char *why;
	int rc = tls_hs_finish(c->hs, &c->rec, &id, &why);
	c->hs = NULL; /* gone whatever the result */
	hs_slot_release(dp, c);
	c->state = DP_OPEN;
	dp->n_est++;
	if (rc) {
		dp->st.id_refused++;
		say_refused(dp, why, NULL, ip, "dp: conn %u from %s: identity refused: %s (%s)", conn_id(dp, c), ip, why,
			    err_name(rc));
		conn_begin_close(dp, c, true); /* flushes the pending fatal alert */
		return;
	}
	dp->st.hs_done++;
	(void)mq_open(dp, c, &id, ip, resumed);
	mem_wipe(&id, sizeof id);
}

static struct dp_hs_slot *slot_of(struct dp *dp, const struct dp_conn *c)
{
	uint32_t id = conn_id(dp, c);
	for (uint32_t i = 0; i < dp->cfg.hs_per_core; i++)
		if (dp->hs_slots[i].conn == id)
			return &dp->hs_slots[i];
	return NULL;
}

/* One handshake step on the bytes staged in slot s: mbedTLS consumes them all (or
 * fails); a finished handshake hands the bytes after its last message to the record
 * layer, in place in the stage. */
static void hs_step(struct dp *dp, struct dp_hs_slot *s)
{
	struct dp_conn *c = &dp->conns[s->conn];
	uint32_t conn = s->conn, src = s->src_ip, len = s->stage_len;
	uint8_t *data = s->stage;
	size_t used = 0;
	s->stage_len = 0;
	dp->st.hs_steps++;
	int rc = tls_hs_input(c->hs, data, len, &used);
	if (rc < 0) {
		char ip[16];
		ip_str(ip, sizeof ip, src);
		dp->st.hs_failed++;
		const char *why = tls_hs_refusal(c->hs);
		say_refused(dp, why, NULL, ip, "dp: conn %u from %s: handshake refused: %s (%s, mbedtls -0x%04x)", conn,
			    ip, why, err_name(rc), (unsigned)-tls_hs_error(c->hs));
		conn_begin_close(dp, c, false);
		return;
	}
	if (rc == 0) {
		dp->cfg.lower.window_update(dp->cfg.lower_ctx, conn); /* the stage is empty again */
		return;
	}
	/* hs_complete releases s; its stage is not reused before the next accept, which
	 * cannot happen inside this call. */
	hs_complete(dp, c, src);
	if (used < len && c->state == DP_OPEN)
		records_in(dp, c, data + used, len - used);
	if (c->state == DP_OPEN && !(c->flags & DP_F_GONE))
		dp->cfg.lower.window_update(dp->cfg.lower_ctx, conn); /* the open window */
}

static size_t up_recv(void *ctx, uint32_t conn, uint8_t *data, size_t len)
{
	struct dp *dp = ctx;
	if (conn >= dp->cfg.max_conns)
		return len;
	struct dp_conn *c = &dp->conns[conn];
	if (c->flags & DP_F_GONE)
		return len;
	if (!data) { /* peer FIN */
		if (c->state == DP_HS || c->state == DP_OPEN) {
			dp->st.close_peer_fin++;
			bool tls_open = c->state == DP_OPEN;
			mq_lose(dp, c);
			conn_begin_close(dp, c, tls_open);
		}
		return 0;
	}
	dp->st.bytes_in += len;
	if (c->state == DP_HS) {
		/* Staged for dp_poll (ADR-024); what does not fit is dropped and retransmitted
		 * (the advertised window is the stage's free space, so a peer that respects it
		 * never overflows). */
		struct dp_hs_slot *s = slot_of(dp, c);
		if (!s)
			return len;
		size_t take = MIN(len, (size_t)(dp->cfg.hs_stage_bytes - s->stage_len));
		memcpy(s->stage + s->stage_len, data, take);
		s->stage_len += (uint32_t)take;
		dp->st.hs_staged_bytes += take;
		if (take < len)
			dp->st.hs_stage_full++;
		return take;
	}
	if (c->state == DP_OPEN)
		records_in(dp, c, data, len);
	return len; /* CLOSING: dropped */
}

static uint32_t up_credit(void *ctx, uint32_t conn)
{
	struct dp *dp = ctx;
	if (conn >= dp->cfg.max_conns)
		return 0;
	const struct dp_conn *c = &dp->conns[conn];
	if (c->out_bytes >= dp->cfg.max_out_bytes)
		return 0; /* backpressure: the peer reads slower than it writes */
	if (c->state == DP_HS) {
		const struct dp_hs_slot *s = slot_of(dp, c);
		return s ? dp->cfg.hs_stage_bytes - s->stage_len : 0;
	}
	if ((c->flags & DP_F_FWD) && dp_shard_congested(dp->shard, c->fwd.home))
		return 0; /* the home core is behind: hold the peer (zero-window probes reopen) */
	if ((c->flags & DP_F_FWD) && c->fq.credit <= 0)
		return 0; /* the home core has not taken what was sent: its DCREDIT reopens */
	if (dp->store_shut)
		return 0; /* storage is behind: publishers wait, nothing acknowledged is dropped */
	if (dp->route_shut)
		return 0; /* another shard is behind: publishers wait before routed copies drop */
	if (dp->route_heavy && c->state == DP_OPEN && !(c->flags & DP_F_FWD) && c->mq &&
	    mqtt_conn_over_share(dp->broker, c->mq))
		return 0; /* ... and this one sent more than its share: it waits first, a light
			   * publisher's window stays open (a forwarded one: its home's credit) */
	if (c->flags & DP_F_FWD) /* no more than the home core's credit (TCP never shrinks) */
		return MIN(dp->cfg.rx_window, (uint32_t)c->fq.credit);
	return dp->cfg.rx_window;
}

static void up_sent(void *ctx, uint32_t conn, size_t acked)
{
	struct dp *dp = ctx;
	if (conn >= dp->cfg.max_conns)
		return;
	struct dp_conn *c = &dp->conns[conn];
	bool was_full = c->out_bytes >= dp->cfg.max_out_bytes;
	while (acked && c->out_head) {
		struct dp_chunk *k = c->out_head;
		size_t left = k->len - c->head_acked;
		size_t take = MIN(left, acked);
		c->head_acked += (uint32_t)take;
		c->out_bytes -= (uint32_t)take;
		acked -= take;
		if (c->head_acked == k->len) {
			c->out_head = k->next;
			if (!c->out_head)
				c->out_tail = NULL;
			c->head_acked = 0;
			dp_heap_free(dp, k, k->alloc_len);
			dp->st.out_chunks_live--;
		}
	}
	if (c->flags & DP_F_GONE)
		return;
	if (was_full && c->out_bytes < dp->cfg.max_out_bytes)
		dp->cfg.lower.window_update(dp->cfg.lower_ctx, conn);
	if (c->flags & DP_F_FWD) {
		fwd_credit(dp, c, c->out_bytes == 0);
		return;
	}
	if ((c->flags & DP_F_BLOCKED) && c->out_bytes <= dp->cfg.max_out_bytes / 2 && c->mq &&
	    c->state == DP_OPEN) {
		c->flags = (uint8_t)(c->flags & ~DP_F_BLOCKED);
		mqtt_conn_writable(dp->broker, c->mq);
	}
}

static void up_closed(void *ctx, uint32_t conn, enum tcp_close_reason reason)
{
	struct dp *dp = ctx;
	if (conn >= dp->cfg.max_conns)
		return;
	struct dp_conn *c = &dp->conns[conn];
	if (c->state == DP_FREE || (c->flags & DP_F_GONE))
		return;
	if (!(c->flags & DP_F_FIN)) {
		dp->st.close_tcp++;
		say(dp, "dp: conn %u: TCP ended (%s)", conn,
		     reason == TCP_CLOSE_RESET ? "reset" : reason == TCP_CLOSE_TIMEOUT ? "timeout" : "closed");
	}
	/* Mark only: the record may be in use further up this call stack. */
	c->flags |= DP_F_GONE;
	c->reap_next = dp->reap_head;
	dp->reap_head = conn;
}

const struct tcp_upper_ops dp_tcp_upper = {
	.admit = up_admit,
	.accept = up_accept,
	.recv = up_recv,
	.credit = up_credit,
	.sent = up_sent,
	.closed = up_closed,
};

/* ---- the lower ops over net/tcp ------------------------------------------------------ */

static int low_send(void *ctx, uint32_t conn, const struct tcp_iov *iov, size_t n_iov)
{
	return tcp_send(ctx, conn, iov, n_iov);
}
static int low_close(void *ctx, uint32_t conn)
{
	return tcp_close(ctx, conn);
}
static void low_abort(void *ctx, uint32_t conn)
{
	tcp_abort(ctx, conn);
}
static void low_window_update(void *ctx, uint32_t conn)
{
	tcp_window_update(ctx, conn);
}
const struct dp_lower_ops dp_lower_tcp = { low_send, low_close, low_abort, low_window_update };

/* ---- loop, life cycle, stats ------------------------------------------------------------ */

/* Up to hs_steps_per_poll staged handshakes, round-robin; returns how many still wait. */
static uint32_t hs_steps(struct dp *dp)
{
	uint32_t n = dp->cfg.hs_per_core, start = dp->hs_hand, done = 0, waiting = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct dp_hs_slot *s = &dp->hs_slots[(start + k) % n];
		if (s->conn == DP_NIL || !s->stage_len)
			continue;
		if (done == dp->cfg.hs_steps_per_poll) {
			waiting++;
			continue;
		}
		hs_step(dp, s);
		done++;
		dp->hs_hand = (start + k + 1) % n; /* the next call starts after it */
	}
	return waiting;
}

/* Congestion of storage or of the routes to other shards: shut every connection's window
 * (up_credit) while it lasts, so publishers are slowed before anything is dropped (for the
 * routes, the publishers over their fair share first: dp_shard_routing_level); once it
 * eases, tell TCP to reopen them at once rather than wait for zero-window probes. */
static void windows_poll(struct dp *dp)
{
	bool store = dp->store && dp_store_congested(dp->store);
	enum dp_shard_route_level lv = dp->shard ? dp_shard_routing_level(dp->shard) : DP_SHARD_ROUTE_CLEAR;
	bool route = lv == DP_SHARD_ROUTE_ALL, heavy = lv == DP_SHARD_ROUTE_HEAVY;
	if (store && !dp->store_shut)
		dp->st.store_windows_shut++;
	if (route && !dp->route_shut)
		dp->st.route_windows_shut++;
	if (heavy && !dp->route_heavy)
		dp->st.route_heavy_shut++;
	bool was = dp->store_shut || dp->route_shut, was_heavy = dp->route_heavy;
	dp->store_shut = store;
	dp->route_shut = route;
	dp->route_heavy = heavy;
	/* every window shut -> fewer, or the heavy ones' -> none: some may open again */
	if ((was && !store && !route) || (was_heavy && !heavy && !route && !store))
		for (uint32_t i = 0; i < dp->cfg.max_conns; i++) {
			const struct dp_conn *c = &dp->conns[i];
			if (c->state == DP_OPEN && !(c->flags & DP_F_GONE))
				dp->cfg.lower.window_update(dp->cfg.lower_ctx, i);
		}
}

uint32_t dp_poll(struct dp *dp)
{
	uint32_t backlogged = 0;
	if (dp->store)
		backlogged += dp_store_poll(dp->store);
	if (dp->shard) {
		dp_shard_now(dp->shard, now_ms(dp)); /* a subscriber's drops slow the heavy publishers */
		if (dp_serving(dp)) /* restored subscriptions are in: the summary is whole */
			dp_shard_interest_ready(dp->shard);
		backlogged += dp_shard_poll(dp->shard);
		for (uint32_t i = 0; i < dp->cfg.max_conns && dp->n_owe; i++)
			if (dp->conns[i].flags & DP_F_OWE)
				fwd_credit(dp, &dp->conns[i], true);
	}
	windows_poll(dp);
	reap_all(dp);
	uint32_t waiting = hs_steps(dp);
	reap_all(dp); /* handshakes that failed just now */
	uint64_t now = now_ms(dp);
	for (uint32_t i = 0; i < dp->cfg.hs_per_core; i++) {
		struct dp_hs_slot *s = &dp->hs_slots[i];
		if (s->conn == DP_NIL || now < s->deadline_ms)
			continue;
		struct dp_conn *c = &dp->conns[s->conn];
		char ip[16];
		ip_str(ip, sizeof ip, s->src_ip);
		dp->st.hs_timeouts++;
		say_refused(dp, "timeout", NULL, ip, "dp: conn %u from %s: handshake timed out", s->conn, ip);
		hs_end(dp, c); /* releases s */
		c->state = DP_CLOSING;
		if (!(c->flags & (DP_F_GONE | DP_F_FIN))) {
			c->flags |= DP_F_FIN;
			dp->cfg.lower.abort(dp->cfg.lower_ctx, conn_id(dp, c));
		}
	}
	reap_all(dp); /* aborts outside callbacks report closed() at once */
	if (now - dp->last_tick_ms >= 1000u) {
		dp->last_tick_ms = now;
		mqtt_broker_tick(dp->broker, now);
	}
	return waiting + backlogged;
}

static bool config_ok(const struct dp_config *g)
{
	return g->max_conns && g->port && g->hs_per_core && g->hs_per_source && g->hs_rate_per_s &&
	       g->hs_burst && g->hs_timeout_ms && g->hs_stage_bytes >= 512 && g->hs_stage_bytes <= 65536 &&
	       g->hs_steps_per_poll && g->max_out_bytes && g->rx_window &&
	       g->rec.key_cache_slots <= DP_KEY_CACHE_MAX && g->hs_env && g->heap.alloc &&
	       g->heap.free && g->heap.used && g->heap.avail && g->lower.send && g->lower.close &&
	       g->lower.abort && g->lower.window_update && g->now_ms && g->mqtt.max_conns >= 1;
}

/* The tables of both configurations with n connection slots. */
static size_t dp_tables_at(struct dp_config g, struct tcp_config tc, uint32_t n)
{
	dp_config_set_conns(&g, n);
	dp_tcp_config_set_conns(&tc, n);
	size_t d = dp_mem_size(&g), t = tcp_stack_mem_size(&tc);
	return d && t ? d + t : 0;
}

int dp_footprint(const struct dp_config *g, const struct tcp_config *tc, struct dp_footprint *out)
{
	memset(out, 0, sizeof *out);
	uint32_t n = g->max_conns, half = n / 2u;
	if (n < 2u || tc->max_conns != n)
		return -E_INVAL;
	size_t full = dp_tables_at(*g, *tc, n), part = dp_tables_at(*g, *tc, half);
	if (!full || !part || part > full)
		return -E_INVAL;
	out->slots = n;
	out->slot_bytes = (full - part) / (n - half);
	out->core_bytes = full - out->slot_bytes * n;
	return 0;
}

/* Interest summaries need a ring of held acknowledgements (a SUBACK waits for the other
 * shards) and answers owed per origin: the storage's sizes, storage or not. */
static bool interest_on(const struct dp_config *cfg)
{
	return cfg->shard.n_cores > 1 && cfg->shard.interest_slots && cfg->store.held_acks;
}

static uint32_t held_of(const struct dp_config *cfg)
{
	return cfg->store.on || interest_on(cfg) ? cfg->store.held_acks : 0;
}

static struct dp_shard_config shard_cfg(const struct dp_config *cfg)
{
	struct dp_shard_config sc = cfg->shard;
	sc.max_conns = cfg->max_conns;
	sc.max_packet = cfg->mqtt.max_packet;
	sc.max_done = held_of(cfg);
	if (!interest_on(cfg))
		sc.interest_slots = 0;
	return sc;
}

size_t dp_mem_size(const struct dp_config *cfg)
{
	if (!config_ok(cfg))
		return 0;
	struct mqtt_broker_config mc = cfg->mqtt;
	mc.max_held = held_of(cfg);
	size_t b = mqtt_broker_mem_size(&mc);
	if (!b)
		return 0;
	size_t sh = 0, st = 0;
	if (cfg->shard.n_cores > 1) {
		struct dp_shard_config sc = shard_cfg(cfg);
		if (!(sh = dp_shard_mem_size(&sc)))
			return 0;
	}
	if (cfg->store.on && !(st = dp_store_mem_size(&cfg->store)))
		return 0;
	return align8(sizeof(struct dp)) + align8((size_t)cfg->max_conns * sizeof(struct dp_conn)) +
	       align8((size_t)cfg->hs_per_core * sizeof(struct dp_hs_slot)) +
	       align8((size_t)cfg->hs_per_core * cfg->hs_stage_bytes) +
	       align8((size_t)cfg->rec.key_cache_slots * sizeof(struct tls_rec_key_slot)) + align8(b) +
	       align8(sh) + align8(st);
}

int dp_init(struct dp **out, void *mem, size_t len, const struct dp_config *cfg)
{
	*out = NULL;
	size_t need = dp_mem_size(cfg);
	if (!need)
		return -E_INVAL;
	if (len < need || ((uintptr_t)mem & 7u))
		return -E_NOMEM;
	uint8_t *p = mem;
	memset(p, 0, need);
	struct dp *dp = (struct dp *)(void *)p;
	p += align8(sizeof *dp);
	dp->cfg = *cfg;
	dp->conns = (struct dp_conn *)(void *)p;
	p += align8((size_t)cfg->max_conns * sizeof(struct dp_conn));
	dp->hs_slots = (struct dp_hs_slot *)(void *)p;
	p += align8((size_t)cfg->hs_per_core * sizeof(struct dp_hs_slot));
	uint8_t *stage = p;
	p += align8((size_t)cfg->hs_per_core * cfg->hs_stage_bytes);
	struct tls_rec_key_slot *kc = (struct tls_rec_key_slot *)(void *)p;
	p += align8((size_t)cfg->rec.key_cache_slots * sizeof(struct tls_rec_key_slot));
	for (uint32_t i = 0; i < cfg->max_conns; i++)
		dp->conns[i].reap_next = DP_NIL;
	for (uint32_t i = 0; i < cfg->hs_per_core; i++) {
		dp->hs_slots[i].conn = DP_NIL;
		dp->hs_slots[i].stage = stage + (size_t)i * cfg->hs_stage_bytes;
	}
	dp->reap_head = DP_NIL;

	dp->cfg.rec.ops = (struct tls_rec_ops){ rec_alloc, rec_free, dp };
	dp->cfg.rec.key_cache = cfg->rec.key_cache_slots ? kc : NULL;
	int rc = tls_rec_env_init(&dp->renv, &dp->cfg.rec);
	if (rc)
		return rc;
	struct mqtt_broker_ops bops = { .send = mq_send, .close = mq_close, .heap = { mq_alloc, mq_free, dp }, .ctx = dp };
	if (cfg->shard.n_cores > 1) {
		bops.fanout_room = mq_fanout_room;
		bops.fanout_busy = mq_fanout_busy;
		bops.fanout = mq_fanout;
		if (interest_on(cfg)) {
			bops.interest = mq_interest;
			bops.interest_sync = mq_interest_sync;
			if (cfg->shard.n_cores <= MQTT_SHARE_SHARDS) { /* a group's shards: 64 bits */
				bops.share = mq_share;
				bops.share_self = cfg->shard.self;
			}
		}
	}
	dp->cfg.mqtt.max_held = held_of(cfg);
	if (cfg->store.on) {
		size_t sl = align8(dp_store_mem_size(&cfg->store));
		rc = dp_store_init(&dp->store, p, sl, &cfg->store, cfg->log, cfg->log_ctx);
		if (rc)
			return rc;
		p += sl;
		bops.store = dp_store_broker_ops(dp->store);
	}
	if (!dp->cfg.mqtt.log) { /* the broker's refusal lines go where dp's lines go */
		dp->cfg.mqtt.log = cfg->log;
		dp->cfg.mqtt.log_ctx = cfg->log_ctx;
	}
	/* What the per-identity rate table adds to the broker, shared out over the slots. */
	struct mqtt_broker_config no_rates = cfg->mqtt;
	no_rates.rate_msgs_per_s = no_rates.rate_bytes_per_s = 0;
	no_rates.service_rate_msgs_per_s = no_rates.service_rate_bytes_per_s = 0;
	dp->rate_per_conn = (mqtt_broker_mem_size(&cfg->mqtt) - mqtt_broker_mem_size(&no_rates)) / cfg->max_conns;
	size_t blen = align8(mqtt_broker_mem_size(&dp->cfg.mqtt));
	rc = mqtt_broker_init(&dp->broker, p, blen, &dp->cfg.mqtt, &bops);
	if (rc)
		return rc;
	p += blen;
	if (dp->store)
		dp_store_bind(dp->store, dp->broker);
	if (cfg->shard.n_cores > 1) {
		struct dp_shard_config sc = shard_cfg(cfg);
		const struct dp_shard_conn_ops co = { fwd_out, fwd_close, sh_barrier, sh_done, fwd_data_credit, dp };
		rc = dp_shard_init(&dp->shard, p, dp_shard_mem_size(&sc), &sc, dp->broker, &co);
		if (rc) {
			mqtt_broker_fini(dp->broker);
			return rc;
		}
	}
	uint64_t now = now_ms(dp);
	dp->tokens_milli = (uint64_t)cfg->hs_burst * 1000u;
	dp->tokens_ms = now;
	dp->last_tick_ms = now;
	dp->st.heap_baseline = cfg->heap.used(cfg->heap.ctx);
	*out = dp;
	return 0;
}

void dp_set_lower_ctx(struct dp *dp, void *lower_ctx)
{
	dp->cfg.lower_ctx = lower_ctx;
}

void dp_fini(struct dp *dp)
{
	for (uint32_t i = 0; i < dp->cfg.max_conns; i++) {
		struct dp_conn *c = &dp->conns[i];
		if (c->state == DP_FREE || (c->flags & DP_F_GONE))
			continue;
		c->flags |= DP_F_FIN;
		dp->cfg.lower.abort(dp->cfg.lower_ctx, i);
	}
	reap_all(dp);
	/* Lower layers that did not report closed(): release anyway. */
	for (uint32_t i = 0; i < dp->cfg.max_conns; i++)
		if (dp->conns[i].state != DP_FREE) {
			dp->conns[i].flags |= DP_F_GONE;
			conn_reap(dp, &dp->conns[i]);
		}
	mqtt_broker_fini(dp->broker);
	tls_rec_env_fini(&dp->renv); /* every record is closed: wipe the key cache */
}

struct mqtt_broker *dp_broker(struct dp *dp)
{
	return dp->broker;
}

void dp_shards_off(struct dp *dp)
{
	dp->shard = NULL;
}

uint32_t dp_home_core(const struct dp *dp, bool service, const uint8_t *id, size_t len)
{
	return dp->shard ? dp_shard_home(dp->shard, service ? MQTT_ID_SERVICE : MQTT_ID_DEVICE, id, len) : 0;
}

bool dp_shard_stats(const struct dp *dp, struct dp_shard_stats *out)
{
	if (!dp->shard)
		return false;
	dp_shard_stats_get(dp->shard, out);
	return true;
}

size_t dp_conn_sizeof(void)
{
	return sizeof(struct dp_conn);
}

#ifndef URMQTT_KERNEL /* never in an image: it skips the handshake */
int dp_test_establish(struct dp *dp, uint32_t conn, const struct tls_rec *rec, const char *id,
		      bool service)
{
	struct tls_identity ident;
	size_t n = strnlen(id, sizeof ident.name);
	if (conn >= dp->cfg.max_conns || n == 0 || n >= sizeof ident.name)
		return -E_INVAL;
	struct dp_conn *c = &dp->conns[conn];
	if (c->state != DP_HS || (c->flags & DP_F_GONE))
		return -E_INVAL;
	memset(&ident, 0, sizeof ident);
	memcpy(ident.name, id, n);
	ident.len = (uint16_t)n;
	ident.kind = service ? TLS_ID_SERVICE : TLS_ID_DEVICE;
	hs_end(dp, c); /* as tls_hs_finish: the handshake context is gone */
	c->rec = *rec;
	c->state = DP_OPEN;
	dp->n_est++;
	return mq_open(dp, c, &ident, "test", false);
}
#endif

void dp_stats_get(const struct dp *dp, struct dp_stats *out)
{
	*out = dp->st;
	out->open = dp->n_open;
	out->handshaking = dp->n_hs;
	out->established = dp->n_est;
	out->heap_used = dp->cfg.heap.used(dp->cfg.heap.ctx);
	out->rx_copied = dp->renv.n_copied_in;
	out->key_hits = dp->renv.n_key_hits;
	out->key_misses = dp->renv.n_key_misses;
	out->key_evictions = dp->renv.n_key_evictions;
	out->rate_per_conn = dp->rate_per_conn;
	out->fixed_per_conn = sizeof(struct dp_conn) + tcp_cb_size() + tcp_slot_size() +
			      mqtt_sizeof_conn() + mqtt_sizeof_session() + dp->rate_per_conn;
	if (dp->shard) /* a session homed here may have its connection elsewhere */
		out->fixed_per_conn += dp_shard_bytes_per_proxy(dp->shard);
	out->heap_per_conn = 0;
	if (dp->n_open && out->heap_used > out->heap_baseline)
		out->heap_per_conn = (out->heap_used - out->heap_baseline) / dp->n_open;
	out->bytes_per_conn = out->heap_per_conn + out->fixed_per_conn;
}

int dp_check(const struct dp *dp)
{
	uint32_t n_open = 0, n_hs = 0, n_est = 0, n_slots = 0, n_owe = 0;
	for (uint32_t i = 0; i < dp->cfg.hs_per_core; i++)
		if (dp->hs_slots[i].conn != DP_NIL) {
			n_slots++;
			if (dp->hs_slots[i].conn >= dp->cfg.max_conns ||
			    dp->conns[dp->hs_slots[i].conn].hs == NULL)
				return -E_CORRUPT; /* 1 */
		}
	for (uint32_t i = 0; i < dp->cfg.max_conns; i++) {
		const struct dp_conn *c = &dp->conns[i];
		if (c->state == DP_FREE) {
			if (c->hs || c->mq || c->out_head || c->out_bytes || c->flags)
				return -E_CORRUPT; /* 1, 2, 3 */
			continue;
		}
		n_open++;
		n_hs += c->state == DP_HS;
		n_est += c->state == DP_OPEN;
		if (c->flags & DP_F_FWD) {
			if (!dp->shard || (c->state != DP_OPEN && c->state != DP_CLOSING))
				return -E_CORRUPT; /* 6 */
			n_owe += (c->flags & DP_F_OWE) != 0;
		} else {
			if ((c->state == DP_HS) != (c->hs != NULL))
				return -E_CORRUPT; /* 1 */
			if (c->mq && c->state != DP_OPEN)
				return -E_CORRUPT; /* 2 */
			if (c->flags & DP_F_OWE)
				return -E_CORRUPT; /* 6 */
		}
		uint64_t sum = 0;
		for (const struct dp_chunk *k = c->out_head; k; k = k->next)
			sum += k->len;
		if (sum - c->head_acked != c->out_bytes)
			return -E_CORRUPT; /* 3 */
	}
	uint32_t n_reap = 0;
	for (uint32_t r = dp->reap_head; r != DP_NIL; r = dp->conns[r].reap_next) {
		if (r >= dp->cfg.max_conns || !(dp->conns[r].flags & DP_F_GONE) ||
		    ++n_reap > dp->cfg.max_conns)
			return -E_CORRUPT; /* 4 */
	}
	uint32_t n_gone = 0;
	for (uint32_t i = 0; i < dp->cfg.max_conns; i++)
		n_gone += (dp->conns[i].flags & DP_F_GONE) != 0;
	if (n_gone != n_reap || n_open != dp->n_open || n_hs != dp->n_hs || n_hs != n_slots ||
	    n_est != dp->n_est || n_owe != dp->n_owe)
		return -E_CORRUPT; /* 4, 5, 6 */
	if (dp->store && dp_store_check(dp->store) != 0)
		return -E_CORRUPT;
	if (dp->shard)
		return dp_shard_check(dp->shard);
	return 0;
}
