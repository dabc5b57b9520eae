/* SPDX-License-Identifier: MIT
 * Unit tests for kheap_pages_alloc / kheap_pages_free (kernel/heap.h): whole zeroed,
 * aligned page runs for device DMA with their physical address, rejection of bad
 * arguments, refusal before the heap exists, wiping on free, a double free reaching the
 * bug hook, and the page-frame counters back to the baseline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/heap.h"
#include "lib/err.h"

#define ARENA_PAGES 512u
#define PG 4096u
static uint8_t arena[ARENA_PAGES * PG] ALIGNED(4096);
static unsigned n_bugs;
static bool last_phys;

static uint32_t core_index(void)
{
	return 0;
}

static void on_bug(const char *what, uint64_t addr, bool phys)
{
	(void)what;
	(void)addr;
	n_bugs++;
	last_phys = phys;
}

static int setup(void **state)
{
	(void)state;
	static struct plat_mem_range u[1];
	u[0].base = (uint64_t)(uintptr_t)arena;
	u[0].len = sizeof arena;
	struct kheap_config c = {
		.usable = u, .n_usable = 1, .virt_offset = 0, .n_cores = 1, .core_index = core_index,
		.max_slabs = 64, .max_alloc_bytes = 64 * 1024, .bug = on_bug,
	};
	n_bugs = 0;
	memset(arena, 0xa5, sizeof arena);
	return kheap_init(&c) == 0 ? 0 : -1;
}

static void test_alloc_zeroed_aligned(void **state)
{
	(void)state;
	struct pages_stats before, after;
	void *va;
	uint64_t pa;
	kheap_pages_stats(&before);
	assert_int_equal(kheap_pages_alloc(3, 4, &va, &pa), 0);
	assert_non_null(va);
	assert_int_equal((uint64_t)(uintptr_t)va, pa); /* virt_offset 0 */
	assert_int_equal((pa / PG) % 4, 0);
	for (size_t i = 0; i < 3 * PG; i++)
		assert_int_equal(((uint8_t *)va)[i], 0);
	memset(va, 0x5a, 3 * PG);
	kheap_pages_stats(&after);
	assert_int_equal(after.n_used, before.n_used + 3);
	kheap_pages_free(va, 3);
	for (size_t i = 0; i < 3 * PG; i++) /* wiped on free */
		assert_int_equal(((uint8_t *)va)[i], 0);
	kheap_pages_stats(&after);
	assert_int_equal(after.n_used, before.n_used);
	assert_int_equal(n_bugs, 0);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	void *va = (void *)1;
	uint64_t pa = 1;
	assert_int_equal(kheap_pages_alloc(0, 1, &va, &pa), -E_INVAL);
	assert_null(va);
	assert_int_equal(pa, 0);
	assert_int_equal(kheap_pages_alloc(1, 3, &va, &pa), -E_INVAL);
	assert_int_equal(kheap_pages_alloc(ARENA_PAGES * 2, 1, &va, &pa), -E_NOMEM);
	kheap_pages_free(NULL, 1); /* no-op */
	assert_int_equal(n_bugs, 0);
}

static void test_double_free_reported(void **state)
{
	(void)state;
	void *va;
	uint64_t pa;
	assert_int_equal(kheap_pages_alloc(2, 1, &va, &pa), 0);
	kheap_pages_free(va, 2);
	assert_int_equal(n_bugs, 0);
	kheap_pages_free(va, 2);
	assert_int_equal(n_bugs, 1);
	assert_true(last_phys);
	assert_int_equal(kheap_pages_alloc(2, 1, &va, &pa), 0);
	kheap_pages_free(va, 1); /* wrong size */
	assert_int_equal(n_bugs, 2);
	kheap_pages_free(va, 2);
	assert_int_equal(n_bugs, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_alloc_zeroed_aligned, setup),
		cmocka_unit_test_setup(test_bad_arguments, setup),
		cmocka_unit_test_setup(test_double_free_reported, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
