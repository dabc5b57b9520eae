/* SPDX-License-Identifier: MIT
 *
 * Calendar conversion for the wall clock: a broken-down UTC time (from the CMOS RTC now,
 * SNTP later) to seconds since 1970-01-01, and back (for the log line of a clock that
 * counts seconds, such as the PL031). The broken-down time comes from hardware or
 * the network, so every field is range-checked; nothing here trusts it.
 */
#ifndef KERNEL_TIME_H
#define KERNEL_TIME_H

#include "lib/compiler.h"

/* Earliest wall-clock time accepted as plausible: 2026-01-01T00:00:00Z. A clock before
 * it is reported loudly (certificate validity depends on it). */
#define TIME_PLAUSIBLE_MIN_UNIX 1767225600ull

struct time_civil {
	uint32_t year;  /* 1970..9999 */
	uint32_t month; /* 1..12 */
	uint32_t day;   /* 1..days in that month */
	uint32_t hour, min, sec; /* 0..23, 0..59, 0..59 (no leap second) */
};

/* The last second of 9999-12-31: the largest time either conversion handles. */
#define TIME_UNIX_MAX 253402300799ull

/* 0 and *unix_s, or -E_RANGE if any field is out of range. */
MUST_CHECK int time_civil_to_unix(const struct time_civil *c, uint64_t *unix_s /* out */);
/* The broken-down UTC time of unix_s (clamped to TIME_UNIX_MAX); the inverse of
 * time_civil_to_unix. */
void time_unix_to_civil(uint64_t unix_s, struct time_civil *c /* out */);

#endif
