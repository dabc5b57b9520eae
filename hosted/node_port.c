/* SPDX-License-Identifier: MIT
 *
 * The hosted platform's side of kernel/node/port.h: one core (the process), CLOCK_MONOTONIC
 * and the system's wall clock (CLOCK_REALTIME), getrandom, and malloc behind the heap (its
 * totals counted here: requested bytes, and the chunks malloc holds for them). Host code:
 * the hosted broker is single-threaded; the clocks and node_port_random may be called from
 * any thread (tools and benchmarks share them), the heap's counters from one only.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "kernel/node/port.h"
#include "lib/err.h"

static uint64_t port_requested; /* bytes live through node_port_alloc */
static uint64_t port_blocks;    /* what malloc holds for them: usable size + its header */

/* glibc's chunk header on 64-bit: one size word beyond the usable bytes. */
#define PORT_MALLOC_HEADER 8u

uint32_t node_port_core_self(void)
{
	return 0;
}

uint64_t node_port_now_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		abort();
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t node_port_now_ms(void)
{
	return node_port_now_ns() / 1000000u;
}

int64_t node_port_wall_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0; /* unknown, as port.h allows */
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t node_port_wall_s(void)
{
	return (int64_t)time(NULL);
}

int node_port_random(void *buf, size_t len)
{
	uint8_t *out = buf;
	while (len) {
		ssize_t n = getrandom(out, len, 0);
		if (n <= 0)
			return -E_IO;
		out += n;
		len -= (size_t)n;
	}
	return 0;
}

void *node_port_alloc(size_t len, enum heap_tag tag)
{
	(void)tag;
	void *p = calloc(1, len);
	if (p) {
		port_requested += len;
		port_blocks += malloc_usable_size(p) + PORT_MALLOC_HEADER;
	}
	return p;
}

void node_port_free(void *p, size_t len)
{
	if (!p)
		return;
	port_requested -= len;
	port_blocks -= malloc_usable_size(p) + PORT_MALLOC_HEADER;
	free(p);
}

size_t node_port_room(void)
{
	return SIZE_MAX; /* the broker's own limit (CONF_CORE_HEAP_LIMIT_MB) bounds it */
}

void node_port_heap_totals(uint64_t *requested, uint64_t *blocks)
{
	*requested = port_requested;
	*blocks = port_blocks;
}

void *node_port_region(size_t len, size_t *got)
{
	size_t n = (len + 4095u) & ~(size_t)4095u;
	void *p = aligned_alloc(4096, n);
	if (!p)
		return NULL;
	memset(p, 0, n);
	*got = n;
	return p;
}

void node_port_region_free(void *p, size_t got)
{
	(void)got;
	free(p);
}
