/* SPDX-License-Identifier: MIT
 *
 * Private to dp/: the data plane's side of storage. It turns the broker's events into
 * storage records on the core's link (store/link.h), answers the broker's barriers, hands
 * the storage core's answers back to the broker (committed tickets), applies the state the
 * storage core restores at boot, and keeps the gate that opens the port once restore
 * ended. dp.c owns one in its memory when storage is on. Core-local; never allocates.
 */
#ifndef DP_DP_STORE_H
#define DP_DP_STORE_H

#include "dp/dp.h"

struct dp_store;

size_t dp_store_mem_size(const struct dp_store_config *cfg);
/* log: dp's line writer (may be NULL). broker: set by dp_store_bind. */
MUST_CHECK int dp_store_init(struct dp_store **out /* out */, void *mem, size_t len,
			     const struct dp_store_config *cfg,
			     void (*log)(void *ctx, const char *line, const struct log_fields *f), void *log_ctx);
/* The broker's store ops (ctx = st), valid before the broker exists. */
struct mqtt_store_ops dp_store_broker_ops(struct dp_store *st);
void dp_store_bind(struct dp_store *st, struct mqtt_broker *b);
/* The shard's barrier: storage answers origin's ticket after what is recorded here. */
int dp_store_barrier(struct dp_store *st, uint32_t origin, uint32_t ticket);
void dp_store_in(struct dp_store *st, uint16_t kind, const uint8_t *data, uint32_t len);
uint32_t dp_store_poll(struct dp_store *st);
bool dp_store_serving(const struct dp_store *st);
/* Stop reading from connections (and refuse SYNs): the link is congested or the storage
 * core lags, or acknowledgements are piling up. */
bool dp_store_congested(const struct dp_store *st);
uint32_t dp_store_backlog(const struct dp_store *st); /* bytes waiting for the storage core */
/* A run-time revocation (put) or its removal, for the database: 0, or the link's error. */
MUST_CHECK int dp_store_revocation(struct dp_store *st, bool put, bool identity, const uint8_t *id, size_t len);
/* An allowlist addition (put) or removal, for the database: 0, or the link's error. */
MUST_CHECK int dp_store_allowlist(struct dp_store *st, bool put, const uint8_t *id, size_t len);
void dp_store_counts(const struct dp_store *st, struct store_link_stats *link /* out */,
		     uint64_t *restored /* out */, uint64_t *refused /* out */);
MUST_CHECK int dp_store_check(const struct dp_store *st);

#endif
