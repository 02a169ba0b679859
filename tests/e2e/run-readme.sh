#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: README.md works as written (issue 15). Every ```sh block runs, in
# the order of the file, in one working directory, with bash -e: each must
# exit 0. An HTML comment on the line before a block changes that:
#
#   <!-- readme-test: skip (REASON) -->         not run (kept few: network
#                                                servers, the test suite itself,
#                                                an installed wheel)
#   <!-- readme-test: with train.py running --> a python3.12 train.py runs in
#                                                the background (for --pid)
#   <!-- readme-test: file NAME -->             on a plain ``` block: written to
#                                                NAME for the blocks after it
#   <!-- readme-test: output FILE -->           on a plain ``` block: each of
#                                                its lines is a line of FILE as
#                                                the blocks before wrote it, with
#                                                any number where it has a number
#                                                and anything where it has "..."
#
# The files the README takes as given are made here: `./my_program` (the
# e2e chain workload), `train.py` (src/readme/train.py), `node1.pb.gz` and
# `node2.pb.gz` (two nodes' profiles), `pyspy.txt` for the quick reference's
# merge line; `build` and `tests` are the repository's, as in its top
# directory. On PATH: perfspy, python3.12 (a CPython 3.12 with perf
# trampolines) and a `py-spy` stand-in (py-spy is not a test dependency):
# it only checks that the pid it is given is a running Python, which is
# what the merge recipe must get right ($! after `perf record ... &` is
# perf's pid), waits for that process to end as py-spy does, and writes a
# one-stack capture.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

py312=$(find_python 3.12)
[ -n "$py312" ] || skip "no CPython 3.12 with perf trampolines"

W=$SCRATCH/work BIN=$SCRATCH/bin
mkdir -p "$W" "$BIN"
ln -s "$PERFSPY" "$BIN/perfspy"
ln -s "$py312" "$BIN/python3.12"
ln -s "$O" "$W/build"
ln -s "$TOP/tests" "$W/tests"
build chain
cp "$E2E_BIN/chain" "$W/my_program"
cp "$E2E_SRC/readme/train.py" "$W/train.py"
cat >"$BIN/py-spy" <<'SHIM'
#!/usr/bin/env bash
# py-spy stand-in (tests/e2e/run-readme.sh): is --pid a Python process?
pid= out=
while [ $# -gt 0 ]; do
	case $1 in
	--pid | -p) pid=$2; shift ;;
	-o | --output) out=$2; shift ;;
	esac
	shift
done
exe=$(readlink "/proc/$pid/exe" 2>/dev/null)
case ${exe##*/} in
python*) ;;
*) echo "py-spy stand-in: pid $pid is not Python (exe '$exe')" >&2; exit 1 ;;
esac
while [ -e "/proc/$pid" ]; do sleep 0.1; done
echo "thread (${pid}): MainThread;<module> (train.py:47);main (train.py:38);step (train.py:27) 1" >"$out"
SHIM
chmod +x "$BIN/py-spy"
# A dlfilter built with sanitizers (make asan) loads into perf, which has no
# sanitizer runtime: as in run-plugin.sh, `perf script` gets the runtime
# first (LD_PRELOAD), and perf's own allocations are not ours to leak-check.
realperf=$(command -v "$PERF") || die "perf not found"
san=
if readelf -d "$O/perfspy-dlfilter.so" 2>/dev/null | grep -q 'NEEDED.*libasan'; then
	san="LD_PRELOAD=$(${CC:-gcc} -print-file-name=libasan.so) ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
elif readelf -d "$O/perfspy-dlfilter.so" 2>/dev/null | grep -q 'NEEDED.*libubsan'; then
	san="LD_PRELOAD=$(${CC:-gcc} -print-file-name=libubsan.so)"
fi
if [ -n "$san" ]; then
	cat >"$BIN/perf" <<SHIM
#!/usr/bin/env bash
# perf, with the sanitizer runtime first for perf script (tests/e2e/run-readme.sh).
[ "\${1:-}" = script ] && exec env $san "$realperf" "\$@"
exec "$realperf" "\$@"
SHIM
	chmod +x "$BIN/perf"
fi
export PATH=$BIN:$PATH TRAIN_SECONDS=2
unset DEBUGINFOD_URLS

# Given files.
(
	cd "$W" || exit 1
	for n in node1 node2; do
		"$PERF" record -q -F 999 -g -o "$n.data" -- ./my_program >/dev/null 2>&1 &&
			perfspy convert -q -i "$n.data" --threads --format pprof -o "$n.pb.gz" || exit 1
		rm -f "$n.data"
	done
	python3.12 -X perf train.py & pid=$!
	py-spy record --threads --format raw -o pyspy.txt --pid $pid
) || die "cannot make the README's given files"

# The blocks, with their markers: "KIND LINE ARG" lines and blocks/N.
mkdir "$SCRATCH/blocks"
(cd "$TOP" && "$PY" - README.md "$SCRATCH/blocks") >"$SCRATCH/blocks.list" <<'PYEOF' || die "cannot read README.md's blocks"
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
n = 0
i = 0
while i < len(lines):
    m = re.match(r"^```(\w*)\s*$", lines[i])
    if not m:
        i += 1
        continue
    j = i + 1
    while not lines[j].startswith("```"):
        j += 1
    k = i - 1
    while k >= 0 and not lines[k].strip():
        k -= 1
    mark = re.match(r"^<!-- readme-test: (.*?) -->$", lines[k].strip()) if k >= 0 else None
    mark = mark.group(1) if mark else ""
    n += 1
    with open("%s/%d" % (sys.argv[2], n), "w", encoding="utf-8") as f:
        f.write("\n".join(lines[i + 1:j]) + "\n")
    if m.group(1) == "sh":
        kind = "skip" if mark.startswith("skip") else "bg" if mark == "with train.py running" else "run"
        print(kind, n, i + 1, mark.replace(" ", "_") or "-")
    elif mark.startswith("output ") or mark.startswith("file "):
        print(mark.split(" ")[0], n, i + 1, mark.split(" ", 1)[1])
    i = j + 1
PYEOF

# output_ok BLOCK FILE: every line of BLOCK is a line of FILE, numbers and
# "..." left open.
output_ok() {
	"$PY" - "$1" "$2" <<'PYEOF'
import re, sys
have = open(sys.argv[2], encoding="utf-8", errors="replace").read().split("\n")
bad = 0
for want in open(sys.argv[1], encoding="utf-8").read().split("\n"):
    if not want:
        continue
    pat = re.escape(want).replace(re.escape("..."), ".*")
    pat = re.sub(r"[0-9]+", "[0-9]+", pat)
    if not any(re.fullmatch(pat, h) for h in have):
        print("no line like: " + want[:300])
        bad += 1
sys.exit(1 if bad else 0)
PYEOF
}

nskip=0
while read -r kind n line arg; do
	what="README.md:$line"
	case $kind in
	skip)
		nskip=$((nskip + 1))
		say "  --    $what: not run: ${arg//_/ }"
		continue
		;;
	file)
		cp "$SCRATCH/blocks/$n" "$W/$arg"
		continue
		;;
	output)
		if [ ! -e "$W/$arg" ]; then
			fail "$what: output block of $arg, which no block wrote"
		elif msg=$(output_ok "$SCRATCH/blocks/$n" "$W/$arg"); then
			pass "$what: the output shown is $arg's"
		else
			fail "$what: the output shown is not $arg's: $msg"
		fi
		continue
		;;
	esac
	bgpid=
	if [ "$kind" = bg ]; then
		(cd "$W" && TRAIN_SECONDS=15 exec python3.12 train.py) &
		bgpid=$!
		sleep 1
	fi
	rc=0
	(cd "$W" && timeout -k 5 240 bash -e -o pipefail "$SCRATCH/blocks/$n") \
		>"$SCRATCH/out.$n" 2>&1 </dev/null || rc=$?
	# perf record once wrote a record of size 0 into its own file and
	# said so ("0x298 [0]: failed to process type: 24184"); perfspy then
	# refused the file, as it must. That is perf's failure, not the
	# README's: such a block runs once more, and a second failure counts.
	if [ "$rc" -ne 0 ] && [ -z "$bgpid" ] &&
		grep -q 'failed to process type' "$SCRATCH/out.$n"; then
		say "  note  $what: perf wrote a damaged record ($(grep -m1 'failed to process type' "$SCRATCH/out.$n")); run again"
		rc=0
		(cd "$W" && timeout -k 5 240 bash -e -o pipefail "$SCRATCH/blocks/$n") \
			>"$SCRATCH/out.$n" 2>&1 </dev/null || rc=$?
	fi
	if [ -n "$bgpid" ]; then
		kill "$bgpid" 2>/dev/null
		wait "$bgpid" 2>/dev/null
	fi
	if [ "$rc" -eq 0 ]; then
		pass "$what: runs ($(grep -cv '^[[:space:]]*\(#\|$\)' "$SCRATCH/blocks/$n") command lines)"
	else
		fail "$what: exit $rc: $(tail -c 600 "$SCRATCH/out.$n")"
	fi
done <"$SCRATCH/blocks.list"

# What the commands say they write, written.
for f in stacks.txt flame.svg profile.json merged.txt cpu.pb.gz all.pb.gz job.pb.gz \
	profile.svg raw.txt p.json; do
	if [ -s "$W/$f" ]; then
		pass "$f written"
	else
		fail "$f: not written by the README's commands"
	fi
done
# Six cannot run here: the suite itself, Pyroscope/Parca, the network
# debuginfod, the wheel install, `perfspy top` (full screen until q:
# run-top.sh drives it in tmux), and a recording made on an arm64 node
# (run-arm64.sh converts the ones committed). A seventh is a new one to
# make runnable, not to mark.
if [ "$nskip" -le 6 ]; then
	pass "$nskip blocks marked not to run"
else
	fail "$nskip blocks marked not to run (at most 6: mark only what cannot run here)"
fi
finish
