#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Storage end to end in the x86_64 image: boots BUILD_DIR/x86_64/urmqtt.elf (the product
# boot) on QEMU q35 (KVM when a probe guest ran on it, TCG otherwise) with a virtio-blk data
# disk, X86_64_STORE_SMP cores (default 2: one data core, the storage core), user-mode
# networking forwarding a free host port on 127.0.0.1 to the guest's 8883; kills QEMU with
# SIGKILL under QoS 1 load and boots again on the same disk file. The scenarios are
# tests/smoke/lib/store-scenarios.sh (shared with hosted-store.sh); here also:
#   x86_64-store/storage-core   the console names the storage core (the highest core with
#                               several, core 0's loop with one)
#   x86_64-store/required-foreign  with storage_required=1 (storage.required = true, as in
#                               prod) the ext4 disk stops the machine with the reason; unwritten
#   x86_64-store/required-no-disk  the same without any data disk
# Every wait is bounded; QEMU and every client die on exit. ~1-2 min on TCG.
# X86_64_STORE_TAG names the results (x86_64-store). X86_64_STORE_ARCH=aarch64 runs the same
# on BUILD_DIR/aarch64/urmqtt.img (qemu-system-aarch64 -M virt, GICv3, -cpu max, TCG;
# tests/smoke/aarch64-store.sh).
# Usage: x86_64-store.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
arch=${X86_64_STORE_ARCH:-x86_64}
img=$build/x86_64/urmqtt.elf
[ "$arch" = aarch64 ] && img=$build/aarch64/urmqtt.img
certs=$build/dev/certs
here=$(cd "$(dirname "$0")" && pwd)
helper=$here/lib/mqtt-client.py
smp=${X86_64_STORE_SMP:-2}
tag=${X86_64_STORE_TAG:-x86_64-store}
py=/usr/bin/python3
logs=$build/test-logs/$tag
mkdir -p "$logs"
rm -f "$logs"/guest-*.log
tmp=$(mktemp -d /tmp/urmqtt-x86-store.XXXXXX)
load_s=4
queue_len=100 # offline_queue_len of config/dev.conf
disktool=$build/host/tools/urmqtt-disk
qpid=""
boots=0
console=""
bg_pids=()
failed=0

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}${console:+; see $console}"; failed=1; }
say() { echo "$tag: $*"; }

cleanup() {
	trap - EXIT INT TERM
	for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	if [ -n "$qpid" ]; then
		kill -KILL "$qpid" 2>/dev/null
		{ wait "$qpid"; } 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in qemu-system-$arch mosquitto_pub timeout mkfs.ext4 sha256sum; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
[ -f "$img" ] && [ -f "$certs/ca.crt" ] || { fail setup "need $img and make certs"; exit 1; }
# shellcheck source=tools/accel/accel.sh
. "$here/../../tools/accel/accel.sh"
if [ "$arch" = aarch64 ]; then
	accel_mode=tcg # an x86_64 host: aarch64 runs under TCG only
	machine=(qemu-system-aarch64 -M virt,gic-version=3 -cpu max)
	stop_dev=() # the machine stops itself through PSCI SYSTEM_OFF
else
	accel_select "$build" || { echo "FAIL $tag/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
	machine=(qemu-system-x86_64 -M q35 "${accel[@]}")
	stop_dev=(-device isa-debug-exit,iobase=0xf4,iosize=0x04)
fi
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
say "$accel_mode, $smp core(s), guest 8883 at 127.0.0.1:$port"

# ---- the transport of lib/store-scenarios.sh
served='store: .*(restored [0-9]+ records|serving WITHOUT persistence)'
broker_start() { # DISK
	boots=$((boots + 1))
	console=$logs/guest-$boots.log
	: >"$console" # exists before the first poll below
	# QEMU itself in $qpid (no timeout wrapper): broker_kill must SIGKILL QEMU, and the
	# script's own waits bound its life.
	"${machine[@]}" -m 256M -smp "$smp" -display none -no-reboot -nodefaults \
		-serial stdio -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" \
		-device virtio-net-pci,netdev=n0,romfile= \
		-drive "file=$1,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 \
		-kernel "$img" </dev/null >"$console" 2>&1 &
	qpid=$!
	local i
	for ((i = 0; i < 600; i++)); do
		if tr -d '\r' <"$console" | grep -aqE "$served" && grep -aq "DHCP lease: " "$console" &&
			grep -aq "listening on TCP 8883" "$console"; then
			return 0
		fi
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.2
	done
	tail -n 5 "$console"
	return 1
}
broker_kill() {
	[ -n "$qpid" ] || return 0
	kill -KILL "$qpid" 2>/dev/null
	{ wait "$qpid"; } 2>/dev/null
	qpid=""
}
broker_stop() { broker_kill; } # the image has no shutdown: every stop is a crash to it
client() { MQTT_CLIENT_TIMEOUT=${MQTT_CLIENT_TIMEOUT:-30} timeout 90 "$py" "$helper" 127.0.0.1 "$port" "$certs" "$@"; }
client_bg() { # OUT ARGS...
	local out=$1
	shift
	MQTT_CLIENT_TIMEOUT=${MQTT_CLIENT_TIMEOUT:-30} timeout 180 "$py" "$helper" 127.0.0.1 "$port" "$certs" "$@" \
		>"$out" 2>&1 &
	client_pid=$!
	bg_pids+=($client_pid)
}
pub() { # NAME ARGS...
	local name=$1
	shift
	timeout 60 mosquitto_pub -h 127.0.0.1 -p "$port" --cafile "$certs/ca.crt" --cert "$certs/$name.crt" \
		--key "$certs/$name.key" -i "$name" -d "$@" 2>&1
}

# required_boot NAME DRIVE_ARGS...: boot with storage_required=1 (what storage.required = true
# does in a prod image) and the isa-debug-exit device; 0 when the machine stopped by itself
# within 120 s (its console in $console)
required_boot() {
	boots=$((boots + 1))
	console=$logs/guest-$boots-$1.log
	shift
	: >"$console"
	timeout 120 "${machine[@]}" -m 256M -smp "$smp" -display none -no-reboot -nodefaults \
		-serial stdio "${stop_dev[@]}" -netdev user,id=n0 \
		-device virtio-net-pci,netdev=n0,romfile= "$@" -kernel "$img" -append "storage_required=1" \
		</dev/null >"$console" 2>&1
	[ $? -ne 124 ]
}

# shellcheck source=tests/smoke/lib/store-scenarios.sh
. "$here/lib/store-scenarios.sh"
store_scenarios
broker_stop

# storage.required: a foreign disk or no disk stops the machine with the reason (the
# foreign disk still unwritten).
foreign=$tmp/foreign.img
if [ ! -f "$foreign" ]; then
	fail required-foreign "no foreign disk from the scenarios"
else
	before=$(sha256sum <"$foreign")
	if ! required_boot foreign -drive "file=$foreign,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0; then
		fail required-foreign "the machine did not stop within 120 s"
	elif line=$(tr -d '\r' <"$console" | grep -a "PANIC: storage is required (storage.required) but unusable: virtio-blk0: the disk holds an ext2/3/4") &&
		[ "$before" = "$(sha256sum <"$foreign")" ]; then
		pass required-foreign "${line##*PANIC: }; sha256 unchanged"
	else
		fail required-foreign "no PANIC naming the ext4 disk, or the disk changed"
	fi
fi
if ! required_boot nodisk; then
	fail required-no-disk "the machine did not stop within 120 s"
elif line=$(tr -d '\r' <"$console" | grep -a "PANIC: storage is required (storage.required) but unusable: this machine has no data disk"); then
	pass required-no-disk "${line##*PANIC: }"
else
	fail required-no-disk "no PANIC naming the missing disk"
fi

console=$logs/guest-1.log
want="storage: virtio-blk0, run by core $((smp - 1))"
[ "$smp" = 1 ] && want="storage: virtio-blk0, run by core 0 from its loop"
if line=$(tr -d '\r' <"$console" | grep -a "storage: virtio-blk0, run by core" | head -n 1) && [[ $line == *"$want"* ]]; then
	pass storage-core "${line##*storage: }"
else
	fail storage-core "want '$want', got '${line:-nothing}'"
fi
exit $failed
