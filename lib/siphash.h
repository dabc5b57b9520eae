/* SPDX-License-Identifier: MIT
 *
 * SipHash-2-4 (Aumasson and Bernstein): keyed 64-bit hash for hash tables fed by
 * untrusted keys and for SYN cookies. Key is 16 bytes, read little-endian.
 */
#ifndef LIB_SIPHASH_H
#define LIB_SIPHASH_H

#include "lib/compiler.h"

struct siphash_key {
	uint64_t k0, k1;
};

struct siphash_key siphash_key_from_bytes(const uint8_t bytes[16]);
uint64_t siphash24(const struct siphash_key *key, const void *data, size_t len);

#endif
