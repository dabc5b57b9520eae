/* SPDX-License-Identifier: MIT
 *
 * store/boot.h. The order is what keeps a crash at any point harmless: a format writes
 * the GPT, zeroes the regions' first blocks and only then a superblock saying FRESH; the
 * database is created only while the superblock says FRESH (from zeroed regions again, so
 * a creation interrupted earlier starts over), and the superblock says READY only after
 * the creation committed. A READY database is never recreated: if it fails quick_check it
 * is refused and left as it is. A disk that grew is grown (store/grow.h) right after the
 * probe, before anything reads the regions: the GPT first, the superblock last, so a cut
 * leaves the old layout or a growth the next boot finishes.
 */
#include "store/boot.h"

#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "store/backup.h"
#include "store/sqlite/vfs.h"

#define REGION_HEAD_BYTES (64u * 1024u) /* a fresh database's and WAL's first bytes, zeroed */

static int say(struct store_boot_result *out, int err, const char *fmt, ...) PRINTF_LIKE(3, 4);
static int say(struct store_boot_result *out, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(out->what, sizeof out->what, fmt, ap);
	va_end(ap);
	return err;
}

/* Write a pattern to the scratch block(s), read it back, compare, flush. */
static int selftest(struct store_dev *d, uint64_t lba, uint8_t *buf, size_t buf_len, uint32_t seed)
{
	uint32_t bs = store_dev_block_size(d);
	uint32_t bytes = MAX(bs, STORE_SCRATCH_BYTES);
	if (buf_len < 2u * (size_t)bytes)
		return -E_INVAL;
	for (uint32_t i = 0; i < bytes; i++)
		buf[i] = (uint8_t)((seed >> ((i & 3u) * 8u)) ^ (i * 131u) ^ (i >> 8));
	int err = store_dev_write(d, lba, bytes / bs, buf);
	if (!err)
		err = store_dev_read(d, lba, bytes / bs, buf + bytes);
	if (!err && memcmp(buf, buf + bytes, bytes) != 0)
		err = -E_CORRUPT;
	if (!err)
		err = store_dev_flush(d);
	return err;
}

static const struct store_region *need_region(const struct store_super *sb, enum store_region_kind k)
{
	const struct store_region *r = store_super_region(sb, k);
	return r && r->blocks ? r : NULL;
}

int store_boot(struct store_dev *dev, const struct store_boot_config *cfg, struct store_db *db,
	       struct store_boot_result *out)
{
	memset(out, 0, sizeof *out);
	uint32_t bs = store_dev_block_size(dev);
	out->disk_bytes = store_dev_blocks(dev) * bs;
	struct store_disk_info info;
	int err = store_disk_probe(dev, cfg->scratch, cfg->scratch_len, &info);
	if (err)
		return say(out, err, "the disk could not be read (%s)", err_name(err));
	out->found = info.kind;
	switch (info.kind) {
	case STORE_DISK_FOREIGN:
		return say(out, -E_PERM, "the disk holds %s: not ours and not blank, so it is never written", info.what);
	case STORE_DISK_OTHER_VERSION:
		return say(out, -E_NOSYS, "%s: refused, nothing written", info.what);
	case STORE_DISK_DAMAGED:
		return say(out, -E_CORRUPT, "our layout is damaged (%s): refused, nothing written", info.what);
	case STORE_DISK_BLANK:
	case STORE_DISK_INTERRUPTED: {
		struct store_plan plan;
		err = store_layout_plan(&cfg->layout, store_dev_blocks(dev), bs, dev->blk->topo.optimal_io, &plan,
					&out->min_bytes);
		if (err)
			return say(out, err, "the disk (%lu MiB) is blank but too small for the layout (at least %lu MiB)",
				   (unsigned long)(out->disk_bytes >> 20), (unsigned long)(out->min_bytes >> 20));
		/* the release disk's BIOS boot partition (GRUB's core) outlives its first format */
		(void)store_plan_keep_bios(&plan, &info);
		err = store_disk_format(dev, &plan, cfg->guids, (uint64_t)(cfg->now_s > 0 ? cfg->now_s : 0), cfg->scratch,
					cfg->scratch_len, &out->sb);
		if (err)
			return say(out, err, "formatting the blank disk failed (%s)", err_name(err));
		out->formatted = true;
		break;
	}
	case STORE_DISK_OURS:
		out->sb = info.sb;
		break;
	}
	struct store_super *sb = &out->sb;
	if (sb->block_size != bs)
		return say(out, -E_CORRUPT, "the layout was made for %u-byte blocks, the disk has %u: refused", sb->block_size,
			   bs);
	if (sb->part_start + sb->part_blocks > store_dev_blocks(dev))
		return say(out, -E_RANGE,
			   "the disk (%lu MiB) is smaller than its layout says (%lu MiB): refused, nothing written",
			   (unsigned long)(out->disk_bytes >> 20),
			   (unsigned long)(((sb->part_start + sb->part_blocks) * (uint64_t)bs) >> 20));
	if (!out->formatted) {
		/* Our disk, maybe larger than its layout (or a growth cut short): grown before
		 * anything reads the regions. A GPT this image cannot rewrite keeps the layout. */
		err = store_grow(dev, sb, cfg->scratch, cfg->scratch_len, &out->grow);
		if (err && err != -E_NOSYS)
			return say(out, err, "%s", out->grow.what);
	}
	const struct store_region *rdb = need_region(sb, STORE_REGION_DB), *rwal = need_region(sb, STORE_REGION_WAL);
	if (!rdb || !rwal)
		return say(out, -E_CORRUPT, "the superblock names no database or WAL region: refused");
	uint32_t seed = 0x5eed;
	cfg->random(cfg->ctx, &seed, sizeof seed);
	uint64_t scratch_lba = sb->part_start + (sb->align_bytes - MAX(bs, STORE_SCRATCH_BYTES)) / bs;
	out->selftest = selftest(dev, scratch_lba, cfg->scratch, cfg->scratch_len, seed);
	if (out->selftest)
		return say(out, out->selftest, "the block self-test on our scratch block failed (%s)",
			   err_name(out->selftest));
	uint64_t db_lba = sb->part_start + rdb->start, wal_lba = sb->part_start + rwal->start;
	bool fresh = sb->db_state == STORE_DB_FRESH;
	if (fresh) { /* a creation interrupted before READY starts over from zeroed regions */
		uint64_t n = MIN((uint64_t)REGION_HEAD_BYTES / bs, MIN(rdb->blocks, rwal->blocks));
		err = store_dev_zero(dev, db_lba, n);
		if (!err)
			err = store_dev_zero(dev, wal_lba, n);
		if (!err)
			err = store_dev_flush(dev);
		if (err)
			return say(out, err, "preparing the database regions failed (%s)", err_name(err));
	}
	struct store_vfs_config vc = { .dev = dev, .io_buf = cfg->io_buf, .io_buf_len = cfg->io_buf_len,
				       .random = cfg->random, .wall_ms = cfg->wall_ms, .ctx = cfg->ctx };
	err = store_boot_vfs_map(sb, &vc);
	if (!err)
		err = store_vfs_register(&vc);
	if (err)
		return say(out, err, "the database's file layer refused the regions (%s)", err_name(err));
	/* The WAL's region in frames (a 4096-byte page and its 24-byte header; the log's own
	 * 32-byte header). A checkpoint starts once a quarter of it is used, whatever
	 * storage.checkpoint_pages says: a commit then always finds room (one batch is bounded
	 * by another quarter, store_engine_config.batch_bytes; padding frames and the b-tree's
	 * own pages by the rest). */
	out->wal_frames = (rwal->blocks * bs - 32u) / (4096u + 24u);
	uint32_t ckpt = (uint32_t)MIN((uint64_t)cfg->checkpoint_pages, MAX(out->wal_frames / 4u, (uint64_t)1));
	const struct store_db_config dc = { cfg->cache_kb, ckpt, fresh, cfg->wall_s, cfg->progress, cfg->ctx };
	err = store_db_open(db, &dc);
	if (err == -E_CORRUPT && !fresh && sb->backup_slot) {
		/* Damaged: the newest backup replaces it; the damaged copy is kept in the other slot. */
		char damaged[sizeof db->why];
		memcpy(damaged, db->why, sizeof damaged);
		store_vfs_unregister();
		err = store_backup_restore(dev, sb, cfg->scratch, cfg->scratch_len, &out->restored_pages,
					   &out->kept_damaged);
		if (err)
			return say(out, -E_CORRUPT, "the database is damaged (%s) and its backup could not be restored (%s)",
				   damaged, err_name(err));
		err = store_vfs_register(&vc);
		if (!err)
			err = store_db_open(db, &dc);
		if (err) {
			store_vfs_unregister();
			return say(out, err, "the database is damaged (%s) and so is its backup (%s)", damaged, db->why);
		}
		out->restored_slot = sb->backup_slot;
		if (store_db_meta(db, "backup_ms", &out->restored_backup_ms) != 0 || out->restored_backup_ms < 0)
			out->restored_backup_ms = 0; /* said as "unknown" */
		memcpy(out->damaged, damaged, sizeof out->damaged);
	}
	if (err) {
		store_vfs_unregister();
		if (err == -E_CORRUPT)
			return say(out, err, "the database is damaged: %s; %s", db->why,
				   sb->backup_slot ? "the disk is left as it is" : "no backup to restore; the disk is left as it is");
		return say(out, err, "opening the database failed (%s): %s", err_name(err), db->why);
	}
	/* The configured revocations are recorded at every boot (a serial added to the
	 * configuration later is kept too); the table only grows. */
	for (uint32_t i = 0; i < cfg->n_revoked && !err; i++)
		err = store_db_revoked_put(db, cfg->revoked[i].bytes, cfg->revoked[i].len);
	if (err) {
		store_boot_close(db);
		return say(out, err, "recording the revoked serials failed (%s): %s", err_name(err), db->why);
	}
	if (fresh) {
		uint32_t pages;
		err = store_db_maintain(db, true, &pages); /* the new database whole in its region */
		if (!err) {
			sb->db_state = STORE_DB_READY;
			err = store_super_commit(dev, sb, cfg->scratch, cfg->scratch_len);
		}
		if (err) {
			store_boot_close(db);
			return say(out, err, "creating the database failed (%s): %s", err_name(err), db->why);
		}
		out->created = true;
	}
	err = store_db_next_generation(db, &out->generation);
	if (!err)
		err = store_db_tidy(db, &out->tidied);
	if (err) {
		store_boot_close(db);
		return say(out, err, "starting the database failed (%s): %s", err_name(err), db->why);
	}
	if (out->restored_slot) {
		char when[24];
		(void)fmt_utc(when, sizeof when, out->restored_backup_ms);
		return say(out, 0, "our disk; database damaged, RESTORED the backup of %s from slot %c (generation %lu, %lu pages)%s",
			   when, out->restored_slot == 1u ? 'A' : 'B', (unsigned long)sb->backup_generation,
			   (unsigned long)out->restored_pages, out->kept_damaged ? "; damaged copy kept" : "");
	}
	const char *disk = out->grow.outcome != STORE_GROW_NONE ? "our disk, grown" : "our disk";
	return say(out, 0, "%s; database %s, boot generation %lu%s",
		   out->formatted ? (info.kind == STORE_DISK_BLANK ? "blank disk formatted"
								 : "an interrupted format done again")
				  : disk,
		   out->created ? "created" : "opened and checked (quick_check ok)", (unsigned long)out->generation,
		   out->tidied ? ", unreachable rows removed" : "");
}

void store_boot_close(struct store_db *db)
{
	store_db_close(db);
	store_vfs_unregister();
}

STATIC_ASSERT(STORE_VFS_MAX_EXTENTS >= STORE_MAX_REGIONS, "every extent of a file fits the VFS");

int store_boot_vfs_map(const struct store_super *sb, struct store_vfs_config *vc)
{
	const struct store_region *wal = need_region(sb, STORE_REGION_WAL);
	if (!wal || !need_region(sb, STORE_REGION_DB))
		return -E_CORRUPT;
	vc->wal_lba = sb->part_start + wal->start;
	vc->wal_blocks = wal->blocks;
	static const uint32_t kinds[3] = { STORE_REGION_DB, STORE_REGION_BACKUP_A, STORE_REGION_BACKUP_B };
	for (uint32_t f = 0; f < 3u; f++) {
		struct store_vfs_extents *x = f == 0 ? &vc->db : &vc->backup[f - 1u];
		memset(x, 0, sizeof *x);
		const struct store_region *r;
		for (uint32_t i = 0; (r = store_super_extent(sb, (enum store_region_kind)kinds[f], i)) != NULL; i++)
			x->ext[x->n++] = (struct store_vfs_extent){ sb->part_start + r->start, r->blocks };
	}
	return 0;
}

int store_boot_grow(struct store_dev *dev, struct store_super *sb, uint8_t *scratch, size_t scratch_len,
		    struct store_grow_result *out)
{
	int err = store_grow(dev, sb, scratch, scratch_len, out);
	if (err || out->outcome != STORE_GROW_FILES)
		return err;
	/* The superblock names the new extents now: the open files get them too. */
	for (uint32_t i = 0; i < out->n_parts && !err; i++) {
		const struct store_grow_part *p = &out->parts[i];
		err = store_vfs_extend(p->kind == STORE_REGION_DB ? STORE_VFS_FILE_DB : STORE_VFS_FILE_BACKUP,
				       p->kind == STORE_REGION_BACKUP_B ? 1u : 0u, sb->part_start + p->start, p->blocks);
	}
	if (err) {
		size_t n = strnlen(out->what, sizeof out->what);
		(void)fmt_snprintf(out->what + n, sizeof out->what - n,
				   "; the running database gets the new space at the next boot (%s)", err_name(err));
	}
	return err;
}
