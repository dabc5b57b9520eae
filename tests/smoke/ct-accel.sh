#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The constant-time check of tls/accel's curve code (tests/ct/ct_accel.c, ctgrind style): the
# secrets are marked undefined and valgrind memcheck reports every branch and every memory
# address that depends on them.
#   ct/accel-control  the negative control: memcheck must report the program's own secret
#                     branch and secret array index, with the same options and suppressions
#                     (else the checks below could pass without looking)
#   ct/accel-base     P-256 (public key, ECDH, signing) and X25519 (scalar multiplication,
#                     public key) on the architecture's code without optional instructions
#   ct/accel-mulx     x86_64: the same on the MULX/ADCX/ADOX code (needs cpu adx)
#   ct/accel-generic  x86_64: X25519 on the portable C field (on aarch64 it is the base path)
# A path passes when its results are right and memcheck reports no error beyond
# tests/ct/accel.supp, and when a second run without that file reports nothing but the one
# branch it names (point_add's equal-inputs test, at its jnz/cbnz .Ladd_proceed, called
# from mul_point): so the suppression cannot hide anything else. valgrind missing is a failure.
# Usage: ct-accel.sh BUILD_DIR
set -uo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build/hostrel/tests/ct/ct_accel
supp=$root/tests/ct/accel.supp
gen=$build/gen/openssl
work=$build/test-logs/ct-accel
pass() { echo "PASS ct/$1${2:+ ($2)}"; }
fail() { echo "FAIL ct/$1${2:+ ($2)}"; }

command -v valgrind >/dev/null ||
	{ fail accel-setup "valgrind not on PATH: tools/setup/ensure-packages.sh installs it"; exit 1; }
command -v python3 >/dev/null || { fail accel-setup "python3 not on PATH (reads valgrind's XML)"; exit 1; }
[ -x "$bin" ] || { fail accel-setup "missing $bin (make $bin)"; exit 1; }
[ -f "$supp" ] || { fail accel-setup "missing $supp"; exit 1; }
rm -rf "$work"
mkdir -p "$work"

# vg NAME VALGRIND_OPTION... -- ARG...: the program under memcheck; its output in NAME.out,
# valgrind's in NAME.vg; returns valgrind's status (99: memcheck reported errors).
vg() {
	local name=$1 opts=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	timeout 600 valgrind --tool=memcheck --error-exitcode=99 --error-limit=no --leak-check=no \
		--num-callers=16 --read-inline-info=yes "${opts[@]}" --log-file="$work/$name.vg" \
		"$bin" "$@" >"$work/$name.out" 2>&1
}
summary() { sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors from [0-9]* contexts (suppressed: \([0-9]*\) from.*/\1 \2/p' "$1" | tail -n 1; }
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# audit XML: every error of an unsuppressed run is the suppressed branch (see the header).
audit() {
	python3 - "$1" "$gen" <<'EOF'
import re, sys, xml.etree.ElementTree as ET
path, gen = sys.argv[1], sys.argv[2]
want_fn = {"ecp_nistz256_point_add", "ecp_nistz256_point_addx"}
def branch_line(src, line):
    # gas gives a prefix byte (.byte 0x3e) no line of its own, so the jump's address may carry
    # the line of the instruction before it: that line, then blanks and .byte lines, then it.
    try:
        lines = open(f"{gen}/{src}").read().split("\n")
    except OSError:
        return False
    for i, text in enumerate(lines[line - 1:line + 6]):
        t = text.strip()
        if re.match(r"(jnz|cbnz)\s.*\.Ladd_proceed", t):
            return True
        if i > 0 and t and not t.startswith(".byte"):
            return False
    return False
bad, n = [], 0
for err in ET.parse(path).getroot().iter("error"):
    n += 1
    kind = err.findtext("kind")
    frames = err.find("stack").findall("frame")
    f0 = frames[0] if frames else None
    fn = f0.findtext("fn") if f0 is not None else "?"
    where = f"{fn} ({f0.findtext('file')}:{f0.findtext('line')})" if f0 is not None else "?"
    caller = frames[1].findtext("fn") if len(frames) > 1 else "?"
    ok = (kind == "UninitCondition" and fn in want_fn and caller == "mul_point"
          and branch_line(f0.findtext("file") or "", int(f0.findtext("line") or 0)))
    if not ok:
        bad.append(f"{kind} at {where} from {caller}")
print(f"{n} context{'' if n == 1 else 's'}" + ("" if not bad else ": not the suppressed branch: " + "; ".join(bad[:3])))
sys.exit(1 if bad else 0)
EOF
}

# ---- the negative control -----------------------------------------------------------------
t0=$(date +%s%N)
vg control --suppressions="$supp" -- control
rc=$?
read -r errs _ <<<"$(summary "$work/control.vg")"
if [ $rc -eq 99 ] && grep -q '^ct_accel control: secret branch [1-9][0-9]* memcheck errors, secret index [1-9]' "$work/control.out" &&
	grep -A1 'Conditional jump or move depends on uninitialised' "$work/control.vg" | grep -q 'control_early_exit' &&
	grep -A1 'Use of uninitialised value of size' "$work/control.vg" | grep -q 'control_lookup'; then
	pass accel-control "memcheck reported the secret branch and the secret index: ${errs:-?} errors, $(ms_since "$t0") ms"
else
	fail accel-control "valgrind exit $rc, expected 99 with both leaks reported, see $work/control.{out,vg}"
fi

# ---- the paths ----------------------------------------------------------------------------
check_path() { # PATH
	local p=$1 t0 rc errs supd calls note
	t0=$(date +%s%N)
	vg "$p" --suppressions="$supp" -- check "$p"
	rc=$?
	read -r errs supd <<<"$(summary "$work/$p.vg")"
	calls=$(sed -n "s/^ct_accel $p: \([0-9]*\) calls, 0 memcheck errors, 0 wrong results$/\1/p" "$work/$p.out")
	vg "$p-nosupp" --xml=yes --xml-file="$work/$p-nosupp.xml" -- check "$p"
	note=$(audit "$work/$p-nosupp.xml" 2>&1)
	local audit_rc=$?
	note=$(tail -n 1 <<<"$note")
	grep -q "^ct_accel $p: " "$work/$p-nosupp.out" || { audit_rc=1; note="the run without suppressions did not finish"; }
	if [ $rc -eq 0 ] && [ "${errs:-x}" = 0 ] && [ -n "$calls" ] && [ $audit_rc -eq 0 ]; then
		if [ "${supd:-0}" = 0 ]; then
			note="nothing suppressed"
		else
			note="point_add's equal-inputs branch suppressed $supd times, the only report without the suppressions ($note)"
		fi
		pass "accel-$p" "$(sed -n "s/^path $p: //p" "$work/$p.out"): $calls calls, no memcheck error; $note; $(ms_since "$t0") ms"
	elif [ $rc -ne 0 ] || [ "${errs:-x}" != 0 ] || [ -z "$calls" ]; then
		fail "accel-$p" "valgrind exit $rc, ${errs:-?} memcheck errors, see $work/$p.{out,vg}: $(grep -m1 -A1 '^==[0-9]*== [A-Z][a-z].*\(uninitialised\|Invalid\)' "$work/$p.vg" | tail -n 1 | sed 's/^==[0-9]*== *//')"
	else
		fail "accel-$p" "the suppression hides more than its branch: $note; see $work/$p-nosupp.xml"
	fi
}

arch=$(uname -m)
check_path base
if [ "$arch" = x86_64 ]; then
	if grep -qw adx /proc/cpuinfo && grep -qw bmi2 /proc/cpuinfo; then
		check_path mulx
	else
		echo "SKIP ct/accel-mulx (needs cpu adx)"
	fi
	check_path generic
fi
