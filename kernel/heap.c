/* SPDX-License-Identifier: MIT
 *
 * kheap (kernel/heap.h): the kernel's page allocator and heap, built once from the boot
 * memory map. Owns the static struct pages / struct heap and the adapters between their
 * bug hooks and the platform's. Never touches a frame outside the usable ranges; the
 * only frames it writes itself are its bookkeeping runs (through the caller's direct
 * map). With a platform tag hook (kheap_config.tags) every block handed out carries a
 * fresh tag and is retagged before the heap takes it back; kernel/mm never sees a tagged
 * pointer.
 */
#include "kernel/heap.h"
#include "lib/err.h"
#include "lib/mem.h"

static struct pages kheap_pg;
static struct heap kheap_h;
static struct pages_window kheap_win;
static struct kheap_config kheap_cfg;
static bool kheap_is_ready;

static void kheap_pages_bug(void *ctx, const char *what, uint64_t phys)
{
	(void)ctx;
	if (kheap_cfg.bug)
		kheap_cfg.bug(what, phys, true);
}

static void kheap_heap_bug(void *ctx, const char *what, const void *ptr)
{
	(void)ctx;
	if (kheap_cfg.bug)
		kheap_cfg.bug(what, (uint64_t)(uintptr_t)ptr, false);
}

/* The heap's page provider: with tagging, fresh pages lose the tags of their last use. */
static int kheap_page_take(void *ctx, uint32_t n_pages, void **out)
{
	int err = pages_window_alloc(ctx, n_pages, out);
	if (err == 0 && kheap_cfg.tags)
		kheap_cfg.tags->tag_clear(*out, (size_t)n_pages * HEAP_PAGE_SIZE);
	return err;
}

static uint32_t kheap_core(void)
{
	return kheap_cfg.core_index ? kheap_cfg.core_index() : 0;
}

int kheap_init(const struct kheap_config *cfg)
{
	struct plat_mem_range resv[KHEAP_MAX_RANGES + 1];
	kheap_is_ready = false;
	if (!cfg || !cfg->usable || cfg->n_usable == 0 || cfg->n_usable > KHEAP_MAX_RANGES ||
	    cfg->n_reserved > KHEAP_MAX_RANGES || (cfg->n_reserved && !cfg->reserved) ||
	    !cfg->bug || cfg->n_cores == 0 || cfg->n_cores > HEAP_MAX_CORES ||
	    (cfg->tags && (!cfg->tags->tag_alloc || !cfg->tags->tag_free || !cfg->tags->tag_clear ||
			   !cfg->tags->untag || !cfg->tags->matches)))
		return -E_INVAL;
	kheap_cfg = *cfg;
	kheap_cfg.usable = NULL; /* not kept: borrowed for this call only */
	kheap_cfg.reserved = NULL;
	for (uint32_t i = 0; i < cfg->n_reserved; i++)
		resv[i] = cfg->reserved[i];

	/* Invariant 2: bitmaps first, in memory the allocator will then never hand out. */
	struct pages_config pc = {
		.usable = cfg->usable,
		.n_usable = cfg->n_usable,
		.reserved = resv,
		.n_reserved = cfg->n_reserved,
		.bug = kheap_pages_bug,
	};
	size_t meta_len = pages_meta_len(cfg->usable, cfg->n_usable);
	uint64_t meta_phys;
	if (meta_len == 0)
		return -E_INVAL;
	int err = pages_meta_place(&pc, meta_len, &meta_phys);
	if (err)
		return err;
	resv[pc.n_reserved].base = meta_phys;
	resv[pc.n_reserved].len = meta_len;
	pc.n_reserved++;
	pc.meta = (void *)(uintptr_t)(meta_phys + cfg->virt_offset); // NOLINT(performance-no-int-to-ptr)
	pc.meta_len = meta_len;
	err = pages_init(&kheap_pg, &pc);
	if (err)
		return err;

	/* Invariant 3: the heap's window spans all usable RAM in the direct map. */
	uint64_t lo = UINT64_MAX, hi = 0;
	for (uint32_t i = 0; i < cfg->n_usable; i++) {
		uint64_t b = cfg->usable[i].base, e = b + cfg->usable[i].len;
		if (e < b)
			return -E_INVAL;
		lo = MIN(lo, b);
		hi = MAX(hi, e);
	}
	lo &= ~(uint64_t)(HEAP_PAGE_SIZE - 1);
	hi = (hi + HEAP_PAGE_SIZE - 1) & ~(uint64_t)(HEAP_PAGE_SIZE - 1);
	kheap_win.pg = &kheap_pg;
	kheap_win.virt_offset = cfg->virt_offset;
	struct heap_config hc = {
		.n_cores = cfg->n_cores,
		.va_base = (uintptr_t)(lo + cfg->virt_offset),
		.va_pages = (size_t)((hi - lo) / HEAP_PAGE_SIZE),
		.max_slabs = cfg->max_slabs,
		.limit_pages = cfg->limit_pages,
		.max_alloc_bytes = cfg->max_alloc_bytes,
		.pages = { &kheap_win, kheap_page_take, pages_window_free },
		.bug = kheap_heap_bug,
	};
	size_t hm_len = heap_meta_len(&hc);
	if (hm_len == 0)
		return -E_INVAL;
	uint64_t hm_pages = (hm_len + PAGES_SIZE - 1) / PAGES_SIZE;
	if (hm_pages > UINT32_MAX)
		return -E_NOMEM;
	uint64_t hm_phys;
	err = pages_alloc(&kheap_pg, (uint32_t)hm_pages, 1, &hm_phys);
	if (err)
		return err;
	void *hm = (void *)(uintptr_t)(hm_phys + cfg->virt_offset); // NOLINT(performance-no-int-to-ptr)
	err = heap_init(&kheap_h, &hc, hm, (size_t)hm_pages * PAGES_SIZE);
	if (err) {
		if (pages_free(&kheap_pg, hm_phys, (uint32_t)hm_pages) != 0)
			return -E_CORRUPT;
		return err;
	}
	kheap_is_ready = true;
	return 0;
}

bool kheap_ready(void)
{
	return kheap_is_ready;
}

int kheap_alloc(size_t size, enum heap_tag tag, void **out)
{
	if (!kheap_is_ready)
		return -E_NOMEM;
	int err = heap_alloc(&kheap_h, kheap_core(), size, tag, out);
	if (err == 0 && kheap_cfg.tags) {
		size_t used = (size + KHEAP_TAG_GRANULE - 1) & ~(size_t)(KHEAP_TAG_GRANULE - 1);
		*out = kheap_cfg.tags->tag_alloc(*out, used, heap_block_size(size));
	}
	return err;
}

void kheap_free(void *p)
{
	if (!p)
		return;
	if (!kheap_is_ready) {
		kheap_heap_bug(NULL, "heap: free before the heap exists", p);
		return;
	}
	if (kheap_cfg.tags) {
		/* A block is retagged before the heap takes it back (after that, a remote
		 * owner may hand it out again). Anything but a live block's start is left to
		 * heap_free's checks, with the plain address. */
		struct heap_where w;
		void *tagged = p;
		p = kheap_cfg.tags->untag(tagged);
		heap_where(&kheap_h, (uintptr_t)p, &w);
		bool block = w.kind == HEAP_WHERE_USED || w.kind == HEAP_WHERE_FREE || w.kind == HEAP_WHERE_LARGE;
		if (block && !kheap_cfg.tags->matches(tagged)) {
			kheap_heap_bug(NULL, "heap: double free or free through a stale pointer (its tag is no longer the block's)",
				       p);
			return;
		}
		if ((w.kind == HEAP_WHERE_USED || w.kind == HEAP_WHERE_LARGE) && w.block == (uintptr_t)p)
			kheap_cfg.tags->tag_free(p, w.block_size);
	}
	/* The error is already counted and reported through the bug hook. */
	(void)!heap_free(&kheap_h, kheap_core(), p);
}

int kheap_poll(void *ctx)
{
	(void)ctx;
	if (kheap_is_ready)
		heap_poll(&kheap_h, kheap_core());
	return 0;
}

void kheap_trim(void)
{
	if (kheap_is_ready)
		heap_trim(&kheap_h, kheap_core());
}

int kheap_pages_alloc(uint32_t n_pages, uint32_t align_pages, void **va, uint64_t *pa)
{
	uint64_t phys;
	*va = NULL;
	*pa = 0;
	if (!kheap_is_ready)
		return -E_NOMEM;
	if (n_pages == 0 || (align_pages & (align_pages - 1)))
		return -E_INVAL;
	int err = pages_alloc(&kheap_pg, n_pages, align_pages ? align_pages : 1, &phys);
	if (err)
		return err;
	void *p = (void *)(uintptr_t)(phys + kheap_cfg.virt_offset); // NOLINT(performance-no-int-to-ptr)
	memset(p, 0, (size_t)n_pages * PAGES_SIZE);
	*va = p;
	*pa = phys;
	return 0;
}

void kheap_pages_free(void *va, uint32_t n_pages)
{
	if (!va)
		return;
	uint64_t phys = (uint64_t)(uintptr_t)va - kheap_cfg.virt_offset;
	if (!kheap_is_ready || n_pages == 0) {
		kheap_pages_bug(NULL, "pages: free of a run the allocator never gave", phys);
		return;
	}
	/* Wiped before the frames can be handed out again (DMA buffers may hold secrets:
	 * entropy, keys in frames). A bad free is reported through the bug hook. */
	memset(va, 0, (size_t)n_pages * PAGES_SIZE);
	(void)!pages_free(&kheap_pg, phys, n_pages);
}

void kheap_where(uint64_t a, struct heap_where *out)
{
	if (!kheap_is_ready) {
		memset(out, 0, sizeof *out);
		return;
	}
	heap_where(&kheap_h, (uintptr_t)a, out);
}

void kheap_snapshot(struct heap_snapshot *out)
{
	if (!kheap_is_ready) {
		memset(out, 0, sizeof *out);
		return;
	}
	heap_snapshot(&kheap_h, out);
}

void kheap_pages_stats(struct pages_stats *out)
{
	if (!kheap_is_ready) {
		memset(out, 0, sizeof *out);
		return;
	}
	pages_stats_get(&kheap_pg, out);
}
