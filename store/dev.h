/* SPDX-License-Identifier: MIT
 *
 * Synchronous block I/O for the storage layer (store/), over the asynchronous
 * drivers/blk.h interface: read, write, flush, discard and write-zeroes of whole logical
 * blocks, each call waiting for its completion with a bound. Only the database core (or
 * core 0 when it runs the database from its loop) calls it: waiting for the disk is that
 * core's job and nobody else's. The caller's buffers may be anywhere; data moves through
 * one DMA bounce buffer the platform gives, in chunks of its size, so the device never
 * sees a buffer it was not given for DMA.
 *
 * A request that does not complete within timeout_ms is abandoned: the device is then
 * considered broken (every later call fails with -E_CLOSED), because its request slot
 * and the bounce buffer might still be written by the device. Errors are counted per
 * operation; the first failure of each kind is kept with its block number for the log.
 * Not interrupt-safe, single core.
 */
#ifndef STORE_DEV_H
#define STORE_DEV_H

#include "drivers/blk.h"
#include "lib/compiler.h"

enum store_dev_op { STORE_DEV_READ, STORE_DEV_WRITE, STORE_DEV_FLUSH, STORE_DEV_DISCARD,
		    STORE_DEV_ZERO, STORE_DEV__OPS };

struct store_dev_stats {
	uint64_t ops[STORE_DEV__OPS];    /* requests completed with success */
	uint64_t blocks[STORE_DEV__OPS]; /* blocks moved (read, written, discarded, zeroed) */
	uint64_t errors[STORE_DEV__OPS]; /* requests that failed (device status or submit) */
	uint64_t timeouts;
	uint64_t wait_ns_max;            /* longest single wait, flushes included */
};

struct store_dev_port {
	uint64_t (*now_ns)(void *ctx);   /* monotonic */
	/* Called while a request is outstanding, at most every poll (may be NULL): the kernel
	 * tells its watchdog the database core is waiting for the device, not stuck. */
	void (*waiting)(void *ctx);
	void *ctx;                       /* linked */
};

struct store_dev {
	struct blk_dev *blk;   /* linked */
	uint8_t *bounce;       /* linked: DMA memory, bounce_len bytes */
	size_t bounce_len;     /* a multiple of the logical block size */
	uint32_t timeout_ms;
	struct store_dev_port port;
	bool broken;           /* a request timed out or the queue failed: -E_CLOSED from now on */
	int first_err;         /* the first failure (negative error) and where it was */
	enum store_dev_op first_err_op;
	uint64_t first_err_lba;
	struct store_dev_stats st;
};

/* Wrap blk (linked) with the bounce buffer (linked, DMA memory, at least one logical
 * block; used in whole blocks). 0 or -E_INVAL. blk must have nothing in flight. */
MUST_CHECK int store_dev_init(struct store_dev *d, struct blk_dev *blk, uint8_t *bounce,
			      size_t bounce_len, uint32_t timeout_ms,
			      const struct store_dev_port *port);

static inline uint32_t store_dev_block_size(const struct store_dev *d)
{
	return d->blk->topo.logical_block;
}
static inline uint64_t store_dev_blocks(const struct store_dev *d)
{
	return d->blk->topo.capacity;
}

/* n blocks at lba into / from buf (borrowed, n * block size bytes). 0, -E_RANGE (beyond
 * the capacity or n 0), -E_PERM (write to a read-only device), -E_IO (the device failed
 * the request), -E_TIMEOUT (then broken), -E_CLOSED (broken earlier). A failed write may
 * have written any subset of its blocks. */
MUST_CHECK int store_dev_read(struct store_dev *d, uint64_t lba, uint32_t n, void *buf);
MUST_CHECK int store_dev_write(struct store_dev *d, uint64_t lba, uint32_t n, const void *buf);
/* Every write completed before the call is durable once it returns 0. A device without a
 * volatile cache (topology.flush false) needs none: 0 at once. */
MUST_CHECK int store_dev_flush(struct store_dev *d);
/* Hand n blocks back to the device (DISCARD) or make them read as zeros (WRITE_ZEROES).
 * -E_NOSYS when the device offers neither; contents after a discard are unspecified. */
MUST_CHECK int store_dev_discard(struct store_dev *d, uint64_t lba, uint64_t n);
MUST_CHECK int store_dev_zero(struct store_dev *d, uint64_t lba, uint64_t n);

#endif
