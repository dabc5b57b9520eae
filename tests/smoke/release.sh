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
#   release/sbom              the SBOM is CycloneDX JSON listing mbedTLS and SQLite with the
#                             versions and SHA-256 of tools/deps/pins.txt and licences, gcc and
#                             binutils with versions
#   release/iso-bios          the ISO as a CD under SeaBIOS: GRUB's menu, the default entry
#                             "urMQTT live", the production banner "booted via Multiboot2", the
#                             blank data disk formatted and the broker listening
#   release/iso-uefi          the same under OVMF (UEFI, TCG)
#   release/iso-usb           the ISO as a USB disk (usb-storage) under OVMF
#   release/iso-usb-bios      the ISO as a USB disk under SeaBIOS (GRUB's hybrid MBR)
#   release/raw-uefi          the raw disk alone under OVMF: GRUB from its ESP, the data
#                             partition formatted in place ("an interrupted format done
#                             again"), and a TLS 1.3 client with a device certificate of the
#                             throwaway CA gets CONNACK 0 (the PKI given is the one embedded)
# All five boots run at once, each bounded (BOOT_S, 240 s: five TCG guests share the cores;
# alone each takes 10-30 s); QEMU dies on exit.
# Usage: release.sh BUILD | release.sh --prepare BUILD
set -uo pipefail
prepare=0
[ "${1:-}" = --prepare ] && { prepare=1; shift; }
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cd "$src" || exit 1
work=$build/release-test
tree=$work/tree
out=$work/out
logs=$build/test-logs/release
py=/usr/bin/python3
boot_s=${BOOT_S:-240}
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

mkdir -p "$work" "$logs"
# TCG runs about 20 times slower than the hardware prod's watchdog is sized for (as dev.conf).
printf '[core]\nprofile = "prod"\nwatchdog_budget_ms = 100\nwatchdog_hard_ms = 2s\n' >"$tmp/site.conf"
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
sbom=$out/$name.cdx.json
missing=""
for f in "$iso" "$raw" "$qcow" "$sbom" "$out/SHA256SUMS" "$out/minisign.pub"; do
	[ -s "$f" ] || missing="$missing $(basename "$f")"
	[ "$f" = "$out/minisign.pub" ] || [ -s "$f.minisig" ] || missing="$missing $(basename "$f").minisig"
done
if [ -z "$missing" ] && qemu-img info "$qcow" 2>/dev/null | grep -q 'file format: qcow2'; then
	pass build "$t_build s; iso $(($(stat -c %s "$iso") / 1024)) KiB, raw $(($(stat -c %s "$raw") >> 20)) MiB ($(($(du -k "$raw" | cut -f1) / 1024)) MiB allocated), qcow2 $(($(stat -c %s "$qcow") / 1024)) KiB"
else
	fail build "missing or bad:${missing:- qcow2}"
fi

# ---- sums and signatures
why=""
(cd "$out" && sha256sum --quiet -c SHA256SUMS) >"$logs/sums.log" 2>&1 || why="sha256sum -c failed"
for f in "$iso" "$raw" "$qcow" "$sbom" "$out/SHA256SUMS"; do
	minisign -Vm "$f" -p "$out/minisign.pub" -q >>"$logs/sums.log" 2>&1 || why="${why:+$why; }minisign -V $(basename "$f") failed"
done
cp "$sbom" "$tmp/tampered.json"
printf ' ' >>"$tmp/tampered.json"
cp "$sbom.minisig" "$tmp/tampered.json.minisig"
minisign -Vm "$tmp/tampered.json" -p "$out/minisign.pub" -q >/dev/null 2>&1 && why="${why:+$why; }a changed SBOM still verifies"
if [ -z "$why" ]; then pass sums "SHA256SUMS and 5 minisign signatures verify; a changed byte does not"; else fail sums "$why; see $logs/sums.log"; fi

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

# ---- boots: all five at once
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.fd
# boot NAME FIRMWARE(bios|uefi) QEMU_ARGS...: console in $logs/guest-NAME.log
boot() {
	local name=$1 fw=$2
	shift 2
	local fwargs=()
	if [ "$fw" = uefi ]; then
		cp /usr/share/OVMF/OVMF_VARS_4M.fd "$tmp/vars-$name.fd"
		fwargs=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$ovmf_code"
			-drive "if=pflash,format=raw,unit=1,file=$tmp/vars-$name.fd")
	fi
	: >"$logs/guest-$name.log"
	nice -n 19 qemu-system-x86_64 -M q35 -accel tcg -cpu max -m 1G -smp 2 -display none -no-reboot \
		-nodefaults -serial "file:$logs/guest-$name.log" "${fwargs[@]}" "$@" </dev/null >"$logs/qemu-$name.log" 2>&1 &
	pids+=($!)
}
disk() { # NAME: a blank 256 MiB data disk on virtio-blk
	truncate -s 256M "$tmp/data-$1.img"
	echo -drive "file=$tmp/data-$1.img,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0
}
net=(-netdev "user,id=n0" -device "virtio-net-pci,netdev=n0,romfile=")
cp "$raw" "$tmp/raw.img"
t0=$(date +%s)
# shellcheck disable=SC2046 # disk prints words
boot iso-bios bios -cdrom "$iso" $(disk iso-bios) "${net[@]}"
# shellcheck disable=SC2046
boot iso-uefi uefi -cdrom "$iso" $(disk iso-uefi) "${net[@]}"
# shellcheck disable=SC2046
boot iso-usb uefi -device qemu-xhci -drive "file=$iso,if=none,id=u0,format=raw,readonly=on" \
	-device usb-storage,drive=u0,removable=on,bootindex=0 $(disk iso-usb) "${net[@]}"
# shellcheck disable=SC2046
boot iso-usb-bios bios -device qemu-xhci -drive "file=$iso,if=none,id=u0,format=raw,readonly=on" \
	-device usb-storage,drive=u0,removable=on,bootindex=0 $(disk iso-usb-bios) "${net[@]}"
boot raw-uefi uefi -drive "file=$tmp/raw.img,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 \
	-netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-10.0.2.15:8883" -device virtio-net-pci,netdev=n0,romfile=
names=(iso-bios iso-uefi iso-usb iso-usb-bios raw-uefi)
text() { tr -d '\r' <"$logs/guest-$1.log" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g'; }
up() { # NAME: the console shows everything a served boot shows
	local t
	t=$(text "$1")
	grep -aq 'Booting .urMQTT live' <<<"$t" && grep -aq 'urMQTT x86_64 (production build), booted via Multiboot2' <<<"$t" &&
		grep -aqE 'store: virtio-blk0: (blank disk formatted|an interrupted format done again)' <<<"$t" &&
		grep -aq 'listening on TCP 8883' <<<"$t" && grep -aq 'DHCP lease: ' <<<"$t"
}
declare -A done_s=()
while :; do
	now=$(($(date +%s) - t0))
	left=0
	for n in "${names[@]}"; do
		[ -n "${done_s[$n]:-}" ] && continue
		if up "$n"; then done_s[$n]=$now; else left=1; fi
	done
	[ $left = 0 ] || [ $now -ge "$boot_s" ] && break
	sleep 1
done
tls_r=""
if [ -n "${done_s[raw-uefi]:-}" ]; then
	tls_r=$(PORT=$port CERTS=$work/pki timeout 60 "$py" - 2>&1 <<-'PY'
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
	)
fi
for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
{ wait; } 2>/dev/null
pids=()
desc() {
	case $1 in
	iso-bios) echo "ISO as CD, SeaBIOS" ;; iso-uefi) echo "ISO as CD, OVMF" ;;
	iso-usb) echo "ISO as USB disk, OVMF" ;; iso-usb-bios) echo "ISO as USB disk, SeaBIOS" ;; raw-uefi) echo "raw GPT disk alone, OVMF" ;;
	esac
}
for n in "${names[@]}"; do
	if [ -z "${done_s[$n]:-}" ]; then
		fail "$n" "$(desc "$n"), TCG: no GRUB entry, banner, formatted disk, listening line and lease within $boot_s s; see $logs/guest-$n.log"
	elif [ "$n" = raw-uefi ]; then
		if [[ $tls_r == "connack 0 TLSv1.3" ]]; then
			pass "$n" "$(desc "$n"), TCG: serving in ${done_s[$n]} s; data partition formatted in place; device-1 of the new CA: CONNACK 0 over TLS 1.3, the server's chain through its intermediate CA verified by a client that trusts only the root"
		else
			fail "$n" "served in ${done_s[$n]} s but device-1 over TLS 1.3: $tls_r"
		fi
	else
		pass "$n" "$(desc "$n"), TCG: GRUB menu, Multiboot2, blank disk formatted, serving in ${done_s[$n]} s"
	fi
done
exit $failed
