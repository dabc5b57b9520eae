/* SPDX-License-Identifier: MIT
 *
 * Kernel heap (kernel/mm/heap.h). Owns the slabs and whole-page blocks it took from the
 * page interface, their descriptors and the page map, and every counter. It must never
 * get memory from anywhere but the page interface, never touch another core's cache
 * except through that core's remote-free list, and never trust a pointer handed to
 * heap_free() before the page map and the slab's bitmap vouch for it.
 *
 * Design note
 * -----------
 * A slab is 1, 2 or 4 pages holding n_blocks equal blocks of one class, and one 16-bit
 * meta word per block: requested size (bits 0-11) and tag (12-15), 0 while the block is
 * free. The meta words sit at the slab's tail for classes up to 224 B, and in the
 * descriptor for bigger classes (at most 16 blocks per slab, so no block is lost to
 * them). The descriptor (out of band, in the caller's meta buffer) also holds the owner
 * core, the owner-private `used` bitmap and the shared `pending` bitmap.
 * The page map has one entry per page of the window: 0, or descriptor index + 1; it is
 * how heap_free() tells our pointers from foreign ones without reading the pointed-to
 * memory. Whole-page blocks (> 2048 B) have a descriptor of kind LARGE.
 *
 * Block states (slab blocks):
 *
 *            heap_alloc (owner)           heap_free (owner)
 *     FREE ---------------------> USED ---------------------------> FREE
 *                                  |  heap_free (other core)          ^
 *                                  +--------> PENDING ----------------+
 *                                             drain() in the owner's heap_alloc/heap_poll
 *
 *   FREE     used=0 pending=0 meta=0, every byte zero
 *   USED     used=1 pending=0 meta=(size,tag) valid for the class
 *   PENDING  used=1 pending=1 meta valid, bytes zero except the first 8 (link in the
 *            owner's remote-free stack)
 * Slab states, per owner core and class: PARTIAL (in the core's partial list, some block
 * FREE) <-> FULL (not listed); an EMPTY slab (no block USED) stays cached if it is the
 * core's only empty slab of that class, otherwise it goes back to the page interface.
 *
 * Invariants (checked by heap_check_invariants):
 *  1. A descriptor is FREE (in free_slabs, no page-map entry), SMALL or LARGE; the page
 *     map entry of every page of a SMALL/LARGE descriptor names it, and no other entry is
 *     non-zero. pages_held = pages of all SMALL and LARGE descriptors.
 *  2. For a SMALL slab: n_used = number of USED+PENDING blocks; bits >= n_blocks of
 *     `used` are set; FREE blocks and their meta are zero; USED meta is valid.
 *  3. A slab is in its owner's partial list of its class iff n_used < n_blocks.
 *     n_slabs/n_empty per core and class match the slabs.
 *  4. Each core's counters equal the sums over its slabs' USED+PENDING blocks (per class
 *     and per tag); the LARGE slot's counters equal the sums over LARGE descriptors.
 *  5. The nodes of all remote-free stacks are exactly the PENDING blocks.
 *
 * Concurrency
 *  - `used`, partial lists, n_slabs/n_empty and a core's counters: written only by the
 *    owning core.
 *  - `pending` and the remote-free stack: any core (atomics; see the comments there).
 *  - Descriptor allocation, page-map writes, the page interface and the LARGE path: under
 *    `lock`. A page-map entry is written before any block of its slab is handed out, and
 *    the pointer reaches another core only through some release/acquire hand-off, so the
 *    relaxed page-map load in heap_free() sees it. Entries change while a pointer into the
 *    page is live only when that pointer is already a bug (a free racing its own free).
 *  - Counters are single-writer; snapshot readers load them relaxed: no other memory
 *    depends on their value, each load simply returns some recent value. Error counters
 *    are kept by the core that detected the error.
 *  - Shared state beyond the SPSC rings of the core mesh (kernel/xcore.h): the remote-free stacks (intrusive,
 *    so bounded by the blocks themselves and never full) and one spinlock for the slow
 *    path (a new or released slab, whole-page blocks), which the per-core caches keep
 *    off the hot path.
 *
 * Known limits
 *  - A double free is always caught when both frees run on the owner, or when either is
 *    remote and they do not race. A remote free of a block that was never handed out is
 *    caught when the owner drains it, unless the owner hands that block out in between.
 *  - A second free of a whole-page block is reported as a foreign pointer (its pages
 *    are no longer the heap's, so the two cannot be told apart).
 *  - Tail meta words of the small classes can be overwritten by an overflow of the slab's
 *    last block; heap_free() then refuses the victim block (-E_CORRUPT) rather than
 *    corrupting the counters.
 */
#include "kernel/mm/heap.h"
#include "lib/align.h"
#include "lib/err.h"
#include "lib/mem.h"

#define BM_WORDS 4u
#define MAX_BLOCKS 256u /* BM_WORDS * 64 */
#define DESC_META 16u /* slabs of at most this many blocks keep their meta in the descriptor */
#define META_SIZE_MASK 0x0fffu
#define META_TAG_SHIFT 12
#define DEFAULT_MAX_ALLOC ((uint64_t)1 << 20)
#define CACHELINE 64u

STATIC_ASSERT(MAX_BLOCKS == BM_WORDS * 64u, "bitmap covers every block");
STATIC_ASSERT(HEAP_TAG__COUNT <= 16, "tags must fit in 4 bits of block meta");
STATIC_ASSERT(HEAP_MAX_SMALL <= META_SIZE_MASK, "sizes must fit in 12 bits of block meta");
STATIC_ASSERT((HEAP_PAGE_SIZE & (HEAP_PAGE_SIZE - 1)) == 0 && (CACHELINE & (CACHELINE - 1)) == 0,
	      "align_up needs powers of two");

static const uint16_t class_size[HEAP_N_CLASSES] = {
	16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256,
	320, 384, 448, 512, 640, 768, 1024, 1280, 1536, 2048,
};

static const char *const tag_names[HEAP_TAG__COUNT] = {
	[HEAP_TAG_OTHER] = "other",
	[HEAP_TAG_KERNEL] = "kernel",
	[HEAP_TAG_TLS_HANDSHAKE] = "tls-handshake",
	[HEAP_TAG_TLS_RECORD] = "tls-record",
	[HEAP_TAG_TCP] = "tcp",
	[HEAP_TAG_MQTT] = "mqtt",
	[HEAP_TAG_STORE] = "store",
};

enum { DESC_FREE, DESC_SMALL, DESC_LARGE };

struct heap_slab {
	struct list link;  /* partial list of the owner (SMALL) or free_slabs (FREE) */
	uint8_t *base;
	uint32_t n_pages;
	uint16_t n_used;
	uint16_t core;     /* owner of a SMALL slab */
	uint8_t kind, cls, tag /* LARGE */, in_partial;
	uint64_t req;      /* LARGE: requested bytes */
	uint16_t dmeta[DESC_META];          /* block meta when the class keeps it here */
	uint64_t used[BM_WORDS];            /* owner-private */
	_Atomic uint64_t pending[BM_WORDS]; /* set by a remote freer, cleared by the owner */
};

/* Single-writer counters (see the concurrency note). */
struct heap_ctr {
	_Atomic uint64_t live[HEAP_N_CLASSES + 1], req[HEAP_N_CLASSES + 1], blk[HEAP_N_CLASSES + 1];
	_Atomic uint64_t tlive[HEAP_TAG__COUNT], treq[HEAP_TAG__COUNT], tblk[HEAP_TAG__COUNT];
	_Atomic uint64_t n_allocs, n_frees, n_remote, n_nomem, n_double, n_foreign, n_corrupt;
};

struct heap_core {
	/* Head of the remote-free stack (first block, NULL when empty): pushed by any core,
	 * emptied only by the owner. Own cache line: it is the only field other cores write. */
	_Atomic(uint8_t *) remote ALIGNED(CACHELINE);
	uint8_t pad_remote[CACHELINE - sizeof(uint8_t *)];
	struct heap_ctr ctr;
	uint32_t n_slabs[HEAP_N_CLASSES];
	uint32_t n_empty[HEAP_N_CLASSES];
	struct list partial[HEAP_N_CLASSES];
};

/* ---- small helpers ----------------------------------------------------------------- */

static inline uint64_t ld(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}
/* Single writer: a relaxed load and store is an exact increment (see the design note). */
static inline void add(_Atomic uint64_t *c, uint64_t d)
{
	atomic_store_explicit(c, ld(c) + d, memory_order_relaxed);
}
static inline void sub(_Atomic uint64_t *c, uint64_t d)
{
	atomic_store_explicit(c, ld(c) - d, memory_order_relaxed);
}

static void lock(struct heap *h)
{
	/* Acquire/release pair: each critical section sees the previous one's writes. */
	while (atomic_flag_test_and_set_explicit(&h->lock, memory_order_acquire))
		;
}
static void unlock(struct heap *h)
{
	atomic_flag_clear_explicit(&h->lock, memory_order_release);
}

static int class_of(size_t size)
{
	for (unsigned c = 0; c < HEAP_N_CLASSES; c++)
		if (size <= class_size[c])
			return (int)c;
	return -1;
}

size_t heap_block_size(size_t size)
{
	int c;
	if (size == 0)
		return 0;
	c = class_of(size);
	if (c >= 0)
		return class_size[c];
	return align_up(size, HEAP_PAGE_SIZE);
}

const char *heap_tag_name(enum heap_tag tag)
{
	return (unsigned)tag < HEAP_TAG__COUNT ? tag_names[tag] : "?";
}

static struct heap_ctr *ctr_of(struct heap *h, uint32_t slot)
{
	return &h->cores[slot].ctr;
}

/* A bug detected on `core`'s behalf: count it there, call the hook, return err. */
static int bug(struct heap *h, uint32_t core, _Atomic uint64_t *counter, const char *what,
	       const void *p, int err)
{
	(void)core;
	add(counter, 1);
	if (h->cfg.bug)
		h->cfg.bug(h->cfg.bug_ctx, what, p);
	return err;
}

/* ---- init -------------------------------------------------------------------------- */

struct layout {
	size_t cores, slabs, page_map, total;
};

static bool layout(const struct heap_config *cfg, struct layout *l)
{
	if (!cfg || cfg->n_cores == 0 || cfg->n_cores > HEAP_MAX_CORES || cfg->max_slabs == 0 ||
	    cfg->va_pages == 0 || (cfg->va_base & (HEAP_PAGE_SIZE - 1)) != 0 ||
	    cfg->va_pages > (UINTPTR_MAX - cfg->va_base) / HEAP_PAGE_SIZE ||
	    cfg->va_pages > UINT32_MAX || cfg->max_slabs >= UINT32_MAX)
		return false;
	l->cores = 0;
	l->slabs = align_up((cfg->n_cores + 1) * sizeof(struct heap_core), CACHELINE);
	l->page_map = l->slabs + align_up((size_t)cfg->max_slabs * sizeof(struct heap_slab), CACHELINE);
	l->total = l->page_map + align_up(cfg->va_pages * sizeof(uint32_t), CACHELINE);
	return true;
}

size_t heap_meta_len(const struct heap_config *cfg)
{
	struct layout l;
	return layout(cfg, &l) ? l.total : 0;
}

/* Slab geometry. Block meta goes in the descriptor when a slab has at most DESC_META
 * blocks (big classes: no block lost to it), else at the slab's tail. Pages: the fewest
 * of 1, 2, 4 wasting at most 1/16 of the slab, else the least waste. */
static void geometry(struct heap *h)
{
	for (unsigned c = 0; c < HEAP_N_CLASSES; c++) {
		unsigned size = class_size[c], best_np = 1, best_nb = 0;
		bool best_in_desc = false;
		uint64_t best_w = UINT64_MAX; /* waste per page, scaled */
		for (unsigned np = 1; np <= 4; np *= 2) {
			unsigned bytes = np * HEAP_PAGE_SIZE;
			unsigned nb = MIN(MAX_BLOCKS, bytes / (size + 2u));
			bool in_desc = bytes / size <= DESC_META;
			if (in_desc)
				nb = bytes / size;
			unsigned waste = bytes - nb * size;
			uint64_t w = (uint64_t)waste * 4 / np;
			if (waste * 16 <= bytes) {
				best_np = np, best_nb = nb, best_in_desc = in_desc;
				break;
			}
			if (w < best_w)
				best_w = w, best_np = np, best_nb = nb, best_in_desc = in_desc;
		}
		h->geo[c].size = (uint16_t)size;
		h->geo[c].n_pages = (uint16_t)best_np;
		h->geo[c].n_blocks = (uint16_t)best_nb;
		h->geo[c].meta_off = best_in_desc ? 0 : (uint16_t)(best_np * HEAP_PAGE_SIZE - 2u * best_nb);
	}
}

int heap_init(struct heap *h, const struct heap_config *cfg, void *meta, size_t meta_len)
{
	struct layout l;
	uint8_t *m = meta;
	if (!h || !layout(cfg, &l) || !meta || ((uintptr_t)meta & (CACHELINE - 1)) != 0 ||
	    !cfg->pages.alloc || !cfg->pages.free)
		return -E_INVAL;
	if (meta_len < l.total)
		return -E_NOMEM;
	memset(h, 0, sizeof *h);
	memset(meta, 0, l.total);
	h->cfg = *cfg;
	if (h->cfg.max_alloc_bytes == 0)
		h->cfg.max_alloc_bytes = DEFAULT_MAX_ALLOC;
	if (h->cfg.max_alloc_bytes > (uint64_t)UINT32_MAX * HEAP_PAGE_SIZE)
		return -E_INVAL;
	h->cores = (struct heap_core *)(void *)(m + l.cores);
	h->slabs = (struct heap_slab *)(void *)(m + l.slabs);
	h->page_map = (_Atomic uint32_t *)(void *)(m + l.page_map);
	/* Relaxed initialisation: nothing is shared until the caller publishes the heap
	 * to the other cores (which starts them, a release/acquire hand-off). */
	atomic_flag_clear_explicit(&h->lock, memory_order_relaxed);
	for (uint32_t c = 0; c <= cfg->n_cores; c++)
		for (unsigned k = 0; k < HEAP_N_CLASSES; k++)
			list_init(&h->cores[c].partial[k]);
	for (unsigned k = 0; k <= HEAP_MAX_SMALL / 16; k++)
		h->class_lut[k] = (uint8_t)class_of(k ? k * 16u : 1u);
	list_init(&h->free_slabs);
	for (uint32_t i = 0; i < cfg->max_slabs; i++) {
		h->slabs[i].kind = DESC_FREE;
		list_push_back(&h->free_slabs, &h->slabs[i].link);
	}
	geometry(h);
	return 0;
}

/* ---- pages, descriptors and the page map (under lock) ------------------------------ */

static size_t page_index(const struct heap *h, uintptr_t a)
{
	return (a - h->cfg.va_base) / HEAP_PAGE_SIZE;
}

static bool in_window(const struct heap *h, uintptr_t a, size_t n_pages)
{
	size_t win = h->cfg.va_pages * HEAP_PAGE_SIZE;
	return a >= h->cfg.va_base && a - h->cfg.va_base < win &&
	       n_pages <= (win - (a - h->cfg.va_base)) / HEAP_PAGE_SIZE;
}

/* Take pages and a descriptor; NULL on exhaustion. Caller holds the lock. */
static struct heap_slab *desc_take(struct heap *h, uint32_t n_pages, uint8_t kind)
{
	struct list *l;
	struct heap_slab *d;
	void *mem = NULL;
	/* Relaxed throughout desc_take/desc_give: writers hold the lock, which orders them;
	 * lock-free readers are snapshots (any recent value will do) and the page-map load
	 * in heap_free (ordered by the pointer's own hand-off, see the design note). */
	uint64_t held = atomic_load_explicit(&h->pages_held, memory_order_relaxed);

	if (h->cfg.limit_pages && held + n_pages > h->cfg.limit_pages)
		return NULL;
	l = list_pop_front(&h->free_slabs);
	if (!l)
		return NULL;
	d = LIST_ENTRY(l, struct heap_slab, link);
	if (h->cfg.pages.alloc(h->cfg.pages.ctx, n_pages, &mem) != 0 || !mem) {
		list_push_front(&h->free_slabs, &d->link);
		return NULL;
	}
	if (((uintptr_t)mem & (HEAP_PAGE_SIZE - 1)) != 0 || !in_window(h, (uintptr_t)mem, n_pages)) {
		/* The provider broke its contract: give the pages back and refuse. */
		if (h->cfg.bug)
			h->cfg.bug(h->cfg.bug_ctx, "heap: page provider returned memory outside the window", mem);
		(void)h->cfg.pages.free(h->cfg.pages.ctx, mem, n_pages);
		list_push_front(&h->free_slabs, &d->link);
		return NULL;
	}
	d->base = mem;
	d->n_pages = n_pages;
	d->n_used = 0;
	d->kind = kind;
	d->in_partial = 0;
	d->req = 0;
	d->tag = 0;
	memset(d->dmeta, 0, sizeof d->dmeta);
	memset(d->used, 0, sizeof d->used);
	for (unsigned w = 0; w < BM_WORDS; w++)
		atomic_store_explicit(&d->pending[w], 0, memory_order_relaxed);
	uint32_t id = (uint32_t)(d - h->slabs) + 1;
	size_t first = page_index(h, (uintptr_t)mem);
	for (size_t k = 0; k < n_pages; k++)
		atomic_store_explicit(&h->page_map[first + k], id, memory_order_relaxed);
	atomic_store_explicit(&h->pages_held, held + n_pages, memory_order_relaxed);
	return d;
}

/* Give a descriptor's pages back. Caller holds the lock; the memory is already zero. */
static void desc_give(struct heap *h, struct heap_slab *d)
{
	size_t first = page_index(h, (uintptr_t)d->base);
	for (size_t k = 0; k < d->n_pages; k++)
		atomic_store_explicit(&h->page_map[first + k], 0, memory_order_relaxed);
	if (h->cfg.pages.free(h->cfg.pages.ctx, d->base, d->n_pages) != 0 && h->cfg.bug)
		h->cfg.bug(h->cfg.bug_ctx, "heap: page provider refused our pages back", d->base);
	atomic_store_explicit(&h->pages_held,
			      atomic_load_explicit(&h->pages_held, memory_order_relaxed) - d->n_pages,
			      memory_order_relaxed);
	d->kind = DESC_FREE;
	d->base = NULL;
	list_push_back(&h->free_slabs, &d->link);
}

/* ---- slabs (owner core only) -------------------------------------------------------- */

/* meta_off 0 means "in the descriptor" (the tail array never starts at offset 0). */
static uint16_t *slab_meta(const struct heap *h, struct heap_slab *d)
{
	if (h->geo[d->cls].meta_off == 0)
		return d->dmeta;
	return (uint16_t *)(void *)(d->base + h->geo[d->cls].meta_off);
}

static bool meta_valid(unsigned cls, uint16_t m)
{
	unsigned req = m & META_SIZE_MASK, tag = (unsigned)m >> META_TAG_SHIFT;
	unsigned lo = cls ? class_size[cls - 1] : 0;
	return req > lo && req <= class_size[cls] && tag < HEAP_TAG__COUNT;
}

static struct heap_slab *slab_new(struct heap *h, uint32_t core, unsigned cls)
{
	struct heap_core *hc = &h->cores[core];
	struct heap_slab *d;
	lock(h);
	d = desc_take(h, h->geo[cls].n_pages, DESC_SMALL);
	if (d) {
		d->cls = (uint8_t)cls;
		d->core = (uint16_t)core;
		/* Relaxed: under the lock; read only by snapshots. */
		atomic_store_explicit(&h->n_slabs, atomic_load_explicit(&h->n_slabs, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	}
	unlock(h);
	if (!d)
		return NULL;
	/* Fresh pages may hold anything: zero them so FREE blocks and meta are zero (inv. 2). */
	memset(d->base, 0, (size_t)d->n_pages * HEAP_PAGE_SIZE);
	/* Bits past the last block are set so they are never handed out (inv. 2). */
	for (unsigned w = 0, nb = h->geo[cls].n_blocks; w < BM_WORDS; w++) {
		if (nb >= (w + 1) * 64)
			continue;
		d->used[w] = nb <= w * 64 ? UINT64_MAX : UINT64_MAX << (nb - w * 64);
	}
	list_push_front(&hc->partial[cls], &d->link);
	d->in_partial = 1;
	hc->n_slabs[cls]++;
	hc->n_empty[cls]++;
	return d;
}

static void slab_release(struct heap *h, uint32_t core, struct heap_slab *d)
{
	struct heap_core *hc = &h->cores[core];
	list_unlink(&d->link);
	d->in_partial = 0;
	hc->n_slabs[d->cls]--;
	lock(h);
	/* Relaxed: under the lock; read only by snapshots. */
	atomic_store_explicit(&h->n_slabs, atomic_load_explicit(&h->n_slabs, memory_order_relaxed) - 1,
			      memory_order_relaxed);
	desc_give(h, d);
	unlock(h);
}

/* Blocks are 16-byte aligned multiples of 16; `from` is 0 or 8. Four words per turn
 * OR-ed together; __builtin_memcpy stays an inline load even in freestanding
 * (-fno-builtin) code. */
static bool block_is_zero(const uint8_t *p, size_t n, size_t from)
{
	uint64_t acc = 0, w[4];
	size_t i = from;
	for (; i + 32 <= n; i += 32) {
		__builtin_memcpy(w, p + i, 32);
		acc |= w[0] | w[1] | w[2] | w[3];
	}
	for (; i < n; i += 8) {
		__builtin_memcpy(w, p + i, 8);
		acc |= w[0];
	}
	return acc == 0;
}

/* USED or PENDING -> FREE on the owner core: wipe, clear meta and bit, update lists and
 * counters, release the slab if it is a second empty one. */
static int block_release(struct heap *h, uint32_t core, struct heap_slab *d, unsigned i)
{
	struct heap_core *hc = &h->cores[core];
	struct heap_ctr *ct = &hc->ctr;
	unsigned cls = d->cls, size = class_size[cls];
	uint16_t *meta = slab_meta(h, d);
	uint16_t m = meta[i];
	uint8_t *blk = d->base + (size_t)i * size;
	if (!meta_valid(cls, m))
		return bug(h, core, &ct->n_corrupt, "heap: block bookkeeping overwritten (overflow?)", blk,
			   -E_CORRUPT);
	unsigned req = m & META_SIZE_MASK, tag = (unsigned)m >> META_TAG_SHIFT;
	memset(blk, 0, size);
	meta[i] = 0;
	d->used[i / 64] &= ~((uint64_t)1 << (i % 64));
	d->n_used--;
	sub(&ct->live[cls], 1);
	sub(&ct->req[cls], req);
	sub(&ct->blk[cls], size);
	sub(&ct->tlive[tag], 1);
	sub(&ct->treq[tag], req);
	sub(&ct->tblk[tag], size);
	add(&ct->n_frees, 1);
	if (!d->in_partial) {
		list_push_front(&hc->partial[cls], &d->link);
		d->in_partial = 1;
	}
	if (d->n_used == 0) {
		if (hc->n_empty[cls] >= 1)
			slab_release(h, core, d);
		else
			hc->n_empty[cls]++;
	}
	return 0;
}

/* Take back the blocks other cores freed for `core`. */
static void drain(struct heap *h, uint32_t core)
{
	struct heap_core *hc = &h->cores[core];
	uint8_t *n;
	/* Relaxed peek: an empty stack costs one load; a push we miss is taken next time. */
	if (atomic_load_explicit(&hc->remote, memory_order_relaxed) == NULL)
		return;
	/* Acquire: pairs with the pushers' release CAS, so each block's wipe and link are
	 * visible. Taking the whole stack at once means no node is ever popped singly, so
	 * the pushers' CAS cannot suffer ABA. */
	n = atomic_exchange_explicit(&hc->remote, NULL, memory_order_acquire);
	while (n) {
		uint8_t *blk = n, *next;
		/* Relaxed: our own slab, mapped by this core before the block was handed out. */
		uint32_t e = atomic_load_explicit(&h->page_map[page_index(h, (uintptr_t)blk)], memory_order_relaxed);
		struct heap_slab *d = &h->slabs[e - 1]; /* validated by the pusher; our own slab */
		unsigned i = (unsigned)((size_t)(blk - d->base) / class_size[d->cls]);
		uint64_t bit = (uint64_t)1 << (i % 64);
		uint8_t *const nil = NULL;
		memcpy(&next, blk, sizeof next);
		memcpy(blk, &nil, sizeof nil); /* the block is all zero again */
		/* Relaxed: pending only guards against a second remote free; the block is
		 * handed out again only by this core, after this point. */
		atomic_fetch_and_explicit(&d->pending[i / 64], ~bit, memory_order_relaxed);
		if (!(d->used[i / 64] & bit))
			(void)bug(h, core, &hc->ctr.n_double, "heap: remote free of a free block", blk, -E_INVAL);
		else
			(void)block_release(h, core, d, i);
		n = next;
	}
}

void heap_poll(struct heap *h, uint32_t core)
{
	if (core < h->cfg.n_cores)
		drain(h, core);
}

void heap_trim(struct heap *h, uint32_t core)
{
	struct heap_core *hc;
	struct list *it, *tmp;
	if (core >= h->cfg.n_cores)
		return;
	drain(h, core);
	hc = &h->cores[core];
	for (unsigned c = 0; c < HEAP_N_CLASSES; c++) {
		LIST_FOR_EACH_SAFE(it, tmp, &hc->partial[c]) {
			struct heap_slab *d = LIST_ENTRY(it, struct heap_slab, link);
			if (d->n_used == 0) {
				hc->n_empty[c]--;
				slab_release(h, core, d);
			}
		}
	}
}

/* ---- whole pages --------------------------------------------------------------------- */

static int large_alloc(struct heap *h, uint32_t core, size_t size, unsigned tag, void **out)
{
	uint32_t np = (uint32_t)((size + HEAP_PAGE_SIZE - 1) / HEAP_PAGE_SIZE);
	struct heap_ctr *ct = ctr_of(h, h->cfg.n_cores);
	struct heap_slab *d;
	lock(h);
	d = desc_take(h, np, DESC_LARGE);
	if (d) {
		d->req = size;
		d->tag = (uint8_t)tag;
		d->core = HEAP_MAX_CORES;
		/* The LARGE slot's counters are written only under the lock. */
		add(&ct->live[HEAP_LARGE], 1);
		add(&ct->req[HEAP_LARGE], size);
		add(&ct->blk[HEAP_LARGE], (uint64_t)np * HEAP_PAGE_SIZE);
		add(&ct->tlive[tag], 1);
		add(&ct->treq[tag], size);
		add(&ct->tblk[tag], (uint64_t)np * HEAP_PAGE_SIZE);
		add(&ct->n_allocs, 1);
	}
	unlock(h);
	if (!d) {
		add(&h->cores[core].ctr.n_nomem, 1);
		return -E_NOMEM;
	}
	memset(d->base, 0, (size_t)np * HEAP_PAGE_SIZE);
	*out = d->base;
	return 0;
}

static int large_free(struct heap *h, uint32_t core, uint8_t *p)
{
	struct heap_ctr *ct = ctr_of(h, h->cfg.n_cores);
	struct heap_slab *d;
	uint32_t e;
	lock(h);
	/* Relaxed: under the lock, which orders every page-map write. */
	e = atomic_load_explicit(&h->page_map[page_index(h, (uintptr_t)p)], memory_order_relaxed);
	d = e ? &h->slabs[e - 1] : NULL;
	if (!d || d->kind != DESC_LARGE || d->base != p) {
		unlock(h);
		return bug(h, core, &h->cores[core].ctr.n_foreign,
			   "heap: free of a pointer inside or outside a page block", p, -E_INVAL);
	}
	uint64_t bytes = (uint64_t)d->n_pages * HEAP_PAGE_SIZE;
	memset(p, 0, (size_t)bytes);
	sub(&ct->live[HEAP_LARGE], 1);
	sub(&ct->req[HEAP_LARGE], d->req);
	sub(&ct->blk[HEAP_LARGE], bytes);
	sub(&ct->tlive[d->tag], 1);
	sub(&ct->treq[d->tag], d->req);
	sub(&ct->tblk[d->tag], bytes);
	add(&ct->n_frees, 1);
	desc_give(h, d);
	unlock(h);
	return 0;
}

/* ---- public ------------------------------------------------------------------------- */

int heap_alloc(struct heap *h, uint32_t core, size_t size, enum heap_tag tag, void **out)
{
	struct heap_core *hc;
	struct heap_slab *d;
	int cls;

	if (!h || !out || core >= h->cfg.n_cores || size == 0 || (unsigned)tag >= HEAP_TAG__COUNT)
		return -E_INVAL;
	*out = NULL;
	if (size > h->cfg.max_alloc_bytes)
		return -E_RANGE;
	hc = &h->cores[core];
	drain(h, core);
	if (size > HEAP_MAX_SMALL)
		return large_alloc(h, core, size, (unsigned)tag, out);
	cls = h->class_lut[(size + 15) / 16];

	/* A FREE block whose pending bit is set is being freed remotely by mistake (a bug
	 * drain() will report): never hand it out. If that leaves the first partial slab
	 * with nothing to give, use a new slab. */
	unsigned i = MAX_BLOCKS, size_c = class_size[cls];
	d = NULL;
	if (!list_empty(&hc->partial[cls])) {
		d = LIST_ENTRY(hc->partial[cls].next, struct heap_slab, link);
		for (unsigned w = 0; w < BM_WORDS; w++) {
			/* Relaxed: see remote_free(); only a buggy free sets these bits here. */
			uint64_t avail = ~d->used[w] & ~atomic_load_explicit(&d->pending[w], memory_order_relaxed);
			if (avail) {
				i = w * 64 + (unsigned)__builtin_ctzll(avail);
				break;
			}
		}
	}
	if (i == MAX_BLOCKS) {
		d = slab_new(h, core, (unsigned)cls);
		if (!d) {
			add(&hc->ctr.n_nomem, 1);
			return -E_NOMEM;
		}
		i = 0;
	}
	uint8_t *blk = d->base + (size_t)i * size_c;
	if (!block_is_zero(blk, size_c, 0)) {
		/* Written after it was freed: report, then wipe and use it. */
		(void)bug(h, core, &hc->ctr.n_corrupt, "heap: free block was written (use after free)", blk,
			  -E_CORRUPT);
		memset(blk, 0, size_c);
	}
	if (d->n_used == 0)
		hc->n_empty[cls]--;
	d->used[i / 64] |= (uint64_t)1 << (i % 64);
	d->n_used++;
	slab_meta(h, d)[i] = (uint16_t)(size | (size_t)tag << META_TAG_SHIFT);
	if (d->n_used == h->geo[cls].n_blocks) {
		list_unlink(&d->link);
		d->in_partial = 0;
	}
	add(&hc->ctr.live[cls], 1);
	add(&hc->ctr.req[cls], size);
	add(&hc->ctr.blk[cls], size_c);
	add(&hc->ctr.tlive[tag], 1);
	add(&hc->ctr.treq[tag], size);
	add(&hc->ctr.tblk[tag], size_c);
	add(&hc->ctr.n_allocs, 1);
	*out = blk;
	return 0;
}

int heap_calloc(struct heap *h, uint32_t core, size_t n, size_t size, enum heap_tag tag, void **out)
{
	if (!out)
		return -E_INVAL;
	*out = NULL;
	if (n == 0 || size == 0)
		return -E_INVAL;
	if (n > SIZE_MAX / size)
		return -E_RANGE;
	return heap_alloc(h, core, n * size, tag, out); /* blocks are handed out zeroed */
}

static int remote_free(struct heap *h, uint32_t core, struct heap_slab *d, unsigned i, uint8_t *blk)
{
	struct heap_core *owner = &h->cores[d->core];
	uint64_t bit = (uint64_t)1 << (i % 64);
	/* Relaxed: the bit only has to be unique (no two cores push the same block); the
	 * block's contents travel with the release CAS below. */
	uint64_t old = atomic_fetch_or_explicit(&d->pending[i / 64], bit, memory_order_relaxed);
	if (old & bit)
		return bug(h, core, &h->cores[core].ctr.n_double, "heap: double free (remote)", blk, -E_INVAL);
	memset(blk, 0, class_size[d->cls]);
	uint8_t *head = atomic_load_explicit(&owner->remote, memory_order_relaxed);
	do {
		memcpy(blk, &head, sizeof head);
		/* Release on success: the wipe and the link are visible to the owner's
		 * acquire exchange in drain(). Relaxed on failure: we only retry. */
	} while (!atomic_compare_exchange_weak_explicit(&owner->remote, &head, blk,
							memory_order_release, memory_order_relaxed));
	add(&h->cores[core].ctr.n_remote, 1);
	return 0;
}

int heap_free(struct heap *h, uint32_t core, void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct heap_ctr *ct;
	struct heap_slab *d;
	uint32_t e;

	if (!p)
		return 0;
	if (!h || core >= h->cfg.n_cores)
		return -E_INVAL;
	ct = &h->cores[core].ctr;
	if (!in_window(h, a, 1))
		return bug(h, core, &ct->n_foreign, "heap: free of a pointer outside the heap", p, -E_INVAL);
	/* Relaxed: a live pointer's page-map entry was written before the pointer was
	 * handed out and reached us through a release/acquire hand-off (design note). */
	e = atomic_load_explicit(&h->page_map[page_index(h, a)], memory_order_relaxed);
	if (e == 0 || e > h->cfg.max_slabs)
		return bug(h, core, &ct->n_foreign, "heap: free of a pointer the heap does not own", p, -E_INVAL);
	d = &h->slabs[e - 1];
	if (d->kind == DESC_LARGE)
		return large_free(h, core, p);
	if (d->kind != DESC_SMALL)
		return bug(h, core, &ct->n_foreign, "heap: free of a pointer the heap does not own", p, -E_INVAL);
	size_t off = (size_t)(a - (uintptr_t)d->base), size = class_size[d->cls];
	if (off % size != 0 || off / size >= h->geo[d->cls].n_blocks)
		return bug(h, core, &ct->n_foreign, "heap: free of a pointer inside a block", p, -E_INVAL);
	unsigned i = (unsigned)(off / size);
	if (d->core != core)
		return remote_free(h, core, d, i, p);
	uint64_t bit = (uint64_t)1 << (i % 64);
	/* Relaxed: a set bit was set by a remote free of this very block (a double free). */
	if ((atomic_load_explicit(&d->pending[i / 64], memory_order_relaxed) & bit) ||
	    !(d->used[i / 64] & bit))
		return bug(h, core, &ct->n_double, "heap: double free", p, -E_INVAL);
	return block_release(h, core, d, i);
}

void heap_snapshot(struct heap *h, struct heap_snapshot *out)
{
	memset(out, 0, sizeof *out);
	for (uint32_t s = 0; s <= h->cfg.n_cores; s++) {
		struct heap_ctr *ct = ctr_of(h, s);
		for (unsigned c = 0; c <= HEAP_N_CLASSES; c++) {
			out->cls[c].n_live += ld(&ct->live[c]);
			out->cls[c].requested_bytes += ld(&ct->req[c]);
			out->cls[c].block_bytes += ld(&ct->blk[c]);
		}
		for (unsigned t = 0; t < HEAP_TAG__COUNT; t++) {
			out->tag[t].n_live += ld(&ct->tlive[t]);
			out->tag[t].requested_bytes += ld(&ct->treq[t]);
			out->tag[t].block_bytes += ld(&ct->tblk[t]);
		}
		out->n_allocs += ld(&ct->n_allocs);
		out->n_frees += ld(&ct->n_frees);
		out->n_remote_frees += ld(&ct->n_remote);
		out->n_nomem += ld(&ct->n_nomem);
		out->n_double_free += ld(&ct->n_double);
		out->n_foreign_free += ld(&ct->n_foreign);
		out->n_corrupt += ld(&ct->n_corrupt);
	}
	for (unsigned c = 0; c <= HEAP_N_CLASSES; c++) {
		out->cls[c].block_size = c < HEAP_N_CLASSES ? class_size[c] : 0;
		out->n_live += out->cls[c].n_live;
		out->requested_bytes += out->cls[c].requested_bytes;
		out->block_bytes += out->cls[c].block_bytes;
	}
	/* Relaxed: statistics, no other memory depends on them. */
	out->pages_held = atomic_load_explicit(&h->pages_held, memory_order_relaxed);
	out->n_slabs = atomic_load_explicit(&h->n_slabs, memory_order_relaxed);
}

void heap_where(struct heap *h, uintptr_t a, struct heap_where *out)
{
	memset(out, 0, sizeof *out);
	if (!in_window(h, a, 1))
		return;
	out->kind = HEAP_WHERE_PAGE;
	/* Relaxed: a description, exact only for blocks the caller holds (see heap.h). */
	uint32_t e = atomic_load_explicit(&h->page_map[page_index(h, a)], memory_order_relaxed);
	if (e == 0 || e > h->cfg.max_slabs)
		return;
	struct heap_slab *d = &h->slabs[e - 1];
	uintptr_t base = (uintptr_t)d->base;
	if (d->kind == DESC_LARGE) {
		out->kind = HEAP_WHERE_LARGE;
		out->block = base;
		out->block_size = (size_t)d->n_pages * HEAP_PAGE_SIZE;
		out->requested = (size_t)d->req;
		out->tag = (enum heap_tag)(d->tag % HEAP_TAG__COUNT);
		return;
	}
	if (d->kind != DESC_SMALL || d->cls >= HEAP_N_CLASSES || a < base)
		return;
	size_t size = class_size[d->cls], i = (a - base) / size, nb = h->geo[d->cls].n_blocks;
	if (i >= nb) {
		out->kind = HEAP_WHERE_SLAB_TAIL;
		out->prev = nb ? base + (nb - 1) * size : 0;
		return;
	}
	uint16_t m = slab_meta(h, d)[i];
	out->kind = m ? HEAP_WHERE_USED : HEAP_WHERE_FREE;
	out->block = base + i * size;
	out->block_size = size;
	out->requested = m & META_SIZE_MASK;
	out->tag = (enum heap_tag)((unsigned)m >> META_TAG_SHIFT);
	out->prev = i ? out->block - size : 0;
}

/* ---- invariants ---------------------------------------------------------------------- */

static int check_slab(struct heap *h, struct heap_slab *d, uint64_t (*sum)[6], size_t *n_pending)
{
	unsigned cls = d->cls, nb, size, n_used = 0;
	uint16_t *meta;
	if (d->core >= h->cfg.n_cores || cls >= HEAP_N_CLASSES || d->n_pages != h->geo[cls].n_pages)
		return -E_CORRUPT;
	nb = h->geo[cls].n_blocks;
	size = class_size[cls];
	meta = slab_meta(h, d);
	for (unsigned b = 0; b < MAX_BLOCKS; b++) {
		bool used = (d->used[b / 64] >> (b % 64)) & 1u;
		bool pend = (atomic_load_explicit(&d->pending[b / 64], memory_order_relaxed) >> (b % 64)) & 1u;
		if (b >= nb) {
			if (!used || pend)
				return -E_CORRUPT; /* 2: padding bits */
			continue;
		}
		const uint8_t *blk = d->base + (size_t)b * size;
		if (!used) {
			if (pend || meta[b] != 0 || !block_is_zero(blk, size, 0))
				return -E_CORRUPT; /* 2: FREE is zero */
			continue;
		}
		n_used++;
		if (!meta_valid(cls, meta[b]))
			return -E_CORRUPT;
		if (pend) {
			(*n_pending)++;
			if (!block_is_zero(blk, size, 8))
				return -E_CORRUPT;
		}
		unsigned req = meta[b] & META_SIZE_MASK, tag = (unsigned)meta[b] >> META_TAG_SHIFT;
		sum[cls][0]++;
		sum[cls][1] += req;
		sum[cls][2] += size;
		sum[HEAP_N_CLASSES + 1 + tag][0]++;
		sum[HEAP_N_CLASSES + 1 + tag][1] += req;
		sum[HEAP_N_CLASSES + 1 + tag][2] += size;
	}
	return n_used == d->n_used ? 0 : -E_CORRUPT;
}

/* Expected counters of one slot: rows 0..N-1 classes, N large, N+1.. tags. */
static uint64_t expect[HEAP_N_CLASSES + 1 + HEAP_TAG__COUNT][6];

static int check_counters(struct heap *h, uint32_t slot)
{
	struct heap_ctr *ct = ctr_of(h, slot);
	for (unsigned c = 0; c <= HEAP_N_CLASSES; c++)
		if (ld(&ct->live[c]) != expect[c][0] || ld(&ct->req[c]) != expect[c][1] ||
		    ld(&ct->blk[c]) != expect[c][2])
			return -E_CORRUPT;
	for (unsigned t = 0; t < HEAP_TAG__COUNT; t++) {
		const uint64_t *x = expect[HEAP_N_CLASSES + 1 + t];
		if (ld(&ct->tlive[t]) != x[0] || ld(&ct->treq[t]) != x[1] || ld(&ct->tblk[t]) != x[2])
			return -E_CORRUPT;
	}
	return 0;
}

int heap_check_invariants(struct heap *h)
{
	uint64_t pages = 0;
	size_t n_pending = 0, n_nodes = 0, n_free_desc = 0;
	struct list *it;
	int err = 0;

	/* Relaxed loads below: the heap is quiescent (contract) and we hold the lock. */
	lock(h);
	/* 1: page map against descriptors. */
	for (size_t k = 0; k < h->cfg.va_pages && !err; k++) {
		uint32_t e = atomic_load_explicit(&h->page_map[k], memory_order_relaxed);
		if (e == 0)
			continue;
		struct heap_slab *d = &h->slabs[e - 1];
		uintptr_t a = h->cfg.va_base + k * HEAP_PAGE_SIZE;
		if (e > h->cfg.max_slabs || d->kind == DESC_FREE || a < (uintptr_t)d->base ||
		    a >= (uintptr_t)d->base + (size_t)d->n_pages * HEAP_PAGE_SIZE)
			err = -E_CORRUPT;
		pages++;
	}
	LIST_FOR_EACH(it, &h->free_slabs) {
		if (LIST_ENTRY(it, struct heap_slab, link)->kind != DESC_FREE || ++n_free_desc > h->cfg.max_slabs)
			return unlock(h), -E_CORRUPT;
	}
	if (pages != atomic_load_explicit(&h->pages_held, memory_order_relaxed))
		err = -E_CORRUPT;
	/* 2-4 per slot. */
	for (uint32_t s = 0; s <= h->cfg.n_cores && !err; s++) {
		struct heap_core *hc = &h->cores[s];
		uint32_t n_slabs[HEAP_N_CLASSES] = { 0 }, n_empty[HEAP_N_CLASSES] = { 0 };
		uint32_t n_partial[HEAP_N_CLASSES] = { 0 };
		memset(expect, 0, sizeof expect);
		for (uint32_t i = 0; i < h->cfg.max_slabs && !err; i++) {
			struct heap_slab *d = &h->slabs[i];
			if (s == h->cfg.n_cores && d->kind == DESC_LARGE) {
				uint64_t bytes = (uint64_t)d->n_pages * HEAP_PAGE_SIZE;
				if (d->tag >= HEAP_TAG__COUNT || d->req == 0 || d->req > bytes)
					err = -E_CORRUPT;
				expect[HEAP_N_CLASSES][0]++;
				expect[HEAP_N_CLASSES][1] += d->req;
				expect[HEAP_N_CLASSES][2] += bytes;
				expect[HEAP_N_CLASSES + 1 + d->tag % HEAP_TAG__COUNT][0]++;
				expect[HEAP_N_CLASSES + 1 + d->tag % HEAP_TAG__COUNT][1] += d->req;
				expect[HEAP_N_CLASSES + 1 + d->tag % HEAP_TAG__COUNT][2] += bytes;
			}
			if (d->kind != DESC_SMALL || d->core != s)
				continue;
			err = check_slab(h, d, expect, &n_pending);
			n_slabs[d->cls]++;
			n_empty[d->cls] += d->n_used == 0;
			n_partial[d->cls] += d->n_used < h->geo[d->cls].n_blocks;
			if ((d->n_used < h->geo[d->cls].n_blocks) != (d->in_partial != 0))
				err = -E_CORRUPT; /* 3 */
		}
		if (!err)
			err = check_counters(h, s); /* 4 */
		for (unsigned c = 0; c < HEAP_N_CLASSES && !err && s < h->cfg.n_cores; c++) {
			uint32_t listed = 0;
			LIST_FOR_EACH(it, &hc->partial[c]) {
				struct heap_slab *d = LIST_ENTRY(it, struct heap_slab, link);
				if (d->kind != DESC_SMALL || d->core != s || d->cls != c || ++listed > h->cfg.max_slabs)
					return unlock(h), -E_CORRUPT;
			}
			if (listed != n_partial[c] || hc->n_slabs[c] != n_slabs[c] || hc->n_empty[c] != n_empty[c])
				err = -E_CORRUPT; /* 3 */
		}
		/* 5: walk the remote stack (bounded by the number of blocks that can exist). */
		for (uint8_t *n = atomic_load_explicit(&hc->remote, memory_order_relaxed); n && !err;) {
			const uint8_t *node = n;
			if (++n_nodes > (size_t)h->cfg.max_slabs * MAX_BLOCKS || !in_window(h, (uintptr_t)n, 1))
				err = -E_CORRUPT;
			else
				memcpy(&n, node, sizeof n); /* the link the pusher stored */
		}
	}
	if (!err && n_nodes != n_pending)
		err = -E_CORRUPT;
	unlock(h);
	return err;
}
