/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/wallclock: the wall clock's arithmetic (rates, either side of the
 * base), the sequence-counter publication under a concurrent writer, and the discipline
 * as a pure function of (state, reference sample): a TSC calibrated 9 % fast converges
 * within three samples, small errors are slewed with the wall clock continuous at the
 * sample, large ones stepped, a reference that jumps is not taken as a frequency, the
 * rate stays bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>

#include "kernel/wallclock.h"

#define S 1000000000ull
#define MS 1000000ull

static uint64_t absd(int64_t v)
{
	return v < 0 ? (uint64_t)-v : (uint64_t)v;
}

static void test_at(void **state)
{
	(void)state;
	struct wallclock_params p = { 10 * S, 1767225600ull * S, 0 };
	assert_true(wallclock_at(&p, 10 * S) == 1767225600ull * S);
	assert_true(wallclock_at(&p, 12 * S) == 1767225602ull * S);
	assert_true(wallclock_at(&p, 9 * S) == 1767225599ull * S); /* before the base */
	p.rate_ppb = 90000000;                                   /* +9 % */
	assert_true(wallclock_at(&p, 110 * S) == 1767225600ull * S + 109 * S);
	assert_true(wallclock_at(&p, 10 * S + 500) == 1767225600ull * S + 545);
	p.rate_ppb = -WALLCLOCK_RATE_LIMIT_PPB;
	assert_true(wallclock_at(&p, 12 * S) == 1767225601ull * S);
	/* A day past the base at the rate limit: no overflow. */
	p.rate_ppb = WALLCLOCK_RATE_LIMIT_PPB;
	assert_true(wallclock_at(&p, 10 * S + 86400 * S) == 1767225600ull * S + 129600 * S);
	p.base_wall_ns = 0; /* unknown */
	assert_true(wallclock_at(&p, 12 * S) == 0);
	assert_true(wallclock_mono_at(&p, 1767225700ull * S) == 10 * S);
}

static void test_mono_at_inverts(void **state)
{
	(void)state;
	static const int32_t rates[] = { 0, 90000000, -90000000, 12345, WALLCLOCK_RATE_LIMIT_PPB,
					 -WALLCLOCK_RATE_LIMIT_PPB };
	for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
		struct wallclock_params p = { 77 * S, 1767225600ull * S, rates[i] };
		for (uint64_t dw = 1; dw < 86400 * S; dw = dw * 7 + 13) {
			uint64_t m = wallclock_mono_at(&p, p.base_wall_ns + dw);
			assert_true(m >= p.base_mono_ns);
			/* Rounding: k is exact to 1 ns in 1e9, so a few ns per second of distance
			 * (86 us a day ahead: plenty to schedule by). */
			assert_true(absd((int64_t)(wallclock_at(&p, m) - (p.base_wall_ns + dw))) <= 2 * (dw / S) + 4);
		}
		assert_true(wallclock_mono_at(&p, p.base_wall_ns - S) == p.base_mono_ns); /* past */
	}
}

/* ---- publication: a reader never sees a mix of two versions ---- */
static struct wallclock pub;
static _Atomic int stop;

static _Atomic uint64_t n_reads;

static void *writer(void *arg)
{
	(void)arg;
	while (atomic_load(&n_reads) == 0)
		; /* start once the reader reads */
	for (uint64_t i = 1; i <= 200000; i++) {
		struct wallclock_params p = { i, i * 3u, (int32_t)(i % 1000u) };
		wallclock_publish(&pub, &p);
	}
	atomic_store(&stop, 1);
	return NULL;
}

static void test_publish_read_consistent(void **state)
{
	(void)state;
	struct wallclock_params p = { 1, 3, 1 }, q;
	wallclock_publish(&pub, &p);
	wallclock_read(&pub, &q);
	assert_true(q.base_mono_ns == 1 && q.base_wall_ns == 3 && q.rate_ppb == 1);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, writer, NULL), 0);
	uint64_t n = 0, last = 0;
	while (!atomic_load(&stop)) {
		wallclock_read(&pub, &q);
		assert_true(q.base_wall_ns == q.base_mono_ns * 3u);
		assert_true((uint64_t)q.rate_ppb == q.base_mono_ns % 1000u);
		assert_true(q.base_mono_ns >= last); /* never an older version after a newer one */
		last = q.base_mono_ns;
		atomic_store(&n_reads, ++n);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	wallclock_read(&pub, &q);
	assert_true(q.base_mono_ns == 200000);
	print_message("  %lu consistent reads during 200000 publications\n", (unsigned long)n);
}

/* ---- discipline ---- */
static const struct wallclock_disc_config cfg60 = {
	.step_ns = 1 * S, .period_ns = 60 * S, .min_interval_ns = 1 * S, .max_rate_ppb = 200000000,
};

/* A machine whose TSC frequency was measured 9 % too high: the monotonic clock advances
 * 1/1.09 ns per real ns. Real time is tracked in ns since the epoch as `t`. */
static uint64_t mono_of(uint64_t t_real_ns, uint64_t boot_real_ns)
{
	return (t_real_ns - boot_real_ns) * 100u / 109u;
}

static void run_skewed(const struct wallclock_disc_config *cfg, uint64_t period_s, unsigned n,
		       int64_t *errors, enum wallclock_action *acts)
{
	const uint64_t boot = 1767225600ull * S + 300 * MS; /* real time at mono 0 */
	struct wallclock_disc d;
	/* The boot estimate: the RTC said ...600 at mono 0; centred on its second. */
	wallclock_disc_init(&d, 1767225600ull * S + 500 * MS, 0);
	uint64_t t = 1767225601ull * S; /* first boundary after the loop started */
	for (unsigned i = 0; i < n; i++, t += period_s * S) {
		struct wallclock_sample_result r;
		uint64_t before = wallclock_at(&d.p, mono_of(t, boot));
		wallclock_disc_sample(&d, cfg, t, mono_of(t, boot), &r);
		errors[i] = r.error_ns;
		acts[i] = r.action;
		assert_true(before - t == (uint64_t)r.error_ns);
		if (r.action == WALLCLOCK_SLEW) /* invariant 2: continuous at the sample */
			assert_true(wallclock_at(&d.p, mono_of(t, boot)) == before);
		else
			assert_true(wallclock_at(&d.p, mono_of(t, boot)) == t);
		assert_true(absd(d.p.rate_ppb) <= (uint64_t)cfg->max_rate_ppb);
	}
}

static void test_skew_9pct_converges(void **state)
{
	(void)state;
	int64_t e[6];
	enum wallclock_action a[6];
	/* 60 s period: the boot error (+0.5 s - 0.3 s) is slewed, the 5 s lost over the first
	 * minute is stepped, then the frequency holds the error near zero. */
	run_skewed(&cfg60, 60, 6, e, a);
	for (unsigned i = 0; i < 6; i++)
		print_message("  60 s period, sample %u: %s error %ld us\n", i,
			      a[i] == WALLCLOCK_STEP ? "step" : a[i] == WALLCLOCK_SLEW ? "slew" : "set",
			      (long)(e[i] / 1000));
	assert_int_equal(a[0], WALLCLOCK_SLEW);
	assert_true(absd(e[0]) < 500 * MS);
	assert_int_equal(a[1], WALLCLOCK_STEP);
	assert_true(e[1] < -4 * (int64_t)S);
	for (unsigned i = 2; i < 6; i++) {
		assert_int_equal(a[i], WALLCLOCK_SLEW);
		assert_true(absd(e[i]) < 1 * MS);
	}
	/* 2 s period (the smoke test's): every error is below the step bound; within three
	 * samples the error is below a millisecond. */
	struct wallclock_disc_config c2 = cfg60;
	c2.period_ns = 2 * S;
	run_skewed(&c2, 2, 6, e, a);
	for (unsigned i = 0; i < 6; i++)
		assert_int_equal(a[i], WALLCLOCK_SLEW);
	for (unsigned i = 3; i < 6; i++)
		assert_true(absd(e[i]) < 1 * MS);
}

static void test_set_step_slew_decisions(void **state)
{
	(void)state;
	struct wallclock_disc d;
	struct wallclock_sample_result r;
	/* Unknown time: the first sample sets it. */
	wallclock_disc_init(&d, 0, 5 * S);
	wallclock_disc_sample(&d, &cfg60, 1800000000ull * S, 6 * S, &r);
	assert_int_equal(r.action, WALLCLOCK_SET);
	assert_true(wallclock_at(&d.p, 6 * S) == 1800000000ull * S);
	/* 0.9 s fast a minute later: slewed (rate -15 ms/s), not stepped. */
	wallclock_disc_sample(&d, &cfg60, 1800000060ull * S - 900 * MS, 66 * S, &r);
	assert_int_equal(r.action, WALLCLOCK_SLEW);
	assert_true(r.error_ns == (int64_t)(900 * MS));
	assert_true(r.freq_measured);
	/* The RTC elapsed 59.1 s over 60 s: frequency -15 ms/s, and -15 ms/s of reference time
	 * (0.985 of it in monotonic time) to take the 0.9 s back over the next minute. */
	assert_int_equal(d.freq_ppb, -15000000);
	assert_true(absd(d.p.rate_ppb + 29775000) < 10);
	/* 2.7 s off a minute later: stepped, the wall clock now equals the reference. */
	wallclock_disc_sample(&d, &cfg60, 1800000120ull * S, 126 * S, &r);
	assert_true(r.error_ns < -(int64_t)S);
	assert_int_equal(r.action, WALLCLOCK_STEP);
	assert_int_equal(d.n_steps, 1);
	/* The reference goes back an hour (its clock was set): a jump, stepped, frequency kept. */
	int32_t f = d.freq_ppb;
	wallclock_disc_sample(&d, &cfg60, 1800000180ull * S - 3600 * S, 186 * S, &r);
	assert_true(r.ref_jump);
	assert_false(r.freq_measured);
	assert_int_equal(r.action, WALLCLOCK_STEP);
	assert_int_equal(d.freq_ppb, f);
	/* ... or forward by 30 % over the interval: also a jump, not a frequency. */
	wallclock_disc_sample(&d, &cfg60, 1800000180ull * S - 3600 * S + 78 * S, 246 * S, &r);
	assert_true(r.ref_jump);
	assert_int_equal(d.freq_ppb, f);
	/* Two samples closer than min_interval: no frequency from them. */
	wallclock_disc_sample(&d, &cfg60, 1800000180ull * S - 3600 * S + 79 * S, 246 * S + S / 2, &r);
	assert_false(r.freq_measured);
}

static void test_rate_bounded(void **state)
{
	(void)state;
	struct wallclock_disc_config c = cfg60;
	c.step_ns = 3600 * S; /* never step: only the slew's bound holds the rate */
	c.period_ns = S;
	struct wallclock_disc d;
	struct wallclock_sample_result r;
	wallclock_disc_init(&d, 1800000000ull * S, 0);
	wallclock_disc_sample(&d, &c, 1800000000ull * S + 1000 * S, 10 * S, &r);
	assert_int_equal(r.action, WALLCLOCK_SLEW);
	assert_int_equal(d.p.rate_ppb, c.max_rate_ppb);
	c.max_rate_ppb = -1; /* out of range: the hard limit applies */
	wallclock_disc_sample(&d, &c, 1800000000ull, 20 * S, &r);
	assert_true(r.ref_jump);
	assert_true(absd(d.p.rate_ppb) <= WALLCLOCK_RATE_LIMIT_PPB);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_at),
		cmocka_unit_test(test_mono_at_inverts),
		cmocka_unit_test(test_publish_read_consistent),
		cmocka_unit_test(test_skew_9pct_converges),
		cmocka_unit_test(test_set_step_slew_decisions),
		cmocka_unit_test(test_rate_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
