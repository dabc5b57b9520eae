#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# boot.sh OUTDIR CERTDIR TAPNAME NAMESPACE SMP MEM LOG: boots the Linux+Mosquitto bench guest
# (tools/bench/linux-guest/build.sh OUTDIR built it) on an existing TAP device in an existing
# network namespace and returns once Mosquitto accepts TCP on the guest's 8883. It owns one
# QEMU process and one temporary initrd; it must never create, change or delete a namespace,
# a TAP device or an address (the caller owns the topology).
#
# Inputs
#   OUTDIR     build.sh's output (vmlinux: booted through QEMU's PVH entry; initrd.base)
#   CERTDIR    ca.crt, server.crt, server.key (the bench tree's dev/certs): packed into a
#              small uncompressed cpio (~3 KB) put before initrd.base, so the guest finds
#              them in /certs; the base image stays cached
#   TAPNAME    the TAP device (already created, up) inside NAMESPACE
#   NAMESPACE  the network namespace holding TAPNAME and the host side (10.79.0.1/24)
#   SMP, MEM   QEMU -smp and -m (e.g. 1 256M), the same as the urMQTT image gets
#   LOG        the guest's serial console (kernel messages, /init, Mosquitto's stderr)
# Environment: LINUX_GUEST_IP (guest address/prefix, default 10.79.0.2/24),
#   LINUX_GUEST_WAIT (seconds to wait for the port, default 180), LINUX_GUEST_STATS (S > 0:
#   every S seconds the guest logs "lg-stats mosquitto_rss_kb=N guest_used_kb=N" to LOG;
#   default 0, off), LINUX_GUEST_APPEND (extra kernel parameters), LINUX_GUEST_QUEUES (N > 1:
#   a multi-queue virtio-net with N queue pairs on a multi_queue TAP).
# Output (stdout), one line once accepting:  <qemu pid> <ms from QEMU start to accepting>
#   (progress and errors go to stderr). The guest's console lines end in CR LF. The QEMU process is the guest: kill that pid (TERM)
#   and nothing is left. On failure or timeout it kills QEMU itself and exits non-zero.
# Accelerator: KVM (-enable-kvm -cpu host,-arch-capabilities) when a probe guest ran on it, else TCG
# (-accel tcg,thread=multi -cpu max), q35, virtio-net-pci over the TAP, -nodefaults.
# CPU placement: run it under `taskset -c N` and QEMU inherits the affinity.
# Time here (TCG, 2 shared cores, pinned to one with taskset): QEMU start -> accepting,
# median of 5 boots: 5.4 s at -smp 1 -m 256M (/init's exec line at 5.2 s), 7.1 s at -smp 2
# (both vCPUs on one host core); 7-10 s while the machine is busy. Without the PVH entry
# (booting the bzImage) it was ~9 s more. For scale: the urMQTT image under the same TCG,
# QEMU start -> serving, ~0.27 s.
set -uo pipefail
[ $# -eq 7 ] || { echo "usage: boot.sh OUTDIR CERTDIR TAPNAME NAMESPACE SMP MEM LOG" >&2; exit 2; }
out=$1 certs=$2 tap=$3 ns=$4 smp=$5 mem=$6 log=$7
addr=${LINUX_GUEST_IP:-10.79.0.2/24}
ip4=${addr%/*}
wait_s=${LINUX_GUEST_WAIT:-180}
say() { echo "linux-guest: $*" >&2; }

for f in "$out/vmlinux" "$out/initrd.base"; do
	[ -f "$f" ] || { say "missing $f (run tools/bench/linux-guest/build.sh $out)"; exit 1; }
done
for f in ca.crt server.crt server.key; do
	[ -f "$certs/$f" ] || { say "missing $certs/$f"; exit 1; }
done
ip netns exec "$ns" ip link show "$tap" >/dev/null 2>&1 ||
	{ say "no TAP device $tap in namespace $ns"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || { say "qemu-system-x86_64 not installed"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/linux-guest.XXXXXX") || exit 1
qpid=""
fail() {
	say "$*"
	[ -n "$qpid" ] && { kill -TERM "$qpid" 2>/dev/null; sleep 0.5; kill -KILL "$qpid" 2>/dev/null; }
	if [ -f "$log" ]; then # the guest's own lines and errors, else its last lines
		{ grep -a -E 'linux-guest:|Error|Kernel panic' "$log" || tail -n 15 "$log"; } |
			head -n 15 | sed 's/^/    /' >&2
	fi
	rm -rf "$tmp"
	exit 1
}
trap 'fail "interrupted"' INT TERM

# the per-run part: the certificates, first (uncompressed), then the cached base image
mkdir -p "$tmp/c/certs"
cp "$certs/ca.crt" "$certs/server.crt" "$certs/server.key" "$tmp/c/certs/"
chmod 600 "$tmp/c/certs/server.key"
(cd "$tmp/c" && find certs | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$tmp/initrd" ||
	fail "could not pack the certificates"
cat "$out/initrd.base" >>"$tmp/initrd"

# KVM only after a probe guest ran on it (tools/accel/accel.sh; make bench decides once
# and exports URMQTT_ACCEL; on its own this script probes with build/accel/probe.elf).
# shellcheck source=tools/accel/accel.sh
. "$(dirname "$0")/../../accel/accel.sh"
accel_select "${BUILD_DIR:-build}" -accel "tcg,thread=multi" -cpu max || fail "no accelerator decision"
mac=52:54:00:4c:47:02
# LINUX_GUEST_QUEUES=N (N > 1): N virtio-net queue pairs (the TAP must be multi_queue); Linux
# uses min(N, vCPUs) of them by default
queues=${LINUX_GUEST_QUEUES:-}
[ "${queues:-1}" -gt 1 ] 2>/dev/null || queues=""
append="console=ttyS0 panic=-1 quiet cryptomgr.notests lg.ip=$addr lg.stats=${LINUX_GUEST_STATS:-0} ${LINUX_GUEST_APPEND:-}"

t0=$(date +%s%N)
ip netns exec "$ns" qemu-system-x86_64 -M q35 "${accel[@]}" -smp "$smp" -m "$mem" \
	-nodefaults -no-reboot -display none -monitor none -serial stdio \
	-netdev tap,id=n0,ifname="$tap",script=no,downscript=no${queues:+,queues=$queues} \
	-device virtio-net-pci,netdev=n0,mac=$mac,romfile=${queues:+,mq=on,vectors=$((2 * queues + 2))} \
	-kernel "$out/vmlinux" -initrd "$tmp/initrd" -append "$append" \
	</dev/null >"$log" 2>&1 &
qpid=$! # ip netns exec execs QEMU: this is QEMU's pid
say "QEMU pid $qpid ($([ "${accel[0]}" = -enable-kvm ] && echo KVM || echo TCG), -smp $smp -m $mem, $tap in $ns), waiting for $ip4:8883"

# first the guest's /init line (cheap: the serial log), then TCP probes of one second each
# (a probe sent before the guest answers ARP waits for the next ARP retry)
up=0 init_ms=""
deadline=$((t0 / 1000000000 + wait_s))
while [ "$(date +%s)" -lt "$deadline" ]; do
	kill -0 "$qpid" 2>/dev/null || fail "QEMU exited before Mosquitto accepted"
	if [ -z "$init_ms" ]; then
		grep -q 'exec mosquitto' "$log" 2>/dev/null || { sleep 0.05; continue; }
		init_ms=$((($(date +%s%N) - t0) / 1000000))
	fi
	if ip netns exec "$ns" timeout 1 bash -c "exec 3<>/dev/tcp/$ip4/8883" 2>/dev/null; then
		up=1
		break
	fi
	sleep 0.05
done
[ $up = 1 ] || fail "Mosquitto did not accept on $ip4:8883 within ${wait_s}s"
ms=$((($(date +%s%N) - t0) / 1000000))
# Mosquitto listens before it loads the certificates: with an unusable key it accepts for a
# moment, then exits (and the guest panics). So: still alive and accepting a second later?
sleep 1
if grep -q -e 'Kernel panic' -e ': Error: ' "$log" || ! kill -0 "$qpid" 2>/dev/null ||
	! ip netns exec "$ns" timeout 2 bash -c "exec 3<>/dev/tcp/$ip4/8883" 2>/dev/null; then
	fail "Mosquitto accepted, then failed (see $log)"
fi
rm -rf "$tmp" # QEMU read the initrd at start
trap - INT TERM
say "Mosquitto accepting on $ip4:8883 ${ms} ms after QEMU start (/init's exec line at ${init_ms} ms)"
echo "$qpid $ms"
