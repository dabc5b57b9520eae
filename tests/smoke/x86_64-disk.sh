#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The disk's lifecycle in the x86_64 image (issue 17): BUILD_DIR/x86_64/urmqtt.elf on QEMU
# q35 (KVM when a probe guest ran on it, TCG otherwise), 2 cores (a data core, the storage
# core), a raw sparse virtio-blk disk with discard=unmap, user-mode networking forwarding a
# free host port to the guest's 8883, QMP on a socket. Development knobs on the kernel
# command line (store_backup_first_s, store_checkpoint_pages, store_retention_s; the console
# prints them) stand in for the configuration's hours and days. Results:
#   x86_64-disk/roundtrip        urmqtt-disk format; the broker opens that disk (not a
#                                format of its own) and serves; inspect afterwards shows the
#                                regions and the broker's boot generation; verify OK
#   x86_64-disk/backup           the first backup completes on the console ("backup: slot A
#                                now holds the database")
#   x86_64-disk/checksum-row     a byte flipped inside a retained message's row on the
#                                database region: the next boot's check fails on that page
#                                with SQLite's checksum error (SQLITE_IOERR_DATA, 8202), not a
#                                wrong value
#   x86_64-disk/restore          that boot restores the backup (the console says from when),
#                                serves the retained value committed before the backup, and
#                                keeps the damaged copy (inspect: the other slot holds it)
#   x86_64-disk/scrub            a byte flipped inside backup slot A: the running broker's
#                                scrubber reports that page of backup A, at the LBA that holds it
#   x86_64-disk/grow-runtime     a 44 MiB disk (database region 2 MiB) made 96 MiB with QMP
#                                block_resize while serving: the console says the layout grew,
#                                at run time; then 4 MiB of retained messages are acknowledged and
#                                the database holds more pages than its first region could;
#                                no failed request, commit or scrub read on the console
#   x86_64-disk/grow-boot        the image file made 160 MiB while the machine is off: the next
#                                boot grows the layout, every retained message is still there,
#                                and 4 MiB more are acknowledged
#   x86_64-disk/discard          telemetry past store_retention_s is discarded: the sparse
#                                image's allocated size (du) shrinks; the log still recovers
#                                and verify passes
#   x86_64-disk/bounded-boot     bring-up on a 64 MiB and a 16 GiB sparse disk (format and
#                                reopen): the blocks read do not grow with the disk (budget:
#                                the 16 GiB disk reads at most 256 KiB more than the 64 MiB one)
# Every wait is bounded; QEMU and every client die on exit. ~3-4 min on TCG.
# X86_64_DISK_ONLY="lifecycle grow discard bounded" picks parts (default: all).
# Usage: x86_64-disk.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
img=$build/x86_64/urmqtt.elf
certs=$build/dev/certs
here=$(cd "$(dirname "$0")" && pwd)
helper=$here/lib/mqtt-client.py
disktool=$build/host/tools/urmqtt-disk
loadgen=$build/hostrel/tools/loadgen
tag=x86_64-disk
py=/usr/bin/python3
logs=$build/test-logs/$tag
mkdir -p "$logs"
rm -f "$logs"/guest-*.log
tmp=$(mktemp -d /tmp/urmqtt-x86-disk.XXXXXX)
qpid=""
console=""
failed=0
only=" ${X86_64_DISK_ONLY:-lifecycle grow discard bounded} "
want() { [[ $only == *" $1 "* ]]; }

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}${console:+; see $console}"; failed=1; }
say() { echo "$tag: $*"; }

cleanup() {
	trap - EXIT INT TERM
	if [ -n "$qpid" ]; then
		kill -KILL "$qpid" 2>/dev/null
		{ wait "$qpid"; } 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in qemu-system-x86_64 mosquitto_pub timeout du; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
for f in "$img" "$disktool" "$loadgen" "$certs/ca.crt"; do
	[ -e "$f" ] || { fail setup "missing $f"; exit 1; }
done
# shellcheck source=tools/accel/accel.sh
. "$here/../../tools/accel/accel.sh"
accel_select "$build" || { echo "FAIL $tag/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
say "$accel_mode, 2 cores, guest 8883 at 127.0.0.1:$port"

# boot NAME DISK [APPEND]: console in $logs/guest-NAME.log, QMP at $tmp/qmp.sock; 0 once the
# broker serves from the disk
boot() {
	console=$logs/guest-$1.log
	: >"$console"
	rm -f "$tmp/qmp.sock"
	qemu-system-x86_64 -M q35 "${accel[@]}" -m 256M -smp 2 -display none -no-reboot -nodefaults \
		-serial stdio -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:8883" \
		-device virtio-net-pci,netdev=n0,romfile= \
		-drive "file=$2,if=none,id=d0,format=raw,discard=unmap" -device virtio-blk-pci,drive=d0 \
		-qmp "unix:$tmp/qmp.sock,server=on,wait=off" -kernel "$img" -append "${3:-}" \
		</dev/null >"$console" 2>&1 &
	qpid=$!
	local i
	for ((i = 0; i < 600; i++)); do
		if tr -d '\r' <"$console" | grep -aqE "store: .*restored [0-9]+ records" &&
			grep -aq "DHCP lease: " "$console" && grep -aq "listening on TCP 8883" "$console"; then
			return 0
		fi
		kill -0 "$qpid" 2>/dev/null || break
		sleep 0.2
	done
	tail -n 5 "$console"
	return 1
}
# The image has no shutdown: every stop is a power cut to it.
kill_qemu() {
	[ -n "$qpid" ] || return 0
	kill -KILL "$qpid" 2>/dev/null
	{ wait "$qpid"; } 2>/dev/null
	qpid=""
}
# wait_console REGEX SECONDS: 0 once the console has a line matching REGEX (printed)
wait_console() {
	local i line
	for ((i = 0; i < $2 * 5; i++)); do
		if line=$(tr -d '\r' <"$console" | grep -aE "$1" | head -n 1) && [ -n "$line" ]; then
			echo "$line"
			return 0
		fi
		kill -0 "$qpid" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}
client() { MQTT_CLIENT_TIMEOUT=30 timeout 120 "$py" "$helper" 127.0.0.1 "$port" "$certs" "$@"; }
pub_retained() { # TOPIC PAYLOAD: as ops, QoS 1; 0 when PUBACKed
	timeout 60 mosquitto_pub -h 127.0.0.1 -p "$port" --cafile "$certs/ca.crt" --cert "$certs/ops.crt" \
		--key "$certs/ops.key" -i ops -q 1 -r -t "$1" -m "$2" -d 2>&1 | grep -q "received PUBACK"
}
# region IMAGE NAME: "first_byte end_byte" of region NAME (database, wal, telemetry,
# backup-a, backup-b) as urmqtt-disk inspect prints it
region() {
	"$disktool" inspect "$1" 2>/dev/null | awk -v n="region $2:" -v bs=512 '
		index($0, n) == 1 { split($4, r, "\\.\\."); print r[1] * bs, (r[2] + 1) * bs; exit }'
}
# flip IMAGE MARKER FROM END: invert the first byte of MARKER found in [FROM, END); prints the
# byte offset (nothing when MARKER is not there)
flip() {
	"$py" - "$@" <<'EOF'
import sys
path, marker, lo, hi = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), int(sys.argv[4])
with open(path, "r+b") as f:
    pos = lo
    while pos < hi:
        f.seek(pos)
        chunk = f.read(min(1 << 20, hi - pos) + len(marker))
        i = chunk.find(marker)
        if i >= 0 and pos + i < hi:
            f.seek(pos + i)
            f.write(bytes([chunk[i] ^ 0xFF]))
            print(pos + i)
            break
        pos += 1 << 20
EOF
}

# ---- roundtrip, backup, checksum-row, restore ---------------------------------------------
d1=$tmp/lifecycle.img
truncate -s 256M "$d1"
if ! want lifecycle; then
	:
elif ! "$disktool" format "$d1" >"$logs/format.log" 2>&1; then
	fail roundtrip "urmqtt-disk format failed: $(tail -n 1 "$logs/format.log")"
elif ! boot lifecycle-1 "$d1" "store_backup_first_s=2 store_checkpoint_pages=1"; then
	fail roundtrip "the broker did not serve from the formatted disk"
else
	opened=$(tr -d '\r' <"$console" | grep -aE "store: virtio-blk0: our disk; database opened and checked" | head -n 1)
	bk1="bk-one-$RANDOM$RANDOM"
	bk2="bk-two-$RANDOM$RANDOM"
	topic=devices/dev-1/cmd/backup-test
	pub_retained "$topic" "$bk1" || fail backup "the first retained value was not PUBACKed"
	if line=$(wait_console "store: backup: slot A now holds the database" 90); then
		pass backup "${line##*store: }"
	else
		fail backup "no completed backup within 90 s"
	fi
	pub_retained "$topic" "$bk2" || fail checksum-row "the second retained value was not PUBACKed"
	# The checkpoint after that commit (store_checkpoint_pages=1) copies its page into the
	# database region; the next commit, to other tables (a persistent session), starts the
	# WAL over, so a reboot reads the retained row's page from the region, not the WAL.
	sleep 3
	sub=$(client persist-sub dev-2 devices/dev-2/cmd/x)
	[ "$sub" = "connack 0 sp 0 suback 0x01" ] || fail checksum-row "persist-sub: $sub"
	sleep 3
	kill_qemu
	info=$("$disktool" inspect "$d1" 2>&1)
	if [ -n "$opened" ] && grep -q "^region database: " <<<"$info" && grep -q "boot generation 2" <<<"$info" &&
		"$disktool" verify "$d1" >"$logs/verify-1.log" 2>&1; then
		pass roundtrip "formatted by the tool, opened by the broker (${opened##*: our disk; }); inspect: $(grep -c '^region ' <<<"$info") regions, $(grep -m1 '^database: as SQLite' <<<"$info" | sed 's/.*reads it[^:]*: //'); verify OK"
	else
		fail roundtrip "opened='${opened:-}' / $(grep -m1 '^database: as' <<<"$info") / verify: $(tail -n 1 "$logs/verify-1.log")"
	fi
	read -r db_lo db_hi < <(region "$d1" database)
	at=$(flip "$d1" "$bk2" "${db_lo:-0}" "${db_hi:-0}")
	if [ -z "$at" ]; then
		fail checksum-row "the second value is not in the database region (${db_lo:-?}..${db_hi:-?}): no checkpoint?"
	elif ! boot lifecycle-2 "$d1"; then
		fail restore "the broker did not serve after the damage"
	else
		damage=$(tr -d '\r' <"$console" | grep -a "store: the damage quick_check found: " | head -n 1)
		restored=$(tr -d '\r' <"$console" | grep -aE "store: virtio-blk0: our disk; database damaged, RESTORED the backup of [-0-9T:Z]+ from slot A" | head -n 1)
		if [[ $damage == *"8202"* ]]; then
			pass checksum-row "byte $at flipped; ${damage##*store: }"
		else
			fail checksum-row "byte $at flipped; want the checksum error 8202, got '${damage:-no damage line}'"
		fi
		got=$(client retained-get ops "$topic")
		kill_qemu
		kept=$("$disktool" inspect "$d1" 2>&1 | grep -m1 "^backup B: ")
		if [ -n "$restored" ] && [ "$got" = "retained $bk1" ] && [[ $kept == *"database"* ]]; then
			pass restore "${restored##*store: }; retained '$bk1' served (the value before the backup); $kept"
		else
			fail restore "restored='${restored:-}' got='$got' (want $bk1) kept='$kept'"
		fi
		# The scrubber: a byte of the first value flipped inside backup slot A (the slot the
		# superblock names); the running broker reports that page with its place.
		read -r a_lo a_hi < <(region "$d1" backup-a)
		at=$(flip "$d1" "$bk1" "${a_lo:-0}" "${a_hi:-0}")
		if [ -z "$at" ]; then
			fail scrub "the first value is not in backup slot A (${a_lo:-?}..${a_hi:-?})"
		elif ! boot lifecycle-3 "$d1"; then
			fail scrub "the broker did not serve"
		elif line=$(wait_console "scrub: CORRUPT page [0-9]+ of backup A" 60); then
			page=$(sed -E 's/.*CORRUPT page ([0-9]+) of backup A \(LBA ([0-9]+)\).*/\1 \2/' <<<"$line")
			read -r pg lba <<<"$page"
			# the LBA it names holds the flipped byte: [lba * 512, lba * 512 + 4096)
			if [ -n "$lba" ] && [ "$at" -ge $((lba * 512)) ] && [ "$at" -lt $((lba * 512 + 4096)) ]; then
				pass scrub "byte $at flipped in backup A; ${line##*store: }"
			else
				fail scrub "byte $at flipped, but the report names another place: ${line##*store: }"
			fi
		else
			fail scrub "byte $at flipped in backup A: no scrub report within 60 s"
		fi
		kill_qemu
	fi
fi
kill_qemu

# ---- growth -------------------------------------------------------------------------------
# qmp COMMAND [JSON-ARGUMENTS]: one QMP command on the running machine; prints its answer
qmp() { timeout 20 "$py" "$(dirname "$0")/lib/qmp.py" "$tmp/qmp.sock" "$@"; }
# db_pages IMAGE: the database's pages as SQLite reads it (inspect)
db_pages() { "$disktool" inspect "$1" 2>/dev/null | sed -nE 's/^database: as SQLite reads it[^:]*: ([0-9]+) pages.*/\1/p'; }
d5=$tmp/grow.img
truncate -s 44M "$d5"
if ! want grow; then
	:
elif ! boot grow-1 "$d5"; then
	fail grow-runtime "the broker did not serve from a 44 MiB disk"
else
	keep="keep-$RANDOM$RANDOM"
	pub_retained devices/dev-1/cmd/grow-keep "$keep" || fail grow-runtime "the first retained value was not PUBACKed"
	read -r lo hi < <(region "$d5" database)
	old_mib=$(((${hi:-0} - ${lo:-0}) >> 20))
	ans=$(qmp block_resize '{"device": "d0", "size": 100663296}')
	if ! line=$(wait_console "store: the disk grew: .* \(at run time" 60); then
		fail grow-runtime "block_resize answered '$ans'; no growth on the console within 60 s"
	else
		fill=$(client retained-fill ops devices/dev-1/cmd/fill 64 65000)
		sleep 2
		kill_qemu
		pages=$(db_pages "$d5")
		# the growth must not disturb the storage service's own requests (they share the queue)
		bad=$(tr -d '\r' <"$console" | grep -aE 'store: FAILED|UNREADABLE|block read test.*FAIL|commit of .* failed' | head -n 1)
		if [[ $fill == "acked 64 of 64 "*complete ]] && [ -n "$pages" ] && [ $((pages * 4096)) -gt $((old_mib << 20)) ] && [ -z "$bad" ]; then
			pass grow-runtime "${line##*store: }; $fill; the database now $pages pages against its first region of $old_mib MiB"
		else
			fail grow-runtime "${line##*store: }; fill: $fill; database pages ${pages:-?} (first region $old_mib MiB)${bad:+; console: $bad}"
		fi
	fi
	kill_qemu
	truncate -s 160M "$d5"
	if ! boot grow-2 "$d5"; then
		fail grow-boot "the broker did not serve from the larger image"
	elif ! line=$(wait_console "store: the disk grew: " 5); then
		fail grow-boot "no growth line on the console"
	else
		n=$(client retained-count ops 'devices/dev-1/cmd/fill/#')
		got=$(client retained-get ops devices/dev-1/cmd/grow-keep)
		fill=$(client retained-fill ops devices/dev-1/cmd/fill2 64 65000)
		sleep 2
		kill_qemu
		pages=$(db_pages "$d5")
		if [ "$n" = "retained 64 bytes 4160000" ] && [ "$got" = "retained $keep" ] && [[ $fill == "acked 64 of 64 "*complete ]]; then
			pass grow-boot "${line##*store: }; $n kept; $fill; the database now ${pages:-?} pages"
		else
			fail grow-boot "${line##*store: }; count '$n' (want retained 64 bytes 4160000), keep '$got', fill '$fill'"
		fi
	fi
fi
kill_qemu

# ---- discard ------------------------------------------------------------------------------
d2=$tmp/discard.img
truncate -s 256M "$d2"
"$loadgen" mkcerts --cadir "$certs" --out "$tmp/devcerts" --n 4 >/dev/null 2>&1 || fail discard "loadgen mkcerts"
if ! want discard; then
	:
elif ! boot discard-1 "$d2" "store_retention_s=3 broker_report_ms=1000"; then
	fail discard "the broker did not serve"
else
	"$loadgen" telemetry --host 127.0.0.1 --port "$port" --ca "$certs/ca.crt" --devdir "$tmp/devcerts" \
		--pubs 4 --n 60000 --window 64 --rate 3200 --seconds 120 --out "$tmp/oracle" \
		>"$tmp/load.json" 2>"$logs/loadgen.log"
	sleep 2
	du1=$(du -k "$d2" | cut -f1)
	du2=$du1
	for ((i = 0; i < 45; i++)); do # retention: one segment per partition per second
		sleep 2
		du2=$(du -k "$d2" | cut -f1)
		[ $((du1 - du2)) -ge 4096 ] && break
	done
	expired=$(tr -d '\r' <"$console" | grep -a "store: telemetry appended" | tail -n 1 | grep -oE "expired=[0-9]+")
	kill_qemu
	if [ $((du1 - du2)) -lt 4096 ]; then
		fail discard "du $du1 KiB -> $du2 KiB: not 4 MiB smaller within 90 s ($expired; $(cat "$tmp/load.json" 2>/dev/null | head -c 200))"
	elif ! boot discard-2 "$d2"; then
		fail discard "du $du1 -> $du2 KiB, but the broker did not serve again"
	else
		rec=$(tr -d '\r' <"$console" | grep -a "store: telemetry log: " | head -n 1)
		kill_qemu
		if "$disktool" verify "$d2" >"$logs/verify-discard.log" 2>&1; then
			pass discard "du $((du1 / 1024)) MiB -> $((du2 / 1024)) MiB after retention ($expired); reboot: ${rec##*store: }; verify OK"
		else
			fail discard "du $du1 -> $du2 KiB; verify: $(tail -n 2 "$logs/verify-discard.log")"
		fi
	fi
fi
kill_qemu

# ---- bounded boot -------------------------------------------------------------------------
# bring_up NAME DISK: "KiB_read ms" of the bring-up line, both boots (format, reopen)
declare -A read_kib ms_up
want bounded && for size in 64M 16G; do
	d=$tmp/boot-$size.img
	truncate -s "$size" "$d"
	for b in format reopen; do
		if ! boot "bounded-$size-$b" "$d"; then
			fail bounded-boot "$size $b: the broker did not serve"
			continue
		fi
		line=$(tr -d '\r' <"$console" | grep -a "store: bring-up: " | head -n 1)
		kill_qemu
		read_kib[$size-$b]=$(sed -E 's/.*read ([0-9]+) KiB.*/\1/' <<<"$line")
		ms_up[$size-$b]=$(sed -E 's/.*bring-up: ([0-9]+) ms.*/\1/' <<<"$line")
	done
	rm -f "$d"
done
ok=1
for b in format reopen; do
	s=${read_kib[64M-$b]:-}
	l=${read_kib[16G-$b]:-}
	if [ -z "$s" ] || [ -z "$l" ] || [ "$l" -gt $((s + 256)) ]; then ok=0; fi
done
if ! want bounded; then
	:
elif [ $ok = 1 ]; then
	pass bounded-boot "read KiB 64 MiB/16 GiB: format ${read_kib[64M-format]}/${read_kib[16G-format]}, reopen ${read_kib[64M-reopen]}/${read_kib[16G-reopen]}; ms (TCG, not asserted): format ${ms_up[64M-format]}/${ms_up[16G-format]}, reopen ${ms_up[64M-reopen]}/${ms_up[16G-reopen]}"
else
	fail bounded-boot "read KiB 64M/16G: format ${read_kib[64M-format]:-?}/${read_kib[16G-format]:-?}, reopen ${read_kib[64M-reopen]:-?}/${read_kib[16G-reopen]:-?} (budget +256 KiB)"
fi
exit $failed
