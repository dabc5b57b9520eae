/* SPDX-License-Identifier: MIT
 *
 * store/tlq.h. Design note: a run is FREE or ACTIVE. ACTIVE: it walks partition `part`
 * (a scan started lazily), holding at most one matched record that did not fit the last
 * ROWS message (`held`: its pointers stay valid because the scan reads no further segment
 * until it is sent); each poll sends one ROWS while it has credit, and the END once the walk
 * is over (the partitions done, the limit reached, a read failed, or cancelled), then FREE.
 * Invariants: credit <= CREDIT_MAX; a FREE run holds nothing; an ACTIVE run's (origin, slot)
 * is unique among ACTIVE runs.
 */
#include "store/tlq.h"

#include "lib/align.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "mqtt/codec.h"

/* ROWS in flight: one. The data core holds one ROWS per query until its reader took every
 * row, then asks for the next (TLQ_MORE); a second in flight would find no room there. */
#define CREDIT_START 1u
#define CREDIT_MAX 1u

struct run {
	bool active, scanning, held, done, cancelled, failed, truncated;
	uint32_t origin, slot, limit, credit, part;
	int64_t since_ms, until_ms;
	uint8_t id[255], topic[255];
	uint8_t id_len, topic_len;
	uint64_t matched;
	struct store_tlog_scan scan;
	struct store_tlog_rec rec; /* held: the next row to send */
	uint8_t *seg, *chunk;
	struct store_tlog_slot_ref *order;
};

struct store_tlq_runner {
	struct store_tlog_geom g;
	uint32_t n_runs, payload_max;
	struct store_dev *dev;
	uint64_t lba;
	struct store_tlq_port port;
	struct run *runs;
	struct store_tlq_stats st;
};

size_t store_tlq_mem_size(const struct store_tlog_geom *g, uint32_t runs, uint32_t payload_max)
{
	if (!runs || payload_max < 512u)
		return 0;
	return align8(sizeof(struct store_tlq_runner)) +
	       runs * (align8(sizeof(struct run)) + align8(g->segment_bytes) + align8(payload_max) +
		       align8((size_t)g->segments * sizeof(struct store_tlog_slot_ref)));
}

int store_tlq_init(struct store_tlq_runner **out, void *mem, size_t len, const struct store_tlog_geom *g,
		   uint32_t runs, uint32_t payload_max, struct store_dev *dev, uint64_t region_lba,
		   const struct store_tlq_port *port)
{
	*out = NULL;
	size_t need = store_tlq_mem_size(g, runs, payload_max);
	if (!need || !mem || len < need || ((uintptr_t)mem & 7u) || !port->emit || !port->room)
		return -E_INVAL;
	uint8_t *p = mem;
	memset(p, 0, need);
	struct store_tlq_runner *t = (struct store_tlq_runner *)(void *)p;
	p += align8(sizeof *t);
	t->g = *g;
	t->n_runs = runs;
	t->payload_max = payload_max;
	t->dev = dev;
	t->lba = region_lba;
	t->port = *port;
	t->runs = (struct run *)(void *)p;
	p += runs * align8(sizeof(struct run));
	for (uint32_t i = 0; i < runs; i++) {
		t->runs[i].seg = p;
		p += align8(g->segment_bytes);
		t->runs[i].chunk = p;
		p += align8(payload_max);
		t->runs[i].order = (struct store_tlog_slot_ref *)(void *)p;
		p += align8((size_t)g->segments * sizeof(struct store_tlog_slot_ref));
	}
	*out = t;
	return 0;
}

static struct run *find(struct store_tlq_runner *t, uint32_t origin, uint32_t slot)
{
	for (uint32_t i = 0; i < t->n_runs; i++)
		if (t->runs[i].active && t->runs[i].origin == origin && t->runs[i].slot == slot)
			return &t->runs[i];
	return NULL;
}

static void end_now(struct store_tlq_runner *t, uint32_t origin, uint32_t slot, uint64_t matched, uint32_t flags)
{
	uint8_t m[STORE_TLQ_END_LEN];
	st_le32(m, slot);
	st_le64(m + 4, matched);
	st_le32(m + 12, flags);
	(void)t->port.emit(t->port.ctx, origin, STORE_K_TLQ_END, m, sizeof m);
	t->st.ended++;
}

static void start(struct store_tlq_runner *t, uint32_t src, const uint8_t *d, uint32_t len)
{
	struct store_tlq q;
	if (store_tlq_decode(d, len, &q) != 0 ||
	    (q.topic_len && !mqtt_filter_valid(q.topic, q.topic_len))) {
		t->st.refused++;
		if (len >= 4u)
			end_now(t, src, ld_le32(d), 0, STORE_TLQ_FAILED);
		return;
	}
	struct run *r = find(t, src, q.slot);
	for (uint32_t i = 0; !r && i < t->n_runs; i++)
		if (!t->runs[i].active)
			r = &t->runs[i];
	if (!r || r->active) { /* every run busy, or the slot still running (a bug of the sender) */
		t->st.refused++;
		end_now(t, src, q.slot, 0, STORE_TLQ_FAILED);
		return;
	}
	uint8_t *seg = r->seg, *chunk = r->chunk;
	struct store_tlog_slot_ref *order = r->order;
	memset(r, 0, sizeof *r);
	r->seg = seg;
	r->chunk = chunk;
	r->order = order;
	r->active = true;
	r->origin = src;
	r->slot = q.slot;
	r->limit = q.limit;
	r->credit = CREDIT_START;
	r->since_ms = q.since_ms;
	r->until_ms = q.until_ms ? q.until_ms : (t->port.wall_ms ? t->port.wall_ms(t->port.ctx) : 0);
	memcpy(r->id, q.id, q.id_len);
	r->id_len = q.id_len;
	memcpy(r->topic, q.topic, q.topic_len);
	r->topic_len = q.topic_len;
	t->st.started++;
}

void store_tlq_input(struct store_tlq_runner *t, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len)
{
	if (kind == STORE_K_TLQ) {
		start(t, src, data, len);
		return;
	}
	if (len != 4u)
		return;
	struct run *r = find(t, src, ld_le32(data));
	if (!r)
		return; /* ended already */
	if (kind == STORE_K_TLQ_MORE && r->credit < CREDIT_MAX)
		r->credit++;
	else if (kind == STORE_K_TLQ_CANCEL)
		r->cancelled = true;
}

static bool wanted(const struct run *r, const struct store_tlog_rec *x)
{
	if (r->since_ms && x->wall_ms < r->since_ms)
		return false;
	if (r->until_ms && x->wall_ms > r->until_ms)
		return false;
	if (r->id_len && (x->id_len != r->id_len || memcmp(x->id, r->id, r->id_len) != 0))
		return false;
	return !r->topic_len || mqtt_filter_match(r->topic, r->topic_len, x->topic, x->topic_len);
}

/* The next matching record into r->rec (held); false at the end of the walk. */
static bool next_match(struct store_tlq_runner *t, struct run *r)
{
	while (!r->held) {
		if (!r->scanning) {
			if (r->part >= t->g.partitions)
				return false;
			if (store_tlog_scan_start(&r->scan, t->dev, t->lba, &t->g, r->part, r->seg, r->order, r->since_ms)) {
				r->failed = true;
				return false;
			}
			r->scanning = true;
		}
		uint64_t seq;
		int rc = store_tlog_scan_next(&r->scan, &r->rec, &seq);
		if (rc < 0) {
			r->failed = true;
			return false;
		}
		if (rc == 0) {
			r->scanning = false;
			r->part++;
			continue;
		}
		r->held = wanted(r, &r->rec);
	}
	return true;
}

/* One ROWS message of the records that fit; done set when the walk is over. */
static uint32_t fill_chunk(struct store_tlq_runner *t, struct run *r)
{
	size_t off = STORE_TLQ_ROWS_HDR;
	uint32_t n = 0;
	while (next_match(t, r)) {
		if (r->matched >= r->limit) {
			r->truncated = true; /* one more matches than the limit lets through */
			r->done = true;
			break;
		}
		const struct store_tlog_rec *x = &r->rec;
		const struct store_rec rec = { .kind = STORE_REC_TLOG, .id_kind = x->id_kind, .qos = x->qos,
					       .seq = (uint64_t)x->wall_ms, .mkey = x->mono_ns, .id = x->id,
					       .id_len = x->id_len, .topic = x->topic, .topic_len = x->topic_len,
					       .payload = x->payload, .payload_len = x->payload_len };
		size_t need = 4u + store_rec_size(&rec);
		if (need > t->payload_max - off) {
			if (n)
				return n; /* the next message starts with it */
			t->st.skipped_too_big++; /* larger than a mesh message can carry */
			r->held = false;
			continue;
		}
		st_le32(r->chunk + off, (uint32_t)(need - 4u));
		if (store_rec_encode(&rec, r->chunk + off + 4u, need - 4u) != 0) {
			t->st.skipped_too_big++;
			r->held = false;
			continue;
		}
		off += need;
		n++;
		r->matched++;
		r->held = false;
	}
	if (!r->held)
		r->done = true;
	return n;
}

uint32_t store_tlq_poll(struct store_tlq_runner *t)
{
	uint32_t sent = 0;
	for (uint32_t i = 0; i < t->n_runs; i++) {
		struct run *r = &t->runs[i];
		if (!r->active)
			continue;
		if (!r->cancelled && !r->done && r->credit && t->port.room(t->port.ctx, r->origin, t->payload_max)) {
			uint32_t n = fill_chunk(t, r);
			if (n) {
				st_le32(r->chunk, r->slot);
				st_le32(r->chunk + 4, n);
				size_t len = STORE_TLQ_ROWS_HDR;
				for (uint32_t k = 0; k < n; k++)
					len += 4u + ld_le32(r->chunk + len);
				(void)t->port.emit(t->port.ctx, r->origin, STORE_K_TLQ_ROWS, r->chunk, (uint32_t)len);
				r->credit--;
				t->st.rows += n;
				t->st.chunks++;
				sent++;
			}
		}
		if ((r->done || r->cancelled) && t->port.room(t->port.ctx, r->origin, STORE_TLQ_END_LEN + 16u)) {
			uint32_t flags = (r->truncated ? STORE_TLQ_TRUNCATED : 0u) | (r->failed ? STORE_TLQ_FAILED : 0u) |
					 (r->cancelled ? STORE_TLQ_CANCELLED : 0u);
			if (r->failed)
				t->st.failed++;
			end_now(t, r->origin, r->slot, r->matched, flags);
			r->active = false;
			sent++;
		}
	}
	return sent;
}

const struct store_tlq_stats *store_tlq_stats(const struct store_tlq_runner *t)
{
	return &t->st;
}
