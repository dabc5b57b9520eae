/* SPDX-License-Identifier: MIT
 *
 * mem and str functions for the image (lib/mem.h). Correct for any alignment and, for
 * memmove, any overlap. Bulk work moves aligned 8-byte words; heads and tails go byte by
 * byte. Word accesses use a may_alias type so strict aliasing holds. Never calls libc.
 */
#include "lib/mem.h"

typedef uint64_t __attribute__((may_alias)) word_t;
#define WORD sizeof(word_t)

static bool both_aligned(const void *a, const void *b)
{
	return (((uintptr_t)a | (uintptr_t)b) & (WORD - 1)) == 0;
}

/* Forward copy, safe when dst <= src even if the ranges overlap. */
static void copy_forward(uint8_t *d, const uint8_t *s, size_t n)
{
	while (n && ((uintptr_t)d & (WORD - 1))) {
		*d++ = *s++;
		n--;
	}
	if (both_aligned(d, s) && (uintptr_t)s - (uintptr_t)d >= WORD) {
		for (; n >= WORD; n -= WORD, d += WORD, s += WORD)
			*(word_t *)(void *)d = *(const word_t *)(const void *)s;
	}
	while (n--)
		*d++ = *s++;
}

/* Backward copy, safe when dst > src even if the ranges overlap. */
static void copy_backward(uint8_t *d, const uint8_t *s, size_t n)
{
	d += n;
	s += n;
	while (n && ((uintptr_t)d & (WORD - 1))) {
		*--d = *--s;
		n--;
	}
	if (both_aligned(d, s) && (uintptr_t)d - (uintptr_t)s >= WORD) {
		for (; n >= WORD; n -= WORD) {
			d -= WORD;
			s -= WORD;
			*(word_t *)(void *)d = *(const word_t *)(const void *)s;
		}
	}
	while (n--)
		*--d = *--s;
}

void *lib_memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	copy_forward(dst, src, n);
	return dst;
}

void *lib_memmove(void *dst, const void *src, size_t n)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	if (d == s || n == 0)
		return dst;
	if ((uintptr_t)d - (uintptr_t)s >= n)
		copy_forward(d, s, n); /* dst below src, or no overlap */
	else
		copy_backward(d, s, n);
	return dst;
}

void *lib_memset(void *dst, int c, size_t n)
{
	uint8_t *d = dst;
	uint8_t b = (uint8_t)c;
	word_t w = (word_t)b * 0x0101010101010101ull;
	while (n && ((uintptr_t)d & (WORD - 1))) {
		*d++ = b;
		n--;
	}
	for (; n >= WORD; n -= WORD, d += WORD)
		*(word_t *)(void *)d = w;
	while (n--)
		*d++ = b;
	return dst;
}

int lib_memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;
	for (size_t i = 0; i < n; i++) {
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	}
	return 0;
}

void *lib_memchr(const void *s, int c, size_t n)
{
	const uint8_t *p = s;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == (uint8_t)c)
			return (void *)(uintptr_t)(p + i); /* NOLINT(performance-no-int-to-ptr): C's memchr drops const */
	}
	return NULL;
}

size_t lib_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

size_t lib_strnlen(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

int lib_strcmp(const char *a, const char *b)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
	while (*x && *x == *y) {
		x++;
		y++;
	}
	return (*x > *y) - (*x < *y);
}

int lib_strncmp(const char *a, const char *b, size_t n)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
	for (; n; n--, x++, y++) {
		if (*x != *y)
			return (*x > *y) - (*x < *y);
		if (!*x)
			return 0;
	}
	return 0;
}

void mem_wipe(void *p, size_t n)
{
	memset(p, 0, n);
	/* Keep the stores: the empty asm takes p and clobbers memory, so the compiler must
	 * assume the zeroes are read and cannot drop the memset as a dead store. */
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

int mem_ct_equal(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc |= (uint8_t)(x[i] ^ y[i]);
	return acc == 0;
}
