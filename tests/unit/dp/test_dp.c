/* SPDX-License-Identifier: MIT
 * Unit tests for dp/ (the per-core data plane) with a fake TCP below and no TLS client:
 * configuration refusals, admission at SYN time (port, heap watermark, handshakes in
 * flight per core and per source, rate), hostile first bytes (plain MQTT) ending the
 * handshake with an alert and a FIN, peer FIN, RST and timeout during the handshake,
 * TCP reusing an id before the reap, acknowledgement of output chunks in pieces,
 * dp_fini with connections open, and (on a connection taken to open with known secrets
 * through dp_test_establish) in-place decryption in the received buffer: no byte copied
 * while every record arrives whole, the reassembly copy only for a split record, and the
 * key cache serving a busy connection. Every teardown checks that the heap is back to its
 * baseline, no chunk is live and dp_check holds. Full handshakes with real clients are
 * in tests/smoke/hosted-mqtt.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dp/dp.h"
#include "store/ops.h"
#include "lib/err.h"

#include "tests/unit/tls/certs_der.h"

#define MAXC 8u

/* ---- accounted heap ---------------------------------------------------------------- */
static size_t heap_used, heap_limit = 1u << 26;
static long heap_blocks;
static void *t_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx;
	(void)tag;
	if (len > heap_limit - heap_used)
		return NULL;
	heap_used += len;
	heap_blocks++;
	return malloc(len);
}
static void t_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	if (!p)
		return;
	assert_true(len <= heap_used);
	heap_used -= len;
	heap_blocks--;
	free(p);
}
static size_t t_used(void *ctx)
{
	(void)ctx;
	return heap_used;
}
static size_t t_avail(void *ctx)
{
	(void)ctx;
	return heap_limit - heap_used;
}
static int t_random(void *ctx, uint8_t *out, size_t len)
{
	(void)ctx;
	return getrandom(out, len, 0) == (ssize_t)len ? 0 : -E_IO;
}
static int64_t t_now_s(void *ctx)
{
	(void)ctx;
	return 1800000000; /* inside the test certificates' validity */
}
static uint64_t now;
static int64_t t_now_ms(void *ctx)
{
	(void)ctx;
	return (int64_t)now;
}
static uint64_t t_clock(void *ctx)
{
	(void)ctx;
	return now;
}

/* ---- fake TCP ------------------------------------------------------------------------ */
struct fconn {
	size_t unacked; /* bytes handed to send and not acknowledged */
	size_t sent_total;
	int closes, aborts;
	bool closed_reported;
};
static struct fconn fc[MAXC];
static struct dp *D;
static int fail_send;

static int f_send(void *ctx, uint32_t conn, const struct tcp_iov *iov, size_t n)
{
	(void)ctx;
	assert_true(conn < MAXC);
	assert_false(fc[conn].closed_reported);
	if (fail_send)
		return -E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		fc[conn].unacked += iov[i].len;
		fc[conn].sent_total += iov[i].len;
	}
	return 0;
}
static int f_close(void *ctx, uint32_t conn)
{
	(void)ctx;
	fc[conn].closes++;
	return 0;
}
static void f_abort(void *ctx, uint32_t conn)
{
	(void)ctx;
	fc[conn].aborts++;
	/* Outside the connection's callbacks TCP reports closed() at once. */
	fc[conn].closed_reported = true;
	dp_tcp_upper.closed(D, conn, TCP_CLOSE_ABORT);
}
static void f_window(void *ctx, uint32_t conn)
{
	(void)ctx;
	(void)conn;
}
static const struct dp_lower_ops fake_lower = { f_send, f_close, f_abort, f_window };

/* TCP ends the connection (after our FIN, or the peer's RST). */
static void tcp_gone(uint32_t conn, enum tcp_close_reason why)
{
	fc[conn].closed_reported = true;
	dp_tcp_upper.closed(D, conn, why);
}

/* ---- fixture ------------------------------------------------------------------------- */
static struct tls_hs_env *env;
static void *mem;
static size_t baseline;
static const char *const pub_pat[] = { "devices/+/cmd/#" };
static const char *const sub_pat[] = { "devices/+/#" };
static const struct mqtt_acl_service svc[] = { { NULL, pub_pat, sub_pat, 1, 1 } };

static struct dp_config cfg_make(void)
{
	struct dp_config g;
	memset(&g, 0, sizeof g);
	g.max_conns = MAXC;
	g.port = 8883;
	g.hs_per_core = 4;
	g.hs_per_source = 2;
	g.hs_rate_per_s = 100;
	g.hs_burst = 4;
	g.hs_timeout_ms = 5000;
	g.hs_stage_bytes = 16640;
	g.hs_steps_per_poll = 1;
	g.heap_low_watermark = 1u << 20;
	g.max_out_bytes = 8192;
	g.rx_window = 16640;
	g.rec.key_cache_slots = 16;
	g.hs_env = env;
	g.rec.max_plaintext = TLS_REC_MAX_PLAINTEXT;
	g.rec.key_update_after = 1u << 20;
	g.mqtt = (struct mqtt_broker_config){
		.max_conns = MAXC, .max_sessions = MAXC, .max_nodes = 64, .max_subs = 32,
		.max_deliveries = 64, .max_retained = 8, .max_packet = 4096, .heap_limit = 1 << 20,
		.max_topic_levels = 8, .max_inflight = 4, .max_queue = 8, .max_qos2_rx = 4,
		.max_subs_per_session = 4, .queue_drop_oldest = true, .max_violations = 3,
		.connect_timeout_ms = 10000, .services = svc, .n_services = 1,
	};
	g.heap = (struct dp_heap_ops){ t_alloc, t_free, t_used, t_avail, NULL };
	g.lower = fake_lower;
	g.now_ms = t_clock;
	return g;
}

static int setup(void **state)
{
	(void)state;
	heap_used = 0;
	heap_blocks = 0;
	heap_limit = 1u << 26;
	fail_send = 0;
	now = 1000;
	memset(fc, 0, sizeof fc);
	struct tls_hs_config c;
	memset(&c, 0, sizeof c);
	c.max_in_flight = 4;
	c.ca = der_cn;
	c.ca_len = sizeof der_cn;
	c.cert = der_cn;
	c.cert_len = sizeof der_cn;
	c.key = der_key;
	c.key_len = sizeof der_key;
	c.id = (struct tls_id_config){ TLS_ID_FROM_CN, 64, NULL };
	c.ticket_lifetime_s = 0;
	c.ops = (struct tls_hs_ops){ t_alloc, t_free, t_random, t_now_s, t_now_ms, NULL, NULL };
	assert_int_equal(tls_hs_env_create(&c, &env), 0);
	struct dp_config g = cfg_make();
	size_t need = dp_mem_size(&g);
	assert_true(need > 0);
	mem = aligned_alloc(8, (need + 7) & ~(size_t)7);
	assert_non_null(mem);
	assert_int_equal(dp_init(&D, mem, need, &g), 0);
	baseline = heap_used;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	struct dp_stats s;
	dp_poll(D);
	assert_int_equal(dp_check(D), 0);
	dp_stats_get(D, &s);
	assert_int_equal(s.out_chunks_live, 0);
	assert_int_equal(s.open, 0);
	assert_int_equal(heap_used, baseline); /* every connection's bytes given back */
	dp_fini(D);
	tls_hs_env_destroy(env);
	free(mem);
	assert_int_equal(heap_used, 0);
	assert_int_equal(heap_blocks, 0);
	return 0;
}

static bool admit(uint32_t ip, uint16_t port)
{
	return dp_tcp_upper.admit(D, ip, 40000, port);
}

/* A plain MQTT CONNECT: what a client without TLS sends first. */
static uint8_t plain_connect[] = { 0x10, 0x11, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x04, 0x02,
					 0x00, 0x3c, 0x00, 0x05, 'd', 'e', 'v', '-', '1' };

static void t_config_refused(void **state)
{
	(void)state;
	struct dp_config g = cfg_make();
	static const struct {
		const char *what;
		size_t off, len;
	} zero[] = {
		{ "max_conns", offsetof(struct dp_config, max_conns), sizeof g.max_conns },
		{ "port", offsetof(struct dp_config, port), sizeof g.port },
		{ "hs_per_core", offsetof(struct dp_config, hs_per_core), sizeof g.hs_per_core },
		{ "hs_per_source", offsetof(struct dp_config, hs_per_source), sizeof g.hs_per_source },
		{ "hs_rate", offsetof(struct dp_config, hs_rate_per_s), sizeof g.hs_rate_per_s },
		{ "hs_env", offsetof(struct dp_config, hs_env), sizeof g.hs_env },
		{ "rx_window", offsetof(struct dp_config, rx_window), sizeof g.rx_window },
		{ "hs_stage_bytes", offsetof(struct dp_config, hs_stage_bytes), sizeof g.hs_stage_bytes },
		{ "hs_steps_per_poll", offsetof(struct dp_config, hs_steps_per_poll), sizeof g.hs_steps_per_poll },
		{ "now_ms", offsetof(struct dp_config, now_ms), sizeof g.now_ms },
	};
	for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++) {
		struct dp_config b = g;
		memset((uint8_t *)&b + zero[i].off, 0, zero[i].len);
		assert_int_equal(dp_mem_size(&b), 0);
	}
	struct dp *d2;
	uint8_t small[64] __attribute__((aligned(8)));
	assert_int_equal(dp_init(&d2, small, sizeof small, &g), -E_NOMEM);
}

static void t_admission(void **state)
{
	(void)state;
	struct dp_stats s;
	assert_false(admit(0x0a000001, 1883)); /* not our port */
	heap_limit = heap_used + 1000; /* below the watermark */
	assert_false(admit(0x0a000001, 8883));
	heap_limit = 1u << 26;
	/* per source: 2 handshakes in flight from one address */
	assert_true(admit(0x0a000001, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 0, 0x0a000001, 40000, 8883), 0);
	assert_true(admit(0x0a000001, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 1, 0x0a000001, 40001, 8883), 0);
	assert_false(admit(0x0a000001, 8883));
	/* per core: 4 in flight */
	assert_true(admit(0x0a000002, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 2, 0x0a000002, 40000, 8883), 0);
	assert_true(admit(0x0a000003, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 3, 0x0a000003, 40000, 8883), 0);
	assert_false(admit(0x0a000004, 8883));
	/* accept beyond the pool (admitted earlier, raced) is refused: RST, no state */
	assert_true(dp_tcp_upper.accept(D, 4, 0x0a000004, 40000, 8883) < 0);
	assert_int_equal(dp_check(D), 0);
	dp_stats_get(D, &s);
	assert_int_equal(s.refused_port, 1);
	assert_int_equal(s.refused_heap, 1);
	assert_int_equal(s.refused_source, 1);
	assert_int_equal(s.refused_inflight, 1);
	assert_int_equal(s.accept_refused, 1);
	assert_int_equal(s.handshaking, 4);
	assert_true(s.heap_per_conn > 0);
	/* the peers reset: records reaped at the safe point */
	for (uint32_t i = 0; i < 4; i++)
		tcp_gone(i, TCP_CLOSE_RESET);
	assert_int_equal(dp_check(D), 0);
	dp_poll(D);
	dp_stats_get(D, &s);
	assert_int_equal(s.open, 0);
	assert_int_equal(s.close_tcp, 4);
	assert_int_equal(s.reaped, 4);
	/* rate: the bucket (4 deep) is empty after 4 admissions; 10 ms gives one more */
	assert_false(admit(0x0a000005, 8883));
	now += 10;
	assert_true(admit(0x0a000005, 8883));
	assert_false(admit(0x0a000005, 8883));
	dp_stats_get(D, &s);
	assert_int_equal(s.refused_rate, 2);
}

static void t_plain_mqtt_refused(void **state)
{
	(void)state;
	struct dp_stats s;
	assert_true(admit(0x0a000001, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 5, 0x0a000001, 40000, 8883), 0);
	assert_int_equal(dp_tcp_upper.credit(D, 5), 16640);
	assert_int_equal(dp_tcp_upper.recv(D, 5, plain_connect, sizeof plain_connect),
			 sizeof plain_connect);
	dp_stats_get(D, &s);
	assert_int_equal(s.hs_failed, 0); /* staged: the handshake step runs in dp_poll */
	assert_int_equal(dp_tcp_upper.credit(D, 5), 16640 - sizeof plain_connect);
	assert_int_equal(dp_poll(D), 0);
	dp_stats_get(D, &s);
	assert_int_equal(s.hs_failed, 1);
	assert_int_equal(s.handshaking, 0);
	assert_int_equal(fc[5].closes, 1); /* FIN after the alert */
	/* more bytes after the failure are dropped */
	assert_int_equal(dp_tcp_upper.recv(D, 5, plain_connect, 4), 4);
	assert_int_equal(dp_check(D), 0);
	/* TCP acknowledges what was sent, in two pieces, then finishes */
	size_t n = fc[5].unacked; /* mbedTLS may answer garbage with nothing */
	dp_tcp_upper.sent(D, 5, n);
	dp_stats_get(D, &s);
	assert_int_equal(s.out_chunks_live, 0);
	tcp_gone(5, TCP_CLOSE_NORMAL);
	dp_poll(D);
	dp_stats_get(D, &s);
	assert_int_equal(s.close_tcp, 0); /* we asked for it */
	assert_int_equal(s.reaped, 1);
}

/* A minimal TLS 1.3 ClientHello (X25519 share, AES-128-GCM, ECDSA P-256): the server
 * answers with its flight (or a HelloRetryRequest), which exercises the output chunks. */
static size_t client_hello(uint8_t *out)
{
	static const uint8_t head[] = { 0x16, 0x03, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03, 0x03 };
	static const uint8_t mid[] = {
		0x00,                         /* session id */
		0x00, 0x02, 0x13, 0x01,       /* cipher suites */
		0x01, 0x00,                   /* compression */
		0x00, 0x00,                   /* extensions length (patched) */
		0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04,             /* supported_versions */
		0x00, 0x0a, 0x00, 0x06, 0x00, 0x04, 0x00, 0x1d, 0x00, 0x17, /* groups */
		0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, 0x04, 0x03,       /* signature_algorithms */
		0x00, 0x33, 0x00, 0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, /* key_share x25519 */
	};
	size_t n = 0;
	memcpy(out, head, sizeof head);
	n += sizeof head;
	assert_int_equal(getrandom(out + n, 32, 0), 32); /* random */
	n += 32;
	memcpy(out + n, mid, sizeof mid);
	size_t ext_at = n + 7;
	n += sizeof mid;
	assert_int_equal(getrandom(out + n, 32, 0), 32); /* the X25519 share */
	n += 32;
	size_t ext_len = n - (ext_at + 2), hs_len = n - 9, rec_len = n - 5;
	out[ext_at] = (uint8_t)(ext_len >> 8);
	out[ext_at + 1] = (uint8_t)ext_len;
	out[6] = (uint8_t)(hs_len >> 16);
	out[7] = (uint8_t)(hs_len >> 8);
	out[8] = (uint8_t)hs_len;
	out[3] = (uint8_t)(rec_len >> 8);
	out[4] = (uint8_t)rec_len;
	return n;
}

static void t_server_flight_acknowledged(void **state)
{
	(void)state;
	struct dp_stats s;
	uint8_t hello[256];
	size_t n = client_hello(hello);
	assert_true(admit(0x0a000001, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 2, 0x0a000001, 40000, 8883), 0);
	assert_int_equal(dp_tcp_upper.recv(D, 2, hello, n), n);
	assert_int_equal(dp_poll(D), 0);
	dp_stats_get(D, &s);
	assert_int_equal(s.hs_failed, 0);
	assert_true(fc[2].unacked > 0);
	assert_true(s.out_chunks_live > 0);
	assert_true(s.heap_per_conn > 0);
	/* acknowledged in odd pieces: chunks freed as they complete */
	size_t total = fc[2].unacked;
	for (size_t done = 0; done < total;) {
		size_t step = MIN((size_t)97, total - done);
		dp_tcp_upper.sent(D, 2, step);
		done += step;
		assert_int_equal(dp_check(D), 0);
	}
	dp_stats_get(D, &s);
	assert_int_equal(s.out_chunks_live, 0);
	/* a second flight left unacknowledged is freed by the reap after a reset */
	fc[2].unacked = 0;
	assert_true(admit(0x0a000002, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 3, 0x0a000002, 40000, 8883), 0);
	n = client_hello(hello);
	assert_int_equal(dp_tcp_upper.recv(D, 3, hello, n), n);
	assert_int_equal(dp_poll(D), 0);
	assert_true(fc[3].unacked > 0);
	tcp_gone(3, TCP_CLOSE_RESET);
	tcp_gone(2, TCP_CLOSE_RESET);
	dp_poll(D);
	dp_stats_get(D, &s);
	assert_int_equal(s.out_chunks_live, 0);
	assert_int_equal(s.reaped, 2);
}

/* Handshake input is staged and its cryptography runs in dp_poll, hs_steps_per_poll (1
 * here) at a time, round-robin (ADR-024); a peer that sends past the stage loses the
 * excess (TCP drops it and the peer retransmits). */
static void t_handshake_steps_budgeted(void **state)
{
	(void)state;
	struct dp_stats s;
	uint8_t hello[256];
	static const uint32_t ids[] = { 2, 3, 4 };
	static const uint32_t src[] = { 0x0a000001, 0x0a000001, 0x0a000002 };
	for (int i = 0; i < 3; i++) {
		assert_true(admit(src[i], 8883));
		assert_int_equal(dp_tcp_upper.accept(D, ids[i], src[i], 40000, 8883), 0);
		size_t n = client_hello(hello);
		assert_int_equal(dp_tcp_upper.recv(D, ids[i], hello, n), n);
		assert_int_equal(fc[ids[i]].unacked, 0); /* nothing computed yet */
	}
	/* one step per poll: 2, then 1, then 0 still waiting; one more server flight each */
	for (uint32_t left = 2, i = 0; i < 3; i++, left = left ? left - 1 : 0) {
		assert_int_equal(dp_poll(D), left);
		int answered = 0;
		for (int k = 0; k < 3; k++)
			answered += fc[ids[k]].unacked > 0;
		assert_int_equal(answered, (int)i + 1);
	}
	dp_stats_get(D, &s);
	assert_int_equal(s.hs_steps, 3);
	assert_int_equal(s.hs_failed, 0);
	assert_int_equal(s.hs_stage_full, 0);

	/* more than the stage holds: the excess is not consumed, and counted */
	static uint8_t big[16640 + 10];
	memset(big, 0x16, sizeof big);
	assert_true(admit(0x0a000003, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 5, 0x0a000003, 40000, 8883), 0);
	assert_int_equal(dp_tcp_upper.recv(D, 5, big, sizeof big), 16640);
	assert_int_equal(dp_tcp_upper.credit(D, 5), 0);
	dp_stats_get(D, &s);
	assert_int_equal(s.hs_stage_full, 1);
	assert_int_equal(dp_poll(D), 0); /* garbage: the step fails, the connection closes */
	dp_stats_get(D, &s);
	assert_int_equal(s.hs_failed, 1);
	assert_int_equal(dp_check(D), 0);
	for (int i = 0; i < 3; i++)
		tcp_gone(ids[i], TCP_CLOSE_RESET);
	tcp_gone(5, TCP_CLOSE_RESET);
	dp_poll(D);
	dp_stats_get(D, &s);
	assert_int_equal(s.open, 0);
}

static void t_fin_and_timeout_in_handshake(void **state)
{
	(void)state;
	struct dp_stats s;
	/* peer FIN half way through a ClientHello */
	static uint8_t partial_hello[] = { 0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00 };
	assert_true(admit(0x0a000001, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 0, 0x0a000001, 40000, 8883), 0);
	assert_int_equal(dp_tcp_upper.recv(D, 0, partial_hello, sizeof partial_hello),
			 sizeof partial_hello);
	assert_int_equal(dp_tcp_upper.recv(D, 0, NULL, 0), 0);
	assert_int_equal(fc[0].closes, 1);
	dp_stats_get(D, &s);
	assert_int_equal(s.close_peer_fin, 1);
	assert_int_equal(s.handshaking, 0);
	tcp_gone(0, TCP_CLOSE_NORMAL);
	/* a silent client: aborted at its deadline */
	assert_true(admit(0x0a000002, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 1, 0x0a000002, 40000, 8883), 0);
	dp_poll(D);
	assert_int_equal(fc[1].aborts, 0);
	now += 5000;
	dp_poll(D);
	assert_int_equal(fc[1].aborts, 1);
	dp_stats_get(D, &s);
	assert_int_equal(s.hs_timeouts, 1);
	assert_int_equal(s.open, 0);
	assert_int_equal(s.reaped, 2);
}

static void t_id_reused_before_reap(void **state)
{
	(void)state;
	struct dp_stats s;
	assert_true(admit(0x0a000001, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 3, 0x0a000001, 40000, 8883), 0);
	tcp_gone(3, TCP_CLOSE_RESET);
	fc[3].closed_reported = false;
	/* TCP hands id 3 to a new connection before dp_poll ran */
	assert_true(admit(0x0a000001, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 3, 0x0a000001, 40001, 8883), 0);
	assert_int_equal(dp_check(D), 0);
	dp_stats_get(D, &s);
	assert_int_equal(s.reaped, 1);
	assert_int_equal(s.open, 1);
	/* a live id offered again is refused */
	assert_true(dp_tcp_upper.accept(D, 3, 0x0a000001, 40002, 8883) < 0);
	tcp_gone(3, TCP_CLOSE_RESET);
	dp_poll(D);
	/* closed() twice for one id is ignored */
	dp_tcp_upper.closed(D, 3, TCP_CLOSE_RESET);
	assert_int_equal(dp_check(D), 0);
}

static void t_send_refused_then_fini(void **state)
{
	(void)state;
	struct dp_stats s;
	/* TCP refuses the alert (no send reference): nothing held, still closes */
	assert_true(admit(0x0a000001, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 6, 0x0a000001, 40000, 8883), 0);
	fail_send = 1;
	assert_int_equal(dp_tcp_upper.recv(D, 6, plain_connect, sizeof plain_connect),
			 sizeof plain_connect);
	assert_int_equal(dp_poll(D), 0);
	fail_send = 0;
	dp_stats_get(D, &s);
	assert_int_equal(s.out_chunks_live, 0);
	assert_int_equal(fc[6].closes, 1);
	assert_int_equal(dp_check(D), 0);
	/* connections still open at fini are aborted and freed */
	assert_true(admit(0x0a000002, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, 7, 0x0a000002, 40000, 8883), 0);
	tcp_gone(6, TCP_CLOSE_NORMAL);
	dp_poll(D);
	dp_fini(D);
	assert_int_equal(fc[7].aborts, 1);
	assert_true(heap_used <= baseline); /* only the handshake env is left */
	/* rebuild an empty dp so the shared teardown finds a fresh one */
	struct dp_config g = cfg_make();
	memset(fc, 0, sizeof fc);
	assert_int_equal(dp_init(&D, mem, dp_mem_size(&g), &g), 0);
}

/* ---- established connection: in-place decryption ----------------------------------- */

static const uint8_t sec_c2s[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
				     17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
static const uint8_t sec_s2c[32] = { 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
				     0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5,
				     0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf };

static void *c_alloc(void *ctx, size_t len)
{
	(void)ctx;
	return malloc(len);
}
static void c_free(void *ctx, void *p, size_t len)
{
	(void)ctx, (void)len;
	free(p);
}

/* The client's record layer (its own env: its counters are not dp's). */
static struct tls_rec_env cenv;
static struct tls_rec cli;

/* Client data sealed as whole records into seg (a "frame" the test owns). */
static size_t client_records(const uint8_t *msg, size_t len, uint8_t *seg, size_t cap)
{
	size_t n = 0;
	assert_int_equal(tls_rec_write(&cenv, &cli, msg, len, seg, cap, &n), 0);
	return n;
}

static void t_in_place_decryption(void **state)
{
	(void)state;
	struct dp_stats s;
	static uint8_t seg[2048];
	const uint32_t id = 4;
	struct tls_rec_config cc = { TLS_REC_MAX_PLAINTEXT, 1u << 20, { c_alloc, c_free, NULL }, NULL, 0 };
	assert_int_equal(tls_rec_env_init(&cenv, &cc), 0);
	assert_int_equal(tls_rec_open(&cli, TLS_SUITE_AES_128_GCM_SHA256, sec_s2c, sec_c2s, 0, 0), 0);
	struct tls_rec srv;
	assert_int_equal(tls_rec_open(&srv, TLS_SUITE_AES_128_GCM_SHA256, sec_c2s, sec_s2c, 0, 0), 0);

	assert_true(admit(0x0a000009, 8883));
	assert_int_equal(dp_tcp_upper.accept(D, id, 0x0a000009, 40000, 8883), 0);
	assert_int_equal(dp_test_establish(D, id, &srv, "dev-1", false), 0);
	assert_int_equal(dp_test_establish(D, id, &srv, "dev-1", false), -E_INVAL); /* not HS */
	memset(&srv, 0, sizeof srv);
	dp_stats_get(D, &s);
	assert_int_equal(s.established, 1);
	assert_int_equal(s.handshaking, 0);

	/* CONNECT, then PINGREQs: each record whole in one segment, decrypted where it lies. */
	size_t n = client_records(plain_connect, sizeof plain_connect, seg, sizeof seg);
	size_t sent0 = fc[id].sent_total;
	assert_int_equal(dp_tcp_upper.recv(D, id, seg, n), n);
	assert_int_equal(fc[id].sent_total - sent0, 4 + TLS_REC_OVERHEAD); /* CONNACK */
	/* The plaintext is now where the ciphertext was: decrypted in the caller's buffer. */
	assert_memory_equal(seg + TLS_REC_HDR_LEN, plain_connect, sizeof plain_connect);
	static const uint8_t ping[] = { 0xc0, 0x00 };
	for (int i = 0; i < 8; i++) {
		n = client_records(ping, sizeof ping, seg, sizeof seg);
		sent0 = fc[id].sent_total;
		assert_int_equal(dp_tcp_upper.recv(D, id, seg, n), n);
		assert_int_equal(fc[id].sent_total - sent0, 2 + TLS_REC_OVERHEAD); /* PINGRESP */
	}
	/* Two records in one segment: still no copy. */
	n = client_records(ping, sizeof ping, seg, sizeof seg);
	n += client_records(ping, sizeof ping, seg + n, sizeof seg - n);
	assert_int_equal(dp_tcp_upper.recv(D, id, seg, n), n);
	dp_stats_get(D, &s);
	assert_int_equal(s.rx_copied, 0); /* the common case: not one byte copied */
	assert_int_equal(s.close_tls_error, 0);
	/* The busy connection's keys come from the cache: 1 miss per direction. */
	assert_int_equal(s.key_misses, 2);
	assert_true(s.key_hits >= 20);

	/* A record split across two segments goes through the reassembly buffer. */
	n = client_records(ping, sizeof ping, seg, sizeof seg);
	sent0 = fc[id].sent_total;
	assert_int_equal(dp_tcp_upper.recv(D, id, seg, 9), 9);
	assert_int_equal(dp_tcp_upper.recv(D, id, seg + 9, n - 9), n - 9);
	assert_int_equal(fc[id].sent_total - sent0, 2 + TLS_REC_OVERHEAD);
	dp_stats_get(D, &s);
	assert_int_equal(s.rx_copied, n);
	assert_int_equal(dp_check(D), 0);

	/* Peer FIN: our close_notify and FIN, then TCP reports the end and the reap frees all. */
	assert_int_equal(dp_tcp_upper.recv(D, id, NULL, 0), 0);
	assert_int_equal(fc[id].closes, 1);
	tcp_gone(id, TCP_CLOSE_NORMAL);
	dp_poll(D);
	tls_rec_close(&cenv, &cli);
}

static void t_sizes(void **state)
{
	(void)state;
	struct dp_stats s;
	dp_stats_get(D, &s);
	assert_int_equal(s.fixed_per_conn, dp_conn_sizeof() + tcp_cb_size() + tcp_slot_size() +
						   mqtt_sizeof_conn() + mqtt_sizeof_session() + s.rate_per_conn);
	/* the record: TLS state plus a few pointers; the budget of the design brief */
	assert_true(dp_conn_sizeof() <= tls_rec_sizeof() + 64);
	assert_int_equal(s.bytes_per_conn, s.fixed_per_conn);
}

/* The footprint: what doubling the slots adds is slot_bytes per slot, at least the records
 * every connection has; slots x slot_bytes + core_bytes is the whole of both tables. */
static void t_footprint(void **state)
{
	(void)state;
	struct dp_config g = cfg_make();
	struct tcp_config tc;
	tcp_config_default(&tc);
	tc.ports[0] = 8883;
	tc.n_ports = 1;
	dp_config_set_conns(&g, 64);
	dp_tcp_config_set_conns(&tc, 64);
	struct dp_footprint fp;
	assert_int_equal(dp_footprint(&g, &tc, &fp), 0);
	assert_int_equal(fp.slots, 64);
	assert_true(fp.slot_bytes >= dp_conn_sizeof() + tcp_cb_size() + tcp_slot_size() + mqtt_sizeof_conn());
	assert_int_equal(fp.slots * fp.slot_bytes + fp.core_bytes, dp_mem_size(&g) + tcp_stack_mem_size(&tc));
	/* the same slot cost at another size: the tables are linear in the count */
	struct dp_footprint fp2;
	dp_config_set_conns(&g, 256);
	dp_tcp_config_set_conns(&tc, 256);
	assert_int_equal(dp_footprint(&g, &tc, &fp2), 0);
	assert_true(fp2.slot_bytes + 8u >= fp.slot_bytes && fp2.slot_bytes <= fp.slot_bytes + 8u);
	assert_true(fp2.core_bytes + 8u * 256u >= fp.core_bytes && fp2.core_bytes <= fp.core_bytes + 8u * 256u);
	/* refusals: one slot, or TCP sized for another count */
	dp_config_set_conns(&g, 1);
	dp_tcp_config_set_conns(&tc, 1);
	assert_int_equal(dp_footprint(&g, &tc, &fp), -E_INVAL);
	dp_config_set_conns(&g, 64);
	assert_int_equal(dp_footprint(&g, &tc, &fp), -E_INVAL);
}

/* ---- storage: the port opens at RESTORE_END and shuts while storage lags ---- */
static uint32_t link_sent;
static int t_link_send(void *ctx, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx, (void)kind, (void)data, (void)len;
	link_sent++;
	return 0;
}

static int setup_store(void **state)
{
	assert_int_equal(setup(state), 0); /* the environment; its dp is replaced below */
	dp_fini(D);
	free(mem);
	struct dp_config g = cfg_make();
	g.store.on = true;
	g.store.self = 0;
	g.store.held_acks = 64;
	g.store.link = (struct store_link_config){ .backlog_bytes = 65536, .lag_bytes = 16384, .payload_max = 1024,
						   .max_record = 8192, .send = t_link_send, .ctx = NULL };
	link_sent = 0;
	size_t need = dp_mem_size(&g);
	assert_true(need > 0);
	mem = aligned_alloc(8, (need + 7) & ~(size_t)7);
	assert_non_null(mem);
	assert_int_equal(dp_init(&D, mem, need, &g), 0);
	baseline = heap_used;
	return 0;
}

static void store_msg(uint16_t kind, uint64_t v, uint32_t len)
{
	uint8_t m[8];
	for (int i = 0; i < 8; i++)
		m[i] = (uint8_t)(v >> (8 * i));
	dp_store_recv(D, kind, m, len);
}

static void t_storage_admission(void **state)
{
	(void)state;
	struct dp_stats s;
	assert_false(dp_serving(D));
	assert_false(admit(0x0a000001, 8883)); /* no SYN before this core's sessions are back */
	store_msg(STORE_K_RESTORE_BEGIN, UINT64_C(3) << 40, 8);
	assert_false(admit(0x0a000001, 8883));
	store_msg(STORE_K_RESTORE_END, 0, 8);
	assert_true(dp_serving(D));
	assert_true(admit(0x0a000001, 8883));
	store_msg(STORE_K_LAG, 1, 4); /* commits too slow: refused before any cryptography */
	assert_false(admit(0x0a000002, 8883));
	store_msg(STORE_K_LAG, 0, 4);
	assert_true(admit(0x0a000002, 8883));
	dp_stats_get(D, &s);
	assert_int_equal(s.refused_not_serving, 2);
	assert_int_equal(s.refused_store_lag, 1);
}

/* No usable disk (storage.required false): OFF opens the port without persistence. */
static void t_storage_off_serves(void **state)
{
	(void)state;
	assert_false(admit(0x0a000001, 8883));
	dp_store_recv(D, STORE_K_OFF, NULL, 0);
	assert_true(dp_serving(D));
	assert_true(admit(0x0a000001, 8883));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_config_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(t_admission, setup, teardown),
		cmocka_unit_test_setup_teardown(t_plain_mqtt_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(t_server_flight_acknowledged, setup, teardown),
		cmocka_unit_test_setup_teardown(t_handshake_steps_budgeted, setup, teardown),
		cmocka_unit_test_setup_teardown(t_fin_and_timeout_in_handshake, setup, teardown),
		cmocka_unit_test_setup_teardown(t_id_reused_before_reap, setup, teardown),
		cmocka_unit_test_setup_teardown(t_send_refused_then_fini, setup, teardown),
		cmocka_unit_test_setup_teardown(t_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(t_in_place_decryption, setup, teardown),
		cmocka_unit_test_setup_teardown(t_storage_admission, setup_store, teardown),
		cmocka_unit_test_setup_teardown(t_footprint, setup, teardown),
		cmocka_unit_test_setup_teardown(t_storage_off_serves, setup_store, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
