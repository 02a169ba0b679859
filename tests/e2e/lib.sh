# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Shared helpers for tests/e2e/run-*.sh and tests/diff/run-*.sh (sourced, not run).
#
# Conventions (docs/conventions.md §9): a test exits 0 on pass, 1 on failure, 77 on skip.
# A test may skip only when perf (or perf_event_open) is unavailable and CI is
# not "true"; under CI=true the same condition is a failure.
#
# Workloads are C/C++ programs in tests/e2e/src/, compiled at run time into
# $O/e2e/bin/ and recorded into $E2E_DATA (default $O/e2e/data/).  A recording
# is reused by later scripts of the same suite run (tests/run-tests.sh gives
# each run a fresh E2E_DATA), so the diff tests see the same perf.data as the
# e2e tests.

set -u
export LC_ALL=C

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
O=${O:-build}
case $O in /*) ;; *) O=$TOP/$O ;; esac
PERFSPY=${PERFSPY:-$O/perfspy}
PERF=${PERF:-perf}
E2E_BIN=$O/e2e/bin
E2E_DATA=${E2E_DATA:-$O/e2e/data}
E2E_SRC=$TOP/tests/e2e/src
E2E_EXPECT=${E2E_EXPECT:-$TOP/tests/e2e/expect}
PY=${PYTHON3:-$(command -v /usr/bin/python3 || command -v python3 || true)}

nfail=0
ncheck=0
SCRATCH=

say() { printf '%s\n' "$*"; }
pass() { ncheck=$((ncheck + 1)); say "  ok    $*"; }
fail() { ncheck=$((ncheck + 1)); nfail=$((nfail + 1)); say "  FAIL  $*"; }

# skip REASON: exit 77 outside CI, exit 1 (a failure) under CI=true.
skip() {
	if [ "${CI:-}" = true ]; then
		say "FAIL (CI=true forbids skipping): $*"
		exit 1
	fi
	say "SKIP: $*"
	exit 77
}

# die REASON: a broken precondition that is our fault or the CLI's.
die() { say "FAIL: $*"; exit 1; }

# finish: exit with the verdict for this script.
finish() {
	say "$ncheck checks, $nfail failed"
	[ "$nfail" -eq 0 ] || exit 1
	exit 0
}

cleanup_scratch() { [ -n "$SCRATCH" ] && rm -rf "$SCRATCH"; }

# scratch: make $SCRATCH (mktemp -d), removed on exit.
scratch() {
	SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/perfspy-test.XXXXXX") || die "mktemp"
	trap cleanup_scratch EXIT
}

# need_perf: perf present and allowed to sample (cpu-clock, callchains).
need_perf() {
	command -v "$PERF" >/dev/null 2>&1 || skip "perf not found"
	local probe
	probe=$(mktemp "${TMPDIR:-/tmp}/perfspy-probe.XXXXXX") || die "mktemp"
	if ! "$PERF" record -q -N -F 999 -g -o "$probe" -- true >/dev/null 2>&1; then
		rm -f "$probe"
		skip "perf record cannot sample here (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))"
	fi
	rm -f "$probe"
}

# need_perfspy: the CLI under test must exist; its absence is a failure.
need_perfspy() {
	[ -x "$PERFSPY" ] || die "$PERFSPY not built (run make)"
}

# find_python X.Y (run-python.sh, run-browser.sh): a CPython X.Y with perf trampolines: $PYXY, else the
# newest pyenv X.Y.*, else pythonX.Y on PATH.
find_python() {
	local v=$1 var=PY${1/./} root p cand=
	if [ -n "${!var:-}" ]; then
		cand=${!var}
	else
		root=$(pyenv root 2>/dev/null) || root=${PYENV_ROOT:-$HOME/.pyenv}
		for p in $(printf '%s\n' "$root"/versions/"$v".*/bin/python"$v" | sort -V); do
			[ -x "$p" ] && cand=$p
		done
		[ -n "$cand" ] || cand=$(command -v "python$v" 2>/dev/null) || true
	fi
	[ -n "$cand" ] && "$cand" -c 'import sys, sysconfig
sys.exit(0 if sys.version_info[:2] == tuple(map(int, sys.argv[1].split("."))) and
	 sysconfig.get_config_var("PY_HAVE_PERF_TRAMPOLINE") else 1)' "$v" 2>/dev/null &&
		printf '%s\n' "$cand"
}

# need_live_py312 (run-record, run-idle, run-top): $PY12, a CPython 3.12
# with perf trampolines (find_python), and `perfspy record` able to sample
# here; else skip (a failure under CI=true). Needs scratch.
need_live_py312() {
	PY12=$(find_python 3.12)
	[ -n "$PY12" ] || skip "no CPython 3.12 with perf trampolines (set PY312)"
	if ! "$PERFSPY" record -q -f raw -o "$SCRATCH/probe" -- true 2>"$SCRATCH/probe.err"; then
		skip "perfspy record cannot sample here: $(head -1 "$SCRATCH/probe.err")"
	fi
}

need_python() {
	[ -n "$PY" ] || die "python3 not found (linux-perf depends on it)"
}

# build NAME: compile tests/e2e/src/NAME.{c,cpp} into $E2E_BIN/NAME.
# -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer: the fp callchains need
# frame pointers everywhere.  gcc 12 still omits them in leaf functions that
# need no stack frame, so each spinning leaf keeps a volatile local (see src/).
build() {
	local name=$1 src cc flags
	mkdir -p "$E2E_BIN" || die "mkdir $E2E_BIN"
	flags="-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread -D_GNU_SOURCE -Wall"
	if [ -f "$E2E_SRC/$name.c" ]; then
		src=$E2E_SRC/$name.c cc=${CC:-cc}
	else
		src=$E2E_SRC/$name.cpp cc=${CXX:-c++}
	fi
	[ -f "$src" ] || die "no source for workload $name"
	if [ ! -x "$E2E_BIN/$name" ] || [ "$src" -nt "$E2E_BIN/$name" ]; then
		# Compile in the source directory with a relative file name so that
		# DW_AT_name is plain "NAME.c", as users see it.
		# shellcheck disable=SC2086 # $cc and $flags are word lists
		(cd "$E2E_SRC" && $cc $flags -o "$E2E_BIN/$name.tmp.$$" "${src##*/}") ||
			die "cannot compile $src"
		mv "$E2E_BIN/$name.tmp.$$" "$E2E_BIN/$name"
	fi
}

# build_bench_workload: bench/workload.c (four threads under 8-55 frames,
# deep frame-pointer stacks) built into $E2E_BIN/workload unless it is
# there and newer than its source.
build_bench_workload() {
	mkdir -p "$E2E_BIN" || die "mkdir $E2E_BIN"
	if [ ! -x "$E2E_BIN/workload" ] || [ "$TOP/bench/workload.c" -nt "$E2E_BIN/workload" ]; then
		${CC:-cc} -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread \
			-D_GNU_SOURCE -Wall -o "$E2E_BIN/workload" "$TOP/bench/workload.c" ||
			die "cannot build bench/workload.c"
	fi
}

# record NAME MODE [ARGS...]: record $E2E_BIN/NAME ARGS with perf into
# $E2E_DATA/NAME-MODE.data unless this suite run has recorded it already.
# MODE: fp = -g, dwarf = --call-graph dwarf, sys = -a -g for 1.5 s while
# NAME (started 0.5 s earlier, so perf synthesizes its maps from /proc)
# runs.  The workload's stdout goes to $E2E_DATA/NAME-MODE.out, perf's
# messages to NAME-MODE.perf.log.  -N keeps our throw-away binaries out of
# ~/.debug.
record() {
	local name=$1 mode=$2 cg wpid
	shift 2
	local data=$E2E_DATA/$name-$mode.data
	local out=$E2E_DATA/$name-$mode.out log=$E2E_DATA/$name-$mode.perf.log
	build "$name"
	mkdir -p "$E2E_DATA" || die "mkdir $E2E_DATA"
	# shellcheck disable=SC2034 # read by the sourcing script
	REC=$data
	[ -s "$data" ] && [ "$data" -nt "$E2E_BIN/$name" ] && return 0
	case $mode in
	fp | dwarf)
		cg=-g
		[ "$mode" = dwarf ] && cg=--call-graph=dwarf
		"$PERF" record -N -F 999 $cg -o "$data.tmp" -- "$E2E_BIN/$name" "$@" \
			>"$out" 2>"$log" || { cat "$log"; die "perf record $name failed"; }
		;;
	sys)
		"$E2E_BIN/$name" "$@" >"$out" &
		wpid=$!
		sleep 0.5
		"$PERF" record -N -F 999 -a -g -o "$data.tmp" -- sleep 1.5 >/dev/null 2>"$log" ||
			{ kill "$wpid" 2>/dev/null; cat "$log"; die "perf record -a failed"; }
		wait "$wpid" || die "workload $name failed"
		;;
	*) die "record: bad mode $mode" ;;
	esac
	mv "$data.tmp" "$data"
}

# differs WHAT RC1 OUT1 ERR1 RC2 OUT2 ERR2: how two conversions of one input
# that must agree (run-jobs, run-namer) differ: exit status, output bytes
# (when both succeeded) or the set of messages, as " WHAT: ...;"; nothing
# when they agree.
differs() {
	local what=$1 rc1=$2 o1=$3 e1=$4 rc2=$5 o2=$6 e2=$7
	if [ "$rc1" != "$rc2" ]; then
		printf ' %s: exit %s vs %s;' "$what" "$rc1" "$rc2"
	elif [ "$rc1" = 0 ] && ! cmp -s "$o1" "$o2"; then
		printf ' %s: output differs;' "$what"
	elif ! cmp -s <(sort "$e1") <(sort "$e2"); then
		printf ' %s: messages differ (%s);' "$what" "$(diff <(sort "$e1") <(sort "$e2") | sed -n 2p)"
	fi
}

# data_size FILE: the data section's size, from the perf.data header
# (docs/perf-data-format.md: magic, size, attr_size, attrs {offset,
# size}, then data {offset, size}: its size is the u64 at byte 48).
data_size() {
	"$PY" -c 'import struct, sys
print(struct.unpack_from("<Q", open(sys.argv[1], "rb").read(56), 48)[0])' "$1"
}

# perf_samples FILE: number of PERF_RECORD_SAMPLE records, perf as the oracle.
perf_samples() {
	"$PERF" report -D -i "$1" 2>/dev/null | grep -c 'PERF_RECORD_SAMPLE'
}

# json_samples: read `perfspy info --json` on stdin, print top-level "samples".
json_samples() {
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["samples"])'
}

# total FILE: sum of the counts of a folded file.
total() {
	awk '{ n += $NF } END { printf "%d\n", n }' "$1"
}

# glob_escape: escape glob metacharacters of stdin lines (for REGEN output).
glob_escape() {
	sed -e 's/[][*?\\]/\\&/g'
}

# check_globs FOLDED EXPECT: every positive pattern of EXPECT matches at least
# one line of FOLDED, no "!" pattern matches any line, and the lines matched by
# positive patterns carry at least "%coverage N" percent of the samples.
# Pattern files: '#' comments, blank lines ignored; shell glob syntax
# (case patterns, no extglob), matched against whole lines with the count.
check_globs() {
	local folded=$1 expect=$2 cov=0 pat line n total=0 covered=0 hit
	local -a pos=() neg=() lines=()
	while IFS= read -r pat || [ -n "$pat" ]; do
		case $pat in
		'' | '#'*) ;;
		'%coverage '*) cov=${pat#%coverage } ;;
		'!'*) neg+=("${pat#!}") ;;
		*) pos+=("$pat") ;;
		esac
	done <"$expect"
	mapfile -t lines <"$folded"
	local -a seen=()
	for line in "${lines[@]}"; do
		n=${line##* }
		total=$((total + n))
		hit=0
		for i in "${!pos[@]}"; do
			# case, not [[ == ]]: [[ ]] matches as if extglob were on, and
			# "*(" would start an extglob group.
			# shellcheck disable=SC2254
			case $line in ${pos[$i]})
				seen[i]=1
				hit=1
				;;
			esac
		done
		[ $hit -eq 1 ] && covered=$((covered + n))
		for pat in "${neg[@]}"; do
			# shellcheck disable=SC2254
			case $line in $pat) fail "${expect##*/}: forbidden pattern matched: $line" ;; esac
		done
	done
	for i in "${!pos[@]}"; do
		if [ -n "${seen[i]:-}" ]; then
			pass "${expect##*/}: ${pos[$i]}"
		else
			fail "${expect##*/}: no line matches ${pos[$i]}"
		fi
	done
	if [ "$total" -eq 0 ]; then
		fail "${expect##*/}: empty output"
	elif [ $((covered * 100)) -lt $((cov * total)) ]; then
		fail "${expect##*/}: expected stacks cover $covered of $total samples (< $cov%)"
	else
		pass "${expect##*/}: expected stacks cover $covered of $total samples (>= $cov%)"
	fi
}

# regen_globs FOLDED EXPECT ANCHOR: REGEN=1 helper.  Keeps the header
# (comments, %coverage, "!" lines) of EXPECT and replaces the patterns with
# one per output line holding >= 2% of the samples: frames above ANCHOR
# (e.g. "main (") become "*;" (after a --threads root "thread (*): NAME;"),
# line numbers become "*", counts "[0-9]*".
# Review the result before committing: it encodes whatever perfspy printed.
regen_globs() {
	local folded=$1 expect=$2 anchor=$3 tot
	tot=$(total "$folded")
	{
		[ -f "$expect" ] && grep -E '^(#|%|!|$)' "$expect"
		awk -v tot="$tot" '$NF * 50 >= tot { sub(/ [0-9]+$/, ""); print }' "$folded" |
			glob_escape |
			sed -e "s/^thread (\\([0-9]*\\)): \\([^;]*\\);.*;\\($anchor\\)/thread (*): \\2;*;\\3/" \
				-e "/^thread (\\*)/!s/^.*;\\($anchor\\)/*;\\1/" \
				-e 's/:[0-9][0-9]*)/:*)/g' -e 's/$/ [0-9]*/' |
			sort -u
	} >"$expect.new" && mv "$expect.new" "$expect"
	say "  regenerated ${expect#"$TOP"/}"
}

# expect_globs FOLDED NAME ANCHOR: check_globs against expect/NAME.glob, or
# rewrite it when REGEN=1.
expect_globs() {
	local folded=$1 name=$2 anchor=$3
	if [ "${REGEN:-0}" = 1 ]; then
		regen_globs "$folded" "$E2E_EXPECT/$name.glob" "$anchor"
	fi
	check_globs "$folded" "$E2E_EXPECT/$name.glob"
}

# convert OUT ARGS...: run perfspy convert ARGS -o OUT; a non-zero exit fails
# the check (stderr kept in OUT.err).
convert() {
	local out=$1
	shift
	if "$PERFSPY" convert -q "$@" -o "$out" 2>"$out.err"; then
		return 0
	fi
	local rc=$?
	fail "perfspy convert $* exited $rc: $(head -c 300 "$out.err")"
	return 1
}

# check_format FILE WHAT: lines are bytewise sorted and unique, each "frames COUNT".
check_format() {
	local f=$1 what=$2
	if ! LC_ALL=C sort -c "$f" 2>/dev/null; then
		fail "$what: output not bytewise sorted"
	elif [ -n "$(sed 's/ [0-9]*$//' "$f" | uniq -d | head -1)" ]; then
		fail "$what: duplicate stacks"
	elif grep -qvE '^[^ ].* [1-9][0-9]*$' "$f"; then
		fail "$what: malformed line: $(grep -vE '^[^ ].* [1-9][0-9]*$' "$f" | head -1)"
	else
		pass "$what: format (sorted, unique, 'frames COUNT')"
	fi
}

# A helper thread's tests (run-namer.sh, run-behind.sh): the variable that
# forces it, FORCE_VAR (=0 off, =1 on); the -v line that names the other
# helper when it is off (FORCE_OFF_SAYS, or empty) and its own when on
# (FORCE_ON_SAYS), which the comparison leaves out; what it did, for the
# messages (FORCE_DID: "named ahead"); and a function forced_stats IN WAY
# ARGS... printing its counts with FORCE_VAR=WAY, or "none" if it did not run.

# forced_same IN LABEL ARGS...: forced on against off, in each of $FMTS:
# the same bytes and the same messages.
forced_same() {
	local in=$1 label=$2 v fmt th rc0 rc1 bad=
	shift 2
	for v in ${FMTS:-raw: raw:--threads pprof:}; do
		fmt=${v%%:*}
		th=${v#*:}
		# shellcheck disable=SC2086 # $th: empty or one word
		env "$FORCE_VAR=0" "$PERFSPY" convert -v -f "$fmt" $th "$@" -i "$in" \
			-o "$SCRATCH/n0" 2>"$SCRATCH/e0"
		rc0=$?
		# shellcheck disable=SC2086
		env "$FORCE_VAR=1" "$PERFSPY" convert -v -f "$fmt" $th "$@" -i "$in" \
			-o "$SCRATCH/n1" 2>"$SCRATCH/e1"
		rc1=$?
		if [ -n "$FORCE_OFF_SAYS" ]; then
			grep -v "$FORCE_OFF_SAYS" "$SCRATCH/e0" >"$SCRATCH/e0v"
		else
			cp "$SCRATCH/e0" "$SCRATCH/e0v"
		fi
		# shellcheck disable=SC2153 # set by the test that sources this
		grep -v "$FORCE_ON_SAYS" "$SCRATCH/e1" >"$SCRATCH/e1v"
		bad=$bad$(differs "$fmt$th" "$rc0" "$SCRATCH/n0" "$SCRATCH/e0v" \
			"$rc1" "$SCRATCH/n1" "$SCRATCH/e1v")
	done
	if [ -n "$bad" ]; then
		fail "$label: $FORCE_DID differs:$bad"
	else
		pass "$label: $FORCE_DID, the same bytes and messages (${FMTS:-raw: raw:--threads pprof:})"
	fi
}

# forced_corpus NOUN: forced_same on every perf.data of the shared corpus,
# and at least 20 of them (files read in place in their own byte order,
# without user stack dumps: most of the corpus) converted with NOUN.
forced_corpus() {
	local noun=$1 corpus=$TOP/../shared/corpus/perf_data_converter f n=0 used=0

	if [ ! -d "$corpus" ]; then
		if [ "${CI:-}" = true ]; then
			fail "corpus: $corpus missing (the checkout must sit beside shared/)"
		else
			say "  note  no corpus at $corpus: recordings only"
		fi
		return
	fi
	for f in "$corpus"/perf.data.*; do
		forced_same "$f" "corpus ${f##*/}"
		[ "$(forced_stats "$f" 1)" != none ] && used=$((used + 1))
		n=$((n + 1))
	done
	[ "$n" -ge 30 ] || fail "corpus: only $n perf.data files in $corpus"
	if [ "$used" -ge 20 ]; then
		pass "corpus: $used of $n files converted with $noun"
	else
		fail "corpus: only $used of $n files converted with $noun"
	fi
}
