#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every test kind and prints one result line per case, then
# "N passed, N failed, N skipped" (a skip is neither: it is shown and counted on its own).
#   unit:  each cmocka binary, TAP output, one case per test function
#   unit-bg: the same, for long runs (--unit-bg): started in the background before the unit
#          phase, one after another (on the core the sequential unit phase leaves idle),
#          collected and reported before the smoke phase, so that no smoke scenario (some
#          measure time) shares the machine with them
#   fuzz:  replay of tests/fuzz/corpus/<name> under ASan, then a bounded libFuzzer run. Two
#          workers share the targets: the background one once its long runs are done, this
#          one once the unit phase is done; each target is claimed by one worker (an atomic
#          mkdir), so the two cores stay busy until both are done. Each run's exit status
#          goes to a file; the results are reported here, in the order of --fuzz, after both
#          workers finished and before the smoke phase
#   smoke: each script; it prints "PASS <name>" / "FAIL <name>" / "SKIP <name> (why)" lines
# A skip must say what this machine lacks, in one of a fixed set of reasons, and this script
# checks the claim itself; a skip of a test that this machine can run is a failure (and so
# is a skip without such a reason), so the run fails. The reasons (smoke: the "why" of
# "SKIP <name> (why)"; unit: a line "# needs ..." printed just before cmocka's skip()):
#   needs kvm[: text]           the accelerator decision is TCG (URMQTT_ACCEL, else the probe)
#   needs root[: text]          not running as root
#   needs command NAME[: text]  NAME is not on PATH
#   needs file PATH[: text]     PATH does not exist
#   needs cpu FLAG[: text]      FLAG is not among /proc/cpuinfo's flags (x86) or Features (arm64)
#   needs netns[: text]         this script cannot create a network namespace with a TAP device
# cmocka's own verdict on a skip differs between versions (1.1.5 prints "not ok N # SKIP
# name" and exits 0; others print "ok N # SKIP name" or count it in the exit status):
# neither is trusted, the TAP lines are read explicitly.
set -uo pipefail
build=build; fuzz_seconds=5; unit=""; unit_bg=""; fuzz=""; smoke=""
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
	--unit) unit=$2; shift 2 ;;
	--unit-bg) unit_bg=$2; shift 2 ;;
	--fuzz) fuzz=$2; shift 2 ;;
	--smoke) smoke=$2; shift 2 ;;
	*) echo "run-all: unknown argument $1" >&2; exit 2 ;;
	esac
done
passed=0; failed=0; skipped=0; failures=(); skips=()
logdir=$build/test-logs; mkdir -p "$logdir"
pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAIL $1${2:+ ($2)}"; }

# ---- skips: the reason is checked against this machine ----------------------------------
# lacks REASON: returns 0 when this machine really lacks what REASON ("needs <class>
# [arg][: text]") names, 1 when it does not, 2 when REASON is not one of the fixed set;
# says what it found in $found. (Not run in a subshell: the namespace probe runs once.)
netns_probe=""; accel_decision=""
lacks() {
	if [ "${1#needs kvm}" != "$1" ] && [ -z "${URMQTT_ACCEL:-}" ] && [ -z "$accel_decision" ]; then
		accel_decision=$(tools/accel/accel.sh "$build/accel/probe.elf" 2>/dev/null) || accel_decision=unknown
	fi
	found=$(lacks_check "$1")
	local rc=$?
	if [ "${1#needs netns}" != "$1" ] && [ $rc -eq 3 ]; then
		if [ -z "$netns_probe" ]; then
			local ns=urmqtt-runall-$$
			netns_probe=no
			if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && ip netns add "$ns" 2>/dev/null; then
				ip -n "$ns" tuntap add dev rtap0 mode tap 2>/dev/null && netns_probe=yes
				ip netns del "$ns" 2>/dev/null
			fi
		fi
		[ "$netns_probe" = no ] && { found="no network namespace with a TAP device here"; return 0; }
		found="a network namespace with a TAP device was created here"; return 1
	fi
	return $rc
}
# lacks_check REASON: lacks without the probes (returns 3 for netns instead; takes the
# accelerator decision from URMQTT_ACCEL or the one lacks made); prints what it found.
lacks_check() {
	local r=${1%%:*} cls arg extra
	read -r _ cls arg extra <<<"$r"
	[ "${1%% *}" = needs ] || { echo "not of the form 'needs <what>'"; return 2; }
	case $cls in
	kvm | root | netns) [ -z "$arg" ] || { echo "'needs $cls' takes no argument"; return 2; } ;;
	command | file | cpu) [ -n "$arg" ] && [ -z "$extra" ] || { echo "'needs $cls' takes one argument"; return 2; } ;;
	*) echo "unknown class '$cls' (kvm, root, command, file, cpu, netns)"; return 2 ;;
	esac
	case $cls in
	kvm)
		local acc=${URMQTT_ACCEL:-$accel_decision}
		[ "$acc" = tcg ] && { echo "accelerator: TCG"; return 0; }
		echo "the accelerator here is ${acc:-unknown}"; return 1 ;;
	root)
		[ "$(id -u)" != 0 ] && { echo "uid $(id -u)"; return 0; }
		echo "this run is root"; return 1 ;;
	command)
		command -v "$arg" >/dev/null || { echo "$arg not on PATH"; return 0; }
		echo "$arg is $(command -v "$arg")"; return 1 ;;
	file)
		[ -e "$arg" ] || { echo "$arg absent"; return 0; }
		echo "$arg exists"; return 1 ;;
	cpu)
		grep -Eq "^(flags|Features)[[:space:]]*:.* $arg( |$)" /proc/cpuinfo || { echo "CPU without $arg"; return 0; }
		echo "the CPU has $arg"; return 1 ;;
	netns) return 3 ;;
	esac
}
# skip NAME WHY: a skip when this machine lacks what WHY names, else a failure.
skip() {
	local why=$2 found rc
	lacks "$why"
	rc=$?
	case $rc in
	0) skipped=$((skipped + 1)); skips+=("$1 ($why)"); echo "SKIP $1 ($why; $found)" ;;
	1) fail "$1" "skipped ($why), but $found: this machine can run it" ;;
	*) fail "$1" "skipped without an accepted reason ($why: $found)" ;;
	esac
}

# unit_name PATH: the name of the unit test at $build/<flavour>/tests/unit/<name>.
unit_name() {
	local n=${1#"$build"/}
	echo "${n#*/tests/unit/}"
}
unit_log() { local n; n=$(unit_name "$1"); echo "$logdir/unit-${n//\//_}.log"; }

# fuzz_run NAME: the corpus replay and the bounded libFuzzer run of one target, each one's
# exit status in <its log>.rc (the pid of the run in progress in $logdir/unit-bg.pid when
# run by the background worker, for the EXIT trap). fuzz_claim NAME: true for the one
# worker that takes NAME.
fuzz_claims=$logdir/fuzz-claims
fuzz_claim() { mkdir "$fuzz_claims/$1" 2>/dev/null; }
# rc_says RC: what a recorded exit status says, for a failure line
rc_says() { if [ -n "$1" ]; then echo "exit $1, "; else echo "no exit status recorded, "; fi; }
fuzz_run() {
	local f=$1 corpus=tests/fuzz/corpus/$1 log work dict=()
	log=$logdir/fuzz-replay-$f.log
	timeout 300 "$build/host/tests/fuzz/replay_$f" "$corpus" >"$log" 2>&1 &
	[ -z "${2:-}" ] || echo $! >"$logdir/unit-bg.pid"
	wait $!
	echo $? >"$log.rc"
	log=$logdir/fuzz-smoke-$f.log
	work=$build/fuzz/smoke-corpus/$f; mkdir -p "$work"
	[ -f "tests/fuzz/$f.dict" ] && dict=(-dict="tests/fuzz/$f.dict")
	timeout $((fuzz_seconds + 60)) "$build/fuzz/fuzz_$f" -max_total_time="$fuzz_seconds" \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "${dict[@]}" -artifact_prefix="$build/fuzz/crash-$f-" \
		"$work" "$corpus" >"$log" 2>&1 &
	[ -z "${2:-}" ] || echo $! >"$logdir/unit-bg.pid"
	wait $!
	echo $? >"$log.rc"
}
rm -rf "$fuzz_claims"; mkdir -p "$fuzz_claims"
for f in $fuzz; do rm -f "$logdir/fuzz-replay-$f.log.rc" "$logdir/fuzz-smoke-$f.log.rc"; done

# The long runs start first, in the background, one after another (see the head); each one's
# exit status goes to <log>.rc: a run that leaves none is a failure when collected. The EXIT
# trap stops the one running when this script ends early (timeout runs it in a process group
# of its own, which an interrupt of ours would not reach). Then the background worker takes
# fuzz targets (see the head).
bg_pid=""
if [ -n "$unit_bg" ] || [ -n "$fuzz" ]; then
	for t in $unit_bg; do rm -f "$(unit_log "$t")" "$(unit_log "$t").rc"; done
	(
		for t in $unit_bg; do
			log=$(unit_log "$t")
			CMOCKA_MESSAGE_OUTPUT=TAP timeout 1800 "$t" >"$log" 2>&1 &
			echo $! >"$logdir/unit-bg.pid"
			wait $!
			echo $? >"$log.rc"
		done
		for f in $fuzz; do fuzz_claim "$f" && fuzz_run "$f" bg; done
	) &
	bg_pid=$!
	trap 'if [ -n "$bg_pid" ]; then kill "$(cat "$logdir/unit-bg.pid" 2>/dev/null)" "$bg_pid" 2>/dev/null; fi' EXIT
fi

# unit_report PATH LOG RC: one result line per TAP case of the run of PATH, then the checks
# on the run as a whole.
unit_report() {
	local t=$1 log=$2 rc=$3 name rows planned n_ok=0 n_bad=0 n_skip=0 n_all dups kind case why
	name=$(unit_name "$t")
	# One row per TAP result: kind (ok, bad, skip), case name, the "# needs ..." reason
	# printed since the previous result (skips only). Plans ("1..N", one per group) summed.
	rows=$(awk '
		/^# needs / { why = substr($0, 3); next }
		/^(not )?ok [0-9]+ # SKIP/ { n = $0; sub(/^(not )?ok [0-9]+ # SKIP ?/, "", n); print "skip\t" n "\t" why; why = ""; next }
		/^ok [0-9]+( - |$)/ { n = $0; sub(/^ok [0-9]+( - )?/, "", n); print "ok\t" n "\t"; why = ""; next }
		/^not ok [0-9]+( - |$)/ { n = $0; sub(/^not ok [0-9]+( - )?/, "", n); print "bad\t" n "\t"; why = ""; next }' "$log")
	planned=$(grep -Eo '^1\.\.[0-9]+' "$log" | awk -F. '{ s += $3 } END { print s + 0 }')
	while IFS=$'\t' read -r kind case why; do
		case $kind in
		ok) n_ok=$((n_ok + 1)); pass "unit/$name: $case" ;;
		bad) n_bad=$((n_bad + 1)); fail "unit/$name: $case" "see $log" ;;
		skip) n_skip=$((n_skip + 1)); skip "unit/$name: $case" "${why:-no reason printed}" ;;
		esac
	done <<<"$rows"
	n_all=$((n_ok + n_bad + n_skip))
	# Each case is counted once: a name reported twice (a group run again) is a failure.
	dups=$(cut -f2 <<<"$rows" | grep . | sort | uniq -d | head -n 3 | paste -sd, -)
	[ -z "$dups" ] || fail "unit/$name" "cases reported twice under one name: $dups"
	if [ $n_all -eq 0 ] && [ $n_bad -eq 0 ] && [ $rc -eq 0 ]; then
		fail "unit/$name" "no test ran"
	elif [ $n_all -ne "$planned" ]; then
		fail "unit/$name" "$n_all results for $planned planned cases (exit $rc), see $log"
	elif grep -qE 'ERROR: [A-Za-z]+Sanitizer|runtime error:' "$log"; then
		fail "unit/$name" "sanitizer report, see $log"
	elif [ $rc -ne 0 ] && [ $n_bad -eq 0 ] && [ $rc -gt $n_skip ]; then
		# A cmocka that counts skips in its exit status exits with at most their number.
		fail "unit/$name" "exit $rc, see $log"
	fi
}

t0=$SECONDS
for t in $unit; do
	log=$(unit_log "$t")
	CMOCKA_MESSAGE_OUTPUT=TAP timeout 300 "$t" >"$log" 2>&1
	unit_report "$t" "$log" $?
done
echo "time unit phase: $((SECONDS - t0)) s"

# The fuzz targets the background worker has not claimed yet, then (once both workers are
# done) every target's results, in the order of --fuzz: a run without an exit status is a
# failure.
t0=$SECONDS
for f in $fuzz; do fuzz_claim "$f" && fuzz_run "$f"; done
bg_t0=$SECONDS
if [ -n "$bg_pid" ]; then
	wait "$bg_pid"
	bg_pid=""
fi
echo "# fuzz phase: this worker's targets took $((bg_t0 - t0)) s; then waited $((SECONDS - bg_t0)) s for the background worker (long unit runs, then fuzz targets)"
for f in $fuzz; do
	log=$logdir/fuzz-replay-$f.log
	rc=$(cat "$log.rc" 2>/dev/null)
	if [ "$rc" = 0 ]; then
		pass "fuzz/$f: corpus replay ($(grep -o 'replayed [0-9]*' "$log"))"
	else
		fail "fuzz/$f: corpus replay" "$(rc_says "$rc")see $log"
	fi
	log=$logdir/fuzz-smoke-$f.log
	rc=$(cat "$log.rc" 2>/dev/null)
	if [ "$rc" = 0 ]; then
		pass "fuzz/$f: libFuzzer ${fuzz_seconds}s ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}') runs)"
	else
		fail "fuzz/$f: libFuzzer ${fuzz_seconds}s" "$(rc_says "$rc")see $log"
	fi
done
echo "time fuzz phase: $((SECONDS - t0)) s (after the unit phase; the background worker began earlier)"
# libFuzzer prints its stats only with -print_final_stats; fall back gracefully above.

# The long runs (the background worker is done): report each (a missing exit status is a failure).
for t in $unit_bg; do
	log=$(unit_log "$t")
	rc=$(cat "$log.rc" 2>/dev/null)
	if [[ $rc =~ ^[0-9]+$ ]]; then
		unit_report "$t" "$log" "$rc"
	else
		fail "unit/$(unit_name "$t")" "no exit status recorded, see $log"
	fi
done

for s in $smoke; do
	log=$logdir/smoke-$(basename "$s" .sh).log
	t0=$SECONDS
	timeout 1800 "$s" "$build" >"$log" 2>&1
	rc=$?
	echo "time smoke/$(basename "$s"): $((SECONDS - t0)) s" # where make test's minutes go
	got=0
	while read -r line; do got=1; pass "${line#PASS }"; done < <(grep '^PASS ' "$log")
	while read -r line; do got=1; fail "${line#FAIL }" "see $log"; done < <(grep '^FAIL ' "$log")
	while read -r line; do
		got=1
		if [[ $line =~ ^SKIP\ ([^ ]+)\ \((.*)\)$ ]]; then
			skip "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
		else
			fail "${line#SKIP }" "a SKIP line must read 'SKIP <name> (needs <what>...)'"
		fi
	done < <(grep '^SKIP ' "$log")
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
