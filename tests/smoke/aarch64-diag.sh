#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The diagnostics mode on aarch64: tests/smoke/x86_64-diag.sh's scenarios on
# BUILD_DIR/aarch64/urmqtt.img (qemu-system-aarch64 -M virt, GICv3, -cpu max, TCG), results
# aarch64-diag/*. Usage: aarch64-diag.sh BUILD_DIR
X86_64_DIAG_ARCH=aarch64 exec bash "$(dirname "$0")/x86_64-diag.sh" "$@"
