#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: speedscope's time order and frame grouping (docs/output.md §7.1, §8).
# The threaded report workload (src/report_split.c, -g with DWARF lines) is
# recorded with perf and converted to speedscope; tests/e2e/timeline_check.py
# then checks the file against speedscope's file-format rules, that every
# profile's sample times increase, and that they are, thread by thread, the
# sample times `perf script -F tid,time --ns` prints for the same file (the
# oracle); native frames carry no line by default and keep it under
# --lineno. The SVG's grouping is checked on the same recording: a native
# function sampled at several lines is one box whose tooltip lists them.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/e2e/report-lib.sh
. "$(dirname "$0")/report-lib.sh"

need_perfspy
need_perf
need_python
scratch
record_split

CHECK=$TOP/tests/e2e/timeline_check.py
"$PERF" script -F tid,time --ns -i "$REC" >"$SCRATCH/perf.txt" 2>"$SCRATCH/perf.err" ||
	die "perf script failed: $(head -c 300 "$SCRATCH/perf.err")"

# timeline_check WHAT FILE MODE: the checker's ok/FAIL lines as checks.
timeline_check() {
	local what=$1 file=$2 mode=$3 line
	"$PY" "$CHECK" "$file" "$SCRATCH/perf.txt" "$mode" >"$SCRATCH/check.out" 2>&1
	while IFS= read -r line; do
		case $line in
		'ok '*) pass "$what: ${line#ok }" ;;
		'FAIL '*) fail "$what: ${line#FAIL }" ;;
		*) say "    $line" ;;
		esac
	done <"$SCRATCH/check.out"
}

if convert "$SCRATCH/split.json" --format speedscope -i "$REC"; then
	timeline_check speedscope "$SCRATCH/split.json" --grouped
fi
if convert "$SCRATCH/split-lineno.json" --format speedscope --lineno -i "$REC"; then
	timeline_check "speedscope --lineno" "$SCRATCH/split-lineno.json" --lineno
fi

# Folded input has no times: one weighted sample per stack, unit none.
if convert "$SCRATCH/split.txt" --threads -i "$REC" &&
	convert "$SCRATCH/folded.json" --format speedscope -i "$SCRATCH/split.txt"; then
	if grep -q '"unit":"none"' "$SCRATCH/folded.json" && ! grep -q nanoseconds "$SCRATCH/folded.json"; then
		pass "speedscope from folded stacks: counts, unit none"
	else
		fail "speedscope from folded stacks: expected unit none"
	fi
fi

# The flame graph's grouping on the same recording: raw has a native
# function at several lines under one parent; the SVG has one box for it.
if convert "$SCRATCH/split.svg" --format flamegraph -i "$REC" &&
	convert "$SCRATCH/split-lineno.svg" --format flamegraph --lineno -i "$REC"; then
	n=$(grep -c '<g class="f ' "$SCRATCH/split.svg")
	nl=$(grep -c '<g class="f ' "$SCRATCH/split-lineno.svg")
	multi=$(grep -A1 '<g class="f ' "$SCRATCH/split.svg" | grep -c '^lines: [^,]*, ' || true)
	if [ "$n" -lt "$nl" ] && [ "$multi" -gt 0 ]; then
		pass "flamegraph: $n boxes grouped by function, $nl with --lineno; $multi list several lines"
	else
		fail "flamegraph: $n boxes grouped, $nl with --lineno, $multi listing several lines"
	fi
	if grep -q '^lines: ' "$SCRATCH/split-lineno.svg"; then
		fail "flamegraph --lineno: a tooltip lists lines"
	else
		pass "flamegraph --lineno: no tooltip lists lines"
	fi
fi
finish
