/* SPDX-License-Identifier: MIT
 *
 * SMP bring-up and per-core data. The boot core prepares every AP's stacks and
 * descriptor tables first (so page tables are only ever changed by the boot core, before
 * any AP exists and before they are sealed), then INITs all APs, starts them one at a
 * time with STARTUP IPIs through the trampoline of ap.S and waits (bounded) for each to report itself started. Each core
 * finds its struct x86_core through GS base. Never starts a CPU the MADT marks disabled.
 *
 * Design note:
 *  1. x86_cores[i] is written by the boot core before core i starts, then only by core i
 *     (its loop), except `started`, which core i sets once (release) and the boot core
 *     reads (acquire) to know the core's setup is visible.
 *  2. smp_next is the index of the one AP being started; it is stable while that AP
 *     starts because APs start one at a time.
 */
#include <stdatomic.h>

#include "arch/x86_64/x86.h"
#include "kernel/log.h"
#include "kernel/panic.h"
#include "lib/fmt.h"
#include "lib/mem.h"

#define AP_TRAMP_PHYS 0x8000u
#define AP_STACK_PAGES 8
#define AP_START_WAIT_US 200000u
#define MSR_GS_BASE 0xc0000101u

extern const char x86_ap_tramp_start[], x86_ap_tramp_end[], x86_ap_tramp_params[];
void x86_ap_entry64(void);
NORETURN void x86_ap_main(void);

struct x86_core x86_cores[PLAT_MAX_CPUS];
static volatile uint32_t smp_next;
/* Whether any AP was sent INIT/SIPI: before that the other CPUs still run the firmware,
 * which must not receive the stop NMI (it faults them into a reset). */
static atomic_bool smp_aps_woken;

bool x86_smp_aps_woken(void)
{
	return atomic_load_explicit(&smp_aps_woken, memory_order_relaxed);
}
static void (*smp_ap_main)(struct x86_core *c);
static uint64_t smp_cr3;
static char smp_stack_names[PLAT_MAX_CPUS][8]; /* linked by x86_stack_alloc */

void x86_core_bind(uint32_t index)
{
	struct x86_core *c = &x86_cores[index];
	c->self = c;
	c->index = index;
	x86_wrmsr(MSR_GS_BASE, (uint64_t)(uintptr_t)c);
}

NORETURN void x86_ap_main(void)
{
	uint32_t i = smp_next;
	x86_mmu_activate(x86_mmu_features());
	x86_cpu_tables_load(i);
	x86_core_bind(i);
	struct x86_core *c = &x86_cores[i];
	x86_apic_init_core();
	c->apic_id = x86_apic_id();
	/* Release: everything this core set up is visible to the boot core that acquires. */
	atomic_store_explicit(&c->started, true, memory_order_release);
	smp_ap_main(c);
	PANIC("core %u left its loop", (unsigned)i);
}

static bool smp_wait_started(struct x86_core *c, uint64_t us)
{
	uint64_t step = 50;
	for (uint64_t t = 0; t < us; t += step) {
		if (atomic_load_explicit(&c->started, memory_order_acquire))
			return true;
		x86_delay_us(step);
	}
	return atomic_load_explicit(&c->started, memory_order_acquire);
}

static uint32_t todo[PLAT_MAX_CPUS];
static uint32_t n_todo;
static uint64_t *smp_params;

uint32_t x86_smp_prepare(const struct platform *p)
{
	uint32_t self = x86_apic_id();
	n_todo = 0;
	for (uint32_t i = 0; i < p->n_cpus && i < PLAT_MAX_CPUS; i++)
		if (p->cpus[i].enabled && p->cpus[i].apic_id != self)
			todo[n_todo++] = p->cpus[i].apic_id;
	if (n_todo == 0)
		return 0;
	if (n_todo > PLAT_MAX_CPUS - 1)
		n_todo = PLAT_MAX_CPUS - 1;

	/* Prepare everything first: stacks and tables of every AP, then the trampoline. */
	for (uint32_t k = 0; k < n_todo; k++) {
		struct x86_core *c = &x86_cores[1 + k];
		(void)fmt_snprintf(smp_stack_names[1 + k], sizeof smp_stack_names[0], "core%u",
				   (unsigned)(1 + k));
		c->stack_top = x86_stack_alloc(AP_STACK_PAGES, smp_stack_names[1 + k]);
		c->apic_id = todo[k]; /* from the MADT; the core confirms it when it starts */
		x86_cpu_tables_prepare(1 + k);
	}
	smp_cr3 = x86_mmu_ap_tables(AP_TRAMP_PHYS);
	size_t len = (size_t)(x86_ap_tramp_end - x86_ap_tramp_start);
	uint8_t *tramp = x86_phys_to_virt(AP_TRAMP_PHYS);
	memcpy(tramp, x86_ap_tramp_start, len);
	smp_params = (uint64_t *)(void *)(tramp + (x86_ap_tramp_params - x86_ap_tramp_start));
	return n_todo;
}

uint32_t x86_smp_boot(void (*ap_main)(struct x86_core *c))
{
	uint64_t *params = smp_params;
	uint32_t n = 1;
	smp_ap_main = ap_main;
	if (n_todo == 0)
		return 1;
	/* Relaxed: read by x86_stop on this core, or on an AP that this core's IPIs started
	 * (their delivery orders the store before it runs). */
	atomic_store_explicit(&smp_aps_woken, true, memory_order_relaxed);

	/* INIT every AP at once and wait the architectural 10 ms only once. */
	for (uint32_t k = 0; k < n_todo; k++)
		x86_apic_send_init(todo[k]);
	x86_delay_us(10000);
	for (uint32_t k = 0; k < n_todo; k++) {
		uint32_t idx = 1 + k;
		struct x86_core *c = &x86_cores[idx];
		smp_next = idx;
		params[0] = smp_cr3;
		params[1] = (uint64_t)(uintptr_t)x86_ap_entry64;
		params[2] = c->stack_top;
		/* The AP reads these after the IPI; the IPI is an MMIO/MSR write that x86
		 * orders after these stores (TSO + serialising wrmsr), so no fence is needed. */
		x86_apic_send_sipi(todo[k], AP_TRAMP_PHYS >> 12);
		if (!smp_wait_started(c, 200)) {
			x86_apic_send_sipi(todo[k], AP_TRAMP_PHYS >> 12);
			if (!smp_wait_started(c, AP_START_WAIT_US)) {
				LOG_WARN("smp", "cpu with APIC id %u did not start", (unsigned)todo[k]);
				break; /* the slot's stacks stay unused; never reuse a half-started core */
			}
		}
		n++;
	}
	return n;
}
