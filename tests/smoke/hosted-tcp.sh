#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Linux's TCP against ours: runs build/hosted/urmqtt (the stack as a process, echo service
# on port 7777) on a TAP device inside a network namespace of its own, gives the TAP's
# Linux side 10.77.0.1/24 inside that namespace only, and checks from the same namespace:
#   hosted/icmp-ping         ICMP echo replies from our stack
#   hosted/arp               Linux resolved our MAC through ARP
#   hosted/tcp-echo-1mib     1 MiB of random bytes echoed intact, FIN both ways
#   hosted/tcp-echo-backpressure  4 MiB echoed while the client first reads nothing
#                            for 2 s: windows close both ways and reopen, no byte lost;
#                            our stack sent zero-window probes meanwhile (its persist
#                            counter grew during the case)
#   hosted/tcp-1000-idle     1,000 concurrent idle connections accepted, held, closed
#                            cleanly; the stack then reports 0 open connections
#   hosted/clean-shutdown    SIGTERM: exit 0, final stats, no sanitizer report
#   hosted/disk-readtest     a file as the disk behind drivers/blk.h passes the boot
#                            block read test (its last 4 KiB read; nothing written)
#   hosted/dhcp              the stack takes 10.77.0.50 from a minimal DHCP server
#   hosted/dhcp-dnsmasq      the stack takes 10.77.0.60 from dnsmasq
#                            (Python, in the namespace) and answers pings there
#   hosted/tcp-echo-1mib-lossy  1 MiB again over a link with 5% loss, 10% reordering and
#                            5 ms delay: tc netem on the Linux side when the kernel has it,
#                            else the same model inside the hosted NIC on the frames it
#                            receives (the same direction netem would impair); frames were
#                            lost (the impairment's own drop counter: netem's qdisc
#                            statistics, or the hosted NIC's impair_drop)
# Never touches the root namespace: everything lives in the namespace, which is deleted
# on exit together with the processes, whatever happened. Every wait is bounded.
# Usage: hosted-tcp.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
bin=$build/hosted/urmqtt
ns=urmqtt-hosted-$$
tap=uhtap0
lin_ip=10.77.0.1
our_ip=10.77.0.2
our_mac=02:00:00:77:00:02
port=7777
py=/usr/bin/python3
tmp=$(mktemp -d /tmp/urmqtt-hosted-tcp.XXXXXX)
logs=$build/test-logs
mkdir -p "$logs"
stack_pid=""
dhcpd_pid=""
stack_log=""
addr_args=(--ip "$our_ip/24")
n_stack=0

say() { echo "hosted-tcp: $*"; }
pass() { echo "PASS hosted/$1${2:+ ($2)}"; }
fail() { echo "FAIL hosted/$1${2:+ ($2)}"; }
in_ns() { ip netns exec "$ns" "$@"; }

# Stop the stack: SIGTERM, up to 10 s, then SIGKILL. Sets stop_rc.
stop_stack() {
	stop_rc=0
	[ -n "$stack_pid" ] || return 0
	kill -TERM "$stack_pid" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$stack_pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$stack_pid" 2>/dev/null; then
		say "stack did not exit within 10 s of SIGTERM; killing it"
		kill -KILL "$stack_pid" 2>/dev/null
		stop_rc=137
	fi
	wait "$stack_pid" 2>/dev/null
	local rc=$?
	[ $stop_rc -eq 0 ] && stop_rc=$rc
	stack_pid=""
}

cleanup() {
	trap - EXIT INT TERM
	stop_stack
	[ -n "$dhcpd_pid" ] && { kill "$dhcpd_pid" 2>/dev/null; wait "$dhcpd_pid" 2>/dev/null; }
	ip netns del "$ns" 2>/dev/null
	for l in "$logs"/hosted-tcp-stack-*.log; do
		[ -f "$l" ] && { say "---- $l (tail)"; tail -n 4 "$l"; }
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ALL=(disk-readtest icmp-ping arp tcp-echo-1mib tcp-echo-backpressure tcp-1000-idle clean-shutdown dhcp dhcp-dnsmasq tcp-echo-1mib-lossy)
fail_all() { for t in "${ALL[@]}"; do fail "$t" "$1"; done; exit 1; }

[ "$(id -u)" -eq 0 ] || fail_all "needs root for a network namespace"
[ -x "$bin" ] || fail_all "$bin not built"
[ -x "$py" ] || fail_all "$py missing"
[ -c /dev/net/tun ] || fail_all "/dev/net/tun missing"
command -v ip >/dev/null || fail_all "iproute2 missing"

if ! { ip netns add "$ns" && in_ns ip link set lo up &&
	in_ns ip tuntap add dev "$tap" mode tap &&
	in_ns ip addr add "$lin_ip/24" dev "$tap" && in_ns ip link set "$tap" up; }; then
	fail_all "cannot set up namespace $ns"
fi

# Start the stack with extra arguments; waits (10 s at most) for its start-up line.
start_stack() {
	n_stack=$((n_stack + 1))
	stack_log=$logs/hosted-tcp-stack-$n_stack.log
	# Not through in_ns: a function would run in a subshell and $! would not be the stack.
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 ip netns exec "$ns" "$bin" --tap "$tap" \
		"${addr_args[@]}" --mac "$our_mac" --echo-port "$port" --max-conn 1100 \
		--frames 2048 --echo-bufs 64 --stats-ms 300 "$@" >"$stack_log" 2>&1 &
	stack_pid=$!
	for _ in $(seq 100); do
		grep -q '^hosted: tap ' "$stack_log" && return 0
		kill -0 "$stack_pid" 2>/dev/null || break
		sleep 0.1
	done
	say "stack did not start:"; cat "$stack_log"
	stop_stack
	return 1
}

rm -f "$logs"/hosted-tcp-stack-*.log

# tcp_stat FIELD: FIELD of the first "stats tcp" line the stack prints after this call
# (every 300 ms), so it counts everything done before; fails after 3 s without one.
tcp_stat() {
	local n0 n
	n0=$(grep -c '^stats tcp ' "$stack_log")
	for _ in $(seq 30); do
		sleep 0.1
		n=$(grep -c '^stats tcp ' "$stack_log")
		[ "$n" -gt "$n0" ] && break
	done
	[ "$n" -gt "$n0" ] || return 1
	grep '^stats tcp ' "$stack_log" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p" | grep -E '^[0-9]+$'
}

# The Linux-side client: ping, echo and idle-connection checks (Python's own TCP).
cat >"$tmp/client.py" <<'EOF'
import os, resource, select, socket, struct, sys, time

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF

def ping(host, count):
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xFFFF
    got = 0
    for seq in range(count):
        payload = os.urandom(56)
        hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        pkt = struct.pack("!BBHHH", 8, 0, csum(hdr + payload), ident, seq) + payload
        t0 = time.time()
        s.sendto(pkt, (host, 0))
        deadline = t0 + 1.0
        while time.time() < deadline:
            r, _, _ = select.select([s], [], [], max(0.0, deadline - time.time()))
            if not r:
                break
            data, addr = s.recvfrom(2048)
            ihl = (data[0] & 15) * 4
            icmp = data[ihl:]
            if addr[0] == host and len(icmp) >= 8 and icmp[0] == 0 and \
                    struct.unpack("!HH", icmp[4:8]) == (ident, seq) and icmp[8:] == payload \
                    and csum(icmp) == 0:
                got += 1
                print("reply seq=%d %.2f ms" % (seq, (time.time() - t0) * 1000))
                break
        time.sleep(0.05)
    print("ping: %d/%d replies" % (got, count))
    return 0 if got >= count - 1 else 1

def echo_pump(s, data, got, deadline, stall_until):
    """Send data (then FIN) while reading the echo, until EOF or the deadline. Until
    stall_until nothing is read, so both directions' windows close (backpressure)."""
    sent = 0
    size = len(data)
    while time.time() < deadline:
        w = [s] if sent < size else []
        reading = time.time() >= stall_until
        r, wr, _ = select.select([s] if reading else [], w, [], 0.2 if not reading else 1.0)
        if wr:
            try:
                sent += s.send(data[sent:sent + 65536])
            except BlockingIOError:
                pass
            if sent == size:
                s.shutdown(socket.SHUT_WR)
        if r:
            try:
                chunk = s.recv(1 << 20)
            except BlockingIOError:
                continue
            if not chunk:
                return sent, True
            got += chunk
            if len(got) > size:
                break
    return sent, False

def echo(host, port, size, limit_s, stall_s=0.0):
    data = os.urandom(size)
    t0 = time.time()
    got = bytearray()
    sent = 0
    try:
        s = socket.create_connection((host, port), timeout=10)
        s.setblocking(False)
        sent, eof = echo_pump(s, data, got, t0 + limit_s, t0 + stall_s)
        s.close()
    except OSError as e:
        print("echo: error after %d bytes back: %s" % (len(got), e))
        return 1
    dt = time.time() - t0
    ok = eof and bytes(got) == data
    print("echo: sent %d received %d eof=%s intact=%s in %.2f s (%.2f MiB/s)" %
          (sent, len(got), eof, bytes(got) == data, dt, len(got) / max(dt, 1e-6) / (1 << 20)))
    if not ok and len(got) <= size:
        for i in range(len(got)):
            if got[i] != data[i]:
                print("first difference at byte %d" % i)
                break
    return 0 if ok else 1

def stats(log):
    """Last 'stats' line of the stack's log as a dict of its fields."""
    last = None
    try:
        with open(log) as f:
            for line in f:
                if line.startswith("stats t=") or line.startswith("final t="):
                    last = line
    except OSError:
        return {}
    if not last:
        return {}
    return dict(kv.split("=", 1) for kv in last.split()[1:] if "=" in kv)

def wait_stats(log, pred, limit_s, what):
    deadline = time.time() + limit_s
    st = {}
    while time.time() < deadline:
        st = stats(log)
        if st and pred(st):
            return st
        time.sleep(0.2)
    print("timeout waiting for %s; last stats %s" % (what, st))
    return None

def idle(host, port, n, log):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
    # Start from a quiet stack: earlier connections fully closed.
    before = wait_stats(log, lambda st: st["conns"] == "0", 10, "0 open connections before")
    if before is None:
        return 1
    closed0 = [int(x) for x in before["closed"].split("/")]
    socks = []
    t0 = time.time()
    try:
        for i in range(n):
            if time.time() - t0 > 60:
                print("connecting took over 60 s (%d done)" % i)
                return 1
            socks.append(socket.create_connection((host, port), timeout=5))
    except OSError as e:
        print("connect %d failed: %s" % (len(socks), e))
        return 1
    print("idle: %d connections in %.2f s" % (n, time.time() - t0))
    held = wait_stats(log, lambda st: int(st["conns"]) >= n, 15, "%d open connections" % n)
    if held is None:
        return 1
    time.sleep(2.0)  # hold them idle
    dead = 0
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                dead += 1
        except BlockingIOError:
            pass
        except OSError:
            dead += 1
    st = stats(log)
    print("idle: held %d, stack reports conns=%s; %d closed early" % (n, st.get("conns"), dead))
    if dead or int(st.get("conns", -1)) != n:
        return 1
    t1 = time.time()
    for s in socks:
        s.close()
    after = wait_stats(log, lambda st: st["conns"] == "0" and st["echo_open"] == "0", 30,
                       "0 open connections")
    if after is None:
        return 1
    closed1 = [int(x) for x in after["closed"].split("/")]
    delta = [b - a for a, b in zip(closed0, closed1)]
    print("idle: all closed in %.2f s; closed normal/reset/timeout/abort/refused = %s" %
          (time.time() - t1, "/".join(map(str, delta))))
    return 0 if delta[0] == n and sum(delta[1:]) == 0 else 1

def dhcpd(ifname, server, offer, limit_s):
    """A minimal DHCP server for one client: OFFER on DISCOVER, ACK on REQUEST."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, ifname.encode())
    s.bind(("0.0.0.0", 67))
    srv = socket.inet_aton(server)
    deadline = time.time() + limit_s
    acks = 0
    while time.time() < deadline:
        r, _, _ = select.select([s], [], [], 0.5)
        if not r:
            continue
        msg, _ = s.recvfrom(2048)
        if len(msg) < 240 or msg[0] != 1 or msg[236:240] != bytes([99, 130, 83, 99]):
            continue
        opts, i, mtype = msg[240:], 0, None
        while i < len(opts) and opts[i] != 255:
            if opts[i] == 0:
                i += 1
                continue
            if i + 1 >= len(opts):
                break
            if opts[i] == 53 and opts[i + 1] >= 1:
                mtype = opts[i + 2]
            i += 2 + opts[i + 1]
        reply = {1: 2, 3: 5}.get(mtype)
        if not reply:
            continue
        out = bytearray(240)
        out[0:4] = bytes([2, 1, 6, 0])
        out[4:8] = msg[4:8]            # xid
        out[10:12] = msg[10:12]        # flags
        out[16:20] = socket.inet_aton(offer)
        out[20:24] = srv
        out[28:44] = msg[28:44]        # chaddr
        out[236:240] = bytes([99, 130, 83, 99])
        out += bytes([53, 1, reply, 54, 4]) + srv + bytes([51, 4]) + struct.pack("!I", 3600)
        out += bytes([1, 4, 255, 255, 255, 0, 255])
        s.sendto(bytes(out), ("255.255.255.255", 68))
        print("dhcpd: %s sent" % ("OFFER" if reply == 2 else "ACK"), flush=True)
        acks += reply == 5
    return 0 if acks else 1

cmd = sys.argv[1]
if cmd == "dhcpd":
    sys.exit(dhcpd(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])))
if cmd == "ping":
    sys.exit(ping(sys.argv[2], int(sys.argv[3])))
if cmd == "echo":
    stall = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    sys.exit(echo(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), stall))
if cmd == "idle":
    sys.exit(idle(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
sys.exit(2)
EOF

client() { timeout "$1" ip netns exec "$ns" "$py" "$tmp/client.py" "${@:2}"; }

sanitizer_clean() { ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$1"; }

if ! start_stack --disk "$tmp/disk.img" --disk-mib 4; then
	for t in disk-readtest icmp-ping arp tcp-echo-1mib tcp-echo-backpressure tcp-1000-idle clean-shutdown; do
		fail "$t" "stack did not start"
	done
else
	if line=$(grep -m1 '^hosted: disk .*read test passed' "$stack_log"); then
		pass disk-readtest "${line#hosted: disk }"
	else
		fail disk-readtest "$(grep -m1 '^hosted: disk' "$stack_log")"
	fi

	# (d) ICMP and ARP. Linux has to resolve our address first, so the neighbour entry
	# for it proves ARP both ways (our reply answered Linux's request).
	in_ns ip neigh flush dev "$tap" 2>/dev/null
	if client 30 ping "$our_ip" 5; then pass icmp-ping; else fail icmp-ping; fi
	neigh=$(in_ns ip neigh show "$our_ip" dev "$tap")
	say "neighbour: $neigh"
	if grep -qi "lladdr $our_mac" <<<"$neigh" && ! grep -q FAILED <<<"$neigh"; then
		pass arp "$neigh"
	else
		fail arp "neighbour entry: ${neigh:-none}"
	fi

	# (a) 1 MiB echoed intact.
	if out=$(client 90 echo "$our_ip" "$port" 1048576 60); then
		pass tcp-echo-1mib "$(tail -n 1 <<<"$out" | sed 's/^echo: //')"
	else
		echo "$out"; fail tcp-echo-1mib "$(tail -n 1 <<<"$out")"
	fi

	# Backpressure: the client reads nothing for 2 s while sending 4 MiB, so Linux's
	# receive window closes, our echo ring fills, our window closes; then it reads. While
	# Linux's window is closed our stack must probe it: its persist counter (zero-window
	# probes sent, net/tcp) read before and after this case alone.
	probes0=$(tcp_stat persist)
	if ! out=$(client 90 echo "$our_ip" "$port" 4194304 60 2); then
		echo "$out"; fail tcp-echo-backpressure "$(tail -n 1 <<<"$out")"
	elif ! probes1=$(tcp_stat persist) || [ -z "$probes0" ]; then
		fail tcp-echo-backpressure "no stats line with the persist counter in $stack_log"
	elif [ $((probes1 - probes0)) -lt 1 ]; then
		fail tcp-echo-backpressure "no zero-window probe sent (persist $probes0 -> $probes1); $(tail -n 1 <<<"$out")"
	else
		pass tcp-echo-backpressure "$(tail -n 1 <<<"$out" | sed 's/^echo: //'); $((probes1 - probes0)) zero-window probes sent (at least 1)"
	fi
	grep '^stats tcp' "$stack_log" | tail -n 1

	# (c) 1,000 concurrent idle connections.
	if out=$(client 150 idle "$our_ip" "$port" 1000 "$stack_log"); then
		echo "$out"; pass tcp-1000-idle "$(tail -n 1 <<<"$out" | sed 's/^idle: //')"
	else
		echo "$out"; fail tcp-1000-idle "$(tail -n 1 <<<"$out")"
	fi

	# Clean shutdown of this instance.
	stop_stack
	if [ "$stop_rc" -eq 0 ] && grep -q '^final t=' "$stack_log" && sanitizer_clean "$stack_log"; then
		pass clean-shutdown "$(grep '^final t=' "$stack_log" | cut -d' ' -f2-4)"
	else
		fail clean-shutdown "exit $stop_rc, see $stack_log"
	fi
fi

# DHCP: the stack takes its address from a minimal DHCP server on the Linux side, then
# answers pings there.
dhcp_ip=10.77.0.50
ip netns exec "$ns" "$py" "$tmp/client.py" dhcpd "$tap" "$lin_ip" "$dhcp_ip" 25 >"$tmp/dhcpd.log" 2>&1 &
dhcpd_pid=$!
sleep 0.5
addr_args=(--dhcp)
if ! start_stack; then
	fail dhcp "stack did not start"
else
	got=""
	for _ in $(seq 150); do
		grep -q "^hosted: address $dhcp_ip " "$stack_log" && { got=1; break; }
		sleep 0.1
	done
	if [ -n "$got" ] && client 20 ping "$dhcp_ip" 3 >"$tmp/dhcp-ping.log"; then
		pass dhcp "$(grep -m1 "^hosted: address $dhcp_ip" "$stack_log" | sed 's/^hosted: //'), ping answered"
	else
		cat "$tmp/dhcpd.log"; fail dhcp "no address from DHCP in 15 s, or no ping reply"
	fi
	stop_stack
fi
kill "$dhcpd_pid" 2>/dev/null; wait "$dhcpd_pid" 2>/dev/null
dhcpd_pid=""

# DHCP again from dnsmasq, a real DHCP server, on the same TAP.
dnsmasq_ip=10.77.0.60
if ! command -v dnsmasq >/dev/null; then
	fail dhcp-dnsmasq "dnsmasq not installed (package dnsmasq-base)"
else
	ip netns exec "$ns" dnsmasq --no-daemon --port=0 --no-resolv --no-hosts --bind-interfaces \
		--interface="$tap" --except-interface=lo --dhcp-range="$dnsmasq_ip,$dnsmasq_ip,255.255.255.0,2m" \
		--dhcp-leasefile="$tmp/dnsmasq.leases" --pid-file= --log-dhcp >"$tmp/dnsmasq.log" 2>&1 &
	dhcpd_pid=$!
	sleep 0.5
	addr_args=(--dhcp)
	if ! start_stack; then
		fail dhcp-dnsmasq "stack did not start"
	else
		got=""
		for _ in $(seq 150); do
			grep -q "^hosted: address $dnsmasq_ip " "$stack_log" && { got=1; break; }
			sleep 0.1
		done
		if [ -n "$got" ] && client 20 ping "$dnsmasq_ip" 3 >"$tmp/dnsmasq-ping.log"; then
			pass dhcp-dnsmasq "$(grep -m1 "^hosted: address $dnsmasq_ip" "$stack_log" | sed 's/^hosted: //'), ping answered"
		else
			tail -20 "$tmp/dnsmasq.log"; fail dhcp-dnsmasq "no address from dnsmasq in 15 s, or no ping reply"
		fi
		stop_stack
	fi
	kill "$dhcpd_pid" 2>/dev/null; wait "$dhcpd_pid" 2>/dev/null
	dhcpd_pid=""
fi
addr_args=(--ip "$our_ip/24")

# (b) 1 MiB over a lossy, reordering, delaying link. The model is netem's on the TAP's
# Linux side (frames towards our stack); where the kernel has no sch_netem, the hosted
# NIC applies the same model to the frames it receives. A capture of what our stack saw
# and sent is kept in the log directory for diagnosis.
how=""
pcap=$logs/hosted-tcp-lossy.pcap
rm -f "$pcap"
netem=""
if in_ns tc qdisc add dev "$tap" root netem loss 5% reorder 10% delay 5ms 2>"$tmp/tc.err"; then
	how="tc netem on $tap"
	netem=1
	start_stack --pcap "$pcap" || true
else
	say "tc netem unavailable ($(head -c 120 "$tmp/tc.err")); impairing inside the hosted NIC instead"
	how="netem model in the hosted NIC, frames to us"
	start_stack --impair 5,10,5 --impair-dir rx --seed 12345 --pcap "$pcap" || true
fi
if [ -z "$stack_pid" ]; then
	fail tcp-echo-1mib-lossy "stack did not start"
else
	out=$(client 130 echo "$our_ip" "$port" 1048576 120)
	rc=$?
	echo "$out"
	# Linux's view of a connection that did not finish (RTO, backoff, retransmissions).
	[ $rc -ne 0 ] && in_ns ss -tin 2>/dev/null | head -n 6
	stop_stack
	grep -E '^final (t=|tcp|net)' "$stack_log"
	# The impairment's own count of frames it dropped: netem's qdisc statistics, or the
	# hosted NIC's impair_drop (frames to us / from us) on its final line.
	if [ -n "$netem" ]; then
		in_ns tc -s qdisc show dev "$tap"
		drops=$(in_ns tc -s qdisc show dev "$tap" | grep -Eo 'dropped [0-9]+' | head -n 1 | cut -d' ' -f2)
	else
		drops=$(grep '^final net ' "$stack_log" | tr ' ' '\n' | sed -n 's/^impair_drop=\([0-9]*\)\/[0-9]*$/\1/p')
	fi
	if [ $rc -ne 0 ]; then
		fail tcp-echo-1mib-lossy "$how; $(tail -n 1 <<<"$out")"
	elif ! sanitizer_clean "$stack_log"; then
		fail tcp-echo-1mib-lossy "$how; sanitizer report in $stack_log"
	elif [ -z "$drops" ]; then
		fail tcp-echo-1mib-lossy "$how; no drop counter from the impairment"
	elif [ "$drops" -lt 1 ]; then
		fail tcp-echo-1mib-lossy "$how; the impairment dropped no frame"
	else
		pass tcp-echo-1mib-lossy "$how; $(tail -n 1 <<<"$out" | sed 's/^echo: //'); $drops frames dropped by the impairment (at least 1)"
	fi
fi
exit 0
