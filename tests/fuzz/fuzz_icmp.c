/* SPDX-License-Identifier: MIT
 * Fuzz target: ICMP input (echo replies and the token bucket). The input is a list of
 * ICMP messages [len][bytes], each wrapped in a valid IPv4 packet from a learned peer;
 * byte 0 optionally repairs each ICMP checksum and sends some to the broadcast address.
 * Replies must be well-formed and the rate limit must hold. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/net/net_fake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct fk_env *e = fk_fuzz_env(false, NULL);
	uint8_t f[1600];
	size_t n = fk_arp_frame(f, fk_bcast_mac, fk_peer_mac, 1, fk_peer_mac, FK_PEER_IP,
				(const uint8_t[6]){ 0 }, FK_OUR_IP);
	(void)net_stack_input(&e->stack, f, n);
	uint8_t mode = data[0];
	size_t pos = 1, n_in = 0;
	while (pos < size) {
		size_t len = data[pos++];
		if (len > size - pos)
			len = size - pos;
		uint8_t m[256];
		memcpy(m, data + pos, len);
		pos += len;
		if ((mode & 1) && len >= 4) {
			st_be16(m + 2, 0);
			st_be16(m + 2, net_csum_fold(net_csum_add(0, m, len)));
		}
		bool bc = (mode & 2) && (n_in & 1);
		size_t h = fk_eth(f, bc ? fk_bcast_mac : fk_our_mac, fk_peer_mac, NET_ETH_TYPE_IPV4);
		h += fk_ipv4(f + h, FK_PEER_IP, bc ? 0xffffffffu : FK_OUR_IP, 1, m, len);
		size_t sent = e->port.n_sent;
		(void)net_stack_input(&e->stack, f, h);
		n_in++;
		if (e->port.n_sent > sent) {
			const struct fk_sent *r = &e->port.sent[sent < FK_N_SENT ? sent : 0];
			if (sent < FK_N_SENT && (!fk_sent_ip_ok(r) || fk_sent_ip(r)[20] != 0 ||
			    net_csum_fold(net_csum_add(0, fk_sent_ip(r) + 20, len)) != 0))
				abort();
		}
		if (mode & 4)
			e->port.now += 37;
	}
	/* Token bucket: burst 5, 10/s, so replies <= 5 + elapsed/100 ms. */
	if (e->stack.cnt.icmp_echo_replies > 5 + (e->port.now - 1000) / 100)
		abort();
	fk_fuzz_finish(e);
	return 0;
}
