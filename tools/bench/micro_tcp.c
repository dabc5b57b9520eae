// SPDX-License-Identifier: MIT
/*
 * micro_tcp (make bench): our server-side TCP (net/tcp/tcp.h) in process, through a fake
 * port (frames captured in memory, a fake clock), the way tests/unit/net/test_tcp_harness.h
 * drives it (its logic, trimmed, is repeated here so this file stands alone):
 *   - echo pump on one connection: a 1,000-byte data segment from the peer in, the echo out
 *     carrying the ACK, the peer's ACK in; segments (in + out) per CPU-second of one core,
 *     both for the whole pump and for TCP alone (the fake peer's cost of building and
 *     checksumming its segments, measured separately, subtracted);
 *   - cost of a SYN answered with a cookie SYN-ACK, and of a SYN refused by admission
 *     (new flow, then the same flows again while remembered); SYNs are built beforehand,
 *     the timed loop is tcp_input only (plus capturing the SYN-ACK in the fake port);
 *   - bytes of state per idle connection: control block + its table slots, and the
 *     growth of tcp_stack_mem_size per unit of max_conns (the stack region per connection).
 * One JSON line per figure on stdout ({"micro":...}). Host benchmark (hostrel); never
 * linked into the image; bounded by a CPU-time budget per case (argv[1], seconds).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net/csum.h"
#include "net/tcp/tcp.h"

#define SRV_IP 0x0a000001u
#define CLI_IP 0x0a000002u
#define PORT 8883
#define FRAME 1480
#define MAXQ 64
#define N_SYN 20000
#define PAYLOAD 1000

#define F_SYN 0x02
#define F_ACK 0x10
#define F_PSH 0x08

struct pkt {
	uint32_t src, dst;
	size_t len;
	uint8_t b[FRAME + 64];
};

/* ---- fake port and upper layer (echo) ------------------------------------------ */
static struct {
	struct pkt q[MAXQ];
	size_t nq;
	uint8_t frame[FRAME];
	bool frame_out;
	uint64_t now;
	uint32_t rnd;
	bool admit_ok;
	uint32_t last_conn, n_accept;
	uint8_t rx[4096];
	size_t rx_len;
	struct tcp_stack *t;
} H;

static uint8_t *p_tx_begin(void *ctx, size_t *cap)
{
	(void)ctx;
	if (H.frame_out)
		return NULL;
	H.frame_out = true;
	*cap = FRAME;
	return H.frame;
}

static int p_tx_send(void *ctx, uint32_t src, uint32_t dst, uint8_t *seg, size_t len)
{
	(void)ctx;
	H.frame_out = false;
	if (H.nq >= MAXQ)
		return -1;
	struct pkt *p = &H.q[H.nq++];
	p->src = src;
	p->dst = dst;
	p->len = len;
	memcpy(p->b, seg, len);
	return 0;
}

static uint64_t p_now(void *ctx)
{
	(void)ctx;
	return H.now;
}

static void p_random(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i++) {
		H.rnd = H.rnd * 1103515245u + 12345u;
		b[i] = (uint8_t)(H.rnd >> 16);
	}
}

static void p_tx_abort(void *ctx, uint8_t *seg)
{
	(void)ctx, (void)seg;
	H.frame_out = false;
}

static const struct tcp_port_ops port_ops = { p_tx_begin, p_tx_send, p_now, p_random, p_tx_abort };

static bool u_admit(void *ctx, uint32_t ip, uint16_t sp, uint16_t dp)
{
	(void)ctx, (void)ip, (void)sp, (void)dp;
	return H.admit_ok;
}

static int u_accept(void *ctx, uint32_t conn, uint32_t ip, uint16_t sp, uint16_t dp)
{
	(void)ctx, (void)ip, (void)sp, (void)dp;
	H.last_conn = conn;
	H.n_accept++;
	return 0;
}

/* Echo: the bytes are copied once into rx (the upper layer's buffer) and sent back from
 * there; the pump acknowledges everything before the next segment, so rx is reused. */
static size_t u_recv(void *ctx, uint32_t conn, uint8_t *data, size_t len)
{
	(void)ctx;
	if (!data)
		return 0;
	size_t n = len < sizeof H.rx - H.rx_len ? len : sizeof H.rx - H.rx_len;
	memcpy(H.rx + H.rx_len, data, n);
	struct tcp_iov iov = { H.rx + H.rx_len, n };
	if (tcp_send(H.t, conn, &iov, 1) != 0)
		return 0;
	H.rx_len += n;
	return n;
}

static uint32_t u_credit(void *ctx, uint32_t conn)
{
	(void)ctx, (void)conn;
	return 65535;
}

static void u_sent(void *ctx, uint32_t conn, size_t acked)
{
	(void)ctx, (void)conn, (void)acked;
}

static void u_closed(void *ctx, uint32_t conn, enum tcp_close_reason r)
{
	(void)ctx, (void)conn, (void)r;
}

static const struct tcp_upper_ops upper_ops = { u_admit, u_accept, u_recv, u_credit, u_sent, u_closed };

/* ---- the fake peer: segments built and parsed independently of net/tcp ---------- */
static void build(struct pkt *p, uint16_t sport, uint8_t flags, uint32_t seq, uint32_t ack,
		  uint16_t wnd, bool opts, const void *data, size_t len)
{
	uint8_t *b = p->b;
	size_t hl = opts ? 28u : 20u;
	memset(b, 0, hl);
	b[0] = (uint8_t)(sport >> 8), b[1] = (uint8_t)sport;
	b[2] = (uint8_t)(PORT >> 8), b[3] = (uint8_t)PORT;
	for (int i = 0; i < 4; i++) {
		b[4 + i] = (uint8_t)(seq >> (24 - 8 * i));
		b[8 + i] = (uint8_t)(ack >> (24 - 8 * i));
	}
	b[12] = (uint8_t)((hl / 4) << 4);
	b[13] = flags;
	b[14] = (uint8_t)(wnd >> 8), b[15] = (uint8_t)wnd;
	if (opts) { /* MSS 1460, window scale 7 */
		b[20] = 2, b[21] = 4, b[22] = 1460 >> 8, b[23] = 1460 & 0xff;
		b[24] = 1, b[25] = 3, b[26] = 3, b[27] = 7;
	}
	if (len)
		memcpy(b + hl, data, len);
	uint32_t sum = net_csum_pseudo(p->src, SRV_IP, 6, (uint16_t)(hl + len));
	uint16_t c = net_csum_fold(net_csum_add(sum, b, hl + len));
	b[16] = (uint8_t)(c >> 8), b[17] = (uint8_t)c;
	p->dst = SRV_IP;
	p->len = hl + len;
}

static uint32_t be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Seq + length of the last captured segment (the peer's next ack); queue emptied. */
static bool take_last(uint32_t *next, uint8_t *flags)
{
	if (!H.nq)
		return false;
	const struct pkt *p = &H.q[H.nq - 1];
	size_t hl = (size_t)(p->b[12] >> 4) * 4;
	uint32_t syn = (p->b[13] & F_SYN) ? 1u : 0u;
	*next = be32(p->b + 4) + (uint32_t)(p->len - hl) + syn;
	*flags = p->b[13];
	H.nq = 0;
	return true;
}

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *stack_new(uint32_t max_conns)
{
	struct tcp_config cfg;
	tcp_config_default(&cfg);
	cfg.local_ip = SRV_IP;
	cfg.ports[0] = PORT;
	cfg.n_ports = 1;
	cfg.max_conns = max_conns;
	cfg.max_send_refs = 64;
	size_t need = tcp_stack_mem_size(&cfg);
	void *mem = need ? aligned_alloc(64, (need + 63) & ~(size_t)63) : NULL;
	if (!mem || tcp_stack_init(&H.t, mem, need, &cfg, &port_ops, NULL, &upper_ops, NULL)) {
		fprintf(stderr, "micro_tcp: stack init failed\n");
		exit(1);
	}
	return mem;
}

static uint8_t payload[PAYLOAD];
static struct pkt seg;

static int pump(double budget)
{
	void *mem = stack_new(16);
	uint32_t seq = 5000, ack = 0;
	uint8_t fl = 0;
	seg.src = CLI_IP;
	build(&seg, 40000, F_SYN, seq, 0, 65535, true, NULL, 0);
	tcp_input(H.t, CLI_IP, SRV_IP, seg.b, seg.len);
	if (!take_last(&ack, &fl) || fl != (F_SYN | F_ACK))
		return fprintf(stderr, "micro_tcp: no SYN-ACK\n"), 1;
	seq++;
	build(&seg, 40000, F_ACK, seq, ack, 65535, false, NULL, 0);
	tcp_input(H.t, CLI_IP, SRV_IP, seg.b, seg.len);
	if (H.n_accept != 1)
		return fprintf(stderr, "micro_tcp: handshake not accepted\n"), 1;
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)(i * 7 + 3);

	const struct tcp_stats *st = tcp_stats(H.t);
	uint64_t in0 = st->in_segs, out0 = st->out_segs, iters = 0;
	double t0 = cpu_s(), t = t0;
	while (t - t0 < budget) {
		for (int k = 0; k < 256; k++) {
			H.rx_len = 0;
			build(&seg, 40000, F_ACK | F_PSH, seq, ack, 65535, false, payload, PAYLOAD);
			seq += PAYLOAD;
			tcp_input(H.t, CLI_IP, SRV_IP, seg.b, seg.len);
			tcp_poll(H.t);
			if (!take_last(&ack, &fl))
				return fprintf(stderr, "micro_tcp: no echo\n"), 1;
			build(&seg, 40000, F_ACK, seq, ack, 65535, false, NULL, 0);
			tcp_input(H.t, CLI_IP, SRV_IP, seg.b, seg.len);
			H.nq = 0;
			iters++;
		}
		t = cpu_s();
	}
	double el = t - t0;
	uint64_t n = st->in_segs - in0 + st->out_segs - out0;
	uint64_t bytes_echoed = tcp_stats(H.t)->out_bytes;
	/* The fake peer alone: the same builds (and the echo's capture copy) without TCP. */
	uint64_t cal = iters < 2000000 ? iters : 2000000;
	double c0 = cpu_s();
	for (uint64_t i = 0; i < cal; i++) {
		build(&seg, 40000, F_ACK | F_PSH, seq, ack, 65535, false, payload, PAYLOAD);
		memcpy(H.q[0].b, seg.b, seg.len);
		build(&seg, 40000, F_ACK, seq, (uint32_t)i, 65535, false, NULL, 0);
		__asm__ volatile("" ::"r"(seg.b) : "memory");
	}
	double peer = (cpu_s() - c0) / (double)cal * (double)iters;
	double tcp_only = el - peer;
	printf("{\"micro\":\"tcp_echo_pump\",\"payload\":%d,\"round_trips\":%llu,\"segments\":%llu,"
	       "\"cpu_s\":%.3f,\"segs_per_cpu_s\":%.0f,\"peer_cpu_s\":%.3f,"
	       "\"tcp_segs_per_cpu_s\":%.0f,\"tcp_ns_per_seg\":%.0f,\"retransmits\":%llu,"
	       "\"out_bytes\":%llu}\n",
	       PAYLOAD, (unsigned long long)iters, (unsigned long long)n, el, (double)n / el, peer,
	       tcp_only > 0 ? (double)n / tcp_only : 0.0, tcp_only > 0 ? tcp_only / (double)n * 1e9 : 0.0,
	       (unsigned long long)tcp_stats(H.t)->retransmits, (unsigned long long)bytes_echoed);
	fflush(stdout);
	tcp_abort(H.t, H.last_conn);
	free(mem);
	return 0;
}

/* SYN segments from N_SYN distinct flows, built beforehand (28 bytes each). */
static struct syn {
	uint32_t src;
	uint8_t b[28];
} syns[N_SYN];

static void syns_build(void)
{
	for (uint32_t i = 0; i < N_SYN; i++) {
		seg.src = CLI_IP + i;
		build(&seg, (uint16_t)(1024 + (i & 0x7fff)), F_SYN, i * 7919u, 0, 65535, true, NULL, 0);
		syns[i].src = seg.src;
		memcpy(syns[i].b, seg.b, sizeof syns[i].b);
	}
}

/* ns per SYN over passes of all N_SYN flows within the budget (at least one pass). */
static double syn_pass(double budget, uint64_t *n_out)
{
	uint64_t n = 0;
	double t0 = cpu_s(), t = t0;
	do {
		for (uint32_t i = 0; i < N_SYN; i++) {
			tcp_input(H.t, syns[i].src, SRV_IP, syns[i].b, sizeof syns[i].b);
			H.nq = 0;
		}
		n += N_SYN;
		t = cpu_s();
	} while (t - t0 < budget);
	*n_out = n;
	return (t - t0) / (double)n * 1e9;
}

static int syn_costs(double budget)
{
	void *mem = stack_new(16);
	syns_build();
	H.admit_ok = true;
	uint64_t n_cookie, n_new, n_rem;
	const struct tcp_stats *st = tcp_stats(H.t);
	double cookie = syn_pass(budget, &n_cookie);
	uint64_t sent = st->syn_cookie_sent;
	H.admit_ok = false;
	/* First pass: every flow new (refused, then remembered in the refused-flow slots,
	 * which are fewer than the flows, so entries are replaced as it goes). */
	uint64_t r0 = st->syn_refused;
	double t0 = cpu_s();
	for (uint32_t i = 0; i < N_SYN; i++)
		tcp_input(H.t, syns[i].src, SRV_IP, syns[i].b, sizeof syns[i].b);
	n_new = N_SYN;
	double refused_new = (cpu_s() - t0) / (double)n_new * 1e9;
	uint64_t refused = st->syn_refused - r0;
	/* A storm from few flows: the same 64 flows again and again (remembered). */
	uint64_t m0 = st->syn_remembered;
	n_rem = 0;
	t0 = cpu_s();
	double t = t0;
	do {
		for (int k = 0; k < 64; k++)
			for (uint32_t i = 0; i < 64; i++)
				tcp_input(H.t, syns[i].src, SRV_IP, syns[i].b, sizeof syns[i].b);
		n_rem += 64 * 64;
		t = cpu_s();
	} while (t - t0 < budget / 2);
	double remembered = (t - t0) / (double)n_rem * 1e9;
	printf("{\"micro\":\"tcp_syn\",\"cookie_syns\":%llu,\"syn_acks_sent\":%llu,"
	       "\"ns_per_syn_cookie\":%.0f,\"refused_new_flows\":%llu,\"refused_counted\":%llu,"
	       "\"ns_per_syn_refused\":%.0f,\"remembered_syns\":%llu,\"remembered_counted\":%llu,"
	       "\"ns_per_syn_remembered\":%.0f,\"conns_after\":%u}\n",
	       (unsigned long long)n_cookie, (unsigned long long)sent, cookie,
	       (unsigned long long)n_new, (unsigned long long)refused, refused_new,
	       (unsigned long long)n_rem, (unsigned long long)(st->syn_remembered - m0), remembered,
	       tcp_conn_count(H.t));
	fflush(stdout);
	free(mem);
	return 0;
}

static int idle_state(void)
{
	struct tcp_config a, b;
	tcp_config_default(&a);
	a.local_ip = SRV_IP;
	a.ports[0] = PORT;
	a.n_ports = 1;
	b = a;
	a.max_conns = 1000;
	b.max_conns = 2000;
	size_t ma = tcp_stack_mem_size(&a), mb = tcp_stack_mem_size(&b);
	double region = ma && mb > ma ? (double)(mb - ma) / 1000.0 : 0.0;
	/* tcp_slot_size() is already the table cost per connection (two 4-byte slots). */
	printf("{\"micro\":\"tcp_idle_conn\",\"cb_bytes\":%zu,\"slot_bytes_per_conn\":%zu,"
	       "\"bytes_per_idle_conn\":%zu,\"stack_region_bytes_per_max_conn\":%.1f,"
	       "\"hold_pool_bytes_per_stack\":%zu}\n",
	       tcp_cb_size(), tcp_slot_size(), tcp_cb_size() + tcp_slot_size(), region,
	       tcp_hold_pool_size(&a));
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	double budget = argc > 1 ? atof(argv[1]) : 1.0;
	if (budget <= 0 || budget > 30)
		budget = 1.0;
	H.now = 1000000;
	H.rnd = 1;
	H.admit_ok = true;
	int rc = pump(budget);
	memset(&H, 0, sizeof H);
	H.now = 1000000;
	H.rnd = 1;
	rc |= syn_costs(budget);
	rc |= idle_state();
	return rc;
}
