/* SPDX-License-Identifier: MIT
 *
 * ELF64 x86_64 and aarch64 relocation sites of the kernel image, for a later KASLR and for the build's
 * proof that the image is relocatable. Reads an executable linked with --emit-relocs
 * (a second link of the same objects: GRUB refuses images carrying relocation sections)
 * and answers two questions: what are the loadable bytes, laid out by virtual address;
 * and which of those bytes hold an absolute address that must move with the image.
 *
 * Everything is read through bounds-checked cursors; a malformed or unexpected file is
 * refused with -E_INVAL (or -E_NOSYS for a relocation type a slide cannot fix), never
 * followed. Nothing here allocates: callers pass the output arrays.
 */
#ifndef TOOLS_RELOC_ELFREL_H
#define TOOLS_RELOC_ELFREL_H

#include "lib/compiler.h"

/* How a site holds its address (the only absolute forms the kernel code models emit;
 * aarch64 has only ABS64, R_AARCH64_ABS64). */
enum elfrel_width {
	ELFREL_ABS64 = 1, /* R_X86_64_64: 8 bytes */
	ELFREL_ABS32 = 2, /* R_X86_64_32: 4 bytes, zero-extended (physical addresses in boot code) */
	ELFREL_ABS32S = 3 /* R_X86_64_32S: 4 bytes, sign-extended (-mcmodel=kernel addresses) */
};

struct elfrel_site {
	uint32_t offset; /* from the image base (lowest PT_LOAD virtual address) */
	uint8_t width;   /* enum elfrel_width */
};

struct elfrel_image {
	uint64_t base; /* lowest PT_LOAD virtual address */
	size_t len;    /* highest PT_LOAD end (memsz) minus base */
	uint16_t machine; /* e_machine: 62 (x86_64) or 183 (aarch64) */
};

/* The loadable extent of the ELF file (elf, elf_len borrowed). */
MUST_CHECK int elfrel_image_extent(const uint8_t *elf, size_t elf_len, struct elfrel_image *out);

/* Copies every PT_LOAD segment's file bytes into out (len from elfrel_image_extent; bytes
 * not backed by the file, such as .bss and gaps, become zero). */
MUST_CHECK int elfrel_image_flatten(const uint8_t *elf, size_t elf_len, const struct elfrel_image *img,
				    uint8_t *out /* out: img->len bytes */);

/* Collects every site in an allocated section that holds an absolute address of a symbol
 * that moves with the image, sorted by offset. Relocations against absolute symbols are
 * skipped (their value does not move); PC-relative ones need nothing unless they point
 * at an absolute symbol, which is refused with -E_NOSYS, like any other type.
 * -E_OVERFLOW when more than cap sites exist (n_out says how many were needed). */
MUST_CHECK int elfrel_sites_collect(const uint8_t *elf, size_t elf_len, const struct elfrel_image *img,
				    struct elfrel_site *out, size_t cap, size_t *n_out /* out */);

/* Adds delta to every site of a flattened image; -E_RANGE when a 32-bit site would
 * overflow its form (then the image is partly changed and must be discarded). */
MUST_CHECK int elfrel_sites_apply(uint8_t *img, size_t img_len, const struct elfrel_site *sites, size_t n,
				  int64_t delta);

/* Serialises the sites as the table a loader reads: "URMQREL1", u32 count, then per site
 * u32 offset and u32 width, all little-endian. Returns the bytes written, or -E_OVERFLOW. */
MUST_CHECK long elfrel_table_write(const struct elfrel_site *sites, size_t n, uint8_t *out, size_t cap);

#endif
