/* SPDX-License-Identifier: MIT
 * Unit tests of the hosted platform's pieces that need no TAP device: the frame pool
 * (exhaustion, reuse, abort on a foreign put), the link impairment (determinism, loss,
 * delay order, reorder rate, bounded queue) and the command line (table of accepted and
 * rejected arguments). The TAP path is covered by tests/smoke/hosted-tcp.sh. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hosted/hosted.h"
#include "lib/err.h"

/* ---- frame pool ---- */

static void test_pool_exhaust_and_reuse(void **state)
{
	struct hosted_pool p;
	uint8_t *f[8];
	(void)state;
	assert_int_equal(hosted_pool_init(&p, 8, 1536), 0);
	for (int i = 0; i < 8; i++) {
		f[i] = hosted_pool_get(&p);
		assert_non_null(f[i]);
		memset(f[i], 0xa5, 1536); /* ASan: the whole frame is ours */
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(f[i], f[j]);
	}
	assert_null(hosted_pool_get(&p));
	assert_int_equal(p.exhausted, 1);
	assert_int_equal(p.low_water, 0);
	hosted_pool_put(&p, f[3]);
	assert_ptr_equal(hosted_pool_get(&p), f[3]);
	for (int i = 0; i < 8; i++)
		hosted_pool_put(&p, f[i]);
	assert_int_equal(p.n_free, 8);
	hosted_pool_fini(&p);
}

static void test_pool_init_rejects(void **state)
{
	struct hosted_pool p;
	(void)state;
	assert_int_equal(hosted_pool_init(&p, 0, 1536), -E_INVAL);
	assert_int_equal(hosted_pool_init(&p, 4, 16), -E_INVAL);
	assert_int_equal(hosted_pool_init(&p, 4, 1u << 20), -E_INVAL);
}

/* A put of something the pool did not lend is a bug: the process must abort. */
static void expect_put_aborts(int how)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct hosted_pool p;
		if (hosted_pool_init(&p, 4, 256) != 0)
			_exit(3);
		uint8_t *f = hosted_pool_get(&p);
		if (how == 0) {
			hosted_pool_put(&p, f);
			hosted_pool_put(&p, f); /* double put */
		} else if (how == 1) {
			hosted_pool_put(&p, f + 1); /* not a frame start */
		} else {
			hosted_pool_put(&p, p.mem + 4 * 256); /* past the pool */
		}
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
}

static void test_pool_bad_put_aborts(void **state)
{
	(void)state;
	for (int how = 0; how < 3; how++)
		expect_put_aborts(how);
}

/* ---- link impairment ---- */

static void test_impair_off_passes(void **state)
{
	struct hosted_impair im;
	uint8_t fr[64];
	(void)state;
	assert_int_equal(hosted_impair_init(&im, 0, 0, 0, 4, 1), 0);
	assert_false(hosted_impair_on(&im));
	for (int i = 0; i < 1000; i++)
		assert_int_equal(hosted_impair_offer(&im, fr, sizeof fr, 0), HOSTED_IMPAIR_PASS);
	assert_int_equal(hosted_impair_next_ms(&im), UINT64_MAX);
	hosted_impair_fini(&im);
}

static void test_impair_rejects(void **state)
{
	struct hosted_impair im;
	(void)state;
	assert_int_equal(hosted_impair_init(&im, 101, 0, 0, 4, 1), -E_INVAL);
	assert_int_equal(hosted_impair_init(&im, 0, 101, 0, 4, 1), -E_INVAL);
	assert_int_equal(hosted_impair_init(&im, 0, 0, 60001, 4, 1), -E_INVAL);
	assert_int_equal(hosted_impair_init(&im, 0, 0, 0, 0, 1), -E_INVAL);
}

static void test_impair_loss_all(void **state)
{
	struct hosted_impair im;
	uint8_t fr[64];
	(void)state;
	assert_int_equal(hosted_impair_init(&im, 100, 0, 5, 4, 7), 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(hosted_impair_offer(&im, fr, sizeof fr, 0), HOSTED_IMPAIR_DROP);
	assert_int_equal(im.dropped, 100);
	hosted_impair_fini(&im);
}

static void test_impair_delay_fifo_and_bound(void **state)
{
	struct hosted_impair im;
	uint8_t fr[4][64];
	size_t len = 0;
	(void)state;
	assert_int_equal(hosted_impair_init(&im, 0, 0, 5, 3, 7), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(hosted_impair_offer(&im, fr[i], 10u + (size_t)i, 100u + (uint64_t)i),
				 HOSTED_IMPAIR_QUEUED);
	/* Bounded: the fourth does not fit and is dropped, never allocated for. */
	assert_int_equal(hosted_impair_offer(&im, fr[3], 13, 103), HOSTED_IMPAIR_DROP);
	assert_int_equal(im.queue_full, 1);
	assert_int_equal(hosted_impair_next_ms(&im), 105);
	assert_null(hosted_impair_pop(&im, 104, &len));
	assert_ptr_equal(hosted_impair_pop(&im, 106, &len), fr[0]);
	assert_int_equal(len, 10);
	assert_ptr_equal(hosted_impair_pop(&im, 106, &len), fr[1]);
	assert_null(hosted_impair_pop(&im, 106, &len));
	assert_ptr_equal(hosted_impair_pop(&im, 1000, &len), fr[2]);
	assert_int_equal(len, 12);
	assert_null(hosted_impair_pop(&im, 1000, &len));
	hosted_impair_fini(&im);
}

static void test_impair_rates_and_determinism(void **state)
{
	struct hosted_impair a, b;
	uint8_t fr[64];
	size_t len;
	unsigned n_drop = 0, n_pass = 0, n_q = 0;
	(void)state;
	assert_int_equal(hosted_impair_init(&a, 5, 10, 5, 16, 42), 0);
	assert_int_equal(hosted_impair_init(&b, 5, 10, 5, 16, 42), 0);
	for (uint64_t t = 0; t < 10000; t++) {
		enum hosted_impair_verdict va = hosted_impair_offer(&a, fr, sizeof fr, t);
		assert_int_equal(va, hosted_impair_offer(&b, fr, sizeof fr, t));
		n_drop += va == HOSTED_IMPAIR_DROP;
		n_pass += va == HOSTED_IMPAIR_PASS;
		n_q += va == HOSTED_IMPAIR_QUEUED;
		while (hosted_impair_pop(&a, t, &len))
			;
		while (hosted_impair_pop(&b, t, &len))
			;
	}
	/* 5% loss, then 10% of the rest sent at once; the queue (16 deep, 5 ms) never
	 * overflows at one frame per ms. */
	assert_int_equal(a.queue_full, 0);
	assert_in_range(n_drop, 350, 650);
	assert_in_range(n_pass, 800, 1100);
	assert_int_equal(n_drop + n_pass + n_q, 10000);
	hosted_impair_fini(&a);
	hosted_impair_fini(&b);
}

/* Without a delay, a reordered frame is held 1 ms so that later ones overtake it. */
static void test_impair_reorder_without_delay(void **state)
{
	struct hosted_impair im;
	uint8_t fr[64];
	size_t len;
	(void)state;
	assert_int_equal(hosted_impair_init(&im, 0, 100, 0, 4, 3), 0);
	assert_int_equal(hosted_impair_offer(&im, fr, sizeof fr, 50), HOSTED_IMPAIR_QUEUED);
	assert_null(hosted_impair_pop(&im, 50, &len));
	assert_ptr_equal(hosted_impair_pop(&im, 51, &len), fr);
	hosted_impair_fini(&im);
}

/* ---- command line ---- */

struct args_case {
	const char *argv[16];
	int rc;
};

static const struct args_case args_cases[] = {
	{{"x", "--tap", "t0", "--ip", "10.77.0.2/24"}, 0},
	{{"x", "--tap", "t0", "--dhcp"}, 0},
	{{"x", "--tap", "t0", "--ip", "10.0.0.2/8", "--gw", "10.0.0.1", "--mac",
	  "02:00:00:77:00:02", "--echo-port", "7777", "--max-conn", "1100"}, 0},
	{{"x", "--tap", "t0", "--ip", "10.77.0.2/24", "--impair", "5,10,5", "--impair-dir",
	  "both", "--seed", "0x1234"}, 0},
	{{"x", "--help"}, 1},
	{{"x"}, -E_INVAL},                                            /* no --tap */
	{{"x", "--tap", "t0"}, -E_INVAL},                             /* no address */
	{{"x", "--tap", "t0", "--dhcp", "--ip", "10.0.0.2/24"}, -E_INVAL}, /* both */
	{{"x", "--tap", "t0", "--dhcp", "--gw", "10.0.0.1"}, -E_INVAL},
	{{"x", "--tap", "t0", "--ip", "10.0.0.2"}, -E_INVAL},         /* no prefix */
	{{"x", "--tap", "t0", "--ip", "10.0.0.256/24"}, -E_INVAL},
	{{"x", "--tap", "t0", "--ip", "010.0.0.2/24"}, -E_INVAL},
	{{"x", "--tap", "t0", "--ip", "10.0.0.2/0"}, -E_INVAL},
	{{"x", "--tap", "t0", "--ip", "10.0.0.2/31"}, -E_INVAL},
	{{"x", "--tap", "t0", "--ip", "10.0.0/24"}, -E_INVAL},
	{{"x", "--tap", "t0", "--ip", "10.0.0.2/24x"}, -E_INVAL},
	{{"x", "--tap", "t0", "--ip", "10.0.0.2/24", "--gw", "10.0.0.1 "}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--mac", "01:00:00:00:00:01"}, -E_INVAL}, /* group */
	{{"x", "--tap", "t0", "--dhcp", "--mac", "00:00:00:00:00:00"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--mac", "02:00:00:00:00"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--echo-port", "0"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--echo-port", "65536"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--echo-port", "-1"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--max-conn", "0"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--frames", "10"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--mtu", "9001"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--impair", "5,10"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--impair", "101,0,0"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--impair-dir", "up"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--seed", "12z"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--bogus", "1"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--max-conn"}, -E_INVAL},     /* missing value */
	/* the fleet's ring (ADR-072): members name=host:port with --fleet-self one of them */
	{{"x", "--tap", "t0", "--dhcp", "--fleet-member", "a=h:1", "--fleet-member", "b=h:2", "--fleet-self", "b"}, 0},
	{{"x", "--tap", "t0", "--dhcp", "--fleet-member", "a=h:1", "--fleet-self", "c"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--fleet-member", "a=h:1"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--fleet-self", "a"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--fleet-member", "a=h", "--fleet-self", "a"}, -E_INVAL},
	{{"x", "--tap", "t0", "--dhcp", "--fleet-member", "a=h:1", "--fleet-member", "a=h:2", "--fleet-self", "a"},
	 -E_INVAL},
};

/* argv from a NULL-terminated list of at most 15 literals (the parser never writes). */
static int parse(const char *const *args, struct hosted_opts *o, const char **err)
{
	char *argv[16];
	int argc = 0;
	while (argc < 15 && args[argc]) {
		argv[argc] = (char *)(uintptr_t)args[argc];
		argc++;
	}
	argv[argc] = NULL;
	return hosted_opts_parse(o, argc, argv, err);
}

static void test_args_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(args_cases); i++) {
		struct hosted_opts o;
		const char *err = NULL;
		int rc = parse(args_cases[i].argv, &o, &err);
		if (rc != args_cases[i].rc)
			fail_msg("case %zu: rc %d, want %d (%s)", i, rc, args_cases[i].rc,
				 err ? err : "");
		if (rc < 0)
			assert_non_null(err);
	}
}

static void test_args_values(void **state)
{
	struct hosted_opts o;
	const char *err;
	static const char *const argv[] = {"x", "--tap", "t0", "--ip", "10.77.0.2/24", "--gw",
					   "10.77.0.1", "--mac", "02:0a:0B:0c:0d:0e", "--impair",
					   "5,10,5", NULL};
	static const char *const argv2[] = {"x", "--tap", "t0", "--dhcp", "--impair-dir", "tx",
					    NULL};
	(void)state;
	assert_int_equal(parse(argv, &o, &err), 0);
	assert_string_equal(o.tap, "t0");
	assert_int_equal(o.ip, 0x0a4d0002u);
	assert_int_equal(o.mask, 0xffffff00u);
	assert_int_equal(o.gw, 0x0a4d0001u);
	assert_true(o.mac_set);
	assert_int_equal(o.mac[1], 0x0a);
	assert_int_equal(o.mac[2], 0x0b);
	assert_int_equal(o.loss_pct, 5);
	assert_int_equal(o.reorder_pct, 10);
	assert_int_equal(o.delay_ms, 5);
	assert_true(o.impair_rx); /* default: frames to us, like netem on the Linux side */
	assert_false(o.impair_tx);
	assert_false(o.dhcp);
	assert_int_equal(o.echo_port, 7);
	assert_int_equal(parse(argv2, &o, &err), 0);
	assert_false(o.impair_rx);
	assert_true(o.impair_tx);
	assert_true(o.dhcp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_exhaust_and_reuse),
		cmocka_unit_test(test_pool_init_rejects),
		cmocka_unit_test(test_pool_bad_put_aborts),
		cmocka_unit_test(test_impair_off_passes),
		cmocka_unit_test(test_impair_rejects),
		cmocka_unit_test(test_impair_loss_all),
		cmocka_unit_test(test_impair_delay_fifo_and_bound),
		cmocka_unit_test(test_impair_rates_and_determinism),
		cmocka_unit_test(test_impair_reorder_without_delay),
		cmocka_unit_test(test_args_table),
		cmocka_unit_test(test_args_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
