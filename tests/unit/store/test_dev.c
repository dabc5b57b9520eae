/* SPDX-License-Identifier: MIT
 *
 * store/dev (synchronous block I/O through a bounce buffer) over the simulated disk of
 * tests/support/fake_blk, and the disk model itself: flush makes writes durable, a power
 * cut keeps only a subset of what was not flushed, a death mid-write tears it, faults
 * come back as the documented errors, a stalled device times out and stays broken.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/err.h"
#include "store/dev.h"
#include "tests/support/fake_blk.h"

static uint64_t fake_ns;
static uint32_t n_waiting;

static uint64_t clock_ns(void *ctx)
{
	(void)ctx;
	return fake_ns += 1000000u; /* every look at the clock: 1 ms later */
}

static void waiting(void *ctx)
{
	(void)ctx;
	n_waiting++;
}

struct fx {
	struct fake_blk *fb;
	struct store_dev d;
	uint8_t bounce[4096];
};

static struct fx *fx_new(const struct fake_blk_config *c)
{
	struct fx *x = calloc(1, sizeof *x);
	assert_non_null(x);
	x->fb = fake_blk_new(c);
	assert_non_null(x->fb);
	struct store_dev_port port = { clock_ns, waiting, NULL };
	assert_int_equal(store_dev_init(&x->d, fake_blk_dev(x->fb), x->bounce, sizeof x->bounce, 50, &port), 0);
	return x;
}

static void fx_free(struct fx *x)
{
	fake_blk_free(x->fb);
	free(x);
}

static const struct fake_blk_config disk512 = { .blocks = 256, .block_size = 512, .delay_polls = 2 };

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7u + (i >> 9));
}

static void t_roundtrip_through_small_bounce(void **state)
{
	(void)state;
	struct fx *x = fx_new(&disk512);
	uint8_t w[40 * 512], r[40 * 512];
	fill(w, sizeof w, 3);
	/* 40 blocks through an 8-block bounce buffer: five requests each way */
	assert_int_equal(store_dev_write(&x->d, 10, 40, w), 0);
	assert_int_equal(store_dev_read(&x->d, 10, 40, r), 0);
	assert_memory_equal(w, r, sizeof w);
	assert_int_equal(x->d.st.ops[STORE_DEV_WRITE], 5);
	assert_int_equal(x->d.st.blocks[STORE_DEV_READ], 40);
	assert_true(n_waiting > 0); /* delay_polls: the waiting hook saw the waits */
	fx_free(x);
}

static void t_range_and_read_only(void **state)
{
	(void)state;
	struct fx *x = fx_new(&disk512);
	uint8_t b[512] = { 0 };
	assert_int_equal(store_dev_read(&x->d, 256, 1, b), -E_RANGE);
	assert_int_equal(store_dev_read(&x->d, 255, 2, b), -E_RANGE);
	assert_int_equal(store_dev_write(&x->d, 0, 0, b), -E_RANGE);
	assert_int_equal(store_dev_discard(&x->d, 0, 1), -E_NOSYS);
	fx_free(x);
	struct fake_blk_config ro = disk512;
	ro.read_only = true;
	x = fx_new(&ro);
	assert_int_equal(store_dev_write(&x->d, 0, 1, b), -E_PERM);
	assert_int_equal(store_dev_zero(&x->d, 0, 1), -E_PERM);
	struct fake_blk_counts c;
	fake_blk_counts(x->fb, &c);
	assert_int_equal(c.requests, 0);
	fx_free(x);
}

static void t_flush_makes_durable(void **state)
{
	(void)state;
	struct fx *x = fx_new(&disk512);
	uint8_t w[512];
	fill(w, sizeof w, 9);
	assert_int_equal(store_dev_write(&x->d, 5, 1, w), 0);
	assert_int_not_equal(memcmp(fake_blk_durable(x->fb) + 5 * 512, w, 512), 0);
	assert_int_equal(store_dev_flush(&x->d), 0);
	assert_memory_equal(fake_blk_durable(x->fb) + 5 * 512, w, 512);
	fx_free(x);
}

static void t_power_cut_keeps_a_subset(void **state)
{
	(void)state;
	/* 16 unflushed one-block writes: over 40 seeds every write is sometimes kept and
	 * sometimes lost, and what is kept is always whole and equal to what was written. */
	uint32_t kept_per_block[16] = { 0 };
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct fx *x = fx_new(&disk512);
		uint8_t w[512];
		for (uint32_t i = 0; i < 16; i++) {
			fill(w, sizeof w, (uint8_t)(i + 1));
			assert_int_equal(store_dev_write(&x->d, i, 1, w), 0);
		}
		struct fake_blk_cut_report rep;
		struct fake_blk *after = fake_blk_after_power_cut(x->fb, seed, &rep);
		assert_non_null(after);
		assert_int_equal(rep.pending, 16);
		size_t size;
		const uint8_t *img = fake_blk_bytes(after, &size);
		for (uint32_t i = 0; i < 16; i++) {
			fill(w, sizeof w, (uint8_t)(i + 1));
			static const uint8_t zero[512];
			bool kept = memcmp(img + i * 512, w, 512) == 0;
			assert_true(kept || memcmp(img + i * 512, zero, 512) == 0);
			kept_per_block[i] += kept;
		}
		fake_blk_free(after);
		fx_free(x);
	}
	for (uint32_t i = 0; i < 16; i++) {
		assert_true(kept_per_block[i] > 0);
		assert_true(kept_per_block[i] < 40);
	}
}

static void t_power_cut_reorders_overlapping_writes(void **state)
{
	(void)state;
	/* Two unflushed writes to the same block: either may survive (or neither). */
	bool saw_first = false, saw_second = false;
	for (uint64_t seed = 1; seed <= 60; seed++) {
		struct fx *x = fx_new(&disk512);
		uint8_t a[512], b[512];
		memset(a, 0xaa, sizeof a);
		memset(b, 0xbb, sizeof b);
		assert_int_equal(store_dev_write(&x->d, 7, 1, a), 0);
		assert_int_equal(store_dev_write(&x->d, 7, 1, b), 0);
		struct fake_blk *after = fake_blk_after_power_cut(x->fb, seed, NULL);
		size_t size;
		const uint8_t *img = fake_blk_bytes(after, &size);
		saw_first |= img[7 * 512] == 0xaa;
		saw_second |= img[7 * 512] == 0xbb;
		fake_blk_free(after);
		fx_free(x);
	}
	assert_true(saw_first && saw_second);
}

static void t_death_tears_a_write(void **state)
{
	(void)state;
	struct fake_blk_config c = { .blocks = 64, .block_size = 4096 };
	bool torn = false;
	for (uint64_t seed = 1; seed <= 20 && !torn; seed++) {
		struct fx *x = fx_new(&c);
		uint8_t w[4096];
		memset(w, 0x5c, sizeof w);
		fake_blk_die_at(x->fb, 0, seed);
		assert_int_equal(store_dev_write(&x->d, 3, 1, w), -E_IO);
		assert_true(fake_blk_dead(x->fb));
		assert_int_equal(store_dev_flush(&x->d), -E_IO); /* dead: every later request fails */
		/* The torn write reached the cache in part: some of its sectors, not all. */
		struct fake_blk *after = fake_blk_after_power_cut(x->fb, 0, NULL);
		assert_non_null(after);
		size_t size;
		const uint8_t *cur = fake_blk_bytes(x->fb, &size);
		uint32_t in_cache = 0;
		for (uint32_t s = 0; s < 8; s++)
			in_cache += cur[3 * 4096 + s * 512] == 0x5c;
		torn = in_cache > 0 && in_cache < 8;
		fake_blk_free(after);
		fx_free(x);
	}
	assert_true(torn);
}

static void t_device_errors(void **state)
{
	(void)state;
	struct fx *x = fx_new(&disk512);
	uint8_t b[512] = { 0 };
	fake_blk_fail_request(x->fb, 0, -E_IO);
	assert_int_equal(store_dev_read(&x->d, 0, 1, b), -E_IO);
	assert_int_equal(x->d.first_err, -E_IO);
	assert_int_equal(x->d.first_err_op, STORE_DEV_READ);
	assert_int_equal(store_dev_read(&x->d, 0, 1, b), 0); /* one fault, then healthy */
	fake_blk_fail_submit(x->fb, 2, -E_AGAIN);
	assert_int_equal(store_dev_write(&x->d, 9, 1, b), -E_AGAIN);
	assert_int_equal(x->d.st.errors[STORE_DEV_WRITE], 1);
	assert_false(x->d.broken);
	fx_free(x);
}

static void t_timeout_breaks_the_device(void **state)
{
	(void)state;
	struct fx *x = fx_new(&disk512);
	uint8_t b[512] = { 0 };
	fake_blk_stall_request(x->fb, 0);
	assert_int_equal(store_dev_write(&x->d, 0, 1, b), -E_TIMEOUT);
	assert_true(x->d.broken);
	assert_int_equal(x->d.st.timeouts, 1);
	assert_int_equal(store_dev_read(&x->d, 0, 1, b), -E_CLOSED);
	assert_int_equal(store_dev_flush(&x->d), -E_CLOSED);
	fx_free(x);
}

static void t_zero_without_write_zeroes(void **state)
{
	(void)state;
	struct fx *x = fx_new(&disk512);
	uint8_t w[512];
	memset(w, 0xee, sizeof w);
	for (uint64_t i = 0; i < 20; i++)
		assert_int_equal(store_dev_write(&x->d, i, 1, w), 0);
	assert_int_equal(store_dev_zero(&x->d, 2, 17), 0); /* written as zero blocks */
	assert_int_equal(store_dev_flush(&x->d), 0);
	size_t size;
	const uint8_t *img = fake_blk_bytes(x->fb, &size);
	assert_int_equal(img[1 * 512], 0xee);
	for (uint64_t i = 2; i < 19; i++)
		assert_int_equal(img[i * 512 + 100], 0);
	assert_int_equal(img[19 * 512], 0xee);
	fx_free(x);
}

static void t_no_cache_device(void **state)
{
	(void)state;
	struct fake_blk_config c = disk512;
	c.no_cache = true;
	struct fx *x = fx_new(&c);
	uint8_t w[512];
	memset(w, 0x11, sizeof w);
	assert_int_equal(store_dev_write(&x->d, 1, 1, w), 0);
	assert_memory_equal(fake_blk_durable(x->fb) + 512, w, 512); /* durable at completion */
	assert_int_equal(store_dev_flush(&x->d), 0);                /* nothing to flush */
	struct fake_blk_counts cnt;
	fake_blk_counts(x->fb, &cnt);
	assert_int_equal(cnt.flushes, 0);
	fx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_roundtrip_through_small_bounce),
		cmocka_unit_test(t_range_and_read_only),
		cmocka_unit_test(t_flush_makes_durable),
		cmocka_unit_test(t_power_cut_keeps_a_subset),
		cmocka_unit_test(t_power_cut_reorders_overlapping_writes),
		cmocka_unit_test(t_death_tears_a_write),
		cmocka_unit_test(t_device_errors),
		cmocka_unit_test(t_timeout_breaks_the_device),
		cmocka_unit_test(t_zero_without_write_zeroes),
		cmocka_unit_test(t_no_cache_device),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
