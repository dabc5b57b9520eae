/* SPDX-License-Identifier: MIT
 *
 * Explicit byte-order load/store helpers for any alignment. Wire and disk formats are
 * read and written through these (or the cursor), never through struct overlays.
 */
#ifndef LIB_BYTES_H
#define LIB_BYTES_H

#include "lib/compiler.h"

static inline uint16_t ld_be16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)((uint16_t)b[0] << 8 | b[1]);
}
static inline uint32_t ld_be32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}
static inline uint64_t ld_be64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)ld_be32(b) << 32 | ld_be32(b + 4);
}
static inline uint16_t ld_le16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)((uint16_t)b[1] << 8 | b[0]);
}
static inline uint32_t ld_le32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}
static inline uint64_t ld_le64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)ld_le32(b + 4) << 32 | ld_le32(b);
}
static inline void st_be16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}
static inline void st_be32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}
static inline void st_be64(void *p, uint64_t v)
{
	st_be32(p, (uint32_t)(v >> 32));
	st_be32((uint8_t *)p + 4, (uint32_t)v);
}
static inline void st_le16(void *p, uint16_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
}
static inline void st_le32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}
static inline void st_le64(void *p, uint64_t v)
{
	st_le32(p, (uint32_t)v);
	st_le32((uint8_t *)p + 4, (uint32_t)(v >> 32));
}

#endif
