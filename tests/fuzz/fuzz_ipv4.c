/* SPDX-License-Identifier: MIT
 * Fuzz target: the IPv4 parser and everything above it. The input after byte 0 is an
 * IPv4 packet wrapped in an Ethernet frame to us; byte 0 optionally repairs the header
 * checksum (to get past it), sends it as L2 broadcast, and picks static or DHCP mode. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/net/net_fake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t f[1600];
	if (size < 1 || size - 1 > sizeof f - 14)
		return 0;
	struct fk_env *e = fk_fuzz_env(data[0] & 4, NULL);
	size_t n = fk_eth(f, (data[0] & 2) ? fk_bcast_mac : fk_our_mac, fk_peer_mac,
			  NET_ETH_TYPE_IPV4);
	memcpy(f + n, data + 1, size - 1);
	if ((data[0] & 1) && size - 1 >= 20 && (f[n] & 0xf) >= 5 && (f[n] & 0xf) * 4u <= size - 1)
		fk_ipv4_fix(f + n);
	(void)net_stack_input(&e->stack, f, n + size - 1);
	fk_fuzz_finish(e);
	return 0;
}
