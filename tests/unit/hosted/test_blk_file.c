/* SPDX-License-Identifier: MIT
 * Unit tests of the hosted file disk behind drivers/blk.h: read/write round trip,
 * flush, discard and write-zeroes reading back zeros, ordered completion, the bounded
 * queue, range/argument/read-only rejections, and the shared boot self-test. Each test
 * works on its own temporary file, removed in teardown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hosted/blk_file.h"
#include "lib/err.h"

#define DISK_BYTES (1u << 20)

struct fx {
	char path[64];
	struct hosted_blk_file f;
	uint8_t buf[8192];
	uint8_t back[8192];
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof *x);
	if (!x)
		return -1;
	strcpy(x->path, "/tmp/urmqtt-blkfile-XXXXXX");
	int fd = mkstemp(x->path);
	if (fd < 0) {
		free(x);
		return -1;
	}
	close(fd);
	if (hosted_blk_file_open(&x->f, x->path, DISK_BYTES, 512, 4, false) != 0) {
		unlink(x->path);
		free(x);
		return -1;
	}
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;
	/* Every submitted request came back (nothing left in the queue). */
	int leaked = x->f.n_done + x->f.n_queued;
	hosted_blk_file_close(&x->f);
	unlink(x->path);
	free(x);
	return leaked ? -1 : 0;
}

static int run1(struct hosted_blk_file *f, struct blk_req *r)
{
	struct blk_req *done = NULL;
	int rc = blk_submit(&f->dev, r);
	if (rc)
		return rc;
	blk_kick(&f->dev);
	assert_int_equal(blk_poll(&f->dev, &done), 0);
	assert_ptr_equal(done, r);
	assert_int_equal(blk_poll(&f->dev, &done), -E_AGAIN);
	return r->status;
}

static void test_topology(void **state)
{
	struct fx *x = *state;
	const struct blk_topology *t = &x->f.dev.topo;
	assert_int_equal(t->capacity, DISK_BYTES / 512);
	assert_int_equal(t->logical_block, 512);
	assert_true(t->flush && t->discard && t->write_zeroes && !t->read_only);
}

static void test_write_read_flush(void **state)
{
	struct fx *x = *state;
	for (size_t i = 0; i < sizeof x->buf; i++)
		x->buf[i] = (uint8_t)(i * 7 + 3);
	struct blk_req w = {.op = BLK_WRITE, .lba = 100, .n_blocks = 16, .buf = x->buf};
	struct blk_req r = {.op = BLK_READ, .lba = 100, .n_blocks = 16, .buf = x->back};
	struct blk_req fl = {.op = BLK_FLUSH};
	assert_int_equal(run1(&x->f, &w), 0);
	assert_int_equal(run1(&x->f, &fl), 0);
	assert_int_equal(run1(&x->f, &r), 0);
	assert_memory_equal(x->buf, x->back, sizeof x->buf);
	/* The last block of the disk is reachable, one past is not. */
	struct blk_req last = {.op = BLK_WRITE, .lba = DISK_BYTES / 512 - 1, .n_blocks = 1,
			       .buf = x->buf};
	assert_int_equal(run1(&x->f, &last), 0);
}

static void test_discard_and_zeroes(void **state)
{
	struct fx *x = *state;
	uint8_t zero[4096] = {0};
	memset(x->buf, 0xee, sizeof x->buf);
	struct blk_req w = {.op = BLK_WRITE, .lba = 8, .n_blocks = 16, .buf = x->buf};
	struct blk_req z = {.op = BLK_WRITE_ZEROES, .lba = 8, .n_blocks = 8};
	struct blk_req d = {.op = BLK_DISCARD, .lba = 16, .n_blocks = 8};
	struct blk_req r = {.op = BLK_READ, .lba = 8, .n_blocks = 16, .buf = x->back};
	assert_int_equal(run1(&x->f, &w), 0);
	assert_int_equal(run1(&x->f, &z), 0);
	assert_int_equal(run1(&x->f, &r), 0);
	assert_memory_equal(x->back, zero, 4096);
	assert_int_equal(x->back[4096], 0xee);
	assert_int_equal(run1(&x->f, &d), 0);
	assert_int_equal(run1(&x->f, &r), 0);
	/* A punched hole reads back as zeros (on file systems that punch). */
	assert_memory_equal(x->back + 4096, zero, 4096);
}

static void test_queue_bound_and_order(void **state)
{
	struct fx *x = *state;
	struct blk_req r[5];
	struct blk_req *done;
	for (int i = 0; i < 5; i++)
		r[i] = (struct blk_req){.op = BLK_READ, .lba = (uint64_t)i, .n_blocks = 1,
					.buf = x->back + 512 * i};
	for (int i = 0; i < 4; i++)
		assert_int_equal(blk_submit(&x->f.dev, &r[i]), 0);
	assert_int_equal(blk_submit(&x->f.dev, &r[4]), -E_AGAIN);
	assert_int_equal(blk_poll(&x->f.dev, &done), -E_AGAIN); /* not kicked yet */
	blk_kick(&x->f.dev);
	/* Completed but not yet polled requests still hold their slots. */
	assert_int_equal(blk_submit(&x->f.dev, &r[4]), -E_AGAIN);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(blk_poll(&x->f.dev, &done), 0);
		assert_ptr_equal(done, &r[i]);
		assert_int_equal(done->status, 0);
	}
	assert_int_equal(blk_poll(&x->f.dev, &done), -E_AGAIN);
}

static void test_rejections(void **state)
{
	struct fx *x = *state;
	static const struct {
		enum blk_op op;
		uint64_t lba;
		uint32_t n;
		bool buf;
		int rc;
	} cases[] = {
		{BLK_READ, 0, 0, true, -E_INVAL},          /* no blocks */
		{BLK_READ, 0, 1, false, -E_INVAL},         /* no buffer */
		{BLK_WRITE, 0, 0, true, -E_INVAL},
		{BLK_FLUSH, 0, 1, false, -E_INVAL},        /* flush carries no blocks */
		{BLK_DISCARD, 0, 0, false, -E_INVAL},
		{BLK_READ, DISK_BYTES / 512, 1, true, -E_RANGE},
		{BLK_READ, DISK_BYTES / 512 - 1, 2, true, -E_RANGE},
		{BLK_WRITE, UINT64_MAX, 1, true, -E_RANGE}, /* no wrap-around */
		{BLK_WRITE_ZEROES, 1, UINT32_MAX, false, -E_RANGE},
		{(enum blk_op)99, 0, 1, true, -E_NOSYS},
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct blk_req r = {.op = cases[i].op, .lba = cases[i].lba,
				    .n_blocks = cases[i].n, .buf = cases[i].buf ? x->buf : NULL};
		if (blk_submit(&x->f.dev, &r) != cases[i].rc)
			fail_msg("case %zu", i);
	}
}

static void test_read_only_and_open_errors(void **state)
{
	struct fx *x = *state;
	struct hosted_blk_file ro;
	assert_int_equal(hosted_blk_file_open(&ro, x->path, 0, 512, 2, true), 0);
	assert_true(ro.dev.topo.read_only);
	struct blk_req w = {.op = BLK_WRITE, .lba = 0, .n_blocks = 1, .buf = x->buf};
	struct blk_req d = {.op = BLK_DISCARD, .lba = 0, .n_blocks = 1};
	struct blk_req r = {.op = BLK_READ, .lba = 0, .n_blocks = 1, .buf = x->back};
	assert_int_equal(blk_submit(&ro.dev, &w), -E_PERM);
	assert_int_equal(blk_submit(&ro.dev, &d), -E_PERM);
	assert_int_equal(run1(&ro, &r), 0);
	hosted_blk_file_close(&ro);
	assert_int_equal(hosted_blk_file_open(&ro, "/nonexistent/urmqtt-disk", 0, 512, 2, false),
			 -E_NOENT);
	assert_int_equal(hosted_blk_file_open(&ro, x->path, 0, 1000, 2, false), -E_INVAL);
	assert_int_equal(hosted_blk_file_open(&ro, x->path, 0, 512, 0, false), -E_INVAL);
	assert_int_equal(hosted_blk_file_open(&ro, "/tmp", 0, 512, 2, false), -E_NOENT);
}

static void test_selftest(void **state)
{
	struct fx *x = *state;
	const char *why = NULL;
	assert_int_equal(blk_selftest(&x->f.dev, x->buf, sizeof x->buf, 1234, 100, &why), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_topology, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_read_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discard_and_zeroes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_bound_and_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_and_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_selftest, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
