/* SPDX-License-Identifier: MIT
 *
 * Connection identity from a verified client certificate: the device identity (CN or a
 * SAN URI, chosen by configuration) or a service identity (a SAN URI starting with the
 * configured prefix). It owns the rules for what a valid identity is; it must never
 * accept an identity that could escape its topic subtree (no '/', '+', '#', control or
 * non-ASCII bytes) and never guess between two candidates.
 */
#ifndef TLS_IDENTITY_H
#define TLS_IDENTITY_H

#include "lib/compiler.h"

#define TLS_IDENTITY_CAP 128u /* buffer size; the configured max_len is at most this */

enum tls_id_source { TLS_ID_FROM_CN = 0, TLS_ID_FROM_SAN_URI = 1 };
enum tls_id_kind { TLS_ID_DEVICE = 0, TLS_ID_SERVICE = 1 };

struct tls_id_config {
	uint8_t source;                 /* enum tls_id_source */
	uint16_t max_len;               /* 1..TLS_IDENTITY_CAP */
	const char *service_uri_prefix; /* linked; NULL or "" = no service identities */
};

struct tls_identity {
	uint8_t kind; /* enum tls_id_kind */
	uint16_t len;
	char name[TLS_IDENTITY_CAP + 1]; /* NUL-terminated */
};

struct mbedtls_x509_crt;

/* Identity of a parsed certificate (borrowed). -E_NOENT if it carries none, -E_INVAL if
 * the candidate is malformed or ambiguous, -E_RANGE if longer than max_len. */
MUST_CHECK int tls_identity_from_crt(const struct tls_id_config *cfg, const struct mbedtls_x509_crt *crt,
				     struct tls_identity *out /* out */);

/* The same from DER bytes (borrowed); parses with mbedTLS, so mbedTLS's allocator hooks
 * must be installed (tls_hs_env_create or tls_hs_hooks_install). */
MUST_CHECK int tls_identity_from_der(const struct tls_id_config *cfg, const uint8_t *der, size_t len,
				     struct tls_identity *out /* out */);

#endif
