/* SPDX-License-Identifier: MIT */
/* tls/accel: the PSA transparent driver. It takes P-256 key pairs (generate, export the public
 * key, ECDH, ECDSA sign deterministic or randomized) and P-256 ECDSA verification, and X25519
 * key pairs (generate, export, ECDH); it answers PSA_ERROR_NOT_SUPPORTED for everything else,
 * and mbedTLS's built-in code runs instead (psa_driver.h).
 * Invariants:
 *  1. Results are bit-for-bit those of mbedTLS's built-in code: the same key formats, the same
 *     error for the same bad input, and deterministic signatures with the same nonce (RFC 6979
 *     through mbedTLS's own HMAC_DRBG, seeded exactly as its ecdsa.c seeds it), so
 *     tests/unit/accel/ can compare the two byte for byte.
 *  2. Inputs the driver does not recognise in its exact shape (an odd key length, a compressed
 *     point) go to the built-in code rather than being refused here, so the driver never
 *     narrows what mbedTLS accepts.
 *  3. Every secret copied or derived here (nonce, seed, key bytes) is wiped before return.
 *  4. No state but `enabled` and the trusted-key registry, both written only on the boot core
 *     while no handshake runs (accel.h), and only read afterwards, by every core: a table is
 *     never written once its key is counted in n_trusted (it is built first).
 *  5. A verification under a registered key (its exact 65 bytes) gives the verdict the generic
 *     path gives (p256.h; tests/unit/accel/test_p256.c compares both with mbedTLS). */
#include "tls/accel/accel.h"
#include "tls/accel/psa_driver.h"
#include "tls/accel/p256.h"
#include "tls/accel/x25519.h"
#include "tls/accel/cpu.h"

#include "lib/err.h"
#include "lib/mem.h"

#include <string.h>

#include <mbedtls/hmac_drbg.h>
#include <mbedtls/md.h>
#include <mbedtls/psa_util.h>
#include <psa/crypto.h>

static bool enabled = true;

_Static_assert(ACCEL_P256_PUBLIC_LEN == P256_PUBLIC_LEN, "accel.h and p256.h agree");
_Static_assert(ACCEL_P256_TRUSTED_MAX >= 1, "a registry of at least one key");

/* The trusted-key registry (accel.h): entries 0 .. n_trusted - 1 are live. Static rather
 * than from an allocator: one region the size the limit says, present before any env, with
 * no owner to outlive (ACCEL_P256_TRUSTED_MAX * 151,552 bytes of bss). */
static struct p256_table trusted_table[ACCEL_P256_TRUSTED_MAX];
static uint8_t trusted_pub[ACCEL_P256_TRUSTED_MAX][P256_PUBLIC_LEN];
static unsigned n_trusted, n_trust_refused;

/* The table of pub when pub is a registered key, else NULL. Public bytes: memcmp is fine. */
static const struct p256_table *trusted_table_of(const uint8_t pub[P256_PUBLIC_LEN])
{
	for (unsigned i = 0; i < n_trusted; i++)
		if (memcmp(trusted_pub[i], pub, P256_PUBLIC_LEN) == 0)
			return &trusted_table[i];
	return NULL;
}

int accel_trust_p256_key(const uint8_t pub[ACCEL_P256_PUBLIC_LEN])
{
	if (trusted_table_of(pub))
		return 0;
	if (p256_check_public(pub) != 0)
		return -E_INVAL;
	if (n_trusted >= ACCEL_P256_TRUSTED_MAX) {
		n_trust_refused++;
		return -E_NOMEM;
	}
	if (p256_table_build(&trusted_table[n_trusted], pub) != 0)
		return -E_INVAL; /* not reached: checked above */
	memcpy(trusted_pub[n_trusted], pub, P256_PUBLIC_LEN);
	n_trusted++; /* invariant 4: counted once built */
	return 0;
}

void accel_trust_p256_clear(void)
{
	n_trusted = 0;
}

bool accel_p256_key_trusted(const uint8_t pub[ACCEL_P256_PUBLIC_LEN])
{
	return trusted_table_of(pub) != NULL;
}

unsigned accel_trusted_p256_keys(void)
{
	return n_trusted;
}

unsigned accel_trust_p256_refused(void)
{
	return n_trust_refused;
}

void accel_set_enabled(bool on)
{
	enabled = on;
}

bool accel_enabled(void)
{
	return enabled;
}

const char *accel_describe(void)
{
	return enabled ? accel_cpu_describe() : "off (mbedTLS built-in)";
}

enum curve { CURVE_NONE, CURVE_P256, CURVE_X25519 };

/* Which of our curves a key of these attributes is on, given it is a key pair (pair=true) or a
 * public key (pair=false). */
static enum curve curve_of(const psa_key_attributes_t *attributes, bool pair)
{
	psa_key_type_t type = psa_get_key_type(attributes);
	size_t bits = psa_get_key_bits(attributes);
	if (!enabled || !PSA_KEY_TYPE_IS_ECC(type) || PSA_KEY_TYPE_IS_KEY_PAIR(type) != pair)
		return CURVE_NONE;
	psa_ecc_family_t family = PSA_KEY_TYPE_ECC_GET_FAMILY(type);
	if (family == PSA_ECC_FAMILY_SECP_R1 && bits == 256)
		return CURVE_P256;
	if (family == PSA_ECC_FAMILY_MONTGOMERY && bits == 255)
		return CURVE_X25519;
	return CURVE_NONE;
}

static psa_status_t random_bytes(uint8_t *out, size_t len)
{
	size_t got = 0;
	psa_status_t st = mbedtls_psa_external_get_random(NULL, out, len, &got);
	if (st != PSA_SUCCESS)
		return st;
	return got == len ? PSA_SUCCESS : PSA_ERROR_INSUFFICIENT_ENTROPY;
}

/* A uniformly random P-256 scalar in [1, n-1] by rejection, as mbedTLS's mbedtls_mpi_random
 * draws one (its retry bound too). */
static psa_status_t p256_random_scalar(uint8_t k[P256_SCALAR_LEN])
{
	for (int tries = 0; tries < 30; tries++) {
		psa_status_t st = random_bytes(k, P256_SCALAR_LEN);
		if (st != PSA_SUCCESS)
			return st;
		if (p256_check_private(k) == 0)
			return PSA_SUCCESS;
	}
	return PSA_ERROR_INSUFFICIENT_ENTROPY;
}

psa_status_t urmqtt_accel_generate_key(const psa_key_attributes_t *attributes,
	uint8_t *key_buffer, size_t key_buffer_size, size_t *key_buffer_length)
{
	enum curve c = curve_of(attributes, true);
	if (c == CURVE_NONE)
		return PSA_ERROR_NOT_SUPPORTED;
	if (key_buffer_size < 32)
		return PSA_ERROR_BUFFER_TOO_SMALL;
	psa_status_t st;
	if (c == CURVE_P256) {
		st = p256_random_scalar(key_buffer);
	} else {
		/* RFC 7748's decoding clamps anyway; storing the clamped form matches what
		 * mbedTLS's own generator writes. */
		st = random_bytes(key_buffer, X25519_LEN);
		key_buffer[0] &= 248;
		key_buffer[31] &= 127;
		key_buffer[31] |= 64;
	}
	if (st != PSA_SUCCESS) {
		mem_wipe(key_buffer, 32);
		return st;
	}
	*key_buffer_length = 32;
	return PSA_SUCCESS;
}

psa_status_t urmqtt_accel_export_public_key(const psa_key_attributes_t *attributes,
	const uint8_t *key_buffer, size_t key_buffer_size,
	uint8_t *data, size_t data_size, size_t *data_length)
{
	enum curve c = curve_of(attributes, true);
	if (c == CURVE_NONE || key_buffer_size != 32)
		return PSA_ERROR_NOT_SUPPORTED;
	if (c == CURVE_P256) {
		if (data_size < P256_PUBLIC_LEN)
			return PSA_ERROR_BUFFER_TOO_SMALL;
		if (p256_public_from_private(data, key_buffer) != 0)
			return PSA_ERROR_INVALID_ARGUMENT;
		*data_length = P256_PUBLIC_LEN;
		return PSA_SUCCESS;
	}
	if (data_size < X25519_LEN)
		return PSA_ERROR_BUFFER_TOO_SMALL;
	x25519_public_from_private(data, key_buffer);
	*data_length = X25519_LEN;
	return PSA_SUCCESS;
}

psa_status_t urmqtt_accel_key_agreement(const psa_key_attributes_t *attributes,
	const uint8_t *key_buffer, size_t key_buffer_size, psa_algorithm_t alg,
	const uint8_t *peer_key, size_t peer_key_length,
	uint8_t *shared_secret, size_t shared_secret_size, size_t *shared_secret_length)
{
	enum curve c = curve_of(attributes, true);
	if (c == CURVE_NONE || !PSA_ALG_IS_ECDH(alg) || key_buffer_size != 32)
		return PSA_ERROR_NOT_SUPPORTED;
	if (c == CURVE_P256) {
		if (peer_key_length != P256_PUBLIC_LEN || peer_key[0] != 0x04)
			return PSA_ERROR_NOT_SUPPORTED; /* invariant 2 */
		if (shared_secret_size < P256_SCALAR_LEN)
			return PSA_ERROR_BUFFER_TOO_SMALL;
		if (p256_ecdh(shared_secret, key_buffer, peer_key) != 0)
			return PSA_ERROR_INVALID_ARGUMENT;
		*shared_secret_length = P256_SCALAR_LEN;
		return PSA_SUCCESS;
	}
	if (peer_key_length != X25519_LEN)
		return PSA_ERROR_NOT_SUPPORTED;
	if (shared_secret_size < X25519_LEN)
		return PSA_ERROR_BUFFER_TOO_SMALL;
	uint8_t out[X25519_LEN];
	int rc = x25519_scalarmult(out, key_buffer, peer_key);
	if (rc == 0)
		memcpy(shared_secret, out, X25519_LEN);
	mem_wipe(out, sizeof out);
	if (rc != 0)
		return PSA_ERROR_INVALID_ARGUMENT; /* all-zero secret: a small-order peer point */
	*shared_secret_length = X25519_LEN;
	return PSA_SUCCESS;
}

/* Deterministic ECDSA: nonces from an HMAC_DRBG over the hash algorithm, seeded with
 * private key || bits2octets(digest) (invariant 1); each rejected candidate or signature draws
 * the next output, as mbedTLS's loop does. */
static psa_status_t p256_sign_deterministic(const uint8_t priv[P256_SCALAR_LEN], psa_algorithm_t alg,
	const uint8_t *hash, size_t hash_length, uint8_t sig[P256_SIG_LEN])
{
	const mbedtls_md_info_t *md =
		mbedtls_md_info_from_type(mbedtls_md_type_from_psa_alg(PSA_ALG_SIGN_GET_HASH(alg)));
	if (!md)
		return PSA_ERROR_NOT_SUPPORTED;
	uint8_t seed[2 * P256_SCALAR_LEN], k[P256_SCALAR_LEN];
	memcpy(seed, priv, P256_SCALAR_LEN);
	p256_digest_to_scalar(seed + P256_SCALAR_LEN, hash, hash_length);
	mbedtls_hmac_drbg_context drbg;
	mbedtls_hmac_drbg_init(&drbg);
	psa_status_t st = PSA_ERROR_INSUFFICIENT_ENTROPY;
	if (mbedtls_hmac_drbg_seed_buf(&drbg, md, seed, sizeof seed) != 0) {
		st = PSA_ERROR_INSUFFICIENT_MEMORY;
		goto out;
	}
	for (int sign_tries = 0; sign_tries < 10; sign_tries++) {
		int drawn = 0;
		for (int tries = 0; tries < 30 && !drawn; tries++) {
			if (mbedtls_hmac_drbg_random(&drbg, k, sizeof k) != 0)
				goto out;
			drawn = p256_check_private(k) == 0;
		}
		if (!drawn)
			goto out;
		if (p256_sign_digest(sig, priv, hash, hash_length, k) == 0) {
			st = PSA_SUCCESS;
			goto out;
		}
	}
out:
	mbedtls_hmac_drbg_free(&drbg);
	mem_wipe(seed, sizeof seed);
	mem_wipe(k, sizeof k);
	return st;
}

static psa_status_t p256_sign_randomized(const uint8_t priv[P256_SCALAR_LEN],
	const uint8_t *hash, size_t hash_length, uint8_t sig[P256_SIG_LEN])
{
	uint8_t k[P256_SCALAR_LEN];
	psa_status_t st = PSA_ERROR_INSUFFICIENT_ENTROPY;
	for (int sign_tries = 0; sign_tries < 10; sign_tries++) {
		if ((st = p256_random_scalar(k)) != PSA_SUCCESS)
			break;
		st = PSA_ERROR_INSUFFICIENT_ENTROPY;
		if (p256_sign_digest(sig, priv, hash, hash_length, k) == 0) {
			st = PSA_SUCCESS;
			break;
		}
	}
	mem_wipe(k, sizeof k);
	return st;
}

psa_status_t urmqtt_accel_sign_hash(const psa_key_attributes_t *attributes,
	const uint8_t *key_buffer, size_t key_buffer_size, psa_algorithm_t alg,
	const uint8_t *hash, size_t hash_length,
	uint8_t *signature, size_t signature_size, size_t *signature_length)
{
	if (curve_of(attributes, true) != CURVE_P256 || !PSA_ALG_IS_ECDSA(alg) || key_buffer_size != 32)
		return PSA_ERROR_NOT_SUPPORTED;
	if (signature_size < P256_SIG_LEN)
		return PSA_ERROR_BUFFER_TOO_SMALL;
	if (p256_check_private(key_buffer) != 0)
		return PSA_ERROR_INVALID_ARGUMENT;
	psa_status_t st = PSA_ALG_ECDSA_IS_DETERMINISTIC(alg)
		? p256_sign_deterministic(key_buffer, alg, hash, hash_length, signature)
		: p256_sign_randomized(key_buffer, hash, hash_length, signature);
	if (st == PSA_SUCCESS)
		*signature_length = P256_SIG_LEN;
	return st;
}

psa_status_t urmqtt_accel_verify_hash(const psa_key_attributes_t *attributes,
	const uint8_t *key_buffer, size_t key_buffer_size, psa_algorithm_t alg,
	const uint8_t *hash, size_t hash_length,
	const uint8_t *signature, size_t signature_length)
{
	if (!PSA_ALG_IS_ECDSA(alg))
		return PSA_ERROR_NOT_SUPPORTED;
	uint8_t pub[P256_PUBLIC_LEN];
	const uint8_t *q;
	if (curve_of(attributes, false) == CURVE_P256) {
		if (key_buffer_size != P256_PUBLIC_LEN || key_buffer[0] != 0x04)
			return PSA_ERROR_NOT_SUPPORTED; /* invariant 2 */
		q = key_buffer;
	} else if (curve_of(attributes, true) == CURVE_P256 && key_buffer_size == 32) {
		if (p256_public_from_private(pub, key_buffer) != 0)
			return PSA_ERROR_INVALID_ARGUMENT;
		q = pub;
	} else {
		return PSA_ERROR_NOT_SUPPORTED;
	}
	if (signature_length != P256_SIG_LEN)
		return PSA_ERROR_INVALID_SIGNATURE;
	/* A registered key was checked when registered (the same bytes): its table, u2*Q by the
	 * comb (invariant 5). */
	const struct p256_table *t = trusted_table_of(q);
	if (t)
		return p256_verify_digest_table(t, hash, hash_length, signature) == 0
			? PSA_SUCCESS : PSA_ERROR_INVALID_SIGNATURE;
	if (p256_check_public(q) != 0)
		return PSA_ERROR_INVALID_ARGUMENT;
	return p256_verify_digest(q, hash, hash_length, signature) == 0 ? PSA_SUCCESS
									: PSA_ERROR_INVALID_SIGNATURE;
}
