#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Operators' channels of the aarch64 image end to end: every scenario of
# tests/smoke/x86_64-ops.sh (syslog, statsd, $SYS, the health, SNTP stepping the wall clock
# and refusing a far step, the console's revocations on two cores and after a reboot) on
# BUILD_DIR/aarch64/urmqtt.img under qemu-system-aarch64 -M virt (GICv3, -cpu max, TCG).
# Usage: aarch64-ops.sh BUILD_DIR
X86_64_OPS_ARCH=aarch64 X86_64_OPS_TAG=aarch64-ops exec "$(cd "$(dirname "$0")" && pwd)/x86_64-ops.sh" "$@"
