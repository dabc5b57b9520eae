/* SPDX-License-Identifier: MIT
 *
 * Our TLS 1.3 record layer (RFC 8446 section 5), which carries a connection after the
 * mbedTLS handshake has been freed. It owns the per-direction traffic secret and sequence
 * number of one connection and nothing else at idle; keys and IVs are expanded from the
 * secret with HKDF-Expand-Label, and kept for busy connections only in a bounded per-core
 * cache the env owns (caller memory, wiped on eviction, KeyUpdate and close; ADR-014).
 * It decrypts in place in the caller's
 * receive buffer, encrypts into the caller's send buffer, and keeps a reassembly buffer
 * only while a record is incomplete. It never touches sockets or TCP, never allocates
 * except the reassembly buffer (through the env's ops), and never trusts a length it has
 * not checked against the configured maximum.
 *
 * Calling context: core-local. One env per core (stats, allocator), one tls_rec per
 * connection; nothing here is shared between cores.
 */
#ifndef TLS_RECORD_H
#define TLS_RECORD_H

#include "lib/compiler.h"

#define TLS_REC_HDR_LEN 5u
#define TLS_REC_TAG_LEN 16u
#define TLS_REC_SECRET_LEN 32u       /* both suites use SHA-256 */
#define TLS_REC_MAX_PLAINTEXT 16384u /* 2^14, RFC 8446 5.1 */
/* Bytes a record adds to its content: header, inner content type, AEAD tag. */
#define TLS_REC_OVERHEAD (TLS_REC_HDR_LEN + 1u + TLS_REC_TAG_LEN)

/* Cipher suites (IANA values). */
#define TLS_SUITE_AES_128_GCM_SHA256 0x1301u
#define TLS_SUITE_CHACHA20_POLY1305_SHA256 0x1303u

/* TLS content types and the alerts this layer sends or reports. */
#define TLS_CT_ALERT 21u
#define TLS_CT_HANDSHAKE 22u
#define TLS_CT_APPDATA 23u
#define TLS_ALERT_CLOSE_NOTIFY 0u
#define TLS_ALERT_UNEXPECTED_MESSAGE 10u
#define TLS_ALERT_BAD_RECORD_MAC 20u
#define TLS_ALERT_RECORD_OVERFLOW 22u
#define TLS_ALERT_CERTIFICATE_REVOKED 44u
#define TLS_ALERT_ILLEGAL_PARAMETER 47u
#define TLS_ALERT_DECODE_ERROR 50u
#define TLS_ALERT_INTERNAL_ERROR 80u

/* Rejection sites, counted in tls_rec_env.rejected[]. */
enum tls_rec_reject {
	TLS_REC_REJ_OUTER_TYPE,   /* outer type not application_data */
	TLS_REC_REJ_TOO_LONG,     /* ciphertext length above the maximum */
	TLS_REC_REJ_TOO_SHORT,    /* shorter than type byte + tag */
	TLS_REC_REJ_BAD_TAG,      /* AEAD authentication failed */
	TLS_REC_REJ_NO_TYPE,      /* all-zero plaintext: no inner content type */
	TLS_REC_REJ_PLAIN_LONG,   /* plaintext above the maximum */
	TLS_REC_REJ_INNER_TYPE,   /* inner type not data/alert/handshake */
	TLS_REC_REJ_EMPTY,        /* empty alert or handshake record */
	TLS_REC_REJ_ALERT_LEN,    /* alert record not exactly 2 bytes */
	TLS_REC_REJ_HS_MSG,       /* post-handshake message other than KeyUpdate */
	TLS_REC_REJ_KEY_UPDATE,   /* malformed KeyUpdate */
	TLS_REC_REJ_SEQ,          /* sequence number exhausted */
	TLS_REC_REJ_NOMEM,        /* reassembly buffer refused */
	TLS_REC_REJ_AFTER_CLOSE,  /* bytes after close_notify or failure */
	TLS_REC_REJ_SINK,         /* the data consumer refused (its error is returned) */
	TLS_REC_REJ__COUNT
};

struct tls_rec_ops {
	/* Reassembly buffer; may return NULL (exhaustion). len <= max ciphertext. */
	void *(*alloc)(void *ctx, size_t len);
	void (*free)(void *ctx, void *p, size_t len);
	void *ctx; /* linked */
};

struct tls_rec_dir {
	uint8_t secret[TLS_REC_SECRET_LEN];
	uint64_t seq;
};

/* One entry of the per-core key cache: the AEAD key and static IV expanded from one
 * direction's traffic secret. Fields are private; the struct is public only so the caller
 * can provide the array (tls_rec_config.key_cache). A hit needs the same direction, suite
 * and secret (compared in full), so an entry can never yield a key for another secret. */
struct tls_rec_key_slot {
	const struct tls_rec_dir *owner; /* NULL: empty */
	uint8_t secret[TLS_REC_SECRET_LEN];
	uint8_t key[32];
	uint8_t iv[12];
	uint16_t suite;
};

struct tls_rec_config {
	uint16_t max_plaintext;     /* 1..16384: larger records are refused (record_overflow) */
	uint64_t key_update_after;  /* send our own KeyUpdate after this many records (>0) */
	struct tls_rec_ops ops;
	/* Key cache: key_cache_slots entries of caller memory (linked, wiped by init and
	 * tls_rec_env_fini), direct-mapped by direction. 0 slots: derive for every record. */
	struct tls_rec_key_slot *key_cache;
	uint32_t key_cache_slots;
};

/* Per-core environment: configuration, statistics. */
struct tls_rec_env {
	struct tls_rec_config cfg;
	uint64_t rejected[TLS_REC_REJ__COUNT];
	uint64_t n_rec_in, n_rec_out, n_key_updates_in, n_key_updates_out, n_reasm;
	/* Received bytes copied before decryption (a split header into the struct, a split
	 * record's body into the reassembly buffer); 0 while every record arrives whole. */
	uint64_t n_copied_in;
	/* Key cache: records served from it, derivations (misses), entries of another
	 * direction replaced, entries wiped by KeyUpdate or close. */
	uint64_t n_key_hits, n_key_misses, n_key_evictions, n_key_wipes;
};

/* One connection's record state. Fields are private; the struct is public only so the
 * connection can embed it (its size is the per-connection cost: tls_rec_sizeof()). */
struct tls_rec {
	struct tls_rec_dir rx, tx;
	uint8_t *reasm;      /* owned: body of an incomplete record, NULL at idle */
	uint16_t reasm_have; /* body bytes in reasm */
	uint16_t suite;
	uint8_t hdr[TLS_REC_HDR_LEN]; /* header of the incomplete record */
	uint8_t hdr_have;
	uint8_t flags;
	uint8_t alert; /* alert to send (fatal) or that the peer sent */
};

/* Plaintext application data, borrowed for the call (it points into the caller's receive
 * buffer or the reassembly buffer). Return 0, or a negative error to stop input. */
typedef int (*tls_rec_data_fn)(void *ctx, const uint8_t *data, size_t len);

MUST_CHECK int tls_rec_env_init(struct tls_rec_env *env, const struct tls_rec_config *cfg);
/* Wipe the key cache (every connection of the env must be closed first). */
void tls_rec_env_fini(struct tls_rec_env *env);

/* Start the record layer of one connection with the application traffic secrets (copied)
 * and the next sequence numbers (the handshake may already have sent records, e.g.
 * NewSessionTicket). suite is one of TLS_SUITE_*. */
MUST_CHECK int tls_rec_open(struct tls_rec *r, uint16_t suite, const uint8_t *rx_secret,
			    const uint8_t *tx_secret, uint64_t rx_seq, uint64_t tx_seq);

/* Release the reassembly buffer, wipe the secrets and this connection's key cache
 * entries. Always safe, also after failure. */
void tls_rec_close(struct tls_rec_env *env, struct tls_rec *r);

/* Feed received bytes (borrowed, modified: records are decrypted in place). Every complete
 * application-data record is handed to on_data in order; KeyUpdate and alerts are handled
 * here. Returns 0 when all bytes were taken (an incomplete record is kept), -E_CLOSED once
 * the peer sent close_notify or an alert, or a negative error after which the engine has
 * failed and tls_rec_flush() yields the fatal alert to send. */
MUST_CHECK int tls_rec_input(struct tls_rec_env *env, struct tls_rec *r, uint8_t *buf, size_t len,
			     tls_rec_data_fn on_data, void *ctx);

/* Encrypt application data into out (borrowed; in may lie inside out: it is moved into
 * place first), split into records of at most max_plaintext bytes and preceded by any
 * pending KeyUpdate. in may also be out + TLS_REC_HDR_LEN. *out_len = bytes written. -E_OVERFLOW if cap is too small (nothing
 * is consumed: need tls_rec_wire_len() bytes); -E_CLOSED after close or failure. */
MUST_CHECK int tls_rec_write(struct tls_rec_env *env, struct tls_rec *r, const uint8_t *in,
			     size_t len, uint8_t *out, size_t cap, size_t *out_len /* out */);

/* Bytes tls_rec_write() needs for len bytes of content now (including a pending KeyUpdate). */
size_t tls_rec_wire_len(const struct tls_rec_env *env, const struct tls_rec *r, size_t len);

/* True when control records (KeyUpdate, alert, close_notify) wait for tls_rec_flush(). */
bool tls_rec_want_flush(const struct tls_rec *r);
/* Write pending control records into out. After a fatal alert or our close_notify the
 * write side is closed. Needs at most 2 * (TLS_REC_OVERHEAD + 5) bytes. */
MUST_CHECK int tls_rec_flush(struct tls_rec_env *env, struct tls_rec *r, uint8_t *out, size_t cap,
			     size_t *out_len /* out */);

/* Ask for a KeyUpdate of our sending keys (request_peer: ask the peer to update too). */
void tls_rec_key_update(struct tls_rec *r, bool request_peer);
/* Fail the connection with a fatal alert (e.g. access refused after the handshake);
 * tls_rec_flush() then yields the alert record. */
void tls_rec_abort(struct tls_rec *r, uint8_t alert);
/* Queue close_notify; tls_rec_write() fails afterwards. */
void tls_rec_shutdown(struct tls_rec *r);

/* State queries. */
bool tls_rec_peer_closed(const struct tls_rec *r);
bool tls_rec_failed(const struct tls_rec *r);
uint8_t tls_rec_alert(const struct tls_rec *r); /* alert sent (fatal) or received */
size_t tls_rec_sizeof(void);
/* Key cache entries held by r now (0..2); for tests. */
uint32_t tls_rec_key_cached(const struct tls_rec_env *env, const struct tls_rec *r);
/* Design-note invariants 1-2 (record.c) hold; for tests and fuzzers. */
bool tls_rec_check_invariants(const struct tls_rec_env *env, const struct tls_rec *r);

/* HKDF-Expand-Label (RFC 8446 7.1) with SHA-256 for outputs up to 32 bytes; exposed for
 * tests and for the ticket module. label without the "tls13 " prefix. */
MUST_CHECK int tls_rec_expand_label(const uint8_t *secret, const char *label, const uint8_t *context,
				    size_t context_len, uint8_t *out, size_t out_len);

#endif
