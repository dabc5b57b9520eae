# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2154,SC2034  # sourced by run.sh: its variables and helpers
# make bench, group scale (issue 25): many idle mTLS devices on one appliance. Sourced by
# tools/bench/run.sh (its helpers: vm_net, vm_start, vm_stop, vm_net_del, vm_kmem, cpu_ticks,
# rss_kb, say); not in the default run (it takes far more than 10 minutes under TCG):
# BENCH_ONLY=scale make bench.
# For each count of BENCH_SCALE_N (default "2000 10000 100000"), ascending, on a fresh boot:
#   urMQTT  the x86_64 image built with config/scale-100k.conf (BENCH_SCALE_TREE, default
#           the bench tree's sibling scale/), -smp 1 -m BENCH_SCALE_MEM (256M), virtio-net over
#           a TAP in a namespace of its own, pinned to the broker core; the load generator
#           (hold mode) opens N mTLS connections from the four source addresses (the
#           per-source handshake limit), BENCH_SCALE_K in flight, each a distinct identity
#           (CN load-i, one shared key per batch), one QoS 1 subscription devices/<id>/cmd/#,
#           PINGREQ every BENCH_SCALE_KEEPALIVE (60) s. Then: the kernel's bytes per
#           connection (its report line, as the vm group's idle figure), the guest's free
#           heap ($SYS/urmqtt/#, read by the ops service), the time to open them all, the
#           QEMU process's CPU per second over BENCH_SCALE_IDLE_S (60) idle seconds (only the
#           keepalives happen then), and at the end one QoS 1 command from the service to each
#           of BENCH_SCALE_CMD (1000) random held devices with its delivery latency. The load
#           generator's own RSS growth per connection is reported beside them.
#   Mosquitto (Debian, on the namespace's loopback, the same certificates) at the same count up
#           to BENCH_SCALE_MOSQ_MAX (100000): RSS growth per connection, time to open. Mosquitto
#           is one process, so above the host's descriptor hard limit it is measured at the
#           largest count that fits and its memory extrapolated to the count (said so:
#           "measured_n" and "extrapolated" in its figure).
# The load generator is split over as many processes as the host's descriptor hard limit per
# process needs (ulimit -Hn; 20,000 in the container of the first runs; 2,048 of each kept
# for everything else): each holds a contiguous range of identities (--id-base); they open
# one after another, each with BENCH_SCALE_K in flight (the guest sees what one process would
# give it), hold until the group says go (--go-file), then each sends its share of the
# commands from a service connection of its own (ops/<k>) at its share of the rate. Their
# results are merged (sums; the opening from the first start to the last ready; latency
# percentiles from the merged histograms) into one "lg" object with "processes".
# A count whose opening time, extrapolated from the previous count's rate, exceeds
# BENCH_SCALE_BUDGET_S (1500) is skipped and said so (figure scale_skipped): the largest count
# reached is the last scale row. Every wait is bounded.

scale_group() {
	local stree=${BENCH_SCALE_TREE:-$(dirname "$tree")/scale}
	local simg=$stree/x86_64/urmqtt.elf scerts=$stree/dev/certs
	local slist=${BENCH_SCALE_N:-2000 10000 100000} smem=${BENCH_SCALE_MEM:-256M}
	local sk=${BENCH_SCALE_K:-4} ska=${BENCH_SCALE_KEEPALIVE:-60} sidle=${BENCH_SCALE_IDLE_S:-60}
	local scmd=${BENCH_SCALE_CMD:-1000} sbudget=${BENCH_SCALE_BUDGET_S:-1500}
	local smosq=${BENCH_SCALE_MOSQ_MAX:-100000}
	local sdev=$out/scale-certs nmax=0 n rate="" est
	slist=${slist//,/ }
	for n in $slist; do [ "$n" -gt "$nmax" ] && nmax=$n; done
	if [ ! -f "$simg" ] || [ ! -f "$scerts/ca.key" ] || ! command -v qemu-system-x86_64 >/dev/null; then
		say "scale skipped: no $simg or $scerts (make bench builds them when BENCH_ONLY names scale)"
		return 0
	fi
	"$loadgen" mkcerts --cadir "$scerts" --out "$sdev" --n "$nmax" || return 1
	sed -e "s|@LISTEN@| 127.0.0.1|" -e "s|@CERTS@|$(realpath "$scerts")|" tools/bench/mosquitto-bench.conf \
		>"$out/mosquitto-scale.conf"
	vm_accel=("${accel[@]}") vm_acc=$accel_mode
	local o_img=$vm_img o_mem=$vm_mem o_smp=$vm_smp
	vm_img=$simg vm_mem=$smem vm_smp=1
	ns_of["urmqtt-scale"]=urmqtt-bench-sc-$$
	tap_of["urmqtt-scale"]=ubtap3
	echo "{\"scale\":\"settings\",\"accel\":\"$vm_acc\",\"mem\":\"$smem\",\"k\":$sk,\"keepalive_s\":$ska,\"idle_s\":$sidle,\"cmd\":$scmd,\"conf\":\"config/scale-100k.conf\"}" >>"$raw"
	# connections per load-generator process: a descriptor each, under the hard limit
	local fdmax per_lg
	fdmax=$(ulimit -Hn)
	per_lg=100000
	[ "$fdmax" != unlimited ] && [ $((fdmax - 2048)) -lt $per_lg ] && per_lg=$((fdmax - 2048))
	if [ "$per_lg" -lt 1000 ]; then
		say "scale skipped: the descriptor hard limit here ($fdmax) leaves too few per load-generator process"
		return 0
	fi
	for n in $slist; do
		if [ -n "$rate" ]; then
			est=$(python3 -c "print(int($n / $rate))")
			if [ "$est" -gt "$sbudget" ]; then
				say "[scale] $n connections skipped: ~${est}s to open at the last count's $rate/s (> BENCH_SCALE_BUDGET_S=$sbudget)"
				echo "{\"broker\":\"urmqtt-scale\",\"figure\":\"scale_skipped\",\"n\":$n,\"est_open_s\":$est}" >>"$raw"
				continue
			fi
		fi
		scale_urmqtt "$n" && rate=$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); print("%.1f" % d["connects_per_s"] if d.get("connects_per_s") else "")' \
			"$out/scale-hold-$n.json" 2>/dev/null)
		[ "$n" -le "$smosq" ] && scale_mosquitto "$n"
	done
	vm_img=$o_img vm_mem=$o_mem vm_smp=$o_smp
}

# scale_urmqtt N: a fresh boot, N held devices, the figures; 0 when the load generator reported
scale_urmqtt() {
	local n=$1 b=urmqtt-scale
	local log=$out/scale-urmqtt-$n.log ready=$out/scale-ready-$n hj=$out/scale-hold-$n.json
	local nsn=${ns_of[$b]} qpid c0 c1 t0 t1 km="" sysj="" p np go=$out/scale-go-$n
	local -a hpids=()
	np=$(((n + per_lg - 1) / per_lg))
	vm_net "$b" || { say "[scale] no namespace"; return 1; }
	ln -sfn "$(basename "$log")" "$out/$b.log" # where vm_dead looks for a panic
	if ! vm_start "$b" "$log"; then vm_net_del; return 1; fi
	qpid=${pid_of[$b]}
	blog=$log
	say "[scale] urMQTT image (-m $vm_mem, ${vm_acc^^}): $n idle mTLS devices from $np load-generator process(es) in turn, $sk in flight, keepalive ${ska}s"
	rm -f "$ready".* "$hj".* "$go"
	c0=$(cpu_ticks "$qpid")
	t0=$(date +%s%N)
	# scale_opened P: process P has opened its share (0), or it ended or the VM stopped (1)
	scale_opened() {
		for _ in $(seq $(((sbudget + 120) * 10))); do
			[ -f "$ready.$1" ] && return 0
			kill -0 "${hpids[$1]}" 2>/dev/null || { say "[scale] load-generator process $1 ended while opening"; return 1; }
			vm_dead "$b" && { say "[scale] the VM stopped while opening"; return 1; }
			sleep 0.1
		done
		return 1
	}
	local opened=1
	for ((p = 0; p < np && opened; p++)); do
		local base=$((p * n / np)) cnt=$(((p + 1) * n / np - p * n / np))
		local cmdp=$(((p + 1) * scmd / np - p * scmd / np)) crate=$((80 / np))
		[ "$crate" -ge 1 ] || crate=1
		timeout $((2 * sbudget + sidle + 400)) ip netns exec "$nsn" taskset -c "$lcpu" "$loadgen" hold --host "$our_ip" \
			--src "$srcs_tap" --ca "$scerts/ca.crt" --devdir "$sdev" --svcdir "$scerts" --n "$cnt" --k "$sk" \
			--id-base "$base" --keepalive "$ska" --seconds $((2 * sbudget + sidle + 200)) --go-file "$go" \
			--open-s "$((sbudget + 60))" --cmd "$cmdp" --cmd-rate "$crate" --cmd-client "$p" \
			--ready-file "$ready.$p" >"$hj.$p" 2>>"$out/loadgen-scale.log" &
		hpids+=($!)
		scale_opened "$p" || opened=0
	done
	t1=$(date +%s%N)
	[ "$opened" = 1 ] || touch "$go" # the others stop holding: nothing more to measure
	c1=$(cpu_ticks "$qpid")
	local open_cpu_s
	open_cpu_s=$(python3 -c "print('%.1f' % (($c1 - $c0) / $hz))")
	sleep 3 # a report line with every connection open
	km=$(vm_kmem)
	# the guest's heap from its $SYS figures (every sys_interval_s = 10 s), read as the ops service
	sysj=$(timeout 20 ip netns exec "$nsn" mosquitto_sub -h "$our_ip" -p 8883 --cafile "$scerts/ca.crt" \
		--cert "$scerts/ops.crt" --key "$scerts/ops.key" --tls-version tlsv1.3 -i ops/9 \
		-t '$SYS/urmqtt/#' -v -W 12 2>/dev/null | python3 -c 'import sys,json
d={}
for l in sys.stdin:
    p=l.split(None,1)
    if len(p)==2 and ("heap" in p[0] or p[0].endswith("/connections")):
        d[p[0].split("$SYS/urmqtt/")[-1]]=p[1].strip()
print(json.dumps(d))')
	[ -n "$sysj" ] || sysj='{}'
	# the idle minute: only keepalives (N / keepalive PINGREQs per second)
	say "[scale] idle for ${sidle}s: QEMU's CPU over it"
	local i0 i1
	i0=$(cpu_ticks "$qpid")
	sleep "$sidle"
	i1=$(cpu_ticks "$qpid")
	local idle_cpu
	idle_cpu=$(python3 -c "print('%.4f' % (($i1 - $i0) / $hz / $sidle))")
	touch "$go" # the commands, then every process closes
	wait "${hpids[@]}"
	scale_merge_lg "$np" "$hj" >"$hj"
	local j
	j=$(tail -n 1 "$hj")
	[ -n "$j" ] || j='{"error":"no result"}'
	echo "{\"broker\":\"$b\",\"figure\":\"scale\",\"n\":$n,\"wall_open_s\":$(((t1 - t0) / 1000000)),\"open_cpu_s\":$open_cpu_s,\"idle_cpu_s_per_s\":$idle_cpu,\"pings_per_s\":$(python3 -c "print('%.1f' % ($n / $ska))"),\"sys\":$sysj${km:+,$km},\"lg\":$j}" >>"$raw"
	say "[scale] $n: $(python3 -c 'import json,sys
d=json.loads(sys.argv[1]); l=d["lg"]
print("held=%s in %ss (%s/s); kernel %s B/conn (slot %s); guest %s; QEMU CPU idle %.3f s/s at %s pings/s; commands %s/%s p50 %s us p99 %s us max %s us; loadgen %s B/conn"
 % (l.get("held"), l.get("connect_s"), l.get("connects_per_s"), d.get("own_bytes_per_conn"), d.get("slot"), d.get("sys"),
    d["idle_cpu_s_per_s"], d["pings_per_s"], l.get("cmd_delivered"), l.get("cmd_wanted"), l.get("cmd_lat_us_p50"),
    l.get("cmd_lat_us_p99"), l.get("cmd_lat_us_max"), l.get("lg_bytes_per_conn")))' "$(tail -n 1 "$raw")")"
	vm_stop "$b"
	vm_net_del
	grep -q '"held"' "$hj"
}

# scale_merge_lg NP HJ: one "lg" object from the NP load-generator results HJ.0..HJ.<NP-1>
# (each one's last line): counts summed, the slowest opening, the load generators' memory
# per held connection over all of them, command latency percentiles from the merged
# histograms; a missing or unreadable result is named in "errors" and held counts stay short.
scale_merge_lg() {
	python3 - "$1" "$2" <<-'PY'
	import json, sys
	np, hj = int(sys.argv[1]), sys.argv[2]
	parts, errors = [], []
	for p in range(np):
	    try:
	        with open("%s.%d" % (hj, p)) as f:
	            lines = [l for l in f.read().splitlines() if l.strip()]
	        parts.append(json.loads(lines[-1]))
	    except (OSError, IndexError, ValueError) as e:
	        errors.append("process %d: %s" % (p, e))
	m = {"mode": "hold", "processes": np}
	for k in ("wanted", "held", "still_ready", "cmd_wanted", "cmd_sent", "cmd_acked", "cmd_delivered"):
	    m[k] = sum(int(d.get(k, 0)) for d in parts)
	m["all_ready"] = len(parts) == np and all(d.get("all_ready") for d in parts)
	m["connect_s"] = round(sum(float(d.get("connect_s", 0)) for d in parts), 3)  # they open in turn
	m["connects_per_s"] = round(m["held"] / m["connect_s"], 1) if m["connect_s"] else 0
	grow = sum(max(0, int(d.get("lg_rss1_kb", 0)) - int(d.get("lg_rss0_kb", 0))) * 1024 for d in parts)
	m["lg_bytes_per_conn"] = round(grow / m["held"]) if m["held"] else 0
	m["cmd_s"] = max([float(d.get("cmd_s", 0)) for d in parts] or [0])
	hist = {}
	for d in parts:
	    for us, c in d.get("cmd_lat_hist", []):
	        hist[us] = hist.get(us, 0) + c
	total = sum(hist.values())
	def pct(q):
	    want, acc = int(total * q), 0
	    for us in sorted(hist):
	        acc += hist[us]
	        if acc > want:
	            return us
	    return max(hist) if hist else 0
	m["cmd_lat_us_p50"], m["cmd_lat_us_p99"], m["cmd_lat_us_max"] = pct(0.50), pct(0.99), pct(0.999999)
	if errors:
	    m["errors"] = errors
	print(json.dumps(m))
	PY
}

# scale_mosquitto N: Debian's Mosquitto in a namespace of its own (loopback), N held devices
scale_mosquitto() {
	local n=$1 mn=$1 mns=urmqtt-bench-scm-$$ mp up=0 r0 r1
	local hj=$out/scale-mosq-hold-$n.json ready=$out/scale-mosq-ready-$n
	ip netns add "$mns" || return 1
	vm_nss+=("$mns")
	ip netns exec "$mns" ip link set lo up
	ip netns exec "$mns" sysctl -q -w net.ipv4.ip_local_port_range="10000 65000" >/dev/null 2>&1
	# a descriptor per connection, in one process: above the hard limit, the largest count
	# that fits is measured and the memory extrapolated (said so in the figure)
	local nfd hfd
	hfd=$(ulimit -Hn)
	[ "$hfd" != unlimited ] && [ $((n + 1100)) -gt "$hfd" ] && mn=$((hfd - 1100))
	nfd=$((mn + 1024))
	ip netns exec "$mns" taskset -c "$bcpu" bash -c 'ulimit -n '"$nfd"' && exec "$0" -c "$1"' \
		"$mosq" "$out/mosquitto-scale.conf" >>"$out/mosquitto-scale.log" 2>&1 &
	mp=$!
	for _ in $(seq 50); do
		ip netns exec "$mns" bash -c 'exec 3<>/dev/tcp/127.0.0.1/8883' 2>/dev/null && { up=1; break; }
		sleep 0.2
	done
	[ $up = 1 ] || { say "[scale] Mosquitto did not start"; kill "$mp" 2>/dev/null; vm_net_del; return 1; }
	say "[scale] Mosquitto: $mn idle mTLS devices, 16 in flight$([ "$mn" = "$n" ] || echo " (the largest count one process's descriptors allow; extrapolated to $n)")"
	r0=$(rss_kb "$mp")
	rm -f "$ready"
	timeout $((sbudget + 300)) ip netns exec "$mns" taskset -c "$lcpu" "$loadgen" hold --host 127.0.0.1 \
		--src "$srcs_lo" --ca "$scerts/ca.crt" --devdir "$sdev" --n "$mn" --k 16 --keepalive "$ska" \
		--seconds 6 --open-s "$sbudget" --ready-file "$ready" >"$hj" 2>>"$out/loadgen-scale.log" &
	local hpid=$!
	for _ in $(seq $(((sbudget + 60) * 10))); do
		[ -f "$ready" ] && break
		kill -0 $hpid 2>/dev/null || break
		sleep 0.1
	done
	sleep 3
	r1=$(rss_kb "$mp")
	wait $hpid
	local j
	j=$(tail -n 1 "$hj")
	[ -n "$j" ] || j='{"error":"no result"}'
	echo "{\"broker\":\"mosquitto\",\"figure\":\"scale\",\"n\":$n,\"measured_n\":$mn,\"extrapolated\":$([ "$mn" = "$n" ] && echo false || echo true),\"rss0_kb\":$r0,\"rss1_kb\":$r1,\"lg\":$j}" >>"$raw"
	say "[scale] Mosquitto $n: $(python3 -c 'import json,sys
d=json.loads(sys.argv[1]); l=d["lg"]; h=l.get("held") or 0
per=(d["rss1_kb"]-d["rss0_kb"])*1024/h if h else 0
print("held=%s in %ss; RSS %d -> %d KiB, %s B/conn%s" % (h, l.get("connect_s"), d["rss0_kb"], d["rss1_kb"],
    int(per) if h else "n/a", "; extrapolated to %d: %.0f MiB" % (d["n"], per * d["n"] / 1048576) if d["extrapolated"] and h else ""))' "$(tail -n 1 "$raw")")"
	kill -TERM "$mp" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$mp" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$mp" 2>/dev/null
	wait "$mp" 2>/dev/null
	vm_net_del
}
