/* SPDX-License-Identifier: MIT
 * Unit tests for tls/accel/x25519: RFC 7748's vectors read at run time from pyca's
 * cryptography_vectors (the test fails if the file is missing), the iterated test (1 and
 * 1,000 iterations, 1,000,000 with X25519_TEST_ITER_1M=1) checked step by step against
 * mbedTLS's own Curve25519 (MBEDTLS_ECP_DP_CURVE25519), a differential test of random scalars
 * and u-coordinates against mbedTLS for both operations (X25519_TEST_N pairs, default
 * 4,000 under ASan in make test, which also runs an -O2 build with 100,000: tls/accel/module.mk),
 * small-order points (-1 and an all-zero output; also at random with random scalars,
 * X25519_TEST_N / 8 cases: section 8), non-canonical u (>= p), the
 * ignored high bit of u and the scalar bits clamping discards, outputs aliasing inputs, and
 * the field arithmetic alone on edge values (canonical encoding, carries) against mbedTLS's
 * bignums. The fixed-base public key against the ladder's X25519(k, 9) (X25519_TEST_BASE_N
 * random scalars, default 10,000, and edge scalars: section 6) and the wider add/sub bounds it
 * relies on (section 7).
 * Every test runs on every arithmetic linked in (see "the arithmetics to run" below): on an
 * x86_64 host fe64 MULX/ADX (when the CPU has it), fe51 and the portable C. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"
#include "tls/accel/fe25519.h"
#include "tls/accel/x25519.h"
#include "tests/support/splitmix.h"

#include "mbedtls/bignum.h"
#include "mbedtls/ecp.h"
#include "mbedtls/platform.h"

#define VECTORS_DEFAULT "/usr/lib/python3/dist-packages/cryptography_vectors/asymmetric/X25519/rfc7748.txt"

/* ---- the arithmetics to run ----
 * The build links tls/accel/x25519.c twice: once with the architecture's fe25519 file (the
 * public names), and once with fe25519_generic.c, renamed to x25519_generic_* and
 * fe25519_generic_ops_get (tls/accel/module.mk: ld -r, then objcopy --redefine-sym), so the
 * portable C is checked against the same mbedTLS results in the same run. The paths are the
 * distinct arithmetics among: the architecture's with and without its optional instructions
 * (accel_cpu_use_optional), and the portable copy. */

int x25519_generic_scalarmult(uint8_t out[X25519_LEN], const uint8_t scalar[X25519_LEN],
	const uint8_t u[X25519_LEN]);
void x25519_generic_public_from_private(uint8_t pub[X25519_LEN], const uint8_t priv[X25519_LEN]);
const struct fe25519_ops *fe25519_generic_ops_get(void);

struct path {
	const char *name;
	bool optional; /* accel_cpu_use_optional(optional) before each use */
	const struct fe25519_ops *(*ops_get)(void);
	int (*scalarmult)(uint8_t out[X25519_LEN], const uint8_t scalar[X25519_LEN],
		const uint8_t u[X25519_LEN]);
	void (*public_from_private)(uint8_t pub[X25519_LEN], const uint8_t priv[X25519_LEN]);
};
static struct path paths[3];
static size_t n_paths;

/* Selects p's arithmetic and checks it is the one that will run. */
static const struct path *path_use(const struct path *p)
{
	accel_cpu_use_optional(p->optional);
	assert_string_equal(p->ops_get()->name, p->name);
	return p;
}

static void path_add(struct path p)
{
	p.name = p.ops_get()->name;
	for (size_t i = 0; i < n_paths; i++)
		if (strcmp(paths[i].name, p.name) == 0)
			return;
	paths[n_paths++] = p;
}

static void paths_find(void)
{
	accel_cpu_init();
	n_paths = 0;
	for (int on = 1; on >= 0; on--) {
		accel_cpu_use_optional(on);
		path_add((struct path){ .optional = on, .ops_get = fe25519_ops_get,
			.scalarmult = x25519_scalarmult,
			.public_from_private = x25519_public_from_private });
	}
	path_add((struct path){ .optional = true, .ops_get = fe25519_generic_ops_get,
		.scalarmult = x25519_generic_scalarmult,
		.public_from_private = x25519_generic_public_from_private });
	accel_cpu_use_optional(true);
	for (size_t i = 0; i < n_paths; i++)
		print_message("[ x25519   ] path %zu: %s\n", i, paths[i].name);
}

/* ---- deterministic randomness (splitmix64), seed from X25519_TEST_SEED ---- */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	return splitmix64(&rng_state);
}

static void rng_bytes(uint8_t *out, size_t len)
{
	splitmix64_bytes(&rng_state, out, len);
}

/* mbedTLS's ladder randomises its projective coordinates; any bytes will do. A stream of its
 * own, so the test's inputs do not depend on how much mbedTLS draws. */
static int mbed_rng(void *ctx, unsigned char *out, size_t len)
{
	(void)ctx;
	static uint64_t x = 0x2545f4914f6cdd1dull;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		out[i] = (unsigned char)x;
	}
	return 0;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *e = getenv(name);
	return e && *e ? strtoull(e, NULL, 0) : dflt;
}

/* ---- the reference: mbedTLS's Curve25519 through its ecp module ---- */

static mbedtls_ecp_group grp;

/* MBEDTLS_PLATFORM_MEMORY without a default: mbedTLS allocates only through what it is given
 * (tls/handshake.c gives it the node's heap); here libc's, so ASan sees every allocation. */
static void *mbed_calloc(size_t n, size_t size)
{
	return calloc(n, size);
}

static int group_setup(void **state)
{
	(void)state;
	assert_int_equal(mbedtls_platform_set_calloc_free(mbed_calloc, free), 0);
	mbedtls_ecp_group_init(&grp);
	assert_int_equal(mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_CURVE25519), 0);
	paths_find();
	rng_state = env_u64("X25519_TEST_SEED", 0x5eed25519ull);
	print_message("[ x25519   ] X25519_TEST_SEED=%#llx\n", (unsigned long long)rng_state);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	mbedtls_ecp_group_free(&grp);
	accel_cpu_use_optional(true);
	return 0;
}

static void clamp(uint8_t k[32])
{
	k[0] &= 248;
	k[31] &= 127;
	k[31] |= 64;
}

/* out = X25519(scalar, u) by mbedTLS (u NULL: the base point). Returns mbedTLS's error: it
 * refuses small-order u before multiplying. */
static int ref_x25519(uint8_t out[32], const uint8_t scalar[32], const uint8_t *u)
{
	uint8_t k[32];
	memcpy(k, scalar, 32);
	clamp(k);
	mbedtls_mpi d;
	mbedtls_ecp_point P, R;
	mbedtls_mpi_init(&d);
	mbedtls_ecp_point_init(&P);
	mbedtls_ecp_point_init(&R);
	int rc = mbedtls_mpi_read_binary_le(&d, k, 32);
	if (rc == 0 && u)
		rc = mbedtls_ecp_point_read_binary(&grp, &P, u, 32); /* masks bit 255 */
	if (rc == 0)
		rc = mbedtls_ecp_mul(&grp, &R, &d, u ? &P : &grp.G, mbed_rng, NULL);
	size_t olen = 0;
	if (rc == 0)
		rc = mbedtls_ecp_point_write_binary(&grp, &R, MBEDTLS_ECP_PF_UNCOMPRESSED, &olen, out, 32);
	if (rc == 0)
		assert_int_equal(olen, 32);
	mbedtls_mpi_free(&d);
	mbedtls_ecp_point_free(&P);
	mbedtls_ecp_point_free(&R);
	return rc;
}

static bool all_zero(const uint8_t *b, size_t len)
{
	uint8_t acc = 0;
	for (size_t i = 0; i < len; i++)
		acc |= b[i];
	return acc == 0;
}

static void hex32(char out[65], const uint8_t b[32])
{
	for (size_t i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void assert_same(const uint8_t got[32], const uint8_t want[32], const char *what,
	const struct path *p, unsigned long long idx)
{
	if (memcmp(got, want, 32) == 0)
		return;
	char g[65], w[65];
	hex32(g, got);
	hex32(w, want);
	fail_msg("%s #%llu on %s:\n  got  %s\n  want %s", what, idx, p->name, g, w);
}

/* p = 2^255 - 19, little-endian, and p + r for small r. */
static void p_plus(uint8_t out[32], unsigned r)
{
	memset(out, 0xff, 32);
	out[31] = 0x7f;
	out[0] = (uint8_t)(0xed + r); /* r <= 18: 0xed + 18 = 0xff, no carry */
}

/* ---- 1. RFC 7748 section 5.2's vectors, from the file ---- */

static bool parse_hex32(const char *s, uint8_t out[32])
{
	for (size_t i = 0; i < 32; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return false;
		out[i] = (uint8_t)v;
	}
	return true;
}

struct vector {
	uint8_t scalar[32], u[32], out[32];
};

/* Reads every COUNT block; fails the test (never skips) when the file cannot be read. */
static size_t vectors_load(struct vector *v, size_t max)
{
	const char *path = getenv("X25519_RFC7748_VECTORS");
	if (!path || !*path)
		path = VECTORS_DEFAULT;
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("RFC 7748 vector file %s cannot be read (install python3-cryptography-vectors "
			 "or set X25519_RFC7748_VECTORS)", path);
	char line[256];
	size_t n = 0;
	unsigned have = 0;
	while (fgets(line, sizeof line, f)) {
		const char *eq = strstr(line, " = ");
		if (!eq)
			continue;
		uint8_t *dst = NULL;
		unsigned bit = 0;
		if (strncmp(line, "INPUT_SCALAR", 12) == 0)
			dst = v[n].scalar, bit = 1;
		else if (strncmp(line, "INPUT_U", 7) == 0)
			dst = v[n].u, bit = 2;
		else if (strncmp(line, "OUTPUT_U", 8) == 0)
			dst = v[n].out, bit = 4;
		if (!dst)
			continue;
		if (!parse_hex32(eq + 3, dst))
			fail_msg("%s: bad hex: %s", path, line);
		have |= bit;
		if (have == 7) {
			have = 0;
			if (++n == max)
				break;
		}
	}
	fclose(f);
	if (n == 0)
		fail_msg("%s: no vectors", path);
	return n;
}

static void test_rfc7748_vectors(void **state)
{
	(void)state;
	struct vector v[16];
	size_t n = vectors_load(v, 16);
	for (size_t pi = 0; pi < n_paths; pi++) {
		const struct path *p = path_use(&paths[pi]);
		for (size_t i = 0; i < n; i++) {
			uint8_t out[32];
			assert_int_equal(p->scalarmult(out, v[i].scalar, v[i].u), 0);
			assert_same(out, v[i].out, "RFC 7748 vector", &paths[pi], i + 1);
		}
	}
	print_message("[ x25519   ] %zu RFC 7748 vectors on %zu paths\n", n, n_paths);
}

/* ---- 2. the iterated test, against mbedTLS step by step ---- */

/* k = u = 9; each step k, u = X25519(k, u), k. Ours on every path and mbedTLS side by side;
 * the 1-iteration value must also be the file's vector with scalar 9 and u 9. */
static void iterate(unsigned long long n)
{
	uint8_t ref_k[32] = { 9 }, ref_u[32] = { 9 }, k[3][32], u[3][32];
	for (size_t pi = 0; pi < n_paths; pi++) {
		memset(k[pi], 0, 32), k[pi][0] = 9;
		memset(u[pi], 0, 32), u[pi][0] = 9;
	}
	for (unsigned long long i = 1; i <= n; i++) {
		uint8_t r[32];
		assert_int_equal(ref_x25519(r, ref_k, ref_u), 0);
		memcpy(ref_u, ref_k, 32);
		memcpy(ref_k, r, 32);
		for (size_t pi = 0; pi < n_paths; pi++) {
			const struct path *p = path_use(&paths[pi]);
			assert_int_equal(p->scalarmult(r, k[pi], u[pi]), 0);
			memcpy(u[pi], k[pi], 32);
			memcpy(k[pi], r, 32);
			assert_same(k[pi], ref_k, "iteration", &paths[pi], i);
		}
		if (i == 1) {
			struct vector v[16];
			size_t nv = vectors_load(v, 16);
			const uint8_t nine[32] = { 9 };
			bool found = false;
			for (size_t j = 0; j < nv; j++)
				if (!memcmp(v[j].scalar, nine, 32) && !memcmp(v[j].u, nine, 32)) {
					assert_same(ref_k, v[j].out, "mbedTLS iteration 1 vs file", &paths[0], 1);
					found = true;
				}
			assert_true(found);
		}
		if (i == 1 || i == 1000 || i == 1000000) {
			char h[65];
			hex32(h, ref_k);
			print_message("[ x25519   ] after %llu iterations: %s\n", i, h);
		}
	}
}

static void test_rfc7748_iterated(void **state)
{
	(void)state;
	iterate(env_u64("X25519_TEST_ITER_1M", 0) ? 1000000 : 1000);
}

/* ---- 3. differential against mbedTLS ---- */

static void test_differential(void **state)
{
	(void)state;
	uint64_t n = env_u64("X25519_TEST_N", 4000);
	uint64_t noncanonical = 0, high_bit = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint8_t s[32], u[32], want[32], got[32];
		rng_bytes(s, 32);
		rng_bytes(u, 32);
		if (i % 64 == 7) { /* a u in [p, 2^255): rare at random */
			p_plus(u, 2 + (unsigned)(rng_next() % 17)); /* p, p + 1: small order */
			u[31] |= (uint8_t)(rng_next() & 0x80);
			noncanonical++;
		}
		high_bit += u[31] >> 7;
		assert_int_equal(ref_x25519(want, s, u), 0);
		for (size_t pi = 0; pi < n_paths; pi++) {
			const struct path *p = path_use(&paths[pi]);
			memset(got, 0xa5, 32);
			assert_int_equal(p->scalarmult(got, s, u), 0);
			assert_same(got, want, "scalarmult", &paths[pi], i);
		}
		assert_int_equal(ref_x25519(want, s, NULL), 0);
		for (size_t pi = 0; pi < n_paths; pi++) {
			const struct path *p = path_use(&paths[pi]);
			memset(got, 0xa5, 32);
			p->public_from_private(got, s);
			assert_same(got, want, "public_from_private", &paths[pi], i);
		}
	}
	print_message("[ x25519   ] %llu scalarmult and %llu public_from_private pairs vs mbedTLS on "
		      "%zu paths (%llu u >= p, %llu u with bit 255 set)\n",
		(unsigned long long)n, (unsigned long long)n, n_paths, (unsigned long long)noncanonical,
		(unsigned long long)high_bit);
}

/* ---- 4. small-order u, non-canonical u, high bits, aliasing ---- */

/* u-coordinates of the points of order 1, 2, 4 and 8 that have one: 0 (order 2), 1 and
 * p - 1 (order 4), and the two of order 8 (their doubles are 1 or p - 1; checked with Python
 * from the doubling formula). With p and p + 1, the non-canonical names of 0 and 1. */
static const uint8_t order8_a[32] = { 0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3,
				      0xfa, 0xf1, 0x9f, 0xc4, 0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32,
				      0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00 };
static const uint8_t order8_b[32] = { 0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1,
				      0x55, 0x9c, 0x83, 0xef, 0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c,
				      0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57 };

static void test_small_order(void **state)
{
	(void)state;
	uint8_t us[7][32] = { { 0 }, { 1 } };
	p_plus(us[2], 0), us[2][0] = 0xec; /* p - 1 */
	p_plus(us[3], 0);                   /* p */
	p_plus(us[4], 1);                   /* p + 1 */
	memcpy(us[5], order8_a, 32);
	memcpy(us[6], order8_b, 32);
	unsigned n = 0;
	for (size_t j = 0; j < 7; j++) {
		for (unsigned hb = 0; hb < 2; hb++) {
			uint8_t u[32];
			memcpy(u, us[j], 32);
			u[31] |= (uint8_t)(hb << 7);
			uint8_t s[32], out[32];
			rng_bytes(s, 32);
			assert_int_not_equal(ref_x25519(out, s, u), 0); /* mbedTLS refuses them too */
			for (size_t pi = 0; pi < n_paths; pi++) {
				const struct path *p = path_use(&paths[pi]);
				for (unsigned t = 0; t < 4; t++) {
					if (t == 1)
						memset(s, 0, 32);
					else if (t == 2)
						memset(s, 0xff, 32);
					else if (t == 3)
						rng_bytes(s, 32);
					memset(out, 0xa5, 32);
					if (p->scalarmult(out, s, u) != -1 || !all_zero(out, 32))
						fail_msg("small-order u #%zu (bit 255 %u) scalar %u on %s: not -1 "
							 "with a zero output", j, hb, t, paths[pi].name);
					n++;
				}
			}
		}
	}
	print_message("[ x25519   ] %u small-order cases gave -1 and zeros\n", n);
}

static void test_noncanonical_and_high_bits(void **state)
{
	(void)state;
	for (size_t pi = 0; pi < n_paths; pi++) {
		const struct path *p = path_use(&paths[pi]);
		for (unsigned r = 0; r <= 18; r++) {
			uint8_t s[32], big[32], small[32] = { 0 }, a[32], b[32], want[32];
			rng_bytes(s, 32);
			p_plus(big, r);
			small[0] = (uint8_t)r;
			int ra = p->scalarmult(a, s, big), rb = p->scalarmult(b, s, small);
			assert_int_equal(ra, rb);
			assert_same(a, b, "u = p + r vs r", &paths[pi], r);
			assert_int_equal(ra, r <= 1 ? -1 : 0);
			if (r > 1) {
				assert_int_equal(ref_x25519(want, s, big), 0);
				assert_same(a, want, "u = p + r vs mbedTLS", &paths[pi], r);
			}
			/* 2^255 - 1 (all ones) is p + 18; with bit 255 it is the same. */
			big[31] |= 0x80;
			assert_int_equal(p->scalarmult(b, s, big), ra);
			assert_same(b, a, "u = p + r with bit 255", &paths[pi], r);
		}
		for (unsigned i = 0; i < 64; i++) {
			uint8_t s[32], s2[32], u[32], a[32], b[32];
			rng_bytes(s, 32);
			rng_bytes(u, 32);
			u[31] &= 0x7f;
			assert_int_equal(p->scalarmult(a, s, u), 0);
			u[31] |= 0x80; /* bit 255 of u is ignored */
			assert_int_equal(p->scalarmult(b, s, u), 0);
			assert_same(b, a, "u bit 255", &paths[pi], i);
			/* clamping: bits 0-2 and 255 of the scalar are ignored, bit 254 is forced */
			memcpy(s2, s, 32);
			s2[0] ^= (uint8_t)(rng_next() & 7);
			s2[31] ^= 0x80;
			s2[31] ^= (uint8_t)(rng_next() & 0x40);
			assert_int_equal(p->scalarmult(b, s2, u), 0);
			assert_same(b, a, "clamped scalar bits", &paths[pi], i);
			/* out may alias u or the scalar */
			memcpy(b, u, 32);
			assert_int_equal(p->scalarmult(b, s, b), 0);
			assert_same(b, a, "out aliases u", &paths[pi], i);
			memcpy(b, s, 32);
			assert_int_equal(p->scalarmult(b, b, u), 0);
			assert_same(b, a, "out aliases the scalar", &paths[pi], i);
		}
	}
}

/* ---- 5. the field arithmetic alone, on edge values, against mbedTLS's bignums ----
 * Each operation within fe25519.h's bounds (add and sub on decoded values, mul, sqr and
 * mul121666 on their results), encoded canonically, must equal the residue mbedTLS computes.
 * The edge values are those where a missed carry or a non-canonical output would show: limbs
 * all ones (2^255 - 1 = p + 18), p and its neighbours, 2^51 boundaries, plus random ones. */

enum fop { F_ADD, F_SUB, F_MUL_SUMS, F_SQR_DIFF, F_MUL121666_DIFF, F_ID, F__N };

static void ref_field(uint8_t out[32], enum fop op, const uint8_t a[32], const uint8_t b[32])
{
	mbedtls_mpi A, B, R, T;
	mbedtls_mpi_init(&A), mbedtls_mpi_init(&B), mbedtls_mpi_init(&R), mbedtls_mpi_init(&T);
	uint8_t am[32], bm[32];
	memcpy(am, a, 32), memcpy(bm, b, 32);
	am[31] &= 0x7f, bm[31] &= 0x7f;
	assert_int_equal(mbedtls_mpi_read_binary_le(&A, am, 32), 0);
	assert_int_equal(mbedtls_mpi_read_binary_le(&B, bm, 32), 0);
	switch (op) {
	case F_ADD:
		assert_int_equal(mbedtls_mpi_add_mpi(&R, &A, &B), 0);
		break;
	case F_SUB:
		assert_int_equal(mbedtls_mpi_sub_mpi(&R, &A, &B), 0);
		break;
	case F_MUL_SUMS: /* (a + b)(a - b) */
		assert_int_equal(mbedtls_mpi_add_mpi(&R, &A, &B), 0);
		assert_int_equal(mbedtls_mpi_sub_mpi(&T, &A, &B), 0);
		assert_int_equal(mbedtls_mpi_mul_mpi(&R, &R, &T), 0);
		break;
	case F_SQR_DIFF: /* (a - b)^2 */
		assert_int_equal(mbedtls_mpi_sub_mpi(&T, &A, &B), 0);
		assert_int_equal(mbedtls_mpi_mul_mpi(&R, &T, &T), 0);
		break;
	case F_MUL121666_DIFF: /* 121666 (a - b) */
		assert_int_equal(mbedtls_mpi_sub_mpi(&T, &A, &B), 0);
		assert_int_equal(mbedtls_mpi_mul_int(&R, &T, 121666), 0);
		break;
	case F_ID:
	default:
		assert_int_equal(mbedtls_mpi_copy(&R, &A), 0);
		break;
	}
	assert_int_equal(mbedtls_mpi_mod_mpi(&R, &R, &grp.P), 0);
	assert_int_equal(mbedtls_mpi_write_binary_le(&R, out, 32), 0);
	mbedtls_mpi_free(&A), mbedtls_mpi_free(&B), mbedtls_mpi_free(&R), mbedtls_mpi_free(&T);
}

static void our_field(uint8_t out[32], const struct fe25519_ops *fe, enum fop op,
	const uint8_t a[32], const uint8_t b[32])
{
	struct fe25519 x, y, s, d;
	fe->frombytes(&x, a);
	fe->frombytes(&y, b);
	switch (op) {
	case F_ADD:
		fe->add(&s, &x, &y);
		fe->mul(&s, &s, &(struct fe25519){ .v = { 1 } }); /* tobytes takes reduced values */
		break;
	case F_SUB:
		fe->sub(&s, &x, &y);
		fe->mul(&s, &s, &(struct fe25519){ .v = { 1 } });
		break;
	case F_MUL_SUMS:
		fe->add(&s, &x, &y);
		fe->sub(&d, &x, &y);
		fe->mul(&s, &s, &d);
		break;
	case F_SQR_DIFF:
		fe->sub(&d, &x, &y);
		fe->sqr(&s, &d);
		break;
	case F_MUL121666_DIFF:
		fe->sub(&d, &x, &y);
		fe->mul121666(&s, &d);
		break;
	case F_ID:
	default:
		s = x;
		break;
	}
	fe->tobytes(out, &s);
}

static void test_field_edges(void **state)
{
	(void)state;
	enum { N_EDGE = 20 };
	uint8_t e[N_EDGE][32] = { { 0 }, { 1 }, { 2 }, { 19 } };
	size_t n = 4;
	p_plus(e[n++], 0);                                 /* p */
	p_plus(e[n++], 1);                                 /* p + 1 */
	p_plus(e[n++], 18);                                /* 2^255 - 1: every limb all ones */
	p_plus(e[n], 0), e[n++][0] = 0xec;                 /* p - 1 */
	p_plus(e[n], 0), e[n++][0] = 0xda;                 /* p - 19 */
	memset(e[n], 0, 32), e[n++][31] = 0x40;            /* 2^254 */
	memset(e[n], 0, 32), e[n][6] = 0x08, n++;          /* 2^51 */
	memset(e[n], 0xff, 6), e[n][6] = 0x07, n++;        /* 2^51 - 1 */
	memset(e[n], 0xff, 32), e[n][31] = 0xff, n++;      /* 2^256 - 1 (bit 255 dropped) */
	memset(e[n], 0, 32), e[n++][31] = 0x80;            /* 2^255 (bit 255 dropped: 0) */
	while (n < N_EDGE)
		rng_bytes(e[n++], 32);
	unsigned checked = 0;
	for (size_t pi = 0; pi < n_paths; pi++) {
		const struct fe25519_ops *fe = path_use(&paths[pi])->ops_get();
		for (size_t i = 0; i < N_EDGE; i++)
			for (size_t j = 0; j < N_EDGE; j++)
				for (int op = 0; op < F__N; op++) {
					uint8_t got[32], want[32];
					our_field(got, fe, (enum fop)op, e[i], e[j]);
					ref_field(want, (enum fop)op, e[i], e[j]);
					if (memcmp(got, want, 32) != 0) {
						char g[65], w[65];
						hex32(g, got), hex32(w, want);
						fail_msg("field op %d on edges %zu, %zu on %s:\n  got  %s\n  "
							 "want %s", op, i, j, paths[pi].name, g, w);
					}
					checked++;
				}
	}
	print_message("[ x25519   ] %u field results on edge values equal mbedTLS's\n", checked);
}

/* ---- 6. the fixed-base public key against the ladder ----
 * x25519_public_from_private is a fixed-base multiplication on edwards25519 over a generated
 * table (tls/accel/x25519.c's design note); x25519_scalarmult(k, 9), the ladder, is its
 * reference: random scalars (X25519_TEST_BASE_N, default 10,000, on every path), edge
 * scalars (zero, all ones, digit patterns that carry through all 64 signed digits, every
 * single bit, scalars that clamp alike, and m l + r for the group order l, which make k B a
 * small multiple of +-B), the file's RFC 7748 vectors whose u is 9, and pub aliasing priv. */

static const uint8_t base_nine[32] = { 9 };

/* pub(s) on p must equal the ladder's X25519(s, 9) on p; returns pub. */
static void base_check(uint8_t pub[32], const struct path *p, const uint8_t s[32], const char *what,
	unsigned long long idx)
{
	uint8_t want[32];
	assert_int_equal(p->scalarmult(want, s, base_nine), 0);
	memset(pub, 0xa5, 32);
	p->public_from_private(pub, s);
	assert_same(pub, want, what, p, idx);
}

static void test_base_vs_ladder(void **state)
{
	(void)state;
	uint64_t n = env_u64("X25519_TEST_BASE_N", 10000);
	for (uint64_t i = 0; i < n; i++) {
		uint8_t s[32], pub[32], alias[32];
		rng_bytes(s, 32);
		for (size_t pi = 0; pi < n_paths; pi++) {
			const struct path *p = path_use(&paths[pi]);
			base_check(pub, p, s, "public_from_private vs ladder", i);
			if (i % 97 == 0) { /* pub may alias priv */
				memcpy(alias, s, 32);
				p->public_from_private(alias, alias);
				assert_same(alias, pub, "public_from_private, pub aliasing priv", p, i);
			}
		}
	}
	print_message("[ x25519   ] %llu random public keys equal the ladder's X25519(k, 9) on %zu "
		      "paths\n", (unsigned long long)n, n_paths);
}

/* k = m l + r as 32 little-endian bytes, for the order l of the base point (mbedTLS's N). */
static void base_ml_plus_r(uint8_t k[32], int m, int r)
{
	mbedtls_mpi x;
	mbedtls_mpi_init(&x);
	assert_int_equal(mbedtls_mpi_mul_int(&x, &grp.N, (mbedtls_mpi_uint)m), 0);
	assert_int_equal(mbedtls_mpi_add_int(&x, &x, r), 0);
	assert_int_equal(mbedtls_mpi_write_binary_le(&x, k, 32), 0);
	mbedtls_mpi_free(&x);
}

static void test_base_edges(void **state)
{
	(void)state;
	enum { N_PAT = 12 };
	static const uint8_t pat[N_PAT] = { 0x00, 0xff, 0x88, 0x77, 0x80, 0x08, 0xf0, 0x0f, 0x78,
		0x87, 0xf8, 0x8f };
	unsigned checked = 0;
	for (size_t pi = 0; pi < n_paths; pi++) {
		const struct path *p = path_use(&paths[pi]);
		uint8_t s[32], s2[32], pub[32], pub2[32];

		/* Every byte the same: zero and all ones clamp to 2^254 and 2^255 - 8; 0x88 and
		 * 0x78 make every digit carry, 0x77 none. */
		for (size_t i = 0; i < N_PAT; i++) {
			memset(s, pat[i], 32);
			base_check(pub, p, s, "public_from_private, repeated byte", i);
			checked++;
		}
		/* One bit (3..253) besides the clamp's bit 254; then all bits but one. */
		for (unsigned b = 3; b < 254; b++) {
			memset(s, 0, 32);
			s[b / 8] = (uint8_t)(1u << (b % 8));
			base_check(pub, p, s, "public_from_private, one bit", b);
			memset(s, 0xff, 32);
			s[b / 8] ^= (uint8_t)(1u << (b % 8));
			base_check(pub, p, s, "public_from_private, one bit clear", b);
			checked += 2;
		}
		/* Bits 0-2 and 255 are ignored, 254 is forced: scalars that clamp alike give one key. */
		for (unsigned i = 0; i < 64; i++) {
			rng_bytes(s, 32);
			base_check(pub, p, s, "public_from_private, clamping", i);
			memcpy(s2, s, 32);
			s2[0] ^= (uint8_t)(rng_next() & 7);
			s2[31] ^= (uint8_t)(rng_next() & 0xc0);
			p->public_from_private(pub2, s2);
			assert_same(pub2, pub, "public_from_private, scalars that clamp alike", p, i);
			checked += 2;
		}
		/* k = m l + r, k a multiple of 8 in [2^254, 2^255) (so a clamped scalar): k B = r B.
		 * u(-P) = u(P), so 4l - 4 and 4l + 4 give one key, and 5l - 1 gives u(-B) = 9. */
		uint8_t by_r[9][32];
		bool have_r[9] = { false };
		unsigned n_ml = 0;
		for (int m = 4; m <= 7; m++)
			for (int r = -8; r <= 8; r++) {
				base_ml_plus_r(s, m, r);
				if ((s[0] & 7) || (s[31] & 0xc0) != 0x40)
					continue; /* clamping would change it */
				base_check(pub, p, s, "public_from_private, m l + r", (unsigned long long)(m * 100 + r + 50));
				unsigned ar = (unsigned)(r < 0 ? -r : r);
				if (have_r[ar])
					assert_same(pub, by_r[ar], "public_from_private, m l + r vs m' l - r", p, ar);
				memcpy(by_r[ar], pub, 32);
				have_r[ar] = true;
				if (m == 5 && r == -1)
					assert_same(pub, base_nine, "public_from_private, 5 l - 1", p, 0);
				n_ml++;
			}
		assert_int_equal(n_ml, 8); /* l = 5 mod 8: two r per m */
		assert_true(have_r[1] && have_r[4]);
		checked += n_ml;
	}

	/* The file's vectors whose u is 9 are public keys. */
	struct vector v[16];
	size_t nv = vectors_load(v, 16), n_kat = 0;
	for (size_t i = 0; i < nv; i++) {
		if (memcmp(v[i].u, base_nine, 32) != 0)
			continue;
		for (size_t pi = 0; pi < n_paths; pi++) {
			const struct path *p = path_use(&paths[pi]);
			uint8_t pub[32];
			p->public_from_private(pub, v[i].scalar);
			assert_same(pub, v[i].out, "public_from_private, RFC 7748 vector", p, i + 1);
		}
		n_kat++;
	}
	assert_true(n_kat > 0);
	print_message("[ x25519   ] %u edge public keys equal the ladder's, %zu RFC 7748 vectors with "
		      "u = 9, on %zu paths\n", checked, n_kat, n_paths);
}

/* ---- 7. the wider add/sub bounds the fixed base relies on (tls/accel/fe25519.h) ----
 * sub(add(a, b), c) and add(add(a, b), c) with a, b, c at the largest "reduced" limbs
 * (< 2^52 in fe51, < 2^256 in fe64), built limb by limb since frombytes never returns such
 * limbs, then through mul: the results against mbedTLS's bignums. */

static bool path_is_fe64(const struct fe25519_ops *fe)
{
	return strstr(fe->name, "fe64") != NULL;
}

/* f from 5 limbs (fe51, each < 2^52) or 4 words (fe64), and its integer value in x. */
static void fe_raw(struct fe25519 *f, mbedtls_mpi *x, const struct fe25519_ops *fe, const uint64_t v[5])
{
	bool w64 = path_is_fe64(fe);
	size_t n = w64 ? 4 : 5, shift = w64 ? 64 : 51;
	mbedtls_mpi t;
	mbedtls_mpi_init(&t);
	assert_int_equal(mbedtls_mpi_lset(x, 0), 0);
	memset(f, 0, sizeof *f);
	for (size_t i = n; i-- > 0;) {
		f->v[i] = w64 ? v[i] : v[i] & ((UINT64_C(1) << 52) - 1);
		uint8_t le[8];
		for (size_t j = 0; j < 8; j++)
			le[j] = (uint8_t)(f->v[i] >> (8 * j));
		assert_int_equal(mbedtls_mpi_shift_l(x, shift), 0);
		assert_int_equal(mbedtls_mpi_read_binary_le(&t, le, 8), 0);
		assert_int_equal(mbedtls_mpi_add_mpi(x, x, &t), 0);
	}
	mbedtls_mpi_free(&t);
}

static void test_field_wide_add_sub(void **state)
{
	(void)state;
	const uint64_t top = UINT64_MAX; /* masked to 2^52 - 1 for fe51 */
	unsigned checked = 0;
	for (size_t pi = 0; pi < n_paths; pi++) {
		const struct fe25519_ops *fe = path_use(&paths[pi])->ops_get();
		for (unsigned i = 0; i < 600; i++) {
			uint64_t raw[3][5];
			for (size_t k = 0; k < 3; k++)
				for (size_t j = 0; j < 5; j++) {
					unsigned kind = (i / 3 + (unsigned)(k * 5 + j)) % 4;
					raw[k][j] = i < 300 ? (kind == 0 ? 0 : kind == 1 ? top : rng_next()) : rng_next();
				}
			struct fe25519 a, b, c, ab, sub, add, one = { .v = { 1 } };
			mbedtls_mpi A, B, C, R, T;
			mbedtls_mpi_init(&A), mbedtls_mpi_init(&B), mbedtls_mpi_init(&C);
			mbedtls_mpi_init(&R), mbedtls_mpi_init(&T);
			fe_raw(&a, &A, fe, raw[0]);
			fe_raw(&b, &B, fe, raw[1]);
			fe_raw(&c, &C, fe, raw[2]);
			fe->add(&ab, &a, &b);
			fe->sub(&sub, &ab, &c);
			fe->add(&add, &ab, &c);
			uint8_t got[3][32], want[3][32];
			struct fe25519 h;
			fe->mul(&h, &sub, &one);
			fe->tobytes(got[0], &h);
			fe->mul(&h, &add, &one);
			fe->tobytes(got[1], &h);
			fe->mul(&h, &sub, &add);
			fe->tobytes(got[2], &h);
			assert_int_equal(mbedtls_mpi_add_mpi(&T, &A, &B), 0);
			assert_int_equal(mbedtls_mpi_sub_mpi(&R, &T, &C), 0); /* a + b - c */
			assert_int_equal(mbedtls_mpi_add_mpi(&T, &T, &C), 0); /* a + b + c */
			assert_int_equal(mbedtls_mpi_mod_mpi(&R, &R, &grp.P), 0);
			assert_int_equal(mbedtls_mpi_mod_mpi(&T, &T, &grp.P), 0);
			assert_int_equal(mbedtls_mpi_write_binary_le(&R, want[0], 32), 0);
			assert_int_equal(mbedtls_mpi_write_binary_le(&T, want[1], 32), 0);
			assert_int_equal(mbedtls_mpi_mul_mpi(&R, &R, &T), 0);
			assert_int_equal(mbedtls_mpi_mod_mpi(&R, &R, &grp.P), 0);
			assert_int_equal(mbedtls_mpi_write_binary_le(&R, want[2], 32), 0);
			for (size_t k = 0; k < 3; k++)
				assert_same(got[k], want[k], k == 0 ? "(a + b) - c" : k == 1 ? "(a + b) + c" :
					"((a + b) - c)((a + b) + c)", &paths[pi], i);
			mbedtls_mpi_free(&A), mbedtls_mpi_free(&B), mbedtls_mpi_free(&C);
			mbedtls_mpi_free(&R), mbedtls_mpi_free(&T);
			checked += 3;
		}
	}
	print_message("[ x25519   ] %u results of the wider add/sub bounds equal mbedTLS's\n", checked);
}

/* ---- 8. small-order and non-canonical u at random, against mbedTLS (issue 22 item 6) ----
 * X25519_TEST_N / 8 cases (at least 64): a random scalar (every 16th all zero or all ones)
 * with, three times in four, a u of test_small_order's list (p and p + 1 are the non-canonical
 * names of 0 and 1), else a non-canonical u = p + 2..p + 18; bit 255 of u set at random. Small
 * order: mbedTLS refuses, every path answers -1 with a zero output; otherwise every path
 * equals mbedTLS. */
static void test_diff_small_order_random(void **state)
{
	(void)state;
	uint64_t n = env_u64("X25519_TEST_N", 4000) / 8;
	uint64_t n_small = 0, n_nc = 0;
	uint8_t us[7][32] = { { 0 }, { 1 } };
	p_plus(us[2], 0), us[2][0] = 0xec; /* p - 1 */
	p_plus(us[3], 0);                   /* p */
	p_plus(us[4], 1);                   /* p + 1 */
	memcpy(us[5], order8_a, 32);
	memcpy(us[6], order8_b, 32);
	if (n < 64)
		n = 64;
	for (uint64_t i = 0; i < n; i++) {
		uint8_t s[32], u[32], want[32], got[32];
		rng_bytes(s, 32);
		if (i % 16 == 5)
			memset(s, i % 32 == 5 ? 0x00 : 0xff, 32);
		bool small = rng_next() % 4 != 0;
		if (small)
			memcpy(u, us[rng_next() % 7], 32);
		else
			p_plus(u, 2 + (unsigned)(rng_next() % 17));
		u[31] |= (uint8_t)(rng_next() & 0x80);
		int ref = ref_x25519(want, s, u);
		if (small ? ref == 0 : ref != 0)
			fail_msg("case %llu: mbedTLS %s a %s u", (unsigned long long)i, ref ? "refuses" : "takes",
				 small ? "small-order" : "non-canonical");
		for (size_t pi = 0; pi < n_paths; pi++) {
			const struct path *p = path_use(&paths[pi]);
			memset(got, 0xa5, 32);
			int rc = p->scalarmult(got, s, u);
			if (small) {
				if (rc != -1 || !all_zero(got, 32))
					fail_msg("case %llu, small-order u on %s: not -1 with a zero output",
						 (unsigned long long)i, paths[pi].name);
			} else {
				assert_int_equal(rc, 0);
				assert_same(got, want, "non-canonical u", &paths[pi], i);
			}
		}
		small ? n_small++ : n_nc++;
	}
	print_message("[ x25519   ] %llu random scalars with small-order u (refused by all), %llu with u = p + 2..18 "
		      "(equal to mbedTLS) on %zu paths\n", (unsigned long long)n_small, (unsigned long long)n_nc, n_paths);
	assert_true(n_small > 0 && n_nc > 0);
}

/* A count or seed from the environment (strtoull's forms) must be all number, and a count at
 * least 1: else the run stops (exit 2) rather than run another number of cases than asked
 * under the same test names. */
static void env_check(const char *name, bool count)
{
	const char *e = getenv(name);
	char *end;
	if (!e)
		return;
	unsigned long long v = strtoull(e, &end, 0);
	if (*e < '0' || *e > '9' || *end || (count && v == 0)) {
		printf("Bail out! %s=%s: not a %s\n", name, e, count ? "count of at least 1" : "number");
		exit(2);
	}
}

int main(void)
{
	env_check("X25519_TEST_N", true);
	env_check("X25519_TEST_SEED", false);
	env_check("X25519_TEST_BASE_N", true);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_field_edges),
		cmocka_unit_test(test_rfc7748_vectors),
		cmocka_unit_test(test_rfc7748_iterated),
		cmocka_unit_test(test_small_order),
		cmocka_unit_test(test_noncanonical_and_high_bits),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_diff_small_order_random),
		cmocka_unit_test(test_field_wide_add_sub),
		cmocka_unit_test(test_base_edges),
		cmocka_unit_test(test_base_vs_ladder),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
