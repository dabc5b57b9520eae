#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The broker end to end with real clients: build/hosted/urmqtt --broker (the data plane,
# dp/, on our TCP/TLS/MQTT) on a TAP device inside a network namespace of its own, the
# TAP's Linux side 10.79.0.1/24 inside that namespace only, clients in the same namespace
# (mosquitto_sub/mosquitto_pub, and Python for clients that are held, killed or must see
# exact codes). Certificates from BUILD_DIR/dev/certs (make certs). Scenarios:
#   hosted-mqtt/cmd-to-device     dev-1 on devices/dev-1/cmd/# gets a command from ops
#   hosted-mqtt/telemetry-qos1    dev-1 publishes at QoS 1 (PUBACK); ops on
#                                 devices/+/telemetry receives it
#   hosted-mqtt/qos2              QoS 2 publish (PUBREC/PUBCOMP) delivered at QoS 2
#   hosted-mqtt/retained          a retained message reaches a late subscriber
#   hosted-mqtt/will              SIGKILLed device client: its will is published
#   hosted-mqtt/refuse-other-ca   certificate from another CA: handshake refused
#   hosted-mqtt/refuse-revoked    revoked-1: refused
#   hosted-mqtt/refuse-client-id  dev-1's certificate with client id dev-2: CONNACK 0x05
#   hosted-mqtt/refuse-tls12      TLS 1.2 only client: refused
#   hosted-mqtt/refuse-plain      plain MQTT to 8883: no CONNACK, connection ends
#   hosted-mqtt/refuse-acl        dev-1 subscribing devices/dev-2/#: SUBACK 0x80; its
#                                 publish there is not routed
#   hosted-mqtt/no-leak           after the refusals: 0 connections, heap back to the
#                                 figure before them, no chunk held
#   hosted-mqtt/idle-N            N idle mTLS connections each with one QoS 1
#                                 subscription; bytes per connection from the stats line
#   hosted-mqtt/clean-shutdown    SIGTERM: exit 0, heap empty at exit, no sanitizer report
# Every wait is bounded; the namespace and every process die on exit.
# Usage: hosted-mqtt.sh BUILD_DIR   (HOSTED_MQTT_IDLE=N changes the idle count, 200)
set -uo pipefail
build=${1:-build}
bin=$build/hosted/urmqtt
certs=$build/dev/certs
ns=urmqtt-mqtt-$$
tap=umtap0
lin_ip=10.79.0.1
our_ip=10.79.0.2
port=8883
n_idle=${HOSTED_MQTT_IDLE:-200}
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/urmqtt-hosted-mqtt.XXXXXX)
logs=$build/test-logs
mkdir -p "$logs"
log=$logs/hosted-mqtt-broker.log
broker_pid=""
bg_pids=()

say() { echo "hosted-mqtt: $*"; }
pass() { echo "PASS hosted-mqtt/$1${2:+ ($2)}"; }
fail() { echo "FAIL hosted-mqtt/$1${2:+ ($2)}"; failed=1; }
in_ns() { ip netns exec "$ns" "$@"; }
tls=(--insecure --cafile "$certs/ca.crt") # --insecure: the dev server cert names localhost only
as() { echo --cert "$certs/$1.crt" --key "$certs/$1.key"; }
client() { timeout 30 ip netns exec "$ns" "$py" "$tmp/client.py" "$our_ip" "$port" "$certs" "$@"; }
failed=0

cleanup() {
	trap - EXIT INT TERM
	for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	if [ -n "$broker_pid" ]; then
		kill -KILL "$broker_pid" 2>/dev/null
		wait "$broker_pid" 2>/dev/null
	fi
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The newest broker stats line's field (name=value).
stat() { grep "^stats broker " "$log" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# Wait (bounded, seconds) for a fresh stats line where field $1 equals $2.
wait_stat() {
	local want=$2 n
	for _ in $(seq $((${3:-10} * 5))); do
		n=$(grep -c "^stats broker " "$log")
		sleep 0.2
		[ "$(grep -c "^stats broker " "$log")" -gt "$n" ] || continue
		[ "$(stat "$1")" = "$want" ] && return 0
	done
	return 1
}

for t in mosquitto_sub mosquitto_pub openssl timeout; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
"$py" -c 'import ssl' 2>/dev/null || { fail setup "python3 ssl missing"; exit 1; }
[ -x "$bin" ] && [ -f "$certs/ca.crt" ] || { fail setup "need $bin and make certs"; exit 1; }
if [ "$(id -u)" != 0 ]; then fail setup "needs root (network namespace)"; exit 1; fi

# The MQTT clients the mosquitto CLI cannot play: shared with tests/smoke/x86_64-mqtt.sh.
cp "$(dirname "$0")/lib/mqtt-client.py" "$tmp/client.py"

ip netns add "$ns" || { fail setup "ip netns add"; exit 1; }
in_ns ip link set lo up
in_ns ip tuntap add dev "$tap" mode tap || { fail setup "tuntap"; exit 1; }
in_ns ip addr add "$lin_ip/24" dev "$tap"
in_ns ip link set "$tap" up

ip netns exec "$ns" "$bin" --tap "$tap" --ip "$our_ip/24" --broker --broker-stats-ms 500 --stats-ms 0 \
	--max-conn $((n_idle + 64)) >"$log" 2>&1 &
broker_pid=$!
up=0
for _ in $(seq 50); do
	grep -q "^stats broker" "$log" && { up=1; break; }
	kill -0 "$broker_pid" 2>/dev/null || break
	sleep 0.2
done
[ $up = 1 ] || { fail setup "broker did not start"; tail -n 20 "$log"; exit 1; }
# Linux learns our MAC once; a ping makes the first handshake not wait for ARP.
in_ns ping -c 1 -W 2 "$our_ip" >/dev/null 2>&1

sub_bg() { # OUTFILE NAME ARGS...: a mosquitto_sub in the background (pid in sub_pid), bounded
	local out=$1 name=$2
	shift 2
	timeout 20 ip netns exec "$ns" mosquitto_sub -h "$our_ip" -p $port "${tls[@]}" $(as "$name") \
		-i "$name" -v -C 1 -W 15 "$@" >"$out" 2>&1 &
	sub_pid=$!
	bg_pids+=($sub_pid)
}
pub() { # NAME ARGS...
	local name=$1
	shift
	timeout 20 ip netns exec "$ns" mosquitto_pub -h "$our_ip" -p $port "${tls[@]}" $(as "$name") \
		-i "$name" -d "$@" 2>&1
}
# Wait until the broker has seen a subscription (a new SUBSCRIBE shows as subs+1 or
# sessions+1 in the stats line); simpler and bounded: wait for established connections.
wait_est() { wait_stat established "$1" 10; sleep 0.3; }

# ---- cmd-to-device
sub_bg "$tmp/cmd.out" dev-1 -t 'devices/dev-1/cmd/#' -q 1; p=$sub_pid
wait_est 1
pub ops -t devices/dev-1/cmd/reboot -m now -q 1 >"$tmp/cmd.pub"
wait "$p" 2>/dev/null
if grep -q "^devices/dev-1/cmd/reboot now$" "$tmp/cmd.out"; then pass cmd-to-device
else fail cmd-to-device "$(tr '\n' ' ' <"$tmp/cmd.out")"; fi

# ---- telemetry-qos1
sub_bg "$tmp/tel.out" ops -t 'devices/+/telemetry' -q 1; p=$sub_pid
wait_est 1
pub dev-1 -t devices/dev-1/telemetry -m 't=21.5' -q 1 >"$tmp/tel.pub"
wait "$p" 2>/dev/null
if grep -q "received PUBACK" "$tmp/tel.pub" && grep -q "^devices/dev-1/telemetry t=21.5$" "$tmp/tel.out"; then
	pass telemetry-qos1
else fail telemetry-qos1 "$(tr '\n' ' ' <"$tmp/tel.pub") / $(tr '\n' ' ' <"$tmp/tel.out")"; fi

# ---- qos2
timeout 20 ip netns exec "$ns" mosquitto_sub -h "$our_ip" -p $port "${tls[@]}" $(as ops) -i ops \
	-d -v -C 1 -W 15 -q 2 -t 'devices/+/telemetry' >"$tmp/q2.out" 2>&1 &
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
wait_stat conns 0 10
sub_bg "$tmp/ret.out" ops -t devices/dev-3/status; p=$sub_pid
wait "$p" 2>/dev/null
if grep -q "^devices/dev-3/status online$" "$tmp/ret.out"; then pass retained
else fail retained "$(tr '\n' ' ' <"$tmp/ret.out")"; fi
# clear it so the heap comparison below starts from a settled state
pub dev-3 -t devices/dev-3/status -n -r -q 1 >/dev/null

# ---- will
sub_bg "$tmp/will.out" ops -t devices/dev-4/status -q 1; p=$sub_pid
wait_est 1
ip netns exec "$ns" "$py" "$tmp/client.py" "$our_ip" "$port" "$certs" will dev-4 >"$tmp/will.cl" 2>&1 &
wp=$!
bg_pids+=($wp)
for _ in $(seq 50); do grep -q connack "$tmp/will.cl" && break; sleep 0.2; done
kill -KILL "$wp" 2>/dev/null
wait "$wp" 2>/dev/null
wait "$p" 2>/dev/null
if grep -q "connack 0" "$tmp/will.cl" && grep -q "^devices/dev-4/status gone$" "$tmp/will.out"; then
	pass will
else fail will "$(tr '\n' ' ' <"$tmp/will.cl") / $(tr '\n' ' ' <"$tmp/will.out")"; fi

# ---- refusals, with the heap compared before and after
wait_stat conns 0 10
heap0=$(stat heap_used)
failed0=$(grep "^stats dp " "$log" | tail -n 1 | sed -n 's/.* hs_failed=\([0-9]*\).*/\1/p')

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

sub_bg "$tmp/acl.out" ops -t 'devices/dev-2/telemetry' -W 4; p=$sub_pid
wait_est 1
r=$(client acl)
wait "$p" 2>/dev/null
if [ "$r" = "suback 0x80" ] && ! grep -q forbidden "$tmp/acl.out"; then pass refuse-acl "$r"
else fail refuse-acl "$r / $(tr '\n' ' ' <"$tmp/acl.out")"; fi

wait_stat conns 0 10
heap1=$(stat heap_used)
failed1=$(grep "^stats dp " "$log" | tail -n 1 | sed -n 's/.* hs_failed=\([0-9]*\).*/\1/p')
chunks=$(grep "^stats dp " "$log" | tail -n 1 | sed -n 's/.* out_chunks=\([0-9]*\).*/\1/p')
if [ "$(stat conns)" = 0 ] && [ "$heap0" = "$heap1" ] && [ "$chunks" = 0 ] &&
	[ $((failed1 - failed0)) -ge 4 ]; then
	pass no-leak "heap $heap0 -> $heap1 B, handshakes refused $((failed1 - failed0))"
else fail no-leak "conns=$(stat conns) heap $heap0 -> $heap1 chunks=$chunks refused $((failed1 - failed0))"; fi
grep "^dp: .*refused" "$log" | sort | uniq -c | sed 's/^/hosted-mqtt:   log /' | head -n 8

# ---- idle connections, each with one QoS 1 subscription
mkdir -p "$tmp/load"
if ! "$py" "$tmp/client.py" - 0 "$certs" mkcerts "$n_idle" "$tmp/load" >/dev/null 2>&1; then
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
ip netns exec "$ns" "$py" "$tmp/client.py" "$our_ip" "$port" "$certs" idle "$n_idle" "$tmp/load" 120 \
	>"$tmp/idle.out" 2>&1 &
ip_=$!
bg_pids+=($ip_)
for _ in $(seq 600); do
	grep -q "^held\|failed\|Error" "$tmp/idle.out" && break
	kill -0 "$ip_" 2>/dev/null || break
	sleep 0.2
done
if grep -q "^held $n_idle" "$tmp/idle.out" && wait_stat established "$n_idle" 10; then
	line=$(grep "^stats broker " "$log" | tail -n 1)
	pass "idle-$n_idle" "$(cut -d' ' -f3- <<<"$line" | tr ' ' '\n' |
		grep -E '^(conns|heap_per_conn|fixed_per_conn|bytes_per_conn)=' | tr '\n' ' ')connect $(cut -d' ' -f3 "$tmp/idle.out") s"
	echo "hosted-mqtt: $line"
else fail "idle-$n_idle" "$(tail -n 2 "$tmp/idle.out" | tr '\n' ' ') established=$(stat established)"; fi
kill -KILL "$ip_" 2>/dev/null
wait "$ip_" 2>/dev/null
wait_stat conns 0 15 || say "idle connections not all closed yet"

# ---- clean shutdown
kill -TERM "$broker_pid"
for _ in $(seq 100); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$broker_pid" 2>/dev/null; then
	fail clean-shutdown "no exit within 10 s of SIGTERM"
else
	wait "$broker_pid"
	rc=$?
	broker_pid=""
	if [ $rc = 0 ] && grep -q "broker heap empty at exit" "$log" &&
		! grep -q "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$log"; then
		pass clean-shutdown
	else fail clean-shutdown "rc=$rc; $(grep -m1 "heap\|Sanitizer\|runtime error" "$log" | tail -n 1)"; fi
fi
exit 0
