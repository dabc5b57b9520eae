/* SPDX-License-Identifier: MIT
 * The in-process harness of the broker's unit tests (test_broker.c, test_durable.c):
 * a counting heap, fake transports ("clients") that capture what the broker sends, and
 * helpers that send packets and check what comes back. Every teardown checks the
 * invariants and that the counting heap got everything back. Test code only.
 */
#ifndef TESTS_UNIT_MQTT_BROKER_HARNESS_H
#define TESTS_UNIT_MQTT_BROKER_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/broker.h"
#include "mqtt/mqtt_int.h"
#include "mqtt/session.h"

/* ---- counting heap ---- */
static size_t g_live, g_blocks;
static inline void *h_alloc(void *ctx, size_t n)
{
	(void)ctx;
	g_live += n;
	g_blocks++;
	return malloc(n);
}
static inline void h_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	assert_true(g_live >= n);
	g_live -= n;
	g_blocks--;
	free(p);
}

/* ---- fake transport ---- */
struct client {
	struct mqtt_conn *c;
	uint8_t rx[65536];
	size_t rx_len, rx_pos;
	bool closed;
	int refuse_send;
};

static inline int t_send(void *ctx, void *user, const uint8_t *buf, size_t len)
{
	(void)ctx;
	struct client *cl = user;
	if (cl->refuse_send)
		return -E_AGAIN;
	assert_true(cl->rx_len + len <= sizeof cl->rx);
	memcpy(cl->rx + cl->rx_len, buf, len);
	cl->rx_len += len;
	return 0;
}
static inline void t_close(void *ctx, void *user)
{
	(void)ctx;
	struct client *cl = user;
	assert_false(cl->closed);
	cl->closed = true;
	cl->c = NULL;
}

static const char *const svc_pub[] = { "devices/+/cmd/#" };
static const char *const svc_sub[] = { "devices/+/telemetry/#", "devices/+/status" };
static const char *const adm_all[] = { "#", "$ops/#" };
static const struct mqtt_acl_service services[] = {
	{ "svc", svc_pub, svc_sub, 1, 2 },
	{ "admin", adm_all, adm_all, 2, 2 },
};

static inline struct mqtt_broker_config base_cfg(void)
{
	struct mqtt_broker_config g = {
		.max_conns = 16, .max_sessions = 16, .max_nodes = 128, .max_subs = 64,
		.max_deliveries = 128, .max_retained = 16, .max_packet = 4096,
		.heap_limit = 1 << 20, .max_topic_levels = 8, .max_inflight = 4, .max_queue = 8,
		.max_qos2_rx = 4, .max_subs_per_session = 8, .queue_drop_oldest = true,
		.max_violations = 3, .connect_timeout_ms = 10000,
		.services = services, .n_services = 2,
	};
	for (int i = 0; i < 16; i++)
		g.hash_key[i] = (uint8_t)(i * 7 + 1);
	return g;
}

static struct mqtt_broker *B;
static void *g_mem;
static uint64_t now;

/* Storage ops a test may set before start() (all NULL: no persistence). */
static struct mqtt_store_ops g_store;

static inline void start(const struct mqtt_broker_config *g)
{
	struct mqtt_broker_ops ops = { .send = t_send, .close = t_close, .heap = { h_alloc, h_free, NULL },
				       .store = g_store };
	size_t need = mqtt_broker_mem_size(g);
	assert_true(need > 0);
	g_mem = aligned_alloc(8, (need + 7) & ~(size_t)7);
	assert_int_equal(mqtt_broker_init(&B, g_mem, need, g, &ops), 0);
	now = 1000;
}

static inline int setup(void **state)
{
	(void)state;
	struct mqtt_broker_config g = base_cfg();
	start(&g);
	return 0;
}

static inline int teardown(void **state)
{
	(void)state;
	assert_int_equal(mqtt_broker_check(B), 0);
	mqtt_broker_fini(B);
	struct mqtt_broker_usage u;
	mqtt_broker_usage(B, &u);
	assert_int_equal(u.heap_bytes, 0);
	assert_int_equal(g_live, 0); /* nothing leaked */
	assert_int_equal(u.nodes, 0);
	free(g_mem);
	return 0;
}

/* The test's broker replaced by one with configuration g (the old one checked and freed). */
static inline void restart(const struct mqtt_broker_config *g)
{
	(void)teardown(NULL);
	start(g);
}

static inline struct client *cl_new(const char *identity, enum mqtt_id_kind kind)
{
	struct client *cl = calloc(1, sizeof *cl);
	assert_int_equal(mqtt_conn_open(B, (const uint8_t *)identity, strlen(identity), kind, cl,
					now, &cl->c), 0);
	return cl;
}

static inline void cl_free(struct client *cl)
{
	if (cl->c)
		mqtt_conn_lost(B, cl->c, now);
	free(cl);
}

static inline int cl_in(struct client *cl, const uint8_t *p, size_t n)
{
	assert_non_null(cl->c);
	int rc = mqtt_conn_input(B, cl->c, p, n, now);
	if (rc == -E_CLOSED)
		assert_true(cl->closed);
	assert_int_equal(mqtt_broker_check(B), 0);
	return rc;
}

/* Next packet the broker sent to this client; false if none. */
static inline bool cl_next(struct client *cl, uint8_t *type, uint8_t *flags, const uint8_t **body,
		    size_t *len)
{
	if (cl->rx_pos >= cl->rx_len)
		return false;
	size_t hl;
	uint32_t rl;
	enum mqtt_rej rej;
	assert_int_equal(mqtt_fixed_header(cl->rx + cl->rx_pos, cl->rx_len - cl->rx_pos, &hl, &rl,
					   &rej), 0);
	*type = (uint8_t)(cl->rx[cl->rx_pos] >> 4);
	*flags = (uint8_t)(cl->rx[cl->rx_pos] & 15);
	*body = cl->rx + cl->rx_pos + hl;
	*len = rl;
	cl->rx_pos += hl + rl;
	return true;
}

static inline void expect_none(struct client *cl)
{
	assert_int_equal(cl->rx_pos, cl->rx_len);
}

static inline uint16_t expect_ack(struct client *cl, uint8_t want_type)
{
	uint8_t t, f;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(cl, &t, &f, &b, &n));
	assert_int_equal(t, want_type);
	assert_int_equal(n, 2);
	return (uint16_t)(b[0] << 8 | b[1]);
}

/* Returns the packet identifier; checks topic, payload, QoS, retain and dup. */
static inline uint16_t expect_pub(struct client *cl, const char *topic, const char *payload, int qos,
			   int retain, int dup)
{
	uint8_t t, f;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(cl, &t, &f, &b, &n));
	assert_int_equal(t, MQTT_PUBLISH);
	assert_int_equal((f >> 1) & 3, qos);
	assert_int_equal(f & 1, retain);
	assert_int_equal(f >> 3, dup);
	size_t tl = (size_t)(b[0] << 8 | b[1]);
	assert_int_equal(tl, strlen(topic));
	assert_memory_equal(b + 2, topic, tl);
	size_t off = 2 + tl;
	uint16_t pid = 0;
	if (qos) {
		pid = (uint16_t)(b[off] << 8 | b[off + 1]);
		assert_int_not_equal(pid, 0);
		off += 2;
	}
	assert_int_equal(n - off, strlen(payload));
	assert_memory_equal(b + off, payload, n - off);
	return pid;
}

static inline int cl_connect_full(struct client *cl, const char *id, bool clean, uint16_t ka,
			   const char *will_topic, int will_qos, bool will_retain, int *present)
{
	uint8_t buf[512];
	struct wcur w = wcur_make(buf, sizeof buf);
	struct mqtt_connect_args a = { .client_id = id, .clean = clean, .keepalive_s = ka,
				       .will_topic = will_topic,
				       .will_msg = (const uint8_t *)"bye", .will_msg_len = 3,
				       .will_qos = (uint8_t)will_qos, .will_retain = will_retain };
	assert_int_equal(mqtt_encode_connect(&w, &a), 0);
	(void)cl_in(cl, buf, w.pos);
	uint8_t t, f;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(cl, &t, &f, &b, &n));
	assert_int_equal(t, MQTT_CONNACK);
	assert_int_equal(n, 2);
	if (present)
		*present = b[0];
	if (b[1])
		assert_int_equal(b[0], 0);
	return b[1];
}

static inline int cl_connect(struct client *cl, const char *id, bool clean)
{
	return cl_connect_full(cl, id, clean, 0, NULL, 0, false, NULL);
}

static inline uint8_t cl_sub(struct client *cl, const char *filter, uint8_t qos)
{
	uint8_t buf[512];
	struct wcur w = wcur_make(buf, sizeof buf);
	const char *f[] = { filter };
	assert_int_equal(mqtt_encode_subscribe(&w, 1, f, &qos, 1), 0);
	assert_int_equal(cl_in(cl, buf, w.pos), 0);
	uint8_t t, fl;
	const uint8_t *b;
	size_t n;
	assert_true(cl_next(cl, &t, &fl, &b, &n));
	assert_int_equal(t, MQTT_SUBACK);
	assert_int_equal(n, 3);
	return b[2];
}

static inline int cl_pub(struct client *cl, const char *topic, const char *payload, uint8_t qos,
		  bool retain, uint16_t pid, bool dup)
{
	uint8_t buf[4200];
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_publish(&w, (const uint8_t *)topic, (uint16_t)strlen(topic),
					     (const uint8_t *)payload, strlen(payload), qos, dup,
					     retain, pid), 0);
	return cl_in(cl, buf, w.pos);
}

static inline int cl_ack(struct client *cl, enum mqtt_type t, uint16_t pid)
{
	uint8_t buf[4];
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_ack(&w, t, pid), 0);
	return cl_in(cl, buf, w.pos);
}

static inline int cl_simple(struct client *cl, enum mqtt_type t)
{
	uint8_t buf[2];
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_simple(&w, t), 0);
	return cl_in(cl, buf, w.pos);
}

#endif
