/* SPDX-License-Identifier: MIT
 *
 * store/link.h. Records are encoded once into a scratch buffer (max_record bytes), then
 * sent whole or cut into a HEAD and MORE parts; every part goes straight to the mesh while
 * nothing waits, else behind what waits (lib/msgq), so the storage core sees them in order.
 * Design note. Invariants (store_link_check):
 *  1. While the backlog is not empty every message goes into it (order is kept).
 *  2. Records use at most backlog_bytes - backlog_bytes / 4 of it; barriers the rest too,
 *     so a barrier is never refused behind records (it only asks for an answer).
 *  3. A record is accepted whole or not at all: the room for all its parts is checked
 *     before the first one is sent.
 */
#include "store/link.h"

#include "lib/align.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "lib/msgq.h"

struct store_link {
	struct store_link_config cfg;
	struct store_link_upcalls up;
	struct msgq q;
	uint32_t data_cap;      /* invariant 2 */
	uint8_t *enc;           /* max_record bytes: the record being sent */
	uint8_t *part;          /* payload_max bytes: one message being built */
	struct store_asm in;    /* restored records cut into parts */
	bool lagging;
	struct store_link_stats st;
};

static bool cfg_ok(const struct store_link_config *c)
{
	return c && c->send && c->payload_max >= 64u && c->payload_max <= (1u << 20) &&
	       c->max_record >= STORE_REC_HDR + 255u && c->max_record <= (1u << 28) &&
	       c->backlog_bytes >= 4096u && c->lag_bytes < c->backlog_bytes / 2u;
}

size_t store_link_mem_size(const struct store_link_config *cfg)
{
	if (!cfg_ok(cfg))
		return 0;
	return align8(sizeof(struct store_link)) + align8(cfg->backlog_bytes) + 2u * align8(cfg->max_record) +
	       align8(cfg->payload_max);
}

int store_link_init(struct store_link **out, void *mem, size_t len, const struct store_link_config *cfg,
		    const struct store_link_upcalls *up)
{
	*out = NULL;
	size_t need = store_link_mem_size(cfg);
	if (!need || !mem || len < need || ((uintptr_t)mem & 7u) || !up || !up->done || !up->restore_begin ||
	    !up->restored || !up->restore_end || !up->lag || !up->off)
		return -E_INVAL;
	uint8_t *p = mem;
	memset(p, 0, need);
	struct store_link *l = (struct store_link *)(void *)p;
	p += align8(sizeof *l);
	l->cfg = *cfg;
	l->up = *up;
	msgq_init(&l->q, p, cfg->backlog_bytes);
	p += align8(cfg->backlog_bytes);
	l->data_cap = cfg->backlog_bytes - cfg->backlog_bytes / 4u;
	l->enc = p;
	p += align8(cfg->max_record);
	l->in.buf = p;
	l->in.cap = cfg->max_record;
	p += align8(cfg->max_record);
	l->part = p;
	*out = l;
	return 0;
}

/* One message: to the mesh when nothing waits, else into the backlog (invariant 1). The
 * caller checked the room. */
static int emit(struct store_link *l, uint16_t kind, const uint8_t *p, uint32_t n)
{
	if (msgq_empty(&l->q) && l->cfg.send(l->cfg.ctx, kind, p, n) == 0)
		return 0;
	l->st.backlogged++;
	return msgq_put(&l->q, kind, p, n, NULL, 0);
}

/* Backlog bytes a record of n encoded bytes needs in the worst case (all of it waits). */
static uint64_t record_room(const struct store_link *l, size_t n)
{
	if (n <= l->cfg.payload_max)
		return msgq_entry_size((uint32_t)n);
	uint64_t first = l->cfg.payload_max - STORE_PART_HDR;
	uint64_t rest = n - first;
	uint64_t more = (rest + l->cfg.payload_max - 1u) / l->cfg.payload_max;
	return (uint64_t)n + STORE_PART_HDR + (1u + more) * MSGQ_HDR;
}

bool store_link_room(const struct store_link *l, size_t bytes)
{
	return l->q.used + record_room(l, bytes + STORE_REC_HDR) <= l->data_cap;
}

bool store_link_congested(const struct store_link *l)
{
	return l->lagging || l->q.used > l->cfg.lag_bytes;
}

int store_link_record(struct store_link *l, const struct store_rec *r)
{
	size_t n = store_rec_size(r);
	if (n > l->cfg.max_record)
		return -E_INVAL;
	int err = store_rec_encode(r, l->enc, l->cfg.max_record);
	if (err)
		return err;
	if (l->q.used + record_room(l, n) > l->data_cap) { /* invariants 2, 3 */
		l->st.refused++;
		return -E_NOMEM;
	}
	l->st.records++;
	l->st.bytes += n;
	if (n <= l->cfg.payload_max)
		return emit(l, STORE_K_REC, l->enc, (uint32_t)n);
	uint32_t first = l->cfg.payload_max - STORE_PART_HDR;
	st_le32(l->part, (uint32_t)n);
	memcpy(l->part + STORE_PART_HDR, l->enc, first);
	err = emit(l, STORE_K_REC_HEAD, l->part, l->cfg.payload_max);
	for (size_t off = first; !err && off < n; off += l->cfg.payload_max) {
		uint32_t k = (uint32_t)MIN((size_t)l->cfg.payload_max, n - off);
		err = emit(l, STORE_K_REC_MORE, l->enc + off, k);
		l->st.parts++;
	}
	return err; /* not reached with an error: the room was checked (invariant 3) */
}

int store_link_barrier(struct store_link *l, uint32_t origin, uint32_t ticket)
{
	uint8_t b[8];
	st_le32(b, origin);
	st_le32(b + 4, ticket);
	if (!msgq_empty(&l->q) && l->q.used + msgq_entry_size(sizeof b) > l->q.cap) {
		l->st.refused++;
		return -E_NOMEM;
	}
	l->st.barriers++;
	return emit(l, STORE_K_BARRIER, b, sizeof b);
}

int store_link_control(struct store_link *l, uint16_t kind, const void *data, uint32_t len)
{
	if (len > l->cfg.payload_max ||
	    (!msgq_empty(&l->q) && l->q.used + msgq_entry_size(len) > l->q.cap)) {
		l->st.refused++;
		return -E_NOMEM;
	}
	return emit(l, kind, data, len);
}

uint32_t store_link_poll(struct store_link *l)
{
	uint16_t kind;
	uint32_t len;
	while (msgq_front(&l->q, &kind, l->part, l->cfg.payload_max, &len) == 0) {
		if (l->cfg.send(l->cfg.ctx, kind, l->part, len) != 0)
			break;
		msgq_pop(&l->q);
	}
	return l->q.n;
}

static void recv_done(struct store_link *l, const uint8_t *d, uint32_t len)
{
	if (!len || len % STORE_DONE_ENT) {
		l->st.bad_in++;
		return;
	}
	for (uint32_t i = 0; i < len; i += STORE_DONE_ENT) {
		uint32_t ok = ld_le32(d + i + 4);
		if (ok > 1u) {
			l->st.bad_in++;
			continue;
		}
		l->st.done_in++;
		l->up.done(l->up.ctx, ld_le32(d + i), ok == 1u);
	}
}

void store_link_recv(struct store_link *l, uint16_t kind, const uint8_t *d, uint32_t len)
{
	const uint8_t *rec;
	uint32_t rec_len;
	struct store_rec r;
	switch (kind) {
	case STORE_K_DONE:
		recv_done(l, d, len);
		return;
	case STORE_K_RESTORE_BEGIN:
		if (len != 8u) {
			l->st.bad_in++;
			return;
		}
		l->up.restore_begin(l->up.ctx, ld_le64(d));
		return;
	case STORE_K_RESTORED:
	case STORE_K_RESTORED_HEAD:
	case STORE_K_RESTORED_MORE: {
		int err = store_asm_feed(&l->in, kind, d, len, STORE_K_RESTORED, &rec, &rec_len);
		if (err == -E_NEED_MORE)
			return;
		if (err || store_rec_decode(rec, rec_len, &r) != 0) {
			l->st.bad_in++;
			return;
		}
		l->st.restored_in++;
		l->up.restored(l->up.ctx, &r);
		return;
	}
	case STORE_K_RESTORE_END:
		if (len != 8u) {
			l->st.bad_in++;
			return;
		}
		l->up.restore_end(l->up.ctx, ld_le64(d));
		return;
	case STORE_K_LAG:
		if (len != 4u || ld_le32(d) > 1u) {
			l->st.bad_in++;
			return;
		}
		l->lagging = ld_le32(d) == 1u;
		l->up.lag(l->up.ctx, l->lagging);
		return;
	case STORE_K_OFF:
		if (len) {
			l->st.bad_in++;
			return;
		}
		l->up.off(l->up.ctx);
		return;
	case STORE_K_TLQ_ROWS:
	case STORE_K_TLQ_END:
		if (!l->up.tlq || len < 4u) {
			l->st.bad_in++;
			return;
		}
		l->up.tlq(l->up.ctx, kind, d, len);
		return;
	default:
		l->st.bad_in++;
		return;
	}
}

void store_link_stats(const struct store_link *l, struct store_link_stats *out)
{
	*out = l->st;
}

uint32_t store_link_backlog(const struct store_link *l)
{
	return l->q.used;
}

int store_link_check(const struct store_link *l)
{
	if (msgq_check(&l->q) != 0 || l->in.total > l->in.cap || (l->in.total && l->in.have >= l->in.total) ||
	    (!l->in.total && l->in.have))
		return -E_CORRUPT;
	return 0;
}
