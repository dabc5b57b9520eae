/* SPDX-License-Identifier: MIT
 *
 * The telemetry query over MQTT (docs/TELEMETRY.md): a service identity named in
 * storage.telemetry_readers publishes a query to MQTT_TQUERY_TOPIC and receives the matching
 * records of the telemetry log as QoS 0 PUBLISHes on MQTT_TQUERY_REPLY<request id>, sent to
 * its connection only, then one end message. This file is the text side: parsing a query
 * (external input: bounds-checked, fuzzed) and formatting a record or the end as one JSON
 * object. Pure functions; no state, no allocation.
 *
 * A query's payload is lines of key=value (LF or CRLF), each key at most once:
 *   id=R          required: the request id, 1..32 of [A-Za-z0-9_-] (the reply topic's last level)
 *   since=T       records received at or after T (Unix milliseconds); default: the oldest
 *   until=T       records received at or before T; default: now
 *   identity=ID   one publisher's identity (1..255 bytes); default: every publisher
 *   topic=F       a topic filter (1..255 bytes, valid); default: every topic
 *   limit=N       at most N records (1..limit_max); default: limit_max
 */
#ifndef MQTT_TQUERY_H
#define MQTT_TQUERY_H

#include "lib/compiler.h"

#define MQTT_TQUERY_TOPIC "$telemetry/query"
#define MQTT_TQUERY_REPLY "$telemetry/reply/"
#define MQTT_TQUERY_REQ_MAX 32u
#define MQTT_TQUERY_TOPIC_MAX 255u
#define MQTT_TQUERY_PAYLOAD_MAX 1024u

struct mqtt_tquery {
	int64_t since_ms, until_ms;        /* 0: open */
	uint32_t limit;
	uint8_t identity[255];
	uint8_t identity_len;              /* 0: any */
	uint8_t topic[MQTT_TQUERY_TOPIC_MAX];
	uint8_t topic_len;                 /* 0: any */
	char req[MQTT_TQUERY_REQ_MAX + 1]; /* NUL-terminated */
	uint8_t req_len;
};

/* Parse a query payload (borrowed). 0 and *q, or -E_INVAL with *why a static reason
 * ("unknown key", "id missing", ...). limit_max: the configured maximum (>= 1). */
MUST_CHECK int mqtt_tquery_parse(const uint8_t *p, size_t len, uint32_t limit_max, struct mqtt_tquery *q /* out */,
				 const char **why /* out */);

/* One record of the log, as the reply carries it (pointers borrowed). */
struct mqtt_trow {
	int64_t wall_ms;
	uint8_t qos, id_kind;
	const uint8_t *id;
	uint8_t id_len;
	const uint8_t *topic;
	uint16_t topic_len;
	const uint8_t *payload;
	uint32_t payload_len;
};
/* The JSON object of a record: {"time_ms":..,"identity":"..","kind":"device|service",
 * "topic":"..","qos":N,"payload":".."} (text that is UTF-8 without control characters) or
 * with "payload_b64" instead. Bytes written, or 0 when cap is too small. */
size_t mqtt_tquery_row_json(const struct mqtt_trow *r, uint8_t *out, size_t cap);
/* Bytes the row's JSON needs at most (for sizing a buffer). */
size_t mqtt_tquery_row_json_max(const struct mqtt_trow *r);

#endif
