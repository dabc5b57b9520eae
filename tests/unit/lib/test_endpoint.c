/* SPDX-License-Identifier: MIT
 * Unit tests for lib/endpoint: accepted and refused spellings, the default port, and the
 * edges of every address class. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/endpoint.h"
#include "lib/err.h"

static void test_parse_accepts(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		uint32_t ip;
		uint16_t port;
	} ok[] = {
		{ "10.0.2.2", 0x0a000202u, 514 },
		{ "10.0.2.2:5514", 0x0a000202u, 5514 },
		{ "255.255.255.255:65535", 0xffffffffu, 65535 },
		{ "0.0.0.0:1", 0, 1 },
		{ "192.168.001.010:0123", 0xc0a8010au, 123 },
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		struct endpoint e;
		assert_int_equal(endpoint_parse(ok[i].s, strlen(ok[i].s), 514, &e), 0);
		assert_int_equal(e.ip, ok[i].ip);
		assert_int_equal(e.port, ok[i].port);
	}
}

static void test_parse_refuses(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "10.0.2", "10.0.2.2.", "10.0.2.2.1", "256.0.0.1", "1.2.3.1000", "1..2.3",
		" 10.0.2.2", "10.0.2.2 ", "10.0.2.2:", "10.0.2.2:0", "10.0.2.2:65536", "10.0.2.2:123456",
		"10.0.2.2:12a", "10.0.2.2:+5", "-1.0.0.0", "a.b.c.d", "10.0.2.2;514", ":514",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct endpoint e = { 7, 7 };
		assert_int_equal(endpoint_parse(bad[i], strlen(bad[i]), 514, &e), -E_INVAL);
		assert_int_equal(e.ip, 7); /* untouched */
	}
	/* only len bytes are read: the same text cut short is refused or shorter */
	struct endpoint e;
	assert_int_equal(endpoint_parse("10.0.2.2:5514", 8, 9, &e), 0);
	assert_int_equal(e.port, 9);
	/* a default port of 0 means the port is required */
	assert_int_equal(endpoint_parse("10.0.2.2", 8, 0, &e), -E_INVAL);
}

static void test_classes(void **state)
{
	(void)state;
	assert_false(endpoint_unicast(0x00000000u));
	assert_false(endpoint_unicast(0x00ffffffu));
	assert_true(endpoint_unicast(0x01000000u));
	assert_false(endpoint_unicast(0x7f000001u));
	assert_true(endpoint_unicast(0xdfffffffu));
	assert_false(endpoint_unicast(0xe0000001u)); /* multicast */
	assert_false(endpoint_unicast(0xf0000001u)); /* reserved */
	assert_false(endpoint_unicast(0xffffffffu));
	static const struct {
		uint32_t ip;
		bool priv;
	} p[] = {
		{ 0x0a000000u, true },  { 0x0affffffu, true },  { 0x09ffffffu, false }, { 0x0b000000u, false },
		{ 0xac100000u, true },  { 0xac1fffffu, true },  { 0xac0fffffu, false }, { 0xac200000u, false },
		{ 0xc0a80000u, true },  { 0xc0a8ffffu, true },  { 0xc0a7ffffu, false }, { 0xc0a90000u, false },
		{ 0x64400000u, true },  { 0x647fffffu, true },  { 0x643fffffu, false }, { 0x64800000u, false },
		{ 0x08080808u, false }, { 0x7f000001u, false },
	};
	for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
		assert_int_equal(endpoint_private(p[i].ip), p[i].priv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_accepts),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_classes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
