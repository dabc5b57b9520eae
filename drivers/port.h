/* SPDX-License-Identifier: MIT
 *
 * What the drivers layer needs from the platform below it: one ops table. The kernel
 * (arch/) fills it with ECAM config access, uncached MMIO, its page allocator and the
 * CPU's barriers; unit tests and fuzzers fill it with an in-memory fake. Nothing in
 * drivers/ reaches hardware, memory maps or the CPU any other way, and nothing here may
 * include a kernel header.
 *
 * Calling context: every op may be called from the core that owns the device, outside
 * interrupt handlers, except the barriers and MMIO ops, which are also interrupt-safe.
 */
#ifndef DRIVERS_PORT_H
#define DRIVERS_PORT_H

#include "lib/compiler.h"

struct drv_port {
	void *ctx; /* linked: passed back to every op */

	/* PCI configuration space of (bus, dev, fn) in the ECAM window the port was built for.
	 * off is dword-aligned and < 4096. An absent function reads 0xffffffff. */
	uint32_t (*cfg_read32)(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off);
	void (*cfg_write32)(void *ctx, uint8_t bus, uint8_t dev, uint8_t fn, uint16_t off, uint32_t v);

	/* Map len bytes of device memory at phys, uncached and non-executable. Returns 0 and the
	 * virtual address in *va, or a negative -E_*. Mappings are never undone. */
	int (*map_bar)(void *ctx, uint64_t phys, uint64_t len, uintptr_t *va /* out */);

	/* Uncached device-register access at a virtual address returned by map_bar (always
	 * naturally aligned). Each op is one access of exactly that width; values are the
	 * little-endian registers as CPU integers. A write is ordered after every earlier store
	 * to DMA memory (the kernel's write op includes what its architecture needs, e.g. a
	 * store barrier on aarch64), so a queue notification never overtakes the ring update. */
	uint8_t (*mmio_read8)(void *ctx, uintptr_t va);
	uint16_t (*mmio_read16)(void *ctx, uintptr_t va);
	uint32_t (*mmio_read32)(void *ctx, uintptr_t va);
	uint64_t (*mmio_read64)(void *ctx, uintptr_t va);
	void (*mmio_write8)(void *ctx, uintptr_t va, uint8_t v);
	void (*mmio_write16)(void *ctx, uintptr_t va, uint16_t v);
	void (*mmio_write32)(void *ctx, uintptr_t va, uint32_t v);
	void (*mmio_write64)(void *ctx, uintptr_t va, uint64_t v);

	/* DMA memory: len bytes (rounded up to whole pages), physically contiguous, zeroed,
	 * cache-coherent with devices. Returns 0 with *va and *pa, or -E_NOMEM. Init time only. */
	int (*dma_alloc)(void *ctx, size_t len, void **va /* out */, uint64_t *pa /* out */);
	/* Physical address of a byte of DMA memory or of the kernel's direct map. */
	uint64_t (*dma_phys)(void *ctx, const void *va);

	/* Barriers on memory shared with a device (virtio rings in DMA memory):
	 *  mb:  full barrier; loads and stores before it are globally visible before any load
	 *       or store after it (store->load order, needed for EVENT_IDX checks).
	 *  rmb: loads before it complete before any load or store after it (read the used
	 *       index, then the entries it covers, then reuse their descriptors).
	 *  wmb: stores before it are visible before stores after it (fill a descriptor, then
	 *       publish the available index). */
	void (*mb)(void *ctx);
	void (*rmb)(void *ctx);
	void (*wmb)(void *ctx);

	/* One line of diagnostic text (no trailing newline). Never contains addresses of
	 * kernel memory; may be NULL (silent). */
	void (*log)(void *ctx, const char *line);
};

#endif
