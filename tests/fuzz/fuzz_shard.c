/* SPDX-License-Identifier: MIT
 * Fuzz target: one broker shard (dp/shard.h) as core 1 of three, receiving mesh messages
 * chosen by the input from cores 0 and 2: OPEN with identities from a small dictionary
 * or raw bytes, DATA carrying CONNECT/SUBSCRIBE/PUBLISH or raw bytes, LOST, CREDIT, OUT,
 * CLOSE, routed messages whole or cut into parts, 5.0 shared subscriptions (SUBSCRIBEs from
 * local members, SHARE from the other shards), mixed with local fan-outs, polls and
 * a mesh that refuses sends when the input says so (backlogs fill and drain). After every
 * step dp_shard_check and mqtt_broker_check hold; at the end the broker gives every heap
 * byte back. The mesh only ever carries our own messages, but a wrong length or a stale
 * connection must still be counted and ignored, never trusted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dp/shard.h"
#include "lib/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t g_live;
static void *h_alloc(void *ctx, size_t n)
{
	(void)ctx;
	g_live += n;
	return malloc(n);
}
static void h_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	if (n > g_live)
		abort();
	g_live -= n;
	free(p);
}

static struct dp_shard *S;
static struct mqtt_broker *B;
static int g_refuse;

static int m_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx, (void)data;
	if (dst >= 3 || dst == 1 || kind < DP_SHARD_KIND_FIRST || kind > DP_SHARD_KIND_LAST || len > 128)
		abort();
	return g_refuse ? -E_AGAIN : 0;
}

static int b_send(void *ctx, void *user, const uint8_t *buf, size_t len)
{
	(void)ctx;
	if (!dp_shard_is_proxy(S, user))
		abort(); /* every connection of this broker is a proxy here */
	return dp_shard_proxy_send(S, user, buf, len);
}
static void b_close(void *ctx, void *user)
{
	(void)ctx;
	if (!dp_shard_is_proxy(S, user))
		abort();
	dp_shard_proxy_close(S, user);
}
static bool b_room(void *ctx, const uint8_t *t, size_t tl, size_t bytes, bool retain)
{
	(void)ctx;
	return dp_shard_fanout_room(S, t, tl, bytes, retain);
}
static bool b_busy(void *ctx, const uint8_t *t, size_t tl, size_t bytes, bool retain)
{
	(void)ctx;
	return dp_shard_fanout_busy(S, t, tl, bytes, retain);
}
static int b_interest(void *ctx, uint16_t key, bool add)
{
	(void)ctx;
	return dp_shard_interest(S, key, add);
}
static int b_interest_sync(void *ctx, uint32_t ticket)
{
	(void)ctx;
	return dp_shard_interest_sync(S, ticket);
}
static int b_share(void *ctx, const uint8_t *f, size_t len, bool add)
{
	(void)ctx;
	return dp_shard_share(S, f, len, add);
}
static uint32_t b_fanout(void *ctx, const struct mqtt_message *m, uint32_t ticket)
{
	(void)ctx;
	return dp_shard_fanout(S, m, ticket);
}
static void c_out(void *ctx, uint32_t conn, uint32_t gen, const uint8_t *p, size_t n)
{
	(void)ctx, (void)conn, (void)gen, (void)p, (void)n;
}
static void c_close(void *ctx, uint32_t conn, uint32_t gen)
{
	(void)ctx, (void)conn, (void)gen;
}
/* No storage here: routed messages with a ticket are answered by the shard (DONE). */
static int c_barrier(void *ctx, uint32_t origin, uint32_t ticket)
{
	(void)ctx, (void)origin, (void)ticket;
	return -E_NOSYS;
}
static void c_done(void *ctx, uint32_t ticket, bool ok)
{
	(void)ctx;
	mqtt_broker_durable(B, ticket, ok); /* unknown tickets are counted, never trusted */
}

static void c_data_credit(void *ctx, uint32_t conn, uint32_t gen, uint32_t bytes)
{
	(void)ctx, (void)conn, (void)gen, (void)bytes;
}

static const char *const ids[] = { "d0", "d1", "svc", "admin" };
static const char *const svc_pub[] = { "devices/+/cmd/#" };
static const char *const svc_sub[] = { "devices/+/telemetry/#", "devices/+/status" };
static const struct mqtt_acl_service services[] = { { "svc", svc_pub, svc_sub, 1, 2 } };
static const char *const topics[] = { "devices/d0/cmd/a", "devices/d1/telemetry/t", "a/b", "devices/d1/status" };

struct in {
	const uint8_t *p;
	size_t n;
};
static uint8_t take(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static void put32(uint8_t *w, uint32_t v)
{
	w[0] = (uint8_t)v;
	w[1] = (uint8_t)(v >> 8);
	w[2] = (uint8_t)(v >> 16);
	w[3] = (uint8_t)(v >> 24);
}

static void check(void)
{
	if (dp_shard_check(S) || mqtt_broker_check(B))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mqtt_broker_config g = {
		.max_conns = 4, .max_sessions = 4, .max_nodes = 16, .max_subs = 8, .max_deliveries = 16,
		.max_retained = 4, .max_packet = 300, .heap_limit = 16384, .max_topic_levels = 6,
		.max_inflight = 2, .max_queue = 4, .max_qos2_rx = 2, .max_subs_per_session = 3,
		.queue_drop_oldest = true, .max_violations = 4, .connect_timeout_ms = 5000,
		.services = services, .n_services = 1, .max_shared_groups = 2,
		.drop_ids = 2, /* fewer than the sessions: drop-table entries are recycled */
	};
	struct mqtt_broker_ops ops = { .send = b_send, .close = b_close, .heap = { h_alloc, h_free, NULL },
				       .fanout_room = b_room, .fanout_busy = b_busy, .fanout = b_fanout,
				       .interest = b_interest, .interest_sync = b_interest_sync,
				       .share = b_share, .share_self = 1 };
	size_t bneed = mqtt_broker_mem_size(&g);
	void *bmem = aligned_alloc(8, (bneed + 7) & ~(size_t)7);
	if (!bmem || mqtt_broker_init(&B, bmem, bneed, &g, &ops))
		abort();
	struct dp_shard_config sc = {
		.n_cores = 3, .self = 1, .payload_max = 128, .backlog_bytes = 1024, .out_window = 200, .data_window = 300, .interest_slots = 64,
		.max_proxies = 4, .max_conns = 4, .max_packet = 300, .max_done = 8, .mesh = { m_send, NULL },
	};
	size_t sneed = dp_shard_mem_size(&sc);
	void *smem = aligned_alloc(8, (sneed + 7) & ~(size_t)7);
	const struct dp_shard_conn_ops co = { c_out, c_close, c_barrier, c_done, c_data_credit, NULL };
	if (!sneed || !smem || dp_shard_init(&S, smem, sneed, &sc, B, &co))
		abort();
	struct in in = { data, size };
	uint8_t msg[400];
	uint64_t now = 1000;
	g_refuse = 0;
	while (in.n) {
		uint8_t op = take(&in);
		uint32_t src = (op & 1) ? 2 : 0;
		uint32_t conn = take(&in) & 3u, gen = take(&in) & 1u;
		put32(msg, conn);
		put32(msg + 4, gen);
		uint32_t len = 8;
		uint16_t kind = (uint16_t)(DP_SHARD_KIND_FIRST + ((op >> 1) % 12u)); /* OPEN .. SHARE */
		switch ((op >> 4) & 7u) {
		case 0: { /* OPEN with a known identity */
			const char *id = ids[take(&in) & 3u];
			msg[8] = (uint8_t)(id[0] == 's' || id[0] == 'a');
			msg[9] = 0;
			msg[10] = (uint8_t)strlen(id);
			msg[11] = 0;
			memcpy(msg + 12, id, strlen(id));
			len = 12u + (uint32_t)strlen(id);
			kind = DP_SHARD_OPEN;
			break;
		}
		case 1: { /* DATA: a CONNECT, SUBSCRIBE or PUBLISH for that identity */
			struct wcur w = wcur_make(msg + 8, sizeof msg - 8);
			uint8_t f = take(&in);
			const char *t = topics[f & 3u];
			if ((f & 0x40) && (f & 0x10)) { /* a 5.0 CONNECT: no properties */
				static const uint8_t v5[] = { 0, 4, 'M', 'Q', 'T', 'T', 5, 2, 0, 0, 0 };
				const char *id = ids[(f >> 5) & 1u];
				msg[8] = 0x10;
				msg[9] = (uint8_t)(sizeof v5 + 2 + strlen(id));
				memcpy(msg + 10, v5, sizeof v5);
				msg[10 + sizeof v5] = 0;
				msg[11 + sizeof v5] = (uint8_t)strlen(id);
				memcpy(msg + 12 + sizeof v5, id, strlen(id));
				w.pos = 2 + msg[9];
			} else if (f & 0x40) { /* a 5.0 SUBSCRIBE to a shared subscription */
				const char *sf = (f & 0x20) ? "$share/g/devices/+/status" : "$share/h/devices/#";
				size_t sl = strlen(sf);
				msg[8] = 0x82;
				msg[9] = (uint8_t)(2 + 1 + 2 + sl + 1);
				msg[10] = 0;
				msg[11] = 7;
				msg[12] = 0;
				msg[13] = 0;
				msg[14] = (uint8_t)sl;
				memcpy(msg + 15, sf, sl);
				msg[15 + sl] = (uint8_t)(f & 1u);
				w.pos = 2 + msg[9];
			} else if (f & 0x10) {
				struct mqtt_connect_args a = { .client_id = ids[(f >> 5) & 3u], .clean = (f & 4) != 0,
							       .keepalive_s = 0 };
				(void)!mqtt_encode_connect(&w, &a);
			} else if (f & 0x20) {
				const char *fl[1] = { t };
				uint8_t q[1] = { 1 };
				(void)!mqtt_encode_subscribe(&w, 1, fl, q, 1);
			} else {
				(void)!mqtt_encode_publish(&w, (const uint8_t *)t, (uint16_t)strlen(t),
							  (const uint8_t *)"p", 1, (uint8_t)(f % 3u), false, (f & 8) != 0, 9);
			}
			len = 8u + (uint32_t)w.pos;
			kind = DP_SHARD_DATA;
			break;
		}
		case 2: { /* raw bytes under any kind of the range */
			uint32_t n = take(&in) % 140u;
			for (uint32_t i = 0; i < n && i < sizeof msg; i++)
				msg[i] = take(&in);
			len = n;
			break;
		}
		case 3: /* a mesh that refuses, or takes, everything */
			g_refuse = !g_refuse;
			continue;
		case 4: /* a local fan-out (as a local PUBLISH would) */
			if (dp_shard_fanout_room(S, (const uint8_t *)topics[conn], strlen(topics[conn]), 40, (op & 2) != 0)) {
				/* the payload's head doubles as properties: any bytes travel opaquely */
				size_t pl = take(&in) % 200u, xl = (op & 8) ? take(&in) % (pl + 1u) : 0;
				struct mqtt_message m = { .topic = (const uint8_t *)topics[conn],
							  .topic_len = strlen(topics[conn]), .props = msg,
							  .props_len = xl, .payload = msg + xl, .payload_len = pl - xl,
							  .expiry_s = (op & 16) ? take(&in) : 0, .qos = (uint8_t)(gen + 1),
							  .retain = (op & 2) != 0 };
				(void)dp_shard_fanout(S, &m, (op & 4) ? 0x80000000u | take(&in) : 0);
			}
			check();
			continue;
		case 6: { /* SHARE: another shard's first or last member of a group, or a bad one */
			static const char *const sf[] = { "$share/g/devices/+/status", "$share/h/devices/#",
							  "$share/k/a/b", "$share//bad" };
			uint8_t f = take(&in);
			const char *t = sf[f & 3u];
			msg[0] = (uint8_t)((f >> 2) & 1u);
			msg[1] = 0;
			msg[2] = (uint8_t)strlen(t);
			msg[3] = 0;
			memcpy(msg + 4, t, strlen(t));
			len = 4u + (uint32_t)strlen(t);
			kind = DP_SHARD_SHARE;
			break;
		}
		case 5:
			(void)dp_shard_poll(S);
			now += 700;
			mqtt_broker_tick(B, now);
			check();
			continue;
		default: /* conn-addressed kinds with an optional 4-byte body (CREDIT) */
			put32(msg + 8, take(&in) * 16u);
			len = 8u + ((op & 0x80) ? 4u : 0u);
			break;
		}
		dp_shard_recv(S, src, kind, msg, len, now);
		check();
	}
	g_refuse = 0;
	(void)dp_shard_poll(S);
	check();
	mqtt_broker_fini(B);
	if (g_live)
		abort();
	free(smem);
	free(bmem);
	return 0;
}
