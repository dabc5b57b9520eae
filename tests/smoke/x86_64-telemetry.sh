#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The telemetry log end to end in the x86_64 image: QEMU q35 (KVM when a probe guest ran on
# it, TCG otherwise), X86_64_TELEMETRY_SMP cores (default 3: two data cores and the storage
# core), a sparse 2 GiB virtio-blk disk, user-mode networking. Real clients (tools/loadgen
# telemetry: 8 device publishers, QoS 1, their PUBACKs counted in order as the oracle)
# offer X86_64_TELEMETRY_N records (default 1,000,000) to devices/load-i/telemetry; once
# X86_64_TELEMETRY_KILL_AT of them (default 90 %) were acknowledged, QEMU is SIGKILLed
# while the storage core is writing the log out. Each publisher keeps under the profile's
# rate limit (850/s against mqtt.rate_msgs_per_s 1000, a bucket of 32 so a stall is not
# followed by a burst; above the limit a QoS 1 PUBLISH is refused). Then:
#   x86_64-telemetry/load        records acknowledged before the kill, the rate
#   x86_64-telemetry/reboot      the image boots again on the disk: the log is recovered
#                                (its console line), the broker serves
#   x86_64-telemetry/read-back   urmqtt-disk telemetry (the offline reader) returns every
#                                acknowledged record: for each publisher, sequence numbers 1..acked
#                                (the payload carries them), each exactly once
#   x86_64-telemetry/query       the online query ($telemetry/query as ops, a reader in
#                                config/dev.conf) for one identity returns the same records, in
#                                the same order, as the offline reader for that identity
# Every wait is bounded; QEMU and every client die on exit.
# Usage: x86_64-telemetry.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
img=$build/x86_64/urmqtt.elf
certs=$build/dev/certs
loadgen=$build/hostrel/tools/loadgen
disktool=$build/host/tools/urmqtt-disk
here=$(cd "$(dirname "$0")" && pwd)
helper=$here/lib/mqtt-client.py
smp=${X86_64_TELEMETRY_SMP:-3}
total=${X86_64_TELEMETRY_N:-1000000}
kill_at=${X86_64_TELEMETRY_KILL_AT:-$((total * 9 / 10))}
pubs=8
query_limit=20000
tag=x86_64-telemetry
py=/usr/bin/python3
logs=$build/test-logs/$tag
mkdir -p "$logs"
tmp=$(mktemp -d /tmp/urmqtt-x86-tlog.XXXXXX)
qpid=""
lpid=""
failed=0
console=""

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}${console:+; see $console}"; failed=1; }
say() { echo "$tag: $*"; }

cleanup() {
	trap - EXIT INT TERM
	[ -n "$lpid" ] && kill -TERM "$lpid" 2>/dev/null
	[ -n "$qpid" ] && kill -KILL "$qpid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for f in "$img" "$loadgen" "$disktool" "$certs/ca.crt"; do
	[ -e "$f" ] || { fail setup "missing $f"; exit 1; }
done
# shellcheck source=tools/accel/accel.sh
. "$here/../../tools/accel/accel.sh"
accel_select "$build" || { echo "FAIL $tag/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
say "$accel_mode, $smp core(s), $total records offered, kill after $kill_at acknowledged"

disk=$tmp/disk.img
# 2 GiB: the telemetry region is a share of the disk, split into one ring per data core, and
# the flow hash may home all 8 publishers on one core. A 1 GiB disk gives each ring 123 MiB
# (about 850,000 of these records), so then the ring overwrote its oldest segment by design
# (retention by size) and read-back found the first records gone. With 2 GiB one ring holds
# every offered record.
truncate -s 2G "$disk"
"$loadgen" mkcerts --cadir "$certs" --out "$tmp/devcerts" --n "$pubs" >/dev/null 2>&1 ||
	{ fail setup "loadgen mkcerts"; exit 1; }

boot() { # N: boot number (console in $logs/guest-N.log); 0 once it serves
	console=$logs/guest-$1.log
	: >"$console"
	qemu-system-x86_64 -M q35 "${accel[@]}" -m 512M -smp "$smp" -display none -no-reboot -nodefaults \
		-serial stdio -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" \
		-device virtio-net-pci,netdev=n0,romfile= \
		-drive "file=$disk,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 \
		-kernel "$img" </dev/null >"$console" 2>&1 &
	qpid=$!
	local i
	for ((i = 0; i < 900; i++)); do
		if tr -d '\r' <"$console" | grep -aqE "store: .*restored [0-9]+ records" &&
			grep -aq "DHCP lease: " "$console"; then
			return 0
		fi
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.2
	done
	return 1
}
kill_qemu() {
	[ -n "$qpid" ] && kill -KILL "$qpid" 2>/dev/null
	{ wait "$qpid"; } 2>/dev/null
	qpid=""
}
acked_now() { awk '{s += $2} END {print s + 0}' "$tmp/oracle" 2>/dev/null || echo 0; }

# ---- the load, and the kill during it
if ! boot 1; then
	fail load "the image did not serve"
	exit 1
fi
t0=$(date +%s)
"$loadgen" telemetry --host 127.0.0.1 --port "$port" --ca "$certs/ca.crt" --devdir "$tmp/devcerts" \
	--pubs "$pubs" --n "$total" --window 64 --rate $((pubs * 850)) --seconds 900 --out "$tmp/oracle" \
	>"$tmp/load.json" 2>"$logs/loadgen.log" &
lpid=$!
for ((i = 0; i < 4500; i++)); do # at most 15 minutes
	[ "$(acked_now)" -ge "$kill_at" ] && break
	kill -0 "$lpid" 2>/dev/null || break
	sleep 0.2
done
kill_qemu
{ wait "$lpid"; } 2>/dev/null
lpid=""
t1=$(date +%s)
acked=$(acked_now)
if [ "$acked" -ge "$kill_at" ]; then
	pass load "$acked QoS 1 telemetry records acknowledged by 8 publishers in $((t1 - t0)) s, then SIGKILL"
else
	fail load "only $acked acknowledged ($(tail -n 1 "$tmp/load.json"))"
fi

# ---- the next boot recovers the log
if ! boot 2; then
	fail reboot "the image did not serve again on its disk"
	exit 1
fi
line=$(tr -d '\r' <"$console" | grep -a "store: telemetry log: " | head -n 1)
if [ -n "$line" ]; then pass reboot "${line##*store: }"; else fail reboot "no telemetry log line"; fi

# ---- the online query for one identity, while it runs
who=load-3
MQTT_CLIENT_TIMEOUT=120 timeout 300 "$py" "$helper" 127.0.0.1 "$port" "$certs" tquery ops \
	"id=t1;identity=$who;limit=$query_limit" >"$tmp/query.jsonl" 2>"$logs/query.log"
kill_qemu

# ---- the offline reader over the image
"$disktool" telemetry "$disk" >"$tmp/all.jsonl" 2>"$logs/reader.log"
"$py" - "$tmp/all.jsonl" "$tmp/oracle" "$tmp/query.jsonl" "$who" "$query_limit" >"$tmp/check.out" <<'PY'
import base64, json, struct, sys
all_path, oracle_path, query_path, who, limit = sys.argv[1:6]
limit = int(limit)
seen, order, bad = {}, [], 0
for line in open(all_path):
    d = json.loads(line)
    p = base64.b64decode(d["payload_b64"]) if "payload_b64" in d else d["payload"].encode()
    if len(p) < 16:
        bad += 1
        continue
    seq = struct.unpack("<Q", p[8:16])[0]
    seen.setdefault(d["identity"], []).append(seq)
acked = {l.split()[0]: int(l.split()[1]) for l in open(oracle_path) if l.strip()}
missing = dup = 0
first_missing = ""
for ident, n in acked.items():
    got = seen.get(ident, [])
    s = set(got)
    dup += len(got) - len(s)
    for k in range(1, n + 1):
        if k not in s:
            missing += 1
            first_missing = first_missing or "%s #%d" % (ident, k)
print("readback records=%d acked=%d missing=%d duplicates=%d bad=%d%s" % (
    sum(len(v) for v in seen.values()), sum(acked.values()), missing, dup, bad,
    (" first-missing " + first_missing) if missing else ""))
rows, end = [], {}
for line in open(query_path):
    d = json.loads(line)
    if "end" in d or "error" in d or "timeout" in d:
        end = d
        continue
    p = base64.b64decode(d["payload_b64"]) if "payload_b64" in d else d["payload"].encode()
    rows.append(struct.unpack("<Q", p[8:16])[0])
want = seen.get(who, [])[:limit]
diff = ""
if rows != want:
    i = next((k for k in range(min(len(rows), len(want))) if rows[k] != want[k]), min(len(rows), len(want)))
    diff = " first-difference at row %d: query %s, reader %s" % (i, rows[i:i + 3], want[i:i + 3])
print("query rows=%d want=%d same=%s end=%s%s" % (len(rows), len(want), rows == want, json.dumps(end), diff))
PY
cp "$tmp/oracle" "$tmp/query.jsonl" "$logs/" 2>/dev/null # for a failure's post-mortem
readback=$(sed -n 1p "$tmp/check.out")
query=$(sed -n 2p "$tmp/check.out")
console=""
if [[ $readback =~ missing=0\ duplicates=0\ bad=0 ]] && [ "$acked" -gt 0 ]; then
	pass read-back "$readback; $(tail -n 1 "$logs/reader.log" | sed 's/^urmqtt-disk: //')"
else
	fail read-back "${readback:-no result}; $(tail -n 1 "$logs/reader.log")"
fi
if [[ $query =~ same=True ]] && [[ $query =~ rows=([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -gt 0 ]; then
	pass query "$query"
else
	fail query "${query:-no result}"
fi
exit $failed
