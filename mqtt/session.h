/* SPDX-License-Identifier: MIT
 *
 * MQTT session hot form and delivery records (private to mqtt/). A session is what
 * survives a connection when clean session is 0: identity, subscriptions, and the
 * ordered list of outbound QoS 1/2 deliveries plus inbound QoS 2 identifiers. Records
 * live in the broker's pools and are named by 32-bit indices (MQTT_NIL = none); this file
 * must never hold pointers into packets.
 *
 * Invariants (checked by mqtt_broker_check):
 *  1. A session is in the id hash iff it is in use; (kind, id) is unique.
 *  2. n_queued == length of the q list; n_inflight == records in it with a pid.
 *  3. n_inflight <= max_inflight and n_queued <= max_queue.
 *  4. Every record in the q list with state WAIT_ACK/WAIT_REC holds a message reference;
 *     WAIT_COMP and RX2 records hold none.
 *  5. Packet identifiers of in-flight records are non-zero and distinct.
 *  6. conn != MQTT_NIL iff a connection is attached, and that connection's session is us.
 *  7. A clean session never outlives its connection.
 *  8. skey != 0 iff the session is persistent (clean session 0) and storage is on; then
 *     every change of its subscriptions and deliveries is recorded (durable.c).
 * Delivery record states (outbound):
 *   QUEUED --pump: PUBLISH--> WAIT_ACK  --PUBACK-->  freed          (QoS 1)
 *   QUEUED --pump: PUBLISH--> WAIT_REC  --PUBREC: PUBREL--> WAIT_COMP --PUBCOMP--> freed
 *   reconnect: WAIT_ACK/WAIT_REC resent with DUP, WAIT_COMP resends PUBREL.
 * Inbound QoS 2: PUBLISH(pid) --route, PUBREC--> RX2(pid) --PUBREL: PUBCOMP--> freed;
 *   a PUBLISH with a pid already in RX2 is answered PUBREC without routing again.
 */
#ifndef MQTT_SESSION_H
#define MQTT_SESSION_H

#include "lib/compiler.h"

#define MQTT_NIL UINT32_MAX

enum mqtt_dlv_state {
	MQTT_DLV_FREE = 0, MQTT_DLV_QUEUED, MQTT_DLV_WAIT_ACK, MQTT_DLV_WAIT_REC,
	MQTT_DLV_WAIT_COMP, MQTT_DLV_RX2,
};

struct mqtt_msg;

struct mqtt_dlv {
	struct mqtt_msg *msg; /* a reference while QUEUED/WAIT_ACK/WAIT_REC */
	uint32_t next;
	uint16_t pid;
	uint8_t qos;
	uint8_t state;        /* enum mqtt_dlv_state; bit 7: retain flag to send */
};

#define MQTT_DLV_RETAIN 0x80u
/* A persistent session's new delivery not yet recorded: recorded once, queued (at the end
 * of its routing) or already sent (by the pump that sent it), so a delivery sent at once
 * costs one record instead of two. Never set outside one call of deliver(). */
#define MQTT_DLV_FRESH 0x40u
/* In flight since an earlier connection and not yet sent again on this one: the 5.0
 * client's Receive Maximum was reached when it came back [MQTT-3.3.4-9]; sent again (DUP,
 * its identifier) as acknowledgements free the window. Any change of state clears it. */
#define MQTT_DLV_OWED 0x20u
#define MQTT_SESS_USED 0x01u
#define MQTT_SESS_SERVICE 0x02u
#define MQTT_SESS_CLEAN 0x04u
#define MQTT_SESS_OWED 0x08u /* some delivery is MQTT_DLV_OWED */

struct mqtt_session {
	uint64_t skey;        /* storage key of a persistent session; 0: not stored (clean) */
	uint8_t *id;          /* heap, id_len bytes: the client identifier */
	uint32_t hash_next;   /* id hash chain, or free-list link */
	uint32_t conn;        /* attached connection index, or MQTT_NIL */
	uint32_t q_head, q_tail; /* outbound deliveries in arrival order */
	uint32_t rx2;         /* inbound QoS 2 identifiers awaiting PUBREL */
	uint32_t subs;        /* subscription records (absolute, or extra relative ones) */
	uint32_t sub0_node;   /* inline subscription: identity-relative node, or MQTT_NIL */
	uint16_t id_len, next_pid, n_queued, n_inflight;
	uint16_t n_held;      /* acknowledgements of its connection waiting for a commit */
	uint8_t sub0_qos, flags, n_subs, n_rx2;
	uint16_t sub0_key;    /* interest key of the inline subscription's filter */
	uint32_t will_delay_s; /* its connection's will waits this long (5.0); 0: at once */
};

STATIC_ASSERT(sizeof(struct mqtt_session) <= 64, "session hot form must fit 64 bytes");
STATIC_ASSERT(sizeof(struct mqtt_dlv) <= 16, "delivery record must fit 16 bytes");

#endif
