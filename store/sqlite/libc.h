/* SPDX-License-Identifier: MIT
 *
 * Private to store/sqlite/: the C library string functions SQLite's core calls beyond
 * lib/mem.h, as ours (libc.c). The image binds strspn/strcspn/strrchr to them
 * (libc_kernel.c); on the host libc owns those names and the unit test compares the two.
 * Arguments are NUL-terminated strings, borrowed; same results as C's.
 */
#ifndef STORE_SQLITE_LIBC_H
#define STORE_SQLITE_LIBC_H

#include "lib/compiler.h"

size_t store_sqlite_strspn(const char *s, const char *accept);
size_t store_sqlite_strcspn(const char *s, const char *reject);
char *store_sqlite_strrchr(const char *s, int c);

#endif
