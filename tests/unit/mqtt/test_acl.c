/* SPDX-License-Identifier: MIT
 * Unit tests for mqtt/acl.c on its own (no broker): a device's subtree compared level by
 * level (dev-1 is not dev-10), topics versus filters at devices/<id> itself, wildcards and
 * $-topics in service patterns, a filter allowed only when its pattern covers all it can
 * match, the choice of a service's rule, and empty topics and filters. Table-driven: each
 * row is one question and its expected answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "mqtt/acl.h"

enum op { PUB, SUB, READ };

struct row {
	enum op op;
	const char *text; /* topic (PUB, READ) or filter (SUB) */
	bool allowed;
};

static bool ask(const struct mqtt_acl_subject *who, enum op op, const char *text)
{
	const uint8_t *p = (const uint8_t *)text;
	size_t n = strlen(text);
	switch (op) {
	case PUB:
		return mqtt_acl_pub_ok(who, p, n);
	case SUB:
		return mqtt_acl_sub_ok(who, p, n);
	default:
		return mqtt_acl_read_ok(who, p, n);
	}
}

static void run(const struct mqtt_acl_subject *who, const struct row *rows, size_t n)
{
	static const char *const op_name[] = { "PUB", "SUB", "READ" };
	for (size_t i = 0; i < n; i++)
		if (ask(who, rows[i].op, rows[i].text) != rows[i].allowed)
			fail_msg("%s \"%s\": expected %s", op_name[rows[i].op], rows[i].text,
				 rows[i].allowed ? "allowed" : "refused");
}

static struct mqtt_acl_subject device(const char *id)
{
	return (struct mqtt_acl_subject){ .kind = MQTT_ID_DEVICE, .id = (const uint8_t *)id,
					  .id_len = strlen(id) };
}

static struct mqtt_acl_subject service(const struct mqtt_acl_service *rule)
{
	return (struct mqtt_acl_subject){ .kind = MQTT_ID_SERVICE, .rule = rule };
}

static void test_device_subtree(void **state)
{
	(void)state;
	struct mqtt_acl_subject who = device("dev-1");
	static const struct row rows[] = {
		{ PUB, "devices/dev-1/telemetry", true },
		{ PUB, "devices/dev-1/a/b/c", true },
		{ PUB, "devices/dev-1", true },   /* its own level: devices/dev-1/# matches it */
		{ PUB, "devices/dev-1/", true },  /* an empty level below it */
		{ PUB, "devices/dev-10/t", false }, /* a longer identity with dev-1 as prefix */
		{ PUB, "devices/dev-10", false },
		{ PUB, "devices/dev-", false },     /* a shorter one */
		{ PUB, "devices/dev-2/t", false },
		{ PUB, "devices/", false },
		{ PUB, "devices", false },
		{ PUB, "Devices/dev-1/t", false },  /* case matters */
		{ PUB, "x/devices/dev-1/t", false },
		{ PUB, "/devices/dev-1/t", false },
		{ PUB, "dev-1/t", false },
		{ PUB, "", false },
		{ PUB, "$SYS/devices/dev-1", false },
		{ READ, "devices/dev-1/cmd", true },
		{ READ, "devices/dev-1", true },
		{ READ, "devices/dev-10/cmd", false },
		{ READ, "devices/dev-2/cmd", false },
		{ READ, "", false },
	};
	run(&who, rows, ARRAY_LEN(rows));
}

static void test_device_filters(void **state)
{
	(void)state;
	struct mqtt_acl_subject who = device("dev-1");
	static const struct row rows[] = {
		{ SUB, "devices/dev-1/cmd", true },
		{ SUB, "devices/dev-1/#", true },
		{ SUB, "devices/dev-1/+", true },
		{ SUB, "devices/dev-1/+/x/#", true },
		{ SUB, "devices/dev-1", false },    /* the level itself is not below it */
		{ SUB, "devices/dev-10/#", false },
		{ SUB, "devices/dev-1#", false },
		{ SUB, "devices/+/cmd", false },    /* a wildcard reaching other devices */
		{ SUB, "devices/#", false },
		{ SUB, "+/dev-1/cmd", false },
		{ SUB, "#", false },
		{ SUB, "+", false },
		{ SUB, "", false },
		{ SUB, "$SYS/#", false },
	};
	run(&who, rows, ARRAY_LEN(rows));
	/* the two scope questions the broker asks directly */
	const uint8_t *id = (const uint8_t *)"dev-1";
	assert_true(mqtt_acl_device_topic(id, 5, (const uint8_t *)"devices/dev-1", 13));
	assert_false(mqtt_acl_device_filter(id, 5, (const uint8_t *)"devices/dev-1", 13));
	assert_true(mqtt_acl_device_filter(id, 5, (const uint8_t *)"devices/dev-1/#", 15));
	assert_false(mqtt_acl_device_topic(id, 5, (const uint8_t *)"devices/dev-1x", 14));
	/* bounded by the length given, not by a NUL: "devices/dev-1" cut to "devices/dev-" */
	assert_false(mqtt_acl_device_topic(id, 5, (const uint8_t *)"devices/dev-1", 12));
}

static const char *const telemetry_pub[] = { "ingest/+/raw", "alerts/#" };
static const char *const telemetry_sub[] = { "devices/+/telemetry", "devices/+/state/#",
					     "ops/+" };
static const struct mqtt_acl_service telemetry_rule = {
	.identity = "telemetry", .pub = telemetry_pub, .sub = telemetry_sub,
	.n_pub = ARRAY_LEN(telemetry_pub), .n_sub = ARRAY_LEN(telemetry_sub),
};

static void test_service_publish(void **state)
{
	(void)state;
	struct mqtt_acl_subject who = service(&telemetry_rule);
	static const struct row rows[] = {
		{ PUB, "ingest/a/raw", true },
		{ PUB, "ingest//raw", true },       /* '+' matches an empty level */
		{ PUB, "ingest/a/b/raw", false },   /* '+' is one level */
		{ PUB, "ingest/a/raw/x", false },
		{ PUB, "ingest/a", false },
		{ PUB, "alerts", true },            /* "alerts/#" matches its parent level */
		{ PUB, "alerts/fire/now", true },
		{ PUB, "alert", false },
		{ PUB, "devices/dev-1/telemetry", false }, /* a sub pattern, not a pub one */
		{ PUB, "", false },
	};
	run(&who, rows, ARRAY_LEN(rows));
}

static void test_service_subscribe(void **state)
{
	(void)state;
	struct mqtt_acl_subject who = service(&telemetry_rule);
	static const struct row rows[] = {
		{ SUB, "devices/+/telemetry", true },  /* the pattern itself */
		{ SUB, "devices/dev-1/telemetry", true },
		{ SUB, "devices/+/state/#", true },
		{ SUB, "devices/dev-1/state/#", true },
		{ SUB, "devices/dev-1/state/a/+", true },
		{ SUB, "devices/#", false },           /* wider than any pattern */
		{ SUB, "devices/dev-1/#", false },     /* reaches beyond telemetry */
		{ SUB, "devices/+/+", false },
		{ SUB, "+/dev-1/telemetry", false },
		{ SUB, "devices/dev-1/telemetry/x", false },
		{ SUB, "ops/x", true },
		{ SUB, "ops/+", true },
		{ SUB, "ops/#", false },               /* '#' reaches deeper than '+' */
		{ SUB, "ops", false },
		{ SUB, "#", false },
		{ SUB, "", false },
		{ READ, "devices/dev-1/telemetry", true },
		{ READ, "devices/dev-1/state", true },  /* "state/#" matches its parent */
		{ READ, "devices/dev-1/state/a/b", true },
		{ READ, "devices/dev-1/cmd", false },
		{ READ, "ingest/a/raw", false },        /* a pub pattern, not a sub one */
		{ READ, "", false },
	};
	run(&who, rows, ARRAY_LEN(rows));
}

static void test_dollar_topics(void **state)
{
	(void)state;
	static const char *const pub[] = { "+/status", "#" };
	static const char *const sub[] = { "+/status", "+/+" };
	static const struct mqtt_acl_service wild = { .identity = NULL, .pub = pub, .sub = sub,
						      .n_pub = 2, .n_sub = 2 };
	struct mqtt_acl_subject who = service(&wild);
	/* a pattern starting with a wildcard never reaches a $-topic [MQTT-4.7.2-1] */
	static const struct row wild_rows[] = {
		{ PUB, "$SYS/status", false },
		{ PUB, "$SYS", false },
		{ PUB, "a/status", true },
		{ PUB, "a/b/c", true },
		{ SUB, "$SYS/status", false },
		{ SUB, "$SYS/+", false },
		{ SUB, "a/status", true },
		{ SUB, "a/+", true },
		{ SUB, "+/+", true },
		{ READ, "$SYS/status", false },
		{ READ, "a/status", true },
		{ READ, "a/b", true },
	};
	run(&who, wild_rows, ARRAY_LEN(wild_rows));
	/* a pattern naming the $-level does */
	static const char *const sys_sub[] = { "$SYS/+" };
	static const struct mqtt_acl_service sys = { .identity = "mon", .sub = sys_sub, .n_sub = 1 };
	who = service(&sys);
	static const struct row sys_rows[] = {
		{ SUB, "$SYS/uptime", true },
		{ SUB, "$SYS/+", true },
		{ SUB, "$SYS/#", false },
		{ SUB, "$SYS", false },
		{ SUB, "$sys/uptime", false },
		{ READ, "$SYS/uptime", true },
		{ READ, "$SYS", false },
		{ READ, "$SYS/a/b", false },
		{ PUB, "$SYS/uptime", false }, /* no pub pattern */
	};
	run(&who, sys_rows, ARRAY_LEN(sys_rows));
}

static void test_service_without_rule(void **state)
{
	(void)state;
	struct mqtt_acl_subject who = service(NULL);
	static const struct row rows[] = {
		{ PUB, "a", false }, { SUB, "a", false }, { READ, "a", false },
		{ PUB, "#", false }, { SUB, "#", false },
	};
	run(&who, rows, ARRAY_LEN(rows));
	/* a rule with no patterns refuses everything too */
	static const struct mqtt_acl_service empty = { .identity = "x" };
	who = service(&empty);
	run(&who, rows, ARRAY_LEN(rows));
	/* and a device's identity is never taken for a service's */
	who = device("ops");
	who.rule = &telemetry_rule;
	assert_false(mqtt_acl_pub_ok(&who, (const uint8_t *)"ingest/a/raw", 12));
}

static uint16_t find(const struct mqtt_acl_service *s, uint16_t n, const char *id)
{
	return mqtt_acl_rule_find(s, n, (const uint8_t *)id, strlen(id));
}

static void test_rule_choice(void **state)
{
	(void)state;
	static const struct mqtt_acl_service rules[] = {
		{ .identity = "ops" }, { .identity = NULL }, { .identity = "ops2" },
		{ .identity = NULL }, { .identity = "" },
	};
	assert_int_equal(find(rules, 5, "ops"), 0);
	assert_int_equal(find(rules, 5, "ops2"), 2);   /* exact wins over an earlier default */
	assert_int_equal(find(rules, 5, "op"), 1);     /* no prefix match: the first default */
	assert_int_equal(find(rules, 5, "ops/1"), 1);  /* the certificate identity is asked */
	assert_int_equal(find(rules, 5, "OPS"), 1);
	assert_int_equal(find(rules, 5, ""), 4);
	assert_int_equal(find(rules, 1, "other"), MQTT_ACL_NO_RULE);
	assert_int_equal(find(rules + 2, 1, "ops"), MQTT_ACL_NO_RULE);
	assert_int_equal(find(NULL, 0, "ops"), MQTT_ACL_NO_RULE);
	/* the length given bounds the comparison */
	assert_int_equal(mqtt_acl_rule_find(rules, 5, (const uint8_t *)"ops2", 3), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_device_subtree),
		cmocka_unit_test(test_device_filters),
		cmocka_unit_test(test_service_publish),
		cmocka_unit_test(test_service_subscribe),
		cmocka_unit_test(test_dollar_topics),
		cmocka_unit_test(test_service_without_rule),
		cmocka_unit_test(test_rule_choice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
