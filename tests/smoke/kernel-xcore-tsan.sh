#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the core-mesh tests (all-to-all threaded stress included) under ThreadSanitizer.
build=${1:-build}
if CMOCKA_MESSAGE_OUTPUT=STDOUT TSAN_OPTIONS=halt_on_error=1 timeout 300 "$build/tsan/test_xcore"; then
	echo "PASS kernel/xcore: all-to-all stress under TSan"
else
	echo "FAIL kernel/xcore: all-to-all stress under TSan"
fi
