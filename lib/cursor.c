/* SPDX-License-Identifier: MIT
 *
 * Bounds-checked cursor reader and writer (see lib/cursor.h for the invariants).
 * Owns no memory. Every read checks `len - pos` (never `pos + n`, which could wrap).
 */
#include "lib/cursor.h"
#include "lib/mem.h"

bool cur_need(struct cur *c, size_t n)
{
	if (c->err || n > c->len - c->pos) {
		c->err = true;
		return false;
	}
	return true;
}

static uint64_t cur_be_n(struct cur *c, unsigned n)
{
	uint64_t v = 0;
	if (!cur_need(c, n))
		return 0;
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | c->buf[c->pos + i];
	c->pos += n;
	return v;
}

static uint64_t cur_le_n(struct cur *c, unsigned n)
{
	uint64_t v = 0;
	if (!cur_need(c, n))
		return 0;
	for (unsigned i = n; i > 0; i--)
		v = v << 8 | c->buf[c->pos + i - 1];
	c->pos += n;
	return v;
}

uint8_t cur_u8(struct cur *c) { return (uint8_t)cur_be_n(c, 1); }
uint16_t cur_be16(struct cur *c) { return (uint16_t)cur_be_n(c, 2); }
uint32_t cur_be24(struct cur *c) { return (uint32_t)cur_be_n(c, 3); }
uint32_t cur_be32(struct cur *c) { return (uint32_t)cur_be_n(c, 4); }
uint64_t cur_be64(struct cur *c) { return cur_be_n(c, 8); }
uint16_t cur_le16(struct cur *c) { return (uint16_t)cur_le_n(c, 2); }
uint32_t cur_le32(struct cur *c) { return (uint32_t)cur_le_n(c, 4); }
uint64_t cur_le64(struct cur *c) { return cur_le_n(c, 8); }

uint8_t cur_peek_u8(struct cur *c)
{
	if (!cur_need(c, 1))
		return 0;
	return c->buf[c->pos];
}

void cur_bytes(struct cur *c, void *out, size_t n)
{
	if (!cur_need(c, n)) {
		if (n)
			memset(out, 0, n);
		return;
	}
	if (n)
		memcpy(out, c->buf + c->pos, n);
	c->pos += n;
}

const uint8_t *cur_ptr(struct cur *c, size_t n)
{
	const uint8_t *p;
	if (!cur_need(c, n))
		return NULL;
	p = c->buf + c->pos;
	c->pos += n;
	return p;
}

void cur_skip(struct cur *c, size_t n)
{
	if (cur_need(c, n))
		c->pos += n;
}

struct cur cur_sub(struct cur *c, size_t n)
{
	struct cur s = { NULL, 0, 0, true };
	if (!cur_need(c, n))
		return s;
	s = cur_make(c->buf + c->pos, n);
	c->pos += n;
	return s;
}

static bool wcur_need(struct wcur *w, size_t n)
{
	if (w->err || n > w->len - w->pos) {
		w->err = true;
		return false;
	}
	return true;
}

static void wcur_be_n(struct wcur *w, uint64_t v, unsigned n)
{
	if (!wcur_need(w, n))
		return;
	for (unsigned i = 0; i < n; i++)
		w->buf[w->pos + i] = (uint8_t)(v >> (8 * (n - 1 - i)));
	w->pos += n;
}

static void wcur_le_n(struct wcur *w, uint64_t v, unsigned n)
{
	if (!wcur_need(w, n))
		return;
	for (unsigned i = 0; i < n; i++)
		w->buf[w->pos + i] = (uint8_t)(v >> (8 * i));
	w->pos += n;
}

void wcur_u8(struct wcur *w, uint8_t v) { wcur_be_n(w, v, 1); }
void wcur_be16(struct wcur *w, uint16_t v) { wcur_be_n(w, v, 2); }
void wcur_be24(struct wcur *w, uint32_t v) { wcur_be_n(w, v & 0xffffffu, 3); }
void wcur_be32(struct wcur *w, uint32_t v) { wcur_be_n(w, v, 4); }
void wcur_be64(struct wcur *w, uint64_t v) { wcur_be_n(w, v, 8); }
void wcur_le16(struct wcur *w, uint16_t v) { wcur_le_n(w, v, 2); }
void wcur_le32(struct wcur *w, uint32_t v) { wcur_le_n(w, v, 4); }
void wcur_le64(struct wcur *w, uint64_t v) { wcur_le_n(w, v, 8); }

void wcur_bytes(struct wcur *w, const void *src, size_t n)
{
	if (!wcur_need(w, n))
		return;
	if (n)
		memcpy(w->buf + w->pos, src, n);
	w->pos += n;
}

void wcur_zero(struct wcur *w, size_t n)
{
	if (!wcur_need(w, n))
		return;
	if (n)
		memset(w->buf + w->pos, 0, n);
	w->pos += n;
}

uint8_t *wcur_reserve(struct wcur *w, size_t n)
{
	uint8_t *p;
	if (!wcur_need(w, n))
		return NULL;
	p = w->buf + w->pos;
	w->pos += n;
	return p;
}
