// SPDX-License-Identifier: MIT
/*
 * Shared by the in-process MQTT microbenchmarks (micro_mqtt.c, micro_shard.c): what their
 * fake transport does with the bytes a broker sends a subscriber — count the PUBLISH
 * packets and keep the packet ids of the QoS 1 ones, to acknowledge later (the broker
 * must not be called back from its send). Host-only, header-only; trusts the broker's
 * framing but never reads past len.
 */
#ifndef TOOLS_BENCH_BENCH_MQTT_H
#define TOOLS_BENCH_BENCH_MQTT_H

#include <stddef.h>
#include <stdint.h>

/* PUBLISH packets in buf[0..len); QoS 1 ids appended to acks while *n_acks < cap. */
static inline unsigned bench_scan_publishes(const uint8_t *buf, size_t len, uint16_t *acks,
					    unsigned *n_acks, unsigned cap)
{
	unsigned n = 0;
	size_t off = 0;
	while (off + 2 <= len) {
		uint8_t h = buf[off];
		size_t rl = 0, i = 1;
		unsigned shift = 0;
		while (off + i < len) {
			rl |= (size_t)(buf[off + i] & 0x7f) << shift;
			shift += 7;
			if (!(buf[off + i++] & 0x80))
				break;
		}
		const uint8_t *b = buf + off + i;
		if (off + i + rl > len)
			break;
		if ((h >> 4) == 3) {
			n++;
			if (((h >> 1) & 3) == 1 && rl >= 4) {
				size_t tl = ((size_t)b[0] << 8) | b[1];
				if (2 + tl + 2 <= rl && *n_acks < cap)
					acks[(*n_acks)++] = (uint16_t)((b[2 + tl] << 8) | b[3 + tl]);
			}
		}
		off += i + rl;
	}
	return n;
}

#endif
