/* SPDX-License-Identifier: MIT
 *
 * A simulated DHCP server for net/ tests and the DHCP fuzz target: reads the client's
 * messages out of captured frames and builds OFFER/ACK/NAK frames with chosen options.
 * Static functions; include after net_fake.h.
 */
#ifndef TESTS_UNIT_NET_DHCP_SIM_H
#define TESTS_UNIT_NET_DHCP_SIM_H

#include "net_fake.h"

#define SIM_SERVER_IP FK_GW_IP
#define SIM_OFFER_IP FK_IP(10, 0, 0, 50)

/* What the client said. */
struct sim_msg {
	bool ok;
	const uint8_t *eth_dst;
	uint32_t ip_src, ip_dst;
	uint32_t xid, ciaddr;
	uint16_t flags, secs;
	uint8_t type;
	uint32_t req_ip, server_id;
};

__attribute__((unused)) static struct sim_msg sim_parse(const struct fk_sent *r)
{
	struct sim_msg m;
	memset(&m, 0, sizeof m);
	if (!fk_sent_ip_ok(r))
		return m;
	const uint8_t *ip = fk_sent_ip(r), *u = ip + 20, *d = u + 8;
	size_t ulen = ld_be16(u + 4);
	if (ip[9] != 17 || ld_be16(u) != 68 || ld_be16(u + 2) != 67 || ulen < 8 + 240)
		return m;
	m.ip_src = ld_be32(ip + 12);
	m.ip_dst = ld_be32(ip + 16);
	if (net_csum_fold(net_csum_add(net_csum_pseudo(m.ip_src, m.ip_dst, 17, (uint16_t)ulen), u, ulen)) != 0)
		return m;
	m.eth_dst = r->data;
	if (d[0] != 1 || d[1] != 1 || d[2] != 6 || memcmp(d + 28, fk_our_mac, 6) != 0 ||
	    ld_be32(d + 236) != 0x63825363u)
		return m;
	m.xid = ld_be32(d + 4);
	m.secs = ld_be16(d + 8);
	m.flags = ld_be16(d + 10);
	m.ciaddr = ld_be32(d + 12);
	size_t i = 240, end = ulen - 8;
	while (i < end && d[i] != 255) {
		if (d[i] == 0) {
			i++;
			continue;
		}
		if (i + 2 > end || i + 2 + d[i + 1] > end)
			return m;
		uint8_t code = d[i], len = d[i + 1];
		const uint8_t *v = d + i + 2;
		if (code == 53 && len == 1)
			m.type = v[0];
		if (code == 50 && len == 4)
			m.req_ip = ld_be32(v);
		if (code == 54 && len == 4)
			m.server_id = ld_be32(v);
		i += 2u + len;
	}
	m.ok = i < end && ulen - 8 >= 300;
	return m;
}

/* What the server says. Zero fields are left out of the options. */
struct sim_reply {
	uint8_t type;
	uint32_t xid, yiaddr;
	uint32_t server, mask, router, lease, t1, t2;
	uint32_t ip_src, ip_dst;  /* default: server, broadcast */
	const uint8_t *eth_dst;   /* default: broadcast */
	const uint8_t *raw_opts;  /* replaces every option when set */
	size_t raw_len;
	uint8_t op;               /* default 2 */
	const uint8_t *chaddr;    /* default: ours */
	uint16_t sport;           /* default 67 */
};

__attribute__((unused)) static size_t sim_opt32(uint8_t *o, uint8_t code, uint32_t v)
{
	o[0] = code;
	o[1] = 4;
	st_be32(o + 2, v);
	return 6;
}

/* Build the reply frame into f (>= 600 bytes); returns its length. */
__attribute__((unused)) static size_t sim_build(uint8_t *f, const struct sim_reply *r)
{
	uint8_t b[600];
	memset(b, 0, sizeof b);
	b[0] = r->op ? r->op : 2;
	b[1] = 1;
	b[2] = 6;
	st_be32(b + 4, r->xid);
	st_be32(b + 16, r->yiaddr);
	memcpy(b + 28, r->chaddr ? r->chaddr : fk_our_mac, 6);
	st_be32(b + 236, 0x63825363u);
	size_t n = 240;
	if (r->raw_opts) {
		memcpy(b + n, r->raw_opts, r->raw_len);
		n += r->raw_len;
	} else {
		b[n++] = 53;
		b[n++] = 1;
		b[n++] = r->type;
		if (r->server)
			n += sim_opt32(b + n, 54, r->server);
		if (r->mask)
			n += sim_opt32(b + n, 1, r->mask);
		if (r->router)
			n += sim_opt32(b + n, 3, r->router);
		if (r->lease)
			n += sim_opt32(b + n, 51, r->lease);
		if (r->t1)
			n += sim_opt32(b + n, 58, r->t1);
		if (r->t2)
			n += sim_opt32(b + n, 59, r->t2);
		b[n++] = 255;
	}
	if (n < 300)
		n = 300;
	uint32_t src = r->ip_src ? r->ip_src : SIM_SERVER_IP;
	uint32_t dst = r->ip_dst ? r->ip_dst : 0xffffffffu;
	return fk_udp_frame(f, r->eth_dst ? r->eth_dst : fk_bcast_mac, fk_gw_mac, src, dst,
			    r->sport ? r->sport : 67, 68, b, n);
}

/* A well-formed reply to the client's message m. */
__attribute__((unused)) static struct sim_reply sim_default(uint8_t type, const struct sim_msg *m)
{
	struct sim_reply r;
	memset(&r, 0, sizeof r);
	r.type = type;
	r.xid = m->xid;
	r.yiaddr = type == 6 ? 0 : SIM_OFFER_IP;
	r.server = SIM_SERVER_IP;
	if (type != 6) {
		r.mask = FK_MASK;
		r.router = FK_GW_IP;
		r.lease = 3600;
	}
	return r;
}

#endif
