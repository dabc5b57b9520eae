#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# docs/bench/history.csv: `make bench-record` appends a run's figures (median, ratio, noise
# band, with commit, date and machine signature: CPU model, cores, accelerator); the last
# step of `make bench` (tools/bench/run.sh) prints every figure that moved beyond its noise
# band since the last record on a machine of the same signature. Only prints: a move is
# news, never a failure of make bench. Never writes a row the results do not hold.
#   history.py record --results R --history H [--commit C] [--note TEXT]
#   history.py check  --results R --history H
import argparse
import sys

sys.dont_write_bytecode = True
import benchlib  # noqa: E402  (after the bytecode switch: no __pycache__ in the tree)


def load(path):
    import json
    with open(path) as fh:
        return json.load(fh)


def cmd_record(a):
    res = load(a.results)
    mach, notes = benchlib.machine(res)
    commit, date, more = benchlib.results_commit_date(res, a.results)
    notes += more
    if a.commit:
        if commit and commit != a.commit:
            notes.append("results.json names commit %s; recorded as %s (COMMIT=)" % (commit, a.commit))
        commit = a.commit
    elif not commit:
        commit = benchlib.git_head()
        notes.append("recorded as the current HEAD %s: say COMMIT=... when the run measured another"
                     % commit)
    if not commit:
        print("bench-record: no commit known (not a git tree?): give COMMIT=...", file=sys.stderr)
        return 1
    for n in notes:
        print("bench-record: " + n)
    recs = benchlib.records(benchlib.read_history(a.history))
    sig = benchlib.signature(mach)
    if any(r.commit == commit and r.date == date and r.sig == sig for r in recs):
        print("bench-record: %s of %s on %s is in %s already: nothing appended"
              % (commit, date, benchlib.sig_text(sig), a.history))
        return 0
    figs = benchlib.figures(res)
    rows = benchlib.history_rows(figs, commit, date, mach, a.note or "")
    if not rows:
        print("bench-record: %s holds no figure: nothing appended" % a.results, file=sys.stderr)
        return 1
    benchlib.append_history(a.history, rows)
    n_ratio = sum(1 for r in rows if r["ratio"])
    print("bench-record: %d figures (%d with a ratio to Mosquitto) of %s, %s, %s appended to %s"
          % (len(rows), n_ratio, commit, date, benchlib.sig_text(sig), a.history))
    return 0


def check_lines(res, results_path, history_path):
    """The printout of a check, as lines (the unit test compares them exactly)."""
    mach, _ = benchlib.machine(res)
    sig = benchlib.signature(mach)
    commit, date, _ = benchlib.results_commit_date(res, results_path)
    recs = benchlib.records(benchlib.read_history(history_path))
    prev = benchlib.last_record(recs, sig, commit, date)
    if prev is None:
        own = any(r.sig == sig and r.commit == commit and r.date == date for r in recs)
        return ["bench: no earlier record on this machine (%s) in %s: nothing to compare%s"
                % (benchlib.sig_text(sig), history_path,
                   "; these results are its only record" if own else " (make bench-record adds these results)")]
    figs = benchlib.figures(res)
    moves, n = benchlib.compare(prev, figs)
    head = "since %s (%s), the last record on this machine (%s)" % (prev.commit, prev.date[:10],
                                                                   benchlib.sig_text(sig))
    ids = {f.id for f in figs if f.u is not None or f.m is not None}
    # what could not be compared, so a comparison of few figures does not look like a calm one
    cover = "bench: not compared: %d figures of %s not in this run, %d of this run not in %s" % (
        len(set(prev.figs) - ids), prev.commit, len(ids - set(prev.figs)), prev.commit)
    if not moves:
        return ["bench: no figure moved beyond its noise band %s; %d compared" % (head, n), cover]
    return (["bench: %d of %d figures moved beyond their noise band %s:" % (len(moves), n, head)]
            + [m.line() for m in moves] + [cover])


def cmd_check(a):
    try:
        res = load(a.results)
    except (OSError, ValueError) as e:
        print("bench: no results to compare (%s)" % e)
        return 0
    for line in check_lines(res, a.results, a.history):
        print(line)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("record", "check"):
        p = sub.add_parser(name)
        p.add_argument("--results", required=True)
        p.add_argument("--history", required=True)
        if name == "record":
            p.add_argument("--commit", default="")
            p.add_argument("--note", default="")
    a = ap.parse_args()
    return cmd_record(a) if a.cmd == "record" else cmd_check(a)


if __name__ == "__main__":
    sys.exit(main())
