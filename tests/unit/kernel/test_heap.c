/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/mm/heap over kernel/mm/pages over a static array: class
 * boundaries, exact counters (per class, per tag, totals) against a shadow model,
 * exhaustion (-E_NOMEM) by the provider and by the configured limit, double frees
 * (local and remote), foreign and interior pointers, writes after free, overwritten
 * block meta, per-core caches and the cross-core free path, and a threaded run with one
 * thread per core handing blocks to the next core through SPSC rings. Every teardown
 * trims the heap and checks that every page went back to the page allocator. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/mm/heap.h"
#include "kernel/mm/pages.h"
#include "lib/err.h"
#include "lib/ring.h"

#define ARENA_PAGES 1024u
#define N_CORES 4u

static uint8_t arena[ARENA_PAGES * 4096] ALIGNED(4096);
static uint64_t pages_meta[64];
static uint8_t heap_meta[1 << 20] ALIGNED(64);
static struct pages pg;
static struct pages_window win;
static struct heap heap;
static unsigned n_bugs;
static const char *last_bug;

static void on_bug(void *ctx, const char *what, const void *ptr)
{
	(void)ctx;
	(void)ptr;
	n_bugs++;
	last_bug = what;
}

static void setup_heap(uint64_t limit_pages, uint32_t max_slabs)
{
	struct plat_mem_range r = { (uint64_t)(uintptr_t)arena, sizeof arena };
	struct pages_config pcfg = { .usable = &r, .n_usable = 1, .meta = pages_meta,
				     .meta_len = sizeof pages_meta };
	struct heap_config cfg = {
		.n_cores = N_CORES,
		.va_base = (uintptr_t)arena,
		.va_pages = ARENA_PAGES,
		.max_slabs = max_slabs,
		.limit_pages = limit_pages,
		.max_alloc_bytes = 256 * 1024,
		.pages = { &win, pages_window_alloc, pages_window_free },
		.bug = on_bug,
	};
	assert_int_equal(pages_init(&pg, &pcfg), 0);
	win.pg = &pg;
	win.virt_offset = 0;
	assert_true(heap_meta_len(&cfg) <= sizeof heap_meta);
	assert_int_equal(heap_init(&heap, &cfg, heap_meta, sizeof heap_meta), 0);
	n_bugs = 0;
	last_bug = NULL;
}

static int setup(void **state)
{
	(void)state;
	setup_heap(0, 512);
	return 0;
}

/* Leak check: nothing live, every page back in the page allocator, all consistent. */
static int teardown(void **state)
{
	(void)state;
	struct heap_snapshot s;
	struct pages_stats ps;
	for (uint32_t c = 0; c < N_CORES; c++)
		heap_trim(&heap, c);
	assert_int_equal(heap_check_invariants(&heap), 0);
	heap_snapshot(&heap, &s);
	assert_int_equal(s.n_live, 0);
	assert_int_equal(s.requested_bytes, 0);
	assert_int_equal(s.block_bytes, 0);
	assert_int_equal(s.pages_held, 0);
	assert_int_equal(s.n_slabs, 0);
	pages_stats_get(&pg, &ps);
	assert_int_equal(ps.n_used, 0);
	assert_int_equal(pages_check_invariants(&pg), 0);
	return 0;
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void test_class_boundaries(void **state)
{
	(void)state;
	static const struct {
		size_t size, block;
	} cases[] = {
		{ 1, 16 }, { 16, 16 }, { 17, 32 }, { 100, 112 }, { 129, 160 }, { 513, 640 },
		{ 769, 1024 }, { 2047, 2048 }, { 2048, 2048 }, { 2049, 4096 }, { 4096, 4096 },
		{ 4097, 8192 }, { 100000, 102400 },
	};
	void *p[ARRAY_LEN(cases)];
	struct heap_snapshot s;
	uint64_t req = 0, blk = 0;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(heap_block_size(cases[i].size), cases[i].block);
		assert_int_equal(heap_alloc(&heap, 0, cases[i].size, HEAP_TAG_MQTT, &p[i]), 0);
		assert_int_equal((uintptr_t)p[i] % 16, 0);
		assert_true(all_zero(p[i], cases[i].size));
		memset(p[i], 0x77, cases[i].size); /* ASan: the whole request is ours */
		req += cases[i].size;
		blk += cases[i].block;
	}
	heap_snapshot(&heap, &s);
	assert_int_equal(s.requested_bytes, req);
	assert_int_equal(s.block_bytes, blk);
	assert_int_equal(s.n_live, ARRAY_LEN(cases));
	assert_int_equal(s.tag[HEAP_TAG_MQTT].requested_bytes, req);
	assert_int_equal(s.tag[HEAP_TAG_MQTT].block_bytes, blk);
	assert_int_equal(s.cls[HEAP_LARGE].n_live, 4);
	assert_int_equal(s.cls[0].n_live, 2);
	assert_int_equal(s.cls[0].requested_bytes, 17);
	assert_int_equal(s.cls[0].block_bytes, 32);
	assert_int_equal(heap_check_invariants(&heap), 0);
	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		assert_int_equal(heap_free(&heap, 0, p[i]), 0);
	assert_int_equal(heap_free(&heap, 0, NULL), 0);
	assert_int_equal(n_bugs, 0);

	void *q;
	assert_int_equal(heap_alloc(&heap, 0, 0, HEAP_TAG_MQTT, &q), -E_INVAL);
	assert_int_equal(heap_alloc(&heap, N_CORES, 16, HEAP_TAG_MQTT, &q), -E_INVAL);
	assert_int_equal(heap_alloc(&heap, 0, 16, HEAP_TAG__COUNT, &q), -E_INVAL);
	assert_int_equal(heap_alloc(&heap, 0, 256 * 1024 + 1, HEAP_TAG_MQTT, &q), -E_RANGE);
	assert_string_equal(heap_tag_name(HEAP_TAG_TLS_HANDSHAKE), "tls-handshake");
	assert_int_equal(heap_calloc(&heap, 0, SIZE_MAX / 2, 3, HEAP_TAG_TLS_HANDSHAKE, &q), -E_RANGE);
	assert_int_equal(heap_calloc(&heap, 0, 0, 3, HEAP_TAG_TLS_HANDSHAKE, &q), -E_INVAL);
	assert_int_equal(heap_calloc(&heap, 0, 7, 9, HEAP_TAG_TLS_HANDSHAKE, &q), 0);
	assert_true(all_zero(q, 63));
	struct heap_snapshot s2;
	heap_snapshot(&heap, &s2);
	assert_int_equal(s2.tag[HEAP_TAG_TLS_HANDSHAKE].requested_bytes, 63);
	assert_int_equal(s2.tag[HEAP_TAG_TLS_HANDSHAKE].block_bytes, 64);
	assert_int_equal(heap_free(&heap, 0, q), 0);
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

struct shadow {
	uint64_t live, req, blk;
};

static void test_counters_exact(void **state)
{
	(void)state;
	static struct {
		void *p;
		size_t size;
		unsigned tag, core;
	} live[600];
	struct shadow tags[HEAP_TAG__COUNT] = { 0 }, total = { 0 };
	size_t n = 0;
	struct heap_snapshot s;
	for (int step = 0; step < 6000; step++) {
		if (n < ARRAY_LEN(live) && (n == 0 || rng() % 2)) {
			size_t size = rng() % 8 == 0 ? 1 + rng() % 9000 : 1 + rng() % 700;
			unsigned tag = (unsigned)(rng() % HEAP_TAG__COUNT), core = (unsigned)(rng() % N_CORES);
			void *p;
			int err = heap_alloc(&heap, core, size, (enum heap_tag)tag, &p);
			if (err) {
				assert_int_equal(err, -E_NOMEM);
				continue;
			}
			live[n].p = p, live[n].size = size, live[n].tag = tag, live[n].core = core;
			n++;
			size_t b = heap_block_size(size);
			tags[tag].live++, tags[tag].req += size, tags[tag].blk += b;
			total.live++, total.req += size, total.blk += b;
		} else {
			size_t k = (size_t)(rng() % n);
			size_t b = heap_block_size(live[k].size);
			/* Free on the owning core so the counters are exact at once. */
			assert_int_equal(heap_free(&heap, live[k].core, live[k].p), 0);
			tags[live[k].tag].live--, tags[live[k].tag].req -= live[k].size, tags[live[k].tag].blk -= b;
			total.live--, total.req -= live[k].size, total.blk -= b;
			live[k] = live[--n];
		}
		if (step % 500 == 0) {
			heap_snapshot(&heap, &s);
			assert_int_equal(s.n_live, total.live);
			assert_int_equal(s.requested_bytes, total.req);
			assert_int_equal(s.block_bytes, total.blk);
			for (unsigned t = 0; t < HEAP_TAG__COUNT; t++) {
				assert_int_equal(s.tag[t].n_live, tags[t].live);
				assert_int_equal(s.tag[t].requested_bytes, tags[t].req);
				assert_int_equal(s.tag[t].block_bytes, tags[t].blk);
			}
			uint64_t sum_req = 0;
			for (unsigned c = 0; c <= HEAP_N_CLASSES; c++) {
				sum_req += s.cls[c].requested_bytes;
				if (c < HEAP_N_CLASSES)
					assert_int_equal(s.cls[c].block_bytes, s.cls[c].n_live * s.cls[c].block_size);
			}
			assert_int_equal(sum_req, total.req);
			assert_int_equal(heap_check_invariants(&heap), 0);
		}
	}
	while (n--)
		assert_int_equal(heap_free(&heap, live[n].core, live[n].p), 0);
	assert_int_equal(n_bugs, 0);
}

static void test_exhaustion_provider(void **state)
{
	(void)state;
	static void *p[ARENA_PAGES * 64];
	size_t n = 0;
	struct heap_snapshot s;
	void *q;
	int err;
	while ((err = heap_alloc(&heap, 1, 64, HEAP_TAG_TCP, &p[n])) == 0)
		n++;
	assert_int_equal(err, -E_NOMEM);
	assert_true(n > 0);
	assert_int_equal(heap_alloc(&heap, 1, 5000, HEAP_TAG_TCP, &q), -E_NOMEM);
	heap_snapshot(&heap, &s);
	assert_int_equal(s.n_nomem, 2);
	assert_int_equal(s.cls[3].n_live, n);
	assert_int_equal(heap_check_invariants(&heap), 0);
	/* Freeing one block makes room again in that class. */
	assert_int_equal(heap_free(&heap, 1, p[n / 2]), 0);
	assert_int_equal(heap_alloc(&heap, 1, 64, HEAP_TAG_TCP, &p[n / 2]), 0);
	while (n--)
		assert_int_equal(heap_free(&heap, 1, p[n]), 0);
	assert_int_equal(n_bugs, 0);
}

static void test_exhaustion_limit_and_descriptors(void **state)
{
	(void)state;
	void *a, *b, *c;
	struct heap_snapshot s;
	teardown(state);
	setup_heap(3, 512);
	assert_int_equal(heap_alloc(&heap, 0, 3 * 4096, HEAP_TAG_STORE, &a), 0);
	assert_int_equal(heap_alloc(&heap, 0, 16, HEAP_TAG_STORE, &b), -E_NOMEM);
	assert_int_equal(heap_free(&heap, 0, a), 0);
	assert_int_equal(heap_alloc(&heap, 0, 16, HEAP_TAG_STORE, &b), 0);
	assert_int_equal(heap_alloc(&heap, 0, 3 * 4096, HEAP_TAG_STORE, &a), -E_NOMEM);
	assert_int_equal(heap_free(&heap, 0, b), 0);
	teardown(state);

	setup_heap(0, 2); /* two descriptors */
	assert_int_equal(heap_alloc(&heap, 0, 16, HEAP_TAG_STORE, &a), 0);
	assert_int_equal(heap_alloc(&heap, 0, 5000, HEAP_TAG_STORE, &b), 0);
	assert_int_equal(heap_alloc(&heap, 0, 32, HEAP_TAG_STORE, &c), -E_NOMEM);
	heap_snapshot(&heap, &s);
	assert_int_equal(s.n_nomem, 1);
	assert_int_equal(heap_free(&heap, 0, a), 0);
	assert_int_equal(heap_free(&heap, 0, b), 0);
	assert_int_equal(n_bugs, 0);
}

static void test_double_and_foreign_frees(void **state)
{
	(void)state;
	void *a, *b, *big;
	int on_stack;
	struct heap_snapshot before, after;
	assert_int_equal(heap_alloc(&heap, 0, 40, HEAP_TAG_TCP, &a), 0);
	assert_int_equal(heap_alloc(&heap, 0, 40, HEAP_TAG_TCP, &b), 0);
	assert_int_equal(heap_alloc(&heap, 0, 9000, HEAP_TAG_TCP, &big), 0);
	assert_int_equal(heap_free(&heap, 0, a), 0);
	heap_snapshot(&heap, &before);

	assert_int_equal(heap_free(&heap, 0, a), -E_INVAL);
	assert_string_equal(last_bug, "heap: double free");
	const struct {
		void *p;
		const char *name;
	} foreign[] = {
		{ &on_stack, "stack" },
		{ (uint8_t *)b + 8, "interior of a block" },
		{ (uint8_t *)b + 48 * 200, "past the last block" },
		{ (uint8_t *)big + 4096, "interior of a page block" },
		{ arena + sizeof arena - 4096, "window page never handed out" },
		{ arena + sizeof arena, "one past the window" },
	};
	for (size_t i = 0; i < ARRAY_LEN(foreign); i++) {
		print_message("  foreign: %s\n", foreign[i].name);
		assert_int_equal(heap_free(&heap, 0, foreign[i].p), -E_INVAL);
	}
	heap_snapshot(&heap, &after);
	assert_int_equal(after.n_double_free, 1);
	assert_int_equal(after.n_foreign_free, ARRAY_LEN(foreign));
	assert_int_equal(n_bugs, 1 + ARRAY_LEN(foreign));
	/* Nothing moved. */
	assert_int_equal(after.n_live, before.n_live);
	assert_int_equal(after.requested_bytes, before.requested_bytes);
	assert_int_equal(heap_check_invariants(&heap), 0);
	assert_int_equal(heap_free(&heap, 0, b), 0);
	assert_int_equal(heap_free(&heap, 0, big), 0);
	assert_int_equal(heap_free(&heap, 0, big), -E_INVAL); /* page block freed twice */
}

static void test_write_after_free_detected(void **state)
{
	(void)state;
	uint8_t *a, *b;
	struct heap_snapshot s;
	assert_int_equal(heap_alloc(&heap, 2, 100, HEAP_TAG_OTHER, (void **)&a), 0);
	assert_int_equal(heap_free(&heap, 2, a), 0);
	assert_true(all_zero(a, 112)); /* wiped on free */
	a[50] = 0xcc;                  /* use after free */
	assert_int_equal(heap_alloc(&heap, 2, 100, HEAP_TAG_OTHER, (void **)&b), 0);
	assert_ptr_equal(a, b);
	assert_true(all_zero(b, 112)); /* handed out clean anyway */
	heap_snapshot(&heap, &s);
	assert_int_equal(s.n_corrupt, 1);
	assert_string_equal(last_bug, "heap: free block was written (use after free)");
	assert_int_equal(heap_free(&heap, 2, b), 0);
}

static void test_overwritten_meta_detected(void **state)
{
	(void)state;
	static void *p[256];
	uint8_t *hi = NULL;
	size_t n = 0;
	struct heap_snapshot s;
	/* Fill one slab of the 64-byte class (meta at the slab's tail). */
	do {
		assert_int_equal(heap_alloc(&heap, 3, 64, HEAP_TAG_OTHER, &p[n]), 0);
		if (!hi || (uint8_t *)p[n] > hi)
			hi = p[n];
		n++;
	} while (((uintptr_t)p[n - 1] & ~(uintptr_t)4095) == ((uintptr_t)p[0] & ~(uintptr_t)4095) && n < 256);
	/* The last allocation opened a second slab; `hi` may be in it: take the first page's
	 * highest block instead. */
	hi = NULL;
	for (size_t i = 0; i < n; i++)
		if (((uintptr_t)p[i] & ~(uintptr_t)4095) == ((uintptr_t)p[0] & ~(uintptr_t)4095) &&
		    (!hi || (uint8_t *)p[i] > hi))
			hi = p[i];
	memset(hi + 64, 0xaa, 16); /* overflow into the meta array (blocks 0 and 1) */
	assert_int_equal(heap_free(&heap, 3, p[0]), -E_CORRUPT);
	heap_snapshot(&heap, &s);
	assert_int_equal(s.n_corrupt, 1);
	assert_int_equal(n_bugs, 1);
	/* Repair what the test broke so teardown can check for leaks. */
	memset(hi + 64, 0, 16);
	uint16_t *meta = (uint16_t *)(void *)(((uintptr_t)p[0] & ~(uintptr_t)4095) + 4096 - 2 * 62);
	for (unsigned i = 0; i < 6; i++) /* 16 bytes from offset 3968 hit meta[0..5] */
		meta[i] = 64;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(heap_free(&heap, 3, p[i]), 0);
}

static void test_per_core_caches_and_remote_free(void **state)
{
	(void)state;
	void *a[8], *b;
	struct heap_snapshot s;
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(heap_alloc(&heap, 0, 200, HEAP_TAG_TLS_RECORD, &a[i]), 0);
	assert_int_equal(heap_alloc(&heap, 1, 200, HEAP_TAG_TLS_RECORD, &b), 0);
	/* Each core has its own slab: core 1's block is not on core 0's pages. */
	assert_true(((uintptr_t)b & ~(uintptr_t)4095) != ((uintptr_t)a[0] & ~(uintptr_t)4095));

	/* Core 1 frees core 0's blocks: they go back through core 0's remote list. */
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(heap_free(&heap, 1, a[i]), 0);
	heap_snapshot(&heap, &s);
	assert_int_equal(s.n_remote_frees, 8);
	assert_int_equal(s.cls[10].n_live, 9); /* still live until core 0 polls */
	assert_int_equal(heap_check_invariants(&heap), 0);

	/* A second remote free of the same block, and a local free of a pending block. */
	assert_int_equal(heap_free(&heap, 2, a[3]), -E_INVAL);
	assert_int_equal(heap_free(&heap, 0, a[4]), -E_INVAL);
	heap_snapshot(&heap, &s);
	assert_int_equal(s.n_double_free, 2);

	heap_poll(&heap, 0);
	heap_snapshot(&heap, &s);
	assert_int_equal(s.cls[10].n_live, 1);
	assert_int_equal(s.tag[HEAP_TAG_TLS_RECORD].requested_bytes, 200);
	assert_int_equal(heap_check_invariants(&heap), 0);
	/* Reuse after a remote free: the block comes back clean. */
	void *c;
	assert_int_equal(heap_alloc(&heap, 0, 200, HEAP_TAG_TLS_RECORD, &c), 0);
	assert_true(all_zero(c, 200));
	assert_int_equal(heap_free(&heap, 0, c), 0);
	/* Remote free of a large block goes straight back (under the heap lock). */
	void *big;
	assert_int_equal(heap_alloc(&heap, 2, 20000, HEAP_TAG_STORE, &big), 0);
	assert_int_equal(heap_free(&heap, 3, big), 0);
	assert_int_equal(heap_free(&heap, 0, b), 0); /* remote */
	heap_poll(&heap, 1);
	assert_int_equal(n_bugs, 2);
}

static void test_invariant_check_catches_damage(void **state)
{
	(void)state;
	uint8_t *a, *b;
	assert_int_equal(heap_alloc(&heap, 0, 30, HEAP_TAG_OTHER, (void **)&a), 0);
	assert_int_equal(heap_alloc(&heap, 0, 30, HEAP_TAG_OTHER, (void **)&b), 0);
	assert_int_equal(heap_free(&heap, 0, b), 0);
	assert_int_equal(heap_check_invariants(&heap), 0);
	b[31] = 1; /* a FREE block must be zero */
	assert_int_equal(heap_check_invariants(&heap), -E_CORRUPT);
	b[31] = 0;
	/* The 32-byte class keeps its meta at the slab tail: 120 blocks. */
	uint16_t *meta = (uint16_t *)(void *)(((uintptr_t)a & ~(uintptr_t)4095) + 4096 - 2 * 120);
	assert_int_equal(meta[0], 30);
	meta[0] = 31; /* requested size no longer matches the counters */
	assert_int_equal(heap_check_invariants(&heap), -E_CORRUPT);
	meta[0] = 30;
	assert_int_equal(heap_check_invariants(&heap), 0);
	assert_int_equal(heap_free(&heap, 0, a), 0);
}

/* ---- threaded: one thread per core, blocks handed to the next core to free ---------- */

#define RING_SLOTS 256u
static struct spsc_ring rings[N_CORES];
static void *ring_store[N_CORES][RING_SLOTS];
static _Atomic unsigned n_done;

static void *core_thread(void *arg)
{
	uint32_t core = (uint32_t)(uintptr_t)arg;
	struct spsc_ring *out = &rings[core], *in = &rings[(core + N_CORES - 1) % N_CORES];
	uint64_t x = 0x9e3779b97f4a7c15ull * (core + 1);
	unsigned sent = 0;
	while (sent < 20000 || atomic_load(&n_done) < N_CORES) {
		void *p;
		if (sent < 20000) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			size_t size = 1 + x % 600;
			if (heap_alloc(&heap, core, size, HEAP_TAG_MQTT, &p) == 0) {
				memset(p, (int)core + 1, size);
				if (spsc_push(out, &p) == 0) {
					if (++sent == 20000)
						atomic_fetch_add(&n_done, 1);
				} else if (heap_free(&heap, core, p) != 0) {
					abort(); /* cmocka asserts are not thread-safe */
				}
			}
		}
		while (spsc_pop(in, &p) == 0)
			if (heap_free(&heap, core, p) != 0)
				abort();
		heap_poll(&heap, core);
	}
	return NULL;
}

static void test_threads_cross_core(void **state)
{
	(void)state;
	pthread_t t[N_CORES];
	struct heap_snapshot s;
	for (unsigned i = 0; i < N_CORES; i++)
		assert_int_equal(spsc_init(&rings[i], ring_store[i], RING_SLOTS, sizeof(void *)), 0);
	atomic_store(&n_done, 0);
	for (uintptr_t i = 0; i < N_CORES; i++)
		assert_int_equal(pthread_create(&t[i], NULL, core_thread, (void *)i), 0);
	for (unsigned i = 0; i < N_CORES; i++)
		pthread_join(t[i], NULL);
	/* Drain what is left in the rings (threads have stopped: free as the next core). */
	for (uint32_t c = 0; c < N_CORES; c++) {
		void *p;
		while (spsc_pop(&rings[(c + N_CORES - 1) % N_CORES], &p) == 0)
			assert_int_equal(heap_free(&heap, c, p), 0);
	}
	for (uint32_t c = 0; c < N_CORES; c++)
		heap_poll(&heap, c);
	heap_snapshot(&heap, &s);
	assert_int_equal(s.n_live, 0);
	assert_true(s.n_remote_frees > 0);
	assert_int_equal(s.n_double_free + s.n_foreign_free + s.n_corrupt, 0);
	assert_int_equal(n_bugs, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_class_boundaries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counters_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exhaustion_provider, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exhaustion_limit_and_descriptors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_double_and_foreign_frees, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_after_free_detected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overwritten_meta_detected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_core_caches_and_remote_free, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invariant_check_catches_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_cross_core, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
