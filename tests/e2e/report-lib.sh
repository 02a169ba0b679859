# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The report workload (src/report_split.c + src/fakecuda.c), shared by
# run-report.sh and run-browser.sh; sourced after lib.sh.
#
# record_split: build libfakecuda.so and report_split into $E2E_BIN and
# record them with `perf record -F 999 -g` into $E2E_DATA/report_split-fp.data
# (once per suite run, like lib.sh's record).  Sets REC.
#   -fno-plt: calls to malloc/free go through the GOT, so no sample lands
#   in a PLT stub of the workload (it would count as "other native").
# SPLIT_SCALE (default 1.5) scales every CPU budget of the workload.

split_flags=(-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-plt -pthread
	-D_GNU_SOURCE -Wall)

build_split() {
	mkdir -p "$E2E_BIN" || die "mkdir $E2E_BIN"
	local lib=$E2E_BIN/libfakecuda.so bin=$E2E_BIN/report_split
	if [ ! -f "$lib" ] || [ "$E2E_SRC/fakecuda.c" -nt "$lib" ]; then
		(cd "$E2E_SRC" && ${CC:-cc} "${split_flags[@]}" -shared -fPIC -o "$lib.tmp.$$" fakecuda.c) ||
			die "cannot compile fakecuda.c"
		mv "$lib.tmp.$$" "$lib"
	fi
	if [ ! -x "$bin" ] || [ "$E2E_SRC/report_split.c" -nt "$bin" ] || [ "$lib" -nt "$bin" ]; then
		(cd "$E2E_SRC" && ${CC:-cc} "${split_flags[@]}" -o "$bin.tmp.$$" report_split.c \
			-L"$E2E_BIN" -lfakecuda -Wl,-rpath,"$E2E_BIN") ||
			die "cannot compile report_split.c"
		mv "$bin.tmp.$$" "$bin"
	fi
}

record_split() {
	local data=$E2E_DATA/report_split-fp.data
	build_split
	mkdir -p "$E2E_DATA" || die "mkdir $E2E_DATA"
	# shellcheck disable=SC2034 # read by the sourcing script
	REC=$data
	[ -s "$data" ] && [ "$data" -nt "$E2E_BIN/report_split" ] && return 0
	"$PERF" record -N -F 999 -g -o "$data.tmp" -- "$E2E_BIN/report_split" "${SPLIT_SCALE:-1.5}" \
		>"$data.out" 2>"$data.perf.log" || { cat "$data.perf.log"; die "perf record report_split failed"; }
	mv "$data.tmp" "$data"
}
