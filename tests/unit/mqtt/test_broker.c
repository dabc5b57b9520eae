/* SPDX-License-Identifier: MIT
 * In-process tests for mqtt/broker: clients are fake transports that capture what the
 * broker sends. Covers CONNECT rules, retained, will, takeover, QoS 1 and 2 redelivery,
 * overlapping subscriptions, ACL, rate limits, keepalive, offline queues and their bounds,
 * and the memory targets. Every teardown checks the invariants and that the counting
 * heap got everything back. */
#include "tests/unit/mqtt/broker_harness.h"
#include "mqtt/rate.h"

/* The budgets of docs/ARCHITECTURE.md (Memory), checked at compile time (measured: 48 and 48). */
_Static_assert(sizeof(struct mqtt_conn) <= 48, "MQTT connection budget is 48 bytes");
_Static_assert(sizeof(struct mqtt_session) <= 64, "session hot form budget is 64 bytes");

/* ---- tests ---- */

static void test_connect_rules(void **state)
{
	(void)state;
	struct client *a = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(a, "d2", true), MQTT_CONNACK_NOT_AUTHORIZED);
	assert_true(a->closed);
	cl_free(a);
	a = cl_new("d1", MQTT_ID_DEVICE);
	int present = -1;
	assert_int_equal(cl_connect_full(a, "", true, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 0);
	assert_int_equal(cl_simple(a, MQTT_PINGREQ), 0);
	uint8_t t, f;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(a, &t, &f, &b, &n));
	assert_int_equal(t, MQTT_PINGRESP);
	/* a second CONNECT closes [MQTT-3.1.0-2] */
	uint8_t buf[64];
	struct wcur w = wcur_make(buf, sizeof buf);
	struct mqtt_connect_args ca = { .client_id = "d1", .clean = true };
	assert_int_equal(mqtt_encode_connect(&w, &ca), 0);
	assert_int_equal(cl_in(a, buf, w.pos), -E_CLOSED);
	cl_free(a);
	/* empty id with clean 0: 0x02 */
	a = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(a, "", false), MQTT_CONNACK_ID_REJECTED);
	cl_free(a);
	/* protocol level 3: 0x01 */
	a = cl_new("d1", MQTT_ID_DEVICE);
	const uint8_t v3[] = { 0x10, 12, 0, 4, 'M', 'Q', 'T', 'T', 3, 2, 0, 0, 0, 0 };
	assert_int_equal(cl_in(a, v3, sizeof v3), -E_CLOSED);
	assert_int_equal(expect_ack(a, MQTT_CONNACK), 0x0001);
	cl_free(a);
	/* anything before CONNECT closes [MQTT-3.1.0-1] */
	a = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_simple(a, MQTT_PINGREQ), -E_CLOSED);
	expect_none(a);
	cl_free(a);
	/* malformed packet closes */
	a = cl_new("d1", MQTT_ID_DEVICE);
	const uint8_t bad[] = { 0x10, 0x80, 0x80, 0x80, 0x80, 0x01 };
	assert_int_equal(cl_in(a, bad, sizeof bad), -E_CLOSED);
	cl_free(a);
	/* a device identity may not contain a level separator */
	struct mqtt_conn *c;
	assert_int_equal(mqtt_conn_open(B, (const uint8_t *)"a/b", 3, MQTT_ID_DEVICE, NULL, now, &c),
			 -E_INVAL);
	/* services may use their identity or identity/suffix */
	a = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(a, "svc/worker1", true), 0);
	cl_free(a);
	a = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(a, "svcx", true), MQTT_CONNACK_NOT_AUTHORIZED);
	cl_free(a);
	/* MQTT 3.1 ("MQIsdp", level 3): 0x01 too, so its clients stop retrying */
	a = cl_new("d1", MQTT_ID_DEVICE);
	const uint8_t v31[] = { 0x10, 14, 0, 6, 'M', 'Q', 'I', 's', 'd', 'p', 3, 2, 0, 0, 0, 0 };
	assert_int_equal(cl_in(a, v31, sizeof v31), -E_CLOSED);
	assert_int_equal(expect_ack(a, MQTT_CONNACK), 0x0001);
	cl_free(a);
	/* another protocol name: closed without a CONNACK [MQTT-3.1.2-1] */
	a = cl_new("d1", MQTT_ID_DEVICE);
	const uint8_t other[] = { 0x10, 12, 0, 4, 'M', 'Q', 'T', 'X', 4, 2, 0, 0, 0, 0 };
	assert_int_equal(cl_in(a, other, sizeof other), -E_CLOSED);
	expect_none(a);
	cl_free(a);
}

static unsigned g_lines;
static char g_last[256], g_last_reason[32], g_last_identity[64];
static void t_log(void *ctx, const char *line, const struct log_fields *f);

/* client_id_policy "override": a device's own client id (random, with spaces) is replaced by
 * its certificate identity, logged with both; its session, ACL and will are the
 * identity's. Services still need their identity (or identity/suffix). Under "require"
 * the refusal line names the client id sent as well as the identity. */
static void test_client_id_policy(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.log = t_log;
	teardown(NULL);
	start(&g);
	struct client *a = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(a, "paho 7f3a", true), MQTT_CONNACK_NOT_AUTHORIZED);
	assert_non_null(strstr(g_last, "client id 'paho 7f3a' is not the certificate identity id=d1"));
	cl_free(a);
	teardown(NULL);
	g.client_id_override = true;
	start(&g);
	a = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(a, "paho 7f3a", false), 0);
	assert_non_null(strstr(g_last, "client id 'paho 7f3a' replaced by the certificate identity id=d1"));
	assert_int_equal(mqtt_broker_stats(B)->client_id_overridden, 1);
	/* the ACL is the identity's: its own topics, not another device's */
	assert_int_equal(cl_sub(a, "devices/d1/cmd/#", 1), 1);
	assert_int_equal(cl_sub(a, "devices/d2/#", 0), MQTT_SUBACK_FAILURE);
	cl_free(a);
	/* the session is the identity's: another random id finds it (session present) */
	a = cl_new("d1", MQTT_ID_DEVICE);
	int present = -1;
	assert_int_equal(cl_connect_full(a, "other-id", false, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 1);
	cl_free(a);
	/* a service still may not pick another name */
	a = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(a, "svcx", true), MQTT_CONNACK_NOT_AUTHORIZED);
	cl_free(a);
	teardown(NULL);
	g.client_id_override = false;
	start(&g);
}

static void test_pubsub_qos_and_overlap(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	/* overlapping subscriptions: delivered once at the maximum QoS */
	assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 0), 0);
	assert_int_equal(cl_sub(d, "devices/d1/+/reboot", 1), 1);
	assert_int_equal(cl_sub(d, "devices/d1/cmd/reboot", 2), 2);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/reboot", "now", 1, false, 10, false), 0);
	assert_int_equal(expect_ack(s, MQTT_PUBACK), 10);
	uint16_t pid = expect_pub(d, "devices/d1/cmd/reboot", "now", 1, 0, 0);
	expect_none(d);
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pid), 0);
	/* QoS 0 publish to a QoS 2 subscription arrives at QoS 0 */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/reboot", "q0", 0, false, 0, false), 0);
	expect_pub(d, "devices/d1/cmd/reboot", "q0", 0, 0, 0);
	/* other devices' topics do not reach d1 */
	assert_int_equal(cl_pub(s, "devices/d2/cmd/reboot", "x", 0, false, 0, false), 0);
	expect_none(d);
	/* service subscription with + : telemetry from the device */
	assert_int_equal(cl_sub(s, "devices/+/telemetry/#", 1), 1);
	assert_int_equal(cl_pub(d, "devices/d1/telemetry/temp", "21", 1, false, 5, false), 0);
	assert_int_equal(expect_ack(d, MQTT_PUBACK), 5);
	pid = expect_pub(s, "devices/d1/telemetry/temp", "21", 1, 0, 0);
	assert_int_equal(cl_ack(s, MQTT_PUBACK, pid), 0);
	/* unsubscribe: nothing more */
	uint8_t buf[64];
	struct wcur w = wcur_make(buf, sizeof buf);
	const char *f[] = { "devices/+/telemetry/#" };
	assert_int_equal(mqtt_encode_subscribe(&w, 3, f, NULL, 1), 0);
	assert_int_equal(cl_in(s, buf, w.pos), 0);
	assert_int_equal(expect_ack(s, MQTT_UNSUBACK), 3);
	assert_int_equal(cl_pub(d, "devices/d1/telemetry/temp", "22", 0, false, 0, false), 0);
	expect_none(s);
	cl_free(s);
	cl_free(d);
}

static void test_dollar_topics(void **state)
{
	(void)state;
	struct client *a = cl_new("admin", MQTT_ID_SERVICE);
	struct client *p = cl_new("admin", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(a, "admin/a", true), 0);
	assert_int_equal(cl_connect(p, "admin/p", true), 0);
	assert_int_equal(cl_sub(a, "#", 0), 0);
	assert_int_equal(cl_sub(a, "+/info", 0), 0);
	assert_int_equal(cl_pub(p, "$ops/info", "x", 0, false, 0, false), 0);
	expect_none(a); /* [MQTT-4.7.2-1] */
	assert_int_equal(cl_sub(a, "$ops/#", 0), 0);
	assert_int_equal(cl_pub(p, "$ops/info", "y", 0, false, 0, false), 0);
	expect_pub(a, "$ops/info", "y", 0, 0, 0);
	expect_none(a);
	/* "a/#" matches "a"; "a/+" matches "a/" */
	assert_int_equal(cl_sub(a, "x/#", 0), 0);
	assert_int_equal(cl_pub(p, "x", "z", 0, false, 0, false), 0);
	expect_pub(a, "x", "z", 0, 0, 0); /* once, though # also matches */
	expect_none(a);
	cl_free(a);
	cl_free(p);
}

/* $SYS belongs to the broker: only the services in cfg.sys_readers may subscribe there
 * (whatever their rule says: "admin" may read "$SYS/#" by its rule, "admin2" is not a
 * reader), devices never; nobody publishes there, the broker's own messages arrive, and a
 * late reader gets them retained. */
static void test_sys_topics(void **state)
{
	(void)state;
	mqtt_broker_fini(B);
	free(g_mem);
	static const char *const readers[] = { "admin" };
	struct mqtt_broker_config g = base_cfg();
	g.sys_readers = readers;
	g.n_sys_readers = 1;
	start(&g);
	struct client *a = cl_new("admin", MQTT_ID_SERVICE);
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(a, "admin/a", true), 0);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	assert_int_equal(cl_sub(a, "$SYS/#", 0), 0);
	assert_int_equal(cl_sub(s, "$SYS/#", 0), MQTT_SUBACK_FAILURE);
	assert_int_equal(cl_sub(s, "$SYS/urmqtt/health", 0), MQTT_SUBACK_FAILURE);
	assert_int_equal(cl_sub(d, "$SYS/#", 0), MQTT_SUBACK_FAILURE);
	assert_int_equal(cl_pub(a, "$SYS/urmqtt/health", "forged", 0, false, 0, false), 0);
	expect_none(a); /* denied: only the broker publishes there */
	assert_int_equal(mqtt_broker_publish_sys(B, (const uint8_t *)"$SYS/urmqtt/health", 18,
						 (const uint8_t *)"serving", 7), 0);
	expect_pub(a, "$SYS/urmqtt/health", "serving", 0, 0, 0);
	expect_none(a);
	expect_none(s);
	expect_none(d);
	assert_true(mqtt_acl_may_read(B, MQTT_ID_SERVICE, (const uint8_t *)"admin/x", 7,
				      (const uint8_t *)"$SYS/urmqtt/health", 18));
	assert_false(mqtt_acl_may_read(B, MQTT_ID_SERVICE, (const uint8_t *)"admin2", 6,
				       (const uint8_t *)"$SYS/urmqtt/health", 18));
	assert_false(mqtt_acl_may_read(B, MQTT_ID_DEVICE, (const uint8_t *)"d1", 2,
				       (const uint8_t *)"$SYS/urmqtt/health", 18));
	/* only $SYS/ topic names */
	assert_int_equal(mqtt_broker_publish_sys(B, (const uint8_t *)"devices/d1/cmd", 14, (const uint8_t *)"x", 1),
			 -E_INVAL);
	assert_int_equal(mqtt_broker_publish_sys(B, (const uint8_t *)"$SYS/+", 6, (const uint8_t *)"x", 1), -E_INVAL);
	assert_int_equal(mqtt_broker_publish_sys(B, (const uint8_t *)"$SYSTEM/x", 9, (const uint8_t *)"x", 1), -E_INVAL);
	/* a late reader: retained */
	struct client *b = cl_new("admin", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(b, "admin/b", true), 0);
	assert_int_equal(cl_sub(b, "$SYS/urmqtt/+", 0), 0);
	expect_pub(b, "$SYS/urmqtt/health", "serving", 0, 1, 0);
	expect_none(b);
	cl_free(a);
	cl_free(b);
	cl_free(s);
	cl_free(d);
	/* an empty message clears the retained one, as any retained PUBLISH does */
	assert_int_equal(mqtt_broker_publish_sys(B, (const uint8_t *)"$SYS/urmqtt/health", 18, NULL, 0), 0);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.retained, 0);
}

/* The console: a console identity's PUBLISH to $CONTROL/urmqtt/<command> reaches the
 * control hook with its identity, command and payload, is never routed, and is answered on
 * $CONTROL/urmqtt/reply/<command> to that connection; anyone else's is denied. A kick ends
 * every connection of an identity (a service's suffixed ones too) without its will. */
static struct {
	unsigned n;
	char id[32], cmd[32], args[64];
} g_ctl;

static size_t t_control(void *ctx, const uint8_t *id, size_t idl, const uint8_t *cmd, size_t cl, const uint8_t *args,
			size_t al, char *reply, size_t cap)
{
	(void)ctx;
	g_ctl.n++;
	snprintf(g_ctl.id, sizeof g_ctl.id, "%.*s", (int)idl, (const char *)id);
	snprintf(g_ctl.cmd, sizeof g_ctl.cmd, "%.*s", (int)cl, (const char *)cmd);
	snprintf(g_ctl.args, sizeof g_ctl.args, "%.*s", (int)al, (const char *)args);
	return (size_t)snprintf(reply, cap, "ok %s", g_ctl.cmd);
}

static void test_console_and_kick(void **state)
{
	(void)state;
	mqtt_broker_fini(B);
	free(g_mem);
	static const char *const consoles[] = { "admin" };
	struct mqtt_broker_config g = base_cfg();
	g.control = t_control;
	g.console_ids = consoles;
	g.n_console_ids = 1;
	start(&g);
	memset(&g_ctl, 0, sizeof g_ctl);
	struct client *a = cl_new("admin", MQTT_ID_SERVICE);
	struct client *w = cl_new("admin", MQTT_ID_SERVICE); /* sees everything the tree routes */
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(a, "admin/a", true), 0);
	assert_int_equal(cl_connect(w, "admin/w", true), 0);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_connect_full(d, "d1", true, 0, "devices/d1/status", 0, false, NULL), 0);
	assert_int_equal(cl_sub(w, "#", 0), 0);
	assert_int_equal(cl_sub(a, "$CONTROL/urmqtt/reply/#", 0), 0);
	assert_int_equal(cl_sub(s, "$CONTROL/urmqtt/reply/#", 0), MQTT_SUBACK_FAILURE);
	assert_int_equal(cl_sub(d, "$CONTROL/#", 0), MQTT_SUBACK_FAILURE);
	assert_int_equal(cl_sub(a, "$CONTROL/urmqtt/revoke", 0), MQTT_SUBACK_FAILURE); /* replies only */
	assert_int_equal(cl_pub(a, "$CONTROL/urmqtt/revoke", "identity=d9", 1, false, 5, false), 0);
	assert_int_equal(g_ctl.n, 1);
	assert_string_equal(g_ctl.id, "admin/a");
	assert_string_equal(g_ctl.cmd, "revoke");
	assert_string_equal(g_ctl.args, "identity=d9");
	expect_pub(a, "$CONTROL/urmqtt/reply/revoke", "ok revoke", 0, 0, 0);
	assert_int_equal(expect_ack(a, MQTT_PUBACK), 5);
	expect_none(w); /* never routed */
	/* not a console: denied, not handed to the hook */
	assert_int_equal(cl_pub(s, "$CONTROL/urmqtt/kick", "identity=d1", 0, false, 0, false), 0);
	assert_int_equal(cl_pub(d, "$CONTROL/urmqtt/kick", "identity=d1", 0, false, 0, false), 0);
	assert_int_equal(g_ctl.n, 1);
	expect_none(s);
	expect_none(w);
	/* kick: every connection of the identity, a service's suffixed ones too, no will */
	struct client *a2 = cl_new("admin", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(a2, "admin/b", true), 0);
	assert_int_equal(mqtt_broker_kick(B, (const uint8_t *)"d1", 2), 1);
	assert_true(d->closed);
	expect_none(w); /* d1's will was not published */
	assert_int_equal(mqtt_broker_kick(B, (const uint8_t *)"d", 1), 0); /* a prefix is not a device */
	assert_int_equal(mqtt_broker_kick(B, (const uint8_t *)"admin", 5), 3);
	assert_true(a->closed && a2->closed && w->closed);
	assert_false(s->closed);
	assert_int_equal(mqtt_broker_stats(B)->kicked, 4);
	cl_free(a);
	cl_free(a2);
	cl_free(w);
	cl_free(s);
	cl_free(d);
}

static void test_retained(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/config", "v1", 1, true, 1, false), 0);
	expect_ack(s, MQTT_PUBACK);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/config", "v2", 1, true, 2, false), 0);
	expect_ack(s, MQTT_PUBACK);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.retained, 1); /* replaced */
	assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 1), 1);
	uint16_t pid = expect_pub(d, "devices/d1/cmd/config", "v2", 1, 1, 0);
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pid), 0);
	/* live delivery of a retained publish carries retain 0 */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/config", "v3", 0, true, 0, false), 0);
	expect_pub(d, "devices/d1/cmd/config", "v3", 0, 0, 0);
	/* empty payload clears */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/config", "", 0, true, 0, false), 0);
	expect_pub(d, "devices/d1/cmd/config", "", 0, 0, 0);
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.retained, 0);
	assert_int_equal(cl_sub(d, "devices/d1/cmd/+", 0), 0);
	expect_none(d);
	cl_free(s);
	cl_free(d);
}

static void test_will(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_sub(s, "devices/+/status", 0), 0);
	/* will outside the device's scope: refused */
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d, "d1", true, 0, "devices/d2/status", 0, false, NULL),
			 MQTT_CONNACK_NOT_AUTHORIZED);
	cl_free(d);
	/* lost connection: will published */
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d, "d1", true, 0, "devices/d1/status", 0, false, NULL), 0);
	mqtt_conn_lost(B, d->c, now);
	d->c = NULL;
	cl_free(d);
	expect_pub(s, "devices/d1/status", "bye", 0, 0, 0);
	/* will retain 0: published, not retained [MQTT-3.1.2-16] */
	struct client *s3 = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s3, "svc/3", true), 0);
	assert_int_equal(cl_sub(s3, "devices/+/status", 0), 0);
	expect_none(s3);
	cl_free(s3);
	/* no will flag: nothing is published when the connection is lost [MQTT-3.1.2-12] */
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	mqtt_conn_lost(B, d->c, now);
	d->c = NULL;
	cl_free(d);
	expect_none(s);
	/* DISCONNECT: will discarded */
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d, "d1", true, 0, "devices/d1/status", 0, false, NULL), 0);
	assert_int_equal(cl_simple(d, MQTT_DISCONNECT), -E_CLOSED);
	cl_free(d);
	expect_none(s);
	/* keepalive: 1.5 x 10 s of silence publishes the will */
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d, "d1", true, 10, "devices/d1/status", 0, true, NULL), 0);
	now += 14000;
	mqtt_broker_tick(B, now);
	assert_false(d->closed);
	assert_int_equal(cl_simple(d, MQTT_PINGREQ), 0);
	now += 14999;
	mqtt_broker_tick(B, now);
	assert_false(d->closed);
	now += 2;
	mqtt_broker_tick(B, now);
	assert_true(d->closed);
	cl_free(d);
	expect_pub(s, "devices/d1/status", "bye", 0, 0, 0);
	assert_int_equal(mqtt_broker_stats(B)->keepalive_closes, 1);
	/* the will was retained: a new subscriber gets it */
	struct client *s2 = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s2, "svc/2", true), 0);
	assert_int_equal(cl_sub(s2, "devices/+/status", 0), 0);
	expect_pub(s2, "devices/d1/status", "bye", 0, 1, 0);
	/* a protocol error publishes the will too */
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d, "d1", true, 0, "devices/d1/status", 0, false, NULL), 0);
	assert_int_equal(cl_pub(d, "devices/d1/x", "", 0, false, 0, false), 0);
	const uint8_t qos3[] = { 0x36, 5, 0, 1, 'a', 0, 1 };
	assert_int_equal(cl_in(d, qos3, sizeof qos3), -E_CLOSED);
	cl_free(d);
	expect_pub(s, "devices/d1/status", "bye", 0, 0, 0);
	assert_int_equal(mqtt_broker_stats(B)->rej[MQTT_REJ_QOS], 1);
	cl_free(s);
	cl_free(s2);
}

static void test_takeover(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_sub(s, "devices/+/status", 0), 0);
	struct client *d1 = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d1, "d1", false, 0, "devices/d1/status", 0, false, NULL), 0);
	assert_int_equal(cl_sub(d1, "devices/d1/cmd/#", 1), 1);
	struct client *d2 = cl_new("d1", MQTT_ID_DEVICE);
	int present = -1;
	assert_int_equal(cl_connect_full(d2, "d1", false, 0, NULL, 0, false, &present), 0);
	assert_true(d1->closed); /* [MQTT-3.1.4-2] */
	assert_int_equal(present, 1);
	expect_pub(s, "devices/d1/status", "bye", 0, 0, 0);
	/* the subscription survived the takeover */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", "1", 0, false, 0, false), 0);
	expect_pub(d2, "devices/d1/cmd/a", "1", 0, 0, 0);
	assert_int_equal(mqtt_broker_stats(B)->takeovers, 1);
	cl_free(d1);
	cl_free(d2);
	cl_free(s);
}

static void test_qos1_redelivery_and_offline_queue(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", false), 0);
	assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 1), 1);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", "m1", 1, false, 1, false), 0);
	uint16_t pid1 = expect_pub(d, "devices/d1/cmd/a", "m1", 1, 0, 0);
	cl_free(d); /* lost, unacknowledged */
	/* offline: queued */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", "m2", 1, false, 2, false), 0);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", "q0", 0, false, 0, false), 0);
	d = cl_new("d1", MQTT_ID_DEVICE);
	int present = 0;
	assert_int_equal(cl_connect_full(d, "d1", false, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 1);
	/* redelivered with DUP and the same identifier, then the queued one */
	assert_int_equal(expect_pub(d, "devices/d1/cmd/a", "m1", 1, 0, 1), pid1);
	uint16_t pid2 = expect_pub(d, "devices/d1/cmd/a", "m2", 1, 0, 0);
	assert_int_not_equal(pid1, pid2);
	expect_none(d); /* QoS 0 was not kept for an offline session */
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pid1), 0);
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pid2), 0);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.deliveries, 0);
	/* clean session 1 discards the stored session */
	cl_free(d);
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d, "d1", true, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 0);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", "m3", 1, false, 3, false), 0);
	expect_none(d);
	cl_free(d);
	cl_free(s);
}

static void test_inflight_window(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 1), 1);
	uint16_t pids[6];
	char p[16];
	for (int i = 0; i < 6; i++) {
		snprintf(p, sizeof p, "m%d", i);
		assert_int_equal(cl_pub(s, "devices/d1/cmd/a", p, 1, false, (uint16_t)(i + 1), false), 0);
	}
	for (int i = 0; i < 4; i++) { /* window of 4 */
		snprintf(p, sizeof p, "m%d", i);
		pids[i] = expect_pub(d, "devices/d1/cmd/a", p, 1, 0, 0);
	}
	expect_none(d);
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pids[1]), 0); /* out of order is fine */
	pids[4] = expect_pub(d, "devices/d1/cmd/a", "m4", 1, 0, 0);
	expect_none(d);
	assert_int_equal(cl_ack(d, MQTT_PUBACK, 999), 0); /* unknown: ignored, counted */
	assert_int_equal(mqtt_broker_stats(B)->unknown_acks, 1);
	cl_free(d);
	cl_free(s);
}

static void test_queue_bounds(void **state)
{
	(void)state;
	for (int policy = 0; policy < 2; policy++) {
		struct mqtt_broker_config g = base_cfg();
		g.queue_drop_oldest = policy == 0;
		g.max_inflight = 1;
		g.max_queue = 3;
		teardown(NULL);
		start(&g);
		struct client *s = cl_new("svc", MQTT_ID_SERVICE);
		assert_int_equal(cl_connect(s, "svc", true), 0);
		struct client *d = cl_new("d1", MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(d, "d1", false), 0);
		assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 1), 1);
		cl_free(d);
		char p[16];
		for (int i = 0; i < 5; i++) {
			snprintf(p, sizeof p, "m%d", i);
			assert_int_equal(cl_pub(s, "devices/d1/cmd/a", p, 1, false, (uint16_t)(i + 1),
						false), 0);
		}
		const struct mqtt_broker_stats *st = mqtt_broker_stats(B);
		d = cl_new("d1", MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(d, "d1", false), 0);
		const char *first = policy == 0 ? "m2" : "m0";
		uint16_t pid = expect_pub(d, "devices/d1/cmd/a", first, 1, 0, 0);
		expect_none(d); /* window 1 */
		assert_int_equal(cl_ack(d, MQTT_PUBACK, pid), 0);
		expect_pub(d, "devices/d1/cmd/a", policy == 0 ? "m3" : "m1", 1, 0, 0);
		if (policy == 0)
			assert_int_equal(st->queue_dropped_oldest, 2);
		else
			assert_int_equal(st->queue_refused, 2);
		cl_free(d);
		cl_free(s);
	}
}

/* QoS 0 drops per publisher identity (ADR-075): copies a subscriber's session could not
 * take (offline QoS 0) are counted against the identity that published them, in a table of
 * drop_ids entries; a new identity recycles the entry that matters least, and an identity
 * that comes back on a new connection finds its own entry. */
static void test_drops_per_identity(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.drop_ids = 2;
	teardown(NULL);
	start(&g);
	struct client *a = cl_new("admin", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(a, "admin", false), 0);
	assert_int_equal(cl_sub(a, "devices/#", 0), 0);
	cl_free(a); /* its kept session now drops every QoS 0 copy */
	struct client *d2 = cl_new("d2", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d2, "d2", true), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(cl_pub(d2, "devices/d2/t", "x", 0, false, 0, false), 0);
	struct client *sv = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(sv, "svc", true), 0);
	assert_int_equal(cl_pub(sv, "devices/d1/cmd/a", "y", 0, false, 0, false), 0);
	struct mqtt_dropper dr[4];
	assert_int_equal(mqtt_broker_droppers(B, dr, 4), 2);
	assert_string_equal(dr[0].id, "d2");
	assert_int_equal(dr[0].kind, MQTT_ID_DEVICE);
	assert_int_equal(dr[0].dropped[MQTT_DROP_QUEUE], 3);
	assert_string_equal(dr[1].id, "svc");
	assert_int_equal(dr[1].kind, MQTT_ID_SERVICE);
	assert_int_equal(dr[1].dropped[MQTT_DROP_QUEUE], 1);
	assert_int_equal(mqtt_broker_check(B), 0);
	/* a third identity: the table holds two, the one with fewer drops is recycled */
	struct client *d3 = cl_new("d3", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d3, "d3", true), 0);
	assert_int_equal(cl_pub(d3, "devices/d3/t", "z", 0, false, 0, false), 0);
	assert_int_equal(cl_pub(d3, "devices/d3/t", "z", 0, false, 0, false), 0);
	assert_int_equal(mqtt_broker_stats(B)->fair_ids_recycled, 1);
	assert_int_equal(mqtt_broker_droppers(B, dr, 1), 1); /* only the first asked for */
	assert_string_equal(dr[0].id, "d2");
	assert_int_equal(mqtt_broker_droppers(B, dr, 4), 2);
	assert_string_equal(dr[1].id, "d3");
	assert_int_equal(dr[1].dropped[MQTT_DROP_QUEUE], 2);
	/* d2 again, on a new connection and a new session: the same entry */
	cl_free(d2);
	assert_int_equal(mqtt_broker_check(B), 0);
	d2 = cl_new("d2", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d2, "d2", true), 0);
	assert_int_equal(cl_pub(d2, "devices/d2/t", "x", 0, false, 0, false), 0);
	assert_int_equal(mqtt_broker_droppers(B, dr, 4), 2);
	assert_string_equal(dr[0].id, "d2");
	assert_int_equal(dr[0].dropped[MQTT_DROP_QUEUE], 4);
	assert_int_equal(dr[0].dropped[MQTT_DROP_LINKS] + dr[0].dropped[MQTT_DROP_FAIR], 0);
	assert_int_equal(mqtt_broker_stats(B)->qos0_offline_dropped, 7);
	assert_int_equal(mqtt_broker_check(B), 0);
	cl_free(d2);
	cl_free(d3);
	cl_free(sv);
}

static void test_qos2_both_ways(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", false), 0);
	assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 2), 2);
	/* inbound: duplicate suppressed until PUBREL */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/x", "once", 2, false, 7, false), 0);
	assert_int_equal(expect_ack(s, MQTT_PUBREC), 7);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/x", "once", 2, false, 7, true), 0);
	assert_int_equal(expect_ack(s, MQTT_PUBREC), 7);
	assert_int_equal(mqtt_broker_stats(B)->qos2_dups, 1);
	assert_int_equal(cl_ack(s, MQTT_PUBREL, 7), 0);
	assert_int_equal(expect_ack(s, MQTT_PUBCOMP), 7);
	/* outbound: exactly one PUBLISH reached the device */
	uint16_t pid = expect_pub(d, "devices/d1/cmd/x", "once", 2, 0, 0);
	expect_none(d);
	assert_int_equal(cl_ack(d, MQTT_PUBREC, pid), 0);
	assert_int_equal(expect_ack(d, MQTT_PUBREL), pid);
	/* connection lost before PUBCOMP: PUBREL is resent on reconnect */
	cl_free(d);
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", false), 0);
	assert_int_equal(expect_ack(d, MQTT_PUBREL), pid);
	assert_int_equal(cl_ack(d, MQTT_PUBCOMP, pid), 0);
	/* lost before PUBREC: PUBLISH resent with DUP */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/x", "two", 2, false, 8, false), 0);
	expect_ack(s, MQTT_PUBREC);
	assert_int_equal(cl_ack(s, MQTT_PUBREL, 8), 0);
	expect_ack(s, MQTT_PUBCOMP);
	uint16_t pid2 = expect_pub(d, "devices/d1/cmd/x", "two", 2, 0, 0);
	cl_free(d);
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", false), 0);
	assert_int_equal(expect_pub(d, "devices/d1/cmd/x", "two", 2, 0, 1), pid2);
	assert_int_equal(cl_ack(d, MQTT_PUBREC, pid2), 0);
	expect_ack(d, MQTT_PUBREL);
	assert_int_equal(cl_ack(d, MQTT_PUBCOMP, pid2), 0);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.deliveries, 0);
	/* too many inbound QoS 2 awaiting PUBREL closes */
	for (uint16_t i = 1; i <= 4; i++)
		assert_int_equal(cl_pub(d, "devices/d1/x", "", 2, false, i, false), 0);
	assert_int_equal(cl_pub(d, "devices/d1/x", "", 2, false, 5, false), -E_CLOSED);
	cl_free(d);
	cl_free(s);
}

static void test_acl(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	assert_int_equal(cl_sub(d, "devices/d2/cmd/#", 1), MQTT_SUBACK_FAILURE);
	assert_int_equal(cl_sub(d, "devices/+/cmd/#", 1), MQTT_SUBACK_FAILURE);
	/* service may not subscribe wider than its pattern, nor publish telemetry */
	assert_int_equal(cl_sub(s, "devices/#", 0), MQTT_SUBACK_FAILURE);
	assert_int_equal(cl_sub(s, "devices/d1/telemetry/+", 0), 0);
	assert_int_equal(cl_pub(s, "devices/d1/telemetry/x", "fake", 1, false, 4, false), 0);
	assert_int_equal(expect_ack(s, MQTT_PUBACK), 4); /* dropped, acknowledged */
	expect_none(s);
	assert_int_equal(mqtt_broker_stats(B)->acl_denied_pub, 1);
	/* the device's third violation closes it */
	assert_int_equal(cl_pub(d, "devices/d2/telemetry/x", "spoof", 0, false, 0, false), -E_CLOSED);
	assert_true(d->closed);
	assert_int_equal(mqtt_broker_stats(B)->acl_closes, 1);
	expect_none(s);
	cl_free(d);
	/* unknown service identity: no rule, nothing allowed */
	struct client *x = cl_new("nobody", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(x, "nobody", true), 0);
	assert_int_equal(cl_sub(x, "devices/d1/telemetry/#", 0), MQTT_SUBACK_FAILURE);
	cl_free(x);
	cl_free(s);
}

static void test_rate_limits(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct mqtt_broker_config g = base_cfg();
		g.rate_msgs_per_s = 2;
		g.rate_burst_msgs = 3;
		g.rate_bytes_per_s = 1000;
		g.rate_burst_bytes = 100;
		g.rate_disconnect = mode == 1;
		teardown(NULL);
		start(&g);
		struct client *s = cl_new("svc", MQTT_ID_SERVICE);
		assert_int_equal(cl_connect(s, "svc", true), 0);
		assert_int_equal(cl_sub(s, "devices/+/telemetry/#", 0), 0);
		struct client *d = cl_new("d1", MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(d, "d1", true), 0);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(cl_pub(d, "devices/d1/telemetry/t", "x", 0, false, 0, false), 0);
			expect_pub(s, "devices/d1/telemetry/t", "x", 0, 0, 0);
		}
		int rc = cl_pub(d, "devices/d1/telemetry/t", "x", 0, false, 0, false);
		expect_none(s);
		assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
		if (mode == 1) {
			assert_int_equal(rc, -E_CLOSED);
		} else {
			assert_int_equal(rc, 0);
			now += 500; /* one message of credit */
			assert_int_equal(cl_pub(d, "devices/d1/telemetry/t", "y", 0, false, 0, false), 0);
			expect_pub(s, "devices/d1/telemetry/t", "y", 0, 0, 0);
			/* byte limit: a payload above the byte burst is dropped */
			now += 10000;
			char big[200];
			memset(big, 'b', sizeof big - 1);
			big[sizeof big - 1] = 0;
			assert_int_equal(cl_pub(d, "devices/d1/telemetry/t", big, 0, false, 0, false), 0);
			expect_none(s);
			assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 2);
		}
		cl_free(d);
		cl_free(s);
	}
}

/* A low byte rate with frequent small PUBLISHes: the fraction of a byte earned between
 * two PUBLISHes carries over, so the identity gets its configured rate (100 B/s offered
 * 200 B/s in 1-byte messages: about 100 pass per second), not nothing. */
static void test_rate_bytes_slow_refill(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.rate_bytes_per_s = 100;
	g.rate_burst_bytes = 10;
	teardown(NULL);
	start(&g);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	for (int i = 0; i < 10; i++) /* the burst */
		assert_int_equal(cl_pub(d, "devices/d1/telemetry/t", "x", 0, false, 0, false), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 0);
	assert_int_equal(cl_pub(d, "devices/d1/telemetry/t", "x", 0, false, 0, false), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
	uint64_t dropped0 = mqtt_broker_stats(B)->rate_dropped;
	for (int i = 0; i < 400; i++) { /* 2 s, one 1-byte PUBLISH every 5 ms */
		now += 5;
		assert_int_equal(cl_pub(d, "devices/d1/telemetry/t", "x", 0, false, 0, false), 0);
	}
	uint64_t passed = 400 - (mqtt_broker_stats(B)->rate_dropped - dropped0);
	if (passed < 198 || passed > 201)
		fail_msg("%llu of 400 passed in 2 s at 100 B/s, want about 200", (unsigned long long)passed);
	cl_free(d);
}

/* Over the limit under rate_policy "drop", a QoS 1 PUBLISH is never acknowledged and lost:
 * the connection closes without a PUBACK (the client sends it again); QoS 0 is dropped. */
static void test_rate_qos1_never_acknowledged_and_dropped(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.rate_msgs_per_s = 2;
	g.rate_burst_msgs = 2;
	teardown(NULL);
	start(&g);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	assert_int_equal(cl_pub(d, "devices/d1/t", "x", 1, false, 1, false), 0);
	assert_int_equal(expect_ack(d, MQTT_PUBACK), 1);
	assert_int_equal(cl_pub(d, "devices/d1/t", "x", 0, false, 0, false), 0);
	assert_int_equal(cl_pub(d, "devices/d1/t", "x", 0, false, 0, false), 0); /* QoS 0: dropped */
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
	assert_int_equal(cl_pub(d, "devices/d1/t", "x", 1, false, 2, false), -E_CLOSED);
	assert_true(d->closed);
	expect_none(d);
	assert_int_equal(mqtt_broker_stats(B)->rate_closes, 1);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
	cl_free(d);
}

/* Buckets belong to the identity: reconnecting (even with a clean session) does not
 * refill, and a takeover shares the bucket of the connection it replaces. */
static void test_rate_per_identity(void **state)
{
	(void)state;
	for (int mode = 0; mode < 2; mode++) {
		struct mqtt_broker_config g = base_cfg();
		g.rate_msgs_per_s = 2;
		g.rate_burst_msgs = 3;
		g.service_rate_msgs_per_s = 4;
		g.service_rate_burst_msgs = 5;
		g.rate_disconnect = mode == 1;
		teardown(NULL);
		start(&g);
		struct client *d = cl_new("d1", MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(d, "d1", true), 0);
		for (int i = 0; i < 3; i++)
			assert_int_equal(cl_pub(d, "devices/d1/t", "x", 0, false, 0, false), 0);
		assert_int_equal(cl_simple(d, MQTT_DISCONNECT), -E_CLOSED);
		cl_free(d);
		/* a new connection of the same identity finds the empty bucket */
		d = cl_new("d1", MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(d, "d1", true), 0);
		int rc = cl_pub(d, "devices/d1/t", "x", 0, false, 0, false);
		assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
		assert_int_equal(rc, mode == 1 ? -E_CLOSED : 0);
		cl_free(d);
		/* takeover: two connections of one identity share one bucket */
		now += 10000; /* full again */
		struct client *a = cl_new("d2", MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(a, "d2", false), 0);
		assert_int_equal(cl_pub(a, "devices/d2/t", "x", 0, false, 0, false), 0);
		assert_int_equal(cl_pub(a, "devices/d2/t", "x", 0, false, 0, false), 0);
		struct client *b2 = cl_new("d2", MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(b2, "d2", false), 0);
		assert_true(a->closed);
		assert_int_equal(cl_pub(b2, "devices/d2/t", "x", 0, false, 0, false), 0);
		assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
		rc = cl_pub(b2, "devices/d2/t", "x", 0, false, 0, false);
		assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 2);
		assert_int_equal(rc, mode == 1 ? -E_CLOSED : 0);
		cl_free(a);
		cl_free(b2);
		/* a service's several connections (svc, svc/x) share the service's bucket, of
		 * the service burst */
		struct client *s1 = cl_new("svc", MQTT_ID_SERVICE);
		struct client *s2 = cl_new("svc", MQTT_ID_SERVICE);
		assert_int_equal(cl_connect(s1, "svc", true), 0);
		assert_int_equal(cl_connect(s2, "svc/x", true), 0);
		for (int i = 0; i < 5; i++)
			assert_int_equal(cl_pub(i & 1 ? s1 : s2, "devices/d1/cmd/a", "x", 0, false,
						0, false), 0);
		rc = cl_pub(s1, "devices/d1/cmd/a", "x", 0, false, 0, false);
		assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 3);
		assert_int_equal(rc, mode == 1 ? -E_CLOSED : 0);
		cl_free(s1);
		cl_free(s2);
	}
}

/* The identity table never grows past max_conns + rate_idle_ids; full buckets are
 * recycled, buckets still owing tokens are not (a new identity is refused 0x03 until
 * one refills). */
static void test_rate_table_bound(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.rate_msgs_per_s = 2;
	g.rate_burst_msgs = 3;
	g.rate_idle_ids = 0; /* the table is max_conns = 16 entries */
	teardown(NULL);
	start(&g);
	char id[16], topic[48];
	struct mqtt_broker_usage u;
	for (int i = 0; i < 300; i++) {
		snprintf(id, sizeof id, "d%d", i);
		snprintf(topic, sizeof topic, "devices/%s/t", id);
		struct client *c = cl_new(id, MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(c, id, true), 0);
		assert_int_equal(cl_pub(c, topic, "x", 0, false, 0, false), 0);
		cl_free(c);
		mqtt_broker_usage(B, &u);
		assert_true(u.rate_ids <= 16);
		now += 1000; /* refilled by the time the table needs it */
	}
	assert_int_equal(mqtt_broker_stats(B)->rate_ids_evicted, 300 - 16);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 0);
	/* sixteen identities drain their buckets and leave */
	for (int i = 0; i < 16; i++) {
		snprintf(id, sizeof id, "e%d", i);
		snprintf(topic, sizeof topic, "devices/%s/t", id);
		struct client *c = cl_new(id, MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(c, id, true), 0);
		for (int k = 0; k < 3; k++)
			assert_int_equal(cl_pub(c, topic, "x", 0, false, 0, false), 0);
		cl_free(c);
	}
	/* no bucket may be recycled: a new identity waits */
	struct client *x = cl_new("x", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(x, "x", true), MQTT_CONNACK_UNAVAILABLE);
	assert_true(mqtt_broker_stats(B)->rate_ids_full >= 1);
	cl_free(x);
	/* a known identity still finds its debt */
	x = cl_new("e3", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(x, "e3", true), 0);
	assert_int_equal(cl_pub(x, "devices/e3/t", "x", 0, false, 0, false), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
	cl_free(x);
	now += 2000;
	x = cl_new("x", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(x, "x", true), 0);
	cl_free(x);
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.rate_ids, 16);
}

/* A PUBLISH of `len` bytes of payload (len < 4096). */
static int pub_n(struct client *c, const char *topic, size_t len)
{
	static char p[4096];
	memset(p, 'p', len);
	p[len] = 0;
	return cl_pub(c, topic, p, 0, false, 0, false);
}

/* Services have limits of their own (service_rate_*), in buckets of their own: a service
 * and a device of the same name bytes never share one, and each refills at its kind's
 * rate, to the milli-message and the byte. */
static void test_rate_service_own_bucket(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.rate_msgs_per_s = 2;
	g.rate_burst_msgs = 3;
	g.rate_bytes_per_s = 1000;
	g.rate_burst_bytes = 100;
	g.service_rate_msgs_per_s = 20;
	g.service_rate_burst_msgs = 30;
	g.service_rate_bytes_per_s = 10000;
	g.service_rate_burst_bytes = 1000;
	teardown(NULL);
	start(&g);
	const char *dt = "devices/svc/t", *st = "devices/d1/cmd/a";
	struct client *d = cl_new("svc", MQTT_ID_DEVICE);
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(d, "svc", true), 0);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_not_equal(d->c->rate, s->c->rate);
	uint64_t dr = 0;
#define DROPS(n) assert_int_equal(mqtt_broker_stats(B)->rate_dropped, dr += (n))
	/* the device's burst of 3 ... */
	for (int i = 0; i < 3; i++)
		assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(0);
	assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(1);
	/* ... leaves the service's 30 untouched */
	for (int i = 0; i < 30; i++)
		assert_int_equal(pub_n(s, st, 1), 0);
	DROPS(0);
	assert_int_equal(pub_n(s, st, 1), 0);
	DROPS(1);
	/* 49 ms: 980 of 1000 milli-messages for the service, 98 for the device */
	now += 49;
	assert_int_equal(pub_n(s, st, 1), 0);
	assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(2);
	now += 1; /* 50 ms at 20/s: exactly one message */
	assert_int_equal(pub_n(s, st, 1), 0);
	DROPS(0);
	assert_int_equal(pub_n(s, st, 1), 0);
	assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(2);
	now += 449; /* 499 ms at 2/s: 998 */
	assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(1);
	now += 1; /* 500 ms: exactly one */
	assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(0);
	assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(1);
	/* bytes, the service: a burst of 1000, then 10 B per ms */
	now += 10000;
	assert_int_equal(pub_n(s, st, 600), 0);
	assert_int_equal(pub_n(s, st, 600), 0);
	DROPS(1);
	assert_int_equal(pub_n(s, st, 400), 0);
	DROPS(0);
	now += 9; /* 90 B */
	assert_int_equal(pub_n(s, st, 100), 0);
	DROPS(1);
	now += 1; /* 100 B */
	assert_int_equal(pub_n(s, st, 100), 0);
	DROPS(0);
	assert_int_equal(pub_n(s, st, 1), 0);
	DROPS(1);
	/* bytes, the device: a burst of 100, then 1 B per ms */
	now += 10000;
	assert_int_equal(pub_n(d, dt, 101), 0);
	DROPS(1);
	assert_int_equal(pub_n(d, dt, 100), 0);
	DROPS(0);
	now += 1;
	assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(0);
	assert_int_equal(pub_n(d, dt, 1), 0);
	DROPS(1);
	/* the check sees a bucket of the wrong kind, and tokens above the kind's burst */
	struct mqtt_rate *r = &B->rates[s->c->rate];
	r->service = 0;
	assert_int_equal(mqtt_broker_check(B), -E_CORRUPT);
	r->service = 1;
	assert_int_equal(mqtt_broker_check(B), 0);
	uint32_t m = r->msgs;
	r->msgs = 30001;
	assert_int_equal(mqtt_broker_check(B), -E_CORRUPT);
	r->msgs = m;
	cl_free(d);
	cl_free(s);
	/* limits for services only: devices unlimited, services limited */
	g.rate_msgs_per_s = g.rate_bytes_per_s = 0;
	g.service_rate_msgs_per_s = 2;
	g.service_rate_burst_msgs = 2;
	g.service_rate_bytes_per_s = 0;
	teardown(NULL);
	start(&g);
	d = cl_new("d1", MQTT_ID_DEVICE);
	s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(pub_n(d, "devices/d1/t", 1000), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pub_n(s, st, 1000), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
	cl_free(d);
	cl_free(s);
#undef DROPS
}

/* Eviction judges a bucket by its own kind: an idle service bucket above the device
 * burst but below its own is a debt (kept), a full one is recycled like a full device
 * bucket, and a recycled entry takes the kind of its new identity. */
static void test_rate_service_eviction(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.rate_msgs_per_s = 2;
	g.rate_burst_msgs = 3;
	g.service_rate_msgs_per_s = 20;
	g.service_rate_burst_msgs = 30;
	g.rate_idle_ids = 0; /* the table is max_conns = 16 entries */
	teardown(NULL);
	start(&g);
	const char *st = "devices/d1/cmd/a";
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	for (int i = 0; i < 5; i++) /* 25 of 30 left: more than a device's whole burst */
		assert_int_equal(pub_n(s, st, 1), 0);
	cl_free(s);
	char id[16], topic[48];
	for (int i = 0; i < 15; i++) { /* the rest of the table: devices owing tokens */
		snprintf(id, sizeof id, "e%d", i);
		snprintf(topic, sizeof topic, "devices/%s/t", id);
		struct client *c = cl_new(id, MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(c, id, true), 0);
		for (int k = 0; k < 3; k++)
			assert_int_equal(pub_n(c, topic, 1), 0);
		cl_free(c);
	}
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 0);
	struct client *x = cl_new("x", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(x, "x", true), MQTT_CONNACK_UNAVAILABLE);
	cl_free(x);
	now += 249; /* the service's bucket: 29,980 of 30,000 milli-messages */
	x = cl_new("x", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(x, "x", true), MQTT_CONNACK_UNAVAILABLE);
	cl_free(x);
	assert_int_equal(mqtt_broker_stats(B)->rate_ids_evicted, 0);
	now += 1; /* full: equal to a fresh service bucket, so recycled */
	x = cl_new("x", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(x, "x", true), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_ids_evicted, 1);
	assert_int_equal(B->rates[x->c->rate].service, 0);
	cl_free(x);
	/* the service comes back: x's full device bucket is recycled as a fresh service one */
	s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_ids_evicted, 2);
	assert_int_equal(B->rates[s->c->rate].service, 1);
	for (int i = 0; i < 30; i++)
		assert_int_equal(pub_n(s, st, 1), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 0);
	assert_int_equal(pub_n(s, st, 1), 0);
	assert_int_equal(mqtt_broker_stats(B)->rate_dropped, 1);
	cl_free(s);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.rate_ids, 16);
}

/* The bucket stays 32 bytes (two per cache line), and the kind bit and refs:31 do not
 * overlap. */
static void test_rate_bucket_layout(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct mqtt_rate), 32);
	struct mqtt_rate r = { 0 };
	r.refs = MQTT_RATE_REFS_MAX;
	assert_int_equal(r.service, 0);
	r.service = 1;
	assert_int_equal(r.refs, MQTT_RATE_REFS_MAX);
	r.refs = 0;
	assert_int_equal(r.service, 1);
	assert_true((uint64_t)MQTT_NIL / 2 <= MQTT_RATE_REFS_MAX); /* max_conns bound */
}

/* ---- log capture ---- */
static void t_log(void *ctx, const char *line, const struct log_fields *f)
{
	(void)ctx;
	g_lines++;
	snprintf(g_last, sizeof g_last, "%s", line);
	snprintf(g_last_reason, sizeof g_last_reason, "%s", f && f->reason ? f->reason : "");
	snprintf(g_last_identity, sizeof g_last_identity, "%s", f && f->identity ? f->identity : "");
}

/* A flood of bad packets yields a bounded number of lines, then one line with the count
 * of those suppressed; each reason has its own budget. */
static void test_log_rate_limited(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.log = t_log;
	g.log_burst = 5;
	g.log_per_min = 60;
	teardown(NULL);
	start(&g);
	g_lines = 0;
	const uint8_t bad[] = { 0x10, 0x80, 0x80, 0x80, 0x80, 0x01 }; /* 5-byte length */
	char id[16];
	for (int i = 0; i < 100; i++) {
		snprintf(id, sizeof id, "d%d", i);
		struct client *c = cl_new(id, MQTT_ID_DEVICE);
		assert_int_equal(cl_in(c, bad, sizeof bad), -E_CLOSED);
		if (i == 0) {
			assert_non_null(strstr(g_last, "mqtt: malformed:"));
			assert_non_null(strstr(g_last, "id=d0"));
			assert_string_equal(g_last_reason, "malformed"); /* the structured fields */
			assert_string_equal(g_last_identity, "d0");
		}
		cl_free(c);
	}
	assert_int_equal(g_lines, 5);
	assert_int_equal(mqtt_broker_stats(B)->log_suppressed, 95);
	/* another reason is not starved by the flood */
	struct client *c = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(c, "d2", true), MQTT_CONNACK_NOT_AUTHORIZED);
	cl_free(c);
	assert_int_equal(g_lines, 6);
	assert_non_null(strstr(g_last, "mqtt: identity:"));
	assert_non_null(strstr(g_last, "id=d1"));
	/* one second later: one line, carrying the count of the lines suppressed */
	now += 1000;
	c = cl_new("d7", MQTT_ID_DEVICE);
	assert_int_equal(cl_in(c, bad, sizeof bad), -E_CLOSED);
	cl_free(c);
	assert_int_equal(g_lines, 7);
	assert_non_null(strstr(g_last, "(+95 suppressed)"));
	assert_int_equal(mqtt_broker_stats(B)->log_lines, 7);
	/* every rejection path below logs (a sample): ACL, protocol, timeout, too big */
	c = cl_new("d8", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(c, "d8", true), 0);
	assert_int_equal(cl_pub(c, "devices/d9/t", "x", 0, false, 0, false), 0);
	assert_non_null(strstr(g_last, "mqtt: acl: PUBLISH to devices/d9/t denied id=d8"));
	assert_string_equal(g_last_reason, "acl");
	assert_string_equal(g_last_identity, "d8");
	assert_int_equal(cl_sub(c, "devices/d9/#", 0), MQTT_SUBACK_FAILURE);
	assert_non_null(strstr(g_last, "mqtt: acl: SUBSCRIBE"));
	const uint8_t huge[] = { 0x30, 0xff, 0x7f }; /* 16383 bytes > max_packet */
	assert_int_equal(cl_in(c, huge, sizeof huge), -E_CLOSED);
	assert_non_null(strstr(g_last, "mqtt: too big:"));
	cl_free(c);
	c = cl_new("d8", MQTT_ID_DEVICE);
	now += 20000;
	mqtt_broker_tick(B, now);
	assert_true(c->closed);
	assert_non_null(strstr(g_last, "mqtt: timeout: no CONNECT"));
	cl_free(c);
}

static void test_subscription_limits(void **state)
{
	(void)state;
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	char f[64];
	/* one inline + max_subs_per_session records */
	for (int i = 0; i < 9; i++) {
		snprintf(f, sizeof f, "devices/d1/s%d", i);
		assert_int_equal(cl_sub(d, f, 1), 1);
	}
	assert_int_equal(cl_sub(d, "devices/d1/one-too-many", 1), MQTT_SUBACK_FAILURE);
	/* resubscribing an existing filter replaces it */
	assert_int_equal(cl_sub(d, "devices/d1/s3", 2), 2);
	/* deeper than max_topic_levels */
	assert_int_equal(cl_sub(d, "devices/d1/a/b/c/d/e/f/g", 1), MQTT_SUBACK_FAILURE);
	cl_free(d);
}

static void test_memory_targets(void **state)
{
	(void)state;
	assert_true(mqtt_sizeof_session() <= 64);
	assert_int_equal(mqtt_sizeof_conn(), 48);
	print_message("sizeof session %zu, conn %zu, delivery %zu\n", mqtt_sizeof_session(),
		      mqtt_sizeof_conn(), sizeof(struct mqtt_dlv));
	struct client *cl[8];
	char id[16], f[64];
	struct mqtt_broker_usage u0, u1, u2;
	mqtt_broker_usage(B, &u0);
	size_t blocks0 = g_blocks;
	for (int i = 0; i < 8; i++) {
		snprintf(id, sizeof id, "dev%d", i);
		cl[i] = cl_new(id, MQTT_ID_DEVICE);
		assert_int_equal(cl_connect(cl[i], id, true), 0);
		snprintf(f, sizeof f, "devices/%s/cmd/#", id);
		if (i == 0)
			mqtt_broker_usage(B, &u1);
		assert_int_equal(cl_sub(cl[i], f, 1), 1);
	}
	mqtt_broker_usage(B, &u2);
	/* devices/<id>/cmd/# costs no tree nodes per device: two shared relative nodes total */
	assert_int_equal(u2.nodes - u1.nodes, 2);
	assert_int_equal(u2.subs, 0); /* all inline */
	/* idle connections hold no buffers: heap = the session identifiers only */
	size_t levels = 3; /* the shared "cmd" level ("devices/<id>" is never interned) */
	size_t per_conn = (u2.heap_bytes - u0.heap_bytes - levels) / 8;
	print_message("heap per idle device connection with one subscription: %zu B "
		      "(the client identifier), %zu blocks; pools: session %zu B + connection %zu B\n",
		      per_conn, (g_blocks - blocks0) / 8, mqtt_sizeof_session(), mqtt_sizeof_conn());
	assert_true(per_conn <= 4);
	for (int i = 0; i < 8; i++)
		cl_free(cl[i]);
}

/* A packet split across many input chunks is reassembled; idle connections hold none. */
static void test_split_input(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_sub(s, "devices/+/telemetry/#", 0), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	uint8_t buf[600];
	char payload[500];
	memset(payload, 'p', sizeof payload - 1);
	payload[sizeof payload - 1] = 0;
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_publish(&w, (const uint8_t *)"devices/d1/telemetry/t", 22,
					     (const uint8_t *)payload, strlen(payload), 0, false,
					     false, 0), 0);
	size_t heap0 = g_live;
	for (size_t i = 0; i < w.pos; i += 7) {
		assert_int_equal(cl_in(d, buf + i, i + 7 <= w.pos ? 7 : w.pos - i), 0);
		if (i + 7 < w.pos)
			assert_true(g_live > heap0); /* reassembly buffer while incomplete */
	}
	assert_int_equal(g_live, heap0); /* and none afterwards */
	expect_pub(s, "devices/d1/telemetry/t", payload, 0, 0, 0);
	/* oversized packet closes */
	uint8_t big[] = { 0x30, 0xff, 0xff, 0x03 };
	assert_int_equal(cl_in(d, big, sizeof big), -E_CLOSED);
	cl_free(d);
	cl_free(s);
}

static void test_connect_timeout_and_pools(void **state)
{
	(void)state;
	struct client *a = cl_new("d1", MQTT_ID_DEVICE);
	now += 10001;
	mqtt_broker_tick(B, now);
	assert_true(a->closed);
	cl_free(a);
	/* the connection pool is bounded */
	struct client *cl[17];
	for (int i = 0; i < 16; i++)
		cl[i] = cl_new("d1", MQTT_ID_DEVICE);
	struct mqtt_conn *c;
	assert_int_equal(mqtt_conn_open(B, (const uint8_t *)"x", 1, MQTT_ID_DEVICE, NULL, now, &c),
			 -E_NOMEM);
	for (int i = 0; i < 16; i++)
		cl_free(cl[i]);
}

static void test_multi_filter_resubscribe_unsubscribe(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/cfg", "r1", 0, true, 0, false), 0);
	/* RETAIN 0 neither replaces nor clears the retained message [MQTT-3.3.1-12] */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/cfg", "", 0, false, 0, false), 0);
	/* two filters, one denied: one SUBACK with a code each, in order */
	uint8_t buf[128];
	struct wcur w = wcur_make(buf, sizeof buf);
	const char *f[] = { "devices/d1/cmd/#", "devices/d2/cmd/#" };
	const uint8_t q[] = { 1, 1 };
	assert_int_equal(mqtt_encode_subscribe(&w, 21, f, q, 2), 0);
	assert_int_equal(cl_in(d, buf, w.pos), 0);
	uint8_t t, fl;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(d, &t, &fl, &b, &n));
	assert_int_equal(t, MQTT_SUBACK);
	assert_int_equal(n, 4);
	assert_int_equal(b[2], 1);
	assert_int_equal(b[3], MQTT_SUBACK_FAILURE);
	expect_pub(d, "devices/d1/cmd/cfg", "r1", 0, 1, 0); /* QoS min(0, 1) */
	/* an identical filter replaces the subscription and re-sends the retained message */
	assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 1), 1);
	expect_pub(d, "devices/d1/cmd/cfg", "r1", 0, 1, 0);
	/* an in-flight QoS 1 delivery completes after UNSUBSCRIBE */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/x", "q1", 1, false, 9, false), 0);
	expect_ack(s, MQTT_PUBACK);
	uint16_t pid = expect_pub(d, "devices/d1/cmd/x", "q1", 1, 0, 0);
	w = wcur_make(buf, sizeof buf);
	const char *uf[] = { "devices/d1/cmd/#", "devices/d1/nothing" };
	assert_int_equal(mqtt_encode_subscribe(&w, 22, uf, NULL, 2), 0);
	assert_int_equal(cl_in(d, buf, w.pos), 0);
	assert_int_equal(expect_ack(d, MQTT_UNSUBACK), 22);
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pid), 0);
	assert_int_equal(mqtt_broker_stats(B)->unknown_acks, 0);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/x", "gone", 0, false, 0, false), 0);
	expect_none(d);
	cl_free(d);
	cl_free(s);
}

/* A 5.0 CONNECT for client id `id`, clean start, Session Expiry Interval expiry_s and Topic
 * Alias Maximum tam (0: none of either). */
static size_t connect5_pkt(uint8_t *out, const char *id, uint32_t expiry_s, uint16_t tam)
{
	size_t il = strlen(id), n = 0;
	uint8_t props[12];
	size_t pl = 0;
	if (expiry_s) {
		props[pl++] = 0x11;
		for (int k = 3; k >= 0; k--)
			props[pl++] = (uint8_t)(expiry_s >> (8 * k));
	}
	if (tam) {
		props[pl++] = 0x22;
		props[pl++] = (uint8_t)(tam >> 8);
		props[pl++] = (uint8_t)tam;
	}
	size_t rl = 10u + 1u + pl + 2u + il;
	out[n++] = 0x10;
	out[n++] = (uint8_t)rl; /* below 128 here */
	static const uint8_t vh[] = { 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 0 };
	memcpy(out + n, vh, sizeof vh);
	n += sizeof vh;
	out[n++] = (uint8_t)pl;
	memcpy(out + n, props, pl);
	n += pl;
	out[n++] = 0;
	out[n++] = (uint8_t)il;
	memcpy(out + n, id, il);
	return n + il;
}

/* A 5.0 SUBSCRIBE (or UNSUBSCRIBE when unsub) of one filter with options opts and
 * Subscription Identifier sub_id (below 16384; 0: none). */
static size_t subscribe5_pkt(uint8_t *out, uint16_t pid, const char *filter, uint8_t opts, bool unsub,
			     uint32_t sub_id)
{
	size_t fl = strlen(filter), n = 0;
	size_t pl = sub_id ? (sub_id < 128 ? 2u : 3u) : 0u;
	size_t rl = 2u + 1u + pl + 2u + fl + (unsub ? 0u : 1u);
	out[n++] = unsub ? 0xA2 : 0x82;
	out[n++] = (uint8_t)rl;
	out[n++] = (uint8_t)(pid >> 8);
	out[n++] = (uint8_t)pid;
	out[n++] = (uint8_t)pl;
	if (sub_id) {
		out[n++] = 0x0B;
		if (sub_id < 128) {
			out[n++] = (uint8_t)sub_id;
		} else {
			out[n++] = (uint8_t)(0x80 | (sub_id & 0x7f));
			out[n++] = (uint8_t)(sub_id >> 7);
		}
	}
	out[n++] = 0;
	out[n++] = (uint8_t)fl;
	memcpy(out + n, filter, fl);
	n += fl;
	if (!unsub)
		out[n++] = opts;
	return n;
}

/* A 5.0 client connected as id (of identity cl's), the CONNACK read. */
static void connect5(struct client *cl, const char *id, uint32_t expiry_s, uint16_t tam)
{
	uint8_t pkt[64];
	assert_int_equal(cl_in(cl, pkt, connect5_pkt(pkt, id, expiry_s, tam)), 0);
	uint8_t t, f;
	const uint8_t *b;
	size_t len;
	assert_true(cl_next(cl, &t, &f, &b, &len));
	assert_int_equal(t, MQTT_CONNACK);
	assert_int_equal(b[1], 0);
}

/* The reason code of the SUBACK or UNSUBACK that answers one filter. */
static uint8_t sub5(struct client *cl, uint16_t pid, const char *filter, uint8_t opts, bool unsub, uint32_t sub_id)
{
	uint8_t pkt[128], t, f;
	const uint8_t *b;
	size_t len;
	assert_int_equal(cl_in(cl, pkt, subscribe5_pkt(pkt, pid, filter, opts, unsub, sub_id)), 0);
	assert_true(cl_next(cl, &t, &f, &b, &len));
	assert_int_equal(t, unsub ? MQTT_UNSUBACK : MQTT_SUBACK);
	return b[len - 1];
}

/* How many PUBLISHes are waiting for cl (read). */
static int count_pubs(struct client *cl)
{
	uint8_t t, f;
	const uint8_t *b;
	size_t len;
	int n = 0;
	while (cl_next(cl, &t, &f, &b, &len))
		n += t == MQTT_PUBLISH;
	return n;
}

/* A kept session ends once its Session Expiry Interval passed after its connection ended:
 * here a 3.1.1 clean-session-0 session under cfg.max_session_expiry_s (30 s), with a
 * queued message; reconnecting before that keeps it (and restarts the count). */
static void test_session_expiry(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.max_session_expiry_s = 30;
	restart(&g);
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", false), 0);
	assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 1), 1);
	cl_free(d); /* lost: the 30 s start now */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", "m1", 1, false, 1, false), 0);
	expect_ack(s, MQTT_PUBACK);
	now += 29000;
	mqtt_broker_tick(B, now);
	int present = 0;
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d, "d1", false, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 1); /* 29 s: kept, with its message */
	(void)expect_pub(d, "devices/d1/cmd/a", "m1", 1, 0, 0);
	cl_free(d); /* unacknowledged: stays queued; another 30 s start */
	now += 29000;
	mqtt_broker_tick(B, now);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.sessions, 2);
	now += 2000;
	mqtt_broker_tick(B, now);
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.sessions, 1); /* only the service's */
	assert_int_equal(u.deliveries, 0);
	assert_int_equal(mqtt_broker_stats(B)->sessions_expired, 1);
	assert_int_equal(mqtt_broker_check(B), 0);
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect_full(d, "d1", false, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 0);
	expect_none(d);
	cl_free(d);
	cl_free(s);
}

/* The next packet for cl is a 5.0 QoS 1 PUBLISH on `topic` with payload `payload`; its
 * identifier; *dup: its DUP flag. */
static uint16_t next_pub5(struct client *cl, const char *topic, const char *payload, int *dup)
{
	uint8_t t, f;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(cl, &t, &f, &b, &n));
	assert_int_equal(t, MQTT_PUBLISH);
	assert_int_equal((f >> 1) & 3, 1);
	*dup = f >> 3;
	size_t tl = (size_t)(b[0] << 8 | b[1]);
	assert_int_equal(tl, strlen(topic));
	assert_memory_equal(b + 2, topic, tl);
	uint16_t pid = (uint16_t)(b[2 + tl] << 8 | b[3 + tl]);
	size_t off = 4 + tl;
	assert_true(b[off] < 128);
	off += 1u + b[off]; /* properties */
	assert_int_equal(n - off, strlen(payload));
	assert_memory_equal(b + off, payload, n - off);
	return pid;
}

/* A session's in-flight messages sent again at a reconnect respect the Receive Maximum of
 * the client that came back [MQTT-3.3.4-9], with their own identifiers and DUP
 * [MQTT-4.4.0-1]: four in flight on a 3.1.1 connection, a 5.0 client with Receive Maximum
 * 2 gets two, then one more per acknowledgement, then the queued one as new. */
static void test_receive_max_at_resume(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", false), 0);
	assert_int_equal(cl_sub(d, "devices/d1/cmd/#", 1), 1);
	static const char *const msg[] = { "m0", "m1", "m2", "m3", "m4" };
	uint16_t pid[5];
	for (int i = 0; i < 4; i++) {
		assert_int_equal(cl_pub(s, "devices/d1/cmd/a", msg[i], 1, false, (uint16_t)(10 + i), false), 0);
		expect_ack(s, MQTT_PUBACK);
		pid[i] = expect_pub(d, "devices/d1/cmd/a", msg[i], 1, 0, 0);
	}
	cl_free(d); /* four in flight, none acknowledged */
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", msg[4], 1, false, 20, false), 0);
	expect_ack(s, MQTT_PUBACK);
	/* back as 5.0: Clean Start 0, Session Expiry Interval 60, Receive Maximum 2 */
	static const uint8_t conn[] = { 0x10, 23, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x00, 0, 0,
					8, 0x11, 0, 0, 0, 60, 0x21, 0, 2, 0, 2, 'd', '1' };
	d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_in(d, conn, sizeof conn), 0);
	uint8_t t, f;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(d, &t, &f, &b, &n));
	assert_int_equal(t, MQTT_CONNACK);
	assert_int_equal(b[0], 1); /* session present */
	assert_int_equal(b[1], 0);
	int dup;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(next_pub5(d, "devices/d1/cmd/a", msg[i], &dup), pid[i]);
		assert_int_equal(dup, 1);
	}
	expect_none(d); /* the client holds two: its maximum */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(cl_ack(d, MQTT_PUBACK, pid[i]), 0);
		assert_int_equal(next_pub5(d, "devices/d1/cmd/a", msg[i + 2], &dup), pid[i + 2]);
		assert_int_equal(dup, 1);
		expect_none(d);
	}
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pid[2]), 0);
	pid[4] = next_pub5(d, "devices/d1/cmd/a", msg[4], &dup);
	assert_int_equal(dup, 0); /* the queued one: new */
	expect_none(d);
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pid[3]), 0);
	assert_int_equal(cl_ack(d, MQTT_PUBACK, pid[4]), 0);
	expect_none(d);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.deliveries, 0);
	cl_free(d);
	cl_free(s);
}

/* A 5.0 client's Maximum Packet Size bounds every packet the broker sends it
 * [MQTT-3.1.2-24]: a CONNACK leaves properties out until it fits (first those whose absence
 * means the same); a SUBACK that cannot fit ends the connection instead of being sent; a
 * client whose maximum is below a bare CONNACK is closed without one. */
static void test_tiny_max_packet(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.max_sub_ids = 8;
	g.topic_alias_max = 4;
	restart(&g);
	for (uint32_t max = 4; max <= 40; max++) {
		/* CONNECT: Clean Start, Maximum Packet Size `max` */
		uint8_t conn[] = { 0x10, 20, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 0, 5, 0x27,
				   (uint8_t)(max >> 24), (uint8_t)(max >> 16), (uint8_t)(max >> 8), (uint8_t)max,
				   0, 2, 'd', '1' };
		struct client *d = cl_new("d1", MQTT_ID_DEVICE);
		int rc = cl_in(d, conn, sizeof conn);
		uint8_t t, f;
		const uint8_t *b;
		size_t n;
		if (max < 5) { /* nothing fits */
			assert_int_equal(rc, -E_CLOSED);
			assert_false(cl_next(d, &t, &f, &b, &n));
			cl_free(d);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_true(cl_next(d, &t, &f, &b, &n));
		assert_int_equal(t, MQTT_CONNACK);
		assert_true(n + 2 <= max); /* (remaining length below 128: a 2-byte fixed header) */
		assert_int_equal(b[1], 0);
		size_t props = b[2];
		if (max >= 20) /* room for everything: all five properties */
			assert_int_equal(props, 15);
		else
			assert_true(props < 15);
		for (size_t i = 3; i < 3 + props;) { /* what is said is true */
			uint8_t id = b[i];
			if (id == 0x29 || id == 0x2A) { /* availability: both offered here */
				assert_int_equal(b[i + 1], id == 0x29 ? 1 : 0);
				i += 2;
			} else if (id == 0x21 || id == 0x22) {
				i += 3;
			} else {
				assert_int_equal(id, 0x27);
				i += 5;
			}
		}
		/* a SUBSCRIBE of five filters: its SUBACK is 10 bytes */
		static const uint8_t sub6[] = { 0x82, 35, 0, 1, 0, 0, 4, 'x', '/', 'y', '1', 0, 0, 4, 'x', '/', 'y', '2', 0,
						0, 4, 'x', '/', 'y', '3', 0, 0, 4, 'x', '/', 'y', '4', 0, 0, 1, 'z', 0 };
		rc = cl_in(d, sub6, sizeof sub6);
		if (max < 10) {
			assert_int_equal(rc, -E_CLOSED);
			while (cl_next(d, &t, &f, &b, &n)) /* a DISCONNECT, if one fits; never a SUBACK */
				assert_true(t == MQTT_DISCONNECT && n + 2 <= max);
		} else {
			assert_int_equal(rc, 0);
			assert_true(cl_next(d, &t, &f, &b, &n));
			assert_int_equal(t, MQTT_SUBACK);
			assert_int_equal(n, 8);
		}
		cl_free(d);
	}
}

/* A 5.0 PUBLISH the ACL refuses is answered with its reason [MQTT-3.4.2-1]: PUBACK 0x87 at
 * QoS 1, PUBREC 0x87 at QoS 2 (the flow ends there: nothing awaits a PUBREL); nothing is
 * routed, and the connection goes on serving. */
static void test_acl_refused_publish5(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_sub(s, "devices/+/telemetry/#", 1), 1);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	connect5(d, "d1", 0, 0);
	/* QoS 1 and QoS 2 to another device's topic: refused with 0x87 */
	static const char t2[] = "devices/d2/telemetry/x";
	uint8_t pkt[64];
	for (uint8_t q = 1; q <= 2; q++) {
		size_t n = 0, tl = sizeof t2 - 1;
		pkt[n++] = (uint8_t)(0x30 | q << 1);
		pkt[n++] = (uint8_t)(2 + tl + 2 + 1 + 2);
		pkt[n++] = 0;
		pkt[n++] = (uint8_t)tl;
		memcpy(pkt + n, t2, tl);
		n += tl;
		pkt[n++] = 0;
		pkt[n++] = (uint8_t)(7 + q); /* packet identifier */
		pkt[n++] = 0;                /* no properties */
		pkt[n++] = 'n';
		pkt[n++] = 'o';
		assert_int_equal(cl_in(d, pkt, n), 0);
		uint8_t t, f;
		const uint8_t *b;
		size_t len;
		assert_true(cl_next(d, &t, &f, &b, &len));
		assert_int_equal(t, q == 1 ? MQTT_PUBACK : MQTT_PUBREC);
		assert_int_equal(len, 3);
		assert_int_equal(b[1], 7 + q);
		assert_int_equal(b[2], 0x87);
		expect_none(d);
	}
	expect_none(s); /* nothing routed */
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.deliveries, 0); /* no inbound QoS 2 record waits for a PUBREL */
	assert_int_equal(mqtt_broker_stats(B)->acl_denied_pub, 2);
	/* still serving: its own topic at QoS 1 is acknowledged 0x00 and routed */
	static const char t3[] = "devices/d1/telemetry/x";
	size_t n = 0, tl = sizeof t3 - 1;
	pkt[n++] = 0x32;
	pkt[n++] = (uint8_t)(2 + tl + 2 + 1 + 2);
	pkt[n++] = 0;
	pkt[n++] = (uint8_t)tl;
	memcpy(pkt + n, t3, tl);
	n += tl;
	pkt[n++] = 0;
	pkt[n++] = 20;
	pkt[n++] = 0;
	pkt[n++] = 'o';
	pkt[n++] = 'k';
	assert_int_equal(cl_in(d, pkt, n), 0);
	assert_int_equal(expect_ack(d, MQTT_PUBACK), 20);
	(void)expect_pub(s, t3, "ok", 1, 0, 0);
	cl_free(d);
	cl_free(s);
}

/* The Subscription Identifiers in a 5.0 PUBLISH at `body` (len bytes, QoS q): how many,
 * into ids. */
static int publish5_sub_ids(const uint8_t *body, size_t len, int q, uint32_t *ids, int cap)
{
	size_t i = 2u + (size_t)((body[0] << 8) | body[1]) + (q ? 2u : 0u);
	uint32_t plen = 0;
	for (int shift = 0; i < len; shift += 7) {
		uint8_t c = body[i++];
		plen |= (uint32_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	size_t end = i + plen;
	int n = 0;
	while (i < end) {
		uint8_t id = body[i++];
		assert_int_equal(id, 0x0B); /* nothing else was published with it */
		uint32_t v = 0;
		for (int shift = 0; i < end; shift += 7) {
			uint8_t c = body[i++];
			v |= (uint32_t)(c & 0x7f) << shift;
			if (!(c & 0x80))
				break;
		}
		if (n < cap)
			ids[n] = v;
		n++;
	}
	return n;
}

/* MQTT 5.0 Subscription Identifiers: kept with each subscription (replaced or removed with
 * it), every matching subscription's identifier in the PUBLISH [MQTT-3.3.4-3], none for a
 * subscription made without one, a service's absolute filters and a device's own relative
 * ones alike; a full table refuses the filter (0x97) and the table never leaks. */
static void test_subscription_ids(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.max_sub_ids = 3;
	restart(&g);
	struct client *s = cl_new("admin", MQTT_ID_SERVICE); /* may publish anywhere */
	assert_int_equal(cl_connect(s, "admin", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	connect5(d, "d1", 0, 0);
	/* devices/d1/cmd/# with identifier 7, devices/d1/cmd/a with 300 (two bytes), then
	 * devices/d1/+/a without one */
	assert_int_equal(sub5(d, 1, "devices/d1/cmd/#", 1, false, 7), 1);
	assert_int_equal(sub5(d, 2, "devices/d1/cmd/a", 1, false, 300), 1);
	assert_int_equal(sub5(d, 3, "devices/d1/+/a", 0, false, 0), 0);
	uint8_t t, f;
	const uint8_t *b;
	size_t len;
	assert_int_equal(B->n_sids, 2);
	uint32_t ids[4];
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", "x", 0, false, 0, false), 0);
	assert_true(cl_next(d, &t, &f, &b, &len));
	assert_int_equal(t, MQTT_PUBLISH);
	assert_int_equal(publish5_sub_ids(b, len, 0, ids, 4), 2);
	assert_true((ids[0] == 7 && ids[1] == 300) || (ids[0] == 300 && ids[1] == 7));
	assert_int_equal(cl_pub(s, "devices/d1/cmd/b", "y", 0, false, 0, false), 0);
	assert_true(cl_next(d, &t, &f, &b, &len));
	assert_int_equal(publish5_sub_ids(b, len, 0, ids, 4), 1);
	assert_int_equal(ids[0], 7);
	assert_int_equal(cl_pub(s, "devices/d1/x/a", "z", 0, false, 0, false), 0);
	assert_true(cl_next(d, &t, &f, &b, &len));
	assert_int_equal(publish5_sub_ids(b, len, 0, ids, 4), 0); /* matched only the one without */
	/* devices/d1/cmd/a again without an identifier: its 300 is gone */
	assert_int_equal(sub5(d, 4, "devices/d1/cmd/a", 1, false, 0), 1);
	assert_int_equal(B->n_sids, 1);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/a", "w", 0, false, 0, false), 0);
	assert_true(cl_next(d, &t, &f, &b, &len));
	assert_int_equal(publish5_sub_ids(b, len, 0, ids, 4), 1);
	assert_int_equal(ids[0], 7);
	assert_int_equal(mqtt_broker_check(B), 0);
	cl_free(d); /* its session ends: every identifier given back */
	assert_int_equal(B->n_sids, 0);
	assert_int_equal(mqtt_broker_check(B), 0);
	cl_free(s);
}

/* A 5.0 PUBLISH at body (QoS 0): its topic's length and its Topic Alias (0: none). */
static void publish5_alias(const uint8_t *body, size_t len, size_t *tlen, uint16_t *alias)
{
	*tlen = (size_t)((body[0] << 8) | body[1]);
	size_t i = 2u + *tlen;
	assert_true(i < len && body[i] < 0x80); /* a one-byte property length here */
	size_t end = i + 1u + body[i];
	*alias = 0;
	for (i++; i < end;) {
		if (body[i] == 0x23) {
			*alias = (uint16_t)((body[i + 1] << 8) | body[i + 2]);
			i += 3;
		} else {
			fail_msg("unexpected property 0x%02x", body[i]);
		}
	}
}

/* Outbound Topic Aliases (MQTT 5.0 3.3.2.3.4): within the client's Topic Alias Maximum (2
 * here), a topic the client has an alias for goes without its bytes, a new one takes a
 * free alias and then replaces them in turn; a PUBLISH the transport refused sets nothing. */
static void test_topic_alias_out(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.topic_alias_max = 4; /* ours; the client's 2 is the smaller */
	restart(&g);
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	connect5(d, "d1", 0, 2);
	assert_int_equal(sub5(d, 1, "devices/d1/cmd/#", 0, false, 0), 0);
	uint8_t t, f;
	const uint8_t *b;
	size_t len;
	/* topic (its last letter), then the alias and whether the topic's bytes are there */
	static const struct { char last; uint16_t alias; bool full; } want[] = {
		{ 'a', 1, true }, { 'a', 1, false }, { 'b', 2, true }, { 'b', 2, false },
		{ 'c', 1, true }, /* replaces a's */ { 'a', 2, true } /* replaces b's */, { 'c', 1, false },
	};
	for (size_t i = 0; i < ARRAY_LEN(want); i++) {
		char topic[] = "devices/d1/cmd/x";
		topic[sizeof topic - 2] = want[i].last;
		if (i == 4) { /* refused by the transport: nothing set, then sent again */
			d->refuse_send = 1;
			assert_int_equal(cl_pub(s, topic, "p", 0, false, 0, false), 0);
			expect_none(d);
			d->refuse_send = 0;
		}
		assert_int_equal(cl_pub(s, topic, "p", 0, false, 0, false), 0);
		assert_true(cl_next(d, &t, &f, &b, &len));
		assert_int_equal(t, MQTT_PUBLISH);
		size_t tl;
		uint16_t alias;
		publish5_alias(b, len, &tl, &alias);
		assert_int_equal(alias, want[i].alias);
		assert_int_equal(tl, want[i].full ? sizeof topic - 1 : 0);
		if (want[i].full)
			assert_memory_equal(b + 2, topic, tl);
	}
	assert_int_equal(mqtt_broker_stats(B)->aliases_out_set, 4);
	cl_free(d);
	cl_free(s);
}

/* Shared subscriptions (MQTT 5.0 4.8.2) on a broker that is the only shard: each message to
 * one member of the group, in turn; a member without a connection is passed over while
 * another has one (its session still a member); another group on the same filter gets its
 * own copy; no retained message at the SUBSCRIBE; leaving the group, and the group's end with
 * its last member; not offered (0x9E) when cfg.max_shared_groups is 0. */
static void test_shared_subscriptions(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	g.max_shared_groups = 2;
	restart(&g);
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	assert_int_equal(cl_pub(d, "devices/d1/telemetry/r", "kept", 0, true, 0, false), 0); /* retained */
	struct client *a = cl_new("svc", MQTT_ID_SERVICE), *b2 = cl_new("svc", MQTT_ID_SERVICE);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	connect5(a, "svc/a", 0, 0);
	connect5(b2, "svc/b", 60, 0); /* kept when it leaves */
	connect5(o, "svc/o", 0, 0);
	const char *grp = "$share/g/devices/+/telemetry/#";
	assert_int_equal(sub5(a, 1, grp, 0, false, 0), 0);
	assert_int_equal(sub5(b2, 1, grp, 0, false, 0), 0);
	assert_int_equal(sub5(o, 1, "$share/other/devices/+/telemetry/#", 0, false, 0), 0);
	assert_int_equal(count_pubs(a) + count_pubs(b2) + count_pubs(o), 0); /* no retained */
	assert_int_equal(B->n_groups, 2);
	for (int i = 0; i < 10; i++)
		assert_int_equal(cl_pub(d, "devices/d1/telemetry/x", "m", 0, false, 0, false), 0);
	assert_int_equal(count_pubs(a), 5);
	assert_int_equal(count_pubs(b2), 5);
	assert_int_equal(count_pubs(o), 10); /* its own group: every message */
	/* svc/b leaves (its session kept, still a member): every message to svc/a */
	cl_free(b2);
	for (int i = 0; i < 6; i++)
		assert_int_equal(cl_pub(d, "devices/d1/telemetry/x", "m", 0, false, 0, false), 0);
	assert_int_equal(count_pubs(a), 6);
	/* svc/a leaves the group: svc/b's kept session is the only member (QoS 0 is not queued) */
	assert_int_equal(sub5(a, 2, grp, 0, true, 0), 0x00);
	assert_int_equal(sub5(a, 3, grp, 0, true, 0), 0x11); /* no longer a member */
	assert_int_equal(cl_pub(d, "devices/d1/telemetry/x", "m", 0, false, 0, false), 0);
	assert_int_equal(count_pubs(a), 0);
	assert_int_equal(B->n_groups, 2);
	assert_int_equal(mqtt_broker_check(B), 0);
	/* the kept session comes back clean: its membership ends, and with it the group */
	b2 = cl_new("svc", MQTT_ID_SERVICE);
	connect5(b2, "svc/b", 0, 0);
	assert_int_equal(B->n_groups, 1);
	assert_int_equal(count_pubs(o), 7);
	cl_free(b2);
	cl_free(o);
	assert_int_equal(B->n_groups, 0);
	cl_free(a);
	cl_free(d);
	/* not offered: refused as the CONNACK says */
	g.max_shared_groups = 0;
	restart(&g);
	a = cl_new("svc", MQTT_ID_SERVICE);
	connect5(a, "svc/a", 0, 0);
	assert_int_equal(sub5(a, 1, grp, 0, false, 0), 0x9E);
	cl_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_client_id_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drops_per_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pubsub_qos_and_overlap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dollar_topics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sys_topics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_console_and_kick, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_will, setup, teardown),
		cmocka_unit_test_setup_teardown(test_takeover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qos1_redelivery_and_offline_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inflight_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qos2_both_ways, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acl, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_bytes_slow_refill, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_per_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_qos1_never_acknowledged_and_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_table_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_service_own_bucket, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_service_eviction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate_bucket_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_rate_limited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subscription_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_targets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_timeout_and_pools, setup, teardown),
		cmocka_unit_test_setup_teardown(test_multi_filter_resubscribe_unsubscribe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_receive_max_at_resume, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiny_max_packet, setup, teardown),
		cmocka_unit_test_setup_teardown(test_acl_refused_publish5, setup, teardown),
		cmocka_unit_test_setup_teardown(test_subscription_ids, setup, teardown),
		cmocka_unit_test_setup_teardown(test_topic_alias_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shared_subscriptions, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
