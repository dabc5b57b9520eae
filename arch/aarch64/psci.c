/* SPDX-License-Identifier: MIT
 *
 * PSCI (Arm DEN 0022) calls through the conduit the device tree names: HVC when the
 * kernel runs under a hypervisor (QEMU virt's default), SMC when firmware at EL3 provides
 * it. Used for the version, SYSTEM_OFF (the end of every test boot and of a panic) and,
 * later, CPU_ON for the secondary cores.
 */
#include "arch/aarch64/a64.h"

#define PSCI_VERSION 0x84000000u
#define PSCI_SYSTEM_OFF 0x84000008u
#define PSCI_CPU_ON 0xc4000003u

static bool psci_smc;

void a64_psci_init(bool smc)
{
	psci_smc = smc;
}

static int64_t psci_call(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3)
{
	register uint64_t x0 __asm__("x0") = fn;
	register uint64_t x1 __asm__("x1") = a1;
	register uint64_t x2 __asm__("x2") = a2;
	register uint64_t x3 __asm__("x3") = a3;
	if (psci_smc)
		__asm__ volatile("smc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) : : "memory");
	else
		__asm__ volatile("hvc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) : : "memory");
	return (int64_t)x0;
}

int64_t a64_psci_version(void)
{
	return psci_call(PSCI_VERSION, 0, 0, 0);
}

NORETURN void a64_psci_off(void)
{
	(void)psci_call(PSCI_SYSTEM_OFF, 0, 0, 0);
	for (;;)
		__asm__ volatile("wfi");
}

int64_t a64_psci_cpu_on(uint64_t mpidr, uint64_t entry, uint64_t ctx)
{
	return psci_call(PSCI_CPU_ON, mpidr, entry, ctx);
}
