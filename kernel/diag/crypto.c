/* SPDX-License-Identifier: MIT
 *
 * The diagnostics' crypto figures, through the code the broker runs: first the boot's TLS
 * self-test (kernel/node/tls_selftest: installs mbedTLS's hooks, known answers, PSA up),
 * then, each for a bounded time, P-256 ECDSA signatures and verifications and X25519
 * agreements through PSA (our curve driver, tls/accel), AES-128-GCM sealing through
 * mbedTLS's GCM as the record layer calls it, and SHA-256 through mbedTLS (the perlasm
 * block function). Keys are fresh and destroyed; buffers wiped. Nothing is kept.
 */
#include "kernel/diag/diag_int.h"

#include "kernel/node/tls_selftest.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "tls/accel/accel.h"

#include "mbedtls/gcm.h"
#include "mbedtls/sha256.h"
#include "psa/crypto.h"

#define DC_BULK 16384u /* bytes per AEAD / hash call: one TLS record */

static uint8_t dc_buf[DC_BULK];
static uint8_t dc_out[DC_BULK];

uint64_t diag_rate_milli(uint64_t n, uint64_t ns)
{
	if (ns == 0)
		return 0;
	unsigned __int128 r = (unsigned __int128)n * 1000000000000ull / ns;
	return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

static int dc_new_key(psa_key_type_t type, size_t bits, psa_algorithm_t alg, psa_key_usage_t usage,
		      psa_key_id_t *id)
{
	psa_key_attributes_t a = PSA_KEY_ATTRIBUTES_INIT;
	psa_set_key_type(&a, type);
	psa_set_key_bits(&a, bits);
	psa_set_key_algorithm(&a, alg);
	psa_set_key_usage_flags(&a, usage);
	return psa_generate_key(&a, id) == PSA_SUCCESS ? 0 : -E_IO;
}

static int dc_ecdsa(uint64_t (*now_ns)(void), uint64_t window_ns, uint64_t *sign_milli, uint64_t *verify_milli)
{
	const psa_algorithm_t alg = PSA_ALG_ECDSA(PSA_ALG_SHA_256);
	psa_key_id_t k = 0;
	uint8_t digest[32], sig[64];
	size_t sl = 0;
	int err = -E_IO;
	for (size_t i = 0; i < sizeof digest; i++)
		digest[i] = (uint8_t)(i * 11u + 5u);
	if (dc_new_key(PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_SECP_R1), 256, alg,
		       PSA_KEY_USAGE_SIGN_HASH | PSA_KEY_USAGE_VERIFY_HASH, &k) != 0)
		goto out;
	uint64_t n = 0, t0 = now_ns(), t;
	do {
		digest[0] = (uint8_t)n;
		if (psa_sign_hash(k, alg, digest, sizeof digest, sig, sizeof sig, &sl) != PSA_SUCCESS)
			goto out;
		n++;
	} while ((t = now_ns() - t0) < window_ns);
	*sign_milli = diag_rate_milli(n, t);
	n = 0;
	t0 = now_ns();
	do {
		if (psa_verify_hash(k, alg, digest, sizeof digest, sig, sl) != PSA_SUCCESS)
			goto out;
		n++;
	} while ((t = now_ns() - t0) < window_ns);
	*verify_milli = diag_rate_milli(n, t);
	err = 0;
out:
	psa_destroy_key(k);
	return err;
}

static int dc_x25519(uint64_t (*now_ns)(void), uint64_t window_ns, uint64_t *milli)
{
	psa_key_id_t a = 0, b = 0;
	uint8_t pb[32], s[32];
	size_t lb = 0, ls = 0;
	int err = -E_IO;
	if (dc_new_key(PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_MONTGOMERY), 255, PSA_ALG_ECDH,
		       PSA_KEY_USAGE_DERIVE, &a) != 0 ||
	    dc_new_key(PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_MONTGOMERY), 255, PSA_ALG_ECDH,
		       PSA_KEY_USAGE_DERIVE, &b) != 0 ||
	    psa_export_public_key(b, pb, sizeof pb, &lb) != PSA_SUCCESS)
		goto out;
	uint64_t n = 0, t0 = now_ns(), t;
	do {
		if (psa_raw_key_agreement(PSA_ALG_ECDH, a, pb, lb, s, sizeof s, &ls) != PSA_SUCCESS)
			goto out;
		n++;
	} while ((t = now_ns() - t0) < window_ns);
	*milli = diag_rate_milli(n, t);
	err = 0;
out:
	mem_wipe(s, sizeof s);
	psa_destroy_key(a);
	psa_destroy_key(b);
	return err;
}

static int dc_gcm(uint64_t (*now_ns)(void), uint64_t window_ns, uint64_t *mbs_milli)
{
	uint8_t key[16], nonce[12] = { 0 }, tag[16], aad[5] = { 0x17, 0x03, 0x03, 0x40, 0x11 };
	for (size_t i = 0; i < sizeof key; i++)
		key[i] = (uint8_t)(0xa5u ^ i);
	mbedtls_gcm_context g;
	mbedtls_gcm_init(&g);
	int err = -E_IO;
	if (mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, key, 128) != 0)
		goto out;
	uint64_t n = 0, t0 = now_ns(), t;
	do {
		nonce[11] = (uint8_t)n;
		if (mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT, DC_BULK, nonce, sizeof nonce, aad, sizeof aad,
					      dc_buf, dc_out, sizeof tag, tag) != 0)
			goto out;
		n++;
	} while ((t = now_ns() - t0) < window_ns);
	*mbs_milli = diag_rate_milli(n * DC_BULK, t * 1000000ull);
	err = 0;
out:
	mbedtls_gcm_free(&g);
	mem_wipe(key, sizeof key);
	return err;
}

static int dc_sha(uint64_t (*now_ns)(void), uint64_t window_ns, uint64_t *mbs_milli)
{
	uint8_t h[32];
	uint64_t n = 0, t0 = now_ns(), t;
	do {
		dc_buf[0] = (uint8_t)n;
		if (mbedtls_sha256(dc_buf, DC_BULK, h, 0) != 0)
			return -E_IO;
		n++;
	} while ((t = now_ns() - t0) < window_ns);
	*mbs_milli = diag_rate_milli(n * DC_BULK, t * 1000000ull);
	return 0;
}

void diag_crypto_measure(struct diag_crypto *out, uint64_t (*now_ns)(void), uint32_t window_ms)
{
	*out = (struct diag_crypto){ .why = "" };
	uint64_t w = (uint64_t)window_ms * 1000000ull;
	for (size_t i = 0; i < sizeof dc_buf; i++)
		dc_buf[i] = (uint8_t)(i * 31u);
	if (node_tls_selftest() != 0) {
		out->why = "TLS self-test failed";
		return;
	}
	out->accel = accel_describe();
	if (dc_ecdsa(now_ns, w, &out->sign_milli, &out->verify_milli) != 0)
		out->why = "P-256 ECDSA";
	else if (dc_x25519(now_ns, w, &out->x25519_milli) != 0)
		out->why = "X25519";
	else if (dc_gcm(now_ns, w, &out->gcm_mbs_milli) != 0)
		out->why = "AES-128-GCM";
	else if (dc_sha(now_ns, w, &out->sha_mbs_milli) != 0)
		out->why = "SHA-256";
	else
		out->ok = true;
	mem_wipe(dc_out, sizeof dc_out);
}
