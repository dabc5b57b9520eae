#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make run-hosted: the broker as a Linux process (build/hosted/urmqtt --broker, under
# ASan/UBSan) on a TAP device inside a network namespace this script creates, with the
# TAP's Linux side 10.79.0.1/24 inside that namespace only. Prints the mosquitto command
# lines that work against it (development certificates of BUILD_DIR/dev/certs), shows
# the broker's log, and on Ctrl-C (or when the broker exits) stops it and deletes the
# namespace. Never touches the root namespace's network. Needs root. The broker keeps its
# sessions, queued and retained messages on BUILD_DIR/run/hosted-data.img (256 MiB, sparse,
# formatted on first use; URMQTT_HOSTED_DISK names another file), as the image does on its
# data disk.
# Usage: hosted/run-hosted.sh BUILD_DIR [extra urmqtt options...]
set -uo pipefail
build=${1:-build}
shift || true
bin=$build/hosted/urmqtt
certs=$build/dev/certs
ns=urmqtt-run-$$
tap=urtap0
lin_ip=10.79.0.1
our_ip=10.79.0.2
port=8883
pid=""

[ "$(id -u)" = 0 ] || { echo "run-hosted: needs root (network namespace, TAP device)" >&2; exit 1; }
[ -x "$bin" ] || { echo "run-hosted: $bin missing (make run-hosted builds it)" >&2; exit 1; }
[ -f "$certs/ca.crt" ] || { echo "run-hosted: $certs missing (make certs)" >&2; exit 1; }

cleanup() {
	trap - EXIT INT TERM
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null
	fi
	[ -n "$pid" ] && wait "$pid" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
	echo "run-hosted: stopped, namespace $ns deleted"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$ns" || exit 1
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" ip tuntap add dev "$tap" mode tap || exit 1
ip netns exec "$ns" ip addr add "$lin_ip/24" dev "$tap"
ip netns exec "$ns" ip link set "$tap" up

disk=${URMQTT_HOSTED_DISK:-$build/run/hosted-data.img}
mkdir -p "$(dirname "$disk")"
ip netns exec "$ns" "$bin" --tap "$tap" --ip "$our_ip/24" --broker --stats-ms 0 --disk "$disk" --disk-mib 256 "$@" &
pid=$!
for _ in $(seq 50); do
	ip netns exec "$ns" ping -c 1 -W 1 "$our_ip" >/dev/null 2>&1 && break
	kill -0 "$pid" 2>/dev/null || { echo "run-hosted: the broker exited" >&2; exit 1; }
done
# The development server certificate names this address too (tools/certs/mkcerts.sh).
c="--cafile $certs/ca.crt"
cat <<MSG

run-hosted: the broker listens on $our_ip:$port in network namespace $ns. In another terminal:

  ip netns exec $ns mosquitto_sub -h $our_ip -p $port $c --cert $certs/dev-1.crt --key $certs/dev-1.key -i dev-1 -t 'devices/dev-1/cmd/#' -v

  ip netns exec $ns mosquitto_pub -h $our_ip -p $port $c --cert $certs/ops.crt --key $certs/ops.key -i ops -t devices/dev-1/cmd/hello -m 'hello dev-1' -q 1

  ip netns exec $ns mosquitto_sub -h $our_ip -p $port $c --cert $certs/ops.crt --key $certs/ops.key -i ops -t 'devices/+/telemetry' -v
  ip netns exec $ns mosquitto_pub -h $our_ip -p $port $c --cert $certs/dev-1.crt --key $certs/dev-1.key -i dev-1 -t devices/dev-1/telemetry -m 't=21.5' -q 1

Ctrl-C stops the broker and deletes the namespace.
MSG
wait "$pid"
rc=$?
pid=""
exit $rc
