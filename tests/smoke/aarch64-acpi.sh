#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The aarch64 image booted two ways on the same QEMU machine (-M virt, GICv3 then GICv2, 2 cores,
# 512 MiB, TCG; ADR-076): once as an arm64 Image with a device tree (-kernel), once as an
# EFI application through the UEFI firmware (qemu-efi-aarch64's QEMU_EFI.fd, which loads
# the same file given to -kernel through its PE header and hands it ACPI tables, no device
# tree). Each development boot prints its struct platform as one canonical line
# ("platform-line: key=value ..."); the two lines must be identical, and a difference is
# reported field by field. Then the UEFI boot at EL2 (virtualization=on: PSCI over SMC)
# and the UEFI boot of the broker itself, which must reach its serving line and take a
# device's QoS 1 publish over mTLS. One "PASS|FAIL|SKIP aarch64-acpi/<case>" line each.
# Usage: aarch64-acpi.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
tag=aarch64-acpi
img=$build/aarch64/urmqtt.img
fw=${AARCH64_EFI_FIRMWARE:-/usr/share/qemu-efi-aarch64/QEMU_EFI.fd}
certs=$build/dev/certs
logdir=$build/test-logs/$tag
mkdir -p "$logdir"
timeout_s=${AARCH64_ACPI_TIMEOUT:-60}

if [ ! -f "$img" ]; then
	echo "FAIL $tag/image (missing $img)"
	exit 1
fi
if ! command -v qemu-system-aarch64 >/dev/null; then
	echo "SKIP $tag/dtb-vs-acpi (needs command qemu-system-aarch64)"
	exit 0
fi
if [ ! -f "$fw" ]; then
	echo "SKIP $tag/dtb-vs-acpi (needs file $fw: Debian package qemu-efi-aarch64)"
	exit 0
fi
rc_all=0
fail() { echo "FAIL $tag/$1${2:+ ($2)}"; rc_all=1; }
pass() { echo "PASS $tag/$1${2:+ ($2)}"; }

# boot NAME MACHINE [qemu args...]: a powering-off boot, its log in $logdir/NAME.log
boot() {
	local name=$1 machine=$2
	shift 2
	timeout "$timeout_s" qemu-system-aarch64 -M "$machine" -cpu max -smp 2 -m 512 -nographic -no-reboot \
		-nodefaults -serial stdio "$@" -kernel "$img" -append "poweroff" </dev/null >"$logdir/$name.log" 2>&1
}
line_of() { grep -a -m1 '^platform-line: ' "$logdir/$1.log" | sed 's/^platform-line: //; s/\r$//'; }

# compare GIC: the two boots of virt,gic-version=GIC, their lines field by field.
compare() {
	local g=$1 name=dtb-vs-acpi-gicv$1
	boot "dtb-v$g" "virt,gic-version=$g" &
	local p1=$!
	boot "uefi-v$g" "virt,gic-version=$g" -bios "$fw" &
	local p2=$!
	wait $p1; local r1=$?
	wait $p2; local r2=$?
	local dtb uefi
	dtb=$(line_of "dtb-v$g")
	uefi=$(line_of "uefi-v$g")
	if [ $r1 != 0 ] || [ -z "$dtb" ]; then
		fail "$name" "the -kernel boot (device tree) exited $r1 without a platform line; see $logdir/dtb-v$g.log"
	elif [ $r2 != 0 ] || [ -z "$uefi" ]; then
		fail "$name" "the UEFI boot (ACPI) exited $r2 without a platform line; see $logdir/uefi-v$g.log"
	elif ! grep -aq "platform (ACPI tables)" "$logdir/uefi-v$g.log"; then
		fail "$name" "the UEFI boot did not take its platform from ACPI; see $logdir/uefi-v$g.log"
	elif [ "$dtb" != "$uefi" ]; then
		local diffs="" a b i fd fa
		read -r -a fd <<<"$dtb"
		read -r -a fa <<<"$uefi"
		for i in $(seq 0 $((${#fd[@]} > ${#fa[@]} ? ${#fd[@]} - 1 : ${#fa[@]} - 1))); do
			a=${fd[$i]:-}; b=${fa[$i]:-}
			[ "$a" = "$b" ] || diffs+="${diffs:+; }${a%%=*}: device tree ${a#*=}, ACPI ${b#*=}"
		done
		fail "$name" "$diffs"
	else
		pass "$name" "$(echo "$dtb" | cut -d' ' -f1-3) ... identical"
	fi
}
compare 3
compare 2
if grep -aq "bring-up done" "$logdir/uefi-v3.log" && grep -aq "W^X audit: PASS" "$logdir/uefi-v3.log"; then
	pass uefi-boot "$(grep -a -o 'memory: [0-9]* MiB in [0-9]* range(s)' "$logdir/uefi-v3.log") from the UEFI map"
else
	fail uefi-boot "no audited bring-up through UEFI; see $logdir/uefi-v3.log"
fi

# ---- EL2: the firmware runs at EL2 and hands over there; PSCI is then over SMC.
boot uefi-el2 virt,gic-version=3,virtualization=on -bios "$fw"
r=$?
if [ $r = 0 ] && grep -aq "entered at EL2, running at EL1" "$logdir/uefi-el2.log" &&
	grep -aq "cpus: 2 started of 2 in the ACPI tables" "$logdir/uefi-el2.log" &&
	line_of uefi-el2 | grep -q "psci=smc"; then
	pass uefi-el2 "entered at EL2, PSCI over SMC, 2 cores"
else
	fail uefi-el2 "QEMU exited $r; see $logdir/uefi-el2.log"
fi

# ---- the broker through UEFI: its serving line, then one device publish at QoS 1.
log=$logdir/uefi-broker.log
if ! command -v mosquitto_pub >/dev/null || [ ! -f "$certs/dev-1.crt" ]; then
	fail uefi-broker "needs mosquitto_pub and $certs (make certs)"
	exit 1
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
timeout 120 qemu-system-aarch64 -M virt,gic-version=3 -cpu max -smp 2 -m 512 -display none -no-reboot -nodefaults \
	-serial stdio -bios "$fw" -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" \
	-device virtio-net-pci,netdev=n0,romfile= -kernel "$img" -append "sys_interval_s=0" \
	</dev/null >"$log" 2>&1 &
qpid=$!
up=0
for _ in $(seq 300); do
	if grep -aq "listening on TCP 8883" "$log" && grep -aq "DHCP lease: " "$log"; then
		up=1
		break
	fi
	kill -0 "$qpid" 2>/dev/null || break
	sleep 0.2
done
if [ $up = 1 ]; then
	out=$(timeout 30 mosquitto_pub -h 127.0.0.1 -p "$port" --cafile "$certs/ca.crt" --cert "$certs/dev-1.crt" \
		--key "$certs/dev-1.key" -i dev-1 -q 1 -t devices/dev-1/telemetry -m uefi -d 2>&1)
	if echo "$out" | grep -q "received PUBACK"; then
		pass uefi-broker "$(grep -a -m1 -o 'broker: MQTT over TLS.*' "$log" | cut -c1-70)"
	else
		fail uefi-broker "serving, but dev-1's QoS 1 publish got no PUBACK: $(echo "$out" | tail -n 1)"
	fi
else
	fail uefi-broker "no listening broker with a DHCP lease within 60 s; see $log"
fi
kill "$qpid" 2>/dev/null
wait "$qpid" 2>/dev/null
exit $rc_all
