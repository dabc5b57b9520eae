/* SPDX-License-Identifier: MIT
 * Fuzz target: the DHCP client's reply parser and state machine. Byte 0 picks the state
 * to reach first through a well-formed exchange with the simulated server (SELECTING,
 * REQUESTING, RENEWING, REBINDING) and whether to patch the transaction id and hardware
 * address into the message so the fuzzer gets past them; the rest is a BOOTP message
 * delivered from the server's port in a valid UDP/IPv4/Ethernet frame, followed by
 * polls far into the future. The stack must never hold an address it cannot justify
 * (a valid unicast with a contiguous mask) and never leak a frame. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "tests/unit/net/net_fake.h"
#include "tests/unit/net/dhcp_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct sim_msg last_msg(struct fk_env *e)
{
	struct sim_msg m;
	memset(&m, 0, sizeof m);
	for (size_t i = e->port.n_sent; i-- > 0;) {
		if (i >= FK_N_SENT)
			continue;
		m = sim_parse(&e->port.sent[i]);
		if (m.ok)
			break;
	}
	return m;
}

static void deliver(struct fk_env *e, const struct sim_reply *r)
{
	uint8_t f[700];
	size_t n = sim_build(f, r);
	(void)net_stack_input(&e->stack, f, n);
}

static void answer_arp(struct fk_env *e, size_t from)
{
	for (size_t i = from; i < e->port.n_sent && i < FK_N_SENT; i++) {
		const struct fk_sent *s = &e->port.sent[i];
		if (fk_sent_type(s) == NET_ETH_TYPE_ARP && ld_be32(s->data + 14 + 24) == SIM_SERVER_IP) {
			uint8_t f[64];
			size_t n = fk_arp_frame(f, fk_our_mac, fk_gw_mac, 2, fk_gw_mac, SIM_SERVER_IP,
						fk_our_mac, ld_be32(s->data + 14 + 14));
			(void)net_stack_input(&e->stack, f, n);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 1400)
		return 0;
	struct fk_env *e = fk_fuzz_env(true, NULL);
	uint8_t mode = data[0];
	net_stack_poll(&e->stack, e->port.now);
	struct sim_msg m = last_msg(e);
	if ((mode & 3) >= 1) { /* REQUESTING */
		struct sim_reply o = sim_default(NET_DHCP_OFFER, &m);
		deliver(e, &o);
		m = last_msg(e);
	}
	if ((mode & 3) >= 2) { /* BOUND, then RENEWING */
		struct sim_reply a = sim_default(NET_DHCP_ACK, &m);
		deliver(e, &a);
		size_t from = e->port.n_sent;
		e->port.now += 1800 * 1000;
		net_stack_poll(&e->stack, e->port.now);
		answer_arp(e, from);
		m = last_msg(e);
	}
	if ((mode & 3) == 3) { /* REBINDING */
		e->port.now += 1350 * 1000;
		net_stack_poll(&e->stack, e->port.now);
		m = last_msg(e);
	}
	uint8_t body[1400];
	size_t n = size - 1;
	memcpy(body, data + 1, n);
	if ((mode & 4) && n >= 34) {
		st_be32(body + 4, m.xid);
		memcpy(body + 28, fk_our_mac, 6);
	}
	if ((mode & 8) && n >= 240)
		st_be32(body + 236, NET_DHCP_MAGIC);
	uint8_t f[1500];
	uint32_t dst = (mode & 16) ? SIM_OFFER_IP : 0xffffffffu;
	size_t len = fk_udp_frame(f, (mode & 16) ? fk_our_mac : fk_bcast_mac, fk_gw_mac,
				  SIM_SERVER_IP, dst, 67, 68, body, n);
	(void)net_stack_input(&e->stack, f, len);
	fk_fuzz_check(e);
	uint32_t mask, gw, ip = net_stack_addr(&e->stack, &mask, &gw);
	if (ip) {
		uint32_t inv = ~mask;
		if ((inv & (inv + 1)) != 0 || (ip & inv) == 0 || (ip & inv) == inv ||
		    (gw && (gw & mask) != (ip & mask)))
			abort();
	}
	for (int i = 0; i < 8; i++) {
		e->port.now += (uint64_t)1 << (10 + 3 * i);
		net_stack_poll(&e->stack, e->port.now);
		fk_fuzz_check(e);
	}
	fk_fuzz_finish(e);
	return 0;
}
