/* SPDX-License-Identifier: MIT
 *
 * A bounded JSON writer for the diagnostics' one-line report: objects, arrays, strings,
 * unsigned and fixed-point numbers, booleans, into the caller's buffer. Never writes past
 * the buffer: once something does not fit the writer is marked overflowed, stops writing
 * and diag_json_finish says so (the caller prints nothing rather than a cut object).
 * Strings are escaped so any bytes give valid JSON in ASCII: '"' and '\' by a backslash,
 * every byte below 0x20 or above 0x7e as \u00XX. Misuse (a key inside an array, no key
 * inside an object, nesting deeper than DIAG_JSON_MAX_DEPTH, closing what is not open) is
 * remembered and refused at finish. Portable, no allocation (tests/unit/kernel/test_diag_json.c).
 */
#ifndef KERNEL_DIAG_JSON_H
#define KERNEL_DIAG_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/compiler.h"

#define DIAG_JSON_MAX_DEPTH 8

struct diag_json {
	char *buf;  /* linked: cap bytes, always NUL-terminated */
	size_t cap, len;
	bool overflow, misuse;
	uint8_t depth;                          /* open containers */
	bool in_obj[DIAG_JSON_MAX_DEPTH];       /* container kind per level */
	bool has_member[DIAG_JSON_MAX_DEPTH];   /* a comma goes before the next member */
	bool done;                              /* the top-level value is complete */
};

/* buf (linked, cap >= 1) receives the text. */
void diag_json_init(struct diag_json *j, char *buf, size_t cap);
/* Every value takes a key (NUL-terminated, borrowed, escaped like strings) inside an
 * object and NULL inside an array or at the top level. */
void diag_json_obj_begin(struct diag_json *j, const char *key);
void diag_json_obj_end(struct diag_json *j);
void diag_json_arr_begin(struct diag_json *j, const char *key);
void diag_json_arr_end(struct diag_json *j);
/* s borrowed, NUL-terminated; NULL writes null. */
void diag_json_str(struct diag_json *j, const char *key, const char *s);
/* s[0..len) borrowed (may hold NULs, escaped). */
void diag_json_strn(struct diag_json *j, const char *key, const char *s, size_t len);
void diag_json_u64(struct diag_json *j, const char *key, uint64_t v);
/* v / 10^decimals written with exactly `decimals` digits after the point (decimals <= 6). */
void diag_json_fixed(struct diag_json *j, const char *key, uint64_t v, unsigned decimals);
void diag_json_bool(struct diag_json *j, const char *key, bool v);
/* 0 with *len the text's length when one complete, balanced value was written;
 * -E_OVERFLOW when it did not fit; -E_INVAL on misuse or an unfinished value. */
MUST_CHECK int diag_json_finish(const struct diag_json *j, size_t *len /* out */);

#endif
