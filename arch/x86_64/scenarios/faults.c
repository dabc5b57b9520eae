/* SPDX-License-Identifier: MIT
 *
 * Deliberate-fault scenarios for the smoke tests (development images only). Each proves
 * one protection fails closed: the fault must be caught, decoded and reported, and the
 * machine must stop with the exit code of that fault class (see enum x86_exit_code).
 * Reaching the end of a fault means a protection did not fire: the machine stops with
 * X86_EXIT_PANIC.
 */
#include "arch/x86_64/scenarios/scenarios.h"
#include "arch/x86_64/x86.h"
#include "kernel/heap.h"
#include "kernel/panic.h"
#include "lib/mem.h"

/* A "ret" instruction in writable, non-executable data. */
static volatile uint8_t scenario_data_code[16] = { 0xc3 };
/* Read by the recursion so it is neither infinite to the compiler nor a tail call. */
static volatile bool scenario_stop;

static __attribute__((noinline)) unsigned scenario_recurse(unsigned depth)
{
	volatile uint8_t pad[256];
	pad[0] = (uint8_t)depth;
	if (scenario_stop)
		return 0;
	return scenario_recurse(depth + 1) + pad[0];
}

/* Writes n bytes into a 16-byte buffer: past 16 the canary dies. */
static __attribute__((noinline)) void scenario_smash(volatile size_t n)
{
	volatile uint8_t buf[16];
	for (size_t i = 0; i < n; i++)
		buf[i] = 0x41;
	(void)buf[0];
}

bool x86_scenario_fault(const char *name)
{
	if (strcmp(name, "stack-smash") == 0) {
		scenario_smash(40);
	} else if (strcmp(name, "write-text") == 0) {
		volatile uint8_t *p = (volatile uint8_t *)(uintptr_t)&x86_scenario_fault;
		*p = 0xcc;
	} else if (strcmp(name, "exec-data") == 0) {
		void (*fn)(void) = (void (*)(void))(uintptr_t)scenario_data_code;
		fn();
	} else if (strcmp(name, "stack-overflow") == 0) {
		(void)scenario_recurse(0);
	} else if (strcmp(name, "null-deref") == 0) {
		volatile uint32_t *volatile p = NULL;
		(void)*p;
	} else if (strcmp(name, "write-pagetable") == 0) {
		volatile uint64_t *pml4 = x86_phys_to_virt(x86_read_cr3() & PTE_ADDR);
		pml4[0] = pml4[511];
	} else if (strcmp(name, "heap-double-free") == 0) {
		void *p;
		if (kheap_alloc(64, HEAP_TAG_MQTT, &p) != 0)
			PANIC("heap-double-free: no memory");
		kheap_free(p);
		kheap_free(p); /* the bug hook must stop the machine here */
	} else if (strcmp(name, "exec-heap") == 0) {
		void *p;
		if (kheap_alloc(64, HEAP_TAG_KERNEL, &p) != 0)
			PANIC("exec-heap: no memory");
		*(volatile uint8_t *)p = 0xc3; /* ret */
		void (*fn)(void) = (void (*)(void))(uintptr_t)p;
		fn();
	} else if (strcmp(name, "write-rodata") == 0) {
		static const uint32_t ro = 1;
		*(volatile uint32_t *)(uintptr_t)&ro = 2;
	} else {
		return false;
	}
	/* Reaching here means a protection did not fire. */
	x86_stop(X86_EXIT_PANIC);
}
