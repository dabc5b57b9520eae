/* SPDX-License-Identifier: MIT
 * Fuzz target for tls/record input. Byte 0 chooses the suite and the mode, byte 1 the chunk
 * size the stream is fed in, byte 2 the configured maximum plaintext. Mode "raw" feeds the
 * rest as wire bytes (header checks, reassembly, tag failures). Mode "sealed" reads the
 * rest as a list of inner plaintexts (length byte + bytes) and seals each under the
 * receiving key with consecutive sequence numbers, so the fuzzer reaches everything after
 * decryption: padding, inner types, alerts, KeyUpdate. Checks: nothing crashes, a failed
 * engine stays failed, every reassembly buffer is given back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "tls/record.h"

#include "mbedtls/chachapoly.h"
#include "mbedtls/gcm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long live;
static void *f_alloc(void *ctx, size_t len)
{
	(void)ctx;
	live++;
	return malloc(len);
}
static void f_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	live--;
	free(p);
}
static volatile uint8_t sink;
static int f_data(void *ctx, const uint8_t *p, size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < len; i++)
		sink ^= p[i]; /* touch every delivered byte: ASan checks the bounds */
	return 0;
}

static const uint8_t secret[32] = { 7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				    13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28 };

static size_t seal_raw(bool chacha, uint64_t seq, const uint8_t *inner, size_t n, uint8_t *out)
{
	uint8_t key[32], iv[12];
	if (tls_rec_expand_label(secret, "key", NULL, 0, key, chacha ? 32 : 16) ||
	    tls_rec_expand_label(secret, "iv", NULL, 0, iv, 12))
		abort();
	for (int i = 0; i < 8; i++)
		iv[4 + i] ^= (uint8_t)(seq >> (56 - 8 * i));
	out[0] = TLS_CT_APPDATA;
	out[1] = 3;
	out[2] = 3;
	out[3] = (uint8_t)((n + 16) >> 8);
	out[4] = (uint8_t)(n + 16);
	memcpy(out + 5, inner, n);
	if (chacha) {
		mbedtls_chachapoly_context c;
		mbedtls_chachapoly_init(&c);
		if (mbedtls_chachapoly_setkey(&c, key) ||
		    mbedtls_chachapoly_encrypt_and_tag(&c, n, iv, out, 5, out + 5, out + 5, out + 5 + n))
			abort();
		mbedtls_chachapoly_free(&c);
	} else {
		mbedtls_gcm_context g;
		mbedtls_gcm_init(&g);
		if (mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, key, 128) ||
		    mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT, n, iv, 12, out, 5, out + 5, out + 5,
					      16, out + 5 + n))
			abort();
		mbedtls_gcm_free(&g);
	}
	return 5 + n + 16;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t stream[1 << 17];
	static uint8_t out[256];
	struct tls_rec_env env;
	struct tls_rec r;
	size_t len = 0, n;
	static struct tls_rec_key_slot cache[1]; /* a one-slot key cache on some inputs */

	if (size < 3)
		return 0;
	bool chacha = data[0] & 1, sealed = data[0] & 2;
	size_t chunk = (size_t)data[1] + 1;
	struct tls_rec_config cfg = { data[2] ? (uint16_t)(data[2] * 64u) : TLS_REC_MAX_PLAINTEXT,
				      (data[0] & 4) ? 2u : 1u << 24,
				      { f_alloc, f_free, NULL }, cache, (data[0] & 8) ? 1u : 0u };
	if (tls_rec_env_init(&env, &cfg) ||
	    tls_rec_open(&r, chacha ? TLS_SUITE_CHACHA20_POLY1305_SHA256 : TLS_SUITE_AES_128_GCM_SHA256,
			 secret, secret, 0, 0))
		abort();
	data += 3;
	size -= 3;
	if (!sealed) {
		if (size > sizeof stream)
			size = sizeof stream;
		memcpy(stream, data, size);
		len = size;
	} else {
		uint64_t seq = 0;
		while (size > 0) {
			size_t l = data[0];
			if (l + 1 > size)
				l = size - 1;
			if (len + 5 + l + 16 > sizeof stream)
				break;
			len += seal_raw(chacha, seq++, data + 1, l, stream + len);
			data += 1 + l;
			size -= 1 + l;
		}
	}
	int rc = 0;
	for (size_t off = 0; off < len && rc == 0; off += chunk) {
		size_t c = len - off < chunk ? len - off : chunk;
		rc = tls_rec_input(&env, &r, stream + off, c, f_data, NULL);
		if (!tls_rec_check_invariants(&env, &r))
			abort();
		if (tls_rec_want_flush(&r) && tls_rec_flush(&env, &r, out, sizeof out, &n) != 0 &&
		    !tls_rec_failed(&r))
			abort();
	}
	if (tls_rec_failed(&r) && tls_rec_input(&env, &r, stream, len ? 1 : 0, f_data, NULL) != -E_CLOSED)
		abort(); /* failure is terminal */
	if (!tls_rec_failed(&r) && !tls_rec_peer_closed(&r) &&
	    tls_rec_write(&env, &r, (const uint8_t *)"echo", 4, stream, sizeof stream, &n) != 0)
		abort();
	tls_rec_close(&env, &r);
	if (live != 0)
		abort();
	return 0;
}
