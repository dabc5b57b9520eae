/* SPDX-License-Identifier: MIT
 * lib/crc32 (IEEE 802.3, as GPT uses it): published check values ("123456789", the
 * RFC 3720 B.4 style patterns, zlib's answers for a few strings), the CRC of an all-zero
 * GPT entry array, and incremental computation equal to one shot at every split point. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/crc32.h"

struct vec {
	const char *name;
	uint8_t fill; /* 0: text; 1: zeros; 2: 0xff; 3: ascending; 4: descending */
	const char *text;
	size_t len;
	uint32_t crc;
};

static const struct vec vecs[] = {
	{ "check", 0, "123456789", 9, 0xCBF43926u },
	{ "empty", 0, "", 0, 0x00000000u },
	{ "a", 0, "a", 1, 0xE8B7BE43u },
	{ "fox", 0, "The quick brown fox jumps over the lazy dog", 43, 0x414FA339u },
	{ "32 zeros", 1, NULL, 32, 0x190A55ADu },
	{ "32 ones", 2, NULL, 32, 0xFF6CAB0Bu },
	{ "ascending", 3, NULL, 32, 0x91267E8Au },
	{ "descending", 4, NULL, 32, 0x9AB0EF72u },
	{ "empty GPT entry array", 1, NULL, 16384, 0xAB54D286u },
};

static void make(const struct vec *v, uint8_t *buf)
{
	for (size_t i = 0; i < v->len; i++) {
		switch (v->fill) {
		case 0: buf[i] = (uint8_t)v->text[i]; break;
		case 1: buf[i] = 0; break;
		case 2: buf[i] = 0xff; break;
		case 3: buf[i] = (uint8_t)i; break;
		default: buf[i] = (uint8_t)(v->len - 1 - i); break;
		}
	}
}

static void test_known_answers(void **state)
{
	(void)state;
	static uint8_t buf[16384];
	for (size_t i = 0; i < sizeof vecs / sizeof vecs[0]; i++) {
		make(&vecs[i], buf);
		uint32_t got = crc32_ieee(0, buf, vecs[i].len);
		if (got != vecs[i].crc)
			print_error("%s: %08x, expected %08x\n", vecs[i].name, got, vecs[i].crc);
		assert_int_equal(got, vecs[i].crc);
	}
}

static void test_incremental_equals_whole(void **state)
{
	(void)state;
	uint8_t buf[300];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 37 + 5);
	uint32_t whole = crc32_ieee(0, buf, sizeof buf);
	for (size_t cut = 0; cut <= sizeof buf; cut++)
		assert_int_equal(crc32_ieee(crc32_ieee(0, buf, cut), buf + cut, sizeof buf - cut), whole);
	/* three pieces, and empty pieces change nothing */
	uint32_t c = crc32_ieee(0, buf, 100);
	c = crc32_ieee(c, buf + 100, 0);
	c = crc32_ieee(c, buf + 100, 150);
	c = crc32_ieee(c, buf + 250, 50);
	assert_int_equal(c, whole);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_incremental_equals_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
