// SPDX-License-Identifier: MIT
/*
 * loadgen mkcerts: N device identities (CN load-1 … load-N, clientAuth) signed by the
 * development CA, written once to a cache directory with one shared P-256 key (the
 * identities differ; the key is irrelevant to what the benchmark measures). A stamp file
 * holding the CA's SHA-256 fingerprint makes a later call with the same CA a no-op and a
 * new CA, a larger N or a cache older than 20 days (the certificates live 30) regenerate.
 * Host tool (OpenSSL); never linked into the image; never reads the CA key except to
 * sign, never writes outside OUT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tools/loadgen/loadgen.h"

static int ca_fingerprint(X509 *ca, char *out, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (!X509_digest(ca, EVP_sha256(), md, &n) || len < 2 * n + 1)
		return -1;
	for (unsigned int i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

static int add_ext(X509 *crt, X509 *ca, int nid, const char *val)
{
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, ca, crt, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, val);
	if (!e)
		return -1;
	int ok = X509_add_ext(crt, e, -1);
	X509_EXTENSION_free(e);
	return ok ? 0 : -1;
}

static int write_pem_cert(const char *path, X509 *crt)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = PEM_write_X509(f, crt);
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

int loadgen_mkcerts(const char *ca_dir, const char *out, unsigned n)
{
	char path[512], want[2 * EVP_MAX_MD_SIZE + 1], have[sizeof(want)] = "";
	int rc = -1;
	X509 *ca = NULL;
	EVP_PKEY *ca_key = NULL, *key = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/ca.crt", ca_dir);
	if (!(f = fopen(path, "r")))
		return fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno)), -1;
	ca = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	snprintf(path, sizeof(path), "%s/ca.key", ca_dir);
	if (!(f = fopen(path, "r"))) {
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
		goto out;
	}
	ca_key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (!ca || !ca_key || ca_fingerprint(ca, want, sizeof(want))) {
		fprintf(stderr, "loadgen: cannot read the CA in %s\n", ca_dir);
		goto out;
	}
	if (mkdir(out, 0755) && errno != EEXIST) {
		fprintf(stderr, "loadgen: mkdir %s: %s\n", out, strerror(errno));
		goto out;
	}
	/* The cache is valid when it was made by this CA and holds load-N. */
	snprintf(path, sizeof(path), "%s/ca.stamp", out);
	if ((f = fopen(path, "r"))) {
		if (!fgets(have, sizeof(have), f))
			have[0] = 0;
		fclose(f);
	}
	struct stat st;
	snprintf(path, sizeof(path), "%s/load-%u.crt", out, n);
	/* ... and is young enough: the certificates are valid for 30 days from signing */
	if (!strcmp(have, want) && stat(path, &st) == 0 && time(NULL) - st.st_mtime < 20L * 24 * 3600) {
		rc = 0;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/load.key", out);
	key = EVP_EC_gen("P-256");
	if (!key || !(f = fopen(path, "w")))
		goto out;
	if (!PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) || fclose(f) != 0)
		goto out;
	for (unsigned i = 1; i <= n; i++) {
		char cn[32];
		snprintf(cn, sizeof(cn), "load-%u", i);
		X509 *crt = X509_new();
		X509_NAME *name = X509_NAME_new();
		int ok = crt && name && X509_set_version(crt, 2) &&
			 ASN1_INTEGER_set(X509_get_serialNumber(crt), (long)(100000 + i)) &&
			 X509_gmtime_adj(X509_getm_notBefore(crt), -3600) &&
			 X509_gmtime_adj(X509_getm_notAfter(crt), 30L * 24 * 3600) &&
			 X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn,
						    -1, -1, 0) &&
			 X509_set_subject_name(crt, name) &&
			 X509_set_issuer_name(crt, X509_get_subject_name(ca)) &&
			 X509_set_pubkey(crt, key) &&
			 !add_ext(crt, ca, NID_basic_constraints, "critical,CA:FALSE") &&
			 !add_ext(crt, ca, NID_key_usage, "critical,digitalSignature") &&
			 !add_ext(crt, ca, NID_ext_key_usage, "clientAuth") &&
			 X509_sign(crt, ca_key, EVP_sha256()) > 0;
		snprintf(path, sizeof(path), "%s/load-%u.crt", out, i);
		ok = ok && !write_pem_cert(path, crt);
		X509_NAME_free(name);
		X509_free(crt);
		if (!ok) {
			fprintf(stderr, "loadgen: signing %s failed\n", cn);
			goto out;
		}
	}
	snprintf(path, sizeof(path), "%s/ca.stamp", out);
	if (!(f = fopen(path, "w")))
		goto out;
	fprintf(f, "%s", want);
	if (fclose(f) != 0)
		goto out;
	fprintf(stderr, "loadgen: %u device certificates in %s\n", n, out);
	rc = 0;
out:
	EVP_PKEY_free(key);
	EVP_PKEY_free(ca_key);
	X509_free(ca);
	return rc;
}
