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
# thread and still matches.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
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
			if [ "$rc1" != "$rc2" ]; then
				bad="$bad $fmt$th -j $j: exit $rc1 vs $rc2;"
			elif [ "$rc1" = 0 ] && ! cmp -s "$SCRATCH/j1" "$SCRATCH/jn"; then
				bad="$bad $fmt$th -j $j: output differs;"
			elif ! cmp -s <(sort "$SCRATCH/e1") <(sort "$SCRATCH/en"); then
				bad="$bad $fmt$th -j $j: messages differ ($(diff <(sort "$SCRATCH/e1") <(sort "$SCRATCH/en") | sed -n 2p));"
			fi
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
