/* SPDX-License-Identifier: MIT
 *
 * Test fakes for net/ (unit tests and fuzz targets): a port that lends frames from a
 * fixed pool and captures what is sent, a settable clock, deterministic randomness,
 * and builders for crafted frames. Every function is static: include once per binary.
 * fk_leaks() is the pool check every teardown runs (frames lent and never returned).
 */
#ifndef TESTS_UNIT_NET_NET_FAKE_H
#define TESTS_UNIT_NET_NET_FAKE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "net/csum.h"
#include "net/net.h"
#include "net/wire_net.h"

#define FK_N_BUFS 16
#define FK_BUF_LEN 2048
#define FK_N_SENT 64

struct fk_sent {
	uint8_t data[FK_BUF_LEN];
	size_t len;
};

struct fk_port {
	uint8_t bufs[FK_N_BUFS][FK_BUF_LEN];
	bool used[FK_N_BUFS];
	size_t cap;       /* what tx_get reports */
	bool no_bufs;     /* tx_get fails */
	int send_rc;      /* tx_send result */
	uint64_t now;
	uint32_t rnd;
	struct fk_sent sent[FK_N_SENT];
	size_t n_sent;    /* captured (sent beyond FK_N_SENT are counted, not kept) */
	size_t n_out;     /* frames lent and not returned */
};

__attribute__((unused)) static uint8_t *fk_tx_get(void *ctx, size_t *cap)
{
	struct fk_port *p = ctx;
	if (p->no_bufs)
		return NULL;
	for (int i = 0; i < FK_N_BUFS; i++) {
		if (!p->used[i]) {
			p->used[i] = true;
			p->n_out++;
			*cap = p->cap;
			memset(p->bufs[i], 0xa5, FK_BUF_LEN); /* catch unwritten bytes */
			return p->bufs[i];
		}
	}
	return NULL;
}

static void fk_release(struct fk_port *p, uint8_t *frame)
{
	for (int i = 0; i < FK_N_BUFS; i++) {
		if (frame == p->bufs[i]) {
			if (!p->used[i])
				abort(); /* double return */
			p->used[i] = false;
			p->n_out--;
			return;
		}
	}
	abort(); /* not one of ours */
}

__attribute__((unused)) static int fk_tx_send(void *ctx, uint8_t *frame, size_t len)
{
	struct fk_port *p = ctx;
	if (len > p->cap)
		abort();
	if (p->n_sent < FK_N_SENT) {
		memcpy(p->sent[p->n_sent].data, frame, len);
		p->sent[p->n_sent].len = len;
	}
	p->n_sent++;
	fk_release(p, frame);
	return p->send_rc;
}

__attribute__((unused)) static void fk_tx_put(void *ctx, uint8_t *frame)
{
	fk_release(ctx, frame);
}

__attribute__((unused)) static uint64_t fk_now_ms(void *ctx)
{
	return ((struct fk_port *)ctx)->now;
}

__attribute__((unused)) static uint32_t fk_random(void *ctx)
{
	struct fk_port *p = ctx;
	p->rnd ^= p->rnd << 13;
	p->rnd ^= p->rnd >> 17;
	p->rnd ^= p->rnd << 5;
	return p->rnd;
}

__attribute__((unused)) static const struct net_port_ops fk_ops = {
	.tx_get = fk_tx_get,
	.tx_send = fk_tx_send,
	.tx_put = fk_tx_put,
	.now_ms = fk_now_ms,
	.random = fk_random,
};

#define FK_IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

__attribute__((unused)) static const uint8_t fk_our_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
__attribute__((unused)) static const uint8_t fk_peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x99 };
__attribute__((unused)) static const uint8_t fk_gw_mac[6] = { 0x02, 0, 0, 0, 0, 0x55 };
__attribute__((unused)) static const uint8_t fk_bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
#define FK_OUR_IP FK_IP(10, 0, 0, 2)
#define FK_PEER_IP FK_IP(10, 0, 0, 9)
#define FK_GW_IP FK_IP(10, 0, 0, 1)
#define FK_MASK FK_IP(255, 255, 255, 0)

/* Storage for one stack and its tables. */
struct fk_env {
	struct fk_port port;
	struct net_stack stack;
	struct net_arp_entry arp[4];
	struct net_pending_frame pending[4];
	struct net_udp_sock udp[4];
	struct net_config cfg;
};

__attribute__((unused)) static void fk_config(struct fk_env *e, bool dhcp)
{
	struct net_config *c = &e->cfg;
	memset(c, 0, sizeof *c);
	memcpy(c->mac, fk_our_mac, 6);
	c->use_dhcp = dhcp;
	if (!dhcp) {
		c->ip = FK_OUR_IP;
		c->mask = FK_MASK;
		c->gw = FK_GW_IP;
	}
	c->ttl = 64;
	c->mtu = 1500;
	c->arp = e->arp;
	c->n_arp = 4;
	c->pending = e->pending;
	c->n_pending = 4;
	c->arp_expiry_ms = 60000;
	c->arp_retry_ms = 1000;
	c->arp_max_tries = 3;
	c->arp_defend_ms = 10000;
	c->icmp_rate_per_s = 10;
	c->icmp_burst = 5;
	c->udp = e->udp;
	c->n_udp = 4;
	c->dhcp_retry_initial_ms = 4000;
	c->dhcp_retry_max_ms = 64000;
	c->dhcp_request_tries = 4;
	c->dhcp_renew_retry_min_ms = 60000;
	c->dhcp_lease_min_s = 60;
}

/* Port defaults: 1514-byte frames, clock at 1000 ms, fixed seed. */
__attribute__((unused)) static void fk_port_reset(struct fk_port *p)
{
	memset(p, 0, sizeof *p);
	p->cap = 1514;
	p->now = 1000;
	p->rnd = 0x12345678;
}

/* ---- frame builders ---- */

__attribute__((unused)) static size_t fk_eth(uint8_t *f, const uint8_t *dst, const uint8_t *src,
					     uint16_t type)
{
	memcpy(f, dst, 6);
	memcpy(f + 6, src, 6);
	st_be16(f + 12, type);
	return 14;
}

/* IPv4 header + payload at p; returns total length. */
__attribute__((unused)) static size_t fk_ipv4(uint8_t *p, uint32_t src, uint32_t dst, uint8_t proto,
					      const void *payload, size_t plen)
{
	p[0] = 0x45;
	p[1] = 0;
	st_be16(p + 2, (uint16_t)(20 + plen));
	st_be16(p + 4, 0x1234);
	st_be16(p + 6, 0x4000);
	p[8] = 64;
	p[9] = proto;
	st_be16(p + 10, 0);
	st_be32(p + 12, src);
	st_be32(p + 16, dst);
	st_be16(p + 10, net_csum_fold(net_csum_add(0, p, 20)));
	if (plen)
		memmove(p + 20, payload, plen);
	return 20 + plen;
}

/* Recompute the IPv4 header checksum after a mutation. */
__attribute__((unused)) static void fk_ipv4_fix(uint8_t *p)
{
	size_t ihl = (size_t)(p[0] & 0xf) * 4;
	st_be16(p + 10, 0);
	st_be16(p + 10, net_csum_fold(net_csum_add(0, p, ihl)));
}

/* UDP datagram at u (header + data); returns its length. */
__attribute__((unused)) static size_t fk_udp(uint8_t *u, uint32_t src, uint32_t dst, uint16_t sport,
					     uint16_t dport, const void *data, size_t len)
{
	size_t ulen = 8 + len;
	st_be16(u, sport);
	st_be16(u + 2, dport);
	st_be16(u + 4, (uint16_t)ulen);
	st_be16(u + 6, 0);
	if (len)
		memmove(u + 8, data, len);
	uint16_t cs = net_csum_fold(net_csum_add(net_csum_pseudo(src, dst, 17, (uint16_t)ulen), u, ulen));
	st_be16(u + 6, cs ? cs : 0xffff);
	return ulen;
}

/* A whole Ethernet+IPv4+UDP frame; returns its length. */
__attribute__((unused)) static size_t fk_udp_frame(uint8_t *f, const uint8_t *dmac, const uint8_t *smac,
						   uint32_t src, uint32_t dst, uint16_t sport,
						   uint16_t dport, const void *data, size_t len)
{
	size_t n = fk_eth(f, dmac, smac, NET_ETH_TYPE_IPV4);
	size_t ul = fk_udp(f + n + 20, src, dst, sport, dport, data, len);
	return n + fk_ipv4(f + n, src, dst, 17, f + n + 20, ul);
}

/* ICMP echo request frame with `len` bytes of data. */
__attribute__((unused)) static size_t fk_ping_frame(uint8_t *f, const uint8_t *dmac, uint32_t src,
						    uint32_t dst, size_t len)
{
	uint8_t m[1500];
	m[0] = 8;
	m[1] = 0;
	st_be16(m + 2, 0);
	st_be16(m + 4, 0x77);
	st_be16(m + 6, 1);
	for (size_t i = 0; i < len; i++)
		m[8 + i] = (uint8_t)i;
	st_be16(m + 2, net_csum_fold(net_csum_add(0, m, 8 + len)));
	size_t n = fk_eth(f, dmac, fk_peer_mac, NET_ETH_TYPE_IPV4);
	return n + fk_ipv4(f + n, src, dst, 1, m, 8 + len);
}

/* ARP frame. */
__attribute__((unused)) static size_t fk_arp_frame(uint8_t *f, const uint8_t *dmac, const uint8_t *smac,
						   uint16_t op, const uint8_t *sha, uint32_t spa,
						   const uint8_t *tha, uint32_t tpa)
{
	size_t n = fk_eth(f, dmac, smac, NET_ETH_TYPE_ARP);
	uint8_t *a = f + n;
	st_be16(a, 1);
	st_be16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	st_be16(a + 6, op);
	memcpy(a + 8, sha, 6);
	st_be32(a + 14, spa);
	memcpy(a + 18, tha, 6);
	st_be32(a + 24, tpa);
	memset(a + 28, 0, 18); /* Ethernet padding to 60 */
	return 60;
}

/* ---- inspecting sent frames ---- */
__attribute__((unused)) static uint16_t fk_sent_type(const struct fk_sent *s)
{
	return ld_be16(s->data + 12);
}
__attribute__((unused)) static const uint8_t *fk_sent_ip(const struct fk_sent *s)
{
	return s->data + 14;
}
/* True when the sent IPv4 header is well formed with a correct checksum. */
__attribute__((unused)) static bool fk_sent_ip_ok(const struct fk_sent *s)
{
	const uint8_t *ip = s->data + 14;
	return fk_sent_type(s) == NET_ETH_TYPE_IPV4 && ip[0] == 0x45 &&
	       net_csum_fold(net_csum_add(0, ip, 20)) == 0 && (ld_be16(ip + 6) & 0x3fff) == 0 &&
	       ld_be16(ip + 2) + 14u <= s->len;
}

/* Fuzz targets: one static environment, reset per input. Checks invariant 2 of
 * net/net_int.h: the only frames out of the port are those queued behind ARP. */
__attribute__((unused)) static struct fk_env *fk_fuzz_env(bool dhcp, const struct net_upper_ops *up)
{
	static struct fk_env env;
	fk_port_reset(&env.port);
	fk_config(&env, dhcp);
	if (net_stack_init(&env.stack, &env.cfg, &fk_ops, &env.port, up, &env) != 0)
		abort();
	return &env;
}

__attribute__((unused)) static void fk_fuzz_check(struct fk_env *e)
{
	size_t queued = 0;
	for (size_t i = 0; i < e->cfg.n_pending; i++)
		if (e->pending[i].frame)
			queued++;
	if (e->port.n_out != queued || !net_stack_check_invariants(&e->stack))
		abort();
}

__attribute__((unused)) static void fk_fuzz_finish(struct fk_env *e)
{
	fk_fuzz_check(e);
	/* Losing the address (or the ARP giving up) must return every queued frame. */
	net_stack_poll(&e->stack, e->port.now + 3600ull * 1000 * 24 * 365);
	net_stack_poll(&e->stack, e->port.now + 3600ull * 1000 * 24 * 366);
	fk_fuzz_check(e);
	for (size_t i = 0; i < e->cfg.n_pending; i++)
		if (e->pending[i].frame)
			fk_tx_put(&e->port, e->pending[i].frame);
	if (e->port.n_out)
		abort();
}

#endif
