/* SPDX-License-Identifier: MIT
 *
 * A simulated block device behind drivers/blk.h for host tests: an in-memory disk with a
 * volatile write cache, fault injection, and a power-cut model. Never in an image.
 *
 * The model. Reads see every completed write. A completed write (or discard or
 * write-zeroes, which are writes of zeros here) is durable only once a FLUSH submitted
 * after its completion completes; a device configured without a cache (flush false)
 * makes every write durable at completion. fake_blk_after_power_cut() builds the disk
 * that survives a power cut at this instant: the durable image, plus any subset of the
 * writes not yet flushed, applied in any order (both chosen by a seeded generator), so
 * unflushed writes are lost, kept or reordered. fake_blk_die_at(n) cuts the power while
 * request n is in flight: a write then reaches the cache only partly (a random subset of
 * its 512-byte sectors: a torn write), and that request and every later one fail with
 * -E_IO, as a device that lost power would.
 *
 * Requests complete in submission order, one per poll (after `delay_polls` polls), or
 * never when stalled (to test timeouts). The disk can grow (fake_blk_grow: a larger
 * virtual disk, its new blocks zero), as a virtio-blk device whose capacity changed. Counters let a test prove that a disk was never
 * written. Single-threaded; every buffer is malloc'd at creation.
 */
#ifndef TESTS_SUPPORT_FAKE_BLK_H
#define TESTS_SUPPORT_FAKE_BLK_H

#include "drivers/blk.h"

struct fake_blk_config {
	uint64_t blocks;          /* capacity in logical blocks */
	uint32_t block_size;      /* 512 .. 65536, power of two */
	uint32_t physical_block;  /* 0: = block_size */
	uint32_t optimal_io;      /* bytes, 0 = not said */
	uint32_t max_discard;     /* blocks per DISCARD/WRITE_ZEROES, 0 = unlimited */
	uint32_t depth;           /* requests in flight before submit says -E_AGAIN; 0 = 64 */
	uint32_t delay_polls;     /* polls returning -E_AGAIN before each completion */
	bool no_cache;            /* no volatile cache: FLUSH unsupported, writes durable at once */
	bool discard, write_zeroes, read_only;
};

struct fake_blk_counts {
	uint64_t requests;        /* submitted (accepted) requests, of every kind */
	uint64_t reads, writes, flushes, discards, zeroes;
	uint64_t blocks_written;  /* by WRITE, DISCARD and WRITE_ZEROES */
	uint64_t unflushed;       /* writes completed since the last flush (pending) */
};

struct fake_blk;

/* A zero-filled disk. NULL on bad config or no memory. */
struct fake_blk *fake_blk_new(const struct fake_blk_config *c);
void fake_blk_free(struct fake_blk *f);
/* The device to hand to the code under test (linked: lives as long as f). */
struct blk_dev *fake_blk_dev(struct fake_blk *f);
/* The disk as reads see it now (every completed write), size bytes. */
const uint8_t *fake_blk_bytes(const struct fake_blk *f, size_t *size /* out */);
/* The durable image (what a power cut keeps for sure), same size. */
const uint8_t *fake_blk_durable(const struct fake_blk *f);
/* Test set-up: put len bytes (borrowed) at byte offset off, durable at once. Aborts when
 * out of range. */
void fake_blk_set(struct fake_blk *f, uint64_t off, const void *data, size_t len);
void fake_blk_counts(const struct fake_blk *f, struct fake_blk_counts *out /* out */);
/* The disk grows to `blocks` blocks (>= its size): the new blocks read as zeros and are
 * durable zeros; the device's capacity (blk_topology.capacity) says the new size at once.
 * Aborts when it would shrink or on no memory. Requests in flight are not affected. */
void fake_blk_grow(struct fake_blk *f, uint64_t blocks);

/* Request number n (counting accepted submissions from 0) completes with status err
 * (e.g. -E_IO) and does nothing else. One at a time: a new call replaces the last. */
void fake_blk_fail_request(struct fake_blk *f, uint64_t n, int err);
/* Submission number n (counting every submit call from 0) is refused with err
 * (-E_AGAIN, -E_INVAL...). */
void fake_blk_fail_submit(struct fake_blk *f, uint64_t n, int err);
/* Request n never completes (poll keeps returning -E_AGAIN). */
void fake_blk_stall_request(struct fake_blk *f, uint64_t n);
/* Power is cut while request n is in flight (see the head); seed picks the torn sectors. */
void fake_blk_die_at(struct fake_blk *f, uint64_t n, uint64_t seed);
/* Has the device died (fake_blk_die_at reached)? */
bool fake_blk_dead(const struct fake_blk *f);

/* What survived. */
struct fake_blk_cut_report {
	uint64_t pending;   /* unflushed writes (torn parts counted one per sector) */
	uint64_t kept;      /* of those, applied to the new disk */
};
/* A new, healthy device (same configuration, no faults armed) holding what a power cut
 * now leaves: the durable image plus a seeded subset of the unflushed writes in a seeded
 * order. f is unchanged. NULL on no memory. */
struct fake_blk *fake_blk_after_power_cut(const struct fake_blk *f, uint64_t seed,
					  struct fake_blk_cut_report *rep /* out, may be NULL */);

#endif
