/* SPDX-License-Identifier: MIT
 * Telemetry queries over MQTT (mqtt/tquery.c, mqtt/tq.c): the query text (every key, every
 * refusal), a row's JSON (escaping, base64 for binary payloads, the size bound), and the
 * broker's side against a fake storage: only readers may query (a device or another service
 * falls to the ACL), one query per connection, slots bounded, rows go to the reader only and
 * wait while its connection is full, the end message frees the slot, a reader that leaves
 * cancels its query.
 */
#include "tests/unit/mqtt/broker_harness.h"

#include "mqtt/tquery.h"

/* ---- the text ---- */

static int parse(const char *s, struct mqtt_tquery *q, const char **why)
{
	return mqtt_tquery_parse((const uint8_t *)s, strlen(s), 500, q, why);
}

static void t_parse(void **state)
{
	(void)state;
	struct mqtt_tquery q;
	const char *why;
	assert_int_equal(parse("id=abc-1_Z\nsince=5\r\nuntil=9\nidentity=dev-1\ntopic=devices/+/telemetry/#\nlimit=7\n",
			       &q, &why), 0);
	assert_string_equal(q.req, "abc-1_Z");
	assert_int_equal(q.since_ms, 5);
	assert_int_equal(q.until_ms, 9);
	assert_int_equal(q.identity_len, 5);
	assert_memory_equal(q.identity, "dev-1", 5);
	assert_int_equal(q.topic_len, 21);
	assert_int_equal(q.limit, 7);
	assert_int_equal(parse("id=x", &q, &why), 0); /* defaults: everything, the maximum */
	assert_int_equal(q.limit, 500);
	assert_int_equal(q.since_ms, 0);
	assert_int_equal(q.identity_len, 0);
	static const char *const bad[] = {
		"",                      /* no id */
		"limit=3",               /* no id */
		"id=",                   /* empty id */
		"id=a b",                /* a space */
		"id=123456789012345678901234567890123", /* 33 characters */
		"id=a\nid=b",            /* twice */
		"id=a\nfoo=1",           /* unknown key */
		"id=a\nlimit",           /* no '=' */
		"id=a\nlimit=0",         /* below 1 */
		"id=a\nlimit=501",       /* above the maximum */
		"id=a\nsince=x",         /* not a number */
		"id=a\nsince=-1",
		"id=a\nsince=9\nuntil=5", /* since after until */
		"id=a\ntopic=a/#/b",     /* not a filter */
		"id=a\ntopic=",
		"id=a\nidentity=",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why = NULL;
		if (parse(bad[i], &q, &why) != -E_INVAL || !why || !why[0])
			fail_msg("accepted: %s", bad[i]);
	}
	uint8_t big[MQTT_TQUERY_PAYLOAD_MAX + 1];
	memset(big, '\n', sizeof big);
	memcpy(big, "id=a", 4);
	assert_int_equal(mqtt_tquery_parse(big, sizeof big, 500, &q, &why), -E_INVAL);
}

static void t_row_json(void **state)
{
	(void)state;
	uint8_t out[512];
	const uint8_t bin[] = { 0x00, 0xff, 0x10 };
	struct mqtt_trow r = { .wall_ms = 1700000000123, .qos = 1, .id_kind = 0, .id = (const uint8_t *)"d\"1",
			       .id_len = 3, .topic = (const uint8_t *)"devices/d/telemetry", .topic_len = 19,
			       .payload = (const uint8_t *)"t=\\1\n", .payload_len = 5 };
	size_t n = mqtt_tquery_row_json(&r, out, sizeof out);
	assert_true(n > 0 && n <= mqtt_tquery_row_json_max(&r));
	out[n] = 0;
	assert_string_equal((char *)out, "{\"time_ms\":1700000000123,\"identity\":\"d\\\"1\",\"kind\":\"device\","
					 "\"topic\":\"devices/d/telemetry\",\"qos\":1,\"payload\":\"t=\\\\1\\u000a\"}");
	r.payload = bin;
	r.payload_len = 3;
	r.id_kind = 1;
	n = mqtt_tquery_row_json(&r, out, sizeof out);
	out[n] = 0;
	assert_non_null(strstr((char *)out, "\"kind\":\"service\""));
	assert_non_null(strstr((char *)out, "\"payload_b64\":\"AP8Q\"")); /* not UTF-8: base64 */
	assert_int_equal(mqtt_tquery_row_json(&r, out, 20), 0);             /* too small: nothing */
}

/* ---- the broker's side against a fake storage ---- */

static int g_queries, g_more, g_cancel, g_query_rc;
static uint32_t g_slot;
static struct mqtt_tquery g_q;

static int s_record(void *ctx, const struct mqtt_pev *e)
{
	(void)ctx, (void)e;
	return 0;
}
static int s_barrier(void *ctx, uint32_t ticket)
{
	(void)ctx;
	mqtt_broker_durable(B, ticket, true); /* committed at once */
	return 0;
}
static bool s_room(void *ctx, size_t bytes)
{
	(void)ctx, (void)bytes;
	return true;
}
static int s_query(void *ctx, uint32_t slot, const struct mqtt_tquery *q)
{
	(void)ctx;
	g_queries++;
	g_slot = slot;
	g_q = *q;
	return g_query_rc;
}
static void s_more(void *ctx, uint32_t slot)
{
	(void)ctx, (void)slot;
	g_more++;
}
static void s_cancel(void *ctx, uint32_t slot)
{
	(void)ctx, (void)slot;
	g_cancel++;
}

static const char *const readers[] = { "svc" };

static int setup_q(void **state)
{
	(void)state;
	g_queries = g_more = g_cancel = g_query_rc = 0;
	g_store = (struct mqtt_store_ops){ .record = s_record, .barrier = s_barrier, .room = s_room, .query = s_query,
					   .query_more = s_more, .query_cancel = s_cancel };
	struct mqtt_broker_config g = base_cfg();
	g.max_held = 16;
	g.telemetry_readers = readers;
	g.n_telemetry_readers = 1;
	g.max_queries = 1;
	g.query_limit = 100;
	start(&g);
	assert_int_equal(mqtt_broker_restore_begin(B, UINT64_C(1) << 40), 0);
	mqtt_broker_restore_end(B);
	return 0;
}

static int teardown_q(void **state)
{
	int rc = teardown(state);
	g_store = (struct mqtt_store_ops){ 0 };
	return rc;
}

static const char *reply_json(struct client *c, char *buf, size_t cap)
{
	uint8_t t, f;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(c, &t, &f, &b, &n));
	assert_int_equal(t, MQTT_PUBLISH);
	assert_int_equal((f >> 1) & 3, 0); /* QoS 0 */
	size_t tl = (size_t)(b[0] << 8 | b[1]);
	assert_true(tl >= strlen(MQTT_TQUERY_REPLY));
	assert_memory_equal(b + 2, MQTT_TQUERY_REPLY, strlen(MQTT_TQUERY_REPLY));
	size_t pl = n - 2 - tl;
	assert_true(pl < cap);
	memcpy(buf, b + 2 + tl, pl);
	buf[pl] = 0;
	return buf;
}

static void t_broker_query_flow(void **state)
{
	(void)state;
	char j[512];
	struct client *r = cl_new("svc", MQTT_ID_SERVICE), *other = cl_new("svc/x", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(r, "svc", true), 0);
	assert_int_equal(cl_connect(other, "svc/x", true), 0);
	assert_int_equal(cl_pub(r, MQTT_TQUERY_TOPIC, "id=q1\nidentity=d1\nlimit=10", 1, false, 5, false), 0);
	assert_int_equal(expect_ack(r, MQTT_PUBACK), 5); /* the query itself is acknowledged */
	assert_int_equal(g_queries, 1);
	assert_int_equal(g_q.limit, 10);
	/* one at a time per slot: the second reader gets an error on its own reply topic */
	assert_int_equal(cl_pub(other, MQTT_TQUERY_TOPIC, "id=q2", 0, false, 0, false), 0);
	assert_non_null(strstr(reply_json(other, j, sizeof j), "too many queries"));
	/* rows: to the reader only, in order; a full connection takes them later */
	const struct mqtt_trow rows[3] = {
		{ .wall_ms = 1, .id = (const uint8_t *)"d1", .id_len = 2, .topic = (const uint8_t *)"a", .topic_len = 1,
		  .payload = (const uint8_t *)"x", .payload_len = 1 },
		{ .wall_ms = 2, .id = (const uint8_t *)"d1", .id_len = 2, .topic = (const uint8_t *)"a", .topic_len = 1,
		  .payload = (const uint8_t *)"y", .payload_len = 1 },
		{ .wall_ms = 3, .id = (const uint8_t *)"d1", .id_len = 2, .topic = (const uint8_t *)"a", .topic_len = 1,
		  .payload = (const uint8_t *)"z", .payload_len = 1 },
	};
	r->refuse_send = 1;
	assert_int_equal(mqtt_broker_query_rows(B, g_slot, rows, 3), 0);
	assert_int_equal(g_more, 0);
	r->refuse_send = 0;
	assert_int_equal(mqtt_broker_query_rows(B, g_slot, rows, 3), 3);
	assert_int_equal(g_more, 1); /* all taken: storage may send the next */
	assert_non_null(strstr(reply_json(r, j, sizeof j), "\"payload\":\"x\""));
	assert_non_null(strstr(reply_json(r, j, sizeof j), "\"payload\":\"y\""));
	assert_non_null(strstr(reply_json(r, j, sizeof j), "\"payload\":\"z\""));
	expect_none(other);
	assert_true(mqtt_broker_query_end(B, g_slot, 3, false, NULL));
	assert_non_null(strstr(reply_json(r, j, sizeof j), "\"end\":true,\"records\":3,\"matched\":3"));
	/* the slot is free again; a reader that leaves cancels its query */
	assert_int_equal(cl_pub(other, MQTT_TQUERY_TOPIC, "id=q3", 0, false, 0, false), 0);
	assert_int_equal(g_queries, 2);
	cl_free(other);
	assert_int_equal(g_cancel, 1);
	assert_int_equal(mqtt_broker_query_rows(B, g_slot, rows, 3), 3); /* dropped: nobody to send to */
	assert_true(mqtt_broker_query_end(B, g_slot, 3, false, NULL));
	assert_int_equal(mqtt_broker_stats(B)->queries, 2);
	cl_free(r);
}

static void t_broker_query_refusals(void **state)
{
	(void)state;
	char j[512];
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	/* a device is not a reader: the ACL decides (denied, nothing asked of storage) */
	assert_int_equal(cl_pub(d, MQTT_TQUERY_TOPIC, "id=q", 0, false, 0, false), 0);
	assert_int_equal(g_queries, 0);
	expect_none(d);
	assert_int_equal(mqtt_broker_stats(B)->acl_denied_pub, 1);
	cl_free(d);
	struct client *r = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(r, "svc", true), 0);
	assert_int_equal(cl_pub(r, MQTT_TQUERY_TOPIC, "id=q\nlimit=101", 0, false, 0, false), 0); /* over the max */
	assert_non_null(strstr(reply_json(r, j, sizeof j), "\"error\":\"limit"));
	g_query_rc = -E_NOMEM; /* storage's link full */
	assert_int_equal(cl_pub(r, MQTT_TQUERY_TOPIC, "id=q", 0, false, 0, false), 0);
	assert_non_null(strstr(reply_json(r, j, sizeof j), "try again"));
	assert_int_equal(mqtt_broker_stats(B)->query_refused, 2);
	cl_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_parse),
		cmocka_unit_test(t_row_json),
		cmocka_unit_test_setup_teardown(t_broker_query_flow, setup_q, teardown_q),
		cmocka_unit_test_setup_teardown(t_broker_query_refusals, setup_q, teardown_q),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
