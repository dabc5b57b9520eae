/* SPDX-License-Identifier: MIT
 * Unit tests for tls/accel/p256 (P-256 on OpenSSL's ecp_nistz256 assembly):
 *  - differential against mbedTLS's ecp/ecdsa code, the reference: public keys, ECDH,
 *    signatures with the same nonce byte for byte, and the verdicts on good, corrupted and
 *    crafted signatures (u1*G == u2*Q, u1*G == -u2*Q), for random scalars of several shapes;
 *    on x86_64 a second pass with MULX/ADX turned off runs the baseline assembly;
 *  - edge scalars (small, powers of two, runs of ones, near n) through every operation;
 *  - fixed-base tables of trusted keys (accel_trust_p256_key): G's table equals the generator's;
 *    for a registered random key, at least 5,000 valid and corrupted signatures verified by the
 *    table, the window method, the driver entry and mbedTLS, all agreeing; the registry's
 *    limits; an unregistered key on the window path; us per verification printed;
 *  - rejection tables: private keys, public keys (off the curve, non-canonical coordinates,
 *    other prefixes, infinity), signatures (r or s zero, n, above n), ECDH peers;
 *  - the same classes at random (URMQTT_P256_ITERS cases): malformed and off-curve keys,
 *    non-canonical coordinates, infinity, other encodings, r or s zero or >= n, private keys
 *    out of range; both verdicts, ECDH and verification refusing, the PSA entry's answers;
 *  - NIST CAVP vectors, read at run time from the python3-cryptography-vectors package (never
 *    copied into the tree; a missing file is a failure): FIPS 186-3 SigVer, SigGen (verify,
 *    and sign with SigGen.txt's d and k), KeyPair and PKV for P-256 with every hash, the same
 *    FIPS 186-2 files (SHA-1), the P-256 sets of the KAS ECC static-unified ZZ-only validity
 *    files and the Z of their KDFConcat ones (the package has no KAS ECC CDH primitive file).
 * The CAVP messages need SHA-1/224/384/512, which our mbedTLS configuration leaves out: small
 * test-only implementations below, checked against FIPS 180 examples and, for the SHA-256
 * core, against mbedTLS.
 * URMQTT_P256_ITERS sets the random cases per operation, URMQTT_P256_SEED the seed (both
 * printed; a value that is not a number stops the run). make test runs this file twice:
 * under ASan with the default count, and built -O2 with 100,000 (tls/accel/module.mk).
 * Every teardown checks that mbedTLS gave back all it allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/bignum.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/ecp.h>
#include <mbedtls/platform.h>
#include <mbedtls/sha256.h>
#include <psa/crypto.h>

#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"
#include "tls/accel/p256.h"
#include "tls/accel/nistz256.h"
#include "tls/accel/psa_driver.h"
#include "lib/err.h"
#include "tests/support/splitmix.h"

#define ITERS_DEFAULT 2000u

#define CAVP_DIR "/usr/lib/python3/dist-packages/cryptography_vectors/asymmetric/"
#define CAVP_ECDSA CAVP_DIR "ECDSA/FIPS_186-3/"
#define CAVP_ECDH CAVP_DIR "ECDH/"

static const char HEX_N[] = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551";
static const char HEX_P[] = "ffffffff00000001000000000000000000000000ffffffffffffffffffffffff";
static const char HEX_GX[] = "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296";
static const char HEX_GY[] = "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5";

static unsigned iters;
static uint64_t seed;

static uint64_t splitmix64(uint64_t *s);

/* ---- mbedTLS's allocations, counted ---- */

static long live;
static void *t_calloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (p)
		live++;
	return p;
}
static void t_free(void *p)
{
	if (p)
		live--;
	free(p);
}

static mbedtls_ecp_group grp;

/* MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG: mbedTLS's ECDSA code links PSA's random generator, which
 * asks for this (tls/handshake.c defines it in the image; this test links no handshake).
 * Nothing here draws from it: a fixed stream is enough. */
psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t *ctx,
	uint8_t *out, size_t len, size_t *out_len);
psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t *ctx,
	uint8_t *out, size_t len, size_t *out_len)
{
	static uint64_t s = 1;
	(void)ctx;
	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)splitmix64(&s);
	*out_len = len;
	return PSA_SUCCESS;
}

static int setup(void **state)
{
	(void)state;
	live = 0;
	mbedtls_platform_set_calloc_free(t_calloc, t_free);
	mbedtls_ecp_group_init(&grp);
	return mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_SECP256R1);
}

static int teardown(void **state)
{
	(void)state;
	mbedtls_ecp_group_free(&grp);
	assert_int_equal(live, 0);
	return 0;
}

/* ---- bytes ---- */

static uint64_t rng_state;
static uint64_t rnd64(void)
{
	return splitmix64(&rng_state);
}
static void rnd_bytes(uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd64();
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Raw bytes from hex (even length); returns their number. */
static size_t hex_bytes(uint8_t *out, size_t cap, const char *hex)
{
	size_t len = strlen(hex);
	assert_true(len % 2 == 0 && len / 2 <= cap);
	for (size_t i = 0; i < len / 2; i++) {
		int hi = hex_val(hex[2 * i]), lo = hex_val(hex[2 * i + 1]);
		assert_true(hi >= 0 && lo >= 0);
		out[i] = (uint8_t)((unsigned)hi << 4 | (unsigned)lo);
	}
	return len / 2;
}

/* A big-endian number of any hex length into len bytes, left-padded: -1 when it needs more. */
static int hex_num(uint8_t *out, size_t len, const char *hex)
{
	while (*hex == '0' && hex[1])
		hex++;
	size_t digits = strlen(hex);
	if (digits > 2 * len)
		return -1;
	memset(out, 0, len);
	for (size_t i = 0; i < digits; i++) {
		int v = hex_val(hex[digits - 1 - i]);
		assert_true(v >= 0);
		out[len - 1 - i / 2] |= (uint8_t)((unsigned)v << (4 * (i % 2)));
	}
	return 0;
}

static void hex32(uint8_t out[32], const char *hex)
{
	assert_int_equal(hex_num(out, 32, hex), 0);
}

static void print_hex(const char *what, const uint8_t *b, size_t n)
{
	printf("#   %s = ", what);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	printf("\n");
}

/* out = a - small, big-endian 32 bytes. */
static void be_sub_small(uint8_t out[32], const uint8_t a[32], uint64_t small)
{
	unsigned borrow = 0;
	for (int i = 31; i >= 0; i--) {
		unsigned sub = (unsigned)(small & 0xff) + borrow;
		small >>= 8;
		unsigned v = a[i];
		borrow = v < sub;
		out[i] = (uint8_t)(v - sub);
	}
}

static bool be_is_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static uint8_t n_be[32];

static bool scalar_in_range(const uint8_t k[32])
{
	return !be_is_zero(k, 32) && memcmp(k, n_be, 32) < 0;
}

/* A scalar in [1, n-1] of a random shape: uniform, bytes from a few patterns (long runs of
 * ones and zeros: every Booth digit sign), small, close to n, or sparse. */
static void rnd_scalar(uint8_t k[32])
{
	static const uint8_t pat[] = { 0x00, 0xff, 0x80, 0x7f, 0x01, 0xfe, 0x40, 0x3f };
	do {
		switch (rnd64() % 10) {
		case 5:
			for (unsigned i = 0; i < 32; i++)
				k[i] = rnd64() % 4 ? pat[rnd64() % sizeof pat] : (uint8_t)rnd64();
			break;
		case 6: {
			size_t m = 1 + rnd64() % 8;
			memset(k, 0, 32);
			rnd_bytes(k + 32 - m, m);
			break;
		}
		case 7:
			be_sub_small(k, n_be, 1 + (rnd64() >> (rnd64() % 64)));
			break;
		case 8:
			memset(k, 0, 32);
			for (unsigned i = 0, n = 1 + (unsigned)(rnd64() % 12); i < n; i++) {
				unsigned bit = (unsigned)(rnd64() % 256);
				k[31 - bit / 8] |= (uint8_t)(1u << (bit % 8));
			}
			break;
		default:
			rnd_bytes(k, 32);
			break;
		}
	} while (!scalar_in_range(k));
}

/* A digest of a length ECDSA meets (none, SHA-1, -224, -256, -384, -512, odd ones), random or
 * at the edges of the reduction mod n. */
static size_t rnd_digest(uint8_t dg[64])
{
	static const size_t lens[] = { 0, 1, 16, 20, 28, 31, 32, 32, 32, 33, 48, 64 };
	size_t len = lens[rnd64() % (sizeof lens / sizeof lens[0])];
	switch (rnd64() % 8) {
	case 0:
		memset(dg, 0xff, 64);
		break;
	case 1:
		memset(dg, 0, 64);
		break;
	case 2: /* n, n - 1, n + small: reduce to 0, n - 1, small */
		memcpy(dg, n_be, 32);
		dg[31] = (uint8_t)(dg[31] + (rnd64() % 3) - 1);
		rnd_bytes(dg + 32, 32);
		break;
	default:
		rnd_bytes(dg, 64);
		break;
	}
	return len;
}

/* ---- the reference: mbedTLS ---- */

/* mbedTLS's randomness: the nonce first when one is set (ECDSA draws k as 32 big-endian
 * bytes), then a stream for its blinding. */
struct ref_rng {
	const uint8_t *first;
	uint64_t s;
};
static int ref_rng(void *ctx, unsigned char *out, size_t len)
{
	struct ref_rng *r = ctx;
	if (r->first) {
		if (len != 32)
			return -1;
		memcpy(out, r->first, 32);
		r->first = NULL;
		return 0;
	}
	for (size_t i = 0; i < len; i++)
		out[i] = (unsigned char)splitmix64(&r->s);
	return 0;
}

static int ref_point_read(mbedtls_ecp_point *q, const uint8_t pub[P256_PUBLIC_LEN])
{
	if (mbedtls_ecp_point_read_binary(&grp, q, pub, P256_PUBLIC_LEN) != 0)
		return -1;
	return mbedtls_ecp_check_pubkey(&grp, q) == 0 ? 0 : -1;
}

static int ref_check_private(const uint8_t priv[32])
{
	mbedtls_mpi d;
	mbedtls_mpi_init(&d);
	int rc = mbedtls_mpi_read_binary(&d, priv, 32) == 0 && mbedtls_ecp_check_privkey(&grp, &d) == 0 ? 0 : -1;
	mbedtls_mpi_free(&d);
	return rc;
}

static int ref_check_public(const uint8_t pub[P256_PUBLIC_LEN])
{
	mbedtls_ecp_point q;
	mbedtls_ecp_point_init(&q);
	int rc = ref_point_read(&q, pub);
	mbedtls_ecp_point_free(&q);
	return rc;
}

static int ref_public(uint8_t pub[P256_PUBLIC_LEN], const uint8_t priv[32])
{
	mbedtls_mpi d;
	mbedtls_ecp_point q;
	struct ref_rng rr = { NULL, rnd64() };
	size_t olen = 0;
	int rc = -1;
	mbedtls_mpi_init(&d);
	mbedtls_ecp_point_init(&q);
	if (mbedtls_mpi_read_binary(&d, priv, 32) == 0 && mbedtls_ecp_check_privkey(&grp, &d) == 0 &&
	    mbedtls_ecp_mul(&grp, &q, &d, &grp.G, ref_rng, &rr) == 0 &&
	    mbedtls_ecp_point_write_binary(&grp, &q, MBEDTLS_ECP_PF_UNCOMPRESSED, &olen, pub,
					   P256_PUBLIC_LEN) == 0 &&
	    olen == P256_PUBLIC_LEN)
		rc = 0;
	mbedtls_mpi_free(&d);
	mbedtls_ecp_point_free(&q);
	return rc;
}

static int ref_ecdh(uint8_t out[32], const uint8_t priv[32], const uint8_t peer[P256_PUBLIC_LEN])
{
	mbedtls_mpi d;
	mbedtls_ecp_point q, s;
	struct ref_rng rr = { NULL, rnd64() };
	int rc = -1;
	mbedtls_mpi_init(&d);
	mbedtls_ecp_point_init(&q);
	mbedtls_ecp_point_init(&s);
	if (mbedtls_mpi_read_binary(&d, priv, 32) == 0 && mbedtls_ecp_check_privkey(&grp, &d) == 0 &&
	    ref_point_read(&q, peer) == 0 && mbedtls_ecp_mul(&grp, &s, &d, &q, ref_rng, &rr) == 0 &&
	    !mbedtls_ecp_is_zero(&s) && mbedtls_mpi_write_binary(&s.MBEDTLS_PRIVATE(X), out, 32) == 0)
		rc = 0;
	mbedtls_mpi_free(&d);
	mbedtls_ecp_point_free(&q);
	mbedtls_ecp_point_free(&s);
	return rc;
}

static int ref_sign(uint8_t sig[64], const uint8_t priv[32], const uint8_t *dg, size_t len,
	const uint8_t k[32])
{
	static const uint8_t none[1];
	mbedtls_mpi d, r, s;
	struct ref_rng rr = { k, rnd64() };
	int rc = -1;
	mbedtls_mpi_init(&d);
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	if (mbedtls_mpi_read_binary(&d, priv, 32) == 0 &&
	    mbedtls_ecdsa_sign(&grp, &r, &s, &d, len ? dg : none, len, ref_rng, &rr) == 0 &&
	    rr.first == NULL && mbedtls_mpi_write_binary(&r, sig, 32) == 0 &&
	    mbedtls_mpi_write_binary(&s, sig + 32, 32) == 0)
		rc = 0;
	mbedtls_mpi_free(&d);
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	return rc;
}

static int ref_verify(const uint8_t pub[P256_PUBLIC_LEN], const uint8_t *dg, size_t len,
	const uint8_t sig[64])
{
	static const uint8_t none[1];
	mbedtls_mpi r, s;
	mbedtls_ecp_point q;
	int rc = -1;
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	mbedtls_ecp_point_init(&q);
	if (ref_point_read(&q, pub) == 0 && mbedtls_mpi_read_binary(&r, sig, 32) == 0 &&
	    mbedtls_mpi_read_binary(&s, sig + 32, 32) == 0 &&
	    mbedtls_ecdsa_verify(&grp, len ? dg : none, len, &q, &r, &s) == 0)
		rc = 0;
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	mbedtls_ecp_point_free(&q);
	return rc;
}

/* out = (a * b) mod n, or (-(a * b)) mod n when negate: the digests that make u1*G equal
 * u2*Q or -u2*Q in a verification. */
static void ref_mul_mod_n(uint8_t out[32], const uint8_t a[32], const uint8_t b[32], bool negate)
{
	mbedtls_mpi x, y;
	mbedtls_mpi_init(&x);
	mbedtls_mpi_init(&y);
	assert_int_equal(mbedtls_mpi_read_binary(&x, a, 32), 0);
	assert_int_equal(mbedtls_mpi_read_binary(&y, b, 32), 0);
	assert_int_equal(mbedtls_mpi_mul_mpi(&x, &x, &y), 0);
	assert_int_equal(mbedtls_mpi_mod_mpi(&x, &x, &grp.N), 0);
	if (negate) {
		assert_int_equal(mbedtls_mpi_sub_mpi(&x, &grp.N, &x), 0);
		assert_int_equal(mbedtls_mpi_mod_mpi(&x, &x, &grp.N), 0);
	}
	assert_int_equal(mbedtls_mpi_write_binary(&x, out, 32), 0);
	mbedtls_mpi_free(&x);
	mbedtls_mpi_free(&y);
}

/* ---- one case of each operation, ours against the reference ---- */

static void fail_case(const char *op, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	printf("# %s differs from mbedTLS (seed %llu)\n", op, (unsigned long long)seed);
	if (a)
		print_hex("input", a, alen);
	if (b)
		print_hex("input", b, blen);
	fail();
}

static void check_public(const uint8_t d[32])
{
	uint8_t ours[P256_PUBLIC_LEN], ref[P256_PUBLIC_LEN];
	int rc = p256_public_from_private(ours, d);
	assert_int_equal(ref_public(ref, d), 0);
	if (rc != 0 || memcmp(ours, ref, sizeof ours) != 0)
		fail_case("public_from_private", d, 32, NULL, 0);
	assert_int_equal(p256_check_public(ours), 0);
}

static void check_ecdh(const uint8_t d[32], const uint8_t peer[P256_PUBLIC_LEN])
{
	uint8_t ours[32], ref[32];
	int rc = p256_ecdh(ours, d, peer);
	assert_int_equal(ref_ecdh(ref, d, peer), 0);
	if (rc != 0 || memcmp(ours, ref, sizeof ours) != 0)
		fail_case("ecdh", d, 32, peer, P256_PUBLIC_LEN);
}

static void check_sign(const uint8_t d[32], const uint8_t *dg, size_t len, const uint8_t k[32],
	uint8_t sig[64] /* out */)
{
	uint8_t ref[64];
	int rc = p256_sign_digest(sig, d, len ? dg : NULL, len, k);
	assert_int_equal(ref_sign(ref, d, dg, len, k), 0);
	if (rc != 0 || memcmp(sig, ref, 64) != 0) {
		print_hex("digest", dg, len);
		fail_case("sign_digest (d, k)", d, 32, k, 32);
	}
}

/* Both verdicts must agree; returns ours (true: valid). */
static bool check_verify(const uint8_t pub[P256_PUBLIC_LEN], const uint8_t *dg, size_t len,
	const uint8_t sig[64])
{
	bool ours = p256_verify_digest(pub, len ? dg : NULL, len, sig) == 0;
	bool ref = ref_verify(pub, dg, len, sig) == 0;
	if (ours != ref) {
		printf("# verify: ours says %s, mbedTLS %s\n", ours ? "valid" : "invalid",
		       ref ? "valid" : "invalid");
		print_hex("digest", dg, len);
		print_hex("signature", sig, 64);
		fail_case("verify_digest (public key)", pub, P256_PUBLIC_LEN, NULL, 0);
	}
	return ours;
}

/* ---- differential, random ---- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void diff_public(unsigned n)
{
	uint8_t d[32];
	for (unsigned i = 0; i < n; i++) {
		rnd_scalar(d);
		check_public(d);
	}
}

static void diff_ecdh(unsigned n)
{
	uint8_t d[32], e[32], peer[P256_PUBLIC_LEN];
	for (unsigned i = 0; i < n; i++) {
		rnd_scalar(d);
		rnd_scalar(e);
		/* Peers alternate between our derivation and mbedTLS's. */
		assert_int_equal(i % 2 ? p256_public_from_private(peer, e) : ref_public(peer, e), 0);
		check_ecdh(d, peer);
	}
}

static void diff_sign(unsigned n)
{
	uint8_t d[32], k[32], dg[64], sig[64];
	for (unsigned i = 0; i < n; i++) {
		rnd_scalar(d);
		rnd_scalar(k);
		size_t len = rnd_digest(dg);
		check_sign(d, dg, len, k, sig);
	}
}

/* Each case: a valid signature, then one of: as is, a flipped bit in the signature or the
 * digest, another key, random r and s, a digest making u1*G == u2*Q (valid: the final point
 * addition doubles) or u1*G == -u2*Q (the sum is the point at infinity). */
static void diff_verify(unsigned n)
{
	uint8_t d[32], k[32], dg[64], sig[64], pub[P256_PUBLIC_LEN], other[32], opub[P256_PUBLIC_LEN];
	unsigned n_valid = 0;
	for (unsigned i = 0; i < n; i++) {
		rnd_scalar(d);
		rnd_scalar(k);
		size_t len = rnd_digest(dg);
		assert_int_equal(p256_public_from_private(pub, d), 0);
		assert_int_equal(p256_sign_digest(sig, d, dg, len, k), 0);
		switch (i % 7) {
		case 0:
			assert_true(check_verify(pub, dg, len, sig));
			break;
		case 1:
			sig[rnd64() % 64] ^= (uint8_t)(1u << (rnd64() % 8));
			check_verify(pub, dg, len, sig);
			break;
		case 2:
			if (len == 0)
				len = 32;
			dg[rnd64() % len] ^= (uint8_t)(1u << (rnd64() % 8));
			check_verify(pub, dg, len, sig);
			break;
		case 3:
			rnd_scalar(other);
			assert_int_equal(p256_public_from_private(opub, other), 0);
			check_verify(opub, dg, len, sig);
			break;
		case 4:
			rnd_scalar(sig);
			rnd_scalar(sig + 32);
			check_verify(pub, dg, len, sig);
			break;
		case 5: /* e = r*d: u1 = u2*d, and the signature is valid */
			len = 32;
			ref_mul_mod_n(dg, sig, d, false);
			assert_int_equal(p256_sign_digest(sig, d, dg, len, k), 0);
			assert_true(check_verify(pub, dg, len, sig));
			break;
		case 6: /* e = -r*d: u1*G + u2*Q is the point at infinity */
			len = 32;
			ref_mul_mod_n(dg, sig, d, true);
			assert_false(check_verify(pub, dg, len, sig));
			break;
		}
		n_valid += p256_verify_digest(pub, len ? dg : NULL, len, sig) == 0;
	}
	printf("#   %u of %u verifications valid\n", n_valid, n);
}

static void run_timed(const char *what, void (*fn)(unsigned), unsigned n)
{
	double t0 = now_s();
	fn(n);
	printf("# differential %s: %u cases, %.2f s (ours and mbedTLS, seed %llu)\n", what, n,
	       now_s() - t0, (unsigned long long)seed);
}

static void test_diff_public(void **state)
{
	(void)state;
	run_timed("public_from_private", diff_public, iters);
}

static void test_diff_ecdh(void **state)
{
	(void)state;
	run_timed("ecdh", diff_ecdh, iters);
}

static void test_diff_sign(void **state)
{
	(void)state;
	run_timed("sign_digest", diff_sign, iters);
}

static void test_diff_verify(void **state)
{
	(void)state;
	run_timed("verify_digest", diff_verify, iters);
}

/* The same with the CPU's optional instructions hidden (x86_64: the code without MULX/ADX;
 * elsewhere this changes nothing and runs the same code once more). */
static void test_diff_baseline_isa(void **state)
{
	(void)state;
	unsigned n = iters / 8 ? iters / 8 : 1;
	accel_cpu_use_optional(false);
	printf("# baseline: %s\n", accel_cpu_describe());
	run_timed("public_from_private (baseline)", diff_public, n);
	run_timed("ecdh (baseline)", diff_ecdh, n);
	run_timed("sign_digest (baseline)", diff_sign, n);
	run_timed("verify_digest (baseline)", diff_verify, n);
	accel_cpu_use_optional(true);
}

/* ---- edge scalars ---- */

static unsigned edge_scalars(uint8_t (*out)[32], unsigned cap)
{
	unsigned n = 0;
#define EDGE_PUSH() assert_true(++n <= cap)
	for (uint64_t v = 1; v <= 70; v++) { /* small */
		memset(out[n], 0, 32);
		out[n][31] = (uint8_t)v;
		EDGE_PUSH();
	}
	for (unsigned bit = 0; bit < 256; bit++) { /* 2^i and 2^i - 1 */
		memset(out[n], 0, 32);
		out[n][31 - bit / 8] = (uint8_t)(1u << (bit % 8));
		EDGE_PUSH();
		if (bit > 1) {
			be_sub_small(out[n], out[n - 1], 1);
			EDGE_PUSH();
		}
	}
	for (uint64_t v = 1; v <= 70; v++) { /* n - v: near the order */
		be_sub_small(out[n], n_be, v);
		EDGE_PUSH();
	}
	for (unsigned w = 5; w <= 7; w += 2) { /* every window of one width all ones, or one bit */
		for (unsigned shift = 0; shift < w; shift++) {
			memset(out[n], 0, 32);
			for (unsigned bit = shift; bit < 256; bit += w)
				out[n][31 - bit / 8] |= (uint8_t)(1u << (bit % 8));
			if (scalar_in_range(out[n]))
				EDGE_PUSH();
		}
	}
	memcpy(out[n], n_be, 32); /* (n - 1) / 2 (n is odd) and (n + 1) / 2 */
	for (int i = 31; i >= 0; i--)
		out[n][i] = (uint8_t)(out[n][i] >> 1 | (i ? out[n][i - 1] << 7 : 0));
	EDGE_PUSH();
	memcpy(out[n], out[n - 1], 32);
	out[n][31]++; /* (n - 1) / 2 ends in ...a8: no carry */
	EDGE_PUSH();
#undef EDGE_PUSH
	for (unsigned i = 0; i < n; i++)
		assert_true(scalar_in_range(out[i]));
	return n;
}

static void test_edge_scalars(void **state)
{
	(void)state;
	static uint8_t edge[1024][32];
	unsigned n = edge_scalars(edge, 1024);
	uint8_t g[P256_PUBLIC_LEN], q[P256_PUBLIC_LEN], pa[P256_PUBLIC_LEN], pb[P256_PUBLIC_LEN];
	uint8_t d[32], k[32], dg[32], sig[64], x[32], pub[P256_PUBLIC_LEN];

	g[0] = 0x04;
	hex32(g + 1, HEX_GX);
	hex32(g + 33, HEX_GY);
	/* Points with x = 0 and with y = 5 (computed for these tests). */
	pa[0] = pb[0] = 0x04;
	hex32(pa + 1, "0");
	hex32(pa + 33, "66485c780e2f83d72433bd5d84a06bb6541c2af31dae871728bf856a174f93f4");
	hex32(pb + 1, "d7325d7646cd60d80a92738ceb345f844cffaf35841022cab176f692de8de1d7");
	hex32(pb + 33, "5");
	rnd_scalar(d);
	assert_int_equal(p256_public_from_private(q, d), 0);
	rnd_scalar(k);
	rnd_bytes(dg, 32);

	for (unsigned i = 0; i < n; i++) {
		const uint8_t *e = edge[i];
		check_public(e);
		check_ecdh(e, q);
		check_ecdh(e, pa);
		check_ecdh(e, pb);
		/* The comb and the window method agree: e * G both ways. */
		assert_int_equal(p256_public_from_private(pub, e), 0);
		assert_int_equal(p256_ecdh(x, e, g), 0);
		assert_memory_equal(x, pub + 1, 32);
		check_sign(d, dg, 32, e, sig);
		assert_true(check_verify(q, dg, 32, sig));
		check_sign(e, dg, 32, k, sig);
		assert_true(check_verify(pub, dg, 32, sig));
	}
	printf("# edge scalars: %u, each as private key, ECDH scalar, nonce and signing key\n", n);
}

/* Verifications whose R has x in [n, p): r = x - n, accepted only through the r + n
 * comparison (random signatures reach it with probability 2^-128). Q is solved for a random
 * (e, s): Q = (R - u1*G) / u2. */
static void test_verify_x_above_n(void **state)
{
	(void)state;
	mbedtls_mpi x, y, t, exp, e, s, r, u1, u2, w, b;
	mbedtls_ecp_point R, Q;
	mbedtls_mpi *all[] = { &x, &y, &t, &exp, &e, &s, &r, &u1, &u2, &w, &b };
	unsigned found = 0;
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mbedtls_mpi_init(all[i]);
	mbedtls_ecp_point_init(&R);
	mbedtls_ecp_point_init(&Q);
	assert_int_equal(mbedtls_mpi_add_int(&exp, &grp.P, 1), 0); /* sqrt = ^((p + 1) / 4) */
	assert_int_equal(mbedtls_mpi_shift_r(&exp, 2), 0);
	for (mbedtls_mpi_sint j = 1; found < 8; j++) {
		/* x = n + j; y^2 = x^3 - 3x + b when that is a square */
		assert_int_equal(mbedtls_mpi_add_int(&x, &grp.N, j), 0);
		assert_int_equal(mbedtls_mpi_mul_mpi(&t, &x, &x), 0);
		assert_int_equal(mbedtls_mpi_sub_int(&t, &t, 3), 0);
		assert_int_equal(mbedtls_mpi_mul_mpi(&t, &t, &x), 0);
		assert_int_equal(mbedtls_mpi_add_mpi(&t, &t, &grp.B), 0);
		assert_int_equal(mbedtls_mpi_mod_mpi(&t, &t, &grp.P), 0);
		assert_int_equal(mbedtls_mpi_exp_mod(&y, &t, &exp, &grp.P, NULL), 0);
		assert_int_equal(mbedtls_mpi_mul_mpi(&w, &y, &y), 0);
		assert_int_equal(mbedtls_mpi_mod_mpi(&w, &w, &grp.P), 0);
		if (mbedtls_mpi_cmp_mpi(&w, &t) != 0)
			continue;
		assert_int_equal(mbedtls_mpi_copy(&R.MBEDTLS_PRIVATE(X), &x), 0);
		assert_int_equal(mbedtls_mpi_copy(&R.MBEDTLS_PRIVATE(Y), &y), 0);
		assert_int_equal(mbedtls_mpi_lset(&R.MBEDTLS_PRIVATE(Z), 1), 0);
		assert_int_equal(mbedtls_ecp_check_pubkey(&grp, &R), 0);

		uint8_t eb[32], sb[32], pub[P256_PUBLIC_LEN], sig[64];
		size_t olen;
		rnd_scalar(eb);
		rnd_scalar(sb);
		assert_int_equal(mbedtls_mpi_read_binary(&e, eb, 32), 0);
		assert_int_equal(mbedtls_mpi_read_binary(&s, sb, 32), 0);
		assert_int_equal(mbedtls_mpi_lset(&r, j), 0);
		assert_int_equal(mbedtls_mpi_inv_mod(&w, &s, &grp.N), 0);
		assert_int_equal(mbedtls_mpi_mul_mpi(&u1, &e, &w), 0);
		assert_int_equal(mbedtls_mpi_mod_mpi(&u1, &u1, &grp.N), 0);
		assert_int_equal(mbedtls_mpi_mul_mpi(&u2, &r, &w), 0);
		assert_int_equal(mbedtls_mpi_mod_mpi(&u2, &u2, &grp.N), 0);
		assert_int_equal(mbedtls_mpi_inv_mod(&w, &u2, &grp.N), 0); /* w = 1 / u2 */
		assert_int_equal(mbedtls_mpi_mul_mpi(&b, &u1, &w), 0);       /* b = -u1 / u2 */
		assert_int_equal(mbedtls_mpi_mod_mpi(&b, &b, &grp.N), 0);
		assert_int_equal(mbedtls_mpi_sub_mpi(&b, &grp.N, &b), 0);
		assert_int_equal(mbedtls_ecp_muladd(&grp, &Q, &b, &grp.G, &w, &R), 0);
		assert_int_equal(mbedtls_ecp_point_write_binary(&grp, &Q, MBEDTLS_ECP_PF_UNCOMPRESSED,
							       &olen, pub, sizeof pub), 0);
		assert_int_equal(mbedtls_mpi_write_binary(&r, sig, 32), 0);
		memcpy(sig + 32, sb, 32);
		assert_true(check_verify(pub, eb, 32, sig));
		/* The same with r = x itself (>= n): refused. */
		assert_int_equal(mbedtls_mpi_write_binary(&x, sig, 32), 0);
		assert_false(check_verify(pub, eb, 32, sig));
		found++;
	}
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mbedtls_mpi_free(all[i]);
	mbedtls_ecp_point_free(&R);
	mbedtls_ecp_point_free(&Q);
}

/* ---- rejections ---- */

static void test_reject_private(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		const char *hex;
		int rc;
	} v[] = {
		{ "zero", "0", -1 },
		{ "n", HEX_N, -1 },
		{ "n + 1", "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632552", -1 },
		{ "n + 2^128", "ffffffff00000001ffffffffffffffffbce6faada7179e84f3b9cac2fc632551", -1 },
		{ "p", HEX_P, -1 },
		{ "all ones", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", -1 },
		{ "one", "1", 0 },
		{ "n - 1", "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632550", 0 },
	};
	uint8_t good[32], peer[P256_PUBLIC_LEN], dg[32] = { 1 };
	rnd_scalar(good);
	assert_int_equal(p256_public_from_private(peer, good), 0);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		uint8_t s[32], pub[P256_PUBLIC_LEN], x[32], sig[64];
		hex32(s, v[i].hex);
		printf("# private key %s\n", v[i].what);
		assert_int_equal(p256_check_private(s), v[i].rc);
		assert_int_equal(ref_check_private(s), v[i].rc);
		memset(pub, 0xa5, sizeof pub);
		memset(x, 0xa5, sizeof x);
		memset(sig, 0xa5, sizeof sig);
		assert_int_equal(p256_public_from_private(pub, s), v[i].rc);
		assert_int_equal(p256_ecdh(x, s, peer), v[i].rc);
		assert_int_equal(p256_sign_digest(sig, s, dg, sizeof dg, good), v[i].rc);
		if (v[i].rc == 0)
			continue;
		/* Outputs untouched on failure. */
		for (size_t j = 0; j < sizeof pub; j++)
			assert_int_equal(pub[j], 0xa5);
		for (size_t j = 0; j < sizeof x; j++)
			assert_int_equal(x[j], 0xa5);
		/* The same values as the nonce. */
		assert_int_equal(p256_sign_digest(sig, good, dg, sizeof dg, s), -1);
		for (size_t j = 0; j < sizeof sig; j++)
			assert_int_equal(sig[j], 0xa5);
	}
}

static void test_reject_public(void **state)
{
	(void)state;
	/* prefix, X, Y as hex; rc expected from both implementations. */
	static const struct {
		const char *what;
		uint8_t prefix;
		const char *x, *y;
		int rc;
	} v[] = {
		{ "G", 0x04, HEX_GX, HEX_GY, 0 },
		{ "-G", 0x04, HEX_GX, "b01cbd1c01e58065711814b583f061e9d431cca994cea1313449bf97c840ae0a", 0 },
		{ "x = 0 (on the curve)", 0x04, "0", "66485c780e2f83d72433bd5d84a06bb6541c2af31dae871728bf856a174f93f4", 0 },
		{ "y = 5 (on the curve)", 0x04, "d7325d7646cd60d80a92738ceb345f844cffaf35841022cab176f692de8de1d7", "5", 0 },
		{ "G with y + 1", 0x04, HEX_GX, "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f6", -1 },
		{ "G with x + 1", 0x04, "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c297", HEX_GY, -1 },
		{ "(0, 0)", 0x04, "0", "0", -1 },
		{ "infinity byte, padded", 0x00, "0", "0", -1 },
		{ "G, compressed prefix 02", 0x02, HEX_GX, HEX_GY, -1 },
		{ "G, compressed prefix 03", 0x03, HEX_GX, HEX_GY, -1 },
		{ "G, hybrid prefix 06", 0x06, HEX_GX, HEX_GY, -1 },
		{ "G, hybrid prefix 07", 0x07, HEX_GX, HEX_GY, -1 },
		{ "G, prefix 05", 0x05, HEX_GX, HEX_GY, -1 },
		{ "x = p (x = 0 point, non-canonical)", 0x04, HEX_P, "66485c780e2f83d72433bd5d84a06bb6541c2af31dae871728bf856a174f93f4", -1 },
		{ "y = p + 5 (y = 5 point, non-canonical)", 0x04, "d7325d7646cd60d80a92738ceb345f844cffaf35841022cab176f692de8de1d7", "ffffffff00000001000000000000000000000001000000000000000000000004", -1 },
		{ "x = p, y = 0", 0x04, HEX_P, "0", -1 },
		{ "x all ones", 0x04, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", HEX_GY, -1 },
		{ "y all ones", 0x04, HEX_GX, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", -1 },
		{ "y = p", 0x04, HEX_GX, HEX_P, -1 },
	};
	uint8_t d[32], x[32], dg[32] = { 7 }, sig[64];
	rnd_scalar(d);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		uint8_t pub[P256_PUBLIC_LEN];
		pub[0] = v[i].prefix;
		hex32(pub + 1, v[i].x);
		hex32(pub + 33, v[i].y);
		printf("# public key %s\n", v[i].what);
		assert_int_equal(p256_check_public(pub), v[i].rc);
		assert_int_equal(ref_check_public(pub), v[i].rc);
		memset(x, 0xa5, sizeof x);
		if (v[i].rc == 0) {
			check_ecdh(d, pub);
			continue;
		}
		assert_int_equal(p256_ecdh(x, d, pub), -1);
		for (size_t j = 0; j < sizeof x; j++)
			assert_int_equal(x[j], 0xa5);
		rnd_scalar(sig);
		rnd_scalar(sig + 32);
		assert_int_equal(p256_verify_digest(pub, dg, sizeof dg, sig), -1);
	}
}

static void test_reject_signature(void **state)
{
	(void)state;
	enum { R, S };
	static const struct {
		const char *what;
		int which;    /* R or S */
		const char *hex; /* NULL: n - value (the other valid s), "" keep */
		int rc;
	} v[] = {
		{ "as signed", R, "", 0 },
		{ "s = n - s (also valid: no low-s rule)", S, NULL, 0 },
		{ "r = 0", R, "0", -1 },
		{ "s = 0", S, "0", -1 },
		{ "r = n", R, HEX_N, -1 },
		{ "s = n", S, HEX_N, -1 },
		{ "r = n + 1", R, "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632552", -1 },
		{ "s = n + 1", S, "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632552", -1 },
		{ "r = p", R, HEX_P, -1 },
		{ "r all ones", R, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", -1 },
		{ "s all ones", S, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", -1 },
		{ "r = 1", R, "1", -1 },
		{ "s = 1", S, "1", -1 },
	};
	uint8_t d[32], k[32], dg[32], pub[P256_PUBLIC_LEN], good[64];
	rnd_scalar(d);
	rnd_scalar(k);
	rnd_bytes(dg, sizeof dg);
	assert_int_equal(p256_public_from_private(pub, d), 0);
	check_sign(d, dg, sizeof dg, k, good);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		uint8_t sig[64];
		memcpy(sig, good, sizeof sig);
		uint8_t *part = sig + (v[i].which == R ? 0 : 32);
		if (!v[i].hex) {
			uint8_t s[32];
			memcpy(s, part, 32);
			/* n - s, big-endian */
			unsigned borrow = 0;
			for (int j = 31; j >= 0; j--) {
				unsigned sub = (unsigned)s[j] + borrow;
				borrow = n_be[j] < sub;
				part[j] = (uint8_t)(n_be[j] - sub);
			}
		} else if (v[i].hex[0]) {
			hex32(part, v[i].hex);
		}
		printf("# signature %s\n", v[i].what);
		assert_int_equal(p256_verify_digest(pub, dg, sizeof dg, sig), v[i].rc);
		assert_int_equal(ref_verify(pub, dg, sizeof dg, sig), v[i].rc);
	}
	/* A digest making s zero (e = -r*d) is refused and leaves the output alone: the caller
	 * then draws another nonce. */
	uint8_t e[32], out[64];
	ref_mul_mod_n(e, good, d, true);
	memset(out, 0xa5, sizeof out);
	assert_int_equal(p256_sign_digest(out, d, e, sizeof e, k), -1);
	for (size_t j = 0; j < sizeof out; j++)
		assert_int_equal(out[j], 0xa5);
	/* A digest of length 0 (NULL) signs and verifies as the number 0. */
	uint8_t sig[64], zero[32] = { 0 };
	assert_int_equal(p256_sign_digest(sig, d, NULL, 0, k), 0);
	assert_int_equal(p256_verify_digest(pub, NULL, 0, sig), 0);
	assert_int_equal(p256_verify_digest(pub, zero, sizeof zero, sig), 0);
	assert_int_equal(ref_verify(pub, zero, sizeof zero, sig), 0);
}

/* ---- hashes for the CAVP messages (test-only; FIPS 180-4) ---- */

enum hash_alg { H_SHA1, H_SHA224, H_SHA256, H_SHA384, H_SHA512 };

static uint32_t rol32(uint32_t x, unsigned n)
{
	return x << n | x >> (32 - n);
}
static uint32_t ror32(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}
static uint64_t ror64(uint64_t x, unsigned n)
{
	return x >> n | x << (64 - n);
}
static uint32_t be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}
static uint64_t be64(const uint8_t *b)
{
	return (uint64_t)be32(b) << 32 | be32(b + 4);
}

/* Merkle-Damgard padding: calls block() on every block of m || 0x80 || 0... || bit length
 * (len_bytes of it, big-endian). */
static void md_pad(const uint8_t *m, size_t len, size_t block_len, size_t len_bytes,
	void (*block)(void *st, const uint8_t *b), void *st)
{
	uint8_t last[256];
	size_t full = len / block_len * block_len, rest = len - full;
	for (size_t off = 0; off < full; off += block_len)
		block(st, m + off);
	size_t tail = rest + 1 + len_bytes <= block_len ? block_len : 2 * block_len;
	memset(last, 0, tail);
	if (rest)
		memcpy(last, m + full, rest);
	last[rest] = 0x80;
	uint64_t bits = (uint64_t)len * 8;
	for (unsigned i = 0; i < 8; i++)
		last[tail - 1 - i] = (uint8_t)(bits >> (8 * i));
	for (size_t off = 0; off < tail; off += block_len)
		block(st, last + off);
}

static void sha1_block(void *vst, const uint8_t *b)
{
	uint32_t *h = vst, w[80];
	for (size_t i = 0; i < 16; i++)
		w[i] = be32(b + 4 * i);
	for (unsigned i = 16; i < 80; i++)
		w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
	for (unsigned i = 0; i < 80; i++) {
		uint32_t f, k;
		if (i < 20) {
			f = (bb & c) | (~bb & d);
			k = 0x5a827999u;
		} else if (i < 40) {
			f = bb ^ c ^ d;
			k = 0x6ed9eba1u;
		} else if (i < 60) {
			f = (bb & c) | (bb & d) | (c & d);
			k = 0x8f1bbcdcu;
		} else {
			f = bb ^ c ^ d;
			k = 0xca62c1d6u;
		}
		uint32_t t = rol32(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol32(bb, 30);
		bb = a;
		a = t;
	}
	h[0] += a;
	h[1] += bb;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

static const uint32_t K256[64] = {
	0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
	0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
	0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
	0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
	0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
	0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
	0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
	0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

static void sha256_block(void *vst, const uint8_t *b)
{
	uint32_t *h = vst, w[64], s[8];
	for (size_t i = 0; i < 16; i++)
		w[i] = be32(b + 4 * i);
	for (unsigned i = 16; i < 64; i++) {
		uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(s, h, sizeof s);
	for (unsigned i = 0; i < 64; i++) {
		uint32_t t1 = s[7] + (ror32(s[4], 6) ^ ror32(s[4], 11) ^ ror32(s[4], 25)) +
			      ((s[4] & s[5]) ^ (~s[4] & s[6])) + K256[i] + w[i];
		uint32_t t2 = (ror32(s[0], 2) ^ ror32(s[0], 13) ^ ror32(s[0], 22)) +
			      ((s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]));
		memmove(s + 1, s, 7 * sizeof s[0]);
		s[4] += t1;
		s[0] = t1 + t2;
	}
	for (unsigned i = 0; i < 8; i++)
		h[i] += s[i];
}

static const uint64_t K512[80] = {
	0x428a2f98d728ae22u, 0x7137449123ef65cdu, 0xb5c0fbcfec4d3b2fu, 0xe9b5dba58189dbbcu,
	0x3956c25bf348b538u, 0x59f111f1b605d019u, 0x923f82a4af194f9bu, 0xab1c5ed5da6d8118u,
	0xd807aa98a3030242u, 0x12835b0145706fbeu, 0x243185be4ee4b28cu, 0x550c7dc3d5ffb4e2u,
	0x72be5d74f27b896fu, 0x80deb1fe3b1696b1u, 0x9bdc06a725c71235u, 0xc19bf174cf692694u,
	0xe49b69c19ef14ad2u, 0xefbe4786384f25e3u, 0x0fc19dc68b8cd5b5u, 0x240ca1cc77ac9c65u,
	0x2de92c6f592b0275u, 0x4a7484aa6ea6e483u, 0x5cb0a9dcbd41fbd4u, 0x76f988da831153b5u,
	0x983e5152ee66dfabu, 0xa831c66d2db43210u, 0xb00327c898fb213fu, 0xbf597fc7beef0ee4u,
	0xc6e00bf33da88fc2u, 0xd5a79147930aa725u, 0x06ca6351e003826fu, 0x142929670a0e6e70u,
	0x27b70a8546d22ffcu, 0x2e1b21385c26c926u, 0x4d2c6dfc5ac42aedu, 0x53380d139d95b3dfu,
	0x650a73548baf63deu, 0x766a0abb3c77b2a8u, 0x81c2c92e47edaee6u, 0x92722c851482353bu,
	0xa2bfe8a14cf10364u, 0xa81a664bbc423001u, 0xc24b8b70d0f89791u, 0xc76c51a30654be30u,
	0xd192e819d6ef5218u, 0xd69906245565a910u, 0xf40e35855771202au, 0x106aa07032bbd1b8u,
	0x19a4c116b8d2d0c8u, 0x1e376c085141ab53u, 0x2748774cdf8eeb99u, 0x34b0bcb5e19b48a8u,
	0x391c0cb3c5c95a63u, 0x4ed8aa4ae3418acbu, 0x5b9cca4f7763e373u, 0x682e6ff3d6b2b8a3u,
	0x748f82ee5defb2fcu, 0x78a5636f43172f60u, 0x84c87814a1f0ab72u, 0x8cc702081a6439ecu,
	0x90befffa23631e28u, 0xa4506cebde82bde9u, 0xbef9a3f7b2c67915u, 0xc67178f2e372532bu,
	0xca273eceea26619cu, 0xd186b8c721c0c207u, 0xeada7dd6cde0eb1eu, 0xf57d4f7fee6ed178u,
	0x06f067aa72176fbau, 0x0a637dc5a2c898a6u, 0x113f9804bef90daeu, 0x1b710b35131c471bu,
	0x28db77f523047d84u, 0x32caab7b40c72493u, 0x3c9ebe0a15c9bebcu, 0x431d67c49c100d4cu,
	0x4cc5d4becb3e42b6u, 0x597f299cfc657e2au, 0x5fcb6fab3ad6faecu, 0x6c44198c4a475817u,
};

static void sha512_block(void *vst, const uint8_t *b)
{
	uint64_t *h = vst, w[80], s[8];
	for (size_t i = 0; i < 16; i++)
		w[i] = be64(b + 8 * i);
	for (unsigned i = 16; i < 80; i++) {
		uint64_t s0 = ror64(w[i - 15], 1) ^ ror64(w[i - 15], 8) ^ (w[i - 15] >> 7);
		uint64_t s1 = ror64(w[i - 2], 19) ^ ror64(w[i - 2], 61) ^ (w[i - 2] >> 6);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy(s, h, sizeof s);
	for (unsigned i = 0; i < 80; i++) {
		uint64_t t1 = s[7] + (ror64(s[4], 14) ^ ror64(s[4], 18) ^ ror64(s[4], 41)) +
			      ((s[4] & s[5]) ^ (~s[4] & s[6])) + K512[i] + w[i];
		uint64_t t2 = (ror64(s[0], 28) ^ ror64(s[0], 34) ^ ror64(s[0], 39)) +
			      ((s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]));
		memmove(s + 1, s, 7 * sizeof s[0]);
		s[4] += t1;
		s[0] = t1 + t2;
	}
	for (unsigned i = 0; i < 8; i++)
		h[i] += s[i];
}

/* Hashes m; returns the digest length. SHA-256 is mbedTLS's unless own is set (self-test). */
static size_t hash_msg_impl(enum hash_alg alg, const uint8_t *m, size_t len, uint8_t out[64], bool own)
{
	static const uint32_t iv1[5] = { 0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u };
	static const uint32_t iv224[8] = { 0xc1059ed8u, 0x367cd507u, 0x3070dd17u, 0xf70e5939u,
		0xffc00b31u, 0x68581511u, 0x64f98fa7u, 0xbefa4fa4u };
	static const uint32_t iv256[8] = { 0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
		0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u };
	static const uint64_t iv384[8] = { 0xcbbb9d5dc1059ed8u, 0x629a292a367cd507u,
		0x9159015a3070dd17u, 0x152fecd8f70e5939u, 0x67332667ffc00b31u, 0x8eb44a8768581511u,
		0xdb0c2e0d64f98fa7u, 0x47b5481dbefa4fa4u };
	static const uint64_t iv512[8] = { 0x6a09e667f3bcc908u, 0xbb67ae8584caa73bu,
		0x3c6ef372fe94f82bu, 0xa54ff53a5f1d36f1u, 0x510e527fade682d1u, 0x9b05688c2b3e6c1fu,
		0x1f83d9abfb41bd6bu, 0x5be0cd19137e2179u };
	uint32_t h32[8];
	uint64_t h64[8];
	size_t n;
	switch (alg) {
	case H_SHA1:
		memcpy(h32, iv1, sizeof iv1);
		md_pad(m, len, 64, 8, sha1_block, h32);
		n = 20;
		break;
	case H_SHA224:
	case H_SHA256:
		if (alg == H_SHA256 && !own) {
			assert_int_equal(mbedtls_sha256(m, len, out, 0), 0);
			return 32;
		}
		memcpy(h32, alg == H_SHA224 ? iv224 : iv256, sizeof h32);
		md_pad(m, len, 64, 8, sha256_block, h32);
		n = alg == H_SHA224 ? 28 : 32;
		break;
	default:
		memcpy(h64, alg == H_SHA384 ? iv384 : iv512, sizeof h64);
		md_pad(m, len, 128, 16, sha512_block, h64);
		n = alg == H_SHA384 ? 48 : 64;
		for (size_t i = 0; i < n; i++)
			out[i] = (uint8_t)(h64[i / 8] >> (56 - 8 * (i % 8)));
		return n;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)(h32[i / 4] >> (24 - 8 * (i % 4)));
	return n;
}

static size_t hash_msg(enum hash_alg alg, const uint8_t *m, size_t len, uint8_t out[64])
{
	return hash_msg_impl(alg, m, len, out, false);
}

static void test_hash_selftest(void **state)
{
	(void)state;
	static const char *msgs[] = {
		"abc",
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
	};
	static const struct {
		enum hash_alg alg;
		const char *hex[3];
	} v[] = {
		{ H_SHA1, { "a9993e364706816aba3e25717850c26c9cd0d89d", "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
			  "a49b2446a02c645bf419f995b67091253a04a259" } },
		{ H_SHA224, { "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
			    "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525",
			    "c97ca9a559850ce97a04a96def6d99a9e0e0e2ab14e6b8df265fc0b3" } },
		{ H_SHA256, { "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
			    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
			    "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" } },
		{ H_SHA384, { "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7",
			    "3391fdddfc8dc7393707a65b1b4709397cf8b1d162af05abfe8f450de5f36bc6b0455a8520bc4e6f5fe95b1fe3c8452b",
			    "09330c33f71147e83d192fc782cd1b4753111b173b3b05d22fa08086e3b0f712fcc7c71a557e2db966c3e9fa91746039" } },
		{ H_SHA512, { "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
			    "204a8fc6dda82f0a0ced7beb8e08a41657c16ef468b228a8279be331a703c33596fd15c13b1b07f9aa1d3bea57789ca031ad85c7a71dd70354ec631238ca3445",
			    "8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909" } },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		for (size_t j = 0; j < 3; j++) {
			uint8_t want[64], got[64];
			size_t n = hex_bytes(want, sizeof want, v[i].hex[j]);
			assert_int_equal(hash_msg_impl(v[i].alg, (const uint8_t *)msgs[j], strlen(msgs[j]), got, true), n);
			assert_memory_equal(got, want, n);
		}
	}
	/* Our SHA-256 core (SHA-224's) against mbedTLS's at every length across two blocks. */
	uint8_t m[300], a[64], b[64];
	rnd_bytes(m, sizeof m);
	for (size_t len = 0; len <= sizeof m; len++) {
		hash_msg_impl(H_SHA256, m, len, a, true);
		hash_msg_impl(H_SHA256, m, len, b, false);
		assert_memory_equal(a, b, 32);
	}
}

/* ---- CAVP files ---- */

#define RSP_FIELDS 16
struct rsp_rec {
	const char *section;
	unsigned n;
	char key[RSP_FIELDS][24];
	char val[RSP_FIELDS][1200];
};

static const char *rsp_get(const struct rsp_rec *r, const char *key)
{
	for (unsigned i = 0; i < r->n; i++)
		if (strcmp(r->key[i], key) == 0)
			return r->val[i];
	return NULL;
}

/* Calls fn on each record (a blank-line separated group of "Key = value" lines) of section
 * [want]; fn returns whether it used the record. Returns the number used. A file that cannot
 * be read fails the test: the vectors come with python3-cryptography-vectors. */
static unsigned rsp_each(const char *path, const char *want,
	bool (*fn)(const struct rsp_rec *r, void *ctx), void *ctx)
{
	static struct rsp_rec rec;
	char line[4096];
	bool in = false;
	unsigned used = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		printf("# cannot read %s: install python3-cryptography-vectors\n", path);
		fail();
	}
	rec.section = want;
	rec.n = 0;
	for (;;) {
		bool eof = !fgets(line, sizeof line, f);
		size_t len = eof ? 0 : strlen(line);
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
			line[--len] = 0;
		if (eof || len == 0 || line[0] == '[') {
			if (in && rec.n)
				used += fn(&rec, ctx);
			rec.n = 0;
		}
		if (eof)
			break;
		if (line[0] == '#' || len == 0)
			continue;
		if (line[0] == '[') {
			/* KeyPair.rsp's "[B.4.2 Key Pair Generation ...]" heads the curve's records. */
			if (strstr(line, "B.4.2"))
				continue;
			in = len == strlen(want) + 2 && strncmp(line + 1, want, len - 2) == 0;
			continue;
		}
		char *eq = strstr(line, " = ");
		if (!in || !eq)
			continue;
		*eq = 0;
		assert_true(rec.n < RSP_FIELDS && strlen(line) < sizeof rec.key[0] &&
			    strlen(eq + 3) < sizeof rec.val[0]);
		strcpy(rec.key[rec.n], line);
		strcpy(rec.val[rec.n], eq + 3);
		rec.n++;
	}
	fclose(f);
	return used;
}

/* 0x04 || X || Y from hex coordinates; false when one does not fit in 32 bytes. */
static bool rsp_point(uint8_t pub[P256_PUBLIC_LEN], const char *x, const char *y)
{
	pub[0] = 0x04;
	return x && y && hex_num(pub + 1, 32, x) == 0 && hex_num(pub + 33, 32, y) == 0;
}

struct cavp {
	enum hash_alg alg;
	unsigned pass, fail, made; /* valid, invalid, signatures made again */
};

static const struct {
	const char *section;
	enum hash_alg alg;
} cavp_sections[] = {
	{ "P-256,SHA-1", H_SHA1 },
	{ "P-256,SHA-224", H_SHA224 },
	{ "P-256,SHA-256", H_SHA256 },
	{ "P-256,SHA-384", H_SHA384 },
	{ "P-256,SHA-512", H_SHA512 },
};

static size_t rsp_digest(const struct rsp_rec *r, enum hash_alg alg, uint8_t dg[64])
{
	static uint8_t msg[600];
	const char *m = rsp_get(r, "Msg");
	assert_non_null(m);
	return hash_msg(alg, msg, hex_bytes(msg, sizeof msg, m), dg);
}

/* SigVer.rsp: verify, and the verdict must be the file's Result (and mbedTLS's). */
static bool on_sigver(const struct rsp_rec *r, void *vctx)
{
	struct cavp *c = vctx;
	const char *res = rsp_get(r, "Result");
	uint8_t pub[P256_PUBLIC_LEN], sig[64], dg[64];
	if (!res)
		return false;
	size_t len = rsp_digest(r, c->alg, dg);
	bool enc = rsp_point(pub, rsp_get(r, "Qx"), rsp_get(r, "Qy")) &&
		   hex_num(sig, 32, rsp_get(r, "R")) == 0 && hex_num(sig + 32, 32, rsp_get(r, "S")) == 0;
	bool want = res[0] == 'P';
	bool got = enc && p256_verify_digest(pub, dg, len, sig) == 0;
	bool ref = enc && ref_verify(pub, dg, len, sig) == 0;
	if (got != want || ref != want) {
		printf("# SigVer [%s] R = %s: file says %s, ours %s, mbedTLS %s\n", r->section,
		       rsp_get(r, "R"), res, got ? "valid" : "invalid", ref ? "valid" : "invalid");
		fail();
	}
	want ? c->pass++ : c->fail++;
	return true;
}

/* SigGen.rsp and SigGen.txt: every signature verifies; with d and k (SigGen.txt) our
 * signature and public key must be the file's. */
static bool on_siggen(const struct rsp_rec *r, void *vctx)
{
	struct cavp *c = vctx;
	uint8_t pub[P256_PUBLIC_LEN], sig[64], dg[64];
	if (!rsp_get(r, "S"))
		return false;
	size_t len = rsp_digest(r, c->alg, dg);
	assert_true(rsp_point(pub, rsp_get(r, "Qx"), rsp_get(r, "Qy")));
	hex32(sig, rsp_get(r, "R"));
	hex32(sig + 32, rsp_get(r, "S"));
	if (p256_verify_digest(pub, dg, len, sig) != 0) {
		printf("# SigGen [%s] R = %s: does not verify\n", r->section, rsp_get(r, "R"));
		fail();
	}
	const char *dh = rsp_get(r, "d"), *kh = rsp_get(r, "k");
	if (dh && kh) {
		uint8_t d[32], k[32], ours[64], opub[P256_PUBLIC_LEN];
		hex32(d, dh);
		hex32(k, kh);
		assert_int_equal(p256_public_from_private(opub, d), 0);
		assert_memory_equal(opub, pub, sizeof pub);
		assert_int_equal(p256_sign_digest(ours, d, dg, len, k), 0);
		if (memcmp(ours, sig, sizeof sig) != 0) {
			printf("# SigGen [%s] R = %s: our signature differs\n", r->section, rsp_get(r, "R"));
			fail();
		}
		c->made++;
	}
	c->pass++;
	return true;
}

static bool on_keypair(const struct rsp_rec *r, void *vctx)
{
	struct cavp *c = vctx;
	const char *dh = rsp_get(r, "d");
	uint8_t d[32], pub[P256_PUBLIC_LEN], ours[P256_PUBLIC_LEN];
	if (!dh)
		return false;
	hex32(d, dh);
	assert_true(rsp_point(pub, rsp_get(r, "Qx"), rsp_get(r, "Qy")));
	assert_int_equal(p256_public_from_private(ours, d), 0);
	assert_memory_equal(ours, pub, sizeof pub);
	assert_int_equal(p256_check_public(pub), 0);
	c->pass++;
	return true;
}

/* PKV.rsp: public key validation; a coordinate longer than 32 bytes cannot be encoded and
 * counts as rejected. */
static bool on_pkv(const struct rsp_rec *r, void *vctx)
{
	struct cavp *c = vctx;
	const char *res = rsp_get(r, "Result");
	uint8_t pub[P256_PUBLIC_LEN];
	if (!res)
		return false;
	bool want = res[0] == 'P';
	bool enc = rsp_point(pub, rsp_get(r, "Qx"), rsp_get(r, "Qy"));
	bool got = enc && p256_check_public(pub) == 0;
	if (got != want || (enc && (ref_check_public(pub) == 0) != want)) {
		const char *qx = rsp_get(r, "Qx");
		printf("# PKV Qx = %s: file says %s, ours %s\n", qx ? qx : "?", res, got ? "valid" : "invalid");
		fail();
	}
	want ? c->pass++ : c->fail++;
	return true;
}

/* One KAS ECC record (ZZ-only or KDFConcat): both parties' keys as the file gives them and
 * what our code says of them. */
struct kas_rec {
	const char *res;                          /* the file's Result: "P" or "F (n - ...)" */
	uint8_t dc[32], di[32], z[32];            /* private keys (CAVS, IUT) and the file's Z */
	uint8_t qc[P256_PUBLIC_LEN], qi[P256_PUBLIC_LEN]; /* public keys, uncompressed */
	bool enc_c, enc_i;                        /* each public key's coordinates encode */
	bool valid_c, valid_i;                    /* ... and pass p256_check_public */
	bool pub_c, pub_i;                        /* each private key gives its public key */
};

/* Reads r into k; false when r has no Result (not a test record). */
static bool kas_read(const struct rsp_rec *r, struct kas_rec *k)
{
	uint8_t p[P256_PUBLIC_LEN];
	k->res = rsp_get(r, "Result");
	if (!k->res)
		return false;
	hex32(k->dc, rsp_get(r, "dsCAVS"));
	hex32(k->di, rsp_get(r, "dsIUT"));
	hex32(k->z, rsp_get(r, "Z"));
	k->enc_c = rsp_point(k->qc, rsp_get(r, "QsCAVSx"), rsp_get(r, "QsCAVSy"));
	k->enc_i = rsp_point(k->qi, rsp_get(r, "QsIUTx"), rsp_get(r, "QsIUTy"));
	k->valid_c = k->enc_c && p256_check_public(k->qc) == 0;
	k->valid_i = k->enc_i && p256_check_public(k->qi) == 0;
	k->pub_c = p256_public_from_private(p, k->dc) == 0 && memcmp(p, k->qc, sizeof p) == 0;
	k->pub_i = p256_public_from_private(p, k->di) == 0 && memcmp(p, k->qi, sizeof p) == 0;
	return true;
}

/* KAS ECC ZZ-only: each party's public key from its private key, both keys valid, and both
 * directions of ECDH give Z. A record passes when all hold; the file's Result must agree,
 * and a failure for a public key's reason must be a failed public key check. */
static bool on_ecdh(const struct rsp_rec *r, void *vctx)
{
	struct cavp *c = vctx;
	struct kas_rec k;
	uint8_t z1[32], z2[32];
	if (!kas_read(r, &k))
		return false;
	const char *res = k.res;
	bool valid_c = k.valid_c, valid_i = k.valid_i;
	bool ok = valid_c && valid_i && k.pub_c && k.pub_i;
	ok = ok && p256_ecdh(z1, k.di, k.qc) == 0 && memcmp(z1, k.z, 32) == 0;
	ok = ok && p256_ecdh(z2, k.dc, k.qi) == 0 && memcmp(z2, k.z, 32) == 0;
	bool want = res[0] == 'P';
	/* "F (1 - ...)", "(2 - ...)": the CAVS key fails validation; 5, 6: the IUT's. */
	long reason = strtol(res + 3, NULL, 10);
	if (ok != want || ((reason == 1 || reason == 2) && valid_c) ||
	    ((reason == 5 || reason == 6) && valid_i)) {
		printf("# ECDH [%s] COUNT = %s: file says %s, ours %s\n", r->section,
		       rsp_get(r, "COUNT") ? rsp_get(r, "COUNT") : "?", res, ok ? "P" : "F");
		fail();
	}
	want ? c->pass++ : c->fail++;
	return true;
}

static void test_cavp_sigver(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cavp_sections / sizeof cavp_sections[0]; i++) {
		struct cavp c = { cavp_sections[i].alg, 0, 0, 0 };
		unsigned n = rsp_each(CAVP_ECDSA "SigVer.rsp", cavp_sections[i].section, on_sigver, &c);
		printf("# SigVer [%s]: %u vectors, %u valid, %u invalid\n", cavp_sections[i].section, n,
		       c.pass, c.fail);
		assert_true(n >= 15 && c.pass > 0 && c.fail > 0);
	}
}

static void test_cavp_siggen(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cavp_sections / sizeof cavp_sections[0]; i++) {
		struct cavp c = { cavp_sections[i].alg, 0, 0, 0 };
		unsigned n = rsp_each(CAVP_ECDSA "SigGen.rsp", cavp_sections[i].section, on_siggen, &c);
		printf("# SigGen.rsp [%s]: %u signatures verified\n", cavp_sections[i].section, n);
		assert_true(n >= 15);
		c = (struct cavp){ cavp_sections[i].alg, 0, 0, 0 };
		n = rsp_each(CAVP_ECDSA "SigGen.txt", cavp_sections[i].section, on_siggen, &c);
		printf("# SigGen.txt [%s]: %u signatures verified, %u made again from d and k\n",
		       cavp_sections[i].section, n, c.made);
		assert_true(n >= 15 && c.made == n);
	}
}

static void test_cavp_keys(void **state)
{
	(void)state;
	struct cavp c = { H_SHA256, 0, 0, 0 };
	unsigned n = rsp_each(CAVP_ECDSA "KeyPair.rsp", "P-256", on_keypair, &c);
	printf("# KeyPair [P-256]: %u key pairs\n", n);
	assert_true(n >= 10);
	c = (struct cavp){ H_SHA256, 0, 0, 0 };
	n = rsp_each(CAVP_ECDSA "PKV.rsp", "P-256", on_pkv, &c);
	printf("# PKV [P-256]: %u public keys, %u valid, %u invalid\n", n, c.pass, c.fail);
	assert_true(n >= 10 && c.pass > 0 && c.fail > 0);
}

static void test_cavp_ecdh(void **state)
{
	(void)state;
	static const char *files[] = {
		CAVP_ECDH "KASValidityTest_ECCStaticUnified_NOKC_ZZOnly_init.fax",
		CAVP_ECDH "KASValidityTest_ECCStaticUnified_NOKC_ZZOnly_resp.fax",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct cavp c = { H_SHA256, 0, 0, 0 };
		unsigned n = rsp_each(files[i], "EC - SHA256", on_ecdh, &c);
		printf("# KAS ZZ-only %s [EC - SHA256, P-256]: %u vectors, %u pass, %u fail\n",
		       strrchr(files[i], '_') + 1, n, c.pass, c.fail);
		assert_true(n >= 20 && c.pass > 0 && c.fail > 0);
	}
}

/* ---- fixed-base tables for trusted keys (accel_trust_p256_key, p256_table_build) ----
 * For a random key registered with the driver: table path, window path, the driver (PSA's
 * entry point) and mbedTLS agree on every case; a key not registered takes the window path;
 * the table of G is the generator's table byte for byte (the build and the layout). */

#define TABLE_CASES_MIN 5000u

static struct p256_table *table_new(void)
{
	struct p256_table *t = aligned_alloc(_Alignof(struct p256_table), sizeof *t);
	assert_non_null(t);
	return t;
}

/* The driver's verdict (PSA's transparent-driver entry, as mbedTLS calls it). */
static bool driver_verify(const uint8_t pub[P256_PUBLIC_LEN], const uint8_t *dg, size_t len,
	const uint8_t sig[64])
{
	psa_key_attributes_t a = PSA_KEY_ATTRIBUTES_INIT;
	psa_set_key_type(&a, PSA_KEY_TYPE_ECC_PUBLIC_KEY(PSA_ECC_FAMILY_SECP_R1));
	psa_set_key_bits(&a, 256);
	psa_status_t st = urmqtt_accel_verify_hash(&a, pub, P256_PUBLIC_LEN,
		PSA_ALG_ECDSA(PSA_ALG_SHA_256), len ? dg : NULL, len, sig, 64);
	assert_true(st == PSA_SUCCESS || st == PSA_ERROR_INVALID_SIGNATURE);
	return st == PSA_SUCCESS;
}

/* Table, window, driver and mbedTLS: one verdict. Returns it. */
static bool check_verify_table(const struct p256_table *t, const uint8_t pub[P256_PUBLIC_LEN],
	const uint8_t *dg, size_t len, const uint8_t sig[64])
{
	bool tab = p256_verify_digest_table(t, len ? dg : NULL, len, sig) == 0;
	bool var = p256_verify_digest(pub, len ? dg : NULL, len, sig) == 0;
	bool drv = driver_verify(pub, dg, len, sig);
	bool ref = ref_verify(pub, dg, len, sig) == 0;
	if (tab != var || var != drv || drv != ref) {
		printf("# verify: table %d, window %d, driver %d, mbedTLS %d\n", tab, var, drv, ref);
		print_hex("digest", dg, len);
		print_hex("signature", sig, 64);
		fail_case("verify_digest_table (public key)", pub, P256_PUBLIC_LEN, NULL, 0);
	}
	return ref;
}

/* A signature of (d, digest) and then one change of case % 10: none; a flipped bit in r, in
 * s, in the digest; r or s zero; r or s n + small or all ones; random r and s; a digest
 * making u1*G == u2*Q (valid, the final addition doubles) or u1*G == -u2*Q (infinity). */
static bool table_case(const struct p256_table *t, const uint8_t d[32],
	const uint8_t pub[P256_PUBLIC_LEN], unsigned i)
{
	uint8_t k[32], dg[64], sig[64];
	rnd_scalar(k);
	size_t len = rnd_digest(dg);
	assert_int_equal(p256_sign_digest(sig, d, len ? dg : NULL, len, k), 0);
	uint8_t *part = sig + (rnd64() % 2 ? 32 : 0);
	switch (i % 10) {
	case 0:
		break;
	case 1:
		sig[rnd64() % 32] ^= (uint8_t)(1u << (rnd64() % 8));
		break;
	case 2:
		sig[32 + rnd64() % 32] ^= (uint8_t)(1u << (rnd64() % 8));
		break;
	case 3:
		if (len == 0)
			len = 32;
		dg[rnd64() % len] ^= (uint8_t)(1u << (rnd64() % 8));
		break;
	case 4:
		memset(part, 0, 32);
		break;
	case 5:
		if (rnd64() % 4 == 0) {
			memset(part, 0xff, 32);
		} else { /* n + v, v in 0..255 (no carry out of the last byte of n's 0x51) */
			memcpy(part, n_be, 32);
			part[31] = (uint8_t)(part[31] + rnd64() % 0xae);
		}
		break;
	case 6:
		rnd_scalar(sig);
		rnd_scalar(sig + 32);
		break;
	case 7:
		len = 32;
		ref_mul_mod_n(dg, sig, d, false);
		assert_int_equal(p256_sign_digest(sig, d, dg, len, k), 0);
		break;
	case 8:
		len = 32;
		ref_mul_mod_n(dg, sig, d, true);
		break;
	default: /* another valid one, with a small or edge nonce */
		break;
	}
	return check_verify_table(t, pub, dg, len, sig);
}

static void test_table_generator(void **state)
{
	(void)state;
	uint8_t g[P256_PUBLIC_LEN];
	struct p256_table *t = table_new();
	g[0] = 0x04;
	hex32(g + 1, HEX_GX);
	hex32(g + 33, HEX_GY);
	double t0 = now_s();
	assert_int_equal(p256_table_build(t, g), 0);
	printf("# table of G: built in %.0f us, equal to ecp_nistz256_precomputed\n", (now_s() - t0) * 1e6);
	assert_memory_equal(t->block, ecp_nistz256_precomputed, sizeof t->block);
	/* A key that is not a point leaves the table alone. */
	g[64] ^= 1;
	memset(t, 0xa5, sizeof *t);
	assert_int_equal(p256_table_build(t, g), -1);
	for (size_t j = 0; j < sizeof *t; j += 97)
		assert_int_equal(((const uint8_t *)t)[j], 0xa5);
	free(t);
}

static void test_table_registry(void **state)
{
	(void)state;
	uint8_t d[32], pub[P256_PUBLIC_LEN], other[P256_PUBLIC_LEN], bad[P256_PUBLIC_LEN];
	rnd_scalar(d);
	assert_int_equal(p256_public_from_private(pub, d), 0);
	rnd_scalar(d);
	assert_int_equal(p256_public_from_private(other, d), 0);
	memcpy(bad, pub, sizeof bad);
	bad[1] ^= 1;

	accel_trust_p256_clear();
	unsigned refused = accel_trust_p256_refused();
	assert_int_equal(accel_trust_p256_key(bad), -E_INVAL);
	assert_int_equal(accel_trust_p256_key(pub), 0);
	assert_int_equal(accel_trust_p256_key(pub), 0); /* again: one entry */
	assert_int_equal(accel_trusted_p256_keys(), 1);
	assert_true(accel_p256_key_trusted(pub));
	assert_false(accel_p256_key_trusted(other));
	assert_false(accel_p256_key_trusted(bad));
	if (ACCEL_P256_TRUSTED_MAX == 1) {
		assert_int_equal(accel_trust_p256_key(other), -E_NOMEM);
		assert_int_equal(accel_trust_p256_refused(), refused + 1);
		assert_false(accel_p256_key_trusted(other));
	}
	accel_trust_p256_clear();
	assert_int_equal(accel_trusted_p256_keys(), 0);
	assert_false(accel_p256_key_trusted(pub));
}

/* us per verification of one valid signature by each path. */
static double table_time_us(const struct p256_table *t, const uint8_t pub[P256_PUBLIC_LEN],
	const uint8_t dg[32], const uint8_t sig[64], int path, unsigned n)
{
	double t0 = now_s();
	for (unsigned j = 0; j < n; j++) {
		bool ok = path == 0 ? p256_verify_digest_table(t, dg, 32, sig) == 0
			: path == 1 ? p256_verify_digest(pub, dg, 32, sig) == 0
				    : driver_verify(pub, dg, 32, sig);
		assert_true(ok);
	}
	return (now_s() - t0) * 1e6 / n;
}

static void test_table_differential(void **state)
{
	(void)state;
	unsigned n = iters > TABLE_CASES_MIN ? iters : TABLE_CASES_MIN;
	uint8_t d[32], pub[P256_PUBLIC_LEN], d2[32], pub2[P256_PUBLIC_LEN];
	struct p256_table *t = table_new();
	rnd_scalar(d);
	assert_int_equal(p256_public_from_private(pub, d), 0);
	do
		rnd_scalar(d2);
	while (memcmp(d, d2, 32) == 0);
	assert_int_equal(p256_public_from_private(pub2, d2), 0);

	double t0 = now_s();
	assert_int_equal(p256_table_build(t, pub), 0);
	double build_us = (now_s() - t0) * 1e6;
	accel_trust_p256_clear();
	t0 = now_s();
	assert_int_equal(accel_trust_p256_key(pub), 0);
	double reg_us = (now_s() - t0) * 1e6;
	assert_true(accel_p256_key_trusted(pub));
	assert_false(accel_p256_key_trusted(pub2));

	unsigned n_valid = 0;
	t0 = now_s();
	for (unsigned i = 0; i < n; i++)
		n_valid += table_case(t, d, pub, i);
	printf("# table differential: %u cases (%u valid), table = window = driver = mbedTLS, %.2f s\n",
	       n, n_valid, now_s() - t0);

	/* The key not registered: the driver takes the window path (and agrees). The table
	 * built for pub says no to pub2's signatures: it is pub's alone. */
	unsigned n2 = n / 10 ? n / 10 : 1, n2_valid = 0;
	for (unsigned i = 0; i < n2; i++) {
		uint8_t k[32], dg[32], sig[64];
		rnd_scalar(k);
		rnd_bytes(dg, sizeof dg);
		assert_int_equal(p256_sign_digest(sig, d2, dg, sizeof dg, k), 0);
		if (i % 2)
			sig[rnd64() % 64] ^= (uint8_t)(1u << (rnd64() % 8));
		bool v = check_verify(pub2, dg, sizeof dg, sig);
		assert_true(driver_verify(pub2, dg, sizeof dg, sig) == v);
		assert_int_equal(p256_verify_digest_table(t, dg, sizeof dg, sig), -1);
		n2_valid += v;
	}
	printf("# unregistered key: %u cases (%u valid), driver = window = mbedTLS\n", n2, n2_valid);

	/* Information: the cost of one valid verification by each path. */
	uint8_t k[32], dg[32], sig[64];
	rnd_scalar(k);
	rnd_bytes(dg, sizeof dg);
	assert_int_equal(p256_sign_digest(sig, d, dg, sizeof dg, k), 0);
	unsigned reps = 2000;
	double us_tab = table_time_us(t, pub, dg, sig, 0, reps);
	double us_var = table_time_us(t, pub, dg, sig, 1, reps);
	double us_drv = table_time_us(t, pub, dg, sig, 2, reps);
	accel_trust_p256_clear();
	double us_drv_off = table_time_us(t, pub, dg, sig, 2, reps);
	printf("# verify us (this build's flags): table %.1f, window %.1f; driver registered %.1f, "
	       "not %.1f; table build %.0f us (registration %.0f us)\n",
	       us_tab, us_var, us_drv, us_drv_off, build_us, reg_us);
	free(t);
}

/* ---- malformed inputs at random, against mbedTLS (issue 22 item 6) ----
 * Each case one input of class case % 8, and both implementations' verdicts on it:
 *   0  0x04 || random X || random Y (off the curve)
 *   1  a valid point with one bit of X or Y flipped
 *   2  a valid point under another encoding: a prefix other than 0x04 (65 bytes), compressed
 *      (33), bare X || Y (64), one byte more (66)
 *   3  a valid point whose x < 2^256 - p is written as x + p (non-canonical)
 *   4  a valid point with X or Y replaced by a value in [p, 2^256)
 *   5  the point at infinity: 65 zero bytes, 0x04 and zeros, (0, random y), the single byte 0x00
 *   6  a valid key's signature with r or s made 0, n, n + small, p, all ones or >= n at random
 *   7  private keys 0, n + small, p, all ones or >= n at random
 * A public key (65 bytes) is judged by p256_check_public and by mbedTLS's read + check_pubkey;
 * a refused one is refused by ECDH on both sides (our output untouched) and by verification on
 * both. The PSA entry points answer NOT_SUPPORTED for an encoding other than 0x04 || X || Y
 * (mbedTLS's built-in code then decides: psa_driver.c, invariant 2) and INVALID_ARGUMENT for
 * a refused one; INVALID_SIGNATURE for a bad signature. */

static uint8_t p_be[32];

/* out = a + b, big-endian 32 bytes; returns the carry. */
static unsigned be_add(uint8_t out[32], const uint8_t a[32], const uint8_t b[32])
{
	unsigned carry = 0;
	for (int i = 31; i >= 0; i--) {
		unsigned v = (unsigned)a[i] + b[i] + carry;
		out[i] = (uint8_t)v;
		carry = v >> 8;
	}
	return carry;
}

/* mbedTLS's verdict on an encoding of any length (its reader takes 0x00 alone, compressed and
 * uncompressed points). */
static int ref_check_public_len(const uint8_t *pub, size_t len)
{
	mbedtls_ecp_point q;
	mbedtls_ecp_point_init(&q);
	int rc = mbedtls_ecp_point_read_binary(&grp, &q, pub, len) == 0 &&
			 mbedtls_ecp_check_pubkey(&grp, &q) == 0 ? 0 : -1;
	mbedtls_ecp_point_free(&q);
	return rc;
}

/* The point with this x (big-endian, < p) through mbedTLS's bignums; false when x^3 - 3x + b
 * is not a square mod p. */
static bool ref_lift_x(uint8_t pub[P256_PUBLIC_LEN], const uint8_t x[32])
{
	mbedtls_mpi X, T, E, Y, W;
	mbedtls_mpi *all[] = { &X, &T, &E, &Y, &W };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mbedtls_mpi_init(all[i]);
	assert_int_equal(mbedtls_mpi_read_binary(&X, x, 32), 0);
	assert_int_equal(mbedtls_mpi_mul_mpi(&T, &X, &X), 0);
	assert_int_equal(mbedtls_mpi_sub_int(&T, &T, 3), 0);
	assert_int_equal(mbedtls_mpi_mul_mpi(&T, &T, &X), 0);
	assert_int_equal(mbedtls_mpi_add_mpi(&T, &T, &grp.B), 0);
	assert_int_equal(mbedtls_mpi_mod_mpi(&T, &T, &grp.P), 0);
	assert_int_equal(mbedtls_mpi_add_int(&E, &grp.P, 1), 0); /* sqrt = ^((p + 1) / 4) */
	assert_int_equal(mbedtls_mpi_shift_r(&E, 2), 0);
	assert_int_equal(mbedtls_mpi_exp_mod(&Y, &T, &E, &grp.P, NULL), 0);
	assert_int_equal(mbedtls_mpi_mul_mpi(&W, &Y, &Y), 0);
	assert_int_equal(mbedtls_mpi_mod_mpi(&W, &W, &grp.P), 0);
	bool ok = mbedtls_mpi_cmp_mpi(&W, &T) == 0;
	if (ok) {
		pub[0] = 0x04;
		memcpy(pub + 1, x, 32);
		assert_int_equal(mbedtls_mpi_write_binary(&Y, pub + 33, 32), 0);
	}
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mbedtls_mpi_free(all[i]);
	return ok;
}

static psa_key_attributes_t psa_p256_attrs(bool pair)
{
	psa_key_attributes_t a = PSA_KEY_ATTRIBUTES_INIT;
	psa_set_key_type(&a, pair ? PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_SECP_R1)
				  : PSA_KEY_TYPE_ECC_PUBLIC_KEY(PSA_ECC_FAMILY_SECP_R1));
	psa_set_key_bits(&a, 256);
	return a;
}

static void malformed_fail(const char *what, const uint8_t *in, size_t len)
{
	printf("# malformed input (%s), seed %llu\n", what, (unsigned long long)seed);
	print_hex("input", in, len);
	fail();
}

/* A malformed encoding: both verdicts, then, when refused, ECDH and verification with it on
 * both sides and the PSA entry points. Returns whether mbedTLS took it (a random one may be a
 * point after all: then nothing more is asked of it here). */
static bool malformed_public(const uint8_t *pub, size_t len, const uint8_t d[32])
{
	bool ref_ok = ref_check_public_len(pub, len) == 0;
	if (len == P256_PUBLIC_LEN) {
		if ((p256_check_public(pub) == 0) != ref_ok)
			malformed_fail(ref_ok ? "mbedTLS takes it, we do not" : "we take it, mbedTLS does not", pub, len);
		if (ref_ok)
			return true;
		uint8_t x[32], dg[32], sig[64];
		memset(x, 0xa5, sizeof x);
		if (p256_ecdh(x, d, pub) != -1)
			malformed_fail("ecdh with it did not fail", pub, len);
		for (size_t j = 0; j < sizeof x; j++)
			if (x[j] != 0xa5)
				malformed_fail("ecdh wrote its output", pub, len);
		if (ref_ecdh(x, d, pub) != -1)
			malformed_fail("mbedTLS's ECDH took it", pub, len);
		rnd_bytes(dg, sizeof dg);
		rnd_scalar(sig);
		rnd_scalar(sig + 32);
		if (p256_verify_digest(pub, dg, sizeof dg, sig) != -1 || ref_verify(pub, dg, sizeof dg, sig) != -1)
			malformed_fail("a verification under it did not fail", pub, len);
	}
	psa_status_t want = len == P256_PUBLIC_LEN && pub[0] == 0x04 ? PSA_ERROR_INVALID_ARGUMENT
								  : PSA_ERROR_NOT_SUPPORTED;
	psa_key_attributes_t pair = psa_p256_attrs(true), pubkey = psa_p256_attrs(false);
	uint8_t out[32], dg[32] = { 1 }, sig[64] = { 1 };
	size_t olen = 0;
	sig[32] = 1;
	if (urmqtt_accel_key_agreement(&pair, d, 32, PSA_ALG_ECDH, pub, len, out, sizeof out, &olen) != want)
		malformed_fail("PSA key agreement's answer", pub, len);
	if (urmqtt_accel_verify_hash(&pubkey, pub, len, PSA_ALG_ECDSA(PSA_ALG_SHA_256), dg, sizeof dg,
				     sig, sizeof sig) != want)
		malformed_fail("PSA verify's answer", pub, len);
	return ref_ok;
}

/* A signature of a valid key with r or s out of [1, n - 1]: refused by both, and by PSA. */
static void malformed_signature(const uint8_t d[32], const uint8_t pub[P256_PUBLIC_LEN])
{
	uint8_t k[32], dg[32], sig[64];
	rnd_scalar(k);
	rnd_bytes(dg, sizeof dg);
	assert_int_equal(p256_sign_digest(sig, d, dg, sizeof dg, k), 0);
	uint8_t *part = sig + (rnd64() % 2 ? 32 : 0);
	switch (rnd64() % 6) {
	case 0:
		memset(part, 0, 32);
		break;
	case 1:
		memcpy(part, n_be, 32);
		break;
	case 2: /* n + v, v in 1..0xae: no carry out of n's last byte 0x51 */
		memcpy(part, n_be, 32);
		part[31] = (uint8_t)(part[31] + 1 + rnd64() % 0xae);
		break;
	case 3:
		memcpy(part, p_be, 32);
		break;
	case 4:
		memset(part, 0xff, 32);
		break;
	default: /* >= n: the top 64 bits all ones exceed n's ffffffff00000000 */
		rnd_bytes(part, 32);
		memset(part, 0xff, 8);
		break;
	}
	psa_key_attributes_t a = psa_p256_attrs(false);
	if (p256_verify_digest(pub, dg, sizeof dg, sig) != -1 || ref_verify(pub, dg, sizeof dg, sig) != -1 ||
	    urmqtt_accel_verify_hash(&a, pub, P256_PUBLIC_LEN, PSA_ALG_ECDSA(PSA_ALG_SHA_256), dg, sizeof dg,
				     sig, sizeof sig) != PSA_ERROR_INVALID_SIGNATURE)
		malformed_fail("signature with r or s out of range", sig, sizeof sig);
}

/* A private key out of [1, n - 1]: refused by both, by every operation (outputs untouched),
 * and by PSA. */
static void malformed_private(const uint8_t peer[P256_PUBLIC_LEN])
{
	uint8_t s[32], pub[P256_PUBLIC_LEN], x[32], sig[64], k[32], dg[32] = { 3 };
	switch (rnd64() % 5) {
	case 0:
		memset(s, 0, 32);
		break;
	case 1: /* n + v, v in 0..0xae */
		memcpy(s, n_be, 32);
		s[31] = (uint8_t)(s[31] + rnd64() % 0xaf);
		break;
	case 2:
		memcpy(s, p_be, 32);
		break;
	case 3:
		memset(s, 0xff, 32);
		break;
	default:
		rnd_bytes(s, 32);
		memset(s, 0xff, 8);
		break;
	}
	rnd_scalar(k);
	memset(pub, 0xa5, sizeof pub);
	memset(x, 0xa5, sizeof x);
	memset(sig, 0xa5, sizeof sig);
	bool refused = p256_check_private(s) == -1 && ref_check_private(s) == -1 &&
		       p256_public_from_private(pub, s) == -1 && p256_ecdh(x, s, peer) == -1 &&
		       p256_sign_digest(sig, s, dg, sizeof dg, k) == -1 && ref_ecdh(x, s, peer) == -1;
	for (size_t j = 0; j < sizeof pub; j++)
		refused = refused && pub[j] == 0xa5;
	for (size_t j = 0; j < sizeof x; j++)
		refused = refused && x[j] == 0xa5;
	for (size_t j = 0; j < sizeof sig; j++)
		refused = refused && sig[j] == 0xa5;
	psa_key_attributes_t pair = psa_p256_attrs(true);
	size_t olen = 0;
	refused = refused && urmqtt_accel_key_agreement(&pair, s, 32, PSA_ALG_ECDH, peer, P256_PUBLIC_LEN,
							 x, sizeof x, &olen) == PSA_ERROR_INVALID_ARGUMENT;
	refused = refused && urmqtt_accel_export_public_key(&pair, s, 32, pub, sizeof pub, &olen) ==
				     PSA_ERROR_INVALID_ARGUMENT;
	if (!refused)
		malformed_fail("private key out of range", s, 32);
}

static void diff_malformed(unsigned n)
{
	static const uint8_t prefixes[] = { 0x00, 0x01, 0x02, 0x03, 0x05, 0x06, 0x07, 0x14, 0x44, 0x84, 0xff };
	unsigned n_class[8] = { 0 }, n_taken = 0, n_compressed = 0;
	uint8_t d[32], pub[P256_PUBLIC_LEN], buf[P256_PUBLIC_LEN + 1];
	for (unsigned i = 0; i < n; i++) {
		unsigned cls = i % 8;
		rnd_scalar(d);
		assert_int_equal(p256_public_from_private(pub, d), 0);
		size_t len = P256_PUBLIC_LEN;
		memcpy(buf, pub, P256_PUBLIC_LEN);
		switch (cls) {
		case 0:
			rnd_bytes(buf + 1, 64);
			break;
		case 1: {
			unsigned bit = (unsigned)(rnd64() % 512);
			buf[1 + bit / 8] ^= (uint8_t)(1u << (bit % 8));
			break;
		}
		case 2:
			switch (rnd64() % 4) {
			case 0:
				buf[0] = prefixes[rnd64() % sizeof prefixes];
				break;
			case 1: /* compressed: 02/03 by the parity of y */
				buf[0] = (uint8_t)(0x02 | (pub[64] & 1));
				len = 33;
				n_compressed++;
				break;
			case 2:
				memmove(buf, pub + 1, 64);
				len = 64;
				break;
			default:
				buf[65] = (uint8_t)rnd64();
				len = 66;
				break;
			}
			break;
		case 3: { /* x < 2^223 (below 2^256 - p) on the curve, written as x + p */
			uint8_t x[32];
			do {
				rnd_bytes(x, sizeof x);
				memset(x, 0, 4);
				x[4] &= 0x7f;
			} while (!ref_lift_x(buf, x));
			if (p256_check_public(buf) != 0)
				malformed_fail("the canonical point is refused", buf, P256_PUBLIC_LEN);
			assert_int_equal(be_add(buf + 1, buf + 1, p_be), 0);
			break;
		}
		case 4: { /* p + r, r < 2^216 */
			uint8_t r[32] = { 0 };
			rnd_bytes(r + 5, 27);
			assert_int_equal(be_add(buf + (rnd64() % 2 ? 33 : 1), p_be, r), 0);
			break;
		}
		case 5:
			switch (rnd64() % 4) {
			case 0:
				memset(buf, 0, P256_PUBLIC_LEN);
				break;
			case 1:
				memset(buf + 1, 0, 64);
				break;
			case 2:
				memset(buf + 1, 0, 32);
				rnd_bytes(buf + 33, 32);
				break;
			default:
				buf[0] = 0x00;
				len = 1;
				break;
			}
			break;
		case 6:
			malformed_signature(d, pub);
			break;
		default:
			malformed_private(pub);
			break;
		}
		if (cls <= 5)
			n_taken += malformed_public(buf, len, d);
		n_class[cls]++;
	}
	printf("#   per class: %u %u %u %u %u %u %u %u; mbedTLS took %u keys, the %u compressed ones\n",
	       n_class[0], n_class[1], n_class[2], n_class[3], n_class[4], n_class[5], n_class[6],
	       n_class[7], n_taken, n_compressed);
	/* Nothing else: a random encoding is a point with negligible probability. */
	assert_int_equal(n_taken, n_compressed);
}

static void test_diff_malformed(void **state)
{
	(void)state;
	hex32(p_be, HEX_P);
	run_timed("malformed inputs", diff_malformed, iters);
}

/* ---- CAVP: FIPS 186-2's P-256 sets (SHA-1) ---- */

#define CAVP_ECDSA_186_2 CAVP_DIR "ECDSA/FIPS_186-2/"

static void test_cavp_186_2(void **state)
{
	(void)state;
	struct cavp c = { H_SHA1, 0, 0, 0 };
	unsigned n = rsp_each(CAVP_ECDSA_186_2 "SigVer.rsp", "P-256", on_sigver, &c);
	printf("# 186-2 SigVer [P-256]: %u vectors, %u valid, %u invalid\n", n, c.pass, c.fail);
	assert_true(n >= 15 && c.pass > 0 && c.fail > 0);
	c = (struct cavp){ H_SHA1, 0, 0, 0 };
	n = rsp_each(CAVP_ECDSA_186_2 "SigGen.rsp", "P-256", on_siggen, &c);
	printf("# 186-2 SigGen.rsp [P-256]: %u signatures verified\n", n);
	assert_true(n >= 10);
	c = (struct cavp){ H_SHA1, 0, 0, 0 };
	n = rsp_each(CAVP_ECDSA_186_2 "SigGen.txt", "P-256", on_siggen, &c);
	printf("# 186-2 SigGen.txt [P-256]: %u signatures verified, %u made again from d and k\n", n, c.made);
	assert_true(n >= 10 && c.made == n);
	c = (struct cavp){ H_SHA1, 0, 0, 0 };
	n = rsp_each(CAVP_ECDSA_186_2 "KeyPair.rsp", "P-256", on_keypair, &c);
	printf("# 186-2 KeyPair [P-256]: %u key pairs\n", n);
	assert_true(n >= 10);
	c = (struct cavp){ H_SHA1, 0, 0, 0 };
	n = rsp_each(CAVP_ECDSA_186_2 "PKV.rsp", "P-256", on_pkv, &c);
	printf("# 186-2 PKV [P-256]: %u public keys, %u valid, %u invalid\n", n, c.pass, c.fail);
	assert_true(n >= 10 && c.pass > 0 && c.fail > 0);
}

/* ---- CAVP: Z of the KAS ECC KDFConcat validity files (P-256) ----
 * Their records fail for reasons of the key derivation and MAC too (9-12: DKM, OI, MacData,
 * tag changed), which do not touch Z: each record's reason says what must hold of the keys and
 * of Z. Both ECDH directions and mbedTLS's must agree. */
static bool on_ecdh_z(const struct rsp_rec *r, void *vctx)
{
	struct cavp *c = vctx;
	struct kas_rec k;
	uint8_t z1[32], z2[32], zr[32];
	if (!kas_read(r, &k))
		return false;
	const char *res = k.res;
	bool valid_c = k.valid_c, valid_i = k.valid_i, pub_c = k.pub_c, pub_i = k.pub_i;
	bool agree = (!k.enc_c || (ref_check_public(k.qc) == 0) == valid_c) &&
		     (!k.enc_i || (ref_check_public(k.qi) == 0) == valid_i);
	bool z_same = false, z_file = false;
	if (valid_c && valid_i && pub_c && pub_i) {
		assert_int_equal(p256_ecdh(z1, k.di, k.qc), 0);
		assert_int_equal(p256_ecdh(z2, k.dc, k.qi), 0);
		assert_int_equal(ref_ecdh(zr, k.di, k.qc), 0);
		agree = agree && memcmp(zr, z1, 32) == 0;
		z_same = memcmp(z1, z2, 32) == 0;
		z_file = memcmp(z1, k.z, 32) == 0;
	}
	long reason = strtol(res + 3, NULL, 10);
	bool good;
	switch (reason) {
	case 1:
	case 2:
		good = !valid_c;
		break;
	case 5:
	case 6:
		good = !valid_i;
		break;
	case 7: /* the IUT's private key changed: it is not the public key's */
		good = valid_c && valid_i && !pub_i;
		break;
	case 8:
		good = z_same && !z_file;
		break;
	default: /* 0 and 13, 14 (P); 9-12: the derivation or MAC, not Z */
		good = z_same && z_file;
		break;
	}
	if (!good || !agree || (res[0] == 'P') != (reason == 0 || reason >= 13)) {
		printf("# KAS KDFConcat [%s] COUNT = %s, %s: keys valid %d/%d, theirs %d/%d, Z both ways %d, "
		       "the file's %d, mbedTLS agrees %d\n", r->section, rsp_get(r, "COUNT") ? rsp_get(r, "COUNT") : "?",
		       res, valid_c, valid_i, pub_c, pub_i, z_same, z_file, agree);
		fail();
	}
	res[0] == 'P' ? c->pass++ : c->fail++;
	return true;
}

static void test_cavp_ecdh_kdf(void **state)
{
	(void)state;
	static const char *files[] = {
		CAVP_ECDH "KASValidityTest_ECCStaticUnified_KDFConcat_NOKC_init.fax",
		CAVP_ECDH "KASValidityTest_ECCStaticUnified_KDFConcat_NOKC_resp.fax",
	};
	static const char *sections[] = { "EC - SHA256", "EC - SHA384", "EC - SHA512" };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		for (size_t j = 0; j < sizeof sections / sizeof sections[0]; j++) {
			struct cavp c = { H_SHA256, 0, 0, 0 };
			unsigned n = rsp_each(files[i], sections[j], on_ecdh_z, &c);
			printf("# KAS KDFConcat %s [%s, P-256]: %u vectors, %u pass, %u fail (Z checked)\n",
			       strrchr(files[i], '_') + 1, sections[j], n, c.pass, c.fail);
			assert_true(n >= 20 && c.pass > 0 && c.fail > 0);
		}
	}
}

/* A count or seed from the environment: decimal digits only, else the run stops (exit 2)
 * rather than run another number of cases than asked under the same test names. */
static bool env_number(const char *name, unsigned long long min, unsigned long long max,
	unsigned long long *out /* out */)
{
	const char *e = getenv(name);
	char *end;
	if (!e)
		return false;
	unsigned long long v = strtoull(e, &end, 10);
	if (*e < '0' || *e > '9' || *end || v < min || v > max) {
		printf("Bail out! %s=%s: not a decimal number in [%llu, %llu]\n", name, e, min, max);
		exit(2);
	}
	*out = v;
	return true;
}

int main(void)
{
	unsigned long long v;
	iters = env_number("URMQTT_P256_ITERS", 1, 100000000, &v) ? (unsigned)v : ITERS_DEFAULT;
	seed = env_number("URMQTT_P256_SEED", 0, UINT64_MAX, &v) ? v : (uint64_t)time(NULL);
	rng_state = seed;
	hex32(n_be, HEX_N);
	accel_cpu_init();
	printf("# p256: %s; seed %llu, %u random cases per operation (URMQTT_P256_SEED, URMQTT_P256_ITERS)\n",
	       accel_cpu_describe(), (unsigned long long)seed, iters);

	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reject_private, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reject_public, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reject_signature, setup, teardown),
		cmocka_unit_test_setup_teardown(test_edge_scalars, setup, teardown),
		cmocka_unit_test_setup_teardown(test_verify_x_above_n, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hash_selftest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cavp_sigver, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cavp_siggen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cavp_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cavp_ecdh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cavp_186_2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cavp_ecdh_kdf, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diff_public, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diff_ecdh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diff_sign, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diff_verify, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diff_baseline_isa, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diff_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_generator, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_registry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_differential, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
