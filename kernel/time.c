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
