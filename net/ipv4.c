/* SPDX-License-Identifier: MIT
 *
 * Strict IPv4 (RFC 791) for a host that is never a router: receive accepts only a
 * 20-byte header (options are dropped and counted), a correct checksum and total
 * length, no fragments, a unicast source that is not ours, and a destination that is
 * our address or broadcast; send builds the header with the configured TTL and DF set
 * (we never fragment) and routes on-link or through the gateway. Also the adapter that
 * lets TCP send without knowing IPv4. Must never forward, reassemble or answer
 * anything sent to a broadcast address over TCP.
 */
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "net/csum.h"
#include "net/net_int.h"

static bool ip_is_our_bcast(const struct net_stack *s, uint32_t ip)
{
	return ip == NET_IPV4_BROADCAST ||
	       (s->ip && (ip & s->mask) == (s->ip & s->mask) && (ip | s->mask) == NET_IPV4_BROADCAST);
}

static int tcp_deliver(struct net_stack *s, uint32_t src, uint32_t dst, bool bcast,
		       struct cur *c)
{
	size_t len = cur_left(c);
	const uint8_t *seg = cur_ptr(c, len);

	if (bcast) {
		s->cnt.tcp_broadcast++;
		return -E_INVAL;
	}
	if (len < NET_TCP_MIN_HDR || !seg) {
		s->cnt.tcp_short++;
		return -E_INVAL;
	}
	/* The TCP checksum is verified by TCP itself, which parses the segment anyway:
	 * checking it here too would read every byte twice. */
	if (!s->up->tcp_input) {
		s->cnt.tcp_no_handler++;
		return -E_NOENT;
	}
	s->cnt.tcp_delivered++;
	s->up->tcp_input(s->up_ctx, src, dst, seg, len);
	return 0;
}

int net_ipv4_input(struct net_stack *s, struct cur *c, bool l2_bcast)
{
	const uint8_t *hdr = cur_ptr(c, NET_IPV4_HDR_LEN);
	struct cur h;
	uint8_t ver_ihl, ttl, proto;
	uint16_t total, frag;
	uint32_t src, dst;
	bool bcast;

	if (!hdr) {
		s->cnt.ip_short++;
		return -E_INVAL;
	}
	h = cur_make(hdr, NET_IPV4_HDR_LEN);
	ver_ihl = cur_u8(&h);
	(void)cur_u8(&h); /* DSCP/ECN: ignored */
	total = cur_be16(&h);
	(void)cur_be16(&h); /* identification: only meaningful for fragments */
	frag = cur_be16(&h);
	ttl = cur_u8(&h);
	proto = cur_u8(&h);
	(void)cur_be16(&h); /* checksum: verified over the whole header below */
	src = cur_be32(&h);
	dst = cur_be32(&h);
	(void)ttl; /* a host accepts any TTL; 0 only matters to routers */
	if ((ver_ihl >> 4) != 4) {
		s->cnt.ip_version++;
		return -E_INVAL;
	}
	if ((ver_ihl & 0xf) != 5) {
		if ((ver_ihl & 0xf) > 5)
			s->cnt.ip_options++;
		else
			s->cnt.ip_len++;
		return -E_INVAL;
	}
	/* Bytes after total length are Ethernet padding. */
	if (total < NET_IPV4_HDR_LEN || (size_t)total - NET_IPV4_HDR_LEN > cur_left(c)) {
		s->cnt.ip_len++;
		return -E_INVAL;
	}
	if (net_csum_fold(net_csum_add(0, hdr, NET_IPV4_HDR_LEN)) != 0) {
		s->cnt.ip_csum++;
		return -E_INVAL;
	}
	/* MF, a fragment offset, or the reserved bit: we never reassemble. */
	if (frag & (uint16_t)~NET_IPV4_FLAG_DF) {
		s->cnt.ip_frag++;
		return -E_INVAL;
	}
	if (net_ip_is_bad_unicast(src) || src == s->ip || ip_is_our_bcast(s, src)) {
		s->cnt.ip_src++;
		return -E_INVAL;
	}
	bcast = ip_is_our_bcast(s, dst);
	if (!bcast) {
		/* Unicast must name our address and arrive unicast at layer 2. Without an
		 * address only a DHCP reply may be unicast (to the address being offered):
		 * udp.c delivers nothing but the DHCP client port then. */
		bool dhcp_wait = !s->ip && proto == NET_IP_PROTO_UDP &&
				 (s->dhcp.state == NET_DHCP_SELECTING ||
				  s->dhcp.state == NET_DHCP_REQUESTING);
		if (l2_bcast || (!dhcp_wait && (!s->ip || dst != s->ip))) {
			s->cnt.ip_dst++;
			return -E_INVAL;
		}
	}
	struct cur p = cur_sub(c, (size_t)total - NET_IPV4_HDR_LEN);
	switch (proto) {
	case NET_IP_PROTO_TCP:
		return tcp_deliver(s, src, dst, bcast, &p);
	case NET_IP_PROTO_UDP:
		return net_udp_input(s, src, dst, &p);
	case NET_IP_PROTO_ICMP:
		return net_icmp_input(s, src, dst, &p);
	default:
		s->cnt.ip_proto++;
		return -E_INVAL;
	}
}

int net_ipv4_output(struct net_stack *s, uint8_t *frame, uint32_t src, uint32_t dst,
		    uint8_t proto, size_t payload_len)
{
	size_t total = NET_IPV4_HDR_LEN + payload_len;
	uint32_t next_hop;

	if (total > s->cfg.mtu) {
		s->cnt.tx_too_big++;
		net_frame_put(s, frame);
		return -E_OVERFLOW;
	}
	if (dst == NET_IPV4_BROADCAST) {
		next_hop = dst;
	} else if (!s->ip) {
		s->cnt.ip_no_addr++;
		net_frame_put(s, frame);
		return -E_NOENT;
	} else if (net_ip_is_bad_unicast(dst)) {
		s->cnt.ip_no_route++;
		net_frame_put(s, frame);
		return -E_NOENT;
	} else if ((dst & s->mask) == (s->ip & s->mask)) {
		next_hop = dst;
	} else if (s->gw) {
		next_hop = s->gw;
	} else {
		s->cnt.ip_no_route++;
		net_frame_put(s, frame);
		return -E_NOENT;
	}
	uint8_t *h = frame + NET_ETH_HDR_LEN;
	struct wcur w = wcur_make(h, NET_IPV4_HDR_LEN);
	wcur_u8(&w, NET_IPV4_VER_IHL);
	wcur_u8(&w, 0);
	wcur_be16(&w, (uint16_t)total);
	wcur_be16(&w, s->ip_id++);
	wcur_be16(&w, NET_IPV4_FLAG_DF);
	wcur_u8(&w, s->cfg.ttl);
	wcur_u8(&w, proto);
	wcur_be16(&w, 0);
	wcur_be32(&w, src);
	wcur_be32(&w, dst);
	st_be16(h + NET_IPV4_OFF_CSUM, net_csum_fold(net_csum_add(0, h, NET_IPV4_HDR_LEN)));
	return net_arp_output(s, frame, NET_ETH_HDR_LEN + total, next_hop);
}

uint8_t *net_tcp_tx_begin(void *ctx, size_t *cap)
{
	struct net_stack *s = ctx;
	size_t got;
	uint8_t *f = net_frame_get(s, NET_HDR_ROOM + NET_TCP_MIN_ROOM, &got);
	if (!f)
		return NULL;
	*cap = got - NET_HDR_ROOM;
	return f + NET_HDR_ROOM;
}

void net_tcp_tx_abort(void *ctx, uint8_t *seg)
{
	net_frame_put(ctx, seg - NET_HDR_ROOM);
}

int net_tcp_tx_send(void *ctx, uint32_t src_ip, uint32_t dst_ip, uint8_t *seg, size_t len)
{
	struct net_stack *s = ctx;
	uint8_t *f = seg - NET_HDR_ROOM;

	if (!s->ip || src_ip != s->ip || ip_is_our_bcast(s, dst_ip)) {
		s->cnt.ip_no_addr++;
		net_frame_put(s, f);
		return -E_NOENT;
	}
	if (len < NET_TCP_MIN_HDR || len > (size_t)s->cfg.mtu - NET_IPV4_HDR_LEN) {
		s->cnt.tx_too_big++;
		net_frame_put(s, f);
		return -E_OVERFLOW;
	}
	return net_ipv4_output(s, f, src_ip, dst_ip, NET_IP_PROTO_TCP, len);
}
