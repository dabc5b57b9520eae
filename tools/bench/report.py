#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# make bench, last step: reads the raw lines tools/bench/run.sh collected (one JSON object
# per load-generator run, idle measurement or microbenchmark), takes the median per figure
# and broker, prints the side-by-side table (both values and urMQTT/Mosquitto), then the
# virtual machines' table (the urMQTT image vs Mosquitto in a Linux guest, same QEMU
# settings; group vm of run.sh), writes OUT/results.json and, with gnuplot,
# OUT/bench-*.png. Reads and reports only; it never judges a figure as pass or fail.
# Each median keeps the per-run values it was taken from ("runs" of a figure in results.json:
# the noise band of tools/bench/history.py and report_html.py), and results.json names the
# commit, date and machine (CPU model, cores, accelerator) the figures belong to.
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

sys.dont_write_bytecode = True
from benchlib import this_cpu_model  # noqa: E402  (the machine signature of docs/bench/history.csv)

ap = argparse.ArgumentParser()
for a in ("raw", "out", "speed", "kvm", "cores", "runs", "seconds", "elapsed", "idle", "rate",
          "k", "pubs", "plot", "commit", "date", "only"):
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


class Med(float):
    """A median that keeps the per-run values it was taken from (.runs). Arithmetic on it
    gives a plain float: a figure derived from medians has no runs of its own."""

    def __new__(cls, vals):
        m = float.__new__(cls, statistics.median(vals))
        m.runs = list(vals)
        return m


def median_or_none(v):
    return Med(v) if v else None


def runs_of(x):
    return list(x.runs) if isinstance(x, Med) else None


def runs(broker, figure):
    return [r for r in rows if r.get("broker") == broker and r.get("figure") == figure
            and "error" not in r]


def med(broker, figure, key):
    v = [r[key] for r in runs(broker, figure) if isinstance(r.get(key), (int, float))]
    return median_or_none(v)


def medf(broker, figure, fn):
    """Median of fn(run) over the runs of a figure (fn may return None or raise KeyError)."""
    v = []
    for r in runs(broker, figure):
        try:
            x = fn(r)
        except (KeyError, TypeError, ZeroDivisionError):
            x = None
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            v.append(x)
    return median_or_none(v)


def one(broker, figure, key):
    r = runs(broker, figure)
    return r[-1].get(key) if r else None


def cpu_us_per_hs(broker, figure):
    v = [r["cpu_ticks"] / r["hz"] * 1e6 / r["done"] for r in runs(broker, figure)
         if r.get("done") and r.get("hz")]
    return median_or_none(v)


def idle(broker, n, figure="idle"):
    r = [x for x in runs(broker, figure) if str(x.get("n", x.get("held"))) == str(n)]
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

U, M, UN = "urmqtt", "mosquitto", "urmqtt-nodriver"
idle_ns = [n for n in str(args.idle).replace(",", " ").split() if n]
held = {U: {}, M: {}}
figs = [
    # key, label, unit, urMQTT value, Mosquitto value, better ("higher", "lower" or
    # "none": the two values are not comparable and no ratio is printed)
    ("hs_full_per_s", "full mTLS handshakes/s (%s in flight)" % args.k, "1/s",
     med(U, "hs_full", "handshakes_per_s"), med(M, "hs_full", "handshakes_per_s"), "higher"),
    ("hs_resumed_per_s", "resumed handshakes/s (ticket)", "1/s",
     med(U, "hs_resumed", "handshakes_per_s"), med(M, "hs_resumed", "handshakes_per_s"), "higher"),
    ("hs_full_cpu_us", "broker CPU per full handshake", "us",
     cpu_us_per_hs(U, "hs_full"), cpu_us_per_hs(M, "hs_full"), "lower"),
    ("hs_resumed_cpu_us", "broker CPU per resumed handshake", "us",
     cpu_us_per_hs(U, "hs_resumed"), cpu_us_per_hs(M, "hs_resumed"), "lower"),
    # the same on urMQTT restarted without its curve driver (run.sh hs_driver_off): the
    # driver's before and after in one run, each against the same Mosquitto figure
    ("hs_full_nodriver_per_s", "full mTLS handshakes/s, urMQTT's curve driver off", "1/s",
     med(UN, "hs_full", "handshakes_per_s"), med(M, "hs_full", "handshakes_per_s"), "higher"),
    ("hs_resumed_nodriver_per_s", "resumed handshakes/s, urMQTT's curve driver off", "1/s",
     med(UN, "hs_resumed", "handshakes_per_s"), med(M, "hs_resumed", "handshakes_per_s"), "higher"),
    ("hs_full_nodriver_cpu_us", "broker CPU per full handshake, urMQTT's curve driver off", "us",
     cpu_us_per_hs(UN, "hs_full"), cpu_us_per_hs(M, "hs_full"), "lower"),
    ("hs_resumed_nodriver_cpu_us", "broker CPU per resumed handshake, urMQTT's curve driver off", "us",
     cpu_us_per_hs(UN, "hs_resumed"), cpu_us_per_hs(M, "hs_resumed"), "lower"),
]
for n in idle_ns:
    # urMQTT: the data plane's own figure (records + heap per connection); Mosquitto: RSS
    # growth over the N connections / N. urMQTT's RSS barely grows (its records are
    # allocated and touched at start), so the whole-process RSS is shown as well.
    own_u, rss_u, held_u, tot_u = idle(U, n)
    own_m, rss_m, held_m, tot_m = idle(M, n)
    held[U][n], held[M][n] = held_u, held_m
    figs += [
        ("idle_bytes_per_conn_%s" % n, "bytes/idle mTLS conn at %s (urMQTT own; Mosq RSS delta/N)"
         % n, "B", own_u, rss_m, "lower"),
        ("idle_rss_total_kib_%s" % n, "process RSS holding %s idle conns" % n, "KiB",
         tot_u, tot_m, "lower"),
    ]
    if (held_u and held_u != int(n)) or (held_m and held_m != int(n)):
        print("bench: idle at %s: held urMQTT %s, Mosquitto %s" % (n, held_u, held_m))
for q in (0, 1, 2):
    figs.append(("q%d_msgs_per_s" % q, "QoS %d msgs/s, 64 B, %s pub -> 1 sub" % (q, args.pubs),
                 "1/s", med(U, "q%d" % q, "msgs_per_s"), med(M, "q%d" % q, "msgs_per_s"), "higher"))
for q, tag in ((1, "lat"), (2, "lat2")):
    for pk, pn in (("lat_us_p50", "p50"), ("lat_us_p99", "p99"), ("lat_us_p999", "p99.9")):
        figs.append(("%s_%s_us" % (tag, pn.replace(".", "")), "latency %s at %s msgs/s QoS %d"
                     % (pn, args.rate, q), "us", med(U, tag, pk), med(M, tag, pk), "lower"))



# ---- MQTT 5.0 beside 3.1.1 (group mqtt5 of run.sh) -----------------------------------------------
# The pubsub group's QoS 0/1 floods and the idle group's measurement, each in 5.0 (figures m5_*)
# and 3.1.1 (m5v311_*) in the same run: urMQTT / Mosquitto per version (the ratio column), and
# 5.0 / 3.1.1 per broker (rows *_over_v311, one value per broker, no ratio between them).
def over(a, b):
    return a / b if a is not None and b else None


m5 = {"reasons": {}, "server_receive_max": {}, "failed": {}, "held": {}}
for q in (0, 1):
    u5, m5q = med(U, "m5_q%d" % q, "msgs_per_s"), med(M, "m5_q%d" % q, "msgs_per_s")
    u3, m3 = med(U, "m5v311_q%d" % q, "msgs_per_s"), med(M, "m5v311_q%d" % q, "msgs_per_s")
    figs += [
        ("mqtt5_q%d_msgs_per_s" % q, "MQTT 5.0: QoS %d msgs/s, 64 B, %s pub -> 1 sub" % (q, args.pubs), "1/s",
         u5, m5q, "higher"),
        ("mqtt5_v311_q%d_msgs_per_s" % q, "3.1.1 beside it: QoS %d msgs/s (same run)" % q,
         "1/s", u3, m3, "higher"),
        ("mqtt5_q%d_over_v311" % q, "QoS %d msgs/s, 5.0 / 3.1.1 of each broker" % q, "x",
         over(u5, u3), over(m5q, m3), "none"),
    ]
for n in sorted({r.get("n") for r in rows if r.get("figure") in ("m5_idle", "m5v311_idle")
                 and isinstance(r.get("n"), int)}):
    # as the idle group: urMQTT's own figure, Mosquitto's RSS growth / N
    own_u5, _r, held_u5, _t = idle(U, n, "m5_idle")
    own_u3, _r, held_u3, _t = idle(U, n, "m5v311_idle")
    _o, rss_m5, held_m5, _t = idle(M, n, "m5_idle")
    _o, rss_m3, held_m3, _t = idle(M, n, "m5v311_idle")
    m5["held"]["%d" % n] = {U: {"5.0": held_u5, "3.1.1": held_u3}, M: {"5.0": held_m5, "3.1.1": held_m3}}
    figs += [
        ("mqtt5_idle_bytes_per_conn_%d" % n, "MQTT 5.0: bytes/idle conn at %d (urMQTT own; Mosq RSS delta/N)" % n,
         "B", own_u5, rss_m5, "lower"),
        ("mqtt5_v311_idle_bytes_per_conn_%d" % n, "3.1.1 beside it: bytes/idle conn at %d (same run)" % n,
         "B", own_u3, rss_m3, "lower"),
        ("mqtt5_idle_over_v311_%d" % n, "bytes/idle conn at %d, 5.0 / 3.1.1 of each broker" % n, "x",
         over(own_u5, own_u3), over(rss_m5, rss_m3), "none"),
    ]
    for b, h5, h3 in ((U, held_u5, held_u3), (M, held_m5, held_m3)):
        if (h5 and h5 != n) or (h3 and h3 != n):
            print("bench: mqtt5 idle at %d: %s held %s in 5.0, %s in 3.1.1" % (n, b, h5, h3))
# what the load generator saw of 5.0: the Receive Maximum announced, failures, reason codes
for r in rows:
    if r.get("figure", "").startswith("m5_") and r.get("broker") in (U, M):
        b = r["broker"]
        if r.get("server_receive_max") is not None:
            m5["server_receive_max"][b] = r["server_receive_max"]
        if r.get("failed"):
            m5["failed"][b] = m5["failed"].get(b, 0) + r["failed"]
        for k, v in (r.get("reasons") or {}).items():
            m5["reasons"].setdefault(b, {})
            m5["reasons"][b][k] = m5["reasons"][b].get(k, 0) + v
m5_note = []
if any(r.get("figure", "").startswith("m5_") for r in rows):
    for b in (U, M):
        m5_note.append("%s: Receive Maximum in its CONNACK %s; failed connections %d; reason codes received: %s"
                       % (b, m5["server_receive_max"].get(b, "none"), m5["failed"].get(b, 0),
                          ", ".join("%s=%d" % kv for kv in sorted(m5["reasons"].get(b, {}).items())) or "none"))

# ---- storm: established clients through a connection storm --------------------------------
def syn_refused(r):
    """SYNs the broker refused or dropped during the storm run (its own counters)."""
    a, b = r.get("srv0") or {}, r.get("srv1") or {}
    if r.get("broker") == U:
        ks = [k for k in b if k.startswith("refused_")]
    else:  # Linux: listen queue overflows and SYN-queue drops of Mosquitto's listener
        ks = ["ListenDrops", "TCPReqQFullDrop"]
    return sum(b.get(k, 0) - a.get(k, 0) for k in ks) if ks else None


def storm_rows():
    f = lambda w, k: (lambda r: r[w][k])
    rows_ = [
        ("storm_before_msgs_per_s", "storm: established msgs/s before (offered %s)" % args.rate,
         "1/s", f("before", "msgs_per_s"), "higher"),
        ("storm_during_msgs_per_s", "storm: established msgs/s during the storm", "1/s",
         f("storm", "msgs_per_s"), "higher"),
        ("storm_before_p50_us", "storm: established latency p50 before", "us",
         f("before", "lat_us_p50"), "lower"),
        ("storm_during_p50_us", "storm: established latency p50 during", "us",
         f("storm", "lat_us_p50"), "lower"),
        ("storm_before_p99_us", "storm: established latency p99 before", "us",
         f("before", "lat_us_p99"), "lower"),
        ("storm_during_p99_us", "storm: established latency p99 during", "us",
         f("storm", "lat_us_p99"), "lower"),
        ("storm_steady_after_ms", "storm: back to steady latency after it ends", "ms",
         lambda r: r["steady_after_ms"] if r["steady_after_ms"] >= 0 else None, "lower"),
        ("storm_attempts_per_s", "storm: new mTLS connection attempts/s offered", "1/s",
         lambda r: r["attempts_per_s"], "none"),
        ("storm_completed_per_s", "storm: storm connections completed (CONNACK)/s", "1/s",
         lambda r: r["completed_per_s"], "higher"),
        ("storm_syn_refused", "storm: SYNs refused/dropped by the broker (own counters)", "1",
         syn_refused, "none"),
        ("storm_syn_timeout", "storm: attempts with no SYN-ACK within the deadline", "1",
         lambda r: r["syn_timeout"], "none"),
        ("storm_tls_failed", "storm: attempts reset/failed during TLS", "1",
         lambda r: r["tls_failed"], "none"),
        ("storm_rss_peak_kib", "storm: broker RSS peak (broker restarted before the storms)",
         "KiB", lambda r: r["rss_peak_kb"], "lower"),

        ("storm_cpu_ms", "storm: broker CPU over the storm run", "ms",
         lambda r: r["cpu_ticks"] / r["hz"] * 1000, "none"),
    ]
    out_ = [(k, l, u, medf(U, "storm", fn), medf(M, "storm", fn), b) for k, l, u, fn, b in rows_]

    def growth(b):
        # the storm runs start on freshly started brokers: their highest RSS over all storm
        # runs minus the RSS before the first one
        rs = [r for r in runs(b, "storm") if isinstance(r.get("rss0_kb"), (int, float))]
        return (max(r["rss_peak_kb"] for r in rs) - rs[0]["rss0_kb"]) if rs else None
    out_.insert(len(out_) - 1, ("storm_rss_growth_kib",
                                "storm: broker RSS growth over all storm runs (from fresh start)",
                                "KiB", growth(U), growth(M), "lower"))
    return out_


figs += storm_rows()
storm_note = []
for b in (U, M):
    rs = runs(b, "storm")
    if rs:
        storm_note.append("%s: alive after every storm run: %s%s" % (
            b, all(r.get("alive") for r in rs),
            ("; heap peak %s B (own accounting)" % max(r.get("heap_peak") or 0 for r in rs))
            if b == U else ""))

# ---- durability: urMQTT with storage vs Mosquitto with persistence (autosave) ------------------
UD, UM, MD, MM = "urmqtt-disk", "urmqtt-mem", "mosquitto-persist", "mosquitto-mem"


def per_commit(r):
    return r["msgs_in"] / r["commits"] if r.get("commits") else None


def bytes_per_queued(r):
    return (r["bytes1"] - r["bytes0"]) / r["queued"] if r.get("queued") else None


d_ud, d_um = med(UD, "d_q1", "msgs_per_s"), med(UM, "d_q1", "msgs_per_s")
d_md, d_mm = med(MD, "d_q1", "msgs_per_s"), med(MM, "d_q1", "msgs_per_s")
figs += [
    ("durable_q1_msgs_per_s", "durable: QoS 1 msgs/s to a persistent sub (urMQTT storage | Mosq persistence*)",
     "1/s", d_ud, d_md, "higher"),
    ("durable_off_q1_msgs_per_s", "the same without storage | Mosq persistence false", "1/s", d_um, d_mm, "higher"),
    ("durable_share_pct", "durable rate as % of the rate without storage (same run; aim >= 50)", "%",
     100 * d_ud / d_um if d_ud and d_um else None, 100 * d_md / d_mm if d_md and d_mm else None, "none"),
    ("durable_msgs_per_commit", "durable: PUBLISHes per commit (urMQTT)", "1", medf(UD, "d_store", per_commit),
     None, "none"),
    ("durable_commit_p50_us", "durable: commit latency p50, write + fdatasync (urMQTT)", "us",
     med(UD, "d_store", "p50_us"), None, "none"),
    ("durable_commit_p99_us", "durable: commit latency p99 (urMQTT; histogram bucket bound)", "us",
     med(UD, "d_store", "p99_us"), None, "none"),
    ("durable_bytes_per_queued", "disk bytes per queued QoS 1 message, 64 B payload", "B",
     medf(UD, "d_bytes", bytes_per_queued), medf(MD, "d_bytes", bytes_per_queued), "lower"),
]
durable_note = ("durable: * Mosquitto's `persistence true` saves its database by autosave (every "
                "1800 s by default) and at exit, not per message: a message it acknowledged is not on "
                "its disk until the next save. urMQTT acknowledges after the commit's fdatasync.")

# ---- the telemetry log --------------------------------------------------------------------------
UT, UN = "urmqtt-tlog", "urmqtt-notlog"
t_on, t_off = med(UT, "t_q1", "msgs_per_s"), med(UN, "t_q1", "msgs_per_s")
t_secs = float(args.seconds or 0) or None
figs += [
    ("tlog_q1_msgs_per_s", "telemetry: QoS 1 msgs/s, each acknowledged after the log's flush (urMQTT)", "1/s",
     t_on, None, "none"),
    ("tlog_off_q1_msgs_per_s", "telemetry: QoS 1 msgs/s, the same broker with the log off (urMQTT)", "1/s",
     t_off, None, "none"),
    ("tlog_share_pct", "telemetry: rate with the log as % of the rate without it (same run)", "%",
     100 * t_on / t_off if t_on and t_off else None, None, "none"),
    ("tlog_written_per_s", "telemetry: records written out per second (one core does all)", "1/s",
     medf(UT, "t_store", lambda r: r["written"] / t_secs) if t_secs else None, None, "none"),
    ("tlog_bytes_per_record", "telemetry: disk bytes per record, 64-byte payload (padding included)", "B",
     medf(UT, "t_store", lambda r: r["bytes"] / r["written"]), None, "none"),
    ("tlog_flush_p50_us", "telemetry: write-out + flush latency p50 (histogram bucket bound)", "us",
     med(UT, "t_store", "flush_p50_us"), None, "none"),
    ("tlog_flush_p99_us", "telemetry: write-out + flush latency p99", "us",
     med(UT, "t_store", "flush_p99_us"), None, "none"),
]

# ---- the disk's lifecycle: backups, the scrubber, bring-up by disk size -----------------------
KB, KN, KS, KT = "urmqtt-backup", "urmqtt-nobackup", "urmqtt-scrub", "urmqtt-boot"


def medsel(broker, figure, key, **match):
    v = [r[key] for r in runs(broker, figure)
         if all(r.get(k) == x for k, x in match.items()) and isinstance(r.get(key), (int, float))]
    return median_or_none(v)


def maxsel(broker, figure, key):
    v = [r[key] for r in runs(broker, figure) if isinstance(r.get(key), (int, float))]
    return max(v) if v else None


k_p99_on, k_p99_off = med(KB, "k_store", "p99_us"), med(KN, "k_store", "p99_us")
k_q1_on, k_q1_off = med(KB, "k_q1", "msgs_per_s"), med(KN, "k_q1", "msgs_per_s")


def scrub_rate(kb):
    v = [r["bytes"] / r["secs"] / 2**20 for r in runs(KS, "k_scrub")
         if r.get("budget_kb") == kb and r.get("secs")]
    return median_or_none(v)


figs += [
    ("disk_backup_ms", "disk: a backup of the ~15 MB database under QoS 1 load, duration (median)", "ms",
     med(KB, "k_backup", "ms"), None, "none"),
    ("disk_backup_pages", "disk: pages per backup", "1", med(KB, "k_backup", "pages"), None, "none"),
    ("disk_backup_step_us", "disk: longest backup step (the worst over every backup)", "us",
     maxsel(KB, "k_backup", "step_us"), None, "none"),
    ("disk_commit_p99_backup_us", "disk: commit latency p99 with a backup every 2 s", "us", k_p99_on, None, "none"),
    ("disk_commit_p99_nobackup_us", "disk: commit latency p99 without backups (same run)", "us", k_p99_off, None,
     "none"),
    ("disk_commit_p99_ratio", "disk: commit p99 with backups / without", "x",
     k_p99_on / k_p99_off if k_p99_on and k_p99_off else None, None, "none"),
    ("disk_q1_share_pct", "disk: QoS 1 msgs/s with backups as % of without", "%",
     100 * k_q1_on / k_q1_off if k_q1_on and k_q1_off else None, None, "none"),
    ("disk_scrub_budget_mib_s", "disk: scrubber read rate at a budget of 4 MiB/s", "MiB/s", scrub_rate(4096), None,
     "none"),
    ("disk_scrub_max_mib_s", "disk: scrubber read rate at the largest budget, 1 GiB/s", "MiB/s",
     scrub_rate(1048576), None, "none"),
]
for mib, label in ((64, "64 MiB"), (16384, "16 GiB")):
    for phase in ("format", "reopen"):
        figs += [("disk_bringup_%s_%s_ms" % (mib, phase), "disk: bring-up on a %s disk file, %s" % (label, phase),
                  "ms", medsel(KT, "k_boot", "ms", mib=mib, phase=phase), None, "none"),
                 ("disk_bringup_%s_%s_kib" % (mib, phase), "disk: KiB read at that bring-up", "KiB",
                  medsel(KT, "k_boot", "read_kib", mib=mib, phase=phase), None, "none")]

# ---- boot time and image size ---------------------------------------------------------------
bu, bm = runs(U, "boot"), runs(M, "boot")
acc = bu[-1].get("accel", "?").upper() if bu else "?"
figs += [
    ("boot_loop_ms", "boot: QEMU start -> first core's loop (%s) | Mosq: exec -> accepting" % acc,
     "ms", bu[-1].get("loop_ms") if bu else None, bm[-1].get("serving_ms") if bm else None, "none"),
    ("boot_kernel_ms", "boot: kernel entry -> loop (the kernel's own figure, %s)" % acc, "ms",
     bu[-1].get("kernel_entry_to_loop_ms") if bu else None, None, "none"),
    ("boot_serving_ms", "boot: QEMU start -> DHCP lease, listening (%s)" % acc, "ms",
     bu[-1].get("serving_ms") if bu else None, None, "none"),
]
su, sm_ = runs(U, "size"), runs(M, "size")
su, sm_ = (su[-1] if su else {}), (sm_[-1] if sm_ else {})
tdb = lambda d: (d["text"] + d["data"] + d["bss"]) / 1024 if d.get("text") is not None else None
figs += [
    ("image_loaded_kib", "image: text+data+bss | Mosq: binary + %s shared libs" % sm_.get("objects", "?"),
     "KiB", tdb(su), tdb(sm_), "lower"),
    ("image_file_kib", "image: file bytes, stripped | Mosq: the same files", "KiB",
     su.get("file_stripped", 0) / 1024 if su else None,
     sm_.get("file", 0) / 1024 if sm_ else None, "lower"),
    ("image_file_debug_kib", "image: file bytes as built (with debug sections)", "KiB",
     su.get("file", 0) / 1024 if su else None, None, "none"),
]


def fmt(v):
    if v is None:
        return "n/a"
    if abs(v) >= 100:
        return "%.0f" % v
    return "%.1f" % v


def fmt_x(v):  # a ratio (unit x) in a value column: 1.1 would hide a 5% difference
    return "n/a" if v is None else "%.2f" % v


res = {
    "machine": {"cores": int(args.cores or 0), "kvm": args.kvm, "uname": os.uname().release,
                "cpu_model": this_cpu_model(), "accel": "KVM" if args.kvm.startswith("present") else "TCG"},
    "settings": {"runs": int(args.runs or 0), "seconds": float(args.seconds or 0),
                 "idle": [int(n) for n in idle_ns], "rate": float(args.rate or 0),
                 "in_flight": int(args.k or 0), "publishers": int(args.pubs or 0),
                 "only": args.only.split() or None},
    "elapsed_s": int(args.elapsed or 0),
    "held": held,
    "notes": storm_note + ["mqtt5: " + n_ for n_ in m5_note],
    "mqtt5": m5 if m5_note else None,
    "figures": {},
    "crypto_floor": floor,
    "micro": [r for r in rows if r.get("micro")],
    "dpbench": [r for r in rows if r.get("dpbench")],
    "raw": rows,
}
if args.commit:
    res["commit"] = args.commit
if args.date:
    res["date"] = args.date
print()
if not any(u is not None or m is not None for _k, _l, _u, u, m, _b in figs):
    print("make bench — no figures of the hosted broker and Mosquitto (BENCH_ONLY)")
print("make bench — urMQTT (hosted, hostrel, TAP in a netns) vs Mosquitto %s (same netns, loopback)"
      % (subprocess.run(["sh", "-c", "mosquitto -h 2>/dev/null | head -n 1 | awk '{print $3}'"],
                        capture_output=True, text=True).stdout.strip() or "?"))
print("medians of %s runs of %ss; one core each for broker and load generator; KVM: %s"
      % (args.runs, args.seconds, "present" if args.kvm.startswith("present") else "absent"))
w = 72
print("%-*s %12s %12s %8s" % (w, "figure", "urMQTT", "Mosquitto", "ratio"))
for key, label, unit, u, m, better in figs:
    if u is None and m is None:
        continue
    ratio = (u / m) if (u is not None and m and better != "none") else None
    res["figures"][key] = {"label": label, "unit": unit, "urmqtt": u, "mosquitto": m,
                           "ratio_urmqtt_over_mosquitto": ratio, "better": better,
                           "runs": {"urmqtt": runs_of(u), "mosquitto": runs_of(m)}}
    f_ = fmt_x if unit == "x" else fmt
    print("%-*s %12s %12s %8s" % (w, "%s [%s, %s]" % (label, unit, better), f_(u), f_(m),
                                  ("%.2fx" % ratio) if ratio is not None else "n/a"))
for n_ in storm_note:
    print("storm: " + n_)
for n_ in m5_note:
    print("mqtt5: " + n_)
if any(runs(b, "d_q1") for b in (UD, MD)):
    print(durable_note)
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
# Runs from before the curve driver (tls/accel) have no curve_driver field: their handshake
# lines are the configuration of their day and stand as the main figures.
hf = micro1("tls_handshake", kind="full", curve_driver="on") or micro1("tls_handshake", kind="full", curve_driver=None)
hr = (micro1("tls_handshake", kind="resumed", curve_driver="on")
      or micro1("tls_handshake", kind="resumed", curve_driver=None))
hf0, hr0 = (micro1("tls_handshake", kind="full", curve_driver="off"),
            micro1("tls_handshake", kind="resumed", curve_driver="off"))
ti, tp, ts, tc = (micro1("tls_idle_conn"), micro1("tcp_echo_pump"), micro1("tcp_syn"),
                  micro1("tcp_idle_conn"))
summary = {}


def vs(v, f):
    return " (%.1fx the floor)" % (v / f) if f and v else ""


if hf and hr:
    summary.update(tls_full_hs_server_cpu_us=hf.get("server_cpu_us_median"),
                   tls_resumed_hs_server_cpu_us=hr.get("server_cpu_us_median"),
                   tls_peak_bytes_per_handshake=max(hf.get("peak_bytes_per_handshake", 0),
                                                    hr.get("peak_bytes_per_handshake", 0)))

    print("  in process (micro_tls, our server vs an OpenSSL client in memory): server CPU per full"
          " mTLS handshake %s us%s, per resumed %s us%s (medians); peak %s B per handshake in flight"
          % (fmt(hf.get("server_cpu_us_median")), vs(hf.get("server_cpu_us_median"), floor.get("full_hs_us")),
             fmt(hr.get("server_cpu_us_median")), vs(hr.get("server_cpu_us_median"), floor.get("resumed_hs_us")),
             summary["tls_peak_bytes_per_handshake"]))
if hf0 and hr0:
    summary.update(tls_full_hs_server_cpu_us_builtin=hf0.get("server_cpu_us_median"),
                   tls_resumed_hs_server_cpu_us_builtin=hr0.get("server_cpu_us_median"))
    print("  the same with the curve driver off (mbedTLS's built-in arithmetic, alternating with the"
          " above): full %s us%s, resumed %s us%s"
          % (fmt(hf0.get("server_cpu_us_median")), vs(hf0.get("server_cpu_us_median"), floor.get("full_hs_us")),
             fmt(hr0.get("server_cpu_us_median")), vs(hr0.get("server_cpu_us_median"), floor.get("resumed_hs_us"))))
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
# Software flow steering (tools/bench/micro_rss.c): ns per 12-byte RSS input.
rh = micro1("rss_hash")
if rh:
    summary.update(rss_ns_per_hash_table=rh.get("ns_per_hash_table"),
                   rss_ns_per_steer_flow=rh.get("ns_per_steer_flow"))
    print("  RSS steering in software (micro_rss): per 12-byte IPv4/TCP input, bit-serial Toeplitz %s ns,"
          " table %s ns, rss_steer_flow %s ns"
          % (fmt(rh.get("ns_per_hash_bitserial")), fmt(rh.get("ns_per_hash_table")),
             fmt(rh.get("ns_per_steer_flow"))))
# Routing between shards (tools/bench/micro_shard.c): one shard vs across two, side by side.
rows_sh = []
for q in (0, 1):
    for pl in (64, 1024):
        one = micro1("shard_route", placement="one_shard", qos=q, payload=pl)
        acr = micro1("shard_route", placement="across_shards", qos=q, payload=pl)
        if one and acr and one.get("routed_msgs_per_cpu_s"):
            ratio = acr["routed_msgs_per_cpu_s"] / one["routed_msgs_per_cpu_s"]
            rows_sh.append("QoS %d %d B: %s vs %s (%.2fx)" % (q, pl, fmt(acr["routed_msgs_per_cpu_s"]),
                                                             fmt(one["routed_msgs_per_cpu_s"]), ratio))
            summary["shard_routed_msgs_per_cpu_s_q%d_%d" % (q, pl)] = acr["routed_msgs_per_cpu_s"]
            summary["shard_vs_one_q%d_%d" % (q, pl)] = round(ratio, 3)
if rows_sh:
    print("  routed messages per CPU-second across two shards vs in one (micro_shard, 10 subscribers; "
          "both cores' work counted): " + "; ".join(rows_sh))
# In-guest data plane (tools/dpbench): handshakes/s with 1, 2 (, 4) worker cores and the scaling,
# in the x86_64 image (rows "guest", keys dpbench_*) and the aarch64 one (rows "guest-aarch64",
# keys dpbench_aarch64_*; TCG).
for dpb_tag, dpb_pre, dpb_what in (("guest", "dpbench_", ""), ("guest-aarch64", "dpbench_aarch64_", ", aarch64 guest (TCG)")):
    dpb = {r["workers"]: r for r in res["dpbench"] if r.get("dpbench") == dpb_tag}
    if not dpb:
        continue
    one = dpb.get(1, {}).get("handshakes_per_s")
    parts = []
    for w in sorted(dpb):
        h = dpb[w].get("handshakes_per_s")
        sc = (" (%.2fx of 1)" % (h / one)) if one and h and w > 1 else ""
        parts.append("%d worker%s %s/s%s" % (w, "s" if w > 1 else "", fmt(h), sc))
        summary[dpb_pre + "workers_%d_hs_per_s" % w] = h
        if one and h and w > 1:
            summary[dpb_pre + "scaling_%d" % w] = round(h / one, 2)
    print("  in-guest data plane%s (dp-bench: TLS 1.3 + mTLS + CONNECT/CONNACK + DISCONNECT, client in the"
          " same guest, no NIC): " % dpb_what + "; ".join(parts))
res["micro_summary"] = summary


# ---- virtual machines: the urMQTT image vs Linux+Mosquitto in a guest, same QEMU settings ----
def vm_table():
    st = [r for r in rows if r.get("vm") == "settings"]
    if not st:
        return None
    st = st[-1]
    UV, LG = "urmqtt-vm", "linux-guest"

    def idle_vm(b, fn):
        r = [x for x in runs(b, "vm_idle") if x.get("held")]
        try:
            return fn(r[-1]) if r else None
        except (KeyError, TypeError, ZeroDivisionError):
            return None
    own_u = idle_vm(UV, lambda r: r["own_bytes_per_conn"])
    rss_g = idle_vm(LG, lambda r: (r["rss1_kb"] - r["rss0_kb"]) * 1024 / r["held"])
    used_g = idle_vm(LG, lambda r: (r["used1_kb"] - r["used0_kb"]) * 1024 / r["held"])
    n = st.get("idle")
    rate = st.get("rate")
    f = [
        ("vm_hs_full_per_s", "full mTLS handshakes/s (%s in flight)" % args.k, "1/s",
         med(UV, "vm_hs_full", "handshakes_per_s"), med(LG, "vm_hs_full", "handshakes_per_s"), "higher"),
        ("vm_hs_resumed_per_s", "resumed handshakes/s (ticket)", "1/s",
         med(UV, "vm_hs_resumed", "handshakes_per_s"), med(LG, "vm_hs_resumed", "handshakes_per_s"),
         "higher"),
        ("vm_hs_full_cpu_us", "QEMU process CPU per full handshake", "us",
         cpu_us_per_hs(UV, "vm_hs_full"), cpu_us_per_hs(LG, "vm_hs_full"), "lower"),
        ("vm_hs_resumed_cpu_us", "QEMU process CPU per resumed handshake", "us",
         cpu_us_per_hs(UV, "vm_hs_resumed"), cpu_us_per_hs(LG, "vm_hs_resumed"), "lower"),
        ("vm_idle_bytes_per_conn", "bytes/idle conn at %s (urMQTT slot + heap blocks/N | Mosq RSS delta/N)"
         % n, "B", own_u, rss_g, "lower"),
        ("vm_idle_bytes_per_conn_guest", "bytes/idle conn at %s (urMQTT the same | guest used mem delta/N)"
         % n, "B", own_u, used_g, "lower"),
        ("vm_idle_connect_s", "seconds to open the %s idle connections" % n, "s",
         idle_vm(UV, lambda r: r["connect_s"]), idle_vm(LG, lambda r: r["connect_s"]), "lower"),
        ("vm_q0_msgs_per_s", "QoS 0 msgs/s, 64 B, %s pub -> 1 sub" % args.pubs, "1/s",
         med(UV, "vm_q0", "msgs_per_s"), med(LG, "vm_q0", "msgs_per_s"), "higher"),
        ("vm_q1_msgs_per_s", "QoS 1 msgs/s, 64 B, %s pub -> 1 sub" % args.pubs, "1/s",
         med(UV, "vm_q1", "msgs_per_s"), med(LG, "vm_q1", "msgs_per_s"), "higher"),
        ("vm_lat_p50_us", "latency p50 at %s msgs/s QoS 1" % rate, "us",
         med(UV, "vm_lat", "lat_us_p50"), med(LG, "vm_lat", "lat_us_p50"), "lower"),
        ("vm_lat_p99_us", "latency p99 at %s msgs/s QoS 1" % rate, "us",
         med(UV, "vm_lat", "lat_us_p99"), med(LG, "vm_lat", "lat_us_p99"), "lower"),
        ("vm_lat_msgs_per_s", "msgs/s delivered at that rate", "1/s",
         med(UV, "vm_lat", "msgs_per_s"), med(LG, "vm_lat", "msgs_per_s"), "higher"),
        ("vm_boot_ms", "QEMU start -> accepting TCP on 8883 (median of %s)" % st.get("boots"), "ms",
         med(UV, "vm_boot", "ms"), med(LG, "vm_boot", "ms"), "lower"),
    ]
    out_ = {"settings": st, "figures": {}, "notes": []}
    for b in (UV, LG):
        rs = [r.get("before") for r in rows if r.get("broker") == b and r.get("figure") == "vm_restart"]
        if rs:
            out_["notes"].append("%s stopped (crash or panic) and was booted again before: %s"
                                 % (b, ", ".join(rs)))
        h = idle_vm(b, lambda r: r["held"])
        if h is not None and n and h != n:
            out_["notes"].append("%s held %s of %s idle connections" % (b, h, n))
    print()
    print("virtual machines, same QEMU settings (%s here): urMQTT image vs Linux+Mosquitto guest"
          % st.get("accel", "?").upper())
    print("q35, -smp %s -m %s, virtio-net over a TAP in a namespace of its own, pinned to the broker"
          " core; medians of %s runs of %ss (idle: one run)"
          % (st.get("smp"), st.get("mem"), args.runs, args.seconds))
    w_ = 72
    print("%-*s %12s %12s %8s" % (w_, "figure", "urMQTT VM", "Linux+Mosq", "ratio"))
    for key, label, unit, u, m, better in f:
        if u is None and m is None:
            continue
        ratio = (u / m) if (u is not None and m and better != "none") else None
        out_["figures"][key] = {"label": label, "unit": unit, "urmqtt_vm": u, "linux_guest": m,
                                "ratio_urmqtt_vm_over_linux_guest": ratio, "better": better,
                                "runs": {"urmqtt_vm": runs_of(u), "linux_guest": runs_of(m)}}
        print("%-*s %12s %12s %8s" % (w_, "%s [%s, %s]" % (label, unit, better), fmt(u), fmt(m),
                                      ("%.2fx" % ratio) if ratio is not None else "n/a"))
    for n_ in out_["notes"]:
        print("vm: " + n_)
    return out_


res["vm"] = vm_table()


def cores_table():
    """Group cores: the urMQTT image and the Linux+Mosquitto guest with each vCPU count of
    the run (BENCH_CORES_SMP), QoS 0/1/2 flat out; the image's shard and routing lines after
    each run. Figures are listed (not keyed) because every one exists once per vCPU count."""
    sts = [r for r in rows if r.get("cores") == "settings"]
    if not sts:
        return None
    UV, LG = "urmqtt-vm", "linux-guest"
    out_ = {"settings": sts, "figures": [], "shards": []}
    print()
    # vm_cpus/lg_cpus: host CPUs of every VM and of the load generator (older results: the
    # VMs pinned to the one broker core)
    pin = ("VMs on host CPUs %s, load generator on %s" % (sts[0]["vm_cpus"], sts[0].get("lg_cpus", "?"))
           if sts[0].get("vm_cpus") else "pinned to the broker core")
    print("cores: the same image and guest with %s vCPU(s) in one run (%s, %s; "
          "%s publishers -> 1 subscriber, 64 B, medians of %s runs of %ss)"
          % (", ".join(str(x.get("smp")) for x in sts), sts[0].get("accel", "?").upper(), pin, args.pubs,
             args.runs, args.seconds))
    print("%-40s %12s %12s %8s" % ("figure", "urMQTT VM", "Linux+Mosq", "ratio"))
    for st in sts:
        smp = st.get("smp")
        for q in (0, 1, 2):
            fig = "cores_q%d_smp%s" % (q, smp)
            u, m = med(UV, fig, "msgs_per_s"), med(LG, fig, "msgs_per_s")
            if u is None and m is None:
                continue
            ratio = (u / m) if (u is not None and m) else None
            out_["figures"].append({"key": "cores_q%d_msgs_per_s" % q, "smp": smp,
                                    "label": "QoS %d msgs/s, %s vCPU(s)" % (q, smp), "unit": "1/s",
                                    "urmqtt_vm": u, "linux_guest": m,
                                    "ratio_urmqtt_vm_over_linux_guest": ratio, "better": "higher",
                                    "runs": {"urmqtt_vm": runs_of(u), "linux_guest": runs_of(m)}})
            print("%-40s %12s %12s %8s" % ("QoS %d msgs/s, -smp %s" % (q, smp), fmt(u), fmt(m),
                                           ("%.2fx" % ratio) if ratio is not None else "n/a"))
            for r in rows:
                if r.get("figure") == "cores_shards" and r.get("smp") == smp and r.get("qos") == q:
                    out_["shards"].append(r)
    # the urMQTT image against itself: each vCPU count's median over the first one's
    base = sts[0].get("smp")
    for st in sts[1:]:
        smp = st.get("smp")
        for q in (0, 1, 2):
            u1 = med(UV, "cores_q%d_smp%s" % (q, base), "msgs_per_s")
            un = med(UV, "cores_q%d_smp%s" % (q, smp), "msgs_per_s")
            if u1 and un is not None:
                print("%-40s %12s %12s %8s" % ("urMQTT QoS %d, -smp %s / -smp %s" % (q, smp, base),
                                               "%.2fx" % (un / u1), "", ""))
    # delivered per CPU-second of the whole QEMU process (every vCPU and I/O thread): what
    # the guest did with the CPU it got, apart from how much a shared host gave it
    for st in sts:
        smp = st.get("smp")
        for q in (0, 1, 2):
            fig = "cores_q%d_smp%s" % (q, smp)
            e = medf(UV, fig, lambda r: r["delivered_in_window"] / (r["cpu_ticks"] / r["hz"]))
            c = medf(UV, fig, lambda r: r["cpu_ticks"] / r["hz"] / r["elapsed_s"])
            if e is not None:
                print("%-40s %12s %12s %8s" % ("urMQTT QoS %d, -smp %s: msgs per CPU-s" % (q, smp), fmt(e),
                                               "", ("%.2f CPU" % c) if c is not None else ""))
    for st in sts:  # the last run's counters of each setting, as the image printed them
        for q in (0, 1, 2):
            last = [r for r in out_["shards"] if r.get("smp") == st.get("smp") and r.get("qos") == q]
            if last and st.get("smp", 1) > 1:
                print("  -smp %s QoS %d, after the last run: %s" % (st.get("smp"), q, last[-1].get("lines", "")))
    return out_


res["cores"] = cores_table()


def scale_table():
    """Group scale (tools/bench/scale.sh): one row per count, urMQTT image beside Mosquitto
    (one run each: a count takes minutes under TCG). Mosquitto's bytes are its RSS growth / N,
    measured at the largest count one process's descriptors allow (its "measured_n"; the row
    says "x" after the figure when that is below N: extrapolated); a count skipped for time is
    listed with its estimate."""
    sts = [r for r in rows if r.get("scale") == "settings"]
    if not sts:
        return None
    st = sts[-1]
    out_ = {"settings": st, "rows": []}
    print()
    print("scale: the urMQTT image (config/scale-100k.conf, -smp 1 -m %s, %s) vs Mosquitto (host process);"
          " %s in flight while opening, keepalive %ss, %ss idle, commands to %s random devices"
          % (st.get("mem"), st.get("accel", "?").upper(), st.get("k"), st.get("keepalive_s"),
             st.get("idle_s"), st.get("cmd")))
    print("%8s %8s %9s %8s %9s %11s %9s %18s %16s %10s %8s %11s"
          % ("N", "held", "open s", "B/conn", "free MiB", "QEMU CPU/s", "pings/s", "cmd p50/p99 us",
             "cmd delivered", "loadgen B", "Mosq B", "Mosq open s"))
    for r in [x for x in rows if x.get("figure") == "scale" and x.get("broker") == "urmqtt-scale"]:
        n, lg, sy = r.get("n"), r.get("lg") or {}, r.get("sys") or {}
        mq = [x for x in rows if x.get("figure") == "scale" and x.get("broker") == "mosquitto" and x.get("n") == n]
        mb = ms = mn = None
        if mq:
            ml = mq[-1].get("lg") or {}
            h = ml.get("held") or 0
            mb = int((mq[-1]["rss1_kb"] - mq[-1]["rss0_kb"]) * 1024 / h) if h else None
            ms = ml.get("connect_s")
            mn = mq[-1].get("measured_n", n)
        free = next((v for k, v in sy.items() if k.endswith("heap.free") or k.endswith("heap/free")), None)
        try:
            free = float(free) if free is not None else None
        except ValueError:
            free = None
        row = {"n": n, "held": lg.get("held"), "connect_s": lg.get("connect_s"),
               "connects_per_s": lg.get("connects_per_s"), "own_bytes_per_conn": r.get("own_bytes_per_conn"),
               "slot": r.get("slot"), "heap_free": free, "idle_cpu_s_per_s": r.get("idle_cpu_s_per_s"),
               "pings_per_s": r.get("pings_per_s"), "cmd_delivered": lg.get("cmd_delivered"),
               "cmd_wanted": lg.get("cmd_wanted"), "cmd_lat_us_p50": lg.get("cmd_lat_us_p50"),
               "cmd_lat_us_p99": lg.get("cmd_lat_us_p99"), "cmd_lat_us_max": lg.get("cmd_lat_us_max"),
               "loadgen_bytes_per_conn": lg.get("lg_bytes_per_conn"), "mosquitto_bytes_per_conn": mb,
               "mosquitto_connect_s": ms, "mosquitto_measured_n": mn,
               "mosquitto_extrapolated_mib": round(mb * n / 1048576, 1) if mb and mn != n else None,
               "loadgen_processes": lg.get("processes", 1)}
        out_["rows"].append(row)
        cpu = row["idle_cpu_s_per_s"]
        print("%8s %8s %9s %8s %9s %11s %9s %18s %16s %10s %8s %11s"
              % (n, fmt(row["held"]), fmt(row["connect_s"]), fmt(row["own_bytes_per_conn"]),
                 fmt(free / 1048576) if free is not None else "n/a", "n/a" if cpu is None else "%.3f" % cpu,
                 fmt(row["pings_per_s"]), "%s/%s" % (fmt(row["cmd_lat_us_p50"]), fmt(row["cmd_lat_us_p99"])),
                 "%s of %s" % (fmt(row["cmd_delivered"]), fmt(row["cmd_wanted"])),
                 fmt(row["loadgen_bytes_per_conn"]), fmt(mb) + ("x" if mn not in (None, n) else ""), fmt(ms)))
        if mn not in (None, n):
            print("%8s Mosquitto measured at %s connections (one process's descriptors), extrapolated: %s MiB for %s"
                  % ("", mn, fmt(row["mosquitto_extrapolated_mib"]), n))
    for r in [x for x in rows if x.get("figure") == "scale_skipped"]:
        out_["rows"].append({"n": r.get("n"), "skipped": True, "est_open_s": r.get("est_open_s"),
                             "fd_hard_limit": r.get("fd_hard_limit")})
        if r.get("fd_hard_limit"):
            print("%8s skipped: the host's descriptor hard limit is %s" % (r.get("n"), r.get("fd_hard_limit")))
        else:
            print("%8s skipped: ~%ss to open at the previous count's rate" % (r.get("n"), r.get("est_open_s")))
    return out_


res["scale"] = scale_table()
for r in res["micro"]:
    print("micro %s: %s" % (r.get("micro"), " ".join("%s=%s" % (k, v) for k, v in r.items()
                                                       if k != "micro")))
print("elapsed %ss; results: %s/results.json" % (args.elapsed, args.out))

with open(os.path.join(args.out, "results.json"), "w") as f:
    json.dump(res, f, indent=1)

# ---- plots ---------------------------------------------------------------------------
if args.plot == "1" and any(u and m for _k, _l, _u, u, m, _b in figs):
    dat = os.path.join(args.out, "bench.dat")
    with open(dat, "w") as f:
        for key, label, unit, u, m, better in figs:
            if u is None or m is None or not u or not m:
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
