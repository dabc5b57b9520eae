/* SPDX-License-Identifier: MIT
 *
 * ARP for IPv4 over Ethernet (RFC 826): a bounded cache with expiry in the caller's
 * array, frames waiting for resolution in the caller's pending array, replies only for
 * our own address, and a gratuitous announcement when an address is acquired. Must
 * never learn a MAC from anything but a reply to our own request or a request that
 * targets our address (invariant 4 of net/net_int.h): unsolicited replies and
 * gratuitous ARP from others are counted and ignored. Lookups scan the table linearly:
 * the cache holds next hops (the gateway and on-link peers), so it stays small.
 */
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "net/net_int.h"

static const uint8_t mac_zero[NET_MAC_LEN];

static struct net_arp_entry *arp_find(struct net_stack *s, uint32_t ip)
{
	for (size_t i = 0; i < s->cfg.n_arp; i++) {
		struct net_arp_entry *e = &s->cfg.arp[i];
		if (e->state != NET_ARP_FREE && e->ip == ip)
			return e;
	}
	return NULL;
}

/* A free entry, else the valid entry closest to expiry; never a pending one (frames
 * may wait on it). NULL when every entry is pending. */
static struct net_arp_entry *arp_alloc(struct net_stack *s)
{
	struct net_arp_entry *victim = NULL;
	for (size_t i = 0; i < s->cfg.n_arp; i++) {
		struct net_arp_entry *e = &s->cfg.arp[i];
		if (e->state == NET_ARP_FREE)
			return e;
		if (e->state == NET_ARP_VALID && (!victim || e->expires_ms < victim->expires_ms))
			victim = e;
	}
	return victim;
}

static int arp_send(struct net_stack *s, uint16_t op, const uint8_t *dst_mac,
		    const uint8_t *tha, uint32_t tpa)
{
	size_t cap;
	uint8_t *f = net_frame_get(s, NET_ETH_HDR_LEN + NET_ARP_LEN, &cap);
	if (!f)
		return -E_AGAIN;
	struct wcur w = wcur_make(f + NET_ETH_HDR_LEN, cap - NET_ETH_HDR_LEN);
	wcur_be16(&w, NET_ARP_HTYPE_ETH);
	wcur_be16(&w, NET_ETH_TYPE_IPV4);
	wcur_u8(&w, NET_MAC_LEN);
	wcur_u8(&w, 4);
	wcur_be16(&w, op);
	wcur_bytes(&w, s->cfg.mac, NET_MAC_LEN);
	wcur_be32(&w, s->ip);
	wcur_bytes(&w, tha, NET_MAC_LEN);
	wcur_be32(&w, tpa);
	if (op == NET_ARP_OP_REQUEST)
		s->cnt.arp_requests_sent++;
	else
		s->cnt.arp_replies_sent++;
	return net_eth_send(s, f, NET_ETH_HDR_LEN + w.pos, dst_mac, NET_ETH_TYPE_ARP);
}

static void arp_request(struct net_stack *s, uint32_t ip)
{
	(void)arp_send(s, NET_ARP_OP_REQUEST, net_mac_bcast, mac_zero, ip);
}

void net_arp_announce(struct net_stack *s)
{
	(void)arp_send(s, NET_ARP_OP_REQUEST, net_mac_bcast, mac_zero, s->ip);
}

/* Send (or drop) every frame queued for `ip`. */
static void arp_drain(struct net_stack *s, uint32_t ip, const uint8_t *mac)
{
	for (size_t i = 0; i < s->cfg.n_pending; i++) {
		struct net_pending_frame *p = &s->cfg.pending[i];
		if (!p->frame || p->next_hop != ip)
			continue;
		uint8_t *f = p->frame;
		p->frame = NULL;
		if (mac) {
			(void)net_eth_send(s, f, p->len, mac, NET_ETH_TYPE_IPV4);
		} else {
			s->cnt.arp_unresolved++;
			net_frame_put(s, f);
		}
	}
}

void net_arp_flush_pending(struct net_stack *s)
{
	for (size_t i = 0; i < s->cfg.n_pending; i++) {
		struct net_pending_frame *p = &s->cfg.pending[i];
		if (p->frame) {
			s->cnt.arp_unresolved++;
			net_frame_put(s, p->frame);
			p->frame = NULL;
		}
	}
	for (size_t i = 0; i < s->cfg.n_arp; i++)
		if (s->cfg.arp[i].state == NET_ARP_PENDING)
			s->cfg.arp[i].state = NET_ARP_FREE;
}

static void arp_set_valid(struct net_stack *s, struct net_arp_entry *e, uint32_t ip,
			  const uint8_t *mac)
{
	e->ip = ip;
	memcpy(e->mac, mac, NET_MAC_LEN);
	e->state = NET_ARP_VALID;
	e->n_tries = 0;
	e->expires_ms = net_now(s) + s->cfg.arp_expiry_ms;
	s->cnt.arp_learned++;
	arp_drain(s, ip, e->mac);
}

int net_arp_input(struct net_stack *s, const uint8_t *eth_src, struct cur *c)
{
	uint16_t htype = cur_be16(c), ptype = cur_be16(c);
	uint8_t hlen = cur_u8(c), plen = cur_u8(c);
	uint16_t op = cur_be16(c);
	uint8_t sha[NET_MAC_LEN], tha[NET_MAC_LEN];
	uint32_t spa, tpa;

	cur_bytes(c, sha, sizeof sha);
	spa = cur_be32(c);
	cur_bytes(c, tha, sizeof tha);
	tpa = cur_be32(c);
	/* Trailing bytes are Ethernet padding. */
	if (!cur_ok(c)) {
		s->cnt.arp_short++;
		return -E_INVAL;
	}
	if (htype != NET_ARP_HTYPE_ETH || ptype != NET_ETH_TYPE_IPV4 || hlen != NET_MAC_LEN ||
	    plen != 4) {
		s->cnt.arp_format++;
		return -E_INVAL;
	}
	if (op != NET_ARP_OP_REQUEST && op != NET_ARP_OP_REPLY) {
		s->cnt.arp_op++;
		return -E_INVAL;
	}
	/* The claimed hardware address must be the frame's unicast source. */
	if (memcmp(sha, eth_src, NET_MAC_LEN) != 0) {
		s->cnt.arp_sender++;
		return -E_INVAL;
	}
	if (!s->ip || tpa != s->ip) {
		s->cnt.arp_not_for_us++;
		return -E_INVAL;
	}
	if (spa == s->ip) {
		/* Someone else claims our address (a gratuitous ARP or a reply): restate
		 * ours so neighbours keep our MAC, but rarely, so two hosts with the same
		 * address do not flood the link (RFC 5227 2.4 (b)). */
		uint64_t now = net_now(s);
		s->cnt.arp_conflict++;
		if (s->cfg.arp_defend_ms &&
		    (!s->defended || now - s->defended_ms >= s->cfg.arp_defend_ms)) {
			s->defended = true;
			s->defended_ms = now;
			net_arp_announce(s);
		}
		return -E_INVAL;
	}
	if (spa == 0 && op == NET_ARP_OP_REQUEST) {
		/* RFC 5227 probe for our address: defend it, learn nothing. */
		return arp_send(s, NET_ARP_OP_REPLY, sha, sha, 0);
	}
	if (net_ip_is_bad_unicast(spa) || (spa & s->mask) != (s->ip & s->mask) ||
	    (spa | s->mask) == NET_IPV4_BROADCAST) {
		s->cnt.arp_sender++;
		return -E_INVAL;
	}
	struct net_arp_entry *e = arp_find(s, spa);
	if (op == NET_ARP_OP_REPLY) {
		if (memcmp(tha, s->cfg.mac, NET_MAC_LEN) != 0) {
			s->cnt.arp_not_for_us++;
			return -E_INVAL;
		}
		if (!e || (e->state == NET_ARP_VALID && e->n_tries == 0)) {
			s->cnt.arp_unsolicited++;
			return -E_INVAL;
		}
		arp_set_valid(s, e, spa, sha);
		return 0;
	}
	/* A request for our address: learn the asker (it is about to talk to us), reply. */
	if (!e)
		e = arp_alloc(s);
	if (e)
		arp_set_valid(s, e, spa, sha);
	else
		s->cnt.arp_cache_full++;
	return arp_send(s, NET_ARP_OP_REPLY, sha, sha, spa);
}

int net_arp_output(struct net_stack *s, uint8_t *frame, size_t len, uint32_t next_hop)
{
	uint64_t now = net_now(s);
	struct net_pending_frame *slot = NULL;

	if (next_hop == NET_IPV4_BROADCAST || (s->ip && (next_hop | s->mask) == NET_IPV4_BROADCAST &&
					       (next_hop & s->mask) == (s->ip & s->mask)))
		return net_eth_send(s, frame, len, net_mac_bcast, NET_ETH_TYPE_IPV4);

	struct net_arp_entry *e = arp_find(s, next_hop);
	if (e && e->state == NET_ARP_VALID && now >= e->expires_ms) {
		/* Expired but not yet reaped by the poll: resolve afresh. */
		e->state = NET_ARP_FREE;
		e = NULL;
	}
	if (e && e->state == NET_ARP_VALID) {
		/* Refresh ahead of expiry so a busy next hop never stalls. The reply is
		 * accepted because n_tries > 0 marks the request as ours. */
		if (e->n_tries == 0 && e->expires_ms - now < s->cfg.arp_expiry_ms / 4) {
			e->n_tries = 1;
			e->retry_ms = now + s->cfg.arp_retry_ms;
			arp_request(s, next_hop);
		}
		return net_eth_send(s, frame, len, e->mac, NET_ETH_TYPE_IPV4);
	}
	for (size_t i = 0; i < s->cfg.n_pending; i++) {
		if (!s->cfg.pending[i].frame) {
			slot = &s->cfg.pending[i];
			break;
		}
	}
	if (!slot) {
		s->cnt.arp_pending_full++;
		net_frame_put(s, frame);
		return -E_AGAIN;
	}
	if (!e) {
		e = arp_alloc(s);
		if (!e) {
			s->cnt.arp_cache_full++;
			net_frame_put(s, frame);
			return -E_AGAIN;
		}
		e->ip = next_hop;
		e->state = NET_ARP_PENDING;
		e->n_tries = 1;
		e->retry_ms = now + s->cfg.arp_retry_ms;
		memset(e->mac, 0, NET_MAC_LEN);
		arp_request(s, next_hop);
	}
	slot->frame = frame;
	slot->len = len;
	slot->next_hop = next_hop;
	return 0;
}

void net_arp_poll(struct net_stack *s, uint64_t now_ms)
{
	for (size_t i = 0; i < s->cfg.n_arp; i++) {
		struct net_arp_entry *e = &s->cfg.arp[i];
		if (e->state == NET_ARP_VALID) {
			if (now_ms >= e->expires_ms) {
				e->state = NET_ARP_FREE;
			} else if (e->n_tries && now_ms >= e->retry_ms &&
				   e->n_tries < s->cfg.arp_max_tries) {
				e->n_tries++;
				e->retry_ms = now_ms + s->cfg.arp_retry_ms;
				arp_request(s, e->ip);
			}
		} else if (e->state == NET_ARP_PENDING && now_ms >= e->retry_ms) {
			if (e->n_tries >= s->cfg.arp_max_tries) {
				e->state = NET_ARP_FREE;
				arp_drain(s, e->ip, NULL);
			} else {
				e->n_tries++;
				e->retry_ms = now_ms + s->cfg.arp_retry_ms;
				arp_request(s, e->ip);
			}
		}
	}
}

bool net_arp_check(const struct net_stack *s)
{
	/* Invariant 3: every queued frame waits on a pending entry for its next hop. */
	for (size_t i = 0; i < s->cfg.n_pending; i++) {
		const struct net_pending_frame *p = &s->cfg.pending[i];
		bool found = false;
		if (!p->frame)
			continue;
		for (size_t j = 0; j < s->cfg.n_arp; j++)
			if (s->cfg.arp[j].state == NET_ARP_PENDING && s->cfg.arp[j].ip == p->next_hop)
				found = true;
		if (!found)
			return false;
	}
	/* Entries are unique per address and never exceed the retry budget. */
	for (size_t i = 0; i < s->cfg.n_arp; i++) {
		const struct net_arp_entry *e = &s->cfg.arp[i];
		if (e->state == NET_ARP_FREE)
			continue;
		if (e->state > NET_ARP_VALID || e->n_tries > s->cfg.arp_max_tries)
			return false;
		for (size_t j = i + 1; j < s->cfg.n_arp; j++)
			if (s->cfg.arp[j].state != NET_ARP_FREE && s->cfg.arp[j].ip == e->ip)
				return false;
	}
	return true;
}

uint64_t net_arp_next_timer(const struct net_stack *s)
{
	uint64_t t = UINT64_MAX;
	for (size_t i = 0; i < s->cfg.n_arp; i++) {
		const struct net_arp_entry *e = &s->cfg.arp[i];
		if (e->state == NET_ARP_VALID) {
			t = MIN(t, e->expires_ms);
			if (e->n_tries && e->n_tries < s->cfg.arp_max_tries)
				t = MIN(t, e->retry_ms);
		} else if (e->state == NET_ARP_PENDING) {
			t = MIN(t, e->retry_ms);
		}
	}
	return t;
}
