/* SPDX-License-Identifier: MIT
 *
 * CRC-32 (IEEE 802.3: reflected polynomial 0xEDB88320, initial value and final xor
 * 0xFFFFFFFF), the checksum of GPT headers and partition entry arrays (UEFI 2.10 5.3).
 * Portable table version only: it checks a few KiB at probe and format, never a hot path.
 * crc32_ieee(0, "123456789", 9) == 0xCBF43926. Pure: reads buf, keeps nothing.
 */
#ifndef LIB_CRC32_H
#define LIB_CRC32_H

#include "lib/compiler.h"

/* Continue a CRC: pass 0 to start; the result can be passed back in to extend. buf is
 * borrowed (len bytes). */
uint32_t crc32_ieee(uint32_t crc, const void *buf, size_t len);

#endif
