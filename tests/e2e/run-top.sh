#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 10): `perfspy top` in a terminal (tmux), on CPython 3.12 running
# src/py/workload.py (four named threads, each a fixed Python chain ending in
# its own C function of libwork.so).
#   screen     `top --pid` of the running workload (python -X perf): within
#              3 s of the start the pane shows the header, the column titles,
#              and the rows `LEAF_PY (workload.py:LINE) -> hash_*` of the four
#              threads, with their def lines; the header counts 4 threads
#   keys       t shows `[TID w-rec] recurse (...) -> hash_rec`; s names the
#              sort column; q exits, and the attached workload runs on
#   restored   after q the pane is the shell's again: top's header gone, the
#              alternate screen left (tmux's alternate_on is 0), the exit
#              status 0
#   pipe       stdout not a terminal: tables printed per interval, and the
#              program's end ends top
# PY312 overrides the interpreter.
. "$(dirname "$0")/lib.sh"

need_perfspy
scratch
command -v tmux >/dev/null || skip "no tmux (scripts/install-deps.sh installs it)"

PYSRC=$E2E_SRC/py
WL=$PYSRC/workload.py

need_live_py312
(cd "$PYSRC" && ${CC:-cc} -O2 -g -fomit-frame-pointer -shared -fPIC \
	-o "$SCRATCH/libwork.so" libwork.c) || die "cannot build libwork.so"

L() { grep -n "^ *def $1(" "$WL" | cut -d: -f1; }
declare -A want=(
	[hash_rec]="recurse (workload.py:$(L recurse)) -> hash_rec"
	[hash_nested]="deeper (workload.py:$(L deeper)) -> hash_nested"
	[hash_gen]="produce (workload.py:$(L produce)) -> hash_gen"
	[hash_main]="main_leaf (workload.py:$(L main_leaf)) -> hash_main"
)

SOCK=$SCRATCH/tmux.sock
T=(tmux -S "$SOCK")
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	"${T[@]}" kill-server 2>/dev/null
	[ -n "${WPID:-}" ] && kill "$WPID" 2>/dev/null
	cleanup_scratch
}
trap cleanup EXIT

# A shell in a 160x40 pane; top runs in it and leaves its status in a file.
"${T[@]}" -f /dev/null new-session -d -s top -x 160 -y 40 "bash --norc --noprofile" ||
	die "tmux new-session"
"${T[@]}" set-option -t top status off >/dev/null
"${T[@]}" send-keys -t top "PS1='READY\$ '; clear" Enter
sleep 0.5
# The issue's case: attach to a busy process that writes a perf map.
"$PY12" -X perf "$WL" "$SCRATCH/libwork.so" 60 nofork >"$SCRATCH/wl.out" 2>&1 &
WPID=$!
sleep 1
cmd="$PERFSPY top -p $WPID 2>$SCRATCH/top.err; echo \"TOP-EXIT \$?\""
"${T[@]}" send-keys -t top "$cmd" Enter

pane() { "${T[@]}" capture-pane -p -t top; }
start=$(date +%s.%N)
first=
ok=
for _ in $(seq 1 150); do
	sleep 0.1
	pane >"$SCRATCH/screen"
	if [ -z "$first" ] && grep -q '^perfspy top: pid' "$SCRATCH/screen" &&
		grep -q ' -> ' "$SCRATCH/screen"; then
		first=$(date +%s.%N)
	fi
	[ -n "$first" ] || continue
	ok=1
	for k in "${!want[@]}"; do
		grep -qF -- "${want[$k]}" "$SCRATCH/screen" || ok=
	done
	grep -q 'threads: 4 ' "$SCRATCH/screen" || ok=
	[ -n "$ok" ] && break
	awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a > 3) }' && break
done
now=$(date +%s.%N)
say "--- screen ---"
cat "$SCRATCH/screen"
say "--------------"
if [ -z "$first" ]; then
	fail "no table with a 'PY -> native' row within 3 s"
else
	after=$(awk -v a="$start" -v b="$first" 'BEGIN { printf "%.1f", b - a }')
	[ -n "$ok" ] && pass "table with the four threads' rows and 'threads: 4' (first table at $after s, full $(awk -v a="$start" -v b="$now" 'BEGIN { printf "%.1f", b - a }') s)" ||
		fail "within 3 s of the start: not all of ${want[*]} and 'threads: 4'"
fi
for h in '%Own' '%Total' 'OwnTime' 'TotalTime' 'Function (filename:line)'; do
	grep -qF -- "$h" "$SCRATCH/screen" || fail "column title '$h' missing"
done
grep -q '^categories: .*other native' "$SCRATCH/screen" &&
	pass "header: report categories" || fail "no categories line with 'other native'"

"${T[@]}" send-keys -t top t
sleep 1.5
pane >"$SCRATCH/screen.t"
grep -qE "\[[0-9]+ w-rec\] recurse \(workload.py:$(L recurse)\) -> hash_rec" "$SCRATCH/screen.t" &&
	grep -q '\[threads\]' "$SCRATCH/screen.t" &&
	pass "t: per-thread rows ([TID w-rec] recurse ... -> hash_rec)" ||
	{ fail "t: no per-thread row for w-rec"; cat "$SCRATCH/screen.t"; }
"${T[@]}" send-keys -t top s
sleep 0.5
pane | grep -q 'sort: %Total' && pass "s: sort column %Total" || fail "s: sort column not %Total"

[ "$("${T[@]}" display -p -t top '#{alternate_on}')" = 1 ] &&
	pass "top runs on the alternate screen" || fail "alternate screen not on while top runs"
"${T[@]}" send-keys -t top q
code=
for _ in $(seq 1 50); do
	sleep 0.2
	code=$(pane | sed -n 's/^TOP-EXIT \([0-9]*\)$/\1/p' | tail -1)
	[ -n "$code" ] && break
done
pane >"$SCRATCH/after"
kill -0 "$WPID" 2>/dev/null && pass "the attached process runs on after q" ||
	fail "the attached process ended with top"
[ "$code" = 0 ] && pass "q: top exited with 0" ||
	{ fail "q: top did not exit 0 (got '${code:-nothing}'): $(cat "$SCRATCH/top.err")"; }
[ "$("${T[@]}" display -p -t top '#{alternate_on}')" = 0 ] &&
	pass "alternate screen left" || fail "alternate screen still on after q"
if grep -q '^perfspy top: pid\|%Own' "$SCRATCH/after"; then
	fail "top's table still on the shell's screen after q"; cat "$SCRATCH/after"
else
	pass "the shell's screen is back (no table left on it)"
fi
# The terminal's modes are the shell's again: echo on, canonical.
"${T[@]}" send-keys -t top "stty -a | tr ' ' '\\n' | grep -x -e echo -e icanon | tr '\\n' ' '; echo" Enter
sleep 0.5
pane | grep -qx 'echo icanon *\|icanon echo *' && pass "terminal modes restored (echo, icanon)" ||
	fail "terminal modes not restored: $(pane | tail -3)"

# Not a terminal: one table per interval, and the program's end ends top.
timeout 30 "$PERFSPY" top -n 5 -i 0.5 -- "$PY12" "$WL" "$SCRATCH/libwork.so" 3 nofork \
	>"$SCRATCH/pipe.out" 2>"$SCRATCH/pipe.err"
rc=$?
n=$(grep -c '^perfspy top: pid' "$SCRATCH/pipe.out")
[ "$rc" = 0 ] && [ "$n" -ge 2 ] && grep -qF -- "${want[hash_main]}" "$SCRATCH/pipe.out" &&
	! grep -q $'\033' "$SCRATCH/pipe.out" &&
	pass "pipe: $n tables, no escape sequences, exit 0 when the program ended" ||
	fail "pipe: rc $rc, $n tables: $(head -c 600 "$SCRATCH/pipe.out") $(cat "$SCRATCH/pipe.err")"
finish
