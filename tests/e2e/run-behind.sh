#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: stacks built behind (issue 16, docs/design.md §6.25). On a
# frame-pointer recording the converting session reads, orders and
# probes the callchain cache, and a builder session on a second thread,
# fed the records and the cache's answers, builds and folds the stacks.
# The output must be the bytes of a conversion without it
# (PERFSPY_BUILD_BEHIND=0) and the messages the same: every perf.data of
# the shared corpus, forced on whatever its size (raw, --threads, pprof),
# a program with deep frame-pointer stacks (bench/workload.c: the builder
# runs unasked there), a program with shallow ones (the namer's case, not
# the builder's), with filters, and CPython 3.12 -X perf.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

FORCE_VAR=PERFSPY_BUILD_BEHIND
# Forced off, the namer may run instead; forced on, it does not.
FORCE_OFF_SAYS='naming frames ahead'
FORCE_ON_SAYS='building stacks on a second thread'
FORCE_DID='built behind'

# forced_stats IN WAY ARGS...: the feed's counts for IN with
# PERFSPY_BUILD_BEHIND set to WAY ("built hits other"), or "none" when there
# was no builder.
forced_stats() {
	local in=$1 way=$2
	shift 2
	PERFSPY_BUILD_BEHIND=$way "$PERFSPY" convert -v -v "$@" -i "$in" -o /dev/null 2>&1 |
		sed -n 's/.*: \([0-9]*\) samples built behind, \([0-9]*\) added to stacks built before, \([0-9]*\) other records$/\1 \2 \3/p' |
		grep . || echo none
}

forced_corpus "the builder"

# Deep stacks: bench/workload.c's four threads run each unit of work below
# 8-55 frames.
wl=$E2E_BIN/workload
mkdir -p "$E2E_BIN" || die "mkdir $E2E_BIN"
if [ ! -x "$wl" ] || [ "$TOP/bench/workload.c" -nt "$wl" ]; then
	${CC:-cc} -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread \
		-D_GNU_SOURCE -Wall -o "$wl" "$TOP/bench/workload.c" ||
		die "cannot build bench/workload.c"
fi
deep=$SCRATCH/deep.data
"$PERF" record -q -F 4999 -g -o "$deep" -- "$wl" 2 >/dev/null 2>"$SCRATCH/deeprec.log" ||
	die "perf record of the workload failed: $(tail -2 "$SCRATCH/deeprec.log")"
forced_same "$deep" "deep stacks, frame pointers"
FMTS="raw:" forced_same "$deep" "deep stacks, --comm bw-tree --no-kernel" --comm bw-tree --no-kernel
FMTS="raw:" forced_same "$deep" "deep stacks, weighed by period" --weight period
ns=$("$PERFSPY" info --json -i "$deep" | json_samples)
read -r built hits other <<<"$(forced_stats "$deep" 1)"
if [ "$built" = none ]; then
	fail "deep stacks: the builder did not run"
elif [ $((built + hits)) -eq "$ns" ] && [ "$hits" -gt 0 ] && [ "$built" -gt 0 ]; then
	pass "deep stacks ($ns samples): $built built behind, $hits added to stacks built before, $other other records"
else
	fail "deep stacks ($ns samples): $built built behind, $hits added: not every sample"
fi
# Unasked, such a file gets the builder, not the namer (more than one
# CPU to run on, 2 MiB of data or more); PERFSPY_BUILD_BEHIND=0 keeps
# it off, and on one CPU of its own (taskset) it never starts.
if [ "$(nproc)" -gt 1 ]; then
	dsz=$("$PY" -c 'import struct, sys
print(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(56), 48)[0])' "$deep")
	a=$(forced_stats "$deep" "")
	z=$(forced_stats "$deep" 0)
	nm=$(PERFSPY_BUILD_BEHIND='' "$PERFSPY" convert -v -v -i "$deep" -o /dev/null 2>&1 |
		grep -c 'named ahead')
	t=$(PERFSPY_BUILD_BEHIND='' taskset -c 0 "$PERFSPY" convert -v -v -i "$deep" \
		-o /dev/null 2>&1 | grep -c 'built behind')
	if [ "$dsz" -lt $((2 << 20)) ]; then
		fail "deep stacks: $dsz bytes of data, under 2 MiB: the default cannot be checked"
	elif [ "$a" != none ] && [ "$z" = none ] && [ "$nm" = 0 ] && [ "$t" = 0 ]; then
		pass "deep stacks ($dsz bytes of data): built behind unasked, not with PERFSPY_BUILD_BEHIND=0 nor under taskset -c 0; no namer"
	else
		fail "deep stacks ($dsz bytes of data): unasked '$a' ($nm namer lines), with PERFSPY_BUILD_BEHIND=0 '$z', under taskset '$t'"
	fi
else
	fail "deep stacks: $(nproc) CPU online: the default cannot be checked"
fi

# Shallow stacks: the threads workload's chains are a few frames deep.
# Building a stack is cheap there; the namer runs unasked, the builder
# only when asked.
build threads
th=$SCRATCH/threads.data
"$PERF" record -q -N -F 4999 -g -o "$th" -- "$E2E_BIN/threads" 3 >/dev/null 2>"$SCRATCH/threc.log" ||
	die "perf record of the threads workload failed: $(tail -2 "$SCRATCH/threc.log")"
forced_same "$th" "threads, frame pointers"
FMTS="raw:" forced_same "$th" "threads, --comm ps-beta --no-kernel" --comm ps-beta --no-kernel
a=$(forced_stats "$th" "")
f=$(forced_stats "$th" 1)
if [ "$a" = none ] && [ "$f" != none ]; then
	pass "threads: shallow stacks, no builder unasked; asked, $f"
else
	fail "threads: unasked '$a', asked '$f'"
fi

# CPython 3.12 -X perf recorded with -g: perf-map (JIT) frames beside the
# interpreter's named ones, built by the builder from its own model.
py312=$(find_python 3.12)
if [ -n "$py312" ]; then
	pyd=$SCRATCH/py.data
	"$PERF" record -q -F 999 -g -o "$pyd" -- \
		"$py312" -X perf "$TOP/bench/pyload.py" 1.5 >/dev/null 2>"$SCRATCH/pyrec.log" ||
		die "perf record of python3.12 failed: $(tail -2 "$SCRATCH/pyrec.log")"
	forced_same "$pyd" "python3.12 -X perf, frame pointers"
else
	skip "no CPython 3.12 with perf trampolines for the Python part (set PY312)"
fi
finish
