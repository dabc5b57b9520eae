#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bench report (make bench-report: tools/bench/report_html.py) drawn from the fixture
# results and history (tests/fixtures/bench/: test data) and loaded in headless Chromium
# (Debian's chromium, installed by tools/setup/ensure-packages.sh). No network, no QEMU, no
# broker. A missing browser is a failure, never a pass or a skip. Results:
#   bench-history/*          tests/unit/tools/test_bench_history.py: the regression printout's
#                            exact lines, the machine signature, make bench-record, the band
#   bench-report/render      report_html.py exits 0 and writes the page (and one SVG per chart)
#   bench-report/offline     the page refers to nothing outside itself; no script
#   bench-report/not-measured-chart-*  from the fixture without QoS 2 latency and storm rows:
#                            those charts say "not measured in this run" and draw nothing; the
#                            QoS 1 panel is still drawn
#   bench-report/browser     chromium installed and it dumped the page's DOM (exit 0)
#   bench-report/console     Chromium logged no console message for the page (a probe page's
#                            console.error is seen first: the check is not blind)
#   bench-report/chart-*     the DOM holds each chart's figure with an <svg> of drawn content
#   bench-report/screenshot  the screenshot (kept: BUILD/test-logs/bench-report/report.png) is
#                            not blank and shows the ratio chart's better and worse colours
# Usage: bench-report.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$build/test-logs/bench-report
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
export PYTHONDONTWRITEBYTECODE=1
fix=$root/tests/fixtures/bench
check=$root/tests/smoke/lib/bench_report_check.py
pass() { echo "PASS bench-report/$1${2:+ ($2)}"; }
fail() { echo "FAIL bench-report/$1${2:+ ($2)}"; }
charts=(chart-ratio chart-latency chart-storm chart-memory chart-cores chart-hs-cpu chart-alone
	chart-history-ratios chart-history-values)

# ---- the regression printout and make bench-record (no browser) -----------------------------
python3 "$root/tests/unit/tools/test_bench_history.py" "$work/history" || true

# ---- the page ---------------------------------------------------------------------------------
page=$work/report.html
if python3 "$root/tools/bench/report_html.py" --results "$fix/results.json" --history "$fix/history.csv" \
	--out "$page" --svg-dir "$work/svg" >"$work/render.log" 2>&1 && [ -s "$page" ] &&
	[ "$(ls "$work/svg" | wc -l)" -eq ${#charts[@]} ]; then
	pass render "$(wc -c <"$page") bytes, ${#charts[@]} SVGs"
else
	fail render "see $work/render.log"
fi
python3 "$check" offline "$page"

# Series missing from the results: the chart says so and draws nothing in their place.
python3 - "$fix/results.json" "$work/partial.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["figures"] = {k: v for k, v in r["figures"].items() if not k.startswith("lat2_")}
r["raw"] = [x for x in r["raw"] if x.get("figure") != "storm"]
json.dump(r, open(sys.argv[2], "w"))
EOF
python3 "$root/tools/bench/report_html.py" --results "$work/partial.json" --history "$fix/history.csv" \
	--out "$work/partial.html" >"$work/partial.log" 2>&1 || fail not-measured "report_html.py failed, see $work/partial.log"
python3 "$check" not-measured "$work/partial.html" chart-storm
# the latency chart keeps QoS 1 and the VMs, and says QoS 2 is not measured
if grep -q 'QoS 2 at 1,000 msgs/s</text>' "$work/partial.html" &&
	python3 - "$work/partial.html" <<'EOF'
import re, sys
h = open(sys.argv[1]).read()
svg = re.search(r'<figure class="chart" id="chart-latency">(.*?)</figure>', h, re.S).group(1)
sys.exit(0 if svg.count("not measured in this run") == 1 and "QoS 1 latency p99" in svg else 1)
EOF
then
	pass not-measured-qos2-panel "the QoS 2 panel says not measured in this run; QoS 1 drawn"
else
	fail not-measured-qos2-panel "see $work/partial.html"
fi

# ---- Chromium ---------------------------------------------------------------------------------
if ! "$root/tools/setup/ensure-packages.sh" chromium >"$work/packages.log" 2>&1 || ! command -v chromium >/dev/null; then
	fail browser "chromium is not installed and could not be (see $work/packages.log)"
	for c in console "${charts[@]}" screenshot; do fail "$c" "no browser"; done
	exit 1
fi
chromium_run() { # LOG ARGS...: headless, its own profile, no network use of its own
	local log=$1
	shift
	timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
		--disable-background-networking --disable-sync --disable-default-apps --disable-component-update \
		--user-data-dir="$work/profile" --hide-scrollbars --enable-logging=stderr --v=0 "$@" 2>"$log"
}
printf '<!DOCTYPE html><html><head><meta charset="utf-8"><title>probe</title></head><body><script>console.error("bench-report-probe")</script></body></html>\n' \
	>"$work/probe.html"
chromium_run "$work/probe.err" --dump-dom "file://$work/probe.html" >"$work/probe.dom"
if chromium_run "$work/dom.err" --dump-dom "file://$page" >"$work/dom.html" && grep -q '<svg' "$work/dom.html"; then
	pass browser "$(chromium --version 2>/dev/null | tail -n 1) dumped the DOM ($(wc -c <"$work/dom.html") bytes)"
else
	fail browser "chromium failed to load the page, see $work/dom.err"
fi
python3 "$check" console "$work/dom.err" "$work/probe.err"
python3 "$check" charts "$work/dom.html" "${charts[@]}"
if chromium_run "$work/shot.err" --window-size=1280,1600 --screenshot="$work/report.png" "file://$page" >/dev/null &&
	[ -s "$work/report.png" ]; then
	python3 "$check" png "$work/report.png"
else
	fail screenshot "chromium wrote no screenshot, see $work/shot.err"
fi
