/* SPDX-License-Identifier: MIT
 * Unit tests for the interest keys (mqtt/interest.c): for every filter and topic over a
 * small alphabet where the filter matches the topic (by a reference matcher written here
 * from MQTT 3.1.1 section 4.7), the filter's key is among the topic's keys; the keys of
 * known names; and how often unrelated device filters collide (false positives only). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "mqtt/broker.h"

/* Reference matcher: levels compared one by one; '+' one level, '#' the rest (and the
 * parent level); a filter starting with a wildcard never matches a '$' topic. */
static bool ref_match(const char *f, const char *t)
{
	if (t[0] == '$' && (f[0] == '+' || f[0] == '#'))
		return false;
	for (;;) {
		const char *fe = strchr(f, '/'), *te = strchr(t, '/');
		size_t fl = fe ? (size_t)(fe - f) : strlen(f), tl = te ? (size_t)(te - t) : strlen(t);
		if (fl == 1 && f[0] == '#')
			return true;
		if (!(fl == 1 && f[0] == '+') && (fl != tl || memcmp(f, t, fl) != 0))
			return false;
		if (!fe && !te)
			return true;
		if (!te) /* topic ended: only "/#" may follow in the filter */
			return fe && strcmp(fe + 1, "#") == 0;
		if (!fe)
			return false;
		f = fe + 1;
		t = te + 1;
	}
}

static bool has_key(const char *t, uint16_t k)
{
	uint16_t keys[MQTT_INTEREST_DEPTH + 1];
	uint32_t n = mqtt_interest_topic_keys((const uint8_t *)t, strlen(t), keys);
	assert_true(n >= 1 && n <= MQTT_INTEREST_DEPTH + 1);
	for (uint32_t i = 0; i < n; i++)
		if (keys[i] == k)
			return true;
	return false;
}

/* Every name of up to 5 levels over {a, b, $s, ""} (topics) and {a, b, +, #} (filters). */
static const char *const tlev[] = { "a", "b", "$s", "" };
static const char *const flev[] = { "a", "b", "+", "#" };

static size_t names(char out[][32], const char *const *lev, size_t nlev, bool filter)
{
	size_t n = 0;
	for (size_t depth = 1; depth <= 5; depth++) {
		size_t total = 1;
		for (size_t i = 0; i < depth; i++)
			total *= nlev;
		for (size_t code = 0; code < total; code++) {
			char buf[32] = "";
			size_t c = code;
			bool ok = true;
			for (size_t i = 0; i < depth; i++) {
				const char *l = lev[c % nlev];
				c /= nlev;
				if (filter && !strcmp(l, "#") && i != depth - 1)
					ok = false; /* '#' only last */
				if (!filter && !strcmp(l, "$s") && i != 0)
					l = "s";
				if (i)
					strcat(buf, "/");
				strcat(buf, l);
			}
			if (ok)
				strcpy(out[n++], buf);
		}
	}
	return n;
}

static char topics[4000][32], filters[4000][32];

static void test_filter_key_among_topic_keys(void **state)
{
	(void)state;
	size_t nt = names(topics, tlev, 4, false), nf = names(filters, flev, 4, true), matched = 0;
	for (size_t i = 0; i < nf; i++) {
		uint16_t k = mqtt_interest_filter_key((const uint8_t *)filters[i], strlen(filters[i]));
		for (size_t j = 0; j < nt; j++) {
			if (!ref_match(filters[i], topics[j]))
				continue;
			matched++;
			if (!has_key(topics[j], k))
				fail_msg("filter %s matches %s but its key is not the topic's", filters[i], topics[j]);
		}
	}
	print_message("%zu filters x %zu topics, %zu matching pairs checked\n", nf, nt, matched);
	assert_true(matched > 10000);
}

static void test_known_keys(void **state)
{
	(void)state;
	/* A filter's literal prefix, at most three levels, decides its key. */
	const struct {
		const char *filter, *same_as;
	} v[] = {
		{ "#", "+/x" },
		{ "devices/+/telemetry/#", "devices/#" },
		{ "devices/dev-1/cmd/#", "devices/dev-1/cmd/x/y" },
		{ "a/b", "a/b" },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		assert_int_equal(mqtt_interest_filter_key((const uint8_t *)v[i].filter, strlen(v[i].filter)),
				 mqtt_interest_filter_key((const uint8_t *)v[i].same_as, strlen(v[i].same_as)));
	/* Depth is part of the key: "/a" (an empty first level) is not "#"'s key. */
	assert_int_not_equal(mqtt_interest_filter_key((const uint8_t *)"/#", 2),
			     mqtt_interest_filter_key((const uint8_t *)"#", 1));
	uint16_t keys[MQTT_INTEREST_DEPTH + 1];
	assert_int_equal(mqtt_interest_topic_keys((const uint8_t *)"a", 1, keys), 2);
	assert_int_equal(mqtt_interest_topic_keys((const uint8_t *)"a/b/c/d/e", 9, keys), MQTT_INTEREST_DEPTH + 1);
}

/* 10,000 devices' own command filters against another device's telemetry topic: the
 * share of false positives is what the 16-bit keys cost (expected about 4 keys / 2^16 per
 * filter, and none for filters of the same device's other kinds). */
static void test_collisions_are_rare(void **state)
{
	(void)state;
	size_t hits = 0;
	for (int d = 0; d < 10000; d++) {
		char f[64];
		snprintf(f, sizeof f, "devices/dev-%d/cmd/#", d);
		uint16_t k = mqtt_interest_filter_key((const uint8_t *)f, strlen(f));
		hits += has_key("devices/dev-424242/telemetry/t", k);
	}
	print_message("false positives: %zu of 10000\n", hits);
	assert_true(hits < 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filter_key_among_topic_keys),
		cmocka_unit_test(test_known_keys),
		cmocka_unit_test(test_collisions_are_rare),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
