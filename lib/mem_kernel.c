/* SPDX-License-Identifier: MIT
 *
 * Kernel-only: binds the C library's mem/str symbols (which gcc may emit calls to) to
 * our implementations in lib/mem.c. Never linked on the host, where libc owns them.
 */
#include "lib/mem.h"

void *memcpy(void *restrict dst, const void *restrict src, size_t n) { return lib_memcpy(dst, src, n); }
void *memmove(void *dst, const void *src, size_t n) { return lib_memmove(dst, src, n); }
void *memset(void *dst, int c, size_t n) { return lib_memset(dst, c, n); }
int memcmp(const void *a, const void *b, size_t n) { return lib_memcmp(a, b, n); }
void *memchr(const void *s, int c, size_t n) { return lib_memchr(s, c, n); }
size_t strlen(const char *s) { return lib_strlen(s); }
size_t strnlen(const char *s, size_t max) { return lib_strnlen(s, max); }
int strcmp(const char *a, const char *b) { return lib_strcmp(a, b); }
int strncmp(const char *a, const char *b, size_t n) { return lib_strncmp(a, b, n); }
