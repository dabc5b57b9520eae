/* SPDX-License-Identifier: MIT
 * Fuzz target: mqtt/codec5. The input is decoded as one MQTT 5.0 packet a client sent.
 * Checks: no crash or over-read (ASan, exact-size copy); a rejection names a site and a
 * reason code a CONNACK/DISCONNECT may carry; every view lies inside the packet; what
 * decodes is re-encoded by the client-side encoders into exactly the size they promise,
 * refused whole by a buffer one byte short, and decodes again to an equal view. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/codec5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const void *vp, size_t n, const uint8_t *pkt, size_t len)
{
	const uint8_t *p = vp;
	if (n && (!p || p < pkt || p + n > pkt + len))
		abort();
}

static void inside_str(const struct mqtt_str *s, const uint8_t *pkt, size_t len)
{
	inside(s->p, s->len, pkt, len);
}

static void check_props(const struct mqtt_props *p, const uint8_t *pkt, size_t len)
{
	inside_str(&p->content_type, pkt, len);
	inside_str(&p->response_topic, pkt, len);
	inside_str(&p->correlation_data, pkt, len);
	inside_str(&p->auth_method, pkt, len);
	inside_str(&p->auth_data, pkt, len);
	inside_str(&p->reason_string, pkt, len);
	inside_str(&p->server_reference, pkt, len);
	inside(p->user.p, p->user.span, pkt, len);
	inside(p->sub_ids.p, p->sub_ids.span, pkt, len);
}

/* Re-encode with the client encoders into a buffer of exactly `want` bytes (or as large
 * as needed when want is 0), check a buffer one byte short is refused whole. */
static uint8_t *reencode(const struct mqtt5_packet *pk, size_t *out_len)
{
	size_t cap = 64;
	const struct mqtt5_reason *r = &pk->u.reason;
	struct mqtt5_sub *subs = NULL;
	struct mqtt_str *fs = NULL;
	if (pk->type == MQTT_SUBSCRIBE || pk->type == MQTT_UNSUBSCRIBE) {
		struct mqtt5_filters it = pk->u.sub.filters;
		size_t n = pk->u.sub.filters.n;
		subs = calloc(n, sizeof *subs);
		fs = calloc(n, sizeof *fs);
		for (size_t i = 0; i < n; i++) {
			if (!mqtt5_filters_next(&it, &subs[i]))
				abort();
			fs[i] = subs[i].filter;
		}
		if (mqtt5_filters_next(&it, &subs[0]))
			abort();
	}
	for (;;) {
		uint8_t *buf = malloc(cap);
		struct wcur w = wcur_make(buf, cap);
		int rc;
		switch (pk->type) {
		case MQTT_CONNECT:
			rc = mqtt5_encode_connect(&w, &pk->u.connect);
			break;
		case MQTT_PUBLISH:
			rc = mqtt5_encode_publish(&w, &pk->u.publish);
			break;
		case MQTT_PUBACK:
		case MQTT_PUBREC:
		case MQTT_PUBREL:
		case MQTT_PUBCOMP:
			rc = mqtt5_encode_ack(&w, (enum mqtt_type)pk->type, pk->pid, r->reason,
					      &r->props);
			break;
		case MQTT_SUBSCRIBE:
			rc = mqtt5_encode_subscribe(&w, pk->pid, &pk->u.sub.props, subs,
						    pk->u.sub.filters.n);
			break;
		case MQTT_UNSUBSCRIBE:
			rc = mqtt5_encode_unsubscribe(&w, pk->pid, &pk->u.sub.props, fs,
						      pk->u.sub.filters.n);
			break;
		case MQTT_PINGREQ:
			rc = mqtt_encode_simple(&w, MQTT_PINGREQ);
			break;
		case MQTT_DISCONNECT:
			rc = mqtt5_encode_disconnect(&w, r->reason, &r->props);
			break;
		case MQTT5_AUTH:
			rc = mqtt5_encode_auth(&w, r->reason, &r->props);
			break;
		default:
			abort();
		}
		if (rc == 0) {
			/* exact size: one byte less must be refused with nothing written */
			uint8_t *small = malloc(w.pos);
			struct wcur s = wcur_make(small, w.pos - 1);
			int rc2 = -E_OVERFLOW;
			switch (pk->type) {
			case MQTT_CONNECT: rc2 = mqtt5_encode_connect(&s, &pk->u.connect); break;
			case MQTT_PUBLISH: rc2 = mqtt5_encode_publish(&s, &pk->u.publish); break;
			case MQTT_DISCONNECT: rc2 = mqtt5_encode_disconnect(&s, r->reason, &r->props); break;
			default: break;
			}
			if (rc2 != -E_OVERFLOW || s.pos != 0)
				abort();
			free(small);
			free(subs);
			free(fs);
			*out_len = w.pos;
			return buf;
		}
		free(buf);
		if (rc != -E_OVERFLOW || w.pos != 0 || cap > (1u << 26))
			abort(); /* a decoded view is always encodable */
		cap *= 4;
	}
}

static void check_packet(const uint8_t *pkt, size_t len)
{
	struct mqtt5_packet pk, pk2;
	struct mqtt5_rej_info rej;
	if (mqtt5_decode(pkt, len, &pk, &rej) != 0) {
		enum mqtt_rc rc = mqtt5_rej_rc(&rej);
		if (rej.site == MQTT5_REJ_NONE || rej.site >= MQTT5_REJ__COUNT)
			abort();
		if ((rej.site == MQTT5_REJ_PROPS || rej.site == MQTT5_REJ_WILL_PROPS) !=
		    (rej.props != MQTT_PROPS_REJ_NONE))
			abort();
		if (rc < 0x80 || (rc == MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION && rej.type != MQTT_CONNECT))
			abort();
		return;
	}
	switch (pk.type) {
	case MQTT_CONNECT: {
		const struct mqtt5_connect *k = &pk.u.connect;
		inside_str(&k->client_id, pkt, len);
		inside_str(&k->will_topic, pkt, len);
		inside_str(&k->will_payload, pkt, len);
		inside_str(&k->username, pkt, len);
		inside_str(&k->password, pkt, len);
		check_props(&k->props, pkt, len);
		check_props(&k->will_props, pkt, len);
		uint8_t level;
		if (mqtt5_connect_level(pkt, len, &level) != 0 || level != MQTT5_LEVEL)
			abort();
		break;
	}
	case MQTT_PUBLISH: {
		const struct mqtt5_publish *p = &pk.u.publish;
		inside_str(&p->topic, pkt, len);
		inside(p->payload, p->payload_len, pkt, len);
		check_props(&p->props, pkt, len);
		if (p->props.sub_ids.n || (!p->topic.len && !p->props.topic_alias))
			abort();
		break;
	}
	case MQTT_SUBSCRIBE:
	case MQTT_UNSUBSCRIBE: {
		struct mqtt5_filters it = pk.u.sub.filters;
		struct mqtt5_sub s;
		while (mqtt5_filters_next(&it, &s)) {
			inside_str(&s.filter, pkt, len);
			inside_str(&s.match, pkt, len);
			inside_str(&s.share, pkt, len);
			if (!mqtt_filter_valid(s.match.p, s.match.len) || s.qos > 2 ||
			    s.retain_handling > 2 || (s.share.len && s.no_local))
				abort();
		}
		check_props(&pk.u.sub.props, pkt, len);
		break;
	}
	default:
		check_props(&pk.u.reason.props, pkt, len);
		break;
	}
	size_t n;
	uint8_t *e = reencode(&pk, &n);
	if (pk.type == MQTT_PUBLISH && n != mqtt5_publish_size(&pk.u.publish))
		abort();
	if (mqtt5_decode(e, n, &pk2, &rej) != 0)
		abort();
	if (!mqtt5_packet_equal(&pk, &pk2) || !mqtt5_packet_equal(&pk2, &pk))
		abort();
	free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* exact-size copy so ASan sees any over-read */
	uint8_t *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	check_packet(copy, size);
	free(copy);
	return 0;
}
