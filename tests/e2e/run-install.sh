#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install smoke test (libbpf ci/managers/test_compile.sh in spirit):
# `make install DESTDIR=...`, then a program built only through the
# installed perfspy.pc converts a real recording; the public header
# compiles alone as C99 and as C++; exports match the version node.
. "$(dirname "$0")/lib.sh"

SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
dest=$SCRATCH/root
prefix=/usr/local

# The version the Makefile builds (its VERSION_* lines), not one written here.
ver=$(sed -n 's/^VERSION_\(MAJOR\|MINOR\|PATCH\) := //p' "$TOP/Makefile" | paste -sd.)
case $ver in [0-9]*.[0-9]*.[0-9]*) ;; *) die "no VERSION_MAJOR/MINOR/PATCH in the Makefile ($ver)" ;; esac

make -s -C "$TOP" O="$O" install DESTDIR="$dest" PREFIX=$prefix >"$SCRATCH/install.log" 2>&1 ||
	die "make install failed: $(tail -3 "$SCRATCH/install.log")"
for f in bin/perfspy include/perfspy.h lib/libperfspy.so.$ver lib/libperfspy.so.0 \
	lib/libperfspy.so lib/libperfspy.a lib/pkgconfig/perfspy.pc; do
	[ -e "$dest$prefix/$f" ] && pass "installed $f" || fail "missing $f"
done
# The dlfilter plugin, when the build had perf's header for it.
if [ -f "$O/perfspy-dlfilter.so" ]; then
	[ -e "$dest$prefix/lib/perfspy/perfspy-dlfilter.so" ] &&
		pass "installed lib/perfspy/perfspy-dlfilter.so" ||
		fail "missing lib/perfspy/perfspy-dlfilter.so"
fi
soname=$(readelf -d "$dest$prefix/lib/libperfspy.so.$ver" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libperfspy.so.0 ] && pass "soname $soname" || fail "soname '$soname'"

(cd "$TOP" && scripts/check-abi.sh "$O/libperfspy.so.$ver" libperfspy.map) >"$SCRATCH/abi.log" 2>&1 &&
	pass "$(cat "$SCRATCH/abi.log")" || fail "check-abi: $(cat "$SCRATCH/abi.log")"

echo '#include <perfspy.h>' >"$SCRATCH/h.c"
cc -std=c99 -Wall -Wextra -Werror -pedantic -I"$dest$prefix/include" -c "$SCRATCH/h.c" \
	-o "$SCRATCH/h.o" 2>"$SCRATCH/c99.log" && pass "perfspy.h compiles alone as C99" ||
	fail "perfspy.h as C99: $(head -3 "$SCRATCH/c99.log")"
cp "$SCRATCH/h.c" "$SCRATCH/h.cc"
c++ -std=c++11 -Wall -Wextra -Werror -I"$dest$prefix/include" -c "$SCRATCH/h.cc" \
	-o "$SCRATCH/hh.o" 2>"$SCRATCH/cxx.log" && pass "perfspy.h compiles alone as C++" ||
	fail "perfspy.h as C++: $(head -3 "$SCRATCH/cxx.log")"

cat >"$SCRATCH/use.c" <<'C'
#include <perfspy.h>
#include <string.h>
int main(int argc, char **argv)
{
	struct perfspy_session *s;
	struct perfspy_folder *f;
	char msg[128];
	int err = perfspy_session__open(argv[1], NULL, &s);

	if (err) {
		perfspy_strerror(err, msg, sizeof(msg));
		fprintf(stderr, "%s\n", msg);
		return 1;
	}
	if (perfspy_folder__new(&f) || perfspy_session__convert(s, NULL, f) ||
	    perfspy_folder__write(f, stdout, NULL))
		return 1;
	perfspy_folder__free(f);
	perfspy_session__close(s);
	return argc > 2 && strcmp(argv[2], perfspy_version_string());
}
C
pcdir=$dest$prefix/lib/pkgconfig
flags=$(PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$dest pkg-config --cflags --libs perfspy 2>&1) ||
	die "pkg-config perfspy: $flags"
# A sanitizer build of the library needs its runtime in the consumer too.
san=
readelf -d "$dest$prefix/lib/libperfspy.so.$ver" | grep -q 'libasan' && san="-fsanitize=address,undefined"
readelf -d "$dest$prefix/lib/libperfspy.so.$ver" | grep -q 'libubsan' && [ -z "$san" ] && san="-fsanitize=undefined"
# shellcheck disable=SC2086 # $san and $flags are word lists
cc $san -o "$SCRATCH/use" "$SCRATCH/use.c" $flags -Wl,-rpath,"$dest$prefix/lib" 2>"$SCRATCH/cc.log" &&
	pass "a consumer builds with pkg-config --cflags --libs perfspy" ||
	fail "consumer build: $(head -5 "$SCRATCH/cc.log")"

need_perf
data=$SCRATCH/sleep.data
# shellcheck disable=SC2016 # $i belongs to the inner sh
$PERF record -q -F 999 -g -o "$data" -- sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done' \
	>/dev/null 2>&1 || die "perf record failed"
want=$("$PERFSPY" convert -i "$data" -q) || die "perfspy convert failed"
got=$("$SCRATCH/use" "$data" "$("$PERFSPY" --version | cut -d' ' -f2)") &&
	[ "$got" = "$want" ] && [ -n "$got" ] &&
	pass "the installed library gives the CLI's output ($(echo "$got" | wc -l) stacks)" ||
	fail "installed library output differs from the CLI's"
finish
