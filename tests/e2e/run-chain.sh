#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: the C call-chain workload (src/chain.c) under `perf record -F 999 -g`.
# Checks the exact frames of our own code (expect/chain.glob), the output
# format, sample totals against perf, --weight period against perf's periods,
# --no-kernel, `info --json`, determinism, and pipe-mode input. Then a
# recursion through five inlined functions (src/inlines.c): every level's
# six frames, as the frame cache's memo hands them out.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

record chain fp
data=$REC
say "recording: $data"

# Frames and format.
convert "$SCRATCH/out" -i "$data" || finish
check_format "$SCRATCH/out" "chain"
expect_globs "$SCRATCH/out" chain 'main ('

# Totals: every sample of the (single) event is in the output once.
nperf=$(perf_samples "$data")
nout=$(total "$SCRATCH/out")
if [ "$nout" -eq "$nperf" ] && [ "$nperf" -gt 500 ]; then
	pass "sample total $nout = perf report -D count"
else
	fail "sample total $nout, perf report -D counts $nperf (want equal, > 500)"
fi

# info --json against perf.
if "$PERFSPY" info --json "$data" >"$SCRATCH/info.json" 2>"$SCRATCH/info.err"; then
	read -r nj nev evname evsum < <("$PY" - "$SCRATCH/info.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
ev = j.get("events", [])
print(j["samples"], len(ev), ev[0]["name"] if ev else "-",
      sum(e["samples"] for e in ev))
EOF
)
	if [ "${nj:-x}" = "$nperf" ]; then
		pass "info --json samples $nj = perf report -D count"
	else
		fail "info --json samples ${nj:-?}, perf counts $nperf"
	fi
	if [ "${nev:-0}" -eq 1 ] && [[ $evname == cpu-clock* ]] && [ "$evsum" = "$nperf" ]; then
		pass "info --json events: one, $evname, $evsum samples"
	else
		fail "info --json events: n=${nev:-?} name=${evname:-?} samples=${evsum:-?} (want 1, cpu-clock*, $nperf)"
	fi
else
	fail "perfspy info --json exited non-zero: $(head -c 300 "$SCRATCH/info.err")"
fi
if "$PERFSPY" info "$data" >"$SCRATCH/info.txt" 2>&1 && grep -q "$nperf" "$SCRATCH/info.txt"; then
	pass "info (text) mentions $nperf samples"
else
	fail "info (text) failed or lacks the count $nperf: $(head -c 300 "$SCRATCH/info.txt")"
fi

# Determinism: same input, same bytes.
convert "$SCRATCH/out2" -i "$data" &&
	if cmp -s "$SCRATCH/out" "$SCRATCH/out2"; then
		pass "two runs give identical bytes"
	else
		fail "two runs differ"
	fi

# Output to stdout equals output to a file.
if "$PERFSPY" convert -q -i "$data" >"$SCRATCH/stdout" 2>/dev/null &&
	cmp -s "$SCRATCH/out" "$SCRATCH/stdout"; then
	pass "stdout output equals -o output"
else
	fail "stdout output differs from -o output (or failed)"
fi

# --weight period: counts are sums of periods; perf script prints the periods.
if convert "$SCRATCH/period" -i "$data" --weight period; then
	want=$("$PERF" script -i "$data" -F period 2>/dev/null | awk '{ s += $1 } END { printf "%d\n", s }')
	got=$(total "$SCRATCH/period")
	if [ "$got" = "$want" ] && [ "$want" -gt 0 ]; then
		pass "--weight period total $got = sum of perf script periods"
	else
		fail "--weight period total $got, perf script periods sum to $want"
	fi
	if diff <(sed 's/ [0-9]*$//' "$SCRATCH/out") <(sed 's/ [0-9]*$//' "$SCRATCH/period") >/dev/null; then
		pass "--weight period has the same stacks as --weight samples"
	else
		fail "--weight period stacks differ from --weight samples stacks"
	fi
fi
if convert "$SCRATCH/samples" -i "$data" --weight samples && cmp -s "$SCRATCH/out" "$SCRATCH/samples"; then
	pass "--weight samples is the default"
else
	fail "--weight samples differs from the default output"
fi

# --no-kernel: the full output with the kernel frames removed.
if convert "$SCRATCH/nokernel" -i "$data" --no-kernel; then
	if grep -qF '[kernel.kallsyms]' "$SCRATCH/out"; then
		pass "default output has kernel frames"
	else
		fail "default output has no [kernel.kallsyms] frame (chain.c reads /dev/zero)"
	fi
	awk '{
		n = $NF; sub(/ [0-9]+$/, "")
		k = split($0, f, ";"); s = ""
		for (i = 1; i <= k; i++)
			if (f[i] !~ / \(\[kernel\.kallsyms\]\)$/)
				s = s == "" ? f[i] : s ";" f[i]
		if (s != "") c[s] += n
	} END { for (s in c) print s, c[s] }' "$SCRATCH/out" | sort >"$SCRATCH/nokernel.want"
	if cmp -s "$SCRATCH/nokernel.want" "$SCRATCH/nokernel"; then
		pass "--no-kernel = default output minus kernel frames"
	else
		fail "--no-kernel differs from the default output minus kernel frames:"
		diff "$SCRATCH/nokernel.want" "$SCRATCH/nokernel" | head -5
	fi
fi

# Seekable stdin.
if "$PERFSPY" convert -q -i - -o "$SCRATCH/stdin" <"$data" 2>"$SCRATCH/stdin.err" &&
	cmp -s "$SCRATCH/out" "$SCRATCH/stdin"; then
	pass "-i - (file redirected) equals -i FILE"
else
	fail "-i - <FILE differs from -i FILE: $(head -c 300 "$SCRATCH/stdin.err")"
fi

# Pipe mode: perf writes to a pipe, perfspy reads it as it comes; a copy of
# the stream (tee) converted from the file must give the same output.
set -o pipefail
if "$PERF" record -N -F 999 -g -o - -- "$E2E_BIN/chain" 1 2>"$SCRATCH/pipe.perf.log" |
	tee "$SCRATCH/pipe.data" | "$PERFSPY" convert -q -i - -o "$SCRATCH/pipe.out" 2>"$SCRATCH/pipe.err"; then
	pass "perf record -o - | perfspy convert -i - succeeds"
	convert "$SCRATCH/pipe.file.out" -i "$SCRATCH/pipe.data" &&
		if cmp -s "$SCRATCH/pipe.out" "$SCRATCH/pipe.file.out"; then
			pass "pipe stream output equals the output of the saved stream"
		else
			fail "pipe stream output differs from the saved stream's output"
		fi
	np=$(perf_samples "$SCRATCH/pipe.data")
	if [ "$(total "$SCRATCH/pipe.out")" = "$np" ] && [ "$np" -gt 300 ]; then
		pass "pipe mode total $np = perf report -D count"
	else
		fail "pipe mode total $(total "$SCRATCH/pipe.out"), perf counts $np"
	fi
	check_globs "$SCRATCH/pipe.out" "$E2E_EXPECT/chain.glob"
else
	fail "perf record -o - | perfspy convert -i - failed: $(head -c 300 "$SCRATCH/pipe.err")"
fi
set +o pipefail

# A return address named as six frames, met again at every level of the
# recursion: the memo's entries longer than its block copy (MEMO_COPY).
# Exactly: six levels of descend;in1;...;in5 below main, each frame once.
record inlines fp
if convert "$SCRATCH/inl" -i "$REC"; then
	check_format "$SCRATCH/inl" "inlines"
	f='\(inlines\.c:[0-9]+\)'
	level="descend $f;in1 $f;in2 $f;in3 $f;in4 $f;in5 $f"
	n=$(grep -E "(^|;)main $f;($level;){6}descend $f;spin_leaf $f [0-9]+\$" "$SCRATCH/inl" |
		awk '{ s += $NF } END { print s + 0 }')
	tot=$(total "$SCRATCH/inl")
	if [ "$tot" -gt 300 ] && [ $((n * 10)) -ge $((tot * 9)) ]; then
		pass "inlines: six levels of six frames in $n of $tot samples (>= 90%)"
	else
		fail "inlines: six levels of six frames in $n of $tot samples (want >= 90%, > 300): $(sort -t' ' -k2 -n "$SCRATCH/inl" | tail -1 | cut -c1-400)"
	fi
fi

finish
