/* SPDX-License-Identifier: MIT
 *
 * The key shares of a whole ClientHello in one record (tls/hello.h). Walks the record
 * header, the handshake header, the fixed fields and the extensions with one cursor per
 * level: every length is checked against what encloses it; a share list longer than
 * TLS_HELLO_MAX_SHARES is cut there (the rest is mbedTLS's to read).
 */
#include "tls/hello.h"

#include "lib/cursor.h"
#include "lib/err.h"

#define REC_HANDSHAKE 22u
#define HS_CLIENT_HELLO 1u
#define EXT_KEY_SHARE 0x0033u

int tls_hello_key_shares(const uint8_t *rec, size_t len, struct tls_hello_share *out, size_t *n)
{
	struct cur r = cur_make(rec, len);
	*n = 0;
	uint8_t type = cur_u8(&r);
	cur_skip(&r, 2); /* legacy_record_version: any value (RFC 8446 5.1) */
	uint16_t rlen = cur_be16(&r);
	if (!cur_ok(&r) || type != REC_HANDSHAKE || rlen > cur_left(&r))
		return -E_AGAIN;
	struct cur body = cur_sub(&r, rlen);
	uint8_t hs_type = cur_u8(&body);
	uint32_t hs_len = cur_be24(&body);
	if (!cur_ok(&body) || hs_type != HS_CLIENT_HELLO || hs_len > cur_left(&body))
		return -E_AGAIN; /* another message, or a ClientHello continued in later records */
	struct cur ch = cur_sub(&body, hs_len);
	cur_skip(&ch, 2 + 32);                  /* legacy_version, random */
	cur_skip(&ch, cur_u8(&ch));             /* legacy_session_id */
	cur_skip(&ch, cur_be16(&ch));           /* cipher_suites */
	cur_skip(&ch, cur_u8(&ch));             /* legacy_compression_methods */
	uint16_t ext_len = cur_be16(&ch);
	if (!cur_ok(&ch) || ext_len != cur_left(&ch))
		return -E_PROTO;
	struct cur exts = cur_sub(&ch, ext_len);
	while (cur_left(&exts) > 0) {
		uint16_t et = cur_be16(&exts);
		uint16_t el = cur_be16(&exts);
		if (!cur_ok(&exts) || el > cur_left(&exts))
			return -E_PROTO;
		struct cur e = cur_sub(&exts, el);
		if (et != EXT_KEY_SHARE)
			continue;
		uint16_t list_len = cur_be16(&e);
		if (!cur_ok(&e) || list_len != cur_left(&e))
			return -E_PROTO;
		while (cur_left(&e) > 0) {
			uint16_t group = cur_be16(&e);
			uint16_t klen = cur_be16(&e);
			const uint8_t *key = cur_ptr(&e, klen);
			if (!cur_ok(&e) || klen == 0)
				return -E_PROTO; /* RFC 8446 4.2.8: key_exchange<1..2^16-1> */
			if (*n < TLS_HELLO_MAX_SHARES)
				out[(*n)++] = (struct tls_hello_share){ group, key, klen };
		}
	}
	return cur_ok(&exts) ? 0 : -E_PROTO;
}
