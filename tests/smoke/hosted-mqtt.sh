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
#   hosted-mqtt/refuse-other-ca   certificate from another CA: alert unknown_ca, and the
#                                 broker logs that handshake refused (X.509 verify failed)
#   hosted-mqtt/refuse-revoked    revoked-1: alert certificate_revoked, the same log line
#   hosted-mqtt/refuse-client-id  dev-1's certificate with client id dev-2: CONNACK 0x05
#   hosted-mqtt/refuse-tls12      TLS 1.2 only client: alert protocol_version; logged as
#                                 a bad protocol version
#   hosted-mqtt/refuse-plain      plain MQTT to 8883: no CONNACK, the broker closes it
#                                 within 5 s; logged as an invalid record
#   hosted-mqtt/refuse-acl        dev-1 subscribing devices/dev-2/#: SUBACK 0x80; its
#                                 publish there is not routed
#   hosted-mqtt/no-leak           after the refusals: 0 connections, heap back to the
#                                 figure before them, no chunk held
#   hosted-mqtt/idle-N            N idle mTLS connections each with one QoS 1
#                                 subscription; bytes per connection from the stats line
#   hosted-mqtt/idle5-N           the same N idle connections in MQTT 5.0: at most 32 B more
#   hosted-mqtt5/*                MQTT 5.0 with Python paho (tests/smoke/lib/mqtt5-check.py):
#                                 CONNACK properties, properties passed through and to 3.1.1,
#                                 request/response, refusals with reason codes, session and
#                                 message expiry, subscription options, Topic Aliases, will
#                                 delay, Maximum Packet Size, UNSUBACK codes
#   hosted-mqttjs5/*              MQTT 5.0 with MQTT.js 5 from npm (tests/smoke/lib/mqttjs5-check.mjs;
#                                 the pinned lock file tests/smoke/lib/mqttjs5/ installed with npm ci
#                                 into BUILD_DIR/node/mqttjs5): Topic Aliases in and out, shared
#                                 subscriptions, request/response, Receive Maximum, Retain Handling,
#                                 SUBACK and CONNACK refusals with their reason codes
#   hosted-mosq5/*                MQTT 5.0 with mosquitto_sub/mosquitto_pub -V mqttv5
#                                 (tests/smoke/lib/mosq5-check.sh): session expiry (resumed within
#                                 the interval, gone after it), user properties with -D, message
#                                 expiry, retained messages and Retain As Published
#   hosted-mqtt/clean-shutdown    SIGTERM: exit 0, heap empty at exit, no sanitizer report
# Then a second broker with --client-id-policy override (mqtt.client_id_policy):
#   hosted-mqtt/id-override-mosquitto  mosquitto_sub as dev-1 with the id "generic sub 7f3a"
#                                 receives ops's command (its session is dev-1's); the log
#                                 names both the id sent and the identity used
#   hosted-mqtt/id-override-paho  Python paho as dev-2 with the id paho-3f9a: CONNACK 0 and
#                                 a PUBACK for devices/dev-2/telemetry
#   hosted-mqtt/id-override-service  a service (ops) with another id is still refused with
#                                 CONNACK 5, the line naming the id sent and the identity
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
# Bytes per idle connection: a slot's tables + the malloc chunks above the baseline per
# connection (docs/ARCHITECTURE.md, Memory); the same budget as the image's.
idle_budget_b=512
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

# broker_start EXTRA-ARGS...: the broker in the namespace, logging to $log (pid in
# broker_pid); 0 once its first stats line is out (10 s at most).
broker_start() {
	ip netns exec "$ns" "$bin" --tap "$tap" --ip "$our_ip/24" --broker --broker-stats-ms 500 --stats-ms 0 \
		"$@" >"$log" 2>&1 &
	broker_pid=$!
	for _ in $(seq 50); do
		grep -q "^stats broker" "$log" && return 0
		kill -0 "$broker_pid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
broker_start --max-conn $((n_idle + 64)) || { fail setup "broker did not start"; tail -n 20 "$log"; exit 1; }
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
settle() { wait_stat conns 0 10; }
client_bg() { # OUT ARGS...
	local out=$1
	shift
	ip netns exec "$ns" "$py" "$tmp/client.py" "$our_ip" "$port" "$certs" "$@" >"$out" 2>&1 &
	client_pid=$!
	bg_pids+=($client_pid)
}
helper=$tmp/client.py
broker_log() { cat "$log"; }
will_polls=50
acl_wait_s=4
# shellcheck source=tests/smoke/lib/mqtt-scenarios.sh
. "$(dirname "$0")/lib/mqtt-scenarios.sh"

# ---- cmd-to-device, telemetry-qos1, qos2, retained, will (tests/smoke/lib/mqtt-scenarios.sh)
mqtt_scenarios_delivery

# ---- refusals, with the heap compared before and after
wait_stat conns 0 10
heap0=$(stat heap_used)
failed0=$(grep "^stats dp " "$log" | tail -n 1 | sed -n 's/.* hs_failed=\([0-9]*\).*/\1/p')

mqtt_scenarios_refusals

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
mqtt_load_certs "$n_idle" "$tmp/load"
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
	mem=$(grep "^stats memory " "$log" | tail -n 1)
	field() { tr ' ' '\n' <<<"$mem" | sed -n "s/^$1=//p"; }
	idle=$(field idle_bytes_per_conn) slot=$(field slot_bytes) blk=$(field heap_blk_per_conn)
	if [ -n "$idle" ] && [ "$idle" -le "$idle_budget_b" ]; then
		pass "idle-$n_idle" "$idle B per idle connection (budget $idle_budget_b B) = $slot B per connection slot + $blk B of malloc chunks; connect $(cut -d' ' -f3 "$tmp/idle.out") s"
	else
		fail "idle-$n_idle" "'$idle' B per idle connection (budget $idle_budget_b B): $mem"
	fi
	echo "hosted-mqtt: $line"
else fail "idle-$n_idle" "$(tail -n 2 "$tmp/idle.out" | tr '\n' ' ') established=$(stat established)"; fi
kill -KILL "$ip_" 2>/dev/null
wait "$ip_" 2>/dev/null
wait_stat conns 0 15 || say "idle connections not all closed yet"
# The same with MQTT 5.0 connections: the budget is 3.1.1's figure + 32 B (issue 23)
ip netns exec "$ns" "$py" "$tmp/client.py" "$our_ip" "$port" "$certs" idle5 "$n_idle" "$tmp/load" 120 \
	>"$tmp/idle5.out" 2>&1 &
ip_=$!
bg_pids+=($ip_)
for _ in $(seq 600); do
	grep -q "^held\|failed\|Error" "$tmp/idle5.out" && break
	kill -0 "$ip_" 2>/dev/null || break
	sleep 0.2
done
if grep -q "^held $n_idle" "$tmp/idle5.out" && wait_stat established "$n_idle" 10; then
	mem=$(grep "^stats memory " "$log" | tail -n 1)
	idle5=$(tr ' ' '\n' <<<"$mem" | sed -n "s/^idle_bytes_per_conn=//p")
	if [ -n "$idle5" ] && [ -n "${idle:-}" ] && [ "$idle5" -le $((idle + 32)) ]; then
		pass "idle5-$n_idle" "$idle5 B per idle 5.0 connection with one subscription, 3.1.1 $idle B (budget +32 B)"
	else
		fail "idle5-$n_idle" "'$idle5' B per idle 5.0 connection, 3.1.1 '${idle:-}' B (budget +32 B): $mem"
	fi
else fail "idle5-$n_idle" "$(tail -n 2 "$tmp/idle5.out" | tr '\n' ' ') established=$(stat established)"; fi
kill -KILL "$ip_" 2>/dev/null
wait "$ip_" 2>/dev/null
wait_stat conns 0 15 || say "idle 5.0 connections not all closed yet"

# ---- MQTT 5.0 with a real client library (tests/smoke/lib/mqtt5-check.py: paho MQTTv5),
# results named hosted-mqtt5/<scenario>
timeout 180 ip netns exec "$ns" "$py" "$(dirname "$0")/lib/mqtt5-check.py" "$our_ip" "$port" "$certs" hosted-mqtt5 \
	>"$tmp/mqtt5.out" 2>&1
grep -E "^(PASS|FAIL) " "$tmp/mqtt5.out"
grep -qE "^(PASS|FAIL) " "$tmp/mqtt5.out" || fail mqtt5 "the 5.0 checks printed no result: $(tail -n 3 "$tmp/mqtt5.out" | tr '\n' ' ')"
grep -q "^FAIL " "$tmp/mqtt5.out" && failed=1
wait_stat conns 0 15 || say "5.0 connections not all closed yet"

# ---- MQTT 5.0 with MQTT.js 5 (tests/smoke/lib/mqttjs5-check.mjs; npm ci of the pinned lock
# file into BUILD_DIR/node, tests/smoke/lib/mqttjs5-install.sh), results named hosted-mqttjs5/<scenario>
if js5=$(bash "$(dirname "$0")/lib/mqttjs5-install.sh" "$build" 2>"$tmp/js5.out"); then
	timeout 180 ip netns exec "$ns" env MQTTJS5_DIR="$js5" node "$(dirname "$0")/lib/mqttjs5-check.mjs" \
		"$our_ip" "$port" "$certs" hosted-mqttjs5 >"$tmp/js5.out" 2>&1
fi
grep -E "^(PASS|FAIL) " "$tmp/js5.out"
grep -qE "^(PASS|FAIL) " "$tmp/js5.out" || fail mqttjs5 "the MQTT.js 5 checks printed no result: $(tail -n 3 "$tmp/js5.out" | tr '\n' ' ')"
grep -q "^FAIL " "$tmp/js5.out" && failed=1
wait_stat conns 0 15 || say "MQTT.js 5 connections not all closed yet"

# ---- MQTT 5.0 with mosquitto_sub/mosquitto_pub -V mqttv5 (tests/smoke/lib/mosq5-check.sh),
# results named hosted-mosq5/<scenario>
timeout 180 ip netns exec "$ns" bash "$(dirname "$0")/lib/mosq5-check.sh" "$our_ip" "$port" "$certs" hosted-mosq5 \
	>"$tmp/mosq5.out" 2>&1
grep -E "^(PASS|FAIL) " "$tmp/mosq5.out"
grep -qE "^(PASS|FAIL) " "$tmp/mosq5.out" || fail mosq5 "the mosquitto 5.0 checks printed no result: $(tail -n 3 "$tmp/mosq5.out" | tr '\n' ' ')"
grep -q "^FAIL " "$tmp/mosq5.out" && failed=1
wait_stat conns 0 15 || say "mosquitto 5.0 connections not all closed yet"

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

# ---- mqtt.client_id_policy = "override": generic clients with ids of their own
log=$tmp/broker-override.log
if ! broker_start --client-id-policy override; then
	fail id-override "the broker with --client-id-policy override did not start"
else
	# mosquitto_sub as dev-1 with a random-looking id with a space; ops commands it.
	timeout 20 ip netns exec "$ns" mosquitto_sub -h "$our_ip" -p $port "${tls[@]}" $(as dev-1) \
		-i "generic sub 7f3a" -t 'devices/dev-1/cmd/#' -q 1 -v -C 1 -W 15 >"$tmp/ov-sub.out" 2>&1 &
	ov_sub=$!
	bg_pids+=($ov_sub)
	sleep 1.5
	pub ops -t devices/dev-1/cmd/reboot -m via-override -q 1 >"$tmp/ov-pub.out"
	wait "$ov_sub"
	# Python paho as dev-2 with its own id: CONNACK 0 and a PUBACK for its telemetry.
	cat >"$tmp/generic_paho_client.py" <<'PY'
import ssl, sys, time
import paho.mqtt.client as mqtt
host, port, certs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION1, client_id="paho-3f9a", clean_session=True)
except AttributeError:
    c = mqtt.Client(client_id="paho-3f9a", clean_session=True)
c.tls_set(ca_certs=certs + "/ca.crt", certfile=certs + "/dev-2.crt", keyfile=certs + "/dev-2.key")
c.tls_insecure_set(True)  # the development server certificate names localhost only
res = {}
c.on_connect = lambda cl, u, f, rc: res.setdefault("connack", rc)
c.on_publish = lambda cl, u, mid: res.setdefault("puback", mid)
c.connect(host, port, 30)
c.loop_start()
t0 = time.time()
while "connack" not in res and time.time() - t0 < 20:
    time.sleep(0.05)
if res.get("connack") == 0:
    c.publish("devices/dev-2/telemetry", b"paho", qos=1)
    while "puback" not in res and time.time() - t0 < 20:
        time.sleep(0.05)
c.disconnect(); c.loop_stop()
print("connack", res.get("connack"), "puback", "yes" if "puback" in res else "no")
PY
	timeout 40 ip netns exec "$ns" "$py" "$tmp/generic_paho_client.py" "$our_ip" "$port" "$certs" >"$tmp/paho.out" 2>&1
	# A service still needs its identity: ops with another id is refused (CONNACK 5).
	timeout 20 ip netns exec "$ns" mosquitto_pub -h "$our_ip" -p $port "${tls[@]}" $(as ops) \
		-i "not-ops" -t devices/dev-1/cmd/x -m x -q 1 >"$tmp/ov-svc.out" 2>&1
	svc_rc=$?
	sleep 0.5
	if grep -q "^devices/dev-1/cmd/reboot via-override$" "$tmp/ov-sub.out" &&
		grep -q "client id 'generic sub 7f3a' replaced by the certificate identity id=dev-1" "$log"; then
		pass id-override-mosquitto "dev-1 as 'generic sub 7f3a' got ops's command; logged as replaced"
	else fail id-override-mosquitto "$(tr '\n' ' ' <"$tmp/ov-sub.out") / $(grep -m1 "client id" "$log")"; fi
	if grep -q "^connack 0 puback yes$" "$tmp/paho.out" &&
		grep -q "client id 'paho-3f9a' replaced by the certificate identity id=dev-2" "$log"; then
		pass id-override-paho "paho with client id paho-3f9a: CONNACK 0, PUBACK for devices/dev-2/telemetry"
	else fail id-override-paho "$(tr '\n' ' ' <"$tmp/paho.out")"; fi
	if [ $svc_rc != 0 ] && grep -qi "not authori[sz]ed" "$tmp/ov-svc.out" &&
		grep -q "client id 'not-ops' is not the certificate identity id=ops" "$log"; then
		pass id-override-service "a service with another client id: CONNACK 5, logged with both names"
	else fail id-override-service "rc=$svc_rc $(tr '\n' ' ' <"$tmp/ov-svc.out")"; fi
	kill -TERM "$broker_pid" 2>/dev/null
	wait "$broker_pid" 2>/dev/null
	broker_pid=""
fi
exit 0
