#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Writes compile_commands.json to stdout from pairs of "compiler+flags" "sources".
# Usage: compile-commands.sh DIR CMD1 SRCS1 [CMD2 SRCS2 ...]
set -euo pipefail
dir=$1; shift
first=1
echo "["
while [ $# -ge 2 ]; do
	cmd=$1; srcs=$2; shift 2
	for f in $srcs; do
		[ -n "$f" ] || continue
		[ $first -eq 1 ] || echo ","
		first=0
		esc_cmd=${cmd//\\/\\\\}; esc_cmd=${esc_cmd//\"/\\\"}
		printf '  {"directory": "%s", "file": "%s", "command": "%s -c %s"}' "$dir" "$f" "$esc_cmd" "$f"
	done
done
echo
echo "]"
