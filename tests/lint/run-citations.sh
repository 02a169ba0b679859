#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Comments and documents cite only files that exist in the repository and
# sections that docs/ has (tests/lint/citations.py says exactly what is
# checked; docs/conventions.md §10). Old-style citations of the notes that
# lived outside the repository are rewritten by
# tests/lint/rewrite-citations.py.
set -u
cd "$(dirname "$0")/../.." || exit 1
exec python3 tests/lint/citations.py .
