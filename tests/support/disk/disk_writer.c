/* SPDX-License-Identifier: MIT
 *
 * disk-writer: a test helper for tests/smoke/disk-tool.sh, never installed. It writes to an
 * image the way the broker does, with the broker's own code, so that the smoke test can put
 * real data on a disk `urmqtt-disk format` made and then damage it on purpose:
 *   disk-writer telemetry IMAGE N [--each]
 *       open the telemetry log (store/tlog.h's writer: the region's header and hints when it
 *       was never used), append N records to partition 0 (identity dev-1, topic
 *       devices/dev-1/telemetry, payload m-1..m-N; --each: one write-out per record, so each
 *       starts at a sector boundary), write them out, flush; then print every record of
 *       partition 0 as "record I at image byte B length L" (read back with the cursor).
 *   disk-writer retained IMAGE TAG N
 *       the broker's bring-up, then N retained messages put as the storage engine applies
 *       them (store/db.h: store_db_apply of RET_PUT records, 16 per transaction): topics
 *       r/TAG/00000.., payload "TAG-<i>" padded with '.' to 40 bytes; then a clean close.
 *       Prints "retained TAG: N put, the table holds M".
 *   disk-writer sql IMAGE SQL [--keep-wal]
 *       the broker's bring-up (store/boot.h: quick_check, a new boot generation), then SQL
 *       (rows printed as "column=value"); then a clean close (checkpoint: everything in the
 *       database region), or with --keep-wal an exit without closing, as a killed broker:
 *       the commits stay in the WAL region only.
 *   disk-writer grow IMAGE [--stop-after-gpt | --stop-in-primary-gpt]
 *       the broker's growth of the layout to the image file's size, as store_boot runs it
 *       right after the probe said ours (store/grow.h: both GPT copies, then the superblock),
 *       and nothing else of the bring-up; prints "grow: <the console line>". With a --stop
 *       option the growth runs on a device that fails, as one that lost power, the first write
 *       into the data partition's meta area (--stop-after-gpt: the superblock commit, after
 *       both GPT copies were written and flushed) or to the primary GPT header at LBA 1
 *       (--stop-in-primary-gpt: after the new backup copy and the primary's MBR and entry
 *       array), and every request after it; then prints "grow: stopped: <the console line>"
 *       and the probe's verdict, and exits 0 only when the probe says a growth is pending.
 * Exit 0, or 1 with the reason on stderr. Host code; the image opened read-write.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hosted/blk_file.h"
#include "lib/bytes.h"
#include "lib/err.h"
#include "store/boot.h"
#include "store/grow.h"
#include "store/sqlite/sqlite_int.h"
#include "store/sqlite/vfs.h"
#include "store/tlog.h"
#include "store/tlog_scan.h"
#include "urmqtt_config.h"

#define BOUNCE (1u << 20)

static uint64_t now_ns(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int64_t wall_ms(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_s(void *ctx)
{
	return wall_ms(ctx) / 1000;
}

static void rnd(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	if (getrandom(buf, len, 0) != (ssize_t)len)
		abort();
}

static void *m_alloc(void *ctx, size_t len)
{
	(void)ctx;
	return malloc(len);
}

static void m_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	free(p);
}

static int die(const char *img, const char *what, int err)
{
	fprintf(stderr, "disk-writer: %s: %s (%s)\n", img, what, err_name(err));
	return 1;
}

struct img {
	struct hosted_blk_file f;
	struct store_dev dev;
	uint8_t *bounce, *scratch;
	struct store_disk_info info;
};

static int img_open(struct img *m, const char *path)
{
	static const struct store_dev_port port = { .now_ns = now_ns };
	memset(m, 0, sizeof *m);
	m->bounce = aligned_alloc(4096, BOUNCE);
	m->scratch = aligned_alloc(4096, STORE_LAYOUT_SCRATCH);
	if (!m->bounce || !m->scratch)
		return die(path, "out of memory", -E_NOMEM);
	int err = hosted_blk_file_open(&m->f, path, 0, 512, 8, false);
	if (err)
		return die(path, "cannot open", err);
	err = store_dev_init(&m->dev, &m->f.dev, m->bounce, BOUNCE, 30000, &port);
	if (!err)
		err = store_disk_probe(&m->dev, m->scratch, STORE_LAYOUT_SCRATCH, &m->info);
	if (err)
		return die(path, "probe", err);
	if (m->info.kind != STORE_DISK_OURS || m->info.sb.block_size != 512) {
		fprintf(stderr, "disk-writer: %s: not an urMQTT disk of 512-byte blocks: %s\n", path, m->info.what);
		return 1;
	}
	return 0;
}

static void img_close(struct img *m)
{
	hosted_blk_file_close(&m->f);
	free(m->bounce);
	free(m->scratch);
}

static int cmd_telemetry(const char *path, uint32_t n, bool each)
{
	struct img m;
	if (img_open(&m, path)) {
		img_close(&m);
		return 1;
	}
	const struct store_super *sb = &m.info.sb;
	const struct store_region *r = store_super_region(sb, STORE_REGION_TELEMETRY);
	if (!r || !r->blocks) {
		img_close(&m);
		return die(path, "no telemetry region", -E_NOENT);
	}
	uint32_t seg_bytes = CONF_STORAGE_TELEMETRY_SEGMENT_KB << 10;
	uint8_t *io = aligned_alloc(4096, (seg_bytes + 4095u) & ~(size_t)4095u);
	struct store_tlog_config tc = { .dev = &m.dev, .lba = sb->part_start + r->start, .blocks = r->blocks,
					.partitions = 1, .segment_bytes = seg_bytes,
					.flush_bytes = CONF_STORAGE_TELEMETRY_FLUSH_BYTES, .io = io, .io_len = seg_bytes };
	size_t len = store_tlog_mem_size(&tc);
	void *mem = len ? aligned_alloc(4096, (len + 4095u) & ~(size_t)4095u) : NULL;
	struct store_tlog *t = NULL;
	int err = mem && io ? store_tlog_open(&t, mem, len, &tc, wall_ms(NULL)) : -E_NOMEM;
	for (uint32_t i = 1; !err && i <= n; i++) {
		char payload[32];
		int pl = snprintf(payload, sizeof payload, "m-%u", (unsigned)i);
		static const char id[] = "dev-1", topic[] = "devices/dev-1/telemetry";
		const struct store_tlog_rec rec = { .wall_ms = wall_ms(NULL), .mono_ns = now_ns(NULL), .qos = 1,
						    .id = (const uint8_t *)id, .id_len = sizeof id - 1,
						    .topic = (const uint8_t *)topic, .topic_len = sizeof topic - 1,
						    .payload = (const uint8_t *)payload, .payload_len = (uint32_t)pl };
		err = store_tlog_append(t, 0, &rec);
		if (!err && each)
			err = store_tlog_write_out(t);
	}
	if (!err)
		err = store_tlog_write_out(t);
	if (!err)
		err = store_dev_flush(&m.dev);
	if (err) {
		free(mem);
		free(io);
		img_close(&m);
		return die(path, "writing telemetry", err);
	}
	/* Read back partition 0 with the cursor: where each record lies in the image. */
	const struct store_tlog_geom *g = store_tlog_geometry(t);
	struct store_tlog_slot_ref *order = calloc(g->segments, sizeof *order);
	struct store_tlog_scan s;
	err = order ? store_tlog_scan_start(&s, &m.dev, tc.lba, g, 0, io, order, 0) : -E_NOMEM;
	uint64_t i = 0;
	for (uint32_t k = 0; !err && k < s.n_order; k++) {
		uint64_t base = tc.lba * 512u + store_tlog_slot_off(g, 0, order[k].slot);
		err = store_dev_read(&m.dev, base / 512u, g->segment_bytes / 512u, io);
		struct store_tlog_cursor c;
		if (!err)
			err = store_tlog_cursor_init(&c, io, g->segment_bytes, g->sector);
		struct store_tlog_rec rec;
		size_t at = err ? 0 : c.off;
		while (!err && store_tlog_cursor_next(&c, &rec) == 1) {
			while (ld_le32(io + at) == 0) /* a skip marker before it */
				at = (at / g->sector + 1u) * g->sector;
			printf("record %" PRIu64 " at image byte %" PRIu64 " length %u slot %u sequence %" PRIu64 "\n", ++i,
			       base + at, (unsigned)(c.off - at), (unsigned)order[k].slot, order[k].seq);
			at = c.off;
		}
	}
	free(order);
	free(mem);
	free(io);
	img_close(&m);
	return err ? die(path, "reading back", err) : 0;
}

/* The broker's bring-up on an image of ours (store_boot): 0 with db open, or 1 (said). */
static int boot_up(struct img *m, const char *path, struct store_db *db)
{
	const struct store_sqlite_mem mem = { .alloc = m_alloc, .free = m_free, .limit = 64u << 20 };
	int err = store_sqlite_init(&mem);
	if (err)
		return die(path, "sqlite init", err);
	static uint8_t io_buf[128 * 1024] ALIGNED(8);
	uint8_t guids[48] = { 0 };
	const struct store_boot_config bc = { .cache_kb = 2048, .checkpoint_pages = 1000, .guids = guids,
					      .now_s = wall_s(NULL), .scratch = m->scratch,
					      .scratch_len = STORE_LAYOUT_SCRATCH, .io_buf = io_buf,
					      .io_buf_len = sizeof io_buf, .random = rnd, .wall_ms = wall_ms,
					      .wall_s = wall_s };
	static struct store_boot_result out;
	err = store_boot(&m->dev, &bc, db, &out);
	if (err) {
		fprintf(stderr, "disk-writer: %s: %s\n", path, out.what);
		(void)!store_sqlite_fini();
		return 1;
	}
	return 0;
}

static int cmd_retained(const char *path, const char *tag, uint32_t n)
{
	struct img m;
	struct store_db db;
	if (img_open(&m, path) || boot_up(&m, path, &db)) {
		img_close(&m);
		return 1;
	}
	int err = 0;
	for (uint32_t i = 0; !err && i < n;) {
		err = store_db_begin(&db);
		for (uint32_t k = 0; !err && k < 16 && i < n; k++, i++) {
			char topic[64], payload[41];
			int tl = snprintf(topic, sizeof topic, "r/%s/%05u", tag, (unsigned)i);
			int pl = snprintf(payload, sizeof payload, "%s-%u", tag, (unsigned)i);
			memset(payload + pl, '.', sizeof payload - 1 - (size_t)pl);
			const struct store_rec r = { .kind = STORE_REC_RET_PUT, .qos = 1, .topic = (const uint8_t *)topic,
						     .topic_len = (uint16_t)tl, .payload = (const uint8_t *)payload,
						     .payload_len = sizeof payload - 1 };
			err = store_db_apply(&db, &r, wall_s(NULL));
		}
		if (!err)
			err = store_db_commit(&db);
	}
	struct store_db_counts c = { 0 };
	if (!err)
		err = store_db_count(&db, &c);
	if (err)
		fprintf(stderr, "disk-writer: %s: putting retained messages: %s (%s)\n", path, err_name(err), db.why);
	else
		printf("retained %s: %u put, the table holds %llu\n", tag, (unsigned)n, (unsigned long long)c.retained);
	store_boot_close(&db);
	(void)!store_sqlite_fini();
	img_close(&m);
	return err ? 1 : 0;
}

/* The image's device for a --stop option: the first write that touches [lba, lba + n) fails
 * with -E_IO without reaching the file, and so does every request after it (a device that
 * lost power; store/dev.h is synchronous, so nothing else is in flight then). */
struct cut_dev {
	struct blk_dev dev;
	struct blk_dev *under; /* linked */
	uint64_t lba, n;
	bool cut;
};

static int cut_submit(void *impl, struct blk_req *r)
{
	struct cut_dev *c = impl;
	bool write = r->op == BLK_WRITE || r->op == BLK_DISCARD || r->op == BLK_WRITE_ZEROES;
	if (write && r->lba < c->lba + c->n && r->lba + r->n_blocks > c->lba)
		c->cut = true;
	return c->cut ? -E_IO : blk_submit(c->under, r);
}

static void cut_kick(void *impl)
{
	blk_kick(((struct cut_dev *)impl)->under);
}

static int cut_poll(void *impl, struct blk_req **done)
{
	return blk_poll(((struct cut_dev *)impl)->under, done);
}

enum grow_stop { GROW_WHOLE, GROW_STOP_AFTER_GPT, GROW_STOP_IN_PRIMARY_GPT };

static int cmd_grow(const char *path, enum grow_stop stop)
{
	static const struct blk_ops cut_ops = { cut_submit, cut_kick, cut_poll };
	static const struct store_dev_port port = { .now_ns = now_ns };
	struct img m;
	if (img_open(&m, path)) {
		img_close(&m);
		return 1;
	}
	struct store_super sb = m.info.sb;
	struct store_dev cut_store, *d = &m.dev;
	struct cut_dev c = { .dev = m.f.dev, .under = &m.f.dev };
	if (stop != GROW_WHOLE) {
		c.dev.ops = &cut_ops;
		c.dev.impl = &c;
		/* after-gpt: the meta area (the partition's first unit: the superblock slots);
		 * in-primary-gpt: the primary GPT header, written after its MBR and entry array */
		c.lba = stop == GROW_STOP_AFTER_GPT ? sb.part_start : 1u;
		c.n = stop == GROW_STOP_AFTER_GPT ? sb.align_bytes / sb.block_size : 1u;
		if (store_dev_init(&cut_store, &c.dev, m.bounce, BOUNCE, 30000, &port) != 0) {
			img_close(&m);
			return die(path, "the device layer refused the cut device", -E_INVAL);
		}
		d = &cut_store;
	}
	static struct store_grow_result out;
	int err = store_grow(d, &sb, m.scratch, STORE_LAYOUT_SCRATCH, &out);
	if (stop == GROW_WHOLE) {
		if (!err)
			printf("grow: %s\n", out.what);
		else
			fprintf(stderr, "disk-writer: %s: %s\n", path, out.what);
		img_close(&m);
		return err ? 1 : 0;
	}
	printf("grow: stopped: %s\n", c.cut ? out.what : "the growth wrote nothing there: nothing stopped");
	struct store_disk_info info;
	int perr = store_disk_probe(&m.dev, m.scratch, STORE_LAYOUT_SCRATCH, &info);
	if (!perr)
		printf("grow: the probe now says: %s: %s%s\n", store_disk_kind_name(info.kind), info.what,
		       info.grow_pending ? " (grow_pending)" : "");
	img_close(&m);
	if (perr)
		return die(path, "probe after the growth", perr);
	return c.cut && err == -E_IO && info.kind == STORE_DISK_OURS && info.grow_pending ? 0 : 1;
}

static int print_row(void *ctx, int n, char **vals, char **cols)
{
	(void)ctx;
	for (int i = 0; i < n; i++)
		printf("%s%s=%s", i ? " " : "", cols[i], vals[i] ? vals[i] : "NULL");
	printf("\n");
	return 0;
}

static int cmd_sql(const char *path, const char *sql, bool keep_wal)
{
	struct img m;
	struct store_db db;
	if (img_open(&m, path) || boot_up(&m, path, &db)) {
		img_close(&m);
		return 1;
	}
	char *msg = NULL;
	int rc = sqlite3_exec(db.h, sql, print_row, NULL, &msg);
	if (rc != SQLITE_OK)
		fprintf(stderr, "disk-writer: %s: SQL: %s\n", path, msg ? msg : sqlite3_errstr(rc));
	sqlite3_free(msg);
	fflush(stdout);
	if (keep_wal)
		_exit(rc == SQLITE_OK ? 0 : 1); /* as a killed broker: nothing closed, nothing checkpointed */
	store_boot_close(&db);
	(void)!store_sqlite_fini();
	img_close(&m);
	return rc == SQLITE_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "telemetry")) {
		char *end;
		unsigned long n = strtoul(argv[3], &end, 10);
		if (!*end && n > 0 && n < 100000)
			return cmd_telemetry(argv[2], (uint32_t)n, argc >= 5 && !strcmp(argv[4], "--each"));
	}
	if (argc == 5 && !strcmp(argv[1], "retained")) {
		char *end;
		unsigned long n = strtoul(argv[4], &end, 10);
		if (!*end && n > 0 && n < 100000 && argv[3][0] && strlen(argv[3]) < 16)
			return cmd_retained(argv[2], argv[3], (uint32_t)n);
	}
	if (argc >= 4 && !strcmp(argv[1], "sql"))
		return cmd_sql(argv[2], argv[3], argc >= 5 && !strcmp(argv[4], "--keep-wal"));
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "grow")) {
		if (argc == 3)
			return cmd_grow(argv[2], GROW_WHOLE);
		if (!strcmp(argv[3], "--stop-after-gpt"))
			return cmd_grow(argv[2], GROW_STOP_AFTER_GPT);
		if (!strcmp(argv[3], "--stop-in-primary-gpt"))
			return cmd_grow(argv[2], GROW_STOP_IN_PRIMARY_GPT);
	}
	fprintf(stderr, "usage: disk-writer telemetry IMAGE N [--each] | retained IMAGE TAG N | sql IMAGE SQL "
			"[--keep-wal] | grow IMAGE [--stop-after-gpt | --stop-in-primary-gpt]\n");
	return 2;
}
