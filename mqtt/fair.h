/* SPDX-License-Identifier: MIT
 *
 * Private to mqtt/: QoS 0 drops per publisher identity and the fair-share rule (fair.c;
 * ADR-075, broker.h drop_ids). A small table of cfg.drop_ids entries, carved by the broker
 * at init, each naming one publishing identity: its recent routed bytes (halved every
 * MQTT_FAIR_HALF_MS) and its QoS 0 PUBLISHes dropped per reason. Core-local; allocates
 * nothing; a lookup scans the table (it is small by configuration).
 */
#ifndef MQTT_FAIR_H
#define MQTT_FAIR_H

#include "lib/compiler.h"
#include "mqtt/broker.h"

struct mqtt_broker;

#define MQTT_FAIR_HALF_MS 250u /* recent bytes halve this often */

/* One publishing identity. sess is the session it publishes from while it has one
 * (MQTT_NIL once that session is freed: the entry keeps its counts and is found again by
 * key); key is the keyed hash of (kind, identity), 0 for a free entry. */
struct mqtt_fair {
	uint64_t key;
	uint32_t sess;
	uint32_t recent;                   /* bytes offered for routing, decayed */
	uint32_t dropped[MQTT_DROP__COUNT]; /* QoS 0 PUBLISHes dropped, per reason */
	uint8_t kind;                      /* enum mqtt_id_kind */
	uint8_t id_len;                    /* the identity's length (id holds its first bytes) */
	uint8_t id[MQTT_DROPPER_ID_MAX];
};

STATIC_ASSERT(sizeof(struct mqtt_fair) <= 64, "fair entry fits 64 bytes");

/* Session si offers `bytes` for routing now: decay, find or take its entry, add them.
 * Returns the entry, or MQTT_NIL when the table is off. */
uint32_t mqtt_fair_see(struct mqtt_broker *b, uint32_t si, size_t bytes);
/* Is entry e over its fair share: more recent bytes than the mean of the identities that
 * published recently, with at least two of them? (A lone publisher never is.) */
bool mqtt_fair_heavy(const struct mqtt_broker *b, uint32_t e);
/* Count one QoS 0 drop of reason r against session si's identity (table off: nothing). */
void mqtt_fair_drop(struct mqtt_broker *b, uint32_t si, enum mqtt_drop_reason r);
/* Session si is freed: its entry keeps its counts but no longer names it. */
void mqtt_fair_session_gone(struct mqtt_broker *b, uint32_t si);
/* Broker invariant 17 (mqtt_broker_check): 0 or -E_CORRUPT. */
int mqtt_fair_check(const struct mqtt_broker *b);

#endif
