/* SPDX-License-Identifier: MIT
 *
 * The relocation table a kernel image carries (section .urmqtt_relocs, written by
 * tools/reloc from an --emit-relocs link, ADR-020) and the boot-time applier that moves
 * the image's addresses by a KASLR slide (ADR-077 x86_64, ADR-084 aarch64). Portable
 * and arch-neutral: each architecture describes its window in a struct kreloc_layout
 * (arch/x86_64/kreloc.h: the top 2 GiB, virtual; arch/aarch64/kaslr.c: the image's
 * physical = virtual placement). The same file runs in the kernels, before anything
 * else in C, and in the host tool, unit tests and fuzzers.
 *
 * Table: "URMQREL1", u32 count, then per site u32 offset (from the image base) and u32
 * width (1: 64-bit, 2: 32-bit zero-extended, 3: 32-bit sign-extended), little-endian.
 * A 64-bit or sign-extended site whose value lies in the layout's window moves; one
 * outside it stays when the layout allows it (x86_64: physical addresses of the boot
 * code) and is refused otherwise. 32-bit zero-extended sites stay when the layout allows
 * them, else are refused.
 *
 * The table is external input as far as this code is concerned (a corrupted image must
 * stop the boot, not scribble): every entry is checked before the first byte is written,
 * so a refused table leaves the image exactly as it was. Never writes outside [img,
 * img + img_len); never allocates; no globals (it runs before .bss is cleared).
 */
#ifndef KERNEL_KRELOC_H
#define KERNEL_KRELOC_H

#include "lib/compiler.h"

#define KRELOC_MAGIC "URMQREL1"
#define KRELOC_HDR_LEN 12u
#define KRELOC_ENTRY_LEN 8u

/* Where an architecture's moving addresses live and how it may slide. */
struct kreloc_layout {
	uint64_t win_lo;     /* moving addresses lie in [win_lo, win_lo + win_len) ... */
	uint64_t win_len;    /* ... and must stay there once moved; slides are below win_len */
	uint64_t align;      /* slides are multiples of this (a power of two) */
	bool outside_stays;  /* a site outside the window is left alone (else: refused) */
	bool abs32_stays;    /* 32-bit zero-extended sites allowed, left alone (else: refused) */
};

/* Why a table was refused (the first bad entry; index in the report). */
enum kreloc_why {
	KRELOC_OK = 0,
	KRELOC_BAD_SLIDE,    /* not aligned, or not below the window's size */
	KRELOC_BAD_HEADER,   /* too short, or wrong magic */
	KRELOC_BAD_COUNT,    /* more entries than the table holds */
	KRELOC_BAD_WIDTH,    /* unknown width, or one the layout does not allow */
	KRELOC_OUT_OF_IMAGE, /* a site not wholly inside the image */
	KRELOC_UNSORTED,     /* sites must be in increasing order and must not overlap */
	KRELOC_OVERFLOW,     /* a moved address would leave the window */
	KRELOC_OUTSIDE,      /* a site's value outside the window, where the layout forbids it */
};

struct kreloc_report {
	uint32_t n_sites;   /* entries in the table */
	uint32_t n_moved;   /* addresses moved (0 when the slide is 0) */
	uint32_t n_phys;    /* addresses left as they are */
	uint32_t bad_index; /* the entry refused, when why != KRELOC_OK */
	enum kreloc_why why;
};

/* A word for why (static string, no address). */
const char *kreloc_why_name(enum kreloc_why why);

/* Checks the table (borrowed, table_len bytes) against the image bytes (borrowed,
 * img_len) for this layout and slide, writing nothing. 0, or -E_INVAL with report->why
 * and report->bad_index set. */
MUST_CHECK int kreloc_check_in(const struct kreloc_layout *lay, const uint8_t *table, size_t table_len,
			       const uint8_t *img, size_t img_len, uint64_t slide,
			       struct kreloc_report *report /* out */);

/* kreloc_check_in, then (only when it passed) adds the slide to every moving site of img.
 * Same result and report; on an error img is unchanged. */
MUST_CHECK int kreloc_apply_in(const struct kreloc_layout *lay, const uint8_t *table, size_t table_len,
			       uint8_t *img, size_t img_len, uint64_t slide, struct kreloc_report *report /* out */);

#endif
