#!/usr/bin/env bash
# check-abi.sh SHLIB MAP: the dynamic exports of SHLIB are exactly the
# names MAP lists, each in the version node that lists it; MAP names no
# symbol twice and uses no wildcard outside `local: *;`; and every
# function declared PERFSPY_API in include/perfspy.h is listed (kernel
# tools/lib/bpf/Makefile check_abi compares the map with the library the
# same way).
set -euo pipefail
lib=$1 map=$2

# "name node" for every name listed in a node's global: part.
listed=$(awk '
	/\/\*/ { incomment = 1 }
	incomment { if (/\*\//) incomment = 0; next }
	/^[A-Za-z_0-9.]+ *\{/ { node = $1; scope = ""; next }
	/global:/ { scope = "global"; next }
	/local:/ { scope = "local"; next }
	/^\}/ { node = ""; next }
	node != "" && scope == "global" {
		gsub(/[ \t;]/, "")
		if ($0 != "") print $0, node
	}' "$map" | sort)
if [ -z "$listed" ]; then
	echo "check-abi: $map lists no exported name" >&2
	exit 1
fi
if echo "$listed" | awk '{print $1}' | grep -q '[*?]'; then
	echo "check-abi: $map uses a wildcard in a global: list; name each export" >&2
	exit 1
fi
dup=$(echo "$listed" | awk '{print $1}' | uniq -d)
if [ -n "$dup" ]; then
	echo "check-abi: listed more than once in $map:" >&2
	echo "$dup" >&2
	exit 1
fi

# "name node" for every defined dynamic symbol (the node's own symbol,
# nm's "PERFSPY_0.1" line, is left out).
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRWV]$/ && $3 ~ /@@/ {
	split($3, a, "@@"); print a[1], a[2] }' | sort)
diff=$(diff <(echo "$listed") <(echo "$exported") || true)
if [ -n "$diff" ]; then
	echo "check-abi: exports differ from $map (< listed only, > exported only):" >&2
	echo "$diff" | grep '^[<>]' >&2
	exit 1
fi
unversioned=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRW]$/ && $3 !~ /@@/ {print $3}')
if [ -n "$unversioned" ]; then
	echo "check-abi: exports without a version node:" >&2
	echo "$unversioned" >&2
	exit 1
fi

hdr=$(grep -v "^#define" include/perfspy.h | grep -o "PERFSPY_API [^(]*(" |
	sed "s/.*[ *]\([a-z_0-9]*\)(\$/\1/" | sort -u)
missing=$(comm -23 <(echo "$hdr") <(echo "$listed" | awk '{print $1}' | sort -u))
if [ -n "$missing" ]; then
	echo "check-abi: declared in perfspy.h but not listed in $map:" >&2
	echo "$missing" >&2
	exit 1
fi
nodes=$(echo "$listed" | awk '{print $2}' | sort -u | tr '\n' ' ')
echo "check-abi: $(echo "$listed" | wc -l) functions exported in ${nodes% }"
