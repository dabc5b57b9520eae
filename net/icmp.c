/* SPDX-License-Identifier: MIT
 *
 * ICMP (RFC 792): answers echo requests sent to our unicast address, at most at the
 * configured rate (a token bucket, so a flood costs one check per packet). Every other
 * message is counted and dropped. Must never answer a broadcast (no smurf amplifier)
 * or reply to anything but a checksum-valid echo request.
 */
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "net/csum.h"
#include "net/net_int.h"

static bool icmp_take_token(struct net_stack *s)
{
	uint64_t now = net_now(s);
	uint64_t cap = (uint64_t)s->cfg.icmp_burst * 1000;
	if (now > s->icmp_refill_ms) {
		/* One token per 1000/rate ms: rate milli-tokens per elapsed ms. */
		uint64_t add = (now - s->icmp_refill_ms) * s->cfg.icmp_rate_per_s;
		s->icmp_tokens_milli = add >= cap - s->icmp_tokens_milli ? cap
									 : s->icmp_tokens_milli + add;
		s->icmp_refill_ms = now;
	}
	if (s->icmp_tokens_milli < 1000)
		return false;
	s->icmp_tokens_milli -= 1000;
	return true;
}

int net_icmp_input(struct net_stack *s, uint32_t src, uint32_t dst, struct cur *c)
{
	size_t len = cur_left(c);
	const uint8_t *msg = cur_ptr(c, len);
	struct cur h;
	uint8_t type, code;

	if (len < NET_ICMP_HDR_LEN || !msg) {
		s->cnt.icmp_short++;
		return -E_INVAL;
	}
	if (net_csum_fold(net_csum_add(0, msg, len)) != 0) {
		s->cnt.icmp_csum++;
		return -E_INVAL;
	}
	h = cur_make(msg, len);
	type = cur_u8(&h);
	code = cur_u8(&h);
	if (type != NET_ICMP_ECHO_REQUEST || code != 0) {
		s->cnt.icmp_type++;
		return -E_INVAL;
	}
	if (dst != s->ip) {
		s->cnt.icmp_broadcast++;
		return -E_INVAL;
	}
	if (!icmp_take_token(s)) {
		s->cnt.icmp_rate_limited++;
		return -E_AGAIN;
	}
	size_t cap;
	uint8_t *f = net_frame_get(s, NET_HDR_ROOM + len, &cap);
	if (!f)
		return -E_AGAIN;
	uint8_t *r = f + NET_HDR_ROOM;
	memcpy(r, msg, len);
	r[0] = NET_ICMP_ECHO_REPLY;
	st_be16(r + 2, 0);
	st_be16(r + 2, net_csum_fold(net_csum_add(0, r, len)));
	s->cnt.icmp_echo_replies++;
	return net_ipv4_output(s, f, s->ip, src, NET_IP_PROTO_ICMP, len);
}
