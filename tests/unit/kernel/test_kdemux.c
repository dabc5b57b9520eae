/* SPDX-License-Identifier: MIT
 * kernel/kdemux: registration (table of accepted and refused ranges: reversed, overlapping
 * on either side, nested, adjacent, full table), dispatch by kind through a real mesh
 * (each message to the one handler of its range, in order, payload writable), unclaimed
 * kinds counted and consumed, and per-range counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kdemux.h"
#include "lib/err.h"

struct hit {
	uint32_t n;
	uint16_t kind[32];
	uint32_t src[32];
};

static void on_msg(void *ctx, uint32_t src, struct xcore_msg *msg)
{
	struct hit *h = ctx;
	assert_true(h->n < 32);
	h->kind[h->n] = msg->kind;
	h->src[h->n] = src;
	h->n++;
	if (msg->len)
		msg->data[0] = 0; /* writable in place */
}

static void test_register_table(void **state)
{
	(void)state;
	struct kdemux_entry tab[4];
	struct kdemux d;
	struct hit h = { 0 };
	assert_int_equal(kdemux_init(&d, NULL, 4), -E_INVAL);
	assert_int_equal(kdemux_init(&d, tab, 0), -E_INVAL);
	assert_int_equal(kdemux_init(&d, tab, 4), 0);
	static const struct {
		uint16_t first, last;
		bool fn;
		int want;
	} cases[] = {
		{ 0x0100, 0x01ff, true, 0 },
		{ 0x0200, 0x02ff, true, 0 },
		{ 0x0300, 0x0200, true, -E_INVAL },       /* reversed */
		{ 0x0400, 0x0400, false, -E_INVAL },      /* no handler */
		{ 0x01ff, 0x01ff, true, -E_EXIST },       /* last kind of a range */
		{ 0x0050, 0x0100, true, -E_EXIST },       /* overlaps the start */
		{ 0x0280, 0x0380, true, -E_EXIST },       /* overlaps the end */
		{ 0x0000, 0xffff, true, -E_EXIST },       /* covers everything */
		{ 0x0120, 0x0130, true, -E_EXIST },       /* nested */
		{ 0x0300, 0x0300, true, 0 },              /* adjacent, one kind */
		{ 0x0000, 0x00ff, true, 0 },              /* in front of the others */
		{ 0x1000, 0x1fff, true, -E_NOMEM },       /* table full */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_int_equal(kdemux_register(&d, cases[i].first, cases[i].last, cases[i].fn ? on_msg : NULL, &h),
				 cases[i].want);
	assert_int_equal(d.n, 4);
	for (uint32_t i = 1; i < d.n; i++) /* invariant 1: sorted, disjoint */
		assert_true(d.tab[i - 1].last < d.tab[i].first);
}

static void test_dispatch(void **state)
{
	(void)state;
	const struct xcore_config cfg = {
		.n_cores = 3, .slots_per_ring = 16, .slot_size = 64, .ctrl_slots = 2,
		.credit_batch = 1, .poll_max = 64, .poll_per_source = 64,
	};
	size_t len;
	assert_int_equal(xcore_mesh_size(&cfg, &len), 0);
	void *mem = aligned_alloc(XCORE_MEM_ALIGN, (len + XCORE_MEM_ALIGN - 1) & ~(size_t)(XCORE_MEM_ALIGN - 1));
	assert_non_null(mem);
	struct xcore_mesh *m;
	assert_int_equal(xcore_mesh_init(&m, mem, len, &cfg), 0);

	struct kdemux_entry tab[2];
	struct kdemux d;
	struct hit net = { 0 }, shard = { 0 };
	assert_int_equal(kdemux_init(&d, tab, 2), 0);
	assert_int_equal(kdemux_register(&d, KDEMUX_SHARD_FIRST, KDEMUX_SHARD_LAST, on_msg, &shard), 0);
	assert_int_equal(kdemux_register(&d, KDEMUX_NET_FIRST, KDEMUX_NET_LAST, on_msg, &net), 0);
	uint8_t b[8] = { 1, 2, 3 };
	static const uint16_t kinds[] = { 0x0100, 0x0250, 0x01ff, 0x0042, 0x0300, 0x0200, 0xffff };
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		assert_int_equal(xcore_send(m, i % 2 ? 2 : 0, 1, kinds[i], b, sizeof b), 0);
	assert_int_equal(kdemux_poll(&d, m, 1), 7); /* every message consumed, claimed or not */
	assert_int_equal(net.n, 2);
	assert_int_equal(shard.n, 2);
	assert_int_equal(d.n_unclaimed, 3);
	/* Per source order kept: from core 0 kinds 0x0100, 0x01ff; from 2 0x0250, 0x0200. */
	assert_int_equal(net.kind[0], 0x0100);
	assert_int_equal(net.kind[1], 0x01ff);
	assert_int_equal(shard.kind[0], 0x0250);
	assert_int_equal(shard.kind[1], 0x0200);
	assert_int_equal(shard.src[0], 2);
	assert_int_equal(kdemux_count(&d, 0x0180), 2);
	assert_int_equal(kdemux_count(&d, 0x0042), 0);
	assert_int_equal(kdemux_poll(&d, m, 1), 0);
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register_table),
		cmocka_unit_test(test_dispatch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
