/* SPDX-License-Identifier: MIT
 * Fuzz target: mqtt/codec. The input is decoded as one packet, then fed to the stream
 * framer in chunks whose sizes come from the first byte; every framed packet is decoded.
 * Checks: no crash or over-read (ASan), every view lies inside its packet, a decoded
 * PUBLISH re-encodes to the same bytes, and the framer holds no buffer once reset. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t g_live;
static void *f_alloc(void *ctx, size_t n)
{
	(void)ctx;
	g_live += n;
	return malloc(n);
}
static void f_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	g_live -= n;
	free(p);
}
static const struct mqtt_alloc ops = { f_alloc, f_free, NULL };

static void inside(const uint8_t *p, size_t n, const uint8_t *pkt, size_t len)
{
	if (n && (p < pkt || p + n > pkt + len))
		abort();
}

static void check_packet(const uint8_t *pkt, size_t len)
{
	struct mqtt_packet pk;
	enum mqtt_rej rej;
	if (mqtt_decode(pkt, len, &pk, &rej) != 0) {
		if (rej == MQTT_REJ_NONE || rej >= MQTT_REJ__COUNT)
			abort();
		return;
	}
	if (pk.type == MQTT_PUBLISH) {
		struct mqtt_publish *p = &pk.u.publish;
		inside(p->topic.p, p->topic.len, pkt, len);
		inside(p->payload, p->payload_len, pkt, len);
		size_t sz = mqtt_publish_size(p->topic.len, p->payload_len, p->qos);
		uint8_t *out = malloc(sz ? sz : 1);
		struct wcur w = wcur_make(out, sz);
		if (mqtt_encode_publish(&w, p->topic.p, p->topic.len, p->payload, p->payload_len,
					p->qos, p->dup, p->retain, p->pid) != 0)
			abort();
		/* lengths are minimal (others are rejected), so the bytes are the same */
		if (w.pos != len || memcmp(out, pkt, len) != 0)
			abort();
		free(out);
	} else if (pk.type == MQTT_SUBSCRIBE || pk.type == MQTT_UNSUBSCRIBE) {
		struct mqtt_filters it = pk.u.filters;
		struct mqtt_str s;
		uint8_t q;
		unsigned n = 0;
		while (mqtt_filters_next(&it, &s, &q)) {
			inside(s.p, s.len, pkt, len);
			if (!mqtt_filter_valid(s.p, s.len) || q > 2)
				abort();
			n++;
		}
		if (n != pk.u.filters.n)
			abort();
	} else if (pk.type == MQTT_CONNECT) {
		struct mqtt_connect *k = &pk.u.connect;
		inside(k->client_id.p, k->client_id.len, pkt, len);
		inside(k->will_msg.p, k->will_msg.len, pkt, len);
		inside(k->password.p, k->password.len, pkt, len);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t chunk = (size_t)(data[0] % 17) + 1;
	data++;
	size--;
	/* exact-size copy so ASan sees any over-read */
	uint8_t *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	check_packet(copy, size);
	struct mqtt_framer fr = { 0 };
	for (size_t off = 0; off < size; off += chunk) {
		struct cur in = cur_make(copy + off, MIN(chunk, size - off));
		const uint8_t *pkt;
		size_t len;
		enum mqtt_rej rej;
		int rc;
		while ((rc = mqtt_framer_next(&fr, &in, 4096, &ops, &pkt, &len, &rej)) == 0)
			check_packet(pkt, len);
		if (rc != -E_NEED_MORE)
			break;
	}
	mqtt_framer_reset(&fr, &ops);
	if (g_live != 0)
		abort();
	free(copy);
	return 0;
}
