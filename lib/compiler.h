/* SPDX-License-Identifier: MIT
 *
 * Compiler attributes and the three error kinds' helpers shared by every layer.
 * Freestanding: includes only compiler headers. Never defines behaviour, only names it.
 */
#ifndef LIB_COMPILER_H
#define LIB_COMPILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MUST_CHECK __attribute__((warn_unused_result))
#define UNUSED __attribute__((unused))
#define NORETURN __attribute__((noreturn))
#define PACKED __attribute__((packed))
#define ALIGNED(n) __attribute__((aligned(n)))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FALLTHROUGH __attribute__((fallthrough))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CONTAINER_OF(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define STATIC_ASSERT(c, msg) _Static_assert(c, msg)

#endif
