/* SPDX-License-Identifier: MIT
 *
 * urmqtt-disk inspect (and its alias info; tools/disk/disk.h): what the image holds, one fact
 * group per line (each line starts with what it is about; docs/DISK.md explains every line).
 * The image is opened read only; a disk that is not ours is described in the probe's words
 * and left alone. The database and each backup slot are read through SQLite (facts.c): their
 * rows, stamps and quick_check; the backups are described, never judged. Exit 0 only for our
 * disk whose database is created and passes quick_check (or is not created yet).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "store/tlog_scan.h"
#include "tools/disk/facts.h"

static void print_range(const char *what, uint64_t lba, uint64_t blocks, uint32_t bs)
{
	char sz[32];
	printf("%s: LBA %" PRIu64 "..%" PRIu64 " (%s)\n", what, lba, lba + blocks - 1u,
	       disk_size_text(blocks * bs, sz, sizeof sz));
}

static void print_gpt(struct disk_image *im, const struct disk_gpt_facts *g)
{
	uint32_t bs = store_dev_block_size(&im->dev);
	if (!g->loaded) {
		printf("gpt: none valid (primary: %s; backup: %s)\n", disk_gpt_rej_text(g->primary),
		       disk_gpt_rej_text(g->backup));
		return;
	}
	char guid[37];
	disk_guid_text(g->g.disk_guid, guid);
	printf("gpt: %s copy used; primary (LBA 1) %s, backup (LBA %" PRIu64 ") %s; disk GUID %s; %u partition%s\n",
	       g->verdict.from_backup ? "backup" : "primary", disk_gpt_rej_text(g->primary), g->backup_lba,
	       disk_gpt_rej_text(g->backup), guid, (unsigned)g->g.n_used, g->g.n_used == 1 ? "" : "s");
	const struct store_gpt_part *parts[3] = { g->g.has_esp ? &g->g.esp : NULL, g->g.has_data ? &g->g.data : NULL,
						  g->g.has_bios ? &g->g.bios : NULL };
	static const char *const names[3] = { "EFI system partition", "urMQTT data", "BIOS boot partition" };
	for (int i = 0; i < 3; i++) {
		const struct store_gpt_part *p = parts[i];
		if (!p)
			continue;
		char type[37], pg[37], sz[32];
		disk_guid_text(p->type, type);
		disk_guid_text(p->guid, pg);
		printf("gpt partition %u: %s, type %s, LBA %" PRIu64 "..%" PRIu64 " (%s), GUID %s\n",
		       (unsigned)p->index + 1u, names[i], type, p->first_lba, p->last_lba,
		       disk_size_text((p->last_lba - p->first_lba + 1u) * bs, sz, sizeof sz), pg);
	}
	uint32_t listed = (uint32_t)g->g.has_esp + (uint32_t)g->g.has_data + (uint32_t)g->g.has_bios;
	if (g->g.n_used > listed)
		printf("gpt: %u other partition entr%s (not ours)\n", (unsigned)(g->g.n_used - listed),
		       g->g.n_used - listed == 1 ? "y" : "ies");
	if (im->info.grow_pending) {
		char gpt_sz[32], sb_sz[32];
		printf("gpt: the data partition is longer than the superblock's (%s against %s): a growth was cut short; "
		       "the broker's next boot finishes it\n",
		       disk_size_text(im->info.part_blocks * bs, gpt_sz, sizeof gpt_sz),
		       disk_size_text(im->info.sb.part_blocks * bs, sb_sz, sizeof sb_sz));
	}
}

static void print_slots(const struct disk_slot_fact s[2])
{
	for (int i = 0; i < 2; i++) {
		if (s[i].valid)
			printf("superblock %c: LBA %" PRIu64 ", generation %" PRIu64 ", %s%s\n", i ? 'B' : 'A', s[i].lba,
			       s[i].sb.generation, disk_slot_text(&s[i]), s[i].in_charge ? ", IN CHARGE" : ", older");
		else if (s[i].rej == STORE_REJ_VERSION)
			printf("superblock %c: LBA %" PRIu64 ", layout version %u (this tool reads %u)\n", i ? 'B' : 'A',
			       s[i].lba, (unsigned)s[i].version, STORE_LAYOUT_VERSION);
		else
			printf("superblock %c: LBA %" PRIu64 ", rejected: %s\n", i ? 'B' : 'A', s[i].lba, disk_slot_text(&s[i]));
	}
}

static void print_layout(struct disk_image *im)
{
	const struct store_super *sb = &im->info.sb;
	uint32_t bs = sb->block_size;
	char created[40], align[32];
	disk_iso_time((int64_t)sb->created_s * 1000, created, sizeof created);
	char *ms = strstr(created, ".000Z"); /* whole seconds */
	if (ms)
		strcpy(ms, "Z");
	printf("superblock: layout v%u, created %s, database %s, %u-byte blocks, alignment %s, %u regions\n",
	       (unsigned)sb->version, created, sb->db_state == STORE_DB_READY ? "ready" : "not created yet (FRESH)",
	       (unsigned)bs, disk_size_text(sb->align_bytes, align, sizeof align), (unsigned)sb->n_regions);
	print_range("partition", sb->part_start, sb->part_blocks, bs);
	printf("region meta: LBA %" PRIu64 "..%" PRIu64 " (%s): superblock slots A and B, the block self-test's scratch\n",
	       sb->part_start, sb->part_start + sb->align_bytes / bs - 1u, align);
	/* One row per region in superblock order; a file's later extents are named so that the
	 * first "region database:" row stays the file's start (scripts read its LBA). */
	for (uint32_t i = 0; i < sb->n_regions; i++) {
		const struct store_region *r = &sb->regions[i];
		char name[48], what[56];
		disk_region_name(sb, i, name, sizeof name);
		snprintf(what, sizeof what, "region %s", name);
		print_range(what, sb->part_start + r->start, r->blocks, bs);
	}
	static const enum store_region_kind growable[] = { STORE_REGION_DB, STORE_REGION_BACKUP_A,
							   STORE_REGION_BACKUP_B };
	for (size_t i = 0; i < sizeof growable / sizeof growable[0]; i++) {
		uint64_t blocks;
		uint32_t n = store_super_extents(sb, growable[i], &blocks);
		char sz[32];
		if (n > 1u)
			printf("%s: %u extents, %s in all\n", disk_region_kind_name(growable[i]), (unsigned)n,
			       disk_size_text(blocks * bs, sz, sizeof sz));
	}
	uint64_t end = 0;
	for (uint32_t i = 0; i < sb->n_regions; i++)
		end = MAX(end, sb->regions[i].start + sb->regions[i].blocks);
	if (end < sb->part_blocks) {
		char sz[32];
		printf("partition: %s unused after the last region\n",
		       disk_size_text((sb->part_blocks - end) * bs, sz, sizeof sz));
	}
}

/* One backup slot: what it holds as SQLite reads it, when it was taken, whether the broker's
 * restore would use it, and whether the superblock names it. */
static void print_backup(const struct disk_backup_facts *b, uint32_t bs)
{
	char c = b->slot == 1u ? 'A' : 'B', sz[32], named[64];
	if (b->named)
		snprintf(named, sizeof named, "NAMED by the superblock, backup generation %" PRIu64, b->generation);
	else
		snprintf(named, sizeof named, "not named (the next backup overwrites it)");
	const struct disk_sqlite_region *r = &b->file;
	if (!r->present || r->read_err || r->err) {
		printf("backup %c: %s%s\n", c, disk_sqlite_region_text(r), b->named ? " (but the superblock names it)" : "");
		return;
	}
	printf("backup %c: a SQLite database: %u-byte pages, %" PRIu32 " pages (%s); ", c, (unsigned)r->hdr.page_size,
	       r->hdr.pages, disk_size_text(r->hdr.bytes, sz, sizeof sz));
	if (r->too_big) {
		char why[256];
		disk_sqlite_too_big_text(r, bs, "slot's", why, sizeof why);
		printf("%s; ", why);
	}
	if (!b->opened) {
		printf("SQLite cannot read it: %s; %s\n", b->why, named);
		return;
	}
	char when[80], rows[256] = "unreadable";
	disk_backup_when(b->backup_ms, when, sizeof when);
	if (b->rows_ok)
		disk_rows_text(&b->rows, rows, sizeof rows);
	printf("%s, boot generation %lld, schema version %lld, quick_check %s%s; rows: %s; %s%s%s\n", when,
	       (long long)b->boot_generation, (long long)b->schema, b->check_ok ? "ok" : "FAILED: ",
	       b->check_ok ? "" : (b->n_msgs ? b->first_msg : b->why), rows, named,
	       b->unusable[0] && b->check_ok ? "; a restore would refuse it: " : "", b->check_ok ? b->unusable : "");
}

static bool print_database(struct disk_image *im)
{
	struct disk_db_facts *f = calloc(1, sizeof *f);
	if (!f) {
		fprintf(stderr, "urmqtt-disk: %s: out of memory\n", im->path);
		return false;
	}
	char sz[32];
	bool ok = true;
	int err = disk_db_facts(im, false, 10, true, f);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: reading the database regions failed (%s)\n", im->path, err_name(err));
		free(f);
		return false;
	}
	const struct disk_sqlite_hdr *h = &f->file.hdr;
	if (f->file.err)
		printf("database: header: %s\n", disk_sqlite_region_text(&f->file));
	else
		printf("database: header: %u-byte pages, %" PRIu32 " pages%s (%s), %s, %" PRIu32
		       " freelist pages, %u reserved bytes per page%s, written by SQLite %u.%u.%u\n",
		       (unsigned)h->page_size, h->pages, h->pages_valid ? "" : " (size field not valid)",
		       disk_size_text(h->bytes, sz, sizeof sz), h->write_version == 2 ? "WAL mode" : "rollback-journal mode",
		       h->freelist_pages, (unsigned)h->reserved, h->reserved == 8 ? " (page checksums)" : "",
		       (unsigned)(h->sqlite_version / 1000000), (unsigned)(h->sqlite_version / 1000 % 1000),
		       (unsigned)(h->sqlite_version % 1000));
	if (f->file.too_big) {
		char why[256];
		disk_sqlite_too_big_text(&f->file, store_dev_block_size(&im->dev), "file's", why, sizeof why);
		printf("database: header: FAILED: %s: SQLite refuses it\n", why);
		ok = false;
	}
	if (f->fresh) {
		printf("database: not created yet (superblock db_state FRESH): the broker creates it at its next boot\n");
	} else if (f->open_err) {
		printf("database: SQLite cannot read it: %s\n", f->why);
		ok = false;
	} else {
		char schema[24], gen[24];
		snprintf(schema, sizeof schema, "%" PRId64, f->schema);
		snprintf(gen, sizeof gen, "%" PRId64, f->generation);
		printf("database: as SQLite reads it (the WAL applied in memory): %" PRId64 " pages of %" PRId64
		       " bytes (%s), %" PRId64 " free, journal %s, schema version %s, boot generation %s\n",
		       f->pages, f->page_size, disk_size_text((uint64_t)(f->pages * f->page_size), sz, sizeof sz), f->free_pages,
		       f->journal, f->schema < 0 ? "none (not our schema)" : schema, f->generation < 0 ? "none" : gen);
		if (f->check_ok && !f->check_err && !f->n_msgs) {
			printf("database: quick_check: ok\n");
		} else {
			ok = false;
			printf("database: quick_check: FAILED, %u message%s\n", (unsigned)f->n_msgs, f->n_msgs == 1 ? "" : "s");
			for (uint32_t i = 0; i < MIN(f->n_msgs, DISK_DB_MSGS); i++)
				printf("database: quick_check: %s\n", f->msgs[i]);
			if (f->check_err)
				printf("database: quick_check: SQLite stopped: %s\n", f->why);
		}
		if (f->refusal[0]) {
			printf("database: this build's broker would refuse it: %s\n", f->refusal);
			ok = false;
		}
		if (f->rows_ok) {
			char rows[256];
			disk_rows_text(&f->rows, rows, sizeof rows);
			printf("database: rows: %s\n", rows);
		}
		if (f->backup_ms > 0) {
			char when[80];
			disk_backup_when(f->backup_ms, when, sizeof when);
			printf("database: restored from a backup %s (meta backup_ms)\n", when);
		}
	}
	if (f->wal_read_err)
		printf("wal: unreadable (%s)\n", err_name(f->wal_read_err));
	else if (f->wal_err)
		printf("wal: empty (no WAL header: everything is in the database file)\n");
	else
		printf("wal: a WAL header (%u-byte pages, checkpoint sequence %u): SQLite replays its valid frames in "
		       "memory, never writing them back\n",
		       (unsigned)f->wal.page_size, (unsigned)f->wal.checkpoint_seq);
	const struct store_super *sb = &im->info.sb;
	if (sb->backup_slot)
		printf("backup: the superblock names slot %c, backup generation %" PRIu64 "\n",
		       sb->backup_slot == 1 ? 'A' : 'B', sb->backup_generation);
	else
		printf("backup: the superblock names none (backup_slot 0, backup generation %" PRIu64 ")\n",
		       sb->backup_generation);
	for (int i = 0; i < 2; i++)
		print_backup(&f->bk[i], store_dev_block_size(&im->dev));
	free(f);
	return ok;
}

static bool print_telemetry(struct disk_image *im)
{
	uint64_t lba;
	struct store_tlog_geom g;
	const char *what;
	int err = disk_tlog_geometry(im, &lba, &g, &what);
	if (err) {
		printf("telemetry: %s\n", what);
		return err == -E_NOENT || err == -E_NOSYS;
	}
	char sz[32];
	printf("telemetry: %u partition%s x %u segments of %u KiB, %u-byte sectors (region %s)\n", (unsigned)g.partitions,
	       g.partitions == 1 ? "" : "s", (unsigned)g.segments, (unsigned)(g.segment_bytes >> 10), (unsigned)g.sector,
	       disk_size_text(g.region_bytes, sz, sizeof sz));
	uint8_t *seg = disk_alloc(g.segment_bytes);
	struct store_tlog_slot_ref *order = calloc(g.segments, sizeof *order);
	bool ok = seg && order;
	if (!ok)
		fprintf(stderr, "urmqtt-disk: %s: out of memory for a segment of %u bytes\n", im->path,
			(unsigned)g.segment_bytes);
	for (uint32_t p = 0; ok && p < g.partitions; p++) {
		struct store_tlog_scan s;
		err = store_tlog_scan_start(&s, &im->dev, lba, &g, p, seg, order, 0);
		struct store_tlog_slot_ref newest = { 0 };
		if (!err && s.n_order)
			newest = order[s.n_order - 1u];
		struct store_tlog_rec r;
		uint64_t seq;
		int got;
		while (!err && (got = store_tlog_scan_next(&s, &r, &seq)) == 1)
			;
		if (!err && got < 0)
			err = got;
		if (err) {
			printf("telemetry partition %u: reading failed (%s)\n", (unsigned)p, err_name(err));
			ok = false;
			break;
		}
		if (!s.n_order) {
			printf("telemetry partition %u: no segment yet%s\n", (unsigned)p,
			       s.bad_headers ? " (and segment headers that do not validate: see verify)" : "");
			continue;
		}
		char first[40];
		disk_iso_time(newest.first_wall_ms, first, sizeof first);
		printf("telemetry partition %u: %" PRIu64 " valid records in %u segment%s; newest segment: sequence %" PRIu64
		       ", slot %u, first record %s%s\n",
		       (unsigned)p, s.records, (unsigned)s.n_order, s.n_order == 1 ? "" : "s", newest.seq,
		       (unsigned)newest.slot, first,
		       s.bad_headers ? "; segment headers that do not validate: see verify" : "");
	}
	free(seg);
	free(order);
	return ok;
}

int disk_cmd_inspect(const struct disk_opts *o)
{
	struct disk_image im;
	int rc = disk_image_open(&im, o->image, false);
	if (rc) {
		disk_image_close(&im);
		return rc;
	}
	const struct store_disk_info *info = &im.info;
	uint32_t bs = store_dev_block_size(&im.dev);
	printf("image: %s, %" PRIu64 " bytes (%" PRIu64 " blocks of %u bytes)\n", o->image, im.file_bytes,
	       store_dev_blocks(&im.dev), (unsigned)bs);
	printf("disk: %s: %s\n", store_disk_kind_name(info->kind), info->what);
	bool ok = info->kind == STORE_DISK_OURS;
	/* Our GPT (ours, damaged, another version, an interrupted format): the GPT and both slots
	 * say what is wrong; a blank or foreign disk has nothing more of ours to show. */
	if (info->part_blocks) {
		struct disk_gpt_facts g;
		struct disk_slot_fact s[2];
		int err = disk_gpt_facts(&im, &g);
		if (!err)
			print_gpt(&im, &g);
		if (!err)
			err = disk_slot_facts(&im, s);
		if (!err)
			print_slots(s);
		if (err && err != -E_NOENT) {
			fprintf(stderr, "urmqtt-disk: %s: reading failed (%s)\n", o->image, err_name(err));
			ok = false;
		}
	}
	if (info->kind == STORE_DISK_OURS) {
		print_layout(&im);
		ok = print_database(&im) && ok;
		ok = print_telemetry(&im) && ok;
	} else {
		(void)disk_image_not_ours(&im);
	}
	disk_image_close(&im);
	return ok ? DISK_EXIT_OK : DISK_EXIT_BAD;
}
