#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The multicore network data plane of the x86_64 kernel (kernel/ksteer, kernel/kdemux,
# kernel/xcore; arch/x86_64/devices.c): boots $1/x86_64/urmqtt.elf (test=net, static
# address 10.78.0.2/24) on QEMU q35 (KVM when a probe guest ran on it, TCG otherwise) behind a TAP
# inside a network namespace this script creates, and from the namespace's Linux stack:
#  steer-smp2  -smp 2, single-queue TAP (every frame arrives on pair 0: core 0 steers):
#              ping replies; N mTLS connections (distinct source ports, each its own
#              load certificate, CONNACK 0 + SUBACK 1 on the same connection) held at
#              once; the kernel's per-core broker lines add up to N established and
#              more than one core serves some; every connection closed at the end
#              leaves 0 on every core.
#  steer-smp4  the same with -smp 4 (workers hand their frames back to core 0).
#  steer-mq4   -smp 4 with a 4-queue multi_queue TAP and mq=on: the device steers (the
#              TAP spreads flows over its queues; each core drains its own pair and
#              transmits on it, so a flow stays on the core whose queue got its SYN; the
#              kernel says so), same checks, and core 0 steered no frame to a worker. The
#              cores' RSS lines (flow frames a core received that net/rss hashes to another
#              core) are reported, not checked: the TAP's own flow hash need not match ours.
#  steer-rss4  the same with rss=on (VIRTIO_NET_F_RSS, QEMU's RSS in software or eBPF): the
#              kernel programs the device with its own Toeplitz key and indirection table
#              (it says so), same checks, and every core received flow frames only of
#              flows net/rss hashes to that core (0 mismatches on every core; each core's
#              newest RSS line counted, after the connections closed).
# The steering counters of core 0 (frames to workers, drops for lack of mesh credit) go
# into the result line. N = X86_64_STEER_CONNS (40); X86_64_STEER_ONLY="steer-rss4 ..." runs
# only the scenarios named (the others print nothing). Every boot and client is bounded;
# namespaces and QEMU processes are cleaned up by a trap.
# Usage: x86_64-steer.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
img=$build/x86_64/urmqtt.elf
certs=$build/dev/certs
here=$(cd "$(dirname "$0")" && pwd)
helper=$here/lib/mqtt-client.py
py=/usr/bin/python3
n_conns=${X86_64_STEER_CONNS:-40}
logdir=$build/test-logs/x86_64-steer
mkdir -p "$logdir"
tmp=$(mktemp -d /tmp/urmqtt-x86-steer.XXXXXX)
pids=()
netns=()
rc_all=0

cleanup() {
	trap - EXIT INT TERM
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for n in "${netns[@]}"; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

pass() { echo "PASS x86_64/$1 ($mode${2:+, $2})"; }
fail() { echo "FAIL x86_64/$1 ($mode: $2; see $3)"; rc_all=1; }

if [ ! -f "$img" ] || [ ! -f "$certs/ca.key" ]; then
	echo "FAIL x86_64/steer (missing $img or $certs: make all certs)"
	exit 1
fi
if ! command -v ip >/dev/null || [ "$(id -u)" != 0 ]; then
	why="needs root: a network namespace"
	command -v ip >/dev/null || why="needs command ip: iproute2, for a network namespace"
	for s in steer-smp2 steer-smp4 steer-mq4 steer-rss4; do
		echo "SKIP x86_64/$s ($why)"
	done
	exit 0
fi
# The accelerator: KVM only after a probe guest ran on it (tools/accel/accel.sh; make
# decides once per invocation and exports URMQTT_ACCEL), else TCG.
# shellcheck source=tools/accel/accel.sh
. "$(dirname "$0")/../../tools/accel/accel.sh"
accel_select "$build" || { echo "FAIL x86_64/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
mode=$accel_mode
echo "x86_64 steering smoke: $mode, $n_conns connections per scenario"

# Load certificates (tests/smoke/lib/mqtt-scenarios.sh: python3-cryptography or openssl).
# shellcheck source=tests/smoke/lib/mqtt-scenarios.sh
. "$here/lib/mqtt-scenarios.sh"
mqtt_load_certs "$n_conns" "$tmp/load"

# ping over a raw socket (iputils may be absent): COUNT echo requests, all answered.
pinger=$tmp/ping.py
cat >"$pinger" <<'PY'
import os, select, socket, struct, sys, time
dst, count = sys.argv[1], int(sys.argv[2])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    return ~(s + (s >> 16)) & 0xffff
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
ident, ok = os.getpid() & 0xffff, 0
for seq in range(1, count + 1):
    body = b"urmqtt-steer" * 4
    hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    s.sendto(struct.pack("!BBHHH", 8, 0, csum(hdr + body), ident, seq) + body, (dst, 0))
    end = time.time() + 3
    while time.time() < end:
        r, _, _ = select.select([s], [], [], end - time.time())
        if not r:
            break
        pkt, addr = s.recvfrom(2048)
        ihl = (pkt[0] & 15) * 4
        t, _, _, rid, rseq = struct.unpack("!BBHHH", pkt[ihl:ihl + 8])
        if addr[0] == dst and t == 0 and rid == ident and rseq == seq:
            ok += 1
            break
print("%d of %d replies" % (ok, count))
sys.exit(0 if ok == count else 1)
PY

glog() { tr -d '\r' <"$1"; }
# Whole-log match without grep -q: an early exit would make tr die of SIGPIPE, which
# pipefail reports as a failed match.
glog_has() { tr -d '\r' <"$1" | grep -Ea -- "$2" >/dev/null; }
wait_log() { # LOG PATTERN PID SECONDS
	local i
	for ((i = 0; i < $4 * 10; i++)); do
		glog_has "$1" "$2" && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# The newest broker line of every core: "core est conns hs_done" per line.
core_lines() {
	local log=$1 n=$2 c
	for ((c = 0; c < n; c++)); do
		glog "$log" | grep -a " broker: core $c: conns=" | tail -n 1 |
			sed -E "s/^.* core ($c): conns=([0-9]+) est=([0-9]+) hs=[0-9]+ hs_done=([0-9]+) .*$/\1 \3 \2 \4/"
	done
}
# Wait (bounded) until every core's newest line is fresh and the est sum is $3.
wait_est_sum() { # LOG NCORES WANT SECONDS
	local i sum
	for ((i = 0; i < $4 * 5; i++)); do
		sum=$(core_lines "$1" "$2" | awk '{s += $2} END {print s + 0}')
		[ "$sum" = "$3" ] && return 0
		sleep 0.2
	done
	return 1
}

# Each core's newest RSS line: "core mismatched flow-frames" per line.
rss_lines() { # LOG NCORES
	local log=$1 n=$2 c
	for ((c = 0; c < n; c++)); do
		glog "$log" | grep -a " net: core $c rss: " | tail -n 1 |
			sed -nE "s/^.* core ($c) rss: ([0-9]+) of ([0-9]+) flow frames.*$/\1 \2 \3/p"
	done
}

# steer_run NAME SMP QUEUES BANNER-PATTERN [DEVICE-OPTIONS]
steer_run() {
	local name=$1 smp=$2 queues=$3 bpat=$4 devopt=${5:-}
	if [ "${X86_64_STEER_ONLY:-}" ] && [[ " $X86_64_STEER_ONLY " != *" $name "* ]]; then
		return
	fi
	local log=$logdir/$name.log ns="urmqtt-steer-$$-$name" tap=tapst0 qpid cpid out served lines steer rss
	local netdev=(-netdev "tap,id=n0,ifname=$tap,script=no,downscript=no${queues:+,queues=$queues}")
	local dev=(-device "virtio-net-pci,netdev=n0,romfile=${queues:+,mq=on,vectors=$((2 * queues + 2))}$devopt")
	: >"$log"
	if ! { ip netns add "$ns" && netns+=("$ns") &&
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 &&
		ip -n "$ns" link set lo up && ip -n "$ns" tuntap add dev "$tap" mode tap ${queues:+multi_queue} &&
		ip -n "$ns" addr add 10.78.0.1/24 dev "$tap" && ip -n "$ns" link set "$tap" up; } >>"$log.host" 2>&1; then
		echo "SKIP x86_64/$name (needs netns: cannot create a network namespace with a tap device)"
		return
	fi
	ip netns exec "$ns" timeout 600 qemu-system-x86_64 -M q35 "${accel[@]}" -m 512M -smp "$smp" -display none \
		-no-reboot -nodefaults -serial stdio "${netdev[@]}" "${dev[@]}" -kernel "$img" \
		-append "test=net ip=10.78.0.2/24 gw=10.78.0.1 broker_report_ms=2000" </dev/null >>"$log" 2>&1 &
	qpid=$!
	pids+=("$qpid")
	if ! wait_log "$log" "static address: 10\\.78\\.0\\.2/24" "$qpid" 60 ||
		! wait_log "$log" " broker: core $((smp - 1)): conns=" "$qpid" 30; then
		fail "$name" "no static address or no broker line from core $((smp - 1))" "$log"
	elif ! glog_has "$log" "$bpat"; then
		fail "$name" "missing /$bpat/" "$log"
	elif ! ip netns exec "$ns" timeout 30 "$py" "$pinger" 10.78.0.2 3 >>"$log.host" 2>&1; then
		fail "$name" "no ping replies" "$log"
	else
		# No timeout(1) wrapper: ip and env exec, so $! is the client itself and killing
		# it closes its connections (the client bounds itself: 60 s per step, 300 s held).
		ip netns exec "$ns" env MQTT_CLIENT_TIMEOUT=60 "$py" "$helper" 10.78.0.2 8883 "$certs" \
			idle "$n_conns" "$tmp/load" 300 >"$tmp/$name.out" 2>&1 &
		cpid=$!
		pids+=("$cpid")
		for _ in $(seq 1500); do # bounded: N full handshakes under TCG
			grep -q "^held\|failed\|Error" "$tmp/$name.out" && break
			kill -0 "$cpid" 2>/dev/null || break
			sleep 0.2
		done
		if ! grep -q "^held $n_conns" "$tmp/$name.out"; then
			fail "$name" "client: $(tail -n 2 "$tmp/$name.out" | tr '\n' ' ')" "$log"
		elif ! wait_est_sum "$log" "$smp" "$n_conns" 20; then
			fail "$name" "per-core established do not add up to $n_conns: $(core_lines "$log" "$smp" | tr '\n' ';')" "$log"
		else
			lines=$(core_lines "$log" "$smp")
			served=$(echo "$lines" | awk '$2 > 0' | wc -l)
			steer=$(glog "$log" | grep -a "core 0 steering:" | tail -n 1 | sed 's/^.*steering: //')
			if [ "$served" -lt 2 ]; then
				fail "$name" "only $served core(s) served connections: $(echo "$lines" | tr '\n' ';')" "$log"
			elif [ "$queues" ] && [[ "$steer" != "0 frames to workers"* ]]; then
				fail "$name" "core 0 steered frames although the device steers: $steer" "$log"
			else
				kill -KILL "$cpid" 2>/dev/null
				wait "$cpid" 2>/dev/null
				if wait_est_sum "$log" "$smp" 0 60 && [ "$(core_lines "$log" "$smp" | awk '{s += $3} END {print s + 0}')" = 0 ]; then
					# The last frames' counters reach the log within a second.
					[ "$queues" ] && sleep 2
					rss=$(rss_lines "$log" "$smp")
					local rss_txt
					rss_txt=$(echo "$rss" | awk '{printf "%s%s:%s/%s", (NR > 1 ? " " : ""), $1, $2, $3}')
					if [ "$devopt" ] && { [ "$(echo "$rss" | grep -c .)" != "$smp" ] ||
						[ "$(echo "$rss" | awk '{m += $2; f += $3} END {print (m == 0 && f > 0) ? "ok" : "bad"}')" != ok ]; }; then
						fail "$name" "flow frames on a core net/rss does not name (core mismatched/flow frames): ${rss_txt:-no RSS lines}" "$log"
					else
						pass "$name" "$n_conns mTLS connections held, established per core (core est): $(echo "$lines" | awk '{printf "%s%s:%s", (NR > 1 ? " " : ""), $1, $2}'); connected in $(cut -d' ' -f3 "$tmp/$name.out") s; all closed; core 0 steering: $steer${queues:+; flow frames on another core than net/rss names (core mismatched/received): $rss_txt}"
					fi
				else
					fail "$name" "connections left after the clients died: $(core_lines "$log" "$smp" | tr '\n' ';')" "$log"
				fi
			fi
		fi
		kill -KILL "$cpid" 2>/dev/null
	fi
	if glog_has "$log" "PANIC|panic|EXCEPTION|BUG"; then
		fail "$name-alive" "$(glog "$log" | grep -a -m1 "PANIC\|panic\|EXCEPTION\|BUG")" "$log"
	fi
	kill "$qpid" 2>/dev/null
	wait "$qpid" 2>/dev/null
	ip netns del "$ns" 2>/dev/null
}

steer_run steer-smp2 2 "" "net: 2 stacks, one per core; core 0 receives from 1 pair\\(s\\).*workers transmit through core 0"
steer_run steer-smp4 4 "" "net: 4 stacks, one per core; core 0 receives from 1 pair\\(s\\).*workers transmit through core 0"
steer_run steer-mq4 4 4 "net: the device steers: each of 4 cores drains its own queue pair"
steer_run steer-rss4 4 4 "net: VIRTIO_NET_F_RSS: the device picks each flow's queue by our Toeplitz key and 128-entry indirection table" ",rss=on"
exit $rc_all
