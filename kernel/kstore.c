/* SPDX-License-Identifier: MIT
 *
 * kernel/kstore.h: the kernel's port of store/service.h.
 * Design note. The service owns the states (bring-up, RUNNING, OFF); this file gives it
 * the kernel's memory (heap tag "store"; page runs for the engine's one large block), the
 * clocks, the CSPRNG, the console and the mesh, and turns "storage unusable" into a stop
 * when storage.required is true.
 *  Invariants: 1. only the storage core touches the service (and through it the engine,
 *  the database, the device and SQLite, built single-threaded); 2. the storage core starts
 *  the service only after kstore_go published the number of data cores (release/acquire).
 */
#include "kernel/kstore.h"

#include <stdatomic.h>

#include "dp/shard.h"
#include "kernel/csprng.h"
#include "kernel/heap.h"
#include "kernel/log.h"
#include "kernel/node/opsd.h"
#include "kernel/node/revoked.h"
#include "kernel/panic.h"
#include "lib/err.h"
#include "lib/mem.h"
#include "store/ops.h"
#include "store/service.h"
#include "urmqtt_config.h"

#define KS_BOUNCE_BYTES (128u * 1024u) /* DMA bounce buffer of the synchronous I/O */
#define KS_OUT_PER_HELD 16u            /* out-queue bytes per held acknowledgement (a DONE entry + room) */
#define KS_PAGES_ABOVE ((size_t)256 * 1024) /* blocks larger than this come as page runs */

static struct {
	struct kstore_config cfg;
	struct kloop *loop;
	struct store_service svc;
	uint8_t *bounce;      /* KS_BOUNCE_BYTES of DMA memory when there is a disk */
	struct node_revoked revoked;   /* the image's serials, which storage keeps */
	struct store_serial serials[NODE_MAX_REVOKED];
	uint64_t next_report_ms;
	bool inited, started;
	_Atomic bool go;      /* core 0's kstore_go: cfg.n_data is final */
} ks;

/* ---- the service's port ------------------------------------------------------------------ */

static void *ks_alloc(void *ctx, size_t len)
{
	(void)ctx;
	void *p = NULL;
	uint64_t pa;
	if (len > KS_PAGES_ABOVE)
		return kheap_pages_alloc((uint32_t)((len + HEAP_PAGE_SIZE - 1u) / HEAP_PAGE_SIZE), 1, &p, &pa) == 0 ? p
														    : NULL;
	return kheap_alloc(len, HEAP_TAG_STORE, &p) == 0 ? p : NULL;
}

static void ks_free(void *ctx, void *p, size_t len)
{
	(void)ctx;
	if (!p)
		return;
	if (len > KS_PAGES_ABOVE)
		kheap_pages_free(p, (uint32_t)((len + HEAP_PAGE_SIZE - 1u) / HEAP_PAGE_SIZE));
	else
		kheap_free(p);
}

static uint64_t ks_now_ns(void *ctx)
{
	(void)ctx;
	return ks.cfg.now_ns();
}

static int64_t ks_wall_ms(void *ctx)
{
	(void)ctx;
	return ks.cfg.wall_ms();
}

static void ks_alive(void *ctx)
{
	(void)ctx;
	if (ks.loop)
		kloop_progress(ks.loop);
}

static void ks_random(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	if (csprng_kernel_bytes(buf, len) != 0)
		PANIC("store: the CSPRNG failed");
}

static void ks_log(void *ctx, const char *line)
{
	(void)ctx;
	LOG_INFO("store", "%s", line);
}

static void ks_unusable(void *ctx, const char *what)
{
	(void)ctx;
	if (ks.cfg.required)
		PANIC("storage is required (storage.required) but unusable: %s", what);
}

static int ks_send(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len)
{
	(void)ctx;
	return ks.cfg.send(dst, kind, data, len);
}

static uint32_t ks_home(void *ctx, uint8_t id_kind, const uint8_t *id, size_t len)
{
	(void)ctx;
	return dp_shard_home_of(ks.cfg.home_key, ks.cfg.n_data, id_kind ? MQTT_ID_SERVICE : MQTT_ID_DEVICE, id, len);
}

static void ks_start(void)
{
	const struct store_service_config sc = {
		.blk = ks.cfg.blk, .disk_name = ks.cfg.disk_name,
		.bounce = ks.bounce, .bounce_len = ks.bounce ? KS_BOUNCE_BYTES : 0,
		.io_timeout_ms = CONF_STORAGE_IO_TIMEOUT_MS,
		.layout = { .esp_bytes = (uint64_t)CONF_STORAGE_ESP_MB << 20, .wal_bytes = (uint64_t)CONF_STORAGE_WAL_MB << 20,
			    .telemetry_pct = CONF_STORAGE_TELEMETRY_PCT },
		.cache_kb = CONF_STORAGE_PAGE_CACHE_KB, .checkpoint_pages = CONF_STORAGE_CHECKPOINT_PAGES,
		.sqlite_heap = (size_t)CONF_STORAGE_DB_HEAP_MB << 20,
		.engine = {
			.n_data = ks.cfg.n_data, .payload_max = ks.cfg.payload_max,
			.max_record = STORE_REC_HDR + 255u + UINT16_MAX + CONF_MQTT_MAX_PACKET_BYTES,
			.out_bytes = CONF_STORAGE_HELD_ACKS * KS_OUT_PER_HELD + 8u * ks.cfg.payload_max,
			.local_bytes = ks.cfg.dedicated ? 0 : CONF_STORAGE_LINK_BACKLOG_BYTES,
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
		/* a dedicated core has nothing else to do: a pass may run to a commit's end */
		.pass_budget_us = ks.cfg.dedicated ? 1000000u : CONF_STORAGE_PASS_BUDGET_US,
		.revoked = ks.serials, .n_revoked = (uint32_t)ks.revoked.set.list.n,
	};
	const struct store_service_port port = {
		ks_alloc, ks_free, ks_now_ns, ks_wall_ms, ks_random, ks_alive, ks_log, ks_unusable, ks_send, ks_home, NULL,
	};
	struct store_service_config c = sc;
	const struct kstore_knobs *k = &ks.cfg.knobs;
	if (k->backup_first_s)
		c.backup.first_s = k->backup_first_s;
	if (k->backup_interval_s)
		c.backup.interval_s = k->backup_interval_s;
	if (k->retention_s)
		c.tlog.retention_s = k->retention_s;
	if (k->checkpoint_pages)
		c.checkpoint_pages = k->checkpoint_pages;
	if (k->backup_first_s || k->backup_interval_s || k->retention_s || k->checkpoint_pages)
		LOG_WARN("store", "development knobs: first backup after %lu s, then every %lu s; telemetry kept %lu s; "
				  "checkpoint at %lu WAL pages",
			 (unsigned long)c.backup.first_s, (unsigned long)c.backup.interval_s,
			 (unsigned long)c.tlog.retention_s, (unsigned long)c.checkpoint_pages);
	if (store_service_init(&ks.svc, &c, &port) != 0)
		PANIC("store: bad service configuration");
	ks.started = true;
}

/* ---- the loop ---------------------------------------------------------------------------- */

static int ks_poll(void *ctx)
{
	(void)ctx;
	if (!ks.started) {
		/* acquire: pairs with kstore_go's release; cfg.n_data is then final */
		if (!atomic_load_explicit(&ks.go, memory_order_acquire))
			return 0;
		ks_start();
	}
	uint32_t work = store_service_poll(&ks.svc);
	uint64_t now_ms = ks.cfg.now_ns() / 1000000u;
	if (ks.cfg.report_ms && now_ms >= ks.next_report_ms) {
		ks.next_report_ms = now_ms + ks.cfg.report_ms;
		kstore_report();
	}
	return work ? 1 : 0;
}

void kstore_go(uint32_t n_data)
{
	if (!ks.inited)
		return;
	ks.cfg.n_data = n_data ? n_data : 1;
	/* release: the storage core reads cfg.n_data after its acquire of `go` */
	atomic_store_explicit(&ks.go, true, memory_order_release);
}

void kstore_loop_add(struct kloop *l)
{
	if (!ks.inited)
		return;
	ks.loop = l;
	if (kloop_add(l, "store", ks_poll, NULL) != 0)
		PANIC("core %u: loop full", (unsigned)ks.cfg.core);
}

void kstore_input(uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len)
{
	if (ks.started)
		store_service_input(&ks.svc, src, kind, data, len);
}

int kstore_local(uint16_t kind, const void *data, uint32_t len)
{
	return ks.started ? store_service_local(&ks.svc, kind, data, len) : -E_AGAIN;
}

void kstore_disk_grew(void)
{
	if (ks.started)
		store_service_disk_grew(&ks.svc);
}

void kstore_figures(struct opsd_figures *f)
{
	if (!ks.started)
		return;
	struct store_service_figures sf;
	store_service_figures(&ks.svc, &sf);
	f->v[OPSD_F_DB_COMMITS] += sf.commits;
	f->v[OPSD_F_DB_COMMIT_FAILED] += sf.commit_failed;
	f->v[OPSD_F_DB_COMMIT_US_MAX] = MAX(f->v[OPSD_F_DB_COMMIT_US_MAX], sf.commit_us_max);
	f->v[OPSD_F_DISK_ERRORS] += sf.disk_errors;
	f->v[OPSD_F_STORE_FAILED] |= sf.failed ? 1u : 0u;
	f->v[OPSD_F_STORE_LAGGING] |= sf.lagging ? 1u : 0u;
}

void kstore_report(void)
{
	char line[320];
	if (ks.started && store_service_line(&ks.svc, line, sizeof line))
		LOG_INFO("store", "%s", line);
	if (ks.started && store_service_tlog_line(&ks.svc, line, sizeof line))
		LOG_INFO("store", "%s", line);
	if (ks.started && store_service_scrub_line(&ks.svc, line, sizeof line))
		LOG_INFO("store", "%s", line);
}

int kstore_init(const struct kstore_config *cfg)
{
	if (!cfg->send || !cfg->now_ns || !cfg->wall_ms || !cfg->n_data || cfg->n_data > STORE_ENGINE_MAX_DATA ||
	    cfg->payload_max < 64u)
		return -E_INVAL;
	memset(&ks.cfg, 0, sizeof ks.cfg);
	ks.cfg = *cfg;
	int err = node_revoked_image(&ks.revoked);
	if (err)
		return err;
	const struct tls_revoke_list *rl = &ks.revoked.set.list;
	for (size_t i = 0; i < rl->n; i++)
		ks.serials[i] = (struct store_serial){ rl->entries[i].serial, rl->entries[i].len };
	if (cfg->blk) {
		uint64_t pa;
		void *va;
		err = kheap_pages_alloc(KS_BOUNCE_BYTES / HEAP_PAGE_SIZE, 1, &va, &pa);
		if (err) {
			LOG_ERR("store", "no DMA memory for the disk's bounce buffer (%s)", err_name(err));
			return err;
		}
		ks.bounce = va;
	}
	ks.next_report_ms = cfg->report_ms ? cfg->now_ns() / 1000000u + cfg->report_ms : UINT64_MAX;
	ks.inited = true;
	return 0;
}
