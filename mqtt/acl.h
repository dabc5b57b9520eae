/* SPDX-License-Identifier: MIT
 *
 * Private to mqtt/: the ACL decision (acl.c) as pure functions of the configuration and
 * the asker, with no broker state: which identity may publish to, subscribe to, or
 * receive which topic. A device is confined to its own subtree devices/<id>/ (its identity
 * names exactly one level); a service to the patterns of its rule (broker.h,
 * struct mqtt_acl_service). Every pointer is borrowed for the call.
 */
#ifndef MQTT_ACL_H
#define MQTT_ACL_H

#include "mqtt/broker.h"

/* The first level of every device's subtree, with its separator. */
#define MQTT_ACL_DEV_PREFIX "devices/"
#define MQTT_ACL_DEV_PREFIX_LEN (sizeof MQTT_ACL_DEV_PREFIX - 1u)

/* No rule names the service (and none applies to every service): it may do nothing. */
#define MQTT_ACL_NO_RULE UINT16_MAX

/* Who asks. */
struct mqtt_acl_subject {
	enum mqtt_id_kind kind;
	const uint8_t *id;   /* a device's identity: one non-empty level without wildcards (as
			      * mqtt_conn_open admits); unused for a service */
	size_t id_len;
	const struct mqtt_acl_service *rule; /* a service's rule, NULL: none (all refused) */
};

/* The rule of the service `id` among services[0, n): the one naming it exactly, else the
 * first with identity NULL, else MQTT_ACL_NO_RULE. */
uint16_t mqtt_acl_rule_find(const struct mqtt_acl_service *services, uint16_t n,
			    const uint8_t *id, size_t id_len);

/* May `who` publish to this topic (and set a will on it)? */
bool mqtt_acl_pub_ok(const struct mqtt_acl_subject *who, const uint8_t *topic, size_t len);
/* May `who` subscribe to this filter? A service's filter must be covered by a sub pattern:
 * every topic it matches is matched by the pattern. */
bool mqtt_acl_sub_ok(const struct mqtt_acl_subject *who, const uint8_t *filter, size_t len);
/* May `who` receive a message on this topic (what its granted filters can reach)? */
bool mqtt_acl_read_ok(const struct mqtt_acl_subject *who, const uint8_t *topic, size_t len);

/* Is this topic the device's own devices/<id> or under devices/<id>/ ? */
bool mqtt_acl_device_topic(const uint8_t *id, size_t id_len, const uint8_t *topic, size_t len);
/* Is this filter under devices/<id>/ (exactly devices/<id> is not: a filter there would be
 * stored outside the device's relative subtree)? */
bool mqtt_acl_device_filter(const uint8_t *id, size_t id_len, const uint8_t *filter, size_t len);

#endif
