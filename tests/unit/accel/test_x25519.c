/* SPDX-License-Identifier: MIT
 * Unit tests for tls/accel/x25519: RFC 7748's vectors read at run time from pyca's
 * cryptography_vectors (the test fails if the file is missing), the iterated test (1 and
 * 1,000 iterations, 1,000,000 with X25519_TEST_ITER_1M=1) checked step by step against
 * mbedTLS's own Curve25519 (MBEDTLS_ECP_DP_CURVE25519), a differential test of random scalars
 * and u-coordinates against mbedTLS for both operations (X25519_TEST_N pairs, default
 * 4,000 in make test; 100,000 take about 8 CPU-minutes under ASan), small-order points (-1 and an all-zero output), non-canonical u (>= p), the
 * ignored high bit of u and the scalar bits clamping discards, outputs aliasing inputs, and
 * the field arithmetic alone on edge values (canonical encoding, carries) against mbedTLS's
 * bignums.
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
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_bytes(uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t r = rng_next();
		for (size_t j = 0; j < 8 && i + j < len; j++)
			out[i + j] = (uint8_t)(r >> (8 * j));
	}
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_field_edges),
		cmocka_unit_test(test_rfc7748_vectors),
		cmocka_unit_test(test_rfc7748_iterated),
		cmocka_unit_test(test_small_order),
		cmocka_unit_test(test_noncanonical_and_high_bits),
		cmocka_unit_test(test_differential),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
