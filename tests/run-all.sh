#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every test kind and prints one result line per case, then
# "N passed, N failed, N skipped" (a skip is neither: it is shown and counted on its own).
#   unit:  each cmocka binary, TAP output, one case per test function
#   fuzz:  replay of tests/fuzz/corpus/<name> under ASan, then a bounded libFuzzer run
#   smoke: each script; it prints "PASS <name>" / "FAIL <name>" / "SKIP <name> (why)" lines
set -uo pipefail
build=build; fuzz_seconds=5; unit=""; fuzz=""; smoke=""
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
	--unit) unit=$2; shift 2 ;;
	--fuzz) fuzz=$2; shift 2 ;;
	--smoke) smoke=$2; shift 2 ;;
	*) echo "run-all: unknown argument $1" >&2; exit 2 ;;
	esac
done
passed=0; failed=0; skipped=0; failures=(); skips=()
logdir=$build/test-logs; mkdir -p "$logdir"
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAIL $1${2:+ ($2)}"; }
skip() { skipped=$((skipped + 1)); skips+=("$1"); echo "SKIP $1"; }

for t in $unit; do
	name=${t#"$build"/host/tests/unit/}
	log=$logdir/unit-${name//\//_}.log
	CMOCKA_MESSAGE_OUTPUT=TAP timeout 300 "$t" >"$log" 2>&1
	rc=$?
	n_ok=$(grep -c '^ok ' "$log"); n_bad=$(grep -c '^not ok ' "$log")
	# cmocka's TAP marks a skipped test "ok N - name # SKIP": counted as a skip, not a pass.
	while read -r line; do pass "unit/$name: ${line#ok * - }"; done < <(grep '^ok ' "$log" | grep -v '# SKIP')
	while read -r line; do skip "unit/$name: ${line#ok * - }"; done < <(grep '^ok .*# SKIP' "$log")
	while read -r line; do fail "unit/$name: ${line#not ok * - }" "see $log"; done < <(grep '^not ok ' "$log")
	if [ $rc -ne 0 ] && [ "$n_bad" -eq 0 ]; then fail "unit/$name" "exit $rc, see $log"; fi
	if [ "$n_ok" -eq 0 ] && [ "$n_bad" -eq 0 ] && [ $rc -eq 0 ]; then fail "unit/$name" "no test ran"; fi
done

for f in $fuzz; do
	corpus=tests/fuzz/corpus/$f
	log=$logdir/fuzz-replay-$f.log
	if timeout 300 "$build/host/tests/fuzz/replay_$f" "$corpus" >"$log" 2>&1; then
		pass "fuzz/$f: corpus replay ($(grep -o 'replayed [0-9]*' "$log"))"
	else
		fail "fuzz/$f: corpus replay" "see $log"
	fi
	log=$logdir/fuzz-smoke-$f.log
	work=$build/fuzz/smoke-corpus/$f; mkdir -p "$work"
	dict=(); [ -f "tests/fuzz/$f.dict" ] && dict=(-dict="tests/fuzz/$f.dict")
	if timeout $((fuzz_seconds + 60)) "$build/fuzz/fuzz_$f" -max_total_time="$fuzz_seconds" \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "${dict[@]}" -artifact_prefix="$build/fuzz/crash-$f-" \
		"$work" "$corpus" >"$log" 2>&1; then
		pass "fuzz/$f: libFuzzer ${fuzz_seconds}s ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}') runs)"
	else
		fail "fuzz/$f: libFuzzer ${fuzz_seconds}s" "see $log"
	fi
done
# libFuzzer prints its stats only with -print_final_stats; fall back gracefully above.

for s in $smoke; do
	log=$logdir/smoke-$(basename "$s" .sh).log
	timeout 1800 "$s" "$build" >"$log" 2>&1
	rc=$?
	got=0
	while read -r line; do got=1; pass "${line#PASS }"; done < <(grep '^PASS ' "$log")
	while read -r line; do got=1; fail "${line#FAIL }" "see $log"; done < <(grep '^FAIL ' "$log")
	while read -r line; do got=1; skip "${line#SKIP }"; done < <(grep '^SKIP ' "$log")
	if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$log"; then fail "smoke/$(basename "$s")" "exit $rc, see $log"; fi
	if [ $got -eq 0 ] && [ $rc -eq 0 ]; then fail "smoke/$(basename "$s")" "printed no result"; fi
done

if [ $failed -gt 0 ]; then
	echo
	echo "Failures:"; for f in "${failures[@]}"; do echo "  $f"; done
fi
if [ $skipped -gt 0 ]; then
	echo
	echo "Skipped:"; for s in "${skips[@]}"; do echo "  $s"; done
fi
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
