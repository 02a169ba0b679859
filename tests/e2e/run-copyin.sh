#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: the data section read into memory ahead (issue 16, docs/design.md
# §6.32). A thread pread()s the data section into anonymous memory on
# huge pages ahead of the converting thread, which reads the records
# there instead of in the file mapping. The output must be the bytes of a
# conversion without it (PERFSPY_COPY_IN=0), and the messages the same:
# every perf.data of the shared corpus, forced on whatever its size (raw,
# --threads, pprof), and CPython 3.12 -X perf recorded with --call-graph
# dwarf, with filters and at -j 2 and 3 (every session reads the copy). Unasked, the DWARF recording is read in whole;
# with PERFSPY_COPY_IN=0, or on one CPU (taskset -c 0), it is not.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

FORCE_VAR=PERFSPY_COPY_IN
FORCE_OFF_SAYS=''
FORCE_ON_SAYS='reading the data into memory on a second thread'
FORCE_DID='read in ahead'

# forced_stats IN WAY ARGS...: "bytes waits" read in with PERFSPY_COPY_IN
# set to WAY, or "none" when nothing was.
forced_stats() {
	local in=$1 way=$2
	shift 2
	PERFSPY_COPY_IN=$way "$PERFSPY" convert -v -v "$@" -i "$in" -o /dev/null 2>&1 |
		sed -n 's/.*: \([0-9]*\) bytes read in ahead, \([0-9]*\) waits for them$/\1 \2/p' |
		grep . || echo none
}

forced_corpus "the data read in ahead"

py312=$(find_python 3.12)
[ -n "$py312" ] || skip "no CPython 3.12 with perf trampolines (set PY312)"
pyd=$SCRATCH/py.data
"$PERF" record -q -F 999 --call-graph dwarf,16384 -o "$pyd" -- \
	"$py312" -X perf "$TOP/bench/pyload.py" 2 >/dev/null 2>"$SCRATCH/pyrec.log" ||
	die "perf record of python3.12 failed: $(tail -2 "$SCRATCH/pyrec.log")"
forced_same "$pyd" "python3.12 -X perf, --call-graph dwarf"
FMTS="raw:" forced_same "$pyd" "python3.12 -X perf, dwarf, --tid, --no-kernel" \
	--tid "$("$PERFSPY" info --json -i "$pyd" | "$PY" -c 'import json, sys
t = json.load(sys.stdin)["thread_list"]
print(max(t, key=lambda x: x["samples"])["tid"])')" --no-kernel

# -j N: every session reads the copy; the main one releases it behind
# the slowest.
FMTS="raw: raw:--threads" forced_same "$pyd" "python3.12 -X perf, dwarf, -j 2" -j 2
FMTS="raw:" forced_same "$pyd" "python3.12 -X perf, dwarf, -j 3" -j 3

# Unasked: more than one CPU, 8 MB of data or more, user stack dumps.
dsz=$(data_size "$pyd")
read -r bytes waits <<<"$(forced_stats "$pyd" "")"
read -r bytes2 _ <<<"$(forced_stats "$pyd" "" -j 2)"
# Released huge pages are used again ahead (design §6.32), not zeroed anew.
reused=$("$PERFSPY" convert -v -v -i "$pyd" -o /dev/null 2>&1 |
	sed -n 's/.*: \([0-9]*\) huge pages of the copy used again$/\1/p')
z=$(forced_stats "$pyd" 0)
t=$(taskset -c 0 "$PERFSPY" convert -v -v -i "$pyd" -o /dev/null 2>&1 | grep -c 'read in ahead')
if [ "$(nproc)" -lt 2 ]; then
	fail "$(nproc) CPU online: the default cannot be checked"
elif [ "$dsz" -lt $((8 << 20)) ]; then
	fail "python3.12 dwarf: $dsz bytes of data, under 8 MB: the default cannot be checked"
elif [ "$bytes" = "$dsz" ] && [ "$bytes2" = "$dsz" ] && [ "$z" = none ] && [ "$t" = 0 ] &&
	[ "${reused:-0}" -ge $((dsz / (2 << 20) / 2)) ]; then
	pass "python3.12 dwarf ($dsz bytes of data): read in whole unasked ($waits waits, $reused huge pages used again), and at -j 2; not with PERFSPY_COPY_IN=0 nor under taskset -c 0"
else
	fail "python3.12 dwarf ($dsz bytes of data): unasked '$bytes' bytes (-j 2: '$bytes2', huge pages used again '${reused:-}'), with PERFSPY_COPY_IN=0 '$z', under taskset '$t'"
fi

# Frame pointers: the builder or the namer reads the mapping; nothing is
# read in unasked, and forced on the output is the same.
build threads
th=$SCRATCH/threads.data
"$PERF" record -q -N -F 999 -g -o "$th" -- "$E2E_BIN/threads" 1 >/dev/null 2>"$SCRATCH/threc.log" ||
	die "perf record of the threads workload failed: $(tail -2 "$SCRATCH/threc.log")"
FMTS="raw:" forced_same "$th" "threads, frame pointers"
a=$(forced_stats "$th" "")
if [ "$a" = none ]; then
	pass "threads, frame pointers: nothing read in unasked"
else
	fail "threads, frame pointers: read in unasked ($a)"
fi
finish
