/* SPDX-License-Identifier: MIT
 *
 * Kernel-only: the C library names SQLite's core calls beyond lib/mem_kernel.c, bound to
 * our implementations in store/sqlite/libc.c (host-tested against libc). Never linked on
 * the host, where libc owns the names; never called by our own code.
 */
#include "store/sqlite/libc.h"

size_t strspn(const char *s, const char *accept);
size_t strcspn(const char *s, const char *reject);
char *strrchr(const char *s, int c);

size_t strspn(const char *s, const char *accept) { return store_sqlite_strspn(s, accept); }
size_t strcspn(const char *s, const char *reject) { return store_sqlite_strcspn(s, reject); }
char *strrchr(const char *s, int c) { return store_sqlite_strrchr(s, c); }
