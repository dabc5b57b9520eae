/* SPDX-License-Identifier: MIT
 *
 * The TLS 1.3 server handshake with mandatory client certificates, done by mbedTLS 3.6 on
 * a bounded number of contexts, bytes in from below and out through a callback. When it
 * completes, the application traffic secrets (taken through mbedTLS's key export) start
 * our record layer (tls/record.h), the mbedTLS context is freed and wiped, and the
 * verified client identity is returned. This module owns the mbedTLS configuration, its
 * allocator/clock/entropy hooks and the ticket keys; it never touches sockets, never
 * buffers application data, and never lets a connection continue without a verified
 * certificate chaining to the configured CA.
 *
 * Calling context: core-local. mbedTLS's hooks are process-global and installed once;
 * what they keep per call (the handshake in progress, the accounting env) is per core,
 * indexed by ops.core, so each core may have its own env and handshake concurrently with
 * the others (ADR-026). Envs are created and destroyed on one core while no other core
 * handshakes.
 */
#ifndef TLS_HANDSHAKE_H
#define TLS_HANDSHAKE_H

#include "lib/heap_tag.h"
#include "lib/compiler.h"
#include "tls/identity.h"
#include "tls/record.h"
#include "tls/revoke.h"

struct tls_hs_ops {
	/* Heap with accounting; the handshake's allocations are tagged HEAP_TAG_TLS_HANDSHAKE. */
	void *(*alloc)(void *ctx, size_t len, enum heap_tag tag);
	void (*free)(void *ctx, void *p, size_t len);
	int (*random)(void *ctx, uint8_t *out, size_t len); /* CSPRNG: 0 or -E_* */
	int64_t (*now_s)(void *ctx);                        /* wall clock, Unix seconds */
	int64_t (*now_ms)(void *ctx);                       /* monotonic milliseconds */
	void *ctx;                                          /* linked */
	/* The calling core's index, < TLS_HS_MAX_CORES; NULL: everything runs on one core. */
	uint32_t (*core)(void *ctx);
};

#define TLS_HS_MAX_CORES 64u
#define TLS_HS_TICKET_SECRET_LEN 32u

/* The largest handshake message mbedTLS takes in (MBEDTLS_SSL_IN_CONTENT_LEN). */
#define TLS_HS_MAX_MESSAGE 16384u

struct tls_hs_config {
	uint16_t max_in_flight; /* handshakes at once; more are refused with -E_NOMEM */
	/* Credentials, PEM (NUL-terminated, len counts the NUL) or DER; copied at create. cert
	 * is the server's chain: the leaf first, then any intermediates (PEM blocks, or DER
	 * certificates back to back: tls_crt_chain_parse). */
	const uint8_t *ca;
	size_t ca_len;
	const uint8_t *cert;
	size_t cert_len;
	const uint8_t *key;
	size_t key_len;
	struct tls_id_config id;     /* linked (service prefix string) */
	struct tls_revoke revoke;    /* linked; is_revoked NULL = no revocation list */
	uint32_t ticket_lifetime_s;  /* 0: no resumption tickets */
	/* Ticket keys: the key of period e = floor(now_s / ticket_key_rotate_s) is derived from
	 * ticket_secret and e, so every env given the same secret (one per core) seals and opens
	 * the same tickets, rotating in step without talking; the current and the previous
	 * period's keys are accepted. rotate 0: ticket_lifetime_s. secret NULL: drawn from the
	 * CSPRNG for this env alone. The secret is copied at create (the caller wipes its own)
	 * and wiped at destroy. */
	uint32_t ticket_key_rotate_s;
	const uint8_t *ticket_secret; /* TLS_HS_TICKET_SECRET_LEN bytes, or NULL */
	/* A peer certificate whose validity starts at most this many seconds in the future is
	 * accepted (clocks a little apart); expiry is checked against the clock as it is. */
	uint32_t clock_skew_s;
	/* Whether the clock the validity is checked against may be trusted now (asked once per
	 * client certificate, on the handshake's core); false refuses the certificate with
	 * access_denied (tls_hs_refusal: "clock-unsynchronised"). NULL: always trusted. */
	bool (*clock_trusted)(void *ctx);
	void *clock_ctx; /* linked */
	/* The largest ClientHello (handshake message, header included) and client chain (the
	 * DER bytes of its certificates, added up) accepted; larger ones are refused with
	 * illegal_parameter / access_denied. 0 or over TLS_HS_MAX_MESSAGE: TLS_HS_MAX_MESSAGE. */
	uint32_t max_client_hello_bytes, max_client_chain_bytes;
	uint8_t n_tickets;           /* tickets sent after a full handshake */
	/* RSA allowed (configuration tls.rsa_allowed): RSA credentials and peer chains of
	 * 2048-4096-bit keys, rsa_pss_rsae_sha256 offered besides ecdsa_secp256r1_sha256.
	 * false: RSA credentials make tls_hs_env_create fail with -E_PERM, and a client's
	 * RSA certificate is refused in the handshake. */
	bool rsa;
	struct tls_hs_ops ops;       /* copied */
};

struct tls_hs_stats {
	uint64_t n_started, n_done, n_resumed, n_failed, n_refused;
	uint64_t n_alloc, n_alloc_failed;
	size_t live_bytes, peak_bytes; /* requested bytes of all mbedTLS allocations */
	uint16_t in_flight;
	int last_mbedtls_err; /* for logs (negative mbedTLS code) */
};

struct tls_hs_env;
struct tls_hs;

/* Bytes out, borrowed for the call; must take all of them (0) or fail (negative). */
typedef int (*tls_hs_send_fn)(void *ctx, const uint8_t *p, size_t len);

/* Create the env: install the hooks, parse credentials, set up tickets. *out returned
 * owned: free with tls_hs_env_destroy (after every handshake ended). -E_INVAL for bad
 * credentials, -E_PERM for RSA credentials without cfg.rsa, -E_RANGE for an RSA key
 * outside 2048-4096 bits. */
MUST_CHECK int tls_hs_env_create(const struct tls_hs_config *cfg, struct tls_hs_env **out /* out */);
void tls_hs_env_destroy(struct tls_hs_env *env);
void tls_hs_stats_get(const struct tls_hs_env *env, struct tls_hs_stats *out /* out */);

/* Append the certificates of buf to chain: PEM text (NUL-terminated, len counts the NUL;
 * one or more blocks) or DER certificates back to back (what the image embeds: the leaf,
 * then its intermediates). 0, or -E_PROTO when nothing or not exactly whole certificates
 * parse (a truncated one, trailing bytes). */
struct mbedtls_x509_crt;
MUST_CHECK int tls_crt_chain_parse(struct mbedtls_x509_crt *chain, const uint8_t *buf, size_t len);
/* The number of whole DER certificates back to back in buf (at least 1), or -E_PROTO. */
MUST_CHECK int tls_der_chain_count(const uint8_t *buf, size_t len);

/* Install only mbedTLS's allocator/clock/entropy hooks (tests and fuzzers that parse
 * certificates without an env). ops copied. */
void tls_hs_hooks_install(const struct tls_hs_ops *ops);

/* Start a handshake for a new connection (send/send_ctx linked). -E_NOMEM when
 * max_in_flight are running or memory is short (admission refuses earlier). */
MUST_CHECK int tls_hs_start(struct tls_hs_env *env, tls_hs_send_fn send, void *send_ctx,
			    struct tls_hs **out /* out */);

/* Feed received bytes (borrowed). Returns 0 when more input is needed (all consumed),
 * 1 when the handshake completed (bytes after *consumed belong to the record layer),
 * or a negative error: the handshake failed and its alert has been sent; call
 * tls_hs_abort. */
MUST_CHECK int tls_hs_input(struct tls_hs *hs, const uint8_t *buf, size_t len,
			    size_t *consumed /* out */);

/* After tls_hs_input returned 1: was it a resumption (a ticket of ours accepted)? */
bool tls_hs_resumed(const struct tls_hs *hs);

/* After tls_hs_input returned 1: the client certificate's serial number (DER integer
 * bytes, borrowed from hs until tls_hs_finish; *len 0 when none was seen). */
const uint8_t *tls_hs_serial(const struct tls_hs *hs, size_t *len /* out */);

/* After tls_hs_input returned 1: start rec (the connection's record state) with the
 * traffic secrets, fill id, then free and wipe everything of the handshake (hs is gone
 * whatever the result). The revocation hooks and the allowlist are asked once more (a
 * change that reached this core during the handshake): -E_PERM with *refusal
 * "certificate-revoked" or "not-registered". On failure rec holds a pending fatal alert
 * to flush, and *refusal (when not NULL) says why in one word. */
MUST_CHECK int tls_hs_finish(struct tls_hs *hs, struct tls_rec *rec /* out */, struct tls_identity *id /* out */,
			     const char **refusal /* out, may be NULL */);

/* End a handshake early (failure, timeout, TCP reset): free and wipe it. */
void tls_hs_abort(struct tls_hs *hs);

/* Negative mbedTLS error of a failed handshake (for logs). */
int tls_hs_error(const struct tls_hs *hs);
/* Why a failed handshake was refused, one word for operators' structured logs:
 * "certificate-revoked", "certificate-expired", "certificate-not-yet-valid",
 * "unknown-ca", "certificate-usage", "bad-certificate", "clock-unsynchronised", "not-registered",
 * "no-certificate",
 * "protocol-version", "handshake-failure", "malformed", "peer-alert" or "handshake". */
const char *tls_hs_refusal(const struct tls_hs *hs);

#endif
