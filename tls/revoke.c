/* SPDX-License-Identifier: MIT
 *
 * The compiled-in revocation list (see revoke.h): a linear scan, fine for the short lists
 * an image carries. Never trusts the serial length beyond what it was given.
 */
#include "tls/revoke.h"

#include "lib/err.h"
#include "lib/mem.h"

static void strip(const uint8_t **p, size_t *n)
{
	while (*n > 1 && (*p)[0] == 0) {
		(*p)++;
		(*n)--;
	}
}

bool tls_revoke_list_check(void *ctx, const uint8_t *serial, size_t len)
{
	const struct tls_revoke_list *l = ctx;
	strip(&serial, &len);
	for (size_t i = 0; l && i < l->n; i++) {
		const uint8_t *s = l->entries[i].serial;
		size_t n = l->entries[i].len;
		strip(&s, &n);
		if (n == len && memcmp(s, serial, n) == 0)
			return true;
	}
	return false;
}

void tls_revoke_set_init(struct tls_revoke_set *s, struct tls_revoke_entry *entries,
			 uint8_t (*bytes)[TLS_REVOKE_SERIAL_MAX], size_t cap)
{
	s->entries = entries;
	s->bytes = bytes;
	s->cap = cap;
	s->list.entries = entries;
	s->list.n = 0;
}

int tls_revoke_set_add(struct tls_revoke_set *s, const uint8_t *serial, size_t len)
{
	if (!len || len > TLS_REVOKE_SERIAL_MAX)
		return -E_RANGE;
	if (tls_revoke_list_check(&s->list, serial, len))
		return -E_EXIST;
	size_t k = s->list.n;
	if (k >= s->cap)
		return -E_NOMEM;
	memcpy(s->bytes[k], serial, len);
	s->entries[k].serial = s->bytes[k];
	s->entries[k].len = (uint8_t)len;
	s->list.n = k + 1;
	return 0;
}

int tls_revoke_set_remove(struct tls_revoke_set *s, const uint8_t *serial, size_t len)
{
	strip(&serial, &len);
	for (size_t i = 0; i < s->list.n; i++) {
		const uint8_t *e = s->entries[i].serial;
		size_t n = s->entries[i].len;
		strip(&e, &n);
		if (n != len || memcmp(e, serial, n) != 0)
			continue;
		size_t last = s->list.n - 1; /* the last entry takes its place (the order is free) */
		memcpy(s->bytes[i], s->bytes[last], TLS_REVOKE_SERIAL_MAX);
		s->entries[i].len = s->entries[last].len;
		s->entries[i].serial = s->bytes[i];
		s->list.n = last;
		return 0;
	}
	return -E_NOENT;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int tls_revoke_serial_from_hex(const char *hex, size_t n, uint8_t out[TLS_REVOKE_SERIAL_MAX], size_t *len)
{
	size_t k = 0;
	for (size_t i = 0; i < n;) {
		if (hex[i] == ':' && i > 0 && i + 1 < n && hex[i - 1] != ':') {
			i++;
			continue;
		}
		int hi = hexval(hex[i]), lo = i + 1 < n ? hexval(hex[i + 1]) : -1;
		if (hi < 0 || lo < 0)
			return -E_INVAL;
		if (k == TLS_REVOKE_SERIAL_MAX)
			return -E_RANGE;
		out[k++] = (uint8_t)(hi << 4 | lo);
		i += 2;
	}
	*len = k;
	return k ? 0 : -E_INVAL;
}

int tls_revoke_set_add_hex(struct tls_revoke_set *s, const char *const *hex)
{
	for (size_t i = 0; hex[i]; i++) {
		uint8_t b[TLS_REVOKE_SERIAL_MAX];
		size_t len;
		int err = tls_revoke_serial_from_hex(hex[i], strlen(hex[i]), b, &len);
		if (!err)
			err = tls_revoke_set_add(s, b, len);
		if (err && err != -E_EXIST)
			return err;
	}
	return 0;
}
