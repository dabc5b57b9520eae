/* SPDX-License-Identifier: MIT
 *
 * MQTT 5.0 properties and reason codes (layer mqtt/, beside codec.h). Owns the property
 * block of every packet (OASIS MQTT 5.0, 2.2.2): the 27 identifiers, their wire types and
 * the packets each may appear in, a decoder into a borrowed view and a deterministic
 * encoder. It never allocates, never copies property bytes on decode (every string,
 * binary value and list in struct mqtt_props points into the caller's buffer and lives
 * exactly as long as it), reads only through struct cur and never asserts on input: each
 * rejection names its site (enum mqtt_props_rej) and the reason code it answers with.
 * The packet decoder that calls it (the variable header and payload) is not here.
 */
#ifndef MQTT_PROPS_H
#define MQTT_PROPS_H

#include "lib/compiler.h"
#include "lib/cursor.h"
#include "mqtt/codec.h" /* struct mqtt_str, mqtt_utf8_valid */

/* Where a property block is: the packet types of 2.2.2.2, PUBACK..PUBCOMP sharing one set,
 * and the Will Properties of CONNECT's payload as a kind of their own. */
enum mqtt_props_pkt {
	MQTT_PROPS_CONNECT,
	MQTT_PROPS_WILL, /* Will Properties (3.1.3.2) */
	MQTT_PROPS_CONNACK,
	MQTT_PROPS_PUBLISH,
	MQTT_PROPS_PUBACK, /* PUBACK, PUBREC, PUBREL, PUBCOMP */
	MQTT_PROPS_SUBSCRIBE,
	MQTT_PROPS_SUBACK,
	MQTT_PROPS_UNSUBSCRIBE,
	MQTT_PROPS_UNSUBACK,
	MQTT_PROPS_DISCONNECT,
	MQTT_PROPS_AUTH,
	MQTT_PROPS__COUNT
};

#define MQTT_PK_CONNECT (1u << MQTT_PROPS_CONNECT)
#define MQTT_PK_WILL (1u << MQTT_PROPS_WILL)
#define MQTT_PK_CONNACK (1u << MQTT_PROPS_CONNACK)
#define MQTT_PK_PUBLISH (1u << MQTT_PROPS_PUBLISH)
#define MQTT_PK_PUBACK (1u << MQTT_PROPS_PUBACK)
#define MQTT_PK_SUBSCRIBE (1u << MQTT_PROPS_SUBSCRIBE)
#define MQTT_PK_SUBACK (1u << MQTT_PROPS_SUBACK)
#define MQTT_PK_UNSUBSCRIBE (1u << MQTT_PROPS_UNSUBSCRIBE)
#define MQTT_PK_UNSUBACK (1u << MQTT_PROPS_UNSUBACK)
#define MQTT_PK_DISCONNECT (1u << MQTT_PROPS_DISCONNECT)
#define MQTT_PK_AUTH (1u << MQTT_PROPS_AUTH)

/* Wire types (1.5). */
enum mqtt_prop_type {
	MQTT_PT_NONE = 0, /* not an identifier of MQTT 5.0 */
	MQTT_PT_BYTE,
	MQTT_PT_U16,    /* Two Byte Integer */
	MQTT_PT_U32,    /* Four Byte Integer */
	MQTT_PT_VARINT, /* Variable Byte Integer, minimal, at most 4 bytes */
	MQTT_PT_UTF8,   /* UTF-8 Encoded String */
	MQTT_PT_BINARY, /* Binary Data */
	MQTT_PT_PAIR,   /* UTF-8 String Pair */
};

/* The table of 2.2.2.2, one source for the enum below and props.c's lookup:
 * X(name, identifier, wire type, packets it may appear in). */
#define MQTT_PROPS_TABLE(X)                                                                    \
	X(PAYLOAD_FORMAT, 0x01, MQTT_PT_BYTE, MQTT_PK_PUBLISH | MQTT_PK_WILL)                  \
	X(MESSAGE_EXPIRY, 0x02, MQTT_PT_U32, MQTT_PK_PUBLISH | MQTT_PK_WILL)                   \
	X(CONTENT_TYPE, 0x03, MQTT_PT_UTF8, MQTT_PK_PUBLISH | MQTT_PK_WILL)                    \
	X(RESPONSE_TOPIC, 0x08, MQTT_PT_UTF8, MQTT_PK_PUBLISH | MQTT_PK_WILL)                  \
	X(CORRELATION_DATA, 0x09, MQTT_PT_BINARY, MQTT_PK_PUBLISH | MQTT_PK_WILL)              \
	X(SUB_ID, 0x0B, MQTT_PT_VARINT, MQTT_PK_PUBLISH | MQTT_PK_SUBSCRIBE)                   \
	X(SESSION_EXPIRY, 0x11, MQTT_PT_U32, MQTT_PK_CONNECT | MQTT_PK_CONNACK | MQTT_PK_DISCONNECT) \
	X(ASSIGNED_CLIENT_ID, 0x12, MQTT_PT_UTF8, MQTT_PK_CONNACK)                             \
	X(SERVER_KEEPALIVE, 0x13, MQTT_PT_U16, MQTT_PK_CONNACK)                                \
	X(AUTH_METHOD, 0x15, MQTT_PT_UTF8, MQTT_PK_CONNECT | MQTT_PK_CONNACK | MQTT_PK_AUTH)   \
	X(AUTH_DATA, 0x16, MQTT_PT_BINARY, MQTT_PK_CONNECT | MQTT_PK_CONNACK | MQTT_PK_AUTH)   \
	X(REQUEST_PROBLEM_INFO, 0x17, MQTT_PT_BYTE, MQTT_PK_CONNECT)                           \
	X(WILL_DELAY, 0x18, MQTT_PT_U32, MQTT_PK_WILL)                                         \
	X(REQUEST_RESPONSE_INFO, 0x19, MQTT_PT_BYTE, MQTT_PK_CONNECT)                          \
	X(RESPONSE_INFO, 0x1A, MQTT_PT_UTF8, MQTT_PK_CONNACK)                                  \
	X(SERVER_REFERENCE, 0x1C, MQTT_PT_UTF8, MQTT_PK_CONNACK | MQTT_PK_DISCONNECT)          \
	X(REASON_STRING, 0x1F, MQTT_PT_UTF8,                                                   \
	  MQTT_PK_CONNACK | MQTT_PK_PUBACK | MQTT_PK_SUBACK | MQTT_PK_UNSUBACK |               \
		  MQTT_PK_DISCONNECT | MQTT_PK_AUTH)                                           \
	X(RECEIVE_MAX, 0x21, MQTT_PT_U16, MQTT_PK_CONNECT | MQTT_PK_CONNACK)                   \
	X(TOPIC_ALIAS_MAX, 0x22, MQTT_PT_U16, MQTT_PK_CONNECT | MQTT_PK_CONNACK)               \
	X(TOPIC_ALIAS, 0x23, MQTT_PT_U16, MQTT_PK_PUBLISH)                                     \
	X(MAX_QOS, 0x24, MQTT_PT_BYTE, MQTT_PK_CONNACK)                                        \
	X(RETAIN_AVAILABLE, 0x25, MQTT_PT_BYTE, MQTT_PK_CONNACK)                               \
	X(USER, 0x26, MQTT_PT_PAIR,                                                            \
	  MQTT_PK_CONNECT | MQTT_PK_WILL | MQTT_PK_CONNACK | MQTT_PK_PUBLISH | MQTT_PK_PUBACK |  \
		  MQTT_PK_SUBSCRIBE | MQTT_PK_SUBACK | MQTT_PK_UNSUBSCRIBE | MQTT_PK_UNSUBACK |  \
		  MQTT_PK_DISCONNECT | MQTT_PK_AUTH)                                           \
	X(MAX_PACKET_SIZE, 0x27, MQTT_PT_U32, MQTT_PK_CONNECT | MQTT_PK_CONNACK)               \
	X(WILDCARD_SUB_AVAILABLE, 0x28, MQTT_PT_BYTE, MQTT_PK_CONNACK)                         \
	X(SUB_ID_AVAILABLE, 0x29, MQTT_PT_BYTE, MQTT_PK_CONNACK)                               \
	X(SHARED_SUB_AVAILABLE, 0x2A, MQTT_PT_BYTE, MQTT_PK_CONNACK)

#define MQTT_PROPS_ENUM_(name, id, type, pkts) MQTT_PROP_##name = id,
enum mqtt_prop_id { MQTT_PROPS_TABLE(MQTT_PROPS_ENUM_) };
#undef MQTT_PROPS_ENUM_
#define MQTT_PROP_ID_MAX 0x2A
#define MQTT_PROPS_N_IDS 27

/* Bit of struct mqtt_props.present for an identifier (all are below 64). */
#define MQTT_PROP_BIT(id) (UINT64_C(1) << (id))

/* Wire type of an identifier, MQTT_PT_NONE when MQTT 5.0 defines none. */
enum mqtt_prop_type mqtt_prop_type(uint8_t id);
/* May property `id` appear in a block of kind k? False for unknown identifiers. */
bool mqtt_prop_allowed(uint8_t id, enum mqtt_props_pkt k);

/* A property that may occur more than once (User Property; Subscription Identifier in a
 * PUBLISH), kept as the borrowed bytes it was decoded from. */
struct mqtt_props_list {
	const uint8_t *p; /* borrowed: identifier byte of the first one; NULL when n == 0 */
	size_t span;      /* bytes from p to the end of the last one (others may lie between) */
	size_t len;       /* bytes of these properties alone, identifiers included */
	uint32_t n;
};

/* A decoded property block. A singular property's field is meaningful only when its
 * MQTT_PROP_BIT is in `present`; strings and binary values borrow the packet. */
struct mqtt_props {
	uint64_t present;
	uint32_t message_expiry_s, session_expiry_s, will_delay_s, max_packet_size;
	uint32_t sub_id; /* the first Subscription Identifier (1..268435455) */
	uint16_t server_keepalive_s, receive_max, topic_alias_max, topic_alias;
	uint8_t payload_format, request_problem_info, request_response_info, max_qos;
	uint8_t retain_available, wildcard_sub_available, sub_id_available, shared_sub_available;
	struct mqtt_str content_type, response_topic, correlation_data, assigned_client_id;
	struct mqtt_str auth_method, auth_data, response_info, server_reference, reason_string;
	struct mqtt_props_list user;    /* User Properties, in packet order */
	struct mqtt_props_list sub_ids; /* Subscription Identifiers, in packet order */
	/* Encoder only: when sub_ids.p is NULL, the sub_ids.n identifiers to write (borrowed;
	 * the server's own, one per matching subscription). The decoder leaves it NULL. */
	const uint32_t *sub_id_vals;
};

/* Rejection sites of mqtt_props_decode. Stable (counters, logs). Beside enum mqtt_rej
 * rather than inside it: codec.h stays the 3.1.1 codec's. */
enum mqtt_props_rej {
	MQTT_PROPS_REJ_NONE = 0,
	MQTT_PROPS_REJ_LEN,       /* 0x81: property length not a minimal <=4-byte varint, or
				   * longer than the bytes left [MQTT-1.5.5-1], 2.2.2.1 */
	MQTT_PROPS_REJ_ID,        /* 0x81: identifier MQTT 5.0 does not define, 2.2.2.2 */
	MQTT_PROPS_REJ_PACKET,    /* 0x81: identifier not valid for this packet, 2.2.2.2 */
	MQTT_PROPS_REJ_SHORT,     /* 0x81: value runs past the property length */
	MQTT_PROPS_REJ_VARINT,    /* 0x81: Subscription Identifier not a minimal varint */
	MQTT_PROPS_REJ_UTF8,      /* 0x81: ill-formed UTF-8, surrogate or U+0000, 1.5.4 */
	MQTT_PROPS_REJ_DUP,       /* 0x82: a property the packet may hold once, repeated */
	MQTT_PROPS_REJ_ZERO,      /* 0x82: 0 where forbidden: Subscription Identifier,
				   * Receive Maximum, Maximum Packet Size, Topic Alias */
	MQTT_PROPS_REJ_BOOL,      /* 0x82: a 0/1 byte with another value */
	MQTT_PROPS_REJ_TOPIC,     /* 0x82: Response Topic empty or with a wildcard */
	MQTT_PROPS_REJ_AUTH_DATA, /* 0x82: Authentication Data without Authentication Method */
	MQTT_PROPS_REJ__COUNT
};

/* Reason codes (2.4): one name per meaning, several meanings may share a value. */
enum mqtt_rc {
	MQTT_RC_SUCCESS = 0x00,
	MQTT_RC_NORMAL_DISCONNECTION = 0x00,
	MQTT_RC_GRANTED_QOS_0 = 0x00,
	MQTT_RC_GRANTED_QOS_1 = 0x01,
	MQTT_RC_GRANTED_QOS_2 = 0x02,
	MQTT_RC_DISCONNECT_WITH_WILL = 0x04,
	MQTT_RC_NO_MATCHING_SUBSCRIBERS = 0x10,
	MQTT_RC_NO_SUBSCRIPTION_EXISTED = 0x11,
	MQTT_RC_CONTINUE_AUTHENTICATION = 0x18,
	MQTT_RC_REAUTHENTICATE = 0x19,
	MQTT_RC_UNSPECIFIED_ERROR = 0x80,
	MQTT_RC_MALFORMED_PACKET = 0x81,
	MQTT_RC_PROTOCOL_ERROR = 0x82,
	MQTT_RC_IMPLEMENTATION_SPECIFIC = 0x83,
	MQTT_RC_UNSUPPORTED_PROTOCOL_VERSION = 0x84,
	MQTT_RC_CLIENT_ID_NOT_VALID = 0x85,
	MQTT_RC_BAD_USERNAME_OR_PASSWORD = 0x86,
	MQTT_RC_NOT_AUTHORIZED = 0x87,
	MQTT_RC_SERVER_UNAVAILABLE = 0x88,
	MQTT_RC_SERVER_BUSY = 0x89,
	MQTT_RC_BANNED = 0x8A,
	MQTT_RC_SERVER_SHUTTING_DOWN = 0x8B,
	MQTT_RC_BAD_AUTHENTICATION_METHOD = 0x8C,
	MQTT_RC_KEEP_ALIVE_TIMEOUT = 0x8D,
	MQTT_RC_SESSION_TAKEN_OVER = 0x8E,
	MQTT_RC_TOPIC_FILTER_INVALID = 0x8F,
	MQTT_RC_TOPIC_NAME_INVALID = 0x90,
	MQTT_RC_PACKET_ID_IN_USE = 0x91,
	MQTT_RC_PACKET_ID_NOT_FOUND = 0x92,
	MQTT_RC_RECEIVE_MAXIMUM_EXCEEDED = 0x93,
	MQTT_RC_TOPIC_ALIAS_INVALID = 0x94,
	MQTT_RC_PACKET_TOO_LARGE = 0x95,
	MQTT_RC_MESSAGE_RATE_TOO_HIGH = 0x96,
	MQTT_RC_QUOTA_EXCEEDED = 0x97,
	MQTT_RC_ADMINISTRATIVE_ACTION = 0x98,
	MQTT_RC_PAYLOAD_FORMAT_INVALID = 0x99,
	MQTT_RC_RETAIN_NOT_SUPPORTED = 0x9A,
	MQTT_RC_QOS_NOT_SUPPORTED = 0x9B,
	MQTT_RC_USE_ANOTHER_SERVER = 0x9C,
	MQTT_RC_SERVER_MOVED = 0x9D,
	MQTT_RC_SHARED_SUBS_NOT_SUPPORTED = 0x9E,
	MQTT_RC_CONNECTION_RATE_EXCEEDED = 0x9F,
	MQTT_RC_MAXIMUM_CONNECT_TIME = 0xA0,
	MQTT_RC_SUB_IDS_NOT_SUPPORTED = 0xA1,
	MQTT_RC_WILDCARD_SUBS_NOT_SUPPORTED = 0xA2,
};

/* The reason code a rejection answers with (CONNACK or DISCONNECT): MQTT_RC_MALFORMED_PACKET
 * or MQTT_RC_PROTOCOL_ERROR. */
enum mqtt_rc mqtt_props_rej_rc(enum mqtt_props_rej rej);

/* Decode one property block of kind k at c's position: the Property Length, then every
 * property. 0 with c advanced past the block and *out filled (views borrow c's buffer), or
 * -E_PROTO with *rej naming the site (*out and c's position are then unspecified).
 * Checks what one block can show: identifiers and their packets, repetition (User Property
 * always may; Subscription Identifier only in a PUBLISH), the fixed values, UTF-8, a
 * Response Topic without wildcards, Authentication Data only beside a Method. Rules that
 * need the connection (a client's PUBLISH must not carry Subscription Identifiers
 * [MQTT-3.3.4-6], Topic Alias above the maximum, Session Expiry in DISCONNECT) are the
 * caller's. A packet whose Property Length may be absent (short acks, DISCONNECT, AUTH)
 * is the caller's to recognise. Pure: no state, core-agnostic. */
MUST_CHECK int mqtt_props_decode(struct cur *c, enum mqtt_props_pkt k,
				 struct mqtt_props *out /* out */, enum mqtt_props_rej *rej /* out */);

/* Next User Property of a decoded list; false at the end. `it` is advanced in place (copy
 * the list first to walk it twice); key and val borrow the packet. */
bool mqtt_props_user_next(struct mqtt_props_list *it, struct mqtt_str *key /* out */,
			  struct mqtt_str *val /* out */);
/* Next Subscription Identifier of a decoded list; false at the end. As above. */
bool mqtt_props_sub_id_next(struct mqtt_props_list *it, uint32_t *id /* out */);

/* Does every property present in p belong in a block of kind k? (Encoder side check.) */
bool mqtt_props_fit(const struct mqtt_props *p, enum mqtt_props_pkt k);

/* Bytes mqtt_props_write writes for p, Property Length included; 0 if the block would
 * exceed the 268435455-byte limit. */
size_t mqtt_props_len(const struct mqtt_props *p);

/* Write p's block at w->pos: the Property Length, then every present property in
 * ascending identifier order (User Properties and Subscription Identifiers at their
 * identifier's place, in list order; decoded lists copied verbatim). Deterministic: equal
 * views give equal bytes. 0, or -E_OVERFLOW (w->err set, nothing written). p and what it
 * points to are borrowed; values are written as given (mqtt_props_fit and the decoder
 * say what a peer accepts). */
MUST_CHECK int mqtt_props_write(struct wcur *w, const struct mqtt_props *p);

/* Same properties and values (views and lists compared by content)? */
bool mqtt_props_equal(const struct mqtt_props *a, const struct mqtt_props *b);

#endif
