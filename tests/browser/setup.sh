#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# tests/browser/setup.sh DIR: install the npm packages pinned in
# package-lock.json (playwright-core, speedscope) into DIR/node_modules with
# `npm ci`, unless DIR already holds them for this very lock file.
# Installing under the build directory keeps the source tree clean and lets
# `make clean` remove it.  No browser is downloaded: playwright-core has no
# install script and drives Debian's /usr/bin/chromium.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:?usage: setup.sh DIR}
mkdir -p "$dir"
if [ -d "$dir/node_modules/playwright-core" ] && [ -d "$dir/node_modules/speedscope" ] &&
	cmp -s "$dir/.lock-stamp" "$here/package-lock.json"; then
	exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$dir/"
(cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --ignore-scripts \
	--loglevel=error)
cp "$here/package-lock.json" "$dir/.lock-stamp"
