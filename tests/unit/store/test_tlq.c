/* SPDX-License-Identifier: MIT
 * Telemetry queries on the storage core (store/tlq.c over store/tlog_scan.c) against a real
 * log on the simulated disk: every record comes back once, in order per partition; the
 * filters (identity, topic filter, time range) keep exactly what they should; the limit
 * truncates and says so; one ROWS message in flight until the data core asks for more;
 * a cancelled query ends as cancelled; a query beyond the runs ends at once as failed;
 * a malformed query is refused; the rows decode with store_tlq_rows_next.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "store/tlq.h"
#include "tests/support/fake_blk.h"

#define SEG (64u * 1024u)
#define PAYLOAD_MAX 1024u
#define WALL0 INT64_C(1700000000000)
#define N_REC 600u

static struct {
	struct fake_blk *fb;
	struct store_dev dev;
	uint8_t bounce[256 * 1024];
	void *tmem, *qmem;
	uint8_t *io;
	struct store_tlog *t;
	struct store_tlq_runner *q;
	/* what the runner sent */
	uint32_t rows_msgs, ends;
	uint64_t end_matched;
	uint32_t end_flags, end_slot;
	uint64_t got_seq[4096]; /* payload sequence numbers of the rows, in order */
	uint32_t n_got;
	bool room;
} g;

static uint64_t mono(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int emit(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	assert_int_equal(dst, 1);
	const uint8_t *d = data;
	if (kind == STORE_K_TLQ_END) {
		assert_int_equal(len, STORE_TLQ_END_LEN);
		g.ends++;
		g.end_slot = ld_le32(d);
		g.end_matched = ld_le64(d + 4);
		g.end_flags = ld_le32(d + 12);
		return 0;
	}
	assert_int_equal(kind, STORE_K_TLQ_ROWS);
	assert_true(len <= PAYLOAD_MAX);
	g.rows_msgs++;
	size_t off = STORE_TLQ_ROWS_HDR;
	struct store_rec r;
	uint32_t n = 0;
	while (store_tlq_rows_next(d, len, &off, &r) == 1) {
		assert_int_equal(r.payload_len, 8);
		g.got_seq[g.n_got++] = ld_le64(r.payload);
		n++;
	}
	assert_int_equal(off, len);
	assert_int_equal(n, ld_le32(d + 4));
	return 0;
}

static bool room(void *ctx, uint32_t dst, uint32_t bytes)
{
	(void)ctx, (void)dst, (void)bytes;
	return g.room;
}

static int64_t wall(void *ctx)
{
	(void)ctx;
	return WALL0 + 10 * (int64_t)N_REC;
}

/* A log of N_REC records: record i by "dev-(i % 3)" on "devices/dev-(i%3)/telemetry" (every
 * fifth on ".../status"), at WALL0 + 10 i, in partition i % 2, payload i. */
static int setup(void **state)
{
	(void)state;
	memset(&g, 0, sizeof g);
	struct fake_blk_config c = { .blocks = (8u << 20) / 512u, .block_size = 512, .discard = true };
	g.fb = fake_blk_new(&c);
	static const struct store_dev_port port = { mono, NULL, NULL };
	assert_int_equal(store_dev_init(&g.dev, fake_blk_dev(g.fb), g.bounce, sizeof g.bounce, 1000, &port), 0);
	g.io = aligned_alloc(8, SEG);
	const struct store_tlog_config tc = { .dev = &g.dev, .lba = 0, .blocks = c.blocks, .partitions = 2,
					      .segment_bytes = SEG, .flush_bytes = 64u * 1024u, .io = g.io,
					      .io_len = SEG };
	size_t ml = store_tlog_mem_size(&tc);
	g.tmem = aligned_alloc(8, (ml + 7) & ~(size_t)7);
	assert_int_equal(store_tlog_open(&g.t, g.tmem, ml, &tc, WALL0), 0);
	for (uint64_t i = 0; i < N_REC; i++) {
		char id[8], topic[40];
		snprintf(id, sizeof id, "dev-%u", (unsigned)(i % 3));
		snprintf(topic, sizeof topic, "devices/%s/%s", id, i % 5 == 4 ? "status" : "telemetry");
		uint8_t pay[8];
		st_le64(pay, i);
		const struct store_tlog_rec r = { .wall_ms = WALL0 + 10 * (int64_t)i, .mono_ns = i, .qos = 1,
						  .id = (const uint8_t *)id, .id_len = (uint8_t)strlen(id),
						  .topic = (const uint8_t *)topic, .topic_len = (uint16_t)strlen(topic),
						  .payload = pay, .payload_len = 8 };
		int err = store_tlog_append(g.t, (uint32_t)(i % 2), &r);
		if (err == -E_AGAIN) {
			assert_int_equal(store_tlog_write_out(g.t), 0);
			err = store_tlog_append(g.t, (uint32_t)(i % 2), &r);
		}
		assert_int_equal(err, 0);
		if (i % 97 == 0)
			assert_int_equal(store_tlog_write_out(g.t), 0);
	}
	assert_int_equal(store_tlog_write_out(g.t), 0);
	assert_int_equal(store_dev_flush(&g.dev), 0);
	const struct store_tlog_geom *geom = store_tlog_geometry(g.t);
	size_t ql = store_tlq_mem_size(geom, 1, PAYLOAD_MAX);
	g.qmem = aligned_alloc(8, (ql + 7) & ~(size_t)7);
	const struct store_tlq_port qp = { emit, room, wall, NULL };
	assert_int_equal(store_tlq_init(&g.q, g.qmem, ql, geom, 1, PAYLOAD_MAX, &g.dev, 0, &qp), 0);
	g.room = true;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(g.qmem);
	free(g.tmem);
	free(g.io);
	fake_blk_free(g.fb);
	return 0;
}

static void query(uint32_t slot, uint32_t limit, int64_t since, int64_t until, const char *id, const char *topic)
{
	uint8_t m[600];
	const struct store_tlq q = { .slot = slot, .limit = limit, .since_ms = since, .until_ms = until,
				     .id = (const uint8_t *)id, .id_len = (uint8_t)(id ? strlen(id) : 0),
				     .topic = (const uint8_t *)topic, .topic_len = (uint8_t)(topic ? strlen(topic) : 0) };
	size_t n = store_tlq_encode(&q, m, sizeof m);
	assert_true(n > 0);
	store_tlq_input(g.q, 1, STORE_K_TLQ, m, (uint32_t)n);
}

/* Drive the run to its end: poll, and after every ROWS say "more". */
static void run_all(uint32_t slot)
{
	for (int i = 0; i < 10000 && !g.ends; i++) {
		uint32_t before = g.rows_msgs;
		(void)store_tlq_poll(g.q);
		assert_true(g.rows_msgs <= before + 1);    /* one message per poll */
		(void)store_tlq_poll(g.q);
		assert_true(g.ends || g.rows_msgs <= before + 1); /* credit 1: none more without MORE */
		uint8_t m[4];
		st_le32(m, slot);
		store_tlq_input(g.q, 1, STORE_K_TLQ_MORE, m, 4);
	}
	assert_int_equal(g.ends, 1);
	assert_int_equal(g.end_slot, slot);
}

static void t_everything_in_order(void **state)
{
	(void)state;
	query(3, 100000, 0, 0, NULL, NULL);
	run_all(3);
	assert_int_equal(g.n_got, N_REC);
	assert_int_equal(g.end_matched, N_REC);
	assert_int_equal(g.end_flags, 0);
	/* partition 0 (even records), then partition 1 (odd), each in order */
	for (uint32_t k = 0; k < N_REC; k++)
		assert_int_equal(g.got_seq[k], k < N_REC / 2 ? 2u * k : 2u * (k - N_REC / 2) + 1u);
}

static void t_filters(void **state)
{
	(void)state;
	/* dev-1's telemetry between records 100 and 300 */
	query(0, 100000, WALL0 + 1000, WALL0 + 3000, "dev-1", "devices/+/telemetry");
	run_all(0);
	uint32_t want = 0;
	for (uint64_t i = 100; i <= 300; i++)
		if (i % 3 == 1 && i % 5 != 4)
			want++;
	assert_int_equal(g.n_got, want);
	for (uint32_t k = 0; k < g.n_got; k++) {
		uint64_t i = g.got_seq[k];
		assert_true(i >= 100 && i <= 300 && i % 3 == 1 && i % 5 != 4);
	}
}

static void t_limit_truncates(void **state)
{
	(void)state;
	query(0, 50, 0, 0, NULL, "devices/+/status");
	run_all(0);
	assert_int_equal(g.n_got, 50);
	assert_int_equal(g.end_matched, 50);
	assert_int_equal(g.end_flags, STORE_TLQ_TRUNCATED);
}

static void t_paced_by_room_and_credit(void **state)
{
	(void)state;
	query(0, 100000, 0, 0, NULL, NULL);
	g.room = false; /* the data core's queue is full: nothing goes */
	for (int i = 0; i < 5; i++)
		(void)store_tlq_poll(g.q);
	assert_int_equal(g.rows_msgs, 0);
	g.room = true;
	for (int i = 0; i < 5; i++)
		(void)store_tlq_poll(g.q);
	assert_int_equal(g.rows_msgs, 1); /* one, until the data core asks for more */
	uint8_t m[4];
	st_le32(m, 0);
	store_tlq_input(g.q, 1, STORE_K_TLQ_CANCEL, m, 4);
	(void)store_tlq_poll(g.q);
	assert_int_equal(g.ends, 1);
	assert_true(g.end_flags & STORE_TLQ_CANCELLED);
	assert_int_equal(store_tlq_stats(g.q)->ended, 1);
}

static void t_busy_and_malformed(void **state)
{
	(void)state;
	query(0, 10, 0, 0, NULL, NULL);
	query(1, 10, 0, 0, NULL, NULL); /* one run only: ended at once as failed */
	assert_int_equal(g.ends, 1);
	assert_int_equal(g.end_slot, 1);
	assert_int_equal(g.end_flags, STORE_TLQ_FAILED);
	const uint8_t junk[] = { 7, 0, 0, 0, 1, 2, 3 };
	store_tlq_input(g.q, 1, STORE_K_TLQ, junk, sizeof junk);
	assert_int_equal(g.ends, 2);
	assert_int_equal(g.end_slot, 7);
	assert_int_equal(store_tlq_stats(g.q)->refused, 2);
	g.ends = 0;
	run_all(0); /* the first still runs to its end */
	assert_int_equal(g.n_got, 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_everything_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(t_filters, setup, teardown),
		cmocka_unit_test_setup_teardown(t_limit_truncates, setup, teardown),
		cmocka_unit_test_setup_teardown(t_paced_by_room_and_credit, setup, teardown),
		cmocka_unit_test_setup_teardown(t_busy_and_malformed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
