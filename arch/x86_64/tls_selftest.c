/* SPDX-License-Identifier: MIT
 *
 * x86_64: mbedTLS and our TLS 1.3 record layer inside the image, proved at boot. It
 * installs mbedTLS's hooks (allocations on the kernel heap under the "tls-handshake" tag,
 * the wall clock from the CMOS RTC read once plus the TSC clock since, randomness from
 * the kernel CSPRNG), then runs known-answer tests through tls/record: HKDF-Expand-Label
 * against RFC 8448 section 3, one record per suite against fixed vectors (sealed and
 * opened), and a random-secret round trip per suite fed in pieces (reassembly buffers on
 * the heap under "tls-record") with a tampered record refused. Finally it parses the
 * embedded development CA and server certificate (DER) and verifies the server's against
 * the CA, reporting each subject CN. Owns nothing after it returns (everything freed);
 * never logs key material, never stops the boot (a failure is reported FAIL and counted).
 */
#include "arch/x86_64/tls_selftest.h"

#include <stdatomic.h>

#include "arch/x86_64/x86.h"
#include "kernel/csprng.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/panic.h"
#include "kernel/time.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "tls/handshake.h"
#include "tls/record.h"
#include "urmqtt_certs.h"

#include "mbedtls/oid.h"
#include "mbedtls/x509_crt.h"
#include "psa/crypto.h"
#include "psa/crypto_extra.h"
/* mbedTLS's own (library-internal) header: whether its AES and GCM take the AES-NI and
 * PCLMULQDQ paths on this CPU (ADR-021). */
#include "aesni.h"
#include "tls/shim/threading_kernel.h"

/* ---- hooks ---------------------------------------------------------------------------- */

static uint64_t ts_wall_base_s; /* RTC seconds at install; 0: no wall clock */
static uint64_t ts_wall_base_ns; /* x86_now_ns() at that moment */

static void *ts_alloc(void *ctx, size_t len, const char *tag)
{
	(void)ctx;
	(void)tag; /* mbedTLS only ever asks for "tls-handshake" */
	void *p = NULL;
	return kheap_alloc(len, HEAP_TAG_TLS_HANDSHAKE, &p) == 0 ? p : NULL;
}

static void ts_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	kheap_free(p);
}

static int ts_random(void *ctx, uint8_t *out, size_t len)
{
	(void)ctx;
	return csprng_kernel_bytes(out, len);
}

static int64_t ts_now_ms(void *ctx)
{
	(void)ctx;
	return (int64_t)(x86_now_ns() / 1000000u);
}

static int64_t ts_now_s(void *ctx)
{
	(void)ctx;
	if (!ts_wall_base_s)
		return 0; /* 1970: every certificate looks "not yet valid", visibly */
	return (int64_t)(ts_wall_base_s + (x86_now_ns() - ts_wall_base_ns) / 1000000000u);
}

static void *ts_rec_alloc(void *ctx, size_t len)
{
	(void)ctx;
	void *p = NULL;
	return kheap_alloc(len, HEAP_TAG_TLS_RECORD, &p) == 0 ? p : NULL;
}

static void ts_rec_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	kheap_free(p);
}

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

	if (csprng_kernel_bytes(sa, sizeof sa) || csprng_kernel_bytes(sb, sizeof sb) ||
	    csprng_kernel_bytes(ts_plain, sizeof ts_plain))
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

static int ts_certs(char *ca_cn, char *srv_cn, size_t cap, uint32_t *flags)
{
	mbedtls_x509_crt ca, srv;
	int err = 0;

	*flags = 0;
	mbedtls_x509_crt_init(&ca);
	mbedtls_x509_crt_init(&srv);
	if (mbedtls_x509_crt_parse_der(&ca, urmqtt_ca_der, sizeof urmqtt_ca_der) != 0 ||
	    mbedtls_x509_crt_parse_der(&srv, urmqtt_server_crt_der, sizeof urmqtt_server_crt_der) != 0) {
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

#ifndef URMQTT_PROD
/* ---- test=tls: mbedTLS from every core at once (ADR-026) -------------------------------
 * Every core, from its own loop and at the same time as the others, runs TC_ROUNDS of:
 * the development chain's X.509 verification (its own parse, PSA imports the CA's public
 * key) and a P-256 key made, used to sign and verify, and destroyed through PSA. These
 * are the operations a handshake shares with other cores: PSA's key store and globals,
 * under mbedTLS's mutexes (our spinlocks), and the accounting of the per-core hooks. A
 * core that finishes counts itself done (release); core 0, once all are done (acquire),
 * checks that every round succeeded and that PSA holds exactly the keys it held before. */
#define TC_ROUNDS 8u
struct tc_core {
	uint32_t rounds, errors;
	bool done;
} ALIGNED(64);
static struct tc_core tc_cores[PLAT_MAX_CPUS];
static uint32_t tc_n_cores;
static size_t tc_slots_before;
static _Atomic uint32_t tc_n_done;

static size_t tc_volatile_slots(void)
{
	mbedtls_psa_stats_t st;
	mbedtls_psa_get_stats(&st);
	return st.MBEDTLS_PRIVATE(volatile_slots);
}

void x86_tls_concurrent_setup(uint32_t n_cores)
{
	tc_n_cores = n_cores;
	tc_slots_before = tc_volatile_slots();
	LOG_INFO("test", "scenario tls: %u cores, %u rounds each of X.509 verify + P-256 sign/verify, "
			 "at the same time", (unsigned)n_cores, (unsigned)TC_ROUNDS);
}

static int tc_round(void)
{
	char ca_cn[64], srv_cn[64];
	uint32_t vflags;
	int err = ts_certs(ca_cn, srv_cn, sizeof ca_cn, &vflags);
	if (err)
		return err;
	psa_key_attributes_t a = PSA_KEY_ATTRIBUTES_INIT;
	psa_set_key_type(&a, PSA_KEY_TYPE_ECC_KEY_PAIR(PSA_ECC_FAMILY_SECP_R1));
	psa_set_key_bits(&a, 256);
	psa_set_key_usage_flags(&a, PSA_KEY_USAGE_SIGN_HASH | PSA_KEY_USAGE_VERIFY_HASH);
	psa_set_key_algorithm(&a, PSA_ALG_ECDSA(PSA_ALG_SHA_256));
	mbedtls_svc_key_id_t key;
	if (psa_generate_key(&a, &key) != PSA_SUCCESS)
		return -E_NOMEM;
	uint8_t hash[32], sig[PSA_SIGNATURE_MAX_SIZE];
	size_t sig_len = 0;
	memset(hash, (int)x86_core_index(), sizeof hash);
	if (psa_sign_hash(key, PSA_ALG_ECDSA(PSA_ALG_SHA_256), hash, sizeof hash, sig, sizeof sig, &sig_len) !=
		    PSA_SUCCESS ||
	    psa_verify_hash(key, PSA_ALG_ECDSA(PSA_ALG_SHA_256), hash, sizeof hash, sig, sig_len) != PSA_SUCCESS)
		err = -E_PROTO;
	if (psa_destroy_key(key) != PSA_SUCCESS && !err)
		err = -E_IO;
	return err;
}

static void tc_verdict(void)
{
	uint32_t errors = 0, rounds = 0;
	for (uint32_t i = 0; i < tc_n_cores; i++) {
		errors += tc_cores[i].errors;
		rounds += tc_cores[i].rounds;
	}
	size_t slots = tc_volatile_slots();
	LOG_INFO("test", "tls: %u rounds on %u cores, %u errors, %lu locks (%lu waited); PSA volatile keys %lu -> %lu",
		 (unsigned)rounds, (unsigned)tc_n_cores, (unsigned)errors, (unsigned long)tls_threading_locks(),
		 (unsigned long)tls_threading_contended(), (unsigned long)tc_slots_before, (unsigned long)slots);
	if (errors || slots != tc_slots_before || rounds != tc_n_cores * TC_ROUNDS)
		PANIC("tls scenario: concurrent mbedTLS use failed");
	LOG_INFO("test", "scenario tls: every core's rounds succeeded, no key left behind");
	x86_stop(X86_EXIT_BOOT_OK);
}

int x86_tls_concurrent_poll(void *ctx)
{
	(void)ctx;
	uint32_t me = x86_core_index();
	if (me >= tc_n_cores)
		return 0;
	struct tc_core *c = &tc_cores[me];
	if (c->done) {
		/* Acquire: pairs with each core's release below; its counters are complete. */
		if (me == 0 && atomic_load_explicit(&tc_n_done, memory_order_acquire) == tc_n_cores)
			tc_verdict();
		return 0;
	}
	if (tc_round() != 0)
		c->errors++;
	if (++c->rounds == TC_ROUNDS) {
		c->done = true;
		/* Release: this core's counters are written before it counts as done. */
		atomic_fetch_add_explicit(&tc_n_done, 1, memory_order_release);
	}
	return 1;
}
#endif /* URMQTT_PROD */

/* ---- entry ---------------------------------------------------------------------------- */

STATIC_ASSERT(PLAT_MAX_CPUS <= TLS_HS_MAX_CORES, "TLS keeps per-core state for every core");

static uint32_t ts_core(void *ctx)
{
	(void)ctx;
	return x86_core_index();
}

int x86_tls_selftest(void)
{
	static const struct tls_hs_ops ops = {
		.alloc = ts_alloc, .free = ts_free, .random = ts_random,
		.now_s = ts_now_s, .now_ms = ts_now_ms, .ctx = NULL, .core = ts_core,
	};
	struct tls_rec_config rc = {
		.max_plaintext = TLS_REC_MAX_PLAINTEXT,
		.key_update_after = UINT64_MAX,
		.ops = { ts_rec_alloc, ts_rec_free, NULL },
	};
	static struct tls_rec_env env;
	struct time_civil civ;
	char ca_cn[64], srv_cn[64];
	uint32_t vflags = 0;
	uint64_t t0 = x86_now_ns(), wall = 0;
	const char *what = "";
	int err;

	if (x86_rtc_read(&wall, &civ) == 0) {
		ts_wall_base_s = wall;
		ts_wall_base_ns = x86_now_ns();
	}
	tls_threading_init(); /* before mbedTLS is first used, while only this core runs */
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
	ca_cn[0] = srv_cn[0] = 0;
	if (!err && (err = ts_certs(ca_cn, srv_cn, sizeof ca_cn, &vflags)) != 0)
		what = "certificate parse/verify";
	uint64_t us = (x86_now_ns() - t0) / 1000u;
	if (err) {
		LOG_ERR("tls", "self-test FAIL: %s (%s, verify flags 0x%x)", what, err_name(err), (unsigned)vflags);
		return err;
	}
	LOG_INFO("tls", "x509: CA \"%s\", server \"%s\" (signature verified%s)", ca_cn, srv_cn,
		 vflags ? "; validity period does not include the wall clock" : ", in validity");
	bool aesni = mbedtls_aesni_has_support(MBEDTLS_AESNI_AES) != 0;
	bool clmul = mbedtls_aesni_has_support(MBEDTLS_AESNI_CLMUL) != 0;
	LOG_INFO("tls", "self-test PASS (RFC 8448 key schedule, AES-128-GCM and ChaCha20-Poly1305 "
			"records, %lu reassemblies; %lu us); AES-NI %s, PCLMULQDQ %s",
		 (unsigned long)env.n_reasm, (unsigned long)us, aesni ? "used" : "absent",
		 clmul ? "used" : "absent");
	return 0;
}
