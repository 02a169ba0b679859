#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 3, full Python stacks from perf): CPython 3.12 and 3.13 run
# src/py/workload.py (named threads, nested classes, recursion, a generator,
# ctypes calls into src/py/libwork.c built -O2 -fomit-frame-pointer, a fork)
# under `perf record --call-graph dwarf,65528` with -X perf, and with
# -X perf_jit on 3.13.  For every sample whose leaf is a libwork.so function
# the stack must hold that thread's whole Python chain, from the thread's
# root frame, with first-line numbers taken from the sources.  Prints and
# checks (>= 95%) perfspy's rate next to perf script's on the same file,
# checks --qualname, --nolineno, --python-only, --keep-interpreter,
# --full-filenames and --perf-map-dir, and, on -g recordings, that perfspy's
# stacks are not worse than perf script's.
#
# The perf maps and jitdumps the workload writes to /tmp are copied to the
# scratch directory after perf script has read them, then removed (only
# those of our pids); perfspy reads the copies through --perf-map-dir.
# PY312/PY313 override the interpreters; PY_E2E_SECONDS the run time (2 s).
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

PYSRC=$E2E_SRC/py
WL=$PYSRC/workload.py
CHAINS=$PYSRC/chains.py
RUN_S=${PY_E2E_SECONDS:-2}
MIN_RATE=95      # issue 3: share of C-leaf samples with the full chain
MIN_CHAIN=90     # each chain on its own
DEPTH=$(sed -n 's/^DEPTH = \([0-9]*\).*/\1/p' "$WL")
[ -n "$DEPTH" ] || die "no DEPTH in $WL"

# Map and dump files our workload runs leave in /tmp (removed on exit).
tmpfiles=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup_py() {
	[ ${#tmpfiles[@]} -eq 0 ] || rm -f "${tmpfiles[@]}"
	cleanup_scratch
}
trap cleanup_py EXIT
trap 'exit 143' TERM INT

py312=$(find_python 3.12)
py313=$(find_python 3.13)
if [ -z "$py312" ] && [ -z "$py313" ]; then
	skip "no CPython 3.12 or 3.13 with perf trampolines (pyenv root: $(pyenv root 2>/dev/null))"
fi
for v in 3.12:$py312 3.13:$py313; do
	if [ -z "${v#*:}" ]; then
		if [ "${CI:-}" = true ]; then
			fail "CPython ${v%%:*} not found (CI=true needs both 3.12 and 3.13)"
		else
			say "note: CPython ${v%%:*} not found, its runs are skipped"
		fi
	fi
done
say "python 3.12: ${py312:-none}; python 3.13: ${py313:-none}"

# libwork.so, compiled in its directory so DW_AT_name is "libwork.c".
(cd "$PYSRC" && ${CC:-cc} -O2 -g -fomit-frame-pointer -shared -fPIC -Wall \
	-o "$SCRATCH/libwork.so" libwork.c) || die "cannot build libwork.so"

# defline VAR NAME: VAR = the line of the one `def NAME(` of the workload.
defline() {
	local hits
	hits=$(grep -n -E "^[[:space:]]*def $2\(" "$WL" | cut -d: -f1)
	case $hits in '' | *[!0-9]*) die "want one 'def $2(' in $WL, got lines: ${hits//$'\n'/ }" ;; esac
	printf -v "$1" '%s' "$hits"
}
for f in main main_loop main_leaf rec_worker recurse nested_worker method deeper \
	gen_worker consume produce spawn_child child_work child_leaf; do
	defline "L_$f" "$f"
done

# write_spec PYTHON FORK(0|1) FILE: the expected chain of each C function
# (chains.py's SPEC); threading.py's first lines from the interpreter itself.
# shellcheck disable=SC2154 # the L_* lines are set by defline
write_spec() {
	local pyx=$1 fork=$2 f=$3 tfile lb li lr i
	IFS=$'\t' read -r tfile lb li lr < <("$pyx" -c 'import threading as t; T = t.Thread
print(t.__file__, *(f.__code__.co_firstlineno for f in (T._bootstrap, T._bootstrap_inner, T.run)), sep="\t")') ||
		die "$pyx: cannot read threading.py's lines"
	fr() { printf 'frame\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4"; }
	boot() {
		fr _bootstrap Thread._bootstrap "$tfile" "$lb"
		fr _bootstrap_inner Thread._bootstrap_inner "$tfile" "$li"
		fr run Thread.run "$tfile" "$lr"
	}
	{
		printf 'chain\thash_rec\tw-rec\n'
		boot
		fr rec_worker rec_worker "$WL" "$L_rec_worker"
		for ((i = 0; i < DEPTH; i++)); do fr recurse recurse "$WL" "$L_recurse"; done
		printf 'chain\thash_nested\tw-nested\n'
		boot
		fr nested_worker nested_worker "$WL" "$L_nested_worker"
		fr method Outer.Inner.method "$WL" "$L_method"
		fr deeper Outer.Inner.deeper "$WL" "$L_deeper"
		printf 'chain\thash_gen\tw-gen\n'
		boot
		fr gen_worker gen_worker "$WL" "$L_gen_worker"
		fr consume consume "$WL" "$L_consume"
		fr produce produce "$WL" "$L_produce"
		printf 'chain\thash_main\tpy-main\n'
		fr '<module>' '<module>' "$WL" 1
		fr main main "$WL" "$L_main"
		fr main_loop main_loop "$WL" "$L_main_loop"
		fr main_leaf main_leaf "$WL" "$L_main_leaf"
		if [ "$fork" = 1 ]; then
			printf 'chain\thash_child\tpy-child\n'
			fr '<module>' '<module>' "$WL" 1
			fr main main "$WL" "$L_main"
			fr spawn_child spawn_child "$WL" "$L_spawn_child"
			fr child_work child_work "$WL" "$L_child_work"
			fr child_leaf child_leaf "$WL" "$L_child_leaf"
		fi
	} >"$f"
}

# pct NUM DEN: NUM/DEN in percent, one decimal.
pct() { awk -v n="$1" -v d="$2" 'BEGIN { printf "%.1f", d ? 100 * n / d : 0 }'; }
# ge_pct NUM DEN MIN: NUM/DEN >= MIN%, and DEN > 0.
ge_pct() { [ "$2" -gt 0 ] && [ $(($1 * 100)) -ge $(($3 * $2)) ]; }
# field FILE KEY: the number after KEY on chains.py's first line.
field() { awk -v k="$2" 'NR == 1 { for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }' "$1"; }

# record_py TAG PYTHON XOPT CALLGRAPH [nofork]: run the workload under perf
# into $SCRATCH/TAG.data; perf script's view into TAG.perf while the maps are
# in /tmp; then the maps move to $SCRATCH/maps-TAG.  Sets PIDS.
record_py() {
	local tag=$1 pyx=$2 xopt=$3 cg=$4 nofork=${5:-} pid f
	local data=$SCRATCH/$tag.data out=$SCRATCH/$tag.out
	# shellcheck disable=SC2086 # $cg is two words for dwarf
	"$PERF" record -N -F 999 $cg -o "$data" -- "$pyx" -X "$xopt" "$WL" \
		"$SCRATCH/libwork.so" "$RUN_S" $nofork >"$out" 2>"$SCRATCH/$tag.perf.log" ||
		{ cat "$SCRATCH/$tag.perf.log"; die "perf record ($tag) failed"; }
	PIDS=$(awk '$1 == "parent" || $1 == "child" { print $2 }' "$out")
	for pid in $PIDS; do
		tmpfiles+=("/tmp/perf-$pid.map" "/tmp/jit-$pid.dump")
	done
	grep -q '^parent [0-9]' "$out" || die "workload ($tag) did not run: $(cat "$out" "$SCRATCH/$tag.perf.log")"
	"$PERF" script -i "$data" -F comm,tid,ip,sym,dso >"$SCRATCH/$tag.perf" 2>"$SCRATCH/$tag.perf.err" ||
		{ cat "$SCRATCH/$tag.perf.err"; die "perf script ($tag) failed"; }
	mkdir -p "$SCRATCH/maps-$tag"
	for pid in $PIDS; do
		for f in /tmp/perf-$pid.map /tmp/jit-$pid.dump; do
			[ -f "$f" ] || continue
			cp "$f" "$SCRATCH/maps-$tag/" && rm -f "$f"
		done
	done
}

# check_dwarf TAG PYTHON XOPT [nofork]: the dwarf run and its checks.
check_dwarf() {
	local tag=$1 pyx=$2 xopt=$3 nofork=${4:-} ver fork=1 spec a b cs full pfull
	local maps=$SCRATCH/maps-$tag out=$SCRATCH/$tag.folded style opt n m
	[ -n "$nofork" ] && fork=0
	ver=$("$pyx" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	local what="python $ver -X $xopt"
	say "== $what, --call-graph dwarf,65528"
	record_py "$tag" "$pyx" "$xopt" "--call-graph dwarf,65528" "$nofork"
	spec=$SCRATCH/$tag.spec
	write_spec "$pyx" "$fork" "$spec"
	ls "$maps"/* >/dev/null 2>&1 || fail "$what: no perf map or jitdump written for pids $PIDS"

	convert "$out" -i "$SCRATCH/$tag.data" --threads --no-kernel --perf-map-dir "$maps" || return
	"$PY" "$CHAINS" "$spec" folded "$out" >"$out.rate" || die "chains.py failed"
	"$PY" "$CHAINS" "$spec" perf "$SCRATCH/$tag.perf" >"$SCRATCH/$tag.perf.rate" || die "chains.py failed"
	cs=$(field "$out.rate" csamples) full=$(field "$out.rate" full)
	a=$(field "$SCRATCH/$tag.perf.rate" csamples) pfull=$(field "$SCRATCH/$tag.perf.rate" full)
	b=$(field "$SCRATCH/$tag.perf.rate" anypy)
	say "$what: perfspy $(pct "$full" "$cs")% of $cs C-leaf samples have the full Python chain;" \
		"perf script $(pct "$pfull" "$a")% of $a ($(pct "$b" "$a")% show some py:: frame)"
	if ge_pct "$full" "$cs" "$MIN_RATE" && [ "$cs" -ge 200 ]; then
		pass "$what: full-chain rate $(pct "$full" "$cs")% >= $MIN_RATE% ($full/$cs)"
	else
		fail "$what: full-chain rate $(pct "$full" "$cs")% ($full/$cs), want >= $MIN_RATE% of >= 200"
		grep '^miss' "$out.rate" | cut -c1-1500
	fi
	while read -r _ c _ n _ m; do
		if ge_pct "$m" "$n" "$MIN_CHAIN" && [ "$n" -ge 20 ]; then
			pass "$what: $c chain $(pct "$m" "$n")% ($m/$n)"
		else
			fail "$what: $c chain $(pct "$m" "$n")% ($m/$n), want >= $MIN_CHAIN% of >= 20"
		fi
	done < <(grep '^chain ' "$out.rate")
	if [ "$cs" -ge "$a" ]; then
		pass "$what: perfspy sees $cs C-leaf samples, perf script $a"
	else
		fail "$what: perfspy sees $cs C-leaf samples, perf script $a"
	fi

	# perfspy info: unwinding statistics.
	"$PERFSPY" info --json --perf-map-dir "$maps" "$SCRATCH/$tag.data" >"$SCRATCH/$tag.info" 2>/dev/null ||
		fail "$what: perfspy info --json failed"
	read -r a b c n < <("$PY" -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["unwound"], d["unwound_to_root"], d["unwound_cut"], d["unwound_lost"])' "$SCRATCH/$tag.info" 2>/dev/null) ||
		a=0
	say "$what: perfspy info: $b of $a stacks unwound to the thread root ($(pct "$b" "$a")%), $c cut, $n lost"
	if ge_pct "$b" "$a" "$MIN_RATE"; then
		pass "$what: unwound_to_root $(pct "$b" "$a")% >= $MIN_RATE%"
	else
		fail "$what: unwound_to_root $b of $a ($(pct "$b" "$a")%), want >= $MIN_RATE%"
	fi

	# The named features, one by one, on the C-leaf stacks.
	local rec="hash_rec (libwork.c:[0-9]*)"
	n=$(awk -v s="recurse (workload.py:$L_recurse)" -v d="$DEPTH" '
		/;hash_rec \(libwork\.c:[0-9]+\) [0-9]+$/ {
			t += $NF
			r = 0
			for (i = split($0, f, ";"); i > 0; i--) r += f[i] == s
			if (r == d) k += $NF
		}
		END { print k + 0, t + 0 }' "$out")
	read -r m n <<<"$n"
	if ge_pct "$m" "$n" "$MIN_RATE"; then
		pass "$what: recursion: $m of $n $rec samples have exactly $DEPTH recurse frames"
	else
		fail "$what: recursion: $m of $n $rec samples have exactly $DEPTH recurse frames"
	fi
	m=$(grep -c ";consume (workload.py:$L_consume);produce (workload.py:$L_produce);.*;hash_gen (libwork.c:[0-9]*) [0-9]*$" "$out")
	if [ "$m" -gt 0 ]; then
		pass "$what: generator frame: consume;produce;...;hash_gen"
	else
		fail "$what: no consume (workload.py:$L_consume);produce (workload.py:$L_produce);...;hash_gen stack"
	fi
	if [ "$fork" = 1 ]; then
		n=$(grep -c '^thread ([0-9]*): py-child;' "$out")
		m=$(grep '^thread ([0-9]*): py-child;' "$out" | grep -c '(anon)')
		if [ "$n" -gt 0 ] && [ "$m" -eq 0 ] &&
			grep -q "^thread ([0-9]*): py-child;<module> (workload.py:1);main (workload.py:$L_main);spawn_child (workload.py:$L_spawn_child);child_work (workload.py:$L_child_work);child_leaf (workload.py:$L_child_leaf);.*;hash_child (libwork.c:[0-9]*) [0-9]*$" "$out"; then
			pass "$what: fork child: inherited <module>;main;spawn_child named through the parent's map, no (anon) in its $n distinct stacks"
		else
			fail "$what: fork child: $m of $n py-child stacks have (anon) frames, or no <module>;main;spawn_child;child_work;child_leaf;...;hash_child"
			grep '^thread ([0-9]*): py-child;' "$out" | sort -t' ' -k2 | head -3 | cut -c1-600
		fi
	fi

	# The output options: each one's chains at the same rate.
	for opt in --qualname --nolineno --python-only --keep-interpreter --full-filenames; do
		case $opt in
		--qualname) style=qualname ;;
		--nolineno) style=nolineno ;;
		--python-only) style=pyonly ;;
		--keep-interpreter) style=keep ;;
		--full-filenames) style=full ;;
		esac
		convert "$out.$style" -i "$SCRATCH/$tag.data" --threads --no-kernel \
			--perf-map-dir "$maps" "$opt" || continue
		"$PY" "$CHAINS" "$spec" folded "$out.$style" "$style" >"$out.$style.rate" || die "chains.py failed"
		n=$(field "$out.$style.rate" csamples) m=$(field "$out.$style.rate" full)
		if ge_pct "$m" "$n" "$MIN_RATE" && [ "$n" -ge "$cs" ]; then
			pass "$what: $opt: $(pct "$m" "$n")% of $n stacks have the full chain"
		else
			fail "$what: $opt: $(pct "$m" "$n")% ($m/$n) have the full chain (want >= $MIN_RATE% of >= $cs)"
			grep '^miss' "$out.$style.rate" | cut -c1-1500
		fi
	done
	if grep -q "Outer\.Inner\.method (workload.py:$L_method);Outer\.Inner\.deeper (workload.py:$L_deeper);" "$out.qualname" &&
		! grep -q ";method (workload.py:" "$out.qualname"; then
		pass "$what: --qualname: Outer.Inner.method (workload.py:$L_method)"
	else
		fail "$what: --qualname: no Outer.Inner.method (workload.py:$L_method);Outer.Inner.deeper, or a bare 'method'"
	fi
	if grep -q '\.py:[0-9]*)' "$out.nolineno"; then
		fail "$what: --nolineno: Python frames still carry lines: $(grep -o '[^;]*\.py:[0-9]*)' "$out.nolineno" | head -1)"
	elif grep -q ';method (workload.py);deeper (workload.py);' "$out.nolineno"; then
		pass "$what: --nolineno: method (workload.py);deeper (workload.py)"
	else
		fail "$what: --nolineno: no method (workload.py);deeper (workload.py)"
	fi
	n=$(sed 's/ [0-9]*$//' "$out.pyonly" | tr ';' '\n' | grep -v '^thread (' |
		grep -c -v -E '\(([^()]*\.py|<[^<>]*>)(:[0-9]+)?\)$')
	if [ "$n" -eq 0 ] && [ -s "$out.pyonly" ]; then
		pass "$what: --python-only: Python frames only"
	else
		fail "$what: --python-only: $n non-Python frames, e.g. $(sed 's/ [0-9]*$//' "$out.pyonly" | tr ';' '\n' |
			grep -v '^thread (' | grep -v -E '\(([^()]*\.py|<[^<>]*>)(:[0-9]+)?\)$' | head -1)"
	fi
	# Only in stacks with Python frames: start-up code runs before the
	# trampolines exist, and its stacks keep their interpreter frames.
	local cleaf=';hash_[a-z]* (libwork\.c:[0-9]*) [0-9]*$'
	n=$(grep "$cleaf" "$out.keep" | grep -c '_PyEval_EvalFrameDefault (')
	m=$(grep "$cleaf" "$out" | grep -c '_PyEval_EvalFrameDefault (')
	if [ "$n" -gt 0 ] && [ "$m" -eq 0 ]; then
		pass "$what: C-leaf stacks: --keep-interpreter keeps _PyEval_EvalFrameDefault ($n stacks), the default drops it"
	else
		fail "$what: C-leaf stacks with _PyEval_EvalFrameDefault: $n with --keep-interpreter (want > 0), $m without (want 0)"
	fi
	# Thread roots as py-spy raw has them (issue 15): a stack with Python
	# frames starts at its outermost one (`_bootstrap (threading.py:N)`
	# for a thread), no clone3;start_thread;thread_run above it;
	# --keep-interpreter keeps them.
	read -r n m < <(root_python "$out")
	read -r a b < <(root_python "$out.keep")
	if [ "$n" -gt 0 ] && [ "$m" -eq 0 ] && [ "$b" -gt 0 ] &&
		grep -q '^thread ([0-9]*)[^;]*;_bootstrap (threading.py:[0-9]*);' "$out"; then
		pass "$what: all $n stacks with Python frames start at a Python frame (_bootstrap for threads); --keep-interpreter: $b of $a start natively"
	else
		fail "$what: $m of $n stacks with Python frames start with a native frame (want 0), $b of $a with --keep-interpreter (want > 0): $(grep '_bootstrap (threading' "$out" | grep -v '^thread ([0-9]*)[^;]*;_bootstrap' | head -1 | cut -c1-300)"
	fi
	if grep -q ";method ($WL:$L_method);deeper ($WL:$L_deeper);" "$out.full"; then
		pass "$what: --full-filenames: method ($WL:$L_method)"
	else
		fail "$what: --full-filenames: no method ($WL:$L_method);deeper (...)"
	fi

	# --perf-map-dir is what named the frames: /tmp no longer has our maps.
	if convert "$out.nomaps" -i "$SCRATCH/$tag.data" --threads --no-kernel; then
		"$PY" "$CHAINS" "$spec" folded "$out.nomaps" >"$out.nomaps.rate" || die "chains.py failed"
		m=$(field "$out.nomaps.rate" full)
		if [ "$m" -eq 0 ]; then
			pass "$what: without --perf-map-dir (maps gone from /tmp) no stack has the chain"
		else
			fail "$what: without --perf-map-dir $m stacks still have the chain: were maps left in /tmp?"
		fi
	fi
	rm -f "$SCRATCH/$tag.data"   # about 250 MB each
}

# root_python FILE: "N M": N stacks of FILE (with thread roots) hold a
# Python frame, M of them have a non-Python frame first under the root.
root_python() {
	"$PY" - "$1" <<'PYEOF'
import re, sys
py = re.compile(r"\(([^()]*\.pyw?|<[^<>]*>)(:[0-9]+)?\)$")
n = m = 0
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    frames = line.rstrip("\n").rsplit(" ", 1)[0].split(";")
    if frames and frames[0].startswith("thread ("):
        frames = frames[1:]
    if any(py.search(f) for f in frames):
        n += 1
        m += not py.search(frames[0])
print(n, m)
PYEOF
}

# check_fp TAG PYTHON: the -g run; perfspy must not be worse than perf script.
check_fp() {
	local tag=$1 pyx=$2 ver spec out=$SCRATCH/$1.folded k
	local -A s p
	ver=$("$pyx" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	local what="python $ver -X perf -g"
	say "== $what (frame pointers)"
	record_py "$tag" "$pyx" perf -g
	spec=$SCRATCH/$tag.spec
	write_spec "$pyx" 1 "$spec"
	convert "$out" -i "$SCRATCH/$tag.data" --threads --no-kernel --keep-interpreter \
		--perf-map-dir "$SCRATCH/maps-$tag" || return
	"$PY" "$CHAINS" "$spec" folded "$out" keep >"$out.rate" || die "chains.py failed"
	"$PY" "$CHAINS" "$spec" perf "$SCRATCH/$tag.perf" >"$SCRATCH/$tag.perf.rate" || die "chains.py failed"
	for k in csamples full anypy frames; do
		s[$k]=$(field "$out.rate" $k)
		p[$k]=$(field "$SCRATCH/$tag.perf.rate" $k)
	done
	say "$what: perfspy: ${s[csamples]} C-leaf samples, $(pct "${s[full]}" "${s[csamples]}")% full chain," \
		"$(pct "${s[anypy]}" "${s[csamples]}")% with a Python frame," \
		"$(awk -v f="${s[frames]}" -v n="${s[csamples]}" 'BEGIN { printf "%.2f", n ? f / n : 0 }') frames/sample"
	say "$what: perf script: ${p[csamples]} C-leaf samples, $(pct "${p[full]}" "${p[csamples]}")% full chain," \
		"$(pct "${p[anypy]}" "${p[csamples]}")% with a Python frame," \
		"$(awk -v f="${p[frames]}" -v n="${p[csamples]}" 'BEGIN { printf "%.2f", n ? f / n : 0 }') frames/sample"
	if [ "${s[csamples]}" -lt 100 ] || [ "${s[csamples]}" -lt "${p[csamples]}" ]; then
		fail "$what: perfspy has ${s[csamples]} C-leaf samples, perf script ${p[csamples]} (want >= 100 and >=)"
		return
	fi
	# Shares compared by cross-multiplying (perfspy k/n >= perf k'/n').
	for k in full anypy frames; do
		if [ $((s[$k] * p[csamples])) -ge $((p[$k] * s[csamples])) ]; then
			pass "$what: $k per C-leaf sample: perfspy >= perf script"
		else
			fail "$what: $k per C-leaf sample: perfspy ${s[$k]}/${s[csamples]} < perf script ${p[$k]}/${p[csamples]}"
		fi
	done
}

t0=$(date +%s)
if [ -n "$py312" ]; then
	check_dwarf py312-perf "$py312" perf
fi
if [ -n "$py313" ]; then
	check_dwarf py313-perf "$py313" perf
	# CPython 3.13.0's jitdump is written through stdio: a forked child
	# flushes the parent's buffered bytes into the parent's dump, which
	# the parent writes again later, so the dump is corrupt from that point
	# (docs/cpython-perf.md §1.5; perf inject fails on it too).  No fork with perf_jit.
	check_dwarf py313-jit "$py313" perf_jit nofork
fi
for v in 312:$py312 313:$py313; do
	[ -n "${v#*:}" ] && check_fp "py${v%%:*}-fp" "${v#*:}"
done
say "time: $(($(date +%s) - t0)) s"
if [ "$nfail" -gt 0 ] && [ -n "${E2E_DATA:-}" ]; then
	# The small artefacts, for a look after a failure (the perf.data files
	# of the dwarf runs are too big to keep).
	mkdir -p "$E2E_DATA/python" &&
		cp -r "$SCRATCH"/*.folded* "$SCRATCH"/*.spec "$SCRATCH"/*.perf* "$SCRATCH"/*.info \
			"$SCRATCH"/maps-* "$E2E_DATA/python/" 2>/dev/null
	say "outputs kept in $E2E_DATA/python"
fi
finish
