/* SPDX-License-Identifier: MIT
 *
 * Reading the telemetry log back (store/tlog.h is the format): one partition at a time, its
 * segments in sequence order, each segment's records through the validating cursor. Used
 * by the offline reader (tools/disk: urmqtt-disk telemetry) and by the storage core's
 * online query. Reads through store/dev.h only: the whole segment at once into the
 * caller's buffer, and first the header of every slot of the partition to order them.
 * Read only: it never writes. Caller memory; single thread.
 */
#ifndef STORE_TLOG_SCAN_H
#define STORE_TLOG_SCAN_H

#include "lib/compiler.h"
#include "store/dev.h"
#include "store/tlog.h"

struct store_tlog_slot_ref {
	uint64_t seq;
	int64_t first_wall_ms;
	uint32_t slot;
};

struct store_tlog_scan {
	struct store_dev *dev;              /* linked */
	uint64_t lba;                       /* the region's first block */
	struct store_tlog_geom g;
	uint8_t *seg;                       /* linked: g.segment_bytes */
	struct store_tlog_slot_ref *order;  /* linked: g.segments entries */
	uint32_t n_order, next;             /* segments of the partition, the next to read */
	uint32_t partition;
	int64_t since_ms;                   /* skip segments that end before this (0: none) */
	bool in_segment;
	struct store_tlog_cursor cur;
	uint64_t segments_read, bad_headers, records;
	uint64_t torn_bytes;                /* bytes after the last valid record of a segment */
};

/* Read the region's header sector (sector bytes of scratch, borrowed) and fill *g. 0,
 * -E_NOENT (never used), -E_CORRUPT, -E_NOSYS, or a device error. */
MUST_CHECK int store_tlog_scan_geometry(struct store_dev *dev, uint64_t lba, uint64_t blocks, uint8_t *scratch,
					struct store_tlog_geom *g /* out */);
/* Start partition p: read every slot's header, keep the valid segments of p in sequence
 * order. seg: g->segment_bytes; order: g->segments entries. since_ms > 0 skips segments
 * whose successor starts before it (nothing in them is that new). 0 or a device error. */
MUST_CHECK int store_tlog_scan_start(struct store_tlog_scan *s, struct store_dev *dev, uint64_t lba,
				     const struct store_tlog_geom *g, uint32_t p, uint8_t *seg,
				     struct store_tlog_slot_ref *order, int64_t since_ms);
/* The next record of the partition (pointers into seg, valid until the next call): 1, 0
 * at the partition's end, or a device error. *seq gets its segment's sequence number. */
int store_tlog_scan_next(struct store_tlog_scan *s, struct store_tlog_rec *r /* out */, uint64_t *seq /* out */);

#endif
