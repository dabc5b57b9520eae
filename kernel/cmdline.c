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
