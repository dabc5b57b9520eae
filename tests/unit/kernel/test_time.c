/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/time: known dates (epoch, leap days, century rules) and
 * rejection of every out-of-range field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "kernel/time.h"
#include "lib/err.h"

static void test_known_dates(void **state)
{
	(void)state;
	static const struct {
		struct time_civil c;
		uint64_t want;
	} cases[] = {
		{ { 1970, 1, 1, 0, 0, 0 }, 0 },
		{ { 1970, 1, 2, 0, 0, 1 }, 86401 },
		{ { 2000, 2, 29, 12, 0, 0 }, 951825600 },
		{ { 2000, 3, 1, 0, 0, 0 }, 951868800 },
		{ { 2024, 2, 29, 23, 59, 59 }, 1709251199 },
		{ { 2026, 1, 1, 0, 0, 0 }, TIME_PLAUSIBLE_MIN_UNIX },
		{ { 2038, 1, 19, 3, 14, 8 }, 2147483648ull },
		{ { 2100, 3, 1, 0, 0, 0 }, 4107542400ull },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t t = 0;
		assert_int_equal(time_civil_to_unix(&cases[i].c, &t), 0);
		assert_true(t == cases[i].want);
	}
}

static void test_rejects_out_of_range(void **state)
{
	(void)state;
	static const struct time_civil bad[] = {
		{ 1969, 12, 31, 0, 0, 0 }, { 10000, 1, 1, 0, 0, 0 }, { 2026, 0, 1, 0, 0, 0 },
		{ 2026, 13, 1, 0, 0, 0 },  { 2026, 1, 0, 0, 0, 0 },   { 2026, 1, 32, 0, 0, 0 },
		{ 2026, 2, 29, 0, 0, 0 },  { 2100, 2, 29, 0, 0, 0 },  { 2026, 4, 31, 0, 0, 0 },
		{ 2026, 1, 1, 24, 0, 0 },  { 2026, 1, 1, 0, 60, 0 },  { 2026, 1, 1, 0, 0, 60 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		uint64_t t = 0;
		assert_int_equal(time_civil_to_unix(&bad[i], &t), -E_RANGE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_dates),
		cmocka_unit_test(test_rejects_out_of_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
