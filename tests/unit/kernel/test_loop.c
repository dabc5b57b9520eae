/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/loop: handler table limits, idling only after a pass with no
 * work, and the watchdog (ticks inside a handler call simulate the core's timer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/loop.h"
#include "lib/err.h"

static uint64_t now;
static unsigned n_idle;
static uint64_t fake_now(void) { return now; }
static void fake_idle(void) { n_idle++; }
static const struct kloop_ops ops = { fake_now, fake_idle };
static const struct kloop_config cfg = { 5000000u, 100000000u }; /* 5 ms, 100 ms */

static int busy(void *ctx) { (void)ctx; return 1; }
static int quiet(void *ctx) { (void)ctx; return 0; }

static struct kloop lp;

static int setup(void **state)
{
	(void)state;
	now = 1000;
	n_idle = 0;
	assert_int_equal(kloop_init(&lp, 3, &cfg, &ops), 0);
	return 0;
}

static void test_init_and_add_reject(void **state)
{
	(void)state;
	struct kloop l;
	struct kloop_ops no_idle = { fake_now, NULL };
	struct kloop_config bad = { 10, 5 };
	struct kloop_config zero = { 0, 0 };
	assert_int_equal(kloop_init(&l, 0, &cfg, &no_idle), -E_INVAL);
	assert_int_equal(kloop_init(&l, 0, &bad, &ops), -E_INVAL);
	assert_int_equal(kloop_init(&l, 0, &zero, &ops), -E_INVAL);
	assert_int_equal(kloop_add(&lp, NULL, busy, NULL), -E_INVAL);
	assert_int_equal(kloop_add(&lp, "x", NULL, NULL), -E_INVAL);
	for (int i = 0; i < KLOOP_MAX_HANDLERS; i++)
		assert_int_equal(kloop_add(&lp, "h", quiet, NULL), 0);
	assert_int_equal(kloop_add(&lp, "one too many", quiet, NULL), -E_NOMEM);
}

static void test_idles_only_without_work(void **state)
{
	(void)state;
	assert_int_equal(kloop_add(&lp, "quiet", quiet, NULL), 0);
	assert_int_equal(kloop_run_once(&lp), 0);
	assert_int_equal(n_idle, 1);
	assert_int_equal(kloop_add(&lp, "busy", busy, NULL), 0);
	assert_int_equal(kloop_run_once(&lp), 1);
	assert_int_equal(n_idle, 1);
	const char *name;
	uint64_t ran;
	assert_int_equal(kloop_watchdog_tick(&lp, now + 999999999u, &name, &ran), KLOOP_WD_OK);
	assert_null(name);
}

/* A handler that runs `steps` ticks of `step_ns` each and records the watchdog's verdicts. */
struct slow {
	uint64_t step_ns;
	int steps;
	enum kloop_wd verdict[16];
	const char *name[16];
};
static int slow_poll(void *ctx)
{
	struct slow *s = ctx;
	for (int i = 0; i < s->steps; i++) {
		uint64_t ran;
		now += s->step_ns;
		s->verdict[i] = kloop_watchdog_tick(&lp, now, &s->name[i], &ran);
	}
	return 1;
}

static void test_watchdog_reports_once_then_hard(void **state)
{
	(void)state;
	struct slow s = { 10000000u, 12, { 0 }, { 0 } }; /* 12 ticks of 10 ms */
	assert_int_equal(kloop_add(&lp, "slow-handler", slow_poll, &s), 0);
	(void)kloop_run_once(&lp);
	assert_int_equal(s.verdict[0], KLOOP_WD_OVER_BUDGET); /* 10 ms > 5 ms */
	assert_string_equal(s.name[0], "slow-handler");
	for (int i = 1; i < 10; i++)
		assert_int_equal(s.verdict[i], KLOOP_WD_OK); /* reported once */
	assert_int_equal(s.verdict[10], KLOOP_WD_HARD);      /* 110 ms > 100 ms */
	assert_int_equal(lp.n_overruns, 1);
	assert_int_equal(lp.n_ticks, 12);
	/* a new call of the handler may be reported again */
	s.steps = 1;
	(void)kloop_run_once(&lp);
	assert_int_equal(s.verdict[0], KLOOP_WD_OVER_BUDGET);
	assert_int_equal(lp.n_overruns, 2);
}

static void test_watchdog_within_budget(void **state)
{
	(void)state;
	struct slow s = { 1000000u, 4, { 0 }, { 0 } }; /* 4 ms total */
	assert_int_equal(kloop_add(&lp, "fast", slow_poll, &s), 0);
	(void)kloop_run_once(&lp);
	for (int i = 0; i < 4; i++)
		assert_int_equal(s.verdict[i], KLOOP_WD_OK);
	assert_int_equal(lp.n_overruns, 0);
}

/* A handler that waits in steps of 50 ms, saying it is alive between them: 30 steps
 * (1.5 s, far past the 100 ms hard limit) and never stopped; without progress, stopped. */
struct waiter {
	int steps;
	bool alive;
	enum kloop_wd worst;
};
static int wait_poll(void *ctx)
{
	struct waiter *w = ctx;
	for (int i = 0; i < w->steps; i++) {
		const char *name;
		uint64_t ran;
		now += 50000000u;
		enum kloop_wd v = kloop_watchdog_tick(&lp, now, &name, &ran);
		if (v == KLOOP_WD_HARD)
			w->worst = v;
		if (w->alive)
			kloop_progress(&lp);
	}
	return 1;
}

static void test_progress_restarts_the_clock(void **state)
{
	(void)state;
	struct waiter w = { 30, true, KLOOP_WD_OK };
	assert_int_equal(kloop_add(&lp, "waiter", wait_poll, &w), 0);
	(void)kloop_run_once(&lp);
	assert_int_equal(w.worst, KLOOP_WD_OK);
	assert_int_equal(lp.n_progress, 30);
	w.alive = false;
	(void)kloop_run_once(&lp);
	assert_int_equal(w.worst, KLOOP_WD_HARD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_progress_restarts_the_clock, setup),
		cmocka_unit_test_setup(test_init_and_add_reject, setup),
		cmocka_unit_test_setup(test_idles_only_without_work, setup),
		cmocka_unit_test_setup(test_watchdog_reports_once_then_hard, setup),
		cmocka_unit_test_setup(test_watchdog_within_budget, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
