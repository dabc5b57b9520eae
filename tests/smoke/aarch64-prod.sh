#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The aarch64 image that ships: the checks of tests/smoke/x86_64-prod.sh (it comes up and
# listens, ignores every development knob, stops naming storage.required without a disk,
# prints no address from the panic on) on BUILD_DIR/prod/aarch64/urmqtt.img (`make
# aarch64-prod`) under qemu-system-aarch64 -M virt, TLS clients included (see x86_64-prod.sh).
# Usage: aarch64-prod.sh BUILD_DIR
X86_64_PROD_ARCH=aarch64 exec "$(cd "$(dirname "$0")" && pwd)/x86_64-prod.sh" "$@"
