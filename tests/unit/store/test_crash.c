/* SPDX-License-Identifier: MIT
 * Crash consistency, randomized: the whole durable path in one process — the broker
 * (acknowledgements held until their commit), the data core's storage link, the storage
 * engine, the database, the SQLite VFS and the block layer — over the simulated disk of
 * tests/support/fake_blk. Each round formats a blank disk, runs a workload of QoS 1 and 2
 * publishes to persistent sessions (offline ones and one online that acknowledges what it
 * gets) with retained updates, and cuts the power at a random disk request: unflushed
 * writes are dropped or reordered, the write in flight is torn at sector granularity.
 * Then the disk is brought up again and checked:
 *  - it is ours (or, cut during the first format, blank again with nothing acknowledged),
 *    and the database passes PRAGMA integrity_check;
 *  - every message whose PUBACK (QoS 1) or PUBREC (QoS 2) the publisher received is
 *    delivered after the restart to every persistent subscriber, unless that subscriber
 *    had acknowledged it before the cut;
 *  - every retained topic holds its last acknowledged value, or a later one.
 * The workload's log of acknowledgements is the oracle. The base seed is printed; every
 * failure names its round's seed and cut point. Replay one round with
 * URMQTT_CRASH_SEED=<seed> URMQTT_CRASH_ROUNDS=1; URMQTT_CRASH_ROUNDS sets the count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "dp/dp_store.h"
#include "lib/err.h"
#include "mqtt/broker.h"
#include "store/boot.h"
#include "store/engine.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"
#include "tests/support/fake_blk.h"
#include "tests/support/host_hooks.h"

#define ROUNDS_DEFAULT 100
#define N_MSGS 120          /* publishes per round */
#define N_OFF 2             /* offline persistent subscribers */
#define N_RET 3             /* retained topics */
#define DISK_BLOCKS 16384u  /* 8 MiB of 512-byte blocks */
#define MAX_REC (STORE_REC_HDR + 255u + 65535u + 4096u)

/* ---- clock, randomness, allocators ---- */
static uint64_t g_us;
static uint64_t now_us(void *ctx)
{
	(void)ctx;
	return g_us;
}
static uint64_t now_ns(void *ctx)
{
	(void)ctx;
	return g_us * 1000u;
}
static int64_t g_wall_shift; /* seconds the wall clock moved (message expiry) */
static int64_t wall_s(void *ctx)
{
	(void)ctx;
	return HOST_HOOKS_WALL_S + g_wall_shift;
}
static int64_t wall_ms(void *ctx)
{
	(void)ctx;
	return INT64_C(1800000000000) + (int64_t)(g_us / 1000u);
}
static uint64_t g_rng;
static uint64_t rnd(void)
{
	return host_hooks_next(&g_rng);
}
static void random_bytes(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	host_hooks_fill(&g_rng, buf, len);
}
#define h_alloc host_hooks_alloc
#define h_free host_hooks_free

/* ---- clients ---- */
struct client {
	struct mqtt_conn *c;
	uint8_t rx[1 << 17];
	size_t rx_len, rx_pos;
	bool closed;
};

static int t_send(void *ctx, void *user, const uint8_t *buf, size_t len)
{
	(void)ctx;
	struct client *cl = user;
	assert_true(cl->rx_len + len <= sizeof cl->rx);
	memcpy(cl->rx + cl->rx_len, buf, len);
	cl->rx_len += len;
	return 0;
}
static void t_close(void *ctx, void *user)
{
	(void)ctx;
	struct client *cl = user;
	cl->closed = true;
	cl->c = NULL;
}

static bool next_pkt(struct client *cl, uint8_t *type, uint8_t *flags, const uint8_t **body, size_t *len)
{
	if (cl->rx_pos >= cl->rx_len)
		return false;
	size_t hl;
	uint32_t rl;
	enum mqtt_rej rej;
	assert_int_equal(mqtt_fixed_header(cl->rx + cl->rx_pos, cl->rx_len - cl->rx_pos, &hl, &rl, &rej), 0);
	*type = (uint8_t)(cl->rx[cl->rx_pos] >> 4);
	*flags = (uint8_t)(cl->rx[cl->rx_pos] & 15u);
	*body = cl->rx + cl->rx_pos + hl;
	*len = rl;
	cl->rx_pos += hl + rl;
	return true;
}

/* A PUBLISH body: its message number ("m<j>" payload), QoS and packet id. */
static int pub_index(uint8_t flags, const uint8_t *b, size_t n, uint16_t *pid, char *topic, size_t topic_cap)
{
	size_t tl = (size_t)(b[0] << 8 | b[1]);
	assert_true(tl + 2 <= n && tl < topic_cap);
	memcpy(topic, b + 2, tl);
	topic[tl] = 0;
	size_t off = 2 + tl;
	*pid = 0;
	if ((flags >> 1) & 3u) {
		*pid = (uint16_t)(b[off] << 8 | b[off + 1]);
		off += 2;
	}
	assert_true(n > off + 1 && b[off] == 'm');
	int j = 0; /* payload "m<j>", exactly n - off bytes (not NUL-terminated) */
	for (size_t i = off + 1; i < n; i++) {
		assert_true(b[i] >= '0' && b[i] <= '9');
		j = j * 10 + (b[i] - '0');
	}
	return j;
}

/* ---- a node: storage and one broker on a disk ---- */
struct node {
	struct fake_blk *disk;
	struct store_dev dev;
	uint8_t bounce[65536];
	uint8_t scratch[STORE_LAYOUT_SCRATCH];
	uint8_t io_buf[16384];
	struct store_db db;
	struct store_boot_result boot;
	void *emem, *smem, *bmem;
	struct store_engine *eng;
	struct dp_store *st;
	struct mqtt_broker *b;
};

static struct node *g_node;

static int link_send(void *ctx, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	return store_engine_local(g_node->eng, kind, data, len);
}
static int eng_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	assert_int_equal(dst, 0);
	dp_store_in(g_node->st, kind, data, len);
	return 0;
}
static uint32_t eng_home(void *ctx, uint8_t k, const uint8_t *id, size_t n)
{
	(void)ctx, (void)k, (void)id, (void)n;
	return 0;
}

static const char *const acl_all[] = { "#" };
static const struct mqtt_acl_service services[] = { { NULL, acl_all, acl_all, 1, 1 } };

static void step(struct node *n)
{
	g_us += 1000; /* one millisecond per loop pass */
	(void)store_engine_poll(n->eng, 100000);
	(void)dp_store_poll(n->st);
}

static int node_up(struct node *n, struct fake_blk *disk)
{
	memset(n, 0, sizeof *n);
	n->disk = disk;
	g_node = n;
	const struct store_dev_port dport = { now_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&n->dev, fake_blk_dev(disk), n->bounce, sizeof n->bounce, 1000, &dport), 0);
	const struct store_sqlite_mem m = { h_alloc, h_free, NULL, (size_t)32 << 20 };
	assert_int_equal(store_sqlite_init(&m), 0);
	uint8_t guids[48];
	random_bytes(NULL, guids, sizeof guids);
	const struct store_boot_config bc = {
		.layout = { .esp_bytes = 0, .wal_bytes = 1u << 20, .telemetry_pct = 0 },
		.cache_kb = 1024, .checkpoint_pages = 64, .guids = guids, .now_s = 1800000000,
		.scratch = n->scratch, .scratch_len = sizeof n->scratch, .io_buf = n->io_buf,
		.io_buf_len = sizeof n->io_buf, .random = random_bytes, .wall_ms = wall_ms, .wall_s = wall_s,
	};
	int err = store_boot(&n->dev, &bc, &n->db, &n->boot);
	if (err) {
		assert_int_equal(store_sqlite_fini(), 0);
		return err;
	}
	struct dp_store_config sc = { .on = true, .self = 0, .held_acks = 256,
				      .link = { .backlog_bytes = 1u << 20, .lag_bytes = 256u << 10, .payload_max = 2048,
						.max_record = MAX_REC, .send = link_send } };
	size_t sl = dp_store_mem_size(&sc);
	n->smem = aligned_alloc(8, (sl + 7) & ~(size_t)7);
	assert_int_equal(dp_store_init(&n->st, n->smem, sl, &sc, NULL, NULL), 0);
	struct mqtt_broker_config g = {
		.max_conns = 16, .max_sessions = 16, .max_nodes = 64, .max_subs = 64, .max_deliveries = 4096,
		.max_retained = 16, .max_packet = 4096, .heap_limit = 16u << 20, .max_topic_levels = 8,
		.max_inflight = 8, .max_queue = 1000, .max_qos2_rx = 16, .max_subs_per_session = 4,
		.queue_drop_oldest = false, .connect_timeout_ms = 100000, .services = services, .n_services = 1,
		.max_held = 256,
	};
	struct mqtt_broker_ops ops = { .send = t_send, .close = t_close, .heap = { h_alloc, h_free, NULL },
				       .store = dp_store_broker_ops(n->st) };
	size_t bl = mqtt_broker_mem_size(&g);
	n->bmem = aligned_alloc(8, (bl + 7) & ~(size_t)7);
	assert_int_equal(mqtt_broker_init(&n->b, n->bmem, bl, &g, &ops), 0);
	dp_store_bind(n->st, n->b);
	/* The engine last: it starts the restore at once, into the broker above. */
	const struct store_engine_config ec = { .n_data = 1, .payload_max = 2048, .max_record = MAX_REC,
						.out_bytes = 1u << 20, .local_bytes = 1u << 20, .batch_ms = 5,
						.batch_ops = 16, .lag_commit_ms = 1000 };
	const struct store_engine_port ep = { .send = eng_send, .now_us = now_us, .wall_s = wall_s, .home = eng_home };
	size_t el = store_engine_mem_size(&ec);
	n->emem = aligned_alloc(8, (el + 7) & ~(size_t)7);
	assert_int_equal(store_engine_init(&n->eng, n->emem, el, &ec, &ep, &n->db, n->boot.generation), 0);
	for (int i = 0; i < 100000 && !dp_store_serving(n->st); i++)
		step(n);
	assert_true(dp_store_serving(n->st));
	return 0;
}

static void node_down(struct node *n)
{
	mqtt_broker_fini(n->b);
	free(n->bmem);
	store_boot_close(&n->db);
	assert_int_equal(store_sqlite_fini(), 0);
	free(n->smem);
	free(n->emem);
}

/* ---- client actions ---- */
static void in(struct node *n, struct client *cl, const uint8_t *p, size_t len)
{
	if (cl->c)
		(void)!mqtt_conn_input(n->b, cl->c, p, len, g_us / 1000u); /* -E_CLOSED: t_close said so */
}

static void cl_connect(struct node *n, struct client *cl, const char *id, bool clean)
{
	memset(cl, 0, sizeof *cl);
	/* Service identities: the test's ACL rule "#" covers them (a device may use only
	 * devices/<id>/#). */
	assert_int_equal(mqtt_conn_open(n->b, (const uint8_t *)id, strlen(id), MQTT_ID_SERVICE, cl, g_us / 1000u,
					&cl->c), 0);
	uint8_t buf[128];
	struct wcur w = wcur_make(buf, sizeof buf);
	struct mqtt_connect_args a = { .client_id = id, .clean = clean };
	assert_int_equal(mqtt_encode_connect(&w, &a), 0);
	in(n, cl, buf, w.pos);
}

static void subscribe(struct node *n, struct client *cl, const char *filter, uint8_t qos)
{
	uint8_t buf[128];
	struct wcur w = wcur_make(buf, sizeof buf);
	const char *f[] = { filter };
	assert_int_equal(mqtt_encode_subscribe(&w, 1, f, &qos, 1), 0);
	in(n, cl, buf, w.pos);
}

static void send_ack(struct node *n, struct client *cl, enum mqtt_type t, uint16_t pid)
{
	uint8_t buf[4];
	struct wcur w = wcur_make(buf, sizeof buf);
	assert_int_equal(mqtt_encode_ack(&w, t, pid), 0);
	in(n, cl, buf, w.pos);
}

/* Wait (bounded) for a packet of this type; false if it never came. A SUBACK must grant
 * what was asked (a refusal would make the round check nothing). */
static bool wait_for(struct node *n, struct client *cl, uint8_t want)
{
	for (int i = 0; i < 2000; i++) {
		uint8_t t, f;
		const uint8_t *b;
		size_t len;
		while (next_pkt(cl, &t, &f, &b, &len))
			if (t == want) {
				if (t == MQTT_SUBACK)
					assert_true(len == 3 && b[2] != MQTT_SUBACK_FAILURE);
				return true;
			}
		step(n);
	}
	return false;
}

/* ---- the round ---- */
struct oracle {
	bool acked[N_MSGS];            /* the publisher got PUBACK / PUBREC */
	bool on_acked[N_MSGS];         /* the online subscriber acknowledged it */
	int ret_topic[N_MSGS];         /* retained topic of message j, or -1 */
	int last_acked_ret[N_RET];     /* last acknowledged retained message per topic, or -1 */
	uint64_t requests;             /* disk requests of the whole workload (calibration) */
	int n_acked;
};

static const char *ret_topic_name(int k)
{
	static const char *const t[N_RET] = { "t/ret/a", "t/ret/b", "t/ret/c" };
	return t[k];
}

/* Read the online subscriber's deliveries and acknowledge them. */
static void drain_online(struct node *n, struct client *on, struct oracle *o)
{
	uint8_t t, f;
	const uint8_t *b;
	size_t len;
	while (next_pkt(on, &t, &f, &b, &len)) {
		if (t != MQTT_PUBLISH)
			continue;
		uint16_t pid;
		char topic[64];
		int j = pub_index(f, b, len, &pid, topic, sizeof topic);
		if (pid) {
			send_ack(n, on, MQTT_PUBACK, pid);
			if (!on->closed && j >= 0 && j < N_MSGS)
				o->on_acked[j] = true; /* sent before the cut: may or may not be durable */
		}
	}
}

/* The publisher's acknowledgements: PUBACK (QoS 1) and PUBREC (QoS 2, answered PUBREL). */
static void drain_pub(struct node *n, struct client *p, const int *pid_msg, struct oracle *o)
{
	uint8_t t, f;
	const uint8_t *b;
	size_t len;
	while (next_pkt(p, &t, &f, &b, &len)) {
		if (len != 2)
			continue;
		uint16_t pid = (uint16_t)(b[0] << 8 | b[1]);
		if (t == MQTT_PUBACK || t == MQTT_PUBREC) {
			int j = pid_msg[pid];
			assert_true(j >= 0);
			o->acked[j] = true;
			o->n_acked++;
			if (o->ret_topic[j] >= 0 && j > o->last_acked_ret[o->ret_topic[j]])
				o->last_acked_ret[o->ret_topic[j]] = j;
			if (t == MQTT_PUBREC)
				send_ack(n, p, MQTT_PUBREL, pid);
		}
	}
}

static struct client g_off[N_OFF], g_on, g_pub, g_chk;

/* The workload on a blank disk; the device dies at request `cut` (UINT64_MAX: never). */
static void workload(struct fake_blk *disk, uint64_t cut, uint64_t seed, struct oracle *o)
{
	struct node n;
	memset(o, 0, sizeof *o);
	for (int k = 0; k < N_RET; k++)
		o->last_acked_ret[k] = -1;
	assert_int_equal(node_up(&n, disk), 0);
	if (cut != UINT64_MAX)
		fake_blk_die_at(disk, cut, seed);
	/* Persistent subscribers: two go offline after their SUBACK, one stays and acks. */
	for (int i = 0; i < N_OFF; i++) {
		char id[16];
		snprintf(id, sizeof id, "s%d", i);
		cl_connect(&n, &g_off[i], id, false);
		subscribe(&n, &g_off[i], "t/#", (uint8_t)(1 + i)); /* s0 QoS 1, s1 QoS 2 */
		bool ok = wait_for(&n, &g_off[i], MQTT_SUBACK);
		if (g_off[i].c)
			mqtt_conn_lost(n.b, g_off[i].c, g_us / 1000u);
		g_off[i].c = NULL;
		if (!ok)
			goto out; /* the disk died before the subscription was durable: nothing to check */
	}
	cl_connect(&n, &g_on, "on", false);
	subscribe(&n, &g_on, "t/#", 1);
	if (!wait_for(&n, &g_on, MQTT_SUBACK))
		goto out;
	cl_connect(&n, &g_pub, "pub", true);
	int pid_msg[65536];
	for (int i = 0; i < 65536; i++)
		pid_msg[i] = -1;
	for (int j = 0; j < N_MSGS && !g_pub.closed; j++) {
		uint8_t qos = (j % 7 == 3) ? 2 : 1;
		bool ret = j % 4 == 1;
		int rk = ret ? (int)(rnd() % N_RET) : -1;
		char topic[32], payload[16];
		if (ret)
			snprintf(topic, sizeof topic, "%s", ret_topic_name(rk));
		else
			snprintf(topic, sizeof topic, "t/%d", j % 5);
		snprintf(payload, sizeof payload, "m%d", j);
		o->ret_topic[j] = rk;
		uint16_t pid = (uint16_t)(j + 1);
		pid_msg[pid] = j;
		uint8_t buf[128];
		struct wcur w = wcur_make(buf, sizeof buf);
		assert_int_equal(mqtt_encode_publish(&w, (const uint8_t *)topic, (uint16_t)strlen(topic),
						     (const uint8_t *)payload, strlen(payload), qos, false, ret, pid), 0);
		in(&n, &g_pub, buf, w.pos);
		for (uint32_t k = 0; k < 1 + rnd() % 4; k++) { /* a few passes: batches of varying size */
			step(&n);
			drain_pub(&n, &g_pub, pid_msg, o);
			drain_online(&n, &g_on, o);
		}
	}
	for (int k = 0; k < 30; k++) { /* let the last batch commit */
		step(&n);
		drain_pub(&n, &g_pub, pid_msg, o);
		drain_online(&n, &g_on, o);
	}
out:
	if (getenv("URMQTT_CRASH_DEBUG")) {
		struct store_db_counts dc;
		if (store_db_count(&n.db, &dc) == 0)
			printf("# before the cut: %llu sessions, %llu subs, %llu deliveries, %llu messages, %llu retained, "
			       "engine commits %llu apply_failed %llu\n",
			       (unsigned long long)dc.sessions, (unsigned long long)dc.subs, (unsigned long long)dc.dlvs,
			       (unsigned long long)dc.msgs, (unsigned long long)dc.retained,
			       (unsigned long long)store_engine_stats(n.eng)->commits,
			       (unsigned long long)store_engine_stats(n.eng)->apply_failed);
	}
	struct fake_blk_counts c;
	fake_blk_counts(disk, &c);
	o->requests = c.requests;
	node_down(&n);
}

/* After the restart: what each persistent subscriber gets, what is retained. */
static void check(struct fake_blk *disk, const struct oracle *o, uint64_t seed, uint64_t cut)
{
	struct node n;
	int err = node_up(&n, disk);
	if (err) {
		print_error("seed %llu cut %llu: the disk did not come up: %s\n", (unsigned long long)seed,
			    (unsigned long long)cut, n.boot.what);
		fail();
	}
	if (n.boot.found != STORE_DISK_OURS) {
		/* cut during the very first format: nothing can have been acknowledged */
		assert_int_equal(o->n_acked, 0);
		node_down(&n);
		return;
	}
	char *msg = NULL;
	int rc = sqlite3_exec(n.db.h, "PRAGMA integrity_check", NULL, NULL, &msg);
	assert_int_equal(rc, SQLITE_OK);
	sqlite3_free(msg);
	assert_int_equal(store_db_quick_check(&n.db), 0);
	if (getenv("URMQTT_CRASH_DEBUG")) {
		struct store_db_counts dc;
		assert_int_equal(store_db_count(&n.db, &dc), 0);
		printf("# after the cut: %llu sessions, %llu subs, %llu deliveries, %llu messages, %llu retained; "
		       "restored %llu sessions %llu deliveries; %d acked\n",
		       (unsigned long long)dc.sessions, (unsigned long long)dc.subs, (unsigned long long)dc.dlvs,
		       (unsigned long long)dc.msgs, (unsigned long long)dc.retained,
		       (unsigned long long)mqtt_broker_stats(n.b)->restored_sessions,
		       (unsigned long long)mqtt_broker_stats(n.b)->restored_dlvs, o->n_acked);
	}
	/* every persistent subscriber gets every acknowledged message it had not acked */
	const char *ids[N_OFF + 1] = { "s0", "s1", "on" };
	for (int i = 0; i < N_OFF + 1; i++) {
		struct client *cl = &g_off[0];
		memset(cl, 0, sizeof *cl);
		cl_connect(&n, cl, ids[i], false);
		bool got[N_MSGS] = { false };
		for (int round = 0; round < 400; round++) {
			uint8_t t, f;
			const uint8_t *b;
			size_t len;
			bool any = false;
			while (next_pkt(cl, &t, &f, &b, &len)) {
				if (getenv("URMQTT_CRASH_TRACE"))
					printf("# %s <- type %u flags %x len %zu\n", ids[i], t, f, len);
				if (t == MQTT_PUBREL) {
					send_ack(&n, cl, MQTT_PUBCOMP, (uint16_t)(b[0] << 8 | b[1]));
					continue;
				}
				if (t != MQTT_PUBLISH)
					continue;
				any = true;
				uint16_t pid;
				char topic[64];
				int j = pub_index(f, b, len, &pid, topic, sizeof topic);
				if (j >= 0 && j < N_MSGS)
					got[j] = true;
				if (pid)
					send_ack(&n, cl, ((f >> 1) & 3u) == 2 ? MQTT_PUBREC : MQTT_PUBACK, pid);
			}
			step(&n);
			if (!any && round > 20)
				break;
		}
		if (getenv("URMQTT_CRASH_DEBUG")) {
			int ng = 0, no = 0;
			for (int j = 0; j < N_MSGS; j++) {
				ng += got[j];
				no += o->acked[j] && !(i == N_OFF && o->on_acked[j]);
			}
			printf("# %s: got %d, owed %d, closed %d, rx %zu bytes\n", ids[i], ng, no, cl->closed, cl->rx_len);
		}
		for (int j = 0; j < N_MSGS; j++) {
			bool owed = o->acked[j] && !(i == N_OFF && o->on_acked[j]);
			if (owed && !got[j]) {
				print_error("seed %llu cut %llu: message %d was acknowledged to its publisher but %s did not "
					    "get it after the restart\n",
					    (unsigned long long)seed, (unsigned long long)cut, j, ids[i]);
				fail();
			}
		}
		if (cl->c)
			mqtt_conn_lost(n.b, cl->c, g_us / 1000u);
	}
	/* retained: the last acknowledged value or a later one */
	cl_connect(&n, &g_chk, "chk", true);
	subscribe(&n, &g_chk, "t/ret/#", 0);
	(void)wait_for(&n, &g_chk, MQTT_SUBACK);
	int have[N_RET] = { -1, -1, -1 };
	for (int k = 0; k < 10; k++)
		step(&n);
	g_chk.rx_pos = 0;
	uint8_t t, f;
	const uint8_t *b;
	size_t len;
	while (next_pkt(&g_chk, &t, &f, &b, &len)) {
		if (t != MQTT_PUBLISH)
			continue;
		uint16_t pid;
		char topic[64];
		int j = pub_index(f, b, len, &pid, topic, sizeof topic);
		for (int r = 0; r < N_RET; r++)
			if (!strcmp(topic, ret_topic_name(r)))
				have[r] = j;
	}
	for (int r = 0; r < N_RET; r++)
		if (o->last_acked_ret[r] >= 0 &&
		    (have[r] < o->last_acked_ret[r] || o->ret_topic[have[r]] != r)) {
			print_error("seed %llu cut %llu: retained %s is message %d, the last acknowledged was %d\n",
				    (unsigned long long)seed, (unsigned long long)cut, ret_topic_name(r), have[r],
				    o->last_acked_ret[r]);
			fail();
		}
	if (g_chk.c)
		mqtt_conn_lost(n.b, g_chk.c, g_us / 1000u);
	node_down(&n);
}

static struct fake_blk *blank_disk(void)
{
	const struct fake_blk_config c = { .blocks = DISK_BLOCKS, .block_size = 512 };
	struct fake_blk *d = fake_blk_new(&c);
	assert_non_null(d);
	return d;
}

static void t_power_cuts(void **state)
{
	(void)state;
	const char *env = getenv("URMQTT_CRASH_SEED");
	uint64_t base = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
	env = getenv("URMQTT_CRASH_ROUNDS");
	int rounds = env ? atoi(env) : ROUNDS_DEFAULT;
	printf("# crash test: base seed %llu, %d rounds (URMQTT_CRASH_SEED / URMQTT_CRASH_ROUNDS)\n",
	       (unsigned long long)base, rounds);
	/* Calibration: the requests a whole round takes, so cuts land anywhere in it. */
	static struct oracle o;
	g_rng = base;
	struct fake_blk *d = blank_disk();
	workload(d, UINT64_MAX, 0, &o);
	uint64_t total = o.requests;
	assert_true(o.n_acked == N_MSGS);
	fake_blk_free(d);
	uint64_t acked = 0, cuts_hit = 0;
	for (int i = 0; i < rounds; i++) {
		uint64_t seed = base + (uint64_t)i;
		g_rng = seed * 0x9e3779b97f4a7c15ull + 1u;
		uint64_t cut = rnd() % (total + total / 8u);
		d = blank_disk();
		workload(d, cut, seed, &o);
		cuts_hit += fake_blk_dead(d);
		acked += (uint64_t)o.n_acked;
		struct fake_blk *after = fake_blk_after_power_cut(d, seed, NULL);
		assert_non_null(after);
		fake_blk_free(d);
		check(after, &o, seed, cut);
		fake_blk_free(after);
	}
	printf("# crash test: %d rounds, %llu of them cut mid-workload, %llu acknowledged messages checked; %llu "
	       "requests per whole round\n",
	       rounds, (unsigned long long)cuts_hit, (unsigned long long)acked, (unsigned long long)total);
}

/* MQTT 5.0's part of a message is stored with it and comes back at restart: an offline
 * persistent subscriber is owed two messages routed from another shard, one with
 * properties expiring in 1000 s, one expiring in 5 s; the wall clock moves 10 s while the
 * node is down. Afterwards the database holds the first's properties and its expiry
 * (Unix seconds), and the subscriber gets the first only. */
static void t_message_props_and_expiry_restored(void **state)
{
	(void)state;
	static const uint8_t props[] = { 0x03, 0, 4, 't', 'e', 'x', 't', 0x26, 0, 1, 'k', 0, 1, 'v' };
	struct fake_blk *disk = blank_disk();
	struct node n;
	g_wall_shift = 0;
	assert_int_equal(node_up(&n, disk), 0);
	cl_connect(&n, &g_chk, "sub", false);
	subscribe(&n, &g_chk, "t/v5/#", 1);
	assert_true(wait_for(&n, &g_chk, MQTT_SUBACK));
	mqtt_conn_lost(n.b, g_chk.c, g_us / 1000u);
	struct mqtt_message keep = { .topic = (const uint8_t *)"t/v5/keep", .topic_len = 9,
				     .payload = (const uint8_t *)"a", .payload_len = 1, .props = props,
				     .props_len = sizeof props, .expiry_s = 1000, .qos = 1 };
	struct mqtt_message gone = { .topic = (const uint8_t *)"t/v5/gone", .topic_len = 9,
				     .payload = (const uint8_t *)"b", .payload_len = 1, .expiry_s = 5, .qos = 1 };
	bool rec = false;
	assert_int_equal(mqtt_broker_route_remote(n.b, &keep, &rec), 0);
	assert_true(rec);
	assert_int_equal(mqtt_broker_route_remote(n.b, &gone, &rec), 0);
	for (int i = 0; i < 200; i++) /* past storage.batch_ms: committed */
		step(&n);
	node_down(&n);
	g_wall_shift = 10;
	assert_int_equal(node_up(&n, disk), 0);
	struct sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_prepare_v2(n.db.h, "SELECT props,expires FROM msg WHERE topic=CAST('t/v5/keep' AS BLOB)",
					    -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	assert_int_equal(sqlite3_column_bytes(q, 0), (int)sizeof props);
	assert_memory_equal(sqlite3_column_blob(q, 0), props, sizeof props);
	assert_int_equal(sqlite3_column_int64(q, 1), HOST_HOOKS_WALL_S + 1000);
	(void)sqlite3_finalize(q);
	cl_connect(&n, &g_chk, "sub", false);
	int got = 0, got_keep = 0;
	for (int i = 0; i < 200; i++) {
		uint8_t t, f;
		const uint8_t *b;
		size_t len;
		while (next_pkt(&g_chk, &t, &f, &b, &len))
			if (t == MQTT_PUBLISH) {
				got++;
				got_keep += len > 11 && memcmp(b + 2, "t/v5/keep", 9) == 0;
			}
		step(&n);
	}
	assert_int_equal(got, 1);
	assert_int_equal(got_keep, 1);
	mqtt_conn_lost(n.b, g_chk.c, g_us / 1000u);
	node_down(&n);
	fake_blk_free(disk);
	g_wall_shift = 0;
}

/* One integer from SQL on the node's database. */
static int64_t q_int(struct node *n, const char *sql)
{
	struct sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_prepare_v2(n->db.h, sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(q, 0);
	(void)sqlite3_finalize(q);
	return v;
}

/* A database of schema version 1 (made from today's by taking away what versions 2 to 5
 * added, with a stored message, a retained one and a session with a subscription in it) is upgraded at open step by
 * step to the current version, its rows kept. */
static void t_schema_upgrades(void **state)
{
	(void)state;
	struct fake_blk *disk = blank_disk();
	struct node n;
	g_wall_shift = 0;
	assert_int_equal(node_up(&n, disk), 0);
	assert_int_equal(sqlite3_exec(n.db.h,
				      "INSERT INTO msg(mkey,qos,refs,topic,payload) VALUES(7,1,0,x'61',x'62');"
				      "INSERT INTO retained(topic,qos,payload) VALUES(x'72',1,x'76');"
				      "INSERT INTO session(skey,kind,id,created) VALUES(9,0,x'6431',0);"
				      "INSERT INTO sub(skey,filter,qos) VALUES(9,x'64657669636573',1);"
				      "ALTER TABLE session DROP COLUMN expiry;ALTER TABLE sub DROP COLUMN subid;"
				      "ALTER TABLE msg DROP COLUMN props;ALTER TABLE msg DROP COLUMN expires;"
				      "ALTER TABLE retained DROP COLUMN props;ALTER TABLE retained DROP COLUMN expires;"
				      "DROP TABLE allowed_id;DROP TABLE revoked_id;UPDATE meta SET v=1 WHERE k='schema'",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	node_down(&n);
	assert_int_equal(node_up(&n, disk), 0);
	assert_int_equal(q_int(&n, "SELECT v FROM meta WHERE k='schema'"), STORE_DB_SCHEMA_VERSION);
	assert_int_equal(q_int(&n, "SELECT count(*) FROM revoked_id"), 0);
	assert_int_equal(q_int(&n, "SELECT count(*) FROM allowed_id"), 0);
	assert_int_equal(q_int(&n, "SELECT count(*) FROM retained WHERE props IS NULL AND expires IS NULL"), 1);
	/* version 5: a session's expiry and a subscription's identifier, NULL for older rows */
	assert_int_equal(q_int(&n, "SELECT count(*) FROM session WHERE skey=9 AND expiry IS NULL"), 1);
	assert_int_equal(q_int(&n, "SELECT count(*) FROM sub WHERE skey=9 AND subid IS NULL"), 1);
	node_down(&n);
	fake_blk_free(disk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_message_props_and_expiry_restored),
		cmocka_unit_test(t_schema_upgrades),
		cmocka_unit_test(t_power_cuts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
