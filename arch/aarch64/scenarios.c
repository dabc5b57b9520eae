/* SPDX-License-Identifier: MIT
 *
 * Deliberate-fault scenarios of the aarch64 development image (tests/smoke/aarch64-boot.sh):
 * each proves one protection fails closed. The fault must be caught by trap.c, decoded and
 * reported; the scenario announces itself first (a64_trap_expect), so the report ends
 * "caught as expected" and the machine powers off. Coming back from a fault means the
 * protection did not fire: main.c then stops the boot with a FAIL line. Also the table of
 * scenarios polled in every core's loop (test=dpbench in a benchmark image: the portable
 * tools/dpbench/guest.c), chosen on the boot core before any core builds its loop and
 * read-only after. Never linked into a production image.
 */
#include "arch/aarch64/a64.h"
#include "arch/aarch64/kaslr.h"
#include "kernel/cmdline.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/panic.h"
#include "lib/mem.h"
#ifdef URMQTT_DP_BENCH
#include "tools/dpbench/guest.h"
#endif

/* ---- scenarios polled in every core's loop ---- */
struct scenario_polled {
	const char *name; /* test=NAME; NULL ends the table */
	void (*setup)(const char *cmdline, size_t len, uint32_t n_slots);
	int (*poll)(void *ctx);
};

#ifdef URMQTT_DP_BENCH
static void scenario_dpbench_stop(bool ok)
{
	if (!ok)
		kpanic(A64_EXIT_BOOT, "dpbench: every cycle failed");
	a64_psci_off();
}
static const struct dpb_guest_ops scenario_dpbench_ops = { .stop = scenario_dpbench_stop,
							   .fail_code = A64_EXIT_BOOT };
static void scenario_dpbench_setup(const char *cmdline, size_t len, uint32_t n_slots)
{
	dpb_guest_setup(cmdline, len, n_slots, &scenario_dpbench_ops);
}
#endif

static const struct scenario_polled scenario_polled_table[] = {
#ifdef URMQTT_DP_BENCH
	{ "dpbench", scenario_dpbench_setup, dpb_guest_poll },
#endif
	{ NULL, NULL, NULL },
};
static const struct scenario_polled *scenario_active;
static uint32_t scenario_n_slots;

void a64_scenario_setup(const char *cmdline, size_t len, uint32_t n_slots)
{
	char test[32];
	if (cmdline_get(cmdline, len, "test", test, sizeof test) != 0)
		return;
	for (const struct scenario_polled *p = scenario_polled_table; p->name; p++)
		if (strcmp(p->name, test) == 0) {
			p->setup(cmdline, len, n_slots);
			scenario_n_slots = n_slots;
			scenario_active = p;
			return;
		}
}

void a64_scenario_loop_add(struct kloop *loop)
{
	if (scenario_active && kloop_add(loop, scenario_active->name, scenario_active->poll, NULL) != 0)
		PANIC("%s scenario: loop full", scenario_active->name);
}

bool a64_scenario_started(uint32_t n_started)
{
	if (!scenario_active)
		return false;
	if (n_started != scenario_n_slots)
		PANIC("%s scenario: only %u of %u cores started", scenario_active->name, (unsigned)n_started,
		      (unsigned)scenario_n_slots);
	return true;
}

/* ---- deliberate faults ---- */

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

/* MTE: a freed block read through its old pointer, or one byte written past a block (the
 * heap tags blocks only when the CPU has MTE: the caller checks). */
static __attribute__((noinline)) void scenario_mte(bool use_after_free)
{
	void *p;
	if (kheap_alloc(use_after_free ? 64 : 32, HEAP_TAG_MQTT, &p) != 0) {
		LOG_ERR("scenario", "mte: no heap block");
		return;
	}
	volatile uint8_t *b = p;
	b[0] = 1;
	if (use_after_free) {
		kheap_free(p);
		LOG_INFO("scenario", "mte-use-after-free: reading a freed 64-byte block");
		(void)b[0];
	} else {
		LOG_INFO("scenario", "mte-overflow: writing one byte past a 32-byte block");
		b[32] = 1;
	}
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
	} else if (strcmp(name, "write-relocs") == 0) {
		volatile char *p = (volatile char *)(uintptr_t)a64_relocs_start;
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
	} else if (strcmp(name, "mte-use-after-free") == 0 || strcmp(name, "mte-overflow") == 0) {
		if (!feat->mte) {
			LOG_WARN("scenario", "%s: the CPU has no MTE", name);
			a64_trap_expect(NULL);
			return true;
		}
		scenario_mte(name[4] == 'u');
	} else {
		a64_trap_expect(NULL);
		return false;
	}
	a64_trap_expect(NULL);
	LOG_ERR("scenario", "%s: FAIL: the protection did not fire", name);
	return true;
}
