#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# x86_64 driver and kernel-network smoke scenarios: boots $1/x86_64/urmqtt.elf (PVH,
# `-kernel`) on QEMU q35 (ECAM from the MCFG), KVM when /dev/kvm opens, TCG otherwise.
#  drivers   virtio-blk + virtio-scsi/scsi-hd (raw scratch disks under the build dir),
#            virtio-rng and virtio-net: every device in the banner with its features, the
#            block self-test PASS on both disks, the W^X audit still PASS.
#  net-user  user-mode networking with a host forward to port 8883: a DHCP lease, and a
#            host client (dev-1's certificate) completing TLS 1.3 with client
#            authentication and getting CONNACK 0 from the broker over our TCP (slirp
#            terminates the host side; the guest side is our TCP talking to slirp).
#  net-tap   a TAP device inside a network namespace this script creates (10.78.0.0/24
#            only inside it; static guest address from the command line): ping replies,
#            and the same mTLS + CONNACK from the namespace's Linux TCP, seen in the
#            per-core counters (MSI-X interrupts, one TLS handshake).
#  net-mq    virtio-net-pci,mq=on with -smp 4 and a 4-queue TAP: the banner reports the
#            queue pairs (one stack on core 0 receives from all; see kernel/kbroker.h),
#            ping and mTLS + CONNACK still work.
# Client certificates: BUILD/dev/certs (make certs; the image embeds the same CA).
# The full MQTT scenarios are tests/smoke/x86_64-mqtt.sh.
# One "PASS|FAIL|SKIP x86_64/<name>" line each; every boot bounded by a timeout; the
# namespaces and QEMU processes this script starts are cleaned up by a trap.
set -uo pipefail
build=${1:-build}
img=$build/x86_64/urmqtt.elf
certs=$build/dev/certs
mqtt_client=$(cd "$(dirname "$0")" && pwd)/lib/mqtt-client.py
logdir=$build/test-logs/x86_64-drivers
mkdir -p "$logdir"
timeout_s=${X86_64_BOOT_TIMEOUT:-60}

if [ ! -f "$img" ] || [ ! -f "$certs/dev-1.crt" ]; then
	echo "FAIL x86_64/drivers (missing $img or $certs/dev-1.crt)"
	exit 1
fi
if [ -c /dev/kvm ] && [ -w /dev/kvm ] && (exec 3</dev/kvm) 2>/dev/null; then
	mode=kvm; accel=(-enable-kvm -cpu host,-arch-capabilities)
else
	mode=tcg; accel=(-accel tcg -cpu max)
fi
echo "x86_64 drivers smoke: $mode"

qemu_base=(qemu-system-x86_64 -M q35 "${accel[@]}" -m 256M -nographic -no-reboot -nodefaults
	-serial stdio -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$img")
rc_all=0
pids=()
netns=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null
	done
	for n in "${netns[@]}"; do
		ip netns del "$n" 2>/dev/null
	done
}
trap cleanup EXIT

pass() { echo "PASS x86_64/$1 ($mode${2:+, $2})"; }
fail() { echo "FAIL x86_64/$1 ($mode: $2; see $3)"; rc_all=1; }

# All patterns (extended regex, separated by ';;') must match the log; prints the first
# missing one.
missing() {
	local log=$1 pats=$2 p
	IFS=$'\x01' read -r -a plist <<<"${pats//;;/$'\x01'}"
	for p in "${plist[@]}"; do
		if ! tr -d '\r' <"$log" | grep -Eq -- "$p"; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# Wait until the log matches a pattern or the process died or seconds passed.
wait_log() {
	local log=$1 pat=$2 pid=$3 secs=$4 i
	for ((i = 0; i < secs * 10; i++)); do
		tr -d '\r' <"$log" | grep -Eq -- "$pat" && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# mTLS client: dev-1 connects, completes TLS 1.3 with its certificate, sends CONNECT as
# dev-1 and prints "connack 0" (tests/smoke/lib/mqtt-client.py). HOST PORT [NETNS].
mqtt_connack() {
	local out in=()
	[ -n "${3:-}" ] && in=(ip netns exec "$3")
	out=$("${in[@]}" env MQTT_CLIENT_TIMEOUT=30 timeout 60 python3 "$mqtt_client" "$1" "$2" "$certs" \
		connack dev-1 dev-1 2>&1)
	echo "mTLS handshake + $out"
	[ "$out" = "connack 0" ]
}
# ping (iputils may be absent): ICMP echo requests over a raw socket (root), N replies.
pinger=$logdir/ping.py
cat >"$pinger" <<'PY'
import os, select, socket, struct, sys, time
dst, count = sys.argv[1], int(sys.argv[2])
def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    s += s >> 16
    return ~s & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
ident, ok, rtts = os.getpid() & 0xffff, 0, []
for seq in range(1, count + 1):
    payload = b"urmqtt-ping" * 4
    hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    t0 = time.time()
    s.sendto(struct.pack("!BBHHH", 8, 0, csum(hdr + payload), ident, seq) + payload, (dst, 0))
    end = time.time() + 3
    while time.time() < end:
        r, _, _ = select.select([s], [], [], end - time.time())
        if not r:
            break
        pkt, addr = s.recvfrom(2048)
        ihl = (pkt[0] & 15) * 4
        t, _, _, rid, rseq = struct.unpack("!BBHHH", pkt[ihl:ihl + 8])
        if addr[0] == dst and t == 0 and rid == ident and rseq == seq and pkt[ihl + 8:] == payload:
            ok += 1
            rtts.append((time.time() - t0) * 1000)
            print("reply from %s seq %d: %.2f ms" % (dst, seq, rtts[-1]))
            break
    time.sleep(0.2)
print("%d of %d replies, median rtt %.2f ms" % (ok, count, sorted(rtts)[len(rtts) // 2] if rtts else -1))
sys.exit(0 if ok == count else 1)
PY

# ---- drivers ----
name=drivers
log=$logdir/$name.log
disk_blk=$logdir/blk.img
disk_scsi=$logdir/scsi.img
rm -f "$disk_blk" "$disk_scsi"
if ! qemu-img create -q -f raw "$disk_blk" 16M || ! qemu-img create -q -f raw "$disk_scsi" 32M; then
	fail $name "qemu-img create failed" "$log"
else
	timeout "$timeout_s" "${qemu_base[@]}" -smp 2 \
		-drive file="$disk_blk",format=raw,if=none,id=d0 -device virtio-blk-pci,drive=d0 \
		-drive file="$disk_scsi",format=raw,if=none,id=d1 -device virtio-scsi-pci,id=scsi0 \
		-device scsi-hd,drive=d1,bus=scsi0.0 -device virtio-rng-pci \
		-netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile= \
		-append "test=drivers" </dev/null >"$log" 2>&1
	rc=$?
	pats="pci: [0-9]+ functions over ECAM;;pci 00:[0-9a-f]{2}\\.[0-7] 1af4:[0-9a-f]{4} .*virtio-blk"
	pats+=";;pci 00:[0-9a-f]{2}\\.[0-7] 1af4:[0-9a-f]{4} .*virtio-scsi;;pci 00:[0-9a-f]{2}\\.[0-7] 1af4:[0-9a-f]{4} .*virtio-rng"
	pats+=";;pci 00:[0-9a-f]{2}\\.[0-7] 1af4:[0-9a-f]{4} .*virtio-net"
	pats+=";;virtio-blk0: features 0x[0-9a-f]+;;virtio-blk0: 32768 blocks of 512 B.*self-test on the last 4 KiB: PASS"
	pats+=";;virtio-scsi0: features 0x[0-9a-f]+;;virtio-scsi0: 65536 blocks of 512 B.*self-test on the last 4 KiB: PASS"
	pats+=";;virtio-rng: features 0x[0-9a-f]+; 48 bytes mixed into the CSPRNG of each of 2 core\\(s\\)"
	pats+=";;virtio-net: MAC 52:54:00:12:34:56, features 0x[0-9a-f]+ \\(EVENT_IDX MAC STATUS"
	pats+=";;W\\^X audit: PASS;;scenario drivers: 2 block device\\(s\\), 0 failure\\(s\\)"
	if [ $rc -eq 124 ]; then
		fail $name "timeout after ${timeout_s}s" "$log"
	elif [ $rc -ne 33 ]; then
		fail $name "exit $rc, want 33" "$log"
	elif m=$(missing "$log" "$pats"); then
		fail $name "missing /$m/" "$log"
	else
		pass $name "blk + scsi self-tests PASS"
	fi
fi

# ---- net-user ----
name=net-user
log=$logdir/$name.log
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
timeout "$timeout_s" "${qemu_base[@]}" -smp 1 \
	-netdev user,id=n0,hostfwd=tcp:127.0.0.1:"$port"-:8883 -device virtio-net-pci,netdev=n0,romfile= \
	-append "test=net" </dev/null >"$log" 2>&1 &
qpid=$!
pids+=("$qpid")
if ! wait_log "$log" "DHCP lease: 10\\.0\\.2\\.15/24 gateway 10\\.0\\.2\\.2" "$qpid" 30; then
	fail $name "no DHCP lease" "$log"
elif ! out=$(mqtt_connack 127.0.0.1 "$port"); then
	echo "$out" >>"$log"
	fail $name "broker through the host forward failed: $out" "$log"
else
	pass $name "DHCP lease 10.0.2.15, $out"
fi
kill "$qpid" 2>/dev/null
wait "$qpid" 2>/dev/null

# ---- net-tap and net-mq: a namespace of our own ----
# ns_setup <ns> <tap> <multi_queue?>: namespace with a tap at 10.78.0.1/24.
ns_setup() {
	ip netns add "$1" || return 1
	netns+=("$1")
	ip -n "$1" link set lo up || return 1
	ip -n "$1" tuntap add dev "$2" mode tap ${3:+multi_queue} || return 1
	ip -n "$1" addr add 10.78.0.1/24 dev "$2" || return 1
	ip -n "$1" link set "$2" up || return 1
}

# net_tap_run <name> <smp> <queues> <extra banner pattern>
net_tap_run() {
	local name=$1 smp=$2 queues=$3 bpat=$4
	local log=$logdir/$name.log ns="urmqtt-kdrv-$$-$name" tap=tapkd0 qpid out
	local netdev=(-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no${queues:+,queues=$queues}")
	local dev=(-device "virtio-net-pci,netdev=n0,romfile=${queues:+,mq=on,vectors=$((2 * queues + 2))}")
	: >"$log"
	if ! ns_setup "$ns" "$tap" "$queues" >>"$log" 2>&1; then
		echo "SKIP x86_64/$name (cannot create a network namespace with a tap device)"
		return
	fi
	ip netns exec "$ns" timeout "$timeout_s" "${qemu_base[@]}" -smp "$smp" "${netdev[@]}" "${dev[@]}" \
		-append "test=net ip=10.78.0.2/24 gw=10.78.0.1" </dev/null >>"$log" 2>&1 &
	qpid=$!
	pids+=("$qpid")
	if ! wait_log "$log" "static address: 10\\.78\\.0\\.2/24" "$qpid" 30; then
		fail "$name" "no static address" "$log"
	elif [ -n "$bpat" ] && m=$(missing "$log" "$bpat"); then
		fail "$name" "missing /$m/" "$log"
	elif ! ip netns exec "$ns" timeout 20 python3 "$pinger" 10.78.0.2 3 >>"$log" 2>&1; then
		fail "$name" "no ping replies" "$log"
	elif ! out=$(mqtt_connack 10.78.0.2 8883 "$ns"); then
		echo "$out" >>"$log"
		fail "$name" "broker failed: $out" "$log"
	elif ! wait_log "$log" "core [0-9]+ pair [0-9]+: [0-9]+ frames in, [0-9]+ out, [1-9][0-9]* device interrupts, [0-9]+ connections, [1-9][0-9]* TLS handshakes" "$qpid" 10; then
		fail "$name" "no per-core counters showing MSI-X interrupts and a TLS handshake" "$log"
	else
		rtt=$(grep -ao "median rtt [0-9.]* ms" "$log" | tail -1)
		core=$(tr -d '\r' <"$log" | grep -Eo "core [0-9]+ pair [0-9]+: .*[1-9][0-9]* TLS handshakes" | head -1 | cut -d: -f1)
		pass "$name" "ping $rtt, $out by $core"
	fi
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
}

if ! command -v ip >/dev/null || [ "$(id -u)" != 0 ]; then
	echo "SKIP x86_64/net-tap (needs root and iproute2 for a network namespace)"
	echo "SKIP x86_64/net-mq (needs root and iproute2 for a network namespace)"
else
	net_tap_run net-tap 1 "" "net: stack on core 0, virtio-net pair 0, MSI-X \\+ polling"
	net_tap_run net-mq 4 4 "virtio-net: MAC [0-9a-f:]+, features 0x[0-9a-f]+ \\(.*CTRL_VQ\\+MQ\\), 4 queue pair\\(s\\) of 4 offered;;net: stack on core 0, virtio-net pair 0 \\(\\+ receive on every pair\\), MSI-X \\+ polling; static address"
fi
exit $rc_all
