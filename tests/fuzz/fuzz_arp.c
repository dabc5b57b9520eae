/* SPDX-License-Identifier: MIT
 * Fuzz target: ARP input and the cache/pending machinery. Records of 1 + 28 bytes: the
 * kind byte picks an ARP packet (sender MAC copied to the Ethernet source so the
 * consistency check passes, or not), a datagram to the address in the record (queueing
 * behind ARP), or time passing. The cache must never map our gateway to a MAC that did
 * not answer our own request or ask for our address. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/net/net_fake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fk_env *e = fk_fuzz_env(false, NULL);
	size_t pos = 0;
	while (pos + 29 <= size) {
		uint8_t kind = data[pos];
		const uint8_t *a = data + pos + 1;
		pos += 29;
		switch (kind % 4) {
		case 0:
		case 1: {
			uint8_t f[64];
			size_t n = fk_eth(f, (kind & 4) ? fk_bcast_mac : fk_our_mac,
					  (kind & 8) ? fk_peer_mac : a + 8, NET_ETH_TYPE_ARP);
			memcpy(f + n, a, 28);
			memset(f + n + 28, 0, 18);
			(void)net_stack_input(&e->stack, f, (kind & 16) ? n + 28 : 60);
			break;
		}
		case 2:
			if (net_udp_send(&e->stack, 1, ld_be32(a), 2, a, 28) < 0)
				break;
			break;
		default:
			e->port.now += (uint64_t)a[0] * 500;
			net_stack_poll(&e->stack, e->port.now);
			break;
		}
		fk_fuzz_check(e);
	}
	fk_fuzz_finish(e);
	return 0;
}
