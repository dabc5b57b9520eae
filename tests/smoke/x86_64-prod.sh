#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The image that ships: boots BUILD_DIR/prod/x86_64/urmqtt.elf (PROFILE=prod: config/prod.conf
# and URMQTT_PROD, built in a tree of its own by `make x86_64-prod`) on QEMU q35 (KVM when a
# probe guest ran on it, TCG otherwise), 2 cores and 1 GiB (256 MiB cannot hold prod's
# 252 MiB data plane), so that a break of the production build shows before release day.
# Two boots:
#   1. a fresh sparse data disk, user-mode networking forwarding a free host port on 127.0.0.1
#      to the guest's 8883, and the development builds' command-line knobs (test=boot,
#      broker_report_ms=1000, ip=, store_backup_first_s=1), which a prod image must ignore;
#   2. no data disk: storage.required (true in prod) must stop the machine.
# Results:
#   x86_64-prod/up                 the production banner, the blank disk formatted, the broker
#                                  listening, and a TLS 1.3 client with a device certificate of
#                                  the embedded (for now development) CA gets CONNACK 0
#   x86_64-prod/refuse-no-cert     a TLS 1.3 client without a certificate: the alert certificate_required, no CONNACK
#   x86_64-prod/dev-knobs-ignored  none of the knobs above shows on the console: no scenario,
#                                  DHCP instead of ip=, no storage development knobs, the
#                                  broker's first report after its 10 s, not 1 s
#   x86_64-prod/required-no-disk   without a data disk: PANIC naming storage.required, then
#                                  the production stop line (a stop before the other CPUs
#                                  started must not NMI them in the firmware: that reset the
#                                  machine at once)
#   x86_64-prod/panic-no-addresses that console from the PANIC on holds no 0x-prefixed value
#                                  and no 16-hex-digit one
#   x86_64-prod/kaslr-no-address   boot 1 says "kaslr: on, from RD..." (aarch64: "from RNDR" or
#                                  "from EFI_RNG_PROTOCOL") and shows no slide and no image
#                                  address (ADR-077, ADR-084)
# Certificates: a prod image embeds CERTS_DIR (tools/certs/module.mk), by default the
# development PKI of its own tree, BUILD_DIR/prod/dev/certs. A production stop prints
# "stop code N", waits 60 s and resets (arch/x86_64/clock.c): the script waits for the stop
# line, not for the reset. Every wait is
# bounded; QEMU and the clients die on exit; the data disk is removed. ~15-20 s on TCG.
# X86_64_PROD_ARCH=aarch64 boots BUILD_DIR/prod/aarch64/urmqtt.img (`make aarch64-prod`) on
# qemu-system-aarch64 -M virt (GICv3, -cpu max, TCG) the same way (tests/smoke/aarch64-prod.sh);
# its stop line is "stop code N: powering off". Its TLS clients run as on x86_64: with the curve
# driver (tls/accel, ADR-056) an emulated aarch64 handshake step fits prod's 200 ms watchdog.
# Usage: x86_64-prod.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
arch=${X86_64_PROD_ARCH:-x86_64}
tree=$build/prod
img=$tree/x86_64/urmqtt.elf
[ "$arch" = aarch64 ] && img=$tree/aarch64/urmqtt.img
certs=$tree/dev/certs
here=$(cd "$(dirname "$0")" && pwd)
tag=$arch-prod
py=/usr/bin/python3
logs=$build/test-logs/$tag
mkdir -p "$logs"
rm -f "$logs"/guest-*.log
tmp=$(mktemp -d /tmp/urmqtt-x86-prod.XXXXXX)
knobs="test=boot broker_report_ms=1000 ip=10.0.2.99/24 gw=10.0.2.2 store_backup_first_s=1"
qpid=""
console=""
failed=0

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}${console:+; see $console}"; failed=1; }
say() { echo "$tag: $*"; }

cleanup() {
	trap - EXIT INT TERM
	if [ -n "$qpid" ]; then
		kill -KILL "$qpid" 2>/dev/null
		{ wait "$qpid"; } 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in qemu-system-$arch timeout truncate "$py"; do
	command -v "$t" >/dev/null || { fail setup "$t missing"; exit 1; }
done
[ -f "$img" ] && [ -f "$certs/ca.crt" ] && [ -f "$certs/dev-1.crt" ] ||
	{ fail setup "need $img and $certs (make $arch-prod)"; exit 1; }
# shellcheck source=tools/accel/accel.sh
. "$here/../../tools/accel/accel.sh"
if [ "$arch" = aarch64 ]; then
	accel_mode=tcg # an x86_64 host: aarch64 runs under TCG only
	machine=(qemu-system-aarch64 -M virt,gic-version=3 -cpu max)
else
	accel_select "$build" || { echo "FAIL $tag/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
	machine=(qemu-system-x86_64 -M q35 "${accel[@]}")
fi
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
say "$accel_mode, 2 cores, guest 8883 at 127.0.0.1:$port"
t0=$(date +%s)

# boot NAME QEMU_ARGS...: QEMU in the background (its pid in $qpid, no timeout wrapper: the
# waits below bound it and stop() kills it), the console in $console.
boot() {
	console=$logs/guest-$1.log
	shift
	: >"$console"
	"${machine[@]}" -m 1G -smp 2 -display none -no-reboot -nodefaults \
		-serial stdio "$@" -kernel "$img" </dev/null >"$console" 2>&1 &
	qpid=$!
}
stop() {
	[ -n "$qpid" ] || return 0
	kill -KILL "$qpid" 2>/dev/null
	{ wait "$qpid"; } 2>/dev/null
	qpid=""
}
text() { tr -d '\r' <"$console"; }
# con_grep GREP_ARGS...: grep over the console; its status is grep's alone (in a pipe, a grep
# that stops early (-q, -m) would kill tr with SIGPIPE and fail the pipe under pipefail).
con_grep() { grep -a "$@" < <(text); }
# wait_for SECONDS ERE...: 0 once every pattern is on the console; 1 when QEMU ended or the
# time ran out first.
wait_for() {
	local limit=$1 i p ok
	shift
	for ((i = 0; i < limit * 5; i++)); do
		ok=1
		for p in "$@"; do
			con_grep -qE -- "$p" || { ok=0; break; }
		done
		[ $ok = 1 ] && return 0
		kill -0 "$qpid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
# stamp ERE: the console time stamp (seconds) of the first line matching
stamp() { con_grep -E -m1 -- "$1" | sed -n 's/^\[ *\([0-9]*\.[0-9]*\)\].*/\1/p'; }

# tls MODE: one TLS 1.3 connection to the broker. ok: dev-1's certificate, the server's
# verified against the embedded CA as "localhost"; prints the version, suite, the server
# certificate's issuer and the CONNACK code. nocert: no client certificate; prints the
# alert (or what happened instead).
tls() {
	MODE=$1 PORT=$port CERTS=$certs timeout 60 "$py" - 2>&1 <<-'PY'
	import os, socket, ssl, struct
	mode, port, certs = os.environ["MODE"], int(os.environ["PORT"]), os.environ["CERTS"]
	c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
	c.minimum_version = ssl.TLSVersion.TLSv1_3
	c.load_verify_locations(certs + "/ca.crt")
	if mode == "ok":
	    c.load_cert_chain(certs + "/dev-1.crt", certs + "/dev-1.key")
	cid = b"dev-1"
	connect = b"\x10" + bytes([12 + len(cid)]) + b"\x00\x04MQTT\x04\x02\x00\x00" + struct.pack(">H", len(cid)) + cid
	def read_exact(s, n):
	    b = b""
	    while len(b) < n:
	        d = s.recv(n - len(b))
	        if not d:
	            raise EOFError("closed without an alert")
	        b += d
	    return b
	try:
	    s = c.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30), server_hostname="localhost")
	    hs = "%s %s" % (s.version(), s.cipher()[0])
	    issuer = dict(x[0] for x in s.getpeercert()["issuer"]).get("commonName", "?")
	    s.sendall(connect)
	    h = read_exact(s, 4)
	    print("connack" if h[0] == 0x20 else "answered", h[3], hs, "issuer", repr(issuer))
	except ssl.SSLError as e:
	    print("refused", e.reason or type(e).__name__)
	except (EOFError, OSError) as e:
	    print("refused", type(e).__name__, e)
	PY
}

# ---- boot 1: a blank data disk, the development knobs on the command line
disk=$tmp/data.img
truncate -s 256M "$disk" || { fail setup "cannot create $disk"; exit 1; }
boot disk -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-10.0.2.15:8883" \
	-device virtio-net-pci,netdev=n0,romfile= \
	-drive "file=$disk,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 -append "$knobs"
formatted="store: virtio-blk0: blank disk formatted; database created"
listening="listening on TCP 8883 \(MQTT over TLS 1\.3, client certificates required\)"
if ! wait_for 90 "urMQTT $arch \(production build\)" "$formatted" "$listening" "DHCP lease: "; then
	fail up "no production banner, formatted disk, listening line and DHCP lease within 90 s"
	fail refuse-no-cert "the broker did not come up"
else
	r=$(tls ok)
	if [[ $r == "connack 0 TLSv1.3 "* ]]; then
		pass up "production build; blank disk formatted; ${r#connack 0 }; CONNACK 0"
	else
		fail up "dev-1 over TLS 1.3: $r"
	fi
	r=$(tls nocert)
	case $r in
	refused*ALERT_CERTIFICATE_REQUIRED*) pass refuse-no-cert "$r" ;;
	*) fail refuse-no-cert "want the alert certificate_required, got: $r" ;;
	esac
fi
# The knobs, whether or not the broker came up (a knob taken may be why it did not). The
# broker's first memory report comes report_ms after it started: 10 s in this build, 1 s
# had broker_report_ms=1000 been taken.
report="I broker: core 0: conns="
wait_for 20 "$report"
t_start=$(stamp "MQTT over TLS 1\.3 \(client certificates\) on TCP 8883")
t_report=$(stamp "$report")
after_s=$(awk -v a="${t_start:-0}" -v b="${t_report:-0}" 'BEGIN { printf "%.1f", b - a }')
why=""
if line=$(con_grep -E -m1 "scenario |I test: |static address|ignoring ip=|development knobs"); then
	why="a knob took effect: ${line#*] }"
elif ! kill -0 "$qpid" 2>/dev/null; then
	why="the machine stopped"
elif ! con_grep -q "DHCP lease: 10\.0\.2\.15/"; then
	why="no DHCP lease for 10.0.2.15"
elif [ -z "$t_start" ] || [ -z "$t_report" ]; then
	why="no broker report within 20 s"
elif ! awk -v d="$after_s" 'BEGIN { exit !(d >= 5) }'; then
	why="the broker's first report came $after_s s after it started: broker_report_ms taken"
fi
if [ -z "$why" ]; then
	pass dev-knobs-ignored "$knobs: still serving, DHCP 10.0.2.15, first report after $after_s s, no scenario or storage knobs"
else
	fail dev-knobs-ignored "$why"
fi
# KASLR (ADR-077, ADR-084): a production image says that it moved and from what, never where.
if [ "$arch" = x86_64 ]; then
	kaslr_on="kaslr: on, from RD[A-Z]+ \(one of [0-9]+ 2 MiB slots\)"
else
	kaslr_on="kaslr: on, from (RNDR|EFI_RNG_PROTOCOL) \(one of [0-9]+ 64 KiB slots\)"
fi
if ! line=$(con_grep -E -m1 "$kaslr_on"); then
	fail kaslr-no-address "no 'kaslr: on' line"
elif bad=$(con_grep -E -m1 "kaslr: slide|image: [0-9]+ KiB at"); then
	fail kaslr-no-address "an address on the console: ${bad#*] }"
else
	pass kaslr-no-address "${line#*] }"
fi
stop

# ---- boot 2: no data disk. storage.required stops the machine: a production stop has no
# isa-debug-exit, it prints "stop code N: resetting in 60 s" and waits (arch/x86_64/clock.c);
# a reset instead (QEMU ends: -no-reboot) is said in the result.
boot nodisk -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile=
want="PANIC: storage is required \(storage\.required\) but unusable: this machine has no data disk"
if ! wait_for 60 "$want"; then
	fail required-no-disk "no PANIC naming storage.required within 60 s"
	fail panic-no-addresses "no PANIC to read"
else
	line=$(con_grep -E -m1 "$want")
	# What follows the PANIC: the stop line, or the machine gone; then anything it printed.
	wait_for 10 "stop code [0-9]+: (resetting|powering off)"
	ok=0
	if stopped=$(con_grep -E -m1 "stop code [0-9]+: (resetting|powering off)"); then
		next="then ${stopped#*] }"
		ok=1
	elif ! kill -0 "$qpid" 2>/dev/null; then
		next="the machine reset at once, without the stop line"
	else
		next="neither the stop line nor a reset within 10 s"
	fi
	sleep 0.5
	stop
	if [ $ok = 1 ]; then
		pass required-no-disk "${line##*PANIC: }; $next"
	else
		fail required-no-disk "${line##*PANIC: }; $next"
	fi
	after=$(text | sed -n '/\*\*\* PANIC/,$p')
	if bad=$(grep -anE -m3 '0x[0-9a-fA-F]+|[0-9a-fA-F]{16}' <<<"$after"); then
		fail panic-no-addresses "$(tr '\n' ' ' <<<"$bad")"
	else
		pass panic-no-addresses "$(wc -l <<<"$after") line(s) from the PANIC on: no 0x value, no 16 hex digits"
	fi
fi
stop
say "both boots in $(($(date +%s) - t0)) s"
exit $failed
