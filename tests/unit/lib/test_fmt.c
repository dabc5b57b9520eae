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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matches_libc),
		cmocka_unit_test(test_pointer_and_unknown),
		cmocka_unit_test(test_truncation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
