/* SPDX-License-Identifier: MIT */
/* tls/accel: X25519 (RFC 7748 section 5) — scalar clamping, u decoding, the Montgomery ladder,
 * the inversion and the output check; and the public key X25519(k, 9) as a fixed-base
 * multiplication on edwards25519 over a table generated at build time. The field arithmetic
 * comes from fe25519.h (assembly on x86_64, C elsewhere), chosen once per call; this file is
 * the same on every architecture. It must never branch on, or index memory by, anything
 * secret (scalar bits or digits, ladder and point values); the only branches are on loop
 * counters and the CPU's features. No state: everything lives on the caller's stack for one
 * call; the table is const (.rodata).
 *
 * Secrets: the clamped scalar, its digits and every ladder, point and inversion value live in
 * one struct per operation that is wiped (mem_wipe) before return. Not wiped: what the
 * arithmetic leaves in registers and in its own dead stack frames (the assembly's spills, the
 * C helpers' locals), which later calls overwrite.
 *
 * The fixed base (x25519_public_from_private), design note:
 *  1. k*B is computed on edwards25519 (-x^2 + y^2 = 1 + d x^2 y^2, birationally equivalent to
 *     Curve25519, RFC 7748 section 4.1) for B with y = 4/5, the image of u = 9, and mapped
 *     back by u = (1 + y) / (1 - y) = (Z + Y) / (Z - Y). u does not depend on x's sign, so
 *     it is X25519(k, 9) whichever root of B's x the table was built from.
 *  2. The clamped scalar (< 2^255) is written as 64 signed radix-16 digits e[i] in [-8, 8],
 *     k = sum e[i] 16^i, so k*B = 16 (sum over odd i of e[i] 256^((i-1)/2) B) + (sum over
 *     even i of e[i] 256^(i/2) B): 64 mixed additions of table entries and 4 doublings.
 *     The table holds j * 256^r * B for r < 32 and 1 <= j <= 8 as (y + x, y - x, 2 d x y),
 *     canonical, 4 words each: 24 KiB of const data, generated at build time by
 *     tls/accel/gen_x25519_base.py into $(B)/gen/x25519_base_table.h. Not built at boot:
 *     that took 0.7-0.9 ms on an x86_64 host (one inversion per entry) and would need a
 *     table written once at run time; in .rodata it costs no boot time and stays read-only.
 *  3. Constant time: every digit reads all 8 entries of its row and keeps one with masks
 *     (digit 0 keeps the neutral element (1, 1, 0)); a negative digit swaps y + x and y - x
 *     and replaces 2 d x y by p - 2 d x y, by masks; rows and entries are walked in the same
 *     order for every scalar. The addition and doubling laws below are complete on
 *     edwards25519 (a = -1 is a square, d is not), so no input needs a special case: the
 *     neutral start, equal or opposite operands are all handled by the same formulas.
 *  4. Bounds (fe25519.h): add and sub take reduced elements or, as f, one add of them; mul
 *     and sqr take at most one add/sub of those. Each formula below says where it relies on
 *     the wider case. */
#include "tls/accel/x25519.h"

#include "lib/mem.h"
#include "tls/accel/fe25519.h"
#include "x25519_base_table.h" /* generated into $(B)/gen: tls/accel/module.mk */

/* The inversion's powers of z. */
struct fe_invert_tmp {
	struct fe25519 t0, t1, t2, t3;
};

struct x25519_state {
	uint8_t k[X25519_LEN]; /* the clamped scalar */
	struct fe25519 x1, x2, z2, x3, z3;
	struct fe25519 a, b, c, d, aa, bb, e; /* one ladder step's values */
	struct fe_invert_tmp inv;
};

/* Hides x's value from the optimiser, so a mask built from a secret bit stays arithmetic and
 * is not turned back into a branch on that bit. Emits no instruction. */
static inline uint64_t value_barrier(uint64_t x)
{
	__asm__("" : "+r"(x));
	return x;
}

/* Swaps f and g when mask is all ones, leaves them when it is zero; same work either way. */
static void fe_cswap(struct fe25519 *f, struct fe25519 *g, uint64_t mask)
{
	for (size_t i = 0; i < 5; i++) {
		uint64_t x = mask & (f->v[i] ^ g->v[i]);
		f->v[i] ^= x;
		g->v[i] ^= x;
	}
}

/* h = f^(2^n), n >= 1 (public). */
static void fe_sqr_n(const struct fe25519_ops *fe, struct fe25519 *h, const struct fe25519 *f,
	unsigned n)
{
	fe->sqr(h, f);
	while (--n)
		fe->sqr(h, h);
}

/* out = z^(p - 2) = z^(2^255 - 21) = 1 / z (Fermat): a fixed chain of 254 squarings and 11
 * multiplications, the same for every z. z = 0 gives 0. out may alias z; t may not. */
static void fe_invert(const struct fe25519_ops *fe, struct fe25519 *out, const struct fe25519 *z,
	struct fe_invert_tmp *t)
{
	struct fe25519 *t0 = &t->t0, *t1 = &t->t1, *t2 = &t->t2, *t3 = &t->t3;

	fe->sqr(t0, z);              /* z^2 */
	fe_sqr_n(fe, t1, t0, 2);     /* z^8 */
	fe->mul(t1, t1, z);          /* z^9 */
	fe->mul(t0, t0, t1);         /* z^11 */
	fe->sqr(t2, t0);             /* z^22 */
	fe->mul(t1, t1, t2);         /* z^31 = z^(2^5 - 1) */
	fe_sqr_n(fe, t2, t1, 5);
	fe->mul(t1, t2, t1);         /* z^(2^10 - 1) */
	fe_sqr_n(fe, t2, t1, 10);
	fe->mul(t2, t2, t1);         /* z^(2^20 - 1) */
	fe_sqr_n(fe, t3, t2, 20);
	fe->mul(t2, t3, t2);         /* z^(2^40 - 1) */
	fe_sqr_n(fe, t2, t2, 10);
	fe->mul(t1, t2, t1);         /* z^(2^50 - 1) */
	fe_sqr_n(fe, t2, t1, 50);
	fe->mul(t2, t2, t1);         /* z^(2^100 - 1) */
	fe_sqr_n(fe, t3, t2, 100);
	fe->mul(t2, t3, t2);         /* z^(2^200 - 1) */
	fe_sqr_n(fe, t2, t2, 50);
	fe->mul(t1, t2, t1);         /* z^(2^250 - 1) */
	fe_sqr_n(fe, t1, t1, 5);     /* z^(2^255 - 32) */
	fe->mul(out, t1, t0);        /* z^(2^255 - 21) */
}

/* st->x2 = st->x2 / st->z2. */
static void ladder_finish(const struct fe25519_ops *fe, struct x25519_state *st)
{
	fe_invert(fe, &st->z2, &st->z2, &st->inv);
	fe->mul(&st->x2, &st->x2, &st->z2);
}

/* One step of RFC 7748's ladder on (x2 : z2) and (x3 : z3), whose difference is x1:
 * doubles the first and adds the two. a24 = 121665 is applied as AA + 121665 E =
 * BB + 121666 E, the form the assembly provides. Every operand respects fe25519.h's bounds:
 * add and sub see only reduced values (outputs of frombytes, mul, sqr, mul121666, and the
 * constants 0 and 1), and mul, sqr and mul121666 see at most one add or sub of them. */
static void ladder_step(const struct fe25519_ops *fe, struct x25519_state *st)
{
	fe->add(&st->a, &st->x2, &st->z2);   /* A = x2 + z2 */
	fe->sub(&st->b, &st->x2, &st->z2);   /* B = x2 - z2 */
	fe->add(&st->c, &st->x3, &st->z3);   /* C = x3 + z3 */
	fe->sub(&st->d, &st->x3, &st->z3);   /* D = x3 - z3 */
	fe->mul(&st->d, &st->d, &st->a);     /* DA */
	fe->mul(&st->c, &st->c, &st->b);     /* CB */
	fe->sqr(&st->aa, &st->a);            /* AA */
	fe->sqr(&st->bb, &st->b);            /* BB */
	fe->add(&st->x3, &st->d, &st->c);
	fe->sqr(&st->x3, &st->x3);           /* x3 = (DA + CB)^2 */
	fe->sub(&st->z3, &st->d, &st->c);
	fe->sqr(&st->z3, &st->z3);
	fe->mul(&st->z3, &st->z3, &st->x1);  /* z3 = x1 (DA - CB)^2 */
	fe->mul(&st->x2, &st->aa, &st->bb);  /* x2 = AA BB */
	fe->sub(&st->e, &st->aa, &st->bb);   /* E = AA - BB */
	fe->mul121666(&st->a, &st->e);
	fe->add(&st->a, &st->a, &st->bb);
	fe->mul(&st->z2, &st->e, &st->a);    /* z2 = E (BB + 121666 E) */
}

int x25519_scalarmult(uint8_t out[X25519_LEN], const uint8_t scalar[X25519_LEN],
	const uint8_t u[X25519_LEN])
{
	const struct fe25519_ops *fe = fe25519_ops_get();
	struct x25519_state st;

	/* Read both inputs before out is written: out may alias either. */
	for (size_t i = 0; i < X25519_LEN; i++)
		st.k[i] = scalar[i];
	st.k[0] &= 248;
	st.k[31] &= 127;
	st.k[31] |= 64;
	fe->frombytes(&st.x1, u); /* masks bit 255; u >= p is taken as u mod p */

	st.x2 = (struct fe25519){ .v = { 1 } };
	st.z2 = (struct fe25519){ .v = { 0 } };
	st.x3 = st.x1;
	st.z3 = (struct fe25519){ .v = { 1 } };

	/* Bits 254 down to 0 (bit 255 is clamped off). The swap is deferred: pairs are swapped
	 * only when consecutive bits differ, and once more at the end. */
	uint64_t swap = 0;
	for (unsigned i = 255; i-- > 0;) {
		uint64_t bit = (uint64_t)(st.k[i >> 3] >> (i & 7)) & 1;
		uint64_t mask = value_barrier(0 - (swap ^ bit));
		fe_cswap(&st.x2, &st.x3, mask);
		fe_cswap(&st.z2, &st.z3, mask);
		swap = bit;
		ladder_step(fe, &st);
	}
	uint64_t mask = value_barrier(0 - swap);
	fe_cswap(&st.x2, &st.x3, mask);
	fe_cswap(&st.z2, &st.z3, mask);

	ladder_finish(fe, &st);
	fe->tobytes(out, &st.x2);
	mem_wipe(&st, sizeof st);

	/* RFC 7748 section 6.1: an all-zero result means u had small order. Constant time: no
	 * early exit, and the OR of the bytes becomes the flag without a comparison. */
	uint32_t acc = 0;
	for (size_t i = 0; i < X25519_LEN; i++)
		acc |= out[i];
	return -(int)((acc - 1) >> 31); /* acc <= 255, so acc - 1 wraps only when acc == 0 */
}

/* ---- the fixed base: public keys (design note at the top) ---- */

/* Points on edwards25519, named by what x and y are:
 *  ed_ext   extended: x = X/Z, y = Y/Z, x y = T/Z
 *  ed_proj  projective: x = X/Z, y = Y/Z
 *  ed_done  completed, an addition's or doubling's output: x = X/Z, y = Y/T
 *  ed_pre   a table entry: y + x, y - x, 2 d x y (affine) */
struct ed_ext {
	struct fe25519 x, y, z, t;
};
struct ed_proj {
	struct fe25519 x, y, z;
};
struct ed_done {
	struct fe25519 x, y, z, t;
};
struct ed_pre {
	struct fe25519 ypx, ymx, xy2d;
};

#define X25519_BASE_DIGITS ((size_t)2 * X25519_LEN) /* radix-16 digits of a scalar */

struct x25519_base_state {
	uint8_t k[X25519_LEN];          /* the clamped scalar */
	int8_t e[X25519_BASE_DIGITS];   /* its radix-16 digits, each in [-8, 8] */
	uint64_t w[X25519_BASE_WORDS];  /* the entry chosen for one digit */
	uint8_t b[FE25519_LEN];         /* one of its elements on the way to frombytes */
	struct ed_pre pre;
	struct ed_ext h;                /* the sum so far */
	struct ed_proj s;               /* between doublings */
	struct ed_done r;
	struct fe25519 tmp;             /* one formula's intermediate */
	struct fe25519 num;             /* Z + Y at the end */
	struct fe_invert_tmp inv;
};

/* e = the clamped k in signed radix 16: e[2i], e[2i+1] are k[i]'s nibbles, then each digit
 * >= 8 gives 16 to the next. Every value stays non-negative before a shift, so the carries
 * are plain arithmetic (no sign-dependent shift). k < 2^255, so the top digit ends <= 8. */
static void base_digits(int8_t e[X25519_BASE_DIGITS], const uint8_t k[X25519_LEN])
{
	for (size_t i = 0; i < X25519_LEN; i++) {
		e[2 * i] = (int8_t)(k[i] & 15);
		e[2 * i + 1] = (int8_t)(k[i] >> 4);
	}
	int carry = 0;
	for (size_t i = 0; i < X25519_BASE_DIGITS - 1; i++) {
		int v = e[i] + carry;     /* 0..16 */
		carry = (v + 8) >> 4;     /* 1 when v >= 8 */
		e[i] = (int8_t)(v - (carry << 4));
	}
	e[X25519_BASE_DIGITS - 1] = (int8_t)(e[X25519_BASE_DIGITS - 1] + carry);
}

/* st->pre = digit * 256^row * B, digit in [-8, 8] (secret), row public. */
static void base_select(const struct fe25519_ops *fe, struct x25519_base_state *st, size_t row,
	int8_t digit)
{
	static const uint64_t p[4] = { UINT64_MAX - 18, UINT64_MAX, UINT64_MAX, UINT64_MAX >> 1 };
	uint64_t dw = (uint64_t)(int64_t)digit;
	uint64_t neg = value_barrier(0 - (dw >> 63)); /* all ones when digit < 0 */
	uint64_t mag = (dw ^ neg) - neg;                /* |digit|, 0..8 */
	uint64_t *w = st->w;

	/* One mask per candidate, exactly one of them all ones: the neutral element
	 * (y + x, y - x, 2 d x y) = (1, 1, 0) for mag 0, entry j for mag j + 1. mag ^ (j + 1) is
	 * 0..15: minus 1 wraps to the top bit only when they are equal. Every word of every
	 * entry of the row is read, whatever mag is. */
	uint64_t m0 = value_barrier(0 - ((mag - 1) >> 63)), m[X25519_BASE_COLS];
	for (size_t j = 0; j < X25519_BASE_COLS; j++)
		m[j] = value_barrier(0 - (((mag ^ (j + 1)) - 1) >> 63));
	/* The columns written out: gcc -O2 does not unroll that loop, which made the lookups a
	 * third of a key's time; this saves about 40 of 130 cycles per lookup on x86_64. */
	const uint64_t (*t)[X25519_BASE_WORDS] = x25519_base_table[row];
	STATIC_ASSERT(X25519_BASE_COLS == 8, "one term per column below");
	for (size_t i = 0; i < X25519_BASE_WORDS; i++)
		w[i] = (m0 & (uint64_t)(i == 0 || i == 4)) | (m[0] & t[0][i]) | (m[1] & t[1][i]) |
		       (m[2] & t[2][i]) | (m[3] & t[3][i]) | (m[4] & t[4][i]) | (m[5] & t[5][i]) |
		       (m[6] & t[6][i]) | (m[7] & t[7][i]);

	/* -(x, y) = (-x, y): y + x and y - x trade places and 2 d x y becomes p - 2 d x y (a
	 * canonical c gives p - c in [1, p]: frombytes takes p as 0). */
	uint64_t borrow = 0;
	for (size_t i = 0; i < 4; i++) {
		uint64_t x = neg & (w[i] ^ w[4 + i]);
		w[i] ^= x;
		w[4 + i] ^= x;
		unsigned __int128 diff = (unsigned __int128)p[i] - w[8 + i] - borrow;
		borrow = (uint64_t)(diff >> 64) & 1;
		w[8 + i] ^= neg & (w[8 + i] ^ (uint64_t)diff);
	}

	struct fe25519 *dst[3] = { &st->pre.ypx, &st->pre.ymx, &st->pre.xy2d };
	for (size_t f = 0; f < 3; f++) {
		for (size_t i = 0; i < 4; i++)
			st_le64(st->b + 8 * i, w[4 * f + i]);
		fe->frombytes(dst[f], st->b);
	}
}

/* r = h + pre (the unified law for a = -1 with k = 2d, complete on edwards25519):
 * A = (Y - X)(y - x), B = (Y + X)(y + x), C = T 2dxy, D = 2Z; r = (B - A, B + A, D + C,
 * D - C). h's coordinates are reduced; D is one add of them, the f of D + C and D - C. */
static void ed_add_pre(const struct fe25519_ops *fe, struct x25519_base_state *st)
{
	const struct ed_ext *h = &st->h;
	struct ed_done *r = &st->r;

	fe->sub(&r->x, &h->y, &h->x);
	fe->mul(&r->x, &r->x, &st->pre.ymx);   /* A */
	fe->add(&r->y, &h->y, &h->x);
	fe->mul(&r->y, &r->y, &st->pre.ypx);   /* B */
	fe->mul(&r->t, &h->t, &st->pre.xy2d);  /* C */
	fe->add(&st->tmp, &h->z, &h->z);       /* D */
	fe->add(&r->z, &st->tmp, &r->t);       /* D + C */
	fe->sub(&r->t, &st->tmp, &r->t);       /* D - C */
	fe->add(&st->tmp, &r->y, &r->x);       /* B + A */
	fe->sub(&r->x, &r->y, &r->x);          /* B - A */
	r->y = st->tmp;
}

/* r = 2 s: with XX = X^2, YY = Y^2, S = (X + Y)^2 and C = 2 Z^2, r = (XX + YY - S, XX + YY,
 * XX - YY, XX + C - YY) (the doubling of a = -1 with each ratio's signs flipped so that every
 * sub's g is reduced). C is Z (Z + Z), a mul, so that it is reduced too. */
static void ed_double(const struct fe25519_ops *fe, struct x25519_base_state *st)
{
	const struct ed_proj *s = &st->s;
	struct ed_done *r = &st->r;

	fe->sqr(&r->x, &s->x);                 /* XX */
	fe->sqr(&r->z, &s->y);                 /* YY */
	fe->add(&r->t, &s->x, &s->y);
	fe->sqr(&r->t, &r->t);                 /* S */
	fe->add(&st->tmp, &s->z, &s->z);
	fe->mul(&st->tmp, &st->tmp, &s->z);    /* C */
	fe->add(&r->y, &r->x, &r->z);          /* XX + YY */
	fe->sub(&r->t, &r->y, &r->t);          /* XX + YY - S, in t for now */
	fe->add(&st->tmp, &st->tmp, &r->x);    /* XX + C */
	fe->sub(&r->x, &r->x, &r->z);          /* XX - YY, in x for now */
	fe->sub(&st->tmp, &st->tmp, &r->z);    /* XX + C - YY */
	r->z = r->x;
	r->x = r->t;
	r->t = st->tmp;
}

static void ed_done_to_ext(const struct fe25519_ops *fe, struct ed_ext *h, const struct ed_done *r)
{
	fe->mul(&h->x, &r->x, &r->t);
	fe->mul(&h->y, &r->y, &r->z);
	fe->mul(&h->z, &r->z, &r->t);
	fe->mul(&h->t, &r->x, &r->y);
}

static void ed_done_to_proj(const struct fe25519_ops *fe, struct ed_proj *s, const struct ed_done *r)
{
	fe->mul(&s->x, &r->x, &r->t);
	fe->mul(&s->y, &r->y, &r->z);
	fe->mul(&s->z, &r->z, &r->t);
}

void x25519_public_from_private(uint8_t pub[X25519_LEN], const uint8_t priv[X25519_LEN])
{
	const struct fe25519_ops *fe = fe25519_ops_get();
	struct x25519_base_state st;

	/* Read the scalar before pub is written: pub may alias it. */
	for (size_t i = 0; i < X25519_LEN; i++)
		st.k[i] = priv[i];
	st.k[0] &= 248;
	st.k[31] &= 127;
	st.k[31] |= 64;
	base_digits(st.e, st.k);

	/* h = the neutral element (0 : 1 : 1 : 0), then the odd digits' multiples of 16 B. */
	st.h.x = (struct fe25519){ .v = { 0 } };
	st.h.y = (struct fe25519){ .v = { 1 } };
	st.h.z = (struct fe25519){ .v = { 1 } };
	st.h.t = (struct fe25519){ .v = { 0 } };
	for (size_t i = 1; i < X25519_BASE_DIGITS; i += 2) {
		base_select(fe, &st, i / 2, st.e[i]);
		ed_add_pre(fe, &st);
		ed_done_to_ext(fe, &st.h, &st.r);
	}

	/* h = 16 h: three doublings in projective coordinates, the fourth back to extended. */
	st.s = (struct ed_proj){ .x = st.h.x, .y = st.h.y, .z = st.h.z };
	for (unsigned n = 0; n < 4; n++) {
		ed_double(fe, &st);
		if (n < 3)
			ed_done_to_proj(fe, &st.s, &st.r);
	}
	ed_done_to_ext(fe, &st.h, &st.r);

	for (size_t i = 0; i < X25519_BASE_DIGITS; i += 2) {
		base_select(fe, &st, i / 2, st.e[i]);
		ed_add_pre(fe, &st);
		ed_done_to_ext(fe, &st.h, &st.r);
	}

	/* u = (Z + Y) / (Z - Y). Z - Y = 0 would mean y = 1, the neutral element, which k*B is
	 * not: B has prime order l (just above 2^252), and a clamped scalar, a multiple of 8 in
	 * [2^254, 2^255), is never a multiple of l (4l, 5l, 6l, 7l are the only candidates and
	 * none is divisible by 8). So the result is never all zero either. */
	fe->add(&st.num, &st.h.z, &st.h.y);
	fe->sub(&st.tmp, &st.h.z, &st.h.y);
	fe_invert(fe, &st.tmp, &st.tmp, &st.inv);
	fe->mul(&st.num, &st.num, &st.tmp);
	fe->tobytes(pub, &st.num);
	mem_wipe(&st, sizeof st);
}
