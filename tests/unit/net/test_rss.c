/* SPDX-License-Identifier: MIT
 * Unit tests for net/rss.c: the published RSS verification vectors (IPv4, IPv4 with TCP,
 * and IPv6 for the full 36-byte reach of a 40-byte key), the byte table equal to the
 * bit-serial definition for random keys and inputs, linearity, length rejections,
 * steering configuration validation, even spread of random flows over 2, 3 and 4 workers and
 * rebalancing through the indirection table. The ns-per-hash figures are micro_rss's
 * (`make bench`, tools/bench/micro_rss.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <string.h>

#include "lib/err.h"
#include "net/rss.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

/* The key every RSS verification suite uses. */
static const uint8_t ms_key[RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* Deterministic generator (splitmix64) so every run sees the same "random" data. */
static uint64_t rng_state;
static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static void rng_fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng_next();
}

static uint32_t ref_hash(const uint8_t *key, size_t key_len, const uint8_t *in, size_t n)
{
	uint32_t h = 0;
	assert_int_equal(rss_toeplitz(key, key_len, in, n, &h), 0);
	return h;
}

/* ---- published vectors ---------------------------------------------------------- */

struct v4_vector {
	uint32_t src_ip, dst_ip;
	uint16_t src_port, dst_port;
	uint32_t hash_ip, hash_tcp;
};

/* RSS verification suite, IPv4: source and destination as in the received packet. */
static const struct v4_vector v4_vectors[] = {
	{ IP4(66, 9, 149, 187), IP4(161, 142, 100, 80), 2794, 1766, 0x323e8fc2, 0x51ccc178 },
	{ IP4(199, 92, 111, 2), IP4(65, 69, 140, 83), 14230, 4739, 0xd718262a, 0xc626b0ea },
	{ IP4(24, 19, 198, 95), IP4(12, 22, 207, 184), 12898, 38024, 0xd2d0a5de, 0x5c2b394a },
	{ IP4(38, 27, 205, 30), IP4(209, 142, 163, 6), 48228, 2217, 0x82989176, 0xafc7327f },
	{ IP4(153, 39, 163, 191), IP4(202, 188, 127, 2), 44251, 1303, 0x5d1809c5, 0x10e828a2 },
};

static void test_vectors_ipv4(void **state)
{
	(void)state;
	struct rss_table t;
	assert_int_equal(rss_table_init(&t, ms_key, sizeof ms_key), 0);
	for (size_t i = 0; i < sizeof v4_vectors / sizeof v4_vectors[0]; i++) {
		const struct v4_vector *v = &v4_vectors[i];
		uint8_t in4[RSS_INPUT_V4_TCP_LEN], in2[RSS_INPUT_V4_LEN];
		uint32_t h;

		rss_input_v4_tcp(in4, v->src_ip, v->dst_ip, v->src_port, v->dst_port);
		rss_input_v4(in2, v->src_ip, v->dst_ip);
		/* Network order: the address pair is the first 8 bytes of the 4-tuple input. */
		assert_memory_equal(in4, in2, sizeof in2);
		assert_int_equal(in4[8], v->src_port >> 8);
		assert_int_equal(in4[11], v->dst_port & 0xff);

		assert_int_equal(ref_hash(ms_key, sizeof ms_key, in4, sizeof in4), v->hash_tcp);
		assert_int_equal(ref_hash(ms_key, sizeof ms_key, in2, sizeof in2), v->hash_ip);
		assert_int_equal(rss_table_hash(&t, in4, sizeof in4, &h), 0);
		assert_int_equal(h, v->hash_tcp);
		assert_int_equal(rss_table_hash(&t, in2, sizeof in2, &h), 0);
		assert_int_equal(h, v->hash_ip);
	}
}

struct v6_vector {
	const char *src, *dst;
	uint16_t src_port, dst_port;
	uint32_t hash_ip, hash_tcp;
};

/* RSS verification suite, IPv6: 32- and 36-byte inputs reach the last key bit. */
static const struct v6_vector v6_vectors[] = {
	{ "3ffe:2501:200:1fff::7", "3ffe:2501:200:3::1", 2794, 1766, 0x2cc18cd5, 0x40207d3d },
	{ "3ffe:501:8::260:97ff:fe40:efab", "ff02::1", 14230, 4739, 0x0f0c461c, 0xdde51bbf },
	{ "3ffe:1900:4545:3:200:f8ff:fe21:67cf", "fe80::200:f8ff:fe21:67cf", 44251, 38024,
	  0x4b61e985, 0x02d1feef },
};

static void test_vectors_ipv6(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof v6_vectors / sizeof v6_vectors[0]; i++) {
		const struct v6_vector *v = &v6_vectors[i];
		uint8_t in[36];
		assert_int_equal(inet_pton(AF_INET6, v->src, in), 1);
		assert_int_equal(inet_pton(AF_INET6, v->dst, in + 16), 1);
		in[32] = (uint8_t)(v->src_port >> 8);
		in[33] = (uint8_t)v->src_port;
		in[34] = (uint8_t)(v->dst_port >> 8);
		in[35] = (uint8_t)v->dst_port;
		assert_int_equal(ref_hash(ms_key, sizeof ms_key, in, 32), v->hash_ip);
		assert_int_equal(ref_hash(ms_key, sizeof ms_key, in, 36), v->hash_tcp);
	}
}

/* ---- table against the definition ---------------------------------------------- */

static void test_table_equals_reference(void **state)
{
	(void)state;
	static struct rss_table t;
	uint8_t key[RSS_KEY_LEN], in[RSS_TABLE_BYTES];
	rng_state = 1;
	for (int k = 0; k < 200; k++) {
		/* Key lengths from the shortest accepted (8 + 4) up to 40. */
		size_t key_len = RSS_INPUT_V4_LEN + 4 + (size_t)(rng_next() % 29);
		rng_fill(key, key_len);
		assert_int_equal(rss_table_init(&t, key, key_len), 0);
		size_t covered = key_len - 4 < RSS_TABLE_BYTES ? key_len - 4 : RSS_TABLE_BYTES;
		for (int j = 0; j < 500; j++) {
			size_t n = (size_t)(rng_next() % (covered + 1));
			uint32_t h;
			rng_fill(in, n);
			assert_int_equal(rss_table_hash(&t, in, n, &h), 0);
			assert_int_equal(h, ref_hash(key, key_len, in, n));
		}
	}
	/* Every value of every byte position, against the standard key. */
	assert_int_equal(rss_table_init(&t, ms_key, sizeof ms_key), 0);
	for (size_t pos = 0; pos < RSS_TABLE_BYTES; pos++)
		for (unsigned v = 0; v < 256; v++) {
			uint32_t h;
			memset(in, 0, sizeof in);
			in[pos] = (uint8_t)v;
			assert_int_equal(rss_table_hash(&t, in, sizeof in, &h), 0);
			assert_int_equal(h, ref_hash(ms_key, sizeof ms_key, in, sizeof in));
		}
}

/* The hash is linear over XOR (what makes the byte table possible): h(a^b) = h(a)^h(b),
 * and all-zero input hashes to 0 at every length. */
static void test_linearity(void **state)
{
	(void)state;
	uint8_t a[36], b[36], c[36];
	rng_state = 2;
	for (int i = 0; i < 2000; i++) {
		size_t n = (size_t)(rng_next() % 37);
		rng_fill(a, n);
		rng_fill(b, n);
		for (size_t j = 0; j < n; j++)
			c[j] = a[j] ^ b[j];
		assert_int_equal(ref_hash(ms_key, sizeof ms_key, c, n),
				 ref_hash(ms_key, sizeof ms_key, a, n) ^
					 ref_hash(ms_key, sizeof ms_key, b, n));
	}
	memset(a, 0, sizeof a);
	for (size_t n = 0; n <= 36; n++)
		assert_int_equal(ref_hash(ms_key, sizeof ms_key, a, n), 0);
}

static void test_length_rejections(void **state)
{
	(void)state;
	static struct rss_table t;
	uint8_t in[40] = { 1 };
	uint32_t h = 0xdeadbeef;

	/* The key must cover input_len + 4 bytes. */
	assert_int_equal(rss_toeplitz(ms_key, 40, in, 37, &h), -E_RANGE);
	assert_int_equal(rss_toeplitz(ms_key, 16, in, 13, &h), -E_RANGE);
	assert_int_equal(rss_toeplitz(ms_key, 3, in, 0, &h), -E_RANGE);
	assert_int_equal(rss_toeplitz(ms_key, 0, in, 0, &h), -E_RANGE);
	assert_int_equal(h, 0xdeadbeef); /* untouched on error */
	assert_int_equal(rss_toeplitz(ms_key, 4, in, 0, &h), 0);
	assert_int_equal(h, 0);
	assert_int_equal(rss_toeplitz(ms_key, 16, in, 12, &h), 0);

	/* The table needs a key long enough for an address pair; a short key covers less. */
	assert_int_equal(rss_table_init(&t, ms_key, RSS_INPUT_V4_LEN + 3), -E_RANGE);
	assert_int_equal(rss_table_init(&t, ms_key, RSS_INPUT_V4_LEN + 4), 0);
	assert_int_equal(rss_table_hash(&t, in, RSS_INPUT_V4_LEN + 1, &h), -E_RANGE);
	assert_int_equal(rss_table_hash(&t, in, RSS_INPUT_V4_LEN, &h), 0);
	assert_int_equal(rss_table_init(&t, ms_key, sizeof ms_key), 0);
	assert_int_equal(rss_table_hash(&t, in, RSS_TABLE_BYTES + 1, &h), -E_RANGE);
	assert_int_equal(rss_table_hash(&t, in, RSS_TABLE_BYTES, &h), 0);
}

/* ---- steering ------------------------------------------------------------------- */

static uint16_t indir_mem[RSS_INDIR_MAX];
static struct rss_steer steer;

struct cfg_case {
	const char *name;
	bool key, indir;
	uint32_t n_workers, n_indir;
	int want;
};

static const struct cfg_case cfg_cases[] = {
	{ "one worker, one entry", true, true, 1, 1, 0 },
	{ "2 workers, 128", true, true, 2, 128, 0 },
	{ "3 workers, 4", true, true, 3, 4, 0 },
	{ "4 workers, 4", true, true, 4, 4, 0 },
	{ "largest table", true, true, 64, RSS_INDIR_MAX, 0 },
	{ "no key", false, true, 2, 128, -E_INVAL },
	{ "no indirection array", true, false, 2, 128, -E_INVAL },
	{ "no workers", true, true, 0, 128, -E_RANGE },
	{ "no entries", true, true, 1, 0, -E_RANGE },
	{ "entries not a power of two", true, true, 2, 96, -E_RANGE },
	{ "entries not a power of two (3)", true, true, 3, 3, -E_RANGE },
	{ "fewer entries than workers", true, true, 8, 4, -E_RANGE },
	{ "table too large", true, true, 2, RSS_INDIR_MAX * 2, -E_RANGE },
	{ "table far too large", true, true, 2, 0x80000000u, -E_RANGE },
	{ "workers beyond 16 bits", true, true, RSS_WORKERS_MAX + 1, RSS_INDIR_MAX, -E_RANGE },
};

static void test_config_validation(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof cfg_cases / sizeof cfg_cases[0]; i++) {
		const struct cfg_case *c = &cfg_cases[i];
		struct rss_config cfg = {
			.key = c->key ? ms_key : NULL,
			.indir = c->indir ? indir_mem : NULL,
			.n_workers = c->n_workers,
			.n_indir = c->n_indir,
		};
		int got = rss_steer_init(&steer, &cfg);
		if (got != c->want)
			fail_msg("case '%s': got %d, want %d", c->name, got, c->want);
		if (got == 0) {
			assert_true(rss_steer_check_invariants(&steer));
			/* Round-robin fill: every worker has entries, at most one apart. */
			for (uint32_t e = 0; e < c->n_indir; e++)
				assert_int_equal(indir_mem[e], e % c->n_workers);
		} else {
			assert_false(rss_steer_check_invariants(&steer));
		}
	}
}

static void init_steer(uint32_t n_workers, uint32_t n_indir, const uint8_t *key)
{
	struct rss_config cfg = {
		.key = key, .indir = indir_mem, .n_workers = n_workers, .n_indir = n_indir
	};
	assert_int_equal(rss_steer_init(&steer, &cfg), 0);
	assert_true(rss_steer_check_invariants(&steer));
}

/* Software steering equals the device's: indirection entry (hash & mask) of the RSS
 * hash, for the 4-tuple, the address pair and a reported hash. */
static void test_steer_matches_hash(void **state)
{
	(void)state;
	init_steer(4, 128, ms_key);
	for (size_t i = 0; i < sizeof v4_vectors / sizeof v4_vectors[0]; i++) {
		const struct v4_vector *v = &v4_vectors[i];
		assert_int_equal(rss_steer_flow(&steer, v->src_ip, v->dst_ip, v->src_port,
						v->dst_port),
				 indir_mem[v->hash_tcp & 127]);
		assert_int_equal(rss_steer_ipv4(&steer, v->src_ip, v->dst_ip),
				 indir_mem[v->hash_ip & 127]);
		assert_int_equal(rss_steer_hash(&steer, v->hash_tcp), (v->hash_tcp & 127) % 4);
	}
	rng_state = 3;
	for (int i = 0; i < 5000; i++) {
		uint32_t sip = (uint32_t)rng_next(), dip = (uint32_t)rng_next();
		uint16_t sp = (uint16_t)rng_next(), dp = (uint16_t)rng_next();
		uint8_t in[RSS_INPUT_V4_TCP_LEN];
		rss_input_v4_tcp(in, sip, dip, sp, dp);
		uint32_t h = ref_hash(ms_key, sizeof ms_key, in, sizeof in);
		assert_int_equal(rss_steer_flow(&steer, sip, dip, sp, dp), indir_mem[h & 127]);
		h = ref_hash(ms_key, sizeof ms_key, in, RSS_INPUT_V4_LEN);
		assert_int_equal(rss_steer_ipv4(&steer, sip, dip), indir_mem[h & 127]);
	}
}

/* 10,000 flows to one server address and port land within 5 % of each worker's share
 * of the indirection table. Two flow populations: random clients, and one client (one
 * NAT) opening sequential ports. Each under the standard key and a random key (as the
 * CSPRNG would give). The generator is seeded, so the counts are the same every run (the
 * largest deviation, 4.9 %, is 2.8 binomial standard deviations for 4 workers). */
static void check_spread(uint32_t n_workers, uint32_t n_indir, const uint8_t *key,
			 bool one_client)
{
	enum { N_FLOWS = 10000 };
	uint32_t count[8] = { 0 };
	const uint32_t server = IP4(10, 0, 2, 15);
	init_steer(n_workers, n_indir, key);
	for (uint32_t i = 0; i < N_FLOWS; i++) {
		uint32_t client = one_client ? IP4(192, 0, 2, 7) : (uint32_t)rng_next();
		uint16_t port = one_client ? (uint16_t)(32768 + i) : (uint16_t)rng_next();
		uint32_t w = rss_steer_flow(&steer, client, server, port, 8883);
		assert_true(w < n_workers);
		count[w]++;
	}
	for (uint32_t w = 0; w < n_workers; w++) {
		/* A worker's fair share is its share of indirection entries. */
		uint32_t entries = 0;
		for (uint32_t e = 0; e < n_indir; e++)
			entries += indir_mem[e] == w;
		double even = (double)N_FLOWS * entries / n_indir;
		double dev = ((double)count[w] - even) / even;
		print_message("  %u workers, %u entries, %s, %s key: worker %u got %u (%+.2f%%)\n",
			      n_workers, n_indir, one_client ? "one client" : "random clients",
			      key == ms_key ? "standard" : "random", w, count[w], dev * 100);
		if (dev > 0.05 || dev < -0.05)
			fail_msg("worker %u got %u of %u flows", w, count[w], N_FLOWS);
	}
}

static void test_steer_distribution(void **state)
{
	(void)state;
	uint8_t key[RSS_KEY_LEN];
	rng_state = 4;
	rng_fill(key, sizeof key);
	for (int one = 0; one < 2; one++) {
		check_spread(2, 128, ms_key, one);
		check_spread(4, 128, ms_key, one);
		check_spread(2, 128, key, one);
		check_spread(4, 128, key, one);
		/* Three workers over 128 entries: the table itself is 43/43/42. */
		check_spread(3, 128, key, one);
	}
}

static void test_set_entry(void **state)
{
	(void)state;
	init_steer(4, 64, ms_key);
	/* Drain worker 3: its entries go to worker 0. */
	for (uint32_t i = 0; i < 64; i++)
		if (indir_mem[i] == 3)
			assert_int_equal(rss_steer_set_entry(&steer, i, 0), 0);
	assert_true(rss_steer_check_invariants(&steer));
	rng_state = 5;
	for (int i = 0; i < 2000; i++)
		assert_int_not_equal(rss_steer_flow(&steer, (uint32_t)rng_next(),
						    IP4(10, 0, 2, 15), (uint16_t)rng_next(), 8883),
				     3);
	assert_int_equal(rss_steer_set_entry(&steer, 64, 0), -E_RANGE);
	assert_int_equal(rss_steer_set_entry(&steer, 0, 4), -E_RANGE);
	assert_int_equal(rss_steer_set_entry(&steer, UINT32_MAX, UINT32_MAX), -E_RANGE);
	assert_true(rss_steer_check_invariants(&steer));
	/* A corrupted entry or table is caught by the invariant check. */
	indir_mem[5] = 4;
	assert_false(rss_steer_check_invariants(&steer));
	indir_mem[5] = 0;
	steer.table.win[3][0x10] ^= 1;
	assert_false(rss_steer_check_invariants(&steer));
	steer.table.win[3][0x10] ^= 1;
	assert_true(rss_steer_check_invariants(&steer));
}

/* A device's shorter indirection table: the first n entries refilled round-robin, the
 * hash masked to them, the key untouched; never grown, never below the workers. */
static void test_shrink(void **state)
{
	(void)state;
	uint32_t n;
	init_steer(3, 1024, ms_key);
	assert_int_equal(rss_steer_shrink(&steer, 2048), -E_RANGE);
	assert_int_equal(rss_steer_shrink(&steer, 96), -E_RANGE);
	assert_int_equal(rss_steer_shrink(&steer, 2), -E_RANGE);
	assert_int_equal(rss_steer_shrink(&steer, 0), -E_RANGE);
	assert_int_equal(rss_steer_shrink(&steer, 128), 0);
	assert_true(rss_steer_check_invariants(&steer));
	assert_ptr_equal(rss_steer_indir(&steer, &n), indir_mem);
	assert_int_equal(n, 128);
	for (uint32_t e = 0; e < 128; e++)
		assert_int_equal(indir_mem[e], e % 3);
	for (size_t i = 0; i < sizeof v4_vectors / sizeof v4_vectors[0]; i++) {
		const struct v4_vector *v = &v4_vectors[i];
		assert_int_equal(rss_steer_flow(&steer, v->src_ip, v->dst_ip, v->src_port, v->dst_port),
				 (v->hash_tcp & 127) % 3);
	}
	assert_int_equal(rss_steer_shrink(&steer, 256), -E_RANGE); /* no growing back */
	assert_int_equal(rss_steer_shrink(&steer, 4), 0);
	assert_true(rss_steer_check_invariants(&steer));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors_ipv4),
		cmocka_unit_test(test_vectors_ipv6),
		cmocka_unit_test(test_table_equals_reference),
		cmocka_unit_test(test_linearity),
		cmocka_unit_test(test_length_rejections),
		cmocka_unit_test(test_config_validation),
		cmocka_unit_test(test_steer_matches_hash),
		cmocka_unit_test(test_steer_distribution),
		cmocka_unit_test(test_set_entry),
		cmocka_unit_test(test_shrink),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
