#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# selftest.sh [OUTDIR [CERTDIR]]: proves the Linux+Mosquitto bench guest end to end. It owns
# one network namespace (lgself-<pid>) with one TAP device (lgtap0, 10.79.0.1/24), one guest
# and a scratch directory, and removes all of them on exit (trap), also after a failure or
# Ctrl-C; it must never touch another namespace or process.
# Steps: build.sh OUTDIR (cached), boot.sh (TCG here: 1 vCPU, 256M, guest stats every 1 s),
# then from the namespace: mosquitto_sub (dev-2) and mosquitto_pub (dev-1) with TLS 1.3
# client certificates, QoS 1, one message must arrive; a TLS 1.2 client must be refused;
# a client without a certificate must be refused; prints the boot time and Mosquitto's RSS
# in the guest. Exit 0 when all of it holds.
# Defaults: OUTDIR build/bench/linux-guest; CERTDIR build/bench/tree/dev/certs, or a
# scratch development PKI from tools/certs/mkcerts.sh when that does not exist.
# Needs root, qemu-system-x86_64, mosquitto-clients, openssl. Time here: ~20 s when built.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${1:-$repo/build/bench/linux-guest}
certs=${2:-$repo/build/bench/tree/dev/certs}
ns=lgself-$$
tap=lgtap0
scratch=$(mktemp -d "${TMPDIR:-/tmp}/lg-selftest.XXXXXX")
qpid=""
say() { echo "selftest: $*"; }
cleanup() {
	trap - EXIT INT TERM
	if [ -n "$qpid" ]; then
		kill -TERM "$qpid" 2>/dev/null
		for _ in $(seq 30); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$qpid" 2>/dev/null
	fi
	ip netns del "$ns" 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() { say "FAIL: $*"; [ -f "$scratch/guest.log" ] && tail -n 20 "$scratch/guest.log"; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root"
for t in qemu-system-x86_64 mosquitto_pub mosquitto_sub openssl ip; do
	command -v $t >/dev/null || fail "missing $t"
done
if [ ! -f "$certs/ca.crt" ]; then
	say "no $certs: a scratch development PKI (tools/certs/mkcerts.sh)"
	certs=$scratch/certs
	"$repo/tools/certs/mkcerts.sh" "$certs" 2 "urn:urmqtt:service:" >"$scratch/mkcerts.log" 2>&1 || fail "mkcerts.sh"
fi
"$here/build.sh" "$out" || fail "build.sh"

ip netns add "$ns" || fail "ip netns add"
ip netns exec "$ns" ip link set lo up
ip netns exec "$ns" ip tuntap add dev "$tap" mode tap || fail "ip tuntap add"
ip netns exec "$ns" ip addr add 10.79.0.1/24 dev "$tap"
ip netns exec "$ns" ip link set "$tap" up

r=$(LINUX_GUEST_STATS=1 "$here/boot.sh" "$out" "$certs" "$tap" "$ns" 1 256M "$scratch/guest.log") ||
	fail "boot.sh"
qpid=${r%% *}
boot_ms=${r##* }
say "guest up: QEMU pid $qpid, QEMU start -> Mosquitto accepting: $boot_ms ms"

in_ns() { ip netns exec "$ns" "$@"; }
tls=(-h 10.79.0.2 -p 8883 --cafile "$certs/ca.crt" --tls-version tlsv1.3)
msg="selftest $$ $(date +%s%N)"
in_ns timeout 90 mosquitto_sub "${tls[@]}" --cert "$certs/dev-2.crt" --key "$certs/dev-2.key" \
	-i dev-2 -t 'devices/+/telemetry' -q 1 -C 1 -v >"$scratch/sub.out" 2>&1 &
spid=$!
# the subscription is in place when Mosquitto has it: retry the publish until it arrives
got=0
for _ in $(seq 30); do
	sleep 1
	in_ns timeout 30 mosquitto_pub "${tls[@]}" --cert "$certs/dev-1.crt" --key "$certs/dev-1.key" \
		-i dev-1 -t devices/dev-1/telemetry -q 1 -m "$msg" || fail "mosquitto_pub (dev-1, TLS 1.3)"
	if grep -qF "$msg" "$scratch/sub.out"; then got=1; break; fi
	kill -0 $spid 2>/dev/null || break
done
wait $spid 2>/dev/null
[ $got = 1 ] || fail "the message did not arrive: $(cat "$scratch/sub.out")"
say "pub dev-1 -> sub dev-2 through the guest: $(head -n 1 "$scratch/sub.out")"

if echo | in_ns timeout 30 openssl s_client -connect 10.79.0.2:8883 -tls1_2 -CAfile "$certs/ca.crt" \
	-cert "$certs/dev-1.crt" -key "$certs/dev-1.key" >"$scratch/tls12.out" 2>&1 &&
	grep -q 'Protocol *: TLSv1.2' "$scratch/tls12.out" && ! grep -q alert "$scratch/tls12.out"; then
	fail "a TLS 1.2 client was accepted"
fi
say "TLS 1.2 client refused ($(grep -o 'alert [a-z ]*' "$scratch/tls12.out" | head -n 1))"
if in_ns timeout 30 mosquitto_pub "${tls[@]}" -i nocert -t x -m x >"$scratch/nocert.out" 2>&1; then
	fail "a client without a certificate could publish"
fi
say "client without a certificate refused"
sleep 1.5
say "guest: $(grep '^lg-stats' "$scratch/guest.log" | tail -n 1)"
say "PASS"
