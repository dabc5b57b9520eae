/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/heap (kheap): bring-up over a fake boot memory map (a static
 * array seen as physical memory, with holes and reserved ranges that must never be
 * handed out), allocation and free across "cores" (the core_index hook), counters back
 * to the baseline after poll + trim, double free and foreign free reaching the bug hook,
 * and rejection of bad configurations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kernel/heap.h"
#include "lib/err.h"

#define ARENA_PAGES 2048u
#define PG 4096u
static uint8_t arena[ARENA_PAGES * PG] ALIGNED(4096);
static uint32_t cur_core;
static unsigned n_bugs;
static const char *last_bug;
static bool last_phys;

static uint32_t core_index(void)
{
	return cur_core;
}

static void on_bug(const char *what, uint64_t addr, bool phys)
{
	(void)addr;
	n_bugs++;
	last_bug = what;
	last_phys = phys;
}

static uint64_t A(uint64_t page)
{
	return (uint64_t)(uintptr_t)arena + page * PG;
}

/* Two usable ranges with a hole, two reserved ranges (one straddling a range end). */
static const struct plat_mem_range *usable_ranges(void)
{
	static struct plat_mem_range u[2];
	u[0].base = A(0);
	u[0].len = 1000u * PG;
	u[1].base = A(1100);
	u[1].len = 948u * PG;
	return u;
}

static struct kheap_config base_cfg(struct plat_mem_range *resv)
{
	resv[0].base = A(0);
	resv[0].len = 16u * PG;
	resv[1].base = A(990);
	resv[1].len = 120u * PG;
	struct kheap_config c = {
		.usable = usable_ranges(),
		.n_usable = 2,
		.reserved = resv,
		.n_reserved = 2,
		.virt_offset = 0,
		.n_cores = 4,
		.core_index = core_index,
		.max_slabs = 512,
		.max_alloc_bytes = 64 * 1024,
		.bug = on_bug,
	};
	return c;
}

static int setup(void **state)
{
	(void)state;
	struct plat_mem_range resv[2];
	struct kheap_config c = base_cfg(resv);
	cur_core = 0;
	n_bugs = 0;
	last_bug = NULL;
	assert_int_equal(kheap_init(&c), 0);
	assert_true(kheap_ready());
	return 0;
}

static void trim_all(void)
{
	for (uint32_t c = 0; c < 4; c++) {
		cur_core = c;
		kheap_trim();
	}
	cur_core = 0;
}

static void test_init_counts(void **state)
{
	(void)state;
	struct pages_stats ps;
	kheap_pages_stats(&ps);
	/* usable 1948 frames in a span of 2048; reserved: the 100-frame hole, 16 at the
	 * bottom, 10 at the end of range 0 (990..999), 10 at the start of range 1
	 * (1100..1109) and the bitmaps' frame; the heap's bookkeeping run is in use. */
	assert_int_equal(ps.n_frames, 2048);
	assert_int_equal(ps.n_reserved, 100 + 16 + 10 + 10 + 1);
	assert_true(ps.n_free + ps.n_used + ps.n_reserved == ps.n_frames);
	assert_true(ps.n_used >= 1); /* the heap's bookkeeping run */
	struct heap_snapshot s;
	kheap_snapshot(&s);
	assert_true(s.n_live == 0 && s.requested_bytes == 0 && s.block_bytes == 0);
}

static bool in_reserved(const void *p, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)p, e = a + len;
	return (a < A(16)) || (e > A(990) && a < A(1110)) || a >= A(ARENA_PAGES);
}

static void test_alloc_never_reserved(void **state)
{
	(void)state;
	static void *p[600];
	size_t n = 0;
	for (; n < 600; n++) {
		size_t sz = (n % 3 == 0) ? 5000u : 16u + n * 3u;
		if (kheap_alloc(sz, HEAP_TAG_KERNEL, &p[n]) != 0)
			break;
		assert_false(in_reserved(p[n], sz));
		const uint8_t *b = p[n];
		for (size_t i = 0; i < sz; i++)
			assert_int_equal(b[i], 0);
		memset(p[n], 0xa5, sz);
	}
	assert_true(n > 300);
	for (size_t i = 0; i < n; i++)
		kheap_free(p[i]);
	trim_all();
	assert_int_equal(n_bugs, 0);
	struct heap_snapshot s;
	kheap_snapshot(&s);
	assert_true(s.n_live == 0 && s.pages_held == 0);
}

static void test_cross_core_baseline(void **state)
{
	(void)state;
	struct heap_snapshot s0, s1;
	struct pages_stats p0, p1;
	kheap_snapshot(&s0);
	kheap_pages_stats(&p0);
	static void *blk[4][64];
	static const size_t sizes[] = { 16, 24, 100, 512, 2048, 3000, 9000, 48 };
	for (uint32_t c = 0; c < 4; c++) {
		cur_core = c;
		for (unsigned i = 0; i < 64; i++)
			assert_int_equal(kheap_alloc(sizes[i % 8], (enum heap_tag)(i % HEAP_TAG__COUNT),
						     &blk[c][i]), 0);
	}
	struct heap_snapshot mid;
	kheap_snapshot(&mid);
	assert_true(mid.n_live == 256);
	/* Every core frees its right neighbour's blocks: all remote frees. */
	for (uint32_t c = 0; c < 4; c++) {
		cur_core = c;
		for (unsigned i = 0; i < 64; i++)
			kheap_free(blk[(c + 1) % 4][i]);
	}
	kheap_snapshot(&mid);
	assert_true(mid.n_remote_frees > 0);
	for (uint32_t c = 0; c < 4; c++) {
		cur_core = c;
		assert_int_equal(kheap_poll(NULL), 0);
	}
	trim_all();
	kheap_snapshot(&s1);
	kheap_pages_stats(&p1);
	assert_int_equal(n_bugs, 0);
	assert_true(s1.n_live == s0.n_live && s1.requested_bytes == s0.requested_bytes &&
		    s1.block_bytes == s0.block_bytes && s1.pages_held == s0.pages_held);
	assert_true(p1.n_used == p0.n_used && p1.n_free == p0.n_free);
	for (unsigned t = 0; t < HEAP_TAG__COUNT; t++)
		assert_true(s1.tag[t].n_live == 0);
}

static void test_double_free(void **state)
{
	(void)state;
	void *p;
	assert_int_equal(kheap_alloc(64, HEAP_TAG_MQTT, &p), 0);
	kheap_free(p);
	assert_int_equal(n_bugs, 0);
	kheap_free(p);
	assert_int_equal(n_bugs, 1);
	assert_non_null(strstr(last_bug, "double free"));
	assert_false(last_phys);
	struct heap_snapshot s;
	kheap_snapshot(&s);
	assert_true(s.n_double_free == 1 && s.n_live == 0);
	/* Foreign pointer: the bug hook again, counted apart. */
	static uint8_t outside[64];
	kheap_free(outside);
	assert_int_equal(n_bugs, 2);
	kheap_snapshot(&s);
	assert_true(s.n_foreign_free == 1);
	kheap_free(NULL); /* no-op */
	assert_int_equal(n_bugs, 2);
	trim_all();
}

static void test_rejects(void **state)
{
	(void)state;
	void *p;
	assert_int_equal(kheap_alloc(0, HEAP_TAG_KERNEL, &p), -E_INVAL);
	assert_int_equal(kheap_alloc(64 * 1024 + 1, HEAP_TAG_KERNEL, &p), -E_RANGE);

	struct plat_mem_range resv[2];
	struct kheap_config c = base_cfg(resv);
	c.n_cores = 0;
	assert_int_equal(kheap_init(&c), -E_INVAL);
	assert_false(kheap_ready());
	assert_int_equal(kheap_alloc(16, HEAP_TAG_KERNEL, &p), -E_NOMEM);
	c = base_cfg(resv);
	c.bug = NULL;
	assert_int_equal(kheap_init(&c), -E_INVAL);
	c = base_cfg(resv);
	c.n_usable = 0;
	assert_int_equal(kheap_init(&c), -E_INVAL);
	c = base_cfg(resv);
	c.n_cores = HEAP_MAX_CORES + 1;
	assert_int_equal(kheap_init(&c), -E_INVAL);
	/* Everything reserved: no room for the bitmaps. */
	struct plat_mem_range all = { A(0), ARENA_PAGES * PG };
	c = base_cfg(resv);
	c.reserved = &all;
	c.n_reserved = 1;
	assert_true(kheap_init(&c) < 0);
	assert_false(kheap_ready());
	/* A range that wraps. */
	struct plat_mem_range wrap = { UINT64_MAX - PG, 4 * PG };
	c = base_cfg(resv);
	c.usable = &wrap;
	c.n_usable = 1;
	assert_true(kheap_init(&c) < 0);
	/* Freeing while not ready is a bug, not a crash. */
	unsigned before = n_bugs;
	kheap_free(arena);
	assert_int_equal(n_bugs, before + 1);
	struct heap_snapshot s;
	kheap_snapshot(&s);
	assert_true(s.n_live == 0);
	/* Heap usable again for the next test's setup. */
	c = base_cfg(resv);
	assert_int_equal(kheap_init(&c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_init_counts, setup),
		cmocka_unit_test_setup(test_alloc_never_reserved, setup),
		cmocka_unit_test_setup(test_cross_core_baseline, setup),
		cmocka_unit_test_setup(test_double_free, setup),
		cmocka_unit_test_setup(test_rejects, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
