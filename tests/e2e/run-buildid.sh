#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Binaries are found by build id first and checked against it (issue 2):
# after the profiled program is rebuilt differently, perfspy still names
# its frames from perf's build-id cache (~/.debug, which perf record
# fills), and with no cache it refuses the rebuilt binary, says so once,
# and prints addresses rather than wrong names.
. "$(dirname "$0")/lib.sh"

need_perfspy
need_perf
scratch
src=$SCRATCH/bid.c
bin=$SCRATCH/bid
cat >"$src" <<'C'
#include <stdio.h>
static volatile unsigned long sink;
__attribute__((noinline)) void buildid_spin(void) { for (long i = 0; i < 300000000; i++) sink += i; }
int main(void) { buildid_spin(); printf("%lu\n", sink); return 0; }
C
cc -O1 -g -fno-omit-frame-pointer -o "$bin" "$src" || die "cc failed"
$PERF record -q -F 999 -g -o "$SCRATCH/bid.data" -- "$bin" >/dev/null 2>&1 || die "perf record failed"
# perf record filled ~/.debug; make our own cache from it with perf itself.
HOME=$SCRATCH $PERF buildid-cache -a "$bin" >/dev/null 2>&1 || die "perf buildid-cache failed"
out=$("$PERFSPY" convert -q -i "$SCRATCH/bid.data" --buildid-dir "$SCRATCH/.debug")
echo "$out" | grep -q 'buildid_spin (bid.c:' && pass "original binary: buildid_spin named" ||
	fail "original binary: no buildid_spin frame"

# Rebuild with a change: a different build id at the same path.
sed -i 's/300000000/300000001/' "$src"
cc -O1 -g -fno-omit-frame-pointer -o "$bin" "$src" || die "cc failed"
out=$("$PERFSPY" convert -i "$SCRATCH/bid.data" --buildid-dir "$SCRATCH/.debug" 2>"$SCRATCH/err1")
echo "$out" | grep -q 'buildid_spin (bid.c:' && pass "rebuilt binary: still named from the build-id cache" ||
	fail "rebuilt binary: cache copy not used"
out=$("$PERFSPY" convert -i "$SCRATCH/bid.data" --buildid-dir "$SCRATCH/none" 2>"$SCRATCH/err2")
n=$(grep -c "build id differs" "$SCRATCH/err2")
[ "$n" = 1 ] && pass "no cache: the rebuilt binary is refused, said once" ||
	fail "no cache: 'build id differs' said $n times: $(head -3 "$SCRATCH/err2")"
echo "$out" | grep -q 'buildid_spin' && fail "no cache: names taken from the wrong binary" ||
	pass "no cache: no names from the rebuilt binary"
echo "$out" | grep -q '0x[0-9a-f]* (bid)' && pass "no cache: addresses shown as 0x... (bid)" ||
	fail "no cache: no address frames for bid: $(echo "$out" | head -2)"
finish
