/* SPDX-License-Identifier: MIT
 *
 * store/grow.h: the growth of the data disk's layout (docs/DISK-FORMAT.md section 9).
 * Owns the growth plan (pure) and the procedure that writes it: the two GPT copies, then
 * the superblock. Layer: store/, portable and freestanding; disk I/O only through
 * store/dev.h, the GPT through store/gpt.h, the superblock through store/layout.h. Never
 * allocates, never writes what our own decoders would reject, never shrinks anything, and
 * never writes the GPT copy it read until the other copy is complete and flushed.
 *
 * Design note. What the probe says while a growth runs (G: the GPT's data partition
 * length, S: the superblock's part_blocks, N: the disk's blocks):
 *
 *     OURS (G = S, backup GPT at the old end)
 *       | step 1: the other copy (the backup, at N - 1) written, flushed
 *       v         (the copy read still valid: the probe reads it, G = S)
 *     OURS (G = S)
 *       | step 2: the copy read (the primary) rewritten: MBR and array, flush; header, flush
 *       v         (cut inside: that copy fails its CRC, the new one of step 1 is read)
 *     OURS, grow_pending (G > S)
 *       | step 3: store_super_commit
 *       v
 *     OURS (G = S, both larger)
 *
 * Invariants:
 *  1. Before the first write, the new GPT (both headers, the array) and the new superblock
 *     are decoded by store_gpt_header_decode / store_gpt_entries_decode /
 *     store_super_decode: -E_INVAL or -E_NOSYS, nothing written, when any would reject.
 *  2. The GPT copy the disk was read from is written only after the other copy is complete
 *     and flushed, so at every instant one valid GPT describes a partition at least as long
 *     as the superblock's (the probe's OURS, or OURS with grow_pending).
 *  3. The superblock is committed last: until then its regions are the old ones, all inside
 *     the old partition.
 *  4. The plan depends only on the superblock in charge and N: a growth run again after a
 *     cut anywhere writes the same GPT bytes and the same regions.
 */
#include "store/grow.h"

#include "lib/crc32.h"
#include "lib/err.h"
#include "lib/fmt.h"
#include "lib/mem.h"
#include "store/gpt.h"
#include "store/wire_disk.h"

/* The kinds that grow, in their placement order before the rotation. */
static const uint32_t grow_kinds[3] = { STORE_REGION_DB, STORE_REGION_BACKUP_A, STORE_REGION_BACKUP_B };

static const char *kind_text(uint32_t k)
{
	switch (k) {
	case STORE_REGION_DB: return "database";
	case STORE_REGION_BACKUP_A: return "backup A";
	case STORE_REGION_BACKUP_B: return "backup B";
	default: return "?";
	}
}

/* ---- the plan ---- */

int store_grow_plan(const struct store_super *sb, const struct store_gpt *g, uint64_t disk_blocks,
		    struct store_grow_plan *out)
{
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	if (!sb || !g || !g->has_data || sb->block_size != g->block_size || sb->block_size == 0 ||
	    sb->align_bytes < sb->block_size || sb->n_regions > STORE_MAX_REGIONS ||
	    disk_blocks > UINT64_MAX / sb->block_size)
		return -E_INVAL;
	uint64_t ab = sb->align_bytes / sb->block_size;
	/* the GPT's data partition: sb's, as long or longer by whole units (a growth cut short) */
	uint64_t glen = g->data.last_lba - g->data.first_lba + 1u; /* decoded: first <= last */
	if (g->data.first_lba != sb->part_start || memcmp(g->data.guid, sb->part_guid, 16) != 0 ||
	    glen < sb->part_blocks || (glen - sb->part_blocks) % ab)
		return -E_CORRUPT;
	uint64_t fu, lu;
	if (store_gpt_geometry(sb->block_size, disk_blocks, &fu, &lu) || lu + 1u < sb->part_start)
		return -E_RANGE;
	uint64_t room = (lu + 1u - sb->part_start) / ab * ab; /* the new partition, whole units */
	if (room < glen)
		return -E_RANGE; /* the disk is smaller than the partition */
	out->disk_blocks = disk_blocks;
	out->old_part_blocks = out->new_part_blocks = sb->part_blocks;
	out->pending = glen > sb->part_blocks;
	out->sb = *sb;
	if (!out->pending && room - sb->part_blocks < ab) {
		out->outcome = STORE_GROW_NONE;
		return 0;
	}
	out->new_part_blocks = room;
	out->sb.part_blocks = room;

	/* The end of the last region (the meta area's when there is none: cannot happen). */
	uint64_t end = ab;
	int last = -1;
	for (uint32_t i = 0; i < sb->n_regions; i++) {
		const struct store_region *r = &sb->regions[i];
		if (r->start > room || r->blocks > room - r->start)
			return -E_CORRUPT; /* decoded regions lie inside the old partition: cannot happen */
		if (r->start + r->blocks > end) {
			end = r->start + r->blocks;
			last = (int)i;
		}
	}
	out->free_blocks = room - end;
	out->unused_blocks = room - end;
	uint64_t units = (room - end) / ab;
	if (units < 3u) {
		out->outcome = STORE_GROW_UNUSED;
		return 0;
	}
	/* Rotate: when the partition's last region is the last extent of a kind that grows,
	 * that kind goes first and lengthens it (one region fewer in the table). */
	uint32_t first = 0;
	bool merge = false;
	if (last >= 0) {
		uint32_t k = sb->regions[last].kind;
		for (uint32_t j = 0; j < 3u; j++)
			if (grow_kinds[j] == k &&
			    store_super_extent(sb, (enum store_region_kind)k, store_super_extents(sb, (enum store_region_kind)k, NULL) - 1u) ==
				    &sb->regions[last]) {
				first = j;
				merge = true;
			}
	}
	uint32_t needed = merge ? 2u : 3u;
	if (sb->n_regions + needed > STORE_MAX_REGIONS) {
		out->outcome = STORE_GROW_UNUSED;
		out->table_full = true;
		return 0;
	}
	uint64_t each = units / 3u * ab, at = end;
	for (uint32_t j = 0; j < 3u; j++) {
		uint32_t k = grow_kinds[(first + j) % 3u];
		struct store_grow_part *p = &out->parts[out->n_parts++];
		*p = (struct store_grow_part){ k, at, each, j == 0 && merge };
		if (p->merged) {
			out->sb.regions[last].blocks += each;
		} else {
			struct store_region *r = &out->sb.regions[out->sb.n_regions++];
			*r = (struct store_region){ k, 0, at, each };
		}
		at += each;
	}
	out->unused_blocks = room - at;
	out->outcome = STORE_GROW_FILES;
	return 0;
}

/* ---- the procedure ---- */

static int dev_read(void *ctx, uint64_t lba, uint32_t n, void *buf)
{
	return store_dev_read(ctx, lba, n, buf);
}

static uint64_t mib(uint64_t blocks, uint32_t bs)
{
	return blocks * bs >> 20;
}

static void say(struct store_grow_result *out, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void say(struct store_grow_result *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	(void)fmt_vsnprintf(out->what, sizeof out->what, fmt, ap);
	va_end(ap);
}

/* The console line for a plan carried out (or about to be: the caller overwrites it on
 * failure). */
static void describe(struct store_grow_result *out, const struct store_grow_plan *p, uint32_t bs, uint32_t align)
{
	char *w = out->what;
	size_t cap = sizeof out->what;
	if (p->outcome == STORE_GROW_NONE) {
		say(out, "the disk (%lu MiB) did not grow by a unit (%lu MiB) past the data partition (%lu MiB): nothing changes",
		    (unsigned long)mib(p->disk_blocks, bs), (unsigned long)(align >> 20),
		    (unsigned long)mib(p->old_part_blocks, bs));
		return;
	}
	int n = fmt_snprintf(w, cap, "the disk grew%s: data partition %lu MiB -> %lu MiB",
			     p->pending ? " (finishing a growth cut short)" : "", (unsigned long)mib(p->old_part_blocks, bs),
			     (unsigned long)mib(p->new_part_blocks, bs));
	size_t at = n > 0 ? MIN((size_t)n, cap - 1u) : 0;
	if (p->outcome == STORE_GROW_FILES) {
		for (uint32_t i = 0; i < 3u; i++) {
			uint32_t k = grow_kinds[i];
			n = fmt_snprintf(w + at, cap - at, "%s %s +%lu MiB", i ? "," : ";", kind_text(k),
					 (unsigned long)mib(out->gained[k], bs));
			at += n > 0 ? MIN((size_t)n, cap - 1u - at) : 0;
		}
		if (p->unused_blocks)
			(void)fmt_snprintf(w + at, cap - at, "; %lu MiB unused at the end",
					   (unsigned long)mib(p->unused_blocks, bs));
	} else if (p->table_full) {
		(void)fmt_snprintf(w + at, cap - at,
				   "; the region table is full (%u of %u regions): the new %lu MiB stay unused until a re-format",
				   p->sb.n_regions, STORE_MAX_REGIONS, (unsigned long)mib(p->free_blocks, bs));
	} else {
		(void)fmt_snprintf(w + at, cap - at,
				   "; the new %lu MiB stay unused (the files grow by 3 units of %lu MiB at least)",
				   (unsigned long)mib(p->free_blocks, bs), (unsigned long)(align >> 20));
	}
}

/* The new entry array into buf: the array of the copy read (at g->entries_lba, checked
 * against its CRC: it is never written before it is read for the last time, invariant 2)
 * with the data partition ending at last_lba. */
static int new_array(struct store_dev *d, const struct store_gpt *g, uint64_t last_lba, uint8_t *buf, size_t len,
		     uint32_t *crc)
{
	uint32_t bs = store_dev_block_size(d), eb = store_gpt_array_blocks(bs);
	if ((size_t)eb * bs > len)
		return -E_INVAL;
	int err = store_dev_read(d, g->entries_lba, eb, buf);
	if (err)
		return err;
	if (crc32_ieee(0, buf, STORE_GPT_ARRAY_BYTES) != g->entries_crc)
		return -E_CORRUPT; /* changed since it was loaded */
	return store_gpt_entry_resize(buf, (size_t)eb * bs, g->data.index, last_lba, crc);
}

/* The backup copy of geometry gn: its array at N - 1 - A, its header at N - 1, flush. */
static int write_backup(struct store_dev *d, const struct store_gpt *g, const struct store_gpt_new *gn,
			uint64_t last_lba, uint8_t *buf, size_t len)
{
	uint64_t n = gn->disk_blocks;
	uint32_t eb = store_gpt_array_blocks(gn->block_size), crc = 0;
	int err = new_array(d, g, last_lba, buf, len, &crc);
	if (!err)
		err = store_dev_write(d, n - 1u - eb, eb, buf);
	if (!err)
		err = store_gpt_header_encode(gn, true, crc, buf, len);
	if (!err)
		err = store_dev_write(d, n - 1u, 1, buf);
	if (!err)
		err = store_dev_flush(d);
	return err;
}

/* The primary copy: the protective MBR (the disk's new size; LBA 0's boot code and disk
 * signature kept) and the array, flush; the
 * header, flush (so the header is never durable before its array). */
static int write_primary(struct store_dev *d, const struct store_gpt *g, const struct store_gpt_new *gn,
			 uint64_t last_lba, uint8_t *buf, size_t len)
{
	uint32_t eb = store_gpt_array_blocks(gn->block_size), crc = 0;
	int err = store_dev_read(d, 0, 1, buf);
	if (!err) {
		store_gpt_mbr_protect(buf, gn->block_size, gn->disk_blocks); /* a boot loader's code kept */
		err = store_dev_write(d, 0, 1, buf);
	}
	if (!err)
		err = new_array(d, g, last_lba, buf, len, &crc);
	if (!err)
		err = store_dev_write(d, 2, eb, buf);
	if (!err)
		err = store_dev_flush(d);
	if (!err)
		err = store_gpt_header_encode(gn, false, crc, buf, len);
	if (!err)
		err = store_dev_write(d, 1, 1, buf);
	if (!err)
		err = store_dev_flush(d);
	return err;
}

/* Invariant 1: both new headers and the new array pass our own decoders, and the data
 * partition in them is the one planned. -E_NOSYS when they would not (another partition
 * in the way, a usable range ours does not cover), or a read's error. */
static int check_new(struct store_dev *d, const struct store_gpt *g, const struct store_gpt_new *gn,
		     uint64_t last_lba, uint8_t *buf, size_t len)
{
	uint32_t bs = gn->block_size, crc = 0;
	uint64_t n = gn->disk_blocks;
	int err = new_array(d, g, last_lba, buf, len, &crc);
	if (err)
		return err == -E_INVAL ? -E_NOSYS : err;
	for (int backup = 0; backup < 2; backup++) {
		struct store_gpt h;
		enum store_gpt_rej rej;
		if (store_gpt_header_encode(gn, backup, crc, buf, len) ||
		    store_gpt_header_decode(buf, bs, bs, n, backup ? n - 1u : 1u, &h, &rej))
			return -E_NOSYS;
		err = new_array(d, g, last_lba, buf, len, &crc);
		if (err)
			return err == -E_INVAL ? -E_NOSYS : err;
		if (store_gpt_entries_decode(buf, len, &h, &rej) || !h.has_data || h.data.index != g->data.index ||
		    h.data.first_lba != g->data.first_lba || h.data.last_lba != last_lba)
			return -E_NOSYS;
	}
	return 0;
}

int store_grow(struct store_dev *d, struct store_super *sb, uint8_t *scratch, size_t scratch_len,
	       struct store_grow_result *out)
{
	if (!out)
		return -E_INVAL;
	memset(out, 0, sizeof *out);
	if (!d || !d->blk || !sb || !scratch || scratch_len < (size_t)STORE_LAYOUT_SCRATCH) {
		say(out, "growth: bad arguments");
		return -E_INVAL;
	}
	uint32_t bs = store_dev_block_size(d);
	uint64_t n = store_dev_blocks(d);
	out->block_size = bs;
	out->old_part_blocks = out->new_part_blocks = sb->part_blocks;
	if (sb->block_size != bs || bs > scratch_len || n > UINT64_MAX / bs) {
		say(out, "the layout was made for %u-byte blocks, the disk has %u: not grown", sb->block_size, bs);
		return -E_INVAL;
	}
	struct store_gpt_src src = { dev_read, d, bs, n };
	struct store_gpt g;
	struct store_gpt_verdict v;
	int err = store_gpt_load(&src, scratch, scratch_len, &g, &v);
	if (err) {
		say(out, "the GPT could not be read (%s): not grown", err == -E_CORRUPT ? "no valid copy" : err_name(err));
		return err;
	}
	struct store_grow_plan p;
	err = store_grow_plan(sb, &g, n, &p);
	if (err == -E_RANGE) {
		say(out, "the disk (%lu MiB) is smaller than its data partition (%lu MiB): not grown",
		    (unsigned long)mib(n, bs), (unsigned long)mib(sb->part_start + sb->part_blocks, bs));
		return err;
	}
	if (err) {
		say(out, "the GPT's data partition is not the superblock's: not grown");
		return err;
	}
	out->outcome = p.outcome;
	out->table_full = p.table_full;
	out->pending = p.pending;
	out->new_part_blocks = p.new_part_blocks;
	out->unused_blocks = p.unused_blocks;
	out->n_parts = p.n_parts;
	memcpy(out->parts, p.parts, sizeof out->parts);
	for (uint32_t i = 0; i < p.n_parts; i++)
		out->gained[p.parts[i].kind] += p.parts[i].blocks;
	describe(out, &p, bs, sb->align_bytes);
	if (p.outcome == STORE_GROW_NONE)
		return 0;

	/* Invariant 1: what will be written decodes (the GPT: 128 entries, as we write it). */
	struct store_gpt_new gn;
	memset(&gn, 0, sizeof gn);
	gn.block_size = bs;
	gn.disk_blocks = n;
	memcpy(gn.disk_guid, g.disk_guid, 16);
	uint64_t last = sb->part_start + p.new_part_blocks - 1u;
	struct store_super check;
	enum store_layout_rej rej;
	uint32_t version;
	err = g.n_entries == STORE_GPT_N_ENTRIES ? check_new(d, &g, &gn, last, scratch, scratch_len) : -E_NOSYS;
	if (!err && (store_super_encode(&p.sb, scratch, scratch_len) ||
		     store_super_decode(scratch, STORE_SUPER_BYTES, &check, &rej, &version)))
		err = -E_INVAL;
	if (err) {
		say(out, "the disk grew, but its GPT cannot be rewritten by this image (%s%s): not grown", err_name(err),
		    g.n_entries != STORE_GPT_N_ENTRIES ? ", not 128 entries" : "");
		out->outcome = STORE_GROW_NONE;
		return err;
	}
	/* Invariant 2: the copy read last. Then the superblock (invariant 3). */
	if (v.from_backup) {
		err = write_primary(d, &g, &gn, last, scratch, scratch_len);
		if (!err)
			err = write_backup(d, &g, &gn, last, scratch, scratch_len);
	} else {
		err = write_backup(d, &g, &gn, last, scratch, scratch_len);
		if (!err)
			err = write_primary(d, &g, &gn, last, scratch, scratch_len);
	}
	if (!err)
		err = store_super_commit(d, &p.sb, scratch, scratch_len);
	if (err) {
		say(out, "growing the data partition (%lu MiB -> %lu MiB) failed (%s): the layout stays as it was until a "
			 "later growth finishes it",
		    (unsigned long)mib(p.old_part_blocks, bs), (unsigned long)mib(p.new_part_blocks, bs), err_name(err));
		out->outcome = STORE_GROW_NONE;
		return err;
	}
	*sb = p.sb;
	return 0;
}
