/* SPDX-License-Identifier: MIT */
/* tests/support: splitmix64, the deterministic generator tests draw their random cases from.
 * One 64-bit state per stream, seeded by the test (from its *_SEED variable, printed), so a
 * failing case replays from the seed alone. Not for anything secret. Header-only. */
#ifndef TESTS_SUPPORT_SPLITMIX_H
#define TESTS_SUPPORT_SPLITMIX_H

#include <stddef.h>
#include <stdint.h>

/* The next value of the stream *state (advances it). */
static inline uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* len bytes of the stream *state, eight per value, least significant byte first. */
static inline void splitmix64_bytes(uint64_t *state, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t r = splitmix64(state);
		for (size_t j = 0; j < 8 && i + j < len; j++)
			out[i + j] = (uint8_t)(r >> (8 * j));
	}
}

#endif
