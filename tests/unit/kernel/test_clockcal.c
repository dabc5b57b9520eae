/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/clockcal: a window's frequency from bracketed samples (midpoints,
 * 24- and 32-bit wrap), the discard rule (wide bracket, no span, counter not advancing),
 * and the median of several windows ignoring a minority disturbed either way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kernel/clockcal.h"

#define PM_HZ 3579545u
#define TSC_HZ 2596000000ull

static const struct clockcal_ref pm24 = { PM_HZ, 0xffffffu, 64 };
static const struct clockcal_ref pm32 = { PM_HZ, 0xffffffffu, 64 };

/* A sample taken at reference tick t (exact), with a bracket of b ticks around it and the
 * TSC of an ideal TSC_HZ counter started at tsc0. */
static struct clockcal_sample at(uint64_t t, uint32_t b, uint32_t mask, uint64_t tsc0)
{
	struct clockcal_sample s;
	s.ref_before = (uint32_t)((t - b / 2) & mask);
	s.ref_after = (uint32_t)((t - b / 2 + b) & mask);
	s.count = tsc0 + t * TSC_HZ / PM_HZ;
	return s;
}

static struct clockcal_window win(uint64_t t0, uint64_t ticks, uint32_t b0, uint32_t b1, uint32_t mask)
{
	struct clockcal_window w = { at(t0, b0, mask, 1000), at(t0 + ticks, b1, mask, 1000) };
	return w;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static void test_window_exact_and_wrapping(void **state)
{
	(void)state;
	/* 20 ms windows: exact to a few Hz whatever the brackets (midpoints). */
	struct clockcal_window w = win(1000, 71591, 4, 20, 0xffffffu);
	assert_true(absdiff(clockcal_window_hz(&pm24, &w), TSC_HZ) < TSC_HZ / 1000000u);
	/* Across the 24-bit wrap, and across the 32-bit one. */
	w = win(0xffffffu - 30000u, 71591, 6, 6, 0xffffffu);
	assert_true(absdiff(clockcal_window_hz(&pm24, &w), TSC_HZ) < TSC_HZ / 1000000u);
	w = win(0xffffffffull - 30000u, 71591, 6, 6, 0xffffffffu);
	assert_true(absdiff(clockcal_window_hz(&pm32, &w), TSC_HZ) < TSC_HZ / 1000000u);
}

static void test_window_discards(void **state)
{
	(void)state;
	struct clockcal_window w = win(1000, 71591, 65, 2, 0xffffffu); /* start bracket too wide */
	assert_true(clockcal_window_hz(&pm24, &w) == 0);
	w = win(1000, 71591, 2, 200, 0xffffffu); /* end bracket too wide */
	assert_true(clockcal_window_hz(&pm24, &w) == 0);
	w = win(1000, 71591, 2, 2, 0xffffffu);
	w.end.count = w.start.count; /* the counter did not advance */
	assert_true(clockcal_window_hz(&pm24, &w) == 0);
	w = win(1000, 0, 2, 2, 0xffffffu); /* no reference time between the samples */
	assert_true(clockcal_window_hz(&pm24, &w) == 0);
	/* Widest bracket still kept: exactly max_bracket. */
	w = win(1000, 71591, 64, 64, 0xffffffu);
	assert_true(clockcal_window_hz(&pm24, &w) != 0);
}

static void test_median_ignores_disturbed_minority(void **state)
{
	(void)state;
	struct clockcal_window w[7];
	for (unsigned i = 0; i < 7; i++)
		w[i] = win(1000 + i * 80000u, 71591, 4, 4, 0xffffffu);
	/* A vCPU descheduled inside a sample's bracket: discarded. */
	w[1] = win(1000, 71591, 4, 5000, 0xffffffu);
	/* Two windows whose TSC was read late / early without a wide bracket (a disturbance the
	 * bracket cannot see): the median ignores them. */
	w[3].end.count += TSC_HZ / 400u; /* +2.5 ms of TSC in 20 ms: +12.5 % */
	w[5].end.count -= TSC_HZ / 400u;
	struct clockcal_result r;
	clockcal_median(&pm24, w, 7, &r);
	assert_int_equal(r.n_kept, 6);
	assert_int_equal(r.n_discarded, 1);
	assert_true(absdiff(r.hz, TSC_HZ) < TSC_HZ / 1000000u);
	assert_true(r.max_hz > TSC_HZ * 11u / 10u);
	assert_true(r.min_hz < TSC_HZ * 19u / 20u);
	assert_true(clockcal_spread_ppm(&r) > 100000u);

	/* All windows discarded: no result. */
	for (unsigned i = 0; i < 7; i++)
		w[i] = win(1000, 71591, 100, 4, 0xffffffu);
	clockcal_median(&pm24, w, 7, &r);
	assert_int_equal(r.n_kept, 0);
	assert_true(r.hz == 0);
	assert_int_equal(clockcal_spread_ppm(&r), 0);

	/* More windows than the limit: the extra ones are ignored. */
	struct clockcal_window many[CLOCKCAL_MAX_WINDOWS + 4];
	for (unsigned i = 0; i < CLOCKCAL_MAX_WINDOWS + 4; i++)
		many[i] = win(1000, 71591, 4, 4, 0xffffffu);
	clockcal_median(&pm24, many, CLOCKCAL_MAX_WINDOWS + 4, &r);
	assert_int_equal(r.n_kept, CLOCKCAL_MAX_WINDOWS);
}

static void test_median_even_count_takes_a_measurement(void **state)
{
	(void)state;
	struct clockcal_window w[4];
	for (unsigned i = 0; i < 4; i++) {
		w[i] = win(1000, 71591, 2, 2, 0xffffffu);
		w[i].end.count += i * 1000u;
	}
	struct clockcal_result r;
	clockcal_median(&pm24, w, 4, &r);
	assert_true(r.hz == clockcal_window_hz(&pm24, &w[1]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_exact_and_wrapping),
		cmocka_unit_test(test_window_discards),
		cmocka_unit_test(test_median_ignores_disturbed_minority),
		cmocka_unit_test(test_median_even_count_takes_a_measurement),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
