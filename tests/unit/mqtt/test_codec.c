/* SPDX-License-Identifier: MIT
 * Unit tests for mqtt/codec: round trips for every packet type a server receives and
 * sends, a rejection table with one crafted packet per validation rule, and the stream
 * framer fed in every split position (zero copy when whole, no buffer left when idle). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/codec.h"

#define B(...) ((const uint8_t[]){ __VA_ARGS__ }), sizeof((const uint8_t[]){ __VA_ARGS__ })

static int dec(const uint8_t *p, size_t n, struct mqtt_packet *pk, enum mqtt_rej *rej)
{
	return mqtt_decode(p, n, pk, rej);
}

static void test_connect_round_trip(void **state)
{
	(void)state;
	uint8_t buf[256];
	struct wcur w = wcur_make(buf, sizeof buf);
	struct mqtt_connect_args a = { .client_id = "dev-1", .will_topic = "devices/dev-1/status",
				       .will_msg = (const uint8_t *)"gone", .will_msg_len = 4,
				       .will_qos = 1, .will_retain = true, .username = "u",
				       .password = (const uint8_t *)"pw", .password_len = 2,
				       .keepalive_s = 30, .clean = false };
	assert_int_equal(mqtt_encode_connect(&w, &a), 0);
	struct mqtt_packet pk;
	enum mqtt_rej rej;
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_CONNECT);
	struct mqtt_connect *k = &pk.u.connect;
	assert_int_equal(k->client_id.len, 5);
	assert_memory_equal(k->client_id.p, "dev-1", 5);
	assert_true(k->client_id.p >= buf && k->client_id.p < buf + w.pos); /* zero copy */
	assert_true(k->will && k->will_retain && !k->clean);
	assert_int_equal(k->will_qos, 1);
	assert_int_equal(k->will_msg.len, 4);
	assert_int_equal(k->keepalive_s, 30);
	assert_true(k->has_username && k->has_password);
	assert_memory_equal(k->password.p, "pw", 2);
	/* minimal connect */
	w = wcur_make(buf, sizeof buf);
	struct mqtt_connect_args m = { .client_id = "", .clean = true };
	assert_int_equal(mqtt_encode_connect(&w, &m), 0);
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	assert_int_equal(pk.u.connect.client_id.len, 0);
}

static void test_publish_round_trip(void **state)
{
	(void)state;
	uint8_t buf[400];
	uint8_t payload[300];
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)i;
	for (uint8_t q = 0; q <= 2; q++) {
		struct wcur w = wcur_make(buf, sizeof buf);
		assert_int_equal(mqtt_encode_publish(&w, (const uint8_t *)"a/b", 3, payload,
						     sizeof payload, q, q > 0, true, q ? 77 : 0), 0);
		assert_int_equal(w.pos, mqtt_publish_size(3, sizeof payload, q));
		struct mqtt_packet pk;
		enum mqtt_rej rej;
		assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
		assert_int_equal(pk.type, MQTT_PUBLISH);
		assert_int_equal(pk.u.publish.qos, q);
		assert_int_equal(pk.u.publish.dup, q > 0);
		assert_true(pk.u.publish.retain);
		assert_int_equal(pk.u.publish.pid, q ? 77 : 0);
		assert_int_equal(pk.u.publish.payload_len, sizeof payload);
		assert_memory_equal(pk.u.publish.payload, payload, sizeof payload);
	}
	/* too small a buffer: error, never an overrun */
	struct wcur w = wcur_make(buf, 10);
	assert_int_equal(mqtt_encode_publish(&w, (const uint8_t *)"a/b", 3, payload, 20, 1, false,
					     false, 1), -E_OVERFLOW);
}

static void test_acks_round_trip(void **state)
{
	(void)state;
	const enum mqtt_type t[] = { MQTT_PUBACK, MQTT_PUBREC, MQTT_PUBREL, MQTT_PUBCOMP };
	for (size_t i = 0; i < 4; i++) {
		uint8_t buf[4];
		struct wcur w = wcur_make(buf, sizeof buf);
		assert_int_equal(mqtt_encode_ack(&w, t[i], 0x1234), 0);
		struct mqtt_packet pk;
		enum mqtt_rej rej;
		assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
		assert_int_equal(pk.type, t[i]);
		assert_int_equal(pk.pid, 0x1234);
	}
}

static void test_subscribe_round_trip(void **state)
{
	(void)state;
	uint8_t buf[128];
	const char *f[] = { "a/+/c", "#", "devices/x/cmd/#" };
	const uint8_t q[] = { 0, 1, 2 };
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_subscribe(&w, 9, f, q, 3), 0);
	struct mqtt_packet pk;
	enum mqtt_rej rej;
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_SUBSCRIBE);
	assert_int_equal(pk.pid, 9);
	assert_int_equal(pk.u.filters.n, 3);
	struct mqtt_str s;
	uint8_t qq;
	for (size_t i = 0; i < 3; i++) {
		assert_true(mqtt_filters_next(&pk.u.filters, &s, &qq));
		assert_int_equal(s.len, strlen(f[i]));
		assert_memory_equal(s.p, f[i], s.len);
		assert_int_equal(qq, q[i]);
	}
	assert_false(mqtt_filters_next(&pk.u.filters, &s, &qq));
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_subscribe(&w, 10, f, NULL, 2), 0);
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_UNSUBSCRIBE);
	assert_int_equal(pk.u.filters.n, 2);
}

static void test_simple_and_server_packets(void **state)
{
	(void)state;
	uint8_t buf[16];
	struct mqtt_packet pk;
	enum mqtt_rej rej;
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_simple(&w, MQTT_PINGREQ), 0);
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_PINGREQ);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_simple(&w, MQTT_DISCONNECT), 0);
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_DISCONNECT);
	/* server-to-client encoders produce the exact bytes of the specification */
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_connack(&w, true, 5), 0);
	assert_memory_equal(buf, "\x20\x02\x01\x05", 4);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_pingresp(&w), 0);
	assert_memory_equal(buf, "\xd0\x00", 2);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_ack(&w, MQTT_UNSUBACK, 3), 0);
	assert_memory_equal(buf, "\xb0\x02\x00\x03", 4);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_ack(&w, MQTT_PUBREL, 3), 0);
	assert_memory_equal(buf, "\x62\x02\x00\x03", 4);
	w = wcur_make(buf, sizeof buf);
	const uint8_t codes[] = { 0, 2, 0x80 };
	assert_int_equal(mqtt_encode_suback(&w, 4, codes, 3), 0);
	assert_memory_equal(buf, "\x90\x05\x00\x04\x00\x02\x80", 7);
	/* server-to-client types are rejected when a client sends them */
	assert_int_equal(dec(buf, 7, &pk, &rej), -E_PROTO);
	assert_int_equal(rej, MQTT_REJ_TYPE);
}

struct rej_case {
	const char *name;
	const uint8_t *p;
	size_t n;
	enum mqtt_rej rej;
};

#define C(name, rej, ...) { name, B(__VA_ARGS__), rej }
static const struct rej_case rej_cases[] = {
	C("rlen 5 bytes", MQTT_REJ_RLEN, 0x30, 0x80, 0x80, 0x80, 0x80, 0x01),
	C("rlen non-minimal", MQTT_REJ_RLEN, 0xc0, 0x80, 0x00),
	C("rlen lies (short)", MQTT_REJ_RLEN, 0x40, 0x03, 0x00, 0x01),
	C("rlen lies (long)", MQTT_REJ_RLEN, 0x40, 0x01, 0x00, 0x01),
	C("type 0", MQTT_REJ_TYPE, 0x00, 0x00),
	C("type 15", MQTT_REJ_TYPE, 0xf0, 0x00),
	C("connack from client", MQTT_REJ_TYPE, 0x20, 0x02, 0, 0),
	C("connect flags nibble", MQTT_REJ_FLAGS, 0x11, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 0),
	C("protocol name", MQTT_REJ_PROTO_NAME, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'X', 4, 2, 0, 0, 0, 0),
	C("protocol level 3", MQTT_REJ_PROTO_LEVEL, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 3, 2, 0, 0, 0, 0),
	C("connect reserved bit", MQTT_REJ_CONNECT_FLAGS, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 3, 0, 0, 0, 0),
	C("will qos w/o will", MQTT_REJ_CONNECT_FLAGS, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x0a, 0, 0, 0, 0),
	C("will retain w/o will", MQTT_REJ_CONNECT_FLAGS, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x22, 0, 0, 0, 0),
	C("will qos 3", MQTT_REJ_CONNECT_FLAGS, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x1e, 0, 0, 0, 0),
	C("password w/o user", MQTT_REJ_CONNECT_FLAGS, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x42, 0, 0, 0, 0),
	C("empty id, clean 0", MQTT_REJ_CLIENT_ID, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0, 0, 0, 0, 0),
	C("client id NUL", MQTT_REJ_UTF8, 0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 1, 0),
	C("client id surrogate", MQTT_REJ_UTF8, 0x10, 15, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 3, 0xed, 0xa0, 0x80),
	C("client id overlong", MQTT_REJ_UTF8, 0x10, 14, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 2, 0xc0, 0xaf),
	C("client id truncated", MQTT_REJ_SHORT, 0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 5, 'a'),
	C("connect trailing", MQTT_REJ_TRAILING, 0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 0, 9),
	C("will missing", MQTT_REJ_SHORT, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 6, 0, 0, 0, 0),
	C("will topic NUL", MQTT_REJ_UTF8, 0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 4, 6, 0, 0, 0, 0, 0, 1, 0, 0, 0),
	C("user name NUL", MQTT_REJ_UTF8, 0x10, 15, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x82, 0, 0, 0, 0, 0, 1, 0),
	C("user name missing", MQTT_REJ_SHORT, 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x82, 0, 0, 0, 0),
	C("password missing", MQTT_REJ_SHORT, 0x10, 15, 0, 4, 'M', 'Q', 'T', 'T', 4, 0xc2, 0, 0, 0, 0, 0, 1, 'u'),
	C("will topic wildcard", MQTT_REJ_TOPIC, 0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 4, 6, 0, 0, 0, 0, 0, 1, '#', 0, 0),
	C("publish qos 3", MQTT_REJ_QOS, 0x36, 5, 0, 1, 'a', 0, 1),
	C("publish dup qos 0", MQTT_REJ_QOS, 0x38, 3, 0, 1, 'a'),
	C("publish topic +", MQTT_REJ_TOPIC, 0x30, 5, 0, 3, 'a', '/', '+'),
	C("publish topic #", MQTT_REJ_TOPIC, 0x30, 3, 0, 1, '#'),
	C("publish empty topic", MQTT_REJ_TOPIC, 0x30, 2, 0, 0),
	C("publish topic NUL", MQTT_REJ_UTF8, 0x30, 4, 0, 2, 'a', 0),
	C("publish pid 0", MQTT_REJ_PID, 0x32, 5, 0, 1, 'a', 0, 0),
	C("publish no pid", MQTT_REJ_SHORT, 0x32, 3, 0, 1, 'a'),
	C("publish topic short", MQTT_REJ_SHORT, 0x30, 3, 0, 9, 'a'),
	C("puback flags", MQTT_REJ_FLAGS, 0x41, 2, 0, 1),
	C("pubrel flags 0", MQTT_REJ_FLAGS, 0x60, 2, 0, 1),
	C("pubcomp short", MQTT_REJ_SHORT, 0x70, 1, 0),
	C("pubrec trailing", MQTT_REJ_TRAILING, 0x50, 3, 0, 1, 0),
	C("puback pid 0", MQTT_REJ_PID, 0x40, 2, 0, 0),
	C("subscribe flags", MQTT_REJ_FLAGS, 0x80, 6, 0, 1, 0, 1, 'a', 0),
	C("subscribe no payload", MQTT_REJ_EMPTY, 0x82, 2, 0, 1),
	C("subscribe pid 0", MQTT_REJ_PID, 0x82, 6, 0, 0, 0, 1, 'a', 0),
	C("subscribe qos 3", MQTT_REJ_SUB_QOS, 0x82, 6, 0, 1, 0, 1, 'a', 3),
	C("subscribe qos reserved", MQTT_REJ_SUB_QOS, 0x82, 6, 0, 1, 0, 1, 'a', 0x81),
	C("subscribe no qos byte", MQTT_REJ_SHORT, 0x82, 5, 0, 1, 0, 1, 'a'),
	C("filter # not last", MQTT_REJ_FILTER, 0x82, 8, 0, 1, 0, 3, '#', '/', 'a', 0),
	C("filter a#", MQTT_REJ_FILTER, 0x82, 7, 0, 1, 0, 2, 'a', '#', 0),
	C("filter +a", MQTT_REJ_FILTER, 0x82, 7, 0, 1, 0, 2, '+', 'a', 0),
	C("filter empty", MQTT_REJ_FILTER, 0x82, 5, 0, 1, 0, 0, 0),
	C("filter bad utf8", MQTT_REJ_UTF8, 0x82, 6, 0, 1, 0, 1, 0xff, 0),
	C("unsubscribe flags", MQTT_REJ_FLAGS, 0xa0, 5, 0, 1, 0, 1, 'a'),
	C("unsubscribe no payload", MQTT_REJ_EMPTY, 0xa2, 2, 0, 1),
	C("unsubscribe bad filter", MQTT_REJ_FILTER, 0xa2, 6, 0, 1, 0, 2, '#', '#'),
	C("pingreq flags", MQTT_REJ_FLAGS, 0xc1, 0),
	C("pingreq body", MQTT_REJ_TRAILING, 0xc0, 1, 0),
	C("disconnect flags", MQTT_REJ_FLAGS, 0xe2, 0),
	C("disconnect body", MQTT_REJ_TRAILING, 0xe0, 1, 0),
};

static void test_rejections(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof rej_cases / sizeof rej_cases[0]; i++) {
		const struct rej_case *c = &rej_cases[i];
		struct mqtt_packet pk;
		enum mqtt_rej rej = MQTT_REJ_NONE;
		/* copy to an exact-size heap block so ASan catches any over-read */
		uint8_t *p = malloc(c->n);
		memcpy(p, c->p, c->n);
		int rc = mqtt_decode(p, c->n, &pk, &rej);
		if (rc != -E_PROTO || rej != c->rej)
			fail_msg("case '%s': rc %d rej %d, want rej %d", c->name, rc, rej, c->rej);
		free(p);
	}
}

static void test_utf8_and_filters(void **state)
{
	(void)state;
	assert_true(mqtt_utf8_valid((const uint8_t *)"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
	assert_false(mqtt_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	assert_false(mqtt_utf8_valid((const uint8_t *)"\xe0\x80\x80", 3));      /* overlong */
	assert_false(mqtt_utf8_valid((const uint8_t *)"\xe2\x82", 2));          /* truncated */
	assert_true(mqtt_utf8_valid((const uint8_t *)"\xef\xbb\xbf", 3));       /* BOM kept */
	const char *ok[] = { "#", "+", "a/#", "+/+", "/", "a//b", "+/b/#", "$SYS/#" };
	const char *bad[] = { "", "a#", "#/", "a/#/b", "a+", "+a/b", "a/b+" };
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		assert_true(mqtt_filter_valid((const uint8_t *)ok[i], strlen(ok[i])));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_false(mqtt_filter_valid((const uint8_t *)bad[i], strlen(bad[i])));
}

/* String-form matching (configured filter lists): the spec's examples and the edges. */
static void test_filter_match(void **state)
{
	(void)state;
	static const struct {
		const char *f, *t;
		bool match;
	} cases[] = {
		{ "#", "a/b", true },       { "a/#", "a", true },        { "a/#", "a/b/c", true },
		{ "a/#", "ab", false },     { "+", "a", true },          { "+", "a/b", false },
		{ "+/+", "/a", true },      { "a/+", "a/", true },       { "a/+/c", "a/b/c", true },
		{ "a/+/c", "a/b/d", false }, { "a/b", "a/bc", false },   { "a/bc", "a/b", false },
		{ "a/b", "a/b", true },     { "a/b", "a/b/", false },    { "#", "$SYS/x", false },
		{ "+/x", "$SYS/x", false }, { "$SYS/#", "$SYS/x", true }, { "devices/+/telemetry/#", "devices/d1/telemetry", true },
		{ "devices/+/telemetry/#", "devices/d1/telemetry/t/x", true },
		{ "devices/+/telemetry/#", "devices/d1/status", false },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (mqtt_filter_match((const uint8_t *)cases[i].f, strlen(cases[i].f), (const uint8_t *)cases[i].t,
				      strlen(cases[i].t)) != cases[i].match)
			fail_msg("filter %s topic %s: want %d", cases[i].f, cases[i].t, cases[i].match);
}

/* Counting allocator: the framer must give back everything it takes. */
static size_t g_live, g_allocs;
static void *t_alloc(void *ctx, size_t n)
{
	(void)ctx;
	g_live += n;
	g_allocs++;
	return malloc(n);
}
static void t_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	g_live -= n;
	free(p);
}
static const struct mqtt_alloc t_alloc_ops = { t_alloc, t_free, NULL };

static void test_framer_every_split(void **state)
{
	(void)state;
	/* a stream of three packets: PUBLISH with a 200-byte payload (2-byte length), PINGREQ,
	 * SUBSCRIBE */
	uint8_t stream[512];
	uint8_t payload[200];
	memset(payload, 0x5a, sizeof payload);
	struct wcur w = wcur_make(stream, sizeof stream);
	assert_int_equal(mqtt_encode_publish(&w, (const uint8_t *)"t", 1, payload, sizeof payload,
					     1, false, false, 5), 0);
	size_t p1 = w.pos;
	assert_int_equal(mqtt_encode_simple(&w, MQTT_PINGREQ), 0);
	const char *f[] = { "a/#" };
	const uint8_t q[] = { 1 };
	assert_int_equal(mqtt_encode_subscribe(&w, 6, f, q, 1), 0);
	size_t total = w.pos;
	for (size_t split = 0; split <= total; split++) {
		struct mqtt_framer fr = { 0 };
		size_t sizes[3], n = 0;
		size_t bounds[2][2] = { { 0, split }, { split, total } };
		for (int ch = 0; ch < 2; ch++) {
			struct cur in = cur_make(stream + bounds[ch][0], bounds[ch][1] - bounds[ch][0]);
			for (;;) {
				const uint8_t *pkt;
				size_t len;
				enum mqtt_rej rej;
				int rc = mqtt_framer_next(&fr, &in, 1024, &t_alloc_ops, &pkt, &len, &rej);
				if (rc == -E_NEED_MORE)
					break;
				assert_int_equal(rc, 0);
				struct mqtt_packet pk;
				assert_int_equal(mqtt_decode(pkt, len, &pk, &rej), 0);
				/* zero copy: a packet wholly inside a chunk is not copied */
				if (n == 0 && split >= p1)
					assert_ptr_equal(pkt, stream);
				sizes[n++] = len;
			}
		}
		assert_int_equal(n, 3);
		assert_int_equal(sizes[0], p1);
		assert_int_equal(sizes[1], 2);
		mqtt_framer_reset(&fr, &t_alloc_ops);
		assert_false(mqtt_framer_busy(&fr)); /* idle holds no buffer */
		assert_int_equal(g_live, 0);
	}
	/* byte by byte */
	struct mqtt_framer fr = { 0 };
	size_t n = 0;
	for (size_t i = 0; i < total; i++) {
		struct cur in = cur_make(stream + i, 1);
		const uint8_t *pkt;
		size_t len;
		enum mqtt_rej rej;
		int rc;
		while ((rc = mqtt_framer_next(&fr, &in, 1024, &t_alloc_ops, &pkt, &len, &rej)) == 0)
			n++;
		assert_int_equal(rc, -E_NEED_MORE);
	}
	assert_int_equal(n, 3);
	mqtt_framer_reset(&fr, &t_alloc_ops);
	assert_int_equal(g_live, 0);
}

static void test_framer_rejects(void **state)
{
	(void)state;
	const uint8_t *pkt;
	size_t len;
	enum mqtt_rej rej;
	/* oversized, announced by the header: refused before any buffer is taken */
	struct mqtt_framer fr = { 0 };
	const uint8_t big[] = { 0x30, 0xff, 0x7f };
	struct cur in = cur_make(big, sizeof big);
	size_t before = g_allocs;
	assert_int_equal(mqtt_framer_next(&fr, &in, 1024, &t_alloc_ops, &pkt, &len, &rej), -E_RANGE);
	assert_int_equal(rej, MQTT_REJ_TOO_BIG);
	assert_int_equal(g_allocs, before);
	/* sticky */
	in = cur_make(big, sizeof big);
	assert_int_equal(mqtt_framer_next(&fr, &in, 1024, &t_alloc_ops, &pkt, &len, &rej), -E_CLOSED);
	/* split oversized */
	fr = (struct mqtt_framer){ 0 };
	in = cur_make(big, 2);
	assert_int_equal(mqtt_framer_next(&fr, &in, 1024, &t_alloc_ops, &pkt, &len, &rej), -E_NEED_MORE);
	in = cur_make(big + 2, 1);
	assert_int_equal(mqtt_framer_next(&fr, &in, 1024, &t_alloc_ops, &pkt, &len, &rej), -E_RANGE);
	/* five length bytes, split */
	const uint8_t bad[] = { 0x30, 0x80, 0x80, 0x80, 0x80, 0x01 };
	fr = (struct mqtt_framer){ 0 };
	for (size_t i = 0; i < sizeof bad; i++) {
		in = cur_make(bad + i, 1);
		int rc = mqtt_framer_next(&fr, &in, 1u << 28, &t_alloc_ops, &pkt, &len, &rej);
		if (rc != -E_NEED_MORE) {
			assert_int_equal(rc, -E_PROTO);
			assert_int_equal(rej, MQTT_REJ_RLEN);
			break;
		}
	}
	assert_int_equal(g_live, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_round_trip),
		cmocka_unit_test(test_publish_round_trip),
		cmocka_unit_test(test_acks_round_trip),
		cmocka_unit_test(test_subscribe_round_trip),
		cmocka_unit_test(test_simple_and_server_packets),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_utf8_and_filters),
		cmocka_unit_test(test_filter_match),
		cmocka_unit_test(test_framer_every_split),
		cmocka_unit_test(test_framer_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
