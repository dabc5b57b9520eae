#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The memory figures of docs/ARCHITECTURE.md (Memory), proved from outside the broker: the
# development image booted twice, with max_connections=1024 and =4096 (every table sized by
# tcp.max_connections follows), 1 data core and the storage core. Results:
#   x86_64-memory/slot-from-outside  the free page frames the banner counts differ by what
#                                    the broker's own line says a connection slot costs
#                                    (kernel/node/broker.c: "N B per connection slot"), times
#                                    the 3,072 slots between the two boots, within 2 %
#   x86_64-memory/slot-budget        that slot figure within its budget (SLOT_BUDGET_B)
#   x86_64-memory/core-unchanged     the per-core figure is the same at both sizes (it does
#                                    not scale with the connection count)
# Usage: x86_64-memory.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
img=$build/x86_64/urmqtt.elf
here=$(cd "$(dirname "$0")" && pwd)
tag=x86_64-memory
logs=$build/test-logs/$tag
mkdir -p "$logs"
tmp=$(mktemp -d /tmp/urmqtt-x86-mem.XXXXXX)
# Budget of the tables per connection slot (TCP control block and slot, send references,
# pending acknowledgement, dp record, MQTT connection record, rate bucket share): what "a few
# hundred bytes per idle device" leaves after the heap an open connection holds.
SLOT_BUDGET_B=448
failed=0

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}"; failed=1; }
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

[ -f "$img" ] || { fail setup "need $img (make kernels)"; exit 1; }
# shellcheck source=tools/accel/accel.sh
. "$here/../../tools/accel/accel.sh"
accel_select "$build" || { echo "FAIL $tag/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }

# boot_figures N: boots with max_connections=N until the banner's page frames line (60 s at
# most: the loop bounds it and kills QEMU itself, no wrapper that would outlive it), then
# prints "<free frames> <slot bytes> <core KiB>" (empty fields when missing).
boot_figures() {
	local log=$logs/guest-$1.log disk=$tmp/disk-$1.img
	truncate -s 64M "$disk"
	qemu-system-x86_64 -M q35 "${accel[@]}" -m 512M -smp 2 -display none -no-reboot -nodefaults \
		-serial stdio -kernel "$img" -append "max_connections=$1" \
		-netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile= \
		-drive file="$disk",format=raw,if=none,id=d0 -device virtio-blk-pci,drive=d0 \
		</dev/null >"$log" 2>&1 &
	local q=$! i
	for ((i = 0; i < 300; i++)); do
		grep -aq "boot: page frames: " "$log" && break
		kill -0 "$q" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL "$q" 2>/dev/null
	wait "$q" 2>/dev/null
	local free slot core
	free=$(tr -d '\r' <"$log" | sed -n 's/.*boot: page frames: \([0-9]*\) of .*/\1/p' | head -n 1)
	slot=$(tr -d '\r' <"$log" | sed -n 's/.*broker: core 0: memory: \([0-9]*\) B per connection slot.*/\1/p' | head -n 1)
	core=$(tr -d '\r' <"$log" | sed -n 's/.*slots: [0-9]* KiB), \([0-9]*\) KiB per core besides.*/\1/p' | head -n 1)
	echo "${free:-} ${slot:-} ${core:-}"
}

read -r free_s slot_s core_s < <(boot_figures 1024)
read -r free_l slot_l core_l < <(boot_figures 4096)
if [ -z "$free_s" ] || [ -z "$free_l" ] || [ -z "$slot_l" ]; then
	fail slot-from-outside "figures missing: free '$free_s'/'$free_l', slot '$slot_s'/'$slot_l' (see $logs)"
else
	delta=$(((free_s - free_l) * 4096))
	outside=$((delta / 3072))
	# within 2 %: each region is rounded up to whole pages
	if [ "$slot_s" = "$slot_l" ] && [ $((outside * 100)) -ge $((slot_l * 98)) ] && [ $((outside * 100)) -le $((slot_l * 102)) ]; then
		pass slot-from-outside "free frames $free_s at 1,024 slots, $free_l at 4,096: $delta B for 3,072 slots = $outside B each; the broker says $slot_l B"
	else
		fail slot-from-outside "free frames $free_s/$free_l: $outside B per slot from outside; the broker says $slot_s/$slot_l B"
	fi
	if [ "$slot_l" -le "$SLOT_BUDGET_B" ]; then
		pass slot-budget "$slot_l B per connection slot (budget $SLOT_BUDGET_B B)"
	else
		fail slot-budget "$slot_l B per connection slot, over the budget of $SLOT_BUDGET_B B"
	fi
	if [ -n "$core_s" ] && [ "$core_s" = "$core_l" ]; then
		pass core-unchanged "$core_l KiB per core besides the slots, at both sizes"
	else
		fail core-unchanged "per core '$core_s' KiB at 1,024 slots, '$core_l' KiB at 4,096"
	fi
fi
exit $failed
