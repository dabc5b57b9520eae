# SPDX-License-Identifier: MIT
# mqtt/: MQTT 3.1.1 codec and broker core (portable; knows nothing of TCP or TLS).
PORTABLE_SRCS += mqtt/codec.c mqtt/topic.c mqtt/session.c mqtt/broker.c mqtt/durable.c
# Below broker.c, never calling it: msg.c (accounted heap, message blocks), acl.c (the ACL
# decision, pure), rate.c (per-identity token buckets), out.c (encoding and sending).
PORTABLE_SRCS += mqtt/msg.c mqtt/acl.c mqtt/rate.c mqtt/out.c
# fair.c: QoS 0 drops per publisher identity and the fair-share rule (ADR-075).
PORTABLE_SRCS += mqtt/fair.c
# tquery.c: the telemetry query's text (parse, JSON rows); tq.c: queries on the broker.
PORTABLE_SRCS += mqtt/tquery.c mqtt/tq.c
# interest.c: the interest keys shards use to skip one another (pure, used by dp/shard.c).
PORTABLE_SRCS += mqtt/interest.c
# props.c: MQTT 5.0 property blocks and reason codes (pure, beside codec.c).
PORTABLE_SRCS += mqtt/props.c
# codec5.c: the MQTT 5.0 packet codec (pure, over codec.c's fixed header and props.c).
PORTABLE_SRCS += mqtt/codec5.c
# subid.c: MQTT 5.0 Subscription Identifiers beside the subscription pools (below session.c).
PORTABLE_SRCS += mqtt/subid.c
# share.c: MQTT 5.0 shared subscriptions, members on any shard (below session.c).
PORTABLE_SRCS += mqtt/share.c
# fleet.c: the fleet's consistent-hash ring, an identity's home appliance (pure; broker.c
# asks it on a 5.0 CONNECT, the configuration tool checks [fleet] with its parser).
PORTABLE_SRCS += mqtt/fleet.c
