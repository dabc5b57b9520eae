/* SPDX-License-Identifier: MIT
 * Fuzz target: mqtt/props. The input is decoded as a property block under every packet
 * kind. Checks: no crash or over-read (ASan, exact-size copy), a rejection names a site
 * and a reason code 0x81/0x82, every view and list lies inside the input, what decodes
 * fits its kind, re-encodes to exactly mqtt_props_len bytes, decodes again to an equal
 * view, and re-encodes to the same bytes (the encoding is canonical). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/props.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const uint8_t *p, size_t n, const uint8_t *buf, size_t len)
{
	if (n && (!p || p < buf || p + n > buf + len))
		abort();
}

static void check_views(const struct mqtt_props *p, const uint8_t *buf, size_t len)
{
	const struct mqtt_str *s[] = { &p->content_type, &p->response_topic, &p->correlation_data,
				       &p->assigned_client_id, &p->auth_method, &p->auth_data,
				       &p->response_info, &p->server_reference, &p->reason_string };
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
		inside(s[i]->p, s[i]->len, buf, len);
	inside(p->user.p, p->user.span, buf, len);
	inside(p->sub_ids.p, p->sub_ids.span, buf, len);
	if (p->user.len > p->user.span || p->sub_ids.len > p->sub_ids.span)
		abort();
	struct mqtt_props_list it = p->user;
	struct mqtt_str k, v;
	uint32_t n = 0;
	while (mqtt_props_user_next(&it, &k, &v)) {
		inside(k.p, k.len, buf, len);
		inside(v.p, v.len, buf, len);
		if (!mqtt_utf8_valid(k.p, k.len) || !mqtt_utf8_valid(v.p, v.len))
			abort();
		n++;
	}
	if (n != p->user.n)
		abort();
	it = p->sub_ids;
	uint32_t id;
	n = 0;
	while (mqtt_props_sub_id_next(&it, &id)) {
		if (id == 0 || id > 268435455u || (n == 0 && id != p->sub_id))
			abort();
		n++;
	}
	if (n != p->sub_ids.n)
		abort();
}

static void check_kind(const uint8_t *buf, size_t len, enum mqtt_props_pkt k)
{
	struct mqtt_props p, q;
	enum mqtt_props_rej rej;
	struct cur c = cur_make(buf, len);
	if (mqtt_props_decode(&c, k, &p, &rej) != 0) {
		enum mqtt_rc rc = mqtt_props_rej_rc(rej);
		if (rej == MQTT_PROPS_REJ_NONE || rej >= MQTT_PROPS_REJ__COUNT ||
		    (rc != MQTT_RC_MALFORMED_PACKET && rc != MQTT_RC_PROTOCOL_ERROR))
			abort();
		return;
	}
	if (!cur_ok(&c) || c.pos > len || !mqtt_props_fit(&p, k))
		abort();
	check_views(&p, buf, len);
	size_t n = mqtt_props_len(&p);
	if (n == 0 || n != c.pos) /* every property re-emitted at its own size */
		abort();
	uint8_t *e1 = malloc(n), *e2 = malloc(n);
	struct wcur w = wcur_make(e1, n);
	if (mqtt_props_write(&w, &p) != 0 || w.pos != n)
		abort();
	struct cur c2 = cur_make(e1, n);
	if (mqtt_props_decode(&c2, k, &q, &rej) != 0 || !cur_done(&c2))
		abort();
	if (!mqtt_props_equal(&p, &q) || !mqtt_props_equal(&q, &p))
		abort();
	check_views(&q, e1, n);
	w = wcur_make(e2, n);
	if (mqtt_props_write(&w, &q) != 0 || w.pos != n || memcmp(e1, e2, n) != 0)
		abort();
	/* one byte short: refused whole, nothing written */
	w = wcur_make(e2, n - 1);
	if (mqtt_props_write(&w, &q) != -E_OVERFLOW || w.pos != 0)
		abort();
	free(e1);
	free(e2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* exact-size copy so ASan sees any over-read */
	uint8_t *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	for (unsigned k = 0; k < MQTT_PROPS__COUNT; k++)
		check_kind(copy, size, (enum mqtt_props_pkt)k);
	free(copy);
	return 0;
}
