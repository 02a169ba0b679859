#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Recording modes the reader must take (issue 2): zstd-compressed data
# (perf record -z: PERF_RECORD_COMPRESSED, docs/perf-data-format.md §1.6) in file and
# pipe layout, and build ids carried in MMAP2 records (--buildid-mmap,
# §2.4). Sample counts must equal perf's own (perf report -D), and the
# workload's functions must be named.
. "$(dirname "$0")/lib.sh"

need_perfspy
need_perf
scratch
cat >"$SCRATCH/w.c" <<'C'
#include <stdio.h>
static volatile unsigned long sink;
__attribute__((noinline)) void modes_spin(void) { for (long i = 0; i < 250000000; i++) sink += i; }
int main(void) { modes_spin(); printf("%lu\n", sink); return 0; }
C
cc -O1 -g -fno-omit-frame-pointer -o "$SCRATCH/w" "$SCRATCH/w.c" || die "cc failed"

check() { # check LABEL FILE
	local label=$1 f=$2 want json got out total
	want=$($PERF report -D -i "$f" 2>/dev/null | grep -c 'PERF_RECORD_SAMPLE')
	json=$("$PERFSPY" info --json "$f") || { fail "$label: info failed"; return; }
	got=$(printf '%s' "$json" | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
	[ "$got" = "$want" ] && [ "$want" -gt 0 ] && pass "$label: $got samples, as perf counts" ||
		fail "$label: perfspy $got samples, perf $want"
	out=$("$PERFSPY" convert -q -i "$f") || { fail "$label: convert failed"; return; }
	total=$(printf '%s\n' "$out" | awk '{n += $NF} END {print n + 0}')
	[ "$total" = "$want" ] && pass "$label: all $total samples folded" ||
		fail "$label: folded $total of $want"
	printf '%s\n' "$out" | grep -q 'modes_spin (w.c:' && pass "$label: modes_spin named" ||
		fail "$label: modes_spin not named"
}

$PERF record -q -z -F 999 -g -o "$SCRATCH/z.data" -- "$SCRATCH/w" >/dev/null 2>&1 || die "perf record -z failed"
"$PERFSPY" info --json "$SCRATCH/z.data" | grep -q '"compressed": true' &&
	pass "-z: info says compressed" || fail "-z: info does not say compressed"
check "-z file" "$SCRATCH/z.data"
$PERF record -q -z -F 999 -g -o - -- "$SCRATCH/w" >"$SCRATCH/z.pipe" 2>/dev/null || die "perf record -z -o - failed"
check "-z pipe" "$SCRATCH/z.pipe"
if $PERF record -q --buildid-mmap -F 999 -g -o "$SCRATCH/b.data" -- "$SCRATCH/w" >/dev/null 2>&1; then
	"$PERFSPY" info --json "$SCRATCH/b.data" | grep -q '"build_ids": true' &&
		pass "--buildid-mmap: build ids seen" || fail "--buildid-mmap: no build ids seen"
	check "--buildid-mmap" "$SCRATCH/b.data"
else
	fail "perf record --buildid-mmap failed"
fi
finish
