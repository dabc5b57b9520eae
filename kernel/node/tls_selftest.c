/* SPDX-License-Identifier: MIT
 *
 * mbedTLS and our TLS 1.3 record layer inside the image, proved at boot. It installs
 * mbedTLS's hooks (kernel/node/tls_port.c: allocations on the kernel heap under the TLS
 * handshake tag, the platform's wall and monotonic clocks, randomness from the kernel
 * CSPRNG), then runs known-answer tests through tls/record: HKDF-Expand-Label
 * against RFC 8448 section 3, one record per suite against fixed vectors (sealed and
 * opened), and a random-secret round trip per suite fed in pieces (reassembly buffers on
 * the heap under the TLS record tag) with a tampered record refused. Finally it parses the
 * embedded development CA and server certificate (DER) and verifies the server's against
 * the CA, reporting each subject CN. The curve driver's operations run through PSA, among them
 * the fixed-base table a trusted CA key gets (in a registry it leaves empty). Owns nothing
 * after it returns (everything freed); never logs key material, never stops the boot (a
 * failure is reported FAIL and counted).
 */
#include "kernel/node/tls_selftest.h"

#include "kernel/log.h"
#include "kernel/node/port.h"
#include "kernel/node/tls_port.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "tls/handshake.h"
#include "tls/record.h"
#include "tls/accel/accel.h"
#include "urmqtt_certs.h"

#include "mbedtls/oid.h"
#include "mbedtls/x509_crt.h"
#include "psa/crypto.h"
#include "psa/crypto_extra.h"
#include "tls/shim/threading_kernel.h"

/* ---- known answers -------------------------------------------------------------------- */

/* RFC 8448 section 3: server handshake traffic secret and the write key/IV from it. */
static const uint8_t ts_s_hs[32] = { 0xb6, 0x7b, 0x7d, 0x69, 0x0c, 0xc1, 0x6c, 0x4e, 0x75, 0xe5, 0x42,
				     0x13, 0xcb, 0x2d, 0x37, 0xb4, 0xe9, 0xc9, 0x12, 0xbc, 0xde, 0xd9,
				     0x10, 0x5d, 0x42, 0xbe, 0xfd, 0x59, 0xd3, 0x91, 0xad, 0x38 };
static const uint8_t ts_key[16] = { 0x3f, 0xce, 0x51, 0x60, 0x09, 0xc2, 0x17, 0x27,
				    0xd0, 0xf2, 0xe4, 0xe8, 0x6e, 0xe4, 0x03, 0xbc };
static const uint8_t ts_iv[12] = { 0x5d, 0x31, 0x3e, 0xb2, 0x67, 0x12, 0x76, 0xee, 0x13, 0x00, 0x0b, 0x30 };
/* "hello" as application data at sequence 0 under ts_s_hs (the vectors of
 * tests/unit/tls/test_record.c, computed with an independent AEAD implementation). */
static const uint8_t ts_gcm0[] = { 0x17, 0x03, 0x03, 0x00, 0x16, 0xb1, 0x9a, 0x5f, 0x02, 0x39, 0xc0,
				   0x7b, 0x54, 0x82, 0x06, 0xb8, 0x3e, 0xfc, 0x2e, 0x70, 0x26, 0xbf,
				   0xcc, 0x3e, 0xbb, 0x7b, 0xac };
static const uint8_t ts_cc0[] = { 0x17, 0x03, 0x03, 0x00, 0x16, 0x38, 0x16, 0x19, 0x3c, 0x6c, 0xd8,
				  0xa6, 0x32, 0x5d, 0x8f, 0x57, 0xee, 0x33, 0x73, 0x8a, 0x12, 0x44,
				  0x5d, 0xe1, 0x77, 0x2e, 0x89 };

#define TS_RT_LEN 5000u  /* round-trip payload: one full record and a partial one */
#define TS_RT_CHUNK 700u /* input pieces: records arrive split, reassembly is used */

static uint8_t ts_plain[TS_RT_LEN];
static uint8_t ts_wire[TS_RT_LEN + 4u * TLS_REC_OVERHEAD];
static uint8_t ts_got[TS_RT_LEN];
static size_t ts_got_len;

static int ts_on_data(void *ctx, const uint8_t *data, size_t len)
{
	(void)ctx;
	if (len > sizeof ts_got - ts_got_len)
		return -E_OVERFLOW;
	memcpy(ts_got + ts_got_len, data, len);
	ts_got_len += len;
	return 0;
}

static int ts_expand_label(void)
{
	uint8_t key[16], iv[12];
	if (tls_rec_expand_label(ts_s_hs, "key", NULL, 0, key, sizeof key) ||
	    tls_rec_expand_label(ts_s_hs, "iv", NULL, 0, iv, sizeof iv))
		return -E_IO;
	return (memcmp(key, ts_key, sizeof key) == 0) && (memcmp(iv, ts_iv, sizeof iv) == 0) ? 0 : -E_PROTO;
}

/* One fixed record per suite: sealed byte for byte, and opened by the other side. */
static int ts_vectors(struct tls_rec_env *env)
{
	static const struct {
		uint16_t suite;
		const uint8_t *rec;
		size_t len;
	} v[] = {
		{ TLS_SUITE_AES_128_GCM_SHA256, ts_gcm0, sizeof ts_gcm0 },
		{ TLS_SUITE_CHACHA20_POLY1305_SHA256, ts_cc0, sizeof ts_cc0 },
	};
	static const uint8_t other[32] = { 1 };
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct tls_rec r;
		size_t n = 0;
		int err = tls_rec_open(&r, v[i].suite, other, ts_s_hs, 0, 0);
		if (!err)
			err = tls_rec_write(env, &r, (const uint8_t *)"hello", 5, ts_wire, sizeof ts_wire, &n);
		tls_rec_close(env, &r);
		if (err || n != v[i].len || !(memcmp(ts_wire, v[i].rec, n) == 0))
			return err ? err : -E_PROTO;
		err = tls_rec_open(&r, v[i].suite, ts_s_hs, other, 0, 0);
		ts_got_len = 0;
		if (!err)
			err = tls_rec_input(env, &r, ts_wire, n, ts_on_data, NULL);
		tls_rec_close(env, &r);
		if (err || ts_got_len != 5 || !(memcmp(ts_got, "hello", 5) == 0))
			return err ? err : -E_PROTO;
	}
	return 0;
}

/* Random secrets and payload, written in one call and fed in TS_RT_CHUNK pieces; then a
 * record with one flipped bit must be refused as bad_record_mac. */
static int ts_round_trip(struct tls_rec_env *env, uint16_t suite)
{
	uint8_t sa[32], sb[32];
	struct tls_rec tx, rx;
	size_t n = 0;
	int err;

	if (node_port_random(sa, sizeof sa) || node_port_random(sb, sizeof sb) ||
	    node_port_random(ts_plain, sizeof ts_plain))
		return -E_IO;
	err = tls_rec_open(&tx, suite, sa, sb, 0, 0);
	if (err)
		return err;
	err = tls_rec_open(&rx, suite, sb, sa, 0, 0);
	if (err) {
		tls_rec_close(env, &tx);
		return err;
	}
	mem_wipe(sa, sizeof sa);
	mem_wipe(sb, sizeof sb);
	if (tls_rec_wire_len(env, &tx, TS_RT_LEN) > sizeof ts_wire)
		err = -E_OVERFLOW;
	if (!err)
		err = tls_rec_write(env, &tx, ts_plain, TS_RT_LEN, ts_wire, sizeof ts_wire, &n);
	ts_got_len = 0;
	for (size_t off = 0; !err && off < n; off += TS_RT_CHUNK)
		err = tls_rec_input(env, &rx, ts_wire + off, MIN((size_t)TS_RT_CHUNK, n - off), ts_on_data, NULL);
	if (!err && (ts_got_len != TS_RT_LEN || !(memcmp(ts_got, ts_plain, TS_RT_LEN) == 0)))
		err = -E_PROTO;
	if (!err) {
		err = tls_rec_write(env, &tx, ts_plain, 100, ts_wire, sizeof ts_wire, &n);
		if (!err) {
			ts_wire[n / 2] ^= 0x10;
			int bad = tls_rec_input(env, &rx, ts_wire, n, ts_on_data, NULL);
			if (bad == 0 || !tls_rec_failed(&rx) || tls_rec_alert(&rx) != TLS_ALERT_BAD_RECORD_MAC)
				err = -E_PROTO;
		}
	}
	tls_rec_close(env, &tx);
	tls_rec_close(env, &rx);
	return err;
}

/* ---- certificates --------------------------------------------------------------------- */

/* Subject CN of crt into out (printable ASCII only, NUL-terminated). */
static void ts_cn(const mbedtls_x509_crt *crt, char *out, size_t cap)
{
	size_t k = 0;
	for (const mbedtls_x509_name *n = &crt->subject; n; n = n->next) {
		if (MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &n->oid) != 0)
			continue;
		for (size_t i = 0; i < n->val.len && k + 1 < cap; i++)
			out[k++] = n->val.p[i] >= 0x20 && n->val.p[i] < 0x7f ? (char)n->val.p[i] : '?';
		break;
	}
	out[k] = 0;
}

int node_tls_selftest_certs(char *ca_cn, char *srv_cn, size_t cap, uint32_t *flags)
{
	mbedtls_x509_crt ca, srv;
	int err = 0;

	*flags = 0;
	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&srv);
	if (mbedtls_x509_crt_parse_der(&ca, urmqtt_ca_der, sizeof urmqtt_ca_der) != 0 ||
	    tls_crt_chain_parse(&srv, urmqtt_server_crt_der, sizeof urmqtt_server_crt_der) != 0) {
		err = -E_PROTO;
		goto out;
	}
	ts_cn(&ca, ca_cn, cap);
	ts_cn(&srv, srv_cn, cap);
	if (mbedtls_x509_crt_verify(&srv, &ca, NULL, NULL, flags, NULL, NULL) != 0) {
		/* A wrong wall clock is reported, not failed: the signature is what is tested. */
		uint32_t time_flags = MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE;
		if ((*flags & ~time_flags) != 0 || *flags == 0)
			err = -E_PERM;
	}
out:
	mbedtls_x509_crt_free(&srv);
	mbedtls_x509_crt_free(&ca);
	return err;
}


/* ---- the curve driver through PSA, as the handshake calls it ------------------------------ */

static int ts_new_key(psa_key_type_t type, size_t bits, psa_algorithm_t alg,
		      psa_key_usage_t usage, psa_key_id_t *id)
{
	psa_key_attributes_t a = PSA_KEY_ATTRIBUTES_INIT;
	psa_set_key_type(&a, type);
	psa_set_key_bits(&a, bits);
	psa_set_key_algorithm(&a, alg);
	psa_set_key_usage_flags(&a, usage);
	return psa_generate_key(&a, id) == PSA_SUCCESS ? 0 : -E_IO;
}

/* Two fresh key pairs agree on one secret, whichever side computes it. */
static int ts_agree(psa_key_type_t type, size_t bits)
{
	psa_key_id_t a = 0, b = 0;
	uint8_t pa[65], pb[65], sa[32], sb[32];
	size_t la = 0, lb = 0, ls_a = 0, ls_b = 0;
	int err = -E_IO;
	if (ts_new_key(type, bits, PSA_ALG_ECDH, PSA_KEY_USAGE_DERIVE, &a) != 0 ||
	    ts_new_key(type, bits, PSA_ALG_ECDH, PSA_KEY_USAGE_DERIVE, &b) != 0)
		goto out;
	if (psa_export_public_key(a, pa, sizeof pa, &la) != PSA_SUCCESS ||
	    psa_export_public_key(b, pb, sizeof pb, &lb) != PSA_SUCCESS)
		goto out;
	if (psa_raw_key_agreement(PSA_ALG_ECDH, a, pb, lb, sa, sizeof sa, &ls_a) != PSA_SUCCESS ||
	    psa_raw_key_agreement(PSA_ALG_ECDH, b, pa, la, sb, sizeof sb, &ls_b) != PSA_SUCCESS)
		goto out;
	if (ls_a == sizeof sa && ls_b == sizeof sb && memcmp(sa, sb, sizeof sa) == 0)
		err = 0;
out:
	mem_wipe(sa, sizeof sa);
	mem_wipe(sb, sizeof sb);
	psa_destroy_key(a);
	psa_destroy_key(b);
	return err;
}

/* A deterministic P-256 signature verifies, and the same signature over another digest
 * does not. */
static int ts_sign(void)
{
	const psa_algorithm_t alg = PSA_ALG_DETERMINISTIC_ECDSA(PSA_ALG_SHA_256);
	psa_key_id_t k = 0;
	uint8_t digest[32], sig[64];
	size_t sl = 0;
	int err = -E_IO;
	for (size_t i = 0; i < sizeof digest; i++)
		digest[i] = (uint8_t)(i * 7u + 1u);
	if (ts_new_key(PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_SECP_R1), 256, alg,
		   PSA_KEY_USAGE_SIGN_HASH | PSA_KEY_USAGE_VERIFY_HASH, &k) != 0)
		goto out;
	if (psa_sign_hash(k, alg, digest, sizeof digest, sig, sizeof sig, &sl) != PSA_SUCCESS ||
	    psa_verify_hash(k, alg, digest, sizeof digest, sig, sl) != PSA_SUCCESS)
		goto out;
	digest[0] ^= 1;
	if (psa_verify_hash(k, alg, digest, sizeof digest, sig, sl) != PSA_ERROR_INVALID_SIGNATURE)
		goto out;
	err = 0;
out:
	psa_destroy_key(k);
	return err;
}

/* The fixed-base path a trusted CA key takes (tls/accel/accel.h), once: a fresh P-256 key is
 * registered, its signature verifies through PSA as a certificate's does (public key
 * imported) and the same signature over another digest does not; then the registry is
 * emptied for the brokers' CA. Skipped (0, *ran false) when a key is registered already. */
static int ts_trusted(bool *ran)
{
	const psa_algorithm_t alg = PSA_ALG_ECDSA(PSA_ALG_SHA_256);
	psa_key_attributes_t a = PSA_KEY_ATTRIBUTES_INIT;
	psa_key_id_t k = 0, q = 0;
	uint8_t digest[32], sig[64], pub[ACCEL_P256_PUBLIC_LEN];
	size_t sl = 0, pl = 0;
	int err = -E_IO;

	*ran = false;
	if (accel_trusted_p256_keys() != 0)
		return 0;
	for (size_t i = 0; i < sizeof digest; i++)
		digest[i] = (uint8_t)(i * 5u + 3u);
	if (ts_new_key(PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_SECP_R1), 256, alg, PSA_KEY_USAGE_SIGN_HASH,
		       &k) != 0 ||
	    psa_export_public_key(k, pub, sizeof pub, &pl) != PSA_SUCCESS || pl != sizeof pub)
		goto out;
	psa_set_key_type(&a, PSA_KEY_TYPE_ECC_PUBLIC_KEY(PSA_ECC_FAMILY_SECP_R1));
	psa_set_key_bits(&a, 256);
	psa_set_key_algorithm(&a, alg);
	psa_set_key_usage_flags(&a, PSA_KEY_USAGE_VERIFY_HASH);
	if (psa_import_key(&a, pub, pl, &q) != PSA_SUCCESS)
		goto out;
	*ran = true;
	if (accel_trust_p256_key(pub) != 0 || !accel_p256_key_trusted(pub))
		goto out;
	if (psa_sign_hash(k, alg, digest, sizeof digest, sig, sizeof sig, &sl) != PSA_SUCCESS ||
	    psa_verify_hash(q, alg, digest, sizeof digest, sig, sl) != PSA_SUCCESS)
		goto out;
	digest[0] ^= 1;
	if (psa_verify_hash(q, alg, digest, sizeof digest, sig, sl) != PSA_ERROR_INVALID_SIGNATURE)
		goto out;
	err = 0;
out:
	accel_trust_p256_clear();
	psa_destroy_key(k);
	psa_destroy_key(q);
	return err;
}

static int ts_curves(bool *table_ran)
{
	int err = ts_agree(PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_SECP_R1), 256);
	if (!err)
		err = ts_agree(PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_MONTGOMERY), 255);
	if (!err)
		err = ts_sign();
	if (!err)
		err = ts_trusted(table_ran);
	return err;
}

/* ---- entry ---------------------------------------------------------------------------- */

int node_tls_selftest(void)
{
	const struct tls_hs_ops ops = node_tls_port_hs_ops();
	struct tls_rec_config rc = {
		.max_plaintext = TLS_REC_MAX_PLAINTEXT,
		.key_update_after = UINT64_MAX,
		.ops = node_tls_port_rec_ops(),
	};
	static struct tls_rec_env env;
	char ca_cn[64], srv_cn[64];
	uint32_t vflags = 0;
	uint64_t t0 = node_port_now_ns();
	const char *what = "";
	bool table_ran = false;
	int err;

	tls_threading_init(); /* before mbedTLS is first used, while only this core runs */
	accel_cpu_init();     /* tls/accel's CPU probe (curves, SHA-256), while only this core runs */
	tls_hs_hooks_install(&ops);
	err = tls_rec_env_init(&env, &rc);
	if (!err && (err = ts_expand_label()) != 0)
		what = "HKDF-Expand-Label (RFC 8448)";
	if (!err && (err = ts_vectors(&env)) != 0)
		what = "record vectors";
	if (!err && (err = ts_round_trip(&env, TLS_SUITE_AES_128_GCM_SHA256)) != 0)
		what = "AES-128-GCM round trip";
	if (!err && (err = ts_round_trip(&env, TLS_SUITE_CHACHA20_POLY1305_SHA256)) != 0)
		what = "ChaCha20-Poly1305 round trip";
	if (!err && psa_crypto_init() != PSA_SUCCESS) {
		err = -E_IO;
		what = "PSA crypto init";
	}
	if (!err && (err = ts_curves(&table_ran)) != 0)
		what = "P-256 and X25519 through PSA (agreement, sign/verify, trusted-key table)";
	ca_cn[0] = srv_cn[0] = 0;
	if (!err && (err = node_tls_selftest_certs(ca_cn, srv_cn, sizeof ca_cn, &vflags)) != 0)
		what = "certificate parse/verify";
	uint64_t us = (node_port_now_ns() - t0) / 1000u;
	if (err) {
		LOG_ERR("tls", "self-test FAIL: %s (%s, verify flags 0x%x)", what, err_name(err), (unsigned)vflags);
		return err;
	}
	LOG_INFO("tls", "accel: %s (P-256 and X25519 agreement, P-256 signature: PASS)", accel_describe());
	if (table_ran)
		LOG_INFO("tls", "accel: P-256 verification on a trusted key's fixed-base table: PASS");
	LOG_INFO("tls", "x509: CA \"%s\", server \"%s\" (signature verified%s)", ca_cn, srv_cn,
		 vflags ? "; validity period does not include the wall clock" : ", in validity");
	LOG_INFO("tls", "self-test PASS (RFC 8448 key schedule, AES-128-GCM and ChaCha20-Poly1305 "
			"records, %lu reassemblies; %lu us); %s",
		 (unsigned long)env.n_reasm, (unsigned long)us, node_port_crypto_accel());
	return 0;
}
