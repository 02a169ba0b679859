#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# perfspy combine (issue 14): three "nodes" (three recordings), each
# converted on its own to pprof and to folded stacks, combined into one
# profile that equals converting their union (the folded outputs
# concatenated: same stacks, summed counts); --label-root host adds a
# root per input that splits the result back into the nodes, and in pprof
# it is the label host (go tool pprof -tagfocus).
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
scratch

i=0
for w in chain threads cxx; do
	i=$((i + 1))
	record "$w" fp
	"$PERFSPY" convert -q -i "$REC" --threads -o "$SCRATCH/node$i.txt" || die "convert $w"
	"$PERFSPY" convert -q -i "$REC" --threads --format pprof -o "$SCRATCH/node$i.pb.gz" ||
		die "convert $w to pprof"
done
cat "$SCRATCH"/node[123].txt >"$SCRATCH/union.txt"
"$PERFSPY" convert -q -i "$SCRATCH/union.txt" -o "$SCRATCH/want.txt" || die "convert union"
want_total=$(total "$SCRATCH/want.txt")
sum=$(($(total "$SCRATCH/node1.txt") + $(total "$SCRATCH/node2.txt") + $(total "$SCRATCH/node3.txt")))
[ "$want_total" = "$sum" ] || die "union total $want_total != $sum"
[ "$(wc -l <"$SCRATCH/want.txt")" -lt "$(wc -l <"$SCRATCH/union.txt")" ] ||
	say "  note: no stack shared between nodes"

"$PERFSPY" combine -o "$SCRATCH/c-pprof.txt" "$SCRATCH"/node[123].pb.gz || fail "combine pprof inputs"
cmp -s "$SCRATCH/c-pprof.txt" "$SCRATCH/want.txt" &&
	pass "combine of 3 pprof files = conversion of the union ($want_total samples)" ||
	fail "combine of pprof files differs: $(diff "$SCRATCH/want.txt" "$SCRATCH/c-pprof.txt" | head -4)"
"$PERFSPY" combine -o "$SCRATCH/c-raw.txt" "$SCRATCH"/node[123].txt || fail "combine folded inputs"
cmp -s "$SCRATCH/c-raw.txt" "$SCRATCH/want.txt" && pass "combine of 3 folded files = union" ||
	fail "combine of folded files differs"
"$PERFSPY" combine -o "$SCRATCH/c-mixed.txt" "$SCRATCH/node1.pb.gz" "$SCRATCH/node2.txt" \
	"$SCRATCH/node3.pb.gz" || fail "combine mixed inputs"
cmp -s "$SCRATCH/c-mixed.txt" "$SCRATCH/want.txt" && pass "pprof and folded inputs mixed = union" ||
	fail "mixed inputs differ"

"$PERFSPY" combine --label-root host -o "$SCRATCH/l.txt" "$SCRATCH"/node[123].pb.gz ||
	fail "combine --label-root"
[ "$(total "$SCRATCH/l.txt")" = "$want_total" ] && pass "--label-root: total kept" ||
	fail "--label-root: total $(total "$SCRATCH/l.txt"), want $want_total"
for i in 1 2 3; do
	grep "^\[host=node$i\];" "$SCRATCH/l.txt" | sed "s/^\[host=node$i\];//" >"$SCRATCH/l$i.txt"
	cmp -s "$SCRATCH/l$i.txt" "$SCRATCH/node$i.txt" && pass "--label-root: [host=node$i] holds node$i" ||
		fail "--label-root: [host=node$i] stacks differ from node$i"
done
[ "$(grep -vc '^\[host=node[123]\];' "$SCRATCH/l.txt")" = 0 ] && pass "--label-root: every stack rooted" ||
	fail "--label-root: stacks without a host root"

"$PERFSPY" combine --label-root host -o "$SCRATCH/l.pb.gz" "$SCRATCH"/node[123].pb.gz ||
	fail "combine to pprof"
"$PERFSPY" combine -o "$SCRATCH/l-back.txt" "$SCRATCH/l.pb.gz" || fail "read combined pprof"
cmp -s "$SCRATCH/l-back.txt" "$SCRATCH/l.txt" && pass "pprof output: host roots survive as labels" ||
	fail "pprof output read back differs from raw: $(diff "$SCRATCH/l.txt" "$SCRATCH/l-back.txt" | head -3)"
if command -v go >/dev/null 2>&1; then
	export HOME=$SCRATCH PPROF_TMPDIR=$SCRATCH
	# With a filter, -top's "accounting for N" is what passed it (all
	# of it with -nodefraction=0); "of T total" stays the whole profile.
	t=$(go tool pprof -symbolize=none -tagfocus='host=^node2$' -nodefraction=0 -top \
		"$SCRATCH/l.pb.gz" 2>/dev/null | sed -n 's/.*accounting for \([0-9]*\),.*/\1/p')
	[ "$t" = "$(total "$SCRATCH/node2.txt")" ] && pass "go tool pprof -tagfocus=host=node2: node2's $t" ||
		fail "-tagfocus=host=node2 total '$t', node2 has $(total "$SCRATCH/node2.txt")"
fi
# A pprof cut short: an error that names the file and where its gzip
# stream stops, and no output file left behind.
n=$(stat -c %s "$SCRATCH/node1.pb.gz")
head -c $((n / 2)) "$SCRATCH/node1.pb.gz" >"$SCRATCH/cut.pb.gz"
"$PERFSPY" combine -o "$SCRATCH/cut.txt" "$SCRATCH/node2.pb.gz" "$SCRATCH/cut.pb.gz" \
	2>"$SCRATCH/cut.err"
rc=$?
left=$(find "$SCRATCH" -maxdepth 1 \( -name cut.txt -o -name '.cut.txt.tmp.*' \))
if [ "$rc" = 0 ]; then
	fail "combine of a cut pprof succeeded"
elif grep -q "cut.pb.gz: not a pprof profile (its gzip stream is corrupt or cut short at offset $((n / 2)) of $((n / 2)))" \
	"$SCRATCH/cut.err" && [ -z "$left" ]; then
	pass "a cut pprof: named, with its offset, and no output"
else
	fail "a cut pprof (exit $rc): $(cat "$SCRATCH/cut.err"), output left: $left"
fi
finish
