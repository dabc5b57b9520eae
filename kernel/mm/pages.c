/* SPDX-License-Identifier: MIT
 *
 * Page-frame allocator (kernel/mm/pages.h): three bitmaps over the span of frames from
 * the lowest to the highest usable frame. Owns only its counters and the caller's bitmap
 * storage; never reads or writes the frames it manages, never allocates.
 *
 * Why bitmaps rather than a buddy allocator: a bitmap has one obvious state per frame
 * that a full check can verify, double frees are exact, and contiguous aligned runs of
 * any length (not only powers of two) cost a linear scan that happens rarely (stacks and
 * DMA rings at boot; heap slabs, which the heap caches per core).
 *
 * Design note
 * -----------
 * Bitmaps (bit i is frame base_pfn + i): alloc (not free), start (first frame of a live
 * run), end (last frame of a live run). Frame states and transitions:
 *
 *      pages_init              pages_alloc            pages_free
 *   -------------> FREE ------------------> ALLOCATED ----------> FREE
 *   -------------> RESERVED  (holes, reserved ranges, frame 0; permanent)
 *
 *   FREE       alloc=0 start=0 end=0
 *   RESERVED   alloc=1 start=0 end=0, and no live run covers it
 *   ALLOCATED  alloc=1, inside exactly one run [s, e] with start[s]=1, end[e]=1 and no
 *              start/end bit strictly between them
 *
 * Invariants (checked by pages_check_invariants):
 *  1. start[i] or end[i] implies alloc[i]; runs do not nest or overlap.
 *  2. popcount(alloc) over the span = n_reserved + n_used; the padding bits of the last
 *     word stay set (so no search ever returns a frame beyond the span).
 *  3. popcount(start) = popcount(end) = n_live.
 *  4. Every bitmap word below `hint` is all ones in alloc (no free frame below it).
 *  5. n_free = n_frames - n_reserved - n_used; min_free <= n_free.
 * Concurrency: every public operation holds `lock` for its whole duration.
 */
#include "kernel/mm/pages.h"
#include "lib/err.h"
#include "lib/mem.h"

#define WORD_BITS 64u

static inline bool bit_get(const uint64_t *m, uint64_t i)
{
	return (m[i / WORD_BITS] >> (i % WORD_BITS)) & 1u;
}
static inline void bit_set(uint64_t *m, uint64_t i)
{
	m[i / WORD_BITS] |= (uint64_t)1 << (i % WORD_BITS);
}
static inline void bit_clr(uint64_t *m, uint64_t i)
{
	m[i / WORD_BITS] &= ~((uint64_t)1 << (i % WORD_BITS));
}

static void lock(struct pages *pg)
{
	/* Acquire: the critical section sees everything the previous holder wrote before
	 * its release in unlock(). */
	while (atomic_flag_test_and_set_explicit(&pg->lock, memory_order_acquire))
		;
}
static void unlock(struct pages *pg)
{
	/* Release: publishes this critical section's writes to the next acquirer. */
	atomic_flag_clear_explicit(&pg->lock, memory_order_release);
}

/* Usable range rounded inward to frames; false if it holds no whole frame or wraps. */
static bool range_frames(const struct plat_mem_range *r, uint64_t *first, uint64_t *end, bool *wraps)
{
	*wraps = r->len > UINT64_MAX - r->base;
	if (*wraps || r->len == 0)
		return false;
	uint64_t lo = (r->base + PAGES_SIZE - 1) >> PAGES_SHIFT;
	uint64_t hi = (r->base + r->len) >> PAGES_SHIFT;
	if (r->base > UINT64_MAX - (PAGES_SIZE - 1) || lo >= hi)
		return false;
	*first = lo;
	*end = hi;
	return true;
}

static bool span(const struct plat_mem_range *usable, uint32_t n, uint64_t *lo, uint64_t *hi)
{
	bool any = false, wraps;
	*lo = UINT64_MAX;
	*hi = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t a, b;
		if (!range_frames(&usable[i], &a, &b, &wraps))
			continue;
		*lo = MIN(*lo, a);
		*hi = MAX(*hi, b);
		any = true;
	}
	return any;
}

size_t pages_meta_len(const struct plat_mem_range *usable, uint32_t n_usable)
{
	uint64_t lo, hi, words;
	if (!usable || !span(usable, n_usable, &lo, &hi))
		return 0;
	words = (hi - lo + WORD_BITS - 1) / WORD_BITS;
	if (words > SIZE_MAX / 3 / sizeof(uint64_t))
		return 0;
	return (size_t)words * 3 * sizeof(uint64_t);
}

/* Reserved range rounded outward to frames [*a, *b); false if empty. */
static bool reserved_frames(const struct plat_mem_range *r, uint64_t *a, uint64_t *b)
{
	if (r->len == 0)
		return false;
	uint64_t last = r->len > UINT64_MAX - r->base ? UINT64_MAX : r->base + r->len - 1;
	*a = r->base >> PAGES_SHIFT;
	*b = (last >> PAGES_SHIFT) + 1;
	return true;
}

int pages_meta_place(const struct pages_config *cfg, size_t len, uint64_t *phys)
{
	uint64_t best = UINT64_MAX, n = ((uint64_t)len + PAGES_SIZE - 1) >> PAGES_SHIFT;
	bool wraps;
	if (!cfg || !cfg->usable || (cfg->n_reserved && !cfg->reserved) || !phys || len == 0)
		return -E_INVAL;
	for (uint32_t i = 0; i < cfg->n_usable; i++) {
		uint64_t lo, hi;
		if (!range_frames(&cfg->usable[i], &lo, &hi, &wraps))
			continue;
		lo = MAX(lo, 1); /* never frame 0 */
		/* Each reserved range can push the candidate past its end at most once, so
		 * n_reserved + 1 rounds are enough to reach a fixed point or leave the range. */
		for (uint32_t round = 0; round <= cfg->n_reserved && lo < hi && n <= hi - lo; round++) {
			bool moved = false;
			for (uint32_t k = 0; k < cfg->n_reserved; k++) {
				uint64_t a, b;
				if (reserved_frames(&cfg->reserved[k], &a, &b) && a < lo + n && lo < b) {
					lo = b;
					moved = true;
				}
			}
			if (!moved) {
				best = MIN(best, lo);
				break;
			}
		}
	}
	if (best == UINT64_MAX)
		return -E_NOMEM;
	*phys = best << PAGES_SHIFT;
	return 0;
}

static void bug(struct pages *pg, const char *what, uint64_t phys)
{
	if (pg->bug)
		pg->bug(pg->bug_ctx, what, phys);
}

int pages_init(struct pages *pg, const struct pages_config *cfg)
{
	uint64_t lo, hi, n_set = 0;
	size_t need;
	bool wraps;

	if (!pg || !cfg || !cfg->usable || (cfg->n_reserved && !cfg->reserved) || !cfg->meta ||
	    ((uintptr_t)cfg->meta & 7u) != 0)
		return -E_INVAL;
	for (uint32_t i = 0; i < cfg->n_usable; i++) {
		uint64_t a, b;
		(void)range_frames(&cfg->usable[i], &a, &b, &wraps);
		if (wraps)
			return -E_INVAL;
	}
	if (!span(cfg->usable, cfg->n_usable, &lo, &hi))
		return -E_INVAL;
	need = pages_meta_len(cfg->usable, cfg->n_usable);
	if (need == 0 || cfg->meta_len < need)
		return -E_NOMEM;

	memset(pg, 0, sizeof *pg);
	atomic_flag_clear_explicit(&pg->lock, memory_order_relaxed); /* not shared yet */
	pg->base_pfn = lo;
	pg->n_pfn = hi - lo;
	pg->n_words = (size_t)((pg->n_pfn + WORD_BITS - 1) / WORD_BITS);
	pg->alloc_map = cfg->meta;
	pg->start_map = pg->alloc_map + pg->n_words;
	pg->end_map = pg->start_map + pg->n_words;
	pg->bug = cfg->bug;
	pg->bug_ctx = cfg->bug_ctx;
	/* Everything starts reserved (including the padding of the last word); usable
	 * ranges open frames, reserved ranges close them again. */
	memset(pg->alloc_map, 0xff, pg->n_words * sizeof(uint64_t));
	memset(pg->start_map, 0, pg->n_words * sizeof(uint64_t));
	memset(pg->end_map, 0, pg->n_words * sizeof(uint64_t));
	for (uint32_t i = 0; i < cfg->n_usable; i++) {
		uint64_t a, b;
		if (!range_frames(&cfg->usable[i], &a, &b, &wraps))
			continue;
		for (uint64_t f = a; f < b; f++)
			bit_clr(pg->alloc_map, f - lo);
	}
	for (uint32_t i = 0; i < cfg->n_reserved; i++) {
		uint64_t a, b;
		if (!reserved_frames(&cfg->reserved[i], &a, &b))
			continue;
		a = MAX(a, lo);
		b = MIN(b, hi);
		for (uint64_t f = a; f < b; f++)
			bit_set(pg->alloc_map, f - lo);
	}
	if (lo == 0)
		bit_set(pg->alloc_map, 0); /* physical address 0 is never handed out */
	for (size_t w = 0; w < pg->n_words; w++)
		n_set += (uint64_t)__builtin_popcountll(pg->alloc_map[w]);
	pg->st.n_frames = pg->n_pfn;
	pg->st.n_reserved = n_set - (pg->n_words * WORD_BITS - pg->n_pfn);
	pg->st.n_free = pg->st.n_frames - pg->st.n_reserved;
	pg->st.min_free = pg->st.n_free;
	if (pg->st.n_free == 0)
		return -E_INVAL;
	return 0;
}

static uint64_t align_up_frame(uint64_t base_pfn, uint64_t i, uint64_t align)
{
	uint64_t abs = base_pfn + i;
	return ((abs + align - 1) & ~(align - 1)) - base_pfn;
}

/* First index i >= hint*64 with frames [i, i+n) free and base_pfn+i aligned. Linear:
 * after a miss at j the search resumes past j. */
static bool find_run(struct pages *pg, uint64_t n, uint64_t align, uint64_t *out)
{
	uint64_t i = align_up_frame(pg->base_pfn, (uint64_t)pg->hint * WORD_BITS, align);
	while (i < pg->n_pfn && n <= pg->n_pfn - i) {
		if (i % WORD_BITS == 0 && pg->alloc_map[i / WORD_BITS] == UINT64_MAX) {
			i = align_up_frame(pg->base_pfn, i + WORD_BITS, align);
			continue;
		}
		uint64_t j = i;
		while (j < i + n && !bit_get(pg->alloc_map, j))
			j++;
		if (j == i + n) {
			*out = i;
			return true;
		}
		i = align_up_frame(pg->base_pfn, j + 1, align);
	}
	return false;
}

/* Single frame: first word with a zero bit from the hint; advances the hint past full
 * words (invariant 4). Padding bits are set, so no index beyond n_pfn is returned. */
static bool find_one(struct pages *pg, uint64_t *out)
{
	for (size_t w = pg->hint; w < pg->n_words; w++) {
		if (pg->alloc_map[w] == UINT64_MAX)
			continue;
		uint64_t free_bits = ~pg->alloc_map[w];
		pg->hint = w;
		*out = (uint64_t)w * WORD_BITS + (uint64_t)__builtin_ctzll(free_bits);
		return true;
	}
	pg->hint = pg->n_words;
	return false;
}

int pages_alloc(struct pages *pg, uint32_t n_pages, uint32_t align_pages, uint64_t *phys)
{
	uint64_t i;
	bool ok;
	if (align_pages == 0)
		align_pages = 1;
	if (n_pages == 0 || (align_pages & (align_pages - 1)) != 0 || !phys)
		return -E_INVAL;
	lock(pg);
	if (n_pages == 1 && align_pages == 1)
		ok = find_one(pg, &i);
	else
		ok = find_run(pg, n_pages, align_pages, &i);
	if (!ok) {
		pg->st.n_nomem++;
		unlock(pg);
		return -E_NOMEM;
	}
	for (uint64_t f = i; f < i + n_pages; f++)
		bit_set(pg->alloc_map, f);
	bit_set(pg->start_map, i);
	bit_set(pg->end_map, i + n_pages - 1);
	pg->st.n_used += n_pages;
	pg->st.n_free -= n_pages;
	pg->st.min_free = MIN(pg->st.min_free, pg->st.n_free);
	pg->st.n_live++;
	pg->st.n_allocs++;
	*phys = (pg->base_pfn + i) << PAGES_SHIFT;
	unlock(pg);
	return 0;
}

int pages_free(struct pages *pg, uint64_t phys, uint32_t n_pages)
{
	uint64_t pfn = phys >> PAGES_SHIFT, i, e;
	const char *what = NULL;

	lock(pg);
	if ((phys & (PAGES_SIZE - 1)) != 0 || n_pages == 0 || pfn < pg->base_pfn ||
	    pfn - pg->base_pfn >= pg->n_pfn || n_pages > pg->n_pfn - (pfn - pg->base_pfn)) {
		what = "pages: free of an address outside the allocator";
		goto bad;
	}
	i = pfn - pg->base_pfn;
	e = i + n_pages - 1;
	if (!bit_get(pg->start_map, i)) {
		if (!bit_get(pg->alloc_map, i)) {
			pg->st.n_double_free++;
			what = "pages: double free";
			goto out;
		}
		what = "pages: free of a frame that does not start an allocation";
		goto bad;
	}
	if (!bit_get(pg->end_map, e)) {
		what = "pages: free with the wrong size";
		goto bad;
	}
	for (uint64_t f = i + 1; f <= e; f++) {
		if (bit_get(pg->start_map, f)) {
			what = "pages: free with the wrong size";
			goto bad;
		}
	}
	for (uint64_t f = i; f <= e; f++)
		bit_clr(pg->alloc_map, f);
	bit_clr(pg->start_map, i);
	bit_clr(pg->end_map, e);
	pg->st.n_used -= n_pages;
	pg->st.n_free += n_pages;
	pg->st.n_live--;
	pg->st.n_frees++;
	if (i / WORD_BITS < pg->hint)
		pg->hint = (size_t)(i / WORD_BITS);
	unlock(pg);
	return 0;
bad:
	pg->st.n_bad_free++;
out:
	unlock(pg);
	bug(pg, what, phys);
	return -E_INVAL;
}

void pages_stats_get(struct pages *pg, struct pages_stats *out)
{
	lock(pg);
	*out = pg->st;
	unlock(pg);
}

int pages_check_invariants(struct pages *pg)
{
	uint64_t n_alloc = 0, n_start = 0, n_end = 0, used = 0;
	uint64_t pad = (uint64_t)pg->n_words * WORD_BITS - pg->n_pfn;
	bool in_run = false;
	int err = 0;

	lock(pg);
	for (uint64_t i = 0; i < pg->n_pfn && !err; i++) {
		bool a = bit_get(pg->alloc_map, i), s = bit_get(pg->start_map, i);
		bool e = bit_get(pg->end_map, i);
		if ((s || e) && !a)
			err = -E_CORRUPT; /* 1 */
		if (s && in_run)
			err = -E_CORRUPT; /* 1: nested */
		if (s)
			in_run = true;
		if (!in_run && e)
			err = -E_CORRUPT; /* 1: end without start */
		if (in_run) {
			if (!a)
				err = -E_CORRUPT;
			used++;
		}
		if (e)
			in_run = false;
		n_alloc += a;
		n_start += s;
		n_end += e;
	}
	if (in_run)
		err = -E_CORRUPT;
	if (pad && (pg->alloc_map[pg->n_words - 1] >> (WORD_BITS - pad)) != (UINT64_MAX >> (WORD_BITS - pad)))
		err = -E_CORRUPT; /* 2: padding must stay set */
	if (n_alloc != pg->st.n_reserved + pg->st.n_used || used != pg->st.n_used)
		err = -E_CORRUPT; /* 2 */
	if (n_start != pg->st.n_live || n_end != pg->st.n_live)
		err = -E_CORRUPT; /* 3 */
	for (size_t w = 0; w < pg->hint && w < pg->n_words; w++)
		if (pg->alloc_map[w] != UINT64_MAX)
			err = -E_CORRUPT; /* 4 */
	if (pg->st.n_free != pg->st.n_frames - pg->st.n_reserved - pg->st.n_used ||
	    pg->st.min_free > pg->st.n_free)
		err = -E_CORRUPT; /* 5 */
	unlock(pg);
	return err;
}

int pages_window_alloc(void *window, uint32_t n_pages, void **out)
{
	struct pages_window *win = window;
	uint64_t phys;
	int err = pages_alloc(win->pg, n_pages, 1, &phys);
	if (err)
		return err;
	/* The one place a frame number becomes a pointer: through the caller's window. */
	*out = (void *)(uintptr_t)(phys + win->virt_offset); // NOLINT(performance-no-int-to-ptr)
	return 0;
}

int pages_window_free(void *window, void *p, uint32_t n_pages)
{
	struct pages_window *win = window;
	return pages_free(win->pg, (uint64_t)(uintptr_t)p - win->virt_offset, n_pages);
}
