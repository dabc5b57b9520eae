/* SPDX-License-Identifier: MIT
 * Unit tests for the fleet's ring (mqtt/fleet.c, ADR-072): member strings and keys accepted
 * and refused, list rules, the invariants (and that mqtt_fleet_check sees a broken ring),
 * near-equal shares for 3 appliances, a home independent of the members' order, and the
 * stability of a ring change: adding a 4th appliance moves about a quarter of the
 * identities, all to it; removing one moves only its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/fleet.h"

/* The configuration's default ring key (fleet.ring_key): "urmqtt-fleet-key". */
static const char key_hex[] = "75726d7174742d666c6565742d6b6579";
#define N_IDS 30000u

static struct mqtt_fleet f1, f2; /* 37 KiB each: not on the stack */

static void key_of(uint8_t key[MQTT_FLEET_KEY_LEN])
{
	assert_int_equal(mqtt_fleet_key_parse(key_hex, strlen(key_hex), key), 0);
}

static void build(struct mqtt_fleet *f, const char *const *m, size_t n, const char *self, uint32_t vnodes)
{
	uint8_t key[MQTT_FLEET_KEY_LEN];
	const char *why = NULL;
	key_of(key);
	assert_int_equal(mqtt_fleet_init(f, m, n, self, strlen(self), key, vnodes, &why), 0);
	assert_int_equal(mqtt_fleet_check(f), 0);
}

static const char *home_name(const struct mqtt_fleet *f, uint32_t i, char *buf /* out, 64 B */)
{
	char id[32];
	snprintf(id, sizeof id, "dev-%u", i);
	const struct mqtt_fleet_member *m = mqtt_fleet_member(f, mqtt_fleet_home(f, (const uint8_t *)id, strlen(id)));
	snprintf(buf, 64, "%.*s", (int)m->name_len, m->name);
	return buf;
}

static void test_member_parse(void **state)
{
	(void)state;
	static const char *const good[] = { "a=10.79.1.2:8883", "eu-1=mqtt-eu-1.example.com:8883", "X_9.z=h:1",
					    "n=host:65535", "abcdefghijklmnopqrstuvwxyz012345=h:1" };
	static const char *const bad[] = {
		"",          "a",          "=h:1",           "a=",          "a=h",         "a=h:",       "a=:1",
		"a=h:0",     "a=h:01",     "a=h:65536",      "a=h:123456",  "a=h:1x",      "a b=h:1",    "a=h h:1",
		"a=.h:1",    "a=h-:1",     "a=-h:1",         "a=h.:1",      "a=h:1:2",     "a=[::1]:1",  "a/b=h:1",
		"abcdefghijklmnopqrstuvwxyz0123456=h:1", /* 33-byte name */
	};
	struct mqtt_fleet_member m;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		assert_int_equal(mqtt_fleet_member_parse(good[i], strlen(good[i]), &m), 0);
		assert_ptr_equal(m.name, good[i]);
		assert_int_equal(m.name[m.name_len], '=');
		assert_ptr_equal(m.ref, good[i] + m.name_len + 1);
		assert_int_equal(m.ref + m.ref_len, good[i] + strlen(good[i]));
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(mqtt_fleet_member_parse(bad[i], strlen(bad[i]), &m), -E_INVAL);
	/* a host of 253 bytes passes, 254 does not */
	char s[300] = "a=";
	memset(s + 2, 'h', 253);
	strcpy(s + 255, ":1");
	assert_int_equal(mqtt_fleet_member_parse(s, strlen(s), &m), 0);
	assert_int_equal(m.ref_len, 255);
	memset(s + 2, 'h', 254);
	strcpy(s + 256, ":1");
	assert_int_equal(mqtt_fleet_member_parse(s, strlen(s), &m), -E_INVAL);
	/* the length given is what is read: a valid string cut short is refused */
	assert_int_equal(mqtt_fleet_member_parse("a=h:1", 4, &m), -E_INVAL);
}

static void test_key_parse(void **state)
{
	(void)state;
	uint8_t key[MQTT_FLEET_KEY_LEN];
	key_of(key);
	assert_memory_equal(key, "urmqtt-fleet-key", 16);
	assert_int_equal(mqtt_fleet_key_parse("000102030405060708090A0B0C0D0E0F", 32, key), 0);
	assert_int_equal(key[10], 10);
	assert_int_equal(mqtt_fleet_key_parse("000102030405060708090a0b0c0d0e0", 31, key), -E_INVAL);
	assert_int_equal(mqtt_fleet_key_parse("000102030405060708090a0b0c0d0e0f0", 33, key), -E_INVAL);
	assert_int_equal(mqtt_fleet_key_parse("000102030405060708090a0b0c0d0e0g", 32, key), -E_INVAL);
}

static void test_list_rules(void **state)
{
	(void)state;
	const char *why = NULL;
	static const char *const ok[] = { "a=h1:1", "b=h2:1" };
	static const char *const dup[] = { "a=h1:1", "a=h2:1" };
	static const char *const badm[] = { "a=h1:1", "b=h2" };
	assert_int_equal(mqtt_fleet_check_list(ok, 2, "b", 1, &why), 0);
	assert_int_equal(mqtt_fleet_check_list(ok, 2, "c", 1, &why), -E_INVAL);
	assert_string_equal(why, "self is not one of the members");
	assert_int_equal(mqtt_fleet_check_list(ok, 2, "", 0, &why), -E_INVAL);
	assert_int_equal(mqtt_fleet_check_list(dup, 2, "a", 1, &why), -E_INVAL);
	assert_string_equal(why, "two members have the same name");
	assert_int_equal(mqtt_fleet_check_list(badm, 2, "a", 1, &why), -E_INVAL);
	assert_int_equal(mqtt_fleet_check_list(ok, 0, "a", 1, &why), -E_INVAL);
	const char *many[MQTT_FLEET_MAX_MEMBERS + 1];
	char names[MQTT_FLEET_MAX_MEMBERS + 1][16];
	for (size_t i = 0; i <= MQTT_FLEET_MAX_MEMBERS; i++) {
		snprintf(names[i], sizeof names[i], "m%zu=h:1", i);
		many[i] = names[i];
	}
	assert_int_equal(mqtt_fleet_check_list(many, MQTT_FLEET_MAX_MEMBERS, "m0", 2, &why), 0);
	assert_int_equal(mqtt_fleet_check_list(many, MQTT_FLEET_MAX_MEMBERS + 1, "m0", 2, &why), -E_INVAL);
	uint8_t key[MQTT_FLEET_KEY_LEN];
	key_of(key);
	assert_int_equal(mqtt_fleet_init(&f1, ok, 2, "a", 1, key, 0, &why), -E_INVAL);
	assert_int_equal(mqtt_fleet_init(&f1, ok, 2, "a", 1, key, MQTT_FLEET_MAX_VNODES + 1, &why), -E_INVAL);
	/* the largest ring */
	assert_int_equal(mqtt_fleet_init(&f1, many, MQTT_FLEET_MAX_MEMBERS, "m3", 2, key, MQTT_FLEET_MAX_VNODES, &why),
			 0);
	assert_int_equal(f1.n_points, MQTT_FLEET_MAX_POINTS);
	assert_int_equal(f1.self, 3);
	assert_int_equal(mqtt_fleet_check(&f1), 0);
}

static void test_check_sees_damage(void **state)
{
	(void)state;
	static const char *const m[] = { "a=h1:1", "b=h2:1", "c=h3:1" };
	build(&f1, m, 3, "a", 16);
	uint64_t p = f1.pt[5];
	f1.pt[5] = f1.pt[6] + 1;
	assert_int_equal(mqtt_fleet_check(&f1), -E_CORRUPT);
	f1.pt[5] = p;
	f1.owner[7] = 3;
	assert_int_equal(mqtt_fleet_check(&f1), -E_CORRUPT);
	f1.owner[7] = 0;
	f1.self = 3;
	assert_int_equal(mqtt_fleet_check(&f1), -E_CORRUPT);
}

/* 3 appliances with the default 256 points each: every share within 10% of a third. */
static void test_balance(void **state)
{
	(void)state;
	static const char *const m[] = { "a=10.79.1.2:8883", "b=10.79.2.2:8883", "c=10.79.3.2:8883" };
	build(&f1, m, 3, "b", 256);
	uint32_t count[3] = { 0 };
	for (uint32_t i = 0; i < N_IDS; i++) {
		char id[32];
		snprintf(id, sizeof id, "dev-%u", i);
		uint32_t h = mqtt_fleet_home(&f1, (const uint8_t *)id, strlen(id));
		assert_true(h < 3);
		count[h]++;
	}
	print_message("3 x 256 points, %u identities: a %u, b %u, c %u (ideal %u)\n", N_IDS, count[0], count[1],
		      count[2], N_IDS / 3);
	for (int i = 0; i < 3; i++) {
		assert_true(count[i] * 10u > N_IDS / 3u * 9u);
		assert_true(count[i] * 10u < N_IDS / 3u * 11u);
	}
	/* the same names in another order: the same homes */
	static const char *const r[] = { "c=10.79.3.2:8883", "a=10.79.1.2:8883", "b=10.79.2.2:8883" };
	build(&f2, r, 3, "b", 256);
	for (uint32_t i = 0; i < N_IDS; i++) {
		char x[64], y[64];
		assert_string_equal(home_name(&f1, i, x), home_name(&f2, i, y));
	}
}

/* Adding d: about a quarter move, every one of them to d; removing c: only c's move. */
static void test_ring_change(void **state)
{
	(void)state;
	static const char *const m3[] = { "a=h1:1", "b=h2:1", "c=h3:1" };
	static const char *const m4[] = { "a=h1:1", "b=h2:1", "c=h3:1", "d=h4:1" };
	static const char *const m2[] = { "a=h1:1", "b=h2:1" };
	build(&f1, m3, 3, "a", 256);
	build(&f2, m4, 4, "a", 256);
	uint32_t moved = 0;
	for (uint32_t i = 0; i < N_IDS; i++) {
		char x[64], y[64];
		if (strcmp(home_name(&f1, i, x), home_name(&f2, i, y)) != 0) {
			moved++;
			assert_string_equal(y, "d");
		}
	}
	print_message("3 -> 4 appliances: %u of %u identities moved (%.1f%%, ideal 25%%)\n", moved, N_IDS,
		      100.0 * moved / N_IDS);
	assert_true(moved * 100u > N_IDS * 20u && moved * 100u < N_IDS * 30u);

	build(&f2, m2, 2, "a", 256);
	moved = 0;
	for (uint32_t i = 0; i < N_IDS; i++) {
		char x[64], y[64];
		if (strcmp(home_name(&f1, i, x), home_name(&f2, i, y)) != 0) {
			moved++;
			assert_string_equal(x, "c");
		} else {
			assert_string_not_equal(x, "c");
		}
	}
	print_message("3 -> 2 appliances: %u of %u identities moved (c's own)\n", moved, N_IDS);
}

/* Another key, another ring; one point per member still answers for every identity. */
static void test_key_and_tiny_ring(void **state)
{
	(void)state;
	static const char *const m[] = { "a=h1:1", "b=h2:1", "c=h3:1" };
	const char *why = NULL;
	uint8_t k2[MQTT_FLEET_KEY_LEN] = { 1 };
	build(&f1, m, 3, "a", 256);
	assert_int_equal(mqtt_fleet_init(&f2, m, 3, "a", 1, k2, 256, &why), 0);
	uint32_t differ = 0;
	for (uint32_t i = 0; i < 3000; i++) {
		char x[64], y[64];
		differ += strcmp(home_name(&f1, i, x), home_name(&f2, i, y)) != 0;
	}
	assert_true(differ > 1000); /* about two thirds */
	assert_int_equal(mqtt_fleet_init(&f2, m, 3, "c", 1, k2, 1, &why), 0);
	assert_int_equal(mqtt_fleet_check(&f2), 0);
	assert_int_equal(f2.self, 2);
	for (uint32_t i = 0; i < 1000; i++) {
		char id[16];
		snprintf(id, sizeof id, "x%u", i);
		assert_true(mqtt_fleet_home(&f2, (const uint8_t *)id, strlen(id)) < 3);
	}
	assert_true(mqtt_fleet_home(&f2, (const uint8_t *)"", 0) < 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_member_parse),      cmocka_unit_test(test_key_parse),
		cmocka_unit_test(test_list_rules),        cmocka_unit_test(test_check_sees_damage),
		cmocka_unit_test(test_balance),           cmocka_unit_test(test_ring_change),
		cmocka_unit_test(test_key_and_tiny_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
