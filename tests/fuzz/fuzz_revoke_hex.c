/* SPDX-License-Identifier: MIT
 * Fuzz target for tls/revoke: the console's serial= argument (tls_revoke_serial_from_hex)
 * and the run-time set it feeds. Checks: a parsed serial is 1..20 bytes and prints back as
 * the input's hex digits (colons dropped, case folded); adding then removing it leaves the
 * set as it was; nothing reads past the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "tls/revoke.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *hex = malloc(size ? size : 1); /* exactly size bytes: ASan sees any overread */
	if (!hex)
		return 0;
	memcpy(hex, data, size);
	uint8_t out[TLS_REVOKE_SERIAL_MAX];
	size_t len = 0;
	int err = tls_revoke_serial_from_hex(hex, size, out, &len);
	if (err == 0) {
		if (len < 1 || len > TLS_REVOKE_SERIAL_MAX)
			abort();
		static const char digits[] = "0123456789abcdef";
		size_t k = 0;
		for (size_t i = 0; i < size; i++) {
			char c = hex[i];
			if (c == ':')
				continue;
			if (c >= 'A' && c <= 'F')
				c = (char)(c - 'A' + 'a');
			char want = digits[(out[k / 2] >> (k % 2 ? 0 : 4)) & 15];
			if (c != want)
				abort();
			k++;
		}
		if (k != 2 * len)
			abort();
		struct tls_revoke_entry e[2];
		uint8_t bytes[2][TLS_REVOKE_SERIAL_MAX];
		struct tls_revoke_set s;
		static const uint8_t other[] = { 0x7f };
		tls_revoke_set_init(&s, e, bytes, 2);
		if (tls_revoke_set_add(&s, other, sizeof other) != 0)
			abort();
		int a = tls_revoke_set_add(&s, out, len);
		if (a != 0 && a != -E_EXIST)
			abort();
		if (!tls_revoke_list_check(&s.list, out, len))
			abort();
		if (a == 0 && (tls_revoke_set_remove(&s, out, len) != 0 || tls_revoke_list_check(&s.list, out, len)))
			abort();
		if (!tls_revoke_list_check(&s.list, other, sizeof other) || s.list.n != 1)
			abort();
	} else if (err != -E_INVAL && err != -E_RANGE) {
		abort();
	}
	free(hex);
	return 0;
}
