/* SPDX-License-Identifier: MIT
 *
 * DHCPv4 client (RFC 2131, options of RFC 2132): acquires, renews and rebinds one
 * lease for the stack's interface; the static configuration in net_config is the
 * alternative. Driven by net_dhcp_poll() (timers) and net_dhcp_input() (replies to
 * port 68). Must never accept a reply that is not for our transaction and hardware
 * address, never install an address, mask or router that fails validation, and never
 * keep an address past its lease.
 *
 * Design note
 *  1. xid changes with every new exchange (DISCOVER, start of RENEWING/REBINDING);
 *     replies with another xid are dropped.
 *  2. s->ip != 0 exactly in BOUND, RENEWING and REBINDING (and OFF: static).
 *  3. In BOUND/RENEWING/REBINDING: t1_ms <= t2_ms <= expire_ms.
 *  4. next_tx_ms is the only transmit trigger; every state but BOUND has one pending.
 *
 *   INIT --poll: send DISCOVER--> SELECTING --OFFER: send REQUEST--> REQUESTING
 *   SELECTING --poll: resend DISCOVER, backoff doubles up to dhcp_retry_max_ms
 *   REQUESTING --ACK (dhcp_bind)--> BOUND;  --NAK or dhcp_request_tries--> INIT (after
 *     a pause of about dhcp_retry_initial_ms)
 *   BOUND --T1 (poll)--> RENEWING (unicast REQUEST to the server)
 *   RENEWING --T2 (poll)--> REBINDING (broadcast REQUEST)
 *   RENEWING/REBINDING --ACK (dhcp_bind)--> BOUND; --NAK (paused) or expiry
 *     (dhcp_lose, at once)--> INIT
 */
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "net/net_int.h"

/* Everything a reply may tell us. */
struct dhcp_msg {
	uint32_t xid, yiaddr;
	uint8_t type;
	bool has_server, has_mask, has_router, has_lease, has_t1, has_t2;
	uint32_t server, mask, router, lease_s, t1_s, t2_s;
};

static uint64_t dhcp_jitter(struct net_stack *s, uint32_t ms)
{
	/* +-1/8 of the interval, so clients booted together spread out. */
	uint32_t span = ms / 4 + 1;
	return (uint64_t)ms - ms / 8 + s->port->random(s->port_ctx) % span;
}

static void dhcp_send(struct net_stack *s, uint8_t type, uint64_t now)
{
	struct net_dhcp *d = &s->dhcp;
	bool renewing = d->state == NET_DHCP_RENEWING;
	bool have_addr = renewing || d->state == NET_DHCP_REBINDING;
	size_t cap;
	uint8_t *f = net_frame_get(s, NET_HDR_ROOM + NET_UDP_HDR_LEN + NET_DHCP_MIN_MSG, &cap);
	if (!f)
		return;
	size_t room = cap - NET_HDR_ROOM - NET_UDP_HDR_LEN;
	struct wcur w = wcur_make(f + NET_HDR_ROOM + NET_UDP_HDR_LEN, room);
	uint64_t secs = (now - d->started_ms) / 1000;

	wcur_u8(&w, NET_DHCP_OP_REQUEST);
	wcur_u8(&w, NET_ARP_HTYPE_ETH);
	wcur_u8(&w, NET_MAC_LEN);
	wcur_u8(&w, 0);
	wcur_be32(&w, d->xid);
	wcur_be16(&w, (uint16_t)(secs > 0xffff ? 0xffff : secs));
	/* Without an address we cannot receive unicast before ARP knows us: ask for
	 * broadcast replies. */
	wcur_be16(&w, have_addr ? 0 : NET_DHCP_FLAG_BROADCAST);
	wcur_be32(&w, have_addr ? s->ip : 0); /* ciaddr */
	wcur_zero(&w, 12);                    /* yiaddr, siaddr, giaddr */
	wcur_bytes(&w, s->cfg.mac, NET_MAC_LEN);
	wcur_zero(&w, 16 - NET_MAC_LEN + 64 + 128); /* chaddr pad, sname, file */
	wcur_be32(&w, NET_DHCP_MAGIC);
	wcur_u8(&w, NET_DHCP_OPT_MSG_TYPE);
	wcur_u8(&w, 1);
	wcur_u8(&w, type);
	wcur_u8(&w, NET_DHCP_OPT_CLIENT_ID);
	wcur_u8(&w, 1 + NET_MAC_LEN);
	wcur_u8(&w, NET_ARP_HTYPE_ETH);
	wcur_bytes(&w, s->cfg.mac, NET_MAC_LEN);
	if (type == NET_DHCP_REQUEST && d->state == NET_DHCP_REQUESTING) {
		wcur_u8(&w, NET_DHCP_OPT_REQ_IP);
		wcur_u8(&w, 4);
		wcur_be32(&w, d->offered_ip);
		wcur_u8(&w, NET_DHCP_OPT_SERVER_ID);
		wcur_u8(&w, 4);
		wcur_be32(&w, d->server_id);
	}
	wcur_u8(&w, NET_DHCP_OPT_MAX_SIZE);
	wcur_u8(&w, 2);
	wcur_be16(&w, s->cfg.mtu);
	wcur_u8(&w, NET_DHCP_OPT_PARAMS);
	wcur_u8(&w, 5);
	wcur_u8(&w, NET_DHCP_OPT_MASK);
	wcur_u8(&w, NET_DHCP_OPT_ROUTER);
	wcur_u8(&w, NET_DHCP_OPT_LEASE);
	wcur_u8(&w, NET_DHCP_OPT_T1);
	wcur_u8(&w, NET_DHCP_OPT_T2);
	wcur_u8(&w, NET_DHCP_OPT_END);
	if (w.pos < NET_DHCP_MIN_MSG)
		wcur_zero(&w, NET_DHCP_MIN_MSG - w.pos);
	/* net_frame_get guaranteed room for the minimum message, which holds all above. */
	if (!wcur_ok(&w)) {
		net_frame_put(s, f);
		return;
	}
	s->cnt.dhcp_sent++;
	(void)net_udp_output(s, f, have_addr ? s->ip : 0, NET_DHCP_CLIENT_PORT,
			     renewing ? d->server_id : NET_IPV4_BROADCAST, NET_DHCP_SERVER_PORT,
			     w.pos);
}

static void dhcp_restart(struct net_stack *s, uint64_t now)
{
	struct net_dhcp *d = &s->dhcp;
	d->state = NET_DHCP_INIT;
	d->next_tx_ms = now;
	d->n_tries = 0;
	d->server_id = 0;
	d->offered_ip = 0;
}

static void dhcp_lose(struct net_stack *s, uint64_t now)
{
	net_addr_set(s, 0, 0, 0);
	dhcp_restart(s, now);
}

void net_dhcp_start(struct net_stack *s, uint64_t now_ms)
{
	memset(&s->dhcp, 0, sizeof s->dhcp);
	dhcp_restart(s, now_ms);
}

/* Start an exchange in the current state: fresh xid, first transmission now. */
static void dhcp_begin(struct net_stack *s, uint8_t state, uint64_t now)
{
	struct net_dhcp *d = &s->dhcp;
	d->state = state;
	d->xid = s->port->random(s->port_ctx);
	d->started_ms = now;
	d->n_tries = 0;
	d->backoff_ms = s->cfg.dhcp_retry_initial_ms;
}

/* RENEWING/REBINDING retry: half the time left to `deadline`, at least the floor. */
static void dhcp_renew_tx(struct net_stack *s, uint64_t deadline, uint64_t now)
{
	struct net_dhcp *d = &s->dhcp;
	uint64_t wait = deadline > now ? (deadline - now) / 2 : 0;
	if (wait < s->cfg.dhcp_renew_retry_min_ms)
		wait = s->cfg.dhcp_renew_retry_min_ms;
	d->n_tries++;
	d->next_tx_ms = now + wait;
	dhcp_send(s, NET_DHCP_REQUEST, now);
}

static void dhcp_retx(struct net_stack *s, uint8_t type, uint64_t now)
{
	struct net_dhcp *d = &s->dhcp;
	d->n_tries++;
	d->next_tx_ms = now + dhcp_jitter(s, d->backoff_ms);
	d->backoff_ms = d->backoff_ms >= s->cfg.dhcp_retry_max_ms / 2 ? s->cfg.dhcp_retry_max_ms
								       : d->backoff_ms * 2;
	dhcp_send(s, type, now);
}

void net_dhcp_poll(struct net_stack *s, uint64_t now)
{
	struct net_dhcp *d = &s->dhcp;

	switch (d->state) {
	case NET_DHCP_INIT:
		if (now >= d->next_tx_ms) {
			dhcp_begin(s, NET_DHCP_SELECTING, now);
			dhcp_retx(s, NET_DHCP_DISCOVER, now);
		}
		break;
	case NET_DHCP_SELECTING:
		if (now >= d->next_tx_ms)
			dhcp_retx(s, NET_DHCP_DISCOVER, now);
		break;
	case NET_DHCP_REQUESTING:
		if (now < d->next_tx_ms)
			break;
		if (d->n_tries >= s->cfg.dhcp_request_tries)
			dhcp_restart(s, now + dhcp_jitter(s, s->cfg.dhcp_retry_initial_ms));
		else
			dhcp_retx(s, NET_DHCP_REQUEST, now);
		break;
	case NET_DHCP_BOUND:
	case NET_DHCP_RENEWING:
	case NET_DHCP_REBINDING:
		if (now >= d->expire_ms) {
			s->cnt.dhcp_expired++;
			dhcp_lose(s, now);
		} else if (now >= d->t2_ms && d->state != NET_DHCP_REBINDING) {
			dhcp_begin(s, NET_DHCP_REBINDING, now);
			dhcp_renew_tx(s, d->expire_ms, now);
		} else if (now >= d->t1_ms && d->state == NET_DHCP_BOUND) {
			dhcp_begin(s, NET_DHCP_RENEWING, now);
			dhcp_renew_tx(s, d->t2_ms, now);
		} else if (d->state != NET_DHCP_BOUND && now >= d->next_tx_ms) {
			dhcp_renew_tx(s, d->state == NET_DHCP_RENEWING ? d->t2_ms : d->expire_ms,
				      now);
		}
		break;
	default:
		break;
	}
}

uint64_t net_dhcp_next_timer(const struct net_stack *s)
{
	const struct net_dhcp *d = &s->dhcp;
	switch (d->state) {
	case NET_DHCP_INIT:
	case NET_DHCP_SELECTING:
	case NET_DHCP_REQUESTING:
		return d->next_tx_ms;
	case NET_DHCP_BOUND:
		return d->t1_ms;
	case NET_DHCP_RENEWING:
		return MIN(d->next_tx_ms, d->t2_ms);
	case NET_DHCP_REBINDING:
		return MIN(d->next_tx_ms, d->expire_ms);
	default:
		return UINT64_MAX;
	}
}

static bool opt_u32(struct cur *body, bool *has, uint32_t *v)
{
	if (*has || cur_left(body) != 4)
		return false;
	*v = cur_be32(body);
	*has = true;
	return true;
}

/* Parse the fixed part and the options. 0 or -E_INVAL (counted). */
static int dhcp_parse(struct net_stack *s, struct cur *c, struct dhcp_msg *m)
{
	uint8_t chaddr[16];
	bool end = false, bad = false;

	uint8_t op = cur_u8(c), htype = cur_u8(c), hlen = cur_u8(c);
	(void)cur_u8(c); /* hops */
	m->xid = cur_be32(c);
	cur_skip(c, 2 + 2 + 4); /* secs, flags, ciaddr */
	m->yiaddr = cur_be32(c);
	cur_skip(c, 4 + 4); /* siaddr, giaddr: we use the server identifier option */
	cur_bytes(c, chaddr, sizeof chaddr);
	cur_skip(c, 64 + 128); /* sname, file: option overload is not honoured */
	uint32_t magic = cur_be32(c);
	if (!cur_ok(c)) {
		s->cnt.dhcp_short++;
		return -E_INVAL;
	}
	if (op != NET_DHCP_OP_REPLY || htype != NET_ARP_HTYPE_ETH || hlen != NET_MAC_LEN ||
	    magic != NET_DHCP_MAGIC) {
		s->cnt.dhcp_format++;
		return -E_INVAL;
	}
	if (m->xid != s->dhcp.xid || memcmp(chaddr, s->cfg.mac, NET_MAC_LEN) != 0) {
		s->cnt.dhcp_xid++;
		return -E_INVAL;
	}
	while (!end && !bad && cur_left(c)) {
		uint8_t code = cur_u8(c);
		if (code == NET_DHCP_OPT_PAD)
			continue;
		if (code == NET_DHCP_OPT_END) {
			end = true;
			break;
		}
		uint8_t len = cur_u8(c);
		struct cur body = cur_sub(c, len);
		if (!cur_ok(c)) {
			bad = true;
			break;
		}
		switch (code) {
		case NET_DHCP_OPT_MSG_TYPE:
			if (m->type || len != 1)
				bad = true;
			else
				m->type = cur_u8(&body);
			break;
		case NET_DHCP_OPT_SERVER_ID:
			bad = !opt_u32(&body, &m->has_server, &m->server);
			break;
		case NET_DHCP_OPT_MASK:
			bad = !opt_u32(&body, &m->has_mask, &m->mask);
			break;
		case NET_DHCP_OPT_ROUTER:
			/* A list: the first router is ours. */
			if (m->has_router || len < 4 || len % 4) {
				bad = true;
			} else {
				m->router = cur_be32(&body);
				m->has_router = true;
			}
			break;
		case NET_DHCP_OPT_LEASE:
			bad = !opt_u32(&body, &m->has_lease, &m->lease_s);
			break;
		case NET_DHCP_OPT_T1:
			bad = !opt_u32(&body, &m->has_t1, &m->t1_s);
			break;
		case NET_DHCP_OPT_T2:
			bad = !opt_u32(&body, &m->has_t2, &m->t2_s);
			break;
		default:
			break; /* not ours to interpret */
		}
	}
	if (bad || !end) {
		s->cnt.dhcp_options++;
		return -E_INVAL;
	}
	if (m->type < NET_DHCP_DISCOVER || m->type > NET_DHCP_RELEASE) {
		s->cnt.dhcp_type++;
		return -E_INVAL;
	}
	if (!m->has_server || net_ip_is_bad_unicast(m->server)) {
		s->cnt.dhcp_server++;
		return -E_INVAL;
	}
	return 0;
}

static bool mask_ok(uint32_t mask)
{
	uint32_t inv = ~mask;
	/* Contiguous, and leaves room for hosts: /1 .. /30. */
	return (inv & (inv + 1)) == 0 && inv >= 3 && mask != 0;
}

static int dhcp_bind(struct net_stack *s, const struct dhcp_msg *m)
{
	struct net_dhcp *d = &s->dhcp;
	uint32_t ip = m->yiaddr, gw = 0;

	if (!m->has_lease || !m->has_mask) {
		s->cnt.dhcp_options++;
		return -E_INVAL;
	}
	if (net_ip_is_bad_unicast(ip) || !mask_ok(m->mask) || (ip & ~m->mask) == 0 ||
	    (ip | m->mask) == NET_IPV4_BROADCAST) {
		s->cnt.dhcp_bad_addr++;
		return -E_INVAL;
	}
	if (m->has_router) {
		gw = m->router;
		if (gw == ip || (gw & m->mask) != (ip & m->mask) || net_ip_is_bad_unicast(gw) ||
		    (gw | m->mask) == NET_IPV4_BROADCAST || (gw & ~m->mask) == 0) {
			s->cnt.dhcp_bad_addr++;
			return -E_INVAL;
		}
	}
	if (m->lease_s == 0xffffffffu) {
		d->t1_ms = d->t2_ms = d->expire_ms = UINT64_MAX;
	} else {
		uint64_t lease = m->lease_s < s->cfg.dhcp_lease_min_s ? s->cfg.dhcp_lease_min_s
								      : m->lease_s;
		uint64_t t1 = lease / 2, t2 = lease * 7 / 8;
		/* Server timers are honoured only when ordered T1 < T2 < lease. */
		if (m->has_t1 && m->has_t2 && m->t1_s < m->t2_s && m->t2_s < lease) {
			t1 = m->t1_s;
			t2 = m->t2_s;
		} else if (m->has_t1 && !m->has_t2 && m->t1_s < t2) {
			t1 = m->t1_s;
		} else if (m->has_t2 && !m->has_t1 && t1 < m->t2_s && m->t2_s < lease) {
			t2 = m->t2_s;
		}
		/* The lease runs from when the exchange started (RFC 2131 4.4.1). */
		d->t1_ms = d->started_ms + t1 * 1000;
		d->t2_ms = d->started_ms + t2 * 1000;
		d->expire_ms = d->started_ms + lease * 1000;
	}
	d->state = NET_DHCP_BOUND;
	d->server_id = m->server;
	d->n_tries = 0;
	s->cnt.dhcp_bound++;
	net_addr_set(s, ip, m->mask, gw);
	return 0;
}

int net_dhcp_input(struct net_stack *s, struct cur *c)
{
	struct net_dhcp *d = &s->dhcp;
	struct dhcp_msg m;
	uint64_t now = net_now(s);

	memset(&m, 0, sizeof m);
	if (d->state == NET_DHCP_INIT || d->state == NET_DHCP_BOUND) {
		s->cnt.dhcp_unexpected++;
		return -E_INVAL;
	}
	int rc = dhcp_parse(s, c, &m);
	if (rc < 0)
		return rc;
	switch (d->state) {
	case NET_DHCP_SELECTING:
		if (m.type != NET_DHCP_OFFER)
			break;
		if (net_ip_is_bad_unicast(m.yiaddr)) {
			s->cnt.dhcp_bad_addr++;
			return -E_INVAL;
		}
		d->offered_ip = m.yiaddr;
		d->server_id = m.server;
		d->state = NET_DHCP_REQUESTING;
		d->n_tries = 0;
		d->backoff_ms = s->cfg.dhcp_retry_initial_ms;
		dhcp_retx(s, NET_DHCP_REQUEST, now);
		return 0;
	case NET_DHCP_REQUESTING:
	case NET_DHCP_RENEWING:
	case NET_DHCP_REBINDING:
		if (m.type != NET_DHCP_ACK && m.type != NET_DHCP_NAK)
			break;
		/* REBINDING takes any server; before that only the one we chose. */
		if (d->state != NET_DHCP_REBINDING && m.server != d->server_id) {
			s->cnt.dhcp_server++;
			return -E_INVAL;
		}
		if (m.type == NET_DHCP_NAK) {
			/* Start over after a pause, so a server that refuses everything cannot
			 * drive us into a tight DISCOVER/NAK loop (RFC 2131 3.1 step 5). */
			uint64_t later = now + dhcp_jitter(s, s->cfg.dhcp_retry_initial_ms);
			s->cnt.dhcp_naks++;
			if (d->state != NET_DHCP_REQUESTING)
				net_addr_set(s, 0, 0, 0);
			dhcp_restart(s, later);
			return 0;
		}
		if (d->state == NET_DHCP_REQUESTING && m.yiaddr != d->offered_ip) {
			s->cnt.dhcp_bad_addr++;
			return -E_INVAL;
		}
		return dhcp_bind(s, &m);
	default:
		break;
	}
	s->cnt.dhcp_unexpected++;
	return -E_INVAL;
}
