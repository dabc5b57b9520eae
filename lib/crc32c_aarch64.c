/* SPDX-License-Identifier: MIT
 *
 * CRC-32C with the ARMv8 CRC32C instructions (aarch64). Compiled with +crc for this file
 * only; availability comes from ID_AA64ISAR0_EL1.CRC32, which the kernel may read at EL1.
 */
#include "lib/crc32c.h"

bool crc32c_hw_available(void)
{
	uint64_t isar0;
	__asm__("mrs %0, ID_AA64ISAR0_EL1" : "=r"(isar0));
	return ((isar0 >> 16) & 0xf) != 0;
}

uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_aarch64_crc32cb(c, *p++);
		len--;
	}
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;
		__builtin_memcpy(&w, p, 8);
		c = __builtin_aarch64_crc32cx(c, w);
	}
	while (len--)
		c = __builtin_aarch64_crc32cb(c, *p++);
	return ~c;
}
