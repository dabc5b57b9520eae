/* SPDX-License-Identifier: MIT
 *
 * store/tlog (the telemetry log, docs/DISK-FORMAT.md section 8) over the simulated disk of
 * tests/support/fake_blk: the record codec (round trip at the edge sizes, every rule on
 * both sides, skip markers), the region header, hints and segment headers (byte offsets,
 * every rejection), the plan; the writer: a region never used is formatted, another
 * version or a corrupt header is refused unwritten, a write-out never rewrites a sector
 * that holds records, the CRC salt rejects an earlier pass of the ring in a reused slot,
 * recovery after a tail torn at every byte of the last record and a torn last sector, a
 * power cut at every request of write-outs (after a reopen too) and of an open, a stale
 * hint and a lost segment header, the ring wrapping many times with a constant number of
 * reads at open, retention by age with and without DISCARD, partitions that do not affect
 * each other (a damaged hint rebuilt by a scan), full buffers, records too big, device
 * errors. Every record read back is compared with what was appended; read-back order must
 * be append order, and every record written out before the last completed flush is there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/bytes.h"
#include "lib/crc32c.h"
#include "lib/err.h"
#include "store/tlog.h"
#include "tests/support/fake_blk.h"

#define KiB 1024u
#define DAY_MS INT64_C(86400000)
#define WALL0 INT64_C(1700000000000)
#define MAX_IDS 8192u
#define MAX_READ 8192u

static uint64_t fake_ns;

static uint64_t clock_ns(void *ctx)
{
	(void)ctx;
	return fake_ns += 1000u;
}

/* ---- records: generated from an id, checked against it ---- */

struct grec {
	struct store_tlog_rec r;
	uint8_t id[255];
	uint8_t topic[64];
	uint8_t payload[1024];
};

/* Record `id` (its mono_ns), payload of plen bytes (-1: derived from the id). */
static void gen(uint64_t id, int64_t wall_ms, int plen, struct grec *g)
{
	memset(g, 0, sizeof *g);
	g->r.wall_ms = wall_ms;
	g->r.mono_ns = id;
	g->r.qos = (uint8_t)(id % 3u);
	g->r.id_kind = (uint8_t)(id % 2u);
	g->r.id_len = (uint8_t)(1u + id % 20u);
	for (uint32_t k = 0; k < g->r.id_len; k++)
		g->id[k] = (uint8_t)('a' + (id + k) % 26u);
	g->r.topic_len = (uint16_t)snprintf((char *)g->topic, sizeof g->topic, "devices/d%u/telemetry", (unsigned)(id % 50u));
	g->r.payload_len = plen >= 0 ? (uint32_t)plen : (uint32_t)((id * 37u) % 300u);
	for (uint32_t k = 0; k < g->r.payload_len; k++)
		g->payload[k] = (uint8_t)(id * 7u + k);
	g->r.id = g->id;
	g->r.topic = g->topic;
	g->r.payload = g->r.payload_len ? g->payload : NULL;
}

/* r is exactly record r->mono_ns as gen made it (wall clock aside), payload length plen. */
static bool rec_matches(const struct store_tlog_rec *r, int plen)
{
	struct grec g;
	gen(r->mono_ns, r->wall_ms, plen, &g);
	return r->qos == g.r.qos && r->id_kind == g.r.id_kind && r->id_len == g.r.id_len &&
	       memcmp(r->id, g.id, r->id_len) == 0 && r->topic_len == g.r.topic_len &&
	       memcmp(r->topic, g.topic, r->topic_len) == 0 && r->payload_len == g.r.payload_len &&
	       (r->payload_len == 0 || memcmp(r->payload, g.payload, r->payload_len) == 0);
}

/* ---- the fixture ---- */

struct spec {
	uint32_t bs, pbs;           /* logical and physical block */
	uint32_t parts, seg, n;     /* P, S, N wanted: the region is made to hold exactly N */
	uint32_t flush_bytes;
	uint64_t retention_s;
	bool discard, no_cache;
};

struct fx {
	struct fake_blk *fb;
	struct store_dev d;
	uint8_t bounce[64 * KiB];
	struct spec sp;
	struct store_tlog_config cfg;
	void *mem;
	size_t mem_len;
	uint8_t *io;
	struct store_tlog *t;
};

static uint32_t spec_sector(const struct spec *s)
{
	return s->pbs > s->bs ? s->pbs : s->bs;
}

/* Region: header and hints, then exactly P x N segments; 64 KiB in from the disk's start. */
static uint64_t spec_region_bytes(const struct spec *s)
{
	uint64_t b = (uint64_t)(s->parts + 1u) * spec_sector(s) + (uint64_t)s->parts * s->n * s->seg;
	return (b + s->bs - 1u) / s->bs * s->bs;
}

static struct fx *fx_wrap(struct fake_blk *fb, const struct spec *sp)
{
	struct fx *x = calloc(1, sizeof *x);
	assert_non_null(x);
	assert_non_null(fb);
	x->fb = fb;
	x->sp = *sp;
	struct store_dev_port port = { clock_ns, NULL, NULL };
	assert_int_equal(store_dev_init(&x->d, fake_blk_dev(fb), x->bounce, sizeof x->bounce, 1000, &port), 0);
	x->io = malloc(sp->seg > 64 * KiB ? sp->seg : 64 * KiB);
	assert_non_null(x->io);
	x->cfg = (struct store_tlog_config){
		.dev = &x->d,
		.lba = 64 * KiB / sp->bs,
		.blocks = spec_region_bytes(sp) / sp->bs,
		.partitions = sp->parts,
		.segment_bytes = sp->seg,
		.flush_bytes = sp->flush_bytes ? sp->flush_bytes : 64 * KiB,
		.retention_s = sp->retention_s,
		.io = x->io,
		.io_len = sp->seg > 64 * KiB ? sp->seg : 64 * KiB,
	};
	x->mem_len = store_tlog_mem_size(&x->cfg);
	assert_true(x->mem_len > 0);
	x->mem = aligned_alloc(8, (x->mem_len + 7u) & ~(size_t)7u);
	assert_non_null(x->mem);
	return x;
}

static struct fx *fx_new(const struct spec *sp)
{
	struct fake_blk_config c = {
		.blocks = ((uint64_t)128 * KiB + spec_region_bytes(sp)) / sp->bs,
		.block_size = sp->bs,
		.physical_block = sp->pbs,
		.discard = sp->discard,
		.no_cache = sp->no_cache,
	};
	return fx_wrap(fake_blk_new(&c), sp);
}

static void fx_free(struct fx *x)
{
	fake_blk_free(x->fb);
	free(x->io);
	free(x->mem);
	free(x);
}

static int fx_open_at(struct fx *x, int64_t now)
{
	x->t = NULL;
	return store_tlog_open(&x->t, x->mem, x->mem_len, &x->cfg, now);
}

static void fx_open(struct fx *x)
{
	assert_int_equal(fx_open_at(x, WALL0), 0);
	assert_non_null(x->t);
	assert_int_equal(store_tlog_check(x->t), 0);
}

/* A healthy device holding what a power cut leaves on x (not opened). */
static struct fx *fx_after_cut(const struct fx *x, uint64_t seed)
{
	return fx_wrap(fake_blk_after_power_cut(x->fb, seed, NULL), &x->sp);
}

/* A healthy device holding x's bytes as reads see them now, made durable (not opened). */
static struct fx *fx_copy(const struct fx *x)
{
	struct fake_blk_config c = { .blocks = x->d.blk->topo.capacity, .block_size = x->sp.bs,
				     .physical_block = x->sp.pbs, .discard = x->sp.discard, .no_cache = x->sp.no_cache };
	struct fake_blk *f = fake_blk_new(&c);
	assert_non_null(f);
	size_t size;
	const uint8_t *img = fake_blk_bytes(x->fb, &size);
	fake_blk_set(f, 0, img, size);
	return fx_wrap(f, &x->sp);
}

static struct fake_blk_counts fx_counts(const struct fx *x)
{
	struct fake_blk_counts c;
	fake_blk_counts(x->fb, &c);
	return c;
}

static uint64_t region_off(const struct fx *x)
{
	return x->cfg.lba * x->sp.bs;
}

static const uint8_t *fx_region(const struct fx *x)
{
	size_t size;
	return fake_blk_bytes(x->fb, &size) + region_off(x);
}

static struct store_tlog_geom fx_geom(const struct fx *x)
{
	struct store_tlog_geom g;
	assert_int_equal(store_tlog_hdr_decode(fx_region(x), spec_sector(&x->sp), x->cfg.blocks * x->sp.bs,
					       spec_sector(&x->sp), &g), 0);
	return g;
}

static struct store_tlog_hint fx_hint(const struct fx *x, uint32_t p)
{
	struct store_tlog_geom g = fx_geom(x);
	struct store_tlog_hint h;
	assert_int_equal(store_tlog_hint_decode(fx_region(x) + (uint64_t)(p + 1u) * g.sector, g.sector, &h), 0);
	return h;
}

/* ---- the model: what was appended where, and what was promised ---- */

enum { ST_NONE, ST_BUFFERED, ST_WRITTEN, ST_PROMISED, ST_LOST };

struct model {
	uint64_t next_id;
	uint8_t part[MAX_IDS];   /* partition + 1 */
	uint8_t state[MAX_IDS];
	int plen;                /* payload length of every record, -1 derived */
};

static void model_init(struct model *m)
{
	memset(m, 0, sizeof *m);
	m->next_id = 1;
	m->plen = -1;
}

static void model_moved(struct model *m, uint8_t from, uint8_t to)
{
	for (uint64_t i = 1; i < m->next_id; i++)
		if (m->state[i] == from)
			m->state[i] = to;
}

/* The power went: what was not flushed may or may not be there. */
static void model_cut(struct model *m)
{
	model_moved(m, ST_BUFFERED, ST_LOST);
	model_moved(m, ST_WRITTEN, ST_LOST);
}

static int do_write_out(struct fx *x, struct model *m)
{
	int err = store_tlog_write_out(x->t);
	model_moved(m, ST_BUFFERED, err ? ST_LOST : ST_WRITTEN);
	assert_int_equal(store_tlog_check(x->t), 0);
	assert_int_equal(store_tlog_pending(x->t), 0);
	return err;
}

static int do_flush(struct fx *x, struct model *m)
{
	int err = store_dev_flush(&x->d);
	if (!err)
		model_moved(m, ST_WRITTEN, ST_PROMISED);
	return err;
}

/* Append one generated record to p (writing out first when the buffer is full). */
static int push_wall(struct fx *x, struct model *m, uint32_t p, int64_t wall)
{
	assert_true(m->next_id < MAX_IDS);
	uint64_t id = m->next_id++;
	struct grec g;
	gen(id, wall, m->plen, &g);
	int err = store_tlog_append(x->t, p, &g.r);
	if (err == -E_AGAIN) {
		err = do_write_out(x, m);
		if (err)
			return err;
		err = store_tlog_append(x->t, p, &g.r);
	}
	if (err)
		return err;
	m->part[id] = (uint8_t)(p % x->sp.parts + 1u);
	m->state[id] = ST_BUFFERED;
	return 0;
}

static int push(struct fx *x, struct model *m, uint32_t p)
{
	return push_wall(x, m, p, WALL0 + (int64_t)m->next_id * 1000);
}

/* Partition p's records on x's disk as reads see it, oldest segment first: every segment
 * header of p sorted by sequence, each read with the cursor. Every record is checked
 * against gen(); sequences never repeat. Returns the count; *n_segs the segments. */
static size_t read_ids(const struct fx *x, uint32_t p, int plen, uint64_t *ids, size_t max, uint32_t *n_segs)
{
	struct store_tlog_geom g = fx_geom(x);
	const uint8_t *reg = fx_region(x);
	uint64_t seqs[256];
	uint32_t slots[256], n = 0;
	assert_true(g.segments <= 256);
	for (uint32_t k = 0; k < g.segments; k++) {
		struct store_tlog_seg s;
		if (store_tlog_seg_decode(reg + store_tlog_slot_off(&g, p, k), g.segment_bytes, &s) != 0 ||
		    s.partition != p || s.slot != k)
			continue;
		uint32_t at = n++;
		while (at > 0 && seqs[at - 1] > s.seq) {
			seqs[at] = seqs[at - 1];
			slots[at] = slots[at - 1];
			at--;
		}
		seqs[at] = s.seq;
		slots[at] = k;
	}
	size_t count = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (i)
			assert_true(seqs[i] > seqs[i - 1]);
		struct store_tlog_cursor c;
		struct store_tlog_rec r;
		assert_int_equal(store_tlog_cursor_init(&c, reg + store_tlog_slot_off(&g, p, slots[i]), g.segment_bytes,
							g.sector), 0);
		while (store_tlog_cursor_next(&c, &r) == 1) {
			if (!rec_matches(&r, plen))
				fail_msg("partition %u: record %llu does not match", p, (unsigned long long)r.mono_ns);
			assert_true(count < max);
			ids[count++] = r.mono_ns;
		}
	}
	if (n_segs)
		*n_segs = n;
	return count;
}

/* What partition p holds is append order, only records appended to p, and every promised
 * one from the oldest retained on (all of them when `all`). Returns the count. */
static size_t check_partition(const struct fx *x, const struct model *m, uint32_t p, bool all)
{
	static uint64_t ids[MAX_READ];
	size_t n = read_ids(x, p, m->plen, ids, MAX_READ, NULL);
	for (size_t i = 0; i < n; i++) {
		assert_true(ids[i] > 0 && ids[i] < m->next_id);
		if (m->part[ids[i]] != p + 1u || m->state[ids[i]] == ST_NONE)
			fail_msg("partition %u: record %llu was not appended there", p, (unsigned long long)ids[i]);
		if (i && ids[i] <= ids[i - 1])
			fail_msg("partition %u: %llu after %llu", p, (unsigned long long)ids[i],
				 (unsigned long long)ids[i - 1]);
	}
	uint64_t from = all || n == 0 ? 1 : ids[0];
	size_t j = 0;
	for (uint64_t id = from; id < m->next_id; id++) {
		if (m->part[id] != p + 1u || m->state[id] != ST_PROMISED)
			continue;
		while (j < n && ids[j] < id)
			j++;
		if (j == n || ids[j] != id)
			fail_msg("partition %u: promised record %llu missing", p, (unsigned long long)id);
	}
	return n;
}

/* No record salted with a segment's own sequence lies past the segment's data, at any
 * 8-byte offset, in every segment of p with a sequence >= min_seq whose slot differs from
 * `before` (x's region before, or NULL): a segment written after a crash or a failed write
 * never reuses a sequence whose bytes may be in its slot. (A segment a crash or an error
 * abandoned may keep such bytes past a hole: nothing is written there again.) */
static void assert_no_leftovers(const struct fx *x, uint32_t p, uint64_t min_seq, const uint8_t *before)
{
	struct store_tlog_geom g = fx_geom(x);
	const uint8_t *reg = fx_region(x);
	for (uint32_t k = 0; k < g.segments; k++) {
		const uint8_t *seg = reg + store_tlog_slot_off(&g, p, k);
		struct store_tlog_seg s;
		if (store_tlog_seg_decode(seg, g.segment_bytes, &s) != 0 || s.partition != p || s.slot != k ||
		    s.seq < min_seq ||
		    (before && memcmp(before + store_tlog_slot_off(&g, p, k), seg, g.segment_bytes) == 0))
			continue;
		struct store_tlog_cursor c;
		struct store_tlog_rec r;
		assert_int_equal(store_tlog_cursor_init(&c, seg, g.segment_bytes, g.sector), 0);
		while (store_tlog_cursor_next(&c, &r) == 1)
			;
		uint8_t salt[8];
		st_le64(salt, s.seq);
		uint32_t salt_crc = crc32c(0, salt, 8);
		for (size_t o = (c.off + 7u) & ~(size_t)7u; o + 8 <= g.segment_bytes; o += 8) {
			uint32_t len = ld_le32(seg + o);
			if (len < STORE_TLOG_BODY_FIXED || len > g.segment_bytes - o - 8)
				continue;
			if (ld_le32(seg + o + 4) == crc32c(salt_crc, seg + o + 8, len))
				fail_msg("partition %u slot %u (seq %llu): a record of its sequence at %zu past its data "
					 "(%zu)", p, k, (unsigned long long)s.seq, o, c.off);
		}
	}
}

static const struct spec spec_small = { .bs = 512, .parts = 2, .seg = 8 * KiB, .n = 6 };

/* ---- the record codec ---- */

static void put_seg_header(uint8_t *seg, uint64_t seq)
{
	struct store_tlog_seg s = { 0, 0, seq, WALL0 };
	store_tlog_seg_encode(&s, seg);
}

static void t_rec_roundtrip(void **state)
{
	(void)state;
	static uint8_t seg[96 * KiB], big_topic[65535], big_payload[20000];
	struct grec g;
	gen(5, -7, 0, &g);
	memset(big_topic, 't', sizeof big_topic);
	for (size_t i = 0; i < sizeof big_payload; i++)
		big_payload[i] = (uint8_t)i;
	/* edge sizes: id 1 and 255, topic 1 and 65535, payload 0, 1, 7, 8, 20000 */
	static const struct { uint8_t id_len; uint16_t topic_len; uint32_t payload_len; } cases[] = {
		{ 1, 1, 0 }, { 255, 1, 1 }, { 1, 65535, 7 }, { 255, 65535, 8 }, { 3, 17, 20000 }, { 2, 6, 4 },
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct store_tlog_rec r = g.r;
		static uint8_t id[255];
		memset(id, 'i', sizeof id);
		r.id = id;
		r.id_len = cases[i].id_len;
		r.topic = big_topic;
		r.topic_len = cases[i].topic_len;
		r.payload = cases[i].payload_len ? big_payload : NULL;
		r.payload_len = cases[i].payload_len;
		r.qos = (uint8_t)(i % 3);
		r.id_kind = (uint8_t)(i % 2);
		r.wall_ms = i ? INT64_MIN + (int64_t)i : INT64_MAX;
		r.mono_ns = UINT64_MAX - i;
		size_t want = (size_t)(8u + 28u + r.id_len + r.topic_len + r.payload_len + 7u) / 8u * 8u;
		assert_int_equal(store_tlog_rec_size(&r), want);
		memset(seg, 0xee, sizeof seg);
		put_seg_header(seg, 77);
		assert_int_equal(store_tlog_rec_encode(&r, 77, seg + 64, want - 1), 0); /* too small */
		assert_int_equal(seg[64], 0xee);
		assert_int_equal(store_tlog_rec_encode(&r, 77, seg + 64, sizeof seg - 64), want);
		/* the bytes of DISK-FORMAT.md */
		uint32_t body = (uint32_t)(28u + r.id_len + r.topic_len + r.payload_len);
		assert_int_equal(ld_le32(seg + 64), body);
		uint8_t salt[8];
		st_le64(salt, 77);
		assert_int_equal(ld_le32(seg + 68), crc32c(crc32c(0, salt, 8), seg + 72, body));
		assert_int_equal((int64_t)ld_le64(seg + 72), r.wall_ms);
		assert_int_equal(ld_le64(seg + 80), r.mono_ns);
		assert_int_equal(seg[88], r.qos);
		assert_int_equal(seg[89], r.id_kind);
		assert_int_equal(seg[90], r.id_len);
		assert_int_equal(seg[91], 0);
		assert_int_equal(ld_le16(seg + 92), r.topic_len);
		assert_int_equal(ld_le16(seg + 94), 0);
		assert_int_equal(ld_le32(seg + 96), r.payload_len);
		for (size_t k = 64 + 8 + body; k < 64 + want; k++)
			assert_int_equal(seg[k], 0); /* padding */
		memset(seg + 64 + want, 0, 8); /* then the end of the data */
		struct store_tlog_cursor c;
		struct store_tlog_rec back;
		assert_int_equal(store_tlog_cursor_init(&c, seg, sizeof seg, 512), 0);
		assert_int_equal(c.seq, 77);
		assert_int_equal(store_tlog_cursor_next(&c, &back), 1);
		assert_int_equal(back.wall_ms, r.wall_ms);
		assert_int_equal(back.mono_ns, r.mono_ns);
		assert_int_equal(back.qos, r.qos);
		assert_int_equal(back.id_kind, r.id_kind);
		assert_int_equal(back.id_len, r.id_len);
		assert_int_equal(back.topic_len, r.topic_len);
		assert_int_equal(back.payload_len, r.payload_len);
		assert_memory_equal(back.id, id, r.id_len);
		assert_memory_equal(back.topic, big_topic, r.topic_len);
		if (r.payload_len)
			assert_memory_equal(back.payload, big_payload, r.payload_len);
		assert_ptr_equal(back.id, seg + 64 + 8 + 28); /* pointers into the segment */
		assert_int_equal(store_tlog_cursor_next(&c, &back), 0);
		assert_int_equal(store_tlog_cursor_next(&c, &back), 0); /* stays at the end */
		assert_true(c.done);
		assert_int_equal(c.records, 1);
		assert_int_equal(c.off, 64 + want);
		/* another segment's salt: nothing */
		put_seg_header(seg, 78);
		assert_int_equal(store_tlog_cursor_init(&c, seg, sizeof seg, 512), 0);
		assert_int_equal(store_tlog_cursor_next(&c, &back), 0);
		assert_int_equal(c.records, 0);
	}
	/* encode refuses every rule broken */
	uint8_t out[1024];
	struct store_tlog_rec r;
	static const char *const what[] = { "qos 3", "id_kind 2", "id_len 0", "id NULL", "topic_len 0", "topic NULL",
					    "payload NULL" };
	for (int k = 0; k < 7; k++) {
		r = g.r;
		switch (k) {
		case 0: r.qos = 3; break;
		case 1: r.id_kind = 2; break;
		case 2: r.id_len = 0; break;
		case 3: r.id = NULL; break;
		case 4: r.topic_len = 0; break;
		case 5: r.topic = NULL; break;
		case 6: r.payload = NULL; r.payload_len = 3; break;
		}
		if (store_tlog_rec_encode(&r, 1, out, sizeof out) != 0)
			fail_msg("encoded a record with %s", what[k]);
	}
	assert_int_equal(store_tlog_rec_encode(NULL, 1, out, sizeof out), 0);
	assert_int_equal(store_tlog_rec_encode(&g.r, 1, NULL, sizeof out), 0);
	assert_int_equal(store_tlog_rec_size(NULL), 0);
}

/* A record with a valid CRC but a field broken: the data ends there. */
static void t_rec_decode_rejections(void **state)
{
	(void)state;
	static uint8_t seg[4 * KiB];
	struct grec g;
	gen(9, WALL0, 10, &g);
	size_t n = store_tlog_rec_size(&g.r);
	static const char *const what[] = { "qos", "id_kind", "id_len 0", "reserved u8", "topic_len 0", "reserved u16",
					    "payload longer", "payload shorter", "length below 28", "length past end" };
	for (int k = 0; k < 10; k++) {
		memset(seg, 0, sizeof seg);
		put_seg_header(seg, 3);
		/* a good record first, the broken one second */
		assert_int_equal(store_tlog_rec_encode(&g.r, 3, seg + 64, n), n);
		uint8_t *rec = seg + 64 + n;
		assert_int_equal(store_tlog_rec_encode(&g.r, 3, rec, n), n);
		uint8_t *body = rec + 8;
		uint32_t len = ld_le32(rec);
		switch (k) {
		case 0: body[16] = 3; break;
		case 1: body[17] = 2; break;
		case 2: body[18] = 0; break;
		case 3: body[19] = 1; break;
		case 4: st_le16(body + 20, 0); break;
		case 5: st_le16(body + 22, 1); break;
		case 6: st_le32(body + 24, 11); break;
		case 7: st_le32(body + 24, 9); break;
		case 8: len = 27; st_le32(rec, len); break;
		case 9: len = (uint32_t)(sizeof seg - 64 - n); st_le32(rec, len); break;
		}
		if (len <= sizeof seg - 64 - n - 8)
			st_le32(rec + 4, crc32c(crc32c(0, (const uint8_t[]){ 3, 0, 0, 0, 0, 0, 0, 0 }, 8), body, len));
		struct store_tlog_cursor c;
		struct store_tlog_rec r;
		assert_int_equal(store_tlog_cursor_init(&c, seg, sizeof seg, 512), 0);
		assert_int_equal(store_tlog_cursor_next(&c, &r), 1);
		if (store_tlog_cursor_next(&c, &r) != 0)
			fail_msg("accepted a record with %s", what[k]);
		assert_int_equal(c.records, 1);
		assert_int_equal(c.off, 64 + n);
	}
	/* the cursor's own refusals */
	struct store_tlog_cursor c;
	memset(seg, 0, sizeof seg);
	assert_int_equal(store_tlog_cursor_init(&c, seg, sizeof seg, 512), -E_CORRUPT);
	put_seg_header(seg, 3);
	assert_int_equal(store_tlog_cursor_init(&c, seg, sizeof seg, 1000), -E_INVAL);
	assert_int_equal(store_tlog_cursor_init(&c, seg, 63, 512), -E_CORRUPT);
	assert_int_equal(store_tlog_cursor_init(&c, NULL, 64, 512), -E_INVAL);
	struct store_tlog_rec r;
	assert_int_equal(store_tlog_cursor_next(&c, &r), 0);
}

/* Skip markers: a write-out's padding; a marker of another offset, another segment or a
 * hole of zeros ends the data, so does a zero at a sector start. */
static void t_skip_markers(void **state)
{
	(void)state;
	static uint8_t seg[4 * KiB];
	struct grec g;
	gen(4, WALL0, 30, &g);
	size_t n = store_tlog_rec_size(&g.r);
	for (int k = 0; k < 5; k++) {
		memset(seg, 0, sizeof seg);
		put_seg_header(seg, 11);
		assert_int_equal(store_tlog_rec_encode(&g.r, 11, seg + 64, n), n);
		uint32_t end = (uint32_t)(64 + n);
		uint8_t b[4];
		st_le32(b, end);
		uint32_t mcrc = crc32c(crc32c(0, (const uint8_t[]){ 11, 0, 0, 0, 0, 0, 0, 0 }, 8), b, 4);
		if (k == 1)
			mcrc ^= 1; /* another offset or segment */
		if (k != 2)    /* 2: a hole of zeros */
			st_le32(seg + end + 4, mcrc);
		/* the next sector: another record (k 3: not there, a zero at the sector start) */
		if (k != 3)
			assert_int_equal(store_tlog_rec_encode(&g.r, 11, seg + 512, n), n);
		if (k == 4) /* the marker is for a sector's end only: a zero at 512 + n + ... */
			memset(seg + 1024, 0, 8);
		struct store_tlog_cursor c;
		struct store_tlog_rec r;
		assert_int_equal(store_tlog_cursor_init(&c, seg, sizeof seg, 512), 0);
		assert_int_equal(store_tlog_cursor_next(&c, &r), 1);
		int want = (k == 0 || k == 4) ? 1 : 0;
		assert_int_equal(store_tlog_cursor_next(&c, &r), want);
		if (want) {
			assert_ptr_equal(r.id, seg + 512 + 8 + 28);
			assert_int_equal(c.skipped_bytes, 512 - end);
		}
		assert_int_equal(store_tlog_cursor_next(&c, &r), 0);
	}
	/* a segment cut short (len not a sector multiple): never read past len */
	memset(seg, 0, sizeof seg);
	put_seg_header(seg, 11);
	assert_int_equal(store_tlog_rec_encode(&g.r, 11, seg + 64, n), n);
	struct store_tlog_cursor c;
	struct store_tlog_rec r;
	size_t body_end = 64 + 8 + ld_le32(seg + 64);
	assert_int_equal(store_tlog_cursor_init(&c, seg, body_end - 1, 512), 0);
	assert_int_equal(store_tlog_cursor_next(&c, &r), 0);
	assert_int_equal(store_tlog_cursor_init(&c, seg, body_end, 512), 0);
	assert_int_equal(store_tlog_cursor_next(&c, &r), 1);
	assert_int_equal(store_tlog_cursor_next(&c, &r), 0);
}

/* ---- headers, hints, segment headers ---- */

static void t_headers(void **state)
{
	(void)state;
	static uint8_t buf[4096];
	struct store_tlog_geom g = { .partitions = 3, .segment_bytes = 64 * KiB, .segments = 5, .sector = 4096,
				     .region_bytes = 4u << 20 }, back;
	memset(buf, 0xee, sizeof buf);
	store_tlog_hdr_encode(&g, buf);
	assert_memory_equal(buf, "URMQTLRH", 8);
	assert_int_equal(ld_le32(buf + 8), 1);
	assert_int_equal(ld_le32(buf + 12), 64);
	assert_int_equal(ld_le32(buf + 16), 4096);
	assert_int_equal(ld_le32(buf + 20), 3);
	assert_int_equal(ld_le32(buf + 24), 64 * KiB);
	assert_int_equal(ld_le32(buf + 28), 5);
	for (int i = 32; i < 60; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(ld_le32(buf + 60), crc32c(0, buf, 60));
	for (int i = 64; i < 4096; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(store_tlog_hdr_decode(buf, sizeof buf, 4u << 20, 4096, &back), 0);
	assert_memory_equal(&back, &g, sizeof g);
	assert_int_equal(store_tlog_hdr_decode(buf, sizeof buf, 4u << 20, 512, &back), 0); /* 512e device */
	assert_int_equal(store_tlog_data_off(&g), 4 * 4096);
	assert_int_equal(store_tlog_slot_off(&g, 2, 3), 4 * 4096 + (2 * 5 + 3) * 64 * KiB);
	/* rejections: the region too small, a smaller sector than the device's, other versions */
	assert_int_equal(store_tlog_hdr_decode(buf, sizeof buf, 4 * 4096 + 15 * 64 * KiB - 1, 4096, &back), -E_CORRUPT);
	assert_int_equal(back.partitions, 0);
	g.sector = 512;
	store_tlog_hdr_encode(&g, buf);
	assert_int_equal(store_tlog_hdr_decode(buf, 512, 4u << 20, 4096, &back), -E_NOSYS);
	assert_int_equal(store_tlog_hdr_decode(buf, 512, 4u << 20, 1000, &back), -E_INVAL);
	static const struct { uint32_t off, value; bool fix; int want; } bad[] = {
		{ 0, 'X', true, -E_CORRUPT },  { 8, 2, false, -E_NOSYS },    { 8, 0, true, -E_NOSYS },
		{ 12, 32, true, -E_CORRUPT },  { 16, 1000, true, -E_CORRUPT }, { 20, 0, true, -E_CORRUPT },
		{ 20, 65, true, -E_CORRUPT },  { 24, 6000, true, -E_CORRUPT }, { 24, 2048, true, -E_CORRUPT },
		{ 24, 32u << 20, true, -E_CORRUPT }, { 28, 1, true, -E_CORRUPT }, { 28, 0x80000000u, true, -E_CORRUPT },
		{ 40, 1, true, -E_CORRUPT },   { 44, 1, false, -E_CORRUPT }, { 60, 0, false, -E_CORRUPT },
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		store_tlog_hdr_encode(&g, buf);
		if (bad[i].off == 0)
			buf[0] = (uint8_t)bad[i].value;
		else
			st_le32(buf + bad[i].off, bad[i].value);
		if (bad[i].fix)
			st_le32(buf + 60, crc32c(0, buf, 60));
		int err = store_tlog_hdr_decode(buf, 512, 4u << 20, 512, &back);
		if (err != bad[i].want)
			fail_msg("header case %zu (offset %u): %d", i, bad[i].off, err);
		assert_int_equal(back.segments, 0);
	}
	memset(buf, 0, sizeof buf);
	assert_int_equal(store_tlog_hdr_decode(buf, 512, 4u << 20, 512, &back), -E_NOENT);
	buf[300] = 1;
	assert_int_equal(store_tlog_hdr_decode(buf, 512, 4u << 20, 512, &back), -E_CORRUPT);
	assert_int_equal(store_tlog_hdr_decode(buf, 7, 4u << 20, 512, &back), -E_CORRUPT);

	/* hints */
	struct store_tlog_hint h = { 63, 17, UINT64_C(0x123456789abc) }, hb;
	memset(buf, 0xee, sizeof buf);
	store_tlog_hint_encode(&h, buf, 512);
	assert_memory_equal(buf, "URMQTLHI", 8);
	assert_int_equal(ld_le32(buf + 8), 63);
	assert_int_equal(ld_le32(buf + 12), 17);
	assert_int_equal(ld_le64(buf + 16), h.seq);
	assert_int_equal(ld_le32(buf + 24), 0);
	assert_int_equal(ld_le32(buf + 28), crc32c(0, buf, 28));
	for (int i = 32; i < 512; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(buf[512], 0xee);
	assert_int_equal(store_tlog_hint_decode(buf, 512, &hb), 0);
	assert_memory_equal(&hb, &h, sizeof h);
	static const struct { uint64_t value; uint32_t off; int width; } hbad[] = {
		{ 'Y', 0, 1 }, { 64, 8, 4 }, { 0, 16, 8 }, { UINT64_C(1) << 63, 16, 8 }, { 1, 24, 4 }, { 5, 28, 4 },
	};
	for (size_t i = 0; i < ARRAY_LEN(hbad); i++) {
		store_tlog_hint_encode(&h, buf, 512);
		if (hbad[i].width == 1)
			buf[hbad[i].off] = (uint8_t)hbad[i].value;
		else if (hbad[i].width == 4)
			st_le32(buf + hbad[i].off, (uint32_t)hbad[i].value);
		else
			st_le64(buf + hbad[i].off, hbad[i].value);
		if (hbad[i].off != 28)
			st_le32(buf + 28, crc32c(0, buf, 28));
		assert_int_equal(store_tlog_hint_decode(buf, 512, &hb), -E_CORRUPT);
	}
	store_tlog_hint_encode(&h, buf, 512);
	assert_int_equal(store_tlog_hint_decode(buf, 31, &hb), -E_CORRUPT);
	memset(buf, 0, 512);
	assert_int_equal(store_tlog_hint_decode(buf, 512, &hb), -E_NOENT);

	/* segment headers */
	struct store_tlog_seg s = { 5, 9, 1234567, -99 }, sb;
	memset(buf, 0xee, sizeof buf);
	store_tlog_seg_encode(&s, buf);
	assert_memory_equal(buf, "URMQTLSG", 8);
	assert_int_equal(ld_le32(buf + 8), 5);
	assert_int_equal(ld_le32(buf + 12), 9);
	assert_int_equal(ld_le64(buf + 16), 1234567);
	assert_int_equal((int64_t)ld_le64(buf + 24), -99);
	for (int i = 32; i < 60; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(ld_le32(buf + 60), crc32c(0, buf, 60));
	assert_int_equal(buf[64], 0xee);
	assert_int_equal(store_tlog_seg_decode(buf, 64, &sb), 0);
	assert_memory_equal(&sb, &s, sizeof s);
	static const struct { uint64_t value; uint32_t off; int width; } sbad[] = {
		{ 'Z', 1, 1 }, { 64, 8, 4 }, { 0, 16, 8 }, { UINT64_MAX, 16, 8 }, { 1, 40, 1 }, { 5, 60, 4 },
	};
	for (size_t i = 0; i < ARRAY_LEN(sbad); i++) {
		store_tlog_seg_encode(&s, buf);
		if (sbad[i].width == 1)
			buf[sbad[i].off] = (uint8_t)sbad[i].value;
		else if (sbad[i].width == 4)
			st_le32(buf + sbad[i].off, (uint32_t)sbad[i].value);
		else
			st_le64(buf + sbad[i].off, sbad[i].value);
		if (sbad[i].off != 60)
			st_le32(buf + 60, crc32c(0, buf, 60));
		assert_int_equal(store_tlog_seg_decode(buf, 64, &sb), -E_CORRUPT);
	}
	store_tlog_seg_encode(&s, buf);
	assert_int_equal(store_tlog_seg_decode(buf, 63, &sb), -E_CORRUPT);
	memset(buf, 0, 64);
	assert_int_equal(store_tlog_seg_decode(buf, 64, &sb), -E_NOENT);
}

static void t_plan(void **state)
{
	(void)state;
	struct store_tlog_geom g;
	/* 64 MiB, 4 partitions of 1 MiB segments: S kept, N = (64 MiB - 5 x 4096) / 4 / 1 MiB */
	assert_int_equal(store_tlog_plan(64u << 20, 4096, 4, 1u << 20, &g), 0);
	assert_int_equal(g.segment_bytes, 1u << 20);
	assert_int_equal(g.segments, 15);
	assert_int_equal(g.partitions, 4);
	assert_int_equal(g.sector, 4096);
	assert_int_equal(g.region_bytes, 64u << 20);
	/* 1 MiB, 2 partitions: S lowered to the largest sector multiple giving 4 segments */
	assert_int_equal(store_tlog_plan(1u << 20, 512, 2, 1u << 20, &g), 0);
	assert_int_equal(g.segment_bytes, ((1u << 20) - 3 * 512) / 2 / 4 / 512 * 512);
	assert_int_equal(g.segments, 4);
	/* the smallest region for 64 KiB: P x 4 x 64 KiB after the header area */
	uint64_t min = 3 * 512 + 2 * 4 * 64 * KiB;
	assert_int_equal(store_tlog_plan(min, 512, 2, 1u << 20, &g), 0);
	assert_int_equal(g.segment_bytes, 64 * KiB);
	assert_int_equal(g.segments, 4);
	assert_int_equal(store_tlog_plan(min - 512, 512, 2, 1u << 20, &g), -E_RANGE);
	assert_int_equal(g.segments, 0);
	/* a wanted S below 64 KiB is its own floor */
	assert_int_equal(store_tlog_plan(3 * 512 + 2 * 4 * 8 * KiB, 512, 2, 8 * KiB, &g), 0);
	assert_int_equal(g.segment_bytes, 8 * KiB);
	assert_int_equal(store_tlog_plan(3 * 512 + 2 * 4 * 8 * KiB - 1, 512, 2, 8 * KiB, &g), -E_RANGE);
	assert_int_equal(store_tlog_plan(1000, 512, 2, 8 * KiB, &g), -E_RANGE);
	/* a huge region: N capped, never overflowing */
	assert_int_equal(store_tlog_plan(UINT64_MAX, 512, 1, 4096, &g), 0);
	assert_int_equal(g.segments, INT32_MAX);
	/* refusals */
	assert_int_equal(store_tlog_plan(1u << 30, 1000, 2, 64 * KiB, &g), -E_INVAL);
	assert_int_equal(store_tlog_plan(1u << 30, 512, 0, 64 * KiB, &g), -E_INVAL);
	assert_int_equal(store_tlog_plan(1u << 30, 512, 65, 64 * KiB, &g), -E_INVAL);
	assert_int_equal(store_tlog_plan(1u << 30, 4096, 2, 6 * KiB, &g), -E_INVAL);
	assert_int_equal(store_tlog_plan(1u << 30, 512, 2, 2 * KiB, &g), -E_INVAL);
	assert_int_equal(store_tlog_plan(1u << 30, 512, 2, 32u << 20, &g), -E_INVAL);
	assert_int_equal(store_tlog_plan(1u << 30, 512, 2, 64 * KiB, NULL), -E_INVAL);
}

/* ---- the writer ---- */

static void t_format_fresh(void **state)
{
	(void)state;
	static const struct spec specs[] = {
		{ .bs = 512, .parts = 3, .seg = 8 * KiB, .n = 4 },
		{ .bs = 512, .pbs = 4096, .parts = 2, .seg = 16 * KiB, .n = 5 },
		{ .bs = 4096, .parts = 1, .seg = 64 * KiB, .n = 4 },
	};
	for (size_t i = 0; i < ARRAY_LEN(specs); i++) {
		struct fx *x = fx_new(&specs[i]);
		fx_open(x);
		const struct store_tlog_geom *g = store_tlog_geometry(x->t);
		assert_int_equal(g->partitions, specs[i].parts);
		assert_int_equal(g->segment_bytes, specs[i].seg);
		assert_int_equal(g->segments, specs[i].n);
		assert_int_equal(g->sector, spec_sector(&specs[i]));
		struct fake_blk_counts c = fx_counts(x);
		assert_int_equal(c.writes, specs[i].parts + 1); /* hints, then the header */
		assert_int_equal(c.flushes, 0);
		assert_int_equal(c.reads, 1);
		struct store_tlog_geom dg = fx_geom(x);
		assert_memory_equal(&dg, g, sizeof dg);
		for (uint32_t p = 0; p < specs[i].parts; p++) {
			struct store_tlog_hint h = fx_hint(x, p);
			assert_int_equal(h.partition, p);
			assert_int_equal(h.slot, 0);
			assert_int_equal(h.seq, (uint64_t)WALL0 << 10);
		}
		/* opened again: recovered, nothing found, the next segment announced */
		fx_open(x);
		assert_int_equal(store_tlog_stats(x->t)->recovered_records, 0);
		assert_int_equal(store_tlog_stats(x->t)->hints_rebuilt, 0);
		for (uint32_t p = 0; p < specs[i].parts; p++)
			assert_int_equal(fx_hint(x, p).seq, ((uint64_t)WALL0 << 10) + 2);
		fx_free(x);
	}
	/* an unknown clock starts at sequence 1 */
	struct fx *x = fx_new(&spec_small);
	assert_int_equal(fx_open_at(x, 0), 0);
	assert_int_equal(fx_hint(x, 1).seq, 1);
	fx_free(x);
}

static void t_header_refused(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++) {
		struct fx *x = fx_new(&spec_small);
		fx_open(x);
		struct fx *y = fx_copy(x);
		uint8_t hdr[512];
		memcpy(hdr, fx_region(y), sizeof hdr);
		int want = -E_CORRUPT;
		if (k == 0) {
			st_le32(hdr + 8, 2); /* version 2, its CRC elsewhere */
			want = -E_NOSYS;
		} else if (k == 1) {
			hdr[33] = 1; /* a reserved byte: CRC fails */
		} else if (k == 2) {
			st_le32(hdr + 28, 1000); /* N too big for the region, CRC fixed */
			st_le32(hdr + 60, crc32c(0, hdr, 60));
		} else {
			hdr[0] = 'x';
		}
		fake_blk_set(y->fb, region_off(y), hdr, sizeof hdr);
		struct fake_blk_counts before = fx_counts(y);
		assert_int_equal(fx_open_at(y, WALL0), want);
		assert_null(y->t);
		struct fake_blk_counts after = fx_counts(y);
		assert_int_equal(after.writes, before.writes);
		assert_int_equal(after.blocks_written, before.blocks_written);
		fx_free(y);
		fx_free(x);
	}
}

/* Records of both partitions round trip; no write-out rewrites a data sector written by an
 * earlier one; no write-out flushes (one segment start per caller flush). */
static void t_write_read(void **state)
{
	(void)state;
	static const struct spec specs[] = {
		{ .bs = 512, .parts = 2, .seg = 16 * KiB, .n = 6 },
		{ .bs = 512, .pbs = 4096, .parts = 2, .seg = 32 * KiB, .n = 4 },
		{ .bs = 4096, .parts = 2, .seg = 64 * KiB, .n = 4 },
	};
	for (size_t i = 0; i < ARRAY_LEN(specs); i++) {
		struct fx *x = fx_new(&specs[i]);
		static struct model m;
		model_init(&m);
		fx_open(x);
		struct store_tlog_geom g = fx_geom(x);
		size_t size;
		(void)fake_blk_bytes(x->fb, &size);
		uint8_t *before = malloc(size), *ever = calloc(1, size / g.sector + 1);
		assert_non_null(before);
		assert_non_null(ever);
		uint64_t data0 = region_off(x) + store_tlog_data_off(&g);
		uint64_t data1 = data0 + (uint64_t)g.partitions * g.segments * g.segment_bytes;
		uint32_t round = 0;
		/* until a partition is about to need its first slot again (no slot reused here) */
		uint32_t segs[2] = { 0, 0 };
		static uint64_t ids[MAX_READ];
		while (segs[0] < g.segments - 1u && segs[1] < g.segments - 1u) {
			for (int k = 0; k < 7; k++)
				assert_int_equal(push(x, &m, (uint32_t)(k + round) % 2u), 0);
			memcpy(before, fake_blk_bytes(x->fb, &size), size);
			uint64_t flushes = fx_counts(x).flushes;
			assert_int_equal(do_write_out(x, &m), 0);
			/* the write-out itself: none, but for the first start after open (its hint) */
			assert_int_equal(fx_counts(x).flushes, flushes + (round == 0));
			const uint8_t *now = fake_blk_bytes(x->fb, &size);
			for (uint64_t o = data0; o < data1; o += g.sector) {
				if (memcmp(before + o, now + o, g.sector) == 0)
					continue;
				size_t s = (size_t)(o / g.sector);
				if (ever[s])
					fail_msg("round %u rewrote the sector at %llu", round, (unsigned long long)o);
				ever[s] = 1;
			}
			assert_int_equal(do_flush(x, &m), 0);
			round++;
			for (uint32_t p = 0; p < 2; p++)
				(void)read_ids(x, p, -1, ids, MAX_READ, &segs[p]);
		}
		const struct store_tlog_stats *st = store_tlog_stats(x->t);
		assert_int_equal(st->start_flushes, 1); /* the first start after open only */
		assert_int_equal(st->write_outs, round);
		assert_int_equal(st->written, m.next_id - 1);
		assert_int_equal(st->appended, m.next_id - 1);
		for (uint32_t p = 0; p < 2; p++)
			check_partition(x, &m, p, true);
		free(before);
		free(ever);
		fx_free(x);
	}
}

/* A record of pass N in a slot is never read in pass N + 1, even in a shorter segment. */
static void t_salt_rejects_earlier_pass(void **state)
{
	(void)state;
	struct spec sp = { .bs = 512, .parts = 1, .seg = 8 * KiB, .n = 4 };
	struct fx *x = fx_new(&sp);
	static struct model m;
	model_init(&m);
	fx_open(x);
	/* pass 1: fill every slot */
	while (store_tlog_stats(x->t)->segments_started < 4) {
		assert_int_equal(push(x, &m, 0), 0);
		if (m.next_id % 8 == 0) {
			assert_int_equal(do_write_out(x, &m), 0);
			assert_int_equal(do_flush(x, &m), 0);
		}
	}
	assert_int_equal(do_write_out(x, &m), 0);
	assert_int_equal(do_flush(x, &m), 0);
	/* into pass 2 until slot 0 is started again, then two records and a reopen: slot 0
	 * holds a short segment over pass 1's records */
	struct store_tlog_geom g = fx_geom(x);
	uint32_t slot0_old = 0;
	{
		struct store_tlog_cursor c;
		struct store_tlog_rec r;
		assert_int_equal(store_tlog_cursor_init(&c, fx_region(x) + store_tlog_slot_off(&g, 0, 0),
							g.segment_bytes, g.sector), 0);
		while (store_tlog_cursor_next(&c, &r) == 1)
			slot0_old++;
		assert_true(slot0_old > 10);
	}
	fx_open(x); /* the next segment starts in slot... */
	uint32_t slot = fx_hint(x, 0).slot;
	while (slot != 0) {
		for (int k = 0; k < 40; k++)
			assert_int_equal(push(x, &m, 0), 0);
		assert_int_equal(do_write_out(x, &m), 0);
		assert_int_equal(do_flush(x, &m), 0);
		fx_open(x);
		slot = fx_hint(x, 0).slot;
	}
	uint64_t first_new = m.next_id;
	assert_int_equal(push(x, &m, 0), 0);
	assert_int_equal(push(x, &m, 0), 0);
	assert_int_equal(do_write_out(x, &m), 0);
	assert_int_equal(do_flush(x, &m), 0);
	fx_open(x);
	assert_int_equal(store_tlog_stats(x->t)->recovered_records, 2);
	/* slot 0 now: the two new records, then pass 1's bytes that no longer validate */
	struct store_tlog_cursor c;
	struct store_tlog_rec r;
	const uint8_t *seg = fx_region(x) + store_tlog_slot_off(&g, 0, 0);
	assert_int_equal(store_tlog_cursor_init(&c, seg, g.segment_bytes, g.sector), 0);
	assert_int_equal(store_tlog_cursor_next(&c, &r), 1);
	assert_int_equal(r.mono_ns, first_new);
	assert_int_equal(store_tlog_cursor_next(&c, &r), 1);
	assert_int_equal(r.mono_ns, first_new + 1);
	assert_int_equal(store_tlog_cursor_next(&c, &r), 0);
	assert_true(c.off <= 1024);
	bool old_bytes = false; /* an old record really is there, past what the writer wrote */
	for (size_t o = 1024; o + 4 < g.segment_bytes && !old_bytes; o += 8)
		old_bytes = ld_le32(seg + o) != 0;
	assert_true(old_bytes);
	check_partition(x, &m, 0, false);
	fx_free(x);
}

/* Ten records in one write-out, flushed; then the last record torn from every byte on
 * (zeros or garbage), and the write-out's last sector torn: what validates is kept, the
 * writer continues. */
static void t_torn_tail(void **state)
{
	(void)state;
	struct spec sp = { .bs = 512, .parts = 1, .seg = 8 * KiB, .n = 4 };
	struct fx *x = fx_new(&sp);
	static struct model m;
	model_init(&m);
	fx_open(x);
	for (int k = 0; k < 10; k++)
		assert_int_equal(push(x, &m, 0), 0);
	assert_int_equal(do_write_out(x, &m), 0);
	assert_int_equal(do_flush(x, &m), 0);
	struct store_tlog_geom g = fx_geom(x);
	uint32_t slot = 0;
	uint64_t seg_off = region_off(x) + store_tlog_slot_off(&g, 0, slot);
	size_t size;
	const uint8_t *seg = fake_blk_bytes(x->fb, &size) + seg_off;
	size_t starts[11], ends[11];
	struct store_tlog_cursor c;
	struct store_tlog_rec r;
	assert_int_equal(store_tlog_cursor_init(&c, seg, g.segment_bytes, g.sector), 0);
	for (int k = 0; k < 10; k++) {
		starts[k] = c.off;
		assert_int_equal(store_tlog_cursor_next(&c, &r), 1);
		ends[k] = starts[k] + 8 + ld_le32(seg + starts[k]); /* the body's end */
	}
	assert_int_equal(store_tlog_cursor_next(&c, &r), 0);
	size_t last_end = (ends[9] + g.sector - 1) / g.sector * g.sector;
	assert_true(last_end >= (size_t)3 * g.sector); /* the write-out spans several sectors */
	static uint8_t fill[8 * KiB];
	for (int mode = 0; mode < 2; mode++) {
		memset(fill, mode ? 0xa5 : 0, sizeof fill);
		for (size_t i = starts[9]; i < ends[9] + 8 && i < last_end; i++) {
			struct fx *y = fx_copy(x);
			fake_blk_set(y->fb, seg_off + i, fill, last_end - i);
			fx_open(y);
			uint64_t want = i < ends[9] ? 9 : 10;
			assert_int_equal(store_tlog_stats(y->t)->recovered_records, want);
			assert_int_equal(store_tlog_stats(y->t)->cut_bytes, g.segment_bytes - (want == 9 ? starts[9] :
											 (ends[9] + 7) / 8 * 8));
			static uint64_t ids[64];
			assert_int_equal(read_ids(y, 0, -1, ids, 64, NULL), want);
			/* the writer goes on after it */
			static struct model m2;
			memcpy(&m2, &m, sizeof m2);
			if (want == 9)
				m2.state[10] = ST_LOST;
			for (int k = 0; k < 3; k++)
				assert_int_equal(push(y, &m2, 0), 0);
			assert_int_equal(do_write_out(y, &m2), 0);
			assert_int_equal(do_flush(y, &m2), 0);
			assert_int_equal(check_partition(y, &m2, 0, true), want + 3);
			fx_free(y);
		}
		/* the last sector torn: the records wholly before it stay */
		struct fx *y = fx_copy(x);
		fake_blk_set(y->fb, seg_off + last_end - g.sector, fill, g.sector);
		fx_open(y);
		uint64_t want = 0;
		while (want < 10 && ends[want] <= last_end - g.sector)
			want++;
		assert_int_equal(store_tlog_stats(y->t)->recovered_records, want);
		fx_free(y);
	}
	fx_free(x);
}

/* ---- power cuts ---- */

/* Rounds of appends to both partitions, each written out and flushed; then, optionally,
 * the writer opened again without a flush after it (its hints unflushed). */
static void history(struct fx *x, struct model *m, bool reopen)
{
	fx_open(x);
	for (int round = 0; round < 3; round++) {
		for (int k = 0; k < 25; k++)
			assert_int_equal(push(x, m, (uint32_t)k % 2u), 0);
		assert_int_equal(do_write_out(x, m), 0);
		assert_int_equal(do_flush(x, m), 0);
	}
	if (reopen)
		fx_open(x);
}

/* Two batches, each more than a buffer holds (so push writes out too: several segment
 * starts without the caller's flush between), then the caller's flush. Errors are
 * expected once the device died. */
static void final_step(struct fx *x, struct model *m)
{
	for (int b = 0; b < 2; b++) {
		for (int k = 0; k < 100; k++) {
			if (push(x, m, k % 3 == 0 ? 1u : 0u)) /* died in a write-out of push */
				return;
		}
		if (do_write_out(x, m))
			return;
	}
	(void)do_flush(x, m);
}

static void cut_case(const struct spec *sp, bool reopen, uint32_t n_seeds, uint32_t *cases)
{
	static struct model m;
	struct fx *x = fx_new(sp);
	model_init(&m);
	history(x, &m, reopen);
	uint64_t r0 = fx_counts(x).requests;
	final_step(x, &m);
	uint64_t n_req = fx_counts(x).requests - r0;
	/* several starts in it, at least one needing the writer's own flush (invariant 4) */
	assert_true(store_tlog_stats(x->t)->segments_started >= 3);
	assert_true(store_tlog_stats(x->t)->start_flushes >= 1);
	fx_free(x);
	assert_true(n_req >= 6);
	for (uint64_t k = 0; k < n_req; k++)
		for (uint64_t seed = 1; seed <= n_seeds; seed++) {
			x = fx_new(sp);
			model_init(&m);
			history(x, &m, reopen);
			fake_blk_die_at(x->fb, fx_counts(x).requests + k, seed);
			final_step(x, &m);
			assert_true(fake_blk_dead(x->fb));
			struct fx *y = fx_after_cut(x, seed * 7919u + k);
			model_cut(&m);
			fx_open(y);
			uint64_t announced[2];
			for (uint32_t p = 0; p < sp->parts; p++) {
				check_partition(y, &m, p, true);
				announced[p] = fx_hint(y, p).seq;
			}
			/* and it goes on, in segments that never validate what the crash left */
			for (int j = 0; j < 30; j++)
				assert_int_equal(push(y, &m, (uint32_t)j % 2u), 0);
			assert_int_equal(do_write_out(y, &m), 0);
			assert_int_equal(do_flush(y, &m), 0);
			for (uint32_t p = 0; p < sp->parts; p++) {
				check_partition(y, &m, p, true);
				assert_no_leftovers(y, p, announced[p], NULL);
			}
			(*cases)++;
			fx_free(y);
			fx_free(x);
		}
}

static void t_power_cut_write_out(void **state)
{
	(void)state;
	static const struct spec specs[] = {
		{ .bs = 512, .parts = 2, .seg = 8 * KiB, .n = 12 },
		{ .bs = 512, .pbs = 4096, .parts = 2, .seg = 16 * KiB, .n = 8 },
	};
	uint32_t cases = 0;
	for (size_t i = 0; i < ARRAY_LEN(specs); i++) {
		cut_case(&specs[i], false, 3, &cases);
		cut_case(&specs[i], true, 3, &cases);
	}
	assert_true(cases > 100);
}

/* A cut at every request of an open (its reads and announced hints), then open again. */
static void t_power_cut_open(void **state)
{
	(void)state;
	static struct model m;
	struct fx *x = fx_new(&spec_small);
	model_init(&m);
	history(x, &m, false);
	uint64_t r0 = fx_counts(x).requests;
	fx_open(x);
	uint64_t n_req = fx_counts(x).requests - r0;
	fx_free(x);
	assert_int_equal(n_req, 1 + 2 * 5); /* header; per partition hint, 2 headers, segment, hint */
	for (uint64_t k = 0; k < n_req; k++)
		for (uint64_t seed = 1; seed <= 4; seed++) {
			x = fx_new(&spec_small);
			model_init(&m);
			history(x, &m, false);
			fake_blk_die_at(x->fb, fx_counts(x).requests + k, seed);
			assert_int_equal(fx_open_at(x, WALL0), -E_IO);
			struct fx *y = fx_after_cut(x, seed + k * 31u);
			model_cut(&m);
			fx_open(y);
			for (int j = 0; j < 30; j++)
				assert_int_equal(push(y, &m, (uint32_t)j % 2u), 0);
			assert_int_equal(do_write_out(y, &m), 0);
			assert_int_equal(do_flush(y, &m), 0);
			for (uint32_t p = 0; p < 2; p++)
				check_partition(y, &m, p, true);
			fx_free(y);
			fx_free(x);
		}
}

/* ---- stale hint, lost header ---- */

/* Partition 0 written until a second segment started, every write-out flushed. */
static void two_segments(struct fx *x, struct model *m, uint8_t hint_before[512])
{
	fx_open(x);
	struct store_tlog_geom g = fx_geom(x);
	while (store_tlog_stats(x->t)->segments_started < 2) {
		memcpy(hint_before, fx_region(x) + g.sector, 512);
		for (int k = 0; k < 9; k++)
			assert_int_equal(push(x, m, 0), 0);
		assert_int_equal(do_write_out(x, m), 0);
		assert_int_equal(do_flush(x, m), 0);
	}
}

static void t_stale_hint(void **state)
{
	(void)state;
	static struct model m;
	struct spec sp = { .bs = 512, .parts = 1, .seg = 8 * KiB, .n = 5 };
	struct fx *x = fx_new(&sp);
	model_init(&m);
	uint8_t old_hint[512];
	two_segments(x, &m, old_hint);
	struct store_tlog_hint now = fx_hint(x, 0);
	assert_int_equal(now.slot, 1);
	/* the second segment's hint write lost, its header kept */
	struct fx *y = fx_copy(x);
	fake_blk_set(y->fb, region_off(y) + 512, old_hint, 512);
	struct store_tlog_hint stale = fx_hint(y, 0);
	assert_int_equal(stale.slot, 0);
	assert_int_equal(stale.seq, now.seq - 1);
	struct fake_blk_counts c0 = fx_counts(y);
	fx_open(y);
	struct fake_blk_counts c1 = fx_counts(y);
	assert_int_equal(c1.reads - c0.reads, 1 + 1 + 2 + 1);
	/* the newer header found: its records counted, the next segment after it */
	struct store_tlog_hint next = fx_hint(y, 0);
	assert_int_equal(next.slot, 2);
	assert_int_equal(next.seq, now.seq + 2);
	uint32_t n_segs;
	static uint64_t ids[MAX_READ];
	size_t n = read_ids(y, 0, -1, ids, MAX_READ, &n_segs);
	assert_int_equal(n_segs, 2);
	assert_true(store_tlog_stats(y->t)->recovered_records > 0 && store_tlog_stats(y->t)->recovered_records < n);
	for (int k = 0; k < 9; k++)
		assert_int_equal(push(y, &m, 0), 0);
	assert_int_equal(do_write_out(y, &m), 0);
	assert_int_equal(do_flush(y, &m), 0);
	check_partition(y, &m, 0, true);
	struct store_tlog_seg s;
	struct store_tlog_geom g = fx_geom(y);
	assert_int_equal(store_tlog_seg_decode(fx_region(y) + store_tlog_slot_off(&g, 0, 2), 64, &s), 0);
	assert_int_equal(s.seq, now.seq + 2);
	fx_free(y);
	fx_free(x);
}

static void t_lost_header(void **state)
{
	(void)state;
	static struct model m;
	struct spec sp = { .bs = 512, .parts = 1, .seg = 8 * KiB, .n = 5 };
	struct fx *x = fx_new(&sp);
	model_init(&m);
	uint8_t old_hint[512];
	two_segments(x, &m, old_hint);
	struct store_tlog_hint now = fx_hint(x, 0);
	struct store_tlog_geom g = fx_geom(x);
	/* the second segment's first sector lost (header and first records), the hint kept;
	 * its later sectors, salted with its sequence, are still there */
	struct fx *y = fx_copy(x);
	static const uint8_t zero[512];
	fake_blk_set(y->fb, region_off(y) + store_tlog_slot_off(&g, 0, now.slot), zero, 512);
	fx_open(y);
	assert_int_equal(store_tlog_stats(y->t)->recovered_records, 0);
	struct store_tlog_hint next = fx_hint(y, 0);
	assert_int_equal(next.slot, now.slot); /* its slot is used again */
	assert_int_equal(next.seq, now.seq + 2); /* with a sequence of its own */
	static uint64_t ids[MAX_READ];
	uint32_t n_segs;
	size_t n_before = read_ids(y, 0, -1, ids, MAX_READ, &n_segs);
	assert_int_equal(n_segs, 1);
	uint64_t last_kept = ids[n_before - 1];
	for (uint64_t id = last_kept + 1; id < m.next_id; id++)
		m.state[id] = ST_LOST; /* the test's own damage */
	static struct model m0;
	memcpy(&m0, &m, sizeof m0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(push(y, &m, 0), 0);
	assert_int_equal(do_write_out(y, &m), 0);
	assert_int_equal(do_flush(y, &m), 0);
	/* only the new records follow the first segment's: the old sequence's do not validate */
	size_t n = check_partition(y, &m, 0, true);
	assert_int_equal(n, n_before + 3);
	assert_int_equal(ids[n_before - 1], last_kept);
	assert_no_leftovers(y, 0, 1, NULL);
	fx_free(y);

	/* both lost: the hint write and the header's sector (the rest of that segment kept):
	 * the first segment is the newest, and the next one, in the lost one's slot, must not
	 * take the lost one's sequence (two above the highest seen) */
	y = fx_copy(x);
	fake_blk_set(y->fb, region_off(y) + 512, old_hint, 512);
	fake_blk_set(y->fb, region_off(y) + store_tlog_slot_off(&g, 0, now.slot), zero, 512);
	fx_open(y);
	assert_int_equal(store_tlog_stats(y->t)->recovered_records, n_before);
	next = fx_hint(y, 0);
	assert_int_equal(next.slot, now.slot);
	assert_int_equal(next.seq, now.seq + 1);
	assert_int_equal(push(y, &m0, 0), 0);
	assert_int_equal(do_write_out(y, &m0), 0);
	assert_int_equal(do_flush(y, &m0), 0);
	assert_no_leftovers(y, 0, 1, NULL);
	assert_int_equal(check_partition(y, &m0, 0, true), n_before + 1);
	fx_free(y);
	fx_free(x);
}

/* ---- the ring ---- */

static void t_ring_wraps_bounded_reads(void **state)
{
	(void)state;
	static struct model m;
	struct spec sp = { .bs = 512, .parts = 2, .seg = 8 * KiB, .n = 4 };
	struct fx *x = fx_new(&sp);
	model_init(&m);
	fx_open(x);
	uint64_t open_reads = 0;
	for (int round = 0; round < 60; round++) {
		for (int k = 0; k < 70; k++)
			assert_int_equal(push(x, &m, (uint32_t)(k % 5 == 0)), 0);
		assert_int_equal(do_write_out(x, &m), 0);
		assert_int_equal(do_flush(x, &m), 0);
		if (round % 6 == 5) {
			struct fake_blk_counts c0 = fx_counts(x);
			fx_open(x);
			struct fake_blk_counts c1 = fx_counts(x);
			/* header; per partition: hint, two headers, the newest segment (one read) */
			assert_int_equal(c1.reads - c0.reads, 1 + 2 * (1 + 2 + 1));
			assert_int_equal(c1.writes - c0.writes, 2); /* the two hints */
			if (open_reads)
				assert_int_equal(c1.reads - c0.reads, open_reads);
			open_reads = c1.reads - c0.reads;
			for (uint32_t p = 0; p < 2; p++)
				check_partition(x, &m, p, false);
		}
	}
	/* wrapped many times: sequences grow by one per segment (two per open) */
	assert_true(fx_hint(x, 0).seq - ((uint64_t)WALL0 << 10) > 10u * 4u + 2u * 10u);
	uint32_t n_segs;
	static uint64_t ids[MAX_READ];
	read_ids(x, 0, -1, ids, MAX_READ, &n_segs);
	assert_int_equal(n_segs, 4);
	fx_free(x);
}

/* ---- retention ---- */

/* Partition 0: one segment per day d (records at day d), days 0..5; open after each. */
static void days(struct fx *x, struct model *m, int n_days)
{
	fx_open(x);
	for (int d = 0; d < n_days; d++) {
		for (int k = 0; k < 5; k++)
			assert_int_equal(push_wall(x, m, 0, WALL0 + d * DAY_MS + k), 0);
		assert_int_equal(do_write_out(x, m), 0);
		assert_int_equal(do_flush(x, m), 0);
		fx_open(x);
	}
}

static uint32_t retain_all(struct fx *x, int64_t now, uint32_t calls)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < calls; i++) {
		struct fake_blk_counts c0 = fx_counts(x);
		n += store_tlog_retain(x->t, now);
		struct fake_blk_counts c1 = fx_counts(x);
		assert_true(c1.reads - c0.reads <= (uint64_t)2 * x->sp.parts); /* bounded per call */
		assert_int_equal(store_tlog_check(x->t), 0);
	}
	return n;
}

static bool slot_zero(const struct fx *x, uint32_t slot)
{
	struct store_tlog_geom g = fx_geom(x);
	const uint8_t *s = fx_region(x) + store_tlog_slot_off(&g, 0, slot);
	for (uint32_t i = 0; i < g.segment_bytes; i++)
		if (s[i])
			return false;
	return true;
}

static void t_retention(void **state)
{
	(void)state;
	static struct model m;
	for (int discard = 0; discard < 2; discard++) {
		struct spec sp = { .bs = 512, .parts = 1, .seg = 8 * KiB, .n = 8, .retention_s = 2u * 86400u,
				   .discard = discard != 0 };
		struct fx *x = fx_new(&sp);
		model_init(&m);
		days(x, &m, 6);
		/* day 6: segments whose successor began before day 4 go: days 0, 1 and 2 */
		assert_int_equal(retain_all(x, WALL0 + 6 * DAY_MS, 16), 3);
		const struct store_tlog_stats *st = store_tlog_stats(x->t);
		assert_int_equal(st->expired_segments, 3);
		assert_int_equal(st->discarded_segments, discard ? 3 : 0);
		assert_int_equal(fx_counts(x).discards, discard ? 3 : 0);
		for (uint32_t s = 0; s < 6; s++)
			assert_int_equal(slot_zero(x, s), discard && s < 3);
		static uint64_t ids[MAX_READ];
		uint32_t n_segs;
		size_t n = read_ids(x, 0, -1, ids, MAX_READ, &n_segs);
		assert_int_equal(n_segs, discard ? 3 : 6);
		assert_int_equal(n, discard ? 15 : 30);
		/* a year later: everything but the newest segment */
		assert_int_equal(retain_all(x, WALL0 + 400 * DAY_MS, 16), 2);
		assert_false(slot_zero(x, 5));
		/* a pending run B for slot 6 and the newest are never touched */
		assert_int_equal(push_wall(x, &m, 0, WALL0 + 7 * DAY_MS), 0);
		assert_int_equal(retain_all(x, WALL0 + 400 * DAY_MS, 16), 0);
		assert_int_equal(do_write_out(x, &m), 0);
		assert_int_equal(do_flush(x, &m), 0);
		/* now slot 5 has a successor of day 7: it goes, slot 6 stays */
		assert_int_equal(retain_all(x, WALL0 + 400 * DAY_MS, 16), 1);
		assert_int_equal(slot_zero(x, 5), discard != 0);
		assert_false(slot_zero(x, 6));
		assert_int_equal(store_tlog_stats(x->t)->expired_segments, 6);
		check_partition(x, &m, 0, false);
		/* retention 0: by size only */
		x->cfg.retention_s = 0;
		fx_open(x);
		assert_int_equal(store_tlog_retain(x->t, WALL0 + 4000 * DAY_MS), 0);
		fx_free(x);
	}
}

/* ---- partitions, limits, errors ---- */

static void t_partitions_independent(void **state)
{
	(void)state;
	static struct model m;
	struct spec sp = { .bs = 512, .parts = 3, .seg = 8 * KiB, .n = 4 };
	struct fx *x = fx_new(&sp);
	model_init(&m);
	fx_open(x);
	for (int k = 0; k < 60; k++)
		assert_int_equal(push(x, &m, k % 2 ? 0u : 5u), 0); /* 5: partition 2 */
	assert_int_equal(do_write_out(x, &m), 0);
	assert_int_equal(do_flush(x, &m), 0);
	size_t n0 = check_partition(x, &m, 0, true), n2 = check_partition(x, &m, 2, true);
	assert_int_equal(n0 + n2, 60);
	assert_int_equal(check_partition(x, &m, 1, true), 0);
	/* partition 1's hint destroyed (it has no segment yet), then partition 0's: each is
	 * rebuilt by a scan of its four headers, the others recovered as before */
	static const uint32_t bads[2] = { 1, 0 };
	for (int i = 0; i < 2; i++) {
		uint32_t bad = bads[i];
		uint8_t junk[512];
		memset(junk, 0x5a, sizeof junk);
		fake_blk_set(x->fb, region_off(x) + (uint64_t)(bad + 1u) * 512u, junk, sizeof junk);
		struct fake_blk_counts c0 = fx_counts(x);
		fx_open(x);
		struct fake_blk_counts c1 = fx_counts(x);
		assert_int_equal(store_tlog_stats(x->t)->hints_rebuilt, 1);
		/* header; per partition: hint, 2 headers (4 when damaged), its newest segment */
		uint64_t want = 1;
		for (uint32_t p = 0; p < 3; p++)
			want += 1 + (p == bad ? 4 : 2) + (i == 0 && p == 1 ? 0 : 1);
		assert_int_equal(c1.reads - c0.reads, want);
		assert_int_equal(fx_hint(x, bad).partition, bad);
		for (uint32_t p = 0; p < 3; p++)
			check_partition(x, &m, p, true);
		for (int k = 0; k < 30; k++)
			assert_int_equal(push(x, &m, (uint32_t)k % 3u), 0);
		assert_int_equal(do_write_out(x, &m), 0);
		assert_int_equal(do_flush(x, &m), 0);
		for (uint32_t p = 0; p < 3; p++)
			check_partition(x, &m, p, true);
	}
	fx_free(x);
}

static void t_limits(void **state)
{
	(void)state;
	static struct model m;
	struct spec sp = { .bs = 512, .parts = 1, .seg = 8 * KiB, .n = 4 };
	struct fx *x = fx_new(&sp);
	model_init(&m);
	m.plen = 200;
	fx_open(x);
	/* the buffer holds min(flush_bytes, S - 64) bytes of records (copies of one here) */
	struct grec g;
	gen(1, WALL0, 200, &g);
	size_t rs = store_tlog_rec_size(&g.r);
	size_t fit = (8 * KiB - 64) / rs;
	for (size_t k = 0; k < fit; k++)
		assert_int_equal(store_tlog_append(x->t, 0, &g.r), 0);
	assert_int_equal(store_tlog_pending(x->t), fit * rs);
	assert_int_equal(store_tlog_append(x->t, 0, &g.r), -E_AGAIN);
	assert_int_equal(store_tlog_stats(x->t)->dropped_full, 1);
	assert_int_equal(do_write_out(x, &m), 0);
	assert_int_equal(store_tlog_stats(x->t)->written, fit);
	assert_int_equal(store_tlog_append(x->t, 0, &g.r), 0); /* room again */
	/* too big for a segment (and the buffer): refused, counted */
	static uint8_t payload[8 * KiB];
	struct store_tlog_rec big = g.r;
	big.payload = payload;
	big.payload_len = 8 * KiB - 64 - 8 - 28 - big.id_len - big.topic_len + 1;
	assert_int_equal(store_tlog_append(x->t, 0, &big), -E_INVAL);
	assert_int_equal(store_tlog_stats(x->t)->dropped_too_big, 1);
	big.payload_len = UINT32_MAX - 100;
	assert_int_equal(store_tlog_append(x->t, 0, &big), -E_INVAL);
	assert_int_equal(store_tlog_stats(x->t)->dropped_too_big + store_tlog_stats(x->t)->dropped_invalid, 2);
	big.qos = 3;
	big.payload_len = 1;
	assert_int_equal(store_tlog_append(x->t, 0, &big), -E_INVAL);
	assert_true(store_tlog_stats(x->t)->dropped_invalid >= 1);
	/* the largest that fits: a segment of its own */
	big = g.r;
	big.payload = payload;
	big.payload_len = 8 * KiB - 64 - 8 - 28 - big.id_len - big.topic_len;
	big.payload_len &= ~7u;
	assert_int_equal(store_tlog_append(x->t, 0, &big), -E_AGAIN); /* not with the other one */
	assert_int_equal(do_write_out(x, &m), 0);
	assert_int_equal(store_tlog_append(x->t, 0, &big), 0);
	uint64_t started = store_tlog_stats(x->t)->segments_started;
	assert_int_equal(store_tlog_write_out(x->t), 0);
	assert_int_equal(store_tlog_stats(x->t)->segments_started, started + 1);
	assert_int_equal(store_tlog_check(x->t), 0);
	fx_free(x);
}

static void t_open_refusals(void **state)
{
	(void)state;
	struct fx *x = fx_new(&spec_small);
	struct store_tlog *t = (void *)1;
	struct store_tlog_config cfg = x->cfg;
	assert_int_equal(store_tlog_open(&t, x->mem, x->mem_len, &cfg, WALL0), 0);
	/* refused before any request */
	uint64_t req = fx_counts(x).requests;
	static const char *const what[] = { "partitions 0", "partitions 65", "flush 1 KiB", "segment 5000", "no io",
					    "beyond the disk", "no blocks", "io 100" };
	for (int k = 0; k < 8; k++) {
		cfg = x->cfg;
		switch (k) {
		case 0: cfg.partitions = 0; break;
		case 1: cfg.partitions = 65; break;
		case 2: cfg.flush_bytes = 1024; break;
		case 3: cfg.segment_bytes = 5000; break;
		case 4: cfg.io = NULL; break;
		case 5: cfg.lba = x->d.blk->topo.capacity - 2; break;
		case 6: cfg.blocks = 0; break;
		case 7: cfg.io_len = 100; break;
		}
		assert_int_equal(store_tlog_mem_size(&cfg), 0);
		if (store_tlog_open(&t, x->mem, x->mem_len, &cfg, WALL0) != -E_INVAL)
			fail_msg("opened with %s", what[k]);
		assert_null(t);
	}
	assert_int_equal(store_tlog_open(&t, x->mem, x->mem_len - 1, &x->cfg, WALL0), -E_INVAL);
	assert_int_equal(store_tlog_open(&t, (uint8_t *)x->mem + 4, x->mem_len - 8, &x->cfg, WALL0), -E_INVAL);
	assert_int_equal(store_tlog_open(NULL, x->mem, x->mem_len, &x->cfg, WALL0), -E_INVAL);
	assert_int_equal(fx_counts(x).requests, req);
	/* the disk's segments bigger than io: -E_NOMEM, nothing written */
	cfg = x->cfg;
	cfg.io_len = 4096;
	cfg.segment_bytes = 4096;
	size_t len = store_tlog_mem_size(&cfg);
	assert_true(len > 0);
	uint64_t writes = fx_counts(x).writes;
	assert_int_equal(store_tlog_open(&t, x->mem, len, &cfg, WALL0), -E_NOMEM);
	assert_int_equal(fx_counts(x).writes, writes);
	/* fewer partitions in cfg than on disk: the extra ones idle, appends wrap onto the rest */
	cfg = x->cfg;
	cfg.partitions = 1;
	len = store_tlog_mem_size(&cfg);
	assert_int_equal(store_tlog_open(&t, x->mem, len, &cfg, WALL0), 0);
	assert_int_equal(store_tlog_geometry(t)->partitions, 2);
	struct grec g;
	gen(1, WALL0, 10, &g);
	assert_int_equal(store_tlog_append(t, 1, &g.r), 0);
	assert_int_equal(store_tlog_write_out(t), 0);
	assert_int_equal(store_tlog_check(t), 0);
	/* a region too small for 4 segments of 8 KiB: -E_RANGE */
	fx_free(x);
	struct spec tiny = spec_small;
	tiny.n = 3;
	x = fx_new(&tiny);
	assert_int_equal(fx_open_at(x, WALL0), -E_RANGE);
	assert_int_equal(fx_counts(x).writes, 0);
	/* a device error on the first read */
	fake_blk_fail_request(x->fb, fx_counts(x).requests, -E_IO);
	assert_int_equal(fx_open_at(x, WALL0), -E_IO);
	fx_free(x);
}

/* History, then 100 records appended and written out (push writes out too, whenever a
 * buffer is full), request k from there failing (seed 0: nothing written; else the power
 * cut then, its blocks torn), or none (k UINT64_MAX). Stops at the first error. */
static int errors_prefix(struct fx *x, struct model *m, uint64_t k, uint64_t seed)
{
	history(x, m, false);
	uint64_t at = k == UINT64_MAX ? k : fx_counts(x).requests + k;
	if (seed)
		fake_blk_die_at(x->fb, at, seed);
	else
		fake_blk_fail_request(x->fb, at, -E_IO);
	int err = 0;
	for (int j = 0; j < 100 && !err; j++)
		err = push(x, m, j % 3 ? 0u : 1u);
	if (!err)
		err = do_write_out(x, m);
	fake_blk_fail_request(x->fb, UINT64_MAX, 0);
	return err;
}

/* A write-out whose request k fails: what was pending is lost and counted, the writer goes
 * on in a new segment, and what it wrote before stays readable in order. A failed write
 * may have written any of its blocks: the test puts there what a twin's same request left
 * when torn by a power cut (a seeded subset of its sectors), so an abandoned segment may
 * hold its header and records, or records without their header. */
static void t_write_errors(void **state)
{
	(void)state;
	static struct model m;
	struct fx *x = fx_new(&spec_small);
	model_init(&m);
	(void)errors_prefix(x, &m, UINT64_MAX, 0);
	uint64_t r1 = fx_counts(x).requests;
	fx_free(x);
	model_init(&m);
	x = fx_new(&spec_small);
	history(x, &m, false);
	uint64_t n_req = r1 - fx_counts(x).requests;
	fx_free(x);
	if (n_req < 6)
		fail_msg("%llu requests", (unsigned long long)n_req);
	for (uint64_t i = 0; i < 3 * n_req; i++) {
		uint64_t k = i / 3, seed = i % 3 + 1;
		static struct model twin_m;
		struct fx *twin = fx_new(&spec_small);
		model_init(&twin_m);
		assert_int_equal(errors_prefix(twin, &twin_m, k, seed), -E_IO);
		x = fx_new(&spec_small);
		model_init(&m);
		int err = errors_prefix(x, &m, k, 0);
		assert_int_equal(err, -E_IO);
		assert_int_equal(store_tlog_stats(x->t)->write_errors, 1);
		assert_true(store_tlog_stats(x->t)->dropped_io > 0);
		size_t size;
		const uint8_t *torn = fake_blk_bytes(twin->fb, &size);
		fake_blk_set(x->fb, region_off(x), torn + region_off(x), x->cfg.blocks * x->sp.bs);
		fx_free(twin);
		uint8_t *before = malloc(x->cfg.blocks * x->sp.bs);
		assert_non_null(before);
		memcpy(before, fx_region(x), x->cfg.blocks * x->sp.bs);
		for (int j = 0; j < 2; j++) /* one record each: short new data, old bytes after it */
			assert_int_equal(push(x, &m, (uint32_t)j % 2u), 0);
		assert_int_equal(do_write_out(x, &m), 0);
		/* a power cut before the caller's flush: recovery must not use a sequence again
		 * (read_ids refuses two segments of one sequence) */
		for (uint64_t cut = 1; cut <= 4; cut++) {
			static struct model mz;
			memcpy(&mz, &m, sizeof mz);
			model_cut(&mz);
			struct fx *z = fx_after_cut(x, cut * 131u + i);
			fx_open(z);
			uint64_t announced[2];
			for (uint32_t p = 0; p < 2; p++) {
				check_partition(z, &mz, p, true);
				announced[p] = fx_hint(z, p).seq;
			}
			for (int j = 0; j < 2; j++)
				assert_int_equal(push(z, &mz, (uint32_t)j % 2u), 0);
			assert_int_equal(do_write_out(z, &mz), 0);
			assert_int_equal(do_flush(z, &mz), 0);
			for (uint32_t p = 0; p < 2; p++) {
				check_partition(z, &mz, p, true);
				assert_no_leftovers(z, p, announced[p], NULL);
			}
			fx_free(z);
		}
		assert_int_equal(do_flush(x, &m), 0);
		for (uint32_t p = 0; p < 2; p++) {
			check_partition(x, &m, p, true);
			assert_no_leftovers(x, p, 1, before);
		}
		free(before);
		for (int round = 0; round < 3; round++) {
			for (int j = 0; j < 45; j++)
				assert_int_equal(push(x, &m, (uint32_t)j % 2u), 0);
			assert_int_equal(do_write_out(x, &m), 0);
			assert_int_equal(do_flush(x, &m), 0);
		}
		for (uint32_t p = 0; p < 2; p++)
			check_partition(x, &m, p, true);
		fx_open(x);
		for (uint32_t p = 0; p < 2; p++)
			check_partition(x, &m, p, true);
		/* and a power cut right after such a failure and a restart */
		struct fx *y = fx_after_cut(x, i + 1);
		model_cut(&m);
		fx_open(y);
		for (uint32_t p = 0; p < 2; p++)
			check_partition(y, &m, p, true);
		fx_free(y);
		fx_free(x);
	}
}

/* A device without a volatile cache: the writer never flushes, everything is kept. */
static void t_no_cache(void **state)
{
	(void)state;
	static struct model m;
	struct spec sp = spec_small;
	sp.no_cache = true;
	struct fx *x = fx_new(&sp);
	model_init(&m);
	fx_open(x);
	for (int round = 0; round < 8; round++) {
		for (int j = 0; j < 40; j++)
			assert_int_equal(push(x, &m, (uint32_t)j % 2u), 0);
		assert_int_equal(do_write_out(x, &m), 0);
		assert_int_equal(do_flush(x, &m), 0);
	}
	assert_int_equal(store_tlog_stats(x->t)->start_flushes, 0);
	assert_int_equal(fx_counts(x).flushes, 0);
	fx_open(x);
	for (uint32_t p = 0; p < 2; p++)
		check_partition(x, &m, p, false);
	fx_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_rec_roundtrip),
		cmocka_unit_test(t_rec_decode_rejections),
		cmocka_unit_test(t_skip_markers),
		cmocka_unit_test(t_headers),
		cmocka_unit_test(t_plan),
		cmocka_unit_test(t_format_fresh),
		cmocka_unit_test(t_header_refused),
		cmocka_unit_test(t_write_read),
		cmocka_unit_test(t_salt_rejects_earlier_pass),
		cmocka_unit_test(t_torn_tail),
		cmocka_unit_test(t_power_cut_write_out),
		cmocka_unit_test(t_power_cut_open),
		cmocka_unit_test(t_stale_hint),
		cmocka_unit_test(t_lost_header),
		cmocka_unit_test(t_ring_wraps_bounded_reads),
		cmocka_unit_test(t_retention),
		cmocka_unit_test(t_partitions_independent),
		cmocka_unit_test(t_limits),
		cmocka_unit_test(t_open_refusals),
		cmocka_unit_test(t_write_errors),
		cmocka_unit_test(t_no_cache),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
