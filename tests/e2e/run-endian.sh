#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# perf.data of the other byte order (issue 2): each file is re-encoded in
# big-endian by an independent encoder (src/swap_perfdata.py, written from
# the format reference) and perfspy must read it exactly as the original:
# `info --json` and `convert` output byte-identical. Files: fresh -g and
# --call-graph dwarf recordings, a tracepoint recording (if tracefs can be
# mounted), and file-layout files of the perf_data_converter corpus.
# A swapped pipe-layout file is refused with a clear message.
. "$(dirname "$0")/lib.sh"

need_perfspy
need_perf
need_python
scratch
SWAP=$E2E_SRC/swap_perfdata.py
CORPUS=${CORPUS:-/work/shared/corpus/perf_data_converter}
mounted=
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	[ -n "$mounted" ] && umount /sys/kernel/tracing 2>/dev/null
	cleanup_scratch
}
trap cleanup EXIT

# same NAME FILE: swap FILE, compare perfspy's outputs on both. Both
# copies are read as "perf.data" in their own directory, so the path
# perfspy prints is the same.
same() {
	local name=$1 src=$2 d=$SCRATCH/$1 side
	mkdir -p "$d/le" "$d/be" || die "mkdir $d"
	cp "$src" "$d/le/perf.data" || die "cp $src"
	if ! $PY "$SWAP" "$src" "$d/be/perf.data" 2>"$d/swap.err"; then
		fail "$name: swap_perfdata failed: $(head -2 "$d/swap.err")"
		return
	fi
	[ "$(head -c 8 "$d/be/perf.data")" = 2ELIFREP ] ||
		{ fail "$name: swapped file does not start with 2ELIFREP"; return; }
	cmp -s "$d/le/perf.data" "$d/be/perf.data" &&
		{ fail "$name: swapped file equals the original"; return; }
	for side in le be; do
		(cd "$d/$side" && "$PERFSPY" info --json perf.data >info.json 2>info.err
		 echo $? >info.rc
		 "$PERFSPY" convert -q -i perf.data -o conv.txt 2>conv.err
		 echo $? >conv.rc)
	done
	[ "$(cat "$d/le/info.rc")" = 0 ] || { fail "$name: info of the original failed"; return; }
	if cmp -s "$d/le/info.json" "$d/be/info.json" && [ "$(cat "$d/be/info.rc")" = 0 ]; then
		pass "$name: info --json identical"
	else
		fail "$name: info --json differs (rc $(cat "$d/be/info.rc")): $(head -c 300 "$d/be/info.err")"
	fi
	if [ "$(cat "$d/le/conv.rc")" = "$(cat "$d/be/conv.rc")" ] &&
	   cmp -s "$d/le/conv.txt" "$d/be/conv.txt" 2>/dev/null &&
	   cmp -s "$d/le/conv.err" "$d/be/conv.err"; then
		pass "$name: convert identical ($(wc -l <"$d/le/conv.txt" 2>/dev/null || echo 0) stacks, rc $(cat "$d/le/conv.rc"))"
	else
		fail "$name: convert differs (rc $(cat "$d/le/conv.rc")/$(cat "$d/be/conv.rc")): $(head -c 300 "$d/be/conv.err")"
	fi
}

record chain fp
same chain-fp "$REC"
record chain dwarf
same chain-dwarf "$REC"
record fork fp
same fork-fp "$REC"

if ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && mounted=1
fi
if mountpoint -q /sys/kernel/tracing 2>/dev/null; then
	# shellcheck disable=SC2016 # a script for the inner sh
	work='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.05'
	"$PERF" record -q -N -e sched:sched_switch -e cpu-clock -g -o "$SCRATCH/tp.data" \
		-- sh -c "$work" >/dev/null 2>"$SCRATCH/tp.log" ||
		die "perf record (tracepoint): $(tail -2 "$SCRATCH/tp.log")"
	same tracepoint "$SCRATCH/tp.data"
else
	say "  (tracefs not mountable: no tracepoint file)"
fi

for f in callgraph-3.8 forkexit-3.4 systemwide.1-3.8 raw-3.4 branch-4.14 \
	 group_desc-4.14 ctx_switch_namespaces-4.14 hw_and_sw-3.4; do
	[ -f "$CORPUS/perf.data.$f" ] || { say "  (corpus file $f absent)"; continue; }
	same "$f" "$CORPUS/perf.data.$f"
done

# Pipe layout of the other byte order: refused, with a message.
printf '2ELIFREP\0\0\0\0\0\0\0\020' >"$SCRATCH/pipe.be"
"$PERFSPY" info --json "$SCRATCH/pipe.be" >/dev/null 2>"$SCRATCH/pipe.err"
rc=$?
[ $rc != 0 ] && grep -q "byte order" "$SCRATCH/pipe.err" &&
	pass "swapped pipe layout refused: $(head -1 "$SCRATCH/pipe.err")" ||
	fail "swapped pipe layout: exit $rc, stderr: $(head -2 "$SCRATCH/pipe.err")"
finish
