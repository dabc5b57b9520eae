/* SPDX-License-Identifier: MIT
 *
 * drivers/: the block self-test over drivers/blk.h: write a seeded pattern to the
 * scratch area reserved at the end of the disk (the last 4 KiB), read it back, compare,
 * flush. Synchronous at boot (blk_selftest), or one step per call from a core's loop
 * (blk_selftest_start/step, e.g. on the new end of a disk that grew). Works on any
 * blk_dev (virtio-blk, virtio-scsi, hosted file). Never touches anything outside the
 * scratch area and never waits without a bound.
 * Run: WRITE -(completed)-> READ -(completed, equal)-> FLUSH (if the device has a cache)
 * -> DONE; any failure -> DONE with the error. The read-only run: READ -(completed)-> DONE
 * (it writes nothing, for a disk that may not be ours).
 */
#include "drivers/blk.h"
#include "lib/err.h"
#include "lib/mem.h"

#define SCRATCH_BYTES 4096u

enum { ST_WRITE, ST_READ, ST_FLUSH, ST_DONE };

static int start(struct blk_selftest_run *s, struct blk_dev *d, uint8_t *buf, size_t buf_len, uint32_t seed,
		 uint32_t max_polls, bool write, const char **why)
{
	const struct blk_topology *t = &d->topo;
	uint32_t bytes = t->logical_block > SCRATCH_BYTES ? t->logical_block : SCRATCH_BYTES;
	uint32_t n = bytes / (t->logical_block ? t->logical_block : 1);

	memset(s, 0, sizeof *s);
	s->step = ST_DONE;
	*why = NULL;
	if (t->logical_block == 0 || buf_len < 2u * (size_t)bytes || t->capacity < n || (write && t->read_only) ||
	    max_polls == 0) {
		*why = write && t->read_only ? "read-only device" : "disk or buffer too small";
		return -E_INVAL;
	}
	for (uint32_t i = 0; i < bytes; i++)
		buf[i] = (uint8_t)((seed >> ((i & 3u) * 8u)) ^ (i * 131u) ^ (i >> 8));
	memset(buf + bytes, 0, bytes);
	s->d = d;
	s->buf = buf;
	s->bytes = bytes;
	s->n = n;
	/* The scratch area as the capacity stands now: a later growth moves it, and the
	 * next run tests the new end. */
	s->lba = t->capacity - n;
	s->max_polls = max_polls;
	s->step = write ? ST_WRITE : ST_READ;
	s->write = write;
	return 0;
}

int blk_selftest_start(struct blk_selftest_run *s, struct blk_dev *d, uint8_t *buf, size_t buf_len, uint32_t seed,
		       uint32_t max_polls, const char **why)
{
	return start(s, d, buf, buf_len, seed, max_polls, true, why);
}

int blk_readtest_start(struct blk_selftest_run *s, struct blk_dev *d, uint8_t *buf, size_t buf_len,
		       uint32_t max_polls, const char **why)
{
	return start(s, d, buf, buf_len, 0, max_polls, false, why);
}

/* Submit the request of the current step. */
static int post(struct blk_selftest_run *s, const char **why)
{
	static const char *const refused[] = { "write not accepted", "read not accepted", "flush not accepted" };
	int err;

	if (s->step == ST_WRITE)
		s->r = (struct blk_req){ .op = BLK_WRITE, .lba = s->lba, .n_blocks = s->n, .buf = s->buf };
	else if (s->step == ST_READ)
		s->r = (struct blk_req){ .op = BLK_READ, .lba = s->lba, .n_blocks = s->n, .buf = s->buf + s->bytes };
	else
		s->r = (struct blk_req){ .op = BLK_FLUSH };
	err = blk_submit(s->d, &s->r);
	if (err) {
		*why = refused[s->step];
		return err;
	}
	blk_kick(s->d);
	s->posted = true;
	return 0;
}

int blk_selftest_step(struct blk_selftest_run *s, const char **why)
{
	struct blk_req *done;
	int err;

	*why = NULL;
	if (s->step == ST_DONE)
		return -E_INVAL;
	if (!s->posted) {
		err = post(s, why);
		if (err == -E_AGAIN) /* queue full: something else is in flight; retry */
			*why = NULL;
		else if (err)
			goto fail;
	}
	err = s->posted ? blk_poll(s->d, &done) : -E_AGAIN;
	if (err == -E_AGAIN) {
		if (++s->polls < s->max_polls)
			return -E_AGAIN;
		*why = "timeout";
		err = -E_TIMEOUT;
		goto fail;
	}
	if (err) {
		*why = "device failed";
		goto fail;
	}
	if (done != &s->r) {
		*why = "unexpected completion";
		err = -E_PROTO;
		goto fail;
	}
	if (s->r.status) {
		*why = "request failed";
		err = s->r.status;
		goto fail;
	}
	s->posted = false;
	s->polls = 0;
	if (s->write && s->step == ST_READ && memcmp(s->buf, s->buf + s->bytes, s->bytes) != 0) {
		*why = "read back differs";
		err = -E_CORRUPT;
		goto fail;
	}
	if (!s->write) {
		s->step = ST_DONE; /* read only: done once the read came back */
		return 0;
	}
	s->step = s->step == ST_WRITE ? ST_READ : (s->step == ST_READ && s->d->topo.flush) ? ST_FLUSH : ST_DONE;
	return s->step == ST_DONE ? 0 : -E_AGAIN;
fail:
	/* A request still in flight stays the device's (the run is over; the caller must not
	 * reuse buf while the device may still write it: a broken device never completes). */
	s->step = ST_DONE;
	return err;
}

int blk_readtest(struct blk_dev *d, uint8_t *buf, size_t buf_len, uint32_t max_polls, const char **why)
{
	struct blk_selftest_run s;
	int err = blk_readtest_start(&s, d, buf, buf_len, max_polls, why);

	if (err)
		return err;
	while ((err = blk_selftest_step(&s, why)) == -E_AGAIN)
		;
	return err;
}

int blk_selftest(struct blk_dev *d, uint8_t *buf, size_t buf_len, uint32_t seed, uint32_t max_polls,
		 const char **why)
{
	struct blk_selftest_run s;
	int err = blk_selftest_start(&s, d, buf, buf_len, seed, max_polls, why);

	if (err)
		return err;
	while ((err = blk_selftest_step(&s, why)) == -E_AGAIN)
		;
	return err;
}
