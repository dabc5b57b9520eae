/* SPDX-License-Identifier: MIT
 * Unit tests for tools/reloc/elfrel (the kernel image's relocation sites): a small ELF
 * built here with one loadable segment, a symbol table and one RELA section; the sites
 * found, their order and widths; moving an image; the table encoding; and refusals:
 * every truncation, bad headers, out-of-range offsets and indices, unknown relocation
 * types, PC-relative relocations against constants, duplicate sites, overflow. The same
 * file as an aarch64 executable: ABS64 the only site; PC-relative and low-12-bit forms
 * none; narrow absolute forms only against constants; every other type refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/err.h"
#include "tools/reloc/elfrel.h"

#define BASE 0xffffffff80100000ull
#define SEG_OFF 0x100u
#define SEG_FILESZ 64u
#define SEG_MEMSZ 128u
#define SHDR_OFF 0x200u
#define SYM_OFF 0x400u
#define RELA_OFF 0x500u
#define ELF_LEN 0x800u

struct rela {
	uint64_t where;
	uint32_t type, sym;
};

static uint8_t elf[ELF_LEN];

static void put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void shdr(int i, uint32_t type, uint64_t flags, uint64_t addr, uint64_t off, uint64_t size, uint32_t link,
		 uint32_t info, uint64_t entsize)
{
	uint8_t *s = elf + SHDR_OFF + 64 * i;
	put(s + 4, type, 4);
	put(s + 8, flags, 8);
	put(s + 16, addr, 8);
	put(s + 24, off, 8);
	put(s + 32, size, 8);
	put(s + 40, link, 4);
	put(s + 44, info, 4);
	put(s + 56, entsize, 8);
}

/* Symbols: 0 null, 1 the .data section symbol, 2 an absolute constant. */
static void build(const struct rela *r, size_t n)
{
	memset(elf, 0, sizeof elf);
	memcpy(elf, "\x7f" "ELF\x02\x01\x01", 7);
	put(elf + 16, 2, 2);  /* ET_EXEC */
	put(elf + 18, 62, 2); /* EM_X86_64 */
	put(elf + 20, 1, 4);
	put(elf + 32, 64, 8);       /* phoff */
	put(elf + 40, SHDR_OFF, 8); /* shoff */
	put(elf + 52, 64, 2);
	put(elf + 54, 56, 2);
	put(elf + 56, 1, 2);
	put(elf + 58, 64, 2);
	put(elf + 60, 4, 2);
	uint8_t *ph = elf + 64;
	put(ph, 1, 4); /* PT_LOAD */
	put(ph + 8, SEG_OFF, 8);
	put(ph + 16, BASE, 8);
	put(ph + 24, BASE - 0xffffffff80000000ull, 8);
	put(ph + 32, SEG_FILESZ, 8);
	put(ph + 40, SEG_MEMSZ, 8);
	for (unsigned i = 0; i < SEG_FILESZ; i++)
		elf[SEG_OFF + i] = (uint8_t)(0xa0 + i);
	shdr(1, 1 /* PROGBITS */, 0x3, BASE, SEG_OFF, SEG_FILESZ, 0, 0, 0);
	shdr(2, 2 /* SYMTAB */, 0, 0, SYM_OFF, 3 * 24, 0, 0, 24);
	shdr(3, 4 /* RELA */, 0, 0, RELA_OFF, n * 24, 2, 1, 24);
	put(elf + SYM_OFF + 24 + 6, 1, 2);
	put(elf + SYM_OFF + 48 + 6, 0xfff1, 2);
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = elf + RELA_OFF + 24 * i;
		put(e, r[i].where, 8);
		put(e + 8, ((uint64_t)r[i].sym << 32) | r[i].type, 8);
	}
}

static int collect(struct elfrel_site *s, size_t cap, size_t *n)
{
	struct elfrel_image img;
	int rc = elfrel_image_extent(elf, sizeof elf, &img);
	if (rc)
		return rc;
	return elfrel_sites_collect(elf, sizeof elf, &img, s, cap, n);
}

static const struct rela good[] = {
	{ BASE + 16, 10, 1 }, /* R_X86_64_32 */
	{ BASE + 0, 1, 1 },   /* R_X86_64_64 */
	{ BASE + 8, 11, 1 },  /* R_X86_64_32S */
	{ BASE + 20, 2, 1 },  /* PC32 to a section: no site */
	{ BASE + 24, 1, 2 },  /* 64 to a constant: no site */
	{ BASE + 32, 4, 1 },  /* PLT32: no site */
};

static void test_sites_found_sorted(void **state)
{
	(void)state;
	build(good, 6);
	struct elfrel_image img;
	assert_int_equal(elfrel_image_extent(elf, sizeof elf, &img), 0);
	assert_true(img.base == BASE);
	assert_int_equal(img.len, SEG_MEMSZ);
	struct elfrel_site s[8];
	size_t n = 0;
	assert_int_equal(elfrel_sites_collect(elf, sizeof elf, &img, s, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(s[0].offset, 0);
	assert_int_equal(s[0].width, ELFREL_ABS64);
	assert_int_equal(s[1].offset, 8);
	assert_int_equal(s[1].width, ELFREL_ABS32S);
	assert_int_equal(s[2].offset, 16);
	assert_int_equal(s[2].width, ELFREL_ABS32);
}

static void test_flatten_zero_fills_memsz(void **state)
{
	(void)state;
	build(good, 6);
	struct elfrel_image img;
	assert_int_equal(elfrel_image_extent(elf, sizeof elf, &img), 0);
	uint8_t out[SEG_MEMSZ];
	memset(out, 0x55, sizeof out);
	assert_int_equal(elfrel_image_flatten(elf, sizeof elf, &img, out), 0);
	assert_int_equal(out[0], 0xa0);
	assert_int_equal(out[SEG_FILESZ - 1], 0xa0 + SEG_FILESZ - 1);
	for (unsigned i = SEG_FILESZ; i < SEG_MEMSZ; i++)
		assert_int_equal(out[i], 0);
}

static void test_apply_moves_each_width(void **state)
{
	(void)state;
	uint8_t img[24] = { 0 };
	put(img, 0xffffffff80101000ull, 8);
	put(img + 8, 0x80102000u, 4); /* -2 GiB + ..., sign-extended */
	put(img + 16, 0x00103000u, 4);
	const struct elfrel_site s[] = { { 0, ELFREL_ABS64 }, { 8, ELFREL_ABS32S }, { 16, ELFREL_ABS32 } };
	assert_int_equal(elfrel_sites_apply(img, sizeof img, s, 3, 0x200000), 0);
	uint8_t want[24] = { 0 };
	put(want, 0xffffffff80301000ull, 8);
	put(want + 8, 0x80302000u, 4);
	put(want + 16, 0x00303000u, 4);
	assert_memory_equal(img, want, sizeof img);
}

static void test_apply_refuses_overflow(void **state)
{
	(void)state;
	uint8_t img[8] = { 0 };
	put(img, 0xfffff000u, 4);
	const struct elfrel_site zx = { 0, ELFREL_ABS32 };
	assert_int_equal(elfrel_sites_apply(img, sizeof img, &zx, 1, 0x2000), -E_RANGE);
	put(img, 0x7ffff000u, 4);
	const struct elfrel_site sx = { 0, ELFREL_ABS32S };
	assert_int_equal(elfrel_sites_apply(img, sizeof img, &sx, 1, 0x2000), -E_RANGE);
	const struct elfrel_site past = { 6, ELFREL_ABS32 };
	assert_int_equal(elfrel_sites_apply(img, sizeof img, &past, 1, 0), -E_RANGE);
}

static void test_table_encoding(void **state)
{
	(void)state;
	const struct elfrel_site s[] = { { 0x10, ELFREL_ABS64 }, { 0x1234, ELFREL_ABS32S } };
	uint8_t out[28];
	assert_int_equal(elfrel_table_write(s, 2, out, sizeof out), 28);
	assert_memory_equal(out, "URMQREL1\x02\0\0\0\x10\0\0\0\x01\0\0\0\x34\x12\0\0\x03\0\0\0", 28);
	assert_int_equal(elfrel_table_write(s, 2, out, 27), -E_OVERFLOW);
}

static void test_capacity_reports_need(void **state)
{
	(void)state;
	build(good, 6);
	struct elfrel_site s[2];
	size_t n = 0;
	assert_int_equal(collect(s, 2, &n), -E_OVERFLOW);
	assert_int_equal(n, 3);
}

static void test_refusals(void **state)
{
	(void)state;
	struct elfrel_site s[8];
	size_t n;
	static const struct {
		const char *what;
		struct rela r;
		int rc;
	} cases[] = {
		{ "unknown type (R_X86_64_16)", { BASE, 12, 1 }, -E_NOSYS },
		{ "PC32 against a constant", { BASE, 2, 2 }, -E_NOSYS },
		{ "symbol index past the table", { BASE, 1, 3 }, -E_INVAL },
		{ "site below the image", { BASE - 8, 1, 1 }, -E_INVAL },
		{ "site straddling the end", { BASE + SEG_MEMSZ - 4, 1, 1 }, -E_INVAL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		build(&cases[i].r, 1);
		int rc = collect(s, 8, &n);
		if (rc != cases[i].rc)
			fail_msg("%s: got %d, want %d", cases[i].what, rc, cases[i].rc);
	}
	const struct rela twice[] = { { BASE, 1, 1 }, { BASE, 1, 1 } };
	build(twice, 2);
	assert_int_equal(collect(s, 8, &n), -E_INVAL);
}

static void test_bad_headers(void **state)
{
	(void)state;
	struct elfrel_image img;
	struct elfrel_site s[8];
	size_t n;
	build(good, 6);
	elf[4] = 1; /* 32-bit */
	assert_int_equal(elfrel_image_extent(elf, sizeof elf, &img), -E_INVAL);
	build(good, 6);
	put(elf + 16, 3, 2); /* ET_DYN */
	assert_int_equal(elfrel_image_extent(elf, sizeof elf, &img), -E_INVAL);
	build(good, 6);
	put(elf + 64 + 32, 0x10000, 8); /* filesz past the file */
	assert_int_equal(elfrel_image_extent(elf, sizeof elf, &img), -E_INVAL);
	build(good, 6);
	put(elf + SHDR_OFF + 3 * 64 + 44, 9, 4); /* RELA target index out of range */
	assert_int_equal(collect(s, 8, &n), -E_INVAL);
	build(good, 6);
	put(elf + SHDR_OFF + 3 * 64 + 32, 0x10000, 8); /* RELA size past the file */
	assert_int_equal(collect(s, 8, &n), -E_INVAL);
	build(good, 6);
	put(elf + SHDR_OFF + 3 * 64 + 32, 25, 8); /* not a whole number of entries */
	assert_int_equal(collect(s, 8, &n), -E_INVAL);
}

/* Every prefix of a valid file is refused or parsed; nothing is read past its end. */
static void test_every_truncation(void **state)
{
	(void)state;
	build(good, 6);
	static uint8_t copy[ELF_LEN];
	for (size_t len = 0; len < sizeof elf; len++) {
		memcpy(copy, elf, len);
		struct elfrel_image img;
		struct elfrel_site s[8];
		size_t n;
		if (elfrel_image_extent(copy, len, &img) != 0)
			continue;
		int rc = elfrel_sites_collect(copy, len, &img, s, 8, &n);
		assert_true(rc == 0 || rc == -E_INVAL);
	}
}

/* The same file as an aarch64 executable (e_machine 183, ADR-084). */
static void build_a64(const struct rela *r, size_t n)
{
	build(r, n);
	put(elf + 18, 183, 2);
}

static void test_aarch64_sites(void **state)
{
	(void)state;
	static const struct rela a64[] = {
		{ BASE + 0, 275, 1 },  /* ADR_PREL_PG_HI21 to a section: no site */
		{ BASE + 4, 277, 1 },  /* ADD_ABS_LO12_NC: low 12 bits, no site */
		{ BASE + 8, 283, 1 },  /* CALL26: no site */
		{ BASE + 16, 257, 1 }, /* ABS64: a site */
		{ BASE + 24, 286, 1 }, /* LDST64_ABS_LO12_NC: no site */
		{ BASE + 28, 258, 2 }, /* ABS32 of a constant (the PE header's sizes): no site */
		{ BASE + 32, 257, 2 }, /* ABS64 of a constant: no site */
		{ BASE + 40, 261, 1 }, /* PREL32: no site */
		{ BASE + 44, 277, 2 }, /* ADD_ABS_LO12_NC of a constant: no site */
		{ BASE + 48, 257, 1 }, /* ABS64: a site */
		{ BASE + 56, 0, 0 },   /* NONE */
	};
	build_a64(a64, sizeof a64 / sizeof a64[0]);
	struct elfrel_image img;
	assert_int_equal(elfrel_image_extent(elf, sizeof elf, &img), 0);
	assert_int_equal(img.machine, 183);
	struct elfrel_site s[8];
	size_t n = 0;
	assert_int_equal(elfrel_sites_collect(elf, sizeof elf, &img, s, 8, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(s[0].offset, 16);
	assert_int_equal(s[0].width, ELFREL_ABS64);
	assert_int_equal(s[1].offset, 48);
	assert_int_equal(s[1].width, ELFREL_ABS64);
	build(good, 6);
	assert_int_equal(elfrel_image_extent(elf, sizeof elf, &img), 0);
	assert_int_equal(img.machine, 62);
}

static void test_aarch64_refusals(void **state)
{
	(void)state;
	struct elfrel_site s[8];
	size_t n;
	static const struct {
		const char *what;
		struct rela r;
		int rc;
	} cases[] = {
		{ "ABS32 of an image address", { BASE, 258, 1 }, -E_NOSYS },
		{ "ABS16 of an image address", { BASE, 259, 1 }, -E_NOSYS },
		{ "MOVW_UABS_G0 (absolute in an instruction)", { BASE, 263, 1 }, -E_NOSYS },
		{ "MOVW_UABS_G3", { BASE, 269, 1 }, -E_NOSYS },
		{ "ADR_GOT_PAGE (a GOT)", { BASE, 311, 1 }, -E_NOSYS },
		{ "R_X86_64_64's number, unknown on aarch64", { BASE, 1, 1 }, -E_NOSYS },
		{ "ADRP against a constant", { BASE, 275, 2 }, -E_NOSYS },
		{ "CALL26 against a constant", { BASE, 283, 2 }, -E_NOSYS },
		{ "PREL64 against a constant", { BASE, 260, 2 }, -E_NOSYS },
		{ "ABS64 straddling the end", { BASE + SEG_MEMSZ - 4, 257, 1 }, -E_INVAL },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		build_a64(&cases[i].r, 1);
		int rc = collect(s, 8, &n);
		if (rc != cases[i].rc)
			fail_msg("%s: got %d, want %d", cases[i].what, rc, cases[i].rc);
	}
	/* x86_64's R_X86_64_32 number (10) means nothing on aarch64: refused, not a site. */
	static const struct rela x86_on_a64 = { BASE, 10, 1 };
	build_a64(&x86_on_a64, 1);
	assert_int_equal(collect(s, 8, &n), -E_NOSYS);
	/* Another machine (EM_ARM, 40): refused. */
	struct elfrel_image img;
	build(good, 6);
	put(elf + 18, 40, 2);
	assert_int_equal(elfrel_image_extent(elf, sizeof elf, &img), -E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sites_found_sorted),   cmocka_unit_test(test_flatten_zero_fills_memsz),
		cmocka_unit_test(test_apply_moves_each_width), cmocka_unit_test(test_apply_refuses_overflow),
		cmocka_unit_test(test_table_encoding),       cmocka_unit_test(test_capacity_reports_need),
		cmocka_unit_test(test_refusals),             cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_every_truncation),     cmocka_unit_test(test_aarch64_sites),
		cmocka_unit_test(test_aarch64_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
