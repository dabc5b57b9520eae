/* SPDX-License-Identifier: MIT
 *
 * Arm MTE (FEAT_MTE2) for the kernel heap: the per-core tag generator, the tag hooks kheap
 * calls (kernel/heap.h, struct kheap_tag_ops) and the decoding of a tag check fault for
 * trap.c. mmu.c detects MTE, maps RAM Normal Tagged and turns on TBI, TCMA and synchronous
 * tag checks; this file is used only when it did.
 * Invariants: (1) only heap blocks carry a tag; a pointer with tag 0 is never checked
 * (TCR_EL1.TCMA0), so the image, the stacks, the page allocator's pages (DMA) and every
 * untagged pointer run exactly as without MTE; (2) tag 0 is never handed out
 * (GCR_EL1.Exclude), so [p + requested, block end) and fresh pages (tag 0) match no heap
 * pointer; (3) a freed block's tag becomes mte_next(old) != old; a new block's tag is
 * none of 0, the block's current tag, the tag before it (mte_prev of the current: the
 * block's last allocation) and its neighbours' in the same page, so an overflow into the
 * next block of the page and a stale pointer into a block freed and handed out once more
 * fault deterministically, older stale pointers with probability 1 - 1/11 or better;
 * (4) the heap gets the hooks only after the boot's self-test (a64_mte_selftest) saw the
 * tag storage keep one tag per granule. Allocates nothing; the fault decoding only reads.
 */
#include "arch/aarch64/a64.h"
#include <stdatomic.h>

#include "kernel/heap.h"
#include "lib/fmt.h"

#define MTE_ASM ".arch armv8.5-a+memtag\n\t" /* the assembler only: no -march change */
#define MTE_TAG_SHIFT 56
#define MTE_TOP_BYTE (0xffull << MTE_TAG_SHIFT)
#define MTE_GRANULE 16u

STATIC_ASSERT(MTE_GRANULE == KHEAP_TAG_GRANULE, "the heap's granule is MTE's");

static _Atomic bool mte_enabled; /* every core stores true: relaxed */

static uint64_t mte_plain(uint64_t p)
{
	return p & ~MTE_TOP_BYTE;
}

static uint32_t mte_tag_of(uint64_t p)
{
	return (uint32_t)(p >> MTE_TAG_SHIFT) & 0xfu;
}

/* 1..15 in a cycle: a freed block's tag, and back. */
static uint32_t mte_next(uint32_t t)
{
	return t % 15u + 1u;
}
static uint32_t mte_prev(uint32_t t)
{
	return (t + 13u) % 15u + 1u;
}

/* The allocation tag of the granule holding plain address a. */
static uint32_t mte_ldg(uint64_t a)
{
	uint64_t v = a;
	__asm__ volatile(MTE_ASM "ldg %0, [%1]" : "+r"(v) : "r"(a & ~(uint64_t)(MTE_GRANULE - 1)) : "memory");
	return mte_tag_of(v);
}

/* Tag t on [a, a + len) (plain, granule aligned, a whole number of granules). */
static void mte_set(uint64_t a, uint64_t len, uint32_t t)
{
	uint64_t p = mte_plain(a) | (uint64_t)t << MTE_TAG_SHIFT;
	for (; len >= 2u * MTE_GRANULE; len -= 2u * MTE_GRANULE, p += 2u * MTE_GRANULE)
		__asm__ volatile(MTE_ASM "st2g %0, [%0]" : : "r"(p) : "memory");
	if (len)
		__asm__ volatile(MTE_ASM "stg %0, [%0]" : : "r"(p) : "memory");
}

/* GCR_EL1: IRG never picks tag 0, from RGSR_EL1's pseudo-random generator, seeded here
 * from RNDR (else the counter: weak, still distinct per core and boot). On each core. */
void a64_mte_core_init(void)
{
	uint64_t seed = 0;
	if (!a64_rndr(&seed))
		seed = A64_SYSREG_READ(cntvct_el0) * 0x9e3779b97f4a7c15ull;
	seed = (seed >> 7) & 0xffffu;
	if (seed == 0)
		seed = 1; /* a zero seed would repeat one tag */
	A64_SYSREG_WRITE(s3_0_c1_c0_6, 1u);        /* GCR_EL1: Exclude = {0}, RRND = 0 */
	A64_SYSREG_WRITE(s3_0_c1_c0_5, seed << 8); /* RGSR_EL1.SEED */
	a64_isb();
	atomic_store_explicit(&mte_enabled, true, memory_order_relaxed);
}

/* Four granules of one page (0, 1, 2 and 64) given four tags must read them back: a tag
 * storage that keeps fewer (QEMU before 8.0 under TCG keeps two per page: ADR) would make
 * every block of a page share its neighbours' tags. The tags go back to 0; the data is
 * never touched. */
bool a64_mte_selftest(uint64_t page)
{
	static const uint32_t off[4] = { 0, MTE_GRANULE, 2u * MTE_GRANULE, 64u * MTE_GRANULE };
	bool ok = true;
	for (uint32_t i = 0; i < 4; i++)
		mte_set(page + off[i], MTE_GRANULE, i + 1u);
	for (uint32_t i = 0; i < 4; i++)
		ok = ok && mte_ldg(page + off[i]) == i + 1u;
	for (uint32_t i = 0; i < 4; i++)
		mte_set(page + off[i], MTE_GRANULE, 0);
	if (!ok)
		atomic_store_explicit(&mte_enabled, false, memory_order_relaxed);
	return ok;
}

bool a64_mte_on(void)
{
	return atomic_load_explicit(&mte_enabled, memory_order_relaxed);
}

static void *mte_tag_alloc(void *ptr, size_t used, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)ptr, cur = mte_ldg(a), r;
	uint64_t excl = 1u | 1u << cur | (cur ? 1u << mte_prev((uint32_t)cur) : 0u);
	if (a & (A64_PAGE - 1u))
		excl |= 1u << mte_ldg(a - MTE_GRANULE);
	if ((a + len) & (A64_PAGE - 1u))
		excl |= 1u << mte_ldg(a + len);
	__asm__ volatile(MTE_ASM "irg %0, %1, %2" : "=r"(r) : "r"(a), "r"(excl));
	uint32_t t = mte_tag_of(r);
	if (t == 0) /* every tag excluded: cannot happen with at most 5 of 16 */
		t = mte_next((uint32_t)cur);
	mte_set(a, used, t);
	if (used < len)
		mte_set(a + used, len - used, 0); /* past the request: matches no pointer */
	return (void *)(uintptr_t)(a | (uint64_t)t << MTE_TAG_SHIFT); // NOLINT(performance-no-int-to-ptr)
}

static void mte_tag_free(void *ptr, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)ptr;
	uint32_t t = mte_ldg(a);
	mte_set(a, len, mte_next(t ? t : 15u));
}

static void mte_tag_clear(void *ptr, size_t len)
{
	mte_set((uint64_t)(uintptr_t)ptr, len, 0);
}

static void *mte_untag(const void *p)
{
	return (void *)(uintptr_t)mte_plain((uint64_t)(uintptr_t)p); // NOLINT(performance-no-int-to-ptr)
}

static bool mte_matches(const void *p)
{
	uint64_t v = (uint64_t)(uintptr_t)p;
	if ((v & MTE_TOP_BYTE) != ((uint64_t)mte_tag_of(v) << MTE_TAG_SHIFT))
		return false; /* bits 63:60 set: no pointer the heap made */
	return mte_ldg(mte_plain(v)) == mte_tag_of(v);
}

static const struct kheap_tag_ops mte_ops = {
	.tag_alloc = mte_tag_alloc,
	.tag_free = mte_tag_free,
	.tag_clear = mte_tag_clear,
	.untag = mte_untag,
	.matches = mte_matches,
};

const struct kheap_tag_ops *a64_mte_ops(void)
{
	return &mte_ops;
}

/* Whether the block at plain address block (held by the heap) carries tag t and is
 * live: then the fault ran `off` bytes past what its owner asked for. */
static bool mte_overflow_from(uint64_t block, uint32_t t, uint64_t a, char *buf, size_t len)
{
	struct heap_where w;
	if (block == 0 || mte_ldg(block) != t)
		return false;
	kheap_where(block, &w);
	if (w.kind != HEAP_WHERE_USED && w.kind != HEAP_WHERE_LARGE)
		return false;
	(void)fmt_snprintf(buf, len, "in the heap: overflow, %lu bytes past the %lu bytes requested of a live %lu-byte block (%s)",
			   (unsigned long)(a - (w.block + w.requested)), (unsigned long)w.requested,
			   (unsigned long)w.block_size, heap_tag_name(w.tag));
	return true;
}

void a64_mte_describe(uint64_t far, char *buf, size_t len, uint32_t *ptr_tag, uint32_t *mem_tag)
{
	uint64_t a = mte_plain(far);
	uint32_t t = mte_tag_of(far);
	struct heap_where w;
	kheap_where(a, &w);
	*ptr_tag = t;
	*mem_tag = w.kind == HEAP_WHERE_NONE ? 0 : mte_ldg(a);
	switch (w.kind) {
	case HEAP_WHERE_NONE:
		(void)fmt_snprintf(buf, len, "outside the heap (a pointer with a forged tag)");
		return;
	case HEAP_WHERE_PAGE:
		(void)fmt_snprintf(buf, len, "in the heap: use after free, in pages no block holds");
		return;
	case HEAP_WHERE_SLAB_TAIL:
		if (!mte_overflow_from(w.prev, t, a, buf, len))
			(void)fmt_snprintf(buf, len, "in the heap: a slab's bookkeeping (a stray pointer)");
		return;
	case HEAP_WHERE_FREE:
	case HEAP_WHERE_USED:
	case HEAP_WHERE_LARGE:
		break;
	}
	if (mte_overflow_from(w.block, t, a, buf, len) || mte_overflow_from(w.prev, t, a, buf, len))
		return;
	if (w.kind == HEAP_WHERE_FREE)
		(void)fmt_snprintf(buf, len, "in the heap: use after free, a free %lu-byte block",
				   (unsigned long)w.block_size);
	else
		(void)fmt_snprintf(buf, len, "in the heap: stale or stray pointer into a live %lu-byte block (%s) of "
					     "another allocation",
				   (unsigned long)w.block_size, heap_tag_name(w.tag));
}
