/* SPDX-License-Identifier: MIT
 * Fuzz target: the whole receive path of net/ (Ethernet -> ARP / IPv4 -> ICMP / UDP /
 * DHCP / TCP hand-off) driven by a script taken from the input: records of
 * [kind][len_hi][len_lo][bytes]. Kinds: a frame, time passing plus a poll, a UDP or TCP
 * send (exercising ARP queueing), or starving the port of frames. Byte 0 chooses a
 * static address or DHCP. After every step no transmit frame may be out of the port
 * except those queued behind ARP (invariant 2 of net/net_int.h), and ASan/UBSan watch
 * every access. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "tests/unit/net/net_fake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_tcp(void *ctx, uint32_t src, uint32_t dst, const uint8_t *seg, size_t len)
{
	struct fk_env *e = ctx;
	size_t cap;
	volatile uint8_t sink = 0;
	for (size_t i = 0; i < len; i++) /* the borrowed view must be readable */
		sink ^= seg[i];
	(void)sink;
	/* Answer from inside the hook, as TCP will. */
	uint8_t *out = net_tcp_tx_begin(&e->stack, &cap);
	if (!out)
		return;
	size_t n = len < 20 ? 20 : len > cap ? cap : len;
	memset(out, 0, n);
	memcpy(out, seg, len < n ? len : n);
	(void)net_tcp_tx_send(&e->stack, dst, src, out, n);
}

static void on_udp(void *ctx, uint32_t src, uint16_t sport, uint32_t dst, const uint8_t *data,
		   size_t len)
{
	struct fk_env *e = ctx;
	(void)dst;
	if (net_udp_send(&e->stack, 514, src, sport, data, len > 64 ? 64 : len) < 0)
		return;
}

static const struct net_upper_ops upper = { .tcp_input = on_tcp };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct fk_env *e = fk_fuzz_env(data[0] & 1, &upper);
	if (!(data[0] & 1) && net_udp_bind(&e->stack, 514, on_udp, e) != 0)
		abort();
	size_t pos = 1;
	while (pos + 3 <= size) {
		uint8_t kind = data[pos];
		size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];
		pos += 3;
		if (len > size - pos)
			len = size - pos;
		const uint8_t *p = data + pos;
		pos += len;
		switch (kind % 6) {
		case 0:
		case 1:
			(void)net_stack_input(&e->stack, p, len);
			break;
		case 2: {
			uint64_t dt = len >= 4 ? ld_be32(p) : len ? (uint64_t)p[0] * 1000 : 1;
			e->port.now += dt;
			net_stack_poll(&e->stack, e->port.now);
			break;
		}
		case 3:
			if (len >= 4 && net_udp_send(&e->stack, 1000, ld_be32(p), 2000, p, len) < 0)
				break;
			break;
		case 4:
			if (len >= 4) {
				size_t cap;
				uint8_t *seg = net_tcp_tx_begin(&e->stack, &cap);
				if (seg) {
					memset(seg, 0, 20);
					(void)net_tcp_tx_send(&e->stack, net_stack_addr(&e->stack, NULL, NULL),
							      ld_be32(p), seg, 20);
				}
			}
			break;
		default:
			e->port.no_bufs = !e->port.no_bufs;
			break;
		}
		fk_fuzz_check(e);
	}
	e->port.no_bufs = false;
	fk_fuzz_finish(e);
	return 0;
}
