// SPDX-License-Identifier: MIT
/*
 * micro_rss (make bench): the cost of steering a received IPv4/TCP flow in software
 * (net/rss.h), per 12-byte RSS input: the bit-serial Toeplitz reference (rss_toeplitz),
 * the precomputed table (rss_table_hash) and the whole steering call (rss_steer_flow: input
 * layout, table hash, indirection entry). Nanoseconds of one core's CPU time per call,
 * over inputs that vary in their port bytes. Moved here from the unit test (a unit test
 * asserts behaviour; tests/unit/net/test_rss.c shows the three agree).
 * One JSON line on stdout ({"micro":"rss_hash",...}). Host benchmark (hostrel); never
 * linked into the image; bounded by a CPU-time budget per figure (argv[1], seconds).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "net/rss.h"

#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))

/* The key every RSS verification suite uses. */
static const uint8_t ms_key[RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static uint16_t indir[128];
static struct rss_steer steer;
static struct rss_table table;
static volatile uint32_t sink;

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum which { REF, TABLE, STEER };

/* ns per call of one kind, over batches of 4096 calls until the budget is spent. */
static double ns_per_call(enum which w, double budget, uint64_t *calls /* out */)
{
	uint8_t in[RSS_INPUT_V4_TCP_LEN];
	uint32_t acc = 0, h = 0;
	uint64_t n = 0;
	rss_input_v4_tcp(in, IP4(192, 0, 2, 7), IP4(10, 0, 2, 15), 40000, 8883);
	double t0 = cpu_s(), t = t0;
	do {
		for (uint32_t i = 0; i < 4096; i++) {
			uint16_t port = (uint16_t)(n + i);
			in[8] = (uint8_t)(port >> 8);
			in[9] = (uint8_t)port;
			switch (w) {
			case REF:
				if (rss_toeplitz(ms_key, sizeof ms_key, in, sizeof in, &h) != 0)
					exit(1);
				break;
			case TABLE:
				if (rss_table_hash(&table, in, sizeof in, &h) != 0)
					exit(1);
				break;
			case STEER:
				h = rss_steer_flow(&steer, IP4(192, 0, 2, 7), IP4(10, 0, 2, 15), port, 8883);
				break;
			}
			acc ^= h;
		}
		n += 4096;
		t = cpu_s();
	} while (t - t0 < budget);
	sink = acc;
	*calls = n;
	return (t - t0) / (double)n * 1e9;
}

int main(int argc, char **argv)
{
	double budget = argc > 1 ? atof(argv[1]) : 1.0;
	if (budget <= 0 || budget > 30)
		budget = 1.0;
	struct rss_config cfg = { .key = ms_key, .n_workers = 4, .n_indir = 128, .indir = indir };
	if (rss_table_init(&table, ms_key, sizeof ms_key) != 0 || rss_steer_init(&steer, &cfg) != 0) {
		fprintf(stderr, "micro_rss: init failed\n");
		return 1;
	}
	uint64_t n_ref, n_table, n_steer;
	double ref = ns_per_call(REF, budget / 2, &n_ref);
	double tab = ns_per_call(TABLE, budget / 2, &n_table);
	double st = ns_per_call(STEER, budget / 2, &n_steer);
	printf("{\"micro\":\"rss_hash\",\"input_bytes\":%d,\"ns_per_hash_bitserial\":%.1f,"
	       "\"ns_per_hash_table\":%.1f,\"ns_per_steer_flow\":%.1f,\"calls_bitserial\":%llu,"
	       "\"calls_table\":%llu,\"calls_steer\":%llu}\n",
	       RSS_INPUT_V4_TCP_LEN, ref, tab, st, (unsigned long long)n_ref,
	       (unsigned long long)n_table, (unsigned long long)n_steer);
	return 0;
}
