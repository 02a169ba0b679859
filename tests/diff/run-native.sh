#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Differential test: perfspy's function names against `perf script` as the
# oracle, on the e2e recordings (chain, cxx, fork, threads; fp callchains)
# and one system-wide recording.  Both sides are reduced to folded stacks of
# function names with a tid root by tests/diff/fold.py (see its header for
# the normalization, notably the inline expansion perf 6.1 lacks for fp
# callchains).  Agreement = sum over stacks of min(perf, ours) / perf
# samples; fails below DIFF_THRESHOLD percent (default 99.5).
. "$(dirname "$0")/../e2e/lib.sh"

need_perf
need_perfspy
need_python
command -v addr2line >/dev/null && command -v c++filt >/dev/null ||
	die "binutils (addr2line, c++filt) missing"
scratch
threshold=${DIFF_THRESHOLD:-99.5}
FOLD=$TOP/tests/diff/fold.py

: >"$SCRATCH/all.perf"
: >"$SCRATCH/all.ours"
for w in chain:fp cxx:fp fork:fp threads:fp threads:sys; do
	IFS=: read -r name mode <<<"$w"
	if [ "$mode" = sys ]; then
		record "$name" sys 1
	else
		record "$name" "$mode"
	fi
	data=$REC
	label=$name-$mode
	"$PERF" script -i "$data" -F comm,tid,ip,sym,dso 2>"$SCRATCH/$label.script.err" |
		"$PY" "$FOLD" perf --inline --tid >"$SCRATCH/$label.perf" ||
		die "perf script | fold.py perf failed for $data"
	if ! "$PERFSPY" convert -q --threads -i "$data" -o "$SCRATCH/$label.raw" 2>"$SCRATCH/$label.err"; then
		fail "$label: perfspy convert --threads failed: $(head -c 300 "$SCRATCH/$label.err")"
		continue
	fi
	"$PY" "$FOLD" ours --tid <"$SCRATCH/$label.raw" >"$SCRATCH/$label.ours" || die "fold.py ours failed"
	"$PY" "$FOLD" compare "$SCRATCH/$label.perf" "$SCRATCH/$label.ours" --label "  $label" --worst 3 |
		sed '$d'
	sed "s/^/$label;/" "$SCRATCH/$label.perf" >>"$SCRATCH/all.perf"
	sed "s/^/$label;/" "$SCRATCH/$label.ours" >>"$SCRATCH/all.ours"
done

"$PY" "$FOLD" compare "$SCRATCH/all.perf" "$SCRATCH/all.ours" --label "diff native" --worst 12 >"$SCRATCH/result"
sed '$d' "$SCRATCH/result"
rate=$(tail -n 1 "$SCRATCH/result")
if awk -v r="$rate" -v t="$threshold" 'BEGIN { exit !(r >= t) }'; then
	pass "agreement $rate% >= $threshold%"
else
	fail "agreement $rate% < $threshold%"
fi
if [ -n "${DIFF_KEEP:-}" ]; then
	mkdir -p "$DIFF_KEEP" && cp "$SCRATCH"/*.perf "$SCRATCH"/*.ours "$SCRATCH"/*.raw "$DIFF_KEEP"/
	say "folded files kept in $DIFF_KEEP"
fi
finish
