/* SPDX-License-Identifier: MIT */
/* tls/accel, portable: the arithmetic of fe25519.h in C, 5 x 51-bit limbs with 128-bit
 * products (unsigned __int128: gcc and clang on every 64-bit target). The build links it on
 * aarch64 and wherever there is no assembly; on x86_64 fe25519_x86_64.c replaces it, and the
 * host tests build it on x86_64 too. Straight-line code only: no branch or memory index
 * depends on an element's value, and 64x64->128 multiplication is constant time on the cores
 * we run on (Armv8-A MUL/UMULH, x86_64 MUL). */
#include "tls/accel/fe25519.h"

typedef unsigned __int128 u128;

/* Carries five 128-bit column sums into reduced limbs (< 2^51, limb 1 up to 2^51 + 2^13).
 * With input limbs < 2^54 every column is below 77 * 2^108 < 2^114.3, so each carry, even
 * after the previous column's is added, fits 64 bits; column 4's carry times 19 is kept in
 * 128 bits anyway. */
static void fe51_reduce(struct fe25519 *h, u128 r0, u128 r1, u128 r2, u128 r3, u128 r4)
{
	r1 += (uint64_t)(r0 >> 51);
	r2 += (uint64_t)(r1 >> 51);
	r3 += (uint64_t)(r2 >> 51);
	r4 += (uint64_t)(r3 >> 51);
	u128 c = (u128)(r4 >> 51) * 19 + ((uint64_t)r0 & FE51_MASK);
	uint64_t h1 = ((uint64_t)r1 & FE51_MASK) + (uint64_t)(c >> 51);
	h->v[0] = (uint64_t)c & FE51_MASK;
	h->v[1] = h1;
	h->v[2] = (uint64_t)r2 & FE51_MASK;
	h->v[3] = (uint64_t)r3 & FE51_MASK;
	h->v[4] = (uint64_t)r4 & FE51_MASK;
}

/* Schoolbook 5x5: a product's limb i + j >= 5 wraps to i + j - 5 times 19 (2^255 = 19). */
static void fe51_mul_c(struct fe25519 *h, const struct fe25519 *f, const struct fe25519 *g)
{
	uint64_t f0 = f->v[0], f1 = f->v[1], f2 = f->v[2], f3 = f->v[3], f4 = f->v[4];
	uint64_t g0 = g->v[0], g1 = g->v[1], g2 = g->v[2], g3 = g->v[3], g4 = g->v[4];
	uint64_t g1_19 = 19 * g1, g2_19 = 19 * g2, g3_19 = 19 * g3, g4_19 = 19 * g4;
	u128 r0 = (u128)f0 * g0 + (u128)f1 * g4_19 + (u128)f2 * g3_19 + (u128)f3 * g2_19 +
		  (u128)f4 * g1_19;
	u128 r1 = (u128)f0 * g1 + (u128)f1 * g0 + (u128)f2 * g4_19 + (u128)f3 * g3_19 +
		  (u128)f4 * g2_19;
	u128 r2 = (u128)f0 * g2 + (u128)f1 * g1 + (u128)f2 * g0 + (u128)f3 * g4_19 +
		  (u128)f4 * g3_19;
	u128 r3 = (u128)f0 * g3 + (u128)f1 * g2 + (u128)f2 * g1 + (u128)f3 * g0 +
		  (u128)f4 * g4_19;
	u128 r4 = (u128)f0 * g4 + (u128)f1 * g3 + (u128)f2 * g2 + (u128)f3 * g1 + (u128)f4 * g0;
	fe51_reduce(h, r0, r1, r2, r3, r4);
}

/* The symmetric products counted once and doubled. */
static void fe51_sqr_c(struct fe25519 *h, const struct fe25519 *f)
{
	uint64_t f0 = f->v[0], f1 = f->v[1], f2 = f->v[2], f3 = f->v[3], f4 = f->v[4];
	uint64_t f0_2 = 2 * f0, f1_2 = 2 * f1, f3_19 = 19 * f3, f4_19 = 19 * f4;
	u128 r0 = (u128)f0 * f0 + (u128)f1_2 * f4_19 + (u128)(2 * f2) * f3_19;
	u128 r1 = (u128)f0_2 * f1 + (u128)(2 * f2) * f4_19 + (u128)f3 * f3_19;
	u128 r2 = (u128)f0_2 * f2 + (u128)f1 * f1 + (u128)(2 * f3) * f4_19;
	u128 r3 = (u128)f0_2 * f3 + (u128)f1_2 * f2 + (u128)f4 * f4_19;
	u128 r4 = (u128)f0_2 * f4 + (u128)f1_2 * f3 + (u128)f2 * f2;
	fe51_reduce(h, r0, r1, r2, r3, r4);
}

static void fe51_mul121666_c(struct fe25519 *h, const struct fe25519 *f)
{
	fe51_reduce(h, (u128)f->v[0] * 121666, (u128)f->v[1] * 121666, (u128)f->v[2] * 121666,
		(u128)f->v[3] * 121666, (u128)f->v[4] * 121666);
}

static const struct fe25519_ops fe51_c_ops = {
	.name = "fe51 portable C",
	.frombytes = fe51_frombytes,
	.tobytes = fe51_tobytes,
	.add = fe51_add,
	.sub = fe51_sub,
	.mul = fe51_mul_c,
	.sqr = fe51_sqr_c,
	.mul121666 = fe51_mul121666_c,
};

const struct fe25519_ops *fe25519_ops_get(void)
{
	return &fe51_c_ops;
}
