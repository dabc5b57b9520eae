/* SPDX-License-Identifier: MIT
 *
 * urmqtt-disk verify (tools/disk/disk.h): check everything on the image that carries its own
 * check, read only: both GPT copies (a growth cut short is a note), the superblock slots, the
 * database through SQLite (PRAGMA quick_check, or integrity_check with --full; the WAL applied
 * in memory; its header's size against its room, every extent), the backup
 * slot the superblock names (read alone through SQLite: the same check, our schema, a WAL-mode
 * image a restore can copy), and the telemetry log: its header, every partition's hint, every
 * slot's segment header and every record's CRC (through store/tlog.h's cursor). One line per
 * finding: "ok", "note" (expected after a power cut or by design; not damage) or "FAILED"
 * (damage), each naming the place (partition, slot, image byte, segment offset); then a summary
 * line. Exit 0 when nothing FAILED.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "tools/disk/facts.h"

#define SUMMARY_MAX 4 /* problems named in the summary line */

struct verdict {
	uint32_t failed, notes;
	char first[SUMMARY_MAX][400];
};

static void failed(struct verdict *v, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void failed(struct verdict *v, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	printf("%s\n", line);
	if (v->failed < SUMMARY_MAX)
		snprintf(v->first[v->failed], sizeof v->first[0], "%.399s", line);
	v->failed++;
}

static void check_gpt(struct disk_image *im, struct verdict *v)
{
	struct disk_gpt_facts g;
	int err = disk_gpt_facts(im, &g);
	if (err) {
		failed(v, "gpt: FAILED: reading failed (%s)", err_name(err));
		return;
	}
	const struct store_disk_info *info = &im->info;
	uint32_t bs = store_dev_block_size(&im->dev);
	if (g.primary == STORE_GPT_OK && g.backup == STORE_GPT_OK)
		printf("gpt: ok: primary (LBA 1) and backup (LBA %" PRIu64 ") valid\n", g.backup_lba);
	/* A growth writes the backup copy whole first, then the primary's array, then its header
	 * (store/grow.h): cut in between, the primary does not validate and the probe reads the
	 * new backup. The next boot's growth rewrites the primary from it. */
	bool cut_in_primary = info->grow_pending && g.loaded && g.verdict.from_backup && g.backup == STORE_GPT_OK;
	if (g.primary != STORE_GPT_OK && cut_in_primary) {
		printf("gpt: note: the primary copy (LBA 1) does not validate (%s) and the backup describes a longer data "
		       "partition: a growth was cut while it rewrote the primary; the broker's next boot rewrites it\n",
		       disk_gpt_rej_text(g.primary));
		v->notes++;
	} else if (g.primary != STORE_GPT_OK) {
		failed(v, "gpt: FAILED: the primary copy (LBA 1) does not validate: %s", disk_gpt_rej_text(g.primary));
	}
	if (g.backup != STORE_GPT_OK)
		failed(v, "gpt: FAILED: the backup copy (LBA %" PRIu64 ") does not validate: %s", g.backup_lba,
		       disk_gpt_rej_text(g.backup));
	if (info->grow_pending) { /* the probe checked it is longer by whole units, nothing else */
		char gpt_sz[32], sb_sz[32];
		printf("gpt: note: the data partition is longer than the superblock's (%s against %s): a growth was cut "
		       "short; the broker's next boot finishes it\n",
		       disk_size_text(info->part_blocks * bs, gpt_sz, sizeof gpt_sz),
		       disk_size_text(info->sb.part_blocks * bs, sb_sz, sizeof sb_sz));
		v->notes++;
	}
}

static void check_slots(struct disk_image *im, struct verdict *v)
{
	struct disk_slot_fact s[2];
	int err = disk_slot_facts(im, s);
	if (err) {
		failed(v, "superblock: FAILED: reading failed (%s)", err_name(err));
		return;
	}
	int w = im->info.super_slot, o = 1 - w;
	printf("superblock: ok: generation %" PRIu64 " in slot %c is in charge\n", s[w].sb.generation, w ? 'B' : 'A');
	if (s[o].valid) {
		printf("superblock: ok: slot %c holds the older generation %" PRIu64 "\n", o ? 'B' : 'A', s[o].sb.generation);
	} else if (s[o].zero) {
		printf("superblock: ok: slot %c is empty (only generation 1 was ever written)\n", o ? 'B' : 'A');
	} else {
		printf("superblock: note: slot %c rejected: %s (a commit a power cut tore leaves this; the next commit "
		       "rewrites that slot)\n",
		       o ? 'B' : 'A', disk_slot_text(&s[o]));
		v->notes++;
	}
}

static void check_database(struct disk_image *im, bool full, struct verdict *v)
{
	struct disk_db_facts *f = calloc(1, sizeof *f);
	if (!f) {
		failed(v, "database: FAILED: out of memory");
		return;
	}
	const char *check = full ? "integrity_check" : "quick_check";
	int err = disk_db_facts(im, full, 100, true, f);
	if (err) {
		failed(v, "database: FAILED: reading its regions failed (%s)", err_name(err));
	} else if (f->fresh) {
		printf("database: note: not created yet (superblock db_state FRESH): the broker creates it at its next "
		       "boot\n");
		v->notes++;
	} else if (f->open_err) {
		failed(v, "database: FAILED: SQLite cannot read it: %s", f->why);
	} else if (f->file.err) { /* SQLite read an empty file: nothing of the database is left */
		failed(v, "database: FAILED: %s", f->refusal);
	} else if (f->n_msgs || f->check_err || !f->check_ok) {
		for (uint32_t i = 0; i < MIN(f->n_msgs, DISK_DB_MSGS); i++)
			printf("database: %s: %s\n", check, f->msgs[i]);
		if (f->n_msgs > DISK_DB_MSGS)
			printf("database: %s: (%u more)\n", check, (unsigned)(f->n_msgs - DISK_DB_MSGS));
		if (f->check_err)
			printf("database: %s: SQLite stopped: %s\n", check, f->why);
		if (f->n_msgs)
			failed(v, "database: FAILED: %s found %u problem%s, the first: %s%s", check, (unsigned)f->n_msgs,
			       f->n_msgs == 1 ? "" : "s", f->msgs[0], f->check_err ? " (then SQLite stopped)" : "");
		else
			failed(v, "database: FAILED: %s did not pass: %s", check, f->check_err ? f->why : "no verdict");
	} else {
		printf("database: ok: %s passed (%" PRId64 " pages of %" PRId64 " bytes, schema version %" PRId64 ")\n",
		       check, f->pages, f->page_size, f->schema);
	}
	if (!err && !f->file.err && f->refusal[0])
		failed(v, "database: FAILED: this build's broker would refuse it: %s", f->refusal);
	if (!err && !f->fresh && f->file.too_big) {
		char why[256];
		disk_sqlite_too_big_text(&f->file, store_dev_block_size(&im->dev), "file's", why, sizeof why);
		failed(v, "database: FAILED: %s", why);
	}
	const struct store_super *sb = &im->info.sb;
	if (!err && sb->backup_slot >= 1u && sb->backup_slot <= 2u) {
		const struct disk_backup_facts *b = &f->bk[sb->backup_slot - 1u];
		char slot = sb->backup_slot == 1 ? 'A' : 'B', when[80];
		disk_backup_when(b->backup_ms, when, sizeof when);
		if (!b->unusable[0])
			printf("backup: ok: the named slot %c (generation %" PRIu64 ") holds a database of %lld pages that "
			       "passes %s, %s\n",
			       slot, sb->backup_generation, (long long)b->pages, check, when);
		else
			failed(v, "backup: FAILED: the superblock names slot %c (generation %" PRIu64 "), but %s", slot,
			       sb->backup_generation, b->unusable);
	} else if (!err && sb->backup_slot) {
		failed(v, "backup: FAILED: the superblock names backup slot %u, which does not exist",
		       (unsigned)sb->backup_slot);
	} else if (!err) {
		printf("backup: ok: none named by the superblock\n");
	}
	free(f);
}

struct tlog_count {
	uint64_t records, segments, empty_slots, tails, full;
};

/* Every slot of partition p. */
static void check_partition(struct disk_image *im, uint64_t lba, const struct store_tlog_geom *g, uint32_t p,
			    uint8_t *seg, bool verbose, struct tlog_count *n, struct verdict *v)
{
	uint64_t region_byte = lba * store_dev_block_size(&im->dev);
	/* The hint: damaged is damage (a hint is one atomic sector); missing happens when a power
	 * cut kept the region header but not the hints written before it. The broker rebuilds
	 * either by a scan. */
	uint64_t at = region_byte + (uint64_t)(1u + p) * g->sector;
	int err = disk_image_read(im, at, g->sector, seg);
	struct store_tlog_hint h;
	if (err) {
		failed(v, "telemetry hint %u (image byte %" PRIu64 "): FAILED: unreadable (%s)", (unsigned)p, at,
		       err_name(err));
		return;
	}
	err = store_tlog_hint_decode(seg, g->sector, &h);
	if (err == -E_NOENT) {
		printf("telemetry hint %u (image byte %" PRIu64 "): note: missing (all zero; the broker finds the newest "
		       "segment by a scan)\n",
		       (unsigned)p, at);
		v->notes++;
	} else if (err || h.partition != p || h.slot >= g->segments) {
		failed(v, "telemetry hint %u (image byte %" PRIu64 "): FAILED: does not validate%s", (unsigned)p, at,
		       err ? "" : " (names another partition or a slot past the ring)");
	} else if (verbose) {
		printf("telemetry hint %u: ok: slot %u, sequence %" PRIu64 "\n", (unsigned)p, (unsigned)h.slot, h.seq);
	}
	for (uint32_t k = 0; k < g->segments; k++) {
		uint64_t off = store_tlog_slot_off(g, p, k), byte = region_byte + off;
		err = disk_image_read(im, byte, g->sector, seg);
		if (err) {
			failed(v, "telemetry partition %u slot %u (image byte %" PRIu64 "): FAILED: unreadable (%s)",
			       (unsigned)p, (unsigned)k, byte, err_name(err));
			continue;
		}
		struct store_tlog_seg hdr;
		err = store_tlog_seg_decode(seg, g->sector, &hdr);
		if (err == -E_NOENT) {
			n->empty_slots++;
			continue;
		}
		if (err || hdr.partition != p || hdr.slot != k) {
			failed(v, "telemetry partition %u slot %u (image byte %" PRIu64 "): FAILED: the segment header does "
			       "not validate%s",
			       (unsigned)p, (unsigned)k, byte, err ? "" : " (it names another partition or slot)");
			continue;
		}
		err = disk_image_read(im, byte, g->segment_bytes, seg);
		struct disk_seg_check c;
		if (!err)
			err = disk_seg_check(seg, g->segment_bytes, g->sector, &c);
		if (err) {
			failed(v, "telemetry partition %u slot %u (image byte %" PRIu64 "): FAILED: unreadable (%s)",
			       (unsigned)p, (unsigned)k, byte, err_name(err));
			continue;
		}
		n->segments++;
		n->records += c.records;
		n->tails += c.end == DISK_SEG_END_TAIL;
		n->full += c.end == DISK_SEG_END_FULL;
		if (c.end == DISK_SEG_END_BROKEN) {
			failed(v, "telemetry partition %u slot %u sequence %" PRIu64 " (image byte %" PRIu64
			       ", segment offset %zu): FAILED: %s inside a sector after %" PRIu64
			       " valid records (length field %" PRIu32 ")",
			       (unsigned)p, (unsigned)k, c.hdr.seq, byte + c.end_off, c.end_off,
			       c.end_len ? "a record does not validate (CRC or fields)" : "a skip marker does not validate",
			       c.records, c.end_len);
		} else if (verbose) {
			char first[40];
			disk_iso_time(c.first_wall_ms, first, sizeof first);
			printf("telemetry partition %u slot %u: sequence %" PRIu64 ", %" PRIu64 " records from %s, ends at "
			       "segment offset %zu (image byte %" PRIu64 "): %s\n",
			       (unsigned)p, (unsigned)k, c.hdr.seq, c.records, first, c.end_off, byte + c.end_off,
			       disk_seg_end_name(c.end));
		}
	}
}

static void check_telemetry(struct disk_image *im, bool verbose, struct verdict *v)
{
	uint64_t lba;
	struct store_tlog_geom g;
	const char *what;
	int err = disk_tlog_geometry(im, &lba, &g, &what);
	if (err == -E_NOENT) {
		printf("telemetry: ok: %s\n", what);
		return;
	}
	if (err) {
		failed(v, "telemetry: FAILED: the region header: %s", what);
		return;
	}
	uint8_t *seg = disk_alloc(g.segment_bytes);
	if (!seg) {
		failed(v, "telemetry: FAILED: out of memory for a segment of %u bytes", (unsigned)g.segment_bytes);
		return;
	}
	struct tlog_count n = { 0 };
	uint32_t before = v->failed;
	for (uint32_t p = 0; p < g.partitions; p++)
		check_partition(im, lba, &g, p, seg, verbose, &n, v);
	free(seg);
	printf("telemetry: %s: %" PRIu64 " valid records in %" PRIu64 " segments over %u partition%s (%" PRIu64
	       " slots empty, %" PRIu64 " segments full); %" PRIu64 " segments end in a stale or cut tail at a sector "
	       "boundary (not damage: an earlier segment's bytes in the slot, or a write-out a power cut kept in "
	       "part)\n",
	       v->failed == before ? "ok" : "FAILED", n.records, n.segments, (unsigned)g.partitions,
	       g.partitions == 1 ? "" : "s", n.empty_slots, n.full, n.tails);
}

int disk_cmd_verify(const struct disk_opts *o)
{
	struct disk_image im;
	int rc = disk_image_open(&im, o->image, false);
	if (rc) {
		disk_image_close(&im);
		return rc;
	}
	if (im.info.kind != STORE_DISK_OURS) {
		printf("verify: FAILED: %s is not a usable urMQTT data disk (%s): %s\n", o->image,
		       store_disk_kind_name(im.info.kind), im.info.what);
		disk_image_close(&im);
		return DISK_EXIT_BAD;
	}
	printf("verify: %s: %s\n", o->image, im.info.what);
	struct verdict v = { 0 };
	check_gpt(&im, &v);
	check_slots(&im, &v);
	check_database(&im, o->full, &v);
	check_telemetry(&im, o->verbose, &v);
	disk_image_close(&im);
	if (!v.failed) {
		printf("verify: OK (%u note%s)\n", (unsigned)v.notes, v.notes == 1 ? "" : "s");
		return DISK_EXIT_OK;
	}
	printf("verify: FAILED: %u problem%s:", (unsigned)v.failed, v.failed == 1 ? "" : "s");
	for (uint32_t i = 0; i < MIN(v.failed, SUMMARY_MAX); i++)
		printf("%s %s", i ? ";" : "", v.first[i]);
	printf("%s\n", v.failed > SUMMARY_MAX ? "; ..." : "");
	return DISK_EXIT_BAD;
}
