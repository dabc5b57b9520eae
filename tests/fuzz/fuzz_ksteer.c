/* SPDX-License-Identifier: MIT
 * Fuzz target: kernel/ksteer's frame classifier. Byte 0 picks the worker count (1..8)
 * and whether we have an address; byte 1..4 are that address; the rest is one received
 * frame, classified in a buffer of exactly its length (ASan catches any read past it).
 * Checked: the class is one of the three, a flow names an existing worker (and exactly
 * the worker net/rss names for the addresses and ports at the fixed offsets of a
 * 20-byte IPv4 header when that is the header length), other classes name worker 0, and
 * every call moves exactly one counter. The address message decoder gets the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/ksteer.h"
#include "lib/bytes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t sum(const struct ksteer *s)
{
	const uint64_t *c = (const uint64_t *)(const void *)&s->cnt;
	uint64_t t = 0;
	for (size_t i = 0; i < sizeof s->cnt / sizeof(uint64_t); i++)
		t += c[i];
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t key[RSS_KEY_LEN] = { 0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2 };
	static uint16_t indir[16];
	struct rss_steer rss;
	struct ksteer s;
	if (size < 5)
		return 0;
	uint32_t workers = (uint32_t)(data[0] & 7u) + 1u;
	struct rss_config rc = { .key = key, .n_workers = workers, .n_indir = 16, .indir = indir };
	if (rss_steer_init(&rss, &rc) != 0 || ksteer_init(&s, &rss) != 0)
		abort();
	ksteer_set_addr(&s, (data[0] & 8u) ? ld_be32(data + 1) : 0);
	size_t n = size - 5;
	uint8_t *frame = malloc(n ? n : 1);
	if (!frame)
		return 0;
	memcpy(frame, data + 5, n);
	uint32_t w = 12345;
	enum ksteer_class k = ksteer_classify(&s, frame, n, &w);
	if (sum(&s) != 1)
		abort();
	if (k == KSTEER_FLOW) {
		if (w >= workers || n < 38)
			abort();
		if ((frame[14] & 15u) == 5u &&
		    w != rss_steer_flow(&rss, ld_be32(frame + 26), ld_be32(frame + 30), ld_be16(frame + 34),
					ld_be16(frame + 36)))
			abort();
	} else if ((k != KSTEER_LOCAL && k != KSTEER_ARP) || w != 0) {
		abort();
	}
	uint32_t ip, mask, gw;
	if (ksteer_addr_decode(frame, n, &ip, &mask, &gw) == 0 && n != KSTEER_ADDR_LEN)
		abort();
	free(frame);
	return 0;
}
