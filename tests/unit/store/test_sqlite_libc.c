/* SPDX-License-Identifier: MIT
 *
 * store/sqlite/libc.c (the image's strspn, strcspn and strrchr for SQLite) against the
 * host's libc: a table of edge cases (empty strings and sets, bytes above 0x7f, every byte
 * in the set, the terminator searched for) and seeded random strings over a small
 * alphabet, so that matches are frequent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "store/sqlite/libc.h"

static void check_one(const char *s, const char *set, int c)
{
	assert_int_equal(store_sqlite_strspn(s, set), strspn(s, set));
	assert_int_equal(store_sqlite_strcspn(s, set), strcspn(s, set));
	assert_ptr_equal(store_sqlite_strrchr(s, c), strrchr(s, c));
}

static void t_edge_cases(void **state)
{
	(void)state;
	static const struct {
		const char *s, *set;
		int c;
	} cases[] = {
		{ "", "", 'a' },
		{ "", "abc", 0 },
		{ "abc", "", 'c' },
		{ "abc", "", 0 },
		{ "+-12 34x", "+- \n\t0123456789", '4' },
		{ "  trim me  ", " ", ' ' },
		{ "table_shadow_x", "_", '_' },
		{ "no-underscore", "_", '_' },
		{ "\x80\xff\x7f", "\xff\x80", (int)(unsigned char)'\xff' },
		{ "\x80\xff\x7f", "\x7f", -1 },   /* (char)-1 == '\xff' */
		{ "aaaa", "a", 'a' },
		{ "abab", "ba", 'b' },
		{ "xyz", "zyx", 'q' },
		{ "x", "x", 'x' + 256 },          /* converted to char, as C says */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		check_one(cases[i].s, cases[i].set, cases[i].c);
	/* Every non-zero byte in the set; every byte in the string. */
	char all[256];
	for (int i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	check_one(all, all, 0);
	check_one(all, all + 200, 200);
	check_one(all + 100, "\x01\x02", 0xfe);
}

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void t_random_against_libc(void **state)
{
	(void)state;
	static const char alphabet[] = "ab_ \t\x80\xfe";
	uint64_t seed = 42;
	for (int n = 0; n < 20000; n++) {
		char s[24], set[6];
		size_t ls = rng(&seed) % sizeof s, lset = rng(&seed) % sizeof set;
		for (size_t i = 0; i < ls; i++)
			s[i] = alphabet[rng(&seed) % (sizeof alphabet - 1)];
		s[ls == sizeof s ? ls - 1 : ls] = '\0';
		for (size_t i = 0; i < lset; i++)
			set[i] = alphabet[rng(&seed) % (sizeof alphabet - 1)];
		set[lset == sizeof set ? lset - 1 : lset] = '\0';
		check_one(s, set, (int)(rng(&seed) % 256) - 128);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_edge_cases),
		cmocka_unit_test(t_random_against_libc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
