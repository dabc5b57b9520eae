/* SPDX-License-Identifier: MIT
 *
 * Per-identity rate limits (see rate.h): the token buckets, their refill, the identity hash
 * and the recycling of idle buckets. Owns b->rates, b->rate_bkt, rate_hw and rate_hand
 * (the broker lays them out). Must never allocate, never scan more than RATE_EVICT_SCAN
 * entries per new identity, and never recycle a bucket that holds a debt: an identity that
 * reconnects must find its bucket as it left it.
 *
 * Design note: a table entry
 *   unused (index >= rate_hw) --mqtt_rate_acquire, table not full--> IN USE (refs 1)
 *   IN USE --mqtt_rate_acquire (same kind and identity)--> refs + 1
 *   IN USE --mqtt_rate_release--> refs - 1 (refs 0: IDLE, still hashed)
 *   IDLE --mqtt_rate_acquire (same kind and identity)--> IN USE
 *   IDLE and full for its kind --rate_evict, for a new identity--> IN USE under the new
 *     key and kind
 * Invariants (broker invariant 6, mqtt_rate_check): 1. a bucket's refs equals the
 * connections naming it, and each of them is of the bucket's kind (service bit); 2. every
 * entry below rate_hw is in the identity hash exactly once; 3. rate_hw <= rate_cap
 * (max_conns + rate_idle_ids); 4. an UP connection's bucket, when limits are on, is below
 * rate_hw; 5. no bucket holds more tokens than its kind's burst.
 */
#include "mqtt/rate.h"

#include "lib/err.h"
#include "mqtt/mqtt_int.h"

#define RATE_EVICT_SCAN 64u /* entries looked at per new identity when the table is full */

/* refs counts connections (at most max_conns, which cfg_valid keeps below MQTT_NIL / 2),
 * so refs:31 cannot overflow; mqtt_rate_acquire still refuses at the bound. */
STATIC_ASSERT(MQTT_NIL / 2 <= MQTT_RATE_REFS_MAX, "max_conns fits refs:31");

/* One kind's limits (0 rate: that dimension unlimited). */
struct rate_lim {
	uint32_t msgs_per_s, burst_msgs, bytes_per_s, burst_bytes;
};

static struct rate_lim rate_lim(const struct mqtt_broker_config *g, bool service)
{
	if (service)
		return (struct rate_lim){ g->service_rate_msgs_per_s, g->service_rate_burst_msgs,
					  g->service_rate_bytes_per_s, g->service_rate_burst_bytes };
	return (struct rate_lim){ g->rate_msgs_per_s, g->rate_burst_msgs, g->rate_bytes_per_s,
				  g->rate_burst_bytes };
}

bool mqtt_rate_on(const struct mqtt_broker_config *g)
{
	return g->rate_msgs_per_s || g->rate_bytes_per_s || g->service_rate_msgs_per_s ||
	       g->service_rate_bytes_per_s;
}

/* Byte tokens are whole bytes, so the clock advances only by the time those whole bytes
 * took (rounded up): the remainder carries into the next refill instead of being lost,
 * which at low byte rates and frequent PUBLISHes would starve the bucket. Message tokens
 * (milli-messages) are credited for the same time, exactly. A full byte bucket has no use
 * for the leftover time, so then the clock goes all the way to now. The rates are the
 * bucket's kind's. */
static void rate_refill(const struct mqtt_broker *b, struct mqtt_rate *r, uint64_t now)
{
	const struct rate_lim l = rate_lim(&b->cfg, r->service);
	/* capped: el * rate stays below 2^64, and 49 days refill any bucket that matters */
	uint64_t el = MIN(now > r->ms ? now - r->ms : 0, (uint64_t)UINT32_MAX);
	uint64_t used = el;
	if (l.bytes_per_s) {
		uint64_t add = el * l.bytes_per_s / 1000u;
		uint64_t t = r->bytes + add;
		if (t >= l.burst_bytes) {
			r->bytes = l.burst_bytes;
		} else {
			r->bytes = (uint32_t)t;
			used = MIN(el, (add * 1000u + l.bytes_per_s - 1u) / l.bytes_per_s);
		}
	}
	if (l.msgs_per_s) {
		uint64_t t = r->msgs + used * l.msgs_per_s; /* milli-messages */
		r->msgs = (uint32_t)MIN(t, (uint64_t)l.burst_msgs * 1000u);
	}
	r->ms = used == el ? MAX(now, r->ms) : r->ms + used;
}

/* Equal to a fresh bucket of its kind? */
static bool rate_full(const struct mqtt_broker *b, const struct mqtt_rate *r)
{
	const struct rate_lim l = rate_lim(&b->cfg, r->service);
	return (!l.msgs_per_s || r->msgs == l.burst_msgs * 1000u) &&
	       (!l.bytes_per_s || r->bytes == l.burst_bytes);
}

static uint64_t rate_key(const struct mqtt_broker *b, bool service, const uint8_t *id,
			 size_t len)
{
	/* the kind is folded in so a device and a service of the same name hash apart (the
	 * lookup compares the kind too, so they never share a bucket even on a collision) */
	return siphash24(&b->key, id, len) ^ (service ? 0x9e3779b97f4a7c15ull : 0u);
}

/* An unused bucket, full for its kind, to recycle, taken off its hash chain; MQTT_NIL if
 * the bounded sweep found none (the hand moves on, so the next attempt looks further). */
static uint32_t rate_evict(struct mqtt_broker *b)
{
	for (uint32_t k = 0; k < RATE_EVICT_SCAN && k < b->rate_cap; k++) {
		uint32_t i = b->rate_hand;
		b->rate_hand = i + 1 == b->rate_cap ? 0 : i + 1;
		struct mqtt_rate *r = &b->rates[i];
		if (r->refs)
			continue;
		rate_refill(b, r, b->now_ms);
		if (!rate_full(b, r))
			continue; /* holds a debt: keeping it is the point */
		uint32_t *pp = &b->rate_bkt[(uint32_t)r->key & b->rate_mask];
		while (*pp != i)
			pp = &b->rates[*pp].hash_next;
		*pp = r->hash_next;
		b->st.rate_ids_evicted++;
		return i;
	}
	b->st.rate_ids_full++;
	return MQTT_NIL;
}

uint32_t mqtt_rate_acquire(struct mqtt_broker *b, bool service, const uint8_t *id, size_t len)
{
	const struct rate_lim l = rate_lim(&b->cfg, service);
	uint64_t key = rate_key(b, service, id, len);
	uint32_t h = (uint32_t)key & b->rate_mask;
	for (uint32_t i = b->rate_bkt[h]; i != MQTT_NIL; i = b->rates[i].hash_next) {
		struct mqtt_rate *r = &b->rates[i];
		if (r->key != key || r->service != service)
			continue;
		if (r->refs >= MQTT_RATE_REFS_MAX) { /* unreachable: refs <= max_conns */
			b->st.rate_ids_full++;
			return MQTT_NIL;
		}
		r->refs++;
		return i;
	}
	uint32_t i = b->rate_hw < b->rate_cap ? b->rate_hw++ : rate_evict(b);
	if (i == MQTT_NIL)
		return MQTT_NIL;
	struct mqtt_rate *r = &b->rates[i];
	r->key = key;
	r->ms = b->now_ms;
	r->msgs = l.burst_msgs * 1000u;
	r->bytes = l.burst_bytes;
	r->refs = 1;
	r->service = service;
	r->hash_next = b->rate_bkt[h];
	b->rate_bkt[h] = i;
	return i;
}

void mqtt_rate_release(struct mqtt_broker *b, uint32_t i)
{
	if (i != MQTT_NIL)
		b->rates[i].refs--;
}

bool mqtt_rate_take(struct mqtt_broker *b, uint32_t i, size_t bytes, uint64_t now_ms)
{
	struct mqtt_rate *r = &b->rates[i];
	const struct rate_lim l = rate_lim(&b->cfg, r->service);
	rate_refill(b, r, now_ms);
	if ((l.msgs_per_s && r->msgs < 1000u) || (l.bytes_per_s && r->bytes < bytes))
		return false;
	if (l.msgs_per_s)
		r->msgs -= 1000u;
	if (l.bytes_per_s)
		r->bytes -= (uint32_t)bytes;
	return true;
}

/* How many connections name bucket i? Any of another kind than the bucket's counts twice
 * (so the refs comparison fails). */
static uint32_t rate_conn_refs(const struct mqtt_broker *b, uint32_t i)
{
	uint32_t refs = 0;
	for (uint32_t k = 0; k < b->cfg.max_conns; k++) {
		const struct mqtt_conn *c = &b->conns[k];
		if (c->state == MQTT_CONN_FREE || c->rate != i)
			continue;
		refs += (c->kind == MQTT_ID_SERVICE) == (bool)b->rates[i].service ? 1u : 2u;
	}
	return refs;
}

/* How many times is entry i on its hash chain? */
static uint32_t rate_hashed(const struct mqtt_broker *b, uint32_t i)
{
	uint32_t seen = 0;
	uint32_t h = (uint32_t)b->rates[i].key & b->rate_mask;
	for (uint32_t e = b->rate_bkt[h]; e != MQTT_NIL; e = b->rates[e].hash_next)
		seen += e == i;
	return seen;
}

int mqtt_rate_check(const struct mqtt_broker *b)
{
	if (b->rate_hw > b->rate_cap)
		return -E_CORRUPT;
	for (uint32_t k = 0; k < b->cfg.max_conns; k++) {
		const struct mqtt_conn *c = &b->conns[k];
		if (c->state == MQTT_CONN_UP && mqtt_rate_on(&b->cfg) && c->rate >= b->rate_hw)
			return -E_CORRUPT;
	}
	for (uint32_t i = 0; i < b->rate_hw; i++) {
		const struct mqtt_rate *r = &b->rates[i];
		const struct rate_lim l = rate_lim(&b->cfg, r->service);
		if (r->refs > b->cfg.max_conns || rate_conn_refs(b, i) != r->refs ||
		    rate_hashed(b, i) != 1)
			return -E_CORRUPT;
		if ((uint64_t)r->msgs > (uint64_t)l.burst_msgs * 1000u || r->bytes > l.burst_bytes)
			return -E_CORRUPT; /* 5 */
	}
	return 0;
}
