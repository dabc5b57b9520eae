/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/diag/json: a nested report written and compared byte for byte (and
 * parsed back by the smoke test's python); escaping of quotes, backslashes, control and
 * non-ASCII bytes, NULs inside a length; fixed-point numbers; every buffer size from 1 up
 * to the full length overflows cleanly (NUL-terminated, nothing past cap, finish refuses);
 * misuse refused (key in an array, none in an object, unbalanced, too deep, a second
 * top-level value, an empty writer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/diag/json.h"
#include "lib/err.h"

static void write_report(struct diag_json *j)
{
	diag_json_obj_begin(j, NULL);
	diag_json_u64(j, "version", 1);
	diag_json_obj_begin(j, "cpu");
	diag_json_str(j, "vendor", "GenuineIntel");
	diag_json_u64(j, "count", 4);
	diag_json_arr_begin(j, "features");
	diag_json_str(j, NULL, "aes");
	diag_json_str(j, NULL, "rdrand");
	diag_json_arr_end(j);
	diag_json_obj_end(j);
	diag_json_fixed(j, "mb_s", 12345, 1);
	diag_json_fixed(j, "small", 7, 3);
	diag_json_bool(j, "ok", true);
	diag_json_bool(j, "wrote", false);
	diag_json_str(j, "none", NULL);
	diag_json_arr_begin(j, "empty");
	diag_json_arr_end(j);
	diag_json_obj_begin(j, "o");
	diag_json_obj_end(j);
	diag_json_u64(j, "max", UINT64_MAX);
	diag_json_obj_end(j);
}

static const char report[] = "{\"version\":1,\"cpu\":{\"vendor\":\"GenuineIntel\",\"count\":4,"
			     "\"features\":[\"aes\",\"rdrand\"]},\"mb_s\":1234.5,\"small\":0.007,"
			     "\"ok\":true,\"wrote\":false,\"none\":null,\"empty\":[],\"o\":{},"
			     "\"max\":18446744073709551615}";

static void test_report(void **state)
{
	(void)state;
	char buf[512];
	struct diag_json j;
	size_t len;
	diag_json_init(&j, buf, sizeof buf);
	write_report(&j);
	assert_int_equal(diag_json_finish(&j, &len), 0);
	assert_string_equal(buf, report);
	assert_int_equal(len, strlen(report));
}

static void test_escape(void **state)
{
	(void)state;
	char buf[256];
	struct diag_json j;
	size_t len;
	diag_json_init(&j, buf, sizeof buf);
	diag_json_obj_begin(&j, NULL);
	diag_json_str(&j, "q\"k", "a\"b\\c\n\r\t\x01\x7f\x80\xff/");
	diag_json_strn(&j, "n", "x\0y", 3);
	diag_json_obj_end(&j);
	assert_int_equal(diag_json_finish(&j, &len), 0);
	assert_string_equal(buf, "{\"q\\\"k\":\"a\\\"b\\\\c\\u000a\\u000d\\u0009\\u0001\\u007f\\u0080\\u00ff/\","
				 "\"n\":\"x\\u0000y\"}");
}

static void test_overflow_every_size(void **state)
{
	(void)state;
	size_t full = strlen(report);
	for (size_t cap = 1; cap <= full + 1; cap++) {
		char buf[600];
		memset(buf, 'Z', sizeof buf);
		struct diag_json j;
		size_t len = 5;
		diag_json_init(&j, buf, cap);
		write_report(&j);
		int rc = diag_json_finish(&j, &len);
		if (cap == full + 1) {
			assert_int_equal(rc, 0);
			assert_string_equal(buf, report);
		} else {
			assert_int_equal(rc, -E_OVERFLOW);
			assert_int_equal(len, 0);
			assert_true(strlen(buf) < cap);                  /* NUL-terminated inside */
			assert_memory_equal(buf, report, strlen(buf));   /* a prefix, never garbage */
		}
		for (size_t i = cap; i < sizeof buf; i++)
			assert_int_equal(buf[i], 'Z'); /* nothing past cap */
	}
	struct diag_json j;
	size_t len;
	diag_json_init(&j, NULL, 0);
	diag_json_u64(&j, NULL, 1);
	assert_int_equal(diag_json_finish(&j, &len), -E_OVERFLOW);
}

static void test_misuse(void **state)
{
	(void)state;
	char buf[128];
	struct diag_json j;
	size_t len;

	diag_json_init(&j, buf, sizeof buf); /* key inside an array */
	diag_json_arr_begin(&j, NULL);
	diag_json_u64(&j, "k", 1);
	diag_json_arr_end(&j);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* no key inside an object */
	diag_json_obj_begin(&j, NULL);
	diag_json_u64(&j, NULL, 1);
	diag_json_obj_end(&j);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* unbalanced */
	diag_json_obj_begin(&j, NULL);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* wrong closer */
	diag_json_obj_begin(&j, NULL);
	diag_json_arr_end(&j);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* closing nothing */
	diag_json_obj_end(&j);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* a key at the top level */
	diag_json_u64(&j, "k", 1);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* two top-level values */
	diag_json_u64(&j, NULL, 1);
	diag_json_u64(&j, NULL, 2);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* nothing written */
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* too deep */
	for (int i = 0; i <= DIAG_JSON_MAX_DEPTH; i++)
		diag_json_arr_begin(&j, NULL);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);

	diag_json_init(&j, buf, sizeof buf); /* exactly the depth limit is fine */
	for (int i = 0; i < DIAG_JSON_MAX_DEPTH; i++)
		diag_json_arr_begin(&j, NULL);
	for (int i = 0; i < DIAG_JSON_MAX_DEPTH; i++)
		diag_json_arr_end(&j);
	assert_int_equal(diag_json_finish(&j, &len), 0);
	assert_string_equal(buf, "[[[[[[[[]]]]]]]]");

	diag_json_init(&j, buf, sizeof buf); /* too many decimals */
	diag_json_fixed(&j, NULL, 1, 7);
	assert_int_equal(diag_json_finish(&j, &len), -E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_overflow_every_size),
		cmocka_unit_test(test_misuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
