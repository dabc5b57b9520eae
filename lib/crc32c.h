/* SPDX-License-Identifier: MIT
 *
 * CRC-32C (Castagnoli), as used by the disk layout and the telemetry log. One API,
 * three implementations: a portable table version and CPU-instruction versions
 * (SSE4.2 on x86_64, ARMv8 CRC on aarch64), differential-tested against each other.
 * crc32c(0, "123456789", 9) == 0xE3069283.
 */
#ifndef LIB_CRC32C_H
#define LIB_CRC32C_H

#include "lib/compiler.h"

/* Continue a CRC: pass 0 to start; the result can be passed back in to extend. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* Portable table version (always available). */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);
/* Instruction version; only call when crc32c_hw_available() is true. */
uint32_t crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool crc32c_hw_available(void);

#endif
