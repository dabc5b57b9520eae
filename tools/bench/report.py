#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# make bench, last step: reads the raw lines tools/bench/run.sh collected (one JSON object
# per load-generator run, idle measurement or microbenchmark), takes the median per figure
# and broker, prints the side-by-side table (both values and urMQTT/Mosquitto), writes
# OUT/results.json and, with gnuplot, OUT/bench-*.png. Reads and reports only; it never
# judges a figure as pass or fail.
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ap = argparse.ArgumentParser()
for a in ("raw", "out", "speed", "kvm", "cores", "runs", "seconds", "elapsed", "idle", "rate",
          "k", "pubs", "plot"):
    ap.add_argument("--" + a, default="")
args = ap.parse_args()

rows = []
for line in open(args.raw):
    line = line.strip()
    if not line:
        continue
    try:
        rows.append(json.loads(line))
    except ValueError:
        print("bench: unparsable result line: %s" % line[:120], file=sys.stderr)


def runs(broker, figure):
    return [r for r in rows if r.get("broker") == broker and r.get("figure") == figure
            and "error" not in r]


def med(broker, figure, key):
    v = [r[key] for r in runs(broker, figure) if isinstance(r.get(key), (int, float))]
    return statistics.median(v) if v else None


def cpu_us_per_hs(broker, figure):
    v = [r["cpu_ticks"] / r["hz"] * 1e6 / r["done"] for r in runs(broker, figure)
         if r.get("done") and r.get("hz")]
    return statistics.median(v) if v else None


def idle(broker):
    r = runs(broker, "idle")
    if not r:
        return None, None, 0, None
    r = r[-1]
    held = r.get("held") or 0
    rss = (r["rss1_kb"] - r["rss0_kb"]) * 1024 / held if held else None
    return r.get("own_bytes_per_conn"), rss, held, r.get("rss1_kb")


# ---- crypto floor from `openssl speed` ------------------------------------------------
floor = {}
try:
    txt = open(args.speed).read()
    m = re.search(r"ecdh \(X25519\)\s+\S+s\s+([\d.]+)", txt)
    if m:
        floor["x25519_ops_per_s"] = float(m.group(1))
    m = re.search(r"ecdsa \(nistp256\)\s+\S+s\s+\S+s\s+([\d.]+)\s+([\d.]+)", txt)
    if m:
        floor["p256_sign_per_s"] = float(m.group(1))
        floor["p256_verify_per_s"] = float(m.group(2))
except OSError:
    pass
if len(floor) == 3:
    # Server side of a full mTLS handshake: X25519 key generation + shared secret (2),
    # one ECDSA P-256 signature (CertificateVerify), two verifications (the client's
    # certificate by the CA, the client's CertificateVerify). Resumed (psk_dhe_ke): 2 X25519.
    floor["full_hs_us"] = 1e6 * (2 / floor["x25519_ops_per_s"] + 1 / floor["p256_sign_per_s"]
                                 + 2 / floor["p256_verify_per_s"])
    floor["resumed_hs_us"] = 1e6 * 2 / floor["x25519_ops_per_s"]

U, M = "urmqtt", "mosquitto"
own_u, rss_u, held_u, tot_u = idle(U)
own_m, rss_m, held_m, tot_m = idle(M)
figs = [
    # key, label, unit, urMQTT value, Mosquitto value, better
    ("hs_full_per_s", "full mTLS handshakes/s (%s in flight)" % args.k, "1/s",
     med(U, "hs_full", "handshakes_per_s"), med(M, "hs_full", "handshakes_per_s"), "higher"),
    ("hs_resumed_per_s", "resumed handshakes/s (ticket)", "1/s",
     med(U, "hs_resumed", "handshakes_per_s"), med(M, "hs_resumed", "handshakes_per_s"), "higher"),
    ("hs_full_cpu_us", "broker CPU per full handshake", "us",
     cpu_us_per_hs(U, "hs_full"), cpu_us_per_hs(M, "hs_full"), "lower"),
    ("hs_resumed_cpu_us", "broker CPU per resumed handshake", "us",
     cpu_us_per_hs(U, "hs_resumed"), cpu_us_per_hs(M, "hs_resumed"), "lower"),
    # urMQTT: the data plane's own figure (records + heap per connection); Mosquitto: RSS
    # growth over the N connections / N. urMQTT's RSS barely grows (its records are
    # allocated and touched at start), so the whole-process RSS is shown as well.
    ("idle_bytes_per_conn", "bytes/idle mTLS conn at %s (urMQTT own; Mosq RSS delta/N)"
     % args.idle, "B", own_u, rss_m, "lower"),
    ("idle_rss_total_kib", "process RSS holding %s idle conns" % args.idle, "KiB",
     tot_u, tot_m, "lower"),
    ("q0_msgs_per_s", "QoS 0 msgs/s, 64 B, %s pub -> 1 sub" % args.pubs, "1/s",
     med(U, "q0", "msgs_per_s"), med(M, "q0", "msgs_per_s"), "higher"),
    ("q1_msgs_per_s", "QoS 1 msgs/s, 64 B, %s pub -> 1 sub" % args.pubs, "1/s",
     med(U, "q1", "msgs_per_s"), med(M, "q1", "msgs_per_s"), "higher"),
    ("lat_p50_us", "latency p50 at %s msgs/s QoS 1" % args.rate, "us",
     med(U, "lat", "lat_us_p50"), med(M, "lat", "lat_us_p50"), "lower"),
    ("lat_p99_us", "latency p99 at %s msgs/s QoS 1" % args.rate, "us",
     med(U, "lat", "lat_us_p99"), med(M, "lat", "lat_us_p99"), "lower"),
    ("lat_p999_us", "latency p99.9 at %s msgs/s QoS 1" % args.rate, "us",
     med(U, "lat", "lat_us_p999"), med(M, "lat", "lat_us_p999"), "lower"),
]


def fmt(v):
    if v is None:
        return "n/a"
    if abs(v) >= 100:
        return "%.0f" % v
    return "%.1f" % v


res = {
    "machine": {"cores": int(args.cores or 0), "kvm": args.kvm, "uname": os.uname().release},
    "settings": {"runs": int(args.runs or 0), "seconds": float(args.seconds or 0),
                 "idle": int(args.idle or 0), "rate": float(args.rate or 0),
                 "in_flight": int(args.k or 0), "publishers": int(args.pubs or 0)},
    "elapsed_s": int(args.elapsed or 0),
    "held": {U: held_u, M: held_m},
    "figures": {},
    "crypto_floor": floor,
    "micro": [r for r in rows if r.get("micro")],
    "raw": rows,
}
print()
print("make bench — urMQTT (hosted, hostrel, TAP in a netns) vs Mosquitto %s (same netns, loopback)"
      % (subprocess.run(["sh", "-c", "mosquitto -h 2>/dev/null | head -n 1 | awk '{print $3}'"],
                        capture_output=True, text=True).stdout.strip() or "?"))
print("medians of %s runs of %ss; one core each for broker and load generator; KVM: %s"
      % (args.runs, args.seconds, "present" if args.kvm.startswith("present") else "absent"))
w = 72
print("%-*s %12s %12s %8s" % (w, "figure", "urMQTT", "Mosquitto", "ratio"))
for key, label, unit, u, m, better in figs:
    ratio = (u / m) if (u is not None and m) else None
    res["figures"][key] = {"label": label, "unit": unit, "urmqtt": u, "mosquitto": m,
                           "ratio_urmqtt_over_mosquitto": ratio, "better": better}
    print("%-*s %12s %12s %8s" % (w, "%s [%s, %s]" % (label, unit, better), fmt(u), fmt(m),
                                  ("%.2fx" % ratio) if ratio is not None else "n/a"))
if floor:
    print("crypto floor (openssl speed, this machine): X25519 %.0f op/s, P-256 sign %.0f/s verify %.0f/s"
          % (floor.get("x25519_ops_per_s", 0), floor.get("p256_sign_per_s", 0),
             floor.get("p256_verify_per_s", 0)))
    if "full_hs_us" in floor:
        print("  server-side floor per full mTLS handshake %.0f us (2 X25519 + 1 sign + 2 verify),"
              " per resumed %.0f us (2 X25519)" % (floor["full_hs_us"], floor["resumed_hs_us"]))

def micro1(name, **match):
    for r in res["micro"]:
        if r.get("micro") == name and all(r.get(k) == v for k, v in match.items()):
            return r
    return None


# In-process figures beside the floor (tools/bench/micro_tls.c, micro_tcp.c).
hf, hr = micro1("tls_handshake", kind="full"), micro1("tls_handshake", kind="resumed")
ti, tp, ts, tc = (micro1("tls_idle_conn"), micro1("tcp_echo_pump"), micro1("tcp_syn"),
                  micro1("tcp_idle_conn"))
summary = {}
if hf and hr:
    summary.update(tls_full_hs_server_cpu_us=hf.get("server_cpu_us_median"),
                   tls_resumed_hs_server_cpu_us=hr.get("server_cpu_us_median"),
                   tls_peak_bytes_per_handshake=max(hf.get("peak_bytes_per_handshake", 0),
                                                    hr.get("peak_bytes_per_handshake", 0)))

    def vs(v, f):
        return " (%.1fx the floor)" % (v / f) if f and v else ""
    print("  in process (micro_tls, our server vs an OpenSSL client in memory): server CPU per full"
          " mTLS handshake %s us%s, per resumed %s us%s (medians); peak %s B per handshake in flight"
          % (fmt(hf.get("server_cpu_us_median")), vs(hf.get("server_cpu_us_median"), floor.get("full_hs_us")),
             fmt(hr.get("server_cpu_us_median")), vs(hr.get("server_cpu_us_median"), floor.get("resumed_hs_us")),
             summary["tls_peak_bytes_per_handshake"]))
if ti:
    summary["tls_rec_bytes_per_idle_conn"] = ti.get("tls_rec_bytes")
    print("  TLS state per idle connection (record layer): %s B" % ti.get("tls_rec_bytes"))
if tp and ts and tc:
    summary.update(tcp_segs_per_cpu_s=tp.get("segs_per_cpu_s"),
                   tcp_only_segs_per_cpu_s=tp.get("tcp_segs_per_cpu_s"),
                   tcp_syn_cookie_ns=ts.get("ns_per_syn_cookie"),
                   tcp_syn_refused_ns=ts.get("ns_per_syn_refused"),
                   tcp_bytes_per_idle_conn=tc.get("bytes_per_idle_conn"))
    print("  TCP in process (micro_tcp): %s segments/s per core through the echo pump (%s without the"
          " fake peer, %s ns/segment); SYN -> cookie SYN-ACK %s ns, SYN refused by admission %s ns;"
          " %s B per idle connection (control block %s + table slots %s)"
          % (fmt(tp.get("segs_per_cpu_s")), fmt(tp.get("tcp_segs_per_cpu_s")), fmt(tp.get("tcp_ns_per_seg")),
             fmt(ts.get("ns_per_syn_cookie")), fmt(ts.get("ns_per_syn_refused")),
             tc.get("bytes_per_idle_conn"), tc.get("cb_bytes"), tc.get("slot_bytes_per_conn")))
res["micro_summary"] = summary
for r in res["micro"]:
    print("micro %s: %s" % (r.get("micro"), " ".join("%s=%s" % (k, v) for k, v in r.items()
                                                       if k != "micro")))
print("elapsed %ss; results: %s/results.json" % (args.elapsed, args.out))

with open(os.path.join(args.out, "results.json"), "w") as f:
    json.dump(res, f, indent=1)

# ---- plots ---------------------------------------------------------------------------
if args.plot == "1":
    dat = os.path.join(args.out, "bench.dat")
    with open(dat, "w") as f:
        for key, label, unit, u, m, better in figs:
            if u is None or m is None:
                continue
            f.write('"%s" %g %g\n' % (key, u, m))
    gp = """set terminal pngcairo size 1200,600 noenhanced
set output '%s'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'value (log scale; units per figure in results.json)'
set xtics rotate by -30
set key top right
set title 'urMQTT (hosted) vs Mosquitto — medians, this machine'
plot '%s' using 2:xtic(1) title 'urMQTT', '' using 3 title 'Mosquitto'
""" % (os.path.join(args.out, "bench-figures.png"), dat)
    r = subprocess.run(["gnuplot"], input=gp, text=True, capture_output=True)
    if r.returncode != 0:
        # pngcairo may be missing in gnuplot-nox; fall back to the gd png terminal
        r = subprocess.run(["gnuplot"], input=gp.replace("pngcairo", "png"), text=True,
                           capture_output=True)
    if r.returncode == 0:
        print("plot: %s" % os.path.join(args.out, "bench-figures.png"))
    else:
        print("plot: gnuplot failed: %s" % r.stderr.strip()[:200])
