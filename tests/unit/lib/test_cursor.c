/* SPDX-License-Identifier: MIT
 * Unit tests for lib/cursor: reads past the end fail without touching memory, errors are
 * sticky, writers never overrun, byte order is right. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/cursor.h"

static void test_reads_big_and_little_endian(void **state)
{
	(void)state;
	const uint8_t b[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17 };
	struct cur c = cur_make(b, sizeof b);
	assert_int_equal(cur_u8(&c), 1);
	assert_int_equal(cur_be16(&c), 0x0203);
	assert_int_equal(cur_be24(&c), 0x040506);
	assert_int_equal(cur_be32(&c), 0x0708090a);
	assert_int_equal(cur_le16(&c), 0x0c0b);
	assert_int_equal(cur_le32(&c), 0x100f0e0d);
	assert_true(cur_ok(&c));
	assert_int_equal(cur_left(&c), 1);
	c = cur_make(b, sizeof b);
	assert_true(cur_be64(&c) == 0x0102030405060708ull);
	assert_true(cur_le64(&c) == 0x100f0e0d0c0b0a09ull);
}

static void test_read_past_end_is_sticky_and_harmless(void **state)
{
	(void)state;
	const uint8_t b[3] = { 0xaa, 0xbb, 0xcc };
	uint8_t out[4] = { 1, 2, 3, 4 };
	struct cur c = cur_make(b, sizeof b);
	assert_int_equal(cur_be32(&c), 0);
	assert_false(cur_ok(&c));
	assert_int_equal(c.pos, 0);
	assert_int_equal(cur_u8(&c), 0); /* sticky: even an in-bounds read fails now */
	cur_bytes(&c, out, sizeof out);
	assert_memory_equal(out, "\0\0\0\0", 4);
	assert_null(cur_ptr(&c, 1));
}

static void test_huge_length_does_not_wrap(void **state)
{
	(void)state;
	const uint8_t b[8] = { 0 };
	struct cur c = cur_make(b, sizeof b);
	cur_skip(&c, 4);
	assert_null(cur_ptr(&c, SIZE_MAX));
	assert_false(cur_ok(&c));
	c = cur_make(b, sizeof b);
	cur_skip(&c, SIZE_MAX - 2);
	assert_false(cur_ok(&c));
}

static void test_sub_cursor_bounds(void **state)
{
	(void)state;
	const uint8_t b[6] = { 0, 2, 0xde, 0xad, 0xbe, 0xef };
	struct cur c = cur_make(b, sizeof b);
	uint16_t n = cur_be16(&c);
	struct cur s = cur_sub(&c, n);
	assert_true(cur_ok(&s));
	assert_int_equal(cur_be16(&s), 0xdead);
	assert_true(cur_done(&s));
	assert_int_equal(cur_u8(&s), 0);
	assert_false(cur_ok(&s));
	assert_true(cur_ok(&c)); /* a failing sub-cursor does not poison its parent */
	s = cur_sub(&c, 3);
	assert_false(cur_ok(&s));
	assert_false(cur_ok(&c));
}

static void test_peek_does_not_advance(void **state)
{
	(void)state;
	const uint8_t b[1] = { 7 };
	struct cur c = cur_make(b, 1);
	assert_int_equal(cur_peek_u8(&c), 7);
	assert_int_equal(cur_left(&c), 1);
	assert_int_equal(cur_u8(&c), 7);
	assert_true(cur_done(&c));
	(void)cur_peek_u8(&c);
	assert_false(cur_ok(&c));
}

static void test_writer_stops_at_end(void **state)
{
	(void)state;
	uint8_t buf[8];
	memset(buf, 0x55, sizeof buf);
	struct wcur w = wcur_make(buf, 6);
	wcur_be16(&w, 0x0102);
	wcur_le16(&w, 0x0304);
	wcur_be32(&w, 0xffffffff); /* does not fit: nothing written */
	assert_false(wcur_ok(&w));
	assert_int_equal(w.pos, 4);
	assert_memory_equal(buf, "\x01\x02\x04\x03\x55\x55\x55\x55", 8);
	wcur_u8(&w, 9); /* sticky */
	assert_int_equal(buf[4], 0x55);
}

static void test_writer_all_widths_and_reserve(void **state)
{
	(void)state;
	uint8_t buf[32];
	struct wcur w = wcur_make(buf, sizeof buf);
	uint8_t *len = wcur_reserve(&w, 2);
	wcur_be24(&w, 0x0a0b0c);
	wcur_be64(&w, 0x1122334455667788ull);
	wcur_le32(&w, 0x01020304);
	wcur_le64(&w, 1);
	wcur_zero(&w, 2);
	wcur_bytes(&w, "xy", 2);
	assert_non_null(len);
	assert_true(wcur_ok(&w));
	assert_int_equal(w.pos, 2 + 3 + 8 + 4 + 8 + 2 + 2);
	struct cur c = cur_make(buf + 2, w.pos - 2);
	assert_int_equal(cur_be24(&c), 0x0a0b0c);
	assert_true(cur_be64(&c) == 0x1122334455667788ull);
	assert_int_equal(cur_le32(&c), 0x01020304);
	assert_true(cur_le64(&c) == 1);
	assert_int_equal(cur_be16(&c), 0);
	assert_memory_equal(cur_ptr(&c, 2), "xy", 2);
	assert_true(cur_done(&c));
	assert_null(wcur_reserve(&w, 100));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_big_and_little_endian),
		cmocka_unit_test(test_read_past_end_is_sticky_and_harmless),
		cmocka_unit_test(test_huge_length_does_not_wrap),
		cmocka_unit_test(test_sub_cursor_bounds),
		cmocka_unit_test(test_peek_does_not_advance),
		cmocka_unit_test(test_writer_stops_at_end),
		cmocka_unit_test(test_writer_all_widths_and_reserve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
