#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Differential test: perfspy's function names against `perf script` as the
# oracle, on the e2e recordings (chain, cxx, fork, threads with fp
# callchains; chain, cxx, threads with DWARF callchains, which perf unwinds
# with libunwind) and one system-wide recording (perf record -a -g while
# src/threads.c, started before perf, runs: its maps come from perf's /proc
# synthesis).  Both sides are reduced to folded stacks of function names
# with a tid root by tests/diff/fold.py (see its header for the
# normalization).  perf script runs with --no-inline: fold.py expands
# inlined functions itself with addr2line for both kinds of callchain,
# because perf 6.1 expands them only for DWARF ones, and there it names the
# outermost function after its DWARF name (`__libc_start_main_impl
# (inlined)`) instead of its symbol.
# Agreement = sum over stacks of min(perf, ours) / perf samples, over our
# workloads' threads and the idle task (tid 0); it fails below
# DIFF_THRESHOLD percent (default 99.5).  The system-wide rate over every
# process is printed for information only: other programs on the machine
# (deleted or rebuilt binaries, code without frame pointers walked into
# garbage, where perf looks a return address up at ip and perfspy at ip-1)
# make perf a poor oracle there.
. "$(dirname "$0")/../e2e/lib.sh"

need_perf
need_perfspy
need_python
command -v addr2line >/dev/null && command -v c++filt >/dev/null ||
	die "binutils (addr2line, c++filt) missing"
scratch
threshold=${DIFF_THRESHOLD:-99.5}
FOLD=$TOP/tests/diff/fold.py

# fold LABEL DATA [--keep-tids FILE]: $SCRATCH/LABEL.perf and LABEL.ours.
fold() {
	local label=$1 data=$2
	shift 2
	"$PERF" script --no-inline -i "$data" -F comm,tid,ip,sym,dso 2>"$SCRATCH/$label.script.err" |
		"$PY" "$FOLD" perf --inline --tid "$@" >"$SCRATCH/$label.perf" ||
		die "perf script | fold.py perf failed for $data"
	if ! "$PERFSPY" convert -q --threads -i "$data" -o "$SCRATCH/$label.raw" 2>"$SCRATCH/$label.err"; then
		fail "$label: perfspy convert --threads failed: $(head -c 300 "$SCRATCH/$label.err")"
		return 1
	fi
	"$PY" "$FOLD" ours --tid "$@" <"$SCRATCH/$label.raw" >"$SCRATCH/$label.ours" ||
		die "fold.py ours failed"
}

# compare LABEL WORST [TITLE]: print the agreement of LABEL; the rate in $RATE.
compare() {
	"$PY" "$FOLD" compare "$SCRATCH/$1.perf" "$SCRATCH/$1.ours" --label "${3:-$1}" --worst "$2" \
		>"$SCRATCH/$1.cmp" || die "fold.py compare failed"
	sed '$d' "$SCRATCH/$1.cmp"
	RATE=$(tail -n 1 "$SCRATCH/$1.cmp")
}

: >"$SCRATCH/all.perf"
: >"$SCRATCH/all.ours"
for w in chain:fp cxx:fp fork:fp threads:fp chain:dwarf cxx:dwarf threads:dwarf threads:sys; do
	IFS=: read -r name mode <<<"$w"
	label=$name-$mode
	if [ "$mode" = sys ]; then
		record "$name" sys 3
		fold "$label-everything" "$REC" || continue
		compare "$label-everything" 3
		# Our workload's threads (it prints their tids) and the idle task.
		{ echo 0; awk '{ print $2 }' "${REC%.data}.out"; } >"$SCRATCH/$label.tids"
		fold "$label" "$REC" --keep-tids "$SCRATCH/$label.tids" || continue
	else
		record "$name" "$mode"
		fold "$label" "$REC" || continue
	fi
	compare "$label" 3
	sed "s/^/$label;/" "$SCRATCH/$label.perf" >>"$SCRATCH/all.perf"
	sed "s/^/$label;/" "$SCRATCH/$label.ours" >>"$SCRATCH/all.ours"
done

say ""
compare all 12 "diff native"
if awk -v r="$RATE" -v t="$threshold" 'BEGIN { exit !(r >= t) }'; then
	pass "agreement $RATE% >= $threshold%"
else
	fail "agreement $RATE% < $threshold%"
fi
if [ -n "${DIFF_KEEP:-}" ]; then
	mkdir -p "$DIFF_KEEP" && cp "$SCRATCH"/*.perf "$SCRATCH"/*.ours "$SCRATCH"/*.raw "$DIFF_KEEP"/
	say "folded files kept in $DIFF_KEEP"
fi
finish
