/* SPDX-License-Identifier: MIT
 *
 * The C library's memory and string functions for freestanding code. Portable code
 * includes this instead of <string.h>. In the kernel image lib/mem.c provides the
 * symbols (as lib_mem* plus kernel-only aliases); on the host libc provides them so
 * that ASan sees every access, and the lib_ versions are unit-tested side by side.
 */
#ifndef LIB_MEM_H
#define LIB_MEM_H

#include "lib/compiler.h"

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
void *memchr(const void *s, int c, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);

/* Our implementations (always present, tested against libc on the host). */
void *lib_memcpy(void *restrict dst, const void *restrict src, size_t n);
void *lib_memmove(void *dst, const void *src, size_t n);
void *lib_memset(void *dst, int c, size_t n);
int lib_memcmp(const void *a, const void *b, size_t n);
void *lib_memchr(const void *s, int c, size_t n);
size_t lib_strlen(const char *s);
size_t lib_strnlen(const char *s, size_t max);
int lib_strcmp(const char *a, const char *b);
int lib_strncmp(const char *a, const char *b, size_t n);

/* Wipe a secret: never optimised away. */
void mem_wipe(void *p, size_t n);
/* Constant-time equality of two buffers (1 if equal); time depends only on n. */
int mem_ct_equal(const void *a, const void *b, size_t n);

#endif
