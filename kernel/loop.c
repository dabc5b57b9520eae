/* SPDX-License-Identifier: MIT
 *
 * Per-core loop and watchdog (kernel/loop.h). Portable and host-tested with a fake
 * clock. Never allocates, never blocks except through ops.idle, never touches another
 * core's loop.
 */
#include "kernel/loop.h"
#include "lib/err.h"
#include "lib/mem.h"

int kloop_init(struct kloop *l, uint32_t core, const struct kloop_config *cfg,
	       const struct kloop_ops *ops)
{
	if (!l || !cfg || !ops || !ops->now_ns || !ops->idle || cfg->budget_ns == 0 ||
	    (cfg->hard_limit_ns && cfg->hard_limit_ns < cfg->budget_ns))
		return -E_INVAL;
	memset(l, 0, sizeof *l);
	l->core = core;
	l->cfg = *cfg;
	l->ops = *ops;
	return 0;
}

int kloop_add(struct kloop *l, const char *name, int (*poll)(void *ctx), void *ctx)
{
	if (!name || !poll)
		return -E_INVAL;
	if (l->n_handlers == KLOOP_MAX_HANDLERS)
		return -E_NOMEM;
	struct kloop_handler *h = &l->handlers[l->n_handlers++];
	h->name = name;
	h->poll = poll;
	h->ctx = ctx;
	return 0;
}

uint32_t kloop_run_once(struct kloop *l)
{
	uint32_t work = 0;
	for (uint32_t i = 0; i < l->n_handlers; i++) {
		struct kloop_handler *h = &l->handlers[i];
		/* The only reader is this core's tick interrupt: release/acquire on `running`
		 * orders start_ns before it for that reader (invariant 1); across an interrupt
		 * on one core this amounts to a compiler barrier, which is what is needed. */
		atomic_store_explicit(&l->start_ns, l->ops.now_ns(), memory_order_relaxed);
		l->reported = false;
		atomic_store_explicit(&l->running, h->name, memory_order_release);
		int r = h->poll(h->ctx);
		atomic_store_explicit(&l->running, NULL, memory_order_release);
		if (r > 0)
			work++;
	}
	l->n_passes++;
	if (!work) {
		l->n_idle++;
		l->ops.idle();
	}
	return work;
}

void kloop_progress(struct kloop *l)
{
	/* Read by this core's tick only (relaxed on both sides, as in kloop_run_once): the
	 * worst a torn view could do is one late or early report of a long wait. */
	atomic_store_explicit(&l->start_ns, l->ops.now_ns(), memory_order_relaxed);
	l->reported = false;
	l->n_progress++;
}

NORETURN void kloop_run(struct kloop *l)
{
	for (;;)
		(void)kloop_run_once(l);
}

enum kloop_wd kloop_watchdog_tick(struct kloop *l, uint64_t now_ns, const char **name,
				  uint64_t *ran_ns)
{
	/* Statistic only, same core: relaxed. */
	atomic_fetch_add_explicit(&l->n_ticks, 1, memory_order_relaxed);
	*name = NULL;
	*ran_ns = 0;
	const char *run = atomic_load_explicit(&l->running, memory_order_acquire);
	if (!run)
		return KLOOP_WD_OK;
	uint64_t start = atomic_load_explicit(&l->start_ns, memory_order_relaxed);
	uint64_t ran = now_ns > start ? now_ns - start : 0;
	*name = run;
	*ran_ns = ran;
	if (l->cfg.hard_limit_ns && ran > l->cfg.hard_limit_ns)
		return KLOOP_WD_HARD;
	if (ran > l->cfg.budget_ns && !l->reported) {
		l->reported = true;
		l->n_overruns++;
		return KLOOP_WD_OVER_BUDGET;
	}
	return KLOOP_WD_OK;
}
