/* SPDX-License-Identifier: MIT
 * Unit tests for tls/hello: the key shares of a whole ClientHello in one record, every
 * malformed length refused (decode_error), and what is not a whole ClientHello left to
 * mbedTLS (-E_AGAIN). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "tls/hello.h"

static uint8_t rec[4096];

/* A ClientHello record with the given key_share body (the list, its own length included)
 * and extra extensions before it; returns the record's length. */
static size_t build(const uint8_t *ks, size_t ks_len, const uint8_t *pre, size_t pre_len)
{
	uint8_t ch[3000];
	size_t n = 0;
	ch[n++] = 3, ch[n++] = 3;
	memset(ch + n, 0xab, 32), n += 32;          /* random */
	ch[n++] = 0;                                /* session id */
	ch[n++] = 0, ch[n++] = 2, ch[n++] = 0x13, ch[n++] = 0x01; /* one suite */
	ch[n++] = 1, ch[n++] = 0;                   /* compression: null */
	size_t ext_at = n;
	n += 2;
	if (pre_len)
		memcpy(ch + n, pre, pre_len), n += pre_len;
	st_be16(ch + n, 0x0033), st_be16(ch + n + 2, (uint16_t)ks_len), n += 4;
	if (ks_len)
		memcpy(ch + n, ks, ks_len), n += ks_len;
	st_be16(ch + ext_at, (uint16_t)(n - ext_at - 2));
	size_t r = 0;
	rec[r++] = 22, rec[r++] = 3, rec[r++] = 1;
	st_be16(rec + r, (uint16_t)(n + 4)), r += 2;
	rec[r++] = 1, rec[r++] = 0, rec[r++] = (uint8_t)((n) >> 8), rec[r++] = (uint8_t)n;
	memcpy(rec + r, ch, n);
	return r + n;
}

static size_t share_list(uint8_t *out, unsigned count, uint16_t klen)
{
	size_t n = 2;
	for (unsigned i = 0; i < count; i++) {
		st_be16(out + n, (uint16_t)(0x001d + i)), st_be16(out + n + 2, klen), n += 4;
		memset(out + n, (int)(i + 1), klen), n += klen;
	}
	st_be16(out, (uint16_t)(n - 2));
	return n;
}

static void test_shares_found(void **state)
{
	(void)state;
	uint8_t ks[256];
	const uint8_t pre[] = { 0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04 }; /* supported_versions */
	size_t len = build(ks, share_list(ks, 2, 32), pre, sizeof pre);
	struct tls_hello_share sh[TLS_HELLO_MAX_SHARES];
	size_t n = 99;
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(sh[0].group, 0x001d);
	assert_int_equal(sh[0].len, 32);
	assert_int_equal(sh[0].key[0], 1);
	assert_int_equal(sh[1].group, 0x001e);
	assert_int_equal(sh[1].key[31], 2);
	/* no key_share at all: none, and no error */
	len = build(NULL, 0, pre, sizeof pre);
	st_be16(rec + len - 4, 0x0099); /* rename the (empty) key_share extension */
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), 0);
	assert_int_equal(n, 0);
}

static void test_share_list_is_cut(void **state)
{
	(void)state;
	uint8_t ks[1024];
	size_t len = build(ks, share_list(ks, 20, 8), NULL, 0);
	struct tls_hello_share sh[TLS_HELLO_MAX_SHARES];
	size_t n;
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), 0);
	assert_int_equal(n, TLS_HELLO_MAX_SHARES);
}

static void test_malformed(void **state)
{
	(void)state;
	uint8_t ks[256];
	struct tls_hello_share sh[TLS_HELLO_MAX_SHARES];
	size_t n;
	size_t kl = share_list(ks, 1, 32);
	/* list length one more than its bytes */
	st_be16(ks, (uint16_t)(kl - 1));
	size_t len = build(ks, kl, NULL, 0);
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), -E_PROTO);
	/* a key longer than the list */
	kl = share_list(ks, 1, 32);
	st_be16(ks + 4, 40);
	len = build(ks, kl, NULL, 0);
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), -E_PROTO);
	/* an empty key */
	const uint8_t empty[] = { 0, 4, 0x00, 0x1d, 0, 0 };
	len = build(empty, sizeof empty, NULL, 0);
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), -E_PROTO);
	/* extensions length not the rest of the ClientHello */
	kl = share_list(ks, 1, 32);
	len = build(ks, kl, NULL, 0);
	rec[9 + 2 + 32 + 1 + 4 + 2 + 1] ^= 1; /* the extensions length's low byte */
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), -E_PROTO);
	/* every truncation of a good record: never a crash, never a share past the end */
	len = build(ks, share_list(ks, 3, 32), NULL, 0);
	for (size_t cut = 0; cut < len; cut++) {
		int rc = tls_hello_key_shares(rec, cut, sh, &n);
		assert_true(rc == -E_AGAIN || rc == -E_PROTO || rc == 0);
		for (size_t i = 0; rc == 0 && i < n; i++)
			assert_true(sh[i].key + sh[i].len <= rec + cut);
	}
}

static void test_not_a_whole_client_hello(void **state)
{
	(void)state;
	uint8_t ks[256];
	struct tls_hello_share sh[TLS_HELLO_MAX_SHARES];
	size_t n;
	size_t len = build(ks, share_list(ks, 1, 32), NULL, 0);
	/* the handshake message continues in a later record */
	st_be16(rec + 3, (uint16_t)(len - 5 - 10));
	assert_int_equal(tls_hello_key_shares(rec, len - 10, sh, &n), -E_AGAIN);
	/* another record type, another handshake message */
	len = build(ks, share_list(ks, 1, 32), NULL, 0);
	rec[0] = 23;
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), -E_AGAIN);
	rec[0] = 22;
	rec[5] = 2;
	assert_int_equal(tls_hello_key_shares(rec, len, sh, &n), -E_AGAIN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shares_found),
		cmocka_unit_test(test_share_list_is_cut),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_not_a_whole_client_hello),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
