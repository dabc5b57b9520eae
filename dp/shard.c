/* SPDX-License-Identifier: MIT
 *
 * Broker shards across cores (dp/shard.h): the home-core hash, the per-destination
 * backlogs, the proxy table of the home side and the reassembly of routed messages cut
 * into parts. It owns only memory the caller gave at init; it never allocates, never
 * parses MQTT (the broker does) and never touches another core's memory (the mesh ops
 * copy every message).
 *
 * Design note.
 *  A backlog is a byte ring of entries [kind u16][0 u16][len u32][len bytes], oldest
 *  first. Invariants (dp_shard_check):
 *   1. While a destination's backlog is not empty, every message to it is appended to the
 *      backlog (never sent around it), so messages reach a core in the order they were
 *      made; data messages (DATA, OUT, FANOUT) may fill at most data_cap of cap bytes,
 *      control messages (OPEN, LOST, CLOSE, CREDIT) the rest too; OUT and FANOUT, which
 *      the shard may decline, are accepted only into the lower half of data_cap.
 *   2. A proxy is in use exactly when the hash table names it; its (src, conn) is unique
 *      among proxies in use; mq != NULL unless CLOSE is still owed (PX_CLOSE_OWED).
 *   3. n_blocked counts proxies with PX_BLOCKED (the broker got -E_AGAIN and waits for
 *      mqtt_conn_writable, given when credit returns or the backlog drains).
 *   4. A part-way routed message from src has asm_len[src] < asm_total[src] <= max_packet.
 *   5. Every routed message that carried a ticket is answered exactly once: by storage
 *      (after a barrier this shard asked for), or by a DONE this shard owes (owed[src]);
 *      n_owed is the sum of the owed rings, each at most max_done long.
 *   6. Every LOST is sent once: at once, into a backlog, or from the lost ring (n_lost <=
 *      max_lost_owed entries from lost_head) by dp_shard_poll; only one beyond the ring is
 *      dropped (lost_dropped).
 *   7. A proxy's data_owed is DATA its broker took whose credit was not yet returned;
 *      n_data_owed counts proxies with PX_DATA_OWED (owed credit waiting for the backlogs
 *      to leave congestion, or for mesh room).
 *   8. Interest (ADR-055): icnt[k] counts this shard's subscriptions whose key maps to slot
 *      k (saturating: a full count never falls); every other shard was sent an add when it
 *      left 0 and a del when it came back to 0, so bit k of ibits[src] is 1 exactly while
 *      src's count is not 0 (or a del to us was lost: a false positive only). A routed
 *      message skips shard d only when d said ready, it is not retained, and no key of its
 *      topic has its bit set in ibits[d].
 *   9. Pressure (ADR-092): press_until_ms is the last press's time + press_ms, or
 *      earlier once relieved; press_local_seen never exceeds the broker's sub_full_dropped
 *      less press_remote_drops (both only grow); press_sent[d] is 0 (no PRESS_ON to d
 *      since the last relief) or the earliest time the next PRESS_ON may go to d;
 *      pressing: a subscriber here dropped copies and no transport took again since.
 *  Proxy states: FREE -OPEN-> LIVE -(LOST | broker close, CLOSE sent)-> FREE;
 *                LIVE -broker close, no room-> CLOSE_OWED -poll sends CLOSE-> FREE.
 */
#include "dp/shard.h"

#include "lib/align.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "lib/msgq.h"
#include "lib/siphash.h"

#define SH_NIL UINT32_MAX
#define SH_ENT_HDR MSGQ_HDR   /* backlog entry header */
#define SH_CONN_HDR 8u        /* conn u32, gen u32 */
/* total u32, tlen u16, qos u8, retain u8, ticket u32, props_len u16, expiry_s u32,
 * share_pick u32; then total bytes: the topic, the MQTT 5.0 properties, the payload */
#define SH_FAN_HDR 22u
#define SH_FAN_META 20u       /* a message in assembly: the header's fields after total */
#define SH_DONE_ENT 8u        /* DONE: ticket u32, ok u32 */
#define SH_MAX_CORES 256u
#define SH_ID_MAX 1024u

#define PX_USED 0x01u
#define PX_BLOCKED 0x02u
#define PX_CLOSE_OWED 0x04u
#define PX_DATA_OWED 0x08u
#define SH_DATA_WINDOW_MAX (1u << 24)

struct sh_proxy {
	struct mqtt_conn *mq;
	uint32_t conn, gen;
	int32_t credit; /* OUT bytes the home may still send (one packet may overdraw) */
	uint32_t data_owed; /* invariant 7 (a well-behaved peer: <= data_window + one record) */
	uint16_t src;
	uint8_t flags;
	uint8_t pad;
};

/* A LOST still to be said to home (invariant 6). */
struct sh_lost {
	uint32_t home, conn, gen;
};

/* Answers owed to one origin core for its tickets (a ring of ticket | ok << 32). */
struct sh_owed {
	uint64_t *e;
	uint32_t head, n;
};

struct dp_shard {
	struct dp_shard_config cfg;
	struct dp_shard_conn_ops conn;
	struct mqtt_broker *broker;
	struct siphash_key home_key;
	uint32_t cap, data_cap;     /* per backlog */
	struct msgq *bl;            /* [n_cores] */
	struct sh_owed *owed;       /* [n_cores], max_done entries each */
	uint32_t n_owed;            /* answers owed in all */
	struct sh_proxy *px;        /* [max_proxies] */
	uint32_t *bkt;              /* [mask + 1]: proxy index or SH_NIL */
	uint32_t mask;
	uint32_t px_free;           /* free list through px[].conn */
	uint32_t n_blocked, n_close_owed, n_data_owed;
	struct sh_lost *lost;       /* [max_lost_owed] ring (invariant 6) */
	uint32_t lost_head, n_lost;
	uint8_t *asm_buf;           /* [n_cores][max_packet] */
	uint32_t *asm_len, *asm_total;
	uint8_t *asm_meta;          /* [n_cores][SH_FAN_META]: the header from tlen on */
	uint8_t *scratch;           /* one message being assembled: payload_max bytes */
	uint16_t *icnt;             /* [interest_slots] invariant 8 */
	uint8_t *ibits;             /* [n_cores][interest_slots / 8] */
	uint8_t *iready;            /* [n_cores]: that shard's summary may be trusted */
	bool isync_pending;         /* a key appeared since the last sync */
	uint8_t iready_state;       /* 0 not yet, 1 to say, 2 said */
	uint64_t *press_sent;       /* [n_cores] invariant 9 */
	uint64_t press_until_ms, press_local_seen;
	uint64_t press_writable;    /* the broker's conns_writable at the last drop */
	bool pressing;              /* drops here since the last relief: PRESS off owed to origins */
	uint64_t now_ms;
	struct dp_shard_stats st;
};

static bool cfg_ok(const struct dp_shard_config *c)
{
	if (!(c->n_cores >= 1 && c->n_cores <= SH_MAX_CORES && c->self < c->n_cores &&
	      c->payload_max >= 64 && c->payload_max <= (1u << 20) && c->backlog_bytes <= (1u << 28) &&
	      c->out_window >= 1 && c->data_window >= 1 && c->data_window <= SH_DATA_WINDOW_MAX &&
	      c->max_proxies >= 1 && c->max_proxies <= (1u << 24) &&
	      c->max_conns >= 1 && c->max_packet >= 16 && c->max_packet <= (1u << 24) && c->mesh.send &&
	      c->max_done <= (1u << 24) && c->max_lost_owed <= (1u << 24) && c->press_ms <= 60000u))
		return false;
	if (c->interest_slots && (c->interest_slots < 64u || c->interest_slots > 65536u ||
				  (c->interest_slots & (c->interest_slots - 1u))))
		return false;
	/* A whole routed message of max_packet bytes must fit the shared half of a backlog's
	 * data part (bl_room_shared), or it could never be carried. */
	uint32_t per = c->payload_max - SH_FAN_HDR;
	uint64_t parts = (c->max_packet + per - 1u) / per;
	return c->backlog_bytes / 2u >= (uint64_t)c->max_packet + parts * (SH_ENT_HDR + SH_FAN_HDR);
}

/* The backlog: data_cap for data, a quarter more for control. */
static uint32_t backlog_cap(const struct dp_shard_config *c)
{
	return c->backlog_bytes + c->backlog_bytes / 4u;
}

size_t dp_shard_mem_size(const struct dp_shard_config *c)
{
	if (!c || !cfg_ok(c))
		return 0;
	size_t n = c->n_cores;
	return align8(sizeof(struct dp_shard)) + align8(n * sizeof(struct msgq)) +
	       align8(n * backlog_cap(c)) + align8(n * sizeof(struct sh_owed)) +
	       align8(n * (size_t)c->max_done * sizeof(uint64_t)) +
	       align8(c->max_proxies * sizeof(struct sh_proxy)) +
	       align8((size_t)pow2_at_least(2ull * c->max_proxies) * sizeof(uint32_t)) +
	       align8(n * c->max_packet) + 2u * align8(n * sizeof(uint32_t)) + align8(n * SH_FAN_META) +
	       align8(c->payload_max) + align8((size_t)c->max_lost_owed * sizeof(struct sh_lost)) +
	       align8((size_t)c->interest_slots * sizeof(uint16_t)) + align8(n * (c->interest_slots / 8u)) +
	       align8(n) + align8(n * sizeof(uint64_t));
}

int dp_shard_init(struct dp_shard **out, void *mem, size_t len, const struct dp_shard_config *cfg,
		  struct mqtt_broker *broker, const struct dp_shard_conn_ops *conn)
{
	*out = NULL;
	size_t need = dp_shard_mem_size(cfg);
	if (!need || !mem || len < need || ((uintptr_t)mem & 7u) || !broker || !conn ||
	    !conn->out || !conn->close || !conn->done || !conn->barrier || !conn->data_credit)
		return -E_INVAL;
	uint8_t *p = mem;
	memset(p, 0, need);
	struct dp_shard *sh = (struct dp_shard *)(void *)p;
	p += align8(sizeof *sh);
	sh->cfg = *cfg;
	sh->conn = *conn;
	sh->broker = broker;
	sh->home_key = siphash_key_from_bytes(cfg->home_key);
	sh->cap = backlog_cap(cfg);
	sh->data_cap = cfg->backlog_bytes;
	size_t n = cfg->n_cores;
	sh->bl = (struct msgq *)(void *)p;
	p += align8(n * sizeof(struct msgq));
	for (size_t i = 0; i < n; i++)
		msgq_init(&sh->bl[i], p + i * sh->cap, sh->cap);
	p += align8(n * sh->cap);
	sh->owed = (struct sh_owed *)(void *)p;
	p += align8(n * sizeof(struct sh_owed));
	for (size_t i = 0; i < n; i++)
		sh->owed[i].e = (uint64_t *)(void *)(p + i * (size_t)cfg->max_done * sizeof(uint64_t));
	p += align8(n * (size_t)cfg->max_done * sizeof(uint64_t));
	sh->px = (struct sh_proxy *)(void *)p;
	p += align8(cfg->max_proxies * sizeof(struct sh_proxy));
	sh->mask = (uint32_t)pow2_at_least(2ull * cfg->max_proxies) - 1u; /* <= 2^25: cfg_ok */
	sh->bkt = (uint32_t *)(void *)p;
	p += align8((size_t)(sh->mask + 1u) * sizeof(uint32_t));
	for (uint32_t i = 0; i <= sh->mask; i++)
		sh->bkt[i] = SH_NIL;
	for (uint32_t i = 0; i < cfg->max_proxies; i++)
		sh->px[i].conn = i + 1 < cfg->max_proxies ? i + 1 : SH_NIL;
	sh->px_free = 0;
	sh->asm_buf = p;
	p += align8(n * cfg->max_packet);
	sh->asm_len = (uint32_t *)(void *)p;
	p += align8(n * sizeof(uint32_t));
	sh->asm_total = (uint32_t *)(void *)p;
	p += align8(n * sizeof(uint32_t));
	sh->asm_meta = p;
	p += align8(n * SH_FAN_META);
	sh->scratch = p;
	p += align8(cfg->payload_max);
	sh->lost = (struct sh_lost *)(void *)p;
	p += align8((size_t)cfg->max_lost_owed * sizeof(struct sh_lost));
	sh->icnt = (uint16_t *)(void *)p;
	p += align8((size_t)cfg->interest_slots * sizeof(uint16_t));
	sh->ibits = p;
	p += align8(n * (cfg->interest_slots / 8u));
	sh->iready = p;
	p += align8(n);
	sh->press_sent = (uint64_t *)(void *)p;
	*out = sh;
	return 0;
}

static uint32_t home(const struct siphash_key *k, uint32_t n, enum mqtt_id_kind kind, const uint8_t *id, size_t len)
{
	if (n <= 1)
		return 0;
	/* The kind is folded in so a device and a service of the same name may differ. */
	uint64_t h = siphash24(k, id, len) ^ (kind == MQTT_ID_SERVICE ? 0x9e3779b97f4a7c15ull : 0);
	return (uint32_t)(h % n);
}

uint32_t dp_shard_home(const struct dp_shard *sh, enum mqtt_id_kind kind, const uint8_t *id,
		       size_t len)
{
	return home(&sh->home_key, sh->cfg.n_cores, kind, id, len);
}

uint32_t dp_shard_home_of(const uint8_t key[16], uint32_t n_cores, enum mqtt_id_kind kind, const uint8_t *id,
			  size_t len)
{
	struct siphash_key k = siphash_key_from_bytes(key);
	return home(&k, n_cores, kind, id, len);
}

uint32_t dp_shard_self(const struct dp_shard *sh)
{
	return sh->cfg.self;
}

uint32_t dp_shard_out_window(const struct dp_shard *sh)
{
	return sh->cfg.out_window;
}

uint32_t dp_shard_data_window(const struct dp_shard *sh)
{
	return sh->cfg.data_window;
}

/* ---- backlogs and sending ----------------------------------------------------------- */

static bool is_data_kind(uint16_t kind)
{
	return kind == DP_SHARD_DATA || kind == DP_SHARD_OUT || kind == DP_SHARD_FANOUT_HEAD ||
	       kind == DP_SHARD_FANOUT_MORE;
}

/* Backlog bytes a message of `len` bytes takes. */
static uint32_t ent_size(uint32_t len)
{
	return msgq_entry_size(len);
}

/* Could `bytes` more of class data/control be backlogged to dst? */
static bool bl_room(const struct dp_shard *sh, uint32_t dst, uint64_t bytes, bool data)
{
	return sh->bl[dst].used + bytes <= (data ? sh->data_cap : sh->cap);
}

/* Room for what the shard itself may decline (a routed message, OUT for a proxy): only
 * the lower half of the data part, so that these floods can never take the room that
 * forwarded DATA needs (invariant 1): DATA cannot be declined without ending its
 * connection, and its senders stop at half full (dp_shard_congested). */
static bool bl_room_shared(const struct dp_shard *sh, uint32_t dst, uint64_t bytes)
{
	return sh->bl[dst].used + bytes <= sh->data_cap / 2u;
}

/* The message in sh->scratch (len bytes) to dst: straight to the mesh when nothing is
 * waiting for dst, else behind what is (invariant 1). 0 or -E_NOMEM (no room: nothing
 * queued). The caller checked room for multi-part messages beforehand. */
static int emit(struct dp_shard *sh, uint32_t dst, uint16_t kind, uint32_t len)
{
	struct msgq *b = &sh->bl[dst];
	if (msgq_empty(b) && sh->cfg.mesh.send(sh->cfg.mesh.ctx, dst, kind, sh->scratch, len) == 0)
		return 0;
	if (!bl_room(sh, dst, ent_size(len), is_data_kind(kind)) ||
	    msgq_put(b, kind, sh->scratch, len, NULL, 0) != 0) {
		sh->st.backlog_full++;
		return -E_NOMEM;
	}
	sh->st.backlogged++;
	return 0;
}

/* A connection-addressed message: [conn][gen] + body (body may be NULL with n 0). */
static int emit_conn(struct dp_shard *sh, uint32_t dst, uint16_t kind, uint32_t conn, uint32_t gen,
		     const uint8_t *body, uint32_t n)
{
	st_le32(sh->scratch, conn);
	st_le32(sh->scratch + 4, gen);
	if (n)
		memcpy(sh->scratch + SH_CONN_HDR, body, n);
	return emit(sh, dst, kind, SH_CONN_HDR + n);
}

/* Backlog bytes for n bytes of stream cut into parts carrying `hdr` bytes of header each. */
static uint64_t parts_size(const struct dp_shard *sh, size_t n, uint32_t hdr)
{
	uint32_t per = sh->cfg.payload_max - hdr;
	uint64_t parts = n ? (n + per - 1u) / per : 1u;
	return (uint64_t)n + parts * (SH_ENT_HDR + hdr);
}

/* A stream (DATA or OUT) in parts; room checked first so a refusal sends nothing. */
static int emit_stream(struct dp_shard *sh, uint32_t dst, uint16_t kind, uint32_t conn,
		       uint32_t gen, const uint8_t *p, size_t n)
{
	if (!bl_room(sh, dst, parts_size(sh, n, SH_CONN_HDR), true)) {
		sh->st.backlog_full++;
		return -E_NOMEM;
	}
	uint32_t per = sh->cfg.payload_max - SH_CONN_HDR;
	do {
		uint32_t take = (uint32_t)MIN(n, (size_t)per);
		int rc = emit_conn(sh, dst, kind, conn, gen, p, take);
		if (rc)
			return rc; /* only when the mesh refused mid-way and room ran out */
		p += take;
		n -= take;
	} while (n);
	return 0;
}

/* ---- the connection side -------------------------------------------------------------- */

int dp_shard_open(struct dp_shard *sh, uint32_t home, uint32_t conn, uint32_t gen,
		  enum mqtt_id_kind kind, const uint8_t *id, size_t len)
{
	if (home >= sh->cfg.n_cores || home == sh->cfg.self || !len || len > SH_ID_MAX ||
	    SH_CONN_HDR + 4u + len > sh->cfg.payload_max)
		return -E_INVAL;
	st_le32(sh->scratch, conn);
	st_le32(sh->scratch + 4, gen);
	sh->scratch[8] = kind == MQTT_ID_SERVICE ? 1u : 0u;
	sh->scratch[9] = 0;
	st_le16(sh->scratch + 10, (uint16_t)len);
	memcpy(sh->scratch + 12, id, len);
	int rc = emit(sh, home, DP_SHARD_OPEN, (uint32_t)(12u + len));
	if (rc)
		return rc;
	sh->st.opens_out++;
	return 0;
}

int dp_shard_data(struct dp_shard *sh, uint32_t home, uint32_t conn, uint32_t gen, const uint8_t *p,
		  size_t n)
{
	if (home >= sh->cfg.n_cores || home == sh->cfg.self)
		return -E_INVAL;
	if (!n)
		return 0;
	int rc = emit_stream(sh, home, DP_SHARD_DATA, conn, gen, p, n);
	if (rc)
		return rc;
	sh->st.data_msgs++;
	sh->st.data_bytes += n;
	return 0;
}

int dp_shard_lost(struct dp_shard *sh, uint32_t home, uint32_t conn, uint32_t gen)
{
	if (home >= sh->cfg.n_cores || home == sh->cfg.self)
		return -E_INVAL;
	if (emit_conn(sh, home, DP_SHARD_LOST, conn, gen, NULL, 0) == 0) {
		sh->st.lost_out++;
		return 0;
	}
	if (sh->n_lost == sh->cfg.max_lost_owed) {
		sh->st.lost_dropped++;
		return -E_AGAIN;
	}
	sh->lost[(sh->lost_head + sh->n_lost) % sh->cfg.max_lost_owed] = (struct sh_lost){ home, conn, gen };
	sh->n_lost++;
	sh->st.lost_owed++;
	return 0;
}

/* The owed LOSTs, oldest first, each once there is room for it (dp_shard_poll). */
static void send_lost(struct dp_shard *sh)
{
	for (uint32_t k = sh->n_lost; k; k--) {
		struct sh_lost l = sh->lost[sh->lost_head];
		sh->lost_head = (sh->lost_head + 1u) % sh->cfg.max_lost_owed;
		sh->n_lost--;
		if (emit_conn(sh, l.home, DP_SHARD_LOST, l.conn, l.gen, NULL, 0) == 0) {
			sh->st.lost_out++;
			continue;
		}
		/* still no room: back at the tail (order among LOSTs does not matter) */
		sh->lost[(sh->lost_head + sh->n_lost) % sh->cfg.max_lost_owed] = l;
		sh->n_lost++;
	}
}

size_t dp_shard_bytes_per_proxy(const struct dp_shard *sh)
{
	return sizeof(struct sh_proxy) + (size_t)(sh->mask + 1u) * sizeof(uint32_t) / sh->cfg.max_proxies;
}

int dp_shard_credit(struct dp_shard *sh, uint32_t home, uint32_t conn, uint32_t gen, uint32_t bytes)
{
	if (home >= sh->cfg.n_cores || home == sh->cfg.self)
		return -E_INVAL;
	uint8_t b[4];
	st_le32(b, bytes);
	int rc = emit_conn(sh, home, DP_SHARD_CREDIT, conn, gen, b, 4);
	if (rc)
		return -E_AGAIN;
	sh->st.credit_out++;
	return 0;
}

bool dp_shard_congested(const struct dp_shard *sh, uint32_t home)
{
	return home < sh->cfg.n_cores && sh->bl[home].used >= sh->data_cap / 2u;
}

bool dp_shard_routing_congested(const struct dp_shard *sh)
{
	return dp_shard_routing_level(sh) != DP_SHARD_ROUTE_CLEAR;
}

/* The window rule (ADR-053, refined): from a quarter of a backlog's data part the
 * publishers over their fair share are no longer read (a light publisher's window stays
 * open), from three eighths nobody is; half is where copies are refused. Between the
 * quarter and three eighths the light publishers may add at most an eighth more before
 * everyone waits, so the order "slowed, then the heavy dropped, then all refused" holds. */
enum dp_shard_route_level dp_shard_routing_level(const struct dp_shard *sh)
{
	uint32_t most = 0;
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++)
		if (d != sh->cfg.self && sh->bl[d].used > most)
			most = sh->bl[d].used;
	if ((uint64_t)most * 8u >= (uint64_t)sh->data_cap * 3u)
		return DP_SHARD_ROUTE_ALL;
	if (most >= sh->data_cap / 4u || sh->now_ms < sh->press_until_ms)
		return DP_SHARD_ROUTE_HEAVY; /* ... or a subscriber dropped copies just now */
	return DP_SHARD_ROUTE_CLEAR;
}

/* A connected subscriber dropped copies: the publishers over their fair share wait
 * press_ms from now (invariant 9). */
static void press(struct dp_shard *sh, uint64_t now_ms)
{
	if (!sh->cfg.press_ms)
		return;
	if (now_ms >= sh->press_until_ms)
		sh->st.pressed++;
	sh->press_until_ms = now_ms + sh->cfg.press_ms;
}

/* PRESS body: op u8 (PRESS_ON: slow down for press_ms; PRESS_OFF: the subscriber that
 * dropped takes again, read on). */
#define SH_PRESS_LEN 1u
enum { PRESS_OFF = 0, PRESS_ON = 1 };

static int emit_press(struct dp_shard *sh, uint32_t dst, uint8_t op)
{
	sh->scratch[0] = op;
	return emit(sh, dst, DP_SHARD_PRESS, SH_PRESS_LEN); /* control class: may use the reserve */
}

/* A subscriber here dropped copies (local or routed here): remember what will say it is
 * over (the next transport that takes again). */
static void pressing(struct dp_shard *sh)
{
	sh->pressing = true;
	sh->press_writable = mqtt_broker_stats(sh->broker)->conns_writable;
}

/* The transport that refused takes again: the press ends here and at the origins told
 * (a PRESS_OFF lost or not said leaves them to their lease). */
static void relieve(struct dp_shard *sh)
{
	sh->pressing = false;
	if (sh->press_until_ms > sh->now_ms)
		sh->press_until_ms = sh->now_ms;
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++)
		if (d != sh->cfg.self && sh->press_sent[d] && emit_press(sh, d, PRESS_OFF) == 0) {
			sh->press_sent[d] = 0; /* the next drop says PRESS_ON at once */
			sh->st.press_out++;
		}
}

void dp_shard_now(struct dp_shard *sh, uint64_t now_ms)
{
	sh->now_ms = now_ms;
	if (!sh->cfg.press_ms)
		return;
	/* the drops of what this core routed itself (its publishers, its proxies): the
	 * broker's count less those of copies other shards routed here (route_in) */
	const struct mqtt_broker_stats *ms = mqtt_broker_stats(sh->broker);
	uint64_t local = ms->sub_full_dropped - sh->st.press_remote_drops;
	if (local != sh->press_local_seen) {
		sh->press_local_seen = local;
		press(sh, now_ms);
		pressing(sh);
	} else if (sh->pressing && ms->conns_writable != sh->press_writable) {
		relieve(sh);
	}
}

/* ---- the proxy table (home side) ------------------------------------------------------- */

static uint32_t px_hash(const struct dp_shard *sh, uint32_t src, uint32_t conn)
{
	uint64_t k = ((uint64_t)src << 32 | conn) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(k >> 32) & sh->mask;
}

static uint32_t px_find(const struct dp_shard *sh, uint32_t src, uint32_t conn)
{
	for (uint32_t i = px_hash(sh, src, conn), n = 0; n <= sh->mask; i = (i + 1) & sh->mask, n++) {
		uint32_t x = sh->bkt[i];
		if (x == SH_NIL)
			return SH_NIL;
		if (sh->px[x].src == src && sh->px[x].conn == conn)
			return x;
	}
	return SH_NIL;
}

static uint32_t px_new(struct dp_shard *sh, uint32_t src, uint32_t conn, uint32_t gen)
{
	uint32_t x = sh->px_free;
	if (x == SH_NIL)
		return SH_NIL;
	sh->px_free = sh->px[x].conn;
	struct sh_proxy *p = &sh->px[x];
	memset(p, 0, sizeof *p);
	p->src = (uint16_t)src;
	p->conn = conn;
	p->gen = gen;
	p->credit = (int32_t)MIN(sh->cfg.out_window, (uint32_t)INT32_MAX);
	p->flags = PX_USED;
	uint32_t i = px_hash(sh, src, conn);
	while (sh->bkt[i] != SH_NIL)
		i = (i + 1) & sh->mask;
	sh->bkt[i] = x;
	sh->st.proxies++;
	return x;
}

/* Remove from the table (backward-shift deletion keeps every probe chain whole). */
static void px_free(struct dp_shard *sh, uint32_t x)
{
	struct sh_proxy *p = &sh->px[x];
	uint32_t i = px_hash(sh, p->src, p->conn);
	while (sh->bkt[i] != x)
		i = (i + 1) & sh->mask;
	sh->bkt[i] = SH_NIL;
	for (uint32_t j = (i + 1) & sh->mask; sh->bkt[j] != SH_NIL; j = (j + 1) & sh->mask) {
		uint32_t y = sh->bkt[j];
		uint32_t h = px_hash(sh, sh->px[y].src, sh->px[y].conn);
		/* y may move to the hole i unless its home slot h lies cyclically in (i, j]. */
		bool stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
		if (!stays) {
			sh->bkt[i] = y;
			sh->bkt[j] = SH_NIL;
			i = j;
		}
	}
	if (p->flags & PX_BLOCKED)
		sh->n_blocked--;
	if (p->flags & PX_CLOSE_OWED)
		sh->n_close_owed--;
	if (p->flags & PX_DATA_OWED)
		sh->n_data_owed--;
	memset(p, 0, sizeof *p);
	p->conn = sh->px_free;
	sh->px_free = x;
	sh->st.proxies--;
}

bool dp_shard_is_proxy(const struct dp_shard *sh, const void *user)
{
	const struct sh_proxy *p = user;
	return p >= sh->px && p < sh->px + sh->cfg.max_proxies;
}

int dp_shard_proxy_send(struct dp_shard *sh, void *user, const uint8_t *buf, size_t len)
{
	struct sh_proxy *p = user;
	if (!(p->flags & PX_USED) || !p->mq)
		return -E_AGAIN;
	if (p->credit <= 0 || !bl_room_shared(sh, p->src, parts_size(sh, len, SH_CONN_HDR))) {
		if (!(p->flags & PX_BLOCKED)) {
			p->flags |= PX_BLOCKED;
			sh->n_blocked++;
		}
		return -E_AGAIN;
	}
	if (emit_stream(sh, p->src, DP_SHARD_OUT, p->conn, p->gen, buf, len))
		return -E_AGAIN; /* not reached: room was checked */
	p->credit -= (int32_t)MIN(len, (size_t)INT32_MAX);
	sh->st.out_msgs++;
	sh->st.out_bytes += len;
	return 0;
}

static bool send_close(struct dp_shard *sh, const struct sh_proxy *p)
{
	if (emit_conn(sh, p->src, DP_SHARD_CLOSE, p->conn, p->gen, NULL, 0))
		return false;
	sh->st.close_out++;
	return true;
}

void dp_shard_proxy_close(struct dp_shard *sh, void *user)
{
	struct sh_proxy *p = user;
	uint32_t x = (uint32_t)(p - sh->px);
	p->mq = NULL; /* the broker's handle is gone */
	if (send_close(sh, p)) {
		px_free(sh, x);
		return;
	}
	p->flags |= PX_CLOSE_OWED; /* dp_shard_poll sends it */
	sh->n_close_owed++;
}

/* ---- routing between shards ---------------------------------------------------------- */

/* ---- interest (invariant 8) ------------------------------------------------------------ */

static void owe(struct dp_shard *sh, uint32_t origin, uint32_t ticket, bool ok);

/* INTEREST body: op u8, pad u8, key u16, ticket u32. */
#define SH_INT_LEN 8u
enum { INT_DEL = 0, INT_ADD = 1, INT_SYNC = 2, INT_READY = 3 };
/* iready[src]: bit 0 src's summary may be trusted, bit 1 ours was said to src, and: */
#define IREADY_SHARE_REFUSED 4u /* a SHARE add from src not recorded since its last sync */

static int emit_interest(struct dp_shard *sh, uint32_t dst, uint8_t op, uint16_t key, uint32_t ticket)
{
	sh->scratch[0] = op;
	sh->scratch[1] = 0;
	st_le16(sh->scratch + 2, key);
	st_le32(sh->scratch + 4, ticket);
	return emit(sh, dst, DP_SHARD_INTEREST, SH_INT_LEN); /* control class: may use the reserve */
}

/* op to every other shard; 0, or -E_AGAIN when one could not be told (counted). */
static int tell_all(struct dp_shard *sh, uint8_t op, uint16_t key, uint32_t ticket)
{
	int rc = 0;
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++) {
		if (d == sh->cfg.self)
			continue;
		if (emit_interest(sh, d, op, key, ticket) == 0) {
			sh->st.interest_out++;
		} else {
			sh->st.interest_lost++;
			rc = -E_AGAIN;
		}
	}
	return rc;
}

int dp_shard_interest(struct dp_shard *sh, uint16_t key, bool add)
{
	if (!sh->cfg.interest_slots || sh->cfg.n_cores < 2)
		return 0;
	uint32_t k = key & (sh->cfg.interest_slots - 1u);
	uint16_t *c = &sh->icnt[k];
	if (add) {
		if (*c == UINT16_MAX)
			return 0; /* saturated: stays set for good */
		if (*c == 0) {
			/* An add some shard did not hear would let it skip us: refuse the
			 * subscription instead (the ones that heard it keep a false positive). */
			if (tell_all(sh, INT_ADD, (uint16_t)k, 0) != 0)
				return -E_AGAIN;
			sh->isync_pending = true;
		}
		(*c)++;
		return 0;
	}
	if (*c == 0 || *c == UINT16_MAX)
		return 0; /* never added here (a bug elsewhere), or saturated */
	if (--*c == 0)
		(void)tell_all(sh, INT_DEL, (uint16_t)k, 0); /* a lost del is a false positive */
	return 0;
}

int dp_shard_interest_sync(struct dp_shard *sh, uint32_t ticket)
{
	if (!sh->isync_pending || !ticket)
		return 0;
	sh->isync_pending = false;
	if (tell_all(sh, INT_SYNC, 0, ticket) != 0)
		return -E_AGAIN;
	return (int)(sh->cfg.n_cores - 1u);
}

void dp_shard_interest_ready(struct dp_shard *sh)
{
	if (sh->iready_state == 0)
		sh->iready_state = 1;
}

static void ready_poll(struct dp_shard *sh)
{
	bool all = true;
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++)
		if (d != sh->cfg.self && !(sh->iready[d] & 2u)) {
			if (emit_interest(sh, d, INT_READY, 0, 0) == 0)
				sh->iready[d] |= 2u; /* bit 1: said to d; bit 0: heard from d */
			else
				all = false;
		}
	if (all)
		sh->iready_state = 2;
}

static void recv_interest(struct dp_shard *sh, uint32_t src, const uint8_t *d, uint32_t len)
{
	if (len != SH_INT_LEN || d[0] > INT_READY || !sh->cfg.interest_slots ||
	    ld_le16(d + 2) >= sh->cfg.interest_slots) {
		sh->st.bad++;
		return;
	}
	sh->st.interest_in++;
	uint32_t k = ld_le16(d + 2);
	uint8_t *row = sh->ibits + (size_t)src * (sh->cfg.interest_slots / 8u);
	switch (d[0]) {
	case INT_ADD:
		row[k / 8u] = (uint8_t)(row[k / 8u] | (1u << (k % 8u)));
		break;
	case INT_DEL:
		row[k / 8u] = (uint8_t)(row[k / 8u] & ~(1u << (k % 8u)));
		break;
	case INT_SYNC:
		/* everything before it on this ring is applied: a shared subscription's group this
		 * shard could not record among them fails the SUBSCRIBE that waits for it */
		owe(sh, src, ld_le32(d + 4), !(sh->iready[src] & IREADY_SHARE_REFUSED));
		sh->iready[src] = (uint8_t)(sh->iready[src] & ~IREADY_SHARE_REFUSED);
		break;
	default:
		sh->iready[src] |= 1u;
		break;
	}
}

/* ---- shared subscription groups across shards (ADR-070) -------------------------------- */

/* SHARE body: op u8 (1 add, 0 del), pad u8, len u16, then the whole filter
 * "$share/<name>/<filter>" (len bytes). */
#define SH_SHARE_HDR 4u

/* op to every other shard; 0, or -E_AGAIN when one could not be told (counted). */
static int tell_share(struct dp_shard *sh, const uint8_t *filter, size_t len, bool add)
{
	int rc = 0;
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++) {
		if (d == sh->cfg.self)
			continue;
		sh->scratch[0] = add ? 1u : 0u;
		sh->scratch[1] = 0;
		st_le16(sh->scratch + 2, (uint16_t)len);
		memcpy(sh->scratch + SH_SHARE_HDR, filter, len);
		if (emit(sh, d, DP_SHARD_SHARE, SH_SHARE_HDR + (uint32_t)len) == 0) { /* control class */
			sh->st.share_out++;
		} else {
			sh->st.share_lost++;
			rc = -E_AGAIN;
		}
	}
	return rc;
}

int dp_shard_share(struct dp_shard *sh, const uint8_t *filter, size_t len, bool add)
{
	if (sh->cfg.n_cores < 2)
		return 0;
	if (len > sh->cfg.payload_max - SH_SHARE_HDR)
		return -E_RANGE;
	int rc = tell_share(sh, filter, len, add);
	if (add && rc != 0)
		(void)tell_share(sh, filter, len, false); /* the add is refused: taken back */
	else if (add)
		sh->isync_pending = true; /* the SUBACK waits for every shard to have applied it */
	return rc;
}

static void recv_share(struct dp_shard *sh, uint32_t src, const uint8_t *d, uint32_t len)
{
	if (len < SH_SHARE_HDR || d[0] > 1u || ld_le16(d + 2) != len - SH_SHARE_HDR) {
		sh->st.bad++;
		return;
	}
	sh->st.share_in++;
	int rc = mqtt_broker_share_remote(sh->broker, src, d + SH_SHARE_HDR, len - SH_SHARE_HDR, d[0] == 1u);
	if (rc == -E_INVAL)
		sh->st.bad++;
	else if (rc)
		sh->iready[src] |= IREADY_SHARE_REFUSED; /* answered at src's next sync */
}

/* Would a message on topic (its keys) matter to shard d? */
static bool wants(const struct dp_shard *sh, uint32_t d, bool retain, const uint16_t *keys, uint32_t n)
{
	if (!sh->cfg.interest_slots || retain || !(sh->iready[d] & 1u))
		return true;
	const uint8_t *row = sh->ibits + (size_t)d * (sh->cfg.interest_slots / 8u);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = keys[i] & (sh->cfg.interest_slots - 1u);
		if (row[k / 8u] & (1u << (k % 8u)))
			return true;
	}
	return false;
}

/* Would a routed message of `bytes` keep every link it takes within `limit` bytes of
 * backlog? */
static bool fanout_within(const struct dp_shard *sh, const uint8_t *topic, size_t tlen, size_t bytes, bool retain,
			  uint64_t limit)
{
	if (bytes > sh->cfg.max_packet)
		return false;
	uint16_t keys[MQTT_INTEREST_DEPTH + 1];
	uint32_t nk = sh->cfg.interest_slots ? mqtt_interest_topic_keys(topic, tlen, keys) : 0;
	uint64_t need = parts_size(sh, bytes, SH_FAN_HDR);
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++)
		if (d != sh->cfg.self && wants(sh, d, retain, keys, nk) && sh->bl[d].used + need > limit)
			return false;
	return true;
}

bool dp_shard_fanout_room(struct dp_shard *sh, const uint8_t *topic, size_t tlen, size_t bytes, bool retain)
{
	return fanout_within(sh, topic, tlen, bytes, retain, sh->data_cap / 2u); /* bl_room_shared */
}

bool dp_shard_fanout_busy(const struct dp_shard *sh, const uint8_t *topic, size_t tlen, size_t bytes, bool retain)
{
	/* Half way between where dp stops reading the heavy publishers (a quarter:
	 * dp_shard_routing_level) and where every copy is refused (half); also where dp stops
	 * reading everyone: publishers are slowed first, then the heavy ones' QoS 0 copies
	 * go, and the last eighth is left to the light ones. */
	return !fanout_within(sh, topic, tlen, bytes, retain, (uint64_t)sh->data_cap * 3u / 8u);
}

/* The message's body as fanout parts carry it: topic, properties, payload. */
struct fan_body {
	const uint8_t *seg[3];
	size_t len[3];
};

/* Copy n bytes of the body from offset off into w. */
static void body_copy(const struct fan_body *b, size_t off, uint8_t *w, size_t n)
{
	for (uint32_t i = 0; i < 3 && n; i++) {
		if (off >= b->len[i]) {
			off -= b->len[i];
			continue;
		}
		size_t t = MIN(n, b->len[i] - off);
		memcpy(w, b->seg[i] + off, t);
		w += t;
		n -= t;
		off = 0;
	}
}

static int fanout_one(struct dp_shard *sh, uint32_t dst, const struct mqtt_message *m, uint32_t ticket)
{
	const struct fan_body body = { { m->topic, m->props, m->payload },
				       { m->topic_len, m->props_len, m->payload_len } };
	size_t total = m->topic_len + m->props_len + m->payload_len, done = 0;
	bool first = true;
	while (first || done < total) {
		uint8_t *w = sh->scratch;
		uint32_t hdr = 0;
		if (first) {
			st_le32(w, (uint32_t)total);
			st_le16(w + 4, (uint16_t)m->topic_len);
			w[6] = m->qos;
			w[7] = m->retain ? 1u : 0u;
			st_le32(w + 8, ticket);
			st_le16(w + 12, (uint16_t)m->props_len);
			st_le32(w + 14, m->expiry_s);
			st_le32(w + 18, m->share_pick);
			hdr = SH_FAN_HDR;
		}
		uint32_t take = (uint32_t)MIN(total - done, (size_t)(sh->cfg.payload_max - hdr));
		body_copy(&body, done, w + hdr, take);
		int rc = emit(sh, dst, first ? DP_SHARD_FANOUT_HEAD : DP_SHARD_FANOUT_MORE, hdr + take);
		if (rc)
			return rc;
		done += take;
		first = false;
	}
	return 0;
}

uint32_t dp_shard_fanout(struct dp_shard *sh, const struct mqtt_message *m, uint32_t ticket)
{
	uint32_t answering = 0;
	const uint8_t *topic = m->topic;
	size_t tlen = m->topic_len;
	bool retain = m->retain;
	if (tlen > UINT16_MAX || m->props_len > MQTT_PROPS_MAX ||
	    tlen + m->props_len + m->payload_len > sh->cfg.max_packet) {
		sh->st.fanout_refused++;
		return 0;
	}
	uint16_t keys[MQTT_INTEREST_DEPTH + 1];
	uint32_t nk = sh->cfg.interest_slots ? mqtt_interest_topic_keys(topic, tlen, keys) : 0;
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++) {
		if (d == sh->cfg.self)
			continue;
		if (!wants(sh, d, retain, keys, nk)) {
			sh->st.fanout_skipped++;
			continue;
		}
		if (fanout_one(sh, d, m, ticket)) {
			sh->st.fanout_refused++; /* a will without room (a PUBLISH checked first) */
		} else {
			sh->st.fanout_out++;
			answering += ticket != 0;
		}
	}
	return answering;
}

/* ---- answers to another core's tickets --------------------------------------------------- */

/* Owe origin the answer (ticket, ok); sent by dp_shard_poll in DONE messages. The origin
 * holds at most max_done tickets (its held acknowledgements), so the ring never fills
 * unless a peer misbehaves (counted). */
static void owe(struct dp_shard *sh, uint32_t origin, uint32_t ticket, bool ok)
{
	struct sh_owed *o = &sh->owed[origin];
	if (o->n == sh->cfg.max_done) {
		sh->st.done_dropped++;
		return;
	}
	o->e[(o->head + o->n) % sh->cfg.max_done] = (uint64_t)ticket | (uint64_t)(ok ? 1u : 0u) << 32;
	o->n++;
	sh->n_owed++;
}

/* A message routed here with a ticket: its origin's acknowledgement waits for us. What
 * this shard recorded for it must be committed first (storage answers the origin after
 * the barrier); else the answer goes from here. */
static void answer(struct dp_shard *sh, uint32_t origin, uint32_t ticket, int routed, bool recorded)
{
	if (!ticket)
		return;
	if (recorded && sh->conn.barrier(sh->conn.ctx, origin, ticket) == 0)
		return;
	owe(sh, origin, ticket, routed == 0 && !recorded);
}

/* DONE messages to every origin we owe, as many answers per message as fit. */
static void send_owed(struct dp_shard *sh)
{
	uint32_t per = sh->cfg.payload_max / SH_DONE_ENT;
	for (uint32_t d = 0; d < sh->cfg.n_cores && sh->n_owed; d++) {
		struct sh_owed *o = &sh->owed[d];
		while (o->n) {
			uint32_t k = MIN(o->n, per);
			for (uint32_t i = 0; i < k; i++) {
				uint64_t e = o->e[(o->head + i) % sh->cfg.max_done];
				st_le32(sh->scratch + (size_t)i * SH_DONE_ENT, (uint32_t)e);
				st_le32(sh->scratch + (size_t)i * SH_DONE_ENT + 4, (uint32_t)(e >> 32));
			}
			if (emit(sh, d, DP_SHARD_DONE, k * SH_DONE_ENT))
				break; /* no room even for control: next poll */
			o->head = (o->head + k) % sh->cfg.max_done;
			o->n -= k;
			sh->n_owed -= k;
			sh->st.done_out += k;
		}
	}
}

static void recv_done(struct dp_shard *sh, const uint8_t *d, uint32_t len)
{
	if (!len || len % SH_DONE_ENT) {
		sh->st.bad++;
		return;
	}
	for (uint32_t i = 0; i < len; i += SH_DONE_ENT) {
		uint32_t ok = ld_le32(d + i + 4);
		if (ok > 1u) {
			sh->st.bad++;
			continue;
		}
		sh->st.done_in++;
		sh->conn.done(sh->conn.ctx, ld_le32(d + i), ok == 1u);
	}
}

/* ---- receiving ---------------------------------------------------------------------- */

static void recv_open(struct dp_shard *sh, uint32_t src, const uint8_t *d, uint32_t len)
{
	if (len < 12u) {
		sh->st.bad++;
		return;
	}
	uint32_t conn = ld_le32(d), gen = ld_le32(d + 4);
	uint16_t idl = ld_le16(d + 10);
	if (d[8] > 1u || !idl || 12u + idl != len) {
		sh->st.bad++;
		return;
	}
	enum mqtt_id_kind kind = d[8] ? MQTT_ID_SERVICE : MQTT_ID_DEVICE;
	sh->st.opens_in++;
	uint32_t old = px_find(sh, src, conn);
	if (old != SH_NIL) { /* cannot happen with an in-order mesh: end the old one */
		sh->st.stale++;
		if (sh->px[old].mq)
			mqtt_conn_lost(sh->broker, sh->px[old].mq, sh->now_ms);
		px_free(sh, old);
	}
	uint32_t x = px_new(sh, src, conn, gen);
	if (x == SH_NIL) {
		sh->st.opens_refused++;
		(void)emit_conn(sh, src, DP_SHARD_CLOSE, conn, gen, NULL, 0); /* no room: the peer times out */
		return;
	}
	struct sh_proxy *p = &sh->px[x];
	struct mqtt_conn *mq;
	if (mqtt_conn_open(sh->broker, d + 12, idl, kind, p, sh->now_ms, &mq) != 0) {
		sh->st.opens_refused++;
		if (!send_close(sh, p)) {
			p->flags |= PX_CLOSE_OWED;
			sh->n_close_owed++;
			return;
		}
		px_free(sh, x);
		return;
	}
	p->mq = mq;
}

/* The live proxy a conn message names, or NULL (stale: counted). */
static struct sh_proxy *px_of(struct dp_shard *sh, uint32_t src, uint32_t conn, uint32_t gen)
{
	uint32_t x = px_find(sh, src, conn);
	if (x == SH_NIL || sh->px[x].gen != gen || !sh->px[x].mq) {
		sh->st.stale++;
		return NULL;
	}
	return &sh->px[x];
}

/* Route a whole message from src, its body (topic, properties, payload: total bytes) and
 * its header from tlen on (meta, SH_FAN_META bytes, as the first part carried it); answer
 * its ticket. */
static void route_in(struct dp_shard *sh, uint32_t src, const uint8_t *body, uint32_t total, const uint8_t *meta)
{
	bool recorded = false;
	uint16_t tlen = ld_le16(meta), xlen = ld_le16(meta + 8);
	uint32_t ticket = ld_le32(meta + 4);
	struct mqtt_message m = { .topic = body, .topic_len = tlen, .props = body + tlen, .props_len = xlen,
				  .payload = body + tlen + xlen, .payload_len = total - tlen - xlen,
				  .expiry_s = ld_le32(meta + 10), .share_pick = ld_le32(meta + 14),
				  .qos = meta[2], .retain = meta[3] != 0 };
	sh->st.fanout_in++;
	uint64_t full = mqtt_broker_stats(sh->broker)->sub_full_dropped;
	int rc = mqtt_broker_route_remote(sh->broker, &m, &recorded);
	if (rc)
		sh->st.fanout_bad++;
	answer(sh, src, ticket, rc, recorded);
	uint64_t dropped = mqtt_broker_stats(sh->broker)->sub_full_dropped - full;
	if (!dropped)
		return;
	/* A subscriber here is behind src's publishers: src slows its heavy ones (at most one
	 * PRESS on per half press_ms per origin, control class). */
	sh->st.press_remote_drops += dropped;
	if (!sh->cfg.press_ms)
		return;
	pressing(sh);
	if (sh->press_sent[src] && sh->now_ms < sh->press_sent[src])
		return;
	if (emit_press(sh, src, PRESS_ON) == 0) {
		sh->st.press_out++;
		sh->press_sent[src] = sh->now_ms + sh->cfg.press_ms / 2u + 1u; /* never 0 */
	} else {
		sh->st.press_lost++; /* the next drop says it again */
	}
}

static void recv_fanout(struct dp_shard *sh, uint32_t src, uint16_t kind, const uint8_t *d, uint32_t len)
{
	uint8_t *meta = sh->asm_meta + (size_t)src * SH_FAN_META;
	uint8_t *buf = sh->asm_buf + (size_t)src * sh->cfg.max_packet;
	if (kind == DP_SHARD_FANOUT_HEAD) {
		if (len < SH_FAN_HDR) {
			sh->st.fanout_bad++;
			return;
		}
		uint32_t total = ld_le32(d);
		uint16_t tlen = ld_le16(d + 4), xlen = ld_le16(d + 12);
		uint32_t ticket = ld_le32(d + 8);
		if (total > sh->cfg.max_packet || (uint32_t)tlen + xlen > total || d[6] > 2u || d[7] > 1u ||
		    len - SH_FAN_HDR > total) {
			sh->st.fanout_bad++;
			sh->asm_total[src] = 0;
			answer(sh, src, ticket, -E_INVAL, false);
			return;
		}
		if (len - SH_FAN_HDR == total) { /* whole: routed from the message itself */
			sh->asm_total[src] = 0;
			route_in(sh, src, d + SH_FAN_HDR, total, d + 4);
			return;
		}
		memcpy(meta, d + 4, SH_FAN_META - 2u); /* tlen, qos, retain, ticket, props_len, expiry, pick */
		sh->asm_total[src] = total;
		sh->asm_len[src] = len - SH_FAN_HDR;
		memcpy(buf, d + SH_FAN_HDR, len - SH_FAN_HDR);
		return;
	}
	uint32_t have = sh->asm_len[src], total = sh->asm_total[src];
	if (!total || len > total - have) {
		sh->st.fanout_bad++;
		if (total) /* the message in assembly is lost: its ticket is answered "not stored" */
			answer(sh, src, ld_le32(meta + 4), -E_INVAL, false);
		sh->asm_total[src] = 0;
		return;
	}
	memcpy(buf + have, d, len);
	sh->asm_len[src] = have + len;
	if (have + len < total)
		return;
	sh->asm_total[src] = 0;
	route_in(sh, src, buf, total, meta);
}

/* Return a proxy's owed DATA credit now if the backlogs allow (invariant 7): not while
 * every reader is stopped (ALL), nor to a publisher over its fair share while the heavy
 * ones are (HEAVY); else keep it owed for dp_shard_poll. */
static void data_return(struct dp_shard *sh, struct sh_proxy *p, enum dp_shard_route_level lv)
{
	bool sent = false;
	if (lv == DP_SHARD_ROUTE_CLEAR ||
	    (lv == DP_SHARD_ROUTE_HEAVY && !(p->mq && mqtt_conn_over_share(sh->broker, p->mq)))) {
		uint8_t b[4];
		st_le32(b, p->data_owed);
		sent = emit_conn(sh, p->src, DP_SHARD_DCREDIT, p->conn, p->gen, b, 4) == 0;
	}
	if (sent) {
		sh->st.dcredit_out++;
		p->data_owed = 0;
		if (p->flags & PX_DATA_OWED) {
			p->flags = (uint8_t)(p->flags & ~PX_DATA_OWED);
			sh->n_data_owed--;
		}
	} else if (!(p->flags & PX_DATA_OWED)) {
		sh->st.dcredit_withheld++;
		p->flags |= PX_DATA_OWED;
		sh->n_data_owed++;
	}
}

/* The broker took n bytes of a proxy's DATA: owe them back, in quarters of the window (few
 * messages; the connection core still holds three quarters when one goes out). */
static void data_taken(struct dp_shard *sh, struct sh_proxy *p, uint32_t n)
{
	/* bounded by the connection core's credit (invariant 7); saturates for a peer that
	 * ignores it rather than wrap */
	p->data_owed = n > UINT32_MAX - p->data_owed ? UINT32_MAX : p->data_owed + n;
	if (p->data_owed >= sh->cfg.data_window / 4u + 1u || (p->flags & PX_DATA_OWED))
		data_return(sh, p, dp_shard_routing_level(sh));
}

void dp_shard_recv(struct dp_shard *sh, uint32_t src, uint16_t kind, const uint8_t *d, uint32_t len,
		   uint64_t now_ms)
{
	sh->now_ms = now_ms;
	if (src >= sh->cfg.n_cores || src == sh->cfg.self) {
		sh->st.bad++;
		return;
	}
	if (kind == DP_SHARD_OPEN) {
		recv_open(sh, src, d, len);
		return;
	}
	if (kind == DP_SHARD_FANOUT_HEAD || kind == DP_SHARD_FANOUT_MORE) {
		recv_fanout(sh, src, kind, d, len);
		return;
	}
	if (kind == DP_SHARD_DONE) {
		recv_done(sh, d, len);
		return;
	}
	if (kind == DP_SHARD_INTEREST) {
		recv_interest(sh, src, d, len);
		return;
	}
	if (kind == DP_SHARD_SHARE) {
		recv_share(sh, src, d, len);
		return;
	}
	if (kind == DP_SHARD_PRESS) {
		if (len != SH_PRESS_LEN || d[0] > PRESS_ON) {
			sh->st.bad++;
			return;
		}
		sh->st.press_in++;
		if (d[0] == PRESS_ON)
			press(sh, now_ms);
		else if (sh->press_until_ms > now_ms)
			sh->press_until_ms = now_ms; /* the subscriber takes again: read on */
		return;
	}
	if (len < SH_CONN_HDR) {
		sh->st.bad++;
		return;
	}
	uint32_t conn = ld_le32(d), gen = ld_le32(d + 4);
	const uint8_t *body = d + SH_CONN_HDR;
	uint32_t n = len - SH_CONN_HDR;
	struct sh_proxy *p;
	switch (kind) {
	case DP_SHARD_DATA:
		if ((p = px_of(sh, src, conn, gen)) == NULL)
			break;
		if (mqtt_conn_input(sh->broker, p->mq, body, n, now_ms) == 0 && (p->flags & PX_USED) &&
		    p->src == src && p->conn == conn && p->gen == gen)
			data_taken(sh, p, n); /* still the same proxy (-E_CLOSED freed it) */
		break;
	case DP_SHARD_LOST:
		sh->st.lost_in++;
		if ((p = px_of(sh, src, conn, gen)) != NULL) {
			struct mqtt_conn *mq = p->mq;
			p->mq = NULL;
			px_free(sh, (uint32_t)(p - sh->px));
			mqtt_conn_lost(sh->broker, mq, now_ms); /* the will, from the home core */
		}
		break;
	case DP_SHARD_CREDIT:
		sh->st.credit_in++;
		if (n != 4u) {
			sh->st.bad++;
			break;
		}
		if ((p = px_of(sh, src, conn, gen)) != NULL) {
			int64_t c = (int64_t)p->credit + ld_le32(body);
			p->credit = (int32_t)MIN(c, (int64_t)INT32_MAX);
			if ((p->flags & PX_BLOCKED) && p->credit > 0 && bl_room_shared(sh, src, sh->data_cap / 4u)) {
				p->flags = (uint8_t)(p->flags & ~PX_BLOCKED);
				sh->n_blocked--;
				mqtt_conn_writable(sh->broker, p->mq);
			}
		}
		break;
	case DP_SHARD_OUT:
		sh->st.out_msgs++;
		sh->conn.out(sh->conn.ctx, conn, gen, body, n);
		break;
	case DP_SHARD_CLOSE:
		sh->st.close_in++;
		sh->conn.close(sh->conn.ctx, conn, gen);
		break;
	case DP_SHARD_DCREDIT:
		sh->st.dcredit_in++;
		if (n != 4u) {
			sh->st.bad++;
			break;
		}
		sh->conn.data_credit(sh->conn.ctx, conn, gen, ld_le32(body));
		break;
	default:
		sh->st.bad++;
		break;
	}
}

/* ---- the loop ------------------------------------------------------------------------ */

static uint32_t flush(struct dp_shard *sh, uint32_t dst)
{
	struct msgq *b = &sh->bl[dst];
	uint16_t kind;
	uint32_t len;
	while (msgq_front(b, &kind, sh->scratch, sh->cfg.payload_max, &len) == 0) {
		if (sh->cfg.mesh.send(sh->cfg.mesh.ctx, dst, kind, sh->scratch, len) != 0)
			break;
		msgq_pop(b);
	}
	return b->n;
}

/* What is owed to another core (CLOSEs, DONE answers, LOSTs, DATA credit, the ready
 * message): each waits for backlog room or for the backlogs to leave congestion. */
static uint32_t owed_now(const struct dp_shard *sh)
{
	return sh->n_close_owed + sh->n_owed + sh->n_lost + sh->n_data_owed + (sh->iready_state == 1);
}

uint32_t dp_shard_poll(struct dp_shard *sh)
{
	uint32_t waiting = 0, owed_before = owed_now(sh);
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++)
		if (d != sh->cfg.self && sh->bl[d].used) {
			/* A backlog that sent nothing (no credit) is not work: reported, it kept the
			 * loop from halting, and a core spinning on it took the CPU its consumer
			 * needed (two vCPUs on one host CPU: issue 26). The core halts until the next
			 * interrupt: a message from any core, a frame, or its tick. */
			uint32_t before = sh->bl[d].n, left = flush(sh, d);
			if (left < before)
				waiting += left;
		}
	if (sh->n_owed)
		send_owed(sh);
	if (sh->n_lost)
		send_lost(sh);
	if (sh->iready_state == 1)
		ready_poll(sh);
	enum dp_shard_route_level lv = sh->n_data_owed ? dp_shard_routing_level(sh) : DP_SHARD_ROUTE_ALL;
	if (lv != DP_SHARD_ROUTE_ALL) /* HEAVY: the owed that are no longer over their share */
		for (uint32_t x = 0, seen = 0, owed = sh->n_data_owed; x < sh->cfg.max_proxies && seen < owed; x++)
			if (sh->px[x].flags & PX_DATA_OWED) {
				seen++;
				data_return(sh, &sh->px[x], lv);
			}
	if (sh->n_close_owed)
		for (uint32_t x = 0; x < sh->cfg.max_proxies && sh->n_close_owed; x++)
			if ((sh->px[x].flags & PX_CLOSE_OWED) && send_close(sh, &sh->px[x]))
				px_free(sh, x);
	/* Proxies that waited for backlog room towards their connection core. */
	if (sh->n_blocked)
		for (uint32_t x = 0; x < sh->cfg.max_proxies && sh->n_blocked; x++) {
			struct sh_proxy *p = &sh->px[x];
			if (!(p->flags & PX_BLOCKED) || !p->mq || p->credit <= 0 ||
			    !bl_room_shared(sh, p->src, sh->data_cap / 4u))
				continue;
			p->flags = (uint8_t)(p->flags & ~PX_BLOCKED);
			sh->n_blocked--;
			mqtt_conn_writable(sh->broker, p->mq);
		}
	/* The same rule for what is owed (issue 26): reported only when this pass paid some
	 * of it. Withheld DATA credit waits for the backlogs to drain, which needs mesh
	 * credit from their consumer; a core polling for it would spin on the CPU that
	 * consumer needs. It halts instead and is woken by the credit's return (xcore's
	 * credit wake-up), a message, a frame or its tick (the fair shares' decay). */
	uint32_t owed = owed_now(sh);
	return waiting + (owed < owed_before ? owed : 0);
}

void dp_shard_stats_get(const struct dp_shard *sh, struct dp_shard_stats *out)
{
	*out = sh->st;
	out->blocked = sh->n_blocked;
	out->queued = 0;
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++)
		out->queued += sh->bl[d].n;
}

int dp_shard_check(const struct dp_shard *sh)
{
	uint32_t used = 0, blocked = 0, owed = 0, data_owed = 0;
	for (uint32_t x = 0; x < sh->cfg.max_proxies; x++) {
		const struct sh_proxy *p = &sh->px[x];
		if (!(p->flags & PX_USED))
			continue;
		used++;
		if (px_find(sh, p->src, p->conn) != x)
			return -E_CORRUPT; /* 2 */
		if (!p->mq && !(p->flags & PX_CLOSE_OWED))
			return -E_CORRUPT; /* 2 */
		blocked += (p->flags & PX_BLOCKED) != 0;
		owed += (p->flags & PX_CLOSE_OWED) != 0;
		data_owed += (p->flags & PX_DATA_OWED) != 0;
	}
	uint32_t in_table = 0;
	for (uint32_t i = 0; i <= sh->mask; i++)
		if (sh->bkt[i] != SH_NIL) {
			if (sh->bkt[i] >= sh->cfg.max_proxies || !(sh->px[sh->bkt[i]].flags & PX_USED))
				return -E_CORRUPT; /* 2 */
			in_table++;
		}
	if (in_table != used || used != sh->st.proxies || blocked != sh->n_blocked ||
	    owed != sh->n_close_owed || data_owed != sh->n_data_owed)
		return -E_CORRUPT; /* 2, 3, 7 */
	for (uint32_t d = 0; d < sh->cfg.n_cores; d++) {
		if (msgq_check(&sh->bl[d]) != 0)
			return -E_CORRUPT; /* 1 */
		if (sh->owed[d].n > sh->cfg.max_done)
			return -E_CORRUPT; /* 5 */
		if (sh->asm_total[d] && (sh->asm_total[d] > sh->cfg.max_packet ||
					 sh->asm_len[d] >= sh->asm_total[d]))
			return -E_CORRUPT; /* 4 */
	}
	if (sh->n_lost > sh->cfg.max_lost_owed || (sh->n_lost && sh->lost_head >= sh->cfg.max_lost_owed))
		return -E_CORRUPT; /* 6 */
	if (sh->press_local_seen > mqtt_broker_stats(sh->broker)->sub_full_dropped - sh->st.press_remote_drops)
		return -E_CORRUPT; /* 9 */
	return 0;
}
