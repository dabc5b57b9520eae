/* SPDX-License-Identifier: MIT
 * Fuzz target: the telemetry query's external inputs — a reader's query payload
 * (mqtt_tquery_parse), the query and its rows as they cross the mesh (store_tlq_decode,
 * store_tlq_rows_next), and the JSON of a row (mqtt_tquery_row_json) built from whatever
 * parsed. Oracles: nothing reads outside its buffer (ASan); a parsed query keeps its
 * promises (request id of [A-Za-z0-9_-], a valid topic filter, 1 <= limit <= the maximum,
 * since <= until); a decoded query re-encodes to the same bytes; the rows walk only forward
 * and within the message; a row's JSON fits the bound mqtt_tquery_row_json_max gives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "mqtt/codec.h"
#include "mqtt/tquery.h"
#include "store/ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t json[8 * 65536 + 1024];

static void row_json(const uint8_t *p, size_t n)
{
	const struct mqtt_trow r = { .wall_ms = (int64_t)n * 1000, .qos = (uint8_t)(n % 3), .id_kind = (uint8_t)(n & 1),
				     .id = p, .id_len = (uint8_t)(n < 255 ? n : 255), .topic = p,
				     .topic_len = (uint16_t)(n < 65535 ? n : 65535), .payload = p,
				     .payload_len = (uint32_t)(n < 65536 ? n : 65536) };
	size_t max = mqtt_tquery_row_json_max(&r);
	if (max > sizeof json)
		return;
	size_t got = mqtt_tquery_row_json(&r, json, max);
	if (!got || got > max)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	switch (data[0] % 3u) {
	case 0: {
		struct mqtt_tquery q;
		const char *why;
		if (mqtt_tquery_parse(p, n, 1000, &q, &why) != 0)
			return 0;
		if (!q.req_len || q.req_len > MQTT_TQUERY_REQ_MAX || strlen(q.req) != q.req_len || q.limit < 1 ||
		    q.limit > 1000 || (q.topic_len && !mqtt_filter_valid(q.topic, q.topic_len)) ||
		    (q.since_ms && q.until_ms && q.since_ms > q.until_ms))
			abort();
		for (size_t i = 0; i < q.req_len; i++)
			if (!((q.req[i] >= 'a' && q.req[i] <= 'z') || (q.req[i] >= 'A' && q.req[i] <= 'Z') ||
			      (q.req[i] >= '0' && q.req[i] <= '9') || q.req[i] == '_' || q.req[i] == '-'))
				abort();
		break;
	}
	case 1: {
		struct store_tlq q;
		static uint8_t enc[STORE_TLQ_HDR + 512];
		if (store_tlq_decode(p, n, &q) != 0)
			return 0;
		size_t m = store_tlq_encode(&q, enc, sizeof enc);
		if (m != n || memcmp(enc, p, n) != 0)
			abort();
		break;
	}
	default: {
		size_t off = STORE_TLQ_ROWS_HDR, prev = off;
		struct store_rec r;
		while (store_tlq_rows_next(p, n, &off, &r) == 1) {
			if (off <= prev || off > n || r.kind != STORE_REC_TLOG)
				abort();
			prev = off;
		}
		row_json(p, n);
		break;
	}
	}
	return 0;
}
