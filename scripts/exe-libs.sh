#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# scripts/exe-libs.sh PKG...: the link flags of an executable that takes
# each dependency's static archive where the compiler finds one.
#
# Each -lX of `pkg-config --static --libs PKG...` whose libX.a the
# compiler finds goes inside -Wl,-Bstatic; glibc's own libraries stay
# dynamic, and so does a library with no archive but a linkable shared
# object. If one has neither (a -dev package with no archive and a
# private dependency missing), the plain `pkg-config --libs` is printed:
# a static libdw would need that library's symbols.
#
# Used by the Makefile for the perfspy executable (STATIC_DEPS=1, the
# default: every shared library costs each start about 0.15 ms to map
# and relocate on this project's machines, docs/design.md §6.29) and by
# scripts/build-wheel.sh. PKG_CONFIG and CC choose the tools.
set -euo pipefail

PKG_CONFIG=${PKG_CONFIG:-pkg-config}
CC=${CC:-cc}
[ $# -gt 0 ] || { echo "usage: $0 PKG..." >&2; exit 2; }

static=() dynamic=()
for f in $($PKG_CONFIG --static --libs "$@"); do
	case $f in
	-lc | -lm | -ldl | -lpthread | -lrt | -pthread) continue ;;
	-l*)
		a=$($CC -print-file-name="lib${f#-l}.a")
		s=$($CC -print-file-name="lib${f#-l}.so")
		if [ "$a" != "lib${f#-l}.a" ] && [ -e "$a" ]; then
			static+=("$f")
		elif [ "$s" != "lib${f#-l}.so" ] && [ -e "$s" ]; then
			dynamic+=("$f")
		else
			$PKG_CONFIG --libs "$@"
			exit 0
		fi
		;;
	*) static+=("$f") ;;
	esac
done
echo "-Wl,-Bstatic ${static[*]} -Wl,-Bdynamic ${dynamic[*]}"
