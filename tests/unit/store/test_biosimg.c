/* SPDX-License-Identifier: MIT
 *
 * store/biosimg (the installer's BIOS boot image): the parser accepts the format of
 * store/biosimg.h and refuses every malformed field by its own name, and every truncation;
 * the plan puts the partition from the core's LBA to the ESP only on a disk of 512-byte
 * blocks with room for the core; the installer's order (ESP, BIOS core and boot code, then
 * store_disk_format_gpt) over tests/support/fake_blk leaves a disk that probes INTERRUPTED
 * with the BIOS boot partition, the boot code in LBA 0 beside the protective MBR's record,
 * the core at its LBA and the rest of the partition zero; the installed system's first
 * format (store_plan_keep_bios, store_disk_format) keeps all of it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/err.h"
#include "store/biosimg.h"
#include "store/dev.h"
#include "store/layout.h"
#include "store/wire_disk.h"
#include "tests/support/fake_blk.h"

#define MiB (UINT64_C(1) << 20)
#define CORE_SECTORS 120u
#define CORE_LBA 34u
#define IMG_LEN (952u + CORE_SECTORS * 512u)

static uint8_t img[IMG_LEN];
static uint8_t scratch[STORE_LAYOUT_SCRATCH] __attribute__((aligned(8)));
static uint8_t bounce[64 * 1024];

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A valid version-1 image: a code and core pattern, the fields GRUB's images carry. */
static void build(uint64_t lba, uint32_t sectors)
{
	memset(img, 0, sizeof img);
	memcpy(img, "URMQBIOS", 8);
	put_le(img + 8, 1, 4);
	put_le(img + 12, 440, 4);
	put_le(img + 16, lba, 8);
	put_le(img + 24, sectors, 4);
	for (size_t i = 512; i < 952 + (size_t)sectors * 512; i++)
		img[i] = (uint8_t)(i * 7u + 1u);
	put_le(img + 512 + 0x5c, lba, 8);
	put_le(img + 952 + 0x1f4, lba + 1, 8);
	put_le(img + 952 + 0x1fc, sectors - 1, 2);
}

static int parse(size_t len, enum store_biosimg_rej *rej)
{
	struct store_biosimg im;
	return store_biosimg_parse(img, len, &im, rej);
}

static void test_parse_valid(void **state)
{
	(void)state;
	build(CORE_LBA, CORE_SECTORS);
	struct store_biosimg im;
	enum store_biosimg_rej rej;
	assert_int_equal(store_biosimg_parse(img, IMG_LEN, &im, &rej), 0);
	assert_int_equal(rej, STORE_BIOSIMG_OK);
	assert_ptr_equal(im.code, img + 512);
	assert_ptr_equal(im.core, img + 952);
	assert_true(im.core_lba == CORE_LBA && im.core_sectors == CORE_SECTORS && im.version == 1);
}

static void test_parse_rejects(void **state)
{
	(void)state;
	enum store_biosimg_rej rej;
	struct {
		size_t off;
		uint64_t v;
		int n;
		enum store_biosimg_rej want;
	} cases[] = {
		{ 0, 'X', 1, STORE_BIOSIMG_REJ_MAGIC },
		{ 0, 0x1f8b, 2, STORE_BIOSIMG_REJ_MAGIC }, /* still gzipped */
		{ 8, 2, 4, STORE_BIOSIMG_REJ_VERSION },
		{ 8, 0, 4, STORE_BIOSIMG_REJ_VERSION },
		{ 12, 446, 4, STORE_BIOSIMG_REJ_CODE_BYTES },
		{ 28, 1, 1, STORE_BIOSIMG_REJ_RESERVED },
		{ 511, 0x80, 1, STORE_BIOSIMG_REJ_RESERVED },
		{ 24, 1, 4, STORE_BIOSIMG_REJ_CORE_SECTORS },
		{ 24, 4097, 4, STORE_BIOSIMG_REJ_CORE_SECTORS },
		{ 24, 0xffffffffu, 4, STORE_BIOSIMG_REJ_CORE_SECTORS },
		{ 24, CORE_SECTORS - 1, 4, STORE_BIOSIMG_REJ_LENGTH },
		{ 24, CORE_SECTORS + 1, 4, STORE_BIOSIMG_REJ_LENGTH },
		{ 16, 0, 8, STORE_BIOSIMG_REJ_CORE_LBA },
		{ 16, UINT64_C(1) << 32, 8, STORE_BIOSIMG_REJ_CORE_LBA },
		{ 16, 35, 8, STORE_BIOSIMG_REJ_CODE_LBA },     /* header and boot code disagree */
		{ 512 + 0x5c, 2048, 8, STORE_BIOSIMG_REJ_CODE_LBA },
		{ 952 + 0x1f4, 34, 8, STORE_BIOSIMG_REJ_BLOCKLIST },
		{ 952 + 0x1fc, CORE_SECTORS, 2, STORE_BIOSIMG_REJ_BLOCKLIST },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		build(CORE_LBA, CORE_SECTORS);
		put_le(img + cases[i].off, cases[i].v, cases[i].n);
		rej = STORE_BIOSIMG_OK;
		assert_int_equal(parse(IMG_LEN, &rej), -E_CORRUPT);
		if (rej != cases[i].want)
			fail_msg("case %zu: rejected as %s, want %s", i, store_biosimg_rej_name(rej),
				 store_biosimg_rej_name(cases[i].want));
	}
	/* every truncation, and one byte too many */
	build(CORE_LBA, CORE_SECTORS);
	for (size_t len = 0; len < IMG_LEN; len++) {
		assert_int_equal(parse(len, &rej), -E_CORRUPT);
		assert_int_equal(rej, len < 952 ? STORE_BIOSIMG_REJ_SHORT : STORE_BIOSIMG_REJ_LENGTH);
	}
	struct store_biosimg im;
	assert_int_equal(store_biosimg_parse(NULL, IMG_LEN, &im, &rej), -E_CORRUPT);
	assert_int_equal(rej, STORE_BIOSIMG_REJ_SHORT);
	static uint8_t longer[IMG_LEN + 1];
	memcpy(longer, img, IMG_LEN);
	assert_int_equal(store_biosimg_parse(longer, sizeof longer, &im, &rej), -E_CORRUPT);
	assert_int_equal(rej, STORE_BIOSIMG_REJ_LENGTH);
	/* the smallest and the largest cores */
	build(CORE_LBA, 2);
	assert_int_equal(parse(952 + 2 * 512, &rej), 0);
	for (int r = 0; r <= (int)STORE_BIOSIMG_REJ__COUNT; r++)
		assert_non_null(store_biosimg_rej_name((enum store_biosimg_rej)r));
}

static const struct store_layout_config lc = { .esp_bytes = 32 * MiB, .wal_bytes = 16 * MiB, .telemetry_pct = 25 };
static const uint8_t guid[16] = { 1, 2, 3, 4, 5, 6, 7, 0x48, 0x89, 10, 11, 12, 13, 14, 15, 16 };

static void test_plan(void **state)
{
	(void)state;
	build(CORE_LBA, CORE_SECTORS);
	struct store_biosimg im;
	enum store_biosimg_rej rej;
	assert_int_equal(store_biosimg_parse(img, IMG_LEN, &im, &rej), 0);
	struct store_plan p, before;
	const char *why;
	assert_int_equal(store_layout_plan(&lc, 256 * MiB / 512, 512, 0, &p, NULL), 0);
	before = p;
	assert_int_equal(store_biosimg_plan(&p, &im, guid, &why), 0);
	assert_null(why);
	assert_true(p.bios_start == CORE_LBA && p.bios_blocks == p.esp_start - CORE_LBA);
	assert_memory_equal(p.bios_guid, guid, 16);
	assert_true(p.esp_start == before.esp_start && p.part_start == before.part_start);

	/* 4 KiB blocks: a BIOS boots 512-byte sectors only */
	assert_int_equal(store_layout_plan(&lc, 256 * MiB / 4096, 4096, 0, &p, NULL), 0);
	before = p;
	assert_int_equal(store_biosimg_plan(&p, &im, guid, &why), -E_RANGE);
	assert_non_null(why);
	assert_memory_equal(&p, &before, sizeof p);

	/* a core built for a sector inside the entry array, and one running into the ESP */
	assert_int_equal(store_layout_plan(&lc, 256 * MiB / 512, 512, 0, &p, NULL), 0);
	before = p;
	struct store_biosimg low = im, big = im, far = im;
	low.core_lba = 33;
	assert_int_equal(store_biosimg_plan(&p, &low, guid, &why), -E_RANGE);
	big.core_sectors = (uint32_t)(p.esp_start - CORE_LBA + 1u);
	assert_int_equal(store_biosimg_plan(&p, &big, guid, &why), -E_RANGE);
	far.core_lba = p.esp_start;
	assert_int_equal(store_biosimg_plan(&p, &far, guid, &why), -E_RANGE);
	assert_memory_equal(&p, &before, sizeof p);
	big.core_sectors = (uint32_t)(p.esp_start - CORE_LBA); /* exactly fills it */
	assert_int_equal(store_biosimg_plan(&p, &big, guid, &why), 0);
}

static uint64_t fake_ns;
static uint64_t clock_ns(void *ctx)
{
	(void)ctx;
	return fake_ns += 1000000u;
}

/* The installer's order on a 512-byte-block disk that held junk everywhere it writes. */
static void test_install_order_and_first_boot(void **state)
{
	(void)state;
	build(CORE_LBA, CORE_SECTORS);
	struct store_biosimg im;
	enum store_biosimg_rej rej;
	assert_int_equal(store_biosimg_parse(img, IMG_LEN, &im, &rej), 0);
	struct fake_blk_config c = { .blocks = 256 * MiB / 512, .block_size = 512 };
	struct fake_blk *fb = fake_blk_new(&c);
	assert_non_null(fb);
	static uint8_t junk[1 << 20];
	memset(junk, 0x5a, sizeof junk);
	fake_blk_set(fb, 512, junk, sizeof junk - 512); /* LBA 1 up to the ESP */
	struct store_dev d;
	struct store_dev_port port = { clock_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&d, fake_blk_dev(fb), bounce, sizeof bounce, 1000, &port), 0);
	struct store_plan p;
	const char *why;
	assert_int_equal(store_layout_plan(&lc, c.blocks, 512, 0, &p, NULL), 0);
	/* without the partition in the plan, nothing is written */
	assert_int_equal(store_biosimg_write(&d, &p, &im, scratch, sizeof scratch), -E_INVAL);
	assert_int_equal(store_biosimg_plan(&p, &im, guid, &why), 0);
	assert_int_equal(store_biosimg_write(&d, &p, &im, scratch, 511), -E_INVAL);

	/* install.c: the GPT areas zeroed, the ESP, the BIOS boot code, then the GPT */
	assert_int_equal(store_dev_zero(&d, 0, 34), 0);
	static uint8_t esp[256 << 10];
	for (size_t i = 0; i < sizeof esp; i++)
		esp[i] = (uint8_t)(i * 13u + 7u);
	assert_int_equal(store_dev_write(&d, p.esp_start, (uint32_t)(sizeof esp / 512), esp), 0);
	assert_int_equal(store_biosimg_write(&d, &p, &im, scratch, sizeof scratch), 0);
	uint8_t guids[48];
	for (int i = 0; i < 48; i++)
		guids[i] = (uint8_t)(i * 5 + 3);
	assert_int_equal(store_disk_format_gpt(&d, &p, guids, scratch, sizeof scratch), 0);

	size_t size;
	const uint8_t *b = fake_blk_bytes(fb, &size);
	assert_memory_equal(b, im.code, 440);
	assert_int_equal(b[STORE_MBR_OFF_PARTS + STORE_MBR_PART_OFF_TYPE], STORE_MBR_TYPE_PROTECTIVE);
	assert_true(b[510] == 0x55 && b[511] == 0xaa);
	assert_memory_equal(b + CORE_LBA * 512, im.core, CORE_SECTORS * 512);
	for (uint64_t i = (CORE_LBA + CORE_SECTORS) * 512; i < p.esp_start * 512; i++)
		assert_int_equal(b[i], 0);
	assert_memory_equal(b + p.esp_start * 512, esp, sizeof esp);
	struct store_disk_info info;
	assert_int_equal(store_disk_probe(&d, scratch, sizeof scratch, &info), 0);
	assert_int_equal(info.kind, STORE_DISK_INTERRUPTED);
	assert_true(info.bios_start == CORE_LBA && info.bios_blocks == p.esp_start - CORE_LBA);
	assert_memory_equal(info.bios_guid, guid, 16);
	assert_true(info.esp_start == p.esp_start && info.part_start == p.part_start);

	/* The installed system's first boot (store/boot.c): its own plan keeps the partition. */
	struct store_plan q;
	assert_int_equal(store_layout_plan(&lc, c.blocks, 512, 0, &q, NULL), 0);
	assert_true(store_plan_keep_bios(&q, &info));
	struct store_super sb;
	assert_int_equal(store_disk_format(&d, &q, guids, 1700000000u, scratch, sizeof scratch, &sb), 0);
	assert_int_equal(store_disk_probe(&d, scratch, sizeof scratch, &info), 0);
	assert_int_equal(info.kind, STORE_DISK_OURS);
	assert_true(info.bios_start == CORE_LBA && info.bios_blocks == p.esp_start - CORE_LBA);
	b = fake_blk_bytes(fb, &size);
	assert_memory_equal(b, im.code, 440);
	assert_memory_equal(b + CORE_LBA * 512, im.core, CORE_SECTORS * 512);
	fake_blk_free(fb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_valid),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_install_order_and_first_boot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
