#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the heap tests (threaded cross-core frees included) under ThreadSanitizer.
build=${1:-build}
if CMOCKA_MESSAGE_OUTPUT=STDOUT TSAN_OPTIONS=halt_on_error=1 timeout 300 "$build/tsan/test_heap"; then
	echo "PASS kernel/heap: cross-core frees under TSan"
else
	echo "FAIL kernel/heap: cross-core frees under TSan"
fi
