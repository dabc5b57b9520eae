#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: urMQTT and Mosquitto side by side, same load generator, same certificates,
# same core budget (each broker pinned to one core, the load generator to the other), in
# one run. Never a pass/fail test: it measures and prints a table of both values and their
# ratio; results in OUT/results.json (+ PNG plots when gnuplot is installed).
#   urMQTT     TREE/hostrel/urmqtt --broker (hostrel: -O2, no sanitizers) on a TAP device
#              in a network namespace of its own (Linux side 10.79.0.1/24, extra source
#              addresses 10.79.0.3-5); no /dev/kvm here, so no urMQTT-under-KVM figures
#   Mosquitto  Debian's mosquitto in the same namespace on its loopback (127.0.0.1:8883),
#              TLS 1.3 only, require_certificate, use_identity_as_username, one listener,
#              the same CA and the same server certificate
# Figures (median of BENCH_RUNS runs, default 3): full and resumed handshakes/s and the
# broker's CPU per handshake; bytes per idle mTLS connection at each of BENCH_IDLE (1,000
# and 10,000) connections; QoS 0, 1 and 2 msgs/s (64-byte payloads, 4 publishers -> 1
# subscriber, flat out); latency p50/p99/p99.9 at BENCH_RATE (1,000) msgs/s QoS 1 and QoS 2;
# a connection storm (BENCH_STORM_DEV devices, at most BENCH_STORM_RATE new mTLS connections
# per second, far beyond the 32 handshakes in flight urMQTT admits) while the established
# clients publish at BENCH_RATE: their msgs/s and latency before/during/after, the storm's
# outcome, SYNs refused or dropped by each broker, the broker's memory through it; boot
# time of the x86_64 image (QEMU, TCG here) and image size against Mosquitto's binary and
# shared libraries; the crypto floor from `openssl speed`; the in-process microbenchmarks
# (micro_mqtt, micro_tcp, micro_tls). Every wait is bounded; the namespace and every
# process started here are removed on exit (trap), also after a failure or Ctrl-C.
# Both brokers run at once on the broker core (one idle while the other is measured) and
# their runs of every figure alternate (urMQTT, Mosquitto, urMQTT, ...), so on a shared,
# noisy machine both see the same background load; each figure is the median of its runs.
# Usage: run.sh TREE OUT [IMAGE]   (TREE: the bench build tree; OUT: results directory;
#        IMAGE: the x86_64 urmqtt.elf for boot time and size, skipped when absent)
# BENCH_ONLY="hs idle pubsub lat storm boot dpbench micro" picks figure groups (default: all).
# dpbench: the in-guest data-plane benchmark (the bench tree's image, scenario dpbench)
# with 1 worker core, then 2 (and 4 when the host has 4 CPUs), BENCH_DPB_SECONDS each.
set -uo pipefail
tree=${1:?usage: run.sh TREE OUT}
out=${2:?usage: run.sh TREE OUT}
image=${3:-}
runs=${BENCH_RUNS:-3}
secs=${BENCH_SECONDS:-5}
idle_list=${BENCH_IDLE:-1000 10000}
idle_list=${idle_list//,/ }
rate=${BENCH_RATE:-1000}
only=" ${BENCH_ONLY:-hs idle pubsub lat storm boot dpbench micro} "
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

broker=$tree/hostrel/urmqtt
loadgen=$tree/hostrel/tools/loadgen
certs=$tree/dev/certs
devcerts=$out/certs
raw=$out/raw.jsonl
ns=urmqtt-bench-$$
tap=ubtap0
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
for n in $idle_list; do [ "$n" -gt "$idle_max" ] && idle_max=$n; done
n_certs=$((idle_max > pubs + storm_dev ? idle_max : pubs + storm_dev))
max_conn=$((n_certs + 64))
in_ns() { ip netns exec "$ns" "$@"; }

cleanup() {
	trap - EXIT INT TERM
	stop_brokers
	ip netns del "$ns" 2>/dev/null
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
	if [ "$1" = urmqtt ]; then host=$our_ip srcs=$srcs_tap; else host=127.0.0.1 srcs=$srcs_lo; fi
	blog=$out/$1.log
	bpid=${pid_of[$1]}
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
[ -x "$broker" ] || missing+=("$broker (make bench builds it)")
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
if [ -c /dev/kvm ] && [ -w /dev/kvm ]; then
	kvm="present (urMQTT-under-KVM runs are not part of this bench yet)"
else
	kvm="absent: no /dev/kvm on this machine; urMQTT-under-KVM figures are not taken, the hosted broker (same data plane as a Linux process on a TAP device) is measured instead"
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

cat >"$out/mosquitto.conf" <<EOF
# make bench: Mosquitto as a like-for-like fleet broker (generated by tools/bench/run.sh)
per_listener_settings false
persistence false
user root
log_dest stderr
log_type error
log_type warning
max_inflight_messages 64
max_queued_messages 1000
set_tcp_nodelay true
allow_anonymous true
listener 8883 127.0.0.1
cafile $(realpath "$certs/ca.crt")
certfile $(realpath "$certs/server.crt")
keyfile $(realpath "$certs/server.key")
tls_version tlsv1.3
require_certificate true
use_identity_as_username true
EOF

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
	j=$(timeout 300 ip netns exec "$ns" taskset -c "$lcpu" "$loadgen" "$mode" --host "$host" \
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
keys=["handshakes_per_s","held","msgs_per_s","lat_us_p50","lat_us_p99","failed","error"]
print("    %-9s" % sys.argv[1], " ".join("%s=%s"%(k,d[k]) for k in keys if k in d))' "$name"
}

idle() { # N: hold N idle connections, one QoS 1 subscription each; memory at N
	local n=$1 rss0 ready=$out/ready-$name-$1 hj=$out/hold-$name-$1.json
	say "[$name] $n idle connections, one QoS 1 subscription each ($hold_k in flight while opening)"
	rm -f "$ready"
	rss0=$(rss_kb "$bpid")
	timeout 400 ip netns exec "$ns" taskset -c "$lcpu" "$loadgen" hold --host "$host" --src "$srcs" \
		--ca "$certs/ca.crt" --devdir "$devcerts" --n "$n" --k "$hold_k" --seconds 4 \
		--ready-file "$ready" >"$hj" 2>>"$out/loadgen-$name.log" &
	local hpid=$! rss1=0 st=""
	for _ in $(seq 3000); do [ -f "$ready" ] && break; kill -0 $hpid 2>/dev/null || break; sleep 0.1; done
	sleep 2 # let a stats line pass and the broker settle
	rss1=$(rss_kb "$bpid")
	[ "$name" = urmqtt ] && st=$(grep '^stats broker' "$blog" | tail -n 1)
	wait $hpid
	local held connect_s
	held=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("held",0))' "$hj" 2>/dev/null || echo 0)
	connect_s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("connect_s",0))' "$hj" 2>/dev/null || echo 0)
	local own=null heap=null
	[ -n "$st" ] && own=$(echo "$st" | tr ' ' '\n' | sed -n 's/^bytes_per_conn=//p')
	[ -n "$st" ] && heap=$(echo "$st" | tr ' ' '\n' | sed -n 's/^heap_used=//p')
	echo "{\"broker\":\"$name\",\"figure\":\"idle\",\"n\":$n,\"held\":${held:-0},\"connect_s\":${connect_s:-0},\"rss0_kb\":$rss0,\"rss1_kb\":$rss1,\"own_bytes_per_conn\":${own:-null},\"heap_used\":${heap:-null}}" >>"$raw"
	echo "    held=$held in ${connect_s}s rss_delta_kb=$((rss1 - rss0)) own_bytes_per_conn=${own:-n/a}"
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
	( for _ in $(seq 600); do echo "$(rss_kb "$bpid")"; sleep 0.5; done ) >"$mon" &
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

measure() { # every figure, the brokers' runs alternating
	if want hs; then
		say "full handshakes ($k in flight)"
		for r in $(seq "$runs"); do each lg hs_full handshake --k "$k" --seconds "$secs"; done
		say "resumed handshakes"
		for r in $(seq "$runs"); do each lg hs_resumed handshake --k "$k" --seconds "$secs" --resume; done
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
}

# ---- both brokers, side by side on the broker core -------------------------------------------
start_brokers() {
	brokers=()
	# urMQTT (hosted, hostrel) on the TAP device
	blog=$out/urmqtt.log
	ip netns exec "$ns" taskset -c "$bcpu" "$broker" --tap "$tap" --ip "$our_ip/24" --broker \
		--broker-stats-ms 1000 --stats-ms 0 --max-conn "$max_conn" >>"$blog" 2>&1 &
	pid_of[urmqtt]=$!
	local up=0
	for _ in $(seq 50); do
		[ "$(grep -c "^stats broker" "$blog")" -gt "$1" ] && { up=1; break; }
		kill -0 "${pid_of[urmqtt]}" 2>/dev/null || break
		sleep 0.2
	done
	if [ $up = 1 ]; then brokers+=(urmqtt); else say "urMQTT did not start:"; tail -n 5 "$blog"; fi
	# Mosquitto on the namespace's loopback
	blog=$out/mosquitto.log
	ip netns exec "$ns" taskset -c "$bcpu" "$mosq" -c "$out/mosquitto.conf" >>"$blog" 2>&1 &
	pid_of[mosquitto]=$!
	up=0
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
start_brokers 0
[ ${#brokers[@]} -gt 0 ] && measure
stop_brokers
if want boot; then
	say "Mosquitto: process start to accepting on 8883 (a Linux process, no OS boot), $boots times"
	in_ns timeout 120 taskset -c "$bcpu" python3 tools/bench/boot_size.py start "$boots" -- \
		"$mosq" -c "$out/mosquitto.conf" >>"$raw" 2>>"$out/boot.log"
fi
ip netns del "$ns" 2>/dev/null

# ---- boot time and image size --------------------------------------------------------------
if want boot; then
	if [ -n "$image" ] && [ -f "$image" ] && command -v qemu-system-x86_64 >/dev/null; then
		say "boot time: $image under QEMU ($( [ -r /dev/kvm ] && echo KVM || echo TCG)), $boots boots"
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
dpb_img=$tree/x86_64/urmqtt.elf
dpb_secs=${BENCH_DPB_SECONDS:-10}
if want dpbench; then
	if [ -f "$dpb_img" ] && command -v qemu-system-x86_64 >/dev/null; then
		if [ -r /dev/kvm ] && (exec 3</dev/kvm) 2>/dev/null; then
			dpb_accel=(-enable-kvm -cpu host,-arch-capabilities)
		else
			dpb_accel=(-accel tcg,thread=multi -cpu max)
		fi
		dpb_list="1 2"
		[ "$ncpu" -ge 4 ] && dpb_list="1 2 4"
		for w in $dpb_list; do
			say "dp-bench in the guest: $w worker core(s), ${dpb_secs}s, no network ($(echo "${dpb_accel[0]}" | tr -d -))"
			log=$out/dpbench-$w.log
			timeout $((dpb_secs * 3 + 120)) qemu-system-x86_64 -M q35 "${dpb_accel[@]}" -smp "$w" -m 512M \
				-nographic -no-reboot -nodefaults -serial stdio \
				-device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel "$dpb_img" \
				-append "test=dpbench dpbench_s=$dpb_secs" >"$log" 2>&1
			line=$(grep -o 'dpbench: workers=[0-9]* handshakes_per_s=[0-9.]* failures=[0-9]*' "$log" | tail -1)
			if [ -n "$line" ]; then
				hps=${line#*handshakes_per_s=}; hps=${hps%% *}
				fl=${line##*failures=}
				echo "{\"dpbench\":\"guest\",\"workers\":$w,\"handshakes_per_s\":$hps,\"failures\":$fl}" >>"$raw"
				grep 'dpbench core' "$log" | sed 's/^/    /'
			else
				say "dp-bench with $w worker(s) did not report (see $log)"
			fi
		done
	else
		say "dp-bench skipped: no bench image ($dpb_img) or no qemu-system-x86_64"
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
	--idle "$idle_list" --rate "$rate" --k "$k" --pubs "$pubs" --plot "$have_plot"
