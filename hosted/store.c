/* SPDX-License-Identifier: MIT
 *
 * The hosted broker's storage: store/service.h over the file disk (hosted/blk_file.h), on
 * the process's one loop. With one core the data plane's link hands its records to the
 * service's local queue and the service's messages go straight into the data plane (from
 * the loop, never from inside a data-plane call), as the kernel does with one core.
 * Memory is malloc under storage.db_heap_mb (SQLite's bound is the service's); the clock
 * is CLOCK_MONOTONIC, randomness getrandom. Storage that cannot be used stops the process
 * when storage.required is true and otherwise serves without persistence, as the image.
 * Host code; never linked into the image. Single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp/dp.h"
#include "hosted/hosted.h"
#include "kernel/node/port.h"
#include "lib/err.h"
#include "store/ops.h"
#include "store/service.h"
#include "urmqtt_config.h"

#define HS_BOUNCE_BYTES (128u * 1024u)
#define HS_PAYLOAD_MAX 4096u           /* bytes per link message (a mesh slot's size class) */
#define HS_OUT_PER_HELD 16u            /* answer-queue bytes per held acknowledgement */

struct hosted_store {
	struct store_service svc;
	struct dp *dp;                  /* linked by hosted_store_bind */
	struct store_serial serials[NODE_MAX_REVOKED];
	uint8_t bounce[HS_BOUNCE_BYTES] ALIGNED(4096);
};

static uint64_t hst_now_ns(void *ctx)
{
	(void)ctx;
	return node_port_now_ns();
}

static int64_t hst_wall_ms(void *ctx)
{
	(void)ctx;
	return node_port_wall_ms();
}

static void hst_random(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	if (node_port_random(buf, len) != 0) { /* hosted/node_port.c: getrandom */
		fprintf(stderr, "hosted: store: getrandom failed\n");
		abort();
	}
}

static void *hst_alloc(void *ctx, size_t len)
{
	(void)ctx;
	return len ? malloc(len) : NULL; /* 16-byte aligned: more than the 8 asked */
}

static void hst_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	(void)len;
	free(p);
}

static void hst_log(void *ctx, const char *line)
{
	(void)ctx;
	printf("store: %s\n", line);
}

static void hst_unusable(void *ctx, const char *what)
{
	(void)ctx;
	if (!CONF_STORAGE_REQUIRED)
		return;
	fprintf(stderr, "store: storage is required (storage.required) but unusable: %s\n", what);
	exit(3);
}

static int hst_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	struct hosted_store *st = ctx;
	if (dst != 0 || !st->dp)
		return -E_INVAL;
	dp_store_recv(st->dp, kind, data, len);
	return 0;
}

static uint32_t hst_home(void *ctx, uint8_t id_kind, const uint8_t *id, size_t len)
{
	(void)ctx;
	(void)id_kind;
	(void)id;
	(void)len;
	return 0; /* one data plane: every session lives here */
}

/* The data plane's link: records into the service's local queue. */
static int hst_link_send(void *ctx, uint16_t kind, const void *data, uint32_t len)
{
	struct hosted_store *st = ctx;
	return store_service_local(&st->svc, kind, data, len);
}

int hosted_store_create(struct hosted_store **out, struct blk_dev *blk, const char *name,
			const struct tls_revoke_list *revoked, const struct hosted_storage_opts *so)
{
	*out = NULL;
	struct hosted_store *st = aligned_alloc(4096, sizeof *st);
	if (!st)
		return -E_NOMEM;
	memset(st, 0, sizeof *st);
	size_t n_rev = MIN(revoked->n, (size_t)NODE_MAX_REVOKED);
	for (size_t i = 0; i < n_rev; i++)
		st->serials[i] = (struct store_serial){ revoked->entries[i].serial, revoked->entries[i].len };
	struct store_service_config sc = {
		.blk = blk, .disk_name = name, .bounce = st->bounce, .bounce_len = sizeof st->bounce,
		.io_timeout_ms = CONF_STORAGE_IO_TIMEOUT_MS,
		.layout = { .esp_bytes = (uint64_t)CONF_STORAGE_ESP_MB << 20, .wal_bytes = (uint64_t)CONF_STORAGE_WAL_MB << 20,
			    .telemetry_pct = CONF_STORAGE_TELEMETRY_PCT },
		.cache_kb = CONF_STORAGE_PAGE_CACHE_KB, .checkpoint_pages = CONF_STORAGE_CHECKPOINT_PAGES,
		.sqlite_heap = (size_t)CONF_STORAGE_DB_HEAP_MB << 20,
		.engine = {
			.n_data = 1, .payload_max = HS_PAYLOAD_MAX,
			.max_record = STORE_REC_HDR + 255u + UINT16_MAX + CONF_MQTT_MAX_PACKET_BYTES,
			.out_bytes = CONF_STORAGE_HELD_ACKS * HS_OUT_PER_HELD + 8u * HS_PAYLOAD_MAX,
			.local_bytes = CONF_STORAGE_LINK_BACKLOG_BYTES,
			.batch_ms = CONF_STORAGE_BATCH_MS, .batch_ops = CONF_STORAGE_BATCH_OPS,
			.lag_commit_ms = CONF_STORAGE_LAG_COMMIT_MS,
			.tlog_flush_ms = CONF_STORAGE_TELEMETRY_FLUSH_MS, .tlog_flush_bytes = CONF_STORAGE_TELEMETRY_FLUSH_BYTES,
		},
		/* the telemetry log, when storage.telemetry_topics names anything to keep */
		.tlog = { .enabled = CONF_STORAGE_TELEMETRY_TOPICS_N > 0, .partitions = CONF_STORAGE_TELEMETRY_PARTITIONS,
			  .segment_bytes = CONF_STORAGE_TELEMETRY_SEGMENT_KB << 10,
			  .retention_s = (uint64_t)CONF_STORAGE_TELEMETRY_RETENTION_DAYS * 86400u,
			  .queries = CONF_STORAGE_TELEMETRY_QUERIES },
		.backup = { .interval_s = CONF_STORAGE_BACKUP_INTERVAL_S, .first_s = CONF_STORAGE_BACKUP_FIRST_S,
			    .step_pages = CONF_STORAGE_BACKUP_STEP_PAGES },
		.scrub_kb_per_s = CONF_STORAGE_SCRUB_KB_PER_S,
		.pass_budget_us = CONF_STORAGE_PASS_BUDGET_US,
		.revoked = st->serials, .n_revoked = (uint32_t)n_rev,
	};
	if (so->backup_interval_s) {
		sc.backup.first_s = so->backup_first_s;
		sc.backup.interval_s = so->backup_interval_s;
	}
	if (so->scrub_set)
		sc.scrub_kb_per_s = so->scrub_kb_per_s;
	const struct store_service_port port = {
		hst_alloc, hst_free, hst_now_ns, hst_wall_ms, hst_random, NULL, hst_log, hst_unusable, hst_send, hst_home, st,
	};
	int err = store_service_init(&st->svc, &sc, &port);
	if (err) {
		free(st);
		return err;
	}
	*out = st;
	return 0;
}

void hosted_store_link(struct hosted_store *st, struct node_broker_config *bc)
{
	bc->store_on = true;
	bc->store_send = hst_link_send;
	bc->store_ctx = st;
	bc->store_payload_max = HS_PAYLOAD_MAX;
}

void hosted_store_bind(struct hosted_store *st, struct dp *dp)
{
	st->dp = dp;
}

uint32_t hosted_store_poll(struct hosted_store *st)
{
	return store_service_poll(&st->svc);
}

uint64_t hosted_store_due_ms(const struct hosted_store *st)
{
	uint64_t ns = store_service_due_ns(&st->svc);
	return ns == UINT64_MAX ? UINT64_MAX : ns / 1000000u;
}

void hosted_store_stats(struct hosted_store *st, const char *tag)
{
	char line[320];
	if (store_service_line(&st->svc, line, sizeof line))
		printf("%s store %s\n", tag, line);
	if (store_service_tlog_line(&st->svc, line, sizeof line))
		printf("%s store %s\n", tag, line);
	if (store_service_scrub_line(&st->svc, line, sizeof line))
		printf("%s store %s\n", tag, line);
}

void hosted_store_finish(struct hosted_store *st)
{
	store_service_fini(&st->svc);
}

void hosted_store_destroy(struct hosted_store *st)
{
	if (!st)
		return;
	store_service_fini(&st->svc);
	free(st);
}
