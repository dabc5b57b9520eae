#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the SPSC ring tests (two-thread stress included) under ThreadSanitizer.
build=${1:-build}
if CMOCKA_MESSAGE_OUTPUT=STDOUT TSAN_OPTIONS=halt_on_error=1 timeout 300 "$build/tsan/test_ring"; then
	echo "PASS lib/ring: two-thread stress under TSan"
else
	echo "FAIL lib/ring: two-thread stress under TSan"
fi
