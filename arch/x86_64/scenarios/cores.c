/* SPDX-License-Identifier: MIT
 *
 * Scenarios of every core at once (development images only: arch/x86_64/scenarios/):
 * test=heap (allocation and free across cores, counters back to the baseline),
 * test=oneshot (per-core one-shot timers), test=xcore (the core mesh, all to all). Each
 * owns its own state, set up on the boot core before the other cores start and then
 * touched by each core for its own slot; the orderings are said where they are used.
 */
#include "arch/x86_64/scenarios/scenarios.h"
#include "arch/x86_64/x86.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/panic.h"
#include "kernel/xcore.h"
#include "lib/err.h"
#include "lib/mem.h"

/* ---- test=heap: allocation and free across cores, counters back to baseline ----
 * Each core allocates SH_BLOCKS blocks of mixed sizes and tags (small classes and whole
 * pages), frees the even ones itself, then frees its right neighbour's odd ones (remote
 * frees); once every core has freed, each core trims its cache (taking back the remote
 * frees) and the boot core compares the counters with the baseline taken before any AP
 * started. Stage flags are published with release and read with acquire, so a core sees
 * its neighbour's block pointers and contents before it frees them. */
#define SH_BLOCKS 48u
static const uint32_t sh_sizes[] = { 16, 24, 40, 100, 250, 512, 1000, 2048, 2100, 6000, 33, 17 };
struct sh_core {
	void *blk[SH_BLOCKS];
	uint32_t stage;
};
static struct sh_core sh_cores[PLAT_MAX_CPUS];
static _Atomic uint32_t sh_handed[PLAT_MAX_CPUS];
static _Atomic uint32_t sh_n_freed, sh_n_done;
static uint32_t sh_n_cores;
static struct heap_snapshot sh_base;
static struct pages_stats sh_pbase;

void x86_scenario_heap_setup(uint32_t n_cores)
{
	sh_n_cores = n_cores;
	/* Boot-time users (devices, the TLS self-test) may leave empty slabs cached: release
	 * them so the baseline is what the verdict's trim will come back to. */
	kheap_trim();
	kheap_snapshot(&sh_base);
	kheap_pages_stats(&sh_pbase);
}

static uint8_t sh_pattern(uint32_t core, uint32_t i)
{
	return (uint8_t)(0x5a ^ core ^ (i << 3));
}

static void sh_fill_check(void *p, size_t len, uint8_t v, bool check)
{
	uint8_t *b = p;
	for (size_t i = 0; i < len; i++) {
		if (check ? b[i] != v : b[i] != 0)
			PANIC("heap scenario: block content wrong at byte %u", (unsigned)i);
		if (!check)
			b[i] = v;
	}
}

static void sh_verdict(void)
{
	struct heap_snapshot s;
	struct pages_stats ps;
	kheap_snapshot(&s);
	kheap_pages_stats(&ps);
	LOG_INFO("test", "heap: %lu allocs, %lu frees (%lu remote) on %u cores; live %lu -> %lu, "
			 "requested %lu -> %lu B, blocks %lu -> %lu B, pages held %lu -> %lu, frames used %lu -> %lu",
		 (unsigned long)(s.n_allocs - sh_base.n_allocs), (unsigned long)(s.n_frees - sh_base.n_frees),
		 (unsigned long)(s.n_remote_frees - sh_base.n_remote_frees), (unsigned)sh_n_cores,
		 (unsigned long)sh_base.n_live, (unsigned long)s.n_live,
		 (unsigned long)sh_base.requested_bytes, (unsigned long)s.requested_bytes,
		 (unsigned long)sh_base.block_bytes, (unsigned long)s.block_bytes,
		 (unsigned long)sh_base.pages_held, (unsigned long)s.pages_held,
		 (unsigned long)sh_pbase.n_used, (unsigned long)ps.n_used);
	bool ok = s.n_live == sh_base.n_live && s.requested_bytes == sh_base.requested_bytes &&
		  s.block_bytes == sh_base.block_bytes && s.pages_held == sh_base.pages_held &&
		  ps.n_used == sh_pbase.n_used && s.n_double_free == 0 && s.n_foreign_free == 0 &&
		  s.n_corrupt == 0 && s.n_allocs - sh_base.n_allocs == (uint64_t)sh_n_cores * SH_BLOCKS;
	for (unsigned t = 0; t < HEAP_TAG__COUNT; t++)
		ok = ok && s.tag[t].n_live == sh_base.tag[t].n_live;
	if (!ok)
		PANIC("heap scenario: counters did not return to the baseline");
	LOG_INFO("test", "scenario heap: counters back to baseline on every core");
	x86_stop(X86_EXIT_BOOT_OK);
}

int x86_scenario_heap_poll(void *ctx)
{
	(void)ctx;
	uint32_t me = x86_core_self()->index;
	struct sh_core *c = &sh_cores[me];
	uint32_t right = (me + 1) % sh_n_cores;
	switch (c->stage) {
	case 0:
		for (uint32_t i = 0; i < SH_BLOCKS; i++) {
			size_t len = sh_sizes[i % ARRAY_LEN(sh_sizes)];
			if (kheap_alloc(len, (enum heap_tag)(i % HEAP_TAG__COUNT), &c->blk[i]) != 0)
				PANIC("heap scenario: core %u: allocation failed", (unsigned)me);
			sh_fill_check(c->blk[i], len, sh_pattern(me, i), false);
		}
		for (uint32_t i = 0; i < SH_BLOCKS; i += 2) {
			kheap_free(c->blk[i]);
			c->blk[i] = NULL;
		}
		/* Release: the odd blocks' pointers and contents before the flag. */
		atomic_store_explicit(&sh_handed[me], 1, memory_order_release);
		c->stage = 1;
		return 1;
	case 1:
		if (!atomic_load_explicit(&sh_handed[right], memory_order_acquire))
			return 0;
		for (uint32_t i = 1; i < SH_BLOCKS; i += 2) {
			struct sh_core *r = &sh_cores[right];
			sh_fill_check(r->blk[i], sh_sizes[i % ARRAY_LEN(sh_sizes)], sh_pattern(right, i), true);
			kheap_free(r->blk[i]);
		}
		/* Release: our remote frees are queued before the count says so. */
		atomic_fetch_add_explicit(&sh_n_freed, 1, memory_order_release);
		c->stage = 2;
		return 1;
	case 2:
		/* Acquire: every remote free to this core is queued once all cores counted. */
		if (atomic_load_explicit(&sh_n_freed, memory_order_acquire) != sh_n_cores)
			return 0;
		kheap_trim();
		atomic_fetch_add_explicit(&sh_n_done, 1, memory_order_release);
		c->stage = 3;
		return 1;
	default:
		if (me == 0 && atomic_load_explicit(&sh_n_done, memory_order_acquire) == sh_n_cores)
			sh_verdict();
		return 0;
	}
}

/* ---- test=oneshot: per-core one-shot timers ----
 * Every core arms its one-shot timer OS_SHOTS times for staggered deadlines 1..6 ms
 * ahead, idles (hlt) until it fires, and records how late it fired; early is a failure.
 * The boot core reports the mode and the worst lateness once every core is done. */
#define OS_SHOTS 8u
#define OS_EARLY_SLACK_NS 1000 /* ns <-> TSC rounding only */
#define OS_LATE_MAX_NS 100000000 /* TCG on a loaded host is slow; KVM is far below */
struct os_core {
	uint32_t n;
	bool armed;
	uint64_t deadline;
	int64_t max_late_ns;
};
static struct os_core os_cores[PLAT_MAX_CPUS];
static _Atomic uint32_t os_n_done;
static uint32_t os_n_cores;

void x86_scenario_oneshot_setup(uint32_t n_cores)
{
	os_n_cores = n_cores;
}

int x86_scenario_oneshot_poll(void *ctx)
{
	(void)ctx;
	uint32_t me = x86_core_self()->index;
	struct os_core *c = &os_cores[me];
	if (c->n == OS_SHOTS) {
		/* Acquire: every core's max_late_ns is visible once it counted itself done. */
		if (me != 0 || atomic_load_explicit(&os_n_done, memory_order_acquire) != os_n_cores)
			return 0;
		int64_t worst = 0;
		for (uint32_t i = 0; i < os_n_cores; i++)
			worst = MAX(worst, os_cores[i].max_late_ns);
		LOG_INFO("test", "one-shot timers (%s): %u per core on %u cores, none early, worst %ld us late",
			 x86_timer_mode(), (unsigned)OS_SHOTS, (unsigned)os_n_cores, (long)(worst / 1000));
		if (worst > OS_LATE_MAX_NS)
			PANIC("one-shot timer %ld ms late", (long)(worst / 1000000));
		LOG_INFO("test", "scenario oneshot: every core's timer fired on time");
		x86_stop(X86_EXIT_BOOT_OK);
	}
	if (!c->armed) {
		c->deadline = x86_now_ns() + 1000000u + 600000u * c->n + 100000u * me;
		c->armed = true;
		x86_timer_arm_ns(c->deadline);
		return 1;
	}
	if (!x86_timer_take_fired())
		return 0; /* idle until the interrupt */
	int64_t late = (int64_t)(x86_now_ns() - c->deadline);
	if (late < -OS_EARLY_SLACK_NS)
		PANIC("one-shot timer on core %u fired %ld ns early", (unsigned)me, (long)-late);
	c->max_late_ns = MAX(c->max_late_ns, late);
	c->armed = false;
	if (++c->n == OS_SHOTS)
		atomic_fetch_add_explicit(&os_n_done, 1, memory_order_release);
	return 1;
}

/* ---- test=xcore: the core mesh, all to all ----
 * Every core sends XC_MSGS sequenced messages to every other core through kernel/xcore
 * from its own loop (a burst per destination per pass; every 7th message on the control
 * class; -E_AGAIN means retry on a later pass) and checks what it receives: order per
 * source, kind, class, length and every payload byte. A core counts itself done (release)
 * once it has sent and received everything; the boot core then (acquire: every core's
 * counters and the mesh's pair counters are visible) checks the pair counters and reports
 * the rate. The handler reports work while the scenario runs, so the loop polls instead of
 * halting: the figure is the mesh's, not the idle path's (and under TCG only indicative). */
#define XC_MSGS 10000u         /* per ordered pair */
#define XC_BURST 8u            /* sends per destination per pass */
#define XC_DEADLINE_NS (40ull * 1000000000ull)
#define XC_KIND_DATA 1u
#define XC_KIND_CTRL 2u
struct xc_core {
	uint32_t next_seq[PLAT_MAX_CPUS];   /* to send, per destination */
	uint32_t expect_seq[PLAT_MAX_CPUS]; /* to receive, per source */
	uint64_t n_recv, n_errors, t_start_ns, t_end_ns;
	uint32_t me;
	bool started, done;
} ALIGNED(64);
static struct xc_core xc_cores[PLAT_MAX_CPUS];
static struct xcore_mesh *xc_mesh;
static uint32_t xc_n_cores;
static _Atomic uint32_t xc_n_done;

static uint32_t xc_check(uint32_t src, uint32_t dst, uint32_t seq)
{
	return (seq + 1u) * 0x9e3779b9u ^ (src << 24) ^ (dst << 16);
}

static uint32_t xc_len(uint32_t seq)
{
	return 16u + seq % 33u; /* 16..48 B of the 56 a slot carries */
}

void x86_scenario_xcore_setup(uint32_t n_cores)
{
	struct xcore_config cfg = {
		.n_cores = n_cores,
		.slots_per_ring = 64,
		.slot_size = 64,
		.ctrl_slots = 4,
		.credit_batch = 8,
		.poll_max = 64,
		.poll_per_source = 16,
	};
	size_t len;
	void *va;
	uint64_t pa;
	if (n_cores < 2 || xcore_mesh_size(&cfg, &len) != 0 ||
	    kheap_pages_alloc((uint32_t)((len + 4095u) / 4096u), 0, &va, &pa) != 0 ||
	    xcore_mesh_init(&xc_mesh, va, len, &cfg) != 0)
		PANIC("xcore scenario: cannot build a mesh for %u cores", (unsigned)n_cores);
	xc_n_cores = n_cores;
	LOG_INFO("test", "scenario xcore: %u cores, %u rings of %u slots of %u B, %u messages each way",
		 (unsigned)n_cores, (unsigned)(n_cores * (n_cores - 1)), (unsigned)cfg.slots_per_ring,
		 (unsigned)cfg.slot_size, (unsigned)XC_MSGS);
}

static void xc_recv(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct xc_core *c = ctx;
	uint32_t want = c->expect_seq[src];
	bool ctrl = want % 7u == 3u;
	bool ok = msg->len == xc_len(want) && msg->kind == (ctrl ? XC_KIND_CTRL : XC_KIND_DATA) &&
		  msg->cls == (ctrl ? XCORE_CTRL : XCORE_DATA);
	if (ok) {
		uint32_t w[4];
		memcpy(w, msg->data, sizeof w);
		ok = w[0] == src && w[1] == c->me && w[2] == want && w[3] == xc_check(src, c->me, want);
		for (uint32_t i = sizeof w; ok && i < msg->len; i++)
			ok = msg->data[i] == (uint8_t)(want + i);
	}
	if (!ok && c->n_errors++ == 0)
		LOG_WARN("test", "xcore: core %u: message %u from core %u wrong", (unsigned)c->me,
			 (unsigned)want, (unsigned)src);
	c->expect_seq[src] = want + 1;
	c->n_recv++;
}

static void xc_verdict(void)
{
	uint64_t stalls = 0, ctrl_stalls = 0, refills = 0, errors = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	for (uint32_t i = 0; i < xc_n_cores; i++) {
		struct xc_core *c = &xc_cores[i];
		errors += c->n_errors;
		t0 = MIN(t0, c->t_start_ns);
		t1 = MAX(t1, c->t_end_ns);
		for (uint32_t s = 0; s < xc_n_cores; s++) {
			if (s == i)
				continue;
			struct xcore_pair_stats st;
			xcore_stats(xc_mesh, s, i, &st);
			if (st.n_sent + st.n_ctrl_sent != XC_MSGS || st.n_recv != XC_MSGS || st.n_bad ||
			    c->expect_seq[s] != XC_MSGS)
				errors++;
			stalls += st.n_stall;
			ctrl_stalls += st.n_ctrl_stall;
			refills += st.n_refill;
		}
	}
	uint32_t rings = xc_n_cores * (xc_n_cores - 1);
	uint64_t ns = t1 > t0 ? t1 - t0 : 1;
	uint64_t per_pair = (uint64_t)XC_MSGS * 1000000000ull / ns;
	LOG_INFO("test", "xcore: %lu ms for %lu messages: %lu msgs/s per pair, %lu msgs/s in all, %lu credit "
			 "re-reads (emulated: indicative only)",
		 (unsigned long)(ns / 1000000u), (unsigned long)((uint64_t)XC_MSGS * rings), (unsigned long)per_pair,
		 (unsigned long)(per_pair * rings), (unsigned long)refills);
	LOG_INFO("test", "scenario xcore: %u cores, %u rings, %u messages each way, %lu credit stalls "
			 "(%lu control), %lu errors",
		 (unsigned)xc_n_cores, (unsigned)rings, (unsigned)XC_MSGS, (unsigned long)stalls,
		 (unsigned long)ctrl_stalls, (unsigned long)errors);
	if (errors)
		PANIC("xcore scenario: %lu errors", (unsigned long)errors);
	x86_stop(X86_EXIT_BOOT_OK);
}

int x86_scenario_xcore_poll(void *ctx)
{
	(void)ctx;
	uint32_t me = x86_core_self()->index;
	struct xc_core *c = &xc_cores[me];
	if (me >= xc_n_cores)
		return 0;
	if (c->done) {
		/* Acquire: pairs with each core's release below; its counters and the pair
		 * counters it wrote are complete. */
		if (me == 0 && atomic_load_explicit(&xc_n_done, memory_order_acquire) == xc_n_cores)
			xc_verdict();
		return 0;
	}
	uint64_t now = x86_now_ns();
	if (!c->started) {
		c->me = me;
		c->t_start_ns = now;
		c->started = true;
	} else if (now - c->t_start_ns > XC_DEADLINE_NS) {
		PANIC("xcore scenario: core %u stuck: %lu of %lu received, %u done", (unsigned)me,
		      (unsigned long)c->n_recv, (unsigned long)((uint64_t)(xc_n_cores - 1) * XC_MSGS),
		      (unsigned)atomic_load_explicit(&xc_n_done, memory_order_relaxed));
	}
	bool sending = false;
	for (uint32_t d = 0; d < xc_n_cores; d++) {
		if (d == me)
			continue;
		for (uint32_t k = 0; k < XC_BURST && c->next_seq[d] < XC_MSGS; k++) {
			uint32_t seq = c->next_seq[d], len = xc_len(seq);
			uint8_t buf[48];
			uint32_t w[4] = { me, d, seq, xc_check(me, d, seq) };
			memcpy(buf, w, sizeof w);
			for (uint32_t i = sizeof w; i < len; i++)
				buf[i] = (uint8_t)(seq + i);
			int rc = seq % 7u == 3u ? xcore_send_ctrl(xc_mesh, me, d, XC_KIND_CTRL, buf, len)
						: xcore_send(xc_mesh, me, d, XC_KIND_DATA, buf, len);
			if (rc == -E_AGAIN)
				break; /* counted by the mesh; retry on the next pass */
			if (rc != 0)
				PANIC("xcore scenario: send refused (%s)", err_name(rc));
			c->next_seq[d] = seq + 1;
		}
		sending = sending || c->next_seq[d] < XC_MSGS;
	}
	(void)xcore_poll(xc_mesh, me, xc_recv, c);
	if (!sending && c->n_recv == (uint64_t)(xc_n_cores - 1) * XC_MSGS) {
		c->t_end_ns = x86_now_ns();
		c->done = true;
		/* Release: this core's counters (and its side of the pair counters) before
		 * the count the boot core reads. */
		atomic_fetch_add_explicit(&xc_n_done, 1, memory_order_release);
	}
	return 1;
}
