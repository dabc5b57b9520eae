#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the wall-clock tests (one writer publishing while a reader reads) under ThreadSanitizer.
build=${1:-build}
if CMOCKA_MESSAGE_OUTPUT=STDOUT TSAN_OPTIONS=halt_on_error=1 timeout 120 "$build/tsan/test_wallclock"; then
	echo "PASS kernel/wallclock: publication under TSan"
else
	echo "FAIL kernel/wallclock: publication under TSan"
fi
