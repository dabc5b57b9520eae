#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# aarch64 boot smoke scenarios: boots $1/aarch64/urmqtt.img (arm64 Image, QEMU -kernel) on
# qemu-system-aarch64 -M virt under TCG, once per scenario: the plain boot on machines that
# differ in what the kernel must find or handle (GICv2 and GICv3, 1, 4 and 64 cpus started
# through PSCI with every core's tick counted, entry at EL1 and at EL2, a CPU with
# PAC/BTI/PAN/RNDR and one without, which must refuse to run without an entropy source,
# AES-GCM on the Armv8 AES and PMULL instructions and, on a CPU whose ID registers offer no
# crypto extensions, on mbedTLS's tables with SHA-256 on the integer code (ADR-071: QEMU has no
# switch for the crypto extensions alone; neon=off,vfp=off clears their ID fields, and TCG then
# refuses their instructions but still runs base FP/SIMD, which the kernel uses elsewhere),
# then each deliberate fault
# (test=<name>), which must be caught, decoded and reported, and the boot that must abort
# (a W+X page before the audit). Every boot must power itself off (PSCI SYSTEM_OFF: QEMU
# exits 0) within the timeout and print every expected pattern. One
# "PASS|FAIL aarch64/<scenario>" line each.
set -uo pipefail
build=${1:-build}
img=$build/aarch64/urmqtt.img
logdir=$build/test-logs/aarch64-boot
mkdir -p "$logdir"
timeout_s=${AARCH64_BOOT_TIMEOUT:-60}

if [ ! -f "$img" ]; then
	echo "FAIL aarch64/image (missing $img)"
	exit 1
fi
if ! command -v qemu-system-aarch64 >/dev/null; then
	echo "FAIL aarch64/qemu (qemu-system-aarch64 is not installed)"
	exit 1
fi
echo "aarch64 smoke: tcg"

banner="W\\^X audit: PASS: [0-9]+ RX, [0-9]+ R, [0-9]+ RW, [0-9]+ device pages; 0 W\\+X, 0 EL0; WXN on; tables read-only; guard pages under [0-9]+ stacks;;PSCI 1\\.[0-9]+, generic timer [0-9.]+ MHz;;bring-up done"
caught="caught as expected"
# name|machine|cpu|smp|MiB|command line|patterns (extended regex, all must match, ';;' between)
scenarios=(
	"boot-gicv2|virt,gic-version=2|max|1|256|poweroff|entered at EL1, running at EL1;;tls: self-test PASS .*; Armv8 AES used, PMULL used;;tls: accel: P-256 nistz256 Armv8, X25519 portable C, SHA-256 Armv8 FEAT_SHA256 \\(P-256 and X25519 agreement, P-256 signature: PASS\\);;1 cpus \\(1 enabled\\);;cpus: 1 started of 1 in the device tree; GICv2, 10 ms tick;;page frames: [0-9]+ of [0-9]+ free \\([0-9]+ MiB\\), [0-9]+ reserved; heap: 0 live;;entropy: RNDRRS \\(FEAT_RNG\\); CSPRNG ChaCha20 fast-key-erasure DRBG, 1 per-core instances seeded;;memory: 256 MiB in 1 range;;GICv2, 1 PCIe ECAM window\\(s\\), PL011 console, PL031 RTC, PSCI over HVC, virtual timer PPI 11;;PAN on, BTI on, PAC on, stack canary from RNDR;;$banner;;poweroff: powering off"
	"boot-gicv3-smp4-el2|virt,gic-version=3,virtualization=on|max|4|512|poweroff|entered at EL2, running at EL1;;4 cpus \\(4 enabled\\);;memory: 512 MiB;;GICv3, 1 PCIe ECAM window\\(s\\), PL011 console, PL031 RTC, PSCI over SMC;;PAN on, BTI on, PAC on;;$banner;;poweroff: powering off"
	"smp4-gicv2|virt,gic-version=2|max|4|512|test=smp|cpus: 4 started of 4 in the device tree; GICv2, 10 ms tick;;4 per-core instances seeded;;core 3: affinity 0x3, [1-9][0-9]* ticks;;scenario smp: every core ticks in its loop \\(4 cores\\)"
	"smp4-gicv3-el2|virt,gic-version=3,virtualization=on|max|4|512|test=smp|entered at EL2;;cpus: 4 started of 4 in the device tree; GICv3, 10 ms tick;;guard pages under 8 stacks;;core 3: affinity 0x3, [1-9][0-9]* ticks;;scenario smp: every core ticks in its loop \\(4 cores\\)"
	"smp64-gicv3|virt,gic-version=3|max|64|2048|test=smp|cpus: 64 started of 64 in the device tree; GICv3, 10 ms tick; MSI: GICv3 ITS;;guard pages under 128 stacks;;core 16: affinity 0x100, [1-9][0-9]* ticks;;scenario smp: every core ticks in its loop \\(64 cores\\)"
	"boot-nocrypto|virt,gic-version=2|max,neon=off,vfp=off|1|256|poweroff|tls: self-test PASS .*; Armv8 AES absent, PMULL absent;;tls: accel: P-256 nistz256 Armv8, X25519 portable C, SHA-256 Armv8 \\(P-256 and X25519 agreement, P-256 signature: PASS\\);;$banner;;poweroff: powering off"
	"no-entropy-cortex-a57|virt|cortex-a57|2|256|poweroff|PAN off \\(CPU lacks it\\), BTI off \\(CPU lacks it\\), PAC off \\(CPU lacks it\\), stack canary from the counter \\(weak\\);;PANIC: csprng: no entropy source: the CPU offers no RNDRRS;;stop code 54: powering off"
	"write-text|virt|max|1|256|test=write-text|data abort in the kernel, write: permission fault \\(level 3\\) in kernel text;;pc 0x[0-9a-f]+ \\(kernel text\\);;backtrace \\(return addresses\\): 0x;;$caught"
	"write-rodata|virt|max|1|256|test=write-rodata|write: permission fault \\(level 3\\) in kernel rodata;;$caught"
	"write-pagetable|virt|max|1|256|test=write-pagetable|write: permission fault \\(level 3\\) in page tables;;$caught"
	"exec-data|virt|max|1|256|test=exec-data|instruction abort in the kernel: permission fault \\(level 3\\) in kernel data;;$caught"
	"null-deref|virt|max|1|256|test=null-deref|data abort in the kernel, read: translation fault \\(level [0-3]\\) in the null page;;$caught"
	"stack-overflow|virt|max|1|256|test=stack-overflow|translation fault \\(level 3\\) in guard page of a loop stack: stack overflow into its guard page;;$caught"
	"stack-smash|virt|max|1|256|test=stack-smash|PANIC: stack smashing detected;;stop code 51: powering off"
	"pac-forged-return|virt|max|1|256|test=pac-forged-return|overwriting my saved return address;;(pointer authentication failure|instruction abort in the kernel: .* in no address \\(a pointer corrupted, as by a failed authentication\\));;$caught"
	"bti-bad-target|virt|max|1|256|test=bti-bad-target|branch target exception \\(BTI\\) in the kernel;;$caught"
	"wx-audit|virt|max|1|256|test=wx-audit|scenario wx-audit: one data page made executable;;boot: FATAL: mmu: W\\^X audit FAILED before the switch"
)

rc_all=0
for s in "${scenarios[@]}"; do
	IFS='|' read -r name machine cpu smp mem cmdline pats <<<"$s"
	log=$logdir/$name.log
	t0=$(date +%s%N)
	timeout "$timeout_s" qemu-system-aarch64 -M "$machine" -cpu "$cpu" -smp "$smp" -m "$mem" \
		-nographic -no-reboot -nodefaults -serial stdio -kernel "$img" -append "$cmdline" \
		</dev/null >"$log" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	why=""
	if [ $rc = 124 ]; then
		why="timed out after ${timeout_s}s"
	elif [ $rc != 0 ]; then
		why="QEMU exited $rc"
	else
		IFS=$'\n' read -r -d '' -a plist < <(printf '%s' "$pats" | sed 's/;;/\n/g'; printf '\0')
		for p in "${plist[@]}"; do
			grep -Eq -- "$p" "$log" || { why="missing: $p"; break; }
		done
		if [ -z "$why" ] && grep -q "FAIL: the protection did not fire\|no such scenario" "$log"; then
			why="$(grep -m1 "FAIL: the protection\|no such scenario" "$log")"
		fi
	fi
	if [ -z "$why" ]; then
		echo "PASS aarch64/$name (tcg, ${ms} ms)"
	else
		echo "FAIL aarch64/$name ($why)"
		sed 's/^/    | /' "$log" | tail -6
		rc_all=1
	fi
done
exit $rc_all
