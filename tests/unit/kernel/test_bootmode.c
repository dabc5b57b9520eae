/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/bootmode: every accepted value, the absent key, and everything that
 * must be refused (unknown, empty, bare, repeated, case, trailing bytes); keys that only
 * start with ours are other keys; lines without a NUL inside their length. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/bootmode.h"
#include "lib/err.h"

static void test_table(void **state)
{
	(void)state;
	static const struct {
		const char *line;
		int rc;
		enum boot_mode mode;
	} cases[] = {
		{ "", 0, BOOT_MODE_SERVE },
		{ "console=ttyS0 quiet", 0, BOOT_MODE_SERVE },
		{ "urmqtt.mode=live", 0, BOOT_MODE_LIVE },
		{ "a=1 urmqtt.mode=install b", 0, BOOT_MODE_INSTALL },
		{ "  urmqtt.mode=install-erase  ", 0, BOOT_MODE_INSTALL_ERASE },
		{ "urmqtt.mode=diag", 0, BOOT_MODE_DIAG },
		{ "urmqtt.modex=live", 0, BOOT_MODE_SERVE },
		{ "xurmqtt.mode=live", 0, BOOT_MODE_SERVE },
		{ "urmqtt.mod=live", 0, BOOT_MODE_SERVE },
		{ "urmqtt.mode=serve", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=LIVE", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=lives", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=liv", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=install-eras", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=live urmqtt.mode=live", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=live urmqtt.mode=install", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=live urmqtt.mode", -E_INVAL, BOOT_MODE_SERVE },
		{ "urmqtt.mode=live\turmqtt.mode=install", -E_INVAL, BOOT_MODE_SERVE },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum boot_mode m = BOOT_MODE_DIAG;
		int rc = boot_mode_parse(cases[i].line, strlen(cases[i].line) + 1, &m);
		assert_int_equal(rc, cases[i].rc);
		assert_int_equal(m, cases[i].mode);
	}
}

static void test_length_bounds(void **state)
{
	(void)state;
	enum boot_mode m;
	/* No NUL inside the length: only the bytes given are read. */
	const char line[20] = { 'u', 'r', 'm', 'q', 't', 't', '.', 'm', 'o', 'd', 'e', '=',
				'l', 'i', 'v', 'e', 'x', 'y', 'z', 'w' };
	assert_int_equal(boot_mode_parse(line, 16, &m), 0);
	assert_int_equal(m, BOOT_MODE_LIVE);
	assert_int_equal(boot_mode_parse(line, 17, &m), -E_INVAL);
	assert_int_equal(boot_mode_parse(line, 15, &m), -E_INVAL);
	/* A NUL ends the line even inside the length. */
	const char nul[] = "urmqtt.mode=diag\0urmqtt.mode=live";
	assert_int_equal(boot_mode_parse(nul, sizeof nul, &m), 0);
	assert_int_equal(m, BOOT_MODE_DIAG);
	assert_int_equal(boot_mode_parse(NULL, 0, &m), 0);
	assert_int_equal(m, BOOT_MODE_SERVE);
	assert_int_equal(boot_mode_parse(NULL, 4, &m), -E_INVAL);
	assert_int_equal(boot_mode_parse("urmqtt.mode=live", 17, NULL), -E_INVAL);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(boot_mode_name(BOOT_MODE_SERVE), "serve");
	assert_string_equal(boot_mode_name(BOOT_MODE_LIVE), "live");
	assert_string_equal(boot_mode_name(BOOT_MODE_INSTALL), "install");
	assert_string_equal(boot_mode_name(BOOT_MODE_INSTALL_ERASE), "install-erase");
	assert_string_equal(boot_mode_name(BOOT_MODE_DIAG), "diag");
	assert_string_equal(boot_mode_name((enum boot_mode)99), "?");
	/* Every name but "serve" parses back to its mode. */
	for (int i = BOOT_MODE_LIVE; i <= BOOT_MODE_DIAG; i++) {
		char line[64] = "urmqtt.mode=";
		strcat(line, boot_mode_name((enum boot_mode)i));
		enum boot_mode m;
		assert_int_equal(boot_mode_parse(line, sizeof line, &m), 0);
		assert_int_equal(m, (enum boot_mode)i);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_length_bounds),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
