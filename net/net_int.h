/* SPDX-License-Identifier: MIT
 *
 * Private to net/: the functions the protocol files call on each other. Never included
 * outside net/ (TCP in net/tcp/ uses net/net.h only).
 *
 * Design note — the stack object
 *  1. A received frame is borrowed only for net_stack_input(); nothing keeps a pointer
 *     into it after the call.
 *  2. A transmit frame from port->tx_get is owned by exactly one of: the function
 *     building it, a pending[] slot (waiting for ARP), or the port again (tx_send or
 *     tx_put). Every path out of a builder hands it on; pending slots are drained by
 *     ARP resolution or by giving up after arp_max_tries (tx_put).
 *  3. pending[i].frame != NULL  =>  an ARP entry in state PENDING or VALID exists for
 *     pending[i].next_hop (VALID only transiently inside net_arp_input).
 *  4. An ARP entry becomes VALID only (a) from a reply to a request we sent (state
 *     PENDING, or VALID with n_tries > 0 while refreshing), the reply being addressed
 *     to our IP and MAC, or (b) from a request whose target is our address. Nothing
 *     else writes a MAC into the cache.
 *  5. s->ip != 0 exactly when DHCP is OFF (static) or in BOUND/RENEWING/REBINDING.
 *
 * ARP entry states:
 *   FREE --resolve()--> PENDING --reply--> VALID --expiry--> FREE
 *   PENDING --arp_max_tries requests unanswered (poll)--> FREE (queued frames dropped)
 *   VALID --used in last quarter of lifetime--> VALID+refreshing --reply--> VALID
 *   FREE/VALID --request targeting us--> VALID
 * DHCP states (net/dhcp.c): see the design note there.
 */
#ifndef NET_NET_INT_H
#define NET_NET_INT_H

#include "lib/cursor.h"
#include "net/net.h"
#include "net/wire_net.h"

enum { NET_ARP_FREE = 0, NET_ARP_PENDING = 1, NET_ARP_VALID = 2 };

static const uint8_t net_mac_bcast[NET_MAC_LEN] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

static inline uint64_t net_now(struct net_stack *s)
{
	return s->port->now_ms(s->port_ctx);
}

/* stack.c */
/* Borrow a transmit frame with at least `need` bytes (`*cap` out: usable bytes, capped
 * at MTU + Ethernet). NULL (counted) when the port has none or it is too small. */
uint8_t *net_frame_get(struct net_stack *s, size_t need, size_t *cap /* out */);
void net_frame_put(struct net_stack *s, uint8_t *frame);
/* Fill the Ethernet header (our source), pad to the minimum and send. Takes frame. */
int net_eth_send(struct net_stack *s, uint8_t *frame, size_t len, const uint8_t *dst_mac,
		 uint16_t type);
/* Install an address (0 removes it); announces it with a gratuitous ARP at next poll. */
void net_addr_set(struct net_stack *s, uint32_t ip, uint32_t mask, uint32_t gw);
bool net_ip_is_bad_unicast(uint32_t ip);

/* arp.c */
int net_arp_input(struct net_stack *s, const uint8_t *eth_src, struct cur *c);
/* Send an IPv4 frame (headers from offset 14 on filled) towards next_hop: at once when
 * resolved, else queued behind a request. Takes frame. */
int net_arp_output(struct net_stack *s, uint8_t *frame, size_t len, uint32_t next_hop);
void net_arp_poll(struct net_stack *s, uint64_t now_ms);
void net_arp_announce(struct net_stack *s);
void net_arp_flush_pending(struct net_stack *s);
bool net_arp_check(const struct net_stack *s);
uint64_t net_arp_next_timer(const struct net_stack *s);

/* ipv4.c */
int net_ipv4_input(struct net_stack *s, struct cur *c, bool l2_bcast);
/* Frame holds `payload_len` bytes at NET_HDR_ROOM; fill IPv4 + route + send. Takes
 * frame. src 0 is allowed only for DHCP (broadcast destination). */
int net_ipv4_output(struct net_stack *s, uint8_t *frame, uint32_t src, uint32_t dst,
		    uint8_t proto, size_t payload_len);

/* icmp.c */
int net_icmp_input(struct net_stack *s, uint32_t src, uint32_t dst, struct cur *c);

/* udp.c */
int net_udp_input(struct net_stack *s, uint32_t src, uint32_t dst, struct cur *c);
/* Build a UDP datagram into a borrowed frame (payload already at NET_HDR_ROOM + 8) and
 * send it through IPv4. Takes frame. */
int net_udp_output(struct net_stack *s, uint8_t *frame, uint32_t src, uint16_t sport,
		   uint32_t dst, uint16_t dport, size_t len);

/* dhcp.c */
int net_dhcp_input(struct net_stack *s, struct cur *c);
void net_dhcp_start(struct net_stack *s, uint64_t now_ms);
void net_dhcp_poll(struct net_stack *s, uint64_t now_ms);
uint64_t net_dhcp_next_timer(const struct net_stack *s);

#endif
