/* SPDX-License-Identifier: MIT
 *
 * ksteer (kernel/ksteer.h): Ethernet -> IPv4 -> TCP ports, read through the cursor, to
 * choose the core of a received frame. Owns the decision and its counters only; never
 * writes or keeps a frame.
 */
#include "kernel/ksteer.h"
#include "lib/bytes.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

#define KSTEER_ETH_HDR 14u
#define KSTEER_ETH_IPV4 0x0800u
#define KSTEER_ETH_ARP 0x0806u
#define KSTEER_IP_TCP 6u
#define KSTEER_IP_MF 0x2000u
#define KSTEER_IP_OFFSET 0x1fffu

int ksteer_init(struct ksteer *s, const struct rss_steer *rss)
{
	if (!s || !rss)
		return -E_INVAL;
	memset(s, 0, sizeof *s);
	s->rss = rss;
	return 0;
}

void ksteer_set_addr(struct ksteer *s, uint32_t ip)
{
	s->ip = ip;
}

enum ksteer_class ksteer_classify(struct ksteer *s, const uint8_t *frame, size_t len, uint32_t *worker)
{
	struct cur c = cur_make(frame, len);
	*worker = 0;
	cur_skip(&c, 12); /* destination and source MAC: the receiving stack checks them */
	uint16_t type = cur_be16(&c);
	if (!cur_ok(&c)) {
		s->cnt.eth_short++;
		return KSTEER_LOCAL;
	}
	if (type == KSTEER_ETH_ARP) {
		s->cnt.arp++;
		return KSTEER_ARP;
	}
	if (type != KSTEER_ETH_IPV4) {
		s->cnt.not_ip++;
		return KSTEER_LOCAL;
	}
	uint8_t vhl = cur_u8(&c);
	cur_skip(&c, 1); /* DSCP/ECN */
	uint16_t total = cur_be16(&c);
	cur_skip(&c, 2); /* identification */
	uint16_t frag = cur_be16(&c);
	cur_skip(&c, 1); /* TTL */
	uint8_t proto = cur_u8(&c);
	cur_skip(&c, 2); /* header checksum: verified by the receiving stack */
	uint32_t src = cur_be32(&c), dst = cur_be32(&c);
	if (!cur_ok(&c)) {
		s->cnt.ip_short++;
		return KSTEER_LOCAL;
	}
	if ((vhl >> 4) != 4) {
		s->cnt.ip_version++;
		return KSTEER_LOCAL;
	}
	size_t hlen = (size_t)(vhl & 15u) * 4u;
	if (hlen < 20) {
		s->cnt.ip_hdr_len++;
		return KSTEER_LOCAL;
	}
	/* Ethernet padding may follow the packet; the packet may not exceed the frame. */
	if (total < hlen || total > len - KSTEER_ETH_HDR) {
		s->cnt.ip_total_len++;
		return KSTEER_LOCAL;
	}
	if (frag & (KSTEER_IP_MF | KSTEER_IP_OFFSET)) {
		s->cnt.ip_frag++;
		return KSTEER_LOCAL;
	}
	if (proto != KSTEER_IP_TCP) {
		s->cnt.not_tcp++;
		return KSTEER_LOCAL;
	}
	if (!s->ip) {
		s->cnt.no_addr++;
		return KSTEER_LOCAL;
	}
	if (dst != s->ip) {
		s->cnt.not_ours++;
		return KSTEER_LOCAL;
	}
	struct cur ip = cur_make(frame + KSTEER_ETH_HDR, total);
	cur_skip(&ip, hlen);
	uint16_t sport = cur_be16(&ip), dport = cur_be16(&ip);
	if (!cur_ok(&ip)) {
		s->cnt.tcp_short++;
		return KSTEER_LOCAL;
	}
	s->cnt.flows++;
	*worker = rss_steer_flow(s->rss, src, dst, sport, dport);
	return KSTEER_FLOW;
}

void ksteer_addr_encode(uint8_t out[KSTEER_ADDR_LEN], uint32_t ip, uint32_t mask, uint32_t gw)
{
	st_be32(out, ip);
	st_be32(out + 4, mask);
	st_be32(out + 8, gw);
}

int ksteer_addr_decode(const uint8_t *buf, size_t len, uint32_t *ip, uint32_t *mask, uint32_t *gw)
{
	struct cur c = cur_make(buf, len);
	uint32_t a = cur_be32(&c), m = cur_be32(&c), g = cur_be32(&c);
	if (!cur_done(&c))
		return -E_INVAL;
	*ip = a;
	*mask = m;
	*gw = g;
	return 0;
}
