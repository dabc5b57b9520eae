/* SPDX-License-Identifier: MIT
 *
 * MQTT 5.0 packet codec for a server (layer mqtt/, beside the 3.1.1 codec.h and the
 * property layer props.h). Decodes every packet a 5.0 client may send from one whole
 * packet into views (pointers into the caller's buffer, nothing copied, nothing
 * allocated), encodes every packet a 5.0 server sends into the caller's `struct wcur`,
 * and offers client-side encoders for tests and load generators. It keeps no state,
 * never keeps a pointer to input after a call returns (views live exactly as long as the
 * buffer), never asserts on input, and names every rejection: a site (enum mqtt5_rej)
 * and, through mqtt5_rej_rc(), the reason code the server answers with (in a CONNACK
 * for a CONNECT, in a DISCONNECT otherwise). Framing is the 3.1.1 framer's (the fixed
 * header did not change); rules that need the connection (Topic Alias above the
 * maximum, Session Expiry in DISCONNECT after 0 in CONNECT, Receive Maximum, AUTH order)
 * are the caller's. Specification: OASIS MQTT Version 5.0, chapter 3.
 */
#ifndef MQTT_CODEC5_H
#define MQTT_CODEC5_H

#include "lib/compiler.h"
#include "lib/cursor.h"
#include "mqtt/codec.h"
#include "mqtt/props.h"

#define MQTT5_AUTH 15u /* packet type 15, new in 5.0 (enum mqtt_type stops at 14) */
#define MQTT5_LEVEL 5u /* CONNECT protocol level of 5.0 */

/* Rejection sites of mqtt5_decode. Stable (counters, logs). The reason code of each is in
 * mqtt5_rej_rc(); (0x81) marks a Malformed Packet, (0x82) a Protocol Error. */
enum mqtt5_rej {
	MQTT5_REJ_NONE = 0,
	MQTT5_REJ_RLEN,          /* (0x81) remaining length >4 bytes, non-minimal, or lies */
	MQTT5_REJ_TYPE,          /* (0x81) reserved packet type 0 */
	MQTT5_REJ_DIRECTION,     /* (0x82) a type only a server sends (CONNACK, SUBACK, ...) */
	MQTT5_REJ_FLAGS,         /* (0x81) reserved fixed-header flags wrong [MQTT-2.1.3-1] */
	MQTT5_REJ_SHORT,         /* (0x81) body shorter than its fields */
	MQTT5_REJ_TRAILING,      /* (0x81) bytes left after the last field */
	MQTT5_REJ_UTF8,          /* (0x81) ill-formed UTF-8, surrogate or U+0000 [MQTT-1.5.4-1] */
	MQTT5_REJ_PROTO_NAME,    /* (0x84) CONNECT protocol name not "MQTT" [MQTT-3.1.2-1] */
	MQTT5_REJ_PROTO_LEVEL,   /* (0x84) CONNECT protocol level not 5 [MQTT-3.1.2-2] */
	MQTT5_REJ_CONNECT_FLAGS, /* (0x81) reserved bit, Will QoS 3, Will QoS/Retain w/o Will */
	MQTT5_REJ_PROPS,         /* (props) the packet's property block: see `props` */
	MQTT5_REJ_WILL_PROPS,    /* (props) CONNECT's Will Properties: see `props` */
	MQTT5_REJ_QOS,           /* (0x81) PUBLISH QoS 3 [MQTT-3.3.1-4], DUP on QoS 0 */
	MQTT5_REJ_TOPIC,         /* (0x82) topic name (PUBLISH, Will) with a wildcard, or an
				  * empty Will Topic [MQTT-3.3.2-2] */
	MQTT5_REJ_TOPIC_EMPTY,   /* (0x82) empty PUBLISH topic without a Topic Alias 3.3.2.1 */
	MQTT5_REJ_SUB_ID,        /* (0x82) client PUBLISH with a Subscription Identifier
				  * [MQTT-3.3.4-6] */
	MQTT5_REJ_PID,           /* (0x82) packet identifier zero [MQTT-2.2.1-3] */
	MQTT5_REJ_REASON,        /* (0x82) reason code not one this packet may carry */
	MQTT5_REJ_FILTER,        /* (0x82) topic filter syntax (wildcard placement, empty) */
	MQTT5_REJ_EMPTY,         /* (0x82) SUBSCRIBE/UNSUBSCRIBE without a filter
				  * [MQTT-3.8.3-2], [MQTT-3.10.3-2] */
	MQTT5_REJ_SUB_RESERVED,  /* (0x81) subscription options bits 6-7 set [MQTT-3.8.3-5] */
	MQTT5_REJ_SUB_QOS,       /* (0x82) subscription Maximum QoS 3 3.8.3.1 */
	MQTT5_REJ_RETAIN_HANDLING, /* (0x82) Retain Handling 3 3.8.3.1 */
	MQTT5_REJ_SHARE,         /* (0x82) $share/ filter: empty or wildcard/'/' ShareName,
				  * or no filter after it [MQTT-4.8.2-1], [MQTT-4.8.2-2] */
	MQTT5_REJ_SHARE_NO_LOCAL, /* (0x82) No Local on a shared subscription [MQTT-3.8.3-4] */
	MQTT5_REJ_AUTH_METHOD,   /* (0x82) AUTH continuing without Authentication Method
				  * 3.15.2.2.2 */
	MQTT5_REJ_TOO_MANY,      /* (0x81) more than 65535 filters in one packet */
	MQTT5_REJ__COUNT
};

/* Where and why mqtt5_decode refused a packet. */
struct mqtt5_rej_info {
	enum mqtt5_rej site;
	enum mqtt_props_rej props; /* for MQTT5_REJ_PROPS / _WILL_PROPS; else NONE */
	uint8_t type;              /* packet type (0 when the fixed header itself failed) */
};

/* The reason code the server answers a rejection with: in a CONNACK when info->type is
 * MQTT_CONNECT (0x84 lets a client of another version fall back; the server may also just
 * close [MQTT-3.1.2-2]), else in a DISCONNECT. Never MQTT_RC_SUCCESS for a real site. */
enum mqtt_rc mqtt5_rej_rc(const struct mqtt5_rej_info *info);

/* ---- views --------------------------------------------------------------------------
 * Every struct mqtt_str, list and payload pointer borrows the decoded packet. */

struct mqtt5_connect {
	struct mqtt_props props;      /* CONNECT properties */
	struct mqtt_props will_props; /* Will Properties; empty unless `will` */
	struct mqtt_str client_id;    /* may be empty: the server assigns one [MQTT-3.1.3-6] */
	struct mqtt_str will_topic, will_payload, username, password;
	uint16_t keepalive_s;
	uint8_t will_qos;
	bool clean_start, will, will_retain, has_username, has_password;
};

struct mqtt5_publish {
	struct mqtt_props props;
	struct mqtt_str topic; /* empty only with a Topic Alias in props */
	const uint8_t *payload;
	size_t payload_len;
	uint16_t pid; /* 0 for QoS 0 */
	uint8_t qos;
	bool dup, retain;
};

/* PUBACK, PUBREC, PUBREL, PUBCOMP (pid in struct mqtt5_packet); DISCONNECT; AUTH. */
struct mqtt5_reason {
	struct mqtt_props props;
	uint8_t reason; /* enum mqtt_rc; 0 when the packet omitted it */
};

/* Subscription options byte (3.8.3.1). */
#define MQTT5_SUB_QOS_MASK 0x03u
#define MQTT5_SUB_NO_LOCAL 0x04u
#define MQTT5_SUB_RAP 0x08u /* Retain As Published */
#define MQTT5_SUB_RH_SHIFT 4u
#define MQTT5_SUB_RH_MASK 0x30u
#define MQTT5_SUB_RESERVED 0xc0u

/* One entry of a SUBSCRIBE (or UNSUBSCRIBE: options all zero). */
struct mqtt5_sub {
	struct mqtt_str filter; /* as sent, "$share/<group>/" included */
	struct mqtt_str share;  /* ShareName; len 0 and p NULL when not shared */
	struct mqtt_str match;  /* the filter to match topics with: after the group when
				 * shared, else the same view as `filter` */
	uint8_t qos;             /* Maximum QoS 0..2 */
	uint8_t retain_handling; /* 0..2 */
	bool no_local, retain_as_published;
};

/* The validated filter list of a SUBSCRIBE or UNSUBSCRIBE, walked with
 * mqtt5_filters_next(). */
struct mqtt5_filters {
	const uint8_t *p;
	size_t len;
	uint16_t n;
	bool with_opts; /* SUBSCRIBE: each filter is followed by its options byte */
};

struct mqtt5_subscribe { /* SUBSCRIBE, UNSUBSCRIBE */
	struct mqtt_props props;
	struct mqtt5_filters filters;
};

struct mqtt5_packet {
	uint8_t type;  /* enum mqtt_type, or MQTT5_AUTH */
	uint8_t flags; /* low nibble of the first byte */
	uint16_t pid;  /* PUBLISH QoS>0, PUBACK..PUBCOMP, SUBSCRIBE, UNSUBSCRIBE; else 0 */
	union {
		struct mqtt5_connect connect;
		struct mqtt5_publish publish;
		struct mqtt5_reason reason; /* PUBACK..PUBCOMP, DISCONNECT, AUTH */
		struct mqtt5_subscribe sub;
	} u; /* PINGREQ: none */
};

/* Decode one whole packet (fixed header included, len exactly its size) a 5.0 client sent
 * to a server. Views in *out borrow `buf`. 0, or -E_PROTO with *rej filled (the caller
 * answers mqtt5_rej_rc(rej) and closes). out->type is set as soon as it is known, even on
 * failure. Pure: core-agnostic, no state, no allocation. */
MUST_CHECK int mqtt5_decode(const uint8_t *buf, size_t len, struct mqtt5_packet *out /* out */,
			    struct mqtt5_rej_info *rej /* out */);

/* The protocol level a CONNECT asks for, read without validating the rest, so the caller
 * can choose the codec (4: codec.h, 5: this one). 0 with *level, or -E_PROTO when `buf`
 * (borrowed, the whole packet) is no CONNECT with an "MQTT" or "MQIsdp" name. */
MUST_CHECK int mqtt5_connect_level(const uint8_t *buf, size_t len, uint8_t *level /* out */);

/* Next entry of a list mqtt5_decode validated; false at the end. `it` is advanced in place
 * (copy the list first to walk it twice); the views in *sub borrow the packet. */
bool mqtt5_filters_next(struct mqtt5_filters *it, struct mqtt5_sub *sub /* out */);

/* Split a valid filter into ShareName and the filter after it. 1 when it is a shared
 * subscription ("$share/" prefix) and well formed, 0 when it is not shared (*share empty,
 * *match = the whole filter), -1 when shared but malformed [MQTT-4.8.2-1..2]. */
MUST_CHECK int mqtt5_share_split(const uint8_t *p, uint16_t len,
				 struct mqtt_str *share /* out */, struct mqtt_str *match /* out */);

/* Options byte of a subscription entry. */
uint8_t mqtt5_sub_opts(const struct mqtt5_sub *s);

/* Same packet? Views compared by content (so a re-encoded packet equals its source), a
 * filter list entry by entry, properties with mqtt_props_equal. */
bool mqtt5_packet_equal(const struct mqtt5_packet *a, const struct mqtt5_packet *b);

/* ---- encoders -------------------------------------------------------------------------
 * Each writes one whole packet at w->pos: 0, -E_OVERFLOW (w->err set, nothing written)
 * when the buffer is too small, or -E_INVAL (nothing written, w untouched) when the
 * arguments cannot make a packet at all (QoS 3, a property not allowed in that packet, a
 * packet over the 268435455-byte remaining length). Every pointer argument is borrowed;
 * `props` may be NULL for an empty property block. The *_size() functions give the whole packet's size in bytes
 * as the encoder would write it (0 when it could not), so the caller can hold a packet to
 * the peer's Maximum Packet Size before writing it. */

/* CONNACK (3.2): Session Present, reason code, properties. */
MUST_CHECK int mqtt5_encode_connack(struct wcur *w, bool session_present, uint8_t reason,
				    const struct mqtt_props *props);
size_t mqtt5_connack_size(const struct mqtt_props *props);

/* PUBLISH (3.3), either direction: p->topic may be empty when p->props carries a Topic
 * Alias; p->props may hold the Subscription Identifiers of a server's PUBLISH (sub_ids or
 * sub_id_vals). pid is written only for QoS > 0. */
MUST_CHECK int mqtt5_encode_publish(struct wcur *w, const struct mqtt5_publish *p);
size_t mqtt5_publish_size(const struct mqtt5_publish *p);

/* PUBACK, PUBREC, PUBREL (flags 0x2 added), PUBCOMP (3.4-3.7), either direction, in the
 * shortest form the specification allows: remaining length 2 for reason 0 without
 * properties, 3 for another reason without properties. */
MUST_CHECK int mqtt5_encode_ack(struct wcur *w, enum mqtt_type type, uint16_t pid,
				uint8_t reason, const struct mqtt_props *props);
size_t mqtt5_ack_size(uint8_t reason, const struct mqtt_props *props);

/* SUBACK (3.9) and UNSUBACK (3.11): pid, properties, n reason codes (borrowed). */
MUST_CHECK int mqtt5_encode_suback(struct wcur *w, uint16_t pid, const struct mqtt_props *props,
				   const uint8_t *codes, size_t n);
MUST_CHECK int mqtt5_encode_unsuback(struct wcur *w, uint16_t pid,
				     const struct mqtt_props *props, const uint8_t *codes,
				     size_t n);
size_t mqtt5_suback_size(const struct mqtt_props *props, size_t n); /* either */

/* DISCONNECT (3.14), either direction: remaining length 0 for reason 0 without
 * properties, 1 for another reason without properties. */
MUST_CHECK int mqtt5_encode_disconnect(struct wcur *w, uint8_t reason,
				       const struct mqtt_props *props);
size_t mqtt5_disconnect_size(uint8_t reason, const struct mqtt_props *props);

/* AUTH (3.15), either direction: remaining length 0 for reason 0 without properties. */
MUST_CHECK int mqtt5_encode_auth(struct wcur *w, uint8_t reason, const struct mqtt_props *props);

/* PINGRESP and PINGREQ are 3.1.1's: mqtt_encode_pingresp(), mqtt_encode_simple(). */

/* ---- client-side encoders (tests, load generators) ------------------------------------ */

/* CONNECT v5 from a view: protocol name "MQTT", level 5, flags from the booleans (Will
 * Topic, Will Payload and Will Properties only when k->will; user name and password by
 * has_username/has_password, independently), keep alive, both property blocks. */
MUST_CHECK int mqtt5_encode_connect(struct wcur *w, const struct mqtt5_connect *k);
/* SUBSCRIBE v5: each entry's `filter` and options (share and match are ignored). */
MUST_CHECK int mqtt5_encode_subscribe(struct wcur *w, uint16_t pid,
				      const struct mqtt_props *props,
				      const struct mqtt5_sub *subs, size_t n);
/* UNSUBSCRIBE v5. */
MUST_CHECK int mqtt5_encode_unsubscribe(struct wcur *w, uint16_t pid,
					const struct mqtt_props *props,
					const struct mqtt_str *filters, size_t n);
/* PUBLISH, acks, DISCONNECT and AUTH from a client use the encoders above. */

#endif
