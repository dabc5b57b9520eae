#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make reproduce (ADR-074): builds the release twice from scratch, in two scratch directories
# made at different times (the second starts after the first ended), and compares the ISO, the
# raw and the qcow2 disk byte for byte, printing their SHA-256. Exit 0 when all three are
# identical, 1 otherwise (the differing files are named; `cmp -l | head` shows where).
# The signing key is a throwaway one made here (signatures are not compared: they are not
# part of what must reproduce, though Ed25519 makes them equal too with one key).
# Usage: reproduce.sh BUILD CONFIG CERTS [JOBS]
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$1 config=$2 certs=$3 jobs=${4:-$(nproc)}
cd "$src"
scratch=$(mktemp -d "$build/reproduce.XXXXXX")
keydir=$(mktemp -d /tmp/urmqtt-reproduce-key.XXXXXX)
trap 'rm -rf "$keydir"' EXIT
NOPASS=1 tools/release/keygen.sh "$keydir/k.key" >/dev/null
for run in 1 2; do
	t0=$(date +%s)
	tools/release/release.sh --config "$config" --certs "$certs" --build "$build" --fresh --jobs "$jobs" \
		--tree "$scratch/tree-$run" --out "$scratch/out-$run" --key "$keydir/k.key" >"$scratch/run-$run.log" 2>&1 ||
		{ tail -20 "$scratch/run-$run.log"; echo "reproduce: build $run failed (log $scratch/run-$run.log)"; exit 1; }
	echo "reproduce: build $run in $scratch/tree-$run: $(($(date +%s) - t0)) s"
	[ $run = 1 ] && sleep 2 # a later second on every clock-derived field
done
rc=0
for f in $(cd "$scratch/out-1" && ls urmqtt-*.iso urmqtt-*.raw urmqtt-*.qcow2); do
	a=$(sha256sum <"$scratch/out-1/$f" | cut -d' ' -f1)
	b=$(sha256sum <"$scratch/out-2/$f" 2>/dev/null | cut -d' ' -f1)
	if [ "$a" = "$b" ]; then
		echo "reproduce: same      $a  $f"
	else
		echo "reproduce: DIFFERENT $a  $f (build 1)"
		echo "reproduce:           ${b:-missing}  $f (build 2)"
		rc=1
	fi
done
[ $rc = 0 ] && { echo "reproduce: PASS: identical ISO, raw and qcow2 from two scratch trees"; rm -rf "$scratch"; } ||
	echo "reproduce: FAIL (trees and outputs kept in $scratch)"
exit $rc
