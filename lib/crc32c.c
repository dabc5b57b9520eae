/* SPDX-License-Identifier: MIT
 *
 * CRC-32C portable implementation (slice-by-1 table, reflected polynomial 0x82F63B78)
 * and the dispatcher that prefers the CPU instruction when the arch file says it exists.
 * The table is built at compile time as a constant so the image carries no init step.
 */
#include "lib/crc32c.h"

#define P 0x82F63B78u
#define T1(c) (((c) & 1) ? ((c) >> 1) ^ P : (c) >> 1)
#define T8(c) T1(T1(T1(T1(T1(T1(T1(T1(c))))))))
#define R4(n) T8(n##u), T8(n##u + 1), T8(n##u + 2), T8(n##u + 3)
#define R16(n) R4(n), R4(n + 4), R4(n + 8), R4(n + 12)
#define R64(n) R16(n), R16(n + 16), R16(n + 32), R16(n + 48)

static const uint32_t crc32c_table[256] = { R64(0), R64(64), R64(128), R64(192) };

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	crc = ~crc;
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	if (crc32c_hw_available())
		return crc32c_hw(crc, buf, len);
	return crc32c_sw(crc, buf, len);
}
