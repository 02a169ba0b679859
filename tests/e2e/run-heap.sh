#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: the batch commands' heap (docs/design.md §6.5, §6.7).  While
# `perfspy convert` waits on a FIFO for more input, /proc/PID shows what
# tools/heapwarm.c set up: a [heap] range of at least 32 MB marked for
# transparent huge pages ("hg" in smaps' VmFlags) where the kernel has them
# on, and a second thread (the heap warmer) where two CPUs are online.
# PERFSPY_THP=0 and PERFSPY_HEAPWARM=0 turn each off, and under a sanitizer
# neither is set up.  The output is the same bytes either way.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
scratch

record chain fp
data=$REC
size=$(stat -c %s "$data") || die "stat $data"

sanitized=0
grep -qaE "__(asan|tsan|msan)_init" "$PERFSPY" && sanitized=1
thp_on=0
thp=/sys/kernel/mm/transparent_hugepage
if [ -r "$thp/enabled" ] && [ -r "$thp/hpage_pmd_size" ] &&
	grep -q '\[' "$thp/enabled" && ! grep -q '\[never\]' "$thp/enabled"; then
	thp_on=1
fi
cpus=$(getconf _NPROCESSORS_ONLN)

# hg_heap_mb PID: MB of the largest [heap] range marked "hg", 0 if none.
hg_heap_mb() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / { heap = ($NF == "[heap]"); next }
	     heap && /^Size:/ { size = $2 }
	     heap && /^VmFlags:/ { for (i = 2; i <= NF; i++) if ($i == "hg" && size > best) best = size }
	     END { print int(best / 1024) }' "/proc/$1/smaps"
}

# paused ENV...: start `perfspy convert` on a FIFO with ENV, write the whole
# recording into it and keep it open; once perfspy has read what it wants
# of it (a file-layout recording is read up to its data section's end) and
# waits, note the heap's huge range and the thread count, then let it
# finish.  Sets HG_MB, THREADS; the output is $SCRATCH/out.txt.
paused() {
	local fifo=$SCRATCH/in pid i rchar=0 last=-1 same=0
	rm -f "$fifo" "$SCRATCH/out.txt"
	mkfifo "$fifo" || die "mkfifo"
	env "$@" "$PERFSPY" convert -q -j 1 -i "$fifo" -o "$SCRATCH/out.txt" &
	pid=$!
	exec 3>"$fifo"
	cat "$data" >&3
	# Waiting: it has read something and reads nothing more for 0.3 s.
	for ((i = 0; i < 200 && same < 6; i++)); do
		sleep 0.05
		rchar=$(awk '/^rchar:/ { print $2 }' "/proc/$pid/io" 2>/dev/null)
		if [ "${rchar:-0}" -gt 4096 ] && [ "$rchar" = "$last" ]; then
			same=$((same + 1))
		else
			same=0
		fi
		last=${rchar:-0}
	done
	HG_MB=$(hg_heap_mb "$pid")
	THREADS=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status")
	exec 3>&-
	wait "$pid" || die "perfspy convert $* failed"
	[ "$same" -ge 6 ] || die "perfspy never waited for input (read $rchar of $size bytes)"
}

"$PERFSPY" convert -q -j 1 -i "$data" -o "$SCRATCH/plain.txt" ||
	die "perfspy convert failed"

paused X=1
cp "$SCRATCH/out.txt" "$SCRATCH/default.txt"
if [ "$sanitized" = 1 ] || [ "$thp_on" = 0 ]; then
	[ "$HG_MB" = 0 ] && pass "no huge-page heap (sanitizer $sanitized, THP $thp_on)" ||
		fail "a ${HG_MB} MB heap range marked hg (sanitizer $sanitized, THP $thp_on)"
else
	[ "$HG_MB" -ge 32 ] && pass "heap: ${HG_MB} MB marked for huge pages" ||
		fail "heap: ${HG_MB} MB marked for huge pages, want >= 32"
fi
want=1
[ "$sanitized" = 0 ] && [ "$cpus" -ge 2 ] && want=2
[ "$THREADS" = "$want" ] && pass "threads while waiting: $THREADS ($cpus CPUs)" ||
	fail "threads while waiting: $THREADS, want $want ($cpus CPUs, sanitizer $sanitized)"

paused PERFSPY_THP=0
[ "$HG_MB" = 0 ] && pass "PERFSPY_THP=0: no huge-page heap" ||
	fail "PERFSPY_THP=0: a ${HG_MB} MB heap range marked hg"
[ "$THREADS" = "$want" ] && pass "PERFSPY_THP=0: threads $THREADS" ||
	fail "PERFSPY_THP=0: threads $THREADS, want $want"

paused PERFSPY_HEAPWARM=0
[ "$THREADS" = 1 ] && pass "PERFSPY_HEAPWARM=0: one thread" ||
	fail "PERFSPY_HEAPWARM=0: threads $THREADS, want 1"
if [ "$sanitized" = 0 ] && [ "$thp_on" = 1 ]; then
	[ "$HG_MB" -ge 32 ] && pass "PERFSPY_HEAPWARM=0: huge pages still on (${HG_MB} MB)" ||
		fail "PERFSPY_HEAPWARM=0: ${HG_MB} MB marked for huge pages, want >= 32"
fi

for f in default out; do
	if cmp -s "$SCRATCH/plain.txt" "$SCRATCH/$f.txt"; then
		pass "output from the FIFO ($f) equals the file's"
	else
		fail "output from the FIFO ($f) differs from the file's"
	fi
done
[ -s "$SCRATCH/plain.txt" ] || fail "empty output"
finish
