#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 10): --idle, off-CPU time, on src/py/idle.py: two threads named
# idle-w repeat a 300 ms cycle of 40 % on the CPU (burn_cpu of libwork.so:
# until the thread's CPU clock advanced 120 ms), 40 % asleep (time.sleep) and
# 20 % waiting on a threading.Lock the main thread holds (a timed futex
# wait). Over the idle-w threads' stacks (thread roots), `perfspy report`
# must give `waiting: sleep` 40 %, `waiting: futex` 20 % and the rest (on
# the CPU) 40 %, each within 5 points, for
#   record     perfspy record --idle (context-switches samples + switch
#              records, live)
#   top        perfspy top --idle --pid, not on a terminal: rows for the
#              three phases (`idle_sleep (...) -> clock_nanosleep`), ms/s
#   convert    perfspy convert --idle of `perf record -e sched:sched_switch
#              -e cpu-clock --call-graph dwarf` (the README's recipe; prev_state
#              from libtraceevent), and of the same with --switch-events
# and the outputs say their unit: speedscope "unit":"milliseconds", the SVG
# title "(milliseconds, on and off CPU)"; without --idle neither.
# PY312 overrides the interpreter; IDLE_SECONDS the workload time (4 s).
. "$(dirname "$0")/lib.sh"

need_perfspy
scratch

PYSRC=$E2E_SRC/py
WL=$PYSRC/idle.py
RUN_S=${IDLE_SECONDS:-4}
TOL=5

need_live_py312
(cd "$PYSRC" && ${CC:-cc} -O2 -g -fomit-frame-pointer -shared -fPIC \
	-o "$SCRATCH/libwork.so" libwork.c) || die "cannot build libwork.so"

# shares NAME FOLDED: the idle-w threads' category shares against the
# construction (sleep 40, futex 20, on CPU 40), each within TOL points.
shares() {
	local name=$1 in=$2 w=$SCRATCH/$1.w
	grep '^thread ([0-9]*): idle-w;' "$in" >"$w"
	if [ ! -s "$w" ]; then
		fail "$name: no idle-w stacks: $(head -c 300 "$in")"
		return
	fi
	"$PERFSPY" report --json -i "$w" >"$w.json" 2>"$w.err" ||
		{ fail "$name: report failed: $(cat "$w.err")"; return; }
	ncheck=$((ncheck + 1))
	python3 - "$name" "$w.json" "$TOL" <<'EOF' || nfail=$((nfail + 1))
import json, sys
name, path, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
r = json.load(open(path))
total = r["samples"]
cat = {c["name"]: c["samples"] for c in r["categories"]}
sleep = 100.0 * cat.get("waiting: sleep", 0) / total
futex = 100.0 * cat.get("waiting: futex", 0) / total
other = sum(v for k, v in cat.items() if k.startswith("waiting: ") and k not in
            ("waiting: sleep", "waiting: futex"))
cpu = 100.0 - sleep - futex - 100.0 * other / total
got = "sleep %.1f %%, futex %.1f %%, on CPU %.1f %% of %d ms" % (sleep, futex, cpu, total)
ok = abs(sleep - 40) <= tol and abs(futex - 20) <= tol and abs(cpu - 40) <= tol
print(("  ok    " if ok else "  FAIL  ") + name + ": " + got + " (built: 40/20/40, +-%g)" % tol)
sys.exit(0 if ok else 1)
EOF
}

# record --idle, live.
"$PERFSPY" record --idle -t -f raw -o "$SCRATCH/rec.txt" -- \
	"$PY12" "$WL" "$SCRATCH/libwork.so" "$RUN_S" 2>"$SCRATCH/rec.err" ||
	die "record --idle failed: $(cat "$SCRATCH/rec.err")"
grep -q 'ms on and off CPU' "$SCRATCH/rec.err" &&
	pass "record --idle: the summary counts milliseconds" ||
	fail "record --idle: summary does not say milliseconds: $(tail -2 "$SCRATCH/rec.err")"
shares "record --idle" "$SCRATCH/rec.txt"
grep -q 'idle_sleep (idle.py:[0-9]*);.*do_nanosleep' "$SCRATCH/rec.txt" &&
	pass "record --idle: idle_sleep's off-CPU stack reaches do_nanosleep" ||
	fail "record --idle: no idle_sleep stack through do_nanosleep"

# The unit in the SVG's title and in speedscope's profiles.
"$PERFSPY" record -q --idle -f speedscope -o "$SCRATCH/rec.json" -- \
	"$PY12" "$WL" "$SCRATCH/libwork.so" 1 || die "record --idle -f speedscope failed"
"$PERFSPY" record -q --idle -f flamegraph -o "$SCRATCH/rec.svg" -- \
	"$PY12" "$WL" "$SCRATCH/libwork.so" 1 || die "record --idle -f flamegraph failed"
grep -q '"unit":"milliseconds"' "$SCRATCH/rec.json" && ! grep -q '"unit":"none"' "$SCRATCH/rec.json" &&
	pass "speedscope: unit milliseconds" || fail "speedscope: unit is not milliseconds"
grep -q '<text id="title"[^>]*>.*(milliseconds, on and off CPU)</text>' "$SCRATCH/rec.svg" &&
	grep -q ' ms, [0-9.]*%)</title>' "$SCRATCH/rec.svg" &&
	pass "SVG: title and tooltips say milliseconds" || fail "SVG: no milliseconds in title/tooltips"

# top --idle, not on a terminal: the three phases as rows, milliseconds.
"$PY12" -X perf "$WL" "$SCRATCH/libwork.so" 30 >/dev/null 2>&1 &
wpid=$!
sleep 1
"$PERFSPY" top --idle -p "$wpid" -d 4 -n 6 >"$SCRATCH/top.out" 2>"$SCRATCH/top.err"
rc=$?
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
ok=1
for row in 'idle_sleep (idle.py:[0-9]*) -> clock_nanosleep' 'idle_lock (idle.py:[0-9]*) -> ' \
	'idle_burn (idle.py:[0-9]*) -> ' 'ms/s on+off CPU' 'categories: .*waiting: sleep'; do
	grep -q "$row" "$SCRATCH/top.out" || { ok=; say "  (top --idle: no '$row')"; }
done
[ "$rc" = 0 ] && [ -n "$ok" ] && pass "top --idle: sleep, lock and burn rows, ms/s, waiting categories" ||
	fail "top --idle (rc $rc): $(tail -12 "$SCRATCH/top.out") $(cat "$SCRATCH/top.err")"

# convert --idle of perf's recordings.
if command -v "${PERF:-perf}" >/dev/null && "${PERF:-perf}" record -q -e sched:sched_switch \
	-o "$SCRATCH/probe.data" -- true 2>/dev/null; then
	for sw in "" --switch-events; do
		data=$SCRATCH/perf${sw}.data
		"${PERF:-perf}" record -q -e sched:sched_switch -e cpu-clock $sw -m 1024 \
			--call-graph dwarf -o "$data" -- "$PY12" -X perf "$WL" "$SCRATCH/libwork.so" \
			"$RUN_S" >/dev/null 2>"$SCRATCH/perf.err" || die "perf record failed: $(cat "$SCRATCH/perf.err")"
		"$PERFSPY" convert -q --idle --threads -i "$data" -o "$SCRATCH/conv${sw}.txt" ||
			die "convert --idle failed"
		shares "convert --idle${sw:+ ($sw)}" "$SCRATCH/conv${sw}.txt"
	done
	# Without --idle the same file's cpu-clock is on-CPU samples only.
	"$PERFSPY" convert -q --threads --event cpu-clock -f speedscope -i "$SCRATCH/perf.data" \
		-o "$SCRATCH/plain.json"
	"$PERFSPY" convert -q --event cpu-clock -i "$SCRATCH/perf.data" -o "$SCRATCH/plain.txt"
	n=$("$PERFSPY" info --json "$SCRATCH/perf.data" | python3 -c 'import json, sys
print(sum(e["samples"] for e in json.load(sys.stdin)["events"] if e["name"] == "cpu-clock"))')
	t=$(awk '{ s += $NF } END { print s + 0 }' "$SCRATCH/plain.txt")
	grep -q '"unit":"nanoseconds"' "$SCRATCH/plain.json" && [ "$t" = "$n" ] &&
		pass "convert without --idle: unit nanoseconds (the time order, docs/output.md §8), weights are the $n cpu-clock samples" ||
		fail "convert without --idle: total $t, cpu-clock samples $n, or a unit"
else
	[ "${CI:-}" = true ] && fail "perf cannot record sched:sched_switch here" ||
		say "  (perf cannot record sched:sched_switch here: convert --idle not checked)"
fi
finish
