#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# pprof output (issue 14), read by the reference reader, `go tool pprof`
# (Debian golang-go): -top's total is the raw output's total and its Duration
# perf script's span of sample times, -traces shows
# the raw output's stacks (thread roots as the labels thread/tid), -raw has
# file:line for DWARF-named frames and a mapping per library (with the
# library's path and build id), labels category = perfspy report, -proto merges
# two of ours, and --weight period of cpu-clock is cpu/nanoseconds. Reading
# our pprof back (perfspy combine) gives the raw output byte for byte.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
command -v go >/dev/null 2>&1 || skip "go (golang-go, for go tool pprof) not installed"
scratch
export HOME=$SCRATCH PPROF_TMPDIR=$SCRATCH # go tool pprof writes nothing of ours elsewhere
pp() { go tool pprof -symbolize=none "$@" 2>"$SCRATCH/pprof.err"; }

record chain fp
data=$REC
"$PERFSPY" convert -q -i "$data" --threads -o "$SCRATCH/raw.txt" || die "convert raw failed"
"$PERFSPY" convert -q -i "$data" --threads --format pprof -o "$SCRATCH/a.pb.gz" ||
	die "convert pprof failed"
raw_total=$(total "$SCRATCH/raw.txt")
[ "$raw_total" -gt 0 ] || die "empty raw output"

top=$(pp -top "$SCRATCH/a.pb.gz") || fail "-top failed: $(cat "$SCRATCH/pprof.err")"
t=$(echo "$top" | sed -n 's/.* of \([0-9]*\) total.*/\1/p')
[ "$t" = "$raw_total" ] && pass "-top total $t = raw total" ||
	fail "-top total '$t', raw total $raw_total"
echo "$top" | grep -q 'Type: samples' && pass "-top: sample type samples" ||
	fail "-top: no 'Type: samples'"
# pprof's main binary is mapping[0] (its "File:" line): the recorded
# program, though libc and the kernel come first in the stacks' order.
echo "$top" | grep -qx 'File: chain' && pass "-top: File: chain (the program's Mapping first)" ||
	fail "-top: no 'File: chain': $(echo "$top" | head -2)"

# duration_nanos: the span of the recording's samples, perf script's
# first and last sample times the oracle (-top prints it to 3-4 digits).
dur=$(echo "$top" | sed -n 's/^Duration: \([0-9.]*\)\(m\?s\),.*/\1 \2/p')
span=$("$PERF" script -i "$data" -F time 2>/dev/null | tr -d ' :' |
	awk 'NR == 1 || $1 < a { a = $1 } $1 > b { b = $1 } END { printf "%.6f", b - a }')
awk -v d="${dur% *}" -v u="${dur#* }" -v s="$span" 'BEGIN {
	if (u == "ms") d /= 1000
	exit !(d > 0 && s > 0 && d >= s * 0.99 - 0.005 && d <= s * 1.01 + 0.005) }' &&
	pass "-top: Duration ${dur/ /} = perf script's first to last sample (${span} s)" ||
	fail "-top: Duration '$dur', perf script's span ${span} s"

pp -traces "$SCRATCH/a.pb.gz" >"$SCRATCH/traces" || fail "-traces failed"
if "$PY" "$TOP/tests/e2e/pprof_check.py" "$SCRATCH/raw.txt" "$SCRATCH/traces" >"$SCRATCH/cmp"; then
	pass "-traces: the raw stacks, counts and thread labels ($(tail -1 "$SCRATCH/cmp"))"
else
	fail "-traces differs from raw: $(cat "$SCRATCH/cmp")"
fi

pp -raw "$SCRATCH/a.pb.gz" >"$SCRATCH/rawdump" || fail "-raw failed"
grep -Eq ' level2 chain\.c:[0-9]+ ' "$SCRATCH/rawdump" && pass "-raw: level2 at chain.c:LINE" ||
	fail "-raw: no 'level2 chain.c:N' line: $(grep -m3 level2 "$SCRATCH/rawdump")"
# level3 is always_inline in level2 (src/chain.c): one Location, two Lines,
# the inlined callee first.
if awk '/^Locations/ {on = 1} /^Mappings/ {on = 0}
	on && / level3 chain\.c:[0-9]+ / {l3 = NR}
	on && l3 && NR == l3 + 1 && /^ +level2 chain\.c:[0-9]+ / {ok = 1}
	END {exit !ok}' "$SCRATCH/rawdump"; then
	pass "-raw: inlined level3 is a Line of level2's Location"
else
	fail "-raw: no Location with Lines level3 then level2: $(grep -A1 ' level3 ' "$SCRATCH/rawdump" | head -4)"
fi
grep -q '\[kernel.kallsyms\]' "$SCRATCH/rawdump" && pass "-raw: a mapping for kernel frames" ||
	fail "-raw: no [kernel.kallsyms] mapping"

# Mappings of libraries named in frames carry the recorded path and build
# id (perfspy_session__dso); each must be the build id of the file there.
# A DWARF recording is used: every stack reaches `_start (chain)`, a frame
# named by its binary, while a frame-pointer one may have none (main and
# libc, with libc6-dbg, are all `func (file:line)`).
record chain dwarf
"$PERFSPY" convert -q -i "$REC" --format pprof -o "$SCRATCH/dw.pb.gz" ||
	fail "convert pprof (dwarf) failed"
pp -raw "$SCRATCH/dw.pb.gz" >"$SCRATCH/rawdump" || fail "-raw (dwarf) failed"
nb=0
while read -r path bid; do
	nb=$((nb + 1))
	real=$(readelf -n "$path" 2>/dev/null | awk '/Build ID/ {print $3}')
	[ "$real" = "$bid" ] && pass "-raw: mapping $path has its build id $bid" ||
		fail "-raw: mapping $path: build id $bid, the file has '$real'"
done < <(sed -n '/^Mappings/,$p' "$SCRATCH/rawdump" | awk 'NF >= 4 && $3 ~ /^\// && $4 ~ /^[0-9a-f]+$/ {print $3, $4}')
[ "$nb" -gt 0 ] && pass "-raw: $nb mappings with build ids" || fail "-raw: no mapping with a build id"
# Mapping 1 is the program, and frames naming chain.c are its Locations
# (the session's library of source-named frames).
m1=$(sed -n '/^Mappings/,$p' "$SCRATCH/rawdump" | awk '$1 == "1:" {print $3}')
[ "$m1" = "$E2E_BIN/chain" ] && pass "-raw: mapping 1 is $m1" ||
	fail "-raw: mapping 1 is '$m1', not $E2E_BIN/chain"
grep -Eq '^ +[0-9]+: 0x0 M=1 level1 chain\.c:[0-9]+ ' "$SCRATCH/rawdump" &&
	pass "-raw: level1 (chain.c) in mapping 1" ||
	fail "-raw: level1's Location not in mapping 1: $(grep -m2 ' level1 chain' "$SCRATCH/rawdump")"

# System-wide, chain's maps are perf's synthesized /proc maps (no exec
# seen): its program is still found, not a library. --comm keeps its
# samples only (other tests may be busier here), and the main binary is
# that of the samples kept.
record chain sys
"$PERFSPY" convert -q -i "$REC" --comm chain --format pprof -o "$SCRATCH/sys.pb.gz" ||
	fail "convert pprof (sys) failed"
pp -top "$SCRATCH/sys.pb.gz" | grep -qx 'File: chain' && pass "system-wide --comm chain: File: chain" ||
	fail "system-wide --comm chain: $(pp -top "$SCRATCH/sys.pb.gz" | head -1), not File: chain"

# The category label: perfspy report's categories, sample for sample.
pp -tags "$SCRATCH/a.pb.gz" >"$SCRATCH/tags" || fail "-tags failed"
"$PERFSPY" report -i "$SCRATCH/raw.txt" --json >"$SCRATCH/report.json" || die "report failed"
if "$PY" - "$SCRATCH/tags" "$SCRATCH/report.json" >"$SCRATCH/catcmp" <<'PY'
import json, re, sys
tags, cur = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\w+): Total", line)
    if m:
        cur = m.group(1)
        continue
    m = re.match(r"\s*([\d.]+) \(\s*[\d.]+%\): (.*)", line.rstrip("\n"))
    if m and cur == "category":
        tags[m.group(2)] = int(float(m.group(1)))
rep = {c["name"]: c["samples"] for c in json.load(open(sys.argv[2]))["categories"] if c["samples"]}
print(tags, rep)
sys.exit(0 if tags == rep and tags else 1)
PY
then
	pass "category label totals = perfspy report's categories"
else
	fail "category labels differ from perfspy report: $(cat "$SCRATCH/catcmp")"
fi

"$PERFSPY" convert -q -i "$data" --threads --format pprof -o "$SCRATCH/a2.pb.gz" || die "convert"
cmp -s "$SCRATCH/a.pb.gz" "$SCRATCH/a2.pb.gz" && pass "same input, same bytes" ||
	fail "two conversions differ"

pp -proto "$SCRATCH/a.pb.gz" "$SCRATCH/a2.pb.gz" >"$SCRATCH/m.pb.gz" ||
	fail "-proto merge failed: $(cat "$SCRATCH/pprof.err")"
t=$(pp -top "$SCRATCH/m.pb.gz" | sed -n 's/.* of \([0-9]*\) total.*/\1/p')
[ "$t" = $((2 * raw_total)) ] && pass "-proto a b: total $t = twice raw" ||
	fail "-proto merge total '$t', expected $((2 * raw_total))"

"$PERFSPY" combine -o "$SCRATCH/back.txt" "$SCRATCH/a.pb.gz" || fail "combine of a pprof failed"
cmp -s "$SCRATCH/back.txt" "$SCRATCH/raw.txt" && pass "pprof read back = raw output" ||
	fail "pprof read back differs: $(diff "$SCRATCH/raw.txt" "$SCRATCH/back.txt" | head -4)"
"$PERFSPY" combine -o "$SCRATCH/gm.txt" "$SCRATCH/m.pb.gz" || fail "combine of go's merge failed"
[ "$(total "$SCRATCH/gm.txt")" = $((2 * raw_total)) ] &&
	pass "go tool pprof's own output read back, total kept" || fail "go's merge read back: wrong total"

# perfspy record: the launched program is the main binary, with the build
# id the kernel put in its MMAP2 records (attr.build_id, Linux 5.12+).
"$PERFSPY" record -q -f pprof -o "$SCRATCH/rec.pb.gz" -- "$E2E_BIN/chain" 0.5 >/dev/null ||
	fail "record --format pprof failed"
top=$(pp -top "$SCRATCH/rec.pb.gz")
bid=$(readelf -n "$E2E_BIN/chain" 2>/dev/null | awk '/Build ID/ {print $3}')
if echo "$top" | grep -qx 'File: chain' && echo "$top" | grep -qx "Build ID: $bid"; then
	pass "record: File: chain, Build ID: $bid"
else
	fail "record: want File: chain and Build ID: $bid, got: $(echo "$top" | head -2 | tr '\n' '|')"
fi

# cpu-clock periods: nanoseconds.
"$PERFSPY" convert -q -i "$data" --weight period -o "$SCRATCH/ns.txt" || die "convert period"
"$PERFSPY" convert -q -i "$data" --weight period --format pprof -o "$SCRATCH/ns.pb.gz" ||
	die "convert period pprof"
top=$(pp -unit=ns -top "$SCRATCH/ns.pb.gz")
t=$(echo "$top" | sed -n 's/.* of \([0-9]*\)ns total.*/\1/p')
[ "$t" = "$(total "$SCRATCH/ns.txt")" ] && pass "--weight period: $t ns total" ||
	fail "--weight period: pprof total '$t' ns, raw $(total "$SCRATCH/ns.txt")"
echo "$top" | grep -q 'Type: cpu' && pass "--weight period of cpu-clock: sample type cpu" ||
	fail "--weight period: no 'Type: cpu'"
finish
