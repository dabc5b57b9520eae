/* SPDX-License-Identifier: MIT
 *
 * Storage as a service of one core (store/): the storage core's whole job, for any
 * platform. Its first pass brings storage up (store/boot.h: recognise, format a blank
 * disk, create or check the database), starts the engine (store/engine.h: restore every
 * data core's sessions, then apply records in batches and answer barriers); when the disk
 * is missing or unusable it tells every data core to serve without persistence
 * (STORE_K_OFF) unless the platform stops first (storage.required). The platform gives a
 * small port (memory, clock, randomness, the messages to data cores) and calls
 * store_service_poll from the storage core's loop.
 *
 * The kernel's adapter is kernel/kstore.c, the hosted broker's hosted/store.c. Lives in
 * caller memory (the struct); the engine's and SQLite's memory come from the port.
 * Single core (the storage core); never from an interrupt handler.
 */
#ifndef STORE_SERVICE_H
#define STORE_SERVICE_H

#include "lib/compiler.h"
#include "store/backup.h"
#include "store/boot.h"
#include "store/dev.h"
#include "store/engine.h"
#include "store/scrub.h"
#include "store/tlog.h"

struct store_service_port {
	/* Memory for SQLite (8-byte aligned; the service bounds it by sqlite_heap) and, once,
	 * for the engine (large: store_engine_mem_size). free gets alloc's length. */
	void *(*alloc)(void *ctx, size_t len);
	void (*free)(void *ctx, void *p, size_t len);
	uint64_t (*now_ns)(void *ctx);
	int64_t (*wall_ms)(void *ctx);         /* Unix milliseconds, 0 unknown */
	void (*random)(void *ctx, void *buf, size_t len);
	void (*progress)(void *ctx);           /* long waits for the disk are alive (may be NULL) */
	void (*log)(void *ctx, const char *line);
	/* Storage cannot be used (what says why): return to serve without persistence (the
	 * service then tells every data core so), or stop the machine and never return. */
	void (*unusable)(void *ctx, const char *what);
	/* One message to data core dst: 0 or -E_AGAIN (no mesh credit). */
	int (*send)(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len);
	uint32_t (*home)(void *ctx, uint8_t id_kind, const uint8_t *id, size_t len);
	void *ctx;                             /* linked */
};

struct store_service_config {
	struct blk_dev *blk;        /* the data disk (linked), or NULL */
	const char *disk_name;      /* linked, for the console */
	uint8_t *bounce;            /* linked: DMA memory for the disk's I/O */
	size_t bounce_len;
	uint32_t io_timeout_ms;
	struct store_layout_config layout;
	uint32_t cache_kb, checkpoint_pages;
	size_t sqlite_heap;         /* bytes SQLite may hold */
	struct store_engine_config engine; /* n_data and payload_max from the platform */
	uint64_t pass_budget_us;    /* work per pass beyond a commit in progress */
	const struct store_serial *revoked; /* the image's serials (linked) */
	uint32_t n_revoked;
	/* The telemetry log on the TELEMETRY region (enabled false: none). partitions and
	 * segment_bytes apply to a region never used; flush times and sizes are in engine. */
	struct {
		bool enabled;
		uint32_t partitions; /* 0: one per data core (engine.n_data) */
		uint32_t segment_bytes;
		uint64_t retention_s; /* 0: by size only */
		uint32_t queries;    /* telemetry queries run at once (each holds a segment buffer) */
	} tlog;
	/* The A/B backup (store/backup.h): every interval_s (0: never), step_pages per step
	 * while no batch is open; the first one first_s after the service started. */
	struct {
		uint32_t interval_s, first_s, step_pages;
	} backup;
	uint32_t scrub_kb_per_s;    /* the scrubber's budget (store/scrub.h); 0: off */
};

enum store_service_state { STORE_SVC_IDLE, STORE_SVC_RUNNING, STORE_SVC_OFF };

struct store_service {
	struct store_service_config cfg;
	struct store_service_port port;
	enum store_service_state state;
	struct store_dev dev;
	struct store_db db;
	struct store_boot_result boot;
	struct store_engine *eng;
	void *eng_mem;
	size_t eng_len;
	struct store_tlog *tlog;    /* NULL: no telemetry log */
	void *tlog_mem, *tlog_io, *tlq_mem;
	size_t tlog_len, tlog_io_len, tlq_len;
	uint64_t tlog_lba;
	uint64_t bring_up_ms;
	struct store_backup backup;
	uint64_t next_backup_us, backup_started_us;
	struct store_scrub scrub;   /* on when scrub_on (storage.scrub_kb_per_s > 0) */
	bool scrub_on;
	bool grow_pending;          /* the device's capacity grew: store_boot_grow when idle */
	uint8_t scratch[STORE_LAYOUT_SCRATCH] ALIGNED(8);
	uint8_t io_buf[64 * 1024] ALIGNED(8);
};

/* What operators' health and statsd take from storage (the storage core's view). */
struct store_service_figures {
	uint64_t disk_errors;   /* device requests that failed, every kind, since boot */
	uint64_t commits, commit_failed;
	uint64_t commit_us_max; /* the slowest commit since boot */
	bool lagging;           /* the engine told the data cores it lags */
	bool failed;            /* storage is off after a failure, or the device is broken */
};
/* On the storage core. */
void store_service_figures(const struct store_service *s, struct store_service_figures *out /* out */);

/* Remember the configuration (both copied; linked pointers inside). No I/O. 0 or -E_INVAL. */
MUST_CHECK int store_service_init(struct store_service *s, const struct store_service_config *cfg,
				  const struct store_service_port *port);
/* The storage core's pass: the first brings storage up; later ones run the engine.
 * Returns > 0 when it did work. */
uint32_t store_service_poll(struct store_service *s);
/* When the next pass has work (the port's now_ns clock): 0 now, UINT64_MAX not before
 * new input. For a platform whose loop sleeps until a deadline. */
uint64_t store_service_due_ns(const struct store_service *s);
/* A message from data core src (kinds 0x0300-0x037f; borrowed). */
void store_service_input(struct store_service *s, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len);
/* One core: the data core's link (queued for the next pass). 0 or -E_AGAIN. */
MUST_CHECK int store_service_local(struct store_service *s, uint16_t kind, const void *data, uint32_t len);
/* One line of figures (NUL-terminated) for the periodic report; 0 chars when not running.
 * Reads the database's page count (storage core only). */
size_t store_service_line(struct store_service *s, char *out, size_t cap);
/* The telemetry log's line (0 chars without a log). */
size_t store_service_tlog_line(const struct store_service *s, char *out, size_t cap);
/* The platform saw the disk's capacity grow (storage core): the layout grows to it at the
 * next pass where no transaction is open, and the console says what it did. */
void store_service_disk_grew(struct store_service *s);
/* The scrubber's line (0 chars when it is off). */
size_t store_service_scrub_line(const struct store_service *s, char *out, size_t cap);
/* Close the database cleanly (tests and the hosted broker's exit). */
void store_service_fini(struct store_service *s);

#endif
