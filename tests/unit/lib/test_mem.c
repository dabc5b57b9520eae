/* SPDX-License-Identifier: MIT
 * Differential tests of lib/mem.c against libc: every size 0..80 at every source and
 * destination alignment 0..15, all overlap distances for memmove, and the str functions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/mem.h"

#define AREA 256

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + 1);
}

static void test_memcpy_all_sizes_alignments(void **state)
{
	(void)state;
	static uint8_t src[AREA], a[AREA], b[AREA];
	for (size_t so = 0; so < 16; so++)
		for (size_t dof = 0; dof < 16; dof++)
			for (size_t n = 0; n <= 80; n++) {
				fill(src, AREA, (unsigned)n);
				memset(a, 0xee, AREA);
				memset(b, 0xee, AREA);
				assert_ptr_equal(lib_memcpy(a + dof, src + so, n), a + dof);
				memcpy(b + dof, src + so, n);
				assert_memory_equal(a, b, AREA);
			}
}

static void test_memmove_every_overlap(void **state)
{
	(void)state;
	static uint8_t a[AREA], b[AREA];
	for (size_t n = 0; n <= 70; n++)
		for (size_t s = 0; s < 40; s++)
			for (size_t d = 0; d < 40; d++) {
				fill(a, AREA, (unsigned)(n + s));
				memcpy(b, a, AREA);
				assert_ptr_equal(lib_memmove(a + 64 + d, a + 64 + s, n), a + 64 + d);
				memmove(b + 64 + d, b + 64 + s, n);
				assert_memory_equal(a, b, AREA);
			}
}

static void test_memset_memcmp_memchr(void **state)
{
	(void)state;
	static uint8_t a[AREA], b[AREA];
	for (size_t off = 0; off < 16; off++)
		for (size_t n = 0; n <= 80; n++) {
			memset(a, 1, AREA);
			memset(b, 1, AREA);
			lib_memset(a + off, 0x5a + (int)n, n);
			memset(b + off, 0x5a + (int)n, n);
			assert_memory_equal(a, b, AREA);
		}
	fill(a, AREA, 3);
	memcpy(b, a, AREA);
	assert_int_equal(lib_memcmp(a, b, AREA), 0);
	b[100]++;
	assert_true(lib_memcmp(a, b, AREA) < 0);
	assert_true(lib_memcmp(b, a, AREA) > 0);
	assert_int_equal(lib_memcmp(a, b, 100), 0);
	a[5] = 0xfe; /* unsigned comparison */
	b[5] = 0x01;
	assert_true(lib_memcmp(a, b, 10) > 0);
	assert_ptr_equal(lib_memchr(a, 0xfe, AREA), a + 5);
	assert_null(lib_memchr(a, 0xfe, 5));
}

static void test_str_functions(void **state)
{
	(void)state;
	const char *w[] = { "", "a", "ab", "abc", "abd", "b", "\xff", "abcdefghijklmnopq" };
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
		assert_int_equal(lib_strlen(w[i]), strlen(w[i]));
		assert_int_equal(lib_strnlen(w[i], 2), strnlen(w[i], 2));
		for (size_t j = 0; j < sizeof w / sizeof w[0]; j++) {
			int x = lib_strcmp(w[i], w[j]), y = strcmp(w[i], w[j]);
			assert_true((x < 0) == (y < 0) && (x > 0) == (y > 0));
			x = lib_strncmp(w[i], w[j], 2);
			y = strncmp(w[i], w[j], 2);
			assert_true((x < 0) == (y < 0) && (x > 0) == (y > 0));
		}
	}
}

static void test_wipe_and_ct_equal(void **state)
{
	(void)state;
	uint8_t k[33];
	fill(k, sizeof k, 9);
	mem_wipe(k, sizeof k);
	for (size_t i = 0; i < sizeof k; i++)
		assert_int_equal(k[i], 0);
	assert_true(mem_ct_equal("abc", "abc", 3));
	assert_false(mem_ct_equal("abc", "abd", 3));
	assert_true(mem_ct_equal("x", "y", 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memcpy_all_sizes_alignments),
		cmocka_unit_test(test_memmove_every_overlap),
		cmocka_unit_test(test_memset_memcmp_memchr),
		cmocka_unit_test(test_str_functions),
		cmocka_unit_test(test_wipe_and_ct_equal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
