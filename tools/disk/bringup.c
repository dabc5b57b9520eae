/* SPDX-License-Identifier: MIT
 *
 * tools/disk/disk.h: the broker's bring-up on an image, for the commands that write (format,
 * backup): SQLite initialised with the broker's memory bound, then store_boot configured as
 * kernel/kstore.c configures it from this build's CONF_STORAGE_* (page cache, checkpoint
 * size, layout), so the tool opens, creates and checks the database exactly as the broker
 * does at boot. And the host services store/ and SQLite ask for: randomness (getrandom, never
 * a fallback: GUIDs and salts), the wall clock, malloc. Host code; the image must be open
 * writable (the bring-up takes a boot generation).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/err.h"
#include "store/boot.h"
#include "store/sqlite/vfs.h"
#include "tools/disk/disk.h"
#include "urmqtt_config.h"

#define IO_BUF_BYTES (2u * 65536u) /* the VFS's read-modify-write slots: two blocks of any size */

void disk_random(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	uint8_t *p = buf;
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n <= 0) {
			fprintf(stderr, "urmqtt-disk: getrandom failed: no GUIDs, no salts\n");
			abort(); /* never format or write a log with predictable bytes */
		}
		p += n;
		len -= (size_t)n;
	}
}

int64_t disk_wall_ms(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t disk_wall_s(void *ctx)
{
	return disk_wall_ms(ctx) / 1000;
}

void *disk_sqlite_alloc(void *ctx, size_t len)
{
	(void)ctx;
	return len ? malloc(len) : NULL;
}

void disk_sqlite_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	free(p);
}

int disk_up_boot(struct disk_up *up, struct disk_image *im, const struct store_layout_config *layout)
{
	static uint8_t io_buf[IO_BUF_BYTES] ALIGNED(8);
	memset(up, 0, sizeof *up);
	up->db = calloc(1, sizeof *up->db);
	up->out = calloc(1, sizeof *up->out);
	if (!up->db || !up->out) {
		fprintf(stderr, "urmqtt-disk: %s: out of memory\n", im->path);
		return DISK_EXIT_BAD;
	}
	const struct store_sqlite_mem mem = { .alloc = disk_sqlite_alloc, .free = disk_sqlite_free,
					      .limit = (size_t)CONF_STORAGE_DB_HEAP_MB << 20 };
	int err = store_sqlite_init(&mem);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: SQLite could not be initialised (%s)\n", im->path, err_name(err));
		return DISK_EXIT_BAD;
	}
	up->lib_up = true;
	const struct store_layout_config build = { .esp_bytes = (uint64_t)CONF_STORAGE_ESP_MB << 20,
						   .wal_bytes = (uint64_t)CONF_STORAGE_WAL_MB << 20,
						   .telemetry_pct = CONF_STORAGE_TELEMETRY_PCT };
	uint8_t guids[48];
	disk_random(NULL, guids, sizeof guids);
	const struct store_boot_config bc = {
		.layout = layout ? *layout : build,
		.cache_kb = CONF_STORAGE_PAGE_CACHE_KB, .checkpoint_pages = CONF_STORAGE_CHECKPOINT_PAGES,
		.guids = guids, .now_s = disk_wall_s(NULL),
		.scratch = im->scratch, .scratch_len = STORE_LAYOUT_SCRATCH,
		.io_buf = io_buf, .io_buf_len = sizeof io_buf,
		.random = disk_random, .wall_ms = disk_wall_ms, .wall_s = disk_wall_s,
	};
	err = store_boot(&im->dev, &bc, up->db, up->out);
	memset(guids, 0, sizeof guids);
	if (err)
		return DISK_EXIT_BAD;
	up->db_up = true;
	return 0;
}

int disk_up_close(struct disk_up *up, struct disk_image *im)
{
	int rc = 0;
	if (up->db_up)
		store_boot_close(up->db);
	up->db_up = false;
	if (up->lib_up && store_sqlite_fini() != 0) {
		fprintf(stderr, "urmqtt-disk: %s: SQLite still held a connection\n", im->path);
		rc = DISK_EXIT_BAD;
	}
	up->lib_up = false;
	free(up->db);
	free(up->out);
	up->db = NULL;
	up->out = NULL;
	return rc;
}
