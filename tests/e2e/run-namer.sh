#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: names read ahead (issue 16, docs/design.md §6.19). On a frame-pointer
# recording a second session names each address on a thread of its own and
# the converting one takes the names from its log; the output must be the
# bytes of a conversion without it (PERFSPY_NAME_AHEAD=0) and the messages
# the same set: every perf.data of the shared corpus, forced on whatever
# its size (raw, --threads, pprof), a system-wide recording of a compiler
# at work (thousands of new addresses: the namer runs to the end
# and names nearly all of them, and a file that size has its names read
# ahead without being asked, by the session that feeds the builder
# (§6.26), unless the process may run on one CPU only), CPython 3.12
# -X perf with frame pointers (perf-map frames beside
# the named ones), and a program that runs the same code over and over,
# where the namer gives up after two stretches of samples and the
# converting session names the rest with the namer's symbolizer.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
scratch

FORCE_VAR=PERFSPY_NAME_AHEAD
FORCE_OFF_SAYS=
FORCE_ON_SAYS='naming frames ahead'
FORCE_DID='named ahead'

# forced_stats IN WAY ARGS...: the namer's counts for IN with
# PERFSPY_NAME_AHEAD set to WAY ("put taken here waits"), or "none" when it
# did not run.
forced_stats() {
	local in=$1 way=$2
	shift 2
	PERFSPY_NAME_AHEAD=$way "$PERFSPY" convert -v -v "$@" -i "$in" -o /dev/null 2>&1 |
		sed -n 's/.*: \([0-9]*\) addresses named ahead, \([0-9]*\) taken, \([0-9]*\) named here, \([0-9]*\) waits$/\1 \2 \3 \4/p' |
		grep . || echo none
}

forced_corpus "the namer"

# A compiler at work, system-wide: cc1 meets new code all the time.
# Compiling this project's largest sources over and over for 6 s.
cc_loop() {
	local end=$((SECONDS + 7))
	while [ $SECONDS -lt $end ]; do
		for src in libconv/session.c libconv/frames/symbols.c libconv/frames/stacks.c; do
			${CC:-cc} -O2 -g -Iinclude -Ilibconv -D_GNU_SOURCE -c "$TOP/$src" \
				-o "$SCRATCH/cc.o" 2>/dev/null || true
		done
	done
}
cd "$TOP" || die "cd $TOP"
# Two at a time, so that both CPUs sample the compiler.
cc_loop &
cpid=$!
cc_loop &
cpid2=$!
sleep 0.5
cc=$SCRATCH/cc.data
"$PERF" record -q -a -g -F 4000 -o "$cc" -- sleep 6 >/dev/null 2>"$SCRATCH/ccrec.log" ||
	{ kill "$cpid" "$cpid2" 2>/dev/null; die "perf record -a failed: $(tail -2 "$SCRATCH/ccrec.log")"; }
wait "$cpid" "$cpid2"
mkdir -p "$SCRATCH/nomaps"
forced_same "$cc" "system-wide, cc1 at work" --perf-map-dir "$SCRATCH/nomaps"
# The same names read ahead by the session that feeds the builder
# (§6.26) against the namer's: the same bytes and messages.
FORCE_VAR=PERFSPY_BUILD_BEHIND FORCE_OFF_SAYS='naming frames ahead' \
	FORCE_ON_SAYS='building stacks on a second thread' FORCE_DID='built behind' \
	forced_same "$cc" "system-wide, cc1 at work, names read ahead for the builder" \
	--perf-map-dir "$SCRATCH/nomaps"
mb=$(($(stat -c %s "$cc") >> 20))
read -r put taken here waits <<<"$(forced_stats "$cc" 1 --perf-map-dir "$SCRATCH/nomaps")"
if [ "$put" = none ]; then
	fail "system-wide cc1: the namer did not run"
elif [ "$taken" -gt 5000 ] && [ "$here" -lt $((taken / 20)) ]; then
	pass "system-wide cc1 ($mb MB): $taken addresses named ahead and taken, $here named by the converting thread ($waits waits)"
else
	fail "system-wide cc1 ($mb MB): $put named ahead, $taken taken, $here named by the converting thread"
fi
# Unasked, a file of 2 MiB of data or more has its names read ahead
# (more than one CPU to run on; by the reading session that feeds the
# builder, §6.26, which says the same counts), a smaller one does not;
# PERFSPY_NAME_AHEAD=0 keeps it off. The data section's size is the file header's data.size
# (docs/perf-data-format.md §1.1): bytes 48-55. On a host that steals
# much of the CPUs' time the recording can come out small; then the
# other side of the rule is what is checked.
if [ "$(nproc)" -gt 1 ]; then
	need_python
	dsz=$("$PY" -c 'import struct, sys
print(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(56), 48)[0])' "$cc")
	a=$(forced_stats "$cc" "" --perf-map-dir "$SCRATCH/nomaps")
	z=$(forced_stats "$cc" 0 --perf-map-dir "$SCRATCH/nomaps")
	if [ "$dsz" -ge $((2 << 20)) ] && [ "$a" != none ] && [ "$z" = none ]; then
		pass "system-wide cc1 ($dsz bytes of data): names read ahead unasked ($a), not with PERFSPY_NAME_AHEAD=0"
	elif [ "$dsz" -lt $((2 << 20)) ] && [ "$a" = none ] && [ "$z" = none ]; then
		pass "system-wide cc1 ($dsz bytes of data, under 2 MiB): no names read ahead unasked"
	else
		fail "system-wide cc1 ($dsz bytes of data): unasked '$a', with PERFSPY_NAME_AHEAD=0 '$z'"
	fi
	# On one CPU of its own (taskset), a second thread would only take
	# turns with the converting one: not unasked.
	t=$(PERFSPY_NAME_AHEAD='' taskset -c 0 "$PERFSPY" convert -v -v --perf-map-dir "$SCRATCH/nomaps" \
		-i "$cc" -o /dev/null 2>&1 | grep -c 'named ahead')
	if [ "$t" = 0 ]; then
		pass "system-wide cc1 under taskset -c 0: no namer"
	else
		fail "system-wide cc1 under taskset -c 0: the namer ran"
	fi
else
	fail "system-wide cc1: $(nproc) CPU online: the default cannot be checked"
fi
rm -f "$cc"

# The same code over and over: four threads spinning in the same
# functions for 3 s. After the first stretches of 4,096 samples few new
# addresses come, the namer stops, and the converting thread names what
# is left.
build threads
th=$SCRATCH/threads.data
"$PERF" record -q -N -F 4999 -g -o "$th" -- "$E2E_BIN/threads" 3 >/dev/null 2>"$SCRATCH/threc.log" ||
	die "perf record of the threads workload failed: $(tail -2 "$SCRATCH/threc.log")"
forced_same "$th" "threads, frame pointers"
read -r put taken here waits <<<"$(forced_stats "$th" 1)"
need_python
ns=$("$PERFSPY" info --json -i "$th" | json_samples)
if [ "$put" = none ]; then
	fail "threads: the namer did not run"
elif [ "$ns" -lt 9000 ]; then
	fail "threads: $ns samples, too few for the namer to give up"
elif [ "$here" -gt 0 ] && [ "$taken" -gt 0 ]; then
	pass "threads ($ns samples): the namer gave up after $put names; $here named by the converting thread"
else
	fail "threads ($ns samples): $put named ahead, $taken taken, $here named by the converting thread"
fi
forced_same "$th" "threads, --comm ps-beta --no-kernel" --comm ps-beta --no-kernel

# CPython 3.12 -X perf recorded with -g: perf-map (JIT) frames and the
# interpreter's named frames.
py312=$(find_python 3.12)
if [ -n "$py312" ]; then
	pyd=$SCRATCH/py.data
	"$PERF" record -q -F 999 -g -o "$pyd" -- \
		"$py312" -X perf "$TOP/bench/pyload.py" 1.5 >/dev/null 2>"$SCRATCH/pyrec.log" ||
		die "perf record of python3.12 failed: $(tail -2 "$SCRATCH/pyrec.log")"
	forced_same "$pyd" "python3.12 -X perf, frame pointers"
	# This CPython has no frame pointers: the chains mostly end in
	# the interpreter, so this is about the mix, not whole stacks.
	read -r put taken here waits <<<"$(forced_stats "$pyd" 1)"
	if [ "$put" != none ] && [ "$taken" -gt 100 ]; then
		pass "python, named ahead: $taken addresses of libpython and its modules taken"
	else
		fail "python, named ahead: $put named ahead, ${taken:-} taken"
	fi
else
	skip "no CPython 3.12 with perf trampolines for the Python part (set PY312)"
fi
finish
