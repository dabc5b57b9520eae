/* SPDX-License-Identifier: MIT
 *
 * Certificate revocation: the interface the handshake asks ("is this serial revoked?")
 * and its first backing, a list compiled into the image. The storage layer will back the
 * same interface with SQLite. Nothing here allocates or keeps the serial passed in.
 */
#ifndef TLS_REVOKE_H
#define TLS_REVOKE_H

#include "lib/compiler.h"

struct tls_revoke {
	/* serial: the certificate's DER serial number bytes (borrowed). true = refuse. */
	bool (*is_revoked)(void *ctx, const uint8_t *serial, size_t len);
	/* The certificate's identity (tls/identity.h, borrowed): true = refuse as revoked, as
	 * for a serial. May be NULL: identities are never revoked then. */
	bool (*is_revoked_id)(void *ctx, const char *name, size_t len);
	/* The allowlist (tls.registry_mode = "allowlist"): whether a device identity is in the
	 * registry; false refuses it with access_denied (tls_hs_refusal: "not-registered").
	 * Service identities are never asked. NULL: every device identity may connect. */
	bool (*is_listed_id)(void *ctx, const char *name, size_t len);
	void *ctx; /* linked */
};

struct tls_revoke_entry {
	const uint8_t *serial; /* linked */
	uint8_t len;
};

struct tls_revoke_list {
	const struct tls_revoke_entry *entries; /* linked */
	size_t n;
};

/* tls_revoke.is_revoked for a tls_revoke_list (ctx). Leading zero bytes of the DER
 * integer are ignored on both sides, so 00 8f and 8f match. */
bool tls_revoke_list_check(void *ctx, const uint8_t *serial, size_t len);

/* A bounded list that owns its serials' bytes (in caller arrays): the image's serials,
 * parsed once from their hex strings, plus those storage restores. */
#define TLS_REVOKE_SERIAL_MAX 20 /* RFC 5280: serial numbers are at most 20 octets */
struct tls_revoke_set {
	struct tls_revoke_entry *entries;        /* linked: cap */
	uint8_t (*bytes)[TLS_REVOKE_SERIAL_MAX]; /* linked: cap */
	size_t cap;
	struct tls_revoke_list list;             /* what the handshake checks */
};
void tls_revoke_set_init(struct tls_revoke_set *s, struct tls_revoke_entry *entries,
			 uint8_t (*bytes)[TLS_REVOKE_SERIAL_MAX], size_t cap);
/* Add a serial (borrowed, copied). 0, -E_EXIST (already there: nothing added), -E_RANGE
 * (empty or longer than 20 bytes), -E_NOMEM (the set is full). */
MUST_CHECK int tls_revoke_set_add(struct tls_revoke_set *s, const uint8_t *serial, size_t len);
/* Remove a serial (borrowed; leading zero bytes ignored as in the check). 0, or -E_NOENT. */
MUST_CHECK int tls_revoke_set_remove(struct tls_revoke_set *s, const uint8_t *serial, size_t len);
/* hex[0..n) (borrowed): pairs of hex digits, optionally one ':' between pairs (as openssl
 * prints serials), into out. 0 with *len 1..20; -E_INVAL (not that form, or empty),
 * -E_RANGE (more than TLS_REVOKE_SERIAL_MAX bytes). */
MUST_CHECK int tls_revoke_serial_from_hex(const char *hex, size_t n, uint8_t out[TLS_REVOKE_SERIAL_MAX],
					  size_t *len /* out */);
/* Add every serial of a NULL-terminated list of hex strings (the image's). 0, or the
 * first error (-E_INVAL for a string that is not an even number of hex digits). */
MUST_CHECK int tls_revoke_set_add_hex(struct tls_revoke_set *s, const char *const *hex);

#endif
