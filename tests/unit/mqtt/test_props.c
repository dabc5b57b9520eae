/* SPDX-License-Identifier: MIT
 * Unit tests for mqtt/props: the identifier table against a second copy written from the
 * specification, every property in every packet kind (accepted where 2.2.2.2 allows it,
 * rejected where not), repetition, unknown identifiers, truncation at every byte,
 * varints, UTF-8, the values the specification forbids, the encoder's exact bytes, and
 * decode(encode(x)) == x for random property sets from a seeded generator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/props.h"

#define NK MQTT_PROPS__COUNT

/* A second copy of 2.2.2.2's table, independent of the MQTT_PROPS_TABLE macro. */
enum { CN = 1 << 0, WI = 1 << 1, CA = 1 << 2, PU = 1 << 3, PA = 1 << 4, SU = 1 << 5,
       SA = 1 << 6, UN = 1 << 7, UA = 1 << 8, DI = 1 << 9, AU = 1 << 10 };
static const struct {
	uint8_t id;
	enum mqtt_prop_type t;
	unsigned kinds;
} spec[] = {
	{ 0x01, MQTT_PT_BYTE, PU | WI },
	{ 0x02, MQTT_PT_U32, PU | WI },
	{ 0x03, MQTT_PT_UTF8, PU | WI },
	{ 0x08, MQTT_PT_UTF8, PU | WI },
	{ 0x09, MQTT_PT_BINARY, PU | WI },
	{ 0x0B, MQTT_PT_VARINT, PU | SU },
	{ 0x11, MQTT_PT_U32, CN | CA | DI },
	{ 0x12, MQTT_PT_UTF8, CA },
	{ 0x13, MQTT_PT_U16, CA },
	{ 0x15, MQTT_PT_UTF8, CN | CA | AU },
	{ 0x16, MQTT_PT_BINARY, CN | CA | AU },
	{ 0x17, MQTT_PT_BYTE, CN },
	{ 0x18, MQTT_PT_U32, WI },
	{ 0x19, MQTT_PT_BYTE, CN },
	{ 0x1A, MQTT_PT_UTF8, CA },
	{ 0x1C, MQTT_PT_UTF8, CA | DI },
	{ 0x1F, MQTT_PT_UTF8, CA | PA | SA | UA | DI | AU },
	{ 0x21, MQTT_PT_U16, CN | CA },
	{ 0x22, MQTT_PT_U16, CN | CA },
	{ 0x23, MQTT_PT_U16, PU },
	{ 0x24, MQTT_PT_BYTE, CA },
	{ 0x25, MQTT_PT_BYTE, CA },
	{ 0x26, MQTT_PT_PAIR, CN | WI | CA | PU | PA | SU | SA | UN | UA | DI | AU },
	{ 0x27, MQTT_PT_U32, CN | CA },
	{ 0x28, MQTT_PT_BYTE, CA },
	{ 0x29, MQTT_PT_BYTE, CA },
	{ 0x2A, MQTT_PT_BYTE, CA },
};
#define NSPEC (sizeof spec / sizeof spec[0])

/* Bytes of one property with a valid sample value. */
static size_t sample(uint8_t id, uint8_t *out)
{
	size_t n = 0;
	out[n++] = id;
	switch (mqtt_prop_type(id)) {
	case MQTT_PT_BYTE: out[n++] = 1; break;
	case MQTT_PT_U16: memcpy(out + n, "\x01\x02", 2); n += 2; break;
	case MQTT_PT_U32: memcpy(out + n, "\x01\x02\x03\x04", 4); n += 4; break;
	case MQTT_PT_VARINT: memcpy(out + n, "\x81\x01", 2); n += 2; break; /* 129 */
	case MQTT_PT_UTF8: memcpy(out + n, "\x00\x05" "a/\xc3\xa9z", 7); n += 7; break;
	case MQTT_PT_BINARY: memcpy(out + n, "\x00\x03\x00\xff\x80", 5); n += 5; break;
	case MQTT_PT_PAIR: memcpy(out + n, "\x00\x01k\x00\x02vv", 7); n += 7; break;
	case MQTT_PT_NONE:
	default: fail_msg("no sample for %#x", id);
	}
	return n;
}

/* The last block dec_body decoded: views borrow it until the next call. */
static uint8_t *g_last;
static int free_last(void **state)
{
	(void)state;
	free(g_last);
	g_last = NULL;
	return 0;
}

/* Decode a whole block given without its Property Length from an exact-size heap copy
 * (ASan sees any over-read); the cursor must end exactly at the end. */
static int dec_body(const uint8_t *body, size_t n, enum mqtt_props_pkt k, struct mqtt_props *p,
		    enum mqtt_props_rej *rej)
{
	uint8_t *buf = malloc(n + 4);
	size_t h = 0;
	size_t v = n;
	do {
		buf[h] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			buf[h] |= 0x80;
		h++;
	} while (v);
	memcpy(buf + h, body, n);
	uint8_t *exact = malloc(h + n);
	memcpy(exact, buf, h + n);
	free(buf);
	struct cur c = cur_make(exact, h + n);
	int rc = mqtt_props_decode(&c, k, p, rej);
	if (rc == 0) {
		assert_true(cur_done(&c));
		assert_int_equal(*rej, MQTT_PROPS_REJ_NONE);
	} else {
		assert_int_equal(rc, -E_PROTO);
		assert_true(*rej > MQTT_PROPS_REJ_NONE && *rej < MQTT_PROPS_REJ__COUNT);
	}
	free(g_last);
	g_last = exact;
	return rc;
}

static int dec_raw(const uint8_t *p, size_t n, enum mqtt_props_pkt k, struct mqtt_props *out,
		   enum mqtt_props_rej *rej, size_t *used)
{
	uint8_t *exact = malloc(n ? n : 1);
	memcpy(exact, p, n);
	struct cur c = cur_make(exact, n);
	int rc = mqtt_props_decode(&c, k, out, rej);
	if (used)
		*used = c.pos;
	free(exact);
	return rc;
}

static void test_table(void **state)
{
	(void)state;
	unsigned known = 0;
	for (unsigned id = 0; id < 256; id++) {
		size_t s = 0;
		while (s < NSPEC && spec[s].id != id)
			s++;
		if (s == NSPEC) {
			assert_int_equal(mqtt_prop_type((uint8_t)id), MQTT_PT_NONE);
			for (unsigned k = 0; k < NK; k++)
				assert_false(mqtt_prop_allowed((uint8_t)id, (enum mqtt_props_pkt)k));
			continue;
		}
		known++;
		assert_int_equal(mqtt_prop_type((uint8_t)id), spec[s].t);
		for (unsigned k = 0; k < NK; k++)
			if (mqtt_prop_allowed((uint8_t)id, (enum mqtt_props_pkt)k) !=
			    ((spec[s].kinds >> k) & 1))
				fail_msg("id %#x kind %u: table disagrees with the spec copy", id, k);
	}
	assert_int_equal(known, 27);
	assert_int_equal(MQTT_PROPS_N_IDS, 27);
	assert_false(mqtt_prop_allowed(0x26, MQTT_PROPS__COUNT));
}

/* Every property alone in every kind: accepted where allowed (and re-encoded to the same
 * bytes), MQTT_PROPS_REJ_PACKET where not. */
static void test_every_property_every_kind(void **state)
{
	(void)state;
	for (size_t s = 0; s < NSPEC; s++) {
		uint8_t id = spec[s].id;
		for (unsigned k = 0; k < NK; k++) {
			uint8_t body[32];
			size_t n = 0;
			bool allowed = (spec[s].kinds >> k) & 1;
			if (id == MQTT_PROP_AUTH_DATA && allowed)
				n += sample(MQTT_PROP_AUTH_METHOD, body); /* data needs a method */
			n += sample(id, body + n);
			struct mqtt_props p;
			enum mqtt_props_rej rej;
			int rc = dec_body(body, n, (enum mqtt_props_pkt)k, &p, &rej);
			if (!allowed) {
				if (rc != -E_PROTO || rej != MQTT_PROPS_REJ_PACKET)
					fail_msg("id %#x kind %u: rc %d rej %d, want PACKET", id, k, rc, rej);
				continue;
			}
			if (rc != 0)
				fail_msg("id %#x kind %u: rejected (%d)", id, k, rej);
			assert_true(mqtt_props_fit(&p, (enum mqtt_props_pkt)k));
			if (id == MQTT_PROP_USER) {
				assert_int_equal(p.user.n, 1);
				assert_int_equal(p.user.len, n);
			} else if (id == MQTT_PROP_SUB_ID) {
				assert_int_equal(p.sub_ids.n, 1);
				assert_int_equal(p.sub_id, 129);
			}
			assert_true(p.present & MQTT_PROP_BIT(id));
			/* one property: the canonical order is the only order */
			uint8_t out[40];
			struct wcur w = wcur_make(out, sizeof out);
			assert_int_equal(mqtt_props_write(&w, &p), 0);
			assert_int_equal(w.pos, mqtt_props_len(&p));
			assert_int_equal(out[0], n);
			assert_memory_equal(out + 1, body, n);
		}
	}
}

static void test_values_decoded(void **state)
{
	(void)state;
	/* CONNACK with one of each integer kind: check the field each lands in */
	const uint8_t b[] = { 0x11, 0, 0, 0x0e, 0x10, 0x13, 0x01, 0x2c, 0x21, 0x00, 0x14,
			      0x22, 0x00, 0x00, 0x24, 0x00, 0x25, 0x01, 0x27, 0x00, 0x01, 0x00, 0x00,
			      0x28, 0x00, 0x29, 0x01, 0x2a, 0x00 };
	struct mqtt_props p;
	enum mqtt_props_rej rej;
	assert_int_equal(dec_body(b, sizeof b, MQTT_PROPS_CONNACK, &p, &rej), 0);
	assert_int_equal(p.session_expiry_s, 3600);
	assert_int_equal(p.server_keepalive_s, 300);
	assert_int_equal(p.receive_max, 20);
	assert_int_equal(p.topic_alias_max, 0); /* 0 is a value: no aliases */
	assert_true(p.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAX));
	assert_int_equal(p.max_qos, 0);
	assert_int_equal(p.retain_available, 1);
	assert_int_equal(p.max_packet_size, 65536);
	assert_int_equal(p.wildcard_sub_available, 0);
	assert_int_equal(p.sub_id_available, 1);
	assert_int_equal(p.shared_sub_available, 0);
	assert_false(p.present & MQTT_PROP_BIT(MQTT_PROP_REASON_STRING));
	/* empty block */
	size_t used;
	assert_int_equal(dec_raw((const uint8_t *)"\x00\xaa", 2, MQTT_PROPS_PUBACK, &p, &rej, &used), 0);
	assert_int_equal(used, 1); /* what follows the block is the caller's */
	assert_int_equal(p.present, 0);
	assert_int_equal(p.user.n, 0);
	/* sub id at the varint limits */
	assert_int_equal(dec_body((const uint8_t *)"\x0b\x01", 2, MQTT_PROPS_SUBSCRIBE, &p, &rej), 0);
	assert_int_equal(p.sub_id, 1);
	assert_int_equal(dec_body((const uint8_t *)"\x0b\xff\xff\xff\x7f", 5, MQTT_PROPS_SUBSCRIBE, &p, &rej), 0);
	assert_int_equal(p.sub_id, 268435455);
	/* binary data may hold any byte, UTF-8 strings may be empty */
	assert_int_equal(dec_body((const uint8_t *)"\x09\x00\x02\x00\xff\x03\x00\x00", 8, MQTT_PROPS_PUBLISH, &p, &rej), 0);
	assert_int_equal(p.correlation_data.len, 2);
	assert_int_equal(p.content_type.len, 0);
}

static void test_duplicates(void **state)
{
	(void)state;
	for (size_t s = 0; s < NSPEC; s++) {
		uint8_t id = spec[s].id;
		for (unsigned k = 0; k < NK; k++) {
			if (!((spec[s].kinds >> k) & 1))
				continue;
			uint8_t body[48];
			size_t n = 0;
			if (id == MQTT_PROP_AUTH_DATA)
				n += sample(MQTT_PROP_AUTH_METHOD, body);
			n += sample(id, body + n);
			n += sample(id, body + n);
			struct mqtt_props p;
			enum mqtt_props_rej rej;
			int rc = dec_body(body, n, (enum mqtt_props_pkt)k, &p, &rej);
			bool may_repeat = id == MQTT_PROP_USER || (id == MQTT_PROP_SUB_ID && k == MQTT_PROPS_PUBLISH);
			if (may_repeat) {
				if (rc != 0)
					fail_msg("id %#x kind %u: repetition refused (%d)", id, k, rej);
				if (id == MQTT_PROP_SUB_ID)
					assert_int_equal(p.sub_ids.n, 2);
			} else if (rc != -E_PROTO || rej != MQTT_PROPS_REJ_DUP) {
				fail_msg("id %#x kind %u: rc %d rej %d, want DUP", id, k, rc, rej);
			}
		}
	}
}

static void test_unknown_ids(void **state)
{
	(void)state;
	for (unsigned id = 0; id < 256; id++) {
		if (mqtt_prop_type((uint8_t)id) != MQTT_PT_NONE)
			continue;
		uint8_t body[] = { (uint8_t)id, 0, 0, 0, 0 };
		for (unsigned k = 0; k < NK; k++) {
			struct mqtt_props p;
			enum mqtt_props_rej rej;
			assert_int_equal(dec_body(body, sizeof body, (enum mqtt_props_pkt)k, &p, &rej), -E_PROTO);
			assert_int_equal(rej, MQTT_PROPS_REJ_ID);
		}
	}
	/* a two-byte identifier varint naming 1 is still no 5.0 identifier */
	struct mqtt_props p;
	enum mqtt_props_rej rej;
	assert_int_equal(dec_body((const uint8_t *)"\x81\x00\x01", 3, MQTT_PROPS_PUBLISH, &p, &rej), -E_PROTO);
	assert_int_equal(rej, MQTT_PROPS_REJ_ID);
	/* an unknown identifier after a good one */
	assert_int_equal(dec_body((const uint8_t *)"\x01\x01\x04", 3, MQTT_PROPS_PUBLISH, &p, &rej), -E_PROTO);
	assert_int_equal(rej, MQTT_PROPS_REJ_ID);
	/* a kind out of range */
	assert_int_equal(dec_raw((const uint8_t *)"\x00", 1, MQTT_PROPS__COUNT, &p, &rej, NULL), -E_PROTO);
}

/* Every property cut at every byte: SHORT when the Property Length says the cut size,
 * LEN when it promises more than is there. */
static void test_truncated(void **state)
{
	(void)state;
	for (size_t s = 0; s < NSPEC; s++) {
		uint8_t id = spec[s].id;
		unsigned k = 0;
		while (!((spec[s].kinds >> k) & 1))
			k++;
		uint8_t body[32];
		size_t n = sample(id, body);
		for (size_t cut = 1; cut < n; cut++) {
			struct mqtt_props p;
			enum mqtt_props_rej rej;
			if (dec_body(body, cut, (enum mqtt_props_pkt)k, &p, &rej) != -E_PROTO || rej != MQTT_PROPS_REJ_SHORT)
				fail_msg("id %#x cut %zu: rej %d, want SHORT", id, cut, rej);
			uint8_t raw[40];
			raw[0] = (uint8_t)n;
			memcpy(raw + 1, body, cut);
			assert_int_equal(dec_raw(raw, 1 + cut, (enum mqtt_props_pkt)k, &p, &rej, NULL), -E_PROTO);
			assert_int_equal(rej, MQTT_PROPS_REJ_LEN);
		}
	}
	/* a pair whose value is cut */
	struct mqtt_props p;
	enum mqtt_props_rej rej;
	assert_int_equal(dec_body((const uint8_t *)"\x26\x00\x01k\x00\x03vv", 8, MQTT_PROPS_AUTH, &p, &rej), -E_PROTO);
	assert_int_equal(rej, MQTT_PROPS_REJ_SHORT);
}

struct raw_case {
	const char *name;
	const uint8_t *p;
	size_t n;
	enum mqtt_props_pkt k;
	enum mqtt_props_rej rej;
};
#define B(...) ((const uint8_t[]){ __VA_ARGS__ }), sizeof((const uint8_t[]){ __VA_ARGS__ })
#define R(name, k, rej, ...) { name, B(__VA_ARGS__), MQTT_PROPS_##k, MQTT_PROPS_REJ_##rej }
static const struct raw_case raw_cases[] = {
	/* Property Length */
	{ "empty input", (const uint8_t *)"", 0, MQTT_PROPS_CONNECT, MQTT_PROPS_REJ_LEN },
	R("length non-minimal", CONNECT, LEN, 0x80, 0x00),
	R("length non-minimal 3", CONNECT, LEN, 0x81, 0x80, 0x00, 0x01),
	R("length 5 bytes", CONNECT, LEN, 0x80, 0x80, 0x80, 0x80, 0x00),
	R("length cut", CONNECT, LEN, 0x80),
	R("length > left", CONNECT, LEN, 0x03, 0x11, 0x00),
	R("length 2-byte > left", CONNECT, LEN, 0x80, 0x01, 0x11, 0, 0, 0, 0),
	/* Subscription Identifier varint */
	R("sub id non-minimal", SUBSCRIBE, VARINT, 0x03, 0x0b, 0x80, 0x00),
	R("sub id 5 bytes", SUBSCRIBE, VARINT, 0x06, 0x0b, 0xff, 0xff, 0xff, 0xff, 0x01),
	R("sub id cut", SUBSCRIBE, SHORT, 0x02, 0x0b, 0x80),
	R("sub id 0", SUBSCRIBE, ZERO, 0x02, 0x0b, 0x00),
	R("sub id 0 publish", PUBLISH, ZERO, 0x04, 0x0b, 0x01, 0x0b, 0x00),
	/* forbidden zeros */
	R("receive max 0 connect", CONNECT, ZERO, 0x03, 0x21, 0, 0),
	R("receive max 0 connack", CONNACK, ZERO, 0x03, 0x21, 0, 0),
	R("max packet 0 connect", CONNECT, ZERO, 0x05, 0x27, 0, 0, 0, 0),
	R("max packet 0 connack", CONNACK, ZERO, 0x05, 0x27, 0, 0, 0, 0),
	R("topic alias 0", PUBLISH, ZERO, 0x03, 0x23, 0, 0),
	/* 0/1 bytes */
	R("payload format 2", PUBLISH, BOOL, 0x02, 0x01, 0x02),
	R("payload format 0xff will", WILL, BOOL, 0x02, 0x01, 0xff),
	R("request problem 2", CONNECT, BOOL, 0x02, 0x17, 0x02),
	R("request response 2", CONNECT, BOOL, 0x02, 0x19, 0x02),
	R("max qos 2", CONNACK, BOOL, 0x02, 0x24, 0x02),
	R("retain available 2", CONNACK, BOOL, 0x02, 0x25, 0x02),
	R("wildcard available 2", CONNACK, BOOL, 0x02, 0x28, 0x02),
	R("sub id available 2", CONNACK, BOOL, 0x02, 0x29, 0x02),
	R("shared available 2", CONNACK, BOOL, 0x02, 0x2a, 0x02),
	/* UTF-8 */
	R("content type NUL", PUBLISH, UTF8, 0x04, 0x03, 0x00, 0x01, 0x00),
	R("content type surrogate", PUBLISH, UTF8, 0x06, 0x03, 0x00, 0x03, 0xed, 0xa0, 0x80),
	R("content type overlong", PUBLISH, UTF8, 0x05, 0x03, 0x00, 0x02, 0xc0, 0xaf),
	R("content type > U+10FFFF", PUBLISH, UTF8, 0x07, 0x03, 0x00, 0x04, 0xf4, 0x90, 0x80, 0x80),
	R("response topic bad", WILL, UTF8, 0x04, 0x08, 0x00, 0x01, 0xff),
	R("assigned id bad", CONNACK, UTF8, 0x04, 0x12, 0x00, 0x01, 0x80),
	R("auth method bad", AUTH, UTF8, 0x05, 0x15, 0x00, 0x02, 0xe2, 0x82),
	R("response info bad", CONNACK, UTF8, 0x04, 0x1a, 0x00, 0x01, 0x00),
	R("server ref bad", DISCONNECT, UTF8, 0x04, 0x1c, 0x00, 0x01, 0xfe),
	R("reason string bad", PUBACK, UTF8, 0x04, 0x1f, 0x00, 0x01, 0xc1),
	R("user key bad", SUBSCRIBE, UTF8, 0x07, 0x26, 0x00, 0x01, 0x00, 0x00, 0x01, 'v'),
	R("user value bad", UNSUBSCRIBE, UTF8, 0x07, 0x26, 0x00, 0x01, 'k', 0x00, 0x01, 0xff),
	/* Response Topic is a Topic Name */
	R("response topic wildcard", PUBLISH, TOPIC, 0x06, 0x08, 0x00, 0x03, 'a', '/', '#'),
	R("response topic plus", WILL, TOPIC, 0x04, 0x08, 0x00, 0x01, '+'),
	R("response topic empty", PUBLISH, TOPIC, 0x03, 0x08, 0x00, 0x00),
	/* Authentication Data needs a Method */
	R("auth data alone connect", CONNECT, AUTH_DATA, 0x04, 0x16, 0x00, 0x01, 0x00),
	R("auth data alone connack", CONNACK, AUTH_DATA, 0x03, 0x16, 0x00, 0x00),
	R("auth data alone auth", AUTH, AUTH_DATA, 0x04, 0x16, 0x00, 0x01, 0x07),
	/* not allowed here (a sample per rule: client-only, server-only, will-only) */
	R("sub id in will", WILL, PACKET, 0x02, 0x0b, 0x01),
	R("will delay in connect", CONNECT, PACKET, 0x05, 0x18, 0, 0, 0, 1),
	R("max qos in connect", CONNECT, PACKET, 0x02, 0x24, 0x01),
	R("reason string in connect", CONNECT, PACKET, 0x03, 0x1f, 0x00, 0x00),
	R("reason string in publish", PUBLISH, PACKET, 0x03, 0x1f, 0x00, 0x00),
	R("topic alias in will", WILL, PACKET, 0x03, 0x23, 0x00, 0x01),
	R("session expiry in auth", AUTH, PACKET, 0x05, 0x11, 0, 0, 0, 1),
	R("sub id in unsubscribe", UNSUBSCRIBE, PACKET, 0x02, 0x0b, 0x01),
};

static void test_rejections(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof raw_cases / sizeof raw_cases[0]; i++) {
		const struct raw_case *c = &raw_cases[i];
		struct mqtt_props p;
		enum mqtt_props_rej rej = MQTT_PROPS_REJ_NONE;
		int rc = dec_raw(c->p, c->n, c->k, &p, &rej, NULL);
		if (rc != -E_PROTO || rej != c->rej)
			fail_msg("case '%s': rc %d rej %d, want rej %d", c->name, rc, rej, c->rej);
	}
	/* what is fine beside those */
	struct mqtt_props p;
	enum mqtt_props_rej rej;
	assert_int_equal(dec_body((const uint8_t *)"\x22\x00\x00", 3, MQTT_PROPS_CONNECT, &p, &rej), 0);
	assert_int_equal(dec_body((const uint8_t *)"\x15\x00\x01m", 4, MQTT_PROPS_AUTH, &p, &rej), 0);
	assert_int_equal(dec_body((const uint8_t *)"\x16\x00\x00\x15\x00\x01m", 7, MQTT_PROPS_CONNECT, &p, &rej), 0);
	assert_int_equal(dec_body((const uint8_t *)"\x01\x00\x17\x00", 2, MQTT_PROPS_PUBLISH, &p, &rej), 0);
	assert_int_equal(dec_body((const uint8_t *)"\x17\x00\x19\x01", 4, MQTT_PROPS_CONNECT, &p, &rej), 0);
	assert_int_equal(dec_body((const uint8_t *)"\x08\x00\x03" "a/b", 6, MQTT_PROPS_WILL, &p, &rej), 0);
}

static void test_reason_codes(void **state)
{
	(void)state;
	static const enum mqtt_props_rej malformed[] = { MQTT_PROPS_REJ_LEN, MQTT_PROPS_REJ_ID,
		MQTT_PROPS_REJ_PACKET, MQTT_PROPS_REJ_SHORT, MQTT_PROPS_REJ_VARINT, MQTT_PROPS_REJ_UTF8 };
	static const enum mqtt_props_rej proto[] = { MQTT_PROPS_REJ_DUP, MQTT_PROPS_REJ_ZERO,
		MQTT_PROPS_REJ_BOOL, MQTT_PROPS_REJ_TOPIC, MQTT_PROPS_REJ_AUTH_DATA };
	for (size_t i = 0; i < sizeof malformed / sizeof malformed[0]; i++)
		assert_int_equal(mqtt_props_rej_rc(malformed[i]), 0x81);
	for (size_t i = 0; i < sizeof proto / sizeof proto[0]; i++)
		assert_int_equal(mqtt_props_rej_rc(proto[i]), 0x82);
	assert_int_equal(1 + sizeof malformed / sizeof malformed[0] + sizeof proto / sizeof proto[0],
			 MQTT_PROPS_REJ__COUNT);
	/* spot checks of 2.4's table */
	assert_int_equal(MQTT_RC_SUCCESS, 0);
	assert_int_equal(MQTT_RC_NORMAL_DISCONNECTION, 0);
	assert_int_equal(MQTT_RC_GRANTED_QOS_2, 2);
	assert_int_equal(MQTT_RC_DISCONNECT_WITH_WILL, 4);
	assert_int_equal(MQTT_RC_NO_MATCHING_SUBSCRIBERS, 0x10);
	assert_int_equal(MQTT_RC_REAUTHENTICATE, 0x19);
	assert_int_equal(MQTT_RC_UNSPECIFIED_ERROR, 0x80);
	assert_int_equal(MQTT_RC_BANNED, 0x8a);
	assert_int_equal(MQTT_RC_TOPIC_ALIAS_INVALID, 0x94);
	assert_int_equal(MQTT_RC_PAYLOAD_FORMAT_INVALID, 0x99);
	assert_int_equal(MQTT_RC_CONNECTION_RATE_EXCEEDED, 0x9f);
	assert_int_equal(MQTT_RC_WILDCARD_SUBS_NOT_SUPPORTED, 0xa2);
}

/* Lists interleaved with other properties: iterated in order, zero copy, re-encoded as
 * one run at their identifier's place. */
static void test_lists(void **state)
{
	(void)state;
	const uint8_t b[] = { 0x26, 0, 1, 'a', 0, 1, '1',
			      0x0b, 0x05,
			      0x02, 0, 0, 0, 9,
			      0x26, 0, 2, 'b', 'b', 0, 0,
			      0x0b, 0x80, 0x01,
			      0x23, 0, 7,
			      0x26, 0, 1, 'a', 0, 1, '3' };
	uint8_t raw[sizeof b + 1];
	raw[0] = sizeof b;
	memcpy(raw + 1, b, sizeof b);
	struct cur c = cur_make(raw, sizeof raw);
	struct mqtt_props p;
	enum mqtt_props_rej rej;
	assert_int_equal(mqtt_props_decode(&c, MQTT_PROPS_PUBLISH, &p, &rej), 0);
	assert_int_equal(p.user.n, 3);
	assert_int_equal(p.user.len, 7 + 7 + 7);
	assert_ptr_equal(p.user.p, raw + 1);
	assert_int_equal(p.user.span, sizeof b);
	assert_int_equal(p.sub_ids.n, 2);
	assert_int_equal(p.sub_id, 5);
	assert_int_equal(p.message_expiry_s, 9);
	assert_int_equal(p.topic_alias, 7);
	struct mqtt_props_list it = p.user;
	struct mqtt_str k, v;
	const char *keys[] = { "a", "bb", "a" }, *vals[] = { "1", "", "3" };
	for (int i = 0; i < 3; i++) {
		assert_true(mqtt_props_user_next(&it, &k, &v));
		assert_int_equal(k.len, strlen(keys[i]));
		assert_memory_equal(k.p, keys[i], k.len);
		assert_int_equal(v.len, strlen(vals[i]));
		if (v.len)
			assert_memory_equal(v.p, vals[i], v.len);
		assert_true(k.p > raw && k.p < raw + sizeof raw); /* zero copy */
	}
	assert_false(mqtt_props_user_next(&it, &k, &v));
	it = p.sub_ids;
	uint32_t id;
	assert_true(mqtt_props_sub_id_next(&it, &id));
	assert_int_equal(id, 5);
	assert_true(mqtt_props_sub_id_next(&it, &id));
	assert_int_equal(id, 128);
	assert_false(mqtt_props_sub_id_next(&it, &id));
	/* re-encoded in identifier order */
	uint8_t out[64];
	struct wcur w = wcur_make(out, sizeof out);
	assert_int_equal(mqtt_props_write(&w, &p), 0);
	const uint8_t want[] = { sizeof b,
				 0x02, 0, 0, 0, 9,
				 0x0b, 0x05, 0x0b, 0x80, 0x01,
				 0x23, 0, 7,
				 0x26, 0, 1, 'a', 0, 1, '1',
				 0x26, 0, 2, 'b', 'b', 0, 0,
				 0x26, 0, 1, 'a', 0, 1, '3' };
	assert_int_equal(w.pos, sizeof want);
	assert_memory_equal(out, want, sizeof want);
	struct mqtt_props q;
	c = cur_make(out, w.pos);
	assert_int_equal(mqtt_props_decode(&c, MQTT_PROPS_PUBLISH, &q, &rej), 0);
	assert_true(mqtt_props_equal(&p, &q));
	assert_int_equal(q.user.span, q.user.len); /* contiguous now */
}

/* The server's CONNACK and forwarded PUBLISH built from values: exact bytes. */
static void test_encoder(void **state)
{
	(void)state;
	struct mqtt_props p = { 0 };
	p.present = MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY) | MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAX) |
		    MQTT_PROP_BIT(MQTT_PROP_MAX_QOS) | MQTT_PROP_BIT(MQTT_PROP_REASON_STRING) |
		    MQTT_PROP_BIT(MQTT_PROP_SHARED_SUB_AVAILABLE);
	p.session_expiry_s = 0x10203040;
	p.receive_max = 0x0102;
	p.max_qos = 1;
	p.shared_sub_available = 0;
	p.reason_string = (struct mqtt_str){ (const uint8_t *)"ok", 2 };
	p.topic_alias = 9; /* not present: never written */
	const uint8_t want[] = { 17, 0x11, 0x10, 0x20, 0x30, 0x40, 0x1f, 0, 2, 'o', 'k',
				 0x21, 0x01, 0x02, 0x24, 0x01, 0x2a, 0x00 };
	uint8_t out[64];
	struct wcur w = wcur_make(out, sizeof out);
	assert_int_equal(mqtt_props_len(&p), sizeof want);
	assert_int_equal(mqtt_props_write(&w, &p), 0);
	assert_int_equal(w.pos, sizeof want);
	assert_memory_equal(out, want, sizeof want);
	assert_true(mqtt_props_fit(&p, MQTT_PROPS_CONNACK));
	assert_false(mqtt_props_fit(&p, MQTT_PROPS_PUBLISH));
	/* too small: nothing written, error set, sticky */
	for (size_t room = 0; room < sizeof want; room++) {
		memset(out, 0xee, sizeof out);
		w = wcur_make(out, room);
		assert_int_equal(mqtt_props_write(&w, &p), -E_OVERFLOW);
		assert_true(w.err);
		assert_int_equal(w.pos, 0);
		assert_int_equal(out[0], 0xee);
	}
	/* empty */
	struct mqtt_props e = { 0 };
	w = wcur_make(out, 1);
	assert_int_equal(mqtt_props_write(&w, &e), 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(mqtt_props_len(&e), 1);
	/* forwarded PUBLISH: the server's own subscription identifiers */
	const uint32_t ids[] = { 1, 300, 268435455 };
	struct mqtt_props f = { 0 };
	f.present = MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) | MQTT_PROP_BIT(MQTT_PROP_SUB_ID);
	f.payload_format = 1;
	f.sub_id = 1;
	f.sub_ids.n = 3;
	f.sub_id_vals = ids;
	const uint8_t want2[] = { 12, 0x01, 0x01, 0x0b, 0x01, 0x0b, 0xac, 0x02, 0x0b, 0xff, 0xff, 0xff, 0x7f };
	w = wcur_make(out, sizeof out);
	assert_int_equal(mqtt_props_write(&w, &f), 0);
	assert_int_equal(w.pos, sizeof want2);
	assert_memory_equal(out, want2, sizeof want2);
	assert_true(mqtt_props_fit(&f, MQTT_PROPS_PUBLISH));
	assert_false(mqtt_props_fit(&f, MQTT_PROPS_SUBSCRIBE)); /* one there */
	struct mqtt_props g;
	enum mqtt_props_rej rej;
	struct cur c = cur_make(out, w.pos);
	assert_int_equal(mqtt_props_decode(&c, MQTT_PROPS_PUBLISH, &g, &rej), 0);
	assert_true(mqtt_props_equal(&f, &g));
	g.payload_format = 0;
	assert_false(mqtt_props_equal(&f, &g));
	/* a two-byte Property Length */
	static uint8_t big[300];
	memset(big, 'x', sizeof big);
	struct mqtt_props r = { 0 };
	r.present = MQTT_PROP_BIT(MQTT_PROP_REASON_STRING);
	r.reason_string = (struct mqtt_str){ big, sizeof big };
	uint8_t out2[400];
	w = wcur_make(out2, sizeof out2);
	assert_int_equal(mqtt_props_write(&w, &r), 0);
	assert_int_equal(w.pos, 2 + 3 + sizeof big);
	assert_int_equal(out2[0], (303 & 0x7f) | 0x80);
	assert_int_equal(out2[1], 303 >> 7);
}

/* ---- random round trips -------------------------------------------------------------- */

static uint64_t rng_state;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}
static uint32_t rnd_below(uint32_t n) { return n ? rnd() % n : 0; }

/* Random valid UTF-8 (ASCII and 2-, 3-, 4-byte forms) of at most max bytes. */
static uint16_t rnd_utf8(uint8_t *p, size_t max, bool topic)
{
	static const char *const parts[] = { "a", "/", "Z", "0", "-", "\xc3\xa9", "\xe2\x82\xac",
					     "\xf0\x9f\x98\x80", " ", "\xef\xbb\xbf" };
	size_t n = 0, want = rnd_below(12);
	for (size_t i = 0; i < want; i++) {
		const char *s = parts[rnd_below(sizeof parts / sizeof parts[0])];
		size_t l = strlen(s);
		if (n + l > max)
			break;
		memcpy(p + n, s, l);
		n += l;
	}
	if (topic && n == 0)
		p[n++] = 't';
	return (uint16_t)n;
}

static size_t put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return 2;
}

/* Build a random valid property set for kind k into *x; strings live in pool, user
 * properties in ubuf (contiguous, as a decoded list would be), sub ids in ids. */
static void rnd_props(enum mqtt_props_pkt k, struct mqtt_props *x, uint8_t *pool,
		      uint8_t *ubuf, uint32_t *ids)
{
	memset(x, 0, sizeof *x);
	size_t pool_used = 0;
	for (uint8_t id = 1; id <= MQTT_PROP_ID_MAX; id++) {
		if (!mqtt_prop_allowed(id, k) || id == MQTT_PROP_USER || id == MQTT_PROP_SUB_ID)
			continue;
		if (rnd_below(2))
			continue;
		if (id == MQTT_PROP_AUTH_DATA && !(x->present & MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD)))
			continue; /* method (0x15) is decided first */
		x->present |= MQTT_PROP_BIT(id);
		uint32_t r = rnd();
		uint32_t big = rnd_below(3) == 0 ? 0xffffffffu : r;
		struct mqtt_str s = { pool + pool_used, 0 };
		switch (mqtt_prop_type(id)) {
		case MQTT_PT_UTF8:
			s.len = rnd_utf8(pool + pool_used, 40, id == MQTT_PROP_RESPONSE_TOPIC);
			break;
		case MQTT_PT_BINARY:
			s.len = (uint16_t)rnd_below(40);
			for (size_t i = 0; i < s.len; i++)
				pool[pool_used + i] = (uint8_t)rnd();
			break;
		default:
			break;
		}
		pool_used += s.len;
		switch ((enum mqtt_prop_id)id) {
		case MQTT_PROP_PAYLOAD_FORMAT: x->payload_format = (uint8_t)(r & 1); break;
		case MQTT_PROP_MESSAGE_EXPIRY: x->message_expiry_s = big; break;
		case MQTT_PROP_CONTENT_TYPE: x->content_type = s; break;
		case MQTT_PROP_RESPONSE_TOPIC: x->response_topic = s; break;
		case MQTT_PROP_CORRELATION_DATA: x->correlation_data = s; break;
		case MQTT_PROP_SESSION_EXPIRY: x->session_expiry_s = big; break;
		case MQTT_PROP_ASSIGNED_CLIENT_ID: x->assigned_client_id = s; break;
		case MQTT_PROP_SERVER_KEEPALIVE: x->server_keepalive_s = (uint16_t)r; break;
		case MQTT_PROP_AUTH_METHOD: x->auth_method = s; break;
		case MQTT_PROP_AUTH_DATA: x->auth_data = s; break;
		case MQTT_PROP_REQUEST_PROBLEM_INFO: x->request_problem_info = (uint8_t)(r & 1); break;
		case MQTT_PROP_WILL_DELAY: x->will_delay_s = big; break;
		case MQTT_PROP_REQUEST_RESPONSE_INFO: x->request_response_info = (uint8_t)(r & 1); break;
		case MQTT_PROP_RESPONSE_INFO: x->response_info = s; break;
		case MQTT_PROP_SERVER_REFERENCE: x->server_reference = s; break;
		case MQTT_PROP_REASON_STRING: x->reason_string = s; break;
		case MQTT_PROP_RECEIVE_MAX: x->receive_max = (uint16_t)(1 + r % 65535); break;
		case MQTT_PROP_TOPIC_ALIAS_MAX: x->topic_alias_max = (uint16_t)r; break;
		case MQTT_PROP_TOPIC_ALIAS: x->topic_alias = (uint16_t)(1 + r % 65535); break;
		case MQTT_PROP_MAX_QOS: x->max_qos = (uint8_t)(r & 1); break;
		case MQTT_PROP_RETAIN_AVAILABLE: x->retain_available = (uint8_t)(r & 1); break;
		case MQTT_PROP_MAX_PACKET_SIZE: x->max_packet_size = big ? big : 1; break;
		case MQTT_PROP_WILDCARD_SUB_AVAILABLE: x->wildcard_sub_available = (uint8_t)(r & 1); break;
		case MQTT_PROP_SUB_ID_AVAILABLE: x->sub_id_available = (uint8_t)(r & 1); break;
		case MQTT_PROP_SHARED_SUB_AVAILABLE: x->shared_sub_available = (uint8_t)(r & 1); break;
		default: fail_msg("unhandled %#x", id);
		}
	}
	/* User Properties: 0..4 pairs, contiguous in ubuf */
	uint32_t nu = mqtt_prop_allowed(MQTT_PROP_USER, k) ? rnd_below(5) : 0;
	size_t ul = 0;
	for (uint32_t i = 0; i < nu; i++) {
		ubuf[ul++] = MQTT_PROP_USER;
		for (int half = 0; half < 2; half++) {
			uint16_t l = rnd_utf8(ubuf + ul + 2, 30, false);
			ul += put_u16(ubuf + ul, l) + l;
		}
	}
	if (nu) {
		x->user = (struct mqtt_props_list){ ubuf, ul, ul, nu };
		x->present |= MQTT_PROP_BIT(MQTT_PROP_USER);
	}
	/* Subscription Identifiers: up to 3 in a PUBLISH, 1 in a SUBSCRIBE */
	uint32_t ns = k == MQTT_PROPS_PUBLISH ? rnd_below(4) : k == MQTT_PROPS_SUBSCRIBE ? rnd_below(2) : 0;
	for (uint32_t i = 0; i < ns; i++) {
		static const uint32_t edge[] = { 1, 127, 128, 16383, 16384, 2097151, 2097152, 268435455 };
		ids[i] = rnd_below(2) ? edge[rnd_below(8)] : 1 + rnd() % 268435455u;
	}
	if (ns) {
		x->sub_ids.n = ns;
		x->sub_id_vals = ids;
		x->sub_id = ids[0];
		x->present |= MQTT_PROP_BIT(MQTT_PROP_SUB_ID);
	}
}

/* Re-emit a decoded block's properties in a random order that keeps each list's own
 * order (what another encoder may send): one chunk per property, merged at random. */
static size_t shuffle_block(const uint8_t *blk, size_t n, uint8_t *out)
{
	struct cur c = cur_make(blk, n);
	uint32_t plen = 0;
	for (unsigned i = 0; i < 4; i++) {
		uint8_t b = cur_u8(&c);
		plen |= (uint32_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			break;
	}
	struct { size_t off, len; } ch[3][256];
	size_t nch[3] = { 0, 0, 0 }, head[3] = { 0, 0, 0 };
	while (cur_left(&c)) {
		size_t start = c.pos;
		uint8_t id = cur_u8(&c);
		switch (mqtt_prop_type(id)) {
		case MQTT_PT_BYTE: cur_skip(&c, 1); break;
		case MQTT_PT_U16: cur_skip(&c, 2); break;
		case MQTT_PT_U32: cur_skip(&c, 4); break;
		case MQTT_PT_VARINT: while (cur_u8(&c) & 0x80) {} break;
		case MQTT_PT_PAIR: cur_skip(&c, cur_be16(&c)); cur_skip(&c, cur_be16(&c)); break;
		default: cur_skip(&c, cur_be16(&c)); break;
		}
		assert_true(cur_ok(&c));
		int q = id == MQTT_PROP_USER ? 1 : id == MQTT_PROP_SUB_ID ? 2 : 0;
		ch[q][nch[q]].off = start;
		ch[q][nch[q]].len = c.pos - start;
		nch[q]++;
	}
	/* shuffle the singular ones freely */
	for (size_t i = nch[0]; i > 1; i--) {
		size_t j = rnd_below((uint32_t)i);
		__typeof__(ch[0][0]) t = ch[0][i - 1];
		ch[0][i - 1] = ch[0][j];
		ch[0][j] = t;
	}
	size_t o = 0;
	out[o++] = (uint8_t)plen; /* blocks here stay below 16384 bytes */
	if (plen >= 128) {
		out[0] = (uint8_t)(plen | 0x80);
		out[o++] = (uint8_t)(plen >> 7);
	}
	for (;;) {
		int q = (int)rnd_below(3);
		int tries = 0;
		while (head[q] == nch[q] && tries++ < 3)
			q = (q + 1) % 3;
		if (head[q] == nch[q])
			break;
		memcpy(out + o, blk + ch[q][head[q]].off, ch[q][head[q]].len);
		o += ch[q][head[q]].len;
		head[q]++;
	}
	return o;
}

static void test_random_round_trip(void **state)
{
	(void)state;
	rng_state = 0x9e3779b97f4a7c15ull;
	static uint8_t pool[1024], ubuf[512], enc[2048], enc2[2048], shuf[2048];
	uint32_t ids[4];
	unsigned per_kind[NK] = { 0 };
	for (unsigned iter = 0; iter < 20000; iter++) {
		enum mqtt_props_pkt k = (enum mqtt_props_pkt)rnd_below(NK);
		per_kind[k]++;
		struct mqtt_props x, y, z;
		enum mqtt_props_rej rej;
		rnd_props(k, &x, pool, ubuf, ids);
		assert_true(mqtt_props_fit(&x, k));
		size_t len = mqtt_props_len(&x);
		struct wcur w = wcur_make(enc, sizeof enc);
		assert_int_equal(mqtt_props_write(&w, &x), 0);
		assert_int_equal(w.pos, len);
		/* decode from an exact-size copy, so ASan sees an over-read */
		uint8_t *copy = malloc(len);
		memcpy(copy, enc, len);
		struct cur c = cur_make(copy, len);
		if (mqtt_props_decode(&c, k, &y, &rej) != 0)
			fail_msg("iteration %u kind %d: own encoding rejected (%d)", iter, k, rej);
		assert_true(cur_done(&c));
		if (!mqtt_props_equal(&x, &y))
			fail_msg("iteration %u kind %d: decode(encode(x)) != x", iter, k);
		/* canonical: encoding the decoded view gives the same bytes */
		w = wcur_make(enc2, sizeof enc2);
		assert_int_equal(mqtt_props_write(&w, &y), 0);
		assert_int_equal(w.pos, len);
		assert_memory_equal(enc2, enc, len);
		/* any order another sender may choose decodes to the same view */
		size_t sl = shuffle_block(copy, len, shuf);
		assert_int_equal(sl, len);
		c = cur_make(shuf, sl);
		assert_int_equal(mqtt_props_decode(&c, k, &z, &rej), 0);
		if (!mqtt_props_equal(&x, &z))
			fail_msg("iteration %u kind %d: shuffled block decodes differently", iter, k);
		w = wcur_make(enc2, sizeof enc2);
		assert_int_equal(mqtt_props_write(&w, &z), 0);
		assert_memory_equal(enc2, enc, len);
		free(copy);
	}
	for (unsigned k = 0; k < NK; k++)
		assert_true(per_kind[k] > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_every_property_every_kind),
		cmocka_unit_test(test_values_decoded),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_unknown_ids),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_reason_codes),
		cmocka_unit_test(test_lists),
		cmocka_unit_test(test_encoder),
		cmocka_unit_test(test_random_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, free_last);
}
