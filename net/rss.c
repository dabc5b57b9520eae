/* SPDX-License-Identifier: MIT
 *
 * The Toeplitz hash (bit-serial reference and byte-table form), the RSS IPv4 input
 * layouts and flow steering through an indirection table; see net/rss.h for the
 * contracts and the steering object's design note. Written from the RSS definition
 * (Microsoft's "RSS hashing functions" and the virtio-net RSS section). Must never read
 * packet bytes, allocate, or keep pointers other than the caller's indirection array.
 */
#include "net/rss.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"

STATIC_ASSERT(RSS_TABLE_BYTES + 4 <= RSS_KEY_LEN, "a steering key covers the table");
STATIC_ASSERT(RSS_WORKERS_MAX <= UINT16_MAX, "indirection entries are 16-bit");

int rss_toeplitz(const uint8_t *key, size_t key_len, const uint8_t *input, size_t input_len,
		 uint32_t *hash)
{
	if (key_len < 4 || input_len > key_len - 4)
		return -E_RANGE;
	/* `win` is the 32 key bits starting at the current input bit; after each input bit
	 * it slides one bit left and takes in the next key bit. */
	uint32_t win = ld_be32(key);
	uint32_t result = 0;
	size_t next = 32; /* index, in bits, of the next key bit to shift in */
	for (size_t i = 0; i < input_len; i++) {
		for (unsigned b = 0; b < 8; b++, next++) {
			if ((input[i] >> (7 - b)) & 1u)
				result ^= win;
			uint32_t kbit = (uint32_t)(key[next / 8] >> (7 - next % 8)) & 1u;
			win = win << 1 | kbit;
		}
	}
	*hash = result;
	return 0;
}

/* The 32 key bits starting at bit `bit`; the key holds at least bit / 8 + 5 bytes. */
static uint32_t key_window(const uint8_t *key, size_t bit)
{
	const uint8_t *k = key + bit / 8;
	uint64_t forty = (uint64_t)ld_be32(k) << 8 | k[4];
	return (uint32_t)(forty >> (8 - bit % 8));
}

int rss_table_init(struct rss_table *t, const uint8_t *key, size_t key_len)
{
	if (key_len < RSS_INPUT_V4_LEN + 4)
		return -E_RANGE;
	size_t n = MIN(key_len - 4, (size_t)RSS_TABLE_BYTES);
	memset(t, 0, sizeof *t);
	t->n_bytes = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		uint32_t *w = t->win[i];
		/* Single bits first (value 1 << (7 - b) is input bit 8i + b), then every other
		 * value as its lowest set bit XOR the rest, which is already filled. */
		for (unsigned b = 0; b < 8; b++)
			w[1u << (7 - b)] = key_window(key, 8 * i + b);
		for (unsigned v = 1; v < 256; v++) {
			unsigned low = v & (0u - v);
			if (v != low)
				w[v] = w[low] ^ w[v ^ low];
		}
	}
	return 0;
}

/* The table hash without the length check: n <= t->n_bytes, known by the caller. */
static uint32_t table_hash(const struct rss_table *t, const uint8_t *in, size_t n)
{
	uint32_t h = 0;
	for (size_t i = 0; i < n; i++)
		h ^= t->win[i][in[i]];
	return h;
}

int rss_table_hash(const struct rss_table *t, const uint8_t *input, size_t input_len,
		   uint32_t *hash)
{
	if (input_len > t->n_bytes)
		return -E_RANGE;
	*hash = table_hash(t, input, input_len);
	return 0;
}

void rss_input_v4_tcp(uint8_t out[RSS_INPUT_V4_TCP_LEN], uint32_t src_ip, uint32_t dst_ip,
		      uint16_t src_port, uint16_t dst_port)
{
	st_be32(out, src_ip);
	st_be32(out + 4, dst_ip);
	st_be16(out + 8, src_port);
	st_be16(out + 10, dst_port);
}

void rss_input_v4(uint8_t out[RSS_INPUT_V4_LEN], uint32_t src_ip, uint32_t dst_ip)
{
	st_be32(out, src_ip);
	st_be32(out + 4, dst_ip);
}

int rss_steer_init(struct rss_steer *s, const struct rss_config *cfg)
{
	int err;

	memset(s, 0, sizeof *s);
	if (!cfg->key || !cfg->indir)
		return -E_INVAL;
	if (cfg->n_workers == 0 || cfg->n_workers > RSS_WORKERS_MAX)
		return -E_RANGE;
	if (cfg->n_indir < cfg->n_workers || cfg->n_indir > RSS_INDIR_MAX ||
	    (cfg->n_indir & (cfg->n_indir - 1)) != 0)
		return -E_RANGE;
	memcpy(s->key, cfg->key, RSS_KEY_LEN);
	err = rss_table_init(&s->table, s->key, RSS_KEY_LEN);
	if (err)
		goto fail;
	s->indir = cfg->indir;
	s->n_indir = cfg->n_indir;
	s->n_workers = cfg->n_workers;
	s->mask = cfg->n_indir - 1;
	for (uint32_t i = 0; i < s->n_indir; i++)
		s->indir[i] = (uint16_t)(i % s->n_workers);
	return 0;
fail:
	memset(s, 0, sizeof *s);
	return err;
}

uint32_t rss_steer_hash(const struct rss_steer *s, uint32_t hash)
{
	return s->indir[hash & s->mask];
}

uint32_t rss_steer_flow(const struct rss_steer *s, uint32_t src_ip, uint32_t dst_ip,
			uint16_t src_port, uint16_t dst_port)
{
	uint8_t in[RSS_INPUT_V4_TCP_LEN];
	rss_input_v4_tcp(in, src_ip, dst_ip, src_port, dst_port);
	return rss_steer_hash(s, table_hash(&s->table, in, sizeof in));
}

uint32_t rss_steer_ipv4(const struct rss_steer *s, uint32_t src_ip, uint32_t dst_ip)
{
	uint8_t in[RSS_INPUT_V4_LEN];
	rss_input_v4(in, src_ip, dst_ip);
	return rss_steer_hash(s, table_hash(&s->table, in, sizeof in));
}

int rss_steer_set_entry(struct rss_steer *s, uint32_t idx, uint32_t worker)
{
	if (idx >= s->n_indir || worker >= s->n_workers)
		return -E_RANGE;
	s->indir[idx] = (uint16_t)worker;
	return 0;
}

int rss_steer_shrink(struct rss_steer *s, uint32_t n_indir)
{
	if (n_indir < s->n_workers || n_indir > s->n_indir || (n_indir & (n_indir - 1)) != 0)
		return -E_RANGE;
	s->n_indir = n_indir;
	s->mask = n_indir - 1;
	for (uint32_t i = 0; i < n_indir; i++)
		s->indir[i] = (uint16_t)(i % s->n_workers);
	return 0;
}

const uint16_t *rss_steer_indir(const struct rss_steer *s, uint32_t *n_indir)
{
	*n_indir = s->n_indir;
	return s->indir;
}

bool rss_steer_check_invariants(const struct rss_steer *s)
{
	/* 1 */
	if (!s->indir || s->n_workers == 0 || s->n_workers > RSS_WORKERS_MAX ||
	    s->n_indir < s->n_workers || s->n_indir > RSS_INDIR_MAX ||
	    (s->n_indir & s->mask) != 0 || s->mask != s->n_indir - 1)
		return false;
	/* 2 */
	for (uint32_t i = 0; i < s->n_indir; i++)
		if (s->indir[i] >= s->n_workers)
			return false;
	/* 3: every single-bit entry is the key window it stands for (the other entries
	 * are XORs of these, checked by the unit tests against the reference). */
	if (s->table.n_bytes != RSS_TABLE_BYTES)
		return false;
	for (size_t i = 0; i < RSS_TABLE_BYTES; i++)
		for (unsigned b = 0; b < 8; b++)
			if (s->table.win[i][1u << (7 - b)] != key_window(s->key, 8 * i + b))
				return false;
	return true;
}
