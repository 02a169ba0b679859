#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: a recording from another kernel never gets this machine's kernel names.
# The chain workload (src/chain.c, read(2) from /dev/zero: kernel time) is
# recorded here, then its header is rewritten (src/rewrite_kernel.py) as if
# recorded on another kernel: another [kernel.kallsyms] build id, or none and
# another OS release. Then every [kernel.kallsyms] frame must be an address,
# `perfspy info` must say which kallsyms to copy, and --kallsyms FILE must
# bring the names back.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

record chain fp
data=$REC
say "recording: $data"
rw=$TOP/tests/e2e/src/rewrite_kernel.py
foreign_bid=00112233445566778899aabbccddeeff00112233

# kernel_frames OUT: "NAMED HEX" counts of [kernel.kallsyms] frames.
kernel_frames() {
	tr ';' '\n' <"$1" | sed 's/ [0-9]*$//' | grep -F '([kernel.kallsyms])' |
		awk '/^0x[0-9a-f]+ \(\[kernel\.kallsyms\]\)$/ { h++; next } { n++ } END { printf "%d %d\n", n, h }'
}

# mask_kernel OUT: kernel frames as K, lines summed again, sorted.
mask_kernel() {
	sed -E 's/(^|;)[^;]* \(\[kernel\.kallsyms\]\)/\1K/g' "$1" |
		awk '{ c = $NF; $NF = ""; s[$0] += c } END { for (k in s) print k s[k] }' | sort
}

convert "$SCRATCH/own" -i "$data" || finish
read -r named hex < <(kernel_frames "$SCRATCH/own")
if [ "$named" -eq 0 ]; then
	# kptr_restrict or no /proc/kallsyms: nothing can tell foreign names
	# from local ones here.
	skip "this machine's own recording has no named kernel frames ($hex addresses)"
fi
pass "own recording: $named named kernel frames"

# Another build id: addresses only.
"$PY" "$rw" "$data" "$SCRATCH/bid.data" --build-id "$foreign_bid" ||
	die "rewrite_kernel.py --build-id failed"
if convert "$SCRATCH/bid" -i "$SCRATCH/bid.data"; then
	read -r named hex < <(kernel_frames "$SCRATCH/bid")
	if [ "$named" -eq 0 ] && [ "$hex" -gt 0 ]; then
		pass "foreign build id: $hex kernel frames, all addresses"
	else
		fail "foreign build id: $named named kernel frames (want 0), $hex addresses"
	fi
	# Only the kernel frames changed: with each masked, the stacks and
	# counts are the own recording's.
	if cmp -s <(mask_kernel "$SCRATCH/own") <(mask_kernel "$SCRATCH/bid"); then
		pass "foreign build id: user frames and counts as in the own recording"
	else
		fail "foreign build id: stacks differ beyond the kernel frames"
	fi
	if [ "$(total "$SCRATCH/bid")" = "$(total "$SCRATCH/own")" ]; then
		pass "foreign build id: same sample total"
	else
		fail "foreign build id: total $(total "$SCRATCH/bid"), own $(total "$SCRATCH/own")"
	fi
fi

# info says so, and names the kallsyms to copy.
if "$PERFSPY" info "$SCRATCH/bid.data" >"$SCRATCH/info.txt" 2>&1 &&
	grep -q "^kernel: .*build id $foreign_bid; no matching kernel symbols" "$SCRATCH/info.txt" &&
	grep -qF "[kernel.kallsyms]/$foreign_bid/kallsyms, and give it with --kallsyms FILE" "$SCRATCH/info.txt"; then
	pass "info: kernel line and the kallsyms to copy"
else
	fail "info on a foreign kernel: $(grep -E '^kernel|kallsyms' "$SCRATCH/info.txt" | head -c 400)"
fi
if "$PERFSPY" info --json "$SCRATCH/bid.data" >"$SCRATCH/info.json" 2>/dev/null &&
	"$PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); sys.exit(not (j["kernel_symbols"] is None and j["kernel_build_id"] == sys.argv[2]))' \
		"$SCRATCH/info.json" "$foreign_bid"; then
	pass "info --json: kernel_symbols null, kernel_build_id recorded"
else
	fail "info --json on a foreign kernel: $(head -c 300 "$SCRATCH/info.json")"
fi

# --kallsyms FILE (here this boot's own): names again.
if convert "$SCRATCH/given" -i "$SCRATCH/bid.data" --kallsyms /proc/kallsyms; then
	read -r named hex < <(kernel_frames "$SCRATCH/given")
	if [ "$named" -gt 0 ] && cmp -s "$SCRATCH/given" "$SCRATCH/own"; then
		pass "--kallsyms /proc/kallsyms: the own recording's output"
	else
		fail "--kallsyms /proc/kallsyms: $named named; differs from the own output"
	fi
fi

# No build id (older perf): the OS release decides.
"$PY" "$rw" "$data" "$SCRATCH/rel.data" --drop-build-id --os-release 4.18.0-foreign ||
	die "rewrite_kernel.py --os-release failed"
if convert "$SCRATCH/rel" -i "$SCRATCH/rel.data"; then
	read -r named hex < <(kernel_frames "$SCRATCH/rel")
	if [ "$named" -eq 0 ] && [ "$hex" -gt 0 ]; then
		pass "no build id, foreign OS release: all $hex kernel frames are addresses"
	else
		fail "no build id, foreign OS release: $named named kernel frames (want 0)"
	fi
fi
"$PY" "$rw" "$data" "$SCRATCH/own-rel.data" --drop-build-id ||
	die "rewrite_kernel.py --drop-build-id failed"
if convert "$SCRATCH/own-rel" -i "$SCRATCH/own-rel.data"; then
	if cmp -s "$SCRATCH/own-rel" "$SCRATCH/own"; then
		pass "no build id, this OS release: named as the own recording"
	else
		fail "no build id, this OS release: output differs from the own recording"
	fi
fi

# A stream (perf inject -o -): its features come as records; the OS release
# still decides (streams carry no build-id table).
if "$PERF" inject -i "$data" -o - >"$SCRATCH/own.pipe" 2>/dev/null &&
	"$PY" "$rw" "$SCRATCH/own.pipe" "$SCRATCH/rel.pipe" --os-release 4.18.0-foreign; then
	if convert "$SCRATCH/pipe-own" -i - <"$SCRATCH/own.pipe" &&
		convert "$SCRATCH/pipe-rel" -i - <"$SCRATCH/rel.pipe"; then
		read -r named hex < <(kernel_frames "$SCRATCH/pipe-own")
		read -r named2 hex2 < <(kernel_frames "$SCRATCH/pipe-rel")
		if [ "$named" -gt 0 ] && [ "$named2" -eq 0 ] && [ "$hex2" -gt 0 ]; then
			pass "stream: own release $named named kernel frames; foreign release all $hex2 addresses"
		else
			fail "stream: own release $named named; foreign release $named2 named (want 0), $hex2 addresses"
		fi
	fi
else
	fail "perf inject -o - or rewrite_kernel.py on the stream failed"
fi
finish
