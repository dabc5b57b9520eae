/* SPDX-License-Identifier: MIT
 *
 * lib/msgq.h: the byte ring. Entries may wrap around the end of the buffer (header and
 * body are copied in at most two pieces each).
 */
#include "lib/msgq.h"

#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"

void msgq_init(struct msgq *q, uint8_t *buf, uint32_t cap)
{
	q->buf = buf;
	q->cap = cap;
	q->head = q->used = q->n = 0;
}

static void put(struct msgq *q, const void *p, uint32_t n)
{
	if (!n || !p)
		return;
	uint32_t at = (q->head + q->used) % q->cap;
	uint32_t first = MIN(n, q->cap - at);
	memcpy(q->buf + at, p, first);
	if (n > first)
		memcpy(q->buf, (const uint8_t *)p + first, n - first);
	q->used += n;
}

static void get(const struct msgq *q, uint32_t off, void *p, uint32_t n)
{
	uint32_t at = (q->head + off) % q->cap;
	uint32_t first = MIN(n, q->cap - at);
	memcpy(p, q->buf + at, first);
	if (n > first)
		memcpy((uint8_t *)p + first, q->buf, n - first);
}

int msgq_put(struct msgq *q, uint16_t kind, const void *a, uint32_t an, const void *b, uint32_t bn)
{
	uint64_t need = (uint64_t)MSGQ_HDR + an + bn;
	if (need > q->cap - q->used)
		return -E_NOMEM;
	uint8_t hdr[MSGQ_HDR];
	st_le16(hdr, kind);
	st_le16(hdr + 2, 0);
	st_le32(hdr + 4, an + bn);
	put(q, hdr, MSGQ_HDR);
	if (an)
		put(q, a, an);
	if (bn)
		put(q, b, bn);
	q->n++;
	return 0;
}

int msgq_front(const struct msgq *q, uint16_t *kind, void *out, uint32_t out_len, uint32_t *len)
{
	if (!q->n)
		return -E_AGAIN;
	uint8_t hdr[MSGQ_HDR];
	get(q, 0, hdr, MSGQ_HDR);
	*kind = ld_le16(hdr);
	*len = ld_le32(hdr + 4);
	if (*len > out_len)
		return -E_OVERFLOW;
	get(q, MSGQ_HDR, out, *len);
	return 0;
}

void msgq_pop(struct msgq *q)
{
	uint8_t hdr[MSGQ_HDR];
	get(q, 0, hdr, MSGQ_HDR);
	uint32_t size = msgq_entry_size(ld_le32(hdr + 4));
	q->head = (q->head + size) % q->cap;
	q->used -= size;
	q->n--;
	if (!q->used)
		q->head = 0;
}

int msgq_check(const struct msgq *q)
{
	if (q->used > q->cap || (q->cap && q->head >= q->cap) || (q->used == 0) != (q->n == 0))
		return -E_CORRUPT; /* 1, 2 */
	uint64_t off = 0;
	for (uint32_t i = 0; i < q->n; i++) {
		if (off + MSGQ_HDR > q->used)
			return -E_CORRUPT; /* 3 */
		uint8_t hdr[MSGQ_HDR];
		get(q, (uint32_t)off, hdr, MSGQ_HDR);
		off += msgq_entry_size(ld_le32(hdr + 4));
	}
	return off == q->used ? 0 : -E_CORRUPT; /* 3 */
}
