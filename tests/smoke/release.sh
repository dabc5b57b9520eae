#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make release end to end (tools/release, ADR-074), with a throwaway PKI (tools/release/mkpki.sh,
# openssl), a minimal production configuration and a throwaway minisign key, in
# BUILD/release-test (its kernel tree is incremental: `make test` builds it beforehand with
# --prepare, so this run only re-embeds the fresh PKI and relinks). Results:
#   release/build             make release's script wrote the ISO, raw, qcow2, SBOM, SHA256SUMS
#                             and a signature for each, from the throwaway PKI
#   release/refuse-dev-certs  the tree's development PKI (BUILD/prod/dev/certs, else one made by
#                             tools/certs/mkcerts.sh) is refused with its reason, and so is a CA
#                             with another name but the development CA's key; nothing is built
#   release/refuse-dev-profile  a configuration without core.profile = "prod" is refused
#   release/sums              sha256sum -c SHA256SUMS; minisign -V verifies every file with
#                             minisign.pub; a changed byte fails verification
#   release/reproduce         bit for bit (issue 20): a second kernel tree, BUILD/release-test/
#                             tree-b, built from scratch by `make test`'s build phase after the
#                             first tree (another directory, a later time: --prepare-b), given
#                             this run's configuration, PKI and key, gives the same ISO, x86_64
#                             and aarch64 raw and qcow2 as the first tree (make reproduce builds
#                             both trees from scratch, outside make test)
#   release/sbom              the SBOM is CycloneDX JSON listing mbedTLS and SQLite with the
#                             versions and SHA-256 of tools/deps/pins.txt and licences, gcc and
#                             binutils with versions
#   release/iso-bios          the ISO as a CD under SeaBIOS: GRUB's menu, the default entry
#                             "urMQTT live", the production banner "booted via Multiboot2",
#                             "live: running from RAM" (the data disk untouched), the
#                             broker listening, and device-1 gets CONNACK 0 over mTLS
#   release/iso-uefi          the same under OVMF (UEFI, TCG)
#   release/iso-usb           the ISO as a USB disk (usb-storage) under OVMF
#   release/iso-usb-bios      the ISO as a USB disk under SeaBIOS (GRUB's hybrid MBR)
#   release/raw-uefi          the raw disk alone under OVMF: GRUB from its ESP, the data
#                             partition formatted in place ("an interrupted format done
#                             again"), and a TLS 1.3 client with a device certificate of the
#                             throwaway CA gets CONNACK 0 (the PKI given is the one embedded)
#   release/raw-bios          the raw disk alone under SeaBIOS: GRUB's boot.img in LBA 0, its
#                             core in the BIOS boot partition, the data partition formatted in
#                             place, CONNACK 0 over mTLS
#   release/raw-bios-2        that disk, after its first format, booted by SeaBIOS again: the
#                             format kept LBA 0's boot code and the BIOS boot partition; "our
#                             disk; database opened", CONNACK 0 over mTLS
#   release/iso-aarch64-uefi  the ISO as a CD (virtio-scsi) under AAVMF (qemu-system-aarch64
#                             -M virt -cpu max, TCG): the kernel as EFI/BOOT/BOOTAA64.EFI of
#                             the ISO's EFI image shows its menu (arch/aarch64/efi_menu.c),
#                             nobody types, entry 1 after the countdown: "live: running from
#                             RAM" (the attached disk never used), CONNACK 0
#   release/iso-aarch64-usb   the ISO as a USB disk under AAVMF, the same
#   release/iso-aarch64-install  the ISO as a CD under AAVMF with an empty 256 MiB disk; the
#                             test types 2 at the menu (its serial input is a FIFO): the ESP
#                             image read from the boot volume, the disk named and written, the
#                             machine off by itself; then that disk alone under AAVMF: no
#                             menu, the data partition formatted in place, CONNACK 0
#   release/raw-aarch64-uefi  the aarch64 raw disk alone under AAVMF: the data partition
#                             formatted in place, CONNACK 0
# All boots run at once (raw-bios-2 after raw-bios), each bounded (BOOT_S, 300 s: up to nine
# TCG guests share the cores; alone each takes 10-40 s); QEMU dies on exit.
# RELEASE_BOOTS="raw-bios iso-aarch64-uefi ..." boots only those (raw-bios brings raw-bios-2,
# iso-aarch64-install its second boot).
# Usage: release.sh BUILD | release.sh --prepare BUILD | release.sh --prepare-b BUILD
set -uo pipefail
prepare=0
case ${1:-} in --prepare) prepare=1; shift ;; --prepare-b) prepare=2; shift ;; esac
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cd "$src" || exit 1
work=$build/release-test
tree=$work/tree
out=$work/out
logs=$build/test-logs/release
py=/usr/bin/python3
boot_s=${BOOT_S:-300}
failed=0
pids=()
tmp=$(mktemp -d /tmp/urmqtt-release-test.XXXXXX)
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	{ wait; } 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
pass() { echo "PASS release/$1${2:+ ($2)}"; }
fail() { echo "FAIL release/$1${2:+ ($2)}"; failed=1; }
site_conf() { printf '[core]\nprofile = "prod"\nwatchdog_budget_ms = 100\nwatchdog_hard_ms = 2s\n'; }
treeb=$work/tree-b

# --prepare-b: the reproduce check's second tree, from scratch (release.sh --fresh), with a
# PKI and key of its own (the smoke run relinks it with its own); never touches the first
# tree's inputs, so make may run it beside --prepare. Its end time is kept for the report.
if [ $prepare = 2 ]; then
	mkdir -p "$work" "$logs"
	site_conf >"$tmp/site.conf"
	rm -f "$treeb.built"
	if ! { PKI_INTERMEDIATE=1 tools/release/mkpki.sh "$tmp/pki" 2 localhost IP:127.0.0.1 >/dev/null &&
		NOPASS=1 tools/release/keygen.sh "$tmp/key/release.key" >/dev/null 2>&1 &&
		tools/release/release.sh --build "$build" --tree "$treeb" --fresh --key "$tmp/key/release.key" --jobs "$(nproc)" \
			--config "$tmp/site.conf" --certs "$tmp/pki" --out "$tmp/out" >"$logs/prepare-b.log" 2>&1; }; then
		tail -20 "$logs/prepare-b.log" >&2
		echo "release-repro-prep: failed (log $logs/prepare-b.log)" >&2
		exit 1
	fi
	date -u +%H:%M:%S >"$treeb.built"
	exit 0
fi

mkdir -p "$work" "$logs"
# TCG runs about 20 times slower than the hardware prod's watchdog is sized for (as dev.conf).
site_conf >"$tmp/site.conf"
cmp -s "$tmp/site.conf" "$work/site.conf" || cp "$tmp/site.conf" "$work/site.conf"
rm -rf "$work/pki" "$tmp/key"
# The server's certificate is issued by an intermediate CA: the image sends the chain and a
# client that trusts only ca.crt verifies it (raw-uefi below).
PKI_INTERMEDIATE=1 tools/release/mkpki.sh "$work/pki" 2 localhost IP:127.0.0.1 >/dev/null || { fail build "mkpki failed"; exit 1; }
NOPASS=1 tools/release/keygen.sh "$tmp/key/release.key" >/dev/null 2>&1 || { fail build "keygen failed"; exit 1; }
rel() { tools/release/release.sh --build "$build" --tree "$tree" --key "$tmp/key/release.key" --jobs "$(nproc)" "$@"; }

if [ $prepare = 1 ]; then
	rel --config "$work/site.conf" --certs "$work/pki" --out "$work/out" >"$logs/prepare.log" 2>&1 ||
		{ tail -20 "$logs/prepare.log" >&2; echo "release-test-prep: failed (log $logs/prepare.log)" >&2; exit 1; }
	exit 0
fi
for t in qemu-system-x86_64 minisign xorriso grub-mkimage mkfs.fat sfdisk qemu-img "$py"; do
	command -v "$t" >/dev/null || { echo "SKIP release/all (needs command $t)"; exit 0; }
done
for f in /usr/lib/grub/x86_64-efi /usr/lib/grub/i386-pc /usr/share/OVMF/OVMF_CODE_4M.fd; do
	[ -e "$f" ] || { echo "SKIP release/all (needs file $f)"; exit 0; }
done

# ---- refusals first: they must stop before any build
devpki=$build/prod/dev/certs
if [ ! -f "$devpki/ca.key" ]; then
	devpki=$work/dev/certs # a development PKI where the release looks for them (*/dev/certs)
	[ -f "$devpki/ca.key" ] || tools/certs/mkcerts.sh "$devpki" 1 urn:urmqtt:service: >/dev/null
fi
rel --config "$work/site.conf" --certs "$devpki" --out "$tmp/dev-out" >"$logs/refuse-dev.log" 2>&1
rc=$?
# A CA named otherwise but holding the development CA's key, over a server certificate of it.
mkdir -p "$tmp/disguised"
openssl req -x509 -new -key "$devpki/ca.key" -sha256 -days 30 -subj "/CN=Totally Real Production CA" \
	-addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" \
	-out "$tmp/disguised/ca.crt" 2>/dev/null
cp "$work/pki/server.key" "$tmp/disguised/server.key"
openssl req -new -key "$tmp/disguised/server.key" -subj /CN=localhost -out "$tmp/d.csr" 2>/dev/null
openssl x509 -req -in "$tmp/d.csr" -CA "$tmp/disguised/ca.crt" -CAkey "$devpki/ca.key" -days 30 \
	-set_serial 7 -out "$tmp/disguised/server.crt" 2>/dev/null
rel --config "$work/site.conf" --certs "$tmp/disguised" --out "$tmp/dev-out" >"$logs/refuse-disguised.log" 2>&1
rc2=$?
if [ $rc -ne 0 ] && grep -q "refused: .*development CA" "$logs/refuse-dev.log" &&
	[ $rc2 -ne 0 ] && grep -q "refused: .*has the key of the development CA" "$logs/refuse-disguised.log" &&
	[ ! -e "$tmp/dev-out" ]; then
	pass refuse-dev-certs "$(grep -m1 'refused:' "$logs/refuse-dev.log" | cut -c1-110)...; a renamed CA with the dev key too"
else
	fail refuse-dev-certs "exit $rc/$rc2; see $logs/refuse-dev.log, $logs/refuse-disguised.log"
fi
printf '[core]\nprofile = "dev"\n' >"$tmp/dev.conf"
if ! rel --config "$tmp/dev.conf" --certs "$work/pki" --out "$tmp/dev-out" >"$logs/refuse-profile.log" 2>&1 &&
	grep -q 'needs core.profile = "prod"' "$logs/refuse-profile.log"; then
	pass refuse-dev-profile
else
	fail refuse-dev-profile "see $logs/refuse-profile.log"
fi

# ---- the release
t0=$(date +%s)
if ! rel --config "$work/site.conf" --certs "$work/pki" --out "$out" >"$logs/build.log" 2>&1; then
	fail build "see $logs/build.log"
	exit 1
fi
t_build=$(($(date +%s) - t0))
iso=$(find "$out" -maxdepth 1 -name "urmqtt-*.iso" | head -1)
name=$(basename "$iso" .iso)
raw=$out/$name-x86_64.raw
qcow=$out/$name-x86_64.qcow2
a64raw=$out/$name-aarch64.raw
a64qcow=$out/$name-aarch64.qcow2
sbom=$out/$name.cdx.json
missing=""
for f in "$iso" "$raw" "$qcow" "$a64raw" "$a64qcow" "$sbom" "$out/SHA256SUMS" "$out/minisign.pub"; do
	[ -s "$f" ] || missing="$missing $(basename "$f")"
	[ "$f" = "$out/minisign.pub" ] || [ -s "$f.minisig" ] || missing="$missing $(basename "$f").minisig"
done
if [ -z "$missing" ] && qemu-img info "$qcow" 2>/dev/null | grep -q 'file format: qcow2' &&
	qemu-img info "$a64qcow" 2>/dev/null | grep -q 'file format: qcow2'; then
	pass build "$t_build s; iso $(($(stat -c %s "$iso") / 1024)) KiB, raw $(($(stat -c %s "$raw") >> 20)) MiB ($(($(du -k "$raw" | cut -f1) / 1024)) MiB allocated), qcow2 $(($(stat -c %s "$qcow") / 1024)) KiB"
else
	fail build "missing or bad:${missing:- qcow2}"
fi

# ---- reproduce: the second tree, relinked with this run's inputs, gives the same bytes
if [ ! -s "$treeb.built" ]; then
	fail reproduce "no second tree: make test's build phase runs \`tests/smoke/release.sh --prepare-b\` (make release-repro-prep)"
elif ! tools/release/release.sh --build "$build" --tree "$treeb" --key "$tmp/key/release.key" --jobs "$(nproc)" \
	--config "$work/site.conf" --certs "$work/pki" --out "$tmp/out-b" >"$logs/build-b.log" 2>&1; then
	fail reproduce "the second tree's release failed; see $logs/build-b.log"
else
	why="" same=0
	for f in "$iso" "$raw" "$qcow" "$a64raw" "$a64qcow"; do
		if cmp -s "$f" "$tmp/out-b/$(basename "$f")"; then
			same=$((same + 1))
		else
			why="${why:+$why; }$(basename "$f") differs ($(cmp "$f" "$tmp/out-b/$(basename "$f")" 2>&1 | head -c 120))"
		fi
	done
	if [ -z "$why" ]; then
		pass reproduce "$(basename "$tree") and $(basename "$treeb") (from scratch, finished $(cat "$treeb.built") UTC): $same of 5 images identical, ISO sha256 $(sha256sum <"$iso" | cut -c1-16)..."
	else
		fail reproduce "$why; trees $tree and $treeb"
	fi
fi

# ---- sums and signatures
why=""
(cd "$out" && sha256sum --quiet -c SHA256SUMS) >"$logs/sums.log" 2>&1 || why="sha256sum -c failed"
for f in "$iso" "$raw" "$qcow" "$a64raw" "$a64qcow" "$sbom" "$out/SHA256SUMS"; do
	minisign -Vm "$f" -p "$out/minisign.pub" -q >>"$logs/sums.log" 2>&1 || why="${why:+$why; }minisign -V $(basename "$f") failed"
done
for f in "$iso" "$raw" "$qcow" "$a64raw" "$a64qcow" "$sbom"; do
	grep -q "  $(basename "$f")\$" "$out/SHA256SUMS" || why="${why:+$why; }$(basename "$f") not in SHA256SUMS"
done
cp "$sbom" "$tmp/tampered.json"
printf ' ' >>"$tmp/tampered.json"
cp "$sbom.minisig" "$tmp/tampered.json.minisig"
minisign -Vm "$tmp/tampered.json" -p "$out/minisign.pub" -q >/dev/null 2>&1 && why="${why:+$why; }a changed SBOM still verifies"
if [ -z "$why" ]; then pass sums "SHA256SUMS lists the 6 files, 7 minisign signatures verify; a changed byte does not"; else fail sums "$why; see $logs/sums.log"; fi

# ---- SBOM
r=$(SBOM=$sbom PINS=tools/deps/pins.txt "$py" - 2>&1 <<-'PY'
	import json, os
	b = json.load(open(os.environ["SBOM"]))
	pins = {}
	for line in open(os.environ["PINS"]):
	    f = line.split("#", 1)[0].split()
	    if len(f) == 5:
	        pins[f[0]] = (f[2], f[4])
	bad = []
	if b.get("bomFormat") != "CycloneDX" or not b.get("specVersion", "").startswith("1."):
	    bad.append("not CycloneDX")
	comps = {c["name"]: c for c in b.get("components", [])}
	for pin, title in (("mbedtls", "Mbed TLS"), ("sqlite3", "SQLite")):
	    c = comps.get(title)
	    if not c:
	        bad.append(title + " missing")
	        continue
	    ver, digest = pins[pin]
	    if c.get("version") != ver:
	        bad.append("%s version %s, pinned %s" % (title, c.get("version"), ver))
	    if {"alg": "SHA-256", "content": digest} not in c.get("hashes", []):
	        bad.append(title + " digest differs from the pin")
	    if not c.get("licenses"):
	        bad.append(title + " has no licence")
	tools = {t["name"]: t.get("version", "") for t in b["metadata"]["tools"]["components"]}
	for t in ("gcc", "binutils"):
	    if not tools.get(t) or tools[t] == "unknown":
	        bad.append(t + " version missing")
	print("; ".join(bad) if bad else "ok mbedTLS %s, SQLite %s, gcc %s, binutils %s" % (
	    comps["Mbed TLS"]["version"], comps["SQLite"]["version"], tools["gcc"], tools["binutils"]))
	PY
)
if [[ $r == ok* ]]; then pass sbom "${r#ok }"; else fail sbom "$r"; fi

# ---- boots: all at once (RELEASE_BOOTS="NAME ..." runs only those; raw-bios-2 follows
# raw-bios on the same disk)
only=${RELEASE_BOOTS:-}
want() {
	[ -z "$only" ] || [[ " $only " == *" $1 "* ]] || { [ "$1" = raw-bios-2 ] && [[ " $only " == *" raw-bios "* ]]; } ||
		{ [ "$1" = iso-aarch64-install-2 ] && [[ " $only " == *" iso-aarch64-install "* ]]; }
}
freeport() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.fd
aavmf_code=/usr/share/AAVMF/AAVMF_CODE.fd aavmf_vars=/usr/share/AAVMF/AAVMF_VARS.fd
a64raw=$out/$name-aarch64.raw
declare -A pid_of=() port_of=() start_s=() done_s=() tls_of=() skip_of=() serial_in=()
# boot NAME FIRMWARE(bios|uefi|aavmf) QEMU_ARGS...: console in $logs/guest-NAME.log; with
# serial_in[NAME] (a FIFO), the serial port's input is that FIFO
boot() {
	local n=$1 fw=$2
	shift 2
	local fwargs=() machine=(qemu-system-x86_64 -M q35 -accel tcg -cpu max)
	if [ "$fw" = uefi ]; then
		cp /usr/share/OVMF/OVMF_VARS_4M.fd "$tmp/vars-$n.fd"
		fwargs=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$ovmf_code"
			-drive "if=pflash,format=raw,unit=1,file=$tmp/vars-$n.fd")
	elif [ "$fw" = aavmf ]; then
		cp "$aavmf_vars" "$tmp/vars-$n.fd"
		# shellcheck disable=SC2054 # the commas are QEMU's
		machine=(qemu-system-aarch64 -M virt,gic-version=3 -accel tcg -cpu max)
		fwargs=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$aavmf_code"
			-drive "if=pflash,format=raw,unit=1,file=$tmp/vars-$n.fd")
	fi
	: >"$logs/guest-$n.log"
	if [ -n "${serial_in[$n]:-}" ]; then
		nice -n 19 "${machine[@]}" -m 1G -smp 2 -display none -no-reboot \
			-nodefaults -serial stdio "${fwargs[@]}" "$@" <"${serial_in[$n]}" >"$logs/guest-$n.log" 2>"$logs/qemu-$n.log" &
	else
		nice -n 19 "${machine[@]}" -m 1G -smp 2 -display none -no-reboot \
			-nodefaults -serial "file:$logs/guest-$n.log" "${fwargs[@]}" "$@" </dev/null >"$logs/qemu-$n.log" 2>&1 &
	fi
	pids+=($!)
	pid_of[$n]=$!
	start_s[$n]=$(date +%s)
}
disk() { # NAME: a blank 256 MiB data disk on virtio-blk
	truncate -s 256M "$tmp/data-$1.img"
	echo -drive "file=$tmp/data-$1.img,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0
}
# The boots an mTLS client connects to: the guest's 8883 forwarded to a port of ours.
for n in iso-bios iso-uefi iso-usb iso-usb-bios raw-uefi raw-bios raw-bios-2 iso-aarch64-uefi iso-aarch64-usb raw-aarch64-uefi \
	iso-aarch64-install-2; do
	port_of[$n]=$(freeport)
done
net() { # NAME: user networking (run in $(...): reads port_of only)
	if [ -n "${port_of[$1]:-}" ]; then
		echo -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:${port_of[$1]}-10.0.2.15:8883" -device virtio-net-pci,netdev=n0,romfile=
	else
		echo -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile=
	fi
}
# The aarch64 cases need the aarch64 QEMU and firmware (Debian qemu-system-arm, qemu-efi-aarch64).
a64_missing=""
command -v qemu-system-aarch64 >/dev/null || a64_missing="command qemu-system-aarch64"
for f in "$aavmf_code" "$aavmf_vars"; do [ -e "$f" ] || a64_missing="${a64_missing:+$a64_missing, }file $f"; done
# shellcheck disable=SC2046 # disk and net print words
{
	want iso-bios && boot iso-bios bios -cdrom "$iso" $(disk iso-bios) $(net iso-bios)
	want iso-uefi && boot iso-uefi uefi -cdrom "$iso" $(disk iso-uefi) $(net iso-uefi)
	want iso-usb && boot iso-usb uefi -device qemu-xhci -drive "file=$iso,if=none,id=u0,format=raw,readonly=on" \
		-device usb-storage,drive=u0,removable=on,bootindex=0 $(disk iso-usb) $(net iso-usb)
	want iso-usb-bios && boot iso-usb-bios bios -device qemu-xhci -drive "file=$iso,if=none,id=u0,format=raw,readonly=on" \
		-device usb-storage,drive=u0,removable=on,bootindex=0 $(disk iso-usb-bios) $(net iso-usb-bios)
	if want raw-uefi; then
		cp "$raw" "$tmp/raw.img"
		boot raw-uefi uefi -drive "file=$tmp/raw.img,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 $(net raw-uefi)
	fi
	if want raw-bios; then
		cp "$raw" "$tmp/raw-bios.img"
		boot raw-bios bios -drive "file=$tmp/raw-bios.img,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 $(net raw-bios)
	fi
	for n in iso-aarch64-uefi iso-aarch64-usb raw-aarch64-uefi iso-aarch64-install; do
		want $n || continue
		[ -z "$a64_missing" ] || { skip_of[$n]="needs $a64_missing"; continue; }
		case $n in
		iso-aarch64-uefi) boot $n aavmf -device virtio-scsi-pci -drive "file=$iso,if=none,id=c0,format=raw,media=cdrom,readonly=on" \
			-device scsi-cd,drive=c0,bootindex=0 $(disk $n) $(net $n) ;;
		iso-aarch64-usb) boot $n aavmf -device qemu-xhci -drive "file=$iso,if=none,id=u0,format=raw,readonly=on" \
			-device usb-storage,drive=u0,removable=on,bootindex=0 $(disk $n) $(net $n) ;;
		raw-aarch64-uefi)
			if [ -s "$a64raw" ]; then
				cp "$a64raw" "$tmp/raw-aarch64.img"
				boot $n aavmf -drive "file=$tmp/raw-aarch64.img,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 $(net $n)
			fi ;;
		iso-aarch64-install)
			truncate -s 256M "$tmp/a64-inst.img"
			mkfifo "$tmp/a64-in" && exec 4<>"$tmp/a64-in" # held open: QEMU never sees EOF
			serial_in[$n]=$tmp/a64-in
			boot $n aavmf -device virtio-scsi-pci -drive "file=$iso,if=none,id=c0,format=raw,media=cdrom,readonly=on" \
				-device scsi-cd,drive=c0,bootindex=0 -drive "file=$tmp/a64-inst.img,if=none,id=d0,format=raw" \
				-device virtio-blk-pci,drive=d0 $(net $n) ;;
		esac
	done
}
names=()
for n in iso-bios iso-uefi iso-usb iso-usb-bios raw-uefi raw-bios raw-bios-2 iso-aarch64-uefi iso-aarch64-usb raw-aarch64-uefi \
	iso-aarch64-install iso-aarch64-install-2; do
	want $n && names+=("$n")
done
text() { tr -d '\r' <"$logs/guest-$1.log" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g'; }
up() { # NAME: the console shows everything a served boot of that kind shows
	local t n=$1
	[ -n "${pid_of[$n]:-}" ] || return 1
	t=$(text "$n")
	grep -aq 'listening on TCP 8883' <<<"$t" && grep -aq 'DHCP lease: ' <<<"$t" || return 1
	case $n in
	iso-aarch64-install-2) # the installed disk's copy has no default options: no menu
		grep -aq 'urMQTT aarch64 (production build), entered at EL' <<<"$t" && ! grep -aq 'urMQTT boot menu' <<<"$t" &&
			grep -aq 'store: virtio-blk0: an interrupted format done again' <<<"$t" ;;
	iso-aarch64-*) # the ISO's Arm copy: its menu, nobody types, entry 1 (live): the disk is never used
		grep -aq 'urMQTT boot menu (aarch64)' <<<"$t" && grep -aq 'urMQTT: booting entry 1 (urmqtt.mode=live)' <<<"$t" &&
			grep -aq 'urMQTT aarch64 (production build), entered at EL' <<<"$t" &&
			grep -aq 'live: running from RAM, no disk is written' <<<"$t" ;;
	*aarch64*)
		grep -aq 'urMQTT aarch64 (production build), entered at EL' <<<"$t" &&
			grep -aqE 'store: virtio-blk0: (blank disk formatted|an interrupted format done again)' <<<"$t" ;;
	raw-bios-2)
		grep -aq 'Booting .urMQTT' <<<"$t" && grep -aq 'urMQTT x86_64 (production build), booted via Multiboot2' <<<"$t" &&
			grep -aq 'store: virtio-blk0: our disk; database opened and checked' <<<"$t" ;;
	iso-*) # the ISO's default entry is live (issue 20): the attached disk is never used
		grep -aq 'Booting .urMQTT live' <<<"$t" && grep -aq 'urMQTT x86_64 (production build), booted via Multiboot2' <<<"$t" &&
			grep -aq 'live: running from RAM, no disk is written' <<<"$t" ;;
	*)
		grep -aq 'Booting .urMQTT' <<<"$t" && grep -aq 'urMQTT x86_64 (production build), booted via Multiboot2' <<<"$t" &&
			grep -aqE 'store: virtio-blk0: (blank disk formatted|an interrupted format done again)' <<<"$t" ;;
	esac
}
# tls NAME: one TLS 1.3 connection to that guest with device-1's certificate of the test's CA;
# prints "connack 0 TLSv1.3" when the broker accepts it.
tls() {
	PORT=${port_of[$1]} CERTS=$work/pki timeout 60 "$py" - 2>&1 <<-'PY'
	import os, socket, ssl, struct
	port, certs = int(os.environ["PORT"]), os.environ["CERTS"]
	c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
	c.minimum_version = ssl.TLSVersion.TLSv1_3
	c.load_verify_locations(certs + "/ca.crt")
	c.load_cert_chain(certs + "/device-1.crt", certs + "/device-1.key")
	cid = b"device-1"
	connect = b"\x10" + bytes([12 + len(cid)]) + b"\x00\x04MQTT\x04\x02\x00\x00" + struct.pack(">H", len(cid)) + cid
	try:
	    s = c.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=40), server_hostname="localhost")
	    s.sendall(connect)
	    h = b""
	    while len(h) < 4:
	        d = s.recv(4 - len(h))
	        if not d:
	            raise EOFError("closed")
	        h += d
	    print("connack" if h[0] == 0x20 else "answered", h[3], s.version())
	except Exception as e:
	    print("error", type(e).__name__, e)
	PY
}
kill_boot() { kill -KILL "${pid_of[$1]}" 2>/dev/null; { wait "${pid_of[$1]}"; } 2>/dev/null; }
while :; do
	now=$(date +%s)
	left=0
	for n in "${names[@]}"; do
		[ -n "${done_s[$n]:-}" ] || [ -n "${skip_of[$n]:-}" ] && continue
		if [ -z "${pid_of[$n]:-}" ]; then # raw-bios-2 and iso-aarch64-install-2 start late
			first=${n%-2}
			if [ "$first" != "$n" ] && [ -n "${pid_of[$first]:-}" ] && [ -z "${done_s[$first]:-}" ] &&
				[ $((now - start_s[$first])) -lt "$boot_s" ]; then
				left=1
			fi
			continue
		fi
		if [ "$n" = iso-aarch64-install ]; then # type 2 at the menu, then wait for the power-off
			t=$(text "$n")
			if [ -z "${typed_s:-}" ] && grep -aq 'urMQTT boot menu (aarch64)' <<<"$t"; then
				printf '2' >&4
				typed_s=$((now - start_s[$n]))
			fi
			if ! kill -0 "${pid_of[$n]}" 2>/dev/null; then
				{ wait "${pid_of[$n]}"; } 2>/dev/null
				done_s[$n]=$((now - start_s[$n]))
				if grep -aq 'install: done, powering off' <<<"$t"; then
					# shellcheck disable=SC2046 # net prints words
					boot iso-aarch64-install-2 aavmf -drive "file=$tmp/a64-inst.img,if=none,id=d0,format=raw" \
						-device virtio-blk-pci,drive=d0 $(net iso-aarch64-install-2)
					left=1
				fi
			elif [ $((now - start_s[$n])) -lt "$boot_s" ]; then
				left=1
			else
				kill_boot "$n"
			fi
			continue
		fi
		if up "$n"; then
			done_s[$n]=$((now - start_s[$n]))
			[ -n "${port_of[$n]:-}" ] && tls_of[$n]=$(tls "$n")
			if [ "$n" = raw-bios ]; then # the second BIOS boot of the disk the first one formatted
				kill_boot raw-bios
				# shellcheck disable=SC2046 # net prints words
				want raw-bios-2 && boot raw-bios-2 bios -drive "file=$tmp/raw-bios.img,if=none,id=d0,format=raw" \
					-device virtio-blk-pci,drive=d0 $(net raw-bios-2)
				left=1
			fi
		elif [ $((now - start_s[$n])) -lt "$boot_s" ]; then
			left=1
		fi
	done
	[ $left = 0 ] && break
	sleep 1
done
for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
{ wait; } 2>/dev/null
pids=()
desc() {
	case $1 in
	iso-bios) echo "ISO as CD, SeaBIOS" ;; iso-uefi) echo "ISO as CD, OVMF" ;;
	iso-usb) echo "ISO as USB disk, OVMF" ;; iso-usb-bios) echo "ISO as USB disk, SeaBIOS" ;; raw-uefi) echo "raw GPT disk alone, OVMF" ;;
	raw-bios) echo "raw GPT disk alone, SeaBIOS, first boot" ;;
	raw-bios-2) echo "the same disk after its first format, SeaBIOS again" ;;
	iso-aarch64-uefi) echo "ISO as CD (virtio-scsi), aarch64 AAVMF" ;; iso-aarch64-usb) echo "ISO as USB disk, aarch64 AAVMF" ;;
	raw-aarch64-uefi) echo "aarch64 raw GPT disk alone, AAVMF" ;;
	iso-aarch64-install-2) echo "the disk the aarch64 install wrote, alone, AAVMF" ;;
	esac
}
for n in "${names[@]}"; do
	[ "$n" = iso-aarch64-install-2 ] && continue # reported with iso-aarch64-install
	if [ -n "${skip_of[$n]:-}" ]; then
		echo "SKIP release/$n (${skip_of[$n]})"
	elif [ "$n" = iso-aarch64-install ]; then
		t=$(text "$n") n2=iso-aarch64-install-2
		if [ -z "${typed_s:-}" ]; then
			fail "$n" "the ISO's aarch64 menu never appeared within $boot_s s; see $logs/guest-$n.log"
		elif ! grep -aq 'urMQTT: booting entry 2 (urmqtt.mode=install)' <<<"$t"; then
			fail "$n" "2 typed at the menu after ${typed_s} s, but entry 2 was not booted; see $logs/guest-$n.log"
		elif [ -z "${done_s[$n]:-}" ] || ! grep -aq 'install: done, powering off' <<<"$t"; then
			fail "$n" "the install did not finish and power off within $boot_s s; see $logs/guest-$n.log"
		elif ! grep -aq "the installer's ESP image: .* read" <<<"$t" || ! grep -aq 'install: target: virtio-blk0, 256 MiB' <<<"$t"; then
			fail "$n" "powered off without reading the ESP image or naming the disk and its size; see $logs/guest-$n.log"
		elif [ -z "${done_s[$n2]:-}" ]; then
			fail "$n" "installed and off in ${done_s[$n]} s, but the disk alone under AAVMF did not serve within $boot_s s; see $logs/guest-$n2.log"
		elif [[ ${tls_of[$n2]} != "connack 0 TLSv1.3" ]]; then
			fail "$n" "the installed disk served but device-1 over TLS 1.3: ${tls_of[$n2]}"
		else
			pass "$n" "ISO as CD, aarch64 AAVMF, TCG: its menu, 2 typed after ${typed_s} s, the ESP image read from the boot volume, virtio-blk0 (256 MiB) written, off in ${done_s[$n]} s; that disk alone: no menu, data partition formatted in place, serving in ${done_s[$n2]} s, device-1: CONNACK 0 over TLS 1.3"
		fi
	elif [ "$n" = raw-aarch64-uefi ] && [ ! -s "$a64raw" ]; then
		fail "$n" "make release wrote no $(basename "$a64raw")"
	elif [ -z "${pid_of[$n]:-}" ]; then
		fail "$n" "$(desc "$n"): never started (raw-bios did not serve)"
	elif [ -z "${done_s[$n]:-}" ]; then
		fail "$n" "$(desc "$n"), TCG: no boot entry, banner, formatted disk, listening line and lease within $boot_s s; see $logs/guest-$n.log"
	elif [ -n "${port_of[$n]:-}" ]; then
		if [[ ${tls_of[$n]} == "connack 0 TLSv1.3" ]]; then
			case $n in
			raw-uefi) extra="data partition formatted in place; device-1 of the new CA: CONNACK 0 over TLS 1.3, the server's chain through its intermediate CA verified by a client that trusts only the root" ;;
			raw-bios) extra="GRUB from the BIOS boot partition, data partition formatted in place; device-1: CONNACK 0 over TLS 1.3" ;;
			raw-bios-2) extra="GRUB's boot code and BIOS boot partition kept by the format, our disk opened; device-1: CONNACK 0 over TLS 1.3" ;;
			iso-bios | iso-uefi | iso-usb | iso-usb-bios) extra="GRUB menu's default entry (live), Multiboot2 (the disk untouched); device-1: CONNACK 0 over TLS 1.3" ;;
			iso-aarch64-*) extra="the kernel as EFI/BOOT/BOOTAA64.EFI, its menu's default entry 1 (live) after the countdown (the disk unused); device-1: CONNACK 0 over TLS 1.3" ;;
			*) extra="the kernel as EFI/BOOT/BOOTAA64.EFI, blank disk formatted; device-1: CONNACK 0 over TLS 1.3" ;;
			esac
			pass "$n" "$(desc "$n"), TCG: serving in ${done_s[$n]} s; $extra"
		else
			fail "$n" "served in ${done_s[$n]} s but device-1 over TLS 1.3: ${tls_of[$n]}"
		fi
	else
		pass "$n" "$(desc "$n"), TCG: GRUB menu, Multiboot2, live (the disk untouched), serving in ${done_s[$n]} s"
	fi
done

# ---- the boot modes of the ISO's menu (issue 20; kernel/bootmode.h), after the boots above:
#   release/iso-live-no-write   the ISO's default entry (urmqtt.mode=live) as a CD under
#                               SeaBIOS with a data disk attached: "live: running from RAM",
#                               CONNACK 0 over mTLS, and the disk's SHA-256 the same afterwards
#   release/iso-install         the ISO's install entry onto an empty 256 MiB disk: it names the
#                               disk, writes it (BIOS boot code too: the "bios" module) and
#                               powers the machine off by itself; then that disk alone under
#                               OVMF and a copy of it alone under SeaBIOS, at once: our GRUB
#                               entry, the data partition formatted in place, CONNACK 0 over
#                               mTLS on both
#   release/install-refuses-data  the install entry with a disk holding data: "holds data ...
#                               NOT written", and the disk's SHA-256 unchanged
#   release/ro-media-stop       the production kernel with its data disk readonly=on: the
#                               console says READ-ONLY and the machine stops (60 s hold)
#   release/iso-diag            the ISO's Diagnostics entry with a blank disk: one DIAG-JSON line
#                               that python3 parses (CPU count, the disk's 256 MiB), the machine
#                               powers itself off, the disk's SHA-256 unchanged (nobody typed)
# The install entries are chosen by a second ISO built by images.sh with ISO_DEFAULT_ENTRY=1
# (the install entry as GRUB's default; test only): GRUB boots its default after its
# timeout, so nothing has to type into the menu (typing over the serial console races GRUB's
# own start under TCG).
modes=()
for n in iso-live-no-write iso-install install-refuses-data ro-media-stop iso-diag; do want $n && modes+=("$n"); done
if [ ${#modes[@]} -gt 0 ]; then
	relelf=$tree/release/urmqtt.elf
	esp_mb=$(sed -n 's/^#define CONF_STORAGE_ESP_MB \([0-9]*\)u$/\1/p' "$tree/site-check.h")
	disk_mb=$(($(stat -c %s "$raw") >> 20))
	vdir=$tmp/variant
	if ! ISO_DEFAULT_ENTRY=1 SOURCE_DATE_EPOCH=1700000000 tools/release/images.sh "$relelf" "$vdir" "$name" \
		"$esp_mb" "$disk_mb" >"$logs/variant.log" 2>&1; then
		for n in "${modes[@]}"; do fail "$n" "the install variant of the ISO was not built; see $logs/variant.log"; done
		exit 1
	fi
	viso=$vdir/$name.iso
	# the Diagnostics entry (the fourth) as the default of a third ISO
	if want iso-diag && ! ISO_DEFAULT_ENTRY=3 SOURCE_DATE_EPOCH=1700000000 tools/release/images.sh "$relelf" \
		"$tmp/variant-diag" "$name" "$esp_mb" "$disk_mb" >"$logs/variant-diag.log" 2>&1; then
		fail iso-diag "the diagnostics variant of the ISO was not built; see $logs/variant-diag.log"
		keep=()
		for n in "${modes[@]}"; do [ "$n" = iso-diag ] || keep+=("$n"); done
		modes=("${keep[@]}")
	fi
	diso=$tmp/variant-diag/$name.iso
	for n in iso-live-no-write iso-install-2 iso-install-bios; do port_of[$n]=$(freeport); done
	vdisk() { # NAME FILE [readonly]: FILE on virtio-blk
		echo -drive "file=$2,if=none,id=d0,format=raw${3:+,readonly=on}" -device virtio-blk-pci,drive=d0
	}
	truncate -s 256M "$tmp/live.img"
	truncate -s 256M "$tmp/inst.img"
	truncate -s 256M "$tmp/data.img"
	truncate -s 256M "$tmp/diag.img"
	# data: a few non-zero bytes well inside the disk, no partition table (only the installer's
	# own check finds them)
	printf 'somebody else'"'"'s data' | dd of="$tmp/data.img" bs=1 seek=$((200 << 20)) conv=notrunc status=none
	printf 'hello' | dd of="$tmp/data.img" bs=1 seek=4096 conv=notrunc status=none
	cp "$raw" "$tmp/ro.img"
	sum_live=$(sha256sum <"$tmp/live.img") sum_data=$(sha256sum <"$tmp/data.img") sum_diag=$(sha256sum <"$tmp/diag.img")
	# shellcheck disable=SC2046 # vdisk and net print words
	{
		want iso-live-no-write && boot iso-live-no-write bios -cdrom "$iso" $(vdisk x "$tmp/live.img") $(net iso-live-no-write)
		want iso-install && boot iso-install bios -cdrom "$viso" $(vdisk x "$tmp/inst.img") $(net iso-install)
		want install-refuses-data && boot install-refuses-data bios -cdrom "$viso" $(vdisk x "$tmp/data.img") $(net install-refuses-data)
		want ro-media-stop && boot ro-media-stop bios -kernel "$relelf" $(vdisk x "$tmp/ro.img" readonly) $(net ro-media-stop)
		want iso-diag && [ -s "$diso" ] && boot iso-diag bios -cdrom "$diso" $(vdisk x "$tmp/diag.img") $(net iso-diag)
	}
	declare -A res=()
	alive() { kill -0 "${pid_of[$1]}" 2>/dev/null; }
	while :; do
		now=$(date +%s) left=0
		for n in "${modes[@]}" iso-install-2 iso-install-bios; do
			[ -n "${res[$n]:-}" ] || [ -z "${pid_of[$n]:-}" ] && continue
			t=$(text "$n")
			case $n in
			iso-live-no-write)
				if grep -aq 'live: running from RAM, no disk is written' <<<"$t" && grep -aq 'listening on TCP 8883' <<<"$t" &&
					grep -aq 'DHCP lease: ' <<<"$t"; then
					done_s[$n]=$((now - start_s[$n])) tls_of[$n]=$(tls "$n")
					kill_boot "$n"
					res[$n]=ok
				fi ;;
			iso-install)
				if ! alive "$n"; then
					{ wait "${pid_of[$n]}"; } 2>/dev/null
					done_s[$n]=$((now - start_s[$n])) res[$n]=ok
					if grep -aq 'install: done, powering off' <<<"$t"; then
						# the installed disk by UEFI, and a copy of it by BIOS, at once
						cp "$tmp/inst.img" "$tmp/inst-bios.img"
						# shellcheck disable=SC2046
						boot iso-install-2 uefi $(vdisk x "$tmp/inst.img") $(net iso-install-2)
						# shellcheck disable=SC2046
						boot iso-install-bios bios $(vdisk x "$tmp/inst-bios.img") $(net iso-install-bios)
					fi
				fi ;;
			iso-install-2 | iso-install-bios)
				if grep -aq 'Booting .urMQTT' <<<"$t" && grep -aq 'urMQTT x86_64 (production build), booted via Multiboot2' <<<"$t" &&
					grep -aq 'store: virtio-blk0: an interrupted format done again' <<<"$t" &&
					grep -aq 'listening on TCP 8883' <<<"$t" && grep -aq 'DHCP lease: ' <<<"$t"; then
					done_s[$n]=$((now - start_s[$n])) tls_of[$n]=$(tls "$n")
					kill_boot "$n"
					res[$n]=ok
				fi ;;
			iso-diag)
				if ! alive "$n"; then # diagnostics end in ACPI S5
					{ wait "${pid_of[$n]}"; } 2>/dev/null
					done_s[$n]=$((now - start_s[$n])) res[$n]=ok
				fi ;;
			install-refuses-data | ro-media-stop)
				if grep -aq 'resetting in 60 s' <<<"$t" || ! alive "$n"; then
					done_s[$n]=$((now - start_s[$n]))
					kill_boot "$n"
					res[$n]=ok
				fi ;;
			esac
			if [ -z "${res[$n]:-}" ]; then
				if [ $((now - start_s[$n])) -lt "$boot_s" ]; then left=1; else kill_boot "$n"; res[$n]=timeout; fi
			fi
		done
		[ $left = 0 ] && break
		sleep 1
	done
	for n in "${modes[@]}"; do
		t=$(text "$n")
		case $n in
		iso-live-no-write)
			after=$(sha256sum <"$tmp/live.img")
			if [ "${res[$n]:-}" != ok ]; then
				fail "$n" "no live line, listening line and lease within $boot_s s; see $logs/guest-$n.log"
			elif [[ ${tls_of[$n]} != "connack 0 TLSv1.3" ]]; then
				fail "$n" "live and listening in ${done_s[$n]} s but device-1 over TLS 1.3: ${tls_of[$n]}"
			elif [ "$after" != "$sum_live" ]; then
				fail "$n" "the attached disk CHANGED during a live boot"
			else
				pass "$n" "ISO as CD, SeaBIOS, TCG: urmqtt.mode=live serving in ${done_s[$n]} s, device-1: CONNACK 0 over TLS 1.3; the attached 256 MiB disk's SHA-256 unchanged"
			fi ;;
		iso-install)
			n2="iso-install-2" nb="iso-install-bios"
			if [ "${res[$n]:-}" != ok ] || ! grep -aq 'install: done, powering off' <<<"$t"; then
				fail "$n" "the install entry did not finish and power off within $boot_s s; see $logs/guest-$n.log"
			elif ! grep -aq 'install: target: virtio-blk0, 256 MiB' <<<"$t"; then
				fail "$n" "powered off without naming the disk and its size; see $logs/guest-$n.log"
			elif ! grep -aq 'install: BIOS boot code written' <<<"$t" || ! grep -aq 'virtio-blk0 boots by UEFI and by BIOS' <<<"$t"; then
				fail "$n" "installed without the BIOS boot code (the \"bios\" module); see $logs/guest-$n.log"
			elif [ "${res[$n2]:-}" != ok ]; then
				fail "$n" "installed and powered off in ${done_s[$n]} s, but the disk alone under OVMF did not serve within $boot_s s; see $logs/guest-$n2.log"
			elif [[ ${tls_of[$n2]} != "connack 0 TLSv1.3" ]]; then
				fail "$n" "the installed disk served under OVMF but device-1 over TLS 1.3: ${tls_of[$n2]}"
			elif [ "${res[$nb]:-}" != ok ]; then
				fail "$n" "installed in ${done_s[$n]} s and served under OVMF, but the disk alone under SeaBIOS did not serve within $boot_s s; see $logs/guest-$nb.log"
			elif [[ ${tls_of[$nb]} != "connack 0 TLSv1.3" ]]; then
				fail "$n" "the installed disk served under SeaBIOS but device-1 over TLS 1.3: ${tls_of[$nb]}"
			else
				pass "$n" "SeaBIOS, TCG: install entry named virtio-blk0 (256 MiB), wrote it with the BIOS boot code and powered off in ${done_s[$n]} s; that disk alone under OVMF and a copy under SeaBIOS: data partition formatted in place, serving in ${done_s[$n2]} s and ${done_s[$nb]} s, device-1: CONNACK 0 over TLS 1.3 on both"
			fi ;;
		install-refuses-data)
			after=$(sha256sum <"$tmp/data.img")
			if [ "${res[$n]:-}" = ok ] && grep -aq 'install: virtio-blk0 holds data (.*): NOT written' <<<"$t" &&
				[ "$after" = "$sum_data" ]; then
				pass "$n" "$(grep -ao 'install: virtio-blk0 holds data ([^)]*)' <<<"$t" | head -1); stopped in ${done_s[$n]} s; the disk's SHA-256 unchanged"
			else
				fail "$n" "no refusal, or the disk changed (sha256 $([ "$after" = "$sum_data" ] && echo same || echo CHANGED)); see $logs/guest-$n.log"
			fi ;;
		iso-diag)
			after=$(sha256sum <"$tmp/diag.img")
			why=""
			if [ "${res[$n]:-}" != ok ]; then
				why="the diagnostics entry did not power the machine off within $boot_s s"
			elif ! grep -aq 'Booting .Diagnostics' <<<"$t"; then
				why="GRUB did not boot the Diagnostics entry"
			elif ! why=$(grep -a '^DIAG-JSON-BEGIN ' <<<"$t" | sed -e 's/^DIAG-JSON-BEGIN //' -e 's/ DIAG-JSON-END$//' |
				/usr/bin/python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
if len(lines) != 1: print("%d DIAG-JSON lines, want 1" % len(lines)); sys.exit(1)
j = json.loads(lines[0])
disks = [d.get("capacity_bytes", d.get("bytes")) for d in j.get("disks", [])]
if j["cpu"]["count"] < 1: print("cpu count %r" % j["cpu"]["count"]); sys.exit(1)
if 256 << 20 not in disks: print("no 256 MiB disk in %r" % disks); sys.exit(1)
' 2>&1); then
				why="the JSON line: ${why:-not valid}"
			elif [ "$after" != "$sum_diag" ]; then
				why="the attached disk CHANGED without WIPE"
			fi
			if [ -z "$why" ]; then
				pass "$n" "ISO as CD, SeaBIOS, TCG: GRUB's Diagnostics entry, one JSON line parsed (CPU count, the 256 MiB disk), powered off by itself in ${done_s[$n]} s; the disk's SHA-256 unchanged"
			else
				fail "$n" "$why; see $logs/guest-$n.log"
			fi ;;
		ro-media-stop)
			if [ "${res[$n]:-}" = ok ] && grep -aq 'READ-ONLY (read-only media)' <<<"$t" && grep -aq 'resetting in 60 s' <<<"$t"; then
				pass "$n" "production kernel, data disk readonly=on: \"$(grep -ao 'the data disk [^ ]* is READ-ONLY' <<<"$t" | head -1)\", stopped (60 s hold) in ${done_s[$n]} s"
			else
				fail "$n" "no read-only stop within $boot_s s; see $logs/guest-$n.log"
			fi ;;
		esac
	done
fi
exit $failed
