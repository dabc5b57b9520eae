/* SPDX-License-Identifier: MIT
 *
 * Interrupt controller of each core: the legacy 8259 PICs are remapped out of the
 * exception range and masked for good; the local APIC runs in x2APIC mode when the CPU
 * offers it (MSR access), xAPIC otherwise (MMIO mapped uncached and NX). Its timer runs
 * one-shot on every core, in TSC-deadline mode when the CPU offers it (an absolute TSC
 * value, no drift), else as a LAPIC one-shot count (calibrated once against the TSC on
 * the boot core); each expiry re-arms it for the earlier of the core's next 10 ms tick
 * and the core's one-shot deadline (x86_timer_arm_ns). Also sends the INIT and STARTUP
 * IPIs for SMP bring-up. Never routes device interrupts (the I/O APIC comes with
 * drivers).
 *
 * Design note (per-core timer state, apic_timers[core]):
 *  1. Touched only by its own core, with interrupts off (the timer interrupt, or
 *     x86_timer_arm_ns under cli), so no lock or atomic is needed except `fired`.
 *  2. The hardware is always armed for min(next_tick, oneshot) (oneshot 0: none), and
 *     next_tick is always in the future after a re-arm (late ticks skip, never burst).
 *  3. `fired` is set by the interrupt and cleared by x86_timer_take_fired on the same
 *     core: relaxed atomics suffice (one core; only compiler ordering matters).
 */
#include "arch/x86_64/x86.h"
#include "kernel/panic.h"

#define MSR_APIC_BASE 0x1bu
#define APIC_BASE_EN (1ull << 11)
#define APIC_BASE_X2 (1ull << 10)
#define REG_ID 0x20
#define REG_TPR 0x80
#define REG_EOI 0xb0
#define REG_SVR 0xf0
#define REG_ICR_LO 0x300
#define REG_ICR_HI 0x310
#define REG_LVT_TIMER 0x320
#define REG_LVT_LINT0 0x350
#define REG_LVT_LINT1 0x360
#define REG_LVT_ERR 0x370
#define REG_TIMER_INIT 0x380
#define REG_TIMER_CUR 0x390
#define REG_TIMER_DIV 0x3e0
#define LVT_MASKED (1u << 16)
#define LVT_PERIODIC (1u << 17)
#define LVT_TSC_DEADLINE (2u << 17)
#define MSR_TSC_DEADLINE 0x6e0u
#define ICR_PENDING (1u << 12)
#define APIC_CAL_US 2000u

static bool apic_x2;
static volatile uint32_t *apic_mmio;
static uint32_t apic_ticks_per_period;
static uint64_t apic_period_tsc;
static bool apic_deadline;
static bool apic_deadline_off; /* test flag: pretend the CPU lacks TSC-deadline */

struct apic_timer {
	uint64_t next_tick;  /* TSC of the next 10 ms tick */
	uint64_t oneshot;    /* TSC of the armed one-shot, 0 if none */
	_Atomic bool fired;
	uint64_t n_fired;
};
static struct apic_timer apic_timers[PLAT_MAX_CPUS];

static uint32_t apic_read(uint32_t reg)
{
	if (apic_x2)
		return (uint32_t)x86_rdmsr(0x800u + (reg >> 4));
	return apic_mmio[reg / 4];
}

static void apic_write(uint32_t reg, uint32_t v)
{
	if (apic_x2)
		x86_wrmsr(0x800u + (reg >> 4), v);
	else
		apic_mmio[reg / 4] = v;
}

static void apic_pic_disable(void)
{
	/* ICW1..4: remap master to 0xe0, slave to 0xe8, then mask every line. */
	x86_outb(0x20, 0x11);
	x86_outb(0xa0, 0x11);
	x86_outb(0x21, X86_VEC_PIC_BASE);
	x86_outb(0xa1, X86_VEC_PIC_BASE + 8);
	x86_outb(0x21, 0x04);
	x86_outb(0xa1, 0x02);
	x86_outb(0x21, 0x01);
	x86_outb(0xa1, 0x01);
	x86_outb(0x21, 0xff);
	x86_outb(0xa1, 0xff);
}

void x86_delay_us(uint64_t us)
{
	uint64_t hz = x86_tsc_hz();
	uint64_t t0 = x86_rdtsc(), n = hz / 1000000u * us;
	while (x86_rdtsc() - t0 < n)
		x86_pause();
}

static void apic_enable_this_core(void)
{
	uint64_t base = x86_rdmsr(MSR_APIC_BASE) | APIC_BASE_EN;
	if (apic_x2)
		base |= APIC_BASE_X2;
	x86_wrmsr(MSR_APIC_BASE, base);
	apic_write(REG_TPR, 0);
	apic_write(REG_LVT_LINT0, LVT_MASKED);
	apic_write(REG_LVT_LINT1, LVT_MASKED);
	apic_write(REG_LVT_ERR, LVT_MASKED);
	apic_write(REG_SVR, 0x100u | X86_VEC_SPURIOUS); /* software enable */
	apic_write(REG_TIMER_DIV, 0x3);                  /* divide by 16 */
}

void x86_apic_init_bsp(uint64_t period_us)
{
	apic_pic_disable();
	uint32_t r[4];
	x86_cpuid(1, 0, r);
	apic_x2 = (r[2] >> 21) & 1;
	if (!apic_x2) {
		uint64_t pa = x86_rdmsr(MSR_APIC_BASE) & 0xffffff000ull;
		apic_mmio = (volatile uint32_t *)x86_mmu_map_mmio(pa, 4096);
		if (!apic_mmio)
			PANIC("apic: cannot map the local APIC");
	}
	apic_enable_this_core();
	/* Calibrate: count down from the maximum for CAL_US of TSC time (the TSC is already
	 * calibrated; a short window keeps boot fast and is accurate to well under 0.1%). */
	apic_write(REG_LVT_TIMER, LVT_MASKED | X86_VEC_TIMER);
	apic_write(REG_TIMER_INIT, 0xffffffffu);
	x86_delay_us(APIC_CAL_US);
	uint32_t left = apic_read(REG_TIMER_CUR);
	apic_write(REG_TIMER_INIT, 0);
	uint64_t per_cal = 0xffffffffu - left;
	uint64_t t = per_cal * period_us / APIC_CAL_US;
	if (t == 0 || t > 0xffffffffu)
		PANIC("apic: timer calibration failed");
	apic_ticks_per_period = (uint32_t)t;
	apic_period_tsc = x86_tsc_hz() / 1000000u * period_us;
	x86_cpuid(1, 0, r);
	apic_deadline = ((r[2] >> 24) & 1) && !apic_deadline_off;
}

void x86_apic_no_deadline_for_test(void)
{
	apic_deadline_off = true;
}

/* Invariant 2: arm the hardware for the earlier of the two deadlines. Interrupts off. */
static void apic_timer_program(struct apic_timer *t)
{
	uint64_t when = t->next_tick;
	if (t->oneshot && t->oneshot < when)
		when = t->oneshot;
	if (apic_deadline) {
		x86_wrmsr(MSR_TSC_DEADLINE, when);
		return;
	}
	uint64_t now = x86_rdtsc();
	uint64_t d = when > now ? when - now : 0;
	if (d > apic_period_tsc * 2)
		d = apic_period_tsc * 2; /* cannot happen by invariant 2; bounds the product */
	uint64_t count = d * apic_ticks_per_period / apic_period_tsc;
	apic_write(REG_TIMER_INIT, count ? (uint32_t)count : 1u);
}

void x86_apic_init_core(void)
{
	if (x86_core_self()->index != 0)
		apic_enable_this_core();
	struct apic_timer *t = &apic_timers[x86_core_self()->index];
	t->next_tick = x86_rdtsc() + apic_period_tsc;
	t->oneshot = 0;
	if (apic_deadline) {
		apic_write(REG_LVT_TIMER, LVT_TSC_DEADLINE | X86_VEC_TIMER);
		/* SDM 10.5.4.1: the LVT write must reach the APIC before the deadline MSR write
		 * (xAPIC: an MMIO store; the MSR write is not ordered after it without a fence). */
		__asm__ volatile("mfence" ::: "memory");
	} else {
		apic_write(REG_LVT_TIMER, X86_VEC_TIMER); /* one-shot */
	}
	apic_timer_program(t);
}

unsigned x86_apic_timer_irq(void)
{
	struct apic_timer *t = &apic_timers[x86_core_self()->index];
	uint64_t now = x86_rdtsc();
	unsigned due = 0;
	if (now >= t->next_tick) {
		due |= X86_TIMER_TICK;
		t->next_tick += apic_period_tsc;
		if (t->next_tick <= now) /* late by more than a period: skip, never burst */
			t->next_tick = now + apic_period_tsc;
	}
	if (t->oneshot && now >= t->oneshot) {
		due |= X86_TIMER_ONESHOT;
		t->oneshot = 0;
		t->n_fired++;
		atomic_store_explicit(&t->fired, true, memory_order_relaxed);
	}
	apic_timer_program(t);
	return due;
}

static uint64_t apic_ns_to_tsc(uint64_t ns)
{
	uint64_t hz = x86_tsc_hz();
	return x86_boot_tsc0 + ns / 1000000000u * hz + ns % 1000000000u * hz / 1000000000u;
}

void x86_timer_arm_ns(uint64_t deadline_ns)
{
	struct apic_timer *t = &apic_timers[x86_core_self()->index];
	uint64_t flags;
	__asm__ volatile("pushfq; popq %0; cli" : "=r"(flags) : : "memory");
	t->oneshot = deadline_ns ? apic_ns_to_tsc(deadline_ns) : 0;
	apic_timer_program(t);
	if (flags & (1u << 9))
		__asm__ volatile("sti" ::: "memory");
}

bool x86_timer_take_fired(void)
{
	struct apic_timer *t = &apic_timers[x86_core_self()->index];
	return atomic_exchange_explicit(&t->fired, false, memory_order_relaxed);
}

const char *x86_timer_mode(void)
{
	return apic_deadline ? "TSC-deadline" : "LAPIC one-shot";
}

bool x86_apic_is_x2(void)
{
	return apic_x2;
}

uint32_t x86_apic_id(void)
{
	uint32_t id = apic_read(REG_ID);
	return apic_x2 ? id : id >> 24;
}

void x86_apic_eoi(void)
{
	apic_write(REG_EOI, 0);
}

static void apic_ipi(uint32_t apic_id, uint32_t lo)
{
	if (apic_x2) {
		x86_wrmsr(0x830u, ((uint64_t)apic_id << 32) | lo);
		return;
	}
	apic_write(REG_ICR_HI, apic_id << 24);
	apic_write(REG_ICR_LO, lo);
	for (uint32_t i = 0; i < 1000000u && (apic_read(REG_ICR_LO) & ICR_PENDING); i++)
		x86_pause();
}

void x86_apic_nmi_others(void)
{
	if (!apic_ticks_per_period)
		return; /* local APIC not set up yet: no other core runs either */
	apic_ipi(0, 0x000c4400u); /* NMI, shorthand: all excluding self */
}

void x86_apic_send_init(uint32_t apic_id)
{
	apic_ipi(apic_id, 0x00004500u); /* INIT, level assert */
}

void x86_apic_send_sipi(uint32_t apic_id, uint32_t page)
{
	apic_ipi(apic_id, 0x00004600u | (page & 0xff)); /* STARTUP */
}

void x86_apic_send_wake(uint32_t apic_id)
{
	/* Fixed delivery, edge, physical destination. Interrupts off around the two xAPIC
	 * ICR writes so that nothing on this core sends another IPI in between. */
	uint64_t flags;
	__asm__ volatile("pushfq; popq %0; cli" : "=r"(flags)::"memory");
	apic_ipi(apic_id, X86_VEC_WAKE);
	if (flags & 0x200u)
		__asm__ volatile("sti" ::: "memory");
}
