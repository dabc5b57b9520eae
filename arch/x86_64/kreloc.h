/* SPDX-License-Identifier: MIT
 *
 * The relocation table the x86_64 image carries (section .urmqtt_relocs, written by
 * tools/reloc from a second --emit-relocs link, ADR-020) and the boot-time applier that
 * moves the image's virtual addresses by a KASLR slide (ADR-077). Portable: the same
 * file runs in the kernel, on the boot tables before anything else in C, and in the host
 * unit tests and fuzzer.
 *
 * Table: "URMQREL1", u32 count, then per site u32 offset (from the image base) and u32
 * width (1: 64-bit, 2: 32-bit zero-extended, 3: 32-bit sign-extended), little-endian.
 * The slide moves only virtual addresses (the loader's physical placement stays): a site
 * whose value lies in the kernel window (the top 2 GiB, -mcmodel=kernel) moves; one below
 * it is a physical address (boot code, the PVH note) and stays. 32-bit zero-extended sites
 * are always physical.
 *
 * The table is external input as far as this code is concerned (a corrupted image must
 * stop the boot, not scribble): every entry is checked before the first byte is written,
 * so a refused table leaves the image exactly as it was. Never writes outside [img,
 * img + img_len); never allocates.
 */
#ifndef ARCH_X86_64_KRELOC_H
#define ARCH_X86_64_KRELOC_H

#include "lib/compiler.h"

#define KRELOC_MAGIC "URMQREL1"
#define KRELOC_HDR_LEN 12u
#define KRELOC_ENTRY_LEN 8u
#define KRELOC_WINDOW_LO 0xffffffff80000000ull /* the kernel window: top 2 GiB */
#define KRELOC_WINDOW_LEN (2ull << 30)
#define KRELOC_ALIGN (2ull << 20) /* slides move whole 2 MiB boot pages */

/* Why a table was refused (the first bad entry; index in the report). */
enum kreloc_why {
	KRELOC_OK = 0,
	KRELOC_BAD_SLIDE,    /* not 2 MiB aligned, or not below the window's size */
	KRELOC_BAD_HEADER,   /* too short, or wrong magic */
	KRELOC_BAD_COUNT,    /* more entries than the table holds */
	KRELOC_BAD_WIDTH,    /* unknown width */
	KRELOC_OUT_OF_IMAGE, /* a site not wholly inside the image */
	KRELOC_UNSORTED,     /* sites must be in increasing order and must not overlap */
	KRELOC_OVERFLOW,     /* a moved address would leave the kernel window */
};

struct kreloc_report {
	uint32_t n_sites;   /* entries in the table */
	uint32_t n_moved;   /* virtual addresses moved (0 when the slide is 0) */
	uint32_t n_phys;    /* physical addresses left as they are */
	uint32_t bad_index; /* the entry refused, when why != KRELOC_OK */
	enum kreloc_why why;
};

/* A word for why (static string, no address). */
const char *kreloc_why_name(enum kreloc_why why);

/* Checks the table (borrowed, table_len bytes) against the image bytes (borrowed,
 * img_len) for this slide, writing nothing. 0, or -E_INVAL with report->why and
 * report->bad_index set. */
MUST_CHECK int kreloc_check(const uint8_t *table, size_t table_len, const uint8_t *img, size_t img_len,
			    uint64_t slide, struct kreloc_report *report /* out */);

/* kreloc_check, then (only when it passed) adds the slide to every virtual site of img.
 * Same result and report as kreloc_check; on an error img is unchanged. */
MUST_CHECK int kreloc_apply(const uint8_t *table, size_t table_len, uint8_t *img, size_t img_len, uint64_t slide,
			    struct kreloc_report *report /* out */);

#endif
