/* SPDX-License-Identifier: MIT
 * Unit tests for mqtt/codec5: every client packet accepted in its minimal and full forms,
 * a rejection table hitting every site with the reason code it answers with, truncation at
 * every byte of a full CONNECT/PUBLISH/SUBSCRIBE, client-encode -> server-decode round
 * trips of random packets (CODEC5_TEST_SEED, printed), and server-encode -> a test-local
 * client-side decoder for CONNACK, PUBLISH, acks, SUBACK/UNSUBACK, DISCONNECT and AUTH.
 * Every decode reads an exact-size heap copy so ASan sees any over-read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/codec5.h"
#include "tests/support/splitmix.h"

#define B(...) ((const uint8_t[]){ __VA_ARGS__ }), sizeof((const uint8_t[]){ __VA_ARGS__ })
#define S(x) ((struct mqtt_str){ (const uint8_t *)(x), (uint16_t)strlen(x) })

/* The last packet dec() decoded: views borrow it until the next call. */
static uint8_t *g_last;
static size_t g_last_len;
static int free_last(void **state)
{
	(void)state;
	free(g_last);
	g_last = NULL;
	return 0;
}

static int dec(const uint8_t *p, size_t n, struct mqtt5_packet *pk, struct mqtt5_rej_info *rej)
{
	uint8_t *copy = malloc(n ? n : 1);
	memcpy(copy, p, n);
	int rc = mqtt5_decode(copy, n, pk, rej);
	if (rc == 0) {
		assert_int_equal(rej->site, MQTT5_REJ_NONE);
	} else {
		assert_int_equal(rc, -E_PROTO);
		assert_true(rej->site > MQTT5_REJ_NONE && rej->site < MQTT5_REJ__COUNT);
		assert_true(mqtt5_rej_rc(rej) >= 0x80);
	}
	free(g_last);
	g_last = copy;
	g_last_len = n;
	return rc;
}

static bool in_last(const void *p, size_t n)
{
	return n == 0 || ((const uint8_t *)p >= g_last && (const uint8_t *)p + n <= g_last + g_last_len);
}

static bool str_is(const struct mqtt_str *s, const char *want)
{
	return s->len == strlen(want) && memcmp(s->p, want, s->len) == 0;
}

/* ---- accepted packets ------------------------------------------------------------------ */

static void test_connect(void **state)
{
	(void)state;
	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	/* minimal, hand-written: empty client id with Clean Start 0 is allowed in 5.0 */
	assert_int_equal(dec(B(0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 5, 0, 0, 0, 0, 0, 0), &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_CONNECT);
	assert_int_equal(pk.u.connect.client_id.len, 0);
	assert_false(pk.u.connect.clean_start || pk.u.connect.will || pk.u.connect.has_username);
	assert_int_equal(pk.u.connect.props.present, 0);
	/* password without user name (5.0 3.1.2.9) */
	assert_int_equal(dec(B(0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x42, 0, 10, 0, 0, 1, 'x',
			       0, 1, 'p'), &pk, &rej), 0);
	assert_true(pk.u.connect.has_password && !pk.u.connect.has_username);
	assert_true(str_is(&pk.u.connect.password, "p"));
	assert_int_equal(pk.u.connect.keepalive_s, 10);
	/* full, through the client encoder */
	uint8_t buf[512];
	uint8_t user[] = { 0x26, 0, 1, 'k', 0, 2, 'v', 'v' };
	struct mqtt5_connect k;
	memset(&k, 0, sizeof k);
	k.props.present = MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY) |
			  MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAX) |
			  MQTT_PROP_BIT(MQTT_PROP_MAX_PACKET_SIZE) |
			  MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAX) |
			  MQTT_PROP_BIT(MQTT_PROP_REQUEST_PROBLEM_INFO) |
			  MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD) | MQTT_PROP_BIT(MQTT_PROP_AUTH_DATA);
	k.props.session_expiry_s = 3600;
	k.props.receive_max = 20;
	k.props.max_packet_size = 65536;
	k.props.topic_alias_max = 10;
	k.props.request_problem_info = 1;
	k.props.auth_method = S("SCRAM-SHA-256");
	k.props.auth_data = S("\x01\x02\x03");
	k.props.user = (struct mqtt_props_list){ user, sizeof user, sizeof user, 1 };
	k.will = true;
	k.will_qos = 2;
	k.will_retain = true;
	k.will_props.present = MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY) |
			       MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT) |
			       MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC);
	k.will_props.will_delay_s = 5;
	k.will_props.payload_format = 1;
	k.will_props.response_topic = S("r/1");
	k.client_id = S("dev-1");
	k.will_topic = S("dev/1/status");
	k.will_payload = S("gone");
	k.has_username = true;
	k.username = S("user");
	k.has_password = true;
	k.password = S("\x00\xff");
	k.password.len = 2;
	k.keepalive_s = 30;
	k.clean_start = true;
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_connect(&w, &k), 0);
	uint8_t level = 0;
	assert_int_equal(mqtt5_connect_level(buf, w.pos, &level), 0);
	assert_int_equal(level, 5);
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	const struct mqtt5_connect *d = &pk.u.connect;
	assert_true(str_is(&d->client_id, "dev-1") && in_last(d->client_id.p, 5)); /* zero copy */
	assert_true(str_is(&d->will_topic, "dev/1/status") && str_is(&d->will_payload, "gone"));
	assert_true(str_is(&d->username, "user"));
	assert_int_equal(d->password.len, 2);
	assert_true(d->will && d->will_retain && d->clean_start && d->has_password);
	assert_int_equal(d->will_qos, 2);
	assert_int_equal(d->keepalive_s, 30);
	assert_int_equal(d->props.session_expiry_s, 3600);
	assert_int_equal(d->props.receive_max, 20);
	assert_true(str_is(&d->props.auth_method, "SCRAM-SHA-256"));
	assert_int_equal(d->props.user.n, 1);
	assert_int_equal(d->will_props.will_delay_s, 5);
	assert_true(str_is(&d->will_props.response_topic, "r/1"));
	assert_true(mqtt_props_equal(&d->props, &k.props));
	assert_true(mqtt_props_equal(&d->will_props, &k.will_props));
	/* the 3.1.1 CONNECT is told apart before decoding */
	assert_int_equal(mqtt5_connect_level(B(0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 0, 0, 0), &level), 0);
	assert_int_equal(level, 4);
	assert_int_equal(mqtt5_connect_level(B(0x10, 14, 0, 6, 'M', 'Q', 'I', 's', 'd', 'p', 3, 2, 0, 0, 0, 0), &level), 0);
	assert_int_equal(level, 3);
	assert_int_equal(mqtt5_connect_level(B(0x10, 12, 0, 4, 'M', 'Q', 'T', 'X', 4, 2, 0, 0, 0, 0), &level), -E_PROTO);
	assert_int_equal(mqtt5_connect_level(B(0x30, 3, 0, 1, 'a'), &level), -E_PROTO);
	assert_int_equal(mqtt5_connect_level(B(0x10, 3, 0, 4, 'M'), &level), -E_PROTO);
}

static void test_publish(void **state)
{
	(void)state;
	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	/* minimal: QoS 0, empty property block, empty payload */
	assert_int_equal(dec(B(0x30, 4, 0, 1, 'a', 0), &pk, &rej), 0);
	assert_int_equal(pk.u.publish.payload_len, 0);
	assert_true(str_is(&pk.u.publish.topic, "a"));
	/* empty topic with a Topic Alias */
	assert_int_equal(dec(B(0x30, 7, 0, 0, 3, 0x23, 0, 5, 'x'), &pk, &rej), 0);
	assert_int_equal(pk.u.publish.topic.len, 0);
	assert_int_equal(pk.u.publish.props.topic_alias, 5);
	assert_int_equal(pk.u.publish.payload_len, 1);
	uint8_t buf[600], payload[300];
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)i;
	for (uint8_t q = 0; q <= 2; q++) {
		struct mqtt5_publish p;
		memset(&p, 0, sizeof p);
		p.topic = S("a/b");
		p.payload = payload;
		p.payload_len = sizeof payload;
		p.qos = q;
		p.dup = q > 0;
		p.retain = true;
		p.pid = q ? 77 : 0;
		p.props.present = MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) |
				  MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE) |
				  MQTT_PROP_BIT(MQTT_PROP_CORRELATION_DATA) |
				  MQTT_PROP_BIT(MQTT_PROP_PAYLOAD_FORMAT);
		p.props.message_expiry_s = 60;
		p.props.content_type = S("text/plain");
		p.props.correlation_data = S("\x01\x02");
		p.props.payload_format = 0;
		struct wcur w = wcur_make(buf, sizeof buf);
		assert_int_equal(mqtt5_encode_publish(&w, &p), 0);
		assert_int_equal(w.pos, mqtt5_publish_size(&p));
		assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
		const struct mqtt5_publish *d = &pk.u.publish;
		assert_int_equal(d->qos, q);
		assert_int_equal(d->dup, q > 0);
		assert_true(d->retain);
		assert_int_equal(d->pid, q ? 77 : 0);
		assert_int_equal(pk.pid, d->pid);
		assert_int_equal(d->payload_len, sizeof payload);
		assert_memory_equal(d->payload, payload, sizeof payload);
		assert_true(in_last(d->payload, d->payload_len));
		assert_true(mqtt_props_equal(&d->props, &p.props));
		/* one byte short: refused whole */
		w = wcur_make(buf, mqtt5_publish_size(&p) - 1);
		assert_int_equal(mqtt5_encode_publish(&w, &p), -E_OVERFLOW);
		assert_int_equal(w.pos, 0);
		assert_true(w.err);
	}
}

static void test_acks(void **state)
{
	(void)state;
	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	const uint8_t types[] = { MQTT_PUBACK, MQTT_PUBREC, MQTT_PUBREL, MQTT_PUBCOMP };
	for (size_t i = 0; i < 4; i++) {
		uint8_t t = types[i];
		uint8_t first = (uint8_t)(t << 4 | (t == MQTT_PUBREL ? 2 : 0));
		uint8_t bad = t == MQTT_PUBACK || t == MQTT_PUBREC ? 0x10 : 0x92;
		/* remaining length 2: reason 0, no properties */
		assert_int_equal(dec(B(first, 2, 0x12, 0x34), &pk, &rej), 0);
		assert_int_equal(pk.type, t);
		assert_int_equal(pk.pid, 0x1234);
		assert_int_equal(pk.u.reason.reason, 0);
		/* 3: the reason alone */
		uint8_t b3[] = { first, 3, 0, 1, bad };
		assert_int_equal(dec(b3, sizeof b3, &pk, &rej), 0);
		assert_int_equal(pk.u.reason.reason, bad);
		assert_int_equal(pk.u.reason.props.present, 0);
		/* 4: reason and an empty property block */
		uint8_t b4[] = { first, 4, 0, 1, 0, 0 };
		assert_int_equal(dec(b4, sizeof b4, &pk, &rej), 0);
		/* full: reason string and a user property */
		uint8_t bf[] = { first, 14, 0, 9, bad, 10, 0x1f, 0, 2, 'n', 'o', 0x26, 0, 0, 0, 0 };
		assert_int_equal(dec(bf, sizeof bf, &pk, &rej), 0);
		assert_int_equal(pk.pid, 9);
		assert_true(str_is(&pk.u.reason.props.reason_string, "no"));
		assert_int_equal(pk.u.reason.props.user.n, 1);
	}
}

static void test_subscribe(void **state)
{
	(void)state;
	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	/* minimal */
	assert_int_equal(dec(B(0x82, 7, 0, 1, 0, 0, 1, '#', 0), &pk, &rej), 0);
	assert_int_equal(pk.u.sub.filters.n, 1);
	uint8_t buf[256];
	struct mqtt5_sub subs[4];
	memset(subs, 0, sizeof subs);
	subs[0].filter = S("a/+/c");
	subs[0].qos = 1;
	subs[0].no_local = true;
	subs[1].filter = S("$share/g1/dev/#");
	subs[1].qos = 2;
	subs[1].retain_as_published = true;
	subs[1].retain_handling = 2;
	subs[2].filter = S("#");
	subs[2].retain_handling = 1;
	subs[3].filter = S("$share"); /* not shared: no '/' after the prefix word */
	struct mqtt_props sp;
	memset(&sp, 0, sizeof sp);
	uint32_t id = 268435455u;
	sp.sub_ids.n = 1;
	sp.sub_id_vals = &id;
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_subscribe(&w, 3, &sp, subs, 4), 0);
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	assert_int_equal(pk.pid, 3);
	assert_int_equal(pk.u.sub.props.sub_id, 268435455u);
	assert_int_equal(pk.u.sub.filters.n, 4);
	struct mqtt5_filters it = pk.u.sub.filters;
	struct mqtt5_sub s;
	for (size_t i = 0; i < 4; i++) {
		assert_true(mqtt5_filters_next(&it, &s));
		assert_int_equal(s.filter.len, subs[i].filter.len);
		assert_memory_equal(s.filter.p, subs[i].filter.p, s.filter.len);
		assert_int_equal(mqtt5_sub_opts(&s), mqtt5_sub_opts(&subs[i]));
		assert_true(in_last(s.filter.p, s.filter.len));
	}
	assert_false(mqtt5_filters_next(&it, &s));
	/* the shared entry's group and filter */
	it = pk.u.sub.filters;
	assert_true(mqtt5_filters_next(&it, &s) && mqtt5_filters_next(&it, &s));
	assert_true(str_is(&s.share, "g1") && str_is(&s.match, "dev/#"));
	assert_true(s.retain_as_published && s.retain_handling == 2 && s.qos == 2 && !s.no_local);
	assert_true(mqtt5_filters_next(&it, &s));
	assert_true(s.share.len == 0 && s.share.p == NULL && str_is(&s.match, "#"));
	/* UNSUBSCRIBE: minimal and with properties and a shared filter */
	assert_int_equal(dec(B(0xa2, 5, 0, 2, 0, 0, 0), &pk, &rej), -E_PROTO); /* empty filter */
	assert_int_equal(rej.site, MQTT5_REJ_FILTER);
	assert_int_equal(dec(B(0xa2, 6, 0, 2, 0, 0, 1, 'a'), &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_UNSUBSCRIBE);
	uint8_t user[] = { 0x26, 0, 1, 'k', 0, 0 };
	struct mqtt_props up;
	memset(&up, 0, sizeof up);
	up.user = (struct mqtt_props_list){ user, sizeof user, sizeof user, 1 };
	struct mqtt_str fs[2] = { S("a/b"), S("$share/g/x/+") };
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_unsubscribe(&w, 4, &up, fs, 2), 0);
	assert_int_equal(dec(buf, w.pos, &pk, &rej), 0);
	assert_int_equal(pk.u.sub.props.user.n, 1);
	it = pk.u.sub.filters;
	assert_true(mqtt5_filters_next(&it, &s) && str_is(&s.filter, "a/b"));
	assert_true(mqtt5_filters_next(&it, &s) && str_is(&s.share, "g") && str_is(&s.match, "x/+"));
	assert_int_equal(mqtt5_sub_opts(&s), 0);
	assert_false(mqtt5_filters_next(&it, &s));
}

static void test_ping_disconnect_auth(void **state)
{
	(void)state;
	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	assert_int_equal(dec(B(0xc0, 0), &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_PINGREQ);
	assert_int_equal(dec(B(0xe0, 0), &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT_DISCONNECT);
	assert_int_equal(pk.u.reason.reason, 0);
	assert_int_equal(dec(B(0xe0, 1, 0x04), &pk, &rej), 0);
	assert_int_equal(pk.u.reason.reason, 0x04);
	assert_int_equal(dec(B(0xe0, 7, 0x81, 5, 0x11, 0, 0, 0, 9), &pk, &rej), 0);
	assert_int_equal(pk.u.reason.props.session_expiry_s, 9);
	const uint8_t client_ok[] = { 0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x90,
				      0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99 };
	for (unsigned rc = 0; rc < 256; rc++) {
		bool ok = memchr(client_ok, (int)rc, sizeof client_ok) != NULL;
		uint8_t b[] = { 0xe0, 1, (uint8_t)rc };
		assert_int_equal(dec(b, sizeof b, &pk, &rej), ok ? 0 : -E_PROTO);
		if (!ok)
			assert_int_equal(rej.site, MQTT5_REJ_REASON);
	}
	/* AUTH: remaining length 0; continue with method and data; re-authenticate */
	assert_int_equal(dec(B(0xf0, 0), &pk, &rej), 0);
	assert_int_equal(pk.type, MQTT5_AUTH);
	assert_int_equal(dec(B(0xf0, 2, 0, 0), &pk, &rej), 0);
	assert_int_equal(dec(B(0xf0, 13, 0x18, 11, 0x15, 0, 2, 'm', 'x', 0x16, 0, 3, 1, 2, 3), &pk, &rej), 0);
	assert_true(str_is(&pk.u.reason.props.auth_method, "mx"));
	assert_int_equal(pk.u.reason.props.auth_data.len, 3);
	assert_int_equal(dec(B(0xf0, 7, 0x19, 5, 0x15, 0, 2, 'm', 'x'), &pk, &rej), 0);
	assert_int_equal(pk.u.reason.reason, 0x19);
}

/* ---- rejections ----------------------------------------------------------------------- */

struct rej_case {
	const char *name;
	const uint8_t *p;
	size_t n;
	enum mqtt5_rej site;
	uint8_t rc;
	bool autolen;
};

#define C(name, site, rc, ...) { name, B(__VA_ARGS__), site, rc, false }
/* First byte and body: the remaining length is written by the test. */
#define CB(name, site, rc, ...) { name, B(__VA_ARGS__), site, rc, true }
/* CONNECT header bytes: protocol name, level 5 */
#define CH 0, 4, 'M', 'Q', 'T', 'T'
static const struct rej_case rej_cases[] = {
	C("rlen 5 bytes", MQTT5_REJ_RLEN, 0x81, 0x30, 0x80, 0x80, 0x80, 0x80, 0x01),
	C("rlen non-minimal", MQTT5_REJ_RLEN, 0x81, 0xc0, 0x80, 0x00),
	C("rlen lies (short)", MQTT5_REJ_RLEN, 0x81, 0x40, 0x03, 0x00, 0x01),
	C("rlen lies (long)", MQTT5_REJ_RLEN, 0x81, 0x40, 0x01, 0x00, 0x01),
	C("no length byte", MQTT5_REJ_RLEN, 0x81, 0xc0),
	CB("type 0", MQTT5_REJ_TYPE, 0x81, 0x00),
	CB("connack from client", MQTT5_REJ_DIRECTION, 0x82, 0x20, 0, 0, 0),
	CB("suback from client", MQTT5_REJ_DIRECTION, 0x82, 0x90, 0, 1, 0, 0),
	CB("unsuback from client", MQTT5_REJ_DIRECTION, 0x82, 0xb0, 0, 1, 0, 0),
	CB("pingresp from client", MQTT5_REJ_DIRECTION, 0x82, 0xd0),
	CB("connect flags nibble", MQTT5_REJ_FLAGS, 0x81, 0x11, CH, 5, 2, 0, 0, 0, 0, 0),
	CB("protocol name", MQTT5_REJ_PROTO_NAME, 0x84, 0x10, 0, 4, 'M', 'Q', 'T', 'X', 5, 2, 0, 0, 0, 0, 0),
	CB("protocol MQIsdp", MQTT5_REJ_PROTO_NAME, 0x84, 0x10, 0, 6, 'M', 'Q', 'I', 's', 'd', 'p', 3, 2, 0, 0, 0, 0),
	CB("protocol level 4", MQTT5_REJ_PROTO_LEVEL, 0x84, 0x10, CH, 4, 2, 0, 0, 0, 0),
	CB("protocol level 6", MQTT5_REJ_PROTO_LEVEL, 0x84, 0x10, CH, 6, 2, 0, 0, 0, 0, 0),
	CB("connect name short", MQTT5_REJ_SHORT, 0x81, 0x10, 0, 4, 'M'),
	CB("connect no keepalive", MQTT5_REJ_SHORT, 0x81, 0x10, CH, 5, 2),
	CB("connect reserved bit", MQTT5_REJ_CONNECT_FLAGS, 0x81, 0x10, CH, 5, 3, 0, 0, 0, 0, 0),
	CB("will qos w/o will", MQTT5_REJ_CONNECT_FLAGS, 0x81, 0x10, CH, 5, 0x0a, 0, 0, 0, 0, 0),
	CB("will retain w/o will", MQTT5_REJ_CONNECT_FLAGS, 0x81, 0x10, CH, 5, 0x22, 0, 0, 0, 0, 0),
	CB("will qos 3", MQTT5_REJ_CONNECT_FLAGS, 0x81, 0x10, CH, 5, 0x1e, 0, 0, 0, 0, 0),
	CB("connect props len lies", MQTT5_REJ_PROPS, 0x81, 0x10, CH, 5, 2, 0, 0, 9, 0, 0),
	CB("connect prop not allowed", MQTT5_REJ_PROPS, 0x81, 0x10, CH, 5, 2, 0, 0, 2, 0x23, 0, 1, 0, 0),
	CB("connect prop twice", MQTT5_REJ_PROPS, 0x82, 0x10, CH, 5, 2, 0, 0, 6, 0x21, 0, 1, 0x21, 0, 1, 0, 0),
	CB("client id truncated", MQTT5_REJ_SHORT, 0x81, 0x10, CH, 5, 2, 0, 0, 0, 0, 5, 'a'),
	CB("client id missing", MQTT5_REJ_SHORT, 0x81, 0x10, CH, 5, 2, 0, 0, 0),
	CB("client id NUL", MQTT5_REJ_UTF8, 0x81, 0x10, CH, 5, 2, 0, 0, 0, 0, 1, 0),
	CB("client id surrogate", MQTT5_REJ_UTF8, 0x81, 0x10, CH, 5, 2, 0, 0, 0, 0, 3, 0xed, 0xa0, 0x80),
	CB("connect trailing", MQTT5_REJ_TRAILING, 0x81, 0x10, CH, 5, 2, 0, 0, 0, 0, 0, 9),
	CB("will props missing", MQTT5_REJ_WILL_PROPS, 0x81, 0x10, CH, 5, 6, 0, 0, 0, 0, 0),
	CB("will props bad id", MQTT5_REJ_WILL_PROPS, 0x81, 0x10, CH, 5, 6, 0, 0, 0, 0, 0, 2, 0x11, 0),
	CB("will props topic alias", MQTT5_REJ_WILL_PROPS, 0x81, 0x10, CH, 5, 6, 0, 0, 0, 0, 0, 3, 0x23, 0, 1),
	CB("will topic missing", MQTT5_REJ_SHORT, 0x81, 0x10, CH, 5, 6, 0, 0, 0, 0, 0, 0),
	CB("will payload missing", MQTT5_REJ_SHORT, 0x81, 0x10, CH, 5, 6, 0, 0, 0, 0, 0, 0, 0, 1, 'a'),
	CB("will topic NUL", MQTT5_REJ_UTF8, 0x81, 0x10, CH, 5, 6, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0),
	CB("will topic wildcard", MQTT5_REJ_TOPIC, 0x82, 0x10, CH, 5, 6, 0, 0, 0, 0, 0, 0, 0, 1, '#', 0, 0),
	CB("will topic empty", MQTT5_REJ_TOPIC, 0x82, 0x10, CH, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
	CB("user name missing", MQTT5_REJ_SHORT, 0x81, 0x10, CH, 5, 0x82, 0, 0, 0, 0, 0),
	CB("user name NUL", MQTT5_REJ_UTF8, 0x81, 0x10, CH, 5, 0x82, 0, 0, 0, 0, 0, 0, 1, 0),
	CB("password missing", MQTT5_REJ_SHORT, 0x81, 0x10, CH, 5, 0x42, 0, 0, 0, 0, 0),
	CB("publish qos 3", MQTT5_REJ_QOS, 0x81, 0x36, 0, 1, 'a', 0, 1, 0),
	CB("publish dup qos 0", MQTT5_REJ_QOS, 0x81, 0x38, 0, 1, 'a', 0),
	CB("publish topic short", MQTT5_REJ_SHORT, 0x81, 0x30, 0, 9, 'a'),
	CB("publish topic NUL", MQTT5_REJ_UTF8, 0x81, 0x30, 0, 2, 'a', 0, 0),
	CB("publish topic +", MQTT5_REJ_TOPIC, 0x82, 0x30, 0, 3, 'a', '/', '+', 0),
	CB("publish topic #", MQTT5_REJ_TOPIC, 0x82, 0x30, 0, 1, '#', 0),
	CB("publish no pid", MQTT5_REJ_SHORT, 0x81, 0x32, 0, 1, 'a'),
	CB("publish pid 0", MQTT5_REJ_PID, 0x82, 0x32, 0, 1, 'a', 0, 0, 0),
	CB("publish no props", MQTT5_REJ_PROPS, 0x81, 0x30, 0, 1, 'a'),
	CB("publish props lie", MQTT5_REJ_PROPS, 0x81, 0x30, 0, 1, 'a', 5),
	CB("publish alias 0", MQTT5_REJ_PROPS, 0x82, 0x30, 0, 1, 'a', 3, 0x23, 0, 0),
	CB("publish session expiry", MQTT5_REJ_PROPS, 0x81, 0x30, 0, 1, 'a', 5, 0x11, 0, 0, 0, 1),
	CB("publish empty topic", MQTT5_REJ_TOPIC_EMPTY, 0x82, 0x30, 0, 0, 0),
	CB("publish empty topic, expiry", MQTT5_REJ_TOPIC_EMPTY, 0x82, 0x30, 0, 0, 5, 0x02, 0, 0, 0, 1),
	CB("publish sub id", MQTT5_REJ_SUB_ID, 0x82, 0x30, 0, 1, 'a', 2, 0x0b, 1),
	CB("puback flags", MQTT5_REJ_FLAGS, 0x81, 0x41, 0, 1),
	CB("pubrel flags 0", MQTT5_REJ_FLAGS, 0x81, 0x60, 0, 1),
	CB("pubcomp short", MQTT5_REJ_SHORT, 0x81, 0x70, 0),
	CB("puback pid 0", MQTT5_REJ_PID, 0x82, 0x40, 0, 0),
	CB("puback reason 0x92", MQTT5_REJ_REASON, 0x82, 0x40, 0, 1, 0x92),
	CB("pubrec reason 0x04", MQTT5_REJ_REASON, 0x82, 0x50, 0, 1, 0x04),
	CB("pubrel reason 0x10", MQTT5_REJ_REASON, 0x82, 0x62, 0, 1, 0x10),
	CB("pubcomp reason 0x80", MQTT5_REJ_REASON, 0x82, 0x70, 0, 1, 0x80),
	CB("puback props lie", MQTT5_REJ_PROPS, 0x81, 0x40, 0, 1, 0, 1),
	CB("puback prop not allowed", MQTT5_REJ_PROPS, 0x81, 0x40, 0, 1, 0, 5, 0x02, 0, 0, 0, 1),
	CB("puback trailing", MQTT5_REJ_TRAILING, 0x81, 0x40, 0, 1, 0, 0, 7),
	CB("subscribe flags", MQTT5_REJ_FLAGS, 0x81, 0x80, 0, 1, 0, 0, 1, 'a', 0),
	CB("subscribe no pid", MQTT5_REJ_SHORT, 0x81, 0x82, 0),
	CB("subscribe pid 0", MQTT5_REJ_PID, 0x82, 0x82, 0, 0, 0, 0, 1, 'a', 0),
	CB("subscribe no props", MQTT5_REJ_PROPS, 0x81, 0x82, 0, 1),
	CB("subscribe sub id 0", MQTT5_REJ_PROPS, 0x82, 0x82, 0, 1, 2, 0x0b, 0, 0, 1, 'a', 0),
	CB("subscribe two sub ids", MQTT5_REJ_PROPS, 0x82, 0x82, 0, 1, 4, 0x0b, 1, 0x0b, 2, 0, 1, 'a', 0),
	CB("subscribe no payload", MQTT5_REJ_EMPTY, 0x82, 0x82, 0, 1, 0),
	CB("subscribe no options", MQTT5_REJ_SHORT, 0x81, 0x82, 0, 1, 0, 0, 1, 'a'),
	CB("subscribe filter short", MQTT5_REJ_SHORT, 0x81, 0x82, 0, 1, 0, 0, 3, 'a'),
	CB("subscribe filter NUL", MQTT5_REJ_UTF8, 0x81, 0x82, 0, 1, 0, 0, 1, 0, 0),
	CB("filter # not last", MQTT5_REJ_FILTER, 0x82, 0x82, 0, 1, 0, 0, 3, '#', '/', 'a', 0),
	CB("filter a+", MQTT5_REJ_FILTER, 0x82, 0x82, 0, 1, 0, 0, 2, 'a', '+', 0),
	CB("filter empty", MQTT5_REJ_FILTER, 0x82, 0x82, 0, 1, 0, 0, 0, 0),
	CB("options reserved bit 6", MQTT5_REJ_SUB_RESERVED, 0x81, 0x82, 0, 1, 0, 0, 1, 'a', 0x40),
	CB("options reserved bit 7", MQTT5_REJ_SUB_RESERVED, 0x81, 0x82, 0, 1, 0, 0, 1, 'a', 0x80),
	CB("options qos 3", MQTT5_REJ_SUB_QOS, 0x82, 0x82, 0, 1, 0, 0, 1, 'a', 0x03),
	CB("options retain handling 3", MQTT5_REJ_RETAIN_HANDLING, 0x82, 0x82, 0, 1, 0, 0, 1, 'a', 0x30),
	CB("share empty group", MQTT5_REJ_SHARE, 0x82, 0x82, 0, 1, 0, 0, 9, '$', 's', 'h', 'a', 'r', 'e', '/', '/', 'a', 0),
	CB("share + group", MQTT5_REJ_SHARE, 0x82, 0x82, 0, 1, 0, 0, 10, '$', 's', 'h', 'a', 'r', 'e', '/', '+', '/', 'a', 0),
	CB("share # group", MQTT5_REJ_SHARE, 0x82, 0x82, 0, 1, 0, 0, 8, '$', 's', 'h', 'a', 'r', 'e', '/', '#', 0),
	CB("share no filter", MQTT5_REJ_SHARE, 0x82, 0x82, 0, 1, 0, 0, 8, '$', 's', 'h', 'a', 'r', 'e', '/', 'g', 0),
	CB("share empty filter", MQTT5_REJ_SHARE, 0x82, 0x82, 0, 1, 0, 0, 9, '$', 's', 'h', 'a', 'r', 'e', '/', 'g', '/', 0),
	CB("share no local", MQTT5_REJ_SHARE_NO_LOCAL, 0x82, 0x82, 0, 1, 0, 0, 10, '$', 's', 'h', 'a', 'r', 'e', '/', 'g', '/', 'a', 0x04),
	CB("unsubscribe flags", MQTT5_REJ_FLAGS, 0x81, 0xa0, 0, 1, 0, 0, 1, 'a'),
	CB("unsubscribe pid 0", MQTT5_REJ_PID, 0x82, 0xa2, 0, 0, 0, 0, 1, 'a'),
	CB("unsubscribe no payload", MQTT5_REJ_EMPTY, 0x82, 0xa2, 0, 1, 0),
	CB("unsubscribe sub id", MQTT5_REJ_PROPS, 0x81, 0xa2, 0, 1, 2, 0x0b, 1, 0, 1, 'a'),
	CB("unsubscribe bad filter", MQTT5_REJ_FILTER, 0x82, 0xa2, 0, 1, 0, 0, 2, '#', '#'),
	CB("unsubscribe bad share", MQTT5_REJ_SHARE, 0x82, 0xa2, 0, 1, 0, 0, 8, '$', 's', 'h', 'a', 'r', 'e', '/', 'g'),
	CB("pingreq flags", MQTT5_REJ_FLAGS, 0x81, 0xc1),
	CB("pingreq body", MQTT5_REJ_TRAILING, 0x81, 0xc0, 0),
	CB("disconnect flags", MQTT5_REJ_FLAGS, 0x81, 0xe2),
	CB("disconnect server reason", MQTT5_REJ_REASON, 0x82, 0xe0, 0x8e),
	CB("disconnect props lie", MQTT5_REJ_PROPS, 0x81, 0xe0, 0, 3),
	CB("disconnect reason string bad", MQTT5_REJ_PROPS, 0x81, 0xe0, 0, 4, 0x1f, 0, 1, 0xff),
	CB("disconnect trailing", MQTT5_REJ_TRAILING, 0x81, 0xe0, 0, 0, 0),
	CB("auth flags", MQTT5_REJ_FLAGS, 0x81, 0xf1),
	CB("auth reason alone", MQTT5_REJ_SHORT, 0x81, 0xf0, 0x18),
	CB("auth reason 0x04", MQTT5_REJ_REASON, 0x82, 0xf0, 0x04, 0),
	CB("auth continue w/o method", MQTT5_REJ_AUTH_METHOD, 0x82, 0xf0, 0x18, 0),
	CB("auth data w/o method", MQTT5_REJ_PROPS, 0x82, 0xf0, 0x18, 4, 0x16, 0, 1, 1),
	CB("auth trailing", MQTT5_REJ_TRAILING, 0x81, 0xf0, 0x18, 0, 0),
};

static void check_rej(const char *name, const uint8_t *p, size_t n, enum mqtt5_rej site,
		      uint8_t want_rc)
{
	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	int rc = dec(p, n, &pk, &rej);
	uint8_t got = (uint8_t)mqtt5_rej_rc(&rej);
	if (rc != -E_PROTO || rej.site != site || got != want_rc)
		fail_msg("case '%s': rc %d site %d reason %#x, want site %d reason %#x", name, rc,
			 rej.site, got, site, want_rc);
	if ((site == MQTT5_REJ_PROPS || site == MQTT5_REJ_WILL_PROPS) !=
	    (rej.props != MQTT_PROPS_REJ_NONE))
		fail_msg("case '%s': props site %d", name, rej.props);
	if (n >= 2 && site != MQTT5_REJ_RLEN)
		assert_int_equal(rej.type, p[0] >> 4);
}

static void test_rejections(void **state)
{
	(void)state;
	bool hit[MQTT5_REJ__COUNT] = { false };
	for (size_t i = 0; i < sizeof rej_cases / sizeof rej_cases[0]; i++) {
		const struct rej_case *c = &rej_cases[i];
		uint8_t pkt[300];
		size_t n = c->n;
		if (c->autolen) {
			assert_true(c->n - 1 < 128);
			pkt[0] = c->p[0];
			pkt[1] = (uint8_t)(c->n - 1);
			memcpy(pkt + 2, c->p + 1, c->n - 1);
			n = c->n + 1;
		} else {
			memcpy(pkt, c->p, c->n);
		}
		check_rej(c->name, pkt, n, c->site, c->rc);
		hit[c->site] = true;
	}
	/* 65536 filters: more than the list's count holds */
	size_t n = 65536, body = 3 + n * 4;
	uint8_t *big = malloc(5 + body);
	size_t h = 0;
	big[h++] = 0x82;
	for (size_t v = body; v; v >>= 7)
		big[h++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
	big[h++] = 0;
	big[h++] = 1;
	big[h++] = 0;
	for (size_t i = 0; i < n; i++) {
		memcpy(big + h, "\x00\x01" "a\x01", 4);
		h += 4;
	}
	check_rej("65536 filters", big, h, MQTT5_REJ_TOO_MANY, MQTT_RC_IMPLEMENTATION_SPECIFIC);
	hit[MQTT5_REJ_TOO_MANY] = true;
	/* 65535 still decode */
	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	body -= 4;
	h = 1;
	for (size_t v = body; v; v >>= 7)
		big[h++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
	assert_int_equal(h, 4); /* the length field kept its size: the body did not move */
	assert_int_equal(dec(big, h + body, &pk, &rej), 0);
	assert_int_equal(pk.u.sub.filters.n, 65535);
	free(big);
	for (int s = MQTT5_REJ_NONE + 1; s < MQTT5_REJ__COUNT; s++)
		if (!hit[s])
			fail_msg("rejection site %d never hit", s);
	/* every site has a failure reason code; NONE has none */
	struct mqtt5_rej_info none = { MQTT5_REJ_NONE, MQTT_PROPS_REJ_NONE, 0 };
	assert_int_equal(mqtt5_rej_rc(&none), MQTT_RC_SUCCESS);
}

/* ---- truncation ----------------------------------------------------------------------- */

/* Re-head body[0..cut) with a consistent remaining length and decode it. */
static int dec_cut(uint8_t first, const uint8_t *body, size_t cut, struct mqtt5_packet *pk,
		   struct mqtt5_rej_info *rej)
{
	uint8_t *p = malloc(cut + 5);
	size_t h = 0;
	p[h++] = first;
	size_t v = cut;
	do {
		p[h] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			p[h] |= 0x80;
		h++;
	} while (v);
	memcpy(p + h, body, cut);
	int rc = dec(p, h + cut, pk, rej);
	free(p);
	return rc;
}

/* The body offset of a whole packet's encoding (after the remaining length). */
static size_t body_off(const uint8_t *p)
{
	size_t i = 1;
	while (p[i] & 0x80)
		i++;
	return i + 1;
}

static void test_truncation(void **state)
{
	(void)state;
	uint8_t full[3][512];
	size_t len[3];
	uint8_t user[] = { 0x26, 0, 1, 'k', 0, 1, 'v' };
	struct mqtt5_connect k;
	memset(&k, 0, sizeof k);
	k.props.present = MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY) | MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD);
	k.props.session_expiry_s = 10;
	k.props.auth_method = S("m");
	k.props.user = (struct mqtt_props_list){ user, sizeof user, sizeof user, 1 };
	k.will = true;
	k.will_qos = 1;
	k.will_props.present = MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY);
	k.will_props.will_delay_s = 1;
	k.client_id = S("id");
	k.will_topic = S("w/t");
	k.will_payload = S("wp");
	k.has_username = k.has_password = true;
	k.username = S("u");
	k.password = S("p");
	struct wcur w = wcur_make(full[0], sizeof full[0]);
	assert_int_equal(mqtt5_encode_connect(&w, &k), 0);
	len[0] = w.pos;
	struct mqtt5_publish p;
	memset(&p, 0, sizeof p);
	p.topic = S("t/x");
	p.qos = 2;
	p.pid = 5;
	p.props.present = MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY) | MQTT_PROP_BIT(MQTT_PROP_RESPONSE_TOPIC);
	p.props.message_expiry_s = 3;
	p.props.response_topic = S("r");
	p.payload = (const uint8_t *)"payload";
	p.payload_len = 7;
	w = wcur_make(full[1], sizeof full[1]);
	assert_int_equal(mqtt5_encode_publish(&w, &p), 0);
	len[1] = w.pos;
	struct mqtt5_sub subs[2];
	memset(subs, 0, sizeof subs);
	subs[0].filter = S("a/#");
	subs[0].qos = 2;
	subs[1].filter = S("$share/g/b");
	subs[1].retain_handling = 2;
	struct mqtt_props sp;
	memset(&sp, 0, sizeof sp);
	uint32_t id = 300;
	sp.sub_ids.n = 1;
	sp.sub_id_vals = &id;
	w = wcur_make(full[2], sizeof full[2]);
	assert_int_equal(mqtt5_encode_subscribe(&w, 7, &sp, subs, 2), 0);
	len[2] = w.pos;

	struct mqtt5_packet pk;
	struct mqtt5_rej_info rej;
	for (int t = 0; t < 3; t++) {
		assert_int_equal(dec(full[t], len[t], &pk, &rej), 0);
		size_t off = body_off(full[t]);
		size_t blen = len[t] - off;
		/* the whole packet cut at every byte: the remaining length lies */
		for (size_t cut = 0; cut < len[t]; cut++) {
			assert_int_equal(dec(full[t], cut, &pk, &rej), -E_PROTO);
			assert_int_equal(rej.site, MQTT5_REJ_RLEN);
		}
		/* the body cut at every byte under a consistent length */
		for (size_t cut = 0; cut < blen; cut++) {
			int rc = dec_cut(full[t][0], full[t] + off, cut, &pk, &rej);
			bool may_pass = false;
			if (t == 1) /* PUBLISH: shorter payload is a valid packet */
				may_pass = cut >= blen - p.payload_len;
			if (t == 2) /* SUBSCRIBE: cut after the first whole entry */
				may_pass = cut == blen - (2 + subs[1].filter.len + 1);
			if (may_pass) {
				assert_int_equal(rc, 0);
			} else if (rc != -E_PROTO) {
				fail_msg("packet %d body cut at %zu/%zu accepted", t, cut, blen);
			}
		}
	}
}

/* ---- random round trips: client encoders -> server decoder ------------------------------ */

static uint64_t g_rng;
static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(splitmix64(&g_rng) % n);
}

static const char *const words[] = { "a", "b", "dev", "sensor", "x1", "h\xc3\xa9", "\xe2\x82\xac", "z" };
#define NWORDS (sizeof words / sizeof words[0])

/* A pool the generator writes strings into; views point into it. */
struct pool {
	uint8_t b[4096];
	size_t n;
};

static struct mqtt_str pool_str(struct pool *pl, const char *s, size_t n)
{
	struct mqtt_str v = { pl->b + pl->n, (uint16_t)n };
	assert_true(pl->n + n <= sizeof pl->b);
	memcpy(pl->b + pl->n, s, n);
	pl->n += n;
	return v;
}

/* A topic name (levels of words), or a filter (with + and a last #) when filter. */
static struct mqtt_str rand_topic(struct pool *pl, bool filter, bool maybe_empty)
{
	char t[128];
	size_t n = 0;
	if (maybe_empty && rnd(4) == 0)
		return pool_str(pl, "", 0);
	unsigned levels = 1 + rnd(4);
	for (unsigned i = 0; i < levels; i++) {
		if (i)
			t[n++] = '/';
		unsigned r = rnd(10);
		if (filter && r == 0) {
			t[n++] = '+';
		} else if (filter && r == 1 && i + 1 == levels) {
			t[n++] = '#';
		} else if (r == 2) {
			/* an empty level */
		} else {
			const char *w = words[rnd(NWORDS)];
			memcpy(t + n, w, strlen(w));
			n += strlen(w);
		}
	}
	if (n == 0)
		t[n++] = 'z'; /* a single empty level is no name */
	return pool_str(pl, t, n);
}

static struct mqtt_str rand_bytes(struct pool *pl, size_t max)
{
	char t[64];
	size_t n = rnd((uint32_t)max + 1);
	for (size_t i = 0; i < n; i++)
		t[i] = (char)rnd(256);
	return pool_str(pl, t, n);
}

static struct mqtt_str rand_utf8(struct pool *pl)
{
	char t[64];
	size_t n = 0;
	unsigned k = rnd(4);
	for (unsigned i = 0; i < k; i++) {
		const char *w = words[rnd(NWORDS)];
		memcpy(t + n, w, strlen(w));
		n += strlen(w);
	}
	return pool_str(pl, t, n);
}

/* A property block valid in kind k (no Subscription Identifier unless sub_ok). */
static void rand_props(struct pool *pl, enum mqtt_props_pkt k, bool sub_ok, struct mqtt_props *p,
		       uint32_t *sub_vals)
{
	memset(p, 0, sizeof *p);
	for (uint8_t id = 1; id <= MQTT_PROP_ID_MAX; id++) {
		if (!mqtt_prop_allowed(id, k) || rnd(3) != 0)
			continue;
		switch ((enum mqtt_prop_id)id) {
		case MQTT_PROP_USER: {
			unsigned n = 1 + rnd(3);
			const uint8_t *start = pl->b + pl->n;
			size_t len = 0;
			for (unsigned i = 0; i < n; i++) {
				struct mqtt_str key = rand_utf8(pl), val = rand_utf8(pl);
				/* rewrite as a raw property: id, key, value */
				uint8_t raw[140];
				size_t r = 0;
				raw[r++] = MQTT_PROP_USER;
				raw[r++] = 0;
				raw[r++] = (uint8_t)key.len;
				memcpy(raw + r, key.p, key.len);
				r += key.len;
				raw[r++] = 0;
				raw[r++] = (uint8_t)val.len;
				memcpy(raw + r, val.p, val.len);
				r += val.len;
				pl->n -= key.len + val.len;
				if (i == 0)
					start = pl->b + pl->n;
				(void)pool_str(pl, (const char *)raw, r);
				len += r;
			}
			p->user = (struct mqtt_props_list){ start, len, len, n };
			continue;
		}
		case MQTT_PROP_SUB_ID:
			if (!sub_ok)
				continue;
			p->sub_ids.n = k == MQTT_PROPS_PUBLISH ? 1 + rnd(3) : 1;
			for (uint32_t i = 0; i < p->sub_ids.n; i++)
				sub_vals[i] = 1 + rnd(268435455u);
			p->sub_id_vals = sub_vals;
			continue;
		default:
			break;
		}
		p->present |= MQTT_PROP_BIT(id);
		uint32_t v32 = (uint32_t)splitmix64(&g_rng);
		switch ((enum mqtt_prop_id)id) {
		case MQTT_PROP_PAYLOAD_FORMAT: p->payload_format = (uint8_t)rnd(2); break;
		case MQTT_PROP_MESSAGE_EXPIRY: p->message_expiry_s = v32; break;
		case MQTT_PROP_CONTENT_TYPE: p->content_type = rand_utf8(pl); break;
		case MQTT_PROP_RESPONSE_TOPIC: p->response_topic = rand_topic(pl, false, false); break;
		case MQTT_PROP_CORRELATION_DATA: p->correlation_data = rand_bytes(pl, 20); break;
		case MQTT_PROP_SESSION_EXPIRY: p->session_expiry_s = v32; break;
		case MQTT_PROP_ASSIGNED_CLIENT_ID: p->assigned_client_id = rand_utf8(pl); break;
		case MQTT_PROP_SERVER_KEEPALIVE: p->server_keepalive_s = (uint16_t)v32; break;
		case MQTT_PROP_AUTH_METHOD: p->auth_method = rand_utf8(pl); break;
		case MQTT_PROP_AUTH_DATA: p->auth_data = rand_bytes(pl, 20); break;
		case MQTT_PROP_REQUEST_PROBLEM_INFO: p->request_problem_info = (uint8_t)rnd(2); break;
		case MQTT_PROP_WILL_DELAY: p->will_delay_s = v32; break;
		case MQTT_PROP_REQUEST_RESPONSE_INFO: p->request_response_info = (uint8_t)rnd(2); break;
		case MQTT_PROP_RESPONSE_INFO: p->response_info = rand_utf8(pl); break;
		case MQTT_PROP_SERVER_REFERENCE: p->server_reference = rand_utf8(pl); break;
		case MQTT_PROP_REASON_STRING: p->reason_string = rand_utf8(pl); break;
		case MQTT_PROP_RECEIVE_MAX: p->receive_max = (uint16_t)(1 + rnd(65535)); break;
		case MQTT_PROP_TOPIC_ALIAS_MAX: p->topic_alias_max = (uint16_t)v32; break;
		case MQTT_PROP_TOPIC_ALIAS: p->topic_alias = (uint16_t)(1 + rnd(65535)); break;
		case MQTT_PROP_MAX_QOS: p->max_qos = (uint8_t)rnd(2); break;
		case MQTT_PROP_RETAIN_AVAILABLE: p->retain_available = (uint8_t)rnd(2); break;
		case MQTT_PROP_MAX_PACKET_SIZE: p->max_packet_size = v32 ? v32 : 1; break;
		case MQTT_PROP_WILDCARD_SUB_AVAILABLE: p->wildcard_sub_available = (uint8_t)rnd(2); break;
		case MQTT_PROP_SUB_ID_AVAILABLE: p->sub_id_available = (uint8_t)rnd(2); break;
		case MQTT_PROP_SHARED_SUB_AVAILABLE: p->shared_sub_available = (uint8_t)rnd(2); break;
		case MQTT_PROP_USER:
		case MQTT_PROP_SUB_ID:
		default: break;
		}
	}
	uint64_t data = MQTT_PROP_BIT(MQTT_PROP_AUTH_DATA), meth = MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD);
	if ((p->present & data) && !(p->present & meth))
		p->present &= ~data;
}

static const uint8_t rc_puback[] = { 0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99 };
static const uint8_t rc_pubrel[] = { 0x00, 0x92 };
static const uint8_t rc_disc[] = { 0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x90,
				   0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99 };

static void test_random_round_trip(void **state)
{
	(void)state;
	const char *env = getenv("CODEC5_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0xc0dec5ull;
	print_message("[ codec5   ] CODEC5_TEST_SEED=%#llx\n", (unsigned long long)seed);
	g_rng = seed;
	static const uint8_t types[] = { MQTT_CONNECT, MQTT_PUBLISH, MQTT_PUBACK, MQTT_PUBREC,
					 MQTT_PUBREL, MQTT_PUBCOMP, MQTT_SUBSCRIBE, MQTT_UNSUBSCRIBE,
					 MQTT_PINGREQ, MQTT_DISCONNECT, MQTT5_AUTH };
	unsigned per_type[16] = { 0 };
	static uint8_t payload[300];
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)(i * 7);
	for (unsigned iter = 0; iter < 20000; iter++) {
		static struct pool pl;
		pl.n = 0;
		uint32_t sv[4], wsv[4];
		struct mqtt5_packet src;
		memset(&src, 0, sizeof src);
		src.type = types[rnd(sizeof types)];
		uint8_t buf[8192];
		struct wcur w = wcur_make(buf, sizeof buf);
		int rc = 0;
		struct mqtt5_sub subs[6];
		struct mqtt_str fs[6];
		size_t nsub = 1 + rnd(6);
		switch (src.type) {
		case MQTT_CONNECT: {
			struct mqtt5_connect *k = &src.u.connect;
			rand_props(&pl, MQTT_PROPS_CONNECT, false, &k->props, sv);
			k->client_id = rand_utf8(&pl);
			k->clean_start = rnd(2);
			k->keepalive_s = (uint16_t)rnd(65536);
			k->will = rnd(2);
			if (k->will) {
				rand_props(&pl, MQTT_PROPS_WILL, false, &k->will_props, wsv);
				k->will_qos = (uint8_t)rnd(3);
				k->will_retain = rnd(2);
				k->will_topic = rand_topic(&pl, false, false);
				k->will_payload = rand_bytes(&pl, 40);
			}
			k->has_username = rnd(2);
			if (k->has_username)
				k->username = rand_utf8(&pl);
			k->has_password = rnd(2);
			if (k->has_password)
				k->password = rand_bytes(&pl, 30);
			rc = mqtt5_encode_connect(&w, k);
			break;
		}
		case MQTT_PUBLISH: {
			struct mqtt5_publish *p = &src.u.publish;
			rand_props(&pl, MQTT_PROPS_PUBLISH, false, &p->props, sv);
			p->topic = rand_topic(&pl, false, p->props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS));
			p->qos = (uint8_t)rnd(3);
			p->dup = p->qos && rnd(2);
			p->retain = rnd(2);
			p->pid = p->qos ? (uint16_t)(1 + rnd(65535)) : 0;
			p->payload = payload;
			p->payload_len = rnd(sizeof payload + 1);
			src.flags = (uint8_t)((p->dup ? 8 : 0) | p->qos << 1 | (p->retain ? 1 : 0));
			src.pid = p->pid;
			rc = mqtt5_encode_publish(&w, p);
			assert_int_equal(w.pos, mqtt5_publish_size(p));
			break;
		}
		case MQTT_PUBACK:
		case MQTT_PUBREC:
		case MQTT_PUBREL:
		case MQTT_PUBCOMP: {
			bool rel = src.type == MQTT_PUBREL || src.type == MQTT_PUBCOMP;
			src.pid = (uint16_t)(1 + rnd(65535));
			src.flags = src.type == MQTT_PUBREL ? 2 : 0;
			src.u.reason.reason = rel ? rc_pubrel[rnd(sizeof rc_pubrel)]
						  : rc_puback[rnd(sizeof rc_puback)];
			if (rnd(2))
				rand_props(&pl, MQTT_PROPS_PUBACK, false, &src.u.reason.props, sv);
			rc = mqtt5_encode_ack(&w, (enum mqtt_type)src.type, src.pid,
					      src.u.reason.reason, &src.u.reason.props);
			assert_int_equal(w.pos, mqtt5_ack_size(src.u.reason.reason, &src.u.reason.props));
			break;
		}
		case MQTT_SUBSCRIBE:
		case MQTT_UNSUBSCRIBE: {
			bool sub = src.type == MQTT_SUBSCRIBE;
			src.pid = (uint16_t)(1 + rnd(65535));
			src.flags = 2;
			rand_props(&pl, sub ? MQTT_PROPS_SUBSCRIBE : MQTT_PROPS_UNSUBSCRIBE, sub,
				   &src.u.sub.props, sv);
			memset(subs, 0, sizeof subs);
			for (size_t i = 0; i < nsub; i++) {
				bool shared = rnd(4) == 0;
				struct mqtt_str f = rand_topic(&pl, true, false);
				if (shared) {
					char t[160];
					int n = snprintf(t, sizeof t, "$share/%s/%.*s", words[rnd(5)],
							 f.len, (const char *)f.p);
					f = pool_str(&pl, t, (size_t)n);
				}
				subs[i].filter = fs[i] = f;
				if (sub) {
					subs[i].qos = (uint8_t)rnd(3);
					subs[i].no_local = !shared && rnd(2);
					subs[i].retain_as_published = rnd(2);
					subs[i].retain_handling = (uint8_t)rnd(3);
				}
			}
			rc = sub ? mqtt5_encode_subscribe(&w, src.pid, &src.u.sub.props, subs, nsub)
				 : mqtt5_encode_unsubscribe(&w, src.pid, &src.u.sub.props, fs, nsub);
			break;
		}
		case MQTT_PINGREQ:
			rc = mqtt_encode_simple(&w, MQTT_PINGREQ);
			break;
		case MQTT_DISCONNECT:
			src.u.reason.reason = rc_disc[rnd(sizeof rc_disc)];
			if (rnd(2))
				rand_props(&pl, MQTT_PROPS_DISCONNECT, false, &src.u.reason.props, sv);
			rc = mqtt5_encode_disconnect(&w, src.u.reason.reason, &src.u.reason.props);
			assert_int_equal(w.pos, mqtt5_disconnect_size(src.u.reason.reason,
								     &src.u.reason.props));
			break;
		case MQTT5_AUTH:
		default: {
			static const uint8_t ar[] = { 0x00, 0x18, 0x19 };
			src.u.reason.reason = ar[rnd(3)];
			if (src.u.reason.reason || rnd(2)) {
				rand_props(&pl, MQTT_PROPS_AUTH, false, &src.u.reason.props, sv);
				src.u.reason.props.present |= MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD);
			}
			rc = mqtt5_encode_auth(&w, src.u.reason.reason, &src.u.reason.props);
			break;
		}
		}
		if (rc != 0)
			fail_msg("iteration %u type %u: encode %d", iter, src.type, rc);
		struct mqtt5_packet got;
		struct mqtt5_rej_info rej;
		if (dec(buf, w.pos, &got, &rej) != 0)
			fail_msg("iteration %u type %u: rejected at site %d (props %d)", iter, src.type,
				 rej.site, rej.props);
		per_type[src.type]++;
		if (src.type == MQTT_SUBSCRIBE || src.type == MQTT_UNSUBSCRIBE) {
			/* the source has no filter list view: compare entry by entry */
			assert_int_equal(got.type, src.type);
			assert_int_equal(got.pid, src.pid);
			assert_int_equal(got.u.sub.filters.n, nsub);
			assert_true(mqtt_props_equal(&got.u.sub.props, &src.u.sub.props));
			struct mqtt5_filters it = got.u.sub.filters;
			struct mqtt5_sub s;
			for (size_t i = 0; i < nsub; i++) {
				assert_true(mqtt5_filters_next(&it, &s));
				assert_int_equal(s.filter.len, subs[i].filter.len);
				assert_memory_equal(s.filter.p, subs[i].filter.p, s.filter.len);
				assert_int_equal(mqtt5_sub_opts(&s), mqtt5_sub_opts(&subs[i]));
			}
			continue;
		}
		if (!mqtt5_packet_equal(&src, &got) || !mqtt5_packet_equal(&got, &src))
			fail_msg("iteration %u type %u: decoded view differs", iter, src.type);
		/* one byte short: refused whole */
		if (src.type == MQTT_CONNECT) {
			struct wcur s = wcur_make(buf, w.pos - 1);
			assert_int_equal(mqtt5_encode_connect(&s, &src.u.connect), -E_OVERFLOW);
			assert_int_equal(s.pos, 0);
		}
	}
	for (size_t i = 0; i < sizeof types; i++)
		assert_true(per_type[types[i]] > 1000);
}

/* ---- server encoders -> a test-local client-side decoder ------------------------------ */

struct cpkt {
	uint8_t type, flags;
	bool session_present;
	uint16_t pid;
	uint8_t reason;
	struct mqtt_props props;
	struct mqtt_str topic;
	const uint8_t *payload;
	size_t payload_len;
	const uint8_t *codes;
	size_t n_codes;
};

/* What a client does with a packet from the server; only what these tests need. */
static int client_decode(const uint8_t *buf, size_t len, struct cpkt *o)
{
	size_t hl;
	uint32_t rl;
	enum mqtt_rej r3;
	enum mqtt_props_rej pr;
	memset(o, 0, sizeof *o);
	if (mqtt_fixed_header(buf, len, &hl, &rl, &r3) || rl != len - hl)
		return -1;
	o->type = (uint8_t)(buf[0] >> 4);
	o->flags = buf[0] & 0x0f;
	struct cur c = cur_make(buf + hl, rl);
	switch (o->type) {
	case MQTT_CONNACK:
		o->session_present = cur_u8(&c) & 1;
		o->reason = cur_u8(&c);
		if (!cur_ok(&c) || mqtt_props_decode(&c, MQTT_PROPS_CONNACK, &o->props, &pr))
			return -1;
		break;
	case MQTT_PUBLISH: {
		uint8_t q = (o->flags >> 1) & 3;
		o->topic.len = cur_be16(&c);
		o->topic.p = cur_ptr(&c, o->topic.len);
		if (q)
			o->pid = cur_be16(&c);
		if (!cur_ok(&c) || mqtt_props_decode(&c, MQTT_PROPS_PUBLISH, &o->props, &pr))
			return -1;
		o->payload = c.buf + c.pos;
		o->payload_len = cur_left(&c);
		return 0;
	}
	case MQTT_PUBACK:
	case MQTT_PUBREC:
	case MQTT_PUBREL:
	case MQTT_PUBCOMP:
		o->pid = cur_be16(&c);
		FALLTHROUGH;
	case MQTT_DISCONNECT:
	case MQTT5_AUTH:
		if (cur_left(&c))
			o->reason = cur_u8(&c);
		if (cur_left(&c) &&
		    mqtt_props_decode(&c, o->type == MQTT_DISCONNECT ? MQTT_PROPS_DISCONNECT
						: o->type == MQTT5_AUTH ? MQTT_PROPS_AUTH
									 : MQTT_PROPS_PUBACK,
				      &o->props, &pr))
			return -1;
		break;
	case MQTT_SUBACK:
	case MQTT_UNSUBACK:
		o->pid = cur_be16(&c);
		if (!cur_ok(&c) ||
		    mqtt_props_decode(&c, o->type == MQTT_SUBACK ? MQTT_PROPS_SUBACK : MQTT_PROPS_UNSUBACK,
				      &o->props, &pr))
			return -1;
		o->codes = c.buf + c.pos;
		o->n_codes = cur_left(&c);
		return 0;
	default:
		return -1;
	}
	return cur_done(&c) ? 0 : -1;
}

static void test_server_encoders(void **state)
{
	(void)state;
	uint8_t buf[1024];
	struct cpkt o;
	struct wcur w;
	/* exact bytes of the short forms */
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_connack(&w, false, 0, NULL), 0);
	assert_int_equal(w.pos, 5);
	assert_memory_equal(buf, "\x20\x03\x00\x00\x00", 5);
	assert_int_equal(mqtt5_connack_size(NULL), 5);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_ack(&w, MQTT_PUBACK, 7, 0, NULL), 0);
	assert_int_equal(w.pos, 4);
	assert_memory_equal(buf, "\x40\x02\x00\x07", 4);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_ack(&w, MQTT_PUBREL, 7, 0x92, NULL), 0);
	assert_int_equal(w.pos, 5);
	assert_memory_equal(buf, "\x62\x03\x00\x07\x92", 5);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_disconnect(&w, 0, NULL), 0);
	assert_memory_equal(buf, "\xe0\x00", 2);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_disconnect(&w, MQTT_RC_SESSION_TAKEN_OVER, NULL), 0);
	assert_int_equal(w.pos, 3);
	assert_memory_equal(buf, "\xe0\x01\x8e", 3);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_auth(&w, 0, NULL), 0);
	assert_memory_equal(buf, "\xf0\x00", 2);
	const uint8_t codes[] = { 0, 1, 2, 0x80, 0x9e };
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_suback(&w, 5, NULL, codes, 5), 0);
	assert_int_equal(w.pos, mqtt5_suback_size(NULL, 5));
	assert_memory_equal(buf, "\x90\x08\x00\x05\x00\x00\x01\x02\x80\x9e", 10);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_unsuback(&w, 6, NULL, codes, 1), 0);
	assert_memory_equal(buf, "\xb0\x04\x00\x06\x00\x00", 6);
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_pingresp(&w), 0);
	assert_memory_equal(buf, "\xd0\x00", 2);
	/* arguments that cannot be encoded */
	struct mqtt_props bad;
	memset(&bad, 0, sizeof bad);
	bad.present = MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS);
	bad.topic_alias = 1;
	w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt5_encode_connack(&w, false, 0, &bad), -E_INVAL);
	assert_int_equal(mqtt5_encode_ack(&w, MQTT_PUBACK, 1, 0, &bad), -E_INVAL);
	assert_int_equal(mqtt5_encode_disconnect(&w, 0, &bad), -E_INVAL);
	assert_int_equal(mqtt5_encode_ack(&w, MQTT_SUBACK, 1, 0, NULL), -E_INVAL);
	assert_int_equal(mqtt5_connack_size(&bad), 0);
	struct mqtt5_publish q3 = { .topic = S("a"), .qos = 3 };
	assert_int_equal(mqtt5_encode_publish(&w, &q3), -E_INVAL);
	assert_int_equal(mqtt5_publish_size(&q3), 0);
	assert_int_equal(w.pos, 0);
	assert_false(w.err);

	/* random server packets, decoded as a client would */
	g_rng = 0x5e7e7ull;
	static uint8_t payload[200];
	for (unsigned iter = 0; iter < 4000; iter++) {
		static struct pool pl;
		pl.n = 0;
		uint32_t sv[4];
		struct mqtt_props p;
		unsigned kind = rnd(6);
		w = wcur_make(buf, sizeof buf);
		size_t want = 0;
		switch (kind) {
		case 0: {
			bool sp = rnd(2);
			uint8_t rc = (uint8_t)(rnd(2) ? 0 : 0x80 + rnd(0x20));
			rand_props(&pl, MQTT_PROPS_CONNACK, false, &p, sv);
			assert_int_equal(mqtt5_encode_connack(&w, sp, rc, &p), 0);
			want = mqtt5_connack_size(&p);
			assert_int_equal(client_decode(buf, w.pos, &o), 0);
			assert_int_equal(o.type, MQTT_CONNACK);
			assert_int_equal(o.session_present, sp);
			assert_int_equal(o.reason, rc);
			break;
		}
		case 1: {
			struct mqtt5_publish pb;
			memset(&pb, 0, sizeof pb);
			rand_props(&pl, MQTT_PROPS_PUBLISH, true, &pb.props, sv);
			pb.topic = rand_topic(&pl, false, pb.props.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS));
			pb.qos = (uint8_t)rnd(3);
			pb.pid = pb.qos ? (uint16_t)(1 + rnd(65535)) : 0;
			pb.retain = rnd(2);
			pb.dup = pb.qos && rnd(2);
			pb.payload = payload;
			pb.payload_len = rnd(sizeof payload);
			assert_int_equal(mqtt5_encode_publish(&w, &pb), 0);
			want = mqtt5_publish_size(&pb);
			assert_int_equal(client_decode(buf, w.pos, &o), 0);
			assert_int_equal(o.type, MQTT_PUBLISH);
			assert_int_equal(o.flags, (pb.dup ? 8 : 0) | pb.qos << 1 | (pb.retain ? 1 : 0));
			assert_int_equal(o.pid, pb.pid);
			assert_int_equal(o.topic.len, pb.topic.len);
			assert_memory_equal(o.topic.p, pb.topic.p, pb.topic.len);
			assert_int_equal(o.payload_len, pb.payload_len);
			p = pb.props;
			break;
		}
		case 2: {
			uint8_t t = (uint8_t)(MQTT_PUBACK + rnd(4));
			uint8_t rc = t <= MQTT_PUBREC ? rc_puback[rnd(sizeof rc_puback)]
						      : rc_pubrel[rnd(sizeof rc_pubrel)];
			memset(&p, 0, sizeof p);
			if (rnd(2))
				rand_props(&pl, MQTT_PROPS_PUBACK, false, &p, sv);
			assert_int_equal(mqtt5_encode_ack(&w, (enum mqtt_type)t, 9, rc, &p), 0);
			want = mqtt5_ack_size(rc, &p);
			assert_int_equal(client_decode(buf, w.pos, &o), 0);
			assert_int_equal(o.type, t);
			assert_int_equal(o.flags, t == MQTT_PUBREL ? 2 : 0);
			assert_int_equal(o.pid, 9);
			assert_int_equal(o.reason, rc);
			break;
		}
		case 3:
		case 4: {
			uint8_t cs[20];
			size_t n = 1 + rnd(20);
			for (size_t i = 0; i < n; i++)
				cs[i] = (uint8_t)rnd(256);
			rand_props(&pl, kind == 3 ? MQTT_PROPS_SUBACK : MQTT_PROPS_UNSUBACK, false, &p, sv);
			assert_int_equal(kind == 3 ? mqtt5_encode_suback(&w, 11, &p, cs, n)
						   : mqtt5_encode_unsuback(&w, 11, &p, cs, n), 0);
			want = mqtt5_suback_size(&p, n);
			assert_int_equal(client_decode(buf, w.pos, &o), 0);
			assert_int_equal(o.type, kind == 3 ? MQTT_SUBACK : MQTT_UNSUBACK);
			assert_int_equal(o.pid, 11);
			assert_int_equal(o.n_codes, n);
			assert_memory_equal(o.codes, cs, n);
			break;
		}
		default: {
			uint8_t rc = (uint8_t)(rnd(2) ? 0 : 0x80 + rnd(0x23));
			memset(&p, 0, sizeof p);
			if (rnd(2))
				rand_props(&pl, MQTT_PROPS_DISCONNECT, false, &p, sv);
			assert_int_equal(mqtt5_encode_disconnect(&w, rc, &p), 0);
			want = mqtt5_disconnect_size(rc, &p);
			assert_int_equal(client_decode(buf, w.pos, &o), 0);
			assert_int_equal(o.type, MQTT_DISCONNECT);
			assert_int_equal(o.reason, rc);
			break;
		}
		}
		assert_int_equal(w.pos, want);
		if (!mqtt_props_equal(&o.props, &p))
			fail_msg("iteration %u kind %u: properties differ", iter, kind);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_publish),
		cmocka_unit_test(test_acks),
		cmocka_unit_test(test_subscribe),
		cmocka_unit_test(test_ping_disconnect_auth),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_random_round_trip),
		cmocka_unit_test(test_server_encoders),
	};
	return cmocka_run_group_tests(tests, NULL, free_last);
}
