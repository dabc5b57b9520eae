/* SPDX-License-Identifier: MIT
 *
 * Reads the kernel's ELF64 executable (linked with --emit-relocs) through cursors: the
 * PT_LOAD extent and bytes, and the absolute-address sites of its allocated sections.
 * Never trusts an offset, size or index from the file without checking it against the
 * file's length or the table it indexes; never writes outside the caller's arrays.
 */
#include "tools/reloc/elfrel.h"

#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

#define EHDR_LEN 64u
#define PHDR_LEN 56u
#define SHDR_LEN 64u
#define RELA_LEN 24u
#define SYM_LEN 24u

#define ET_EXEC 2u
#define EM_X86_64 62u
#define EM_AARCH64 183u
#define PT_LOAD 1u
#define SHT_SYMTAB 2u
#define SHT_RELA 4u
#define SHF_ALLOC 0x2u
#define SHN_UNDEF 0u
#define SHN_ABS 0xfff1u

#define R_X86_64_NONE 0u
#define R_X86_64_64 1u
#define R_X86_64_PC32 2u
#define R_X86_64_PLT32 4u
#define R_X86_64_32 10u
#define R_X86_64_32S 11u
#define R_X86_64_PC64 24u

/* AArch64 (ELF for the Arm 64-bit Architecture, 5.7). Only ABS64 holds a whole address;
 * every other type the kernel emits is PC-relative or the low 12 bits of an address
 * (unchanged by a slide that is a multiple of 4 KiB: ADR-084). */
#define R_AARCH64_NONE 0u
#define R_AARCH64_ABS64 257u
#define R_AARCH64_ABS32 258u
#define R_AARCH64_ABS16 259u
#define R_AARCH64_PREL64 260u
#define R_AARCH64_PREL32 261u
#define R_AARCH64_PREL16 262u
#define R_AARCH64_LD_PREL_LO19 273u
#define R_AARCH64_ADR_PREL_LO21 274u
#define R_AARCH64_ADR_PREL_PG_HI21 275u
#define R_AARCH64_ADR_PREL_PG_HI21_NC 276u
#define R_AARCH64_ADD_ABS_LO12_NC 277u
#define R_AARCH64_LDST8_ABS_LO12_NC 278u
#define R_AARCH64_TSTBR14 279u
#define R_AARCH64_CONDBR19 280u
#define R_AARCH64_JUMP26 282u
#define R_AARCH64_CALL26 283u
#define R_AARCH64_LDST16_ABS_LO12_NC 284u
#define R_AARCH64_LDST32_ABS_LO12_NC 285u
#define R_AARCH64_LDST64_ABS_LO12_NC 286u
#define R_AARCH64_LDST128_ABS_LO12_NC 299u

struct ehdr {
	uint64_t phoff, shoff;
	uint16_t phnum, shnum, machine;
};

struct shdr {
	uint32_t type, link, info;
	uint64_t flags, addr, offset, size, entsize;
};

static int ehdr_read(const uint8_t *elf, size_t len, struct ehdr *h)
{
	struct cur c = cur_make(elf, len);
	const uint8_t *ident = cur_ptr(&c, 16);
	if (!ident || ident[0] != 0x7f || ident[1] != 'E' || ident[2] != 'L' || ident[3] != 'F' ||
	    ident[4] != 2 /* 64-bit */ || ident[5] != 1 /* little-endian */)
		return -E_INVAL;
	uint16_t type = cur_le16(&c), machine = cur_le16(&c);
	cur_skip(&c, 4 + 8); /* version, entry */
	h->phoff = cur_le64(&c);
	h->shoff = cur_le64(&c);
	cur_skip(&c, 4 + 2); /* flags, ehsize */
	uint16_t phentsize = cur_le16(&c);
	h->phnum = cur_le16(&c);
	uint16_t shentsize = cur_le16(&c);
	h->shnum = cur_le16(&c);
	h->machine = machine;
	if (!cur_ok(&c) || type != ET_EXEC || (machine != EM_X86_64 && machine != EM_AARCH64) || phentsize != PHDR_LEN ||
	    (h->shnum && shentsize != SHDR_LEN))
		return -E_INVAL;
	if (h->phoff > len || (len - h->phoff) / PHDR_LEN < h->phnum || h->shoff > len ||
	    (len - h->shoff) / SHDR_LEN < h->shnum)
		return -E_INVAL;
	return 0;
}

static int shdr_read(const uint8_t *elf, size_t len, const struct ehdr *h, uint32_t i, struct shdr *s)
{
	if (i >= h->shnum)
		return -E_INVAL;
	struct cur c = cur_make(elf + h->shoff + (size_t)i * SHDR_LEN, SHDR_LEN);
	cur_skip(&c, 4); /* name */
	s->type = cur_le32(&c);
	s->flags = cur_le64(&c);
	s->addr = cur_le64(&c);
	s->offset = cur_le64(&c);
	s->size = cur_le64(&c);
	s->link = cur_le32(&c);
	s->info = cur_le32(&c);
	cur_skip(&c, 8);
	s->entsize = cur_le64(&c);
	if (!cur_ok(&c))
		return -E_INVAL;
	/* Only sections with file contents are read through offset and size. */
	if ((s->type == SHT_RELA || s->type == SHT_SYMTAB) && (s->offset > len || s->size > len - s->offset))
		return -E_INVAL;
	return 0;
}

/* One program header; only PT_LOAD ones are checked and used. */
struct load {
	uint64_t vaddr, memsz, offset, filesz;
};

static int load_read(const uint8_t *elf, size_t len, const struct ehdr *h, uint16_t i, struct load *l,
		     bool *is_load)
{
	struct cur c = cur_make(elf + h->phoff + (size_t)i * PHDR_LEN, PHDR_LEN);
	uint32_t type = cur_le32(&c);
	cur_skip(&c, 4); /* flags */
	l->offset = cur_le64(&c);
	l->vaddr = cur_le64(&c);
	cur_skip(&c, 8); /* paddr */
	l->filesz = cur_le64(&c);
	l->memsz = cur_le64(&c);
	if (!cur_ok(&c))
		return -E_INVAL;
	*is_load = type == PT_LOAD;
	if (!*is_load)
		return 0;
	if (l->filesz > l->memsz || l->offset > len || l->filesz > len - l->offset ||
	    l->vaddr > UINT64_MAX - l->memsz)
		return -E_INVAL;
	return 0;
}

/* The next non-empty PT_LOAD header at or after *i: 1 with *l filled and *i past it, 0
 * when there is none, or a negative error. */
static int load_next(const uint8_t *elf, size_t len, const struct ehdr *h, uint16_t *i, struct load *l)
{
	while (*i < h->phnum) {
		bool is_load;
		int rc = load_read(elf, len, h, (*i)++, l, &is_load);
		if (rc)
			return rc;
		if (is_load && l->memsz)
			return 1;
	}
	return 0;
}

int elfrel_image_extent(const uint8_t *elf, size_t elf_len, struct elfrel_image *out)
{
	struct ehdr h;
	struct load l;
	uint16_t i = 0;
	int rc = ehdr_read(elf, elf_len, &h);
	uint64_t lo = UINT64_MAX, hi = 0;
	while (!rc && (rc = load_next(elf, elf_len, &h, &i, &l)) > 0) {
		lo = MIN(lo, l.vaddr);
		hi = MAX(hi, l.vaddr + l.memsz);
		rc = 0;
	}
	if (rc)
		return rc;
	/* Offsets are stored as u32 in the table: the image must stay below 4 GiB. */
	if (lo >= hi || hi - lo > UINT32_MAX)
		return -E_INVAL;
	out->base = lo;
	out->len = (size_t)(hi - lo);
	out->machine = h.machine;
	return 0;
}

int elfrel_image_flatten(const uint8_t *elf, size_t elf_len, const struct elfrel_image *img, uint8_t *out)
{
	struct ehdr h;
	struct load l;
	uint16_t i = 0;
	int rc = ehdr_read(elf, elf_len, &h);
	if (rc)
		return rc;
	memset(out, 0, img->len);
	while ((rc = load_next(elf, elf_len, &h, &i, &l)) > 0) {
		if (l.vaddr < img->base || l.vaddr + l.memsz - img->base > img->len)
			return -E_INVAL; /* not the extent this file gave */
		memcpy(out + (l.vaddr - img->base), elf + l.offset, (size_t)l.filesz);
	}
	return rc;
}

/* The section index of relocation r's symbol, through the symbol table link. */
static int sym_shndx(const uint8_t *elf, const struct shdr *symtab, uint32_t sym, uint16_t *shndx)
{
	if (symtab->entsize != SYM_LEN || sym >= symtab->size / SYM_LEN)
		return -E_INVAL;
	struct cur c = cur_make(elf + symtab->offset + (size_t)sym * SYM_LEN, SYM_LEN);
	cur_skip(&c, 4 + 1 + 1);
	*shndx = cur_le16(&c);
	return cur_ok(&c) ? 0 : -E_INVAL;
}

/* 1: an absolute site of *width; 0: moves by itself (relative) or never needs moving;
 * 2: an absolute form too narrow for an image address, fine only against an absolute
 * symbol (the aarch64 PE header's sizes); -E_NOSYS: a type a slide cannot fix, or one
 * this tool does not know. *pc_rel says
 * whether the type is relative to the place (then an absolute symbol is refused). */
static int site_width(uint16_t machine, uint32_t type, uint8_t *width, bool *pc_rel)
{
	*pc_rel = false;
	if (machine == EM_AARCH64) {
		switch (type) {
		case R_AARCH64_ABS64: *width = ELFREL_ABS64; return 1;
		case R_AARCH64_ABS32:
		case R_AARCH64_ABS16: return 2;
		case R_AARCH64_ADD_ABS_LO12_NC:
		case R_AARCH64_LDST8_ABS_LO12_NC:
		case R_AARCH64_LDST16_ABS_LO12_NC:
		case R_AARCH64_LDST32_ABS_LO12_NC:
		case R_AARCH64_LDST64_ABS_LO12_NC:
		case R_AARCH64_LDST128_ABS_LO12_NC:
		case R_AARCH64_NONE: return 0; /* the low 12 bits: a 4 KiB-multiple slide keeps them */
		case R_AARCH64_PREL64:
		case R_AARCH64_PREL32:
		case R_AARCH64_PREL16:
		case R_AARCH64_LD_PREL_LO19:
		case R_AARCH64_ADR_PREL_LO21:
		case R_AARCH64_ADR_PREL_PG_HI21:
		case R_AARCH64_ADR_PREL_PG_HI21_NC:
		case R_AARCH64_TSTBR14:
		case R_AARCH64_CONDBR19:
		case R_AARCH64_JUMP26:
		case R_AARCH64_CALL26: *pc_rel = true; return 0;
		default: return -E_NOSYS; /* ABS32/16, MOVW_UABS_*, GOT, TLS: not in a kernel we slide */
		}
	}
	switch (type) {
	case R_X86_64_64: *width = ELFREL_ABS64; return 1;
	case R_X86_64_32: *width = ELFREL_ABS32; return 1;
	case R_X86_64_32S: *width = ELFREL_ABS32S; return 1;
	case R_X86_64_PC32:
	case R_X86_64_PLT32:
	case R_X86_64_PC64: *pc_rel = true; return 0;
	case R_X86_64_NONE: return 0;
	default: return -E_NOSYS;
	}
}

static int rela_section_collect(const uint8_t *elf, size_t elf_len, const struct ehdr *h, const struct shdr *rs,
				const struct elfrel_image *img, struct elfrel_site *out, size_t cap, size_t *n)
{
	struct shdr target, symtab;
	int rc;
	if ((rc = shdr_read(elf, elf_len, h, rs->info, &target)) != 0)
		return rc;
	if (!(target.flags & SHF_ALLOC))
		return 0; /* debug information: not loaded, nothing to move */
	if ((rc = shdr_read(elf, elf_len, h, rs->link, &symtab)) != 0 || symtab.type != SHT_SYMTAB)
		return rc ? rc : -E_INVAL;
	if (rs->entsize != RELA_LEN || rs->size % RELA_LEN)
		return -E_INVAL;
	struct cur c = cur_make(elf + rs->offset, (size_t)rs->size);
	while (cur_left(&c)) {
		uint64_t where = cur_le64(&c), info = cur_le64(&c);
		cur_skip(&c, 8); /* addend: already applied by the linker */
		if (!cur_ok(&c))
			return -E_INVAL;
		uint32_t type = (uint32_t)info, sym = (uint32_t)(info >> 32);
		uint8_t width = 0;
		bool pc_rel;
		int abs = site_width(h->machine, type, &width, &pc_rel);
		if (abs < 0)
			return abs;
		uint16_t shndx = SHN_UNDEF;
		if (sym && (rc = sym_shndx(elf, &symtab, sym, &shndx)) != 0)
			return rc;
		if (abs == 2 && shndx != SHN_ABS)
			return -E_NOSYS; /* an image address in 32 or 16 bits: cannot move on aarch64 */
		if (shndx == SHN_ABS) {
			if (pc_rel)
				return -E_NOSYS; /* relative to a constant: would need -delta */
			continue;         /* an absolute value: does not move */
		}
		if (!abs)
			continue;
		size_t size = width == ELFREL_ABS64 ? 8 : 4;
		if (where < img->base || where - img->base > img->len - size)
			return -E_INVAL;
		if (*n < cap) {
			out[*n].offset = (uint32_t)(where - img->base);
			out[*n].width = width;
		}
		(*n)++;
	}
	return 0;
}

static void sites_sort(struct elfrel_site *s, size_t n)
{
	/* Insertion sort: the linker emits sections in order, so runs are already sorted. */
	for (size_t i = 1; i < n; i++) {
		struct elfrel_site v = s[i];
		size_t j = i;
		while (j > 0 && s[j - 1].offset > v.offset) {
			s[j] = s[j - 1];
			j--;
		}
		s[j] = v;
	}
}

int elfrel_sites_collect(const uint8_t *elf, size_t elf_len, const struct elfrel_image *img,
			 struct elfrel_site *out, size_t cap, size_t *n_out)
{
	struct ehdr h;
	int rc = ehdr_read(elf, elf_len, &h);
	if (rc)
		return rc;
	size_t n = 0;
	for (uint32_t i = 0; i < h.shnum; i++) {
		struct shdr s;
		if ((rc = shdr_read(elf, elf_len, &h, i, &s)) != 0)
			return rc;
		if (s.type != SHT_RELA)
			continue;
		if ((rc = rela_section_collect(elf, elf_len, &h, &s, img, out, cap, &n)) != 0)
			return rc;
	}
	*n_out = n;
	if (n > cap)
		return -E_OVERFLOW;
	sites_sort(out, n);
	for (size_t i = 1; i < n; i++)
		if (out[i].offset == out[i - 1].offset)
			return -E_INVAL; /* two relocations of one site */
	return 0;
}

int elfrel_sites_apply(uint8_t *img, size_t img_len, const struct elfrel_site *sites, size_t n, int64_t delta)
{
	for (size_t i = 0; i < n; i++) {
		size_t size = sites[i].width == ELFREL_ABS64 ? 8 : 4;
		if (sites[i].offset > img_len || img_len - sites[i].offset < size)
			return -E_RANGE;
		uint8_t *p = img + sites[i].offset;
		struct cur c = cur_make(p, size);
		struct wcur w = wcur_make(p, size);
		if (sites[i].width == ELFREL_ABS64) {
			wcur_le64(&w, cur_le64(&c) + (uint64_t)delta);
		} else if (sites[i].width == ELFREL_ABS32) {
			int64_t v = (int64_t)cur_le32(&c) + delta;
			if (v < 0 || v > (int64_t)UINT32_MAX)
				return -E_RANGE;
			wcur_le32(&w, (uint32_t)v);
		} else {
			int64_t v = (int64_t)(int32_t)cur_le32(&c) + delta;
			if (v < INT32_MIN || v > INT32_MAX)
				return -E_RANGE;
			wcur_le32(&w, (uint32_t)(int32_t)v);
		}
	}
	return 0;
}

long elfrel_table_write(const struct elfrel_site *sites, size_t n, uint8_t *out, size_t cap)
{
	struct wcur w = wcur_make(out, cap);
	wcur_bytes(&w, "URMQREL1", 8);
	wcur_le32(&w, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		wcur_le32(&w, sites[i].offset);
		wcur_le32(&w, sites[i].width);
	}
	if (!wcur_ok(&w) || n > UINT32_MAX)
		return -E_OVERFLOW;
	return (long)w.pos;
}
