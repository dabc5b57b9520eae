/* SPDX-License-Identifier: MIT
 *
 * The wall clock's arithmetic, its publication to every core and its discipline
 * (kernel/wallclock.h, which holds the design note and invariants). Owns no global state:
 * the platform owns the struct wallclock and the struct wallclock_disc. Integer
 * arithmetic only, every product bounded to 64 bits (the rate by
 * WALLCLOCK_RATE_LIMIT_PPB, ratios by scaling both terms down first).
 */
#include "kernel/wallclock.h"

#define NS_PER_S 1000000000ull

/* d * ppb / 1e9, split so the products stay in 64 bits for |ppb| <= the rate limit. */
static int64_t wc_scale(uint64_t d, int32_t ppb)
{
	return (int64_t)(d / NS_PER_S) * ppb + (int64_t)(d % NS_PER_S) * ppb / (int64_t)NS_PER_S;
}

uint64_t wallclock_at(const struct wallclock_params *p, uint64_t mono_ns)
{
	if (!p->base_wall_ns)
		return 0;
	if (mono_ns >= p->base_mono_ns) {
		uint64_t d = mono_ns - p->base_mono_ns;
		return p->base_wall_ns + d + (uint64_t)wc_scale(d, p->rate_ppb);
	}
	uint64_t d = p->base_mono_ns - mono_ns;
	return p->base_wall_ns - d - (uint64_t)wc_scale(d, p->rate_ppb);
}

uint64_t wallclock_mono_at(const struct wallclock_params *p, uint64_t wall_ns)
{
	if (!p->base_wall_ns || wall_ns <= p->base_wall_ns)
		return p->base_mono_ns;
	/* dw / (1 + rate): k = 1e18 / (1e9 + rate) is the monotonic ns per 1e9 wall ns. */
	uint64_t dw = wall_ns - p->base_wall_ns;
	uint64_t k = NS_PER_S * NS_PER_S / (uint64_t)((int64_t)NS_PER_S + p->rate_ppb);
	return p->base_mono_ns + dw / NS_PER_S * k + dw % NS_PER_S * k / NS_PER_S;
}

void wallclock_publish(struct wallclock *w, const struct wallclock_params *p)
{
	uint32_t s = atomic_load_explicit(&w->seq, memory_order_relaxed);
	atomic_store_explicit(&w->seq, s + 1u, memory_order_relaxed);
	/* Release fence: the odd count is visible before any new field value, so a reader
	 * that sees a new field then sees seq changed at its second load (pairs with the
	 * reader's acquire fence). */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&w->base_mono_ns, p->base_mono_ns, memory_order_relaxed);
	atomic_store_explicit(&w->base_wall_ns, p->base_wall_ns, memory_order_relaxed);
	atomic_store_explicit(&w->rate_ppb, p->rate_ppb, memory_order_relaxed);
	/* Release: the fields are visible to a reader that acquires the even count. */
	atomic_store_explicit(&w->seq, s + 2u, memory_order_release);
}

void wallclock_read(const struct wallclock *w, struct wallclock_params *out)
{
	for (;;) {
		/* Acquire: fields read below are at least as new as this count's version. */
		uint32_t s1 = atomic_load_explicit(&w->seq, memory_order_acquire);
		out->base_mono_ns = atomic_load_explicit(&w->base_mono_ns, memory_order_relaxed);
		out->base_wall_ns = atomic_load_explicit(&w->base_wall_ns, memory_order_relaxed);
		out->rate_ppb = atomic_load_explicit(&w->rate_ppb, memory_order_relaxed);
		/* Acquire fence: the field loads complete before the count is read again; if a
		 * writer's store reached any of them, this load sees its odd (or later) count. */
		atomic_thread_fence(memory_order_acquire);
		uint32_t s2 = atomic_load_explicit(&w->seq, memory_order_relaxed);
		if (s1 == s2 && !(s1 & 1u))
			return;
	}
}

/* num * 1e9 / den (den > 0), both scaled down first so the product fits: exact enough
 * (relative 2^-32) for the ratios here. */
static int64_t wc_ppb(int64_t num, uint64_t den)
{
	bool neg = num < 0;
	uint64_t n = neg ? (uint64_t)0 - (uint64_t)num : (uint64_t)num;
	while (n >= (1ull << 33) || den >= (1ull << 62)) {
		n >>= 1;
		den >>= 1;
	}
	if (!den)
		return neg ? -WALLCLOCK_RATE_LIMIT_PPB - 1ll : WALLCLOCK_RATE_LIMIT_PPB + 1ll;
	int64_t r = (int64_t)(n * NS_PER_S / den);
	return neg ? -r : r;
}

static int32_t wc_clamp(int64_t v, int32_t lim)
{
	return v > lim ? lim : v < -lim ? -lim : (int32_t)v;
}

void wallclock_disc_init(struct wallclock_disc *d, uint64_t wall_ns, uint64_t mono_ns)
{
	*d = (struct wallclock_disc){ 0 };
	d->p.base_mono_ns = mono_ns;
	d->p.base_wall_ns = wall_ns;
}

void wallclock_disc_sample(struct wallclock_disc *d, const struct wallclock_disc_config *cfg, uint64_t rtc_ns,
			   uint64_t mono_ns, struct wallclock_sample_result *out)
{
	int32_t lim = cfg->max_rate_ppb;
	if (lim < 0 || lim > WALLCLOCK_RATE_LIMIT_PPB)
		lim = WALLCLOCK_RATE_LIMIT_PPB;
	*out = (struct wallclock_sample_result){ .action = WALLCLOCK_SLEW };
	d->n_samples++;
	uint64_t wall = wallclock_at(&d->p, mono_ns);
	if (!wall) {
		out->action = WALLCLOCK_SET;
		d->p = (struct wallclock_params){ mono_ns, rtc_ns, wc_clamp(d->freq_ppb, lim) };
		goto keep_ref;
	}
	out->error_ns = (int64_t)(wall - rtc_ns);
	if (d->have_ref && mono_ns > d->ref_mono_ns && mono_ns - d->ref_mono_ns >= cfg->min_interval_ns) {
		uint64_t dm = mono_ns - d->ref_mono_ns;
		int64_t dr = (int64_t)(rtc_ns - d->ref_rtc_ns);
		int64_t f = wc_ppb(dr - (int64_t)dm, dm);
		if (dr <= 0 || f > lim || f < -lim) {
			out->ref_jump = true;
		} else {
			d->freq_ppb = (int32_t)f;
			out->freq_measured = true;
		}
	}
	uint64_t mag = out->error_ns < 0 ? (uint64_t)0 - (uint64_t)out->error_ns : (uint64_t)out->error_ns;
	if (mag > cfg->step_ns || out->ref_jump) {
		out->action = WALLCLOCK_STEP;
		d->n_steps++;
		d->p = (struct wallclock_params){ mono_ns, rtc_ns, wc_clamp(d->freq_ppb, lim) };
	} else {
		/* The next sample comes period_ns of reference time later, which is
		 * period_ns / (1 + freq) of monotonic time: remove the error over that. */
		int64_t phase = cfg->period_ns ? wc_ppb(-out->error_ns, cfg->period_ns) : 0;
		phase += wc_scale(phase < 0 ? (uint64_t)-phase : (uint64_t)phase, d->freq_ppb) * (phase < 0 ? -1 : 1);
		d->p = (struct wallclock_params){ mono_ns, wall, wc_clamp((int64_t)d->freq_ppb + phase, lim) };
	}
keep_ref:
	d->have_ref = true;
	d->ref_mono_ns = mono_ns;
	d->ref_rtc_ns = rtc_ns;
}
