/* SPDX-License-Identifier: MIT
 *
 * store_disk_format_gpt (the installer's half of a format, kernel/node/install.c) over the
 * simulated disk of tests/support/fake_blk: after it a disk probes INTERRUPTED with the
 * plan's ESP and data partition, the ESP bytes written before it are kept, the superblock
 * slots read as zeros whatever they held; the first boot's store_disk_format with the same
 * plan then makes it OURS and still keeps the ESP's bytes (the ESP never moves). Arguments
 * that do not match the device are refused before any write.
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
#include "store/layout.h"
#include "tests/support/fake_blk.h"

#define MiB (UINT64_C(1) << 20)

static uint64_t fake_ns;
static uint64_t clock_ns(void *ctx)
{
	(void)ctx;
	return fake_ns += 1000000u;
}

static uint8_t scratch[STORE_LAYOUT_SCRATCH] __attribute__((aligned(8)));
static uint8_t bounce[64 * 1024];

static void install_then_first_boot(uint32_t bs)
{
	struct fake_blk_config c = { .blocks = 256 * MiB / bs, .block_size = bs };
	struct fake_blk *fb = fake_blk_new(&c);
	assert_non_null(fb);
	struct store_dev d;
	struct store_dev_port port = { clock_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&d, fake_blk_dev(fb), bounce, sizeof bounce, 1000, &port), 0);
	const struct store_layout_config lc = { .esp_bytes = 32 * MiB, .wal_bytes = 16 * MiB, .telemetry_pct = 25 };
	struct store_plan p;
	assert_int_equal(store_layout_plan(&lc, c.blocks, bs, 0, &p, NULL), 0);
	/* Leftovers where the superblocks go, and an "ESP image" (a pattern) at the ESP. */
	static uint8_t junk[8192];
	memset(junk, 0xa5, sizeof junk);
	fake_blk_set(fb, p.part_start * bs, junk, sizeof junk);
	static uint8_t esp[1 << 20];
	for (size_t i = 0; i < sizeof esp; i++)
		esp[i] = (uint8_t)(i * 13u + 7u);
	assert_int_equal(store_dev_write(&d, p.esp_start, (uint32_t)(sizeof esp / bs), esp), 0);

	uint8_t guids[48];
	for (int i = 0; i < 48; i++)
		guids[i] = (uint8_t)(i * 5 + 3);
	struct store_plan bad = p;
	bad.disk_blocks--;
	assert_int_equal(store_disk_format_gpt(&d, &bad, guids, scratch, sizeof scratch), -E_INVAL);
	assert_int_equal(store_disk_format_gpt(&d, &p, guids, scratch, sizeof scratch - 1), -E_INVAL);
	assert_int_equal(store_disk_format_gpt(&d, &p, guids, scratch, sizeof scratch), 0);

	struct store_disk_info info;
	assert_int_equal(store_disk_probe(&d, scratch, sizeof scratch, &info), 0);
	assert_int_equal(info.kind, STORE_DISK_INTERRUPTED);
	assert_true(info.esp_start == p.esp_start && info.esp_blocks == p.esp_blocks);
	assert_true(info.part_start == p.part_start && info.part_blocks == p.part_blocks);
	size_t size;
	const uint8_t *img = fake_blk_bytes(fb, &size);
	assert_memory_equal(img + p.esp_start * bs, esp, sizeof esp);
	for (size_t i = 0; i < sizeof junk; i++)
		assert_int_equal(img[p.part_start * bs + i], 0);

	/* The installed system's first boot: the same plan, formatted in place. */
	struct store_super sb;
	assert_int_equal(store_disk_format(&d, &p, guids, 1700000000u, scratch, sizeof scratch, &sb), 0);
	assert_int_equal(store_disk_probe(&d, scratch, sizeof scratch, &info), 0);
	assert_int_equal(info.kind, STORE_DISK_OURS);
	assert_true(info.esp_start == p.esp_start && info.esp_blocks == p.esp_blocks);
	img = fake_blk_bytes(fb, &size);
	assert_memory_equal(img + p.esp_start * bs, esp, sizeof esp);
	fake_blk_free(fb);
}

static void test_install_512(void **state)
{
	(void)state;
	install_then_first_boot(512);
}

static void test_install_4096(void **state)
{
	(void)state;
	install_then_first_boot(4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_install_512),
		cmocka_unit_test(test_install_4096),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
