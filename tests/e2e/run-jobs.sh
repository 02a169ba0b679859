#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: `convert -j N` (issue 16, docs/design.md §6.4) splits the samples by
# thread over N sessions and must write the same bytes as -j 1: for every
# perf.data of the shared corpus (perf 3.2-6.8, x86, i686, armv7, pipes,
# branch stacks) and for recordings made here (named threads with frame
# pointers and with DWARF stacks, a system-wide recording with hundreds of
# processes, a CPython 3.12 -X perf DWARF profile of three Python threads),
# in raw, pprof and flamegraph, with and without --threads; the messages
# are the same set; -v says the split happened; a stream converts on one
# thread and still matches; sessions keep pace, so -j 2 maps little more of
# the input than -j 1 (peak RSS on a workload whose threads run in turn).
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

# same IN LABEL ARGS...: -j 1 against each of $JS (default "2 5"), in
# each of $FMTS; one check per input.
same() {
	local in=$1 label=$2 j v fmt th rc1 rc2 bad=
	shift 2
	for v in ${FMTS:-raw: raw:--threads pprof: flamegraph:--threads}; do
		fmt=${v%%:*}
		th=${v#*:}
		# shellcheck disable=SC2086 # $th: empty or one word
		"$PERFSPY" convert -j 1 -f "$fmt" $th "$@" -i "$in" -o "$SCRATCH/j1" 2>"$SCRATCH/e1"
		rc1=$?
		for j in ${JS:-2 5}; do
			# shellcheck disable=SC2086
			"$PERFSPY" convert -j "$j" -f "$fmt" $th "$@" -i "$in" -o "$SCRATCH/jn" 2>"$SCRATCH/en"
			rc2=$?
			bad=$bad$(differs "$fmt$th -j $j" "$rc1" "$SCRATCH/j1" "$SCRATCH/e1" \
				"$rc2" "$SCRATCH/jn" "$SCRATCH/en")
		done
	done
	if [ -n "$bad" ]; then
		fail "$label: -j ${JS:-2 5} differ from -j 1:$bad"
	else
		pass "$label: -j ${JS:-2 5} write the bytes of -j 1 (${FMTS:-raw: raw:--threads pprof: flamegraph:--threads})"
	fi
}

corpus=$TOP/../shared/corpus/perf_data_converter
if [ -d "$corpus" ]; then
	n=0
	for f in "$corpus"/perf.data.*; do
		JS=3 FMTS="raw: raw:--threads pprof:" same "$f" "corpus ${f##*/}"
		n=$((n + 1))
	done
	[ "$n" -ge 30 ] || fail "corpus: only $n perf.data files in $corpus"
elif [ "${CI:-}" = true ]; then
	fail "corpus: $corpus missing (the checkout must sit beside shared/)"
else
	say "  note  no corpus at $corpus: recordings only"
fi

record threads fp
fp=$REC
record threads dwarf
dw=$REC
record threads sys
sys=$REC
same "$fp" "threads, frame pointers"
same "$dw" "threads, --call-graph dwarf"
# Other processes on the machine write and remove /tmp/perf-PID.map files
# while the test runs: the system-wide comparison reads none of them.
mkdir -p "$SCRATCH/nomaps"
same "$sys" "system-wide, -a -g" --perf-map-dir "$SCRATCH/nomaps"
same "$fp" "threads, --comm ps-beta --no-kernel" --comm ps-beta --no-kernel
same "$dw" "threads, --nolineno --keep-interpreter" --nolineno --keep-interpreter

# The split happened, over as many sessions as asked.
"$PERFSPY" convert -v -j 3 -i "$sys" -o /dev/null 2>"$SCRATCH/v" ||
	fail "-v -j 3: exit status $?"
if grep -q 'converting on 3 threads' "$SCRATCH/v"; then
	pass "-v -j 3 says it converts on 3 threads"
else
	fail "-v -j 3 does not say it split: $(grep -i thread "$SCRATCH/v" | head -2)"
fi
# A stream (perf record -o -) is read once: one thread, the bytes of the
# same recording as a file. A file-mode perf.data on a pipe is read into
# memory first, so it splits like a file.
# (the workload's own stdout must not join perf's on the pipe)
# shellcheck disable=SC2016 # $1 is the inner sh's
"$PERF" record -q -F 999 -g -o - -- sh -c '"$1" 1 >/dev/null' sh "$E2E_BIN/threads" \
	>"$SCRATCH/stream.data" 2>/dev/null ||
	die "perf record -o - failed"
"$PERFSPY" convert -q -j 1 -i "$SCRATCH/stream.data" -o "$SCRATCH/file.txt" || fail "-j 1: exit $?"
# shellcheck disable=SC2002 # a pipe is the point
cat "$SCRATCH/stream.data" | "$PERFSPY" convert -v -j 4 -i - -o "$SCRATCH/pipe.txt" 2>"$SCRATCH/pv" ||
	fail "stdin -j 4: exit $?"
if grep -q 'converting on' "$SCRATCH/pv"; then
	fail "a stream was split: $(grep 'converting on' "$SCRATCH/pv")"
elif cmp -s "$SCRATCH/file.txt" "$SCRATCH/pipe.txt"; then
	pass "a stream under -j 4 converts on one thread, same bytes as -j 1"
else
	fail "stdin -j 4 differs from the -j 1 conversion of the same stream"
fi
# shellcheck disable=SC2002
cat "$fp" | "$PERFSPY" convert -v -j 2 -i - -o "$SCRATCH/slurp.txt" 2>"$SCRATCH/sv" ||
	fail "file on stdin -j 2: exit $?"
"$PERFSPY" convert -q -j 1 -i "$fp" -o "$SCRATCH/fp1.txt" || fail "-j 1: exit $?"
if grep -q 'converting on 2 threads' "$SCRATCH/sv" && cmp -s "$SCRATCH/fp1.txt" "$SCRATCH/slurp.txt"; then
	pass "a file-mode perf.data on stdin splits (-j 2), same bytes as -j 1"
else
	fail "file-mode perf.data on stdin -j 2: $(grep -c 'converting on' "$SCRATCH/sv") split messages; output $(cmp -s "$SCRATCH/fp1.txt" "$SCRATCH/slurp.txt" && echo same || echo differs)"
fi
# -j takes 1..256.
for bad in 0 -1 257 x; do
	if "$PERFSPY" convert -j "$bad" -i "$fp" -o /dev/null 2>"$SCRATCH/err"; then
		fail "-j $bad accepted"
	elif grep -q 'jobs' "$SCRATCH/err"; then
		pass "-j $bad refused: $(head -1 "$SCRATCH/err")"
	else
		fail "-j $bad: message does not name the option: $(head -1 "$SCRATCH/err")"
	fi
done

# Memory under -j 2 (docs/design.md §6.4): every session reads the one
# mapping, and pages go only behind the slowest session, so a session must
# not run far ahead. Two threads that run one after the other, DWARF stacks
# of 32 KB (a 130 MB file): the second thread's session skips the first
# half of the file. Unpaced it ran ahead by that half: 66 MB of peak RSS
# more than -j 1 (88 against 22 MB); paced (16 MB ahead at most), 20 MB.
build phases
ph=$SCRATCH/phases.data
"$PERF" record -q -F 999 --call-graph dwarf,32768 -o "$ph" -- "$E2E_BIN/phases" 4 \
	>/dev/null 2>"$SCRATCH/phrec.log" ||
	die "perf record of the phases workload failed: $(tail -2 "$SCRATCH/phrec.log")"
# peak_kb J OUT: peak RSS (KB) of a -j J conversion of $ph into OUT.
peak_kb() {
	"$PY" - "$PERFSPY" "$1" "$ph" "$2" <<'PYEOF'
import resource, subprocess, sys
rc = subprocess.run([sys.argv[1], "convert", "-q", "-j", sys.argv[2], "-i", sys.argv[3],
                     "-o", sys.argv[4]]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else "exit%d" % rc)
PYEOF
}
k1=$(peak_kb 1 "$SCRATCH/ph1.txt")
k2=$(peak_kb 2 "$SCRATCH/ph2.txt")
mb=$(( $(stat -c %s "$ph") >> 20 ))
if readelf -d "$PERFSPY" 2>/dev/null | grep -q 'NEEDED.*libtsan'; then
	# ThreadSanitizer's shadow memory grows with each thread's accesses.
	say "  note  phases: peak RSS not compared under ThreadSanitizer (make tsan)"
elif ! [[ $k1 =~ ^[0-9]+$ && $k2 =~ ^[0-9]+$ ]]; then
	fail "phases: -j 1 gave $k1, -j 2 gave $k2"
elif ! cmp -s "$SCRATCH/ph1.txt" "$SCRATCH/ph2.txt"; then
	fail "phases: -j 2 differs from -j 1"
elif [ "$mb" -lt 80 ]; then
	fail "phases: the recording is $mb MB, too small to show a session running ahead"
elif [ $(((k2 - k1) >> 10)) -le 40 ]; then
	pass "phases ($mb MB, DWARF): -j 2 peaks $(((k2 - k1) >> 10)) MB above -j 1 ($((k1 >> 10)) MB), same bytes"
else
	fail "phases ($mb MB, DWARF): -j 2 peaks $(((k2 - k1) >> 10)) MB above -j 1 ($((k1 >> 10)) -> $((k2 >> 10)) MB): a session ran ahead"
fi
rm -f "$ph"

# CPython 3.12 -X perf, three Python threads, DWARF stacks.
py312=$(find_python 3.12)
if [ -n "$py312" ]; then
	pyd=$SCRATCH/py.data
	"$PERF" record -q -F 499 --call-graph dwarf,16384 -o "$pyd" -- \
		"$py312" -X perf "$TOP/bench/pyload.py" 1.5 >/dev/null 2>"$SCRATCH/pyrec.log" ||
		die "perf record of python3.12 failed: $(tail -2 "$SCRATCH/pyrec.log")"
	same "$pyd" "python3.12 -X perf, 3 threads, dwarf"
	"$PERFSPY" convert -q -j 2 -i "$pyd" -o "$SCRATCH/py.txt" || fail "python -j 2: exit $?"
	if grep -q 'descend (pyload.py:[0-9]*)' "$SCRATCH/py.txt"; then
		pass "python -j 2: Python frames named (descend (pyload.py:N))"
	else
		fail "python -j 2: no 'descend (pyload.py:N)' frame"
	fi
else
	skip "no CPython 3.12 with perf trampolines for the Python part (set PY312)"
fi
finish
