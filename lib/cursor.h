/* SPDX-License-Identifier: MIT
 *
 * Bounds-checked cursors: the only way any parser reads external bytes and the usual
 * way encoders write them. A cursor borrows its buffer (the caller keeps ownership and
 * must keep it alive while the cursor is used).
 *
 * Invariants:
 *  1. 0 <= pos <= len at all times.
 *  2. A failed read or write sets the sticky `err` flag, returns 0 / does nothing, and
 *     leaves pos unchanged; later operations also fail. Callers may therefore chain reads
 *     and check `cur_ok()` once at the end.
 *  3. Nothing here allocates, asserts on input, or reads outside [buf, buf+len).
 * Multi-byte integers are big-endian (network order) unless the name says _le.
 */
#ifndef LIB_CURSOR_H
#define LIB_CURSOR_H

#include "lib/compiler.h"

struct cur {
	const uint8_t *buf; /* borrowed */
	size_t len;
	size_t pos;
	bool err;
};

struct wcur {
	uint8_t *buf; /* borrowed */
	size_t len;
	size_t pos;
	bool err;
};

static inline struct cur cur_make(const void *buf, size_t len)
{
	struct cur c = { (const uint8_t *)buf, len, 0, false };
	return c;
}

static inline struct wcur wcur_make(void *buf, size_t len)
{
	struct wcur w = { (uint8_t *)buf, len, 0, false };
	return w;
}

static inline size_t cur_left(const struct cur *c) { return c->len - c->pos; }
static inline bool cur_ok(const struct cur *c) { return !c->err; }
static inline bool cur_done(const struct cur *c) { return !c->err && c->pos == c->len; }
static inline size_t wcur_left(const struct wcur *w) { return w->len - w->pos; }
static inline bool wcur_ok(const struct wcur *w) { return !w->err; }

/* Ensure n bytes are readable; on failure set err. */
bool cur_need(struct cur *c, size_t n);

uint8_t cur_u8(struct cur *c);
uint16_t cur_be16(struct cur *c);
uint32_t cur_be24(struct cur *c);
uint32_t cur_be32(struct cur *c);
uint64_t cur_be64(struct cur *c);
uint16_t cur_le16(struct cur *c);
uint32_t cur_le32(struct cur *c);
uint64_t cur_le64(struct cur *c);
/* Copy n bytes out; on failure `out` is zero-filled. */
void cur_bytes(struct cur *c, void *out, size_t n);
/* Borrow n bytes in place (pointer into the buffer); NULL on failure. */
const uint8_t *cur_ptr(struct cur *c, size_t n);
void cur_skip(struct cur *c, size_t n);
/* Split off the next n bytes as a sub-cursor and advance past them. On failure the
 * returned cursor is empty and has err set. */
struct cur cur_sub(struct cur *c, size_t n);
/* Peek without advancing; 0 and err if not available. */
uint8_t cur_peek_u8(struct cur *c);

void wcur_u8(struct wcur *w, uint8_t v);
void wcur_be16(struct wcur *w, uint16_t v);
void wcur_be24(struct wcur *w, uint32_t v);
void wcur_be32(struct wcur *w, uint32_t v);
void wcur_be64(struct wcur *w, uint64_t v);
void wcur_le16(struct wcur *w, uint16_t v);
void wcur_le32(struct wcur *w, uint32_t v);
void wcur_le64(struct wcur *w, uint64_t v);
void wcur_bytes(struct wcur *w, const void *src, size_t n);
void wcur_zero(struct wcur *w, size_t n);
/* Reserve n bytes to fill later (e.g. a length field); NULL on failure. */
uint8_t *wcur_reserve(struct wcur *w, size_t n);

#endif
