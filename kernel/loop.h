/* SPDX-License-Identifier: MIT
 *
 * The per-core run-to-completion loop and its watchdog. Each core owns one struct kloop:
 * a fixed table of poll handlers called in turn; when a whole pass did no work the core
 * idles (halts until an interrupt). The core's 10 ms tick calls kloop_watchdog_tick(),
 * which names a handler that has run longer than its budget (reported once per run) and
 * tells the caller to stop the machine when one exceeds the hard limit.
 *
 * Contract: a kloop is touched only by its own core (loop and that core's tick interrupt);
 * nothing here allocates; handlers are linked (their names and contexts must outlive the
 * loop). Portable; the platform supplies the clock and the idle primitive.
 */
#ifndef KERNEL_LOOP_H
#define KERNEL_LOOP_H

#include <stdatomic.h>
#include "lib/compiler.h"

#define KLOOP_MAX_HANDLERS 16

/* A poll handler returns > 0 if it did work, 0 if it had nothing to do. */
struct kloop_handler {
	const char *name; /* linked */
	int (*poll)(void *ctx);
	void *ctx;        /* linked */
};

struct kloop_ops {
	uint64_t (*now_ns)(void); /* monotonic */
	void (*idle)(void);       /* wait for an interrupt (may return at once) */
};

struct kloop_config {
	uint64_t budget_ns;     /* one handler call longer than this is reported */
	uint64_t hard_limit_ns; /* ... and longer than this stops the machine (0: never) */
};

enum kloop_wd {
	KLOOP_WD_OK = 0,
	KLOOP_WD_OVER_BUDGET = 1, /* report once: *name ran *ran_ns so far */
	KLOOP_WD_HARD = 2,        /* stop: *name is stuck */
};

/* Design note:
 *  1. `running` is non-NULL exactly while a handler call is in progress, and `start_ns`
 *     is that call's start time (written before `running`).
 *  2. `reported` is set at the first over-budget report of a call and cleared when the
 *     next call starts, so each overrun is reported once.
 *  States: IDLE --kloop_run_once: call starts--> RUNNING --returns--> IDLE;
 *          RUNNING --tick over budget--> RUNNING(reported) --tick over hard--> stop. */
struct kloop {
	uint32_t core;
	struct kloop_config cfg;
	struct kloop_ops ops;
	uint32_t n_handlers;
	struct kloop_handler handlers[KLOOP_MAX_HANDLERS];
	_Atomic(const char *) running;
	_Atomic uint64_t start_ns;
	bool reported;
	uint64_t n_passes, n_idle, n_overruns, n_progress;
	_Atomic uint64_t n_ticks;
};

/* Initialise `l` for `core` (cfg, ops copied). 0 or -E_INVAL (missing op, hard < budget). */
MUST_CHECK int kloop_init(struct kloop *l, uint32_t core, const struct kloop_config *cfg,
			  const struct kloop_ops *ops);
/* Append a handler. 0, -E_NOMEM (table full) or -E_INVAL. */
MUST_CHECK int kloop_add(struct kloop *l, const char *name, int (*poll)(void *ctx), void *ctx);
/* One pass over the handlers; idles if none did work. Returns the work count. */
uint32_t kloop_run_once(struct kloop *l);
/* Forever kloop_run_once. */
NORETURN void kloop_run(struct kloop *l);
/* From inside a handler, on the loop's own core: the handler is alive, waiting for
 * something bounded elsewhere (a disk request under store/dev.h's timeout, a database step
 * that made progress), so its watchdog clock starts over. Only the storage core uses it:
 * its long waits are for the disk, and each is bounded by its own timeout. */
void kloop_progress(struct kloop *l);
/* From the core's own tick interrupt. */
enum kloop_wd kloop_watchdog_tick(struct kloop *l, uint64_t now_ns, const char **name /* out */,
				  uint64_t *ran_ns /* out */);

#endif
