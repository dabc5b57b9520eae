/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/diag/limits: the run's bounds are the configuration's [diag] values
 * (the generated CONF_DIAG_* constants, in bytes), the development prompt knob replaces only
 * the prompt and 0 keeps the configured one, and the report's "limits" object is written
 * byte for byte (the smoke tests parse it from the console); a buffer too small for it
 * overflows cleanly (finish refuses, nothing past cap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "kernel/diag/diag_int.h"
#include "lib/err.h"
#include "urmqtt_config.h"

static void test_from_config(void **state)
{
	(void)state;
	struct diag_limits l;
	memset(&l, 0xa5, sizeof l);
	diag_limits_get(&l, 0);
	assert_int_equal(l.measure_ms, CONF_DIAG_MEASURE_MS);
	assert_int_equal(l.mem_buf_bytes, (uint64_t)CONF_DIAG_MEMORY_BUFFER_KB * 1024u);
	assert_int_equal(l.disk_read_bytes, (uint64_t)CONF_DIAG_DISK_READ_MB * 1024u * 1024u);
	assert_int_equal(l.disk_write_bytes, (uint64_t)CONF_DIAG_DISK_WRITE_MB * 1024u * 1024u);
	assert_int_equal(l.disk_chunk_bytes, (uint64_t)CONF_DIAG_DISK_CHUNK_KB * 1024u);
	assert_int_equal(l.wipe_prompt_s, CONF_DIAG_WIPE_PROMPT_S);
	/* the invariants diag.c relies on */
	assert_true(l.measure_ms > 0 && l.wipe_prompt_s > 0);
	assert_true(l.mem_buf_bytes >= 129u);
	assert_int_equal(l.disk_chunk_bytes % 4096u, 0);
	assert_true(l.disk_chunk_bytes > 0 && l.disk_chunk_bytes <= l.disk_read_bytes &&
		    l.disk_chunk_bytes <= l.disk_write_bytes);
}

static void test_prompt_knob(void **state)
{
	(void)state;
	struct diag_limits l, c;
	diag_limits_get(&c, 0);
	diag_limits_get(&l, 4);
	assert_int_equal(l.wipe_prompt_s, 4);
	l.wipe_prompt_s = c.wipe_prompt_s;
	assert_memory_equal(&l, &c, sizeof l); /* nothing else moved */
}

static void test_json(void **state)
{
	(void)state;
	const struct diag_limits l = {
		.measure_ms = 250,
		.mem_buf_bytes = 4u << 20,
		.disk_read_bytes = 4096ull << 20,
		.disk_write_bytes = 4u << 20,
		.disk_chunk_bytes = 64u << 10,
		.wipe_prompt_s = 30,
	};
	static const char want[] = "{\"diag_version\":1,\"limits\":{\"measure_ms\":250,\"memory_buffer_bytes\":4194304,"
				   "\"disk_read_bytes\":4294967296,\"disk_write_bytes\":4194304,"
				   "\"disk_chunk_bytes\":65536,\"wipe_prompt_s\":30},\"x\":true}";
	char buf[512];
	struct diag_json j;
	size_t len;
	diag_json_init(&j, buf, sizeof buf);
	diag_json_obj_begin(&j, NULL);
	diag_json_u64(&j, "diag_version", 1);
	diag_limits_json(&j, &l);
	diag_json_bool(&j, "x", true);
	diag_json_obj_end(&j);
	assert_int_equal(diag_json_finish(&j, &len), 0);
	assert_string_equal(buf, want);
	assert_int_equal(len, strlen(want));

	/* the configured bounds: the same members, the generated values */
	struct diag_limits c;
	char exp[512];
	diag_limits_get(&c, 0);
	int n = snprintf(exp, sizeof exp,
			 "{\"limits\":{\"measure_ms\":%u,\"memory_buffer_bytes\":%llu,\"disk_read_bytes\":%llu,"
			 "\"disk_write_bytes\":%llu,\"disk_chunk_bytes\":%llu,\"wipe_prompt_s\":%u}}",
			 (unsigned)CONF_DIAG_MEASURE_MS, (unsigned long long)CONF_DIAG_MEMORY_BUFFER_KB << 10,
			 (unsigned long long)CONF_DIAG_DISK_READ_MB << 20, (unsigned long long)CONF_DIAG_DISK_WRITE_MB << 20,
			 (unsigned long long)CONF_DIAG_DISK_CHUNK_KB << 10, (unsigned)CONF_DIAG_WIPE_PROMPT_S);
	assert_true(n > 0 && (size_t)n < sizeof exp);
	diag_json_init(&j, buf, sizeof buf);
	diag_json_obj_begin(&j, NULL);
	diag_limits_json(&j, &c);
	diag_json_obj_end(&j);
	assert_int_equal(diag_json_finish(&j, &len), 0);
	assert_string_equal(buf, exp);
}

static void test_overflow(void **state)
{
	(void)state;
	struct diag_limits l;
	diag_limits_get(&l, 0);
	char full[512];
	struct diag_json j;
	size_t len, n;
	diag_json_init(&j, full, sizeof full);
	diag_json_obj_begin(&j, NULL);
	diag_limits_json(&j, &l);
	diag_json_obj_end(&j);
	assert_int_equal(diag_json_finish(&j, &n), 0);
	for (size_t cap = 1; cap <= n; cap++) {
		char buf[512];
		memset(buf, 'Z', sizeof buf);
		diag_json_init(&j, buf, cap);
		diag_json_obj_begin(&j, NULL);
		diag_limits_json(&j, &l);
		diag_json_obj_end(&j);
		assert_int_equal(diag_json_finish(&j, &len), -E_OVERFLOW);
		assert_int_equal(len, 0);
		assert_true(strlen(buf) < cap);
		for (size_t i = cap; i < sizeof buf; i++)
			assert_int_equal(buf[i], 'Z');
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_config),
		cmocka_unit_test(test_prompt_knob),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
