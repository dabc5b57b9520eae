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
#           to BENCH_SCALE_MOSQ_MAX (100000): RSS growth per connection, time to open.
# One load-generator process holds a count's connections, so a count above the host's
# descriptor hard limit (ulimit -Hn; 20,000 in the container of the first run) is skipped and
# said so (figure scale_skipped with fd_hard_limit).
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
	# one load-generator process holds every connection: a descriptor each (a container's hard
	# limit may be lower than the count; 20,000 on the machine of the first run)
	local fdmax
	fdmax=$(ulimit -Hn)
	for n in $slist; do
		if [ "$fdmax" != unlimited ] && [ "$n" -gt $((fdmax - 64)) ]; then
			say "[scale] $n connections skipped: the descriptor hard limit here is $fdmax (one load-generator process holds them all)"
			echo "{\"broker\":\"urmqtt-scale\",\"figure\":\"scale_skipped\",\"n\":$n,\"fd_hard_limit\":$fdmax}" >>"$raw"
			continue
		fi
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
	local nsn=${ns_of[$b]} qpid c0 c1 t0 t1 km="" sysj="" hpid
	vm_net "$b" || { say "[scale] no namespace"; return 1; }
	ln -sfn "$(basename "$log")" "$out/$b.log" # where vm_dead looks for a panic
	if ! vm_start "$b" "$log"; then vm_net_del; return 1; fi
	qpid=${pid_of[$b]}
	blog=$log
	say "[scale] urMQTT image (-m $vm_mem, ${vm_acc^^}): $n idle mTLS devices, $sk in flight, keepalive ${ska}s"
	rm -f "$ready"
	c0=$(cpu_ticks "$qpid")
	t0=$(date +%s%N)
	timeout $((sbudget + sidle + 300)) ip netns exec "$nsn" taskset -c "$lcpu" "$loadgen" hold --host "$our_ip" \
		--src "$srcs_tap" --ca "$scerts/ca.crt" --devdir "$sdev" --svcdir "$scerts" --n "$n" --k "$sk" \
		--keepalive "$ska" --seconds $((sidle + 40)) --open-s "$((sbudget + 60))" --cmd "$scmd" \
		--ready-file "$ready" >"$hj" 2>>"$out/loadgen-scale.log" &
	hpid=$!
	for _ in $(seq $(((sbudget + 120) * 10))); do
		[ -f "$ready" ] && break
		kill -0 $hpid 2>/dev/null || break
		vm_dead "$b" && { say "[scale] the VM stopped while opening"; break; }
		sleep 0.1
	done
	t1=$(date +%s%N)
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
	wait $hpid
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

# scale_mosquitto N: Debian's Mosquitto in a namespace of its own (loopback), N held devices
scale_mosquitto() {
	local n=$1 mns=urmqtt-bench-scm-$$ mp up=0 r0 r1
	local hj=$out/scale-mosq-hold-$n.json ready=$out/scale-mosq-ready-$n
	ip netns add "$mns" || return 1
	vm_nss+=("$mns")
	ip netns exec "$mns" ip link set lo up
	ip netns exec "$mns" sysctl -q -w net.ipv4.ip_local_port_range="10000 65000" >/dev/null 2>&1
	# a descriptor per connection
	local nfd=$((n + 1024)) hfd
	hfd=$(ulimit -Hn)
	[ "$hfd" != unlimited ] && [ "$nfd" -gt "$hfd" ] && nfd=$hfd
	ip netns exec "$mns" taskset -c "$bcpu" bash -c 'ulimit -n '"$nfd"' && exec "$0" -c "$1"' \
		"$mosq" "$out/mosquitto-scale.conf" >>"$out/mosquitto-scale.log" 2>&1 &
	mp=$!
	for _ in $(seq 50); do
		ip netns exec "$mns" bash -c 'exec 3<>/dev/tcp/127.0.0.1/8883' 2>/dev/null && { up=1; break; }
		sleep 0.2
	done
	[ $up = 1 ] || { say "[scale] Mosquitto did not start"; kill "$mp" 2>/dev/null; vm_net_del; return 1; }
	say "[scale] Mosquitto: $n idle mTLS devices, 16 in flight"
	r0=$(rss_kb "$mp")
	rm -f "$ready"
	timeout $((sbudget + 300)) ip netns exec "$mns" taskset -c "$lcpu" "$loadgen" hold --host 127.0.0.1 \
		--src "$srcs_lo" --ca "$scerts/ca.crt" --devdir "$sdev" --n "$n" --k 16 --keepalive "$ska" \
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
	echo "{\"broker\":\"mosquitto\",\"figure\":\"scale\",\"n\":$n,\"rss0_kb\":$r0,\"rss1_kb\":$r1,\"lg\":$j}" >>"$raw"
	say "[scale] Mosquitto $n: $(python3 -c 'import json,sys
d=json.loads(sys.argv[1]); l=d["lg"]; h=l.get("held") or 0
print("held=%s in %ss; RSS %d -> %d KiB, %s B/conn" % (h, l.get("connect_s"), d["rss0_kb"], d["rss1_kb"],
    int((d["rss1_kb"]-d["rss0_kb"])*1024/h) if h else "n/a"))' "$(tail -n 1 "$raw")")"
	kill -TERM "$mp" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$mp" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$mp" 2>/dev/null
	wait "$mp" 2>/dev/null
	vm_net_del
}
