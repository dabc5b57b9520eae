/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/cmdline: lookups, bare keys, prefixes that must not match,
 * overflow, and lines without a terminating NUL inside their length. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/cmdline.h"
#include "lib/err.h"

static void test_lookup_table(void **state)
{
	(void)state;
	static const struct {
		const char *line, *key;
		int rc;
		const char *val;
	} cases[] = {
		{ "test=boot", "test", 0, "boot" },
		{ "a=1 test=null-deref b", "test", 0, "null-deref" },
		{ "  test=x  ", "test", 0, "x" },
		{ "quiet test", "test", 0, "" },
		{ "testing=1", "test", -E_NOENT, "" },
		{ "xtest=1", "test", -E_NOENT, "" },
		{ "test=", "test", 0, "" },
		{ "test=a test=b", "test", 0, "a" },
		{ "", "test", -E_NOENT, "" },
		{ "test=0123456789abcdef", "test", -E_OVERFLOW, "" },
		{ "test=0123456789abcde", "test", 0, "0123456789abcde" },
		{ "test=1", "", -E_INVAL, "" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char val[16] = "junk";
		int rc = cmdline_get(cases[i].line, strlen(cases[i].line) + 1, cases[i].key, val,
				     sizeof val);
		assert_int_equal(rc, cases[i].rc);
		assert_string_equal(val, cases[i].val);
	}
}

static void test_respects_length_without_nul(void **state)
{
	(void)state;
	const char line[8] = { 't', 'e', 's', 't', '=', 'a', 'b', 'c' }; /* no NUL */
	char val[8];
	assert_int_equal(cmdline_get(line, 6, "test", val, sizeof val), 0);
	assert_string_equal(val, "a");
	assert_int_equal(cmdline_get(line, 3, "test", val, sizeof val), -E_NOENT);
	assert_int_equal(cmdline_get(NULL, 3, "test", val, sizeof val), -E_INVAL);
	assert_int_equal(cmdline_get(line, 3, "test", val, 0), -E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_table),
		cmocka_unit_test(test_respects_length_without_nul),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
