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

#endif
