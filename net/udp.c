/* SPDX-License-Identifier: MIT
 *
 * UDP (RFC 768): datagrams to and from a small socket table owned by the caller (DHCP
 * client, syslog, statsd, later SNTP). Receive checks the length field against the IP
 * payload and the checksum (0 means "none" in IPv4 and is accepted); send always fills
 * the checksum. Must never deliver to a socket before the datagram is fully validated,
 * and without an address delivers nothing but DHCP replies.
 */
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "net/csum.h"
#include "net/net_int.h"

int net_udp_input(struct net_stack *s, uint32_t src, uint32_t dst, struct cur *c)
{
	size_t avail = cur_left(c);
	const uint8_t *dgram = cur_ptr(c, avail);
	struct cur h;
	uint16_t sport, dport, ulen, csum;

	if (avail < NET_UDP_HDR_LEN || !dgram) {
		s->cnt.udp_short++;
		return -E_INVAL;
	}
	h = cur_make(dgram, avail);
	sport = cur_be16(&h);
	dport = cur_be16(&h);
	ulen = cur_be16(&h);
	csum = cur_be16(&h);
	if (ulen < NET_UDP_HDR_LEN || ulen > avail) {
		s->cnt.udp_len++;
		return -E_INVAL;
	}
	if (csum != 0) {
		uint32_t sum = net_csum_pseudo(src, dst, NET_IP_PROTO_UDP, ulen);
		if (net_csum_fold(net_csum_add(sum, dgram, ulen)) != 0) {
			s->cnt.udp_csum++;
			return -E_INVAL;
		}
	}
	struct cur payload = cur_sub(&h, (size_t)ulen - NET_UDP_HDR_LEN);
	if (sport == 0) {
		s->cnt.udp_sport++; /* port 0 cannot be answered: hostile */
		return -E_INVAL;
	}
	if (dport == NET_DHCP_CLIENT_PORT && s->dhcp.state != NET_DHCP_OFF) {
		if (sport != NET_DHCP_SERVER_PORT) {
			s->cnt.udp_no_port++;
			return -E_INVAL;
		}
		s->cnt.udp_delivered++;
		return net_dhcp_input(s, &payload);
	}
	if (!s->ip) {
		s->cnt.udp_no_port++;
		return -E_INVAL;
	}
	for (size_t i = 0; i < s->cfg.n_udp; i++) {
		struct net_udp_sock *k = &s->cfg.udp[i];
		if (k->port && k->port == dport) {
			size_t n = cur_left(&payload);
			const uint8_t *data = cur_ptr(&payload, n);
			s->cnt.udp_delivered++;
			k->recv(k->ctx, src, sport, dst, n ? data : dgram + NET_UDP_HDR_LEN, n);
			return 0;
		}
	}
	s->cnt.udp_no_port++;
	return -E_NOENT;
}

int net_udp_output(struct net_stack *s, uint8_t *frame, uint32_t src, uint16_t sport,
		   uint32_t dst, uint16_t dport, size_t len)
{
	uint8_t *u = frame + NET_HDR_ROOM;
	size_t ulen = NET_UDP_HDR_LEN + len;

	if (ulen + NET_IPV4_HDR_LEN > s->cfg.mtu) {
		s->cnt.tx_too_big++;
		net_frame_put(s, frame);
		return -E_OVERFLOW;
	}
	st_be16(u, sport);
	st_be16(u + 2, dport);
	st_be16(u + 4, (uint16_t)ulen);
	st_be16(u + 6, 0);
	uint32_t sum = net_csum_pseudo(src, dst, NET_IP_PROTO_UDP, (uint16_t)ulen);
	uint16_t cs = net_csum_fold(net_csum_add(sum, u, ulen));
	st_be16(u + 6, cs ? cs : 0xffff); /* 0 means "no checksum" on the wire */
	return net_ipv4_output(s, frame, src, dst, NET_IP_PROTO_UDP, ulen);
}

int net_udp_bind(struct net_stack *s, uint16_t port, net_udp_recv_fn recv, void *ctx)
{
	struct net_udp_sock *free_slot = NULL;

	if (!port || !recv || (port == NET_DHCP_CLIENT_PORT && s->dhcp.state != NET_DHCP_OFF))
		return -E_INVAL;
	for (size_t i = 0; i < s->cfg.n_udp; i++) {
		struct net_udp_sock *k = &s->cfg.udp[i];
		if (k->port == port)
			return -E_EXIST;
		if (!k->port && !free_slot)
			free_slot = k;
	}
	if (!free_slot)
		return -E_NOMEM;
	free_slot->port = port;
	free_slot->recv = recv;
	free_slot->ctx = ctx;
	return 0;
}

int net_udp_unbind(struct net_stack *s, uint16_t port)
{
	for (size_t i = 0; i < s->cfg.n_udp; i++) {
		struct net_udp_sock *k = &s->cfg.udp[i];
		if (port && k->port == port) {
			memset(k, 0, sizeof *k);
			return 0;
		}
	}
	return -E_NOENT;
}

int net_udp_send(struct net_stack *s, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port,
		 const void *data, size_t len)
{
	size_t cap;

	if (!s->ip) {
		s->cnt.ip_no_addr++;
		return -E_NOENT;
	}
	if (!src_port || !dst_port)
		return -E_INVAL;
	if (len > (size_t)s->cfg.mtu - NET_IPV4_HDR_LEN - NET_UDP_HDR_LEN) {
		s->cnt.tx_too_big++;
		return -E_OVERFLOW;
	}
	uint8_t *f = net_frame_get(s, NET_HDR_ROOM + NET_UDP_HDR_LEN + len, &cap);
	if (!f)
		return -E_AGAIN;
	if (len)
		memcpy(f + NET_HDR_ROOM + NET_UDP_HDR_LEN, data, len);
	return net_udp_output(s, f, s->ip, src_port, dst_ip, dst_port, len);
}
