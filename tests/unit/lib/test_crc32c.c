/* SPDX-License-Identifier: MIT
 * lib/crc32c: known answers (RFC 3720 appendix B.4 patterns and "123456789") and a
 * differential test of the instruction version against the table version over many
 * lengths, alignments and split points. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lib/crc32c.h"

/* The CPU feature crc32c_hw needs, as /proc/cpuinfo names it. */
#if defined(__x86_64__)
#define CPU_CRC_FLAG "sse4_2"
#else
#define CPU_CRC_FLAG "crc32"
#endif

static void test_known_answers(void **state)
{
	(void)state;
	uint8_t buf[32];
	assert_int_equal(crc32c_sw(0, "123456789", 9), 0xE3069283u);
	memset(buf, 0, 32);
	assert_int_equal(crc32c_sw(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, 32);
	assert_int_equal(crc32c_sw(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(crc32c_sw(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	assert_int_equal(crc32c_sw(0, buf, 32), 0x113FDB5Cu);
	assert_int_equal(crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(crc32c_sw(0, "", 0), 0);
}

static void test_incremental_equals_whole(void **state)
{
	(void)state;
	uint8_t buf[300];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 37 + 5);
	uint32_t whole = crc32c_sw(0, buf, sizeof buf);
	for (size_t cut = 0; cut <= sizeof buf; cut += 7)
		assert_int_equal(crc32c_sw(crc32c_sw(0, buf, cut), buf + cut, sizeof buf - cut), whole);
}

static void test_hw_matches_sw(void **state)
{
	(void)state;
	static uint8_t buf[1100];
	if (!crc32c_hw_available()) {
		/* The reason tests/run-all.sh checks against /proc/cpuinfo before it accepts the skip. */
		print_message("# needs cpu %s: no CRC32C instruction on this CPU\n", CPU_CRC_FLAG);
		skip();
	}
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 131 + 17);
	for (size_t off = 0; off < 16; off++)
		for (size_t n = 0; n + off <= sizeof buf; n += (n < 64 ? 1 : 61)) {
			uint32_t seed = (uint32_t)(n * 2654435761u);
			assert_int_equal(crc32c_hw(seed, buf + off, n), crc32c_sw(seed, buf + off, n));
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_incremental_equals_whole),
		cmocka_unit_test(test_hw_matches_sw),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
