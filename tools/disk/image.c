/* SPDX-License-Identifier: MIT
 *
 * tools/disk/disk.h: an image file as the broker's storage layer sees a disk. The file is
 * opened through hosted/blk_file.h (read only unless a command writes: then the kernel refuses
 * every write through that descriptor, whatever a bug here tried), wrapped by store/dev.h and
 * recognised by store/layout.h's probe, exactly the code the broker runs at boot. Host code.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/err.h"
#include "store/tlog_scan.h"
#include "tools/disk/disk.h"

#define BOUNCE_BYTES (1u << 20)
#define IO_TIMEOUT_MS 30000u

uint64_t disk_mono_ns(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void *disk_alloc(size_t len)
{
	return len ? aligned_alloc(4096, (len + 4095u) & ~(size_t)4095u) : NULL;
}

/* hosted_blk_file_open says only -E_NOENT or -E_INVAL: find the reason in the system's words
 * first, so the message names it. */
static int precheck(const char *path, bool writable, uint64_t *bytes)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		int e = errno;
		fprintf(stderr, "urmqtt-disk: %s: %s%s\n", path, strerror(e),
			writable && e == ENOENT ? " (create the image first, e.g. truncate -s 1G FILE)" : "");
		return DISK_EXIT_BAD;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "urmqtt-disk: %s: not a regular file (urmqtt-disk reads and writes disk image files)\n",
			path);
		return DISK_EXIT_BAD;
	}
	if (st.st_size < 512) {
		fprintf(stderr, "urmqtt-disk: %s: %lld bytes: smaller than one 512-byte block\n", path,
			(long long)st.st_size);
		return DISK_EXIT_BAD;
	}
	int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "urmqtt-disk: %s: cannot open %s: %s\n", path, writable ? "for writing" : "for reading",
			strerror(errno));
		return DISK_EXIT_BAD;
	}
	close(fd);
	*bytes = (uint64_t)st.st_size;
	return 0;
}

static int open_at(struct disk_image *im, uint32_t bs)
{
	static const struct store_dev_port port = { .now_ns = disk_mono_ns };
	int err = hosted_blk_file_open(&im->f, im->path, 0, bs, 8, !im->writable);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: cannot open as a disk of %u-byte blocks (%s)\n", im->path, (unsigned)bs,
			err_name(err));
		return DISK_EXIT_BAD;
	}
	im->open = true;
	if (store_dev_init(&im->dev, &im->f.dev, im->bounce, BOUNCE_BYTES, IO_TIMEOUT_MS, &port) != 0) {
		fprintf(stderr, "urmqtt-disk: %s: the device layer refused the image\n", im->path);
		return DISK_EXIT_BAD;
	}
	return 0;
}

static void close_file(struct disk_image *im)
{
	if (im->open)
		hosted_blk_file_close(&im->f);
	im->open = false;
}

int disk_image_probe(struct disk_image *im)
{
	int err = store_disk_probe(&im->dev, im->scratch, STORE_LAYOUT_SCRATCH, &im->info);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: reading failed (%s)\n", im->path, err_name(err));
		return DISK_EXIT_BAD;
	}
	return 0;
}

int disk_image_open(struct disk_image *im, const char *path, bool writable)
{
	memset(im, 0, sizeof *im);
	im->path = path;
	im->writable = writable;
	int rc = precheck(path, writable, &im->file_bytes);
	if (rc)
		return rc;
	im->bounce = disk_alloc(BOUNCE_BYTES);
	im->scratch = disk_alloc(STORE_LAYOUT_SCRATCH);
	if (!im->bounce || !im->scratch) {
		fprintf(stderr, "urmqtt-disk: %s: out of memory\n", path);
		return DISK_EXIT_BAD;
	}
	rc = open_at(im, 512);
	if (!rc)
		rc = disk_image_probe(im);
	if (!rc && im->info.kind == STORE_DISK_OURS && im->info.sb.block_size != 512u) {
		uint32_t bs = im->info.sb.block_size; /* formatted with other blocks: read it that way */
		close_file(im);
		rc = open_at(im, bs);
		if (!rc)
			rc = disk_image_probe(im); /* on its own blocks, the probe checks the block size too */
	}
	return rc;
}

void disk_image_close(struct disk_image *im)
{
	close_file(im);
	free(im->bounce);
	free(im->scratch);
	im->bounce = im->scratch = NULL;
}

int disk_image_not_ours(const struct disk_image *im)
{
	const char *hint = "";
	switch (im->info.kind) {
	case STORE_DISK_BLANK:
	case STORE_DISK_INTERRUPTED:
		hint = " (urmqtt-disk format, or the broker at its boot, formats it)";
		break;
	case STORE_DISK_FOREIGN:
		hint = " (never written by urMQTT)";
		break;
	case STORE_DISK_DAMAGED:
	case STORE_DISK_OTHER_VERSION:
		hint = " (left as it is: nothing written)";
		break;
	case STORE_DISK_OURS:
		break;
	}
	fprintf(stderr, "urmqtt-disk: %s: not a usable urMQTT data disk (%s): %s%s\n", im->path,
		store_disk_kind_name(im->info.kind), im->info.what, hint);
	return DISK_EXIT_BAD;
}

bool disk_image_region(const struct disk_image *im, enum store_region_kind k, uint64_t *lba, uint64_t *blocks)
{
	const struct store_super *sb = &im->info.sb;
	const struct store_region *r = store_super_region(sb, k);
	if (!r || !r->blocks)
		return false;
	*lba = sb->part_start + r->start;
	*blocks = r->blocks;
	return true;
}

int disk_image_read(struct disk_image *im, uint64_t off, size_t len, void *buf)
{
	uint32_t bs = store_dev_block_size(&im->dev);
	if (off % bs || len % bs || !len)
		return -E_INVAL;
	uint8_t *p = buf;
	while (len) { /* store_dev_read takes a 32-bit count */
		size_t n = MIN(len, (size_t)1u << 30);
		int err = store_dev_read(&im->dev, off / bs, (uint32_t)(n / bs), p);
		if (err)
			return err;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

int disk_tlog_geometry(struct disk_image *im, uint64_t *lba, struct store_tlog_geom *g, const char **what)
{
	static const char *sink;
	const char **w = what ? what : &sink;
	uint64_t blocks;
	if (!disk_image_region(im, STORE_REGION_TELEMETRY, lba, &blocks)) {
		*w = "the layout has no telemetry region";
		return -E_NOENT;
	}
	int err = store_tlog_scan_geometry(&im->dev, *lba, blocks, im->scratch, g);
	switch (err) {
	case 0:
		*w = "ok";
		break;
	case -E_NOENT:
		*w = "never used (the broker writes its header when it first opens the log)";
		break;
	case -E_CORRUPT:
		*w = "its header does not validate (magic, CRC or geometry)";
		break;
	case -E_NOSYS:
		*w = "another version of its format, or a sector this device cannot write";
		break;
	default:
		*w = "its header could not be read";
		break;
	}
	return err;
}
