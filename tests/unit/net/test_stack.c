/* SPDX-License-Identifier: MIT
 * Unit tests for net/ Ethernet, IPv4, ICMP, UDP and the TCP hand-off: crafted frames in,
 * replies and per-site counters checked, every parser's rejection cases table-driven,
 * and no transmit frame leaked (pool check in every teardown). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "net_fake.h"

#define CNT(e, field) ((e)->stack.cnt.field)
#define CNT_AT(e, off) (*(const uint64_t *)(const void *)((const char *)&(e)->stack.cnt + (off)))

struct tcp_seen {
	int n;
	uint32_t src, dst;
	uint8_t seg[64];
	size_t len;
};
static struct tcp_seen tcp_seen;

static void on_tcp(void *ctx, uint32_t src, uint32_t dst, const uint8_t *seg, size_t len)
{
	(void)ctx;
	tcp_seen.n++;
	tcp_seen.src = src;
	tcp_seen.dst = dst;
	tcp_seen.len = len;
	memcpy(tcp_seen.seg, seg, len < sizeof tcp_seen.seg ? len : sizeof tcp_seen.seg);
}

static const struct net_upper_ops upper = { .tcp_input = on_tcp };

static int setup(void **state)
{
	struct fk_env *e = calloc(1, sizeof *e);
	if (!e)
		return -1;
	fk_port_reset(&e->port);
	fk_config(e, false);
	if (net_stack_init(&e->stack, &e->cfg, &fk_ops, &e->port, &upper, NULL) != 0)
		return -1;
	memset(&tcp_seen, 0, sizeof tcp_seen);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct fk_env *e = *state;
	if (!net_stack_check_invariants(&e->stack))
		return -1;
	/* Pool check: queued frames are the only ones allowed out; flush them first. */
	for (size_t i = 0; i < e->cfg.n_pending; i++)
		if (e->pending[i].frame)
			fk_tx_put(&e->port, e->pending[i].frame);
	int leaked = (int)e->port.n_out;
	free(e);
	return leaked ? -1 : 0;
}

/* Teach the stack the peer's MAC the legitimate way: the peer asks for our address. */
static void learn(struct fk_env *e, const uint8_t *mac, uint32_t ip)
{
	uint8_t f[64];
	size_t n = fk_arp_frame(f, fk_bcast_mac, mac, NET_ARP_OP_REQUEST, mac, ip,
				(const uint8_t[6]){ 0 }, FK_OUR_IP);
	size_t before = e->port.n_sent;
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(e->port.n_sent, before + 1);
}

static void cfg_mut0(struct net_config *c) { c->mtu = 100; }
static void cfg_mut1(struct net_config *c) { c->ttl = 0; }
static void cfg_mut2(struct net_config *c) { c->n_arp = 0; }
static void cfg_mut3(struct net_config *c) { c->pending = NULL; }
static void cfg_mut4(struct net_config *c) { c->mac[0] = 1; }
static void cfg_mut5(struct net_config *c) { c->mask = 0xff00ff00; }
static void cfg_mut6(struct net_config *c) { c->mask = 0xffffffff; }
static void cfg_mut7(struct net_config *c) { c->ip = FK_IP(10, 0, 0, 0); }
static void cfg_mut8(struct net_config *c) { c->ip = FK_IP(10, 0, 0, 255); }
static void cfg_mut9(struct net_config *c) { c->ip = FK_IP(127, 0, 0, 1); }
static void cfg_mut10(struct net_config *c) { c->gw = FK_IP(10, 0, 1, 1); }
static void cfg_mut11(struct net_config *c) { c->gw = FK_OUR_IP; }
static void cfg_mut12(struct net_config *c) { c->arp_max_tries = 0; }
static void cfg_mut13(struct net_config *c) { c->udp = NULL; }
static void cfg_mut14(struct net_config *c) { c->use_dhcp = true; c->dhcp_retry_max_ms = 1; }

static void test_init_rejects_bad_config(void **state)
{
	struct fk_env *e = *state;
	struct net_stack s;
	struct {
		const char *what;
		void (*mutate)(struct net_config *c);
	} cases[] = {
		{ "mtu too small", cfg_mut0 },
		{ "ttl 0", cfg_mut1 },
		{ "no arp table", cfg_mut2 },
		{ "no pending table", cfg_mut3 },
		{ "group mac", cfg_mut4 },
		{ "non-contiguous mask", cfg_mut5 },
		{ "/32 mask", cfg_mut6 },
		{ "network address", cfg_mut7 },
		{ "broadcast address", cfg_mut8 },
		{ "loopback", cfg_mut9 },
		{ "gateway off subnet", cfg_mut10 },
		{ "gateway is us", cfg_mut11 },
		{ "arp tries 0", cfg_mut12 },
		{ "udp table missing", cfg_mut13 },
		{ "dhcp backoff inverted", cfg_mut14 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct net_config c = e->cfg;
		cases[i].mutate(&c);
		assert_int_equal(net_stack_init(&s, &c, &fk_ops, &e->port, NULL, NULL), -E_INVAL);
	}
	struct net_port_ops no_put = fk_ops;
	no_put.tx_put = NULL;
	assert_int_equal(net_stack_init(&s, &e->cfg, &no_put, &e->port, NULL, NULL), -E_INVAL);
}

static void test_static_address_announced_once(void **state)
{
	struct fk_env *e = *state;
	uint32_t mask, gw;
	assert_int_equal(net_stack_addr(&e->stack, &mask, &gw), FK_OUR_IP);
	assert_int_equal(mask, FK_MASK);
	assert_int_equal(gw, FK_GW_IP);
	assert_int_equal(e->port.n_sent, 0); /* init sends nothing */
	assert_int_equal(net_stack_next_timer_ms(&e->stack), 0); /* but has work */
	net_stack_poll(&e->stack, 1000);
	assert_int_equal(net_stack_next_timer_ms(&e->stack), UINT64_MAX);
	assert_int_equal(e->port.n_sent, 1);
	const uint8_t *f = e->port.sent[0].data;
	assert_memory_equal(f, fk_bcast_mac, 6);
	assert_memory_equal(f + 6, fk_our_mac, 6);
	assert_int_equal(ld_be16(f + 12), NET_ETH_TYPE_ARP);
	assert_int_equal(ld_be16(f + 14 + 6), NET_ARP_OP_REQUEST);
	assert_int_equal(ld_be32(f + 14 + 14), FK_OUR_IP); /* sender */
	assert_int_equal(ld_be32(f + 14 + 24), FK_OUR_IP); /* target: gratuitous */
	assert_int_equal(e->port.sent[0].len, 60);          /* padded to the minimum */
	net_stack_poll(&e->stack, 2000);
	assert_int_equal(e->port.n_sent, 1);
}

/* ---- Ethernet ---- */
static void test_eth_rejections(void **state)
{
	struct fk_env *e = *state;
	static const uint8_t other[6] = { 0x02, 0, 0, 0, 0, 0x77 };
	static const uint8_t mcast[6] = { 0x01, 0, 0x5e, 0, 0, 1 };
	static const uint8_t zero[6] = { 0 };
	struct {
		const char *what;
		const uint8_t *dst, *src;
		uint16_t type;
		size_t len;
		size_t counter;
	} cases[] = {
		{ "runt", fk_our_mac, fk_peer_mac, 0x0800, 13, offsetof(struct net_counters, eth_short) },
		{ "empty", fk_our_mac, fk_peer_mac, 0x0800, 0, offsetof(struct net_counters, eth_short) },
		{ "other dst", other, fk_peer_mac, 0x0800, 60, offsetof(struct net_counters, eth_dst) },
		{ "multicast dst", mcast, fk_peer_mac, 0x0800, 60, offsetof(struct net_counters, eth_dst) },
		{ "multicast src", fk_our_mac, mcast, 0x0800, 60, offsetof(struct net_counters, eth_src) },
		{ "broadcast src", fk_our_mac, fk_bcast_mac, 0x0800, 60, offsetof(struct net_counters, eth_src) },
		{ "our src", fk_our_mac, fk_our_mac, 0x0800, 60, offsetof(struct net_counters, eth_src) },
		{ "zero src", fk_our_mac, zero, 0x0800, 60, offsetof(struct net_counters, eth_src) },
		{ "ipv6", fk_our_mac, fk_peer_mac, 0x86dd, 60, offsetof(struct net_counters, eth_type) },
		{ "vlan", fk_our_mac, fk_peer_mac, 0x8100, 60, offsetof(struct net_counters, eth_type) },
		{ "802.3 length", fk_our_mac, fk_peer_mac, 0x0040, 60, offsetof(struct net_counters, eth_type) },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint8_t f[64] = { 0 };
		fk_eth(f, cases[i].dst, cases[i].src, cases[i].type);
		uint64_t before = CNT_AT(e, cases[i].counter);
		assert_true(net_stack_input(&e->stack, f, cases[i].len) < 0);
		if (CNT_AT(e, cases[i].counter) != before + 1)
			fail_msg("case %s: counter not incremented", cases[i].what);
	}
	assert_int_equal(e->port.n_sent, 0);
	assert_int_equal(CNT(e, rx_frames), ARRAY_LEN(cases));
}

/* ---- IPv4 ---- */
static void mut_version(uint8_t *ip, size_t *len) { (void)len; ip[0] = 0x65; fk_ipv4_fix(ip); }
static void mut_ihl4(uint8_t *ip, size_t *len) { (void)len; ip[0] = 0x44; }
static void mut_options(uint8_t *ip, size_t *len)
{
	(void)len;
	ip[0] = 0x46; /* one word of options: the echo header stands in for it */
	fk_ipv4_fix(ip);
}
static void mut_len_long(uint8_t *ip, size_t *len) { (void)len; st_be16(ip + 2, 1400); fk_ipv4_fix(ip); }
static void mut_len_short(uint8_t *ip, size_t *len) { (void)len; st_be16(ip + 2, 19); fk_ipv4_fix(ip); }
static void mut_truncated(uint8_t *ip, size_t *len) { (void)ip; *len = 14 + 19; }
static void mut_csum(uint8_t *ip, size_t *len) { (void)len; ip[10] ^= 1; }
static void mut_mf(uint8_t *ip, size_t *len) { (void)len; st_be16(ip + 6, 0x2000); fk_ipv4_fix(ip); }
static void mut_offset(uint8_t *ip, size_t *len) { (void)len; st_be16(ip + 6, 0x0010); fk_ipv4_fix(ip); }
static void mut_evil(uint8_t *ip, size_t *len) { (void)len; st_be16(ip + 6, 0x8000); fk_ipv4_fix(ip); }
static void mut_src0(uint8_t *ip, size_t *len) { (void)len; st_be32(ip + 12, 0); fk_ipv4_fix(ip); }
static void mut_src_bcast(uint8_t *ip, size_t *len) { (void)len; st_be32(ip + 12, 0xffffffff); fk_ipv4_fix(ip); }
static void mut_src_subnet_bcast(uint8_t *ip, size_t *len) { (void)len; st_be32(ip + 12, FK_IP(10, 0, 0, 255)); fk_ipv4_fix(ip); }
static void mut_src_us(uint8_t *ip, size_t *len) { (void)len; st_be32(ip + 12, FK_OUR_IP); fk_ipv4_fix(ip); }
static void mut_src_mcast(uint8_t *ip, size_t *len) { (void)len; st_be32(ip + 12, FK_IP(224, 0, 0, 1)); fk_ipv4_fix(ip); }
static void mut_src_loop(uint8_t *ip, size_t *len) { (void)len; st_be32(ip + 12, FK_IP(127, 0, 0, 1)); fk_ipv4_fix(ip); }
static void mut_dst_other(uint8_t *ip, size_t *len) { (void)len; st_be32(ip + 16, FK_IP(10, 0, 0, 3)); fk_ipv4_fix(ip); }
static void mut_dst_mcast(uint8_t *ip, size_t *len) { (void)len; st_be32(ip + 16, FK_IP(224, 0, 0, 1)); fk_ipv4_fix(ip); }
static void mut_l2_bcast(uint8_t *ip, size_t *len) { (void)len; memset(ip - 14, 0xff, 6); }
static void mut_proto(uint8_t *ip, size_t *len) { (void)len; ip[9] = 47; fk_ipv4_fix(ip); }

static void test_ipv4_rejections(void **state)
{
	struct fk_env *e = *state;
	struct {
		const char *what;
		void (*mutate)(uint8_t *ip, size_t *len);
		size_t counter;
	} cases[] = {
		{ "version 6", mut_version, offsetof(struct net_counters, ip_version) },
		{ "ihl 4", mut_ihl4, offsetof(struct net_counters, ip_len) },
		{ "options", mut_options, offsetof(struct net_counters, ip_options) },
		{ "total length beyond frame", mut_len_long, offsetof(struct net_counters, ip_len) },
		{ "total length < header", mut_len_short, offsetof(struct net_counters, ip_len) },
		{ "truncated header", mut_truncated, offsetof(struct net_counters, ip_short) },
		{ "bad checksum", mut_csum, offsetof(struct net_counters, ip_csum) },
		{ "more fragments", mut_mf, offsetof(struct net_counters, ip_frag) },
		{ "fragment offset", mut_offset, offsetof(struct net_counters, ip_frag) },
		{ "reserved flag", mut_evil, offsetof(struct net_counters, ip_frag) },
		{ "src 0", mut_src0, offsetof(struct net_counters, ip_src) },
		{ "src broadcast", mut_src_bcast, offsetof(struct net_counters, ip_src) },
		{ "src subnet broadcast", mut_src_subnet_bcast, offsetof(struct net_counters, ip_src) },
		{ "src is us", mut_src_us, offsetof(struct net_counters, ip_src) },
		{ "src multicast", mut_src_mcast, offsetof(struct net_counters, ip_src) },
		{ "src loopback", mut_src_loop, offsetof(struct net_counters, ip_src) },
		{ "dst not us", mut_dst_other, offsetof(struct net_counters, ip_dst) },
		{ "dst multicast", mut_dst_mcast, offsetof(struct net_counters, ip_dst) },
		{ "unicast in L2 broadcast", mut_l2_bcast, offsetof(struct net_counters, ip_dst) },
		{ "unknown protocol", mut_proto, offsetof(struct net_counters, ip_proto) },
	};
	learn(e, fk_peer_mac, FK_PEER_IP);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint8_t f[128];
		size_t n = fk_ping_frame(f, fk_our_mac, FK_PEER_IP, FK_OUR_IP, 16);
		size_t sent = e->port.n_sent;
		uint64_t before = CNT_AT(e, cases[i].counter);
		cases[i].mutate(f + 14, &n);
		assert_true(net_stack_input(&e->stack, f, n) < 0);
		if (CNT_AT(e, cases[i].counter) != before + 1)
			fail_msg("case %s: counter not incremented", cases[i].what);
		assert_int_equal(e->port.n_sent, sent);
	}
	/* The unmutated frame is answered, with trailing Ethernet padding ignored. */
	uint8_t f[128];
	size_t n = fk_ping_frame(f, fk_our_mac, FK_PEER_IP, FK_OUR_IP, 0);
	memset(f + n, 0, 60 - n);
	assert_int_equal(net_stack_input(&e->stack, f, 60), 0);
	assert_int_equal(CNT(e, icmp_echo_replies), 1);
}

/* ---- ICMP ---- */
static void test_icmp_echo_reply(void **state)
{
	struct fk_env *e = *state;
	uint8_t f[256];
	learn(e, fk_peer_mac, FK_PEER_IP);
	size_t n = fk_ping_frame(f, fk_our_mac, FK_PEER_IP, FK_OUR_IP, 100);
	size_t sent = e->port.n_sent;
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(e->port.n_sent, sent + 1);
	const struct fk_sent *r = &e->port.sent[sent];
	assert_true(fk_sent_ip_ok(r));
	assert_memory_equal(r->data, fk_peer_mac, 6);
	assert_memory_equal(r->data + 6, fk_our_mac, 6);
	const uint8_t *ip = fk_sent_ip(r);
	assert_int_equal(ld_be16(ip + 2), 20 + 108);
	assert_int_equal(ip[8], 64);                    /* configured TTL */
	assert_int_equal(ld_be16(ip + 6), 0x4000);      /* DF, no fragments */
	assert_int_equal(ip[9], 1);
	assert_int_equal(ld_be32(ip + 12), FK_OUR_IP);
	assert_int_equal(ld_be32(ip + 16), FK_PEER_IP);
	const uint8_t *m = ip + 20;
	assert_int_equal(m[0], 0);
	assert_int_equal(net_csum_fold(net_csum_add(0, m, 108)), 0);
	assert_memory_equal(m + 4, f + 14 + 20 + 4, 104); /* id, seq and data echoed */
}

static void mut_icmp_short(uint8_t *ip, size_t *len) { st_be16(ip + 2, 24); fk_ipv4_fix(ip); *len = 14 + 24; }
static void mut_icmp_csum(uint8_t *ip, size_t *len) { (void)len; ip[20 + 9] ^= 0x40; }
static void mut_icmp_reply(uint8_t *ip, size_t *len) { (void)len; ip[20] = 0; ip[22] = (uint8_t)(ip[22] + 8); }
static void mut_icmp_code(uint8_t *ip, size_t *len) { (void)len; ip[21] = 1; ip[23] = (uint8_t)(ip[23] - 1); }
static void mut_icmp_unreach(uint8_t *ip, size_t *len) { (void)len; ip[20] = 3; ip[22] = (uint8_t)(ip[22] + 5); }
static void mut_icmp_bcast(uint8_t *ip, size_t *len)
{
	(void)len;
	memset(ip - 14, 0xff, 6);
	st_be32(ip + 16, FK_IP(10, 0, 0, 255));
	fk_ipv4_fix(ip);
}
static void mut_icmp_bcast_all(uint8_t *ip, size_t *len)
{
	(void)len;
	memset(ip - 14, 0xff, 6);
	st_be32(ip + 16, 0xffffffff);
	fk_ipv4_fix(ip);
}

static void test_icmp_rejections(void **state)
{
	struct fk_env *e = *state;
	struct {
		const char *what;
		void (*mutate)(uint8_t *ip, size_t *len);
		size_t counter;
	} cases[] = {
		{ "shorter than header", mut_icmp_short, offsetof(struct net_counters, icmp_short) },
		{ "bad checksum", mut_icmp_csum, offsetof(struct net_counters, icmp_csum) },
		{ "echo reply", mut_icmp_reply, offsetof(struct net_counters, icmp_type) },
		{ "nonzero code", mut_icmp_code, offsetof(struct net_counters, icmp_type) },
		{ "unreachable", mut_icmp_unreach, offsetof(struct net_counters, icmp_type) },
		{ "subnet broadcast", mut_icmp_bcast, offsetof(struct net_counters, icmp_broadcast) },
		{ "limited broadcast", mut_icmp_bcast_all, offsetof(struct net_counters, icmp_broadcast) },
	};
	learn(e, fk_peer_mac, FK_PEER_IP);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint8_t f[128];
		size_t n = fk_ping_frame(f, fk_our_mac, FK_PEER_IP, FK_OUR_IP, 16);
		size_t sent = e->port.n_sent;
		uint64_t before = CNT_AT(e, cases[i].counter);
		cases[i].mutate(f + 14, &n);
		assert_true(net_stack_input(&e->stack, f, n) < 0);
		if (CNT_AT(e, cases[i].counter) != before + 1)
			fail_msg("case %s: counter not incremented", cases[i].what);
		assert_int_equal(e->port.n_sent, sent);
	}
}

static int ping(struct fk_env *e)
{
	uint8_t f[128];
	size_t n = fk_ping_frame(f, fk_our_mac, FK_PEER_IP, FK_OUR_IP, 8);
	return net_stack_input(&e->stack, f, n);
}

static void test_icmp_rate_limit(void **state)
{
	struct fk_env *e = *state;
	learn(e, fk_peer_mac, FK_PEER_IP);
	for (int i = 0; i < 5; i++) /* burst */
		assert_int_equal(ping(e), 0);
	assert_int_equal(ping(e), -E_AGAIN);
	assert_int_equal(CNT(e, icmp_rate_limited), 1);
	e->port.now += 99; /* 10/s: a token every 100 ms */
	assert_int_equal(ping(e), -E_AGAIN);
	e->port.now += 1;
	assert_int_equal(ping(e), 0);
	assert_int_equal(ping(e), -E_AGAIN);
	e->port.now += 3600 * 1000; /* refill is capped at the burst */
	learn(e, fk_peer_mac, FK_PEER_IP); /* the old entry expired meanwhile */
	for (int i = 0; i < 5; i++)
		assert_int_equal(ping(e), 0);
	assert_int_equal(ping(e), -E_AGAIN);
	assert_int_equal(CNT(e, icmp_echo_replies), 11);
	assert_int_equal(CNT(e, icmp_rate_limited), 4);
}

/* ---- UDP ---- */
struct udp_seen {
	int n;
	uint32_t src, dst;
	uint16_t sport;
	uint8_t data[64];
	size_t len;
};

static void on_udp(void *ctx, uint32_t src, uint16_t sport, uint32_t dst, const uint8_t *data,
		   size_t len)
{
	struct udp_seen *u = ctx;
	u->n++;
	u->src = src;
	u->dst = dst;
	u->sport = sport;
	u->len = len;
	memcpy(u->data, data, len < sizeof u->data ? len : sizeof u->data);
}

static void test_udp_receive(void **state)
{
	struct fk_env *e = *state;
	struct udp_seen seen = { 0 };
	uint8_t f[128];
	size_t n;

	assert_int_equal(net_udp_bind(&e->stack, 514, on_udp, &seen), 0);
	n = fk_udp_frame(f, fk_our_mac, fk_peer_mac, FK_PEER_IP, FK_OUR_IP, 3000, 514, "hello", 5);
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(seen.n, 1);
	assert_int_equal(seen.src, FK_PEER_IP);
	assert_int_equal(seen.dst, FK_OUR_IP);
	assert_int_equal(seen.sport, 3000);
	assert_int_equal(seen.len, 5);
	assert_memory_equal(seen.data, "hello", 5);
	/* Checksum 0 means "none" in IPv4. */
	st_be16(f + 14 + 20 + 6, 0);
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(seen.n, 2);
	/* Broadcast to a bound port is delivered with the broadcast destination. */
	n = fk_udp_frame(f, fk_bcast_mac, fk_peer_mac, FK_PEER_IP, 0xffffffff, 3000, 514, "x", 1);
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(seen.dst, 0xffffffff);
	/* Empty payload. */
	n = fk_udp_frame(f, fk_our_mac, fk_peer_mac, FK_PEER_IP, FK_OUR_IP, 3000, 514, "", 0);
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(seen.len, 0);
	assert_int_equal(seen.n, 4);
	assert_int_equal(e->port.n_sent, 0);
}

static void test_udp_rejections(void **state)
{
	struct fk_env *e = *state;
	struct udp_seen seen = { 0 };
	assert_int_equal(net_udp_bind(&e->stack, 514, on_udp, &seen), 0);
	struct {
		const char *what;
		int kind;
		size_t counter;
	} cases[] = {
		{ "bad checksum", 0, offsetof(struct net_counters, udp_csum) },
		{ "length beyond payload", 1, offsetof(struct net_counters, udp_len) },
		{ "length below header", 2, offsetof(struct net_counters, udp_len) },
		{ "shorter than header", 3, offsetof(struct net_counters, udp_short) },
		{ "no socket", 4, offsetof(struct net_counters, udp_no_port) },
		{ "source port 0", 5, offsetof(struct net_counters, udp_sport) },
		{ "to DHCP client port with static address", 6, offsetof(struct net_counters, udp_no_port) },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint8_t f[128];
		uint16_t dport = cases[i].kind == 4 ? 515 : cases[i].kind == 6 ? 68 : 514;
		uint16_t sport = cases[i].kind == 5 ? 0 : cases[i].kind == 6 ? 67 : 3000;
		size_t n = fk_udp_frame(f, fk_our_mac, fk_peer_mac, FK_PEER_IP, FK_OUR_IP, sport,
					dport, "payload!", 8);
		uint8_t *ip = f + 14, *u = ip + 20;
		switch (cases[i].kind) {
		case 0: u[9] ^= 1; break;
		case 1: st_be16(u + 4, 17); break;
		case 2: st_be16(u + 4, 7); break;
		case 3: st_be16(ip + 2, 27); fk_ipv4_fix(ip); n = 14 + 27; break;
		default: break;
		}
		uint64_t before = CNT_AT(e, cases[i].counter);
		assert_true(net_stack_input(&e->stack, f, n) < 0);
		if (CNT_AT(e, cases[i].counter) != before + 1)
			fail_msg("case %s: counter not incremented", cases[i].what);
	}
	assert_int_equal(seen.n, 0);
}

static void test_udp_bind_table(void **state)
{
	struct fk_env *e = *state;
	struct udp_seen seen;
	assert_int_equal(net_udp_bind(&e->stack, 0, on_udp, &seen), -E_INVAL);
	assert_int_equal(net_udp_bind(&e->stack, 1, on_udp, &seen), 0);
	assert_int_equal(net_udp_bind(&e->stack, 1, on_udp, &seen), -E_EXIST);
	assert_int_equal(net_udp_bind(&e->stack, 2, on_udp, &seen), 0);
	assert_int_equal(net_udp_bind(&e->stack, 3, on_udp, &seen), 0);
	assert_int_equal(net_udp_bind(&e->stack, 4, on_udp, &seen), 0);
	assert_int_equal(net_udp_bind(&e->stack, 5, on_udp, &seen), -E_NOMEM);
	assert_int_equal(net_udp_unbind(&e->stack, 3), 0);
	assert_int_equal(net_udp_unbind(&e->stack, 3), -E_NOENT);
	assert_int_equal(net_udp_bind(&e->stack, 5, on_udp, &seen), 0);
}

static void test_udp_send(void **state)
{
	struct fk_env *e = *state;
	learn(e, fk_peer_mac, FK_PEER_IP);
	size_t sent = e->port.n_sent;
	assert_int_equal(net_udp_send(&e->stack, 5140, FK_PEER_IP, 514, "<14>hi", 6), 0);
	assert_int_equal(e->port.n_sent, sent + 1);
	const struct fk_sent *r = &e->port.sent[sent];
	assert_true(fk_sent_ip_ok(r));
	assert_memory_equal(r->data, fk_peer_mac, 6);
	const uint8_t *ip = fk_sent_ip(r), *u = ip + 20;
	assert_int_equal(ip[9], 17);
	assert_int_equal(ld_be16(u), 5140);
	assert_int_equal(ld_be16(u + 2), 514);
	assert_int_equal(ld_be16(u + 4), 14);
	assert_int_not_equal(ld_be16(u + 6), 0);
	assert_int_equal(net_csum_fold(net_csum_add(net_csum_pseudo(FK_OUR_IP, FK_PEER_IP, 17, 14), u, 14)), 0);
	assert_memory_equal(u + 8, "<14>hi", 6);
	assert_int_equal(r->len, 60);
	/* Too big for the MTU, bad ports, no buffer. */
	static uint8_t big[1500];
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 514, big, 1473), -E_OVERFLOW);
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 514, big, 1472), 0);
	assert_int_equal(e->port.sent[e->port.n_sent - 1].len, 1514);
	assert_int_equal(net_udp_send(&e->stack, 0, FK_PEER_IP, 514, "x", 1), -E_INVAL);
	e->port.no_bufs = true;
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 514, "x", 1), -E_AGAIN);
	assert_int_equal(CNT(e, tx_nobuf), 1);
	e->port.no_bufs = false;
	/* A port whose frames are smaller than the datagram. */
	e->port.cap = 100;
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 514, big, 100), -E_AGAIN);
	assert_int_equal(CNT(e, tx_too_big), 2);
	/* No route: loopback and multicast destinations. */
	e->port.cap = 1514;
	assert_int_equal(net_udp_send(&e->stack, 1, FK_IP(127, 0, 0, 1), 514, "x", 1), -E_NOENT);
	assert_int_equal(net_udp_send(&e->stack, 1, FK_IP(239, 1, 1, 1), 514, "x", 1), -E_NOENT);
	assert_int_equal(CNT(e, ip_no_route), 2);
}

/* ---- TCP hand-off and adapter ---- */
static size_t tcp_frame(uint8_t *f, const uint8_t *dmac, uint32_t src, uint32_t dst,
			size_t seg_len)
{
	uint8_t seg[64] = { 0 };
	st_be16(seg, 40000);
	st_be16(seg + 2, 8883);
	seg[12] = 0x50;
	seg[13] = 0x02;
	for (size_t i = 20; i < seg_len; i++)
		seg[i] = (uint8_t)i;
	st_be16(seg + 16, net_csum_fold(net_csum_add(net_csum_pseudo(src, dst, 6, (uint16_t)seg_len), seg, seg_len)));
	size_t n = fk_eth(f, dmac, fk_peer_mac, NET_ETH_TYPE_IPV4);
	return n + fk_ipv4(f + n, src, dst, 6, seg, seg_len);
}

static void test_tcp_input(void **state)
{
	struct fk_env *e = *state;
	uint8_t f[128];
	size_t n = tcp_frame(f, fk_our_mac, FK_PEER_IP, FK_OUR_IP, 24);
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(tcp_seen.n, 1);
	assert_int_equal(tcp_seen.src, FK_PEER_IP);
	assert_int_equal(tcp_seen.dst, FK_OUR_IP);
	assert_int_equal(tcp_seen.len, 24);
	assert_memory_equal(tcp_seen.seg, f + 34, 24);
	/* The TCP checksum is TCP's to verify: a bad one is passed up unchanged. */
	f[34 + 21] ^= 1;
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(tcp_seen.n, 2);
	/* Rejections. */
	n = tcp_frame(f, fk_our_mac, FK_PEER_IP, FK_OUR_IP, 19);
	assert_true(net_stack_input(&e->stack, f, n) < 0);
	assert_int_equal(CNT(e, tcp_short), 1);
	n = tcp_frame(f, fk_bcast_mac, FK_PEER_IP, FK_IP(10, 0, 0, 255), 20);
	assert_true(net_stack_input(&e->stack, f, n) < 0);
	assert_int_equal(CNT(e, tcp_broadcast), 1);
	assert_int_equal(tcp_seen.n, 2);
	/* Without a handler: counted. */
	struct net_stack s2;
	assert_int_equal(net_stack_init(&s2, &e->cfg, &fk_ops, &e->port, NULL, NULL), 0);
	n = tcp_frame(f, fk_our_mac, FK_PEER_IP, FK_OUR_IP, 20);
	assert_true(net_stack_input(&s2, f, n) < 0);
	assert_int_equal(s2.cnt.tcp_no_handler, 1);
	assert_int_equal(e->port.n_sent, 0);
}

static void test_tcp_adapter(void **state)
{
	struct fk_env *e = *state;
	size_t cap = 0;
	learn(e, fk_peer_mac, FK_PEER_IP);
	size_t sent = e->port.n_sent;
	uint8_t *seg = net_tcp_tx_begin(&e->stack, &cap);
	assert_non_null(seg);
	assert_int_equal(cap, 1480);
	memset(seg, 0, 24);
	st_be16(seg, 8883);
	st_be16(seg + 2, 40000);
	seg[12] = 0x50;
	seg[13] = 0x12;
	memcpy(seg + 20, "abcd", 4);
	st_be16(seg + 16, net_csum_fold(net_csum_add(net_csum_pseudo(FK_OUR_IP, FK_PEER_IP, 6, 24), seg, 24)));
	assert_int_equal(net_tcp_tx_send(&e->stack, FK_OUR_IP, FK_PEER_IP, seg, 24), 0);
	assert_int_equal(e->port.n_sent, sent + 1);
	const struct fk_sent *r = &e->port.sent[sent];
	assert_true(fk_sent_ip_ok(r));
	assert_memory_equal(r->data, fk_peer_mac, 6);
	const uint8_t *ip = fk_sent_ip(r);
	assert_int_equal(ip[9], 6);
	assert_int_equal(ld_be16(ip + 2), 44);
	assert_int_equal(net_csum_fold(net_csum_add(net_csum_pseudo(FK_OUR_IP, FK_PEER_IP, 6, 24), ip + 20, 24)), 0);

	/* Off-subnet: through the gateway, queued behind ARP, sent when it answers. */
	seg = net_tcp_tx_begin(&e->stack, &cap);
	memset(seg, 0, 20);
	assert_int_equal(net_tcp_tx_send(&e->stack, FK_OUR_IP, FK_IP(192, 0, 2, 7), seg, 20), 0);
	assert_int_equal(e->port.n_sent, sent + 2); /* the ARP request only */
	r = &e->port.sent[sent + 1];
	assert_int_equal(fk_sent_type(r), NET_ETH_TYPE_ARP);
	assert_int_equal(ld_be32(r->data + 14 + 24), FK_GW_IP);
	assert_int_equal(e->port.n_out, 1);
	uint8_t f[64];
	size_t n = fk_arp_frame(f, fk_our_mac, fk_gw_mac, NET_ARP_OP_REPLY, fk_gw_mac, FK_GW_IP,
				fk_our_mac, FK_OUR_IP);
	assert_int_equal(net_stack_input(&e->stack, f, n), 0);
	assert_int_equal(e->port.n_sent, sent + 3);
	r = &e->port.sent[sent + 2];
	assert_memory_equal(r->data, fk_gw_mac, 6);
	assert_int_equal(ld_be32(fk_sent_ip(r) + 16), FK_IP(192, 0, 2, 7));
	assert_int_equal(e->port.n_out, 0);

	/* Errors give the frame back. */
	seg = net_tcp_tx_begin(&e->stack, &cap);
	assert_int_equal(net_tcp_tx_send(&e->stack, FK_IP(10, 0, 0, 3), FK_PEER_IP, seg, 20), -E_NOENT);
	seg = net_tcp_tx_begin(&e->stack, &cap);
	assert_int_equal(net_tcp_tx_send(&e->stack, FK_OUR_IP, 0xffffffff, seg, 20), -E_NOENT);
	seg = net_tcp_tx_begin(&e->stack, &cap);
	assert_int_equal(net_tcp_tx_send(&e->stack, FK_OUR_IP, FK_PEER_IP, seg, 1481), -E_OVERFLOW);
	seg = net_tcp_tx_begin(&e->stack, &cap);
	assert_int_equal(net_tcp_tx_send(&e->stack, FK_OUR_IP, FK_PEER_IP, seg, 19), -E_OVERFLOW);
	seg = net_tcp_tx_begin(&e->stack, &cap);
	net_tcp_tx_abort(&e->stack, seg);
	assert_int_equal(e->port.n_out, 0);
	e->port.no_bufs = true;
	assert_null(net_tcp_tx_begin(&e->stack, &cap));
	e->port.no_bufs = false;
	/* A failing NIC is counted. */
	e->port.send_rc = -E_IO;
	seg = net_tcp_tx_begin(&e->stack, &cap);
	memset(seg, 0, 20);
	assert_int_equal(net_tcp_tx_send(&e->stack, FK_OUR_IP, FK_PEER_IP, seg, 20), -E_IO);
	assert_int_equal(CNT(e, tx_err), 1);
	assert_int_equal(e->port.n_out, 0);
}

static void test_ip_ids_and_ttl(void **state)
{
	struct fk_env *e = *state;
	learn(e, fk_peer_mac, FK_PEER_IP);
	size_t sent = e->port.n_sent;
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 2, "a", 1), 0);
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 2, "b", 1), 0);
	const uint8_t *a = fk_sent_ip(&e->port.sent[sent]), *b = fk_sent_ip(&e->port.sent[sent + 1]);
	assert_int_not_equal(ld_be16(a + 4), ld_be16(b + 4));
	assert_int_equal(a[8], 64);
	/* Off-subnet without a gateway: no route. */
	e->cfg.gw = 0;
	struct net_stack s2;
	assert_int_equal(net_stack_init(&s2, &e->cfg, &fk_ops, &e->port, NULL, NULL), 0);
	assert_int_equal(net_udp_send(&s2, 1, FK_IP(192, 0, 2, 1), 2, "a", 1), -E_NOENT);
	assert_int_equal(s2.cnt.ip_no_route, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_rejects_bad_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_static_address_announced_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eth_rejections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ipv4_rejections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_icmp_echo_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_icmp_rejections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_icmp_rate_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_receive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_rejections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_bind_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_udp_send, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tcp_adapter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ip_ids_and_ttl, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
