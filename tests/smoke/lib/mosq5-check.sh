#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# MQTT 5.0 against the broker with the mosquitto command-line clients (Debian's
# mosquitto-clients 2.0.11, `-V mqttv5`, properties with -D, what arrived printed with -F).
# mTLS with the development certificates, the server certificate verified (IP SANs
# 127.0.0.1 and 10.79.0.2). One line per scenario, "PASS TAG/<name> (detail)" or
# "FAIL TAG/<name> (why)", each read from its own connections; every client runs under
# `timeout`, so the whole run ends by itself. The clients run in the caller's network
# namespace (hosted-mqtt.sh runs this script with `ip netns exec`). No retained message or
# kept session is left behind.
#   session-expiry-resume   dev-6 subscribes with clean start 0 and Session Expiry Interval
#                           4 s, leaves; a QoS 1 command for it is queued; back within the
#                           interval, it gets it
#   session-expiry-expired  it leaves again, a command is published, it comes back after
#                           6 s (> expiry + 2 s): the session expired, nothing delivered
#   user-properties         -D PUBLISH user-property (twice) and content-type reach a 5.0
#                           subscriber (-F %P, %C) in order
#   message-expiry          two QoS 1 commands queued for offline dev-7, Message Expiry
#                           Interval 2 s and 60 s; back after 4 s it gets the 60 s one only,
#                           its interval counted down (-F %E)
#   retained                a retained 5.0 message (user property, content type) reaches a
#                           late subscriber with RETAIN 1 and its properties
#   retain-as-published     a live retained message: RETAIN 1 for the subscriber with
#                           --retain-as-published, 0 for the one without
# Retain Handling is not in mosquitto_sub 2.0.11 (no option sets it; -R and --retained-only
# only filter what is printed): tests/smoke/lib/mqttjs5-check.mjs checks it (retain-handling).
# Usage: mosq5-check.sh HOST PORT CERTS [TAG]   (TAG: default mosq5)
set -uo pipefail
host=${1:?usage: mosq5-check.sh HOST PORT CERTS [TAG]}
port=${2:?} certs=${3:?} tag=${4:-mosq5}
exp_s=4 # Session Expiry Interval of session-expiry-*
tmp=$(mktemp -d /tmp/urmqtt-mosq5.XXXXXX)
nonce=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n') # this run's messages, never an older run's
bg_pids=()
failed=0

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}"; failed=1; }
cleanup() {
	trap - EXIT INT TERM
	for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
for t in mosquitto_sub mosquitto_pub timeout stdbuf od; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done

# m TOOL IDENTITY ARGS...: a 5.0 client as IDENTITY (its certificate), 20 s at most; its
# output line-buffered, so what it printed can be read while it runs.
m() {
	local tool=$1 who=$2
	shift 2
	timeout 20 stdbuf -oL "$tool" -h "$host" -p "$port" -V mqttv5 --cafile "$certs/ca.crt" \
		--cert "$certs/$who.crt" --key "$certs/$who.key" "$@"
}
# sub_bg OUT IDENTITY ARGS...: mosquitto_sub in the background (pid in sub_pid), its debug
# lines (-d) beside the messages; returns once its SUBACK came (10 s at most).
sub_bg() {
	local out=$1 who=$2
	shift 2
	m mosquitto_sub "$who" -d "$@" >"$out" 2>&1 &
	sub_pid=$!
	bg_pids+=("$sub_pid")
	for _ in $(seq 50); do
		grep -q "received SUBACK" "$out" && return 0
		kill -0 "$sub_pid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
# forget ID IDENTITY: a clean start with Session Expiry 0 drops whatever ID had kept.
forget() { m mosquitto_sub "$2" -i "$1" -t "devices/$2/cmd/none" -E >/dev/null 2>&1; }
oneline() { tr '\n' ' ' <"$1" | cut -c1-300; }

# ---- session expiry: kept for the interval, gone after it
forget dev-6 dev-6
m mosquitto_sub dev-6 -i dev-6 -c -x $exp_s -q 1 -t 'devices/dev-6/cmd/#' -E >"$tmp/se0.out" 2>&1
t0=$(date +%s%N)
m mosquitto_pub ops -i ops/m5-se -q 1 -t devices/dev-6/cmd/se -m "$nonce:kept" >"$tmp/se-pub1.out" 2>&1
m mosquitto_sub dev-6 -i dev-6 -c -x $exp_s -q 1 -t 'devices/dev-6/cmd/#' -C 1 -W 5 -F '%t %p' \
	>"$tmp/se1.out" 2>&1
back_ms=$((($(date +%s%N) - t0) / 1000000))
if grep -qx "devices/dev-6/cmd/se $nonce:kept" "$tmp/se1.out"; then
	pass session-expiry-resume "back within the ${exp_s} s Session Expiry Interval (left and back in $back_ms ms): the queued QoS 1 command delivered"
else fail session-expiry-resume "left and back in $back_ms ms, got: $(oneline "$tmp/se1.out") $(oneline "$tmp/se-pub1.out")"; fi
t0=$(date +%s%N)
m mosquitto_pub ops -i ops/m5-se -q 1 -t devices/dev-6/cmd/se -m "$nonce:stale" >"$tmp/se-pub2.out" 2>&1
sleep $((exp_s + 2))
m mosquitto_sub dev-6 -i dev-6 -c -x $exp_s -q 1 -t 'devices/dev-6/cmd/#' -C 1 -W 3 -F '%t %p' \
	>"$tmp/se2.out" 2>&1
gone_ms=$((($(date +%s%N) - t0) / 1000000))
if ! grep -q "^mosquitto_pub\|Error" "$tmp/se-pub2.out" && ! grep -q "$nonce" "$tmp/se2.out"; then
	pass session-expiry-expired "back $gone_ms ms after leaving (expiry ${exp_s} s): the session had expired, the command published meanwhile not delivered"
else fail session-expiry-expired "back $gone_ms ms after leaving (expiry ${exp_s} s), got: $(oneline "$tmp/se2.out") $(oneline "$tmp/se-pub2.out")"; fi
forget dev-6 dev-6

# ---- user properties (and a content type) through to a 5.0 subscriber
if sub_bg "$tmp/up.out" ops -i ops/m5-up -q 1 -t devices/dev-1/telemetry/up -C 1 -W 10 -F 'MSG|%t|%P|%C|%p'; then
	m mosquitto_pub dev-1 -i dev-1 -q 1 -t devices/dev-1/telemetry/up -m "$nonce:up" \
		-D PUBLISH user-property region eu-west -D PUBLISH user-property note "two words" \
		-D PUBLISH content-type text/plain >"$tmp/up-pub.out" 2>&1
	wait "$sub_pid"
fi
want="MSG|devices/dev-1/telemetry/up|region:eu-west note:two words|text/plain|$nonce:up"
if grep -qxF "$want" "$tmp/up.out"; then
	pass user-properties "-D PUBLISH user-property twice and content-type: '${want#MSG|}'"
else fail user-properties "want '$want', got: $(grep "^MSG" "$tmp/up.out" || oneline "$tmp/up.out")"; fi

# ---- message expiry while the subscriber is offline
forget dev-7 dev-7
m mosquitto_sub dev-7 -i dev-7 -c -x 60 -q 1 -t 'devices/dev-7/cmd/#' -E >"$tmp/me0.out" 2>&1
m mosquitto_pub ops -i ops/m5-me -q 1 -t devices/dev-7/cmd/short -m "$nonce:short" \
	-D PUBLISH message-expiry-interval 2 >"$tmp/me-pub.out" 2>&1
m mosquitto_pub ops -i ops/m5-me -q 1 -t devices/dev-7/cmd/long -m "$nonce:long" \
	-D PUBLISH message-expiry-interval 60 >>"$tmp/me-pub.out" 2>&1
sleep 4
m mosquitto_sub dev-7 -i dev-7 -c -x 60 -q 1 -t 'devices/dev-7/cmd/#' -C 2 -W 4 -F '%t %p %E' \
	>"$tmp/me1.out" 2>&1
left=$(sed -n "s|^devices/dev-7/cmd/long $nonce:long \([0-9]*\)$|\1|p" "$tmp/me1.out")
if [ "$(grep -c "$nonce" "$tmp/me1.out")" = 1 ] && [ -n "$left" ] && [ "$left" -ge 1 ] && [ "$left" -le 56 ]; then
	pass message-expiry "back after 4 s: the 2 s message expired, the 60 s one delivered with $left s left"
else fail message-expiry "got: $(oneline "$tmp/me1.out") $(oneline "$tmp/me-pub.out")"; fi
forget dev-7 dev-7

# ---- retained 5.0 messages, and Retain As Published
rt=devices/dev-9/telemetry/ret
m mosquitto_pub dev-9 -i dev-9 -q 1 -r -t $rt -m "$nonce:ret" -D PUBLISH user-property src mosq5 \
	-D PUBLISH content-type text/plain >"$tmp/rt-pub.out" 2>&1
ok_sub=0
sub_bg "$tmp/rap.out" ops -i ops/m5-rap -q 1 -t $rt --retain-as-published -C 2 -W 10 -F 'MSG|%r|%t|%P|%C|%p' &&
	sub_bg "$tmp/plain.out" ops -i ops/m5-plain -q 1 -t $rt -C 2 -W 10 -F 'MSG|%r|%p' && ok_sub=1
if [ $ok_sub = 1 ]; then
	m mosquitto_pub dev-9 -i dev-9 -q 1 -r -t $rt -m "$nonce:live" >>"$tmp/rt-pub.out" 2>&1
	for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null; done
fi
want="MSG|1|$rt|src:mosq5|text/plain|$nonce:ret"
if grep -qxF "$want" "$tmp/rap.out"; then
	pass retained "a late 5.0 subscriber: '${want#MSG|}' (RETAIN 1, user property and content type kept)"
else fail retained "want '$want', got: $(grep "^MSG" "$tmp/rap.out" || oneline "$tmp/rap.out") $(oneline "$tmp/rt-pub.out")"; fi
rap=$(sed -n "s/^MSG|\([01]\)|.*|$nonce:live$/\1/p" "$tmp/rap.out")
plain=$(sed -n "s/^MSG|\([01]\)|$nonce:live$/\1/p" "$tmp/plain.out")
if [ "$rap" = 1 ] && [ "$plain" = 0 ]; then
	pass retain-as-published "a live retained message: RETAIN 1 with --retain-as-published, 0 without"
else fail retain-as-published "RETAIN '$rap' with --retain-as-published, '$plain' without (want 1 and 0)"; fi
m mosquitto_pub dev-9 -i dev-9 -q 1 -r -t $rt -n >/dev/null 2>&1 # the retained message cleared again

exit $failed
