/* SPDX-License-Identifier: MIT
 *
 * mbedTLS handshake adapter (see handshake.h). Owns mbedTLS's configuration (TLS 1.3
 * server, client certificate required, X25519/P-256, ECDSA P-256, RSA 2048-4096 with
 * rsa_pss_rsae_sha256 only when the config allows it, two suites, tickets),
 * its process-global hooks (allocator with accounting, clocks, entropy, calendar), the
 * in-memory BIO and the hand-off to tls/record.c. It must never let bytes of a failed or
 * unverified handshake reach the application, never keep a freed mbedTLS context's
 * memory unwiped, and never run more than max_in_flight handshakes.
 *
 * Design note
 * -----------
 *   tls_hs_start --> RUNNING --tls_hs_input: mbedTLS done--> DONE --tls_hs_finish--> freed
 *                       |                                    |
 *                       +--error (alert sent)--> FAILED ------+--tls_hs_abort--> freed
 * Invariants:
 *  1. in_flight == number of live struct tls_hs, <= max_in_flight.
 *  2. hs->in/in_len/in_pos are valid only inside tls_hs_input; the BIO reads only there.
 *  3. Every block from the allocator hook is wiped before it is returned (secrets).
 *  4. A held outgoing record (held_len > 0) is at most one encrypted alert, released or
 *     replaced before tls_hs_input returns.
 *  5. The record layer is started only when mbedTLS finished with a verified peer
 *     certificate and both application secrets were exported.
 *  6. With cfg.rsa false no RSA key is used anywhere: the env refuses RSA credentials,
 *     only ecdsa_secp256r1_sha256 is offered and the certificate profile refuses RSA
 *     keys and signatures. With it true RSA keys are 2048-4096 bits at every depth.
 */
#include "tls/handshake.h"

#include "lib/bytes.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "tls/hello.h"
#include "tls/accel/accel.h"

#include "mbedtls/ecp.h"
#include "mbedtls/pk.h"
#include "mbedtls/platform.h"
#include "mbedtls/platform_time.h"
#include "mbedtls/ssl.h"
#include "mbedtls/gcm.h"
#include "mbedtls/md.h"
#include "mbedtls/x509_crt.h"
#include "psa/crypto.h"

/* Largest encrypted alert mbedTLS writes: header, 2 bytes + type byte padded to its
 * granularity (MBEDTLS_SSL_CID_TLS1_3_PADDING_GRANULARITY, 16 by default), tag. */
#define ALERT_REC_LEN 64u
#define ALLOC_HDR 16u
#define TK_SERIAL_MAX 20u /* RFC 5280 4.1.2.2: serial numbers up to 20 octets */
#define TK_SESSION_MAX 1024u /* our allocation header: the requested size, for accounting */
#define RSA_MIN_BITS 2048u /* below: factorable within reach; NIST SP 800-131A */
#define RSA_MAX_BITS 4096u /* above: handshake CPU a client could make us spend */

/* A ticket-sealing key (AES-128-GCM) of one rotation period, derived from the env's
 * ticket secret (tk_key_of); its id is the period's low byte. */
struct tk_key {
	uint8_t key[16];
	int64_t period;
	bool live;
};

struct tls_hs_env {
	struct tls_hs_config cfg;
	mbedtls_ssl_config conf;
	mbedtls_x509_crt ca;
	mbedtls_x509_crt cert;
	mbedtls_pk_context key;
	mbedtls_x509_crt_profile profile; /* linked from conf */
	struct tk_key keys[2]; /* the keys of the last two periods used (a cache) */
	uint8_t ticket_secret[TLS_HS_TICKET_SECRET_LEN];
	struct tls_hs_stats stats;
};

struct tls_hs {
	struct tls_hs_env *env;
	mbedtls_ssl_context ssl;
	tls_hs_send_fn send;
	void *send_ctx;
	const uint8_t *in; /* borrowed during tls_hs_input only */
	size_t in_len, in_pos;
	int err;
	bool done, failed, have_c_ap, have_s_ap, have_s_hs, send_failed;
	bool first_checked;  /* the first record's header was looked at (tls_hs_input) */
	uint32_t n_sends;    /* bytes handed to send or held, counted by call (refusal alerts) */
	uint8_t c_ap[TLS_REC_SECRET_LEN], s_ap[TLS_REC_SECRET_LEN], s_hs[TLS_REC_SECRET_LEN];
	uint8_t held[ALERT_REC_LEN];
	uint8_t held_len;
	bool resumed; /* a ticket of ours was accepted: id/serial below come from it */
	bool clock_refused; /* the certificate was refused for an untrusted clock */
	bool unlisted;      /* the device identity is not in the allowlist */
	struct tls_identity resumed_id;
	uint8_t serial[TK_SERIAL_MAX];
	uint8_t serial_len;
};

/* The handshake inside mbedtls_ssl_handshake() right now, per core: ticket callbacks
 * have no per-connection argument. Set and cleared around each call on its own core. */
static struct tls_hs *cur_hs[TLS_HS_MAX_CORES];

/* ---- process-global hooks ----------------------------------------------------------- */

static struct tls_hs_ops hooks; /* written once, before any core handshakes */
/* Per core: the env whose accounting this core's mbedTLS allocations go to (NULL: none
 * yet), and the counts made while there was none. Each entry is touched only by its core
 * (and by env create/destroy, which run before/after that core's handshakes). */
static struct tls_hs_stats *hook_stats[TLS_HS_MAX_CORES];
static struct tls_hs_stats hook_stats_none[TLS_HS_MAX_CORES];
static uint32_t n_envs; /* PSA is freed with the last env (create/destroy: one core) */

/* The calling core's index (ops.core; one core without it). An index past the arrays
 * would share a slot with another core: it is clamped to the last slot, and the image
 * asserts PLAT_MAX_CPUS <= TLS_HS_MAX_CORES so that cannot happen. */
static uint32_t hook_core(void)
{
	uint32_t c = hooks.core ? hooks.core(hooks.ctx) : 0u;
	return c < TLS_HS_MAX_CORES ? c : TLS_HS_MAX_CORES - 1u;
}

static struct tls_hs_stats *hook_stats_mine(void)
{
	uint32_t c = hook_core();
	return hook_stats[c] ? hook_stats[c] : &hook_stats_none[c];
}

static void *hook_calloc(size_t n, size_t size)
{
	struct tls_hs_stats *st = hook_stats_mine();
	if (size && n > (SIZE_MAX - ALLOC_HDR) / size)
		return NULL;
	size_t len = n * size;
	uint8_t *p = hooks.alloc ? hooks.alloc(hooks.ctx, len + ALLOC_HDR, HEAP_TAG_TLS_HANDSHAKE) : NULL;
	st->n_alloc++;
	if (!p) {
		st->n_alloc_failed++;
		return NULL;
	}
	memset(p, 0, len + ALLOC_HDR);
	memcpy(p, &len, sizeof len);
	st->live_bytes += len;
	if (st->live_bytes > st->peak_bytes)
		st->peak_bytes = st->live_bytes;
	return p + ALLOC_HDR;
}

static void hook_free(void *q)
{
	struct tls_hs_stats *st = hook_stats_mine();
	size_t len;
	if (!q)
		return;
	uint8_t *p = (uint8_t *)q - ALLOC_HDR;
	memcpy(&len, p, sizeof len);
	mem_wipe(p, len + ALLOC_HDR); /* invariant 3 */
	st->live_bytes -= len;
	hooks.free(hooks.ctx, p, len + ALLOC_HDR);
}

/* Seconds added to the clock mbedTLS sees, per core: non-zero only while verify_cb asks
 * whether a not-yet-valid certificate is within the configured skew. */
static int64_t time_shift[TLS_HS_MAX_CORES];

static mbedtls_time_t hook_time(mbedtls_time_t *t)
{
	mbedtls_time_t now = hooks.now_s ? (mbedtls_time_t)hooks.now_s(hooks.ctx) : 0;
	now += (mbedtls_time_t)time_shift[hook_core()];
	if (t)
		*t = now;
	return now;
}

/* Declared by mbedTLS for MBEDTLS_PLATFORM_MS_TIME_ALT. */
mbedtls_ms_time_t mbedtls_ms_time(void)
{
	return hooks.now_ms ? (mbedtls_ms_time_t)hooks.now_ms(hooks.ctx) : 0;
}

/* Declared by mbedTLS for MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG: PSA's randomness is ours. */
psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t *ctx,
					     uint8_t *out, size_t len, size_t *out_len)
{
	(void)ctx;
	*out_len = 0;
	if (!hooks.random || hooks.random(hooks.ctx, out, len) != 0)
		return PSA_ERROR_INSUFFICIENT_ENTROPY;
	*out_len = len;
	return PSA_SUCCESS;
}

/* Declared by mbedTLS for MBEDTLS_PLATFORM_GMTIME_R_ALT: Unix seconds to UTC calendar
 * (days-from-civil inverted, proleptic Gregorian), for certificate validity checks. */
struct tm *mbedtls_platform_gmtime_r(const mbedtls_time_t *tt, struct tm *tm_buf)
{
	int64_t t = (int64_t)*tt;
	int64_t days = t / 86400, rem = t % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int64_t d = doy - (153 * mp + 2) / 5 + 1;
	int64_t m = mp < 10 ? mp + 3 : mp - 9;
	int64_t y = yoe + era * 400 + (m <= 2);
	if (y < 1 || y > 9999)
		return NULL;
	memset(tm_buf, 0, sizeof *tm_buf);
	tm_buf->tm_year = (int)(y - 1900);
	tm_buf->tm_mon = (int)(m - 1);
	tm_buf->tm_mday = (int)d;
	tm_buf->tm_hour = (int)(rem / 3600);
	tm_buf->tm_min = (int)(rem % 3600 / 60);
	tm_buf->tm_sec = (int)(rem % 60);
	return tm_buf;
}

static int hook_rng(void *ctx, unsigned char *out, size_t len)
{
	(void)ctx;
	if (!hooks.random || hooks.random(hooks.ctx, out, len) != 0)
		return MBEDTLS_ERR_SSL_INTERNAL_ERROR;
	return 0;
}

void tls_hs_hooks_install(const struct tls_hs_ops *ops)
{
	hooks = *ops;
	(void)mbedtls_platform_set_calloc_free(hook_calloc, hook_free);
	(void)mbedtls_platform_set_time(hook_time);
}

/* ---- certificate policy --------------------------------------------------------------- */

/* 0 when a key may be used under the env's policy: ECC (P-256, checked by the profile
 * for peers), or RSA of RSA_MIN_BITS..RSA_MAX_BITS when cfg.rsa allows it. */
/* The length of the DER certificate at buf: a SEQUENCE (0x30) whose definite length (short
 * form, or 1 to 3 length bytes) fits in len; 0 if none. mbedTLS parses the inside. */
static size_t der_one(const uint8_t *buf, size_t len)
{
	if (len < 2 || buf[0] != 0x30)
		return 0;
	size_t hdr = 2, body = buf[1];
	if (body & 0x80u) {
		size_t n = body & 0x7fu;
		if (n == 0 || n > 3 || len - 2 < n)
			return 0;
		body = 0;
		for (size_t k = 0; k < n; k++)
			body = body << 8 | buf[2 + k];
		hdr += n;
	}
	return body <= len - hdr ? hdr + body : 0;
}

int tls_der_chain_count(const uint8_t *buf, size_t len)
{
	int n = 0;
	for (size_t off = 0, one; off < len; off += one, n++)
		if (!(one = der_one(buf + off, len - off)) || n == INT32_MAX)
			return -E_PROTO;
	return n ? n : -E_PROTO;
}

int tls_crt_chain_parse(struct mbedtls_x509_crt *chain, const uint8_t *buf, size_t len)
{
	/* A DER certificate is a SEQUENCE (0x30); anything else is PEM text for mbedTLS. */
	if (!len)
		return -E_PROTO;
	if (buf[0] != 0x30)
		return mbedtls_x509_crt_parse(chain, buf, len) == 0 ? 0 : -E_PROTO;
	if (tls_der_chain_count(buf, len) < 0)
		return -E_PROTO;
	for (size_t off = 0, one; off < len; off += one) {
		one = der_one(buf + off, len - off);
		if (mbedtls_x509_crt_parse_der(chain, buf + off, one) != 0)
			return -E_PROTO;
	}
	return 0;
}

static int key_check(const struct tls_hs_env *env, const mbedtls_pk_context *pk)
{
	switch (mbedtls_pk_get_type(pk)) {
	case MBEDTLS_PK_ECKEY:
	case MBEDTLS_PK_ECDSA:
		return 0;
	case MBEDTLS_PK_RSA: {
		size_t bits = mbedtls_pk_get_bitlen(pk);
		if (!env->cfg.rsa)
			return -E_PERM;
		return bits >= RSA_MIN_BITS && bits <= RSA_MAX_BITS ? 0 : -E_RANGE;
	}
	default:
		return -E_INVAL;
	}
}

/* Gives a P-256 CA key to the curve driver as a fixed base (tls/accel/accel.h: a comb table
 * built once, so a client certificate's signature costs two fixed-base multiplications);
 * other keys are left alone. Not an error when refused: a key the registry refuses (full)
 * verifies on the generic path, with the same verdicts; the broker logs how many it holds. */
static void ca_key_trust(const mbedtls_pk_context *pk)
{
	uint8_t pub[ACCEL_P256_PUBLIC_LEN];
	size_t len = 0;
	mbedtls_pk_type_t type = mbedtls_pk_get_type(pk);
	if (type != MBEDTLS_PK_ECKEY && type != MBEDTLS_PK_ECDSA)
		return;
	const mbedtls_ecp_keypair *kp = mbedtls_pk_ec(*pk);
	if (!kp || mbedtls_ecp_keypair_get_group_id(kp) != MBEDTLS_ECP_DP_SECP256R1 ||
	    mbedtls_ecp_write_public_key(kp, MBEDTLS_ECP_PF_UNCOMPRESSED, &len, pub, sizeof pub) != 0 ||
	    len != sizeof pub)
		return;
	if (accel_trust_p256_key(pub) != 0)
		return; /* refused (the registry counts it): the generic path verifies under it */
}

/* Whether an identity may connect under the allowlist (tls_revoke.is_listed_id): service
 * identities always, devices when listed or when there is no allowlist. */
static bool id_listed(const struct tls_hs_env *env, const struct tls_identity *id)
{
	return id->kind == TLS_ID_SERVICE || !env->cfg.revoke.is_listed_id ||
	       env->cfg.revoke.is_listed_id(env->cfg.revoke.ctx, id->name, id->len);
}

static int verify_cb(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
	struct tls_hs_env *env = ctx;
	/* Every depth: RSA only when allowed and within size (the profile checks the lower
	 * bound and the key types too; this adds the upper bound and keeps invariant 6
	 * independent of it). Both map to unsupported_certificate. */
	int kc = key_check(env, &crt->pk);
	if (kc == -E_PERM || kc == -E_INVAL)
		*flags |= MBEDTLS_X509_BADCERT_BAD_PK;
	else if (kc)
		*flags |= MBEDTLS_X509_BADCERT_BAD_KEY;
	/* Not yet valid, but within tls.clock_skew_s: valid (the clock mbedTLS reads is moved
	 * forward for this one question, on this core only). */
	if ((*flags & MBEDTLS_X509_BADCERT_FUTURE) && env->cfg.clock_skew_s) {
		uint32_t core = hook_core();
		time_shift[core] = env->cfg.clock_skew_s;
		if (!mbedtls_x509_time_is_future(&crt->valid_from))
			*flags &= ~(uint32_t)MBEDTLS_X509_BADCERT_FUTURE;
		time_shift[core] = 0;
	}
	if (depth != 0)
		return 0;
	/* Validity means nothing against a clock that may be wrong (tls_hs_config.clock_trusted). */
	if (env->cfg.clock_trusted && !env->cfg.clock_trusted(env->cfg.clock_ctx)) {
		struct tls_hs *hs = cur_hs[hook_core()];
		if (hs)
			hs->clock_refused = true;
		*flags |= MBEDTLS_X509_BADCERT_OTHER;
	}
	/* The client's whole chain (the leaf heads the list mbedTLS parsed from its Certificate
	 * message): at most tls.max_client_chain_bytes of certificates. */
	size_t chain = crt->raw.len;
	for (const mbedtls_x509_crt *c = crt->next; c && c->raw.len; c = c->next)
		chain += c->raw.len;
	if (chain > env->cfg.max_client_chain_bytes)
		*flags |= MBEDTLS_X509_BADCERT_OTHER;
	/* The leaf: revocation, then a usable identity, decided during the handshake so the
	 * client gets the alert (certificate_revoked / bad_certificate) from mbedTLS. */
	if (env->cfg.revoke.is_revoked &&
	    env->cfg.revoke.is_revoked(env->cfg.revoke.ctx, crt->serial.p, crt->serial.len))
		*flags |= MBEDTLS_X509_BADCERT_REVOKED;
	struct tls_identity id;
	if (tls_identity_from_crt(&env->cfg.id, crt, &id) != 0)
		*flags |= MBEDTLS_X509_BADCERT_OTHER;
	else if (env->cfg.revoke.is_revoked_id && env->cfg.revoke.is_revoked_id(env->cfg.revoke.ctx, id.name, id.len))
		*flags |= MBEDTLS_X509_BADCERT_REVOKED; /* an identity revoked at run time */
	else if (!(*flags & MBEDTLS_X509_BADCERT_REVOKED) && !id_listed(env, &id)) {
		struct tls_hs *hs = cur_hs[hook_core()];
		if (hs)
			hs->unlisted = true;
		*flags |= MBEDTLS_X509_BADCERT_OTHER; /* access_denied */
	}
	mem_wipe(&id, sizeof id);
	return 0;
}

static const uint16_t groups[] = { MBEDTLS_SSL_IANA_TLS_GROUP_X25519,
				   MBEDTLS_SSL_IANA_TLS_GROUP_SECP256R1,
				   MBEDTLS_SSL_IANA_TLS_GROUP_NONE };
static const uint16_t sig_algs_ec[] = { MBEDTLS_TLS1_3_SIG_ECDSA_SECP256R1_SHA256,
					MBEDTLS_TLS1_3_SIG_NONE };
static const uint16_t sig_algs_rsa[] = { MBEDTLS_TLS1_3_SIG_ECDSA_SECP256R1_SHA256,
					 MBEDTLS_TLS1_3_SIG_RSA_PSS_RSAE_SHA256,
					 MBEDTLS_TLS1_3_SIG_NONE };
static const int suites[] = { MBEDTLS_TLS1_3_AES_128_GCM_SHA256,
			      MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256, 0 };

/* ---- resumption tickets ------------------------------------------------------------------
 * Our own stateless tickets rather than mbedTLS's: on a TLS 1.3 server mbedTLS does not
 * keep the client certificate in the session it seals, and the identity must survive
 * resumption. Ticket = key id (1) | nonce (12) | AES-128-GCM(session | identity | serial)
 * | tag (16), the key id as AAD. Two keys live at a time; a key is replaced after one
 * lifetime, so a ticket dies after at most two lifetimes (mbedTLS also enforces the
 * advertised lifetime from the ticket's age). */

static int64_t tk_period_now(const struct tls_hs_env *env)
{
	int64_t now = hooks.now_s(hooks.ctx);
	return (now < 0 ? 0 : now) / (int64_t)env->cfg.ticket_key_rotate_s;
}

/* The key of `period` (cached: the two most recent periods asked for; the one it replaces
 * is wiped): HMAC-SHA256(secret, "urMQTT ticket key" | period, 8 bytes big-endian), first
 * 16 bytes. NULL if HMAC failed. */
static struct tk_key *tk_key_of(struct tls_hs_env *env, int64_t period)
{
	struct tk_key *a = &env->keys[0], *b = &env->keys[1];
	if (a->live && a->period == period)
		return a;
	if (b->live && b->period == period)
		return b;
	struct tk_key *k = !a->live ? a : !b->live ? b : a->period < b->period ? a : b;
	mem_wipe(k, sizeof *k);
	static const char label[] = "urMQTT ticket key";
	uint8_t msg[sizeof label - 1 + 8], mac[32];
	memcpy(msg, label, sizeof label - 1);
	st_be64(msg + sizeof label - 1, (uint64_t)period);
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	int rc = md ? mbedtls_md_hmac(md, env->ticket_secret, sizeof env->ticket_secret, msg, sizeof msg, mac) : -1;
	if (rc == 0) {
		memcpy(k->key, mac, sizeof k->key);
		k->period = period;
		k->live = true;
	}
	mem_wipe(mac, sizeof mac);
	return rc == 0 ? k : NULL;
}

static int tk_write(void *p, const mbedtls_ssl_session *session, unsigned char *start,
		    const unsigned char *end, size_t *tlen, uint32_t *lifetime)
{
	struct tls_hs_env *env = p;
	struct tls_hs *hs = cur_hs[hook_core()];
	struct tk_key *k = tk_key_of(env, tk_period_now(env));
	struct tls_identity id;
	const uint8_t *serial = NULL;
	size_t slen = 0, olen = 0;
	int ret = MBEDTLS_ERR_SSL_INTERNAL_ERROR;

	*tlen = 0;
	if (!k || !hs || end < start)
		return ret;
	const mbedtls_x509_crt *peer = session->MBEDTLS_PRIVATE(peer_cert);
	if (peer) {
		if (tls_identity_from_crt(&env->cfg.id, peer, &id) != 0)
			return ret;
		serial = peer->serial.p;
		slen = peer->serial.len;
	} else if (hs->resumed) {
		id = hs->resumed_id;
		serial = hs->serial;
		slen = hs->serial_len;
	} else {
		return ret; /* never a ticket for an unauthenticated session */
	}
	size_t cap = (size_t)(end - start);
	if (slen > TK_SERIAL_MAX || cap < 32u + (size_t)id.len + slen)
		goto out;
	uint8_t *body = start + 13;
	size_t room = cap - 13 - 16;
	if (mbedtls_ssl_session_save(session, body + 2, room - 2, &olen) != 0 || olen > UINT16_MAX)
		goto out;
	struct wcur w = wcur_make(body, room);
	wcur_be16(&w, (uint16_t)olen);
	wcur_reserve(&w, olen);
	wcur_u8(&w, id.kind);
	wcur_u8(&w, (uint8_t)id.len);
	wcur_bytes(&w, id.name, id.len);
	wcur_u8(&w, (uint8_t)slen);
	wcur_bytes(&w, serial, slen);
	if (!wcur_ok(&w))
		goto out;
	start[0] = (uint8_t)k->period;
	if (hooks.random(hooks.ctx, start + 1, 12) != 0)
		goto out;
	mbedtls_gcm_context g;
	mbedtls_gcm_init(&g);
	if (mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, k->key, 128) == 0 &&
	    mbedtls_gcm_crypt_and_tag(&g, MBEDTLS_GCM_ENCRYPT, w.pos, start + 1, 12, start, 1, body,
				      body, 16, body + w.pos) == 0) {
		*tlen = 13 + w.pos + 16;
		*lifetime = env->cfg.ticket_lifetime_s;
		ret = 0;
	}
	mbedtls_gcm_free(&g);
out:
	mem_wipe(&id, sizeof id);
	return ret;
}

static int tk_parse(void *p, mbedtls_ssl_session *session, unsigned char *buf, size_t len)
{
	struct tls_hs_env *env = p;
	struct tls_hs *hs = cur_hs[hook_core()];
	const struct tk_key *k = NULL;
	int ret = MBEDTLS_ERR_SSL_INVALID_MAC;

	if (!hs || len < 1 + 12 + 16 + 2)
		return MBEDTLS_ERR_SSL_BAD_INPUT_DATA;
	/* The current and the previous period; the next one too, for a core whose clock read
	 * crossed the boundary a moment before ours (cores rotate in step, not at once). */
	int64_t now = tk_period_now(env);
	for (int64_t e = now + 1; e >= now - 1 && e >= 0 && !k; e--)
		if ((uint8_t)e == buf[0])
			k = tk_key_of(env, e);
	if (!k)
		return MBEDTLS_ERR_SSL_SESSION_TICKET_EXPIRED;
	size_t blen = len - 13 - 16;
	uint8_t *body = buf + 13;
	mbedtls_gcm_context g;
	mbedtls_gcm_init(&g);
	int bad = mbedtls_gcm_setkey(&g, MBEDTLS_CIPHER_ID_AES, k->key, 128) ||
		  mbedtls_gcm_auth_decrypt(&g, blen, buf + 1, 12, buf, 1, body + blen, 16, body, body);
	mbedtls_gcm_free(&g);
	if (bad)
		return ret;
	/* Authentic, so written by us; still parsed through the cursor. */
	struct cur c = cur_make(body, blen);
	uint16_t slen = cur_be16(&c);
	const uint8_t *sess = cur_ptr(&c, slen);
	uint8_t kind = cur_u8(&c);
	uint8_t idlen = cur_u8(&c);
	const uint8_t *name = cur_ptr(&c, idlen);
	uint8_t serlen = cur_u8(&c);
	const uint8_t *ser = cur_ptr(&c, serlen);
	if (!cur_done(&c) || idlen == 0 || idlen > TLS_IDENTITY_CAP || serlen > TK_SERIAL_MAX)
		return MBEDTLS_ERR_SSL_DECODE_ERROR;
	/* Revocation applies to resumption too: a revoked device falls back to a full
	 * handshake, where its certificate is refused. */
	struct tls_identity tid = { .kind = kind, .len = idlen };
	memcpy(tid.name, name, idlen);
	bool refused = (env->cfg.revoke.is_revoked && env->cfg.revoke.is_revoked(env->cfg.revoke.ctx, ser, serlen)) ||
		       (env->cfg.revoke.is_revoked_id &&
			env->cfg.revoke.is_revoked_id(env->cfg.revoke.ctx, (const char *)name, idlen)) ||
		       !id_listed(env, &tid);
	mem_wipe(&tid, sizeof tid);
	if (refused)
		return MBEDTLS_ERR_SSL_SESSION_TICKET_EXPIRED;
	if (mbedtls_ssl_session_load(session, sess, slen) != 0)
		return MBEDTLS_ERR_SSL_DECODE_ERROR;
	memset(&hs->resumed_id, 0, sizeof hs->resumed_id);
	hs->resumed_id.kind = kind;
	hs->resumed_id.len = idlen;
	memcpy(hs->resumed_id.name, name, idlen);
	memcpy(hs->serial, ser, serlen);
	hs->serial_len = serlen;
	hs->resumed = true;
	return 0;
}

/* ---- env ------------------------------------------------------------------------------ */

int tls_hs_env_create(const struct tls_hs_config *cfg, struct tls_hs_env **out)
{
	struct tls_hs_env *env;
	int rc = -E_INVAL;

	*out = NULL;
	if (!cfg->max_in_flight || !cfg->ops.alloc || !cfg->ops.free || !cfg->ops.random ||
	    !cfg->ops.now_s || !cfg->ops.now_ms || !cfg->ca || !cfg->cert || !cfg->key)
		return -E_INVAL;
	tls_hs_hooks_install(&cfg->ops);
	env = hook_calloc(1, sizeof *env);
	if (!env)
		return -E_NOMEM;
	env->cfg = *cfg;
	if (!env->cfg.max_client_hello_bytes || env->cfg.max_client_hello_bytes > TLS_HS_MAX_MESSAGE)
		env->cfg.max_client_hello_bytes = TLS_HS_MAX_MESSAGE;
	if (!env->cfg.max_client_chain_bytes || env->cfg.max_client_chain_bytes > TLS_HS_MAX_MESSAGE)
		env->cfg.max_client_chain_bytes = TLS_HS_MAX_MESSAGE;
	/* The curve driver's CPU probe, before the first handshake of this process or image
	 * (envs are created on one core, invariant of n_envs). */
	if (n_envs == 0)
		accel_cpu_init();
	uint32_t core = hook_core();
	hook_stats[core] = &env->stats;
	env->stats = hook_stats_none[core]; /* the env's own allocation counts too */
	n_envs++;
	mbedtls_ssl_config_init(&env->conf);
	mbedtls_x509_crt_init(&env->ca);
	mbedtls_x509_crt_init(&env->cert);
	mbedtls_pk_init(&env->key);

	if (psa_crypto_init() != PSA_SUCCESS)
		goto fail;
	if (mbedtls_x509_crt_parse(&env->ca, cfg->ca, cfg->ca_len) != 0 ||
	    tls_crt_chain_parse(&env->cert, cfg->cert, cfg->cert_len) != 0 ||
	    mbedtls_pk_parse_key(&env->key, cfg->key, cfg->key_len, NULL, 0, hook_rng, NULL) != 0)
		goto fail;
	/* Our own credentials follow the same key policy as peers' (invariant 6). */
	if ((rc = key_check(env, &env->key)) != 0)
		goto fail;
	for (const mbedtls_x509_crt *c = &env->ca; c && c->raw.p; c = c->next)
		if ((rc = key_check(env, &c->pk)) != 0)
			goto fail;
	/* Envs are made on one core while no other handshakes: accel.h's calling context. */
	for (const mbedtls_x509_crt *c = &env->ca; c && c->raw.p; c = c->next)
		ca_key_trust(&c->pk);
	for (const mbedtls_x509_crt *c = &env->cert; c && c->raw.p; c = c->next)
		if ((rc = key_check(env, &c->pk)) != 0)
			goto fail;
	rc = -E_INVAL;
	if (mbedtls_ssl_config_defaults(&env->conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
					MBEDTLS_SSL_PRESET_DEFAULT) != 0)
		goto fail;
	mbedtls_ssl_conf_min_tls_version(&env->conf, MBEDTLS_SSL_VERSION_TLS1_3);
	mbedtls_ssl_conf_max_tls_version(&env->conf, MBEDTLS_SSL_VERSION_TLS1_3);
	mbedtls_ssl_conf_authmode(&env->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_rng(&env->conf, hook_rng, NULL);
	mbedtls_ssl_conf_ca_chain(&env->conf, &env->ca, NULL);
	mbedtls_ssl_conf_verify(&env->conf, verify_cb, env);
	/* Peer chains: SHA-256 signatures, P-256 keys; RSA keys and RSA certificate
	 * signatures (PKCS#1 v1.5 or PSS) only when allowed (invariant 6). */
	env->profile.allowed_mds = MBEDTLS_X509_ID_FLAG(MBEDTLS_MD_SHA256);
	env->profile.allowed_pks = MBEDTLS_X509_ID_FLAG(MBEDTLS_PK_ECKEY) |
				   MBEDTLS_X509_ID_FLAG(MBEDTLS_PK_ECDSA) |
				   (cfg->rsa ? MBEDTLS_X509_ID_FLAG(MBEDTLS_PK_RSA) |
						       MBEDTLS_X509_ID_FLAG(MBEDTLS_PK_RSASSA_PSS) :
					       0u);
	env->profile.allowed_curves = MBEDTLS_X509_ID_FLAG(MBEDTLS_ECP_DP_SECP256R1);
	env->profile.rsa_min_bitlen = RSA_MIN_BITS;
	mbedtls_ssl_conf_cert_profile(&env->conf, &env->profile);
	mbedtls_ssl_conf_groups(&env->conf, groups);
	mbedtls_ssl_conf_sig_algs(&env->conf, cfg->rsa ? sig_algs_rsa : sig_algs_ec);
	mbedtls_ssl_conf_ciphersuites(&env->conf, suites);
	if (mbedtls_ssl_conf_own_cert(&env->conf, &env->cert, &env->key) != 0)
		goto fail;
	if (!env->cfg.ticket_key_rotate_s)
		env->cfg.ticket_key_rotate_s = cfg->ticket_lifetime_s ? cfg->ticket_lifetime_s : 1u;
	env->cfg.ticket_secret = NULL; /* copied below, never linked */
	if (cfg->ticket_secret)
		memcpy(env->ticket_secret, cfg->ticket_secret, sizeof env->ticket_secret);
	else if (hooks.random(hooks.ctx, env->ticket_secret, sizeof env->ticket_secret) != 0) {
		rc = -E_IO;
		goto fail;
	}
	if (cfg->ticket_lifetime_s && cfg->n_tickets) {
		/* Stateless tickets (tk_write/tk_parse above); resumption only with (EC)DHE,
		 * 0-RTT is not compiled in. */
		mbedtls_ssl_conf_session_tickets_cb(&env->conf, tk_write, tk_parse, env);
		mbedtls_ssl_conf_new_session_tickets(&env->conf, cfg->n_tickets);
		mbedtls_ssl_conf_tls13_key_exchange_modes(
			&env->conf, MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL |
					    MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL);
	} else {
		mbedtls_ssl_conf_new_session_tickets(&env->conf, 0);
		mbedtls_ssl_conf_tls13_key_exchange_modes(&env->conf,
							  MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL);
	}
	*out = env;
	return 0;
fail:
	tls_hs_env_destroy(env);
	return rc;
}

void tls_hs_env_destroy(struct tls_hs_env *env)
{
	if (!env)
		return;
	mem_wipe(env->keys, sizeof env->keys);
	mem_wipe(env->ticket_secret, sizeof env->ticket_secret);
	mbedtls_ssl_config_free(&env->conf);
	mbedtls_pk_free(&env->key);
	mbedtls_x509_crt_free(&env->cert);
	mbedtls_x509_crt_free(&env->ca);
	if (--n_envs == 0) {
		mbedtls_psa_crypto_free(); /* other cores' envs still use PSA otherwise */
		accel_trust_p256_clear(); /* the next env may trust another CA */
	}
	uint32_t core = hook_core();
	hook_stats_none[core] = env->stats;
	hook_stats[core] = NULL;
	hook_free(env);
}

void tls_hs_stats_get(const struct tls_hs_env *env, struct tls_hs_stats *out)
{
	*out = env->stats;
}

/* ---- BIO ------------------------------------------------------------------------------ */

static int bio_send_raw(struct tls_hs *hs, const uint8_t *p, size_t len)
{
	if (hs->send_failed || hs->send(hs->send_ctx, p, len) != 0) {
		hs->send_failed = true;
		return -1;
	}
	return 0;
}

static int bio_send(void *ctx, const unsigned char *p, size_t len)
{
	struct tls_hs *hs = ctx;
	hs->n_sends++;
	if (hs->held_len) {
		uint8_t n = hs->held_len;
		hs->held_len = 0;
		if (bio_send_raw(hs, hs->held, n))
			return MBEDTLS_ERR_SSL_INTERNAL_ERROR;
	}
	/* After our Finished and before mbedTLS's wrap-up, a record this small can only be an
	 * alert under the wrong key: hold it for reseal_alert(), which checks (invariant 4). */
	if (len <= ALERT_REC_LEN && hs->have_s_hs && hs->have_s_ap && !hs->done) {
		memcpy(hs->held, p, len);
		hs->held_len = (uint8_t)len;
		return (int)len;
	}
	if (bio_send_raw(hs, p, len))
		return MBEDTLS_ERR_SSL_INTERNAL_ERROR;
	return (int)len;
}

static int bio_recv(void *ctx, unsigned char *p, size_t len)
{
	struct tls_hs *hs = ctx;
	size_t n = MIN(len, hs->in_len - hs->in_pos);
	if (n == 0)
		return MBEDTLS_ERR_SSL_WANT_READ;
	if (n > INT32_MAX)
		n = INT32_MAX;
	memcpy(p, hs->in + hs->in_pos, n);
	hs->in_pos += n;
	return (int)n;
}

static void export_keys(void *ctx, mbedtls_ssl_key_export_type type, const unsigned char *secret,
			size_t secret_len, const unsigned char client_random[32],
			const unsigned char server_random[32], mbedtls_tls_prf_types prf)
{
	struct tls_hs *hs = ctx;
	(void)client_random;
	(void)server_random;
	(void)prf;
	if (secret_len != TLS_REC_SECRET_LEN)
		return; /* only SHA-256 suites are configured; a mismatch leaves the secret unset */
	switch (type) {
	case MBEDTLS_SSL_KEY_EXPORT_TLS1_3_SERVER_HANDSHAKE_TRAFFIC_SECRET:
		memcpy(hs->s_hs, secret, secret_len);
		hs->have_s_hs = true;
		break;
	case MBEDTLS_SSL_KEY_EXPORT_TLS1_3_CLIENT_APPLICATION_TRAFFIC_SECRET:
		memcpy(hs->c_ap, secret, secret_len);
		hs->have_c_ap = true;
		break;
	case MBEDTLS_SSL_KEY_EXPORT_TLS1_3_SERVER_APPLICATION_TRAFFIC_SECRET:
		memcpy(hs->s_ap, secret, secret_len);
		hs->have_s_ap = true;
		break;
	default:
		break;
	}
}

/* ---- handshakes --------------------------------------------------------------------------- */

int tls_hs_start(struct tls_hs_env *env, tls_hs_send_fn send, void *send_ctx, struct tls_hs **out)
{
	struct tls_hs *hs;

	*out = NULL;
	if (env->stats.in_flight >= env->cfg.max_in_flight) {
		env->stats.n_refused++;
		return -E_NOMEM;
	}
	hs = hook_calloc(1, sizeof *hs);
	if (!hs) {
		env->stats.n_refused++;
		return -E_NOMEM;
	}
	hs->env = env;
	hs->send = send;
	hs->send_ctx = send_ctx;
	mbedtls_ssl_init(&hs->ssl);
	if (mbedtls_ssl_setup(&hs->ssl, &env->conf) != 0) {
		mbedtls_ssl_free(&hs->ssl);
		hook_free(hs);
		env->stats.n_refused++;
		return -E_NOMEM;
	}
	mbedtls_ssl_set_bio(&hs->ssl, hs, bio_send, bio_recv, NULL);
	mbedtls_ssl_set_export_keys_cb(&hs->ssl, export_keys, hs);
	env->stats.in_flight++;
	env->stats.n_started++;
	*out = hs;
	return 0;
}

static int collect_alert(void *ctx, const uint8_t *p, size_t len)
{
	(void)ctx;
	(void)p;
	(void)len;
	return -E_PROTO; /* the held record must be an alert, not data */
}

/* mbedTLS 3.6 writes a fatal alert raised while it processes the client's second flight
 * under the server *handshake* key, but after our Finished the client reads with the
 * server *application* key (RFC 8446 7.2), so the client cannot decrypt it. Open the held
 * alert with the handshake key, map no_certificate(41) to certificate_required(116) as
 * RFC 8446 4.4.2.4 asks, and seal it again as the first record under the application key. */
static void reseal_alert(struct tls_hs *hs, int ret)
{
	struct tls_rec r;
	struct tls_rec_env e;
	uint8_t out[ALERT_REC_LEN + 8];
	size_t n = 0;
	uint64_t seq = ld_be64(hs->ssl.MBEDTLS_PRIVATE(cur_out_ctr));
	/* Mid-handshake the suite is only in the session being negotiated (private field). */
	const mbedtls_ssl_session *sn = hs->ssl.MBEDTLS_PRIVATE(session_negotiate);
	int suite = sn ? sn->MBEDTLS_PRIVATE(ciphersuite) : 0;
	uint8_t alert = 0;

	/* A throwaway record env: a whole record never needs the allocator. */
	memset(&e, 0, sizeof e);
	e.cfg.max_plaintext = TLS_REC_MAX_PLAINTEXT;
	e.cfg.key_update_after = UINT64_MAX;
	if (seq > 0 && suite > 0 && suite <= (int)UINT16_MAX &&
	    tls_rec_open(&r, (uint16_t)suite, hs->s_hs, hs->s_ap, seq - 1, 0) == 0) {
		memcpy(out, hs->held, hs->held_len);
		if (tls_rec_input(&e, &r, out, hs->held_len, collect_alert, NULL) == -E_CLOSED)
			alert = tls_rec_alert(&r);
		if (alert == 41 /* no_certificate */ && ret == MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE)
			alert = 116; /* certificate_required */
		if (alert) {
			tls_rec_close(&e, &r);
			if (tls_rec_open(&r, (uint16_t)suite, hs->s_hs, hs->s_ap, 0, 0) == 0) {
				tls_rec_abort(&r, alert);
				if (tls_rec_flush(&e, &r, out, sizeof out, &n) == 0 && n)
					(void)bio_send_raw(hs, out, n);
			}
		}
		tls_rec_close(&e, &r);
	}
	if (!alert)
		(void)bio_send_raw(hs, hs->held, hs->held_len); /* not ours to fix */
	hs->held_len = 0;
	mem_wipe(out, sizeof out);
}

/* The alert RFC 8446 section 6 names for a refusal mbedTLS reported without sending one
 * (ALERT_NONE: nothing to send: the peer's own alert, or its close). One table: every
 * handshake refusal ends with its alert. mbedTLS gives one error to refusals RFC 8446
 * tells apart, so three rows also read the record it failed on (borrowed): its header
 * (in_hdr: outer type, length) and, once opened, its content type and length (in_msgtype,
 * in_msglen: still the record before's when opening failed). */
#define ALERT_NONE 0xffu
static uint8_t alert_for(const mbedtls_ssl_context *ssl, int err)
{
	const uint8_t *hdr = ssl->MBEDTLS_PRIVATE(in_hdr);
	uint8_t outer = hdr ? hdr[0] : 0u;
	uint16_t len = hdr ? ld_be16(hdr + 3) : 1u;
	/* 5.1, 5.2: 2^14 bytes of plaintext, 2^14 + 256 of ciphertext */
	bool overflow = len > TLS_REC_MAX_PLAINTEXT + (outer == 23u ? 256u : 0u);

	switch (err) {
	case MBEDTLS_ERR_SSL_BAD_INPUT_DATA: /* a key share PSA would not import, or a record
					      * longer than mbedTLS's input buffer */
		return overflow ? 22 /* record_overflow */ : 47;
	case MBEDTLS_ERR_SSL_ILLEGAL_PARAMETER:
		return 47; /* illegal_parameter */
	case MBEDTLS_ERR_SSL_HANDSHAKE_FAILURE:
	case MBEDTLS_ERR_SSL_NO_APPLICATION_PROTOCOL:
		return 40; /* handshake_failure */
	case MBEDTLS_ERR_SSL_DECODE_ERROR:
		return 50; /* decode_error */
	case MBEDTLS_ERR_SSL_INVALID_RECORD:
		if (overflow)
			return 22; /* record_overflow */
		/* decode_error: an empty record, an alert record not of one two-byte alert (5.1, 6) */
		if (len == 0u || outer == 21u ||
		    (ssl->MBEDTLS_PRIVATE(in_msgtype) == 21 && ssl->MBEDTLS_PRIVATE(in_msglen) != 2u))
			return 50;
		/* unexpected_message: a record type unknown or out of place, a ChangeCipherSpec
		 * other than 0x01 (5), a protected record with no non-zero content type (5.4) */
		return 10;
	case MBEDTLS_ERR_SSL_INVALID_MAC:
		/* A plaintext handshake record after the key change is a record type out of place
		 * (5): unexpected_message; a protected one that does not open: bad_record_mac */
		return outer == 22u ? 10 : 20;
	case MBEDTLS_ERR_SSL_UNEXPECTED_MESSAGE:
	case MBEDTLS_ERR_SSL_UNEXPECTED_RECORD:
		return 10; /* unexpected_message */
	case MBEDTLS_ERR_SSL_BAD_PROTOCOL_VERSION:
		return 70; /* protocol_version */
	case MBEDTLS_ERR_SSL_UNSUPPORTED_EXTENSION:
		return 110; /* unsupported_extension */
	case MBEDTLS_ERR_SSL_UNRECOGNIZED_NAME:
		return 112; /* unrecognized_name */
	case MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE:
		return 116; /* certificate_required */
	case MBEDTLS_ERR_SSL_BAD_CERTIFICATE:
		return 42; /* bad_certificate */
	case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE: /* the peer's alert: never answered */
	case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY:
	case MBEDTLS_ERR_SSL_CONN_EOF:
		return ALERT_NONE;
	default:
		return 80; /* internal_error: ours, not the peer's */
	}
}

/* Before mbedTLS reads anything: the first record must be a plaintext handshake or alert
 * record of at most 2^14 bytes (RFC 8446 5.1). mbedTLS reports an oversized one, a record
 * of type zero and an empty alert with errors that name none of them; the alert is decided
 * here. 0, or the alert. */
static uint8_t first_record_alert(const struct tls_hs_env *env, const uint8_t *h, size_t len)
{
	uint16_t rlen = ld_be16(h + 3);
	if (rlen > TLS_REC_MAX_PLAINTEXT)
		return 22; /* record_overflow */
	if (h[0] != 22 && h[0] != 21)
		return 10; /* unexpected_message: ClientHello first (or an alert) */
	if (h[0] == 21 && rlen != 2)
		return 50; /* decode_error: an alert is two bytes */
	/* The ClientHello's own length (in its first record even when it spans several):
	 * over tls.max_client_hello_bytes is illegal_parameter, as OpenSSL answers an excessive
	 * message. */
	if (h[0] == 22 && len >= TLS_REC_HDR_LEN + 4u && h[5] == 1u &&
	    ((uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8]) + 4u > env->cfg.max_client_hello_bytes)
		return 47;
	return 0;
}

/* The key shares of the groups we serve, checked before mbedTLS answers (tls/hello.h):
 * X25519 32 bytes and not all zero (the all-zero point gives an all-zero secret, RFC 7748
 * 6.1); P-256 an uncompressed point on the curve (PSA's import validates it). 0, or the
 * alert: illegal_parameter for a bad share, decode_error for a malformed ClientHello. */
static uint8_t hello_alert(const uint8_t *rec, size_t len)
{
	struct tls_hello_share sh[TLS_HELLO_MAX_SHARES];
	size_t n;
	int rc = tls_hello_key_shares(rec, len, sh, &n);
	if (rc == -E_PROTO)
		return 50; /* decode_error */
	if (rc)
		return 0; /* not a whole ClientHello here: mbedTLS reads it */
	for (size_t i = 0; i < n; i++) {
		if (sh[i].group == 0x001du) { /* x25519 */
			uint8_t any = 0;
			for (size_t k = 0; k < sh[i].len; k++)
				any |= sh[i].key[k];
			if (sh[i].len != 32u || !any)
				return 47;
		} else if (sh[i].group == 0x0017u) { /* secp256r1 */
			psa_key_attributes_t at = PSA_KEY_ATTRIBUTES_INIT;
			mbedtls_svc_key_id_t id = MBEDTLS_SVC_KEY_ID_INIT;
			psa_set_key_type(&at, PSA_KEY_TYPE_ECC_PUBLIC_KEY(PSA_ECC_FAMILY_SECP_R1));
			psa_set_key_bits(&at, 256);
			if (sh[i].len != 65u || sh[i].key[0] != 0x04u ||
			    psa_import_key(&at, sh[i].key, sh[i].len, &id) != PSA_SUCCESS)
				return 47;
			(void)psa_destroy_key(id);
		}
	}
	return 0;
}

/* Refuse with `alert`: written by mbedTLS under the key it is at (plaintext before our
 * ServerHello; after our Finished it is held and sealed again by reseal_alert). */
static void send_refusal_alert(struct tls_hs *hs, uint8_t alert)
{
	uint32_t core = hook_core();
	cur_hs[core] = hs;
	(void)mbedtls_ssl_send_alert_message(&hs->ssl, MBEDTLS_SSL_ALERT_LEVEL_FATAL, alert);
	cur_hs[core] = NULL;
}

int tls_hs_input(struct tls_hs *hs, const uint8_t *buf, size_t len, size_t *consumed)
{
	int ret;

	*consumed = 0;
	if (hs->failed)
		return -E_CLOSED;
	if (hs->done)
		return 1;
	/* Only the connection's first bytes start at a record boundary: a first call with less
	 * than a header leaves the whole first record to mbedTLS. */
	if (!hs->first_checked && len > 0) {
		hs->first_checked = true;
		uint8_t alert = 0;
		if (len >= TLS_REC_HDR_LEN) {
			alert = first_record_alert(hs->env, buf, len);
			if (!alert)
				alert = hello_alert(buf, len);
		}
		if (alert) {
			send_refusal_alert(hs, alert);
			hs->failed = true;
			hs->err = MBEDTLS_ERR_SSL_INVALID_RECORD;
			hs->env->stats.last_mbedtls_err = hs->err;
			return hs->send_failed ? -E_IO : -E_PROTO;
		}
	}
	uint32_t sends_before = hs->n_sends;
	hs->in = buf;
	hs->in_len = len;
	hs->in_pos = 0;
	uint32_t core = hook_core();
	cur_hs[core] = hs;
	ret = mbedtls_ssl_handshake(&hs->ssl);
	cur_hs[core] = NULL;
	*consumed = hs->in_pos;
	hs->in = NULL;
	hs->in_len = hs->in_pos = 0;
	/* A refusal in this call that sent nothing: its alert (RFC 8446 6.2). */
	if (ret != 0 && ret != MBEDTLS_ERR_SSL_WANT_READ && hs->n_sends == sends_before && !hs->send_failed &&
	    alert_for(&hs->ssl, ret) != ALERT_NONE)
		send_refusal_alert(hs, alert_for(&hs->ssl, ret));
	if (hs->held_len)
		reseal_alert(hs, ret);
	if (ret == 0) {
		hs->done = true;
		return 1;
	}
	if (ret == MBEDTLS_ERR_SSL_WANT_READ && !hs->send_failed)
		return 0;
	hs->failed = true;
	hs->err = ret;
	hs->env->stats.last_mbedtls_err = ret;
	return hs->send_failed ? -E_IO : -E_PROTO;
}

static void hs_free(struct tls_hs *hs)
{
	struct tls_hs_env *env = hs->env;
	mbedtls_ssl_free(&hs->ssl); /* frees and zeroizes mbedTLS's buffers and keys */
	env->stats.in_flight--;
	if (hs->failed)
		env->stats.n_failed++;
	hook_free(hs); /* wipes the exported secrets with the rest (invariant 3) */
}

bool tls_hs_resumed(const struct tls_hs *hs)
{
	return hs->resumed;
}

/* The policy asked again as the handshake ends: a revocation or an allowlist removal that
 * reached this core after the certificate (or ticket) was checked still refuses it. NULL
 * when admitted, else the refusal's word, with its alert in *alert. */
static const char *still_admitted(const struct tls_hs *hs, const struct tls_identity *id, uint8_t *alert)
{
	const struct tls_revoke *r = &hs->env->cfg.revoke;
	size_t slen;
	const uint8_t *ser = tls_hs_serial(hs, &slen);
	*alert = 44; /* certificate_revoked */
	if (r->is_revoked && slen && r->is_revoked(r->ctx, ser, slen))
		return "certificate-revoked";
	if (r->is_revoked_id && r->is_revoked_id(r->ctx, id->name, id->len))
		return "certificate-revoked";
	*alert = 49; /* access_denied */
	return id_listed(hs->env, id) ? NULL : "not-registered";
}

int tls_hs_finish(struct tls_hs *hs, struct tls_rec *rec, struct tls_identity *id, const char **refusal)
{
	int rc = -E_PROTO;
	const mbedtls_x509_crt *peer = mbedtls_ssl_get_peer_cert(&hs->ssl);
	int suite = mbedtls_ssl_get_ciphersuite_id_from_ssl(&hs->ssl);
	uint8_t alert;

	if (refusal)
		*refusal = "identity";
	memset(id, 0, sizeof *id);
	memset(rec, 0, sizeof *rec);
	if (!hs->done || !hs->have_c_ap || !hs->have_s_ap || suite <= 0 || suite > (int)UINT16_MAX)
		goto out;
	/* Records sent under the application key so far (NewSessionTicket) set our next
	 * sequence number; the client has sent nothing under its key yet, because the BIO
	 * handed mbedTLS no byte past its Finished. */
	uint64_t tx_seq = ld_be64(hs->ssl.MBEDTLS_PRIVATE(cur_out_ctr));
	if (tls_rec_open(rec, (uint16_t)suite, hs->c_ap, hs->s_ap, 0, tx_seq) != 0)
		goto out;
	/* Invariant 5: REQUIRED authmode already refused missing or unverified chains; check
	 * again so that a configuration mistake fails closed. */
	if (!peer && hs->resumed) {
		/* Resumed with a ticket only we could seal, issued after a verified handshake. */
		*id = hs->resumed_id;
		rc = 0;
		hs->env->stats.n_resumed++;
		goto policy;
	}
	if (!peer || mbedtls_ssl_get_verify_result(&hs->ssl) != 0) {
		tls_rec_abort(rec, 116 /* certificate_required */);
		goto out;
	}
	rc = tls_identity_from_crt(&hs->env->cfg.id, peer, id);
	if (rc) {
		tls_rec_abort(rec, 42 /* bad_certificate */);
		goto out;
	}
	hs->env->stats.n_done++;
policy:;
	const char *why = still_admitted(hs, id, &alert);
	if (why) {
		tls_rec_abort(rec, alert);
		mem_wipe(id, sizeof *id);
		if (refusal)
			*refusal = why;
		rc = -E_PERM;
	}
out:
	if (rc)
		hs->failed = true;
	hs_free(hs);
	return rc;
}

void tls_hs_abort(struct tls_hs *hs)
{
	if (!hs)
		return;
	if (!hs->done)
		hs->failed = true;
	hs_free(hs);
}

int tls_hs_error(const struct tls_hs *hs)
{
	return hs->err;
}

const uint8_t *tls_hs_serial(const struct tls_hs *hs, size_t *len)
{
	const mbedtls_x509_crt *peer = mbedtls_ssl_get_peer_cert(&hs->ssl);
	if (peer) {
		*len = peer->serial.len;
		return peer->serial.p;
	}
	*len = hs->resumed ? hs->serial_len : 0;
	return hs->serial;
}

const char *tls_hs_refusal(const struct tls_hs *hs)
{
	switch (hs->err) {
	case MBEDTLS_ERR_X509_CERT_VERIFY_FAILED: {
		uint32_t f = mbedtls_ssl_get_verify_result(&hs->ssl);
		if (hs->clock_refused)
			return "clock-unsynchronised";
		if (hs->unlisted)
			return "not-registered";
		if (f & MBEDTLS_X509_BADCERT_REVOKED)
			return "certificate-revoked";
		if (f & MBEDTLS_X509_BADCERT_EXPIRED)
			return "certificate-expired";
		if (f & MBEDTLS_X509_BADCERT_FUTURE)
			return "certificate-not-yet-valid";
		if (f & MBEDTLS_X509_BADCERT_NOT_TRUSTED)
			return "unknown-ca";
		if (f & (MBEDTLS_X509_BADCERT_KEY_USAGE | MBEDTLS_X509_BADCERT_EXT_KEY_USAGE))
			return "certificate-usage";
		return "bad-certificate";
	}
	case MBEDTLS_ERR_SSL_NO_CLIENT_CERTIFICATE:
		return "no-certificate";
	case MBEDTLS_ERR_SSL_BAD_PROTOCOL_VERSION:
		return "protocol-version";
	case MBEDTLS_ERR_SSL_HANDSHAKE_FAILURE:
		return "handshake-failure";
	case MBEDTLS_ERR_SSL_INVALID_RECORD:
	case MBEDTLS_ERR_SSL_DECODE_ERROR:
	case MBEDTLS_ERR_SSL_ILLEGAL_PARAMETER:
	case MBEDTLS_ERR_SSL_BAD_INPUT_DATA:
		return "malformed";
	case MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY:
	case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE:
		return "peer-alert";
	default:
		return "handshake";
	}
}
