/* SPDX-License-Identifier: MIT
 *
 * The image's side of kernel/node/port.h on x86_64: the calling core from its per-core
 * block, the TSC clock, the wall clock (the CMOS RTC read once at boot, then the TSC), the
 * kernel CSPRNG, the kernel heap and its page frames, the wake-up IPI and the per-core
 * device-interrupt counts (the NIC's and disks' vectors are devices.c's). Owns the wall clock's base: written
 * once on the boot core before any other core starts (the start publishes it), read-only
 * after.
 */
#include <stdatomic.h>

#include "arch/x86_64/x86.h"
#include "kernel/csprng.h"
#include "kernel/log.h"
#include "kernel/node/port.h"
#include "kernel/time.h"
#include "lib/err.h"

static uint64_t wall_base_s, wall_base_ns;

void x86_wall_clock_init(void)
{
	struct time_civil civ;
	uint64_t wall = 0;
	if (x86_rtc_read(&wall, &civ) == 0) {
		wall_base_s = wall;
		wall_base_ns = x86_now_ns();
	} else {
		LOG_WARN("boot", "broker: no usable RTC; certificates will look not yet valid");
	}
}

int64_t x86_wall_ms(void)
{
	if (!wall_base_s)
		return 0;
	return (int64_t)(wall_base_s * 1000u + (x86_now_ns() - wall_base_ns) / 1000000u);
}

uint32_t node_port_core_self(void)
{
	return x86_core_index();
}

uint64_t node_port_now_ms(void)
{
	return x86_now_ns() / 1000000u;
}

int64_t node_port_wall_s(void)
{
	if (!wall_base_s)
		return 0; /* 1970: every certificate looks "not yet valid", visibly */
	return (int64_t)(wall_base_s + (x86_now_ns() - wall_base_ns) / 1000000000u);
}

int node_port_random(void *buf, size_t len)
{
	return csprng_kernel_bytes(buf, len);
}

void *node_port_alloc(size_t len, enum heap_tag tag)
{
	void *p = NULL;
	return kheap_alloc(len, tag, &p) == 0 ? p : NULL;
}

void node_port_free(void *p, size_t len)
{
	(void)len;
	kheap_free(p);
}

size_t node_port_room(void)
{
	struct pages_stats ps;
	kheap_pages_stats(&ps);
	uint64_t bytes = ps.n_free * (uint64_t)HEAP_PAGE_SIZE;
	return bytes < SIZE_MAX ? (size_t)bytes : SIZE_MAX;
}

void node_port_heap_totals(uint64_t *requested, uint64_t *blocks)
{
	struct heap_snapshot s;
	kheap_snapshot(&s);
	*requested = s.requested_bytes;
	*blocks = s.block_bytes;
}

void *node_port_region(size_t len, size_t *got)
{
	uint32_t pages = (uint32_t)((len + HEAP_PAGE_SIZE - 1) / HEAP_PAGE_SIZE);
	void *va;
	uint64_t pa;
	if (kheap_pages_alloc(pages, 1, &va, &pa) != 0)
		return NULL;
	*got = (size_t)pages * HEAP_PAGE_SIZE;
	return va;
}

void node_port_region_free(void *p, size_t got)
{
	kheap_pages_free(p, (uint32_t)(got / HEAP_PAGE_SIZE));
}

uint64_t node_port_now_ns(void)
{
	return x86_now_ns();
}

int64_t node_port_wall_ms(void)
{
	return x86_wall_ms();
}

bool node_port_wake(uint32_t dst)
{
	/* seq_cst: orders the message's commit (a release store of the ring's head) before
	 * the load of the flag below; pairs with the fence in main_idle (kernel/node/node.c
	 * describes the protocol). */
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&x86_cores[dst].sleeping, memory_order_relaxed))
		return false;
	x86_apic_send_wake(x86_cores[dst].apic_id);
	return true;
}

uint64_t node_port_irqs(uint32_t core)
{
	/* Written only by that core's own interrupt handler and read by that core: relaxed
	 * is enough. */
	return atomic_load_explicit(&x86_cores[core].n_dev_irqs, memory_order_relaxed);
}
