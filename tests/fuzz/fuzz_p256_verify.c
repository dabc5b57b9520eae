/* SPDX-License-Identifier: MIT
 * Fuzz target for tls/accel's P-256 verification path, differential against mbedTLS's built-in
 * ECDSA. Byte 0 chooses how the public key is made:
 *   mode 0: bytes 1..32 are a private scalar; the key is its public point (both
 *           implementations must agree on whether the scalar is valid and on the point), the
 *           next 64 bytes an arbitrary signature r || s, the rest the digest;
 *   mode 1: bytes 1..65 are an arbitrary encoded public key, then r || s and the digest;
 *   mode 2: bytes 1..32 a private scalar, 33..64 a nonce: our signature of the digest (the
 *           rest) must verify under both implementations, and fail under both once a bit of
 *           the digest flips;
 *   mode 3: the fixed-base path of a trusted key (p256_verify_digest_table, over a table built
 *           once for a fixed key pair): bytes 1..64 an arbitrary signature r || s, then the
 *           digest; its verdict must equal the window path's and mbedTLS's; and with bytes
 *           1..32 as a nonce, the fixed key's signature of the digest must verify on the
 *           table and fail once a digest bit flips.
 * Checks: no crash; p256_check_public agrees with mbedtls_ecp_check_pubkey on every 65-byte
 * uncompressed encoding; p256_verify_digest and p256_verify_digest_table agree with
 * mbedtls_ecdsa_verify on every input; no allocation leaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls/accel/p256.h"
#include "tls/handshake.h"

#include <mbedtls/ecdsa.h>
#include <mbedtls/ecp.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* mbedTLS allocates through the handshake layer's hooks; every block must come back. */
static long live;
static void *f_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx, (void)tag;
	live++;
	return malloc(len);
}
static void f_free(void *ctx, void *p, size_t len)
{
	(void)ctx, (void)len;
	live--;
	free(p);
}

/* mbedTLS's verdict on (pub, sig, digest): 0 valid, 1 invalid signature, 2 invalid key. */
static int ref_verify(const uint8_t pub[P256_PUBLIC_LEN], const uint8_t sig[P256_SIG_LEN],
		      const uint8_t *digest, size_t len)
{
	mbedtls_ecp_group grp;
	mbedtls_ecp_point q;
	mbedtls_mpi r, s;
	int verdict = 2;
	mbedtls_ecp_group_init(&grp);
	mbedtls_ecp_point_init(&q);
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	if (mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_SECP256R1) != 0)
		abort();
	if (mbedtls_ecp_point_read_binary(&grp, &q, pub, P256_PUBLIC_LEN) != 0 ||
	    mbedtls_ecp_check_pubkey(&grp, &q) != 0)
		goto out;
	if (mbedtls_mpi_read_binary(&r, sig, 32) != 0 || mbedtls_mpi_read_binary(&s, sig + 32, 32) != 0)
		abort();
	verdict = mbedtls_ecdsa_verify(&grp, digest, len, &q, &r, &s) == 0 ? 0 : 1;
out:
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	mbedtls_ecp_point_free(&q);
	mbedtls_ecp_group_free(&grp);
	return verdict;
}

/* Ours, in the same three verdicts. */
static int our_verify(const uint8_t pub[P256_PUBLIC_LEN], const uint8_t sig[P256_SIG_LEN],
		      const uint8_t *digest, size_t len)
{
	if (p256_check_public(pub) != 0)
		return 2;
	return p256_verify_digest(pub, digest, len, sig) == 0 ? 0 : 1;
}

/* Randomness for mbedTLS's blinding of the multiplication (the result does not depend on
 * it): a fixed generator keeps runs reproducible. */
static int blind_rng(void *ctx, unsigned char *out, size_t len)
{
	uint64_t *x = ctx;
	for (size_t i = 0; i < len; i++) {
		*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
		out[i] = (unsigned char)*x;
	}
	return 0;
}

/* mbedTLS's public point of priv, or -1 when priv is not in [1, n-1]. */
static int ref_public(uint8_t pub[P256_PUBLIC_LEN], const uint8_t priv[P256_SCALAR_LEN])
{
	mbedtls_ecp_group grp;
	mbedtls_ecp_point q;
	mbedtls_mpi d;
	size_t olen = 0;
	uint64_t blind_state = 0x9e3779b97f4a7c15u;
	int rc = -1;
	mbedtls_ecp_group_init(&grp);
	mbedtls_ecp_point_init(&q);
	mbedtls_mpi_init(&d);
	if (mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_SECP256R1) != 0 ||
	    mbedtls_mpi_read_binary(&d, priv, P256_SCALAR_LEN) != 0)
		abort();
	if (mbedtls_ecp_check_privkey(&grp, &d) == 0 &&
	    mbedtls_ecp_mul(&grp, &q, &d, &grp.G, blind_rng, &blind_state) == 0 &&
	    mbedtls_ecp_point_write_binary(&grp, &q, MBEDTLS_ECP_PF_UNCOMPRESSED, &olen, pub,
					   P256_PUBLIC_LEN) == 0 &&
	    olen == P256_PUBLIC_LEN)
		rc = 0;
	mbedtls_mpi_free(&d);
	mbedtls_ecp_point_free(&q);
	mbedtls_ecp_group_free(&grp);
	return rc;
}

/* The trusted key of mode 3: a fixed private scalar, its public point and comb table. */
static const uint8_t trusted_priv[P256_SCALAR_LEN] = {
	0x5a, 0x11, 0x3c, 0x7e, 0x20, 0x91, 0x4d, 0xb2, 0x08, 0x6f, 0xe3, 0x55, 0x19, 0xc4, 0x72, 0x0d,
	0x9b, 0x31, 0x46, 0xaa, 0x2e, 0x87, 0x60, 0xf1, 0x13, 0x5c, 0xd8, 0x24, 0x6b, 0x90, 0x3f, 0xe7,
};
static uint8_t trusted_pub[P256_PUBLIC_LEN];
static struct p256_table trusted_table;

static int trusted_input(const uint8_t *data, size_t size)
{
	uint8_t sig[P256_SIG_LEN];
	if (size < P256_SIG_LEN)
		return 0;
	const uint8_t *digest = data + P256_SIG_LEN;
	size_t len = size - P256_SIG_LEN;
	int table = p256_verify_digest_table(&trusted_table, digest, len, data) == 0 ? 0 : 1;
	if (table != our_verify(trusted_pub, data, digest, len) ||
	    table != ref_verify(trusted_pub, data, digest, len))
		abort();
	if (p256_sign_digest(sig, trusted_priv, digest, len, data) != 0)
		return 0; /* an invalid nonce */
	if (p256_verify_digest_table(&trusted_table, digest, len, sig) != 0)
		abort();
	if (len > 0) {
		uint8_t flipped[64];
		size_t n = len < sizeof flipped ? len : sizeof flipped;
		memcpy(flipped, digest, n);
		flipped[0] ^= 0x80;
		if (p256_verify_digest_table(&trusted_table, flipped, n, sig) == 0)
			abort();
	}
	return 0;
}

static int one_input(const uint8_t *data, size_t size)
{
	uint8_t pub[P256_PUBLIC_LEN], ref_pub[P256_PUBLIC_LEN], sig[P256_SIG_LEN];
	uint8_t mode = data[0] % 4;
	data++, size--;
	if (mode == 3)
		return trusted_input(data, size);
	if (mode == 0 || mode == 2) {
		int ours = p256_public_from_private(pub, data);
		int ref = ref_public(ref_pub, data);
		if ((ours == 0) != (ref == 0) || (ours == 0 && memcmp(pub, ref_pub, sizeof pub) != 0))
			abort();
		if (ours != 0)
			return 0;
		if (mode == 2) {
			if (size < 64)
				return 0;
			const uint8_t *digest = data + 64;
			size_t len = size - 64;
			if (p256_sign_digest(sig, data, digest, len, data + 32) != 0)
				return 0; /* an invalid nonce (checked by test_p256 against mbedTLS) */
			if (our_verify(pub, sig, digest, len) != 0 || ref_verify(pub, sig, digest, len) != 0)
				abort();
			if (len > 0) {
				uint8_t flipped[64];
				size_t n = len < sizeof flipped ? len : sizeof flipped;
				memcpy(flipped, digest, n);
				flipped[0] ^= 0x80; /* within the leftmost 256 bits: a different e */
				if (our_verify(pub, sig, flipped, n) != 1 || ref_verify(pub, sig, flipped, n) != 1)
					abort();
			}
			return 0;
		}
		data += 32, size -= 32;
	} else {
		if (size < P256_PUBLIC_LEN)
			return 0;
		memcpy(pub, data, sizeof pub);
		data += P256_PUBLIC_LEN, size -= P256_PUBLIC_LEN;
	}
	if (size < P256_SIG_LEN)
		return 0;
	memcpy(sig, data, sizeof sig);
	data += P256_SIG_LEN, size -= P256_SIG_LEN;
	if (our_verify(pub, sig, data, size) != ref_verify(pub, sig, data, size))
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	if (!init) {
		struct tls_hs_ops ops = { f_alloc, f_free, NULL, NULL, NULL, NULL, NULL };
		tls_hs_hooks_install(&ops);
		if (p256_public_from_private(trusted_pub, trusted_priv) != 0 ||
		    p256_table_build(&trusted_table, trusted_pub) != 0)
			abort();
		init = true;
	}
	if (size < 1 + 32)
		return 0;
	int rc = one_input(data, size);
	if (live != 0)
		abort();
	return rc;
}
