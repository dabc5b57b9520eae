/* SPDX-License-Identifier: MIT
 * The broker's durability (mqtt/durable.c, docs/DURABILITY.md) against a fake storage that
 * records every event and barrier: which events each packet produces, acknowledgements
 * held until their commit and released in arrival order, a commit that fails closing the
 * connection instead of acknowledging, tickets waiting for other shards, a full link or
 * ring refusing before anything is promised, and the restore of every kind of state at
 * boot, including what does not fit.
 */
#include "tests/unit/mqtt/broker_harness.h"

/* ---- fake storage ---- */
#define MAX_EV 256
struct ev {
	uint8_t kind, qos, retain, id_kind;
	uint16_t pid;
	uint64_t skey, mkey, seq;
	char text[64]; /* id, or topic/filter */
	size_t payload_len, props_len;
	uint32_t expiry_s;
};
static struct ev g_ev[MAX_EV];
static size_t g_n_ev;
static uint32_t g_barrier[64];
static size_t g_n_barrier;
static bool g_room = true;
static int g_record_fails_at = -1; /* event index that the link refuses */
static uint32_t g_fanout_answers;  /* what the fake fan-out says will answer */
static uint32_t g_fanout_ticket;

static int s_record(void *ctx, const struct mqtt_pev *e)
{
	(void)ctx;
	assert_true(g_n_ev < MAX_EV);
	if ((int)g_n_ev == g_record_fails_at) {
		g_record_fails_at = -1;
		return -E_NOMEM;
	}
	struct ev *v = &g_ev[g_n_ev++];
	memset(v, 0, sizeof *v);
	v->kind = e->kind;
	v->qos = e->qos;
	v->retain = e->retain;
	v->id_kind = e->id_kind;
	v->pid = e->pid;
	v->skey = e->skey;
	v->mkey = e->mkey;
	v->seq = e->seq;
	v->props_len = e->props_len;
	v->expiry_s = e->expiry_s;
	const uint8_t *t = e->id_len ? e->id : e->topic;
	size_t tl = e->id_len ? e->id_len : e->topic_len;
	if (tl)
		memcpy(v->text, t, MIN(tl, sizeof v->text - 1));
	v->payload_len = e->payload_len;
	return 0;
}
static int s_barrier(void *ctx, uint32_t ticket)
{
	(void)ctx;
	assert_true(g_n_barrier < 64);
	g_barrier[g_n_barrier++] = ticket;
	return 0;
}
static bool s_room(void *ctx, size_t bytes)
{
	(void)ctx;
	(void)bytes;
	return g_room;
}
static uint32_t f_fanout(void *ctx, const struct mqtt_message *m, uint32_t ticket)
{
	(void)ctx, (void)m;
	g_fanout_ticket = ticket;
	return ticket ? g_fanout_answers : 0;
}

/* A message for the restore and remote-route calls (text topic and payload). */
static struct mqtt_message msg_of(const char *topic, const char *payload, uint8_t qos, bool retain)
{
	return (struct mqtt_message){ .topic = (const uint8_t *)topic, .topic_len = strlen(topic),
				      .payload = (const uint8_t *)payload, .payload_len = strlen(payload),
				      .qos = qos, .retain = retain };
}
static bool f_room(void *ctx, const uint8_t *topic, size_t tlen, size_t bytes, bool retain)
{
	(void)ctx, (void)topic, (void)tlen, (void)bytes, (void)retain;
	return true;
}

static void reset_fake(void)
{
	g_n_ev = g_n_barrier = 0;
	g_room = true;
	g_record_fails_at = -1;
	g_fanout_answers = 0;
	g_fanout_ticket = 0;
}

#define KEY_BASE (UINT64_C(7) << 40)

static void start_durable(struct mqtt_broker_config *g, bool sharded)
{
	reset_fake();
	g_store = (struct mqtt_store_ops){ .record = s_record, .barrier = s_barrier, .room = s_room };
	g->max_held = g->max_held ? g->max_held : 16;
	start(g);
	if (sharded) { /* the harness's ops have no fan-out: give the broker one */
		B->ops.fanout = f_fanout;
		B->ops.fanout_room = f_room;
	}
	assert_int_equal(mqtt_broker_restore_begin(B, KEY_BASE), 0);
	mqtt_broker_restore_end(B);
}

static int setup_durable(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	start_durable(&g, false);
	return 0;
}

static int teardown_durable(void **state)
{
	int rc = teardown(state);
	g_store = (struct mqtt_store_ops){ 0 };
	return rc;
}

/* The events of kind k since index from. */
static size_t count_ev(size_t from, uint8_t k)
{
	size_t n = 0;
	for (size_t i = from; i < g_n_ev; i++)
		n += g_ev[i].kind == k;
	return n;
}
static const struct ev *last_ev(uint8_t k)
{
	for (size_t i = g_n_ev; i-- > 0;)
		if (g_ev[i].kind == k)
			return &g_ev[i];
	return NULL;
}

/* SUBSCRIBE without waiting for the SUBACK (it may be held). */
static void sub_send(struct client *cl, const char *filter, uint8_t qos)
{
	uint8_t buf[256];
	struct wcur w = wcur_make(buf, sizeof buf);
	const char *f[] = { filter };
	assert_int_equal(mqtt_encode_subscribe(&w, 1, f, &qos, 1), 0);
	assert_int_equal(cl_in(cl, buf, w.pos), 0);
}

static void expect_suback(struct client *cl, uint8_t code)
{
	uint8_t t, fl;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(cl, &t, &fl, &b, &n));
	assert_int_equal(t, MQTT_SUBACK);
	assert_int_equal(n, 3);
	assert_int_equal(b[2], code);
}

/* A persistent device subscribed to its own commands, its SUBACK committed. */
static struct client *persistent_sub(const char *id, uint8_t qos)
{
	struct client *s = cl_new(id, MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(s, id, false), 0);
	char f[64];
	snprintf(f, sizeof f, "devices/%s/cmd/#", id);
	size_t b0 = g_n_barrier;
	sub_send(s, f, qos);
	expect_none(s);                       /* held: the subscription is not durable yet */
	assert_int_equal(g_n_barrier, b0 + 1);
	mqtt_broker_durable(B, g_barrier[b0], true);
	expect_suback(s, qos);
	return s;
}

/* ---- tests ---- */

static void t_clean_sessions_never_wait(void **state)
{
	(void)state;
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_sub(s, "devices/+/telemetry/#", 1), 1); /* SUBACK at once */
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(d, "d1", true), 0);
	size_t e0 = g_n_ev;
	assert_int_equal(cl_pub(d, "devices/d1/telemetry/t", "x", 1, false, 5, false), 0);
	assert_int_equal(expect_ack(d, MQTT_PUBACK), 5); /* nothing persistent: at once */
	(void)expect_pub(s, "devices/d1/telemetry/t", "x", 1, 0, 0);
	assert_int_equal(g_n_ev, e0);
	assert_int_equal(g_n_barrier, 0);
	/* the registry saw both identities */
	assert_int_equal(count_ev(0, MQTT_PEV_SEEN), 2);
	assert_int_equal(count_ev(0, MQTT_PEV_SESS_PUT), 0);
	cl_free(d);
	cl_free(s);
}

/* The broker's own $SYS messages are retained in memory but never stored; a client's
 * retained message is. */
static void t_sys_retained_never_stored(void **state)
{
	(void)state;
	size_t e0 = g_n_ev;
	assert_int_equal(mqtt_broker_publish_sys(B, (const uint8_t *)"$SYS/urmqtt/uptime", 18, (const uint8_t *)"12", 2), 0);
	assert_int_equal(mqtt_broker_publish_sys(B, (const uint8_t *)"$SYS/urmqtt/uptime", 18, NULL, 0), 0);
	assert_int_equal(count_ev(e0, MQTT_PEV_RET_PUT) + count_ev(e0, MQTT_PEV_RET_DEL), 0);
	struct client *s = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(s, "svc", true), 0);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/x", "r", 0, true, 0, false), 0);
	assert_int_equal(count_ev(e0, MQTT_PEV_RET_PUT), 1);
	assert_int_equal(cl_pub(s, "devices/d1/cmd/x", "", 0, true, 0, false), 0);
	cl_free(s);
}

static void t_puback_waits_for_the_commit(void **state)
{
	(void)state;
	struct client *s = persistent_sub("d1", 1);
	const struct ev *sp = last_ev(MQTT_PEV_SESS_PUT);
	assert_non_null(sp);
	assert_true(sp->skey > KEY_BASE);
	assert_string_equal(last_ev(MQTT_PEV_SUB_PUT)->text, "devices/d1/cmd/#");
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	size_t e0 = g_n_ev, b0 = g_n_barrier;
	assert_int_equal(cl_pub(o, "devices/d1/cmd/go", "now", 1, false, 9, false), 0);
	uint16_t pid = expect_pub(s, "devices/d1/cmd/go", "now", 1, 0, 0); /* live at once */
	expect_none(o);                                                   /* PUBACK held */
	assert_int_equal(count_ev(e0, MQTT_PEV_MSG_PUT), 1);
	/* sent at once: one record says queued and sent (with its packet id) */
	assert_int_equal(count_ev(e0, MQTT_PEV_DLV_PUT), 1);
	assert_int_equal(count_ev(e0, MQTT_PEV_DLV_SENT), 0);
	const struct ev *dp = last_ev(MQTT_PEV_DLV_PUT);
	assert_int_equal(dp->skey, sp->skey);
	assert_int_equal(dp->mkey, last_ev(MQTT_PEV_MSG_PUT)->mkey);
	assert_int_equal(dp->pid, pid);
	assert_int_equal(g_n_barrier, b0 + 1);
	assert_int_equal(mqtt_broker_held(B), 1);
	mqtt_broker_durable(B, g_barrier[b0], true);
	assert_int_equal(expect_ack(o, MQTT_PUBACK), 9);
	assert_int_equal(mqtt_broker_held(B), 0);
	/* the subscriber's PUBACK deletes the stored delivery */
	size_t e1 = g_n_ev;
	assert_int_equal(cl_ack(s, MQTT_PUBACK, pid), 0);
	assert_int_equal(count_ev(e1, MQTT_PEV_DLV_DEL), 1);
	assert_int_equal(last_ev(MQTT_PEV_DLV_DEL)->mkey, dp->mkey);
	cl_free(o);
	cl_free(s);
}

static void t_acks_leave_in_arrival_order(void **state)
{
	(void)state;
	struct client *s = persistent_sub("d1", 1);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	size_t b0 = g_n_barrier;
	assert_int_equal(cl_pub(o, "devices/d1/cmd/a", "1", 1, false, 1, false), 0); /* stored */
	assert_int_equal(cl_pub(o, "devices/d2/cmd/b", "2", 1, false, 2, false), 0); /* nobody */
	assert_int_equal(cl_pub(o, "devices/d1/cmd/c", "3", 1, false, 3, false), 0); /* stored */
	expect_none(o); /* 2 needs nothing, but must not overtake 1 [MQTT-4.6.0-2] */
	assert_int_equal(g_n_barrier, b0 + 2);
	mqtt_broker_durable(B, g_barrier[b0 + 1], true); /* the third first */
	expect_none(o);
	mqtt_broker_durable(B, g_barrier[b0], true);
	assert_int_equal(expect_ack(o, MQTT_PUBACK), 1);
	assert_int_equal(expect_ack(o, MQTT_PUBACK), 2);
	assert_int_equal(expect_ack(o, MQTT_PUBACK), 3);
	expect_none(o);
	/* a ticket answered twice or never issued is counted, not trusted */
	uint64_t bad = mqtt_broker_stats(B)->durable_bad;
	mqtt_broker_durable(B, g_barrier[b0], true);
	mqtt_broker_durable(B, 0x80001234u, true);
	mqtt_broker_durable(B, 42, true);
	assert_int_equal(mqtt_broker_stats(B)->durable_bad, bad + 3);
	cl_free(o);
	cl_free(s);
}

static void t_failed_commit_closes_unacknowledged(void **state)
{
	(void)state;
	struct client *s = persistent_sub("d1", 1);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	size_t b0 = g_n_barrier;
	assert_int_equal(cl_pub(o, "devices/d1/cmd/a", "1", 1, false, 1, false), 0);
	(void)expect_pub(s, "devices/d1/cmd/a", "1", 1, 0, 0);
	mqtt_broker_durable(B, g_barrier[b0], false);
	expect_none(o);
	assert_true(o->closed); /* [MQTT-4.8.0-2]: the client sends it again */
	assert_int_equal(mqtt_broker_stats(B)->held_failed, 1);
	cl_free(o);
	cl_free(s);
}

static void t_link_refusal_is_never_acknowledged(void **state)
{
	(void)state;
	struct client *s = persistent_sub("d1", 1);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	/* the link is full: refused before anything is routed or promised */
	g_room = false;
	assert_int_equal(cl_pub(o, "devices/d1/cmd/a", "1", 1, false, 1, false), -E_CLOSED);
	expect_none(s);
	cl_free(o);
	g_room = true;
	/* an event the link refuses mid-route: that acknowledgement fails */
	o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	g_record_fails_at = (int)g_n_ev + 1; /* the DLV_PUT after the MSG_PUT */
	size_t b0 = g_n_barrier;
	assert_int_equal(cl_pub(o, "devices/d1/cmd/b", "2", 1, false, 2, false), 0);
	(void)expect_pub(s, "devices/d1/cmd/b", "2", 1, 0, 0);
	assert_int_equal(g_n_barrier, b0 + 1);
	mqtt_broker_durable(B, g_barrier[b0], true); /* committed what it got: still refused */
	expect_none(o);
	assert_true(o->closed);
	assert_true(mqtt_broker_stats(B)->store_lost >= 1);
	cl_free(o);
	cl_free(s);
}

static void t_tickets_wait_for_every_shard(void **state)
{
	(void)state;
	mqtt_broker_fini(B);
	free(g_mem);
	struct mqtt_broker_config g = base_cfg();
	start_durable(&g, true);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	/* nothing stored here, two other shards: the PUBACK waits for both of them */
	g_fanout_answers = 2;
	assert_int_equal(cl_pub(o, "devices/d9/cmd/x", "1", 1, false, 7, false), 0);
	uint32_t t = g_fanout_ticket;
	assert_true(t & 0x80000000u);
	assert_int_equal(g_n_barrier, 0); /* no event here: no barrier of our own */
	mqtt_broker_durable(B, t, true);
	expect_none(o);
	mqtt_broker_durable(B, t, true);
	assert_int_equal(expect_ack(o, MQTT_PUBACK), 7);
	/* QoS 0 carries no ticket; a will carries none either */
	assert_int_equal(cl_pub(o, "devices/d9/cmd/x", "0", 0, false, 0, false), 0);
	assert_int_equal(g_fanout_ticket, 0);
	/* one shard failing to store its part refuses the acknowledgement */
	assert_int_equal(cl_pub(o, "devices/d9/cmd/x", "2", 1, false, 8, false), 0);
	t = g_fanout_ticket;
	mqtt_broker_durable(B, t, false);
	mqtt_broker_durable(B, t, true);
	assert_true(o->closed);
	cl_free(o);
}

static void t_connection_end_forgets_its_acks(void **state)
{
	(void)state;
	struct client *s = persistent_sub("d1", 1);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	size_t b0 = g_n_barrier;
	assert_int_equal(cl_pub(o, "devices/d1/cmd/a", "1", 1, false, 1, false), 0);
	cl_free(o); /* lost while its PUBACK waits */
	assert_int_equal(mqtt_broker_check(B), 0);
	mqtt_broker_durable(B, g_barrier[b0], true); /* goes nowhere */
	assert_int_equal(mqtt_broker_stats(B)->held_dropped, 1);
	assert_int_equal(mqtt_broker_held(B), 0);
	cl_free(s);
}

static void t_qos2_inbound_identifiers(void **state)
{
	(void)state;
	struct client *s = persistent_sub("d1", 2);
	struct client *d = cl_new("d1p", MQTT_ID_DEVICE); /* a persistent publisher */
	assert_int_equal(cl_connect(d, "d1p", false), 0);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", false), 0); /* persistent: its RX2 is stored */
	size_t e0 = g_n_ev, b0 = g_n_barrier;
	assert_int_equal(cl_pub(o, "devices/d1/cmd/q2", "z", 2, false, 33, false), 0);
	assert_int_equal(count_ev(e0, MQTT_PEV_RX2_PUT), 1);
	assert_int_equal(last_ev(MQTT_PEV_RX2_PUT)->pid, 33);
	expect_none(o);
	mqtt_broker_durable(B, g_barrier[b0], true);
	assert_int_equal(expect_ack(o, MQTT_PUBREC), 33);
	/* PUBREL forgets the identifier; PUBCOMP waits until that is durable */
	size_t e1 = g_n_ev;
	assert_int_equal(cl_ack(o, MQTT_PUBREL, 33), 0);
	assert_int_equal(count_ev(e1, MQTT_PEV_RX2_DEL), 1);
	expect_none(o);
	mqtt_broker_durable(B, g_barrier[b0 + 1], true);
	assert_int_equal(expect_ack(o, MQTT_PUBCOMP), 33);
	/* the subscriber's side of QoS 2: SENT, REC, DONE */
	uint16_t pid = expect_pub(s, "devices/d1/cmd/q2", "z", 2, 0, 0);
	size_t e2 = g_n_ev;
	assert_int_equal(cl_ack(s, MQTT_PUBREC, pid), 0);
	assert_int_equal(expect_ack(s, MQTT_PUBREL), pid);
	assert_int_equal(count_ev(e2, MQTT_PEV_DLV_REC), 1);
	assert_int_equal(cl_ack(s, MQTT_PUBCOMP, pid), 0);
	assert_int_equal(count_ev(e2, MQTT_PEV_DLV_DONE), 1);
	assert_int_equal(last_ev(MQTT_PEV_DLV_DONE)->pid, pid);
	cl_free(o);
	cl_free(d);
	cl_free(s);
}

static void t_offline_queue_events(void **state)
{
	(void)state;
	struct client *s = persistent_sub("d1", 1);
	cl_free(s); /* offline, session kept */
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	size_t e0 = g_n_ev;
	for (int i = 0; i < 10; i++) { /* the queue holds 8: the two oldest are dropped */
		size_t b0 = g_n_barrier;
		assert_int_equal(cl_pub(o, "devices/d1/cmd/q", "m", 1, false, (uint16_t)(i + 1), false), 0);
		mqtt_broker_durable(B, g_barrier[b0], true);
		assert_int_equal(expect_ack(o, MQTT_PUBACK), i + 1);
	}
	assert_int_equal(count_ev(e0, MQTT_PEV_DLV_PUT), 10);
	assert_int_equal(count_ev(e0, MQTT_PEV_DLV_DEL), 2);
	assert_int_equal(count_ev(e0, MQTT_PEV_DLV_SENT), 0);
	/* seq orders the queue */
	uint64_t last = 0;
	for (size_t i = e0; i < g_n_ev; i++)
		if (g_ev[i].kind == MQTT_PEV_DLV_PUT) {
			assert_true(g_ev[i].seq > last);
			last = g_ev[i].seq;
		}
	/* reconnecting sends the window (4) and records each send */
	s = cl_new("d1", MQTT_ID_DEVICE);
	size_t e1 = g_n_ev;
	int present = 0;
	assert_int_equal(cl_connect_full(s, "d1", false, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 1);
	assert_int_equal(count_ev(e1, MQTT_PEV_DLV_SENT), 4);
	assert_int_equal(count_ev(e1, MQTT_PEV_SESS_PUT), 0); /* the session existed */
	/* a clean connection deletes the stored session */
	cl_free(s);
	s = cl_new("d1", MQTT_ID_DEVICE);
	size_t e2 = g_n_ev;
	assert_int_equal(cl_connect(s, "d1", true), 0);
	assert_int_equal(count_ev(e2, MQTT_PEV_SESS_DEL), 1);
	cl_free(s);
	cl_free(o);
}

static void t_retained_recorded_by_the_origin_only(void **state)
{
	(void)state;
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	size_t e0 = g_n_ev;
	assert_int_equal(cl_pub(o, "devices/d1/cmd/r", "keep", 1, true, 4, false), 0);
	assert_int_equal(count_ev(e0, MQTT_PEV_RET_PUT), 1);
	assert_int_equal(last_ev(MQTT_PEV_RET_PUT)->payload_len, 4);
	expect_none(o);                                 /* the retained update is a promise too */
	mqtt_broker_durable(B, g_barrier[g_n_barrier - 1], true);
	assert_int_equal(expect_ack(o, MQTT_PUBACK), 4);
	bool rec = true;
	size_t e1 = g_n_ev;
	struct mqtt_message rm = msg_of("devices/d2/cmd/r", "k", 1, true);
	assert_int_equal(mqtt_broker_route_remote(B, &rm, &rec), 0);
	assert_false(rec); /* a replica: the origin stored it */
	assert_int_equal(g_n_ev, e1);
	assert_int_equal(cl_pub(o, "devices/d1/cmd/r", "", 0, true, 0, false), 0);
	assert_int_equal(count_ev(e1, MQTT_PEV_RET_DEL), 1);
	cl_free(o);
}

/* offline_queue_policy refuse_newest: a copy owed to a persistent session whose queue is
 * full cannot be kept, so the PUBLISH is never acknowledged (here or from another shard). */
static void t_full_queue_refuse_newest_never_acknowledged(void **state)
{
	(void)state;
	mqtt_broker_fini(B);
	free(g_mem);
	struct mqtt_broker_config g = base_cfg();
	g.queue_drop_oldest = false; /* refuse_newest */
	start_durable(&g, false);
	struct client *s = persistent_sub("d1", 1);
	assert_int_equal(cl_simple(s, MQTT_DISCONNECT), -E_CLOSED);
	cl_free(s);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	for (uint16_t i = 1; i <= g.max_queue; i++) { /* the offline queue fills, each one committed */
		size_t b0 = g_n_barrier;
		assert_int_equal(cl_pub(o, "devices/d1/cmd/q", "x", 1, false, i, false), 0);
		mqtt_broker_durable(B, g_barrier[b0], true);
		assert_int_equal(expect_ack(o, MQTT_PUBACK), i);
	}
	assert_int_equal(cl_pub(o, "devices/d1/cmd/q", "y", 1, false, 99, false), -E_CLOSED);
	assert_true(o->closed);   /* no PUBACK: the publisher sends it again later */
	assert_int_equal(mqtt_broker_stats(B)->queue_refused, 1);
	bool rec = true;          /* the same message routed from another shard: refused too */
	struct mqtt_message rm = msg_of("devices/d1/cmd/q", "z", 1, false);
	assert_int_equal(mqtt_broker_route_remote(B, &rm, &rec), -E_NOMEM);
	assert_false(rec);
	cl_free(o);
}

static void t_held_ring_full(void **state)
{
	(void)state;
	mqtt_broker_fini(B);
	free(g_mem);
	struct mqtt_broker_config g = base_cfg();
	g.max_held = 2; /* rounded up to 16 */
	start_durable(&g, false);
	struct client *s = persistent_sub("d1", 1);
	struct client *o = cl_new("svc", MQTT_ID_SERVICE);
	assert_int_equal(cl_connect(o, "svc", true), 0);
	uint16_t i = 1;
	while (cl_pub(o, "devices/d1/cmd/a", "1", 1, false, i, false) == 0) {
		i++;
		assert_true(i < 100);
	}
	assert_int_equal(i, 17); /* 16 held, the 17th refused before it was promised */
	assert_true(mqtt_broker_stats(B)->held_full >= 1);
	cl_free(o);
	cl_free(s);
}

static void t_restore(void **state)
{
	(void)state;
	mqtt_broker_fini(B);
	free(g_mem);
	struct mqtt_broker_config g = base_cfg();
	reset_fake();
	g_store = (struct mqtt_store_ops){ .record = s_record, .barrier = s_barrier, .room = s_room };
	g.max_held = 16;
	start(&g);
	assert_int_equal(mqtt_broker_restore_begin(B, KEY_BASE + 1), -E_INVAL); /* low bits are the counter's */
	assert_int_equal(mqtt_broker_restore_begin(B, KEY_BASE), 0);
	const uint8_t *id = (const uint8_t *)"d1";
	const uint64_t sk = KEY_BASE - 5; /* from an earlier boot */
	assert_int_equal(mqtt_broker_restore_session(B, sk, MQTT_ID_DEVICE, id, 2, 0), 0);
	assert_int_equal(mqtt_broker_restore_session(B, sk, MQTT_ID_DEVICE, id, 2, 0), -E_EXIST);
	/* the duplicate reset the "current" session: name it again through a second one */
	const uint64_t sk2 = sk + 1;
	assert_int_equal(mqtt_broker_restore_session(B, sk2, MQTT_ID_DEVICE, (const uint8_t *)"d2", 2, 0), 0);
	assert_int_equal(mqtt_broker_restore_sub(B, sk, (const uint8_t *)"devices/d1/cmd/#", 16, 1, 0), -E_INVAL);
	assert_int_equal(mqtt_broker_restore_sub(B, sk2, (const uint8_t *)"devices/d2/cmd/#", 16, 1, 0), 0);
	assert_int_equal(mqtt_broker_restore_sub(B, sk2, (const uint8_t *)"devices/+/x/#", 13, 2, 0), 0);
	assert_int_equal(mqtt_broker_restore_sub(B, sk2, (const uint8_t *)"bad/#/x", 7, 1, 0), -E_INVAL);
	assert_int_equal(mqtt_broker_restore_rx2(B, sk2, 77), 0);
	const char *t = "devices/d2/cmd/a";
	/* in queue order: one sent (DUP on reconnect), one released (PUBREL), two queued
	 * sharing one message */
	struct mqtt_message one = msg_of(t, "one", 1, false), two = msg_of(t, "two", 1, false),
			    dup = msg_of(t, "dup", 1, false), x = msg_of(t, "x", 1, false);
	assert_int_equal(mqtt_broker_restore_dlv(B, sk2, 100, 1, 1, false, MQTT_RESTORE_SENT, 5, &one), 0);
	assert_int_equal(mqtt_broker_restore_dlv(B, sk2, 101, 2, 2, false, MQTT_RESTORE_RELEASED, 6, NULL), 0);
	assert_int_equal(mqtt_broker_restore_dlv(B, sk2, 102, 3, 1, true, MQTT_RESTORE_QUEUED, 0, &two), 0);
	assert_int_equal(mqtt_broker_restore_dlv(B, sk2, 102, 4, 1, false, MQTT_RESTORE_QUEUED, 0, &two), 0);
	assert_int_equal(mqtt_broker_restore_dlv(B, sk2, 103, 5, 1, false, MQTT_RESTORE_SENT, 5, &dup),
			 -E_EXIST); /* pid 5 in flight */
	assert_int_equal(mqtt_broker_restore_dlv(B, sk2, 104, 6, 3, false, MQTT_RESTORE_QUEUED, 0, &x), -E_INVAL);
	struct mqtt_message kept = msg_of("devices/d2/cmd/r", "kept", 1, true), bad = msg_of("a/+", "x", 1, true);
	assert_int_equal(mqtt_broker_restore_retained(B, &kept), 0);
	assert_int_equal(mqtt_broker_restore_retained(B, &bad), -E_INVAL);
	assert_int_equal(mqtt_broker_check(B), 0);
	mqtt_broker_restore_end(B);
	const struct mqtt_broker_stats *st = mqtt_broker_stats(B);
	assert_int_equal(st->restored_sessions, 2);
	assert_int_equal(st->restored_subs, 2);
	assert_int_equal(st->restored_dlvs, 4);
	assert_int_equal(st->restored_retained, 1);
	assert_true(st->restore_refused >= 6);
	assert_int_equal(g_n_ev, 0); /* restoring records nothing */
	/* the device comes back: its session is there, in flight first, then the queue */
	struct client *d = cl_new("d2", MQTT_ID_DEVICE);
	int present = 0;
	assert_int_equal(cl_connect_full(d, "d2", false, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 1);
	assert_int_equal(expect_pub(d, "devices/d2/cmd/a", "one", 1, 0, 1), 5);
	assert_int_equal(expect_ack(d, MQTT_PUBREL), 6);
	uint16_t p1 = expect_pub(d, "devices/d2/cmd/a", "two", 1, 1, 0);
	uint16_t p2 = expect_pub(d, "devices/d2/cmd/a", "two", 1, 0, 0);
	assert_true(p1 != 5 && p2 != 5 && p1 != p2);
	expect_none(d);
	/* new keys of this boot carry the base */
	assert_int_equal(cl_ack(d, MQTT_PUBACK, 5), 0);
	assert_int_equal(last_ev(MQTT_PEV_DLV_DEL)->skey, sk2); /* the restored key is kept */
	/* the restored RX2 identifier still answers a duplicate without routing: nothing new
	 * to store, so PUBREC at once */
	size_t b0 = g_n_barrier;
	assert_int_equal(cl_pub(d, "devices/d2/cmd/z", "dup", 2, false, 77, true), 0);
	assert_int_equal(expect_ack(d, MQTT_PUBREC), 77);
	assert_int_equal(g_n_barrier, b0);
	assert_int_equal(mqtt_broker_stats(B)->qos2_dups, 1);
	cl_free(d);
	struct client *n = cl_new("d3", MQTT_ID_DEVICE);
	assert_int_equal(cl_connect(n, "d3", false), 0);
	assert_true(last_ev(MQTT_PEV_SESS_PUT)->skey > KEY_BASE);
	assert_true(last_ev(MQTT_PEV_SESS_PUT)->skey < KEY_BASE + (UINT64_C(1) << 34));
	cl_free(n);
}

/* A message's MQTT 5.0 part rides along: the MSG_PUT of a copy queued for an offline
 * persistent session carries its properties and what is left of its expiry; once the
 * expiry passes, the queued copy is dropped (DLV_DEL) instead of being sent. */
static void t_message_props_and_expiry(void **state)
{
	(void)state;
	struct client *s = persistent_sub("d1", 1);
	assert_int_equal(cl_simple(s, MQTT_DISCONNECT), -E_CLOSED);
	cl_free(s);
	static const uint8_t props[] = { 0x26, 0, 1, 'k', 0, 1, 'v' };
	struct mqtt_message m = msg_of("devices/d1/cmd/x", "p", 1, false);
	m.props = props;
	m.props_len = sizeof props;
	m.expiry_s = 30;
	bool rec = false;
	size_t e0 = g_n_ev;
	assert_int_equal(mqtt_broker_route_remote(B, &m, &rec), 0);
	assert_true(rec);
	const struct ev *ev = last_ev(MQTT_PEV_MSG_PUT);
	assert_int_equal(ev->props_len, sizeof props);
	assert_int_equal(ev->expiry_s, 30);
	now += 31000; /* past its expiry */
	struct client *d = cl_new("d1", MQTT_ID_DEVICE);
	int present = 0;
	assert_int_equal(cl_connect_full(d, "d1", false, 0, NULL, 0, false, &present), 0);
	assert_int_equal(present, 1);
	expect_none(d);
	assert_int_equal(mqtt_broker_stats(B)->expired_dropped, 1);
	assert_int_equal(count_ev(e0, MQTT_PEV_DLV_DEL), 1);
	cl_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_clean_sessions_never_wait, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_sys_retained_never_stored, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_puback_waits_for_the_commit, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_acks_leave_in_arrival_order, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_failed_commit_closes_unacknowledged, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_link_refusal_is_never_acknowledged, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_tickets_wait_for_every_shard, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_connection_end_forgets_its_acks, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_qos2_inbound_identifiers, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_offline_queue_events, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_retained_recorded_by_the_origin_only, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_held_ring_full, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_full_queue_refuse_newest_never_acknowledged, setup_durable,
						 teardown_durable),
		cmocka_unit_test_setup_teardown(t_restore, setup_durable, teardown_durable),
		cmocka_unit_test_setup_teardown(t_message_props_and_expiry, setup_durable, teardown_durable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
