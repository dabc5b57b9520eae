/* SPDX-License-Identifier: MIT
 * Unit tests for the command line's IPv4 parsers (kernel/cmdline.h): accepted addresses
 * and prefixes, and rejection of every malformed form (missing or extra octets, octets
 * above 255 or longer than 3 digits, signs, spaces, trailing junk, prefix lengths above
 * 32 or longer than 2 digits). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/cmdline.h"
#include "lib/err.h"

static void test_ipv4_table(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int rc;
		uint32_t ip;
	} cases[] = {
		{ "10.78.0.2", 0, 0x0a4e0002u },
		{ "0.0.0.0", 0, 0 },
		{ "255.255.255.255", 0, 0xffffffffu },
		{ "001.002.003.004", 0, 0x01020304u },
		{ "256.1.1.1", -E_INVAL, 0 },
		{ "1.1.1.1000", -E_INVAL, 0 },
		{ "0001.1.1.1", -E_INVAL, 0 },
		{ "1.1.1", -E_INVAL, 0 },
		{ "1.1.1.1.1", -E_INVAL, 0 },
		{ "1..1.1", -E_INVAL, 0 },
		{ ".1.1.1", -E_INVAL, 0 },
		{ "1.1.1.1 ", -E_INVAL, 0 },
		{ " 1.1.1.1", -E_INVAL, 0 },
		{ "-1.1.1.1", -E_INVAL, 0 },
		{ "+1.1.1.1", -E_INVAL, 0 },
		{ "1.1.1.1/24", -E_INVAL, 0 },
		{ "a.b.c.d", -E_INVAL, 0 },
		{ "", -E_INVAL, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint32_t ip = 0xdeadbeefu;
		int rc = cmdline_parse_ipv4(cases[i].s, &ip);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0)
			assert_int_equal(ip, cases[i].ip);
		else
			assert_int_equal(ip, 0xdeadbeefu); /* untouched on error */
	}
	uint32_t ip;
	assert_int_equal(cmdline_parse_ipv4(NULL, &ip), -E_INVAL);
	assert_int_equal(cmdline_parse_ipv4("1.2.3.4", NULL), -E_INVAL);
}

static void test_prefix_table(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int rc;
		uint32_t ip, mask;
	} cases[] = {
		{ "10.78.0.2/24", 0, 0x0a4e0002u, 0xffffff00u },
		{ "10.0.0.1/8", 0, 0x0a000001u, 0xff000000u },
		{ "1.2.3.4/32", 0, 0x01020304u, 0xffffffffu },
		{ "1.2.3.4/0", 0, 0x01020304u, 0 },
		{ "1.2.3.4/09", 0, 0x01020304u, 0xff800000u },
		{ "1.2.3.4/33", -E_INVAL, 0, 0 },
		{ "1.2.3.4/100", -E_INVAL, 0, 0 },
		{ "1.2.3.4/", -E_INVAL, 0, 0 },
		{ "1.2.3.4", -E_INVAL, 0, 0 },
		{ "1.2.3.4/24x", -E_INVAL, 0, 0 },
		{ "1.2.3.4/-1", -E_INVAL, 0, 0 },
		{ "1.2.3/24", -E_INVAL, 0, 0 },
		{ "1.2.3.4//24", -E_INVAL, 0, 0 },
		{ "300.2.3.4/24", -E_INVAL, 0, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint32_t ip = 7, mask = 7;
		int rc = cmdline_parse_ipv4_prefix(cases[i].s, &ip, &mask);
		assert_int_equal(rc, cases[i].rc);
		if (rc == 0) {
			assert_int_equal(ip, cases[i].ip);
			assert_int_equal(mask, cases[i].mask);
		} else {
			assert_int_equal(ip, 7);
			assert_int_equal(mask, 7);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_table),
		cmocka_unit_test(test_prefix_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
