#!/bin/sh
# SPDX-License-Identifier: MIT
# /init of the Linux+Mosquitto bench guest (tools/bench/linux-guest/build.sh packs it into
# the guest's initramfs). It owns the guest's whole user-space start: mount the kernel
# filesystems, load the virtio modules listed in /etc/guest-modules, put the static address
# (kernel parameter lg.ip=, default 10.79.0.2/24) on eth0 and exec Mosquitto as PID 1 with
# /etc/mosquitto/bench.conf and the certificates the per-run archive put in /certs.
# It must never start anything else: no udev, no getty, no service manager. When Mosquitto
# exits the kernel panics (panic=-1) and QEMU (-no-reboot) exits with it.
export PATH=/usr/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read -r m; do
	insmod "$m" || echo "linux-guest: insmod $m failed"
done </etc/guest-modules
addr=10.79.0.2/24
stats=0
read -r cmdline </proc/cmdline
for w in $cmdline; do
	case $w in
	lg.ip=*) addr=${w#lg.ip=} ;;
	lg.stats=*) stats=${w#lg.stats=} ;;
	esac
done
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
ip link set lo up
ip addr add "$addr" dev eth0
ip link set eth0 up
for f in ca.crt server.crt server.key; do
	[ -f "/certs/$f" ] || echo "linux-guest: /certs/$f missing (boot.sh appends the certificates)"
done
# 10,000 idle connections need a descriptor each (the host's run.sh raises its own limit too)
# shellcheck disable=SC3045 # dash, the guest's /bin/sh, has ulimit -n
ulimit -n 65536
# lg.stats=S (S > 0): every S seconds one console line with Mosquitto's RSS (it is PID 1
# after the exec), the guest's memory in use (MemTotal - MemAvailable) and the listener's
# drop counters, for the bench:
#   lg-stats mosquitto_rss_kb=N guest_used_kb=N ListenOverflows=N ListenDrops=N ...
if [ "$stats" != 0 ]; then
	(
		while sleep "$stats"; do
			rss=0 total=0 avail=0
			while read -r k v _; do
				[ "$k" = VmRSS: ] && rss=$v
			done </proc/1/status
			while read -r k v _; do
				case $k in MemTotal:) total=$v ;; MemAvailable:) avail=$v ;; esac
			done </proc/meminfo
			# Linux's counters of SYNs and handshakes refused or dropped by the listener
			# (/proc/net/netstat: a TcpExt: line of names, then one of values)
			tcp=""
			while read -r names && read -r values; do
				case $names in TcpExt:*) ;; *) continue ;; esac
				# shellcheck disable=SC2086 # one positional parameter per value
				set -- $values
				for k in $names; do
					case $k in
					ListenOverflows | ListenDrops | TCPReqQFullDrop | TCPReqQFullDoCookies | \
						SyncookiesSent | SyncookiesRecv | SyncookiesFailed | TCPBacklogDrop)
						tcp="$tcp $k=$1" ;;
					esac
					shift
				done
			done </proc/net/netstat
			echo "lg-stats mosquitto_rss_kb=$rss guest_used_kb=$((total - avail))$tcp"
		done
	) &
fi
echo "linux-guest: eth0 $addr up; exec mosquitto"
exec mosquitto -c /etc/mosquitto/bench.conf
