#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# make bench-report: one offline page, build/bench/report.html, from the last results.json
# and docs/bench/history.csv — the charts of charts.py as inline SVG, what moved since the
# last record on this machine, every figure's table and the recorded runs. Static: no
# script, no network, no third-party code; the page holds every byte it shows. With
# --svg-dir it also writes each chart as a standalone .svg (docs/bench/ for BENCHMARKS.md).
# Draws only what the inputs hold.
#   report_html.py --results R --history H --out OUT.html [--svg-dir DIR]
import argparse
import json
import os
import sys
from html import escape

sys.dont_write_bytecode = True
import benchlib  # noqa: E402
import charts  # noqa: E402
import history  # noqa: E402

CSS = """
body { font-family: DejaVu Sans, Verdana, Arial, sans-serif; color: #1f2328; background: #f6f8fa;
       margin: 0; padding: 0 24px 40px; }
header { padding: 18px 0 8px; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 28px 0 8px; }
.meta { color: #57606a; font-size: 13px; margin: 2px 0; }
.fixture { background: #fff8c5; border: 1px solid #d4a72c; padding: 8px 12px; margin: 10px 0; }
.moves { background: #ffffff; border: 1px solid #d0d7de; border-left: 4px solid #cf222e;
         padding: 8px 14px; margin: 12px 0; font-size: 13.5px; }
.moves.calm { border-left-color: #1a7f37; }
.moves pre { margin: 4px 0; white-space: pre-wrap; font-size: 13px; }
figure.chart { background: #ffffff; border: 1px solid #d0d7de; border-radius: 6px; margin: 16px 0;
               padding: 10px; max-width: 980px; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
figcaption { color: #57606a; font-size: 12.5px; margin: 6px 4px 2px; max-width: 940px; }
table { border-collapse: collapse; background: #ffffff; font-size: 12.5px; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 7px; text-align: right; }
th { background: #eaeef2; }
td.l, th.l { text-align: left; }
td.better { color: #1a7f37; font-weight: bold; }
td.worse { color: #cf222e; font-weight: bold; }
nav a { margin-right: 12px; font-size: 13px; color: #0969da; }
"""


NAV = {"chart-ratio": "ratios", "chart-latency": "latency", "chart-storm": "storm", "chart-memory": "memory",
       "chart-cores": "cores", "chart-hs-cpu": "handshake CPU", "chart-alone": "without a ratio",
       "chart-history-ratios": "history: ratios", "chart-history-values": "history: the rest"}


def figure_table(figs):
    out = ['<table><tr><th class="l">group</th><th class="l">figure</th><th class="l">as measured</th>'
           '<th>urMQTT</th><th>Mosquitto</th><th>ratio</th><th class="l">better</th><th>runs</th>'
           '<th>noise band</th></tr>']
    order = benchlib.RATIO_GROUPS + benchlib.ALONE_GROUPS + ["other"]
    for f in sorted(figs, key=lambda f: order.index(f.group) if f.group in order else len(order)):
        if f.u is None and f.m is None:
            continue
        cls = ""
        if f.ratio is not None:
            cls = {charts.BETTER: "better", charts.WORSE: "worse"}.get(charts.verdict_colour(f), "")
        out.append('<tr><td class="l">%s</td><td class="l">%s</td><td class="l">%s</td><td>%s</td><td>%s</td>'
                   '<td class="%s">%s</td><td class="l">%s</td><td>%s</td><td>%s</td></tr>' % (
                       escape(f.group), escape(f.name), escape(f.label or ""),
                       escape(benchlib.with_unit(f.u, f.unit)),
                       escape(benchlib.with_unit(f.m, f.unit)) if f.m is not None else "—", cls,
                       escape(charts.ratio_text(f.ratio)) if f.ratio is not None else "—",
                       escape(f.better or ""), f.n_runs or "—",
                       "±%.0f%%" % (100 * f.noise) if f.noise is not None else "—"))
    out.append("</table>")
    return "\n".join(out)


def records_table(recs):
    if not recs:
        return '<p class="meta">No run recorded yet: <code>make bench-record</code> adds the last one.</p>'
    out = ['<table><tr><th class="l">commit</th><th class="l">date</th><th class="l">machine</th>'
           '<th>figures</th><th>with a ratio</th><th class="l">note</th></tr>']
    for r in recs:
        out.append('<tr><td class="l"><code>%s</code></td><td class="l">%s</td><td class="l">%s</td>'
                   '<td>%d</td><td>%d</td><td class="l">%s</td></tr>' % (
                       escape(r.commit), escape(r.date), escape(benchlib.sig_text(r.sig)), len(r.figs),
                       sum(1 for v in r.figs.values() if v["ratio"] is not None), escape(r.note or "")))
    out.append("</table>")
    return "\n".join(out)


def page(res, results_path, history_path, chs, figs, recs, ctx):
    moves = history.check_lines(res, results_path, history_path)
    calm = moves[0].startswith("bench: no ")   # nothing moved, or nothing to compare
    settings = res.get("settings") or {}
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>urMQTT benchmarks: %s</title>" % escape(ctx.commit),
             "<style>%s</style></head><body>" % CSS, "<header>",
             "<h1>urMQTT against Mosquitto: the last <code>make bench</code></h1>",
             '<p class="meta">%s</p>' % escape(ctx.line)]
    if res.get("fixture"):
        parts.append('<p class="fixture">Test data (%s): not a measurement.</p>' % escape(str(res["fixture"])))
    parts.append('<p class="meta">%s; %d runs of %ss per figure (median); %s figures in this run, %d with a '
                 'Mosquitto ratio; %s; results: %s; history: %s.</p>' % (
                     "groups: " + ("BENCH_ONLY=&quot;%s&quot;" % escape(" ".join(settings["only"]))
                                   if settings.get("only") else "all (or not recorded)"),
                     settings.get("runs", 0), benchlib.fmt_val(settings.get("seconds")),
                     len([f for f in figs if f.u is not None or f.m is not None]),
                     len([f for f in figs if f.ratio is not None]),
                     "make bench took %ss" % res.get("elapsed_s") if res.get("elapsed_s") else "duration unknown",
                     escape(results_path), escape(history_path)))
    for n in ctx.notes:
        parts.append('<p class="meta">Note: %s.</p>' % escape(n))
    parts.append("<nav>" + "".join('<a href="#%s">%s</a>' % (c.id, escape(NAV.get(c.id, c.id)))
                                   for c in chs) + '<a href="#table">table</a><a href="#runs">recorded runs</a></nav>')
    parts.append("</header>")
    parts.append('<section class="moves%s"><strong>Since the last record on this machine</strong><pre>%s</pre>'
                 "</section>" % (" calm" if calm else "", escape("\n".join(moves))))
    for c in chs:
        parts.append('<figure class="chart" id="%s">%s<figcaption>%s</figcaption></figure>'
                     % (c.id, c.svg, escape(c.caption)))
    parts.append('<h2 id="table">Every figure of this run</h2>')
    parts.append(figure_table(figs))
    notes = (res.get("notes") or []) + ((res.get("vm") or {}).get("notes") or [])
    for n in notes:
        parts.append('<p class="meta">%s</p>' % escape(n))
    parts.append('<h2 id="runs">Recorded runs (docs/bench/history.csv)</h2>')
    parts.append(records_table(recs))
    parts.append('<p class="meta">Made by tools/bench/report_html.py from %s; no script, no network.</p>'
                 % escape(os.path.basename(results_path)))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--history", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--svg-dir", default="")
    a = ap.parse_args()
    try:
        with open(a.results) as fh:
            res = json.load(fh)
    except (OSError, ValueError) as e:
        print("bench-report: no results to draw (%s): run make bench first" % e, file=sys.stderr)
        return 1
    figs = benchlib.figures(res)
    recs = benchlib.records(benchlib.read_history(a.history))
    ctx = charts.Ctx(res, a.results)
    chs = charts.all_charts(figs, ctx, recs)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as fh:
        fh.write(page(res, a.results, a.history, chs, figs, recs, ctx))
    drawn = [c.id for c in chs if c.has_data]
    print("bench-report: %s (%d charts, %d with figures of this run: %s)"
          % (os.path.abspath(a.out), len(chs), len(drawn), ", ".join(drawn) or "none"))
    if a.svg_dir:
        os.makedirs(a.svg_dir, exist_ok=True)
        for c in chs:
            p = os.path.join(a.svg_dir, c.id[len("chart-"):] + ".svg")
            with open(p, "w") as fh:
                fh.write('<?xml version="1.0" encoding="UTF-8"?>\n<!-- SPDX-License-Identifier: MIT -->\n'
                         '<!-- %s: exported by make bench-report (tools/bench/report_html.py) from %s -->\n%s\n'
                         % (c.title.replace("--", "-"), a.results, c.svg))
        print("bench-report: %d SVGs in %s" % (len(chs), a.svg_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
