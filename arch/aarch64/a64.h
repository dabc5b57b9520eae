/* SPDX-License-Identifier: MIT
 *
 * Private header of arch/aarch64: system-register access, the image's link symbols, and
 * the functions the files of this directory give each other (boot.S, main.c, mmu.c,
 * trap.c, uart.c, psci.c). Nothing outside arch/aarch64 includes it.
 */
#ifndef ARCH_AARCH64_A64_H
#define ARCH_AARCH64_A64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernel/loop.h"
#include "lib/compiler.h"
#include "plat/plat.h"

#define A64_PAGE 4096u
#define A64_SYSREG_READ(name)                                       \
	({                                                          \
		uint64_t v_;                                        \
		__asm__ volatile("mrs %0, " #name : "=r"(v_));      \
		v_;                                                 \
	})
#define A64_SYSREG_WRITE(name, v) __asm__ volatile("msr " #name ", %0" : : "r"((uint64_t)(v)) : "memory")

static inline void a64_isb(void)
{
	__asm__ volatile("isb" : : : "memory");
}
static inline void a64_dsb_sy(void)
{
	__asm__ volatile("dsb sy" : : : "memory");
}

/* Device registers (mapped Device-nGnRE): a read completes before what follows it; a
 * write waits for every earlier store (ring memory the device reads) to be observable. */
static inline uint32_t a64_mmio_r32(uint64_t a)
{
	uint32_t v = *(volatile uint32_t *)(uintptr_t)a;
	__asm__ volatile("dmb oshld" : : : "memory");
	return v;
}
static inline uint64_t a64_mmio_r64(uint64_t a)
{
	uint64_t v = *(volatile uint64_t *)(uintptr_t)a;
	__asm__ volatile("dmb oshld" : : : "memory");
	return v;
}
static inline void a64_mmio_w32(uint64_t a, uint32_t v)
{
	__asm__ volatile("dmb oshst" : : : "memory");
	*(volatile uint32_t *)(uintptr_t)a = v;
}
static inline void a64_mmio_w64(uint64_t a, uint64_t v)
{
	__asm__ volatile("dmb oshst" : : : "memory");
	*(volatile uint64_t *)(uintptr_t)a = v;
}
static inline void a64_mmio_w8(uint64_t a, uint8_t v)
{
	__asm__ volatile("dmb oshst" : : : "memory");
	*(volatile uint8_t *)(uintptr_t)a = v;
}

/* Link symbols (arch/aarch64/kernel.ld): the image's parts, each page aligned. */
extern char a64_image_start[], a64_image_end[];
extern char a64_text_start[], a64_text_end[], a64_rodata_start[], a64_rodata_end[];
extern char a64_data_start[], a64_data_end[], a64_pt_start[], a64_pt_end[];
extern char a64_boot_stack_base[], a64_boot_stack_top[], a64_exc_stack_base[], a64_exc_stack_top[];
extern char a64_vectors[];

/* Exit codes (the console says why; PSCI SYSTEM_OFF ends QEMU with status 0). */
enum {
	A64_EXIT_OK = 0,
	A64_EXIT_FAULT = 0x30,
	A64_EXIT_WX = 0x31,
	A64_EXIT_BOOT = 0x32,
	A64_EXIT_STACK_CHK = 0x33,
	A64_EXIT_WATCHDOG = 0x34,
	A64_EXIT_HEAP = 0x35,
	A64_EXIT_NO_ENTROPY = 0x36,
};

/* Before the MMU is on (no log, no atomics on device memory): the message on the console,
 * then the machine powered off. */
NORETURN void a64_early_fail(const char *msg);

/* ---- cores ---- */
struct a64_core {
	uint64_t exc_stack_top;  /* SP_EL1: exceptions (offset 0: boot.S reads it) */
	uint64_t stack_top;      /* SP_EL0: its loop's stack (offset 8: boot.S reads it) */
	uint64_t stack_base;
	uint32_t index;
	uint32_t aff;            /* packed MPIDR affinity (plat_dtb_mpidr_aff) */
	uint64_t mpidr;          /* what PSCI CPU_ON names it by */
	_Atomic bool started;
	/* Set by this core's interrupt handlers that mark loop work (a wake-up SGI), taken by
	 * its idle with interrupts masked, so a wake-up between the last poll and WFI is not
	 * lost. Same core only: relaxed suffices (only compiler ordering matters). */
	_Atomic bool wake;
	/* True while this core's idle is about to wait or waits (the mesh wake-up protocol of
	 * kernel/node/node.c: store + seq_cst fence here, fence + load in the sender). */
	_Atomic bool sleeping;
	/* Device interrupts and ticks taken by this core (its own handler writes: relaxed). */
	_Atomic uint64_t n_dev_irqs;
	_Atomic uint64_t n_ticks;
	bool loop_ready;         /* loop initialised: the tick may run its watchdog */
	struct kloop loop;
};
extern struct a64_core a64_cores[PLAT_MAX_CPUS];
_Static_assert(offsetof(struct a64_core, exc_stack_top) == 0, "boot.S reads the exception stack at 0");
_Static_assert(offsetof(struct a64_core, stack_top) == 8, "boot.S reads the loop stack at 8");
/* boot.S's entries. */
extern char a64_secondary_entry[];
NORETURN void a64_secondary_main(struct a64_core *c);
/* The calling core (TPIDR_EL1 holds its struct a64_core, set once when it starts). */
static inline struct a64_core *a64_core_self(void)
{
	return (struct a64_core *)(uintptr_t)A64_SYSREG_READ(tpidr_el1);
}
static inline uint32_t a64_core_index(void)
{
	return a64_core_self()->index;
}

/* ---- console (uart.c): PL011, polled ---- */
void a64_uart_init(uint64_t base);
void a64_uart_write(const char *s, size_t len);
/* One received byte (0..255), or -1 when none waits (polled; boot core, one reader). */
int a64_uart_getc(void);

/* ---- clock: the generic timer's virtual counter ---- */
uint64_t a64_now_ns(void);
void a64_clock_init(void);
uint64_t a64_counter_hz(void);

/* The generic timer's tick: the virtual timer of the calling core fires every tick_us
 * (its PPI enabled in the GIC by gic.c). a64_timer_irq re-arms it. */
void a64_timer_start(uint32_t tick_us);
void a64_timer_irq(void);
/* The virtual timer's INTID (16 + its PPI from the device tree; 27 when absent). */
uint32_t a64_timer_intid(void);
void a64_timer_set_ppi(uint32_t ppi);

/* ---- GIC (gic.c): v2 or v3, the distributor once, each core's interface ---- */
/* The INTIDs the kernel uses: the wake-up SGI and the virtual timer's PPI. */
#define A64_SGI_WAKE 1u
/* Boot core: the distributor, from the platform (gic_version, addresses). 0 or -E_NOSYS. */
int a64_gic_init(const struct platform *p, uint32_t timer_intid);
/* Each core, on itself: its CPU interface (and GICv3 redistributor with its LPIs), the
 * timer PPI and the wake-up SGI enabled. 0, or -E_NOENT when no redistributor has this
 * core's affinity. */
int a64_gic_init_core(uint32_t core, uint32_t aff);
/* GICv3: the redistributor frame of the core with affinity aff, or 0. */
uint64_t a64_gic_redist(uint32_t aff);
/* MSIs (gic_msi.c). Boot core, after the heap and a64_gic_init, before the other cores
 * start: through the GICv2m frame v2m (GICv2) or the ITS its (GICv3) for n_cores cores;
 * -E_NOSYS without either (devices are then polled). */
int a64_msi_init(const struct platform *p, uint64_t v2m, uint64_t its, uint32_t n_cores);
/* A core enables its LPIs (from a64_gic_init_core). */
void a64_msi_core_init(uint32_t core);
uint32_t a64_msi_vectors(void);
int a64_msi_message(uint32_t core, uint32_t vec, uint16_t rid, uint64_t *addr /* out */, uint32_t *data /* out */);
const char *a64_msi_name(void);
/* Acknowledge the highest pending interrupt: its INTID (1020..1023: none). */
uint32_t a64_gic_ack(void);
void a64_gic_eoi(uint32_t intid);
/* Send the wake-up SGI to the core with affinity aff. */
void a64_gic_send_wake(uint32_t aff);
const char *a64_gic_name(void);

/* ---- PCI and devices (drv_port.c, devices.c, node_port.c) ---- */
struct pci_window;
struct a64_mmu_region;
struct drv_port;
/* MMU off: the ECAM window of segment 0 (its physical range out); BARs recorded from now
 * until a64_drv_port_scan_end. -E_NOENT without one. */
int a64_drv_port_scan_begin(const struct platform *p, uint64_t *ecam /* out */, uint64_t *ecam_len /* out */);
void a64_drv_port_scan_end(void);
/* The BARs recorded for mapping (device memory). */
uint32_t a64_drv_port_bars(const struct a64_mmu_region **bars /* out */);
const struct drv_port *a64_drv_port(void);
void a64_drv_port_buses(uint8_t *start /* out */, uint8_t *end /* out */);
/* MMU off, boot core: enumerate PCI, assign unassigned BARs from the windows (len 0: none),
 * record the virtio BARs; the ECAM window out for mapping. 0 or the scan's error. */
int a64_dev_scan(const struct platform *p, const struct pci_window *mem32, const struct pci_window *mem64,
		 uint64_t *ecam /* out */, uint64_t *ecam_len /* out */);
/* Boot core, after the heap and the CSPRNG, before the other cores start: the wall clock,
 * then the node's devices (kernel/node/devices.h). */
void a64_dev_init(uint64_t rtc_base, const char *cmdline, size_t cmdline_len, uint32_t n_cores);
/* The PL031's seconds, read once (0: no RTC), the base of node_port_wall_s. */
void a64_wall_clock_init(uint64_t rtc_base);
/* The scanned bus (NULL when nothing was found) and how configuration space is reached,
 * for the diagnostics mode, which drives the devices itself instead of a64_dev_init. */
struct pci_bus *a64_dev_bus(const char **how /* out */);

/* ---- diag_port.c: the diagnostics mode (urmqtt.mode=diag, kernel/diag/diag.h) ---- */
/* Boot core, after the heap and the CSPRNG, instead of a64_dev_init: report, measure,
 * then PSCI SYSTEM_OFF. */
NORETURN void a64_diag_main(uint64_t rtc_base, const char *cmdline, size_t cmdline_len, uint64_t mem_total,
			    uint32_t n_cpus);

/* ---- entropy (entropy.c) ---- */
struct csprng_entropy;
bool a64_entropy_probe(bool pretend_none, struct csprng_entropy *out /* out */);

/* ---- PSCI (psci.c) ---- */
void a64_psci_init(bool smc);
NORETURN void a64_psci_off(void);
/* PSCI version (major << 16 | minor), or a negative PSCI error. */
int64_t a64_psci_version(void);
/* Start the core with MPIDR affinity mpidr at entry (physical = virtual) with ctx in x0:
 * 0 or the negative PSCI error. */
int64_t a64_psci_cpu_on(uint64_t mpidr, uint64_t entry, uint64_t ctx);

/* ---- MMU (mmu.c) ---- */
struct a64_mmu_features {
	bool pan, bti, pac, wxn;
	bool mte; /* FEAT_MTE2: RAM mapped Normal Tagged, TBI/TCMA and synchronous tag checks on */
	bool mte_selftest_failed; /* FEAT_MTE2 present, but its tag storage failed (MTE left off) */
	uint32_t pa_bits;
};
struct a64_mmu_region {
	uint64_t base, len;
};
/* The page tables: the image by part (text RX, rodata R, data/bss RW, tables R, the boot
 * core's stacks RW with an unmapped guard page below each), the other cores' stacks (in
 * [image end, reserved_end), each above its own unmapped guard page), the RAM ranges around
 * all that RW and never executable, each device region Device-nGnRE and never executable. Built with the
 * MMU off, then audited, then switched on with WXN. Stops the boot on failure. plant_wx
 * (the wx-audit scenario only) makes one data page executable before the audit, which
 * must then stop the boot. */
struct a64_stack {
	uint64_t base, top; /* mapped RW; the page below base is the unmapped guard */
	uint32_t core;
	bool exceptions;    /* SP_EL1 (exceptions), else SP_EL0 (the core's loop) */
};
void a64_mmu_init(const struct a64_mmu_region *ram, uint32_t n_ram, const struct a64_mmu_region *dev,
		  uint32_t n_dev, const struct a64_stack *stacks, uint32_t n_stacks, uint64_t reserved_end,
		  bool plant_wx, struct a64_mmu_features *feat /* out */);
/* Another core, MMU off: load the boot core's tables and controls and switch on. */
void a64_mmu_enable(void);
struct a64_wx_report {
	uint64_t pages_rx, pages_r, pages_rw, pages_dev;
	uint64_t wx, user, exec_outside_text;
};
/* Walk the live tables: every leaf classified; wx counts pages both writable and
 * executable at EL1, user those reachable from EL0, exec_outside_text executable pages
 * outside the image's text. */
void a64_mmu_audit(struct a64_wx_report *r /* out */);
/* Where phys falls: "text", "rodata", "data", "page tables", "stack", "guard page",
 * "exception stack", "RAM", "device", or "unmapped". */
const char *a64_mmu_region_name(uint64_t addr);
/* Whether addr is in the unmapped guard page under a stack. */
bool a64_mmu_is_guard(uint64_t addr);

/* ---- memory tagging (mte.c; only when a64_mmu_features.mte) ---- */
struct kheap_tag_ops;
/* On each core with the MMU on: the tag generator (tag 0 excluded, seeded from RNDR). */
void a64_mte_core_init(void);
/* Boot core, after a64_mte_core_init: whether the tag storage keeps one tag per granule,
 * checked on the Tagged RAM page `page` (plain address; its data untouched). False also
 * turns a64_mte_on off. */
bool a64_mte_selftest(uint64_t page);
/* True once a core ran a64_mte_core_init (and the self-test passed): heap pointers carry
 * tags. */
bool a64_mte_on(void);
/* The heap's tag hooks (kernel/heap.h). */
const struct kheap_tag_ops *a64_mte_ops(void);
/* A tag check fault at far (its tag in bits 59:56): where it hit, decoded ("in the heap:
 * use after free, ..."; no address), into buf; the pointer's and the memory's tags out. */
void a64_mte_describe(uint64_t far, char *buf, size_t len, uint32_t *ptr_tag /* out */,
		      uint32_t *mem_tag /* out */);

/* ---- exceptions (trap.c, vectors.S) ---- */
struct a64_frame {
	uint64_t x[31];
	uint64_t sp, elr, spsr, esr, far;
};
void a64_trap(struct a64_frame *f, uint64_t vector);
/* The test scenario that expects the next synchronous exception (dev images): the report
 * ends "caught as expected" and the machine powers off cleanly. */
void a64_trap_expect(const char *name);

/* ---- stack protector and entropy (ssp.c) ---- */
void a64_ssp_init(void);
bool a64_ssp_strong(void); /* the canary came from RNDR */
bool a64_rndr(uint64_t *v /* out */);

/* ---- fault scenarios (scenarios.c, development images only) ---- */
/* Run the named fault; false when name is not one. Each announces itself with
 * a64_trap_expect and must not come back: returning means the protection did not fire. */
bool a64_scenario_fault(const char *name, const struct a64_mmu_features *feat);
/* A scenario polled in every core's loop (test=dpbench in a benchmark image). Boot core,
 * after the node's devices and before any loop is built: a64_scenario_setup picks the one
 * cmdline (borrowed) names, if any, for n_slots cores. Each core, building its loop:
 * a64_scenario_loop_add adds its handler. Boot core, the cores started: true when one was
 * picked (and every prepared core started: otherwise the boot stops). */
void a64_scenario_setup(const char *cmdline, size_t len, uint32_t n_slots);
void a64_scenario_loop_add(struct kloop *loop);
bool a64_scenario_started(uint32_t n_started);

#endif
