/* SPDX-License-Identifier: MIT
 *
 * The aarch64 C entry: from boot.S (EL1, MMU off, on the boot stack) to every core's loop.
 * Order on the boot core: stack canary, the device tree (plat/dtb.c) or, when UEFI
 * firmware started the image (efi.c), the ACPI tables (plat/acpi_arm.c) into struct platform, the console it names, the other cores' stacks laid out after the image,
 * the page tables (mmu.c: audited, then on with WXN; MTE when the CPU has it), the log and panic, the pointer
 * authentication key, the page allocator and heap, the per-core CSPRNGs, the GIC and the
 * tick, the loop, the other cores (PSCI CPU_ON; each enables the same tables, its own
 * key, its GIC interface and tick, then its loop), the banner, then the test scenario
 * the command line names (development images). PCI is enumerated before the MMU is on
 * (its BARs are then mapped exactly); the node's devices and the node itself
 * (kernel/node/devices.c) come after the CSPRNG, before the other cores start. Owns the boot core's struct platform and every struct a64_core. Never
 * continues without a device tree, memory, an audited table set, a heap or an entropy
 * source.
 */
#include <stdatomic.h>

#include "arch/aarch64/a64.h"
#include "kernel/bootmode.h"
#include "kernel/cmdline.h"
#include "kernel/csprng.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/node/devices.h"
#include "kernel/node/node.h"
#include "kernel/panic.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "plat/acpi_arm.h"
#include "plat/dtb.h"
#include "arch/aarch64/efi.h"
#include "arch/aarch64/kaslr.h"
#include "urmqtt_config.h"

#define MAIN_CMDLINE_MAX 256u
#define MAIN_MAX_DEVICES 48u /* console, RTC, GIC parts, ECAM and the virtio BARs */
#define MAIN_GICR_BYTES_PER_CPU 0x20000u /* GICv3 redistributor frames (RD + SGI) */
#define MAIN_STACK_BYTES 32768u          /* each core's loop stack (the boot core's: kernel.ld) */
#define MAIN_EXC_STACK_BYTES 16384u      /* each core's exception stack */
#define TICK_US 10000u                   /* the per-core watchdog tick */
#define WATCHDOG_BUDGET_NS (CONF_CORE_WATCHDOG_BUDGET_MS * 1000000ull)
#define WATCHDOG_HARD_NS (CONF_CORE_WATCHDOG_HARD_MS * 1000000ull)
#define MAIN_HEAP_MAX_SLABS 4096u
#define MAIN_HEAP_LIMIT_PAGES ((256ull << 20) / 4096u)
#define MAIN_HEAP_MAX_ALLOC (1u << 20)
#define MAIN_RNG_RESEED_BYTES (1ull << 20)
#define MAIN_START_SPINS 200000000u      /* bound on waiting for a core to say it started */

#ifdef URMQTT_PROD
#define MAIN_FLAVOUR "production"
#else
#define MAIN_FLAVOUR "development"
#endif

NORETURN void a64_main(uint64_t dtb_phys, uint64_t entry_el);

struct a64_core a64_cores[PLAT_MAX_CPUS];
static struct platform main_plat;
static struct plat_dtb_extra main_extra;
static char main_cmdline[MAIN_CMDLINE_MAX];
static uint64_t main_dtb_phys, main_dtb_len;
static uint32_t main_n_slots = 1; /* cores that may run: the enabled cpus, boot core first */
static struct a64_stack main_stacks[2u * (PLAT_MAX_CPUS - 1u)];
static uint32_t main_n_stacks;
static uint64_t main_reserved_end;
static struct a64_mmu_features main_feat;
static bool main_pac;
static uint64_t main_ecam, main_ecam_len; /* the PCI configuration window (0: none) */
static const char *main_source = "device tree"; /* where struct platform came from */

void a64_early_fail(const char *msg)
{
	static const char head[] = "boot: FATAL: ";
	a64_uart_write(head, sizeof head - 1);
	a64_uart_write(msg, strlen(msg));
	a64_uart_write("\n", 1);
	a64_psci_off();
}

/* Every stop powers the machine off (PSCI SYSTEM_OFF): a hypervisor restarts it if told
 * to. The line carries no address, only the code. Production holds a fatal stop's message
 * on the console for MAIN_STOP_HOLD_S first (issue 20: an operator at the console reads
 * it before the machine goes away), as x86_64 does; development builds stop at once (the
 * tests read the exit status). The hold reads the generic timer's registers directly, so
 * it works whatever state the boot stopped in. */
#define MAIN_STOP_HOLD_S 60u
static void main_stop(int code)
{
#ifdef URMQTT_PROD
	if (code != A64_EXIT_OK) {
		log_rawf("stop code %d: powering off in %u s\n", code, MAIN_STOP_HOLD_S);
		uint64_t hz = A64_SYSREG_READ(cntfrq_el0);
		if (!hz)
			hz = 62500000u; /* QEMU virt's frequency, if the firmware left it unset */
		uint64_t t0 = A64_SYSREG_READ(cntvct_el0);
		while (A64_SYSREG_READ(cntvct_el0) - t0 < hz * MAIN_STOP_HOLD_S)
			__asm__ volatile("yield");
	}
#endif
	log_rawf("stop code %d: powering off\n", code);
	a64_psci_off();
}

static uint64_t main_page_up(uint64_t a)
{
	return (a + A64_PAGE - 1) & ~(uint64_t)(A64_PAGE - 1);
}

/* The ACPI tables are read with the MMU off, only inside the ACPI areas of the firmware's
 * memory map (efi.c): a table pointer elsewhere is refused, never followed into a device. */
static const void *main_acpi_map(void *ctx, uint64_t phys, size_t len)
{
	const struct a64_efi_boot *b = ctx;
	for (uint32_t i = 0; i < b->n_acpi && i < A64_EFI_MAX_ACPI; i++) {
		const struct plat_mem_range *r = &b->acpi[i];
		if (phys >= r->base && phys - r->base < r->len && len <= r->len - (phys - r->base))
			return (const void *)(uintptr_t)phys;
	}
	return NULL;
}

/* Started by UEFI firmware with ACPI tables (ADR-076): the platform from them, the memory
 * from the firmware's map, the command line from the load options. */
static void main_platform_acpi(void)
{
	const struct plat_phys_reader rd = { &a64_efi_boot, main_acpi_map };
	const char *why = "?";
	uint64_t mpidr = A64_SYSREG_READ(mpidr_el1);
	if (plat_acpi_parse_arm(&rd, a64_efi_boot.rsdp, mpidr, &main_plat, &main_extra, &why) != 0) {
		a64_uart_write("boot: ACPI: ", 12);
		a64_early_fail(why);
	}
	if (a64_efi_boot.n_mem == 0 || a64_efi_boot.n_mem > PLAT_MAX_MEM_RANGES)
		a64_early_fail("UEFI memory map: no usable memory");
	main_plat.n_mem = a64_efi_boot.n_mem;
	memcpy(main_plat.mem, a64_efi_boot.mem, sizeof main_plat.mem);
	main_source = "ACPI tables";
	a64_efi_boot.cmdline[sizeof a64_efi_boot.cmdline - 1] = '\0';
	main_extra.bootargs = a64_efi_boot.cmdline;
	main_extra.bootargs_len = strlen(a64_efi_boot.cmdline);
}

/* The device tree's header gives its size; the parser checks everything else. */
static void main_platform(uint64_t dtb_phys)
{
	if (a64_efi_boot.magic == A64_EFI_MAGIC && a64_efi_boot.rsdp != 0) {
		main_platform_acpi();
		goto common;
	}
	if (dtb_phys == 0 || (dtb_phys & 7u))
		a64_early_fail("no device tree (x0 was 0 or misaligned)");
	const uint8_t *blob = (const uint8_t *)(uintptr_t)dtb_phys;
	size_t len = PLAT_DTB_MAX_SIZE;
	uint64_t image = (uint64_t)(uintptr_t)a64_image_start;
	if (dtb_phys < image && image - dtb_phys < len)
		len = (size_t)(image - dtb_phys); /* never read into the image */
	const char *why = "?";
	uint64_t mpidr = A64_SYSREG_READ(mpidr_el1);
	if (plat_dtb_parse(blob, len, mpidr, &main_plat, &main_extra, &why) != 0) {
		a64_uart_write("boot: device tree: ", 19);
		a64_early_fail(why);
	}
	main_dtb_phys = dtb_phys;
	main_dtb_len = (uint64_t)blob[4] << 24 | (uint64_t)blob[5] << 16 | (uint64_t)blob[6] << 8 | blob[7];
common:
	a64_psci_init(main_extra.psci == PLAT_DTB_PSCI_SMC);
	if (main_plat.uart_base)
		a64_uart_init(main_plat.uart_base);
	if (main_extra.bootargs && main_extra.bootargs_len < sizeof main_cmdline)
		memcpy(main_cmdline, main_extra.bootargs, main_extra.bootargs_len);
	/* UEFI with a device tree only: the tree's bootargs, else the load options (or the
	 * image's default options, arch/aarch64/efi.c) */
	if (!main_cmdline[0] && a64_efi_boot.magic == A64_EFI_MAGIC) {
		a64_efi_boot.cmdline[sizeof a64_efi_boot.cmdline - 1] = '\0';
		size_t n = strlen(a64_efi_boot.cmdline);
		if (n < sizeof main_cmdline)
			memcpy(main_cmdline, a64_efi_boot.cmdline, n);
	}
	if (main_extra.has_timer)
		a64_timer_set_ppi(main_extra.timer_virt_ppi);
}

/* The cores: the boot core is slot 0, every other enabled cpu of the tree a further slot,
 * each with a loop stack and an exception stack laid out after the image, a guard page
 * under each. */
static void main_cores_layout(void)
{
	uint64_t mpidr = A64_SYSREG_READ(mpidr_el1);
	struct a64_core *boot = &a64_cores[0];
	boot->index = 0;
	boot->aff = plat_dtb_mpidr_aff(mpidr);
	boot->mpidr = mpidr & 0xff00ffffffull;
	boot->stack_base = (uint64_t)(uintptr_t)a64_boot_stack_base;
	boot->stack_top = (uint64_t)(uintptr_t)a64_boot_stack_top;
	boot->exc_stack_top = (uint64_t)(uintptr_t)a64_exc_stack_top;
	A64_SYSREG_WRITE(tpidr_el1, (uint64_t)(uintptr_t)boot);
	uint64_t at = main_page_up((uint64_t)(uintptr_t)a64_image_end);
	for (uint32_t i = 0; i < main_plat.n_cpus && main_n_slots < PLAT_MAX_CPUS; i++) {
		const struct plat_cpu *pc = &main_plat.cpus[i];
		if (pc->boot_cpu || !pc->enabled)
			continue;
		struct a64_core *c = &a64_cores[main_n_slots];
		c->index = main_n_slots;
		c->aff = pc->apic_id;
		/* MPIDR from the packed affinity: Aff3 at bits 39:32, Aff2..0 at 23:0. */
		c->mpidr = (uint64_t)(pc->apic_id >> 24) << 32 | (pc->apic_id & 0xffffffu);
		at += A64_PAGE; /* guard */
		c->stack_base = at;
		at += MAIN_STACK_BYTES;
		c->stack_top = at;
		main_stacks[main_n_stacks++] = (struct a64_stack){ c->stack_base, c->stack_top, c->index, false };
		at += A64_PAGE; /* guard */
		main_stacks[main_n_stacks++] = (struct a64_stack){ at, at + MAIN_EXC_STACK_BYTES, c->index, true };
		at += MAIN_EXC_STACK_BYTES;
		c->exc_stack_top = at;
		main_n_slots++;
	}
	main_reserved_end = at;
}

/* PCI with the MMU still off: the bus enumerated, unassigned BARs placed in the host
 * bridge's windows, the virtio BARs recorded for the tables. */
static void main_pci(void)
{
	struct pci_window w32 = { main_extra.pci_mem32.cpu_base, main_extra.pci_mem32.pci_base,
				  main_extra.pci_mem32.len };
	struct pci_window w64 = { main_extra.pci_mem64.cpu_base, main_extra.pci_mem64.pci_base,
				  main_extra.pci_mem64.len };
	(void)a64_dev_scan(&main_plat, &w32, &w64, &main_ecam, &main_ecam_len);
}

static void main_mmu(void)
{
	struct a64_mmu_region ram[PLAT_MAX_MEM_RANGES], dev[MAIN_MAX_DEVICES];
	uint32_t n_dev = 0;
	for (uint32_t i = 0; i < main_plat.n_mem; i++)
		ram[i] = (struct a64_mmu_region){ main_plat.mem[i].base, main_plat.mem[i].len };
	dev[n_dev++] = (struct a64_mmu_region){ main_plat.uart_base ? main_plat.uart_base : 0x09000000u, A64_PAGE };
	if (main_extra.rtc_base)
		dev[n_dev++] = (struct a64_mmu_region){ main_extra.rtc_base, A64_PAGE };
	if (main_plat.gicd_addr)
		dev[n_dev++] = (struct a64_mmu_region){ main_plat.gicd_addr, 0x10000u };
	if (main_plat.gic_version == 3 && main_plat.gicr_addr)
		dev[n_dev++] = (struct a64_mmu_region){ main_plat.gicr_addr,
							(uint64_t)main_plat.n_cpus * MAIN_GICR_BYTES_PER_CPU };
	if (main_plat.gic_version == 2 && main_plat.gicc_addr)
		dev[n_dev++] = (struct a64_mmu_region){ main_plat.gicc_addr, 0x2000u };
	if (main_plat.gic_version == 2 && main_extra.gicv2m_base)
		dev[n_dev++] = (struct a64_mmu_region){ main_extra.gicv2m_base, A64_PAGE };
	if (main_plat.gic_version == 3 && main_extra.gits_base)
		dev[n_dev++] = (struct a64_mmu_region){ main_extra.gits_base, 0x20000u }; /* control + translation */
	if (main_ecam_len)
		dev[n_dev++] = (struct a64_mmu_region){ main_ecam, main_ecam_len };
	const struct a64_mmu_region *bars;
	uint32_t n_bars = a64_drv_port_bars(&bars);
	for (uint32_t i = 0; i < n_bars && n_dev < MAIN_MAX_DEVICES; i++)
		dev[n_dev++] = bars[i];
	bool plant_wx = false;
#ifndef URMQTT_PROD
	char test[16];
	plant_wx = cmdline_get(main_cmdline, sizeof main_cmdline, "test", test, sizeof test) == 0 &&
		   strcmp(test, "wx-audit") == 0;
	static const char said[] = "scenario wx-audit: one data page made executable\n";
	if (plant_wx)
		a64_uart_write(said, sizeof said - 1);
#endif
	a64_mmu_init(ram, main_plat.n_mem, dev, n_dev, main_stacks, main_n_stacks, main_reserved_end, plant_wx,
		     &main_feat);
}

/* Pointer authentication for return addresses on the calling core: the A instruction key
 * from RNDR (else the counter, weak), then SCTLR_EL1.EnIA. Only from here on do
 * PACIASP/AUTIASP sign and check: this function itself is built without them (its own
 * return would otherwise be checked against a signature never made), and its callers
 * never return. */
static __attribute__((target("branch-protection=none"), noinline)) bool main_pac_on(bool *strong)
{
	if (!main_feat.pac)
		return false;
	uint64_t k[2];
	*strong = a64_rndr(&k[0]) && a64_rndr(&k[1]);
	if (!*strong) {
		k[0] = A64_SYSREG_READ(cntvct_el0) * 0x9e3779b97f4a7c15ull;
		k[1] = (k[0] ^ A64_SYSREG_READ(cntvct_el0)) * 0xc2b2ae3d27d4eb4full;
	}
	A64_SYSREG_WRITE(s3_0_c2_c1_0, k[0]); /* APIAKeyLo_EL1 */
	A64_SYSREG_WRITE(s3_0_c2_c1_1, k[1]); /* APIAKeyHi_EL1 */
	mem_wipe(k, sizeof k);
	A64_SYSREG_WRITE(sctlr_el1, A64_SYSREG_READ(sctlr_el1) | 1ull << 31); /* EnIA */
	a64_isb();
	return true;
}

static uint32_t main_core_index(void)
{
	return a64_core_index();
}

/* A heap or page-frame bug: a decoded report, then stop. Production names the bug and the
 * core only. */
static void main_heap_bug(const char *what, uint64_t addr, bool phys)
{
	uint32_t core = a64_core_index();
#ifndef URMQTT_PROD
	log_rawf("\n*** BUG on core %u: %s\n  %s at 0x%lx\n", (unsigned)core, what, phys ? "page frame" : "block",
		 (unsigned long)addr);
#else
	(void)addr;
	(void)phys;
	log_rawf("\n*** BUG on core %u: %s\n", (unsigned)core, what);
#endif
	kpanic(A64_EXIT_HEAP, "%s", what);
}

/* The installer's ESP image the UEFI entry read (arch/aarch64/efi_menu.c), when it lies
 * wholly inside usable RAM (identity-mapped); else none, said once. */
static const uint8_t *main_esp_image(size_t *len)
{
	*len = 0;
	uint64_t b = a64_efi_boot.esp_base, l = a64_efi_boot.esp_len;
	if (a64_efi_boot.magic != A64_EFI_MAGIC || !b || !l)
		return NULL;
	for (uint32_t i = 0; i < main_plat.n_mem; i++) {
		const struct plat_mem_range *r = &main_plat.mem[i];
		if (b >= r->base && b - r->base < r->len && l <= r->len - (b - r->base)) {
			*len = (size_t)l;
			return (const uint8_t *)(uintptr_t)b;
		}
	}
	return NULL;
}

/* The page allocator over the tree's memory minus the image, the other cores' stacks, the
 * device tree and what the tree reserves; the heap over the identity map. */
static void main_mm_init(void)
{
	struct plat_mem_range resv[KHEAP_MAX_RANGES];
	uint32_t n = 0;
	uint64_t img = (uint64_t)(uintptr_t)a64_image_start;
	resv[n++] = (struct plat_mem_range){ img, main_reserved_end - img };
	uint32_t n_want = 1u + (main_dtb_len != 0) + main_extra.n_reserved;
	if (main_dtb_len != 0) {
		uint64_t dtb_lo = main_dtb_phys & ~(uint64_t)(A64_PAGE - 1);
		resv[n++] = (struct plat_mem_range){ dtb_lo, main_page_up(main_dtb_phys + main_dtb_len) - dtb_lo };
	}
	for (uint32_t i = 0; i < main_extra.n_reserved && n < KHEAP_MAX_RANGES; i++)
		resv[n++] = main_extra.reserved[i];
	size_t esp_len;
	const uint8_t *esp = main_esp_image(&esp_len);
	if (esp) { /* the installer's ESP image (efi_menu.c): read after the heap exists */
		n_want++;
		uint64_t lo = (uint64_t)(uintptr_t)esp & ~(uint64_t)(A64_PAGE - 1);
		if (n < KHEAP_MAX_RANGES)
			resv[n++] = (struct plat_mem_range){ lo, main_page_up((uint64_t)(uintptr_t)esp + esp_len) - lo };
	}
	if (n < n_want)
		kpanic(A64_EXIT_HEAP, "heap: %u reserved ranges, limit %u", (unsigned)n_want,
		       (unsigned)KHEAP_MAX_RANGES);
	struct kheap_config kc = {
		.usable = main_plat.mem,
		.n_usable = main_plat.n_mem,
		.reserved = resv,
		.n_reserved = n,
		.virt_offset = 0,
		.n_cores = main_n_slots,
		.core_index = main_core_index,
		.max_slabs = MAIN_HEAP_MAX_SLABS,
		.limit_pages = MAIN_HEAP_LIMIT_PAGES,
		.max_alloc_bytes = MAIN_HEAP_MAX_ALLOC,
		.bug = main_heap_bug,
		.tags = main_feat.mte ? a64_mte_ops() : NULL,
	};
	int rc = kheap_init(&kc);
	if (rc != 0)
		kpanic(A64_EXIT_HEAP, "heap: cannot build the page allocator and heap (%s)", err_name(rc));
}

static void main_rng_init(void)
{
	struct csprng_config rc = { .reseed_bytes = MAIN_RNG_RESEED_BYTES };
	if (!a64_entropy_probe(false, &rc.entropy))
		kpanic(A64_EXIT_NO_ENTROPY, "csprng: no entropy source: the CPU offers no RNDRRS (FEAT_RNG) "
					    "(and there is no virtio-rng yet); refusing to run with predictable keys");
	int err = csprng_kernel_init(&rc, main_n_slots, main_core_index);
	if (err != 0)
		kpanic(A64_EXIT_NO_ENTROPY, "csprng: seeding from %s failed (%s); refusing to run with predictable keys",
		       rc.entropy.name, err_name(err));
}

/* Wait for an interrupt unless one already marked work or a mesh message waits: the
 * checks run with IRQs masked, and WFI wakes on a pending interrupt even while they are,
 * so a wake-up between the check and the wait is never lost; it is taken once unmasked. */
static void main_idle(void)
{
	struct a64_core *c = a64_core_self();
	__asm__ volatile("msr daifset, #2" : : : "memory");
	atomic_store_explicit(&c->sleeping, true, memory_order_relaxed);
	/* seq_cst: the store above is ordered before the check below; pairs with the
	 * sender's fence between its commit and its load of `sleeping` (node_port_wake). */
	atomic_thread_fence(memory_order_seq_cst);
	/* The rings too, as on x86_64: a message committed before our `sleeping` store found
	 * the flag clear and sent no wake-up (and credit we were refused may be back). */
	if (!atomic_exchange_explicit(&c->wake, false, memory_order_relaxed) && !node_mesh_pending(c->index))
		__asm__ volatile("wfi" : : : "memory");
	atomic_store_explicit(&c->sleeping, false, memory_order_relaxed);
	__asm__ volatile("msr daifclr, #2" : : : "memory");
}

static const struct kloop_ops main_loop_ops = { a64_now_ns, main_idle };
static const struct kloop_config main_loop_cfg = {
	.budget_ns = WATCHDOG_BUDGET_NS,
	.hard_limit_ns = WATCHDOG_HARD_NS,
};

/* Counts this core's passes once per second for the ticks line of the smp scenario. */
static void main_loop_init(struct a64_core *c)
{
	if (kloop_init(&c->loop, c->index, &main_loop_cfg, &main_loop_ops) != 0)
		PANIC("core %u: loop configuration rejected", (unsigned)c->index);
	if (kloop_add(&c->loop, "heap", kheap_poll, NULL) != 0)
		PANIC("core %u: loop full", (unsigned)c->index);
	node_devices_loop_add(&c->loop, c->index);
#ifndef URMQTT_PROD
	a64_scenario_loop_add(&c->loop); /* test=dpbench: every core */
#endif
	c->loop_ready = true;
}

/* This core's interrupt controller interface and tick. */
static void main_core_irqs(struct a64_core *c)
{
	int err = a64_gic_init_core(c->index, c->aff);
	if (err)
		PANIC("core %u: %s interface (affinity 0x%x): %s", (unsigned)c->index, a64_gic_name(),
		      (unsigned)c->aff, err_name(err));
	a64_timer_start(TICK_US);
}

/* FP/SIMD usable at EL1 on this core: only the code built for it uses the registers
 * (SQLite on the storage core, tls/accel's SHA-256 assembly and mbedTLS's AES and GCM in
 * every core's loop: ADR-058, ADR-071; -mgeneral-regs-only everywhere else, interrupt
 * handlers included, so no vector state is ever saved). */
static void main_fp_on(void)
{
	A64_SYSREG_WRITE(cpacr_el1, A64_SYSREG_READ(cpacr_el1) | 3u << 20); /* FPEN: no traps */
	a64_isb();
}

__attribute__((no_stack_protector)) NORETURN void a64_secondary_main(struct a64_core *c)
{
	A64_SYSREG_WRITE(tpidr_el1, (uint64_t)(uintptr_t)c);
	a64_mmu_enable();
	main_fp_on();
	bool strong;
	(void)main_pac_on(&strong);
	main_core_irqs(c);
	main_loop_init(c);
	/* release: this core's set-up is visible to the boot core that reads `started`. */
	atomic_store_explicit(&c->started, true, memory_order_release);
	__asm__ volatile("msr daifclr, #2" : : : "memory");
	kloop_run(&c->loop);
}

/* Start every other core through PSCI and wait (bounded) until each says it runs. */
static uint32_t main_smp_start(void)
{
	uint32_t n = 1;
	for (uint32_t i = 1; i < main_n_slots; i++) {
		struct a64_core *c = &a64_cores[i];
		/* The core starts with the MMU off: its struct must be in memory, not only in
		 * this core's cache. */
		for (uint64_t a = (uint64_t)(uintptr_t)c & ~63ull; a < (uint64_t)(uintptr_t)(c + 1); a += 64)
			__asm__ volatile("dc civac, %0" : : "r"(a) : "memory");
		a64_dsb_sy();
		int64_t r = a64_psci_cpu_on(c->mpidr, (uint64_t)(uintptr_t)a64_secondary_entry, (uint64_t)(uintptr_t)c);
		if (r != 0) {
			LOG_ERR("smp", "core %u (affinity 0x%x): PSCI CPU_ON refused (%ld)", (unsigned)i, (unsigned)c->aff,
				(long)r);
			continue;
		}
		uint32_t spins = 0;
		/* acquire: pairs with the core's release store of `started`. */
		while (!atomic_load_explicit(&c->started, memory_order_acquire) && spins++ < MAIN_START_SPINS)
			;
		if (!atomic_load_explicit(&c->started, memory_order_acquire)) {
			LOG_ERR("smp", "core %u (affinity 0x%x) did not start", (unsigned)i, (unsigned)c->aff);
			continue;
		}
		n++;
	}
	return n;
}

static const char *main_onoff(bool on)
{
	return on ? "on" : "off (CPU lacks it)";
}

static void main_banner(uint64_t entry_el, const struct a64_wx_report *wx, uint32_t n_started)
{
	LOG_INFO("boot", "urMQTT aarch64 (%s build), entered at EL%u, running at EL1", MAIN_FLAVOUR,
		 (unsigned)entry_el);
#ifndef URMQTT_PROD
	LOG_INFO("boot", "image: %lu KiB at 0x%lx", (unsigned long)((a64_image_end - a64_image_start) >> 10),
		 (unsigned long)(uintptr_t)a64_image_start);
#endif
	uint32_t enabled = 0;
	for (uint32_t i = 0; i < main_plat.n_cpus; i++)
		enabled += main_plat.cpus[i].enabled;
	LOG_INFO("boot", "platform (%s): %u cpus (%u enabled), boot cpu affinity 0x%x", main_source,
		 (unsigned)main_plat.n_cpus, (unsigned)enabled, (unsigned)a64_cores[0].aff);
#ifndef URMQTT_PROD
	/* One canonical line, the same from the device tree and from ACPI for one machine
	 * (tests/smoke/aarch64-acpi.sh compares the two boots' lines). */
	static char line[640]; /* longer than a log line: written as it is */
	static const char head[] = "platform-line: ";
	size_t n = plat_arm_describe(&main_plat, &main_extra, line, sizeof line);
	a64_uart_write(head, sizeof head - 1);
	a64_uart_write(line, n);
	a64_uart_write("\n", 1);
#endif
	LOG_INFO("boot", "cpus: %u started of %u in the %s; %s, %u ms tick; MSI: %s", (unsigned)n_started,
		 (unsigned)enabled, main_source, a64_gic_name(), (unsigned)(TICK_US / 1000u), a64_msi_name());
	uint64_t ram = 0;
	for (uint32_t i = 0; i < main_plat.n_mem; i++)
		ram += main_plat.mem[i].len;
	LOG_INFO("boot", "memory: %lu MiB in %u range(s), %u reserved", (unsigned long)(ram >> 20),
		 (unsigned)main_plat.n_mem, (unsigned)main_extra.n_reserved);
	LOG_INFO("boot", "GICv%u, %u PCIe ECAM window(s), PL011 console, %s, PSCI over %s, virtual timer PPI %u",
		 (unsigned)main_plat.gic_version, (unsigned)main_plat.n_ecam,
		 main_extra.rtc_base ? "PL031 RTC" : "no RTC",
		 main_extra.psci == PLAT_DTB_PSCI_SMC ? "SMC" : main_extra.psci == PLAT_DTB_PSCI_HVC ? "HVC" : "nothing",
		 a64_timer_intid() - 16u);
	int64_t v = a64_psci_version();
	uint64_t hz = a64_counter_hz();
	LOG_INFO("boot", "PSCI %ld.%ld, generic timer %lu.%03lu MHz", v >= 0 ? (long)(v >> 16) : -1L,
		 v >= 0 ? (long)(v & 0xffff) : 0L, (unsigned long)(hz / 1000000u),
		 (unsigned long)(hz % 1000000u / 1000u));
	LOG_INFO("boot", "W^X audit: PASS: %lu RX, %lu R, %lu RW, %lu device pages; 0 W+X, 0 EL0; "
			 "WXN on; tables read-only; guard pages under %u stacks",
		 (unsigned long)wx->pages_rx, (unsigned long)wx->pages_r, (unsigned long)wx->pages_rw,
		 (unsigned long)wx->pages_dev, (unsigned)(2u + main_n_stacks));
	struct pages_stats ps;
	struct heap_snapshot hs;
	kheap_pages_stats(&ps);
	kheap_snapshot(&hs);
	LOG_INFO("boot", "page frames: %lu of %lu free (%lu MiB), %lu reserved; heap: %lu live, %u per-core caches",
		 (unsigned long)ps.n_free, (unsigned long)(ps.n_frames - ps.n_reserved),
		 (unsigned long)(ps.n_free >> 8), (unsigned long)ps.n_reserved, (unsigned long)hs.n_live,
		 (unsigned)main_n_slots);
	LOG_INFO("boot", "entropy: %s; CSPRNG ChaCha20 fast-key-erasure DRBG, %u per-core instances seeded",
		 csprng_kernel_source(), (unsigned)main_n_slots);
}

#ifndef URMQTT_PROD
/* test=smp: after a second, every started core's tick has fired and its loop has run. */
static uint64_t main_smp_check_at;
static uint32_t main_n_started;
static int main_smp_check(void *ctx)
{
	(void)ctx;
	if (!main_smp_check_at || a64_now_ns() < main_smp_check_at)
		return 0;
	main_smp_check_at = 0;
	uint32_t ok = 0;
	for (uint32_t i = 0; i < main_n_started; i++) {
		uint64_t t = atomic_load_explicit(&a64_cores[i].n_ticks, memory_order_relaxed);
		LOG_INFO("test", "core %u: affinity 0x%x, %lu ticks", (unsigned)i, (unsigned)a64_cores[i].aff,
			 (unsigned long)t);
		ok += t > 0;
	}
	if (ok == main_n_started)
		LOG_INFO("test", "scenario smp: every core ticks in its loop (%u cores)", (unsigned)ok);
	else
		LOG_ERR("test", "scenario smp: FAIL: %u of %u cores ticked", (unsigned)ok, (unsigned)main_n_started);
	a64_psci_off();
}
#endif

__attribute__((no_stack_protector)) NORETURN void a64_main(uint64_t dtb_phys, uint64_t entry_el)
{
	a64_ssp_init();
	a64_clock_init();
	main_platform(dtb_phys);
	main_cores_layout();
	main_pci();
	main_mmu();
	main_fp_on();

	static const struct log_config lc = { .write = a64_uart_write, .now_ns = a64_now_ns, .level = LOG_LEVEL_INFO,
					      .burst = 20, .window_ns = 1000000000ull };
	log_init(&lc);
	static const struct panic_ops po = { .stop = main_stop };
	panic_init(&po);
	bool pac_strong = false;
	main_pac = main_pac_on(&pac_strong);

	/* Before anything that may refuse to boot (no entropy, no heap), so every boot says it. */
	LOG_INFO("boot", "PAN %s, BTI %s, PAC %s%s, stack canary from %s, physical address bits %u",
		 main_onoff(main_feat.pan), main_onoff(main_feat.bti), main_onoff(main_pac),
		 main_pac && !pac_strong ? " (keys from the counter: weak)" : "",
		 a64_ssp_strong() ? "RNDR" : "the counter (weak)", (unsigned)main_feat.pa_bits);
	a64_kaslr_report(); /* stops the boot on a refused table (ADR-084) */
	LOG_INFO("boot", "MTE %s",
		 main_feat.mte ? "on: heap blocks tagged, synchronous tag checks"
		 : main_feat.mte_selftest_failed ? "off: the tag storage failed its self-test (one tag for several granules, "
						   "as under QEMU before 8.0)"
						 : "off (the CPU or machine lacks FEAT_MTE2 with tag memory)");
	struct a64_wx_report wx;
	a64_mmu_audit(&wx);
	if (wx.wx || wx.user || wx.exec_outside_text)
		PANIC("W^X audit FAILED on the live tables: %lu W+X, %lu EL0, %lu executable outside text",
		      (unsigned long)wx.wx, (unsigned long)wx.user, (unsigned long)wx.exec_outside_text);
	main_mm_init();
	main_rng_init();
	int err = a64_gic_init(&main_plat, a64_timer_intid());
	if (err)
		PANIC("interrupt controller: GICv%u unusable (%s)", (unsigned)main_plat.gic_version, err_name(err));
	err = a64_msi_init(&main_plat, main_extra.gicv2m_base, main_extra.gits_base, main_n_slots);
	if (err && err != -E_NOSYS)
		LOG_ERR("boot", "MSI through %s unusable (%s): devices are polled",
			main_plat.gic_version == 3 ? "the ITS" : "the GICv2m frame", err_name(err));
	struct a64_core *boot = &a64_cores[0];
	main_core_irqs(boot); /* its LPIs on before any device may send one */
	/* The boot mode (urmqtt.mode=, every build: kernel/bootmode.h). Diagnostics drive the
	 * devices themselves (kernel/diag/) and end in PSCI SYSTEM_OFF; live gives the node no
	 * disk. Install writes the ESP image the UEFI entry read from the boot volume
	 * (efi_menu.c; GRUB's Multiboot2 module on x86_64), then powers off. */
	enum boot_mode mode = BOOT_MODE_SERVE;
	if (boot_mode_parse(main_cmdline, sizeof main_cmdline, &mode) != 0)
		kpanic(A64_EXIT_BOOT, "boot: refusing the command line's %s= (want exactly one of live, install, "
				      "install-erase, diag; no key: serve from this machine's disk)",
		       BOOT_MODE_KEY);
	if (mode != BOOT_MODE_SERVE)
		LOG_INFO("boot", "mode: %s (%s=%s on the command line)", boot_mode_name(mode), BOOT_MODE_KEY,
			 boot_mode_name(mode));
	if (mode == BOOT_MODE_DIAG) {
		uint64_t mem = 0;
		for (uint32_t i = 0; i < main_plat.n_mem; i++)
			mem += main_plat.mem[i].len;
		a64_diag_main(main_extra.rtc_base, main_cmdline, sizeof main_cmdline, mem, main_plat.n_cpus);
	}
	size_t esp_len;
	const uint8_t *esp = main_esp_image(&esp_len);
	if (!esp && a64_efi_boot.esp_len)
		LOG_ERR("boot", "the installer's ESP image (%lu B) lies outside usable RAM: ignored",
			(unsigned long)a64_efi_boot.esp_len);
	node_devices_set_boot(mode, esp, esp_len, NULL, 0); /* no BIOS boot code on Arm */
	a64_dev_init(main_extra.rtc_base, main_cmdline, sizeof main_cmdline, main_n_slots);
	if (mode == BOOT_MODE_INSTALL || mode == BOOT_MODE_INSTALL_ERASE)
		main_stop(A64_EXIT_OK); /* installed (any failure stopped inside): PSCI SYSTEM_OFF */
#ifndef URMQTT_PROD
	a64_scenario_setup(main_cmdline, sizeof main_cmdline, main_n_slots); /* before any loop */
#endif
	main_loop_init(boot);
	atomic_store_explicit(&boot->started, true, memory_order_relaxed);
	uint32_t n_started = main_smp_start();
	node_cores_started(n_started);
	main_banner(entry_el, &wx, n_started);

#ifndef URMQTT_PROD /* a production image never reads test= */
	char test[32];
	if (cmdline_get(main_cmdline, sizeof main_cmdline, "test", test, sizeof test) == 0) {
		if (strcmp(test, "smp") == 0) {
			main_n_started = n_started;
			main_smp_check_at = a64_now_ns() + 1000000000ull;
			if (kloop_add(&boot->loop, "test-smp", main_smp_check, NULL) != 0)
				PANIC("core 0: loop full");
		} else if (!a64_scenario_started(n_started)) {
			if (!a64_scenario_fault(test, &main_feat))
				LOG_ERR("boot", "test=%s: no such scenario", test);
			PANIC("scenario %s did not end the boot", test);
		}
	}
#endif
	LOG_INFO("boot", "aarch64 bring-up done (platform from the %s)", main_source);
#ifndef URMQTT_PROD /* development knob: the boot tests end their machine with it */
	char off[4];
	if (cmdline_get(main_cmdline, sizeof main_cmdline, "poweroff", off, sizeof off) == 0) {
		LOG_INFO("boot", "poweroff: powering off");
		a64_psci_off();
	}
#endif
	__asm__ volatile("msr daifclr, #2" : : : "memory");
	kloop_run(&boot->loop);
}
