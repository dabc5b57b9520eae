/* SPDX-License-Identifier: MIT
 *
 * A look at a client's first record before mbedTLS reads it: the key shares its
 * ClientHello offers (RFC 8446 4.2.8). mbedTLS 3.6 validates a share only when it computes
 * the shared secret, after our ServerHello went out, and then closes without an alert; the
 * handshake (tls/handshake.c) checks the shares of the groups it serves first and refuses
 * a bad one with illegal_parameter. Portable, allocation-free; reads only through the
 * bounded cursor and never trusts a length.
 */
#ifndef TLS_HELLO_H
#define TLS_HELLO_H

#include "lib/compiler.h"

#define TLS_HELLO_MAX_SHARES 16u

struct tls_hello_share {
	uint16_t group;
	const uint8_t *key; /* borrowed from the record */
	size_t len;
};

/* rec[0..len): one TLS record, header included. When it is a handshake record holding a
 * whole ClientHello, its key_share entries (the first TLS_HELLO_MAX_SHARES) in out[] and
 * their count in *n: 0. -E_AGAIN: not a whole ClientHello in this record (fragmented, or
 * not a handshake record): nothing to say. -E_PROTO: the ClientHello is malformed
 * (decode_error). rec and out borrowed; out's keys point into rec. */
int tls_hello_key_shares(const uint8_t *rec, size_t len, struct tls_hello_share *out /* out */, size_t *n /* out */)
	MUST_CHECK;

#endif
