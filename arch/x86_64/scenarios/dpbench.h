/* SPDX-License-Identifier: MIT
 *
 * The in-guest data-plane benchmark scenario (test=dpbench; benchmark image only, built
 * with URMQTT_DP_BENCH=1): see arch/x86_64/scenarios/dpbench.c.
 */
#ifndef ARCH_X86_64_SCENARIOS_DPBENCH_H
#define ARCH_X86_64_SCENARIOS_DPBENCH_H

#include <stdint.h>

/* Boot core, before the other cores start: the shared handshake env and the run time. */
void x86_dpbench_setup(uint32_t n_cores, uint32_t seconds);
/* Every core's loop handler: its own client and dp; core 0 reports when all are done. */
int x86_dpbench_poll(void *ctx);

#endif
