/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/kreloc (the KASLR relocation applier) through its x86_64 layout
 * (arch/x86_64/kreloc.h): virtual sites of each width move by the slide, physical ones
 * stay; and every malformed table or impossible slide is refused before a single image
 * byte changes (the image is compared whole). Then the aarch64 layout (ADR-084):
 * every site moves, and one outside the window or of a 32-bit width is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "arch/x86_64/kreloc.h"
#include "lib/err.h"

#define IMG_LEN 256u
#define SLIDE (0x30000000ull) /* 384 x 2 MiB */
static uint8_t img[IMG_LEN], before[IMG_LEN];
static uint8_t tab[12 + 8 * 16];
static size_t tab_len;

static void put(uint8_t *p, unsigned size, uint64_t v)
{
	for (unsigned i = 0; i < size; i++, v >>= 8)
		p[i] = (uint8_t)v;
}
static uint64_t get(const uint8_t *p, unsigned size)
{
	uint64_t v = 0;
	for (unsigned i = size; i > 0; i--)
		v = v << 8 | p[i - 1];
	return v;
}
static void tab_begin(void)
{
	memcpy(tab, KRELOC_MAGIC, 8);
	put(tab + 8, 4, 0);
	tab_len = 12;
}
static void tab_add(uint32_t off, uint32_t width)
{
	put(tab + tab_len, 4, off);
	put(tab + tab_len + 4, 4, width);
	tab_len += 8;
	put(tab + 8, 4, (uint32_t)((tab_len - 12) / 8));
}

/* A table of every kind of site over an image of known values. */
static int setup(void **state)
{
	(void)state;
	memset(img, 0xa5, sizeof img);
	tab_begin();
	put(img + 0, 8, 0xffffffff80123456ull); /* virtual, 64-bit */
	tab_add(0, 1);
	put(img + 8, 8, 0x0000000000100028ull); /* physical, 64-bit (the PVH note) */
	tab_add(8, 1);
	put(img + 16, 4, 0x00102000u); /* 32-bit zero-extended: physical */
	tab_add(16, 2);
	put(img + 20, 4, 0x80200000u); /* 32S virtual: 0xffffffff80200000 */
	tab_add(20, 3);
	put(img + 24, 4, 0x00003000u); /* 32S positive: physical */
	tab_add(24, 3);
	put(img + 28, 4, 0xffffff00u); /* 32S near the top: moves only by little */
	tab_add(28, 3);
	memcpy(before, img, sizeof img);
	return 0;
}

static void test_apply_moves_virtual_only(void **state)
{
	(void)state;
	struct kreloc_report r;
	assert_int_equal(kreloc_apply(tab, tab_len, img, IMG_LEN, 0, &r), 0); /* slide 0: a no-op */
	assert_memory_equal(img, before, IMG_LEN);
	assert_int_equal(kreloc_apply(tab, tab_len, img, IMG_LEN, 0x200000, &r), -E_INVAL); /* 28 overflows */
	assert_int_equal(r.why, KRELOC_OVERFLOW);
	assert_int_equal(r.bad_index, 5);
	assert_memory_equal(img, before, IMG_LEN); /* nothing written, even sites 0..4 */
	put(img + 28, 4, 0x80000000u);
	memcpy(before, img, sizeof img);
	assert_int_equal(kreloc_apply(tab, tab_len, img, IMG_LEN, SLIDE, &r), 0);
	assert_int_equal(r.n_sites, 6);
	assert_int_equal(r.n_moved, 3);
	assert_int_equal(r.n_phys, 3);
	assert_true(get(img + 0, 8) == 0xffffffff80123456ull + SLIDE);
	assert_true(get(img + 8, 8) == 0x100028ull);
	assert_true(get(img + 16, 4) == 0x102000u);
	assert_true(get(img + 20, 4) == 0x80200000u + SLIDE);
	assert_true(get(img + 24, 4) == 0x3000u);
	assert_true(get(img + 28, 4) == 0x80000000u + SLIDE);
	assert_memory_equal(img + 32, before + 32, IMG_LEN - 32);
	/* Moved again: up to the top 2 MiB of the window, and not one step more. */
	assert_int_equal(kreloc_check(tab, tab_len, img, IMG_LEN, KRELOC_WINDOW_LEN - 2 * KRELOC_ALIGN - SLIDE, &r), 0);
	assert_int_equal(kreloc_check(tab, tab_len, img, IMG_LEN, KRELOC_WINDOW_LEN - KRELOC_ALIGN - SLIDE, &r),
			 -E_INVAL);
	assert_int_equal(r.why, KRELOC_OVERFLOW);
	assert_int_equal(r.bad_index, 3);
}

static void expect_refused(size_t len, uint64_t slide, enum kreloc_why why, uint32_t index)
{
	struct kreloc_report r;
	assert_int_equal(kreloc_apply(tab, len, img, IMG_LEN, slide, &r), -E_INVAL);
	assert_int_equal(r.why, why);
	assert_int_equal(r.bad_index, index);
	assert_memory_equal(img, before, IMG_LEN);
	assert_string_not_equal(kreloc_why_name(why), "?");
}

static void test_rejects(void **state)
{
	(void)state;
	expect_refused(tab_len, 0x1000, KRELOC_BAD_SLIDE, 0);          /* not 2 MiB aligned */
	expect_refused(tab_len, KRELOC_WINDOW_LEN, KRELOC_BAD_SLIDE, 0); /* beyond the window */
	expect_refused(11, SLIDE, KRELOC_BAD_HEADER, 0);                 /* short header */
	expect_refused(tab_len - 1, SLIDE, KRELOC_BAD_COUNT, 0);         /* last entry cut */
	tab[0] = 'X';
	expect_refused(tab_len, SLIDE, KRELOC_BAD_HEADER, 0);
	tab[0] = 'U';
	put(tab + 8, 4, 0xffffffffu); /* a count that would wrap a multiplication */
	expect_refused(tab_len, SLIDE, KRELOC_BAD_COUNT, 0);
	put(tab + 8, 4, 6);
	put(tab + 12 + 8 * 2 + 4, 4, 4); /* entry 2: unknown width */
	expect_refused(tab_len, SLIDE, KRELOC_BAD_WIDTH, 2);
	put(tab + 12 + 8 * 2 + 4, 4, 0);
	expect_refused(tab_len, SLIDE, KRELOC_BAD_WIDTH, 2);
	put(tab + 12 + 8 * 2 + 4, 4, 2);
	put(tab + 12 + 8 * 3, 4, IMG_LEN - 3); /* entry 3: 4 bytes from 3 before the end */
	expect_refused(tab_len, SLIDE, KRELOC_OUT_OF_IMAGE, 3);
	put(tab + 12 + 8 * 3, 4, 0xfffffffcu); /* would wrap offset + size */
	expect_refused(tab_len, SLIDE, KRELOC_OUT_OF_IMAGE, 3);
	put(tab + 12 + 8 * 3, 4, 12); /* before entry 2's end: out of order */
	expect_refused(tab_len, SLIDE, KRELOC_UNSORTED, 3);
	put(tab + 12 + 8 * 3, 4, 4); /* inside entry 0's 8 bytes */
	expect_refused(tab_len, SLIDE, KRELOC_UNSORTED, 3);
	put(tab + 12 + 8 * 3, 4, 20);
	put(img + 0, 8, 0xfffffffffff00000ull); /* a 64-bit site that would wrap */
	memcpy(before, img, sizeof img);
	expect_refused(tab_len, SLIDE, KRELOC_OVERFLOW, 0);
}

static void test_empty_table(void **state)
{
	(void)state;
	struct kreloc_report r;
	tab_begin();
	assert_int_equal(kreloc_apply(tab, tab_len, img, IMG_LEN, SLIDE, &r), 0);
	assert_int_equal(r.n_sites, 0);
	assert_memory_equal(img, before, IMG_LEN);
	assert_int_equal(kreloc_apply(tab, tab_len, img, 0, SLIDE, &r), 0);
}

/* The aarch64 layout: the image's addresses from its link address, 64 KiB steps. */
static void test_aarch64_layout(void **state)
{
	(void)state;
	const struct kreloc_layout a64 = { .win_lo = 0x40200000ull, .win_len = 1ull << 30, .align = 64ull << 10 };
	struct kreloc_report r;
	memset(img, 0, sizeof img);
	tab_begin();
	put(img + 0, 8, 0x40200000ull); /* the image's first byte */
	tab_add(0, 1);
	put(img + 8, 8, 0x40592000ull); /* its end */
	tab_add(8, 1);
	memcpy(before, img, sizeof img);
	assert_int_equal(kreloc_apply_in(&a64, tab, tab_len, img, IMG_LEN, 0x8000, &r), -E_INVAL); /* 32 KiB */
	assert_int_equal(r.why, KRELOC_BAD_SLIDE);
	assert_int_equal(kreloc_apply_in(&a64, tab, tab_len, img, IMG_LEN, 0x4f70000, &r), 0);
	assert_int_equal(r.n_moved, 2);
	assert_int_equal(r.n_phys, 0);
	assert_true(get(img + 0, 8) == 0x40200000ull + 0x4f70000);
	assert_true(get(img + 8, 8) == 0x40592000ull + 0x4f70000);
	memcpy(img, before, sizeof img);
	/* The last slide that keeps the end inside the window, and the next. */
	uint64_t last = ((1ull << 30) - 0x392000 - 1) & ~0xffffull;
	assert_int_equal(kreloc_check_in(&a64, tab, tab_len, img, IMG_LEN, last, &r), 0);
	assert_int_equal(kreloc_check_in(&a64, tab, tab_len, img, IMG_LEN, last + 0x10000, &r), -E_INVAL);
	assert_int_equal(r.why, KRELOC_OVERFLOW);
	assert_int_equal(r.bad_index, 1);
	/* A value below the link address (x86_64 would leave it): refused, nothing written. */
	put(img + 8, 8, 0x09000000ull);
	memcpy(before, img, sizeof img);
	assert_int_equal(kreloc_apply_in(&a64, tab, tab_len, img, IMG_LEN, 0x10000, &r), -E_INVAL);
	assert_int_equal(r.why, KRELOC_OUTSIDE);
	assert_int_equal(r.bad_index, 1);
	assert_memory_equal(img, before, IMG_LEN);
	assert_string_not_equal(kreloc_why_name(KRELOC_OUTSIDE), "?");
	/* 32-bit zero-extended sites do not exist on aarch64: refused. */
	put(img + 8, 8, 0x40300000ull);
	tab_add(16, 2);
	memcpy(before, img, sizeof img);
	assert_int_equal(kreloc_apply_in(&a64, tab, tab_len, img, IMG_LEN, 0x10000, &r), -E_INVAL);
	assert_int_equal(r.why, KRELOC_BAD_WIDTH);
	assert_int_equal(r.bad_index, 2);
	assert_memory_equal(img, before, IMG_LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_apply_moves_virtual_only, setup),
		cmocka_unit_test_setup(test_rejects, setup),
		cmocka_unit_test_setup(test_empty_table, setup),
		cmocka_unit_test(test_aarch64_layout),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
