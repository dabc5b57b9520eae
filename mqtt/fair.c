/* SPDX-License-Identifier: MIT
 *
 * QoS 0 drops per publisher identity and the fair-share rule (see fair.h; ADR-075). Owns
 * b->fair, b->fair_cap, b->fair_ms and b->fair_total (the broker lays them out when
 * cfg.drop_ids is set). Must never allocate, never hash on the path of an identity it
 * already holds, and never let one identity hold two entries.
 *
 * Design note: an entry
 *   FREE (key 0) --mqtt_fair_see/drop, a free entry--> BOUND (key, sess = si)
 *   BOUND --mqtt_fair_session_gone--> UNBOUND (key kept, sess MQTT_NIL, counts kept)
 *   UNBOUND --mqtt_fair_see/drop by a session of the same identity--> BOUND (rebound)
 *   any --mqtt_fair_see/drop of a new identity, no free entry--> BOUND to it, counts reset
 *          (fair_take: the entry with the fewest recent bytes, then the fewest drops)
 * Invariants (broker invariant 7, mqtt_fair_check): 1. no two used entries share a key or
 * a session; 2. a bound entry's session is in use and its identity hashes to the key;
 * 3. fair_total is the sum of every entry's recent bytes.
 * Why recent bytes decay by halving: a congested link is a matter of the last fraction of
 * a second; halving every MQTT_FAIR_HALF_MS forgets a burst in about a second and costs a
 * shift per entry per period, taken lazily at the next publish.
 */
#include "mqtt/fair.h"

#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "mqtt/mqtt_int.h"

static uint64_t fair_key(const struct mqtt_broker *b, const struct mqtt_session *s)
{
	uint64_t k = siphash24(&b->key, s->id, s->id_len) ^
		     ((s->flags & MQTT_SESS_SERVICE) ? 0x9e3779b97f4a7c15ull : 0x51ed27u);
	return k ? k : 1u; /* 0 marks a free entry */
}

/* Halve every entry's recent bytes once per MQTT_FAIR_HALF_MS gone by since the last. */
static void fair_decay(struct mqtt_broker *b)
{
	uint64_t now = b->now_ms;
	if (now < b->fair_ms + MQTT_FAIR_HALF_MS)
		return;
	uint64_t k = (now - b->fair_ms) / MQTT_FAIR_HALF_MS;
	b->fair_ms += k * MQTT_FAIR_HALF_MS;
	uint32_t sh = (uint32_t)MIN(k, 31u);
	uint64_t total = 0;
	for (uint32_t i = 0; i < b->fair_cap; i++) {
		b->fair[i].recent >>= sh;
		total += b->fair[i].recent;
	}
	b->fair_total = total;
}

/* The entry to give a new identity: a free one, else the one that matters least now. */
static uint32_t fair_take(struct mqtt_broker *b)
{
	uint32_t best = 0;
	uint64_t best_w = UINT64_MAX;
	for (uint32_t i = 0; i < b->fair_cap; i++) {
		const struct mqtt_fair *f = &b->fair[i];
		if (!f->key)
			return i;
		uint64_t drops = (uint64_t)f->dropped[0] + f->dropped[1] + f->dropped[2];
		uint64_t w = (uint64_t)f->recent << 32 | MIN(drops, (uint64_t)UINT32_MAX);
		if (w < best_w) {
			best_w = w;
			best = i;
		}
	}
	b->st.fair_ids_recycled++;
	return best;
}

/* Session si's entry, found or taken (never MQTT_NIL when the table is on). */
static uint32_t fair_entry(struct mqtt_broker *b, uint32_t si)
{
	for (uint32_t i = 0; i < b->fair_cap; i++)
		if (b->fair[i].sess == si)
			return i; /* the hot path: a session already named */
	const struct mqtt_session *s = &b->sess[si];
	uint64_t key = fair_key(b, s);
	uint32_t e = MQTT_NIL;
	for (uint32_t i = 0; i < b->fair_cap && e == MQTT_NIL; i++)
		if (b->fair[i].key == key)
			e = i; /* the same identity from a new session: rebind, keep the counts */
	if (e == MQTT_NIL) {
		e = fair_take(b);
		struct mqtt_fair *f = &b->fair[e];
		b->fair_total -= f->recent;
		memset(f, 0, sizeof *f);
		f->key = key;
		f->kind = (s->flags & MQTT_SESS_SERVICE) ? MQTT_ID_SERVICE : MQTT_ID_DEVICE;
		f->id_len = (uint8_t)MIN(s->id_len, 255u);
		memcpy(f->id, s->id, MIN((size_t)s->id_len, sizeof f->id));
	}
	b->fair[e].sess = si;
	return e;
}

uint32_t mqtt_fair_see(struct mqtt_broker *b, uint32_t si, size_t bytes)
{
	if (!b->fair_cap)
		return MQTT_NIL;
	fair_decay(b);
	uint32_t e = fair_entry(b, si);
	struct mqtt_fair *f = &b->fair[e];
	uint32_t add = (uint32_t)MIN(bytes, (size_t)(UINT32_MAX - f->recent));
	f->recent += add;
	b->fair_total += add;
	return e;
}

bool mqtt_fair_heavy(const struct mqtt_broker *b, uint32_t e)
{
	if (e >= b->fair_cap)
		return false;
	uint64_t active = 0;
	for (uint32_t i = 0; i < b->fair_cap; i++)
		active += b->fair[i].recent != 0;
	/* over the mean: recent * active > total; a lone publisher has no one to be fair to */
	return active >= 2 && (uint64_t)b->fair[e].recent * active > b->fair_total;
}

void mqtt_fair_drop(struct mqtt_broker *b, uint32_t si, enum mqtt_drop_reason r)
{
	if (!b->fair_cap || si >= b->cfg.max_sessions || (unsigned)r >= MQTT_DROP__COUNT)
		return;
	struct mqtt_fair *f = &b->fair[fair_entry(b, si)];
	if (f->dropped[r] < UINT32_MAX)
		f->dropped[r]++;
}

void mqtt_fair_session_gone(struct mqtt_broker *b, uint32_t si)
{
	for (uint32_t i = 0; i < b->fair_cap; i++)
		if (b->fair[i].sess == si)
			b->fair[i].sess = MQTT_NIL;
}

size_t mqtt_broker_droppers(const struct mqtt_broker *b, struct mqtt_dropper *out, size_t n)
{
	size_t got = 0;
	for (uint32_t i = 0; i < b->fair_cap; i++) {
		const struct mqtt_fair *f = &b->fair[i];
		uint64_t t = (uint64_t)f->dropped[0] + f->dropped[1] + f->dropped[2];
		if (!f->key || !t)
			continue;
		/* insertion into the n largest so far, largest first */
		size_t at = got;
		while (at > 0) {
			const struct mqtt_dropper *p = &out[at - 1];
			if ((uint64_t)p->dropped[0] + p->dropped[1] + p->dropped[2] >= t)
				break;
			at--;
		}
		if (at >= n)
			continue;
		size_t last = got < n ? got : n - 1;
		for (size_t k = last; k > at; k--)
			out[k] = out[k - 1];
		struct mqtt_dropper *d = &out[at];
		d->kind = (enum mqtt_id_kind)f->kind;
		size_t l = MIN((size_t)f->id_len, sizeof f->id);
		for (size_t k = 0; k < l; k++) /* peer bytes: printable ASCII for a log line */
			d->id[k] = f->id[k] > 0x20 && f->id[k] < 0x7f && f->id[k] != '=' ? (char)f->id[k] : '?';
		d->id[l] = '\0';
		d->truncated = f->id_len > sizeof f->id;
		for (uint32_t r = 0; r < MQTT_DROP__COUNT; r++)
			d->dropped[r] = f->dropped[r];
		if (got < n)
			got++;
	}
	return got;
}

bool mqtt_conn_over_share(const struct mqtt_broker *b, const struct mqtt_conn *c)
{
	if (!b->fair_cap)
		return true; /* no weights: everyone waits, as before the rule (ADR-053) */
	if (!c || c->state != MQTT_CONN_UP || c->session >= b->cfg.max_sessions)
		return false;
	uint32_t e = MQTT_NIL, active = 0;
	for (uint32_t i = 0; i < b->fair_cap; i++) {
		active += b->fair[i].recent != 0;
		if (b->fair[i].sess == c->session)
			e = i;
	}
	if (e == MQTT_NIL || !b->fair[e].recent)
		return false; /* not a recent publisher: nothing of the congestion is its doing */
	/* at least the mean: a lone publisher is (it is the whole load), and of equal ones
	 * every one is, so the rule never reads a core's only publishers on regardless */
	return (uint64_t)b->fair[e].recent * active >= b->fair_total;
}

size_t mqtt_droppers_text(const struct mqtt_dropper *d, size_t n, char *out, size_t cap)
{
	if (!cap)
		return 0;
	size_t at = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = fmt_snprintf(out + at, cap - at, " %s%s%s=%lu/%lu/%lu", d[i].kind == MQTT_ID_SERVICE ? "svc:" : "",
				     d[i].id, d[i].truncated ? "~" : "", (unsigned long)d[i].dropped[MQTT_DROP_LINKS],
				     (unsigned long)d[i].dropped[MQTT_DROP_FAIR], (unsigned long)d[i].dropped[MQTT_DROP_QUEUE]);
		if (w < 0 || (size_t)w >= cap - at) {
			out[at] = '\0'; /* whole entries only */
			break;
		}
		at += (size_t)w;
	}
	return at;
}

size_t mqtt_dropper_metric(const struct mqtt_dropper *d, enum mqtt_drop_reason r, char *out, size_t cap)
{
	static const char *const reason[MQTT_DROP__COUNT] = { "links", "fair", "queue" };
	if ((unsigned)r >= MQTT_DROP__COUNT)
		return 0;
	int w = fmt_snprintf(out, cap, "droppers.%s.%s%s.%s", d->kind == MQTT_ID_SERVICE ? "service" : "device", d->id,
			     d->truncated ? "~" : "", reason[r]);
	if (w <= 0 || (size_t)w >= cap)
		return 0;
	/* the identity is one level of the name: its '.' (and whatever statsd would retype)
	 * become '_'; it starts after "droppers.<kind>." and ends before ".<reason>" */
	size_t from = (size_t)(d->kind == MQTT_ID_SERVICE ? 17 : 16), to = (size_t)w - strlen(reason[r]) - 1u;
	for (size_t i = from; i < to; i++) {
		char ch = out[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
			  ch == '-';
		if (!ok)
			out[i] = '_';
	}
	return (size_t)w;
}

int mqtt_fair_check(const struct mqtt_broker *b)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < b->fair_cap; i++) {
		const struct mqtt_fair *f = &b->fair[i];
		total += f->recent;
		if (!f->key && (f->sess != MQTT_NIL || f->recent))
			return -E_CORRUPT;
		if (f->sess != MQTT_NIL &&
		    (f->sess >= b->cfg.max_sessions || !b->sess[f->sess].id || fair_key(b, &b->sess[f->sess]) != f->key))
			return -E_CORRUPT;
		for (uint32_t j = i + 1; j < b->fair_cap; j++)
			if (f->key && (b->fair[j].key == f->key || (f->sess != MQTT_NIL && b->fair[j].sess == f->sess)))
				return -E_CORRUPT;
	}
	return total == b->fair_total ? 0 : -E_CORRUPT;
}
