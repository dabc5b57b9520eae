#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Unit test of the regression printout of make bench (tools/bench/history.py, benchlib.compare)
# and of make bench-record, on tests/fixtures/bench/ (test data). Prints "PASS name (...)" /
# "FAIL name (...)" lines; run by tests/smoke/bench-report.sh. Usage: test_bench_history.py WORKDIR
#   bench-history/moved-lines       the exact printout against the fixture history: the QoS 0
#                                   flood on 2 vCPUs named first, "0.69× → 0.07×"; the moves within
#                                   their band (QoS 1 flood, QoS 1 p99, dp-bench) not named; what
#                                   could not be compared counted
#   bench-history/same-signature    a later record of another machine is never the comparison;
#                                   with only that one, nothing is compared
#   bench-history/record            make bench-record's rows: one per figure, commit, date and
#                                   signature of the results, the noise band from the runs; a second
#                                   record of the same run appends nothing
#   bench-history/own-record-skipped  once these results are recorded, the check still compares
#                                   with the record before them
#   bench-history/band              the band: range of 2-3 runs, interquartile range from 4 runs
#                                   (three outliers in twelve do not triple it), unknown for one; a
#                                   move just inside is quiet, just outside named
#   bench-history/dpbench-arches    dp-bench rows of the x86_64 ("guest") and aarch64
#                                   ("guest-aarch64") images: separate figures, never one median
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tools", "bench"))
import benchlib  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures", "bench")
RESULTS = os.path.join(FIX, "results.json")
HISTORY = os.path.join(FIX, "history.csv")
TOOL = os.path.join(ROOT, "tools", "bench", "history.py")
EXPECTED = [
    "bench: 3 of 6 figures moved beyond their noise band since fixture0 (2026-01-01), the last record on"
    " this machine (Fixture CPU 9000, 2 cores, TCG):",
    "QoS 0 flood, 2 vCPUs: 0.69× → 0.07× (worse; noise band ±10%)",
    "durable: commit p99 (write + fdatasync): 256 µs → 512 µs (moved; noise band ±5%)",
    "full mTLS handshakes/s: 0.90× → 1.19× (better; noise band ±8%)",
    "bench: not compared: 3 figures of fixture0 not in this run, 53 of this run not in fixture0",
]
failed = 0


def result(ok, name, why):
    global failed
    failed += not ok
    print("%s bench-history/%s (%s)" % ("PASS" if ok else "FAIL", name, why))


def run(*args):
    p = subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    return p.returncode, p.stdout.splitlines(), p.stderr


def diff(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return "line %d: got %r, want %r" % (i + 1, g, w)
    return "got %d lines, want %d: %r" % (len(got), len(want), got)


def main():
    work = sys.argv[1]
    os.makedirs(work, exist_ok=True)

    rc, out, err = run("check", "--results", RESULTS, "--history", HISTORY)
    result(rc == 0 and out == EXPECTED, "moved-lines", "%d lines as expected, first: %s" % (len(out), out[1])
           if rc == 0 and out == EXPECTED else "exit %d; %s %s" % (rc, diff(out, EXPECTED), err.strip()[:200]))

    other = os.path.join(work, "history-other.csv")
    with open(HISTORY) as src, open(other, "w") as dst:
        dst.writelines(ln for ln in src if not ln.startswith("fixture0,"))
    rc, out, _ = run("check", "--results", RESULTS, "--history", other)
    ok = rc == 0 and len(out) == 1 and out[0].startswith("bench: no earlier record on this machine (Fixture CPU 9000,"
                                                         " 2 cores, TCG)")
    result(ok and "otherbox" not in " ".join(out), "same-signature",
           "only another machine's record: %s" % out[0] if ok else "got %r" % out)

    hist = os.path.join(work, "history.csv")
    shutil.copy(HISTORY, hist)
    n0 = len(benchlib.read_history(hist))
    rc, out, err = run("record", "--results", RESULTS, "--history", hist)
    rows = benchlib.read_history(hist)[n0:]
    figs = [f for f in benchlib.figures(benchlib_load(RESULTS)) if f.u is not None or f.m is not None]
    q0 = next((r for r in rows if r["figure"] == "vm_q0_msgs_per_s_smp2"), {})
    ok = (rc == 0 and len(rows) == len(figs) and all(r["commit"] == "fixture2" and r["date"] == "2026-01-02T00:00:00Z"
                                                     and r["cpu_model"] == "Fixture CPU 9000" and r["cores"] == "2"
                                                     and r["accel"] == "TCG" for r in rows)
          and q0.get("ratio") == "0.0699708" and q0.get("noise") == "0.080016" and q0.get("runs") == "3")
    rc2, out2, _ = run("record", "--results", RESULTS, "--history", hist)
    again = len(benchlib.read_history(hist)) - n0
    ok = ok and rc2 == 0 and again == len(rows) and "nothing appended" in " ".join(out2)
    result(ok, "record", "%d rows appended (one per figure), QoS 0 flood 2 vCPUs ratio %s noise %s; a second "
           "record appended nothing" % (len(rows), q0.get("ratio"), q0.get("noise")) if ok
           else "exit %d/%d, %d rows for %d figures, row %r, after a second record %d rows; %s"
           % (rc, rc2, len(rows), len(figs), q0, again, err.strip()[:200]))

    rc, out, _ = run("check", "--results", RESULTS, "--history", hist)
    result(rc == 0 and out == EXPECTED, "own-record-skipped", "compared with fixture0, not with itself"
           if out == EXPECTED else diff(out, EXPECTED))

    sp = [benchlib.spread([100]), benchlib.spread([90, 100, 110]),
          benchlib.spread([35, 40, 822, 823, 857, 858, 861, 874, 901, 912, 1002, 38])]
    rec = benchlib.Record("a", "d", ("c", "2", "TCG"), "")
    rec.figs["x"] = {"name": "x", "unit": "1/s", "better": "higher", "group": "messages", "u": 100.0, "m": 100.0,
                     "ratio": 1.0, "noise": 0.10}
    inside = benchlib.Fig("x", "x", "x", "1/s", "higher", 109.0, 100.0, 1.09)
    outside = benchlib.Fig("x", "x", "x", "1/s", "higher", 111.0, 100.0, 1.11)
    m_in, _ = benchlib.compare(rec, [inside])
    m_out, _ = benchlib.compare(rec, [outside])
    # twelve runs, three of them far below: the interquartile range (~30 %), not the full range (~113 %)
    ok = (sp[0] is None and abs(sp[1] - 0.2) < 1e-9 and 0.25 < sp[2] < 0.35 and not m_in and len(m_out) == 1
          and m_out[0].line() == "x: 1.00× → 1.11× (better; noise band ±10%)")
    result(ok, "band", "one run: none; 90/100/110: ±20%%; twelve runs with three outliers: ±%.0f%%; 1.09× "
           "quiet, 1.11× named in a ±10%% band" % (100 * sp[2]) if ok else "spreads %r, inside %r, outside %r"
           % (sp, [m.line() for m in m_in], [m.line() for m in m_out]))

    # dp-bench rows of both images: each its own figures, never one median over both
    res = {"dpbench": [{"dpbench": "guest", "workers": 1, "handshakes_per_s": 10.0},
                       {"dpbench": "guest", "workers": 2, "handshakes_per_s": 20.0},
                       {"dpbench": "guest-aarch64", "workers": 1, "handshakes_per_s": 3.0},
                       {"dpbench": "guest-aarch64", "workers": 2, "handshakes_per_s": 5.0}]}
    got = {f.key: (f.u, f.name, f.group) for f in benchlib.figures(res)}
    want = {"dpbench_hs_per_s_w1": (10.0, "dp-bench handshakes/s, 1 worker core", "cores"),
            "dpbench_hs_per_s_w2": (20.0, "dp-bench handshakes/s, 2 worker cores", "cores"),
            "dpbench_aarch64_hs_per_s_w1": (3.0, "dp-bench aarch64 handshakes/s, 1 worker core", "cores"),
            "dpbench_aarch64_hs_per_s_w2": (5.0, "dp-bench aarch64 handshakes/s, 2 worker cores", "cores")}
    result(got == want, "dpbench-arches", "x86_64 and aarch64 rows give separate figures" if got == want
           else "got %r" % got)
    return 1 if failed else 0


def benchlib_load(path):
    import json
    with open(path) as fh:
        return json.load(fh)


if __name__ == "__main__":
    sys.exit(main())
