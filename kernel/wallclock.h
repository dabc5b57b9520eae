/* SPDX-License-Identifier: MIT
 *
 * The wall clock over the monotonic clock, and its discipline against a reference that
 * counts whole seconds (the CMOS RTC now, SNTP later). Portable and host-tested.
 *
 *   wall_ns(mono) = base_wall_ns + (mono - base_mono_ns) * (1 + rate_ppb / 1e9)
 *
 * The monotonic clock is never touched: a correction moves only these three numbers, so
 * a step (the wall clock jumps, forwards or back) or a slew (its rate changes) never
 * makes the monotonic clock, timers or timeouts jump. The parameters are published by
 * one writer (one core) to every reader (every core) through a sequence counter
 * (wallclock_publish / wallclock_read); the discipline (wallclock_disc_sample) is a pure
 * function of its state and one reference sample, so its decisions are unit-tested.
 */
#ifndef KERNEL_WALLCLOCK_H
#define KERNEL_WALLCLOCK_H

#include <stdatomic.h>
#include "lib/compiler.h"

/* |rate_ppb| never exceeds this (keeps wallclock_at's products inside 64 bits). */
#define WALLCLOCK_RATE_LIMIT_PPB 500000000

struct wallclock_params {
	uint64_t base_mono_ns;
	uint64_t base_wall_ns; /* Unix time in ns at base_mono_ns; 0: the time is unknown */
	int32_t rate_ppb;      /* wall ns per monotonic ns, minus one, in parts per billion */
};

/* Unix ns at monotonic time mono_ns (before or after the base); 0 when unknown. */
uint64_t wallclock_at(const struct wallclock_params *p, uint64_t mono_ns);
/* The inverse: the monotonic time at which the wall clock reads wall_ns (base_mono_ns
 * for any time at or before base_wall_ns, or when the time is unknown). To schedule. */
uint64_t wallclock_mono_at(const struct wallclock_params *p, uint64_t wall_ns);

/* The published copy. Invariant: `seq` is odd exactly while the writer changes the fields;
 * a reader that saw the same even value before and after reading them read one version. */
struct wallclock {
	_Atomic uint32_t seq;
	_Atomic uint64_t base_mono_ns, base_wall_ns;
	_Atomic int32_t rate_ppb;
};

/* Writer: at most one core ever calls it for a given `w` (p borrowed). Never blocks. */
void wallclock_publish(struct wallclock *w, const struct wallclock_params *p);
/* Any core, any time (not from an interrupt handler that may interrupt the writer on its
 * own core: it would spin forever). Retries while a publication is in progress. */
void wallclock_read(const struct wallclock *w, struct wallclock_params *out /* out */);

/* ---- discipline ----
 * Design note. State: the published parameters `p`, the last reference sample kept as the
 * frequency reference (ref_*), and the measured frequency of the reference against the
 * monotonic clock (freq_ppb). Each sample is (rtc_ns, mono_ns): the reference read at the
 * instant its second began, observed at mono_ns. Invariants:
 *  1. |p.rate_ppb| <= cfg.max_rate_ppb <= WALLCLOCK_RATE_LIMIT_PPB, |freq_ppb| too.
 *  2. Continuity: a SLEW keeps wallclock_at(p, mono_ns) unchanged at the sample; only a
 *     SET or a STEP moves it (to rtc_ns).
 *  3. After any sample, ref_* is that sample (have_ref).
 * Transitions: UNKNOWN (base_wall 0) --sample--> SET; then per sample: |error| > step_ns,
 * or the reference moved by more than max_rate over the interval (a jump: its clock was
 * changed) --> STEP (frequency kept); otherwise SLEW: rate = frequency - error * (1 +
 * frequency) / period, so the error is gone at the sample one period of reference time
 * later if the frequency holds. */
struct wallclock_disc_config {
	uint64_t step_ns;         /* |error| above this steps the wall clock */
	uint64_t period_ns;       /* reference time to the next sample: the error is slewed out over it */
	uint64_t min_interval_ns; /* the frequency is measured over at least this */
	int32_t max_rate_ppb;     /* bound on rate and frequency (<= WALLCLOCK_RATE_LIMIT_PPB) */
};

struct wallclock_disc {
	struct wallclock_params p;
	bool have_ref;
	uint64_t ref_mono_ns, ref_rtc_ns;
	int32_t freq_ppb;
	uint32_t n_samples, n_steps;
};

enum wallclock_action {
	WALLCLOCK_SET,  /* first sample: the time was unknown */
	WALLCLOCK_STEP, /* error beyond step_ns, or the reference jumped */
	WALLCLOCK_SLEW, /* rate adjusted */
};

struct wallclock_sample_result {
	enum wallclock_action action;
	int64_t error_ns;   /* wall clock minus reference at the sample (0 for SET) */
	bool freq_measured; /* freq_ppb was measured from this interval */
	bool ref_jump;      /* the reference moved implausibly: frequency not measured */
};

/* Start with the boot estimate: wall_ns (0: unknown) at mono_ns, rate 0, no reference. */
void wallclock_disc_init(struct wallclock_disc *d /* out */, uint64_t wall_ns, uint64_t mono_ns);
/* One reference sample (see the design note); d updated, cfg borrowed. */
void wallclock_disc_sample(struct wallclock_disc *d, const struct wallclock_disc_config *cfg, uint64_t rtc_ns,
			   uint64_t mono_ns, struct wallclock_sample_result *out /* out */);

#endif
