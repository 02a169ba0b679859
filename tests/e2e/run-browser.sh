#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (browser): the flame graph SVG and the speedscope file in a real
# browser, Debian's headless chromium driven by playwright-core
# (tests/browser/, npm packages pinned in its package-lock.json and
# installed by tests/browser/setup.sh into $O/browser; no browser is
# downloaded).
#   - SVG (tests/browser/svg.js): renders, frame elements = nodes of the
#     merged stacks, colours by kind, tooltips, click zooms, Reset Zoom,
#     search share = share computed from the stacks, nothing fetched.
#   - speedscope (tests/browser/speedscope.js): the npm package's app
#     served from 127.0.0.1 imports the file without error, shows the
#     active thread's profile, lists the heaviest frames, switches threads.
# Inputs: the report workload recorded with perf (src/report_split.c), a
# hand-made training-like stack file (tests/browser/fixture-stacks.txt:
# Python, native and kernel frames of several libraries, markup characters
# in names), and (issue 15) a deep real profile: Python 3.12 -X perf
# recursing 150 frames deep into libm (src/py/deep_recursion.py, DWARF
# stacks), whose flame graph is ~2500 px tall: the details bar must stay
# in view when scrolled, frames grouped by function, colours by library;
# its speedscope file is in time order (docs/output.md §7-§8).
# Screenshots and the files they show are kept in $O/test-artifacts/.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=tests/e2e/report-lib.sh
. "$(dirname "$0")/report-lib.sh"

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
BROWSER_DIR=$TOP/tests/browser
ART=$O/test-artifacts

need_perfspy
[ -x "$CHROMIUM" ] || skip "$CHROMIUM not found (make deps installs Debian's chromium)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	skip "node/npm not found (make deps)"
fi
need_perf
scratch
mkdir -p "$ART" || die "mkdir $ART"
if ! bash "$BROWSER_DIR/setup.sh" "$O/browser" >"$SCRATCH/npm.log" 2>&1; then
	cat "$SCRATCH/npm.log"
	skip "npm ci of tests/browser/package-lock.json failed"
fi
MODULES=$O/browser/node_modules

# node_check SCRIPT ARGS...: run a browser check, turn its ok/FAIL lines into
# checks; a non-zero exit without a FAIL line is a failure too.
node_check() {
	local script=$1 line rc=0
	shift
	timeout 300 node "$BROWSER_DIR/$script" --modules "$MODULES" --chromium "$CHROMIUM" "$@" \
		>"$SCRATCH/node.out" 2>&1 || rc=$?
	while IFS= read -r line; do
		case $line in
		'ok '*) pass "${script%.js}: ${line#ok }" ;;
		'FAIL '*) fail "${script%.js}: ${line#FAIL }" ;;
		*) say "    $line" ;;
		esac
	done <"$SCRATCH/node.out"
	if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$SCRATCH/node.out"; then
		fail "$script exited $rc"
	fi
}

# The recorded workload: folded stacks, SVG, speedscope, all with thread roots.
record_split
"$PERFSPY" convert -q --threads -i "$REC" -o "$ART/split.txt" || die "convert failed"
"$PERFSPY" convert -q --threads --format flamegraph --title "perfspy: report_split (perf record -F 999 -g)" \
	-i "$REC" -o "$ART/flamegraph-split.svg" || die "convert --format flamegraph failed"
"$PERFSPY" convert -q --threads --format speedscope -i "$REC" -o "$ART/split.speedscope.json" ||
	die "convert --format speedscope failed"
node_check svg.js --svg "$ART/flamegraph-split.svg" --folded "$ART/split.txt" \
	--shot "$ART/flamegraph-split" --search cudaLaunchKernel
node_check speedscope.js --json "$ART/split.speedscope.json" --shot "$ART/speedscope-split"

# The hand-made stacks, read as folded input.
fix=$BROWSER_DIR/fixture-stacks.txt
"$PERFSPY" convert -q --format flamegraph --title "perfspy: fixture <train.py> & friends" \
	-i "$fix" -o "$ART/flamegraph-fixture.svg" || die "convert of the fixture failed"
"$PERFSPY" convert -q --format speedscope -i "$fix" -o "$ART/fixture.speedscope.json" ||
	die "convert of the fixture to speedscope failed"
node_check svg.js --svg "$ART/flamegraph-fixture.svg" --folded "$fix" \
	--shot "$ART/flamegraph-fixture" --search 'malloc|Malloc'
node_check speedscope.js --json "$ART/fixture.speedscope.json" --shot "$ART/speedscope-fixture"

# The deep real profile (issue 15).
py312=$(find_python 3.12)
if [ -z "$py312" ]; then
	if [ "${CI:-}" = true ]; then
		fail "deep profile: no CPython 3.12 with perf trampolines (set PY312)"
	else
		say "deep profile: no CPython 3.12 with perf trampolines (set PY312): not run"
	fi
else
	deep=$SCRATCH/deep.data
	if "$PERF" record -F 499 --call-graph dwarf,65528 -o "$deep" -- \
		"$py312" -X perf "$E2E_SRC/py/deep_recursion.py" 40 >"$SCRATCH/deep.out" 2>"$SCRATCH/deep.err"; then
		"$PERFSPY" convert -q -i "$deep" -o "$ART/deep.txt" || die "convert of the deep profile failed"
		"$PERFSPY" convert -q --format flamegraph --title "perfspy: deep recursion (python3.12 -X perf, DWARF)" \
			-i "$deep" -o "$ART/flamegraph-deep.svg" || die "convert --format flamegraph (deep) failed"
		"$PERFSPY" convert -q --threads -i "$deep" -o "$ART/deep-threads.txt" ||
			die "convert --threads (deep) failed"
		"$PERFSPY" convert -q --format speedscope -i "$deep" -o "$ART/deep.speedscope.json" ||
			die "convert --format speedscope (deep) failed"
		depth=$(awk '{ n = gsub(";", ";"); if (n > m) m = n } END { print m + 1 }' "$ART/deep.txt")
		if [ "$depth" -ge 100 ]; then
			pass "deep profile: stacks $depth frames deep"
		else
			fail "deep profile: stacks only $depth frames deep (want >= 100)"
		fi
		node_check svg.js --svg "$ART/flamegraph-deep.svg" --folded "$ART/deep.txt" \
			--shot "$ART/flamegraph-deep" --search '^deep '
		node_check speedscope.js --json "$ART/deep.speedscope.json" --shot "$ART/speedscope-deep"
	else
		fail "perf record of the deep recursion failed: $(tail -3 "$SCRATCH/deep.err")"
	fi
fi

say "screenshots (test artifacts):"
for f in "$ART"/flamegraph-split.png "$ART"/flamegraph-split-zoom.png "$ART"/flamegraph-fixture.png \
	"$ART"/flamegraph-deep.png "$ART"/flamegraph-deep-scrolled.png "$ART"/flamegraph-deep-wide.png \
	"$ART"/speedscope-split.png "$ART"/speedscope-fixture-sandwich.png "$ART"/speedscope-deep.png; do
	[ -f "$f" ] && say "  $f"
done
finish
