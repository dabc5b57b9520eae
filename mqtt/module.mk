# SPDX-License-Identifier: MIT
# mqtt/: MQTT 3.1.1 codec and broker core (portable; knows nothing of TCP or TLS).
PORTABLE_SRCS += mqtt/codec.c mqtt/topic.c mqtt/session.c mqtt/broker.c mqtt/durable.c
# tquery.c: the telemetry query's text (parse, JSON rows); tq.c: queries on the broker.
PORTABLE_SRCS += mqtt/tquery.c mqtt/tq.c
