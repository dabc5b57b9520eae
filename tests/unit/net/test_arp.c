/* SPDX-License-Identifier: MIT
 * Unit tests for net/arp.c: replies only for our address, learning only from replies to
 * our own requests or from requests that target us (poisoning attempts are counted and
 * change nothing), pending frames released on resolution or failure, expiry, refresh,
 * eviction, and a table of malformed packets. Every teardown checks no frame leaked. */
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

static const uint8_t zero_mac[6];
static const uint8_t evil_mac[6] = { 0x02, 0, 0, 0, 0, 0xee };

static int setup(void **state)
{
	struct fk_env *e = calloc(1, sizeof *e);
	if (!e)
		return -1;
	fk_port_reset(&e->port);
	fk_config(e, false);
	if (net_stack_init(&e->stack, &e->cfg, &fk_ops, &e->port, NULL, NULL) != 0)
		return -1;
	/* Let the gratuitous ARP go, then start from clean logs and counters. */
	net_stack_poll(&e->stack, e->port.now);
	if (e->port.n_sent != 1)
		return -1;
	e->port.n_sent = 0;
	memset(&e->stack.cnt, 0, sizeof e->stack.cnt);
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

static int feed(struct fk_env *e, const uint8_t *dmac, const uint8_t *smac, uint16_t op,
		const uint8_t *sha, uint32_t spa, const uint8_t *tha, uint32_t tpa)
{
	uint8_t f[64];
	size_t n = fk_arp_frame(f, dmac, smac, op, sha, spa, tha, tpa);
	return net_stack_input(&e->stack, f, n);
}

/* Send one datagram to `ip`; return the destination MAC it went out with, or NULL when
 * it was queued behind an ARP request (the request is then the last frame sent). */
static const uint8_t *send_to(struct fk_env *e, uint32_t ip)
{
	size_t sent = e->port.n_sent;
	assert_int_equal(net_udp_send(&e->stack, 1000, ip, 2000, "x", 1), 0);
	assert_int_equal(e->port.n_sent, sent + 1);
	const struct fk_sent *r = &e->port.sent[sent];
	if (fk_sent_type(r) == NET_ETH_TYPE_ARP) {
		assert_int_equal(ld_be16(r->data + 14 + 6), NET_ARP_OP_REQUEST);
		assert_int_equal(ld_be32(r->data + 14 + 24), ip);
		assert_memory_equal(r->data, fk_bcast_mac, 6);
		return NULL;
	}
	return r->data;
}

static void test_reply_to_request_for_us(void **state)
{
	struct fk_env *e = *state;
	assert_int_equal(feed(e, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac,
			      FK_PEER_IP, zero_mac, FK_OUR_IP), 0);
	assert_int_equal(e->port.n_sent, 1);
	const uint8_t *r = e->port.sent[0].data;
	assert_memory_equal(r, fk_peer_mac, 6); /* unicast back to the asker */
	assert_int_equal(ld_be16(r + 12), NET_ETH_TYPE_ARP);
	assert_int_equal(ld_be16(r + 14 + 6), NET_ARP_OP_REPLY);
	assert_memory_equal(r + 14 + 8, fk_our_mac, 6);
	assert_int_equal(ld_be32(r + 14 + 14), FK_OUR_IP);
	assert_memory_equal(r + 14 + 18, fk_peer_mac, 6);
	assert_int_equal(ld_be32(r + 14 + 24), FK_PEER_IP);
	assert_int_equal(CNT(e, arp_replies_sent), 1);
	/* The asker was learned: traffic to it goes straight out. */
	const uint8_t *d = send_to(e, FK_PEER_IP);
	assert_non_null(d);
	assert_memory_equal(d, fk_peer_mac, 6);
}

static void test_poisoning_attempts_change_nothing(void **state)
{
	struct fk_env *e = *state;
	/* Legitimately learn the gateway first. */
	assert_int_equal(feed(e, fk_bcast_mac, fk_gw_mac, NET_ARP_OP_REQUEST, fk_gw_mac, FK_GW_IP,
			      zero_mac, FK_OUR_IP), 0);
	struct {
		const char *what;
		const uint8_t *dmac, *smac;
		uint16_t op;
		const uint8_t *sha;
		uint32_t spa;
		const uint8_t *tha;
		uint32_t tpa;
		size_t counter;
	} cases[] = {
		{ "unsolicited reply for the gateway", fk_our_mac, evil_mac, NET_ARP_OP_REPLY,
		  evil_mac, FK_GW_IP, fk_our_mac, FK_OUR_IP,
		  offsetof(struct net_counters, arp_unsolicited) },
		{ "unsolicited reply for a new host", fk_our_mac, evil_mac, NET_ARP_OP_REPLY,
		  evil_mac, FK_PEER_IP, fk_our_mac, FK_OUR_IP,
		  offsetof(struct net_counters, arp_unsolicited) },
		{ "gratuitous request for the gateway", fk_bcast_mac, evil_mac, NET_ARP_OP_REQUEST,
		  evil_mac, FK_GW_IP, zero_mac, FK_GW_IP,
		  offsetof(struct net_counters, arp_not_for_us) },
		{ "gratuitous reply for the gateway", fk_bcast_mac, evil_mac, NET_ARP_OP_REPLY,
		  evil_mac, FK_GW_IP, fk_bcast_mac, FK_GW_IP,
		  offsetof(struct net_counters, arp_not_for_us) },
		{ "request for another host", fk_bcast_mac, evil_mac, NET_ARP_OP_REQUEST, evil_mac,
		  FK_GW_IP, zero_mac, FK_IP(10, 0, 0, 3),
		  offsetof(struct net_counters, arp_not_for_us) },
		{ "sender MAC differs from frame source", fk_bcast_mac, evil_mac, NET_ARP_OP_REQUEST,
		  fk_gw_mac, FK_PEER_IP, zero_mac, FK_OUR_IP,
		  offsetof(struct net_counters, arp_sender) },
		{ "sender off our subnet", fk_bcast_mac, evil_mac, NET_ARP_OP_REQUEST, evil_mac,
		  FK_IP(192, 0, 2, 1), zero_mac, FK_OUR_IP,
		  offsetof(struct net_counters, arp_sender) },
		{ "sender is subnet broadcast", fk_bcast_mac, evil_mac, NET_ARP_OP_REQUEST, evil_mac,
		  FK_IP(10, 0, 0, 255), zero_mac, FK_OUR_IP,
		  offsetof(struct net_counters, arp_sender) },
		{ "sender multicast", fk_bcast_mac, evil_mac, NET_ARP_OP_REQUEST, evil_mac,
		  FK_IP(224, 0, 0, 1), zero_mac, FK_OUR_IP, offsetof(struct net_counters, arp_sender) },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		size_t sent = e->port.n_sent;
		uint64_t before = CNT_AT(e, cases[i].counter);
		assert_true(feed(e, cases[i].dmac, cases[i].smac, cases[i].op, cases[i].sha,
				 cases[i].spa, cases[i].tha, cases[i].tpa) < 0);
		if (CNT_AT(e, cases[i].counter) != before + 1)
			fail_msg("case %s: counter not incremented", cases[i].what);
		assert_int_equal(e->port.n_sent, sent);
	}
	/* The gateway still maps to its real MAC; the peer is still unknown. */
	const uint8_t *d = send_to(e, FK_IP(192, 0, 2, 9));
	assert_non_null(d);
	assert_memory_equal(d, fk_gw_mac, 6);
	assert_null(send_to(e, FK_PEER_IP));
	assert_int_equal(CNT(e, arp_learned), 1);
}

static void test_reply_must_be_addressed_to_us(void **state)
{
	struct fk_env *e = *state;
	assert_null(send_to(e, FK_PEER_IP)); /* pending now */
	/* A reply for the pending address but to another MAC or IP is ignored. */
	assert_true(feed(e, fk_our_mac, fk_peer_mac, NET_ARP_OP_REPLY, fk_peer_mac, FK_PEER_IP,
			 evil_mac, FK_OUR_IP) < 0);
	assert_true(feed(e, fk_our_mac, fk_peer_mac, NET_ARP_OP_REPLY, fk_peer_mac, FK_PEER_IP,
			 fk_our_mac, FK_IP(10, 0, 0, 3)) < 0);
	assert_int_equal(CNT(e, arp_not_for_us), 2);
	assert_int_equal(e->port.n_out, 1); /* still queued */
	/* The real reply releases the queued frame to the right MAC. */
	size_t sent = e->port.n_sent;
	assert_int_equal(feed(e, fk_our_mac, fk_peer_mac, NET_ARP_OP_REPLY, fk_peer_mac,
			      FK_PEER_IP, fk_our_mac, FK_OUR_IP), 0);
	assert_int_equal(e->port.n_sent, sent + 1);
	assert_memory_equal(e->port.sent[sent].data, fk_peer_mac, 6);
	assert_true(fk_sent_ip_ok(&e->port.sent[sent]));
	assert_int_equal(e->port.n_out, 0);
	/* A second reply for the now-valid entry is unsolicited. */
	assert_true(feed(e, fk_our_mac, evil_mac, NET_ARP_OP_REPLY, evil_mac, FK_PEER_IP,
			 fk_our_mac, FK_OUR_IP) < 0);
	assert_int_equal(CNT(e, arp_unsolicited), 1);
	const uint8_t *d = send_to(e, FK_PEER_IP);
	assert_non_null(d);
	assert_memory_equal(d, fk_peer_mac, 6);
}

static void test_unresolved_frames_dropped_after_retries(void **state)
{
	struct fk_env *e = *state;
	assert_int_equal(net_stack_next_timer_ms(&e->stack), UINT64_MAX);
	assert_null(send_to(e, FK_PEER_IP));
	assert_int_equal(net_stack_next_timer_ms(&e->stack), e->port.now + 1000);
	assert_int_equal(net_udp_send(&e->stack, 1000, FK_PEER_IP, 2000, "y", 1), 0);
	assert_int_equal(e->port.n_out, 2); /* both queued, one request so far */
	assert_int_equal(CNT(e, arp_requests_sent), 1);
	net_stack_poll(&e->stack, e->port.now + 999);
	assert_int_equal(CNT(e, arp_requests_sent), 1);
	net_stack_poll(&e->stack, e->port.now + 1000);
	assert_int_equal(CNT(e, arp_requests_sent), 2);
	net_stack_poll(&e->stack, e->port.now + 2000);
	assert_int_equal(CNT(e, arp_requests_sent), 3);
	assert_int_equal(e->port.n_out, 2);
	net_stack_poll(&e->stack, e->port.now + 3000);
	assert_int_equal(CNT(e, arp_requests_sent), 3);
	assert_int_equal(CNT(e, arp_unresolved), 2);
	assert_int_equal(e->port.n_out, 0);
	/* A late reply is unsolicited now. */
	assert_true(feed(e, fk_our_mac, fk_peer_mac, NET_ARP_OP_REPLY, fk_peer_mac, FK_PEER_IP,
			 fk_our_mac, FK_OUR_IP) < 0);
	assert_int_equal(CNT(e, arp_unsolicited), 1);
}

static void test_pending_and_cache_bounds(void **state)
{
	struct fk_env *e = *state;
	/* 4 pending slots and 4 cache entries. */
	for (int i = 0; i < 4; i++)
		assert_null(send_to(e, FK_IP(10, 0, 0, 10 + i)));
	assert_int_equal(net_udp_send(&e->stack, 1, FK_IP(10, 0, 0, 10), 2, "x", 1), -E_AGAIN);
	assert_int_equal(CNT(e, arp_pending_full), 1);
	assert_int_equal(e->port.n_out, 4);
	/* Every cache entry is pending: a request to us is answered but not learned. */
	size_t sent = e->port.n_sent;
	assert_int_equal(feed(e, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac,
			      FK_PEER_IP, zero_mac, FK_OUR_IP), 0);
	assert_int_equal(e->port.n_sent, sent + 1);
	assert_int_equal(CNT(e, arp_cache_full), 1);
	/* Resolve one: its frame leaves, a slot frees. */
	assert_int_equal(feed(e, fk_our_mac, fk_peer_mac, NET_ARP_OP_REPLY, fk_peer_mac,
			      FK_IP(10, 0, 0, 11), fk_our_mac, FK_OUR_IP), 0);
	assert_int_equal(e->port.n_out, 3);
	/* A new destination with free pending slot but a cache of 3 pending + 1 valid:
	 * the valid entry is evicted (pending ones never are). */
	assert_null(send_to(e, FK_IP(10, 0, 0, 20)));
	assert_int_equal(e->port.n_out, 4);
	assert_true(feed(e, fk_our_mac, fk_peer_mac, NET_ARP_OP_REPLY, fk_peer_mac,
			 FK_IP(10, 0, 0, 11), fk_our_mac, FK_OUR_IP) < 0);
	assert_int_equal(CNT(e, arp_unsolicited), 1); /* evicted */
	/* Pending full again; a fifth address finds no slot. */
	assert_int_equal(net_udp_send(&e->stack, 1, FK_IP(10, 0, 0, 30), 2, "x", 1), -E_AGAIN);
	assert_int_equal(CNT(e, arp_pending_full), 2);
}

static void test_cache_full_of_pending_refuses_new_destination(void **state)
{
	struct fk_env *e = *state;
	e->cfg.n_arp = 2;
	assert_int_equal(net_stack_init(&e->stack, &e->cfg, &fk_ops, &e->port, NULL, NULL), 0);
	assert_null(send_to(e, FK_IP(10, 0, 0, 10)));
	assert_null(send_to(e, FK_IP(10, 0, 0, 11)));
	assert_int_equal(net_udp_send(&e->stack, 1, FK_IP(10, 0, 0, 12), 2, "x", 1), -E_AGAIN);
	assert_int_equal(CNT(e, arp_cache_full), 1);
	assert_int_equal(e->port.n_out, 2);
}

static void test_expiry_and_refresh(void **state)
{
	struct fk_env *e = *state;
	assert_int_equal(feed(e, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac,
			      FK_PEER_IP, zero_mac, FK_OUR_IP), 0);
	uint64_t t0 = e->port.now;
	/* Early in its life the entry is used without a refresh. */
	e->port.now = t0 + 30000;
	assert_non_null(send_to(e, FK_PEER_IP));
	assert_int_equal(CNT(e, arp_requests_sent), 0);
	/* In the last quarter a use sends a refresh request, and still goes out. */
	e->port.now = t0 + 50000;
	size_t sent = e->port.n_sent;
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 2, "x", 1), 0);
	assert_int_equal(e->port.n_sent, sent + 2);
	assert_int_equal(fk_sent_type(&e->port.sent[sent]), NET_ETH_TYPE_ARP);
	assert_memory_equal(e->port.sent[sent + 1].data, fk_peer_mac, 6);
	/* The refresh reply is accepted (solicited) and extends the lifetime. */
	e->port.now = t0 + 50010;
	assert_int_equal(feed(e, fk_our_mac, fk_peer_mac, NET_ARP_OP_REPLY, fk_peer_mac,
			      FK_PEER_IP, fk_our_mac, FK_OUR_IP), 0);
	net_stack_poll(&e->stack, t0 + 60000 + 1);
	assert_non_null(send_to(e, FK_PEER_IP));
	/* Without further use or reply it expires. */
	net_stack_poll(&e->stack, t0 + 50010 + 60000);
	assert_null(send_to(e, FK_PEER_IP));
}

static void test_expired_entry_unused_before_poll(void **state)
{
	struct fk_env *e = *state;
	assert_int_equal(feed(e, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac,
			      FK_PEER_IP, zero_mac, FK_OUR_IP), 0);
	e->port.now += 60000; /* expired, and no poll has reaped it yet */
	assert_null(send_to(e, FK_PEER_IP));
	assert_int_equal(e->port.n_out, 1);
}

static void test_refresh_unanswered_expires(void **state)
{
	struct fk_env *e = *state;
	assert_int_equal(feed(e, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac,
			      FK_PEER_IP, zero_mac, FK_OUR_IP), 0);
	uint64_t t0 = e->port.now;
	e->port.now = t0 + 50000;
	assert_int_equal(net_udp_send(&e->stack, 1, FK_PEER_IP, 2, "x", 1), 0);
	assert_int_equal(CNT(e, arp_requests_sent), 1);
	net_stack_poll(&e->stack, t0 + 51000);
	net_stack_poll(&e->stack, t0 + 52000);
	net_stack_poll(&e->stack, t0 + 53000);
	assert_int_equal(CNT(e, arp_requests_sent), 3); /* arp_max_tries */
	net_stack_poll(&e->stack, t0 + 60000);
	e->port.now = t0 + 60000;
	assert_null(send_to(e, FK_PEER_IP));
}

static void test_address_conflict_defended_rarely(void **state)
{
	struct fk_env *e = *state;
	uint8_t f[64];
	size_t n = fk_arp_frame(f, fk_bcast_mac, evil_mac, NET_ARP_OP_REQUEST, evil_mac, FK_OUR_IP,
				zero_mac, FK_OUR_IP);
	assert_true(net_stack_input(&e->stack, f, n) < 0);
	assert_int_equal(CNT(e, arp_conflict), 1);
	assert_int_equal(e->port.n_sent, 1); /* our announcement */
	const uint8_t *g = e->port.sent[0].data;
	assert_memory_equal(g, fk_bcast_mac, 6);
	assert_memory_equal(g + 14 + 8, fk_our_mac, 6);
	assert_int_equal(ld_be32(g + 14 + 14), FK_OUR_IP);
	e->port.now += 9999;
	assert_true(net_stack_input(&e->stack, f, n) < 0);
	assert_int_equal(e->port.n_sent, 1);
	e->port.now += 1;
	assert_true(net_stack_input(&e->stack, f, n) < 0);
	assert_int_equal(e->port.n_sent, 2);
	assert_int_equal(CNT(e, arp_conflict), 3);
	assert_int_equal(CNT(e, arp_learned), 0);
}

static void test_probe_is_defended_not_learned(void **state)
{
	struct fk_env *e = *state;
	assert_int_equal(feed(e, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac, 0,
			      zero_mac, FK_OUR_IP), 0);
	assert_int_equal(e->port.n_sent, 1);
	assert_int_equal(ld_be16(e->port.sent[0].data + 14 + 6), NET_ARP_OP_REPLY);
	assert_int_equal(CNT(e, arp_learned), 0);
}

static void test_malformed_rejections(void **state)
{
	struct fk_env *e = *state;
	struct {
		const char *what;
		size_t off;   /* byte in the ARP packet to change */
		uint8_t val;
		size_t len;   /* frame length */
		size_t counter;
	} cases[] = {
		{ "htype 6", 1, 6, 60, offsetof(struct net_counters, arp_format) },
		{ "ptype ipv6", 2, 0x86, 60, offsetof(struct net_counters, arp_format) },
		{ "hlen 8", 4, 8, 60, offsetof(struct net_counters, arp_format) },
		{ "plen 16", 5, 16, 60, offsetof(struct net_counters, arp_format) },
		{ "op 3", 7, 3, 60, offsetof(struct net_counters, arp_op) },
		{ "op 0", 7, 0, 60, offsetof(struct net_counters, arp_op) },
		{ "truncated", 0, 0, 14 + 27, offsetof(struct net_counters, arp_short) },
		{ "header only", 0, 0, 14, offsetof(struct net_counters, arp_short) },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		uint8_t f[64];
		fk_arp_frame(f, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac,
			     FK_PEER_IP, zero_mac, FK_OUR_IP);
		if (cases[i].off || cases[i].val)
			f[14 + cases[i].off] = cases[i].val;
		uint64_t before = CNT_AT(e, cases[i].counter);
		assert_true(net_stack_input(&e->stack, f, cases[i].len) < 0);
		if (CNT_AT(e, cases[i].counter) != before + 1)
			fail_msg("case %s: counter not incremented", cases[i].what);
	}
	assert_int_equal(e->port.n_sent, 0);
	assert_int_equal(CNT(e, arp_learned), 0);
	/* Exactly 28 bytes without padding is fine. */
	uint8_t f[64];
	fk_arp_frame(f, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac, FK_PEER_IP,
		     zero_mac, FK_OUR_IP);
	assert_int_equal(net_stack_input(&e->stack, f, 14 + 28), 0);
}

static void test_no_address_no_arp(void **state)
{
	struct fk_env *e = *state;
	fk_config(e, true);
	assert_int_equal(net_stack_init(&e->stack, &e->cfg, &fk_ops, &e->port, NULL, NULL), 0);
	assert_true(feed(e, fk_bcast_mac, fk_peer_mac, NET_ARP_OP_REQUEST, fk_peer_mac,
			 FK_PEER_IP, zero_mac, 0) < 0);
	assert_int_equal(CNT(e, arp_not_for_us), 1);
	assert_int_equal(e->port.n_sent, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reply_to_request_for_us, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poisoning_attempts_change_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reply_must_be_addressed_to_us, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unresolved_frames_dropped_after_retries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_and_cache_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_full_of_pending_refuses_new_destination, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry_and_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expired_entry_unused_before_poll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_unanswered_expires, setup, teardown),
		cmocka_unit_test_setup_teardown(test_address_conflict_defended_rarely, setup, teardown),
		cmocka_unit_test_setup_teardown(test_probe_is_defended_not_learned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_rejections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_address_no_arp, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
