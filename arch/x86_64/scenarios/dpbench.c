/* SPDX-License-Identifier: MIT
 *
 * The in-guest data-plane benchmark (scenario test=dpbench, benchmark image only: built
 * with URMQTT_DP_BENCH=1). Every started core runs tools/dpbench on its own: an mbedTLS
 * client with the embedded device certificate dev-1 against that core's own dp, no
 * network, for dpbench_s= seconds (default 10); then core 0 prints each core's complete
 * handshakes (TLS 1.3 + mTLS + CONNECT/CONNACK + DISCONNECT, client work included) per
 * second and the sum, and stops the machine. Owns the per-core bench state; the cores
 * share only the handshake env (ADR-026) and the done counter below.
 */
#include "arch/x86_64/scenarios/dpbench.h"

#include <stdatomic.h>

#include "arch/x86_64/x86.h"
#include "dp/dp.h"
#include "kernel/csprng.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/panic.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "tools/dpbench/dpbench.h"
#include "urmqtt_dpbench_certs.h"

#define DPB_MAX_CORES 64u
#define DPB_HEAP_LIMIT ((size_t)64 << 20) /* per core: handshakes in flight, records, broker */

struct dpb_core {
	struct dpb *b;
	size_t used;
	uint64_t start_ns, end_ns;
	struct dpb_stats st;
	bool done;
};

static struct dpb_core dpb_cores[DPB_MAX_CORES];
static struct tls_hs_env *dpb_env;
static uint32_t dpb_n_cores;
static uint64_t dpb_run_ns;
/* Cores that finished. Each core writes its own dpb_cores[] entry, then increments this
 * with release; core 0 reads the entries only after an acquire load counts them all. */
static _Atomic uint32_t dpb_done;

static struct dpb_core *mine(void)
{
	return &dpb_cores[x86_core_index()];
}

static void *h_alloc(void *ctx, size_t len, enum heap_tag tag)
{
	(void)ctx, (void)tag;
	struct dpb_core *c = mine();
	void *p = NULL;
	if (!len || len > DPB_HEAP_LIMIT - c->used || kheap_alloc(len, HEAP_TAG_OTHER, &p) != 0)
		return NULL;
	c->used += len;
	return p;
}
static void h_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	if (!p)
		return;
	mine()->used -= len;
	kheap_free(p);
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
	return csprng_kernel_bytes(out, len);
}
static int64_t h_now_s(void *ctx)
{
	(void)ctx;
	/* The wall clock, not the RTC: every core calls this, and the RTC's index/data port
	 * pair belongs to core 0's wall-clock handler (arch/x86_64/rtc.c). */
	return (int64_t)(x86_wall_ns() / 1000000000u);
}
static int64_t h_now_ms(void *ctx)
{
	(void)ctx;
	return (int64_t)(x86_now_ns() / 1000000u);
}
static uint64_t d_now_ms(void *ctx)
{
	(void)ctx;
	return x86_now_ns() / 1000000u;
}
static uint32_t h_core(void *ctx)
{
	(void)ctx;
	return x86_core_index();
}

void x86_dpbench_setup(uint32_t n_cores, uint32_t seconds)
{
	dpb_n_cores = n_cores < DPB_MAX_CORES ? n_cores : DPB_MAX_CORES;
	dpb_run_ns = (uint64_t)(seconds ? seconds : 10u) * 1000000000ull;
	struct tls_hs_config hc;
	dp_hs_config_from_conf(&hc);
	hc.ops = (struct tls_hs_ops){ h_alloc, h_free, h_random, h_now_s, h_now_ms, NULL, h_core };
	int rc = tls_hs_env_create(&hc, &dpb_env);
	if (rc)
		kpanic(X86_EXIT_BOOT, "dpbench: handshake env: %s", err_name(rc));
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
	void *mem;
	uint64_t pa;
	if (!need || kheap_pages_alloc((uint32_t)((need + 4095u) / 4096u), 1, &mem, &pa) != 0)
		kpanic(X86_EXIT_BOOT, "dpbench: core %u: no %lu KiB", (unsigned)x86_core_index(),
		       (unsigned long)(need >> 10));
	const struct dpb_client_config cc = {
		.ca = urmqtt_dpb_ca_der, .ca_len = sizeof urmqtt_dpb_ca_der,
		.cert = urmqtt_dpb_client_crt_der, .cert_len = sizeof urmqtt_dpb_client_crt_der,
		.key = urmqtt_dpb_client_key_der, .key_len = sizeof urmqtt_dpb_client_key_der,
		.client_id = URMQTT_DPB_CLIENT_ID, .random = h_random,
	};
	int rc = dpb_init(&c->b, mem, need, &g, &cc);
	if (rc)
		kpanic(X86_EXIT_BOOT, "dpbench: core %u: %s", (unsigned)x86_core_index(), err_name(rc));
	c->start_ns = x86_now_ns();
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
	x86_stop(fails && !total_milli ? X86_EXIT_BOOT : X86_EXIT_BOOT_OK);
}

int x86_dpbench_poll(void *ctx)
{
	(void)ctx;
	uint32_t self = x86_core_index();
	if (self >= dpb_n_cores)
		return 0;
	struct dpb_core *c = &dpb_cores[self];
	if (!c->done) {
		if (!c->b)
			start(c);
		(void)dpb_step(c->b); /* one step per pass: a step may be a whole signature */
		if (x86_now_ns() - c->start_ns >= dpb_run_ns) {
			c->end_ns = x86_now_ns();
			dpb_stats_get(c->b, &c->st);
			c->done = true;
			/* release: this core's entry is complete before it is counted */
			atomic_fetch_add_explicit(&dpb_done, 1, memory_order_release);
		}
		return 1;
	}
	/* acquire: pairs with each core's release above, so its entry is visible */
	if (self == 0 && atomic_load_explicit(&dpb_done, memory_order_acquire) == dpb_n_cores)
		report();
	return 0;
}
