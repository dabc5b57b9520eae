/* SPDX-License-Identifier: MIT
 *
 * store/boot.h. The order is what keeps a crash at any point harmless: a format writes
 * the GPT, zeroes the regions' first blocks and only then a superblock saying FRESH; the
 * database is created only while the superblock says FRESH (from zeroed regions again, so
 * a creation interrupted earlier starts over), and the superblock says READY only after
 * the creation committed. A READY database is never recreated: if it fails quick_check it
 * is refused and left as it is.
 */
#include "store/boot.h"

#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
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
	const struct store_vfs_config vc = { dev, db_lba, rdb->blocks, wal_lba, rwal->blocks, cfg->io_buf, cfg->io_buf_len,
					     cfg->random, cfg->wall_ms, cfg->ctx };
	err = store_vfs_register(&vc);
	if (err)
		return say(out, err, "the database's file layer refused the regions (%s)", err_name(err));
	const struct store_db_config dc = { cfg->cache_kb, cfg->checkpoint_pages, fresh, cfg->wall_s, cfg->progress,
					    cfg->ctx };
	err = store_db_open(db, &dc);
	if (err) {
		store_vfs_unregister();
		if (err == -E_CORRUPT)
			return say(out, err, "the database is damaged: %s; the disk is left as it is", db->why);
		return say(out, err, "opening the database failed (%s): %s", err_name(err), db->why);
	}
	if (fresh) {
		for (uint32_t i = 0; i < cfg->n_revoked && !err; i++)
			err = store_db_revoked_put(db, cfg->revoked[i].bytes, cfg->revoked[i].len);
		if (!err) {
			uint32_t pages;
			err = store_db_maintain(db, true, &pages); /* the new database whole in its region */
		}
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
	return say(out, 0, "%s; database %s, boot generation %lu%s",
		   out->formatted ? (info.kind == STORE_DISK_BLANK ? "blank disk formatted"
								 : "an interrupted format done again")
				  : "our disk",
		   out->created ? "created" : "opened and checked (quick_check ok)", (unsigned long)out->generation,
		   out->tidied ? ", unreachable rows removed" : "");
}

void store_boot_close(struct store_db *db)
{
	store_db_close(db);
	store_vfs_unregister();
}
