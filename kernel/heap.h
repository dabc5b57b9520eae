/* SPDX-License-Identifier: MIT
 *
 * The kernel's one heap, as every layer above the kernel sees it: kheap_alloc/kheap_free
 * with an accounting tag, counters through kheap_snapshot(), and the page-frame
 * allocator's counters. It wires kernel/mm (page frames over the boot memory map, the
 * size-class heap over the direct map of RAM) once at boot and hides the architecture:
 * callers never pass a core index (the platform's core_index hook supplies it) and never
 * see a physical address. Portable; owns the struct pages and struct heap of the kernel.
 * Never allocates outside the frames the boot memory map calls usable, never hands out
 * a reserved range, and never returns from a detected heap bug in the kernel (the bug
 * hook panics there).
 *
 * Design note:
 *  1. kheap_init() runs once on the boot core before any other core starts; after it
 *     the configuration and the allocator structs are read-only except through
 *     kernel/mm's own synchronisation (so no lock here).
 *  2. The page allocator's bitmaps live in the first usable run that clears every
 *     reserved range, and that run is added to the reserved ranges before pages_init();
 *     the heap's bookkeeping is one contiguous page run taken from the page allocator.
 *  3. Every heap page lies in the window [virt_offset + lowest usable, virt_offset +
 *     highest usable end): the direct map the caller promises is mapped RW.
 *  States: UNINIT --kheap_init ok--> READY (for good). A failed init leaves UNINIT and
 *  every kheap_alloc returns -E_NOMEM.
 */
#ifndef KERNEL_HEAP_H
#define KERNEL_HEAP_H

#include "kernel/mm/heap.h"
#include "kernel/mm/pages.h"
#include "lib/compiler.h"
#include "plat/plat.h"

#define KHEAP_MAX_RANGES 32 /* usable ranges and reserved ranges, each */
#define KHEAP_TAG_GRANULE 16u /* every block starts and ends on one (heap classes are 16 B multiples) */

/* Memory tagging (the platform's, e.g. Arm MTE; ADR in docs/DECISIONS.md): the heap hands
 * out pointers carrying a tag that must match the tag of the memory they reach, so a stale
 * pointer (use after free) or one run past its block (overflow) faults in the hardware.
 * The hooks are the only code that knows how tags are stored; kheap calls them with plain
 * (untagged) addresses, every range a whole number of KHEAP_TAG_GRANULE granules. On the
 * calling core, never from interrupts. A NULL config field: no tagging, pointers are plain
 * addresses (host, x86_64). */
struct kheap_tag_ops {
	/* A new block [p, p + len) of which the caller asked for `used` bytes (rounded up to
	 * a granule, <= len): give [p, p + used) a fresh tag, different from the tag the
	 * block had and from its neighbours' where practical, and [p + used, p + len) a tag
	 * no pointer of the block carries. Returns p carrying the fresh tag. */
	void *(*tag_alloc)(void *p, size_t used, size_t len);
	/* The block [p, p + len) is being freed: retag it so no pointer handed out for it
	 * still matches. */
	void (*tag_free)(void *p, size_t len);
	/* Whole pages just taken from the page allocator for the heap: reset their tags. */
	void (*tag_clear)(void *p, size_t len);
	/* p without its tag: the plain address. */
	void *(*untag)(const void *p);
	/* Whether tagged p's tag is the tag of the memory at its address (false: p is stale,
	 * forged or untagged). Only for addresses inside blocks or slabs the heap holds. */
	bool (*matches)(const void *p);
};

struct kheap_config {
	const struct plat_mem_range *usable;   /* borrowed: usable RAM (boot memory map) */
	uint32_t n_usable;
	const struct plat_mem_range *reserved; /* borrowed: never handed out (image, tables, ...) */
	uint32_t n_reserved;
	uint64_t virt_offset;   /* RAM at phys p is read and written at p + virt_offset */
	uint32_t n_cores;       /* 1..HEAP_MAX_CORES: cores that may ever call in */
	uint32_t (*core_index)(void); /* linked: the calling core's index, < n_cores */
	uint32_t max_slabs;     /* heap descriptors (slabs + whole-page blocks alive at once) */
	uint64_t limit_pages;   /* pages the heap may hold; 0 = all free frames */
	uint64_t max_alloc_bytes; /* largest single request; 0 = 1 MiB */
	/* linked: a detected bug (double free, foreign pointer, corrupted block, bad frame
	 * free). addr is a virtual address (heap) or physical (page frames, phys true). The
	 * kernel's hook panics; tests may return (the call then fails quietly). */
	void (*bug)(const char *what, uint64_t addr, bool phys);
	const struct kheap_tag_ops *tags; /* linked: NULL, or memory tagging (see above) */
};

/* Build the page allocator and the heap (see the design note). cfg borrowed (copied;
 * the ranges are not kept). 0, -E_INVAL (bad config, more than KHEAP_MAX_RANGES
 * ranges, no usable frame) or -E_NOMEM (no room for the bookkeeping). Boot core. */
int kheap_init(const struct kheap_config *cfg) MUST_CHECK;

/* True once kheap_init() succeeded. */
bool kheap_ready(void);

/* size bytes for tag on the calling core: 16-byte aligned and zero-filled; with memory
 * tagging the pointer carries its block's tag (compare it only with pointers derived from
 * it; kheap_where and DMA take the plain address). Returns 0 and
 * *out (returned owned: kheap_free on any core), -E_INVAL (size 0, bad tag), -E_RANGE
 * (above max_alloc_bytes) or -E_NOMEM (counted). Any core, not from interrupts. */
int kheap_alloc(size_t size, enum heap_tag tag, void **out /* out */) MUST_CHECK;

/* Free p (taken; NULL is a no-op) on the calling core; the memory is wiped (and retagged
 * with tagging). A double free, a stale pointer (tagging: its tag no longer the block's)
 * or a pointer the heap never returned goes to the bug hook. */
void kheap_free(void *p);

/* What the heap knows about the plain address a (heap_where; fault reports). Any core. */
void kheap_where(uint64_t a, struct heap_where *out /* out */);

/* Loop handler for every core: take back blocks other cores freed for this core.
 * ctx unused; returns 0 (never counts as work, so the core still idles). */
int kheap_poll(void *ctx);

/* kheap_poll, then return this core's cached empty slabs to the page allocator. */
void kheap_trim(void);

/* Whole pages for device DMA and large boot-time tables: n_pages contiguous frames whose
 * first frame number is a multiple of align_pages (power of two; 0 means 1), zeroed.
 * Returns 0 with *va (the direct-map address, returned owned: kheap_pages_free) and *pa
 * (physical), -E_INVAL (n_pages 0, bad alignment) or -E_NOMEM (counted by the page
 * allocator). Not charged to the heap's limit_pages. Any core, not from interrupts. */
int kheap_pages_alloc(uint32_t n_pages, uint32_t align_pages, void **va /* out */,
		      uint64_t *pa /* out */) MUST_CHECK;
/* Give back exactly one kheap_pages_alloc run (va taken; wiped first). A mismatch goes to
 * the bug hook (page-frame bug). */
void kheap_pages_free(void *va, uint32_t n_pages);
/* Heap counters (summed over cores) and page-frame counters. Any core. */
void kheap_snapshot(struct heap_snapshot *out /* out */);
void kheap_pages_stats(struct pages_stats *out /* out */);

#endif
