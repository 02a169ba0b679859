# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# The bench scripts' shared start (sourced, not run): strict mode, the C
# locale, where the build is ($O, default build/), the tools they time, and
# die() naming the script ($BENCH_NAME).
set -u
export LC_ALL=C
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
O=${O:-build}
case $O in /*) ;; *) O=$TOP/$O ;; esac
PERFSPY=${PERFSPY:-$O/perfspy}
PERF=${PERF:-perf}
# shellcheck disable=SC2034 # used by the scripts that source this
TIME=/usr/bin/time
die() { echo "${BENCH_NAME:-bench}: $*" >&2; exit 1; }
# need_tools: perfspy built and perf on PATH, or die.
need_tools() {
	[ -x "$PERFSPY" ] || die "$PERFSPY not built (run make)"
	command -v "$PERF" >/dev/null || die "perf not found (make deps)"
}
