/* SPDX-License-Identifier: MIT
 *
 * Descriptor tables of the boot CPU: GDT (flat 64-bit code/data and one TSS), the TSS
 * with IST stacks for #DF, NMI and #MC (each on its own guarded stack, so a kernel stack
 * overflow is still reported), and the IDT pointing every vector at boot.S's stubs.
 * One GDT and TSS per core; one shared IDT, written once at boot. Never enables
 * interrupts.
 */
#include "arch/x86_64/x86.h"
#include "lib/mem.h"

#define IST_STACK_PAGES 4

struct cpu_tss {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iopb;
} PACKED;

struct cpu_idt_gate {
	uint16_t off_lo;
	uint16_t sel;
	uint8_t ist;
	uint8_t type_attr;
	uint16_t off_mid;
	uint32_t off_hi;
	uint32_t reserved;
} PACKED;

struct cpu_dtr {
	uint16_t limit;
	uint64_t base;
} PACKED;

static struct cpu_tss cpu_tss[PLAT_MAX_CPUS] ALIGNED(16);
static uint64_t cpu_gdt[PLAT_MAX_CPUS][5] ALIGNED(16);
static struct cpu_idt_gate cpu_idt[256] ALIGNED(16);

void x86_cpu_idt_init(void)
{
	for (unsigned v = 0; v < 256; v++) {
		uint64_t h = x86_isr_table[v];
		struct cpu_idt_gate *g = &cpu_idt[v];
		g->off_lo = (uint16_t)h;
		g->sel = X86_SEL_KCODE;
		g->ist = v == 8 ? X86_IST_DF : v == 2 ? X86_IST_NMI : v == 18 ? X86_IST_MC : 0;
		g->type_attr = 0x8e; /* present, DPL 0, 64-bit interrupt gate */
		g->off_mid = (uint16_t)(h >> 16);
		g->off_hi = (uint32_t)(h >> 32);
		g->reserved = 0;
	}
}

void x86_cpu_tables_prepare(uint32_t core)
{
	struct cpu_tss *t = &cpu_tss[core];
	t->ist[X86_IST_DF - 1] = x86_stack_alloc(IST_STACK_PAGES, "ist-df");
	t->ist[X86_IST_NMI - 1] = x86_stack_alloc(IST_STACK_PAGES, "ist-nmi");
	t->ist[X86_IST_MC - 1] = x86_stack_alloc(IST_STACK_PAGES, "ist-mc");
	t->iopb = sizeof *t; /* no I/O permission bitmap */

	uint64_t tss = (uint64_t)(uintptr_t)t;
	uint64_t lim = sizeof *t - 1;
	uint64_t *gdt = cpu_gdt[core];
	gdt[0] = 0;
	gdt[1] = 0x00af9a000000ffffull; /* 64-bit code, DPL 0 */
	gdt[2] = 0x00cf92000000ffffull; /* data */
	gdt[3] = (lim & 0xffff) | ((tss & 0xffffff) << 16) | (0x89ull << 40) |
		 (((lim >> 16) & 0xf) << 48) | (((tss >> 24) & 0xff) << 56);
	gdt[4] = tss >> 32;
}

void x86_cpu_tables_load(uint32_t core)
{
	struct cpu_dtr gdtr = { sizeof cpu_gdt[core] - 1, (uint64_t)(uintptr_t)cpu_gdt[core] };
	x86_gdt_load(&gdtr);
	__asm__ volatile("ltr %w0" : : "r"((uint16_t)X86_SEL_TSS));
	struct cpu_dtr idtr = { sizeof cpu_idt - 1, (uint64_t)(uintptr_t)cpu_idt };
	__asm__ volatile("lidt %0" : : "m"(idtr));
}
