#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: stacks built behind (issue 16, docs/design.md §6.25, §6.26). On a
# frame-pointer recording the converting session reads, orders and
# probes the callchain cache, and a builder session on a second thread,
# fed the records and the cache's answers, builds and folds the stacks;
# where chains are shallow the reading session also names each new
# address ahead of the builder. The output must be the bytes of a
# conversion without it (PERFSPY_BUILD_BEHIND=0) and the messages the
# same: every perf.data of the shared corpus, forced on whatever its size
# (raw, --threads, pprof), with names read ahead and without, a program
# with deep frame-pointer stacks (bench/workload.c: the builder names its
# own frames, unasked), a program with shallow ones (the reading session
# names them, unasked), with filters, and CPython 3.12 -X perf.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

FORCE_VAR=PERFSPY_BUILD_BEHIND
# Forced off, the namer may run instead; forced on, it does not. The
# builder's pass reads 32 MB or more into memory first (design §6.33),
# which one pass does only for DWARF files: said as one more line.
FORCE_OFF_SAYS='naming frames ahead'
FORCE_ON_SAYS='building stacks on a second thread\|reading the data into memory on a second thread'
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

# names_stats IN ARGS...: the names read ahead for the builder
# ("put taken here waits"), PERFSPY_BUILD_BEHIND=1, or "none".
names_stats() {
	local in=$1
	shift
	PERFSPY_BUILD_BEHIND=1 "$PERFSPY" convert -v -v "$@" -i "$in" -o /dev/null 2>&1 |
		sed -n 's/.*: \([0-9]*\) addresses named ahead, \([0-9]*\) taken, \([0-9]*\) named here, \([0-9]*\) waits$/\1 \2 \3 \4/p' |
		grep . || echo none
}

# The corpus's chains are shallow: the reading session names ahead.
forced_corpus "the builder"
# Every name read ahead is taken, and the builder names none itself.
if [ -d "$TOP/../shared/corpus/perf_data_converter" ]; then
	nf=0 nput=0 odd=
	for f in "$TOP"/../shared/corpus/perf_data_converter/perf.data.*; do
		read -r put taken here waits <<<"$(names_stats "$f")"
		[ "$put" = none ] && continue
		[ "$taken" = "$put" ] && [ "$here" = 0 ] || odd="$odd ${f##*/}($put $taken $here)"
		[ "$put" -gt 0 ] && nf=$((nf + 1)) && nput=$((nput + put))
	done
	if [ -z "$odd" ] && [ "$nf" -ge 15 ]; then
		pass "corpus: $nput addresses of $nf files named ahead by the reading session, all taken by the builder"
	else
		fail "corpus: names ahead in $nf files; put, taken, named by the builder:$odd"
	fi
fi
# And the builder naming every frame itself.
PERFSPY_NAME_AHEAD=0 forced_corpus "the builder naming its own frames"

# Deep stacks: bench/workload.c's four threads run each unit of work below
# 8-55 frames.
build_bench_workload
wl=$E2E_BIN/workload
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
	dsz=$(data_size "$deep")
	a=$(forced_stats "$deep" "")
	z=$(forced_stats "$deep" 0)
	nm=$(PERFSPY_BUILD_BEHIND='' "$PERFSPY" convert -v -v -i "$deep" -o /dev/null 2>&1 |
		grep -c 'named ahead\|naming frames')
	t=$(PERFSPY_BUILD_BEHIND='' taskset -c 0 "$PERFSPY" convert -v -v -i "$deep" \
		-o /dev/null 2>&1 | grep -c 'built behind')
	if [ "$dsz" -lt $((2 << 20)) ]; then
		fail "deep stacks: $dsz bytes of data, under 2 MiB: the default cannot be checked"
	elif [ "$a" != none ] && [ "$z" = none ] && [ "$nm" = 0 ] && [ "$t" = 0 ]; then
		pass "deep stacks ($dsz bytes of data): built behind unasked, not with PERFSPY_BUILD_BEHIND=0 nor under taskset -c 0; nothing named ahead"
	else
		fail "deep stacks ($dsz bytes of data): unasked '$a' ($nm lines of names ahead), with PERFSPY_BUILD_BEHIND=0 '$z', under taskset '$t'"
	fi
else
	fail "deep stacks: $(nproc) CPU online: the default cannot be checked"
fi

# Shallow stacks: the threads workload's chains are a few frames deep.
# Naming is the work there: unasked, the builder runs with the reading
# session naming ahead, and takes every name from it; with
# PERFSPY_NAME_AHEAD=0 neither runs. The default asks for 2 MiB of
# data: 3 s of four spinning threads on two idle CPUs wrote 2.9 MB, and
# half that on a machine busy with a second test run, so 5 s.
build threads
th=$SCRATCH/threads.data
"$PERF" record -q -N -F 4999 -g -o "$th" -- "$E2E_BIN/threads" 5 >/dev/null 2>"$SCRATCH/threc.log" ||
	die "perf record of the threads workload failed: $(tail -2 "$SCRATCH/threc.log")"
tsz=$(data_size "$th")
forced_same "$th" "threads, frame pointers"
FMTS="raw:" forced_same "$th" "threads, --comm ps-beta --no-kernel" --comm ps-beta --no-kernel
PERFSPY_NAME_AHEAD=0 FMTS="raw:" forced_same "$th" "threads, the builder naming its own frames"
a=$(forced_stats "$th" "")
z=$(PERFSPY_NAME_AHEAD=0 forced_stats "$th" "")
read -r put taken here waits <<<"$(names_stats "$th")"
if [ "$tsz" -lt $((2 << 20)) ]; then
	fail "threads: $tsz bytes of data, under 2 MiB: the default cannot be checked"
elif [ "$a" = none ] || [ "$z" != none ]; then
	fail "threads ($tsz bytes of data): unasked '$a', with PERFSPY_NAME_AHEAD=0 '$z'"
elif [ "$put" != none ] && [ "$put" -ge 10 ] && [ "$taken" = "$put" ] && [ "$here" = 0 ]; then
	pass "threads: shallow stacks, built behind unasked ($a), not with PERFSPY_NAME_AHEAD=0; $put addresses named ahead, all taken ($waits waits)"
else
	fail "threads: named ahead '$put', taken '${taken:-}', named by the builder '${here:-}'"
fi

# Two libraries of the same code at the same offsets (src/twin_lib.c built
# twice, one string apart): the reading session keeps what it named by
# library and offset, so the second library's frames are named ahead
# too, and the builder names none itself.
tw=$SCRATCH/twin
mkdir -p "$tw" || die "mkdir $tw"
twflags=(-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -D_GNU_SOURCE -Wall)
for t in a b; do
	(cd "$E2E_SRC" && ${CC:-cc} "${twflags[@]}" -shared -fPIC -DTWIN_TAG="\"$t\"" \
		-o "$tw/libtw$t.so" twin_lib.c) || die "cannot compile twin_lib.c"
done
(cd "$E2E_SRC" && ${CC:-cc} "${twflags[@]}" -o "$tw/twin_main" twin_main.c -ldl) ||
	die "cannot compile twin_main.c"
twd=$SCRATCH/twin.data
"$PERF" record -q -F 4999 -g -o "$twd" -- "$tw/twin_main" "$tw/libtwa.so" "$tw/libtwb.so" 2 \
	>/dev/null 2>"$SCRATCH/twrec.log" ||
	die "perf record of twin_main failed: $(tail -2 "$SCRATCH/twrec.log")"
forced_same "$twd" "two libraries of the same code"
read -r put taken here waits <<<"$(names_stats "$twd")"
nb=$("$PERFSPY" convert -i "$twd" -o - 2>/dev/null | grep -c 'twin_leaf (twin_lib.c:[0-9]*)')
if [ "$put" != none ] && [ "$put" -ge 20 ] && [ "$taken" = "$put" ] && [ "$here" = 0 ] &&
	[ "$nb" -gt 0 ]; then
	pass "two libraries of the same code: $put addresses named ahead, all taken, none named by the builder"
else
	fail "two libraries of the same code: named ahead '$put', taken '${taken:-}', named by the builder '${here:-}', $nb twin_leaf stacks"
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
