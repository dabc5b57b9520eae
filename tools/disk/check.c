/* SPDX-License-Identifier: MIT
 *
 * tools/disk/disk.h, the pure pieces: where a telemetry segment's valid records end and
 * why (through store/tlog.h's cursor: the same validation the broker and every reader
 * apply), SQLite's database and WAL headers for a summary (and against a file's room), the
 * names of the layout's regions and extents, GUID and time text, the command line's numbers and
 * slot names. No I/O, no allocation; every byte given is untrusted.
 * Tested by tests/unit/tools/test_disk_check.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/bytes.h"
#include "lib/err.h"
#include "tools/disk/disk.h"

bool disk_all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

const char *disk_seg_end_name(enum disk_seg_end e)
{
	switch (e) {
	case DISK_SEG_END_ZERO:
		return "end";
	case DISK_SEG_END_FULL:
		return "full";
	case DISK_SEG_END_TAIL:
		return "stale-or-cut-tail";
	case DISK_SEG_END_BROKEN:
		return "BROKEN";
	}
	return "?";
}

static bool sector_ok(uint32_t s)
{
	return s >= 512u && s <= 65536u && (s & (s - 1u)) == 0;
}

int disk_seg_check(const uint8_t *seg, size_t len, uint32_t sector, struct disk_seg_check *out)
{
	memset(out, 0, sizeof *out);
	if (!seg || !sector_ok(sector))
		return -E_INVAL;
	int err = store_tlog_seg_decode(seg, len, &out->hdr);
	if (err)
		return err == -E_NOENT ? -E_NOENT : -E_CORRUPT;
	struct store_tlog_cursor c;
	if (store_tlog_cursor_init(&c, seg, len, sector) != 0)
		return -E_CORRUPT;
	struct store_tlog_rec r;
	while (store_tlog_cursor_next(&c, &r) == 1) {
		if (!out->first_wall_ms)
			out->first_wall_ms = r.wall_ms;
		out->last_wall_ms = r.wall_ms;
	}
	out->records = c.records;
	out->skipped_bytes = c.skipped_bytes;
	out->end_off = c.off;
	if (c.off > len || len - c.off < STORE_TLOG_REC_HDR) {
		out->end = DISK_SEG_END_FULL;
		return 0;
	}
	out->end_len = ld_le32(seg + c.off);
	if (c.off % sector == 0)
		out->end = out->end_len == 0 ? DISK_SEG_END_ZERO : DISK_SEG_END_TAIL;
	else
		out->end = DISK_SEG_END_BROKEN;
	return 0;
}

int disk_sqlite_hdr_decode(const uint8_t *p, size_t len, struct disk_sqlite_hdr *out, bool *zero)
{
	static const char magic[16] = "SQLite format 3"; /* and its NUL */
	memset(out, 0, sizeof *out);
	if (zero)
		*zero = false;
	if (!p || len < 100)
		return -E_INVAL;
	if (memcmp(p, magic, sizeof magic) != 0) {
		if (zero)
			*zero = disk_all_zero(p, 100);
		return -E_NOENT;
	}
	uint32_t ps = ld_be16(p + 16);
	if (ps == 1)
		ps = 65536;
	out->write_version = p[18];
	out->read_version = p[19];
	out->reserved = p[20];
	out->change_counter = ld_be32(p + 24);
	out->pages = ld_be32(p + 28);
	out->freelist_trunk = ld_be32(p + 32);
	out->freelist_pages = ld_be32(p + 36);
	out->schema_cookie = ld_be32(p + 40);
	out->schema_format = ld_be32(p + 44);
	out->text_encoding = ld_be32(p + 56);
	out->user_version = ld_be32(p + 60);
	out->application_id = ld_be32(p + 68);
	out->version_valid_for = ld_be32(p + 92);
	out->sqlite_version = ld_be32(p + 96);
	if (ps < 512 || (ps & (ps - 1u)))
		return -E_CORRUPT;
	out->page_size = ps;
	/* The in-header size is valid only when it was written by a version that keeps it
	 * (version-valid-for equals the change counter) and is not zero: SQLite's own rule. */
	out->pages_valid = out->pages > 0 && out->change_counter == out->version_valid_for;
	out->bytes = out->pages_valid ? (uint64_t)ps * out->pages : 0;
	return 0;
}

int disk_wal_hdr_decode(const uint8_t *p, size_t len, struct disk_wal_hdr *out)
{
	memset(out, 0, sizeof *out);
	if (!p || len < 32)
		return -E_INVAL;
	if ((ld_be32(p) & 0xFFFFFFFEu) != 0x377f0682u) /* either checksum byte order */
		return -E_NOENT;
	out->version = ld_be32(p + 4);
	out->page_size = ld_be32(p + 8);
	out->checkpoint_seq = ld_be32(p + 12);
	out->salt1 = ld_be32(p + 16);
	out->salt2 = ld_be32(p + 20);
	return 0;
}

const char *disk_size_text(uint64_t bytes, char *buf, size_t cap)
{
	if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
		snprintf(buf, cap, "%" PRIu64 " MiB", bytes >> 20);
	else if (bytes >= (1u << 20))
		snprintf(buf, cap, "%.1f MiB", (double)bytes / (1 << 20));
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, cap, "%" PRIu64 " KiB", bytes >> 10);
	else
		snprintf(buf, cap, "%" PRIu64 " B", bytes);
	return buf;
}

bool disk_sqlite_hdr_too_big(const struct disk_sqlite_hdr *h, uint64_t room_bytes)
{
	return h->pages_valid && h->bytes > room_bytes;
}

const char *disk_region_kind_name(uint32_t kind)
{
	static const char *const names[STORE_REGION__KINDS] = { "?", "database", "wal", "telemetry", "backup-a",
								"backup-b" };
	return kind < STORE_REGION__KINDS ? names[kind] : "?";
}

void disk_region_name(const struct store_super *sb, uint32_t i, char *out, size_t cap)
{
	if (!cap)
		return;
	if (i >= sb->n_regions || i >= STORE_MAX_REGIONS) {
		snprintf(out, cap, "?");
		return;
	}
	uint32_t kind = sb->regions[i].kind, at = 0, n = 0;
	for (uint32_t j = 0; j < sb->n_regions && j < STORE_MAX_REGIONS; j++)
		if (sb->regions[j].kind == kind) {
			at += j < i;
			n++;
		}
	if (at == 0)
		snprintf(out, cap, "%s", disk_region_kind_name(kind));
	else
		snprintf(out, cap, "%s (extent %u of %u)", disk_region_kind_name(kind), (unsigned)(at + 1u), (unsigned)n);
}

void disk_guid_text(const uint8_t g[16], char out[37])
{
	/* First three groups little-endian on disk, the last two as written. */
	snprintf(out, 37, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x", (unsigned)ld_le32(g),
		 (unsigned)ld_le16(g + 4), (unsigned)ld_le16(g + 6), g[8], g[9], g[10], g[11], g[12], g[13], g[14],
		 g[15]);
}

void disk_iso_time(int64_t ms, char *out, size_t cap)
{
	if (ms <= 0) {
		snprintf(out, cap, "unknown");
		return;
	}
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	if (!gmtime_r(&s, &tm)) {
		snprintf(out, cap, "unknown");
		return;
	}
	size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, cap - n, ".%03dZ", (int)(ms % 1000));
}

int64_t disk_parse_time(const char *v)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (end != v && !*end && !errno && n >= 0)
		return strlen(v) >= 13 ? (int64_t)n : (int64_t)n * 1000;
	struct tm tm = { 0 };
	const char *rest = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!rest)
		return -1;
	int ms = 0;
	if (*rest == '.') {
		rest++;
		for (int i = 0; i < 3; i++) {
			if (*rest < '0' || *rest > '9')
				return -1;
			ms = ms * 10 + (*rest++ - '0');
		}
	}
	if (strcmp(rest, "Z") != 0)
		return -1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

int disk_parse_u32(const char *v, uint32_t max, uint32_t *out)
{
	if (!v || *v < '0' || *v > '9')
		return -E_INVAL;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (*end || errno || n > max)
		return -E_INVAL;
	*out = (uint32_t)n;
	return 0;
}

int disk_parse_slot(const char *v, uint32_t *slot)
{
	if (!v || (v[0] != 'A' && v[0] != 'a' && v[0] != 'B' && v[0] != 'b') || v[1])
		return -E_INVAL;
	*slot = v[0] == 'A' || v[0] == 'a' ? 1u : 2u;
	return 0;
}
