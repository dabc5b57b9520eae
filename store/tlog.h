/* SPDX-License-Identifier: MIT
 *
 * The telemetry log (store/): accepted PUBLISHes whose topic matches storage.telemetry_topics,
 * kept beside the database in the TELEMETRY region of the data disk, one partition per data
 * core (docs/DISK-FORMAT.md, "Telemetry region"). Two halves:
 *  - the codec (pure functions over bytes, no I/O): the region header, the partition hints,
 *    the segment header and the records, and a cursor that walks a segment's records and
 *    never yields one whose CRC does not match. Used by the writer's recovery, the offline
 *    reader (tools/disk), the online query and the fuzzer;
 *  - the writer (storage core only): appends records into per-partition buffers, writes them
 *    out on request (no flush: the caller's commit flushes the device once for the database
 *    and the log), recovers at open, and applies retention by age.
 *
 * Format in one paragraph (the bytes are in DISK-FORMAT.md section 8). The region starts with
 * a header sector (magic, version, sector, partitions P, segment bytes S, segments per
 * partition N, CRC-32C) and one hint sector per partition (the slot and sequence of its
 * newest segment started or announced), then P partitions of N slots of S bytes. A
 * partition is a ring: its segments take slots in turn, each with a sequence number above
 * the last (one above, or more after a crash: sequences never repeat). A segment starts
 * with its header (magic, partition, slot, sequence, first wall-clock time, CRC-32C) and
 * holds records, never split across segments: [u32 body length][u32 CRC-32C of (segment
 * sequence, little endian u64) then body][body][zero padding to 8]. The salt makes a record
 * left from an earlier pass of the ring fail validation. A write-out never rewrites a sector
 * that holds records written out before: it ends by padding to the next sector boundary with
 * a skip marker (a body length of 0 whose CRC field is CRC-32C of (sequence, the marker's
 * u32 offset): "skip to the next sector"; a 0 at a sector's start, or a marker that does
 * not validate, means the end of the segment's data).
 *
 * Units: times are wall-clock milliseconds since 1970 (0 unknown) and monotonic nanoseconds.
 * Single core; never from an interrupt handler; never allocates (caller memory).
 */
#ifndef STORE_TLOG_H
#define STORE_TLOG_H

#include "lib/compiler.h"
#include "store/dev.h"

#define STORE_TLOG_VERSION 1u
#define STORE_TLOG_MAX_PARTITIONS 64u
#define STORE_TLOG_SEG_HDR 64u       /* bytes of a segment header */
#define STORE_TLOG_REC_HDR 8u        /* u32 length + u32 CRC */
#define STORE_TLOG_BODY_FIXED 28u    /* the body's fixed fields (below) */
#define STORE_TLOG_ID_MAX 255u
#define STORE_TLOG_HDR_BYTES 64u     /* the region header's encoded bytes (rest of its sector 0) */
#define STORE_TLOG_HINT_BYTES 32u    /* a hint's encoded bytes (rest of its sector 0) */

/* One record's fields (pointers borrowed: into the caller's bytes or the decoded segment). */
struct store_tlog_rec {
	int64_t wall_ms;        /* receive time, wall clock (0 unknown) */
	uint64_t mono_ns;       /* receive time, the accepting core's monotonic clock */
	uint8_t qos;            /* 0..2 */
	uint8_t id_kind;        /* 0 device, 1 service */
	const uint8_t *id;      /* the publisher's certificate identity */
	uint8_t id_len;         /* 1..255 */
	const uint8_t *topic;
	uint16_t topic_len;     /* 1..65535 */
	const uint8_t *payload;
	uint32_t payload_len;
};
/* Body: wall_ms i64, mono_ns u64, qos u8, id_kind u8, id_len u8, 0 u8, topic_len u16,
 * 0 u16, payload_len u32 (= 28 bytes), then id, topic, payload. Little endian. */

/* Bytes a record takes in a segment (header, body, padding to 8). */
size_t store_tlog_rec_size(const struct store_tlog_rec *r);
/* Encode r (validated: qos <= 2, id_kind <= 1, id 1..255 bytes, topic 1..65535 bytes, id and
 * topic not NULL, payload not NULL unless empty, body <= UINT32_MAX) for a segment of
 * sequence seq into out (borrowed). Returns the bytes written (store_tlog_rec_size, padding
 * zeroed), or 0 when r breaks a rule or out is too small. */
size_t store_tlog_rec_encode(const struct store_tlog_rec *r, uint64_t seq, uint8_t *out, size_t cap);

/* ---- region header, hints, segment headers ------------------------------------------------- */
struct store_tlog_geom {
	uint32_t partitions;     /* P, 1..STORE_TLOG_MAX_PARTITIONS */
	uint32_t segment_bytes;  /* S: a multiple of the sector, >= 4096, <= 16 MiB */
	uint32_t segments;       /* N per partition, 2..INT32_MAX (the plan makes >= 4) */
	uint32_t sector;         /* write unit the format pads to: max(logical, physical block)
				  * of the device that formatted it (kept in the header) */
	uint64_t region_bytes;   /* the TELEMETRY region's size */
};
/* The geometry for a region of region_bytes with sector-sized blocks: P partitions of
 * S-byte segments (both wanted; S is lowered, down to 64 KiB or the wanted S if smaller,
 * in whole sectors, to the largest that gives every partition at least 4 segments). 0;
 * -E_INVAL (sector not a power of two in 512..65536, P not 1..64, S not a sector multiple
 * in 4096..16 MiB); -E_RANGE when the region cannot hold P x 4 segments of min(S, 64 KiB). */
MUST_CHECK int store_tlog_plan(uint64_t region_bytes, uint32_t sector, uint32_t partitions, uint32_t segment_bytes,
			       struct store_tlog_geom *out /* out */);
/* Byte offset of the header area's end (header block + P hint blocks, sector-rounded) and of
 * a slot's segment within the region. */
uint64_t store_tlog_data_off(const struct store_tlog_geom *g);
uint64_t store_tlog_slot_off(const struct store_tlog_geom *g, uint32_t partition, uint32_t slot);

/* The region header (one sector). encode: out gets g->sector bytes. decode (in: len bytes,
 * borrowed; the whole sector as read): 0, -E_NOENT (all zero: a region never used),
 * -E_CORRUPT (magic, CRC or a field wrong, or a geometry that does not fit region_bytes),
 * -E_NOSYS (another version, checked before the CRC; or a header sector that is not a
 * multiple of sector, the caller's device's: it cannot write that unit), -E_INVAL (sector
 * not a power of two in 512..65536). region_bytes is the caller's, the rest (the header's
 * sector included) comes from the disk. */
void store_tlog_hdr_encode(const struct store_tlog_geom *g, uint8_t *out);
MUST_CHECK int store_tlog_hdr_decode(const uint8_t *in, size_t len, uint64_t region_bytes, uint32_t sector,
				     struct store_tlog_geom *out /* out */);

/* A partition's hint (one sector): the newest segment started when it was written, or the
 * next one announced (at format and at every open: slot's header may then be missing or
 * older). No segment of the partition has a higher sequence, except seq + 1 in the next
 * slot while the hint's write-out is not yet flushed. */
struct store_tlog_hint {
	uint32_t partition, slot;
	uint64_t seq;            /* 1..INT64_MAX */
};
/* out gets sector bytes (STORE_TLOG_HINT_BYTES of hint, then zeros). */
void store_tlog_hint_encode(const struct store_tlog_hint *h, uint8_t *out, size_t sector);
/* in: len bytes (borrowed). 0, -E_NOENT (all zero), -E_CORRUPT (magic, CRC, reserved field,
 * partition >= 64, sequence 0 or above INT64_MAX, or fewer than STORE_TLOG_HINT_BYTES). The
 * caller checks partition and slot against the geometry. */
MUST_CHECK int store_tlog_hint_decode(const uint8_t *in, size_t len, struct store_tlog_hint *out /* out */);

struct store_tlog_seg {
	uint32_t partition, slot;
	uint64_t seq;            /* 1..INT64_MAX */
	int64_t first_wall_ms;   /* the segment's first record (0 when it had none yet) */
};
void store_tlog_seg_encode(const struct store_tlog_seg *s, uint8_t *out /* STORE_TLOG_SEG_HDR bytes */);
/* in: len bytes (borrowed, at least the header's). 0, -E_NOENT (the header's bytes all zero),
 * -E_CORRUPT (as for hints). The caller checks partition and slot against where it read. */
MUST_CHECK int store_tlog_seg_decode(const uint8_t *in, size_t len, struct store_tlog_seg *out /* out */);

/* ---- reading a segment ------------------------------------------------------------------------- */
struct store_tlog_cursor {
	const uint8_t *seg;      /* the whole segment (borrowed) */
	size_t len;              /* its bytes (the geometry's segment_bytes, or fewer when cut) */
	uint32_t sector;
	uint64_t seq;            /* the segment's, from its header */
	size_t off;              /* the next record; once done, where the segment's data ends */
	uint64_t records, skipped_bytes; /* yielded; padding skipped by markers */
	bool done;               /* the end was reached: next keeps returning 0 */
};
/* Start after the segment header (seg: its first bytes decode with store_tlog_seg_decode;
 * borrowed, len bytes, until the cursor is no longer used). 0, -E_CORRUPT (no valid header),
 * -E_INVAL (NULL, or sector not a power of two in 512..65536). */
MUST_CHECK int store_tlog_cursor_init(struct store_tlog_cursor *c, const uint8_t *seg, size_t len, uint32_t sector);
/* The next record: 1 and *r (pointers into the segment), 0 at the end of the segment's data
 * (a zero length at a sector start, the segment's end, a skip marker whose CRC does not
 * match, or the first record that does not validate: length, salted CRC, or a body field.
 * A torn or stale tail ends the data, and skipped_bytes counts nothing after it). So what
 * it yields is always a prefix of what was written to the segment. Bounded: len / 8 steps. */
int store_tlog_cursor_next(struct store_tlog_cursor *c, struct store_tlog_rec *r /* out */);

/* ---- the writer (storage core) --------------------------------------------------------------- */
struct store_tlog_config {
	struct store_dev *dev;        /* linked */
	uint64_t lba, blocks;         /* the TELEMETRY region (absolute LBA, length in blocks) */
	uint32_t partitions;          /* wanted for a region never used (the disk's header wins) */
	uint32_t segment_bytes;       /* wanted likewise */
	uint32_t flush_bytes;         /* a partition's buffer: pending bytes at most (64 KiB ..
				       * 64 MiB; the writer uses min(this, S - 64)) */
	uint64_t retention_s;         /* 0: by size only (storage.telemetry_retention_days in seconds) */
	uint8_t *io;                  /* linked: segment_bytes of scratch for recovery, hints,
				       * and retention's header reads */
	size_t io_len;
};

struct store_tlog_stats {
	uint64_t appended, written, bytes_written, write_outs, segments_started;
	uint64_t dropped_too_big, dropped_full, expired_segments, discarded_segments;
	uint64_t dropped_invalid;     /* appends refused: a rule broken (qos, lengths...) */
	uint64_t dropped_io, write_errors; /* records lost to failed write-outs, and those */
	uint64_t start_flushes;       /* flushes the writer issued itself (invariant 4) */
	uint64_t recovered_records, cut_bytes;  /* at open: kept, and the newest segments' tail
						 * left unused after their data (torn or not) */
	uint64_t hints_rebuilt;       /* at open: damaged hints, found again by a scan */
};

struct store_tlog;
/* Bytes of caller memory for cfg (8-aligned): the writer and cfg->partitions buffers of
 * flush_bytes + 64 + two sectors (the device's), or 0 when cfg is invalid. */
size_t store_tlog_mem_size(const struct store_tlog_config *cfg);
/* Open the region: a region never used gets its header and hints announcing slot 0 written
 * (hints first, no flush); otherwise every partition's newest segment is found from its hint
 * (reading the hint and two segment headers), read once to count the records that validate
 * (recovered_records; what follows them is cut: never written over), and writing continues
 * in a new segment, whose slot and sequence the partition's hint announces at once (one
 * sector written per partition). Reads a bounded amount independent of the region's size;
 * only a damaged hint costs a scan of that partition's N segment headers (hints_rebuilt).
 * mem: len bytes, 8-aligned, linked (the writer lives in it); cfg borrowed (copied; dev and
 * io linked). 0, -E_INVAL (cfg, mem), -E_RANGE (region too small), -E_CORRUPT / -E_NOSYS
 * (header), -E_NOMEM (the region on disk has a larger sector or segment than len or io_len
 * allow: size them with its geometry), -E_CORRUPT also when a partition's hint or headers
 * claim sequences of 2^62 or more, or a device error. now_wall_ms stamps nothing on disk;
 * it seeds the sequence numbers of a region formatted now (ms x 1024, so segments left by
 * an earlier format of the same disk carry lower sequences, unless the clock went back)
 * and of a partition rebuilt by a scan that found nothing. */
MUST_CHECK int store_tlog_open(struct store_tlog **out /* out */, void *mem, size_t len,
			       const struct store_tlog_config *cfg, int64_t now_wall_ms);
const struct store_tlog_geom *store_tlog_geometry(const struct store_tlog *t);
/* Append one record (copied; r borrowed) to partition p's buffer (p taken modulo the
 * partitions that have one: min(the disk's, cfg's)). 0; -E_AGAIN: the buffer is full
 * (dropped_full): write out, then append again; -E_INVAL: the record breaks a rule
 * (dropped_invalid) or can never fit a segment or a buffer (dropped_too_big). */
MUST_CHECK int store_tlog_append(struct store_tlog *t, uint32_t p, const struct store_tlog_rec *r);
/* Bytes appended and not yet written out, over every partition. */
size_t store_tlog_pending(const struct store_tlog *t);
/* Write every pending byte to the disk (segment headers and hints included), padded to the
 * sector; no FLUSH for the data (the caller's commit makes it durable). It flushes once
 * itself only when it must start a segment while the hint of the last start (or of open)
 * was not followed by any flush yet (start_flushes): recovery relies on at most one segment
 * newer than the durable hint. 0 or a device error (then what was pending in every
 * partition is lost to the writer, counted dropped_io: the failing partition continues in
 * a new segment, the others where they were). */
MUST_CHECK int store_tlog_write_out(struct store_tlog *t);
/* Retention by age, a bounded step: look at (at most) one oldest segment per partition
 * (reading at most two segment headers each, none while the answer is known) and discard
 * it when its successor's first record is older than retention_s (or skip it when the
 * device cannot discard: -E_NOSYS). Never the newest segment, nor one a pending write-out
 * starts. Returns segments handled (expired). */
uint32_t store_tlog_retain(struct store_tlog *t, int64_t now_wall_ms);
const struct store_tlog_stats *store_tlog_stats(const struct store_tlog *t);
/* The invariants of tlog.c's head: 0 or -E_CORRUPT (a bug). */
MUST_CHECK int store_tlog_check(const struct store_tlog *t);

#endif
