/* SPDX-License-Identifier: MIT
 *
 * The block interface the storage layer sees: asynchronous submit/complete of read,
 * write, flush, discard and write-zeroes on logical blocks, plus the device's topology.
 * virtio-blk and virtio-scsi (and the hosted file disk) implement it; callers never see
 * which. Requests are linked: the caller's struct blk_req and its buffer must stay alive
 * and untouched from blk_submit until blk_poll hands the request back.
 */
#ifndef DRIVERS_BLK_H
#define DRIVERS_BLK_H

#include "lib/compiler.h"

enum blk_op { BLK_READ, BLK_WRITE, BLK_FLUSH, BLK_DISCARD, BLK_WRITE_ZEROES };

struct blk_req {
	enum blk_op op;
	uint64_t lba;      /* logical blocks */
	uint32_t n_blocks; /* 0 only for FLUSH */
	void *buf;         /* linked: READ/WRITE, n_blocks * logical_block bytes of DMA memory,
			      physically contiguous */
	void *cookie;      /* the caller's */
	int status;        /* out: 0 or -E_IO (device error), -E_NOSYS, -E_PROTO (bad reply) */
	uint32_t sense;    /* out (SCSI): key << 16 | asc << 8 | ascq of the last failure */
};

struct blk_topology {
	uint64_t capacity;       /* logical blocks */
	uint32_t logical_block;  /* bytes: 512..65536, power of two */
	uint32_t physical_block; /* bytes, >= logical_block */
	uint32_t optimal_io;     /* bytes; 0 when the device does not say */
	uint32_t max_discard;    /* blocks per DISCARD/WRITE_ZEROES; 0 when unsupported */
	bool read_only;
	bool flush;        /* false: no volatile write cache, a completed write is durable and
			      FLUSH is refused with -E_NOSYS (callers skip it) */
	bool discard, write_zeroes;
};

struct blk_ops {
	/* Queue one request (not yet visible to the device until kick). -E_AGAIN when the
	 * queue is full, -E_RANGE beyond capacity, -E_NOSYS for an unsupported op, -E_PERM
	 * for a write to a read-only device, -E_INVAL for a malformed request. */
	int (*submit)(void *impl, struct blk_req *r);
	/* Make everything submitted visible to the device. */
	void (*kick)(void *impl);
	/* One completed request with status set, or -E_AGAIN; a broken device returns
	 * -E_CLOSED (its in-flight requests never complete). */
	int (*poll)(void *impl, struct blk_req **done /* out */);
};

struct blk_dev {
	const struct blk_ops *ops; /* linked */
	void *impl;                /* linked */
	struct blk_topology topo;
};

/* Boot self-test on the reserved scratch area (the last 4 KiB, or one block if larger):
 * write a pattern derived from seed, read it back, verify, flush. buf: DMA memory of at
 * least twice the scratch size (borrowed). Each wait is bounded by max_polls polls.
 * Returns 0, or -E_* with *why a static reason for the boot banner. The device must have
 * nothing else in flight. */
int blk_selftest(struct blk_dev *d, uint8_t *buf, size_t buf_len, uint32_t seed, uint32_t max_polls,
		 const char **why /* out */) MUST_CHECK;

/* The same self-test one step at a time, for a core's loop (a disk that grew has a new
 * scratch area: run it again there). start: checks and prepares, 0 or -E_INVAL with
 * *why. step: polls once (submitting the next request first when needed); -E_AGAIN
 * while running (call again later), 0 once passed, else -E_* with *why; each request is
 * given max_polls steps. s, d and buf are linked until the run ends; the caller owns s. */
struct blk_selftest_run {
	struct blk_dev *d; /* linked */
	uint8_t *buf;      /* linked: 2 * bytes of DMA memory */
	uint32_t bytes, n;
	uint64_t lba;
	uint32_t max_polls, polls;
	uint8_t step;
	bool posted;
	bool write;        /* false: read only (blk_readtest_start) */
	struct blk_req r;
};
int blk_selftest_start(struct blk_selftest_run *s, struct blk_dev *d, uint8_t *buf, size_t buf_len, uint32_t seed,
		       uint32_t max_polls, const char **why /* out */) MUST_CHECK;
int blk_selftest_step(struct blk_selftest_run *s, const char **why /* out */) MUST_CHECK;

/* The read-only run: read the scratch area (last 4 KiB) and nothing else, for a disk that
 * is not known to be ours (storage writes only a disk it recognised; store/boot.h runs
 * the write test on its own scratch block). Same arguments and results, no seed; then
 * blk_selftest_step, or blk_readtest for the whole run. */
int blk_readtest_start(struct blk_selftest_run *s, struct blk_dev *d, uint8_t *buf, size_t buf_len,
		       uint32_t max_polls, const char **why /* out */) MUST_CHECK;
int blk_readtest(struct blk_dev *d, uint8_t *buf, size_t buf_len, uint32_t max_polls,
		 const char **why /* out */) MUST_CHECK;

static inline MUST_CHECK int blk_submit(struct blk_dev *d, struct blk_req *r) { return d->ops->submit(d->impl, r); }
static inline void blk_kick(struct blk_dev *d) { d->ops->kick(d->impl); }
static inline MUST_CHECK int blk_poll(struct blk_dev *d, struct blk_req **done) { return d->ops->poll(d->impl, done); }

#endif
