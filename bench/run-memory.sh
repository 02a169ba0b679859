#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Issue 16's memory goal: peak RSS flat in input size (a 10 GB generated
# perf.data within 10% of a 1 GB one) and never above the peer's, `perf
# report --stdio --no-children -g folded`, on the same file.
#
# A 3 s `perf record -F 999 -g -o -` of bench/workload.c (four threads,
# deep frame-pointer stacks, some kernel time) is repeated by
# tests/e2e/src/repeat_pipe.py into MEM_SMALL_GB (default 1) and
# MEM_LARGE_GB (default 10) GB pipe-layout files; perfspy converts each
# from the file (mmap) and from a pipe (cat |). perf report reads only the
# small one (on the large one it would take many minutes: MEM_PERF_LARGE=1
# times it too). The big files are deleted on exit; they need
# MEM_SMALL_GB + MEM_LARGE_GB of free space on $O's disk.
# Peak RSS is /usr/bin/time's %M; CPU time is user + system.
# Usage: O=build bench/run-memory.sh   (or `make bench-memory`)
BENCH_NAME=bench-memory
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
dir=$O/bench-mem
small_gb=${MEM_SMALL_GB:-1}
large_gb=${MEM_LARGE_GB:-10}

need_tools
[ -x "$TIME" ] || die "$TIME is needed for peak RSS"
mkdir -p "$dir" || exit 1
rec=$dir/rec.pipe
g1=$dir/small.pipe
g2=$dir/large.pipe
trap 'rm -f "$g1" "$g2"' EXIT

wl=$dir/workload
if [ ! -x "$wl" ] || [ "$TOP/bench/workload.c" -nt "$wl" ]; then
	${CC:-cc} -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
		-pthread -D_GNU_SOURCE -Wall -o "$wl" "$TOP/bench/workload.c" ||
		die "cannot build bench/workload.c"
fi
if [ ! -s "$rec" ] || [ "$wl" -nt "$rec" ]; then
	"$PERF" record -q -F 999 -g -o - -- "$wl" 3 >"$rec.tmp" 2>"$dir/record.log" ||
		{ cat "$dir/record.log"; die "perf record failed"; }
	mv "$rec.tmp" "$rec"
fi
# %.0f: mawk's %d stops at 2^31 - 1.
bytes() { awk -v g="$1" 'BEGIN {printf "%.0f", g * 1e9}'; }
python3 "$TOP/tests/e2e/src/repeat_pipe.py" "$rec" "$g1" "$(bytes "$small_gb")" >/dev/null ||
	die "cannot write $g1"
python3 "$TOP/tests/e2e/src/repeat_pipe.py" "$rec" "$g2" "$(bytes "$large_gb")" >/dev/null ||
	die "cannot write $g2"

# run LABEL CMD...: prints the label, CPU s, wall s, peak RSS; sets $rss (KB).
# A command that fails stops the benchmark.
run() {
	local label=$1 tf out
	shift
	tf=$(mktemp)
	"$TIME" -o "$tf" -f '%U %S %e %M' "$@" >/dev/null 2>"$dir/run.err" ||
		{ cat "$dir/run.err" "$tf"; rm -f "$tf"; die "$label: failed"; }
	out=$(tail -n 1 "$tf")
	rm -f "$tf"
	read -r u s e rss <<<"$out"
	printf '%-44s %7.2f s CPU %7.2f s wall %8.1f MB peak RSS\n' "$label" \
		"$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')" "$e" \
		"$(awk -v k="$rss" 'BEGIN {print k / 1024}')"
}
printf 'recording: %s (%s bytes), repeated into %s (%s bytes) and %s (%s bytes)\n' \
	"$rec" "$(stat -c %s "$rec")" "$g1" "$(stat -c %s "$g1")" "$g2" "$(stat -c %s "$g2")"
run "perfspy convert, recording" "$PERFSPY" convert -q -i "$rec" -o /dev/null
run "perfspy convert, ${small_gb} GB file" "$PERFSPY" convert -q -i "$g1" -o /dev/null
f1=$rss
run "perfspy convert, ${large_gb} GB file" "$PERFSPY" convert -q -i "$g2" -o /dev/null
f2=$rss
# shellcheck disable=SC2016 # $1 and $2 belong to the inner sh
run "perfspy convert, ${small_gb} GB pipe" sh -c 'cat "$1" | "$2" convert -q -i - -o /dev/null' sh "$g1" "$PERFSPY"
p1=$rss
# shellcheck disable=SC2016 # as above
run "perfspy convert, ${large_gb} GB pipe" sh -c 'cat "$1" | "$2" convert -q -i - -o /dev/null' sh "$g2" "$PERFSPY"
p2=$rss
run "perf report -g folded, ${small_gb} GB file" "$PERF" report -i "$g1" --stdio --no-children -g folded
r1=$rss
r2=
if [ "${MEM_PERF_LARGE:-0}" = 1 ]; then
	run "perf report -g folded, ${large_gb} GB file" "$PERF" report -i "$g2" --stdio --no-children -g folded
	r2=$rss
fi

verdict() { if [ "$1" = 1 ]; then echo MET; else echo "NOT MET"; fi; }
flat() { awk -v a="$1" -v b="$2" 'BEGIN {print (b <= a * 1.10) ? 1 : 0}'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%+.1f%%", (b - a) * 100 / a}'; }
echo
printf 'flat in input size (%s GB within 10%% of %s GB): file %s, pipe %s: %s\n' \
	"$large_gb" "$small_gb" "$(pct "$f1" "$f2")" "$(pct "$p1" "$p2")" \
	"$(verdict "$(( $(flat "$f1" "$f2") & $(flat "$p1" "$p2") ))")"
ok=$(awk -v a="$f1" -v b="$p1" -v r="$r1" 'BEGIN {print (a <= r && b <= r) ? 1 : 0}')
printf 'never above perf report (%s GB): perfspy %.1f MB file, %.1f MB pipe; perf report %.1f MB: %s\n' \
	"$small_gb" "$(awk -v k="$f1" 'BEGIN {print k / 1024}')" \
	"$(awk -v k="$p1" 'BEGIN {print k / 1024}')" "$(awk -v k="$r1" 'BEGIN {print k / 1024}')" \
	"$(verdict "$ok")"
if [ -n "$r2" ]; then
	ok=$(awk -v a="$f2" -v b="$p2" -v r="$r2" 'BEGIN {print (a <= r && b <= r) ? 1 : 0}')
	printf 'never above perf report (%s GB): perf report %.1f MB: %s\n' "$large_gb" \
		"$(awk -v k="$r2" 'BEGIN {print k / 1024}')" "$(verdict "$ok")"
fi
