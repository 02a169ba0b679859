#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# perfspy combine (issue 14): three "nodes" (three recordings), each
# converted on its own to pprof and to folded stacks, combined into one
# profile that equals converting their union (the folded outputs
# concatenated: same stacks, summed counts); --label-root host adds a
# root per input that splits the result back into the nodes, and in pprof
# it is the label host (go tool pprof -tagfocus). pprof output keeps the
# inputs' libraries (paths, build ids) and puts the program with the most
# samples first, as pprof's main binary; a library two inputs disagree on
# keeps only its name.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
scratch

i=0
for w in chain threads cxx; do
	i=$((i + 1))
	record "$w" fp
	recs[i]=$REC
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

	# maps FILE: the profile's Mappings that have a build id, as
	# "path build-id" lines, sorted; head2 FILE: -top's File and
	# Build ID lines; raw FILE: go's whole reading of it.
	maps() {
		go tool pprof -symbolize=none -raw "$1" 2>/dev/null |
			sed -n '/^Mappings/,$p' | awk 'NF >= 4 && $4 != "[FN]" { print $3, $4 }' | sort -u
	}
	head2() {
		go tool pprof -symbolize=none -top "$1" 2>/dev/null | grep -E '^(File|Build ID):'
	}
	raw() { go tool pprof -symbolize=none -raw "$1" 2>/dev/null; }
	# The nodes' programs are chain, threads and cxx: the main binary
	# is the one whose node had the most samples.
	big=0 bigw=
	for i in 1 2 3; do
		t=$(total "$SCRATCH/node$i.txt")
		w=$(sed -n "${i}p" <<<$'chain\nthreads\ncxx')
		[ "$t" -gt "$big" ] && big=$t bigw=$w
	done
	"$PERFSPY" combine -o "$SCRATCH/m.pb.gz" "$SCRATCH"/node[123].pb.gz || fail "combine to pprof"
	for i in 1 2 3; do maps "$SCRATCH/node$i.pb.gz"; done | sort -u >"$SCRATCH/want.maps"
	maps "$SCRATCH/m.pb.gz" >"$SCRATCH/got.maps"
	nm=$(wc -l <"$SCRATCH/want.maps")
	if [ "$nm" -ge 4 ] && cmp -s "$SCRATCH/want.maps" "$SCRATCH/got.maps"; then
		pass "pprof output: the inputs' $nm libraries with their paths and build ids"
	else
		fail "pprof output's Mappings: want $(tr '\n' '|' <"$SCRATCH/want.maps"), got $(tr '\n' '|' <"$SCRATCH/got.maps")"
	fi
	got=$(head2 "$SCRATCH/m.pb.gz" | tr '\n' '|')
	bid=$(awk -v w="$bigw" '$1 ~ "/" w "$" { print $2 }' "$SCRATCH/want.maps")
	[ -n "$bid" ] && [ "$got" = "File: $bigw|Build ID: $bid|" ] &&
		pass "pprof output: main binary $bigw (its node had the most samples, $big), with its build id" ||
		fail "pprof output: want File: $bigw, Build ID: $bid; got '$got'"
	# Durations add up, as go tool pprof -proto merges them.
	d=$(raw "$SCRATCH/m.pb.gz" | sed -n 's/^Duration: //p')
	go tool pprof -proto "$SCRATCH"/node[123].pb.gz >"$SCRATCH/go-merge.pb.gz" 2>/dev/null
	g=$(raw "$SCRATCH/go-merge.pb.gz" | sed -n 's/^Duration: //p')
	[ -n "$d" ] && [ "$d" = "$g" ] && pass "pprof output: Duration $d, the sum go tool pprof's merge gives" ||
		fail "pprof output: Duration '$d', go's merge '$g'"
	"$PERFSPY" combine -o "$SCRATCH/mf.pb.gz" "$SCRATCH/node1.pb.gz" "$SCRATCH/node2.txt" ||
		fail "combine pprof and folded to pprof"
	raw "$SCRATCH/mf.pb.gz" | grep -q '^Duration:' && fail "a folded input has no time span, yet a Duration" ||
		pass "pprof output: no Duration when a folded input has none"

	# One input, pprof or perf.data: what convert writes, as go reads it.
	for i in 1 3; do
		"$PERFSPY" combine -o "$SCRATCH/one.pb.gz" "$SCRATCH/node$i.pb.gz" || fail "combine node$i"
		cmp -s <(raw "$SCRATCH/one.pb.gz") <(raw "$SCRATCH/node$i.pb.gz") &&
			pass "one pprof input (node$i): go tool pprof -raw reads what it read in convert's" ||
			fail "one pprof input (node$i): $(diff <(raw "$SCRATCH/node$i.pb.gz") <(raw "$SCRATCH/one.pb.gz") | head -3 | tr '\n' '|')"
		"$PERFSPY" combine -q -o "$SCRATCH/one.pb.gz" "${recs[i]}" || fail "combine of a perf.data"
		"$PERFSPY" convert -q -i "${recs[i]}" --format pprof -o "$SCRATCH/conv.pb.gz" || fail "convert to pprof"
		cmp -s <(raw "$SCRATCH/one.pb.gz") <(raw "$SCRATCH/conv.pb.gz") &&
			pass "one perf.data input (node$i): go tool pprof -raw reads what convert's gives" ||
			fail "one perf.data input (node$i): $(diff <(raw "$SCRATCH/conv.pb.gz") <(raw "$SCRATCH/one.pb.gz") | head -3 | tr '\n' '|')"
	done

	# One program, two builds: node1's copy with chain's build id changed
	# (the same length, so the protobuf stays valid) clashes with node1.
	cbid=$(awk '$1 ~ "/chain$" { print $2 }' "$SCRATCH/want.maps")
	other=$(printf '%s' "$cbid" | tr '0-9a-f' '1-9a-f0')
	"$PY" - "$SCRATCH/node1.pb.gz" "$SCRATCH/rebuilt.pb.gz" "$cbid" "$other" <<'PY' ||
import gzip, sys
b = gzip.decompress(open(sys.argv[1], 'rb').read())
assert b.count(sys.argv[3].encode()) == 1
open(sys.argv[2], 'wb').write(gzip.compress(b.replace(sys.argv[3].encode(), sys.argv[4].encode())))
PY
		fail "could not rewrite chain's build id in node1.pb.gz"
	"$PERFSPY" combine -o "$SCRATCH/clash.pb.gz" "$SCRATCH/node1.pb.gz" "$SCRATCH/rebuilt.pb.gz" ||
		fail "combine of two builds"
	got=$(head2 "$SCRATCH/clash.pb.gz" | tr '\n' '|')
	maps "$SCRATCH/clash.pb.gz" >"$SCRATCH/clash.maps"
	maps "$SCRATCH/node1.pb.gz" | grep -v '/chain ' >"$SCRATCH/rest.maps"
	[ -n "$cbid" ] && [ "$got" = "File: chain|" ] && [ -s "$SCRATCH/rest.maps" ] &&
		cmp -s "$SCRATCH/clash.maps" "$SCRATCH/rest.maps" &&
		pass "two builds of chain: its Mapping keeps the name alone, the other libraries theirs" ||
		fail "two builds of chain: '$got'; Mappings $(tr '\n' '|' <"$SCRATCH/clash.maps")"
elif [ "${CI:-}" = true ]; then
	fail "go (golang-go, for go tool pprof) not installed: CI=true needs it"
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
