#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make run: boot the urMQTT image in QEMU (KVM when /dev/kvm works, TCG otherwise) with
# user-mode networking forwarding 127.0.0.1:${URMQTT_PORT:-8883} to the guest's 8883 (the
# broker: MQTT over TLS 1.3 with client certificates), show the serial console, and once
# the guest says it listens and has its address, print mosquitto_sub/mosquitto_pub command
# lines that work with the development certificates next to the image's build directory
# (BUILD_DIR/dev/certs, made by `make certs`, which building the image runs). Ctrl-C stops
# QEMU and the script. URMQTT_SMP / URMQTT_MEM choose vCPUs / MiB.
# Usage: run.sh IMAGE   (IMAGE = BUILD_DIR/x86_64/urmqtt.elf)
set -uo pipefail
image=${1:?usage: run.sh IMAGE}
port=${URMQTT_PORT:-8883}
smp=${URMQTT_SMP:-2}
mem=${URMQTT_MEM:-256}
build=$(dirname "$(dirname "$image")")
certs=$build/dev/certs
ready_timeout=${URMQTT_READY_TIMEOUT:-120}

if [ ! -f "$image" ]; then
	echo "run.sh: no image at $image (make run builds it)" >&2
	exit 1
fi
for f in ca.crt dev-1.crt dev-1.key ops.crt ops.key; do
	[ -f "$certs/$f" ] || { echo "run.sh: missing $certs/$f (make certs)" >&2; exit 1; }
done
if [ -c /dev/kvm ] && [ -w /dev/kvm ] && (exec 3</dev/kvm) 2>/dev/null; then
	accel=(-enable-kvm -cpu host,-arch-capabilities); how=KVM
else
	accel=(-accel tcg -cpu max); how="TCG (no usable /dev/kvm)"
fi

logdir=$build/run
mkdir -p "$logdir"
log=$logdir/serial.log
: >"$log"
qpid=""
tpid=""
stop() {
	trap - INT TERM EXIT
	[ -n "$qpid" ] && kill -TERM "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	[ -n "$tpid" ] && kill "$tpid" 2>/dev/null && wait "$tpid" 2>/dev/null
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
qemu-system-x86_64 -M q35 "${accel[@]}" -m "$mem" -smp "$smp" -display none -no-reboot \
	-nodefaults -serial stdio \
	-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" -device virtio-net-pci,netdev=n0,romfile= \
	-kernel "$image" </dev/null >"$log" 2>&1 &
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
	cat <<MSG

================================================================================
urMQTT is ready on 127.0.0.1:$port (MQTT 3.1.1 over TLS 1.3, client certificates).
In one terminal, device dev-1 waits for commands:
  mosquitto_sub -h 127.0.0.1 -p $port $tls --cert $certs/dev-1.crt --key $certs/dev-1.key -i dev-1 -t 'devices/dev-1/cmd/#' -q 1 -v
In another, the service identity ops sends one:
  mosquitto_pub -h 127.0.0.1 -p $port $tls --cert $certs/ops.crt --key $certs/ops.key -i ops -t devices/dev-1/cmd/reboot -m now -q 1
Every 10 s the console shows "broker: core 0: conns=..." (heap per connection).
================================================================================

MSG
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
