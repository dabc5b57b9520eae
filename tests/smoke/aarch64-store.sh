#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Storage end to end in the aarch64 image: every scenario of tests/smoke/x86_64-store.sh
# (SIGKILL under QoS 1 load and nothing acknowledged lost, sessions and retained messages
# across a restart, foreign disks never written, storage.required) on
# BUILD_DIR/aarch64/urmqtt.img under qemu-system-aarch64 -M virt (GICv3, -cpu max, TCG),
# two cores: one data core and the storage core (SQLite with FP/SIMD on that core).
# Usage: aarch64-store.sh BUILD_DIR
X86_64_STORE_ARCH=aarch64 X86_64_STORE_SMP=2 X86_64_STORE_TAG=aarch64-store \
	exec "$(cd "$(dirname "$0")" && pwd)/x86_64-store.sh" "$@"
