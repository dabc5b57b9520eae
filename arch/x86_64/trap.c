/* SPDX-License-Identifier: MIT
 *
 * Exception reports. Every exception is fatal for now (no user mode, no recoverable
 * faults): the handler decodes the vector, the error code (page-fault bits and CR2,
 * selector errors) and where the address lies (text, rodata, data, a stack or its guard
 * page, the null page), prints a report and panics with an exit code that names the
 * class of fault, so tests can tell a write to text from a stack overflow.
 * Development builds add the instruction pointer, registers and a short frame-pointer
 * backtrace; production builds (URMQTT_PROD) print the vector and a reason only, never
 * an address. Runs on the faulting stack, or an IST stack for #DF, NMI and #MC; never
 * allocates and never touches memory it has not checked is mapped.
 */
#include "arch/x86_64/x86.h"
#include "kernel/log.h"
#include "kernel/panic.h"

#define BACKTRACE_MAX 8
#define NULL_PAGE_LIMIT 0x10000 /* addresses this low are treated as null derefs */

#define PF_P (1u << 0)
#define PF_W (1u << 1)
#define PF_U (1u << 2)
#define PF_RSVD (1u << 3)
#define PF_I (1u << 4)
#define PF_PK (1u << 5)
#define PF_SS (1u << 6)

static const char *const trap_names[32] = {
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow",
	"#BR bound range", "#UD invalid opcode", "#NM device not available",
	"#DF double fault", "coprocessor segment overrun", "#TS invalid TSS",
	"#NP segment not present", "#SS stack-segment fault", "#GP general protection",
	"#PF page fault", "reserved 15", "#MF x87 floating point", "#AC alignment check",
	"#MC machine check", "#XM SIMD floating point", "#VE virtualization",
	"#CP control protection", "reserved 22", "reserved 23", "reserved 24", "reserved 25",
	"reserved 26", "reserved 27", "#HV hypervisor injection", "#VC VMM communication",
	"#SX security", "reserved 31",
};

static bool trap_in(uint64_t va, const char *s, const char *e)
{
	return va >= (uint64_t)(uintptr_t)s && va < (uint64_t)(uintptr_t)e;
}

/* Where va lies, in words (no address). */
static const char *trap_region(uint64_t va)
{
	const char *g = x86_stack_guard_of(va);
	if (g)
		return "guard page of stack";
	if (va < NULL_PAGE_LIMIT)
		return "null page";
	if (!(va >> 63))
		return "lower half (never mapped)";
	if (trap_in(va, x86_text_start, x86_text_end))
		return "kernel text";
	if (trap_in(va, x86_rodata_start, x86_rodata_end))
		return "kernel rodata";
	if (trap_in(va, x86_data_start, x86_data_end))
		return "kernel data/bss";
	if (x86_stack_name(va))
		return "a kernel stack";
	if (x86_mmu_is_page_table(va))
		return "page tables (sealed)";
	if (va >= X86_PHYSMAP_BASE && va < X86_STACK_AREA)
		return "physmap";
	return "unmapped kernel space";
}

static int trap_classify(const struct x86_trap_frame *f, uint64_t cr2, const char **why)
{
	if (f->vector == 14 || f->vector == 8) {
		const char *g = x86_stack_guard_of(cr2);
		if (g) {
			*why = "stack overflow into its guard page";
			return X86_EXIT_FAULT_GUARD;
		}
	}
	if (f->vector == 14) {
		uint64_t e = f->error;
		if (!(e & PF_P) && cr2 < NULL_PAGE_LIMIT) {
			*why = "null pointer dereference";
			return X86_EXIT_FAULT_NULL;
		}
		if ((e & PF_P) && (e & PF_I)) {
			*why = "instruction fetch from a non-executable page";
			return X86_EXIT_FAULT_EXEC_NX;
		}
		if ((e & PF_P) && (e & PF_W)) {
			*why = "write to a read-only page";
			return X86_EXIT_FAULT_WRITE_RO;
		}
		*why = (e & PF_P) ? "protection violation" : "access to an unmapped page";
		return X86_EXIT_EXCEPTION;
	}
	*why = f->vector < 32 ? "unexpected exception" : "unexpected interrupt";
	return X86_EXIT_EXCEPTION;
}

#ifndef URMQTT_PROD
static bool trap_frame_readable(uint64_t rbp)
{
	if (rbp & 7)
		return false;
	return x86_stack_contains(rbp, 16) || (rbp >= (uint64_t)(uintptr_t)x86_data_start &&
					       rbp + 16 <= (uint64_t)(uintptr_t)x86_data_end);
}

/* An image address as the ELF file has it (KASLR moved the image by x86_kaslr_slide,
 * ADR-077), so addr2line and objdump read it directly; other addresses as they are. */
static uint64_t trap_link_addr(uint64_t va)
{
	if (trap_in(va, x86_image_start, x86_image_end))
		return va - x86_kaslr_slide;
	return va;
}

static void trap_backtrace(uint64_t rbp)
{
	log_rawf("  backtrace (link addresses):");
	for (int i = 0; i < BACKTRACE_MAX && trap_frame_readable(rbp); i++) {
		const uint64_t *fr = (const uint64_t *)(uintptr_t)rbp;
		if (!fr[1])
			break;
		log_rawf(" %lx", (unsigned long)trap_link_addr(fr[1]));
		if (fr[0] <= rbp)
			break; /* frames must move up the stack */
		rbp = fr[0];
	}
	log_rawf("\n");
}

void x86_backtrace(uint64_t rbp)
{
	trap_backtrace(rbp);
}
#else
void x86_backtrace(uint64_t rbp)
{
	(void)rbp; /* production reports carry no addresses */
}
#endif

/* Spurious APIC and legacy PIC interrupts: counted, otherwise ignored. Statistic only. */
static _Atomic uint64_t trap_n_spurious;

static void trap_tick(void)
{
	struct x86_core *c = x86_core_self();
	const char *name;
	uint64_t ran;
	enum kloop_wd w = kloop_watchdog_tick(&c->loop, x86_now_ns(), &name, &ran);
	if (w == KLOOP_WD_OVER_BUDGET)
		LOG_WARN("watchdog", "core %u: handler '%s' over its budget (%lu us so far)",
			 (unsigned)c->index, name, (unsigned long)(ran / 1000u));
	else if (w == KLOOP_WD_HARD)
		kpanic(X86_EXIT_WATCHDOG, "watchdog: core %u: handler '%s' stuck for %lu ms",
		       (unsigned)c->index, name, (unsigned long)(ran / 1000000u));
}

void x86_trap(struct x86_trap_frame *f)
{
	if (f->vector == X86_VEC_TIMER) {
		/* Re-arm first: the watchdog may stop the machine, the tick must not be lost. */
		unsigned due = x86_apic_timer_irq();
		if (due & X86_TIMER_ONESHOT)
			atomic_store_explicit(&x86_core_self()->wake, true, memory_order_relaxed);
		if (due & X86_TIMER_TICK)
			trap_tick();
		x86_apic_eoi();
		return;
	}
	if (f->vector == X86_VEC_WAKE) {
		/* Another core queued mesh work for this one: ending the halt is the point;
		 * mark work for the idle check. Same core only: relaxed. */
		atomic_store_explicit(&x86_core_self()->wake, true, memory_order_relaxed);
		x86_apic_eoi();
		return;
	}
	if (f->vector >= X86_VEC_DEV_BASE && f->vector < X86_VEC_DEV_BASE + X86_VEC_DEV_COUNT) {
		/* MSI-X from a device queue: mark work only (the loop polls the queue). Same
		 * core only, so relaxed atomics suffice (see struct x86_core). */
		struct x86_core *c = x86_core_self();
		atomic_fetch_add_explicit(&c->n_dev_irqs, 1, memory_order_relaxed);
		atomic_store_explicit(&c->wake, true, memory_order_relaxed);
		x86_apic_eoi();
		return;
	}
	if (f->vector == X86_VEC_SPURIOUS ||
	    (f->vector >= X86_VEC_PIC_BASE && f->vector < X86_VEC_PIC_BASE + 16)) {
		atomic_fetch_add_explicit(&trap_n_spurious, 1, memory_order_relaxed);
		return;
	}
	if (f->vector == 2 && x86_stopping()) {
		for (;;) /* parked by the stopping core; NMIs stay blocked: no iret */
			__asm__ volatile("cli; hlt");
	}
	uint64_t cr2 = x86_read_cr2();
	const char *name = f->vector < 32 ? trap_names[f->vector] : "external interrupt";
	const char *why;
	int code = trap_classify(f, cr2, &why);

	log_rawf("\n*** EXCEPTION %s (vector %lu): %s\n", name, (unsigned long)f->vector, why);
	if (f->vector == 14) {
		uint64_t e = f->error;
		log_rawf("  error 0x%lx: %s, %s, %s%s%s%s%s\n", (unsigned long)e,
			 (e & PF_P) ? "protection" : "not present", (e & PF_W) ? "write" : "read",
			 (e & PF_U) ? "user" : "supervisor", (e & PF_I) ? ", instruction fetch" : "",
			 (e & PF_RSVD) ? ", reserved bit" : "", (e & PF_PK) ? ", protection key" : "",
			 (e & PF_SS) ? ", shadow stack" : "");
	} else if ((f->vector == 10 || f->vector == 11 || f->vector == 12 || f->vector == 13) &&
		   f->error) {
		uint64_t e = f->error;
		log_rawf("  selector error 0x%lx: index %lu in %s%s\n", (unsigned long)e,
			 (unsigned long)((e >> 3) & 0x1fff),
			 (e & 2) ? "IDT" : (e & 4) ? "LDT" : "GDT", (e & 1) ? ", external event" : "");
	}
	if (f->vector == 14 || f->vector == 8) {
		const char *stack = x86_stack_guard_of(cr2);
#ifdef URMQTT_PROD
		log_rawf("  address in: %s%s%s%s\n", trap_region(cr2), stack ? " '" : "",
			 stack ? stack : "", stack ? "'" : "");
#else
		log_rawf("  address (cr2) 0x%lx in: %s%s%s%s\n", (unsigned long)cr2,
			 trap_region(cr2), stack ? " '" : "", stack ? stack : "", stack ? "'" : "");
#endif
	}
#ifndef URMQTT_PROD
	if (f->vector == 8)
		log_rawf("  (ip and frame of a double fault are not reliable)\n");
	log_rawf("  ip 0x%lx (%s, link 0x%lx)  cs 0x%lx  rflags 0x%lx  rsp 0x%lx\n", (unsigned long)f->rip,
		 trap_region(f->rip), (unsigned long)trap_link_addr(f->rip), (unsigned long)f->cs, (unsigned long)f->rflags,
		 (unsigned long)f->rsp);
	log_rawf("  rax %lx rbx %lx rcx %lx rdx %lx\n", (unsigned long)f->rax,
		 (unsigned long)f->rbx, (unsigned long)f->rcx, (unsigned long)f->rdx);
	log_rawf("  rsi %lx rdi %lx rbp %lx r8 %lx\n", (unsigned long)f->rsi,
		 (unsigned long)f->rdi, (unsigned long)f->rbp, (unsigned long)f->r8);
	if (f->vector != 8)
		trap_backtrace(f->rbp);
#endif
	kpanic(code, "%s: %s", name, why);
}
