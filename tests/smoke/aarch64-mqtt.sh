#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The broker in the aarch64 kernel end to end with real clients: every scenario of
# tests/smoke/x86_64-mqtt.sh (delivery at QoS 0/1/2, retained, will, every refusal with
# its alert, no leak, the shards at 2 cores, 200 idle connections within the memory
# budget) on BUILD_DIR/aarch64/urmqtt.img under qemu-system-aarch64 -M virt (GICv3,
# -cpu max, TCG). Usage: aarch64-mqtt.sh BUILD_DIR
X86_64_MQTT_ARCH=aarch64 X86_64_MQTT_SMP=2 X86_64_MQTT_IDLE=${AARCH64_MQTT_IDLE:-200} X86_64_MQTT_TAG=aarch64-mqtt \
	exec "$(cd "$(dirname "$0")" && pwd)/x86_64-mqtt.sh" "$@"
