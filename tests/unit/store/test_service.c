/* SPDX-License-Identifier: MIT
 * The storage core's service (store/service.h) over the simulated disk: no disk and a
 * foreign disk make it say why and tell every data core "off" (OFF exactly once each),
 * without a single write to the foreign disk; a blank disk is formatted, the database
 * created and every data core restored (RESTORE_BEGIN, then RESTORE_END), the report line
 * filled; the same disk at the next start is ours and opened; a clean stop commits what a
 * data core queued before it (a session put on the local link is restored next time); a
 * burst of records larger than the write-ahead log's region is committed in batches the
 * region holds, and its barrier answered "stored".
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

#include "lib/err.h"
#include "store/ops.h"
#include "store/service.h"
#include "tests/support/fake_blk.h"

#define N_DATA 3u
#define PAYLOAD_MAX 4096u

static struct {
	uint32_t off[N_DATA], begin[N_DATA], end[N_DATA], records[N_DATA], other;
	uint32_t unusable;
	uint32_t done[2]; /* barriers answered: [0] not stored, [1] stored */
	char why[256];
	char log[4096];
	uint64_t fake_ns;
} g;

static void *p_alloc(void *ctx, size_t len)
{
	(void)ctx;
	return malloc(len);
}
static void p_free(void *ctx, void *p, size_t len)
{
	(void)ctx, (void)len;
	free(p);
}
static uint64_t p_now_ns(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + g.fake_ns;
}
static int64_t p_wall_ms(void *ctx)
{
	(void)ctx;
	return INT64_C(1796000000000);
}
static void p_random(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	uint8_t *b = buf;
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)rand();
}
static void p_log(void *ctx, const char *line)
{
	(void)ctx;
	size_t n = strlen(g.log);
	snprintf(g.log + n, sizeof g.log - n, "%s\n", line);
}
static void p_unusable(void *ctx, const char *what)
{
	(void)ctx;
	g.unusable++;
	snprintf(g.why, sizeof g.why, "%s", what);
}
static int p_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	assert_true(dst < N_DATA);
	switch (kind) {
	case STORE_K_OFF: g.off[dst]++; break;
	case STORE_K_RESTORE_BEGIN: g.begin[dst]++; break;
	case STORE_K_RESTORE_END: g.end[dst]++; break;
	case STORE_K_RESTORED:
	case STORE_K_RESTORED_HEAD: /* a long one: its head, then pieces */
		g.records[dst]++;
		break;
	case STORE_K_DONE:
		for (uint32_t i = 0; i + 8u <= len; i += 8u) {
			const uint8_t *d = (const uint8_t *)data + i;
			uint32_t ok = (uint32_t)d[4] | (uint32_t)d[5] << 8 | (uint32_t)d[6] << 16 | (uint32_t)d[7] << 24;
			g.done[ok ? 1 : 0]++;
		}
		break;
	default: g.other++; break;
	}
	return 0;
}
static uint32_t p_home(void *ctx, uint8_t id_kind, const uint8_t *id, size_t len)
{
	(void)ctx, (void)id_kind;
	return len ? id[0] % N_DATA : 0;
}

static const struct store_service_port port = {
	p_alloc, p_free, p_now_ns, p_wall_ms, p_random, NULL, p_log, p_unusable, p_send, p_home, NULL,
};

static uint8_t bounce[128 * 1024] __attribute__((aligned(4096)));

static struct store_service_config config(struct blk_dev *blk)
{
	return (struct store_service_config){
		.blk = blk, .disk_name = "disk0", .bounce = bounce, .bounce_len = sizeof bounce,
		.io_timeout_ms = 5000,
		.layout = { .esp_bytes = 4u << 20, .wal_bytes = 4u << 20, .telemetry_pct = 10 },
		.cache_kb = 1024, .checkpoint_pages = 1000, .sqlite_heap = 16u << 20,
		.engine = { .n_data = N_DATA, .payload_max = PAYLOAD_MAX, .max_record = 80000,
			    .out_bytes = 256 * 1024, .local_bytes = 256 * 1024, .batch_ms = 5, .batch_ops = 512,
			    .lag_commit_ms = 1000 },
		.pass_budget_us = 100000,
	};
}

static void reset(void)
{
	memset(&g, 0, sizeof g);
}

/* Polls until every data core heard RESTORE_END (bounded). */
static void run_restore(struct store_service *s)
{
	for (int i = 0; i < 1000; i++) {
		(void)store_service_poll(s);
		bool all = true;
		for (uint32_t d = 0; d < N_DATA; d++)
			all = all && g.end[d] == 1;
		if (all)
			return;
	}
	fail_msg("the restore did not end: log\n%s", g.log);
}

static struct fake_blk *disk(uint64_t mib)
{
	struct fake_blk_config c = { .blocks = (mib << 20) / 512, .block_size = 512, .discard = true,
				     .write_zeroes = true };
	struct fake_blk *f = fake_blk_new(&c);
	assert_non_null(f);
	return f;
}

static void t_no_disk(void **state)
{
	(void)state;
	reset();
	static struct store_service s;
	struct store_service_config c = config(NULL);
	assert_int_equal(store_service_init(&s, &c, &port), 0);
	assert_true(store_service_poll(&s) > 0);
	assert_int_equal(g.unusable, 1);
	assert_non_null(strstr(g.why, "no data disk"));
	for (uint32_t d = 0; d < N_DATA; d++)
		assert_int_equal(g.off[d], 1);
	assert_non_null(strstr(g.log, "WITHOUT persistence"));
	assert_int_equal(store_service_poll(&s), 0); /* off for good: no more work, no second OFF */
	for (uint32_t d = 0; d < N_DATA; d++)
		assert_int_equal(g.off[d], 1);
	char line[64];
	assert_int_equal(store_service_line(&s, line, sizeof line), 0);
	assert_int_equal(store_service_local(&s, STORE_K_REC, "x", 1), -E_AGAIN);
	assert_int_equal(store_service_due_ns(&s), UINT64_MAX);
	store_service_fini(&s);
}

static void t_foreign_disk_never_written(void **state)
{
	(void)state;
	reset();
	struct fake_blk *f = disk(64);
	uint8_t ext4[2048] = { 0 };
	ext4[1024] = 0x10;           /* an inode count */
	ext4[1080] = 0x53;           /* s_magic 0xEF53 at byte 1080 */
	ext4[1081] = 0xEF;
	fake_blk_set(f, 0, ext4, sizeof ext4);
	static struct store_service s;
	struct store_service_config c = config(fake_blk_dev(f));
	assert_int_equal(store_service_init(&s, &c, &port), 0);
	(void)store_service_poll(&s);
	assert_int_equal(g.unusable, 1);
	assert_non_null(strstr(g.why, "ext2/3/4"));
	assert_non_null(strstr(g.why, "never written"));
	for (uint32_t d = 0; d < N_DATA; d++)
		assert_int_equal(g.off[d], 1);
	struct fake_blk_counts k;
	fake_blk_counts(f, &k);
	assert_int_equal(k.writes + k.discards + k.zeroes + k.flushes, 0);
	store_service_fini(&s);
	fake_blk_free(f);
}

static void t_blank_disk_formatted_then_ours(void **state)
{
	(void)state;
	reset();
	struct fake_blk *f = disk(64);
	static struct store_service s;
	struct store_service_config c = config(fake_blk_dev(f));
	assert_int_equal(store_service_init(&s, &c, &port), 0);
	assert_int_equal(store_service_due_ns(&s), 0); /* the bring-up is due */
	run_restore(&s);
	if (g.unusable)
		fail_msg("unusable: %s; log:\n%s", g.why, g.log);
	assert_non_null(strstr(g.log, "blank disk formatted; database created"));
	for (uint32_t d = 0; d < N_DATA; d++) {
		assert_int_equal(g.begin[d], 1);
		assert_int_equal(g.off[d], 0);
	}
	char line[320];
	assert_true(store_service_line(&s, line, sizeof line) > 0);
	assert_non_null(strstr(line, "state=serving"));
	assert_non_null(strstr(line, "gen=1"));

	/* A data core's record on the local link, then a clean stop: committed. */
	uint8_t rec[256];
	static const uint8_t id[] = "dev-7";
	const struct store_rec r = { .kind = STORE_REC_SESS_PUT, .skey = (UINT64_C(1) << 40) | 1u,
				     .id_kind = 0, .id = id, .id_len = 5 };
	assert_int_equal(store_rec_encode(&r, rec, sizeof rec), 0);
	size_t n = store_rec_size(&r);
	assert_int_equal(store_service_local(&s, STORE_K_REC, rec, (uint32_t)n), 0);
	store_service_fini(&s);

	/* The next start: our disk, opened and checked; the session comes back to its core. */
	reset();
	assert_int_equal(store_service_init(&s, &c, &port), 0);
	run_restore(&s);
	assert_non_null(strstr(g.log, "our disk; database opened and checked"));
	assert_int_equal(g.records[id[0] % N_DATA], 1);
	assert_true(store_service_line(&s, line, sizeof line) > 0);
	assert_non_null(strstr(line, "gen=2"));
	store_service_fini(&s);
	fake_blk_free(f);
}

static void t_too_small_blank_disk(void **state)
{
	(void)state;
	reset();
	struct fake_blk *f = disk(4);
	static struct store_service s;
	struct store_service_config c = config(fake_blk_dev(f));
	assert_int_equal(store_service_init(&s, &c, &port), 0);
	(void)store_service_poll(&s);
	assert_int_equal(g.unusable, 1);
	if (!strstr(g.why, "too small"))
		fail_msg("unusable: %s", g.why);
	struct fake_blk_counts k;
	fake_blk_counts(f, &k);
	assert_int_equal(k.writes, 0);
	store_service_fini(&s);
	fake_blk_free(f);
}

/* One record from data core src as the link sends a long one: its head, then pieces. */
static void send_record(struct store_service *s, uint32_t src, const uint8_t *rec, uint32_t n)
{
	uint8_t m[PAYLOAD_MAX];
	uint32_t first = MIN(n, PAYLOAD_MAX - 4u);
	m[0] = (uint8_t)n, m[1] = (uint8_t)(n >> 8), m[2] = (uint8_t)(n >> 16), m[3] = (uint8_t)(n >> 24);
	memcpy(m + 4, rec, first);
	store_service_input(s, src, STORE_K_REC_HEAD, m, first + 4u);
	for (uint32_t off = first; off < n; off += PAYLOAD_MAX)
		store_service_input(s, src, STORE_K_REC_MORE, rec + off, MIN(PAYLOAD_MAX, n - off));
}

static void t_burst_larger_than_the_wal(void **state)
{
	(void)state;
	reset();
	struct fake_blk *f = disk(64); /* the WAL's region: 3 MiB (R / 16 units) */
	static struct store_service s;
	struct store_service_config c = config(fake_blk_dev(f));
	assert_int_equal(store_service_init(&s, &c, &port), 0);
	run_restore(&s);
	if (g.unusable)
		fail_msg("unusable: %s; log:\n%s", g.why, g.log);
	assert_true((uint64_t)s.boot.wal_frames * 4096u < 96u * 60000u); /* the burst is larger */
	/* 96 retained messages of 60000 bytes arrive before the storage core's next pass: about
	 * 5.5 MiB for one batch, were it not bounded by the WAL's region. */
	static uint8_t payload[60000], rec[70000];
	memset(payload, 'p', sizeof payload);
	for (uint32_t i = 0; i < 96; i++) {
		char topic[32];
		int tl = snprintf(topic, sizeof topic, "devices/d/cmd/%u", (unsigned)i);
		const struct store_rec r = { .kind = STORE_REC_RET_PUT, .qos = 1, .topic = (const uint8_t *)topic,
					     .topic_len = (uint16_t)tl, .payload = payload, .payload_len = sizeof payload };
		assert_int_equal(store_rec_encode(&r, rec, sizeof rec), 0);
		send_record(&s, 0, rec, (uint32_t)store_rec_size(&r));
	}
	const uint8_t bar[8] = { 0, 0, 0, 0, 42, 0, 0, 0 }; /* origin 0, ticket 42 */
	store_service_input(&s, 0, STORE_K_BARRIER, bar, sizeof bar);
	for (int i = 0; i < 1000 && !g.done[0] && !g.done[1]; i++)
		(void)store_service_poll(&s);
	if (g.done[1] != 1 || g.done[0] != 0)
		fail_msg("barrier answers: stored %u, not stored %u; log:\n%s", (unsigned)g.done[1],
			 (unsigned)g.done[0], g.log);
	const struct store_engine_stats *e = store_engine_stats(s.eng);
	assert_true(e->commits >= 3u);
	assert_int_equal(e->commit_failed, 0);
	store_service_fini(&s);

	/* All 96 come back at the next start. */
	reset();
	assert_int_equal(store_service_init(&s, &c, &port), 0);
	run_restore(&s);
	uint32_t restored = 0;
	for (uint32_t d = 0; d < N_DATA; d++)
		restored += g.records[d];
	assert_int_equal(restored, 96u * N_DATA); /* every data core holds every retained message */
	store_service_fini(&s);
	fake_blk_free(f);
}

int main(void)
{
	srand(7);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_no_disk),
		cmocka_unit_test(t_foreign_disk_never_written),
		cmocka_unit_test(t_blank_disk_formatted_then_ours),
		cmocka_unit_test(t_too_small_blank_disk),
		cmocka_unit_test(t_burst_larger_than_the_wal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
