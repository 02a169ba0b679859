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
# Inputs: the report workload recorded with perf (src/report_split.c) and a
# hand-made training-like stack file (tests/browser/fixture-stacks.txt:
# Python, native and kernel frames, markup characters in names).
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

say "screenshots (test artifacts):"
for f in "$ART"/flamegraph-split.png "$ART"/flamegraph-split-zoom.png "$ART"/flamegraph-fixture.png \
	"$ART"/speedscope-split.png "$ART"/speedscope-fixture-sandwich.png; do
	say "  $f"
done
finish
