/* SPDX-License-Identifier: MIT
 *
 * urmqtt-disk telemetry (tools/disk/disk.h): every telemetry record that validates, oldest
 * first per partition, filtered by time, identity and topic, as JSON lines or CSV; a summary
 * on stderr. Reads through store/tlog_scan.h (the reader the broker's online query uses);
 * the image is opened read only. Output format: docs/TELEMETRY.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/codec.h"
#include "store/tlog_scan.h"
#include "tools/disk/disk.h"

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

static void print_record(const struct disk_opts *o, uint32_t part, uint64_t seq, const struct store_tlog_rec *r)
{
	char when[40];
	disk_iso_time(r->wall_ms, when, sizeof when);
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

static bool wanted(const struct disk_opts *o, const struct store_tlog_rec *r)
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

int disk_cmd_telemetry(const struct disk_opts *o)
{
	struct disk_image im;
	int rc = disk_image_open(&im, o->image, false);
	if (!rc && im.info.kind != STORE_DISK_OURS)
		rc = disk_image_not_ours(&im);
	if (rc) {
		disk_image_close(&im);
		return rc;
	}
	uint64_t lba;
	struct store_tlog_geom g;
	const char *what;
	int err = disk_tlog_geometry(&im, &lba, &g, &what);
	if (err) {
		fprintf(stderr, "urmqtt-disk: %s: the telemetry log: %s\n", o->image, what);
		disk_image_close(&im);
		return err == -E_NOENT ? DISK_EXIT_OK : DISK_EXIT_BAD;
	}
	uint8_t *seg = disk_alloc(g.segment_bytes);
	struct store_tlog_slot_ref *order = calloc(g.segments, sizeof *order);
	if (!seg || !order) {
		fprintf(stderr, "urmqtt-disk: %s: out of memory for a segment of %u bytes\n", o->image,
			(unsigned)g.segment_bytes);
		free(seg);
		free(order);
		disk_image_close(&im);
		return DISK_EXIT_BAD;
	}
	if (o->csv)
		printf("time,wall_ms,identity,kind,topic,qos,partition,segment,payload\n");
	uint64_t printed = 0, records = 0, segments = 0, torn = 0, bad = 0;
	for (uint32_t p = 0; p < g.partitions && !rc; p++) {
		struct store_tlog_scan s;
		err = store_tlog_scan_start(&s, &im.dev, lba, &g, p, seg, order, o->since_ms);
		struct store_tlog_rec r;
		uint64_t seq;
		int got = 0;
		while (!err && (got = store_tlog_scan_next(&s, &r, &seq)) == 1) {
			if (wanted(o, &r)) {
				print_record(o, p, seq, &r);
				printed++;
			}
		}
		if (!err && got < 0)
			err = got;
		if (err) {
			fprintf(stderr, "urmqtt-disk: %s: telemetry partition %u: reading failed (%s)\n", o->image,
				(unsigned)p, err_name(err));
			rc = DISK_EXIT_BAD;
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
	disk_image_close(&im);
	return rc;
}
