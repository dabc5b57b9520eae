// SPDX-License-Identifier: MIT
/*
 * micro_mqtt (make bench): the MQTT broker core (mqtt/broker.h) in process, no transport:
 *   - routed messages per CPU-second: 1 publisher (device "pub", devices/pub/telemetry)
 *     to 1, 10 and 1,000 subscribers (service "ops", client ids ops/<i>, filter
 *     devices/+/telemetry), QoS 0 and 1; subscribers acknowledge every QoS 1 delivery
 *     with a PUBACK fed back through mqtt_conn_input, as a transport would;
 *   - bytes per idle session with one QoS 1 subscription (connection + session records,
 *     plus the broker's heap per session), 1,000 device sessions.
 * One JSON line per figure on stdout ({"micro":...}). Host benchmark (hostrel); never
 * linked into the image; bounded by a CPU-time budget per case.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/err.h"
#include "tools/bench/bench_mqtt.h"
#include "mqtt/broker.h"

#define MAX_SUBS 1000
#define ACKQ 256

struct client {
	struct mqtt_conn *c;
	bool sub;
	uint16_t acks[ACKQ];
	unsigned n_acks;
	uint64_t delivered;
};

static size_t heap_live;
static uint64_t delivered_total;

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

/* The transport: a subscriber remembers QoS 1 packet ids to acknowledge later (the broker
 * must not be called back from here). */
static int t_send(void *ctx, void *user, const uint8_t *buf, size_t len)
{
	(void)ctx;
	struct client *cl = user;
	if (cl->sub) {
		unsigned n = bench_scan_publishes(buf, len, cl->acks, &cl->n_acks, ACKQ);
		cl->delivered += n;
		delivered_total += n;
	}
	return 0;
}

static void t_close(void *ctx, void *user)
{
	(void)ctx;
	((struct client *)user)->c = NULL;
}

static const char *const svc_pub[] = { "devices/+/cmd/#" };
static const char *const svc_sub[] = { "devices/+/#" };
static const struct mqtt_acl_service services[] = { { NULL, svc_pub, svc_sub, 1, 1 } };

static struct mqtt_broker_config cfg_for(uint32_t conns)
{
	struct mqtt_broker_config g = {
		.max_conns = conns, .max_sessions = conns, .max_nodes = 4 * conns + 64,
		.max_subs = 2 * conns + 64, .max_deliveries = 80 * conns + 1024,
		.max_retained = 16, .max_packet = 65536, .heap_limit = (size_t)1 << 30,
		.max_topic_levels = 8, .max_inflight = 64, .max_queue = 128, .max_qos2_rx = 4,
		.max_subs_per_session = 4, .queue_drop_oldest = true, .max_violations = 0,
		.connect_timeout_ms = 60000, .services = services, .n_services = 1,
	};
	for (int i = 0; i < 16; i++)
		g.hash_key[i] = (uint8_t)(i * 13 + 5);
	return g;
}

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

/* One packet: header byte + remaining length (< 16384) + body. */
static size_t pkt(uint8_t *out, uint8_t hdr, const uint8_t *body, size_t len)
{
	size_t n = 0;
	out[n++] = hdr;
	if (len >= 128) {
		out[n++] = (uint8_t)((len & 0x7f) | 0x80);
		out[n++] = (uint8_t)(len >> 7);
	} else {
		out[n++] = (uint8_t)len;
	}
	memcpy(out + n, body, len);
	return n + len;
}

static int session_open(struct mqtt_broker *b, struct client *cl, const char *identity,
			enum mqtt_id_kind kind, const char *client_id, const char *filter,
			unsigned qos)
{
	uint8_t body[256], p[300];
	int rc = mqtt_conn_open(b, (const uint8_t *)identity, strlen(identity), kind, cl, 1000,
				&cl->c);
	if (rc)
		return rc;
	size_t n = put_str(body, "MQTT");
	body[n++] = 4;
	body[n++] = 0x02;
	body[n++] = 0;
	body[n++] = 60;
	n += put_str(body + n, client_id);
	if ((rc = mqtt_conn_input(b, cl->c, p, pkt(p, 0x10, body, n), 1000)))
		return rc;
	if (!filter)
		return 0;
	body[0] = 0;
	body[1] = 1;
	n = 2 + put_str(body + 2, filter);
	body[n++] = (uint8_t)qos;
	return mqtt_conn_input(b, cl->c, p, pkt(p, 0x82, body, n), 1000);
}

static struct client clients[MAX_SUBS + 1];

static int route(unsigned n_subs, unsigned qos, double budget_s)
{
	struct mqtt_broker_config g = cfg_for(n_subs + 4);
	struct mqtt_broker_ops ops = { .send = t_send, .close = t_close, .heap = { h_alloc, h_free, NULL } };
	size_t need = mqtt_broker_mem_size(&g);
	void *mem = need ? aligned_alloc(64, (need + 63) & ~(size_t)63) : NULL;
	struct mqtt_broker *b;
	int rc;
	if (!mem || mqtt_broker_init(&b, mem, need, &g, &ops))
		return fprintf(stderr, "micro_mqtt: init failed\n"), 1;
	memset(clients, 0, sizeof(clients));
	for (unsigned i = 0; i < n_subs; i++) {
		char id[32];
		snprintf(id, sizeof(id), "ops/%u", i + 1);
		clients[i].sub = true;
		if ((rc = session_open(b, &clients[i], "ops", MQTT_ID_SERVICE, id,
				       "devices/+/telemetry", qos)))
			return fprintf(stderr, "micro_mqtt: subscriber: %s\n", err_name(rc)), 1;
	}
	struct client *pub = &clients[n_subs];
	if ((rc = session_open(b, pub, "pub", MQTT_ID_DEVICE, "pub", NULL, 0)))
		return fprintf(stderr, "micro_mqtt: publisher: %s\n", err_name(rc)), 1;
	for (unsigned i = 0; i < n_subs; i++)
		clients[i].delivered = 0;
	delivered_total = 0;

	uint8_t body[128], p[160], acks[ACKQ * 4];
	size_t tl = put_str(body, "devices/pub/telemetry");
	uint64_t published = 0;
	uint16_t pid = 0;
	double t0 = cpu_s(), t = t0;
	uint64_t now = 2000;
	while (t - t0 < budget_s && published < 50000000u) {
		for (int batch = 0; batch < 64; batch++) {
			size_t n = tl;
			if (qos) {
				if (++pid == 0)
					pid = 1;
				body[n++] = (uint8_t)(pid >> 8);
				body[n++] = (uint8_t)pid;
			}
			memset(body + n, 'x', 64);
			n += 64;
			if ((rc = mqtt_conn_input(b, pub->c, p, pkt(p, (uint8_t)(0x30 | (qos << 1)), body, n),
						  now)))
				return fprintf(stderr, "micro_mqtt: publish: %s\n", err_name(rc)), 1;
			published++;
			for (unsigned i = 0; qos && i < n_subs; i++) {
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
				if ((rc = mqtt_conn_input(b, cl->c, acks, an, now)))
					return fprintf(stderr, "micro_mqtt: puback: %s\n", err_name(rc)), 1;
			}
		}
		now++;
		t = cpu_s();
	}
	double el = t - t0;
	const struct mqtt_broker_stats *st = mqtt_broker_stats(b);
	printf("{\"micro\":\"mqtt_route\",\"subscribers\":%u,\"qos\":%u,\"published\":%llu,"
	       "\"delivered\":%llu,\"cpu_s\":%.3f,\"publishes_per_cpu_s\":%.0f,"
	       "\"routed_msgs_per_cpu_s\":%.0f,\"queue_dropped\":%llu}\n",
	       n_subs, qos, (unsigned long long)published, (unsigned long long)delivered_total, el,
	       (double)published / el, (double)delivered_total / el,
	       (unsigned long long)(st->queue_dropped_oldest + st->queue_refused));
	fflush(stdout);
	mqtt_broker_fini(b);
	free(mem);
	return 0;
}

static int idle_sessions(unsigned n)
{
	struct mqtt_broker_config g = cfg_for(n + 4);
	struct mqtt_broker_ops ops = { .send = t_send, .close = t_close, .heap = { h_alloc, h_free, NULL } };
	size_t need = mqtt_broker_mem_size(&g);
	void *mem = need ? aligned_alloc(64, (need + 63) & ~(size_t)63) : NULL;
	struct mqtt_broker *b;
	if (!mem || mqtt_broker_init(&b, mem, need, &g, &ops))
		return fprintf(stderr, "micro_mqtt: init failed\n"), 1;
	static struct client cl[MAX_SUBS];
	memset(cl, 0, sizeof(cl));
	size_t h0 = heap_live;
	for (unsigned i = 0; i < n && i < MAX_SUBS; i++) {
		char id[32], f[64];
		snprintf(id, sizeof(id), "dev-%u", i + 1);
		snprintf(f, sizeof(f), "devices/%s/cmd/#", id);
		int rc = session_open(b, &cl[i], id, MQTT_ID_DEVICE, id, f, 1);
		if (rc)
			return fprintf(stderr, "micro_mqtt: idle: %s\n", err_name(rc)), 1;
	}
	size_t heap = heap_live - h0;
	/* The region grows by region_per per unit of max_conns with this benchmark's pool
	 * ratios (delivery records, tree nodes); reported, not counted as per-session state. */
	struct mqtt_broker_config g2 = cfg_for(n + 4 + 1000);
	size_t region_per = (mqtt_broker_mem_size(&g2) - need) / 1000;
	printf("{\"micro\":\"mqtt_idle_session\",\"sessions\":%u,\"sizeof_conn\":%zu,"
	       "\"sizeof_session\":%zu,\"region_bytes_per_conn\":%zu,\"heap_bytes_per_session\":%.1f,"
	       "\"bytes_per_idle_session\":%.1f}\n",
	       n, mqtt_sizeof_conn(), mqtt_sizeof_session(), region_per, (double)heap / n,
	       (double)(mqtt_sizeof_conn() + mqtt_sizeof_session()) + (double)heap / n);
	mqtt_broker_fini(b);
	free(mem);
	return 0;
}

int main(int argc, char **argv)
{
	double budget = argc > 1 ? atof(argv[1]) : 1.0;
	if (budget <= 0 || budget > 30)
		budget = 1.0;
	static const unsigned subs[] = { 1, 10, 1000 };
	int rc = 0;
	for (unsigned q = 0; q <= 1; q++)
		for (unsigned i = 0; i < 3; i++)
			rc |= route(subs[i], q, budget);
	rc |= idle_sessions(1000);
	return rc;
}
