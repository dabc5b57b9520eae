/* SPDX-License-Identifier: MIT
 *
 * Exceptions taken to EL1 (vectors.S saves the frame on the exception stack). Interrupts
 * (the tick, the wake-up SGI, device interrupts) are handled and return. Every other
 * exception is decoded (ESR exception class, fault status, read or write, the region the
 * address is in) and reported, with addresses and a frame-pointer backtrace in
 * development builds only (a production report names the class and the region, never an
 * address). A tag check fault (MTE) names what the pointer hit in the heap (mte.c: use
 * after free, overflow past a block, stale pointer). None is recoverable (EL0 does not
 * exist): the machine stops,
 * unless a test scenario announced this fault (a64_trap_expect), in which case the report
 * says so and the machine powers off cleanly. Runs on the exception stack; allocates
 * nothing.
 */
#include "arch/aarch64/a64.h"
#include "arch/aarch64/kaslr.h"
#include <stdatomic.h>

#include "kernel/log.h"
#include "kernel/panic.h"
#include "lib/fmt.h"

#define ESR_EC(esr) (((esr) >> 26) & 0x3fu)
#define ESR_ISS(esr) ((esr) & 0x1ffffffu)
#define TRAP_BACKTRACE_MAX 8u

static const char *trap_expected; /* written before the fault by the same core */

void a64_trap_expect(const char *name)
{
	trap_expected = name;
}

static const char *trap_class(uint32_t ec)
{
	switch (ec) {
	case 0x00: return "unknown instruction";
	case 0x07: return "FP/SIMD access trapped";
	case 0x0d: return "branch target exception (BTI)";
	case 0x0e: return "illegal execution state";
	case 0x15: return "SVC";
	case 0x16: return "HVC";
	case 0x17: return "SMC";
	case 0x18: return "system register access trapped";
	case 0x1c: return "pointer authentication failure";
	case 0x20: case 0x21: return "instruction abort";
	case 0x22: return "PC alignment fault";
	case 0x24: case 0x25: return "data abort";
	case 0x26: return "SP alignment fault";
	case 0x2f: return "SError";
	case 0x3c: return "BRK instruction";
	default: return "exception";
	}
}

/* The fault status code of an abort (ISS bits 5:0). */
static const char *trap_fsc(uint32_t fsc)
{
	switch (fsc & 0x3cu) {
	case 0x00: return "address size fault";
	case 0x04: return "translation fault";
	case 0x08: return "access flag fault";
	case 0x0c: return "permission fault";
	default: break;
	}
	switch (fsc) {
	case 0x10: return "synchronous external abort";
	case 0x11: return "tag check fault";
	case 0x21: return "alignment fault";
	case 0x30: return "TLB conflict";
	default: return "other fault";
	}
}

static const char *trap_vector_name(uint64_t v)
{
	static const char *const kinds[4] = { "synchronous", "IRQ", "FIQ", "SError" };
	return kinds[v & 3u];
}

#ifndef URMQTT_PROD
/* An image address as the ELF file has it (KASLR moved the image by a64_kaslr.slide,
 * ADR-084), so addr2line and objdump read it directly; other addresses as they are. */
static uint64_t trap_link_addr(uint64_t va)
{
	if (va >= (uint64_t)(uintptr_t)a64_image_start && va < (uint64_t)(uintptr_t)a64_image_end)
		return va - a64_kaslr.slide;
	return va;
}

/* Frame records (x29 chain) within the stack the kernel ran on; bounded. */
static void trap_backtrace(const struct a64_frame *f)
{
	char line[LOG_LINE_MAX];
	size_t n = 0;
	const struct a64_core *c = a64_core_self();
	uint64_t lo = c->stack_base, hi = c->stack_top;
	uint64_t fp = f->x[29];
	line[0] = 0;
	for (uint32_t i = 0; i < TRAP_BACKTRACE_MAX && fp >= lo && fp + 16 <= hi && (fp & 15u) == 0; i++) {
		const uint64_t *rec = (const uint64_t *)(uintptr_t)fp;
		uint64_t lr = rec[1] & 0x0000ffffffffffffull; /* signed return addresses: strip the PAC */
		int w = fmt_snprintf(line + n, sizeof line - n, " 0x%lx", (unsigned long)trap_link_addr(lr));
		if (w < 0 || (size_t)w >= sizeof line - n)
			break;
		n += (size_t)w;
		if (rec[0] <= fp)
			break; /* the chain must go up the stack */
		fp = rec[0];
	}
	LOG_ERR("trap", "backtrace (link addresses):%s", n ? line : " none on the loop stack");
}
#endif

/* The watchdog's look at this core's loop, once per tick. */
static void trap_tick(struct a64_core *c)
{
	const char *name;
	uint64_t ran;
	enum kloop_wd w = kloop_watchdog_tick(&c->loop, a64_now_ns(), &name, &ran);
	if (w == KLOOP_WD_OVER_BUDGET)
		LOG_WARN("watchdog", "core %u: handler '%s' over its budget (%lu us so far)", (unsigned)c->index, name,
			 (unsigned long)(ran / 1000u));
	else if (w == KLOOP_WD_HARD)
		kpanic(A64_EXIT_WATCHDOG, "watchdog: core %u: handler '%s' stuck for %lu ms", (unsigned)c->index, name,
		       (unsigned long)(ran / 1000000u));
}

/* Interrupts: every pending one acknowledged, handled and ended. The handlers only mark
 * work or count (the loop does the rest); the tick also runs the watchdog. Counters are
 * this core's and written only here: relaxed. */
static void trap_irq(void)
{
	struct a64_core *c = a64_core_self();
	for (uint32_t n = 0; n < 16u; n++) {
		uint32_t intid = a64_gic_ack();
		if (intid >= 1020u && intid <= 1023u)
			return; /* none pending (special INTIDs; LPIs start at 8192) */
		if (intid == a64_timer_intid()) {
			a64_timer_irq(); /* re-armed first: the watchdog may stop the machine */
			atomic_fetch_add_explicit(&c->n_ticks, 1, memory_order_relaxed);
			a64_gic_eoi(intid);
			if (c->loop_ready)
				trap_tick(c);
			continue;
		}
		if (intid == A64_SGI_WAKE)
			atomic_store_explicit(&c->wake, true, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&c->n_dev_irqs, 1, memory_order_relaxed);
		a64_gic_eoi(intid);
	}
}

void a64_trap(struct a64_frame *f, uint64_t vector)
{
	if (vector == 1) { /* IRQ while the kernel ran on its loop stack */
		trap_irq();
		return;
	}
	uint32_t ec = ESR_EC(f->esr), iss = ESR_ISS(f->esr);
	bool abort = ec == 0x20 || ec == 0x21 || ec == 0x24 || ec == 0x25;
	bool data = ec == 0x24 || ec == 0x25;
	const char *where = vector < 4 ? "in the kernel" : vector < 8 ? "on the exception stack" : "from a lower EL";

	if ((vector & 3u) != 0) {
		LOG_ERR("trap", "unexpected %s exception %s", trap_vector_name(vector), where);
	} else if (data && (iss & 0x3fu) == 0x11u) { /* MTE: the heap's decoding */
		char what[160];
		uint32_t ptr_tag, mem_tag;
		a64_mte_describe(f->far, what, sizeof what, &ptr_tag, &mem_tag);
		LOG_ERR("trap", "%s %s%s: tag check fault %s", trap_class(ec), where, (iss >> 6) & 1u ? ", write" : ", read",
			what);
#ifndef URMQTT_PROD
		LOG_ERR("trap", "tag check: pointer tag 0x%x, memory tag 0x%x", (unsigned)ptr_tag, (unsigned)mem_tag);
#else
		(void)ptr_tag;
		(void)mem_tag;
#endif
	} else if (abort) {
		/* With TBI (MTE) a data address's top byte is a tag, not part of it. */
		uint64_t far = data && a64_mte_on() ? f->far & 0x00ffffffffffffffull : f->far;
		const char *region = a64_mmu_region_name(data ? far : f->elr);
		bool guard = data && a64_mmu_is_guard(far);
		LOG_ERR("trap", "%s %s%s: %s (level %u) in %s%s", trap_class(ec), where,
			data ? ((iss >> 6) & 1u ? ", write" : ", read") : "", trap_fsc(iss & 0x3fu),
			(unsigned)(iss & 3u), region, guard ? ": stack overflow into its guard page" : "");
	} else {
		LOG_ERR("trap", "%s %s (ESR class 0x%02x)", trap_class(ec), where, (unsigned)ec);
	}
#ifndef URMQTT_PROD
	/* pc at its link address (addr2line); far and sp where they are: data, not code. */
	LOG_ERR("trap", "pc 0x%lx (%s) far 0x%lx esr 0x%lx spsr 0x%lx sp 0x%lx", (unsigned long)trap_link_addr(f->elr),
		a64_mmu_region_name(f->elr), (unsigned long)f->far, (unsigned long)f->esr, (unsigned long)f->spsr,
		(unsigned long)f->sp);
	trap_backtrace(f);
#endif
	if (trap_expected) {
		LOG_INFO("trap", "scenario %s: caught as expected", trap_expected);
		a64_psci_off();
	}
	kpanic(A64_EXIT_FAULT, "unrecoverable exception");
}
