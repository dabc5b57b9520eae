#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make fuzz: long libFuzzer runs, one target after another, each for --seconds. New inputs
# go to build/fuzz/corpus-long/<name> (the checked-in corpus is read, never written); a
# crash stops with the reproducer's path: add it to tests/fuzz/corpus/<name>/ with the fix.
set -uo pipefail
build=build; seconds=300; names=()
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	*) names+=("$1"); shift ;;
	esac
done
status=0
for f in "${names[@]}"; do
	work=$build/fuzz/corpus-long/$f; mkdir -p "$work"
	dict=(); [ -f "tests/fuzz/$f.dict" ] && dict=(-dict="tests/fuzz/$f.dict")
	echo "== fuzz $f for ${seconds}s"
	if ! "$build/fuzz/fuzz_$f" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
		-print_final_stats=1 "${dict[@]}" -artifact_prefix="$build/fuzz/crash-$f-" \
		"$work" "tests/fuzz/corpus/$f" 2>&1 | grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|Test unit written'; then
		:
	fi
	if ls "$build/fuzz/crash-$f-"* >/dev/null 2>&1; then
		echo "fuzz $f: CRASH, reproducer(s): $(ls "$build/fuzz/crash-$f-"*)"; status=1
	fi
done
exit $status
