/* SPDX-License-Identifier: MIT */
/* tls/accel: P-256 keys, ECDH and ECDSA (contract in p256.h) on OpenSSL's ecp_nistz256
 * assembly (declared, with the contract we rely on, in nistz256.h). This file owns the
 * encodings, the range and curve checks, the scalar multiplications, the two inversions and the
 * ECDSA equations, and the building of comb tables for other fixed points (struct p256_table);
 * the assembly owns the field and order arithmetic, point doubling and addition and the
 * constant-time table lookups. It keeps no state, allocates nothing, includes
 * no libc header (lib/ only), and must never branch on or index memory by a secret (private
 * keys, nonces, anything derived from them before it is published), nor leave one behind on
 * the stack: secrets are wiped with mem_wipe before every return.
 *
 * Design note
 * -----------
 * Scalars and coordinates are converted from SEC1's big-endian bytes to the assembly's four
 * 64-bit limbs (least significant first) by limbs_from_be/limbs_to_be only.
 *
 * Fixed base (public key, k*G, u1*G; u2*Q for a key with a table): a comb over a precomputed
 * table, the generator's (ecp_nistz256_precomputed) or one p256_table_build made for Q in the
 * same layout (mul_comb takes either). The scalar is Booth-recoded into 37 signed digits d_i
 * in [-64, 64] of 7 bits (bits 7i-1 .. 7i+6, bit -1 read as 0), k = sum d_i * 2^(7i), and the
 * result is the sum of the 37 affine points d_i * 2^(7i) * P, each fetched with gather_w7 from
 * block i (|d_i|, 0 giving (0, 0)) and negated by mask: 37 point_add_affine and no doubling.
 *
 * Table building (p256_table_build, public data): row i holds j * B_i for j = 1..64 with
 * B_0 = Q and B_(i+1) = 2 * (64 * B_i), made in Jacobian coordinates (one doubling, then
 * point_add) and turned affine one row at a time by Montgomery's trick: going forward, with
 * c_j = Z_1 * .. * Z_j, entry j is stored as (X_j * c_(j-1)^2, Y_j * c_(j-1)^3) and Z_j kept;
 * one inversion gives 1/c_64, and going back each entry is multiplied by (1/c_j)^2 and
 * (1/c_j)^3 (giving X_j / Z_j^2, Y_j / Z_j^3) before 1/c_(j-1) = Z_j / c_j. 37 inversions
 * (one per row) rather than one for the whole table: the Z values of a row are 2 KiB of stack,
 * those of the whole table would be 74 KiB of scratch memory.
 *
 * Variable base (ECDH, u2*Q): a width-5 window. A table of 1*P .. 16*P is built per call
 * (scatter_w5), the scalar Booth-recoded into 52 digits in [-16, 16], and from the top digit
 * down the accumulator is doubled five times and gets +-table[|d_i|] (gather_w5, 0 giving the
 * point at infinity) by point_add.
 *
 * Invariants (why the point formulas' special cases cannot bite):
 *  1. In the comb, point_add_affine never sees equal inputs for 0 <= k < n, whichever point P
 *     of order n (every point on the curve but infinity: the cofactor is 1) the table is
 *     for. Before digit i the accumulator is a*P with |a| <= 64 * (2^(7i) - 1) / 127 <
 *     2^(7i) / 1.98, and the addend is d_i * 2^(7i) * P with |d_i| >= 1 (d_i = 0 adds (0, 0),
 *     which the assembly handles). For i < 36, 0 < |d_i * 2^(7i) - a| < 65 * 2^245 < n: they
 *     differ mod n. For i = 36, d_i is in [1, 16] and a = d_i * 2^252 mod n would need
 *     |a| >= 2^252 - 2^224 (d_i <= 15) or k = 2^257 - n > n (d_i = 16).
 *  2. In the window method point_add never takes its doubling branch for 0 <= k < n: with
 *     V_i the value of the digits from i up, the accumulator is (V_i - d_i) * P when d_i * P
 *     is added, so it would need V_i = 2 * d_i mod n. For i >= 1, 0 <= V_i < n / 32 + 1,
 *     which forces V_(i+1) = 0 and d_i = 0 (both operands at infinity: no doubling branch). For i = 0 it needs k = n - 2m with
 *     d_0 = -m, m in 1..16; but d_0 = k mod 32 (as a digit in [-16, 16]) and n = 17 mod 32,
 *     so m = 17 mod 32: impossible. Hence the ECDH and signing paths have no value-dependent
 *     branch. Verification's final u1*G + u2*Q may double (public values; the assembly
 *     branches to point_double and is right).
 *  3. Field values leave the assembly fully reduced (< p); comparisons still go through
 *     from_mont, which is canonical for any 256-bit input.
 *  4. Every ord_ input is < n: private keys and nonces are range-checked, r and the digest are
 *     reduced by one conditional subtraction (both are < 2n).
 *  5. Building a table, point_add never sees equal, opposite or infinite inputs: entry j of
 *     row i is j * 2^(7i) * Q, and m * Q is at infinity only for m = 0 mod n, a prime above
 *     2^255 that divides no j * 2^(7i) with j <= 64; (j - 1) * B == +-B needs j = 2 (done by
 *     point_double) or j = 0. So no Z is zero and each row's product is invertible.
 * Inversions are Fermat's (a^(p-2), a^(n-2)) with fixed chains: time does not depend on a.
 *
 * Known limits: the assembly's own stack frames (point_add keeps about 600 bytes of
 * temporaries) are left as they are: only our variables are wiped. Verification is not
 * constant time and need not be (the constant-time window method or comb serves u2*Q anyway). */
#include "tls/accel/p256.h"

#include "tls/accel/nistz256.h"

#include "lib/bytes.h"
#include "lib/mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Little-endian 64-bit limbs. */
static const uint64_t P256_P[4] = { 0xffffffffffffffffu, 0x00000000ffffffffu, 0x0000000000000000u,
	0xffffffff00000001u };
static const uint64_t P256_N[4] = { 0xf3b9cac2fc632551u, 0xbce6faada7179e84u, 0xffffffffffffffffu,
	0xffffffff00000000u };
/* 2^512 mod n: ord_mul_mont(x, P256_RR_N) is x in Montgomery form mod n. */
static const uint64_t P256_RR_N[4] = { 0x83244c95be79eea2u, 0x4699799c49bd6fa6u,
	0x2845b2392b6bec59u, 0x66e12d94f3d95620u };
/* b and 1 in Montgomery form mod p. */
static const uint64_t P256_B_MONT[4] = { 0xd89cdf6229c4bddfu, 0xacf005cd78843090u,
	0xe5a220abf7212ed6u, 0xdc30061d04874834u };
static const uint64_t P256_ONE_MONT[4] = { 0x0000000000000001u, 0xffffffff00000000u,
	0xffffffffffffffffu, 0x00000000fffffffeu };
/* The low 128 bits of n - 2, the exponent of the scalar inversion (its high 128 bits are
 * 0xffffffff00000000ffffffffffffffff), most significant half first. */
static const uint64_t P256_N_MINUS_2_LOW[2] = { 0xbce6faada7179e84u, 0xf3b9cac2fc63254fu };

#define W7_DIGITS NISTZ256_W7_BLOCKS /* 37 * 7 = 259 bits: a 256-bit scalar, recoded */
#define W5_DIGITS 52                 /* 52 * 5 = 260 bits */

/* ---- limbs, in constant time ---- */

/* Hides a mask's origin from the optimiser so that selections stay branch-free. */
static inline uint64_t ct_hide(uint64_t v)
{
	__asm__("" : "+r"(v));
	return v;
}

static void limbs_from_be(uint64_t r[4], const uint8_t b[32])
{
	for (size_t i = 0; i < 4; i++)
		r[i] = ld_be64(b + 8 * (3 - i));
}

static void limbs_to_be(uint8_t b[32], const uint64_t a[4])
{
	for (size_t i = 0; i < 4; i++)
		st_be64(b + 8 * (3 - i), a[i]);
}

/* r = a - b mod 2^256; returns the borrow (0 or 1). */
static uint64_t limbs_sub(uint64_t r[4], const uint64_t a[4], const uint64_t b[4])
{
	uint64_t borrow = 0;
	for (unsigned i = 0; i < 4; i++) {
		uint64_t d = a[i] - b[i];
		uint64_t b1 = (uint64_t)(a[i] < b[i]);
		uint64_t b2 = (uint64_t)(d < borrow);
		r[i] = d - borrow;
		borrow = b1 | b2;
	}
	return borrow;
}

/* r = a + b mod 2^256; returns the carry (0 or 1). */
static uint64_t limbs_add(uint64_t r[4], const uint64_t a[4], const uint64_t b[4])
{
	uint64_t carry = 0;
	for (unsigned i = 0; i < 4; i++) {
		uint64_t s = a[i] + b[i];
		uint64_t c1 = (uint64_t)(s < a[i]);
		uint64_t t = s + carry;
		uint64_t c2 = (uint64_t)(t < s);
		r[i] = t;
		carry = c1 | c2;
	}
	return carry;
}

/* All ones when a == 0, else 0. */
static uint64_t limbs_zero_mask(const uint64_t a[4])
{
	uint64_t t = a[0] | a[1] | a[2] | a[3];
	return ct_hide(((t | (0 - t)) >> 63) - 1);
}

/* 1 when a < b, else 0. */
static uint64_t limbs_lt(const uint64_t a[4], const uint64_t b[4])
{
	uint64_t t[4];
	uint64_t borrow = limbs_sub(t, a, b);
	mem_wipe(t, sizeof t); /* a - n of a private key is as secret as the key */
	return borrow;
}

/* r = mask ? a : b, for mask all ones or zero. */
static void limbs_select(uint64_t r[4], const uint64_t a[4], const uint64_t b[4], uint64_t mask)
{
	for (unsigned i = 0; i < 4; i++)
		r[i] = (a[i] & mask) | (b[i] & ~mask);
}

/* r = a mod m for a < 2m. */
static void limbs_reduce_once(uint64_t r[4], const uint64_t a[4], const uint64_t m[4])
{
	uint64_t t[4];
	uint64_t borrow = limbs_sub(t, a, m);
	limbs_select(r, a, t, ct_hide(0 - borrow));
	mem_wipe(t, sizeof t);
}

static bool limbs_equal(const uint64_t a[4], const uint64_t b[4])
{
	return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0;
}

/* ---- scalars mod n ---- */

/* All ones when 1 <= a < n, else 0. */
static uint64_t scalar_valid_mask(const uint64_t a[4])
{
	return ct_hide(0 - limbs_lt(a, P256_N)) & ~limbs_zero_mask(a);
}

/* r = a + b mod n for a, b < n. */
static void scalar_add(uint64_t r[4], const uint64_t a[4], const uint64_t b[4])
{
	uint64_t s[4], t[4];
	uint64_t carry = limbs_add(s, a, b);
	uint64_t borrow = limbs_sub(t, s, P256_N);
	/* a + b >= n when it carried out of 2^256 or when subtracting n did not borrow. */
	limbs_select(r, t, s, ct_hide(0 - (carry | (borrow ^ 1))));
	mem_wipe(s, sizeof s); /* e + r * d reveals d */
	mem_wipe(t, sizeof t);
}

/* ECDSA's bits2int then mod n: the leftmost 256 bits of the digest as a big-endian number
 * (a shorter digest as it is), reduced once (it is < 2^256 < 2n). */
static void scalar_from_digest(uint64_t e[4], const uint8_t *digest, size_t len)
{
	uint8_t b[P256_SCALAR_LEN] = { 0 };
	size_t take = len < sizeof b ? len : sizeof b;
	if (take)
		memcpy(b + sizeof b - take, digest, take);
	limbs_from_be(e, b);
	limbs_reduce_once(e, e, P256_N);
}

/* r = a^-1 mod n, a and r in Montgomery form, a != 0: a^(n-2). The high half of n - 2 is
 * 32 ones, 32 zeros, 64 ones; the low half goes by 4-bit windows over a^0..a^15. The
 * exponent is public, so indexing pw by its digits reveals nothing. */
static void scalar_inv_mont(uint64_t r[4], const uint64_t a[4])
{
	uint64_t pw[16][4], x8[4], x16[4], x32[4], t[4];

	memcpy(pw[1], a, sizeof pw[1]);
	ecp_nistz256_ord_sqr_mont(pw[2], a, 1);
	for (unsigned i = 3; i < 16; i++)
		ecp_nistz256_ord_mul_mont(pw[i], pw[i - 1], a);
	ecp_nistz256_ord_sqr_mont(t, pw[15], 4);
	ecp_nistz256_ord_mul_mont(x8, t, pw[15]); /* a^(2^8 - 1) */
	ecp_nistz256_ord_sqr_mont(t, x8, 8);
	ecp_nistz256_ord_mul_mont(x16, t, x8);
	ecp_nistz256_ord_sqr_mont(t, x16, 16);
	ecp_nistz256_ord_mul_mont(x32, t, x16); /* a^(2^32 - 1) */

	ecp_nistz256_ord_sqr_mont(t, x32, 64); /* 32 ones, 32 zeros */
	ecp_nistz256_ord_mul_mont(t, t, x32);
	ecp_nistz256_ord_sqr_mont(t, t, 32);
	ecp_nistz256_ord_mul_mont(t, t, x32); /* ... 64 ones: the high 128 bits */
	for (unsigned half = 0; half < 2; half++) {
		for (int shift = 60; shift >= 0; shift -= 4) {
			unsigned digit = (unsigned)(P256_N_MINUS_2_LOW[half] >> shift) & 15u;
			ecp_nistz256_ord_sqr_mont(t, t, 4);
			if (digit)
				ecp_nistz256_ord_mul_mont(t, t, pw[digit]);
		}
	}
	memcpy(r, t, sizeof t);
	mem_wipe(pw, sizeof pw);
	mem_wipe(x8, sizeof x8);
	mem_wipe(x16, sizeof x16);
	mem_wipe(x32, sizeof x32);
	mem_wipe(t, sizeof t);
}

/* ---- field mod p ---- */

static void fe_sqr_times(uint64_t r[4], const uint64_t a[4], unsigned times)
{
	ecp_nistz256_sqr_mont(r, a);
	while (--times)
		ecp_nistz256_sqr_mont(r, r);
}

/* r = a^-1 mod p (0 for a = 0), both in Montgomery form: a^(p-2). From the top, p - 2 is
 * 32 ones, 31 zeros, a one, 96 zeros, 94 ones, 0, 1. */
static void fe_inv(uint64_t r[4], const uint64_t a[4])
{
	uint64_t x2[4], x3[4], x6[4], x12[4], x15[4], x30[4], x32[4], t[4];

	ecp_nistz256_sqr_mont(x2, a);
	ecp_nistz256_mul_mont(x2, x2, a); /* a^(2^2 - 1) */
	ecp_nistz256_sqr_mont(x3, x2);
	ecp_nistz256_mul_mont(x3, x3, a);
	fe_sqr_times(x6, x3, 3);
	ecp_nistz256_mul_mont(x6, x6, x3);
	fe_sqr_times(x12, x6, 6);
	ecp_nistz256_mul_mont(x12, x12, x6);
	fe_sqr_times(x15, x12, 3);
	ecp_nistz256_mul_mont(x15, x15, x3);
	fe_sqr_times(x30, x15, 15);
	ecp_nistz256_mul_mont(x30, x30, x15);
	fe_sqr_times(x32, x30, 2);
	ecp_nistz256_mul_mont(x32, x32, x2); /* a^(2^32 - 1) */

	fe_sqr_times(t, x32, 32);
	ecp_nistz256_mul_mont(t, t, a);
	fe_sqr_times(t, t, 96);
	fe_sqr_times(t, t, 32);
	ecp_nistz256_mul_mont(t, t, x32);
	fe_sqr_times(t, t, 32);
	ecp_nistz256_mul_mont(t, t, x32);
	fe_sqr_times(t, t, 30);
	ecp_nistz256_mul_mont(t, t, x30);
	fe_sqr_times(t, t, 2);
	ecp_nistz256_mul_mont(r, t, a);

	mem_wipe(x2, sizeof x2);
	mem_wipe(x3, sizeof x3);
	mem_wipe(x6, sizeof x6);
	mem_wipe(x12, sizeof x12);
	mem_wipe(x15, sizeof x15);
	mem_wipe(x30, sizeof x30);
	mem_wipe(x32, sizeof x32);
	mem_wipe(t, sizeof t);
}

/* y = -y when mask is all ones (y in Montgomery form; -0 stays 0). scratch is the caller's,
 * to be wiped once after a whole scalar multiplication. */
static void fe_neg_if(uint64_t y[4], uint64_t mask, uint64_t scratch[4])
{
	ecp_nistz256_neg(scratch, y);
	limbs_select(y, scratch, y, mask);
}

/* ---- points ---- */

/* Affine x (and y unless NULL), plain (not Montgomery), of a point not at infinity. */
static void point_to_affine(uint64_t x[4], uint64_t *y, const struct nistz256_point *a)
{
	uint64_t zi[4], zi2[4];
	fe_inv(zi, a->z);
	ecp_nistz256_sqr_mont(zi2, zi);
	ecp_nistz256_mul_mont(x, a->x, zi2);
	ecp_nistz256_from_mont(x, x);
	if (y) {
		ecp_nistz256_mul_mont(zi2, zi2, zi);
		ecp_nistz256_mul_mont(y, a->y, zi2);
		ecp_nistz256_from_mont(y, y);
	}
	mem_wipe(zi, sizeof zi);
	mem_wipe(zi2, sizeof zi2);
}

/* Decodes an uncompressed SEC1 point into Jacobian Montgomery form (Z = 1): 0, or -1 when
 * pub is not 0x04 || X || Y with X, Y < p and y^2 = x^3 - 3x + b. The point at infinity has
 * no such encoding ((0, 0) is not on the curve since b != 0). Public input: may branch. */
static int point_decode(struct nistz256_point *r, const uint8_t pub[P256_PUBLIC_LEN])
{
	uint64_t x[4], y[4], lhs[4], rhs[4], t[4];

	if (pub[0] != 0x04)
		return -1;
	limbs_from_be(x, pub + 1);
	limbs_from_be(y, pub + 1 + P256_SCALAR_LEN);
	if (!limbs_lt(x, P256_P) || !limbs_lt(y, P256_P))
		return -1;
	ecp_nistz256_to_mont(x, x);
	ecp_nistz256_to_mont(y, y);
	ecp_nistz256_sqr_mont(lhs, y);
	ecp_nistz256_sqr_mont(rhs, x);
	ecp_nistz256_mul_mont(rhs, rhs, x);
	ecp_nistz256_mul_by_3(t, x);
	ecp_nistz256_sub(rhs, rhs, t);
	ecp_nistz256_add(rhs, rhs, P256_B_MONT);
	ecp_nistz256_from_mont(lhs, lhs);
	ecp_nistz256_from_mont(rhs, rhs);
	if (!limbs_equal(lhs, rhs))
		return -1;
	memcpy(r->x, x, sizeof x);
	memcpy(r->y, y, sizeof y);
	memcpy(r->z, P256_ONE_MONT, sizeof r->z);
	return 0;
}

/* ---- scalar multiplication ---- */

/* The scalar as 32 little-endian bytes and a zero byte for the windows that run past bit 255. */
#define SCALAR_LE_LEN 33

static void scalar_to_le(uint8_t le[SCALAR_LE_LEN], const uint64_t k[4])
{
	for (unsigned i = 0; i < 32; i++)
		le[i] = (uint8_t)(k[i / 8] >> (8 * (i % 8)));
	le[32] = 0;
}

/* Bits bit - 1 .. bit + w - 1 of the scalar (bit -1 reads as 0): w + 1 bits, w <= 7. The
 * position is public (a loop counter); the bits are not, and are only shifted and masked. */
static uint32_t window_bits(const uint8_t le[SCALAR_LE_LEN], unsigned bit, unsigned w)
{
	uint32_t v;
	if (bit == 0) {
		v = (uint32_t)le[0] << 1;
	} else {
		unsigned start = bit - 1;
		v = ((uint32_t)le[start / 8] | (uint32_t)le[start / 8 + 1] << 8) >> (start % 8);
	}
	return v & ((1u << (w + 1)) - 1);
}

/* Booth digit of a (w + 1)-bit window v: low bit + (v >> 1) - (top bit << w), in
 * [-2^(w-1), 2^(w-1)]. Returns its magnitude; *neg = all ones when the top bit is set (the
 * digit is then <= 0; negating a zero digit's (0, 0) is harmless). */
static uint32_t booth_digit(uint32_t v, unsigned w, uint64_t *neg)
{
	uint32_t top = v >> w;
	uint32_t u = (v >> 1) + (v & 1);
	uint32_t m = (uint32_t)ct_hide(0 - (uint64_t)top);
	*neg = ct_hide(0 - (uint64_t)top);
	return u ^ ((u ^ ((1u << w) - u)) & m);
}

/* The generator's table and ours have one layout (p256.h, nistz256.h). */
_Static_assert(P256_TABLE_BLOCKS == NISTZ256_W7_BLOCKS, "comb rows");
_Static_assert(P256_TABLE_BLOCK_LEN == NISTZ256_W7_BLOCK_LEN, "comb row bytes");
_Static_assert(sizeof(struct p256_table) == sizeof ecp_nistz256_precomputed, "comb table size");

/* r = k * P for 0 <= k < n (k = 0 gives the point at infinity), P the point whose comb table
 * is blocks: ecp_nistz256_precomputed (P = G) or a struct p256_table's. Invariant 1. */
static void mul_comb(struct nistz256_point *r, const uint64_t k[4],
	const uint8_t (*blocks)[NISTZ256_W7_BLOCK_LEN])
{
	uint8_t le[SCALAR_LE_LEN];
	struct nistz256_affine a;
	uint64_t scratch[4];

	scalar_to_le(le, k);
	memset(r, 0, sizeof *r); /* Z = 0: at infinity */
	for (unsigned i = 0; i < W7_DIGITS; i++) {
		uint64_t neg;
		uint32_t idx = booth_digit(window_bits(le, 7 * i, 7), 7, &neg);
		ecp_nistz256_gather_w7(&a, blocks[i], idx);
		fe_neg_if(a.y, neg, scratch);
		ecp_nistz256_point_add_affine(r, r, &a);
	}
	mem_wipe(le, sizeof le);
	mem_wipe(&a, sizeof a);
	mem_wipe(scratch, sizeof scratch);
}

/* r = k * p for 0 <= k < n and p on the curve, not at infinity. Invariant 2. */
static void mul_point(struct nistz256_point *r, const uint64_t k[4], const struct nistz256_point *p)
{
	struct nistz256_w5_table table;
	struct nistz256_point acc, sel;
	uint8_t le[SCALAR_LE_LEN];
	uint64_t neg, scratch[4];
	uint32_t idx;

	/* 1p .. 16p: public (multiples of the input point). */
	ecp_nistz256_scatter_w5(&table, p, 1);
	ecp_nistz256_point_double(&acc, p);
	ecp_nistz256_scatter_w5(&table, &acc, 2);
	for (uint64_t j = 3; j <= 16; j++) {
		ecp_nistz256_point_add(&acc, &acc, p);
		ecp_nistz256_scatter_w5(&table, &acc, j);
	}

	scalar_to_le(le, k);
	idx = booth_digit(window_bits(le, 5 * (W5_DIGITS - 1), 5), 5, &neg);
	ecp_nistz256_gather_w5(&acc, &table, idx);
	fe_neg_if(acc.y, neg, scratch);
	for (unsigned i = W5_DIGITS - 1; i-- > 0;) {
		for (unsigned d = 0; d < 5; d++)
			ecp_nistz256_point_double(&acc, &acc);
		idx = booth_digit(window_bits(le, 5 * i, 5), 5, &neg);
		ecp_nistz256_gather_w5(&sel, &table, idx);
		fe_neg_if(sel.y, neg, scratch);
		ecp_nistz256_point_add(&acc, &acc, &sel);
	}
	*r = acc;
	mem_wipe(&acc, sizeof acc);
	mem_wipe(&sel, sizeof sel);
	mem_wipe(le, sizeof le);
	mem_wipe(scratch, sizeof scratch);
}

/* ---- the contract of p256.h ---- */

/* The verdicts on secret-derived values (a key or nonce out of range, a result at infinity,
 * r or s zero) are masks, all ones for success: the functions below compute the whole result
 * whatever the verdict (with 1 standing in for a scalar out of range), write their output
 * through out_select and turn the mask into the return code with rc_from_mask, so no branch
 * depends on a secret up to the return value the caller reads (tests/ct/ct_accel.c checks
 * this under valgrind). */
static const uint64_t P256_ONE[4] = { 1, 0, 0, 0 };

/* k from big-endian bytes; all ones when 1 <= k < n, else 0, and then k = 1. */
static uint64_t scalar_decode(uint64_t k[4], const uint8_t b[P256_SCALAR_LEN])
{
	limbs_from_be(k, b);
	uint64_t ok = scalar_valid_mask(k);
	limbs_select(k, k, P256_ONE, ok);
	return ok;
}

/* 0 for a mask of all ones, -1 for 0. */
static int rc_from_mask(uint64_t ok)
{
	return (int)(ok & 1) - 1;
}

/* dst = src where ok is all ones; dst keeps its bytes where ok is 0 ("written only on
 * success" without a branch). */
static void out_select(uint8_t *dst, const uint8_t *src, size_t len, uint64_t ok)
{
	uint8_t m = (uint8_t)ok;
	for (size_t i = 0; i < len; i++)
		dst[i] = (uint8_t)((src[i] & m) | (dst[i] & (uint8_t)~m));
}

int p256_check_private(const uint8_t priv[P256_SCALAR_LEN])
{
	uint64_t d[4];
	int rc = rc_from_mask(scalar_decode(d, priv));
	mem_wipe(d, sizeof d);
	return rc;
}

int p256_check_public(const uint8_t pub[P256_PUBLIC_LEN])
{
	struct nistz256_point q;
	return point_decode(&q, pub);
}

int p256_public_from_private(uint8_t pub[P256_PUBLIC_LEN], const uint8_t priv[P256_SCALAR_LEN])
{
	uint64_t d[4], x[4], y[4];
	uint8_t out[P256_PUBLIC_LEN];
	struct nistz256_point r;
	uint64_t ok = scalar_decode(d, priv);

	mul_comb(&r, d, ecp_nistz256_precomputed);
	point_to_affine(x, y, &r);
	out[0] = 0x04;
	limbs_to_be(out + 1, x);
	limbs_to_be(out + 1 + P256_SCALAR_LEN, y);
	out_select(pub, out, sizeof out, ok);
	mem_wipe(&r, sizeof r);
	mem_wipe(d, sizeof d);
	return rc_from_mask(ok);
}

int p256_ecdh(uint8_t shared_x[P256_SCALAR_LEN], const uint8_t priv[P256_SCALAR_LEN],
	const uint8_t peer[P256_PUBLIC_LEN])
{
	uint64_t d[4], x[4];
	uint8_t out[P256_SCALAR_LEN];
	struct nistz256_point q, r;
	uint64_t ok = scalar_decode(d, priv);

	if (point_decode(&q, peer) != 0) { /* public: may branch */
		mem_wipe(d, sizeof d);
		return -1;
	}
	mul_point(&r, d, &q);
	/* Cannot happen for 1 <= d < n and a point of order n (the cofactor is 1). */
	ok &= ~limbs_zero_mask(r.z);
	point_to_affine(x, NULL, &r); /* Z = 0 gives 0: harmless, the output is not taken */
	limbs_to_be(out, x);
	out_select(shared_x, out, sizeof out, ok);
	mem_wipe(&r, sizeof r);
	mem_wipe(x, sizeof x);
	mem_wipe(out, sizeof out);
	mem_wipe(d, sizeof d);
	return rc_from_mask(ok);
}

int p256_sign_digest(uint8_t sig[P256_SIG_LEN], const uint8_t priv[P256_SCALAR_LEN],
	const uint8_t *digest, size_t digest_len, const uint8_t k_bytes[P256_SCALAR_LEN])
{
	uint64_t d[4], k[4], x[4], r[4], e[4], t[4], kinv[4], s[4];
	uint8_t out[P256_SIG_LEN];
	struct nistz256_point kg;
	uint64_t ok = scalar_decode(d, priv) & scalar_decode(k, k_bytes);

	mul_comb(&kg, k, ecp_nistz256_precomputed);
	point_to_affine(x, NULL, &kg);
	limbs_reduce_once(r, x, P256_N); /* x < p < 2n */
	scalar_from_digest(e, digest, digest_len);

	/* Montgomery mod n: mont(a, b) = a * b / 2^256, so mont(r, mont(d, RR)) = r * d and
	 * mont(e + r * d, (k * 2^256)^-1 * 2^512) = (e + r * d) / k, all plain. */
	ecp_nistz256_ord_mul_mont(t, d, P256_RR_N);
	ecp_nistz256_ord_mul_mont(t, r, t);
	scalar_add(t, t, e);
	ecp_nistz256_ord_mul_mont(kinv, k, P256_RR_N);
	scalar_inv_mont(kinv, kinv);
	ecp_nistz256_ord_mul_mont(s, t, kinv);

	ok &= ~limbs_zero_mask(r) & ~limbs_zero_mask(s);
	limbs_to_be(out, r);
	limbs_to_be(out + P256_SCALAR_LEN, s);
	out_select(sig, out, sizeof out, ok);
	mem_wipe(&kg, sizeof kg);
	mem_wipe(x, sizeof x);
	mem_wipe(t, sizeof t);
	mem_wipe(kinv, sizeof kinv);
	mem_wipe(s, sizeof s);
	mem_wipe(out, sizeof out);
	mem_wipe(d, sizeof d);
	mem_wipe(k, sizeof k);
	return rc_from_mask(ok);
}

void p256_digest_to_scalar(uint8_t out[P256_SCALAR_LEN], const uint8_t *digest, size_t digest_len)
{
	uint64_t e[4];
	scalar_from_digest(e, digest, digest_len);
	limbs_to_be(out, e);
}

/* The ECDSA verification of (r, s) over the digest: u2*Q by the window method on q, or by the
 * comb over qt when q is NULL. Public data: may branch. */
static int verify(const struct nistz256_point *q, const struct p256_table *qt,
	const uint8_t *digest, size_t digest_len, const uint8_t sig[P256_SIG_LEN])
{
	uint64_t r[4], s[4], e[4], sinv[4], u1[4], u2[4], lhs[4], rhs[4], z2[4], rn[4];
	struct nistz256_point a, b;

	limbs_from_be(r, sig);
	limbs_from_be(s, sig + P256_SCALAR_LEN);
	if (!scalar_valid_mask(r) || !scalar_valid_mask(s))
		return -1;
	scalar_from_digest(e, digest, digest_len);

	ecp_nistz256_ord_mul_mont(sinv, s, P256_RR_N);
	scalar_inv_mont(sinv, sinv); /* s^-1 in Montgomery form */
	ecp_nistz256_ord_mul_mont(u1, e, sinv);
	ecp_nistz256_ord_mul_mont(u2, r, sinv);
	mul_comb(&a, u1, ecp_nistz256_precomputed);
	if (q)
		mul_point(&b, u2, q);
	else
		mul_comb(&b, u2, qt->block);
	ecp_nistz256_point_add(&a, &a, &b);
	if (limbs_zero_mask(a.z))
		return -1;

	/* x(R) mod n == r  <=>  x(R) is r or r + n (x(R) < p < 2n)  <=>  X == r' * Z^2 for that
	 * r' < p: no inversion needed. */
	ecp_nistz256_from_mont(lhs, a.x);
	ecp_nistz256_sqr_mont(z2, a.z);
	ecp_nistz256_to_mont(rhs, r);
	ecp_nistz256_mul_mont(rhs, rhs, z2);
	ecp_nistz256_from_mont(rhs, rhs);
	if (limbs_equal(lhs, rhs))
		return 0;
	if (limbs_add(rn, r, P256_N) == 0 && limbs_lt(rn, P256_P)) {
		ecp_nistz256_to_mont(rhs, rn);
		ecp_nistz256_mul_mont(rhs, rhs, z2);
		ecp_nistz256_from_mont(rhs, rhs);
		if (limbs_equal(lhs, rhs))
			return 0;
	}
	return -1;
}

int p256_verify_digest(const uint8_t pub[P256_PUBLIC_LEN], const uint8_t *digest,
	size_t digest_len, const uint8_t sig[P256_SIG_LEN])
{
	struct nistz256_point q;
	if (point_decode(&q, pub) != 0)
		return -1;
	return verify(&q, NULL, digest, digest_len, sig);
}

int p256_verify_digest_table(const struct p256_table *t, const uint8_t *digest,
	size_t digest_len, const uint8_t sig[P256_SIG_LEN])
{
	return verify(NULL, t, digest, digest_len, sig);
}

/* Entries in one row of a comb table (the Booth digits' magnitudes 1..64). */
#define COMB_ROW 64

int p256_table_build(struct p256_table *t, const uint8_t pub[P256_PUBLIC_LEN])
{
	struct nistz256_point base, acc;
	struct nistz256_affine a;
	uint64_t z[COMB_ROW][4]; /* the row's Z_j */
	uint64_t c[4], c2[4], c3[4];

	if (point_decode(&base, pub) != 0)
		return -1;
	for (unsigned i = 0; i < P256_TABLE_BLOCKS; i++) {
		/* Forward: acc = j * B_i; entry j = (X_j * c_(j-1)^2, Y_j * c_(j-1)^3). */
		memcpy(c, P256_ONE_MONT, sizeof c);
		for (uint64_t j = 1; j <= COMB_ROW; j++) {
			if (j == 1)
				acc = base;
			else if (j == 2)
				ecp_nistz256_point_double(&acc, &base);
			else
				ecp_nistz256_point_add(&acc, &acc, &base); /* invariant 5 */
			ecp_nistz256_sqr_mont(c2, c);
			ecp_nistz256_mul_mont(c3, c2, c);
			ecp_nistz256_mul_mont(a.x, acc.x, c2);
			ecp_nistz256_mul_mont(a.y, acc.y, c3);
			ecp_nistz256_scatter_w7(t->block[i], &a, j - 1);
			memcpy(z[j - 1], acc.z, sizeof z[0]);
			ecp_nistz256_mul_mont(c, c, acc.z);
		}
		ecp_nistz256_point_double(&base, &acc); /* B_(i+1) = 2 * 64 * B_i = 2^7 * B_i */

		/* Back: c = 1/c_j; entry j times c^2 and c^3; then 1/c_(j-1) = Z_j / c_j. */
		fe_inv(c, c);
		for (uint64_t j = COMB_ROW; j >= 1; j--) {
			ecp_nistz256_gather_w7(&a, t->block[i], j);
			ecp_nistz256_sqr_mont(c2, c);
			ecp_nistz256_mul_mont(c3, c2, c);
			ecp_nistz256_mul_mont(a.x, a.x, c2);
			ecp_nistz256_mul_mont(a.y, a.y, c3);
			ecp_nistz256_scatter_w7(t->block[i], &a, j - 1);
			ecp_nistz256_mul_mont(c, c, z[j - 1]);
		}
	}
	return 0;
}
