/* SPDX-License-Identifier: MIT
 *
 * The core mesh (kernel/xcore.h): layout of the mesh in caller memory, credit accounting
 * on the sending side, fair bounded polling on the receiving side. Owns no memory and no
 * ring code: every slot hand-over is lib/ring's (ADR-006). Must never block, spin, drop a
 * message without counting it, or let one core write another core's private state.
 *
 * Design note.
 * Names: S = slots_per_ring, R = ctrl_slots, C = S - R (data credit), B = credit_batch;
 * for the ring s->d, used = head - tail (lib/ring's free-running indices).
 * Invariants:
 *  1. Ring s->d is produced only on core s (xcore_send*) and consumed only on core d
 *     (xcore_poll). Core s's row (rr cursor, tx[], rx[]) is written only on core s.
 *  2. tx[s][d].credit <= C, and credit > 0 implies used(s->d) + credit <= C at every
 *     instant: set from the consumer's tail read with acquire (tail only grows, so the
 *     bound only loosens afterwards) and decremented by every send of either class.
 *  3. A data or bulk message is committed only when the ring then holds <= C messages.
 *     Hence a full ring holds >= R control messages behind its last data message: control
 *     is refused only when more than R control messages are in flight, never because of
 *     data. A bulk message (F = bulk_reserve) is committed only when the ring then holds
 *     <= C - F messages: bulk alone never takes the last F data credits.
 *  4. Credit comes back without any message: it is the consumer's published tail. Nothing
 *     is needed on the reverse ring d->s, so returning credit can never be blocked.
 *  5. xcore_poll consumes every message it hands out; the handler cannot refuse one, so
 *     how fast core d drains s->d never depends on the state of any ring d sends into.
 *  6. 0 <= rr < n_cores - 1 (index among the other cores).
 *  7. Credit wake-up: a data or bulk send refused for credit stores in tx[s][d].want the
 *     free slots the next refill needs (R + reserve + B); a refill that succeeds clears
 *     it. Before core s halts it clears every want its ring already satisfies and does
 *     not halt (xcore_credit_back, after its seq_cst fence); core d, after consuming from
 *     s, issues a seq_cst fence and names s when want is set and the ring has that many
 *     free (xcore_credit_waiters), so the caller wakes s. With the two fences one of them
 *     sees the other's store: s is never left halted on credit that came back.
 * Sender state per pair (function of each transition):
 *   HOLDING(credit>0) --xcore_send/xcore_send_ctrl: credit-1--> HOLDING or EMPTY
 *   EMPTY --xcore_send: tail re-read, >= B credits free--> HOLDING
 *   EMPTY --xcore_send: fewer than B free--> EMPTY (-E_AGAIN, n_stall)
 *   any   --xcore_send_ctrl: ring completely full--> same (-E_AGAIN, n_ctrl_stall)
 *   credit <= F --xcore_send_bulk: tail re-read, >= F + B free--> HOLDING (credit > F)
 *   credit <= F --xcore_send_bulk: fewer free--> same (-E_AGAIN, n_bulk_stall)
 * Deadlock freedom with all-pairs traffic: no call waits (2 states return -E_AGAIN), so no
 * core is ever blocked inside the mesh; by 4 and 5, as long as every core polls on every
 * loop pass, each ring drains whatever its consumer sends, so every sender regains B
 * credits within a bounded number of its destination's passes (round-robin start: each
 * source is served at least once every n_cores - 1 calls). A cycle can only be built above
 * the mesh, by a handler that stops polling while it waits for credit; callers park such
 * work in their own bounded queue or drop and count it.
 *
 * Memory layout (offsets from mem, every block XCORE_MEM_ALIGN-aligned):
 *   struct xcore_mesh | n rows of [struct xcore_row, tx[n], rx[n]] | n(n-1) struct spsc_ring
 *   | n(n-1) slot arrays of S * slot_size bytes.
 * Rows are padded to a cache line so two cores never write the same line.
 */
#include "kernel/xcore.h"

#include <stdatomic.h>

#include "lib/align.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "lib/ring.h"

#define XCORE_LINE SPSC_CACHELINE
STATIC_ASSERT(sizeof(struct xcore_msg) == XCORE_HDR_SIZE, "xcore: header layout");
STATIC_ASSERT(sizeof(struct spsc_ring) % XCORE_LINE == 0, "xcore: ring structs share no line");
STATIC_ASSERT((XCORE_LINE & (XCORE_LINE - 1)) == 0, "xcore: align_up needs a power of two");

struct xcore_row {
	uint32_t rr; /* next poll starts at this source index (invariant 6) */
	uint64_t polled; /* sources xcore_poll consumed from since xcore_credit_waiters */
};

struct xcore_tx {
	uint32_t credit;
	/* Free slots the last refused data or bulk send needed on this ring (0: none
	 * wanted). Written only by the source core; read by the destination after it
	 * released slots, which wakes a halted source once the ring has that many free
	 * (invariant 7). */
	_Atomic uint32_t want;
	uint64_t n_sent, n_ctrl_sent, n_stall, n_ctrl_stall, n_bulk_stall, n_refill;
};

struct xcore_rx {
	uint64_t n_recv, n_bad;
};

struct xcore_mesh {
	struct xcore_config cfg;
	uint32_t data_credit; /* C */
	uint32_t payload_max;
	size_t row_stride;
	size_t tx_off, rx_off; /* within a row */
	size_t ring_stride;    /* bytes of slot storage per ring */
	uint8_t *rows;
	struct spsc_ring *rings;
	uint8_t *storage;
} ALIGNED(XCORE_LINE);

static bool xcore_config_ok(const struct xcore_config *c)
{
	if (!c || c->n_cores < 1 || c->n_cores > XCORE_MAX_CORES)
		return false;
	if (c->slots_per_ring < 2 || c->slots_per_ring > XCORE_MAX_SLOTS ||
	    (c->slots_per_ring & (c->slots_per_ring - 1)))
		return false;
	if (c->slot_size < 16 || c->slot_size > XCORE_MAX_SLOT_SIZE || (c->slot_size & 7u))
		return false;
	if (c->ctrl_slots < 1 || c->ctrl_slots >= c->slots_per_ring)
		return false;
	if (c->credit_batch < 1 || c->credit_batch > c->slots_per_ring - c->ctrl_slots)
		return false;
	if (c->bulk_reserve > c->slots_per_ring - c->ctrl_slots - c->credit_batch)
		return false;
	return c->poll_max >= 1 && c->poll_per_source >= 1;
}

/* Offsets of one layout; all sizes are bounded by the limits above (64 cores, 2^16 slots
 * of 2^16 B: < 2^45 bytes), so the arithmetic is done in uint64_t and checked to fit a
 * size_t once. */
struct xcore_layout {
	uint64_t row_stride, tx_off, rx_off, rows_off, rings_off, storage_off, ring_stride, total;
};

static void xcore_layout_of(const struct xcore_config *c, struct xcore_layout *l)
{
	uint64_t n = c->n_cores, n_rings = n * (n - 1);
	l->tx_off = align_up(sizeof(struct xcore_row), XCORE_LINE);
	l->rx_off = l->tx_off + n * sizeof(struct xcore_tx);
	l->row_stride = align_up((size_t)(l->rx_off + n * sizeof(struct xcore_rx)), XCORE_LINE);
	l->rows_off = align_up(sizeof(struct xcore_mesh), XCORE_LINE);
	l->rings_off = l->rows_off + n * l->row_stride;
	l->storage_off = l->rings_off + align_up((size_t)(n_rings * sizeof(struct spsc_ring)), XCORE_LINE);
	l->ring_stride = align_up((size_t)((uint64_t)c->slots_per_ring * c->slot_size), XCORE_LINE);
	l->total = l->storage_off + n_rings * l->ring_stride;
}

int xcore_mesh_size(const struct xcore_config *cfg, size_t *out)
{
	if (!xcore_config_ok(cfg) || !out)
		return -E_INVAL;
	struct xcore_layout l;
	xcore_layout_of(cfg, &l);
	if ((uint64_t)(size_t)l.total != l.total)
		return -E_INVAL;
	*out = (size_t)l.total;
	return 0;
}

static struct spsc_ring *xcore_ring(const struct xcore_mesh *m, uint32_t src, uint32_t dst)
{
	uint32_t n = m->cfg.n_cores;
	return &m->rings[src * (n - 1) + (dst < src ? dst : dst - 1)];
}

static struct xcore_row *xcore_row_of(const struct xcore_mesh *m, uint32_t core)
{
	return (struct xcore_row *)(void *)(m->rows + core * m->row_stride);
}

static struct xcore_tx *xcore_tx_of(const struct xcore_mesh *m, uint32_t src, uint32_t dst)
{
	return (struct xcore_tx *)(void *)(m->rows + src * m->row_stride + m->tx_off) + dst;
}

static struct xcore_rx *xcore_rx_of(const struct xcore_mesh *m, uint32_t dst, uint32_t src)
{
	return (struct xcore_rx *)(void *)(m->rows + dst * m->row_stride + m->rx_off) + src;
}

int xcore_mesh_init(struct xcore_mesh **out, void *mem, size_t len, const struct xcore_config *cfg)
{
	size_t need;
	if (!out || !mem || ((uintptr_t)mem & (XCORE_MEM_ALIGN - 1)) || xcore_mesh_size(cfg, &need) != 0 ||
	    len < need)
		return -E_INVAL;
	struct xcore_layout l;
	xcore_layout_of(cfg, &l);
	uint8_t *base = mem;
	memset(base, 0, (size_t)l.storage_off); /* header, rows and ring structs; slots need not be */
	struct xcore_mesh *m = mem;
	m->cfg = *cfg;
	m->data_credit = cfg->slots_per_ring - cfg->ctrl_slots;
	m->payload_max = cfg->slot_size - XCORE_HDR_SIZE;
	m->row_stride = (size_t)l.row_stride;
	m->tx_off = (size_t)l.tx_off;
	m->rx_off = (size_t)l.rx_off;
	m->ring_stride = (size_t)l.ring_stride;
	m->rows = base + l.rows_off;
	m->rings = (struct spsc_ring *)(void *)(base + l.rings_off);
	m->storage = base + l.storage_off;
	uint32_t n = cfg->n_cores;
	for (uint32_t s = 0; s < n; s++) {
		for (uint32_t d = 0; d < n; d++) {
			if (s == d)
				continue;
			struct spsc_ring *r = xcore_ring(m, s, d);
			uint8_t *st = m->storage + (size_t)(r - m->rings) * m->ring_stride;
			if (spsc_init(r, st, cfg->slots_per_ring, cfg->slot_size) != 0)
				return -E_INVAL; /* unreachable: geometry validated above */
			xcore_tx_of(m, s, d)->credit = m->data_credit;
		}
	}
	*out = m;
	return 0;
}

uint32_t xcore_payload_max(const struct xcore_mesh *m)
{
	return m->payload_max;
}

uint32_t xcore_n_cores(const struct xcore_mesh *m)
{
	return m->cfg.n_cores;
}

static int xcore_put(struct xcore_mesh *m, uint32_t src, uint32_t dst, uint16_t kind, const void *data,
		     uint32_t len, enum xcore_class cls)
{
	if (!m || src >= m->cfg.n_cores || dst >= m->cfg.n_cores || src == dst || len > m->payload_max ||
	    (len && !data))
		return -E_INVAL;
	struct xcore_tx *tx = xcore_tx_of(m, src, dst);
	struct spsc_ring *r = xcore_ring(m, src, dst);
	/* Data refills at 0 credits; bulk as soon as it is down to its reserve (invariant 3). */
	uint32_t keep = cls == XCORE_BULK ? m->cfg.bulk_reserve : 0;
	if (cls != XCORE_CTRL && tx->credit <= keep) {
		/* spsc_free_slots loads tail with acquire (pairs with the consumer's release in
		 * spsc_release): every slot it counts as free has been completely read, and tail
		 * only grows, so the credit taken here stays valid (invariant 2). */
		uint32_t free = spsc_free_slots(r);
		tx->n_refill++;
		uint32_t avail = free > m->cfg.ctrl_slots ? free - m->cfg.ctrl_slots : 0;
		if (avail < keep + m->cfg.credit_batch) {
			if (cls == XCORE_BULK)
				tx->n_bulk_stall++;
			else
				tx->n_stall++;
			/* Relaxed: only core s writes want; core d reads it after its seq_cst fence
			 * and core s's idle path stores `sleeping` and fences after this store, so
			 * the fences order it (invariant 7). */
			atomic_store_explicit(&tx->want, m->cfg.ctrl_slots + keep + m->cfg.credit_batch,
					      memory_order_relaxed);
			return -E_AGAIN;
		}
		tx->credit = avail;
		/* Relaxed: our own variable; a reader that still sees the old value only wakes
		 * us once for nothing. */
		if (atomic_load_explicit(&tx->want, memory_order_relaxed))
			atomic_store_explicit(&tx->want, 0, memory_order_relaxed);
	}
	/* lib/ring's reserve/commit carry the ordering: the slot is filled before the release
	 * store of head that publishes it. For data, invariant 2 guarantees room. */
	uint8_t *slot = spsc_reserve(r);
	if (!slot) {
		if (cls != XCORE_CTRL) { /* unreachable by invariant 2; refuse rather than overwrite */
			tx->credit = 0;
			tx->n_stall++;
		} else {
			tx->n_ctrl_stall++;
		}
		return -E_AGAIN;
	}
	struct xcore_msg *msg = (struct xcore_msg *)(void *)slot;
	msg->kind = kind;
	msg->cls = (uint8_t)cls;
	msg->pad = 0;
	msg->len = len;
	if (len)
		memcpy(msg->data, data, len);
	spsc_commit(r);
	if (tx->credit)
		tx->credit--;
	if (cls == XCORE_CTRL)
		tx->n_ctrl_sent++;
	else
		tx->n_sent++;
	return 0;
}

int xcore_send(struct xcore_mesh *m, uint32_t src, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	return xcore_put(m, src, dst, kind, data, len, XCORE_DATA);
}

int xcore_send_bulk(struct xcore_mesh *m, uint32_t src, uint32_t dst, uint16_t kind, const void *data,
		    uint32_t len)
{
	return xcore_put(m, src, dst, kind, data, len, XCORE_BULK);
}

int xcore_send_ctrl(struct xcore_mesh *m, uint32_t src, uint32_t dst, uint16_t kind, const void *data,
		    uint32_t len)
{
	return xcore_put(m, src, dst, kind, data, len, XCORE_CTRL);
}

uint32_t xcore_credits(struct xcore_mesh *m, uint32_t src, uint32_t dst)
{
	if (!m || src >= m->cfg.n_cores || dst >= m->cfg.n_cores || src == dst)
		return 0;
	struct xcore_tx *tx = xcore_tx_of(m, src, dst);
	/* Acquire inside spsc_free_slots, as in xcore_put. Taking every free credit here is
	 * what a refill would do; it never exceeds C - used (invariant 2). */
	uint32_t free = spsc_free_slots(xcore_ring(m, src, dst));
	uint32_t avail = free > m->cfg.ctrl_slots ? free - m->cfg.ctrl_slots : 0;
	if (avail > tx->credit)
		tx->credit = avail;
	return tx->credit;
}

uint32_t xcore_poll(struct xcore_mesh *m, uint32_t self, xcore_recv_fn fn, void *ctx)
{
	uint32_t n = m->cfg.n_cores;
	if (self >= n || n < 2 || !fn)
		return 0;
	struct xcore_row *row = xcore_row_of(m, self);
	uint32_t n_src = n - 1, start = row->rr, total = 0;
	row->rr = start + 1 == n_src ? 0 : start + 1;
	for (uint32_t k = 0; k < n_src && total < m->cfg.poll_max; k++) {
		uint32_t idx = start + k < n_src ? start + k : start + k - n_src;
		uint32_t src = idx < self ? idx : idx + 1;
		struct spsc_ring *r = xcore_ring(m, src, self);
		struct xcore_rx *rx = xcore_rx_of(m, self, src);
		for (uint32_t c = 0; c < m->cfg.poll_per_source && total < m->cfg.poll_max; c++) {
			/* spsc_peek's acquire load of head (pairs with the producer's release in
			 * spsc_commit) makes the slot's bytes visible; spsc_release's release store
			 * of tail returns the slot, i.e. the credit, only after the handler has
			 * finished reading it. */
			const void *slot = spsc_peek(r);
			if (!slot)
				break;
			/* The slot is this core's until spsc_release (lib/ring's contract);
			 * the ring hands it out read-only, but it lies in the mesh's own
			 * writable storage: the same address, derived from that base. */
			struct xcore_msg *msg =
				(struct xcore_msg *)(void *)(m->storage + ((const uint8_t *)slot - m->storage));
			if (msg->len > m->payload_max) {
				rx->n_bad++;
			} else {
				rx->n_recv++;
				fn(ctx, src, msg);
			}
			spsc_release(r);
			total++;
			row->polled |= 1ull << src; /* src < XCORE_MAX_CORES = 64 */
		}
	}
	return total;
}

uint64_t xcore_credit_waiters(struct xcore_mesh *m, uint32_t self)
{
	if (!m || self >= m->cfg.n_cores)
		return 0;
	struct xcore_row *row = xcore_row_of(m, self);
	uint64_t polled = row->polled, wake = 0;
	row->polled = 0;
	if (!polled)
		return 0;
	/* seq_cst: orders spsc_release's release stores of tail (the credit) before the loads
	 * of want below; pairs with the fence a halting source issues after storing
	 * `sleeping` and before xcore_credit_back loads tail (invariant 7). */
	atomic_thread_fence(memory_order_seq_cst);
	for (uint64_t p = polled; p; p &= p - 1) {
		uint32_t src = (uint32_t)__builtin_ctzll(p);
		/* Relaxed: ordered by the fence above (only src writes it). */
		uint32_t want = atomic_load_explicit(&xcore_tx_of(m, src, self)->want, memory_order_relaxed);
		/* spsc_used_slots is the consumer's view (acquire load of head): a slot counted
		 * free here is free for the producer too, since only we release slots. */
		if (want && m->cfg.slots_per_ring - spsc_used_slots(xcore_ring(m, src, self)) >= want)
			wake |= 1ull << src;
	}
	return wake;
}

bool xcore_credit_back(struct xcore_mesh *m, uint32_t self)
{
	uint32_t n = m ? m->cfg.n_cores : 0;
	bool back = false;
	for (uint32_t dst = 0; self < n && dst < n; dst++) {
		if (dst == self)
			continue;
		struct xcore_tx *tx = xcore_tx_of(m, self, dst);
		/* Relaxed: our own variable. spsc_free_slots loads tail with acquire after the
		 * caller's seq_cst fence (invariant 7). */
		uint32_t want = atomic_load_explicit(&tx->want, memory_order_relaxed);
		if (want && spsc_free_slots(xcore_ring(m, self, dst)) >= want) {
			atomic_store_explicit(&tx->want, 0, memory_order_relaxed); /* one pass to use it */
			back = true;
		}
	}
	return back;
}

bool xcore_pending(struct xcore_mesh *m, uint32_t self)
{
	uint32_t n = m ? m->cfg.n_cores : 0;
	if (self >= n)
		return false;
	for (uint32_t src = 0; src < n; src++) {
		/* spsc_peek's acquire load of head pairs with the producer's release in
		 * spsc_commit; a slot seen here is complete (it is not consumed). */
		if (src != self && spsc_peek(xcore_ring(m, src, self)))
			return true;
	}
	return false;
}

void xcore_stats(const struct xcore_mesh *m, uint32_t src, uint32_t dst, struct xcore_pair_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!m || src >= m->cfg.n_cores || dst >= m->cfg.n_cores || src == dst)
		return;
	const struct xcore_tx *tx = xcore_tx_of(m, src, dst);
	const struct xcore_rx *rx = xcore_rx_of(m, dst, src);
	out->n_sent = tx->n_sent;
	out->n_ctrl_sent = tx->n_ctrl_sent;
	out->n_stall = tx->n_stall;
	out->n_ctrl_stall = tx->n_ctrl_stall;
	out->n_bulk_stall = tx->n_bulk_stall;
	out->n_refill = tx->n_refill;
	out->n_recv = rx->n_recv;
	out->n_bad = rx->n_bad;
}

int xcore_check_invariants(struct xcore_mesh *m, uint32_t self)
{
	uint32_t n = m->cfg.n_cores;
	if (self >= n || m->data_credit != m->cfg.slots_per_ring - m->cfg.ctrl_slots)
		return -E_CORRUPT;
	if (n > 1 && xcore_row_of(m, self)->rr >= n - 1) /* 6 */
		return -E_CORRUPT;
	for (uint32_t d = 0; d < n; d++) {
		if (d == self)
			continue;
		struct xcore_tx *tx = xcore_tx_of(m, self, d);
		struct spsc_ring *r = xcore_ring(m, self, d);
		/* Acquire inside spsc_free_slots; only tail can move under us, and only
		 * towards more room, so a violation seen here is real. */
		uint32_t used = m->cfg.slots_per_ring - spsc_free_slots(r);
		if (tx->credit > m->data_credit || used > m->cfg.slots_per_ring) /* 2, ring's 2 */
			return -E_CORRUPT;
		if (tx->credit && used + tx->credit > m->data_credit) /* 2 */
			return -E_CORRUPT;
	}
	return 0;
}
