#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The broker in the x86_64 kernel end to end with real clients: boots
# BUILD_DIR/x86_64/urmqtt.elf (the product boot, no test scenario) on QEMU q35 (KVM when
# a probe guest ran on it, TCG otherwise) with user-mode networking forwarding a free host port on
# 127.0.0.1 to the guest's 8883, the memory line every second (broker_report_ms=1000), no $SYS
# messages (sys_interval_s=0: the memory and retained counts below are exact), and
# drives it from the host with mosquitto_sub/mosquitto_pub and the Python helper
# tests/smoke/lib/mqtt-client.py. Certificates from BUILD_DIR/dev/certs (the image embeds
# the same CA and server key). The server certificate names 127.0.0.1: no --insecure.
#   x86_64-mqtt/cmd-to-device     dev-1 on devices/dev-1/cmd/# gets a command from ops
#   x86_64-mqtt/telemetry-qos1    dev-1 publishes at QoS 1 (PUBACK); ops on
#                                 devices/+/telemetry receives it
#   x86_64-mqtt/qos2              QoS 2 publish (PUBREC/PUBCOMP) delivered at QoS 2
#   x86_64-mqtt/retained          a retained message reaches a late subscriber
#   x86_64-mqtt/will              SIGKILLed device client: its will is published
#   x86_64-mqtt/refuse-other-ca   certificate from another CA: alert unknown_ca, and the
#                                 guest logs that handshake refused (X.509 verify failed)
#   x86_64-mqtt/refuse-revoked    revoked-1: alert certificate_revoked, the same log line
#   x86_64-mqtt/refuse-client-id  dev-1's certificate with client id dev-2: CONNACK 5
#   x86_64-mqtt/refuse-tls12      TLS 1.2 only client: alert protocol_version; logged as
#                                 a bad protocol version
#   x86_64-mqtt/refuse-plain      plain MQTT to 8883: no CONNACK, the guest closes it
#                                 within 5 s; logged as an invalid record
#   x86_64-mqtt/refuse-acl        dev-1 subscribing devices/dev-2/#: SUBACK 0x80; its
#                                 publish there is not routed
#   x86_64-mqtt-5/*               MQTT 5.0 with Python paho (tests/smoke/lib/mqtt5-check.py)
#   x86_64-mqtt-js5/*             MQTT 5.0 with MQTT.js 5 from npm (tests/smoke/lib/mqttjs5-check.mjs,
#                                 installed into BUILD_DIR/node by tests/smoke/lib/mqttjs5-install.sh):
#                                 Topic Aliases in and out, shared subscriptions, request/response,
#                                 Receive Maximum, Retain Handling, refusals with reason codes
#   x86_64-mqtt-mosq5/*           MQTT 5.0 with mosquitto_sub/mosquitto_pub -V mqttv5
#                                 (tests/smoke/lib/mosq5-check.sh): session and message expiry,
#                                 user properties with -D, retained messages, Retain As Published
#   x86_64-mqtt/no-leak           after the refusals: 0 connections, the kernel's heap
#                                 above its baseline back to the figure before them
#   x86_64-mqtt/idle-N            N idle mTLS connections each with one QoS 1
#                                 subscription; bytes per idle connection (a slot's tables +
#                                 the heap blocks above the baseline per connection, from the
#                                 kernel's line) within its budget
#   x86_64-mqtt/idle-close        the N connections closed: 0 connections, heap as before
# With several cores (X86_64_MQTT_SMP, default 2; every core a broker shard, flows steered
# by core 0, sessions on their home core: ADR-027) the same scenarios run, the per-core
# memory lines are added up, and:
#   x86_64-mqtt/retained-every-shard  while the retained message is stored, every core's
#                                 shard line shows it (replicated to every shard)
#   x86_64-mqtt/will-home-core    the will of dev-4 was published by dev-4's home core
#   x86_64-mqtt/takeover-other-core  dev-5 connects twice with a persistent session until
#                                 the two connections land on different cores: the
#                                 second gets session-present, the first is ended, and
#                                 the takeover is counted on dev-5's home core
#   x86_64-mqtt/shards            connections were forwarded to their home core and
#                                 routed messages reached other shards
#   x86_64-mqtt/resume-other-core dev-3's ticket resumed 12 times, at least once on another
#                                 core than its full handshake (one ticket key set for all)
#   x86_64-mqtt/interest-unread-topic  300 acknowledged publishes on a topic nobody reads:
#                                 no other shard receives a copy (fanout_in +0)
#   x86_64-mqtt/flood-across-shards  eight devices flood QoS 0 (4,000 each at 900/s) to ops on
#                                 one shard: at least 10% delivered, >= 2,000 copies crossed
#                                 shards, every connection still answers a PINGREQ
#   x86_64-mqtt/flood-backlog-drained  afterwards every core's routing line says queued=0
# X86_64_MQTT_TAG names the results (x86_64-mqtt); X86_64_MQTT_IDLE=0 skips the idle part.
# X86_64_MQTT_ARCH=aarch64 runs the same scenarios on BUILD_DIR/aarch64/urmqtt.img
# (qemu-system-aarch64 -M virt, GICv3, -cpu max, TCG; tests/smoke/aarch64-mqtt.sh).
# Every wait is bounded; QEMU and every client die on exit. Whole run: ~1-3 min on TCG.
# Usage: x86_64-mqtt.sh BUILD_DIR   (X86_64_MQTT_IDLE=N changes the idle count, 1000)
set -uo pipefail
build=${1:-build}
arch=${X86_64_MQTT_ARCH:-x86_64}
img=$build/x86_64/urmqtt.elf
[ "$arch" = aarch64 ] && img=$build/aarch64/urmqtt.img
certs=$build/dev/certs
here=$(cd "$(dirname "$0")" && pwd)
helper=$here/lib/mqtt-client.py
n_idle=${X86_64_MQTT_IDLE:-1000}
smp=${X86_64_MQTT_SMP:-2}
tag=${X86_64_MQTT_TAG:-x86_64-mqtt}
# One descriptor per held connection plus the helper's own: raise the soft limit (the
# hard limit allows it as root; otherwise the idle scenario says what failed).
ulimit -n $((n_idle + 256)) 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
# Under TCG a full handshake costs the guest about 0.1 s: budget 0.4 s each, at least 180 s.
idle_budget_s=$(( n_idle * 2 / 5 > 180 ? n_idle * 2 / 5 : 180 ))
# Bytes per idle connection (a connection slot's tables + the heap blocks an open connection
# holds, docs/ARCHITECTURE.md): the product's "few hundred bytes" (measured: docs/PROGRESS.md).
idle_budget_b=512
py=/usr/bin/python3
logs=$build/test-logs/$tag
mkdir -p "$logs"
log=$logs/guest.log
tmp=$(mktemp -d /tmp/urmqtt-x86-mqtt.XXXXXX)
qpid=""
bg_pids=()
failed=0

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}; see $log"; failed=1; }
say() { echo "$tag: $*"; }

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

for t in qemu-system-$arch mosquitto_sub mosquitto_pub openssl timeout; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
"$py" -c 'import ssl' 2>/dev/null || { fail setup "python3 ssl missing"; exit 1; }
[ -f "$img" ] && [ -f "$certs/ca.crt" ] && [ -f "$certs/ca.key" ] ||
	{ fail setup "need $img and make certs"; exit 1; }
# The accelerator: KVM only after a probe guest ran on it (tools/accel/accel.sh; make
# decides once per invocation and exports URMQTT_ACCEL), else TCG.
# shellcheck source=tools/accel/accel.sh
. "$(dirname "$0")/../../tools/accel/accel.sh"
if [ "$arch" = aarch64 ]; then
	mode=tcg # an x86_64 host: aarch64 runs under TCG only
else
	accel_select "$build" || { echo "FAIL $tag/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
	mode=$accel_mode
fi
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
say "$mode, guest 8883 at 127.0.0.1:$port"

# ---- guest log helpers (CR stripped; the memory lines are name=value, one per core)
glog() { tr -d '\r' <"$log"; }
rep_lines() { glog | grep -a " broker: core [0-9]*: conns="; }
# A field of core $2's newest line: the memory line (conns=...) or the shard line.
core_field() { # FIELD CORE [shard]
	local pat=" broker: core $2: conns="
	[ "${3:-}" = shard ] && pat=" broker: core $2: shard "
	[ "${3:-}" = routing ] && pat=" broker: core $2: routing "
	glog | grep -a "$pat" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"
}
# Connection counts are summed over every core's newest line; machine-wide figures (the
# heap above the baseline, the fixed tables) are read from core 0's line.
rep() {
	case $1 in
	conns | est | hs)
		local c t=0 v
		for ((c = 0; c < smp; c++)); do v=$(core_field "$1" $c); t=$((t + ${v:-0})); done
		echo $t ;;
	*) core_field "$1" 0 ;;
	esac
}
routing_sum() { # FIELD: summed over every core's newest routing line
	local c t=0 v
	for ((c = 0; c < smp; c++)); do v=$(core_field "$1" $c routing); t=$((t + ${v:-0})); done
	echo $t
}
shard_sum() { # FIELD: summed over every core's newest shard line
	local c t=0 v
	for ((c = 0; c < smp; c++)); do v=$(core_field "$1" $c shard); t=$((t + ${v:-0})); done
	echo $t
}
# Until every core has printed one more line matching $1 (default: its memory line);
# bounded, 5 s.
fresh_round() {
	local pat=${1:- broker: core [0-9]*: conns=} n j
	n=$(glog | grep -ac "$pat")
	for ((j = 0; j < 25 && $(glog | grep -ac "$pat") < n + smp; j++)); do sleep 0.2; done
}
# Wait (bounded, rounds of fresh lines) until rep $1 is $2.
wait_rep() {
	local want=$2 i
	for ((i = 0; i < ${3:-15}; i++)); do
		fresh_round
		[ "$(rep "$1")" = "$want" ] && return 0
	done
	return 1
}
# The dp log lines naming identity $1 ("broker: core C: dp: conn N from IP: device
# identity ID [(home core H)]"), oldest first; the serving core of a line, and its home
# core ("(home core H)" when forwarded, else the serving core).
id_lines() { glog | grep -a " broker: core [0-9]*: dp: conn .*identity $1\( \|$\)"; }
line_core() { sed -n 's/^.* broker: core \([0-9]*\): dp:.*$/\1/p'; }
line_home() {
	local l
	l=$(cat)
	case $l in
	*"(home core "*) echo "$l" | sed -n 's/^.*(home core \([0-9]*\)).*$/\1/p' ;;
	*) echo "$l" | line_core ;;
	esac
}
wait_est() { wait_rep est "$1" 20 && sleep 1; } # TLS done; then give the SUBSCRIBE a moment
settle() { wait_rep conns 0 15; }
# Quiet machine (bounded, seconds): no connection on any core and, with shards, no session's
# connection still known on its home core (proxies: ended over the mesh a moment after the
# connection's core reports 0); then one more fresh round of lines, so core 0's heap figure
# is taken after every core has let go.
quiesce() {
	local i
	wait_rep conns 0 "$1" || return 1
	if [ "$smp" -gt 1 ]; then
		for ((i = 0; i < $1 && $(shard_sum proxies) != 0; i++)); do fresh_round; done
		[ "$(shard_sum proxies)" = 0 ] || return 1
	fi
	fresh_round
	[ "$(rep conns)" = 0 ]
}

tls=(--cafile "$certs/ca.crt")
as() { echo --cert "$certs/$1.crt" --key "$certs/$1.key"; }
client() { MQTT_CLIENT_TIMEOUT=30 timeout 60 "$py" "$helper" 127.0.0.1 "$port" "$certs" "$@"; }
client_bg() { # OUT ARGS...
	local out=$1
	shift
	MQTT_CLIENT_TIMEOUT=30 "$py" "$helper" 127.0.0.1 "$port" "$certs" "$@" >"$out" 2>&1 &
	client_pid=$!
	bg_pids+=($client_pid)
}
broker_log() { glog; }
will_polls=150
acl_wait_s=8
# shellcheck source=tests/smoke/lib/mqtt-scenarios.sh
. "$here/lib/mqtt-scenarios.sh"
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

# ---- boot: $smp cores, each a broker shard (ADR-027)
if [ "$arch" = aarch64 ]; then
	# AARCH64_MQTT_QEMU / AARCH64_MQTT_MACHINE: e.g. a QEMU >= 8.0 and virt,gic-version=3,mte=on (MTE)
	machine=("${AARCH64_MQTT_QEMU:-qemu-system-aarch64}" -M "${AARCH64_MQTT_MACHINE:-virt,gic-version=3}" -cpu max)
else
	machine=(qemu-system-x86_64 -M q35 "${accel[@]}")
fi
timeout 600 "${machine[@]}" -m 256M -smp "$smp" -display none -no-reboot -nodefaults \
	-serial stdio -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" \
	-device virtio-net-pci,netdev=n0,romfile= -kernel "$img" -append "broker_report_ms=1000 sys_interval_s=0" \
	</dev/null >"$log" 2>&1 &
qpid=$!
up=0
for _ in $(seq 300); do
	if glog | grep -aq "listening on TCP 8883" && glog | grep -aq "DHCP lease: " && [ -n "$(core_field conns 0)" ]; then
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
say "$(glog | grep -a "broker: MQTT over TLS" | head -n 1 | sed "s/^.*broker: //")"

# ---- cmd-to-device, telemetry-qos1, qos2, retained, will (tests/smoke/lib/mqtt-scenarios.sh)
# Until fresh shard lines from every core make the test $1 true (bounded, seconds $2).
wait_shards() { # TEST SECONDS
	local i
	for ((i = 0; i < $2; i++)); do
		fresh_round " broker: core [0-9]*: shard "
		eval "$1" && return 0
	done
	return 1
}
every_core_retained() {
	local c
	for ((c = 0; c < smp; c++)); do [ "$(core_field retained $c shard)" = 1 ] || return 1; done
}
shard_lines() { glog | grep -a " broker: core [0-9]*: shard " | tail -n "$smp" | sed 's/^.*broker: //' | tr '\n' ';'; }
after_retained() {
	[ "$smp" -gt 1 ] || return 0
	if wait_shards every_core_retained 15; then
		pass retained-every-shard "retained=1 on each of the $smp shards"
	else fail retained-every-shard "$(shard_lines)"; fi
}
mqtt_scenarios_delivery

if [ "$smp" -gt 1 ]; then
	# The will of dev-4 came from its home core.
	home4=$(id_lines dev-4 | tail -n 1 | line_home)
	if [ -n "$home4" ] && wait_shards '[ "$(core_field wills "$home4" shard)" = 1 ] && [ "$(shard_sum wills)" = 1 ]' 15; then
		pass will-home-core "dev-4's home is core $home4; its shard published the will"
	else fail will-home-core "home=$home4: $(shard_lines)"; fi

	# A takeover whose new connection lands on another core: try until the first two
	# connections of a round (the third, clean, one drops the session) differ in core.
	took=0 tries=0 r="" ca="" cb=""
	while [ $took = 0 ] && [ $tries -lt 24 ]; do
		tries=$((tries + 1))
		r=$(client takeover dev-5)
		ca=$(id_lines dev-5 | tail -n 3 | sed -n 1p | line_core)
		cb=$(id_lines dev-5 | tail -n 3 | sed -n 2p | line_core)
		[ -n "$ca" ] && [ -n "$cb" ] && [ "$ca" != "$cb" ] && took=1
	done
	home5=$(id_lines dev-5 | tail -n 1 | line_home)
	if [ $took = 1 ] && [ "$r" = "a_connack 0 b_connack 0 b_sp 1 a_closed 1" ] &&
		wait_shards '[ "$(core_field takeovers "$home5" shard)" -ge 1 ]' 15; then
		pass takeover-other-core "round $tries: first connection on core $ca, second on core $cb, session on home core $home5 ($r)"
	else fail takeover-other-core "rounds=$tries cores $ca/$cb home $home5: $r; $(shard_lines)"; fi

	if wait_shards '[ "$(shard_sum fwd)" -ge 1 ] && [ "$(shard_sum fanout_in)" -ge 1 ]' 15; then
		pass shards "$(shard_sum fwd) connections forwarded to their home core, $(shard_sum fanout_in) routed messages received from other shards, $(shard_sum refused) refused"
	else fail shards "$(shard_lines)"; fi

	# One set of ticket keys for every core (issue 26): dev-3 resumes its first ticket twelve
	# times; each connection is steered anew, and a resumption on another core than the full
	# handshake must be resumed, not turned into a full handshake.
	r=$(client resume dev-3 12)
	full_core=$(id_lines dev-3 | grep -v ' resumed$' | tail -n 1 | line_core)
	other=$(id_lines dev-3 | grep ' resumed$' | line_core | grep -vc "^$full_core$")
	if [ "$r" = "full 1 resumed 12 of 12" ] && [ -n "$full_core" ] && [ "$other" -ge 1 ]; then
		pass resume-other-core "$r; full handshake on core $full_core, $other resumptions on other cores"
	else fail resume-other-core "$r; full handshake on core ${full_core:-?}, resumed on other cores: $other"; fi

	# Interest filters (issue 26, ADR-055): 300 acknowledged publishes on a topic no shard
	# holds a subscription for reach no other shard (fanout_in unchanged everywhere).
	fan0=$(shard_sum fanout_in)
	skip0=$(routing_sum skipped)
	: >"$tmp/unread.acked"
	r=$(client acked-pub dev-1 devices/dev-1/unread/x 300 "$tmp/unread.acked")
	wait_shards 'true' 2
	fan=$(($(shard_sum fanout_in) - fan0)) skipped=$(($(routing_sum skipped) - skip0))
	if [ "$r" = "acked 300 ended complete" ] && [ "$fan" = 0 ] && [ "$skipped" -ge $((300 * (smp - 1))) ]; then
		pass interest-unread-topic "$r; fanout_in +0, $skipped copies skipped"
	else fail interest-unread-topic "$r; fanout_in +$fan, skipped +$skipped; $(shard_lines)"; fi

	# A QoS 0 flood across shards (issue 26): eight devices publish 4,000 messages each at
	# 900/s (under dev's 1,000/s per connection) while ops, whose session lives on one
	# shard, subscribes. The subscriber must get a substantial share (a floor, not a rate:
	# its own connection is the slowest stage, sealing every copy on an emulated core, and
	# QoS 0 beyond its bounded queue is dropped by design), the routed copies must have
	# crossed shards, every connection must still answer a PINGREQ, and every core's
	# backlog must drain to zero.
	fan0=$(shard_sum fanout_in)
	r=$(MQTT_CLIENT_TIMEOUT=30 timeout 480 "$py" "$helper" 127.0.0.1 "$port" "$certs" flood ops \
		dev-1,dev-2,dev-3,dev-6,dev-7,dev-8,dev-9,dev-10 4000 900 2>&1 | tail -n 1)
	sent=$(echo "$r" | sed -n 's/^sent \([0-9]*\) .*$/\1/p')
	got=$(echo "$r" | sed -n 's/^.* received \([0-9]*\) .*$/\1/p')
	wait_shards 'true' 2
	fan=$(($(shard_sum fanout_in) - fan0))
	if [ -n "$sent" ] && [ "$sent" -ge 8000 ] && [ -n "$got" ] && [ $((got * 100)) -ge $((sent * 10)) ] &&
		[ "$fan" -ge 2000 ] && echo "$r" | grep -q ' alive 9 of 9$'; then
		pass flood-across-shards "$r; $fan routed copies received by other shards (floor: 10% delivered)"
	else fail flood-across-shards "$r; fanout_in +$fan; $(shard_lines)"; fi
	routing_idle() {
		local c
		for ((c = 0; c < smp; c++)); do [ "$(core_field queued $c routing)" = 0 ] || return 1; done
	}
	if wait_shards routing_idle 15; then
		pass flood-backlog-drained "queued=0 on each of the $smp cores; $(glog | grep -a ' broker: core [0-9]*: routing ' | tail -n "$smp" | sed 's/^.*broker: //' | tr '\n' ';')"
	else fail flood-backlog-drained "$(glog | grep -a ' broker: core [0-9]*: routing ' | tail -n "$smp" | sed 's/^.*broker: //' | tr '\n' ';')"; fi
	settle
fi

# ---- MQTT 5.0 with a real client library (tests/smoke/lib/mqtt5-check.py, paho MQTTv5),
# results named $tag-5/<scenario>: on several cores, the properties cross shards
MQTT_CLIENT_TIMEOUT=30 timeout 240 "$py" "$here/lib/mqtt5-check.py" 127.0.0.1 "$port" "$certs" "$tag-5" console \
	>"$tmp/mqtt5.out" 2>&1
grep -E "^(PASS|FAIL) " "$tmp/mqtt5.out"
grep -qE "^(PASS|FAIL) " "$tmp/mqtt5.out" || fail mqtt5 "the 5.0 checks printed no result: $(tail -n 3 "$tmp/mqtt5.out" | tr '\n' ' ')"
grep -q "^FAIL " "$tmp/mqtt5.out" && failed=1

# ---- MQTT 5.0 with MQTT.js 5 (tests/smoke/lib/mqttjs5-check.mjs; npm ci of the pinned lock
# file into BUILD_DIR/node, tests/smoke/lib/mqttjs5-install.sh), results named $tag-js5/<scenario>
if js5=$(bash "$here/lib/mqttjs5-install.sh" "$build" 2>"$tmp/js5.out"); then
	MQTTJS5_DIR=$js5 timeout 240 node "$here/lib/mqttjs5-check.mjs" 127.0.0.1 "$port" "$certs" "$tag-js5" \
		>"$tmp/js5.out" 2>&1
fi
grep -E "^(PASS|FAIL) " "$tmp/js5.out"
grep -qE "^(PASS|FAIL) " "$tmp/js5.out" || fail mqttjs5 "the MQTT.js 5 checks printed no result: $(tail -n 3 "$tmp/js5.out" | tr '\n' ' ')"
grep -q "^FAIL " "$tmp/js5.out" && failed=1
# where the shared subscription's members lived (their identities' home cores, ADR-070)
if [ "$smp" -gt 1 ]; then
	homes=""
	for svc in ops ops-b ops-c ops-d; do
		h=$(id_lines "$svc" | tail -n 1 | line_home)
		homes="$homes $svc:${h:-?}"
	done
	echo "$tag: shared-sub members' home cores:$homes"
fi

# ---- MQTT 5.0 with mosquitto_sub/mosquitto_pub -V mqttv5 (tests/smoke/lib/mosq5-check.sh),
# results named $tag-mosq5/<scenario>
timeout 240 bash "$here/lib/mosq5-check.sh" 127.0.0.1 "$port" "$certs" "$tag-mosq5" >"$tmp/mosq5.out" 2>&1
grep -E "^(PASS|FAIL) " "$tmp/mosq5.out"
grep -qE "^(PASS|FAIL) " "$tmp/mosq5.out" || fail mosq5 "the mosquitto 5.0 checks printed no result: $(tail -n 3 "$tmp/mosq5.out" | tr '\n' ' ')"
grep -q "^FAIL " "$tmp/mosq5.out" && failed=1

# ---- refusals, with the kernel's heap above baseline compared before and after
quiesce 15
heap0=$(rep above_req)
nref0=$(glog | grep -ac "refused\|timed out\|record error\|peer ended TLS")

mqtt_scenarios_refusals

quiesce 15
heap1=$(rep above_req)
nref1=$(glog | grep -ac "refused\|timed out\|record error\|peer ended TLS")
if [ "$(rep conns)" = 0 ] && [ -n "$heap0" ] && [ "$heap0" = "$heap1" ]; then
	pass no-leak "heap above baseline $heap0 -> $heap1 B, $((nref1 - nref0)) refusal log lines"
else fail no-leak "conns=$(rep conns) heap above baseline $heap0 -> $heap1"; fi
glog | grep -a "broker: core [0-9]*: dp: .*\(refused\|record error\|peer ended\)" | sed 's/^.*: dp: conn [0-9]*:\{0,1\} //' |
	sort | uniq -c | sed "s/^/$tag:   guest log /" | head -n 8

# ---- idle connections, each with one QoS 1 subscription
if [ "$n_idle" -gt 0 ]; then
mqtt_load_certs "$n_idle" "$tmp/load"
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
	# the machine's heap above the baseline over every core's connections, in allocator
	# blocks, plus the tables one connection slot costs (docs/ARCHITECTURE.md, Memory)
	req=$(($(rep above_req) / n_idle)) blk=$(($(rep above_blk) / n_idle)) slot=$(rep slot)
	idle=$((blk + slot))
	if [ "$idle" -le "$idle_budget_b" ]; then
		pass "idle-$n_idle" "kernel: $n_idle connections; $idle B per idle connection (budget $idle_budget_b B) = $slot B per connection slot + $blk B of heap blocks ($req B requested); connected in $(cut -d' ' -f3 "$tmp/idle.out") s"
	else
		fail "idle-$n_idle" "$idle B per idle connection, over the budget of $idle_budget_b B: $slot B per slot + $blk B of heap blocks ($req B requested)"
	fi
	say "guest: $line"
else fail "idle-$n_idle" "$(tail -n 2 "$tmp/idle.out" | tr '\n' ' ') est=$(rep est)"; fi
kill -KILL "$ip_" 2>/dev/null
wait "$ip_" 2>/dev/null
if quiesce 30; then
	heap2=$(rep above_req)
	[ "$heap2" = "$heap1" ] && pass idle-close "0 connections, heap above baseline $heap2 B" ||
		fail idle-close "heap above baseline $heap1 -> $heap2 B"
else fail idle-close "conns=$(rep conns) 30 s after the clients died"; fi
fi

if ! kill -0 "$qpid" 2>/dev/null; then
	fail guest-alive "the guest stopped during the run"
elif glog | grep -aq "PANIC\|panic\|exception"; then
	fail guest-alive "$(glog | grep -a -m1 "PANIC\|panic\|exception")"
fi
exit $failed
