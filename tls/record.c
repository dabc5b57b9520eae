/* SPDX-License-Identifier: MIT
 *
 * TLS 1.3 record layer (see record.h). Owns record parsing, AEAD protection with keys
 * expanded per record or taken from the env's bounded key cache, reassembly of records
 * split across input chunks, KeyUpdate, alerts and close_notify for one connection. Uses
 * mbedTLS primitives (SHA-256, AES-GCM, ChaCha20-Poly1305) on stack contexts only:
 * nothing here allocates except the reassembly buffer. It must never hand out
 * unauthenticated plaintext, never read outside the caller's buffer, and never keep key
 * material anywhere but the call's stack and the key cache (invariant 6).
 *
 * Design note
 * -----------
 * State diagram (flags):
 *
 *   open --tls_rec_shutdown--> TX_CLOSED (close_notify pending, then sent)
 *   open --peer close_notify--> RX_CLOSED (we answer close_notify)
 *   open --peer fatal alert / any error--> FAILED (fatal alert pending unless the peer
 *                                          sent one; input and write refused)
 *   any state --tls_rec_close--> wiped
 *
 * Invariants:
 *  1. reasm != NULL  <=>  hdr_have == TLS_REC_HDR_LEN and a record body is incomplete;
 *     reasm_have < body length (ld_be16(hdr + 3)) <= max ciphertext.
 *  2. hdr_have < TLS_REC_HDR_LEN implies reasm == NULL.
 *  3. Plaintext reaches on_data only after its tag verified, padding removed.
 *  4. A sequence number is never reused with the same secret: it is incremented after
 *     every record and reset only together with a new secret (KeyUpdate).
 *  5. FAILED is terminal: input and write return an error; only flush/close act.
 *  6. Key and IV live on the stack of one call and are wiped before it returns, or in a
 *     key cache entry whose owner is the direction and whose secret equals the
 *     direction's secret; an entry is wiped when replaced, when its owner's secret
 *     changes (KeyUpdate) and when its connection closes, so a closed connection leaves
 *     no key material in the env.
 *  7. The struct stays the idle size (secret + sequence per direction, 104 B): the cache
 *     is per core, never per connection.
 */
#include "tls/record.h"

#include "lib/bytes.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

#include "mbedtls/chachapoly.h"
#include "mbedtls/gcm.h"
#include "mbedtls/sha256.h"

#define F_RX_CLOSED 0x01u    /* peer sent close_notify */
#define F_TX_CLOSED 0x02u    /* we sent (or queued) close_notify */
#define F_FAILED 0x04u       /* terminal error */
#define F_ALERT_PENDING 0x08u
#define F_CLOSE_PENDING 0x10u
#define F_KU_PENDING 0x20u   /* our KeyUpdate waits to be sent */
#define F_KU_REQUEST 0x40u   /* ... with update_requested */
#define F_PEER_ALERT 0x80u   /* alert field holds what the peer sent */

#define HS_KEY_UPDATE 24u
#define CTRL_REC_MAX (TLS_REC_OVERHEAD + 5u)

STATIC_ASSERT(TLS_REC_MAX_PLAINTEXT + 256u <= UINT16_MAX, "ciphertext length fits 16 bits");
STATIC_ASSERT(sizeof(void *) != 8 || sizeof(struct tls_rec) <= 104, "idle record state (invariant 7)");

/* ---- key derivation ------------------------------------------------------------ */

static int hmac_sha256(const uint8_t *key, size_t key_len, const uint8_t *msg, size_t msg_len,
		       uint8_t out[32])
{
	uint8_t pad[64];
	uint8_t inner[32];
	mbedtls_sha256_context h;
	int rc = 0;

	if (key_len > sizeof pad)
		return -E_INVAL; /* all our keys are secrets of 32 bytes */
	mbedtls_sha256_init(&h);
	memset(pad, 0x36, sizeof pad);
	for (size_t i = 0; i < key_len; i++)
		pad[i] ^= key[i];
	if (mbedtls_sha256_starts(&h, 0) || mbedtls_sha256_update(&h, pad, sizeof pad) ||
	    mbedtls_sha256_update(&h, msg, msg_len) || mbedtls_sha256_finish(&h, inner))
		rc = -E_INVAL;
	for (size_t i = 0; i < sizeof pad; i++)
		pad[i] ^= 0x36 ^ 0x5c;
	if (!rc && (mbedtls_sha256_starts(&h, 0) || mbedtls_sha256_update(&h, pad, sizeof pad) ||
		    mbedtls_sha256_update(&h, inner, sizeof inner) || mbedtls_sha256_finish(&h, out)))
		rc = -E_INVAL;
	mbedtls_sha256_free(&h);
	mem_wipe(pad, sizeof pad);
	mem_wipe(inner, sizeof inner);
	return rc;
}

int tls_rec_expand_label(const uint8_t *secret, const char *label, const uint8_t *context,
			 size_t context_len, uint8_t *out, size_t out_len)
{
	static const char prefix[] = "tls13 ";
	uint8_t info[2 + 1 + 255 + 1 + 255 + 1];
	uint8_t t[32];
	size_t label_len = strnlen(label, 256);
	size_t plen = sizeof prefix - 1;

	if (out_len == 0 || out_len > sizeof t || plen + label_len > 255 || context_len > 255)
		return -E_INVAL;
	/* struct { uint16 length; opaque label<7..255>; opaque context<0..255>; } HkdfLabel,
	 * then the HKDF-Expand block counter: one block suffices for <= 32 bytes. */
	struct wcur w = wcur_make(info, sizeof info);
	wcur_be16(&w, (uint16_t)out_len);
	wcur_u8(&w, (uint8_t)(plen + label_len));
	wcur_bytes(&w, prefix, plen);
	wcur_bytes(&w, label, label_len);
	wcur_u8(&w, (uint8_t)context_len);
	if (context_len)
		wcur_bytes(&w, context, context_len);
	wcur_u8(&w, 1);
	if (!wcur_ok(&w))
		return -E_INVAL;
	int rc = hmac_sha256(secret, TLS_REC_SECRET_LEN, info, w.pos, t);
	if (!rc)
		memcpy(out, t, out_len);
	mem_wipe(t, sizeof t);
	return rc;
}

/* ---- AEAD ------------------------------------------------------------------------ */

struct rec_keys {
	uint8_t key[32];
	uint8_t nonce[12];
	size_t key_len;
};

/* The cache entry of direction d (rx or tx of one struct tls_rec, as `tx` says): the
 * entries are paired, a connection's receive key in the even entry of its pair and its
 * send key in the odd one, the pair chosen by the record's address. So a busy
 * connection's two directions never evict each other (with one entry they share it; with
 * an odd count the last entry is unused). */
static struct tls_rec_key_slot *cache_slot(const struct tls_rec_env *env, const struct tls_rec_dir *d, bool tx)
{
	uint32_t slots = env->cfg.key_cache_slots;
	if (slots < 2)
		return &env->cfg.key_cache[0];
	uintptr_t rec = (uintptr_t)d - (tx ? offsetof(struct tls_rec, tx) : offsetof(struct tls_rec, rx));
	uint64_t h = (uint64_t)(rec >> 3) * 0x9e3779b97f4a7c15ull;
	return &env->cfg.key_cache[((uint32_t)(h >> 32) % (slots / 2u)) * 2u + (tx ? 1u : 0u)];
}

/* Wipe d's entry, if it holds one (KeyUpdate, close). */
static void cache_forget(struct tls_rec_env *env, const struct tls_rec_dir *d, bool tx)
{
	if (!env->cfg.key_cache_slots)
		return;
	struct tls_rec_key_slot *s = cache_slot(env, d, tx);
	if (s->owner == d) {
		mem_wipe(s, sizeof *s);
		env->n_key_wipes++;
	}
}

static int derive_keys(struct tls_rec_env *env, uint16_t suite, const struct tls_rec_dir *d, bool tx,
		       struct rec_keys *k)
{
	k->key_len = suite == TLS_SUITE_AES_128_GCM_SHA256 ? 16u : 32u;
	struct tls_rec_key_slot *s = env->cfg.key_cache_slots ? cache_slot(env, d, tx) : NULL;
	if (s && s->owner == d && s->suite == suite &&
	    mem_ct_equal(s->secret, d->secret, TLS_REC_SECRET_LEN)) {
		memcpy(k->key, s->key, k->key_len);
		memcpy(k->nonce, s->iv, sizeof k->nonce);
		env->n_key_hits++;
	} else {
		if (tls_rec_expand_label(d->secret, "key", NULL, 0, k->key, k->key_len) ||
		    tls_rec_expand_label(d->secret, "iv", NULL, 0, k->nonce, sizeof k->nonce))
			return -E_INVAL;
		env->n_key_misses++;
		if (s) {
			if (s->owner && s->owner != d)
				env->n_key_evictions++;
			mem_wipe(s, sizeof *s); /* nothing of the previous owner's key remains */
			s->owner = d;
			s->suite = suite;
			memcpy(s->secret, d->secret, TLS_REC_SECRET_LEN);
			memcpy(s->key, k->key, k->key_len);
			memcpy(s->iv, k->nonce, sizeof s->iv);
		}
	}
	/* Per-record nonce: IV xor the 64-bit sequence number, right-aligned (RFC 8446 5.3). */
	for (unsigned i = 0; i < 8; i++)
		k->nonce[4 + i] ^= (uint8_t)(d->seq >> (56 - 8 * i));
	return 0;
}

/* Seal p[0..len) in place, tag written at p + len. aad is the record header. */
static int aead_seal(struct tls_rec_env *env, uint16_t suite, const struct tls_rec_dir *d,
		     const uint8_t *aad, uint8_t *p, size_t len)
{
	struct rec_keys k;
	int rc = derive_keys(env, suite, d, true, &k);
	if (rc)
		goto out;
	if (suite == TLS_SUITE_AES_128_GCM_SHA256) {
		mbedtls_gcm_context g;
		mbedtls_gcm_init(&g);
		if (mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, k.key, 128) ||
		    mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT, len, k.nonce, sizeof k.nonce,
					      aad, TLS_REC_HDR_LEN, p, p, TLS_REC_TAG_LEN, p + len))
			rc = -E_INVAL;
		mbedtls_gcm_free(&g);
	} else {
		mbedtls_chachapoly_context c;
		mbedtls_chachapoly_init(&c);
		if (mbedtls_chachapoly_setkey(&c, k.key) ||
		    mbedtls_chachapoly_encrypt_and_tag(&c, len, k.nonce, aad, TLS_REC_HDR_LEN, p, p,
						       p + len))
			rc = -E_INVAL;
		mbedtls_chachapoly_free(&c);
	}
out:
	mem_wipe(&k, sizeof k);
	return rc;
}

/* Open p[0..len) (ciphertext followed by the tag) in place; 0 only if the tag verified. */
static int aead_open(struct tls_rec_env *env, uint16_t suite, const struct tls_rec_dir *d,
		     const uint8_t *aad, uint8_t *p, size_t len)
{
	struct rec_keys k;
	size_t clen = len - TLS_REC_TAG_LEN;
	int rc = derive_keys(env, suite, d, false, &k);
	if (rc)
		goto out;
	if (suite == TLS_SUITE_AES_128_GCM_SHA256) {
		mbedtls_gcm_context g;
		mbedtls_gcm_init(&g);
		if (mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, k.key, 128) ||
		    mbedtls_gcm_auth_decrypt(&g, clen, k.nonce, sizeof k.nonce, aad, TLS_REC_HDR_LEN,
					     p + clen, TLS_REC_TAG_LEN, p, p))
			rc = -E_PROTO;
		mbedtls_gcm_free(&g);
	} else {
		mbedtls_chachapoly_context c;
		mbedtls_chachapoly_init(&c);
		if (mbedtls_chachapoly_setkey(&c, k.key) ||
		    mbedtls_chachapoly_auth_decrypt(&c, clen, k.nonce, aad, TLS_REC_HDR_LEN, p + clen,
						    p, p))
			rc = -E_PROTO;
		mbedtls_chachapoly_free(&c);
	}
out:
	mem_wipe(&k, sizeof k);
	return rc;
}

/* ---- helpers ---------------------------------------------------------------------- */

/* RFC 8446 5.2: a TLSCiphertext is at most 2^14 + 256 bytes; a smaller max_plaintext
 * lowers that by as much (content type, tag and the most padding still fit). Longer
 * records are refused from their header, before any decryption. */
static size_t max_ciphertext(const struct tls_rec_env *env)
{
	size_t m = (size_t)env->cfg.max_plaintext + 1u + TLS_REC_TAG_LEN + 255u;
	return m < TLS_REC_MAX_PLAINTEXT + 256u ? m : TLS_REC_MAX_PLAINTEXT + 256u;
}

static void drop_reasm(struct tls_rec_env *env, struct tls_rec *r)
{
	if (r->reasm) {
		size_t blen = ld_be16(r->hdr + 3);
		mem_wipe(r->reasm, blen);
		env->cfg.ops.free(env->cfg.ops.ctx, r->reasm, blen);
		r->reasm = NULL;
	}
	r->reasm_have = 0;
	r->hdr_have = 0;
}

static int fail(struct tls_rec_env *env, struct tls_rec *r, enum tls_rec_reject site, uint8_t alert,
		int err)
{
	env->rejected[site]++;
	drop_reasm(env, r); /* a failed engine keeps no partial record (invariants 1-2) */
	if (!(r->flags & F_FAILED)) {
		r->flags |= F_FAILED | F_ALERT_PENDING;
		r->flags &= (uint8_t)~(F_KU_PENDING | F_CLOSE_PENDING);
		r->alert = alert;
	}
	return err;
}

static int next_secret(struct tls_rec_env *env, struct tls_rec_dir *d, bool tx)
{
	uint8_t s[TLS_REC_SECRET_LEN];
	cache_forget(env, d, tx); /* the old key never serves again (invariant 6) */
	int rc = tls_rec_expand_label(d->secret, "traffic upd", NULL, 0, s, sizeof s);
	if (!rc) {
		memcpy(d->secret, s, sizeof s);
		d->seq = 0;
	}
	mem_wipe(s, sizeof s);
	return rc;
}

/* ---- public: setup ---------------------------------------------------------------- */

int tls_rec_env_init(struct tls_rec_env *env, const struct tls_rec_config *cfg)
{
	if (!cfg->max_plaintext || cfg->max_plaintext > TLS_REC_MAX_PLAINTEXT ||
	    !cfg->key_update_after || !cfg->ops.alloc || !cfg->ops.free ||
	    (cfg->key_cache_slots && !cfg->key_cache))
		return -E_INVAL;
	memset(env, 0, sizeof *env);
	env->cfg = *cfg;
	if (cfg->key_cache_slots)
		memset(cfg->key_cache, 0, (size_t)cfg->key_cache_slots * sizeof cfg->key_cache[0]);
	return 0;
}

void tls_rec_env_fini(struct tls_rec_env *env)
{
	if (env->cfg.key_cache_slots)
		mem_wipe(env->cfg.key_cache,
			 (size_t)env->cfg.key_cache_slots * sizeof env->cfg.key_cache[0]);
}

int tls_rec_open(struct tls_rec *r, uint16_t suite, const uint8_t *rx_secret,
		 const uint8_t *tx_secret, uint64_t rx_seq, uint64_t tx_seq)
{
	if (suite != TLS_SUITE_AES_128_GCM_SHA256 && suite != TLS_SUITE_CHACHA20_POLY1305_SHA256)
		return -E_INVAL;
	memset(r, 0, sizeof *r);
	r->suite = suite;
	memcpy(r->rx.secret, rx_secret, TLS_REC_SECRET_LEN);
	memcpy(r->tx.secret, tx_secret, TLS_REC_SECRET_LEN);
	r->rx.seq = rx_seq;
	r->tx.seq = tx_seq;
	return 0;
}

void tls_rec_close(struct tls_rec_env *env, struct tls_rec *r)
{
	cache_forget(env, &r->rx, false);
	cache_forget(env, &r->tx, true);
	drop_reasm(env, r);
	mem_wipe(r, sizeof *r);
}

/* ---- input ------------------------------------------------------------------------ */

static int check_header(struct tls_rec_env *env, struct tls_rec *r, const uint8_t *h)
{
	size_t blen = ld_be16(h + 3);
	/* legacy_record_version is ignored (RFC 8446 5.1 allows any value on receipt). */
	if (h[0] != TLS_CT_APPDATA)
		return fail(env, r, TLS_REC_REJ_OUTER_TYPE, TLS_ALERT_UNEXPECTED_MESSAGE, -E_PROTO);
	if (blen > max_ciphertext(env))
		return fail(env, r, TLS_REC_REJ_TOO_LONG, TLS_ALERT_RECORD_OVERFLOW, -E_PROTO);
	if (blen < 1u + TLS_REC_TAG_LEN)
		return fail(env, r, TLS_REC_REJ_TOO_SHORT, TLS_ALERT_DECODE_ERROR, -E_PROTO);
	return 0;
}

static int handle_key_update(struct tls_rec_env *env, struct tls_rec *r, const uint8_t *p, size_t n)
{
	struct cur c = cur_make(p, n);
	/* A client sends no other post-handshake message to a server (no tickets, no
	 * post-handshake authentication offered). */
	if (cur_u8(&c) != HS_KEY_UPDATE)
		return fail(env, r, TLS_REC_REJ_HS_MSG, TLS_ALERT_UNEXPECTED_MESSAGE, -E_PROTO);
	uint32_t mlen = cur_be24(&c);
	uint8_t req = cur_u8(&c);
	/* A KeyUpdate must be whole and alone at the end of its record (RFC 8446 5.1: no
	 * handshake message may span a key change); we accept exactly one per record. */
	if (!cur_ok(&c) || mlen != 1 || !cur_done(&c))
		return fail(env, r, TLS_REC_REJ_KEY_UPDATE, TLS_ALERT_DECODE_ERROR, -E_PROTO);
	if (req > 1) /* RFC 8446 4.6.3: neither update_not_requested nor update_requested */
		return fail(env, r, TLS_REC_REJ_KEY_UPDATE, TLS_ALERT_ILLEGAL_PARAMETER, -E_PROTO);
	if (next_secret(env, &r->rx, false))
		return fail(env, r, TLS_REC_REJ_KEY_UPDATE, TLS_ALERT_INTERNAL_ERROR, -E_INVAL);
	env->n_key_updates_in++;
	if (req && !(r->flags & F_TX_CLOSED))
		r->flags |= F_KU_PENDING; /* answer with update_not_requested before more data */
	return 0;
}

/* Decrypt and dispatch one complete record: h = header, p = body of length n (in place). */
static int process_record(struct tls_rec_env *env, struct tls_rec *r, const uint8_t *h, uint8_t *p,
			  size_t n, tls_rec_data_fn on_data, void *ctx)
{
	if (r->rx.seq == UINT64_MAX)
		return fail(env, r, TLS_REC_REJ_SEQ, TLS_ALERT_INTERNAL_ERROR, -E_RANGE);
	if (aead_open(env, r->suite, &r->rx, h, p, n))
		return fail(env, r, TLS_REC_REJ_BAD_TAG, TLS_ALERT_BAD_RECORD_MAC, -E_PROTO);
	r->rx.seq++;
	env->n_rec_in++;
	size_t plen = n - TLS_REC_TAG_LEN;
	/* Padding: strip trailing zeros; the last non-zero byte is the content type. The scan
	 * covers the whole padding, as the RFC intends (timing depends only on padding). */
	while (plen > 0 && p[plen - 1] == 0)
		plen--;
	if (plen == 0)
		return fail(env, r, TLS_REC_REJ_NO_TYPE, TLS_ALERT_UNEXPECTED_MESSAGE, -E_PROTO);
	uint8_t type = p[--plen];
	if (plen > env->cfg.max_plaintext)
		return fail(env, r, TLS_REC_REJ_PLAIN_LONG, TLS_ALERT_RECORD_OVERFLOW, -E_PROTO);
	switch (type) {
	case TLS_CT_APPDATA:
		if (plen == 0)
			return 0;
		if (on_data(ctx, p, plen) < 0)
			return fail(env, r, TLS_REC_REJ_SINK, TLS_ALERT_INTERNAL_ERROR, -E_AGAIN);
		return 0;
	case TLS_CT_ALERT:
		if (plen == 0)
			return fail(env, r, TLS_REC_REJ_EMPTY, TLS_ALERT_UNEXPECTED_MESSAGE, -E_PROTO);
		if (plen != 2)
			return fail(env, r, TLS_REC_REJ_ALERT_LEN, TLS_ALERT_DECODE_ERROR, -E_PROTO);
		if (p[1] == TLS_ALERT_CLOSE_NOTIFY) {
			r->flags |= F_RX_CLOSED;
			if (!(r->flags & F_TX_CLOSED))
				r->flags |= F_TX_CLOSED | F_CLOSE_PENDING;
		} else {
			/* Any other alert is fatal in TLS 1.3 (RFC 8446 6.2); nothing to answer. */
			r->flags |= F_FAILED | F_PEER_ALERT;
			r->flags &= (uint8_t)~(F_KU_PENDING | F_CLOSE_PENDING | F_ALERT_PENDING);
		}
		r->alert = p[1];
		return -E_CLOSED;
	case TLS_CT_HANDSHAKE:
		if (plen == 0)
			return fail(env, r, TLS_REC_REJ_EMPTY, TLS_ALERT_UNEXPECTED_MESSAGE, -E_PROTO);
		return handle_key_update(env, r, p, plen);
	default:
		return fail(env, r, TLS_REC_REJ_INNER_TYPE, TLS_ALERT_UNEXPECTED_MESSAGE, -E_PROTO);
	}
}

int tls_rec_input(struct tls_rec_env *env, struct tls_rec *r, uint8_t *buf, size_t len,
		  tls_rec_data_fn on_data, void *ctx)
{
	size_t pos = 0;
	int rc;

	if (r->flags & (F_FAILED | F_RX_CLOSED)) {
		env->rejected[TLS_REC_REJ_AFTER_CLOSE]++;
		return -E_CLOSED;
	}
	while (pos < len) {
		size_t avail = len - pos;
		if (r->hdr_have > 0 && r->hdr_have < TLS_REC_HDR_LEN) {
			/* Header split across chunks: complete it in the struct. */
			size_t take = MIN(avail, (size_t)(TLS_REC_HDR_LEN - r->hdr_have));
			memcpy(r->hdr + r->hdr_have, buf + pos, take);
			env->n_copied_in += take;
			r->hdr_have = (uint8_t)(r->hdr_have + take);
			pos += take;
			if (r->hdr_have < TLS_REC_HDR_LEN)
				return 0;
			if ((rc = check_header(env, r, r->hdr)) < 0)
				return rc;
			avail = len - pos;
			size_t blen = ld_be16(r->hdr + 3);
			if (avail >= blen) {
				/* The body is contiguous in this chunk: open it in place. */
				uint8_t h[TLS_REC_HDR_LEN];
				memcpy(h, r->hdr, sizeof h);
				r->hdr_have = 0;
				pos += blen;
				if ((rc = process_record(env, r, h, buf + pos - blen, blen, on_data, ctx)) < 0)
					return rc;
				continue;
			}
			r->reasm = env->cfg.ops.alloc(env->cfg.ops.ctx, blen);
			if (!r->reasm)
				return fail(env, r, TLS_REC_REJ_NOMEM, TLS_ALERT_INTERNAL_ERROR, -E_NOMEM);
			env->n_reasm++;
			r->reasm_have = 0;
			continue;
		}
		if (r->reasm) {
			size_t blen = ld_be16(r->hdr + 3);
			size_t take = MIN(avail, blen - r->reasm_have);
			memcpy(r->reasm + r->reasm_have, buf + pos, take);
			env->n_copied_in += take;
			r->reasm_have = (uint16_t)(r->reasm_have + take);
			pos += take;
			if (r->reasm_have < blen)
				return 0;
			rc = process_record(env, r, r->hdr, r->reasm, blen, on_data, ctx);
			drop_reasm(env, r);
			if (rc < 0)
				return rc;
			continue;
		}
		/* At a record boundary. */
		if (avail < TLS_REC_HDR_LEN) {
			memcpy(r->hdr, buf + pos, avail);
			env->n_copied_in += avail;
			r->hdr_have = (uint8_t)avail;
			return 0;
		}
		uint8_t *h = buf + pos;
		if ((rc = check_header(env, r, h)) < 0)
			return rc;
		size_t blen = ld_be16(h + 3);
		if (avail - TLS_REC_HDR_LEN >= blen) {
			pos += TLS_REC_HDR_LEN + blen;
			if ((rc = process_record(env, r, h, h + TLS_REC_HDR_LEN, blen, on_data, ctx)) < 0)
				return rc;
			continue;
		}
		/* Incomplete record: keep its header here and its body in a reassembly buffer. */
		memcpy(r->hdr, h, TLS_REC_HDR_LEN);
		env->n_copied_in += TLS_REC_HDR_LEN;
		r->hdr_have = TLS_REC_HDR_LEN;
		r->reasm = env->cfg.ops.alloc(env->cfg.ops.ctx, blen);
		if (!r->reasm)
			return fail(env, r, TLS_REC_REJ_NOMEM, TLS_ALERT_INTERNAL_ERROR, -E_NOMEM);
		env->n_reasm++;
		r->reasm_have = 0;
		pos += TLS_REC_HDR_LEN;
	}
	return 0;
}

/* ---- output ----------------------------------------------------------------------- */

/* Seal one record of content type `type` whose content is already at out + 5. */
static int seal_one(struct tls_rec_env *env, struct tls_rec *r, uint8_t type, uint8_t *out,
		    size_t content_len, size_t *rec_len)
{
	if (r->tx.seq == UINT64_MAX)
		return fail(env, r, TLS_REC_REJ_SEQ, TLS_ALERT_INTERNAL_ERROR, -E_RANGE);
	size_t inner = content_len + 1;
	size_t clen = inner + TLS_REC_TAG_LEN;
	out[0] = TLS_CT_APPDATA;
	out[1] = 3;
	out[2] = 3;
	st_be16(out + 3, (uint16_t)clen);
	out[TLS_REC_HDR_LEN + content_len] = type;
	if (aead_seal(env, r->suite, &r->tx, out, out + TLS_REC_HDR_LEN, inner))
		return fail(env, r, TLS_REC_REJ_SEQ, TLS_ALERT_INTERNAL_ERROR, -E_INVAL);
	r->tx.seq++;
	env->n_rec_out++;
	*rec_len = TLS_REC_HDR_LEN + clen;
	return 0;
}

static int emit_key_update(struct tls_rec_env *env, struct tls_rec *r, uint8_t *out, size_t cap,
			   size_t *n)
{
	size_t rl;
	if (cap < CTRL_REC_MAX)
		return -E_OVERFLOW;
	uint8_t *m = out + TLS_REC_HDR_LEN;
	m[0] = HS_KEY_UPDATE;
	m[1] = 0;
	m[2] = 0;
	m[3] = 1;
	m[4] = (r->flags & F_KU_REQUEST) ? 1 : 0;
	int rc = seal_one(env, r, TLS_CT_HANDSHAKE, out, 5, &rl);
	if (rc)
		return rc;
	/* Everything after this record goes under the next secret (RFC 8446 4.6.3). */
	if (next_secret(env, &r->tx, true))
		return fail(env, r, TLS_REC_REJ_KEY_UPDATE, TLS_ALERT_INTERNAL_ERROR, -E_INVAL);
	r->flags &= (uint8_t)~(F_KU_PENDING | F_KU_REQUEST);
	env->n_key_updates_out++;
	*n = rl;
	return 0;
}

size_t tls_rec_wire_len(const struct tls_rec_env *env, const struct tls_rec *r, size_t len)
{
	size_t max = env->cfg.max_plaintext;
	size_t n_rec = len ? (len + max - 1) / max : 0;
	bool ku = (r->flags & F_KU_PENDING) || r->tx.seq >= env->cfg.key_update_after;
	return len + n_rec * TLS_REC_OVERHEAD + (ku ? CTRL_REC_MAX : 0);
}

int tls_rec_write(struct tls_rec_env *env, struct tls_rec *r, const uint8_t *in, size_t len,
		  uint8_t *out, size_t cap, size_t *out_len)
{
	size_t done = 0;
	size_t max = env->cfg.max_plaintext;
	int rc;

	*out_len = 0;
	if (r->flags & (F_FAILED | F_TX_CLOSED))
		return -E_CLOSED;
	if (tls_rec_wire_len(env, r, len) > cap)
		return -E_OVERFLOW;
	/* Lay every record's content at its final place first, last record first: content
	 * may sit inside out (at out + TLS_REC_HDR_LEN or before), and each destination lies
	 * at or right of its source, so nothing unread is overwritten. */
	size_t lead = 0;
	if (r->tx.seq >= env->cfg.key_update_after)
		r->flags |= F_KU_PENDING;
	if (r->flags & F_KU_PENDING)
		lead = CTRL_REC_MAX;
	size_t n_rec = len ? (len + max - 1) / max : 0;
	for (size_t i = n_rec; i-- > 0;) {
		size_t off = i * max;
		size_t chunk = MIN(max, len - off);
		memmove(out + lead + i * (max + TLS_REC_OVERHEAD) + TLS_REC_HDR_LEN, in + off, chunk);
	}
	if (lead) {
		/* The pending KeyUpdate goes first; its record is exactly CTRL_REC_MAX bytes. */
		if ((rc = emit_key_update(env, r, out, cap, &done)) < 0)
			return rc;
	}
	for (size_t i = 0; i < n_rec; i++) {
		size_t chunk = MIN(max, len - i * max);
		size_t rl;
		/* Rare: the record budget runs out inside one write. Finish it under the
		 * current key (still far below the AEAD limits) and update before the next. */
		if (r->tx.seq >= env->cfg.key_update_after)
			r->flags |= F_KU_PENDING;
		if ((rc = seal_one(env, r, TLS_CT_APPDATA, out + done, chunk, &rl)) < 0)
			return rc;
		done += rl;
	}
	*out_len = done;
	return 0;
}

bool tls_rec_want_flush(const struct tls_rec *r)
{
	return (r->flags & (F_ALERT_PENDING | F_CLOSE_PENDING | F_KU_PENDING)) != 0;
}

int tls_rec_flush(struct tls_rec_env *env, struct tls_rec *r, uint8_t *out, size_t cap,
		  size_t *out_len)
{
	size_t done = 0, rl;
	int rc;

	*out_len = 0;
	if (r->flags & F_ALERT_PENDING) {
		/* Fatal alert: the last thing we send. If the sequence number ran out (that may
		 * be the error) or there is no room, close without it. */
		r->flags &= (uint8_t)~F_ALERT_PENDING;
		if (r->tx.seq == UINT64_MAX || cap < CTRL_REC_MAX)
			return 0;
		out[TLS_REC_HDR_LEN] = 2; /* fatal */
		out[TLS_REC_HDR_LEN + 1] = r->alert;
		if (seal_one(env, r, TLS_CT_ALERT, out, 2, &rl) == 0)
			*out_len = rl;
		return 0;
	}
	if (r->flags & F_FAILED)
		return 0;
	if (r->flags & F_KU_PENDING) {
		if ((rc = emit_key_update(env, r, out, cap, &rl)) < 0)
			return rc;
		done += rl;
	}
	if (r->flags & F_CLOSE_PENDING) {
		if (cap - done < CTRL_REC_MAX)
			return -E_OVERFLOW;
		out[done + TLS_REC_HDR_LEN] = 1; /* warning */
		out[done + TLS_REC_HDR_LEN + 1] = TLS_ALERT_CLOSE_NOTIFY;
		if ((rc = seal_one(env, r, TLS_CT_ALERT, out + done, 2, &rl)) < 0)
			return rc;
		done += rl;
		r->flags &= (uint8_t)~F_CLOSE_PENDING;
	}
	*out_len = done;
	return 0;
}

void tls_rec_key_update(struct tls_rec *r, bool request_peer)
{
	if (r->flags & (F_FAILED | F_TX_CLOSED))
		return;
	r->flags |= F_KU_PENDING;
	if (request_peer)
		r->flags |= F_KU_REQUEST;
}

void tls_rec_abort(struct tls_rec *r, uint8_t alert)
{
	if (r->flags & F_FAILED)
		return;
	r->flags |= F_FAILED | F_ALERT_PENDING;
	r->flags &= (uint8_t)~(F_KU_PENDING | F_CLOSE_PENDING);
	r->alert = alert;
}

void tls_rec_shutdown(struct tls_rec *r)
{
	if (r->flags & (F_FAILED | F_TX_CLOSED))
		return;
	r->flags |= F_TX_CLOSED | F_CLOSE_PENDING;
}

bool tls_rec_peer_closed(const struct tls_rec *r) { return (r->flags & F_RX_CLOSED) != 0; }
bool tls_rec_failed(const struct tls_rec *r) { return (r->flags & F_FAILED) != 0; }
uint8_t tls_rec_alert(const struct tls_rec *r) { return r->alert; }
size_t tls_rec_sizeof(void) { return sizeof(struct tls_rec); }

uint32_t tls_rec_key_cached(const struct tls_rec_env *env, const struct tls_rec *r)
{
	if (!env->cfg.key_cache_slots)
		return 0;
	return (uint32_t)(cache_slot(env, &r->rx, false)->owner == &r->rx) +
	       (uint32_t)(cache_slot(env, &r->tx, true)->owner == &r->tx);
}

bool tls_rec_check_invariants(const struct tls_rec_env *env, const struct tls_rec *r)
{
	if (r->hdr_have > TLS_REC_HDR_LEN)
		return false;
	if (r->reasm) {
		size_t blen = ld_be16(r->hdr + 3);
		return r->hdr_have == TLS_REC_HDR_LEN && r->reasm_have < blen &&
		       blen <= max_ciphertext(env);
	}
	return r->reasm_have == 0 && r->hdr_have < TLS_REC_HDR_LEN;
}
