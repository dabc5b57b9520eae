/* SPDX-License-Identifier: MIT
 * Unit tests for ops/health: every reason from its figure, the refusing rule (admission,
 * storage by configuration), the heap's hysteresis, the disk error hold, change
 * detection, describe()'s exact lines and its truncation (canary past the end), the
 * names, and the invariant after every evaluation. Pure functions: nothing to leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "ops/health.h"

static const struct ops_health_cfg cfg = {
	.heap_low_pct = 10, .heap_ok_pct = 20, .db_lag_ms = 2000, .db_backlog_max = 10000,
	.disk_hold_ms = 5000, .storage_required = true,
};

/* A broker with nothing wrong. */
static struct ops_health_inputs fine(void)
{
	struct ops_health_inputs in = { 0 };
	in.now_ms = 1000;
	in.heap_free = 500;
	in.heap_total = 1000;
	in.db_backlog = 3;
	in.db_commit_age_ms = 10;
	in.clock_synced = true;
	in.clock_sync_expected = true;
	in.admission_open = true;
	return in;
}

static struct ops_health eval(const struct ops_health *prev, const struct ops_health_inputs *in,
			      const struct ops_health_cfg *c)
{
	struct ops_health h;
	ops_health_eval(prev, in, c, &h);
	assert_true(ops_health_check(&h));
	return h;
}

static const char *line(const struct ops_health *h)
{
	static char buf[256];
	size_t n = ops_health_describe(h, buf, sizeof buf);
	assert_int_equal(n, strlen(buf));
	return buf;
}

static void test_serving(void **state)
{
	(void)state;
	struct ops_health p, h;
	ops_health_init(&p);
	assert_true(ops_health_check(&p));
	struct ops_health_inputs in = fine();
	h = eval(&p, &in, &cfg);
	assert_int_equal(h.state, OPS_HEALTH_SERVING);
	assert_int_equal(h.reasons, 0);
	assert_string_equal(line(&h), "serving");
	assert_false(ops_health_changed(&p, &h));
	/* No sync expected: an unsynced clock is not a reason. */
	in.clock_sync_expected = false;
	in.clock_synced = false;
	h = eval(&p, &in, &cfg);
	assert_int_equal(h.state, OPS_HEALTH_SERVING);
}

enum tweak { T_HEAP, T_DB_AGE, T_DB_BACKLOG, T_DB_SAYS, T_DISK, T_CLOCK, T_WATCHDOG, T_ADMISSION, T_STORAGE, T_STORAGE_OPT };

static void test_each_reason(void **state)
{
	(void)state;
	static const struct {
		enum tweak t;
		uint32_t reasons;
		enum ops_health_state st;
		const char *line;
	} c[] = {
		{ T_HEAP, OPS_HR_HEAP_LOW, OPS_HEALTH_DEGRADED, "degraded (heap low)" },
		{ T_DB_AGE, OPS_HR_DB_LAG, OPS_HEALTH_DEGRADED, "degraded (database lag)" },
		{ T_DB_BACKLOG, OPS_HR_DB_LAG, OPS_HEALTH_DEGRADED, "degraded (database lag)" },
		{ T_DB_SAYS, OPS_HR_DB_LAG, OPS_HEALTH_DEGRADED, "degraded (database lag)" },
		{ T_DISK, OPS_HR_DISK_ERRORS, OPS_HEALTH_DEGRADED, "degraded (disk errors)" },
		{ T_CLOCK, OPS_HR_CLOCK_UNSYNC, OPS_HEALTH_DEGRADED, "degraded (clock unsynchronised)" },
		{ T_WATCHDOG, OPS_HR_WATCHDOG, OPS_HEALTH_DEGRADED, "degraded (core over watchdog budget)" },
		{ T_ADMISSION, OPS_HR_ADMISSION_CLOSED, OPS_HEALTH_REFUSING, "refusing (admission closed)" },
		{ T_STORAGE, OPS_HR_STORAGE_FAILED, OPS_HEALTH_REFUSING, "refusing (storage failed)" },
		{ T_STORAGE_OPT, OPS_HR_STORAGE_FAILED, OPS_HEALTH_DEGRADED, "degraded (storage failed)" },
	};
	for (size_t i = 0; i < ARRAY_LEN(c); i++) {
		struct ops_health p;
		ops_health_init(&p);
		struct ops_health_inputs in = fine();
		struct ops_health_cfg k = cfg;
		switch (c[i].t) {
		case T_HEAP: in.heap_free = 99; break;
		case T_DB_AGE: in.db_commit_age_ms = 2001; break;
		case T_DB_BACKLOG: in.db_backlog = 10001; break;
		case T_DB_SAYS: in.db_lagging = true; break;
		case T_DISK: in.disk_errors = 1; break;
		case T_CLOCK: in.clock_synced = false; break;
		case T_WATCHDOG: in.watchdog_over_mask = 0x5; break;
		case T_ADMISSION: in.admission_open = false; break;
		case T_STORAGE: in.storage_failed = true; break;
		case T_STORAGE_OPT:
			in.storage_failed = true;
			k.storage_required = false;
			break;
		}
		struct ops_health h = eval(&p, &in, &k);
		assert_int_equal(h.reasons, c[i].reasons);
		assert_int_equal(h.state, c[i].st);
		assert_string_equal(line(&h), c[i].line);
		assert_true(ops_health_changed(&p, &h));
		if (c[i].t == T_WATCHDOG)
			assert_int_equal(h.watchdog_cores, 0x5);
	}
}

static void test_thresholds(void **state)
{
	(void)state;
	struct ops_health p, h;
	ops_health_init(&p);
	struct ops_health_inputs in = fine();
	/* At the limits, not over them. */
	in.db_commit_age_ms = 2000;
	in.db_backlog = 10000;
	h = eval(&p, &in, &cfg);
	assert_int_equal(h.reasons, 0);
	/* 0 disables either database check. */
	struct ops_health_cfg k = cfg;
	k.db_lag_ms = 0;
	k.db_backlog_max = 0;
	in.db_commit_age_ms = UINT64_MAX;
	in.db_backlog = UINT64_MAX;
	h = eval(&p, &in, &k);
	assert_int_equal(h.reasons, 0);
	/* Heap: exactly 10 % is not low. */
	in = fine();
	in.heap_free = 100;
	h = eval(&p, &in, &cfg);
	assert_int_equal(h.reasons, 0);
	/* Huge heap figures do not overflow. */
	in.heap_total = UINT64_MAX;
	in.heap_free = UINT64_MAX / 20; /* 5 % */
	h = eval(&p, &in, &cfg);
	assert_int_equal(h.reasons, OPS_HR_HEAP_LOW);
	in.heap_free = UINT64_MAX / 2;
	h = eval(&h, &in, &cfg);
	assert_int_equal(h.reasons, 0);
	/* free above total (inconsistent figures) is not low. */
	in.heap_total = 1000;
	in.heap_free = 5000;
	h = eval(&p, &in, &cfg);
	assert_int_equal(h.reasons, 0);
}

static void test_heap_hysteresis(void **state)
{
	(void)state;
	static const struct {
		uint64_t free_per_mille;
		bool low;
	} steps[] = {
		{ 150, false }, { 99, true },  { 150, true }, { 200, true }, { 201, false },
		{ 150, false }, { 100, false }, { 50, true },  { 500, false },
	};
	struct ops_health h;
	ops_health_init(&h);
	struct ops_health_inputs in = fine();
	for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
		in.heap_free = steps[i].free_per_mille;
		ops_health_eval(&h, &in, &cfg, &h); /* in place */
		assert_true(ops_health_check(&h));
		if (((h.reasons & OPS_HR_HEAP_LOW) != 0) != steps[i].low)
			fail_msg("step %zu: free %llu/1000, low %d", i, (unsigned long long)steps[i].free_per_mille,
				 steps[i].low);
	}
	/* No figures (total 0): the flag keeps its value either way. */
	in.heap_free = 10;
	ops_health_eval(&h, &in, &cfg, &h);
	assert_true(h.reasons & OPS_HR_HEAP_LOW);
	in.heap_total = 0;
	ops_health_eval(&h, &in, &cfg, &h);
	assert_true(h.reasons & OPS_HR_HEAP_LOW);
	in.heap_total = 1000;
	in.heap_free = 900;
	ops_health_eval(&h, &in, &cfg, &h);
	in.heap_total = 0;
	ops_health_eval(&h, &in, &cfg, &h);
	assert_false(h.reasons & OPS_HR_HEAP_LOW);
	/* ok_pct below low_pct counts as low_pct: no dead band, no flapping rule broken. */
	struct ops_health_cfg k = cfg;
	k.heap_ok_pct = 5;
	in.heap_total = 1000;
	in.heap_free = 99;
	ops_health_eval(&h, &in, &k, &h);
	assert_true(h.reasons & OPS_HR_HEAP_LOW);
	in.heap_free = 100;
	ops_health_eval(&h, &in, &k, &h);
	assert_true(h.reasons & OPS_HR_HEAP_LOW);
	in.heap_free = 101;
	ops_health_eval(&h, &in, &k, &h);
	assert_false(h.reasons & OPS_HR_HEAP_LOW);
	/* Percentages above 100 count as 100. */
	k.heap_low_pct = 1000;
	k.heap_ok_pct = 1000;
	in.heap_free = 999;
	ops_health_eval(&h, &in, &k, &h);
	assert_true(h.reasons & OPS_HR_HEAP_LOW);
}

static void test_disk_hold(void **state)
{
	(void)state;
	static const struct {
		uint64_t now_ms, errors;
		bool flagged;
	} steps[] = {
		{ 1000, 0, false }, { 2000, 1, true },  { 4000, 1, true },  { 6999, 1, true },
		{ 7000, 1, false }, { 8000, 3, true },  { 9000, 0, true },  /* went down: not new */
		{ 13000, 0, false }, { 14000, 0, false }, { 15000, 1, true },
	};
	struct ops_health h;
	ops_health_init(&h);
	struct ops_health_inputs in = fine();
	for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
		in.now_ms = steps[i].now_ms;
		in.disk_errors = steps[i].errors;
		ops_health_eval(&h, &in, &cfg, &h);
		assert_true(ops_health_check(&h));
		if (((h.reasons & OPS_HR_DISK_ERRORS) != 0) != steps[i].flagged)
			fail_msg("step %zu: t %llu errors %llu flagged %d", i, (unsigned long long)steps[i].now_ms,
				 (unsigned long long)steps[i].errors, steps[i].flagged);
	}
	/* Hold 0: only the evaluation that saw the growth. */
	struct ops_health_cfg k = cfg;
	k.disk_hold_ms = 0;
	in.disk_errors = 2;
	ops_health_eval(&h, &in, &k, &h);
	assert_true(h.reasons & OPS_HR_DISK_ERRORS);
	ops_health_eval(&h, &in, &k, &h);
	assert_false(h.reasons & OPS_HR_DISK_ERRORS);
	/* A time going back while flagged counts as within the hold. */
	in.disk_errors = 3;
	in.now_ms = 20000;
	ops_health_eval(&h, &in, &cfg, &h);
	in.now_ms = 10;
	ops_health_eval(&h, &in, &cfg, &h);
	assert_true(h.reasons & OPS_HR_DISK_ERRORS);
}

static void test_refusing_with_degraded(void **state)
{
	(void)state;
	struct ops_health p, h;
	ops_health_init(&p);
	struct ops_health_inputs in = fine();
	in.admission_open = false;
	in.heap_free = 1;
	h = eval(&p, &in, &cfg);
	assert_int_equal(h.state, OPS_HEALTH_REFUSING);
	assert_int_equal(h.reasons, OPS_HR_ADMISSION_CLOSED | OPS_HR_HEAP_LOW);
	assert_string_equal(line(&h), "refusing (admission closed, heap low)");
	/* Everything at once. */
	in.db_backlog = 1u << 20;
	in.disk_errors = 9;
	in.clock_synced = false;
	in.watchdog_over_mask = 1;
	in.storage_failed = true;
	h = eval(&p, &in, &cfg);
	assert_int_equal(h.reasons, OPS_HR_ALL);
	assert_string_equal(line(&h), "refusing (admission closed, storage failed, heap low, database lag, "
				      "disk errors, clock unsynchronised, core over watchdog budget)");
	/* Storage optional and admission open: degraded, listed in bit order. */
	struct ops_health_cfg k = cfg;
	k.storage_required = false;
	in.admission_open = true;
	h = eval(&p, &in, &k);
	assert_int_equal(h.state, OPS_HEALTH_DEGRADED);
	assert_string_equal(line(&h), "degraded (heap low, database lag, disk errors, clock unsynchronised, "
				      "core over watchdog budget, storage failed)");
	/* Two degraded reasons, the example of the issue. */
	in = fine();
	in.heap_free = 1;
	in.clock_synced = false;
	h = eval(&p, &in, &cfg);
	assert_string_equal(line(&h), "degraded (heap low, clock unsynchronised)");
}

static void test_changed(void **state)
{
	(void)state;
	struct ops_health a, b;
	ops_health_init(&a);
	b = a;
	assert_false(ops_health_changed(&a, &b));
	/* Memory and the core mask are not changes worth a log line. */
	b.disk_errors_seen = 7;
	b.disk_error_at_ms = 9;
	b.watchdog_cores = 3;
	assert_false(ops_health_changed(&a, &b));
	b.reasons = OPS_HR_WATCHDOG;
	b.state = OPS_HEALTH_DEGRADED;
	assert_true(ops_health_changed(&a, &b));
	/* Same state, another reason: a change. */
	a = b;
	a.reasons = OPS_HR_DB_LAG;
	assert_true(ops_health_changed(&a, &b));
	a.reasons = b.reasons;
	a.state = OPS_HEALTH_REFUSING;
	assert_true(ops_health_changed(&a, &b));
	/* Repeated evaluation of the same figures: no change. */
	struct ops_health_inputs in = fine();
	in.clock_synced = false;
	ops_health_init(&a);
	ops_health_eval(&a, &in, &cfg, &b);
	assert_true(ops_health_changed(&a, &b));
	ops_health_eval(&b, &in, &cfg, &a);
	assert_false(ops_health_changed(&a, &b));
}

static void test_describe_truncation(void **state)
{
	(void)state;
	struct ops_health h = { OPS_HEALTH_DEGRADED, OPS_HR_HEAP_LOW | OPS_HR_CLOCK_UNSYNC, 0, 0, 0 };
	const char *full = "degraded (heap low, clock unsynchronised)";
	size_t n = strlen(full);
	assert_int_equal(ops_health_describe(&h, NULL, 0), n);
	for (size_t cap = 0; cap <= n + 2; cap++) {
		char buf[64];
		memset(buf, 'X', sizeof buf);
		assert_int_equal(ops_health_describe(&h, buf, cap), n);
		for (size_t i = cap; i < sizeof buf; i++)
			if (buf[i] != 'X')
				fail_msg("cap %zu: byte %zu written", cap, i);
		if (cap == 0)
			continue;
		size_t w = cap - 1 < n ? cap - 1 : n;
		assert_int_equal(buf[w], '\0');
		assert_memory_equal(buf, full, w);
	}
	/* Unknown values still describe without reading past tables. */
	struct ops_health bad = { (enum ops_health_state)7, 1u << 31, 0, 0, 0 };
	char buf[64];
	assert_int_equal(ops_health_describe(&bad, buf, sizeof buf), strlen("unknown (unknown)"));
	assert_string_equal(buf, "unknown (unknown)");
	assert_false(ops_health_check(&bad));
}

static void test_names_and_check(void **state)
{
	(void)state;
	assert_string_equal(ops_health_reason_name(OPS_HR_HEAP_LOW), "heap low");
	assert_string_equal(ops_health_reason_name(OPS_HR_DB_LAG), "database lag");
	assert_string_equal(ops_health_reason_name(OPS_HR_DISK_ERRORS), "disk errors");
	assert_string_equal(ops_health_reason_name(OPS_HR_CLOCK_UNSYNC), "clock unsynchronised");
	assert_string_equal(ops_health_reason_name(OPS_HR_WATCHDOG), "core over watchdog budget");
	assert_string_equal(ops_health_reason_name(OPS_HR_ADMISSION_CLOSED), "admission closed");
	assert_string_equal(ops_health_reason_name(OPS_HR_STORAGE_FAILED), "storage failed");
	assert_string_equal(ops_health_reason_name(0), "unknown");
	assert_string_equal(ops_health_reason_name(OPS_HR_HEAP_LOW | OPS_HR_DB_LAG), "unknown");
	assert_string_equal(ops_health_reason_name(128), "unknown");
	assert_string_equal(ops_health_state_name(OPS_HEALTH_SERVING), "serving");
	assert_string_equal(ops_health_state_name(OPS_HEALTH_DEGRADED), "degraded");
	assert_string_equal(ops_health_state_name(OPS_HEALTH_REFUSING), "refusing");
	assert_string_equal(ops_health_state_name(3), "unknown");
	/* The invariant refuses inconsistent pairs. */
	struct ops_health h = { OPS_HEALTH_SERVING, OPS_HR_DB_LAG, 0, 0, 0 };
	assert_false(ops_health_check(&h));
	h = (struct ops_health){ OPS_HEALTH_DEGRADED, 0, 0, 0, 0 };
	assert_false(ops_health_check(&h));
	h = (struct ops_health){ OPS_HEALTH_DEGRADED, OPS_HR_ADMISSION_CLOSED, 0, 0, 0 };
	assert_false(ops_health_check(&h));
	h = (struct ops_health){ OPS_HEALTH_REFUSING, OPS_HR_HEAP_LOW, 0, 0, 0 };
	assert_false(ops_health_check(&h));
	h = (struct ops_health){ OPS_HEALTH_REFUSING, OPS_HR_STORAGE_FAILED, 0, 0, 0 };
	assert_true(ops_health_check(&h));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_serving),
		cmocka_unit_test(test_each_reason),
		cmocka_unit_test(test_thresholds),
		cmocka_unit_test(test_heap_hysteresis),
		cmocka_unit_test(test_disk_hold),
		cmocka_unit_test(test_refusing_with_degraded),
		cmocka_unit_test(test_changed),
		cmocka_unit_test(test_describe_truncation),
		cmocka_unit_test(test_names_and_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
