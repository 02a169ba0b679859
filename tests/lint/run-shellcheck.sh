#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Every shell script in the repository passes shellcheck (settings and
# the one repository-wide exception in .shellcheckrc). Scripts are the
# tracked *.sh files plus tracked files whose first line runs sh or bash.
# Skips (77) when shellcheck is not installed (scripts/install-deps.sh
# installs it).
set -u
cd "$(dirname "$0")/../.." || exit 1
if ! command -v shellcheck >/dev/null 2>&1; then
	echo "skip: shellcheck is not installed"
	exit 77
fi
scripts=()
while IFS= read -r f; do
	[ -f "$f" ] || continue
	case $f in
	*.sh) scripts+=("$f") ;;
	*) head -n1 "$f" | grep -Eq '^#!.*[/ ](ba)?sh( |$)' && scripts+=("$f") ;;
	esac
done < <(git ls-files 2>/dev/null || find . -type f -not -path './build*' -printf '%P\n')
if [ ${#scripts[@]} -eq 0 ]; then
	echo "no scripts found"
	exit 1
fi
shellcheck "${scripts[@]}" || exit 1
echo "shellcheck: ${#scripts[@]} scripts clean"
