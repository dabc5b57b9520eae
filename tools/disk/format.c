/* SPDX-License-Identifier: MIT
 *
 * urmqtt-disk format (tools/disk/disk.h): lay out an image and create its database with the
 * broker's own bring-up, store_boot (probe, then for a blank disk or an interrupted format of
 * ours: plan, format, block self-test, database created, superblock READY, boot generation 1),
 * configured as kernel/kstore.c configures it from this build's CONF_STORAGE_* (bringup.c).
 * Anything that is not blank is refused, named and left untouched, unless --force: then what
 * makes the disk recognisable is zeroed first (below), so that the probe sees a blank disk,
 * and nothing of an earlier urMQTT disk's data survives.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "store/boot.h"
#include "tools/disk/disk.h"
#include "urmqtt_config.h"

static bool formattable(enum store_disk_kind k)
{
	return k == STORE_DISK_BLANK || k == STORE_DISK_INTERRUPTED;
}

/* Zero n blocks at lba (a hole punched in an image file), saying what and why. */
static int zero(struct disk_image *im, uint64_t lba, uint64_t n, const char *what)
{
	uint64_t cap = store_dev_blocks(&im->dev);
	if (lba >= cap || !n)
		return 0;
	n = MIN(n, cap - lba);
	uint32_t bs = store_dev_block_size(&im->dev);
	int err = store_dev_zero(&im->dev, lba, n);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: zeroing %s failed (%s)\n", im->path, what, err_name(err));
		return DISK_EXIT_BAD;
	}
	printf("format: zeroed %s: LBA %" PRIu64 "..%" PRIu64 " (%" PRIu64 " KiB)\n", what, lba, lba + n - 1u,
	       (n * bs) >> 10);
	return 0;
}

/* --force: MBR and primary GPT (the first MiB), the backup GPT (the last MiB), the superblock
 * slots of a data partition our GPT names and, from a valid superblock, every region it names;
 * then, if the probe still finds data in its samples, the whole image. */
static int force_blank(struct disk_image *im)
{
	uint32_t bs = store_dev_block_size(&im->dev);
	uint64_t cap = store_dev_blocks(&im->dev), mib = (1u << 20) / bs;
	const struct store_disk_info info = im->info;
	int rc = zero(im, 0, mib, "the first MiB (MBR, primary GPT, file system signatures)");
	if (!rc && cap > mib)
		rc = zero(im, cap - mib, mib, "the last MiB (backup GPT)");
	if (!rc && info.part_blocks) {
		uint64_t meta = MAX(64u * 1024u, 2u * MAX(STORE_SLOT_MIN, bs)) / bs; /* as store_disk_format does */
		rc = zero(im, info.part_start, MIN(meta, info.part_blocks), "the superblock slots");
	}
	static const char *const names[STORE_REGION__KINDS] = { "?", "the database region", "the WAL region",
								"the telemetry region", "backup region A",
								"backup region B" };
	for (uint32_t i = 0; !rc && info.kind == STORE_DISK_OURS && i < info.sb.n_regions; i++) {
		const struct store_region *r = &info.sb.regions[i];
		rc = zero(im, info.sb.part_start + r->start, r->blocks, r->kind < STORE_REGION__KINDS ? names[r->kind] : "?");
	}
	if (!rc && store_dev_flush(&im->dev) != 0) {
		fprintf(stderr, "urmqtt-disk: %s: flushing failed\n", im->path);
		rc = DISK_EXIT_BAD;
	}
	if (!rc)
		rc = disk_image_probe(im);
	if (rc || formattable(im->info.kind))
		return rc;
	printf("format: the probe still finds %s: zeroing the whole image\n", im->info.what);
	rc = zero(im, 0, cap, "the whole image");
	if (!rc && store_dev_flush(&im->dev) != 0) {
		fprintf(stderr, "urmqtt-disk: %s: flushing failed\n", im->path);
		rc = DISK_EXIT_BAD;
	}
	if (!rc)
		rc = disk_image_probe(im);
	if (!rc && !formattable(im->info.kind)) {
		fprintf(stderr, "urmqtt-disk: %s: still not blank after zeroing: %s\n", im->path, im->info.what);
		rc = DISK_EXIT_BAD;
	}
	return rc;
}

static int run_boot(struct disk_image *im, const struct disk_opts *o)
{
	const struct store_layout_config layout = {
		.esp_bytes = (uint64_t)(o->esp_set ? o->esp_mib : CONF_STORAGE_ESP_MB) << 20,
		.wal_bytes = (uint64_t)(o->wal_set ? o->wal_mib : CONF_STORAGE_WAL_MB) << 20,
		.telemetry_pct = o->pct_set ? o->telemetry_pct : CONF_STORAGE_TELEMETRY_PCT,
	};
	struct disk_up up;
	int rc = disk_up_boot(&up, im, &layout);
	if (rc) {
		if (up.out)
			fprintf(stderr, "urmqtt-disk: %s: format failed: %s\n", im->path, up.out->what);
	} else {
		store_boot_close(up.db); /* closed before the telemetry region is zeroed below */
		up.db_up = false;
		const struct store_super *sb = &up.out->sb;
		const struct store_region *t = store_super_region(sb, STORE_REGION_TELEMETRY);
		/* --force: the log finds its segments by reading every slot's first bytes, so bytes of
		 * the disk's earlier content there would read as damaged headers: the region goes whole
		 * (the database, WAL and backups are read only as far as their zeroed headers say). */
		if (o->force && t && t->blocks) {
			rc = zero(im, sb->part_start + t->start, t->blocks, "the new telemetry region");
			if (!rc && store_dev_flush(&im->dev) != 0) {
				fprintf(stderr, "urmqtt-disk: %s: flushing failed\n", im->path);
				rc = DISK_EXIT_BAD;
			}
		}
		printf("format: %s: %s\n", im->path, up.out->what);
		printf("format: layout v%u, superblock generation %" PRIu64 ", data partition %" PRIu64 " MiB:",
		       (unsigned)sb->version, sb->generation, (sb->part_blocks * sb->block_size) >> 20);
		static const char *const names[STORE_REGION__KINDS] = { "?", "database", "wal", "telemetry", "backup-a",
									"backup-b" };
		for (uint32_t i = 0; i < sb->n_regions; i++) {
			const struct store_region *r = &sb->regions[i];
			printf("%s %s %" PRIu64 " MiB", i ? "," : "", r->kind < STORE_REGION__KINDS ? names[r->kind] : "?",
			       (r->blocks * sb->block_size) >> 20);
		}
		printf("\nformat: urmqtt-disk inspect %s shows the details\n", im->path);
	}
	int rc2 = disk_up_close(&up, im);
	return rc ? rc : rc2;
}

int disk_cmd_format(const struct disk_opts *o)
{
	struct disk_image im;
	int rc = disk_image_open(&im, o->image, true);
	if (!rc && !formattable(im.info.kind)) {
		if (!o->force) {
			fprintf(stderr,
				"urmqtt-disk: %s: refused: %s: %s; nothing written (--force destroys it and formats)\n",
				o->image, store_disk_kind_name(im.info.kind), im.info.what);
			rc = DISK_EXIT_BAD;
		} else {
			printf("format: --force: %s: %s: %s: zeroing what makes it recognisable\n", o->image,
			       store_disk_kind_name(im.info.kind), im.info.what);
			rc = force_blank(&im);
			if (!rc && store_dev_block_size(&im.dev) != 512u) {
				/* It was ours with other blocks: lay the new one out as always, 512 bytes. */
				disk_image_close(&im);
				rc = disk_image_open(&im, o->image, true);
			}
		}
	}
	if (!rc)
		rc = run_boot(&im, o);
	disk_image_close(&im);
	return rc;
}
