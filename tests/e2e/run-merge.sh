#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 4, perfspy merge): CPython 3.12 -X perf runs src/merge/workload.py
# under `perf record -F 999 --call-graph dwarf,65528`.  The workload carries its
# own py-spy: a sampler thread reading sys._current_frames() every 10 ms that
# writes py-spy raw (co_name and co_qualname) and speedscope captures of the
# same run.  `perfspy merge` must then
#   - conserve the total: merged total == perfspy convert total;
#   - put each C function called through ctypes (libmerge.so, built here)
#     under the Python lines that called it: alpha under run:@RUN_ALPHA ->
#     call_alpha:@CALL_ALPHA, beta under @RUN_BETA -> @CALL_BETA;
#   - keep two functions of one name and file apart: Linear.forward's lin_k
#     under @LIN, Attention.forward's attn_k under @ATTN (>= 97% each);
#   - and a third one perf never saw (Conv.forward, asleep at @CONV; its perf
#     samples removed from a folded input): with its source (--source) py-spy's
#     @CONV joins Conv.forward, not Attention.forward (attn_k >= 97% under
#     @ATTN); without it, the control, Attention's perf samples go partly
#     under @CONV;
#   - match per thread: w-d0 and w-d1 run one skeleton that differs only in
#     the line (@D0 / @D1); each thread's delta samples go to its own line,
#     and with --ignore-threads they do not (the control);
#   - give the same bytes for the raw, qualname and speedscope captures, for
#     perf.data and folded input, and on a second run.
# Prints the matched share.  PY312 overrides the interpreter, MERGE_SECONDS
# the run time (2 s).
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

SRC=$E2E_SRC/merge
WL=$SRC/workload.py
RUN_S=${MERGE_SECONDS:-2}
MIN_EXACT=90    # share of perf samples with Python frames matched exactly
MIN_LINE=95     # share of a C function's samples under its calling line

pyroot=$(pyenv root 2>/dev/null) || pyroot=${PYENV_ROOT:-$HOME/.pyenv}
PY312=${PY312:-$pyroot/versions/3.12.1/bin/python3.12}
[ -x "$PY312" ] || PY312=$(command -v python3.12 || true)
if [ -z "$PY312" ] || ! "$PY312" -c 'import sys, sysconfig
sys.exit(0 if sys.version_info[:2] == (3, 12) and sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE") else 1)' 2>/dev/null; then
	skip "no CPython 3.12 with perf trampolines (tried ${PY312:-python3.12}; pyenv root $pyroot)"
fi
say "python: $PY312"

# line MARKER: the line of the workload's `# @MARKER` comment.
line() {
	local n
	n=$(grep -n "# @$1\$" "$WL" | cut -d: -f1)
	case $n in '' | *[!0-9]*) die "want one '# @$1' in $WL, got: ${n//$'\n'/ }" ;; esac
	printf '%s' "$n"
}
# defline NAME: the line of `def NAME(`.
defline() {
	local n
	n=$(grep -n "^def $1(" "$WL" | cut -d: -f1)
	case $n in '' | *[!0-9]*) die "want one 'def $1(' in $WL" ;; esac
	printf '%s' "$n"
}
RUN_ALPHA=$(line RUN_ALPHA) RUN_BETA=$(line RUN_BETA)
CALL_ALPHA=$(line CALL_ALPHA) CALL_BETA=$(line CALL_BETA)
D0=$(line D0) D1=$(line D1) DEF_CALL_ALPHA=$(defline call_alpha)
LIN=$(line LIN) ATTN=$(line ATTN) CONV_L=$(line CONV) DEF_CONV=$(line DEF_CONV)

(cd "$SRC" && ${CC:-cc} -O2 -g -shared -fPIC -Wall -o "$SCRATCH/libmerge.so" libmerge.c) ||
	die "cannot build libmerge.so"

pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup_merge() {
	[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
	if [ "$nfail" -gt 0 ] && [ -n "${E2E_DATA:-}" ]; then
		mkdir -p "$E2E_DATA/merge" &&
			cp "$SCRATCH"/*.txt "$SCRATCH"/*.json "$SCRATCH"/*.err "$E2E_DATA/merge/" 2>/dev/null
		say "outputs kept in $E2E_DATA/merge"
	fi
	cleanup_scratch
}
trap cleanup_merge EXIT
trap 'exit 143' TERM INT

DATA=$SCRATCH/merge.data
"$PERF" record -N -F 999 --call-graph dwarf,65528 -o "$DATA" -- \
	"$PY312" -X perf "$WL" "$SCRATCH/libmerge.so" "$RUN_S" "$SCRATCH" \
	>"$SCRATCH/wl.out" 2>"$SCRATCH/perf.err" || { cat "$SCRATCH/perf.err"; die "perf record failed"; }
pid=$(awk '$1 == "pid" { print $2 }' "$SCRATCH/wl.out")
[ -n "$pid" ] || die "the workload did not finish: $(cat "$SCRATCH/wl.out" "$SCRATCH/perf.err")"
for f in pyspy.txt pyspy-qual.txt pyspy.json; do
	[ -s "$SCRATCH/$f" ] || die "the workload's sampler wrote no $f"
done
say "captures: $(wc -l <"$SCRATCH/pyspy.txt") raw stacks, $(total "$SCRATCH/pyspy.txt") samples"

# merge OUT ARGS...: perfspy merge ARGS -o OUT; stderr in OUT.err.
merge() {
	local out=$1
	shift
	"$PERFSPY" merge "$@" -o "$out" 2>"$out.err" && return 0
	fail "perfspy merge $* exited $?: $(head -c 400 "$out.err")"
	return 1
}

# share FILE SELECT MATCH: "matched total" samples of FILE's lines that
# contain SELECT (fixed strings), and of those the ones that contain MATCH.
share() {
	awk -v s="$2" -v m="$3" 'index($0, s) { t += $NF; if (index($0, m)) k += $NF }
		END { print k + 0, t + 0 }' "$1"
}
pct() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.1f", d ? 100 * n / d : 0 }'; }

# check_line FILE WHAT SELECT MATCH: MATCH holds >= MIN_LINE% of SELECT's
# samples (and there are at least 50).
check_line() {
	local k t
	read -r k t < <(share "$1" "$3" "$4")
	if [ "$t" -ge 50 ] && [ $((k * 100)) -ge $((MIN_LINE * t)) ]; then
		pass "$2: $k of $t samples ($(pct "$k" "$t")%) under $4"
	else
		fail "$2: $k of $t samples ($(pct "$k" "$t")%) under $4 (want >= $MIN_LINE% of >= 50)"
	fi
}

CONV=$SCRATCH/convert.txt
convert "$CONV" -i "$DATA" --threads || die "perfspy convert failed"
M=$SCRATCH/merged.txt
merge "$M" --pyspy "$SCRATCH/pyspy.txt" -i "$DATA" || die "merge failed"
sed 's/^/  | /' "$M.err"
check_format "$M" "merged output"

# Totals: perf samples are the clock.
a=$(total "$CONV") b=$(total "$M")
if [ "$a" -gt 0 ] && [ "$a" -eq "$b" ]; then
	pass "total conserved: merged $b == convert $a"
else
	fail "total: merged $b, convert $a"
fi

# The matched share, as printed.
read -r ex sx ux < <(sed -n 's/^perfspy: merge: \([0-9.]*\)% matched exactly, \([0-9.]*\)% by suffix, \([0-9.]*\)% unmatched.*/\1 \2 \3/p' "$M.err")
if [ -z "${ex:-}" ]; then
	fail "no 'merge: N% matched exactly, N% by suffix, N% unmatched' line on stderr"
else
	say "merge: ${ex}% matched exactly, ${sx}% by suffix, ${ux}% unmatched"
	if awk -v e="$ex" -v m="$MIN_EXACT" 'BEGIN { exit !(e >= m) }'; then
		pass "matched exactly: $ex% >= $MIN_EXACT%"
	else
		fail "matched exactly: $ex% < $MIN_EXACT%"
	fi
fi

# Native frames under the calling Python line.
check_line "$M" "alpha" ";alpha (libmerge.c:" \
	"run (workload.py:$RUN_ALPHA);call_alpha (workload.py:$CALL_ALPHA);"
check_line "$M" "beta" ";beta (libmerge.c:" \
	"run (workload.py:$RUN_BETA);call_beta (workload.py:$CALL_BETA);"
# perfspy convert alone has first lines there: the lines came from py-spy.
read -r k t < <(share "$CONV" ";alpha (libmerge.c:" "call_alpha (workload.py:$CALL_ALPHA);")
if [ "$t" -gt 0 ] && [ "$k" -eq 0 ] && grep -q "call_alpha (workload.py:$DEF_CALL_ALPHA);" "$CONV"; then
	pass "convert alone: call_alpha at its first line $DEF_CALL_ALPHA, not $CALL_ALPHA"
else
	fail "convert alone: $k of $t alpha samples already at call_alpha:$CALL_ALPHA?"
fi

# Two functions named forward in one file: each C leaf under its own
# forward's line (a join on the name alone split them by weight).
MIN_LINE=97 check_line "$M" "lin_k (Linear.forward)" ";lin_k (libmerge.c:" \
	";forward (workload.py:$LIN);"
MIN_LINE=97 check_line "$M" "attn_k (Attention.forward)" ";attn_k (libmerge.c:" \
	";forward (workload.py:$ATTN);"

# A definition perf never saw: Conv.forward's samples (a few: it sleeps)
# removed from the perf side. With the source py-spy's @CONV line joins
# Conv.forward, which no perf stack has; without it (the control) it joins
# the perf definition above it, Attention.forward.
NOCONV=$SCRATCH/noconv.txt
grep -v "forward (workload.py:$DEF_CONV)" "$CONV" >"$NOCONV"
say "perf samples in Conv.forward: $(($(total "$CONV") - $(total "$NOCONV")))"
if merge "$SCRATCH/src.txt" --pyspy "$SCRATCH/pyspy.txt" -i "$NOCONV" --source "$SRC"; then
	MIN_LINE=97 check_line "$SCRATCH/src.txt" "attn_k, Conv.forward unseen, --source" \
		";attn_k (libmerge.c:" ";forward (workload.py:$ATTN);"
fi
if merge "$SCRATCH/nosrc.txt" --pyspy "$SCRATCH/pyspy.txt" -i "$NOCONV" &&
	read -r k t < <(share "$SCRATCH/nosrc.txt" ";attn_k (libmerge.c:" ";forward (workload.py:$CONV_L);") &&
	[ "$t" -gt 0 ] && [ $((k * 100)) -ge $((10 * t)) ]; then
	pass "control: without the source $(pct "$k" "$t")% of attn_k goes under Conv's line $CONV_L"
else
	fail "control: without the source ${k:-?} of ${t:-?} attn_k samples under line $CONV_L (want >= 10%)"
fi

# Per thread: one skeleton, a line per thread.
check_line "$M" "w-d0 delta" "): w-d0;" "dispatch (workload.py:$D0);"
check_line "$M" "w-d1 delta" "): w-d1;" "dispatch (workload.py:$D1);"
if grep -q "matched per thread" "$M.err"; then
	pass "the summary says it matched per thread"
else
	fail "the summary does not say 'matched per thread'"
fi
merge "$SCRATCH/ignore.txt" --ignore-threads --pyspy "$SCRATCH/pyspy.txt" -i "$DATA" &&
	read -r k t < <(share "$SCRATCH/ignore.txt" "): w-d0;" "dispatch (workload.py:$D1);")
if [ "${t:-0}" -gt 0 ] && [ $((k * 100)) -ge $((20 * t)) ]; then
	pass "control: --ignore-threads puts $(pct "$k" "$t")% of w-d0's samples under w-d1's line"
else
	fail "control: --ignore-threads puts $k of ${t:-0} w-d0 samples under line $D1 (want >= 20%)"
fi

# Other captures of the same samples, other inputs, a second run: same bytes.
same() {
	if [ -f "$2" ] && cmp -s "$M" "$2"; then
		pass "$1: same output"
	else
		fail "$1: output differs: $(diff "$M" "$2" 2>&1 | head -4 | cut -c1-300)"
	fi
}
merge "$SCRATCH/qual.txt" --pyspy "$SCRATCH/pyspy-qual.txt" -i "$DATA" &&
	same "qualname capture (py-spy 0.4.3 names)" "$SCRATCH/qual.txt"
merge "$SCRATCH/ss.txt" --pyspy "$SCRATCH/pyspy.json" -i "$DATA" &&
	same "speedscope capture" "$SCRATCH/ss.txt"
merge "$SCRATCH/folded.txt" --pyspy "$SCRATCH/pyspy.txt" -i "$CONV" --source "$SRC" &&
	same "folded input (perfspy convert --threads, --source)" "$SCRATCH/folded.txt"
merge "$SCRATCH/again.txt" --pyspy "$SCRATCH/pyspy.txt" -i "$DATA" &&
	same "second run" "$SCRATCH/again.txt"

# Other writers (issue 5) get the merged stacks.
if merge "$SCRATCH/merged.json" --format speedscope --pyspy "$SCRATCH/pyspy.txt" -i "$CONV" &&
	n=$("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(int(sum(sum(p["weights"]) for p in d["profiles"])))' "$SCRATCH/merged.json" 2>/dev/null) &&
	[ "$n" = "$a" ]; then
	pass "--format speedscope: weights add up to $a"
else
	fail "--format speedscope: weights ${n:-?}, want $a"
fi
if merge "$SCRATCH/merged.svg" --format flamegraph --pyspy "$SCRATCH/pyspy.txt" -i "$CONV" &&
	grep -q '<svg' "$SCRATCH/merged.svg" &&
	grep -q "call_alpha (workload.py:$CALL_ALPHA)" "$SCRATCH/merged.svg"; then
	pass "--format flamegraph: an SVG with the merged lines"
else
	fail "--format flamegraph: no SVG with call_alpha (workload.py:$CALL_ALPHA)"
fi
rm -f "$DATA"
finish
