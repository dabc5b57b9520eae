/* SPDX-License-Identifier: MIT
 *
 * Private to mqtt/: per-identity rate limits (rate.c; ADR-020, broker.h rate_*). One token
 * bucket per authenticated identity, shared by all its connections and kept after they
 * leave, in the table the broker lays out (max_conns + rate_idle_ids entries) with a keyed
 * identity hash. Core-local; allocates nothing.
 */
#ifndef MQTT_RATE_H
#define MQTT_RATE_H

#include "lib/compiler.h"

struct mqtt_broker;
struct mqtt_broker_config;

/* A per-identity token bucket. Entries [0, rate_hw) are in use: an entry is never freed,
 * only recycled in place by eviction, which takes only entries no connection references
 * (refs == 0) and whose buckets are full for their kind, i.e. equal to a fresh one. A
 * bucket is a device's or a service's (its kind is part of the identity) and refills at
 * that kind's rates (broker.h rate_* and service_rate_*). */
struct mqtt_rate {
	uint64_t key;      /* siphash of (kind, identity); same-kind collisions share a bucket */
	uint64_t ms;       /* clock of the last refill */
	uint32_t msgs;     /* milli-messages */
	uint32_t bytes;
	uint32_t hash_next;
	uint32_t refs : 31;   /* UP connections of this identity (<= max_conns < MQTT_RATE_REFS_MAX) */
	uint32_t service : 1; /* a service identity's bucket: service_rate_* limits it */
};

#define MQTT_RATE_REFS_MAX 0x7fffffffu /* refs:31 */

STATIC_ASSERT(sizeof(struct mqtt_rate) == 32, "rate bucket is 32 bytes");

/* Are limits configured (a message or byte rate, for devices or services)? Only then does
 * the table exist; a kind with neither rate gets buckets that never refuse. */
bool mqtt_rate_on(const struct mqtt_broker_config *g);
/* The bucket of this identity of this kind (id borrowed; a device and a service of the
 * same name never share one), a reference taken: its index, or MQTT_NIL when the table is
 * full of buckets in use or still refilling (counted). */
uint32_t mqtt_rate_acquire(struct mqtt_broker *b, bool service, const uint8_t *id, size_t len);
/* Give back a reference of mqtt_rate_acquire (MQTT_NIL: none). The bucket stays, so a
 * reconnect finds its debt. */
void mqtt_rate_release(struct mqtt_broker *b, uint32_t i);
/* Refill bucket i to now_ms, then take one message and `bytes` from it if both are there:
 * true, or false (nothing taken) when over the limit. */
bool mqtt_rate_take(struct mqtt_broker *b, uint32_t i, size_t bytes, uint64_t now_ms);
/* Broker invariant 6 (mqtt_broker_check): 0 or -E_CORRUPT. */
int mqtt_rate_check(const struct mqtt_broker *b);

#endif
