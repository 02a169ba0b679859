#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Tracepoint events: perfspy names them as perf does (sched:sched_switch,
# from the tracing data in file mode and from the pipe's TRACING_DATA
# record), counts their samples like perf, and --event selects them.
# tracefs is mounted for the recording if it is not (we run as root) and
# unmounted again afterwards.
. "$(dirname "$0")/lib.sh"

need_perfspy
need_perf
scratch
mounted=
if ! mountpoint -q /sys/kernel/tracing 2>/dev/null; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && mounted=1 ||
		skip "tracefs is not mounted and cannot be"
fi
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	[ -n "$mounted" ] && umount /sys/kernel/tracing 2>/dev/null
	cleanup_scratch
}
trap cleanup EXIT

# shellcheck disable=SC2016 # a script for the inner sh
work='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; sleep 0.05; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
file=$SCRATCH/tp.data
pipe=$SCRATCH/tp.pipe
$PERF record -q -e sched:sched_switch -e cpu-clock -g -o "$file" -- sh -c "$work" \
	>/dev/null 2>"$SCRATCH/rec.log" || die "perf record: $(tail -2 "$SCRATCH/rec.log")"
$PERF record -q -e sched:sched_switch -e cpu-clock -g -o - -- sh -c "$work" \
	>"$pipe" 2>"$SCRATCH/rec2.log" || die "perf record (pipe): $(tail -2 "$SCRATCH/rec2.log")"

for f in "$file" "$pipe"; do
	kind="file"
	[ "$f" = "$pipe" ] && kind=pipe
	json=$("$PERFSPY" info --json "$f") || { fail "$kind: info failed"; continue; }
	names=$(printf '%s' "$json" | $PY -c 'import json,sys; print(" ".join(e["name"] for e in json.load(sys.stdin)["events"]))')
	case " $names " in
	*" sched:sched_switch "*) pass "$kind: events named: $names" ;;
	*) fail "$kind: no sched:sched_switch among events: $names" ;;
	esac
	want=$($PERF script -i "$f" -F event 2>/dev/null | grep -c 'sched:sched_switch')
	got=$(printf '%s' "$json" | $PY -c 'import json,sys; print(sum(e["samples"] for e in json.load(sys.stdin)["events"] if e["name"]=="sched:sched_switch"))')
	[ "$got" = "$want" ] && [ "$want" -gt 0 ] &&
		pass "$kind: $got sched_switch samples, as perf script counts" ||
		fail "$kind: sched_switch samples: perfspy $got, perf script $want"
	out=$("$PERFSPY" convert -q -i "$f" --event sched:sched_switch) ||
		{ fail "$kind: convert --event sched:sched_switch failed"; continue; }
	total=$(printf '%s\n' "$out" | awk '{n += $NF} END {print n + 0}')
	[ "$total" = "$want" ] && pass "$kind: --event sched:sched_switch folds $total samples" ||
		fail "$kind: --event sched:sched_switch folded $total, want $want"
	# Switches happen inside the scheduler: the kernel stack is there.
	printf '%s\n' "$out" | grep -q '__schedule (\[kernel.kallsyms\])' &&
		pass "$kind: sched_switch stacks reach __schedule" ||
		fail "$kind: no __schedule frame in sched_switch stacks"
done
"$PERFSPY" convert -q -i "$file" --event sched:nope >/dev/null 2>"$SCRATCH/err"
rc=$?
[ $rc = 1 ] && grep -q "sched:nope" "$SCRATCH/err" && pass "unknown --event: exit 1, named in the message" ||
	fail "unknown --event: exit $rc, stderr: $(head -2 "$SCRATCH/err")"
finish
