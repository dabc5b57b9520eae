/* SPDX-License-Identifier: MIT
 *
 * The image's side of kernel/node/port.h on aarch64: the calling core from TPIDR_EL1, the
 * generic timer's counter, the wall clock (the PL031 RTC read once at boot, then the
 * counter, disciplined by SNTP when configured), the wake-up SGI, the MSI messages
 * (gic_msi.c), the per-core device-interrupt counts, the AES report. The heap and the CSPRNG
 * are kernel/node/port_kernel.c's. Owns the wall clock's parameters: written by the boot core
 * before any other core starts, then only by core 0 (node_port_wall_reference), read by
 * every core through kernel/wallclock's sequence counter.
 */
#include <stdatomic.h>

#include "arch/aarch64/a64.h"
#include "kernel/log.h"
#include "kernel/node/port.h"
#include "kernel/time.h"
#include "kernel/wallclock.h"
#include "lib/err.h"
#include "urmqtt_config.h"

#define PL031_DR 0x000u /* data register: seconds since the epoch */
#define NS_PER_S 1000000000ull

/* The wall clock (kernel/wallclock.h): published by the boot core from the RTC before
 * the other cores start, then only by core 0 when SNTP gives it a reference. */
static struct wallclock wall_pub;
static struct wallclock_disc wall_disc;

void a64_wall_clock_init(uint64_t rtc_base)
{
	wallclock_disc_init(&wall_disc, 0, a64_now_ns());
	wallclock_publish(&wall_pub, &wall_disc.p);
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
	/* The read is not aligned to the second: the middle of the second it names. */
	wallclock_disc_init(&wall_disc, (uint64_t)s * NS_PER_S + NS_PER_S / 2, a64_now_ns());
	wallclock_publish(&wall_pub, &wall_disc.p);
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

static uint64_t wall_ns(void)
{
	struct wallclock_params p;
	wallclock_read(&wall_pub, &p);
	return wallclock_at(&p, a64_now_ns());
}

int64_t node_port_wall_s(void)
{
	return (int64_t)(wall_ns() / NS_PER_S); /* 0 unknown: every certificate looks "not yet valid", visibly */
}

int64_t node_port_wall_ms(void)
{
	return (int64_t)(wall_ns() / 1000000u);
}

void node_port_wall_reference(uint64_t ref_ns, uint64_t mono_ns, uint32_t period_s)
{
	const struct wallclock_disc_config cfg = {
		.step_ns = CONF_CLOCK_STEP_MS * 1000000u,
		.period_ns = (uint64_t)(period_s ? period_s : 1u) * NS_PER_S,
		.min_interval_ns = NS_PER_S,
		.max_rate_ppb = 250000000, /* 25 %: a counter that far off is broken, not slow */
	};
	struct wallclock_sample_result r;
	wallclock_disc_sample(&wall_disc, &cfg, ref_ns, mono_ns, &r);
	wallclock_publish(&wall_pub, &wall_disc.p);
	int64_t e = r.error_ns;
	uint64_t mag = e < 0 ? (uint64_t)0 - (uint64_t)e : (uint64_t)e;
	/* the step is the error's opposite: a clock behind (error < 0) moves forwards */
	if (r.action == WALLCLOCK_SET)
		LOG_INFO("clock", "wall clock set from the SNTP servers' time");
	else if (r.action == WALLCLOCK_STEP)
		LOG_WARN("clock", "wall clock stepped %s%lu.%03lu s to the SNTP servers' time", e < 0 ? "+" : "-",
			 (unsigned long)(mag / NS_PER_S), (unsigned long)(mag / 1000000u % 1000u));
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

/* mbedTLS's (library-internal) answer to whether its AES and GCM take the Armv8 AES and PMULL
 * instructions on this CPU (ADR-071): aesce.c asks tls/accel/cpu_aarch64.c once and caches
 * it. Declared here because aesce.h shows it only to code built with Advanced SIMD; a build
 * whose aesce.c has no accelerated code has no such function, so it does not link. */
int mbedtls_aesce_has_support_impl(void);

#define ISAR0_AES_SHIFT 4 /* ID_AA64ISAR0_EL1.AES: 0 none, 1 AES, 2 AES and PMULL */

const char *node_port_crypto_accel(void)
{
	if (mbedtls_aesce_has_support_impl())
		return "Armv8 AES used, PMULL used";
	switch ((A64_SYSREG_READ(id_aa64isar0_el1) >> ISAR0_AES_SHIFT) & 0xfu) {
	case 0:
		return "Armv8 AES absent, PMULL absent";
	case 1:
		return "Armv8 AES unused (PMULL absent)";
	default:
		return "Armv8 AES unused, PMULL unused (turned off)";
	}
}
