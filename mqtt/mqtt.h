/* SPDX-License-Identifier: MIT
 *
 * The mqtt/ layer's public header: the only one other layers include. The codec (wire
 * format, framer) and the broker core (sessions, QoS, topic tree, ACL, limits) are
 * described in their own headers; nothing here adds behaviour.
 */
#ifndef MQTT_MQTT_H
#define MQTT_MQTT_H

#include "mqtt/broker.h"
#include "mqtt/codec.h"

#endif
