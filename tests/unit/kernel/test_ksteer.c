/* SPDX-License-Identifier: MIT
 * kernel/ksteer: the frame classifier, table-driven over well-formed and hostile frames
 * (truncated at every header, wrong version, header and total lengths, fragments, other
 * protocols, other addresses, no address yet, padding), every LOCAL decision counted at
 * its own site, the worker equal to net/rss's answer for the flow, flows spread over all
 * workers, truncation of a valid frame at every length never steered, and the address
 * message round trip with its rejections. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/ksteer.h"
#include "lib/bytes.h"
#include "lib/err.h"

#define OUR_IP 0x0a4e0002u  /* 10.78.0.2 */
#define PEER_IP 0x0a4e0001u /* 10.78.0.1 */

static uint8_t key[RSS_KEY_LEN];
static uint16_t indir[64];
static struct rss_steer rss;

static void rss_setup(uint32_t workers)
{
	for (size_t i = 0; i < sizeof key; i++)
		key[i] = (uint8_t)(i * 37u + 11u);
	struct rss_config rc = { .key = key, .n_workers = workers, .n_indir = 64, .indir = indir };
	assert_int_equal(rss_steer_init(&rss, &rc), 0);
}

struct frame_spec {
	const char *name;
	uint16_t type;
	uint8_t vhl;
	int total_adj; /* added to the true IPv4 total length */
	uint16_t frag;
	uint8_t proto;
	uint32_t dst;
	uint32_t our_ip;
	size_t cut;    /* keep only this many bytes (0: whole frame) */
	size_t pad;    /* Ethernet padding after the packet */
	enum ksteer_class want;
	size_t counter; /* offsetof in struct ksteer_counters */
};

/* Ethernet + IPv4 (ihl from vhl) + TCP header (20 bytes, ports 40000 -> 8883). */
static size_t build(const struct frame_spec *f, uint8_t *out, size_t cap)
{
	memset(out, 0, cap);
	memset(out, 0x02, 6);
	memset(out + 6, 0x04, 6);
	st_be16(out + 12, f->type);
	size_t hlen = (size_t)(f->vhl & 15u) * 4u;
	size_t ip_len = (hlen < 20 ? 20 : hlen) + 20;
	uint8_t *ip = out + 14;
	ip[0] = f->vhl;
	st_be16(ip + 2, (uint16_t)((int)ip_len + f->total_adj));
	st_be16(ip + 6, f->frag);
	ip[8] = 64;
	ip[9] = f->proto;
	st_be32(ip + 12, PEER_IP);
	st_be32(ip + 16, f->dst);
	uint8_t *tcp = ip + (hlen < 20 ? 20 : hlen);
	st_be16(tcp, 40000);
	st_be16(tcp + 2, 8883);
	size_t n = 14 + ip_len + f->pad;
	return f->cut ? f->cut : n;
}

#define C(field) offsetof(struct ksteer_counters, field)
static const struct frame_spec cases[] = {
	{ "tcp", 0x0800, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_FLOW, C(flows) },
	{ "tcp padded", 0x0800, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 0, 18, KSTEER_FLOW, C(flows) },
	{ "tcp options", 0x0800, 0x46, 0, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_FLOW, C(flows) },
	{ "tcp DF", 0x0800, 0x45, 0, 0x4000, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_FLOW, C(flows) },
	{ "arp", 0x0806, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_ARP, C(arp) },
	{ "arp short", 0x0806, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 14, 0, KSTEER_ARP, C(arp) },
	{ "empty", 0x0800, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 1, 0, KSTEER_LOCAL, C(eth_short) },
	{ "eth 13", 0x0800, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 13, 0, KSTEER_LOCAL, C(eth_short) },
	{ "ipv6", 0x86dd, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(not_ip) },
	{ "vlan", 0x8100, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(not_ip) },
	{ "ip 19", 0x0800, 0x45, 0, 0, 6, OUR_IP, OUR_IP, 14 + 19, 0, KSTEER_LOCAL, C(ip_short) },
	{ "version 6", 0x0800, 0x65, 0, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(ip_version) },
	{ "ihl 4", 0x0800, 0x44, 0, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(ip_hdr_len) },
	{ "ihl 0", 0x0800, 0x40, 0, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(ip_hdr_len) },
	{ "total > frame", 0x0800, 0x45, 1, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(ip_total_len) },
	{ "total < ihl", 0x0800, 0x46, -21, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(ip_total_len) },
	{ "ihl > total", 0x0800, 0x4f, -30, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(ip_total_len) },
	{ "MF", 0x0800, 0x45, 0, 0x2000, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(ip_frag) },
	{ "offset", 0x0800, 0x45, 0, 0x0001, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(ip_frag) },
	{ "udp", 0x0800, 0x45, 0, 0, 17, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(not_tcp) },
	{ "icmp", 0x0800, 0x45, 0, 0, 1, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(not_tcp) },
	{ "no address", 0x0800, 0x45, 0, 0, 6, OUR_IP, 0, 0, 0, KSTEER_LOCAL, C(no_addr) },
	{ "other dst", 0x0800, 0x45, 0, 0, 6, OUR_IP + 1, OUR_IP, 0, 0, KSTEER_LOCAL, C(not_ours) },
	{ "broadcast", 0x0800, 0x45, 0, 0, 6, 0xffffffffu, OUR_IP, 0, 0, KSTEER_LOCAL, C(not_ours) },
	{ "no ports", 0x0800, 0x45, -20, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(tcp_short) },
	{ "one port", 0x0800, 0x45, -18, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_LOCAL, C(tcp_short) },
	{ "ports", 0x0800, 0x45, -16, 0, 6, OUR_IP, OUR_IP, 0, 0, KSTEER_FLOW, C(flows) },
};

static uint64_t counter(const struct ksteer *s, size_t off)
{
	uint64_t v;
	memcpy(&v, (const uint8_t *)&s->cnt + off, sizeof v);
	return v;
}

static uint64_t counter_sum(const struct ksteer *s)
{
	uint64_t sum = 0;
	for (size_t off = 0; off < sizeof s->cnt; off += sizeof(uint64_t))
		sum += counter(s, off);
	return sum;
}

static void test_table(void **state)
{
	(void)state;
	rss_setup(4);
	struct ksteer s;
	assert_int_equal(ksteer_init(&s, NULL), -E_INVAL);
	assert_int_equal(ksteer_init(&s, &rss), 0);
	uint8_t f[128];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct frame_spec *c = &cases[i];
		size_t n = build(c, f, sizeof f);
		ksteer_set_addr(&s, c->our_ip);
		uint64_t before = counter(&s, c->counter), all = counter_sum(&s);
		uint32_t w = 99;
		enum ksteer_class got = ksteer_classify(&s, f, n, &w);
		if (got != c->want || counter(&s, c->counter) != before + 1 || counter_sum(&s) != all + 1)
			fail_msg("case %s: class %d (want %d), its counter %lu -> %lu", c->name, (int)got, (int)c->want,
				 (unsigned long)before, (unsigned long)counter(&s, c->counter));
		if (got == KSTEER_FLOW)
			assert_int_equal(w, rss_steer_flow(&rss, PEER_IP, OUR_IP, 40000, 8883));
		else
			assert_int_equal(w, 0);
	}
}

static void test_truncated_never_steered(void **state)
{
	(void)state;
	rss_setup(2);
	struct ksteer s;
	assert_int_equal(ksteer_init(&s, &rss), 0);
	ksteer_set_addr(&s, OUR_IP);
	uint8_t f[128];
	size_t n = build(&cases[0], f, sizeof f);
	uint32_t w;
	/* The frame is valid at full length; cut before the ports it is never a flow. */
	for (size_t cut = 0; cut < 14 + 20 + 4; cut++)
		assert_int_equal(ksteer_classify(&s, f, cut, &w), KSTEER_LOCAL);
	/* Cut inside the IPv4 packet (total length now exceeds the frame): local. */
	for (size_t cut = 14 + 20 + 4; cut < n; cut++)
		assert_int_equal(ksteer_classify(&s, f, cut, &w), KSTEER_LOCAL);
	assert_int_equal(ksteer_classify(&s, f, n, &w), KSTEER_FLOW);
	assert_int_equal(ksteer_classify(&s, NULL, 0, &w), KSTEER_LOCAL);
}

static void test_spread(void **state)
{
	(void)state;
	rss_setup(4);
	struct ksteer s;
	assert_int_equal(ksteer_init(&s, &rss), 0);
	ksteer_set_addr(&s, OUR_IP);
	uint8_t f[128];
	size_t n = build(&cases[0], f, sizeof f);
	uint32_t hits[4] = { 0 };
	for (uint32_t p = 0; p < 400; p++) {
		uint32_t w;
		st_be16(f + 14 + 20, (uint16_t)(32768u + p * 7u));
		assert_int_equal(ksteer_classify(&s, f, n, &w), KSTEER_FLOW);
		assert_true(w < 4);
		assert_int_equal(w, rss_steer_flow(&rss, PEER_IP, OUR_IP, (uint16_t)(32768u + p * 7u), 8883));
		hits[w]++;
	}
	for (uint32_t i = 0; i < 4; i++)
		assert_true(hits[i] >= 40); /* 400 flows over 4 workers: none starved */
}

static void test_addr_message(void **state)
{
	(void)state;
	uint8_t b[KSTEER_ADDR_LEN + 1];
	uint32_t ip = 1, mask = 1, gw = 1;
	ksteer_addr_encode(b, OUR_IP, 0xffffff00u, PEER_IP);
	assert_int_equal(b[0], 10);
	assert_int_equal(ksteer_addr_decode(b, KSTEER_ADDR_LEN, &ip, &mask, &gw), 0);
	assert_int_equal(ip, OUR_IP);
	assert_int_equal(mask, 0xffffff00u);
	assert_int_equal(gw, PEER_IP);
	ip = 7;
	assert_int_equal(ksteer_addr_decode(b, KSTEER_ADDR_LEN - 1, &ip, &mask, &gw), -E_INVAL);
	assert_int_equal(ksteer_addr_decode(b, KSTEER_ADDR_LEN + 1, &ip, &mask, &gw), -E_INVAL);
	assert_int_equal(ksteer_addr_decode(b, 0, &ip, &mask, &gw), -E_INVAL);
	assert_int_equal(ip, 7); /* untouched on error */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_truncated_never_steered),
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_addr_message),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
