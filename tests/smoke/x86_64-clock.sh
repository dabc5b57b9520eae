#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# x86_64 clock smoke (issue 24 item 5, "a clock that keeps time"): boots $1/x86_64/urmqtt.elf
# with test=clock tsc_skew_pct=9 clock_resync_s=2: the TSC frequency is taken 9 % too high
# (the monotonic clock runs 9 % slow, as the PIT calibration did on a loaded host), and
# core 0 re-reads the CMOS RTC every 2 s. Passes when the TSC was measured against the
# ACPI PM timer (or stated by the CPU or hypervisor), never the PIT, a correction was
# logged, the wall clock's error at the fifth RTC read is within 250 ms (the scenario's
# check), and the wall clock it printed last is within 1.5 s of the host's time at exit
# (QEMU's RTC follows the host clock). One "PASS|FAIL x86_64/clock" line; bounded by a
# timeout (the scenario itself gives up 40 s after boot).
set -uo pipefail
build=${1:-build}
img=$build/x86_64/urmqtt.elf
logdir=$build/test-logs/x86_64-clock
mkdir -p "$logdir"
timeout_s=${X86_64_CLOCK_TIMEOUT:-60}

if [ ! -f "$img" ]; then
	echo "FAIL x86_64/clock (missing $img)"
	exit 1
fi
# shellcheck source=tools/accel/accel.sh
. "$(dirname "$0")/../../tools/accel/accel.sh"
accel_select "$build" || { echo "FAIL x86_64/clock (accelerator: URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
mode=$accel_mode

log=$logdir/clock.log
t0=$(date +%s%N)
timeout "$timeout_s" qemu-system-x86_64 "${accel[@]}" -m 128M -smp 1 \
	-nographic -no-reboot -nodefaults -serial stdio \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	-kernel "$img" -append "test=clock tsc_skew_pct=9 clock_resync_s=2" </dev/null >"$log" 2>&1
rc=$?
host_ms=$(( $(date +%s%N) / 1000000 ))
secs=$(( ($(date +%s%N) - t0) / 1000000000 ))
text=$(tr -d '\r' <"$log")
why=""
if [ $rc -eq 124 ]; then
	why="timeout after ${timeout_s}s"
elif [ $rc -ne 33 ]; then
	why="exit $rc, want 33"
else
	for p in "clock: TSC [0-9]+\\.[0-9]{3} MHz from (ACPI PM timer|cpuid 0x1[56]|hypervisor leaf|KVM clock)" \
		"TSC frequency skewed by \\+9 %" \
		"wall clock (stepped [-+][0-9]|-?[0-9]+ ms off the RTC|[-+][0-9]+ ms off the RTC)" \
		"scenario clock: the wall clock keeps time"; do
		if ! grep -Eq -- "$p" <<<"$text"; then
			why="missing /$p/"
			break
		fi
	done
fi
guest_ms=$(sed -n 's/.*scenario clock: wall clock .* (unix_ms \([0-9]*\)).*/\1/p' <<<"$text" | tail -1)
if [ -z "$why" ]; then
	if [ -z "$guest_ms" ]; then
		why="no unix_ms line"
	else
		d=$(( host_ms - guest_ms ))
		# The guest printed before it stopped: the host's time at exit is later, by the
		# exit itself (milliseconds); 1.5 s either way is the bound.
		if [ $d -gt 1500 ] || [ $d -lt -1500 ]; then
			why="wall clock ${d} ms behind the host"
		fi
	fi
fi
src=$(sed -n 's/.*clock: TSC \([0-9.]*\) MHz from \(.*\)$/\1 MHz from \2/p' <<<"$text" | head -1)
last=$(sed -n 's/.*error at the last read \([-0-9.]*\) ms.*/\1/p' <<<"$text" | tail -1)
if [ -z "$why" ]; then
	echo "PASS x86_64/clock ($mode, ${secs} s; TSC $src; error at the 5th RTC read ${last} ms; wall clock $(( host_ms - guest_ms )) ms behind the host at exit)"
	exit 0
fi
echo "FAIL x86_64/clock ($mode: $why; see $log)"
exit 1
