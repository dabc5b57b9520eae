/* SPDX-License-Identifier: MIT
 *
 * store/tlog.h: the telemetry log. Owns the codec of the TELEMETRY region (region header,
 * partition hints, segment headers, records and the cursor over a segment's records; the
 * bytes are in docs/DISK-FORMAT.md section 8) and the writer the storage core drives:
 * per-partition buffers, write-outs, recovery at open and retention by age. Layer: store/,
 * portable and freestanding; disk I/O only through store/dev.h, every decode through
 * lib/cursor.h. It never allocates (the caller's memory), never trusts a disk byte, and
 * never rewrites a sector that holds records written out before.
 *
 * Design note. Each partition's buffer holds at most two runs, in disk order:
 *   run A  continues the open segment `cur` at cur_off (never holds a segment header);
 *   run B  starts the next segment cur + 1 at its offset 0 (its header first).
 * An append goes to A while the record fits the rest of cur, else to B (closing A with a
 * skip marker to its sector's end). A write-out pads the last run to a sector boundary,
 * writes A, then B (after the hint rule of invariant 4), then B's hint; cur becomes B.
 *
 *   open ----------> cur full (virtual: cur_off = S) --append--> B pending
 *   B pending -------write_out--> cur = B, open --append--> A (and B on a roll) pending
 *   A/B pending -----write_out--> cur open, or full (cur_off = S: the next append rolls)
 *   any device error in a write-out: every buffer emptied (counted dropped_io) and the
 *   failing partition's segment abandoned (cur_off = S; a B that failed becomes cur).
 *
 * Invariants (store_tlog_check):
 *  1. The next segment is cur + 1 (slot modulo N, sequence + 1). cur_off is a sector
 *     multiple <= S; S means full, abandoned or virtual (after open).
 *  2. Run A starts at cur_off and cur_off + a_len <= S. b_len != 0 => A is closed (ends on
 *     a sector boundary or at S) and b_len >= the segment header. pending <= pending_cap
 *     <= S - header, so the records of one buffer never need a third segment.
 *  3. A write-out writes whole sectors at cur_off or later in cur, or a new segment: never a
 *     sector holding records written out before (every run ends padded to a sector).
 *  4. Before any byte of segment q lands in slot y, the hint (y - 1, q - 1) or (y, q) was
 *     written and a flush completed after it (the writer flushes itself only when the
 *     caller did not flush since). So a crash leaves at most one segment newer than the
 *     durable hint, in the slot after it: recovery reads the hint's slot and the next.
 *  5. Sequences never repeat in a partition: recovery continues at two above the highest
 *     sequence it saw (the one above may have been started and lost its header), and a
 *     failed write abandons the segment it attempted. A record left in a slot from any
 *     earlier segment carries another salt and never validates.
 *  6. Retention never touches the newest segment, nor the slot a pending run B starts;
 *     it discards slot k only when k's successor's first record is older than retention.
 *  7. Partitions at or above n_active have no buffer and nothing pending.
 */
#include "store/tlog.h"

#include "lib/align.h"
#include "lib/bytes.h"
#include "lib/crc32c.h"
#include "lib/cursor.h"
#include "lib/err.h"
#include "lib/mem.h"

#define HDR_MAGIC "URMQTLRH"     /* region header */
#define HINT_MAGIC "URMQTLHI"
#define SEG_MAGIC "URMQTLSG"
#define HDR_BYTES STORE_TLOG_HDR_BYTES   /* region header: CRC in its last 4 bytes */
#define HDR_OFF_CRC 60u
#define HINT_BYTES STORE_TLOG_HINT_BYTES
#define HINT_OFF_CRC 28u
#define SEG_OFF_CRC 60u
#define SECTOR_MIN 512u
#define SECTOR_MAX 65536u
#define SEG_MIN 4096u
#define SEG_MAX (16u << 20)
#define SEG_PLAN_MIN (64u << 10) /* the plan lowers S down to this */
#define PLAN_MIN_SEGMENTS 4u
#define FLUSH_MIN (64u << 10)
#define FLUSH_MAX (64u << 20)
#define SEQ_MAX (UINT64_C(1) << 62)  /* open refuses to continue above this */

STATIC_ASSERT(STORE_TLOG_SEG_HDR == 64u && SEG_OFF_CRC + 4u == STORE_TLOG_SEG_HDR, "segment header layout");
STATIC_ASSERT(STORE_TLOG_REC_HDR == 8u && STORE_TLOG_BODY_FIXED == 28u, "record layout");
STATIC_ASSERT(HINT_BYTES <= SECTOR_MIN && HDR_BYTES <= SECTOR_MIN, "headers fit one 512-byte piece");

struct tlog_part {
	uint8_t *buf;              /* NULL: idle (invariant 7) */
	uint32_t a_len, b_len;     /* run A, run B: bytes in buf (B after A) */
	uint32_t pending, n_pending; /* record bytes and records in the runs */
	uint32_t cur_slot, cur_off;
	uint64_t cur_seq;
	int64_t b_first_wall;      /* run B's first record */
	bool have_newest;          /* a segment with a header on disk, the newest */
	uint32_t newest_slot;
	uint64_t newest_seq;
	int64_t newest_first_wall;
	uint32_t hint_slot;        /* the last hint write that completed */
	uint64_t hint_seq;
	bool hint_unflushed;       /* and no flush was seen since */
	uint64_t hint_flush_mark;  /* the device's flush count at that write */
	uint32_t ret_slot;         /* retention's next candidate (the oldest not yet handled) */
	bool ret_known;            /* ret_succ_wall read for ret_slot */
	int64_t ret_succ_wall;     /* its successor's first record */
};

struct store_tlog {
	struct store_tlog_config cfg;
	struct store_tlog_geom g;
	uint32_t lb;               /* the device's logical block */
	uint32_t n_active;         /* partitions with a buffer: min(disk's, cfg's) */
	uint32_t pending_cap;      /* record bytes a buffer holds: min(flush_bytes, S - header) */
	uint32_t buf_cap;
	struct store_tlog_stats st;
	struct tlog_part part[STORE_TLOG_MAX_PARTITIONS];
};

/* ---- small helpers ---- */

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static bool sector_ok(uint32_t s)
{
	return s >= SECTOR_MIN && s <= SECTOR_MAX && (s & (s - 1u)) == 0;
}

/* CRC-32C of (seq as u64 LE) then n bytes: the salt that ties bytes to one segment. */
static uint32_t salted_crc(uint64_t seq, const uint8_t *p, size_t n)
{
	uint8_t salt[8];
	st_le64(salt, seq);
	return crc32c(crc32c(0, salt, sizeof salt), p, n);
}

/* The skip marker's CRC: the salt and the marker's own offset in the segment, so neither a
 * marker of another segment nor zeros (a hole a torn write left) pass for one. */
static uint32_t marker_crc(uint64_t seq, uint32_t off)
{
	uint8_t b[4];
	st_le32(b, off);
	return salted_crc(seq, b, sizeof b);
}

/* ---- records ---- */

static bool rec_ok(const struct store_tlog_rec *r)
{
	if (!r || r->qos > 2u || r->id_kind > 1u || r->id_len == 0 || !r->id || r->topic_len == 0 || !r->topic ||
	    (r->payload_len && !r->payload))
		return false;
	uint64_t body = (uint64_t)STORE_TLOG_BODY_FIXED + r->id_len + r->topic_len + r->payload_len;
	return body <= UINT32_MAX;
}

size_t store_tlog_rec_size(const struct store_tlog_rec *r)
{
	if (!r)
		return 0;
	uint64_t n = (uint64_t)STORE_TLOG_REC_HDR + STORE_TLOG_BODY_FIXED + r->id_len + r->topic_len + r->payload_len;
	n = round_up_u64(n, 8u);
	return n > SIZE_MAX ? SIZE_MAX : (size_t)n;
}

size_t store_tlog_rec_encode(const struct store_tlog_rec *r, uint64_t seq, uint8_t *out, size_t cap)
{
	if (!rec_ok(r) || !out)
		return 0;
	size_t n = store_tlog_rec_size(r);
	if (n > cap)
		return 0;
	uint32_t body = (uint32_t)(STORE_TLOG_BODY_FIXED + r->id_len + r->topic_len + r->payload_len);
	struct wcur w = wcur_make(out, n);
	wcur_le32(&w, body);
	uint8_t *crc = wcur_reserve(&w, 4);
	wcur_le64(&w, (uint64_t)r->wall_ms);
	wcur_le64(&w, r->mono_ns);
	wcur_u8(&w, r->qos);
	wcur_u8(&w, r->id_kind);
	wcur_u8(&w, r->id_len);
	wcur_u8(&w, 0);
	wcur_le16(&w, r->topic_len);
	wcur_le16(&w, 0);
	wcur_le32(&w, r->payload_len);
	wcur_bytes(&w, r->id, r->id_len);
	wcur_bytes(&w, r->topic, r->topic_len);
	if (r->payload_len)
		wcur_bytes(&w, r->payload, r->payload_len);
	wcur_zero(&w, n - w.pos);
	if (!wcur_ok(&w) || !crc)
		return 0;
	st_le32(crc, salted_crc(seq, out + STORE_TLOG_REC_HDR, body));
	return n;
}

/* Parse one record's body (its CRC already checked). 0 or -E_CORRUPT. */
static int rec_body_decode(const uint8_t *body, uint32_t len, struct store_tlog_rec *r)
{
	struct cur c = cur_make(body, len);
	r->wall_ms = (int64_t)cur_le64(&c);
	r->mono_ns = cur_le64(&c);
	r->qos = cur_u8(&c);
	r->id_kind = cur_u8(&c);
	r->id_len = cur_u8(&c);
	uint8_t zero8 = cur_u8(&c);
	r->topic_len = cur_le16(&c);
	uint16_t zero16 = cur_le16(&c);
	r->payload_len = cur_le32(&c);
	if (!cur_ok(&c) || zero8 || zero16 || r->qos > 2u || r->id_kind > 1u || r->id_len == 0 || r->topic_len == 0)
		return -E_CORRUPT;
	r->id = cur_ptr(&c, r->id_len);
	r->topic = cur_ptr(&c, r->topic_len);
	r->payload = cur_ptr(&c, r->payload_len);
	if (!cur_done(&c) || !r->id || !r->topic)
		return -E_CORRUPT; /* the lengths must add up to the body exactly */
	return 0;
}

/* ---- plan and geometry ---- */

static uint64_t data_off(uint32_t partitions, uint32_t sector)
{
	return ((uint64_t)partitions + 1u) * sector;
}

/* The region's bytes hold P partitions of N segments of S after the header area. */
static bool geom_fits(uint64_t region_bytes, uint32_t p, uint32_t sector, uint32_t s, uint32_t n)
{
	uint64_t head = data_off(p, sector);
	if (region_bytes < head)
		return false;
	uint64_t per_part = (region_bytes - head) / p;
	return per_part / s >= n;
}

int store_tlog_plan(uint64_t region_bytes, uint32_t sector, uint32_t partitions, uint32_t segment_bytes,
		    struct store_tlog_geom *out)
{
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	if (!sector_ok(sector) || partitions == 0 || partitions > STORE_TLOG_MAX_PARTITIONS ||
	    segment_bytes < SEG_MIN || segment_bytes > SEG_MAX || segment_bytes % sector)
		return -E_INVAL;
	uint64_t head = data_off(partitions, sector);
	if (region_bytes <= head)
		return -E_RANGE;
	uint64_t per_part = (region_bytes - head) / partitions;
	uint64_t fit = per_part / PLAN_MIN_SEGMENTS / sector * sector; /* the largest S with 4 segments */
	uint32_t s = (uint32_t)MIN((uint64_t)segment_bytes, fit);
	if (s < MIN(segment_bytes, SEG_PLAN_MIN))
		return -E_RANGE;
	out->partitions = partitions;
	out->segment_bytes = s;
	out->segments = (uint32_t)MIN(per_part / s, (uint64_t)INT32_MAX);
	out->sector = sector;
	out->region_bytes = region_bytes;
	return 0;
}

uint64_t store_tlog_data_off(const struct store_tlog_geom *g)
{
	return data_off(g->partitions, g->sector);
}

uint64_t store_tlog_slot_off(const struct store_tlog_geom *g, uint32_t partition, uint32_t slot)
{
	return store_tlog_data_off(g) + ((uint64_t)partition * g->segments + slot) * g->segment_bytes;
}

/* ---- region header ---- */

void store_tlog_hdr_encode(const struct store_tlog_geom *g, uint8_t *out)
{
	struct wcur w = wcur_make(out, g->sector);
	wcur_bytes(&w, HDR_MAGIC, 8);
	wcur_le32(&w, STORE_TLOG_VERSION);
	wcur_le32(&w, HDR_BYTES);
	wcur_le32(&w, g->sector);
	wcur_le32(&w, g->partitions);
	wcur_le32(&w, g->segment_bytes);
	wcur_le32(&w, g->segments);
	wcur_zero(&w, HDR_OFF_CRC - w.pos);
	wcur_le32(&w, crc32c(0, out, HDR_OFF_CRC));
	wcur_zero(&w, wcur_left(&w));
}

int store_tlog_hdr_decode(const uint8_t *in, size_t len, uint64_t region_bytes, uint32_t sector,
			  struct store_tlog_geom *out)
{
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	if (!in || !sector_ok(sector))
		return -E_INVAL;
	if (len >= HDR_BYTES && all_zero(in, len))
		return -E_NOENT;
	struct cur c = cur_make(in, len);
	const uint8_t *magic = cur_ptr(&c, 8);
	if (!magic || memcmp(magic, HDR_MAGIC, 8) != 0)
		return -E_CORRUPT;
	uint32_t version = cur_le32(&c); /* before the CRC: another version may move it */
	if (!cur_ok(&c))
		return -E_CORRUPT;
	if (version != STORE_TLOG_VERSION)
		return -E_NOSYS;
	if (len < HDR_BYTES || ld_le32(in + HDR_OFF_CRC) != crc32c(0, in, HDR_OFF_CRC))
		return -E_CORRUPT;
	uint32_t hdr_bytes = cur_le32(&c);
	struct store_tlog_geom g;
	g.sector = cur_le32(&c);
	g.partitions = cur_le32(&c);
	g.segment_bytes = cur_le32(&c);
	g.segments = cur_le32(&c);
	g.region_bytes = region_bytes;
	const uint8_t *reserved = cur_ptr(&c, HDR_OFF_CRC - 32u);
	if (!cur_ok(&c) || !reserved || !all_zero(reserved, HDR_OFF_CRC - 32u) || hdr_bytes != HDR_BYTES ||
	    !sector_ok(g.sector) || g.partitions == 0 || g.partitions > STORE_TLOG_MAX_PARTITIONS ||
	    g.segment_bytes < SEG_MIN || g.segment_bytes > SEG_MAX || g.segment_bytes % g.sector ||
	    g.segments < 2u || g.segments > (uint32_t)INT32_MAX ||
	    !geom_fits(region_bytes, g.partitions, g.sector, g.segment_bytes, g.segments))
		return -E_CORRUPT;
	if (g.sector % sector)
		return -E_NOSYS; /* formatted for a smaller write unit than this device's */
	*out = g;
	return 0;
}

/* ---- hints ---- */

void store_tlog_hint_encode(const struct store_tlog_hint *h, uint8_t *out, size_t sector)
{
	struct wcur w = wcur_make(out, sector);
	wcur_bytes(&w, HINT_MAGIC, 8);
	wcur_le32(&w, h->partition);
	wcur_le32(&w, h->slot);
	wcur_le64(&w, h->seq);
	wcur_le32(&w, 0);
	wcur_le32(&w, crc32c(0, out, HINT_OFF_CRC));
	wcur_zero(&w, wcur_left(&w));
}

static bool seq_ok(uint64_t seq)
{
	return seq >= 1u && seq <= (uint64_t)INT64_MAX;
}

int store_tlog_hint_decode(const uint8_t *in, size_t len, struct store_tlog_hint *out)
{
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	if (!in)
		return -E_INVAL;
	if (len >= HINT_BYTES && all_zero(in, len))
		return -E_NOENT;
	struct cur c = cur_make(in, len);
	const uint8_t *magic = cur_ptr(&c, 8);
	struct store_tlog_hint h;
	h.partition = cur_le32(&c);
	h.slot = cur_le32(&c);
	h.seq = cur_le64(&c);
	uint32_t reserved = cur_le32(&c);
	uint32_t crc = cur_le32(&c);
	if (!cur_ok(&c) || !magic || memcmp(magic, HINT_MAGIC, 8) != 0 || crc != crc32c(0, in, HINT_OFF_CRC) ||
	    reserved || h.partition >= STORE_TLOG_MAX_PARTITIONS || !seq_ok(h.seq))
		return -E_CORRUPT;
	*out = h;
	return 0;
}

/* ---- segment headers ---- */

void store_tlog_seg_encode(const struct store_tlog_seg *s, uint8_t *out)
{
	struct wcur w = wcur_make(out, STORE_TLOG_SEG_HDR);
	wcur_bytes(&w, SEG_MAGIC, 8);
	wcur_le32(&w, s->partition);
	wcur_le32(&w, s->slot);
	wcur_le64(&w, s->seq);
	wcur_le64(&w, (uint64_t)s->first_wall_ms);
	wcur_zero(&w, SEG_OFF_CRC - w.pos);
	wcur_le32(&w, crc32c(0, out, SEG_OFF_CRC));
}

int store_tlog_seg_decode(const uint8_t *in, size_t len, struct store_tlog_seg *out)
{
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	if (!in)
		return -E_INVAL;
	if (len >= STORE_TLOG_SEG_HDR && all_zero(in, STORE_TLOG_SEG_HDR))
		return -E_NOENT;
	struct cur c = cur_make(in, len);
	const uint8_t *magic = cur_ptr(&c, 8);
	struct store_tlog_seg s;
	s.partition = cur_le32(&c);
	s.slot = cur_le32(&c);
	s.seq = cur_le64(&c);
	s.first_wall_ms = (int64_t)cur_le64(&c);
	const uint8_t *reserved = cur_ptr(&c, SEG_OFF_CRC - 32u);
	uint32_t crc = cur_le32(&c);
	if (!cur_ok(&c) || !magic || !reserved || memcmp(magic, SEG_MAGIC, 8) != 0 ||
	    crc != crc32c(0, in, SEG_OFF_CRC) || !all_zero(reserved, SEG_OFF_CRC - 32u) ||
	    s.partition >= STORE_TLOG_MAX_PARTITIONS || !seq_ok(s.seq))
		return -E_CORRUPT;
	*out = s;
	return 0;
}

/* ---- the cursor ---- */

int store_tlog_cursor_init(struct store_tlog_cursor *c, const uint8_t *seg, size_t len, uint32_t sector)
{
	if (!c)
		return -E_INVAL;
	memset(c, 0, sizeof *c);
	c->done = true;
	if (!seg || !sector_ok(sector))
		return -E_INVAL;
	struct store_tlog_seg s;
	if (store_tlog_seg_decode(seg, len, &s) != 0)
		return -E_CORRUPT;
	c->seg = seg;
	c->len = len;
	c->sector = sector;
	c->seq = s.seq;
	c->off = STORE_TLOG_SEG_HDR;
	c->done = false;
	return 0;
}

/* Stop at c->off: the data ends here. */
static int cursor_end(struct store_tlog_cursor *c)
{
	c->done = true;
	return 0;
}

int store_tlog_cursor_next(struct store_tlog_cursor *c, struct store_tlog_rec *r)
{
	if (!c || !r || c->done || !c->seg || !sector_ok(c->sector) || c->off > c->len)
		return c ? cursor_end(c) : 0;
	/* Each turn moves off forward by at least 8 bytes: bounded by len / 8. */
	for (;;) {
		size_t at = c->off;
		if (c->len - at < STORE_TLOG_REC_HDR)
			return cursor_end(c);
		uint32_t len = ld_le32(c->seg + at);
		uint32_t crc = ld_le32(c->seg + at + 4);
		if (len == 0) {
			if (at % c->sector == 0 || at > UINT32_MAX || crc != marker_crc(c->seq, (uint32_t)at))
				return cursor_end(c); /* the end of the data, or a hole */
			size_t next = (size_t)round_up_u64(at + 1u, c->sector);
			c->skipped_bytes += MIN(next, c->len) - at;
			c->off = MIN(next, c->len);
			continue;
		}
		if (len < STORE_TLOG_BODY_FIXED || len > c->len - at - STORE_TLOG_REC_HDR)
			return cursor_end(c);
		const uint8_t *body = c->seg + at + STORE_TLOG_REC_HDR;
		if (crc != salted_crc(c->seq, body, len))
			return cursor_end(c); /* torn, or left from an earlier segment in this slot */
		struct store_tlog_rec rec;
		if (rec_body_decode(body, len, &rec) != 0)
			return cursor_end(c);
		size_t next = (size_t)round_up_u64((uint64_t)at + STORE_TLOG_REC_HDR + len, 8u);
		c->off = MIN(next, c->len);
		c->records++;
		*r = rec;
		return 1;
	}
}

/* ---- the writer: sizes and configuration ---- */

static uint32_t dev_sector(const struct store_dev *d)
{
	const struct blk_topology *t = &d->blk->topo;
	return MAX(t->logical_block, t->physical_block);
}

static uint32_t pending_cap_for(uint32_t flush_bytes, uint32_t segment_bytes)
{
	return MIN(flush_bytes, segment_bytes - STORE_TLOG_SEG_HDR);
}

/* Run A's records and pad, run B's header, records and pad (invariant 2). */
static uint32_t buf_cap_for(uint32_t pending_cap, uint32_t sector)
{
	return pending_cap + STORE_TLOG_SEG_HDR + 2u * sector;
}

static size_t mem_need(uint32_t n_active, uint32_t pending_cap, uint32_t sector)
{
	return align8(sizeof(struct store_tlog)) + (size_t)n_active * align8(buf_cap_for(pending_cap, sector));
}

static bool config_ok(const struct store_tlog_config *cfg)
{
	if (!cfg || !cfg->dev || !cfg->dev->blk || !cfg->io)
		return false;
	const struct blk_topology *t = &cfg->dev->blk->topo;
	uint32_t lb = t->logical_block, sec = dev_sector(cfg->dev);
	if (!sector_ok(lb) || !sector_ok(sec) || cfg->blocks == 0 || cfg->blocks > UINT64_MAX / lb ||
	    cfg->lba > t->capacity || cfg->blocks > t->capacity - cfg->lba)
		return false;
	return cfg->partitions >= 1u && cfg->partitions <= STORE_TLOG_MAX_PARTITIONS &&
	       cfg->segment_bytes >= SEG_MIN && cfg->segment_bytes <= SEG_MAX && cfg->segment_bytes % sec == 0 &&
	       cfg->flush_bytes >= FLUSH_MIN && cfg->flush_bytes <= FLUSH_MAX && cfg->io_len >= sec;
}

size_t store_tlog_mem_size(const struct store_tlog_config *cfg)
{
	if (!config_ok(cfg))
		return 0;
	return mem_need(cfg->partitions, cfg->flush_bytes, dev_sector(cfg->dev));
}

/* ---- the writer: disk addresses and small I/O ---- */

static uint64_t lba_at(const struct store_tlog *t, uint64_t region_off)
{
	return t->cfg.lba + region_off / t->lb;
}

static uint32_t blocks_of(const struct store_tlog *t, uint64_t bytes)
{
	return (uint32_t)(bytes / t->lb);
}

static uint32_t slot_after(const struct store_tlog *t, uint32_t slot)
{
	return slot + 1u == t->g.segments ? 0u : slot + 1u;
}

static uint32_t slot_before(const struct store_tlog *t, uint32_t slot)
{
	return slot == 0 ? t->g.segments - 1u : slot - 1u;
}

static uint64_t hint_off(const struct store_tlog *t, uint32_t p)
{
	return ((uint64_t)p + 1u) * t->g.sector;
}

static uint64_t flushes_seen(const struct store_tlog *t)
{
	return t->cfg.dev->st.ops[STORE_DEV_FLUSH];
}

/* Write partition p's hint (slot, seq): one sector through the scratch buffer. */
static int hint_write(struct store_tlog *t, uint32_t p, uint32_t slot, uint64_t seq)
{
	struct tlog_part *pt = &t->part[p];
	struct store_tlog_hint h = { p, slot, seq };
	store_tlog_hint_encode(&h, t->cfg.io, t->g.sector);
	int err = store_dev_write(t->cfg.dev, lba_at(t, hint_off(t, p)), blocks_of(t, t->g.sector), t->cfg.io);
	if (err)
		return err;
	pt->hint_slot = slot;
	pt->hint_seq = seq;
	pt->hint_unflushed = true;
	pt->hint_flush_mark = flushes_seen(t);
	return 0;
}

/* Read slot's segment header for partition p. 0 (a header of p for that slot), 1 (none),
 * or the device's error. */
static int seg_hdr_read(struct store_tlog *t, uint32_t p, uint32_t slot, struct store_tlog_seg *out)
{
	int err = store_dev_read(t->cfg.dev, lba_at(t, store_tlog_slot_off(&t->g, p, slot)),
				 blocks_of(t, t->g.sector), t->cfg.io);
	if (err)
		return err < 0 ? err : -E_IO; /* never 1: that means "no header" */
	if (store_tlog_seg_decode(t->cfg.io, t->g.sector, out) != 0 || out->partition != p || out->slot != slot)
		return 1;
	return 0;
}

/* ---- recovery ---- */

/* The first sequence of a region formatted at now_wall_ms: wall-clock milliseconds times
 * 1024, so sequences of an earlier use of the same disk (a region formatted again over
 * old segments) stay below it unless the clock is unknown or went back. */
static uint64_t seq_base(int64_t now_wall_ms)
{
	if (now_wall_ms <= 0 || now_wall_ms >= (INT64_C(1) << 50))
		return 1u;
	return (uint64_t)now_wall_ms << 10;
}

/* Where p's newest segment is: from the hint, reading its slot and the next (invariant
 * 4), or, when the hint is damaged, from every slot's header. */
struct found {
	bool have;
	struct store_tlog_seg newest;
	uint64_t max_seq;          /* the highest sequence seen */
	uint32_t next_slot;
};

static void found_take(struct found *f, const struct store_tlog_seg *s)
{
	if (!f->have || s->seq > f->newest.seq) {
		f->newest = *s;
		f->have = true;
	}
	f->max_seq = MAX(f->max_seq, s->seq);
}

static int find_from_hint(struct store_tlog *t, uint32_t p, const struct store_tlog_hint *h, struct found *f)
{
	struct store_tlog_seg s;
	f->max_seq = h->seq;
	int rc = seg_hdr_read(t, p, h->slot, &s);
	if (rc < 0)
		return rc;
	if (rc == 0 && s.seq >= h->seq)
		found_take(f, &s);
	uint32_t b = slot_after(t, h->slot);
	rc = seg_hdr_read(t, p, b, &s);
	if (rc < 0)
		return rc;
	if (rc == 0 && s.seq > h->seq)
		found_take(f, &s); /* the hint's write was lost, the header's was not */
	/* None: the hint's segment lost its header in the crash; it held nothing promised. */
	f->next_slot = f->have ? slot_after(t, f->newest.slot) : h->slot;
	return 0;
}

static int find_by_scan(struct store_tlog *t, uint32_t p, int64_t now_wall_ms, struct found *f)
{
	struct store_tlog_seg s;
	f->max_seq = 0;
	for (uint32_t k = 0; k < t->g.segments; k++) {
		int rc = seg_hdr_read(t, p, k, &s);
		if (rc < 0)
			return rc;
		if (rc == 0)
			found_take(f, &s);
	}
	if (!f->have)
		f->max_seq = seq_base(now_wall_ms);
	f->next_slot = f->have ? slot_after(t, f->newest.slot) : 0;
	return 0;
}

/* Count what the newest segment holds (its records stay where they are: writing goes on in
 * a new segment, so its torn tail is never written over). */
static int read_newest(struct store_tlog *t, uint32_t p, const struct store_tlog_seg *s)
{
	uint32_t bytes = t->g.segment_bytes;
	int err = store_dev_read(t->cfg.dev, lba_at(t, store_tlog_slot_off(&t->g, p, s->slot)), blocks_of(t, bytes),
				 t->cfg.io);
	if (err)
		return err;
	struct store_tlog_cursor c;
	struct store_tlog_rec r;
	if (store_tlog_cursor_init(&c, t->cfg.io, bytes, t->g.sector) != 0)
		return 0; /* changed under us: nothing to count */
	while (store_tlog_cursor_next(&c, &r) == 1)
		;
	t->st.recovered_records += c.records;
	t->st.cut_bytes += bytes - c.off;
	return 0;
}

/* Set p's writer state: nothing open (cur full), the next segment (slot, seq). */
static void part_start_at(struct store_tlog *t, uint32_t p, uint32_t slot, uint64_t seq)
{
	struct tlog_part *pt = &t->part[p];
	pt->cur_slot = slot_before(t, slot);
	pt->cur_seq = seq - 1u;
	pt->cur_off = t->g.segment_bytes;
	pt->ret_slot = slot;
	pt->ret_known = false;
}

static int recover_partition(struct store_tlog *t, uint32_t p, int64_t now_wall_ms)
{
	struct tlog_part *pt = &t->part[p];
	int err = store_dev_read(t->cfg.dev, lba_at(t, hint_off(t, p)), blocks_of(t, t->g.sector), t->cfg.io);
	if (err)
		return err;
	struct store_tlog_hint h;
	struct found f;
	memset(&f, 0, sizeof f);
	if (store_tlog_hint_decode(t->cfg.io, t->g.sector, &h) == 0 && h.partition == p && h.slot < t->g.segments) {
		err = find_from_hint(t, p, &h, &f);
	} else {
		t->st.hints_rebuilt++;
		err = find_by_scan(t, p, now_wall_ms, &f);
	}
	if (err)
		return err;
	if (f.max_seq >= SEQ_MAX)
		return -E_CORRUPT; /* a disk that claims 2^62 segments is not one we wrote */
	/* invariant 5: the sequence above max_seq may have been started and lost its header */
	uint64_t next_seq = f.max_seq + 2u;
	if (f.have) {
		err = read_newest(t, p, &f.newest);
		if (err)
			return err;
		pt->have_newest = true;
		pt->newest_slot = f.newest.slot;
		pt->newest_seq = f.newest.seq;
		pt->newest_first_wall = f.newest.first_wall_ms;
	}
	part_start_at(t, p, f.next_slot, next_seq);
	/* Announce the next segment (invariant 4): its first write-out needs this hint durable,
	 * since a crash after it would otherwise recover the same place and sequence again. */
	return hint_write(t, p, f.next_slot, next_seq);
}

/* A region never used: empty hints (announcing slot 0), then the header; no flush. */
static int format_region(struct store_tlog *t, int64_t now_wall_ms)
{
	uint64_t base = seq_base(now_wall_ms);
	for (uint32_t p = 0; p < t->g.partitions; p++) {
		int err = hint_write(t, p, 0, base);
		if (err)
			return err;
		part_start_at(t, p, 0, base);
	}
	store_tlog_hdr_encode(&t->g, t->cfg.io);
	return store_dev_write(t->cfg.dev, t->cfg.lba, blocks_of(t, t->g.sector), t->cfg.io);
}

/* The region's geometry: from its header, or planned for a region never used. */
static int load_geometry(struct store_tlog *t, bool *blank)
{
	uint32_t sec = dev_sector(t->cfg.dev);
	uint64_t region_bytes = t->cfg.blocks * t->lb;
	int err = store_dev_read(t->cfg.dev, t->cfg.lba, blocks_of(t, sec), t->cfg.io);
	if (err)
		return err;
	err = store_tlog_hdr_decode(t->cfg.io, sec, region_bytes, sec, &t->g);
	*blank = err == -E_NOENT;
	if (*blank)
		return store_tlog_plan(region_bytes, sec, t->cfg.partitions, t->cfg.segment_bytes, &t->g);
	return err;
}

int store_tlog_open(struct store_tlog **out, void *mem, size_t len, const struct store_tlog_config *cfg,
		    int64_t now_wall_ms)
{
	if (!out)
		return -E_INVAL;
	*out = NULL;
	if (!mem || ((uintptr_t)mem & 7u) || !config_ok(cfg) || len < store_tlog_mem_size(cfg))
		return -E_INVAL;
	struct store_tlog *t = mem;
	memset(t, 0, sizeof *t);
	t->cfg = *cfg;
	t->lb = cfg->dev->blk->topo.logical_block;
	bool blank = false;
	int err = load_geometry(t, &blank);
	if (err)
		return err;
	t->n_active = MIN(t->g.partitions, cfg->partitions);
	t->pending_cap = pending_cap_for(cfg->flush_bytes, t->g.segment_bytes);
	t->buf_cap = buf_cap_for(t->pending_cap, t->g.sector);
	/* A region formatted with a larger sector or segment than cfg sizes for needs more. */
	if (mem_need(t->n_active, t->pending_cap, t->g.sector) > len || cfg->io_len < t->g.segment_bytes)
		return -E_NOMEM;
	uint8_t *bufs = (uint8_t *)mem + align8(sizeof *t);
	for (uint32_t p = 0; p < t->n_active; p++)
		t->part[p].buf = bufs + (size_t)p * align8(t->buf_cap);
	if (blank) {
		err = format_region(t, now_wall_ms);
	} else {
		for (uint32_t p = 0; p < t->g.partitions && !err; p++)
			err = recover_partition(t, p, now_wall_ms);
	}
	if (err)
		return err;
	*out = t;
	return 0;
}

const struct store_tlog_geom *store_tlog_geometry(const struct store_tlog *t)
{
	return &t->g;
}

const struct store_tlog_stats *store_tlog_stats(const struct store_tlog *t)
{
	return &t->st;
}

/* ---- appending ---- */

/* Pad a run that ends at segment offset end to the next sector boundary: a skip marker,
 * then zeros (nothing when it ends on a boundary or at the segment's end). Returns the
 * bytes added at buf_end. */
static uint32_t pad_run(const struct store_tlog *t, uint8_t *buf_end, uint64_t seq, uint32_t end)
{
	uint32_t sec = t->g.sector;
	if (end % sec == 0) /* the segment's end is a boundary too */
		return 0;
	uint32_t n = sec - end % sec; /* >= 8: records keep offsets 8-aligned */
	memset(buf_end, 0, n);
	st_le32(buf_end + 4, marker_crc(seq, end));
	return n;
}

/* Close run A and begin run B: the next segment's header, its first record's time. */
static void roll(struct store_tlog *t, uint32_t p, int64_t first_wall_ms)
{
	struct tlog_part *pt = &t->part[p];
	pt->a_len += pad_run(t, pt->buf + pt->a_len, pt->cur_seq, pt->cur_off + pt->a_len);
	struct store_tlog_seg s = { p, slot_after(t, pt->cur_slot), pt->cur_seq + 1u, first_wall_ms };
	store_tlog_seg_encode(&s, pt->buf + pt->a_len);
	pt->b_len = STORE_TLOG_SEG_HDR;
	pt->b_first_wall = first_wall_ms;
}

int store_tlog_append(struct store_tlog *t, uint32_t p, const struct store_tlog_rec *r)
{
	if (!rec_ok(r)) {
		t->st.dropped_invalid++;
		return -E_INVAL;
	}
	size_t n = store_tlog_rec_size(r);
	if (n > t->pending_cap) {
		t->st.dropped_too_big++;
		return -E_INVAL;
	}
	struct tlog_part *pt = &t->part[p % t->n_active];
	uint32_t rs = (uint32_t)n;
	if (pt->pending + rs > t->pending_cap) {
		t->st.dropped_full++;
		return -E_AGAIN;
	}
	if (pt->b_len == 0 && t->g.segment_bytes - pt->cur_off - pt->a_len < rs)
		roll(t, (uint32_t)(pt - t->part), r->wall_ms);
	uint64_t seq = pt->b_len ? pt->cur_seq + 1u : pt->cur_seq;
	uint32_t at = pt->a_len + pt->b_len;
	if (store_tlog_rec_encode(r, seq, pt->buf + at, t->buf_cap - at) != n)
		return -E_INVAL; /* cannot happen: rec_ok and the room were checked */
	if (pt->b_len)
		pt->b_len += rs;
	else
		pt->a_len += rs;
	pt->pending += rs;
	pt->n_pending++;
	t->st.appended++;
	return 0;
}

size_t store_tlog_pending(const struct store_tlog *t)
{
	size_t n = 0;
	for (uint32_t p = 0; p < t->n_active; p++)
		n += t->part[p].pending;
	return n;
}

/* ---- writing out ---- */

/* Invariant 4 before the first byte of segment q in slot y. */
static int allow_start(struct store_tlog *t, uint32_t p, uint32_t y, uint64_t q)
{
	struct tlog_part *pt = &t->part[p];
	bool after_prev = pt->hint_slot == slot_before(t, y) && pt->hint_seq == q - 1u;
	bool announced = pt->hint_slot == y && pt->hint_seq == q;
	if (!after_prev && !announced) { /* the last start's hint never landed (a write error) */
		int err = hint_write(t, p, y, q);
		if (err)
			return err;
	}
	if (!pt->hint_unflushed || !t->cfg.dev->blk->topo.flush || flushes_seen(t) != pt->hint_flush_mark) {
		pt->hint_unflushed = false;
		return 0;
	}
	int err = store_dev_flush(t->cfg.dev); /* two starts without the caller's flush between */
	if (err)
		return err;
	pt->hint_unflushed = false;
	t->st.start_flushes++;
	return 0;
}

/* B landed: it is the open segment now, and the newest. */
static void started(struct store_tlog *t, uint32_t p)
{
	struct tlog_part *pt = &t->part[p];
	pt->cur_slot = slot_after(t, pt->cur_slot);
	pt->cur_seq++;
	pt->cur_off = pt->b_len;
	pt->have_newest = true;
	pt->newest_slot = pt->cur_slot;
	pt->newest_seq = pt->cur_seq;
	pt->newest_first_wall = pt->b_first_wall;
	if (pt->ret_slot == pt->cur_slot)
		pt->ret_slot = slot_after(t, pt->cur_slot); /* the ring overtook retention */
	pt->ret_known = false;
	t->st.segments_started++;
}

static int write_run_b(struct store_tlog *t, uint32_t p)
{
	struct tlog_part *pt = &t->part[p];
	uint32_t y = slot_after(t, pt->cur_slot);
	uint64_t q = pt->cur_seq + 1u;
	int err = allow_start(t, p, y, q);
	if (err)
		return err;
	err = store_dev_write(t->cfg.dev, lba_at(t, store_tlog_slot_off(&t->g, p, y)), blocks_of(t, pt->b_len),
			      pt->buf + pt->a_len);
	if (err) {
		pt->cur_slot = y; /* attempted: abandoned, its sequence never used again */
		pt->cur_seq = q;
		return err;
	}
	started(t, p);
	t->st.bytes_written += pt->b_len;
	if (pt->hint_slot == y && pt->hint_seq == q)
		return 0;
	return hint_write(t, p, y, q);
}

static int write_partition(struct store_tlog *t, uint32_t p)
{
	struct tlog_part *pt = &t->part[p];
	if (pt->b_len)
		pt->b_len += pad_run(t, pt->buf + pt->a_len + pt->b_len, pt->cur_seq + 1u, pt->b_len);
	else
		pt->a_len += pad_run(t, pt->buf + pt->a_len, pt->cur_seq, pt->cur_off + pt->a_len);
	if (pt->a_len) {
		int err = store_dev_write(t->cfg.dev,
					  lba_at(t, store_tlog_slot_off(&t->g, p, pt->cur_slot) + pt->cur_off),
					  blocks_of(t, pt->a_len), pt->buf);
		if (err)
			return err;
		pt->cur_off += pt->a_len;
		t->st.bytes_written += pt->a_len;
	}
	if (pt->b_len)
		return write_run_b(t, p);
	return 0;
}

static void drop_buffer(struct store_tlog *t, struct tlog_part *pt, bool lost)
{
	if (lost)
		t->st.dropped_io += pt->n_pending;
	else
		t->st.written += pt->n_pending;
	pt->a_len = pt->b_len = pt->pending = pt->n_pending = 0;
}

int store_tlog_write_out(struct store_tlog *t)
{
	bool any = false;
	for (uint32_t p = 0; p < t->n_active; p++) {
		struct tlog_part *pt = &t->part[p];
		if (!pt->pending)
			continue;
		any = true;
		int err = write_partition(t, p);
		if (err) {
			pt->cur_off = t->g.segment_bytes; /* abandoned: the next append rolls */
			for (uint32_t q = 0; q < t->n_active; q++)
				drop_buffer(t, &t->part[q], true);
			t->st.write_errors++;
			return err;
		}
		drop_buffer(t, pt, false);
	}
	if (any)
		t->st.write_outs++;
	return 0;
}

/* ---- retention ---- */

static void ret_advance(struct store_tlog *t, struct tlog_part *pt)
{
	pt->ret_slot = slot_after(t, pt->ret_slot);
	pt->ret_known = false;
}

/* Learn when ret_slot's successor began. 0 (ret_known set), 1 (ret_slot holds no older
 * segment of this ring: skipped), or the device's error. */
static int ret_learn(struct store_tlog *t, uint32_t p)
{
	struct tlog_part *pt = &t->part[p];
	struct store_tlog_seg old, next;
	int rc = seg_hdr_read(t, p, pt->ret_slot, &old);
	if (rc < 0)
		return rc;
	if (rc == 1 || old.seq >= pt->newest_seq)
		return 1;
	uint32_t s = slot_after(t, pt->ret_slot);
	if (s == pt->newest_slot) {
		pt->ret_succ_wall = pt->newest_first_wall;
	} else {
		rc = seg_hdr_read(t, p, s, &next);
		if (rc < 0)
			return rc;
		if (rc == 1 || next.seq <= old.seq || next.seq >= pt->newest_seq)
			return 1; /* no known successor: the ring will reclaim the slot */
		pt->ret_succ_wall = next.first_wall_ms;
	}
	pt->ret_known = true;
	return 0;
}

static uint32_t retain_partition(struct store_tlog *t, uint32_t p, int64_t cutoff_ms)
{
	struct tlog_part *pt = &t->part[p];
	uint32_t k = pt->ret_slot;
	if (!pt->have_newest || k == pt->newest_slot || (pt->b_len && k == slot_after(t, pt->cur_slot)))
		return 0; /* invariant 6 */
	if (!pt->ret_known) {
		int rc = ret_learn(t, p);
		if (rc < 0)
			return 0; /* the device: try again next time */
		if (rc == 1) {
			ret_advance(t, pt);
			return 0;
		}
	}
	if (pt->ret_succ_wall == 0 || pt->ret_succ_wall >= cutoff_ms)
		return 0; /* not expired (or no clock): every later segment is newer */
	int err = store_dev_discard(t->cfg.dev, lba_at(t, store_tlog_slot_off(&t->g, p, k)),
				    blocks_of(t, t->g.segment_bytes));
	if (err && err != -E_NOSYS)
		return 0;
	t->st.expired_segments++;
	if (!err)
		t->st.discarded_segments++;
	ret_advance(t, pt);
	return 1;
}

uint32_t store_tlog_retain(struct store_tlog *t, int64_t now_wall_ms)
{
	if (!t->cfg.retention_s || t->cfg.retention_s > (uint64_t)INT64_MAX / 1000u)
		return 0;
	int64_t keep_ms = (int64_t)t->cfg.retention_s * 1000;
	if (now_wall_ms < INT64_MIN + keep_ms)
		return 0;
	int64_t cutoff = now_wall_ms - keep_ms;
	uint32_t n = 0;
	for (uint32_t p = 0; p < t->g.partitions; p++)
		n += retain_partition(t, p, cutoff);
	return n;
}

/* ---- invariants ---- */

static bool part_ok(const struct store_tlog *t, uint32_t p)
{
	const struct tlog_part *pt = &t->part[p];
	uint32_t s = t->g.segment_bytes, sec = t->g.sector;
	if (p >= t->n_active && (pt->buf || pt->pending || pt->a_len || pt->b_len))
		return false; /* 7 */
	if (pt->cur_slot >= t->g.segments || pt->cur_off > s || pt->cur_off % sec || pt->ret_slot >= t->g.segments)
		return false; /* 1 */
	if (pt->a_len > s - pt->cur_off || pt->pending > t->pending_cap || pt->a_len + pt->b_len > t->buf_cap ||
	    (pt->pending == 0) != (pt->n_pending == 0) || (pt->pending == 0 && (pt->a_len || pt->b_len)))
		return false; /* 2 */
	uint32_t a_end = pt->cur_off + pt->a_len;
	if (pt->b_len && (pt->b_len < STORE_TLOG_SEG_HDR || pt->b_len > s || (a_end % sec && a_end != s)))
		return false; /* 2 */
	if (pt->hint_seq > pt->cur_seq + 1u || pt->hint_slot >= t->g.segments)
		return false; /* 4: no hint ahead of the next segment */
	if (pt->have_newest && (pt->newest_slot >= t->g.segments || pt->newest_seq > pt->cur_seq))
		return false; /* 5 */
	if (pt->b_len) {
		struct store_tlog_seg hdr;
		if (store_tlog_seg_decode(pt->buf + pt->a_len, pt->b_len, &hdr) != 0 || hdr.partition != p ||
		    hdr.slot != slot_after(t, pt->cur_slot) || hdr.seq != pt->cur_seq + 1u)
			return false; /* 2: run B starts cur + 1 */
	}
	return true;
}

int store_tlog_check(const struct store_tlog *t)
{
	if (!t || t->n_active == 0 || t->n_active > t->g.partitions || t->g.partitions > STORE_TLOG_MAX_PARTITIONS ||
	    t->pending_cap > t->g.segment_bytes - STORE_TLOG_SEG_HDR ||
	    t->buf_cap != buf_cap_for(t->pending_cap, t->g.sector))
		return -E_CORRUPT;
	for (uint32_t p = 0; p < t->g.partitions; p++)
		if (!part_ok(t, p))
			return -E_CORRUPT;
	return 0;
}
