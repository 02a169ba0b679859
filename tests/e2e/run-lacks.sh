#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 13): what is missing is said, once per cause. A shell runs two
# CPython 3.12 processes under `perf record -g`: one with -X perf (it
# writes a perf map), one with -I and PYTHONPERFSUPPORT=1 (-I ignores the
# variable: no perf map, as in CPython's own test suite). Then:
#   - convert warns once that 1 process ran Python without a perf map,
#     with its sample share; -v names the -I process (and only it), not
#     the C program the -X perf one runs as a subprocess (a fork of
#     Python that exec'd: the old image's libpython is not its own);
#   - `info` lists it under "lacks", and `info --json` counts it;
#   - pyenv's CPython is built without frame pointers, so most -g user
#     stacks end at 0x0 or an unmapped address: convert and info say to
#     record with --call-graph dwarf.
# PY312 overrides the interpreter.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

py=${PY312:-}
if [ -z "$py" ]; then
	root=$(pyenv root 2>/dev/null) || root=${PYENV_ROOT:-$HOME/.pyenv}
	for p in $(printf '%s\n' "$root"/versions/3.12.*/bin/python3.12 | sort -V); do
		[ -x "$p" ] && py=$p
	done
	[ -n "$py" ] || py=$(command -v python3.12 2>/dev/null) || true
fi
if [ -z "$py" ] || ! "$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
	skip "no CPython 3.12 (PY312)"
fi

loop='import os, time
print(os.getpid(), flush=True)
end = time.time() + 0.4
while time.time() < end:
    sum(range(1000))'
build chain
sub='import subprocess, sys
subprocess.run([sys.argv[1], "0.3"], check=True, stdout=subprocess.DEVNULL)'
cat >"$SCRATCH/two.sh" <<EOF2
"$py" -X perf -c '$loop
$sub' "$E2E_BIN/chain" >"$SCRATCH/perf.pid"
PYTHONPERFSUPPORT=1 "$py" -I -c '$loop' >"$SCRATCH/isolated.pid"
EOF2
data=$SCRATCH/two.data
"$PERF" record -q -N -F 999 -g -o "$data" -- bash "$SCRATCH/two.sh" >/dev/null 2>"$SCRATCH/rec.log" ||
	die "perf record failed: $(tail -2 "$SCRATCH/rec.log")"
pid_perf=$(cat "$SCRATCH/perf.pid")
pid_iso=$(cat "$SCRATCH/isolated.pid")
tmpmaps=("/tmp/perf-$pid_perf.map")
# A perf map of the -I process's pid older than this run is another
# process's, left in /tmp by a run killed before it cleaned up (pids come
# round): perfspy would rightly read it. One written since would be the
# -I process's own, and stays for the checks below to catch.
stale=/tmp/perf-$pid_iso.map
if [ -e "$stale" ] && ! [ "$stale" -nt "$SCRATCH/two.sh" ]; then
	say "  note  removed $stale, left by an earlier process of pid $pid_iso"
	rm -f "$stale"
fi

"$PERFSPY" convert -i "$data" >/dev/null 2>"$SCRATCH/warn" || die "convert failed"
"$PERFSPY" convert -v -i "$data" >/dev/null 2>"$SCRATCH/verbose" || die "convert -v failed"
rm -f "${tmpmaps[@]}"

n=$(grep -c 'ran Python without a perf map' "$SCRATCH/warn")
if [ "$n" = 1 ] && grep -q '^perfspy: warning: 1 process ran Python without a perf map ([0-9.]*% of samples).*-X perf' "$SCRATCH/warn"; then
	pass "convert: one note for the process without a perf map ($(grep -o '([0-9.]*% of samples)' "$SCRATCH/warn"))"
else
	fail "convert: perf map note said $n times: $(cat "$SCRATCH/warn")"
fi
if grep -q "process $pid_iso (python3.12): ran Python, no perf map" "$SCRATCH/verbose" &&
	! grep -q "process $pid_perf (" "$SCRATCH/verbose" &&
	! grep -q "(chain): ran Python" "$SCRATCH/verbose"; then
	pass "-v: names the -I process $pid_iso, not the -X perf one nor its subprocess chain"
else
	fail "-v: wrong processes named: $(grep 'no perf map' "$SCRATCH/verbose")"
fi
if grep -q 'frame-pointer user stacks end at 0x0 or an unmapped address.*--call-graph dwarf' "$SCRATCH/warn"; then
	pass "convert: -g stacks ending at 0x0 noted ($(grep -o '[0-9.]*% of frame-pointer' "$SCRATCH/warn"))"
else
	fail "convert: no note on -g stacks ending at 0x0"
fi

# info runs without the maps (removed above): both processes now lack one;
# the counts must still be right for the one that never had it.
"$PERFSPY" info "$data" >"$SCRATCH/info.txt" 2>"$SCRATCH/info.err" || die "info failed"
"$PERFSPY" info -v "$data" >/dev/null 2>"$SCRATCH/info-v.err" || die "info -v failed"
if grep -q 'ran Python without a perf map' "$SCRATCH/info.err"; then
	fail "info: the note is on stderr too (said twice)"
else
	pass "info: the note only under lacks, not again on stderr"
fi
if grep -q "process $pid_iso (python3.12): ran Python, no perf map" "$SCRATCH/info-v.err"; then
	pass "info -v: names process $pid_iso"
else
	fail "info -v: does not name process $pid_iso: $(head -3 "$SCRATCH/info-v.err")"
fi
"$PERFSPY" info --json "$data" >"$SCRATCH/info.json" 2>/dev/null || die "info --json failed"
if sed -n '/^lacks:/,$p' "$SCRATCH/info.txt" | grep -q 'ran Python without a perf map' &&
	sed -n '/^lacks:/,$p' "$SCRATCH/info.txt" | grep -q 'record with --call-graph dwarf'; then
	pass "info: both causes under lacks"
else
	fail "info: lacks is $(sed -n '/^lacks:/,$p' "$SCRATCH/info.txt" | tr '\n' '|')"
fi
got=$("$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["python_no_map_processes"], int(j["fp_stacks_bad"] * 5 > j["fp_stacks"] > 0))' "$SCRATCH/info.json")
if [ "$got" = "2 1" ]; then
	pass "info --json: 2 processes without a perf map once the map is gone, fp stacks counted"
else
	fail "info --json: python_no_map_processes, fp flag = $got, want 2 1"
fi
finish
