/* SPDX-License-Identifier: MIT */
/* tls/accel: X25519 (RFC 7748) — a constant-time Montgomery ladder of our own, and for public
 * keys a fixed-base multiplication on edwards25519, over field arithmetic in radix 2^51:
 * OpenSSL's x25519 perlasm on x86_64 (the 64-bit-limb MULX/ADX variant when the CPU has them,
 * else the 51-bit one), portable C with unsigned __int128 elsewhere.
 * Private to tls/accel (psa_driver.c and the tests). Keys and u-coordinates are 32 bytes
 * little-endian as in RFC 7748; the scalar is clamped here. All pointers are borrowed for the
 * call; no state beyond read-only constants. */
#ifndef URMQTT_TLS_ACCEL_X25519_H
#define URMQTT_TLS_ACCEL_X25519_H

#include <stdint.h>

#define X25519_LEN 32

/* out = X25519(scalar, u). Returns -1 when the result is all zero (u of small order: RFC 7748
 * section 6.1's check, which mbedTLS also makes), else 0. out is written either way. */
int x25519_scalarmult(uint8_t out[X25519_LEN] /* out */, const uint8_t scalar[X25519_LEN],
	const uint8_t u[X25519_LEN]);

/* pub = X25519(priv, 9), the same bytes as x25519_scalarmult(pub, priv, 9) gives, but by a
 * constant-time fixed-base multiplication over a table built at compile time (about a third
 * of the ladder's work; x25519.c's design note). pub may alias priv. Never fails. */
void x25519_public_from_private(uint8_t pub[X25519_LEN] /* out */,
	const uint8_t priv[X25519_LEN]);

#endif
