/* SPDX-License-Identifier: MIT
 *
 * Bounded formatting: a snprintf subset for freestanding code. Always NUL-terminates
 * when len > 0, never writes past len, returns the length the full output would have.
 * Supported: %d %i %u %x %X %c %s %p %%, flags '-' '0', width, precision (.N / .* for
 * %s), length modifiers hh h l ll z. Anything else prints "%?" (never UB).
 * fmt_utc: a Unix time in milliseconds as UTC, ISO 8601 to the second.
 */
#ifndef LIB_FMT_H
#define LIB_FMT_H

#include <stdarg.h>
#include "lib/compiler.h"

int fmt_snprintf(char *buf, size_t len, const char *fmt, ...) PRINTF_LIKE(3, 4);
int fmt_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap);
/* "2026-12-01T17:12:09Z" for unix_ms (the proleptic Gregorian calendar, years 0..9999;
 * "unknown" outside them, and for 0: the clock was not set). Same contract as
 * fmt_snprintf. */
int fmt_utc(char *buf, size_t len, int64_t unix_ms);

#endif
