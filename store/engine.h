/* SPDX-License-Identifier: MIT
 *
 * The storage core's engine (store/ops.h is its protocol): it restores every data core's
 * persistent state at boot, then applies the records data cores send, in one transaction
 * per batch (storage.batch_ms or storage.batch_ops, whichever comes first), and answers
 * each barrier once what it covers is committed and flushed, or refused. It never answers
 * a barrier "stored" for a record it did not commit: a source whose records were lost
 * (a failed commit, a record the database refused) gets "not stored" for the barrier that
 * covers them. Commits slower than lag_commit_ms make it tell the data cores it lags
 * (they refuse new connections at the SYN and pause reads) until a commit is fast again.
 *
 * Runs on the storage core alone (with one core, from core 0's loop within a time budget
 * per pass: records then come through store_engine_local). Everything it sends waits, in
 * order, in a bounded queue per data core while the mesh has no credit. Lives in caller
 * memory; never allocates (the database has its own bounded heap).
 */
#ifndef STORE_ENGINE_H
#define STORE_ENGINE_H

#include "lib/compiler.h"
#include "store/db.h"
#include "store/ops.h"
#include "store/tlog.h"
#include "store/tlq.h"

#define STORE_ENGINE_MAX_DATA 64u

struct store_engine_config {
	uint32_t n_data;         /* data cores 0 .. n_data - 1 (<= STORE_ENGINE_MAX_DATA) */
	uint32_t payload_max;    /* bytes one mesh message carries */
	uint32_t max_record;     /* largest record either way */
	uint32_t out_bytes;      /* per data core: answers and restore records waiting */
	uint32_t local_bytes;    /* one core: records queued for the next pass (0: none) */
	uint32_t batch_ms, batch_ops, lag_commit_ms;
	/* Record bytes that close a database batch at once (0: no bound): a batch must fit the
	 * write-ahead log's region whatever storage.batch_ops says (store_boot_result.wal_frames:
	 * the service takes a quarter of it). */
	uint32_t batch_bytes;
	/* The telemetry log (store_engine_attach_tlog): a batch with telemetry records is also
	 * written out when they reach tlog_flush_bytes or are tlog_flush_ms old. */
	uint32_t tlog_flush_ms, tlog_flush_bytes;
};

struct store_engine_port {
	/* One message to data core dst: 0, or -E_AGAIN without mesh credit. */
	int (*send)(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len);
	uint64_t (*now_us)(void *ctx);     /* monotonic */
	int64_t (*wall_s)(void *ctx);      /* registry time stamps; 0 unknown */
	/* The data core a session lives on (its home core: dp/shard.h). */
	uint32_t (*home)(void *ctx, uint8_t id_kind, const uint8_t *id, size_t len);
	void (*log)(void *ctx, const char *line); /* may be NULL */
	int64_t (*wall_ms)(void *ctx);     /* Unix ms, 0 unknown; may be NULL (telemetry times 0) */
	void *ctx;                          /* linked */
};

enum store_engine_state { STORE_ENG_RESTORING, STORE_ENG_SERVING, STORE_ENG_FAILED };

#define STORE_ENGINE_LAT_BUCKETS 24 /* commit latency histogram: bucket i < 2^i us */

struct store_engine_stats {
	uint64_t records, barriers, commits, commit_failed, apply_failed, answered_ok, answered_fail;
	uint64_t restore_records, restore_us;
	uint64_t checkpoints, checkpoint_pages, checkpoint_us_max;
	uint64_t out_waited, bad_in, lost_answers;
	uint64_t commit_us_max, batch_ops_max;
	uint64_t tlog_records, tlog_dropped, tlog_ignored; /* appended; refused (lost); no log to take them */
	uint64_t lat[STORE_ENGINE_LAT_BUCKETS];
	uint64_t tlog_lat[STORE_ENGINE_LAT_BUCKETS]; /* commits that wrote telemetry out */
	bool lagging;
};

struct store_engine;

size_t store_engine_mem_size(const struct store_engine_config *cfg); /* 0 if invalid */
/* Build on an opened database (linked) of boot generation gen, and start the restore:
 * RESTORE_BEGIN (key base gen << 40) to every data core, then their records, then
 * RESTORE_END, paced by store_engine_poll. 0 or -E_INVAL. */
MUST_CHECK int store_engine_init(struct store_engine **out /* out */, void *mem, size_t len,
				 const struct store_engine_config *cfg, const struct store_engine_port *port,
				 struct store_db *db, uint64_t gen);
/* The telemetry log (opened, linked) and the device it is on (for a batch with telemetry
 * only, whose write-out needs its own FLUSH). Without one, telemetry records are counted
 * (tlog_ignored) and promise nothing. Before the first record. */
void store_engine_attach_tlog(struct store_engine *e, struct store_tlog *t, struct store_dev *dev);
/* Telemetry queries over the attached log: memory for `runs` at once, then attach (the log's
 * region's first block for the reads). Without them a query ends at once as failed. */
size_t store_engine_tlq_mem_size(const struct store_engine *e, uint32_t runs);
MUST_CHECK int store_engine_tlq_attach(struct store_engine *e, void *mem, size_t len, uint32_t runs,
				       uint64_t region_lba);
const struct store_tlq_stats *store_engine_tlq_stats(const struct store_engine *e); /* NULL: none */
/* A message from data core src (kinds 0x0300-0x037f; borrowed): applied now. */
void store_engine_input(struct store_engine *e, uint32_t src, uint16_t kind, const uint8_t *data,
			uint32_t len);
/* The same core's link (one core): queued for the next pass. 0 or -E_AGAIN (full). */
MUST_CHECK int store_engine_local(struct store_engine *e, uint16_t kind, const void *data, uint32_t len);
/* Restore steps, queued local records, the commit when due, a checkpoint when the WAL
 * is long and nothing waits, answers out. budget_us bounds the pass's own work (a commit
 * once started runs to its end). Returns what it did (> 0: call again soon). */
uint32_t store_engine_poll(struct store_engine *e, uint64_t budget_us);
/* A clean stop: the queued local records and the open batch are committed now and the
 * answers sent (what finds no credit stays queued). */
void store_engine_finish(struct store_engine *e);
/* When the next pass has work (monotonic us): 0 now, UINT64_MAX not before new input
 * (for a platform whose loop sleeps until a deadline). */
uint64_t store_engine_due_us(const struct store_engine *e);
enum store_engine_state store_engine_state(const struct store_engine *e);
/* A batch (a transaction or telemetry) is open: the database is being written. */
bool store_engine_busy(const struct store_engine *e);
const struct store_engine_stats *store_engine_stats(const struct store_engine *e);
/* p-th percentile (0..100) of commit latency in microseconds (bucket upper bound). */
uint64_t store_engine_commit_us(const struct store_engine *e, uint32_t p);
/* The same for the commits that wrote telemetry out (its flush latency). */
uint64_t store_engine_tlog_us(const struct store_engine *e, uint32_t p);
MUST_CHECK int store_engine_check(const struct store_engine *e);

#endif
