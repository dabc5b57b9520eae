#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: urMQTT and Mosquitto side by side, same load generator, same certificates,
# same core budget (each broker pinned to one core, the load generator to the other), in
# one run. Never a pass/fail test: it measures and prints a table of both values and their
# ratio; results in OUT/results.json (+ PNG plots when gnuplot is installed), then names every
# figure that moved beyond its noise band since the last record of docs/bench/history.csv.
#   urMQTT     TREE/hostrel/urmqtt --broker (hostrel: -O2, no sanitizers) on a TAP device
#              in a network namespace of its own (Linux side 10.79.0.1/24, extra source
#              addresses 10.79.0.3-5)
#   Mosquitto  Debian's mosquitto in the same namespace on its loopback (127.0.0.1:8883),
#              TLS 1.3 only, require_certificate, use_identity_as_username, one listener,
#              the same CA and the same server certificate
# Figures (median of BENCH_RUNS runs, default 3): full and resumed handshakes/s and the
# broker's CPU per handshake (urMQTT also with its curve driver off); bytes per idle mTLS connection at each of BENCH_IDLE (1,000
# and 10,000) connections; QoS 0, 1 and 2 msgs/s (64-byte payloads, 4 publishers -> 1
# subscriber, flat out); latency p50/p99/p99.9 at BENCH_RATE (1,000) msgs/s QoS 1 and QoS 2;
# a connection storm (BENCH_STORM_DEV devices, at most BENCH_STORM_RATE new mTLS connections
# per second, far beyond the 32 handshakes in flight urMQTT admits) while the established
# clients publish at BENCH_RATE: their msgs/s and latency before/during/after, the storm's
# outcome, SYNs refused or dropped by each broker, the broker's memory through it; boot
# time of the x86_64 image (QEMU, TCG here) and image size against Mosquitto's binary and
# shared libraries; the crypto floor from `openssl speed`; the in-process microbenchmarks
# (micro_mqtt, micro_rss, micro_shard, micro_tcp, micro_tls). Every wait is bounded; the
# namespace and every process started here are removed on exit (trap), also after a
# failure or Ctrl-C.
# Both brokers run at once on the broker core (one idle while the other is measured) and
# their runs of every figure alternate (urMQTT, Mosquitto, urMQTT, ...), so on a shared,
# noisy machine both see the same background load; each figure is the median of its runs.
# Virtual machines (group vm): urMQTT as the VM image (TREE/x86_64/urmqtt.elf, static
# address on a TAP) against Mosquitto inside a small Debian guest (tools/bench/linux-guest,
# built in BENCH_LINUX_GUEST_DIR, default build/bench/linux-guest), each in a namespace and
# TAP of its own, the same QEMU settings for both (q35, BENCH_VM_SMP vCPUs, default 1,
# BENCH_VM_MEM, default 512M, virtio-net over the TAP, the accelerator: KVM when a
# probe guest ran on it, else TCG) pinned to the broker core like the brokers. A subset of the figures
# (under TCG a guest opens only a few dozen connections/s): full and resumed handshakes/s and
# the QEMU process's CPU per handshake; bytes per idle connection at BENCH_VM_IDLE (1,000)
# connections (urMQTT: the kernel's heap above its baseline / connections + its fixed table
# bytes per connection; the guest: Mosquitto's RSS delta / N and the guest's used-memory delta
# / N); QoS 0 and 1 msgs/s (64 B, flat out); latency p50/p99 at BENCH_VM_RATE (100) msgs/s
# QoS 1 (not BENCH_RATE: the guest's Mosquitto passes only ~230 QoS 1 msgs/s flat out under
# TCG here, the rate stays well below both VMs' maximum); QEMU start -> accepting TCP on 8883, BENCH_VM_BOOTS (3)
# boots each, the other VM stopped. Both VMs run at once (one idle while the other is
# measured) and their runs alternate, like the two brokers above.
# Usage: run.sh TREE OUT [IMAGE]   (TREE: the bench build tree; OUT: results directory;
#        IMAGE: the x86_64 urmqtt.elf for boot time and size, skipped when absent)
# Durability (group durable): QoS 1 flat out (64 B, P publishers) to one persistent subscriber
# (clean session 0) against four brokers started alone in turn, each run on a fresh state:
# urMQTT with storage (a 256 MiB disk file, the same layout and engine as the image: a PUBACK
# only after the commit's fdatasync) and without, Mosquitto with `persistence true` (autosave:
# NOT a flush per message) and without; urMQTT's commits, records and commit latency from its
# storage line; then bytes on disk per queued message (BENCH_DURABLE_QUEUED, 100, QoS 1
# messages into an offline persistent session: urMQTT's database pages, Mosquitto's
# mosquitto.db after SIGUSR1).
# Telemetry (group telemetry): QoS 1 telemetry (tools/loadgen telemetry: publishers only,
# 64-byte payloads) flat out into urMQTT with storage, with its telemetry log on and off
# (--no-telemetry-log); records written out per second, disk bytes per record, the log's
# flush latency.
# Disk lifecycle (group disk): urMQTT with storage, its database filled with ~15 MB of retained
# messages (4 publishers x 64 x 60 KB), QoS 1 flat out to a persistent subscriber while a backup
# runs every 2 s and, alternating, without backups: commit latency p99 of both, the backups'
# duration and longest step; the scrubber's read rate at a budget of 4 MiB/s and at an
# unreachable one (its own speed); bring-up time and KiB read on a 64 MiB and a 16 GiB disk
# file (format, then reopen).
# Cores (group cores): the urMQTT image and the Linux+Mosquitto guest with 1 then 2 vCPUs
# (BENCH_CORES_SMP) in the same run, QoS 0/1/2 flat out; the image's shard and routing lines
# after each run.
# MQTT 5.0 (group mqtt5): the pubsub group's QoS 0 and QoS 1 floods and the idle group's
# measurement at BENCH_MQTT5_IDLE (1,000) connections, each in MQTT 5.0 (loadgen --mqtt5) and in
# 3.1.1 in the same run, against the same two brokers (Mosquitto speaks 5.0 with the same
# configuration): 5.0 / 3.1.1 of each broker, urMQTT / Mosquitto in 5.0. Within every run the
# floods alternate between the versions (3.1.1 first in odd runs, 5.0 first in even ones) and
# between the brokers; each idle measurement starts on freshly started brokers (Mosquitto's
# figure is its RSS growth, which a second thousand connections would hide in the heap the
# first one grew).
# Scale (group scale, issue 25; not in the default run, it takes far longer than 10 minutes under
# TCG): up to 100,000 idle mTLS devices against the image built with config/scale-100k.conf in
# 256 MiB, Mosquitto beside it; see tools/bench/scale.sh.
# BENCH_ONLY="hs idle pubsub lat storm mqtt5 durable telemetry disk boot dpbench micro vm cores" picks
# figure groups (default: all of these); BENCH_ONLY=scale runs the scale group.
# dpbench: the in-guest data-plane benchmark (the bench tree's x86_64 and aarch64 images, scenario dpbench)
# with 1 worker core, then 2 (and 4 when the host has 4 CPUs), BENCH_DPB_SECONDS each.
set -uo pipefail
# The commit measured (with -dirty when tracked files differ from it) and when, for
# results.json and docs/bench/history.csv: taken at the start, before anything is built or run.
bench_commit=$(git rev-parse --short=12 HEAD 2>/dev/null || true)
[ -n "$bench_commit" ] && ! git diff --quiet HEAD -- 2>/dev/null && bench_commit=$bench_commit-dirty
bench_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
tree=${1:?usage: run.sh TREE OUT}
out=${2:?usage: run.sh TREE OUT}
image=${3:-}
runs=${BENCH_RUNS:-3}
secs=${BENCH_SECONDS:-5}
idle_list=${BENCH_IDLE:-1000 10000}
idle_list=${idle_list//,/ }
rate=${BENCH_RATE:-1000}
only=" ${BENCH_ONLY:-hs idle pubsub lat storm mqtt5 durable telemetry disk boot dpbench micro vm cores} "
m5_idle=${BENCH_MQTT5_IDLE:-1000}
durable_queued=${BENCH_DURABLE_QUEUED:-100}
# Storm: devices, cap on new connection attempts per second, seconds of storm, each
# attempt's deadline (ms), how long a connected storm device stays before it drops (ms).
storm_dev=${BENCH_STORM_DEV:-1500}
storm_rate=${BENCH_STORM_RATE:-1500}
storm_secs=${BENCH_STORM_SECONDS:-8}
storm_runs=${BENCH_STORM_RUNS:-$runs}
storm_attempt_ms=${BENCH_STORM_ATTEMPT_MS:-2500}
storm_hold_ms=${BENCH_STORM_HOLD_MS:-2000}
boots=${BENCH_BOOTS:-5}
# Connections in flight while opening the idle connections (the handshake figures keep
# BENCH_K): 16, half of urMQTT's 32 handshakes in flight per core.
hold_k=${BENCH_HOLD_K:-16}
# Handshakes in flight. 3: more fails urMQTT handshakes with MBEDTLS_ERR_SSL_ALLOC_FAILED
# (PSA key slots, tls/mbedtls_config.h MBEDTLS_PSA_KEY_SLOT_COUNT 16) — see BENCHMARKS.md.
k=${BENCH_K:-3}
pubs=${BENCH_PUBS:-4}
# the virtual machines (group vm)
vm_smp=${BENCH_VM_SMP:-1}
vm_mem=${BENCH_VM_MEM:-512M}
vm_idle=${BENCH_VM_IDLE:-1000}
vm_rate=${BENCH_VM_RATE:-100}
vm_boots=${BENCH_VM_BOOTS:-3}
# Connections in flight while the VMs open the idle connections: the handshake figures' 3.
# (16, the hosted figure's, made the urMQTT image's watchdog stop it under TCG: its 'net'
# handler ran > 210 ms with 16 handshakes in flight on one core.)
vm_hold_k=${BENCH_VM_HOLD_K:-$k}
lg_dir=${BENCH_LINUX_GUEST_DIR:-build/bench/linux-guest}

broker=$tree/hostrel/urmqtt
loadgen=$tree/hostrel/tools/loadgen
certs=$tree/dev/certs
devcerts=$out/certs
raw=$out/raw.jsonl
ns=urmqtt-bench-$$
tap=ubtap0
# the VMs: a namespace and a TAP each, the same addresses as the hosted broker's (the dev
# server certificate names 10.79.0.2)
vm_img=$tree/x86_64/urmqtt.elf
declare -A ns_of=([urmqtt-vm]=urmqtt-bench-vm-$$ [linux-guest]=urmqtt-bench-lg-$$)
declare -A tap_of=([urmqtt-vm]=ubtap1 [linux-guest]=ubtap2)
vm_nss=()
declare -A vm_queues_of=() # NAME: virtio-net queue pairs when more than one (group cores)
lin_ip=10.79.0.1
our_ip=10.79.0.2
srcs_tap=10.79.0.1,10.79.0.3,10.79.0.4,10.79.0.5
srcs_lo=127.0.0.1,127.0.0.2,127.0.0.3,127.0.0.4
bpid=""
declare -A pid_of=()
brokers=()
t_start=$(date +%s)

say() { echo "bench: $*"; }
want() { [[ "$only" == *" $1 "* ]]; }
idle_max=0
want idle && for n in $idle_list; do [ "$n" -gt "$idle_max" ] && idle_max=$n; done
want vm && [ "$vm_idle" -gt "$idle_max" ] && idle_max=$vm_idle
want mqtt5 && [ "$m5_idle" -gt "$idle_max" ] && idle_max=$m5_idle
n_certs=$((idle_max > pubs + storm_dev ? idle_max : pubs + storm_dev))
max_conn=$((n_certs + 64))
in_ns() { ip netns exec "$ns" "$@"; }

cleanup() {
	trap - EXIT INT TERM
	stop_brokers
	ip netns del "$ns" 2>/dev/null
	vm_net_del
}
# vm_net_del: every process still inside a VM namespace (a QEMU whose pid an interrupted
# boot.sh never returned, a load generator) gets TERM, then KILL; then the namespaces go
vm_net_del() {
	local n p
	for n in "${vm_nss[@]}"; do
		for p in $(ip netns pids "$n" 2>/dev/null); do kill -TERM "$p" 2>/dev/null; done
		for _ in $(seq 30); do [ -z "$(ip netns pids "$n" 2>/dev/null)" ] && break; sleep 0.1; done
		for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
		ip netns del "$n" 2>/dev/null
	done
	vm_nss=()
}
stop_brokers() {
	local p
	for p in "${pid_of[@]}"; do
		kill -TERM "$p" 2>/dev/null
		for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	pid_of=()
	bpid=""
}
# use NAME: the broker the next measurement goes to (address, sources, log, process)
use() {
	name=$1
	bns=$ns
	case $1 in
	urmqtt | urmqtt-nodriver | urmqtt-disk | urmqtt-mem | urmqtt-tlog | urmqtt-notlog | urmqtt-backup | urmqtt-nobackup | \
		urmqtt-scrub | urmqtt-boot) host=$our_ip srcs=$srcs_tap ;;
	urmqtt-vm | linux-guest) host=$our_ip srcs=$srcs_tap bns=${ns_of[$1]} ;;
	*) host=127.0.0.1 srcs=$srcs_lo ;;
	esac
	blog=$out/$1.log
	bpid=${pid_of[$1]:-}
}
# each CMD ARGS...: CMD once per running broker, urMQTT then Mosquitto — the two brokers'
# runs of a figure alternate, so both see the same (shared, noisy) machine
each() {
	local b
	for b in "${brokers[@]}"; do use "$b"; "$@"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- prerequisites: say everything that is missing, then stop ----------------------
missing=()
[ "$(id -u)" = 0 ] || missing+=("root (network namespace, TAP device)")
[ -c /dev/net/tun ] || missing+=("/dev/net/tun")
# the hosted broker: only for the groups that run it (not vm, cores, boot, dpbench, scale)
for g in hs idle pubsub lat storm mqtt5 durable telemetry disk; do
	want $g && { [ -x "$broker" ] || missing+=("$broker (make bench builds it)"); break; }
done
[ -x "$loadgen" ] || missing+=("$loadgen (make bench builds it)")
[ -f "$certs/ca.key" ] || missing+=("$certs (make certs)")
# 10,000 idle connections: Mosquitto (a child of this script) needs a descriptor each.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
[ "$(ulimit -n)" -ge $((idle_max + 256)) ] || missing+=("ulimit -n >= $((idle_max + 256)) (have $(ulimit -n))")
for t in ip taskset python3 openssl timeout; do
	command -v $t >/dev/null || missing+=("$t")
done
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || missing+=("mosquitto (apt-get install mosquitto)")
if [ ${#missing[@]} -gt 0 ]; then
	for m in "${missing[@]}"; do say "missing: $m"; done
	exit 1
fi
mosq=$(command -v mosquitto || echo /usr/sbin/mosquitto)
# The accelerator of every virtual machine below: KVM only after a probe guest ran on it
# (make bench decides and exports URMQTT_ACCEL), else TCG.
# shellcheck source=tools/accel/accel.sh
. "$(dirname "$0")/../accel/accel.sh"
accel_select "$(dirname "$(dirname "$image")")" -accel "tcg,thread=multi" -cpu max || exit 2
if [ "$accel_mode" = kvm ]; then
	kvm="present, a probe guest ran on it: the virtual machines run under KVM"
else
	kvm="absent or unusable (no /dev/kvm, or a probe guest could not run on it): the virtual machines run under TCG"
fi
command -v gnuplot >/dev/null && have_plot=1 || have_plot=0
ncpu=$(nproc)
if [ "$ncpu" -ge 2 ]; then bcpu=1; lcpu=0; else bcpu=0; lcpu=0; fi
say "KVM: $kvm"
say "cores: $ncpu (broker on CPU $bcpu, load generator on CPU $lcpu); runs per figure: $runs; ${secs}s each"
mkdir -p "$out"
: >"$raw"

"$loadgen" mkcerts --cadir "$certs" --out "$devcerts" --n "$n_certs" || exit 1

# ---- the namespace ---------------------------------------------------------------
ip netns add "$ns" || exit 1
in_ns ip link set lo up
in_ns ip tuntap add dev "$tap" mode tap || exit 1
for a in ${srcs_tap//,/ }; do in_ns ip addr add "$a/24" dev "$tap"; done
in_ns ip link set "$tap" up
in_ns sysctl -q -w net.ipv4.ip_local_port_range="10000 65000" >/dev/null 2>&1
in_ns sysctl -q -w net.ipv4.tcp_tw_reuse=1 >/dev/null 2>&1

sed -e "s|@LISTEN@| 127.0.0.1|" -e "s|@CERTS@|$(realpath "$certs")|" tools/bench/mosquitto-bench.conf \
	>"$out/mosquitto.conf"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)

# lg TAG MODE ARGS...: one loadgen run against the current broker ($name); appends
# {"broker":..,"figure":TAG,"cpu_ticks":..,"hz":..,<loadgen json>} to raw.jsonl
lg() {
	local tag=$1 mode=$2
	shift 2
	local c0 c1 j
	c0=$(cpu_ticks "$bpid")
	j=$(timeout 300 ip netns exec "$bns" taskset -c "$lcpu" "$loadgen" "$mode" --host "$host" \
		--src "$srcs" --ca "$certs/ca.crt" --devdir "$devcerts" --svcdir "$certs" "$@" \
		2>>"$out/loadgen-$name.log" | tail -n 1)
	c1=$(cpu_ticks "$bpid")
	[ -n "$j" ] || j='{"error":"no result"}'
	echo "{\"broker\":\"$name\",\"figure\":\"$tag\",\"cpu_ticks\":$((c1 - c0)),\"hz\":$hz,${j#\{}" >>"$raw"
	echo "$j" | python3 -c 'import json,sys
try:
    d=json.loads(sys.stdin.read())
except Exception:
    d={"error":"unparsable"}
keys=["handshakes_per_s","held","msgs_per_s","lat_us_p50","lat_us_p99","failed","error",
      "server_receive_max","rejected","reasons"]
print("    %-9s" % sys.argv[1], " ".join("%s=%s"%(k,d[k]) for k in keys if k in d))' "$name"
}

# idle N [FIGURE [LOADGEN OPTIONS...]]: hold N idle connections, one QoS 1 subscription each;
# memory at N, as figure FIGURE (default idle; group mqtt5: m5_idle with --mqtt5, m5v311_idle)
idle() {
	local n=$1 fig=${2:-idle} rss0
	shift
	[ $# -gt 0 ] && shift
	local tag=$name-$n
	[ "$fig" = idle ] || tag=$name-$fig-$n
	local ready=$out/ready-$tag hj=$out/hold-$tag.json
	say "[$name] $n idle connections, one QoS 1 subscription each ($hold_k in flight while opening)${*:+; $*}"
	rm -f "$ready"
	rss0=$(rss_kb "$bpid")
	timeout 400 ip netns exec "$ns" taskset -c "$lcpu" "$loadgen" hold --host "$host" --src "$srcs" \
		--ca "$certs/ca.crt" --devdir "$devcerts" --n "$n" --k "$hold_k" --seconds 4 \
		--ready-file "$ready" "$@" >"$hj" 2>>"$out/loadgen-$name.log" &
	local hpid=$! rss1=0 st="" mem=""
	for _ in $(seq 3000); do [ -f "$ready" ] && break; kill -0 $hpid 2>/dev/null || break; sleep 0.1; done
	sleep 2 # let a stats line pass and the broker settle
	rss1=$(rss_kb "$bpid")
	[ "$name" = urmqtt ] && st=$(grep '^stats broker' "$blog" | tail -n 1) && mem=$(grep '^stats memory' "$blog" | tail -n 1)
	wait $hpid
	local held connect_s
	held=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("held",0))' "$hj" 2>/dev/null || echo 0)
	connect_s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("connect_s",0))' "$hj" 2>/dev/null || echo 0)
	local own=null heap=null
	# a connection slot's tables + the heap blocks per open connection (docs/ARCHITECTURE.md)
	[ -n "${mem:-}" ] && own=$(echo "$mem" | tr ' ' '\n' | sed -n 's/^idle_bytes_per_conn=//p')
	[ -n "$st" ] && heap=$(echo "$st" | tr ' ' '\n' | sed -n 's/^heap_used=//p')
	# 5.0: what the load generator saw (failures, reason codes) goes with the figure
	local m5=""
	[ "$fig" = idle ] || m5=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print("".join(",\"%s\":%s" % (k, json.dumps(d[k])) for k in ("failed","server_receive_max","reasons") if k in d))' "$hj" 2>/dev/null)
	echo "{\"broker\":\"$name\",\"figure\":\"$fig\",\"n\":$n,\"held\":${held:-0},\"connect_s\":${connect_s:-0},\"rss0_kb\":$rss0,\"rss1_kb\":$rss1,\"own_bytes_per_conn\":${own:-null},\"heap_used\":${heap:-null}$m5}" >>"$raw"
	echo "    held=$held in ${connect_s}s rss_delta_kb=$((rss1 - rss0)) own_bytes_per_conn=${own:-n/a}${m5:+ $(echo "${m5#,}" | tr -d '"')}"
	sleep 1 # the broker closes the held connections
}

# Linux's counters of SYNs and handshakes refused or dropped by a listener in the namespace
# (Mosquitto's side; urMQTT's TAP traffic never reaches a Linux listener).
netstat_syn() {
	in_ns cat /proc/net/netstat | awk '
		/^TcpExt:/ { if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1 } else {
			for (i = 2; i <= NF; i++) if (k[i] ~ /^(ListenOverflows|ListenDrops|TCPReqQFullDrop|TCPReqQFullDoCookies|SyncookiesSent|SyncookiesRecv|SyncookiesFailed|TCPBacklogDrop)$/)
				printf "\"%s\":%s,", k[i], $i } }' | sed 's/,$//'
}

# urMQTT's data plane counters: admission refusals (SYNs dropped without a SYN-ACK) and
# handshake outcomes, from its last stats line.
dp_counts() {
	grep '^stats dp' "$blog" | tail -n 1 | python3 -c 'import sys,re,json
l=sys.stdin.read()
d={}
m=re.search(r"refused heap/records/inflight/source/rate=(\d+)/(\d+)/(\d+)/(\d+)/(\d+)",l)
if m:
    for k,v in zip(("heap","records","inflight","source","rate"),m.groups()): d["refused_"+k]=int(v)
for k in ("accepted","hs_done","hs_failed","hs_timeouts","reaped"):
    m=re.search(r"\b%s=(\d+)"%k,l)
    if m: d[k]=int(m.group(1))
print(json.dumps(d)[1:-1])'
}

storm() { # one storm run: established clients publish at $rate msgs/s QoS 1 through it
	local j c0 c1 s0 s1 mon=$out/storm-mem-$name.txt l0
	c0=$(cpu_ticks "$bpid")
	if [ "$name" = urmqtt ]; then s0="{$(dp_counts)}"; else s0="{$(netstat_syn)}"; fi
	l0=$(wc -l <"$blog")
	local rss0
	rss0=$(rss_kb "$bpid")
	# memory through the run, every 0.5 s (bounded by the load generator's own deadline)
	( for _ in $(seq 600); do rss_kb "$bpid"; sleep 0.5; done ) >"$mon" &
	local mpid=$!
	j=$(timeout 300 ip netns exec "$ns" taskset -c "$lcpu" "$loadgen" storm --host "$host" \
		--src "$srcs" --ca "$certs/ca.crt" --devdir "$devcerts" --svcdir "$certs" \
		--pubs "$pubs" --subs 1 --qos 1 --payload 64 --rate "$rate" --k "$k" \
		--before 3 --seconds "$storm_secs" --after 4 --storm-n "$storm_dev" \
		--storm-rate "$storm_rate" --attempt-ms "$storm_attempt_ms" --hold-ms "$storm_hold_ms" \
		2>>"$out/loadgen-$name.log" | tail -n 1)
	kill "$mpid" 2>/dev/null
	wait "$mpid" 2>/dev/null
	sleep 1.5 # a stats line after the storm
	c1=$(cpu_ticks "$bpid")
	local alive=false rss_peak rss_end heap_peak=null
	kill -0 "$bpid" 2>/dev/null && alive=true
	rss_peak=$(sort -n "$mon" | tail -n 1)
	rss_end=$(rss_kb "$bpid")
	if [ "$name" = urmqtt ]; then
		s1="{$(dp_counts)}"
		heap_peak=$(tail -n +"$((l0 + 1))" "$blog" | grep '^stats broker' | tr ' ' '\n' |
			sed -n 's/^heap_used=//p' | sort -n | tail -n 1)
	else
		s1="{$(netstat_syn)}"
	fi
	[ -n "$j" ] || j='{"error":"no result"}'
	echo "{\"broker\":\"$name\",\"figure\":\"storm\",\"cpu_ticks\":$((c1 - c0)),\"hz\":$hz,\"alive\":$alive,\"rss0_kb\":${rss0:-0},\"rss_peak_kb\":${rss_peak:-0},\"rss_end_kb\":${rss_end:-0},\"heap_peak\":${heap_peak:-null},\"srv0\":$s0,\"srv1\":$s1,${j#\{}" >>"$raw"
	echo "$j" | python3 -c 'import json,sys
try:
    d=json.loads(sys.stdin.read())
except Exception:
    d={"error":"unparsable"}
if "error" in d: print("    error=%s" % d["error"]); sys.exit()
b,s=d["before"],d["storm"]
print("    %s: before %.0f msgs/s p99 %s us; storm %.0f msgs/s p99 %s us; attempts %d completed %d syn_timeout %d refused %d tls_failed %d steady_after_ms %s"
      % (sys.argv[1],b["msgs_per_s"],b["lat_us_p99"],s["msgs_per_s"],s["lat_us_p99"],d["attempts"],d["completed"],d["syn_timeout"],d["tcp_refused"],d["tls_failed"],d["steady_after_ms"]))' "$name"
	echo "    $name: alive=$alive rss_peak_kb=$rss_peak rss_end_kb=$rss_end heap_peak=$heap_peak"
}

# The same handshakes on urMQTT without its curve driver (--no-curve-driver: mbedTLS's own
# P-256 and X25519), as broker urmqtt-nodriver: the driver's before and after in one run. The
# broker is restarted for it, then again as before for the figures that follow.
hs_driver_off() {
	[[ " ${brokers[*]} " == *" urmqtt "* ]] || return 0
	stop_one urmqtt
	if start_urmqtt urmqtt-nodriver --no-curve-driver; then
		use urmqtt-nodriver
		say "full and resumed handshakes, urMQTT with the curve driver off"
		for r in $(seq "$runs"); do lg hs_full handshake --k "$k" --seconds "$secs"; done
		for r in $(seq "$runs"); do lg hs_resumed handshake --k "$k" --seconds "$secs" --resume; done
		stop_one urmqtt-nodriver
	fi
	if ! start_urmqtt urmqtt; then
		local b keep=()
		for b in "${brokers[@]}"; do [ "$b" = urmqtt ] || keep+=("$b"); done
		brokers=("${keep[@]}")
	fi
}

# The group mqtt5 (see the head): lg and idle as the pubsub and idle groups call them, once with
# --mqtt5 (figures m5_*) and once in 3.1.1 (m5v311_*) in every run.
mqtt5_group() {
	local q r v order opt
	for q in 0 1; do
		say "MQTT 5.0 beside 3.1.1: QoS $q flat out, 64-byte payloads, $pubs publishers -> 1 subscriber"
		for r in $(seq "$runs"); do
			order="m5v311 m5"
			[ $((r % 2)) = 0 ] && order="m5 m5v311"
			for v in $order; do
				opt=()
				[ $v = m5 ] && opt=(--mqtt5)
				each lg "${v}_q$q" pubsub --pubs "$pubs" --subs 1 --qos $q --payload 64 --k "$k" \
					--seconds "$secs" "${opt[@]}"
			done
		done
	done
	say "MQTT 5.0 beside 3.1.1: $m5_idle idle connections, freshly started brokers for each version"
	for v in m5v311 m5; do
		opt=()
		[ $v = m5 ] && opt=(--mqtt5)
		stop_brokers
		start_brokers
		each idle "$m5_idle" "${v}_idle" "${opt[@]}"
	done
}

measure() { # every figure, the brokers' runs alternating
	if want hs; then
		say "full handshakes ($k in flight)"
		for r in $(seq "$runs"); do each lg hs_full handshake --k "$k" --seconds "$secs"; done
		say "resumed handshakes"
		for r in $(seq "$runs"); do each lg hs_resumed handshake --k "$k" --seconds "$secs" --resume; done
		hs_driver_off
	fi
	if want idle; then
		for n in $idle_list; do each idle "$n"; done
	fi
	if want pubsub; then
		for q in 0 1 2; do
			say "QoS $q flat out, 64-byte payloads, $pubs publishers -> 1 subscriber"
			for r in $(seq "$runs"); do
				each lg "q$q" pubsub --pubs "$pubs" --subs 1 --qos $q --payload 64 --k "$k" --seconds "$secs"
			done
		done
	fi
	if want lat; then
		for q in 1 2; do
			say "latency at $rate msgs/s, QoS $q"
			local tag=lat
			[ $q = 2 ] && tag=lat2
			for r in $(seq "$runs"); do
				each lg "$tag" pubsub --pubs "$pubs" --subs 1 --qos $q --payload 64 --rate "$rate" --k "$k" --seconds "$secs"
			done
		done
	fi
	if want storm; then
		# fresh brokers: the storm's memory figures must not inherit the idle runs' heap
		stop_brokers
		start_brokers "$(grep -c '^stats broker' "$out/urmqtt.log")"
		say "connection storm: $storm_dev devices, at most $storm_rate new mTLS connections/s for ${storm_secs}s, while $pubs publishers send $rate msgs/s QoS 1"
		for r in $(seq "$storm_runs"); do each storm; done
	fi
	if want mqtt5; then
		mqtt5_group
	fi
}

# ---- both brokers, side by side on the broker core -------------------------------------------
# start_urmqtt NAME [OPTIONS...]: urMQTT (hosted, hostrel) on the TAP device as broker NAME,
# its log $out/NAME.log; 0 once it printed a broker stats line beyond the log's current ones.
start_urmqtt() {
	local n=$1 up=0 lines
	shift
	blog=$out/$n.log
	touch "$blog"
	lines=$(grep -c "^stats broker" "$blog")
	ip netns exec "$ns" taskset -c "$bcpu" "$broker" --tap "$tap" --ip "$our_ip/24" --broker \
		--broker-stats-ms 1000 --stats-ms 0 --max-conn "$max_conn" "$@" >>"$blog" 2>&1 &
	pid_of[$n]=$!
	for _ in $(seq 50); do
		[ "$(grep -c "^stats broker" "$blog")" -gt "$lines" ] && { up=1; break; }
		kill -0 "${pid_of[$n]}" 2>/dev/null || break
		sleep 0.2
	done
	[ $up = 1 ] && return 0
	say "urMQTT ($n) did not start:"; tail -n 5 "$blog"
	return 1
}
# stop_one NAME: stops that broker's process only.
stop_one() {
	local p=${pid_of[$1]:-}
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	unset "pid_of[$1]"
}
start_brokers() {
	brokers=()
	start_urmqtt urmqtt && brokers+=(urmqtt)
	# Mosquitto on the namespace's loopback
	blog=$out/mosquitto.log
	ip netns exec "$ns" taskset -c "$bcpu" "$mosq" -c "$out/mosquitto.conf" >>"$blog" 2>&1 &
	pid_of[mosquitto]=$!
	local up=0
	for _ in $(seq 50); do
		in_ns bash -c 'exec 3<>/dev/tcp/127.0.0.1/8883' 2>/dev/null && { up=1; break; }
		kill -0 "${pid_of[mosquitto]}" 2>/dev/null || break
		sleep 0.2
	done
	if [ $up = 1 ]; then
		brokers+=(mosquitto)
		in_ns ss -ltn 'sport = :8883' | awk 'NR == 2 {print "bench: Mosquitto listen backlog " $3}'
	else
		say "Mosquitto did not start:"; tail -n 5 "$blog"
	fi
}
: >"$out/urmqtt.log"
: >"$out/mosquitto.log"
if want hs || want idle || want pubsub || want lat || want storm || want mqtt5; then
	start_brokers 0
	[ ${#brokers[@]} -gt 0 ] && measure
	stop_brokers
fi
# ---- durability: each broker alone, fresh state per run ----------------------------------------
# dstart NAME: start NAME on the broker core with an empty state (pid_of[NAME]); 0 when it serves.
# The disk group's variants keep their disk file between starts when dkeep=1, on a disk of
# dmib MiB, with the extra options dargs.
dmib=1024
dkeep=0
dargs=()
dstart() {
	local b=$1 log=$out/$1.log up=0
	case $b in
	urmqtt-disk | urmqtt-mem | urmqtt-tlog | urmqtt-notlog | urmqtt-backup | urmqtt-nobackup | urmqtt-scrub | urmqtt-boot)
		local disk=()
		[ "$dkeep" = 1 ] || rm -f "$out/durable-disk.img"
		[ "$b" != urmqtt-mem ] && disk=(--disk "$out/durable-disk.img" --disk-mib "$dmib")
		[ "$b" = urmqtt-notlog ] && disk+=(--no-telemetry-log)
		disk+=("${dargs[@]}")
		local n0
		n0=$(grep -c '^stats broker' "$log" 2>/dev/null || echo 0)
		ip netns exec "$ns" taskset -c "$bcpu" "$broker" --tap "$tap" --ip "$our_ip/24" --broker \
			--broker-stats-ms 1000 --stats-ms 0 --max-conn "$max_conn" "${disk[@]}" >>"$log" 2>&1 &
		pid_of[$b]=$!
		for _ in $(seq 100); do
			[ "$(grep -c '^stats broker' "$log")" -gt "$n0" ] && { up=1; break; }
			kill -0 "${pid_of[$b]}" 2>/dev/null || break
			sleep 0.2
		done ;;
	mosquitto-persist | mosquitto-mem)
		local conf=$out/$b.conf
		rm -rf "$out/mosq-db"
		mkdir -p "$out/mosq-db"
		if [ "$b" = mosquitto-persist ]; then
			sed -e 's|^persistence false|persistence true|' "$out/mosquitto.conf" >"$conf"
			echo "persistence_location $(realpath "$out/mosq-db")/" >>"$conf"
		else
			cp "$out/mosquitto.conf" "$conf"
		fi
		ip netns exec "$ns" taskset -c "$bcpu" "$mosq" -c "$conf" >>"$log" 2>&1 &
		pid_of[$b]=$!
		for _ in $(seq 50); do
			in_ns bash -c 'exec 3<>/dev/tcp/127.0.0.1/8883' 2>/dev/null && { up=1; break; }
			kill -0 "${pid_of[$b]}" 2>/dev/null || break
			sleep 0.2
		done ;;
	esac
	[ $up = 1 ] || { say "$b did not start"; tail -n 5 "$log"; }
	[ $up = 1 ]
}
dstop() { # NAME
	local p=${pid_of[$1]:-}
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	unset "pid_of[$1]"
}
# store_field FIELD: the newest storage line's field of the current urMQTT log (tlog_field:
# of its telemetry line)
store_field() { grep '^stats store state=' "$blog" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }
tlog_field() { grep '^stats store telemetry ' "$blog" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# dsize NAME: bytes of NAME's stored state now (urMQTT: database pages from a fresh storage
# line; Mosquitto: mosquitto.db after SIGUSR1 made it write it)
dsize() {
	if [ "$1" = urmqtt-disk ]; then
		sleep 1.5
		echo $(($(store_field db_kb) * 1024))
	else
		local f=$out/mosq-db/mosquitto.db m0
		m0=$(stat -c %Y.%s "$f" 2>/dev/null || echo none)
		kill -USR1 "${pid_of[$1]}" 2>/dev/null
		for _ in $(seq 50); do [ "$(stat -c %Y.%s "$f" 2>/dev/null || echo none)" != "$m0" ] && break; sleep 0.1; done
		sleep 0.5
		stat -c %s "$f" 2>/dev/null || echo 0
	fi
}
durable_group() {
	local b r
	say "durability: QoS 1 flat out, 64 B, $pubs publishers -> 1 persistent subscriber; each broker alone, fresh state"
	for r in $(seq "$runs"); do
		for b in urmqtt-disk urmqtt-mem mosquitto-persist mosquitto-mem; do
			dstart "$b" || continue
			use "$b"
			lg d_q1 pubsub --pubs "$pubs" --subs 1 --qos 1 --payload 64 --k "$k" --seconds "$secs" --persistent
			if [ "$b" = urmqtt-disk ]; then
				sleep 1.5 # a storage line after the run
				local f st="" msgs
				msgs=$(grep '^stats dp' "$blog" | tail -n 1 | tr ' ' '\n' | sed -n 's/^msgs_in=//p')
				for f in commits records p50_us p99_us max_us batch_max; do st+="\"$f\":$(store_field $f),"; done
				echo "{\"broker\":\"$b\",\"figure\":\"d_store\",${st}\"msgs_in\":${msgs:-0}}" >>"$raw"
				echo "    storage: ${st%,} msgs_in=$msgs"
			fi
			dstop "$b"
		done
	done
	say "durability: bytes on disk per queued message ($durable_queued QoS 1 messages, 64 B, into an offline persistent session)"
	for b in urmqtt-disk mosquitto-persist; do
		dstart "$b" || continue
		use "$b"
		local s0 s1
		lg d_queue_1 queue --subs 1 --pubs 1 --n 1 --persistent --window 16 # the session and its subscription
		s0=$(dsize "$b")
		lg d_queue queue --subs 1 --pubs "$pubs" --n "$durable_queued" --persistent --window 16
		s1=$(dsize "$b")
		echo "{\"broker\":\"$b\",\"figure\":\"d_bytes\",\"queued\":$durable_queued,\"bytes0\":$s0,\"bytes1\":$s1}" >>"$raw"
		echo "    $b: stored state $s0 -> $s1 bytes for $durable_queued queued messages"
		dstop "$b"
	done
}
telemetry_group() {
	local b r
	say "telemetry log: QoS 1 telemetry flat out, $pubs publishers (64-byte payloads), the log on and off; fresh disks"
	for r in $(seq "$runs"); do
		for b in urmqtt-tlog urmqtt-notlog; do
			dstart "$b" || continue
			use "$b"
			lg t_q1 telemetry --pubs "$pubs" --n 100000000 --window 64 --seconds "$secs" --payload 64
			if [ "$b" = urmqtt-tlog ]; then
				sleep 1.5 # a storage line after the run
				local f st=""
				for f in appended written bytes write_outs flush_p50_us flush_p99_us; do st+="\"$f\":$(tlog_field $f),"; done
				echo "{\"broker\":\"$b\",\"figure\":\"t_store\",${st%,}}" >>"$raw"
				echo "    telemetry: ${st%,}"
			fi
			dstop "$b"
		done
	done
}
# fill_db: ~15 MB of retained messages into the current broker (4 device identities at once,
# each under mqtt.rate_bytes_per_s); 0 when all were acknowledged
fill_db() {
	local i ok=0 pids=()
	for i in 1 2 3 4; do
		in_ns timeout 120 python3 tests/smoke/lib/mqtt-client.py "$our_ip" 8883 "$certs" retained-fill \
			"dev-$i" "devices/dev-$i/fill" 64 60000 >"$out/fill-$i.txt" 2>&1 &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	for i in 1 2 3 4; do grep -q "acked 64 of 64 .*complete" "$out/fill-$i.txt" && ok=$((ok + 1)); done
	[ $ok = 4 ] || say "fill: only $ok of 4 publishers were acknowledged throughout: $(cat "$out"/fill-*.txt | tr '\n' ' ')"
	[ $ok = 4 ]
}
# scrub_rate NAME SECONDS: bytes/s the scrubber read over SECONDS (two scrub lines apart)
scrub_bytes() { grep '^stats store scrub ' "$blog" | tail -n 1 | tr ' ' '\n' | sed -n 's/^bytes=//p'; }
disk_group() {
	local b r n0 line
	say "disk lifecycle: ~15 MB database; QoS 1 flat out, $pubs publishers -> 1 persistent subscriber, with a backup every 2 s and without (alternating)"
	for r in $(seq "$runs"); do
		for b in urmqtt-backup urmqtt-nobackup; do
			dmib=1024 dkeep=0 dargs=(--scrub-kb-s 0)
			[ "$b" = urmqtt-backup ] && dargs+=(--backup-s 1,2)
			dstart "$b" || continue
			use "$b"
			fill_db || { dstop "$b"; continue; }
			n0=$(grep -c "store: backup: slot" "$blog")
			lg k_q1 pubsub --pubs "$pubs" --subs 1 --qos 1 --payload 64 --k "$k" --seconds "$secs" --persistent
			sleep 1.5 # a storage line after the run
			local f st=""
			for f in commits p50_us p99_us max_us db_kb; do st+="\"$f\":$(store_field $f),"; done
			echo "{\"broker\":\"$b\",\"figure\":\"k_store\",${st%,}}" >>"$raw"
			echo "    storage: ${st%,}"
			# the backups that completed during this run: pages, ms, longest step
			grep "store: backup: slot" "$blog" | tail -n +$((n0 + 1)) |
				sed -E 's/.*\(([0-9]+) pages in ([0-9]+) ms, longest step ([0-9]+) us\).*/\1 \2 \3/' |
				while read -r pages ms step; do
					echo "{\"broker\":\"$b\",\"figure\":\"k_backup\",\"pages\":$pages,\"ms\":$ms,\"step_us\":$step}" >>"$raw"
				done
			echo "    backups completed: $(($(grep -c "store: backup: slot" "$blog") - n0))"
			dstop "$b"
		done
	done
	say "disk lifecycle: the scrubber over the ~15 MB database and its backup, at a 4 MiB/s budget and at the largest, 1 GiB/s"
	for r in $(seq "$runs"); do
		for kb in 4096 1048576; do
			dmib=1024 dkeep=0 dargs=(--scrub-kb-s "$kb" --backup-s 1,3600)
			dstart urmqtt-scrub || continue
			use urmqtt-scrub
			fill_db || { dstop urmqtt-scrub; continue; }
			sleep 3 # the backup of the filled database (1 s after start, then hourly)
			local s0 s1 t0 t1
			s0=$(scrub_bytes); t0=$(date +%s.%N)
			sleep 5
			s1=$(scrub_bytes); t1=$(date +%s.%N)
			echo "{\"broker\":\"urmqtt-scrub\",\"figure\":\"k_scrub\",\"budget_kb\":$kb,\"bytes\":$((${s1:-0} - ${s0:-0})),\"secs\":$(awk "BEGIN{print $t1 - $t0}")}" >>"$raw"
			echo "    scrub budget $kb KiB/s: $((${s1:-0} - ${s0:-0})) bytes in 5 s"
			dstop urmqtt-scrub
		done
	done
	say "disk lifecycle: bring-up on a 64 MiB and a 16 GiB sparse disk file (format, then reopen)"
	for r in $(seq "$runs"); do
		for mib in 64 16384; do
			rm -f "$out/durable-disk.img"
			for phase in format reopen; do
				dmib=$mib dkeep=1 dargs=()
				n0=$(grep -c "store: bring-up: " "$out/urmqtt-boot.log" 2>/dev/null || echo 0)
				dstart urmqtt-boot || continue
				line=$(grep "store: bring-up: " "$out/urmqtt-boot.log" | tail -n +$((n0 + 1)) | head -n 1)
				dstop urmqtt-boot
				local ms kib
				ms=$(sed -E 's/.*bring-up: ([0-9]+) ms.*/\1/' <<<"$line")
				kib=$(sed -E 's/.*read ([0-9]+) KiB.*/\1/' <<<"$line")
				[ -n "$ms" ] && echo "{\"broker\":\"urmqtt-boot\",\"figure\":\"k_boot\",\"mib\":$mib,\"phase\":\"$phase\",\"ms\":$ms,\"read_kib\":$kib}" >>"$raw"
				echo "    $mib MiB $phase: ${line#*bring-up: }"
			done
		done
	done
	rm -f "$out/durable-disk.img"
}
if want durable; then
	durable_group
fi
if want disk; then
	disk_group
fi
if want telemetry; then
	telemetry_group
fi
if want boot; then
	say "Mosquitto: process start to accepting on 8883 (a Linux process, no OS boot), $boots times"
	in_ns timeout 120 taskset -c "$bcpu" python3 tools/bench/boot_size.py start "$boots" -- \
		"$mosq" -c "$out/mosquitto.conf" >>"$raw" 2>>"$out/boot.log"
fi
ip netns del "$ns" 2>/dev/null

# ---- virtual machines: the urMQTT image vs Mosquitto in a Linux guest, same QEMU settings ----
# vm_net NAME: NAME's namespace with its TAP (host side 10.79.0.1 and the extra sources);
# the trap removes it
vm_net() {
	local n=${ns_of[$1]} t=${tap_of[$1]} a
	ip netns add "$n" || return 1
	vm_nss+=("$n")
	ip netns exec "$n" ip link set lo up &&
		ip netns exec "$n" ip tuntap add dev "$t" mode tap ${vm_queues_of[$1]:+multi_queue} || return 1
	for a in ${srcs_tap//,/ }; do ip netns exec "$n" ip addr add "$a/24" dev "$t" || return 1; done
	ip netns exec "$n" ip link set "$t" up || return 1
	ip netns exec "$n" sysctl -q -w net.ipv4.ip_local_port_range="10000 65000" >/dev/null 2>&1
	ip netns exec "$n" sysctl -q -w net.ipv4.tcp_tw_reuse=1 >/dev/null 2>&1
	return 0
}
# accepting NS: a TCP connection to the guest's 8883 from NS succeeds within a second
accepting() { ip netns exec "$1" timeout 1 bash -c "exec 3<>/dev/tcp/$our_ip/8883" 2>/dev/null; }
# vm_start NAME LOG: boots NAME's VM on the broker core (pid_of[NAME]); appends its QEMU
# start -> accepting time to raw.jsonl as figure FIGURE (third argument, optional)
vm_start() {
	local b=$1 log=$2 fig=${3:-} t0 ms="" p
	local n=${ns_of[$1]} t=${tap_of[$1]} q=${vm_queues_of[$1]:-}
	if [ "${b%%:*}" = linux-guest ]; then # NAME or NAME:SMP (group cores)
		# boot.sh: the same QEMU settings, waits (bounded) for 8883, prints "<pid> <ms>"
		local r
		r=$(LINUX_GUEST_STATS=1 LINUX_GUEST_QUEUES=$q timeout 300 taskset -c "$bcpu" tools/bench/linux-guest/boot.sh \
			"$lg_dir" "$certs" "$t" "$n" "$vm_smp" "$vm_mem" "$log") || return 1
		pid_of[$b]=${r%% *}
		ms=${r##* }
	else
		t0=$(date +%s%N)
		ip netns exec "$n" taskset -c "$bcpu" qemu-system-x86_64 -M q35 "${vm_accel[@]}" \
			-name urmqtt,debug-threads=on -smp "$vm_smp" -m "$vm_mem" -nographic -no-reboot -nodefaults -serial stdio \
			-netdev "tap,id=n0,ifname=$t,script=no,downscript=no${q:+,queues=$q}" \
			-device "virtio-net-pci,netdev=n0,romfile=${q:+,mq=on,vectors=$((2 * q + 2))}" -kernel "$vm_img" \
			-append "ip=$our_ip/24 gw=$lin_ip broker_report_ms=1000" </dev/null >"$log" 2>&1 &
		p=$!
		pid_of[$b]=$p
		# the address and the listener on the console first (a probe before the guest
		# answers ARP waits for the next ARP retry), then TCP probes; at most 120 s
		local up=0 seen=0
		for _ in $(seq 2400); do
			kill -0 "$p" 2>/dev/null || break
			if [ $seen = 0 ]; then
				grep -aq 'static address: ' "$log" && grep -aq 'listening on TCP 8883' "$log" &&
					seen=1
				[ $seen = 1 ] || { sleep 0.05; continue; }
			fi
			accepting "$n" && { up=1; break; }
			sleep 0.05
		done
		[ $up = 1 ] || { say "urMQTT image did not accept on $our_ip:8883 (see $log)"; vm_stop "$b"; return 1; }
		ms=$((($(date +%s%N) - t0) / 1000000))
	fi
	[ -n "$fig" ] && echo "{\"broker\":\"$b\",\"figure\":\"$fig\",\"ms\":$ms,\"accel\":\"$vm_acc\"}" >>"$raw"
	say "[$b] QEMU start -> accepting on $our_ip:8883: $ms ms"
	return 0
}
vm_stop() { # NAME: stops that VM only (QEMU exits on TERM)
	local p=${pid_of[$1]:-}
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	unset "pid_of[$1]"
}
# the guest's last "lg-stats" value KEY (kB), 0 when there is none
lg_stat() {
	grep -a '^lg-stats' "$out/linux-guest.log" | tail -n 1 | tr -d '\r' | tr ' ' '\n' |
		sed -n "s/^$1=//p" | grep . || echo 0
}
# the urMQTT image's memory from its last report (every core's last "broker: core N: conns="
# line): connections summed over the cores, the machine's heap above its baseline
# (above_req), the fixed table bytes per connection; as JSON members
vm_kmem() {
	grep -a ' broker: core [0-9]*: conns=' "$blog" | tail -n $((vm_smp * 4)) | tr -d '\r' |
		python3 -c 'import sys,re,json
last={}
for l in sys.stdin:
    m=re.search(r"core (\d+): conns=(\d+) .*slot=(\d+) above_req=(\d+) above_blk=(\d+)",l)
    if m: last[m.group(1)]=[int(x) for x in m.groups()[1:]]
c=sum(v[0] for v in last.values())
a=max((v[2] for v in last.values()),default=0)
b=max((v[3] for v in last.values()),default=0)
f=max((v[1] for v in last.values()),default=0)
# the tables of a connection slot + the heap blocks above the baseline per connection
d={"conns":c,"above_req":a,"above_blk":b,"slot":f,"own_bytes_per_conn":(b//c+f) if c else None}
print(json.dumps(d)[1:-1])'
}
# vm_each TAG CMD ARGS...: like each, for the VMs; a VM found stopped (its QEMU gone or its
# kernel's panic line on the console) is counted (figure vm_restart, before TAG) and booted
# again, its old console kept as NAME-crash-N.log, so one crash costs one figure's run only
vm_dead() { # NAME: its QEMU is gone or its kernel panicked
	! kill -0 "${pid_of[$1]:-0}" 2>/dev/null || grep -aq -e '^\*\*\* PANIC' -e 'Kernel panic' "$out/$1.log"
}
vm_each() {
	local b tag=$1 c
	shift
	for b in "${brokers[@]}"; do
		if vm_dead "$b"; then
			vm_crashes=$((vm_crashes + 1))
			c=$out/$b-crash-$vm_crashes.log
			say "[$b] stopped before $tag (console: $c); booting it again"
			grep -a -e PANIC -e 'Kernel panic' "$out/$b.log" | head -n 2 | sed 's/^/    /'
			echo "{\"broker\":\"$b\",\"figure\":\"vm_restart\",\"before\":\"$tag\"}" >>"$raw"
			vm_stop "$b"
			cp "$out/$b.log" "$c"
			vm_start "$b" "$out/$b.log" || { say "[$b] did not boot again"; continue; }
		fi
		use "$b"
		"$@"
	done
}
vm_crashes=0
vm_idle_run() { # N: N idle connections (one QoS 1 subscription each); the VM's memory at N
	local n=$1 ready=$out/ready-$name-$1 hj=$out/hold-$name-$1.json
	local rss0=0 used0=0 rss1=0 used1=0 km="" held connect_s
	say "[$name] $n idle connections, one QoS 1 subscription each ($vm_hold_k in flight while opening)"
	rm -f "$ready"
	if [ "$name" = linux-guest ]; then rss0=$(lg_stat mosquitto_rss_kb); used0=$(lg_stat guest_used_kb); fi
	timeout 600 ip netns exec "$bns" taskset -c "$lcpu" "$loadgen" hold --host "$host" --src "$srcs" \
		--ca "$certs/ca.crt" --devdir "$devcerts" --n "$n" --k "$vm_hold_k" --seconds 5 \
		--ready-file "$ready" >"$hj" 2>>"$out/loadgen-$name.log" &
	local hpid=$!
	for _ in $(seq 5400); do
		[ -f "$ready" ] && break
		kill -0 $hpid 2>/dev/null || break
		vm_dead "$name" && { say "[$name] the VM stopped while opening"; kill $hpid 2>/dev/null; break; }
		sleep 0.1
	done
	sleep 2.5 # a report line (every second) with every connection open
	if [ "$name" = linux-guest ]; then
		rss1=$(lg_stat mosquitto_rss_kb); used1=$(lg_stat guest_used_kb)
	else
		km=$(vm_kmem)
	fi
	wait $hpid
	held=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("held",0))' "$hj" 2>/dev/null || echo 0)
	connect_s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("connect_s",0))' "$hj" 2>/dev/null || echo 0)
	echo "{\"broker\":\"$name\",\"figure\":\"vm_idle\",\"n\":$n,\"held\":${held:-0},\"connect_s\":${connect_s:-0},\"rss0_kb\":$rss0,\"rss1_kb\":$rss1,\"used0_kb\":$used0,\"used1_kb\":$used1${km:+,$km}}" >>"$raw"
	if [ "$name" = linux-guest ]; then
		echo "    held=$held in ${connect_s}s mosquitto_rss_delta_kb=$((rss1 - rss0)) guest_used_delta_kb=$((used1 - used0))"
	else
		echo "    held=$held in ${connect_s}s ${km:-no report line}"
	fi
	sleep 2 # the VM closes the held connections
}

if want vm; then
	vm_accel=("${accel[@]}") vm_acc=$accel_mode
	echo "{\"vm\":\"settings\",\"accel\":\"$vm_acc\",\"smp\":$vm_smp,\"mem\":\"$vm_mem\",\"rate\":$vm_rate,\"idle\":$vm_idle,\"boots\":$vm_boots}" >>"$raw"
	vms=()
	if ! command -v qemu-system-x86_64 >/dev/null; then
		say "virtual machines skipped: no qemu-system-x86_64"
	else
		if [ -f "$vm_img" ]; then vms+=(urmqtt-vm); else say "urMQTT image skipped: no $vm_img (make bench builds it)"; fi
		if [ -f "$lg_dir/vmlinux" ] && [ -f "$lg_dir/initrd.base" ]; then
			vms+=(linux-guest)
		else
			say "Linux+Mosquitto guest skipped: not built (tools/bench/linux-guest/build.sh $lg_dir)"
		fi
	fi
	brokers=()
	for b in "${vms[@]}"; do
		if ! vm_net "$b"; then say "[$b] could not create its namespace and TAP device"; continue; fi
		if vm_start "$b" "$out/$b.log"; then brokers+=("$b"); else say "[$b] did not start (see $out/$b.log)"; fi
	done
	if [ ${#brokers[@]} -gt 0 ]; then
		say "virtual machines (${vm_acc^^}, -smp $vm_smp -m $vm_mem, virtio-net over a TAP, on CPU $bcpu): ${brokers[*]}"
		say "[vm] full handshakes ($k in flight)"
		for r in $(seq "$runs"); do vm_each hs_full lg vm_hs_full handshake --k "$k" --seconds "$secs"; done
		say "[vm] resumed handshakes"
		for r in $(seq "$runs"); do vm_each hs_resumed lg vm_hs_resumed handshake --k "$k" --seconds "$secs" --resume; done
		vm_each idle vm_idle_run "$vm_idle"
		for q in 0 1; do
			say "[vm] QoS $q flat out, 64-byte payloads, $pubs publishers -> 1 subscriber"
			for r in $(seq "$runs"); do
				vm_each "q$q" lg "vm_q$q" pubsub --pubs "$pubs" --subs 1 --qos $q --payload 64 --k "$k" --seconds "$secs"
			done
		done
		say "[vm] latency at $vm_rate msgs/s, QoS 1"
		for r in $(seq "$runs"); do
			vm_each lat lg vm_lat pubsub --pubs "$pubs" --subs 1 --qos 1 --payload 64 --rate "$vm_rate" --k "$k" --seconds "$secs"
		done
		vm_each end true
		# QEMU start -> accepting, one VM at a time (nothing else on the broker core)
		vmb=("${brokers[@]}")
		for b in "${vmb[@]}"; do vm_stop "$b"; done
		say "[vm] QEMU start -> accepting TCP on 8883, $vm_boots boots each, one VM at a time"
		for r in $(seq "$vm_boots"); do
			for b in "${vmb[@]}"; do
				vm_start "$b" "$out/$b-boot.log" vm_boot || say "[$b] boot $r did not accept"
				vm_stop "$b"
			done
		done
	fi
	for b in "${!pid_of[@]}"; do vm_stop "$b"; done
	vm_net_del
fi

# ---- scale (group scale, never in the default run: tools/bench/scale.sh) ------------------------
if want scale; then
	# shellcheck source=tools/bench/scale.sh
	. "$(dirname "$0")/scale.sh"
	scale_group
fi

# ---- cores: the same image and guest with 1, then 2 (BENCH_CORES_SMP) vCPUs, in one run ----
# QoS 0, 1 and 2 flat out ($pubs publishers -> 1 subscriber); after each urMQTT run its shard
# and routing lines (every core's last) go into raw.jsonl with the figure, so the table shows
# what crossed the cores.
# Host CPUs (ADR "a VM with N vCPUs gets N host CPUs"): every VM of the group, whatever its
# vCPU count, gets the same CPU set, so the ratios stay side by side. When the host has a CPU
# for each vCPU of the largest VM plus one, the VMs get CPUs 1..S and the load generator CPU 0
# alone; otherwise (this 2-CPU host: S = 2) the VMs and the load generator share every host
# CPU. One pinned host CPU would leave a 2-vCPU guest's two vCPU threads (MTTCG) sharing one
# CPU, which can never exceed one vCPU's rate. BENCH_CORES_VM_CPUS and BENCH_CORES_LG_CPUS
# (taskset lists) override.
if want cores; then
	vm_accel=("${accel[@]}") vm_acc=$accel_mode
	cores_smax=1
	for smp in ${BENCH_CORES_SMP:-1 2}; do [ "$smp" -gt "$cores_smax" ] && cores_smax=$smp; done
	if [ "$ncpu" -gt "$cores_smax" ]; then
		cores_vm_cpus=1-$cores_smax cores_lg_cpus=0
	else
		cores_vm_cpus=0-$((ncpu - 1)) cores_lg_cpus=0-$((ncpu - 1))
	fi
	cores_vm_cpus=${BENCH_CORES_VM_CPUS:-$cores_vm_cpus}
	cores_lg_cpus=${BENCH_CORES_LG_CPUS:-$cores_lg_cpus}
	# vm_start and lg pin to $bcpu and $lcpu: the group's sets for its runs only
	cores_bcpu_was=$bcpu cores_lcpu_was=$lcpu
	bcpu=$cores_vm_cpus lcpu=$cores_lg_cpus
	cvms=()
	command -v qemu-system-x86_64 >/dev/null && [ -f "$vm_img" ] && cvms+=(urmqtt-vm)
	command -v qemu-system-x86_64 >/dev/null && [ -f "$lg_dir/vmlinux" ] && [ -f "$lg_dir/initrd.base" ] &&
		cvms+=(linux-guest)
	[ ${#cvms[@]} -gt 0 ] || say "cores skipped: neither VM is available"
	# Every VM of every vCPU count is booted first (NAME:SMP, each in its own namespace; an
	# idle guest halts), then the runs of each figure alternate between them, the order
	# reversed every other run: on a shared, noisy host a load that comes and goes then
	# lands on both vCPU counts, as it does on both brokers in the other groups.
	# thread_ticks PID: "NAME TICKS" per thread of PID (the urMQTT VM's vCPU threads are
	# named "CPU N/TCG"); thread_delta BEFORE AFTER: NAME=ticks used in between, per name
	thread_ticks() {
		local t
		for t in /proc/"$1"/task/*; do
			echo "$(tr ' /' '__' <"$t/comm" 2>/dev/null) $(awk '{print $14 + $15}' "$t/stat" 2>/dev/null)"
		done 2>/dev/null
	}
	thread_delta() {
		awk 'NR == FNR {b[$1] += $2; next} {a[$1] += $2} END {for (n in a) if (a[n] - b[n] > 0) printf "%s=%d ", n, a[n] - b[n]}' \
			<(echo "$1") <(echo "$2") | sed 's/ $//'
	}
	cb=()
	for smp in ${BENCH_CORES_SMP:-1 2}; do
		[ ${#cvms[@]} -gt 0 ] || break
		echo "{\"cores\":\"settings\",\"smp\":$smp,\"accel\":\"$vm_acc\",\"pubs\":$pubs,\"vm_cpus\":\"$bcpu\",\"lg_cpus\":\"$lcpu\",\"alternate\":true,\"queues\":$([ "$smp" -gt 1 ] && [ "${BENCH_CORES_MQ:-1}" != 0 ] && echo "$smp" || echo 1)}" >>"$raw"
		for b in "${cvms[@]}"; do
			ns_of[$b:$smp]=${ns_of[$b]}-$smp tap_of[$b:$smp]=${tap_of[$b]}
			# a queue pair per vCPU above one (a multi-queue TAP, virtio-net mq=on), as a
			# cloud VM gets; BENCH_CORES_MQ=0: one queue pair whatever the vCPU count
			[ "$smp" -gt 1 ] && [ "${BENCH_CORES_MQ:-1}" != 0 ] && vm_queues_of[$b:$smp]=$smp
			vm_net "$b:$smp" || { say "[$b] could not create its namespace and TAP device"; continue; }
			vm_smp=$smp
			if vm_start "$b:$smp" "$out/$b-smp$smp.log"; then cb+=("$b:$smp"); else say "[$b] -smp $smp did not start"; fi
		done
	done
	[ ${#cb[@]} -gt 0 ] && say "cores: ${cb[*]} (${vm_acc^^}, VMs on host CPUs $bcpu, load generator on $lcpu)"
	for q in 0 1 2; do
		[ ${#cb[@]} -gt 0 ] || break
		say "[cores] QoS $q flat out, $pubs publishers -> 1 subscriber, the vCPU counts alternating"
		for r in $(seq "$runs"); do
			order=("${cb[@]}")
			if [ $((r % 2)) = 0 ]; then
				order=()
				for ((i = ${#cb[@]} - 1; i >= 0; i--)); do order+=("${cb[$i]}"); done
			fi
			for key in "${order[@]}"; do
				b=${key%%:*} smp=${key##*:}
				use "$b"
				bns=${ns_of[$key]} bpid=${pid_of[$key]:-}
				echo -n "    -smp $smp "
				th0=$(thread_ticks "$bpid")
				lg "cores_q${q}_smp$smp" pubsub --pubs "$pubs" --subs 1 --qos $q --payload 64 --k "$k" --seconds "$secs"
				if [ "$b" = urmqtt-vm ]; then
					# CPU each QEMU thread used during the run (ticks of 1/$hz s): how busy each
					# vCPU was, and the device thread
					th=$(thread_delta "$th0" "$(thread_ticks "$bpid")")
					echo "      QEMU threads (ticks of 1/$hz s): $th"
					echo "{\"broker\":\"$b\",\"figure\":\"cores_threads\",\"smp\":$smp,\"qos\":$q,\"hz\":$hz,\"threads\":\"$th\"}" >>"$raw"
					sleep 1.2 # the next report lines
					lines=$(tr -d '\r' <"$out/$b-smp$smp.log" | grep -a ' broker: core [0-9]*: \(shard\|routing\) ' |
						tail -n $((2 * smp)) | sed 's/^.*broker: //' | tr '\n' ';' | tr -d '"\\')
					echo "{\"broker\":\"$b\",\"figure\":\"cores_shards\",\"smp\":$smp,\"qos\":$q,\"lines\":\"$lines\"}" >>"$raw"
				fi
			done
		done
	done
	for key in "${cb[@]}"; do vm_stop "$key"; done
	vm_net_del
	bcpu=$cores_bcpu_was lcpu=$cores_lcpu_was
fi

# ---- boot time and image size --------------------------------------------------------------
if want boot; then
	if [ -n "$image" ] && [ -f "$image" ] && command -v qemu-system-x86_64 >/dev/null; then
		say "boot time: $image under QEMU (${accel_mode^^}), $boots boots"
		timeout 600 taskset -c "$bcpu" python3 tools/bench/boot_size.py boot "$image" "$boots" >>"$raw" 2>>"$out/boot.log"
		tail -n "$boots" "$out/boot.log" | sed 's/^/    /'
		python3 tools/bench/boot_size.py size "$image" "$mosq" >>"$raw" 2>>"$out/boot.log"
	else
		say "boot time and image size skipped: no image (${image:-not given}) or no qemu-system-x86_64"
	fi
fi

# ---- crypto floor (same machine, same core) ------------------------------------------------
want hs && say "crypto floor: openssl speed ecdhx25519 ecdsap256 (1 s each)"
want hs && timeout 60 taskset -c "$bcpu" openssl speed -seconds 1 ecdhx25519 ecdsap256 >"$out/openssl-speed.txt" 2>/dev/null

# ---- in-guest data-plane benchmark (tools/dpbench, scenario dpbench) ------------------------
# The same portable scenario (tools/dpbench/guest.c) in the bench tree's x86_64 image (the
# accelerator chosen above) and its aarch64 image (qemu-system-aarch64 -M virt -cpu max,
# always TCG on this host), with the same workers, memory and seconds.
dpb_img=$tree/x86_64/urmqtt.elf
dpb_a64_img=$tree/aarch64/urmqtt.img
dpb_secs=${BENCH_DPB_SECONDS:-10}
dpb_list="1 2"
[ "$ncpu" -ge 4 ] && dpb_list="1 2 4"
# dpb_run ARCH WORKERS: one boot; its result line as a row of $raw ("guest": x86_64,
# "guest-aarch64"), or a line saying it did not report.
dpb_run() {
	local arch=$1 w=$2 log tag acc machine line hps fl
	if [ "$arch" = aarch64 ]; then
		log=$out/dpbench-aarch64-$w.log tag=guest-aarch64 acc=tcg
		machine=(qemu-system-aarch64 -M virt,gic-version=3 -accel tcg,thread=multi -cpu max -kernel "$dpb_a64_img")
	else
		log=$out/dpbench-$w.log tag=guest acc=$accel_mode
		machine=(qemu-system-x86_64 -M q35 "${accel[@]}" -device isa-debug-exit,iobase=0xf4,iosize=0x04
			-kernel "$dpb_img")
	fi
	say "dp-bench in the $arch guest: $w worker core(s), ${dpb_secs}s, no network ($acc)"
	timeout $((dpb_secs * 3 + 120)) "${machine[@]}" -smp "$w" -m 512M -nographic -no-reboot -nodefaults \
		-serial stdio -append "test=dpbench dpbench_s=$dpb_secs" >"$log" 2>&1
	line=$(grep -ao 'dpbench: workers=[0-9]* handshakes_per_s=[0-9.]* failures=[0-9]*' "$log" | tail -1)
	if [ -n "$line" ]; then
		hps=${line#*handshakes_per_s=}; hps=${hps%% *}
		fl=${line##*failures=}
		echo "{\"dpbench\":\"$tag\",\"workers\":$w,\"handshakes_per_s\":$hps,\"failures\":$fl}" >>"$raw"
		grep -a 'dpbench core' "$log" | sed 's/^/    /'
	else
		say "dp-bench ($arch) with $w worker(s) did not report (see $log)"
	fi
}
if want dpbench; then
	if [ -f "$dpb_img" ] && command -v qemu-system-x86_64 >/dev/null; then
		for w in $dpb_list; do dpb_run x86_64 "$w"; done
	else
		say "dp-bench skipped: no bench image ($dpb_img) or no qemu-system-x86_64"
	fi
	if [ -f "$dpb_a64_img" ] && command -v qemu-system-aarch64 >/dev/null; then
		for w in $dpb_list; do dpb_run aarch64 "$w"; done
	else
		say "dp-bench (aarch64) skipped: no bench image ($dpb_a64_img) or no qemu-system-aarch64"
	fi
fi

# ---- in-process microbenchmarks (optional binaries of tools/bench/micro_*.c) ------------
for m in "$tree"/hostrel/tools/bench/micro_*; do
	want micro || break
	[ -x "$m" ] || continue
	margs=()
	# micro_tls: the dev certificates (server chain, client dev-1) for its OpenSSL client
	[ "$(basename "$m")" = micro_tls ] && margs=("$certs")
	[ "$(basename "$m")" = micro_dpbench ] && margs=("$certs")
	say "micro: $(basename "$m")"
	timeout 300 taskset -c "$bcpu" "$m" "${margs[@]}" >>"$raw" 2>>"$out/micro.log" || say "$(basename "$m") failed (see $out/micro.log)"
done

elapsed=$(($(date +%s) - t_start))
python3 tools/bench/report.py --raw "$raw" --out "$out" --speed "$out/openssl-speed.txt" \
	--kvm "$kvm" --cores "$ncpu" --runs "$runs" --seconds "$secs" --elapsed "$elapsed" \
	--idle "$idle_list" --rate "$rate" --k "$k" --pubs "$pubs" --plot "$have_plot" \
	--commit "$bench_commit" --date "$bench_date" --only "${BENCH_ONLY:-}"
# Last: every figure that moved beyond its noise band since the last record of docs/bench/history.csv
# on a machine of this signature (tools/bench/history.py; it prints, it never fails the bench).
echo
PYTHONDONTWRITEBYTECODE=1 python3 tools/bench/history.py check --results "$out/results.json" \
	--history docs/bench/history.csv || true
echo "bench: make bench-report draws $out/report.html; make bench-record adds this run to docs/bench/history.csv"
