/* SPDX-License-Identifier: MIT
 * Fuzz target for the telemetry log's codec (store/tlog.h, docs/DISK-FORMAT.md section 8).
 * The input is read as a region header sector, a hint sector and a segment header (each as
 * it is, then with its CRC recomputed so mutations reach the field checks: whatever decodes
 * must encode back to the same bytes and hold the documented ranges), and as a whole
 * segment walked by the cursor for sectors of 512, 4096 and 65536 bytes: as it is, then with
 * a valid segment header and every record's and skip marker's CRC recomputed along the way
 * the cursor would take, so mutations reach the body checks. The cursor must never crash,
 * never take more than len / 8 steps, and never yield a record whose fields point outside
 * the input or do not tile its body, or whose salted CRC (recomputed here from the input's
 * bytes) does not match. Last, a record built from the input's bytes is encoded and must
 * come back field for field. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bytes.h"
#include "lib/crc32c.h"
#include "lib/err.h"
#include "store/tlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SEG ((size_t)256u * 1024u)

static uint8_t fixed[MAX_SEG];

static uint32_t salted(uint64_t seq, const uint8_t *p, size_t n)
{
	uint8_t salt[8];
	st_le64(salt, seq);
	return crc32c(crc32c(0, salt, 8), p, n);
}

static bool pow2_sector(uint32_t s)
{
	return s >= 512u && s <= 65536u && (s & (s - 1u)) == 0;
}

static void check_hdr(const uint8_t *in, size_t len)
{
	const uint64_t region = UINT64_C(1) << 40;
	struct store_tlog_geom g;
	static uint8_t again[65536];
	int err = store_tlog_hdr_decode(in, len, region, 512, &g);
	if (err) {
		if ((err != -E_NOENT && err != -E_CORRUPT && err != -E_NOSYS) || g.partitions || g.segments)
			abort();
		return;
	}
	if (!pow2_sector(g.sector) || g.partitions < 1 || g.partitions > STORE_TLOG_MAX_PARTITIONS ||
	    g.segment_bytes < 4096u || g.segment_bytes > (16u << 20) || g.segment_bytes % g.sector ||
	    g.segments < 2u || g.region_bytes != region ||
	    store_tlog_slot_off(&g, g.partitions - 1u, g.segments - 1u) + g.segment_bytes > region || len < 64)
		abort();
	store_tlog_hdr_encode(&g, again);
	if (memcmp(again, in, STORE_TLOG_HDR_BYTES) != 0)
		abort();
}

static void check_hint(const uint8_t *in, size_t len)
{
	struct store_tlog_hint h;
	uint8_t again[512];
	int err = store_tlog_hint_decode(in, len, &h);
	if (err) {
		if ((err != -E_NOENT && err != -E_CORRUPT) || h.seq)
			abort();
		return;
	}
	if (h.seq == 0 || h.seq > INT64_MAX || h.partition >= STORE_TLOG_MAX_PARTITIONS || len < 32)
		abort();
	store_tlog_hint_encode(&h, again, sizeof again);
	if (memcmp(again, in, STORE_TLOG_HINT_BYTES) != 0)
		abort();
}

static void check_seg(const uint8_t *in, size_t len)
{
	struct store_tlog_seg s;
	uint8_t again[STORE_TLOG_SEG_HDR];
	int err = store_tlog_seg_decode(in, len, &s);
	if (err) {
		if ((err != -E_NOENT && err != -E_CORRUPT) || s.seq)
			abort();
		return;
	}
	if (s.seq == 0 || s.seq > INT64_MAX || s.partition >= STORE_TLOG_MAX_PARTITIONS || len < 64)
		abort();
	store_tlog_seg_encode(&s, again);
	if (memcmp(again, in, sizeof again) != 0)
		abort();
}

/* A record the cursor yielded: inside the segment after its header, at an 8-aligned offset
 * past the last one, its fields tiling its body, its CRC right. */
static void check_record(const struct store_tlog_cursor *c, const struct store_tlog_rec *r, uintptr_t *last)
{
	uintptr_t seg = (uintptr_t)c->seg, end = seg + c->len, id = (uintptr_t)r->id;
	if (!r->id || !r->topic || r->id_len == 0 || r->topic_len == 0 || r->qos > 2u || r->id_kind > 1u)
		abort();
	if (id < seg + STORE_TLOG_SEG_HDR + STORE_TLOG_REC_HDR + STORE_TLOG_BODY_FIXED || id > end)
		abort();
	uintptr_t rec = id - STORE_TLOG_BODY_FIXED - STORE_TLOG_REC_HDR;
	if ((rec - seg) % 8u || rec < *last)
		abort();
	const uint8_t *body = c->seg + (rec - seg) + STORE_TLOG_REC_HDR;
	uint32_t len = ld_le32(body - 8);
	if ((uintptr_t)r->topic != id + r->id_len || (uintptr_t)r->payload != id + r->id_len + r->topic_len ||
	    (uint64_t)len != (uint64_t)STORE_TLOG_BODY_FIXED + r->id_len + r->topic_len + r->payload_len ||
	    (uintptr_t)body + len > end)
		abort();
	if (ld_le32(body - 4) != salted(c->seq, body, len) || (int64_t)ld_le64(body) != r->wall_ms ||
	    ld_le64(body + 8) != r->mono_ns || body[16] != r->qos || body[17] != r->id_kind || body[18] != r->id_len ||
	    ld_le16(body + 20) != r->topic_len || ld_le32(body + 24) != r->payload_len)
		abort();
	*last = rec + STORE_TLOG_REC_HDR + len;
}

static void walk(const uint8_t *seg, size_t len, uint32_t sector)
{
	struct store_tlog_cursor c;
	struct store_tlog_rec r;
	if (store_tlog_cursor_init(&c, seg, len, sector) != 0) {
		if (store_tlog_cursor_next(&c, &r) != 0)
			abort();
		return;
	}
	uintptr_t last = 0;
	size_t steps = 0;
	while (store_tlog_cursor_next(&c, &r) == 1) {
		check_record(&c, &r, &last);
		if (++steps > len / 8u)
			abort();
	}
	if (!c.done || c.off > len || c.records != steps || store_tlog_cursor_next(&c, &r) != 0)
		abort();
}

/* Make the segment's header valid and every CRC on the cursor's path right. */
static void fix_segment(uint8_t *seg, size_t len, uint32_t sector)
{
	struct store_tlog_seg s = { 0, 0, 1, 0 };
	if (len < STORE_TLOG_SEG_HDR)
		return;
	if (store_tlog_seg_decode(seg, len, &s) != 0) {
		s.partition = seg[8] % STORE_TLOG_MAX_PARTITIONS;
		s.slot = ld_le32(seg + 12);
		s.seq = (ld_le64(seg + 16) & INT64_MAX) | 1u;
		s.first_wall_ms = (int64_t)ld_le64(seg + 24);
	}
	store_tlog_seg_encode(&s, seg);
	size_t at = STORE_TLOG_SEG_HDR;
	while (at < len && len - at >= STORE_TLOG_REC_HDR) {
		uint32_t n = ld_le32(seg + at);
		if (n == 0) {
			if (at % sector == 0)
				return;
			uint8_t off[4];
			st_le32(off, (uint32_t)at);
			st_le32(seg + at + 4, salted(s.seq, off, 4));
			at = (at / sector + 1u) * sector;
			continue;
		}
		if (n > len - at - STORE_TLOG_REC_HDR)
			return;
		st_le32(seg + at + 4, salted(s.seq, seg + at + 8, n));
		at = (at + STORE_TLOG_REC_HDR + n + 7u) & ~(size_t)7u;
	}
}

static void roundtrip(const uint8_t *data, size_t size)
{
	static uint8_t seg[4096];
	if (size < 12)
		return;
	struct store_tlog_rec r;
	memset(&r, 0, sizeof r);
	r.wall_ms = (int64_t)ld_le64(data);
	r.mono_ns = ld_le64(data + 2);
	r.qos = data[8] % 4u;       /* 3: refused */
	r.id_kind = data[9] % 3u;   /* 2: refused */
	r.id_len = data[10];
	r.topic_len = data[11];
	const uint8_t *rest = data + 12;
	size_t left = size - 12;
	r.id = rest;
	r.topic = rest;
	r.payload = left ? rest : NULL;
	r.payload_len = (uint32_t)(left < 1024u ? left : 1024u);
	if (r.id_len > left || r.topic_len > left)
		return;
	uint64_t seq = (ld_le64(data) & INT64_MAX) | 1u;
	struct store_tlog_seg s = { 1, 2, seq, r.wall_ms };
	memset(seg, 0, sizeof seg);
	store_tlog_seg_encode(&s, seg);
	size_t n = store_tlog_rec_encode(&r, seq, seg + STORE_TLOG_SEG_HDR, sizeof seg - STORE_TLOG_SEG_HDR);
	bool ok = r.qos <= 2u && r.id_kind <= 1u && r.id_len && r.topic_len;
	if (!ok) {
		if (n != 0)
			abort();
		return;
	}
	if (n != store_tlog_rec_size(&r) || n % 8u)
		abort();
	struct store_tlog_cursor c;
	struct store_tlog_rec back;
	if (store_tlog_cursor_init(&c, seg, sizeof seg, 512) != 0 || store_tlog_cursor_next(&c, &back) != 1)
		abort();
	if (back.wall_ms != r.wall_ms || back.mono_ns != r.mono_ns || back.qos != r.qos || back.id_kind != r.id_kind ||
	    back.id_len != r.id_len || back.topic_len != r.topic_len || back.payload_len != r.payload_len ||
	    memcmp(back.id, r.id, r.id_len) != 0 || memcmp(back.topic, r.topic, r.topic_len) != 0 ||
	    (r.payload_len && memcmp(back.payload, r.payload, r.payload_len) != 0))
		abort();
	if (store_tlog_cursor_next(&c, &back) != 0) /* zeros after it: the end */
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t sector[512];
	size_t n = size < sizeof sector ? size : sizeof sector;
	/* the three headers, as they are and with their CRC right (in a zero-padded sector) */
	memset(sector, 0, sizeof sector);
	memcpy(sector, data, n);
	check_hdr(data, size);
	check_hint(data, size);
	check_seg(data, size);
	st_le32(sector + 60, crc32c(0, sector, 60));
	check_hdr(sector, sizeof sector);
	check_seg(sector, sizeof sector);
	memset(sector, 0, sizeof sector);
	memcpy(sector, data, n);
	st_le32(sector + 28, crc32c(0, sector, 28));
	check_hint(sector, sizeof sector);

	/* a segment, as it is and with its CRCs made right */
	static const uint32_t sectors[] = { 512u, 4096u, 65536u };
	size_t len = size < MAX_SEG ? size : MAX_SEG;
	for (size_t i = 0; i < sizeof sectors / sizeof sectors[0]; i++) {
		walk(data, size, sectors[i]);
		memcpy(fixed, data, len);
		fix_segment(fixed, len, sectors[i]);
		walk(fixed, len, sectors[i]);
	}
	roundtrip(data, size);
	return 0;
}
