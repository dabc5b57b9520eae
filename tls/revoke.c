/* SPDX-License-Identifier: MIT
 *
 * The compiled-in revocation list (see revoke.h): a linear scan, fine for the short lists
 * an image carries. Never trusts the serial length beyond what it was given.
 */
#include "tls/revoke.h"

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
