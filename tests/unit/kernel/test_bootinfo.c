/* SPDX-License-Identifier: MIT
 * Unit tests for arch/x86_64/bootinfo (PVH start_info and Multiboot2 parsers) against a
 * fake physical memory: valid structures, rounding of RAM ranges, and rejection of bad
 * magic, missing maps, out-of-range pointers, hostile counts and malformed tags. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "arch/x86_64/bootinfo.h"
#include "lib/err.h"

#define MEM_SIZE 0x10000
static uint8_t mem[MEM_SIZE];

static const void *fake_map(void *ctx, uint64_t phys, size_t len)
{
	(void)ctx;
	if (phys >= MEM_SIZE || len > MEM_SIZE - phys)
		return NULL;
	return mem + phys;
}
static const struct plat_phys_reader rd = { NULL, fake_map };

static void put32(uint64_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		mem[at + (uint64_t)i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint64_t at, uint64_t v)
{
	put32(at, (uint32_t)v);
	put32(at + 4, (uint32_t)(v >> 32));
}
static void e820(uint64_t at, uint64_t base, uint64_t len, uint32_t type)
{
	put64(at, base);
	put64(at + 8, len);
	put32(at + 16, type);
	put32(at + 20, 0);
}

static int setup(void **state)
{
	(void)state;
	memset(mem, 0, sizeof mem);
	return 0;
}

/* start_info at 0x1000, cmdline 0x2000, memmap 0x3000 with n entries */
static void pvh_build(uint32_t version, uint32_t n)
{
	put32(0x1000, BOOTINFO_PVH_MAGIC);
	put32(0x1004, version);
	put64(0x1018, 0x2000);  /* cmdline */
	put64(0x1020, 0xf5a10); /* rsdp */
	put64(0x1028, 0x3000);  /* memmap */
	put32(0x1030, n);
	strcpy((char *)mem + 0x2000, "test=boot console=x");
}

static void test_pvh_valid(void **state)
{
	(void)state;
	pvh_build(1, 4);
	e820(0x3000, 0, 0x9fc00, 1);
	e820(0x3018, 0x9fc00, 0x400, 2);
	e820(0x3030, 0x100000, 0x7ee0000, 1);
	e820(0x3048, 0x100800, 0x1000, 1); /* smaller than a page once aligned: dropped */
	struct boot_info bi;
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, 0x1000), 0);
	assert_int_equal(bi.kind, BOOTINFO_PVH);
	assert_string_equal(bi.cmdline, "test=boot console=x");
	assert_true(bi.rsdp_phys == 0xf5a10);
	assert_int_equal(bi.n_mem, 2);
	assert_true(bi.mem[0].base == 0 && bi.mem[0].len == 0x9f000); /* rounded down */
	assert_true(bi.mem[1].base == 0x100000 && bi.mem[1].len == 0x7ee0000);
	assert_true(bootinfo_mem_total(&bi) == 0x9f000 + 0x7ee0000);
}

static void test_pvh_rejects(void **state)
{
	(void)state;
	struct boot_info bi;
	/* bad magic */
	pvh_build(1, 1);
	e820(0x3000, 0x100000, 0x100000, 1);
	put32(0x1000, 0x12345678);
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, 0x1000), -E_INVAL);
	/* version 0: no memory map, but the command line is still read */
	pvh_build(0, 1);
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, 0x1000), -E_NOENT);
	assert_string_equal(bi.cmdline, "test=boot console=x");
	/* hostile entry count */
	pvh_build(1, 0x7fffffff);
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, 0x1000), -E_INVAL);
	/* memmap outside readable memory */
	pvh_build(1, 2);
	put64(0x1028, MEM_SIZE - 24);
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, 0x1000), -E_INVAL);
	/* start_info itself unreadable */
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, MEM_SIZE - 8), -E_INVAL);
	/* only reserved memory */
	pvh_build(1, 1);
	e820(0x3000, 0x100000, 0x100000, 2);
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, 0x1000), -E_NOENT);
	/* a range that wraps the address space is ignored */
	pvh_build(1, 1);
	e820(0x3000, 0xfffffffffffff000ull, 0x2000, 1);
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, 0x1000), -E_NOENT);
}

static void test_pvh_cmdline_truncated_and_many_ranges(void **state)
{
	(void)state;
	pvh_build(1, 40);
	memset(mem + 0x2000, 'a', 1000); /* no NUL within the limit */
	for (uint32_t i = 0; i < 40; i++)
		e820(0x3000 + 24u * i, 0x100000ull * (i + 1), 0x1000, 1);
	struct boot_info bi;
	assert_int_equal(bootinfo_parse_pvh(&bi, &rd, 0x1000), 0);
	assert_true(bi.cmdline_truncated);
	assert_int_equal(strlen(bi.cmdline), BOOTINFO_CMDLINE_MAX - 1);
	assert_int_equal(bi.n_mem, BOOTINFO_MAX_MEM);
	assert_int_equal(bi.n_mem_dropped, 40 - BOOTINFO_MAX_MEM);
}

/* MBI at 0x4000: cmdline tag, mmap tag (2 entries), ACPI v2 tag, end tag */
static uint32_t mb2_build(bool with_end, bool with_mmap)
{
	uint64_t p = 0x4008;
	put32(p, 1);
	put32(p + 4, 8 + 10);
	memcpy(mem + p + 8, "test=null", 10);
	p += 24; /* 18 padded to 8 */
	if (with_mmap) {
		put32(p, 6);
		put32(p + 4, 16 + 2 * 24);
		put32(p + 8, 24);
		put32(p + 12, 0);
		e820(p + 16, 0x100000, 0x400000, 1);
		e820(p + 40, 0x500000, 0x1000, 2);
		p += 16 + 48;
	}
	put32(p, 15);
	put32(p + 4, 8 + 36);
	memcpy(mem + p + 8, "RSD PTR ", 8);
	uint64_t rsdp_tag = p;
	p += 48;
	if (with_end) {
		put32(p, 0);
		put32(p + 4, 8);
		p += 8;
	}
	uint32_t total = (uint32_t)(p - 0x4000);
	put32(0x4000, total);
	put32(0x4004, 0);
	return (uint32_t)rsdp_tag;
}

static void test_mb2_valid(void **state)
{
	(void)state;
	uint32_t rsdp_tag = mb2_build(true, true);
	struct boot_info bi;
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), 0);
	assert_int_equal(bi.kind, BOOTINFO_MB2);
	assert_string_equal(bi.cmdline, "test=null");
	assert_int_equal(bi.n_mem, 1);
	assert_true(bi.mem[0].base == 0x100000 && bi.mem[0].len == 0x400000);
	assert_true(bi.rsdp_phys == rsdp_tag + 8u);
}

static void test_mb2_rejects(void **state)
{
	(void)state;
	struct boot_info bi;
	mb2_build(false, true); /* no end tag */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_INVAL);
	memset(mem, 0, sizeof mem);
	mb2_build(true, false); /* no memory map */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_NOENT);
	mb2_build(true, true);
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4004), -E_INVAL); /* misaligned */
	put32(0x400c, 4); /* tag size < 8 */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_INVAL);
	mb2_build(true, true);
	put32(0x400c, 0x10000); /* tag beyond total */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_INVAL);
	mb2_build(true, true);
	put32(0x4000, 8); /* total too small */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_INVAL);
	put32(0x4000, 0x100000); /* total too large */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_INVAL);
	mb2_build(true, true);
	put32(0x4020 + 8, 8); /* mmap entry_size < 24 */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_INVAL);
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, MEM_SIZE - 4), -E_INVAL);
}

/* MBI at 0x4000: mmap tag, one module tag per name (NULL: a tag of mod_size bytes with no
 * string), end tag. Module i at start + i * 0x10000. */
static void mb2_build_mods(uint32_t start, uint32_t end, uint32_t mod_size, const char *const *names, int n)
{
	uint64_t p = 0x4008;
	put32(p, 6);
	put32(p + 4, 16 + 24);
	put32(p + 8, 24);
	put32(p + 12, 0);
	e820(p + 16, 0x100000, 0x400000, 1);
	p += 40;
	for (int i = 0; i < n; i++) {
		uint32_t size = mod_size;
		if (names[i])
			size = 16 + (uint32_t)strlen(names[i]) + 1;
		put32(p, 3);
		put32(p + 4, size);
		put32(p + 8, start + (uint32_t)i * 0x10000u);
		put32(p + 12, end + (uint32_t)i * 0x10000u);
		if (names[i])
			memcpy(mem + p + 16, names[i], strlen(names[i]) + 1);
		p += (size + 7u) & ~7u;
	}
	put32(p, 0);
	put32(p + 4, 8);
	p += 8;
	put32(0x4000, (uint32_t)(p - 0x4000));
	put32(0x4004, 0);
}

static void test_mb2_modules(void **state)
{
	(void)state;
	struct boot_info bi;
	static const char *const esp_bios[] = { "esp", "bios" };
	mb2_build_mods(0x200000, 0x280123, 0, esp_bios, 2);
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), 0);
	assert_true(bi.n_mods == 2 && bi.n_mods_ignored == 0);
	assert_true(bi.has_mod[BOOTINFO_MOD_ESP] && bi.mods[BOOTINFO_MOD_ESP].base == 0x200000 &&
		    bi.mods[BOOTINFO_MOD_ESP].len == 0x80123);
	assert_true(bi.has_mod[BOOTINFO_MOD_BIOS] && bi.mods[BOOTINFO_MOD_BIOS].base == 0x210000 &&
		    bi.mods[BOOTINFO_MOD_BIOS].len == 0x80123);
	/* the other order, an unknown name, a second "esp", a name that only starts like one */
	static const char *const mixed[] = { "bios", "initrd", "esp", "esp", "espx", "bio" };
	mb2_build_mods(0x200000, 0x200100, 0, mixed, 6);
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), 0);
	assert_true(bi.n_mods == 6 && bi.n_mods_ignored == 4);
	assert_true(bi.mods[BOOTINFO_MOD_BIOS].base == 0x200000 && bi.mods[BOOTINFO_MOD_BIOS].len == 0x100);
	assert_true(bi.mods[BOOTINFO_MOD_ESP].base == 0x220000 && bi.mods[BOOTINFO_MOD_ESP].len == 0x100);
	static const char *const esp_only[] = { "esp" };
	mb2_build_mods(0x200000, 0x200000, 0, esp_only, 1); /* empty module */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), 0);
	assert_true(bi.n_mods == 1 && bi.has_mod[BOOTINFO_MOD_ESP] && bi.mods[BOOTINFO_MOD_ESP].len == 0);
	assert_false(bi.has_mod[BOOTINFO_MOD_BIOS]);
	mb2_build_mods(0x200000, 0x1fffff, 0, esp_only, 1); /* end before start */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_INVAL);
	static const char *const unnamed[] = { NULL };
	mb2_build_mods(0x200000, 0x280000, 8 + 4, unnamed, 1); /* tag too short for mod_end */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), -E_INVAL);
	memset(mem, 0, sizeof mem);
	mb2_build_mods(0x200000, 0x280000, 16, unnamed, 1); /* no string at all: ignored */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), 0);
	assert_true(bi.n_mods == 1 && bi.n_mods_ignored == 1 && !bi.has_mod[BOOTINFO_MOD_ESP]);
	memset(mem, 0, sizeof mem);
	mb2_build_mods(0x200000, 0x280000, 19, unnamed, 1); /* "esp" without its NUL: ignored */
	memcpy(mem + 0x4008 + 40 + 16, "esp", 3);
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), 0);
	assert_true(bi.n_mods == 1 && bi.n_mods_ignored == 1 && !bi.has_mod[BOOTINFO_MOD_ESP]);
	memset(mem, 0, sizeof mem);
	mb2_build(true, true); /* no module tag */
	assert_int_equal(bootinfo_parse_mb2(&bi, &rd, 0x4000), 0);
	assert_true(bi.n_mods == 0 && !bi.has_mod[BOOTINFO_MOD_ESP] && !bi.has_mod[BOOTINFO_MOD_BIOS]);
	assert_true(bi.mods[BOOTINFO_MOD_ESP].base == 0 && bi.mods[BOOTINFO_MOD_ESP].len == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_pvh_valid, setup),
		cmocka_unit_test_setup(test_pvh_rejects, setup),
		cmocka_unit_test_setup(test_pvh_cmdline_truncated_and_many_ranges, setup),
		cmocka_unit_test_setup(test_mb2_valid, setup),
		cmocka_unit_test_setup(test_mb2_rejects, setup),
		cmocka_unit_test_setup(test_mb2_modules, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
