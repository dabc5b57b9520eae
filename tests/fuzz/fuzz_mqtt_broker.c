/* SPDX-License-Identifier: MIT
 * Fuzz target: the whole broker driven by several clients (two devices, one of them
 * twice for takeovers, two services) with packet streams chosen by the input: structured
 * CONNECT/SUBSCRIBE/PUBLISH/acks from small dictionaries, raw bytes in random chunks,
 * lost connections and clock ticks. After every step: mqtt_broker_check() holds, the
 * heap stays under its limit, and no PUBLISH reaches an identity the ACL forbids. At the
 * end the heap must get every byte back. Pools are tiny so exhaustion paths run. Every
 * log line must be short, printable and start with "mqtt: "; the number written is
 * bounded by the per-reason budget. Each client speaks 3.1.1 or MQTT 5.0 as its last CONNECT
 * chose (5.0: properties, Topic Aliases, subscription options, shared filters, Will Delay,
 * reason codes), so the streams mix both versions. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/broker.h"
#include "mqtt/codec5.h"

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

struct fclient {
	struct mqtt_conn *c;
	const char *identity;
	enum mqtt_id_kind kind;
	bool v5; /* its last CONNECT was 5.0 */
	/* the Topic Alias the broker set on this connection (it may set one: Topic Alias
	 * Maximum 1), as the client resolves it */
	uint8_t alias_topic[64];
	size_t alias_len;
	bool alias_ok; /* its CONNECT allowed one */
	bool hello;    /* its connection's first CONNECT was sent (the version is that one's) */
};

static struct mqtt_broker *B;
static unsigned g_lines;

static void f_log(void *ctx, const char *line, const struct log_fields *f)
{
	(void)ctx;
	if (!f || !f->reason)
		abort(); /* every broker refusal names its reason */
	size_t n = strlen(line);
	if (n >= 160 || strncmp(line, "mqtt: ", 6) != 0)
		abort();
	for (size_t i = 0; i < n; i++)
		if (line[i] < 0x20 || line[i] > 0x7e)
			abort();
	g_lines++;
}
static struct fclient cls[5] = {
	{ .identity = "d0", .kind = MQTT_ID_DEVICE }, { .identity = "d1", .kind = MQTT_ID_DEVICE },
	{ .identity = "d1", .kind = MQTT_ID_DEVICE }, { .identity = "svc", .kind = MQTT_ID_SERVICE },
	{ .identity = "admin", .kind = MQTT_ID_SERVICE },
};

static int f_send(void *ctx, void *user, const uint8_t *buf, size_t len)
{
	(void)ctx;
	struct fclient *cl = user;
	if (len < 2)
		abort();
	if ((buf[0] >> 4) == MQTT_PUBLISH) {
		size_t hl;
		uint32_t rl;
		enum mqtt_rej rej;
		if (mqtt_fixed_header(buf, len, &hl, &rl, &rej) || hl + rl != len || rl < 2)
			abort();
		size_t tl = (size_t)(buf[hl] << 8 | buf[hl + 1]);
		if (2 + tl > rl)
			abort();
		const uint8_t *topic = buf + hl + 2;
		if (cl->v5) { /* an outbound Topic Alias: set with the topic, or standing for it */
			size_t off = hl + 2 + tl + ((buf[0] & 6) ? 2u : 0u);
			struct cur cu = cur_make(buf + off, len - off);
			struct mqtt_props pr;
			enum mqtt_props_rej prej;
			if (off > len || mqtt_props_decode(&cu, MQTT_PROPS_PUBLISH, &pr, &prej))
				abort();
			if (pr.present & MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS)) {
				if (pr.topic_alias != 1 || !cl->alias_ok) /* above the client's maximum */
					abort();
				if (tl) {
					if (tl > sizeof cl->alias_topic)
						abort();
					memcpy(cl->alias_topic, topic, tl);
					cl->alias_len = tl;
				} else {
					if (!cl->alias_len)
						abort(); /* an alias the client never got */
					topic = cl->alias_topic;
					tl = cl->alias_len;
				}
			} else if (!tl) {
				abort();
			}
		}
		/* the oracle: nothing delivered that the ACL forbids */
		if (!mqtt_acl_may_read(B, cl->kind, (const uint8_t *)cl->identity,
				       strlen(cl->identity), topic, tl)) {
			fprintf(stderr, "ACL: %s got %.*s\n", cl->identity, (int)tl, topic);
			abort();
		}
	}
	return 0;
}

static void f_close(void *ctx, void *user)
{
	(void)ctx;
	struct fclient *cl = user;
	if (!cl->c)
		abort();
	cl->c = NULL;
}

static const char *const svc_pub[] = { "devices/+/cmd/#" };
static const char *const svc_sub[] = { "devices/+/telemetry/#", "devices/+/status" };
static const char *const adm_all[] = { "#", "$SYS/#" };
static const struct mqtt_acl_service services[] = {
	{ "svc", svc_pub, svc_sub, 1, 2 },
	{ "admin", adm_all, adm_all, 2, 2 },
};

static const char *const topics[] = {
	"devices/d0/cmd/a", "devices/d1/cmd/b", "devices/d0/telemetry/t", "devices/d1/status",
	"$SYS/x", "a/b", "devices/d0", "devices/d1/cmd", "devices/d1/telemetry/x/y", "a",
};
static const char *const filters[] = {
	"devices/d0/cmd/#", "devices/d1/#", "devices/+/telemetry/#", "#", "+/+",
	"devices/d0/+/a", "$SYS/#", "devices/+/status", "devices/d1/cmd/+", "a/#", "devices/d0/#",
	"devices/d1/telemetry/+/y", "$share/g/devices/+/telemetry/#", "$share/h/devices/d1/#",
};

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

static void feed(struct fclient *cl, const uint8_t *p, size_t n, uint64_t now)
{
	if (!cl->c)
		return;
	if (mqtt_conn_input(B, cl->c, p, n, now) == -E_CLOSED && cl->c)
		abort(); /* closed without the close callback */
}

/* A CONNECT (v: its case's flags byte): the first of a connection sets the version and the
 * aliases the oracle expects; a later one changes nothing (it ends the connection). */
static void feed_connect(struct fclient *cl, uint8_t v, const uint8_t *p, size_t n, uint64_t now)
{
	if (cl->c && !cl->hello) {
		cl->hello = true;
		cl->v5 = v & 1;
		cl->alias_len = 0; /* aliases live as long as one connection */
		cl->alias_ok = cl->v5 && (v & 0x10);
	}
	feed(cl, p, n, now);
}

static void check(void)
{
	struct mqtt_broker_usage u;
	if (mqtt_broker_check(B))
		abort();
	mqtt_broker_usage(B, &u);
	if (u.heap_bytes != g_live || u.heap_bytes > 16384)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mqtt_broker_config g = {
		.max_conns = 5, .max_sessions = 4, .max_nodes = 16, .max_subs = 8,
		.max_deliveries = 16, .max_retained = 4, .max_packet = 512, .heap_limit = 16384,
		.max_topic_levels = 6, .max_inflight = 2, .max_queue = 4, .max_qos2_rx = 2,
		.max_subs_per_session = 3, .queue_drop_oldest = true, .max_violations = 4,
		.connect_timeout_ms = 5000, .rate_msgs_per_s = 50, .rate_burst_msgs = 20,
		.rate_bytes_per_s = 4000, .rate_burst_bytes = 2000,
		.service_rate_msgs_per_s = 200, .service_rate_burst_msgs = 40,
		.service_rate_bytes_per_s = 16000, .service_rate_burst_bytes = 4000,
		.services = services, .n_services = 2, .log = f_log, .log_burst = 3,
		.log_per_min = 600, .topic_alias_max = 2, .max_delayed_wills = 2,
		.max_session_expiry_s = 200, .max_sub_ids = 2, .max_shared_groups = 2,
		.drop_ids = 3, /* fewer than the sessions: drop-table entries are recycled */
	};
	struct mqtt_broker_ops ops = { .send = f_send, .close = f_close, .heap = { h_alloc, h_free, NULL } };
	struct in in = { data, size };
	g.queue_drop_oldest = size & 1;
	g.rate_disconnect = (size & 2) != 0;
	if (size & 4) /* services unlimited: their buckets never refuse */
		g.service_rate_msgs_per_s = g.service_rate_bytes_per_s = 0;
	size_t need = mqtt_broker_mem_size(&g);
	void *mem = aligned_alloc(8, (need + 7) & ~(size_t)7);
	if (!mem || mqtt_broker_init(&B, mem, need, &g, &ops))
		abort();
	uint64_t now = 1000;
	uint8_t buf[600];
	g_lines = 0;
	for (int i = 0; i < 5; i++) {
		cls[i].c = NULL;
		cls[i].v5 = false;
		cls[i].alias_len = 0;
		cls[i].alias_ok = false;
		cls[i].hello = false;
	}
	while (in.n) {
		uint8_t op = take(&in);
		struct fclient *cl = &cls[op % 5];
		struct wcur w = wcur_make(buf, sizeof buf);
		switch ((op / 5) % 10) {
		case 0:
			if (!cl->c) {
				cl->hello = false; /* a new connection: its first CONNECT is still to come */
				if (mqtt_conn_open(B, (const uint8_t *)cl->identity, strlen(cl->identity), cl->kind,
						   cl, now, &cl->c))
					cl->c = NULL;
			}
			break;
		case 1: {
			uint8_t f = take(&in), v = take(&in);
			if (v & 1) { /* a 5.0 CONNECT: expiry, will delay, limits, sometimes AUTH */
				struct mqtt5_connect k = {
					.client_id = { (const uint8_t *)((f & 1) ? "" : (f & 2) ? "d1" : cl->identity), 0 },
					.clean_start = (f & 4) != 0, .keepalive_s = (uint16_t)((f >> 3) & 3),
					.will = (f & 0x20) != 0, .will_qos = (uint8_t)((f >> 6) % 3),
					.will_retain = (f & 0x40) != 0,
				};
				k.client_id.len = (uint16_t)strlen((const char *)k.client_id.p);
				k.will_topic = (struct mqtt_str){ (const uint8_t *)topics[f % 10],
								  (uint16_t)strlen(topics[f % 10]) };
				k.will_payload = (struct mqtt_str){ (const uint8_t *)"w", 1 };
				if (v & 2) { /* 300 s asked, 200 granted; 1 s: ends at the next ticks */
					k.props.present |= MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY);
					k.props.session_expiry_s = (v & 0x40) ? 1 : 300;
				}
				if (v & 0x10) { /* the broker may send Topic Aliases back */
					k.props.present |= MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS_MAX);
					k.props.topic_alias_max = 1;
				}
				if (v & 4) {
					k.props.present |= MQTT_PROP_BIT(MQTT_PROP_RECEIVE_MAX);
					k.props.receive_max = 1;
				}
				if (v & 8) {
					k.props.present |= MQTT_PROP_BIT(MQTT_PROP_MAX_PACKET_SIZE);
					k.props.max_packet_size = 40;
				}
				if (v & 0x80) {
					k.props.present |= MQTT_PROP_BIT(MQTT_PROP_AUTH_METHOD);
					k.props.auth_method = (struct mqtt_str){ (const uint8_t *)"x", 1 };
				}
				if (v & 0x10) {
					k.will_props.present |= MQTT_PROP_BIT(MQTT_PROP_WILL_DELAY);
					k.will_props.will_delay_s = (v >> 5) & 3;
				}
				if (mqtt5_encode_connect(&w, &k) == 0)
					feed_connect(cl, v, buf, w.pos, now);
				break;
			}
			struct mqtt_connect_args a = {
				.client_id = (f & 1) ? "" : (f & 2) ? "d1" : cl->identity,
				.clean = (f & 4) != 0, .keepalive_s = (uint16_t)((f >> 3) & 3),
				.will_topic = (f & 0x20) ? topics[f % 10] : NULL,
				.will_msg = (const uint8_t *)"w", .will_msg_len = 1,
				.will_qos = (uint8_t)((f >> 6) % 3), .will_retain = (f & 0x40) != 0,
			};
			if (mqtt_encode_connect(&w, &a) == 0)
				feed_connect(cl, v, buf, w.pos, now);
			break;
		}
		case 2: {
			uint8_t f = take(&in);
			const char *fl[2] = { filters[f % 14], filters[(f >> 4) % 14] };
			if (cl->v5) { /* options, a shared filter, sometimes a Subscription Identifier */
				uint8_t o = take(&in);
				struct mqtt5_sub sb[2];
				memset(sb, 0, sizeof sb);
				for (int k = 0; k < 2; k++) {
					const char *x = (o & 0x40) && k ? "$share/g/devices/+/status" : fl[k];
					sb[k].filter = (struct mqtt_str){ (const uint8_t *)x, (uint16_t)strlen(x) };
					sb[k].qos = (uint8_t)((f >> (2 * k)) % 3);
					sb[k].no_local = (o & 1) != 0;
					sb[k].retain_as_published = (o & 2) != 0;
					sb[k].retain_handling = (uint8_t)((o >> 2) % 3);
				}
				struct mqtt_props sp = { 0 };
				if (o & 0x80) {
					sp.present = MQTT_PROP_BIT(MQTT_PROP_SUB_ID);
					sp.sub_id = (o & 0x40) ? 7 : 300;
				}
				if (mqtt5_encode_subscribe(&w, (uint16_t)(f | 1), &sp, sb, 1 + (f & 1)) == 0)
					feed(cl, buf, w.pos, now);
				break;
			}
			uint8_t q[2] = { (uint8_t)(f % 3), (uint8_t)((f >> 2) % 3) };
			if (mqtt_encode_subscribe(&w, (uint16_t)(f | 1), fl, (f & 0x80) ? NULL : q,
						  1 + (f & 1)) == 0)
				feed(cl, buf, w.pos, now);
			break;
		}
		case 3:
		case 4: {
			uint8_t f = take(&in);
			uint8_t plen = take(&in);
			uint8_t qos = (uint8_t)((f >> 4) % 3);
			const char *t = topics[f % 10];
			static const uint8_t payload[255];
			if (cl->v5) { /* properties, a Topic Alias (sometimes without its topic) */
				uint8_t x = take(&in);
				struct mqtt5_publish p = { .topic = { (const uint8_t *)t, (uint16_t)strlen(t) },
							   .payload = payload, .payload_len = plen, .qos = qos,
							   .retain = (f & 0x80) != 0,
							   .pid = (uint16_t)(qos ? (f & 7) + 1 : 0) };
				if (x & 3) {
					p.props.present |= MQTT_PROP_BIT(MQTT_PROP_TOPIC_ALIAS);
					p.props.topic_alias = (uint16_t)(x & 3);
					if (x & 4)
						p.topic.len = 0;
				}
				if (x & 8) {
					p.props.present |= MQTT_PROP_BIT(MQTT_PROP_MESSAGE_EXPIRY);
					p.props.message_expiry_s = 1;
				}
				if (x & 0x10) {
					p.props.present |= MQTT_PROP_BIT(MQTT_PROP_CONTENT_TYPE);
					p.props.content_type = (struct mqtt_str){ (const uint8_t *)"t/x", 3 };
				}
				if (mqtt5_encode_publish(&w, &p) == 0)
					feed(cl, buf, w.pos, now);
				break;
			}
			if (mqtt_encode_publish(&w, (const uint8_t *)t, (uint16_t)strlen(t), payload,
						plen, qos, false, (f & 0x80) != 0,
						(uint16_t)(qos ? (f & 7) + 1 : 0)) == 0)
				feed(cl, buf, w.pos, now);
			break;
		}
		case 5: {
			uint8_t f = take(&in);
			static const enum mqtt_type t[] = { MQTT_PUBACK, MQTT_PUBREC, MQTT_PUBREL,
							    MQTT_PUBCOMP };
			uint16_t pid = (uint16_t)((f >> 2) % 8 + 1);
			if (cl->v5 ? mqtt5_encode_ack(&w, t[f & 3], pid, (f & 0x80) ? 0x80 : 0, NULL) == 0
				   : mqtt_encode_ack(&w, t[f & 3], pid) == 0)
				feed(cl, buf, w.pos, now);
			break;
		}
		case 6: {
			/* raw bytes in a random-sized chunk */
			size_t want = take(&in) % 64u;
			size_t n = MIN(want, in.n);
			feed(cl, in.p, n, now);
			in.p += n;
			in.n -= n;
			break;
		}
		case 7:
			if (cl->c) {
				mqtt_conn_lost(B, cl->c, now);
				cl->c = NULL;
			}
			break;
		case 8:
			now += (uint64_t)take(&in) * 100u;
			mqtt_broker_tick(B, now);
			break;
		default:
			if (cl->v5 && (op & 0x80)) { /* with will, or a Session Expiry change */
				struct mqtt_props dp = { 0 };
				if (op & 1) {
					dp.present = MQTT_PROP_BIT(MQTT_PROP_SESSION_EXPIRY);
					dp.session_expiry_s = (op & 2) ? 60 : 0;
				}
				if (mqtt5_encode_disconnect(&w, (op & 4) ? MQTT_RC_DISCONNECT_WITH_WILL : 0, &dp) == 0)
					feed(cl, buf, w.pos, now);
			} else if (mqtt_encode_simple(&w, (op & 0x80) ? MQTT_DISCONNECT : MQTT_PINGREQ) == 0) {
				feed(cl, buf, w.pos, now);
			}
			break;
		}
		check();
	}
	/* per reason: the burst, plus one line per 100 ms of clock (600 a minute) */
	if (g_lines > MQTT_LOG__COUNT * (3u + (now - 1000u) / 100u + 1u))
		abort();
	mqtt_broker_fini(B);
	if (g_live)
		abort();
	free(mem);
	return 0;
}
