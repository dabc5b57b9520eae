#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# x86_64 boot smoke scenarios: boots $1/x86_64/urmqtt.elf directly (PVH, `-kernel`) under
# QEMU, KVM when a probe guest ran on it, TCG otherwise, once per scenario named on the command
# line (test=<name>). Each boot must end with the isa-debug-exit code of its scenario
# (QEMU exits with code * 2 + 1; see enum x86_exit_code in arch/x86_64/x86.h) and print
# the expected decoded report. One "PASS|FAIL x86_64/<scenario>" line each; every boot is
# bounded by a timeout.
set -uo pipefail
build=${1:-build}
img=$build/x86_64/urmqtt.elf
logdir=$build/test-logs/x86_64-boot
mkdir -p "$logdir"
timeout_s=${X86_64_BOOT_TIMEOUT:-60}

if [ ! -f "$img" ]; then
	echo "FAIL x86_64/image (missing $img)"
	exit 1
fi
# The accelerator: KVM only after a probe guest ran on it (tools/accel/accel.sh; make
# decides once per invocation and exports URMQTT_ACCEL), else TCG.
# shellcheck source=tools/accel/accel.sh
. "$(dirname "$0")/../../tools/accel/accel.sh"
accel_select "$build" || { echo "FAIL x86_64/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
mode=$accel_mode
echo "x86_64 smoke: $mode"

# name|smp|expected exit|patterns (extended regex, all must match, separated by ';;')|extra
# QEMU arguments. The kernel gets test=<name without -smp4/-rtc/-noaesni/-noadx suffix>, or the
# NAME of a "test:NAME" among the extra arguments. no-entropy takes the entropy source away
# in software (the scenario's flag); no-entropy-cpu boots the ordinary boot scenario on a
# virtual CPU whose CPUID offers neither RDRAND nor RDSEED (TCG: -cpu max,-rdrand,-rdseed;
# KVM: -cpu host,...,-rdrand,-rdseed) and must stop with the same refusal. boot takes SHA-256
# with or without SHA-NI (KVM: as the host's CPU; older QEMU TCG lacks it); boot-noadx
# takes SHA-NI away too, so it runs the baseline code of every tls/accel path. boot also
# checks where the TSC frequency came from: stated by the CPU or hypervisor, or measured
# against the ACPI PM timer, which QEMU always offers; never the PIT (issue 24 item 5): the
# source's first letter, since '|' separates fields here: [A]CPI PM timer, [c]puid 0x15/16,
# [K]VM clock, [h]ypervisor leaf (not PIT, guess, pending).
scenarios=(
	"boot|1|33|W\\^X audit: PASS;;image: [0-9]+ KiB at 0xffffffff[89a-f][0-9a-f][13579bdf]00000, physical 0x100000;;kaslr: slide 0x[0-9a-f]+ from RD[A-Z]+ \\(one of [0-9]+ 2 MiB slots\\); [0-9]+ of [0-9]+ sites moved;;cpus: 1 started of 1 in the MADT;;memory: [0-9]+ MiB;;from entry to the loop;;protections: NX on, WP on;;every core ticks in its loop;;page tables: [0-9]+ of [0-9]+ KiB, sealed read-only;;wall clock: 20[0-9][0-9]-;;page frames: [0-9]+ of [0-9]+ free \\([0-9]+ MiB\\), [0-9]+ reserved; heap: 0 live;;entropy: RD[A-Z]+.*1 per-core instances seeded;;tls: self-test PASS.*AES-NI used, PCLMULQDQ used;;tls: accel: P-256 nistz256 x86_64 MULX/ADX, X25519 fe64 MULX/ADX, SHA-256 x86_64( SHA-NI)? \\(P-256 and X25519 agreement, P-256 signature: PASS\\);;tls: x509: CA \"urMQTT development CA\";;clock: TSC [0-9]+\\.[0-9]{3} MHz from [AcKh]"
	"boot-noaesni|1|33|tls: self-test PASS.*AES-NI absent, PCLMULQDQ absent|cpu:-aes,-pclmulqdq"
	"boot-noadx|1|33|tls: accel: P-256 nistz256 x86_64, X25519 fe51, SHA-256 x86_64 \\(P-256 and X25519 agreement, P-256 signature: PASS\\)|cpu:-adx,-bmi2,-sha-ni"
	"boot-rtc|1|33|wall clock IMPLAUSIBLE: RTC says 2019-03-04|-rtc base=2019-03-04T05:06:07"
	"boot-smp4|4|33|cpus: 4 started of 4 in the MADT;;W\\^X audit: PASS;;core 3: apic id 3, [0-9]+ ticks;;every core ticks in its loop"
	"heap-smp4|4|33|scenario heap: allocating and freeing across 4 cores;;heap: 192 allocs, 192 frees \\([0-9]+ remote\\) on 4 cores; live 0 -> 0;;scenario heap: counters back to baseline on every core;;4 per-core instances seeded"
	"heap-double-free|1|87|BUG on core 0: heap: double free;;block at 0x[0-9a-f]+ \\(physical 0x[0-9a-f]+, physmap\\);;backtrace \\(link addresses\\):;;PANIC: heap: double free"
	"exec-heap|1|77|instruction fetch from a non-executable page;;in: physmap"
	"no-entropy|1|89|PANIC: csprng: no entropy source: the CPU offers neither RDSEED nor RDRAND"
	"no-entropy-cpu|1|89|PANIC: csprng: no entropy source: the CPU offers neither RDSEED nor RDRAND|cpu:-rdrand,-rdseed test:boot"
	"oneshot-smp4|4|33|one-shot timers \\([A-Za-z -]+\\): 8 per core on 4 cores, none early;;every core's timer fired on time"
	"oneshot-lapic|2|33|one-shot timers \\(LAPIC one-shot\\): 8 per core on 2 cores, none early;;every core's timer fired on time"
	"xcore-smp4|4|33|scenario xcore: 4 cores, 12 rings of 64 slots;;xcore: [0-9]+ ms for 120000 messages: [0-9]+ msgs/s per pair;;scenario xcore: 4 cores, 12 rings, 10000 messages each way, [0-9]+ credit stalls \\([0-9]+ control\\), 0 errors"
	"tls-smp4|4|33|scenario tls: 4 cores, 8 rounds each;;tls: 32 rounds on 4 cores, 0 errors, [1-9][0-9]* locks \\([0-9]+ waited\\); PSA volatile keys ([0-9]+) -> \\1;;scenario tls: every core's rounds succeeded, no key left behind"
	"poweroff|1|0|scenario poweroff: ACPI S5;;powering off \\(ACPI S5\\)"
	"watchdog|1|85|handler 'test-spin' over its budget;;PANIC: watchdog: core 0: handler 'test-spin' stuck for"
	"watchdog-smp4|4|85|handler 'test-spin' over its budget;;PANIC: watchdog: core 0: handler 'test-spin' stuck for"
	"write-text|1|75|#PF page fault.*write to a read-only page;;error 0x3: protection, write, supervisor;;in: kernel text;;backtrace \\(link addresses\\): ffffffff80[0-9a-f]{6} "
	"write-rodata|1|75|write to a read-only page;;in: kernel rodata"
	"write-pagetable|1|75|write to a read-only page;;in: page tables \\(sealed\\)"
	"exec-data|1|77|instruction fetch from a non-executable page;;instruction fetch;;in: kernel data/bss"
	"stack-overflow|1|79|#DF double fault.*stack overflow into its guard page;;guard page of stack 'boot'"
	"null-deref|1|81|null pointer dereference;;error 0x0: not present, read, supervisor;;in: null page"
	"stack-smash|1|71|PANIC: stack smashing detected"
	"wx-audit|1|69|PANIC: W\\^X audit failed: 1 writable\\+executable"
)

rc_all=0
for s in "${scenarios[@]}"; do
	IFS='|' read -r name smp want pats extra <<<"$s"
	arg=${name%-smp4}
	arg=${arg%-rtc}
	arg=${arg%-noaesni}
	arg=${arg%-noadx}
	read -r -a extra_args <<<"${extra:-}"
	# "cpu:-flag,-flag" takes features away from this mode's CPU model.
	acc=("${accel[@]}")
	if [[ ${extra_args[0]:-} == cpu:* ]]; then
		acc[${#acc[@]}-1]+=",${extra_args[0]#cpu:}"
		extra_args=("${extra_args[@]:1}")
	fi
	# "test:NAME": the scenario the kernel runs, when it is not the name's own.
	if [[ ${extra_args[0]:-} == test:* ]]; then
		arg=${extra_args[0]#test:}
		extra_args=("${extra_args[@]:1}")
	fi
	log=$logdir/$name.log
	t0=$(date +%s%N)
	timeout "$timeout_s" qemu-system-x86_64 "${acc[@]}" -m 128M -smp "$smp" \
		-nographic -no-reboot -nodefaults -serial stdio \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		"${extra_args[@]}" -kernel "$img" -append "test=$arg" </dev/null >"$log" 2>&1
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	why=""
	if [ $rc -eq 124 ]; then
		why="timeout after ${timeout_s}s"
	elif [ $rc -ne "$want" ]; then
		why="exit $rc, want $want"
	else
		IFS=$'\x01' read -r -a plist <<<"${pats//;;/$'\x01'}"
		for p in "${plist[@]}"; do
			if ! tr -d '\r' <"$log" | grep -Eq -- "$p"; then
				why="missing /$p/"
				break
			fi
		done
	fi
	if [ -z "$why" ]; then
		echo "PASS x86_64/$name ($mode, ${ms} ms QEMU start to exit)"
	else
		echo "FAIL x86_64/$name ($mode: $why; see $log)"
		rc_all=1
	fi
done
# Multiboot2: the same image from GRUB (BIOS) on an ISO, when grub-mkrescue can build one.
if command -v grub-mkrescue >/dev/null && command -v xorriso >/dev/null && [ -d /usr/lib/grub/i386-pc ]; then
	iso_dir=$logdir/mb2-iso
	rm -rf "$iso_dir"
	mkdir -p "$iso_dir/boot/grub"
	cp "$img" "$iso_dir/boot/urmqtt.elf"
	cat >"$iso_dir/boot/grub/grub.cfg" <<-'CFG'
	set timeout=0
	serial --unit=0 --speed=115200
	terminal_output serial
	menuentry urmqtt {
	  multiboot2 /boot/urmqtt.elf test=boot
	  boot
	}
	CFG
	log=$logdir/multiboot2.log
	if ! grub-mkrescue -o "$logdir/mb2.iso" "$iso_dir" >"$log" 2>&1; then
		echo "FAIL x86_64/multiboot2 ($mode: grub-mkrescue failed; see $log)"
		rc_all=1
	else
		timeout "$timeout_s" qemu-system-x86_64 "${accel[@]}" -m 128M -smp 2 \
			-nographic -no-reboot -nodefaults -serial stdio \
			-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
			-cdrom "$logdir/mb2.iso" </dev/null >>"$log" 2>&1
		rc=$?
		if [ $rc -eq 33 ] && tr -d '\r' <"$log" | grep -q "booted via Multiboot2" &&
			tr -d '\r' <"$log" | grep -q "cpus: 2 started of 2"; then
			echo "PASS x86_64/multiboot2 ($mode, GRUB BIOS ISO, -smp 2)"
		else
			echo "FAIL x86_64/multiboot2 ($mode: exit $rc; see $log)"
			rc_all=1
		fi
	fi
elif ! command -v grub-mkrescue >/dev/null; then
	echo "SKIP x86_64/multiboot2 (needs command grub-mkrescue: package grub-common)"
elif ! command -v xorriso >/dev/null; then
	echo "SKIP x86_64/multiboot2 (needs command xorriso: package xorriso)"
else
	echo "SKIP x86_64/multiboot2 (needs file /usr/lib/grub/i386-pc: package grub-pc-bin)"
fi

# Relocatable: the relocation table names every absolute address (applying it to the
# --emit-relocs link gives exactly the bytes of a link 2 MiB higher), the image carries
# exactly that table (a link with the table gives the same table again: ADR-077), and the
# image linked 2 MiB higher boots as well as the normal one (ADR-020).
relocs_tool=$build/host/tools/urmqtt-relocs
slid=$build/x86_64/urmqtt.slid.elf
log=$logdir/relocatable.log
if "$relocs_tool" check "$img" "$build/x86_64/urmqtt.reloc.elf" "$slid" >"$log" 2>&1 &&
	"$relocs_tool" table "$build/x86_64/urmqtt.reloc.elf" "$logdir/relocs.again" >>"$log" 2>&1 &&
	cmp "$logdir/relocs.again" "$build/x86_64/urmqtt.relocs" >>"$log" 2>&1 &&
	[ -s "$build/x86_64/urmqtt.relocs" ]; then
	echo "PASS x86_64/relocatable ($(sed -n 's/^relocs: PASS: \([0-9]*\) sites.*/\1 sites/p' "$log"), table $(stat -c %s "$build/x86_64/urmqtt.relocs") B)"
else
	echo "FAIL x86_64/relocatable (see $log)"
	rc_all=1
fi
log=$logdir/boot-slid.log
timeout "$timeout_s" qemu-system-x86_64 "${accel[@]}" -m 128M -smp 2 \
	-nographic -no-reboot -nodefaults -serial stdio \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	-kernel "$slid" -append "test=boot" </dev/null >"$log" 2>&1
rc=$?
if [ $rc -eq 33 ] && tr -d '\r' <"$log" | grep -q "image: [0-9]* KiB at 0xffffffff[89a-f][0-9a-f][13579bdf]00000, physical 0x300000" &&
	tr -d '\r' <"$log" | grep -q "kaslr: slide 0x" &&
	tr -d '\r' <"$log" | grep -q "W^X audit: PASS" && tr -d '\r' <"$log" | grep -q "cpus: 2 started of 2"; then
	echo "PASS x86_64/boot-slid ($mode, image linked 2 MiB higher, -smp 2)"
else
	echo "FAIL x86_64/boot-slid ($mode: exit $rc; see $log)"
	rc_all=1
fi

# KASLR (ADR-077). kaslr-differs: the boot scenario's slide and another boot's differ (one
# of ~1,000 slots each: a third boot settles a tie), and each boot's image line sits at the
# link address plus its own slide. kaslr-bad-table: the image with one table entry pointing
# outside it must stop with the refusal, not boot or scribble.
kaslr_slide() { tr -d '\r' <"$1" | sed -n 's/.*kaslr: slide \(0x[0-9a-f]*\) from .*/\1/p'; }
kaslr_at() { tr -d '\r' <"$1" | sed -n 's/.*image: [0-9]* KiB at \(0x[0-9a-f]*\), physical 0x100000.*/\1/p'; }
kaslr_boot() {
	timeout "$timeout_s" qemu-system-x86_64 "${accel[@]}" -m 128M -smp 1 \
		-nographic -no-reboot -nodefaults -serial stdio \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-kernel "$1" -append "test=boot" </dev/null >"$2" 2>&1
}
why=""
slides=()
for try in 1 2; do
	log=$logdir/kaslr-$try.log
	kaslr_boot "$img" "$log"
	rc=$?
	s1=$(kaslr_slide "$log")
	at=$(kaslr_at "$log")
	if [ $rc -ne 33 ] || [ -z "$s1" ] || [ -z "$at" ] ||
		[ "$(printf '%x' $((0xffffffff80100000 + s1)))" != "${at#0x}" ]; then
		why="boot $try: exit $rc, slide '${s1}', image at '${at}'; see $log"
		break
	fi
	slides+=("$s1")
	s0=$(kaslr_slide "$logdir/boot.log")
	[ -n "$s0" ] && [ "$s0" != "$s1" ] && { slides=("$s0" "$s1"); break; }
done
if [ -z "$why" ] && [ ${#slides[@]} -eq 2 ] && [ "${slides[0]}" != "${slides[1]}" ]; then
	echo "PASS x86_64/kaslr-differs ($mode, slides ${slides[0]} and ${slides[1]}, image where its slide says)"
else
	echo "FAIL x86_64/kaslr-differs ($mode: ${why:-slides ${slides[*]:-none}})"
	rc_all=1
fi
bad=$logdir/kaslr-bad-table.elf
log=$logdir/kaslr-bad-table.log
cp "$img" "$bad"
off=$(readelf -SW "$bad" | sed -n 's/.*\.urmqtt_relocs *[A-Z]* *[0-9a-f]* \([0-9a-f]*\) .*/\1/p')
if [ -n "$off" ] && printf '\xf0\xff\xff\xff' | dd of="$bad" bs=1 seek=$((0x$off + 12)) conv=notrunc status=none; then
	kaslr_boot "$bad" "$log"
	rc=$?
else
	rc=none
fi
if [ "$rc" = 83 ] && tr -d '\r' <"$log" | grep -q "PANIC: kaslr: relocation table refused (site outside the image, entry 0 of"; then
	echo "PASS x86_64/kaslr-bad-table ($mode, an entry outside the image: refused, boot stopped)"
else
	echo "FAIL x86_64/kaslr-bad-table ($mode: exit $rc; see $log)"
	rc_all=1
fi
exit $rc_all
