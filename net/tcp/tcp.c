/* SPDX-License-Identifier: MIT
 *
 * TCP stack setup, the connection table (open addressing keyed by SipHash of the
 * 4-tuple), SYN cookies, rate limiters and the upper-layer API (send, close, abort, poll).
 * Owns every control block and send reference in the caller's memory; never allocates,
 * never copies payload, never calls the upper layer except closed() on release.
 */
#include "lib/align.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "lib/bytes.h"
#include "net/tcp/tcp_int.h"

#define SLOT_EMPTY 0xffffffffu

void tcp_config_default(struct tcp_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->max_conns = 1024;
	cfg->max_send_refs = 4096;
	cfg->max_pending_acks = 256;
	cfg->mss = 1460;
	cfg->rcv_wscale = 7;
	cfg->init_cwnd_segs = 10;
	cfg->syn_wnd = 65535;
	cfg->tick_ms = 1;
	cfg->rto_init_ms = 1000;
	cfg->rto_min_ms = 200;
	cfg->rto_max_ms = 60000;
	cfg->max_retries = 8;
	cfg->delack_ms = 40;
	cfg->persist_min_ms = 500;
	cfg->fin_wait2_ms = 30000;
	cfg->cookie_period_ms = 64000;
	cfg->rst_per_s = 100;
	cfg->rst_burst = 20;
	cfg->challenge_per_s = 100;
	cfg->challenge_burst = 20;
	cfg->n_refused = 256;
	cfg->refused_ms = 5000;
	cfg->ooo_slots = 64;
	cfg->ooo_per_conn = 32;
	cfg->ooo_slot_size = 1460;
}

/* Exactly two slots per connection: the table is at most half full (invariant 3). */
static uint32_t table_slots(uint32_t max_conns)
{
	return 2u * max_conns;
}

static bool config_ok(const struct tcp_config *c)
{
	return c->max_conns >= 1 && c->max_conns <= (1u << 24) && c->max_send_refs >= 1 &&
	       c->max_send_refs < TCP_NIL && c->max_pending_acks >= 1 && c->mss >= 88 &&
	       c->rcv_wscale <= TCP_WS_MAX && c->init_cwnd_segs >= 1 && c->syn_wnd >= 1 &&
	       c->tick_ms >= 1 && c->rto_min_ms >= 1 && c->rto_min_ms <= c->rto_init_ms &&
	       c->rto_init_ms <= c->rto_max_ms && c->rto_max_ms <= 65535 && c->max_retries >= 1 &&
	       c->max_retries <= 15 && c->delack_ms >= 1 && c->delack_ms <= 500 &&
	       c->persist_min_ms >= 1 && c->fin_wait2_ms >= 1 && c->cookie_period_ms >= 1000 &&
	       c->n_refused >= 1 && c->refused_ms >= 1 && c->n_ports <= TCP_MAX_LISTEN &&
	       c->ooo_slots < (1u << 20) && (c->ooo_slots == 0 || (c->ooo_per_conn >= 1 &&
	       c->ooo_slot_size >= 64));
}

size_t tcp_stack_mem_size(const struct tcp_config *cfg)
{
	if (!config_ok(cfg))
		return 0;
	return align8(sizeof(struct tcp_stack)) + align8((size_t)cfg->max_conns * sizeof(struct tcp_cb)) +
	       align8((size_t)table_slots(cfg->max_conns) * sizeof(uint32_t)) +
	       align8((size_t)cfg->max_send_refs * sizeof(struct tcp_sref)) +
	       align8((size_t)cfg->max_pending_acks * sizeof(uint32_t)) +
	       align8((size_t)cfg->n_refused * sizeof(struct tcp_refused)) +
	       tcp_hold_pool_size(cfg);
}

size_t tcp_hold_pool_size(const struct tcp_config *cfg)
{
	return align8((size_t)cfg->ooo_slots * sizeof(struct tcp_hold)) +
	       align8((size_t)cfg->ooo_slots * cfg->ooo_slot_size);
}

static void *carve(uint8_t **p, size_t n)
{
	void *r = *p;
	*p += align8(n);
	return r;
}

static struct siphash_key random_key(struct tcp_stack *t)
{
	uint8_t b[16];
	t->port->random(t->port_ctx, b, sizeof b);
	struct siphash_key k = siphash_key_from_bytes(b);
	mem_wipe(b, sizeof b);
	return k;
}

uint32_t tcp_ms_to_ticks(const struct tcp_stack *t, uint32_t ms)
{
	uint32_t n = (ms + t->cfg.tick_ms - 1) / t->cfg.tick_ms;
	return n ? n : 1;
}

void tcp_clock(struct tcp_stack *t)
{
	uint64_t now = t->port->now_ms(t->port_ctx);
	if (now > t->now_ms)
		t->now_ms = now;
	t->now_tick = (uint32_t)(t->now_ms / t->cfg.tick_ms);
}

int tcp_stack_init(struct tcp_stack **out, void *mem, size_t mem_len, const struct tcp_config *cfg,
		   const struct tcp_port_ops *port, void *port_ctx, const struct tcp_upper_ops *upper,
		   void *upper_ctx)
{
	size_t need = tcp_stack_mem_size(cfg);
	if (!need || !port || !upper || !mem || ((uintptr_t)mem & 7u) || !port->tx_begin ||
	    !port->tx_send || !port->now_ms || !port->random || !upper->accept || !upper->recv ||
	    !upper->credit || !upper->closed)
		return -E_INVAL;
	if (mem_len < need)
		return -E_NOMEM;
	memset(mem, 0, need);
	uint8_t *p = mem;
	struct tcp_stack *t = carve(&p, sizeof *t);
	t->cfg = *cfg;
	t->port = port;
	t->port_ctx = port_ctx;
	t->up = upper;
	t->up_ctx = upper_ctx;
	t->cbs = carve(&p, (size_t)cfg->max_conns * sizeof(struct tcp_cb));
	uint32_t n_slots = table_slots(cfg->max_conns);
	t->table = carve(&p, (size_t)n_slots * sizeof(uint32_t));
	t->n_slots = n_slots;
	t->srefs = carve(&p, (size_t)cfg->max_send_refs * sizeof(struct tcp_sref));
	t->pending = carve(&p, (size_t)cfg->max_pending_acks * sizeof(uint32_t));
	t->refused = carve(&p, (size_t)cfg->n_refused * sizeof(struct tcp_refused));
	t->holds = carve(&p, (size_t)cfg->ooo_slots * sizeof(struct tcp_hold));
	t->hold_data = carve(&p, (size_t)cfg->ooo_slots * cfg->ooo_slot_size);
	for (uint32_t i = 0; i < cfg->ooo_slots; i++) {
		t->holds[i].owner = TCP_NIL;
		t->holds[i].seq = i + 1 < cfg->ooo_slots ? i + 1 : TCP_NIL; /* free link */
	}
	t->hold_free = cfg->ooo_slots ? 0 : TCP_NIL;
	for (uint32_t i = 0; i < n_slots; i++)
		t->table[i] = SLOT_EMPTY;
	for (uint32_t i = 0; i < cfg->max_conns; i++)
		t->cbs[i].sref_tail = i + 1 < cfg->max_conns ? i + 1 : TCP_NIL;
	t->free_head = 0;
	for (uint32_t i = 0; i < cfg->max_send_refs; i++)
		t->srefs[i].next = i + 1 < cfg->max_send_refs ? i + 1 : TCP_NIL;
	t->sref_free = 0;
	tcp_clock(t);
	tcp_tw_init(&t->wheel, t->cbs, sizeof(struct tcp_cb), offsetof(struct tcp_cb, tmr),
		    cfg->max_conns, t->now_tick);
	t->table_key = random_key(t);
	t->cookie_epoch = (uint32_t)(t->now_ms / cfg->cookie_period_ms);
	t->cookie_key[0] = random_key(t);
	t->cookie_key[1] = random_key(t);
	t->rst_tb.tokens = cfg->rst_burst;
	t->rst_tb.last_ms = t->now_ms;
	t->chal_tb.tokens = cfg->challenge_burst;
	t->chal_tb.last_ms = t->now_ms;
	*out = t;
	return 0;
}

void tcp_stack_set_local_ip(struct tcp_stack *t, uint32_t ip)
{
	t->cfg.local_ip = ip;
}

bool tcp_listening(const struct tcp_stack *t, uint16_t port)
{
	for (uint32_t i = 0; i < t->cfg.n_ports; i++)
		if (t->cfg.ports[i] == port && port != 0)
			return true;
	return false;
}

/* ---- rate limiting ---- */

bool tcp_bucket_take(struct tcp_stack *t, struct tcp_bucket *b, uint32_t rate, uint32_t burst)
{
	uint64_t elapsed = t->now_ms - b->last_ms;
	if (rate && elapsed) {
		uint64_t add = MIN(elapsed, 1000000000ull) * rate / 1000u;
		if (add) {
			uint64_t tok = b->tokens + add;
			b->tokens = (uint32_t)MIN(tok, (uint64_t)burst);
			b->last_ms = t->now_ms;
		}
	}
	if (!b->tokens)
		return false;
	b->tokens--;
	return true;
}

/* ---- connection table ---- */

uint32_t tcp_tuple_hash(const struct tcp_stack *t, uint32_t raddr, uint16_t rport, uint16_t lport)
{
	uint8_t k[8];
	st_be32(k, raddr);
	st_be16(k + 4, rport);
	st_be16(k + 6, lport);
	return (uint32_t)siphash24(&t->table_key, k, sizeof k);
}

static uint32_t slot_next(const struct tcp_stack *t, uint32_t i)
{
	return i + 1u == t->n_slots ? 0u : i + 1u;
}

static bool cb_matches(const struct tcp_cb *cb, uint32_t raddr, uint16_t rport, uint16_t lport)
{
	return cb->raddr == raddr && cb->rport == rport && cb->lport == lport;
}

struct tcp_cb *tcp_table_find(struct tcp_stack *t, uint32_t raddr, uint16_t rport, uint16_t lport)
{
	uint32_t i = tcp_tuple_hash(t, raddr, rport, lport) % t->n_slots;
	for (uint32_t n = 0; n < t->n_slots; n++, i = slot_next(t, i)) {
		uint32_t id = t->table[i];
		if (id == SLOT_EMPTY)
			return NULL;
		if (cb_matches(&t->cbs[id], raddr, rport, lport))
			return &t->cbs[id];
	}
	return NULL;
}

static uint32_t home_of(const struct tcp_stack *t, uint32_t id)
{
	const struct tcp_cb *cb = &t->cbs[id];
	return tcp_tuple_hash(t, cb->raddr, cb->rport, cb->lport) % t->n_slots;
}

static void table_remove(struct tcp_stack *t, struct tcp_cb *cb)
{
	uint32_t id = tcp_cb_id(t, cb);
	uint32_t i = home_of(t, id);
	while (t->table[i] != id)
		i = slot_next(t, i); /* present by invariant 3 */
	/* Backward-shift deletion keeps every probe chain free of holes (invariant 3). */
	uint32_t j = i;
	for (;;) {
		j = slot_next(t, j);
		if (t->table[j] == SLOT_EMPTY)
			break;
		uint32_t k = home_of(t, t->table[j]);
		bool movable = (j > i) ? (k <= i || k > j) : (k <= i && k > j);
		if (movable) {
			t->table[i] = t->table[j];
			i = j;
		}
	}
	t->table[i] = SLOT_EMPTY;
}

struct tcp_cb *tcp_cb_alloc(struct tcp_stack *t, uint32_t raddr, uint16_t rport, uint16_t lport)
{
	if (t->free_head == TCP_NIL)
		return NULL;
	uint32_t id = t->free_head;
	struct tcp_cb *cb = &t->cbs[id];
	t->free_head = cb->sref_tail;
	memset(cb, 0, sizeof *cb);
	tcp_tw_node_reset(&t->wheel, id);
	cb->raddr = raddr;
	cb->rport = rport;
	cb->lport = lport;
	cb->sref_tail = TCP_NIL;
	uint32_t i = tcp_tuple_hash(t, raddr, rport, lport) % t->n_slots;
	while (t->table[i] != SLOT_EMPTY)
		i = slot_next(t, i); /* terminates: at most half full */
	t->table[i] = id;
	t->n_open++;
	t->st.conns_opened++;
	return cb;
}

static void sref_free_all(struct tcp_stack *t, struct tcp_cb *cb)
{
	uint32_t tail = cb->sref_tail;
	if (tail == TCP_NIL)
		return;
	uint32_t head = t->srefs[tail].next, n = 1;
	for (uint32_t i = head; i != tail; i = t->srefs[i].next)
		n++;
	t->srefs[tail].next = t->sref_free; /* splice the whole circle onto the free list */
	t->sref_free = head;
	t->n_sref_used -= n;
	cb->sref_tail = TCP_NIL;
}

void tcp_cb_release(struct tcp_stack *t, struct tcp_cb *cb, enum tcp_close_reason reason, bool notify)
{
	if (cb->state == TCPS_FREE)
		return;
	if (cb->flags & TCP_F_BUSY) {
		unsigned r = notify ? (unsigned)reason : TCP_REASON_SILENT;
		cb->flags = (uint16_t)(cb->flags | TCP_F_DEAD | (r << TCP_F_REASON_SHIFT));
		return;
	}
	uint32_t id = tcp_cb_id(t, cb);
	table_remove(t, cb);
	tcp_tw_cancel(&t->wheel, id);
	sref_free_all(t, cb);
	tcp_hold_free_all(t, cb);
	cb->state = TCPS_FREE;
	cb->flags = 0;
	t->n_open--;
	t->st.conns_closed++;
	if (notify)
		t->up->closed(t->up_ctx, id, reason);
	cb->sref_tail = t->free_head;
	t->free_head = id;
}

bool tcp_cb_reap(struct tcp_stack *t, struct tcp_cb *cb)
{
	cb->flags = (uint16_t)(cb->flags & ~TCP_F_BUSY);
	if (!(cb->flags & TCP_F_DEAD))
		return false;
	unsigned rv = (cb->flags >> TCP_F_REASON_SHIFT) & 7u;
	bool notify = rv != TCP_REASON_SILENT;
	enum tcp_close_reason r = notify ? (enum tcp_close_reason)rv : TCP_CLOSE_REFUSED;
	cb->flags = (uint16_t)(cb->flags & ~(TCP_F_DEAD | (7u << TCP_F_REASON_SHIFT)));
	tcp_cb_release(t, cb, r, notify);
	return true;
}

/* ---- send references ---- */

void tcp_sref_consume(struct tcp_stack *t, struct tcp_cb *cb, uint32_t n)
{
	while (n && cb->sref_tail != TCP_NIL) {
		uint32_t head = t->srefs[cb->sref_tail].next;
		struct tcp_sref *r = &t->srefs[head];
		if (r->len > n) {
			r->base += n;
			r->len -= n;
			return;
		}
		n -= r->len;
		if (head == cb->sref_tail)
			cb->sref_tail = TCP_NIL;
		else
			t->srefs[cb->sref_tail].next = r->next;
		r->next = t->sref_free;
		r->base = NULL;
		r->len = 0;
		t->sref_free = head;
		t->n_sref_used--;
	}
}

/* ---- out-of-order hold ---- */

static uint8_t *hold_bytes(const struct tcp_stack *t, uint32_t slot)
{
	return t->hold_data + (size_t)slot * t->cfg.ooo_slot_size;
}

void tcp_hold_free(struct tcp_stack *t, struct tcp_cb *cb, uint32_t slot)
{
	struct tcp_hold *h = &t->holds[slot];
	h->owner = TCP_NIL;
	h->seq = t->hold_free;
	h->off = h->len = h->fin = 0;
	t->hold_free = slot;
	t->n_hold_used--;
	for (uint32_t i = 0; i < t->cfg.ooo_slots; i++)
		if (t->holds[i].owner == tcp_cb_id(t, cb))
			return;
	cb->flags = (uint16_t)(cb->flags & ~TCP_F_HOLD);
}

void tcp_hold_free_all(struct tcp_stack *t, struct tcp_cb *cb)
{
	if (!(cb->flags & TCP_F_HOLD))
		return;
	uint32_t id = tcp_cb_id(t, cb);
	for (uint32_t i = 0; i < t->cfg.ooo_slots; i++) {
		struct tcp_hold *h = &t->holds[i];
		if (h->owner != id)
			continue;
		t->st.ooo_discarded++;
		h->owner = TCP_NIL;
		h->seq = t->hold_free;
		h->off = h->len = h->fin = 0;
		t->hold_free = i;
		t->n_hold_used--;
	}
	cb->flags = (uint16_t)(cb->flags & ~TCP_F_HOLD);
}

bool tcp_hold_put(struct tcp_stack *t, struct tcp_cb *cb, uint32_t seq, const uint8_t *data,
		  uint32_t len, bool fin)
{
	uint32_t id = tcp_cb_id(t, cb), mine = 0;
	if (!t->cfg.ooo_slots || !len)
		return false; /* a bare FIN beyond a gap: the peer resends it */
	uint32_t keep = MIN(len, (uint32_t)t->cfg.ooo_slot_size);
	bool keep_fin = fin && keep == len;
	if (cb->flags & TCP_F_HOLD) {
		for (uint32_t i = 0; i < t->cfg.ooo_slots; i++) {
			const struct tcp_hold *h = &t->holds[i];
			if (h->owner != id)
				continue;
			mine++;
			/* Already held: same start, at least as much (a retransmission). */
			if (h->seq == seq && h->len >= keep && (h->fin || !keep_fin)) {
				t->st.ooo_dup++;
				return true;
			}
		}
	}
	if (mine >= t->cfg.ooo_per_conn) {
		t->st.ooo_conn_full++;
		return false;
	}
	if (t->hold_free == TCP_NIL) {
		t->st.ooo_pool_full++;
		return false;
	}
	uint32_t slot = t->hold_free;
	struct tcp_hold *h = &t->holds[slot];
	t->hold_free = h->seq;
	t->n_hold_used++;
	h->owner = id;
	h->seq = seq;
	h->off = 0;
	h->len = (uint16_t)keep;
	h->fin = keep_fin ? 1u : 0u;
	memcpy(hold_bytes(t, slot), data, keep);
	cb->flags = (uint16_t)(cb->flags | TCP_F_HOLD);
	t->st.ooo_held++;
	return true;
}

uint32_t tcp_hold_next(struct tcp_stack *t, struct tcp_cb *cb)
{
	uint32_t id = tcp_cb_id(t, cb), found = TCP_NIL;
	for (uint32_t i = 0; i < t->cfg.ooo_slots && (cb->flags & TCP_F_HOLD); i++) {
		struct tcp_hold *h = &t->holds[i];
		if (h->owner != id || seq_gt(h->seq, cb->rcv_nxt))
			continue;
		if (seq_leq(h->seq + h->len, cb->rcv_nxt))
			tcp_hold_free(t, cb, i); /* wholly old: the stream moved past it */
		else if (found == TCP_NIL)
			found = i;
	}
	return found;
}

uint8_t *tcp_hold_view(const struct tcp_stack *t, uint32_t slot)
{
	return hold_bytes(t, slot) + t->holds[slot].off;
}

/* ---- SYN cookies ---- */

/* MSS values a cookie can carry (3 bits). */
static const uint16_t cookie_mss[8] = { 536, 1200, 1300, 1360, 1400, 1440, 1452, 1460 };

static void cookie_rotate(struct tcp_stack *t, uint32_t epoch)
{
	if (epoch == t->cookie_epoch)
		return;
	if (epoch == t->cookie_epoch + 1) {
		t->cookie_key[epoch & 1] = random_key(t);
	} else {
		t->cookie_key[0] = random_key(t);
		t->cookie_key[1] = random_key(t);
	}
	t->cookie_epoch = epoch;
}

static uint32_t cookie_mac(const struct tcp_stack *t, uint32_t epoch, uint32_t saddr, uint32_t daddr,
			   uint16_t sport, uint16_t dport, uint32_t irs, uint8_t meta)
{
	uint8_t b[21];
	st_be32(b, saddr);
	st_be32(b + 4, daddr);
	st_be16(b + 8, sport);
	st_be16(b + 10, dport);
	st_be32(b + 12, irs);
	st_be32(b + 16, epoch);
	b[20] = meta;
	return (uint32_t)siphash24(&t->cookie_key[epoch & 1], b, sizeof b) & 0x7fffffu;
}

/* Layout: epoch low 2 bits | MSS index 3 | window scale 4 (15: none) | MAC 23. */
uint32_t tcp_cookie_make(struct tcp_stack *t, uint32_t saddr, uint32_t daddr, uint16_t sport,
			 uint16_t dport, uint32_t irs, uint16_t peer_mss, uint8_t peer_ws, uint16_t *mss)
{
	uint32_t epoch = (uint32_t)(t->now_ms / t->cfg.cookie_period_ms);
	cookie_rotate(t, epoch);
	uint16_t want = peer_mss ? peer_mss : TCP_MSS_DEFAULT;
	want = MIN(want, t->cfg.mss);
	uint8_t mi = 0;
	for (uint8_t i = 0; i < 8; i++)
		if (cookie_mss[i] <= want)
			mi = i;
	uint8_t ws = peer_ws == TCP_WS_NONE ? 15 : (uint8_t)MIN(peer_ws, TCP_WS_MAX);
	uint8_t meta = (uint8_t)(mi << 4 | ws);
	*mss = cookie_mss[mi];
	return (epoch & 3u) << 30 | (uint32_t)mi << 27 | (uint32_t)ws << 23 |
	       cookie_mac(t, epoch, saddr, daddr, sport, dport, irs, meta);
}

int tcp_cookie_check(struct tcp_stack *t, uint32_t saddr, uint32_t daddr, uint16_t sport, uint16_t dport,
		     uint32_t irs, uint32_t cookie, uint16_t *mss, uint8_t *ws)
{
	uint32_t now_epoch = (uint32_t)(t->now_ms / t->cfg.cookie_period_ms);
	cookie_rotate(t, now_epoch);
	uint32_t age = (now_epoch - (cookie >> 30)) & 3u;
	if (age > 1)
		return -E_TIMEOUT;
	uint32_t epoch = now_epoch - age;
	uint8_t mi = (uint8_t)(cookie >> 27 & 7u);
	uint8_t w = (uint8_t)(cookie >> 23 & 15u);
	if (w != 15 && w > TCP_WS_MAX)
		return -E_INVAL;
	uint32_t mac = cookie_mac(t, epoch, saddr, daddr, sport, dport, irs, (uint8_t)(mi << 4 | w));
	if (mac != (cookie & 0x7fffffu))
		return -E_INVAL;
	*mss = cookie_mss[mi];
	*ws = w == 15 ? TCP_WS_NONE : w;
	return 0;
}

/* ---- refused flows (admission memory) ---- */

bool tcp_refused_seen(struct tcp_stack *t, uint32_t hash)
{
	struct tcp_refused *r = &t->refused[hash % t->cfg.n_refused];
	return r->hash == hash && r->until_tick != 0 && seq_lt(t->now_tick, r->until_tick);
}

void tcp_refused_add(struct tcp_stack *t, uint32_t hash)
{
	struct tcp_refused *r = &t->refused[hash % t->cfg.n_refused];
	r->hash = hash;
	r->until_tick = t->now_tick + tcp_ms_to_ticks(t, t->cfg.refused_ms);
	if (!r->until_tick)
		r->until_tick = 1;
}

/* ---- upper-layer API ---- */

static struct tcp_cb *cb_get(struct tcp_stack *t, uint32_t conn)
{
	if (conn >= t->cfg.max_conns || t->cbs[conn].state == TCPS_FREE)
		return NULL;
	return &t->cbs[conn];
}

int tcp_send(struct tcp_stack *t, uint32_t conn, const struct tcp_iov *iov, size_t n_iov)
{
	struct tcp_cb *cb = cb_get(t, conn);
	if (!cb || (cb->flags & (TCP_F_CLOSE | TCP_F_DEAD)) ||
	    (cb->state != TCPS_ESTABLISHED && cb->state != TCPS_CLOSE_WAIT))
		return -E_CLOSED;
	/* Count what is needed first so a failure queues nothing. */
	size_t need = 0, total = 0;
	const uint8_t *end = NULL;
	if (cb->sref_tail != TCP_NIL) {
		const struct tcp_sref *tail = &t->srefs[cb->sref_tail];
		end = tail->base + tail->len;
	}
	for (size_t i = 0; i < n_iov; i++) {
		if (!iov[i].len)
			continue;
		if (iov[i].len > 0x40000000u || total + iov[i].len > 0x40000000u)
			return -E_RANGE;
		total += iov[i].len;
		if (iov[i].base != end)
			need++;
		end = iov[i].base + iov[i].len;
	}
	if ((uint64_t)(cb->snd_end - cb->snd_una) + total > 0x40000000u)
		return -E_RANGE;
	if (need > (size_t)(t->cfg.max_send_refs - t->n_sref_used)) {
		t->st.sref_exhausted++;
		return -E_NOMEM;
	}
	for (size_t i = 0; i < n_iov; i++) {
		if (!iov[i].len)
			continue;
		struct tcp_sref *tail = cb->sref_tail != TCP_NIL ? &t->srefs[cb->sref_tail] : NULL;
		if (tail && tail->base + tail->len == iov[i].base) {
			tail->len += (uint32_t)iov[i].len; /* contiguous: extend */
		} else {
			uint32_t id = t->sref_free;
			struct tcp_sref *r = &t->srefs[id];
			t->sref_free = r->next;
			t->n_sref_used++;
			r->base = iov[i].base;
			r->len = (uint32_t)iov[i].len;
			if (tail) {
				r->next = tail->next;
				tail->next = id;
			} else {
				r->next = id;
			}
			cb->sref_tail = id;
		}
		cb->snd_end += (uint32_t)iov[i].len;
	}
	/* Inside this connection's callback, tcp_input transmits after rcv_nxt is final so
	 * the data carries the right ACK. */
	if (!(cb->flags & TCP_F_BUSY)) {
		tcp_clock(t);
		tcp_output(t, cb, false);
	}
	return 0;
}

int tcp_close(struct tcp_stack *t, uint32_t conn)
{
	struct tcp_cb *cb = cb_get(t, conn);
	if (!cb || (cb->flags & TCP_F_DEAD))
		return -E_CLOSED;
	if (cb->flags & TCP_F_CLOSE)
		return 0;
	if (cb->state == TCPS_ESTABLISHED)
		cb->state = TCPS_FIN_WAIT_1;
	else if (cb->state == TCPS_CLOSE_WAIT)
		cb->state = TCPS_LAST_ACK;
	else
		return -E_CLOSED;
	cb->flags = (uint16_t)(cb->flags | TCP_F_CLOSE);
	if (!(cb->flags & TCP_F_BUSY)) {
		tcp_clock(t);
		tcp_output(t, cb, false);
	}
	return 0;
}

void tcp_abort(struct tcp_stack *t, uint32_t conn)
{
	struct tcp_cb *cb = cb_get(t, conn);
	if (!cb || (cb->flags & TCP_F_DEAD))
		return;
	tcp_clock(t);
	tcp_out_rst_cb(t, cb);
	tcp_cb_release(t, cb, TCP_CLOSE_ABORT, true);
}

void tcp_window_update(struct tcp_stack *t, uint32_t conn)
{
	struct tcp_cb *cb = cb_get(t, conn);
	if (!cb || (cb->flags & TCP_F_DEAD))
		return;
	if (cb->state != TCPS_ESTABLISHED && cb->state != TCPS_FIN_WAIT_1 && cb->state != TCPS_FIN_WAIT_2)
		return;
	uint32_t old_wnd = seq_gt(cb->rcv_adv, cb->rcv_nxt) ? cb->rcv_adv - cb->rcv_nxt : 0;
	uint32_t wnd = tcp_rcv_window(t, cb, false);
	/* Worth a segment when the window reopens or grows by two segments (RFC 9293 3.8.6.2.2). */
	if ((old_wnd < cb->mss && wnd >= cb->mss) || (old_wnd == 0 && wnd > 0) ||
	    wnd - old_wnd >= 2u * cb->mss)
		tcp_ack_owed(t, cb, true);
}

void tcp_poll(struct tcp_stack *t)
{
	tcp_clock(t);
	(void)tcp_tw_advance(&t->wheel, t->now_tick, tcp_timer_fire, t);
	uint32_t n = t->n_pending;
	for (uint32_t i = 0; i < n && i < t->n_pending; i++) {
		struct tcp_cb *cb = &t->cbs[t->pending[i]];
		if (cb->state == TCPS_FREE || !(cb->flags & TCP_F_PENDING))
			continue;
		cb->flags = (uint16_t)(cb->flags & ~TCP_F_PENDING);
		if (cb->flags & TCP_F_ACK_NOW)
			tcp_output(t, cb, true);
	}
	t->n_pending = 0;
}

const struct tcp_stats *tcp_stats(const struct tcp_stack *t)
{
	return &t->st;
}

uint32_t tcp_conn_count(const struct tcp_stack *t)
{
	return t->n_open;
}

uint32_t tcp_sref_count(const struct tcp_stack *t)
{
	return t->n_sref_used;
}

uint32_t tcp_hold_count(const struct tcp_stack *t)
{
	return t->n_hold_used;
}

size_t tcp_cb_size(void)
{
	return sizeof(struct tcp_cb);
}

size_t tcp_slot_size(void)
{
	return 2 * sizeof(uint32_t); /* table at most half full: two slots per connection */
}

int tcp_check_invariants(const struct tcp_stack *t)
{
	uint32_t n_open = 0, n_refs = 0, n_table = 0;
	if (tcp_tw_check(&t->wheel))
		return -E_CORRUPT;
	for (uint32_t i = 0; i < t->n_slots; i++) {
		uint32_t id = t->table[i];
		if (id == SLOT_EMPTY)
			continue;
		if (id >= t->cfg.max_conns || t->cbs[id].state == TCPS_FREE)
			return -E_CORRUPT;
		n_table++;
		/* invariant 3: reachable from home without crossing an empty slot */
		for (uint32_t j = home_of(t, id); j != i; j = slot_next(t, j))
			if (t->table[j] == SLOT_EMPTY)
				return -E_CORRUPT;
	}
	for (uint32_t id = 0; id < t->cfg.max_conns; id++) {
		const struct tcp_cb *cb = &t->cbs[id];
		if (cb->state == TCPS_FREE) {
			if (tcp_tw_armed(&t->wheel, id))
				return -E_CORRUPT;
			continue;
		}
		n_open++;
		bool fin = cb->flags & TCP_F_CLOSE;
		if (seq_gt(cb->snd_una, cb->snd_nxt) || seq_gt(cb->snd_nxt, cb->snd_max) ||
		    seq_gt(cb->snd_max, cb->snd_end + (fin ? 1u : 0u)))
			return -E_CORRUPT; /* invariant 1 */
		if ((cb->flags & TCP_F_RTO) && (cb->flags & TCP_F_PERSIST))
			return -E_CORRUPT; /* invariant 5 */
		if (cb->snd_una != cb->snd_max && !(cb->flags & (TCP_F_RTO | TCP_F_PERSIST)))
			return -E_CORRUPT;
		if ((cb->flags & (TCP_F_RTO | TCP_F_PERSIST)) && !tcp_tw_armed(&t->wheel, id))
			return -E_CORRUPT; /* a deadline without a timer would never fire */
		uint32_t bytes = 0, hops = 0;
		if (cb->sref_tail != TCP_NIL) {
			uint32_t i = cb->sref_tail;
			do {
				if (i >= t->cfg.max_send_refs || ++hops > t->cfg.max_send_refs)
					return -E_CORRUPT;
				bytes += t->srefs[i].len;
				i = t->srefs[i].next;
			} while (i != cb->sref_tail);
		}
		n_refs += hops;
		uint32_t una_data = seq_gt(cb->snd_una, cb->snd_end) ? cb->snd_end : cb->snd_una;
		if (bytes != cb->snd_end - una_data)
			return -E_CORRUPT; /* invariant 2 */
	}
	if (n_open != t->n_open || n_table != n_open || n_refs != t->n_sref_used ||
	    2u * n_open > t->n_slots)
		return -E_CORRUPT;
	uint32_t n_free = 0;
	for (uint32_t id = t->free_head; id != TCP_NIL; id = t->cbs[id].sref_tail) {
		if (id >= t->cfg.max_conns || t->cbs[id].state != TCPS_FREE || ++n_free > t->cfg.max_conns)
			return -E_CORRUPT; /* invariant 4 */
	}
	if (n_free + n_open != t->cfg.max_conns)
		return -E_CORRUPT;
	/* invariant 7 */
	uint32_t n_owned = 0, n_hfree = 0;
	for (uint32_t i = 0; i < t->cfg.ooo_slots; i++) {
		const struct tcp_hold *h = &t->holds[i];
		if (h->owner == TCP_NIL)
			continue;
		if (h->owner >= t->cfg.max_conns)
			return -E_CORRUPT;
		const struct tcp_cb *cb = &t->cbs[h->owner];
		if (cb->state == TCPS_FREE || !(cb->flags & TCP_F_HOLD) || h->len < 1 ||
		    h->len > t->cfg.ooo_slot_size || (uint32_t)h->off + h->len > t->cfg.ooo_slot_size ||
		    seq_leq(h->seq + h->len, cb->rcv_nxt))
			return -E_CORRUPT;
		n_owned++;
	}
	for (uint32_t id = 0; id < t->cfg.max_conns; id++) {
		const struct tcp_cb *cb = &t->cbs[id];
		uint32_t mine = 0;
		for (uint32_t i = 0; i < t->cfg.ooo_slots; i++)
			mine += t->holds[i].owner == id;
		if (mine > t->cfg.ooo_per_conn || (mine != 0) != ((cb->flags & TCP_F_HOLD) != 0))
			return -E_CORRUPT;
	}
	for (uint32_t i = t->hold_free; i != TCP_NIL; i = t->holds[i].seq)
		if (i >= t->cfg.ooo_slots || t->holds[i].owner != TCP_NIL || ++n_hfree > t->cfg.ooo_slots)
			return -E_CORRUPT;
	if (n_owned != t->n_hold_used || n_owned + n_hfree != t->cfg.ooo_slots)
		return -E_CORRUPT;
	return 0;
}
