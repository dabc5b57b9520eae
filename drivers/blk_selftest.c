/* SPDX-License-Identifier: MIT
 *
 * drivers/: the boot-time block self-test over drivers/blk.h: write a seeded pattern to
 * the scratch area reserved at the end of the disk (the last 4 KiB), read it back,
 * compare, flush. Works on any blk_dev (virtio-blk, virtio-scsi, hosted file). Never
 * touches anything outside the scratch area and never waits without a bound.
 */
#include "drivers/blk.h"
#include "lib/err.h"
#include "lib/mem.h"

#define SCRATCH_BYTES 4096u

static int wait_done(struct blk_dev *d, struct blk_req *r, uint32_t max_polls, const char **why)
{
	blk_kick(d);
	for (uint32_t i = 0; i < max_polls; i++) {
		struct blk_req *done;
		int err = blk_poll(d, &done);
		if (err == -E_AGAIN)
			continue;
		if (err) {
			*why = "device failed";
			return err;
		}
		if (done != r) {
			*why = "unexpected completion";
			return -E_PROTO;
		}
		if (r->status)
			*why = "request failed";
		return r->status;
	}
	*why = "timeout";
	return -E_TIMEOUT;
}

int blk_selftest(struct blk_dev *d, uint8_t *buf, size_t buf_len, uint32_t seed, uint32_t max_polls,
		 const char **why)
{
	const struct blk_topology *t = &d->topo;
	uint32_t bytes = t->logical_block > SCRATCH_BYTES ? t->logical_block : SCRATCH_BYTES;
	uint32_t n = bytes / (t->logical_block ? t->logical_block : 1);
	struct blk_req r;
	int err;

	*why = NULL;
	if (t->logical_block == 0 || buf_len < 2u * (size_t)bytes || t->capacity < n || t->read_only) {
		*why = t->read_only ? "read-only device" : "disk or buffer too small";
		return -E_INVAL;
	}
	for (uint32_t i = 0; i < bytes; i++)
		buf[i] = (uint8_t)((seed >> ((i & 3u) * 8u)) ^ (i * 131u) ^ (i >> 8));
	memset(buf + bytes, 0, bytes);

	r = (struct blk_req){ .op = BLK_WRITE, .lba = t->capacity - n, .n_blocks = n, .buf = buf };
	err = blk_submit(d, &r);
	if (!err)
		err = wait_done(d, &r, max_polls, why);
	else
		*why = "write not accepted";
	if (err)
		return err;
	r = (struct blk_req){ .op = BLK_READ, .lba = t->capacity - n, .n_blocks = n, .buf = buf + bytes };
	err = blk_submit(d, &r);
	if (!err)
		err = wait_done(d, &r, max_polls, why);
	else
		*why = "read not accepted";
	if (err)
		return err;
	if (memcmp(buf, buf + bytes, bytes) != 0) {
		*why = "read back differs";
		return -E_CORRUPT;
	}
	if (t->flush) {
		r = (struct blk_req){ .op = BLK_FLUSH };
		err = blk_submit(d, &r);
		if (!err)
			err = wait_done(d, &r, max_polls, why);
		else
			*why = "flush not accepted";
	}
	return err;
}
