/* SPDX-License-Identifier: MIT
 * lib/ring: single-thread semantics (full, empty, wrap of the free-running indices) and
 * a two-thread stress test: a producer pushes a numbered sequence with a checksum in
 * every slot, the consumer checks order and contents. Also built under TSan by
 * tests/smoke/lib-ring-tsan.sh. Bounded: fixed message count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "lib/err.h"
#include "lib/ring.h"

struct msg {
	uint64_t seq;
	uint64_t check;
	uint8_t pad[48];
};

static void test_init_rejects_bad_geometry(void **state)
{
	(void)state;
	struct spsc_ring r;
	uint8_t st[64];
	assert_int_equal(spsc_init(&r, st, 3, 8), -E_INVAL);
	assert_int_equal(spsc_init(&r, st, 1, 8), -E_INVAL);
	assert_int_equal(spsc_init(&r, st, 4, 0), -E_INVAL);
	assert_int_equal(spsc_init(&r, NULL, 4, 8), -E_INVAL);
	assert_int_equal(spsc_init(&r, st, 8, 8), 0);
}

static void test_full_empty_and_wrap(void **state)
{
	(void)state;
	struct spsc_ring r;
	uint32_t st[4];
	uint32_t v;
	assert_int_equal(spsc_init(&r, st, 4, sizeof(uint32_t)), 0);
	/* Start near the wrap of the free-running indices. */
	atomic_store(&r.head, UINT32_MAX - 5);
	atomic_store(&r.tail, UINT32_MAX - 5);
	r.head_cache = r.tail_cache = UINT32_MAX - 5;
	for (uint32_t round = 0; round < 10; round++) {
		assert_int_equal(spsc_pop(&r, &v), -E_AGAIN);
		for (uint32_t i = 0; i < 4; i++)
			assert_int_equal(spsc_push(&r, &(uint32_t){ round * 10 + i }), 0);
		assert_int_equal(spsc_push(&r, &(uint32_t){ 99 }), -E_AGAIN);
		assert_int_equal(spsc_free_slots(&r), 0);
		assert_int_equal(spsc_used_slots(&r), 4);
		for (uint32_t i = 0; i < 4; i++) {
			assert_int_equal(spsc_pop(&r, &v), 0);
			assert_int_equal(v, round * 10 + i);
		}
	}
}

static void test_zero_copy_api(void **state)
{
	(void)state;
	struct spsc_ring r;
	struct msg st[2];
	assert_int_equal(spsc_init(&r, st, 2, sizeof(struct msg)), 0);
	struct msg *m = spsc_reserve(&r);
	assert_non_null(m);
	m->seq = 7;
	assert_null(spsc_peek(&r)); /* not visible before commit */
	spsc_commit(&r);
	const struct msg *p = spsc_peek(&r);
	assert_non_null(p);
	assert_int_equal(p->seq, 7);
	spsc_release(&r);
	assert_null(spsc_peek(&r));
}

#define STRESS_MSGS 2000000u

static struct spsc_ring stress_ring;
static struct msg stress_storage[256];

static void *producer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < STRESS_MSGS;) {
		struct msg *m = spsc_reserve(&stress_ring);
		if (!m)
			continue;
		m->seq = i;
		m->check = i * 0x9e3779b97f4a7c15ull;
		memset(m->pad, (int)(i & 0xff), sizeof m->pad);
		spsc_commit(&stress_ring);
		i++;
	}
	return NULL;
}

static void test_two_thread_stress(void **state)
{
	(void)state;
	pthread_t t;
	uint64_t expect = 0, bad = 0;
	assert_int_equal(spsc_init(&stress_ring, stress_storage, 256, sizeof(struct msg)), 0);
	assert_int_equal(pthread_create(&t, NULL, producer, NULL), 0);
	while (expect < STRESS_MSGS) {
		const struct msg *m = spsc_peek(&stress_ring);
		if (!m)
			continue;
		if (m->seq != expect || m->check != expect * 0x9e3779b97f4a7c15ull ||
		    m->pad[0] != (uint8_t)expect || m->pad[47] != (uint8_t)expect)
			bad++;
		spsc_release(&stress_ring);
		expect++;
	}
	pthread_join(t, NULL);
	assert_int_equal(bad, 0);
	assert_null(spsc_peek(&stress_ring));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_rejects_bad_geometry),
		cmocka_unit_test(test_full_empty_and_wrap),
		cmocka_unit_test(test_zero_copy_api),
		cmocka_unit_test(test_two_thread_stress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
