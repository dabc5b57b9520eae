# SPDX-License-Identifier: MIT
# tools/bench: the bench report's charts, each one self-contained SVG (svgchart.py) drawn
# from a results.json (benchlib.figures and its raw rows) and docs/bench/history.csv: the
# ratio chart, latency percentiles, the storm's timeline, memory against the connection
# count, cores, handshake CPU against the crypto floor, the figures without a ratio and the
# history of every figure over the recorded commits. Each chart carries the machine, the
# accelerator, the commit and its noise band. It draws only values the inputs hold: a
# series they lack is written "not measured in this run", never estimated or filled in.
import math
import re
import statistics

import benchlib
from svgchart import INK, MUTED, GRID, Svg, LogScale, LinScale, log_bounds, tick_text

W = 960
BETTER, WORSE, EVEN = "#1a7f37", "#cf222e", "#8c959f"
C_U, C_M = "#0969da", "#bc4c00"          # urMQTT, Mosquitto
C_UV, C_MV = "#54aeff", "#fb8f44"        # the two virtual machines
SIG_COLOURS = ["#0969da", "#8250df", "#bf3989", "#1a7f37", "#9a6700", "#57606a"]
NOT_MEASURED = "not measured in this run"


class Chart:
    def __init__(self, cid, title, svg, has_data, caption):
        self.id, self.title, self.svg, self.has_data, self.caption = cid, title, svg, has_data, caption


class Ctx:
    """What every chart says about where its figures come from."""

    def __init__(self, res, results_path):
        mach, self.notes = benchlib.machine(res)
        commit, date, more = benchlib.results_commit_date(res, results_path)
        self.notes += more
        self.mach, self.sig = mach, benchlib.signature(mach)
        self.commit, self.date = commit or "not named in results.json", date
        self.res = res
        only = (res.get("settings") or {}).get("only")
        self.only = " (BENCH_ONLY=\"%s\")" % " ".join(only) if only else ""
        uname = (res.get("machine") or {}).get("uname")
        self.line = "machine: %s, %s cores%s · accelerator: %s · commit %s%s" % (
            mach["cpu_model"], mach["cores"], " (Linux %s)" % uname if uname else "", mach["accel"],
            self.commit, " (%s)" % date if date else "")


def noise_text(figs):
    vals = [f.noise for f in figs if f.noise is not None]
    if not figs:
        return "noise band: no figure"
    if not vals:
        return "noise band: not estimable (one run per figure here)"
    one = len(figs) - len(vals)
    return ("noise band: median ±%.0f%% over %d figure%s (per-run spread: range of 2-3 runs,"
            " interquartile range from 4)%s" % (100 * statistics.median(vals), len(vals),
                                                "s" if len(vals) > 1 else "",
                                                "; %d with one run" % one if one else ""))


def frame(title, subtitle, body_h, width=W):
    s = Svg(width, body_h + 96, title)
    s.text(16, 24, title, size=16, weight="bold")
    if subtitle:
        s.text(16, 42, subtitle, size=11, fill=MUTED)
    return s, 56


def footer(s, ctx, noise):
    y = s.h - 26
    s.line(16, y - 14, s.w - 16, y - 14, stroke=GRID)
    s.text(16, y, ctx.line, size=10.5, fill=MUTED)
    s.text(16, y + 15, noise, size=10.5, fill=MUTED)


def placeholder(cid, title, ctx, what, caption):
    s, y = frame(title, "", 60)
    s.text(W / 2, y + 34, what, size=14, anchor="middle", fill=MUTED, italic=True)
    if ctx.only:
        s.text(W / 2, y + 54, "this run measured only some groups: " + ctx.only.strip(" ()"), size=11.5,
               anchor="middle", fill=MUTED)
    footer(s, ctx, "noise band: no figure")
    return Chart(cid, title, s.render(cid + "-svg"), False, caption)


def verdict_colour(f, r=None, noise=None):
    """Green where urMQTT is better, red where worse, grey where the ratio is within its
    noise band of 1× (or no side is better)."""
    r = f.ratio if r is None else r
    if r is None or r == 1 or f.better not in ("higher", "lower"):
        return EVEN
    if noise and 1 / (1 + noise) <= r <= 1 + noise:
        return EVEN
    return BETTER if (r > 1) == (f.better == "higher") else WORSE


def ratio_text(r):
    return benchlib.fmt_ratio(r) + "×"


# ---- 1. the ratio chart -------------------------------------------------------------------------
def ratio_chart(figs, ctx):
    cid, title = "chart-ratio", "urMQTT ÷ Mosquitto, every figure"
    cap = ("Each bar is urMQTT's median divided by Mosquitto's (the VM rows: the urMQTT image ÷ "
           "Linux+Mosquitto in the same QEMU settings) on a log axis around 1×. Green: urMQTT is "
           "better on that figure (more where more is better, less where less is better); red: "
           "worse; grey: within the figure's noise band of 1×. The thin whisker is that band.")
    rs = [f for f in figs if f.ratio is not None and f.ratio > 0 and f.group in benchlib.RATIO_GROUPS]
    if not rs:
        n_alone = sum(1 for f in figs if f.ratio is None and f.u is not None)
        return placeholder(cid, title, ctx, "No urMQTT ÷ Mosquitto ratio: %s (%d figure%s without "
                           "a ratio: see below)" % (NOT_MEASURED, n_alone, "" if n_alone == 1 else "s"),
                           cap)
    ext = 1.0
    for f in rs:
        n = f.noise or 0
        ext = max(ext, abs(math.log10(f.ratio)) + math.log10(1 + n))
    d = math.ceil(ext * 2 + 0.2) / 2
    rows = []
    for g in benchlib.RATIO_GROUPS:
        members = [f for f in rs if f.group == g]
        rows.append(("group", g, members))
        rows += [("fig", f, None) for f in members]
    row_h, head_h = 19, 24
    body = sum(head_h if k == "group" else row_h for k, _, _ in rows) + 52
    s, y0 = frame(title, "bar from 1× to the ratio; log axis; medians of this run", body)
    x0, x1 = 330, W - 100
    sc = LogScale(10 ** -d, 10 ** d, x0, x1)
    # legend
    s.rect(x0, y0 - 4, 10, 10, BETTER)
    s.text(x0 + 14, y0 + 5, "urMQTT better", size=11)
    s.rect(x0 + 120, y0 - 4, 10, 10, WORSE)
    s.text(x0 + 134, y0 + 5, "urMQTT worse", size=11)
    s.rect(x0 + 240, y0 - 4, 10, 10, EVEN)
    s.text(x0 + 254, y0 + 5, "within the noise of 1×", size=11)
    s.line(x0 + 410, y0 + 1, x0 + 432, y0 + 1, stroke=INK, width=1.2)
    s.text(x0 + 438, y0 + 5, "noise band", size=11)
    top = y0 + 22
    y = top
    for kind, a, members in rows:
        if kind == "group":
            y += head_h
            s.text(16, y - 6, a, size=13, weight="bold")
            if not members:
                s.text(x0, y - 6, NOT_MEASURED, size=11, fill=MUTED, italic=True)
            continue
        f = a
        cy = y + row_h / 2
        s.text(30, cy + 4, f.name, size=11.5)
        xa, xb = sc(1), sc(f.ratio)
        col = verdict_colour(f, noise=f.noise)
        tip = "%s: %s %s vs %s %s = %s (%s is better)" % (
            f.name, f.side_u, benchlib.with_unit(f.u, f.unit), f.side_m,
            benchlib.with_unit(f.m, f.unit), ratio_text(f.ratio), f.better)
        s.rect(min(xa, xb), cy - 6, abs(xb - xa), 12, col, tip=tip)
        if f.noise:
            s.line(sc(f.ratio / (1 + f.noise)), cy, sc(f.ratio * (1 + f.noise)), cy, stroke=INK, width=1.2)
        s.text(x1 + 10, cy + 4, ratio_text(f.ratio), size=11.5, fill=col, weight="bold")
        y += row_h
    for t in sc.ticks():
        s.line(sc(t), top, sc(t), y, stroke=INK if t == 1 else GRID, width=1.4 if t == 1 else 1)
        s.text(sc(t), y + 14, tick_text(t) + "×", size=10.5, anchor="middle", fill=MUTED)
    s.text((x0 + x1) / 2, y + 30, "← urMQTT's value smaller · urMQTT ÷ Mosquitto · larger →", size=11,
           anchor="middle", fill=MUTED)
    footer(s, ctx, noise_text(rs))
    return Chart(cid, title, s.render(cid + "-svg"), True, cap)


# ---- 2. latency percentiles --------------------------------------------------------------------
def _pct_value(p):
    d = p[1:]
    return int(d) / 10 ** (len(d) - 2) if len(d) > 2 else float(d)


def _pct_label(p):
    return "p%g" % _pct_value(p)


def latency_chart(figs, ctx):
    cid, title = "chart-latency", "Latency percentiles, both brokers"
    cap = ("Publish-to-delivery latency at a fixed offered rate, every percentile results.json "
           "holds, for urMQTT and Mosquitto (and the two virtual machines when measured). Lower "
           "is better. Log axis.")
    res = ctx.res
    rate = (res.get("settings") or {}).get("rate")
    vm = (res.get("vm") or {}).get("settings") or {}
    panels = [("QoS 1 at %s msgs/s" % benchlib.fmt_val(rate) if rate else "QoS 1", r"lat_(p\d+)_us$"),
              ("QoS 2 at %s msgs/s" % benchlib.fmt_val(rate) if rate else "QoS 2", r"lat2_(p\d+)_us$"),
              ("VMs, QoS 1 at %s msgs/s" % benchlib.fmt_val(vm.get("rate")) if vm.get("rate") else
               "VMs, QoS 1", r"vm_lat_(p\d+)_us$")]
    data, used = [], []
    for name, pat in panels:
        pts = []
        for f in figs:
            m = re.match(pat, f.key)
            if m and (f.u is not None or f.m is not None):
                pts.append((_pct_value(m.group(1)), _pct_label(m.group(1)), f))
        pts.sort(key=lambda p: p[0])
        data.append((name, pts))
        used += [p[2] for p in pts]
    if not used:
        return placeholder(cid, title, ctx, "Latency: " + NOT_MEASURED, cap)
    vals = [v for f in used for v in (f.u, f.m) if v]
    lo, hi = log_bounds(vals, pad=1.6)
    ph = 230
    s, y0 = frame(title, "median of the runs per percentile; log axis (µs)", ph + 70)
    pw = (W - 90) / 3
    top, bot = y0 + 26, y0 + 26 + ph
    sc = LogScale(lo, hi, bot, top)
    s.rect(W - 300, y0 - 4, 10, 10, C_U)
    s.text(W - 286, y0 + 5, "urMQTT", size=11)
    s.rect(W - 210, y0 - 4, 10, 10, C_M)
    s.text(W - 196, y0 + 5, "Mosquitto (VM: Linux+Mosquitto)", size=11)
    for i, (name, pts) in enumerate(data):
        px = 70 + i * pw
        s.text(px + pw / 2 - 10, top - 8, name, size=12, anchor="middle", weight="bold")
        for t in sc.ticks():
            s.line(px, sc(t), px + pw - 20, sc(t), stroke=GRID)
            if i == 0:
                s.text(px - 6, sc(t) + 4, tick_text(t), size=10, anchor="end", fill=MUTED)
        s.line(px, bot, px + pw - 20, bot, stroke=INK)
        if not pts:
            s.text(px + pw / 2 - 10, (top + bot) / 2, NOT_MEASURED, size=12, anchor="middle",
                   fill=MUTED, italic=True)
            continue
        gw = (pw - 30) / len(pts)
        for j, (_, lab, f) in enumerate(pts):
            gx = px + 5 + j * gw
            bw = min(34, gw / 2 - 6)
            for k, (v, col, side) in enumerate(((f.u, C_U, f.side_u), (f.m, C_M, f.side_m))):
                bx = gx + gw / 2 - bw - 1 + k * (bw + 2)
                if v is None or v <= 0:
                    s.text(bx + bw / 2, bot - 6, "n/m", size=9, anchor="middle", fill=MUTED, italic=True)
                    continue
                s.rect(bx, sc(v), bw, bot - sc(v), col, tip="%s, %s: %s" % (side, f.name,
                                                                              benchlib.with_unit(v, f.unit)))
                s.text(bx + bw / 2, sc(v) - 3, benchlib.fmt_val(v), size=9, anchor="middle", fill=MUTED)
            s.text(gx + gw / 2, bot + 14, lab, size=11, anchor="middle")
        miss = [side for side, idx in ((pts[0][2].side_u, 0), (pts[0][2].side_m, 1))
                if all((p[2].u, p[2].m)[idx] is None for p in pts)]
        for k, side in enumerate(miss):
            s.text(px + pw / 2 - 10, bot + 30 + 13 * k, "%s: %s" % (side, NOT_MEASURED), size=10.5,
                   anchor="middle", fill=MUTED, italic=True)
    s.text(20, (top + bot) / 2, "µs", size=11, fill=MUTED, rotate=-90, anchor="middle")
    footer(s, ctx, noise_text(used))
    return Chart(cid, title, s.render(cid + "-svg"), True, cap)


# ---- 3. the storm as a timeline ------------------------------------------------------------------
def storm_chart(figs, ctx):
    cid, title = "chart-storm", "Through a connection storm: the established clients"
    cap = ("The established publishers' delivered msgs/s and p99 latency before, during and after "
           "a storm of new mTLS connections, for both brokers: thick lines are the medians of the "
           "runs, thin ones each run. The load generator reports these three windows (not 100 ms "
           "slices); the dashed mark is when latency was back to steady after the storm.")
    raw = ctx.res.get("raw") or []
    series = {}
    for b in ("urmqtt", "mosquitto"):
        rs = [r for r in raw if r.get("broker") == b and r.get("figure") == "storm" and "error" not in r
              and all(isinstance(r.get(p), dict) for p in ("before", "storm", "after"))]
        if rs:
            series[b] = rs
    if not series:
        return placeholder(cid, title, ctx, "Storm timeline: " + NOT_MEASURED, cap)
    any_r = next(iter(series.values()))[0]
    tb = any_r["before"].get("seconds") or 0
    ts = any_r["storm"].get("seconds") or 0
    ta = any_r["after"].get("seconds") or 0
    edges = [(-tb, 0, "before"), (0, ts, "storm"), (ts, ts + ta, "after")]
    ph = 170
    sub = []
    if any_r.get("storm_devices"):
        sub.append("%s storm devices" % benchlib.fmt_val(any_r["storm_devices"]))
    if any_r.get("storm_rate_cap"):
        sub.append("at most %s new connections/s" % benchlib.fmt_val(any_r["storm_rate_cap"]))
    if any_r.get("rate"):
        sub.append("established clients offer %s msgs/s QoS 1" % benchlib.fmt_val(any_r["rate"]))
    s, y0 = frame(title, "; ".join(sub) + ("; " if sub else "") + "runs: %s" % ", ".join(
        "%s %d" % (b, len(rs)) for b, rs in series.items()), 2 * ph + 96)
    x0, x1 = 90, W - 40
    xs = LinScale(-tb, ts + ta, x0, x1)
    cols = {"urmqtt": C_U, "mosquitto": C_M}
    names = {"urmqtt": "urMQTT", "mosquitto": "Mosquitto"}
    lx = x0 + 260
    for b in ("urmqtt", "mosquitto"):
        s.rect(lx, y0 - 4, 10, 10, cols[b])
        s.text(lx + 14, y0 + 5, names[b] + ("" if b in series else ": " + NOT_MEASURED), size=11)
        lx += 100 if b in series else 250
    s.line(lx + 10, y0 + 1, lx + 30, y0 + 1, stroke=MUTED, width=1.5, dash="5,3")
    s.text(lx + 36, y0 + 5, "back to steady latency", size=11)
    panels = [("delivered msgs/s", "msgs_per_s", False), ("p99 latency (µs)", "lat_us_p99", True)]
    all_vals = {k: [r[p][k] for rs in series.values() for r in rs for p in ("before", "storm", "after")
                    if isinstance(r[p].get(k), (int, float))] for _, k, _ in panels}
    for i, (lab, k, log) in enumerate(panels):
        top = y0 + 30 + i * (ph + 30)
        bot = top + ph
        vals = all_vals[k]
        if log:
            lo, hi = log_bounds(vals, pad=1.5)
            ys = LogScale(lo, hi, bot, top)
        else:
            ys = LinScale(0, (max(vals) if vals else 1) * 1.15, bot, top)
        s.rect(xs(0), top, xs(ts) - xs(0), ph, "#ffebe9", opacity="0.8")
        for t in ys.ticks():
            s.line(x0, ys(t), x1, ys(t), stroke=GRID)
            s.text(x0 - 6, ys(t) + 4, tick_text(t), size=10, anchor="end", fill=MUTED)
        s.text(x0, top - 6, lab, size=11.5, weight="bold")
        for b, rs in series.items():
            for r in rs:
                pts = []
                for a, z, p in edges:
                    v = r[p].get(k)
                    if isinstance(v, (int, float)) and (v > 0 or not log):
                        pts += [(xs(a), ys(v)), (xs(z), ys(v))]
                s.polyline(pts, cols[b], width=1, opacity="0.45")
            pts = []
            for a, z, p in edges:
                v = [r[p][k] for r in rs if isinstance(r[p].get(k), (int, float))]
                if v and (statistics.median(v) > 0 or not log):
                    m = statistics.median(v)
                    pts += [(xs(a), ys(m)), (xs(z), ys(m))]
                    s.text((xs(a) + xs(z)) / 2, ys(m) - 5 - (10 if b == "mosquitto" else 0),
                           "%s %s" % (names[b], benchlib.fmt_val(m)), size=9.5, anchor="middle", fill=cols[b])
            s.polyline(pts, cols[b], width=2.5)
            if i == 1:
                st = [r.get("steady_after_ms") for r in rs if isinstance(r.get("steady_after_ms"), (int, float))
                      and r["steady_after_ms"] >= 0]
                if st:
                    xm = xs(ts + statistics.median(st) / 1000)
                    s.line(xm, top, xm, bot, stroke=cols[b], width=1.5, dash="5,3")
        s.line(x0, bot, x1, bot, stroke=INK)
    bot = y0 + 30 + 2 * ph + 30
    for a, z, p in edges:
        s.text((xs(a) + xs(z)) / 2, bot + 14, p, size=11, anchor="middle", fill=MUTED)
    for t in xs.ticks(8):
        s.text(xs(t), bot + 28, "%gs" % t, size=10, anchor="middle", fill=MUTED)
    stf = [f for f in figs if f.group == "storm"]
    footer(s, ctx, noise_text(stf))
    return Chart(cid, title, s.render(cid + "-svg"), True, cap)


# ---- 4. memory against the connection count ------------------------------------------------------
def memory_chart(figs, ctx):
    cid, title = "chart-memory", "Memory against the number of idle connections"
    cap = ("Left: bytes per idle mTLS connection (urMQTT: its own accounting of records and heap; "
           "Mosquitto: RSS growth ÷ connections; the VMs: the kernel's heap per connection and "
           "Mosquitto's RSS in the guest). Right: the whole process's RSS holding them. Lower is "
           "better. Log axes.")
    per, rss, used = {}, {}, []
    for f in figs:
        m1 = re.match(r"idle_bytes_per_conn_(\d+)$", f.key)
        m2 = re.match(r"idle_rss_total_kib_(\d+)$", f.key)
        if m1:
            per[int(m1.group(1))] = f
        elif m2:
            rss[int(m2.group(1))] = f
        else:
            continue
        used.append(f)
    vm_n = ((ctx.res.get("vm") or {}).get("settings") or {}).get("idle")
    vmf = next((f for f in figs if f.key == "vm_idle_bytes_per_conn"), None)
    if vmf and vm_n:
        used.append(vmf)
    if not used:
        return placeholder(cid, title, ctx, "Memory per connection: " + NOT_MEASURED, cap)
    ph = 230
    s, y0 = frame(title, "per idle mTLS connection and per process, at each connection count measured", ph + 70)
    held = ctx.res.get("held") or {}
    ns = sorted(set(list(per) + list(rss) + ([int(vm_n)] if vmf and vm_n else [])))
    xs_lo, xs_hi = min(ns) / 2, max(ns) * 2
    panels = [("bytes per idle connection", per, True), ("process RSS (KiB)", rss, False)]
    pw = (W - 120) / 2
    for i, (lab, d, with_vm) in enumerate(panels):
        px, top = 70 + i * (pw + 40), y0 + 26
        bot = top + ph
        xs = LogScale(xs_lo, xs_hi, px, px + pw - 20)
        vals = [v for f in d.values() for v in (f.u, f.m) if v]
        if with_vm and vmf and vm_n:
            vals += [v for v in (vmf.u, vmf.m) if v]
        s.text(px, top - 8, lab, size=12, weight="bold")
        s.line(px, bot, px + pw - 20, bot, stroke=INK)
        if not vals:
            s.text(px + pw / 2, (top + bot) / 2, NOT_MEASURED, size=12, anchor="middle", fill=MUTED, italic=True)
            continue
        lo, hi = log_bounds(vals, pad=1.8)
        ys = LogScale(lo, hi, bot, top)
        for t in ys.ticks():
            s.line(px, ys(t), px + pw - 20, ys(t), stroke=GRID)
            s.text(px - 6, ys(t) + 4, tick_text(t), size=10, anchor="end", fill=MUTED)
        for n in ns:
            s.text(xs(n), bot + 14, "{:,}".format(n), size=10, anchor="middle", fill=MUTED)
        for side, col, getv in (("urMQTT", C_U, lambda f: f.u), ("Mosquitto", C_M, lambda f: f.m)):
            pts = [(n, getv(d[n])) for n in sorted(d) if getv(d[n])]
            s.polyline([(xs(n), ys(v)) for n, v in pts], col, width=2)
            for n, v in pts:
                h = (held.get(side.lower()) or {}).get(str(n))
                tip = "%s at %s connections: %s%s" % (side, "{:,}".format(n), benchlib.with_unit(v, d[n].unit),
                                                      "; held %s" % h if h not in (None, n) else "")
                s.circle(xs(n), ys(v), 4, col, tip=tip)
                s.text(xs(n) + 7, ys(v) - 6, benchlib.fmt_val(v), size=9.5, fill=col)
        if with_vm and vmf and vm_n:
            for v, col, side in ((vmf.u, C_UV, vmf.side_u), (vmf.m, C_MV, vmf.side_m)):
                if v:
                    s.circle(xs(int(vm_n)), ys(v), 5, "#ffffff", stroke=col,
                             tip="%s at %s connections: %s" % (side, vm_n, benchlib.with_unit(v, "B")))
                    s.text(xs(int(vm_n)) + 8, ys(v) + 12, "%s %s" % (side, benchlib.fmt_val(v)), size=9, fill=col)
    s.text(70, y0 + 5, "●", size=11, fill=C_U)
    s.text(82, y0 + 5, "urMQTT (hosted)", size=11)
    s.text(190, y0 + 5, "●", size=11, fill=C_M)
    s.text(202, y0 + 5, "Mosquitto", size=11)
    s.text(290, y0 + 5, "○ the two VMs (urMQTT image, Linux+Mosquitto)", size=11, fill=MUTED)
    s.text(W / 2, y0 + ph + 58, "idle mTLS connections held (log axis)", size=11, anchor="middle", fill=MUTED)
    footer(s, ctx, noise_text(used))
    return Chart(cid, title, s.render(cid + "-svg"), True, cap)


# ---- 5. cores -------------------------------------------------------------------------------------
VM_BY_CORES = [("vm_hs_full_per_s", "VM full handshakes/s"), ("vm_q0_msgs_per_s", "VM QoS 0 msgs/s"),
               ("vm_q1_msgs_per_s", "VM QoS 1 msgs/s")]


def cores_chart(figs, ctx, recs):
    cid, title = "chart-cores", "Cores: handshakes/s and msgs/s by vCPUs"
    cap = ("Left: the in-guest data plane (dp-bench: client and server in the urMQTT image, no NIC) "
           "with 1, 2 (and 4) worker cores; Mosquitto has no counterpart. Then the two virtual "
           "machines by vCPU count. A results.json holds one vCPU count for the VMs; bars of other "
           "counts come from docs/bench/history.csv on this machine's signature and are labelled "
           "with their commit. Higher is better.")
    dpb = sorted(((int(f.key.rsplit("w", 1)[1]), f) for f in figs if f.key.startswith("dpbench_hs_per_s_w")),
                 key=lambda p: p[0])
    keys = [k for k, _ in VM_BY_CORES]
    # (smp, key) -> (urMQTT VM, Linux+Mosquitto VM, source); this run first, then the latest
    # record of the same signature for every other vCPU count
    cells, used = {}, [f for _, f in dpb]
    # group cores measures the same floods with every vCPU count side by side: its figures
    # fill the VM panels first (cores_qN_msgs_per_s stands for vm_qN_msgs_per_s)
    def panel_key(key):
        return "vm_" + key[len("cores_"):] if key.startswith("cores_") else key
    for f in sorted(figs, key=lambda f: not f.key.startswith("cores_")):
        k = panel_key(f.key)
        if f.smp and k in keys and (f.smp, k) not in cells:
            cells[(f.smp, k)] = (f.u, f.m, "this run")
            used.append(f)
    for rec in reversed(recs):
        if rec.sig != ctx.sig:
            continue
        for fid, v in rec.figs.items():
            m = re.match(r"((?:vm|cores)_\w+?)_smp(\d+)$", fid)
            if m and panel_key(m.group(1)) in keys and (int(m.group(2)), panel_key(m.group(1))) not in cells:
                cells[(int(m.group(2)), panel_key(m.group(1)))] = (v["u"], v["m"], rec.commit[:12])
    if not dpb and not cells:
        return placeholder(cid, title, ctx, "Cores: " + NOT_MEASURED, cap)
    ph = 200
    s, y0 = frame(title, "by core count; log axes; bars of other runs carry their commit", ph + 76)
    s.rect(W - 420, y0 - 4, 10, 10, C_U)
    s.text(W - 406, y0 + 5, "urMQTT (dp-bench)", size=11)
    s.rect(W - 290, y0 - 4, 10, 10, C_UV)
    s.text(W - 276, y0 + 5, "urMQTT VM", size=11)
    s.rect(W - 190, y0 - 4, 10, 10, C_MV)
    s.text(W - 176, y0 + 5, "Linux+Mosquitto VM", size=11)
    pw = (W - 60) / 4
    panels = [("dp-bench handshakes/s", None)] + [(lab, k) for k, lab in VM_BY_CORES]
    for i, (lab, key) in enumerate(panels):
        px, top = 56 + i * pw, y0 + 34
        bot = top + ph
        s.text(px, top - 10, lab, size=11.5, weight="bold")
        s.line(px, bot, px + pw - 30, bot, stroke=INK)
        groups = []   # (label under the group, [(value, colour, tip)])
        if key is None:
            one = dpb[0][1].u if dpb and dpb[0][0] == 1 else None
            for w, f in dpb:
                sc_ = " (%.2f×)" % (f.u / one) if one and w > 1 and f.u else ""
                groups.append(("%d core%s%s" % (w, "s" if w > 1 else "", sc_), "",
                               [(f.u, C_U, "urMQTT, %d worker cores" % w)]))
        else:
            for smp in sorted({k[0] for k in cells if k[1] == key}):
                u, m, src = cells[(smp, key)]
                groups.append(("%d vCPU%s" % (smp, "s" if smp > 1 else ""), "" if src == "this run" else src,
                               [(u, C_UV, "urMQTT VM (%s)" % src), (m, C_MV, "Linux+Mosquitto VM (%s)" % src)]))
        vals = [v for _, _, bars in groups for v, _, _ in bars if v]
        if not vals:
            s.text(px + pw / 2 - 15, (top + bot) / 2, NOT_MEASURED, size=11, anchor="middle", fill=MUTED,
                   italic=True)
            continue
        ys = LogScale(*log_bounds(vals, pad=1.8), bot, top)
        for t in ys.ticks():
            s.line(px, ys(t), px + pw - 30, ys(t), stroke=GRID)
            s.text(px - 4, ys(t) + 4, tick_text(t), size=9.5, anchor="end", fill=MUTED)
        gw = (pw - 40) / max(len(groups), 2)
        for j, (glab, src, bars) in enumerate(groups):
            gx = px + 5 + j * gw
            bw = min(30, (gw - 10) / len(bars))
            for k, (v, col, tip) in enumerate(bars):
                bx = gx + (gw - bw * len(bars)) / 2 + k * bw
                if v and v > 0:
                    s.rect(bx + 1, ys(v), bw - 2, bot - ys(v), col, tip="%s: %s" % (tip, benchlib.fmt_val(v)))
                    s.text(bx + bw / 2, ys(v) - 3, benchlib.fmt_val(v), size=8.5, anchor="middle", fill=MUTED)
                else:
                    s.text(bx + bw / 2, bot - 4, "n/m", size=8.5, anchor="middle", fill=MUTED, italic=True)
            s.text(gx + gw / 2, bot + 14, glab, size=10.5, anchor="middle")
            if src:
                s.text(gx + gw / 2, bot + 27, src, size=9, anchor="middle", fill=MUTED)
    footer(s, ctx, noise_text(used))
    return Chart(cid, title, s.render(cid + "-svg"), True, cap)


# ---- 6. handshake CPU against the crypto floor ------------------------------------------------------
def hs_cpu_chart(figs, ctx):
    cid, title = "chart-hs-cpu", "CPU per handshake against the crypto floor"
    cap = ("Server CPU per handshake beside the floor: what the public-key operations alone cost on "
           "this machine (openssl speed: a full mTLS handshake is 2 X25519 + 1 P-256 signature + 2 "
           "verifications, a resumed one 2 X25519). Lower is better; the multiple of the floor is "
           "the protocol's and the broker's own cost. The VM rows are the whole QEMU process.")
    floor = ctx.res.get("crypto_floor") or {}
    micro = ctx.res.get("micro_summary") or {}
    byk = {f.key: f for f in figs}
    rows, used = [], []
    for kind, fl, mk, hk, vk in (("full", "full_hs_us", "tls_full_hs_server_cpu_us", "hs_full_cpu_us",
                                  "vm_hs_full_cpu_us"),
                                 ("resumed", "resumed_hs_us", "tls_resumed_hs_server_cpu_us",
                                  "hs_resumed_cpu_us", "vm_hs_resumed_cpu_us")):
        sect = []
        if isinstance(floor.get(fl), (int, float)):
            sect.append(("crypto floor (openssl speed)", floor[fl], "#6e7781"))
        if isinstance(micro.get(mk), (int, float)):
            sect.append(("urMQTT in process (micro_tls)", micro[mk], C_U))
        if hk in byk:
            used.append(byk[hk])
            sect += [(n, v, c) for n, v, c in (("urMQTT hosted broker", byk[hk].u, C_U),
                                               ("Mosquitto", byk[hk].m, C_M)) if v is not None]
        if vk in byk:
            used.append(byk[vk])
            f = byk[vk]
            sect += [(n, v, c) for n, v, c in (("urMQTT VM (QEMU process, %s vCPU)" % f.smp, f.u, C_UV),
                                               ("Linux+Mosquitto VM (QEMU process)", f.m, C_MV)) if v is not None]
        rows.append((kind, sect, floor.get(fl) if isinstance(floor.get(fl), (int, float)) else None))
    if not any(sect for _, sect, _ in rows):
        return placeholder(cid, title, ctx, "Handshake CPU: " + NOT_MEASURED, cap)
    n = sum(len(sect) + 1 for _, sect, _ in rows)
    s, y0 = frame(title, "µs of CPU per handshake, log axis", n * 20 + 50)
    x0, x1 = 300, W - 160
    vals = [v for _, sect, _ in rows for _, v, _ in sect]
    lo, hi = log_bounds(vals, pad=1.6)
    sc = LogScale(lo, hi, x0, x1)
    y = y0 + 6
    top = y
    for kind, sect, fl in rows:
        y += 20
        s.text(16, y - 4, "%s handshake" % kind, size=12.5, weight="bold")
        if not sect:
            s.text(x0, y - 4, NOT_MEASURED, size=11, fill=MUTED, italic=True)
        if fl is None and sect:
            s.text(x0, y - 4, "crypto floor: " + NOT_MEASURED, size=10.5, fill=MUTED, italic=True)
        for name, v, col in sect:
            cy = y + 10
            s.text(30, cy + 4, name, size=11.5)
            if v and v > 0:
                s.rect(x0, cy - 6, sc(v) - x0, 12, col, tip="%s: %s µs" % (name, benchlib.fmt_val(v)))
            mult = " = %.1f× floor" % (v / fl) if fl and v and not name.startswith("crypto") else ""
            s.text(max(sc(v), x0) + 6 if v else x0 + 6, cy + 4, "%s µs%s" % (benchlib.fmt_val(v), mult), size=10.5,
                   fill=MUTED)
            y += 20
    for t in sc.ticks():
        s.line(sc(t), top, sc(t), y + 4, stroke=GRID)
        s.text(sc(t), y + 18, tick_text(t), size=10, anchor="middle", fill=MUTED)
    footer(s, ctx, noise_text(used))
    return Chart(cid, title, s.render(cid + "-svg"), True, cap)


# ---- 7. figures without a ratio -------------------------------------------------------------------
def alone_chart(figs, ctx):
    cid, title = "chart-alone", "Figures without a ratio (urMQTT alone, or not comparable)"
    cap = ("Figures Mosquitto has no counterpart for (storage, telemetry log, disk lifecycle, "
           "in-process benchmarks, dp-bench), or whose two values are not comparable; one panel "
           "per unit, log axis per panel. Large dot: the median; small black dots: the single runs.")
    fs = [f for f in figs if f.ratio is None and (f.u is not None or f.m is not None)]
    if not fs:
        return placeholder(cid, title, ctx, "Figures without a ratio: " + NOT_MEASURED, cap)
    units = []
    for f in fs:
        if f.unit not in units:
            units.append(f.unit)
    rows = sum(1 + (f.m is not None) for f in fs)
    s, y0 = frame(title, "medians of this run; panels by unit", rows * 17 + 30 * len(units) + 16)
    x0, x1 = 380, W - 120
    y = y0
    for u in units:
        mem = [f for f in fs if f.unit == u]
        vals = [v for f in mem for v in ([f.u, f.m] + list(f.runs_u or [])) if isinstance(v, (int, float)) and v > 0]
        y += 24
        s.text(16, y - 4, "unit: %s" % (benchlib.UNIT_TEXT.get(u, u) or "count"), size=12, weight="bold")
        sc = LogScale(*log_bounds(vals, pad=1.5), x0, x1) if vals else None
        top = y
        for f in mem:
            for side, v, col, rn in ((f.side_u, f.u, C_U, f.runs_u), (f.side_m, f.m, C_M, f.runs_m)):
                if v is None and side == f.side_m:
                    continue
                cy = y + 8
                name = f.name if side == f.side_u else "  (%s)" % side
                s.text(30, cy + 4, name if len(name) < 70 else name[:67] + "…", size=10.5,
                       fill=INK if side == f.side_u else MUTED)
                if sc and v and v > 0:
                    # a dot plot: on a log axis a bar's length would mean nothing
                    s.line(x0, cy, sc(v), cy, stroke=GRID, width=1)
                    s.circle(sc(v), cy, 5, col, tip="%s, %s: %s (median)" % (f.name, side,
                                                                            benchlib.with_unit(v, f.unit)))
                    for rv in rn or []:
                        if isinstance(rv, (int, float)) and rv > 0:
                            s.circle(sc(rv), cy, 2, INK, tip="one run: %s" % benchlib.with_unit(rv, f.unit))
                s.text(x1 + 12, cy + 4, benchlib.with_unit(v, f.unit), size=10, fill=MUTED)
                y += 17
        if sc:
            for t in sc.ticks():
                s.line(sc(t), top, sc(t), y, stroke=GRID)
                s.text(sc(t), y + 11, tick_text(t), size=9, anchor="middle", fill=MUTED)
        y += 6
    footer(s, ctx, noise_text(fs))
    return Chart(cid, title, s.render(cid + "-svg"), True, cap)


# ---- 8. history ---------------------------------------------------------------------------------
def history_chart(figs, ctx, recs, ratios):
    if ratios:
        cid, title = "chart-history-ratios", "Every ratio over the recorded commits"
        cap = ("docs/bench/history.csv: each figure's urMQTT ÷ Mosquitto ratio at every recorded "
               "commit (left to right in recording order), one colour per machine signature, the "
               "dashed line at 1×; a hollow dot is this run when it is not recorded yet. Whiskers: "
               "the recorded noise band.")
    else:
        cid, title = "chart-history-values", "Figures without a ratio over the recorded commits"
        cap = ("docs/bench/history.csv: urMQTT's median of each figure without a Mosquitto ratio at "
               "every recorded commit, one colour per machine signature; a hollow dot is this run "
               "when it is not recorded yet.")
    cur_key = (ctx.commit, ctx.date, ctx.sig)
    recorded = any((r.commit, r.date, r.sig) == cur_key for r in recs)
    cols = list(recs) + ([None] if not recorded else [])
    sigs = []
    for r in recs:
        if r.sig not in sigs:
            sigs.append(r.sig)
    if not recorded and ctx.sig not in sigs:
        sigs.append(ctx.sig)
    pick = (lambda v: v["ratio"]) if ratios else (lambda v: v["u"] if v["ratio"] is None else None)
    cur = {f.id: f for f in figs}
    ids, meta = [], {}
    for r in recs:
        for fid, v in r.figs.items():
            if pick(v) is not None and fid not in meta:
                ids.append(fid)
                meta[fid] = (v["name"], v["unit"], v["better"])
    for f in figs:
        v = f.ratio if ratios else (f.u if f.ratio is None else None)
        if v is not None and not recorded and f.id not in meta:
            ids.append(f.id)
            meta[f.id] = (f.name, f.unit, f.better)
    order = benchlib.RATIO_GROUPS + benchlib.ALONE_GROUPS
    grp = {f.id: f.group for f in figs}
    for r in recs:
        for fid, v in r.figs.items():
            grp.setdefault(fid, v["group"])
    ids.sort(key=lambda i: order.index(grp.get(i)) if grp.get(i) in order else len(order))
    if not ids:
        what = "ratio" if ratios else "figure without a ratio"
        return placeholder(cid, title, ctx, "No %s recorded yet (%d recorded run%s)" % (
            what, len(recs), "" if len(recs) == 1 else "s"), cap)
    ncol, cw, chh = 4, (W - 40) / 4, 116
    nrow = math.ceil(len(ids) / ncol)
    s, y0 = frame(title, "%d recorded run%s; x: recording order" % (len(recs), "" if len(recs) == 1 else "s"),
                  nrow * chh + 36)
    lx = 16
    for i, sg in enumerate(sigs):
        col = SIG_COLOURS[i % len(SIG_COLOURS)]
        t = benchlib.sig_text(sg)
        s.circle(lx + 5, y0 + 1, 4, col)
        s.text(lx + 13, y0 + 5, t, size=10.5)
        lx += 24 + 6 * len(t)
    for n, fid in enumerate(ids):
        name, unit, better = meta[fid]
        gx, gy = 20 + (n % ncol) * cw, y0 + 22 + (n // ncol) * chh
        px0, px1, pt, pb = gx + 16, gx + cw - 52, gy + 30, gy + chh - 26
        for k, ln in enumerate(wrap(name, 36, 2)):
            s.text(gx, gy + 10 + 12 * k, ln, size=10, weight="bold")
        pts = []   # (column, value, noise, signature index, current?)
        for c, r in enumerate(cols):
            if r is None:
                f = cur.get(fid)
                v = None if f is None else (f.ratio if ratios else (f.u if f.ratio is None else None))
                if v is not None:
                    pts.append((c, v, f.noise, sigs.index(ctx.sig), True))
            elif fid in r.figs and pick(r.figs[fid]) is not None:
                pts.append((c, pick(r.figs[fid]), r.figs[fid]["noise"], sigs.index(r.sig), False))
        vals = [p[1] for p in pts if p[1] > 0]
        lo, hi = log_bounds(vals, pad=1.4, at_least=[1.0] if ratios else None)
        ys = LogScale(lo, hi, pb, pt)
        xs = LinScale(-0.5, max(len(cols) - 0.5, 0.5), px0, px1)
        s.rect(px0, pt, px1 - px0, pb - pt, "#f6f8fa")
        if ratios:
            s.line(px0, ys(1), px1, ys(1), stroke=MUTED, dash="3,3")
            s.text(px0 - 2, ys(1) + 3, "1×", size=8.5, anchor="end", fill=MUTED)
        for si in range(len(sigs)):
            sp = [(xs(c), ys(v)) for c, v, _, k, _ in pts if k == si and v > 0]
            s.polyline(sp, SIG_COLOURS[si % len(SIG_COLOURS)], width=1.5)
        for c, v, nz, k, now in pts:
            col = SIG_COLOURS[k % len(SIG_COLOURS)]
            if v <= 0:
                continue
            if nz:
                s.line(xs(c), ys(v / (1 + nz)), xs(c), ys(v * (1 + nz)), stroke=col, width=1)
            lab = cols[c].commit[:12] if cols[c] is not None else "this run"
            s.circle(xs(c), ys(v), 3.2, "#ffffff" if now else col, stroke=col if now else None,
                     tip="%s at %s: %s" % (name, lab, ratio_text(v) if ratios else benchlib.with_unit(v, unit)))
        if pts:
            c, v = pts[-1][0], pts[-1][1]
            if ratios:
                dummy = benchlib.Fig("", "", "", unit, better, None, None, v)
                col, txt = verdict_colour(dummy, v), ratio_text(v)
            else:
                col, txt = INK, benchlib.with_unit(v, unit)
            s.text(px1 + 4, ys(v) + 4 if v > 0 else pb, txt, size=9.5, fill=col)
        first = cols[pts[0][0]] if pts else None
        s.text(px0, pb + 11, first.commit[:10] if first is not None else "this run", size=8.5, fill=MUTED)
        if pts and pts[-1][0] != pts[0][0]:
            last = cols[pts[-1][0]]
            s.text(px1, pb + 11, last.commit[:10] if last is not None else "this run", size=8.5,
                   anchor="end", fill=MUTED)
    used = [f for f in figs if f.id in meta]
    footer(s, ctx, noise_text(used))
    return Chart(cid, title, s.render(cid + "-svg"), True, cap)


def wrap(text, width, lines):
    """text in at most `lines` lines of about `width` characters, the last one cut with …"""
    out, cur = [], ""
    for w in text.split():
        if cur and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = w
        else:
            cur = (cur + " " + w).strip()
    out.append(cur)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][:width - 1] + "…"
    return [ln if len(ln) <= width + 6 else ln[:width] + "…" for ln in out]


def all_charts(figs, ctx, recs):
    return [ratio_chart(figs, ctx), latency_chart(figs, ctx), storm_chart(figs, ctx),
            memory_chart(figs, ctx), cores_chart(figs, ctx, recs), hs_cpu_chart(figs, ctx),
            alone_chart(figs, ctx), history_chart(figs, ctx, recs, True),
            history_chart(figs, ctx, recs, False)]
