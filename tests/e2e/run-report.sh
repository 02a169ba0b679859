#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: `perfspy report` on a workload whose CPU split is known by
# construction (src/report_split.c, each thread's budget on its own CPU
# clock): CUDA launch 30%, CUDA sync 10%, host allocator 40%, other native 20%;
# threads launcher 40%, allocator 40%, main 20%.  Recorded with
# `perf record -F 999 -g`; every share must be within REPORT_TOL (default 5)
# percentage points of its construction.  Also: the same report from
# perf.data, from folded stacks (file, stdin) and from a perf pipe
# (perf inject -o -), --rules files and their errors, --by, --top,
# --print-rules round trip, determinism.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/e2e/report-lib.sh
. "$(dirname "$0")/report-lib.sh"

need_perf
need_perfspy
need_python
scratch

record_split
data=$REC
say "recording: $data ($(perf_samples "$data") samples)"
tol=${REPORT_TOL:-5}

report() { "$PERFSPY" report -q "$@"; }

# same A B WHAT: pass when files A and B are byte-identical.
same() {
	if cmp -s "$1" "$2"; then
		pass "$3"
	else
		fail "$3: differs ($(diff "$1" "$2" | head -3 | tr '\n' ' '))"
	fi
}

report -i "$data" --json >"$SCRATCH/r.json" 2>"$SCRATCH/r.err" ||
	die "perfspy report --json failed: $(cat "$SCRATCH/r.err")"
report -i "$data" --json --by thread --top 10 >"$SCRATCH/t.json" || die "report --by thread failed"

# shares FILE KEY NAME=WANT...: print "name measured% (constructed want%)"
# and "FAIL ..." for shares further than $tol points from construction.
shares() {
	"$PY" - "$@" <<'PY'
import json, sys
path, key, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = json.load(open(path))
tot = r["samples"]
got = {c["name"]: c["samples"] for c in r[key]}
for arg in sys.argv[4:]:
    name, want = arg.rsplit("=", 1)
    pct = 100.0 * got.get(name, 0) / tot if tot else 0.0
    ok = abs(pct - float(want)) <= tol
    print("%s %s: measured %.1f%%, constructed %s%% (tolerance %g points)"
          % ("ok" if ok else "FAIL", name, pct, want, tol))
PY
}

check_shares() {
	local line
	while IFS= read -r line; do
		case $line in
		ok*) pass "${line#ok }" ;;
		*) fail "${line#FAIL }" ;;
		esac
	done < <(shares "$@")
}

check_shares "$SCRATCH/r.json" categories "$tol" "CUDA launch=30" "CUDA sync=10" \
	"host allocator=40" "other native=20"
check_shares "$SCRATCH/t.json" threads "$tol" "launcher=40" "allocator=40" "report_split=20"

# The total is every sample of the (only) event, perf as the oracle.
n_perf=$(perf_samples "$data")
n_json=$(json_samples <"$SCRATCH/r.json")
if [ "$n_json" = "$n_perf" ]; then
	pass "samples: $n_json, as perf counts"
else
	fail "samples: report says $n_json, perf counts $n_perf"
fi

# Each category names what it found.
leaves() {
	"$PY" -c 'import json,sys
r = json.load(open(sys.argv[1]))
for c in r["categories"]:
    if c["name"] == sys.argv[2]:
        print("\n".join(n["name"] for n in c["native"]))' "$@" >"$SCRATCH/leaves"
}
leaves "$SCRATCH/r.json" "CUDA launch"
if grep -qx 'cudaLaunchKernel (fakecuda.c)' "$SCRATCH/leaves"; then
	pass "CUDA launch: native leaf cudaLaunchKernel (fakecuda.c)"
else
	fail "CUDA launch: no native leaf 'cudaLaunchKernel (fakecuda.c)': $(tr '\n' '|' <"$SCRATCH/leaves")"
fi
leaves "$SCRATCH/r.json" "CUDA sync"
if grep -qx 'cudaStreamSynchronize (fakecuda.c)' "$SCRATCH/leaves"; then
	pass "CUDA sync: native leaf cudaStreamSynchronize (fakecuda.c)"
else
	fail "CUDA sync: no cudaStreamSynchronize leaf: $(tr '\n' '|' <"$SCRATCH/leaves")"
fi
leaves "$SCRATCH/r.json" "host allocator"
if grep -Eq '^(_int_malloc|_int_free|malloc|free|__libc_malloc|__libc_free|cfree) ' "$SCRATCH/leaves"; then
	pass "host allocator: malloc/free leaves ($(head -3 "$SCRATCH/leaves" | tr '\n' ' '))"
else
	fail "host allocator: no malloc/free leaf: $(tr '\n' '|' <"$SCRATCH/leaves")"
fi

# The text table: a row per category, a section per category.
report -i "$data" >"$SCRATCH/r.txt" || die "perfspy report failed"
for c in "CUDA launch" "CUDA sync" "host allocator" "other native"; do
	if grep -Eq "^ +[0-9.]+% +[0-9]+  $c\$" "$SCRATCH/r.txt" && grep -q "^== $c: " "$SCRATCH/r.txt"; then
		pass "text: row and section for $c"
	else
		fail "text: no row/section for $c"
	fi
done
say "--- report (text) ---"
sed -n '1,12p' "$SCRATCH/r.txt"
say "---"

# Same stacks, other inputs: folded file, folded on stdin, perf pipe.
"$PERFSPY" convert -q --threads --keep-interpreter -i "$data" -o "$SCRATCH/folded" || die "convert failed"
report -i "$SCRATCH/folded" --json >"$SCRATCH/f.json" || fail "report on folded stacks failed"
same "$SCRATCH/r.json" "$SCRATCH/f.json" "folded file: same report as perf.data"
report -i - --json <"$SCRATCH/folded" >"$SCRATCH/s.json" || fail "report on folded stdin failed"
same "$SCRATCH/r.json" "$SCRATCH/s.json" "folded stdin (file): same report"
# shellcheck disable=SC2002 # a pipe is the point: stdin that cannot seek
cat "$SCRATCH/folded" | report -i - --json >"$SCRATCH/p.json" || fail "report on folded pipe failed"
same "$SCRATCH/r.json" "$SCRATCH/p.json" "folded stdin (pipe): same report"
if "$PERF" inject -i "$data" -o - 2>/dev/null | report -i - --json >"$SCRATCH/i.json" 2>"$SCRATCH/i.err"; then
	if [ "$(json_samples <"$SCRATCH/i.json")" = "$n_perf" ]; then
		pass "perf pipe (perf inject -o -): $n_perf samples"
	else
		fail "perf pipe: $(json_samples <"$SCRATCH/i.json") samples, want $n_perf"
	fi
else
	fail "report on a perf pipe failed: $(head -c 300 "$SCRATCH/i.err")"
fi

# The printed built-in rules, read back as a rules file, give the same report.
report --print-rules >"$SCRATCH/builtin.rules" || fail "--print-rules failed"
report -i "$data" --json --rules "$SCRATCH/builtin.rules" >"$SCRATCH/b.json" || fail "--rules (built-in) failed"
same "$SCRATCH/r.json" "$SCRATCH/b.json" "--print-rules | --rules: same report"

# A rules file of our own: first match wins.
cat >"$SCRATCH/my.rules" <<'RULES'
# the fake CUDA library as one category, the heap as another
fake cuda: lib libfakecuda.so
fake cuda: func cuda*
heap: func *malloc*
heap: func *free*
RULES
report -i "$data" --json --rules "$SCRATCH/my.rules" >"$SCRATCH/m.json" || fail "--rules FILE failed"
check_shares "$SCRATCH/m.json" categories "$tol" "fake cuda=40" "heap=40"
printf 'ok: func x\nbroken line\n' >"$SCRATCH/bad.rules"
if report -i "$data" --rules "$SCRATCH/bad.rules" >/dev/null 2>"$SCRATCH/bad.err"; then
	fail "a bad rules file was accepted"
elif grep -q "bad.rules:2: expected" "$SCRATCH/bad.err"; then
	pass "bad rules file: error names file and line ($(head -1 "$SCRATCH/bad.err"))"
else
	fail "bad rules file: unhelpful message: $(cat "$SCRATCH/bad.err")"
fi
rc=0
report -i "$data" --by bogus >/dev/null 2>&1 || rc=$?
if [ $rc -eq 2 ]; then pass "--by bogus: usage error (exit 2)"; else fail "--by bogus: exit $rc, want 2"; fi

# --top and --by python.
report -i "$data" --by thread --top 1 >"$SCRATCH/top.txt" || fail "--top 1 failed"
if grep -q '(2 more)' "$SCRATCH/top.txt"; then
	pass "--top 1: the other 2 threads summed as '(2 more)'"
else
	fail "--top 1: no '(2 more)' row"
fi
report -i "$data" --by python >"$SCRATCH/py.txt" || fail "--by python failed"
if grep -q '^== (no Python frame): 100.0%' "$SCRATCH/py.txt"; then
	pass "--by python: a native program is all '(no Python frame)'"
else
	fail "--by python: unexpected rows: $(sed -n 5,8p "$SCRATCH/py.txt")"
fi

# py-spy 0.3.0-0.3.3's thread root `thread 1234` (docs/pyspy-formats.md §1.5):
# report and merge read it alike, as thread 1234 (issue 12: report once
# filed it under "(all threads)" while merge matched it per thread).
printf '%s\n' 'thread 1234;main (a.py:1);malloc (libc.so.6) 10' \
	'thread (99): B;main (a.py:1);malloc (libc.so.6) 5' >"$SCRATCH/old.folded"
printf '%s\n' 'thread (1234): A;main (a.py:7) 3' 'thread (99): B;main (a.py:9) 1' \
	>"$SCRATCH/old-pyspy.txt"
report -i "$SCRATCH/old.folded" --by thread --json >"$SCRATCH/old.json" ||
	fail "report on py-spy 0.3 thread roots failed"
got=$("$PY" -c 'import json, sys
print(";".join("%s=%d" % (t["name"], t["samples"]) for t in json.load(open(sys.argv[1]))["threads"]))' \
	"$SCRATCH/old.json")
if [ "$got" = "thread (1234)=10;B=5" ]; then
	pass "report --by thread: \`thread 1234\` is thread (1234)"
else
	fail "report --by thread on \`thread 1234\`: threads $got, want thread (1234)=10;B=5"
fi
# Per thread, each perf stack takes its own thread's py-spy line.
if "$PERFSPY" merge -q --pyspy "$SCRATCH/old-pyspy.txt" -i "$SCRATCH/old.folded" \
	-o "$SCRATCH/old-merged.txt"; then
	printf '%s\n' 'thread (1234);main (a.py:7);malloc (libc.so.6) 10' \
		'thread (99): B;main (a.py:9);malloc (libc.so.6) 5' >"$SCRATCH/old-want.txt"
	same "$SCRATCH/old-want.txt" "$SCRATCH/old-merged.txt" \
		"merge: \`thread 1234\` is thread 1234, as in the report"
else
	fail "merge on py-spy 0.3 thread roots failed"
fi
# --by process: one process (report_split); --by tid: its three threads,
# one row each, the same shares as the three thread names.
report -i "$data" --by process --json >"$SCRATCH/proc.json" || fail "--by process failed"
check_shares "$SCRATCH/proc.json" processes "$tol" 'process '"$(
	"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["processes"][0]["name"][8:])' \
		"$SCRATCH/proc.json")=100"
if grep -q '"name":"process [0-9]*:\\"report_split\\""' "$SCRATCH/proc.json"; then
	pass "--by process: the row is named process PID:\"report_split\""
else
	fail "--by process: no process report_split row: $(head -c 400 "$SCRATCH/proc.json")"
fi
report -i "$data" --by tid --json >"$SCRATCH/tid.json" || fail "--by tid failed"
n_tids=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tids"]))' "$SCRATCH/tid.json")
if [ "$n_tids" = 3 ]; then pass "--by tid: 3 thread id rows"; else fail "--by tid: $n_tids rows, want 3"; fi

# Same input, same bytes.
report -i "$data" --json >"$SCRATCH/r2.json"
same "$SCRATCH/r.json" "$SCRATCH/r2.json" "deterministic JSON (two runs)"
finish
