/* SPDX-License-Identifier: MIT
 *
 * urmqtt-disk: read an urMQTT data disk offline (a disk image or a block device), never
 * writing it. Host tool (libc); the disk is reached through the same code the broker uses
 * (hosted/blk_file.h under store/dev.h, store/layout.h's probe, store/tlog_scan.h).
 *   urmqtt-disk info IMAGE
 *       what the disk holds: the layout, its superblock and regions, the telemetry log's
 *       geometry
 *   urmqtt-disk telemetry IMAGE [--since T] [--until T] [--identity ID] [--topic FILTER]
 *                         [--format jsonl|csv]
 *       every telemetry record that validates, oldest first per partition, filtered; T is
 *       Unix seconds, Unix milliseconds (13 digits) or YYYY-MM-DDTHH:MM:SS[.mmm]Z. Payloads
 *       are text when they are UTF-8, base64 otherwise. A summary (records, segments,
 *       records cut as torn, headers that did not validate) goes to stderr.
 * Exit: 0, 1 (the disk is not an urMQTT disk, or I/O failed), 2 (usage).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hosted/blk_file.h"
#include "lib/err.h"
#include "mqtt/codec.h"
#include "store/dev.h"
#include "store/layout.h"
#include "store/tlog_scan.h"

struct opts {
	const char *cmd, *image, *identity, *topic;
	int64_t since_ms, until_ms;
	bool csv;
};

static uint64_t mono_ns(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: urmqtt-disk info IMAGE\n"
			"       urmqtt-disk telemetry IMAGE [--since T] [--until T] [--identity ID] [--topic FILTER]\n"
			"                             [--format jsonl|csv]\n"
			"  T: Unix seconds, Unix milliseconds, or YYYY-MM-DDTHH:MM:SS[.mmm]Z\n");
}

/* T as Unix milliseconds; -1 when it is not a time. */
static int64_t parse_time(const char *v)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (!*end && !errno && n >= 0)
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

static void iso_time(int64_t ms, char *out, size_t cap)
{
	if (ms <= 0) {
		snprintf(out, cap, "unknown");
		return;
	}
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, cap - n, ".%03dZ", (int)(ms % 1000));
}

static bool utf8_text(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
			return false;
	return mqtt_utf8_valid(p, n);
}

static void put_base64(FILE *f, const uint8_t *p, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
		fputc(a[v >> 18 & 63], f);
		fputc(a[v >> 12 & 63], f);
		fputc(i + 1 < n ? a[v >> 6 & 63] : '=', f);
		fputc(i + 2 < n ? a[v & 63] : '=', f);
	}
}

/* A JSON string's contents (UTF-8 passed through, controls and quotes escaped). */
static void put_json_text(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

/* A CSV field (RFC 4180: quoted, quotes doubled). */
static void put_csv_text(FILE *f, const uint8_t *p, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '"')
			fputc('"', f);
		fputc(p[i], f);
	}
	fputc('"', f);
}

static void print_record(const struct opts *o, uint32_t part, uint64_t seq, const struct store_tlog_rec *r)
{
	char when[40];
	iso_time(r->wall_ms, when, sizeof when);
	bool text = utf8_text(r->payload, r->payload_len);
	if (o->csv) {
		printf("%s,%" PRId64 ",", when, r->wall_ms);
		put_csv_text(stdout, r->id, r->id_len);
		printf(",%s,", r->id_kind ? "service" : "device");
		put_csv_text(stdout, r->topic, r->topic_len);
		printf(",%u,%u,%" PRIu64 ",", (unsigned)r->qos, (unsigned)part, seq);
		if (text) {
			put_csv_text(stdout, r->payload, r->payload_len);
		} else {
			fputs("\"base64:", stdout);
			put_base64(stdout, r->payload, r->payload_len);
			fputc('"', stdout);
		}
		fputc('\n', stdout);
		return;
	}
	printf("{\"time\":\"%s\",\"wall_ms\":%" PRId64 ",\"identity\":\"", when, r->wall_ms);
	put_json_text(stdout, r->id, r->id_len);
	printf("\",\"kind\":\"%s\",\"topic\":\"", r->id_kind ? "service" : "device");
	put_json_text(stdout, r->topic, r->topic_len);
	printf("\",\"qos\":%u,\"partition\":%u,\"segment\":%" PRIu64 ",", (unsigned)r->qos, (unsigned)part, seq);
	if (text) {
		fputs("\"payload\":\"", stdout);
		put_json_text(stdout, r->payload, r->payload_len);
	} else {
		fputs("\"payload_b64\":\"", stdout);
		put_base64(stdout, r->payload, r->payload_len);
	}
	fputs("\"}\n", stdout);
}

static bool wanted(const struct opts *o, const struct store_tlog_rec *r)
{
	if (o->since_ms && r->wall_ms < o->since_ms)
		return false;
	if (o->until_ms && r->wall_ms > o->until_ms)
		return false;
	if (o->identity && (strlen(o->identity) != r->id_len || memcmp(o->identity, r->id, r->id_len) != 0))
		return false;
	if (o->topic && !mqtt_filter_match((const uint8_t *)o->topic, strlen(o->topic), r->topic, r->topic_len))
		return false;
	return true;
}

struct disk {
	struct hosted_blk_file f;
	struct store_dev dev;
	uint8_t *bounce, *scratch;
	struct store_disk_info info;
};

/* Open the image read only (512-byte blocks, or the layout's own block size) and probe it. */
static int disk_open(struct disk *d, const char *path)
{
	static const struct store_dev_port port = { mono_ns, NULL, NULL };
	uint32_t bs = 512;
	for (int attempt = 0; attempt < 2; attempt++) {
		int err = hosted_blk_file_open(&d->f, path, 0, bs, 8, true);
		if (err) {
			fprintf(stderr, "urmqtt-disk: %s: cannot open (%s)\n", path, err_name(err));
			return 1;
		}
		if (!d->bounce)
			d->bounce = aligned_alloc(4096, 1u << 20);
		if (!d->scratch)
			d->scratch = aligned_alloc(4096, STORE_LAYOUT_SCRATCH);
		if (!d->bounce || !d->scratch || store_dev_init(&d->dev, &d->f.dev, d->bounce, 1u << 20, 10000, &port)) {
			fprintf(stderr, "urmqtt-disk: out of memory\n");
			return 1;
		}
		err = store_disk_probe(&d->dev, d->scratch, STORE_LAYOUT_SCRATCH, &d->info);
		if (err) {
			fprintf(stderr, "urmqtt-disk: %s: reading failed (%s)\n", path, err_name(err));
			return 1;
		}
		if (d->info.kind != STORE_DISK_OURS || d->info.sb.block_size == bs)
			break;
		bs = d->info.sb.block_size; /* formatted with other blocks: read it that way */
		hosted_blk_file_close(&d->f);
	}
	if (d->info.kind != STORE_DISK_OURS) {
		fprintf(stderr, "urmqtt-disk: %s: not an urMQTT data disk: %s\n", path, d->info.what);
		return 1;
	}
	return 0;
}

static void disk_close(struct disk *d)
{
	hosted_blk_file_close(&d->f);
	free(d->bounce);
	free(d->scratch);
}

static int telemetry_geometry(struct disk *d, uint64_t *lba, struct store_tlog_geom *g)
{
	const struct store_super *sb = &d->info.sb;
	const struct store_region *r = store_super_region(sb, STORE_REGION_TELEMETRY);
	if (!r || !r->blocks) {
		fprintf(stderr, "urmqtt-disk: the layout has no telemetry region\n");
		return -E_NOENT;
	}
	*lba = sb->part_start + r->start;
	int err = store_tlog_scan_geometry(&d->dev, *lba, r->blocks, d->scratch, g);
	if (err == -E_NOENT)
		fprintf(stderr, "urmqtt-disk: the telemetry log was never used\n");
	else if (err)
		fprintf(stderr, "urmqtt-disk: the telemetry log's header: %s\n", err_name(err));
	return err;
}

static int cmd_info(const struct opts *o)
{
	struct disk d = { 0 };
	if (disk_open(&d, o->image))
		return 1;
	const struct store_super *sb = &d.info.sb;
	printf("%s: urMQTT data disk, layout v%u, superblock generation %" PRIu64 " (slot %c%s), %u-byte blocks\n",
	       o->image, (unsigned)sb->version, sb->generation, d.info.super_slot ? 'B' : 'A',
	       d.info.gpt_from_backup ? ", GPT from its backup" : "", (unsigned)sb->block_size);
	printf("data partition: blocks %" PRIu64 "..%" PRIu64 " (%" PRIu64 " MiB); database %s\n", sb->part_start,
	       sb->part_start + sb->part_blocks - 1, (sb->part_blocks * sb->block_size) >> 20,
	       sb->db_state == STORE_DB_READY ? "ready" : "being created");
	static const char *const names[] = { "none", "database", "wal", "telemetry", "backup-a", "backup-b" };
	for (uint32_t i = 0; i < sb->n_regions; i++) {
		const struct store_region *r = &sb->regions[i];
		printf("  region %-9s blocks %" PRIu64 " + %" PRIu64 " (%" PRIu64 " MiB)\n",
		       r->kind < STORE_REGION__KINDS ? names[r->kind] : "?", sb->part_start + r->start, r->blocks,
		       (r->blocks * sb->block_size) >> 20);
	}
	uint64_t lba;
	struct store_tlog_geom g;
	if (telemetry_geometry(&d, &lba, &g) == 0)
		printf("telemetry log: %u partitions x %u segments of %u KiB, %u-byte sectors\n", (unsigned)g.partitions,
		       (unsigned)g.segments, (unsigned)(g.segment_bytes >> 10), (unsigned)g.sector);
	disk_close(&d);
	return 0;
}

static int cmd_telemetry(const struct opts *o)
{
	struct disk d = { 0 };
	if (disk_open(&d, o->image))
		return 1;
	uint64_t lba;
	struct store_tlog_geom g;
	int err = telemetry_geometry(&d, &lba, &g);
	if (err) {
		disk_close(&d);
		return err == -E_NOENT ? 0 : 1;
	}
	uint8_t *seg = aligned_alloc(4096, g.segment_bytes);
	struct store_tlog_slot_ref *order = calloc(g.segments, sizeof *order);
	if (!seg || !order) {
		fprintf(stderr, "urmqtt-disk: out of memory\n");
		return 1;
	}
	if (o->csv)
		printf("time,wall_ms,identity,kind,topic,qos,partition,segment,payload\n");
	uint64_t printed = 0, records = 0, segments = 0, torn = 0, bad = 0;
	int rc = 0;
	for (uint32_t p = 0; p < g.partitions && !rc; p++) {
		struct store_tlog_scan s;
		err = store_tlog_scan_start(&s, &d.dev, lba, &g, p, seg, order, o->since_ms);
		struct store_tlog_rec r;
		uint64_t seq;
		int got;
		while (!err && (got = store_tlog_scan_next(&s, &r, &seq)) == 1) {
			if (wanted(o, &r)) {
				print_record(o, p, seq, &r);
				printed++;
			}
		}
		if (!err && got < 0)
			err = got;
		if (err) {
			fprintf(stderr, "urmqtt-disk: partition %u: reading failed (%s)\n", (unsigned)p, err_name(err));
			rc = 1;
		}
		records += s.records;
		segments += s.segments_read;
		torn += s.torn_bytes;
		bad += s.bad_headers;
	}
	fprintf(stderr,
		"urmqtt-disk: %" PRIu64 " records printed of %" PRIu64 " valid in %" PRIu64 " segments (%u partitions); "
		"%" PRIu64 " bytes of padding and of torn or stale tails skipped; %" PRIu64
		" segment headers did not validate\n",
		printed, records, segments, (unsigned)g.partitions, torn, bad);
	free(seg);
	free(order);
	disk_close(&d);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	if (argc < 3) {
		usage();
		return 2;
	}
	o.cmd = argv[1];
	o.image = argv[2];
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			usage();
			return 2;
		}
		i++;
		if (!strcmp(a, "--since") || !strcmp(a, "--until")) {
			int64_t t = parse_time(v);
			if (t < 0) {
				fprintf(stderr, "urmqtt-disk: %s %s: not a time\n", a, v);
				return 2;
			}
			*(a[2] == 's' ? &o.since_ms : &o.until_ms) = t;
		} else if (!strcmp(a, "--identity")) {
			o.identity = v;
		} else if (!strcmp(a, "--topic")) {
			if (!mqtt_filter_valid((const uint8_t *)v, strlen(v))) {
				fprintf(stderr, "urmqtt-disk: --topic %s: not a topic filter\n", v);
				return 2;
			}
			o.topic = v;
		} else if (!strcmp(a, "--format")) {
			if (strcmp(v, "jsonl") && strcmp(v, "csv")) {
				fprintf(stderr, "urmqtt-disk: --format %s: jsonl or csv\n", v);
				return 2;
			}
			o.csv = !strcmp(v, "csv");
		} else {
			usage();
			return 2;
		}
	}
	if (!strcmp(o.cmd, "info"))
		return cmd_info(&o);
	if (!strcmp(o.cmd, "telemetry"))
		return cmd_telemetry(&o);
	usage();
	return 2;
}
