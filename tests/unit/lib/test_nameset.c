/* SPDX-License-Identifier: MIT
 * lib/nameset: every result of a long random add/remove/has run equals a naive model's, with
 * arenas small enough that compaction happens thousands of times; the limits (-E_RANGE,
 * -E_NOMEM on names and on bytes, -E_EXIST, -E_NOENT); 100,000 names found and 1,000
 * absent ones not, with the memory per name in a PASS line; paging equals the model's sorted
 * list for many page sizes and after names that are not in the set; mem_size and init
 * refuse bad configurations. NAMESET_TEST_SEED sets the seed (printed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/err.h"
#include "lib/nameset.h"
#include "tests/support/splitmix.h"

static const uint8_t key[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static uint64_t seed;

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *e = getenv(name);
	return e && *e ? strtoull(e, NULL, 0) : dflt;
}

static struct nameset *make(const struct nameset_config *cfg, void **mem /* out */)
{
	size_t n = nameset_mem_size(cfg);
	assert_true(n > 0);
	*mem = malloc(n);
	assert_non_null(*mem);
	struct nameset *s = NULL;
	assert_int_equal(nameset_init(&s, *mem, n, cfg, key), 0);
	assert_non_null(s);
	return s;
}

/* ---- the reference: names in an array, compared the way the set sorts ---- */

struct name {
	uint8_t b[NAMESET_MAX_LEN + 1];
	size_t len;
};

static int name_cmp(const void *pa, const void *pb)
{
	const struct name *a = *(const struct name *const *)pa, *b = *(const struct name *const *)pb;
	size_t m = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->b, b->b, m);
	if (c)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

/* What nameset_page gave, copied. */
struct collect {
	struct name *got;
	size_t n, cap;
};

static void collect_fn(void *ctx, const char *name, size_t len)
{
	struct collect *c = ctx;
	assert_true(c->n < c->cap);
	assert_true(len >= 1 && len <= NAMESET_MAX_LEN);
	memcpy(c->got[c->n].b, name, len);
	c->got[c->n].len = len;
	c->n++;
}

/* Page through the whole set, page_max names at a time, and compare with want[0..n_want)
 * (sorted). Each page is ascending, at most page_max long, and strictly after the last. */
static void page_all_equals(const struct nameset *s, uint32_t page_max, const struct name *const *want,
			    size_t n_want)
{
	struct collect c = { calloc(n_want + NAMESET_PAGE_MAX, sizeof(struct name)), 0,
			     n_want + NAMESET_PAGE_MAX };
	assert_non_null(c.got);
	uint32_t clamp = page_max > NAMESET_PAGE_MAX ? NAMESET_PAGE_MAX : page_max;
	for (;;) {
		size_t before = c.n;
		const struct name *last = c.n ? &c.got[c.n - 1] : NULL;
		uint32_t k = nameset_page(s, last ? (const char *)last->b : NULL, last ? last->len : 0,
					  page_max, collect_fn, &c);
		assert_int_equal(k, c.n - before);
		assert_true(k <= clamp);
		if (k < clamp)
			break;
	}
	assert_int_equal(c.n, n_want);
	for (size_t i = 0; i < n_want; i++) {
		assert_int_equal(c.got[i].len, want[i]->len);
		assert_memory_equal(c.got[i].b, want[i]->b, want[i]->len);
	}
	free(c.got);
}

/* ---- 1. configurations ---- */

static void t_mem_size_and_init(void **state)
{
	(void)state;
	struct nameset_config ok = { 100, 1000, 32 };
	assert_true(nameset_mem_size(&ok) > 0);
	assert_int_equal(nameset_mem_size(NULL), 0);
	const struct nameset_config bad[] = {
		{ 100, 1000, 0 },                     /* max_len 0 */
		{ 100, 1000, 256 },                   /* max_len > 255 */
		{ 100, 31, 32 },                      /* name_bytes < max_len */
		{ 100, 32, 32 },                      /* no room for the length byte */
		{ 0, 1000, 32 },                      /* max_names 0 */
		{ NAMESET_MAX_NAMES + 1u, 1000, 32 }, /* too many */
		{ UINT32_MAX, 1000, 32 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(nameset_mem_size(&bad[i]), 0);
	const struct nameset_config edge[] = { { 1, 256, 255 }, { NAMESET_MAX_NAMES, 33, 32 }, { 1, 2, 1 } };
	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
		assert_true(nameset_mem_size(&edge[i]) > 0);

	/* Slots: a power of two >= max_names * 4 / 3, at least 8. */
	const struct {
		uint32_t max_names, slots;
	} sz[] = { { 1, 8 }, { 6, 8 }, { 7, 16 }, { 12, 16 }, { 13, 32 }, { 98304, 131072 }, { 98305, 262144 } };
	for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
		struct nameset_config c = { sz[i].max_names, 64, 8 };
		void *mem;
		struct nameset *s = make(&c, &mem);
		struct nameset_stats st;
		nameset_stats(s, &st);
		assert_int_equal(st.n_slots, sz[i].slots);
		assert_int_equal(st.arena_cap, 64);
		free(mem);
	}

	size_t need = nameset_mem_size(&ok);
	uint64_t *mem = malloc(need + 8);
	assert_non_null(mem);
	struct nameset *s = NULL;
	assert_int_equal(nameset_init(&s, (uint8_t *)mem + 4, need, &ok, key), -E_INVAL); /* misaligned */
	assert_int_equal(nameset_init(&s, mem, need - 1, &ok, key), -E_INVAL);
	assert_int_equal(nameset_init(&s, mem, need, &bad[0], key), -E_INVAL);
	assert_int_equal(nameset_init(&s, mem, need, &ok, NULL), -E_INVAL);
	assert_int_equal(nameset_init(&s, NULL, need, &ok, key), -E_INVAL);
	assert_int_equal(nameset_init(NULL, mem, need, &ok, key), -E_INVAL);
	assert_null(s);
	memset(mem, 0xa5, need + 8); /* the region need not be zeroed */
	assert_int_equal(nameset_init(&s, mem, need, &ok, key), 0);
	assert_int_equal(nameset_count(s), 0);
	assert_false(nameset_has(s, "x", 1));
	assert_int_equal(nameset_check(s), 0);
	free(mem);
}

/* ---- 2. limits ---- */

static void t_limits(void **state)
{
	(void)state;
	struct nameset_config cfg = { 4, 20, 8 };
	void *mem;
	struct nameset *s = make(&cfg, &mem);
	struct nameset_stats st;

	assert_int_equal(nameset_add(s, "", 0), -E_RANGE);
	assert_int_equal(nameset_add(s, "123456789", 9), -E_RANGE);
	assert_int_equal(nameset_add(s, NULL, 3), -E_INVAL);
	assert_false(nameset_has(s, "", 0));
	assert_false(nameset_has(s, NULL, 3));
	assert_false(nameset_has(s, "123456789", 9));
	assert_int_equal(nameset_remove(s, "", 0), -E_NOENT);
	assert_int_equal(nameset_remove(s, NULL, 2), -E_NOENT);
	assert_int_equal(nameset_remove(s, "a", 1), -E_NOENT);
	nameset_stats(s, &st);
	assert_int_equal(st.n_refused_range, 2);

	/* Arena of 20 bytes: 2 + 9 + 9. */
	static const char bin[8] = { 0, (char)0xff, 0, (char)0xff, 0, 0, 1, 0 };
	assert_int_equal(nameset_add(s, "a", 1), 0);
	assert_int_equal(nameset_add(s, "a", 1), -E_EXIST);
	assert_int_equal(nameset_add(s, bin, 8), 0); /* max_len, any bytes */
	assert_int_equal(nameset_add(s, "bbbbbbbb", 8), 0);
	assert_true(nameset_has(s, bin, 8));
	assert_false(nameset_has(s, bin, 7)); /* a prefix is another name */
	assert_false(nameset_has(s, "a\0", 2));
	assert_int_equal(nameset_add(s, "c", 1), -E_NOMEM); /* bytes, nothing dead */
	assert_false(nameset_has(s, "c", 1));
	nameset_stats(s, &st);
	assert_int_equal(st.arena_used, 20);
	assert_int_equal(st.n_refused_bytes, 1);
	assert_int_equal(st.n_compactions, 0);

	/* "a" is not the last entry: its 2 bytes go dead. 3 bytes cannot fit even compacted:
	 * refused without compacting; 2 bytes fit after compaction. */
	assert_int_equal(nameset_remove(s, "a", 1), 0);
	assert_int_equal(nameset_remove(s, "a", 1), -E_NOENT);
	nameset_stats(s, &st);
	assert_int_equal(st.arena_dead, 2);
	assert_int_equal(nameset_check(s), 0);
	assert_int_equal(nameset_add(s, "cc", 2), -E_NOMEM);
	nameset_stats(s, &st);
	assert_int_equal(st.n_compactions, 0);
	assert_int_equal(st.n_refused_bytes, 2);
	assert_int_equal(nameset_add(s, "c", 1), 0);
	nameset_stats(s, &st);
	assert_int_equal(st.n_compactions, 1);
	assert_int_equal(st.arena_dead, 0);
	assert_int_equal(st.arena_used, 20);
	assert_true(nameset_has(s, bin, 8));
	assert_true(nameset_has(s, "bbbbbbbb", 8));
	assert_true(nameset_has(s, "c", 1));
	assert_false(nameset_has(s, "a", 1));
	assert_int_equal(nameset_check(s), 0);

	/* Removing the last entry gives its bytes back at once. */
	assert_int_equal(nameset_remove(s, "c", 1), 0);
	nameset_stats(s, &st);
	assert_int_equal(st.arena_used, 18);
	assert_int_equal(st.arena_dead, 0);
	/* Removing every name empties the arena, dead entries too. */
	assert_int_equal(nameset_remove(s, bin, 8), 0);
	nameset_stats(s, &st);
	assert_int_equal(st.arena_dead, 9);
	assert_int_equal(nameset_check(s), 0);
	assert_int_equal(nameset_remove(s, "bbbbbbbb", 8), 0);
	nameset_stats(s, &st);
	assert_int_equal(st.arena_used, 0);
	assert_int_equal(st.arena_dead, 0);
	assert_int_equal(nameset_count(s), 0);
	assert_int_equal(nameset_check(s), 0);

	/* max_names: 4 one-byte names, then the fifth is refused; -E_EXIST before -E_NOMEM. */
	assert_int_equal(nameset_add(s, "1", 1), 0);
	assert_int_equal(nameset_add(s, "2", 1), 0);
	assert_int_equal(nameset_add(s, "3", 1), 0);
	assert_int_equal(nameset_add(s, "4", 1), 0);
	assert_int_equal(nameset_add(s, "5", 1), -E_NOMEM);
	assert_int_equal(nameset_add(s, "4", 1), -E_EXIST);
	nameset_stats(s, &st);
	assert_int_equal(st.n_refused_full, 1);
	assert_int_equal(nameset_count(s), 4);
	assert_int_equal(nameset_remove(s, "2", 1), 0);
	assert_int_equal(nameset_add(s, "5", 1), 0);
	assert_int_equal(nameset_count(s), 4);
	assert_int_equal(nameset_check(s), 0);
	free(mem);
}

/* ---- 3. differential against the model ---- */

struct model {
	struct name *pool;
	bool *in;
	size_t n_pool, count, live_bytes;
};

static void model_sorted(const struct model *m, const struct name **out /* out */, size_t *n /* out */)
{
	*n = 0;
	for (size_t i = 0; i < m->n_pool; i++)
		if (m->in[i])
			out[(*n)++] = &m->pool[i];
	qsort(out, *n, sizeof out[0], name_cmp);
}

/* ops random operations on a set of cfg against the model; returns compactions done. */
static uint64_t differential(const struct nameset_config *cfg, size_t n_pool, uint64_t ops, uint64_t *rng)
{
	void *mem;
	struct nameset *s = make(cfg, &mem);
	struct model m = { calloc(n_pool, sizeof(struct name)), calloc(n_pool, sizeof(bool)), n_pool, 0, 0 };
	const struct name **sorted = calloc(n_pool, sizeof sorted[0]);
	assert_true(m.pool && m.in && sorted);
	/* Distinct names of 1..max_len bytes, any byte values (many short ones collide). */
	for (size_t i = 0; i < n_pool;) {
		struct name *p = &m.pool[i];
		p->len = 1 + splitmix64(rng) % cfg->max_len;
		splitmix64_bytes(rng, p->b, p->len);
		if (p->len == 2)
			p->b[0] = (uint8_t)(p->b[0] & 3u); /* more shared prefixes and NULs */
		bool dup = false;
		for (size_t j = 0; j < i && !dup; j++)
			dup = m.pool[j].len == p->len && !memcmp(m.pool[j].b, p->b, p->len);
		i += !dup;
	}
	uint64_t n_ok = 0, n_nomem = 0, n_exist = 0, n_noent = 0, n_hit = 0;
	for (uint64_t op = 0; op < ops; op++) {
		uint64_t r = splitmix64(rng);
		size_t i = (size_t)((r >> 8) % n_pool);
		const struct name *p = &m.pool[i];
		unsigned kind = (unsigned)(r % 100);
		if (kind < 2) { /* out of range */
			size_t len = (r >> 40) & 1 ? 0 : cfg->max_len + 1u;
			static const char junk[NAMESET_MAX_LEN + 2];
			assert_int_equal(nameset_add(s, junk, len), -E_RANGE);
			assert_false(nameset_has(s, junk, len));
			assert_int_equal(nameset_remove(s, junk, len), -E_NOENT);
		} else if (kind < 50) {
			int want = m.in[i]                                      ? -E_EXIST
				   : m.count == cfg->max_names                  ? -E_NOMEM
				   : m.live_bytes + 1 + p->len > cfg->name_bytes ? -E_NOMEM
										 : 0;
			assert_int_equal(nameset_add(s, (const char *)p->b, p->len), want);
			if (want == 0) {
				m.in[i] = true;
				m.count++;
				m.live_bytes += 1 + p->len;
				n_ok++;
			}
			n_nomem += want == -E_NOMEM;
			n_exist += want == -E_EXIST;
		} else if (kind < 80) {
			int want = m.in[i] ? 0 : -E_NOENT;
			assert_int_equal(nameset_remove(s, (const char *)p->b, p->len), want);
			if (want == 0) {
				m.in[i] = false;
				m.count--;
				m.live_bytes -= 1 + p->len;
			}
			n_noent += want == -E_NOENT;
		} else {
			assert_int_equal(nameset_has(s, (const char *)p->b, p->len), m.in[i]);
			n_hit += m.in[i];
		}
		assert_int_equal(nameset_count(s), m.count);
		if (op % 997 == 0)
			assert_int_equal(nameset_check(s), 0);
		if (op % 9973 == 0) {
			size_t n;
			model_sorted(&m, sorted, &n);
			page_all_equals(s, 1 + (uint32_t)(splitmix64(rng) % NAMESET_PAGE_MAX), sorted, n);
		}
	}
	assert_int_equal(nameset_check(s), 0);
	size_t n;
	model_sorted(&m, sorted, &n);
	page_all_equals(s, 64, sorted, n);
	struct nameset_stats st;
	nameset_stats(s, &st);
	/* Every outcome happened many times. */
	assert_true(n_ok > ops / 100 && n_nomem > ops / 100 && n_exist > ops / 100 && n_noent > ops / 100 &&
		    n_hit > ops / 100);
	print_message("[ nameset  ] PASS differential: %llu ops on max_names %u, name_bytes %u, max_len %u: "
		      "%llu adds, %llu -E_NOMEM, %llu -E_EXIST, %llu -E_NOENT, %llu compactions, all equal "
		      "to the model\n",
		      (unsigned long long)ops, cfg->max_names, cfg->name_bytes, cfg->max_len,
		      (unsigned long long)n_ok, (unsigned long long)n_nomem, (unsigned long long)n_exist,
		      (unsigned long long)n_noent, (unsigned long long)st.n_compactions);
	free(sorted);
	free(m.pool);
	free(m.in);
	free(mem);
	return st.n_compactions;
}

static void t_differential(void **state)
{
	(void)state;
	uint64_t rng = seed;
	/* Bytes bind (about 70 names fit): compaction on most full adds. */
	const struct nameset_config tight = { 150, 1200, 32 };
	assert_true(differential(&tight, 300, 150000, &rng) > 1000);
	/* max_names binds, bytes roomy: slots near 3/4 full, backward shifts in long runs. */
	const struct nameset_config full = { 48, 4096, 40 };
	differential(&full, 120, 100000, &rng);
	/* One-byte names only: dead entries of the smallest size. */
	const struct nameset_config tiny = { 200, 40, 1 };
	assert_true(differential(&tiny, 64, 50000, &rng) > 100);
}

/* ---- 4. 100,000 names ---- */

#define BIG_N 100000u
#define BIG_ABSENT 1000u

/* Name i: 20 random bytes, then i big-endian (distinct for distinct i). */
static void big_name(struct name *p, uint32_t i, uint64_t *rng)
{
	p->len = 24;
	splitmix64_bytes(rng, p->b, 20);
	p->b[20] = (uint8_t)(i >> 24);
	p->b[21] = (uint8_t)(i >> 16);
	p->b[22] = (uint8_t)(i >> 8);
	p->b[23] = (uint8_t)i;
}

static void t_hundred_thousand(void **state)
{
	(void)state;
	uint64_t rng = seed ^ 0x100000;
	const struct nameset_config cfg = { BIG_N, BIG_N * 25u, 64 };
	size_t bytes = nameset_mem_size(&cfg);
	void *mem;
	struct nameset *s = make(&cfg, &mem);
	struct name *names = calloc(BIG_N + BIG_ABSENT, sizeof *names);
	assert_non_null(names);
	for (uint32_t i = 0; i < BIG_N + BIG_ABSENT; i++)
		big_name(&names[i], i, &rng);
	for (uint32_t i = 0; i < BIG_N; i++)
		assert_int_equal(nameset_add(s, (const char *)names[i].b, 24), 0);
	assert_int_equal(nameset_count(s), BIG_N);
	for (uint32_t i = 0; i < BIG_N; i++)
		assert_true(nameset_has(s, (const char *)names[i].b, 24));
	for (uint32_t i = BIG_N; i < BIG_N + BIG_ABSENT; i++) {
		assert_false(nameset_has(s, (const char *)names[i].b, 24));
		assert_false(nameset_has(s, (const char *)names[i].b, 23));
	}
	/* Full on both counts: the arena holds exactly 100,000 x 25 bytes. */
	struct nameset_stats st;
	nameset_stats(s, &st);
	assert_int_equal(st.arena_used, BIG_N * 25u);
	assert_int_equal(nameset_add(s, (const char *)names[BIG_N].b, 24), -E_NOMEM);
	assert_int_equal(nameset_check(s), 0);

	const struct name **sorted = calloc(BIG_N, sizeof sorted[0]);
	assert_non_null(sorted);
	for (uint32_t i = 0; i < BIG_N; i++)
		sorted[i] = &names[i];
	qsort(sorted, BIG_N, sizeof sorted[0], name_cmp);
	page_all_equals(s, 64, sorted, BIG_N);

	/* Remove every other one: the rest are still found, the removed not. */
	for (uint32_t i = 0; i < BIG_N; i += 2)
		assert_int_equal(nameset_remove(s, (const char *)names[i].b, 24), 0);
	for (uint32_t i = 0; i < BIG_N; i++)
		assert_int_equal(nameset_has(s, (const char *)names[i].b, 24), i & 1);
	assert_int_equal(nameset_check(s), 0);

	double per = (double)bytes / BIG_N;
	assert_true(per < 48.0);
	print_message("[ nameset  ] PASS memory: %u names of 24 bytes in %zu bytes = %.2f B per name "
		      "(%u slots x 8 B + %u arena bytes + header), all found, %u absent not found\n",
		      BIG_N, bytes, per, st.n_slots, st.arena_cap, BIG_ABSENT);
	free(sorted);
	free(names);
	free(mem);
}

/* ---- 5. paging ---- */

static void t_paging(void **state)
{
	(void)state;
	uint64_t rng = seed ^ 0x9a9e;
	/* 3,000 names over a small alphabet: many are prefixes of others. */
	enum { N = 3000 };
	const struct nameset_config cfg = { N, N * 10, 12 };
	void *mem;
	struct nameset *s = make(&cfg, &mem);
	struct name *names = calloc(N, sizeof *names);
	const struct name **sorted = calloc(N, sizeof sorted[0]);
	assert_true(names && sorted);
	size_t n = 0;
	while (n < N) {
		struct name *p = &names[n];
		p->len = 1 + splitmix64(&rng) % 8;
		for (size_t j = 0; j < p->len; j++)
			p->b[j] = (uint8_t)"\0a\xff"[splitmix64(&rng) % 3];
		int rc = nameset_add(s, (const char *)p->b, p->len);
		assert_true(rc == 0 || rc == -E_EXIST);
		if (rc == 0)
			sorted[n++] = p;
	}
	qsort(sorted, N, sizeof sorted[0], name_cmp);
	static const uint32_t sizes[] = { 1, 2, 3, 7, 16, 63, 64, 65, 1000 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		page_all_equals(s, sizes[i], sorted, N);
	/* The same after churn that compacted the arena (removing then re-adding a third). */
	for (size_t i = 0; i < N; i += 3)
		assert_int_equal(nameset_remove(s, (const char *)names[i].b, names[i].len), 0);
	for (size_t i = 0; i < N; i += 3)
		assert_int_equal(nameset_add(s, (const char *)names[i].b, names[i].len), 0);
	struct nameset_stats st;
	nameset_stats(s, &st);
	assert_true(st.n_compactions >= 1);
	page_all_equals(s, 5, sorted, N);
	free(sorted);
	free(names);
	free(mem);
}

/* Pages after names that are not in the set, and the edges of max. */
static void t_page_after_absent(void **state)
{
	(void)state;
	const struct nameset_config cfg = { 200, 2000, 16 };
	void *mem;
	struct nameset *s = make(&cfg, &mem);
	struct name got[NAMESET_PAGE_MAX];
	struct collect c = { got, 0, NAMESET_PAGE_MAX };
	assert_int_equal(nameset_page(s, NULL, 0, 64, collect_fn, &c), 0); /* empty set */

	/* Sorted: "a" < "a\0" < "ab" < "b" < "\xff". */
	static const struct {
		const char *b;
		size_t len;
	} in[] = { { "b", 1 }, { "\xff", 1 }, { "a\0", 2 }, { "ab", 2 }, { "a", 1 } };
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(nameset_add(s, in[i].b, in[i].len), 0);
	static const struct {
		const char *after;
		size_t after_len;
		uint32_t max;
		const char *want; /* names joined by '|', '0' for a NUL byte, 'F' for 0xff */
	} cases[] = {
		{ NULL, 0, 64, "a|a0|ab|b|F" },
		{ "", 0, 2, "a|a0" },
		{ "a", 1, 1, "a0" },    /* after a member */
		{ "aa", 2, 64, "ab|b|F" }, /* between members */
		{ "a\0\0", 3, 64, "ab|b|F" },
		{ "0", 1, 3, "a|a0|ab" },  /* before all */
		{ "\xff", 1, 64, "" },      /* after the last */
		{ "\xff\xff", 2, 64, "" },
		{ "b", 1, 1000, "F" },     /* max clamped */
		{ "zzzzzzzzzzzzzzzzzzzzzzzz", 24, 64, "F" }, /* longer than max_len */
		{ NULL, 0, 0, "" },        /* max 0 */
		{ NULL, 5, 64, "" },       /* NULL with a length: nothing */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		c.n = 0;
		uint32_t k = nameset_page(s, cases[i].after, cases[i].after_len, cases[i].max, collect_fn, &c);
		assert_int_equal(k, c.n);
		char buf[64] = "";
		size_t at = 0;
		for (size_t j = 0; j < c.n; j++) {
			if (j)
				buf[at++] = '|';
			for (size_t q = 0; q < got[j].len; q++)
				buf[at++] = got[j].b[q] == 0 ? '0' : got[j].b[q] == 0xff ? 'F' : (char)got[j].b[q];
		}
		buf[at] = 0;
		assert_string_equal(buf, cases[i].want);
	}
	assert_int_equal(nameset_page(s, NULL, 0, 64, NULL, NULL), 0);

	/* max above 64 gives 64. */
	for (int i = 0; i < 100; i++) {
		char nm[8];
		int len = snprintf(nm, sizeof nm, "n%03d", i);
		assert_int_equal(nameset_add(s, nm, (size_t)len), 0);
	}
	c.n = 0;
	assert_int_equal(nameset_page(s, NULL, 0, 100, collect_fn, &c), NAMESET_PAGE_MAX);
	assert_int_equal(got[0].len, 1);
	assert_memory_equal(got[0].b, "a", 1);
	assert_memory_equal(got[NAMESET_PAGE_MAX - 1].b, "n059", 4);
	free(mem);
}

int main(void)
{
	seed = env_u64("NAMESET_TEST_SEED", 0x5eed5e7ull);
	print_message("[ nameset  ] NAMESET_TEST_SEED=%#llx\n", (unsigned long long)seed);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_mem_size_and_init),
		cmocka_unit_test(t_limits),
		cmocka_unit_test(t_differential),
		cmocka_unit_test(t_hundred_thousand),
		cmocka_unit_test(t_paging),
		cmocka_unit_test(t_page_after_absent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
