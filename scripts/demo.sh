#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: record the bundled multi-threaded Python workload
# (scripts/workload/train_sim.py) with perf and convert it with perfspy.
#   1. find CPython 3.12 (pyenv), else 3.13, else any python3 (with a note:
#      `-X perf` needs 3.12+);
#   2. perf record -F 999 --call-graph dwarf,65528 -o $O/demo/perf.data --
#      python -X perf train_sim.py
#   3. perfspy info; perfspy convert -o $O/demo/stacks.txt; the top 15 stacks
#      and the samples per thread;
#   4. perfspy report, a flame graph SVG and a speedscope file;
#   5. the same workload recorded in one command: perfspy record.
# With DWARF stack dumps perfspy unwinds through CPython's perf trampolines,
# so stacks run from each thread's root Python frame down to the native
# leaf (libc, kernel); interpreter frames are dropped as py-spy --native
# does. (With -g, stock CPython builds have no frame pointers and stacks
# stop inside the interpreter.)
# Environment: O (default build), DEMO_SECONDS (default 5), PYTHON (override).
set -euo pipefail
export LC_ALL=C

TOP=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
case $O in /*) ;; *) O=$TOP/$O ;; esac
PERFSPY=$O/perfspy
OUT=$O/demo
PERF=${PERF:-perf}

die() { echo "demo: $*" >&2; exit 1; }

[ -x "$PERFSPY" ] || die "$PERFSPY not built (run: make deps all)"
command -v "$PERF" >/dev/null || die "perf not found (run: make deps)"

# --- 1. a Python with perf trampolines ---------------------------------------
find_python() {
	local root v p
	if [ -n "${PYTHON:-}" ]; then
		echo "$PYTHON"
		return
	fi
	root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
	for v in 3.12 3.13; do
		# shellcheck disable=SC2012 # pyenv's version directories; sort -V orders them
		for p in $(ls -d "$root"/versions/$v.* 2>/dev/null | sort -V -r); do
			[ -x "$p/bin/python$v" ] && { echo "$p/bin/python$v"; return; }
		done
		p=$(command -v "python$v" 2>/dev/null) && { echo "$p"; return; }
	done
	command -v python3 || true
}
py=$(find_python)
[ -n "$py" ] || die "no python3 found"
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
xperf=(-X perf)
case $pyver in
3.1[2-9] | 3.[2-9][0-9]) ;;
*)
	echo "demo: note: $py is Python $pyver; -X perf needs 3.12+, so no py:: frames" >&2
	xperf=()
	;;
esac
echo "demo: Python $pyver: $py"

# --- 2. record ----------------------------------------------------------------
mkdir -p "$OUT"
rm -f "$OUT/perf.data" "$OUT/perf.data.old"
echo "demo: recording ${DEMO_SECONDS:-5} s of scripts/workload/train_sim.py (perf record -F 999 --call-graph dwarf,65528)..."
"$PERF" record -F 999 --call-graph dwarf,65528 -o "$OUT/perf.data" -- \
	"$py" "${xperf[@]}" "$TOP/scripts/workload/train_sim.py" 2>"$OUT/record.log" ||
	{ cat "$OUT/record.log" >&2; die "perf record failed"; }
grep -h 'perf record: Captured' "$OUT/record.log" || true

# --- 3. convert and show ----------------------------------------------------------
echo
echo "== perfspy info $OUT/perf.data"
"$PERFSPY" info "$OUT/perf.data"

"$PERFSPY" convert -q -i "$OUT/perf.data" -o "$OUT/stacks.txt"
"$PERFSPY" convert -q --threads -i "$OUT/perf.data" -o "$OUT/stacks-threads.txt"
total=$(awk '{ s += $NF } END { printf "%d\n", s }' "$OUT/stacks.txt")

echo
echo "== samples per thread (perfspy convert --threads)"
sed -n 's/^\(thread ([0-9]*): [^;]*\);.* \([0-9]*\)$/\2\t\1/p' "$OUT/stacks-threads.txt" |
	awk -F'\t' '{ c[$2] += $1 } END { for (t in c) printf "%8d  %s\n", c[t], t }' | sort -rn

echo
echo "== top 15 of $(wc -l <"$OUT/stacks.txt") stacks ($total samples), leaf end shown"
# (awk, not head: head would end the pipe early and fail it under pipefail)
awk '{ print $NF "\t" $0 }' "$OUT/stacks.txt" | sort -t "$(printf '\t')" -k1,1nr -k2 | awk 'NR <= 15' |
	while IFS=$'\t' read -r n line; do
		stack=${line% *}
		[ ${#stack} -gt 150 ] && stack="...${stack: -147}"
		printf '%7d  %s\n' "$n" "$stack"
	done

echo
# Python frames come out py-spy style, "name (file.py:line)" or "name (file.py)".
npy=$(awk '/\.py(:[0-9]+)?\)/ { s += $NF } END { printf "%d\n", s }' "$OUT/stacks.txt")
echo "demo: $npy of $total samples have a Python frame"
echo "demo: folded stacks (py-spy raw): $OUT/stacks.txt"
echo "demo: with thread roots:          $OUT/stacks-threads.txt"

# --- 4. report and pictures (issue 5) ---------------------------------------------
echo
echo "== perfspy report -i $OUT/perf.data"
"$PERFSPY" report -q -i "$OUT/perf.data" --top 3
"$PERFSPY" convert -q --threads --format flamegraph --title "perfspy demo: train_sim.py" \
	-i "$OUT/perf.data" -o "$OUT/flamegraph.svg"
"$PERFSPY" convert -q --threads --format speedscope --title "perfspy demo: train_sim.py" \
	-i "$OUT/perf.data" -o "$OUT/profile.speedscope.json"
echo
echo "demo: raw folded stacks:      $OUT/stacks-threads.txt"
echo "demo: flame graph (SVG):      $OUT/flamegraph.svg   (open in a browser: click zooms, Ctrl-F searches)"
echo "demo: speedscope profile:     $OUT/profile.speedscope.json   (one profile per thread; speedscope.app or npx speedscope)"

# --- 5. the same in one command: perfspy record (issue 9) ------------------------
# No perf binary, no second step: perfspy samples the launched program
# through perf_event itself (PYTHONPERFSUPPORT=1 added for its perf map).
echo
echo "== perfspy record -r 99 -t -f raw -o $OUT/record.txt -- python train_sim.py"
if "$PERFSPY" record -r 99 -t -f raw -o "$OUT/record.txt" -- \
	"$py" "$TOP/scripts/workload/train_sim.py" 2>"$OUT/record.err"; then
	cat "$OUT/record.err"
	echo "demo: live recording (py-spy raw): $OUT/record.txt"
else
	cat "$OUT/record.err" >&2
	die "perfspy record failed"
fi
