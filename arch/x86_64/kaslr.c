/* SPDX-License-Identifier: MIT
 *
 * KASLR for the x86_64 image (ADR-077): boot.S calls x86_kaslr_boot() in long mode on the
 * boot tables, at the link address, before any other C. It draws a slide (RDSEED, else
 * RDRAND), maps a second copy of the image's 2 MiB boot pages at link address + slide,
 * checks and applies the relocation table the image carries (.urmqtt_relocs, kreloc.c),
 * and returns; boot.S then jumps to the moved address and every later address the kernel
 * takes is a moved one. Only virtual addresses move: the loader's physical placement
 * stays, so x86_virt_to_phys_image() subtracts the slide.
 *
 * Design note:
 *  1. Both windows (link address and slid) map the same physical pages while the table is
 *     applied, so code that reads an address before or after its site was rewritten
 *     still reaches mapped memory; the link-address window disappears with the boot
 *     tables (mmu.c builds the final ones from moved symbols only).
 *  2. The two windows never overlap: the slide is at least the image's extent in 2 MiB
 *     pages, and the slid image ends at least 2 MiB below the top of the address space.
 *  3. Nothing written here holds an address taken before the apply (it would be a
 *     link-time address, dead once the boot tables go): the state is numbers and enums,
 *     and x86_kaslr_info() makes the strings when asked.
 *  4. A refused table leaves the image as the loader put it (kreloc checks everything
 *     before it writes) and the boot unslid; x86_boot_main stops it with a message.
 * Never prints (no console yet) and never runs after boot.
 */
#include "arch/x86_64/kreloc.h"
#include "arch/x86_64/x86.h"
#include "lib/mem.h"

#define KASLR_PD_SLOTS 1024u /* 2 MiB pages in the 2 GiB kernel window */

enum kaslr_source { KASLR_SRC_NONE, KASLR_SRC_RDSEED, KASLR_SRC_RDRAND };

uint64_t x86_kaslr_slide;
uint64_t x86_image_virt_off = X86_KERNEL_VMA; /* .data: read before the slide */
static enum x86_kaslr_state kaslr_state;
static enum kaslr_source kaslr_src;
static uint32_t kaslr_n_slots;
static struct kreloc_report kaslr_report;
static uint64_t kaslr_cycles;

/* boot.S's boot tables: PDPT of the top 512 GiB, the 1 GiB PD shared by identity, physmap
 * and link-address window, and two PDs for the kernel window while both copies live. */
extern uint64_t x86_boot_pdpt_high[512], x86_boot_pd[512], x86_boot_pd_kaslr[2][512];

/* 64 random bits, or false with kaslr_state saying why. */
static bool kaslr_random(uint64_t *v)
{
	uint32_t r[4];
	x86_cpuid(0, 0, r);
	bool rdseed = false;
	if (r[0] >= 7) {
		x86_cpuid(7, 0, r);
		rdseed = (r[1] >> 18) & 1;
	}
	x86_cpuid(1, 0, r);
	bool rdrand = (r[2] >> 30) & 1;
	if (!rdseed && !rdrand) {
		kaslr_state = X86_KASLR_NO_ENTROPY;
		return false;
	}
	if (rdseed && x86_rdseed64(v, X86_RDSEED_TRIES)) {
		kaslr_src = KASLR_SRC_RDSEED;
		return true;
	}
	if (rdrand && x86_rdrand64(v, X86_RDRAND_TRIES)) {
		kaslr_src = KASLR_SRC_RDRAND;
		return true;
	}
	kaslr_state = X86_KASLR_RNG_FAILED;
	return false;
}

/* The kernel window on two fresh PDs: the link-address copy of the shared PD, plus the
 * image's 2 MiB pages again at + slide (design note 1, 2). */
static void kaslr_map(uint64_t slide, uint32_t n_pages)
{
	uint64_t(*pd)[512] = x86_boot_pd_kaslr;
	for (uint32_t i = 0; i < 512; i++) {
		pd[0][i] = x86_boot_pd[i];
		pd[1][i] = 0;
	}
	uint32_t first = (uint32_t)(slide >> 21);
	for (uint32_t c = 0; c < n_pages; c++) {
		uint32_t idx = first + c;
		pd[idx / 512][idx % 512] = ((uint64_t)c << 21) | 0x83; /* P | W | PS, as boot.S */
	}
	x86_boot_pdpt_high[510] = x86_virt_to_phys_image(pd[0]) | 3;
	x86_boot_pdpt_high[511] = x86_virt_to_phys_image(pd[1]) | 3;
	x86_write_cr3(x86_read_cr3());
}

__attribute__((no_stack_protector)) void x86_kaslr_boot(void)
{
	uint64_t t0 = x86_rdtsc();
	uint64_t rnd;
	if (!kaslr_random(&rnd))
		return;
	/* The image's extent in 2 MiB pages from physical 0 (the boot pages map from 0). */
	uint64_t phys_end = x86_virt_to_phys_image(x86_image_end);
	uint32_t m = (uint32_t)((phys_end + KRELOC_ALIGN - 1) / KRELOC_ALIGN);
	if (2u * m + 1u > KASLR_PD_SLOTS) {
		kaslr_state = X86_KASLR_NO_ROOM;
		return;
	}
	/* Slides k * 2 MiB for k in [m, KASLR_PD_SLOTS - 1 - m]: never overlapping the
	 * link-address copy, ending at least 2 MiB below 2^64. Modulo bias < 2^-53. */
	kaslr_n_slots = KASLR_PD_SLOTS - 2u * m;
	uint64_t slide = (m + rnd % kaslr_n_slots) * KRELOC_ALIGN;
	mem_wipe(&rnd, sizeof rnd);

	const uint8_t *table = (const uint8_t *)x86_relocs_start;
	size_t table_len = (size_t)(x86_relocs_end - x86_relocs_start);
	uint8_t *img = (uint8_t *)x86_image_start;
	size_t img_len = (size_t)(x86_data_end - x86_image_start);
	if (kreloc_check(table, table_len, img, img_len, slide, &kaslr_report) != 0) {
		kaslr_state = X86_KASLR_BAD_TABLE;
		return;
	}
	kaslr_map(slide, m);
	if (kreloc_apply(table, table_len, img, img_len, slide, &kaslr_report) != 0) {
		kaslr_state = X86_KASLR_BAD_TABLE; /* unreachable: the same check passed */
		return;
	}
	x86_kaslr_slide = slide;
	x86_image_virt_off = X86_KERNEL_VMA + slide;
	kaslr_state = X86_KASLR_SLID;
	/* The code just rewritten may sit in the prefetch queue: serialise before returning
	 * into it (boot.S's jump to the moved address is itself a rewritten immediate). */
	uint32_t r[4];
	x86_cpuid(0, 0, r);
	kaslr_cycles = x86_rdtsc() - t0;
}

const struct x86_kaslr_info *x86_kaslr_info(void)
{
	static struct x86_kaslr_info info;
	info.state = kaslr_state;
	info.source = kaslr_src == KASLR_SRC_RDSEED ? "RDSEED" : kaslr_src == KASLR_SRC_RDRAND ? "RDRAND" : "none";
	info.n_slots = kaslr_n_slots;
	info.n_sites = kaslr_report.n_sites;
	info.n_moved = kaslr_report.n_moved;
	info.bad_index = kaslr_report.bad_index;
	info.why = kreloc_why_name(kaslr_report.why);
	info.tsc_cycles = kaslr_cycles;
	return &info;
}
