/* SPDX-License-Identifier: MIT
 *
 * Deliberate-fault scenarios of the aarch64 development image (tests/smoke/aarch64-boot.sh):
 * each proves one protection fails closed. The fault must be caught by trap.c, decoded and
 * reported; the scenario announces itself first (a64_trap_expect), so the report ends
 * "caught as expected" and the machine powers off. Coming back from a fault means the
 * protection did not fire: main.c then stops the boot with a FAIL line. Never linked into
 * a production image.
 */
#include "arch/aarch64/a64.h"
#include "kernel/log.h"
#include "lib/mem.h"

/* "ret" in writable, non-executable data. */
static volatile uint32_t scenario_data_code[4] = { 0xd65f03c0u };
static volatile bool scenario_stop;

static __attribute__((noinline)) unsigned scenario_recurse(unsigned depth)
{
	volatile uint8_t pad[256];
	pad[0] = (uint8_t)depth;
	if (scenario_stop)
		return 0;
	return scenario_recurse(depth + 1) + pad[0];
}

/* Writes n bytes into a 16-byte buffer: past it the canary dies. */
static __attribute__((noinline)) void scenario_smash(volatile size_t n)
{
	volatile uint8_t buf[16];
	for (size_t i = 0; i < n; i++)
		buf[i] = 0x41;
	(void)buf[0];
}

static __attribute__((noinline)) void scenario_target(void)
{
	LOG_ERR("scenario", "reached a function through a forged pointer");
}

/* Overwrites its own saved return address (in its frame record, [fp + 8]) with a valid but
 * unsigned code address: with pointer authentication, the return must fault. */
static __attribute__((noinline)) void scenario_forge_return(void)
{
	LOG_INFO("scenario", "pac-forged-return: overwriting my saved return address"); /* not a leaf:
									  * LR is signed and saved */
	volatile uint64_t *rec = __builtin_frame_address(0);
	rec[1] = (uint64_t)(uintptr_t)&scenario_target;
}

/* A function whose second instruction is no landing pad. */
static __attribute__((noinline)) uint64_t scenario_plain(uint64_t a)
{
	return a * 3u + 1u;
}

bool a64_scenario_fault(const char *name, const struct a64_mmu_features *feat)
{
	a64_trap_expect(name);
	if (strcmp(name, "write-text") == 0) {
		volatile uint32_t *p = (volatile uint32_t *)(uintptr_t)&a64_scenario_fault;
		*p = 0xd4200000u; /* brk #0 */
	} else if (strcmp(name, "write-rodata") == 0) {
		volatile char *p = (volatile char *)(uintptr_t)a64_rodata_start;
		*p = 1;
	} else if (strcmp(name, "exec-data") == 0) {
		void (*fn)(void) = (void (*)(void))(uintptr_t)scenario_data_code;
		fn();
	} else if (strcmp(name, "null-deref") == 0) {
		volatile uint32_t *volatile p = NULL;
		(void)*p;
	} else if (strcmp(name, "stack-overflow") == 0) {
		(void)scenario_recurse(0);
	} else if (strcmp(name, "stack-smash") == 0) {
		scenario_smash(40);
	} else if (strcmp(name, "write-pagetable") == 0) {
		volatile uint64_t *pt = (volatile uint64_t *)(uintptr_t)a64_pt_start;
		pt[0] = 0;
	} else if (strcmp(name, "pac-forged-return") == 0) {
		if (!feat->pac) {
			LOG_WARN("scenario", "pac-forged-return: the CPU has no pointer authentication");
			a64_trap_expect(NULL);
			return true;
		}
		scenario_forge_return();
	} else if (strcmp(name, "bti-bad-target") == 0) {
		if (!feat->bti) {
			LOG_WARN("scenario", "bti-bad-target: the CPU has no BTI");
			a64_trap_expect(NULL);
			return true;
		}
		uint64_t (*fn)(uint64_t) = (uint64_t(*)(uint64_t))((uintptr_t)&scenario_plain + 4u);
		(void)fn(1);
	} else {
		a64_trap_expect(NULL);
		return false;
	}
	a64_trap_expect(NULL);
	LOG_ERR("scenario", "%s: FAIL: the protection did not fire", name);
	return true;
}
