/* SPDX-License-Identifier: MIT
 *
 * The in-guest data-plane benchmark (scenario test=dpbench, benchmark images only: built
 * with URMQTT_DP_BENCH=1), portable over the platform port (kernel/node/port.h) and the
 * same on x86_64 and aarch64. Every started core runs tools/dpbench on its own: an mbedTLS
 * client with the embedded device certificate dev-1 against that core's own dp, no
 * network, for dpbench_s= seconds (default 10); then core 0 prints each core's complete
 * handshakes (TLS 1.3 + mTLS + CONNECT/CONNACK + DISCONNECT, client work included) per
 * second and the sum, and stops the machine through the platform's hook. Owns the per-core
 * bench state; the cores share only the handshake env (ADR-026) and the done counter
 * below. Never linked into a broker image.
 */
#include "tools/dpbench/guest.h"

#include <stdatomic.h>

#include "dp/dp.h"
#include "kernel/cmdline.h"
#include "kernel/log.h"
#include "kernel/node/port.h"
#include "kernel/node/tls_port.h"
#include "kernel/panic.h"
#include "lib/err.h"
#include "tools/dpbench/dpbench.h"
#include "urmqtt_dpbench_certs.h"

#define DPB_MAX_CORES 64u
#define DPB_HEAP_LIMIT ((size_t)64 << 20) /* per core: handshakes in flight, records, broker */
#define DPB_DEFAULT_S 10u
#define DPB_MAX_S 3600u

struct dpb_core {
	struct dpb *b;
	size_t used;
	uint64_t start_ns, end_ns;
	struct dpb_stats st;
	bool done;
};

static struct dpb_core dpb_cores[DPB_MAX_CORES];
static struct tls_hs_env *dpb_env;
static const struct dpb_guest_ops *dpb_ops;
static uint32_t dpb_n_cores;
static uint64_t dpb_run_ns;
static bool dpb_reported; /* core 0's only */
/* Cores that finished. Each core writes its own dpb_cores[] entry, then increments this
 * with release; core 0 reads the entries only after an acquire load counts them all. */
static _Atomic uint32_t dpb_done;

static struct dpb_core *mine(void)
{
	return &dpb_cores[node_port_core_self()];
}

/* The heap of the handshake env and of this core's dp: the platform's, under a per-core
 * budget. */
static void *h_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx, (void)tag;
	struct dpb_core *c = mine();
	if (!len || len > DPB_HEAP_LIMIT - c->used)
		return NULL;
	void *p = node_port_alloc(len, HEAP_TAG_OTHER);
	if (p)
		c->used += len;
	return p;
}
static void h_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	if (!p)
		return;
	mine()->used -= len;
	node_port_free(p, len);
}
static size_t h_used(void *ctx)
{
	(void)ctx;
	return mine()->used;
}
static size_t h_avail(void *ctx)
{
	(void)ctx;
	return DPB_HEAP_LIMIT - mine()->used;
}
static int h_random(void *ctx, uint8_t *out, size_t len)
{
	(void)ctx;
	return node_port_random(out, len);
}
static uint64_t d_now_ms(void *ctx)
{
	(void)ctx;
	return node_port_now_ms();
}

/* dpbench_s=N: decimal seconds; anything else (absent, empty, not a number) the default. */
static uint32_t run_seconds(const char *cmdline, size_t len)
{
	char secs[8] = "";
	uint32_t s = 0;
	if (cmdline && cmdline_get(cmdline, len, "dpbench_s", secs, sizeof secs) == 0)
		for (const char *p = secs; *p >= '0' && *p <= '9' && s < DPB_MAX_S; p++)
			s = s * 10u + (uint32_t)(*p - '0');
	return s ? (s < DPB_MAX_S ? s : DPB_MAX_S) : DPB_DEFAULT_S;
}

void dpb_guest_setup(const char *cmdline, size_t cmdline_len, uint32_t n_cores, const struct dpb_guest_ops *ops)
{
	dpb_ops = ops;
	dpb_n_cores = n_cores < DPB_MAX_CORES ? n_cores : DPB_MAX_CORES;
	dpb_run_ns = (uint64_t)run_seconds(cmdline, cmdline_len) * 1000000000ull;
	struct tls_hs_config hc;
	dp_hs_config_from_conf(&hc);
	/* The port's clocks (the wall clock, never an RTC's ports: every core calls them),
	 * CSPRNG and core index; the heap under this bench's per-core budget. */
	hc.ops = node_tls_port_hs_ops();
	hc.ops.alloc = h_alloc;
	hc.ops.free = h_free;
	int rc = tls_hs_env_create(&hc, &dpb_env);
	if (rc)
		kpanic(ops->fail_code, "dpbench: handshake env: %s", err_name(rc));
	LOG_INFO("test", "scenario dpbench: %u cores, %u s each, client dev-1 against each core's own dp",
		 (unsigned)dpb_n_cores, (unsigned)(dpb_run_ns / 1000000000ull));
}

static void start(struct dpb_core *c)
{
	struct dp_config g;
	dp_config_from_conf(&g);
	g.hs_env = dpb_env;
	g.heap = (struct dp_heap_ops){ h_alloc, h_free, h_used, h_avail, NULL };
	g.now_ms = d_now_ms;
	size_t need = dpb_mem_size(&g);
	size_t got = 0;
	void *mem = need ? node_port_region(need, &got) : NULL;
	if (!mem)
		kpanic(dpb_ops->fail_code, "dpbench: core %u: no %lu KiB", (unsigned)node_port_core_self(),
		       (unsigned long)(need >> 10));
	const struct dpb_client_config cc = {
		.ca = urmqtt_dpb_ca_der, .ca_len = sizeof urmqtt_dpb_ca_der,
		.cert = urmqtt_dpb_client_crt_der, .cert_len = sizeof urmqtt_dpb_client_crt_der,
		.key = urmqtt_dpb_client_key_der, .key_len = sizeof urmqtt_dpb_client_key_der,
		.client_id = URMQTT_DPB_CLIENT_ID, .random = h_random,
	};
	int rc = dpb_init(&c->b, mem, need, &g, &cc);
	if (rc)
		kpanic(dpb_ops->fail_code, "dpbench: core %u: %s", (unsigned)node_port_core_self(), err_name(rc));
	c->start_ns = node_port_now_ns();
}

static void report(void)
{
	uint64_t total_milli = 0, fails = 0;
	for (uint32_t i = 0; i < dpb_n_cores; i++) {
		const struct dpb_core *c = &dpb_cores[i];
		uint64_t ms = (c->end_ns - c->start_ns) / 1000000u;
		uint64_t milli = ms ? c->st.cycles * 1000000u / ms : 0; /* handshakes/s x 1000 */
		total_milli += milli;
		fails += c->st.failures;
		LOG_INFO("test", "dpbench core %u: %lu handshakes in %lu ms = %lu.%03lu/s, %lu failures (last %d)",
			 (unsigned)i, (unsigned long)c->st.cycles, (unsigned long)ms,
			 (unsigned long)(milli / 1000u), (unsigned long)(milli % 1000u),
			 (unsigned long)c->st.failures, c->st.last_error);
	}
	LOG_INFO("test", "dpbench: workers=%u handshakes_per_s=%lu.%03lu failures=%lu",
		 (unsigned)dpb_n_cores, (unsigned long)(total_milli / 1000u),
		 (unsigned long)(total_milli % 1000u), (unsigned long)fails);
	dpb_reported = true;
	dpb_ops->stop(!(fails && !total_milli));
}

int dpb_guest_poll(void *ctx)
{
	(void)ctx;
	uint32_t self = node_port_core_self();
	if (self >= dpb_n_cores)
		return 0;
	struct dpb_core *c = &dpb_cores[self];
	if (!c->done) {
		if (!c->b)
			start(c);
		(void)dpb_step(c->b); /* one step per pass: a step may be a whole signature */
		if (node_port_now_ns() - c->start_ns >= dpb_run_ns) {
			c->end_ns = node_port_now_ns();
			dpb_stats_get(c->b, &c->st);
			c->done = true;
			/* release: this core's entry is complete before it is counted */
			atomic_fetch_add_explicit(&dpb_done, 1, memory_order_release);
		}
		return 1;
	}
	/* acquire: pairs with each core's release above, so its entry is visible */
	if (self == 0 && !dpb_reported && atomic_load_explicit(&dpb_done, memory_order_acquire) == dpb_n_cores)
		report();
	return 0;
}
