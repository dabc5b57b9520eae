#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A fleet of three appliances behind one name, simulated (docs/SCALE-OUT.md, ADR-072 and
# ADR-073): three hosted brokers (build/hosted/urmqtt --broker), each on a TAP device of its
# own, all three TAPs in one network namespace (10.79.1.0/24, 10.79.2.0/24, 10.79.3.0/24;
# the brokers at .2), started with the same ring (--fleet-member a/b/c, the configuration's
# ring_key and vnodes) and each its own --fleet-self. The clients run in that namespace:
# tests/smoke/lib/fleet-sim.py (our own small MQTT 5.0 client over Python's ssl) with 300
# device identities made for the run (one key for the batch) and the service identity ops
# as the backend. Scenarios:
#   hosted-fleet/devices-at-home       300/300 devices end up connected to the appliance the
#                                      ring gives their identity (computed by the script)
#   hosted-fleet/redirect-5            a device that first reached another appliance got
#                                      CONNACK 0x9C with its home's host:port as Server
#                                      Reference, and only those did
#   hosted-fleet/telemetry-backend     the backend's plain subscription on every appliance got
#                                      each device's telemetry exactly once, from its home
#   hosted-fleet/telemetry-connector   a shared group of two connections per appliance (as a
#                                      Kafka Connect MQTT source connector's tasks subscribe)
#                                      got each message exactly once
#   hosted-fleet/command-to-each       a command the backend published on every appliance
#                                      reached each of the 300 devices exactly once
#   hosted-fleet/backend-connections   the backend's 9 service connections held throughout
#   hosted-fleet/provisioning-tool     urmqtt-config fleet-home (what provisions a 3.1.1
#                                      device's appliance name) gives the same homes
#   hosted-fleet/brokers               the brokers' own count of redirects equals what the
#                                      devices saw; every broker ends cleanly on SIGTERM
# Every wait is bounded (the simulation: FLEET_SIM_SECONDS, 75); the namespace and every
# process die on exit.
# Usage: hosted-fleet.sh BUILD_DIR   (HOSTED_FLEET_DEVICES=N changes the device count, 300)
set -uo pipefail
build=${1:-build}
bin=$build/hosted/urmqtt
certs=$build/dev/certs
ns=urmqtt-fleet-$$
n_dev=${HOSTED_FLEET_DEVICES:-300}
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/urmqtt-hosted-fleet.XXXXXX)
logs=$build/test-logs
mkdir -p "$logs"
names=(a b c)
# The configuration's [fleet] ring_key and vnodes (config/dev.conf): the brokers use them
# and the script computes the same homes.
conf=$build/gen/urmqtt_config.h
key=$(sed -n 's/^#define CONF_FLEET_RING_KEY "\([0-9a-fA-F]*\)"$/\1/p' "$conf" 2>/dev/null)
vnodes=$(sed -n 's/^#define CONF_FLEET_VNODES \([0-9]*\)u$/\1/p' "$conf" 2>/dev/null)
pids=()
failed=0

pass() { echo "PASS hosted-fleet/$1${2:+ ($2)}"; }
fail() { echo "FAIL hosted-fleet/$1${2:+ ($2)}"; failed=1; }
say() { echo "hosted-fleet: $*"; }
in_ns() { ip netns exec "$ns" "$@"; }

cleanup() {
	trap - EXIT INT TERM
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	ip netns del "$ns" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ "$(id -u)" != 0 ]; then echo "SKIP hosted-fleet/all (needs root: network namespaces)"; exit 0; fi
[ -x "$bin" ] && [ -f "$certs/ca.key" ] && [ -f "$certs/ops.crt" ] || { fail setup "need $bin and make certs"; exit 1; }
[ -n "$key" ] && [ -n "$vnodes" ] || { fail setup "no [fleet] ring_key/vnodes in $conf"; exit 1; }
"$py" -c 'import ssl, cryptography' 2>/dev/null || { fail setup "python3 ssl and python3-cryptography needed"; exit 1; }

ip netns add "$ns" || { fail setup "ip netns add"; exit 1; }
in_ns ip link set lo up
members=()
for i in 0 1 2; do
	members+=("${names[$i]}=10.79.$((i + 1)).2:8883")
done
ring=()
for m in "${members[@]}"; do ring+=(--fleet-member "$m"); done

t0=$(date +%s.%N)
for i in 0 1 2; do
	tap=fltap$i
	in_ns ip tuntap add dev "$tap" mode tap || { fail setup "tuntap"; exit 1; }
	in_ns ip addr add "10.79.$((i + 1)).1/24" dev "$tap"
	in_ns ip link set "$tap" up
	log=$logs/hosted-fleet-${names[$i]}.log
	# not through in_ns: $! must be the broker's pid (ip netns exec execs it) for SIGTERM
	ip netns exec "$ns" "$bin" --tap "$tap" --ip "10.79.$((i + 1)).2/24" --broker --broker-stats-ms 500 --stats-ms 0 \
		--max-conn $((n_dev + 64)) "${ring[@]}" --fleet-self "${names[$i]}" >"$log" 2>&1 &
	pids+=($!)
done
for i in 0 1 2; do
	log=$logs/hosted-fleet-${names[$i]}.log
	for _ in $(seq 50); do
		grep -q "^stats broker" "$log" && break
		kill -0 "${pids[$i]}" 2>/dev/null || break
		sleep 0.2
	done
	grep -q "^stats broker" "$log" || { fail setup "broker ${names[$i]} did not start"; tail -n 20 "$log"; exit 1; }
	grep -m1 "fleet appliance" "$log" | sed 's/^/hosted-fleet:   /'
	in_ns ping -c 1 -W 2 "10.79.$((i + 1)).2" >/dev/null 2>&1 # Linux learns the MAC once
done

timeout 120 ip netns exec "$ns" "$py" "$(dirname "$0")/lib/fleet-sim.py" "$certs" "$tmp" "$n_dev" 25 "$key" \
	"$vnodes" "${members[@]}" >"$tmp/sim.out" 2>&1
sim_rc=$?
sed 's/^/hosted-fleet:   /' "$tmp/sim.out" | grep -v "^hosted-fleet:   result "
while read -r _ name verdict detail; do
	if [ "$verdict" = ok ]; then pass "$name" "$detail"; else fail "$name" "$detail"; fi
done < <(grep "^result " "$tmp/sim.out")
grep -q "^result " "$tmp/sim.out" || fail simulation "exit $sim_rc, no result: $(tail -n 3 "$tmp/sim.out" | tr '\n' ' ')"

# Provisioning a 3.1.1 device: urmqtt-config fleet-home gives, from a configuration with the
# same ring, the appliance each device ended at.
tool=$build/host/tools/urmqtt-config
if [ -x "$tool" ] && [ -s "$tmp/homes.txt" ]; then
	{
		echo "[fleet]"
		printf 'members = [%s]\n' "$(printf '"%s", ' "${members[@]}" | sed 's/, $//')"
		printf 'self = "a"\nring_key = "%s"\nvnodes = %s\n' "$key" "$vnodes"
	} >"$tmp/fleet.conf"
	"$tool" fleet-home "$tmp/fleet.conf" $(seq -f 'fleet-%g' "$n_dev") 2>&1 | awk '{ print $1, $2 }' | sort >"$tmp/tool.txt"
	if [ "$(sort "$tmp/homes.txt")" = "$(cat "$tmp/tool.txt")" ] && [ "$(wc -l <"$tmp/tool.txt")" = "$n_dev" ]; then
		pass provisioning-tool "urmqtt-config fleet-home names the appliance each of the $n_dev devices ended at"
	else
		fail provisioning-tool "urmqtt-config fleet-home differs: $(diff <(sort "$tmp/homes.txt") "$tmp/tool.txt" | head -n 3 | tr '\n' ' ')"
	fi
else
	fail provisioning-tool "need $tool and the simulation's homes"
fi

# The brokers' own count of redirects (their last stats line) against the devices' count.
sleep 0.7
total=0
for i in 0 1 2; do
	n=$(grep "^stats dp " "$logs/hosted-fleet-${names[$i]}.log" | tail -n 1 | sed -n 's/.* redirected=\([0-9]*\).*/\1/p')
	say "appliance ${names[$i]}: redirected=${n:-?}"
	total=$((total + ${n:-0}))
done
seen=$(sed -n 's/^figure redirected //p' "$tmp/sim.out")
ends=0
for i in 0 1 2; do
	kill -TERM "${pids[$i]}" 2>/dev/null
	for _ in $(seq 50); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.2; done
	wait "${pids[$i]}" 2>/dev/null && grep -q "broker heap empty at exit" "$logs/hosted-fleet-${names[$i]}.log" &&
		ends=$((ends + 1))
done
pids=()
bad_log=$(grep -l "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$logs"/hosted-fleet-?.log 2>/dev/null)
if [ -n "$seen" ] && [ "$total" = "$seen" ] && [ "$ends" = 3 ] && [ -z "$bad_log" ]; then
	pass brokers "redirects counted by the brokers $total = seen by the devices $seen; 3 clean exits (exit 0, heap empty)"
else
	fail brokers "brokers counted $total, devices saw ${seen:-?}; clean exits $ends/3 ${bad_log:+sanitizer report in $bad_log}"
fi
say "run time $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
exit $failed
