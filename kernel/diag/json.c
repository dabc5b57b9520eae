/* SPDX-License-Identifier: MIT
 *
 * The bounded JSON writer (kernel/diag/json.h). Invariants: len < cap and buf[len] == 0
 * after every call; once overflow or misuse is set nothing more is written; depth <=
 * DIAG_JSON_MAX_DEPTH; in_obj/has_member are meaningful for levels [0, depth).
 */
#include "kernel/diag/json.h"

#include "lib/err.h"

static const char djs_hex[] = "0123456789abcdef";

void diag_json_init(struct diag_json *j, char *buf, size_t cap)
{
	*j = (struct diag_json){ .buf = buf, .cap = cap };
	if (!buf || cap == 0) {
		j->overflow = true;
		return;
	}
	buf[0] = 0;
}

static bool djs_ok(const struct diag_json *j)
{
	return !j->overflow && !j->misuse;
}

static void djs_put(struct diag_json *j, const char *s, size_t n)
{
	if (!djs_ok(j))
		return;
	if (n >= j->cap - j->len) {
		j->overflow = true;
		j->buf[j->len] = 0;
		return;
	}
	for (size_t i = 0; i < n; i++)
		j->buf[j->len + i] = s[i];
	j->len += n;
	j->buf[j->len] = 0;
}

static void djs_putc(struct diag_json *j, char c)
{
	djs_put(j, &c, 1);
}

static void djs_escaped(struct diag_json *j, const char *s, size_t n)
{
	djs_putc(j, '"');
	for (size_t i = 0; i < n && djs_ok(j); i++) {
		uint8_t c = (uint8_t)s[i];
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			djs_put(j, e, 2);
		} else if (c < 0x20 || c > 0x7e) {
			char e[6] = { '\\', 'u', '0', '0', djs_hex[c >> 4], djs_hex[c & 15u] };
			djs_put(j, e, 6);
		} else {
			djs_putc(j, (char)c);
		}
	}
	djs_putc(j, '"');
}

static size_t djs_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

/* The separator and key before a value; false (and misuse set) when the key does not
 * fit where the value goes. */
static bool djs_member(struct diag_json *j, const char *key)
{
	if (!djs_ok(j))
		return false;
	if (j->depth == 0) {
		if (key || j->done) {
			j->misuse = true;
			return false;
		}
		return true;
	}
	uint8_t d = (uint8_t)(j->depth - 1u);
	if (j->in_obj[d] != (key != NULL)) {
		j->misuse = true;
		return false;
	}
	if (j->has_member[d])
		djs_putc(j, ',');
	j->has_member[d] = true;
	if (key) {
		djs_escaped(j, key, djs_strlen(key));
		djs_putc(j, ':');
	}
	return djs_ok(j);
}

static void djs_scalar_done(struct diag_json *j)
{
	if (j->depth == 0)
		j->done = true;
}

static void djs_open(struct diag_json *j, const char *key, bool obj)
{
	if (!djs_member(j, key))
		return;
	if (j->depth == DIAG_JSON_MAX_DEPTH) {
		j->misuse = true;
		return;
	}
	j->in_obj[j->depth] = obj;
	j->has_member[j->depth] = false;
	j->depth++;
	djs_putc(j, obj ? '{' : '[');
}

static void djs_close(struct diag_json *j, bool obj)
{
	if (!djs_ok(j))
		return;
	if (j->depth == 0 || j->in_obj[j->depth - 1u] != obj) {
		j->misuse = true;
		return;
	}
	j->depth--;
	djs_putc(j, obj ? '}' : ']');
	djs_scalar_done(j);
}

void diag_json_obj_begin(struct diag_json *j, const char *key)
{
	djs_open(j, key, true);
}

void diag_json_obj_end(struct diag_json *j)
{
	djs_close(j, true);
}

void diag_json_arr_begin(struct diag_json *j, const char *key)
{
	djs_open(j, key, false);
}

void diag_json_arr_end(struct diag_json *j)
{
	djs_close(j, false);
}

void diag_json_strn(struct diag_json *j, const char *key, const char *s, size_t len)
{
	if (!djs_member(j, key))
		return;
	djs_escaped(j, s, len);
	djs_scalar_done(j);
}

void diag_json_str(struct diag_json *j, const char *key, const char *s)
{
	if (!s) {
		if (!djs_member(j, key))
			return;
		djs_put(j, "null", 4);
		djs_scalar_done(j);
		return;
	}
	diag_json_strn(j, key, s, djs_strlen(s));
}

/* v in decimal, at least min_digits digits (zero-padded). */
static void djs_digits(struct diag_json *j, uint64_t v, unsigned min_digits)
{
	char tmp[24];
	unsigned n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10u);
		v /= 10u;
	} while (v && n < sizeof tmp);
	while (n < min_digits && n < sizeof tmp)
		tmp[n++] = '0';
	while (n)
		djs_putc(j, tmp[--n]);
}

void diag_json_u64(struct diag_json *j, const char *key, uint64_t v)
{
	if (!djs_member(j, key))
		return;
	djs_digits(j, v, 1);
	djs_scalar_done(j);
}

void diag_json_fixed(struct diag_json *j, const char *key, uint64_t v, unsigned decimals)
{
	if (decimals > 6) {
		j->misuse = true;
		return;
	}
	if (!djs_member(j, key))
		return;
	uint64_t scale = 1;
	for (unsigned i = 0; i < decimals; i++)
		scale *= 10u;
	djs_digits(j, v / scale, 1);
	if (decimals) {
		djs_putc(j, '.');
		djs_digits(j, v % scale, decimals);
	}
	djs_scalar_done(j);
}

void diag_json_bool(struct diag_json *j, const char *key, bool v)
{
	if (!djs_member(j, key))
		return;
	if (v)
		djs_put(j, "true", 4);
	else
		djs_put(j, "false", 5);
	djs_scalar_done(j);
}

int diag_json_finish(const struct diag_json *j, size_t *len)
{
	*len = 0;
	if (j->overflow)
		return -E_OVERFLOW;
	if (j->misuse || j->depth != 0 || !j->done)
		return -E_INVAL;
	*len = j->len;
	return 0;
}
