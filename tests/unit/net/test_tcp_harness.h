/* SPDX-License-Identifier: MIT
 * Test harness shared by the TCP unit tests (header-only, host code): a fake lower port
 * that captures segments, a fake clock, a deterministic "random", a recording upper layer
 * with an echo mode, and helpers for a scripted peer that builds and parses segments
 * independently of net/tcp's own parser. */
#ifndef TESTS_UNIT_NET_TCP_HARNESS_H
#define TESTS_UNIT_NET_TCP_HARNESS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/csum.h"
#include "net/tcp/tcp.h"

#define H_SRV_IP 0x0a000001u
#define H_CLI_IP 0x0a000002u
#define H_PORT 8883
#define H_MAXQ 4096
#define H_FRAME 1480

struct h_pkt {
	uint32_t src, dst;
	size_t len;
	uint8_t b[H_FRAME + 64];
};

/* A parsed captured segment. */
struct h_seg {
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t wnd;
	int mss, ws; /* -1 when absent */
	const uint8_t *data;
	size_t len;
};

struct h_conn {
	bool open;
	int closed_reason;
	size_t rx_len;
	size_t eof;
	size_t tx_len;    /* bytes handed to tcp_send */
	size_t acked;     /* bytes reported by sent() */
	uint8_t *rx;      /* received bytes (echo source) */
	size_t rx_cap;
};

struct h_env {
	/* lower */
	struct h_pkt *q;
	size_t nq, qhead;
	uint8_t frame[H_FRAME];
	bool frame_out;
	bool no_frames;
	bool tiny_frames; /* break the TCP_MIN_FRAME promise */
	uint32_t n_tx_abort;
	uint64_t now;
	uint32_t rnd;
	/* upper */
	bool admit_ok;
	int accept_rc;
	uint32_t n_admit, n_accept, last_conn;
	uint32_t credit;
	size_t recv_limit; /* max consumed per call */
	bool echo;
	bool send_in_recv; /* reply "r" from inside recv */
	uint32_t abort_in_recv; /* 1 + conn to abort from recv */
	struct h_conn conns[64];
	uint32_t n_closed;
	struct tcp_stack *t;
	void *mem;
};

static struct h_env H;

static uint8_t *h_tx_begin(void *ctx, size_t *cap)
{
	(void)ctx;
	if (H.no_frames || H.frame_out)
		return NULL;
	H.frame_out = true;
	*cap = H.tiny_frames ? 32 : H_FRAME;
	return H.frame;
}

static int h_tx_send(void *ctx, uint32_t src, uint32_t dst, uint8_t *seg, size_t len)
{
	(void)ctx;
	H.frame_out = false;
	if (H.nq >= H_MAXQ)
		return -1;
	struct h_pkt *p = &H.q[H.nq++];
	p->src = src;
	p->dst = dst;
	p->len = len;
	memcpy(p->b, seg, len);
	return 0;
}

static uint64_t h_now(void *ctx)
{
	(void)ctx;
	return H.now;
}

static void h_random(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i++) {
		H.rnd = H.rnd * 1103515245u + 12345u;
		b[i] = (uint8_t)(H.rnd >> 16);
	}
}

static void h_tx_abort(void *ctx, uint8_t *seg)
{
	(void)ctx;
	if (seg != H.frame || !H.frame_out)
		abort();
	H.frame_out = false;
	H.n_tx_abort++;
}

static const struct tcp_port_ops h_port = { h_tx_begin, h_tx_send, h_now, h_random, h_tx_abort };

static bool h_admit(void *ctx, uint32_t ip, uint16_t sp, uint16_t dp)
{
	(void)ctx, (void)ip, (void)sp, (void)dp;
	H.n_admit++;
	return H.admit_ok;
}

static int h_accept(void *ctx, uint32_t conn, uint32_t ip, uint16_t sp, uint16_t dp)
{
	(void)ctx, (void)ip, (void)sp, (void)dp;
	H.n_accept++;
	H.last_conn = conn;
	if (H.accept_rc)
		return H.accept_rc;
	struct h_conn *c = &H.conns[conn];
	uint8_t *rx = c->rx;
	size_t cap = c->rx_cap;
	memset(c, 0, sizeof *c);
	c->rx = rx;
	c->rx_cap = cap;
	c->open = true;
	c->closed_reason = -1;
	return 0;
}

static size_t h_recv(void *ctx, uint32_t conn, uint8_t *data, size_t len)
{
	(void)ctx;
	struct h_conn *c = &H.conns[conn];
	if (!data) {
		c->eof++;
		return 0;
	}
	if (H.abort_in_recv == conn + 1) {
		tcp_abort(H.t, conn);
		return len;
	}
	size_t n = len < H.recv_limit ? len : H.recv_limit;
	if (c->rx_len + n > c->rx_cap)
		n = c->rx_cap - c->rx_len;
	memcpy(c->rx + c->rx_len, data, n);
	/* Like TLS decrypting in place: overwrite what was consumed. TCP must never read it
	 * again (from the frame or a hold slot), so every test also checks that. */
	for (size_t i = 0; i < n; i++)
		data[i] ^= 0xff;
	if (H.echo) {
		struct tcp_iov iov = { c->rx + c->rx_len, n };
		if (tcp_send(H.t, conn, &iov, 1) == 0)
			c->tx_len += n;
	} else if (H.send_in_recv) {
		static const uint8_t r[1] = { 'r' };
		struct tcp_iov iov = { r, 1 };
		if (tcp_send(H.t, conn, &iov, 1) == 0)
			c->tx_len += 1;
	}
	c->rx_len += n;
	return n;
}

static uint32_t h_credit(void *ctx, uint32_t conn)
{
	(void)ctx, (void)conn;
	return H.credit;
}

static void h_sent(void *ctx, uint32_t conn, size_t acked)
{
	(void)ctx;
	H.conns[conn].acked += acked;
}

static void h_closed(void *ctx, uint32_t conn, enum tcp_close_reason r)
{
	(void)ctx;
	H.conns[conn].open = false;
	H.conns[conn].closed_reason = (int)r;
	H.n_closed++;
}

static const struct tcp_upper_ops h_upper = { h_admit, h_accept, h_recv, h_credit, h_sent, h_closed };

static void h_config(struct tcp_config *cfg)
{
	tcp_config_default(cfg);
	cfg->local_ip = H_SRV_IP;
	cfg->ports[0] = H_PORT;
	cfg->n_ports = 1;
	cfg->max_conns = 16;
	cfg->max_send_refs = 64;
}

static int h_init_cfg(const struct tcp_config *cfg, size_t rx_cap)
{
	memset(&H, 0, sizeof H);
	H.q = calloc(H_MAXQ, sizeof *H.q);
	H.now = 1000000;
	H.rnd = 1;
	H.admit_ok = true;
	H.credit = 65535;
	H.recv_limit = (size_t)-1;
	for (size_t i = 0; i < 64; i++) {
		H.conns[i].rx = rx_cap ? malloc(rx_cap) : NULL;
		H.conns[i].rx_cap = rx_cap;
	}
	size_t need = tcp_stack_mem_size(cfg);
	if (!need)
		return -1;
	H.mem = aligned_alloc(64, (need + 63) & ~(size_t)63);
	return tcp_stack_init(&H.t, H.mem, need, cfg, &h_port, NULL, &h_upper, NULL);
}

static void h_fini(void)
{
	for (size_t i = 0; i < 64; i++)
		free(H.conns[i].rx);
	free(H.mem);
	free(H.q);
	memset(&H, 0, sizeof H);
}

/* Build a segment (checksum filled) into p. */
static void h_build(struct h_pkt *p, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
		    uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd, int mss, int ws,
		    const void *data, size_t len)
{
	uint8_t *b = p->b;
	size_t hl = 20 + (mss >= 0 ? 4u : 0u) + (ws >= 0 ? 4u : 0u);
	memset(b, 0, hl);
	b[0] = (uint8_t)(sport >> 8), b[1] = (uint8_t)sport;
	b[2] = (uint8_t)(dport >> 8), b[3] = (uint8_t)dport;
	for (int i = 0; i < 4; i++) {
		b[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
		b[8 + i] = (uint8_t)(ack >> (24 - 8 * i));
	}
	b[12] = (uint8_t)((hl / 4) << 4);
	b[13] = flags;
	b[14] = (uint8_t)(wnd >> 8), b[15] = (uint8_t)wnd;
	size_t o = 20;
	if (mss >= 0) {
		b[o] = 2, b[o + 1] = 4, b[o + 2] = (uint8_t)(mss >> 8), b[o + 3] = (uint8_t)mss;
		o += 4;
	}
	if (ws >= 0) {
		b[o] = 1, b[o + 1] = 3, b[o + 2] = 3, b[o + 3] = (uint8_t)ws;
		o += 4;
	}
	if (len)
		memcpy(b + hl, data, len);
	uint32_t sum = net_csum_pseudo(src, dst, 6, (uint16_t)(hl + len));
	uint16_t c = net_csum_fold(net_csum_add(sum, b, hl + len));
	b[16] = (uint8_t)(c >> 8), b[17] = (uint8_t)c;
	p->src = src;
	p->dst = dst;
	p->len = hl + len;
}

/* Build a segment from the peer and hand it to TCP. */
static void h_send_opts(uint32_t src, uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq,
			uint32_t ack, uint16_t wnd, int mss, int ws, const void *data, size_t len)
{
	static struct h_pkt p;
	h_build(&p, src, H_SRV_IP, sport, dport, flags, seq, ack, wnd, mss, ws, data, len);
	tcp_input(H.t, src, H_SRV_IP, p.b, p.len);
}

static bool h_parse(const struct h_pkt *p, struct h_seg *s)
{
	const uint8_t *b = p->b;
	if (p->len < 20)
		return false;
	uint32_t sum = net_csum_pseudo(p->src, p->dst, 6, (uint16_t)p->len);
	if (net_csum_fold(net_csum_add(sum, b, p->len)) != 0)
		return false; /* our checksum must always verify */
	s->sport = (uint16_t)(b[0] << 8 | b[1]);
	s->dport = (uint16_t)(b[2] << 8 | b[3]);
	s->seq = (uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
	s->ack = (uint32_t)b[8] << 24 | (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 | b[11];
	size_t hl = (size_t)(b[12] >> 4) * 4;
	s->flags = b[13];
	s->wnd = (uint16_t)(b[14] << 8 | b[15]);
	s->mss = s->ws = -1;
	for (size_t o = 20; o < hl;) {
		if (b[o] == 1) {
			o++;
			continue;
		}
		if (b[o] == 0)
			break;
		if (b[o] == 2)
			s->mss = b[o + 2] << 8 | b[o + 3];
		if (b[o] == 3)
			s->ws = b[o + 2];
		o += b[o + 1];
	}
	s->data = b + hl;
	s->len = p->len - hl;
	return true;
}

/* Pop the next captured segment (false when none). */
static bool h_pop(struct h_seg *s)
{
	if (H.qhead >= H.nq)
		return false;
	if (!h_parse(&H.q[H.qhead++], s))
		abort(); /* every segment we emit must carry a valid checksum */
	return true;
}

static size_t h_pending_out(void)
{
	return H.nq - H.qhead;
}

static void h_drain(void)
{
	H.qhead = H.nq = 0;
}

static void h_advance(uint64_t ms)
{
	H.now += ms;
	tcp_poll(H.t);
}

#endif
