#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Storage end to end in the hosted broker: build/hosted/urmqtt --broker --disk FILE (the
# data plane and the storage service of the image, on our TCP, under ASan/UBSan) on a TAP
# device inside a network namespace of its own, killed with SIGKILL under QoS 1 load and
# started again on the same disk file. The scenarios are tests/smoke/lib/store-scenarios.sh
# (shared with x86_64-store.sh); here also:
#   hosted-store/sanitizers   no ASan/UBSan report in any run's output
# Every wait is bounded; the namespace and every process die on exit.
# Usage: hosted-store.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
bin=$build/hosted/urmqtt
certs=$build/dev/certs
here=$(cd "$(dirname "$0")" && pwd)
helper=$here/lib/mqtt-client.py
ns=urmqtt-store-$$
tap=ustap0
lin_ip=10.79.0.1
our_ip=10.79.0.2
port=8883
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/urmqtt-hosted-store.XXXXXX)
logs=$build/test-logs/hosted-store
mkdir -p "$logs"
rm -f "$logs"/broker-*.log
load_s=2
queue_len=100 # offline_queue_len of config/dev.conf
disktool=$build/host/tools/urmqtt-disk
broker_pid=""
boots=0
console=""
bg_pids=()
failed=0

pass() { echo "PASS hosted-store/$1${2:+ ($2)}"; }
fail() { echo "FAIL hosted-store/$1${2:+ ($2)}"; failed=1; }
in_ns() { ip netns exec "$ns" "$@"; }

cleanup() {
	trap - EXIT INT TERM
	for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done # timeout passes it on
	if [ -n "$broker_pid" ]; then
		kill -KILL "$broker_pid" 2>/dev/null
		wait "$broker_pid" 2>/dev/null
	fi
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in mosquitto_pub timeout mkfs.ext4 sha256sum; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
[ -x "$bin" ] && [ -f "$certs/ca.crt" ] || { fail setup "need $bin and make certs"; exit 1; }
if [ "$(id -u)" != 0 ]; then fail setup "needs root (network namespace)"; exit 1; fi

ip netns add "$ns" || { fail setup "ip netns add"; exit 1; }
in_ns ip link set lo up
in_ns ip tuntap add dev "$tap" mode tap || { fail setup "tuntap"; exit 1; }
in_ns ip addr add "$lin_ip/24" dev "$tap"
in_ns ip link set "$tap" up

# ---- the transport of lib/store-scenarios.sh
broker_start() { # DISK
	boots=$((boots + 1))
	console=$logs/broker-$boots.log
	: >"$console" # exists before the first poll below
	# Not through a shell function: $! must be the broker itself (ip netns exec execs it).
	ip netns exec "$ns" "$bin" --tap "$tap" --ip "$our_ip/24" --broker --broker-stats-ms 2000 --stats-ms 0 \
		--disk "$1" >"$console" 2>&1 &
	broker_pid=$!
	local i
	for ((i = 0; i < 150; i++)); do
		grep -qE "^store: (restored |.*serving WITHOUT persistence)" "$console" && break
		kill -0 "$broker_pid" 2>/dev/null || break
		sleep 0.2
	done
	grep -qE "^store: (restored |.*serving WITHOUT persistence)" "$console" || { tail -n 5 "$console"; return 1; }
	in_ns ping -c 1 -W 2 "$our_ip" >/dev/null 2>&1 # Linux learns our MAC before the first handshake
	return 0
}
broker_end() { # SIGNAL
	[ -n "$broker_pid" ] || return 0
	kill "-$1" "$broker_pid" 2>/dev/null
	local i
	for ((i = 0; i < 100; i++)); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$broker_pid" 2>/dev/null
	{ wait "$broker_pid"; } 2>/dev/null # (no "Killed" notice from the shell)
	broker_pid=""
}
broker_kill() { broker_end KILL; }
broker_stop() { broker_end TERM; }
client() { MQTT_CLIENT_TIMEOUT=${MQTT_CLIENT_TIMEOUT:-15} timeout 60 ip netns exec "$ns" "$py" "$helper" "$our_ip" "$port" "$certs" "$@"; }
client_bg() { # OUT ARGS...
	local out=$1
	shift
	MQTT_CLIENT_TIMEOUT=${MQTT_CLIENT_TIMEOUT:-15} timeout 120 ip netns exec "$ns" "$py" "$helper" "$our_ip" "$port" \
		"$certs" "$@" >"$out" 2>&1 &
	client_pid=$!
	bg_pids+=($client_pid)
}
pub() { # NAME ARGS...
	local name=$1
	shift
	timeout 30 ip netns exec "$ns" mosquitto_pub -h "$our_ip" -p "$port" --insecure --cafile "$certs/ca.crt" \
		--cert "$certs/$name.crt" --key "$certs/$name.key" -i "$name" -d "$@" 2>&1
}

# shellcheck source=tests/smoke/lib/store-scenarios.sh
. "$here/lib/store-scenarios.sh"
store_scenarios
broker_stop

if grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$logs"/broker-*.log >/dev/null 2>&1; then
	fail sanitizers "$(grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$logs"/broker-*.log | tr '\n' ' ')"
else
	pass sanitizers "$boots runs, no report"
fi
exit $failed
