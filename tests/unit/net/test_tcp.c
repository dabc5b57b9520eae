/* SPDX-License-Identifier: MIT
 * Packet-level tests for net/tcp: a scripted peer drives the stack through the fake port
 * and clock of test_tcp_harness.h. Covers the cookie handshake and its validation/expiry,
 * admission, data both ways with delayed/merged ACKs, RTO and backoff, fast retransmit
 * and NewReno partial ACKs, RFC 5961 RST/SYN/ACK cases, window updates, zero-window
 * probing, FIN in every state, RSTs to closed ports, a full table, parser rejections, a
 * 1 MiB echo over a clean and over a seeded lossy link, the echo pump's one segment per
 * request and a SYN flood that costs no state (their speed is micro_tcp's, `make bench`).
 * Every teardown checks invariants and leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "lib/err.h"
#include "test_tcp_harness.h"

#define SYN 0x02
#define FIN 0x01
#define RST 0x04
#define PSH 0x08
#define ACK 0x10

/* The scripted peer's view of one connection. */
struct peer {
	uint16_t port;
	uint32_t seq;  /* next sequence number we send */
	uint32_t ack;  /* next sequence number we expect from the server */
	uint16_t wnd;
	uint32_t conn;
};

static uint8_t pattern[1 << 16];

static void p_send(struct peer *p, uint8_t flags, const void *data, size_t len)
{
	h_send_opts(H_CLI_IP, p->port, H_PORT, flags, p->seq, p->ack, p->wnd, -1, -1, data, len);
	p->seq += (uint32_t)len + ((flags & (FIN | SYN)) ? 1u : 0u);
}

static void p_raw(struct peer *p, uint8_t flags, uint32_t seq, uint32_t ack, const void *data, size_t len)
{
	h_send_opts(H_CLI_IP, p->port, H_PORT, flags, seq, ack, p->wnd, -1, -1, data, len);
}

/* SYN, check the SYN-ACK and that no state exists, final ACK, check accept. */
static void handshake(struct peer *p, uint16_t port, int mss, int ws, uint16_t wnd)
{
	struct h_seg s;
	memset(p, 0, sizeof *p);
	p->port = port;
	p->seq = 1000u * port;
	p->wnd = wnd;
	uint32_t open_before = tcp_conn_count(H.t);
	h_send_opts(H_CLI_IP, port, H_PORT, SYN, p->seq, 0, 65535, mss, ws, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, SYN | ACK);
	assert_int_equal(s.ack, p->seq + 1);
	assert_int_equal(s.sport, H_PORT);
	assert_int_equal(s.dport, port);
	assert_int_equal(s.mss, 1460);
	assert_int_equal(s.ws, ws >= 0 ? 7 : -1);
	assert_int_equal(tcp_conn_count(H.t), open_before); /* no state before the final ACK */
	p->seq++;
	p->ack = s.seq + 1;
	uint32_t acc = H.n_accept;
	p_send(p, ACK, NULL, 0);
	assert_int_equal(H.n_accept, acc + 1);
	assert_int_equal(tcp_conn_count(H.t), open_before + 1);
	p->conn = H.last_conn;
	assert_false(h_pop(&s));
}

static void send_bytes(uint32_t conn, size_t off, size_t len)
{
	struct tcp_iov iov = { pattern + off, len };
	assert_int_equal(tcp_send(H.t, conn, &iov, 1), 0);
	H.conns[conn].tx_len += len;
}

static int setup_cfg(struct tcp_config *cfg)
{
	for (size_t i = 0; i < sizeof pattern; i++)
		pattern[i] = (uint8_t)(i * 7 + (i >> 8));
	return h_init_cfg(cfg, 1 << 16);
}

static int setup(void **state)
{
	(void)state;
	struct tcp_config cfg;
	h_config(&cfg);
	return setup_cfg(&cfg);
}

static int teardown(void **state)
{
	(void)state;
	int rc = tcp_check_invariants(H.t);
	for (uint32_t i = 0; i < 16; i++)
		tcp_abort(H.t, i);
	if (!rc && (tcp_conn_count(H.t) != 0 || tcp_sref_count(H.t) != 0 || tcp_hold_count(H.t) != 0 ||
		    tcp_check_invariants(H.t)))
		rc = -1;
	h_fini();
	return rc;
}

/* ---- handshake and cookies ---- */

static void test_handshake_via_cookie(void **state)
{
	(void)state;
	struct peer p;
	handshake(&p, 40000, 1460, 7, 1000);
	assert_true(H.conns[p.conn].open);
	assert_int_equal(tcp_stats(H.t)->syn_cookie_sent, 1);
	assert_int_equal(tcp_check_invariants(H.t), 0);
}

static void test_cookie_encodes_mss_and_wscale(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	/* Peer MSS 1000 -> the largest cookie MSS not above it is 536. */
	handshake(&p, 40001, 1000, 3, 100); /* window 100 << 3 = 800 bytes */
	send_bytes(p.conn, 0, 2000);
	size_t total = 0;
	while (h_pop(&s)) {
		assert_true(s.len <= 536);
		total += s.len;
	}
	/* 800-byte scaled window: one full segment; the 264-byte runt waits (sender SWS
	 * avoidance) until the ACK slides the window */
	assert_int_equal(total, 536);
	p.ack += 536;
	p_send(&p, ACK, NULL, 0);
	total = 0;
	while (h_pop(&s))
		total += s.len;
	assert_int_equal(total, 536); /* again one segment into the slid 800-byte window */
	/* Our window is scaled by 7 once the peer offered scaling. */
	p_send(&p, ACK | PSH, "x", 1);
	h_advance(40);
	assert_true(h_pop(&s));
	assert_int_equal(s.wnd, 512); /* right edge of the SYN-ACK window kept, rounded up */
	/* No window scale option -> no scaling either way, default MSS without option. */
	struct peer q;
	memset(&q, 0, sizeof q);
	h_send_opts(H_CLI_IP, 40002, H_PORT, SYN, 5000, 0, 65535, -1, -1, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.ws, -1);
}

static void test_cookie_validation_and_expiry(void **state)
{
	(void)state;
	struct h_seg s;
	const struct tcp_stats *st = tcp_stats(H.t);
	/* SYN, then a forged ACK (wrong cookie) -> dropped silently and counted (an RST
	 * would kill a handshake whose final ACK is only late), no state. */
	h_send_opts(H_CLI_IP, 41000, H_PORT, SYN, 777, 0, 65535, 1460, -1, NULL, 0);
	assert_true(h_pop(&s));
	uint32_t cookie = s.seq;
	h_send_opts(H_CLI_IP, 41000, H_PORT, ACK, 778, cookie + 2, 65535, -1, -1, NULL, 0);
	assert_false(h_pop(&s));
	assert_int_equal(st->cookie_bad, 1);
	assert_int_equal(st->rst_sent, 0);
	/* Right cookie, wrong ISN (seq) or wrong port -> rejected. */
	h_send_opts(H_CLI_IP, 41000, H_PORT, ACK, 779, cookie + 1, 65535, -1, -1, NULL, 0);
	h_send_opts(H_CLI_IP, 41001, H_PORT, ACK, 778, cookie + 1, 65535, -1, -1, NULL, 0);
	assert_int_equal(st->cookie_bad, 3);
	assert_int_equal(tcp_conn_count(H.t), 0);
	h_drain();
	/* One key period later the cookie is still good (carrying data in the final ACK). */
	H.now += 64000;
	h_send_opts(H_CLI_IP, 41000, H_PORT, ACK | PSH, 778, cookie + 1, 65535, -1, -1, "hi", 2);
	assert_int_equal(tcp_conn_count(H.t), 1);
	assert_int_equal(H.conns[H.last_conn].rx_len, 2);
	assert_memory_equal(H.conns[H.last_conn].rx, "hi", 2);
	/* Two periods later it has expired. */
	h_send_opts(H_CLI_IP, 42000, H_PORT, SYN, 999, 0, 65535, 1460, -1, NULL, 0);
	h_drain();
	h_advance(64000);
	assert_true(h_pop(&s));         /* delayed ACK of "hi" */
	assert_false(h_pop(&s));
	H.now += 64000;
	tcp_poll(H.t);
	h_drain();
	uint32_t c2 = 0;
	h_send_opts(H_CLI_IP, 42000, H_PORT, SYN, 999, 0, 65535, 1460, -1, NULL, 0);
	assert_true(h_pop(&s));
	c2 = s.seq;
	H.now += 2 * 64000 + 1;
	h_send_opts(H_CLI_IP, 42000, H_PORT, ACK, 1000, c2 + 1, 65535, -1, -1, NULL, 0);
	assert_int_equal(st->cookie_expired + st->cookie_bad, 4);
	assert_false(h_pop(&s));
	assert_int_equal(st->rst_sent, 0);
	assert_int_equal(tcp_conn_count(H.t), 1);
}

static void test_admission_refused_and_remembered(void **state)
{
	(void)state;
	struct h_seg s;
	H.admit_ok = false;
	h_send_opts(H_CLI_IP, 43000, H_PORT, SYN, 1, 0, 65535, 1460, -1, NULL, 0);
	h_send_opts(H_CLI_IP, 43000, H_PORT, SYN, 1, 0, 65535, 1460, -1, NULL, 0);
	assert_false(h_pop(&s)); /* dropped silently */
	assert_int_equal(H.n_admit, 1);
	assert_int_equal(tcp_stats(H.t)->syn_remembered, 1);
	H.admit_ok = true;
	H.now += 5001;
	h_send_opts(H_CLI_IP, 43000, H_PORT, SYN, 1, 0, 65535, 1460, -1, NULL, 0);
	assert_int_equal(H.n_admit, 2);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, SYN | ACK);
	/* accept() may still refuse at the final ACK: RST, no closed() callback. */
	H.accept_rc = -1;
	h_send_opts(H_CLI_IP, 43000, H_PORT, ACK, 2, s.seq + 1, 65535, -1, -1, NULL, 0);
	assert_true(h_pop(&s));
	assert_true(s.flags & RST);
	assert_int_equal(tcp_conn_count(H.t), 0);
	assert_int_equal(H.n_closed, 0);
}

/* ---- data ---- */

static void test_data_both_ways_delayed_and_merged_acks(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 44000, 1460, -1, 65535);
	p_send(&p, ACK | PSH, "hello", 5);
	assert_int_equal(H.conns[p.conn].rx_len, 5);
	tcp_poll(H.t);
	assert_false(h_pop(&s)); /* delayed */
	h_advance(39);
	assert_false(h_pop(&s));
	h_advance(1);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, ACK);
	assert_int_equal(s.ack, p.seq);
	assert_int_equal(tcp_stats(H.t)->delayed_acks, 1);
	/* Every second segment is acknowledged at the end of the loop turn. */
	p_send(&p, ACK, pattern, 1000);
	p_send(&p, ACK, pattern + 1000, 1000);
	assert_false(h_pop(&s));
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, p.seq);
	assert_false(h_pop(&s));
	assert_memory_equal(H.conns[p.conn].rx + 5, pattern, 2000);
	/* A reply ready in the same turn carries the ACK: no pure ACK follows. */
	H.send_in_recv = true;
	p_send(&p, ACK | PSH, "q", 1);
	assert_true(h_pop(&s));
	assert_int_equal(s.len, 1);
	assert_int_equal(s.data[0], 'r');
	assert_int_equal(s.ack, p.seq);
	h_advance(100);
	assert_false(h_pop(&s));
	H.send_in_recv = false;
	/* Server to peer: segmented at the MSS, sent() reports acknowledged bytes. */
	send_bytes(p.conn, 0, 3000);
	size_t got = 0;
	uint32_t first = 0;
	while (h_pop(&s)) {
		if (!got)
			first = s.seq;
		assert_memory_equal(s.data, pattern + got, s.len);
		assert_true(s.len <= 1460);
		got += s.len;
	}
	assert_int_equal(got, 3000);
	p.ack = first + 3000;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(H.conns[p.conn].acked, 3001); /* + the 'r' */
	assert_int_equal(tcp_sref_count(H.t), 0);
}

static void test_recv_partial_consumption(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 44100, 1460, -1, 65535);
	H.recv_limit = 300;
	p_send(&p, ACK, pattern, 1000);
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, p.seq - 700); /* only what the upper layer took */
	/* the peer retransmits the rest */
	H.recv_limit = (size_t)-1;
	p_raw(&p, ACK, p.seq - 700, p.ack, pattern + 300, 700);
	assert_int_equal(H.conns[p.conn].rx_len, 1000);
	assert_memory_equal(H.conns[p.conn].rx, pattern, 1000);
}

static void test_duplicate_and_reordered_segments(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 44200, 1460, -1, 65535);
	uint32_t base = p.seq;
	/* second segment first: not buffered, duplicate ACK asks for the hole */
	p_raw(&p, ACK, base + 500, p.ack, pattern + 500, 500);
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, base);
	assert_int_equal(H.conns[p.conn].rx_len, 0);
	p_raw(&p, ACK, base, p.ack, pattern, 500);
	p_raw(&p, ACK, base + 500, p.ack, pattern + 500, 500);
	/* overlapping duplicate: only the new part is delivered */
	p_raw(&p, ACK, base + 250, p.ack, pattern + 250, 1000);
	assert_int_equal(H.conns[p.conn].rx_len, 1250);
	assert_memory_equal(H.conns[p.conn].rx, pattern, 1250);
	/* an exact old duplicate is answered by an ACK and not delivered */
	h_drain();
	p_raw(&p, ACK, base, p.ack, pattern, 500);
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, base + 1250);
	assert_int_equal(H.conns[p.conn].rx_len, 1250);
}


/* ---- reordered handshake and the out-of-order hold ---- */

/* Data overtaking the final ACK: a segment beyond ISN + 1 cannot validate (the cookie
 * binds the peer's ISN) and must be dropped silently, never answered with an RST; the
 * late final ACK then opens the connection and the peer's retransmission is taken. */
static void test_reordered_final_ack_after_data(void **state)
{
	(void)state;
	struct h_seg s;
	const struct tcp_stats *st = tcp_stats(H.t);
	uint32_t isn = 70000;
	h_send_opts(H_CLI_IP, 43100, H_PORT, SYN, isn, 0, 65535, 1460, -1, NULL, 0);
	assert_true(h_pop(&s));
	uint32_t cookie = s.seq;
	uint64_t bad = st->cookie_bad;
	/* two data segments from later in the flight arrive first */
	h_send_opts(H_CLI_IP, 43100, H_PORT, ACK, isn + 1 + 1460, cookie + 1, 65535, -1, -1, pattern + 1460, 1460);
	h_send_opts(H_CLI_IP, 43100, H_PORT, ACK | PSH, isn + 1 + 11680, cookie + 1, 65535, -1, -1, pattern, 100);
	tcp_poll(H.t);
	assert_false(h_pop(&s)); /* no RST, nothing */
	assert_int_equal(st->cookie_bad, bad + 2);
	assert_int_equal(st->rst_sent, 0);
	assert_int_equal(tcp_conn_count(H.t), 0);
	/* the delayed pure final ACK completes the handshake */
	h_send_opts(H_CLI_IP, 43100, H_PORT, ACK, isn + 1, cookie + 1, 65535, -1, -1, NULL, 0);
	assert_int_equal(tcp_conn_count(H.t), 1);
	uint32_t c = H.last_conn;
	/* the peer resends the first segment: delivered */
	h_send_opts(H_CLI_IP, 43100, H_PORT, ACK, isn + 1, cookie + 1, 65535, -1, -1, pattern, 1460);
	assert_int_equal(H.conns[c].rx_len, 1460);
	assert_int_equal(st->rst_sent, 0);
}

/* A first data segment (seq ISN + 1) carrying the cookie in SEG.ACK - 1 completes the
 * handshake by itself; a later segment that overtook it is held, and the pure final
 * ACK arriving last is harmless. */
static void test_reordered_data_completes_handshake(void **state)
{
	(void)state;
	struct h_seg s;
	uint32_t isn = 80000;
	h_send_opts(H_CLI_IP, 43200, H_PORT, SYN, isn, 0, 65535, 1460, -1, NULL, 0);
	assert_true(h_pop(&s));
	uint32_t cookie = s.seq;
	h_send_opts(H_CLI_IP, 43200, H_PORT, ACK, isn + 1, cookie + 1, 65535, -1, -1, pattern, 1000);
	assert_int_equal(tcp_conn_count(H.t), 1);
	uint32_t c = H.last_conn;
	assert_int_equal(H.conns[c].rx_len, 1000);
	/* third segment before the second: held */
	h_send_opts(H_CLI_IP, 43200, H_PORT, ACK, isn + 2001, cookie + 1, 65535, -1, -1, pattern + 2000, 1000);
	assert_int_equal(tcp_hold_count(H.t), 1);
	h_send_opts(H_CLI_IP, 43200, H_PORT, ACK, isn + 1, cookie + 1, 65535, -1, -1, NULL, 0);
	h_send_opts(H_CLI_IP, 43200, H_PORT, ACK, isn + 1001, cookie + 1, 65535, -1, -1, pattern + 1000, 1000);
	assert_int_equal(H.conns[c].rx_len, 3000);
	assert_memory_equal(H.conns[c].rx, pattern, 3000);
	assert_int_equal(tcp_hold_count(H.t), 0);
	assert_int_equal(tcp_conn_count(H.t), 1);
	assert_int_equal(tcp_stats(H.t)->rst_sent, 0);
}

/* Segments beyond a gap are held; each gets an immediate duplicate ACK; when the hole
 * is filled everything is delivered in order and one ACK covers it all. */
static void test_ooo_hold_released_in_order(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 43300, 1460, -1, 65535);
	uint32_t base = p.seq;
	const struct tcp_stats *st = tcp_stats(H.t);
	/* 4, 2, 3 (and 3 again), then 1 */
	static const int order[] = { 3, 1, 2, 2 };
	for (size_t i = 0; i < 4; i++) {
		uint32_t k = (uint32_t)order[i];
		p_raw(&p, ACK, base + k * 1000, p.ack, pattern + k * 1000, 1000);
		assert_true(h_pop(&s)); /* immediate duplicate ACK, not deferred to the poll */
		assert_int_equal(s.ack, base);
		assert_int_equal(s.len, 0);
	}
	assert_int_equal(H.conns[p.conn].rx_len, 0);
	assert_int_equal(tcp_hold_count(H.t), 3);
	assert_int_equal(st->ooo_held, 3);
	assert_int_equal(st->ooo_dup, 1);
	p_raw(&p, ACK, base, p.ack, pattern, 1000);
	assert_int_equal(H.conns[p.conn].rx_len, 4000);
	assert_memory_equal(H.conns[p.conn].rx, pattern, 4000);
	assert_int_equal(tcp_hold_count(H.t), 0);
	assert_int_equal(st->ooo_released, 3);
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, base + 4000); /* the cumulative ACK jumps over the held data */
	assert_false(h_pop(&s));
	/* overlapping held pieces and a partly old one */
	base += 4000;
	p_raw(&p, ACK, base + 500, p.ack, pattern + 4500, 1000);
	p_raw(&p, ACK, base + 1000, p.ack, pattern + 5000, 1000);
	p_raw(&p, ACK, base + 3000, p.ack, pattern + 7000, 500); /* beyond a second gap */
	assert_int_equal(tcp_hold_count(H.t), 3);
	p_raw(&p, ACK, base, p.ack, pattern + 4000, 700);
	assert_int_equal(H.conns[p.conn].rx_len, 6000);
	assert_int_equal(tcp_hold_count(H.t), 1); /* the piece beyond the second gap */
	p_raw(&p, ACK, base + 2000, p.ack, pattern + 6000, 1000);
	assert_int_equal(H.conns[p.conn].rx_len, 7500);
	assert_memory_equal(H.conns[p.conn].rx, pattern, 7500);
	assert_int_equal(tcp_hold_count(H.t), 0);
	assert_int_equal(tcp_check_invariants(H.t), 0);
}

/* A FIN beyond the gap is held with its data and delivered when the hole fills. */
/* The mutable view through tcp_input_in_frame: a segment inside the frame is delivered
 * (and overwritten by the upper layer in place), one outside it is counted and dropped. */
static void test_input_in_frame(void **state)
{
	(void)state;
	struct peer p;
	static struct h_pkt pkt;
	handshake(&p, 43311, 1460, -1, 65535);
	const struct tcp_stats *st = tcp_stats(H.t);
	h_build(&pkt, H_CLI_IP, H_SRV_IP, 43311, H_PORT, ACK, p.seq, p.ack, 65535, -1, -1, pattern, 100);
	/* seg lies at offset 4 of a larger "frame" */
	static uint8_t frame[H_FRAME + 8];
	memcpy(frame + 4, pkt.b, pkt.len);
	const uint8_t *ro = frame + 4;
	tcp_input_in_frame(H.t, H_CLI_IP, H_SRV_IP, frame, 4 + pkt.len, ro, pkt.len);
	assert_int_equal(H.conns[p.conn].rx_len, 100);
	assert_memory_equal(H.conns[p.conn].rx, pattern, 100);
	assert_int_equal(frame[4 + pkt.len - 100], (uint8_t)(pattern[0] ^ 0xff)); /* written in place */
	/* Outside the frame, or running past its end: refused before any parsing. */
	uint64_t in0 = st->in_segs;
	tcp_input_in_frame(H.t, H_CLI_IP, H_SRV_IP, frame, 4 + pkt.len - 1, ro, pkt.len);
	tcp_input_in_frame(H.t, H_CLI_IP, H_SRV_IP, frame + 5, pkt.len, ro, pkt.len);
	tcp_input_in_frame(H.t, H_CLI_IP, H_SRV_IP, NULL, 0, ro, pkt.len);
	assert_int_equal(st->rx_not_in_frame, 3);
	assert_int_equal(st->in_segs, in0);
	assert_int_equal(H.conns[p.conn].rx_len, 100);
}

static void test_ooo_hold_fin(void **state)
{
	(void)state;
	struct peer p;
	handshake(&p, 43400, 1460, -1, 65535);
	uint32_t base = p.seq;
	p_raw(&p, ACK | FIN, base + 1000, p.ack, pattern + 1000, 300);
	assert_int_equal(H.conns[p.conn].eof, 0);
	assert_int_equal(tcp_hold_count(H.t), 1);
	p_raw(&p, ACK, base, p.ack, pattern, 1000);
	assert_int_equal(H.conns[p.conn].rx_len, 1300);
	assert_int_equal(H.conns[p.conn].eof, 1);
	assert_int_equal(tcp_hold_count(H.t), 0);
	struct h_seg s;
	h_drain();
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, base + 1301);
	/* a bare FIN beyond a gap is not held (the peer resends it) */
	struct peer q;
	h_drain();
	handshake(&q, 43401, 1460, -1, 65535);
	p_raw(&q, ACK | FIN, q.seq + 10, q.ack, NULL, 0);
	assert_int_equal(tcp_hold_count(H.t), 0);
}

/* Pool limits: a connection takes at most ooo_per_conn slots, the pool is shared; over
 * either limit the segment is dropped (counted) and the peer's retransmission is still
 * delivered correctly. */
static void test_ooo_hold_limits(void **state)
{
	(void)state;
	struct tcp_config cfg;
	h_fini();
	h_config(&cfg);
	cfg.ooo_slots = 4;
	cfg.ooo_per_conn = 3;
	cfg.ooo_slot_size = 600;
	assert_int_equal(setup_cfg(&cfg), 0);
	const struct tcp_stats *st = tcp_stats(H.t);
	struct peer a, b;
	handshake(&a, 43500, 1460, -1, 65535);
	handshake(&b, 43501, 1460, -1, 65535);
	uint32_t ba = a.seq, bb = b.seq;
	/* a: segments 1..4 of 1000 bytes each are cut to 600 bytes, the 4th hits the cap */
	for (uint32_t k = 1; k <= 4; k++)
		p_raw(&a, ACK, ba + k * 1000, a.ack, pattern + k * 1000, 1000);
	assert_int_equal(tcp_hold_count(H.t), 3);
	assert_int_equal(st->ooo_conn_full, 1);
	/* b: one slot left in the pool, then it is exhausted */
	p_raw(&b, ACK, bb + 100, b.ack, pattern + 100, 100);
	p_raw(&b, ACK, bb + 300, b.ack, pattern + 300, 100);
	assert_int_equal(tcp_hold_count(H.t), 4);
	assert_int_equal(st->ooo_pool_full, 1);
	assert_int_equal(tcp_check_invariants(H.t), 0);
	/* a's hole filled: the held prefix of segment 1 follows, then a gap again */
	p_raw(&a, ACK, ba, a.ack, pattern, 1000);
	assert_int_equal(H.conns[a.conn].rx_len, 1600);
	assert_int_equal(tcp_hold_count(H.t), 3); /* 2 of a (not contiguous), 1 of b */
	/* the peer resends from 1600: everything up to 5000 arrives in order */
	p_raw(&a, ACK, ba + 1600, a.ack, pattern + 1600, 1400);
	p_raw(&a, ACK, ba + 3000, a.ack, pattern + 3000, 1000);
	p_raw(&a, ACK, ba + 4000, a.ack, pattern + 4000, 1000);
	assert_int_equal(H.conns[a.conn].rx_len, 5000);
	assert_memory_equal(H.conns[a.conn].rx, pattern, 5000);
	/* b: the pool has room again */
	p_raw(&b, ACK, bb + 300, b.ack, pattern + 300, 100);
	assert_int_equal(tcp_hold_count(H.t), 2);
	p_raw(&b, ACK, bb, b.ack, pattern, 100);
	p_raw(&b, ACK, bb + 200, b.ack, pattern + 200, 100);
	assert_int_equal(H.conns[b.conn].rx_len, 400);
	assert_memory_equal(H.conns[b.conn].rx, pattern, 400);
	assert_int_equal(tcp_hold_count(H.t), 0);
	/* held data past the advertised window is cut to it: 300 of 600 bytes fit */
	h_fini();
	h_config(&cfg);
	assert_int_equal(setup_cfg(&cfg), 0);
	h_drain();
	handshake(&a, 43502, 1460, -1, 65535);
	ba = a.seq;
	static uint8_t edge[600];
	memcpy(edge, pattern + 65235, 300);
	memset(edge + 300, 0xee, 300);
	p_raw(&a, ACK, ba + 65235, a.ack, edge, 600);
	assert_int_equal(tcp_hold_count(H.t), 1);
	for (uint32_t off = 0; off < 65235; off += 1460)
		p_raw(&a, ACK, ba + off, a.ack, pattern + off, off + 1460 <= 65235 ? 1460 : 65235 - off);
	assert_int_equal(H.conns[a.conn].rx_len, 65535);
	assert_memory_equal(H.conns[a.conn].rx, pattern, 65535);
	assert_int_equal(tcp_hold_count(H.t), 0);
}

/* With the pool disabled out-of-order data is dropped as before. */
static void test_ooo_hold_disabled(void **state)
{
	(void)state;
	struct tcp_config cfg;
	h_fini();
	h_config(&cfg);
	cfg.ooo_slots = 0;
	assert_int_equal(setup_cfg(&cfg), 0);
	struct peer p;
	handshake(&p, 43600, 1460, -1, 65535);
	p_raw(&p, ACK, p.seq + 1000, p.ack, pattern + 1000, 1000);
	assert_int_equal(tcp_hold_count(H.t), 0);
	p_raw(&p, ACK, p.seq, p.ack, pattern, 1000);
	assert_int_equal(H.conns[p.conn].rx_len, 1000);
	assert_int_equal(tcp_stats(H.t)->rx_ooo, 1);
}

/* Held slots go back to the pool on abort, on an accepted RST, on a FIN, and when
 * the upper layer aborts from inside the delivery of held data; partial consumption
 * of held data keeps the rest held. */
static void test_ooo_hold_no_leak(void **state)
{
	(void)state;
	struct peer p;
	handshake(&p, 43700, 1460, -1, 65535);
	p_raw(&p, ACK, p.seq + 1000, p.ack, pattern, 500);
	p_raw(&p, ACK, p.seq + 2000, p.ack, pattern, 500);
	assert_int_equal(tcp_hold_count(H.t), 2);
	tcp_abort(H.t, p.conn);
	assert_int_equal(tcp_hold_count(H.t), 0);
	assert_int_equal(tcp_stats(H.t)->ooo_discarded, 2);

	h_drain();
	handshake(&p, 43701, 1460, -1, 65535);
	p_raw(&p, ACK, p.seq + 1000, p.ack, pattern, 500);
	assert_int_equal(tcp_hold_count(H.t), 1);
	p_raw(&p, RST, p.seq, 0, NULL, 0);
	assert_int_equal(H.conns[p.conn].closed_reason, TCP_CLOSE_RESET);
	assert_int_equal(tcp_hold_count(H.t), 0);

	/* an in-order FIN while data beyond it is "held" (bogus peer): freed */
	h_drain();
	handshake(&p, 43702, 1460, -1, 65535);
	p_raw(&p, ACK, p.seq + 1000, p.ack, pattern, 500);
	p_send(&p, ACK | FIN, NULL, 0);
	assert_int_equal(H.conns[p.conn].eof, 1);
	assert_int_equal(tcp_hold_count(H.t), 0);
	assert_int_equal(tcp_check_invariants(H.t), 0);
	assert_int_equal(tcp_close(H.t, p.conn), 0);

	/* partial consumption of held data: the rest stays held until resent */
	h_drain();
	handshake(&p, 43703, 1460, -1, 65535);
	uint32_t base = p.seq;
	p_raw(&p, ACK, base + 100, p.ack, pattern + 100, 900);
	H.recv_limit = 400;
	p_raw(&p, ACK, base, p.ack, pattern, 100); /* 100 taken, 400 of the held 900 */
	assert_int_equal(H.conns[p.conn].rx_len, 500);
	assert_int_equal(tcp_hold_count(H.t), 1);
	assert_int_equal(tcp_check_invariants(H.t), 0);
	H.recv_limit = (size_t)-1;
	p_raw(&p, ACK, base + 500, p.ack, pattern + 500, 100); /* resent: rest released */
	assert_int_equal(H.conns[p.conn].rx_len, 1000);
	assert_memory_equal(H.conns[p.conn].rx, pattern, 1000);
	assert_int_equal(tcp_hold_count(H.t), 0);

	/* abort from inside recv() while held data is being delivered */
	h_drain();
	handshake(&p, 43704, 1460, -1, 65535);
	p_raw(&p, ACK, p.seq + 100, p.ack, pattern + 100, 100);
	p_raw(&p, ACK, p.seq + 300, p.ack, pattern + 300, 100);
	H.abort_in_recv = p.conn + 1;
	p_raw(&p, ACK, p.seq, p.ack, pattern, 100);
	H.abort_in_recv = 0;
	assert_int_equal(H.conns[p.conn].closed_reason, TCP_CLOSE_ABORT);
	assert_int_equal(tcp_hold_count(H.t), 0);
	assert_int_equal(tcp_check_invariants(H.t), 0);
}

/* ---- loss recovery ---- */

static void test_rto_backoff_and_timeout(void **state)
{
	(void)state;
	teardown(NULL);
	struct tcp_config cfg;
	h_config(&cfg);
	cfg.max_retries = 3;
	assert_int_equal(setup_cfg(&cfg), 0);
	struct peer p;
	struct h_seg s;
	handshake(&p, 45000, 1460, -1, 65535);
	send_bytes(p.conn, 0, 100);
	assert_true(h_pop(&s));
	uint32_t seq = s.seq;
	/* RFC 6298: 1 s initial RTO, doubling each time. */
	static const uint32_t waits[] = { 1000, 2000, 4000 };
	for (size_t i = 0; i < 3; i++) {
		h_advance(waits[i] - 1);
		assert_false(h_pop(&s));
		h_advance(1);
		assert_true(h_pop(&s));
		assert_int_equal(s.seq, seq);
		assert_int_equal(s.len, 100);
	}
	h_advance(8000);
	assert_true(h_pop(&s));
	assert_true(s.flags & RST);
	assert_int_equal(H.conns[p.conn].closed_reason, TCP_CLOSE_TIMEOUT);
	assert_int_equal(tcp_conn_count(H.t), 0);
	assert_int_equal(tcp_sref_count(H.t), 0);
}

static void test_rtt_sample_sets_rto(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 45100, 1460, -1, 65535);
	send_bytes(p.conn, 0, 100);
	assert_true(h_pop(&s));
	H.now += 100;
	p.ack = s.seq + 100;
	p_send(&p, ACK, NULL, 0); /* sample 100 ms: RTO = 100 + 4*50 = 300 ms */
	send_bytes(p.conn, 100, 100);
	assert_true(h_pop(&s));
	h_advance(299);
	assert_false(h_pop(&s));
	h_advance(1);
	assert_true(h_pop(&s));
	assert_int_equal(s.seq, p.ack);
	/* the ACK of a retransmission gives no sample (Karn) and resets the backoff */
	p.ack += 100;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(tcp_sref_count(H.t), 0);
}

static void test_fast_retransmit_newreno(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 45200, 1460, 7, 2000); /* 256000-byte window */
	send_bytes(p.conn, 0, 10 * 1460);
	uint32_t seqs[10];
	for (int i = 0; i < 10; i++) {
		assert_true(h_pop(&s));
		seqs[i] = s.seq;
	}
	assert_false(h_pop(&s));
	uint32_t una = seqs[0];
	/* segment 2 lost: ACK of 1 then three duplicates */
	p.ack = una + 1460;
	p_send(&p, ACK, NULL, 0);
	p_send(&p, ACK, NULL, 0);
	p_send(&p, ACK, NULL, 0);
	assert_false(h_pop(&s));
	p_send(&p, ACK, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.seq, seqs[1]);
	assert_int_equal(s.len, 1460);
	assert_int_equal(tcp_stats(H.t)->fast_retransmits, 1);
	h_drain();
	/* partial ACK (segments 2-3; 4 also lost): retransmit 4 at once */
	p.ack = seqs[3];
	p_send(&p, ACK, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.seq, seqs[3]);
	assert_int_equal(tcp_stats(H.t)->partial_acks, 1);
	h_drain();
	/* full ACK ends recovery; everything acknowledged */
	p.ack = seqs[9] + 1460;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(H.conns[p.conn].acked, 10 * 1460);
	assert_int_equal(tcp_sref_count(H.t), 0);
	/* no RTO pending any more */
	h_advance(5000);
	assert_false(h_pop(&s));
}

/* ---- RFC 5961 ---- */

static void test_rfc5961_rst_syn_ack(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	const struct tcp_stats *st = tcp_stats(H.t);
	handshake(&p, 46000, 1460, -1, 65535);
	/* in-window RST, not exact: challenge ACK, connection stays */
	p_raw(&p, RST, p.seq + 100, 0, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, ACK);
	assert_int_equal(s.ack, p.seq);
	assert_true(H.conns[p.conn].open);
	/* out-of-window RST: silently dropped */
	p_raw(&p, RST, p.seq + 1000000, 0, NULL, 0);
	assert_false(h_pop(&s));
	/* SYN on an established connection: challenge ACK whatever its sequence number */
	p_raw(&p, SYN, p.seq + 5, 0, NULL, 0);
	p_raw(&p, SYN, p.seq - 100000, 0, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, ACK);
	assert_true(h_pop(&s));
	assert_true(H.conns[p.conn].open);
	/* ACK of data never sent: challenged, data not delivered */
	p_raw(&p, ACK, p.seq, p.ack + 5000, "zz", 2);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, p.seq);
	assert_int_equal(H.conns[p.conn].rx_len, 0);
	assert_int_equal(st->rx_bad_ack, 1);
	/* challenge ACKs are rate-limited */
	for (int i = 0; i < 40; i++)
		p_raw(&p, SYN, p.seq, 0, NULL, 0);
	assert_true(st->challenge_limited > 0);
	assert_true(st->challenge_acks <= 20);
	h_drain();
	/* exact RST closes */
	p_raw(&p, RST, p.seq, 0, NULL, 0);
	assert_false(h_pop(&s));
	assert_int_equal(H.conns[p.conn].closed_reason, TCP_CLOSE_RESET);
	assert_int_equal(tcp_conn_count(H.t), 0);
}

/* ---- windows ---- */

static void test_window_update_tied_to_credit(void **state)
{
	(void)state;
	teardown(NULL);
	struct tcp_config cfg;
	h_config(&cfg);
	cfg.syn_wnd = 2000;
	assert_int_equal(setup_cfg(&cfg), 0);
	struct peer p;
	struct h_seg s;
	handshake(&p, 47000, 1460, -1, 65535);
	H.credit = 0;
	p_send(&p, ACK, pattern, 1000);
	p_send(&p, ACK, pattern + 1000, 1000);
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.wnd, 0); /* right edge kept, nothing new offered */
	/* data into a zero window: trimmed, ACK repeats the window */
	p_send(&p, ACK, "a", 1);
	assert_int_equal(H.conns[p.conn].rx_len, 2000);
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, p.seq - 1);
	assert_int_equal(s.wnd, 0);
	p.seq--;
	/* credit grows: window update */
	H.credit = 8000;
	tcp_window_update(H.t, p.conn);
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.wnd, 8000);
	assert_int_equal(s.ack, p.seq);
	/* a small increase is not worth a segment (receiver SWS avoidance) */
	H.credit = 8100;
	tcp_window_update(H.t, p.conn);
	tcp_poll(H.t);
	assert_false(h_pop(&s));
}

static void test_zero_window_probe(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 47100, 1460, -1, 65535);
	p.wnd = 0;
	p_send(&p, ACK, NULL, 0);
	send_bytes(p.conn, 0, 100);
	assert_false(h_pop(&s)); /* window closed */
	h_advance(999);
	assert_false(h_pop(&s));
	h_advance(1);
	assert_true(h_pop(&s)); /* first probe: one byte */
	assert_int_equal(s.len, 1);
	uint32_t una = s.seq;
	p_send(&p, ACK, NULL, 0); /* still zero */
	h_advance(1999);
	assert_false(h_pop(&s));
	h_advance(1);
	assert_true(h_pop(&s)); /* backed off */
	assert_int_equal(s.len, 1);
	assert_int_equal(tcp_stats(H.t)->persist_probes, 2);
	assert_true(H.conns[p.conn].open); /* probing never gives up while answered */
	/* window opens: the data flows */
	p.wnd = 1000;
	p_send(&p, ACK, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.seq, una);
	assert_int_equal(s.len, 100);
	p.ack = una + 100;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(H.conns[p.conn].acked, 100);
	/* a probe byte the peer accepted is acknowledged like data */
	p.wnd = 0;
	p_send(&p, ACK, NULL, 0);
	send_bytes(p.conn, 100, 10);
	h_advance(1000);
	assert_true(h_pop(&s));
	assert_int_equal(s.len, 1);
	p.ack += 1;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(H.conns[p.conn].acked, 101);
	p.wnd = 1000;
	p_send(&p, ACK, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.len, 9);
	assert_int_equal(tcp_check_invariants(H.t), 0);
}

static void test_window_closed_on_data_in_flight(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 47200, 1460, -1, 65535);
	send_bytes(p.conn, 0, 500);
	assert_true(h_pop(&s));
	uint32_t una = s.seq;
	p.wnd = 0; /* acknowledges nothing, closes the window */
	p_send(&p, ACK, NULL, 0);
	/* far longer than max_retries RTOs: the peer keeps answering, we keep probing */
	for (int i = 0; i < 20; i++) {
		h_advance(60000);
		assert_true(h_pop(&s));
		assert_int_equal(s.seq, una);
		assert_true(s.len <= 1);
		p_send(&p, ACK, NULL, 0);
		h_drain();
	}
	assert_true(H.conns[p.conn].open);
	p.wnd = 4000;
	p_send(&p, ACK, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.seq, una);
	assert_int_equal(s.len, 500);
	p.ack = una + 500;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(H.conns[p.conn].acked, 500);
	h_advance(120000);
	assert_false(h_pop(&s));
}

/* ---- closing ---- */

static void test_close_peer_first(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 48000, 1460, -1, 65535);
	p_send(&p, ACK | FIN, NULL, 0); /* ESTABLISHED -> CLOSE-WAIT */
	assert_int_equal(H.conns[p.conn].eof, 1);
	tcp_poll(H.t);
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, p.seq);
	/* we can still send in CLOSE-WAIT */
	send_bytes(p.conn, 0, 10);
	assert_true(h_pop(&s));
	assert_int_equal(tcp_close(H.t, p.conn), 0); /* -> LAST-ACK, FIN */
	assert_true(h_pop(&s));
	assert_true(s.flags & FIN);
	uint32_t fin_seq = s.seq;
	/* FIN lost: retransmitted with the data */
	h_advance(1000);
	assert_true(h_pop(&s));
	assert_int_equal(s.len, 10);
	assert_true(s.flags & FIN);
	p.ack = fin_seq + 1;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(H.conns[p.conn].closed_reason, TCP_CLOSE_NORMAL);
	assert_int_equal(tcp_conn_count(H.t), 0);
	/* a late segment now meets the listener: its cookie fails, dropped silently */
	uint64_t bad = tcp_stats(H.t)->cookie_bad;
	p_send(&p, ACK, NULL, 0);
	assert_false(h_pop(&s));
	assert_int_equal(tcp_stats(H.t)->cookie_bad, bad + 1);
}

static void test_close_server_first_no_time_wait(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 48100, 1460, -1, 65535);
	send_bytes(p.conn, 0, 50);
	assert_int_equal(tcp_close(H.t, p.conn), 0);
	assert_int_equal(tcp_close(H.t, p.conn), 0); /* idempotent */
	struct tcp_iov iov = { pattern, 1 };
	assert_int_equal(tcp_send(H.t, p.conn, &iov, 1), -E_CLOSED);
	assert_true(h_pop(&s)); /* the data went out at tcp_send */
	assert_int_equal(s.len, 50);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, FIN | ACK);
	/* the retransmission after an RTO carries data and FIN together */
	h_advance(1000);
	assert_true(h_pop(&s));
	assert_int_equal(s.len, 50);
	assert_true(s.flags & FIN);
	p.ack = s.seq + 51;
	p_send(&p, ACK, NULL, 0); /* FIN-WAIT-1 -> FIN-WAIT-2 */
	assert_true(H.conns[p.conn].open);
	p_send(&p, ACK, "late", 4); /* the peer may still send */
	assert_int_equal(H.conns[p.conn].rx_len, 4);
	p_send(&p, ACK | FIN, NULL, 0); /* -> closed at once, no TIME-WAIT */
	assert_true(h_pop(&s));
	assert_int_equal(s.ack, p.seq);
	assert_int_equal(H.conns[p.conn].closed_reason, TCP_CLOSE_NORMAL);
	assert_int_equal(tcp_conn_count(H.t), 0);
}

static void test_close_simultaneous(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 48200, 1460, -1, 65535);
	assert_int_equal(tcp_close(H.t, p.conn), 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, FIN | ACK);
	uint32_t fin = s.seq;
	p_send(&p, ACK | FIN, NULL, 0); /* FIN-WAIT-1 -> CLOSING (ours not acked yet) */
	assert_true(H.conns[p.conn].open);
	assert_int_equal(H.conns[p.conn].eof, 1);
	p.ack = fin + 1;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(H.conns[p.conn].closed_reason, TCP_CLOSE_NORMAL);
}

static void test_fin_wait2_timeout_and_abort(void **state)
{
	(void)state;
	struct peer p, q;
	struct h_seg s;
	handshake(&p, 48300, 1460, -1, 65535);
	assert_int_equal(tcp_close(H.t, p.conn), 0);
	assert_true(h_pop(&s));
	p.ack = s.seq + 1;
	p_send(&p, ACK, NULL, 0);
	h_advance(29999);
	assert_true(H.conns[p.conn].open);
	h_advance(1);
	assert_int_equal(H.conns[p.conn].closed_reason, TCP_CLOSE_TIMEOUT);
	h_drain();
	/* abort from inside the recv callback: RST, closed() after the callback */
	handshake(&q, 48301, 1460, -1, 65535);
	H.abort_in_recv = q.conn + 1;
	p_send(&q, ACK, "x", 1);
	assert_true(h_pop(&s));
	assert_true(s.flags & RST);
	assert_int_equal(H.conns[q.conn].closed_reason, TCP_CLOSE_ABORT);
	assert_int_equal(tcp_conn_count(H.t), 0);
}

/* ---- closed ports, table limits, parser ---- */

static void test_rst_to_closed_port_rate_limited(void **state)
{
	(void)state;
	struct h_seg s;
	h_send_opts(H_CLI_IP, 50000, 9999, SYN, 100, 0, 65535, -1, -1, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, RST | ACK);
	assert_int_equal(s.ack, 101);
	h_send_opts(H_CLI_IP, 50000, 9999, ACK, 100, 4242, 65535, -1, -1, "abc", 3);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, RST);
	assert_int_equal(s.seq, 4242);
	h_send_opts(H_CLI_IP, 50000, 9999, RST, 100, 0, 65535, -1, -1, NULL, 0);
	assert_false(h_pop(&s)); /* never answer a RST */
	for (int i = 0; i < 50; i++)
		h_send_opts(H_CLI_IP, 50000, 9999, SYN, 100, 0, 65535, -1, -1, NULL, 0);
	assert_int_equal(h_pending_out(), 18); /* burst of 20 */
	assert_int_equal(tcp_stats(H.t)->rst_limited, 32);
	h_drain();
	H.now += 1000;
	h_send_opts(H_CLI_IP, 50000, 9999, SYN, 100, 0, 65535, -1, -1, NULL, 0);
	assert_int_equal(h_pending_out(), 1);
}

static void test_table_full(void **state)
{
	(void)state;
	teardown(NULL);
	struct tcp_config cfg;
	h_config(&cfg);
	cfg.max_conns = 2;
	assert_int_equal(setup_cfg(&cfg), 0);
	struct peer a, b;
	struct h_seg s;
	handshake(&a, 51000, 1460, -1, 65535);
	h_send_opts(H_CLI_IP, 51002, H_PORT, SYN, 7, 0, 65535, 1460, -1, NULL, 0);
	assert_true(h_pop(&s));
	uint32_t c = s.seq;
	handshake(&b, 51001, 1460, -1, 65535);
	/* full: a SYN is dropped, a valid final ACK gets a RST */
	h_send_opts(H_CLI_IP, 51003, H_PORT, SYN, 7, 0, 65535, 1460, -1, NULL, 0);
	assert_false(h_pop(&s));
	h_send_opts(H_CLI_IP, 51002, H_PORT, ACK, 8, c + 1, 65535, -1, -1, NULL, 0);
	assert_true(h_pop(&s));
	assert_int_equal(s.flags, RST);
	assert_int_equal(tcp_stats(H.t)->conn_table_full, 2);
	assert_int_equal(tcp_conn_count(H.t), 2);
	/* freeing one makes room */
	tcp_abort(H.t, a.conn);
	h_drain();
	handshake(&a, 51004, 1460, -1, 65535);
	assert_int_equal(tcp_check_invariants(H.t), 0);
}

static void test_table_churn_keeps_probe_chains(void **state)
{
	(void)state;
	/* open/close many flows in a small table: backward-shift deletion must keep every
	 * remaining connection findable (invariant 3) */
	struct peer p[16];
	uint32_t seed = 7;
	for (int round = 0; round < 200; round++) {
		seed = seed * 1103515245u + 12345u;
		int i = (int)((seed >> 16) % 16);
		if (tcp_conn_count(H.t) < 16 && (round % 3 != 2)) {
			handshake(&p[i], (uint16_t)(52000 + round), 1460, -1, 65535);
		} else {
			for (uint32_t c = 0; c < 16; c++)
				if (H.conns[c].open && (seed >> 8) % 2) {
					tcp_abort(H.t, c);
					break;
				}
		}
		h_drain();
		assert_int_equal(tcp_check_invariants(H.t), 0);
	}
}

struct parse_case {
	const char *name;
	uint8_t hdr[40];
	size_t len;
	bool fix_csum;
	size_t counter_off;
};

#define OFF(f) offsetof(struct tcp_stats, f)

static void test_parser_rejections(void **state)
{
	(void)state;
	static const struct parse_case cases[] = {
		{ "short", { 0x9c, 0x40, 0x22, 0xb3 }, 19, true, OFF(rx_short) },
		{ "offset below 5", { 0x9c, 0x40, 0x22, 0xb3, 0, 0, 0, 1, 0, 0, 0, 0, 0x40, 0x02 }, 20, true, OFF(rx_bad_off) },
		{ "offset past end", { 0x9c, 0x40, 0x22, 0xb3, 0, 0, 0, 1, 0, 0, 0, 0, 0xf0, 0x02 }, 24, true, OFF(rx_bad_off) },
		{ "option len 1", { 0x9c, 0x40, 0x22, 0xb3, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 0x02, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0 }, 24, true, OFF(rx_bad_opt) },
		{ "option past header", { 0x9c, 0x40, 0x22, 0xb3, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 0x02, 0, 0, 0, 0, 0, 0, 1, 8, 9, 0 }, 24, true, OFF(rx_bad_opt) },
		{ "mss len 3", { 0x9c, 0x40, 0x22, 0xb3, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 0x02, 0, 0, 0, 0, 0, 0, 2, 3, 5, 0 }, 24, true, OFF(rx_bad_opt) },
		{ "ws len 4", { 0x9c, 0x40, 0x22, 0xb3, 0, 0, 0, 1, 0, 0, 0, 0, 0x60, 0x02, 0, 0, 0, 0, 0, 0, 3, 4, 5, 0 }, 24, true, OFF(rx_bad_opt) },
		{ "bad checksum", { 0x9c, 0x40, 0x22, 0xb3, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0x12, 0x34 }, 20, false, OFF(rx_bad_csum) },
		{ "source port 0", { 0, 0, 0x22, 0xb3, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff }, 20, true, OFF(rx_bad_port) },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct parse_case *c = &cases[i];
		uint8_t b[40];
		memcpy(b, c->hdr, sizeof b);
		if (c->fix_csum && c->len >= 18) {
			b[16] = b[17] = 0;
			uint16_t k = net_csum_fold(net_csum_add(net_csum_pseudo(H_CLI_IP, H_SRV_IP, 6, (uint16_t)c->len), b, c->len));
			b[16] = (uint8_t)(k >> 8), b[17] = (uint8_t)k;
		}
		const uint64_t *ctr = (const uint64_t *)(const void *)((const uint8_t *)tcp_stats(H.t) + c->counter_off);
		uint64_t before = *ctr;
		tcp_input(H.t, H_CLI_IP, H_SRV_IP, b, c->len);
		if (*ctr != before + 1)
			fail_msg("case '%s' not counted at its site", c->name);
		assert_int_equal(h_pending_out(), 0);
	}
	/* unknown options are skipped, a huge window scale is clamped to 14 */
	h_send_opts(H_CLI_IP, 53000, H_PORT, SYN, 1, 0, 65535, 1460, 200, NULL, 0);
	assert_int_equal(h_pending_out(), 1);
}

static void test_sref_pool_exhaustion(void **state)
{
	(void)state;
	struct peer p;
	handshake(&p, 54000, 1460, -1, 65535);
	struct tcp_iov iov[80];
	for (int i = 0; i < 80; i++) {
		iov[i].base = pattern + 2 * i; /* non-contiguous: one reference each */
		iov[i].len = 1;
	}
	assert_int_equal(tcp_send(H.t, p.conn, iov, 80), -E_NOMEM); /* pool of 64 */
	assert_int_equal(tcp_sref_count(H.t), 0);                     /* nothing queued */
	assert_int_equal(tcp_send(H.t, p.conn, iov, 64), 0);
	assert_int_equal(tcp_sref_count(H.t), 64);
	/* contiguous pieces merge into the tail reference */
	tcp_abort(H.t, p.conn);
	assert_int_equal(tcp_sref_count(H.t), 0);
	h_drain();
	handshake(&p, 54001, 1460, -1, 65535);
	struct tcp_iov a[3] = { { pattern, 10 }, { pattern + 10, 10 }, { pattern + 20, 10 } };
	assert_int_equal(tcp_send(H.t, p.conn, a, 3), 0);
	assert_int_equal(tcp_sref_count(H.t), 1);
}

static void test_config_and_init_errors(void **state)
{
	(void)state;
	struct tcp_config cfg;
	struct tcp_stack *t = NULL;
	static uint64_t mem[1 << 14];
	static const struct { const char *name; size_t off, size; uint32_t bad; } bad[] = {
		{ "max_conns", offsetof(struct tcp_config, max_conns), 4, 0 },
		{ "mss", offsetof(struct tcp_config, mss), 2, 10 },
		{ "rcv_wscale", offsetof(struct tcp_config, rcv_wscale), 1, 15 },
		{ "tick_ms", offsetof(struct tcp_config, tick_ms), 4, 0 },
		{ "rto_max_ms", offsetof(struct tcp_config, rto_max_ms), 4, 70000 },
		{ "rto_min_ms", offsetof(struct tcp_config, rto_min_ms), 4, 5000 },
		{ "max_retries", offsetof(struct tcp_config, max_retries), 4, 16 },
		{ "n_ports", offsetof(struct tcp_config, n_ports), 4, 9 },
		{ "cookie_period_ms", offsetof(struct tcp_config, cookie_period_ms), 4, 10 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		h_config(&cfg);
		cfg.max_conns = 8;
		uint8_t *f = (uint8_t *)&cfg + bad[i].off;
		if (bad[i].size == 4)
			memcpy(f, &bad[i].bad, 4);
		else if (bad[i].size == 2)
			*(uint16_t *)(void *)f = (uint16_t)bad[i].bad;
		else
			*f = (uint8_t)bad[i].bad;
		if (tcp_stack_mem_size(&cfg) != 0)
			fail_msg("config field %s accepted a bad value", bad[i].name);
		assert_int_equal(tcp_stack_init(&t, mem, sizeof mem, &cfg, &h_port, NULL, &h_upper, NULL), -E_INVAL);
	}
	h_config(&cfg);
	cfg.max_conns = 8;
	size_t need = tcp_stack_mem_size(&cfg);
	assert_true(need > 0 && need <= sizeof mem);
	assert_int_equal(tcp_stack_init(&t, mem, need - 1, &cfg, &h_port, NULL, &h_upper, NULL), -E_NOMEM);
	assert_int_equal(tcp_stack_init(&t, (uint8_t *)mem + 1, need, &cfg, &h_port, NULL, &h_upper, NULL), -E_INVAL);
	assert_int_equal(tcp_stack_init(&t, mem, need, &cfg, &h_port, NULL, &h_upper, NULL), 0);
	assert_int_equal(tcp_check_invariants(t), 0);
}

static void test_no_free_frame_retries(void **state)
{
	(void)state;
	struct peer p;
	struct h_seg s;
	handshake(&p, 55000, 1460, -1, 65535);
	H.no_frames = true;
	send_bytes(p.conn, 0, 100);
	assert_false(h_pop(&s));
	assert_true(tcp_stats(H.t)->tx_no_frame > 0);
	H.no_frames = false;
	H.tiny_frames = true; /* a port bug: the frame is handed back, nothing written */
	h_advance(1000);
	assert_false(h_pop(&s));
	assert_int_equal(H.n_tx_abort, 1);
	H.tiny_frames = false;
	h_advance(2000); /* the timer retries */
	assert_true(h_pop(&s));
	assert_int_equal(s.len, 100);
	p.ack = s.seq + 100;
	p_send(&p, ACK, NULL, 0);
	assert_int_equal(H.conns[p.conn].acked, 100);
}

/* ---- a full transfer over a seeded lossy link ---- */

struct lpkt {
	uint64_t at;
	struct h_pkt p;
};

struct link {
	struct lpkt *q;
	size_t n;
	uint32_t loss_pm, dup_pm, reorder_pm; /* per mille */
};

static uint32_t lrng = 12345;
static uint32_t lrand(void)
{
	lrng ^= lrng << 13;
	lrng ^= lrng >> 17;
	lrng ^= lrng << 5;
	return lrng;
}

static void link_push(struct link *l, const struct h_pkt *p)
{
	if (lrand() % 1000 < l->loss_pm)
		return;
	int copies = lrand() % 1000 < l->dup_pm ? 2 : 1;
	for (int c = 0; c < copies && l->n < 8192; c++) {
		struct lpkt *e = &l->q[l->n++];
		e->at = H.now + 5 + (lrand() % 1000 < l->reorder_pm ? lrand() % 15 : 0);
		e->p = *p;
	}
}

struct cli {
	uint16_t port;
	uint32_t iss, snd_una, snd_nxt, end, rcv_nxt;
	bool est, fin_rcvd, acked_once;
	uint32_t wnd;
	int ws;
	uint64_t rto_at;
	int dups;
	const uint8_t *tx;
	size_t tx_len;
	uint8_t *rx;
	size_t rx_len;
	struct link *out;
};

static void cli_seg(struct cli *c, uint8_t flags, uint32_t seq, const void *data, size_t len)
{
	struct h_pkt p;
	h_build(&p, H_CLI_IP, H_SRV_IP, c->port, H_PORT, flags, seq, c->rcv_nxt, 65535,
		flags & SYN ? 1460 : -1, flags & SYN ? 2 : -1, data, len);
	link_push(c->out, &p);
}

static void cli_output(struct cli *c)
{
	if (!c->est) {
		if (H.now >= c->rto_at) {
			cli_seg(c, SYN, c->iss, NULL, 0);
			c->rto_at = H.now + 200;
		}
		return;
	}
	/* one segment until the server has answered (keeps the cookie ACK recoverable) */
	uint32_t limit = c->acked_once ? MIN(c->wnd, 16000u) : 1000u;
	while (c->snd_nxt - c->snd_una < limit) {
		if (c->snd_nxt == c->end + 1)
			break;
		if (c->snd_nxt == c->end) {
			if (c->snd_una != c->end)
				break; /* FIN after everything is acknowledged */
			cli_seg(c, FIN | ACK, c->snd_nxt, NULL, 0);
			c->snd_nxt++;
		} else {
			uint32_t off = c->snd_nxt - c->iss - 1;
			uint32_t len = MIN(1000u, c->end - c->snd_nxt);
			len = MIN(len, limit - (c->snd_nxt - c->snd_una));
			cli_seg(c, ACK, c->snd_nxt, c->tx + off, len);
			c->snd_nxt += len;
		}
		if (!c->rto_at)
			c->rto_at = H.now + 200;
	}
}

static void cli_input(struct cli *c, const struct h_pkt *pk)
{
	struct h_seg s;
	if (!h_parse(pk, &s))
		fail_msg("bad checksum from the stack");
	if (s.flags & RST)
		fail_msg("connection reset during the transfer");
	if (s.flags & SYN) {
		if (!c->est) {
			c->est = true;
			c->rcv_nxt = s.seq + 1;
			c->snd_una = c->snd_nxt = c->iss + 1;
			c->ws = s.ws < 0 ? 0 : s.ws;
			c->wnd = s.wnd;
			c->rto_at = 0;
		}
		cli_seg(c, ACK, c->snd_nxt, NULL, 0);
		return;
	}
	if (!c->est)
		return;
	if ((int32_t)(s.ack - c->snd_una) > 0 && (int32_t)(s.ack - c->snd_nxt) <= 0) {
		c->snd_una = s.ack;
		c->dups = 0;
		c->acked_once = true;
		c->rto_at = c->snd_una == c->snd_nxt ? 0 : H.now + 200;
	} else if (s.ack == c->snd_una && !s.len && c->snd_nxt != c->snd_una && ++c->dups == 3) {
		c->snd_nxt = c->snd_una; /* go back N */
	}
	c->wnd = (uint32_t)s.wnd << c->ws;
	if (s.len && s.seq == c->rcv_nxt) {
		memcpy(c->rx + c->rx_len, s.data, s.len);
		c->rx_len += s.len;
		c->rcv_nxt += (uint32_t)s.len;
	}
	if ((s.flags & FIN) && s.seq + s.len == c->rcv_nxt) {
		c->rcv_nxt++;
		c->fin_rcvd = true;
	}
	if (s.len || (s.flags & FIN))
		cli_seg(c, ACK, c->snd_nxt, NULL, 0);
}

static void link_deliver(struct link *l, bool to_server, struct cli *c)
{
	size_t w = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (l->q[i].at <= H.now) {
			struct h_pkt *p = &l->q[i].p;
			if (to_server)
				tcp_input(H.t, p->src, p->dst, p->b, p->len);
			else
				cli_input(c, p);
		} else {
			l->q[w++] = l->q[i];
		}
	}
	l->n = w;
}

/* Returns simulated milliseconds; fills segments processed by the stack. */

static uint64_t run_transfer(size_t total, uint32_t loss, uint32_t dup, uint32_t reorder, uint32_t seed,
			     uint64_t *segs)
{
	static struct link c2s, s2c;
	c2s.q = calloc(8192, sizeof(struct lpkt));
	s2c.q = calloc(8192, sizeof(struct lpkt));
	c2s.n = s2c.n = 0;
	c2s.loss_pm = s2c.loss_pm = loss;
	c2s.dup_pm = s2c.dup_pm = dup;
	c2s.reorder_pm = s2c.reorder_pm = reorder;
	lrng = seed;
	uint8_t *tx = malloc(total);
	for (size_t i = 0; i < total; i++)
		tx[i] = (uint8_t)(lrand() >> 3);
	struct cli c;
	memset(&c, 0, sizeof c);
	c.port = (uint16_t)(60000u + (seed & 1023u));
	c.iss = 0xfffff000u; /* wraps during the transfer */
	c.end = c.iss + 1 + (uint32_t)total;
	c.tx = tx;
	c.tx_len = total;
	c.rx = malloc(total);
	c.out = &c2s;
	H.echo = true;
	uint64_t start = H.now;
	bool closing = false;
	uint32_t conn = 0;
	while (H.now - start < 600000) {
		H.now++;
		link_deliver(&c2s, true, &c);
		if (H.n_accept && !closing) {
			conn = H.last_conn;
			if (H.conns[conn].eof) {
				assert_int_equal(tcp_close(H.t, conn), 0);
				closing = true;
			}
		}
		tcp_poll(H.t);
		for (size_t i = 0; i < H.nq; i++)
			link_push(&s2c, &H.q[i]);
		h_drain();
		link_deliver(&s2c, false, &c);
		if (c.rto_at && H.now >= c.rto_at && c.est) {
			c.snd_nxt = c.snd_una;
			c.rto_at = H.now + 200;
		}
		cli_output(&c);
		if (closing && c.fin_rcvd && !H.conns[conn].open && H.conns[conn].closed_reason >= 0)
			break;
		assert_int_equal(tcp_check_invariants(H.t), 0);
	}
	assert_true(c.fin_rcvd);
	assert_int_equal(H.conns[conn].closed_reason, TCP_CLOSE_NORMAL);
	assert_int_equal(c.rx_len, total);
	assert_memory_equal(c.rx, tx, total);
	assert_int_equal(H.conns[conn].acked, total);
	assert_int_equal(tcp_sref_count(H.t), 0);
	assert_int_equal(tcp_hold_count(H.t), 0); /* no hold slot outlives its connection */
	*segs = tcp_stats(H.t)->in_segs + tcp_stats(H.t)->out_segs;
	free(tx);
	free(c.rx);
	free(c2s.q);
	free(s2c.q);
	return H.now - start;
}

static int setup_big(void **state)
{
	(void)state;
	struct tcp_config cfg;
	for (size_t i = 0; i < sizeof pattern; i++)
		pattern[i] = (uint8_t)(i * 7 + (i >> 8));
	h_config(&cfg);
	return h_init_cfg(&cfg, (1 << 20) + 4096);
}

static void test_lossy_link_1mib_echo(void **state)
{
	(void)state;
	uint64_t segs;
	uint64_t ms = run_transfer(1 << 20, 50, 20, 100, 0xC0FFEE, &segs);
	const struct tcp_stats *st = tcp_stats(H.t);
	printf("# lossy 1 MiB echo: %llu simulated ms, retransmits %llu, fast %llu, rto %llu, ooo %llu"
	       " (held %llu, released %llu, dup %llu)\n",
	       (unsigned long long)ms, (unsigned long long)st->retransmits,
	       (unsigned long long)st->fast_retransmits, (unsigned long long)st->rto_expired,
	       (unsigned long long)st->rx_ooo, (unsigned long long)st->ooo_held,
	       (unsigned long long)st->ooo_released, (unsigned long long)st->ooo_dup);
	assert_true(st->ooo_held > 0);
	assert_true(st->retransmits > 0);
	assert_true(st->rx_ooo > 0);
}

static void test_lossy_link_many_seeds(void **state)
{
	(void)state;
	/* harsher links, several seeds, 256 KiB each; one stack, connections one after another */
	for (uint32_t seed = 1; seed <= 8; seed++) {
		uint64_t segs;
		H.n_accept = 0;
		(void)run_transfer(256 << 10, 100, 50, 200, seed * 7919u, &segs);
		assert_int_equal(tcp_conn_count(H.t), 0);
	}
}

/* A clean link (no loss, duplication or reordering): 1 MiB echoed with nothing
 * retransmitted, nothing out of order, and every segment accounted for. */
static void test_clean_link_1mib_echo(void **state)
{
	(void)state;
	uint64_t segs;
	(void)run_transfer(1 << 20, 0, 0, 0, 99, &segs);
	const struct tcp_stats *st = tcp_stats(H.t);
	assert_int_equal(st->retransmits, 0);
	assert_int_equal(st->rto_expired, 0);
	assert_int_equal(st->fast_retransmits, 0);
	assert_int_equal(st->rx_ooo, 0);
	assert_int_equal(st->ooo_held, 0);
	assert_int_equal(st->in_bytes, 1 << 20);
	assert_int_equal(st->out_bytes, 1 << 20);
	assert_int_equal(segs, st->in_segs + st->out_segs);
	assert_true(st->in_segs >= (1u << 20) / 1460);
}

/* The request/response pump (the shape micro_tcp times for `make bench`): a data segment
 * from the peer in, exactly one segment out carrying the whole echo and the ACK of it,
 * the peer's ACK in; never a separate pure ACK, a delayed ACK or a retransmission. */
static void test_echo_pump_one_segment_per_request(void **state)
{
	(void)state;
	enum { N_PUMP = 2000, LEN = 1000 };
	struct peer p;
	struct h_seg sg;
	H.echo = true;
	handshake(&p, 61000, 1460, 7, 4000);
	const struct tcp_stats *st = tcp_stats(H.t);
	uint64_t in0 = st->in_segs, out0 = st->out_segs, pure0 = st->pure_acks, del0 = st->delayed_acks;
	for (uint32_t i = 0; i < N_PUMP; i++) {
		H.conns[p.conn].rx_len = 0; /* recycle the echo buffer: everything is acked below */
		p_send(&p, ACK | PSH, pattern, LEN);
		tcp_poll(H.t);
		assert_int_equal(h_pending_out(), 1);
		assert_true(h_pop(&sg));
		assert_int_equal(sg.len, LEN);
		assert_int_equal(sg.seq, p.ack);
		assert_int_equal(sg.ack, p.seq); /* the request acknowledged by its answer */
		assert_memory_equal(sg.data, pattern, LEN);
		p.ack = sg.seq + (uint32_t)sg.len;
		p_send(&p, ACK, NULL, 0);
		assert_int_equal(h_pending_out(), 0);
		h_drain();
	}
	assert_int_equal(st->in_segs - in0, 2 * N_PUMP);
	assert_int_equal(st->out_segs - out0, N_PUMP);
	assert_int_equal(st->pure_acks - pure0, 0);
	assert_int_equal(st->delayed_acks - del0, 0);
	assert_int_equal(st->retransmits, 0);
	tcp_abort(H.t, p.conn);
	h_drain();
}

/* A SYN flood from distinct flows costs no state: every SYN answered by one cookie
 * SYN-ACK while admission accepts; none answered, each refused or remembered, when it
 * refuses. */
static void test_syn_flood_costs_no_state(void **state)
{
	(void)state;
	enum { N_SYN = 2000 };
	struct h_seg sg;
	const struct tcp_stats *st = tcp_stats(H.t);
	uint64_t sent0 = st->syn_cookie_sent;
	for (uint32_t i = 0; i < N_SYN; i++) {
		h_send_opts(H_CLI_IP + i, (uint16_t)(1024 + (i & 0x7fff)), H_PORT, SYN, i, 0, 65535, 1460, 7, NULL, 0);
		assert_int_equal(h_pending_out(), 1);
		assert_true(h_pop(&sg));
		assert_int_equal(sg.flags, SYN | ACK);
		assert_int_equal(sg.ack, i + 1);
		h_drain();
	}
	assert_int_equal(st->syn_cookie_sent - sent0, N_SYN);
	assert_int_equal(tcp_conn_count(H.t), 0);
	H.admit_ok = false;
	uint64_t ref0 = st->syn_refused, rem0 = st->syn_remembered, admit0 = H.n_admit;
	for (uint32_t i = 0; i < N_SYN; i++)
		h_send_opts(H_CLI_IP + i, (uint16_t)(1024 + (i & 0x7fff)), H_PORT, SYN, i, 0, 65535, 1460, 7, NULL, 0);
	assert_int_equal(h_pending_out(), 0);
	assert_int_equal(st->syn_cookie_sent - sent0, N_SYN);
	assert_int_equal(st->syn_refused - ref0, H.n_admit - admit0);
	assert_true(st->syn_refused - ref0 > 0);
	assert_int_equal(st->syn_refused - ref0 + st->syn_remembered - rem0, N_SYN);
	assert_int_equal(tcp_conn_count(H.t), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_handshake_via_cookie, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookie_encodes_mss_and_wscale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookie_validation_and_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admission_refused_and_remembered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_data_both_ways_delayed_and_merged_acks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recv_partial_consumption, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_and_reordered_segments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reordered_final_ack_after_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reordered_data_completes_handshake, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ooo_hold_released_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_input_in_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ooo_hold_fin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ooo_hold_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ooo_hold_disabled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ooo_hold_no_leak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rto_backoff_and_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rtt_sample_sets_rto, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fast_retransmit_newreno, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rfc5961_rst_syn_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_update_tied_to_credit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_window_probe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_closed_on_data_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_peer_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_server_first_no_time_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_simultaneous, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fin_wait2_timeout_and_abort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rst_to_closed_port_rate_limited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_churn_keeps_probe_chains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parser_rejections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sref_pool_exhaustion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_and_init_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_free_frame_retries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lossy_link_1mib_echo, setup_big, teardown),
		cmocka_unit_test_setup_teardown(test_lossy_link_many_seeds, setup_big, teardown),
		cmocka_unit_test_setup_teardown(test_clean_link_1mib_echo, setup_big, teardown),
		cmocka_unit_test_setup_teardown(test_echo_pump_one_segment_per_request, setup_big, teardown),
		cmocka_unit_test_setup_teardown(test_syn_flood_costs_no_state, setup_big, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
