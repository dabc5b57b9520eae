/* SPDX-License-Identifier: MIT
 * Unit tests for net/dhcp.c against a simulated server: the full DISCOVER/OFFER/
 * REQUEST/ACK exchange, renewal at T1 (unicast), rebinding at T2 (broadcast), lease
 * expiry, NAKs, retransmission backoff, server timers, and a table of replies that must
 * be rejected. Every teardown checks no transmit frame leaked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "net_fake.h"
#include "dhcp_sim.h"

#define CNT(e, field) ((e)->stack.cnt.field)
#define CNT_AT(e, off) (*(const uint64_t *)(const void *)((const char *)&(e)->stack.cnt + (off)))

struct addr_log {
	int n;
	uint32_t ip, mask, gw;
};
static struct addr_log addr_log;

static void on_addr(void *ctx, uint32_t ip, uint32_t mask, uint32_t gw)
{
	(void)ctx;
	addr_log.n++;
	addr_log.ip = ip;
	addr_log.mask = mask;
	addr_log.gw = gw;
}
static const struct net_upper_ops upper = { .addr_changed = on_addr };

static int setup(void **state)
{
	struct fk_env *e = calloc(1, sizeof *e);
	if (!e)
		return -1;
	fk_port_reset(&e->port);
	fk_config(e, true);
	memset(&addr_log, 0, sizeof addr_log);
	if (net_stack_init(&e->stack, &e->cfg, &fk_ops, &e->port, &upper, NULL) != 0)
		return -1;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct fk_env *e = *state;
	if (!net_stack_check_invariants(&e->stack))
		return -1;
	for (size_t i = 0; i < e->cfg.n_pending; i++)
		if (e->pending[i].frame)
			fk_tx_put(&e->port, e->pending[i].frame);
	int leaked = (int)e->port.n_out;
	free(e);
	return leaked ? -1 : 0;
}

/* Poll at `t` and return the client's DHCP message if exactly one new DHCP frame was
 * sent (answering any ARP request for the server on the way). */
static struct sim_msg poll_at(struct fk_env *e, uint64_t t, size_t *n_new /* out */)
{
	struct sim_msg m;
	memset(&m, 0, sizeof m);
	size_t before = e->port.n_sent;
	e->port.now = t;
	net_stack_poll(&e->stack, t);
	for (size_t i = before; i < e->port.n_sent && i < FK_N_SENT; i++) {
		const struct fk_sent *r = &e->port.sent[i];
		uint32_t tpa = ld_be32(r->data + 14 + 24);
		if (fk_sent_type(r) == NET_ETH_TYPE_ARP && ld_be16(r->data + 14 + 6) == 1 &&
		    (tpa == SIM_SERVER_IP || tpa == FK_IP(10, 0, 0, 5))) {
			uint8_t f[64];
			size_t n = fk_arp_frame(f, fk_our_mac, fk_gw_mac, NET_ARP_OP_REPLY, fk_gw_mac,
						tpa, fk_our_mac, ld_be32(r->data + 14 + 14));
			assert_int_equal(net_stack_input(&e->stack, f, n), 0);
		}
	}
	size_t found = 0;
	for (size_t i = before; i < e->port.n_sent && i < FK_N_SENT; i++) {
		struct sim_msg x = sim_parse(&e->port.sent[i]);
		if (x.ok) {
			m = x;
			found++;
		}
	}
	if (n_new)
		*n_new = found;
	return m;
}

static int reply(struct fk_env *e, const struct sim_reply *r)
{
	uint8_t f[700];
	size_t n = sim_build(f, r);
	return net_stack_input(&e->stack, f, n);
}

/* Run DISCOVER/OFFER/REQUEST/ACK; returns the ACKed REQUEST. */
static struct sim_msg acquire(struct fk_env *e, uint32_t lease)
{
	size_t n;
	struct sim_msg d = poll_at(e, e->port.now, &n);
	assert_int_equal(n, 1);
	assert_int_equal(d.type, NET_DHCP_DISCOVER);
	struct sim_reply o = sim_default(NET_DHCP_OFFER, &d);
	size_t before = e->port.n_sent;
	assert_int_equal(reply(e, &o), 0);
	assert_int_equal(e->port.n_sent, before + 1);
	struct sim_msg q = sim_parse(&e->port.sent[before]);
	assert_true(q.ok);
	assert_int_equal(q.type, NET_DHCP_REQUEST);
	struct sim_reply a = sim_default(NET_DHCP_ACK, &q);
	a.lease = lease;
	assert_int_equal(reply(e, &a), 0);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), SIM_OFFER_IP);
	return q;
}

static void test_full_exchange(void **state)
{
	struct fk_env *e = *state;
	size_t n;
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), 0);
	assert_int_equal(e->port.n_sent, 0);
	struct sim_msg d = poll_at(e, 1000, &n);
	assert_int_equal(n, 1);
	assert_int_equal(d.type, NET_DHCP_DISCOVER);
	assert_memory_equal(d.eth_dst, fk_bcast_mac, 6);
	assert_int_equal(d.ip_src, 0);
	assert_int_equal(d.ip_dst, 0xffffffff);
	assert_int_equal(d.flags, NET_DHCP_FLAG_BROADCAST);
	assert_int_equal(d.ciaddr, 0);

	e->port.now = 1500;
	struct sim_reply o = sim_default(NET_DHCP_OFFER, &d);
	assert_int_equal(reply(e, &o), 0);
	struct sim_msg q = sim_parse(&e->port.sent[1]);
	assert_true(q.ok);
	assert_int_equal(q.type, NET_DHCP_REQUEST);
	assert_int_equal(q.xid, d.xid);
	assert_int_equal(q.req_ip, SIM_OFFER_IP);
	assert_int_equal(q.server_id, SIM_SERVER_IP);
	assert_int_equal(q.ip_src, 0);
	assert_int_equal(q.ip_dst, 0xffffffff);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), 0);
	/* A second offer is ignored once one was chosen. */
	assert_true(reply(e, &o) < 0);
	assert_int_equal(CNT(e, dhcp_unexpected), 1);

	struct sim_reply a = sim_default(NET_DHCP_ACK, &q);
	assert_int_equal(reply(e, &a), 0);
	uint32_t mask, gw;
	assert_int_equal(net_stack_addr(&e->stack, &mask, &gw), SIM_OFFER_IP);
	assert_int_equal(mask, FK_MASK);
	assert_int_equal(gw, FK_GW_IP);
	assert_int_equal(addr_log.n, 1);
	assert_int_equal(addr_log.ip, SIM_OFFER_IP);
	assert_int_equal(CNT(e, dhcp_bound), 1);
	/* Gratuitous ARP at the next poll. */
	size_t before = e->port.n_sent;
	net_stack_poll(&e->stack, 1600);
	assert_int_equal(e->port.n_sent, before + 1);
	const uint8_t *g = e->port.sent[before].data;
	assert_int_equal(ld_be16(g + 12), NET_ETH_TYPE_ARP);
	assert_int_equal(ld_be32(g + 14 + 14), SIM_OFFER_IP);
	assert_int_equal(ld_be32(g + 14 + 24), SIM_OFFER_IP);
	/* A stray ACK while bound is unexpected. */
	assert_true(reply(e, &a) < 0);
}

static void test_renew_rebind_expire(void **state)
{
	struct fk_env *e = *state;
	size_t n;
	/* Lease 3600 s from the REQUEST exchange started at t=1000 ms: T1 = 1800 s,
	 * T2 = 3150 s, expiry = 3600 s (relative to the start). */
	(void)acquire(e, 3600);
	uint64_t t0 = 1000;
	(void)poll_at(e, t0 + 1799999, &n);
	assert_int_equal(n, 0);
	struct sim_msg r = poll_at(e, t0 + 1800000, &n);
	assert_int_equal(n, 1);
	assert_int_equal(r.type, NET_DHCP_REQUEST);
	assert_int_equal(r.ip_src, SIM_OFFER_IP);
	assert_int_equal(r.ip_dst, SIM_SERVER_IP); /* unicast to the server */
	assert_memory_equal(r.eth_dst, fk_gw_mac, 6);
	assert_int_equal(r.ciaddr, SIM_OFFER_IP);
	assert_int_equal(r.flags, 0);
	assert_int_equal(r.req_ip, 0); /* RFC 2131: no requested-IP when renewing */
	assert_int_equal(r.server_id, 0);
	/* ACK unicast to us: bound again with the lease restarted at the renewal. */
	struct sim_reply a = sim_default(NET_DHCP_ACK, &r);
	a.ip_dst = SIM_OFFER_IP;
	a.eth_dst = fk_our_mac;
	assert_int_equal(reply(e, &a), 0);
	assert_int_equal(CNT(e, dhcp_bound), 2);
	assert_int_equal(addr_log.n, 1); /* same address: no change reported */
	uint64_t t1 = t0 + 1800000;
	(void)poll_at(e, t1 + 1799999, &n);
	assert_int_equal(n, 0);
	r = poll_at(e, t1 + 1800000, &n);
	assert_int_equal(n, 1);
	uint32_t renew_xid = r.xid;
	/* No answer: retransmit after half the time left to T2 (1350 s / 2). */
	(void)poll_at(e, t1 + 1800000 + 674999, &n);
	assert_int_equal(n, 0);
	r = poll_at(e, t1 + 1800000 + 675000, &n);
	assert_int_equal(n, 1);
	assert_int_equal(r.xid, renew_xid);
	assert_int_equal(r.ip_dst, SIM_SERVER_IP);
	/* T2: rebinding, broadcast, new transaction. */
	r = poll_at(e, t1 + 3150000, &n);
	assert_int_equal(n, 1);
	assert_int_equal(r.ip_dst, 0xffffffff);
	assert_memory_equal(r.eth_dst, fk_bcast_mac, 6);
	assert_int_equal(r.ip_src, SIM_OFFER_IP);
	assert_int_equal(r.ciaddr, SIM_OFFER_IP);
	assert_int_not_equal(r.xid, renew_xid);
	/* While rebinding any server may answer, even with a new address. */
	a = sim_default(NET_DHCP_ACK, &r);
	a.server = FK_IP(10, 0, 0, 5);
	a.ip_src = FK_IP(10, 0, 0, 5);
	a.yiaddr = FK_IP(10, 0, 0, 51);
	assert_int_equal(reply(e, &a), 0);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), FK_IP(10, 0, 0, 51));
	assert_int_equal(addr_log.n, 2);
	/* Now nobody answers: renew, rebind, then the lease runs out. */
	uint64_t t2 = t1 + 3150000;
	r = poll_at(e, t2 + 1800000, &n);
	assert_int_equal(r.ip_dst, FK_IP(10, 0, 0, 5));
	r = poll_at(e, t2 + 3150000, &n);
	assert_int_equal(r.ip_dst, 0xffffffff);
	/* Retransmissions while rebinding: half of the 450 s left, then the 60 s floor. */
	r = poll_at(e, t2 + 3150000 + 225000, &n);
	assert_int_equal(n, 1);
	(void)poll_at(e, t2 + 3599999, &n);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), FK_IP(10, 0, 0, 51));
	(void)poll_at(e, t2 + 3600000, &n);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), 0);
	assert_int_equal(addr_log.n, 3);
	assert_int_equal(addr_log.ip, 0);
	assert_int_equal(CNT(e, dhcp_expired), 1);
	/* And it starts over. */
	r = poll_at(e, t2 + 3600001, &n);
	assert_int_equal(n, 1);
	assert_int_equal(r.type, NET_DHCP_DISCOVER);
	assert_int_equal(r.ip_src, 0);
}

static void test_nak_while_requesting_restarts(void **state)
{
	struct fk_env *e = *state;
	size_t n;
	struct sim_msg d = poll_at(e, 1000, &n);
	struct sim_reply o = sim_default(NET_DHCP_OFFER, &d);
	assert_int_equal(reply(e, &o), 0);
	struct sim_msg q = sim_parse(&e->port.sent[1]);
	struct sim_reply k = sim_default(NET_DHCP_NAK, &q);
	assert_int_equal(reply(e, &k), 0);
	assert_int_equal(CNT(e, dhcp_naks), 1);
	/* Not at once: after a pause of about dhcp_retry_initial_ms. */
	uint64_t t = net_stack_next_timer_ms(&e->stack);
	assert_true(t >= 1000 + 3500 && t <= 1000 + 4500);
	(void)poll_at(e, t - 1, &n);
	assert_int_equal(n, 0);
	struct sim_msg d2 = poll_at(e, t, &n);
	assert_int_equal(n, 1);
	assert_int_equal(d2.type, NET_DHCP_DISCOVER);
	assert_int_not_equal(d2.xid, d.xid);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), 0);
}

static void test_nak_while_renewing_drops_address(void **state)
{
	struct fk_env *e = *state;
	size_t n;
	(void)acquire(e, 3600);
	struct sim_msg r = poll_at(e, 1000 + 1800000, &n);
	assert_int_equal(n, 1);
	/* A NAK from another server is not believed. */
	struct sim_reply k = sim_default(NET_DHCP_NAK, &r);
	k.server = FK_IP(10, 0, 0, 66);
	k.ip_src = FK_IP(10, 0, 0, 66);
	assert_true(reply(e, &k) < 0);
	assert_int_equal(CNT(e, dhcp_server), 1);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), SIM_OFFER_IP);
	k = sim_default(NET_DHCP_NAK, &r);
	assert_int_equal(reply(e, &k), 0);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), 0);
	assert_int_equal(addr_log.ip, 0);
	r = poll_at(e, net_stack_next_timer_ms(&e->stack), &n);
	assert_int_equal(r.type, NET_DHCP_DISCOVER);
}

static void test_discover_backoff(void **state)
{
	struct fk_env *e = *state;
	uint64_t sends[8];
	uint32_t xid = 0;
	size_t k = 0, n;
	for (uint64_t t = 1000; t < 1000 + 215000 && k < ARRAY_LEN(sends); t += 50) {
		struct sim_msg m = poll_at(e, t, &n);
		if (n) {
			assert_int_equal(m.type, NET_DHCP_DISCOVER);
			if (k == 0)
				xid = m.xid;
			assert_int_equal(m.xid, xid); /* retransmissions keep the xid */
			sends[k++] = t;
		}
	}
	assert_int_equal(k, 7);
	static const uint64_t expect[] = { 4000, 8000, 16000, 32000, 64000, 64000 };
	for (size_t i = 0; i < ARRAY_LEN(expect); i++) {
		uint64_t gap = sends[i + 1] - sends[i];
		if (gap + expect[i] / 8 < expect[i] || gap > expect[i] + expect[i] / 8 + 50)
			fail_msg("gap %zu is %llu ms, expected about %llu", i,
				 (unsigned long long)gap, (unsigned long long)expect[i]);
	}
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), 0);
}

static void test_request_unanswered_starts_over(void **state)
{
	struct fk_env *e = *state;
	size_t n, n_req = 0;
	struct sim_msg d = poll_at(e, 1000, &n);
	struct sim_reply o = sim_default(NET_DHCP_OFFER, &d);
	assert_int_equal(reply(e, &o), 0);
	n_req = 1;
	struct sim_msg m;
	uint64_t t = 1000;
	for (;;) {
		t += 100;
		m = poll_at(e, t, &n);
		if (n && m.type == NET_DHCP_DISCOVER)
			break;
		if (n)
			n_req++;
		assert_true(t < 200000);
	}
	assert_int_equal(n_req, 4); /* dhcp_request_tries */
	assert_int_not_equal(m.xid, d.xid);
}

static void test_server_timers(void **state)
{
	struct fk_env *e = *state;
	size_t n;
	struct sim_msg d = poll_at(e, 1000, &n);
	struct sim_reply o = sim_default(NET_DHCP_OFFER, &d);
	assert_int_equal(reply(e, &o), 0);
	struct sim_msg q = sim_parse(&e->port.sent[1]);
	struct sim_reply a = sim_default(NET_DHCP_ACK, &q);
	a.lease = 1000;
	a.t1 = 100;
	a.t2 = 200;
	assert_int_equal(reply(e, &a), 0);
	(void)poll_at(e, 1000 + 99999, &n);
	assert_int_equal(n, 0);
	struct sim_msg r = poll_at(e, 1000 + 100000, &n);
	assert_int_equal(n, 1);
	assert_int_equal(r.ip_dst, SIM_SERVER_IP);
	r = poll_at(e, 1000 + 200000, &n);
	assert_int_equal(r.ip_dst, 0xffffffff);
}

static void test_misordered_timers_and_short_lease(void **state)
{
	struct fk_env *e = *state;
	size_t n;
	struct sim_msg d = poll_at(e, 1000, &n);
	struct sim_reply o = sim_default(NET_DHCP_OFFER, &d);
	assert_int_equal(reply(e, &o), 0);
	struct sim_msg q = sim_parse(&e->port.sent[1]);
	struct sim_reply a = sim_default(NET_DHCP_ACK, &q);
	a.lease = 10; /* raised to dhcp_lease_min_s = 60 */
	a.t1 = 50;    /* T1 > T2: both ignored */
	a.t2 = 40;
	assert_int_equal(reply(e, &a), 0);
	(void)poll_at(e, 1000 + 29999, &n);
	assert_int_equal(n, 0);
	(void)poll_at(e, 1000 + 30000, &n); /* T1 = 60 / 2 */
	assert_int_equal(n, 1);
	(void)poll_at(e, 1000 + 60000, &n);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), 0);
}

static void test_zero_lease_floor_in_config(void **state)
{
	struct fk_env *e = *state;
	struct net_stack s2;
	e->cfg.dhcp_lease_min_s = 0; /* a 0 s lease would let a server spin us */
	assert_int_equal(net_stack_init(&s2, &e->cfg, &fk_ops, &e->port, NULL, NULL), -E_INVAL);
}

static void test_infinite_lease(void **state)
{
	struct fk_env *e = *state;
	size_t n;
	(void)acquire(e, 0xffffffffu);
	(void)poll_at(e, 1000ull * 3600 * 24 * 365 * 100, &n);
	assert_int_equal(n, 0);
	assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), SIM_OFFER_IP);
}

static void on_udp_ignore(void *ctx, uint32_t src, uint16_t sport, uint32_t dst,
			  const uint8_t *data, size_t len)
{
	(void)ctx, (void)src, (void)sport, (void)dst, (void)data, (void)len;
}

static void test_unicast_offer_accepted(void **state)
{
	struct fk_env *e = *state;
	size_t n;
	struct sim_msg d = poll_at(e, 1000, &n);
	struct sim_reply o = sim_default(NET_DHCP_OFFER, &d);
	o.ip_dst = SIM_OFFER_IP;
	o.eth_dst = fk_our_mac;
	assert_int_equal(reply(e, &o), 0);
	assert_int_equal(e->port.n_sent, 2);
	/* Other unicast UDP before we have an address is dropped. */
	uint8_t f[128];
	size_t len = fk_udp_frame(f, fk_our_mac, fk_peer_mac, FK_PEER_IP, SIM_OFFER_IP, 1000, 514,
				  "x", 1);
	assert_true(net_stack_input(&e->stack, f, len) < 0);
	assert_int_equal(CNT(e, udp_no_port), 1);
	/* And unicast TCP/ICMP is not even accepted by IPv4. */
	len = fk_ping_frame(f, fk_our_mac, FK_PEER_IP, SIM_OFFER_IP, 4);
	assert_true(net_stack_input(&e->stack, f, len) < 0);
	assert_int_equal(CNT(e, ip_dst), 1);
	/* Sending needs an address. */
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 2, "x", 1), -E_NOENT);
	/* The DHCP client owns port 68. */
	assert_int_equal(net_udp_bind(&e->stack, 68, on_udp_ignore, NULL), -E_INVAL);
	assert_int_equal(net_udp_bind(&e->stack, 69, on_udp_ignore, NULL), 0);
}

static void test_next_timer_drives_the_lease(void **state)
{
	struct fk_env *e = *state;
	size_t n, n_unicast = 0, n_bcast = 0, steps = 0;
	assert_int_equal(net_stack_next_timer_ms(&e->stack), 1000); /* DISCOVER due now */
	(void)acquire(e, 3600);
	/* Poll only when asked to; nobody answers, so the lease runs its course. */
	while (net_stack_addr(&e->stack, NULL, NULL) && steps++ < 100) {
		uint64_t t = net_stack_next_timer_ms(&e->stack);
		assert_true(t >= e->port.now || t == 0);
		struct sim_msg m = poll_at(e, t > e->port.now ? t : e->port.now, &n);
		if (n && m.ip_dst == SIM_SERVER_IP)
			n_unicast++;
		else if (n)
			n_bcast++;
	}
	assert_true(steps < 100);
	assert_int_equal(CNT(e, dhcp_expired), 1);
	assert_int_equal(e->port.now, 1000 + 3600 * 1000); /* lost exactly at expiry */
	assert_true(n_unicast >= 2); /* T1 and a retransmission */
	assert_true(n_bcast >= 2);   /* T2 and a retransmission */
	assert_int_equal(net_stack_next_timer_ms(&e->stack), e->port.now); /* DISCOVER */
}

/* ---- rejections ---- */
enum { IN_SELECTING, IN_REQUESTING };

static const uint8_t opt_no_end[] = { 53, 1, 2, 54, 4, 10, 0, 0, 1 };
static const uint8_t opt_overrun[] = { 53, 1, 2, 54, 4, 10, 0, 0, 1, 12, 200, 'a', 255 };
static const uint8_t opt_dup_type[] = { 53, 1, 2, 53, 1, 2, 54, 4, 10, 0, 0, 1, 255 };
static const uint8_t opt_server_len[] = { 53, 1, 2, 54, 3, 10, 0, 0, 255 };
static const uint8_t opt_type_len[] = { 53, 2, 2, 2, 54, 4, 10, 0, 0, 1, 255 };
static const uint8_t opt_no_type[] = { 54, 4, 10, 0, 0, 1, 255 };
static const uint8_t opt_type_99[] = { 53, 1, 99, 54, 4, 10, 0, 0, 1, 255 };
static const uint8_t opt_no_server[] = { 53, 1, 2, 255 };
static const uint8_t opt_server_bcast[] = { 53, 1, 2, 54, 4, 255, 255, 255, 255, 255 };
static const uint8_t opt_router_len[] = { 53, 1, 5, 54, 4, 10, 0, 0, 1, 3, 5, 10, 0, 0, 1, 0, 255 };
static const uint8_t opt_len_at_end[] = { 53, 1, 2, 54, 4, 10, 0, 0, 1, 12 };

static const uint8_t other_mac[6] = { 0x02, 0, 0, 0, 0, 0x42 };

static void test_rejections(void **state)
{
	struct fk_env *e = *state;
	struct {
		const char *what;
		int phase;
		uint8_t type;
		int tweak;
		const uint8_t *raw;
		size_t raw_len;
		size_t counter;
	} cases[] = {
#define RAW(a) a, sizeof a
		{ "wrong xid", IN_SELECTING, 2, 1, NULL, 0, offsetof(struct net_counters, dhcp_xid) },
		{ "other chaddr", IN_SELECTING, 2, 2, NULL, 0, offsetof(struct net_counters, dhcp_xid) },
		{ "op request", IN_SELECTING, 2, 3, NULL, 0, offsetof(struct net_counters, dhcp_format) },
		{ "bad magic", IN_SELECTING, 2, 4, NULL, 0, offsetof(struct net_counters, dhcp_format) },
		{ "truncated", IN_SELECTING, 2, 5, NULL, 0, offsetof(struct net_counters, dhcp_short) },
		{ "from port 68", IN_SELECTING, 2, 6, NULL, 0, offsetof(struct net_counters, udp_no_port) },
		{ "no end option", IN_SELECTING, 2, 0, RAW(opt_no_end), offsetof(struct net_counters, dhcp_options) },
		{ "option overruns", IN_SELECTING, 2, 0, RAW(opt_overrun), offsetof(struct net_counters, dhcp_options) },
		{ "length byte missing", IN_SELECTING, 2, 0, RAW(opt_len_at_end), offsetof(struct net_counters, dhcp_options) },
		{ "duplicate type", IN_SELECTING, 2, 0, RAW(opt_dup_type), offsetof(struct net_counters, dhcp_options) },
		{ "server id length", IN_SELECTING, 2, 0, RAW(opt_server_len), offsetof(struct net_counters, dhcp_options) },
		{ "type length", IN_SELECTING, 2, 0, RAW(opt_type_len), offsetof(struct net_counters, dhcp_options) },
		{ "no type", IN_SELECTING, 2, 0, RAW(opt_no_type), offsetof(struct net_counters, dhcp_type) },
		{ "type 99", IN_SELECTING, 2, 0, RAW(opt_type_99), offsetof(struct net_counters, dhcp_type) },
		{ "no server id", IN_SELECTING, 2, 0, RAW(opt_no_server), offsetof(struct net_counters, dhcp_server) },
		{ "broadcast server id", IN_SELECTING, 2, 0, RAW(opt_server_bcast), offsetof(struct net_counters, dhcp_server) },
		{ "offer of 0.0.0.0", IN_SELECTING, 2, 7, NULL, 0, offsetof(struct net_counters, dhcp_bad_addr) },
		{ "offer of multicast", IN_SELECTING, 2, 8, NULL, 0, offsetof(struct net_counters, dhcp_bad_addr) },
		{ "ack while selecting", IN_SELECTING, 5, 0, NULL, 0, offsetof(struct net_counters, dhcp_unexpected) },
		{ "ack from another server", IN_REQUESTING, 5, 9, NULL, 0, offsetof(struct net_counters, dhcp_server) },
		{ "ack for another address", IN_REQUESTING, 5, 8, NULL, 0, offsetof(struct net_counters, dhcp_bad_addr) },
		{ "ack without lease", IN_REQUESTING, 5, 10, NULL, 0, offsetof(struct net_counters, dhcp_options) },
		{ "ack without mask", IN_REQUESTING, 5, 11, NULL, 0, offsetof(struct net_counters, dhcp_options) },
		{ "ack non-contiguous mask", IN_REQUESTING, 5, 12, NULL, 0, offsetof(struct net_counters, dhcp_bad_addr) },
		{ "ack /31 mask", IN_REQUESTING, 5, 13, NULL, 0, offsetof(struct net_counters, dhcp_bad_addr) },
		{ "ack router off subnet", IN_REQUESTING, 5, 14, NULL, 0, offsetof(struct net_counters, dhcp_bad_addr) },
		{ "ack router is us", IN_REQUESTING, 5, 15, NULL, 0, offsetof(struct net_counters, dhcp_bad_addr) },
		{ "ack address is subnet broadcast", IN_REQUESTING, 5, 16, NULL, 0, offsetof(struct net_counters, dhcp_bad_addr) },
		{ "ack router list length", IN_REQUESTING, 5, 0, RAW(opt_router_len), offsetof(struct net_counters, dhcp_options) },
		{ "offer while requesting", IN_REQUESTING, 2, 0, NULL, 0, offsetof(struct net_counters, dhcp_unexpected) },
#undef RAW
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t n;
		fk_port_reset(&e->port);
		assert_int_equal(net_stack_init(&e->stack, &e->cfg, &fk_ops, &e->port, &upper, NULL), 0);
		struct sim_msg m = poll_at(e, 1000, &n);
		if (cases[i].phase == IN_REQUESTING) {
			struct sim_reply o = sim_default(NET_DHCP_OFFER, &m);
			if (cases[i].tweak == 16)
				o.yiaddr = FK_IP(10, 0, 0, 63);
			assert_int_equal(reply(e, &o), 0);
			m = sim_parse(&e->port.sent[1]);
		}
		struct sim_reply r = sim_default(cases[i].type, &m);
		uint8_t f[700];
		r.raw_opts = cases[i].raw;
		r.raw_len = cases[i].raw_len;
		switch (cases[i].tweak) {
		case 1: r.xid ^= 1; break;
		case 2: r.chaddr = other_mac; break;
		case 3: r.op = 1; break;
		case 6: r.sport = 68; break;
		case 7: r.yiaddr = 0; break;
		case 8: r.yiaddr = FK_IP(224, 0, 0, 9); break;
		case 9: r.server = FK_IP(10, 0, 0, 7); break;
		case 10: r.lease = 0; break;
		case 11: r.mask = 0; break;
		case 12: r.mask = 0xffff00f0; break;
		case 13: r.mask = 0xfffffffe; break;
		case 14: r.router = FK_IP(10, 0, 1, 1); break;
		case 15: r.router = SIM_OFFER_IP; break;
		case 16: r.mask = 0xffffffc0; r.yiaddr = FK_IP(10, 0, 0, 63); break;
		default: break;
		}
		size_t len = sim_build(f, &r);
		if (cases[i].tweak == 4)
			f[14 + 20 + 8 + 236] ^= 1, st_be16(f + 14 + 20 + 6, 0);
		if (cases[i].tweak == 5) {
			/* Cut the BOOTP message at 200 bytes, fixing the UDP/IP lengths. */
			len = 14 + 20 + 8 + 200;
			st_be16(f + 14 + 2, 20 + 8 + 200);
			fk_ipv4_fix(f + 14);
			st_be16(f + 14 + 20 + 4, 8 + 200);
			st_be16(f + 14 + 20 + 6, 0);
		}
		size_t sent = e->port.n_sent;
		uint64_t before = CNT_AT(e, cases[i].counter);
		assert_true(net_stack_input(&e->stack, f, len) < 0);
		if (CNT_AT(e, cases[i].counter) != before + 1)
			fail_msg("case %s: counter not incremented", cases[i].what);
		assert_int_equal(e->port.n_sent, sent);
		assert_int_equal(net_stack_addr(&e->stack, NULL, NULL), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_full_exchange, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renew_rebind_expire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nak_while_requesting_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nak_while_renewing_drops_address, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discover_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_unanswered_starts_over, setup, teardown),
		cmocka_unit_test_setup_teardown(test_server_timers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_misordered_timers_and_short_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_lease_floor_in_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_infinite_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unicast_offer_accepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_next_timer_drives_the_lease, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejections, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
