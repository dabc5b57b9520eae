/* SPDX-License-Identifier: MIT
 *
 * mqtt/tquery.h. Parsing walks the payload once with an explicit index, line by line; every
 * read is within [0, len). Formatting writes through a bounded appender that stops (and
 * reports 0) when the output would overflow.
 */
#include "mqtt/tquery.h"

#include "lib/err.h"
#include "lib/mem.h"
#include "mqtt/codec.h"

/* ---- parsing ----------------------------------------------------------------------------- */

static bool key_is(const uint8_t *k, size_t kl, const char *want)
{
	size_t n = strlen(want);
	return kl == n && memcmp(k, want, n) == 0;
}

/* A decimal of at most 18 digits (no sign): 0 and *out, else -E_INVAL. */
static int dec(const uint8_t *v, size_t vl, uint64_t *out)
{
	if (!vl || vl > 18)
		return -E_INVAL;
	uint64_t n = 0;
	for (size_t i = 0; i < vl; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -E_INVAL;
		n = n * 10u + (uint64_t)(v[i] - '0');
	}
	*out = n;
	return 0;
}

static bool req_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int refuse(const char **why, const char *reason)
{
	*why = reason;
	return -E_INVAL;
}

int mqtt_tquery_parse(const uint8_t *p, size_t len, uint32_t limit_max, struct mqtt_tquery *q, const char **why)
{
	memset(q, 0, sizeof *q);
	*why = "";
	if (!limit_max)
		return refuse(why, "no limit configured");
	if (len > MQTT_TQUERY_PAYLOAD_MAX)
		return refuse(why, "query longer than 1024 bytes");
	q->limit = limit_max;
	uint32_t seen = 0; /* one bit per key */
	size_t i = 0;
	while (i < len) {
		size_t end = i;
		while (end < len && p[end] != '\n')
			end++;
		size_t line_end = end;
		if (line_end > i && p[line_end - 1] == '\r')
			line_end--;
		size_t eq = i;
		while (eq < line_end && p[eq] != '=')
			eq++;
		if (line_end > i) { /* empty lines are allowed */
			if (eq == line_end)
				return refuse(why, "a line without '='");
			const uint8_t *k = p + i, *v = p + eq + 1;
			size_t kl = eq - i, vl = line_end - eq - 1;
			uint64_t n;
			uint32_t bit;
			if (key_is(k, kl, "id")) {
				bit = 1;
				if (!vl || vl > MQTT_TQUERY_REQ_MAX)
					return refuse(why, "id: 1 to 32 characters");
				for (size_t j = 0; j < vl; j++)
					if (!req_char(v[j]))
						return refuse(why, "id: only letters, digits, '_' and '-'");
				memcpy(q->req, v, vl);
				q->req[vl] = 0;
				q->req_len = (uint8_t)vl;
			} else if (key_is(k, kl, "since") || key_is(k, kl, "until")) {
				bit = k[0] == 's' ? 2u : 4u;
				if (dec(v, vl, &n) != 0 || n > (uint64_t)INT64_MAX / 2)
					return refuse(why, "since/until: Unix milliseconds");
				*(bit == 2u ? &q->since_ms : &q->until_ms) = (int64_t)n;
			} else if (key_is(k, kl, "identity")) {
				bit = 8;
				if (!vl || vl > sizeof q->identity)
					return refuse(why, "identity: 1 to 255 bytes");
				memcpy(q->identity, v, vl);
				q->identity_len = (uint8_t)vl;
			} else if (key_is(k, kl, "topic")) {
				bit = 16;
				if (!vl || vl > MQTT_TQUERY_TOPIC_MAX || !mqtt_filter_valid(v, vl) || !mqtt_utf8_valid(v, vl))
					return refuse(why, "topic: a valid topic filter of 1 to 255 bytes");
				memcpy(q->topic, v, vl);
				q->topic_len = (uint8_t)vl;
			} else if (key_is(k, kl, "limit")) {
				bit = 32;
				if (dec(v, vl, &n) != 0 || n < 1 || n > limit_max)
					return refuse(why, "limit: 1 to the configured maximum");
				q->limit = (uint32_t)n;
			} else {
				return refuse(why, "unknown key");
			}
			if (seen & bit)
				return refuse(why, "a key given twice");
			seen |= bit;
		}
		i = end + 1;
	}
	if (!(seen & 1u))
		return refuse(why, "id missing");
	if (q->since_ms && q->until_ms && q->since_ms > q->until_ms)
		return refuse(why, "since after until");
	return 0;
}

/* ---- formatting --------------------------------------------------------------------------- */

struct out {
	uint8_t *p;
	size_t cap, n;
	bool over;
};

static void put(struct out *o, const void *s, size_t n)
{
	if (o->over || n > o->cap - o->n) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_dec(struct out *o, int64_t v)
{
	char b[24];
	size_t n = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		b[sizeof b - 1 - n++] = (char)('0' + u % 10u);
		u /= 10u;
	} while (u);
	if (v < 0)
		b[sizeof b - 1 - n++] = '-';
	put(o, b + sizeof b - n, n);
}

static void put_json_str(struct out *o, const uint8_t *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		uint8_t c = s[i];
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			put(o, e, 2);
		} else if (c < 0x20) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			put(o, e, 6);
		} else {
			put(o, &c, 1);
		}
	}
}

static void put_b64(struct out *o, const uint8_t *p, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0u) |
			     (i + 2 < n ? (uint32_t)p[i + 2] : 0u);
		char q[4] = { a[v >> 18 & 63], a[v >> 12 & 63], i + 1 < n ? a[v >> 6 & 63] : '=', i + 2 < n ? a[v & 63] : '=' };
		put(o, q, 4);
	}
}

static bool text(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
			return false;
	return mqtt_utf8_valid(p, n);
}

size_t mqtt_tquery_row_json_max(const struct mqtt_trow *r)
{
	/* every byte of identity and topic escaped as \u00XX (6), the payload as \u00XX or
	 * base64 (4 per 3), and the fixed text */
	return 128u + 6u * ((size_t)r->id_len + r->topic_len) + 6u * (size_t)r->payload_len;
}

size_t mqtt_tquery_row_json(const struct mqtt_trow *r, uint8_t *buf, size_t cap)
{
	struct out o = { buf, cap, 0, false };
	puts_(&o, "{\"time_ms\":");
	put_dec(&o, r->wall_ms);
	puts_(&o, ",\"identity\":\"");
	put_json_str(&o, r->id, r->id_len);
	puts_(&o, r->id_kind ? "\",\"kind\":\"service\",\"topic\":\"" : "\",\"kind\":\"device\",\"topic\":\"");
	put_json_str(&o, r->topic, r->topic_len);
	puts_(&o, "\",\"qos\":");
	put_dec(&o, r->qos);
	if (text(r->payload, r->payload_len)) {
		puts_(&o, ",\"payload\":\"");
		put_json_str(&o, r->payload, r->payload_len);
	} else {
		puts_(&o, ",\"payload_b64\":\"");
		put_b64(&o, r->payload, r->payload_len);
	}
	puts_(&o, "\"}");
	return o.over ? 0 : o.n;
}
