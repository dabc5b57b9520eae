/* SPDX-License-Identifier: MIT
 *
 * Private to arch/x86_64: CPU register access, port I/O and the interfaces between the
 * files of this directory (boot, mmu, cpu tables, traps, serial). Never included from
 * portable code.
 */
#ifndef ARCH_X86_64_X86_H
#define ARCH_X86_64_X86_H

#include "lib/compiler.h"
#include "arch/x86_64/layout.h"
#include "kernel/loop.h"
#include "plat/plat.h"

/* ---- registers and ports ---- */
static inline void x86_outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}
static inline void x86_outl(uint16_t port, uint32_t v)
{
	__asm__ volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}
static inline void x86_outw(uint16_t port, uint16_t v)
{
	__asm__ volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}
static inline uint16_t x86_inw(uint16_t port)
{
	uint16_t v;
	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
static inline uint32_t x86_inl(uint16_t port)
{
	uint32_t v;
	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
static inline uint8_t x86_inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}
static inline uint64_t x86_rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
static inline void x86_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}
static inline uint64_t x86_rdmsr(uint32_t msr)
{
	uint32_t lo, hi;
	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}
static inline void x86_wrmsr(uint32_t msr, uint64_t v)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32)));
}
#define X86_READ_CR(n)                                               \
	static inline uint64_t x86_read_cr##n(void)                  \
	{                                                            \
		uint64_t v;                                          \
		__asm__ volatile("mov %%cr" #n ", %0" : "=r"(v));    \
		return v;                                            \
	}                                                            \
	static inline void x86_write_cr##n(uint64_t v)               \
	{                                                            \
		__asm__ volatile("mov %0, %%cr" #n : : "r"(v) : "memory"); \
	}
X86_READ_CR(0)
X86_READ_CR(2)
X86_READ_CR(3)
X86_READ_CR(4)
static inline void x86_invlpg(uint64_t va) { __asm__ volatile("invlpg (%0)" : : "r"(va) : "memory"); }
static inline void x86_pause(void) { __asm__ volatile("pause"); }

/* 64 bits from RDSEED / RDRAND, retried up to `tries` times (with a pause between): RDSEED
 * underflows under load and the SDM suggests retrying; RDRAND fails only on a broken or
 * exhausted unit. false when every try failed. The caller checked CPUID. Shared by the
 * CSPRNG's seeding (entropy.c) and the boot's KASLR slide (kaslr.c, before relocation:
 * inline, no absolute address). */
#define X86_RDSEED_TRIES 1024u
#define X86_RDRAND_TRIES 16u
static inline bool x86_rdseed64(uint64_t *v, uint32_t tries)
{
	for (uint32_t i = 0; i < tries; i++) {
		uint8_t ok;
		__asm__ volatile("rdseed %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
		if (ok)
			return true;
		x86_pause();
	}
	return false;
}
static inline bool x86_rdrand64(uint64_t *v, uint32_t tries)
{
	for (uint32_t i = 0; i < tries; i++) {
		uint8_t ok;
		__asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
		if (ok)
			return true;
		x86_pause();
	}
	return false;
}

#define X86_CR0_WP (1ull << 16)
#define X86_CR0_MP (1ull << 1)
#define X86_CR0_EM (1ull << 2)
#define X86_CR4_PGE (1ull << 7)
#define X86_CR4_OSFXSR (1ull << 9)
#define X86_CR4_OSXMMEXCPT (1ull << 10)
#define X86_CR4_UMIP (1ull << 11)
#define X86_CR4_SMEP (1ull << 20)
#define X86_CR4_SMAP (1ull << 21)
#define X86_MSR_EFER 0xc0000080u
#define X86_EFER_NXE (1ull << 11)

/* Page-table entry bits. */
#define PTE_P   (1ull << 0)
#define PTE_W   (1ull << 1)
#define PTE_U   (1ull << 2)
#define PTE_PWT (1ull << 3)
#define PTE_PCD (1ull << 4)
#define PTE_PS  (1ull << 7)
#define PTE_G   (1ull << 8)
#define PTE_NX  (1ull << 63)
#define PTE_ADDR 0x000ffffffffff000ull

/* ---- boot.S ---- */
extern uint64_t x86_boot_tsc0;
extern uint32_t x86_boot_kind, x86_boot_info_phys;
extern const uint64_t x86_isr_table[256];
extern char x86_image_start[], x86_image_end[], x86_text_start[], x86_text_end[];
extern char x86_rodata_start[], x86_rodata_end[], x86_data_start[], x86_data_end[];
NORETURN void x86_stack_switch(uint64_t top, void (*fn)(void *), void *arg);
void x86_gdt_load(const void *gdtr);
NORETURN void x86_boot_main(uint32_t kind, uint32_t info_phys);

/* ---- kaslr.c: the image's random virtual base (ADR-077) ---- */
enum x86_kaslr_state {
	X86_KASLR_SLID = 1,       /* moved by x86_kaslr_slide */
	X86_KASLR_NO_ENTROPY,     /* no RDSEED/RDRAND: unslid, and the CSPRNG stops the boot */
	X86_KASLR_RNG_FAILED,     /* the instruction never succeeded: unslid */
	X86_KASLR_NO_ROOM,        /* the image is too large for two copies in the window */
	X86_KASLR_BAD_TABLE,      /* the relocation table was refused: unslid, image untouched */
};
struct x86_kaslr_info {
	enum x86_kaslr_state state;
	const char *source;   /* "RDSEED", "RDRAND" or "none" */
	uint32_t n_slots;     /* 2 MiB positions the slide was drawn from */
	uint32_t n_sites, n_moved;
	uint32_t bad_index;   /* X86_KASLR_BAD_TABLE: the entry refused */
	const char *why;      /* X86_KASLR_BAD_TABLE: kreloc_why_name() */
	uint64_t tsc_cycles;  /* TSC cycles from the draw to the end of the apply */
};
/* Virtual minus link address of the image; 0 before x86_kaslr_boot() and when unslid. */
extern uint64_t x86_kaslr_slide;
/* Virtual minus physical address of the image (X86_KERNEL_VMA + x86_kaslr_slide). A
 * variable, never a constant: the compiler would fold `&sym - constant` into the
 * relocation site, whose value then looks physical and would not move. */
extern uint64_t x86_image_virt_off;
/* boot.S calls it on the boot tables at the link address, before any other C. */
void x86_kaslr_boot(void);
const struct x86_kaslr_info *x86_kaslr_info(void);
extern char x86_relocs_start[], x86_relocs_end[];

static inline uint64_t x86_virt_to_phys_image(const void *p)
{
	return (uint64_t)(uintptr_t)p - x86_image_virt_off;
}
static inline void *x86_phys_to_virt_image(uint64_t pa)
{
	return (void *)(uintptr_t)(x86_image_virt_off + pa);
}
static inline void *x86_phys_to_virt(uint64_t pa)
{
	return (void *)(uintptr_t)(X86_PHYSMAP_BASE + pa);
}

/* ---- mmu.c: boot frame allocator, final page tables, stacks, W^X audit ---- */
struct x86_mem_range {
	uint64_t base, len;
};
struct x86_mmu_features {
	bool nx, smep, smap, umip, pge;
};
/* Take the usable RAM ranges (borrowed, copied) the frame allocator may use. */
void x86_mmu_init(const struct x86_mem_range *ranges, uint32_t n);
/* One zeroed 4 KiB frame (physical address); panics when none is left. */
uint64_t x86_frame_alloc(void);
/* Physical ranges the page allocator (kernel/mm) must never hand out: the kernel image,
 * the page-table pool, boot frames (stacks), the first 1 MiB and the loader's boot
 * information. Fills up to max entries of out; returns how many there are. Call after
 * SMP start (no boot frame is allocated after it). */
uint32_t x86_mmu_boot_reserved(struct x86_mem_range *out /* out */, uint32_t max);
/* Frames handed out so far: [first, end) physical (may enclose reserved holes). */
void x86_frame_used(uint64_t *first /* out */, uint64_t *end /* out */);
/* Keep frames overlapping [base, base+len) away from the allocator (boot information). */
void x86_mmu_reserve(uint64_t base, uint64_t len);
/* Build the final tables (not yet live); panics without NX. */
void x86_mmu_build(struct x86_mmu_features *got /* out */);
/* Switch to the final tables and enable WP, SMEP, SMAP, UMIP, PGE as offered. */
void x86_mmu_activate(const struct x86_mmu_features *f);
/* Name of the stack holding va (excluding its guard), or NULL. */
const char *x86_stack_name(uint64_t va);
/* A stack of n_pages with an unmapped guard page below it; returns the top. */
uint64_t x86_stack_alloc(uint32_t n_pages, const char *name /* linked */);
/* Name of the stack whose guard page holds va, or NULL. */
const char *x86_stack_guard_of(uint64_t va);
/* True if [va, va+len) lies inside a mapped stack (for the backtrace walker). */
bool x86_stack_contains(uint64_t va, uint64_t len);
/* Map device registers [pa, pa+len) uncached, RW, NX into the physmap. NULL if a page is
 * RAM or firmware tables, or (after x86_mmu_seal) was not mapped before the seal. */
void *x86_mmu_map_mmio(uint64_t pa, size_t len);
/* A large device window (PCIe ECAM): [pa, pa+len), both 2 MiB aligned, at most 256 MiB,
 * uncached RW NX with 2 MiB pages. NULL if any page of it is mapped already, or sealed. */
void *x86_mmu_map_mmio_window(uint64_t pa, uint64_t len);
/* Features found by x86_mmu_build (for the other cores' x86_mmu_activate). */
const struct x86_mmu_features *x86_mmu_features(void);
/* A throw-away PML4 for AP start-up: the kernel half of the live tables plus an
 * identity mapping (RX) of the trampoline page at tramp_pa. Physical address. */
uint64_t x86_mmu_ap_tables(uint64_t tramp_pa);
/* Map physical [pa, pa+len) read-only NX into the physmap (firmware tables). */
const void *x86_mmu_map_ro(uint64_t pa, size_t len);
struct x86_wx_report {
	uint64_t n_leaves;    /* live leaf entries walked */
	uint64_t n_wx;        /* writable and executable */
	uint64_t n_user;      /* user-accessible (must be 0) */
	uint64_t n_low;       /* present entries in the lower half (must be 0) */
	uint64_t n_pt_writable; /* writable mappings of page-table frames (0 once sealed) */
	uint64_t first_bad_va;
};
void x86_wx_audit(struct x86_wx_report *r /* out */);
/* Make every page-table frame read-only; no mapping can change afterwards. */
void x86_mmu_seal(void);
/* True if va is the physmap address of a page-table frame. */
bool x86_mmu_is_page_table(uint64_t va);
void x86_mmu_pool_used(uint64_t *used /* out */, uint64_t *size /* out */);
/* Development builds: add one writable+executable page so a test sees the audit stop. */
void x86_mmu_test_map_wx(void);

/* ---- cpu.c: GDT, TSS with IST stacks, IDT ---- */
/* Boot core: build the shared IDT. Any core, on the boot core before starting it:
 * allocate core's IST stacks and build its GDT and TSS. On the core itself: load them. */
void x86_cpu_idt_init(void);
void x86_cpu_tables_prepare(uint32_t core);
void x86_cpu_tables_load(uint32_t core);

/* ---- serial.c ---- */
void x86_serial_init(void);
void x86_serial_write(const char *s, size_t len);
/* One received byte (0..255), or -1 when none waits (polled; boot core, one reader). */
int x86_serial_getc(void);

/* ---- trap.c ---- */
struct x86_trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};
void x86_trap(struct x86_trap_frame *f);

/* ---- exit.c: test exits and resets ---- */
/* isa-debug-exit values (QEMU exits with value * 2 + 1). */
enum x86_exit_code {
	X86_EXIT_BOOT_OK = 0x10,
	X86_EXIT_PANIC = 0x20,
	X86_EXIT_ASSERT = 0x21,
	X86_EXIT_WX = 0x22,
	X86_EXIT_STACK_CHK = 0x23,
	X86_EXIT_EXCEPTION = 0x24,
	X86_EXIT_FAULT_WRITE_RO = 0x25,
	X86_EXIT_FAULT_EXEC_NX = 0x26,
	X86_EXIT_FAULT_GUARD = 0x27,
	X86_EXIT_FAULT_NULL = 0x28,
	X86_EXIT_BOOT = 0x29,
	X86_EXIT_WATCHDOG = 0x2a,
	X86_EXIT_HEAP_BUG = 0x2b,
	X86_EXIT_NO_ENTROPY = 0x2c,
	X86_EXIT_HEAP = 0x2d, /* the heap could not be built */
};
/* Stop the machine: isa-debug-exit (development builds); then X86_EXIT_BOOT_OK powers
 * off through ACPI S5 (production) and any other code waits 60 s and resets. */
NORETURN void x86_stop(int code);
/* Remember the platform's ACPI S5 data (borrowed, linked) for the power-off path. */
void x86_pm_init(const struct platform *p);
/* ACPI S5 power-off; returns only if there is no S5 data or the machine ignored it
 * (then the caller resets). */
void x86_acpi_poweroff(void);
/* True once some core has entered x86_stop(). */
bool x86_stopping(void);
uint64_t x86_tsc_hz(void);
/* Boot core, first thing: the TSC frequency when the CPU or the hypervisor states it
 * (CPUID 0x15/0x16, the hypervisor timing leaf, KVM's pvclock scale). Otherwise the
 * frequency stays 0 (x86_now_ns() reads 0) until x86_tsc_calibrate_late. */
void x86_tsc_calibrate(void);
/* Boot core, after ACPI discovery and before the APIC timer: when nothing stated the
 * frequency, measure it against the ACPI PM timer of p (borrowed), else the PIT. A
 * development image's tsc_skew_pct=N (-50..50) then multiplies it by (100 + N) / 100 for
 * the clock tests (the guest's clock runs N % slow). Never moves x86_now_ns() backwards. */
void x86_tsc_calibrate_late(const struct platform *p, const char *cmdline, size_t cmdline_len);
uint64_t x86_now_ns(void);
/* The source's name ("ACPI PM timer", "PIT", "cpuid 0x15", ...). */
const char *x86_tsc_source(void);
/* How a measured frequency came out, for the banner: "" when the frequency was stated,
 * else e.g. " (5 of 5 windows of 20 ms, spread 4 ppm)". Static storage. */
const char *x86_tsc_detail(void);

/* ---- apic.c ---- */
#define X86_VEC_TIMER 0x30
/* Wake-up IPI (another core queued a mesh message for a halted core): marks work only. */
#define X86_VEC_WAKE 0x31
/* Device (MSI-X) vectors: X86_VEC_DEV_BASE + MSI-X entry of the device that owns them
 * (only one device uses interrupts for now: virtio-net). The handler only counts, marks
 * the core's loop awake and acknowledges. */
#define X86_VEC_DEV_BASE 0x40
#define X86_VEC_DEV_COUNT 32
/* The MSI message that delivers `vector` to the local APIC `apic_id` (fixed, edge,
 * physical destination; apic_id < 256). */
static inline uint64_t x86_msi_addr(uint32_t apic_id)
{
	return 0xfee00000ull | (uint64_t)(apic_id & 0xffu) << 12;
}
#define X86_VEC_PIC_BASE 0xe0 /* legacy PIC, masked: only spurious IRQs can arrive */
#define X86_VEC_SPURIOUS 0xff
/* Boot core: disable the PICs, pick x2APIC/xAPIC, calibrate a period of period_us. */
void x86_apic_init_bsp(uint64_t period_us);
/* This core: enable its local APIC and start its 10 ms tick (one-shot timer re-armed
 * by every expiry; TSC-deadline mode when offered, else LAPIC one-shot counts). */
void x86_apic_init_core(void);
/* Development builds: before x86_apic_init_bsp, pretend the CPU lacks TSC-deadline. */
void x86_apic_no_deadline_for_test(void);
/* From the timer interrupt: re-arm and say what is due (X86_TIMER_* bits). */
#define X86_TIMER_TICK 1u
#define X86_TIMER_ONESHOT 2u
unsigned x86_apic_timer_irq(void);
/* This core's one-shot timer: fire at monotonic time deadline_ns (x86_now_ns scale), or
 * at once if that has passed; replaces an armed one; 0 disarms. Loop context (takes
 * interrupts off briefly), never from an interrupt handler. */
void x86_timer_arm_ns(uint64_t deadline_ns);
/* This core: true once per expiry of its one-shot timer (then cleared). */
bool x86_timer_take_fired(void);
/* "TSC-deadline" or "LAPIC one-shot". */
const char *x86_timer_mode(void);
bool x86_apic_is_x2(void);
uint32_t x86_apic_id(void);
void x86_apic_eoi(void);
void x86_apic_send_init(uint32_t apic_id);
/* NMI every other core (used once, by the stop path). */
void x86_apic_nmi_others(void);
void x86_apic_send_sipi(uint32_t apic_id, uint32_t page);
/* The wake-up IPI (X86_VEC_WAKE) to apic_id. Loop context. */
void x86_apic_send_wake(uint32_t apic_id);
void x86_delay_us(uint64_t us);

/* ---- smp.c: per-core data (GS base) and AP bring-up ---- */
struct x86_core {
	struct x86_core *self; /* at %gs:0 */
	uint32_t index;
	uint32_t apic_id;
	uint64_t stack_top;
	_Atomic bool started;
	/* Set by this core's interrupt handlers that mark loop work (one-shot timer), taken
	 * by its idle with interrupts off, so a wake-up between the last poll and hlt is not
	 * lost. Same core only: relaxed suffices (only compiler ordering matters). */
	_Atomic bool wake;
	/* True while this core's idle is about to halt or halted (the mesh wake-up protocol
	 * of devices.c: seq_cst store + fence here, fence + load in the sender). */
	_Atomic bool sleeping;
	/* Device interrupts taken by this core (written by its own handler only: relaxed). */
	_Atomic uint64_t n_dev_irqs;
	struct kloop loop;
};
extern struct x86_core x86_cores[PLAT_MAX_CPUS];
static inline struct x86_core *x86_core_self(void)
{
	struct x86_core *c;
	__asm__ volatile("movq %%gs:0, %0" : "=r"(c));
	return c;
}

/* The calling core's index (for callbacks that take no context). */
static inline uint32_t x86_core_index(void)
{
	return x86_core_self()->index;
}
/* Make the calling core x86_cores[index] (sets GS base). */
void x86_core_bind(uint32_t index);
/* Prepare every enabled CPU of the platform other than the boot core (stacks, tables,
 * trampoline: every mapping SMP needs); returns how many APs were prepared. */
uint32_t x86_smp_prepare(const struct platform *p);
/* Start the prepared APs (no mapping changes); returns how many cores run in total
 * (boot core included). ap_main is where each AP goes. */
uint32_t x86_smp_boot(void (*ap_main)(struct x86_core *c));
/* Whether x86_smp_boot sent any AP its start-up IPIs (before: they run the firmware). */
bool x86_smp_aps_woken(void);

/* ---- rtc.c ---- */
struct time_civil;
/* Read the CMOS RTC: 0 with *unix_s and *c, -E_IO (never stable) or -E_RANGE (bad date;
 * *c still holds what was read). Boot core at boot, then core 0's wall-clock handler only
 * (the index/data port pair must not be shared). */
MUST_CHECK int x86_rtc_read(uint64_t *unix_s /* out */, struct time_civil *c /* out */);
/* The RTC's seconds register as stored (BCD or binary: compare, do not decode), or -1
 * while an update is in progress or about to start (UIP). Never waits. Same callers. */
int x86_rtc_seconds_probe(void);

/* ---- wall.c: the wall clock (kernel/wallclock.h over x86_now_ns, disciplined by the RTC) ---- */
/* Boot core, once, before the other cores start: the RTC read once (the middle of its
 * second), the resync period (clock.rtc_resync_s; development: clock_resync_s=N on the
 * command line, borrowed for the call). */
void x86_wall_clock_init(const char *cmdline, size_t cmdline_len);
/* Unix nanoseconds / milliseconds of the wall clock; 0 while the time is unknown. Any core. */
uint64_t x86_wall_ns(void);
int64_t x86_wall_ms(void);
/* Core 0's loop handler: re-reads the RTC at a second boundary every period and corrects
 * the wall clock (never blocks; spins the loop only while a boundary is near). */
int x86_wall_resync_poll(void *ctx);
/* SNTP's agreed time (node_port_wall_reference): disciplines the wall clock from now on in
 * place of the RTC. Core 0 only. */
void x86_wall_reference(uint64_t ref_ns, uint64_t mono_ns, uint32_t period_s);
struct x86_wall_stats {
	uint32_t n_samples, n_steps, n_rejected; /* RTC samples used, steps, samples refused */
	int64_t last_error_ns;   /* wall clock minus RTC at the last sample */
	int32_t rate_ppb, freq_ppb;
	uint64_t period_s;
};
/* Core 0 only (the handler's own counters). */
void x86_wall_stats(struct x86_wall_stats *out /* out */);

/* ---- ssp.c ---- */
void x86_ssp_init(void);
bool x86_ssp_strong(void);

/* ---- trap.c (development builds): frame-pointer backtrace from rbp ---- */
void x86_backtrace(uint64_t rbp);

/* ---- entropy.c ---- */
struct csprng_entropy;
/* Fill *out with the best entropy instruction (RDSEED, else RDRAND); false when the CPU
 * offers neither or pretend_none (a test flag) is set: out->get is then NULL. */
bool x86_entropy_probe(bool pretend_none, struct csprng_entropy *out /* out */);

/* ---- drv_port.c: struct drv_port for drivers/ ---- */
struct drv_port;
/* Before the seal: map the ECAM window of PCI segment 0 from p (NULL or no MCFG: the
 * legacy configuration ports). *how names the mechanism for the banner. 0 or -E_INVAL. */
MUST_CHECK int x86_drv_port_init(const struct platform *p, const char **how /* out */);
/* The port every driver uses (static; valid after x86_drv_port_init). */
const struct drv_port *x86_drv_port(void);
/* Bus range the port reaches. */
void x86_drv_port_buses(uint8_t *start /* out */, uint8_t *end /* out */);

/* ---- devices.c: PCI enumeration and virtio bring-up ---- */
/* Boot core, before x86_mmu_seal: enumerate PCI (ram: usable RAM, forbidden for BARs)
 * and map every virtio BAR. */
void x86_dev_scan(const struct platform *p, const struct x86_mem_range *ram, uint32_t n_ram);
/* Boot core, after the heap and the CSPRNG, before the APs start: the wall clock, then the
 * node's devices (kernel/node/devices.h: virtio drivers, block and TLS self-tests, the
 * node). Each core's loop handlers: node_devices_loop_add. */
void x86_dev_init(const char *cmdline, size_t cmdline_len, uint32_t n_cores);
/* The scanned bus (NULL when nothing was found) and how configuration space is reached,
 * for the diagnostics mode, which drives the devices itself instead of x86_dev_init. */
struct pci_bus *x86_dev_bus(const char **how /* out */);

/* ---- diag_port.c: the diagnostics mode (urmqtt.mode=diag, kernel/diag/diag.h) ---- */
/* Boot core, after the heap and the CSPRNG, instead of x86_dev_init: report, measure,
 * then power off (ACPI S5), or halt with a message when the machine ignores S5. */
NORETURN void x86_diag_main(const char *cmdline, size_t cmdline_len, uint64_t mem_total, uint32_t n_cpus);

#endif
