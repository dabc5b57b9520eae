/* SPDX-License-Identifier: MIT
 * store/link: records reach the storage side whole and in order, through a mesh that
 * refuses on demand (so they wait in the backlog) and cut into parts when large; a record
 * that cannot fit is refused whole; barriers may use the reserve; the link says when it is
 * congested; the storage core's answers become the right upcalls and bad ones are counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "store/link.h"

/* ---- the storage side of a fake mesh ---- */
static bool g_refuse;
static uint8_t g_abuf[70000];
static struct store_asm g_asm = { g_abuf, sizeof g_abuf, 0, 0 };
static uint64_t g_seen[512]; /* skeys of decoded records, in arrival order */
static size_t g_n_seen, g_n_barriers, g_msgs;
static uint32_t g_last_barrier[2];

static int m_send(void *ctx, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	if (g_refuse)
		return -E_AGAIN;
	g_msgs++;
	if (kind == STORE_K_BARRIER) {
		assert_int_equal(len, 8);
		g_last_barrier[0] = ld_le32(data);
		g_last_barrier[1] = ld_le32((const uint8_t *)data + 4);
		g_n_barriers++;
		return 0;
	}
	const uint8_t *rec;
	uint32_t rec_len;
	int err = store_asm_feed(&g_asm, kind, data, len, STORE_K_REC, &rec, &rec_len);
	if (err == -E_NEED_MORE)
		return 0;
	assert_int_equal(err, 0);
	struct store_rec r;
	assert_int_equal(store_rec_decode(rec, rec_len, &r), 0);
	assert_true(g_n_seen < 512);
	g_seen[g_n_seen++] = r.skey;
	return 0;
}

/* ---- upcalls ---- */
static uint32_t g_done[16];
static bool g_done_ok[16];
static size_t g_n_done;
static uint64_t g_base, g_end;
static size_t g_n_restored;
static int g_lag = -1;
static void u_done(void *ctx, uint32_t t, bool ok)
{
	(void)ctx;
	g_done[g_n_done] = t;
	g_done_ok[g_n_done++] = ok;
}
static void u_begin(void *ctx, uint64_t base)
{
	(void)ctx;
	g_base = base;
}
static void u_restored(void *ctx, const struct store_rec *r)
{
	(void)ctx;
	assert_int_equal(r->kind, STORE_REC_DLV_PUT);
	g_n_restored++;
}
static void u_end(void *ctx, uint64_t n)
{
	(void)ctx;
	g_end = n;
}
static void u_lag(void *ctx, bool lag)
{
	(void)ctx;
	g_lag = lag;
}
static int g_off;
static void u_off(void *ctx)
{
	(void)ctx;
	g_off++;
}

static struct store_link *L;
static void *g_mem;

static int setup(void **state)
{
	(void)state;
	g_refuse = false;
	g_n_seen = g_n_barriers = g_msgs = g_n_done = g_n_restored = 0;
	g_lag = -1;
	struct store_link_config c = { .backlog_bytes = 8192, .lag_bytes = 2048, .payload_max = 256,
				       .max_record = 65600, .send = m_send };
	const struct store_link_upcalls up = { .done = u_done, .restore_begin = u_begin, .restored = u_restored,
						.restore_end = u_end, .lag = u_lag, .off = u_off };
	size_t n = store_link_mem_size(&c);
	assert_true(n > 0);
	g_mem = aligned_alloc(8, (n + 7) & ~(size_t)7);
	assert_int_equal(store_link_init(&L, g_mem, n, &c, &up), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(store_link_check(L), 0);
	free(g_mem);
	return 0;
}

static struct store_rec sess(uint64_t skey)
{
	static const uint8_t id[] = "d";
	return (struct store_rec){ .kind = STORE_REC_SESS_PUT, .skey = skey, .id = id, .id_len = 1 };
}

static void t_order_through_the_backlog(void **state)
{
	(void)state;
	uint64_t k = 1;
	for (int round = 0; round < 6; round++) {
		g_refuse = round % 2 == 1; /* half the time the mesh has no credit */
		for (int i = 0; i < 10; i++) {
			struct store_rec r = sess(k++);
			assert_int_equal(store_link_record(L, &r), 0);
		}
		(void)store_link_poll(L);
	}
	g_refuse = false;
	assert_int_equal(store_link_poll(L), 0);
	assert_int_equal(g_n_seen, 60);
	for (size_t i = 0; i < 60; i++)
		assert_int_equal(g_seen[i], i + 1); /* in order */
	struct store_link_stats st;
	store_link_stats(L, &st);
	assert_int_equal(st.records, 60);
	assert_true(st.backlogged >= 30);
}

static void t_big_records_in_parts(void **state)
{
	(void)state;
	static uint8_t payload[20000];
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)(i * 13);
	static const uint8_t topic[] = "t/x";
	struct store_rec r = { .kind = STORE_REC_MSG_PUT, .mkey = 5, .topic = topic, .topic_len = 3,
			       .payload = payload, .payload_len = 5000 };
	struct store_rec s1 = sess(1), s2 = sess(2);
	assert_int_equal(store_link_record(L, &s1), 0);
	assert_int_equal(store_link_record(L, &r), 0); /* 5,043 bytes: a HEAD and 20 MOREs */
	assert_int_equal(store_link_record(L, &s2), 0);
	assert_int_equal(g_n_seen, 3);
	assert_int_equal(g_seen[2], 2);
	assert_true(g_msgs >= 22);
	/* waiting in the backlog too */
	g_refuse = true;
	assert_int_equal(store_link_record(L, &r), 0);
	/* a record that cannot fit beside what waits is refused whole */
	r.payload_len = 4000;
	assert_int_equal(store_link_record(L, &r), -E_NOMEM);
	assert_false(store_link_room(L, 4000));
	assert_true(store_link_congested(L)); /* 5 KB waiting > 2 KB */
	/* a barrier may still go: it only asks for an answer */
	assert_int_equal(store_link_barrier(L, 3, 0x80000009u), 0);
	g_refuse = false;
	assert_int_equal(store_link_poll(L), 0);
	assert_false(store_link_congested(L));
	assert_int_equal(g_n_seen, 4);
	assert_int_equal(g_n_barriers, 1);
	assert_int_equal(g_last_barrier[0], 3);
	assert_int_equal(g_last_barrier[1], 0x80000009u);
	/* larger than max_record: a caller bug */
	r.payload = payload;
	r.payload_len = 65600;
	assert_int_equal(store_link_record(L, &r), -E_INVAL);
}

static void t_answers(void **state)
{
	(void)state;
	uint8_t m[24];
	st_le32(m, 0x80000001u);
	st_le32(m + 4, 1);
	st_le32(m + 8, 0x80000002u);
	st_le32(m + 12, 0);
	store_link_recv(L, STORE_K_DONE, m, 16);
	assert_int_equal(g_n_done, 2);
	assert_true(g_done_ok[0] && !g_done_ok[1]);
	st_le64(m, UINT64_C(9) << 40);
	store_link_recv(L, STORE_K_RESTORE_BEGIN, m, 8);
	assert_int_equal(g_base, UINT64_C(9) << 40);
	/* a restored delivery cut into parts */
	static const uint8_t topic[] = "a/b";
	static uint8_t pay[600];
	struct store_rec r = { .kind = STORE_REC_DLV_PUT, .skey = 1, .mkey = 2, .seq = 3, .qos = 1, .topic = topic,
			       .topic_len = 3, .payload = pay, .payload_len = sizeof pay };
	static uint8_t enc[700];
	assert_int_equal(store_rec_encode(&r, enc, sizeof enc), 0);
	uint32_t n = (uint32_t)store_rec_size(&r);
	uint8_t head[4 + 300];
	st_le32(head, n);
	memcpy(head + 4, enc, 300);
	store_link_recv(L, STORE_K_RESTORED_HEAD, head, sizeof head);
	store_link_recv(L, STORE_K_RESTORED_MORE, enc + 300, n - 300);
	store_link_recv(L, STORE_K_RESTORED, enc, n);
	assert_int_equal(g_n_restored, 2);
	st_le64(m, 77);
	store_link_recv(L, STORE_K_RESTORE_END, m, 8);
	assert_int_equal(g_end, 77);
	st_le32(m, 1);
	store_link_recv(L, STORE_K_LAG, m, 4);
	assert_int_equal(g_lag, 1);
	assert_true(store_link_congested(L));
	st_le32(m, 0);
	store_link_recv(L, STORE_K_LAG, m, 4);
	assert_false(store_link_congested(L));
	store_link_recv(L, STORE_K_OFF, m, 0);
	assert_int_equal(g_off, 1);
	/* bad ones: counted, no upcall */
	store_link_recv(L, STORE_K_DONE, m, 7);
	st_le32(m + 4, 2);
	store_link_recv(L, STORE_K_DONE, m, 8);
	store_link_recv(L, STORE_K_RESTORE_BEGIN, m, 7);
	store_link_recv(L, STORE_K_RESTORED, enc, n - 1);
	store_link_recv(L, STORE_K_RESTORED_MORE, enc, 10);
	store_link_recv(L, STORE_K_LAG, m, 3);
	store_link_recv(L, 0x03f0, m, 4);
	store_link_recv(L, STORE_K_OFF, m, 1);
	struct store_link_stats st;
	store_link_stats(L, &st);
	assert_int_equal(st.bad_in, 8);
	assert_int_equal(g_off, 1);
	assert_int_equal(g_n_done, 2);
	assert_int_equal(g_n_restored, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_order_through_the_backlog, setup, teardown),
		cmocka_unit_test_setup_teardown(t_big_records_in_parts, setup, teardown),
		cmocka_unit_test_setup_teardown(t_answers, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
