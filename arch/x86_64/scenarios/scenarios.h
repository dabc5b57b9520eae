/* SPDX-License-Identifier: MIT
 *
 * Test scenarios of the x86_64 image (development and test images only: production images
 * neither link arch/x86_64/scenarios/ nor read test= from the command line). The boot path
 * asks the registry once for the scenario test=NAME names and then calls its hooks at
 * fixed points; a scenario is data, not a branch of the boot path. Hooks run on the boot
 * core; poll runs in every core's loop.
 */
#ifndef ARCH_X86_64_SCENARIOS_H
#define ARCH_X86_64_SCENARIOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kloop;

/* What the boot path knows when it calls a hook. */
struct x86_scenario_boot {
	const char *name;          /* as on the command line */
	const char *cmdline;       /* the whole command line (a scenario's own knobs) */
	size_t cmdline_len;
	uint32_t n_slots;          /* cores prepared (heap caches, CSPRNG instances) */
	uint32_t n_cores;          /* cores started (boot core included); from `started` on */
	struct kloop *boot_loop;   /* the boot core's loop; from `started` on */
};

struct x86_scenario {
	const char *name;
	bool no_entropy;   /* boot without RDSEED/RDRAND (the CSPRNG must refuse) */
	bool all_cores;    /* stop the machine unless every prepared core started */
	/* Before the boot core's APIC timer is set up. */
	void (*before_timer)(const struct x86_scenario_boot *b);
	/* Before the page tables are sealed and audited. */
	void (*before_seal)(const struct x86_scenario_boot *b);
	/* Heap and CSPRNG ready, devices not yet probed. */
	void (*setup)(const struct x86_scenario_boot *b);
	/* Devices, the TLS self-test and the node built; the other cores not started. */
	void (*after_devices)(const struct x86_scenario_boot *b);
	/* Every started core's loop runs it (name for the watchdog's reports). */
	int (*poll)(void *ctx);
	const char *poll_name;
	/* The cores started; the boot core before it runs its loop. */
	void (*started)(const struct x86_scenario_boot *b);
};

/* The scenario the command line names (test=NAME): NULL when it names none. A name no
 * scenario has gets one whose `started` stops the machine, saying so. */
const struct x86_scenario *x86_scenario_lookup(const char *cmdline, size_t len);
/* The name x86_scenario_lookup read ("" before it, or when there was none). */
const char *x86_scenario_name(void);

/* ---- the scenarios' entry points (registry.c lists them) ---- */
/* cores.c: the multi-core heap, one-shot timer and core-mesh scenarios: set up on the
 * boot core before the APs start, then poll on every core. */
void x86_scenario_heap_setup(uint32_t n_cores);
int x86_scenario_heap_poll(void *ctx);
void x86_scenario_oneshot_setup(uint32_t n_cores);
int x86_scenario_oneshot_poll(void *ctx);
void x86_scenario_xcore_setup(uint32_t n_cores);
int x86_scenario_xcore_poll(void *ctx);
/* faults.c: run the deliberate fault `name`; false (returning) if the name is unknown;
 * otherwise the machine stops (with the fault's exit code, or X86_EXIT_PANIC when the
 * protection did not fire). */
bool x86_scenario_fault(const char *name);
/* tls.c: test=tls, mbedTLS from every core at once. */
void x86_tls_concurrent_setup(uint32_t n_cores);
int x86_tls_concurrent_poll(void *ctx);

#endif
