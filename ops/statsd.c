/* SPDX-License-Identifier: MIT
 *
 * statsd batcher (ops/statsd.h). Owns nothing but the fill state of the caller's
 * datagram. A line's length is computed before a byte of it is written, so a refused
 * line leaves the datagram untouched and len <= cap holds after every call. Names are
 * forced into [A-Za-z0-9_.-]: ':' '|' '@' and '\n' would otherwise split or retype a line.
 */
#include "ops/statsd.h"
#include "lib/mem.h"

static bool name_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

static void put_name(char *dst, const char *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = name_char_ok((unsigned char)src[i]) ? src[i] : '_';
}

/* Decimal digits of v into tmp (most significant first); returns their count. */
static size_t dec(char tmp[20], uint64_t v)
{
	char rev[20];
	size_t n = 0;
	do {
		rev[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		tmp[i] = rev[n - 1 - i];
	return n;
}

static bool append(struct ops_statsd *b, const char *name, uint64_t value, char type)
{
	const char *prefix = b->prefix ? b->prefix : "";
	if (!name)
		name = "";
	size_t plen = strlen(prefix), nlen = strlen(name);
	char digits[20];
	size_t dlen = dec(digits, value);
	size_t dot = plen && nlen ? 1 : 0;
	size_t line = plen + dot + nlen + 1 + dlen + 2; /* prefix [.] name : digits | type */
	if (line > b->cap || plen + nlen == 0) {
		b->n_dropped++;
		return true;
	}
	size_t need = line + (b->lines ? 1 : 0);
	if (need > b->cap - b->len)
		return false;

	char *p = b->buf + b->len;
	if (b->lines)
		*p++ = '\n';
	put_name(p, prefix, plen);
	p += plen;
	if (dot)
		*p++ = '.';
	put_name(p, name, nlen);
	p += nlen;
	*p++ = ':';
	memcpy(p, digits, dlen);
	p += dlen;
	*p++ = '|';
	*p = type;
	b->len += need;
	b->lines++;
	return true;
}

void ops_statsd_begin(struct ops_statsd *b, char *buf, size_t cap, const char *prefix)
{
	b->buf = buf;
	b->cap = cap;
	b->len = 0;
	b->lines = 0;
	b->n_dropped = 0;
	b->prefix = prefix;
}

bool ops_statsd_gauge(struct ops_statsd *b, const char *name, uint64_t value)
{
	return append(b, name, value, 'g');
}

bool ops_statsd_count(struct ops_statsd *b, const char *name, uint64_t delta)
{
	return append(b, name, delta, 'c');
}

bool ops_statsd_count_total(struct ops_statsd *b, const char *name, uint64_t total,
			    uint64_t *last)
{
	uint32_t before = b->lines;
	uint64_t delta = total >= *last ? total - *last : 0;
	if (!append(b, name, delta, 'c'))
		return false;
	if (b->lines != before)
		*last = total;
	return true;
}
