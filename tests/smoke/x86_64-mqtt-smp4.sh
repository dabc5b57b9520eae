#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The end-to-end MQTT scenarios of tests/smoke/x86_64-mqtt.sh on four cores (four broker
# shards, flows steered by core 0, TCG when KVM is missing): delivery, QoS 2, retained on
# every shard, the will from its home core, a takeover across cores, routing between
# shards and every refusal. The idle-connection figure is taken with two cores only.
# Usage: x86_64-mqtt-smp4.sh BUILD_DIR
X86_64_MQTT_SMP=4 X86_64_MQTT_IDLE=0 X86_64_MQTT_TAG=x86_64-mqtt-smp4 \
	exec "$(cd "$(dirname "$0")" && pwd)/x86_64-mqtt.sh" "$@"
