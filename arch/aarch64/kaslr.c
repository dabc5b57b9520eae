/* SPDX-License-Identifier: MIT
 *
 * KASLR for the aarch64 image on the -kernel path (ADR-084; kaslr.h). boot.S calls
 * a64_kaslr_boot() at EL1 with the MMU and data cache off, at the link address (the
 * loader put the Image 2 MiB into RAM), on the boot stack, before .bss is cleared. It
 * draws a slide from RNDR, copies the image's file bytes to link + slide, zeroes the
 * copy's .bss, tables and stacks, applies the relocation table to the copy, records the
 * outcome in the copy's a64_kaslr and returns the copy's entry; boot.S jumps there and
 * every later address is a moved one (PC-relative code needs nothing: the slide is a
 * multiple of 64 KiB, so of every page ADRP counts in).
 *
 * Design note:
 *  1. Where: the copy and the room its other cores' stacks take (main.c lays them out
 *     after the image) lie between the link-address copy's own such room and the device
 *     tree, which QEMU and boot loaders put above the Image (x0; nothing here knows the
 *     RAM size before the tree is parsed, and the tree must survive), and below any
 *     /memreserve/ range of the tree. Device tree below the image, a /reserved-memory
 *     node (parsed only later, by plat/dtb.c), or no room: the boot goes on unslid and
 *     says why.
 *  2. The link-address copy is only read (the table and the bytes), never written but for
 *     its own a64_kaslr, so a refused table leaves a bootable image where it was.
 *  3. Nothing written into the copy holds an address: the state is numbers.
 *  4. With the MMU off every data access is Device memory: the image is built with
 *     -mstrict-align, and the copy moves aligned 8-byte words.
 * Never prints (no console yet). a64_kaslr_report() runs in a64_main.
 */
#include "arch/aarch64/kaslr.h"

#include "arch/aarch64/a64.h"
#include "kernel/log.h"
#include "lib/mem.h"
#include "kernel/panic.h"

/* .data: boot.S reads `decided` before it clears .bss, and both boot paths write it into
 * the moved copy before that copy runs. */
struct a64_kaslr a64_kaslr __attribute__((section(".data")));

int a64_kaslr_rndr(uint64_t *v)
{
	if (((A64_SYSREG_READ(id_aa64isar0_el1) >> 60) & 0xfu) == 0)
		return 0;
	for (uint32_t i = 0; i < A64_KASLR_TRIES; i++) {
		uint64_t r, nzcv;
		/* mrs x, RNDR (s3_3_c2_c4_0); NZCV.Z set on failure */
		__asm__ volatile("mrs %0, s3_3_c2_c4_0\n\tmrs %1, nzcv" : "=r"(r), "=r"(nzcv));
		if (!(nzcv & (1u << 30))) {
			*v = r;
			return 1;
		}
	}
	return -1;
}

/* Invalidate data cache lines [lo, hi) to the point of coherency: with the MMU off the
 * copy is written to memory, and a line a boot loader left there (or the CPU fetched
 * speculatively) must neither be written back over it nor be read instead of it once the
 * caches are on (as Linux does for what it writes before its MMU is on). */
static void kaslr_dcache_inval(uint64_t lo, uint64_t hi)
{
	uint64_t line = 4ull << ((A64_SYSREG_READ(ctr_el0) >> 16) & 0xfu);
	for (uint64_t a = lo & ~(line - 1); a < hi; a += line)
		__asm__ volatile("dc ivac, %0" : : "r"(a) : "memory");
	__asm__ volatile("dsb sy" : : : "memory");
}

static uint64_t be(const uint8_t *p, uint32_t n)
{
	uint64_t v = 0;
	for (uint32_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* The end of the room the copy may take (design note 1): the device tree, or the lowest
 * /memreserve/ range above the image; 0 when there is no tree, when it reserves memory
 * the copy would need, or has a /reserved-memory node (whose ranges plat/dtb.c reads only
 * later): then the boot stays unslid. Bounded by the header's sizes (at most 2 MiB, the
 * limit main.c reads the tree with); byte reads only (MMU off). */
static uint64_t kaslr_top(uint64_t dtb, uint64_t lo, uint32_t *why)
{
	*why = A64_KASLR_ROOM_NO_DTB;
	if (dtb == 0 || (dtb & 7u) || dtb <= lo)
		return 0;
	const uint8_t *h = (const uint8_t *)(uintptr_t)dtb;
	if (be(h, 4) != 0xd00dfeedu)
		return 0;
	uint64_t total = be(h + 4, 4), off_struct = be(h + 8, 4), off_rsv = be(h + 16, 4);
	uint64_t size_struct = be(h + 36, 4);
	if (total > (2u << 20) || off_struct > total || size_struct > total - off_struct || off_rsv > total)
		return 0;
	*why = A64_KASLR_ROOM_RESERVED;
	uint64_t top = dtb;
	for (uint64_t off = off_rsv; off + 16 <= total; off += 16) {
		uint64_t addr = be(h + off, 8), size = be(h + off + 8, 8);
		if (addr == 0 && size == 0)
			break;
		if (addr < top && addr + size > lo)
			top = addr; /* below lo: no room at all */
	}
	static const char node[] = "reserved-memory";
	for (uint64_t off = off_struct; off + sizeof node <= off_struct + size_struct; off++)
		if (memcmp(h + off, node, sizeof node) == 0)
			return 0;
	return top > lo ? top : 0;
}

__attribute__((no_stack_protector)) uint64_t a64_kaslr_boot(uint64_t dtb_phys)
{
	struct a64_kaslr *k = &a64_kaslr;
	memset(k, 0, sizeof *k);
	k->decided = 1;
	uint64_t rnd = 0;
	int got = a64_kaslr_rndr(&rnd);
	if (got <= 0) {
		k->state = got == 0 ? A64_KASLR_NO_ENTROPY : A64_KASLR_RNG_FAILED;
		return 0;
	}
	k->source = A64_KASLR_SRC_RNDR;
	uint64_t base = (uint64_t)(uintptr_t)a64_image_start;
	uint64_t img_size = (uint64_t)(uintptr_t)a64_image_end - base;
	uint64_t file_len = (uint64_t)(uintptr_t)a64_file_end - base;
	uint64_t extent = (img_size + A64_OTHER_STACKS_BYTES + A64_KASLR_ALIGN - 1) & ~(A64_KASLR_ALIGN - 1);
	/* Slides s in [extent, smax]: the copy starts after this copy's room and ends, room
	 * included, at or below the tree (and any memory it reserves) and within the window
	 * (design note 1). */
	uint32_t room_why;
	uint64_t top = kaslr_top(dtb_phys, base + extent, &room_why) & ~(A64_KASLR_ALIGN - 1);
	if (top <= base) {
		k->state = A64_KASLR_NO_ROOM;
		k->room_why = room_why;
		mem_wipe(&rnd, sizeof rnd);
		return 0;
	}
	uint64_t smax = top - base;
	if (smax > A64_KASLR_WINDOW - A64_KASLR_ALIGN)
		smax = A64_KASLR_WINDOW - A64_KASLR_ALIGN;
	if (smax < 2 * extent) {
		k->state = A64_KASLR_NO_ROOM;
		k->room_why = A64_KASLR_ROOM_BELOW_DTB;
		mem_wipe(&rnd, sizeof rnd);
		return 0;
	}
	smax -= extent;
	uint64_t n_slots = (smax - extent) / A64_KASLR_ALIGN + 1;
	uint64_t slide = extent + (rnd % n_slots) * A64_KASLR_ALIGN; /* bias < n_slots / 2^64 */
	mem_wipe(&rnd, sizeof rnd);
	k->n_slots = (uint32_t)n_slots;

	struct kreloc_layout lay = a64_kaslr_layout(base);
	const uint8_t *table = (const uint8_t *)a64_relocs_start;
	size_t table_len = (size_t)(a64_relocs_end - a64_relocs_start);
	if (kreloc_check_in(&lay, table, table_len, (const uint8_t *)a64_image_start, (size_t)file_len, slide,
			    &k->report) != 0) {
		k->state = A64_KASLR_BAD_TABLE;
		return 0;
	}
	uint64_t dest = base + slide;
	kaslr_dcache_inval(dest, dest + img_size);
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)base;
	volatile uint64_t *dst = (volatile uint64_t *)(uintptr_t)dest;
	for (uint64_t i = 0; i < file_len / 8; i++)
		dst[i] = src[i];
	for (uint64_t i = file_len / 8; i < img_size / 8; i++)
		dst[i] = 0; /* .bss, the tables, the stacks */
	struct a64_kaslr *moved = (struct a64_kaslr *)(uintptr_t)((uint64_t)(uintptr_t)k + slide);
	if (kreloc_apply_in(&lay, table, table_len, (uint8_t *)(uintptr_t)dest, (size_t)file_len, slide,
			    &moved->report) != 0) {
		k->state = A64_KASLR_BAD_TABLE; /* unreachable: the same check passed */
		return 0;
	}
	moved->decided = 1;
	moved->state = A64_KASLR_SLID;
	moved->source = A64_KASLR_SRC_RNDR;
	moved->n_slots = (uint32_t)n_slots;
	moved->slide = slide;
	/* Written with the data cache off: nothing to clean, but nothing stale may stay (data
	 * lines fetched meanwhile, instruction lines of those addresses). */
	kaslr_dcache_inval(dest, dest + img_size);
	__asm__ volatile("ic iallu\n\tdsb sy\n\tisb" : : : "memory");
	return (uint64_t)(uintptr_t)a64_entry_moved + slide;
}

static const char *kaslr_source(uint32_t s)
{
	return s == A64_KASLR_SRC_RNDR ? "RNDR" : s == A64_KASLR_SRC_EFI_RNG ? "EFI_RNG_PROTOCOL" : "none";
}

void a64_kaslr_report(void)
{
	const struct a64_kaslr *k = &a64_kaslr;
	switch (k->state) {
	case A64_KASLR_BAD_TABLE:
		kpanic(A64_EXIT_BOOT, "kaslr: relocation table refused (%s, entry %u of %u): damaged image, not moved",
		       kreloc_why_name(k->report.why), (unsigned)k->report.bad_index, (unsigned)k->report.n_sites);
		break;
	case A64_KASLR_RNG_FAILED: /* as on x86_64 (ADR-077): production stops, development warns */
#ifdef URMQTT_PROD
		kpanic(A64_EXIT_NO_ENTROPY, "kaslr: the random source failed every try; refusing to boot unslid");
#else
		LOG_WARN("boot", "kaslr: off (the random source failed every try)");
#endif
		break;
	case A64_KASLR_NO_ENTROPY: LOG_WARN("boot", "kaslr: off (no entropy source)"); break;
	case A64_KASLR_NO_ROOM:
		LOG_WARN("boot", "kaslr: off (%s)",
			 k->room_why == A64_KASLR_ROOM_NO_DTB	  ? "no device tree above the image to bound the move"
			 : k->room_why == A64_KASLR_ROOM_RESERVED ? "the device tree reserves memory above the image"
			 : k->room_why == A64_KASLR_ROOM_BELOW_DTB ? "no room between the image and the device tree"
			 : k->room_why == A64_KASLR_ROOM_EFI_MAP   ? "the firmware's memory map has no room above the image"
								   : "the firmware refused every drawn address");
		break;
	case A64_KASLR_SLID:
#ifndef URMQTT_PROD
		LOG_INFO("boot", "kaslr: slide 0x%lx from %s (one of %u 64 KiB slots); %u of %u sites moved",
			 (unsigned long)k->slide, kaslr_source(k->source), (unsigned)k->n_slots,
			 (unsigned)k->report.n_moved, (unsigned)k->report.n_sites);
#else
		/* Production: whether, and from what; never where. */
		LOG_INFO("boot", "kaslr: on, from %s (one of %u 64 KiB slots)", kaslr_source(k->source),
			 (unsigned)k->n_slots);
#endif
		break;
	default: LOG_WARN("boot", "kaslr: off (no boot path decided)"); break;
	}
}
