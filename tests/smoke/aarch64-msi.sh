#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MSI on aarch64: boots BUILD_DIR/aarch64/urmqtt.img under qemu-system-aarch64 -M virt (TCG)
# with a 16 MiB virtio-blk disk and a QMP socket, once with GICv2 (MSIs through the GICv2m
# frame: SPIs) and once with GICv3 (through the ITS: LPIs). The disk's configuration
# change is signalled only by its MSI-X vector (a disk with a working vector is not polled):
# QMP block_resize to 32 MiB must make the guest log the growth and pass the read test on
# the new last 4 KiB, which proves the message reached core 0 through the interrupt
# controller. No NIC: the node is not built, so storage leaves the disk to the read test.
# One "PASS|FAIL aarch64-msi/<gic>" line each; every boot bounded by a timeout.
set -uo pipefail
build=${1:-build}
img=$build/aarch64/urmqtt.img
here=$(cd "$(dirname "$0")" && pwd)
logdir=$build/test-logs/aarch64-msi
mkdir -p "$logdir"
failed=0
[ -f "$img" ] || { echo "FAIL aarch64-msi/image (missing $img)"; exit 1; }

wait_log() { # LOG PATTERN PID SECONDS
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		tr -d '\r' <"$1" | grep -Eq -- "$2" && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

for case in "gicv2m|virt,gic-version=2|GICv2m" "its|virt,gic-version=3|GICv3 ITS"; do
	IFS='|' read -r name machine how <<<"$case"
	log=$logdir/$name.log
	disk=$logdir/$name.img
	sock=$logdir/$name.qmp
	rm -f "$disk" "$sock"
	: >"$log"
	truncate -s 16M "$disk"
	timeout 60 qemu-system-aarch64 -M "$machine" -cpu max -smp 1 -m 256 -nographic -no-reboot -nodefaults \
		-serial stdio -qmp "unix:$sock,server=on,wait=off" \
		-drive "file=$disk,format=raw,if=none,id=g0" -device virtio-blk-pci,drive=g0 \
		-kernel "$img" </dev/null >>"$log" 2>&1 &
	qpid=$!
	why=""
	if ! wait_log "$log" "bring-up done" "$qpid" 30; then
		why="no boot to the loop"
	elif ! grep -aq "MSI: $how" "$log"; then
		why="the banner does not name MSI through $how"
	elif ! grep -aq "virtio-blk0: features 0x[0-9a-f]*; configuration changes by MSI-X to core 0" "$log"; then
		why="the disk's configuration vector was not programmed"
	elif ! timeout 20 python3 "$here/lib/qmp.py" "$sock" block_resize '{"device": "g0", "size": 33554432}' \
		>"$log.qmp" 2>&1; then
		why="QMP block_resize failed"
	elif ! wait_log "$log" "virtio-blk0: capacity grew from 32768 to 65536 sectors" "$qpid" 10; then
		why="no growth logged: the MSI did not arrive"
	elif ! wait_log "$log" "virtio-blk0: block read test on the new last 4 KiB \\(block 65528\\): PASS" "$qpid" 10; then
		why="no read test on the new end"
	fi
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	rm -f "$disk" "$sock"
	if [ -z "$why" ]; then
		echo "PASS aarch64-msi/$name (16 -> 32 MiB signalled by MSI-X through $how, read test PASS on the new end)"
	else
		echo "FAIL aarch64-msi/$name ($why); see $log"
		tail -n 5 "$log" | sed 's/^/    | /'
		failed=1
	fi
done
exit $failed
