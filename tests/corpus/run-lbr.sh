#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# LBR call stacks on a real recording, perf script as the oracle.
#
# The recording: perfparser's vector_static_gcc (in its auto/perfdata test folder)
# (github.com/KDAB/perfparser; perf 5.4 on an i7-9700, `perf record
# --call-graph lbr`, a static binary). It is not in this repository: point
# PERFSPY_LBR_DIR at a directory holding perf.lbr.data and
# vector_static_gcc_v9.1.0, or their Qt-compressed .zlib forms as the
# repository has them. Without it the test is skipped. Not run by
# tests/run-tests.sh (CI=true would count the skip as a failure): run it by
# hand, `PERFSPY_LBR_DIR=DIR tests/corpus/run-lbr.sh`.
#
# perf script (6.1) and perfspy both put the callchain's kernel part above
# the user part and the LBR's call sites below the leaf; they differ in the
# leaf (perf: the first entry's `to`, perfspy: the sample ip) and perfspy
# adds inlined frames. So per sample, with names perf never prints dropped
# from perfspy's stacks (inlined frames; the ip's function where perf shows
# the PLT stub or a tail-calling caller instead):
#   - perf's user frames other than its leaf are a prefix of perfspy's,
#   - the number of kernel frames is the same,
# matched sample for sample (perfspy's counts expanded), and perfspy's
# kernel frames are addresses (the file is from another kernel).
set -u
export LC_ALL=C
TOP=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) ;; *) O=$TOP/$O ;; esac
PERFSPY=${PERFSPY:-$O/perfspy}
PY=${PYTHON3:-$(command -v /usr/bin/python3 || command -v python3 || true)}
PERF=$(command -v "${PERF:-perf}" || true)
dir=${PERFSPY_LBR_DIR:-}

if [ -z "$dir" ] || [ -z "$PERF" ] || [ -z "$PY" ]; then
	echo "SKIP: PERFSPY_LBR_DIR (perfparser's vector_static_gcc test data), perf and python3 needed"
	exit 77
fi
[ -x "$PERFSPY" ] || { echo "FAIL: $PERFSPY not built (run make)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/perfspy-lbr.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# Qt's qCompress: a 4-byte big-endian length, then a zlib stream.
for f in perf.lbr.data vector_static_gcc_v9.1.0; do
	if [ -f "$dir/$f" ]; then
		cp "$dir/$f" "$tmp/$f"
	elif [ -f "$dir/$f.zlib" ]; then
		"$PY" -c 'import sys, zlib; open(sys.argv[2], "wb").write(zlib.decompress(open(sys.argv[1], "rb").read()[4:]))' \
			"$dir/$f.zlib" "$tmp/$f" || { echo "FAIL: cannot inflate $f.zlib"; exit 1; }
	else
		echo "FAIL: $dir has neither $f nor $f.zlib"
		exit 1
	fi
done
bin=$("$PERF" buildid-list -i "$tmp/perf.lbr.data" 2>/dev/null | awk '$2 ~ /vector_static_gcc/ { print $2 }')
[ -n "$bin" ] || { echo "FAIL: no vector_static_gcc build id in perf.lbr.data"; exit 1; }
mkdir -p "$tmp/symfs${bin%/*}" && cp "$tmp/vector_static_gcc_v9.1.0" "$tmp/symfs$bin"

"$PERF" script -i "$tmp/perf.lbr.data" --symfs "$tmp/symfs" -F ip,sym >"$tmp/perf.txt" 2>/dev/null ||
	{ echo "FAIL: perf script cannot read the file"; exit 1; }
"$PERFSPY" convert -q -i "$tmp/perf.lbr.data" --symfs "$tmp/symfs" -o "$tmp/out" ||
	{ echo "FAIL: perfspy convert failed"; exit 1; }

"$PY" - "$tmp/perf.txt" "$tmp/out" <<'EOF'
import re, sys

perf = []   # per sample: (user frames root first, kernel frame count)
for block in open(sys.argv[1]).read().split("\n\n"):
    frames = [l.split(None, 1) for l in block.strip().split("\n") if l.strip()]
    if not frames:
        continue
    user, nk = [], 0
    for ip, sym in reversed(frames):  # root first
        if ip.startswith("ffffffff"):
            nk += 1
        elif sym != "[unknown]":
            user.append(sym)
    perf.append((user, nk))
names = {s for u, _ in perf for s in u}

ours = []   # expanded: (filtered user frames, kernel frame count, all kernel frames hex)
for line in open(sys.argv[2]):
    stack, n = line.rsplit(" ", 1)
    user, nk, hexk = [], 0, True
    for f in stack.split(";"):
        if f.endswith("([kernel.kallsyms])"):
            nk += 1
            hexk &= bool(re.match(r"0x[0-9a-f]+ \(\[kernel\.kallsyms\]\)$", f))
            continue
        name = re.sub(r" \([^()]*\)$", "", f)
        if name in names:
            user.append(name)
    ours += [(user, nk, hexk)] * int(n)

bad = []
if len(ours) != len(perf):
    bad.append("samples: perfspy %d, perf %d" % (len(ours), len(perf)))
free = list(range(len(ours)))
rooted = 0
for user, nk in sorted(perf, key=lambda p: -len(p[0])):
    callers = user[:-1]
    # An empty LBR: perf 6.1 still reads entries[0].to, past the sample
    # (one more kernel-looking frame, no user frame); perfspy keeps the
    # callchain's user part instead.
    nks = (nk, nk - 1) if not user else (nk,)
    hit = next((i for i in free if ours[i][1] in nks and ours[i][0][:len(callers)] == callers), None)
    if hit is None:
        bad.append("perf stack %s (+%d kernel frames) has no match" % (";".join(user), nk))
    else:
        free.remove(hit)
        rooted += bool(user) and user[0] == "_start"
if not all(h for _, _, h in ours):
    bad.append("a kernel frame has a name (the file is from kernel 5.4.0-56)")
for b in bad:
    print("  FAIL  " + b)
print("lbr: %d samples, %d matched perf script's (%d rooted at _start), %d problems"
      % (len(perf), len(perf) - len([b for b in bad if "no match" in b]), rooted, len(bad)))
sys.exit(1 if bad else 0)
EOF
