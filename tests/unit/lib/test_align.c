/* SPDX-License-Identifier: MIT
 * lib/align: each function at 0, exact multiples, one below and one above, and the largest
 * argument it rounds exactly, then the stated result just past it; and, against the private
 * copies lib/align.h replaced (kept here as reference formulas), equality over a sweep so the
 * callers' layouts did not move. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/align.h"
#include "lib/compiler.h"

struct sz_case {
	size_t v, a, want;
};

static void test_align_up(void **state)
{
	(void)state;
	static const struct sz_case cases[] = {
		{ 0, 1, 0 },
		{ 1, 1, 1 },
		{ SIZE_MAX, 1, SIZE_MAX }, /* a = 1 never rounds, never wraps */
		{ 0, 8, 0 },
		{ 1, 8, 8 },
		{ 7, 8, 8 },
		{ 8, 8, 8 },
		{ 9, 8, 16 },
		{ 63, 64, 64 },
		{ 64, 64, 64 },
		{ 65, 64, 128 },
		{ 4095, 4096, 4096 },
		{ 4096, 4096, 4096 },
		{ 4097, 4096, 8192 },
		{ SIZE_MAX - 4095, 4096, SIZE_MAX - 4095 }, /* the largest multiple: exact */
		{ SIZE_MAX - 4096, 4096, SIZE_MAX - 4095 }, /* one below it: rounds up to it */
		{ SIZE_MAX - 4094, 4096, 0 },               /* one above: wraps to 0 as stated */
		{ SIZE_MAX, 4096, 0 },
		{ (size_t)1 << 63, (size_t)1 << 63, (size_t)1 << 63 },
		{ 1, (size_t)1 << 63, (size_t)1 << 63 },
		{ ((size_t)1 << 63) + 1, (size_t)1 << 63, 0 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t got = align_up(cases[i].v, cases[i].a);
		if (got != cases[i].want)
			fail_msg("align_up(%zu, %zu) = %zu, want %zu", cases[i].v, cases[i].a, got, cases[i].want);
	}
}

static void test_align8(void **state)
{
	(void)state;
	static const struct sz_case cases[] = {
		{ 0, 8, 0 },
		{ 1, 8, 8 },
		{ 7, 8, 8 },
		{ 8, 8, 8 },
		{ 9, 8, 16 },
		{ 15, 8, 16 },
		{ 16, 8, 16 },
		{ 17, 8, 24 },
		{ SIZE_MAX - 7, 8, SIZE_MAX - 7 }, /* the largest exact argument */
		{ SIZE_MAX - 8, 8, SIZE_MAX - 7 },
		{ SIZE_MAX - 6, 8, 0 }, /* past it: 0 */
		{ SIZE_MAX, 8, 0 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t got = align8(cases[i].v);
		if (got != cases[i].want)
			fail_msg("align8(%zu) = %zu, want %zu", cases[i].v, got, cases[i].want);
	}
}

struct u64_case {
	uint64_t v, unit, want;
};

static void test_round_up_u64(void **state)
{
	(void)state;
	static const struct u64_case cases[] = {
		{ 0, 1, 0 },
		{ 1, 1, 1 },
		{ UINT64_MAX, 1, UINT64_MAX },
		{ 0, 8, 0 },
		{ 7, 8, 8 },
		{ 8, 8, 8 },
		{ 9, 8, 16 },
		{ 0, 3, 0 }, /* a unit that is not a power of two */
		{ 1, 3, 3 },
		{ 2, 3, 3 },
		{ 3, 3, 3 },
		{ 4, 3, 6 },
		{ 511, 512, 512 },
		{ 512, 512, 512 },
		{ 513, 512, 1024 },
		{ 999, 1000, 1000 },
		{ 1000, 1000, 1000 },
		{ 1001, 1000, 2000 },
		{ UINT64_MAX - 7, 8, UINT64_MAX - 7 }, /* the largest exact argument for 8 */
		{ UINT64_MAX - 8, 8, UINT64_MAX - 7 },
		{ UINT64_MAX - 6, 8, 0 }, /* wraps: a multiple below v (0 for a power of two) */
		{ UINT64_MAX - 3, 3, UINT64_MAX - 3 }, /* 2^64 - 1 is a multiple of 3 */
		{ UINT64_MAX - 2, 3, UINT64_MAX },     /* the largest exact argument for 3 */
		{ UINT64_MAX, 3, 0 },                  /* a multiple, but past it: wraps */
		{ UINT64_MAX - 1614, 1000, UINT64_MAX - 615 }, /* 2^64 - 1 = 615 (mod 1000) */
		{ UINT64_MAX - 999, 1000, UINT64_MAX - 615 },  /* the largest exact argument for 1000 */
		{ UINT64_MAX - 615, 1000, 0 },                 /* a multiple, but past it: wraps */
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint64_t got = round_up_u64(cases[i].v, cases[i].unit);
		if (got != cases[i].want)
			fail_msg("round_up_u64(%llu, %llu) = %llu, want %llu", (unsigned long long)cases[i].v,
				 (unsigned long long)cases[i].unit, (unsigned long long)got,
				 (unsigned long long)cases[i].want);
	}
	/* Past the exact range for 1000 (UINT64_MAX % 1000 == 615): the sum wraps and the
	 * result is a multiple of 1000 smaller than v, as the contract says. */
	uint64_t v = UINT64_MAX - 100, r = round_up_u64(v, 1000);
	assert_true(r < v);
	assert_int_equal(r % 1000, 0);
}

static void test_pow2_at_least(void **state)
{
	(void)state;
	static const struct u64_case cases[] = {
		{ 0, 0, 1 },
		{ 1, 0, 1 },
		{ 2, 0, 2 },
		{ 3, 0, 4 },
		{ 4, 0, 4 },
		{ 5, 0, 8 },
		{ 15, 0, 16 },
		{ 16, 0, 16 },
		{ 17, 0, 32 },
		{ (1ull << 24) * 2, 0, 1ull << 25 }, /* dp/shard's largest table */
		{ (1ull << 31) - 1, 0, 1ull << 31 },
		{ 1ull << 31, 0, 1ull << 31 },
		{ (1ull << 31) + 1, 0, 1ull << 32 }, /* above 2^31: no 32-bit wrap */
		{ (1ull << 32) - 1, 0, 1ull << 32 },
		{ 1ull << 32, 0, 1ull << 32 },
		{ (1ull << 32) + 1, 0, 1ull << 33 },
		{ (1ull << 63) - 1, 0, 1ull << 63 },
		{ 1ull << 63, 0, 1ull << 63 }, /* the largest exact argument */
		{ (1ull << 63) + 1, 0, 0 },    /* past it: 0 */
		{ UINT64_MAX, 0, 0 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint64_t got = pow2_at_least(cases[i].v);
		if (got != cases[i].want)
			fail_msg("pow2_at_least(%llu) = %llu, want %llu", (unsigned long long)cases[i].v,
				 (unsigned long long)got, (unsigned long long)cases[i].want);
	}
	for (unsigned k = 0; k < 64; k++) {
		uint64_t p = 1ull << k;
		assert_int_equal(pow2_at_least(p), p);
		if (k < 63)
			assert_int_equal(pow2_at_least(p + 1), p << 1);
		if (k > 1)
			assert_int_equal(pow2_at_least(p - 1), p);
	}
}

/* ---- the copies lib/align.h replaced: same results over their callers' ranges ---- */

static size_t ref_heap_round_up(size_t x, size_t a) /* kernel/mm/heap.c */
{
	return (x + a - 1) / a * a;
}

static size_t ref_mask8(size_t n) /* the align8 of dp/, store/, kernel/knet.c, ... */
{
	return (n + 7u) & ~(size_t)7u;
}

static size_t ref_xcore_round_up(size_t v) /* kernel/xcore.c, line = 64 */
{
	return (v + 64 - 1) & ~(size_t)(64 - 1);
}

static uint32_t ref_shard_pow2(uint32_t n) /* dp/shard.c: loops forever above 2^31 */
{
	uint32_t p = 1;
	while (p < n)
		p <<= 1;
	return p;
}

static void test_same_as_replaced_copies(void **state)
{
	(void)state;
	static const size_t units[] = { 1, 8, 64, 4096 };
	for (size_t s = 0; s < 3; s++) {
		/* Around 0, and around the top of size_t where the formulas wrap. */
		size_t base = s == 0 ? 0 : s == 1 ? ((size_t)1 << 40) - 5000 : SIZE_MAX - 9000;
		for (size_t v = base; v - base < 9001; v++) {
			for (size_t u = 0; u < ARRAY_LEN(units); u++)
				assert_int_equal(align_up(v, units[u]), ref_heap_round_up(v, units[u]));
			assert_int_equal(align8(v), ref_mask8(v));
			assert_int_equal(align_up(v, 64), ref_xcore_round_up(v));
			assert_int_equal(round_up_u64(v, 8), ref_heap_round_up(v, 8));
		}
	}
	for (uint32_t n = 0; n <= (1u << 16); n++)
		assert_int_equal(pow2_at_least(n), ref_shard_pow2(n));
	for (uint32_t n = (1u << 31) - 70000; n != (1u << 31) + 1; n++)
		assert_int_equal(pow2_at_least(n), ref_shard_pow2(n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_align_up),
		cmocka_unit_test(test_align8),
		cmocka_unit_test(test_round_up_u64),
		cmocka_unit_test(test_pow2_at_least),
		cmocka_unit_test(test_same_as_replaced_copies),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
