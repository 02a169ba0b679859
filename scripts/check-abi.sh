#!/usr/bin/env bash
# check-abi.sh SHLIB MAP: every dynamic export of SHLIB is perfspy_* and sits
# in the version node of MAP, and every export named in the public header
# is exported (kernel tools/lib/bpf/Makefile check_abi does the same).
set -euo pipefail
lib=$1 map=$2
node=$(awk '/^PERFSPY_[0-9.]+ *\{/ {n=$1} END {print n}' "$map")
exports=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sort -u)
bad=$(echo "$exports" | grep -v "@@$node\$" | grep -v "^$node\$" || true)
if [ -n "$bad" ]; then
	echo "check-abi: exports outside $node:" >&2
	echo "$bad" >&2
	exit 1
fi
bad=$(echo "$exports" | sed 's/@@.*//' | grep -v "^$node\$" | grep -v '^perfspy_' || true)
if [ -n "$bad" ]; then
	echo "check-abi: unprefixed exports:" >&2
	echo "$bad" >&2
	exit 1
fi
hdr=$(grep -v "^#define" include/perfspy.h | grep -o "PERFSPY_API [^(]*(" | sed "s/.*[ *]\([a-z_0-9]*\)(\$/\1/" | sort -u)
missing=$(comm -23 <(echo "$hdr") <(echo "$exports" | sed 's/@@.*//' | sort -u))
if [ -n "$missing" ]; then
	echo "check-abi: declared in perfspy.h but not exported:" >&2
	echo "$missing" >&2
	exit 1
fi
echo "check-abi: $(echo "$hdr" | wc -l) functions exported in $node"
