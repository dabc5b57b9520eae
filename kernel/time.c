/* SPDX-License-Identifier: MIT
 *
 * Calendar conversion (kernel/time.h). Portable, no tables beyond month lengths, no
 * loops over years: days since the epoch by the usual shifted-year (March-first) count.
 */
#include "kernel/time.h"
#include "lib/err.h"

static bool time_leap(uint32_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int time_civil_to_unix(const struct time_civil *c, uint64_t *unix_s)
{
	static const uint8_t mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	if (c->year < 1970 || c->year > 9999 || c->month < 1 || c->month > 12 || c->day < 1 ||
	    c->hour > 23 || c->min > 59 || c->sec > 59)
		return -E_RANGE;
	uint32_t dim = mdays[c->month - 1] + (c->month == 2 && time_leap(c->year) ? 1u : 0u);
	if (c->day > dim)
		return -E_RANGE;
	/* Years start in March so the leap day is the last day of the shifted year. */
	uint64_t y = c->year - (c->month <= 2 ? 1u : 0u);
	uint64_t era = y / 400;
	uint64_t yoe = y - era * 400;
	uint64_t mp = (c->month + 9) % 12; /* March = 0 */
	uint64_t doy = (153 * mp + 2) / 5 + c->day - 1;
	uint64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	uint64_t days = era * 146097 + doe - 719468; /* 719468: days from 0000-03-01 to 1970-01-01 */
	*unix_s = days * 86400u + (uint64_t)c->hour * 3600u + (uint64_t)c->min * 60u + c->sec;
	return 0;
}

void time_unix_to_civil(uint64_t unix_s, struct time_civil *c)
{
	if (unix_s > TIME_UNIX_MAX)
		unix_s = TIME_UNIX_MAX;
	uint64_t days = unix_s / 86400u, rem = unix_s % 86400u;
	c->hour = (uint32_t)(rem / 3600u);
	c->min = (uint32_t)(rem % 3600u / 60u);
	c->sec = (uint32_t)(rem % 60u);
	/* The inverse of the count above: shifted years of 365.2425 days in 400-year eras. */
	uint64_t z = days + 719468u;
	uint64_t era = z / 146097u;
	uint64_t doe = z - era * 146097u;
	uint64_t yoe = (doe - doe / 1460u + doe / 36524u - doe / 146096u) / 365u;
	uint64_t doy = doe - (365u * yoe + yoe / 4u - yoe / 100u);
	uint64_t mp = (5u * doy + 2u) / 153u;
	c->day = (uint32_t)(doy - (153u * mp + 2u) / 5u + 1u);
	c->month = (uint32_t)(mp < 10u ? mp + 3u : mp - 9u);
	c->year = (uint32_t)(yoe + era * 400u + (c->month <= 2u ? 1u : 0u));
}
