/* SPDX-License-Identifier: MIT
 *
 * The image's side of kernel/node/port.h on aarch64: the calling core from TPIDR_EL1, the
 * generic timer's counter, the wall clock (the PL031 RTC read once at boot, then the
 * counter), the wake-up SGI, the MSI messages (gic_msi.c), the per-core
 * device-interrupt counts. The heap and the CSPRNG are kernel/node/port_kernel.c's. Owns the wall
 * clock's base: written once on the boot core before any other core starts (their start
 * publishes it), read-only after.
 */
#include <stdatomic.h>

#include "arch/aarch64/a64.h"
#include "kernel/log.h"
#include "kernel/node/port.h"
#include "kernel/time.h"
#include "lib/err.h"

#define PL031_DR 0x000u /* data register: seconds since the epoch */

static uint64_t wall_base_s, wall_base_ns;

void a64_wall_clock_init(uint64_t rtc_base)
{
	if (!rtc_base) {
		LOG_WARN("boot", "wall clock UNAVAILABLE: no PL031 RTC; certificates will look not yet valid");
		return;
	}
	uint32_t s = *(volatile uint32_t *)(uintptr_t)(rtc_base + PL031_DR);
	__asm__ volatile("dmb oshld" : : : "memory");
	struct time_civil c;
	time_unix_to_civil(s, &c);
	if (s < TIME_PLAUSIBLE_MIN_UNIX) {
		LOG_ERR("boot", "wall clock IMPLAUSIBLE: RTC says %04u-%02u-%02u, before 2026-01-01; "
				"certificate validity cannot be checked",
			(unsigned)c.year, (unsigned)c.month, (unsigned)c.day);
		return;
	}
	wall_base_s = s;
	wall_base_ns = a64_now_ns();
	LOG_INFO("boot", "wall clock: %04u-%02u-%02u %02u:%02u:%02u UTC (PL031 RTC)", (unsigned)c.year,
		 (unsigned)c.month, (unsigned)c.day, (unsigned)c.hour, (unsigned)c.min, (unsigned)c.sec);
}

uint32_t node_port_core_self(void)
{
	return a64_core_index();
}

uint64_t node_port_now_ns(void)
{
	return a64_now_ns();
}

uint64_t node_port_now_ms(void)
{
	return a64_now_ns() / 1000000u;
}

int64_t node_port_wall_s(void)
{
	if (!wall_base_s)
		return 0; /* 1970: every certificate looks "not yet valid", visibly */
	return (int64_t)(wall_base_s + (a64_now_ns() - wall_base_ns) / 1000000000u);
}

int64_t node_port_wall_ms(void)
{
	if (!wall_base_s)
		return 0;
	return (int64_t)(wall_base_s * 1000u + (a64_now_ns() - wall_base_ns) / 1000000u);
}

bool node_port_wake(uint32_t dst)
{
	/* seq_cst: orders the message's commit (a release store of the ring's head) before
	 * the load of the flag below; pairs with the fence in main_idle (kernel/node/node.c
	 * describes the protocol). */
	atomic_thread_fence(memory_order_seq_cst);
	if (dst >= PLAT_MAX_CPUS || !atomic_load_explicit(&a64_cores[dst].sleeping, memory_order_relaxed))
		return false;
	a64_gic_send_wake(a64_cores[dst].aff);
	return true;
}

uint64_t node_port_irqs(uint32_t core)
{
	/* Written only by that core's own interrupt handler and read by that core: relaxed
	 * is enough. */
	return atomic_load_explicit(&a64_cores[core].n_dev_irqs, memory_order_relaxed);
}

uint32_t node_port_msi_vectors(void)
{
	return a64_msi_vectors();
}

int node_port_msi(uint32_t core, uint32_t vec, uint16_t requester, uint64_t *addr, uint32_t *data)
{
	return a64_msi_message(core, vec, requester, addr, data);
}

const char *node_port_crypto_accel(void)
{
	return "AES and PMULL instructions unused (portable C; the Arm crypto extensions are planned)";
}
