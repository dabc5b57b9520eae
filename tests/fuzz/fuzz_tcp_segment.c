/* SPDX-License-Identifier: MIT
 * Fuzz target: the TCP parser and state machine driven by an op stream taken from the
 * input. Ops send SYNs, cookie ACKs that complete handshakes, segments with fuzzed flags
 * and sequence/ack offsets relative to what the stack last said (so they land near the
 * window edges), raw bytes straight to the parser, clock jumps, and upper-layer actions
 * (send, close, abort, window updates, refusals, partial consumption, no free frames).
 * Segments just beyond rcv_nxt exercise the out-of-order hold (a pool of 3 slots, 2 per
 * connection, 200 bytes each, so both caps and the cut are reached). After every op
 * tcp_check_invariants() must hold (it covers the hold pool); at the end every
 * connection is aborted and no control block, send reference or hold slot may remain. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/csum.h"
#include "net/tcp/tcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SRV 0x0a000001u
#define CLI 0x0a000002u
#define PORT 8883
#define NPEER 4
#define MAXC 4

struct fpeer {
	uint32_t cookie;  /* last SYN-ACK seq */
	uint32_t irs;     /* our ISN */
	uint32_t srv_seq; /* server's last snd_nxt as seen */
	uint32_t srv_ack; /* what the server expects from us */
	uint32_t una;     /* what we last acknowledged (ACK bursts) */
	bool una_set;
};

static struct {
	uint8_t frame[1500];
	bool out;
	bool no_frames;
	uint64_t now;
	uint32_t rnd;
	struct fpeer p[NPEER];
	bool admit_ok;
	int accept_rc;
	size_t recv_limit;
	uint32_t credit;
	bool open[MAXC];
	struct tcp_stack *t;
} F;

static uint8_t pattern[4096];
static uint64_t mem[(1 << 16) / 8];

static uint8_t *f_begin(void *c, size_t *cap)
{
	(void)c;
	if (F.no_frames || F.out)
		return NULL;
	F.out = true;
	*cap = sizeof F.frame;
	return F.frame;
}

static int f_send(void *c, uint32_t s, uint32_t d, uint8_t *b, size_t len)
{
	(void)c;
	F.out = false;
	if (s != SRV || d != CLI || len < 20 || len > sizeof F.frame)
		abort();
	if (net_csum_fold(net_csum_add(net_csum_pseudo(s, d, 6, (uint16_t)len), b, len)) != 0)
		abort(); /* our checksums always verify */
	uint16_t dport = (uint16_t)(b[2] << 8 | b[3]);
	uint32_t seq = (uint32_t)b[4] << 24 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
	uint32_t ack = (uint32_t)b[8] << 24 | (uint32_t)b[9] << 16 | (uint32_t)b[10] << 8 | b[11];
	size_t hl = (size_t)(b[12] >> 4) * 4;
	if (hl < 20 || hl > len)
		abort();
	if (dport >= 1000 && dport < 1000 + NPEER) {
		struct fpeer *p = &F.p[dport - 1000];
		if ((b[13] & 0x12) == 0x12)
			p->cookie = seq;
		p->srv_seq = seq + (uint32_t)(len - hl) + ((b[13] & 0x03) ? 1u : 0u);
		if (b[13] & 0x10)
			p->srv_ack = ack;
	}
	return 0;
}

static uint64_t f_now(void *c)
{
	(void)c;
	return F.now;
}

static void f_rand(void *c, void *buf, size_t len)
{
	(void)c;
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i++) {
		F.rnd = F.rnd * 1103515245u + 12345u;
		b[i] = (uint8_t)(F.rnd >> 16);
	}
}

static bool u_admit(void *c, uint32_t ip, uint16_t sp, uint16_t dp)
{
	(void)c, (void)ip, (void)sp, (void)dp;
	return F.admit_ok;
}

static int u_accept(void *c, uint32_t conn, uint32_t ip, uint16_t sp, uint16_t dp)
{
	(void)c, (void)ip, (void)sp, (void)dp;
	if (conn >= MAXC || F.open[conn])
		abort();
	if (F.accept_rc)
		return F.accept_rc;
	F.open[conn] = true;
	return 0;
}

static size_t u_recv(void *c, uint32_t conn, uint8_t *d, size_t len)
{
	(void)c;
	if (conn >= MAXC || !F.open[conn])
		abort();
	volatile uint8_t x = 0;
	for (size_t i = 0; i < len; i++)
		x ^= d[i]; /* the whole borrowed view must be readable */
	(void)x;
	size_t used = len < F.recv_limit ? len : F.recv_limit;
	for (size_t i = 0; i < used; i++)
		d[i] ^= 0xa5; /* ... and the consumed part writable (in-place decryption) */
	return used;
}

static uint32_t u_credit(void *c, uint32_t conn)
{
	(void)c, (void)conn;
	return F.credit;
}

static void u_sent(void *c, uint32_t conn, size_t n)
{
	(void)c, (void)n;
	if (conn >= MAXC || !F.open[conn])
		abort();
}

static void u_closed(void *c, uint32_t conn, enum tcp_close_reason r)
{
	(void)c, (void)r;
	if (conn >= MAXC || !F.open[conn])
		abort();
	F.open[conn] = false;
}

static const struct tcp_port_ops port = { f_begin, f_send, f_now, f_rand, NULL };
static const struct tcp_upper_ops upper = { u_admit, u_accept, u_recv, u_credit, u_sent, u_closed };

static void seg(uint16_t sport, uint8_t flags, uint32_t seq, uint32_t ack, uint16_t wnd, int mss,
		int ws, const uint8_t *d, size_t len)
{
	static uint8_t b[1600];
	size_t hl = 20 + (mss >= 0 ? 4u : 0u) + (ws >= 0 ? 4u : 0u);
	if (len > sizeof b - hl)
		len = sizeof b - hl;
	memset(b, 0, hl);
	b[0] = (uint8_t)(sport >> 8), b[1] = (uint8_t)sport, b[2] = PORT >> 8, b[3] = PORT & 0xff;
	for (int i = 0; i < 4; i++) {
		b[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
		b[8 + i] = (uint8_t)(ack >> (24 - 8 * i));
	}
	b[12] = (uint8_t)((hl / 4) << 4);
	b[13] = flags;
	b[14] = (uint8_t)(wnd >> 8), b[15] = (uint8_t)wnd;
	size_t o = 20;
	if (mss >= 0)
		b[o] = 2, b[o + 1] = 4, b[o + 2] = (uint8_t)(mss >> 8), b[o + 3] = (uint8_t)mss, o += 4;
	if (ws >= 0)
		b[o] = 1, b[o + 1] = 3, b[o + 2] = 3, b[o + 3] = (uint8_t)ws;
	if (len)
		memcpy(b + hl, d, len);
	uint16_t c = net_csum_fold(net_csum_add(net_csum_pseudo(CLI, SRV, 6, (uint16_t)(hl + len)), b, hl + len));
	b[16] = (uint8_t)(c >> 8), b[17] = (uint8_t)c;
	tcp_input(F.t, CLI, SRV, b, hl + len);
}

struct in {
	const uint8_t *d;
	size_t n, i;
};

static uint8_t u8(struct in *in)
{
	return in->i < in->n ? in->d[in->i++] : 0;
}

static uint16_t u16(struct in *in)
{
	return (uint16_t)(u8(in) << 8 | u8(in));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcp_config cfg;
	memset(&F, 0, sizeof F);
	for (size_t i = 0; i < sizeof pattern; i++)
		pattern[i] = (uint8_t)i;
	F.now = 5000;
	F.admit_ok = true;
	F.recv_limit = (size_t)-1;
	F.credit = 4000;
	tcp_config_default(&cfg);
	cfg.local_ip = SRV;
	cfg.ports[0] = PORT;
	cfg.n_ports = 1;
	cfg.max_conns = MAXC;
	cfg.max_send_refs = 16;
	cfg.max_pending_acks = 2;
	cfg.n_refused = 4;
	cfg.max_retries = 4;
	cfg.mss = 536;
	cfg.ooo_slots = 3;
	cfg.ooo_per_conn = 2;
	cfg.ooo_slot_size = 200;
	if (tcp_stack_mem_size(&cfg) > sizeof mem ||
	    tcp_stack_init(&F.t, mem, sizeof mem, &cfg, &port, NULL, &upper, NULL))
		abort();
	struct in in = { data, size, 0 };
	for (int n_ops = 0; in.i < in.n && n_ops < 400; n_ops++) {
		uint8_t op = u8(&in);
		uint8_t pi = (uint8_t)((op >> 3) % NPEER);
		struct fpeer *p = &F.p[pi];
		uint16_t sport = (uint16_t)(1000 + pi);
		switch (op & 7) {
		case 0: { /* SYN with options */
			uint8_t o = u8(&in);
			p->una_set = false;
			p->irs = (uint32_t)u16(&in) << 16 | 0x1234u;
			int mss = (o & 1) ? u16(&in) : -1; /* read in a fixed order */
			int ws = (o & 2) ? u8(&in) : -1;
			seg(sport, 0x02, p->irs, 0, 65535, mss, ws, NULL, 0);
			break;
		}
		case 1: { /* cookie ACK, maybe with data and FIN */
			uint8_t o = u8(&in);
			size_t len = (o & 0x80) ? u8(&in) : 0;
			seg(sport, (uint8_t)(0x10 | (o & 1)), p->irs + 1, p->cookie + 1, u16(&in), -1, -1, pattern, len);
			p->una = p->cookie + 1;
			p->una_set = true;
			break;
		}
		case 2: { /* fuzzed segment near the window edges */
			uint8_t flags = u8(&in);
			int16_t ds = (int16_t)u16(&in), da = (int16_t)u16(&in);
			uint16_t wnd = u16(&in);
			size_t len = u8(&in) * 4u;
			seg(sport, flags, p->srv_ack + (uint32_t)(int32_t)ds, p->srv_seq + (uint32_t)(int32_t)da,
			    wnd, -1, -1, pattern, len);
			break;
		}
		case 3: { /* raw bytes to the parser */
			size_t len = u8(&in);
			if (len > in.n - in.i)
				len = in.n - in.i;
			static uint8_t raw[256]; /* TCP's view is mutable: not libFuzzer's input */
			memcpy(raw, in.d + in.i, len);
			tcp_input(F.t, CLI, SRV, raw, len);
			in.i += len;
			break;
		}
		case 4:
			F.now += (uint64_t)u8(&in) * ((op & 0x80) ? 1000u : 37u);
			tcp_poll(F.t);
			break;
		case 5: { /* upper-layer action */
			uint8_t a = u8(&in);
			uint32_t conn = a % MAXC;
			switch ((a >> 2) & 3) {
			case 0: {
				size_t off = u8(&in), l1 = u8(&in) * 8u, l2 = u8(&in);
				struct tcp_iov iov[2] = { { pattern + off, l1 }, { pattern + 3000, l2 } };
				if (tcp_send(F.t, conn, iov, 2) > 0)
					abort();
				break;
			}
			case 1:
				if (tcp_close(F.t, conn) > 0)
					abort();
				break;
			case 2:
				tcp_abort(F.t, conn);
				break;
			default:
				F.credit = (uint32_t)u16(&in) * 4u;
				tcp_window_update(F.t, conn);
				break;
			}
			break;
		}
		case 6: {
			uint8_t m = u8(&in);
			F.admit_ok = !(m & 1);
			F.accept_rc = (m & 2) ? -1 : 0;
			F.no_frames = m & 4;
			F.recv_limit = (m & 8) ? (size_t)(m >> 4) : (size_t)-1;
			break;
		}
		default:
			if (op & 0x80) {
				/* ACK burst with a steady window: new ACKs, then duplicates (drives
				 * fast retransmit and NewReno partial/full ACKs) */
				uint8_t m = u8(&in);
				if (!p->una_set) {
					p->una = p->srv_seq;
					p->una_set = true;
				}
				uint32_t adv = (uint32_t)(m & 0x1f) * 268u;
				if ((int32_t)(p->una + adv - p->srv_seq) > 0)
					adv = 0;
				p->una += adv;
				if (m & 0x80)
					p->una = p->srv_seq - (uint32_t)(m & 0x3) * 536u;
				for (int k = 0; k < 1 + ((m >> 5) & 3); k++)
					seg(sport, 0x10, p->srv_ack, p->una, 0xffff, -1, -1, NULL, 0);
			} else if (op & 0x40) {
				/* data a little beyond (or at) what the server expects: holes,
				 * held segments, overlaps, FINs beyond a gap */
				uint8_t m = u8(&in);
				uint32_t gap = (uint32_t)u8(&in) * 8u;
				size_t len = (size_t)u8(&in) * 2u;
				seg(sport, (uint8_t)(0x10 | (m & 1)), p->srv_ack + gap, p->srv_seq, 0xffff,
				    -1, -1, pattern + (m >> 1), len);
			} else {
				tcp_poll(F.t);
			}
			break;
		}
		if (tcp_check_invariants(F.t))
			abort();
	}
	for (uint32_t c = 0; c < MAXC; c++)
		tcp_abort(F.t, c);
	if (tcp_conn_count(F.t) || tcp_sref_count(F.t) || tcp_hold_count(F.t) ||
	    tcp_check_invariants(F.t))
		abort();
	for (uint32_t c = 0; c < MAXC; c++)
		if (F.open[c])
			abort(); /* every accepted connection got its closed() */
	return 0;
}
