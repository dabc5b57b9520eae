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
# MTE (-M virt,mte=on): the heap's tagged boot and its tag-check scenarios need a QEMU whose
# TCG keeps one tag per 16-byte granule (8.0 or later; 7.2 keeps two per page, which the
# kernel's self-test refuses): $AARCH64_MTE_QEMU, else BUILD_DIR/deps/qemu-mte/usr/bin/
# qemu-system-aarch64 (a QEMU package unpacked there), else qemu-system-aarch64 when it is 8.0 or
# later. With only an older QEMU the refusal itself is asserted and the tag-check scenarios
# are SKIPped, saying why. AARCH64_BOOT_ONLY=<regex of names> runs a subset (by hand).
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
	"boot-gicv2|virt,gic-version=2|max|1|256|poweroff|entered at EL1, running at EL1;;tls: self-test PASS .*; Armv8 AES used, PMULL used;;tls: accel: P-256 nistz256 Armv8, X25519 portable C, SHA-256 Armv8 FEAT_SHA256 \\(P-256 and X25519 agreement, P-256 signature: PASS\\);;1 cpus \\(1 enabled\\);;cpus: 1 started of 1 in the device tree; GICv2, 10 ms tick;;page frames: [0-9]+ of [0-9]+ free \\([0-9]+ MiB\\), [0-9]+ reserved; heap: 0 live;;entropy: RNDRRS \\(FEAT_RNG\\); CSPRNG ChaCha20 fast-key-erasure DRBG, 1 per-core instances seeded;;memory: 256 MiB in 1 range;;GICv2, 1 PCIe ECAM window\\(s\\), PL011 console, PL031 RTC, PSCI over HVC, virtual timer PPI 11;;PAN on, BTI on, PAC on, stack canary from RNDR;;MTE off \\(the CPU or machine lacks FEAT_MTE2 with tag memory\\);;$banner;;poweroff: powering off"
	"boot-gicv3-smp4-el2|virt,gic-version=3,virtualization=on|max|4|512|poweroff|entered at EL2, running at EL1;;4 cpus \\(4 enabled\\);;memory: 512 MiB;;GICv3, 1 PCIe ECAM window\\(s\\), PL011 console, PL031 RTC, PSCI over SMC;;PAN on, BTI on, PAC on;;$banner;;poweroff: powering off"
	"smp4-gicv2|virt,gic-version=2|max|4|512|test=smp|cpus: 4 started of 4 in the device tree; GICv2, 10 ms tick;;4 per-core instances seeded;;core 3: affinity 0x3, [1-9][0-9]* ticks;;scenario smp: every core ticks in its loop \\(4 cores\\)"
	"smp4-gicv3-el2|virt,gic-version=3,virtualization=on|max|4|512|test=smp|entered at EL2;;cpus: 4 started of 4 in the device tree; GICv3, 10 ms tick;;guard pages under 8 stacks;;core 3: affinity 0x3, [1-9][0-9]* ticks;;scenario smp: every core ticks in its loop \\(4 cores\\)"
	"smp64-gicv3|virt,gic-version=3|max|64|2048|test=smp|cpus: 64 started of 64 in the device tree; GICv3, 10 ms tick; MSI: GICv3 ITS;;guard pages under 128 stacks;;core 16: affinity 0x100, [1-9][0-9]* ticks;;scenario smp: every core ticks in its loop \\(64 cores\\)"
	"boot-nocrypto|virt,gic-version=2|max,neon=off,vfp=off|1|256|poweroff|tls: self-test PASS .*; Armv8 AES absent, PMULL absent;;tls: accel: P-256 nistz256 Armv8, X25519 portable C, SHA-256 Armv8 \\(P-256 and X25519 agreement, P-256 signature: PASS\\);;$banner;;poweroff: powering off"
	"no-entropy-cortex-a57|virt|cortex-a57|2|256|poweroff|PAN off \\(CPU lacks it\\), BTI off \\(CPU lacks it\\), PAC off \\(CPU lacks it\\), stack canary from the counter \\(weak\\);;kaslr: off \\(no entropy source\\);;MTE off \\(the CPU or machine lacks FEAT_MTE2 with tag memory\\);;PANIC: csprng: no entropy source: the CPU offers no RNDRRS;;stop code 54: powering off"
	"write-text|virt|max|1|256|test=write-text|data abort in the kernel, write: permission fault \\(level 3\\) in kernel text;;pc 0x[0-9a-f]+ \\(kernel text\\);;backtrace \\(link addresses\\): 0x;;$caught"
	"write-rodata|virt|max|1|256|test=write-rodata|write: permission fault \\(level 3\\) in kernel rodata;;$caught"
	"write-relocs|virt|max|1|256|test=write-relocs|write: permission fault \\(level 3\\) in the relocation table;;$caught"
	"write-pagetable|virt|max|1|256|test=write-pagetable|write: permission fault \\(level 3\\) in page tables;;$caught"
	"exec-data|virt|max|1|256|test=exec-data|instruction abort in the kernel: permission fault \\(level 3\\) in kernel data;;$caught"
	"null-deref|virt|max|1|256|test=null-deref|data abort in the kernel, read: translation fault \\(level [0-3]\\) in the null page;;$caught"
	"stack-overflow|virt|max|1|256|test=stack-overflow|translation fault \\(level 3\\) in guard page of a loop stack: stack overflow into its guard page;;$caught"
	"stack-smash|virt|max|1|256|test=stack-smash|PANIC: stack smashing detected;;stop code 51: powering off"
	"pac-forged-return|virt|max|1|256|test=pac-forged-return|overwriting my saved return address;;(pointer authentication failure|instruction abort in the kernel: .* in no address \\(a pointer corrupted, as by a failed authentication\\));;$caught"
	"bti-bad-target|virt|max|1|256|test=bti-bad-target|branch target exception \\(BTI\\) in the kernel;;$caught"
	"wx-audit|virt|max|1|256|test=wx-audit|scenario wx-audit: one data page made executable;;boot: FATAL: mmu: W\\^X audit FAILED before the switch"
)

mte_on="MTE on: heap blocks tagged, synchronous tag checks"
mte_scenarios=(
	"boot-mte-smp2-el2|virt,gic-version=3,virtualization=on,mte=on|max|2|256|test=smp|entered at EL2;;$mte_on;;tls: self-test PASS;;scenario smp: every core ticks in its loop \\(2 cores\\)"
	"mte-use-after-free|virt,mte=on|max|1|256|test=mte-use-after-free|reading a freed 64-byte block;;\\] E trap: data abort in the kernel, read: tag check fault in the heap: use after free, a free 64-byte block[[:cntrl:]]*\$;;tag check: pointer tag 0x[1-9a-f], memory tag 0x[0-9a-f];;$caught"
	"mte-overflow|virt,mte=on|max|1|256|test=mte-overflow|writing one byte past a 32-byte block;;\\] E trap: data abort in the kernel, write: tag check fault in the heap: overflow, 0 bytes past the 32 bytes requested of a live 32-byte block \\(mqtt\\)[[:cntrl:]]*\$;;$caught"
	"pac-forged-return-mte|virt,mte=on|max|1|256|test=pac-forged-return|$mte_on;;overwriting my saved return address;;(pointer authentication failure|instruction abort in the kernel: .* in no address \\(a pointer corrupted, as by a failed authentication\\));;$caught"
)
qemu_major() { "$1" --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9]*\)\..*/\1/p'; }
mte_qemu=${AARCH64_MTE_QEMU:-}
if [ -z "$mte_qemu" ] && [ -x "$build/deps/qemu-mte/usr/bin/qemu-system-aarch64" ]; then
	mte_qemu=$build/deps/qemu-mte/usr/bin/qemu-system-aarch64 # unpacked, not installed
fi
if [ -z "$mte_qemu" ] && [ "$(qemu_major qemu-system-aarch64)" -ge 8 ] 2>/dev/null; then
	mte_qemu=qemu-system-aarch64
fi
[ -n "$mte_qemu" ] && for s in "${mte_scenarios[@]}"; do scenarios+=("@$mte_qemu|$s"); done
# the system's QEMU before 8.0 (Debian 12's 7.2): the kernel must refuse its tag storage
if [ "$(qemu_major qemu-system-aarch64)" -lt 8 ] 2>/dev/null; then
	scenarios+=("mte-selftest-qemu7|virt,mte=on|max|1|256|poweroff|MTE off: the tag storage failed its self-test \\(one tag for several granules, as under QEMU before 8.0\\);;$banner;;poweroff: powering off")
fi

rc_all=0
for s in "${scenarios[@]}"; do
	qemu=qemu-system-aarch64
	case $s in @*) qemu=${s%%|*} qemu=${qemu#@} s=${s#*|} ;; esac # "@QEMU|scenario": another QEMU
	IFS='|' read -r name machine cpu smp mem cmdline pats <<<"$s"
	[[ $name =~ ${AARCH64_BOOT_ONLY:-.} ]] || continue # a regex of names: a subset, by hand
	log=$logdir/$name.log
	t0=$(date +%s%N)
	timeout "$timeout_s" "$qemu" -M "$machine" -cpu "$cpu" -smp "$smp" -m "$mem" \
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
		# a development fault report gives pc at its link address (addr2line reads it): inside
		# the ELF's text, where the slid image (moved by at least its own size) never runs
		if [ -z "$why" ] && [ "$name" = write-text ]; then
			pc=$(grep -Eo 'pc 0x[0-9a-f]+' "$log" | head -1 | cut -c6-)
			lo=$(nm "$build/aarch64/urmqtt.elf" | awk '$3 == "a64_text_start" { print $1 }')
			hi=$(nm "$build/aarch64/urmqtt.elf" | awk '$3 == "a64_text_end" { print $1 }')
			if [ -z "$pc" ] || [ -z "$lo" ] || [ -z "$hi" ] || ((0x$pc < 0x$lo || 0x$pc >= 0x$hi)); then
				why="pc ${pc:-missing} is not a link address of the text (0x$lo..0x$hi)"
			fi
		fi
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
# KASLR (ADR-084). relocatable: the image with every table site moved by 2 MiB is
# exactly a link 2 MiB higher (urmqtt-relocs check, which also runs the boot's applier
# for its smallest and largest slide), and the table a link carrying it gives is the
# table it carries, which the Image holds, byte for byte, on a page of its own. kaslr-differs: two boots'
# slides differ (one of ~1,800 64 KiB slots each under 256 MiB: a third boot settles a tie),
# and each boot's image line sits at the link address plus its own slide.
# kaslr-uefi: the same through UEFI firmware, the slide from EFI_RNG_PROTOCOL.
# kaslr-bad-table: the Image with its first table entry pointing outside it must stop
# with the refusal, not boot or scribble.
if [[ "kaslr" =~ ${AARCH64_BOOT_ONLY:-.} ]]; then
	relocs_tool=$build/host/tools/urmqtt-relocs
	# The table's offset in the Image: the one page-aligned "URMQREL1" (kernel.ld starts
	# the table on a page; the applier's own copy of the magic sits in .rodata).
	table_at() { grep -obUaF URMQREL1 "$1" | cut -d: -f1 | awk '$1 % 4096 == 0 { n++; o = $1 } END { if (n == 1) print o }'; }
	log=$logdir/relocatable.log
	if "$relocs_tool" check "$build/aarch64/urmqtt.elf" "$build/aarch64/urmqtt.reloc.elf" \
		"$build/aarch64/urmqtt.slid.elf" >"$log" 2>&1 &&
		"$relocs_tool" table "$build/aarch64/urmqtt.reloc.elf" "$logdir/relocs.again" >>"$log" 2>&1 &&
		cmp "$logdir/relocs.again" "$build/aarch64/urmqtt.relocs" >>"$log" 2>&1 &&
		[ -s "$build/aarch64/urmqtt.relocs" ] &&
		off=$(table_at "$img") && [ -n "$off" ] &&
		cmp -s <(tail -c +$((off + 1)) "$img" | head -c "$(stat -c %s "$build/aarch64/urmqtt.relocs")") \
			"$build/aarch64/urmqtt.relocs"; then
		echo "PASS aarch64/relocatable ($(sed -n 's/^relocs: PASS: \([0-9]*\) sites.*/\1 sites/p' "$log"), table $(stat -c %s "$build/aarch64/urmqtt.relocs") B, carried by the Image)"
	else
		echo "FAIL aarch64/relocatable (see $log)"
		rc_all=1
	fi
	kaslr_slide() { tr -d '\r' <"$1" | sed -n 's/.*kaslr: slide \(0x[0-9a-f]*\) from RNDR (one of [0-9]* 64 KiB slots); \([0-9]*\) of \2 sites moved.*/\1/p'; }
	kaslr_at() { tr -d '\r' <"$1" | sed -n 's/.*image: [0-9]* KiB at \(0x[0-9a-f]*\).*/\1/p'; }
	kaslr_boot() {
		timeout "$timeout_s" qemu-system-aarch64 -M virt,gic-version=2 -cpu max -smp 1 -m 256 -nographic \
			-no-reboot -nodefaults -serial stdio -kernel "$1" -append poweroff </dev/null >"$2" 2>&1
	}
	slides=() why=""
	for try in 1 2 3; do
		l=$logdir/kaslr-$try.log
		kaslr_boot "$img" "$l"
		s1=$(kaslr_slide "$l")
		at=$(kaslr_at "$l")
		if [ -z "$s1" ] || [ -z "$at" ] || [ $((0x40200000 + s1)) != $((at)) ] || (((s1 & 0xffff) != 0)); then
			why="boot $try: slide '${s1:-none}', image at '${at:-?}'; see $l"
			break
		fi
		slides+=("$s1")
		[ ${#slides[@]} -ge 2 ] && [ "${slides[0]}" != "${slides[-1]}" ] && break
	done
	if [ -z "$why" ] && [ ${#slides[@]} -ge 2 ] && [ "${slides[0]}" != "${slides[-1]}" ]; then
		echo "PASS aarch64/kaslr-differs (tcg, slides ${slides[0]} and ${slides[-1]}, image where its slide says)"
	else
		echo "FAIL aarch64/kaslr-differs (${why:-slides ${slides[*]:-none}})"
		rc_all=1
	fi
	# The UEFI path (efi.c): the slide from the firmware's EFI_RNG_PROTOCOL (edk2 offers
	# it over a virtio-rng device), the image where its slide says, both cores up.
	fw=${AARCH64_EFI_FIRMWARE:-/usr/share/qemu-efi-aarch64/QEMU_EFI.fd}
	if [ -f "$fw" ]; then
		log=$logdir/kaslr-uefi.log
		timeout "$timeout_s" qemu-system-aarch64 -M virt,gic-version=3 -cpu max -smp 2 -m 512 -nographic \
			-no-reboot -nodefaults -serial stdio -bios "$fw" -device virtio-rng-pci -kernel "$img" \
			-append poweroff </dev/null >"$log" 2>&1
		rc=$?
		s1=$(tr -d '\r' <"$log" | sed -n 's/.*kaslr: slide \(0x[0-9a-f]*\) from EFI_RNG_PROTOCOL (one of [0-9]* 64 KiB slots); \([0-9]*\) of \2 sites moved.*/\1/p')
		at=$(kaslr_at "$log")
		if [ "$rc" = 0 ] && [ -n "$s1" ] && [ -n "$at" ] && [ $((0x40200000 + s1)) = $((at)) ] &&
			grep -aq "cpus: 2 started of 2 in the ACPI tables" "$log" && grep -aq "bring-up done" "$log"; then
			echo "PASS aarch64/kaslr-uefi (tcg, slide $s1 from EFI_RNG_PROTOCOL, image where its slide says, 2 cores)"
		else
			echo "FAIL aarch64/kaslr-uefi (exit $rc, slide '${s1:-none}', image at '${at:-?}'; see $log)"
			rc_all=1
		fi
	else
		echo "SKIP aarch64/kaslr-uefi (needs file $fw: Debian package qemu-efi-aarch64)"
	fi
	bad=$logdir/kaslr-bad-table.img
	log=$logdir/kaslr-bad-table.log
	rm -f "$bad"
	off=$(table_at "$img")
	if [ -n "$off" ] && cp "$img" "$bad" &&
		printf '\x00\xff\xff\x7f' | dd of="$bad" bs=1 seek=$((off + 12)) conv=notrunc status=none; then
		kaslr_boot "$bad" "$log"
		rc=$?
	else
		rc=none
	fi
	if [ "$rc" = 0 ] && tr -d '\r' <"$log" |
		grep -q "PANIC: kaslr: relocation table refused (site outside the image, entry 0 of [0-9]*): damaged image, not moved" &&
		tr -d '\r' <"$log" | grep -q "stop code 50: powering off" && ! grep -q "kaslr: slide" "$log"; then
		echo "PASS aarch64/kaslr-bad-table (tcg, an entry outside the image: refused, boot stopped)"
	else
		echo "FAIL aarch64/kaslr-bad-table (exit $rc; see $log)"
		rc_all=1
	fi
fi
if [ -z "$mte_qemu" ]; then
	for n in boot-mte-smp2-el2 mte-use-after-free mte-overflow pac-forged-return-mte; do
		# the one QEMU >= 8.0 make test provides (tools/deps/fetch-qemu-mte.sh, ADR-082)
		echo "SKIP aarch64/$n (needs file $build/deps/qemu-mte/usr/bin/qemu-system-aarch64: MTE needs a QEMU >= 8.0, qemu-system-aarch64 is $(qemu-system-aarch64 --version | head -1 | sed 's/.*version //'))"
	done
fi
exit $rc_all
