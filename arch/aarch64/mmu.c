/* SPDX-License-Identifier: MIT
 *
 * The boot core's stage-1 translation tables (4 KiB granule, 48-bit identity map through
 * TTBR0_EL1; TTBR1 walks disabled). Built once with the MMU off from a fixed pool inside
 * the image, then audited, then switched on with SCTLR_EL1.WXN (a writable page is never
 * executable, whatever a descriptor says), PAN set when the CPU has it, and text pages
 * guarded for BTI when the CPU has it, and with MTE (FEAT_MTE2) RAM outside the image
 * mapped Normal Tagged with synchronous tag checks (mte.c tags the heap's blocks).
 * Invariants: (1) no page is both writable and executable at EL1 (the audit stops the boot
 * otherwise); (2) nothing is reachable from EL0; (3) only the image's text is executable;
 * (4) the guard page under each stack is unmapped; (5) the tables themselves are mapped
 * read-only, so once the MMU is on nothing can change them (mapping more needs a writable
 * alias: planned with the PCI bring-up).
 */
#include "arch/aarch64/a64.h"
#include "arch/aarch64/kaslr.h"
#include "lib/mem.h"

#define PT_ENTRIES 512u
#define PT_POOL_PAGES 64u

/* Descriptor bits (Arm ARM D8.3). */
#define D_VALID (1ull << 0)
#define D_TABLE (1ull << 1)   /* levels 0-2: table; level 3: page */
#define D_ATTR(i) ((uint64_t)(i) << 2)
#define D_AP_RO (1ull << 7)   /* AP[2]: read-only */
#define D_AP_EL0 (1ull << 6)  /* AP[1]: EL0 access */
#define D_SH_INNER (3ull << 8)
#define D_AF (1ull << 10)
#define D_GP (1ull << 50)     /* BTI guarded page */
#define D_PXN (1ull << 53)
#define D_UXN (1ull << 54)
#define D_ADDR 0x0000fffffffff000ull

#define ATTR_DEVICE 0u /* MAIR attr0: Device-nGnRE */
#define ATTR_NORMAL 1u /* MAIR attr1: Normal, write-back read/write-allocate */
#define ATTR_TAGGED 2u /* MAIR attr2: the same, Tagged (MTE): RAM outside the image */
#define MAIR_VALUE (0x04ull | 0xffull << 8)
#define MAIR_TAGGED (0xf0ull << 16)

enum mmu_kind { K_TEXT, K_RODATA, K_RW, K_TABLES, K_DEVICE, K_RAM };

static uint64_t mmu_pool[PT_POOL_PAGES][PT_ENTRIES] __attribute__((section(".pagetables"), aligned(4096)));
static uint32_t mmu_pool_used;
static uint64_t *mmu_root;
static struct a64_mmu_features mmu_feat;
/* The stacks (the boot core's two, then each other core's two), for the fault reports;
 * written before the MMU is on, read-only after. */
static struct a64_stack mmu_stacks[2u * PLAT_MAX_CPUS];
static uint32_t mmu_n_stacks;
static uint64_t mmu_reserved_end; /* the image and the other cores' stacks end here */
static uint64_t mmu_mair, mmu_tcr, mmu_sctlr; /* what every core loads */
static uint64_t mmu_tag_probe; /* a page of RAM mapped Tagged (MTE's self-test) */

static uint64_t *mmu_table_new(void)
{
	if (mmu_pool_used == PT_POOL_PAGES)
		a64_early_fail("mmu: the page-table pool is exhausted");
	uint64_t *t = mmu_pool[mmu_pool_used++];
	memset(t, 0, A64_PAGE);
	return t;
}

static uint64_t mmu_leaf_bits(enum mmu_kind k)
{
	uint64_t b = D_VALID | D_AF | D_UXN;
	switch (k) {
	case K_TEXT:
		return b | D_ATTR(ATTR_NORMAL) | D_SH_INNER | D_AP_RO | (mmu_feat.bti ? D_GP : 0);
	case K_RODATA:
	case K_TABLES:
		return b | D_ATTR(ATTR_NORMAL) | D_SH_INNER | D_AP_RO | D_PXN;
	case K_RW:
		return b | D_ATTR(ATTR_NORMAL) | D_SH_INNER | D_PXN;
	case K_DEVICE:
		return b | D_ATTR(ATTR_DEVICE) | D_PXN;
	case K_RAM:
		return b | D_ATTR(mmu_feat.mte ? ATTR_TAGGED : ATTR_NORMAL) | D_SH_INNER | D_PXN;
	}
	return 0;
}

/* Map [va, va + len) (page aligned) to the same physical addresses: 2 MiB blocks where
 * both ends allow it (RAM and devices only: the image is mapped by page). */
static void mmu_map(uint64_t va, uint64_t len, enum mmu_kind k, bool blocks)
{
	const uint64_t bits = mmu_leaf_bits(k);
	uint64_t end = va + len;
	while (va < end) {
		uint64_t *t = mmu_root;
		for (uint32_t level = 0; level < 3; level++) {
			uint32_t shift = 39u - 9u * level;
			uint64_t *e = &t[(va >> shift) & 511u];
			if (level == 2 && blocks && (va & 0x1fffffu) == 0 && end - va >= 0x200000u && !(*e & D_VALID)) {
				*e = (va & D_ADDR) | (bits & ~D_TABLE) | D_VALID; /* block */
				t = NULL;
				break;
			}
			if (!(*e & D_VALID))
				*e = (uint64_t)(uintptr_t)mmu_table_new() | D_TABLE | D_VALID;
			else if (!(*e & D_TABLE))
				a64_early_fail("mmu: a range overlaps one mapped by a 2 MiB block");
			t = (uint64_t *)(uintptr_t)(*e & D_ADDR);
		}
		if (!t) {
			va += 0x200000u;
			continue;
		}
		uint64_t *e = &t[(va >> 12) & 511u];
		if (*e & D_VALID)
			a64_early_fail("mmu: a page mapped twice");
		*e = (va & D_ADDR) | bits | D_TABLE;
		va += A64_PAGE;
	}
}

static uint64_t mmu_page_down(uint64_t a)
{
	return a & ~(uint64_t)(A64_PAGE - 1);
}

static uint64_t mmu_page_up(uint64_t a)
{
	return (a + A64_PAGE - 1) & ~(uint64_t)(A64_PAGE - 1);
}

static uint64_t mmu_sym(const char *s)
{
	return (uint64_t)(uintptr_t)s;
}

/* Map the part of [base, base + len) outside the image and the stacks after it. */
static void mmu_map_ram(uint64_t base, uint64_t len)
{
	uint64_t lo = mmu_page_up(base), hi = mmu_page_down(base + len);
	uint64_t img_lo = mmu_sym(a64_image_start), img_hi = mmu_reserved_end;
	if (lo < img_lo && hi > lo) {
		mmu_map(lo, (hi < img_lo ? hi : img_lo) - lo, K_RAM, true);
		mmu_tag_probe = mmu_tag_probe ? mmu_tag_probe : lo;
	}
	if (hi > img_hi && hi > lo) {
		uint64_t from = lo > img_hi ? lo : img_hi;
		mmu_map(from, hi - from, K_RAM, true);
		mmu_tag_probe = mmu_tag_probe ? mmu_tag_probe : from;
	}
}

static void mmu_detect(void)
{
	uint64_t mmfr0 = A64_SYSREG_READ(id_aa64mmfr0_el1);
	uint64_t mmfr1 = A64_SYSREG_READ(id_aa64mmfr1_el1);
	uint64_t pfr1 = A64_SYSREG_READ(id_aa64pfr1_el1);
	uint64_t isar1 = A64_SYSREG_READ(id_aa64isar1_el1);
	static const uint32_t pa_bits[] = { 32, 36, 40, 42, 44, 48, 52 };
	uint32_t pa = (uint32_t)(mmfr0 & 0xfu);
	mmu_feat.pa_bits = pa < 7 ? pa_bits[pa] : 48;
	mmu_feat.pan = ((mmfr1 >> 20) & 0xfu) != 0;
	mmu_feat.bti = (pfr1 & 0xfu) != 0;
	/* APA (bits 7:4) or API (bits 11:8): address authentication with the A key. */
	mmu_feat.pac = ((isar1 >> 4) & 0xfu) != 0 || ((isar1 >> 8) & 0xfu) != 0;
	/* MTE (bits 11:8): 2 or more is FEAT_MTE2 with tag memory (1: instructions only). */
	mmu_feat.mte = ((pfr1 >> 8) & 0xfu) >= 2u;
	mmu_feat.wxn = true;
}

/* The wx-audit scenario's deliberate mistake: the first page of data made executable too. */
static void mmu_plant_wx(void)
{
	uint64_t va = mmu_sym(a64_data_start);
	uint64_t *t = mmu_root;
	for (uint32_t level = 0; level < 3; level++)
		t = (uint64_t *)(uintptr_t)(t[(va >> (39u - 9u * level)) & 511u] & D_ADDR);
	t[(va >> 12) & 511u] &= ~D_PXN;
}

void a64_mmu_init(const struct a64_mmu_region *ram, uint32_t n_ram, const struct a64_mmu_region *dev,
		  uint32_t n_dev, const struct a64_stack *stacks, uint32_t n_stacks, uint64_t reserved_end,
		  bool plant_wx, struct a64_mmu_features *feat)
{
	mmu_detect();
	mmu_root = mmu_table_new();
	if (n_stacks > 2u * (PLAT_MAX_CPUS - 1u) || reserved_end < mmu_sym(a64_image_end))
		a64_early_fail("mmu: stacks outside what the image reserved");
	mmu_reserved_end = reserved_end;
	mmu_stacks[mmu_n_stacks++] = (struct a64_stack){ mmu_sym(a64_boot_stack_base), mmu_sym(a64_boot_stack_top),
							 0, false };
	mmu_stacks[mmu_n_stacks++] = (struct a64_stack){ mmu_sym(a64_exc_stack_base), mmu_sym(a64_exc_stack_top),
							 0, true };
	for (uint32_t i = 0; i < n_stacks; i++) {
		if (stacks[i].base < mmu_sym(a64_image_end) + A64_PAGE || stacks[i].top > reserved_end)
			a64_early_fail("mmu: a stack outside what the image reserved");
		mmu_stacks[mmu_n_stacks++] = stacks[i];
	}
	mmu_map(mmu_sym(a64_text_start), mmu_sym(a64_text_end) - mmu_sym(a64_text_start), K_TEXT, false);
	mmu_map(mmu_sym(a64_rodata_start), mmu_sym(a64_rodata_end) - mmu_sym(a64_rodata_start), K_RODATA, false);
	/* .data, then the relocation table read-only (written only before the MMU is on: the
	 * KASLR move or the EFI entry's copy), then .bss: each part starts and ends on a page. */
	mmu_map(mmu_sym(a64_data_start), mmu_sym(a64_relocs_start) - mmu_sym(a64_data_start), K_RW, false);
	uint64_t relocs_end = mmu_page_up(mmu_sym(a64_relocs_end)); /* the table's padding is the file's */
	mmu_map(mmu_sym(a64_relocs_start), relocs_end - mmu_sym(a64_relocs_start), K_RODATA, false);
	mmu_map(relocs_end, mmu_sym(a64_data_end) - relocs_end, K_RW, false);
	for (uint32_t i = 0; i < mmu_n_stacks; i++) /* the guard page under each stays unmapped */
		mmu_map(mmu_stacks[i].base, mmu_stacks[i].top - mmu_stacks[i].base, K_RW, false);
	for (uint32_t i = 0; i < n_ram; i++)
		mmu_map_ram(ram[i].base, ram[i].len);
	for (uint32_t i = 0; i < n_dev; i++)
		if (dev[i].len)
			mmu_map(mmu_page_down(dev[i].base),
				mmu_page_up(dev[i].base + dev[i].len) - mmu_page_down(dev[i].base), K_DEVICE, true);
	if (plant_wx)
		mmu_plant_wx();
	/* Last: the tables (every one is allocated by now), read-only. */
	mmu_map(mmu_sym(a64_pt_start), mmu_sym(a64_pt_end) - mmu_sym(a64_pt_start), K_TABLES, false);

	struct a64_wx_report r;
	a64_mmu_audit(&r);
	if (r.wx || r.user || r.exec_outside_text)
		a64_early_fail("mmu: W^X audit FAILED before the switch (W+X, EL0 or executable outside text)");

	/* Written with the MMU and caches off: push them to the point of coherency. */
	for (uint64_t a = mmu_sym(a64_pt_start); a < mmu_sym(a64_pt_end); a += 64)
		__asm__ volatile("dc civac, %0" : : "r"(a) : "memory");
	a64_dsb_sy();
	static const uint32_t ips_bits[] = { 32, 36, 40, 42, 44, 48 };
	uint64_t ips = 0;
	while (ips < 5 && ips_bits[ips] < mmu_feat.pa_bits)
		ips++;
	mmu_tcr = 16u              /* T0SZ: 48-bit */
		       | 1ull << 8      /* IRGN0: write-back */
		       | 1ull << 10     /* ORGN0: write-back */
		       | 3ull << 12     /* SH0: inner shareable */
		       | 0ull << 14     /* TG0: 4 KiB */
		       | 1ull << 23     /* EPD1: no TTBR1 walks */
		       | 2ull << 30     /* TG1: 4 KiB (unused) */
		       | ips << 32;     /* IPS */
	if (mmu_feat.mte) /* heap pointers carry a tag in bits 59:56; tag 0 is never checked */
		mmu_tcr |= 1ull << 37      /* TBI0: the top byte is ignored by data accesses */
			   | 1ull << 57;   /* TCMA0: tag 0 matches all (the untagged kernel) */
	if (mmu_feat.mte && mmu_feat.pac)
		mmu_tcr |= 1ull << 51;     /* TBID0: not by instruction addresses (PAC keeps its bits) */
	mmu_mair = MAIR_VALUE | (mmu_feat.mte ? MAIR_TAGGED : 0);
	uint64_t sctlr = A64_SYSREG_READ(sctlr_el1);
	sctlr |= 1u << 0     /* M */
		 | 1u << 2    /* C */
		 | 1u << 3    /* SA: SP alignment checked */
		 | 1u << 12   /* I */
		 | 1u << 19;  /* WXN */
	if (mmu_feat.bti)
		sctlr |= 1ull << 36; /* BT1: EL1 PACIxSP are not implicit landing pads */
	if (mmu_feat.mte)
		sctlr |= 1ull << 43  /* ATA: EL1 accesses allocation tags */
			 | 1ull << 40; /* TCF = 01: tag check faults at EL1 are synchronous */
	mmu_sctlr = sctlr;
	a64_mmu_enable();
	if (mmu_feat.mte && (!mmu_tag_probe || !a64_mte_selftest(mmu_tag_probe))) {
		/* Tags that do not stay per granule: back to the untagged set-up, here and for
		 * the other cores (RAM keeps its Tagged attribute: harmless unchecked). */
		mmu_feat.mte = false;
		mmu_feat.mte_selftest_failed = true;
		mmu_sctlr &= ~(1ull << 43 | 3ull << 40);
		mmu_tcr &= ~(1ull << 37 | 1ull << 57 | 1ull << 51);
		A64_SYSREG_WRITE(sctlr_el1, mmu_sctlr);
		A64_SYSREG_WRITE(tcr_el1, mmu_tcr);
		a64_isb();
		__asm__ volatile("tlbi vmalle1\n\tdsb nsh\n\tisb" : : : "memory");
	}
	*feat = mmu_feat;
}

/* The tables, attributes and controls the boot core computed, on the calling core. */
void a64_mmu_enable(void)
{
	A64_SYSREG_WRITE(mair_el1, mmu_mair);
	A64_SYSREG_WRITE(tcr_el1, mmu_tcr);
	A64_SYSREG_WRITE(ttbr0_el1, (uint64_t)(uintptr_t)mmu_root);
	a64_isb();
	__asm__ volatile("tlbi vmalle1\n\tdsb nsh\n\tisb" : : : "memory");
	A64_SYSREG_WRITE(sctlr_el1, mmu_sctlr);
	a64_isb();
	if (mmu_feat.mte) /* with the MMU on: it writes memory */
		a64_mte_core_init();
	if (mmu_feat.pan)
		__asm__ volatile(".inst 0xd500419f" : : : "memory"); /* msr pan, #1 */
}

/* ---- audit ------------------------------------------------------------------------------- */

static void mmu_audit_leaf(uint64_t va, uint64_t e, uint64_t pages, struct a64_wx_report *r)
{
	bool writable = !(e & D_AP_RO);
	bool exec = !(e & D_PXN);
	bool device = ((e >> 2) & 7u) == ATTR_DEVICE;
	if (e & D_AP_EL0 || !(e & D_UXN))
		r->user += pages;
	if (writable && exec)
		r->wx += pages;
	if (exec && (va < mmu_sym(a64_text_start) || va >= mmu_sym(a64_text_end)))
		r->exec_outside_text += pages;
	if (device)
		r->pages_dev += pages;
	else if (exec)
		r->pages_rx += pages;
	else if (writable)
		r->pages_rw += pages;
	else
		r->pages_r += pages;
}

static void mmu_audit_table(const uint64_t *t, uint32_t level, uint64_t va_base, struct a64_wx_report *r)
{
	uint32_t shift = 39u - 9u * level;
	for (uint32_t i = 0; i < PT_ENTRIES; i++) {
		uint64_t e = t[i];
		if (!(e & D_VALID))
			continue;
		uint64_t va = va_base + ((uint64_t)i << shift);
		if (level < 3 && (e & D_TABLE))
			mmu_audit_table((const uint64_t *)(uintptr_t)(e & D_ADDR), level + 1, va, r);
		else
			mmu_audit_leaf(va, e, (uint64_t)1 << (shift - 12u), r);
	}
}

void a64_mmu_audit(struct a64_wx_report *r)
{
	memset(r, 0, sizeof *r);
	mmu_audit_table(mmu_root, 0, 0, r);
}

const char *a64_mmu_region_name(uint64_t a)
{
	if (a >= mmu_sym(a64_text_start) && a < mmu_sym(a64_text_end))
		return "kernel text";
	if (a >= mmu_sym(a64_rodata_start) && a < mmu_sym(a64_rodata_end))
		return "kernel rodata";
	if (a >= mmu_sym(a64_relocs_start) && a < mmu_page_up(mmu_sym(a64_relocs_end)))
		return "the relocation table";
	if (a >= mmu_sym(a64_data_start) && a < mmu_sym(a64_data_end))
		return "kernel data";
	if (a >= mmu_sym(a64_pt_start) && a < mmu_sym(a64_pt_end))
		return "page tables";
	for (uint32_t i = 0; i < mmu_n_stacks; i++) {
		const struct a64_stack *st = &mmu_stacks[i];
		if (a >= st->base - A64_PAGE && a < st->base)
			return st->exceptions ? "guard page of an exception stack" : "guard page of a loop stack";
		if (a >= st->base && a < st->top)
			return st->exceptions ? "an exception stack" : "a loop stack";
	}
	if (a < A64_PAGE * 16u)
		return "the null page";
	if (a >> 48)
		return "no address (a pointer corrupted, as by a failed authentication)";
	return "elsewhere";
}

bool a64_mmu_is_guard(uint64_t a)
{
	for (uint32_t i = 0; i < mmu_n_stacks; i++)
		if (a >= mmu_stacks[i].base - A64_PAGE && a < mmu_stacks[i].base)
			return true;
	return false;
}
