/* SPDX-License-Identifier: MIT
 *
 * The hosted disk: a regular file behind drivers/blk.h, so the storage layer runs
 * unchanged in the hosted build. READ/WRITE are pread/pwrite, FLUSH is fdatasync,
 * DISCARD punches a hole (FALLOC_FL_PUNCH_HOLE), WRITE_ZEROES zeroes a range (hole or
 * explicit zeros when the file system cannot punch). Requests are queued at submit
 * (bounded by the queue depth given at open), carried out at kick, and handed back by
 * poll in submission order. Never allocates after open; never touches bytes outside
 * [0, capacity * logical_block) of the file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hosted/blk_file.h"
#include "lib/err.h"

static struct blk_req *ring_at(struct hosted_blk_file *f, uint32_t i)
{
	return f->ring[i % f->depth];
}

static int full_io(int fd, bool write, uint8_t *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -E_IO;
		if (n == 0) {
			if (write)
				return -E_IO;
			memset(buf, 0, len); /* past the end of a short file: zeros */
			return 0;
		}
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int zero_range(struct hosted_blk_file *f, off_t off, off_t len, bool discard)
{
	int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	if (fallocate(f->fd, mode, off, len) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -E_IO;
	if (discard)
		return 0; /* discard is advisory: the data may stay */
	static const uint8_t zeros[65536];
	while (len > 0) {
		size_t n = (size_t)MIN(len, (off_t)sizeof zeros);
		if (full_io(f->fd, true, (uint8_t *)(uintptr_t)zeros, n, off) < 0) /* NOLINT(performance-no-int-to-ptr): written, never modified */
			return -E_IO;
		off += (off_t)n;
		len -= (off_t)n;
	}
	return 0;
}

static int execute(struct hosted_blk_file *f, struct blk_req *r)
{
	off_t off = (off_t)(r->lba * f->dev.topo.logical_block);
	size_t len = (size_t)r->n_blocks * f->dev.topo.logical_block;
	switch (r->op) {
	case BLK_READ:
		return full_io(f->fd, false, r->buf, len, off);
	case BLK_WRITE:
		return full_io(f->fd, true, r->buf, len, off);
	case BLK_FLUSH:
		return fdatasync(f->fd) == 0 ? 0 : -E_IO;
	case BLK_DISCARD:
		return zero_range(f, off, (off_t)len, true);
	case BLK_WRITE_ZEROES:
		return zero_range(f, off, (off_t)len, false);
	}
	return -E_NOSYS;
}

static int file_submit(void *impl, struct blk_req *r)
{
	struct hosted_blk_file *f = impl;
	const struct blk_topology *t = &f->dev.topo;

	if (!r)
		return -E_INVAL;
	switch (r->op) {
	case BLK_READ:
	case BLK_WRITE:
		if (!r->buf || !r->n_blocks)
			return -E_INVAL;
		break;
	case BLK_FLUSH:
		if (r->n_blocks)
			return -E_INVAL;
		break;
	case BLK_DISCARD:
	case BLK_WRITE_ZEROES:
		if (!r->n_blocks)
			return -E_INVAL;
		if (r->n_blocks > t->max_discard)
			return -E_RANGE;
		break;
	default:
		return -E_NOSYS;
	}
	if (r->op != BLK_READ && r->op != BLK_FLUSH && t->read_only)
		return -E_PERM;
	if (r->op != BLK_FLUSH &&
	    (r->lba > t->capacity || r->n_blocks > t->capacity - r->lba))
		return -E_RANGE;
	if (f->n_queued + f->n_done >= f->depth)
		return -E_AGAIN;
	r->status = 0;
	r->sense = 0;
	f->ring[(f->head + f->n_done + f->n_queued) % f->depth] = r;
	f->n_queued++;
	return 0;
}

static void file_kick(void *impl)
{
	struct hosted_blk_file *f = impl;
	while (f->n_queued) {
		struct blk_req *r = ring_at(f, f->head + f->n_done);
		r->status = execute(f, r);
		if (r->status)
			f->n_errors++;
		f->n_queued--;
		f->n_done++;
	}
}

static int file_poll(void *impl, struct blk_req **done)
{
	struct hosted_blk_file *f = impl;
	if (!f->n_done)
		return -E_AGAIN;
	*done = ring_at(f, f->head);
	f->ring[f->head] = NULL;
	f->head = (f->head + 1) % f->depth;
	f->n_done--;
	return 0;
}

static const struct blk_ops hosted_blk_file_ops = {
	.submit = file_submit,
	.kick = file_kick,
	.poll = file_poll,
};

int hosted_blk_file_open(struct hosted_blk_file *f, const char *path, uint64_t create_bytes,
			 uint32_t logical_block, uint32_t depth, bool read_only)
{
	struct stat st;
	int rc = -E_INVAL;

	*f = (struct hosted_blk_file){.fd = -1};
	if (!path || logical_block < 512 || logical_block > 65536 ||
	    (logical_block & (logical_block - 1)) || !depth || depth > 65536)
		return -E_INVAL;
	f->fd = open(path, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC |
				   (create_bytes && !read_only ? O_CREAT : 0), 0600);
	if (f->fd < 0)
		return -E_NOENT;
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode))
		goto fail;
	if (create_bytes && (uint64_t)st.st_size < create_bytes) {
		if (ftruncate(f->fd, (off_t)create_bytes) != 0 || fstat(f->fd, &st) != 0)
			goto fail;
	}
	f->ring = calloc(depth, sizeof f->ring[0]); /* NOLINT(bugprone-sizeof-expression): an array of request pointers */
	if (!f->ring) {
		rc = -E_NOMEM;
		goto fail;
	}
	f->depth = depth;
	f->dev.ops = &hosted_blk_file_ops;
	f->dev.impl = f;
	f->dev.topo = (struct blk_topology){
		.capacity = (uint64_t)st.st_size / logical_block,
		.logical_block = logical_block,
		.physical_block = MAX(logical_block, 4096u),
		.optimal_io = 0,
		.max_discard = (uint32_t)MIN((1u << 30) / logical_block, UINT32_MAX),
		.read_only = read_only,
		.flush = true,
		.discard = !read_only,
		.write_zeroes = !read_only,
	};
	if (!f->dev.topo.capacity)
		goto fail;
	return 0;
fail:
	hosted_blk_file_close(f);
	return rc;
}

void hosted_blk_file_close(struct hosted_blk_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->ring);
	*f = (struct hosted_blk_file){.fd = -1};
}
