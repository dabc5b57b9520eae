/* SPDX-License-Identifier: MIT
 *
 * store/dev.h: one request at a time through the bounce buffer. Each request is
 * submitted, kicked and polled until it comes back or its deadline passes; nothing else
 * is ever in flight on the device, so the request that comes back is ours (anything else
 * is a device bug: the device is marked broken).
 * Design note. Invariants:
 *  1. At most one request is in flight, and only inside one call of this file.
 *  2. broken is sticky: once a request was abandoned, the device and the bounce buffer
 *     are never used again (the device may still complete into them).
 */
#include "store/dev.h"

#include "lib/err.h"
#include "lib/mem.h"

int store_dev_init(struct store_dev *d, struct blk_dev *blk, uint8_t *bounce, size_t bounce_len,
		   uint32_t timeout_ms, const struct store_dev_port *port)
{
	memset(d, 0, sizeof *d);
	if (!blk || !blk->ops || !bounce || !port || !port->now_ns || timeout_ms == 0)
		return -E_INVAL;
	uint32_t bs = blk->topo.logical_block;
	if (bs < 512u || (bs & (bs - 1u)) || bounce_len < bs)
		return -E_INVAL;
	d->blk = blk;
	d->bounce = bounce;
	d->bounce_len = bounce_len - bounce_len % bs;
	d->timeout_ms = timeout_ms;
	d->port = *port;
	return 0;
}

static void note_err(struct store_dev *d, enum store_dev_op op, uint64_t lba, int err)
{
	d->st.errors[op]++;
	if (!d->first_err) {
		d->first_err = err;
		d->first_err_op = op;
		d->first_err_lba = lba;
	}
}

/* Submit r and wait for it (invariant 1). 0 or the request's / the wait's error. */
static int run(struct store_dev *d, enum store_dev_op op, struct blk_req *r)
{
	if (d->broken)
		return -E_CLOSED;
	int err = blk_submit(d->blk, r);
	if (err) {
		note_err(d, op, r->lba, err);
		return err;
	}
	blk_kick(d->blk);
	uint64_t t0 = d->port.now_ns(d->port.ctx);
	uint64_t limit = (uint64_t)d->timeout_ms * 1000000u;
	for (;;) {
		struct blk_req *done = NULL;
		err = blk_poll(d->blk, &done);
		uint64_t waited = d->port.now_ns(d->port.ctx) - t0;
		if (err == 0) {
			if (done != r) { /* nothing else is in flight: a device bug */
				d->broken = true;
				note_err(d, op, r->lba, -E_PROTO);
				return -E_PROTO;
			}
			if (waited > d->st.wait_ns_max)
				d->st.wait_ns_max = waited;
			if (r->status) {
				note_err(d, op, r->lba, r->status);
				return r->status == -E_NOSYS ? -E_NOSYS : -E_IO;
			}
			d->st.ops[op]++;
			return 0;
		}
		if (err != -E_AGAIN) { /* the queue broke: the request never completes */
			d->broken = true;
			note_err(d, op, r->lba, -E_CLOSED);
			return -E_CLOSED;
		}
		if (waited > limit) {
			d->broken = true; /* invariant 2 */
			d->st.timeouts++;
			note_err(d, op, r->lba, -E_TIMEOUT);
			return -E_TIMEOUT;
		}
		if (d->port.waiting)
			d->port.waiting(d->port.ctx);
	}
}

static int check_range(const struct store_dev *d, uint64_t lba, uint64_t n)
{
	uint64_t cap = d->blk->topo.capacity;
	if (n == 0 || lba > cap || n > cap - lba)
		return -E_RANGE;
	return 0;
}

int store_dev_read(struct store_dev *d, uint64_t lba, uint32_t n, void *buf)
{
	int err = check_range(d, lba, n);
	if (err)
		return err;
	uint32_t bs = store_dev_block_size(d);
	uint32_t per = (uint32_t)(d->bounce_len / bs);
	uint8_t *out = buf;
	while (n) {
		uint32_t k = MIN(n, per);
		struct blk_req r = { .op = BLK_READ, .lba = lba, .n_blocks = k, .buf = d->bounce };
		err = run(d, STORE_DEV_READ, &r);
		if (err)
			return err;
		memcpy(out, d->bounce, (size_t)k * bs);
		d->st.blocks[STORE_DEV_READ] += k;
		out += (size_t)k * bs;
		lba += k;
		n -= k;
	}
	return 0;
}

int store_dev_write(struct store_dev *d, uint64_t lba, uint32_t n, const void *buf)
{
	int err = check_range(d, lba, n);
	if (err)
		return err;
	if (d->blk->topo.read_only)
		return -E_PERM;
	uint32_t bs = store_dev_block_size(d);
	uint32_t per = (uint32_t)(d->bounce_len / bs);
	const uint8_t *in = buf;
	while (n) {
		uint32_t k = MIN(n, per);
		memcpy(d->bounce, in, (size_t)k * bs);
		struct blk_req r = { .op = BLK_WRITE, .lba = lba, .n_blocks = k, .buf = d->bounce };
		err = run(d, STORE_DEV_WRITE, &r);
		if (err)
			return err;
		d->st.blocks[STORE_DEV_WRITE] += k;
		in += (size_t)k * bs;
		lba += k;
		n -= k;
	}
	return 0;
}

int store_dev_flush(struct store_dev *d)
{
	if (d->broken)
		return -E_CLOSED;
	if (!d->blk->topo.flush)
		return 0; /* no volatile cache: a completed write is durable */
	struct blk_req r = { .op = BLK_FLUSH };
	return run(d, STORE_DEV_FLUSH, &r);
}

/* DISCARD or WRITE_ZEROES in requests of at most max_discard blocks. */
static int range_op(struct store_dev *d, enum blk_op bop, enum store_dev_op op, uint64_t lba, uint64_t n)
{
	uint64_t per = d->blk->topo.max_discard ? d->blk->topo.max_discard : UINT32_MAX;
	while (n) {
		uint32_t k = (uint32_t)MIN(n, MIN(per, (uint64_t)UINT32_MAX));
		struct blk_req r = { .op = bop, .lba = lba, .n_blocks = k };
		int err = run(d, op, &r);
		if (err)
			return err;
		d->st.blocks[op] += k;
		lba += k;
		n -= k;
	}
	return 0;
}

int store_dev_discard(struct store_dev *d, uint64_t lba, uint64_t n)
{
	int err = check_range(d, lba, n);
	if (err)
		return err;
	if (d->blk->topo.read_only)
		return -E_PERM;
	if (!d->blk->topo.discard)
		return -E_NOSYS;
	return range_op(d, BLK_DISCARD, STORE_DEV_DISCARD, lba, n);
}

int store_dev_zero(struct store_dev *d, uint64_t lba, uint64_t n)
{
	int err = check_range(d, lba, n);
	if (err)
		return err;
	if (d->blk->topo.read_only)
		return -E_PERM;
	if (d->blk->topo.write_zeroes) {
		err = range_op(d, BLK_WRITE_ZEROES, STORE_DEV_ZERO, lba, n);
		if (err != -E_NOSYS)
			return err;
	}
	/* No WRITE_ZEROES: write zero blocks through the bounce buffer. */
	uint32_t bs = store_dev_block_size(d);
	uint32_t per = (uint32_t)(d->bounce_len / bs);
	while (n) {
		uint32_t k = (uint32_t)MIN(n, (uint64_t)per);
		memset(d->bounce, 0, (size_t)k * bs);
		struct blk_req r = { .op = BLK_WRITE, .lba = lba, .n_blocks = k, .buf = d->bounce };
		err = run(d, STORE_DEV_ZERO, &r);
		if (err)
			return err;
		d->st.blocks[STORE_DEV_ZERO] += k;
		lba += k;
		n -= k;
	}
	return 0;
}
