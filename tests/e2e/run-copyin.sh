#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: the data section read into memory ahead (issue 16, docs/design.md
# §6.32). A thread pread()s the data section into anonymous memory on
# huge pages ahead of the converting thread, which reads the records
# there instead of in the file mapping. The output must be the bytes of a
# conversion without it (PERFSPY_COPY_IN=0), and the messages the same:
# every perf.data of the shared corpus, forced on whatever its size (raw,
# --threads, pprof), and CPython 3.12 -X perf recorded with --call-graph
# dwarf, with filters and at -j 2 and 3 (every session reads the copy),
# and a frame-pointer recording of deep stacks, whose callchain digests
# the thread works out (§6.33). Unasked, both recordings are read in
# whole; with PERFSPY_COPY_IN=0, or on one CPU (taskset -c 0), they are
# not.
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

# Frame pointers, deep stacks (bench/workload.c's four threads, 8-55
# frames): the builder's pass reads the file in too, and the thread works
# out each sample's callchain digest as the mapping's warmer did (design
# §6.33), which the converting session takes. Forced on and off the same
# output; unasked, read in whole (10 s wrote about 50 MB here; 32 MB are
# asked for) with nine digests in ten or more taken; not with
# PERFSPY_COPY_IN=0 nor under taskset -c 0.
build_bench_workload
wl=$E2E_BIN/workload
deep=$SCRATCH/deep.data
"$PERF" record -q -F 4999 -g -o "$deep" -- "$wl" 10 >/dev/null 2>"$SCRATCH/deeprec.log" ||
	die "perf record of the workload failed: $(tail -2 "$SCRATCH/deeprec.log")"
forced_same "$deep" "deep stacks, frame pointers"
FMTS="raw:" forced_same "$deep" "deep stacks, --comm bw-tree --no-kernel" --comm bw-tree --no-kernel
dsz=$(data_size "$deep")
read -r bytes waits <<<"$(forced_stats "$deep" "")"
read -r digs taken <<<"$("$PERFSPY" convert -v -v -i "$deep" -o /dev/null 2>&1 |
	sed -n 's/.*: \([0-9]*\) sample digests worked out ahead, \([0-9]*\) taken$/\1 \2/p' |
	grep . || echo none)"
z=$(forced_stats "$deep" 0)
t=$(taskset -c 0 "$PERFSPY" convert -v -v -i "$deep" -o /dev/null 2>&1 | grep -c 'read in ahead')
if [ "$dsz" -lt $((32 << 20)) ]; then
	fail "deep stacks: $dsz bytes of data, under 32 MB: the default cannot be checked"
elif [ "$bytes" = "$dsz" ] && [ "$digs" != none ] && [ "$digs" -gt 0 ] &&
	[ $((taken * 10)) -ge $((digs * 9)) ] && [ "$z" = none ] && [ "$t" = 0 ]; then
	pass "deep stacks, frame pointers ($dsz bytes of data): read in whole unasked ($waits waits), $digs digests worked out ahead, $taken taken; not with PERFSPY_COPY_IN=0 nor under taskset -c 0"
else
	fail "deep stacks, frame pointers ($dsz bytes of data): unasked '$bytes' bytes, digests '$digs' taken '${taken:-}', with PERFSPY_COPY_IN=0 '$z', under taskset '$t'"
fi

# The same program for 3 s (about 15 MB): under 32 MB, which a DWARF file
# would be read in at (8 MB), nothing read in unasked (design §6.33: most
# of such a copy would be fresh memory).
deep3=$SCRATCH/deep3.data
"$PERF" record -q -F 4999 -g -o "$deep3" -- "$wl" 3 >/dev/null 2>"$SCRATCH/deeprec.log" ||
	die "perf record of the workload failed: $(tail -2 "$SCRATCH/deeprec.log")"
d3=$(data_size "$deep3")
a=$(forced_stats "$deep3" "")
if [ "$d3" -ge $((32 << 20)) ]; then
	fail "deep stacks, 3 s: $d3 bytes of data, 32 MB or more: the default cannot be checked"
elif [ "$a" = none ]; then
	pass "deep stacks, frame pointers, 3 s ($d3 bytes of data): nothing read in unasked"
else
	fail "deep stacks, frame pointers, 3 s ($d3 bytes of data): read in unasked ($a)"
fi

# Shallow frame-pointer stacks, under 32 MB: nothing read in unasked (the
# reading session names ahead of the builder there), and forced on the
# output is the same.
build threads
th=$SCRATCH/threads.data
"$PERF" record -q -N -F 999 -g -o "$th" -- "$E2E_BIN/threads" 1 >/dev/null 2>"$SCRATCH/threc.log" ||
	die "perf record of the threads workload failed: $(tail -2 "$SCRATCH/threc.log")"
FMTS="raw:" forced_same "$th" "threads, frame pointers"
tsz=$(data_size "$th")
a=$(forced_stats "$th" "")
if [ "$tsz" -ge $((32 << 20)) ]; then
	fail "threads: $tsz bytes of data, 32 MB or more: nothing to check"
elif [ "$a" = none ]; then
	pass "threads, frame pointers ($tsz bytes of data): nothing read in unasked"
else
	fail "threads, frame pointers ($tsz bytes of data): read in unasked ($a)"
fi
finish
