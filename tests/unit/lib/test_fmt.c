/* SPDX-License-Identifier: MIT
 * lib/fmt: output equals libc snprintf for the supported subset, truncation is safe and
 * the return value is the untruncated length. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/fmt.h"

#define SAME(...)                                                                   \
	do {                                                                        \
		char a[128], b[128];                                                \
		int x = fmt_snprintf(a, sizeof a, __VA_ARGS__);                     \
		int y = snprintf(b, sizeof b, __VA_ARGS__);                         \
		assert_string_equal(a, b);                                          \
		assert_int_equal(x, y);                                             \
	} while (0)

static void test_matches_libc(void **state)
{
	(void)state;
	SAME("plain");
	SAME("%d %i %u", -42, 7, 4000000000u);
	SAME("%x %X %08x %-6x|", 0xbeefu, 0xbeefu, 0x12u, 0xau);
	SAME("%ld %lu %lld %llu", -1L, 123456789012UL, -9223372036854775807LL - 1, 18446744073709551615ULL);
	SAME("%zu %zx", (size_t)99, (size_t)255);
	SAME("%hd %hu %hhu %hhd", (short)-3, (unsigned short)65535, (unsigned char)250, (signed char)-5);
	SAME("[%5s][%-5s][%.2s][%.*s]", "ab", "ab", "abcdef", 3, "abcdef");
	SAME("%c%c %5c|%-3c|", 'o', 'k', 'x', 'y');
	SAME("100%% %05d %-5d|", -42, 42);
	SAME("%s", "");
	SAME("%0*d", 6, 31);
}

/* Not format-checked on purpose: feeds formats the compiler would reject. */
static int unchecked_fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	int n;
	va_start(ap, f);
	n = fmt_vsnprintf(buf, len, f, ap);
	va_end(ap);
	return n;
}

static void test_pointer_and_unknown(void **state)
{
	(void)state;
	char a[64];
	fmt_snprintf(a, sizeof a, "%p", (void *)0x1234);
	assert_string_equal(a, "0x1234");
	unchecked_fmt(a, sizeof a, "%q%");
	assert_string_equal(a, "%?%");
	unchecked_fmt(a, sizeof a, "%s", (const char *)NULL);
	assert_string_equal(a, "(null)");
}

static void test_truncation(void **state)
{
	(void)state;
	char a[8];
	memset(a, 'z', sizeof a);
	assert_int_equal(fmt_snprintf(a, 5, "%s-%d", "hello", 12345), 11);
	assert_string_equal(a, "hell");
	assert_int_equal(a[5], 'z');
	assert_int_equal(fmt_snprintf(a, 1, "abc"), 3);
	assert_int_equal(a[0], 0);
	assert_int_equal(fmt_snprintf(NULL, 0, "abc%d", 1), 4);
}

/* fmt_utc against the host's gmtime over days spread across its range. */
static void test_utc(void **state)
{
	(void)state;
	char a[32], b[32];
	assert_int_equal(fmt_utc(a, sizeof a, INT64_C(1796145129353)), 20);
	assert_string_equal(a, "2026-12-01T17:12:09Z");
	fmt_utc(a, sizeof a, 0);
	assert_string_equal(a, "unknown");
	fmt_utc(a, sizeof a, INT64_C(951782400000)); /* a leap day */
	assert_string_equal(a, "2000-02-29T00:00:00Z");
	fmt_utc(a, sizeof a, -1);
	assert_string_equal(a, "1969-12-31T23:59:59Z");
	for (int64_t s = INT64_C(-62167219200); s < INT64_C(253402300800); s += INT64_C(86400) * 97 + 3601) {
		time_t t = (time_t)s;
		struct tm tm;
		assert_non_null(gmtime_r(&t, &tm));
		snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			 tm.tm_hour, tm.tm_min, tm.tm_sec);
		fmt_utc(a, sizeof a, s * 1000 + 999);
		assert_string_equal(a, b);
	}
	fmt_utc(a, sizeof a, INT64_C(253402300800000));
	assert_string_equal(a, "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_libc),
		cmocka_unit_test(test_pointer_and_unknown),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_utc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
