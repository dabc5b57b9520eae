/* SPDX-License-Identifier: MIT
 * Unit tests for tls/identity and tls/revoke: device identity from CN or SAN URI, service
 * identity by URI prefix, refusal of ambiguous, missing, oversized and topic-unsafe
 * identities and of bytes that are not a certificate; revocation list matching. Every
 * teardown checks that mbedTLS gave back all it allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "tls/handshake.h"
#include "tls/identity.h"
#include "tls/revoke.h"

#include "certs_der.h"

static long live;
static void *t_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx;
	assert_int_equal(tag, HEAP_TAG_TLS_HANDSHAKE);
	live++;
	return malloc(len);
}
static void t_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	live--;
	free(p);
}

static int setup(void **state)
{
	(void)state;
	struct tls_hs_ops ops = { t_alloc, t_free, NULL, NULL, NULL, NULL, NULL };
	tls_hs_hooks_install(&ops);
	live = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(live, 0);
	return 0;
}

#define CERT(n) der_##n, sizeof der_##n

static void test_identity_table(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		const uint8_t *der;
		size_t len;
		uint8_t source;
		uint16_t max_len;
		const char *prefix;
		int rc;
		uint8_t kind;
		const char *name;
	} v[] = {
		{ "CN", CERT(cn), TLS_ID_FROM_CN, 64, NULL, 0, TLS_ID_DEVICE, "dev-42" },
		{ "CN, prefix set", CERT(cn), TLS_ID_FROM_CN, 64, "urn:urmqtt:svc:", 0, TLS_ID_DEVICE, "dev-42" },
		{ "URI", CERT(uri), TLS_ID_FROM_SAN_URI, 64, NULL, 0, TLS_ID_DEVICE, "urn:dev:7" },
		{ "CN although a URI exists", CERT(uri), TLS_ID_FROM_CN, 64, NULL, 0, TLS_ID_DEVICE, "dev-42" },
		{ "service by prefix", CERT(svc), TLS_ID_FROM_CN, 64, "urn:urmqtt:svc:", 0, TLS_ID_SERVICE, "backend-1" },
		{ "service prefix in URI mode", CERT(svc), TLS_ID_FROM_SAN_URI, 64, "urn:urmqtt:svc:", 0, TLS_ID_SERVICE, "backend-1" },
		{ "no prefix configured: device", CERT(svc), TLS_ID_FROM_SAN_URI, 64, NULL, 0, TLS_ID_DEVICE, "urn:urmqtt:svc:backend-1" },
		{ "slash in CN", CERT(slash), TLS_ID_FROM_CN, 64, NULL, -E_INVAL, 0, "" },
		{ "plus in CN", CERT(wild), TLS_ID_FROM_CN, 64, NULL, -E_INVAL, 0, "" },
		{ "no CN", CERT(nocn), TLS_ID_FROM_CN, 64, NULL, -E_NOENT, 0, "" },
		{ "no URI", CERT(cn), TLS_ID_FROM_SAN_URI, 64, NULL, -E_NOENT, 0, "" },
		{ "two CNs", CERT(twocn), TLS_ID_FROM_CN, 64, NULL, -E_INVAL, 0, "" },
		{ "two URIs", CERT(twouri), TLS_ID_FROM_SAN_URI, 64, NULL, -E_INVAL, 0, "" },
		{ "too long", CERT(cn), TLS_ID_FROM_CN, 5, NULL, -E_RANGE, 0, "" },
		{ "max_len 0", CERT(cn), TLS_ID_FROM_CN, 0, NULL, -E_INVAL, 0, "" },
		{ "truncated DER", der_cn, 100, TLS_ID_FROM_CN, 64, NULL, -E_INVAL, 0, "" },
		{ "not DER", (const uint8_t *)"hello", 5, TLS_ID_FROM_CN, 64, NULL, -E_INVAL, 0, "" },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		struct tls_id_config cfg = { v[i].source, v[i].max_len, v[i].prefix };
		struct tls_identity id;
		print_message("case: %s\n", v[i].what);
		assert_int_equal(tls_identity_from_der(&cfg, v[i].der, v[i].len, &id), v[i].rc);
		if (v[i].rc == 0) {
			assert_int_equal(id.kind, v[i].kind);
			assert_string_equal(id.name, v[i].name);
			assert_int_equal(id.len, strlen(v[i].name));
		} else {
			assert_int_equal(id.len, 0);
		}
		assert_int_equal(live, 0);
	}
}

static void test_revoke_list(void **state)
{
	(void)state;
	static const uint8_t s1[] = { 0x30, 0x01 }, s2[] = { 0x00, 0x8f }, s3[] = { 0x01, 0x02, 0x03 };
	static const struct tls_revoke_entry e[] = { { s1, 2 }, { s2, 2 }, { s3, 3 } };
	struct tls_revoke_list l = { e, 3 };
	static const uint8_t q1[] = { 0x30, 0x01 }, q2[] = { 0x8f }, q3[] = { 0x00, 0x00, 0x30, 0x01 };
	static const uint8_t q4[] = { 0x30 }, q5[] = { 0x01, 0x02 }, q6[] = { 0x00 };
	assert_true(tls_revoke_list_check(&l, q1, sizeof q1));
	assert_true(tls_revoke_list_check(&l, q2, sizeof q2)); /* leading zero ignored */
	assert_true(tls_revoke_list_check(&l, q3, sizeof q3));
	assert_false(tls_revoke_list_check(&l, q4, sizeof q4));
	assert_false(tls_revoke_list_check(&l, q5, sizeof q5));
	assert_false(tls_revoke_list_check(&l, q6, sizeof q6));
	assert_false(tls_revoke_list_check(&l, q6, 0));
	struct tls_revoke_list empty = { NULL, 0 };
	assert_false(tls_revoke_list_check(&empty, q1, sizeof q1));
}

/* The set the console changes at run time: add, remove (leading zeros ignored, the last
 * entry moves into the hole), bounds. */
static void test_revoke_set_add_remove(void **state)
{
	(void)state;
	struct tls_revoke_entry e[3];
	uint8_t bytes[3][TLS_REVOKE_SERIAL_MAX];
	struct tls_revoke_set s;
	tls_revoke_set_init(&s, e, bytes, 3);
	static const uint8_t a[] = { 0x30, 0x01 }, b[] = { 0x8f }, c[] = { 0x01, 0x02, 0x03 }, z[] = { 0x00, 0x8f };
	static const uint8_t big[TLS_REVOKE_SERIAL_MAX + 1] = { 1 };
	assert_int_equal(tls_revoke_set_add(&s, a, sizeof a), 0);
	assert_int_equal(tls_revoke_set_add(&s, b, sizeof b), 0);
	assert_int_equal(tls_revoke_set_add(&s, z, sizeof z), -E_EXIST);
	assert_int_equal(tls_revoke_set_add(&s, c, sizeof c), 0);
	assert_int_equal(tls_revoke_set_add(&s, big, 4), -E_NOMEM);
	assert_int_equal(tls_revoke_set_add(&s, big, sizeof big), -E_RANGE);
	assert_int_equal(tls_revoke_set_remove(&s, z, sizeof z), 0); /* 00 8f is 8f */
	assert_false(tls_revoke_list_check(&s.list, b, sizeof b));
	assert_true(tls_revoke_list_check(&s.list, a, sizeof a));
	assert_true(tls_revoke_list_check(&s.list, c, sizeof c));
	assert_int_equal(s.list.n, 2);
	assert_int_equal(tls_revoke_set_remove(&s, b, sizeof b), -E_NOENT);
	assert_int_equal(tls_revoke_set_add(&s, b, sizeof b), 0); /* room again */
	assert_int_equal(tls_revoke_set_remove(&s, c, sizeof c), 0);
	assert_int_equal(tls_revoke_set_remove(&s, a, sizeof a), 0);
	assert_int_equal(tls_revoke_set_remove(&s, b, sizeof b), 0);
	assert_int_equal(s.list.n, 0);
	assert_false(tls_revoke_list_check(&s.list, a, sizeof a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_revoke_set_add_remove),
		cmocka_unit_test_setup_teardown(test_identity_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_revoke_list, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
