/* SPDX-License-Identifier: MIT
 *
 * The kernel's cryptographically secure random generator: a ChaCha20-based DRBG with
 * fast key erasure (each refill of the output buffer also produces the next key, and
 * every byte handed out or used as a key is wiped at once, so a later compromise of the
 * state cannot reveal earlier output). ChaCha20 is the block function of RFC 8439,
 * section 2.3. Seeded from a platform entropy source (RDSEED/RDRAND on x86_64 through
 * the arch entropy hook; virtio-rng later through csprng_reseed). One instance per core,
 * each touched only by its own core. Portable; never outputs a byte before it was seeded,
 * never allocates.
 *
 * Design note (struct csprng):
 *  1. `seeded` is false until entropy of CSPRNG_SEED_LEN bytes was mixed in; while it is
 *     false csprng_generate() fails and the buffer holds no key material.
 *  2. buf[0..pos) is always zero (consumed or used as a key); buf[pos..) is unread
 *     keystream of the current key generation, never output twice.
 *  3. A reseed mixes the seed into the key through the block function and discards the
 *     buffered keystream (pos = CSPRNG_BUF_LEN), so nothing derived from the old key
 *     alone is output after it.
 *  States: UNSEEDED --csprng_init (entropy ok) / csprng_reseed--> SEEDED;
 *          SEEDED --generate--> SEEDED (refill: new key), --reseed--> SEEDED.
 */
#ifndef KERNEL_CSPRNG_H
#define KERNEL_CSPRNG_H

#include "lib/compiler.h"

#define CSPRNG_KEY_LEN 32u
#define CSPRNG_BLOCK_LEN 64u
#define CSPRNG_BUF_LEN (4u * CSPRNG_BLOCK_LEN) /* one refill: the first 32 bytes are the next key */
#define CSPRNG_SEED_LEN 48u                     /* entropy taken at init (384 bits) */
#define CSPRNG_MAX_CORES 64u

/* ChaCha20 block function (RFC 8439 2.3): 64 bytes of keystream for key, counter and
 * nonce. All pointers borrowed. Exposed for the test vectors. */
void csprng_chacha20_block(const uint8_t key[CSPRNG_KEY_LEN], uint32_t counter,
			   const uint8_t nonce[12], uint8_t out[CSPRNG_BLOCK_LEN] /* out */);
/* ChaCha20 encryption (RFC 8439 2.4): XOR the keystream starting at block `counter` into
 * buf[0..len) in place. For tests; the record layer has its own AEAD. */
void csprng_chacha20_xor(const uint8_t key[CSPRNG_KEY_LEN], uint32_t counter,
			 const uint8_t nonce[12], uint8_t *buf, size_t len);

/* A platform entropy source. get() fills buf[0..len) with full-entropy bytes and returns
 * 0, or a negative -E_* (source absent or exhausted) leaving buf unspecified. */
struct csprng_entropy {
	void *ctx;                                      /* linked */
	int (*get)(void *ctx, uint8_t *buf, size_t len); /* NULL: no source */
	const char *name;                               /* linked: for the banner */
};

struct csprng_config {
	struct csprng_entropy entropy;
	uint64_t reseed_bytes; /* reseed from the source after this much output; 0: never */
};

struct csprng_stats {
	uint64_t n_bytes;        /* bytes generated */
	uint64_t n_refills;      /* key generations */
	uint64_t n_reseeds;      /* seeds mixed in (init included) */
	uint64_t n_reseed_fail;  /* automatic reseeds the source refused (state kept) */
};

/* One generator; fields private to csprng.c (here so callers can own it). */
struct csprng {
	uint8_t key[CSPRNG_KEY_LEN];
	uint8_t buf[CSPRNG_BUF_LEN];
	uint32_t pos;
	bool seeded;
	uint64_t since_reseed;
	struct csprng_config cfg;
	struct csprng_stats st;
};

/* Initialise r and seed it with CSPRNG_SEED_LEN bytes from cfg->entropy. cfg borrowed
 * (copied). Returns 0, or -E_NOENT when there is no source or it fails (r is then wiped
 * and unseeded: it refuses to generate until csprng_reseed()). */
int csprng_init(struct csprng *r, const struct csprng_config *cfg) MUST_CHECK;

/* Mix seed[0..len) (borrowed; e.g. from virtio-rng) into r. A seed shorter than
 * CSPRNG_SEED_LEN is mixed in but does not make an unseeded generator seeded. 0 or
 * -E_INVAL (NULL with len > 0). */
int csprng_reseed(struct csprng *r, const void *seed, size_t len) MUST_CHECK;

/* Fill out[0..len) with random bytes. 0, or -E_CLOSED if r was never seeded (out then
 * zeroed). Same-core only. */
int csprng_generate(struct csprng *r, void *out /* out */, size_t len) MUST_CHECK;

void csprng_stats_get(const struct csprng *r, struct csprng_stats *out /* out */);
/* Wipe every secret of r; it is unseeded afterwards. */
void csprng_wipe(struct csprng *r);

/* ---- the kernel's per-core instances ---- */

/* Initialise and seed n_cores instances (one per core) from cfg->entropy, on the boot
 * core before the others start. core_index is linked (the calling core's index).
 * 0, -E_INVAL (n_cores 0 or above CSPRNG_MAX_CORES) or -E_NOENT (no entropy source:
 * the caller must stop the boot, never run with predictable keys). */
int csprng_kernel_init(const struct csprng_config *cfg, uint32_t n_cores,
		       uint32_t (*core_index)(void)) MUST_CHECK;
/* Random bytes from the calling core's instance: 0 or -E_CLOSED (not initialised). */
int csprng_kernel_bytes(void *out /* out */, size_t len) MUST_CHECK;
/* Mix seed into the calling core's instance (virtio-rng, later). */
int csprng_kernel_reseed(const void *seed, size_t len) MUST_CHECK;
/* Name of the entropy source the kernel instances were seeded from, or NULL. */
const char *csprng_kernel_source(void);

#endif
