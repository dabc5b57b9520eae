/* SPDX-License-Identifier: MIT
 *
 * The x86_64 C entry: from boot.S (PVH or Multiboot2, already in long mode on the boot
 * tables) to the boot core's idle loop. Order: stack canary, console, clock (when the CPU
 * or hypervisor states the TSC frequency), boot information, final page tables with
 * guarded stacks and IST stacks, ACPI platform discovery, the TSC measured against the PM
 * timer otherwise, AP preparation, PCI enumeration with every virtio BAR mapped (devices.c),
 * sealed tables and the W^X audit, the page allocator and heap (kernel/heap) over the
 * physmap, the per-core CSPRNGs, the virtio devices and the node (kernel/node), SMP
 * start, banner; at fixed points between them, the hooks of the test scenario the command
 * line names (development builds: arch/x86_64/scenarios/). Owns the boot
 * core's struct boot_info and struct platform. Never continues after a failed audit,
 * without a memory map, without a heap or without an entropy source.
 */
#include "arch/x86_64/bootinfo.h"
#include "arch/x86_64/scenarios/scenarios.h"
#include "arch/x86_64/x86.h"
#include "kernel/bootmode.h"
#include "kernel/cmdline.h"
#include "kernel/csprng.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/node/devices.h"
#include "kernel/node/node.h"
#include "kernel/panic.h"
#include "kernel/time.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "plat/acpi.h"
#include "urmqtt_config.h"

#define BOOT_STACK_PAGES 8
#define TICK_US 10000u                     /* the per-core watchdog tick */
#define WATCHDOG_BUDGET_NS (CONF_CORE_WATCHDOG_BUDGET_MS * 1000000ull) /* one handler call */
#define WATCHDOG_HARD_NS (CONF_CORE_WATCHDOG_HARD_MS * 1000000ull)     /* stuck: stop the machine */
_Static_assert(CONF_CORE_WATCHDOG_HARD_MS >= CONF_CORE_WATCHDOG_BUDGET_MS, "watchdog: hard limit below the budget");
/* Heap and CSPRNG limits; from the configuration file at integration (core.heap_limit_mb). */
#define MAIN_HEAP_MAX_SLABS 4096u
#define MAIN_HEAP_LIMIT_PAGES ((256ull << 20) / 4096u)
#define MAIN_HEAP_MAX_ALLOC (1u << 20)
#define MAIN_RNG_RESEED_BYTES (1ull << 20)     /* per core, from RDSEED/RDRAND */

static struct boot_info main_bi;
static struct platform main_plat;
static struct x86_mmu_features main_feat;
static uint32_t main_n_slots = 1; /* cores that may run: heap caches, CSPRNG instances */
/* The test scenario the command line names (development images; NULL in production, and
 * when none is named). Set before the APs start, then read-only. */
static const struct x86_scenario *main_sc;
static struct x86_scenario_boot main_sc_boot;
/* The boot loader menu's choice (urmqtt.mode=, kernel/bootmode.h): read in every build. */
static enum boot_mode main_mode = BOOT_MODE_SERVE;

#ifdef URMQTT_PROD
/* Production images link no scenario and never read test= from the command line. */
static const struct x86_scenario *main_scenario_lookup(void)
{
	return NULL;
}
#else
static const struct x86_scenario *main_scenario_lookup(void)
{
	const struct x86_scenario *sc = x86_scenario_lookup(main_bi.cmdline, sizeof main_bi.cmdline);
	main_sc_boot.name = x86_scenario_name();
	main_sc_boot.cmdline = main_bi.cmdline;
	main_sc_boot.cmdline_len = sizeof main_bi.cmdline;
	return sc;
}
#endif

/* Call the scenario's hook at this point of the boot, if it has one. */
#define MAIN_SC_HOOK(hook)                               \
	do {                                             \
		if (main_sc && main_sc->hook)            \
			main_sc->hook(&main_sc_boot);    \
	} while (0)

#ifdef URMQTT_PROD
#define MAIN_FLAVOUR "production"
#else
#define MAIN_FLAVOUR "development"
#endif

/* Before the final tables: the boot tables map the first 1 GiB at the physmap. */
static const void *main_boot_map(void *ctx, uint64_t phys, size_t len)
{
	(void)ctx;
	if (phys >= X86_BOOT_MAP_BYTES || len > X86_BOOT_MAP_BYTES - phys)
		return NULL;
	return x86_phys_to_virt(phys);
}

static const void *main_fw_map(void *ctx, uint64_t phys, size_t len)
{
	(void)ctx;
	return x86_mmu_map_ro(phys, len);
}

static void main_stop(int code)
{
	x86_stop(code);
}

static const char *main_onoff(bool on)
{
	return on ? "on" : "off (CPU lacks it)";
}

/* Right after the console exists: a refused relocation table, a failed random draw in
 * production, or an image too large to move stops the boot (ADR-077). Without any
 * random instruction the boot goes on unslid until the CSPRNG's own refusal. */
static void main_kaslr_gate(void)
{
	const struct x86_kaslr_info *k = x86_kaslr_info();
	if (k->state == X86_KASLR_BAD_TABLE)
		kpanic(X86_EXIT_BOOT, "kaslr: relocation table refused (%s, entry %u of %u): damaged image, not moved",
		       k->why, (unsigned)k->bad_index, (unsigned)k->n_sites);
	if (k->state == X86_KASLR_NO_ROOM)
		kpanic(X86_EXIT_BOOT, "kaslr: the image is too large to move within the kernel window");
#ifdef URMQTT_PROD
	if (k->state == X86_KASLR_RNG_FAILED)
		kpanic(X86_EXIT_NO_ENTROPY, "kaslr: the CPU's random instruction failed every try; refusing to boot unslid");
#endif
}

static void main_kaslr_banner(void)
{
	const struct x86_kaslr_info *k = x86_kaslr_info();
	if (k->state != X86_KASLR_SLID) {
		LOG_WARN("boot", "kaslr: OFF, image at its link address (%s)",
			 k->state == X86_KASLR_NO_ENTROPY ? "the CPU offers neither RDSEED nor RDRAND"
							  : "the random instruction failed every try");
		return;
	}
#ifndef URMQTT_PROD
	uint64_t hz = x86_tsc_hz();
	LOG_INFO("boot", "kaslr: slide 0x%lx from %s (one of %u 2 MiB slots); %u of %u sites moved in %lu us",
		 (unsigned long)x86_kaslr_slide, k->source, (unsigned)k->n_slots, (unsigned)k->n_moved,
		 (unsigned)k->n_sites, (unsigned long)(hz ? k->tsc_cycles * 1000000u / hz : 0));
#else
	/* Production: whether, and from what; never where. */
	LOG_INFO("boot", "kaslr: on, from %s (one of %u 2 MiB slots)", k->source, (unsigned)k->n_slots);
#endif
}

static void main_banner(const struct x86_wx_report *wx, uint32_t n_cores, uint32_t n_acpi_cpus,
			const char *acpi_why)
{
	uint64_t first, end;
	x86_frame_used(&first, &end);
	LOG_INFO("boot", "urMQTT x86_64 (%s build), booted via %s", MAIN_FLAVOUR,
		 main_bi.kind == BOOTINFO_PVH ? "PVH" : "Multiboot2");
#ifndef URMQTT_PROD
	/* Where this link put the image (tools/reloc moves it; ADR-020). No addresses in
	 * production banners. */
	LOG_INFO("boot", "image: %lu KiB at 0x%lx, physical 0x%lx",
		 (unsigned long)((x86_image_end - x86_image_start) >> 10),
		 (unsigned long)(uintptr_t)x86_image_start, (unsigned long)x86_virt_to_phys_image(x86_image_start));
#endif
	main_kaslr_banner();
	if (acpi_why)
		LOG_INFO("boot", "cpus: 1 started; ACPI unavailable (%s)", acpi_why);
	else
		LOG_INFO("boot", "cpus: %u started of %u in the MADT; local APIC in %s mode, %u ms tick, "
				 "%s timers",
			 (unsigned)n_cores, (unsigned)n_acpi_cpus, x86_apic_is_x2() ? "x2APIC" : "xAPIC",
			 (unsigned)(TICK_US / 1000u), x86_timer_mode());
	LOG_INFO("boot", "memory: %lu MiB usable in %u ranges; boot page frames %lu KiB",
		 (unsigned long)(bootinfo_mem_total(&main_bi) >> 20), (unsigned)main_bi.n_mem,
		 (unsigned long)((end - first) >> 10));
	struct pages_stats ps;
	struct heap_snapshot hs;
	kheap_pages_stats(&ps);
	kheap_snapshot(&hs);
	uint64_t avail = ps.n_frames - ps.n_reserved;
	LOG_INFO("boot", "page frames: %lu of %lu free (%lu MiB), %lu reserved; heap: %lu live, "
			 "%lu B requested in %lu B of blocks, %lu pages held, %u per-core caches",
		 (unsigned long)ps.n_free, (unsigned long)avail, (unsigned long)(ps.n_free >> 8),
		 (unsigned long)ps.n_reserved, (unsigned long)hs.n_live,
		 (unsigned long)hs.requested_bytes, (unsigned long)hs.block_bytes,
		 (unsigned long)hs.pages_held, (unsigned)main_n_slots);
	LOG_INFO("boot", "entropy: %s; CSPRNG ChaCha20 fast-key-erasure DRBG, %u per-core instances seeded",
		 csprng_kernel_source(), (unsigned)main_n_slots);
	LOG_INFO("boot", "protections: NX on, WP on, SMEP %s, SMAP %s, UMIP %s",
		 main_onoff(main_feat.smep), main_onoff(main_feat.smap), main_onoff(main_feat.umip));
	LOG_INFO("boot", "W^X audit: PASS (%lu live leaf entries, 0 writable+executable, 0 user, "
			 "lower half empty, page tables read-only)",
		 (unsigned long)wx->n_leaves);
	uint64_t pt_used, pt_size;
	x86_mmu_pool_used(&pt_used, &pt_size);
	LOG_INFO("boot", "page tables: %lu of %lu KiB, sealed read-only with no writable alias",
		 (unsigned long)(pt_used >> 10), (unsigned long)(pt_size >> 10));
	struct time_civil c;
	uint64_t now_s = 0;
	int rc = x86_rtc_read(&now_s, &c);
	if (rc == 0 && now_s >= TIME_PLAUSIBLE_MIN_UNIX)
		LOG_INFO("boot", "wall clock: %04u-%02u-%02u %02u:%02u:%02u UTC (CMOS RTC)",
			 (unsigned)c.year, (unsigned)c.month, (unsigned)c.day, (unsigned)c.hour,
			 (unsigned)c.min, (unsigned)c.sec);
	else if (rc == 0)
		LOG_ERR("boot", "wall clock IMPLAUSIBLE: RTC says %04u-%02u-%02u, before 2026-01-01; "
				"certificate validity cannot be checked",
			(unsigned)c.year, (unsigned)c.month, (unsigned)c.day);
	else
		LOG_ERR("boot", "wall clock UNAVAILABLE: RTC unreadable or invalid (%s)", err_name(rc));
	LOG_INFO("boot", "stack canary: %s", x86_ssp_strong() ? "RDRAND" : "TSC (weak: no RDRAND)");
	uint64_t hz = x86_tsc_hz();
	LOG_INFO("boot", "clock: TSC %lu.%03lu MHz from %s%s", (unsigned long)(hz / 1000000u),
		 (unsigned long)(hz / 1000u % 1000u), x86_tsc_source(), x86_tsc_detail());
}

static uint32_t main_core_index(void)
{
	return x86_core_self()->index;
}

/* A heap or page-frame bug (double free, foreign pointer, overwritten bookkeeping): a
 * decoded report, then stop. Production reports name the bug and the core only. */
static void main_heap_bug(const char *what, uint64_t addr, bool phys)
{
	uint32_t core = x86_core_self()->index;
#ifndef URMQTT_PROD
	log_rawf("\n*** BUG on core %u: %s\n", (unsigned)core, what);
	if (phys)
		log_rawf("  page frame at physical 0x%lx\n", (unsigned long)addr);
	else
		log_rawf("  block at 0x%lx (physical 0x%lx, physmap)\n", (unsigned long)addr,
			 (unsigned long)(addr - X86_PHYSMAP_BASE));
	x86_backtrace((uint64_t)(uintptr_t)__builtin_frame_address(0));
#else
	(void)addr;
	(void)phys;
	log_rawf("\n*** BUG on core %u: %s\n", (unsigned)core, what);
#endif
	kpanic(X86_EXIT_HEAP_BUG, "%s", what);
}

/* The page allocator over usable RAM minus what the boot still uses, and the heap over
 * the physmap (all usable RAM is mapped there RW+NX; nothing new can be mapped once the
 * tables are sealed). After the last boot frame (x86_smp_prepare) was taken. */
static void main_mm_init(uint32_t n_cores)
{
	static struct plat_mem_range usable[BOOTINFO_MAX_MEM];
	struct plat_mem_range resv[KHEAP_MAX_RANGES];
	struct x86_mem_range xr[KHEAP_MAX_RANGES];
	for (uint32_t i = 0; i < main_bi.n_mem; i++) {
		usable[i].base = main_bi.mem[i].base;
		usable[i].len = main_bi.mem[i].len;
	}
	uint32_t n_resv = x86_mmu_boot_reserved(xr, KHEAP_MAX_RANGES);
	if (n_resv > KHEAP_MAX_RANGES)
		kpanic(X86_EXIT_HEAP, "heap: %u reserved ranges, limit %u", (unsigned)n_resv,
		       (unsigned)KHEAP_MAX_RANGES);
	for (uint32_t i = 0; i < n_resv; i++) {
		resv[i].base = xr[i].base;
		resv[i].len = xr[i].len;
	}
	struct kheap_config kc = {
		.usable = usable,
		.n_usable = main_bi.n_mem,
		.reserved = resv,
		.n_reserved = n_resv,
		.virt_offset = X86_PHYSMAP_BASE,
		.n_cores = n_cores,
		.core_index = main_core_index,
		.max_slabs = MAIN_HEAP_MAX_SLABS,
		.limit_pages = MAIN_HEAP_LIMIT_PAGES,
		.max_alloc_bytes = MAIN_HEAP_MAX_ALLOC,
		.bug = main_heap_bug,
	};
	int rc = kheap_init(&kc);
	if (rc != 0)
		kpanic(X86_EXIT_HEAP, "heap: cannot build the page allocator and heap (%s)", err_name(rc));
}

static void main_rng_init(uint32_t n_cores, bool pretend_none)
{
	struct csprng_config rc = { .reseed_bytes = MAIN_RNG_RESEED_BYTES };
	if (!x86_entropy_probe(pretend_none, &rc.entropy))
		kpanic(X86_EXIT_NO_ENTROPY, "csprng: no entropy source: the CPU offers neither RDSEED nor "
					    "RDRAND (and there is no virtio-rng yet); refusing to run with "
					    "predictable keys");
	int err = csprng_kernel_init(&rc, n_cores, main_core_index);
	if (err != 0)
		kpanic(X86_EXIT_NO_ENTROPY, "csprng: seeding from %s failed (%s); refusing to run with "
					    "predictable keys", rc.entropy.name, err_name(err));
}

/* Halt until an interrupt, unless one already marked work since the last poll or a mesh
 * message is waiting: the checks run with interrupts off and "sti; hlt" cannot be split
 * (sti's one-instruction shadow), so a wake-up is never lost between the check and the
 * halt. Mesh senders wake a sleeping core with an IPI (protocol in kernel/node/node.c). */
static void main_idle(void)
{
	struct x86_core *c = x86_core_self();
	__asm__ volatile("cli" ::: "memory");
	atomic_store_explicit(&c->sleeping, true, memory_order_relaxed);
	/* seq_cst: the store above is ordered before the rings' head loads below; pairs
	 * with the sender's fence between its commit and its load of `sleeping`. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_exchange_explicit(&c->wake, false, memory_order_relaxed) || node_mesh_pending(c->index)) {
		atomic_store_explicit(&c->sleeping, false, memory_order_relaxed);
		__asm__ volatile("sti" ::: "memory");
		return;
	}
	__asm__ volatile("sti; hlt" ::: "memory");
	atomic_store_explicit(&c->sleeping, false, memory_order_relaxed);
}

static const struct kloop_ops main_loop_ops = { x86_now_ns, main_idle };
static const struct kloop_config main_loop_cfg = {
	.budget_ns = WATCHDOG_BUDGET_NS,
	.hard_limit_ns = WATCHDOG_HARD_NS,
};

static void main_loop_init(struct x86_core *c)
{
	if (kloop_init(&c->loop, c->index, &main_loop_cfg, &main_loop_ops) != 0)
		PANIC("core %u: loop configuration rejected", (unsigned)c->index);
	if (kloop_add(&c->loop, "heap", kheap_poll, NULL) != 0)
		PANIC("core %u: loop full", (unsigned)c->index);
	node_devices_loop_add(&c->loop, c->index);
	/* Core 0 re-reads the RTC and corrects the wall clock (arch/x86_64/wall.c). */
	if (c->index == 0 && kloop_add(&c->loop, "wall-clock", x86_wall_resync_poll, NULL) != 0)
		PANIC("core %u: loop full", (unsigned)c->index);
	if (main_sc && main_sc->poll && kloop_add(&c->loop, main_sc->poll_name, main_sc->poll, NULL) != 0)
		PANIC("core %u: loop full", (unsigned)c->index);
}

static NORETURN void main_ap(struct x86_core *c)
{
	main_loop_init(c);
	__asm__ volatile("sti");
	kloop_run(&c->loop);
}


/* urmqtt.mode= (every build, production included: ADR on the one production key). An
 * unknown value stops the boot naming it: a typo in a boot entry must not serve, install
 * or erase by surprise. */
static void main_boot_mode(void)
{
	if (boot_mode_parse(main_bi.cmdline, sizeof main_bi.cmdline, &main_mode) != 0) {
		char v[BOOT_MODE_VALUE_MAX];
		int rc = cmdline_get(main_bi.cmdline, sizeof main_bi.cmdline, BOOT_MODE_KEY, v, sizeof v);
		kpanic(X86_EXIT_BOOT, "boot: refusing the command line's %s=%s (want exactly one of live, install, "
				      "install-erase, diag; no key: serve from this machine's disk)",
		       BOOT_MODE_KEY, rc == 0 ? v : "(too long or repeated)");
	}
	if (main_mode != BOOT_MODE_SERVE)
		LOG_INFO("boot", "mode: %s (%s=%s on the command line)", boot_mode_name(main_mode), BOOT_MODE_KEY,
			 boot_mode_name(main_mode));
}

/* The installer's images: the Multiboot2 module named for kind k ("esp", "bios";
 * reserved from the page allocator in x86_boot_main), reached through the physmap; it
 * must lie in usable RAM. */
static const uint8_t *main_module(enum bootinfo_mod k, size_t *len)
{
	static const char *const what[BOOTINFO_MOD__COUNT] = { [BOOTINFO_MOD_ESP] = "esp",
								[BOOTINFO_MOD_BIOS] = "bios" };
	*len = 0;
	if (!main_bi.has_mod[k] || !main_bi.mods[k].len)
		return NULL;
	uint64_t b = main_bi.mods[k].base, l = main_bi.mods[k].len;
	for (uint32_t i = 0; i < main_bi.n_mem; i++) {
		const struct bootinfo_range *r = &main_bi.mem[i];
		if (b >= r->base && b - r->base < r->len && l <= r->len - (b - r->base)) {
			*len = (size_t)l;
			return x86_phys_to_virt(b);
		}
	}
	LOG_ERR("boot", "boot module \"%s\" (%lu B) outside usable RAM: ignored", what[k], (unsigned long)l);
	return NULL;
}

static NORETURN void main_continue(void *arg)
{
	(void)arg;
	x86_core_bind(0);
	main_boot_mode();
	main_sc = main_scenario_lookup();

	struct plat_phys_reader fw = { NULL, main_fw_map };
	const char *acpi_why = NULL;
	uint64_t rsdp = main_bi.rsdp_phys;
	if (!rsdp && plat_acpi_find_rsdp(&fw, &rsdp) != 0)
		acpi_why = "no RSDP found";
	if (!acpi_why && plat_acpi_parse(&main_plat, &fw, rsdp, &acpi_why) != 0 && !acpi_why)
		acpi_why = "tables rejected";
	if (acpi_why)
		LOG_WARN("acpi", "platform discovery failed: %s", acpi_why);
	x86_pm_init(&main_plat);
	/* The TSC against the ACPI PM timer when nothing stated its frequency: before the
	 * APIC timer, which is calibrated against the TSC. */
	x86_tsc_calibrate_late(&main_plat, main_bi.cmdline, sizeof main_bi.cmdline);

	struct x86_core *bsp = &x86_cores[0];
	MAIN_SC_HOOK(before_timer);
	x86_apic_init_bsp(TICK_US);
	bsp->apic_id = x86_apic_id();
	x86_apic_init_core();
	if (!acpi_why)
		main_n_slots = 1 + x86_smp_prepare(&main_plat);
	main_sc_boot.n_slots = main_n_slots;
	MAIN_SC_HOOK(before_seal);
	{
		struct x86_mem_range ram[BOOTINFO_MAX_MEM];
		for (uint32_t i = 0; i < main_bi.n_mem; i++) {
			ram[i].base = main_bi.mem[i].base;
			ram[i].len = main_bi.mem[i].len;
		}
		x86_dev_scan(acpi_why ? NULL : &main_plat, ram, main_bi.n_mem);
	}
	x86_mmu_seal();
	struct x86_wx_report wx;
	x86_wx_audit(&wx);
	if (wx.n_wx || wx.n_user || wx.n_low || wx.n_pt_writable) {
#ifndef URMQTT_PROD
		log_rawf("W^X audit: first bad mapping at 0x%lx\n", (unsigned long)wx.first_bad_va);
#endif
		kpanic(X86_EXIT_WX, "W^X audit failed: %lu writable+executable, %lu user, %lu lower-half, "
				    "%lu writable page-table of %lu leaves",
		       (unsigned long)wx.n_wx, (unsigned long)wx.n_user, (unsigned long)wx.n_low,
		       (unsigned long)wx.n_pt_writable, (unsigned long)wx.n_leaves);
	}
	main_mm_init(main_n_slots);
	main_rng_init(main_n_slots, main_sc && main_sc->no_entropy);
	MAIN_SC_HOOK(setup);
	/* Diagnostics drive the devices themselves (kernel/diag/), the node is never built;
	 * they end in ACPI S5 (diag_port.c). */
	if (main_mode == BOOT_MODE_DIAG)
		x86_diag_main(main_bi.cmdline, sizeof main_bi.cmdline, bootinfo_mem_total(&main_bi),
			      acpi_why ? 1u : main_plat.n_cpus);
	{
		size_t esp_len, bios_len;
		const uint8_t *esp = main_module(BOOTINFO_MOD_ESP, &esp_len);
		const uint8_t *bios = main_module(BOOTINFO_MOD_BIOS, &bios_len);
		if (main_bi.n_mods_ignored)
			LOG_WARN("boot", "%u of %u boot module(s) ignored (want one \"esp\" and one \"bios\")",
				 (unsigned)main_bi.n_mods_ignored, (unsigned)main_bi.n_mods);
		node_devices_set_boot(main_mode, esp, esp_len, bios, bios_len);
	}
	x86_dev_init(main_bi.cmdline, sizeof main_bi.cmdline, main_n_slots);
	if (main_mode == BOOT_MODE_INSTALL || main_mode == BOOT_MODE_INSTALL_ERASE)
		x86_stop(X86_EXIT_BOOT_OK); /* installed (any failure stopped inside): ACPI S5 */
	MAIN_SC_HOOK(after_devices);
	main_loop_init(bsp);
	uint32_t n_cores = acpi_why ? 1 : x86_smp_boot(main_ap);
	node_cores_started(n_cores);

	main_banner(&wx, n_cores, main_plat.n_cpus, acpi_why);
	uint64_t ns = x86_now_ns();
	LOG_INFO("boot", "boot: %lu.%03lu ms from entry to the loop", (unsigned long)(ns / 1000000u),
		 (unsigned long)(ns / 1000u % 1000u));
	main_sc_boot.n_cores = n_cores;
	main_sc_boot.boot_loop = &bsp->loop;
	if (main_sc && main_sc->all_cores && n_cores != main_n_slots)
		PANIC("%s scenario: only %u of %u cores started", main_sc_boot.name, (unsigned)n_cores,
		      (unsigned)main_n_slots);
	MAIN_SC_HOOK(started);
	__asm__ volatile("sti");
	kloop_run(&bsp->loop);
}

__attribute__((no_stack_protector)) NORETURN void x86_boot_main(uint32_t kind, uint32_t info_phys)
{
	x86_ssp_init();
	x86_serial_init();
	x86_tsc_calibrate();
	static const struct log_config log_cfg = {
		.write = x86_serial_write,
		.now_ns = x86_now_ns,
		.level = LOG_LEVEL_INFO,
		.burst = 10,
		.window_ns = 1000000000u,
	};
	log_init(&log_cfg);
	static const struct panic_ops panic_cfg = { .stop = main_stop };
	panic_init(&panic_cfg);
	main_kaslr_gate();

	struct plat_phys_reader boot_rd = { NULL, main_boot_map };
	int rc;
	if (kind == X86_BOOT_PVH) {
		rc = bootinfo_parse_pvh(&main_bi, &boot_rd, info_phys);
	} else if (kind == X86_BOOT_MB2) {
		rc = bootinfo_parse_mb2(&main_bi, &boot_rd, info_phys);
		x86_mmu_reserve(info_phys, 64u * 1024u); /* the RSDP copy lives in it */
		for (uint32_t k = 0; rc == 0 && k < BOOTINFO_MOD__COUNT; k++)
			if (main_bi.has_mod[k] && main_bi.mods[k].len) /* the installer's images */
				x86_mmu_reserve(main_bi.mods[k].base, main_bi.mods[k].len);
	} else {
		rc = -E_INVAL;
	}
	if (rc != 0)
		kpanic(X86_EXIT_BOOT, "boot information unusable (%s): no memory map", err_name(rc));
	if (main_bi.n_mem_dropped)
		LOG_WARN("boot", "memory map: %u usable ranges ignored (limit %u)",
			 (unsigned)main_bi.n_mem_dropped, (unsigned)BOOTINFO_MAX_MEM);

	struct x86_mem_range ranges[BOOTINFO_MAX_MEM];
	for (uint32_t i = 0; i < main_bi.n_mem; i++) {
		ranges[i].base = main_bi.mem[i].base;
		ranges[i].len = main_bi.mem[i].len;
	}
	x86_mmu_init(ranges, main_bi.n_mem);
	x86_mmu_build(&main_feat);
	uint64_t top = x86_stack_alloc(BOOT_STACK_PAGES, "boot");
	x86_cpu_idt_init();
	x86_cpu_tables_prepare(0);
	x86_cpu_tables_load(0);
	x86_mmu_activate(&main_feat);
	x86_stack_switch(top, main_continue, NULL);
}
