#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# x86_64 driver and kernel-network smoke scenarios: boots $1/x86_64/urmqtt.elf (PVH,
# `-kernel`) on QEMU q35 (ECAM from the MCFG), KVM when a probe guest ran on it, TCG otherwise.
#  drivers   virtio-blk + virtio-scsi/scsi-hd (raw scratch disks under the build dir),
#            virtio-rng and virtio-net: every device in the banner with its features, the
#            block read test PASS on both disks (read only: nothing is written to a disk
#            before storage recognised it), the W^X audit still PASS.
#  blk-grow  virtio-blk on a 16 MiB disk with a QMP socket: once the loop runs, QMP
#            block_resize grows it to 32 MiB; the configuration-change interrupt (MSI-X to
#            core 0) makes the guest log the growth with the right sector counts and pass
#            the read test again on the new last 4 KiB; then a resize to 24 MiB is logged
#            as a shrink (an error: I/O beyond the new end fails).
#  net-user  user-mode networking with a host forward to port 8883: a DHCP lease, and a
#            host client (dev-1's certificate) completing TLS 1.3 with client
#            authentication and getting CONNACK 0 from the broker over our TCP (slirp
#            terminates the host side; the guest side is our TCP talking to slirp).
#  net-tap   a TAP device inside a network namespace this script creates (10.78.0.0/24
#            only inside it; static guest address from the command line): ping replies,
#            and the same mTLS + CONNACK from the namespace's Linux TCP, seen in the
#            per-core counters (MSI-X interrupts, one TLS handshake).
#  net-tap-frames  in the same boot: tcpdump in the namespace captures the guest's own
#            frames (ICMP echo replies from its MAC and 10.78.0.2), and frames the host
#            injects on the TAP (raw Ethernet, an experimental EtherType the guest drops
#            and counts) show up in the guest's per-core counters: at least as many frames
#            in and exactly as many of unknown type as were injected (IPv6 is off in the
#            namespace, so nothing else of another type is sent). SKIP without tcpdump.
#  net-mq    virtio-net-pci,mq=on with -smp 4 and a 4-queue TAP: the banner reports the
#            queue pairs and one stack per core (core 0 receives from every pair and
#            steers, workers transmit on their own pairs), ping and mTLS + CONNACK work.
#            Many connections over several cores: tests/smoke/x86_64-steer.sh.
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
# The accelerator: KVM only after a probe guest ran on it (tools/accel/accel.sh; make
# decides once per invocation and exports URMQTT_ACCEL), else TCG.
# shellcheck source=tools/accel/accel.sh
. "$(dirname "$0")/../../tools/accel/accel.sh"
accel_select "$build" || { echo "FAIL x86_64/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
mode=$accel_mode
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

# missing_within LOG PATTERNS PID SECONDS: as missing, but waits (bounded) for the console
# to catch up first: 1 (nothing missing) as soon as every pattern is there, else the first
# one still missing after SECONDS or once the process died.
missing_within() {
	local i m
	for ((i = 0; i < $4 * 10; i++)); do
		m=$(missing "$1" "$2") || return 1
		kill -0 "$3" 2>/dev/null || break
		sleep 0.1
	done
	echo "$m"
	return 0
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
	pats+=";;virtio-blk0: features 0x[0-9a-f]+;;virtio-blk0: 32768 blocks of 512 B.*block read test on the last 4 KiB \\(nothing written\\): PASS"
	pats+=";;virtio-scsi0: features 0x[0-9a-f]+;;virtio-scsi0: 65536 blocks of 512 B.*block read test on the last 4 KiB \\(nothing written\\): PASS"
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
		pass $name "blk + scsi read tests PASS (nothing written: storage writes only a disk it recognised)"
	fi
fi

# ---- blk-grow ----
# qmp SOCKET COMMAND [JSON-ARGUMENTS]: one QMP command; prints the reply, fails on an error.
qmp() { timeout 20 python3 "$(dirname "$0")/lib/qmp.py" "$@"; }
name=blk-grow
log=$logdir/$name.log
disk_grow=$logdir/grow.img
qmp_sock=$logdir/qmp.sock
rm -f "$disk_grow" "$qmp_sock"
: >"$log"
# QMP replies go to their own file: written into the serial log they could land in the
# middle of a guest line.
: >"$log.qmp"
if ! qemu-img create -q -f raw "$disk_grow" 16M; then
	fail $name "qemu-img create failed" "$log"
else
	timeout "$timeout_s" "${qemu_base[@]}" -smp 1 -qmp unix:"$qmp_sock",server=on,wait=off \
		-drive file="$disk_grow",format=raw,if=none,id=g0 -device virtio-blk-pci,drive=g0 \
		-append "" </dev/null >>"$log" 2>&1 &
	qpid=$!
	pids+=("$qpid")
	grew="virtio-blk0: capacity grew from 32768 to 65536 sectors \\(32 MiB\\)"
	retest="virtio-blk0: block read test on the new last 4 KiB \\(block 65528\\): PASS"
	shrank="virtio-blk0: capacity SHRANK from 65536 to 49152 sectors"
	if ! wait_log "$log" "ms from entry to the loop" "$qpid" 30; then
		fail $name "no boot to the loop" "$log"
	elif m=$(missing "$log" "virtio-blk0: features 0x[0-9a-f]+; configuration changes by MSI-X to core 0;;virtio-blk0: 32768 blocks of 512 B.*block read test on the last 4 KiB \\(nothing written\\): PASS"); then
		fail $name "missing /$m/" "$log"
	elif ! qmp "$qmp_sock" block_resize '{"device": "g0", "size": 33554432}' >>"$log.qmp" 2>&1; then
		fail $name "QMP block_resize to 32 MiB failed" "$log"
	elif ! wait_log "$log" "$grew" "$qpid" 10; then
		fail $name "no /$grew/" "$log"
	elif ! wait_log "$log" "$retest" "$qpid" 10; then
		fail $name "no /$retest/" "$log"
	elif ! qmp "$qmp_sock" block_resize '{"device": "g0", "size": 25165824}' >>"$log.qmp" 2>&1; then
		fail $name "QMP block_resize to 24 MiB failed" "$log"
	elif ! wait_log "$log" "$shrank" "$qpid" 10; then
		fail $name "no /$shrank/" "$log"
	elif [ "$(tr -d '\r' <"$log" | grep -Ec 'virtio-blk0: capacity')" != 2 ]; then
		fail $name "not exactly one line per change" "$log"
	else
		pass $name "16 -> 32 MiB logged by MSI-X, read test PASS on the new end, shrink to 24 MiB reported"
	fi
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	rm -f "$disk_grow" "$qmp_sock"
fi

# ---- net-user ----
name=net-user
log=$logdir/$name.log
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
: >"$log"
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
# ns_setup <ns> <tap> <multi_queue?>: namespace with a tap at 10.78.0.1/24, no IPv6 (the
# host side then sends only IPv4 and ARP to the guest).
ns_setup() {
	ip netns add "$1" || return 1
	netns+=("$1")
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
	ip -n "$1" link set lo up || return 1
	ip -n "$1" tuntap add dev "$2" mode tap ${3:+multi_queue} || return 1
	ip -n "$1" addr add 10.78.0.1/24 dev "$2" || return 1
	ip -n "$1" link set "$2" up || return 1
}

# Raw Ethernet frames from the host side of the TAP: IFNAME DST-MAC COUNT, EtherType
# 0x88b5 (IEEE local experimental), minimum size, 20 ms apart.
injector=$logdir/inject.py
cat >"$injector" <<'PY'
import socket, sys, time
ifname, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open("/sys/class/net/%s/address" % ifname) as f:
    src = bytes.fromhex(f.read().strip().replace(":", ""))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
for i in range(n):
    s.send(bytes.fromhex(dst.replace(":", "")) + src + b"\x88\xb5" + (b"urmqtt-inject %04d" % i).ljust(46, b"\0"))
    time.sleep(0.02)
print("injected %d frames of EtherType 0x88b5 to %s on %s" % (n, dst, ifname))
PY
frames_injected=20

# The last per-core counters line of core 0: "<frames in> <unknown type> <echo replies>".
guest_counters() {
	tr -d '\r' <"$1" | grep -Eo "core 0 pair 0: [0-9]+ frames in, .*, [0-9]+ ICMP echo replies, [0-9]+ frames of unknown type" |
		tail -1 | sed -E 's/^core 0 pair 0: ([0-9]+) frames in, .*, ([0-9]+) ICMP echo replies, ([0-9]+) frames of unknown type$/\1 \3 \2/'
}

# frames_start <ns> <tap> <pcap>: tcpdump in the namespace, bounded by count and time;
# sets cap_pid (empty without tcpdump or if it never starts listening).
frames_start() {
	local i
	cap_pid=
	command -v tcpdump >/dev/null || return 1
	ip netns exec "$1" timeout 60 tcpdump -Z root -i "$2" -n -U -c 5000 -w "$3" 2>"$3.err" &
	cap_pid=$!
	pids+=("$cap_pid")
	for ((i = 0; i < 50; i++)); do
		grep -q "listening on" "$3.err" 2>/dev/null && return 0
		kill -0 "$cap_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$cap_pid" 2>/dev/null
	cap_pid=
	return 1
}

# frames_check <name> <ns> <tap> <pcap> <log> <qpid>: inject, read the guest's counters,
# stop the capture and look for the guest's frames in it. One result line.
frames_check() {
	local name=$1 ns=$2 tap=$3 pcap=$4 log=$5 qpid=$6 mac before after i in0 unk0 in1 unk1 echo1 n_tx n_rep n_inj
	mac=$(tr -d '\r' <"$log" | grep -Eo "virtio-net: MAC [0-9a-f:]{17}" | head -1 | cut -d' ' -f3)
	read -r in0 unk0 _ <<<"$(guest_counters "$log")"
	in0=${in0:-0} unk0=${unk0:-0}
	if [ -z "$mac" ] || ! ip netns exec "$ns" timeout 10 python3 "$injector" "$tap" "$mac" "$frames_injected" >>"$log.host" 2>&1; then
		kill -INT "$cap_pid" 2>/dev/null
		fail "$name" "could not inject frames to the guest (MAC '${mac}')" "$log"
		return
	fi
	for ((i = 0; i < 100; i++)); do
		read -r in1 unk1 echo1 <<<"$(guest_counters "$log")"
		[ "${in1:-0}" -ge $((in0 + frames_injected)) ] && [ "${unk1:-0}" -ge $((unk0 + frames_injected)) ] && break
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.1
	done
	# Let tcpdump write what the kernel already handed it (-U writes per packet, but a
	# loaded machine may not have run it yet): up to 10 s for the injected frames.
	for ((i = 0; i < 100; i++)); do
		[ "$(tcpdump -r "$pcap" -n -e 2>/dev/null | grep -c "> $mac, ethertype Unknown (0x88b5)")" -ge "$frames_injected" ] && break
		sleep 0.1
	done
	kill -INT "$cap_pid" 2>/dev/null
	wait "$cap_pid" 2>/dev/null
	n_tx=$(tcpdump -r "$pcap" -n -e 2>/dev/null | grep -c "^[0-9:.]* $mac > ")
	n_rep=$(tcpdump -r "$pcap" -n -e 2>/dev/null | grep -Ec "^[0-9:.]* $mac > .* 10\.78\.0\.2 > 10\.78\.0\.1: ICMP echo reply")
	n_inj=$(tcpdump -r "$pcap" -n -e 2>/dev/null | grep -c "> $mac, ethertype Unknown (0x88b5)")
	echo "host capture: $n_tx frames from $mac, $n_rep ICMP echo replies, $n_inj injected frames;" \
		"guest: frames in $in0 -> ${in1:-?}, unknown type $unk0 -> ${unk1:-?}, ${echo1:-?} echo replies" >>"$log.host"
	if [ "$n_rep" -lt 3 ]; then
		fail "$name" "tcpdump captured $n_rep ICMP echo replies from the guest ($mac), want >= 3" "$log"
	elif [ "$n_inj" -ne "$frames_injected" ]; then
		fail "$name" "tcpdump saw $n_inj of $frames_injected injected frames leave the host" "$log"
	elif [ "${in1:-0}" -lt $((in0 + frames_injected)) ]; then
		fail "$name" "guest frames in went $in0 -> ${in1:-?}, want +$frames_injected or more" "$log"
	elif [ "${unk1:-0}" -ne $((unk0 + frames_injected)) ]; then
		fail "$name" "guest frames of unknown type went $unk0 -> ${unk1:-?}, want exactly +$frames_injected" "$log"
	elif [ "${echo1:-0}" -lt 3 ]; then
		fail "$name" "guest counted ${echo1:-0} ICMP echo replies, want >= 3" "$log"
	else
		pass "$name" "host captured $n_tx guest frames ($n_rep echo replies from $mac); guest counted $frames_injected of $frames_injected injected"
	fi
}

# net_tap_run <name> <smp> <queues> <extra banner pattern> [frames]
net_tap_run() {
	local name=$1 smp=$2 queues=$3 bpat=$4 frames=${5:-}
	local log=$logdir/$name.log ns="urmqtt-kdrv-$$-$name" tap=tapkd0 qpid out pcap=$logdir/$name.pcap up=""
	cap_pid=
	local netdev=(-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no${queues:+,queues=$queues}")
	local dev=(-device "virtio-net-pci,netdev=n0,romfile=${queues:+,mq=on,vectors=$((2 * queues + 2))}")
	: >"$log"
	: >"$log.host" # host-side tools write here: in the serial log they could split guest lines
	if ! ns_setup "$ns" "$tap" "$queues" >>"$log" 2>&1; then
		echo "SKIP x86_64/$name (needs netns: cannot create a network namespace with a tap device)"
		return
	fi
	ip netns exec "$ns" timeout "$timeout_s" "${qemu_base[@]}" -smp "$smp" "${netdev[@]}" "${dev[@]}" \
		-append "test=net ip=10.78.0.2/24 gw=10.78.0.1" </dev/null >>"$log" 2>&1 &
	qpid=$!
	pids+=("$qpid")
	# The address is taken inside core 0's stack set-up; the banner checked below comes
	# after every core's broker is built (slower with more cores under TCG): wait for the
	# line that follows it.
	if wait_log "$log" "static address: 10\\.78\\.0\\.2/24" "$qpid" 30 &&
		wait_log "$log" "listening on TCP 8883" "$qpid" 30; then
		up=1
		if [ -n "$frames" ]; then
			rm -f "$pcap" "$pcap.err"
			frames_start "$ns" "$tap" "$pcap" || cap_pid=
		fi
	fi
	if [ -z "$up" ]; then
		fail "$name" "no static address" "$log"
	elif [ -n "$bpat" ] && m=$(missing_within "$log" "$bpat" "$qpid" 10); then
		fail "$name" "missing /$m/" "$log"
	elif ! ip netns exec "$ns" timeout 20 python3 "$pinger" 10.78.0.2 3 >>"$log.host" 2>&1; then
		fail "$name" "no ping replies" "$log"
	elif ! out=$(mqtt_connack 10.78.0.2 8883 "$ns"); then
		echo "$out" >>"$log"
		fail "$name" "broker failed: $out" "$log"
	elif ! wait_log "$log" "core 0 pair 0: [0-9]+ frames in, [0-9]+ out, [1-9][0-9]* device interrupts" "$qpid" 10 ||
		! wait_log "$log" "core [0-9]+ pair [0-9]+: [0-9]+ frames in, [0-9]+ out, [0-9]+ device interrupts, [0-9]+ connections, [1-9][0-9]* TLS handshakes" "$qpid" 10; then
		# Every pair interrupts core 0; the handshake is on the core the flow was steered to.
		fail "$name" "no per-core counters showing MSI-X interrupts on core 0 and a TLS handshake" "$log"
	else
		rtt=$(grep -ao "median rtt [0-9.]* ms" "$log.host" | tail -1)
		core=$(tr -d '\r' <"$log" | grep -Eo "core [0-9]+ pair [0-9]+: .*[1-9][0-9]* TLS handshakes" | head -1 | cut -d: -f1)
		pass "$name" "ping $rtt, $out by $core"
	fi
	if [ -n "$frames" ]; then
		if ! command -v tcpdump >/dev/null; then
			echo "SKIP x86_64/$name-frames (needs command tcpdump: tools/setup/ensure-packages.sh installs it)"
		elif [ -z "$up" ]; then
			fail "$name-frames" "the guest never came up" "$log"
		elif [ -z "$cap_pid" ]; then
			fail "$name-frames" "tcpdump did not start on $tap: $(head -c 200 "$pcap.err" 2>/dev/null)" "$log"
		else
			frames_check "$name-frames" "$ns" "$tap" "$pcap" "$log" "$qpid"
		fi
	fi
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
}

if ! command -v ip >/dev/null || [ "$(id -u)" != 0 ]; then
	why="needs root: a network namespace"
	command -v ip >/dev/null || why="needs command ip: iproute2, for a network namespace"
	for s in net-tap net-tap-frames net-mq; do echo "SKIP x86_64/$s ($why)"; done
else
	net_tap_run net-tap 1 "" "net: one stack, on core 0, receiving from 1 pair\\(s\\) \\(MSI-X \\+ polling\\)" frames
	net_tap_run net-mq 4 4 "virtio-net: MAC [0-9a-f:]+, features 0x[0-9a-f]+ \\(.*CTRL_VQ\\+MQ\\), 4 queue pair\\(s\\) of 4 offered;;net: 4 stacks, one per core; core 0 receives from 4 pair\\(s\\) \\(MSI-X \\+ polling\\) and steers; workers transmit on their own pairs; static address"
fi
exit $rc_all
