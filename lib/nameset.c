/* SPDX-License-Identifier: MIT
 *
 * lib/nameset.h: a set of short names in one caller region, laid out as
 *   [struct nameset][slots: n_slots x 8 bytes][arena: name_bytes bytes]
 * It owns that region and nothing else; it never allocates, never trusts a name's bytes to
 * end in NUL, and never keeps a pointer to a caller's name.
 *
 * Arena: names back to back from offset 0, each entry [len u8][len bytes], len 1..max_len.
 * A removed name's entry becomes dead in place: [0][len][len - 1 bytes of garbage]; names
 * are never empty, so a length byte of 0 marks a dead entry and the byte after it (always
 * there) keeps its length for the walk. No bitmap, no per-name overhead beyond the length.
 * Removing the last entry of the arena trims arena_used instead; removing the last name
 * empties the arena.
 *
 * Index: open addressing, linear probing over n_slots = pow2 >= max(8, max_names * 4 / 3)
 * slots of 8 bytes: off1 (arena offset of the entry + 1; 0 = empty) and tag, the top 32
 * bits of SipHash-2-4(key, name). A slot's home is tag & mask, so deletion by backward
 * shift needs no rehash and leaves no tombstones: probe lengths depend only on what is
 * present. Lookups compare the tag, then the length byte, then the bytes.
 *
 * Entry states: free (>= arena_used) -> live (nameset_add) -> dead (nameset_remove) ->
 * free again (compact(), called by nameset_add when a name does not fit after arena_used
 * but does fit once dead bytes are reclaimed). compact() slides live entries down in order
 * and rebuilds the index from scratch (rehashing each name): O(names), rare.
 *
 * Invariants (nameset_check):
 *  1. n <= max_names < n_slots, so a probe always reaches an empty slot.
 *  2. The arena entries walked from 0 cover exactly arena_used <= arena_cap bytes; live
 *     lengths are 1..max_len; the dead entries' sizes sum to arena_dead; there are n live.
 *  3. Each live entry is found by lookup of its own bytes at its own offset (so its slot
 *     holds its tag, is reachable from its home without crossing an empty slot, and no
 *     two live entries are equal); exactly n slots are occupied.
 * Known limit: with an arena barely larger than its live names, alternating remove/add
 * compacts on most adds (each O(names)); size name_bytes with headroom.
 */
#include "lib/nameset.h"

#include "lib/align.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "lib/siphash.h"

struct nameset_slot {
	uint32_t off1; /* arena offset + 1; 0: empty */
	uint32_t tag;  /* SipHash-2-4 >> 32 */
};
STATIC_ASSERT(sizeof(struct nameset_slot) == 8, "slot is 8 bytes");

struct nameset {
	struct siphash_key key;
	struct nameset_slot *slots; /* in the region */
	uint8_t *arena;             /* in the region */
	uint32_t mask;              /* n_slots - 1 */
	uint32_t n, max_names;
	uint32_t arena_used, arena_dead, arena_cap;
	uint16_t max_len;
	uint64_t n_compactions, n_refused_range, n_refused_full, n_refused_bytes;
};

static bool config_ok(const struct nameset_config *cfg)
{
	return cfg && cfg->max_names >= 1u && cfg->max_names <= NAMESET_MAX_NAMES && cfg->max_len >= 1u &&
	       cfg->max_len <= NAMESET_MAX_LEN && cfg->name_bytes >= (uint32_t)cfg->max_len + 1u;
}

/* Bounded by config_ok: at most 2^23 slots. */
static uint32_t slot_count(uint32_t max_names)
{
	uint64_t want = ((uint64_t)max_names * 4u + 2u) / 3u;
	return (uint32_t)pow2_at_least(MAX(want, (uint64_t)8u));
}

size_t nameset_mem_size(const struct nameset_config *cfg)
{
	if (!config_ok(cfg))
		return 0;
	uint64_t n = align8(sizeof(struct nameset)) + (uint64_t)slot_count(cfg->max_names) * 8u +
		     align8(cfg->name_bytes);
	return n <= SIZE_MAX ? (size_t)n : 0;
}

int nameset_init(struct nameset **out, void *mem, size_t len, const struct nameset_config *cfg,
		 const uint8_t key[16])
{
	size_t need = nameset_mem_size(cfg);
	if (!out || !mem || !key || need == 0 || len < need || ((uintptr_t)mem & 7u))
		return -E_INVAL;
	uint32_t n_slots = slot_count(cfg->max_names);
	struct nameset *s = mem;
	memset(s, 0, sizeof *s);
	s->key = siphash_key_from_bytes(key);
	s->slots = (struct nameset_slot *)(void *)((uint8_t *)mem + align8(sizeof *s));
	s->arena = (uint8_t *)(s->slots + n_slots);
	s->mask = n_slots - 1u;
	s->max_names = cfg->max_names;
	s->arena_cap = cfg->name_bytes;
	s->max_len = cfg->max_len;
	memset(s->slots, 0, (size_t)n_slots * sizeof *s->slots);
	*out = s;
	return 0;
}

static uint32_t tag_of(const struct nameset *s, const void *name, size_t len)
{
	return (uint32_t)(siphash24(&s->key, name, len) >> 32);
}

/* The slot holding name, or -1. len is 1..max_len (so it fits the length byte). */
static int64_t find(const struct nameset *s, uint32_t tag, const void *name, size_t len)
{
	for (uint32_t i = tag & s->mask;; i = (i + 1u) & s->mask) {
		const struct nameset_slot *sl = &s->slots[i];
		if (sl->off1 == 0)
			return -1;
		if (sl->tag != tag)
			continue;
		const uint8_t *e = s->arena + (sl->off1 - 1u);
		if (e[0] == len && memcmp(e + 1, name, len) == 0)
			return i;
	}
}

/* Put (tag, off) in the first empty slot from its home (invariant 1: one exists). */
static void place(struct nameset *s, uint32_t tag, uint32_t off)
{
	uint32_t i = tag & s->mask;
	while (s->slots[i].off1 != 0)
		i = (i + 1u) & s->mask;
	s->slots[i].off1 = off + 1u;
	s->slots[i].tag = tag;
}

/* Size of the entry at off (live or dead). off < arena_used (invariant 2). */
static uint32_t entry_size(const struct nameset *s, uint32_t off)
{
	uint8_t l = s->arena[off];
	return 1u + (l ? l : s->arena[off + 1u]);
}

/* Slide live entries down over the dead ones and rebuild the index. */
static void compact(struct nameset *s)
{
	memset(s->slots, 0, ((size_t)s->mask + 1u) * sizeof *s->slots);
	uint32_t rd = 0, wr = 0;
	while (rd < s->arena_used) {
		uint32_t size = entry_size(s, rd);
		if (s->arena[rd] != 0) {
			if (wr != rd)
				memmove(s->arena + wr, s->arena + rd, size);
			place(s, tag_of(s, s->arena + wr + 1, size - 1u), wr);
			wr += size;
		}
		rd += size;
	}
	s->arena_used = wr;
	s->arena_dead = 0;
	s->n_compactions++;
}

int nameset_add(struct nameset *s, const char *name, size_t len)
{
	if (len == 0 || len > s->max_len) {
		s->n_refused_range++;
		return -E_RANGE;
	}
	if (!name)
		return -E_INVAL;
	uint32_t tag = tag_of(s, name, len);
	if (find(s, tag, name, len) >= 0)
		return -E_EXIST;
	if (s->n >= s->max_names) {
		s->n_refused_full++;
		return -E_NOMEM;
	}
	uint32_t need = 1u + (uint32_t)len;
	if (need > s->arena_cap - s->arena_used) {
		if (need > s->arena_cap - s->arena_used + s->arena_dead) {
			s->n_refused_bytes++;
			return -E_NOMEM; /* compacting would not help: keep the dead bytes */
		}
		compact(s);
	}
	uint32_t off = s->arena_used;
	s->arena[off] = (uint8_t)len;
	memcpy(s->arena + off + 1, name, len);
	s->arena_used += need;
	place(s, tag, off);
	s->n++;
	return 0;
}

/* Empty slot i and shift back the entries after it that may move closer to home. */
static void slot_delete(struct nameset *s, uint32_t i)
{
	for (uint32_t j = (i + 1u) & s->mask; s->slots[j].off1 != 0; j = (j + 1u) & s->mask) {
		uint32_t home = s->slots[j].tag & s->mask;
		/* j may fill the hole at i iff i lies on its probe path [home, j). */
		if (((j - home) & s->mask) >= ((j - i) & s->mask)) {
			s->slots[i] = s->slots[j];
			i = j;
		}
	}
	s->slots[i].off1 = 0;
	s->slots[i].tag = 0;
}

int nameset_remove(struct nameset *s, const char *name, size_t len)
{
	if (len == 0 || len > s->max_len || !name)
		return -E_NOENT;
	int64_t i = find(s, tag_of(s, name, len), name, len);
	if (i < 0)
		return -E_NOENT;
	uint32_t off = s->slots[i].off1 - 1u;
	uint32_t size = 1u + (uint32_t)len;
	slot_delete(s, (uint32_t)i);
	s->n--;
	if (s->n == 0) {
		s->arena_used = s->arena_dead = 0;
	} else if (off + size == s->arena_used) {
		s->arena_used = off;
	} else {
		s->arena[off + 1] = s->arena[off];
		s->arena[off] = 0;
		s->arena_dead += size;
	}
	return 0;
}

bool nameset_has(const struct nameset *s, const char *name, size_t len)
{
	if (len == 0 || len > s->max_len || !name)
		return false;
	return find(s, tag_of(s, name, len), name, len) >= 0;
}

uint32_t nameset_count(const struct nameset *s)
{
	return s->n;
}

/* Byte-lexicographic order, a prefix first: <0, 0, >0. */
static int name_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	size_t m = MIN(alen, blen);
	int c = m ? memcmp(a, b, m) : 0;
	if (c != 0)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* name_cmp of the live entry at off against name. */
static int entry_cmp(const struct nameset *s, uint32_t off, const uint8_t *name, size_t len)
{
	return name_cmp(s->arena + off + 1, s->arena[off], name, len);
}

uint32_t nameset_page(const struct nameset *s, const char *after, size_t after_len, uint32_t max,
		      void (*fn)(void *ctx, const char *name, size_t len), void *ctx)
{
	if (!fn || max == 0 || (after_len && !after))
		return 0;
	max = MIN(max, NAMESET_PAGE_MAX);
	uint32_t best[NAMESET_PAGE_MAX]; /* arena offsets of the smallest, ascending by name */
	uint32_t n_best = 0, worst = 0;  /* worst: best[max - 1] once n_best == max */
	for (uint32_t off = 0; off < s->arena_used; off += entry_size(s, off)) {
		const uint8_t *e = s->arena + off;
		if (e[0] == 0)
			continue;
		if (after_len && name_cmp(e + 1, e[0], (const uint8_t *)after, after_len) <= 0)
			continue;
		if (n_best == max && entry_cmp(s, worst, e + 1, e[0]) <= 0)
			continue;
		/* Binary search for the first kept entry greater than e (names are distinct). */
		uint32_t lo = 0, hi = n_best;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2u;
			if (entry_cmp(s, best[mid], e + 1, e[0]) < 0)
				lo = mid + 1u;
			else
				hi = mid;
		}
		uint32_t keep = n_best < max ? n_best : max - 1u; /* drop the largest when full */
		if (keep > lo)
			memmove(&best[lo + 1], &best[lo], (keep - lo) * sizeof best[0]);
		best[lo] = off;
		n_best = keep + 1u;
		worst = best[n_best - 1u];
	}
	for (uint32_t i = 0; i < n_best; i++)
		fn(ctx, (const char *)(s->arena + best[i] + 1), s->arena[best[i]]);
	return n_best;
}

void nameset_stats(const struct nameset *s, struct nameset_stats *out)
{
	out->n_names = s->n;
	out->n_slots = s->mask + 1u;
	out->arena_used = s->arena_used;
	out->arena_dead = s->arena_dead;
	out->arena_cap = s->arena_cap;
	out->n_compactions = s->n_compactions;
	out->n_refused_range = s->n_refused_range;
	out->n_refused_full = s->n_refused_full;
	out->n_refused_bytes = s->n_refused_bytes;
}

int nameset_check(const struct nameset *s)
{
	if (s->n > s->max_names || s->max_names > s->mask || s->arena_used > s->arena_cap)
		return -E_CORRUPT; /* 1, 2 */
	uint32_t used = 0;
	for (uint32_t i = 0; i <= s->mask; i++) {
		if (s->slots[i].off1 > s->arena_used)
			return -E_CORRUPT; /* 3, checked first so that find stays in the arena */
		used += s->slots[i].off1 != 0;
	}
	if (used != s->n)
		return -E_CORRUPT; /* 3 */
	uint64_t dead = 0;
	uint32_t live = 0, off = 0;
	while (off < s->arena_used) {
		const uint8_t *e = s->arena + off;
		if (s->arena_used - off < 2u)
			return -E_CORRUPT; /* 2: every entry is >= 2 bytes */
		uint32_t size = entry_size(s, off);
		if (size - 1u > s->max_len || size > s->arena_used - off)
			return -E_CORRUPT; /* 2 */
		if (e[0] == 0) {
			dead += size;
		} else {
			int64_t i = find(s, tag_of(s, e + 1, e[0]), e + 1, e[0]);
			if (i < 0 || s->slots[i].off1 != off + 1u)
				return -E_CORRUPT; /* 3 */
			live++;
		}
		off += size;
	}
	return dead == s->arena_dead && live == s->n ? 0 : -E_CORRUPT; /* 2 */
}
