/* SPDX-License-Identifier: MIT */
/* tls/accel: P-256 (secp256r1) point arithmetic, ECDH and ECDSA on OpenSSL's ecp_nistz256
 * assembly (field and scalar-order Montgomery multiplication, point double/add, constant-time
 * table gathers, the generator's precomputed table); the scalar multiplications around them are
 * ours. Private to tls/accel (psa_driver.c and the tests).
 * Encodings are SEC1's: scalars and coordinates 32 bytes big-endian, public keys 65 bytes
 * uncompressed (0x04 || X || Y), signatures r || s, 32 bytes each. Every function is constant
 * time in its secret inputs (private keys, nonces); all pointers are borrowed for the call; on
 * failure an output keeps its previous bytes (stored back through a mask, so that no branch
 * depends on a secret verdict: tests/ct). Thread-safe: no state beyond the read-only tables
 * (the generator's, and the callers' struct p256_table once built). */
#ifndef URMQTT_TLS_ACCEL_P256_H
#define URMQTT_TLS_ACCEL_P256_H

#include <stddef.h>
#include <stdint.h>

#define P256_SCALAR_LEN 32
#define P256_PUBLIC_LEN 65
#define P256_SIG_LEN 64

/* A fixed-base comb table for one public point Q, in the layout of the generator's table
 * (tls/accel/nistz256.h): P256_TABLE_BLOCKS blocks of P256_TABLE_BLOCK_LEN bytes, block i
 * holding j * 2^(7i) * Q for j = 1..64 as affine points in Montgomery form. Built by
 * p256_table_build, then only read: any number of cores may read one table at once. The
 * bytes are public (multiples of a public key). 64-byte aligned: the x86_64 gathers load it
 * with movdqa. */
#define P256_TABLE_BLOCKS 37
#define P256_TABLE_BLOCK_LEN 4096
struct p256_table {
	_Alignas(64) uint8_t block[P256_TABLE_BLOCKS][P256_TABLE_BLOCK_LEN];
};

/* 0 when 1 <= priv < n, else -1. */
int p256_check_private(const uint8_t priv[P256_SCALAR_LEN]);

/* 0 when pub is an uncompressed point on the curve with canonical coordinates (< p) and not
 * the point at infinity, else -1. */
int p256_check_public(const uint8_t pub[P256_PUBLIC_LEN]);

/* pub = priv * G. -1 (pub untouched) when priv is not a valid private key. */
int p256_public_from_private(uint8_t pub[P256_PUBLIC_LEN] /* out */,
	const uint8_t priv[P256_SCALAR_LEN]);

/* shared_x = X coordinate of priv * peer. -1 when priv or peer is invalid (p256_check_*) or the
 * result is the point at infinity. */
int p256_ecdh(uint8_t shared_x[P256_SCALAR_LEN] /* out */, const uint8_t priv[P256_SCALAR_LEN],
	const uint8_t peer[P256_PUBLIC_LEN]);

/* ECDSA signature of a message digest with nonce k (the caller draws k: RFC 6979 or random).
 * The digest is converted as ECDSA says (its leftmost 256 bits, then reduced mod n), so any
 * length from 0 bytes up is accepted. -1 when priv or k is not in [1, n-1], or when r or s
 * comes out zero (the caller then draws another k). */
int p256_sign_digest(uint8_t sig[P256_SIG_LEN] /* out */, const uint8_t priv[P256_SCALAR_LEN],
	const uint8_t *digest, size_t digest_len, const uint8_t k[P256_SCALAR_LEN]);

/* out = the digest as ECDSA reads it (its leftmost 256 bits, then reduced mod n), big-endian:
 * RFC 6979's bits2octets, which seeds deterministic nonces. Public data. */
void p256_digest_to_scalar(uint8_t out[P256_SCALAR_LEN] /* out */, const uint8_t *digest,
	size_t digest_len);

/* 0 when sig is a valid ECDSA signature of digest under pub, -1 otherwise (invalid key, r or s
 * zero or >= n, mismatch). Not secret-dependent: everything is public. */
int p256_verify_digest(const uint8_t pub[P256_PUBLIC_LEN], const uint8_t *digest,
	size_t digest_len, const uint8_t sig[P256_SIG_LEN]);

/* Fills t (about 148 KiB, the caller's) with the comb table of pub: 0, or -1 (t untouched)
 * when pub is not a valid public key (p256_check_public). Not constant time (public data);
 * about 2 KiB of stack. */
int p256_table_build(struct p256_table *t /* out */, const uint8_t pub[P256_PUBLIC_LEN]);

/* p256_verify_digest for the key t was built from, with u2*Q by the comb over t instead of a
 * window method: the same verdict for every input. t borrowed (read only). */
int p256_verify_digest_table(const struct p256_table *t, const uint8_t *digest,
	size_t digest_len, const uint8_t sig[P256_SIG_LEN]);

#endif
