# SPDX-License-Identifier: MIT
# tools/bench: what the report (report_html.py) and the history (history.py) share: the
# catalogue of figures (group and short name of every results.json key), each figure's
# noise band from its per-run values, the machine signature, docs/bench/history.csv's rows
# and the comparison that names every figure that moved beyond its noise band.
# Reads results.json and history.csv; never measures and never invents a figure: a value
# absent from the results stays absent (None) all the way to the page.
import csv
import math
import os
import re
import statistics
import subprocess
import time

# The ratio chart's groups, in its order, then the groups of figures urMQTT has alone.
RATIO_GROUPS = ["memory", "handshakes", "messages", "latency", "storm", "boot and size", "VMs",
                "cores"]
ALONE_GROUPS = ["durability", "telemetry", "disk", "in process"]

# A figure whose runs give no spread (one run) is compared with this band, said so.
ASSUMED_BAND = 0.25
# No band is narrower than this: timer granularity and rounding of the medians.
MIN_BAND = 0.05

HISTORY_FIELDS = ["commit", "date", "cpu_model", "cores", "accel", "figure", "group", "unit",
                  "better", "urmqtt", "mosquitto", "ratio", "noise", "runs", "label", "note"]

_BY_CORES = ("vm_hs_full_per_s", "vm_hs_resumed_per_s", "vm_q0_msgs_per_s", "vm_q1_msgs_per_s")
_MICRO = {
    "micro_tls_full_hs_server_cpu_us": "TLS server CPU per full handshake (micro_tls)",
    "micro_tls_resumed_hs_server_cpu_us": "TLS server CPU per resumed handshake (micro_tls)",
    "micro_tls_peak_bytes_per_handshake": "heap peak per handshake in flight (micro_tls)",
    "micro_tls_rec_bytes_per_idle_conn": "TLS record state per idle conn (micro_tls)",
    "micro_tcp_segs_per_cpu_s": "TCP segments per CPU-second, echo pump (micro_tcp)",
    "micro_tcp_only_segs_per_cpu_s": "TCP alone, segments per CPU-second (micro_tcp)",
    "micro_tcp_syn_cookie_ns": "SYN to cookie SYN-ACK (micro_tcp)",
    "micro_tcp_syn_refused_ns": "SYN refused by admission (micro_tcp)",
    "micro_tcp_bytes_per_idle_conn": "TCP state per idle conn (micro_tcp)",
    "micro_rss_ns_per_hash_table": "RSS hash, table (micro_rss)",
    "micro_rss_ns_per_steer_flow": "rss_steer_flow (micro_rss)",
}
_PCT = {"p50": "p50", "p99": "p99", "p999": "p99.9"}
_SHORT = {
    "hs_full_per_s": "full mTLS handshakes/s",
    "hs_resumed_per_s": "resumed handshakes/s",
    "hs_full_cpu_us": "CPU per full handshake",
    "hs_resumed_cpu_us": "CPU per resumed handshake",
    "hs_full_nodriver_per_s": "full handshakes/s, curve driver off",
    "hs_resumed_nodriver_per_s": "resumed handshakes/s, curve driver off",
    "hs_full_nodriver_cpu_us": "CPU per full handshake, curve driver off",
    "hs_resumed_nodriver_cpu_us": "CPU per resumed handshake, curve driver off",
    "durable_q1_msgs_per_s": "durable QoS 1 flood",
    "durable_off_q1_msgs_per_s": "QoS 1 flood, storage off",
    "durable_bytes_per_queued": "disk bytes per queued message",
    "storm_before_msgs_per_s": "storm: msgs/s before",
    "storm_during_msgs_per_s": "storm: msgs/s during",
    "storm_before_p50_us": "storm: p50 before",
    "storm_during_p50_us": "storm: p50 during",
    "storm_before_p99_us": "storm: p99 before",
    "storm_during_p99_us": "storm: p99 during",
    "storm_steady_after_ms": "storm: back to steady after",
    "storm_completed_per_s": "storm: connections completed/s",
    "storm_rss_peak_kib": "storm: RSS peak",
    "storm_rss_growth_kib": "storm: RSS growth",
    "image_loaded_kib": "loaded image (text+data+bss)",
    "image_file_kib": "image file, stripped",
    "boot_loop_ms": "start to serving",
    "vm_hs_full_per_s": "full handshakes/s",
    "vm_hs_resumed_per_s": "resumed handshakes/s",
    "vm_hs_full_cpu_us": "QEMU CPU per full handshake",
    "vm_hs_resumed_cpu_us": "QEMU CPU per resumed handshake",
    "vm_idle_bytes_per_conn": "bytes per idle conn (RSS)",
    "vm_idle_bytes_per_conn_guest": "bytes per idle conn (guest memory)",
    "vm_idle_connect_s": "time to open the idle conns",
    "vm_q0_msgs_per_s": "QoS 0 flood",
    "vm_q1_msgs_per_s": "QoS 1 flood",
    "vm_lat_p50_us": "QoS 1 latency p50",
    "vm_lat_p99_us": "QoS 1 latency p99",
    "vm_lat_msgs_per_s": "msgs/s at the latency rate",
    "vm_boot_ms": "start to accepting TCP",
    "storm_attempts_per_s": "storm: connection attempts/s offered",
    "storm_syn_refused": "storm: SYNs refused or dropped",
    "storm_syn_timeout": "storm: attempts without a SYN-ACK",
    "storm_tls_failed": "storm: attempts failed in TLS",
    "storm_cpu_ms": "storm: broker CPU over the run",
    "boot_kernel_ms": "boot: kernel entry to loop",
    "boot_serving_ms": "boot: QEMU start to DHCP lease",
    "image_file_debug_kib": "image file with debug sections",
    "durable_share_pct": "durable: % of the rate without storage",
    "durable_msgs_per_commit": "durable: PUBLISHes per commit",
    "durable_commit_p50_us": "durable: commit p50 (write + fdatasync)",
    "durable_commit_p99_us": "durable: commit p99 (write + fdatasync)",
    "tlog_q1_msgs_per_s": "telemetry: QoS 1 msgs/s, log on",
    "tlog_off_q1_msgs_per_s": "telemetry: QoS 1 msgs/s, log off",
    "tlog_share_pct": "telemetry: % of the rate without the log",
    "tlog_written_per_s": "telemetry: records written/s",
    "tlog_bytes_per_record": "telemetry: disk bytes per record",
    "tlog_flush_p50_us": "telemetry: flush p50",
    "tlog_flush_p99_us": "telemetry: flush p99",
    "disk_backup_ms": "disk: a backup of ~15 MB under load",
    "disk_backup_pages": "disk: pages per backup",
    "disk_backup_step_us": "disk: longest backup step",
    "disk_commit_p99_backup_us": "disk: commit p99, a backup every 2 s",
    "disk_commit_p99_nobackup_us": "disk: commit p99 without backups",
    "disk_commit_p99_ratio": "disk: commit p99, with backups ÷ without",
    "disk_q1_share_pct": "disk: QoS 1 rate with backups, % of without",
    "disk_scrub_budget_mib_s": "disk: scrubber at a 4 MiB/s budget",
    "disk_scrub_max_mib_s": "disk: scrubber at the largest budget",
}


def group_of(key, smp=None):
    """The group of a results.json figure key (VM keys: by their vCPU count)."""
    if key.startswith("cores_"):
        return "cores"
    if key.startswith("vm_"):
        # the cores group: what scales with vCPUs (handshakes/s, msgs/s) above one vCPU
        return "cores" if smp and smp > 1 and key in _BY_CORES else "VMs"
    if key.startswith("mqtt5_"):
        # run.sh's group mqtt5: beside the 3.1.1 figures of the same kind
        return "memory" if "_idle_" in key else "messages"
    for prefix, g in (("idle_", "memory"), ("hs_", "handshakes"), ("lat", "latency"),
                      ("storm_", "storm"), ("boot_", "boot and size"), ("image_", "boot and size"),
                      ("tlog_", "telemetry"), ("disk_", "disk"), ("dpbench_", "cores"),
                      ("micro_", "in process")):
        if key.startswith(prefix):
            return g
    if re.match(r"q\d_msgs_per_s$", key) or key in ("durable_q1_msgs_per_s",
                                                    "durable_off_q1_msgs_per_s",
                                                    "durable_bytes_per_queued"):
        return "messages"
    if key.startswith("durable_"):
        return "durability"
    return "other"


def short_name(key, label, smp=None):
    """The name a chart row and a regression line use: short, and unique per figure id."""
    if key in _SHORT:
        name = _SHORT[key]
    elif re.match(r"q(\d)_msgs_per_s$", key):
        name = "QoS %s flood" % key[1]
    elif re.match(r"mqtt5_(v311_)?q\d_msgs_per_s$", key):
        m = re.match(r"mqtt5_(v311_)?q(\d)_", key)
        name = "%s: QoS %s flood" % ("3.1.1 beside 5.0" if m.group(1) else "MQTT 5.0", m.group(2))
    elif re.match(r"mqtt5_q\d_over_v311$", key):
        name = "QoS %s flood, 5.0 ÷ 3.1.1" % key[len("mqtt5_q")]
    elif re.match(r"mqtt5_(v311_)?idle_bytes_per_conn_\d+$", key):
        n = "{:,}".format(int(key.rsplit("_", 1)[1]))
        name = "%s: bytes per idle conn at %s" % ("3.1.1 beside 5.0" if "_v311_" in key else "MQTT 5.0", n)
    elif re.match(r"mqtt5_idle_over_v311_\d+$", key):
        name = "bytes per idle conn at %s, 5.0 ÷ 3.1.1" % "{:,}".format(int(key.rsplit("_", 1)[1]))
    elif re.match(r"lat2?_p\d+_us$", key):
        q, p = ("2" if key.startswith("lat2") else "1"), key.split("_")[1]
        name = "QoS %s latency %s" % (q, _PCT.get(p, p))
    elif re.match(r"idle_bytes_per_conn_\d+$", key):
        name = "bytes per idle conn at %s" % "{:,}".format(int(key.rsplit("_", 1)[1]))
    elif re.match(r"idle_rss_total_kib_\d+$", key):
        name = "RSS with %s idle conns" % "{:,}".format(int(key.rsplit("_", 1)[1]))
    elif re.match(r"disk_bringup_\d+_(format|reopen)_(ms|kib)$", key):
        _, _, mib, phase, unit = key.split("_")
        size = "%d GiB" % (int(mib) // 1024) if int(mib) >= 1024 else "%s MiB" % mib
        name = "disk: bring-up, %s disk, %s%s" % (size, phase, ", KiB read" if unit == "kib" else "")
    elif key in _MICRO:
        name = _MICRO[key]
    elif key.startswith("micro_shard_"):
        name = "shards: " + key[len("micro_shard_"):].replace("_", " ") + " (micro_shard)"
    elif re.match(r"cores_q\d_msgs_per_s$", key):
        name = "QoS %s flood (cores)" % key[len("cores_q")]
    elif re.match(r"dpbench_(aarch64_)?hs_per_s_w\d+$", key):
        n = int(key.rsplit("w", 1)[1])
        name = "dp-bench%s handshakes/s, %d worker core%s" % (" aarch64" if "_aarch64_" in key else "", n,
                                                              "s" if n > 1 else "")
    else:
        name = label or key
    if (key.startswith("vm_") or key.startswith("cores_")) and smp:
        name += ", %d vCPU%s" % (smp, "s" if smp > 1 else "")
    return name


def spread(vals):
    """Relative spread of one figure's per-run values: (max - min) / median for 2 or 3
    runs, the interquartile range / median from 4 runs on (one odd run does not widen
    the band of twelve). None when it cannot be told (fewer than 2 runs, median 0)."""
    v = sorted(x for x in (vals or []) if isinstance(x, (int, float)))
    if len(v) < 2:
        return None
    med = statistics.median(v)
    if not med:
        return None
    if len(v) >= 4:
        q = statistics.quantiles(v, n=4, method="inclusive")
        return abs(q[2] - q[0]) / abs(med)
    return abs(v[-1] - v[0]) / abs(med)


class Fig:
    """One figure of a results.json (host or VM table, dp-bench, in-process summary)."""

    def __init__(self, fid, key, label, unit, better, u, m, ratio, runs_u=None, runs_m=None,
                 side_u="urMQTT", side_m="Mosquitto", smp=None):
        self.id, self.key, self.label, self.unit, self.better = fid, key, label, unit, better
        self.u, self.m, self.ratio = u, m, ratio
        self.runs_u, self.runs_m = runs_u, runs_m
        self.side_u, self.side_m, self.smp = side_u, side_m, smp
        self.group = group_of(key, smp)
        self.name = short_name(key, label, smp)

    @property
    def n_runs(self):
        return max(len(self.runs_u or []), len(self.runs_m or []))

    @property
    def noise(self):
        """Relative noise band of what is compared: the ratio (both sides' spreads add) or,
        for a figure urMQTT has alone, its own value. None when not estimable."""
        su = spread(self.runs_u)
        if self.ratio is not None:
            sm = spread(self.runs_m)
            return su + sm if su is not None and sm is not None else None
        return su


def _num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def figures(res):
    """Every figure of a results.json, host table first, then the VMs', dp-bench and the
    in-process summary; values exactly as the results hold them."""
    out = []
    for key, f in (res.get("figures") or {}).items():
        r = f.get("runs") or {}
        out.append(Fig(key, key, f.get("label"), f.get("unit"), f.get("better"), _num(f.get("urmqtt")),
                       _num(f.get("mosquitto")), _num(f.get("ratio_urmqtt_over_mosquitto")),
                       r.get("urmqtt"), r.get("mosquitto")))
    vm = res.get("vm") or {}
    smp = (vm.get("settings") or {}).get("smp")
    try:
        smp = int(smp) if smp is not None else None
    except (TypeError, ValueError):
        smp = None
    for key, f in (vm.get("figures") or {}).items():
        r = f.get("runs") or {}
        fid = "%s_smp%s" % (key, smp if smp is not None else "unknown")
        out.append(Fig(fid, key, f.get("label"), f.get("unit"), f.get("better"), _num(f.get("urmqtt_vm")),
                       _num(f.get("linux_guest")), _num(f.get("ratio_urmqtt_vm_over_linux_guest")),
                       r.get("urmqtt_vm"), r.get("linux_guest"), "urMQTT VM", "Linux+Mosquitto VM", smp))
    for f in ((res.get("cores") or {}).get("figures") or []):
        r = f.get("runs") or {}
        smp = f.get("smp")
        out.append(Fig("%s_smp%s" % (f.get("key"), smp), f.get("key"), f.get("label"), f.get("unit"),
                       f.get("better"), _num(f.get("urmqtt_vm")), _num(f.get("linux_guest")),
                       _num(f.get("ratio_urmqtt_vm_over_linux_guest")), r.get("urmqtt_vm"),
                       r.get("linux_guest"), "urMQTT VM", "Linux+Mosquitto VM", smp))
    # dp-bench rows: the x86_64 image's ("guest") and the aarch64 image's ("guest-aarch64")
    for tag, pre, where in (("guest", "dpbench_", "the guest"), ("guest-aarch64", "dpbench_aarch64_", "the aarch64 guest")):
        by_w = {}
        for r in res.get("dpbench") or []:
            if (r.get("dpbench") == "guest-aarch64") != (tag == "guest-aarch64"):
                continue
            if _num(r.get("workers")) is not None and _num(r.get("handshakes_per_s")) is not None:
                by_w.setdefault(int(r["workers"]), []).append(r["handshakes_per_s"])
        for w in sorted(by_w):
            key = pre + "hs_per_s_w%d" % w
            out.append(Fig(key, key, "dp-bench in %s: handshakes/s with %d worker core(s)" % (where, w),
                           "1/s", "none", statistics.median(by_w[w]), None, None, by_w[w]))
    for k, v in (res.get("micro_summary") or {}).items():
        if _num(v) is None or k.startswith("dpbench_"):   # dp-bench: from its own rows above
            continue
        fid = "micro_" + k
        out.append(Fig(fid, fid, "in process: " + k.replace("_", " "), _unit_of(k), "none", v, None, None))
    return out


def _unit_of(k):
    for suf, u in (("_us", "us"), ("_ns", "ns"), ("_per_s", "1/s"), ("_bytes", "B"),
                   ("_per_handshake", "B"), ("_per_idle_conn", "B")):
        if k.endswith(suf):
            return u
    return "x" if "scaling" in k or "_vs_" in k else "1"


# ---- the machine ------------------------------------------------------------------------
def this_cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            k, _, v = line.partition(":")
            if k.strip() in ("model name", "Model", "Hardware") and v.strip():
                return v.strip()
    except OSError:
        pass
    return os.uname().machine


def machine(res):
    """CPU model, cores, accelerator of a results.json, and what had to be filled in from
    this machine (results written before report.py recorded the CPU model)."""
    m = res.get("machine") or {}
    notes = []
    cpu = m.get("cpu_model")
    if not cpu:
        cpu = this_cpu_model()
        notes.append("results.json names no CPU model: this machine's (%s) taken" % cpu)
    acc = m.get("accel") or ("KVM" if str(m.get("kvm", "")).startswith("present") else "TCG")
    return {"cpu_model": cpu, "cores": str(m.get("cores", "")), "accel": acc}, notes


def signature(mach):
    return (mach["cpu_model"], str(mach["cores"]), mach["accel"])


def sig_text(sig):
    return "%s, %s cores, %s" % sig


def results_commit_date(res, path):
    """Commit and date the results belong to, and notes on what was not in them."""
    notes = []
    commit = res.get("commit")
    if not commit:
        notes.append("results.json names no commit")
    date = res.get("date")
    if not date:
        try:
            date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.path.getmtime(path)))
            notes.append("results.json names no date: its modification time (%s) taken" % date)
        except OSError:
            date = ""
    return commit, date, notes


def git_head():
    try:
        return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


# ---- formatting ----------------------------------------------------------------------------
def fmt_ratio(r):
    if r is None:
        return "n/a"
    if r >= 10:
        return "%.1f" % r
    if r >= 0.01:
        return "%.2f" % r
    return "%.2g" % r


def fmt_val(v):
    if v is None:
        return "n/a"
    if v == int(v) and abs(v) < 1e15:
        return "{:,}".format(int(v))
    if abs(v) >= 100:
        return "{:,.0f}".format(v)
    if abs(v) >= 10:
        return "%.1f" % v
    if abs(v) >= 0.01:
        return "%.2f" % v
    return "%.2g" % v


UNIT_TEXT = {"us": "µs", "ns": "ns", "ms": "ms", "s": "s", "1/s": "/s", "1": "", "x": "×", "%": "%",
             "B": "B", "KiB": "KiB", "MiB/s": "MiB/s"}


def with_unit(v, unit):
    u = UNIT_TEXT.get(unit, unit or "")
    if v is None:
        return "n/a"
    if not u:
        return fmt_val(v)
    if u in ("/s", "×", "%"):
        return fmt_val(v) + u
    return "%s %s" % (fmt_val(v), u)


# ---- history -------------------------------------------------------------------------------
def _g(x):
    return "" if x is None else ("%.6g" % x)


def history_rows(figs, commit, date, mach, note=""):
    rows = []
    for f in figs:
        if f.u is None and f.m is None:
            continue
        noise = f.noise
        rows.append({"commit": commit, "date": date, "cpu_model": mach["cpu_model"],
                     "cores": mach["cores"], "accel": mach["accel"], "figure": f.id, "group": f.group,
                     "unit": f.unit or "", "better": f.better or "", "urmqtt": _g(f.u),
                     "mosquitto": _g(f.m), "ratio": _g(f.ratio), "noise": _g(noise),
                     "runs": str(f.n_runs or ""), "label": f.name, "note": "" if rows else note})
    return rows


def read_history(path):
    """history.csv's rows in file order ([] when the file does not exist)."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as fh:
        return [r for r in csv.DictReader(line for line in fh if not line.startswith("#"))]


def append_history(path, rows):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as fh:
        if new:
            fh.write("# SPDX-License-Identifier: MIT\n"
                     "# make bench-record: one row per figure of a make bench run (tools/bench/history.py)."
                     " Medians and ratios as results.json held them; noise: relative band from the"
                     " figure's runs (empty: one run); note: on a run's first row.\n")
        w = csv.DictWriter(fh, fieldnames=HISTORY_FIELDS, lineterminator="\n")
        if new:
            w.writeheader()
        for r in rows:
            w.writerow(r)


class Record:
    """The rows of one recorded run: commit, date, machine signature, figures by id."""

    def __init__(self, commit, date, sig, note):
        self.commit, self.date, self.sig, self.note = commit, date, sig, note
        self.figs = {}


def _f(s):
    try:
        return float(s) if s not in (None, "") else None
    except ValueError:
        return None


def records(rows):
    """Recorded runs in recording order (a run: the rows of one commit, date and machine)."""
    out, idx = [], {}
    for r in rows:
        sig = (r.get("cpu_model", ""), str(r.get("cores", "")), r.get("accel", ""))
        k = (r.get("commit", ""), r.get("date", ""), sig)
        if k not in idx:
            idx[k] = len(out)
            out.append(Record(k[0], k[1], sig, r.get("note", "")))   # the note: on a run's first row
        out[idx[k]].figs[r["figure"]] = {"name": r.get("label") or r["figure"], "unit": r.get("unit", ""),
                                         "better": r.get("better", ""), "group": r.get("group", ""),
                                         "u": _f(r.get("urmqtt")), "m": _f(r.get("mosquitto")),
                                         "ratio": _f(r.get("ratio")), "noise": _f(r.get("noise"))}
    return out


def last_record(recs, sig, commit, date):
    """The last record on a machine of this signature that is not these results."""
    for rec in reversed(recs):
        if rec.sig == sig and not (rec.commit == commit and rec.date == date):
            return rec
    return None


class Move:
    def __init__(self, name, kind, old, new, unit, verdict, band, assumed):
        self.name, self.kind, self.old, self.new, self.unit = name, kind, old, new, unit
        self.verdict, self.band, self.assumed = verdict, band, assumed

    @property
    def factor(self):
        if self.old and self.new and self.old > 0 and self.new > 0:
            return abs(math.log(self.new / self.old))
        return float("inf")

    def line(self):
        if self.kind == "ratio":
            a, b = fmt_ratio(self.old) + "×", fmt_ratio(self.new) + "×"
        else:
            a, b = with_unit(self.old, self.unit), with_unit(self.new, self.unit)
        band = "noise band ±%.0f%%%s" % (100 * self.band, ", assumed: one run" if self.assumed else "")
        return "%s: %s → %s (%s; %s)" % (self.name, a, b, self.verdict, band)


def compare(prev, figs):
    """Every figure of figs that moved beyond its noise band since the record prev: the
    ratio when both have one, else urMQTT's own value. The band is the wider of the two
    runs' bands (at least MIN_BAND; ASSUMED_BAND when neither run could estimate one).
    Returns (moves, number of figures compared); worse moves first, the largest first."""
    moves, n = [], 0
    for f in figs:
        old = prev.figs.get(f.id)
        if not old:
            continue
        if f.ratio is not None and old["ratio"] is not None:
            kind, a, b = "ratio", old["ratio"], f.ratio
        elif f.u is not None and old["u"] is not None:
            kind, a, b = "value", old["u"], f.u
        else:
            continue
        n += 1
        known = [x for x in (old["noise"], f.noise) if x is not None]
        band = max(max(known) if known else ASSUMED_BAND, MIN_BAND)
        if a == b:
            continue
        if a > 0 and b > 0:
            beyond = b > a * (1 + band) or b < a / (1 + band)
        else:
            beyond = True
        if not beyond:
            continue
        better = f.better or old["better"]
        if better == "higher":
            verdict = "worse" if b < a else "better"
        elif better == "lower":
            verdict = "worse" if b > a else "better"
        else:
            verdict = "moved"
        moves.append(Move(f.name, kind, a, b, f.unit, verdict, band, not known))
    order = {"worse": 0, "moved": 1, "better": 2}
    moves.sort(key=lambda m: (order[m.verdict], m.kind != "ratio", -m.factor))
    return moves, n
