/* SPDX-License-Identifier: MIT
 * Unit tests for net/tcp/timer_wheel: expiry order across all levels, O(1) cancel and
 * re-arm, late inserts, long idle jumps, clamping beyond the horizon, and callbacks that
 * re-arm themselves (no infinite loop). Every test checks the wheel's invariants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "net/tcp/timer_wheel.h"

#define N 512

struct obj {
	uint32_t pad;
	struct tcp_tw_node node;
	uint32_t fired_at;
};

static struct obj objs[N];
static struct tcp_tw_wheel wheel;
static uint32_t order[N * 4];
static size_t n_order;
static uint32_t cur_tick;

static void fire_rec(void *ctx, uint32_t idx)
{
	(void)ctx;
	objs[idx].fired_at = cur_tick;
	order[n_order++] = idx;
}

static void setup_wheel(uint32_t start)
{
	memset(objs, 0, sizeof objs);
	n_order = 0;
	tcp_tw_init(&wheel, objs, sizeof(struct obj), offsetof(struct obj, node), N, start);
}

/* Advance one tick at a time so fired_at records the exact tick. */
static void run_until(uint32_t end)
{
	while ((int32_t)(end - wheel.now) >= 0) {
		cur_tick = wheel.now;
		(void)tcp_tw_advance(&wheel, wheel.now, fire_rec, NULL);
	}
	assert_int_equal(tcp_tw_check(&wheel), 0);
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static void test_order_all_levels(void **state)
{
	(void)state;
	static const uint32_t starts[] = { 0, 63, 4095, 0xffffff00u, 0xfffffff0u };
	for (size_t k = 0; k < sizeof starts / sizeof starts[0]; k++) {
		uint32_t seed = 42 + (uint32_t)k, start = starts[k];
		setup_wheel(start);
		uint32_t exp[N];
		for (uint32_t i = 0; i < N; i++) {
			uint32_t d = lcg(&seed) % (i % 4 == 0 ? 64u : i % 4 == 1 ? 4096u : i % 4 == 2 ? 20000u : 300000u);
			exp[i] = start + d;
			tcp_tw_insert(&wheel, i, exp[i]);
		}
		assert_int_equal(tcp_tw_check(&wheel), 0);
		run_until(start + 300000u);
		assert_int_equal(n_order, N);
		for (uint32_t i = 0; i < N; i++)
			assert_int_equal(objs[i].fired_at, exp[i]); /* exactly on time */
		for (size_t i = 1; i < n_order; i++)
			assert_true((int32_t)(exp[order[i]] - exp[order[i - 1]]) >= 0);
	}
}

static void test_cancel_and_rearm(void **state)
{
	(void)state;
	setup_wheel(1000);
	for (uint32_t i = 0; i < 100; i++)
		tcp_tw_insert(&wheel, i, 1000 + 10 * i);
	for (uint32_t i = 0; i < 100; i += 2)
		tcp_tw_cancel(&wheel, i);
	tcp_tw_cancel(&wheel, 0); /* idempotent */
	tcp_tw_insert(&wheel, 1, 5000); /* move */
	assert_true(tcp_tw_armed(&wheel, 1));
	assert_false(tcp_tw_armed(&wheel, 2));
	assert_int_equal(wheel.n_linked, 50);
	run_until(6000);
	assert_int_equal(n_order, 50);
	assert_int_equal(order[n_order - 1], 1);
	assert_int_equal(objs[1].fired_at, 5000);
	for (uint32_t i = 0; i < 100; i += 2)
		assert_int_equal(objs[i].fired_at, 0);
}

static void test_late_insert_fires_next_tick(void **state)
{
	(void)state;
	setup_wheel(500);
	run_until(600);
	tcp_tw_insert(&wheel, 7, 100); /* in the past */
	run_until(601);
	assert_int_equal(n_order, 1);
	assert_int_equal(objs[7].fired_at, 601);
}

static void test_long_jump_and_clamp(void **state)
{
	(void)state;
	setup_wheel(0);
	tcp_tw_insert(&wheel, 3, 100);
	tcp_tw_insert(&wheel, 4, 50000000u); /* beyond 2^24 ticks: clamped, re-cascaded */
	cur_tick = 0;
	size_t n = tcp_tw_advance(&wheel, 1000000, fire_rec, NULL); /* one big jump */
	assert_int_equal(n, 1);
	assert_int_equal(order[0], 3);
	assert_true(tcp_tw_armed(&wheel, 4));
	(void)tcp_tw_advance(&wheel, 49999999u, fire_rec, NULL);
	assert_int_equal(n_order, 1);
	(void)tcp_tw_advance(&wheel, 50000000u, fire_rec, NULL);
	assert_int_equal(n_order, 2);
	assert_int_equal(tcp_tw_check(&wheel), 0);
	/* empty wheel: advancing is O(1) */
	assert_int_equal(tcp_tw_advance(&wheel, 0x7fffffffu, fire_rec, NULL), 0);
}

static int rearm_count;
static void fire_rearm(void *ctx, uint32_t idx)
{
	(void)ctx;
	if (++rearm_count < 5)
		tcp_tw_insert(&wheel, idx, wheel.now - 1); /* re-arm "now": must wait a tick */
}

static void test_rearm_in_callback_terminates(void **state)
{
	(void)state;
	setup_wheel(10);
	rearm_count = 0;
	tcp_tw_insert(&wheel, 0, 10);
	assert_int_equal(tcp_tw_advance(&wheel, 10, fire_rearm, NULL), 1);
	assert_int_equal(tcp_tw_advance(&wheel, 20, fire_rearm, NULL), 4);
	assert_int_equal(rearm_count, 5);
	assert_int_equal(tcp_tw_check(&wheel), 0);
}

static uint32_t jump_lo, jump_hi;
static bool jump_rearm;
static void fire_jump(void *ctx, uint32_t idx)
{
	(void)ctx;
	uint32_t e = objs[idx].node.expires;
	/* fired in the jump that covers its expiry, never early, never skipped */
	assert_true((int32_t)(e - jump_lo) >= 0 || (int32_t)(e - jump_lo) < -1);
	assert_true((int32_t)(e - jump_hi) <= 0);
	objs[idx].fired_at = jump_hi;
	order[n_order++] = idx;
	if (jump_rearm && n_order % 3 == 0) /* re-arm some from the callback */
		tcp_tw_insert(&wheel, idx, jump_hi + 1 + (e % 5000));
}

static void test_random_jumps_and_cancels(void **state)
{
	(void)state;
	uint32_t seed = 99;
	setup_wheel(0xfff00000u);
	jump_rearm = true;
	for (int round = 0; round < 2000; round++) {
		uint32_t i = lcg(&seed) % N;
		switch (lcg(&seed) % 3) {
		case 0:
			tcp_tw_insert(&wheel, i, wheel.now + lcg(&seed) % 100000);
			break;
		case 1:
			tcp_tw_cancel(&wheel, i);
			break;
		default:
			jump_lo = wheel.now;
			jump_hi = wheel.now + lcg(&seed) % 3000;
			(void)tcp_tw_advance(&wheel, jump_hi, fire_jump, NULL);
			break;
		}
		assert_int_equal(tcp_tw_check(&wheel), 0);
		if (n_order > N * 3)
			n_order = 0;
	}
	/* drain: everything left fires by the horizon */
	jump_rearm = false;
	jump_lo = wheel.now;
	jump_hi = wheel.now + 200000;
	(void)tcp_tw_advance(&wheel, jump_hi, fire_jump, NULL);
	jump_lo = wheel.now;
	jump_hi = wheel.now + 10000;
	(void)tcp_tw_advance(&wheel, jump_hi, fire_jump, NULL);
	assert_int_equal(wheel.n_linked, 0);
	assert_int_equal(tcp_tw_check(&wheel), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_all_levels),
		cmocka_unit_test(test_cancel_and_rearm),
		cmocka_unit_test(test_late_insert_fires_next_tick),
		cmocka_unit_test(test_long_jump_and_clamp),
		cmocka_unit_test(test_rearm_in_callback_terminates),
		cmocka_unit_test(test_random_jumps_and_cancels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
