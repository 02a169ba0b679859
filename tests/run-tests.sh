#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Run perfspy's tests: tests/run-tests.sh MODE [FILTER]
#   MODE   unit  every $O/tests/test_* binary (built by `make check-unit`),
#                then tests/lint/run-*.sh (layering, citations, shellcheck)
#          e2e   tests/corpus/run.sh, tests/e2e/run-*.sh, tests/diff/run-*.sh
#          all   unit (with lint), then e2e
#   FILTER optional substring: run only the tests whose name contains it
# Environment: O (build dir, default build), CI (=true: a skipped corpus, e2e
# or diff test is a failure, docs/conventions.md §9), VALGRIND=1 (unit binaries under
# valgrind --error-exitcode=1), TEST_TIMEOUT (seconds per test, default 900).
# Sanitizer reports exit 86 (ASAN/UBSAN/LSAN_OPTIONS, unless already set).
#
# A test exits 0 (pass), 77 (skip) or anything else (fail).  One line per
# test, then exactly "N passed, N failed, N skipped".  Each test's output is
# kept in $O/test-logs/NAME.log; the tail of a failing test's log is shown.
# Exit status: 1 if any test failed, 2 on usage errors, else 0.
set -u
export LC_ALL=C
unset LANGUAGE

usage() {
	echo "usage: $0 unit|e2e|all [FILTER]" >&2
	exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
mode=$1
filter=${2:-}
case $mode in unit | e2e | all) ;; *) usage ;; esac

TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
O=${O:-build}
case $O in /*) ;; *) O=$TOP/$O ;; esac
export O
# Under `make asan`/`make ubsan` a sanitizer report must not pass for the CLI's
# own "exit 1, bad input": make it exit 86, which no test accepts.
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=86:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-exitcode=86}
LOGS=$O/test-logs
mkdir -p "$LOGS" || exit 1
timeout_s=${TEST_TIMEOUT:-900}

npass=0 nfail=0 nskip=0
failed=()

# run_one NAME KIND CMD...: run a test, classify its exit status.
run_one() {
	local name=$1 kind=$2 log rc=0
	shift 2
	[ -n "$filter" ] && [[ $name != *"$filter"* ]] && return
	log=$LOGS/${name//\//-}.log
	timeout -k 10 "$timeout_s" "$@" >"$log" 2>&1 </dev/null || rc=$?
	# Unit and lint tests may skip even under CI (a lint tool missing).
	if [ $rc -eq 77 ] && [ "${CI:-}" = true ] && [ "$kind" != unit ] &&
		[ "$kind" != lint ]; then
		echo "(CI=true: a skipped $kind test is a failure)" >>"$log"
		rc=1
	fi
	case $rc in
	0)
		npass=$((npass + 1))
		echo "PASS $name"
		;;
	77)
		nskip=$((nskip + 1))
		echo "SKIP $name ($(grep -m1 -i 'skip' "$log" | cut -c1-100))"
		;;
	*)
		nfail=$((nfail + 1))
		failed+=("$name")
		[ $rc -eq 124 ] && echo "(timed out after ${timeout_s}s)" >>"$log"
		[ $rc -ge 128 ] && [ $rc -ne 124 ] && echo "(killed by signal $((rc - 128)))" >>"$log"
		echo "FAIL $name (exit $rc)"
		echo "---- tail of ${log#"$TOP"/}"
		tail -n 25 "$log" | sed 's/^/    /'
		echo "----"
		;;
	esac
}

run_unit() {
	local t vg=()
	if [ "${VALGRIND:-0}" = 1 ]; then
		vg=(valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite)
	fi
	for t in "$O"/tests/test_*; do
		[ -f "$t" ] && [ -x "$t" ] || continue
		run_one "unit/${t##*/}" unit "${vg[@]}" "$t"
	done
}

run_lint() {
	local t
	for t in tests/lint/run-*.sh; do
		[ -f "$t" ] || continue
		t=${t%.sh}
		run_one "${t#tests/}" lint bash "$t.sh"
	done
}

run_e2e() {
	local t kind
	# Recordings are shared by the scripts of one run (tests/e2e/lib.sh),
	# never reused from an earlier or a concurrent run; kept if a test fails.
	mkdir -p "$O/e2e" || exit 1
	E2E_DATA=$(mktemp -d "$O/e2e/data.XXXXXX") || exit 1
	export E2E_DATA
	[ -x tests/corpus/run.sh ] && run_one corpus/run corpus tests/corpus/run.sh
	for t in tests/e2e/run-*.sh tests/diff/run-*.sh; do
		[ -f "$t" ] || continue
		kind=${t#tests/}
		kind=${kind%%/*}
		t=${t%.sh}
		run_one "${t#tests/}" "$kind" bash "$t.sh"
	done
}

case $mode in
unit)
	run_unit
	run_lint
	;;
e2e) run_e2e ;;
all)
	run_unit
	run_lint
	run_e2e
	;;
esac

if [ -n "${E2E_DATA:-}" ]; then
	if [ $nfail -eq 0 ]; then
		rm -rf "$E2E_DATA"
	else
		echo "(recordings kept in ${E2E_DATA#"$TOP"/})"
	fi
fi
echo "$npass passed, $nfail failed, $nskip skipped"
[ $nfail -eq 0 ]
