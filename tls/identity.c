/* SPDX-License-Identifier: MIT
 *
 * Identity extraction (see identity.h). Reads only mbedTLS's parsed view of a certificate
 * (subject names and the raw SAN entries); it never parses DER itself and never keeps a
 * pointer into the certificate after returning.
 */
#include "tls/identity.h"

#include "lib/err.h"
#include "lib/mem.h"

#include "mbedtls/oid.h"
#include "mbedtls/x509_crt.h"

#define SAN_URI_TAG (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_X509_SAN_UNIFORM_RESOURCE_IDENTIFIER)

static bool valid_char(uint8_t c)
{
	return c > 0x20 && c < 0x7f && c != '/' && c != '+' && c != '#';
}

static int take(const struct tls_id_config *cfg, uint8_t kind, const uint8_t *p, size_t n,
		struct tls_identity *out)
{
	if (n == 0)
		return -E_INVAL;
	if (n > cfg->max_len)
		return -E_RANGE;
	for (size_t i = 0; i < n; i++)
		if (!valid_char(p[i]))
			return -E_INVAL;
	out->kind = kind;
	out->len = (uint16_t)n;
	memcpy(out->name, p, n);
	out->name[n] = 0;
	return 0;
}

int tls_identity_from_crt(const struct tls_id_config *cfg, const struct mbedtls_x509_crt *crt,
			  struct tls_identity *out)
{
	const char *pfx = cfg->service_uri_prefix;
	size_t pfx_len = pfx ? strnlen(pfx, 256) : 0;
	const mbedtls_asn1_buf *uri = NULL, *cn = NULL;
	int n_uri = 0, n_cn = 0;

	memset(out, 0, sizeof *out);
	if (cfg->max_len == 0 || cfg->max_len > TLS_IDENTITY_CAP)
		return -E_INVAL;
	for (const mbedtls_x509_sequence *s = &crt->subject_alt_names; s && s->buf.p; s = s->next) {
		if (s->buf.tag != SAN_URI_TAG)
			continue;
		/* A service URI wins: the certificate says what it is by its prefix. */
		if (pfx_len && s->buf.len > pfx_len && memcmp(s->buf.p, pfx, pfx_len) == 0)
			return take(cfg, TLS_ID_SERVICE, s->buf.p + pfx_len, s->buf.len - pfx_len, out);
		uri = &s->buf;
		n_uri++;
	}
	for (const mbedtls_x509_name *nm = &crt->subject; nm && nm->oid.p; nm = nm->next) {
		if (MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &nm->oid) == 0) {
			cn = &nm->val;
			n_cn++;
		}
	}
	if (cfg->source == TLS_ID_FROM_SAN_URI) {
		if (n_uri == 0)
			return -E_NOENT;
		if (n_uri > 1)
			return -E_INVAL; /* two device URIs: ambiguous, refuse */
		return take(cfg, TLS_ID_DEVICE, uri->p, uri->len, out);
	}
	if (n_cn == 0)
		return -E_NOENT;
	if (n_cn > 1)
		return -E_INVAL;
	return take(cfg, TLS_ID_DEVICE, cn->p, cn->len, out);
}

int tls_identity_from_der(const struct tls_id_config *cfg, const uint8_t *der, size_t len,
			  struct tls_identity *out)
{
	mbedtls_x509_crt crt;
	int rc;

	memset(out, 0, sizeof *out);
	mbedtls_x509_crt_init(&crt);
	if (mbedtls_x509_crt_parse_der(&crt, der, len) != 0)
		rc = -E_INVAL;
	else
		rc = tls_identity_from_crt(cfg, &crt, out);
	mbedtls_x509_crt_free(&crt);
	return rc;
}
