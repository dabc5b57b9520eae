#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Chooses QEMU's accelerator for x86_64 guests. A /dev/kvm that opens is not trusted: on
# some machines it is a software hypervisor that kills every guest ("KVM internal error ...
# emulation failure") and QEMU then hangs instead of exiting. KVM is chosen only after the
# probe guest (tools/accel/probe.S: long mode, SSE, AES-NI, PCLMULQDQ, CRC32, RDRAND with
# known answers) ran on it and left through isa-debug-exit within the time limit; else TCG.
#
# As a command:  tools/accel/accel.sh PROBE_IMAGE
#   prints `kvm` or `tcg` on stdout and the reason once on stderr ("accel: ...").
# Sourced:       . tools/accel/accel.sh; accel_select BUILD_DIR [TCG ARGS...]
#   sets accel_mode (kvm|tcg) and accel=(QEMU arguments; TCG ARGS default -accel tcg
#   -cpu max). It takes URMQTT_ACCEL when set — `make test`, `make run` and `make bench`
#   decide once per invocation and export it, so every script shares one probe — else it
#   probes with BUILD_DIR/accel/probe.elf and exports the result to its children.
# Environment:   URMQTT_ACCEL=kvm|tcg (the decision itself: no probe),
#   URMQTT_ACCEL_PROBE_TIMEOUT (seconds, default 10); for the probe's own tests only:
#   URMQTT_KVM_DEVICE (default /dev/kvm), URMQTT_ACCEL_QEMU (default qemu-system-x86_64).
# Exit status 2 (command) or return 2 (sourced): URMQTT_ACCEL holds something else.

ACCEL_KVM_ARGS=(-enable-kvm -cpu host,-arch-capabilities)

# accel_probe PROBE_IMAGE: prints kvm or tcg; the reason on stderr.
accel_probe() {
	local image=$1 dev=${URMQTT_KVM_DEVICE:-/dev/kvm} qemu=${URMQTT_ACCEL_QEMU:-qemu-system-x86_64}
	local limit=${URMQTT_ACCEL_PROBE_TIMEOUT:-10}
	case ${URMQTT_ACCEL:-} in
	kvm | tcg)
		echo "accel: ${URMQTT_ACCEL^^} (URMQTT_ACCEL=$URMQTT_ACCEL, no probe)" >&2
		echo "$URMQTT_ACCEL"
		return 0 ;;
	'') ;;
	*)
		echo "accel: URMQTT_ACCEL=$URMQTT_ACCEL: expected kvm or tcg" >&2
		return 2 ;;
	esac
	local why=""
	if [ ! -e "$dev" ]; then
		why="no $dev"
	elif [ ! -c "$dev" ]; then
		why="$dev is not a character device"
	elif ! (exec 3<>"$dev") 2>/dev/null; then # exists: <> cannot create a file here
		why="$dev does not open for reading and writing"
	elif [ ! -f "$image" ]; then
		why="$dev opens but the probe image $image is missing"
	elif ! command -v "$qemu" >/dev/null; then
		why="$dev opens but there is no $qemu to run the probe"
	fi
	if [ -n "$why" ]; then
		echo "accel: TCG ($why)" >&2
		echo tcg
		return 0
	fi
	local log pid rc t0 now waited_ms
	log=$(mktemp /tmp/urmqtt-accel-probe.XXXXXX)
	t0=$(date +%s%N)
	"$qemu" -M q35 "${ACCEL_KVM_ARGS[@]}" -m 32M -nodefaults -display none -monitor none \
		-no-reboot -serial stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$image" </dev/null >"$log" 2>&1 &
	pid=$!
	# QEMU pauses the guest on a KVM internal error and never exits: watch for the message
	# as well as for the time limit.
	while kill -0 "$pid" 2>/dev/null; do
		now=$(date +%s%N)
		waited_ms=$(((now - t0) / 1000000))
		if grep -q 'KVM internal error' "$log" 2>/dev/null; then
			why="the probe guest died: $(grep -m1 'KVM internal error' "$log")$(grep -m1 -o 'emulation failure' "$log" | sed 's/^/, /')"
			break
		fi
		if [ "$waited_ms" -ge $((limit * 1000)) ]; then
			why="the probe guest did not exit within $limit s"
			break
		fi
		sleep 0.05
	done
	if [ -n "$why" ]; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	else
		wait "$pid"
		rc=$?
		now=$(date +%s%N)
		waited_ms=$(((now - t0) / 1000000))
		if [ "$rc" -eq 33 ] && grep -q '^urmqtt accel probe: ok' "$log"; then
			local ran
			ran=$(sed -n 's/^urmqtt accel probe: \(.*\) known answer.*/\1/p; s/^urmqtt accel probe: \(RDRAND\).*/\1/p' "$log" |
				tr -d '\r' | paste -sd, - | sed 's/,/, /g')
			echo "accel: KVM (the probe guest ran on $dev in $waited_ms ms: long mode, SSE${ran:+, $ran})" >&2
			rm -f "$log"
			echo kvm
			return 0
		fi
		why="the probe guest ended with exit code $rc$(grep -m1 -E 'error|fail' "$log" | sed 's/^/: /')"
	fi
	rm -f "$log"
	echo "accel: TCG ($dev opens, but $why)" >&2
	echo tcg
}

# accel_select BUILD_DIR [TCG ARGS...]: sets accel_mode and accel=(...) (see the head).
accel_select() {
	local build=$1
	shift
	local tcg=("$@")
	[ ${#tcg[@]} -gt 0 ] || tcg=(-accel tcg -cpu max)
	if [ -z "${URMQTT_ACCEL:-}" ]; then
		URMQTT_ACCEL=$(accel_probe "$build/accel/probe.elf") || return 2
		export URMQTT_ACCEL
	fi
	case $URMQTT_ACCEL in
	kvm) accel_mode=kvm; accel=("${ACCEL_KVM_ARGS[@]}") ;;
	tcg) accel_mode=tcg; accel=("${tcg[@]}") ;;
	*)
		echo "accel: URMQTT_ACCEL=$URMQTT_ACCEL: expected kvm or tcg" >&2
		return 2 ;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -uo pipefail
	[ $# -eq 1 ] || { echo "usage: $0 PROBE_IMAGE" >&2; exit 2; }
	accel_probe "$1"
fi
