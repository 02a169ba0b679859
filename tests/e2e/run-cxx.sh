#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: C++ names (src/cxx.cpp): namespaces, a class method, template
# instances, an anonymous namespace and std::sort, demangled without
# parameters (expect/cxx.glob); an inlined namespaced template without a
# linkage name, qualified all the same (src/cxxns.cpp, expect/cxxns.glob).
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
scratch

record cxx fp
data=$REC
say "recording: $data"

convert "$SCRATCH/out" -i "$data" || finish
check_format "$SCRATCH/out" "cxx"
expect_globs "$SCRATCH/out" cxx 'main ('

nperf=$(perf_samples "$data")
nout=$(total "$SCRATCH/out")
if [ "$nout" -eq "$nperf" ]; then
	pass "sample total $nout = perf report -D count"
else
	fail "sample total $nout, perf report -D counts $nperf"
fi

# Inlined frames without a linkage name keep their namespaces (src/cxxns.cpp).
record cxxns fp
convert "$SCRATCH/ns" -i "$REC" || finish
check_format "$SCRATCH/ns" "cxxns"
expect_globs "$SCRATCH/ns" cxxns 'main ('
finish
