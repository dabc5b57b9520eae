/* SPDX-License-Identifier: MIT
 *
 * Host hooks the storage tests hand to store/ (tests/support/, header only): a deterministic
 * generator (splitmix64 over the caller's state, so a printed seed replays a run) and the C
 * library's heap behind store/'s allocator signature. Each test keeps its own clocks (their
 * ticks differ from test to test) and its own generator state.
 */
#ifndef TESTS_SUPPORT_HOST_HOOKS_H
#define TESTS_SUPPORT_HOST_HOOKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define HOST_HOOKS_WALL_S INT64_C(1800000000) /* 2027-01-15: any fixed second after 2026 */

static inline uint64_t host_hooks_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void host_hooks_fill(uint64_t *state, void *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)host_hooks_next(state);
}

static inline void *host_hooks_alloc(void *ctx, size_t n)
{
	(void)ctx;
	return malloc(n);
}

static inline void host_hooks_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	(void)n;
	free(p);
}

#endif
