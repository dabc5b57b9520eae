// SPDX-License-Identifier: MIT
/*
 * micro_shard (make bench): routing between broker shards (dp/shard.h) in process. Two
 * brokers stand for two cores, joined by an in-memory mesh that copies every message
 * into a fixed slot as kernel/xcore does. One publisher (device "pub") sends QoS 0 or 1
 * PUBLISHes to devices/pub/telemetry; 10 subscribers (service "ops", filter
 * devices/+/telemetry) acknowledge every QoS 1 delivery.
 *   - "one shard": publisher and subscribers on one broker without shards;
 *   - "across shards": the subscribers' sessions on the other shard, so every message is
 *     fanned out (a bounded copy through the mesh) and routed again there.
 * Both cores' work runs on this one thread, so the CPU time is the sum of the two cores'.
 * Also the cost of the copy alone (memcpy of topic + payload into a slot) for ADR-027.
 * One JSON line per figure ({"micro":...}); hostrel; bounded by a CPU-time budget per case.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dp/shard.h"
#include "lib/err.h"
#include "tools/bench/bench_mqtt.h"

#define NSUB 10
#define ACKQ 256
#define SLOT 2048u
#define RING 1024u

struct client {
	struct mqtt_conn *c;
	bool sub;
	uint16_t acks[ACKQ];
	unsigned n_acks;
};

static uint64_t delivered;
static size_t heap_live;
static void *h_alloc(void *ctx, size_t n)
{
	(void)ctx;
	heap_live += n;
	return malloc(n);
}
static void h_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	heap_live -= n;
	free(p);
}

/* The mesh 0 -> 1: fixed slots, copied in as xcore_send does. */
static struct {
	uint8_t data[RING][SLOT];
	uint32_t len[RING];
	uint16_t kind[RING];
	uint32_t head, n;
} ring;
static int m_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx, (void)dst;
	if (ring.n == RING || len > SLOT)
		return -E_AGAIN;
	uint32_t i = (ring.head + ring.n) % RING;
	memcpy(ring.data[i], data, len);
	ring.len[i] = len;
	ring.kind[i] = kind;
	ring.n++;
	return 0;
}

static struct dp_shard *S[2];
static struct mqtt_broker *Bk[2];

static int t_send(void *ctx, void *user, const uint8_t *buf, size_t len)
{
	(void)ctx;
	struct client *cl = user;
	if (cl->sub)
		delivered += bench_scan_publishes(buf, len, cl->acks, &cl->n_acks, ACKQ);
	return 0;
}

static void t_close(void *ctx, void *user)
{
	(void)ctx;
	((struct client *)user)->c = NULL;
}
static bool f_room(void *ctx, const uint8_t *t, size_t tl, size_t bytes, bool retain)
{
	return dp_shard_fanout_room(S[(uintptr_t)ctx], t, tl, bytes, retain);
}
static uint32_t f_fanout(void *ctx, const struct mqtt_message *m, uint32_t ticket)
{
	return dp_shard_fanout(S[(uintptr_t)ctx], m, ticket);
}
static void c_out(void *ctx, uint32_t conn, uint32_t gen, const uint8_t *p, size_t n)
{
	(void)ctx, (void)conn, (void)gen, (void)p, (void)n;
}
static void c_close(void *ctx, uint32_t conn, uint32_t gen)
{
	(void)ctx, (void)conn, (void)gen;
}
static int c_barrier(void *ctx, uint32_t origin, uint32_t ticket)
{
	(void)ctx, (void)origin, (void)ticket;
	return -1; /* no storage in this benchmark: tickets are never given */
}
static void c_done(void *ctx, uint32_t ticket, bool ok)
{
	(void)ctx, (void)ticket, (void)ok;
}

static void c_data_credit(void *ctx, uint32_t conn, uint32_t gen, uint32_t bytes)
{
	(void)ctx, (void)conn, (void)gen, (void)bytes;
}

static const char *const svc_pub[] = { "devices/+/cmd/#" };
static const char *const svc_sub[] = { "devices/+/#" };
static const struct mqtt_acl_service services[] = { { NULL, svc_pub, svc_sub, 1, 1 } };

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t put_str(uint8_t *p, const char *s)
{
	size_t n = strlen(s);
	p[0] = (uint8_t)(n >> 8);
	p[1] = (uint8_t)n;
	memcpy(p + 2, s, n);
	return n + 2;
}

/* Fixed header: type byte and remaining length (variable-length integer). */
static size_t pkt(uint8_t *out, uint8_t hdr, size_t len)
{
	size_t n = 0;
	out[n++] = hdr;
	do {
		uint8_t b = (uint8_t)(len & 0x7f);
		len >>= 7;
		out[n++] = (uint8_t)(b | (len ? 0x80 : 0));
	} while (len);
	return n;
}

static int feed(struct mqtt_broker *b, struct client *cl, uint8_t hdr, const uint8_t *body, size_t len)
{
	static uint8_t p[8192];
	size_t n = pkt(p, hdr, len);
	memcpy(p + n, body, len);
	return mqtt_conn_input(b, cl->c, p, n + len, 2000);
}

static int session(struct mqtt_broker *b, struct client *cl, const char *identity, enum mqtt_id_kind kind,
		   const char *client_id, const char *filter, unsigned qos)
{
	uint8_t body[256];
	int rc = mqtt_conn_open(b, (const uint8_t *)identity, strlen(identity), kind, cl, 1000, &cl->c);
	if (rc)
		return rc;
	size_t n = put_str(body, "MQTT");
	body[n++] = 4;
	body[n++] = 0x02;
	body[n++] = 0;
	body[n++] = 60;
	n += put_str(body + n, client_id);
	if ((rc = feed(b, cl, 0x10, body, n)))
		return rc;
	if (!filter)
		return 0;
	body[0] = 0;
	body[1] = 1;
	n = 2 + put_str(body + 2, filter);
	body[n++] = (uint8_t)qos;
	return feed(b, cl, 0x82, body, n);
}

static struct client clients[NSUB + 1];
static void *mem_b[2], *mem_s[2];

static int build(bool sharded)
{
	struct mqtt_broker_config g = {
		.max_conns = NSUB + 4, .max_sessions = NSUB + 4, .max_nodes = 256, .max_subs = 256,
		.max_deliveries = 80 * NSUB + 1024, .max_retained = 16, .max_packet = 8192,
		.heap_limit = (size_t)1 << 30, .max_topic_levels = 8, .max_inflight = 64, .max_queue = 128,
		.max_qos2_rx = 4, .max_subs_per_session = 4, .queue_drop_oldest = true,
		.connect_timeout_ms = 60000, .services = services, .n_services = 1,
	};
	size_t bneed = mqtt_broker_mem_size(&g);
	struct dp_shard_config sc = {
		.n_cores = 2, .payload_max = SLOT, .backlog_bytes = 1u << 20, .out_window = 65536, .data_window = 65536,
		.max_proxies = 16, .max_conns = 16, .max_packet = 8192, .mesh = { m_send, NULL },
	};
	const struct dp_shard_conn_ops co = { c_out, c_close, c_barrier, c_done, c_data_credit, NULL };
	for (uintptr_t i = 0; i < 2; i++) {
		struct mqtt_broker_ops ops = { .send = t_send, .close = t_close, .heap = { h_alloc, h_free, NULL },
					       .ctx = (void *)i };
		if (sharded) {
			ops.fanout_room = f_room;
			ops.fanout = f_fanout;
		}
		mem_b[i] = aligned_alloc(64, (bneed + 63) & ~(size_t)63);
		if (!mem_b[i] || mqtt_broker_init(&Bk[i], mem_b[i], bneed, &g, &ops))
			return 1;
		sc.self = (uint32_t)i;
		size_t sneed = dp_shard_mem_size(&sc);
		mem_s[i] = aligned_alloc(64, (sneed + 63) & ~(size_t)63);
		if (!sneed || !mem_s[i] || dp_shard_init(&S[i], mem_s[i], sneed, &sc, Bk[i], &co))
			return 1;
	}
	return 0;
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++) {
		mqtt_broker_fini(Bk[i]);
		free(mem_b[i]);
		free(mem_s[i]);
	}
}

/* Core 1's loop: deliver what the mesh carries. */
static void drain(void)
{
	while (ring.n) {
		uint32_t i = ring.head;
		dp_shard_recv(S[1], 0, ring.kind[i], ring.data[i], ring.len[i], 2000);
		ring.head = (ring.head + 1) % RING;
		ring.n--;
	}
}

static int run(bool across, unsigned qos, size_t payload, double budget)
{
	if (build(across))
		return fprintf(stderr, "micro_shard: init failed\n"), 1;
	memset(clients, 0, sizeof clients);
	ring.head = ring.n = 0;
	struct mqtt_broker *sb = across ? Bk[1] : Bk[0];
	for (unsigned i = 0; i < NSUB; i++) {
		char id[32];
		snprintf(id, sizeof id, "ops/%u", i + 1);
		clients[i].sub = true;
		if (session(sb, &clients[i], "ops", MQTT_ID_SERVICE, id, "devices/+/telemetry", qos))
			return fprintf(stderr, "micro_shard: subscriber\n"), 1;
	}
	struct client *pub = &clients[NSUB];
	if (session(Bk[0], pub, "pub", MQTT_ID_DEVICE, "pub", NULL, 0))
		return fprintf(stderr, "micro_shard: publisher\n"), 1;
	static uint8_t body[8192], acks[ACKQ * 4];
	size_t tl = put_str(body, "devices/pub/telemetry");
	uint64_t published = 0;
	uint16_t pid = 0;
	delivered = 0;
	double t0 = cpu_s(), t = t0;
	while (t - t0 < budget && published < 20000000u) {
		for (int batch = 0; batch < 64; batch++) {
			size_t n = tl;
			if (qos) {
				if (++pid == 0)
					pid = 1;
				body[n++] = (uint8_t)(pid >> 8);
				body[n++] = (uint8_t)pid;
			}
			memset(body + n, 'x', payload);
			n += payload;
			if (feed(Bk[0], pub, (uint8_t)(0x30 | (qos << 1)), body, n))
				return fprintf(stderr, "micro_shard: publish\n"), 1;
			published++;
			drain();
			for (unsigned i = 0; qos && i < NSUB; i++) {
				struct client *cl = &clients[i];
				if (!cl->n_acks || !cl->c)
					continue;
				size_t an = 0;
				for (unsigned k = 0; k < cl->n_acks; k++) {
					acks[an++] = 0x40;
					acks[an++] = 2;
					acks[an++] = (uint8_t)(cl->acks[k] >> 8);
					acks[an++] = (uint8_t)cl->acks[k];
				}
				cl->n_acks = 0;
				if (mqtt_conn_input(sb, cl->c, acks, an, 2000))
					return fprintf(stderr, "micro_shard: puback\n"), 1;
			}
		}
		t = cpu_s();
	}
	double el = t - t0;
	struct dp_shard_stats st;
	dp_shard_stats_get(S[0], &st);
	printf("{\"micro\":\"shard_route\",\"placement\":\"%s\",\"subscribers\":%u,\"qos\":%u,"
	       "\"payload\":%zu,\"published\":%llu,\"delivered\":%llu,\"cpu_s\":%.3f,"
	       "\"publishes_per_cpu_s\":%.0f,\"routed_msgs_per_cpu_s\":%.0f,\"fanout_refused\":%llu}\n",
	       across ? "across_shards" : "one_shard", NSUB, qos, payload, (unsigned long long)published,
	       (unsigned long long)delivered, el, (double)published / el, (double)delivered / el,
	       (unsigned long long)st.fanout_refused);
	fflush(stdout);
	teardown();
	return 0;
}

/* The bounded copy alone: topic + payload into a slot. */
static void copy_cost(size_t payload)
{
	static uint8_t src[8192], dst[SLOT * 4];
	memset(src, 'x', sizeof src);
	size_t n = 21 + payload;
	uint64_t iters = 0;
	double t0 = cpu_s(), t = t0;
	while (t - t0 < 0.2) {
		for (int i = 0; i < 4096; i++) {
			memcpy(dst + (size_t)(i & 3) * SLOT / 2, src, n);
			__asm__ volatile("" ::"r"(dst) : "memory");
		}
		iters += 4096;
		t = cpu_s();
	}
	printf("{\"micro\":\"shard_copy\",\"bytes\":%zu,\"ns_per_copy\":%.1f}\n", n, (t - t0) * 1e9 / (double)iters);
}

int main(int argc, char **argv)
{
	double budget = argc > 1 ? atof(argv[1]) : 1.0;
	if (budget <= 0 || budget > 30)
		budget = 1.0;
	int rc = 0;
	static const size_t payloads[] = { 64, 1024 };
	for (unsigned q = 0; q <= 1; q++)
		for (unsigned p = 0; p < 2; p++)
			for (int across = 0; across <= 1; across++)
				rc |= run(across != 0, q, payloads[p], budget);
	copy_cost(64);
	copy_cost(1024);
	return rc;
}
