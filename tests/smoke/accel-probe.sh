#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The accelerator decision (tools/accel/accel.sh) and its probe guest (tools/accel/probe.S).
# A fake /dev/kvm (a device node made with mknod: /dev/null's numbers to open, unused ones
# not to) and fake QEMUs stand for each kind of machine; the real probe guest runs under TCG.
#   accel/probe-guest         the probe guest under TCG, -cpu max: exit 33, every known answer
#   accel/probe-guest-plain   the same with -cpu qemu64 (no AES, PCLMULQDQ, SSE4.2): exit 33,
#                             the absent instructions skipped, as the image skips them
#   accel/override            URMQTT_ACCEL=kvm / tcg is the decision, no probe runs;
#                             anything else is refused (exit 2)
#   accel/no-device           no device node, or one that does not open: TCG, no probe runs
#   accel/kvm-dies            the device opens, the guest dies with "KVM internal error ...
#                             emulation failure" and QEMU hangs (this file's fake does what
#                             the broken machines do): TCG with that reason, within 5 s, the
#                             hung QEMU killed
#   accel/kvm-hangs           the guest never exits: TCG after the time limit, not before
#   accel/kvm-wrong-answer    the guest exits with a known-answer failure code: TCG
#   accel/kvm-works           the "KVM" is the probe guest really run (by TCG behind the fake):
#                             KVM chosen, the reason names what ran
#   accel/one-probe           sourced twice in one shell: one probe, the decision exported
# Usage: accel-probe.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
probe=$build/accel/probe.elf
accel_sh=$(cd "$(dirname "$0")/../../tools/accel" && pwd)/accel.sh
work=$build/test-logs/accel-probe
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
pass() { echo "PASS accel/$1${2:+ ($2)}"; }
fail() { echo "FAIL accel/$1${2:+ ($2)}"; }
unset URMQTT_ACCEL URMQTT_KVM_DEVICE URMQTT_ACCEL_QEMU URMQTT_ACCEL_PROBE_TIMEOUT

[ -f "$probe" ] || { fail setup "missing $probe"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { fail setup "no qemu-system-x86_64"; exit 1; }

# ---- the probe guest itself, under TCG ----------------------------------------------------
run_probe_tcg() { # CPU: the guest's serial output in $work/tcg-CPU.log, QEMU's exit code
	timeout 30 qemu-system-x86_64 -M q35 -accel tcg -cpu "$1" -m 32M -nodefaults -display none \
		-monitor none -no-reboot -serial stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$probe" </dev/null >"$work/tcg-$1.log" 2>&1
}
run_probe_tcg max
rc=$?
if [ $rc -eq 33 ] && grep -q 'AES-NI known answer' "$work/tcg-max.log" &&
	grep -q 'PCLMULQDQ known answer' "$work/tcg-max.log" && grep -q 'CRC32 known answer' "$work/tcg-max.log" &&
	grep -q '^urmqtt accel probe: ok' "$work/tcg-max.log"; then
	pass probe-guest "exit $rc, AES-NI, PCLMULQDQ and CRC32 known answers"
else
	fail probe-guest "exit $rc, see $work/tcg-max.log"
fi
run_probe_tcg qemu64
rc=$?
if [ $rc -eq 33 ] && ! grep -q 'AES-NI' "$work/tcg-qemu64.log" && grep -q '^urmqtt accel probe: ok' "$work/tcg-qemu64.log"; then
	pass probe-guest-plain "exit $rc without AES-NI"
else
	fail probe-guest-plain "exit $rc, see $work/tcg-qemu64.log"
fi

# ---- fakes ----------------------------------------------------------------------------------
# Fake device nodes: /dev/null's numbers open; 240/240 (reserved for local use) has no driver.
mknod "$work/kvm-opens" c 1 3 && mknod "$work/kvm-no-driver" c 240 240 ||
	{ fail setup "mknod failed (needs root)"; exit 1; }
# Fake QEMUs: each counts its runs in $work/runs, then behaves as named.
fake() { # NAME BODY
	printf '#!/usr/bin/env bash\necho run >>%q\n%s\n' "$work/runs" "$2" >"$work/qemu-$1"
	chmod +x "$work/qemu-$1"
}
fake dies 'echo "KVM internal error. Suberror: 1"; echo "extra data[0]: 0x0000000000000001"; echo "emulation failure"; exec sleep 600'
fake hangs 'exec sleep 600'
fake wrong 'echo "urmqtt accel probe: long mode, SSE on"; exit 35'
# "KVM" that works: the same arguments, -enable-kvm and -cpu host,... swapped for TCG.
fake works 'a=(); for x in "$@"; do case $x in -enable-kvm) a+=(-accel tcg) ;; host,*) a+=(max) ;; *) a+=("$x") ;; esac; done; exec qemu-system-x86_64 "${a[@]}"'

decide() { # OUT_PREFIX ENV...: runs accel.sh with ENV; $OUT_PREFIX.{out,err,rc,ms}
	local p=$1 t0 t1
	shift
	: >"$work/runs"
	t0=$(date +%s%N)
	env "$@" "$accel_sh" "$probe" >"$work/$p.out" 2>"$work/$p.err"
	echo $? >"$work/$p.rc"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >"$work/$p.ms"
}
runs() { wc -l <"$work/runs" | tr -d ' '; }
got() { echo "$(cat "$work/$1.out")|$(cat "$work/$1.rc")"; }

# ---- override ---------------------------------------------------------------------------------
ok=1
decide o-kvm URMQTT_ACCEL=kvm URMQTT_ACCEL_QEMU="$work/qemu-hangs" URMQTT_KVM_DEVICE="$work/kvm-opens"
[ "$(got o-kvm)" = "kvm|0" ] && [ "$(runs)" = 0 ] || ok=0
decide o-tcg URMQTT_ACCEL=tcg URMQTT_ACCEL_QEMU="$work/qemu-works" URMQTT_KVM_DEVICE="$work/kvm-opens"
[ "$(got o-tcg)" = "tcg|0" ] && [ "$(runs)" = 0 ] || ok=0
decide o-bad URMQTT_ACCEL=yes URMQTT_ACCEL_QEMU="$work/qemu-works" URMQTT_KVM_DEVICE="$work/kvm-opens"
[ "$(got o-bad)" = "|2" ] && grep -q 'expected kvm or tcg' "$work/o-bad.err" || ok=0
[ $ok -eq 1 ] && pass override "kvm, tcg taken without a probe; URMQTT_ACCEL=yes refused" ||
	fail override "see $work/o-*"

# ---- no usable device ---------------------------------------------------------------------
ok=1
decide nodev URMQTT_KVM_DEVICE="$work/absent" URMQTT_ACCEL_QEMU="$work/qemu-works"
[ "$(got nodev)" = "tcg|0" ] && [ "$(runs)" = 0 ] && grep -q "accel: TCG (no $work/absent)" "$work/nodev.err" || ok=0
decide nodrv URMQTT_KVM_DEVICE="$work/kvm-no-driver" URMQTT_ACCEL_QEMU="$work/qemu-works"
[ "$(got nodrv)" = "tcg|0" ] && [ "$(runs)" = 0 ] && grep -q 'does not open' "$work/nodrv.err" || ok=0
[ $ok -eq 1 ] && pass no-device "absent and driverless nodes: TCG, no probe run" || fail no-device "see $work/nod*"

# ---- the device opens; the guest dies, hangs, answers wrong, works ---------------------------------
decide dies URMQTT_KVM_DEVICE="$work/kvm-opens" URMQTT_ACCEL_QEMU="$work/qemu-dies"
ms=$(cat "$work/dies.ms")
if [ "$(got dies)" = "tcg|0" ] && [ "$(runs)" = 1 ] && [ "$ms" -lt 5000 ] &&
	grep -q 'KVM internal error. Suberror: 1, emulation failure' "$work/dies.err" &&
	! pgrep -f "$work/qemu-dies" >/dev/null; then
	pass kvm-dies "TCG after $ms ms (budget 5000): $(sed 's/^accel: //' "$work/dies.err")"
else
	fail kvm-dies "$(got dies) in $ms ms, see $work/dies.err"
fi
decide hangs URMQTT_KVM_DEVICE="$work/kvm-opens" URMQTT_ACCEL_QEMU="$work/qemu-hangs" URMQTT_ACCEL_PROBE_TIMEOUT=2
ms=$(cat "$work/hangs.ms")
if [ "$(got hangs)" = "tcg|0" ] && [ "$ms" -ge 2000 ] && [ "$ms" -lt 5000 ] &&
	grep -q 'did not exit within 2 s' "$work/hangs.err" && ! pgrep -f "$work/qemu-hangs" >/dev/null; then
	pass kvm-hangs "TCG after $ms ms (limit 2000, budget 5000)"
else
	fail kvm-hangs "$(got hangs) in $ms ms, see $work/hangs.err"
fi
decide wrong URMQTT_KVM_DEVICE="$work/kvm-opens" URMQTT_ACCEL_QEMU="$work/qemu-wrong"
if [ "$(got wrong)" = "tcg|0" ] && grep -q 'exit code 35' "$work/wrong.err"; then
	pass kvm-wrong-answer "$(sed 's/^accel: //' "$work/wrong.err")"
else
	fail kvm-wrong-answer "$(got wrong), see $work/wrong.err"
fi
decide works URMQTT_KVM_DEVICE="$work/kvm-opens" URMQTT_ACCEL_QEMU="$work/qemu-works"
if [ "$(got works)" = "kvm|0" ] && [ "$(runs)" = 1 ] && grep -q 'accel: KVM (the probe guest ran on .* AES-NI, PCLMULQDQ, CRC32' "$work/works.err"; then
	pass kvm-works "$(sed 's/^accel: //' "$work/works.err")"
else
	fail kvm-works "$(got works), see $work/works.err"
fi

# ---- sourced: one probe per shell, the decision exported ------------------------------------
: >"$work/runs"
out=$(URMQTT_KVM_DEVICE="$work/kvm-opens" URMQTT_ACCEL_QEMU="$work/qemu-works" bash -c '
	. "$1"; accel_select "$2" 2>/dev/null; a="$accel_mode ${accel[*]}"
	accel_select "$2" 2>/dev/null; echo "$a|$accel_mode ${accel[*]}|$(bash -c "echo \$URMQTT_ACCEL")"' _ "$accel_sh" "$build")
if [ "$out" = "kvm -enable-kvm -cpu host,-arch-capabilities|kvm -enable-kvm -cpu host,-arch-capabilities|kvm" ] && [ "$(runs)" = 1 ]; then
	pass one-probe "two selections, $(runs) probe, URMQTT_ACCEL=kvm exported"
else
	fail one-probe "got '$out' with $(runs) probes"
fi

# What this machine has, for the log (the decision make took is in URMQTT_ACCEL).
echo "this machine: $("$accel_sh" "$probe" 2>&1 >/dev/null)"
