/* SPDX-License-Identifier: MIT
 *
 * store/tlog_scan.h. Design note: a scan of partition p is
 *   start: every slot's first sector read and decoded; the segments of p sorted by sequence
 *          (insertion sort: a partition has few segments);
 *   next:  the current segment's cursor yields records; at its end the next segment in the
 *          order is read whole and a cursor started on it; after the last, 0.
 * Invariants: next <= n_order <= g.segments; in_segment only while cur walks seg, which
 * then holds order[next - 1]'s segment. Nothing is ever written.
 */
#include "store/tlog_scan.h"

#include "lib/err.h"
#include "lib/mem.h"

static int read_bytes(struct store_dev *d, uint64_t lba, uint64_t off, uint32_t len, uint8_t *out)
{
	uint32_t bs = store_dev_block_size(d);
	if (off % bs || len % bs)
		return -E_INVAL;
	return store_dev_read(d, lba + off / bs, len / bs, out);
}

int store_tlog_scan_geometry(struct store_dev *dev, uint64_t lba, uint64_t blocks, uint8_t *scratch,
			     struct store_tlog_geom *g)
{
	/* Reading needs only the logical block: the disk's own sector (in the header) matters
	 * to a writer, so a region formatted with smaller sectors than this device's physical
	 * ones is still read. */
	uint32_t bs = store_dev_block_size(dev);
	if (!blocks)
		return -E_INVAL;
	int err = read_bytes(dev, lba, 0, bs, scratch);
	if (err)
		return err;
	return store_tlog_hdr_decode(scratch, bs, blocks * bs, bs, g);
}

int store_tlog_scan_start(struct store_tlog_scan *s, struct store_dev *dev, uint64_t lba,
			  const struct store_tlog_geom *g, uint32_t p, uint8_t *seg, struct store_tlog_slot_ref *order,
			  int64_t since_ms)
{
	memset(s, 0, sizeof *s);
	s->dev = dev;
	s->lba = lba;
	s->g = *g;
	s->seg = seg;
	s->order = order;
	s->partition = p;
	s->since_ms = since_ms;
	if (p >= g->partitions)
		return -E_INVAL;
	for (uint32_t slot = 0; slot < g->segments; slot++) {
		int err = read_bytes(dev, lba, store_tlog_slot_off(g, p, slot), g->sector, seg);
		if (err)
			return err;
		struct store_tlog_seg h;
		int rc = store_tlog_seg_decode(seg, g->sector, &h);
		if (rc == -E_NOENT)
			continue; /* never written, or discarded */
		if (rc || h.partition != p || h.slot != slot) {
			s->bad_headers++;
			continue;
		}
		uint32_t i = s->n_order;
		while (i > 0 && order[i - 1].seq > h.seq) {
			order[i] = order[i - 1];
			i--;
		}
		order[i] = (struct store_tlog_slot_ref){ h.seq, h.first_wall_ms, slot };
		s->n_order++;
	}
	/* Older segments whose successor starts before since_ms hold nothing that new. */
	while (since_ms > 0 && s->next + 1 < s->n_order && s->order[s->next + 1].first_wall_ms > 0 &&
	       s->order[s->next + 1].first_wall_ms < since_ms)
		s->next++;
	return 0;
}

int store_tlog_scan_next(struct store_tlog_scan *s, struct store_tlog_rec *r, uint64_t *seq)
{
	for (;;) {
		if (s->in_segment) {
			if (store_tlog_cursor_next(&s->cur, r) == 1) {
				s->records++;
				*seq = s->cur.seq;
				return 1;
			}
			s->torn_bytes += s->cur.skipped_bytes;
			s->in_segment = false;
		}
		if (s->next >= s->n_order)
			return 0;
		const struct store_tlog_slot_ref *o = &s->order[s->next++];
		int err = read_bytes(s->dev, s->lba, store_tlog_slot_off(&s->g, s->partition, o->slot), s->g.segment_bytes,
				     s->seg);
		if (err)
			return err;
		s->segments_read++;
		if (store_tlog_cursor_init(&s->cur, s->seg, s->g.segment_bytes, s->g.sector) != 0) {
			s->bad_headers++; /* rewritten since the start: skip it */
			continue;
		}
		s->in_segment = true;
	}
}
