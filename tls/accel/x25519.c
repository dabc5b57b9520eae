/* SPDX-License-Identifier: MIT */
/* tls/accel: X25519 (RFC 7748 section 5) — scalar clamping, u decoding, the Montgomery ladder,
 * the inversion and the output check. The field arithmetic comes from fe25519.h (assembly on
 * x86_64, C elsewhere), chosen once per call; this file is the same on every architecture.
 * It must never branch on, or index memory by, anything secret (scalar bits, ladder values);
 * the only branches are on loop counters and the CPU's features. No state: everything lives
 * on the caller's stack for one call.
 *
 * Secrets: the clamped scalar and every ladder and inversion value live in one struct that is
 * wiped before return. Not wiped: what the arithmetic leaves in registers and in its own dead
 * stack frames (the assembly's spills, the C helpers' locals), which later calls overwrite. */
#include "tls/accel/x25519.h"

#include "tls/accel/fe25519.h"

struct x25519_state {
	uint8_t k[X25519_LEN]; /* the clamped scalar */
	struct fe25519 x1, x2, z2, x3, z3;
	struct fe25519 a, b, c, d, aa, bb, e; /* one ladder step's values */
	struct fe25519 t0, t1, t2, t3;        /* the inversion's powers */
};

/* The stores go through a volatile pointer, so the compiler cannot drop them as dead. */
static void wipe(void *p, size_t len)
{
	volatile uint8_t *v = p;
	while (len--)
		*v++ = 0;
}

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

/* st->x2 = st->x2 / st->z2, by z2^(p - 2) = z2^(2^255 - 21) (Fermat): a fixed chain of 254
 * squarings and 11 multiplications, the same for every z2. z2 = 0 gives 0. */
static void ladder_finish(const struct fe25519_ops *fe, struct x25519_state *st)
{
	const struct fe25519 *z = &st->z2;
	struct fe25519 *t0 = &st->t0, *t1 = &st->t1, *t2 = &st->t2, *t3 = &st->t3;

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
	fe->mul(t1, t1, t0);         /* z^(2^255 - 21) */
	fe->mul(&st->x2, &st->x2, t1);
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
	wipe(&st, sizeof st);

	/* RFC 7748 section 6.1: an all-zero result means u had small order. Constant time: no
	 * early exit, and the OR of the bytes becomes the flag without a comparison. */
	uint32_t acc = 0;
	for (size_t i = 0; i < X25519_LEN; i++)
		acc |= out[i];
	return -(int)((acc - 1) >> 31); /* acc <= 255, so acc - 1 wraps only when acc == 0 */
}

void x25519_public_from_private(uint8_t pub[X25519_LEN], const uint8_t priv[X25519_LEN])
{
	static const uint8_t base_u[X25519_LEN] = { 9 };
	/* Never -1 here: 9 generates the subgroup of prime order l (just above 2^252) and a
	 * clamped scalar, a multiple of 8 in [2^254, 2^255), is never a multiple of l there
	 * (4l, 5l, 6l, 7l are the only candidates and none is divisible by 8). */
	(void)x25519_scalarmult(pub, priv, base_u);
}
