/* SPDX-License-Identifier: MIT
 *
 * Interest keys (mqtt/broker.h): the 16-bit summaries that let one broker shard skip
 * another that holds no subscription a routed message could match (dp/shard.c keeps the
 * tables). Pure functions of the bytes; no broker state.
 *
 * Design note. The key of a prefix is FNV-1a over (its depth, then its bytes) folded to 16
 * bits; the prefix of depth d is a name's bytes up to the end of its d-th level (depth 0:
 * empty). A filter's key is that of its literal levels before the first wildcard, at most
 * MQTT_INTEREST_DEPTH of them; a topic has one key per depth 0..min(levels, DEPTH).
 * Invariant: every topic a filter matches has, among its keys, the filter's key (the
 * topic's first levels equal the filter's literal ones, and '#' also matching its parent
 * level keeps the depth within the topic's levels). Collisions only add false positives.
 */
#include "mqtt/broker.h"

static uint32_t fnv_start(uint32_t depth)
{
	return (2166136261u ^ depth) * 16777619u;
}

static uint32_t fnv_step(uint32_t h, uint8_t c)
{
	return (h ^ c) * 16777619u;
}

static uint16_t fold(uint32_t h)
{
	return (uint16_t)(h ^ (h >> 16));
}

/* Bytes of the first d levels of p (d <= the levels p has). */
static size_t prefix_len(const uint8_t *p, size_t len, uint32_t d)
{
	if (d == 0)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (p[i] == '/' && --d == 0)
			return i;
	return len;
}

static uint16_t key_of(const uint8_t *p, size_t n, uint32_t depth)
{
	uint32_t h = fnv_start(depth);
	for (size_t i = 0; i < n; i++)
		h = fnv_step(h, p[i]);
	return fold(h);
}

uint16_t mqtt_interest_filter_key(const uint8_t *f, size_t len)
{
	uint32_t literal = 0;
	size_t start = 0;
	for (size_t i = 0; i <= len && literal < MQTT_INTEREST_DEPTH; i++) {
		if (i < len && f[i] != '/')
			continue;
		/* level [start, i) */
		if (i - start == 1 && (f[start] == '+' || f[start] == '#'))
			break;
		literal++;
		start = i + 1;
	}
	return key_of(f, prefix_len(f, len, literal), literal);
}

uint32_t mqtt_interest_topic_keys(const uint8_t *t, size_t len, uint16_t keys[MQTT_INTEREST_DEPTH + 1])
{
	uint32_t n = 0;
	keys[n++] = key_of(t, 0, 0);
	/* At the end of each level, the key of the prefix so far (at most DEPTH + 1 short
	 * hashes: the depth seeds each). */
	for (size_t i = 0; i <= len && n <= MQTT_INTEREST_DEPTH; i++)
		if (i == len || t[i] == '/') {
			keys[n] = key_of(t, i, n);
			n++;
		}
	return n;
}
