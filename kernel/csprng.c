/* SPDX-License-Identifier: MIT
 *
 * ChaCha20 fast-key-erasure DRBG (kernel/csprng.h), written from RFC 8439 section 2
 * (quarter round, block function, encryption). Owns the kernel's per-core instances.
 * Never outputs keystream of a key that is still in use as the key, never leaves a
 * consumed byte in memory (mem_wipe, which the compiler cannot drop), never allocates.
 */
#include "kernel/csprng.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"

/* "expand 32-byte k" as four little-endian words (RFC 8439 2.3). */
#define CC_C0 0x61707865u
#define CC_C1 0x3320646eu
#define CC_C2 0x79622d32u
#define CC_C3 0x6b206574u

static inline uint32_t cc_rotl(uint32_t v, unsigned n)
{
	return (v << n) | (v >> (32u - n));
}

#define CC_QR(a, b, c, d)                \
	do {                             \
		a += b;                  \
		d = cc_rotl(d ^ a, 16);  \
		c += d;                  \
		b = cc_rotl(b ^ c, 12);  \
		a += b;                  \
		d = cc_rotl(d ^ a, 8);   \
		c += d;                  \
		b = cc_rotl(b ^ c, 7);   \
	} while (0)

void csprng_chacha20_block(const uint8_t key[CSPRNG_KEY_LEN], uint32_t counter, const uint8_t nonce[12],
			   uint8_t out[CSPRNG_BLOCK_LEN])
{
	uint32_t in[16], x[16];
	in[0] = CC_C0;
	in[1] = CC_C1;
	in[2] = CC_C2;
	in[3] = CC_C3;
	for (size_t i = 0; i < 8; i++)
		in[4 + i] = ld_le32(key + 4 * i);
	in[12] = counter;
	for (size_t i = 0; i < 3; i++)
		in[13 + i] = ld_le32(nonce + 4 * i);
	for (unsigned i = 0; i < 16; i++)
		x[i] = in[i];
	for (unsigned r = 0; r < 10; r++) { /* 20 rounds: column round, then diagonal round */
		CC_QR(x[0], x[4], x[8], x[12]);
		CC_QR(x[1], x[5], x[9], x[13]);
		CC_QR(x[2], x[6], x[10], x[14]);
		CC_QR(x[3], x[7], x[11], x[15]);
		CC_QR(x[0], x[5], x[10], x[15]);
		CC_QR(x[1], x[6], x[11], x[12]);
		CC_QR(x[2], x[7], x[8], x[13]);
		CC_QR(x[3], x[4], x[9], x[14]);
	}
	for (size_t i = 0; i < 16; i++)
		st_le32(out + 4 * i, x[i] + in[i]);
	mem_wipe(x, sizeof x);
	mem_wipe(in, sizeof in);
}

void csprng_chacha20_xor(const uint8_t key[CSPRNG_KEY_LEN], uint32_t counter, const uint8_t nonce[12],
			 uint8_t *buf, size_t len)
{
	uint8_t ks[CSPRNG_BLOCK_LEN];
	for (size_t off = 0; off < len; off += CSPRNG_BLOCK_LEN) {
		csprng_chacha20_block(key, counter++, nonce, ks);
		size_t n = MIN((size_t)CSPRNG_BLOCK_LEN, len - off);
		for (size_t i = 0; i < n; i++)
			buf[off + i] ^= ks[i];
	}
	mem_wipe(ks, sizeof ks);
}

/* ---- the DRBG ---- */

static const uint8_t csprng_nonce_out[12] = { 'u', 'r', 'M', 'Q', 'T', 'T', '-', 'o', 'u', 't', 0, 0 };
static const uint8_t csprng_nonce_mix[12] = { 'u', 'r', 'M', 'Q', 'T', 'T', '-', 'm', 'i', 'x', 0, 0 };

/* Invariant 2: a new key generation; the first 32 bytes become the key and are wiped. */
static void csprng_refill(struct csprng *r)
{
	for (uint32_t b = 0; b < CSPRNG_BUF_LEN / CSPRNG_BLOCK_LEN; b++)
		csprng_chacha20_block(r->key, b, csprng_nonce_out, r->buf + (size_t)b * CSPRNG_BLOCK_LEN);
	memcpy(r->key, r->buf, CSPRNG_KEY_LEN);
	mem_wipe(r->buf, CSPRNG_KEY_LEN);
	r->pos = CSPRNG_KEY_LEN;
	r->st.n_refills++;
}

/* Invariant 3: key = first half of ChaCha20(key ^ chunk, counter = chunk index). If
 * either the old key or the seed is unknown to an attacker, so is the new key. */
static void csprng_mix(struct csprng *r, const uint8_t *seed, size_t len)
{
	uint8_t k[CSPRNG_KEY_LEN], blk[CSPRNG_BLOCK_LEN];
	uint32_t idx = 0;
	size_t off = 0;
	do {
		memcpy(k, r->key, sizeof k);
		size_t n = MIN((size_t)CSPRNG_KEY_LEN, len - off);
		for (size_t i = 0; i < n; i++)
			k[i] ^= seed[off + i];
		/* the length goes into the last chunk's counter: "ab" + "" and "a" + "b" differ */
		uint32_t ctr = off + n == len ? idx | 0x80000000u | (uint32_t)(len & 0x7fffu) << 16 : idx;
		csprng_chacha20_block(k, ctr, csprng_nonce_mix, blk);
		memcpy(r->key, blk, CSPRNG_KEY_LEN);
		off += n;
		idx++;
	} while (off < len);
	mem_wipe(k, sizeof k);
	mem_wipe(blk, sizeof blk);
	mem_wipe(r->buf, sizeof r->buf);
	r->pos = CSPRNG_BUF_LEN;
	r->since_reseed = 0;
	r->st.n_reseeds++;
}

void csprng_wipe(struct csprng *r)
{
	mem_wipe(r->key, sizeof r->key);
	mem_wipe(r->buf, sizeof r->buf);
	r->pos = CSPRNG_BUF_LEN;
	r->seeded = false;
}

int csprng_init(struct csprng *r, const struct csprng_config *cfg)
{
	uint8_t seed[CSPRNG_SEED_LEN];
	memset(r, 0, sizeof *r);
	r->cfg = *cfg;
	csprng_wipe(r);
	if (!cfg->entropy.get || cfg->entropy.get(cfg->entropy.ctx, seed, sizeof seed) != 0) {
		mem_wipe(seed, sizeof seed);
		return -E_NOENT;
	}
	csprng_mix(r, seed, sizeof seed);
	mem_wipe(seed, sizeof seed);
	r->seeded = true;
	return 0;
}

int csprng_reseed(struct csprng *r, const void *seed, size_t len)
{
	if (!seed && len)
		return -E_INVAL;
	if (len == 0)
		return 0;
	csprng_mix(r, seed, len);
	if (len >= CSPRNG_SEED_LEN)
		r->seeded = true;
	return 0;
}

static void csprng_auto_reseed(struct csprng *r)
{
	uint8_t seed[CSPRNG_KEY_LEN];
	if (r->cfg.entropy.get && r->cfg.entropy.get(r->cfg.entropy.ctx, seed, sizeof seed) == 0)
		csprng_mix(r, seed, sizeof seed);
	else
		r->st.n_reseed_fail++; /* keep going on the current key: still unpredictable */
	r->since_reseed = 0;
	mem_wipe(seed, sizeof seed);
}

int csprng_generate(struct csprng *r, void *out, size_t len)
{
	uint8_t *o = out;
	if (!r->seeded) {
		if (len)
			memset(out, 0, len);
		return -E_CLOSED;
	}
	if (r->cfg.reseed_bytes && r->since_reseed >= r->cfg.reseed_bytes)
		csprng_auto_reseed(r);
	while (len) {
		if (r->pos == CSPRNG_BUF_LEN)
			csprng_refill(r);
		size_t n = MIN(len, (size_t)(CSPRNG_BUF_LEN - r->pos));
		memcpy(o, r->buf + r->pos, n);
		mem_wipe(r->buf + r->pos, n);
		r->pos += (uint32_t)n;
		o += n;
		len -= n;
		r->st.n_bytes += n;
		r->since_reseed += n;
	}
	return 0;
}

void csprng_stats_get(const struct csprng *r, struct csprng_stats *out)
{
	*out = r->st;
}

/* ---- per-core kernel instances ---- */

static struct csprng csprng_cores[CSPRNG_MAX_CORES];
static uint32_t csprng_n_cores;
static uint32_t (*csprng_core_index)(void);
static const char *csprng_source;

int csprng_kernel_init(const struct csprng_config *cfg, uint32_t n_cores, uint32_t (*core_index)(void))
{
	csprng_n_cores = 0;
	csprng_source = NULL;
	if (n_cores == 0 || n_cores > CSPRNG_MAX_CORES || !core_index)
		return -E_INVAL;
	for (uint32_t i = 0; i < n_cores; i++) {
		int err = csprng_init(&csprng_cores[i], cfg);
		if (err) {
			for (uint32_t j = 0; j <= i; j++)
				csprng_wipe(&csprng_cores[j]);
			return err;
		}
	}
	csprng_core_index = core_index;
	csprng_source = cfg->entropy.name;
	csprng_n_cores = n_cores;
	return 0;
}

static struct csprng *csprng_self(void)
{
	if (!csprng_n_cores)
		return NULL;
	uint32_t i = csprng_core_index();
	return i < csprng_n_cores ? &csprng_cores[i] : NULL;
}

int csprng_kernel_bytes(void *out, size_t len)
{
	struct csprng *r = csprng_self();
	if (!r) {
		if (len)
			memset(out, 0, len);
		return -E_CLOSED;
	}
	return csprng_generate(r, out, len);
}

int csprng_kernel_reseed(const void *seed, size_t len)
{
	struct csprng *r = csprng_self();
	return r ? csprng_reseed(r, seed, len) : -E_CLOSED;
}

const char *csprng_kernel_source(void)
{
	return csprng_source;
}
