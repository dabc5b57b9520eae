#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make run: boot the urMQTT image in QEMU (KVM when a probe guest ran on it, TCG otherwise) with
# user-mode networking forwarding 127.0.0.1:${URMQTT_PORT:-8883} to the guest's 8883 (the
# broker: MQTT over TLS 1.3 with client certificates), show the serial console, and once
# the guest says it listens and has its address, print mosquitto_sub/mosquitto_pub command
# lines that work with the development certificates next to the image's build directory
# (BUILD_DIR/dev/certs, made by `make certs`, which building the image runs). Ctrl-C stops
# QEMU and the script. URMQTT_SMP / URMQTT_MEM choose vCPUs / MiB.
# The data disk BUILD_DIR/run/data.img (URMQTT_DISK_MB, default 256, sparse) is created when
# absent and attached as virtio-blk; the broker formats it on first boot and keeps its
# sessions, queued messages and retained messages there (docs/DURABILITY.md), so they
# survive a restart. Delete the file to start from nothing.
# URMQTT_NET=tap (root) boots instead with a TAP device inside a network namespace this
# script creates and removes (10.79.0.1/24 on the host side, the guest at 10.79.0.2 by the
# development command line's ip=): host tools then talk to our own TCP stack (user-mode
# networking ends TCP inside QEMU), and the printed command lines run in that namespace.
# An aarch64 image (BUILD_DIR/aarch64/urmqtt.img, `make run ARCH=aarch64`) boots on
# qemu-system-aarch64 -M virt (GICv3, -cpu max) under TCG.
# Usage: run.sh IMAGE   (IMAGE = BUILD_DIR/x86_64/urmqtt.elf or BUILD_DIR/aarch64/urmqtt.img)
set -uo pipefail
image=${1:?usage: run.sh IMAGE}
port=${URMQTT_PORT:-8883}
smp=${URMQTT_SMP:-2}
mem=${URMQTT_MEM:-256}
build=$(dirname "$(dirname "$image")")
certs=$build/dev/certs
ready_timeout=${URMQTT_READY_TIMEOUT:-120}
net=${URMQTT_NET:-user}
ns=""
guest=10.79.0.2

if [ ! -f "$image" ]; then
	echo "run.sh: no image at $image (make run builds it)" >&2
	exit 1
fi
for f in ca.crt dev-1.crt dev-1.key ops.crt ops.key; do
	[ -f "$certs/$f" ] || { echo "run.sh: missing $certs/$f (make certs)" >&2; exit 1; }
done
case $net in
user | tap) ;;
*) echo "run.sh: URMQTT_NET=$net: want user (default) or tap" >&2; exit 1 ;;
esac
if [ "$net" = tap ]; then
	if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
		echo "run.sh: URMQTT_NET=tap needs root and iproute2 (a network namespace with a TAP device)" >&2
		exit 1
	fi
	ns=urmqtt-run-$$
	if ! { ip netns add "$ns" && ip -n "$ns" link set lo up &&
		ip -n "$ns" tuntap add dev tapur0 mode tap && ip -n "$ns" addr add 10.79.0.1/24 dev tapur0 &&
		ip -n "$ns" link set tapur0 up; }; then
		ip netns del "$ns" 2>/dev/null
		echo "run.sh: cannot create network namespace $ns with a TAP device (/dev/net/tun?)" >&2
		exit 1
	fi
fi
# KVM only after a probe guest ran on it (make run decides and exports URMQTT_ACCEL; the
# reason was printed then), else TCG.
# shellcheck source=tools/accel/accel.sh
. "$(dirname "$0")/../accel/accel.sh"
if [ "$(basename "$(dirname "$image")")" = aarch64 ]; then
	machine=(qemu-system-aarch64 -M virt,gic-version=3 -cpu max)
	how="TCG (aarch64 on this host)"
else
	accel_select "$build" || exit 2
	machine=(qemu-system-x86_64 -M q35 "${accel[@]}")
	how=${accel_mode^^}
fi

logdir=$build/run
mkdir -p "$logdir"
disk=$logdir/data.img
if [ ! -f "$disk" ]; then
	truncate -s "${URMQTT_DISK_MB:-256}M" "$disk" || { echo "run.sh: cannot create $disk" >&2; exit 1; }
	echo "urMQTT: created data disk $disk (${URMQTT_DISK_MB:-256} MiB, sparse)"
fi
log=$logdir/serial.log
: >"$log"
qpid=""
tpid=""
stop() {
	trap - INT TERM EXIT
	[ -n "$qpid" ] && kill -TERM "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null
	[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
	echo
	echo "urMQTT: stopped (serial log kept in $log)"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

echo "urMQTT: booting $image with $smp vCPU(s), $mem MiB, $how; serial console below" \
	"(also in $log), Ctrl-C stops."
# Background jobs of a script ignore SIGINT: Ctrl-C reaches the trap above, which stops
# QEMU with SIGTERM (QEMU exits cleanly on it).
if [ "$net" = tap ]; then
	inns=(ip netns exec "$ns")
	netdev=(-netdev "tap,id=n0,ifname=tapur0,script=no,downscript=no")
	append=(-append "ip=$guest/24 gw=10.79.0.1")
	host=$guest; port=8883
else
	inns=()
	netdev=(-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883")
	append=()
	host=127.0.0.1
fi
"${inns[@]}" "${machine[@]}" -m "$mem" -smp "$smp" -display none -no-reboot \
	-nodefaults -serial stdio "${netdev[@]}" -device virtio-net-pci,netdev=n0,romfile= \
	-drive "file=$disk,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 \
	-kernel "$image" "${append[@]}" </dev/null >"$log" 2>&1 &
qpid=$!
tail -n +1 -f --pid="$qpid" "$log" &
tpid=$!

ready=0
for ((i = 0; i < ready_timeout * 5; i++)); do
	if grep -aq "listening on TCP 8883" "$log" && grep -aEq "DHCP lease: |static address: " "$log"; then
		ready=1
		break
	fi
	kill -0 "$qpid" 2>/dev/null || break
	sleep 0.2
done
if [ $ready = 1 ]; then
	sleep 0.3 # let the console lines above come out first
	tls="--cafile $certs/ca.crt"
	pre=""
	[ "$net" = tap ] && pre="ip netns exec $ns "
	cat <<MSG

================================================================================
urMQTT is ready on $host:$port (MQTT 3.1.1 over TLS 1.3, client certificates).
In one terminal, device dev-1 waits for commands:
  ${pre}mosquitto_sub -h $host -p $port $tls --cert $certs/dev-1.crt --key $certs/dev-1.key -i dev-1 -t 'devices/dev-1/cmd/#' -q 1 -v
In another, the service identity ops sends one:
  ${pre}mosquitto_pub -h $host -p $port $tls --cert $certs/ops.crt --key $certs/ops.key -i ops -t devices/dev-1/cmd/reboot -m now -q 1
Every 10 s the console shows "broker: core 0: conns=..." (heap per connection) and, with a data
disk, "store: state=..." (commits, latency). Sessions, queued and retained messages are kept on
$disk across restarts (delete the file to start from nothing).
================================================================================

MSG
	if [ "$net" = tap ]; then
		cat <<MSG
Our own TCP stack is at $guest inside network namespace $ns (host side 10.79.0.1/tapur0),
for host tools, for example:
  ip netns exec $ns ping -c 3 $guest
  ip netns exec $ns python3 -c 'import socket; socket.create_connection(("$guest", 8883)).close()'
The namespace is removed when this script stops.

MSG
	fi
elif kill -0 "$qpid" 2>/dev/null; then
	echo "run.sh: the guest did not report a listening broker with an address within ${ready_timeout}s" >&2
else
	wait "$qpid"
	rc=$?
	qpid=""
	echo "run.sh: QEMU exited ($rc) before the broker was ready (port $port in use?)" >&2
	exit 1
fi
wait "$qpid"
rc=$?
qpid=""
exit $rc
