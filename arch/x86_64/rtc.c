/* SPDX-License-Identifier: MIT
 *
 * The CMOS real-time clock (ports 0x70/0x71): the time, read until two consecutive reads
 * agree and outside an update cycle, decoded from BCD or binary and 12/24-hour forms,
 * then validated by kernel/time; and a probe of the seconds register that never waits,
 * with which arch/x86_64/wall.c finds the instant a second begins. The RTC is hardware
 * input: a value out of range or before TIME_PLAUSIBLE_MIN_UNIX is reported, never
 * trusted. One core at a time (the index/data port pair): the boot core during boot,
 * then only core 0's wall-clock handler.
 */
#include "arch/x86_64/x86.h"
#include "kernel/time.h"
#include "lib/err.h"
#include "lib/mem.h"

#define RTC_TRIES 8

static uint8_t rtc_reg(uint8_t r)
{
	x86_outb(0x70, (uint8_t)(0x80 | r)); /* bit 7: keep NMI masked while we read */
	return x86_inb(0x71);
}

static bool rtc_updating(void)
{
	return rtc_reg(0x0a) & 0x80;
}

static void rtc_snapshot(uint8_t v[7])
{
	for (uint32_t i = 0; i < 1000000u && rtc_updating(); i++)
		x86_pause();
	v[0] = rtc_reg(0x00);
	v[1] = rtc_reg(0x02);
	v[2] = rtc_reg(0x04);
	v[3] = rtc_reg(0x07);
	v[4] = rtc_reg(0x08);
	v[5] = rtc_reg(0x09);
	v[6] = rtc_reg(0x32); /* century, when the firmware keeps it there */
}

static uint32_t rtc_bcd(uint8_t v, bool bcd)
{
	return bcd ? (uint32_t)((v >> 4) * 10u + (v & 0x0fu)) : v;
}

int x86_rtc_read(uint64_t *unix_s, struct time_civil *out)
{
	uint8_t a[7], b[7];
	int tries = 0;
	rtc_snapshot(a);
	do {
		memcpy(b, a, sizeof a);
		rtc_snapshot(a);
	} while (memcmp(a, b, sizeof a) != 0 && ++tries < RTC_TRIES);
	if (tries == RTC_TRIES)
		return -E_IO;
	uint8_t status_b = rtc_reg(0x0b);
	bool bcd = !(status_b & 0x04), h24 = status_b & 0x02;
	bool pm = !h24 && (a[2] & 0x80);
	struct time_civil c;
	c.sec = rtc_bcd(a[0], bcd);
	c.min = rtc_bcd(a[1], bcd);
	c.hour = rtc_bcd((uint8_t)(a[2] & 0x7f), bcd);
	if (!h24)
		c.hour = (c.hour % 12) + (pm ? 12u : 0u);
	c.day = rtc_bcd(a[3], bcd);
	c.month = rtc_bcd(a[4], bcd);
	uint32_t century = rtc_bcd(a[6], bcd);
	if (century < 19 || century > 99)
		century = 20; /* register absent or garbage: assume 20xx */
	c.year = century * 100u + rtc_bcd(a[5], bcd);
	*out = c;
	return time_civil_to_unix(&c, unix_s);
}

int x86_rtc_seconds_probe(void)
{
	/* UIP rises 244 us before an update starts (MC146818): when it reads clear, the
	 * seconds register read next is not in the middle of an update. */
	if (rtc_updating())
		return -1;
	return rtc_reg(0x00);
}
