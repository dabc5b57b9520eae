/* SPDX-License-Identifier: MIT
 *
 * TSC clock and the machine stop path. The TSC frequency comes from CPUID 0x15, then
 * 0x16, then the hypervisor timing leaf, then a 10 ms measurement against PIT channel 2.
 * x86_stop() ends the machine: development/test builds write the code to QEMU's
 * isa-debug-exit port (0xf4; QEMU exits with code * 2 + 1); production builds (and test
 * builds without that device) park the other cores with an NMI, wait 60 s so the message
 * can be read, then reset. Never returns from x86_stop().
 */
#include <stdatomic.h>
#include "arch/x86_64/x86.h"
#include "kernel/log.h"

#define PIT_HZ 1193182u
#define PIT_CAL_MS 10u
#define DEBUG_EXIT_PORT 0xf4
#define STOP_WAIT_S 60u

static uint64_t clock_tsc_hz;
static const char *clock_source = "none";

static uint64_t clock_pit_measure(void)
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
	clock_tsc_hz = clock_pit_measure();
	clock_source = "PIT";
	if (clock_tsc_hz == 0) {
		clock_tsc_hz = 1000000000u;
		clock_source = "guess (PIT failed)";
	}
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
	if (!atomic_exchange_explicit(&clock_stopping, true, memory_order_relaxed))
		x86_apic_nmi_others();
	log_rawf("stop code %d: resetting in %u s\n", code, STOP_WAIT_S);
	uint64_t hz = clock_tsc_hz ? clock_tsc_hz : 1000000000u;
	uint64_t t0 = x86_rdtsc();
	while (x86_rdtsc() - t0 < hz * STOP_WAIT_S)
		x86_pause();
	clock_reset();
}
