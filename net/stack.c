/* SPDX-License-Identifier: MIT
 *
 * The stack object: initialisation, Ethernet receive and send, transmit-frame
 * bookkeeping, the address and the periodic poll. Ethernet is strict: only frames to
 * our MAC or broadcast, from a unicast source, carrying IPv4 or ARP, get past here.
 * Must never keep a pointer into a received frame or hold a transmit frame across calls
 * (invariants 1 and 2 of net/net_int.h).
 */
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "net/net_int.h"

static bool mac_is_group(const uint8_t *mac)
{
	return (mac[0] & 1) != 0;
}

static bool mask_is_contiguous(uint32_t mask)
{
	uint32_t inv = ~mask;
	return (inv & (inv + 1)) == 0;
}

bool net_ip_is_bad_unicast(uint32_t ip)
{
	uint8_t a = (uint8_t)(ip >> 24);
	return ip == 0 || a == 0 || a == 127 || a >= 224;
}

int net_stack_init(struct net_stack *s, const struct net_config *cfg,
		   const struct net_port_ops *port, void *port_ctx,
		   const struct net_upper_ops *up, void *up_ctx)
{
	static const struct net_upper_ops no_upper;

	if (!s || !cfg || !port || !port->tx_get || !port->tx_send || !port->tx_put ||
	    !port->now_ms || !port->random)
		return -E_INVAL;
	if (mac_is_group(cfg->mac) || !cfg->ttl || cfg->mtu < 576 || cfg->mtu > 9000)
		return -E_INVAL;
	if (!cfg->arp || !cfg->n_arp || cfg->n_arp > 65535 || !cfg->pending ||
	    !cfg->n_pending || !cfg->arp_expiry_ms || !cfg->arp_retry_ms ||
	    !cfg->arp_max_tries || cfg->arp_max_tries > 255)
		return -E_INVAL;
	if (cfg->n_udp && !cfg->udp)
		return -E_INVAL;
	if (cfg->use_dhcp) {
		if (!cfg->dhcp_retry_initial_ms ||
		    cfg->dhcp_retry_max_ms < cfg->dhcp_retry_initial_ms ||
		    !cfg->dhcp_request_tries || !cfg->dhcp_renew_retry_min_ms ||
		    !cfg->dhcp_lease_min_s)
			return -E_INVAL;
	} else {
		if (net_ip_is_bad_unicast(cfg->ip) || !mask_is_contiguous(cfg->mask) ||
		    cfg->mask == 0xffffffffu || (cfg->ip & ~cfg->mask) == 0 ||
		    (cfg->ip & ~cfg->mask) == ~cfg->mask)
			return -E_INVAL;
		if (cfg->gw && ((cfg->gw & cfg->mask) != (cfg->ip & cfg->mask) ||
				cfg->gw == cfg->ip || net_ip_is_bad_unicast(cfg->gw)))
			return -E_INVAL;
	}
	memset(s, 0, sizeof *s);
	s->cfg = *cfg;
	s->port = port;
	s->port_ctx = port_ctx;
	s->up = up ? up : &no_upper;
	s->up_ctx = up_ctx;
	memset(cfg->arp, 0, cfg->n_arp * sizeof cfg->arp[0]);
	memset(cfg->pending, 0, cfg->n_pending * sizeof cfg->pending[0]);
	if (cfg->n_udp)
		memset(cfg->udp, 0, cfg->n_udp * sizeof cfg->udp[0]);
	s->icmp_tokens_milli = (uint64_t)cfg->icmp_burst * 1000;
	s->icmp_refill_ms = port->now_ms(port_ctx);
	if (cfg->use_dhcp)
		net_dhcp_start(s, s->icmp_refill_ms);
	else
		net_addr_set(s, cfg->ip, cfg->mask, cfg->gw);
	return 0;
}

uint32_t net_stack_addr(const struct net_stack *s, uint32_t *mask, uint32_t *gw)
{
	if (mask)
		*mask = s->mask;
	if (gw)
		*gw = s->gw;
	return s->ip;
}

void net_addr_set(struct net_stack *s, uint32_t ip, uint32_t mask, uint32_t gw)
{
	bool changed = ip != s->ip || mask != s->mask || gw != s->gw;
	s->ip = ip;
	s->mask = ip ? mask : 0;
	s->gw = ip ? gw : 0;
	if (ip && changed)
		s->garp_due = true;
	if (!ip)
		net_arp_flush_pending(s);
	if (changed && s->up->addr_changed)
		s->up->addr_changed(s->up_ctx, s->ip, s->mask, s->gw);
}

uint8_t *net_frame_get(struct net_stack *s, size_t need, size_t *cap)
{
	size_t got = 0;
	uint8_t *f = s->port->tx_get(s->port_ctx, &got);
	if (!f) {
		s->cnt.tx_nobuf++;
		return NULL;
	}
	if (got > (size_t)s->cfg.mtu + NET_ETH_HDR_LEN)
		got = (size_t)s->cfg.mtu + NET_ETH_HDR_LEN;
	if (got < need || got < NET_ETH_MIN_FRAME) {
		s->port->tx_put(s->port_ctx, f);
		s->cnt.tx_too_big++;
		return NULL;
	}
	*cap = got;
	return f;
}

void net_frame_put(struct net_stack *s, uint8_t *frame)
{
	s->port->tx_put(s->port_ctx, frame);
}

int net_eth_send(struct net_stack *s, uint8_t *frame, size_t len, const uint8_t *dst_mac,
		 uint16_t type)
{
	memcpy(frame, dst_mac, NET_MAC_LEN);
	memcpy(frame + NET_MAC_LEN, s->cfg.mac, NET_MAC_LEN);
	st_be16(frame + 12, type);
	if (len < NET_ETH_MIN_FRAME) {
		/* net_frame_get guaranteed at least the minimum frame size. */
		memset(frame + len, 0, NET_ETH_MIN_FRAME - len);
		len = NET_ETH_MIN_FRAME;
	}
	int rc = s->port->tx_send(s->port_ctx, frame, len);
	if (rc < 0) {
		s->cnt.tx_err++;
		return rc;
	}
	s->cnt.tx_frames++;
	return 0;
}

int net_stack_input(struct net_stack *s, const uint8_t *frame, size_t len)
{
	struct cur c = cur_make(frame, len);
	uint8_t dst[NET_MAC_LEN], src[NET_MAC_LEN];
	uint16_t type;
	bool bcast;

	s->cnt.rx_frames++;
	cur_bytes(&c, dst, sizeof dst);
	cur_bytes(&c, src, sizeof src);
	type = cur_be16(&c);
	if (!cur_ok(&c)) {
		s->cnt.eth_short++;
		return -E_INVAL;
	}
	bcast = memcmp(dst, net_mac_bcast, NET_MAC_LEN) == 0;
	if (!bcast && memcmp(dst, s->cfg.mac, NET_MAC_LEN) != 0) {
		s->cnt.eth_dst++;
		return -E_INVAL;
	}
	if (mac_is_group(src) || memcmp(src, s->cfg.mac, NET_MAC_LEN) == 0 ||
	    (src[0] | src[1] | src[2] | src[3] | src[4] | src[5]) == 0) {
		s->cnt.eth_src++;
		return -E_INVAL;
	}
	switch (type) {
	case NET_ETH_TYPE_IPV4:
		return net_ipv4_input(s, &c, bcast);
	case NET_ETH_TYPE_ARP:
		return net_arp_input(s, src, &c);
	default:
		s->cnt.eth_type++;
		return -E_INVAL;
	}
}

void net_stack_poll(struct net_stack *s, uint64_t now_ms)
{
	net_arp_poll(s, now_ms);
	net_dhcp_poll(s, now_ms);
	if (s->garp_due && s->ip) {
		s->garp_due = false;
		net_arp_announce(s);
	}
}

uint64_t net_stack_next_timer_ms(const struct net_stack *s)
{
	if (s->garp_due && s->ip)
		return 0;
	return MIN(net_arp_next_timer(s), net_dhcp_next_timer(s));
}

bool net_stack_check_invariants(const struct net_stack *s)
{
	const struct net_dhcp *d = &s->dhcp;
	bool has_lease = d->state == NET_DHCP_BOUND || d->state == NET_DHCP_RENEWING ||
			 d->state == NET_DHCP_REBINDING;

	if (!net_arp_check(s))
		return false;
	/* Invariant 5 (and 2 of net/dhcp.c). */
	if ((s->ip != 0) != (d->state == NET_DHCP_OFF || has_lease))
		return false;
	if (s->ip && (net_ip_is_bad_unicast(s->ip) || !mask_is_contiguous(s->mask)))
		return false;
	/* Invariant 3 of net/dhcp.c. */
	if (has_lease && !(d->t1_ms <= d->t2_ms && d->t2_ms <= d->expire_ms))
		return false;
	return d->state <= NET_DHCP_REBINDING;
}
