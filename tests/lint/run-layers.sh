#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# No file-level import cycle in libconv/ or tools/, and libconv's stages
# import one way only (tests/lint/layers.py, docs/design.md "Layout").
set -u
cd "$(dirname "$0")/../.." || exit 1
O=${O:-build}
rc=0
python3 tests/lint/layers.py "$O/obj" libconv || rc=1
python3 tests/lint/layers.py "$O/tools" tools || rc=1
exit $rc
