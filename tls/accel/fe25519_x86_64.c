/* SPDX-License-Identifier: MIT */
/* tls/accel, x86_64: the arithmetic of fe25519.h on OpenSSL's x25519 perlasm
 * (x25519-x86_64.S, generated at build time, ADR-056). Two tables: fe64 (4 x 64-bit words
 * modulo 2^256 - 38, MULX/ADCX/ADOX, used when x25519_fe64_eligible() says the CPU has BMI2
 * and ADX) and fe51 (5 x 51-bit limbs, plain MUL); fe25519_ops_get() picks one per call. The
 * assembly uses general registers only, which the kernel requires (no SSE/AVX state).
 * Replaced on other architectures by fe25519_generic.c. Must never branch on element values:
 * the only branch here is on the CPU's features. */
#include "tls/accel/fe25519.h"

/* The assembly's entry points (SysV ABI). fe51 arguments are 5 limbs, fe64 arguments 4 words;
 * each function reads all of its inputs before writing its output, so outputs may alias. */
void x25519_fe51_mul(uint64_t h[5], const uint64_t f[5], const uint64_t g[5]);
void x25519_fe51_sqr(uint64_t h[5], const uint64_t f[5]);
void x25519_fe51_mul121666(uint64_t h[5], const uint64_t f[5]);
int x25519_fe64_eligible(void); /* nonzero when OPENSSL_ia32cap_P word 2 has BMI2 and ADX */
void x25519_fe64_mul(uint64_t h[4], const uint64_t f[4], const uint64_t g[4]);
void x25519_fe64_sqr(uint64_t h[4], const uint64_t f[4]);
void x25519_fe64_mul121666(uint64_t h[4], const uint64_t f[4]);
void x25519_fe64_add(uint64_t h[4], const uint64_t f[4], const uint64_t g[4]);
void x25519_fe64_sub(uint64_t h[4], const uint64_t f[4], const uint64_t g[4]);
void x25519_fe64_tobytes(uint64_t h[4], const uint64_t f[4]); /* canonical words, not bytes */

/* The tables point at these C wrappers rather than at the assembly: each compiles to a jump,
 * and with -fcf-protection it starts with the ENDBR64 landing pad that an indirect call
 * needs under CET (the generated assembly has none). */

static void fe51_mul_asm(struct fe25519 *h, const struct fe25519 *f, const struct fe25519 *g)
{
	x25519_fe51_mul(h->v, f->v, g->v);
}

static void fe51_sqr_asm(struct fe25519 *h, const struct fe25519 *f)
{
	x25519_fe51_sqr(h->v, f->v);
}

static void fe51_mul121666_asm(struct fe25519 *h, const struct fe25519 *f)
{
	x25519_fe51_mul121666(h->v, f->v);
}

static const struct fe25519_ops fe51_ops = {
	.name = "fe51 x86_64",
	.frombytes = fe51_frombytes,
	.tobytes = fe51_tobytes,
	.add = fe51_add,
	.sub = fe51_sub,
	.mul = fe51_mul_asm,
	.sqr = fe51_sqr_asm,
	.mul121666 = fe51_mul121666_asm,
};

static void fe64_frombytes(struct fe25519 *h, const uint8_t s[FE25519_LEN])
{
	h->v[0] = ld_le64(s);
	h->v[1] = ld_le64(s + 8);
	h->v[2] = ld_le64(s + 16);
	h->v[3] = ld_le64(s + 24) & (UINT64_MAX >> 1); /* drops bit 255 */
	h->v[4] = 0;
}

static void fe64_tobytes(uint8_t s[FE25519_LEN], const struct fe25519 *f)
{
	uint64_t t[4];
	x25519_fe64_tobytes(t, f->v);
	for (size_t i = 0; i < 4; i++)
		st_le64(s + 8 * i, t[i]);
}

static void fe64_add(struct fe25519 *h, const struct fe25519 *f, const struct fe25519 *g)
{
	x25519_fe64_add(h->v, f->v, g->v);
}

static void fe64_sub(struct fe25519 *h, const struct fe25519 *f, const struct fe25519 *g)
{
	x25519_fe64_sub(h->v, f->v, g->v);
}

static void fe64_mul(struct fe25519 *h, const struct fe25519 *f, const struct fe25519 *g)
{
	x25519_fe64_mul(h->v, f->v, g->v);
}

static void fe64_sqr(struct fe25519 *h, const struct fe25519 *f)
{
	x25519_fe64_sqr(h->v, f->v);
}

static void fe64_mul121666(struct fe25519 *h, const struct fe25519 *f)
{
	x25519_fe64_mul121666(h->v, f->v);
}

static const struct fe25519_ops fe64_ops = {
	.name = "fe64 MULX/ADX x86_64",
	.frombytes = fe64_frombytes,
	.tobytes = fe64_tobytes,
	.add = fe64_add,
	.sub = fe64_sub,
	.mul = fe64_mul,
	.sqr = fe64_sqr,
	.mul121666 = fe64_mul121666,
};

const struct fe25519_ops *fe25519_ops_get(void)
{
	return x25519_fe64_eligible() ? &fe64_ops : &fe51_ops;
}
