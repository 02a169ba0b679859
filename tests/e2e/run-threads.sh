#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: named threads (src/threads.c).  --threads adds `thread (TID): COMM`
# root frames whose per-tid totals equal perf's; --tid, --comm and --pid
# select exactly the samples perf attributes to them; the plain output is the
# --threads output with the root frames removed.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
scratch

record threads fp
data=$REC
out=${data%.data}.out
say "recording: $data"
declare -A tid
while read -r name t; do tid[$name]=$t; done <"$out"
for n in main ps-alpha ps-beta ps-gamma; do
	[ -n "${tid[$n]:-}" ] || die "workload did not print the tid of $n: $(cat "$out")"
done
say "tids: main ${tid[main]}, alpha ${tid[ps-alpha]}, beta ${tid[ps-beta]}, gamma ${tid[ps-gamma]}"

convert "$SCRATCH/plain" -i "$data" || finish
convert "$SCRATCH/threads" -i "$data" --threads || finish
check_format "$SCRATCH/plain" "threads (plain)"
check_format "$SCRATCH/threads" "threads (--threads)"
expect_globs "$SCRATCH/threads" threads 'worker (\|main ('

# perf's view: samples per tid, per comm (comm at sample time).
"$PERF" script -i "$data" -F tid 2>/dev/null | awk 'NF { c[$1]++ } END { for (t in c) print t, c[t] }' | sort >"$SCRATCH/pertid.perf"
"$PERF" script -i "$data" -F comm 2>/dev/null | awk 'NF { c[$1]++ } END { for (t in c) print t, c[t] }' >"$SCRATCH/percomm.perf"
nall=$(perf_samples "$data")

# --threads root frames: every line has one, and per-tid totals match perf.
if grep -qv '^thread ([0-9]*): ' "$SCRATCH/threads"; then
	fail "--threads: line without a 'thread (TID): NAME' root: $(grep -v '^thread ([0-9]*): ' "$SCRATCH/threads" | head -1)"
else
	pass "--threads: every line has a thread root frame"
fi
sed -n 's/^thread (\([0-9]*\)): .* \([0-9]*\)$/\1 \2/p' "$SCRATCH/threads" |
	awk '{ c[$1] += $2 } END { for (t in c) print t, c[t] }' | sort >"$SCRATCH/pertid.ours"
if cmp -s "$SCRATCH/pertid.perf" "$SCRATCH/pertid.ours"; then
	pass "--threads: per-tid totals equal perf's ($(wc -l <"$SCRATCH/pertid.ours") threads)"
else
	fail "--threads: per-tid totals differ from perf's (tid count: perf | ours)"
	join -a1 -a2 -e- -o0,1.2,2.2 "$SCRATCH/pertid.perf" "$SCRATCH/pertid.ours" | head
fi
for n in ps-alpha ps-beta ps-gamma; do
	if grep -q "^thread (${tid[$n]}): $n;" "$SCRATCH/threads"; then
		pass "--threads: thread (${tid[$n]}) is named $n"
	else
		fail "--threads: no root frame 'thread (${tid[$n]}): $n'"
	fi
done

# Plain output = --threads output without the root frame, re-aggregated.
sed 's/^thread ([0-9]*): [^;]*;//' "$SCRATCH/threads" |
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); c[$0] += n } END { for (s in c) print s, c[s] }' |
	sort >"$SCRATCH/plain.want"
if cmp -s "$SCRATCH/plain.want" "$SCRATCH/plain"; then
	pass "plain output = --threads output minus root frames"
else
	fail "plain output differs from --threads output minus root frames"
	diff "$SCRATCH/plain.want" "$SCRATCH/plain" | head -5
fi

perf_tid() { awk -v t="$1" '$1 == t { print $2 }' "$SCRATCH/pertid.perf"; }
perf_comm() { awk -v c="$1" '$1 == c { print $2 }' "$SCRATCH/percomm.perf"; }

# check_only FILE WHAT WORK: all of FILE's work is WORK (no other *_work).
check_only() {
	local f=$1 what=$2 work=$3 w
	for w in main_work alpha_work beta_work gamma_work; do
		[ "$w" = "$work" ] && continue
		if grep -q ";$w (" "$f"; then
			fail "$what: has $w frames"
			return
		fi
	done
	if grep -q ";$work (threads.c:[0-9]*);" "$f"; then
		pass "$what: only $work stacks"
	else
		fail "$what: no $work stack"
	fi
}

# --tid: exactly perf's per-tid count, and only that thread's function.
for n in main:main_work ps-alpha:alpha_work ps-beta:beta_work ps-gamma:gamma_work; do
	IFS=: read -r name work <<<"$n"
	t=${tid[$name]}
	convert "$SCRATCH/tid-$t" -i "$data" --tid "$t" || continue
	got=$(total "$SCRATCH/tid-$t") want=$(perf_tid "$t")
	if [ "$got" = "${want:-0}" ] && [ "$got" -gt 100 ]; then
		pass "--tid $t ($name): $got samples = perf's count"
	else
		fail "--tid $t ($name): $got samples, perf counts ${want:-0} (want equal, > 100)"
	fi
	check_only "$SCRATCH/tid-$t" "--tid $t" "$work"
done

# --comm: perf's count for the comm at sample time, or (if perfspy keys on
# the thread's final name) the count of the thread that took that name.
for n in ps-alpha:alpha_work ps-beta:beta_work ps-gamma:gamma_work; do
	IFS=: read -r name work <<<"$n"
	convert "$SCRATCH/comm-$name" -i "$data" --comm "$name" || continue
	got=$(total "$SCRATCH/comm-$name")
	want1=$(perf_comm "$name") want2=$(perf_tid "${tid[$name]}")
	if [ "$got" -gt 100 ] && { [ "$got" = "${want1:-0}" ] || [ "$got" = "${want2:-0}" ]; }; then
		pass "--comm $name: $got samples (perf: ${want1:-0} with that comm, ${want2:-0} in its thread)"
	else
		fail "--comm $name: $got samples, perf: ${want1:-0} with that comm, ${want2:-0} in its thread"
	fi
	check_only "$SCRATCH/comm-$name" "--comm $name" "$work"
done
# A filter matching nothing is an error (issue 15): exit 1, no output
# file, and the message names the thread names the file does hold.
rc=0
"$PERFSPY" convert -i "$data" --comm no-such-comm -o "$SCRATCH/comm-none" 2>"$SCRATCH/comm-none.err" || rc=$?
if [ "$rc" -eq 1 ] && [ ! -e "$SCRATCH/comm-none" ] &&
	grep -q 'no samples match --comm .no-such-comm.*by thread name: .*ps-alpha' "$SCRATCH/comm-none.err"; then
	pass "--comm no-such-comm: exit 1, no output, names the file's threads"
else
	fail "--comm no-such-comm: exit $rc, output $([ -e "$SCRATCH/comm-none" ] && echo left || echo none): $(head -c 300 "$SCRATCH/comm-none.err")"
fi

# --pid: the whole process is every sample; a foreign pid selects nothing.
convert "$SCRATCH/pid" -i "$data" --pid "${tid[main]}" &&
	if [ "$(total "$SCRATCH/pid")" -eq "$nall" ]; then
		pass "--pid ${tid[main]}: all $nall samples"
	else
		fail "--pid ${tid[main]}: $(total "$SCRATCH/pid") samples, want all $nall"
	fi
rc=0
"$PERFSPY" convert -i "$data" --pid 1 -o "$SCRATCH/pid-none" 2>"$SCRATCH/pid-none.err" || rc=$?
if [ "$rc" -eq 1 ] && [ ! -e "$SCRATCH/pid-none" ] &&
	grep -q "no samples match --pid 1; samples by pid: ${tid[main]} ($nall)" "$SCRATCH/pid-none.err"; then
	pass "--pid 1: exit 1, no output, names pid ${tid[main]} with its $nall samples"
else
	fail "--pid 1: exit $rc, output $([ -e "$SCRATCH/pid-none" ] && echo left || echo none): $(head -c 300 "$SCRATCH/pid-none.err")"
fi

# Filters combine with --threads. A sample taken before the thread renamed
# itself carries the name it had then (the --comm checks above count it), so
# the root is this tid's under whatever name; most samples are ps-beta's.
t=${tid[ps-beta]}
convert "$SCRATCH/tid-threads" -i "$data" --tid "$t" --threads &&
	if [ -s "$SCRATCH/tid-threads" ] && ! grep -qv "^thread ($t): [^;]*;" "$SCRATCH/tid-threads" &&
		grep -q "^thread ($t): ps-beta;" "$SCRATCH/tid-threads"; then
		pass "--tid $t --threads: every root is thread ($t), named ps-beta once it renamed itself"
	else
		fail "--tid $t --threads: roots of other threads, none named ps-beta, or empty"
	fi
finish
