/* SPDX-License-Identifier: MIT */
/* tls/accel: our declarations of the OpenSSL ecp_nistz256 perlasm entry points p256.c calls,
 * with their contract as we use it. The code is generated at build time from Debian's openssl
 * source for x86_64 (ecp_nistz256-x86_64.pl) and Armv8 (ecp_nistz256-armv8.pl); both export
 * these names with the same meaning, so p256.c is one file for both. Private to tls/accel:
 * only p256.c includes this header.
 *
 * Numbers are four 64-bit limbs, least significant limb first, each limb in the CPU's own
 * byte order: never read as bytes (p256.c converts to and from SEC1's big-endian bytes).
 * "Montgomery form" of a is a * 2^256 mod m; mont_mul(a, b) = a * b * 2^-256 mod m.
 * Field functions work modulo p = 2^256 - 2^224 + 2^192 + 2^96 - 1, the ord_ functions modulo
 * the group order n. Inputs must be fully reduced (< p or < n) except where said; outputs are
 * fully reduced. Every function reads all of its inputs before it writes its output, so the
 * output may alias an input. Time does not depend on the values except where said.
 *
 * Points: Jacobian (X, Y, Z) with x = X/Z^2, y = Y/Z^3, all in Montgomery form; Z == 0 is
 * the point at infinity (X and Y then mean nothing). Affine points (x, y) in Montgomery form;
 * (0, 0) stands for the point at infinity where an affine input is taken.
 *
 * x86_64 dispatch: the field, order and point functions take MULX/ADCX/ADOX code when
 * OPENSSL_ia32cap_P[2] has both BMI2 (bit 8) and ADX (bit 19); the gathers take AVX2 code when
 * bit 5 is set, which tls/accel/cpu_x86_64.c never sets (the kernel has no AVX state). */
#ifndef URMQTT_TLS_ACCEL_NISTZ256_H
#define URMQTT_TLS_ACCEL_NISTZ256_H

#include <stdint.h>

struct nistz256_point {
	/* 32-byte aligned: x86_64's scatter_w5 reads the point with movdqa (16 would do). */
	_Alignas(32) uint64_t x[4];
	uint64_t y[4];
	uint64_t z[4];
};

struct nistz256_affine {
	_Alignas(32) uint64_t x[4];
	uint64_t y[4];
};

/* The table the width-5 window functions fill and read: 16 Jacobian points in an
 * architecture-specific layout (x86_64: in order, 96 bytes each; Armv8: 32-bit words spread
 * so that one 64-byte line holds a word of every entry). Never read directly. 64-byte
 * alignment: x86_64 loads it with movdqa, and Armv8's layout only hides the index from the
 * cache when each line of the table is one cache line. */
struct nistz256_w5_table {
	_Alignas(64) uint64_t w[16 * 12];
};

/* The generator's table for a width-7 comb: 37 blocks of 4096 bytes (page-aligned in the
 * assembly); block i holds j * 2^(7i) * G for j = 1..64 as affine points in Montgomery form,
 * in the layout gather_w7 reads (x86_64: in order; Armv8: spread byte by byte). */
#define NISTZ256_W7_BLOCKS 37
#define NISTZ256_W7_BLOCK_LEN 4096
extern const uint8_t ecp_nistz256_precomputed[NISTZ256_W7_BLOCKS][NISTZ256_W7_BLOCK_LEN];

/* ---- field, modulo p ---- */
void ecp_nistz256_to_mont(uint64_t res[4], const uint64_t a[4]);   /* a < 2^256 suffices */
void ecp_nistz256_from_mont(uint64_t res[4], const uint64_t a[4]); /* a < 2^256 suffices */
void ecp_nistz256_mul_mont(uint64_t res[4], const uint64_t a[4], const uint64_t b[4]);
void ecp_nistz256_sqr_mont(uint64_t res[4], const uint64_t a[4]);
void ecp_nistz256_add(uint64_t res[4], const uint64_t a[4], const uint64_t b[4]);
void ecp_nistz256_sub(uint64_t res[4], const uint64_t a[4], const uint64_t b[4]);
void ecp_nistz256_neg(uint64_t res[4], const uint64_t a[4]); /* -0 = 0 */
void ecp_nistz256_mul_by_3(uint64_t res[4], const uint64_t a[4]);

/* ---- scalars, modulo n ---- */
void ecp_nistz256_ord_mul_mont(uint64_t res[4], const uint64_t a[4], const uint64_t b[4]);
/* res = a squared rep times (each a Montgomery squaring); rep >= 1. */
void ecp_nistz256_ord_sqr_mont(uint64_t res[4], const uint64_t a[4], uint64_t rep);

/* ---- points ---- */
void ecp_nistz256_point_double(struct nistz256_point *r, const struct nistz256_point *a);
/* r = a + b, right for every input: either at infinity, a == -b (infinity out) and a == b.
 * The last is found by comparing the inputs and then branches to point_double: the only
 * value-dependent timing in this header. */
void ecp_nistz256_point_add(struct nistz256_point *r, const struct nistz256_point *a,
	const struct nistz256_point *b);
/* r = a + b with b affine; a at infinity (Z == 0) or b == (0, 0) are handled, but a == b is
 * NOT: the caller must rule it out (the result would be the point at infinity). */
void ecp_nistz256_point_add_affine(struct nistz256_point *r, const struct nistz256_point *a,
	const struct nistz256_affine *b);

/* ---- constant-time tables ----
 * The index travels in a full 64-bit register: the Armv8 code uses all of x2, which the
 * procedure call standard leaves partly undefined for an int, hence uint64_t here. */
/* Stores a into slot index (1..16) of t. */
void ecp_nistz256_scatter_w5(struct nistz256_w5_table *t, const struct nistz256_point *a,
	uint64_t index);
/* r = slot index (1..16) of t, or all zeros (a point at infinity) for index 0. Touches
 * every cache line of the table whatever the index (x86_64 reads all of it, Armv8 one word
 * of each line). */
void ecp_nistz256_gather_w5(struct nistz256_point *r, const struct nistz256_w5_table *t,
	uint64_t index);
/* r = entry index (1..64) of one 4096-byte block of ecp_nistz256_precomputed (or of a table
 * of the same layout), or (0, 0) for index 0. Touches every cache line of the block whatever
 * the index, as gather_w5. */
void ecp_nistz256_gather_w7(struct nistz256_affine *r, const void *block, uint64_t index);
/* Stores a as entry index + 1 of one 4096-byte block (index 0..63: one less than gather_w7's
 * index) in the layout gather_w7 reads; the block 64-byte aligned (x86_64 stores it with
 * movdqa). Not constant time in the index (it writes one entry's bytes only). */
void ecp_nistz256_scatter_w7(void *block, const struct nistz256_affine *a, uint64_t index);

#endif
