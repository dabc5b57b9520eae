/* SPDX-License-Identifier: MIT
 *
 * The kernel heap: size classes from 16 to 2048 bytes in slabs cached per core, whole
 * pages above that, and exact accounting — requested bytes and occupied block bytes per
 * class, per tag and in total — that any layer can read through heap_snapshot(). Freed
 * memory is wiped to zero and checked on reuse; double frees and frees of pointers the
 * heap never returned are detected, counted, reported to the caller's bug hook and
 * refused. All memory comes from the page interface given at init; the heap never
 * allocates anything else (its bookkeeping lives in a caller-provided buffer).
 *
 * Calling context: heap_alloc/heap_free/heap_poll take the calling core's index and must
 * be called on that core (its cache is touched by no one else); never from interrupt
 * handlers. heap_snapshot() may be called from any core.
 */
#ifndef KERNEL_MM_HEAP_H
#define KERNEL_MM_HEAP_H

#include <stdatomic.h>
#include "lib/compiler.h"
#include "lib/heap_tag.h"
#include "lib/list.h"

#define HEAP_PAGE_SIZE 4096u
#define HEAP_N_CLASSES 22u          /* 16, 32, ..., 2048 (see heap.c) */
#define HEAP_MAX_SMALL 2048u        /* larger requests get whole pages */
#define HEAP_LARGE HEAP_N_CLASSES   /* index of the whole-page "class" in snapshots */
#define HEAP_MAX_CORES 64u

/* Where pages come from (e.g. kernel/mm/pages.h pages_window_alloc/free). Every page
 * returned must lie inside [va_base, va_base + va_pages * 4096) of the config. */
struct heap_page_ops {
	void *ctx; /* linked */
	int (*alloc)(void *ctx, uint32_t n_pages, void **out /* out */);
	int (*free)(void *ctx, void *p, uint32_t n_pages);
};

struct heap_config {
	uint32_t n_cores;          /* 1..HEAP_MAX_CORES */
	uintptr_t va_base;         /* page-aligned start of the window pages come from */
	size_t va_pages;           /* its length in pages */
	uint32_t max_slabs;        /* descriptors: slabs + whole-page allocations alive at once */
	uint64_t limit_pages;      /* pages the heap may hold at once; 0 = provider's limit */
	uint64_t max_alloc_bytes;  /* largest single request; 0 = 1 MiB */
	struct heap_page_ops pages;
	/* Bug hook (double free, foreign pointer, corrupted block): called after the error
	 * is counted, on the calling core; may panic. NULL: count and return only. */
	void (*bug)(void *ctx, const char *what, const void *ptr);
	void *bug_ctx;
};

struct heap_class_stats {
	uint32_t block_size;      /* 0 for the whole-page class */
	uint64_t n_live;          /* blocks (or whole-page allocations) in use */
	uint64_t requested_bytes; /* sum of the sizes callers asked for */
	uint64_t block_bytes;     /* sum of the blocks (or pages) that holds them */
};

struct heap_tag_stats {
	uint64_t n_live, requested_bytes, block_bytes;
};

struct heap_snapshot {
	struct heap_class_stats cls[HEAP_N_CLASSES + 1]; /* [HEAP_LARGE]: whole pages */
	struct heap_tag_stats tag[HEAP_TAG__COUNT];
	uint64_t n_live, requested_bytes, block_bytes; /* totals over classes */
	uint64_t pages_held;       /* pages taken from the provider (slabs + large) */
	uint64_t n_slabs;
	uint64_t n_allocs, n_frees;
	uint64_t n_remote_frees;   /* frees handed to the owning core */
	uint64_t n_nomem;          /* allocations refused: provider, limit or descriptors */
	uint64_t n_double_free, n_foreign_free, n_corrupt;
};

/* Per-core state and counters; private to heap.c (declared here only for sizing). */
struct heap_core;
struct heap_slab;

/* Heap state, owned by the caller; fields are private to heap.c. */
struct heap {
	struct heap_config cfg;
	struct heap_core *cores;     /* in the caller's meta buffer */
	struct heap_slab *slabs;
	_Atomic uint32_t *page_map;  /* per page of the window: 0 or slab descriptor + 1 */
	atomic_flag lock;            /* descriptors, page map writes, provider, large path */
	struct list free_slabs;      /* unused descriptors (under lock) */
	_Atomic uint64_t pages_held, n_slabs; /* written under lock */
	struct {
		uint16_t size, n_blocks, n_pages, meta_off;
	} geo[HEAP_N_CLASSES];
	uint8_t class_lut[HEAP_MAX_SMALL / 16 + 1]; /* (size + 15) / 16 -> class */
};

/* Bytes of bookkeeping storage heap_init() needs for cfg (0 if cfg is invalid). */
size_t heap_meta_len(const struct heap_config *cfg);

/* Build the heap over meta (linked, heap_meta_len(cfg) bytes, 64-byte aligned).
 * cfg borrowed (copied). Returns 0, -E_INVAL or -E_NOMEM (meta too small). */
int heap_init(struct heap *h, const struct heap_config *cfg, void *meta, size_t meta_len) MUST_CHECK;

/* Allocate `size` bytes for `tag` on core `core`: 16-byte aligned, zero-filled.
 * Returns 0 and *out (returned owned: free with heap_free on any core), -E_INVAL (size
 * 0, bad core or tag), -E_RANGE (size above max_alloc_bytes) or -E_NOMEM (counted). */
int heap_alloc(struct heap *h, uint32_t core, size_t size, enum heap_tag tag, void **out /* out */) MUST_CHECK;

/* heap_alloc of n * size bytes (mbedTLS's calloc hook): -E_INVAL if either is 0,
 * -E_RANGE if the product overflows or exceeds max_alloc_bytes. */
int heap_calloc(struct heap *h, uint32_t core, size_t n, size_t size, enum heap_tag tag,
		void **out /* out */) MUST_CHECK;

/* Free p (taken) from core `core`. NULL is a no-op. A block owned by another core is
 * wiped here and handed to its owner through the owner's remote-free list; the owner
 * takes it back (and updates its counters) in its next heap_alloc or heap_poll.
 * Returns 0, or -E_INVAL for a double free / foreign or interior pointer, -E_CORRUPT
 * for a block whose bookkeeping was overwritten: counted, bug hook called, p untouched. */
int heap_free(struct heap *h, uint32_t core, void *p) MUST_CHECK;

/* Take back blocks other cores freed for `core` (call from the core's loop when idle). */
void heap_poll(struct heap *h, uint32_t core);

/* heap_poll, then give every cached empty slab of `core` back to the page interface
 * (memory pressure, leak checks). On that core. */
void heap_trim(struct heap *h, uint32_t core);

/* Sum of every core's counters. Each counter is exact for its core; while other cores
 * run the sum is not one instant's cut. Blocks freed remotely count as live until their
 * owner polls. Any core. */
void heap_snapshot(struct heap *h, struct heap_snapshot *out /* out */);

/* Full consistency check of every slab, descriptor, page-map entry and counter; walks
 * all heap memory. Only while no core uses the heap (tests, debug). 0 or -E_CORRUPT. */
int heap_check_invariants(struct heap *h) MUST_CHECK;

/* What the heap knows about one address (fault reports, the kernel's tag hook). */
enum heap_where_kind {
	HEAP_WHERE_NONE,   /* outside the window */
	HEAP_WHERE_PAGE,   /* a page of the window the heap does not hold */
	HEAP_WHERE_FREE,   /* a FREE block of a slab */
	HEAP_WHERE_USED,   /* a USED (or PENDING) block of a slab */
	HEAP_WHERE_LARGE,  /* a whole-page block */
	HEAP_WHERE_SLAB_TAIL, /* a slab's bytes past its last block (its meta words or waste) */
};
struct heap_where {
	enum heap_where_kind kind;
	uintptr_t block;      /* FREE/USED/LARGE: the block's start; else 0 */
	size_t block_size;    /* its class size or its pages' bytes */
	size_t requested;     /* USED/LARGE: bytes asked for; else 0 */
	enum heap_tag tag;    /* USED/LARGE: its accounting tag */
	uintptr_t prev;       /* FREE/USED/SLAB_TAIL: the block before in the same slab, or 0 */
};

/* Where address a (a plain address: no pointer tag) falls. Reads the page map, the
 * descriptor and the block's meta word without the lock: exact for a block the calling
 * core owns or holds live; for anything else a best-effort description (fault reports),
 * never a write. Any core. */
void heap_where(struct heap *h, uintptr_t a, struct heap_where *out /* out */);

/* Block size of the class serving `size` (size itself rounded to pages above
 * HEAP_MAX_SMALL); 0 for 0. */
size_t heap_block_size(size_t size);
const char *heap_tag_name(enum heap_tag tag);

#endif
