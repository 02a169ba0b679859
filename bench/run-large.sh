#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Memory stays bounded on huge inputs (issue 6): a small pipe recording is
# repeated into a LARGE_GB (default 2.1) GB perf.data; perfspy converts it
# from the file and from a pipe, and peak RSS is printed next to the small
# recording's. Memory is bounded by unique stacks and DSOs, not file size.
# Usage: O=build bench/run-large.sh   (needs LARGE_GB free on $O's disk)
set -u
export LC_ALL=C
TOP=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
case $O in /*) ;; *) O=$TOP/$O ;; esac
PERFSPY=$O/perfspy
gb=${LARGE_GB:-2.1}
dir=$O/bench-large
mkdir -p "$dir"
small=$dir/small.pipe
large=$dir/large.pipe
[ -x "$PERFSPY" ] || { echo "run make first" >&2; exit 1; }
# shellcheck disable=SC2016 # $i belongs to the inner sh
perf record -q -F 999 -g -o - -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' \
	>"$small" 2>/dev/null || { echo "perf record failed" >&2; exit 1; }
bytes=$(awk -v g="$gb" 'BEGIN {printf "%d", g * 1e9}')
python3 "$TOP/tests/e2e/src/repeat_pipe.py" "$small" "$large" "$bytes" || exit 1
measure() { # measure LABEL CMD...: prints wall seconds and peak RSS
	local label=$1 t tf
	shift
	tf=$(mktemp)
	/usr/bin/time -o "$tf" -f '%e %M' "$@" >/dev/null 2>&1
	t=$(tail -1 "$tf")
	rm -f "$tf"
	printf '%-34s %8s s %8.1f MB peak RSS\n' "$label" "${t% *}" "$(awk -v k="${t#* }" 'BEGIN {print k / 1024}')"
}
printf 'input: %s (%s bytes), from %s (%s bytes)\n' "$large" "$(stat -c %s "$large")" \
	"$small" "$(stat -c %s "$small")"
measure "perfspy convert (small file)" "$PERFSPY" convert -q -i "$small" -o /dev/null
measure "perfspy convert (large file)" "$PERFSPY" convert -q -i "$large" -o /dev/null
measure "perfspy convert (large, stdin)" sh -c "cat '$large' | '$PERFSPY' convert -q -i - -o /dev/null"
measure "perfspy info (large file)" "$PERFSPY" info "$large"
rm -f "$large"
