/* SPDX-License-Identifier: MIT
 *
 * The x86_64 wall clock: kernel/wallclock over x86_now_ns(), set at boot from one CMOS RTC
 * read (the middle of the second it names: the read is not aligned to its start), then
 * disciplined by core 0, which re-reads the RTC every clock.rtc_resync_s at the instant a
 * second begins and steps the wall clock (error above clock.step_ms) or changes its rate
 * (below: the error is gone by the next read), until SNTP's agreed time replaces the RTC
 * as the reference (x86_wall_reference, from kernel/node/opsd.c on core 0: from then on
 * the RTC is not read again). The monotonic clock (x86_now_ns, timers, timeouts) is never
 * changed.
 *
 * Owns: the published parameters (struct wallclock: written by the boot core before the
 * other cores start, then only by core 0's handler; read by every core through its
 * sequence counter), the discipline state and the resync state machine (core 0 only).
 * State machine of x86_wall_resync_poll (core 0's loop):
 *   WAIT_DUE --now >= due--> WATCH (probe the seconds register every WALL_PROBE_GAP_NS;
 *            the handler reports work so the loop does not halt in between: a boundary
 *            placed within about that much, each probe's port I/O (a VM exit under KVM)
 *            costing a few percent of core 0 while watching)
 *   WATCH --seconds changed, bracket <= WALL_MAX_BRACKET_NS--> read the RTC, correct,
 *            WAIT_DUE with due = WALL_LEAD_NS plus the error just slewed (the wall clock may
 *            still be that far off until it is gone) before the wall clock reaches the next
 *            read's second, at most a second before it: the busy wait lasts ~50 ms once
 *            the clock is right, and the next read is one period of RTC time later, as the
 *            slew assumes
 *   WATCH --bracket wider (the loop was busy elsewhere)--> WATCH the next second
 *   WATCH --WALL_WATCH_MAX_NS without a usable boundary, or the RTC unreadable--> WAIT_DUE
 *            one period later (counted in n_rejected)
 * Never blocks: one call is one probe (two port reads), or one RTC read at the boundary.
 */
#include "arch/x86_64/x86.h"
#include "kernel/cmdline.h"
#include "kernel/log.h"
#include "kernel/time.h"
#include "kernel/wallclock.h"
#include "lib/fmt.h"
#include "urmqtt_config.h"

#define NS_PER_S 1000000000ull
#define NS_PER_MS 1000000ull
#define WALL_LEAD_NS (50ull * NS_PER_MS)
/* Widest (last probe with the old second, first with the new) kept: the UIP window
 * (244 us, plus the update's ~2 ms on real hardware) and a few loop passes. */
#define WALL_MAX_BRACKET_NS (5ull * NS_PER_MS)
#define WALL_WATCH_MAX_NS (3ull * NS_PER_S)
#define WALL_PROBE_GAP_NS (200ull * 1000u)
/* 25 %: a TSC that far off (or an RTC moving that fast) is broken, not slow: a step. */
#define WALL_MAX_RATE_PPB 250000000
/* Slews of clock.log_error_ms or more are logged at most this often (steps always). */
#define WALL_LOG_GAP_NS (600ull * NS_PER_S)
/* The frequency is measured over at least this much monotonic time. */
#define WALL_MIN_INTERVAL_NS (1ull * NS_PER_S)

enum wall_state { WALL_WAIT_DUE, WALL_WATCH };

static struct wallclock wall_pub;
static struct wallclock_disc wall_disc;
static struct wallclock_disc_config wall_cfg;
static uint64_t wall_period_s;
static enum wall_state wall_state;
static uint64_t wall_due_ns;       /* monotonic: when to start watching */
static uint64_t wall_watch_ns;     /* monotonic: when this watch began */
static uint64_t wall_last_same_ns; /* monotonic: before the last probe that read wall_sec */
static int wall_sec = -1;          /* the seconds register as last read; -1: not yet */
static uint64_t wall_probe_ns;     /* monotonic: the last probe */
static uint64_t wall_last_log_ns;
static bool wall_logged;
static bool wall_sntp; /* SNTP is the reference: the RTC is no longer read */
static struct x86_wall_stats wall_stats;

/* Development images: clock_resync_s=N (1..86400) replaces clock.rtc_resync_s. */
static uint64_t wall_period_knob(const char *cmdline, size_t len)
{
	uint64_t s = CONF_CLOCK_RTC_RESYNC_S;
#ifndef URMQTT_PROD
	char v[8];
	uint64_t n = 0;
	if (cmdline_get(cmdline, len, "clock_resync_s", v, sizeof v) != 0)
		return s;
	const char *c = v;
	for (; *c >= '0' && *c <= '9' && n <= 86400u; c++)
		n = n * 10u + (uint64_t)(*c - '0');
	if (*c || c == v || n < 1 || n > 86400u) {
		LOG_WARN("clock", "ignoring clock_resync_s=%s (want 1..86400)", v);
		return s;
	}
	s = n;
#else
	(void)cmdline;
	(void)len;
#endif
	return s;
}

void x86_wall_clock_init(const char *cmdline, size_t cmdline_len)
{
	struct time_civil civ;
	uint64_t s = 0, wall = 0;
	if (x86_rtc_read(&s, &civ) == 0)
		wall = s * NS_PER_S + NS_PER_S / 2;
	else
		LOG_WARN("boot", "broker: no usable RTC; certificates will look not yet valid");
	wallclock_disc_init(&wall_disc, wall, x86_now_ns());
	wallclock_publish(&wall_pub, &wall_disc.p);
	wall_period_s = wall_period_knob(cmdline, cmdline_len);
	wall_cfg = (struct wallclock_disc_config){
		.step_ns = CONF_CLOCK_STEP_MS * NS_PER_MS,
		.period_ns = wall_period_s * NS_PER_S,
		.min_interval_ns = WALL_MIN_INTERVAL_NS,
		.max_rate_ppb = WALL_MAX_RATE_PPB,
	};
	wall_stats.period_s = wall_period_s;
	wall_state = WALL_WAIT_DUE;
	wall_due_ns = 0; /* the first aligned read as soon as core 0's loop runs */
	if (wall_period_s)
		LOG_INFO("clock", "wall clock: the RTC is re-read every %lu s at a second boundary; errors above "
				  "%lu ms are stepped, smaller ones slewed",
			 (unsigned long)wall_period_s, (unsigned long)CONF_CLOCK_STEP_MS);
	else
		LOG_INFO("clock", "wall clock: the RTC is read at boot only (clock.rtc_resync_s = 0)");
}

uint64_t x86_wall_ns(void)
{
	struct wallclock_params p;
	wallclock_read(&wall_pub, &p);
	return wallclock_at(&p, x86_now_ns());
}

int64_t x86_wall_ms(void)
{
	return (int64_t)(x86_wall_ns() / NS_PER_MS);
}

void x86_wall_stats(struct x86_wall_stats *out)
{
	*out = wall_stats;
	out->rate_ppb = wall_disc.p.rate_ppb;
	out->freq_ppb = wall_disc.freq_ppb;
}

/* Watch again one period later (the RTC gave nothing usable this time). */
static void wall_retry_later(uint64_t now, const char *why)
{
	uint32_t n = ++wall_stats.n_rejected;
	wall_state = WALL_WAIT_DUE;
	wall_due_ns = now + wall_period_s * NS_PER_S;
	if ((n & (n - 1)) == 0) /* the 1st, 2nd, 4th, 8th...: a broken RTC logs ever more rarely */
		LOG_WARN("clock", "wall clock: RTC sample refused (%s; %u so far); next in %lu s", why, (unsigned)n,
			 (unsigned long)wall_period_s);
}

static uint64_t wall_abs(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static void wall_log(const struct wallclock_sample_result *r, uint64_t ref_ns, const char *ref, uint64_t now)
{
	char utc[32];
	(void)fmt_utc(utc, sizeof utc, (int64_t)(ref_ns / NS_PER_MS));
	uint64_t mag = wall_abs(r->error_ns);
	const char *sign = r->error_ns < 0 ? "-" : "+";
	long rate_ppm = (long)(wall_disc.p.rate_ppb / 1000), freq_ppm = (long)(wall_disc.freq_ppb / 1000);
	if (r->action == WALLCLOCK_SET) {
		LOG_INFO("clock", "wall clock set from the %s: %s", ref, utc);
	} else if (r->action == WALLCLOCK_STEP) {
		/* the step is the error's opposite: a clock behind (error < 0) moves forwards */
		LOG_WARN("clock", "wall clock stepped %s%lu.%03lu s to the %s (%s)%s; rate %ld ppm",
			 r->error_ns < 0 ? "+" : "-",
			 (unsigned long)(mag / NS_PER_S), (unsigned long)(mag / NS_PER_MS % 1000u), ref, utc,
			 r->ref_jump ? ": the reference jumped" : "", rate_ppm);
	} else if (mag >= CONF_CLOCK_LOG_ERROR_MS * NS_PER_MS &&
		   (!wall_logged || now - wall_last_log_ns >= WALL_LOG_GAP_NS)) {
		LOG_INFO("clock", "wall clock %s%lu ms off the %s (%s): slewing, rate %ld ppm (the %s against the "
				  "TSC clock %ld ppm)",
			 sign, (unsigned long)(mag / NS_PER_MS), ref, utc, rate_ppm, ref, freq_ppm);
	} else {
		return;
	}
	wall_logged = true;
	wall_last_log_ns = now;
}

/* A boundary seen within the bracket [wall_last_same_ns, after]: read the RTC, correct. */
static void wall_sample(uint64_t after)
{
	struct time_civil civ;
	uint64_t rtc_s;
	if (x86_rtc_read(&rtc_s, &civ) != 0) {
		wall_retry_later(after, "RTC unreadable");
		return;
	}
	uint64_t mono = wall_last_same_ns + (after - wall_last_same_ns) / 2;
	struct wallclock_sample_result r;
	wallclock_disc_sample(&wall_disc, &wall_cfg, rtc_s * NS_PER_S, mono, &r);
	wallclock_publish(&wall_pub, &wall_disc.p);
	wall_stats.n_samples++;
	wall_stats.n_steps = wall_disc.n_steps;
	wall_stats.last_error_ns = r.error_ns;
	wall_log(&r, rtc_s * NS_PER_S, "RTC", after);
	/* Next: the lead before the wall clock reaches the second one period on. */
	uint64_t lead = WALL_LEAD_NS + (r.action == WALLCLOCK_SLEW ? wall_abs(r.error_ns) : 0);
	if (lead > NS_PER_S)
		lead = NS_PER_S;
	uint64_t target = (rtc_s + wall_period_s) * NS_PER_S - lead;
	wall_due_ns = wallclock_mono_at(&wall_disc.p, target);
	wall_state = WALL_WAIT_DUE;
}

void x86_wall_reference(uint64_t ref_ns, uint64_t mono_ns, uint32_t period_s)
{
	wall_sntp = true;
	wall_cfg.period_ns = (uint64_t)(period_s ? period_s : 1u) * NS_PER_S;
	struct wallclock_sample_result r;
	wallclock_disc_sample(&wall_disc, &wall_cfg, ref_ns, mono_ns, &r);
	wallclock_publish(&wall_pub, &wall_disc.p);
	wall_stats.n_samples++;
	wall_stats.n_steps = wall_disc.n_steps;
	wall_stats.last_error_ns = r.error_ns;
	wall_log(&r, ref_ns, "SNTP servers' time", x86_now_ns());
}

int x86_wall_resync_poll(void *ctx)
{
	(void)ctx;
	if (!wall_period_s || wall_sntp)
		return 0;
	uint64_t before = x86_now_ns();
	if (wall_state == WALL_WAIT_DUE) {
		if (before < wall_due_ns)
			return 0;
		wall_state = WALL_WATCH;
		wall_watch_ns = before;
		wall_sec = -1;
		wall_probe_ns = 0;
	}
	if (before - wall_watch_ns > WALL_WATCH_MAX_NS) {
		wall_retry_later(before, "no second boundary seen in time");
		return 0;
	}
	if (wall_probe_ns && before - wall_probe_ns < WALL_PROBE_GAP_NS)
		return 1; /* watching: keep the loop from halting, probe a little later */
	wall_probe_ns = before;
	int sec = x86_rtc_seconds_probe();
	uint64_t after = x86_now_ns();
	if (sec < 0)
		return 1; /* update in progress: no information, look again */
	if (wall_sec < 0 || sec == wall_sec) {
		wall_sec = sec;
		wall_last_same_ns = before;
		return 1;
	}
	if (after - wall_last_same_ns > WALL_MAX_BRACKET_NS) {
		/* Seen too late to place it: wait for the next second. */
		wall_sec = sec;
		wall_last_same_ns = before;
		return 1;
	}
	wall_sample(after);
	return 1;
}
