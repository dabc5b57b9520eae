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

/* unix -> civil -> unix is the identity, every day boundary and a spread of seconds from
 * 1970 to 9999, and known dates decode to themselves. */
static void test_unix_to_civil_round_trips(void **state)
{
	(void)state;
	struct time_civil c;
	uint64_t back;
	time_unix_to_civil(0, &c);
	assert_int_equal(c.year, 1970);
	assert_int_equal(c.month, 1);
	assert_int_equal(c.day, 1);
	time_unix_to_civil(951782400ull, &c); /* 2000-02-29 */
	assert_int_equal(c.year, 2000);
	assert_int_equal(c.month, 2);
	assert_int_equal(c.day, 29);
	time_unix_to_civil(1767225600ull + 86399u, &c); /* 2026-01-01T23:59:59 */
	assert_int_equal(c.year, 2026);
	assert_int_equal(c.month, 1);
	assert_int_equal(c.day, 1);
	assert_int_equal(c.hour, 23);
	assert_int_equal(c.min, 59);
	assert_int_equal(c.sec, 59);
	time_unix_to_civil(TIME_UNIX_MAX, &c);
	assert_int_equal(c.year, 9999);
	assert_int_equal(c.month, 12);
	assert_int_equal(c.day, 31);
	for (uint64_t s = 0; s <= TIME_UNIX_MAX; s += 86400u * 7u + 3601u) {
		time_unix_to_civil(s, &c);
		assert_int_equal(time_civil_to_unix(&c, &back), 0);
		assert_true(back == s);
	}
	time_unix_to_civil(TIME_UNIX_MAX + 1000u, &c); /* clamped */
	assert_int_equal(c.year, 9999);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_dates),
		cmocka_unit_test(test_rejects_out_of_range),
		cmocka_unit_test(test_unix_to_civil_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
