// SPDX-License-Identifier: MIT
/*
 * micro_dpbench (make bench, benchmark build only): tools/dpbench on the host, one
 * thread: one dp and one mbedTLS client, full TLS 1.3 + mTLS + CONNECT/CONNACK +
 * DISCONNECT cycles per second, client work included (it runs on the same thread). The
 * host build of mbedTLS has no locks for PSA's globals (ADR-026 locks them in the image
 * only), so the scaling over cores is measured inside the guest, where the same module
 * runs one instance per core.
 * usage: micro_dpbench CERTDIR [seconds]. One JSON line per figure ({"micro":...}).
 * The same module runs inside the bench image (tools/dpbench, scenario dpbench).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/node/port.h"
#include "kernel/node/tls_port.h"
#include "lib/err.h"
#include "tools/dpbench/dpbench.h"


/* The data plane's heap: the hosted port's (hosted/node_port.c, which counts what is live)
 * under a generous budget; the handshake env's hooks are the port's as they are. */
static size_t a_used(void *ctx)
{
	(void)ctx;
	uint64_t requested, blocks;
	node_port_heap_totals(&requested, &blocks);
	return (size_t)requested;
}
static size_t a_avail(void *ctx)
{
	(void)ctx;
	return (size_t)1 << 30;
}
static uint64_t d_now_ms(void *ctx)
{
	(void)ctx;
	return node_port_now_ms();
}
static double mono_s(void)
{
	return (double)node_port_now_ns() / 1e9;
}

static uint8_t *load(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static uint8_t bufs[6][8192];
	static int used;
	uint8_t *b = bufs[used++ % 6];
	size_t n = fread(b, 1, sizeof bufs[0] - 1, f);
	fclose(f);
	b[n] = 0;
	*len = n + 1; /* PEM: the NUL counts */
	return b;
}

static struct tls_hs_env *env;
static struct dpb_client_config ccfg;
static double budget = 3.0;

static int trial(void)
{
	struct dp_config g;
	dp_config_from_conf(&g);
	g.hs_env = env;
	const struct tls_hs_ops port = node_tls_port_hs_ops();
	g.heap = (struct dp_heap_ops){ port.alloc, port.free, a_used, a_avail, NULL };
	g.now_ms = d_now_ms;
	size_t need = dpb_mem_size(&g);
	void *mem = need ? aligned_alloc(64, (need + 63) & ~(size_t)63) : NULL;
	struct dpb *b;
	int rc = mem ? dpb_init(&b, mem, need, &g, &ccfg) : -E_NOMEM;
	if (rc) {
		free(mem);
		return fprintf(stderr, "micro_dpbench: init: %s\n", err_name(rc)), 1;
	}
	double t0 = mono_s(), t = t0;
	while (t - t0 < budget) {
		for (int i = 0; i < 16; i++)
			(void)dpb_step(b);
		t = mono_s();
	}
	struct dpb_stats st;
	dpb_stats_get(b, &st);
	dpb_fini(b);
	free(mem);
	if (st.failures)
		fprintf(stderr, "micro_dpbench: %llu failures, last %d\n", (unsigned long long)st.failures,
			st.last_error);
	printf("{\"micro\":\"dpbench\",\"where\":\"host\",\"workers\":1,\"cycles\":%llu,\"failures\":%llu,"
	       "\"handshakes_per_s\":%.1f}\n",
	       (unsigned long long)st.cycles, (unsigned long long)st.failures, (double)st.cycles / (t - t0));
	fflush(stdout);
	return st.cycles ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return fprintf(stderr, "usage: micro_dpbench CERTDIR [seconds]\n"), 2;
	if (argc > 2)
		budget = atof(argv[2]);
	if (budget <= 0 || budget > 60)
		budget = 3.0;
	struct tls_hs_config hc;
	dp_hs_config_from_conf(&hc);
	hc.max_in_flight = 8;
	hc.ops = node_tls_port_hs_ops();
	int rc = tls_hs_env_create(&hc, &env);
	if (rc)
		return fprintf(stderr, "micro_dpbench: env: %s\n", err_name(rc)), 1;
	const char *dir = argv[1];
	ccfg.ca = load(dir, "ca.crt", &ccfg.ca_len);
	ccfg.cert = load(dir, "dev-1.crt", &ccfg.cert_len);
	ccfg.key = load(dir, "dev-1.key", &ccfg.key_len);
	ccfg.client_id = "dev-1";
	ccfg.random = hc.ops.random;
	if (!ccfg.ca || !ccfg.cert || !ccfg.key)
		return fprintf(stderr, "micro_dpbench: certificates in %s\n", dir), 1;
	rc = trial();
	tls_hs_env_destroy(env);
	return rc;
}
