/* SPDX-License-Identifier: MIT
 *
 * The broker's heap accounting and refcounted message blocks (see msg.h). Every variable
 * size the broker keeps (messages, identities, level strings, held SUBACKs, reassembly
 * buffers) goes through mqtt_heap_alloc, so the limit is one number. Must never call up
 * into the broker, sessions or topic tree, and never assert on exhaustion: a refused
 * allocation returns NULL and is counted.
 *
 * Invariants: 1. heap_used never exceeds cfg.heap_limit (broker invariant 5, checked by
 * mqtt_broker_check); 2. heap_used is the sum of the sizes of the live blocks, so a broker
 * torn down by mqtt_broker_fini leaves it 0; 3. a message lives while refs > 0, and its
 * block is sizeof(struct mqtt_msg) + topic_len + props_len + payload_len bytes.
 */
#include "mqtt/msg.h"

#include "lib/mem.h"
#include "mqtt/mqtt_int.h"

void *mqtt_heap_alloc(struct mqtt_broker *b, size_t n)
{
	if (n > b->cfg.heap_limit - b->heap_used) {
		b->st.nomem++;
		return NULL;
	}
	void *p = b->ops.heap.alloc(b->ops.heap.ctx, n);
	if (!p) {
		b->st.nomem++;
		return NULL;
	}
	b->heap_used += n;
	return p;
}

void mqtt_heap_free(struct mqtt_broker *b, void *p, size_t n)
{
	b->heap_used -= n;
	b->ops.heap.free(b->ops.heap.ctx, p, n);
}

static void *accounted_alloc(void *ctx, size_t n)
{
	return mqtt_heap_alloc(ctx, n);
}

static void accounted_free(void *ctx, void *p, size_t n)
{
	mqtt_heap_free(ctx, p, n);
}

struct mqtt_alloc mqtt_heap_ops(struct mqtt_broker *b)
{
	return (struct mqtt_alloc){ .alloc = accounted_alloc, .free = accounted_free, .ctx = b };
}

struct mqtt_msg *mqtt_msg_new(struct mqtt_broker *b, const struct mqtt_message *in, uint32_t now_s)
{
	size_t tlen = in->topic_len, xlen = in->props_len, plen = in->payload_len;
	if (tlen > UINT16_MAX || xlen > MQTT_PROPS_MAX || plen > UINT32_MAX - sizeof(struct mqtt_msg) - tlen - xlen)
		return NULL;
	struct mqtt_msg *m = mqtt_heap_alloc(b, sizeof *m + tlen + xlen + plen);
	if (!m)
		return NULL;
	m->mkey = 0;
	m->refs = 1;
	m->topic_len = (uint16_t)tlen;
	m->props_len = (uint16_t)xlen;
	m->payload_len = (uint32_t)plen;
	m->qos = in->qos;
	m->retain = 0;
	m->expire_s = in->expiry_s ? now_s + in->expiry_s : 0;
	if (in->expiry_s && !m->expire_s)
		m->expire_s = 1; /* 0 means never */
	memcpy(m->data, in->topic, tlen);
	if (xlen)
		memcpy(m->data + tlen, in->props, xlen);
	if (plen)
		memcpy(m->data + tlen + xlen, in->payload, plen);
	return m;
}

uint32_t mqtt_msg_expiry_left(const struct mqtt_msg *m, uint32_t now_s)
{
	if (!m->expire_s)
		return 0;
	int32_t left = (int32_t)(m->expire_s - now_s);
	return left > 0 ? (uint32_t)left : 1u;
}

void mqtt_msg_unref(struct mqtt_broker *b, struct mqtt_msg *m)
{
	if (--m->refs == 0)
		mqtt_heap_free(b, m, sizeof *m + m->topic_len + m->props_len + m->payload_len);
}
