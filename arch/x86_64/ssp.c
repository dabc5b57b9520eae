/* SPDX-License-Identifier: MIT
 *
 * Stack protector support for the image (-fstack-protector-strong with
 * -mstack-protector-guard=global): the canary and the failure hook. The names are fixed
 * by the compiler ABI, hence not module-prefixed. The canary is randomised once, first
 * thing at boot, by a function that is itself unprotected (no frame holds the old value
 * then), from RDRAND when offered, else from the TSC (weak, reported by the banner).
 */
#include "arch/x86_64/x86.h"
#include "kernel/panic.h"

uintptr_t __stack_chk_guard = 0x595e9fbd94fda766ull;
NORETURN void __stack_chk_fail(void);
static bool ssp_from_rdrand;

NORETURN void __stack_chk_fail(void)
{
	kpanic(X86_EXIT_STACK_CHK, "stack smashing detected");
}

__attribute__((no_stack_protector)) void x86_ssp_init(void)
{
	uint32_t r[4];
	x86_cpuid(1, 0, r);
	uint64_t v = 0;
	if ((r[2] >> 30) & 1) {
		for (int i = 0; i < 10 && !ssp_from_rdrand; i++) {
			uint8_t ok;
			__asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok));
			ssp_from_rdrand = ok;
		}
	}
	if (!ssp_from_rdrand)
		v = x86_rdtsc() * 0x9e3779b97f4a7c15ull;
	__stack_chk_guard ^= v & ~0xffull; /* low byte 0 stops string overreads */
	__stack_chk_guard &= ~0xffull;
}

bool x86_ssp_strong(void)
{
	return ssp_from_rdrand;
}
