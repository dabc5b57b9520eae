/* SPDX-License-Identifier: MIT
 *
 * The broker's health as a pure function of its figures; rules, reasons with memory and
 * the invariant are in ops/health.h. Owns no state: the caller keeps the previous
 * struct ops_health. Products of figures and percentages stay in 64 bits because the
 * percentages are clamped to 100 first.
 */
#include "ops/health.h"

#define HR_REFUSING (OPS_HR_ADMISSION_CLOSED | OPS_HR_STORAGE_FAILED)

const char *ops_health_reason_name(uint32_t bit)
{
	switch (bit) {
	case OPS_HR_HEAP_LOW: return "heap low";
	case OPS_HR_DB_LAG: return "database lag";
	case OPS_HR_DISK_ERRORS: return "disk errors";
	case OPS_HR_CLOCK_UNSYNC: return "clock unsynchronised";
	case OPS_HR_WATCHDOG: return "core over watchdog budget";
	case OPS_HR_ADMISSION_CLOSED: return "admission closed";
	case OPS_HR_STORAGE_FAILED: return "storage failed";
	default: return "unknown";
	}
}

const char *ops_health_state_name(uint32_t state)
{
	switch (state) {
	case OPS_HEALTH_SERVING: return "serving";
	case OPS_HEALTH_DEGRADED: return "degraded";
	case OPS_HEALTH_REFUSING: return "refusing";
	default: return "unknown";
	}
}

void ops_health_init(struct ops_health *h)
{
	*h = (struct ops_health){ .state = OPS_HEALTH_SERVING };
}

/* The refusing bits given the configuration (storage failure refuses only if required). */
static uint32_t health_refusing_bits(uint32_t reasons, bool storage_required)
{
	uint32_t r = reasons & OPS_HR_ADMISSION_CLOSED;
	if (storage_required)
		r |= reasons & OPS_HR_STORAGE_FAILED;
	return r;
}

static bool health_heap_low(bool was_low, const struct ops_health_inputs *in, const struct ops_health_cfg *cfg)
{
	if (in->heap_total == 0)
		return was_low; /* no figures */
	uint64_t low = MIN(cfg->heap_low_pct, 100u);
	uint64_t ok = MAX(MIN(cfg->heap_ok_pct, 100u), low);
	/* free < low% of total, as free * 100 < total * low, without dividing. Both sides
	 * stay below 2^64 when the heap is below 2^57 bytes; a larger figure is split. */
	uint64_t f = in->heap_free, t = in->heap_total;
	if (t > (UINT64_MAX / 100u)) {
		f /= 128u;
		t /= 128u;
	}
	if (f > t)
		f = t; /* inconsistent figures: never above the whole */
	if (f * 100u < t * low)
		return true;
	if (f * 100u > t * ok)
		return false;
	return was_low;
}

void ops_health_eval(const struct ops_health *prev, const struct ops_health_inputs *in,
		     const struct ops_health_cfg *cfg, struct ops_health *out)
{
	struct ops_health p = *prev; /* prev may be out */
	struct ops_health h = { 0 };
	uint32_t r = 0;

	if (health_heap_low((p.reasons & OPS_HR_HEAP_LOW) != 0, in, cfg))
		r |= OPS_HR_HEAP_LOW;
	if (in->db_lagging || (cfg->db_lag_ms && in->db_commit_age_ms > cfg->db_lag_ms) ||
	    (cfg->db_backlog_max && in->db_backlog > cfg->db_backlog_max))
		r |= OPS_HR_DB_LAG;

	h.disk_errors_seen = in->disk_errors;
	h.disk_error_at_ms = p.disk_error_at_ms;
	if (in->disk_errors > p.disk_errors_seen) {
		r |= OPS_HR_DISK_ERRORS;
		h.disk_error_at_ms = in->now_ms;
	} else if ((p.reasons & OPS_HR_DISK_ERRORS) &&
		   (in->now_ms < p.disk_error_at_ms || in->now_ms - p.disk_error_at_ms < cfg->disk_hold_ms)) {
		r |= OPS_HR_DISK_ERRORS; /* within the hold (a clock going back counts as within) */
	}

	if (in->clock_sync_expected && !in->clock_synced)
		r |= OPS_HR_CLOCK_UNSYNC;
	if (in->watchdog_over_mask)
		r |= OPS_HR_WATCHDOG;
	if (!in->admission_open)
		r |= OPS_HR_ADMISSION_CLOSED;
	if (in->storage_failed)
		r |= OPS_HR_STORAGE_FAILED;

	h.reasons = r;
	h.watchdog_cores = in->watchdog_over_mask;
	if (health_refusing_bits(r, cfg->storage_required))
		h.state = OPS_HEALTH_REFUSING;
	else if (r)
		h.state = OPS_HEALTH_DEGRADED;
	else
		h.state = OPS_HEALTH_SERVING;
	*out = h;
}

bool ops_health_changed(const struct ops_health *a, const struct ops_health *b)
{
	return a->state != b->state || a->reasons != b->reasons;
}

bool ops_health_check(const struct ops_health *h)
{
	if (h->reasons & ~OPS_HR_ALL)
		return false;
	switch (h->state) {
	case OPS_HEALTH_SERVING: return h->reasons == 0;
	/* Storage failure is refusing or degraded by configuration: only admission is
	 * refusing whatever the configuration, so a DEGRADED health never has it. */
	case OPS_HEALTH_DEGRADED: return h->reasons != 0 && !(h->reasons & OPS_HR_ADMISSION_CLOSED);
	case OPS_HEALTH_REFUSING: return (h->reasons & HR_REFUSING) != 0;
	default: return false;
	}
}

/* Append s to buf at *len (counting past cap, writing only below cap - 1). */
static void health_put(char *buf, size_t cap, size_t *len, const char *s)
{
	for (; *s; s++, (*len)++)
		if (*len + 1 < cap)
			buf[*len] = *s;
}

size_t ops_health_describe(const struct ops_health *h, char *buf, size_t cap)
{
	size_t len = 0;
	health_put(buf, cap, &len, ops_health_state_name(h->state));
	uint32_t rest = h->reasons;
	/* When refusing, the refusing bits first: the line says why clients are turned away
	 * before what else is wrong. */
	uint32_t first = h->state == OPS_HEALTH_REFUSING ? rest & HR_REFUSING : 0;
	const char *sep = " (";
	for (int pass = 0; pass < 2; pass++) {
		uint32_t m = pass == 0 ? first : rest & ~first;
		for (uint32_t bit = 1; bit && bit <= m; bit <<= 1) {
			if (!(m & bit))
				continue;
			health_put(buf, cap, &len, sep);
			health_put(buf, cap, &len, ops_health_reason_name(bit));
			sep = ", ";
		}
	}
	if (h->reasons)
		health_put(buf, cap, &len, ")");
	if (cap)
		buf[len < cap ? len : cap - 1] = '\0';
	return len;
}
