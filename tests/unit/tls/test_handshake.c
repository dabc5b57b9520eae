/* SPDX-License-Identifier: MIT
 * Unit tests for tls/handshake without a TLS client (the real handshakes are in
 * tests/smoke/tls-echo.sh): env creation and its refusals, the bound on handshakes in
 * flight, hostile first bytes, truncated input, accounting of the TLS handshake tag's
 * allocations back to zero, the RSA key policy (refused unless allowed, 2048-4096 bits) and
 * the calendar conversion used for certificate validity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lib/err.h"
#include "tls/handshake.h"

#include "certs_der.h"
#include "certs_rsa.h"

/* Defined in tls/handshake.c for mbedTLS (struct tm of tls/shim/time.h). */
struct shim_tm {
	int sec, min, hour, mday, mon, year, wday, yday, isdst;
};
struct shim_tm *mbedtls_platform_gmtime_r(const long long *tt, struct shim_tm *tm_buf);

static long live_blocks;
static void *t_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx;
	assert_int_equal(tag, HEAP_TAG_TLS_HANDSHAKE);
	live_blocks++;
	return malloc(len);
}
static void t_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	live_blocks--;
	free(p);
}
static int t_random(void *ctx, uint8_t *out, size_t len)
{
	(void)ctx;
	return getrandom(out, len, 0) == (ssize_t)len ? 0 : -E_IO;
}
static int64_t t_now_s(void *ctx)
{
	(void)ctx;
	return 1800000000; /* 2027: inside the test certificates' validity */
}
static int64_t t_now_ms(void *ctx)
{
	(void)ctx;
	return 1000;
}

static uint8_t sent[8192];
static size_t sent_len;
static int t_send(void *ctx, const uint8_t *p, size_t len)
{
	(void)ctx;
	if (sent_len + len > sizeof sent)
		return -E_OVERFLOW;
	memcpy(sent + sent_len, p, len);
	sent_len += len;
	return 0;
}

static struct tls_hs_config cfg_make(void)
{
	struct tls_hs_config c;
	memset(&c, 0, sizeof c);
	c.max_in_flight = 2;
	c.ca = der_cn;
	c.ca_len = sizeof der_cn;
	c.cert = der_cn;
	c.cert_len = sizeof der_cn;
	c.key = der_key;
	c.key_len = sizeof der_key;
	c.id = (struct tls_id_config){ TLS_ID_FROM_CN, 64, NULL };
	c.ticket_lifetime_s = 600;
	c.n_tickets = 1;
	c.ops = (struct tls_hs_ops){ t_alloc, t_free, t_random, t_now_s, t_now_ms, NULL, NULL };
	return c;
}

static int setup(void **state)
{
	(void)state;
	live_blocks = 0;
	sent_len = 0;
	return 0;
}
static int teardown(void **state)
{
	(void)state;
	assert_int_equal(live_blocks, 0); /* every tls-handshake block given back */
	return 0;
}

static void test_env_create_destroy(void **state)
{
	(void)state;
	struct tls_hs_config c = cfg_make();
	struct tls_hs_env *env;
	struct tls_hs_stats st;
	assert_int_equal(tls_hs_env_create(&c, &env), 0);
	tls_hs_stats_get(env, &st);
	assert_true(st.live_bytes > 0);
	assert_int_equal(st.in_flight, 0);
	tls_hs_env_destroy(env);
}

static void test_env_refusals(void **state)
{
	(void)state;
	struct tls_hs_env *env;
	struct tls_hs_config c = cfg_make();
	c.max_in_flight = 0;
	assert_int_equal(tls_hs_env_create(&c, &env), -E_INVAL);
	c = cfg_make();
	c.key_len = 20; /* truncated key */
	assert_int_equal(tls_hs_env_create(&c, &env), -E_INVAL);
	assert_null(env);
	c = cfg_make();
	c.ca = (const uint8_t *)"not a certificate";
	c.ca_len = 18;
	assert_int_equal(tls_hs_env_create(&c, &env), -E_INVAL);
	c = cfg_make();
	c.ops.random = NULL;
	assert_int_equal(tls_hs_env_create(&c, &env), -E_INVAL);
}

/* The server's chain as the image embeds it: DER certificates back to back. Whole ones are
 * counted and an env takes the chain; a truncated last one, a trailing byte or nothing is
 * refused, by the count and by the env. */
static void test_der_chain(void **state)
{
	(void)state;
	static uint8_t two[sizeof der_cn + sizeof der_svc + 1];
	memcpy(two, der_cn, sizeof der_cn);
	memcpy(two + sizeof der_cn, der_svc, sizeof der_svc);
	size_t len = sizeof der_cn + sizeof der_svc;
	struct tls_hs_config c = cfg_make();
	struct tls_hs_env *env;
	assert_int_equal(tls_der_chain_count(two, sizeof der_cn), 1);
	assert_int_equal(tls_der_chain_count(two, len), 2);
	c.cert = two;
	c.cert_len = len;
	assert_int_equal(tls_hs_env_create(&c, &env), 0);
	tls_hs_env_destroy(env);
	static const size_t bad_len[] = { 0, sizeof der_cn + sizeof der_svc - 1, sizeof der_cn + sizeof der_svc + 1,
					  sizeof der_cn - 1, sizeof der_cn + 1, 1 };
	for (size_t i = 0; i < sizeof bad_len / sizeof bad_len[0]; i++) {
		assert_int_equal(tls_der_chain_count(two, bad_len[i]), -E_PROTO);
		c.cert_len = bad_len[i];
		assert_int_equal(tls_hs_env_create(&c, &env), -E_INVAL);
	}
}

/* RSA credentials: one row per (rsa allowed, ca, cert, key) with the expected result. */
static void test_rsa_policy(void **state)
{
	(void)state;
	static const struct {
		bool rsa;
		const uint8_t *ca, *cert, *key;
		size_t ca_len, cert_len, key_len;
		int want;
	} rows[] = {
		{ true, der_cn, der_cn, der_key, sizeof der_cn, sizeof der_cn, sizeof der_key, 0 },
		{ true, der_rsa2048_crt, der_rsa2048_crt, der_rsa2048_key, sizeof der_rsa2048_crt,
		  sizeof der_rsa2048_crt, sizeof der_rsa2048_key, 0 },
		{ false, der_rsa2048_crt, der_rsa2048_crt, der_rsa2048_key, sizeof der_rsa2048_crt,
		  sizeof der_rsa2048_crt, sizeof der_rsa2048_key, -E_PERM },
		/* An RSA CA alone is an RSA chain too. */
		{ false, der_rsa2048_crt, der_cn, der_key, sizeof der_rsa2048_crt, sizeof der_cn,
		  sizeof der_key, -E_PERM },
		{ true, der_rsa2048_crt, der_cn, der_key, sizeof der_rsa2048_crt, sizeof der_cn,
		  sizeof der_key, 0 },
		{ true, der_rsa1024_crt, der_rsa1024_crt, der_rsa1024_key, sizeof der_rsa1024_crt,
		  sizeof der_rsa1024_crt, sizeof der_rsa1024_key, -E_RANGE },
		{ true, der_cn, der_cn, der_rsa1024_key, sizeof der_cn, sizeof der_cn,
		  sizeof der_rsa1024_key, -E_RANGE },
		{ false, der_rsa1024_crt, der_rsa1024_crt, der_rsa1024_key, sizeof der_rsa1024_crt,
		  sizeof der_rsa1024_crt, sizeof der_rsa1024_key, -E_PERM },
	};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		struct tls_hs_config c = cfg_make();
		struct tls_hs_env *env = NULL;
		c.rsa = rows[i].rsa;
		c.ca = rows[i].ca;
		c.ca_len = rows[i].ca_len;
		c.cert = rows[i].cert;
		c.cert_len = rows[i].cert_len;
		c.key = rows[i].key;
		c.key_len = rows[i].key_len;
		int rc = tls_hs_env_create(&c, &env);
		if (rc != rows[i].want)
			fail_msg("row %zu: got %d want %d", i, rc, rows[i].want);
		if (rc == 0) {
			struct tls_hs *hs;
			assert_int_equal(tls_hs_start(env, t_send, NULL, &hs), 0);
			tls_hs_abort(hs);
			tls_hs_env_destroy(env);
		} else {
			assert_null(env);
		}
	}
}

static void test_in_flight_bound(void **state)
{
	(void)state;
	struct tls_hs_config c = cfg_make();
	struct tls_hs_env *env;
	struct tls_hs *a, *b, *x;
	struct tls_hs_stats st;
	assert_int_equal(tls_hs_env_create(&c, &env), 0);
	assert_int_equal(tls_hs_start(env, t_send, NULL, &a), 0);
	assert_int_equal(tls_hs_start(env, t_send, NULL, &b), 0);
	assert_int_equal(tls_hs_start(env, t_send, NULL, &x), -E_NOMEM);
	assert_null(x);
	tls_hs_stats_get(env, &st);
	assert_int_equal(st.in_flight, 2);
	assert_true(st.n_refused == 1);
	tls_hs_abort(a);
	assert_int_equal(tls_hs_start(env, t_send, NULL, &x), 0); /* the slot came back */
	tls_hs_abort(b);
	tls_hs_abort(x);
	tls_hs_stats_get(env, &st);
	assert_int_equal(st.in_flight, 0);
	tls_hs_env_destroy(env);
}

static void test_hostile_first_bytes(void **state)
{
	(void)state;
	/* alert: the fatal alert the server sends back in plaintext (0: nothing: the client's
	 * own alert is never answered, and nothing is said while waiting for more). */
	static const struct {
		const char *what;
		uint8_t in[16];
		size_t len;
		int rc;
		uint8_t alert;
	} v[] = {
		{ "HTTP instead of TLS", "GET / HTTP/1.1\r\n", 16, -E_PROTO, 10 /* unexpected_message */ },
		{ "alert record first", { 21, 3, 3, 0, 2, 2, 40 }, 7, -E_PROTO, 0 },
		{ "oversized ClientHello record", { 22, 3, 1, 0x48, 0x01, 1 }, 6, -E_PROTO, 22 /* record_overflow */ },
		{ "empty handshake record", { 22, 3, 1, 0, 0 }, 5, -E_PROTO, 50 /* decode_error */ },
		{ "an empty alert record", { 21, 3, 3, 0, 0 }, 5, -E_PROTO, 50 /* decode_error */ },
		{ "content type zero", { 0, 3, 3, 0, 1, 0 }, 6, -E_PROTO, 10 /* unexpected_message */ },
		{ "truncated ClientHello", { 22, 3, 1, 0, 100, 1, 0, 0, 96, 3, 3 }, 11, 0, 0 },
		{ "half a header", { 22, 3 }, 2, 0, 0 },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct tls_hs_config c = cfg_make();
		struct tls_hs_env *env;
		struct tls_hs *hs;
		struct tls_hs_stats st;
		size_t used = 99;
		print_message("case: %s\n", v[i].what);
		assert_int_equal(tls_hs_env_create(&c, &env), 0);
		assert_int_equal(tls_hs_start(env, t_send, NULL, &hs), 0);
		sent_len = 0;
		assert_int_equal(tls_hs_input(hs, v[i].in, v[i].len, &used), v[i].rc);
		if (v[i].alert) {
			assert_int_equal(sent_len, 7); /* one plaintext fatal alert record */
			assert_int_equal(sent[0], 21);
			assert_int_equal(sent[5], 2);
			assert_int_equal(sent[6], v[i].alert);
		} else {
			assert_int_equal(sent_len, 0);
		}
		if (v[i].rc == 0)
			assert_int_equal(used, v[i].len); /* nothing left behind while waiting */
		else
			assert_true(tls_hs_error(hs) < 0);
		tls_hs_abort(hs);
		tls_hs_stats_get(env, &st);
		assert_int_equal(st.in_flight, 0);
		tls_hs_env_destroy(env);
	}
}

static void test_gmtime(void **state)
{
	(void)state;
	static const struct {
		long long t;
		int year, mon, mday, hour, min, sec;
	} v[] = {
		{ 0, 70, 0, 1, 0, 0, 0 },
		{ -1, 69, 11, 31, 23, 59, 59 },
		{ 951782400, 100, 1, 29, 0, 0, 0 },   /* 2000-02-29 */
		{ 1709251199, 124, 1, 29, 23, 59, 59 }, /* 2024-02-29 23:59:59 */
		{ 4102444800, 200, 0, 1, 0, 0, 0 },   /* 2100-01-01 */
		{ 253402300799, 8099, 11, 31, 23, 59, 59 }, /* 9999-12-31 23:59:59 */
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct shim_tm tm;
		assert_non_null(mbedtls_platform_gmtime_r(&v[i].t, &tm));
		assert_int_equal(tm.year, v[i].year);
		assert_int_equal(tm.mon, v[i].mon);
		assert_int_equal(tm.mday, v[i].mday);
		assert_int_equal(tm.hour, v[i].hour);
		assert_int_equal(tm.min, v[i].min);
		assert_int_equal(tm.sec, v[i].sec);
	}
	struct shim_tm tm;
	long long far = 253402300800LL; /* year 10000: refused */
	assert_null(mbedtls_platform_gmtime_r(&far, &tm));
}

/* A good ClientHello (X25519 share, both suites) whose first bytes arrive alone: the look
 * at the first record must not read the rest of it as a record header; the server answers
 * with its ServerHello. */
static const uint8_t good_hello[] = {
	0x16, 0x03, 0x03, 0x00, 0x92, 0x01, 0x00, 0x00, 0x8e, 0x03, 0x03, 0x25, 0x07, 0x2f, 0xcd, 0x74,
	0x45, 0xe9, 0x42, 0x6f, 0x92, 0x81, 0x42, 0x70, 0xc1, 0x87, 0x58, 0xf5, 0xd8, 0x47, 0x84, 0x56,
	0x4c, 0x19, 0x81, 0x51, 0x7b, 0xe9, 0x8e, 0xf2, 0xcf, 0x56, 0x0d, 0x20, 0xc4, 0x63, 0x29, 0x81,
	0x6b, 0x62, 0xab, 0x46, 0x43, 0xa0, 0x85, 0x44, 0x38, 0x4b, 0x60, 0x67, 0x25, 0x58, 0xdf, 0x98,
	0x03, 0x34, 0xf5, 0x33, 0x73, 0xe3, 0x0f, 0xb1, 0x64, 0xdb, 0x75, 0xba, 0x00, 0x04, 0x13, 0x01,
	0x13, 0x03, 0x01, 0x00, 0x00, 0x41, 0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04, 0x00, 0x0a, 0x00,
	0x04, 0x00, 0x02, 0x00, 0x1d, 0x00, 0x0d, 0x00, 0x04, 0x00, 0x02, 0x04, 0x03, 0x00, 0x33, 0x00,
	0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0x1e, 0x3f, 0xa8, 0xc6, 0x57, 0xa0, 0xd5, 0x03, 0x8b,
	0xc6, 0xa9, 0x30, 0x5c, 0xe2, 0x2a, 0x4e, 0xa7, 0x80, 0xe8, 0x8e, 0x81, 0x48, 0x4d, 0x34, 0xe4,
	0x06, 0xc8, 0xa4, 0xcd, 0x4b, 0xe4, 0x2e,
};

static void test_first_bytes_split(void **state)
{
	(void)state;
	for (size_t first = 1; first < 12; first++) {
		struct tls_hs_config c = cfg_make();
		struct tls_hs_env *env;
		struct tls_hs *hs;
		size_t used;
		assert_int_equal(tls_hs_env_create(&c, &env), 0);
		assert_int_equal(tls_hs_start(env, t_send, NULL, &hs), 0);
		sent_len = 0;
		assert_int_equal(tls_hs_input(hs, good_hello, first, &used), 0);
		assert_int_equal(tls_hs_input(hs, good_hello + first, sizeof good_hello - first, &used), 0);
		assert_true(sent_len > 5);
		assert_int_equal(sent[0], 22); /* a handshake record: the ServerHello, no alert */
		assert_int_equal(sent[5], 2);
		tls_hs_abort(hs);
		tls_hs_env_destroy(env);
	}
}

/* The alert table's rows that read the record mbedTLS failed on (tls/handshake.c
 * alert_for), before any key: a good ClientHello's first 40 bytes in a record of their own,
 * so mbedTLS waits for the rest, then a record that is no rest of it. The rows after the
 * key change (a plaintext Finished, a bad ChangeCipherSpec, a protected record with no
 * content type) need a TLS client: tests/smoke/tls-echo.sh's second-* flights. */
static uint8_t second_in[5 + 40 + 5 + 0x4101];

static void test_second_record(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		uint8_t hdr[5];
		uint8_t alert;
	} v[] = {
		{ "content type zero", { 0, 3, 3, 0, 8 }, 10 /* unexpected_message (was decode_error) */ },
		{ "an empty handshake record", { 22, 3, 3, 0, 0 }, 50 /* decode_error */ },
		{ "an empty alert record", { 21, 3, 3, 0, 0 }, 50 /* decode_error */ },
		{ "an alert inside a handshake message", { 21, 3, 3, 0, 2 }, 10 /* unexpected_message (5.1) */ },
		{ "plaintext over 2^14", { 22, 3, 3, 0x40, 0x01 }, 22 /* record_overflow */ },
		{ "ciphertext over 2^14 + 256", { 23, 3, 3, 0x41, 0x01 }, 22 /* record_overflow */ },
	};
	memset(second_in, 0, sizeof second_in);
	memcpy(second_in, (const uint8_t[]){ 22, 3, 3, 0, 40 }, 5);
	memcpy(second_in + 5, good_hello + 5, 40);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct tls_hs_config c = cfg_make();
		struct tls_hs_env *env;
		struct tls_hs *hs;
		size_t used, len = 5 + 40 + 5 + (size_t)(v[i].hdr[3] << 8 | v[i].hdr[4]);
		print_message("case: %s\n", v[i].what);
		assert_true(len <= sizeof second_in);
		memcpy(second_in + 45, v[i].hdr, 5);
		assert_int_equal(tls_hs_env_create(&c, &env), 0);
		assert_int_equal(tls_hs_start(env, t_send, NULL, &hs), 0);
		sent_len = 0;
		assert_int_equal(tls_hs_input(hs, second_in, 45, &used), 0);
		assert_int_equal(used, 45);
		assert_int_equal(sent_len, 0);
		assert_int_equal(tls_hs_input(hs, second_in + 45, len - 45, &used), -E_PROTO);
		assert_int_equal(sent_len, 7); /* one plaintext fatal alert record */
		assert_int_equal(sent[0], 21);
		assert_int_equal(sent[5], 2);
		assert_int_equal(sent[6], v[i].alert);
		tls_hs_abort(hs);
		tls_hs_env_destroy(env);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_env_create_destroy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_env_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rsa_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_der_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_flight_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_first_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gmtime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_bytes_split, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_record, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
