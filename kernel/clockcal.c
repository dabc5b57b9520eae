/* SPDX-License-Identifier: MIT
 *
 * Counter calibration arithmetic (kernel/clockcal.h): window frequency from bracketed
 * samples, discard rule, median. Pure functions, no state; portable and host-tested
 * (tests/unit/kernel/test_clockcal.c). Never divides by zero: a window whose reference
 * span is zero is discarded.
 */
#include "kernel/clockcal.h"

/* Reference times are compared in half ticks so a bracket's midpoint stays an integer:
 * a sample's time is 2 * ref_before + bracket. */
uint64_t clockcal_window_hz(const struct clockcal_ref *ref, const struct clockcal_window *w)
{
	uint32_t m = ref->mask;
	uint32_t bs = (w->start.ref_after - w->start.ref_before) & m;
	uint32_t be = (w->end.ref_after - w->end.ref_before) & m;
	uint32_t d = (w->end.ref_before - w->start.ref_before) & m;
	if (bs > ref->max_bracket || be > ref->max_bracket)
		return 0;
	if (w->end.count <= w->start.count)
		return 0;
	int64_t span2 = 2 * (int64_t)d + (int64_t)be - (int64_t)bs; /* half ticks */
	if (span2 <= 0)
		return 0;
	uint64_t dc = w->end.count - w->start.count;
	/* dc * hz * 2 fits 64 bits for any window under a few seconds of a counter below
	 * 100 GHz against a reference below 2^31 Hz; split anyway so longer ones stay exact. */
	uint64_t num_hz = ref->hz * 2u;
	uint64_t s = (uint64_t)span2;
	return dc / s * num_hz + dc % s * num_hz / s;
}

void clockcal_median(const struct clockcal_ref *ref, const struct clockcal_window *w, uint32_t n,
		     struct clockcal_result *out)
{
	uint64_t hz[CLOCKCAL_MAX_WINDOWS];
	uint32_t k = 0, dropped = 0;
	if (n > CLOCKCAL_MAX_WINDOWS)
		n = CLOCKCAL_MAX_WINDOWS;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = clockcal_window_hz(ref, &w[i]);
		if (!v) {
			dropped++;
			continue;
		}
		uint32_t j = k++; /* insertion sort: a handful of values */
		while (j > 0 && hz[j - 1] > v) {
			hz[j] = hz[j - 1];
			j--;
		}
		hz[j] = v;
	}
	out->n_kept = k;
	out->n_discarded = dropped;
	if (!k) {
		out->hz = out->min_hz = out->max_hz = 0;
		return;
	}
	/* Even counts: the lower middle, so a result is always one window's measurement. */
	out->hz = hz[(k - 1) / 2];
	out->min_hz = hz[0];
	out->max_hz = hz[k - 1];
}

uint32_t clockcal_spread_ppm(const struct clockcal_result *r)
{
	if (!r->hz)
		return 0;
	uint64_t ppm = (r->max_hz - r->min_hz) * 1000000u / r->hz;
	return ppm > UINT32_MAX ? UINT32_MAX : (uint32_t)ppm;
}
