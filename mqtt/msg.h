/* SPDX-License-Identifier: MIT
 *
 * Private to mqtt/: the broker's heap accounting and its refcounted message blocks
 * (msg.c). The lowest layer of the broker: everything above (broker, sessions, topic tree,
 * durability) takes memory through here; nothing here calls up.
 */
#ifndef MQTT_MSG_H
#define MQTT_MSG_H

#include "lib/compiler.h"
#include "mqtt/codec.h"

struct mqtt_broker;
struct mqtt_message;

/* A message shared by every delivery and retained slot that references it. Heap block
 * of sizeof + topic_len + props_len + payload_len; freed when refs drops to 0. */
struct mqtt_msg {
	uint64_t mkey;  /* storage: the key its deliveries name, 0 while none is stored */
	uint32_t refs;
	uint32_t payload_len;
	uint32_t expire_s; /* the broker's clock (seconds) when it expires; 0: never */
	uint16_t topic_len;
	uint16_t props_len; /* MQTT 5.0 properties (struct mqtt_message) */
	uint8_t qos;
	uint8_t retain;
	uint8_t data[]; /* topic, properties, payload */
};

static inline const uint8_t *mqtt_msg_props(const struct mqtt_msg *m)
{
	return m->data + m->topic_len;
}

static inline const uint8_t *mqtt_msg_payload(const struct mqtt_msg *m)
{
	return m->data + m->topic_len + m->props_len;
}

/* Has m expired at the broker's clock now_s (seconds)? */
static inline bool mqtt_msg_expired(const struct mqtt_msg *m, uint32_t now_s)
{
	return m->expire_s && (int32_t)(now_s - m->expire_s) >= 0;
}

/* n bytes through ops.heap, counted against cfg.heap_limit: returned owned (give back with
 * mqtt_heap_free and the same n), or NULL, counted in st.nomem. Never asserts. */
void *mqtt_heap_alloc(struct mqtt_broker *b, size_t n);
/* Give back a block of mqtt_heap_alloc (taken) with the size it was asked for. */
void mqtt_heap_free(struct mqtt_broker *b, void *p, size_t n);
/* The accounted heap as allocator ops (for the framers); ctx is b (linked). */
struct mqtt_alloc mqtt_heap_ops(struct mqtt_broker *b);

/* A message copying in's topic, properties and payload (borrowed; in->qos, its expiry
 * counted from the broker's clock now_s), refs 1, retain 0, no storage key: returned
 * owned (drop with mqtt_msg_unref), or NULL when the heap refuses or a size overflows
 * (a topic over 65535 bytes, properties over MQTT_PROPS_MAX). */
struct mqtt_msg *mqtt_msg_new(struct mqtt_broker *b, const struct mqtt_message *in, uint32_t now_s);
/* What is left of m's Message Expiry Interval at now_s: 0 when it never expires, at
 * least 1 while it has not expired. */
uint32_t mqtt_msg_expiry_left(const struct mqtt_msg *m, uint32_t now_s);
/* One more holder of m (a delivery, a retained slot, the restore map). */
static inline void mqtt_msg_ref(struct mqtt_msg *m)
{
	m->refs++;
}
/* Drop one reference; the last frees the block. */
void mqtt_msg_unref(struct mqtt_broker *b, struct mqtt_msg *m);

#endif
