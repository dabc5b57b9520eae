/* SPDX-License-Identifier: MIT
 *
 * MQTT 3.1.1 wire codec for a server (layer mqtt/). Decodes every packet a client may
 * send from a borrowed buffer into views (pointers and lengths into that buffer, nothing
 * copied), encodes every packet a server sends straight into the caller's `struct wcur`,
 * and frames a byte stream into whole packets. It never allocates except through the
 * framer's allocator, never keeps a pointer to input after a call returns (views point
 * into the caller's buffer and live exactly as long as it), and never asserts on input:
 * every rejection names its site (enum mqtt_rej) so the caller can count it.
 * Normative statements enforced here are listed in docs/mqtt-conformance.md.
 */
#ifndef MQTT_CODEC_H
#define MQTT_CODEC_H

#include "lib/compiler.h"
#include "lib/cursor.h"

enum mqtt_type {
	MQTT_CONNECT = 1, MQTT_CONNACK = 2, MQTT_PUBLISH = 3, MQTT_PUBACK = 4, MQTT_PUBREC = 5,
	MQTT_PUBREL = 6, MQTT_PUBCOMP = 7, MQTT_SUBSCRIBE = 8, MQTT_SUBACK = 9,
	MQTT_UNSUBSCRIBE = 10, MQTT_UNSUBACK = 11, MQTT_PINGREQ = 12, MQTT_PINGRESP = 13,
	MQTT_DISCONNECT = 14,
};

/* CONNACK return codes (3.2.2.3). */
enum {
	MQTT_CONNACK_ACCEPTED = 0, MQTT_CONNACK_BAD_PROTOCOL = 1, MQTT_CONNACK_ID_REJECTED = 2,
	MQTT_CONNACK_UNAVAILABLE = 3, MQTT_CONNACK_BAD_AUTH = 4, MQTT_CONNACK_NOT_AUTHORIZED = 5,
};
#define MQTT_SUBACK_FAILURE 0x80u
#define MQTT_MAX_REMAINING 268435455u /* 4-byte variable length maximum */

/* Rejection sites: every distinct reason a decode fails. Stable (counters, logs). */
enum mqtt_rej {
	MQTT_REJ_NONE = 0,
	MQTT_REJ_RLEN,           /* remaining length: >4 bytes, non-minimal, or lies */
	MQTT_REJ_TYPE,           /* reserved type or a server-to-client type */
	MQTT_REJ_FLAGS,          /* reserved fixed-header flag bits wrong */
	MQTT_REJ_SHORT,          /* body shorter than its fields */
	MQTT_REJ_TRAILING,       /* bytes left after the last field */
	MQTT_REJ_UTF8,           /* ill-formed UTF-8, surrogate or U+0000 */
	MQTT_REJ_PROTO_NAME,     /* CONNECT protocol name is not "MQTT" */
	MQTT_REJ_PROTO_LEVEL,    /* CONNECT level != 4: answer CONNACK 0x01 then close */
	MQTT_REJ_CONNECT_FLAGS,  /* reserved bit, will flag consistency, password w/o user */
	MQTT_REJ_CLIENT_ID,      /* zero-length id with clean session 0: CONNACK 0x02 */
	MQTT_REJ_QOS,            /* QoS 3, or DUP set on QoS 0 */
	MQTT_REJ_TOPIC,          /* empty topic name or a wildcard in it */
	MQTT_REJ_FILTER,         /* filter syntax (# not last/alone, + not alone, empty) */
	MQTT_REJ_PID,            /* packet identifier zero */
	MQTT_REJ_EMPTY,          /* SUBSCRIBE/UNSUBSCRIBE without any filter */
	MQTT_REJ_SUB_QOS,        /* requested QoS byte with reserved bits or 3 */
	MQTT_REJ_TOO_BIG,        /* packet larger than the configured maximum */
	MQTT_REJ__COUNT
};

/* A borrowed view into the decoded buffer. */
struct mqtt_str {
	const uint8_t *p;
	uint16_t len;
};

struct mqtt_connect {
	struct mqtt_str client_id, will_topic, will_msg, username, password;
	uint16_t keepalive_s;
	uint8_t will_qos;
	bool clean, will, will_retain, has_username, has_password;
};

struct mqtt_publish {
	struct mqtt_str topic;
	const uint8_t *payload;
	size_t payload_len;
	uint16_t pid; /* 0 for QoS 0 */
	uint8_t qos;
	bool dup, retain;
};

/* SUBSCRIBE / UNSUBSCRIBE: the validated list, walked with mqtt_filters_next(). */
struct mqtt_filters {
	const uint8_t *p;
	size_t len;
	uint16_t n;
	bool with_qos; /* SUBSCRIBE: each filter is followed by a QoS byte */
};

struct mqtt_packet {
	uint8_t type;  /* enum mqtt_type */
	uint8_t flags; /* low nibble of the first byte */
	uint16_t pid;  /* PUBACK..PUBCOMP, SUBSCRIBE, UNSUBSCRIBE */
	union {
		struct mqtt_connect connect;
		struct mqtt_publish publish;
		struct mqtt_filters filters;
	} u;
};

/* Parse a fixed header at the start of buf. 0 with *hdr_len (2..5) and *rem_len, or
 * -E_NEED_MORE (header incomplete), or -E_PROTO (malformed; *rej set). */
MUST_CHECK int mqtt_fixed_header(const uint8_t *buf, size_t len, size_t *hdr_len /* out */,
				 uint32_t *rem_len /* out */, enum mqtt_rej *rej /* out */);

/* Decode one whole packet (fixed header included, len exactly its size) received by a
 * server. Views in *out borrow `buf`. 0, or -E_PROTO with *rej naming the site (for
 * MQTT_REJ_PROTO_LEVEL and MQTT_REJ_CLIENT_ID the caller answers CONNACK 0x01/0x02 then
 * closes; for anything else it closes). Pure: core-agnostic, no state. */
MUST_CHECK int mqtt_decode(const uint8_t *buf, size_t len, struct mqtt_packet *out /* out */,
			   enum mqtt_rej *rej /* out */);

/* Next filter of a list mqtt_decode validated; false at the end. *qos is 0 for UNSUBSCRIBE.
 * `it` is advanced in place (copy the view first to walk twice). */
bool mqtt_filters_next(struct mqtt_filters *it, struct mqtt_str *filter /* out */,
		       uint8_t *qos /* out */);

/* Wire primitives shared with the MQTT 5.0 codec (mqtt/codec5.c, mqtt/props.c): a
 * two-byte-length string as a view into the cursor's buffer (false when it runs short), and
 * a Variable Byte Integer's size and encoding (n at most MQTT_MAX_REMAINING). */
bool mqtt_get_str(struct cur *c, struct mqtt_str *s /* out */);
size_t mqtt_vbi_size(size_t n);
void mqtt_vbi_put(struct wcur *w, size_t n);

/* Validation helpers shared with the broker (and tests). */
bool mqtt_utf8_valid(const uint8_t *p, size_t len); /* no U+0000, no surrogates */
bool mqtt_topic_valid(const uint8_t *p, size_t len);  /* non-empty, no + or # */
bool mqtt_filter_valid(const uint8_t *p, size_t len); /* non-empty, wildcard placement */
/* Does the valid filter f match the valid topic t? '+' one level, '#' the rest (also the
 * parent level); a topic starting with '$' is not matched by a leading wildcard
 * [MQTT-4.7.2-1]. String form, no topic tree: ACL patterns and configured filter lists. */
bool mqtt_filter_match(const uint8_t *f, size_t flen, const uint8_t *t, size_t tlen);

/* Encoders: write one whole packet at w->pos. 0, or -E_OVERFLOW (w->err set, nothing
 * meaningful written) when the buffer is too small. Arguments are borrowed. */
MUST_CHECK int mqtt_encode_connack(struct wcur *w, bool session_present, uint8_t rc);
MUST_CHECK int mqtt_encode_publish(struct wcur *w, const uint8_t *topic, uint16_t topic_len,
				   const uint8_t *payload, size_t payload_len, uint8_t qos,
				   bool dup, bool retain, uint16_t pid);
/* PUBACK, PUBREC, PUBREL (flags 0x2 added), PUBCOMP, UNSUBACK. */
MUST_CHECK int mqtt_encode_ack(struct wcur *w, enum mqtt_type type, uint16_t pid);
MUST_CHECK int mqtt_encode_suback(struct wcur *w, uint16_t pid, const uint8_t *codes, size_t n);
MUST_CHECK int mqtt_encode_pingresp(struct wcur *w);
/* Size of a PUBLISH as mqtt_encode_publish would write it; 0 if not encodable. */
size_t mqtt_publish_size(uint16_t topic_len, size_t payload_len, uint8_t qos);

/* Client-side encoders (test drivers, load generator). */
struct mqtt_connect_args {
	const char *client_id, *will_topic, *username;
	const uint8_t *will_msg, *password;
	uint16_t will_msg_len, password_len, keepalive_s;
	uint8_t will_qos;
	bool clean, will_retain;
};
MUST_CHECK int mqtt_encode_connect(struct wcur *w, const struct mqtt_connect_args *a);
/* SUBSCRIBE (qos != NULL) or UNSUBSCRIBE (qos == NULL) with n filters. */
MUST_CHECK int mqtt_encode_subscribe(struct wcur *w, uint16_t pid, const char *const *filters,
				     const uint8_t *qos, size_t n);
MUST_CHECK int mqtt_encode_simple(struct wcur *w, enum mqtt_type type); /* PINGREQ, DISCONNECT */

/* ---- stream framer -------------------------------------------------------------------
 * Yields whole packets from arbitrary chunks. A packet wholly inside the current chunk is
 * returned in place (zero copy). Only a packet split across chunks is reassembled, into a
 * heap block taken from `alloc` (a 5-byte one while the fixed header itself is split, then
 * one of the packet's exact size) and given back when the packet has been consumed, so an
 * idle framer is one NULL pointer and holds no buffer.
 * Invariants: 1. r != NULL iff a split packet is in progress or was just returned (ready),
 * or the framer failed (r is then a static marker, never freed). 2. have <= need <=
 * max_packet once need is known; have < 5 while the header is incomplete (need == 0).
 * State: IDLE -(split header)-> HEADER -(header done)-> BODY -(complete)-> READY
 * -(next call)-> IDLE; any error -> FAILED (sticky until the framer is zeroed). */
struct mqtt_alloc {
	void *(*alloc)(void *ctx, size_t n);
	void (*free)(void *ctx, void *p, size_t n);
	void *ctx;
};

struct mqtt_reasm;

struct mqtt_framer {
	struct mqtt_reasm *r; /* returned owned by alloc while reassembling, else NULL */
};

/* Does the framer hold a reassembly buffer? */
bool mqtt_framer_busy(const struct mqtt_framer *f);

/* Next whole packet from `in` (advanced past what was consumed). 0 with *pkt and *pkt_len
 * (borrowed: valid until the next call on this framer or until `in`'s buffer goes), or
 * -E_NEED_MORE (all of `in` consumed), -E_PROTO (malformed header; *rej set), -E_RANGE
 * (packet larger than max_packet), -E_NOMEM (no reassembly buffer). Errors are sticky. */
MUST_CHECK int mqtt_framer_next(struct mqtt_framer *f, struct cur *in, uint32_t max_packet,
				const struct mqtt_alloc *a, const uint8_t **pkt /* out */,
				size_t *pkt_len /* out */, enum mqtt_rej *rej /* out */);
/* Give back any buffer; the framer is idle afterwards. */
void mqtt_framer_reset(struct mqtt_framer *f, const struct mqtt_alloc *a);

#endif
