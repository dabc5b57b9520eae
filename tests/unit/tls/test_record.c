/* SPDX-License-Identifier: MIT
 * Unit tests for tls/record: HKDF-Expand-Label against RFC 8448, records against vectors
 * computed independently (Python hashlib/hmac + pyca/cryptography AEADs), round trips for
 * both suites, records split at every byte, padding, bad tags, oversized records, alerts,
 * close_notify, KeyUpdate both ways, sequence limits; the whole group runs twice, without
 * and with a tiny key cache (collisions on every other record). The key cache alone: hits,
 * misses, eviction, KeyUpdate invalidation, wipe on close, a reused record never served a
 * stale key; and the copy counter (0 for whole records). Every teardown checks that each
 * reassembly buffer was given back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "tls/record.h"

#include "mbedtls/gcm.h"

/* RFC 8448 section 3 (simple 1-RTT): server handshake traffic secret, and its write key/IV. */
static const uint8_t rfc8448_s_hs[32] = {
	0xb6, 0x7b, 0x7d, 0x69, 0x0c, 0xc1, 0x6c, 0x4e, 0x75, 0xe5, 0x42, 0x13, 0xcb, 0x2d, 0x37, 0xb4,
	0xe9, 0xc9, 0x12, 0xbc, 0xde, 0xd9, 0x10, 0x5d, 0x42, 0xbe, 0xfd, 0x59, 0xd3, 0x91, 0xad, 0x38
};
static const uint8_t rfc8448_key[16] = { 0x3f, 0xce, 0x51, 0x60, 0x09, 0xc2, 0x17, 0x27,
					 0xd0, 0xf2, 0xe4, 0xe8, 0x6e, 0xe4, 0x03, 0xbc };
static const uint8_t rfc8448_iv[12] = { 0x5d, 0x31, 0x3e, 0xb2, 0x67, 0x12,
					0x76, 0xee, 0x13, 0x00, 0x0b, 0x30 };
/* HKDF-Expand-Label(rfc8448_s_hs, "traffic upd", "", 32) (Python hmac). */
static const uint8_t upd_vec[32] = { 0xc5, 0x84, 0x7f, 0xfa, 0x1b, 0xfe, 0xa2, 0xd5, 0xc4, 0x09, 0xee,
				     0xe4, 0x5d, 0x28, 0x13, 0x18, 0x13, 0x27, 0xa7, 0x8a, 0x52, 0xee,
				     0x6d, 0x02, 0xd8, 0xa5, 0xe1, 0x0f, 0xbf, 0x0f, 0xfa, 0xce };
/* "hello" as application data under rfc8448_s_hs (pyca/cryptography AEADs). */
static const uint8_t gcm_seq0[] = { 0x17, 0x03, 0x03, 0x00, 0x16, 0xb1, 0x9a, 0x5f, 0x02, 0x39, 0xc0,
				    0x7b, 0x54, 0x82, 0x06, 0xb8, 0x3e, 0xfc, 0x2e, 0x70, 0x26, 0xbf,
				    0xcc, 0x3e, 0xbb, 0x7b, 0xac };
static const uint8_t gcm_seq5[] = { 0x17, 0x03, 0x03, 0x00, 0x16, 0x29, 0x94, 0x2a, 0x72, 0x16, 0xf3,
				    0xed, 0xb6, 0x44, 0x1f, 0xe2, 0x4e, 0xab, 0x34, 0x3b, 0x34, 0x57,
				    0xc9, 0x0d, 0xe3, 0x9b, 0x8c };
static const uint8_t cc_seq0[] = { 0x17, 0x03, 0x03, 0x00, 0x16, 0x38, 0x16, 0x19, 0x3c, 0x6c, 0xd8,
				   0xa6, 0x32, 0x5d, 0x8f, 0x57, 0xee, 0x33, 0x73, 0x8a, 0x12, 0x44,
				   0x5d, 0xe1, 0x77, 0x2e, 0x89 };

static const uint8_t sec_a[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
				   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
static const uint8_t sec_b[32] = { 0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa,
				   0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5,
				   0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf };

/* ---- fixtures ---------------------------------------------------------------------- */

static int n_alloc, n_free, fail_alloc;
static void *t_alloc(void *ctx, size_t len)
{
	(void)ctx;
	if (fail_alloc)
		return NULL;
	n_alloc++;
	return malloc(len);
}
static void t_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	n_free++;
	free(p);
}

struct sink {
	uint8_t data[200000];
	size_t len;
	int n_calls;
};
static struct sink got;
static int on_data(void *ctx, const uint8_t *p, size_t len)
{
	struct sink *s = ctx;
	assert_true(s->len + len <= sizeof s->data);
	memcpy(s->data + s->len, p, len);
	s->len += len;
	s->n_calls++;
	return 0;
}

static struct tls_rec_env env;
static struct tls_rec srv, cli; /* srv: our server side; cli: a peer built from the same code */
static uint8_t wire[200000];

/* Key cache of the group's env: 0 (derive per record) or a few slots. */
static uint32_t cache_n;
static struct tls_rec_key_slot cache[16];

static void env_make(uint16_t max_plain, uint64_t ku_after)
{
	struct tls_rec_config cfg = { max_plain, ku_after, { t_alloc, t_free, NULL }, cache, cache_n };
	assert_int_equal(tls_rec_env_init(&env, &cfg), 0);
}

static void pair_open(uint16_t suite)
{
	/* Server receives with secret a and sends with b; the client is the mirror image. */
	assert_int_equal(tls_rec_open(&srv, suite, sec_a, sec_b, 0, 0), 0);
	assert_int_equal(tls_rec_open(&cli, suite, sec_b, sec_a, 0, 0), 0);
}

static int setup(void **state)
{
	(void)state;
	n_alloc = n_free = fail_alloc = 0;
	memset(&got, 0, sizeof got);
	env_make(TLS_REC_MAX_PLAINTEXT, 1u << 24);
	pair_open(TLS_SUITE_AES_128_GCM_SHA256);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tls_rec_close(&env, &srv);
	tls_rec_close(&env, &cli);
	assert_int_equal(n_alloc, n_free); /* every reassembly buffer given back */
	return 0;
}

/* Seal an arbitrary inner plaintext (content + type + padding) with AES-128-GCM, for
 * records our writer never produces. Returns the record length. */
static size_t craft(const uint8_t *secret, uint64_t seq, uint8_t outer, const uint8_t *inner,
		    size_t n, uint8_t *out)
{
	uint8_t key[16], iv[12];
	mbedtls_gcm_context g;
	assert_int_equal(tls_rec_expand_label(secret, "key", NULL, 0, key, 16), 0);
	assert_int_equal(tls_rec_expand_label(secret, "iv", NULL, 0, iv, 12), 0);
	for (int i = 0; i < 8; i++)
		iv[4 + i] ^= (uint8_t)(seq >> (56 - 8 * i));
	out[0] = outer;
	out[1] = 3;
	out[2] = 3;
	out[3] = (uint8_t)((n + 16) >> 8);
	out[4] = (uint8_t)(n + 16);
	memcpy(out + 5, inner, n);
	mbedtls_gcm_init(&g);
	assert_int_equal(mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, key, 128), 0);
	assert_int_equal(mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT, n, iv, 12, out, 5, out + 5,
						   out + 5, 16, out + 5 + n),
			 0);
	mbedtls_gcm_free(&g);
	return 5 + n + 16;
}

/* ---- derivation and vectors --------------------------------------------------------- */

static void test_rfc8448_key_iv(void **state)
{
	(void)state;
	uint8_t key[16], iv[12], upd[32];
	assert_int_equal(tls_rec_expand_label(rfc8448_s_hs, "key", NULL, 0, key, sizeof key), 0);
	assert_int_equal(tls_rec_expand_label(rfc8448_s_hs, "iv", NULL, 0, iv, sizeof iv), 0);
	assert_memory_equal(key, rfc8448_key, 16);
	assert_memory_equal(iv, rfc8448_iv, 12);
	assert_int_equal(tls_rec_expand_label(rfc8448_s_hs, "traffic upd", NULL, 0, upd, 32), 0);
	assert_memory_equal(upd, upd_vec, 32);
	/* Out-of-range requests are refused. */
	assert_int_equal(tls_rec_expand_label(rfc8448_s_hs, "key", NULL, 0, upd, 33), -E_INVAL);
	assert_int_equal(tls_rec_expand_label(rfc8448_s_hs, "key", NULL, 0, upd, 0), -E_INVAL);
}

static void test_seal_matches_vectors(void **state)
{
	(void)state;
	static const struct {
		uint16_t suite;
		uint64_t seq;
		const uint8_t *rec;
		size_t len;
	} v[] = {
		{ TLS_SUITE_AES_128_GCM_SHA256, 0, gcm_seq0, sizeof gcm_seq0 },
		{ TLS_SUITE_AES_128_GCM_SHA256, 5, gcm_seq5, sizeof gcm_seq5 },
		{ TLS_SUITE_CHACHA20_POLY1305_SHA256, 0, cc_seq0, sizeof cc_seq0 },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct tls_rec r;
		size_t n;
		uint8_t buf[64];
		assert_int_equal(tls_rec_open(&r, v[i].suite, sec_a, rfc8448_s_hs, 0, v[i].seq), 0);
		assert_int_equal(tls_rec_write(&env, &r, (const uint8_t *)"hello", 5, wire, sizeof wire, &n), 0);
		assert_int_equal(n, v[i].len);
		assert_memory_equal(wire, v[i].rec, n);
		tls_rec_close(&env, &r);
		/* And the receiving side opens it. */
		assert_int_equal(tls_rec_open(&r, v[i].suite, rfc8448_s_hs, sec_a, v[i].seq, 0), 0);
		memcpy(buf, v[i].rec, v[i].len);
		got.len = 0;
		assert_int_equal(tls_rec_input(&env, &r, buf, v[i].len, on_data, &got), 0);
		assert_int_equal(got.len, 5);
		assert_memory_equal(got.data, "hello", 5);
		tls_rec_close(&env, &r);
	}
}

/* ---- round trips -------------------------------------------------------------------- */

static void round_trip(uint16_t suite, size_t len, size_t chunk)
{
	static uint8_t msg[70000];
	size_t n;
	pair_open(suite);
	for (size_t i = 0; i < len; i++)
		msg[i] = (uint8_t)(i * 31 + len);
	assert_int_equal(tls_rec_write(&env, &cli, msg, len, wire, sizeof wire, &n), 0);
	assert_true(n <= tls_rec_wire_len(&env, &cli, len));
	got.len = 0;
	for (size_t off = 0; off < n; off += chunk) {
		size_t c = n - off < chunk ? n - off : chunk;
		assert_int_equal(tls_rec_input(&env, &srv, wire + off, c, on_data, &got), 0);
		assert_true(tls_rec_check_invariants(&env, &srv));
	}
	assert_int_equal(got.len, len);
	assert_memory_equal(got.data, msg, len);
	assert_null(srv.reasm);
	tls_rec_close(&env, &srv);
	tls_rec_close(&env, &cli);
}

static void test_round_trips_both_suites(void **state)
{
	(void)state;
	static const size_t sizes[] = { 1, 2, 100, 1500, 16383, 16384, 16385, 40000, 70000 };
	static const uint16_t suites[] = { TLS_SUITE_AES_128_GCM_SHA256, TLS_SUITE_CHACHA20_POLY1305_SHA256 };
	for (size_t s = 0; s < 2; s++)
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
			round_trip(suites[s], sizes[i], sizeof wire);
}

static void test_records_split_anywhere(void **state)
{
	(void)state;
	/* Every chunk size from 1 (header split byte by byte) to past one record. */
	for (size_t chunk = 1; chunk < 60; chunk++)
		round_trip(TLS_SUITE_AES_128_GCM_SHA256, 100, chunk);
	round_trip(TLS_SUITE_CHACHA20_POLY1305_SHA256, 40000, 1460);
	round_trip(TLS_SUITE_CHACHA20_POLY1305_SHA256, 40000, 7);
}

static void test_in_place_encryption(void **state)
{
	(void)state;
	size_t n;
	memcpy(wire + TLS_REC_HDR_LEN, "in place", 8);
	assert_int_equal(tls_rec_write(&env, &cli, wire + TLS_REC_HDR_LEN, 8, wire, sizeof wire, &n), 0);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0);
	assert_int_equal(got.len, 8);
	assert_memory_equal(got.data, "in place", 8);
}

static void test_write_needs_room(void **state)
{
	(void)state;
	size_t n = 99;
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"abc", 3, wire, 3 + TLS_REC_OVERHEAD - 1, &n),
			 -E_OVERFLOW);
	assert_int_equal(n, 0);
	assert_true(cli.tx.seq == 0); /* nothing consumed */
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"abc", 3, wire, 3 + TLS_REC_OVERHEAD, &n), 0);
}

/* ---- rejections ------------------------------------------------------------------------- */

static void expect_fail(size_t len, int err, uint8_t alert, enum tls_rec_reject site)
{
	uint64_t before = env.rejected[site];
	assert_int_equal(tls_rec_input(&env, &srv, wire, len, on_data, &got), err);
	assert_true(tls_rec_failed(&srv));
	assert_int_equal(tls_rec_alert(&srv), alert);
	assert_true(env.rejected[site] == before + 1);
	assert_int_equal(got.len, 0); /* nothing unauthenticated was delivered */
	/* The fatal alert goes out under our key, and the peer reads it as that alert. */
	static uint8_t out[64];
	size_t n;
	assert_true(tls_rec_want_flush(&srv));
	assert_int_equal(tls_rec_flush(&env, &srv, out, sizeof out, &n), 0);
	assert_true(n > 0);
	assert_int_equal(tls_rec_input(&env, &cli, out, n, on_data, &got), -E_CLOSED);
	assert_int_equal(tls_rec_alert(&cli), alert);
	/* Failure is terminal. */
	assert_int_equal(tls_rec_input(&env, &srv, wire, len, on_data, &got), -E_CLOSED);
	assert_int_equal(tls_rec_write(&env, &srv, out, 1, wire, sizeof wire, &n), -E_CLOSED);
}

static void test_bad_tag(void **state)
{
	(void)state;
	size_t n;
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"secret", 6, wire, sizeof wire, &n), 0);
	wire[n - 1] ^= 0x01;
	expect_fail(n, -E_PROTO, TLS_ALERT_BAD_RECORD_MAC, TLS_REC_REJ_BAD_TAG);
}

static void test_wrong_sequence_is_bad_tag(void **state)
{
	(void)state;
	size_t n;
	cli.tx.seq = 1; /* a replayed or dropped record shows as an authentication failure */
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"x", 1, wire, sizeof wire, &n), 0);
	expect_fail(n, -E_PROTO, TLS_ALERT_BAD_RECORD_MAC, TLS_REC_REJ_BAD_TAG);
}

static void test_header_rejections(void **state)
{
	(void)state;
	static const struct {
		uint8_t hdr[5];
		uint8_t alert;
		enum tls_rec_reject site;
	} v[] = {
		{ { 22, 3, 3, 0, 40 }, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_OUTER_TYPE },
		{ { 20, 3, 3, 0, 1 }, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_OUTER_TYPE },
		{ { 23, 3, 3, 0x41, 0x01 }, TLS_ALERT_RECORD_OVERFLOW, TLS_REC_REJ_TOO_LONG }, /* 2^14 + 257 */
		{ { 23, 3, 3, 0x41, 0x10 }, TLS_ALERT_RECORD_OVERFLOW, TLS_REC_REJ_TOO_LONG }, /* was decrypted */
		{ { 23, 3, 3, 0x41, 0x12 }, TLS_ALERT_RECORD_OVERFLOW, TLS_REC_REJ_TOO_LONG },
		{ { 23, 3, 3, 0xff, 0xff }, TLS_ALERT_RECORD_OVERFLOW, TLS_REC_REJ_TOO_LONG },
		{ { 23, 3, 3, 0, 16 }, TLS_ALERT_DECODE_ERROR, TLS_REC_REJ_TOO_SHORT },
		{ { 23, 3, 3, 0, 0 }, TLS_ALERT_DECODE_ERROR, TLS_REC_REJ_TOO_SHORT },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		pair_open(TLS_SUITE_AES_128_GCM_SHA256);
		memcpy(wire, v[i].hdr, 5);
		/* Rejected on the header alone: no reassembly buffer is ever allocated. */
		int before = n_alloc;
		expect_fail(5, -E_PROTO, v[i].alert, v[i].site);
		assert_int_equal(n_alloc, before);
	}
}

/* RFC 8446 5.2: a TLSCiphertext of exactly 2^14 + 256 bytes (2^14 of content, its type,
 * 239 bytes of padding, the tag) is legal; one byte more is refused (test_header_rejections).
 * Opened in place (whole in one chunk) and through the reassembly buffer (split). */
static void test_ciphertext_at_limit(void **state)
{
	(void)state;
	static uint8_t inner[TLS_REC_MAX_PLAINTEXT + 240];
	memset(inner, 0, sizeof inner);
	for (size_t i = 0; i < TLS_REC_MAX_PLAINTEXT; i++)
		inner[i] = (uint8_t)(i * 7u + 1u);
	inner[TLS_REC_MAX_PLAINTEXT] = TLS_CT_APPDATA;
	for (uint64_t seq = 0; seq < 2; seq++) {
		size_t n = craft(sec_a, seq, TLS_CT_APPDATA, inner, sizeof inner, wire);
		assert_int_equal(n, TLS_REC_HDR_LEN + TLS_REC_MAX_PLAINTEXT + 256u);
		got.len = 0;
		if (seq == 0) {
			assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0);
		} else {
			assert_int_equal(tls_rec_input(&env, &srv, wire, 1000, on_data, &got), 0);
			assert_int_equal(tls_rec_input(&env, &srv, wire + 1000, n - 1000, on_data, &got), 0);
		}
		assert_int_equal(got.len, TLS_REC_MAX_PLAINTEXT);
		assert_memory_equal(got.data, inner, TLS_REC_MAX_PLAINTEXT);
		assert_false(tls_rec_failed(&srv));
	}
}

static void test_oversized_plaintext(void **state)
{
	(void)state;
	size_t n;
	static uint8_t big[200];
	env_make(100, 1u << 24);
	/* A peer without our limit sends 101 bytes in one record. */
	struct tls_rec_env wide;
	struct tls_rec_config cfg = { TLS_REC_MAX_PLAINTEXT, 1u << 24, { t_alloc, t_free, NULL }, NULL, 0 };
	assert_int_equal(tls_rec_env_init(&wide, &cfg), 0);
	assert_int_equal(tls_rec_write(&wide, &cli, big, 100, wire, sizeof wire, &n), 0);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0); /* 100 fits */
	got.len = 0;
	assert_int_equal(tls_rec_write(&wide, &cli, big, 101, wire, sizeof wire, &n), 0);
	expect_fail(n, -E_PROTO, TLS_ALERT_RECORD_OVERFLOW, TLS_REC_REJ_PLAIN_LONG);
	/* Our writer splits at our own limit. */
	pair_open(TLS_SUITE_AES_128_GCM_SHA256);
	got.n_calls = 0;
	assert_int_equal(tls_rec_write(&env, &cli, big, 150, wire, sizeof wire, &n), 0);
	assert_int_equal(n, 150 + 2 * TLS_REC_OVERHEAD);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0);
	assert_int_equal(got.n_calls, 2);
}

static void test_padding_and_inner_types(void **state)
{
	(void)state;
	uint8_t inner[80];
	size_t n;
	/* "hi", type 23, 50 zero bytes of padding: delivers "hi". */
	memset(inner, 0, sizeof inner);
	memcpy(inner, "hi", 2);
	inner[2] = TLS_CT_APPDATA;
	n = craft(sec_a, 0, TLS_CT_APPDATA, inner, 53, wire);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0);
	assert_int_equal(got.len, 2);
	assert_memory_equal(got.data, "hi", 2);
	/* Zero-length application data with padding is legal and delivers nothing. */
	memset(inner, 0, sizeof inner);
	inner[0] = TLS_CT_APPDATA;
	n = craft(sec_a, 1, TLS_CT_APPDATA, inner, 10, wire);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0);
	assert_int_equal(got.n_calls, 1);
	got.len = 0;

	static const struct {
		uint8_t inner[8];
		size_t len;
		uint8_t alert;
		enum tls_rec_reject site;
	} v[] = {
		{ { 0, 0, 0, 0 }, 4, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_NO_TYPE },
		{ { 'x', 20 }, 2, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_INNER_TYPE },
		/* RFC 8446 5: a protected change_cipher_spec is unexpected_message, after the
		 * handshake as during it (tls-flights.py second-protected-ccs) */
		{ { 1, 20 }, 2, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_INNER_TYPE },
		{ { 'x', 99, 0 }, 3, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_INNER_TYPE },
		{ { TLS_CT_ALERT }, 1, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_EMPTY },
		{ { TLS_CT_HANDSHAKE, 0 }, 2, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_EMPTY },
		{ { 1, 0, 0, TLS_CT_ALERT }, 4, TLS_ALERT_DECODE_ERROR, TLS_REC_REJ_ALERT_LEN },
		{ { 4, 0, 0, 1, 0, TLS_CT_HANDSHAKE }, 6, TLS_ALERT_UNEXPECTED_MESSAGE, TLS_REC_REJ_HS_MSG },
		{ { 24, 0, 0, 2, 0, 0, TLS_CT_HANDSHAKE }, 7, TLS_ALERT_DECODE_ERROR, TLS_REC_REJ_KEY_UPDATE },
		{ { 24, 0, 0, 1, 2, TLS_CT_HANDSHAKE }, 6, TLS_ALERT_ILLEGAL_PARAMETER, TLS_REC_REJ_KEY_UPDATE },
		{ { 24, 0, 0, 1, 0, 24, TLS_CT_HANDSHAKE }, 7, TLS_ALERT_DECODE_ERROR, TLS_REC_REJ_KEY_UPDATE },
		{ { 24, 0, 0, TLS_CT_HANDSHAKE }, 4, TLS_ALERT_DECODE_ERROR, TLS_REC_REJ_KEY_UPDATE },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		pair_open(TLS_SUITE_AES_128_GCM_SHA256);
		n = craft(sec_a, 0, TLS_CT_APPDATA, v[i].inner, v[i].len, wire);
		expect_fail(n, -E_PROTO, v[i].alert, v[i].site);
	}
}

static void test_reassembly_exhaustion(void **state)
{
	(void)state;
	size_t n;
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"0123456789", 10, wire, sizeof wire, &n), 0);
	fail_alloc = 1;
	assert_int_equal(tls_rec_input(&env, &srv, wire, 8, on_data, &got), -E_NOMEM);
	assert_true(tls_rec_failed(&srv));
	assert_int_equal(tls_rec_alert(&srv), TLS_ALERT_INTERNAL_ERROR);
	fail_alloc = 0;
}

/* ---- alerts, close, KeyUpdate, limits -------------------------------------------------- */

static void test_close_notify_both_ways(void **state)
{
	(void)state;
	size_t n, m;
	uint8_t out[128];
	tls_rec_shutdown(&cli);
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"x", 1, wire, sizeof wire, &n), -E_CLOSED);
	assert_int_equal(tls_rec_flush(&env, &cli, wire, sizeof wire, &n), 0);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), -E_CLOSED);
	assert_true(tls_rec_peer_closed(&srv));
	assert_false(tls_rec_failed(&srv));
	assert_int_equal(tls_rec_alert(&srv), TLS_ALERT_CLOSE_NOTIFY);
	/* We answer with our own close_notify. */
	assert_true(tls_rec_want_flush(&srv));
	assert_int_equal(tls_rec_flush(&env, &srv, out, sizeof out, &m), 0);
	assert_int_equal(tls_rec_input(&env, &cli, out, m, on_data, &got), -E_CLOSED);
	assert_true(tls_rec_peer_closed(&cli));
	/* Bytes after close_notify are refused and counted. */
	uint64_t before = env.rejected[TLS_REC_REJ_AFTER_CLOSE];
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), -E_CLOSED);
	assert_true(env.rejected[TLS_REC_REJ_AFTER_CLOSE] == before + 1);
}

static void test_fatal_alert_from_peer(void **state)
{
	(void)state;
	size_t n;
	tls_rec_abort(&cli, 40 /* handshake_failure */);
	assert_int_equal(tls_rec_flush(&env, &cli, wire, sizeof wire, &n), 0);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), -E_CLOSED);
	assert_true(tls_rec_failed(&srv));
	assert_int_equal(tls_rec_alert(&srv), 40);
	assert_false(tls_rec_want_flush(&srv)); /* nothing to answer a fatal alert with */
}

static void test_key_update_both_ways(void **state)
{
	(void)state;
	size_t n, m;
	/* The client updates its key and asks us to update ours, then sends data. */
	tls_rec_key_update(&cli, true);
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"after", 5, wire, sizeof wire, &n), 0);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0);
	assert_int_equal(got.len, 5);
	assert_true(env.n_key_updates_in == 1);
	assert_true(srv.rx.seq == 1); /* reset by the update, then one data record */
	/* Our answer goes before our next data, under the old key; data under the new. */
	assert_true(tls_rec_want_flush(&srv));
	assert_int_equal(tls_rec_write(&env, &srv, (const uint8_t *)"reply", 5, wire, sizeof wire, &m), 0);
	got.len = 0;
	assert_int_equal(tls_rec_input(&env, &cli, wire, m, on_data, &got), 0);
	assert_int_equal(got.len, 5);
	assert_memory_equal(got.data, "reply", 5);
	assert_false(tls_rec_want_flush(&cli)); /* update_not_requested: no ping-pong */
	assert_memory_equal(srv.tx.secret, cli.rx.secret, 32);
	assert_memory_not_equal(srv.tx.secret, sec_b, 32);
}

static void test_key_update_after_record_budget(void **state)
{
	(void)state;
	size_t n;
	env_make(TLS_REC_MAX_PLAINTEXT, 3);
	for (int i = 0; i < 6; i++) {
		got.len = 0;
		assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"abc", 3, wire, sizeof wire, &n), 0);
		assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0);
		assert_int_equal(got.len, 3);
	}
	assert_true(env.n_key_updates_out == 1); /* the 4th write started with a KeyUpdate */
	assert_true(cli.tx.seq <= 3);
}

static void test_sequence_limits(void **state)
{
	(void)state;
	size_t n;
	assert_int_equal(tls_rec_open(&cli, TLS_SUITE_AES_128_GCM_SHA256, sec_b, sec_a, 0, UINT64_MAX), 0);
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"x", 1, wire, sizeof wire, &n), -E_RANGE);
	assert_true(tls_rec_failed(&cli));
	assert_int_equal(tls_rec_flush(&env, &cli, wire, sizeof wire, &n), 0);
	assert_int_equal(n, 0); /* no sequence number left even for the alert */
	/* Receiving: a record that would need sequence 2^64-1 is refused. */
	assert_int_equal(tls_rec_open(&cli, TLS_SUITE_AES_128_GCM_SHA256, sec_b, sec_a, 0, 0), 0);
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"x", 1, wire, sizeof wire, &n), 0);
	srv.rx.seq = UINT64_MAX;
	expect_fail(n, -E_RANGE, TLS_ALERT_INTERNAL_ERROR, TLS_REC_REJ_SEQ);
}

static void test_config_and_size(void **state)
{
	(void)state;
	struct tls_rec_env e;
	struct tls_rec r;
	struct tls_rec_config bad = { 0, 1, { t_alloc, t_free, NULL }, NULL, 0 };
	assert_int_equal(tls_rec_env_init(&e, &bad), -E_INVAL);
	bad.max_plaintext = TLS_REC_MAX_PLAINTEXT + 1;
	assert_int_equal(tls_rec_env_init(&e, &bad), -E_INVAL);
	assert_int_equal(tls_rec_open(&r, 0x1302 /* AES-256: not offered */, sec_a, sec_b, 0, 0), -E_INVAL);
	/* The idle per-connection cost of the record layer (budget: 152 B with the connection). */
	print_message("sizeof(struct tls_rec) = %zu\n", tls_rec_sizeof());
	assert_true(tls_rec_sizeof() <= 112);
}

/* ---- key cache and copies ---------------------------------------------------------- */

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* One record cli -> srv; returns after srv delivered it. */
static void one_record(const char *msg)
{
	size_t n, len = strlen(msg);
	got.len = 0;
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)msg, len, wire, sizeof wire, &n), 0);
	assert_int_equal(tls_rec_input(&env, &srv, wire, n, on_data, &got), 0);
	assert_int_equal(got.len, len);
	assert_memory_equal(got.data, msg, len);
}

static void cache_env(uint32_t slots)
{
	struct tls_rec_config cfg = { TLS_REC_MAX_PLAINTEXT, 1u << 24, { t_alloc, t_free, NULL }, cache, slots };
	memset(cache, 0xee, sizeof cache); /* init must clear whatever was there */
	assert_int_equal(tls_rec_env_init(&env, &cfg), 0);
	assert_true(all_zero(cache, slots * sizeof cache[0]));
	pair_open(TLS_SUITE_CHACHA20_POLY1305_SHA256);
}

static void test_key_cache_hits(void **state)
{
	(void)state;
	cache_env(16);
	one_record("first"); /* cli.tx and srv.rx: one derivation each */
	assert_int_equal(env.n_key_misses, 2);
	assert_int_equal(env.n_key_hits, 0);
	assert_int_equal(tls_rec_key_cached(&env, &cli), 1);
	assert_int_equal(tls_rec_key_cached(&env, &srv), 1);
	for (int i = 0; i < 10; i++)
		one_record("busy connection");
	assert_int_equal(env.n_key_misses, 2);
	assert_int_equal(env.n_key_hits, 20);
	/* Cached and uncached keys are the same keys: an env without a cache reads it. */
	struct tls_rec_env plain;
	struct tls_rec_config pc = { TLS_REC_MAX_PLAINTEXT, 1u << 24, { t_alloc, t_free, NULL }, NULL, 0 };
	assert_int_equal(tls_rec_env_init(&plain, &pc), 0);
	size_t n;
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"x", 1, wire, sizeof wire, &n), 0);
	got.len = 0;
	assert_int_equal(tls_rec_input(&plain, &srv, wire, n, on_data, &got), 0);
	assert_int_equal(got.len, 1);
	assert_int_equal(plain.n_key_misses, 1);
	/* A cache slot pointer without slots, or slots without memory, are refused. */
	pc.key_cache_slots = 4;
	assert_int_equal(tls_rec_env_init(&plain, &pc), -E_INVAL);
}

static void test_key_cache_eviction(void **state)
{
	(void)state;
	/* One slot: the four directions of two connections share it. */
	cache_env(1);
	one_record("a"); /* cli.tx miss, srv.rx miss evicts cli.tx */
	assert_int_equal(env.n_key_misses, 2);
	assert_int_equal(env.n_key_evictions, 1);
	assert_int_equal(tls_rec_key_cached(&env, &srv), 1);
	assert_int_equal(tls_rec_key_cached(&env, &cli), 0);
	for (int i = 0; i < 5; i++)
		one_record("thrash"); /* still correct, every record derives */
	assert_int_equal(env.n_key_hits, 0);
	assert_int_equal(env.n_key_misses, 12);
	assert_int_equal(env.n_key_evictions, 11);
	/* The slot holds exactly the last owner's key: no trace of another secret. */
	assert_memory_equal(cache[0].secret, srv.rx.secret, TLS_REC_SECRET_LEN);
}

static void test_key_cache_key_update(void **state)
{
	(void)state;
	cache_env(16);
	one_record("before");
	uint8_t old_secret[TLS_REC_SECRET_LEN];
	memcpy(old_secret, srv.rx.secret, sizeof old_secret);
	/* The client updates its sending key: both cached entries of that secret are wiped
	 * (cli.tx when it sends the KeyUpdate, srv.rx when it receives it). */
	tls_rec_key_update(&cli, false);
	uint64_t wipes = env.n_key_wipes;
	one_record("after");
	assert_int_equal(env.n_key_wipes, wipes + 2);
	for (size_t i = 0; i < 16; i++)
		assert_false(memcmp(cache[i].secret, old_secret, sizeof old_secret) == 0);
	one_record("again"); /* new secret: derived once, then hits */
	uint64_t hits = env.n_key_hits;
	one_record("and again");
	assert_int_equal(env.n_key_hits, hits + 2);
}

static void test_key_cache_wiped_on_close(void **state)
{
	(void)state;
	cache_env(16);
	one_record("x");
	one_record("y");
	tls_rec_close(&env, &srv);
	tls_rec_close(&env, &cli);
	assert_true(all_zero(cache, sizeof cache)); /* no key material remains */
	/* A record reopened at the same address with other secrets never gets a stale key,
	 * even when its old entry survived (no close in between). */
	pair_open(TLS_SUITE_CHACHA20_POLY1305_SHA256);
	one_record("z");
	assert_int_equal(tls_rec_open(&srv, TLS_SUITE_CHACHA20_POLY1305_SHA256, sec_b, sec_a, 0, 0), 0);
	assert_int_equal(tls_rec_open(&cli, TLS_SUITE_CHACHA20_POLY1305_SHA256, sec_a, sec_b, 0, 0), 0);
	uint64_t misses = env.n_key_misses;
	one_record("new secrets");
	assert_int_equal(env.n_key_misses, misses + 2);
	tls_rec_env_fini(&env);
	assert_true(all_zero(cache, sizeof cache));
}

static void test_whole_records_not_copied(void **state)
{
	(void)state;
	for (int i = 0; i < 4; i++)
		one_record("whole record in one chunk");
	assert_int_equal(env.n_copied_in, 0);
	assert_int_equal(env.n_reasm, 0);
	/* A record split in two chunks is copied (header into the struct, body into the
	 * reassembly buffer). */
	size_t n;
	assert_int_equal(tls_rec_write(&env, &cli, (const uint8_t *)"split", 5, wire, sizeof wire, &n), 0);
	got.len = 0;
	assert_int_equal(tls_rec_input(&env, &srv, wire, 10, on_data, &got), 0);
	assert_int_equal(tls_rec_input(&env, &srv, wire + 10, n - 10, on_data, &got), 0);
	assert_int_equal(got.len, 5);
	assert_int_equal(env.n_copied_in, n);
}

/* The cases that go through the env's record path: run once without a key cache and once
 * through a tiny one, under distinct names so each result is counted once. */
#define RECORD_PATH_CASES(X)                                                                   \
	X(test_seal_matches_vectors)                                                           \
	X(test_round_trips_both_suites)                                                        \
	X(test_records_split_anywhere)                                                         \
	X(test_in_place_encryption)                                                            \
	X(test_write_needs_room)                                                               \
	X(test_bad_tag)                                                                        \
	X(test_wrong_sequence_is_bad_tag)                                                      \
	X(test_header_rejections)                                                              \
	X(test_ciphertext_at_limit)                                                            \
	X(test_oversized_plaintext)                                                            \
	X(test_padding_and_inner_types)                                                        \
	X(test_reassembly_exhaustion)                                                          \
	X(test_close_notify_both_ways)                                                         \
	X(test_fatal_alert_from_peer)                                                          \
	X(test_key_update_both_ways)                                                           \
	X(test_key_update_after_record_budget)                                                 \
	X(test_sequence_limits)                                                                \
	X(test_whole_records_not_copied)
#define NO_CACHE(f) cmocka_unit_test_setup_teardown(f, setup, teardown),
#define CACHE_OF_2(f) { .name = #f " (key cache of 2)", .test_func = f, .setup_func = setup, .teardown_func = teardown },

int main(void)
{
	/* Derivation and configuration do not touch the key cache: once. */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rfc8448_key_iv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_and_size, setup, teardown),
		RECORD_PATH_CASES(NO_CACHE)
	};
	const struct CMUnitTest cached_tests[] = { RECORD_PATH_CASES(CACHE_OF_2) };
	const struct CMUnitTest cache_tests[] = {
		cmocka_unit_test_setup_teardown(test_key_cache_hits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_cache_eviction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_cache_key_update, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_cache_wiped_on_close, setup, teardown),
	};
	int failed = cmocka_run_group_tests_name("record, no key cache", tests, NULL, NULL);
	cache_n = 2; /* every record path again through a tiny cache */
	failed += cmocka_run_group_tests_name("record, key cache of 2", cached_tests, NULL, NULL);
	failed += cmocka_run_group_tests_name("key cache", cache_tests, NULL, NULL);
	return failed;
}
