/* SPDX-License-Identifier: MIT
 *
 * The x86_64 view of the shared relocation applier (kernel/kreloc.h, ADR-077): the slide
 * moves only virtual addresses, in the kernel window (the top 2 GiB, -mcmodel=kernel),
 * in 2 MiB steps; a 64-bit or sign-extended site below the window is a physical address
 * (boot code, the PVH note) and stays; 32-bit zero-extended sites are always physical.
 * kreloc_check / kreloc_apply are kreloc_check_in / kreloc_apply_in with that layout.
 */
#ifndef ARCH_X86_64_KRELOC_H
#define ARCH_X86_64_KRELOC_H

#include "kernel/kreloc.h"

#define KRELOC_WINDOW_LO 0xffffffff80000000ull /* the kernel window: top 2 GiB */
#define KRELOC_WINDOW_LEN (2ull << 30)
#define KRELOC_ALIGN (2ull << 20) /* slides move whole 2 MiB boot pages */

static const struct kreloc_layout kreloc_x86_64 = {
	.win_lo = KRELOC_WINDOW_LO,
	.win_len = KRELOC_WINDOW_LEN,
	.align = KRELOC_ALIGN,
	.outside_stays = true,
	.abs32_stays = true,
};

MUST_CHECK static inline int kreloc_check(const uint8_t *table, size_t table_len, const uint8_t *img, size_t img_len,
					  uint64_t slide, struct kreloc_report *report /* out */)
{
	return kreloc_check_in(&kreloc_x86_64, table, table_len, img, img_len, slide, report);
}

MUST_CHECK static inline int kreloc_apply(const uint8_t *table, size_t table_len, uint8_t *img, size_t img_len,
					  uint64_t slide, struct kreloc_report *report /* out */)
{
	return kreloc_apply_in(&kreloc_x86_64, table, table_len, img, img_len, slide, report);
}

#endif
