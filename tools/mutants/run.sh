#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make test-mutants: proves the suite fails when a behaviour it claims to check is broken.
# In a scratch copy of the tree (BUILD_DIR/mutants, the working tree's files as they are, the
# main build's objects copied so only what a mutant touches is rebuilt), each mutant below
# replaces one exact piece of source, rebuilds, runs the tests named for it, and must make
# at least one of them fail; then the piece is put back. A baseline run first: every named
# test must pass on the unmutated tree, else a "caught" would mean nothing.
# Output: one line per mutant, "CAUGHT name (by: test ...)", "MISSED name" or "BROKEN name"
# (it did not build: no catch); exit 1 unless every mutant was caught. Not part of make test (about 10 minutes).
# Usage: tools/mutants/run.sh BUILD_DIR
set -uo pipefail
build=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$build/mutants
src=$scratch/src
log=$scratch/log
failed=0

# One mutant per index: its name, the file, the exact text replaced (its first occurrence),
# the replacement, and the tests that must catch it (unit:PATH runs
# BUILD/host/tests/unit/PATH, smoke:NAME runs tests/smoke/NAME.sh).
T=$'\t'
N=$'\n'
names=(revocation-ignored no-alert-on-refusal puback-before-storage zero-length-topic-accepted
	handshake-timeout-removed revocation-ignored-on-resume)
files=(tls/revoke.c tls/handshake.c mqtt/durable.c mqtt/codec.c dp/dp.c tls/handshake.c)
froms=(
	"${T}${T}if (n == len && memcmp(s, serial, n) == 0)${N}${T}${T}${T}return true;"
	"${T}${T}${T}${T}if (tls_rec_flush(&e, &r, out, sizeof out, &n) == 0 && n)"
	"${T}if (!owed && !b->held_n) /* nothing to wait for"
	"${T}if (len == 0)${N}${T}${T}return false; /* [MQTT-4.7.3-1] */"
	"${T}${T}if (s->conn == DP_NIL || now < s->deadline_ms)"
	"${T}if (env->cfg.revoke.is_revoked && env->cfg.revoke.is_revoked(env->cfg.revoke.ctx, ser, serlen))"
)
tos=(
	"${T}${T}if (n == len && memcmp(s, serial, n) == 0)${N}${T}${T}${T}return false;"
	"${T}${T}${T}${T}if (tls_rec_flush(&e, &r, out, sizeof out, &n) == 0 && n && 0)"
	"${T}if (1) /* nothing to wait for"
	"${T}if (len == 0)${N}${T}${T}return true; /* [MQTT-4.7.3-1] */"
	"${T}${T}if (s->conn == DP_NIL || now < UINT64_MAX)"
	"${T}if (0 && env->cfg.revoke.is_revoked(env->cfg.revoke.ctx, ser, serlen))"
)
catchers=(
	"unit:tls/test_identity smoke:hosted-mqtt"
	"unit:tls/test_handshake smoke:hosted-mqtt"
	"unit:mqtt/test_durable"
	"unit:mqtt/test_codec unit:mqtt/test_broker"
	"unit:dp/test_dp smoke:hosted-mqtt"
	"smoke:tls-echo"
)

say() { echo "mutants: $*"; }

setup() {
	rm -rf "$src"
	mkdir -p "$src/build" "$log"
	(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$src") || return 1
	ln -sfn "$build/deps" "$src/build/deps"
	local d
	for d in host gen dev hosted; do
		[ -d "$build/$d" ] && cp -a "$build/$d" "$src/build/"
	done
	return 0
}

# run_tests NAME TESTS...: 0 when every test passed; the failing ones in $failing
run_tests() {
	local name=$1 t rc
	shift
	failing=""
	(cd "$src" && make -j2 host build/hosted/urmqtt >"$log/$name-build.log" 2>&1) || { failing="build"; return 1; }
	for t in "$@"; do
		case $t in
		unit:*) (cd "$src" && "build/host/tests/unit/${t#unit:}") >"$log/$name-${t//[:\/]/_}.log" 2>&1 ;;
		smoke:*) (cd "$src" && bash "tests/smoke/${t#smoke:}.sh" build) >"$log/$name-${t//[:\/]/_}.log" 2>&1 ;;
		esac
		rc=$?
		if [ $rc != 0 ] || grep -q "^FAIL\|FAILED" "$log/$name-${t//[:\/]/_}.log"; then
			failing="$failing $t"
		fi
	done
	[ -z "$failing" ]
}

# apply FILE FROM TO: replace the first occurrence; 1 when FROM is not there
apply() {
	python3 - "$src/$1" "$2" "$3" <<'PY'
import sys
p, a, b = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(p).read()
if a not in s:
    sys.exit(1)
open(p, "w").write(s.replace(a, b, 1))
PY
}

say "scratch tree in $src (copying the working tree and the main build's objects)"
setup || { say "could not copy the tree"; exit 1; }
all_tests=$(printf '%s\n' "${catchers[@]}" | tr ' ' '\n' | sort -u | tr '\n' ' ')
# shellcheck disable=SC2086
if ! run_tests baseline $all_tests; then
	say "BASELINE FAILED (${failing# }): no mutant can be judged; see $log"
	exit 1
fi
say "baseline: every named test passes: $all_tests"
for i in "${!names[@]}"; do
	name=${names[$i]} file=${files[$i]} from=${froms[$i]} to=${tos[$i]} tests=${catchers[$i]}
	cp "$src/$file" "$scratch/saved"
	if ! apply "$file" "$from" "$to"; then
		echo "MISSED $name (the text to mutate is not in $file any more: update tools/mutants/run.sh)"
		failed=1
		continue
	fi
	# shellcheck disable=SC2086
	if run_tests "$name" $tests; then
		echo "MISSED $name (every test passed with $file broken: $tests)"
		failed=1
	elif [ "$failing" = build ]; then
		echo "BROKEN $name (the mutant does not build: a compiler error is no catch; see $log/$name-build.log)"
		failed=1
	else
		echo "CAUGHT $name (by:${failing})"
	fi
	cp "$scratch/saved" "$src/$file"
done
exit $failed
