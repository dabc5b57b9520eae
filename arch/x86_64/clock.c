/* SPDX-License-Identifier: MIT
 *
 * TSC clock and the machine stop path. The TSC frequency comes from CPUID 0x15, then
 * 0x16, then the hypervisor timing leaf, then KVM's clock (pvclock: the scale KVM
 * publishes for this vCPU's TSC), all known at the first instruction; otherwise it is
 * measured once ACPI is parsed: against the ACPI PM timer (3,579,545 Hz, an I/O port every
 * PC-compatible machine and QEMU's pc and q35 offer; HPET would need an MMIO mapping and
 * gives nothing more here), as the median of five 20 ms windows whose every TSC read is
 * bracketed by two PM timer reads (kernel/clockcal: a window with a wide bracket, a vCPU
 * descheduled at the wrong moment, is discarded); and only without a PM timer, against
 * PIT channel 2 (median of seven 10 ms windows). Until then the frequency is 0 and
 * x86_now_ns() reads 0, so the monotonic clock never runs backwards when it is set.
 * x86_stop() ends the machine: development/test builds write the code to QEMU's
 * isa-debug-exit port (0xf4; QEMU exits with code * 2 + 1); production builds (and test
 * builds without that device) park the other cores with an NMI; then an orderly stop
 * (X86_EXIT_BOOT_OK) powers off through ACPI S5 (PM1a/PM1b control with the \\_S5 sleep
 * types of the FADT/DSDT), and every other code waits 60 s so the message can be read,
 * then resets. Never returns from x86_stop().
 */
#include <stdatomic.h>
#include "arch/x86_64/x86.h"
#include "kernel/clockcal.h"
#include "kernel/cmdline.h"
#include "kernel/log.h"
#include "lib/fmt.h"

#define PIT_HZ 1193182u
#define PIT_CAL_MS 10u
#define PIT_CAL_RUNS 7u /* windows measured; the median counts (see clock_pit_measure) */
#define DEBUG_EXIT_PORT 0xf4
#define STOP_WAIT_S 60u

/* The PM timer windows: CAL_WINDOWS back-to-back windows of CAL_WINDOW_MS each (100 ms of
 * boot), each sample the narrowest of CAL_TRIES bracketed reads, a bracket wider than
 * CAL_MAX_BRACKET_US discarded; at least CAL_MIN_KEPT windows kept, else another round,
 * at most CAL_ROUNDS, else the PIT. */
#define PMTMR_HZ 3579545u
#define CAL_WINDOWS 5u
#define CAL_WINDOW_MS 20u
#define CAL_TRIES 4u
#define CAL_MAX_BRACKET_US 50u
#define CAL_MIN_KEPT 3u
#define CAL_ROUNDS 3u
#define CAL_TSC_BOUND (1ull << 33) /* TSC cycles a window may take before the timer counts as stuck */
STATIC_ASSERT(CAL_WINDOWS <= CLOCKCAL_MAX_WINDOWS, "calibration windows");

static uint64_t clock_tsc_hz;
static const char *clock_source = "none";
static char clock_detail[96];

static uint64_t clock_pit_window(void)
{
	uint16_t count = (uint16_t)(PIT_HZ * PIT_CAL_MS / 1000u);
	uint8_t p61 = x86_inb(0x61);
	x86_outb(0x61, (uint8_t)((p61 & ~0x02) | 0x01)); /* gate on, speaker off */
	x86_outb(0x43, 0xb0);                             /* ch2, lo/hi, mode 0 */
	x86_outb(0x42, (uint8_t)(count & 0xff));
	x86_outb(0x42, (uint8_t)(count >> 8));
	uint64_t t0 = x86_rdtsc();
	uint32_t spins = 0;
	while (!(x86_inb(0x61) & 0x20)) {
		if (++spins > 50000000u)
			return 0;
	}
	uint64_t t1 = x86_rdtsc();
	x86_outb(0x61, p61);
	return (t1 - t0) * (1000u / PIT_CAL_MS);
}

/* A virtual CPU that is descheduled inside a window (the host is busy) sees the PIT's
 * end late, so that window's TSC count comes out too long; descheduled between
 * programming the PIT and reading the TSC, too short. One window overestimated the
 * frequency by 26-92 % on a loaded host, and the guest's clock then ran that much slow
 * (rate limits and timeouts with it). The median of several windows ignores a minority
 * disturbed either way. */
static uint64_t clock_pit_measure(void)
{
	uint64_t hz[PIT_CAL_RUNS];
	uint32_t n = 0;
	for (uint32_t i = 0; i < PIT_CAL_RUNS; i++) {
		uint64_t v = clock_pit_window();
		if (!v)
			continue;
		uint32_t k = n++; /* insertion sort: a handful of values */
		while (k > 0 && hz[k - 1] > v) {
			hz[k] = hz[k - 1];
			k--;
		}
		hz[k] = v;
	}
	return n ? hz[n / 2] : 0;
}

/* ---- KVM clock (pvclock) ----
 * Only to learn the TSC frequency: the boot core registers a pvclock_vcpu_time_info
 * area with MSR_KVM_SYSTEM_TIME_NEW, reads the scale KVM wrote, and unregisters it
 * again, so the hypervisor never writes into our memory afterwards. The time itself
 * stays the TSC (x86_now_ns). NOT TESTED HERE: this machine has no /dev/kvm (TCG
 * reports "TCGTCGTCGTCG" and never reaches this code); checked against the KVM ABI
 * (Documentation/virt/kvm/x86/msr.rst, cpuid.rst) only. */
#define KVM_CPUID_SIGNATURE 0x40000000u
#define KVM_CPUID_FEATURES 0x40000001u
#define KVM_FEATURE_CLOCKSOURCE (1u << 0)
#define KVM_FEATURE_CLOCKSOURCE2 (1u << 3)
#define MSR_KVM_SYSTEM_TIME 0x12u
#define MSR_KVM_SYSTEM_TIME_NEW 0x4b564d01u
#define KVMCLOCK_TRIES 1000u

/* struct pvclock_vcpu_time_info of the KVM ABI (32 bytes, written by the hypervisor). */
struct clock_pvti {
	uint32_t version; /* odd while the hypervisor updates the fields */
	uint32_t pad0;
	uint64_t tsc_timestamp;
	uint64_t system_time;
	uint32_t tsc_to_system_mul;
	int8_t tsc_shift;
	uint8_t flags;
	uint8_t pad[2];
};
STATIC_ASSERT(sizeof(struct clock_pvti) == 32, "pvclock ABI layout");
static volatile struct clock_pvti clock_pvti ALIGNED(64);

static bool clock_is_kvm(uint32_t *features)
{
	uint32_t r[4];
	x86_cpuid(1, 0, r);
	if (!((r[2] >> 31) & 1))
		return false; /* no hypervisor */
	x86_cpuid(KVM_CPUID_SIGNATURE, 0, r);
	/* "KVMKVMKVM\0\0\0" in ebx, ecx, edx */
	if (r[1] != 0x4b4d564bu || r[2] != 0x564b4d56u || r[3] != 0x4du || r[0] < KVM_CPUID_FEATURES)
		return false;
	x86_cpuid(KVM_CPUID_FEATURES, 0, r);
	*features = r[0];
	return true;
}

/* TSC Hz from KVM's scale, or 0. ns = ((tsc_delta << shift) * mul) >> 32 (shift < 0:
 * right shift), so Hz = 1e9 * 2^32 / mul, shifted the other way. */
static uint64_t clock_kvm_tsc_hz(void)
{
	uint32_t features;
	if (!clock_is_kvm(&features))
		return 0;
	uint32_t msr;
	if (features & KVM_FEATURE_CLOCKSOURCE2)
		msr = MSR_KVM_SYSTEM_TIME_NEW;
	else if (features & KVM_FEATURE_CLOCKSOURCE)
		msr = MSR_KVM_SYSTEM_TIME;
	else
		return 0;
	uint64_t pa = x86_virt_to_phys_image((const void *)(uintptr_t)&clock_pvti); /* in the image */
	x86_wrmsr(msr, pa | 1u); /* bit 0: enable */
	uint32_t mul = 0;
	int8_t shift = 0;
	for (uint32_t i = 0; i < KVMCLOCK_TRIES; i++) {
		uint32_t v = clock_pvti.version;
		/* The hypervisor writes version (odd), the fields, then version (even); x86
		 * keeps our loads in order, the compiler barrier stops the compiler moving them. */
		__asm__ volatile("" ::: "memory");
		mul = clock_pvti.tsc_to_system_mul;
		shift = clock_pvti.tsc_shift;
		__asm__ volatile("" ::: "memory");
		if (v && !(v & 1) && v == clock_pvti.version)
			break;
		mul = 0;
		x86_pause();
	}
	x86_wrmsr(msr, 0); /* unregister: no more hypervisor writes into the image */
	if (mul == 0 || shift < -31 || shift > 31)
		return 0;
	uint64_t hz = (1000000000ull << 32) / mul;
	hz = shift < 0 ? hz << -shift : hz >> shift;
	return hz >= 1000000u ? hz : 0; /* below 1 MHz: not a TSC, ignore */
}

/* ---- ACPI PM timer ---- */
struct clock_pm {
	uint16_t port;
	uint32_t mask;
};

static uint32_t clock_pm_read(const struct clock_pm *pm)
{
	return x86_inl(pm->port) & pm->mask;
}

/* The narrowest of CAL_TRIES bracketed reads. */
static void clock_pm_sample(const struct clock_pm *pm, struct clockcal_sample *s)
{
	uint32_t best = UINT32_MAX;
	for (uint32_t i = 0; i < CAL_TRIES; i++) {
		uint32_t a = clock_pm_read(pm);
		uint64_t t = x86_rdtsc();
		uint32_t b = clock_pm_read(pm);
		if (((b - a) & pm->mask) < best) {
			best = (b - a) & pm->mask;
			*s = (struct clockcal_sample){ a, b, t };
		}
	}
}

/* One round: CAL_WINDOWS windows sharing their ends. False if the timer does not count. */
static bool clock_pm_round(const struct clock_pm *pm, struct clockcal_result *r)
{
	struct clockcal_window w[CAL_WINDOWS];
	const uint32_t ticks = PMTMR_HZ / 1000u * CAL_WINDOW_MS;
	struct clockcal_sample s;
	clock_pm_sample(pm, &s);
	for (uint32_t i = 0; i < CAL_WINDOWS; i++) {
		w[i].start = s;
		uint64_t t0 = x86_rdtsc();
		while (((clock_pm_read(pm) - s.ref_before) & pm->mask) < ticks) {
			if (x86_rdtsc() - t0 > CAL_TSC_BOUND)
				return false;
			x86_pause();
		}
		clock_pm_sample(pm, &s);
		w[i].end = s;
	}
	const struct clockcal_ref ref = { PMTMR_HZ, pm->mask, PMTMR_HZ * CAL_MAX_BRACKET_US / 1000000u };
	clockcal_median(&ref, w, CAL_WINDOWS, r);
	return true;
}

static uint64_t clock_pm_measure(const struct platform *p)
{
	if (!p || !p->pm_tmr_port || p->pm_tmr_port > 0xffffu)
		return 0;
	struct clock_pm pm = { (uint16_t)p->pm_tmr_port, p->pm_tmr_32 ? 0xffffffffu : 0xffffffu };
	/* A port nothing answers reads all ones and never changes: not a timer. */
	uint32_t first = clock_pm_read(&pm), n = 0;
	while (clock_pm_read(&pm) == first)
		if (++n > 100000u)
			return 0;
	struct clockcal_result r = { 0 };
	uint32_t round = 0;
	while (round < CAL_ROUNDS) {
		round++;
		if (!clock_pm_round(&pm, &r))
			return 0;
		if (r.n_kept >= CAL_MIN_KEPT)
			break;
	}
	if (r.n_kept < CAL_MIN_KEPT)
		return 0;
	(void)fmt_snprintf(clock_detail, sizeof clock_detail,
			   " (%u of %u windows of %u ms kept, spread %u ppm, %u-bit timer, round %u)",
			   (unsigned)r.n_kept, (unsigned)CAL_WINDOWS, (unsigned)CAL_WINDOW_MS,
			   (unsigned)clockcal_spread_ppm(&r), p->pm_tmr_32 ? 32u : 24u, (unsigned)round);
	return r.hz;
}

/* Development images: tsc_skew_pct=N, -50..50 (a test of the wall clock's discipline). */
static void clock_skew_for_test(const char *cmdline, size_t len)
{
#ifndef URMQTT_PROD
	char v[8];
	if (cmdline_get(cmdline, len, "tsc_skew_pct", v, sizeof v) != 0)
		return;
	bool neg = v[0] == '-';
	uint32_t n = 0;
	const char *c = v + (neg || v[0] == '+');
	for (; *c >= '0' && *c <= '9' && n <= 50u; c++)
		n = n * 10u + (uint32_t)(*c - '0');
	if (*c || n > 50u || c == v + (neg || v[0] == '+')) {
		LOG_WARN("clock", "ignoring tsc_skew_pct=%s (want -50..50)", v);
		return;
	}
	clock_tsc_hz = neg ? clock_tsc_hz / 100u * (100u - n) : clock_tsc_hz / 100u * (100u + n);
	LOG_WARN("clock", "TSC frequency skewed by %s%u %% for a test (tsc_skew_pct): the monotonic clock runs "
			  "that much %s", neg ? "-" : "+", (unsigned)n, neg ? "fast" : "slow");
#else
	(void)cmdline;
	(void)len;
#endif
}

void x86_tsc_calibrate_late(const struct platform *p, const char *cmdline, size_t cmdline_len)
{
	if (!clock_tsc_hz) {
		clock_tsc_hz = clock_pm_measure(p);
		clock_source = "ACPI PM timer";
	}
	if (!clock_tsc_hz) {
		clock_detail[0] = 0;
		clock_tsc_hz = clock_pit_measure();
		clock_source = "PIT";
		if (clock_tsc_hz)
			(void)fmt_snprintf(clock_detail, sizeof clock_detail, " (median of %u windows of %u ms)",
					   (unsigned)PIT_CAL_RUNS, (unsigned)PIT_CAL_MS);
	}
	if (!clock_tsc_hz) {
		clock_tsc_hz = 1000000000u;
		clock_source = "guess (PIT failed)";
	}
	clock_skew_for_test(cmdline, cmdline_len);
}

const char *x86_tsc_detail(void)
{
	return clock_detail;
}

void x86_tsc_calibrate(void)
{
	uint32_t r[4];
	x86_cpuid(0, 0, r);
	uint32_t max_leaf = r[0];
	if (max_leaf >= 0x15) {
		x86_cpuid(0x15, 0, r);
		if (r[0] && r[1] && r[2]) {
			clock_tsc_hz = (uint64_t)r[2] * r[1] / r[0];
			clock_source = "cpuid 0x15";
			return;
		}
	}
	if (max_leaf >= 0x16) {
		x86_cpuid(0x16, 0, r);
		if (r[0]) {
			clock_tsc_hz = (uint64_t)r[0] * 1000000u;
			clock_source = "cpuid 0x16";
			return;
		}
	}
	/* Hypervisor timing leaf (KVM/VMware convention): TSC frequency in kHz. */
	x86_cpuid(1, 0, r);
	if ((r[2] >> 31) & 1) {
		x86_cpuid(0x40000000u, 0, r);
		if (r[0] >= 0x40000010u) {
			x86_cpuid(0x40000010u, 0, r);
			if (r[0]) {
				clock_tsc_hz = (uint64_t)r[0] * 1000u;
				clock_source = "hypervisor leaf 0x40000010";
				return;
			}
		}
	}
	clock_tsc_hz = clock_kvm_tsc_hz();
	if (clock_tsc_hz) {
		clock_source = "KVM clock (pvclock)";
		return;
	}
	clock_source = "pending (measured after ACPI discovery)";
}

uint64_t x86_tsc_hz(void)
{
	return clock_tsc_hz;
}

const char *x86_tsc_source(void)
{
	return clock_source;
}

uint64_t x86_now_ns(void)
{
	if (!clock_tsc_hz)
		return 0;
	uint64_t d = x86_rdtsc() - x86_boot_tsc0;
	/* Another core's TSC a little behind the boot core's at boot (a hypervisor's vCPUs
	 * need not agree to the cycle) reads as 0, not as a wrapped delta of days. One CI run
	 * stopped on a watchdog report of core 1's handler "stuck for 1039898412 ms", which
	 * such a wrap gives; that it was the cause is not proven. */
	if ((int64_t)d < 0)
		return 0;
	/* split so the product fits 64 bits for any TSC below 18 GHz */
	return d / clock_tsc_hz * 1000000000u + d % clock_tsc_hz * 1000000000u / clock_tsc_hz;
}

static NORETURN void clock_reset(void)
{
	x86_outb(0xcf9, 0x02);
	x86_outb(0xcf9, 0x06); /* PCI reset control: hard reset */
	x86_outb(0x64, 0xfe);  /* keyboard controller pulse */
	static const struct {
		uint16_t limit;
		uint64_t base;
	} PACKED empty_idt = { 0, 0 };
	__asm__ volatile("lidt %0; int3" : : "m"(empty_idt)); /* triple fault */
	for (;;)
		__asm__ volatile("cli; hlt");
}

#define PM1_SLP_TYP_SHIFT 10
#define PM1_SLP_TYP_MASK (7u << PM1_SLP_TYP_SHIFT)
#define PM1_SLP_EN (1u << 13)
#define S5_WAIT_MS 500u

static const struct platform *clock_plat;

void x86_pm_init(const struct platform *p)
{
	clock_plat = p;
}

static uint16_t clock_pm1_value(uint16_t now, uint16_t slp_typ)
{
	return (uint16_t)((now & ~PM1_SLP_TYP_MASK) | ((slp_typ & 7u) << PM1_SLP_TYP_SHIFT) | PM1_SLP_EN);
}

void x86_acpi_poweroff(void)
{
	const struct platform *p = clock_plat;
	if (!p || !p->has_s5 || !p->pm1a_cnt || p->pm1a_cnt > 0xffffu || p->pm1b_cnt > 0xffffu) {
		log_raw("ACPI S5 unavailable\n", 21);
		return;
	}
	log_raw("powering off (ACPI S5)\n", 23);
	/* ACPI 6.5 4.8.3.2.1 / 7.4.2: write SLP_TYPx with SLP_EN to PM1a and PM1b control
	 * (b only when present), keeping the other bits (SCI_EN) as they are. */
	uint16_t a = (uint16_t)p->pm1a_cnt, b = (uint16_t)p->pm1b_cnt;
	x86_outw(a, clock_pm1_value(x86_inw(a), p->slp_typa));
	if (b)
		x86_outw(b, clock_pm1_value(x86_inw(b), p->slp_typb));
	uint64_t hz = clock_tsc_hz ? clock_tsc_hz : 1000000000u;
	uint64_t t0 = x86_rdtsc();
	while (x86_rdtsc() - t0 < hz / 1000u * S5_WAIT_MS)
		x86_pause();
	log_raw("ACPI S5 ignored by the machine\n", 31);
}

/* Set once by the first core to stop; its NMI then parks every other core. */
static atomic_bool clock_stopping;

bool x86_stopping(void)
{
	return atomic_load_explicit(&clock_stopping, memory_order_relaxed);
}

NORETURN void x86_stop(int code)
{
	__asm__ volatile("cli");
#ifndef URMQTT_PROD
	x86_outl(DEBUG_EXIT_PORT, (uint32_t)code);
	log_raw("(no isa-debug-exit device)\n", 27);
#endif
	/* Relaxed: the NMI handler only needs to see the flag, which the IPI (a serialising
	 * MSR or MMIO write after this store on x86) makes visible before it arrives. */
	if (!atomic_exchange_explicit(&clock_stopping, true, memory_order_relaxed) && x86_smp_aps_woken())
		x86_apic_nmi_others();
	if (code == X86_EXIT_BOOT_OK)
		x86_acpi_poweroff(); /* returns only when S5 is unknown or ignored: reset */
	log_rawf("stop code %d: resetting in %u s\n", code, STOP_WAIT_S);
	uint64_t hz = clock_tsc_hz ? clock_tsc_hz : 1000000000u;
	uint64_t t0 = x86_rdtsc();
	while (x86_rdtsc() - t0 < hz * STOP_WAIT_S)
		x86_pause();
	clock_reset();
}
