/* SPDX-License-Identifier: MIT
 *
 * The broker's health: one state per broker, computed on core 0 from every core's
 * figures (the caller passes the heap figures of the core with the smallest free share,
 * since each core has its own heap limit; the worst database figures; the sum of the disk
 * error counters; the OR of the cores' watchdog bits) and logged by the caller whenever
 * ops_health_changed() says so. A pure function of (previous health, inputs, config):
 * no allocation, no globals, no clock reads (now_ms is an input).
 *
 * States and the rule, in this order:
 *   REFUSING  the broker does not take new work: admission is closed, or storage failed
 *             while the configuration requires storage (cfg.storage_required).
 *   DEGRADED  it serves, with any other reason: heap low, database lag, disk errors,
 *             clock unsynchronised, watchdog, or storage failed when not required.
 *   SERVING   no reason at all.
 * `reasons` always holds every reason that applies, degraded ones too while REFUSING.
 *
 * Reasons with memory (the previous health is their state):
 *   heap low     hysteresis: set when free < heap_low_pct % of total, cleared only when
 *                free > heap_ok_pct % (ok_pct below low_pct counts as low_pct); between
 *                the two, and when heap_total is 0 (no figures), it keeps its last value.
 *   disk errors  the counter is cumulative: set when it grew since the last evaluation,
 *                kept until disk_hold_ms have passed since the last growth (0: only the
 *                evaluation that saw it grow). A counter that went down (a device
 *                re-attached) is taken as the new baseline, not as an error.
 * Without memory: database lag (storage says it lags, or the oldest uncommitted write is
 * older than db_lag_ms, or the backlog is above db_backlog_max; 0 disables either), clock unsynchronised (a sync is expected and
 * the clock is not synced), watchdog (any core over its budget).
 *
 * Invariant (ops_health_check, which does not see the configuration): SERVING iff
 * reasons is 0; DEGRADED has reasons but never admission closed; REFUSING has admission
 * closed or storage failed; no unknown bit.
 */
#ifndef OPS_HEALTH_H
#define OPS_HEALTH_H

#include "lib/compiler.h"

enum ops_health_state { OPS_HEALTH_SERVING, OPS_HEALTH_DEGRADED, OPS_HEALTH_REFUSING };

/* Bit flags; stable (logged). */
enum ops_health_reason {
	OPS_HR_HEAP_LOW = 1,
	OPS_HR_DB_LAG = 2,
	OPS_HR_DISK_ERRORS = 4,
	OPS_HR_CLOCK_UNSYNC = 8,
	OPS_HR_WATCHDOG = 16,
	OPS_HR_ADMISSION_CLOSED = 32, /* refusing */
	OPS_HR_STORAGE_FAILED = 64,   /* refusing when cfg.storage_required, else degraded */
};
#define OPS_HR_ALL 127u

struct ops_health_inputs {
	uint64_t now_ms;           /* monotonic, for the disk error hold */
	uint64_t heap_free, heap_total;
	uint64_t db_backlog;       /* writes queued, not yet committed */
	uint64_t db_commit_age_ms; /* age of the oldest uncommitted write (0: none) */
	bool db_lagging;           /* storage itself says it lags (its own commit-time rule) */
	uint64_t disk_errors;      /* cumulative since boot */
	bool clock_synced;
	bool clock_sync_expected;  /* SNTP (or another source) is configured */
	uint32_t watchdog_over_mask; /* bit c: core c over its watchdog budget */
	bool admission_open;
	bool storage_failed;
};

struct ops_health_cfg {
	uint32_t heap_low_pct, heap_ok_pct; /* low below low_pct, clear above ok_pct (<= 100) */
	uint32_t db_lag_ms;                 /* 0: commit age not checked */
	uint64_t db_backlog_max;            /* 0: backlog not checked */
	uint32_t disk_hold_ms;              /* disk errors stay flagged this long after growth */
	bool storage_required;              /* failed storage refuses instead of degrading */
};

struct ops_health {
	enum ops_health_state state;
	uint32_t reasons;        /* enum ops_health_reason bits */
	uint32_t watchdog_cores; /* the input mask, for the log line (not compared) */
	/* Memory for the next evaluation (not compared by ops_health_changed). */
	uint64_t disk_errors_seen;
	uint64_t disk_error_at_ms; /* now_ms when the counter last grew */
};

/* The health before the first evaluation: serving, no reasons, no disk errors seen. */
void ops_health_init(struct ops_health *h /* out */);

/* Evaluate (prev, in, cfg borrowed; prev may be out). Any context, no side effects. */
void ops_health_eval(const struct ops_health *prev, const struct ops_health_inputs *in,
		     const struct ops_health_cfg *cfg, struct ops_health *out /* out */);

/* Whether state or reasons differ: the caller logs the new describe() line then. */
bool ops_health_changed(const struct ops_health *a, const struct ops_health *b);

/* "serving", "degraded (heap low, clock unsynchronised)", "refusing (admission closed,
 * heap low)": the state, then its reasons in parentheses, refusing ones first, each
 * group in bit order. Like snprintf: writes at most cap bytes, NUL-terminated when cap
 * > 0, returns the length of the whole line (truncated when >= cap). h, buf borrowed. */
size_t ops_health_describe(const struct ops_health *h, char *buf, size_t cap);

/* Name of one reason bit ("heap low"); "unknown" for 0, several bits or unknown bits. */
const char *ops_health_reason_name(uint32_t single_bit);
/* "serving", "degraded", "refusing"; "unknown" otherwise. */
const char *ops_health_state_name(uint32_t state);

/* The invariant above (for asserts and tests). */
bool ops_health_check(const struct ops_health *h);

#endif
