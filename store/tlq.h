/* SPDX-License-Identifier: MIT
 *
 * Telemetry queries on the storage core (store/): a data core's query (STORE_K_TLQ) becomes
 * a run that walks the log's partitions (store/tlog_scan.h), keeps the records its filters
 * match (receive time, publisher identity, topic filter) up to its limit, and sends them
 * back in ROWS messages, one per credit the data core gives (STORE_K_TLQ_MORE after its
 * reader took the last one), then an END. So a replay is paced by the reader's connection
 * and never floods the mesh; each step reads at most one segment. Runs live in caller
 * memory (one segment buffer each), at most `runs` at once; a query beyond them ends at once
 * as failed. Storage core only.
 */
#ifndef STORE_TLQ_H
#define STORE_TLQ_H

#include "lib/compiler.h"
#include "store/ops.h"
#include "store/tlog_scan.h"

struct store_tlq_port {
	/* One message to data core dst (the engine's ordered output); 0 or -E_AGAIN. */
	int (*emit)(void *ctx, uint32_t dst, uint16_t kind, const void *data, uint32_t len);
	bool (*room)(void *ctx, uint32_t dst, uint32_t bytes); /* can dst take a message now? */
	int64_t (*wall_ms)(void *ctx);
	void *ctx;
};

struct store_tlq_stats {
	uint64_t started, refused, ended, rows, chunks, skipped_too_big, failed;
};

struct store_tlq_runner;
/* Memory for `runs` runs over a log of geometry g sending messages of payload_max bytes. */
size_t store_tlq_mem_size(const struct store_tlog_geom *g, uint32_t runs, uint32_t payload_max);
/* The log's device and region (linked). 0 or -E_INVAL. */
MUST_CHECK int store_tlq_init(struct store_tlq_runner **out /* out */, void *mem, size_t len,
			      const struct store_tlog_geom *g, uint32_t runs, uint32_t payload_max,
			      struct store_dev *dev, uint64_t region_lba, const struct store_tlq_port *port);
/* A message from data core src: STORE_K_TLQ, _MORE or _CANCEL. */
void store_tlq_input(struct store_tlq_runner *t, uint32_t src, uint16_t kind, const uint8_t *data, uint32_t len);
/* Advance every run by at most one message. Returns messages sent. */
uint32_t store_tlq_poll(struct store_tlq_runner *t);
const struct store_tlq_stats *store_tlq_stats(const struct store_tlq_runner *t);

#endif
