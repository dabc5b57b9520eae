/* SPDX-License-Identifier: MIT
 *
 * x86_64 memory protection: the boot frame allocator, the kernel's own 4-level page
 * tables, guarded stacks, on-demand read-only firmware mappings and the boot-time W^X
 * audit. Owns every page-table frame; the page allocator (kernel/mm) later takes over
 * the RAM above what x86_frame_used() reports.
 *
 * Design note:
 *  1. Kernel text is P (RX); rodata P|NX; data/bss P|W|NX. No leaf is both W and X.
 *  2. The physmap maps usable RAM RW+NX, except the kernel image (reached only through
 *     its own mapping, so text has no writable alias); firmware tables are added RO+NX.
 *  3. Nothing is mapped in the lower half (PML4 slots 0..255) once the tables are live.
 *  4. Every stack in X86_STACK_AREA has an unmapped guard page directly below it.
 *  5. Boot frames come only from usable RAM below X86_BOOT_MAP_BYTES, above the kernel
 *     and outside the reserved ranges (the loader's boot information), handed out once.
 *  6. Every page-table frame comes from one 1 MiB pool inside a single 2 MiB region,
 *     mapped in the physmap with 4 KiB pages; x86_mmu_seal() makes the whole pool
 *     read-only, after which nothing can change a mapping (no writable alias remains:
 *     the audit checks it) and any attempt panics or faults.
 *  Only the boot core changes mappings, and only before the other cores start, so no
 *  lock and no TLB shootdown are needed.
 */
#include "arch/x86_64/x86.h"
#include "kernel/panic.h"
#include "lib/mem.h"

#define MMU_MAX_RANGES 32
#define MMU_MAX_RESERVED 8 /* boot info, the two installer modules, the page-table pool; room to spare */
#define MMU_MAX_STACKS 64
#define MMU_STACK_SLOT_PAGES 64 /* guard + up to 63 stack pages per slot */
#define MMU_MAP_RO_MAX (16u << 20)
#define MMU_MMIO_WINDOW_MAX (256ull << 20) /* one ECAM segment: 256 buses of 1 MiB */
#define MMU_PHYS_MAX (1ull << 46)
#define PAGE X86_PAGE_SIZE
#define LARGE (2ull << 20)
#define LOW_RESERVED (1ull << 20)

static struct x86_mem_range mmu_ram[MMU_MAX_RANGES];
static uint32_t mmu_n_ram;
static struct x86_mem_range mmu_reserved[MMU_MAX_RESERVED];
static uint32_t mmu_n_reserved;
static uint64_t mmu_frame_next, mmu_frame_first, mmu_frame_end;
/* Page-table pool: every page-table frame comes from here; sealed read-only after boot. */
#define MMU_POOL_PAGES 256u
static uint64_t mmu_pool_base, mmu_pool_next, mmu_pool_end;
static bool mmu_sealed;
static uint64_t mmu_pml4_phys;
static uint64_t mmu_global; /* PTE_G when the CPU has global pages */
static struct x86_mmu_features mmu_feat;

struct mmu_stack {
	uint64_t guard, top;
	const char *name;
};
static struct mmu_stack mmu_stacks[MMU_MAX_STACKS];
static uint32_t mmu_n_stacks;

void x86_mmu_init(const struct x86_mem_range *ranges, uint32_t n)
{
	mmu_n_ram = 0;
	for (uint32_t i = 0; i < n && mmu_n_ram < MMU_MAX_RANGES; i++)
		mmu_ram[mmu_n_ram++] = ranges[i];
	mmu_frame_next = x86_virt_to_phys_image(x86_image_end);
}

void x86_mmu_reserve(uint64_t base, uint64_t len)
{
	if (mmu_n_reserved == MMU_MAX_RESERVED)
		PANIC("mmu: too many reserved boot ranges");
	mmu_reserved[mmu_n_reserved].base = base & ~(uint64_t)(PAGE - 1);
	mmu_reserved[mmu_n_reserved].len = len + (base & (PAGE - 1));
	mmu_n_reserved++;
}

static bool mmu_frame_ok(uint64_t pa)
{
	if (pa < LOW_RESERVED || pa + PAGE > X86_BOOT_MAP_BYTES)
		return false;
	if (pa < x86_virt_to_phys_image(x86_image_end) &&
	    pa + PAGE > x86_virt_to_phys_image(x86_image_start))
		return false;
	for (uint32_t i = 0; i < mmu_n_reserved; i++)
		if (pa < mmu_reserved[i].base + mmu_reserved[i].len && pa + PAGE > mmu_reserved[i].base)
			return false;
	for (uint32_t i = 0; i < mmu_n_ram; i++)
		if (pa >= mmu_ram[i].base && pa + PAGE <= mmu_ram[i].base + mmu_ram[i].len)
			return true;
	return false;
}

uint64_t x86_frame_alloc(void)
{
	/* Bump upwards; skipping over holes is bounded by the boot map size. */
	for (uint64_t pa = mmu_frame_next; pa + PAGE <= X86_BOOT_MAP_BYTES; pa += PAGE) {
		if (!mmu_frame_ok(pa))
			continue;
		mmu_frame_next = pa + PAGE;
		if (!mmu_frame_first)
			mmu_frame_first = pa;
		mmu_frame_end = pa + PAGE;
		memset(x86_phys_to_virt(pa), 0, PAGE);
		return pa;
	}
	PANIC("mmu: out of boot frames");
}

uint32_t x86_mmu_boot_reserved(struct x86_mem_range *out, uint32_t max)
{
	struct x86_mem_range r[3 + MMU_MAX_RESERVED];
	uint32_t n = 0;
	r[n].base = x86_virt_to_phys_image(x86_image_start);
	r[n++].len = (uint64_t)(x86_image_end - x86_image_start);
	if (mmu_frame_end > mmu_frame_first) {
		r[n].base = mmu_frame_first;
		r[n++].len = mmu_frame_end - mmu_frame_first;
	}
	r[n].base = 0; /* real-mode area, BIOS data, AP trampoline: never handed out */
	r[n++].len = LOW_RESERVED;
	for (uint32_t i = 0; i < mmu_n_reserved; i++) /* includes the page-table pool */
		r[n++] = mmu_reserved[i];
	for (uint32_t i = 0; i < n && i < max; i++)
		out[i] = r[i];
	return n;
}

void x86_frame_used(uint64_t *first, uint64_t *end)
{
	*first = mmu_frame_first;
	*end = mmu_frame_end;
}

static void mmu_pool_init(void)
{
	/* First run of MMU_POOL_PAGES usable frames after the image not crossing 2 MiB. */
	uint32_t run = 0;
	for (uint64_t pa = mmu_frame_next; pa + PAGE <= X86_BOOT_MAP_BYTES; pa += PAGE) {
		bool ok = mmu_frame_ok(pa) && (run == 0 || (pa & (LARGE - 1)) != 0);
		run = ok ? run + 1 : (mmu_frame_ok(pa) ? 1 : 0);
		if (run == MMU_POOL_PAGES) {
			mmu_pool_base = pa + PAGE - MMU_POOL_PAGES * PAGE;
			mmu_pool_next = mmu_pool_base;
			mmu_pool_end = pa + PAGE;
			x86_mmu_reserve(mmu_pool_base, MMU_POOL_PAGES * PAGE);
			return;
		}
	}
	PANIC("mmu: no room for the page-table pool");
}

static uint64_t mmu_pt_alloc(void)
{
	if (mmu_sealed)
		PANIC("mmu: page tables are sealed");
	if (mmu_pool_next == mmu_pool_end)
		PANIC("mmu: page-table pool exhausted");
	uint64_t pa = mmu_pool_next;
	mmu_pool_next += PAGE;
	memset(x86_phys_to_virt(pa), 0, PAGE);
	return pa;
}

static uint64_t *mmu_table(uint64_t pa)
{
	return (uint64_t *)x86_phys_to_virt(pa);
}

/* Entry for va at `level` (4 = PML4 .. 1 = PT), creating intermediate tables. */
static uint64_t *mmu_walk_create(uint64_t va, int level)
{
	uint64_t *t = mmu_table(mmu_pml4_phys);
	for (int l = 4; l > level; l--) {
		unsigned idx = (unsigned)(va >> (12 + 9 * (l - 1))) & 511;
		uint64_t e = t[idx];
		if (!(e & PTE_P)) {
			e = mmu_pt_alloc() | PTE_P | PTE_W;
			t[idx] = e;
		}
		ASSERT(!(e & PTE_PS));
		t = mmu_table(e & PTE_ADDR);
	}
	return &t[(va >> (12 + 9 * (level - 1))) & 511];
}

/* Leaf entry mapping va (any level), or NULL. */
static uint64_t *mmu_lookup(uint64_t va)
{
	uint64_t *t = mmu_table(mmu_pml4_phys);
	for (int l = 4; l >= 1; l--) {
		uint64_t *e = &t[(va >> (12 + 9 * (l - 1))) & 511];
		if (!(*e & PTE_P))
			return NULL;
		if (l == 1 || (*e & PTE_PS))
			return e;
		t = mmu_table(*e & PTE_ADDR);
	}
	return NULL;
}

static void mmu_map_range(uint64_t va, uint64_t pa, uint64_t len, uint64_t flags, bool large_ok)
{
	uint64_t end = va + len;
	if (mmu_sealed)
		PANIC("mmu: page tables are sealed");
	while (va < end) {
		if (large_ok && !(va & (LARGE - 1)) && !(pa & (LARGE - 1)) && end - va >= LARGE) {
			uint64_t *e = mmu_walk_create(va, 2);
			ASSERT(!(*e & PTE_P));
			*e = pa | flags | PTE_P | PTE_PS | mmu_global;
			va += LARGE;
			pa += LARGE;
		} else {
			uint64_t *e = mmu_walk_create(va, 1);
			ASSERT(!(*e & PTE_P));
			*e = pa | flags | PTE_P | mmu_global;
			x86_invlpg(va);
			va += PAGE;
			pa += PAGE;
		}
	}
}

static void mmu_map_image(const char *start, const char *end, uint64_t flags)
{
	uint64_t va = (uint64_t)(uintptr_t)start;
	mmu_map_range(va, x86_virt_to_phys_image(start), (uint64_t)(end - start), flags, false);
}

static void mmu_features(struct x86_mmu_features *f)
{
	uint32_t r[4];
	memset(f, 0, sizeof *f);
	x86_cpuid(0, 0, r);
	uint32_t max = r[0];
	x86_cpuid(1, 0, r);
	f->pge = (r[3] >> 13) & 1;
	if (max >= 7) {
		x86_cpuid(7, 0, r);
		f->smep = (r[1] >> 7) & 1;
		f->smap = (r[1] >> 20) & 1;
		f->umip = (r[2] >> 2) & 1;
	}
	x86_cpuid(0x80000001u, 0, r);
	f->nx = (r[3] >> 20) & 1;
}

/* Physmap [b, e): large pages where possible, 4 KiB pages over the page-table pool. */
static void mmu_physmap(uint64_t b, uint64_t e)
{
	if (b >= e)
		return;
	uint64_t pb = mmu_pool_base, pe = mmu_pool_end;
	if (e <= pb || b >= pe) {
		mmu_map_range(X86_PHYSMAP_BASE + b, b, e - b, PTE_W | PTE_NX, true);
		return;
	}
	if (b < pb)
		mmu_map_range(X86_PHYSMAP_BASE + b, b, pb - b, PTE_W | PTE_NX, true);
	uint64_t s = MAX(b, pb), t = MIN(e, pe);
	mmu_map_range(X86_PHYSMAP_BASE + s, s, t - s, PTE_W | PTE_NX, false);
	if (e > pe)
		mmu_map_range(X86_PHYSMAP_BASE + pe, pe, e - pe, PTE_W | PTE_NX, true);
}

void x86_mmu_build(struct x86_mmu_features *got)
{
	mmu_features(got);
	mmu_feat = *got;
	if (!got->nx)
		PANIC("cpu: no NX (execute-disable) support; refusing to boot without W^X");
	mmu_global = got->pge ? PTE_G : 0;
	mmu_pool_init();
	mmu_pml4_phys = mmu_pt_alloc();

	mmu_map_image(x86_text_start, x86_text_end, 0);
	mmu_map_image(x86_rodata_start, x86_rodata_end, PTE_NX);
	mmu_map_image(x86_data_start, x86_data_end, PTE_W | PTE_NX);
	/* The relocation table (used once by x86_kaslr_boot) and the rest of its last page,
	 * where GRUB may put the Multiboot2 information: read-only like rodata. */
	mmu_map_image(x86_relocs_start - ((uintptr_t)x86_relocs_start & (PAGE - 1)), x86_image_end, PTE_NX);

	uint64_t ks = x86_virt_to_phys_image(x86_image_start);
	uint64_t ke = x86_virt_to_phys_image(x86_image_end);
	for (uint32_t i = 0; i < mmu_n_ram; i++) {
		uint64_t b = mmu_ram[i].base, e = b + mmu_ram[i].len;
		if (e > MMU_PHYS_MAX)
			e = MMU_PHYS_MAX;
		if (b >= e)
			continue;
		mmu_physmap(b, MIN(e, ks));
		mmu_physmap(MAX(b, ke), e);
	}
}

void x86_mmu_activate(const struct x86_mmu_features *f)
{
	x86_write_cr3(mmu_pml4_phys);
	uint64_t cr4 = x86_read_cr4() | X86_CR4_OSFXSR | X86_CR4_OSXMMEXCPT;
	if (f->pge)
		cr4 |= X86_CR4_PGE;
	if (f->smep)
		cr4 |= X86_CR4_SMEP;
	if (f->smap)
		cr4 |= X86_CR4_SMAP;
	if (f->umip)
		cr4 |= X86_CR4_UMIP;
	x86_write_cr4(cr4);
	x86_write_cr0((x86_read_cr0() | X86_CR0_WP | X86_CR0_MP) & ~X86_CR0_EM);
}

uint64_t x86_stack_alloc(uint32_t n_pages, const char *name)
{
	if (n_pages == 0 || n_pages >= MMU_STACK_SLOT_PAGES || mmu_n_stacks == MMU_MAX_STACKS)
		PANIC("mmu: cannot allocate stack %s", name);
	uint64_t guard = X86_STACK_AREA + (uint64_t)mmu_n_stacks * MMU_STACK_SLOT_PAGES * PAGE;
	for (uint32_t i = 0; i < n_pages; i++)
		mmu_map_range(guard + PAGE * (1 + i), x86_frame_alloc(), PAGE, PTE_W | PTE_NX, false);
	struct mmu_stack *s = &mmu_stacks[mmu_n_stacks++];
	s->guard = guard;
	s->top = guard + PAGE * (1 + (uint64_t)n_pages);
	s->name = name;
	return s->top;
}

const char *x86_stack_guard_of(uint64_t va)
{
	for (uint32_t i = 0; i < mmu_n_stacks; i++)
		if (va >= mmu_stacks[i].guard && va < mmu_stacks[i].guard + PAGE)
			return mmu_stacks[i].name;
	return NULL;
}

const char *x86_stack_name(uint64_t va)
{
	for (uint32_t i = 0; i < mmu_n_stacks; i++)
		if (va >= mmu_stacks[i].guard + PAGE && va < mmu_stacks[i].top)
			return mmu_stacks[i].name;
	return NULL;
}

bool x86_stack_contains(uint64_t va, uint64_t len)
{
	for (uint32_t i = 0; i < mmu_n_stacks; i++)
		if (va >= mmu_stacks[i].guard + PAGE && len <= mmu_stacks[i].top - va &&
		    va < mmu_stacks[i].top)
			return true;
	return false;
}

const void *x86_mmu_map_ro(uint64_t pa, size_t len)
{
	if (len == 0 || len > MMU_MAP_RO_MAX || pa >= MMU_PHYS_MAX || MMU_PHYS_MAX - pa < len)
		return NULL;
	/* Never alias the kernel image: it is reached only through its own mapping. A loader
	 * may put its data in the tail of an image page (GRUB puts the Multiboot2 information
	 * right after the last file byte): that is read through the image mapping. */
	uint64_t ks = x86_virt_to_phys_image(x86_image_start);
	uint64_t ke = x86_virt_to_phys_image(x86_image_end);
	if (pa >= ks && pa + len <= ke)
		return x86_phys_to_virt_image(pa);
	if (pa < ke && pa + len > ks)
		return NULL;
	uint64_t first = pa & ~(uint64_t)(PAGE - 1);
	for (uint64_t p = first; p < pa + len; p += PAGE) {
		uint64_t va = X86_PHYSMAP_BASE + p;
		if (mmu_lookup(va))
			continue; /* RAM (RW+NX) or mapped before */
		mmu_map_range(va, p, PAGE, PTE_NX, false);
	}
	return x86_phys_to_virt(pa);
}

#ifndef URMQTT_PROD
void x86_mmu_test_map_wx(void)
{
	uint64_t va = X86_STACK_AREA + (uint64_t)MMU_MAX_STACKS * MMU_STACK_SLOT_PAGES * PAGE;
	mmu_map_range(va, x86_frame_alloc(), PAGE, PTE_W, false); /* W and X: must be caught */
}
#endif

const struct x86_mmu_features *x86_mmu_features(void)
{
	return &mmu_feat;
}

void *x86_mmu_map_mmio(uint64_t pa, size_t len)
{
	if (len == 0 || len > MMU_MAP_RO_MAX || pa >= MMU_PHYS_MAX || MMU_PHYS_MAX - pa < len)
		return NULL;
	for (uint64_t p = pa & ~(uint64_t)(PAGE - 1); p < pa + len; p += PAGE) {
		const uint64_t *e = mmu_lookup(X86_PHYSMAP_BASE + p);
		if (e && !(*e & PTE_PCD))
			return NULL; /* RAM or firmware tables: never alias as device memory */
		if (!e && mmu_sealed)
			return NULL; /* after boot only what was mapped before the seal is reachable */
		if (!e)
			mmu_map_range(X86_PHYSMAP_BASE + p, p, PAGE, PTE_W | PTE_NX | PTE_PCD | PTE_PWT,
				      false);
	}
	return x86_phys_to_virt(pa);
}

void *x86_mmu_map_mmio_window(uint64_t pa, uint64_t len)
{
	if (len == 0 || len > MMU_MMIO_WINDOW_MAX || pa >= MMU_PHYS_MAX || MMU_PHYS_MAX - pa < len ||
	    (pa & (LARGE - 1)) || (len & (LARGE - 1)))
		return NULL;
	/* Large pages only where nothing is mapped yet in the whole 2 MiB slot; a slot that
	 * already holds RAM or anything else refuses the window (never an alias). */
	for (uint64_t p = pa; p < pa + len; p += LARGE) {
		for (uint64_t q = p; q < p + LARGE; q += PAGE)
			if (mmu_lookup(X86_PHYSMAP_BASE + q))
				return NULL;
	}
	if (mmu_sealed)
		return NULL;
	mmu_map_range(X86_PHYSMAP_BASE + pa, pa, len, PTE_W | PTE_NX | PTE_PCD | PTE_PWT, true);
	return x86_phys_to_virt(pa);
}

uint64_t x86_mmu_ap_tables(uint64_t tramp_pa)
{
	uint64_t pml4 = mmu_pt_alloc(), pdpt = mmu_pt_alloc();
	uint64_t pd = mmu_pt_alloc(), pt = mmu_pt_alloc();
	uint64_t *n = mmu_table(pml4);
	const uint64_t *live = mmu_table(mmu_pml4_phys);
	for (unsigned i = 256; i < 512; i++)
		n[i] = live[i];
	n[(tramp_pa >> 39) & 511] = pdpt | PTE_P | PTE_W;
	mmu_table(pdpt)[(tramp_pa >> 30) & 511] = pd | PTE_P | PTE_W;
	mmu_table(pd)[(tramp_pa >> 21) & 511] = pt | PTE_P | PTE_W;
	mmu_table(pt)[(tramp_pa >> 12) & 511] = (tramp_pa & PTE_ADDR) | PTE_P; /* RX */
	return pml4;
}

void x86_mmu_seal(void)
{
	/* All pool PTEs sit in one page table T (the pool is inside one 2 MiB region);
	 * T's own entry is made read-only last, so every write before it still lands. */
	uint64_t *own = NULL;
	uint64_t t_pa = 0;
	for (uint64_t p = mmu_pool_base; p < mmu_pool_end; p += PAGE) {
		uint64_t *e = mmu_lookup(X86_PHYSMAP_BASE + p);
		ASSERT(e && !(*e & PTE_PS));
		if (!t_pa)
			t_pa = (uint64_t)(uintptr_t)e - X86_PHYSMAP_BASE;
		if (p == (t_pa & ~(uint64_t)(PAGE - 1))) {
			own = e;
			continue;
		}
		*e &= ~PTE_W;
	}
	ASSERT(own != NULL);
	*own &= ~PTE_W;
	for (uint64_t p = mmu_pool_base; p < mmu_pool_end; p += PAGE)
		x86_invlpg(X86_PHYSMAP_BASE + p);
	mmu_sealed = true;
}

bool x86_mmu_is_page_table(uint64_t va)
{
	return va >= X86_PHYSMAP_BASE + mmu_pool_base && va < X86_PHYSMAP_BASE + mmu_pool_end;
}

void x86_mmu_pool_used(uint64_t *used /* out */, uint64_t *size /* out */)
{
	*used = mmu_pool_next - mmu_pool_base;
	*size = mmu_pool_end - mmu_pool_base;
}

/* ---- W^X audit ---- */

static void mmu_audit_leaf(struct x86_wx_report *r, uint64_t va, uint64_t e, uint64_t size,
			   bool w, bool x, bool u)
{
	r->n_leaves++;
	bool bad = false;
	uint64_t pa = e & PTE_ADDR & ~(size - 1);
	if (w && pa < mmu_pool_end && pa + size > mmu_pool_base) {
		r->n_pt_writable++;
		bad = true;
	}
	if (w && x) {
		r->n_wx++;
		bad = true;
	}
	if (u) {
		r->n_user++;
		bad = true;
	}
	if (!(va >> 63)) {
		r->n_low++;
		bad = true;
	}
	if (bad && !r->first_bad_va)
		r->first_bad_va = va;
}

/* Iterative 4-level walk of the live tables (bounded: 512^4 entries at most, and in
 * practice only the present ones are descended). Effective W is the AND of every level's
 * W bit, effective X is the absence of NX at every level, U is the AND of U bits. */
void x86_wx_audit(struct x86_wx_report *r)
{
	memset(r, 0, sizeof *r);
	const uint64_t *l4 = mmu_table(x86_read_cr3() & PTE_ADDR);
	for (unsigned i4 = 0; i4 < 512; i4++) {
		uint64_t e4 = l4[i4];
		if (!(e4 & PTE_P))
			continue;
		uint64_t va4 = (uint64_t)i4 << 39;
		if (i4 >= 256)
			va4 |= 0xffff000000000000ull;
		const uint64_t *l3 = mmu_table(e4 & PTE_ADDR);
		for (unsigned i3 = 0; i3 < 512; i3++) {
			uint64_t e3 = l3[i3];
			if (!(e3 & PTE_P))
				continue;
			uint64_t va3 = va4 | (uint64_t)i3 << 30;
			uint64_t a3 = e4 & e3, o3 = e4 | e3;
			if (e3 & PTE_PS) {
				mmu_audit_leaf(r, va3, e3, 1ull << 30, a3 & PTE_W, !(o3 & PTE_NX), a3 & PTE_U);
				continue;
			}
			const uint64_t *l2 = mmu_table(e3 & PTE_ADDR);
			for (unsigned i2 = 0; i2 < 512; i2++) {
				uint64_t e2 = l2[i2];
				if (!(e2 & PTE_P))
					continue;
				uint64_t va2 = va3 | (uint64_t)i2 << 21;
				uint64_t a2 = a3 & e2, o2 = o3 | e2;
				if (e2 & PTE_PS) {
					mmu_audit_leaf(r, va2, e2, LARGE, a2 & PTE_W, !(o2 & PTE_NX), a2 & PTE_U);
					continue;
				}
				const uint64_t *l1 = mmu_table(e2 & PTE_ADDR);
				for (unsigned i1 = 0; i1 < 512; i1++) {
					uint64_t e1 = l1[i1];
					if (!(e1 & PTE_P))
						continue;
					uint64_t a1 = a2 & e1, o1 = o2 | e1;
					mmu_audit_leaf(r, va2 | (uint64_t)i1 << 12, e1, PAGE, a1 & PTE_W,
						       !(o1 & PTE_NX), a1 & PTE_U);
				}
			}
		}
	}
}
