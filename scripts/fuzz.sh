#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and
# run each for FUZZ_SECONDS (default 60) on FUZZ_JOBS workers (default 1),
# seeded from the committed corpus (tests/fuzz/corpus/<target>/), the
# shared perf.data corpus and the unit-test fixtures. A crash, leak or
# sanitizer report is copied into tests/fuzz/corpus/<target>/ so that the
# gcc regression driver replays it in `make check` from then on; the run
# then fails. Per-target execution counts are printed at the end.
# Usage: scripts/fuzz.sh [target...]   (make fuzz FUZZ_SECONDS=900)
set -uo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP" || exit 1
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
B=build-fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in tests/fuzz/fuzz_*.c; do
		f=${f##*/fuzz_}
		targets+=("${f%.c}")
	done
fi

flags="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
make -s O=$B CC=clang CFLAGS="$flags" $B/libperfspy.a || exit 1
# The Makefile's package list, so that a library added there is linked here.
pkgs=$(make -s --no-print-directory print-pkgs) || exit 1
# shellcheck disable=SC2086 # a list of package names
libs="$(pkg-config --libs $pkgs) -ldl -lpthread"
inc="-Iinclude -Ilibconv -I$B/../build/deps/libperf/include $(pkg-config --cflags libdw libtraceevent)"
shared=$TOP/../shared/corpus/perf_data_converter
[ -d "$shared" ] || shared=/work/shared/corpus/perf_data_converter

seed() { # seed TARGET DIR: extra seeds outside the repo
	local t=$1 d=$2
	mkdir -p "$d"
	case $t in
	reader) [ -d "$shared" ] && find "$shared" -name 'perf.data*' -size -2M -size +0 -exec cp {} "$d/" \; ;;
	jit) for f in tests/unit/fixtures/jit/*.map; do [ -e "$f" ] && { printf '\0'; cat "$f"; } >"$d/$(basename "$f")"; done
	     for f in tests/unit/fixtures/jit/*.dump; do [ -e "$f" ] && { printf '\1'; cat "$f"; } >"$d/$(basename "$f")"; done ;;
	tracing) cp tests/unit/fixtures/tracing/*.bin "$d/" 2>/dev/null ;;
	pyspy) for f in tests/unit/fixtures/pyspy/*; do [ -f "$f" ] && cp "$f" "$d/"; done ;;
	pyscan) cp tests/unit/fixtures/python/*.py "$d/" 2>/dev/null
	        find /root/.pyenv/versions/3.12*/lib/python3.12 -maxdepth 1 -name '*.py' -size -64k 2>/dev/null | head -50 | xargs -r cp -t "$d/" ;;
	esac
}

rc=0
summary=()
for t in "${targets[@]}"; do
	bin=$B/fuzz_$t
	# shellcheck disable=SC2086 # $flags, $inc and $libs are word lists
	clang $flags -fsanitize=fuzzer $inc -D_GNU_SOURCE -o "$bin" "tests/fuzz/fuzz_$t.c" \
		"$B/libperfspy.a" $libs || { rc=1; continue; }
	mkdir -p "tests/fuzz/corpus/$t" "$B/work/$t" "$B/crash/$t"
	seed "$t" "$B/seeds/$t"
	log=$B/fuzz_$t.log
	"$bin" -max_total_time="$secs" -jobs="$jobs" -workers="$jobs" -max_len=262144 \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$B/crash/$t/" "$B/work/$t" "tests/fuzz/corpus/$t" "$B/seeds/$t" \
		>"$log" 2>&1
	# With -jobs, each worker's totals are in fuzz-N.log and repeated in
	# the main log: count one of the two.
	if ls fuzz-*.log >/dev/null 2>&1; then
		execs=$(grep -h 'stat::number_of_executed_units' fuzz-*.log | awk '{n += $2} END {print n + 0}')
	else
		execs=$(grep -h 'stat::number_of_executed_units' "$log" | awk '{n += $2} END {print n + 0}')
	fi
	crashes=$(find "$B/crash/$t" -mindepth 1 -maxdepth 1 | wc -l)
	if [ "$crashes" -gt 0 ]; then
		cp "$B/crash/$t"/* "tests/fuzz/corpus/$t/"
		rc=1
	fi
	summary+=("fuzz $t: $execs executions in ${secs}s, $crashes crashing inputs")
	rm -f fuzz-*.log
done
printf '%s\n' "${summary[@]}"
exit $rc
