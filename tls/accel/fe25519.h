/* SPDX-License-Identifier: MIT */
/* tls/accel: arithmetic modulo p = 2^255 - 19, as x25519.c's ladder and fixed-base
 * multiplication use it. Private to tls/accel (x25519.c and the tests). One file per
 * architecture supplies the arithmetic and is chosen by the build, never by #ifdef:
 * fe25519_x86_64.c (OpenSSL's perlasm: the 64-bit-limb MULX/ADX code when the CPU has it, else
 * the 51-bit one) or fe25519_generic.c (portable C). x25519.c reaches the arithmetic through a
 * table chosen once per scalar multiplication, so one copy of its constant-time code serves
 * every representation.
 *
 * Representations (x25519.c never looks inside an element):
 *  - fe51: v[0..4] are 51-bit limbs, value = sum v[i] * 2^(51 i); limbs may exceed 51 bits
 *    within the bounds below.
 *  - fe64: v[0..3] are the 64-bit words of a value below 2^256 (so up to 2p + 37: not
 *    canonical), v[4] is unused and stays whatever it was.
 *  In both, 0 and 1 are { 0 } and { 1 }, which lets the ladder initialise without the table.
 *
 * Bounds, stated for fe51 (fe64 accepts every value below 2^256 everywhere):
 *  - "reduced": every limb < 2^52. frombytes, mul, sqr and mul121666 return reduced elements.
 *  - add and sub take two reduced elements and return limbs < 2^54. They also take as f one
 *    add of two reduced elements (limbs < 2^53) with g reduced, and still return limbs
 *    < 2^54 (x25519.c's Edwards formulas need this): add gives < 2^53 + 2^52, and sub's
 *    f + 4p - g < 2^53 + 2^53, 4p's limbs being above any reduced g.
 *  - mul, sqr and mul121666 take limbs < 2^54: reduced elements or one add/sub of them
 *    (either form above).
 *    The x86_64 assembly needs its 128-bit column sums below 2^115 (and the top column below
 *    2^110.7); limbs < 2^54 keep them at 2^114.3 and 2^110.3.
 *  - tobytes takes a reduced element.
 * Outputs may alias inputs in every operation. No operation branches on or indexes memory by
 * the value of an element. All pointers are borrowed for the call. */
#ifndef URMQTT_TLS_ACCEL_FE25519_H
#define URMQTT_TLS_ACCEL_FE25519_H

#include <stddef.h>
#include <stdint.h>

#include "lib/bytes.h"

#define FE25519_LEN 32

struct fe25519 {
	uint64_t v[5];
};

struct fe25519_ops {
	const char *name; /* for test and benchmark output, e.g. "fe64 MULX/ADX x86_64" */
	/* h = the little-endian number in s, bit 255 ignored; values >= p are accepted (RFC 7748
	 * section 5) and behave as their residue. */
	void (*frombytes)(struct fe25519 *h /* out */, const uint8_t s[FE25519_LEN]);
	/* s = the canonical (< p) little-endian encoding of f. */
	void (*tobytes)(uint8_t s[FE25519_LEN] /* out */, const struct fe25519 *f);
	void (*add)(struct fe25519 *h /* out */, const struct fe25519 *f, const struct fe25519 *g);
	/* h = f - g */
	void (*sub)(struct fe25519 *h /* out */, const struct fe25519 *f, const struct fe25519 *g);
	void (*mul)(struct fe25519 *h /* out */, const struct fe25519 *f, const struct fe25519 *g);
	void (*sqr)(struct fe25519 *h /* out */, const struct fe25519 *f);
	/* h = 121666 f, the ladder's (A + 2) / 4 for Curve25519's A = 486662 */
	void (*mul121666)(struct fe25519 *h /* out */, const struct fe25519 *f);
};

/* The arithmetic to run now: on x86_64 fe64 when x25519_fe64_eligible() (MULX and ADX in
 * OPENSSL_ia32cap_P, set by accel_cpu_init), else fe51; elsewhere portable C. Cheap, so the
 * ladder asks once per scalar multiplication; the answer depends only on the CPU's features,
 * never on secrets. Returns a static table. */
const struct fe25519_ops *fe25519_ops_get(void);

/* ---- fe51 helpers shared by the assembly-backed and the portable fe51 (no arithmetic that
 * differs by architecture lives here). */

#define FE51_MASK ((UINT64_C(1) << 51) - 1)

static inline void fe51_frombytes(struct fe25519 *h, const uint8_t s[FE25519_LEN])
{
	uint64_t w0 = ld_le64(s), w1 = ld_le64(s + 8), w2 = ld_le64(s + 16), w3 = ld_le64(s + 24);
	h->v[0] = w0 & FE51_MASK;
	h->v[1] = (w0 >> 51 | w1 << 13) & FE51_MASK;
	h->v[2] = (w1 >> 38 | w2 << 26) & FE51_MASK;
	h->v[3] = (w2 >> 25 | w3 << 39) & FE51_MASK;
	h->v[4] = (w3 >> 12) & FE51_MASK; /* drops bit 255 */
}

/* One carry pass around the ring (2^255 = 19): limbs 1..4 end below 2^51, limb 0 below
 * 2^51 + 19 * (the old limb 4 >> 51). */
static inline void fe51_carry(uint64_t t[5])
{
	t[1] += t[0] >> 51;
	t[0] &= FE51_MASK;
	t[2] += t[1] >> 51;
	t[1] &= FE51_MASK;
	t[3] += t[2] >> 51;
	t[2] &= FE51_MASK;
	t[4] += t[3] >> 51;
	t[3] &= FE51_MASK;
	t[0] += 19 * (t[4] >> 51);
	t[4] &= FE51_MASK;
}

static inline void fe51_tobytes(uint8_t s[FE25519_LEN], const struct fe25519 *f)
{
	uint64_t t[5] = { f->v[0], f->v[1], f->v[2], f->v[3], f->v[4] };
	fe51_carry(t);
	fe51_carry(t);
	/* Limbs 1..4 are now below 2^51 and limb 0 below 2^51 + 19, so value < 2^255 + 19 < 2p.
	 * The carry chain of value + 19 gives q = 1 exactly when value >= p. */
	uint64_t q = (t[0] + 19) >> 51;
	q = (t[1] + q) >> 51;
	q = (t[2] + q) >> 51;
	q = (t[3] + q) >> 51;
	q = (t[4] + q) >> 51;
	/* value - q p = value + 19 q - q 2^255: add 19 q, carry, and drop bit 255. */
	t[0] += 19 * q;
	t[1] += t[0] >> 51;
	t[0] &= FE51_MASK;
	t[2] += t[1] >> 51;
	t[1] &= FE51_MASK;
	t[3] += t[2] >> 51;
	t[2] &= FE51_MASK;
	t[4] += t[3] >> 51;
	t[3] &= FE51_MASK;
	t[4] &= FE51_MASK;
	st_le64(s, t[0] | t[1] << 51);
	st_le64(s + 8, t[1] >> 13 | t[2] << 38);
	st_le64(s + 16, t[2] >> 26 | t[3] << 25);
	st_le64(s + 24, t[3] >> 39 | t[4] << 12);
}

static inline void fe51_add(struct fe25519 *h, const struct fe25519 *f, const struct fe25519 *g)
{
	for (size_t i = 0; i < 5; i++)
		h->v[i] = f->v[i] + g->v[i];
}

/* f + 4p - g: 4p's limbs (2^53 - 76, then 2^53 - 4) exceed any reduced limb, so no limb
 * underflows, and the result stays below 2^52 + 2^53 < 2^54. */
static inline void fe51_sub(struct fe25519 *h, const struct fe25519 *f, const struct fe25519 *g)
{
	h->v[0] = f->v[0] + ((UINT64_C(1) << 53) - 76) - g->v[0];
	for (size_t i = 1; i < 5; i++)
		h->v[i] = f->v[i] + ((UINT64_C(1) << 53) - 4) - g->v[i];
}

#endif
