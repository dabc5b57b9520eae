/* SPDX-License-Identifier: MIT
 *
 * The three C library string functions SQLite's core calls beyond lib/mem.h, as ours:
 * the image binds strspn/strcspn/strrchr to them (store/sqlite/libc_kernel.c); on the
 * host libc owns those names and tests/unit/store/test_sqlite_libc.c compares the two.
 * Each is a bounded loop over NUL-terminated strings (SQLite's own), never allocates.
 * Byte sets are a 256-bit table, so the time is linear in the two lengths.
 */
#include "store/sqlite/libc.h"

#include "lib/mem.h"

struct byte_set {
	uint32_t w[8];
};

static void set_of(struct byte_set *b, const char *chars)
{
	memset(b, 0, sizeof *b);
	for (const unsigned char *c = (const unsigned char *)chars; *c; c++)
		b->w[*c >> 5] |= 1u << (*c & 31u);
}

static bool in_set(const struct byte_set *b, unsigned char c)
{
	return (b->w[c >> 5] >> (c & 31u)) & 1u;
}

size_t store_sqlite_strspn(const char *s, const char *accept)
{
	struct byte_set b;
	set_of(&b, accept);
	size_t n = 0;
	while (s[n] && in_set(&b, (unsigned char)s[n]))
		n++;
	return n;
}

size_t store_sqlite_strcspn(const char *s, const char *reject)
{
	struct byte_set b;
	set_of(&b, reject);
	size_t n = 0;
	while (s[n] && !in_set(&b, (unsigned char)s[n]))
		n++;
	return n;
}

char *store_sqlite_strrchr(const char *s, int c)
{
	const char *last = NULL;
	for (;; s++) {
		if (*s == (char)c)
			last = s;
		if (!*s)
			break;
	}
	return (char *)(uintptr_t)last; /* NOLINT(performance-no-int-to-ptr): C's strrchr drops const */
}
