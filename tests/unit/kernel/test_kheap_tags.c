/* SPDX-License-Identifier: MIT
 * Unit tests for kheap's memory-tagging hook (kernel/heap.h, struct kheap_tag_ops) with a
 * software tagger standing in for Arm MTE: a shadow tag per 16-byte granule of the arena,
 * the pointer's tag in bits 59:56 (the test strips it before touching memory: the host
 * has no top-byte ignore). Checks what kheap promises the platform: a new block tagged
 * over the rounded request and the rest of its block left to tag 0, the tag retired
 * before the heap takes the block back, fresh pages cleared, a free through a stale
 * pointer refused through the bug hook with the counters untouched, kheap_where's view of
 * a block, and an incomplete hook set refused at init. */
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
#define GR 16u
#define TOP (0xffull << 56)
static uint8_t arena[ARENA_PAGES * PG] ALIGNED(4096);
static uint8_t shadow[ARENA_PAGES * PG / GR];
static unsigned n_bugs, n_alloc_calls, n_free_calls, n_clear_calls;
static size_t last_used, last_len;
static const char *last_bug;
static uint8_t next_tag = 1;

static uint8_t *sh(uint64_t a)
{
	return &shadow[(a - (uint64_t)(uintptr_t)arena) / GR];
}
static void set_tags(uint64_t a, size_t len, uint8_t t)
{
	assert_true(a % GR == 0 && len % GR == 0);
	for (size_t o = 0; o < len; o += GR)
		*sh(a + o) = t;
}
static uint64_t plain(const void *p)
{
	return (uint64_t)(uintptr_t)p & ~TOP;
}
static uint8_t ptag(const void *p)
{
	return (uint8_t)((uint64_t)(uintptr_t)p >> 56);
}
static uint8_t *mem(const void *p) /* what the hardware's top-byte ignore would reach */
{
	return (uint8_t *)(uintptr_t)plain(p);
}

static void *f_tag_alloc(void *p, size_t used, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	assert_true((a & TOP) == 0); /* kheap passes plain addresses */
	n_alloc_calls++;
	last_used = used;
	last_len = len;
	uint8_t t = next_tag;
	next_tag = (uint8_t)(next_tag % 15u + 1u);
	if (t == *sh(a))
		t = (uint8_t)(t % 15u + 1u);
	set_tags(a, used, t);
	set_tags(a + used, len - used, 0);
	return (void *)(uintptr_t)(a | (uint64_t)t << 56);
}
static void f_tag_free(void *p, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	assert_true((a & TOP) == 0);
	n_free_calls++;
	set_tags(a, len, (uint8_t)(*sh(a) % 15u + 1u));
}
static void f_tag_clear(void *p, size_t len)
{
	n_clear_calls++;
	set_tags((uint64_t)(uintptr_t)p, len, 0);
}
static void *f_untag(const void *p)
{
	return (void *)(uintptr_t)plain(p);
}
static bool f_matches(const void *p)
{
	return *sh(plain(p)) == ptag(p);
}
static const struct kheap_tag_ops tagger = { f_tag_alloc, f_tag_free, f_tag_clear, f_untag, f_matches };

static void on_bug(const char *what, uint64_t addr, bool phys)
{
	(void)addr;
	(void)phys;
	n_bugs++;
	last_bug = what;
}

static struct kheap_config cfg(struct plat_mem_range *usable)
{
	usable->base = (uint64_t)(uintptr_t)arena;
	usable->len = sizeof arena;
	struct kheap_config c = {
		.usable = usable,
		.n_usable = 1,
		.n_cores = 1,
		.max_slabs = 128,
		.max_alloc_bytes = 64 * 1024,
		.bug = on_bug,
		.tags = &tagger,
	};
	return c;
}

static int setup(void **state)
{
	(void)state;
	struct plat_mem_range u;
	struct kheap_config c = cfg(&u);
	n_bugs = n_alloc_calls = n_free_calls = n_clear_calls = 0;
	last_bug = NULL;
	memset(shadow, 0x0f, sizeof shadow); /* stale tags from an earlier life */
	assert_int_equal(kheap_init(&c), 0);
	return 0;
}

static void test_alloc_tags_block(void **state)
{
	(void)state;
	void *p, *q;
	assert_int_equal(kheap_alloc(130, HEAP_TAG_MQTT, &p), 0); /* class 160 */
	assert_true(n_clear_calls >= 1);                           /* its slab's pages */
	assert_int_equal(last_used, 144);
	assert_int_equal(last_len, 160);
	assert_true(ptag(p) != 0);
	uint64_t a = plain(p);
	assert_int_equal(*sh(a), ptag(p));
	assert_int_equal(*sh(a + 128), ptag(p));
	assert_int_equal(*sh(a + 144), 0); /* past the request: no pointer matches */
	for (size_t i = 0; i < 130; i++)
		assert_int_equal(mem(p)[i], 0);
	memset(mem(p), 0x5a, 130);
	struct heap_where w;
	kheap_where(a + 100, &w);
	assert_int_equal(w.kind, HEAP_WHERE_USED);
	assert_int_equal(w.block, a);
	assert_int_equal(w.block_size, 160);
	assert_int_equal(w.requested, 130);
	assert_int_equal(w.tag, HEAP_TAG_MQTT);
	assert_int_equal(kheap_alloc(5000, HEAP_TAG_STORE, &q), 0); /* whole pages */
	assert_int_equal(last_used, 5008);
	assert_int_equal(last_len, 8192);
	kheap_where(plain(q) + 6000, &w);
	assert_int_equal(w.kind, HEAP_WHERE_LARGE);
	assert_int_equal(w.requested, 5000);
	kheap_free(q);
	kheap_free(p);
	assert_int_equal(n_free_calls, 2);
	assert_int_equal(n_bugs, 0);
	kheap_where(a, &w);
	assert_int_equal(w.kind, HEAP_WHERE_FREE);
	assert_int_not_equal(*sh(a), ptag(p)); /* retired: the old pointer no longer matches */
	struct heap_snapshot s;
	kheap_snapshot(&s);
	assert_int_equal(s.n_live, 0);
	assert_int_equal(s.n_frees, 2);
}

static void test_stale_free_refused(void **state)
{
	(void)state;
	void *p, *q;
	assert_int_equal(kheap_alloc(64, HEAP_TAG_TCP, &p), 0);
	kheap_free(p);
	struct heap_snapshot before, after;
	kheap_snapshot(&before);
	kheap_free(p); /* double free: the block's tag moved on */
	assert_int_equal(n_bugs, 1);
	assert_non_null(strstr(last_bug, "stale pointer"));
	/* The block handed out again: the old pointer still does not free it. */
	assert_int_equal(kheap_alloc(64, HEAP_TAG_TCP, &q), 0);
	assert_int_equal(plain(q), plain(p));
	assert_int_not_equal(ptag(q), ptag(p));
	kheap_free(p);
	assert_int_equal(n_bugs, 2);
	kheap_snapshot(&after);
	assert_int_equal(after.n_live, before.n_live + 1); /* q alone */
	assert_int_equal(after.n_frees, before.n_frees);
	kheap_free(q);
	assert_int_equal(n_bugs, 2);
	/* An untagged alias of a live block is no pointer the heap made. */
	assert_int_equal(kheap_alloc(64, HEAP_TAG_TCP, &q), 0);
	kheap_free((void *)(uintptr_t)plain(q));
	assert_int_equal(n_bugs, 3);
	kheap_free(q);
	assert_int_equal(n_bugs, 3);
}

static void test_incomplete_hooks_refused(void **state)
{
	(void)state;
	struct plat_mem_range u;
	struct kheap_config c = cfg(&u);
	struct kheap_tag_ops half = tagger;
	half.matches = NULL;
	c.tags = &half;
	assert_int_equal(kheap_init(&c), -E_INVAL);
	c.tags = NULL; /* no tagging: plain pointers */
	assert_int_equal(kheap_init(&c), 0);
	void *p;
	assert_int_equal(kheap_alloc(40, HEAP_TAG_OTHER, &p), 0);
	assert_int_equal(ptag(p), 0);
	kheap_free(p);
	assert_int_equal(n_bugs, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_alloc_tags_block, setup),
		cmocka_unit_test_setup(test_stale_free_refused, setup),
		cmocka_unit_test_setup(test_incomplete_hooks_refused, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
