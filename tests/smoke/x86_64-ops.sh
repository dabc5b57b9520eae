#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Operators' channels of the x86_64 image end to end (issue 21): boots BUILD_DIR/x86_64/
# urmqtt.elf on two cores with user-mode networking; tests/smoke/lib/ops-servers.py on the
# host's loopback (the guest's 10.0.2.2) is a syslog collector, a statsd server and three
# SNTP servers: two honest ones 300 s ahead of the host, one liar an hour ahead. The
# development knobs point the image at them (ops_syslog=, ops_statsd=, ntp_servers=,
# ntp_poll_s=3) and make core 0's heap hold ballast from 25 s to 33 s after boot
# (ballast_free_pct=5). Results:
#   x86_64-ops/sntp-step        two servers agree (the liar outvoted): the wall clock is
#                               stepped +300 s to them (the guest's lines), and syslog
#                               timestamps then read 300 s ahead of the host (within 3 s)
#   x86_64-ops/syslog-format    every datagram is one RFC 5424 message (PRI, version 1,
#                               timestamp, HOSTNAME urmqtt, APP-NAME urmqtt, PROCID the core,
#                               MSGID, structured data, ASCII text), lines from both cores
#   x86_64-ops/syslog-refusal   dev-1's certificate with client id dev-2 (CONNACK 5): its
#                               refusal reaches syslog with identity="dev-1" reason="identity";
#                               revoked-1's refused handshake with
#                               reason="certificate-revoked" peer="10.0.2.2"
#   x86_64-ops/statsd           datagrams of at most 1472 bytes, every line name:value|g or
#                               |c; totals and per-core lines; the full handshakes counted
#                               add up to at least the connections the test made
#   x86_64-ops/sys              ops reads the retained $SYS/urmqtt/health ("serving"),
#                               $SYS/broker/clients/connected and core 1's line
#                               $SYS/urmqtt/core/1; dev-1's SUBSCRIBE to $SYS/# gets 0x80
#   x86_64-ops/revoke-identity  ops publishes $CONTROL/urmqtt/revoke identity=dev-5 while
#                               dev-5 is connected and subscribed: its connection ends within
#                               1 s of the reply, and reconnecting gets certificate_revoked
#   x86_64-ops/revoke-serial    the same for dev-6 by its certificate's serial (the
#                               connection ends with the alert certificate_revoked)
#   x86_64-ops/console          unrevoke lets dev-5 in again; dev-1's command is refused (no
#                               console permission); loglevel set, read back and set again
#                               (its effect: unit/kernel/test_log); stats (with its
#                               droppers, none here: unit/dp/test_shard counts them after
#                               drops) and config answer;
#                               the commands are logged with the sender
#   x86_64-ops/revoked-after-reboot  three cores and a data disk: dev-7 revoked by identity
#                               and dev-8 by serial are stored, and after QEMU is killed and
#                               booted again on the disk both are refused with
#                               certificate_revoked (dev-9 connects); the image's own
#                               revoked-1 cannot be unrevoked
#   x86_64-ops/allowlist        the same machine, a blank disk, registry_allowlist=1: dev-1 is
#                               refused with access_denied (reason not-registered) until ops
#                               adds it (registry add); registry list and has answer; dev-2,
#                               connected, is removed: its connection ends within 1 s and
#                               reconnecting gets access_denied
#   x86_64-ops/allowlist-after-reboot  QEMU killed and booted again on that disk: dev-1 still
#                               connects, dev-2 and dev-3 are still refused
#   x86_64-ops/storage-figures  on that machine (ops_interval_s=1) the storage core's figures
#                               reach core 0: $SYS/urmqtt/storage/commits > 0 and a health
#   x86_64-ops/unsynced-refused with unsynced_certs=refuse, once no agreed time is followed
#                               (the 2 h jump above), dev-1's certificate gets access_denied
#                               and syslog says reason="clock-unsynchronised"
#   x86_64-ops/health-heap      the ballast turns the health "degraded (heap low)" and its
#                               release "serving" again, on the console and in syslog
#   x86_64-ops/sntp-refuse-far  the honest servers jump 2 h ahead: refused (more than
#                               ntp.max_step_s), and after four polls without an agreed time
#                               the health says "clock unsynchronised"
# X86_64_OPS_ARCH=aarch64 runs the same on BUILD_DIR/aarch64/urmqtt.img (qemu-system-aarch64
# -M virt, GICv3, -cpu max, TCG; tests/smoke/aarch64-ops.sh), X86_64_OPS_TAG names the results.
# Every wait is bounded; QEMU and the servers die on exit. Whole run: ~1 min on TCG (x86_64).
set -uo pipefail
build=${1:-build}
arch=${X86_64_OPS_ARCH:-x86_64}
img=$build/x86_64/urmqtt.elf
[ "$arch" = aarch64 ] && img=$build/aarch64/urmqtt.img
certs=$build/dev/certs
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
tag=${X86_64_OPS_TAG:-x86_64-ops}
logs=$build/test-logs/$tag
mkdir -p "$logs"
log=$logs/guest.log
tmp=$(mktemp -d /tmp/urmqtt-x86-ops.XXXXXX)
qpid=""
spid=""
failed=0

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}; see $log"; failed=1; }
say() { echo "$tag: $*"; }
cleanup() {
	trap - EXIT INT TERM
	[ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null
	if [ -n "$qpid" ]; then
		kill -TERM "$qpid" 2>/dev/null
		wait "$qpid" 2>/dev/null
	fi
	cp "$tmp"/*.jsonl "$logs/" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in qemu-system-$arch mosquitto_pub timeout openssl; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
[ -f "$img" ] && [ -f "$certs/ca.crt" ] || { fail setup "need $img and make certs"; exit 1; }
if [ "$arch" = aarch64 ]; then
	mode=tcg # an x86_64 host: aarch64 runs under TCG only
	machine=(qemu-system-aarch64 -M virt,gic-version=3 -cpu max)
else
	# shellcheck source=tools/accel/accel.sh
	. "$here/../../tools/accel/accel.sh"
	accel_select "$build" || { echo "FAIL $tag/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
	mode=$accel_mode
	machine=(qemu-system-x86_64 -M q35 "${accel[@]}")
fi

free_udp() { "$py" -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
p_sys=$(free_udp); p_sd=$(free_udp); p_n1=$(free_udp); p_n2=$(free_udp); p_n3=$(free_udp)
syslog=$tmp/syslog.jsonl
statsd=$tmp/statsd.jsonl
shift_file=$tmp/shift
"$py" "$here/lib/ops-servers.py" --syslog "$p_sys" "$syslog" --statsd "$p_sd" "$statsd" \
	--sntp "$p_n1" 300 --sntp "$p_n2" 300 --sntp "$p_n3" 3600 --liar "$p_n3" \
	--shift-file "$shift_file" --seconds 240 >"$tmp/servers.out" 2>&1 &
spid=$!
disown "$spid" # killed at exit, without the shell's job notice
for _ in $(seq 50); do grep -q ready "$tmp/servers.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$tmp/servers.out" || { fail setup "ops-servers.py did not start: $(cat "$tmp/servers.out")"; exit 1; }

glog() { tr -d '\r' <"$log" | tail -n "+${from_line:-1}"; } # from_line: only the lines after it
# Bounded wait (seconds $2) until the guest's log matches the extended regex $1.
wait_log() {
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		glog | grep -Eaq -- "$1" && return 0
		kill -0 "$qpid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
append="ops_syslog=10.0.2.2:$p_sys ops_statsd=10.0.2.2:$p_sd ntp_servers=10.0.2.2:$p_n1+10.0.2.2:$p_n2+10.0.2.2:$p_n3"
append+=" ntp_poll_s=3 unsynced_certs=refuse ballast_free_pct=5 ballast_at_s=25 ballast_hold_s=8"
: >"$log"
timeout 300 "${machine[@]}" -m 256M -smp 2 -display none -no-reboot -nodefaults \
	-serial stdio -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" \
	-device virtio-net-pci,netdev=n0,romfile= -kernel "$img" -append "$append" </dev/null >"$log" 2>&1 &
qpid=$!
if ! wait_log "DHCP lease: " 60 || ! wait_log "listening on TCP 8883" 5; then
	fail boot "no listening broker with a DHCP lease within 60 s"
	tail -n 20 "$log"
	exit 1
fi
say "$mode; syslog 127.0.0.1:$p_sys, statsd :$p_sd, SNTP :$p_n1 :$p_n2 (+300 s) :$p_n3 (+3600 s, the liar)"

# ---- sntp-step: the first agreed time steps the wall clock (+300 s, not the liar's hour)
if wait_log "wall clock stepped \\+[0-9.]+ s to the SNTP servers' time" 30; then
	agree=$(glog | grep -a "ntp: [0-9]* of [0-9]* servers agree on" | head -n 1)
	off_ms=$(sed -n 's/.*(+\([0-9]*\) ms from the wall clock).*/\1/p' <<<"$agree")
	if [ -n "$off_ms" ] && [ "$off_ms" -ge 297000 ] && [ "$off_ms" -le 303000 ] && grep -q " 2 of 3 servers" <<<"$agree"; then
		sntp_ok=1
	else
		fail sntp-step "agreement line: ${agree:-none}"
	fi
else
	fail sntp-step "no step to the SNTP servers' time within 30 s"
fi

# ---- clients: two that connect (telemetry at QoS 1), two refusals
tls=(-h 127.0.0.1 -p "$port" --cafile "$certs/ca.crt")
as() { echo --cert "$certs/$1.crt" --key "$certs/$1.key"; }
for id in dev-1 dev-3; do
	timeout 60 mosquitto_pub "${tls[@]}" $(as $id) -i $id -t "devices/$id/telemetry" -m hello -q 1 >"$tmp/pub-$id.out" 2>&1 ||
		fail clients "$id could not publish: $(tail -n 2 "$tmp/pub-$id.out")"
done
timeout 60 mosquitto_pub "${tls[@]}" $(as dev-1) -i dev-2 -t devices/dev-1/telemetry -m x -q 1 >"$tmp/pub-mismatch.out" 2>&1
timeout 60 mosquitto_pub "${tls[@]}" $(as revoked-1) -i revoked-1 -t devices/revoked-1/telemetry -m x -q 1 >"$tmp/pub-revoked.out" 2>&1
sleep 3

# ---- sys: $SYS readable by ops (retained, published every 10 s), refused to dev-1
client() { MQTT_CLIENT_TIMEOUT=30 timeout 60 "$py" "$here/lib/mqtt-client.py" 127.0.0.1 "$port" "$certs" "$@"; }
sys_health=$(client retained-get ops '$SYS/urmqtt/health')
sys_conn=$(client retained-get ops '$SYS/broker/clients/connected')
sys_core=$(client retained-get ops '$SYS/urmqtt/core/1')
sub_dev=$(client suback dev-1 '$SYS/#')
sub_ops=$(client suback ops '$SYS/#')
if [ "$sys_health" = "retained serving" ] && [[ $sys_conn =~ ^retained\ [0-9]+$ ]] &&
	[[ $sys_core == "retained connections="*" syslog.dropped="* ]] && [ "$sub_dev" = "suback 0x80" ] &&
	[ "$sub_ops" = "suback 0x00" ]; then
	pass sys "ops reads \$SYS/urmqtt/health '${sys_health#retained }', \$SYS/broker/clients/connected ${sys_conn#retained }, core 1's line; dev-1 ${sub_dev}"
else
	fail sys "health '$sys_health', clients/connected '$sys_conn', core/1 '${sys_core:0:60}', dev-1 '$sub_dev', ops '$sub_ops'"
fi

# ---- console and revocation at run time: dev-5 and dev-6 connected and subscribed (on
# whichever core the steering gives them); ops revokes dev-5 by identity and dev-6 by its
# certificate's serial; each connection ends within 1 s of the reply; reconnecting is
# refused with certificate_revoked; unrevoke lets dev-5 in again; a device is no console.
hold_bg() { # NAME OUT
	MQTT_CLIENT_TIMEOUT=30 timeout 60 "$py" "$here/lib/mqtt-client.py" 127.0.0.1 "$port" "$certs" hold "$1" 40 >"$2" 2>&1 &
}
revoke_case() { # NAME HOW ARG: HOW identity|serial
	local name=$1 how=$2 arg=$3 out=$tmp/hold-$1 i r t_reply t_closed
	hold_bg "$name" "$out"
	for ((i = 0; i < 100; i++)); do grep -q held "$out" 2>/dev/null && break; sleep 0.2; done
	grep -q held "$out" || { fail "revoke-$how" "$name could not connect: $(cat "$out")"; return; }
	r=$(client console ops revoke "$arg")
	for ((i = 0; i < 50; i++)); do grep -q "^closed\|^open" "$out" && break; sleep 0.2; done
	t_reply=$(awk '{print $2}' <<<"$r")
	t_closed=$(awk '/^closed/ {print $2}' "$out")
	if [[ $r != "reply "*" ok: revoke $how "* ]] || [ -z "$t_closed" ]; then
		fail "revoke-$how" "reply '$r'; $name: $(tail -n 1 "$out")"
		return
	fi
	local ms
	ms=$(awk -v a="$t_reply" -v b="$t_closed" 'BEGIN {printf "%d", (b - a) * 1000}')
	local again
	again=$(client refuse revoked "$name")
	if [ "$ms" -le 1000 ] && [[ $again == "refused alert certificate_revoked"* ]]; then
		pass "revoke-$how" "$name's connection ended ${ms} ms after ops's reply ($(tail -n 1 "$out" | cut -d' ' -f3-)); reconnecting: ${again#refused }"
	else
		fail "revoke-$how" "ended ${ms} ms after the reply (budget 1000), reconnecting: $again"
	fi
}
revoke_case dev-5 identity identity=dev-5
serial6=$(openssl x509 -in "$certs/dev-6.crt" -noout -serial | sed 's/^serial=//')
revoke_case dev-6 serial "serial=$serial6"
un=$(client console ops unrevoke identity=dev-5)
back=$(client connack dev-5 dev-5)
nocon=$(MQTT_CLIENT_TIMEOUT=5 timeout 20 "$py" "$here/lib/mqtt-client.py" 127.0.0.1 "$port" "$certs" console dev-1 revoke identity=dev-2 2>&1 | tail -n 1)
lv=$(client console ops loglevel debug)
lv_now=$(client console ops loglevel "")
lv_back=$(client console ops loglevel info)
stats=$(client console ops stats "")
conf=$(client console ops config "")
if [[ $un == "reply "*" ok: unrevoke identity dev-5"* ]] && [ "$back" = "connack 0" ] &&
	[[ $nocon != "reply "* ]] && grep -aq "console: ops: revoke identity dev-5" < <(glog) &&
	[[ $lv == *" loglevel debug" && $lv_now == *" loglevel debug" && $lv_back == *" loglevel info" ]] &&
	[[ $stats == *" core "*" connections="*" droppers (links/fair/queue): none" && $conf == *"profile=dev hostname=urmqtt"* ]]; then
	pass console "unrevoke let dev-5 in again (connack 0); dev-1 has no console; loglevel debug, read back, and info again; stats, config; every command logged with its sender"
else
	fail console "unrevoke '$un', dev-5 after it '$back', dev-1 as console '$nocon', loglevel '$lv' '$lv_now' '$lv_back', stats '${stats:0:60}', config '${conf:0:60}'"
fi

# ---- health-heap: the ballast (25 s .. 33 s after boot)
if wait_log "health: degraded \\(heap low" 60 && wait_log "ballast: released" 30 && sleep 3 &&
	glog | sed -n '/ballast: releasing/,$p' | grep -Eaq "health: serving"; then
	heap_ok=1
else
	fail health-heap "want health: degraded (heap low...) then serving after the ballast's release"
fi

# ---- sntp-refuse-far: the honest servers jump 2 h ahead (only lines logged after it count)
from_line=$(($(tr -d '\r' <"$log" | wc -l) + 1))
echo 7200 >"$shift_file"
if wait_log "ntp: 2 of 3 servers agree on .* \\+7[0-9]{3} s from the wall clock: more than ntp.max_step_s \\(600 s\\), refused" 20 &&
	wait_log "health: degraded \\(.*clock unsynchronised" 30; then
	pass sntp-refuse-far "$(glog | grep -a "more than ntp.max_step_s" | head -n 1 | sed 's/^.*ntp: //')"
else
	fail sntp-refuse-far "no refusal of the 2 h step followed by clock unsynchronised"
fi
# ntp.unsynced_certs = refuse (unsynced_certs=refuse): with no agreed time, a client
# certificate is refused with access_denied
if wait_log "ntp: client certificates REFUSED until SNTP's time is followed" 10 &&
	us=$(client refuse unsynced) && [[ $us == "refused alert access_denied"* ]]; then
	pass unsynced-refused "dev-1 ${us#refused }"
else
	fail unsynced-refused "want access_denied while the clock is unsynchronised: '${us:-no refusal line}'"
fi
from_line=1
# At least one more statsd flush (every 10 s: waited for, at most 15 s), then a second for the
# rest of that flush's datagrams and the last lines to syslog.
sd_before=$(wc -l <"$statsd" 2>/dev/null || echo 0)
for ((i = 0; i < 75; i++)); do
	[ "$(wc -l <"$statsd" 2>/dev/null || echo 0)" -gt "$sd_before" ] && break
	sleep 0.2
done
sleep 1
kill -TERM "$qpid" 2>/dev/null
wait "$qpid" 2>/dev/null
qpid=""

# ---- revoked-after-reboot: three cores (two data cores and the storage core) with a blank
# data disk; ops revokes dev-7 by identity and dev-8 by serial ("and stored"); QEMU is
# killed and booted again on the same disk: both are still refused with certificate_revoked
# and dev-9 still connects; the image's own revoked-1 cannot be unrevoked.
disk=$tmp/data.img
truncate -s 128M "$disk"
store_boot() { # N [APPEND]
	plog=$logs/guest-store-$1.log
	: >"$plog"
	"${machine[@]}" -m 256M -smp 3 -display none -no-reboot -nodefaults \
		-serial stdio -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" \
		-device virtio-net-pci,netdev=n0,romfile= -drive "file=$disk,if=none,id=d0,format=raw" \
		-device virtio-blk-pci,drive=d0 -kernel "$img" -append "ops_interval_s=1${2:+ $2}" </dev/null >"$plog" 2>&1 &
	qpid=$!
	local i
	for ((i = 0; i < 600; i++)); do
		if tr -d '\r' <"$plog" | grep -aqE 'store: .*restored [0-9]+ records' && grep -aq "DHCP lease: " "$plog" &&
			grep -aq "listening on TCP 8883" "$plog"; then
			return 0
		fi
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.2
	done
	return 1
}
store_kill() { kill -KILL "$qpid" 2>/dev/null; { wait "$qpid"; } 2>/dev/null; qpid=""; }
serial8=$(openssl x509 -in "$certs/dev-8.crt" -noout -serial | sed 's/^serial=//')
if ! store_boot 1; then
	fail revoked-after-reboot "no broker with storage within 120 s (first boot)"
else
	r7=$(client console ops revoke identity=dev-7)
	r8=$(client console ops revoke "serial=$serial8")
	rimg=$(client console ops unrevoke "serial=$(openssl x509 -in "$certs/revoked-1.crt" -noout -serial | sed 's/^serial=//')")
	sleep 2 # the records' commit (storage.batch_ms) long done
	commits=$(client retained-get ops '$SYS/urmqtt/storage/commits')
	store_health=$(client retained-get ops '$SYS/urmqtt/health')
	# the health may say a core went over its watchdog budget formatting the disk under TCG
	if [[ $commits =~ ^retained\ [1-9][0-9]*$ ]] && [[ $store_health =~ ^retained\ (serving|degraded\ \(.*\))$ ]]; then
		pass storage-figures "the storage core's figures reach core 0: \$SYS/urmqtt/storage/commits ${commits#retained }, health ${store_health#retained }"
	else
		fail storage-figures "\$SYS/urmqtt/storage/commits '$commits', health '$store_health'"
	fi
	store_kill
	if ! store_boot 2; then
		fail revoked-after-reboot "no broker with storage within 120 s (second boot)"
	else
		a7=$(client refuse revoked dev-7)
		a8=$(client refuse revoked dev-8)
		c9=$(client connack dev-9 dev-9)
		if [[ $r7 == *"ok: revoke identity dev-7 on 2 cores and stored"* && $r8 == *"ok: revoke serial "*" and stored"* &&
			$rimg == *"error: the image itself revokes this serial"* && $a7 == "refused alert certificate_revoked"* &&
			$a8 == "refused alert certificate_revoked"* && $c9 == "connack 0" ]]; then
			pass revoked-after-reboot "after the reboot: dev-7 (identity) ${a7#refused }; dev-8 (serial) ${a8#refused }; dev-9 connack 0"
		else
			fail revoked-after-reboot "replies '${r7#reply }' / '${r8#reply }' / '${rimg#reply }'; after the reboot dev-7 '$a7', dev-8 '$a8', dev-9 '$c9'"
		fi
	fi
	store_kill
fi

# ---- allowlist: the same machine on a blank disk with registry_allowlist=1 (as
# tls.registry_mode = "allowlist"): dev-1 is refused with access_denied until ops adds it;
# ops adds dev-1 and dev-2, lists the registry, removes dev-2 while it is connected (its
# connection ends within 1 s, reconnecting gets access_denied); after QEMU is killed and
# booted again on the disk, dev-1 still connects and dev-2 and dev-3 are still refused.
truncate -s 0 "$disk" && truncate -s 128M "$disk"
if ! store_boot allow-1 registry_allowlist=1; then
	fail allowlist "no broker with storage within 120 s (first boot)"
else
	u1=$(client refuse unregistered dev-1)
	ra1=$(client console ops registry "add identity=dev-1")
	ra2=$(client console ops registry "add identity=dev-2")
	c1=$(client connack dev-1 dev-1)
	rl=$(client console ops registry list)
	rh=$(client console ops registry "has identity=dev-3")
	out=$tmp/hold-allow-dev-2
	hold_bg dev-2 "$out"
	for ((i = 0; i < 100; i++)); do grep -q held "$out" 2>/dev/null && break; sleep 0.2; done
	rr=$(client console ops registry "remove identity=dev-2")
	for ((i = 0; i < 50; i++)); do grep -q "^closed\|^open" "$out" && break; sleep 0.2; done
	t_closed=$(awk '/^closed/ {print $2}' "$out")
	ms=$(awk -v a="$(awk '{print $2}' <<<"$rr")" -v b="${t_closed:-0}" 'BEGIN {printf "%d", (b - a) * 1000}')
	u2=$(client refuse unregistered dev-2)
	if [[ $u1 == "refused alert access_denied"* && $ra1 == *"ok: registry add identity dev-1 on 2 cores and stored"* &&
		$ra2 == *"ok: registry add identity dev-2 on 2 cores and stored"* && $c1 == "connack 0" &&
		$rl == *"registry: 2 identities (allowlist mode); 2 here: dev-1 dev-2"* &&
		$rh == *"registry: dev-3 is NOT in the registry"* &&
		$rr == *"ok: registry remove identity dev-2 on 2 cores and stored"* && -n $t_closed && $ms -le 1000 &&
		$u2 == "refused alert access_denied"* ]] && glog_store_refusal=$(tr -d '\r' <"$plog" | grep -a "handshake refused: not-registered" | head -n 1) &&
		[ -n "$glog_store_refusal" ]; then
		pass allowlist "dev-1 ${u1#refused } until added, then connack 0; list '${rl#reply * }'; dev-2 removed: its connection ended ${ms} ms after the reply, reconnecting ${u2#refused }"
	else
		fail allowlist "dev-1 before '$u1', adds '${ra1#reply }' / '${ra2#reply }', dev-1 after '$c1', list '$rl', has '$rh', remove '${rr#reply }' (closed ${t_closed:-never}, ${ms} ms), dev-2 after '$u2'"
	fi
	store_kill
	if ! store_boot allow-2 registry_allowlist=1; then
		fail allowlist-after-reboot "no broker with storage within 120 s (second boot)"
	else
		c1=$(client connack dev-1 dev-1)
		u2=$(client refuse unregistered dev-2)
		u3=$(client refuse unregistered dev-3)
		if [ "$c1" = "connack 0" ] && [[ $u2 == "refused alert access_denied"* && $u3 == "refused alert access_denied"* ]]; then
			pass allowlist-after-reboot "after the reboot: dev-1 connack 0 (restored), dev-2 ${u2#refused }, dev-3 ${u3#refused }"
		else
			fail allowlist-after-reboot "after the reboot: dev-1 '$c1', dev-2 '$u2', dev-3 '$u3'"
		fi
	fi
	store_kill
fi

# ---- the collectors' files, checked by one Python program; it prints "OK name detail" or
# "BAD name why" per result.
"$py" - "$syslog" "$statsd" >"$tmp/check.out" 2>&1 <<'EOF'
import json, re, sys
syslog = [json.loads(l) for l in open(sys.argv[1])]
statsd = [json.loads(l) for l in open(sys.argv[2])]

def parse(m):
    """RFC 5424 section 6, strictly: returns a dict or raises ValueError."""
    r = re.match(r"<(\d{1,3})>1 (\S+) (\S{1,255}) (\S{1,48}) (\S{1,128}) (\S{1,32}) ", m)
    if not r:
        raise ValueError("header")
    pri = int(r.group(1))
    if pri > 191:
        raise ValueError("PRI")
    ts = r.group(2)
    if ts != "-" and not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", ts):
        raise ValueError("timestamp " + ts)
    rest = m[r.end():]
    sd = {}
    if rest.startswith("-"):
        rest = rest[1:]
    else:
        while rest.startswith("["):
            i = 1
            sid = re.match(r"[^ =\]\"]+", rest[1:]).group(0)
            i += len(sid)
            while rest[i] == " ":
                pm = re.match(r" ([^ =\]\"]+)=\"", rest[i:])
                name = pm.group(1)
                i += pm.end()
                val = ""
                while rest[i] != '"':
                    if rest[i] == "\\" and rest[i + 1] in '"\\]':
                        i += 1
                    elif rest[i] in '"]':
                        raise ValueError("unescaped")
                    val += rest[i]
                    i += 1
                sd[name] = val
                i += 1
            if rest[i] != "]":
                raise ValueError("SD end")
            rest = rest[i + 1:]
            sd["_id"] = sid
    if rest and not rest.startswith(" "):
        raise ValueError("after SD")
    msg = rest[1:]
    if any(ord(c) < 32 or ord(c) > 126 for c in msg):
        raise ValueError("MSG bytes")
    return {"pri": pri, "ts": ts, "host": r.group(3), "app": r.group(4), "procid": r.group(5),
            "msgid": r.group(6), "sd": sd, "msg": msg}

from datetime import datetime, timezone
bad = []
parsed = []
for d in syslog:
    try:
        p = parse(d["data"])
        p["t"] = d["t"]
        parsed.append(p)
    except (ValueError, AttributeError, IndexError) as e:
        bad.append("%s: %r" % (e, d["data"][:120]))
cores = sorted({p["procid"] for p in parsed})
if not syslog:
    print("BAD syslog-format no datagram")
elif bad:
    print("BAD syslog-format %d of %d do not parse, the first: %s" % (len(bad), len(syslog), bad[0]))
elif any(p["host"] != "urmqtt" or p["app"] != "urmqtt" for p in parsed):
    print("BAD syslog-format HOSTNAME or APP-NAME not urmqtt")
elif "0" not in cores or "1" not in cores:
    print("BAD syslog-format lines from cores %s, want 0 and 1" % cores)
else:
    print("OK syslog-format %d messages, all RFC 5424, from cores %s" % (len(parsed), ",".join(cores)))
# timestamps after the step: 300 s ahead of the host
after = [p for p in parsed if "SNTP servers' time" in p["msg"]]
if after:
    t0 = after[0]["t"]
    later = [p for p in parsed if p["t"] > t0 + 1 and p["ts"] != "-"]
    d = [datetime.strptime(p["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp() - p["t"] for p in later]
    d = [x for x in d if x < 1000] # before the 2 h jump was refused: every line
    if d and all(297 <= x <= 303 for x in d):
        print("OK syslog-time %d later messages stamped %.1f..%.1f s ahead of the host" % (len(d), min(d), max(d)))
    else:
        print("BAD syslog-time offsets %s" % (sorted(d)[:3] + sorted(d)[-3:]))
else:
    print("BAD syslog-time the step line never reached syslog")
ref = [p for p in parsed if p["sd"].get("identity") == "dev-1" and p["sd"].get("reason") == "identity"]
rev = [p for p in parsed if p["sd"].get("peer") == "10.0.2.2" and "handshake refused" in p["msg"]
       and p["sd"].get("reason") == "certificate-revoked"]
if ref and rev and ref[0]["sd"].get("_id") == "refusal@32473":
    print("OK syslog-refusal identity=dev-1 reason=identity (%s); handshake refusal reason=%s peer=10.0.2.2"
          % (ref[0]["msg"][:60], rev[0]["sd"].get("reason")))
else:
    print("BAD syslog-refusal identity refusal %d, handshake refusal with peer %d" % (len(ref), len(rev)))
uns = [p for p in parsed if p["sd"].get("reason") == "clock-unsynchronised" and "handshake refused" in p["msg"]]
print(("OK" if uns else "BAD") + " unsynced-syslog %d handshake refusals with reason=clock-unsynchronised in syslog" % len(uns))
heap = [p for p in parsed if "health: degraded (heap low" in p["msg"]]
print(("OK" if heap else "BAD") + " syslog-health %d heap-low health lines in syslog" % len(heap))
# statsd
lines, big, badl = {}, 0, []
for d in statsd:
    data = d["data"]
    if len(data.encode("latin-1")) > 1472:
        big += 1
    for l in data.split("\n"):
        m = re.fullmatch(r"([A-Za-z0-9_.-]+):(\d+)\|(g|c)", l)
        if not m:
            badl.append(l)
            continue
        lines.setdefault(m.group(1), []).append((m.group(3), int(m.group(2))))
need = ["urmqtt.connections", "urmqtt.core0.connections", "urmqtt.core1.connections", "urmqtt.health",
        "urmqtt.handshakes.full", "urmqtt.messages.in.qos1", "urmqtt.heap.free", "urmqtt.clock.synced"]
missing = [n for n in need if n not in lines]
full = sum(v for k, v in lines.get("urmqtt.handshakes.full", []))
if not statsd or big or badl or missing:
    print("BAD statsd %d datagrams, %d too big, bad lines %s, missing %s" % (len(statsd), big, badl[:2], missing))
elif full < 2 or sum(v for k, v in lines["urmqtt.messages.in.qos1"]) < 2:
    print("BAD statsd full handshakes counted %d, QoS 1 messages %d (want >= 2)" %
          (full, sum(v for k, v in lines["urmqtt.messages.in.qos1"])))
else:
    print("OK statsd %d datagrams (largest %d B), %d names; handshakes.full %d, messages.in.qos1 %d" %
          (len(statsd), max(len(d["data"]) for d in statsd), len(lines), full,
           sum(v for k, v in lines["urmqtt.messages.in.qos1"])))
EOF
while read -r verdict name detail; do
	# syslog-time completes sntp-step (its guest-side half was checked above)
	[ "$name" = syslog-time ] && name=sntp-step
	case $verdict in
	OK) [ "$name" != sntp-step ] || [ "${sntp_ok:-0}" = 1 ] && pass "$name" "$detail" ;;
	BAD) fail "$name" "$detail" ;;
	*) fail check "$verdict $name $detail" ;;
	esac
done <"$tmp/check.out"
[ "${heap_ok:-0}" = 1 ] && pass health-heap "$(glog | grep -a "ballast: core 0" | head -n 1 | sed 's/^.*ballast: //')"
exit $failed
