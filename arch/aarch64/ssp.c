/* SPDX-License-Identifier: MIT
 *
 * Stack protector support for the aarch64 image (-fstack-protector-strong, the global
 * guard): the canary and the failure hook, whose names the compiler ABI fixes. The canary
 * is drawn once, first thing in a64_main (itself unprotected), from RNDR when the CPU has
 * it, else from the counter (weak; the banner says which). Its low byte is zero so a
 * string overread stops at it.
 */
#include "arch/aarch64/a64.h"
#include "kernel/panic.h"

uintptr_t __stack_chk_guard = 0x595e9fbd94fda766ull;
NORETURN void __stack_chk_fail(void);
static bool ssp_from_rndr;

NORETURN void __stack_chk_fail(void)
{
	kpanic(A64_EXIT_STACK_CHK, "stack smashing detected");
}

/* RNDR (FEAT_RNG): a random number, or false when the CPU has none or it failed. */
__attribute__((no_stack_protector)) bool a64_rndr(uint64_t *v)
{
	if (((A64_SYSREG_READ(id_aa64isar0_el1) >> 60) & 0xfu) == 0)
		return false;
	for (int i = 0; i < 10; i++) {
		uint64_t r, nzcv;
		/* mrs x, RNDR (s3_3_c2_c4_0); NZCV.Z set on failure */
		__asm__ volatile("mrs %0, s3_3_c2_c4_0\n\tmrs %1, nzcv" : "=r"(r), "=r"(nzcv));
		if (!(nzcv & (1u << 30))) {
			*v = r;
			return true;
		}
	}
	return false;
}

__attribute__((no_stack_protector)) void a64_ssp_init(void)
{
	uint64_t v;
	ssp_from_rndr = a64_rndr(&v);
	if (!ssp_from_rndr)
		v = A64_SYSREG_READ(cntvct_el0) * 0x9e3779b97f4a7c15ull;
	__stack_chk_guard ^= v;
	__stack_chk_guard &= ~(uintptr_t)0xff;
}

bool a64_ssp_strong(void)
{
	return ssp_from_rndr;
}
