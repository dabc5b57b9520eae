/* SPDX-License-Identifier: MIT
 *
 * The part of kernel/node/port.h every image implements the same way: randomness from the
 * kernel CSPRNG (kernel/csprng.h), memory from the kernel heap and its page frames
 * (kernel/heap.h). Linked into the images (x86_64, aarch64), never the hosted broker
 * (hosted/node_port.c). Stateless.
 */
#include "kernel/csprng.h"
#include "kernel/heap.h"
#include "kernel/node/port.h"

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
