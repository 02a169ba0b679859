#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: DWARF callchains (`perf record --call-graph dwarf`, docs/conventions.md §9.3):
# perfspy unwinds the user stack dumps with CFI, so the stacks reach _start
# and include frames that frame pointers lose (sys_path above libc's read,
# which keeps no frame pointer).  Same workload as run-chain.sh.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
scratch

record chain dwarf
data=$REC
say "recording: $data"

convert "$SCRATCH/out" -i "$data" || finish
check_format "$SCRATCH/out" "chain (dwarf)"
expect_globs "$SCRATCH/out" chain-dwarf 'main ('

nperf=$(perf_samples "$data")
nout=$(total "$SCRATCH/out")
if [ "$nout" -eq "$nperf" ]; then
	pass "sample total $nout = perf report -D count"
else
	fail "sample total $nout, perf report -D counts $nperf"
fi
finish
