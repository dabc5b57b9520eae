#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The diagnostics mode (issue 20; kernel/diag/): BUILD_DIR/x86_64/urmqtt.elf booted with
# urmqtt.mode=diag (and the development knob diag_wipe_s=4: a 4 s WIPE prompt) on QEMU q35,
# 2 CPUs, a virtio-net (user networking) and a 64 MiB raw virtio-blk disk with a GPT made by
# sfdisk: partition 1 at LBA 2048 (8 MiB), partition 2 at LBA 83968 (16 MiB), both filled
# with random bytes, so the largest unallocated run is LBA 18432..83967. The console is the
# serial port on stdio, its input a FIFO the test writes into. Results:
#   x86_64-diag/json          the console's one DIAG-JSON-BEGIN ... DIAG-JSON-END line parses
#                             (python3 json) and is sane: cpu count >= 1, memory > 0, the net
#                             device's MAC is QEMU's, the disk's capacity is the attached
#                             disk's, its GPT valid with 2 partitions and the free run the
#                             test computed, memory copy, disk read and every crypto rate > 0;
#                             its "limits" are the [diag] values of the configuration the image
#                             was built with (BUILD_DIR/gen/urmqtt_config.h), the WIPE prompt
#                             the knob's 4 s, and the disk read exactly min(disk, read limit)
#   x86_64-diag/no-write      nothing typed: the prompt times out, the JSON says skipped, the
#                             machine powers off by itself (ACPI S5; PSCI on Arm) and the disk's sha256 is
#                             unchanged
#   x86_64-diag/not-wipe      "wipe" (lower case) typed: skipped ("not WIPE"), sha256 unchanged
#   x86_64-diag/no-gpt        (x86_64 only) a 32 MiB disk with data but no partition table, WIPE
#                             typed at once anyway: no prompt, the JSON says skipped (no valid
#                             GPT), the disk's sha256 unchanged; booted without the knob, so
#                             the JSON's limits.wipe_prompt_s is the configured diag.wipe_prompt_s
#   x86_64-diag/wipe          WIPE typed: the JSON says written and verified, at the start of
#                             the free run; the bytes written are exactly that run's first
#                             write.bytes (exactly min(free run, diag.disk_write_mb)), they
#                             changed, and every other byte of the disk (both partitions, both
#                             GPT copies) is identical to before
# Every wait is bounded (90 s per boot); QEMU dies on exit. ~20 s on TCG.
# X86_64_DIAG_ARCH=aarch64 runs the same on BUILD_DIR/aarch64/urmqtt.img (qemu-system-aarch64
# -M virt, GICv3, -cpu max, TCG; the PL011 console; PSCI SYSTEM_OFF) as aarch64-diag/*
# (tests/smoke/aarch64-diag.sh).
# Usage: x86_64-diag.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
arch=${X86_64_DIAG_ARCH:-x86_64}
here=$(cd "$(dirname "$0")" && pwd)
tag=$arch-diag
if [ "$arch" = aarch64 ]; then
	img=$build/aarch64/urmqtt.img
	off_line="diagnostics done: powering off (PSCI SYSTEM_OFF)"
else
	img=$build/x86_64/urmqtt.elf
	off_line="powering off (ACPI S5)"
fi
py=/usr/bin/python3
conf_h=$build/gen/urmqtt_config.h
logs=$build/test-logs/$tag
mkdir -p "$logs"
rm -f "$logs"/guest-*.log
tmp=$(mktemp -d /tmp/urmqtt-x86-diag.XXXXXX)
qpid=""
console=""
failed=0

pass() { echo "PASS $tag/$1${2:+ ($2)}"; }
fail() { echo "FAIL $tag/$1${2:+ ($2)}${console:+; see $console}"; failed=1; }
say() { echo "$tag: $*"; }

cleanup() {
	trap - EXIT INT TERM
	exec 3>&- 2>/dev/null
	if [ -n "$qpid" ]; then
		kill -KILL "$qpid" 2>/dev/null
		{ wait "$qpid"; } 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for t in qemu-system-$arch timeout sha256sum /usr/sbin/sfdisk "$py"; do
	command -v $t >/dev/null || { fail setup "$t missing"; exit 1; }
done
[ -e "$img" ] || { fail setup "missing $img"; exit 1; }
# The [diag] bounds the image was built with, as the JSON's "limits" must give them (bytes).
limits=$("$py" - "$conf_h" <<'PY'
import json, re, sys
c = dict(re.findall(r"^#define (CONF_DIAG_[A-Z_]+) ([0-9]+)u", open(sys.argv[1]).read(), re.M))
print(json.dumps({"measure_ms": int(c["CONF_DIAG_MEASURE_MS"]),
                  "memory_buffer_bytes": int(c["CONF_DIAG_MEMORY_BUFFER_KB"]) << 10,
                  "disk_read_bytes": int(c["CONF_DIAG_DISK_READ_MB"]) << 20,
                  "disk_write_bytes": int(c["CONF_DIAG_DISK_WRITE_MB"]) << 20,
                  "disk_chunk_bytes": int(c["CONF_DIAG_DISK_CHUNK_KB"]) << 10,
                  "wipe_prompt_s": int(c["CONF_DIAG_WIPE_PROMPT_S"])}, sort_keys=True))
PY
) || { fail setup "no [diag] constants in $conf_h"; exit 1; }
say "configured limits $limits"

if [ "$arch" = aarch64 ]; then
	accel_mode=tcg # an x86_64 host: aarch64 runs under TCG only
	machine=(qemu-system-aarch64 -M virt,gic-version=3 -cpu max)
	cpu_arch=aarch64
else
	# shellcheck source=tools/accel/accel.sh
	. "$here/../../tools/accel/accel.sh"
	accel_select "$build" || { echo "FAIL $tag/accelerator (URMQTT_ACCEL=${URMQTT_ACCEL:-})"; exit 1; }
	machine=(qemu-system-x86_64 -M q35 "${accel[@]}")
	cpu_arch=x86_64
fi

# The disk: GPT, two partitions of random bytes, the rest zero.
disk=$tmp/disk.img
truncate -s 64M "$disk"
printf 'label: gpt\nstart=2048, size=16384, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\nstart=83968, size=32768, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\n' |
	/usr/sbin/sfdisk -q "$disk" >/dev/null 2>&1 || { fail setup "sfdisk"; exit 1; }
dd if=/dev/urandom of="$disk" bs=512 seek=2048 count=16384 conv=notrunc status=none
dd if=/dev/urandom of="$disk" bs=512 seek=83968 count=32768 conv=notrunc status=none
free_first=18432
free_blocks=$((83968 - 18432))
cp "$disk" "$tmp/before.img"
sum_before=$(sha256sum <"$disk" | cut -d' ' -f1)
say "$accel_mode; disk 64 MiB, free run LBA $free_first + $free_blocks"

# boot NAME [TYPE [now]]: console in $logs/guest-NAME.log; TYPE is written to the serial
# input once the prompt shows (with "now": at once, prompt or not). 0 once QEMU exited by
# itself (powered off) within the bound. The command line is $append.
append="urmqtt.mode=diag diag_wipe_s=4"
boot() {
	console=$logs/guest-$1.log
	: >"$console"
	rm -f "$tmp/in"
	mkfifo "$tmp/in"
	exec 3<>"$tmp/in"
	nice -n 19 "${machine[@]}" -m 256M -smp 2 -display none -no-reboot -nodefaults \
		-serial stdio -netdev user,id=n0 -device virtio-net-pci,netdev=n0,romfile= \
		-drive "file=$disk,if=none,id=d0,format=raw" -device virtio-blk-pci,drive=d0 \
		-kernel "$img" -append "$append" <&3 >"$console" 2>&1 &
	qpid=$!
	local i typed=0
	if [ "${3:-}" = now ]; then
		printf '%s\r' "$2" >&3
		typed=1
	fi
	for ((i = 0; i < 450; i++)); do
		if [ -n "${2:-}" ] && [ $typed = 0 ] && grep -aq "WIPE? " "$console"; then
			printf '%s\r' "$2" >&3
			typed=1
		fi
		if ! kill -0 "$qpid" 2>/dev/null; then
			wait "$qpid"
			local rc=$?
			qpid=""
			exec 3>&-
			[ $rc = 0 ] && grep -aqF "$off_line" "$console" && return 0
			say "QEMU exited with $rc"
			return 1
		fi
		sleep 0.2
	done
	say "no power-off within 90 s"
	tail -n 5 "$console"
	kill -KILL "$qpid" 2>/dev/null
	{ wait "$qpid"; } 2>/dev/null
	qpid=""
	exec 3>&-
	return 1
}

# json NAME: the console's JSON object into $tmp/NAME.json (exactly one marked line).
json() {
	local n
	n=$(tr -d '\r' <"$console" | grep -ac '^DIAG-JSON-BEGIN .* DIAG-JSON-END$')
	[ "$n" = 1 ] || { say "$n JSON lines"; return 1; }
	tr -d '\r' <"$console" | grep -a '^DIAG-JSON-BEGIN ' | sed -e 's/^DIAG-JSON-BEGIN //' -e 's/ DIAG-JSON-END$//' \
		>"$tmp/$1.json"
}

# ---- nothing typed ----
if boot none && json none; then
	if out=$("$py" - "$tmp/none.json" "$free_first" "$free_blocks" "$cpu_arch" "$limits" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ff, fb = int(sys.argv[2]), int(sys.argv[3])
lim = dict(json.loads(sys.argv[5]), wipe_prompt_s=4) # the knob on the command line
errs = []
def want(c, what):
    if not c: errs.append(what)
want(j.get("limits") == lim, "limits %r, configured %r" % (j.get("limits"), lim))
want(j["cpu"]["count"] >= 1, "cpu count")
want(j["cpu"]["arch"] == sys.argv[4] and j["cpu"]["vendor"], "cpu vendor")
want(isinstance(j["cpu"]["features"], list), "features")
want(j["memory"]["total_bytes"] > 0 and j["memory"]["free_bytes"] > 0, "memory")
want(j["memory"]["copy_mb_s"] > 0, "memory copy")
want(any(p["kind"] == "virtio-blk" for p in j["pci"]) and any(p["kind"] == "virtio-net" for p in j["pci"]), "pci")
want(len(j["net"]) == 1 and j["net"][0]["mac"] == "52:54:00:12:34:56" and j["net"][0]["queue_pairs_used"] >= 1, "net")
want(len(j["disks"]) == 1, "one disk")
d = j["disks"][0]
want(d["capacity_bytes"] == 64 << 20 and d["block_size"] == 512 and d["blocks"] == 131072, "capacity")
want(d["read_only"] is False and d["read_bytes"] > 0 and d["read_mb_s"] > 0 and d["read_error"] == "", "disk read")
want(d["read_bytes"] == min(d["capacity_bytes"], lim["disk_read_bytes"]), "read %s bytes" % d["read_bytes"])
want(d["gpt"] == "valid" and d["partitions"] == 2, "gpt")
want(d["free_first_lba"] == ff and d["free_blocks"] == fb, "free run %s+%s" % (d["free_first_lba"], d["free_blocks"]))
want(d["write"]["done"] is False and d["write"]["bytes"] == 0, "no write")
c = j["crypto"]
want(c["ok"] is True, "crypto ok")
for k in ("ecdsa_p256_sign_per_s", "ecdsa_p256_verify_per_s", "x25519_per_s", "aes_128_gcm_mb_s", "sha256_mb_s"):
    want(c[k] > 0, k)
want(j["wipe"]["asked"] is True and j["wipe"]["result"] == "skipped: no answer in time", "wipe skipped")
print("; ".join(errs) if errs else "limits as configured; sign %s/s, verify %s/s, X25519 %s/s, GCM %s MB/s, SHA-256 %s MB/s, copy %s MB/s, read %s MB/s" % (
    c["ecdsa_p256_sign_per_s"], c["ecdsa_p256_verify_per_s"], c["x25519_per_s"], c["aes_128_gcm_mb_s"],
    c["sha256_mb_s"], j["memory"]["copy_mb_s"], d["read_mb_s"]))
sys.exit(1 if errs else 0)
PY
	); then
		pass json "$out"
	else
		fail json "$out"
	fi
	sum=$(sha256sum <"$disk" | cut -d' ' -f1)
	if [ "$sum" = "$sum_before" ]; then pass no-write "sha256 unchanged"; else fail no-write "disk changed"; fi
else
	fail json "no report"
	fail no-write "no report"
fi

# ---- something else typed ----
if boot not-wipe wipe && json not-wipe &&
	"$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(0 if j["wipe"]["result"]=="skipped: not WIPE" and not j["disks"][0]["write"]["done"] else 1)' "$tmp/not-wipe.json"; then
	sum=$(sha256sum <"$disk" | cut -d' ' -f1)
	if [ "$sum" = "$sum_before" ]; then pass not-wipe "skipped, sha256 unchanged"; else fail not-wipe "disk changed"; fi
else
	fail not-wipe "no power-off, no JSON or not skipped"
fi

# ---- a disk without a GPT: never written, not even asked; WIPE is typed anyway ----
if [ "$arch" = x86_64 ]; then
	cp "$disk" "$tmp/gpt.img"
	rm -f "$disk"
	truncate -s 32M "$disk"
	dd if=/dev/urandom of="$disk" bs=512 seek=4096 count=2048 conv=notrunc status=none # data, no table
	sum_blank=$(sha256sum <"$disk" | cut -d' ' -f1)
	append="urmqtt.mode=diag" # no knob: the configured prompt (never shown: nothing to write)
	if boot no-gpt WIPE now && json no-gpt &&
		"$py" -c 'import json,sys; j=json.load(open(sys.argv[1])); d=j["disks"][0]; sys.exit(0 if j["wipe"]=={"asked":False,"result":"skipped: no disk with unallocated space in a valid GPT"} and d["capacity_bytes"]==32<<20 and d["gpt"]!="valid" and d["free_blocks"]==0 and not d["write"]["done"] and j["limits"]==json.loads(sys.argv[2]) else 1)' "$tmp/no-gpt.json" "$limits" &&
		! grep -aq "WIPE? " "$console"; then
		sum=$(sha256sum <"$disk" | cut -d' ' -f1)
		if [ "$sum" = "$sum_blank" ]; then pass no-gpt "not asked, limits as configured, sha256 unchanged"; else fail no-gpt "disk changed"; fi
	else
		fail no-gpt "no power-off, no JSON, asked, limits not as configured, or not skipped"
	fi
	append="urmqtt.mode=diag diag_wipe_s=4"
	mv "$tmp/gpt.img" "$disk"
fi

# ---- WIPE typed ----
if boot wipe WIPE && json wipe; then
	if out=$("$py" - "$tmp/wipe.json" "$tmp/before.img" "$disk" "$free_first" "$free_blocks" "$limits" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ff, fb = int(sys.argv[4]), int(sys.argv[5])
wmax = json.loads(sys.argv[6])["disk_write_bytes"]
d = j["disks"][0]
w = d["write"]
errs = []
if j["wipe"]["result"] != "written": errs.append("wipe result %r" % j["wipe"]["result"])
if not (w["done"] and w["verified"] and w["bytes"] > 0 and w["mb_s"] > 0): errs.append("write %r" % w)
if w["first_lba"] != ff: errs.append("written at LBA %s" % w["first_lba"])
if w["bytes"] != min(fb * 512, wmax): errs.append("wrote %s bytes, limit %s" % (w["bytes"], wmax))
a = open(sys.argv[2], "rb").read()
b = open(sys.argv[3], "rb").read()
lo, hi = ff * 512, ff * 512 + w["bytes"]
if len(a) != len(b): errs.append("size changed")
if a[:lo] != b[:lo] or a[hi:] != b[hi:]: errs.append("bytes outside the written run changed")
if a[lo:hi] == b[lo:hi]: errs.append("the written run did not change")
print("; ".join(errs) if errs else "%d KiB at LBA %d, %s MB/s, verified; outside it identical" % (w["bytes"] >> 10, ff, w["mb_s"]))
sys.exit(1 if errs else 0)
PY
	); then
		pass wipe "$out"
	else
		fail wipe "$out"
	fi
else
	fail wipe "no power-off or no JSON"
fi
exit $failed
