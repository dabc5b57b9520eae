/* SPDX-License-Identifier: MIT
 *
 * CRC-32C with the SSE4.2 crc32 instruction (x86_64). Compiled with -msse4.2 for this
 * file only; crc32c_hw_available() checks CPUID.1:ECX.SSE4_2 before it may be used.
 * Uses only general registers, so it is safe in any kernel context.
 */
#include "lib/crc32c.h"

bool crc32c_hw_available(void)
{
	uint32_t a = 1, b, c = 0, d;
	__asm__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	return (c >> 20) & 1;
}

uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;
	while (len && ((uintptr_t)p & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
		len--;
	}
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;
		__builtin_memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return ~(uint32_t)c;
}
