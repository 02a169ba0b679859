#!/usr/bin/env bash
# Install what perfspy needs to build and test, if it is missing.
# Idempotent: a machine that has everything runs no apt-get at all.
# Debian package names (docs/design.md "Dependencies").
set -euo pipefail

# The shellcheck package: tests/lint/run-shellcheck.sh (skipped without it).
# chromium: the browser tests (tests/e2e/run-browser.sh) open the flame
# graph and speedscope output in it, headless.
# python3-torch: a real PyTorch CPU training loop on the system Python
# (tests/e2e/run-torch.sh).
# libprotobuf-c-dev, zlib1g-dev: the pprof writer (gzipped protobuf);
# protobuf-c-compiler: `make proto` regenerates libconv/folded/pprof.pb-c.*;
# libdebuginfod-dev: symbols from $DEBUGINFOD_URLS servers; golang-go
# (go tool pprof) and debuginfod (a local server): the pprof and debuginfod
# e2e tests.
pkgs=(build-essential pkg-config libdw-dev libelf-dev libzstd-dev time
      libtraceevent-dev linux-source-6.1 linux-perf clang chromium shellcheck
      python3-torch libprotobuf-c-dev protobuf-c-compiler zlib1g-dev
      libdebuginfod-dev golang-go debuginfod)
# libdeflate-dev: inflating compressed debug sections before libdw opens
# them (libconv/frames/symbols.c, docs/design.md §6.3).
pkgs+=(libdeflate-dev)
# patchelf: make wheel bundles libperfspy.so's libraries with an $ORIGIN
# rpath (scripts/build-wheel.sh).
pkgs+=(patchelf)
# xz-utils: the arm64 fixtures are a .tar.xz (tests/e2e/run-arm64.sh).
# Not for CI: tests/arm64/build-vm.sh, which regenerates them, needs
# debootstrap qemu-system-arm gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
# binutils-aarch64-linux-gnu cpio kmod (docs/arm64.md §4).
pkgs+=(xz-utils)
# tmux: tests/e2e/run-top.sh drives `perfspy top` in a terminal (issue 10).
pkgs+=(tmux)
# procps: pgrep, in the README's `perfspy record --pid "$(pgrep -n python3.12)"`
# (tests/e2e/run-readme.sh runs every README command).
pkgs+=(procps)
# strace: tests/e2e/run-cli.sh checks how -o replaces an existing file.
pkgs+=(strace)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
# node and npm for the browser tests' npm packages (tests/browser); a node
# installed some other way (it bundles npm) is used as it is.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "perfspy: missing packages: ${missing[*]}" >&2
	echo "perfspy: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "perfspy: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
