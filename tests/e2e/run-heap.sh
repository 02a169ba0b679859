#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: the batch commands' heap (docs/design.md §6.5, §6.7).  While
# `perfspy convert` waits on a FIFO for more input, /proc/PID shows what
# tools/heapwarm.c set up: a second thread (the heap warmer) where two CPUs
# are online, and, where the kernel has transparent huge pages on, a [heap]
# range of at least 32 MB marked for them ("hg" in smaps' VmFlags) once the
# heap has grown PERFSPY_THP_AFTER MB (default 48: this small conversion
# never gets there, and gets none; 0: at once), or at start without the
# warmer (PERFSPY_HEAPWARM=0), or at once for a recording whose samples
# hit 16 or more DSOs.  PERFSPY_THP=0 turns huge pages off, and
# under a sanitizer neither is set up.  The output is the same bytes
# either way.
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

want=1
[ "$sanitized" = 0 ] && [ "$cpus" -ge 2 ] && want=2
# hg_want WHAT: the huge-page range is there (>= 32 MB) if @2 says so and
# huge pages can be had, else absent.
hg_want() {
	if [ "$2" = 1 ] && [ "$sanitized" = 0 ] && [ "$thp_on" = 1 ]; then
		[ "$HG_MB" -ge 32 ] && pass "$1: ${HG_MB} MB of heap marked for huge pages" ||
			fail "$1: ${HG_MB} MB of heap marked for huge pages, want >= 32"
	else
		[ "$HG_MB" = 0 ] && pass "$1: no huge-page heap (sanitizer $sanitized, THP $thp_on)" ||
			fail "$1: a ${HG_MB} MB heap range marked hg (sanitizer $sanitized, THP $thp_on)"
	fi
}

paused X=1
cp "$SCRATCH/out.txt" "$SCRATCH/default.txt"
# With the warmer, a heap that never grew 48 MB stays on small pages; a
# single CPU (no warmer) reserves at start.
hg_want "default" "$([ "$want" = 1 ] && echo 1 || echo 0)"
[ "$THREADS" = "$want" ] && pass "threads while waiting: $THREADS ($cpus CPUs)" ||
	fail "threads while waiting: $THREADS, want $want ($cpus CPUs, sanitizer $sanitized)"

paused PERFSPY_THP_AFTER=0
hg_want "PERFSPY_THP_AFTER=0" 1
[ "$THREADS" = "$want" ] && pass "PERFSPY_THP_AFTER=0: threads $THREADS" ||
	fail "PERFSPY_THP_AFTER=0: threads $THREADS, want $want"

paused PERFSPY_THP=0 PERFSPY_THP_AFTER=0
[ "$HG_MB" = 0 ] && pass "PERFSPY_THP=0: no huge-page heap" ||
	fail "PERFSPY_THP=0: a ${HG_MB} MB heap range marked hg"
[ "$THREADS" = "$want" ] && pass "PERFSPY_THP=0: threads $THREADS" ||
	fail "PERFSPY_THP=0: threads $THREADS, want $want"

paused PERFSPY_HEAPWARM=0
[ "$THREADS" = 1 ] && pass "PERFSPY_HEAPWARM=0: one thread" ||
	fail "PERFSPY_HEAPWARM=0: threads $THREADS, want 1"
hg_want "PERFSPY_HEAPWARM=0 (reserved at start)" 1

# A recording whose samples hit 16 or more DSOs gets the huge-page heap
# at once (tools/cli.c heap_hint(), docs/design.md §6.15): a program that
# runs code in $nlib libraries of its own, each dlopen()ed and spun in for
# 20 ms. Its conversion's heap never grows 48 MB, so a reservation (a
# MADV_HUGEPAGE of 32 MB or more, seen with strace) comes from the hint;
# with 4 libraries it comes only where a single CPU reserves at start.
# `perfspy info` counts the DSOs hit as perf buildid-list lists them.
manylibs() {
	local nlib=$1 i dir=$SCRATCH/libs$1 src
	mkdir -p "$dir" || die "mkdir $dir"
	for ((i = 0; i < nlib; i++)); do
		printf 'volatile unsigned long hit%d;\nvoid spin(long ns)\n{\n\tstruct { long s, n; } t;\n\textern int clock_gettime(int, void *);\n\tlong end;\n\tclock_gettime(1, &t);\n\tend = t.s * 1000000000L + t.n + ns;\n\tdo {\n\t\tfor (int k = 0; k < 1000; k++)\n\t\t\thit%d += k;\n\t\tclock_gettime(1, &t);\n\t} while (t.s * 1000000000L + t.n < end);\n}\n' "$i" "$i" >"$dir/hit$i.c"
		${CC:-cc} -O1 -g -fno-omit-frame-pointer -shared -fPIC -o "$dir/libhit$i.so" "$dir/hit$i.c" ||
			die "cannot build libhit$i.so"
	done
	src=$dir/main.c
	cat >"$src" <<-'EOF'
	#include <dlfcn.h>
	#include <stdio.h>
	int main(int argc, char **argv)
	{
		for (int i = 2; i < argc; i++) {
			void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
			void (*spin)(long) = h ? (void (*)(long))dlsym(h, "spin") : NULL;

			if (!spin) {
				fprintf(stderr, "%s: %s\n", argv[i], dlerror());
				return 1;
			}
			spin(20000000L);
		}
		return argc > 1 ? 0 : 1;
	}
	EOF
	${CC:-cc} -O1 -g -fno-omit-frame-pointer -o "$dir/main" "$src" -ldl || die "cannot build main.c"
	"$PERF" record -q -F 999 -g -o "$dir/rec.data" -- "$dir/main" x "$dir"/libhit*.so \
		>/dev/null 2>"$dir/perf.log" || { cat "$dir/perf.log"; die "perf record manylibs failed"; }
	MANY=$dir/rec.data
}

# reserved FILE: 1 if converting FILE made a heap reservation, else 0.
reserved() {
	local t=$SCRATCH/strace.txt
	# LeakSanitizer cannot run under a tracer.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=madvise -o "$t" "$PERFSPY" convert -q -i "$1" -o "$SCRATCH/many.txt" ||
		die "perfspy convert $1 under strace failed"
	awk -F', ' '/MADV_HUGEPAGE/ && $2 + 0 >= 33554432 { found = 1 } END { print found + 0 }' "$t"
}

if command -v strace >/dev/null; then
	for nlib in 20 4; do
		manylibs $nlib
		hit=$("$PERFSPY" info --json "$MANY" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["dsos_hit"])')
		oracle=$("$PERF" buildid-list -i "$MANY" 2>/dev/null |
			awk '$2 ~ /^\// && $2 !~ /^\/lib\/modules\//' | wc -l)
		[ "$hit" = "$oracle" ] && pass "$nlib libraries: $hit DSOs hit, as perf buildid-list lists" ||
			fail "$nlib libraries: perfspy counts $hit DSOs hit, perf buildid-list $oracle"
		want=0
		if [ "$sanitized" = 0 ] && [ "$thp_on" = 1 ] && { [ "$hit" -ge 16 ] || [ "$cpus" = 1 ]; }; then
			want=1
		fi
		[ $nlib = 20 ] && [ "$hit" -lt 16 ] && fail "20 libraries: only $hit DSOs hit"
		got=$(reserved "$MANY")
		[ "$got" = "$want" ] && pass "$nlib libraries ($hit DSOs hit): heap reservation $got" ||
			fail "$nlib libraries ($hit DSOs hit): heap reservation $got, want $want"
	done
	# A file with 2 MB of samples or more gets it at once too, whatever
	# the DSOs (tools/cli.c heap_hint(), docs/design.md §6.27): the chain
	# program's DWARF recording (about 12 MB, 3 DSOs hit), not its
	# frame-pointer one (about 150 KB).
	small=$data
	record chain dwarf
	big=$REC
	bsize=$(stat -c %s "$big") || die "stat $big"
	[ "$bsize" -ge $((4 << 20)) ] || fail "the DWARF recording is only $bsize bytes"
	want=0
	[ "$sanitized" = 0 ] && [ "$thp_on" = 1 ] && want=1
	got=$(reserved "$big")
	[ "$got" = "$want" ] && pass "$bsize-byte file: heap reservation $got" ||
		fail "$bsize-byte file: heap reservation $got, want $want"
	want=0
	[ "$sanitized" = 0 ] && [ "$thp_on" = 1 ] && [ "$cpus" = 1 ] && want=1
	got=$(reserved "$small")
	[ "$got" = "$want" ] && pass "$size-byte file: heap reservation $got" ||
		fail "$size-byte file: heap reservation $got, want $want"
else
	fail "strace is not installed (make deps installs it)"
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
