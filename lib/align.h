/* SPDX-License-Identifier: MIT
 *
 * Rounding up: the layout arithmetic of every *_mem_size/init pair that carves caller-owned
 * memory into 8-byte-aligned pieces, rounding to a cache line, page or sector, and sizing a
 * hash table to a power of two. Freestanding, static inline, no state; each exists once
 * here so no module keeps a private copy under a name of its own.
 *
 * Overflow is never checked here: each function states the largest argument it rounds
 * exactly, and what it returns above that. Callers bound their inputs first (config_ok and
 * friends), so a wrapped result never reaches a layout.
 */
#ifndef LIB_ALIGN_H
#define LIB_ALIGN_H

#include <stddef.h>
#include <stdint.h>

/* v rounded up to a multiple of a, which must be a power of two (not checked: callers pass
 * constants; a STATIC_ASSERT beside the constant is the place to prove it). Exact for
 * v <= SIZE_MAX - (a - 1); above that v + a - 1 wraps and the result is 0. */
static inline size_t align_up(size_t v, size_t a)
{
	return (v + a - 1u) & ~(a - 1u);
}

/* align_up(v, 8): the alignment every carved region keeps. Exact for v <= SIZE_MAX - 7;
 * 0 above that. */
static inline size_t align8(size_t v)
{
	return align_up(v, 8u);
}

/* v rounded up to a multiple of unit, for any unit >= 1 (not only powers of two), in 64 bits
 * whatever size_t is (record and segment offsets on disk). unit == 0 divides by zero.
 * Exact for v <= UINT64_MAX - (unit - 1); above that v + unit - 1 wraps and the result is
 * a multiple of unit smaller than v. */
static inline uint64_t round_up_u64(uint64_t v, uint64_t unit)
{
	return (v + unit - 1u) / unit * unit;
}

/* The smallest power of two >= n: 1 for n = 0 and n = 1, n itself when n is a power of two.
 * Exact for n <= 2^63; above that no uint64_t power of two is large enough and the result
 * is 0, which a caller that bounded n never sees. Any floor or cap on a table's size is the
 * caller's policy (MIN/MAX around the result), not this function's. */
static inline uint64_t pow2_at_least(uint64_t n)
{
	if (n <= 1u)
		return 1u;
	if (n > (UINT64_C(1) << 63))
		return 0;
	return UINT64_C(1) << (64 - __builtin_clzll(n - 1u));
}

#endif
