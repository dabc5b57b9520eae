/* SPDX-License-Identifier: MIT
 *
 * Physical page-frame allocator: 4 KiB frames from the boot memory map's usable ranges
 * minus reserved ranges (kernel image, boot structures, this allocator's own bitmaps,
 * firmware tables). Hands out physical addresses only: it never touches the memory it
 * manages (so it works before any mapping exists and on the host over a static array).
 * Single pages and contiguous, aligned runs (stacks, DMA rings). The caller owns the
 * allocator struct and the bitmap storage; nothing here allocates.
 *
 * Calling context: any core (one spinlock inside; every operation is short or, for
 * contiguous runs, linear in the bitmap), never from an interrupt handler.
 */
#ifndef KERNEL_MM_PAGES_H
#define KERNEL_MM_PAGES_H

#include <stdatomic.h>
#include "lib/compiler.h"
#include "plat/plat.h"

#define PAGES_SHIFT 12
#define PAGES_SIZE (1u << PAGES_SHIFT)

struct pages_config {
	const struct plat_mem_range *usable; /* borrowed: usable RAM from the boot map */
	uint32_t n_usable;
	const struct plat_mem_range *reserved; /* borrowed: carved out of usable (may overlap) */
	uint32_t n_reserved;
	void *meta;      /* linked: bitmap storage, pages_meta_len() bytes, 8-byte aligned */
	size_t meta_len;
	/* Called on a bug by the caller (double free, free of a foreign address) after the
	 * error is counted; may panic. NULL: count and return the error only. */
	void (*bug)(void *ctx, const char *what, uint64_t phys);
	void *bug_ctx;
};

struct pages_stats {
	uint64_t n_frames;        /* frames in the covered span */
	uint64_t n_reserved;      /* never handed out: holes, reserved ranges, frame 0 */
	uint64_t n_used;          /* currently allocated frames */
	uint64_t n_free;          /* n_frames - n_reserved - n_used */
	uint64_t min_free;        /* low-water mark of n_free */
	uint64_t n_live;          /* live allocations (runs) */
	uint64_t n_allocs, n_frees;
	uint64_t n_nomem;         /* allocations refused for lack of a fitting run */
	uint64_t n_double_free;   /* frees of frames already free */
	uint64_t n_bad_free;      /* frees of reserved/foreign/interior addresses or wrong size */
};

/* Allocator state; fields are private to pages.c (the struct is here so callers can own it). */
struct pages {
	atomic_flag lock;
	uint64_t base_pfn, n_pfn;
	uint64_t *alloc_map; /* bit set: frame not free (allocated or reserved) */
	uint64_t *start_map; /* bit set: frame begins a live allocation */
	uint64_t *end_map;   /* bit set: frame ends a live allocation */
	size_t n_words;
	size_t hint;         /* every word below hint is full */
	struct pages_stats st;
	void (*bug)(void *ctx, const char *what, uint64_t phys);
	void *bug_ctx;
};

/* Bytes of bitmap storage pages_init() needs for these usable ranges (0 if none). */
size_t pages_meta_len(const struct plat_mem_range *usable, uint32_t n_usable);

/* Where to put the bitmaps at boot: the lowest page-aligned run of len bytes (rounded up
 * to pages) inside a usable range, clear of every reserved range and of frame 0. cfg's
 * meta fields are ignored. Returns 0 and *phys, or -E_NOMEM. The caller maps it, passes
 * it as cfg->meta and adds it to the reserved ranges before pages_init(). */
int pages_meta_place(const struct pages_config *cfg, size_t len, uint64_t *phys /* out */) MUST_CHECK;

/* Build the allocator. Usable ranges are rounded inward, reserved ranges outward, to
 * whole frames; frame 0 is always reserved (a physical address of 0 is never returned).
 * Returns 0, -E_INVAL (a range wraps, no usable frame) or -E_NOMEM (meta too small).
 * cfg borrowed (copied); the ranges are not kept. Call once, before sharing. */
int pages_init(struct pages *pg, const struct pages_config *cfg) MUST_CHECK;

/* Allocate n_pages contiguous frames whose first frame number is a multiple of
 * align_pages (a power of two; 0 means 1). Returns 0 and *phys, -E_INVAL on bad
 * arguments, or -E_NOMEM (counted). Frame contents are not cleared. */
int pages_alloc(struct pages *pg, uint32_t n_pages, uint32_t align_pages, uint64_t *phys /* out */) MUST_CHECK;

/* Free exactly one earlier allocation: phys and n_pages must match it. A double free or
 * a free of anything else returns -E_INVAL, is counted, calls the bug hook, and leaves
 * the allocator unchanged. */
int pages_free(struct pages *pg, uint64_t phys, uint32_t n_pages) MUST_CHECK;

void pages_stats_get(struct pages *pg, struct pages_stats *out /* out */);

/* Full consistency check (linear in the span): 0 or -E_CORRUPT. For asserts and tests. */
int pages_check_invariants(struct pages *pg) MUST_CHECK;

/* Adapter for the heap's page interface (kernel/mm/heap.h struct heap_page_ops): frames
 * from `pg`, seen at virtual address phys + virt_offset (the kernel's direct map; 0 on
 * the host where "physical" addresses are those of a static array). */
struct pages_window {
	struct pages *pg; /* linked */
	uint64_t virt_offset;
};
int pages_window_alloc(void *window, uint32_t n_pages, void **out /* out */) MUST_CHECK;
int pages_window_free(void *window, void *p, uint32_t n_pages) MUST_CHECK;

#endif
