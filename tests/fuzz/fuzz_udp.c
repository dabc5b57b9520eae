/* SPDX-License-Identifier: MIT
 * Fuzz target: UDP input. Input after 3 bytes is a UDP datagram wrapped in a valid IPv4
 * packet to us; byte 0 optionally repairs the checksum, bytes 1-2 pick the IPv4 total
 * length slack (datagram shorter or longer than its own length field). Delivered data
 * must lie within the frame (ASan) and match the length field. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/net/net_fake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t expect_len;
static bool delivered;

static void on_udp(void *ctx, uint32_t src, uint16_t sport, uint32_t dst, const uint8_t *d,
		   size_t len)
{
	(void)ctx, (void)src, (void)sport, (void)dst;
	volatile uint8_t sink = 0;
	for (size_t i = 0; i < len; i++)
		sink ^= d[i];
	(void)sink;
	if (len != expect_len)
		abort();
	delivered = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t f[1600];
	if (size < 3 || size - 3 > 1400)
		return 0;
	struct fk_env *e = fk_fuzz_env(data[0] & 2, NULL);
	for (uint16_t p = 1; p <= 4; p++)
		if (net_udp_bind(&e->stack, (uint16_t)(p * 1000), on_udp, NULL) != 0 && !(data[0] & 2))
			abort();
	size_t dlen = size - 3;
	uint8_t u[1400];
	memcpy(u, data + 3, dlen);
	if ((data[0] & 1) && dlen >= 8 && ld_be16(u + 4) >= 8 && ld_be16(u + 4) <= dlen) {
		uint16_t ulen = ld_be16(u + 4);
		st_be16(u + 6, 0);
		uint16_t cs = net_csum_fold(net_csum_add(net_csum_pseudo(FK_PEER_IP, FK_OUR_IP, 17, ulen), u, ulen));
		st_be16(u + 6, cs ? cs : 0xffff);
	}
	expect_len = dlen >= 8 ? (size_t)ld_be16(u + 4) - 8 : 0;
	delivered = false;
	size_t n = fk_eth(f, fk_our_mac, fk_peer_mac, NET_ETH_TYPE_IPV4);
	n += fk_ipv4(f + n, FK_PEER_IP, FK_OUR_IP, 17, u, dlen);
	size_t pad = data[1] % 32;
	memset(f + n, data[2], pad);
	(void)net_stack_input(&e->stack, f, n + pad);
	fk_fuzz_finish(e);
	return 0;
}
