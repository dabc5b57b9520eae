/* SPDX-License-Identifier: MIT
 * Unit tests for kernel/diag/gpt_free (where the diagnostics may write): GPTs built with
 * store/gpt's encoders. The largest uncovered run when it lies between partitions, before
 * the first, after the last, with entries out of order and sparse in the array; no run when
 * the partitions cover the usable range; the whole usable range without partitions; 4096-
 * byte blocks; and refusals: no GPT (zeros), a header or entry array with a bad CRC, an
 * entry array shorter than the header says, a header whose disk is smaller than it says
 * (and one on a grown disk, still bounded by its own usable range). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kernel/diag/gpt_free.h"
#include "lib/err.h"
#include "store/gpt.h"
#include "store/layout.h"
#include "store/wire_disk.h"

#define LINUX_TYPE "0fc63daf-8483-4772-8e79-3d69d8477de4"

static uint8_t hdr[65536];
static uint8_t ents[STORE_GPT_ARRAY_BYTES];

struct span {
	uint64_t first, last;
};

/* A GPT of blocks blocks of bs bytes with the given partitions (in that entry order). */
static void make(uint32_t bs, uint64_t blocks, const struct span *p, uint32_t n)
{
	struct store_gpt_new g;
	uint32_t crc;
	memset(&g, 0, sizeof g);
	g.block_size = bs;
	g.disk_blocks = blocks;
	assert_int_equal(store_guid_from_text("01234567-89ab-4cde-8f01-23456789abcd", g.disk_guid), 0);
	g.n_parts = n;
	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(store_guid_from_text(LINUX_TYPE, g.parts[i].type), 0);
		assert_int_equal(store_guid_from_text("11111111-2222-4333-8444-555555555555", g.parts[i].guid), 0);
		g.parts[i].guid[0] = (uint8_t)(g.parts[i].guid[0] + i);
		g.parts[i].first_lba = p[i].first;
		g.parts[i].last_lba = p[i].last;
		g.parts[i].name = "p";
	}
	memset(hdr, 0, sizeof hdr);
	assert_int_equal(store_gpt_entries_encode(&g, ents, sizeof ents, &crc), 0);
	assert_int_equal(store_gpt_header_encode(&g, false, crc, hdr, bs), 0);
}

static int find(uint32_t bs, uint64_t blocks, struct diag_gpt_free *f)
{
	const char *why = NULL;
	int rc = diag_gpt_free_find(hdr, bs, ents, sizeof ents, bs, blocks, f, &why);
	assert_non_null(why);
	return rc;
}

static void t_runs(void **state)
{
	(void)state;
	const uint64_t blocks = 131072; /* 64 MiB of 512 B: usable 34 .. 131038 */
	uint64_t fu, lu;
	assert_int_equal(store_gpt_geometry(512, blocks, &fu, &lu), 0);
	struct diag_gpt_free f;

	/* the test disk of tests/smoke/x86_64-diag.sh */
	const struct span mid[] = { { 2048, 18431 }, { 83968, 116735 } };
	make(512, blocks, mid, 2);
	assert_int_equal(find(512, blocks, &f), 0);
	assert_int_equal(f.n_parts, 2);
	assert_int_equal(f.first_lba, 18432);
	assert_int_equal(f.n_blocks, 83968 - 18432);

	/* out of order; the largest run is at the end */
	const struct span end[] = { { 40000, 50000 }, { 2048, 30000 } };
	make(512, blocks, end, 2);
	assert_int_equal(find(512, blocks, &f), 0);
	assert_int_equal(f.first_lba, 50001);
	assert_int_equal(f.n_blocks, lu - 50001 + 1);

	/* the largest run at the start */
	const struct span start[] = { { 100000, 110000 }, { 110001, lu } };
	make(512, blocks, start, 2);
	assert_int_equal(find(512, blocks, &f), 0);
	assert_int_equal(f.first_lba, fu);
	assert_int_equal(f.n_blocks, 100000 - fu);

	/* covered end to end: nothing */
	const struct span full[] = { { fu, 60000 }, { 60001, lu } };
	make(512, blocks, full, 2);
	assert_int_equal(find(512, blocks, &f), 0);
	assert_int_equal(f.n_parts, 2);
	assert_int_equal(f.n_blocks, 0);

	/* no partitions: the whole usable range */
	make(512, blocks, NULL, 0);
	assert_int_equal(find(512, blocks, &f), 0);
	assert_int_equal(f.n_parts, 0);
	assert_int_equal(f.first_lba, fu);
	assert_int_equal(f.n_blocks, lu - fu + 1);

	/* one-block partitions and one-block gaps */
	const struct span tiny[] = { { fu, fu }, { fu + 2, fu + 2 }, { fu + 4, lu } };
	make(512, blocks, tiny, 3);
	assert_int_equal(find(512, blocks, &f), 0);
	assert_int_equal(f.first_lba, fu + 1);
	assert_int_equal(f.n_blocks, 1);

	/* 4096-byte blocks */
	assert_int_equal(store_gpt_geometry(4096, 16384, &fu, &lu), 0);
	const struct span big[] = { { 256, 1279 } };
	make(4096, 16384, big, 1);
	assert_int_equal(find(4096, 16384, &f), 0);
	assert_int_equal(f.first_lba, 1280);
	assert_int_equal(f.n_blocks, lu - 1280 + 1);
}

static void t_refusals(void **state)
{
	(void)state;
	const uint64_t blocks = 131072;
	const struct span mid[] = { { 2048, 18431 } };
	struct diag_gpt_free f;
	const char *why;
	uint64_t lba;
	size_t len;

	make(512, blocks, mid, 1);
	assert_int_equal(diag_gpt_entries_at(hdr, 512, 512, blocks, &lba, &len, &why), 0);
	assert_int_equal(lba, 2);
	assert_int_equal(len, STORE_GPT_ARRAY_BYTES);

	memset(hdr, 0, sizeof hdr); /* no GPT */
	assert_int_equal(find(512, blocks, &f), -E_CORRUPT);
	assert_int_equal(f.n_blocks, 0);
	assert_int_equal(diag_gpt_entries_at(hdr, 512, 512, blocks, &lba, &len, &why), -E_CORRUPT);
	assert_int_equal(len, 0);

	make(512, blocks, mid, 1);
	hdr[20] ^= 1; /* the reserved word (and with it the header CRC) */
	assert_int_equal(find(512, blocks, &f), -E_CORRUPT);
	assert_int_equal(f.n_blocks, 0);

	make(512, blocks, mid, 1);
	ents[40] ^= 1; /* an entry's last LBA: the array's CRC no longer matches */
	assert_int_equal(find(512, blocks, &f), -E_CORRUPT);
	assert_int_equal(f.n_blocks, 0);

	make(512, blocks, mid, 1);
	assert_int_equal(diag_gpt_free_find(hdr, 512, ents, sizeof ents - 1, 512, blocks, &f, &why), -E_INVAL);
	assert_int_equal(diag_gpt_free_find(hdr, 512, NULL, 0, 512, blocks, &f, &why), -E_INVAL);
	assert_int_equal(diag_gpt_free_find(hdr, 511, ents, sizeof ents, 512, blocks, &f, &why), -E_INVAL);
	/* the same header on a smaller disk: its backup and usable range lie past the end */
	assert_int_equal(diag_gpt_free_find(hdr, 512, ents, sizeof ents, 512, blocks / 2, &f, &why), -E_CORRUPT);
	assert_int_equal(f.n_blocks, 0);
	/* on a larger one (a disk grown since) the header still holds: its usable range, not
	 * the disk's end, bounds the run */
	assert_int_equal(diag_gpt_free_find(hdr, 512, ents, sizeof ents, 512, blocks * 2, &f, &why), 0);
	assert_true(f.first_lba + f.n_blocks <= blocks - 33);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_runs),
		cmocka_unit_test(t_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
