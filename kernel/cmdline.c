/* SPDX-License-Identifier: MIT
 *
 * Kernel command line lookup (kernel/cmdline.h). Portable, no allocation; reads only
 * inside [line, line + len) and stops at the first NUL.
 */
#include "kernel/cmdline.h"
#include "lib/err.h"
#include "lib/mem.h"

int cmdline_get(const char *line, size_t len, const char *key, char *val, size_t val_len)
{
	if (!line || !key || !val || val_len == 0)
		return -E_INVAL;
	val[0] = '\0';
	size_t klen = strlen(key);
	if (klen == 0)
		return -E_INVAL;
	size_t end = strnlen(line, len);
	size_t i = 0;
	while (i < end) {
		while (i < end && line[i] == ' ')
			i++;
		size_t tok = i;
		while (i < end && line[i] != ' ')
			i++;
		size_t tlen = i - tok;
		if (tlen < klen || memcmp(line + tok, key, klen) != 0)
			continue;
		if (tlen == klen)
			return 0;
		if (line[tok + klen] != '=')
			continue;
		size_t vlen = tlen - klen - 1;
		if (vlen >= val_len)
			return -E_OVERFLOW;
		memcpy(val, line + tok + klen + 1, vlen);
		val[vlen] = '\0';
		return 0;
	}
	return -E_NOENT;
}

/* Octets up to `stop` ('\0' or '/'); *end is left at the stop character. */
static int cmdline_octets(const char *s, char stop, uint32_t *ip, const char **end)
{
	uint32_t v = 0;
	for (int part = 0; part < 4; part++) {
		uint32_t o = 0, digits = 0;
		while (*s >= '0' && *s <= '9') {
			if (++digits > 3)
				return -E_INVAL;
			o = o * 10u + (uint32_t)(*s - '0');
			s++;
		}
		if (digits == 0 || o > 255)
			return -E_INVAL;
		v = v << 8 | o;
		if (part < 3) {
			if (*s != '.')
				return -E_INVAL;
			s++;
		}
	}
	if (*s != stop)
		return -E_INVAL;
	*ip = v;
	*end = s;
	return 0;
}

int cmdline_parse_ipv4(const char *s, uint32_t *ip)
{
	const char *end;
	uint32_t v;
	if (!s || !ip)
		return -E_INVAL;
	int err = cmdline_octets(s, '\0', &v, &end);
	if (err)
		return err;
	*ip = v;
	return 0;
}

int cmdline_parse_ipv4_prefix(const char *s, uint32_t *ip, uint32_t *mask)
{
	const char *end;
	uint32_t v, len = 0, digits = 0;
	if (!s || !ip || !mask)
		return -E_INVAL;
	int err = cmdline_octets(s, '/', &v, &end);
	if (err)
		return err;
	for (end++; *end >= '0' && *end <= '9'; end++) {
		if (++digits > 2)
			return -E_INVAL;
		len = len * 10u + (uint32_t)(*end - '0');
	}
	if (digits == 0 || *end != '\0' || len > 32)
		return -E_INVAL;
	*ip = v;
	*mask = len ? 0xffffffffu << (32u - len) : 0;
	return 0;
}
