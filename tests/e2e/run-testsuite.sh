#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 13): CPython 3.12's own test suite, a short run, recorded with
# perf as a user would: `python3.12 -X perf -m test test_int test_string
# test_sys` with PYTHONPERFSUPPORT=1 under `perf record --call-graph dwarf`.
# test_sys starts some interpreters with -I (test.support.script_helper's
# isolated mode), which ignores PYTHONPERFSUPPORT: those write no perf map.
# Then:
#   - report: "Python code" is more than "Python interpreter" (the eval
#     loop with a Python frame above it is the user's code; the issue saw
#     75% "Python interpreter" and 0.1% "Python code"), and "Python
#     interpreter" is under 25%;
#   - convert warns once about the processes that ran Python without a
#     perf map, and -v names exactly the sampled python3.12 processes that
#     have no /tmp/perf-PID.map (perf script lists the processes; the
#     -X perf parent is not among them); info lists the cause under lacks.
# PY312 overrides the interpreter; TESTSUITE_TESTS the test modules.
# About 10-30 s.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

py=${PY312:-}
if [ -z "$py" ]; then
	root=$(pyenv root 2>/dev/null) || root=${PYENV_ROOT:-$HOME/.pyenv}
	for p in $(printf '%s\n' "$root"/versions/3.12.*/bin/python3.12 | sort -V); do
		[ -x "$p" ] && py=$p
	done
	[ -n "$py" ] || py=$(command -v python3.12 2>/dev/null) || true
fi
if [ -z "$py" ] || ! "$py" -c 'import sys, sysconfig, test.support.script_helper
sys.exit(sys.version_info[:2] != (3, 12) or not sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE"))' 2>/dev/null; then
	skip "no CPython 3.12 with perf trampolines and its test package (PY312)"
fi
read -r -a tests <<<"${TESTSUITE_TESTS:-test_int test_string test_sys}"

data=$SCRATCH/ts.data
pids=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup_ts() {
	local p
	for p in "${pids[@]}"; do
		rm -f "/tmp/perf-$p.map"
	done
	cleanup_scratch
}
trap cleanup_ts EXIT
trap 'exit 143' TERM INT

PYTHONPERFSUPPORT=1 timeout 120 "$PERF" record -q -N -F 499 --call-graph dwarf,16384 -o "$data" -- \
	"$py" -X perf -m test "${tests[@]}" >"$SCRATCH/tests.out" 2>"$SCRATCH/rec.log" ||
	die "perf record of the test suite failed: $(tail -3 "$SCRATCH/tests.out" "$SCRATCH/rec.log")"
say "tests: $(grep -E '^(Total tests|Result):' "$SCRATCH/tests.out" | tr '\n' ' ')"

# The processes perf sampled, with their names (perf is the oracle).
"$PERF" script -i "$data" -F pid,comm 2>/dev/null | awk '{ n[$2] = $1 } END { for (p in n) print p, n[p] }' |
	sort -n >"$SCRATCH/procs" || die "perf script failed"
mapfile -t pids < <(cut -d' ' -f1 "$SCRATCH/procs")
while read -r p comm; do
	[ "$comm" = python3.12 ] && [ ! -f "/tmp/perf-$p.map" ] && echo "$p"
done <"$SCRATCH/procs" | sort -n >"$SCRATCH/want-nomap"
say "${#pids[@]} processes sampled, $(wc -l <"$SCRATCH/want-nomap") python3.12 ones without a perf map"
[ -s "$SCRATCH/want-nomap" ] || die "no process without a perf map: did no test start python -I?"

# Categories.
"$PERFSPY" report --json -i "$data" >"$SCRATCH/report.json" 2>"$SCRATCH/report.err" ||
	die "perfspy report failed: $(head -3 "$SCRATCH/report.err")"
read -r code interp < <("$PY" -c 'import json, sys
r = json.load(open(sys.argv[1]))
s = {c["name"]: c["share"] for c in r["categories"]}
print(s.get("Python code", 0), s.get("Python interpreter", 0))' "$SCRATCH/report.json") ||
	die "cannot read the report's JSON"
say "report: Python code $code, Python interpreter $interp (shares)"
if awk -v c="$code" -v i="$interp" 'BEGIN { exit !(c > i && i < 0.25) }'; then
	pass "report: Python code ($code) > Python interpreter ($interp), which is < 0.25"
else
	fail "report: Python code $code, Python interpreter $interp (want code > interpreter, interpreter < 0.25)"
fi

# What is missing: said once, each process named at -v.
"$PERFSPY" convert -v -i "$data" >/dev/null 2>"$SCRATCH/verbose" || die "convert -v failed"
n=$(grep -c 'ran Python without a perf map' "$SCRATCH/verbose")
if [ "$n" = 1 ]; then
	pass "convert: one note: $(grep -o '[0-9]* process[es]* ran Python without a perf map ([0-9.]*% of samples)' "$SCRATCH/verbose")"
else
	fail "convert: the perf map note said $n times"
fi
sed -n 's/.*process \([0-9]*\) (python3.12): ran Python, no perf map.*/\1/p' "$SCRATCH/verbose" |
	sort -n >"$SCRATCH/got-nomap"
if cmp -s "$SCRATCH/want-nomap" "$SCRATCH/got-nomap"; then
	pass "-v: names the $(wc -l <"$SCRATCH/got-nomap") python3.12 processes without a perf map, no other"
else
	fail "-v: named $(tr '\n' ' ' <"$SCRATCH/got-nomap"), want $(tr '\n' ' ' <"$SCRATCH/want-nomap")"
fi
main=$("$PERF" script -i "$data" -F pid 2>/dev/null | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
if [ -n "$main" ] && [ -f "/tmp/perf-$main.map" ] && ! grep -qx "$main" "$SCRATCH/got-nomap"; then
	pass "-v: the -X perf process $main (the most sampled) has its map and is not named"
else
	fail "-v: the most sampled process ${main:-?} is named or has no map"
fi
"$PERFSPY" info "$data" >"$SCRATCH/info.txt" 2>/dev/null || die "info failed"
if sed -n '/^lacks:/,$p' "$SCRATCH/info.txt" | grep -q 'ran Python without a perf map'; then
	pass "info: under lacks: $(grep -o '[0-9]* process[es]* ran Python without a perf map' "$SCRATCH/info.txt")"
else
	fail "info: no perf map cause under lacks: $(sed -n '/^lacks:/,$p' "$SCRATCH/info.txt" | tr '\n' '|')"
fi
rm -f "$data"
finish
