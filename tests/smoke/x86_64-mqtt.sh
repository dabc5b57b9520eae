#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The broker in the x86_64 kernel end to end with real clients: boots
# BUILD_DIR/x86_64/urmqtt.elf (the product boot, no test scenario) on QEMU q35 (KVM when
# /dev/kvm opens, TCG otherwise) with user-mode networking forwarding a free host port on
# 127.0.0.1 to the guest's 8883, the memory line every second (broker_report_ms=1000), and
# drives it from the host with mosquitto_sub/mosquitto_pub and the Python helper
# tests/smoke/lib/mqtt-client.py. Certificates from BUILD_DIR/dev/certs (the image embeds
# the same CA and server key). The server certificate names 127.0.0.1: no --insecure.
#   x86_64-mqtt/cmd-to-device     dev-1 on devices/dev-1/cmd/# gets a command from ops
#   x86_64-mqtt/telemetry-qos1    dev-1 publishes at QoS 1 (PUBACK); ops on
#                                 devices/+/telemetry receives it
#   x86_64-mqtt/qos2              QoS 2 publish (PUBREC/PUBCOMP) delivered at QoS 2
#   x86_64-mqtt/retained          a retained message reaches a late subscriber
#   x86_64-mqtt/will              SIGKILLed device client: its will is published
#   x86_64-mqtt/refuse-other-ca   certificate from another CA: handshake refused
#   x86_64-mqtt/refuse-revoked    revoked-1: refused
#   x86_64-mqtt/refuse-client-id  dev-1's certificate with client id dev-2: CONNACK 5
#   x86_64-mqtt/refuse-tls12      TLS 1.2 only client: refused
#   x86_64-mqtt/refuse-plain      plain MQTT to 8883: no CONNACK, connection ends
#   x86_64-mqtt/refuse-acl        dev-1 subscribing devices/dev-2/#: SUBACK 0x80; its
#                                 publish there is not routed
#   x86_64-mqtt/no-leak           after the refusals: 0 connections, the kernel's heap
#                                 above its baseline back to the figure before them
#   x86_64-mqtt/idle-N            N idle mTLS connections each with one QoS 1
#                                 subscription; bytes per connection from the kernel's line
#   x86_64-mqtt/idle-close        the N connections closed: 0 connections, heap as before
# Every wait is bounded; QEMU and every client die on exit. Whole run: ~1-3 min on TCG.
# Usage: x86_64-mqtt.sh BUILD_DIR   (X86_64_MQTT_IDLE=N changes the idle count, 1000)
set -uo pipefail
build=${1:-build}
img=$build/x86_64/urmqtt.elf
certs=$build/dev/certs
here=$(cd "$(dirname "$0")" && pwd)
helper=$here/lib/mqtt-client.py
n_idle=${X86_64_MQTT_IDLE:-1000}
# One descriptor per held connection plus the helper's own: raise the soft limit (the
# hard limit allows it as root; otherwise the idle scenario says what failed).
ulimit -n $((n_idle + 256)) 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# Under TCG a full handshake costs the guest about 0.1 s: budget 0.4 s each, at least 180 s.
idle_budget_s=$(( n_idle * 2 / 5 > 180 ? n_idle * 2 / 5 : 180 ))
py=/usr/bin/python3
logs=$build/test-logs/x86_64-mqtt
mkdir -p "$logs"
log=$logs/guest.log
tmp=$(mktemp -d /tmp/urmqtt-x86-mqtt.XXXXXX)
qpid=""
bg_pids=()
failed=0

pass() { echo "PASS x86_64-mqtt/$1${2:+ ($2)}"; }
fail() { echo "FAIL x86_64-mqtt/$1${2:+ ($2)}; see $log"; failed=1; }
say() { echo "x86_64-mqtt: $*"; }

cleanup() {
	trap - EXIT INT TERM
	for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
	if [ -n "$qpid" ]; then
		kill -TERM "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in qemu-system-x86_64 mosquitto_sub mosquitto_pub openssl timeout; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
"$py" -c 'import ssl' 2>/dev/null || { fail setup "python3 ssl missing"; exit 1; }
[ -f "$img" ] && [ -f "$certs/ca.crt" ] && [ -f "$certs/ca.key" ] ||
	{ fail setup "need $img and make certs"; exit 1; }
if [ -c /dev/kvm ] && [ -w /dev/kvm ] && (exec 3</dev/kvm) 2>/dev/null; then
	mode=kvm; accel=(-enable-kvm -cpu host,-arch-capabilities)
else
	mode=tcg; accel=(-accel tcg -cpu max)
fi
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
say "$mode, guest 8883 at 127.0.0.1:$port"

# ---- guest log helpers (CR stripped; the memory line is name=value)
glog() { tr -d '\r' <"$log"; }
rep_lines() { glog | grep -a " broker: core 0: conns="; }
# The newest memory line's field.
rep() { rep_lines | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# Wait (bounded, seconds) for a fresh memory line where field $1 equals $2.
wait_rep() {
	local want=$2 n i
	for ((i = 0; i < ${3:-15} * 5; i++)); do
		n=$(rep_lines | wc -l)
		sleep 0.2
		[ "$(rep_lines | wc -l)" -gt "$n" ] || continue
		[ "$(rep "$1")" = "$want" ] && return 0
	done
	return 1
}
wait_est() { wait_rep est "$1" 20 && sleep 1; } # TLS done; then give the SUBSCRIBE a moment

tls=(--cafile "$certs/ca.crt")
as() { echo --cert "$certs/$1.crt" --key "$certs/$1.key"; }
client() { MQTT_CLIENT_TIMEOUT=30 timeout 60 "$py" "$helper" 127.0.0.1 "$port" "$certs" "$@"; }
sub_bg() { # OUTFILE NAME ARGS...: a mosquitto_sub in the background (pid in sub_pid), bounded
	local out=$1 name=$2
	shift 2
	timeout 40 mosquitto_sub -h 127.0.0.1 -p "$port" "${tls[@]}" $(as "$name") -i "$name" -v \
		-C 1 -W 30 "$@" >"$out" 2>&1 &
	sub_pid=$!
	bg_pids+=($sub_pid)
}
pub() { # NAME ARGS...
	local name=$1
	shift
	timeout 40 mosquitto_pub -h 127.0.0.1 -p "$port" "${tls[@]}" $(as "$name") -i "$name" -d "$@" 2>&1
}

# ---- boot
timeout 600 qemu-system-x86_64 -M q35 "${accel[@]}" -m 256M -smp 2 -display none -no-reboot -nodefaults \
	-serial stdio -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" \
	-device virtio-net-pci,netdev=n0,romfile= -kernel "$img" -append "broker_report_ms=1000" \
	</dev/null >"$log" 2>&1 &
qpid=$!
up=0
for _ in $(seq 300); do
	if glog | grep -aq "listening on TCP 8883" && glog | grep -aq "DHCP lease: " && [ -n "$(rep conns)" ]; then
		up=1
		break
	fi
	kill -0 "$qpid" 2>/dev/null || break
	sleep 0.2
done
if [ $up = 0 ]; then
	fail boot "no listening broker with a DHCP lease within 60 s"
	tail -n 20 "$log"
	exit 1
fi
say "$(glog | grep -a "broker: MQTT over TLS" | sed 's/^.*broker: //')"

# ---- cmd-to-device
sub_bg "$tmp/cmd.out" dev-1 -t 'devices/dev-1/cmd/#' -q 1; p=$sub_pid
wait_est 1
pub ops -t devices/dev-1/cmd/reboot -m now -q 1 >"$tmp/cmd.pub"
wait "$p" 2>/dev/null
if grep -q "^devices/dev-1/cmd/reboot now$" "$tmp/cmd.out"; then pass cmd-to-device
else fail cmd-to-device "$(tr '\n' ' ' <"$tmp/cmd.out") / $(tr '\n' ' ' <"$tmp/cmd.pub")"; fi

# ---- telemetry-qos1
wait_rep conns 0 15
sub_bg "$tmp/tel.out" ops -t 'devices/+/telemetry' -q 1; p=$sub_pid
wait_est 1
pub dev-1 -t devices/dev-1/telemetry -m 't=21.5' -q 1 >"$tmp/tel.pub"
wait "$p" 2>/dev/null
if grep -q "received PUBACK" "$tmp/tel.pub" && grep -q "^devices/dev-1/telemetry t=21.5$" "$tmp/tel.out"; then
	pass telemetry-qos1
else fail telemetry-qos1 "$(tr '\n' ' ' <"$tmp/tel.pub") / $(tr '\n' ' ' <"$tmp/tel.out")"; fi

# ---- qos2
wait_rep conns 0 15
timeout 40 mosquitto_sub -h 127.0.0.1 -p "$port" "${tls[@]}" $(as ops) -i ops \
	-d -v -C 1 -W 30 -q 2 -t 'devices/+/telemetry' >"$tmp/q2.out" 2>&1 &
p=$!
bg_pids+=($p)
wait_est 1
pub dev-2 -t devices/dev-2/telemetry -m exactly-once -q 2 >"$tmp/q2.pub"
wait "$p" 2>/dev/null
if grep -q "received PUBREC" "$tmp/q2.pub" && grep -q "received PUBCOMP" "$tmp/q2.pub" &&
	grep -q "PUBLISH (d0, q2" "$tmp/q2.out" && grep -q "exactly-once" "$tmp/q2.out"; then
	pass qos2
else fail qos2 "$(tr '\n' ' ' <"$tmp/q2.pub") / $(tr '\n' ' ' <"$tmp/q2.out")"; fi

# ---- retained
pub dev-3 -t devices/dev-3/status -m online -r -q 1 >"$tmp/ret.pub"
wait_rep conns 0 15
sub_bg "$tmp/ret.out" ops -t devices/dev-3/status; p=$sub_pid
wait "$p" 2>/dev/null
if grep -q "^devices/dev-3/status online$" "$tmp/ret.out"; then pass retained
else fail retained "$(tr '\n' ' ' <"$tmp/ret.pub") / $(tr '\n' ' ' <"$tmp/ret.out")"; fi
pub dev-3 -t devices/dev-3/status -n -r -q 1 >/dev/null # cleared: the heap comparison below

# ---- will
wait_rep conns 0 15
sub_bg "$tmp/will.out" ops -t devices/dev-4/status -q 1; p=$sub_pid
wait_est 1
MQTT_CLIENT_TIMEOUT=30 "$py" "$helper" 127.0.0.1 "$port" "$certs" will dev-4 >"$tmp/will.cl" 2>&1 &
wp=$!
bg_pids+=($wp)
for _ in $(seq 150); do grep -q connack "$tmp/will.cl" && break; sleep 0.2; done
kill -KILL "$wp" 2>/dev/null
wait "$wp" 2>/dev/null
wait "$p" 2>/dev/null
if grep -q "connack 0" "$tmp/will.cl" && grep -q "^devices/dev-4/status gone$" "$tmp/will.out"; then
	pass will
else fail will "$(tr '\n' ' ' <"$tmp/will.cl") / $(tr '\n' ' ' <"$tmp/will.out")"; fi

# ---- refusals, with the kernel's heap above baseline compared before and after
wait_rep conns 0 15
heap0=$(rep above_req)
nref0=$(glog | grep -ac "refused\|timed out\|record error\|peer ended TLS")

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/evil-ca.key" 2>/dev/null
openssl req -x509 -new -key "$tmp/evil-ca.key" -subj "/CN=evil CA" -days 30 -out "$tmp/evil-ca.crt" \
	-addext "basicConstraints=critical,CA:TRUE" 2>/dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/evil.key" 2>/dev/null
openssl req -new -key "$tmp/evil.key" -subj "/CN=dev-1" 2>/dev/null |
	openssl x509 -req -CA "$tmp/evil-ca.crt" -CAkey "$tmp/evil-ca.key" -days 30 -set_serial 7 \
		-out "$tmp/evil.crt" 2>/dev/null
cat "$certs/ca.crt" "$tmp/evil-ca.crt" >"$tmp/both-ca.crt"
r=$(client connack dev-1 dev-1 "$tmp/evil.crt" "$tmp/evil.key" "$tmp/both-ca.crt")
case $r in refused*) pass refuse-other-ca "$r" ;; *) fail refuse-other-ca "$r" ;; esac

r=$(client connack revoked-1 revoked-1)
case $r in refused*) pass refuse-revoked "$r" ;; *) fail refuse-revoked "$r" ;; esac

r=$(client connack dev-1 dev-2)
[ "$r" = "connack 5" ] && pass refuse-client-id "$r" || fail refuse-client-id "$r"

r=$(client tls12)
case $r in refused*) pass refuse-tls12 "$r" ;; *) fail refuse-tls12 "$r" ;; esac

r=$(client plain)
case $r in refused*) pass refuse-plain "$r" ;; *) fail refuse-plain "$r" ;; esac

sub_bg "$tmp/acl.out" ops -t 'devices/dev-2/telemetry' -W 8; p=$sub_pid
wait_est 1
r=$(client acl)
wait "$p" 2>/dev/null
if [ "$r" = "suback 0x80" ] && ! grep -q forbidden "$tmp/acl.out"; then pass refuse-acl "$r"
else fail refuse-acl "$r / $(tr '\n' ' ' <"$tmp/acl.out")"; fi

wait_rep conns 0 15
heap1=$(rep above_req)
nref1=$(glog | grep -ac "refused\|timed out\|record error\|peer ended TLS")
if [ "$(rep conns)" = 0 ] && [ -n "$heap0" ] && [ "$heap0" = "$heap1" ]; then
	pass no-leak "heap above baseline $heap0 -> $heap1 B, $((nref1 - nref0)) refusal log lines"
else fail no-leak "conns=$(rep conns) heap above baseline $heap0 -> $heap1"; fi
glog | grep -a "broker: dp: .*\(refused\|record error\|peer ended\)" | sed 's/^.*broker: dp: conn [0-9]* //' |
	sort | uniq -c | sed 's/^/x86_64-mqtt:   guest log /' | head -n 8

# ---- idle connections, each with one QoS 1 subscription
mkdir -p "$tmp/load"
if ! "$py" "$helper" - 0 "$certs" mkcerts "$n_idle" "$tmp/load" >/dev/null 2>&1; then
	# without python3-cryptography: the openssl CLI, slower
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/load/k" 2>/dev/null
	printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >"$tmp/load/ext"
	for i in $(seq "$n_idle"); do
		openssl req -new -key "$tmp/load/k" -subj "/CN=load-$i" 2>/dev/null |
			openssl x509 -req -CA "$certs/ca.crt" -CAkey "$certs/ca.key" -days 2 -set_serial $((1000 + i)) \
				-extfile "$tmp/load/ext" -out "$tmp/load/load-$i.crt" 2>/dev/null
		cp "$tmp/load/k" "$tmp/load/load-$i.key"
	done
fi
MQTT_CLIENT_TIMEOUT=30 "$py" "$helper" 127.0.0.1 "$port" "$certs" idle "$n_idle" "$tmp/load" "$((idle_budget_s + 60))" \
	>"$tmp/idle.out" 2>&1 &
ip_=$!
bg_pids+=($ip_)
for _ in $(seq $((idle_budget_s * 5))); do # N full handshakes under TCG
	grep -q "^held\|failed\|Error" "$tmp/idle.out" && break
	kill -0 "$ip_" 2>/dev/null || break
	sleep 0.2
done
if grep -q "^held $n_idle" "$tmp/idle.out" && wait_rep est "$n_idle" 15; then
	line=$(rep_lines | tail -n 1 | sed 's/^.*broker: //')
	req=$(rep per_conn_req) blk=$(rep per_conn_blk) fixed=$(rep fixed)
	pass "idle-$n_idle" "kernel: $n_idle connections; heap above baseline per connection $req B requested, $blk B in allocator blocks; + $fixed B fixed tables = $((req + fixed)) B per idle connection; connected in $(cut -d' ' -f3 "$tmp/idle.out") s"
	say "guest: $line"
else fail "idle-$n_idle" "$(tail -n 2 "$tmp/idle.out" | tr '\n' ' ') est=$(rep est)"; fi
kill -KILL "$ip_" 2>/dev/null
wait "$ip_" 2>/dev/null
if wait_rep conns 0 30; then
	heap2=$(rep above_req)
	[ "$heap2" = "$heap1" ] && pass idle-close "0 connections, heap above baseline $heap2 B" ||
		fail idle-close "heap above baseline $heap1 -> $heap2 B"
else fail idle-close "conns=$(rep conns) 30 s after the clients died"; fi

if ! kill -0 "$qpid" 2>/dev/null; then
	fail guest-alive "the guest stopped during the run"
elif glog | grep -aq "PANIC\|panic\|exception"; then
	fail guest-alive "$(glog | grep -a -m1 "PANIC\|panic\|exception")"
fi
exit $failed
