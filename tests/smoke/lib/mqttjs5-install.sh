#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MQTT.js 5 for tests/smoke/lib/mqttjs5-check.mjs: `npm ci` of the pinned
# tests/smoke/lib/mqttjs5/package-lock.json (exact versions, integrity hashes) into
# BUILD_DIR/node/mqttjs5, with npm's cache in BUILD_DIR/node/npm-cache (--prefer-offline:
# once filled, no registry is asked). Never installs into the source tree; third-party code
# is never committed. Skipped when the installed tree was made from the same lock file.
# Prints the install directory (for MQTTJS5_DIR) on stdout; on failure, why on stderr, exit 1.
# Usage: mqttjs5-install.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: mqttjs5-install.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/mqttjs5" && pwd)
mkdir -p "$build/node" || exit 1
dst=$(cd "$build/node" && pwd)/mqttjs5
cache=$(dirname "$dst")/npm-cache
die() { echo "mqttjs5-install: $*" >&2; exit 1; }

command -v node >/dev/null && command -v npm >/dev/null ||
	die "node and npm missing (tools/setup/ensure-packages.sh installs nodejs and npm)"
major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
[ "${major:-0}" -ge 16 ] || die "MQTT.js 5 needs Node.js >= 16, have $(node --version 2>&1)"
want=$(node -p 'require(process.argv[1]).dependencies.mqtt' "$src/package.json") || die "bad $src/package.json"
stamp=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)

# Several smoke scripts may install at once (the x86_64, aarch64 and SMP variants).
exec 9>"$build/node/.mqttjs5.lock"
flock -w 600 9 || die "another install held $build/node/.mqttjs5.lock for 600 s"
have() {
	[ "$(cat "$dst/.stamp" 2>/dev/null)" = "$stamp" ] &&
		[ "$(node -p 'require(process.argv[1]).version' "$dst/node_modules/mqtt/package.json" 2>/dev/null)" = "$want" ]
}
if ! have; then
	rm -rf "$dst"
	mkdir -p "$dst" && cp "$src/package.json" "$src/package-lock.json" "$dst/" || die "cannot fill $dst"
	# --ignore-scripts: no package's install script runs; --omit=dev: what the test loads only.
	if ! (cd "$dst" && timeout 300 npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
		--prefer-offline --cache "$cache" >"$dst/npm-ci.log" 2>&1); then
		tail -n 5 "$dst/npm-ci.log" >&2
		die "npm ci failed in $dst (log: $dst/npm-ci.log)"
	fi
	echo "$stamp" >"$dst/.stamp"
	have || die "npm ci left no mqtt $want in $dst/node_modules"
fi
echo "$dst"
