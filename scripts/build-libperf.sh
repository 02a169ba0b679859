#!/usr/bin/env bash
# Build libperf (headers + static library) from Debian's linux-source-6.1
# into DEST (default build/deps). Debian ships no libperf package
# (docs/design.md "Dependencies"); the build takes about 2 s.
set -euo pipefail

dest=${1:-build/deps}
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
if [ ! -r "$tarball" ]; then
	echo "perfspy: $tarball not found; run 'make deps' (installs linux-source-6.1)" >&2
	exit 1
fi
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
src="$dest/linux-source-6.1"
if [ ! -d "$src/tools/lib/perf" ]; then
	echo "perfspy: extracting tools/ from $tarball" >&2
	tar -xJf "$tarball" -C "$dest" linux-source-6.1/tools
fi
mkdir -p "$dest/libperf-build"
make -s -C "$src/tools/lib/perf" O="$dest/libperf-build" prefix="$dest/libperf" \
	libdir_relative=lib -j2 install_lib install_headers install_pkgconfig >/dev/null
# libperf.a lacks libapi; keep it beside (docs/perf-data-format.md §4).
cp "$dest/libperf-build/libapi.a" "$dest/libperf/lib/"
touch "$dest/libperf/.stamp"
