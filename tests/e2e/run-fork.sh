#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: a forked child (src/fork.c) resolves symbols through the maps it
# inherited from its parent; --pid splits the two processes exactly as
# perf counts them; --threads names both.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
scratch

record fork fp
data=$REC
out=${data%.data}.out
say "recording: $data"
ppid=$(awk '$1 == "parent" { print $2 }' "$out")
cpid=$(awk '$1 == "child" { print $2 }' "$out")
[ -n "$ppid" ] && [ -n "$cpid" ] || die "workload did not print its pids: $(cat "$out")"
say "parent $ppid, child $cpid"

convert "$SCRATCH/out" -i "$data" || finish
check_format "$SCRATCH/out" "fork"
expect_globs "$SCRATCH/out" fork 'main ('

# perf's per-pid sample counts.
"$PERF" script -i "$data" -F pid 2>/dev/null | awk 'NF { c[$1]++ } END { for (p in c) print p, c[p] }' >"$SCRATCH/perpid"
nall=$(perf_samples "$data")
nout=$(total "$SCRATCH/out")
if [ "$nout" -eq "$nall" ]; then
	pass "sample total $nout = perf report -D count"
else
	fail "sample total $nout, perf report -D counts $nall"
fi

sum=0
for who in parent:$ppid:child child:$cpid:parent; do
	IFS=: read -r role pid other <<<"$who"
	want=$(awk -v p="$pid" '$1 == p { print $2 }' "$SCRATCH/perpid")
	convert "$SCRATCH/$role" -i "$data" --pid "$pid" || continue
	got=$(total "$SCRATCH/$role")
	sum=$((sum + got))
	if [ "$got" = "${want:-0}" ] && [ "$got" -gt 200 ]; then
		pass "--pid $pid ($role): $got samples = perf's count for the pid"
	else
		fail "--pid $pid ($role): $got samples, perf counts ${want:-0} (want equal, > 200)"
	fi
	if grep -q "${other}_work" "$SCRATCH/$role"; then
		fail "--pid $pid ($role) output has ${other}_work frames"
	elif grep -q "main (fork.c:[0-9]*);${role}_work (fork.c:[0-9]*);${role}_spin (fork.c:[0-9]*) " "$SCRATCH/$role"; then
		pass "--pid $pid ($role) has only its own stacks"
	else
		fail "--pid $pid ($role) lacks main;${role}_work;${role}_spin"
	fi
done
if [ "$sum" -eq "$nout" ]; then
	pass "--pid parent + --pid child = all $nout samples"
else
	fail "--pid parent + --pid child = $sum, all samples = $nout"
fi

# --threads: both processes' main threads appear with their own tid.
if convert "$SCRATCH/threads" -i "$data" --threads; then
	for who in parent:$ppid child:$cpid; do
		IFS=: read -r role pid <<<"$who"
		if grep -q "^thread ($pid): [^;]*;.*;main (fork.c:[0-9]*);${role}_work (fork.c:[0-9]*);${role}_spin (fork.c:[0-9]*) [0-9]*$" "$SCRATCH/threads"; then
			pass "--threads: thread ($pid) runs ${role}_work"
		else
			fail "--threads: no 'thread ($pid): COMM;...;${role}_work;${role}_spin' line"
		fi
	done
fi
finish
