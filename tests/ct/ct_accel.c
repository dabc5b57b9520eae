/* SPDX-License-Identifier: MIT
 * tests/ct: the constant-time check of tls/accel's curve code (ctgrind style), run by
 * tests/smoke/ct-accel.sh under valgrind memcheck. Each secret input (P-256 private keys and
 * nonces, X25519 scalars) is marked undefined with VALGRIND_MAKE_MEM_UNDEFINED before the call,
 * so memcheck reports every branch and every memory address that the secret reaches; results
 * are marked defined again (they are public) before this program looks at them. Any report
 * outside the one suppression of tests/ct/accel.supp fails the run.
 *   ct_accel check base     the architecture's arithmetic without optional instructions
 *                           (x86_64: nistz256 and fe51 without MULX/ADX; aarch64: nistz256
 *                           Armv8 and the portable X25519)
 *   ct_accel check mulx     x86_64: the MULX/ADCX/ADOX code of both (the CPU must have them)
 *   ct_accel check generic  x86_64: X25519 on the portable C field, linked in renamed
 *   ct_accel control        the negative control: a secret-dependent branch and a secret
 *                           array index of our own; valgrind must report both
 * Per path: P-256 public key, ECDH and signing, X25519 scalar multiplication and public key
 * (the fixed-base multiplication, also on scalars that reach every signed digit), each over
 * edge scalars (1, 2, n-1, n-2, powers of two, out of range) and a few pseudo-random ones; the outputs are checked (known answers, ECDH against the public key, signatures
 * verified, X25519's RFC 7748 vectors) so that a path that did not run cannot pass.
 * Refuses to run outside valgrind: nothing would be checked there. Exit 0 when every result
 * is right and memcheck counted no error; the per-operation error counts are printed. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <valgrind/memcheck.h>

#include "tls/accel/accel.h"
#include "tls/accel/cpu.h"
#include "tls/accel/fe25519.h"
#include "tls/accel/p256.h"
#include "tls/accel/x25519.h"

#if defined(__x86_64__)
/* The portable X25519, linked in a second time under generic_ names (tests/ct/module.mk). */
int x25519_generic_scalarmult(uint8_t out[X25519_LEN], const uint8_t scalar[X25519_LEN],
	const uint8_t u[X25519_LEN]);
void x25519_generic_public_from_private(uint8_t pub[X25519_LEN], const uint8_t priv[X25519_LEN]);
const struct fe25519_ops *fe25519_generic_ops_get(void);

/* The assembly's feature words (tls/accel/cpu_x86_64.c owns them). valgrind's synthetic CPUID
 * hides ADX from the program, so accel_cpu_use_optional(true) alone would leave the MULX/ADX
 * code unchecked: the mulx path sets the bits itself (valgrind executes MULX, ADCX, ADOX). */
extern unsigned int OPENSSL_ia32cap_P[4];
#define CAP7_BMI1 (1u << 3)
#define CAP7_BMI2 (1u << 8)
#define CAP7_ADX (1u << 19)
#endif

/* ---- secrets and publication ---- */

static void ct_secret(const void *p, size_t len)
{
	VALGRIND_MAKE_MEM_UNDEFINED(p, len);
}

static void ct_public(const void *p, size_t len)
{
	VALGRIND_MAKE_MEM_DEFINED(p, len);
}

/* memcheck's own count of the errors it reported (suppressed ones are not counted). */
static unsigned long errors_now(void)
{
	return (unsigned long)VALGRIND_COUNT_ERRORS;
}

/* One row per operation: how often it ran and what memcheck said meanwhile. */
struct op {
	const char *name;
	unsigned calls;
	unsigned long errors;
	unsigned long start;
};

static void op_begin(struct op *op)
{
	op->calls++;
	op->start = errors_now();
}

static void op_end(struct op *op)
{
	op->errors += errors_now() - op->start;
}

static unsigned n_wrong;

static void wrong(const char *what, unsigned i)
{
	printf("WRONG %s (case %u)\n", what, i);
	n_wrong++;
}

/* ---- inputs ---- */

static void hex(uint8_t *out, const char *h, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned v;
		if (sscanf(h + 2 * i, "%2x", &v) != 1) {
			fprintf(stderr, "bad hex constant %s\n", h);
			exit(2);
		}
		out[i] = (uint8_t)v;
	}
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static void random_bytes(uint8_t *out, size_t len, uint64_t *s)
{
	for (size_t i = 0; i < len; i++)
		out[i] = (uint8_t)splitmix(s);
}

static const char HEX_N[] = "ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551";
static const char HEX_G[] = "04"
			    "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
			    "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5";

/* P-256 scalars, big-endian: edge values, then pseudo-random ones, then three out of range
 * (0, n, 2^256 - 1), which must be refused. */
#define P256_N_EDGE 9
#define P256_N_RANDOM 5
#define P256_N_VALID (P256_N_EDGE + P256_N_RANDOM)
#define P256_N_INVALID 3
#define P256_N_SCALARS (P256_N_VALID + P256_N_INVALID)
static uint8_t p256_scalars[P256_N_SCALARS][P256_SCALAR_LEN];

static void p256_scalars_make(uint64_t seed)
{
	uint8_t n[P256_SCALAR_LEN], (*s)[P256_SCALAR_LEN] = p256_scalars;
	hex(n, HEX_N, sizeof n);
	memset(s, 0, sizeof p256_scalars);
	s[0][31] = 1;
	s[1][31] = 2;
	s[2][31] = 3;
	s[3][31] = 0x10;
	memcpy(s[4], n, sizeof n);
	s[4][31] -= 1; /* n - 1 (n ends in 0x51: no borrow) */
	memcpy(s[5], n, sizeof n);
	s[5][31] -= 2;
	s[6][15] = 1;   /* 2^128 */
	s[7][0] = 0x80; /* 2^255 */
	memset(s[8], 0xff, sizeof s[8]);
	s[8][0] = 0x7f; /* 2^255 - 1 */
	for (unsigned i = P256_N_EDGE; i < P256_N_VALID; i++) {
		random_bytes(s[i], P256_SCALAR_LEN, &seed);
		s[i][0] &= 0x7f; /* below 2^255 < n */
		s[i][0] |= 0x40;
	}
	/* P256_N_VALID: 0 (already) */
	memcpy(s[P256_N_VALID + 1], n, sizeof n);
	memset(s[P256_N_VALID + 2], 0xff, P256_SCALAR_LEN);
}

/* ---- P-256 ---- */

static struct op op_p256_pub = { .name = "p256_public_from_private" };
static struct op op_p256_ecdh = { .name = "p256_ecdh" };
static struct op op_p256_sign = { .name = "p256_sign_digest" };

static int p256_pub_ct(uint8_t pub[P256_PUBLIC_LEN], const uint8_t priv[P256_SCALAR_LEN])
{
	uint8_t d[P256_SCALAR_LEN];
	int rc;
	memcpy(d, priv, sizeof d);
	ct_secret(d, sizeof d);
	op_begin(&op_p256_pub);
	rc = p256_public_from_private(pub, d);
	op_end(&op_p256_pub);
	ct_public(&rc, sizeof rc);
	ct_public(pub, P256_PUBLIC_LEN);
	return rc;
}

static int p256_ecdh_ct(uint8_t x[P256_SCALAR_LEN], const uint8_t priv[P256_SCALAR_LEN],
	const uint8_t peer[P256_PUBLIC_LEN])
{
	uint8_t d[P256_SCALAR_LEN];
	int rc;
	memcpy(d, priv, sizeof d);
	ct_secret(d, sizeof d);
	op_begin(&op_p256_ecdh);
	rc = p256_ecdh(x, d, peer);
	op_end(&op_p256_ecdh);
	ct_public(&rc, sizeof rc);
	ct_public(x, P256_SCALAR_LEN);
	return rc;
}

static int p256_sign_ct(uint8_t sig[P256_SIG_LEN], const uint8_t priv[P256_SCALAR_LEN],
	const uint8_t *digest, size_t digest_len, const uint8_t k[P256_SCALAR_LEN])
{
	uint8_t d[P256_SCALAR_LEN], kk[P256_SCALAR_LEN];
	int rc;
	memcpy(d, priv, sizeof d);
	memcpy(kk, k, sizeof kk);
	ct_secret(d, sizeof d);
	ct_secret(kk, sizeof kk);
	op_begin(&op_p256_sign);
	rc = p256_sign_digest(sig, d, digest, digest_len, kk);
	op_end(&op_p256_sign);
	ct_public(&rc, sizeof rc);
	ct_public(sig, P256_SIG_LEN);
	return rc;
}

static void p256_run(uint64_t seed)
{
	uint8_t g[P256_PUBLIC_LEN], pub[P256_N_VALID][P256_PUBLIC_LEN], out[P256_PUBLIC_LEN];
	uint8_t x[P256_SCALAR_LEN], y[P256_SCALAR_LEN], sig[P256_SIG_LEN], digest[48];

	hex(g, HEX_G, sizeof g);
	p256_scalars_make(seed);
	random_bytes(digest, sizeof digest, &seed);

	/* Public keys; 1 * G must be G. Out-of-range keys refused, pub untouched. */
	for (unsigned i = 0; i < P256_N_SCALARS; i++) {
		bool valid = i < P256_N_VALID;
		memset(out, 0xa5, sizeof out);
		int rc = p256_pub_ct(out, p256_scalars[i]);
		if (rc != (valid ? 0 : -1) || (!valid && out[0] != 0xa5))
			wrong("p256_public_from_private verdict", i);
		if (valid)
			memcpy(pub[i], out, sizeof out);
	}
	if (memcmp(pub[0], g, sizeof g) != 0)
		wrong("p256_public_from_private: 1 * G is not G", 0);

	/* ECDH with G as the peer gives the public key's x; with another key's public key, the
	 * same secret both ways. */
	for (unsigned i = 0; i < P256_N_SCALARS; i++) {
		bool valid = i < P256_N_VALID;
		int rc = p256_ecdh_ct(x, p256_scalars[i], g);
		if (rc != (valid ? 0 : -1))
			wrong("p256_ecdh verdict", i);
		if (valid && memcmp(x, pub[i] + 1, sizeof x) != 0)
			wrong("p256_ecdh(d, G) is not x(d * G)", i);
	}
	for (unsigned i = 0; i < P256_N_VALID; i++) {
		unsigned j = P256_N_VALID - 1 - i;
		if (p256_ecdh_ct(x, p256_scalars[i], pub[j]) != 0 ||
			p256_ecdh_ct(y, p256_scalars[j], pub[i]) != 0 || memcmp(x, y, sizeof x) != 0)
			wrong("p256_ecdh not symmetric", i);
	}

	/* Signatures: every key once, every nonce once (the edge nonces included), two digest
	 * lengths; each must verify. Out-of-range keys and nonces refused. */
	for (unsigned i = 0; i < P256_N_VALID; i++) {
		unsigned j = (i * 5 + 3) % P256_N_VALID;
		size_t len = i % 2 ? 32 : 48;
		if (p256_sign_ct(sig, p256_scalars[i], digest, len, p256_scalars[j]) != 0 ||
			p256_verify_digest(pub[i], digest, len, sig) != 0)
			wrong("p256_sign_digest: no valid signature", i);
	}
	for (unsigned i = P256_N_VALID; i < P256_N_SCALARS; i++) {
		if (p256_sign_ct(sig, p256_scalars[i], digest, 32, p256_scalars[0]) != -1 ||
			p256_sign_ct(sig, p256_scalars[0], digest, 32, p256_scalars[i]) != -1)
			wrong("p256_sign_digest: out-of-range key or nonce taken", i);
	}
}

/* ---- X25519 ---- */

struct x25519_impl {
	int (*scalarmult)(uint8_t out[X25519_LEN], const uint8_t scalar[X25519_LEN],
		const uint8_t u[X25519_LEN]);
	void (*public_from_private)(uint8_t pub[X25519_LEN], const uint8_t priv[X25519_LEN]);
};

static struct op op_x25519_mul = { .name = "x25519_scalarmult" };
static struct op op_x25519_pub = { .name = "x25519_public_from_private" };

static int x25519_mul_ct(const struct x25519_impl *xi, uint8_t out[X25519_LEN],
	const uint8_t scalar[X25519_LEN], const uint8_t u[X25519_LEN])
{
	uint8_t k[X25519_LEN];
	int rc;
	memcpy(k, scalar, sizeof k);
	ct_secret(k, sizeof k);
	op_begin(&op_x25519_mul);
	rc = xi->scalarmult(out, k, u);
	op_end(&op_x25519_mul);
	ct_public(&rc, sizeof rc);
	ct_public(out, X25519_LEN);
	return rc;
}

static void x25519_pub_ct(const struct x25519_impl *xi, uint8_t pub[X25519_LEN],
	const uint8_t scalar[X25519_LEN])
{
	uint8_t k[X25519_LEN];
	memcpy(k, scalar, sizeof k);
	ct_secret(k, sizeof k);
	op_begin(&op_x25519_pub);
	xi->public_from_private(pub, k);
	op_end(&op_x25519_pub);
	ct_public(pub, X25519_LEN);
}

#define X25519_N_SCALARS 9

static void x25519_run(const struct x25519_impl *xi, uint64_t seed)
{
	/* RFC 7748 section 5.2 (first vector) and section 6.1 (Alice and Bob). */
	static const char *const kat[][3] = {
		{ "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
			"e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
			"c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552" },
		{ "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
			"de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
			"4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742" },
	};
	static const char ALICE_PUB[] =
		"8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
	uint8_t k[X25519_N_SCALARS][X25519_LEN], pub[X25519_N_SCALARS][X25519_LEN];
	uint8_t u[X25519_LEN], want[X25519_LEN], out[X25519_LEN], out2[X25519_LEN];

	for (unsigned i = 0; i < sizeof kat / sizeof kat[0]; i++) {
		hex(k[0], kat[i][0], X25519_LEN);
		hex(u, kat[i][1], X25519_LEN);
		hex(want, kat[i][2], X25519_LEN);
		if (x25519_mul_ct(xi, out, k[0], u) != 0 || memcmp(out, want, sizeof out) != 0)
			wrong("x25519_scalarmult known answer", i);
	}
	hex(want, ALICE_PUB, X25519_LEN);
	x25519_pub_ct(xi, out, k[0]); /* k[0] is Alice's key now */
	if (memcmp(out, want, sizeof out) != 0)
		wrong("x25519_public_from_private known answer", 0);

	/* Edge scalars (zero, all ones, one: clamping makes them 2^254, 2^255 - 8, 2^254) and
	 * random ones; each key pair agrees both ways. */
	memset(k, 0, sizeof k);
	memset(k[1], 0xff, X25519_LEN);
	k[2][0] = 1;
	for (unsigned i = 3; i < X25519_N_SCALARS; i++)
		random_bytes(k[i], X25519_LEN, &seed);
	for (unsigned i = 0; i < X25519_N_SCALARS; i++)
		x25519_pub_ct(xi, pub[i], k[i]);
	for (unsigned i = 0; i < X25519_N_SCALARS; i++) {
		unsigned j = (i + 3) % X25519_N_SCALARS;
		if (x25519_mul_ct(xi, out, k[i], pub[j]) != 0 || x25519_mul_ct(xi, out2, k[j], pub[i]) != 0 ||
			memcmp(out, out2, sizeof out) != 0)
			wrong("x25519_scalarmult not symmetric", i);
	}

	/* Small-order u: 0 and p (non-canonical 0): all-zero output, -1. u with bit 255 set: as
	 * without it. */
	memset(u, 0, sizeof u);
	for (unsigned i = 0; i < 2; i++) {
		if (i == 1) {
			memset(u, 0xff, sizeof u);
			u[0] = 0xed;
			u[31] = 0x7f;
		}
		memset(want, 0, sizeof want);
		if (x25519_mul_ct(xi, out, k[3], u) != -1 || memcmp(out, want, sizeof out) != 0)
			wrong("x25519_scalarmult small order not refused", i);
	}
	memcpy(u, pub[4], sizeof u);
	u[31] |= 0x80;
	if (x25519_mul_ct(xi, out, k[5], u) != 0 || x25519_mul_ct(xi, out2, k[5], pub[4]) != 0 ||
		memcmp(out, out2, sizeof out) != 0)
		wrong("x25519_scalarmult: bit 255 of u not ignored", 0);
}

/* The fixed-base public key (x25519.c's design note): its digit recoding, table lookups and
 * conditional negations under the secret scalar, on scalars of extreme signed radix-16
 * digits (all-0x88 bytes carry through all 64 digits, 0x77 none, 0xf8 and 0x8f mix -8, -7,
 * -1 and 0, 0x00 and 0xff clamp to 2^254 and 2^255 - 8) and on pseudo-random ones; each key
 * must equal the ladder's X25519(k, 9), so a path that did not run cannot pass. */
#define X25519_N_BASE 12

static void x25519_base_run(const struct x25519_impl *xi, uint64_t seed)
{
	static const uint8_t pattern[] = { 0x88, 0x77, 0xf8, 0x8f, 0x00, 0xff, 0x80, 0x08 };
	static const uint8_t nine[X25519_LEN] = { 9 };
	uint8_t k[X25519_LEN], pub[X25519_LEN], want[X25519_LEN];

	for (unsigned i = 0; i < X25519_N_BASE; i++) {
		if (i < sizeof pattern)
			memset(k, pattern[i], sizeof k);
		else
			random_bytes(k, sizeof k, &seed);
		x25519_pub_ct(xi, pub, k);
		if (x25519_mul_ct(xi, want, k, nine) != 0 || memcmp(pub, want, sizeof pub) != 0)
			wrong("x25519_public_from_private differs from the ladder's X25519(k, 9)", i);
	}
}

/* ---- paths ---- */

static const struct x25519_impl x25519_arch = { x25519_scalarmult, x25519_public_from_private };
#if defined(__x86_64__)
static const struct x25519_impl x25519_generic = { x25519_generic_scalarmult,
	x25519_generic_public_from_private };
#endif

/* Selects the arithmetic of path `name` and says which runs (checked, not assumed). Returns
 * false when this build has no such path. */
static bool path_select(const char *name, bool *run_p256, const struct x25519_impl **xi,
	const char **x25519_name)
{
	accel_cpu_init();
	*run_p256 = true;
	*xi = &x25519_arch;
	if (strcmp(name, "base") == 0) {
		accel_cpu_use_optional(false);
		*x25519_name = fe25519_ops_get()->name;
		return strstr(accel_cpu_describe(), "MULX") == NULL;
	}
#if defined(__x86_64__)
	if (strcmp(name, "mulx") == 0) {
		accel_cpu_use_optional(true);
		OPENSSL_ia32cap_P[2] |= CAP7_BMI1 | CAP7_BMI2 | CAP7_ADX;
		*x25519_name = fe25519_ops_get()->name;
		return strstr(accel_cpu_describe(), "MULX/ADX") != NULL &&
		       strstr(*x25519_name, "MULX/ADX") != NULL;
	}
	if (strcmp(name, "generic") == 0) {
		accel_cpu_use_optional(false);
		*run_p256 = false; /* P-256 has no portable arithmetic: the base path checks it */
		*xi = &x25519_generic;
		*x25519_name = fe25519_generic_ops_get()->name;
		return true;
	}
#endif
	return false;
}

static int check(const char *path, uint64_t seed)
{
	bool run_p256;
	const struct x25519_impl *xi;
	const char *x25519_name = "";
	struct op *ops[] = { &op_p256_pub, &op_p256_ecdh, &op_p256_sign, &op_x25519_mul,
		&op_x25519_pub };
	unsigned long errors = 0;
	unsigned calls = 0;

	if (!path_select(path, &run_p256, &xi, &x25519_name)) {
		fprintf(stderr, "ct_accel: no path '%s' in this build (or it did not select)\n", path);
		return 2;
	}
	printf("path %s: %s%sX25519 field %s\n", path, run_p256 ? accel_cpu_describe() : "",
		run_p256 ? "; " : "", x25519_name);
	if (run_p256)
		p256_run(seed);
	x25519_run(xi, seed);
	x25519_base_run(xi, seed);

	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		if (!ops[i]->calls)
			continue;
		printf("  %-28s %3u calls, %lu memcheck errors\n", ops[i]->name, ops[i]->calls,
			ops[i]->errors);
		calls += ops[i]->calls;
		errors += ops[i]->errors;
	}
	printf("ct_accel %s: %u calls, %lu memcheck errors, %u wrong results\n", path, calls, errors,
		n_wrong);
	return errors || n_wrong ? 1 : 0;
}

/* ---- the negative control ---- */

/* Two textbook leaks on a marked byte, each in its own function so the report names it. */
static volatile unsigned control_sink;
static volatile uint8_t control_table[256]; /* volatile: the load cannot become arithmetic */

__attribute__((noinline)) static unsigned control_early_exit(const uint8_t *a, const uint8_t *b,
	size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (a[i] != b[i]) /* stops at the first difference: a secret-dependent branch */
			return 0;
	return 1;
}

__attribute__((noinline)) static unsigned control_lookup(uint8_t secret)
{
	return control_table[secret]; /* a secret-dependent address */
}

static int control(void)
{
	uint8_t secret[16] = { 0x5a, 0x17 }, guess[16] = { 0 };
	unsigned long e0, branch, index;

	ct_secret(secret, sizeof secret);
	e0 = errors_now();
	control_sink = control_early_exit(secret, guess, sizeof secret);
	branch = errors_now() - e0;
	e0 = errors_now();
	control_sink = control_lookup(secret[1]);
	index = errors_now() - e0;
	printf("ct_accel control: secret branch %lu memcheck errors, secret index %lu\n", branch,
		index);
	/* The run is meant to fail under valgrind; this status says whether both were seen. */
	return branch && index ? 0 : 1;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0x5eed0c7a11c0ffeeu;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!RUNNING_ON_VALGRIND) {
		fprintf(stderr, "ct_accel: not under valgrind, so nothing would be checked: run "
				"tests/smoke/ct-accel.sh\n");
		return 2;
	}
	if (argc == 2 && strcmp(argv[1], "control") == 0)
		return control();
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "check") == 0) {
		if (argc == 4)
			seed = strtoull(argv[3], NULL, 0);
		printf("seed 0x%llx\n", (unsigned long long)seed);
		return check(argv[2], seed);
	}
	fprintf(stderr, "usage: ct_accel check base|mulx|generic [SEED] | ct_accel control\n");
	return 2;
}
