/* SPDX-License-Identifier: MIT
 *
 * Calibration of a free-running counter (the TSC) against a reference counter of known
 * frequency (the ACPI PM timer, a PIT count): the arithmetic only, so it is host-tested;
 * the platform reads the hardware. Each window has a start and an end sample; a sample
 * reads the reference, then the counter, then the reference again, and the pair of
 * reference reads brackets the moment the counter was read. A virtual CPU descheduled
 * between the two samples costs nothing (both counters keep running); one descheduled
 * inside a sample widens its bracket, and a window with a bracket wider than the
 * configured bound is discarded. The result is the median of the windows kept.
 * Nothing here allocates or keeps state; every function is pure.
 */
#ifndef KERNEL_CLOCKCAL_H
#define KERNEL_CLOCKCAL_H

#include "lib/compiler.h"

#define CLOCKCAL_MAX_WINDOWS 16u

/* One sample: reference before, counter, reference after (reference values as read,
 * masked to its width). */
struct clockcal_sample {
	uint32_t ref_before, ref_after;
	uint64_t count;
};

struct clockcal_window {
	struct clockcal_sample start, end;
};

struct clockcal_ref {
	uint64_t hz;            /* reference frequency, e.g. 3579545 */
	uint32_t mask;          /* counter width: 0xffffff (24 bits) or 0xffffffff */
	uint32_t max_bracket;   /* widest ref_after - ref_before kept, in reference ticks */
};

struct clockcal_result {
	uint64_t hz;        /* median of the windows kept; 0 when none was */
	uint64_t min_hz, max_hz; /* of the windows kept */
	uint32_t n_kept, n_discarded;
};

/* The counter's frequency from one window (Hz), the reference time of each sample taken
 * as its bracket's midpoint; 0 when the window is discarded: a bracket wider than
 * ref->max_bracket, no reference time between the samples, or the counter not advancing.
 * The window must span less than one wrap of the reference (the caller's windows last
 * milliseconds; 24 bits at 3.58 MHz wrap after 4.7 s). `ref` and `w` borrowed. */
uint64_t clockcal_window_hz(const struct clockcal_ref *ref, const struct clockcal_window *w);

/* The median over n windows (at most CLOCKCAL_MAX_WINDOWS; more are ignored) of those
 * kept, with their spread and counts in *out. `ref` and `w` borrowed. */
void clockcal_median(const struct clockcal_ref *ref, const struct clockcal_window *w, uint32_t n,
		     struct clockcal_result *out /* out */);

/* The spread of a result in parts per million of its median (0 when hz is 0). */
uint32_t clockcal_spread_ppm(const struct clockcal_result *r);

#endif
