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

#define STORE_ENGINE_MAX_DATA 64u

struct store_engine_config {
	uint32_t n_data;         /* data cores 0 .. n_data - 1 (<= STORE_ENGINE_MAX_DATA) */
	uint32_t payload_max;    /* bytes one mesh message carries */
	uint32_t max_record;     /* largest record either way */
	uint32_t out_bytes;      /* per data core: answers and restore records waiting */
	uint32_t local_bytes;    /* one core: records queued for the next pass (0: none) */
	uint32_t batch_ms, batch_ops, lag_commit_ms;
};

struct store_engine_port {
	/* One message to data core dst: 0, or -E_AGAIN without mesh credit. */
	int (*send)(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len);
	uint64_t (*now_us)(void *ctx);     /* monotonic */
	int64_t (*wall_s)(void *ctx);      /* registry time stamps; 0 unknown */
	/* The data core a session lives on (its home core: dp/shard.h). */
	uint32_t (*home)(void *ctx, uint8_t id_kind, const uint8_t *id, size_t len);
	void (*log)(void *ctx, const char *line); /* may be NULL */
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
	uint64_t lat[STORE_ENGINE_LAT_BUCKETS];
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
const struct store_engine_stats *store_engine_stats(const struct store_engine *e);
/* p-th percentile (0..100) of commit latency in microseconds (bucket upper bound). */
uint64_t store_engine_commit_us(const struct store_engine *e, uint32_t p);
MUST_CHECK int store_engine_check(const struct store_engine *e);

#endif
