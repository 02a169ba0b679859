#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Output safety (issue 6): SIGINT during a long conversion exits 130 and
# leaves no partial output and no temporary file; an existing output file
# keeps its old contents. The long input is a small pipe recording
# repeated into ~600 MB (tests/e2e/src/repeat_pipe.py).
. "$(dirname "$0")/lib.sh"

need_perfspy
need_perf
scratch
small=$SCRATCH/small.pipe
big=$SCRATCH/big.pipe
# shellcheck disable=SC2016 # $i belongs to the inner sh
$PERF record -q -F 999 -g -o - -- sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done' \
	>"$small" 2>/dev/null || die "perf record failed"
$PY "$TOP/tests/e2e/src/repeat_pipe.py" "$small" "$big" 600000000 >/dev/null || die "repeat_pipe failed"
out=$SCRATCH/out/stacks.txt
mkdir -p "$SCRATCH/out"
echo "previous contents" >"$out"

"$PERFSPY" convert -q -i "$big" -o "$out" &
pid=$!
sleep 0.3
kill -INT $pid 2>/dev/null
rc=0
wait $pid || rc=$?
if [ $rc = 130 ]; then
	pass "SIGINT: exit 130"
elif [ $rc = 0 ]; then
	# The machine was faster than the signal: not a failure of perfspy,
	# but the test proved nothing; make the input bigger.
	fail "conversion finished before SIGINT (0.3 s); input too small for this machine"
else
	fail "SIGINT: exit $rc, want 130"
fi
[ "$(cat "$out")" = "previous contents" ] && pass "existing output untouched" ||
	fail "existing output changed after SIGINT"
left=$(find "$SCRATCH/out" -mindepth 1 -maxdepth 1 ! -name stacks.txt -printf '%f\n')
[ -z "$left" ] && pass "no temporary file left" || fail "left behind: $left"

# The same through a pipe: perfspy reading stdin, killed mid-stream.
# shellcheck disable=SC2002 # a pipe on purpose: stdin must not be a file
( cat "$big" | "$PERFSPY" convert -q -i - -o "$out" ) &
pid=$!
sleep 0.3
pkill -INT -f "$PERFSPY convert -q -i - -o $out" 2>/dev/null
wait $pid
left=$(find "$SCRATCH/out" -mindepth 1 -maxdepth 1 ! -name stacks.txt -printf '%f\n')
[ -z "$left" ] && [ "$(cat "$out")" = "previous contents" ] &&
	pass "stdin conversion interrupted: no partial output" ||
	fail "stdin conversion interrupted: output changed or temp left ($left)"

# Completing normally replaces the file atomically.
"$PERFSPY" convert -q -i "$small" -o "$out" && [ "$(head -c 17 "$out")" != "previous contents" ] &&
	pass "a finished conversion replaces the output" || fail "finished conversion did not replace the output"
finish
