/* SPDX-License-Identifier: MIT
 *
 * The monotonic clock: the generic timer's virtual counter (CNTVCT_EL0) at CNTFRQ_EL0.
 * Read on any core (the counter is system-wide); the frequency is read once at boot.
 * The tick: each core's virtual timer (CNTV_*), re-armed from its interrupt.
 */
#include "arch/aarch64/a64.h"

static uint64_t clock_hz;
static uint32_t clock_timer_intid = 27u; /* the virtual timer's PPI 11 on every Arm board so far */
static uint64_t clock_tick_ticks;        /* counter ticks per kernel tick (same on every core) */

void a64_clock_init(void)
{
	clock_hz = A64_SYSREG_READ(cntfrq_el0) & 0xffffffffu;
}

uint64_t a64_counter_hz(void)
{
	return clock_hz;
}

uint64_t a64_now_ns(void)
{
	if (!clock_hz)
		return 0;
	a64_isb(); /* no earlier read of the counter reordered after this one */
	uint64_t t = A64_SYSREG_READ(cntvct_el0);
	/* t * 1e9 / hz without overflow for centuries: split into seconds and remainder. */
	return t / clock_hz * 1000000000u + t % clock_hz * 1000000000u / clock_hz;
}

void a64_timer_set_ppi(uint32_t ppi)
{
	if (ppi < 16u)
		clock_timer_intid = 16u + ppi;
}

uint32_t a64_timer_intid(void)
{
	return clock_timer_intid;
}

void a64_timer_start(uint32_t tick_us)
{
	clock_tick_ticks = clock_hz * tick_us / 1000000u;
	if (!clock_tick_ticks)
		clock_tick_ticks = 1;
	A64_SYSREG_WRITE(cntv_tval_el0, clock_tick_ticks);
	A64_SYSREG_WRITE(cntv_ctl_el0, 1u); /* enabled, not masked */
	a64_isb();
}

void a64_timer_irq(void)
{
	A64_SYSREG_WRITE(cntv_tval_el0, clock_tick_ticks);
	a64_isb();
}
