/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/mm/pages: carving of reserved ranges and holes, exhaustion,
 * contiguous aligned runs, double/foreign/wrong-size frees (counted, hook called,
 * allocator unchanged), a random alloc/free walk with the full invariant check, and the
 * window adapter over a static array. Every test ends with all frames free again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/mm/pages.h"
#include "lib/err.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)

static uint64_t meta[8192];
static unsigned n_bugs;
static const char *last_bug;

static void on_bug(void *ctx, const char *what, uint64_t phys)
{
	(void)ctx;
	(void)phys;
	n_bugs++;
	last_bug = what;
}

/* A PC-like map: low 640 KiB, then 1 MiB..33 MiB with the kernel at 1..3 MiB, a hole,
 * and an unaligned range at 40 MiB. */
static const struct plat_mem_range usable[] = {
	{ 0, 640 * KiB },
	{ 1 * MiB, 32 * MiB },
	{ 40 * MiB + 100, 1 * MiB },
};
static const struct plat_mem_range reserved[] = {
	{ 1 * MiB, 2 * MiB },          /* kernel image */
	{ 8 * MiB + 10, 5000 },        /* unaligned: covers two frames */
};

static struct pages pg;

static void init_pc(void)
{
	struct pages_config cfg = {
		.usable = usable, .n_usable = 3, .reserved = reserved, .n_reserved = 2,
		.meta = meta, .meta_len = sizeof meta, .bug = on_bug,
	};
	n_bugs = 0;
	assert_int_equal(pages_init(&pg, &cfg), 0);
	assert_int_equal(pages_check_invariants(&pg), 0);
}

static uint64_t expected_free(void)
{
	/* 160 low frames minus frame 0; 8192 frames at 1 MiB minus 512 kernel minus 2;
	 * 255 whole frames in the unaligned 1 MiB range. */
	return (160 - 1) + (8192 - 512 - 2) + 255;
}

static bool in_usable(uint64_t a)
{
	if (a == 0)
		return false;
	if (a < 640 * KiB)
		return true;
	if (a >= 3 * MiB && a < 33 * MiB && !(a >= 8 * MiB && a < 8 * MiB + 8 * KiB))
		return true;
	return a >= 40 * MiB + 4 * KiB && a + 4 * KiB <= 41 * MiB + 100;
}

static void test_init_and_counts(void **state)
{
	(void)state;
	struct pages_stats st;
	init_pc();
	pages_stats_get(&pg, &st);
	assert_int_equal(st.n_free, expected_free());
	assert_int_equal(st.n_used, 0);
	assert_int_equal(st.n_frames, (41 * MiB) / (4 * KiB));
	assert_true(pages_meta_len(usable, 3) <= sizeof meta);
}

static void test_bad_init(void **state)
{
	(void)state;
	struct plat_mem_range wrap = { UINT64_MAX - 4096, 8192 };
	struct plat_mem_range tiny = { 4096 + 1, 4096 };
	struct pages_config cfg = { .usable = usable, .n_usable = 3, .meta = meta, .meta_len = 8 };
	assert_int_equal(pages_init(&pg, &cfg), -E_NOMEM);
	cfg.meta_len = sizeof meta;
	cfg.usable = &wrap;
	cfg.n_usable = 1;
	assert_int_equal(pages_init(&pg, &cfg), -E_INVAL);
	cfg.usable = &tiny; /* no whole frame */
	assert_int_equal(pages_init(&pg, &cfg), -E_INVAL);
	cfg.usable = usable;
	cfg.n_usable = 3;
	cfg.meta = (uint8_t *)meta + 1;
	assert_int_equal(pages_init(&pg, &cfg), -E_INVAL);
}

static uint64_t addrs[16384];

static void test_exhaustion_single_frames(void **state)
{
	(void)state;
	struct pages_stats st;
	size_t n = 0;
	uint64_t a;
	init_pc();
	while (pages_alloc(&pg, 1, 0, &a) == 0) {
		assert_true(in_usable(a));
		assert_true(n < ARRAY_LEN(addrs));
		addrs[n++] = a;
	}
	assert_int_equal(n, expected_free());
	assert_int_equal(pages_alloc(&pg, 1, 0, &a), -E_NOMEM);
	pages_stats_get(&pg, &st);
	assert_int_equal(st.n_free, 0);
	assert_int_equal(st.min_free, 0);
	assert_true(st.n_nomem >= 2);
	assert_int_equal(pages_check_invariants(&pg), 0);
	for (size_t i = 1; i < n; i++)
		assert_true(addrs[i] > addrs[i - 1]); /* lowest first, each once */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(pages_free(&pg, addrs[i], 1), 0);
	pages_stats_get(&pg, &st);
	assert_int_equal(st.n_free, expected_free());
	assert_int_equal(st.n_live, 0);
	assert_int_equal(n_bugs, 0);
	assert_int_equal(pages_check_invariants(&pg), 0);
}

static void test_contiguous_aligned_runs(void **state)
{
	(void)state;
	uint64_t a, b, c, big;
	init_pc();
	assert_int_equal(pages_alloc(&pg, 16, 16, &a), 0);
	assert_int_equal(a % (64 * KiB), 0);
	assert_true(in_usable(a) && in_usable(a + 15 * 4 * KiB));
	assert_int_equal(pages_alloc(&pg, 3, 0, &b), 0);
	assert_int_equal(pages_alloc(&pg, 512, 512, &c), 0); /* 2 MiB aligned */
	assert_int_equal(c % (2 * MiB), 0);
	assert_true(c >= 3 * MiB);
	/* A run larger than any free stretch fails even though frames are free. */
	assert_int_equal(pages_alloc(&pg, 8000, 1, &big), -E_NOMEM);
	assert_int_equal(pages_alloc(&pg, 3, 3, &big), -E_INVAL);
	assert_int_equal(pages_alloc(&pg, 0, 1, &big), -E_INVAL);
	assert_int_equal(pages_check_invariants(&pg), 0);
	assert_int_equal(pages_free(&pg, a, 16), 0);
	assert_int_equal(pages_free(&pg, b, 3), 0);
	assert_int_equal(pages_free(&pg, c, 512), 0);
	assert_int_equal(pages_check_invariants(&pg), 0);
	assert_int_equal(n_bugs, 0);
}

static void test_bad_frees(void **state)
{
	(void)state;
	struct pages_stats st;
	uint64_t a, b;
	init_pc();
	assert_int_equal(pages_alloc(&pg, 4, 0, &a), 0);
	assert_int_equal(pages_alloc(&pg, 1, 0, &b), 0);
	struct {
		uint64_t phys;
		uint32_t n;
	} bad[] = {
		{ a + 4096, 1 },   /* interior frame */
		{ a, 3 },          /* wrong size (short) */
		{ a, 5 },          /* wrong size (spans the next run) */
		{ a + 1, 4 },      /* unaligned */
		{ 2 * MiB, 1 },    /* reserved (kernel) */
		{ 0, 1 },          /* frame 0 */
		{ 36 * MiB, 1 },   /* hole */
		{ 1ull << 40, 1 }, /* outside the span */
		{ a, 0 },
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		assert_int_equal(pages_free(&pg, bad[i].phys, bad[i].n), -E_INVAL);
		assert_int_equal(n_bugs, i + 1);
		assert_int_equal(pages_check_invariants(&pg), 0);
	}
	pages_stats_get(&pg, &st);
	assert_int_equal(st.n_bad_free, ARRAY_LEN(bad));
	assert_int_equal(pages_free(&pg, b, 1), 0);
	assert_int_equal(pages_free(&pg, b, 1), -E_INVAL); /* double free */
	assert_string_equal(last_bug, "pages: double free");
	pages_stats_get(&pg, &st);
	assert_int_equal(st.n_double_free, 1);
	assert_int_equal(pages_free(&pg, a, 4), 0);
	assert_int_equal(pages_free(&pg, a, 4), -E_INVAL);
	pages_stats_get(&pg, &st);
	assert_int_equal(st.n_double_free, 2);
	assert_int_equal(st.n_live, 0);
	assert_int_equal(st.n_free, expected_free());
	assert_int_equal(pages_check_invariants(&pg), 0);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_random_walk(void **state)
{
	(void)state;
	static struct { uint64_t phys; uint32_t n; } live[512];
	size_t n_live = 0;
	struct pages_stats st;
	uint64_t used = 0;
	init_pc();
	for (int step = 0; step < 20000; step++) {
		if (n_live < ARRAY_LEN(live) && (rng() % 3 != 0 || n_live == 0)) {
			uint32_t n = (uint32_t)(rng() % 4 == 0 ? 1 + rng() % 40 : 1);
			uint32_t al = (uint32_t)(1u << (rng() % 4));
			uint64_t a;
			int err = pages_alloc(&pg, n, al, &a);
			if (err == 0) {
				assert_int_equal((a >> 12) % al, 0);
				assert_true(in_usable(a) && in_usable(a + (uint64_t)(n - 1) * 4096));
				live[n_live].phys = a;
				live[n_live++].n = n;
				used += n;
			} else {
				assert_int_equal(err, -E_NOMEM);
			}
		} else {
			size_t k = (size_t)(rng() % n_live);
			assert_int_equal(pages_free(&pg, live[k].phys, live[k].n), 0);
			used -= live[k].n;
			live[k] = live[--n_live];
		}
		if (step % 1000 == 0) {
			assert_int_equal(pages_check_invariants(&pg), 0);
			pages_stats_get(&pg, &st);
			assert_int_equal(st.n_used, used);
			assert_int_equal(st.n_live, n_live);
		}
	}
	while (n_live) {
		n_live--;
		assert_int_equal(pages_free(&pg, live[n_live].phys, live[n_live].n), 0);
	}
	pages_stats_get(&pg, &st);
	assert_int_equal(st.n_free, expected_free());
	assert_int_equal(n_bugs, 0);
	assert_int_equal(pages_check_invariants(&pg), 0);
}

static void test_invariant_check_catches_damage(void **state)
{
	(void)state;
	uint64_t a;
	init_pc();
	assert_int_equal(pages_alloc(&pg, 2, 0, &a), 0);
	uint64_t i = (a >> 12) - pg.base_pfn;
	pg.end_map[i / 64] ^= (uint64_t)1 << (i % 64); /* a run with no end */
	assert_int_equal(pages_check_invariants(&pg), -E_CORRUPT);
	pg.end_map[i / 64] ^= (uint64_t)1 << (i % 64);
	pg.alloc_map[(i + 5) / 64] ^= (uint64_t)1 << ((i + 5) % 64); /* a frame lost */
	assert_int_equal(pages_check_invariants(&pg), -E_CORRUPT);
	pg.alloc_map[(i + 5) / 64] ^= (uint64_t)1 << ((i + 5) % 64);
	assert_int_equal(pages_check_invariants(&pg), 0);
	assert_int_equal(pages_free(&pg, a, 2), 0);
}

static void test_meta_place(void **state)
{
	(void)state;
	uint64_t at;
	struct plat_mem_range res[4] = { { 0, 1 * MiB }, { 1 * MiB, 2 * MiB }, { 3 * MiB, 4096 },
					 { 3 * MiB + 8192, 10 } };
	struct pages_config cfg = { .usable = usable, .n_usable = 3, .reserved = reserved, .n_reserved = 2 };
	assert_int_equal(pages_meta_place(&cfg, 8192, &at), 0);
	assert_true(at == 4096); /* lowest, but never frame 0 */
	/* Low memory taken, the kernel at 1-3 MiB, two small holes just above it. */
	cfg.reserved = res;
	cfg.n_reserved = 4;
	assert_int_equal(pages_meta_place(&cfg, 1, &at), 0);
	assert_true(at == 3 * MiB + 4096);
	assert_int_equal(pages_meta_place(&cfg, 8192, &at), 0);
	assert_true(at == 3 * MiB + 3 * 4096);
	/* Reserved ranges listed in the other order give the same answer. */
	struct plat_mem_range rev[4] = { res[3], res[2], res[1], res[0] };
	cfg.reserved = rev;
	assert_int_equal(pages_meta_place(&cfg, 8192, &at), 0);
	assert_true(at == 3 * MiB + 3 * 4096);
	/* Bigger than any free stretch but the unaligned 1 MiB range is used when it fits. */
	assert_int_equal(pages_meta_place(&cfg, 31 * MiB, &at), -E_NOMEM);
	assert_int_equal(pages_meta_place(&cfg, 0, &at), -E_INVAL);
	/* The answer really is usable: init with it reserved works. */
	cfg.reserved = res;
	assert_int_equal(pages_meta_place(&cfg, pages_meta_len(usable, 3), &at), 0);
	struct plat_mem_range res5[5] = { res[0], res[1], res[2], res[3], { at, pages_meta_len(usable, 3) } };
	cfg.reserved = res5;
	cfg.n_reserved = 5;
	cfg.meta = meta;
	cfg.meta_len = sizeof meta;
	assert_int_equal(pages_init(&pg, &cfg), 0);
	assert_int_equal(pages_check_invariants(&pg), 0);
}

static uint8_t arena[64 * 4096] ALIGNED(4096);

static void test_window_over_static_array(void **state)
{
	(void)state;
	struct plat_mem_range r = { (uint64_t)(uintptr_t)arena, sizeof arena };
	struct pages_config cfg = { .usable = &r, .n_usable = 1, .meta = meta, .meta_len = sizeof meta };
	struct pages_window win = { &pg, 0 };
	void *p[64];
	size_t n = 0;
	assert_int_equal(pages_init(&pg, &cfg), 0);
	while (n < 64 && pages_window_alloc(&win, 1, &p[n]) == 0) {
		assert_true((uint8_t *)p[n] >= arena && (uint8_t *)p[n] < arena + sizeof arena);
		memset(p[n], 0x5a, 4096); /* ASan: really inside the array */
		n++;
	}
	assert_int_equal(n, 64);
	assert_int_equal(pages_window_alloc(&win, 1, &p[0]), -E_NOMEM);
	while (n)
		assert_int_equal(pages_window_free(&win, p[--n], 1), 0);
	assert_int_equal(pages_check_invariants(&pg), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_and_counts),
		cmocka_unit_test(test_bad_init),
		cmocka_unit_test(test_exhaustion_single_frames),
		cmocka_unit_test(test_contiguous_aligned_runs),
		cmocka_unit_test(test_bad_frees),
		cmocka_unit_test(test_random_walk),
		cmocka_unit_test(test_invariant_check_catches_damage),
		cmocka_unit_test(test_meta_place),
		cmocka_unit_test(test_window_over_static_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
