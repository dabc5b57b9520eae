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

/* A message shared by every delivery and retained slot that references it. Heap block
 * of sizeof + topic_len + payload_len; freed when refs drops to 0. */
struct mqtt_msg {
	uint64_t mkey;  /* storage: the key its deliveries name, 0 while none is stored */
	uint32_t refs;
	uint32_t payload_len;
	uint16_t topic_len;
	uint8_t qos;
	uint8_t retain;
	uint8_t data[]; /* topic, then payload */
};

/* n bytes through ops.heap, counted against cfg.heap_limit: returned owned (give back with
 * mqtt_heap_free and the same n), or NULL, counted in st.nomem. Never asserts. */
void *mqtt_heap_alloc(struct mqtt_broker *b, size_t n);
/* Give back a block of mqtt_heap_alloc (taken) with the size it was asked for. */
void mqtt_heap_free(struct mqtt_broker *b, void *p, size_t n);
/* The accounted heap as allocator ops (for the framers); ctx is b (linked). */
struct mqtt_alloc mqtt_heap_ops(struct mqtt_broker *b);

/* A message copying topic (tlen bytes) and payload (plen bytes; both borrowed), refs 1,
 * retain 0, no storage key: returned owned (drop with mqtt_msg_unref), or NULL when the
 * heap refuses or the size overflows. */
struct mqtt_msg *mqtt_msg_new(struct mqtt_broker *b, const uint8_t *topic, uint16_t tlen,
			      const uint8_t *payload, size_t plen, uint8_t qos);
/* One more holder of m (a delivery, a retained slot, the restore map). */
static inline void mqtt_msg_ref(struct mqtt_msg *m)
{
	m->refs++;
}
/* Drop one reference; the last frees the block. */
void mqtt_msg_unref(struct mqtt_broker *b, struct mqtt_msg *m);

#endif
