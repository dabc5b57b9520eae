/* SPDX-License-Identifier: MIT
 *
 * The hosted disk: a regular file as a drivers/blk.h block device (pread/pwrite,
 * fdatasync, punch-hole discard). Private to hosted/ (and its tests); host code only.
 * Single-threaded: submit, kick and poll on the caller's loop.
 */
#ifndef HOSTED_BLK_FILE_H
#define HOSTED_BLK_FILE_H

#include "drivers/blk.h"

struct hosted_blk_file {
	struct blk_dev dev;    /* what callers use: blk_submit(&f->dev, ...) */
	int fd;
	struct blk_req **ring; /* depth slots: completed, then queued requests */
	uint32_t depth, head, n_done, n_queued;
	uint64_t n_errors;
};

/* Open `path` as a disk of logical_block-byte blocks (capacity = file size rounded
 * down). create_bytes > 0 creates the file or extends it to that size (sparse). depth
 * bounds the requests in flight (submit returns -E_AGAIN beyond it). `path` borrowed;
 * `f` linked (dev.impl points at it). -E_INVAL (bad arguments, not a regular file,
 * empty), -E_NOENT (cannot open), -E_NOMEM. */
MUST_CHECK int hosted_blk_file_open(struct hosted_blk_file *f, const char *path,
				    uint64_t create_bytes, uint32_t logical_block,
				    uint32_t depth, bool read_only);
/* Close; requests still in flight are forgotten (the caller's). */
void hosted_blk_file_close(struct hosted_blk_file *f);

#endif
