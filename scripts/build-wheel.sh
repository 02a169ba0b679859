#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make wheel: dist/perfspy-VERSION-py3-none-manylinux_2_XX_x86_64.whl.
#
# The wheel holds the perfspy executable (installed on the venv's PATH
# from perfspy-VERSION.data/scripts/, as py-spy's wheel installs its
# binary), the package python/perfspy/ with libperfspy.so beside it (the
# ctypes API loads it from there) and, when the build made one, the perf
# dlfilter plugin. Nothing is compiled where it is installed.
#
# Built in $WHEEL_O (default build-wheel/). The executable links every
# dependency Debian ships a static archive of (libdw, libelf, libzstd,
# libz, liblzma, libbz2, libtraceevent, libgcc), so that only glibc stays
# dynamic (libstdc++, which manylinux lets a wheel expect, is opened only
# to demangle a C++ name: docs/design.md §6.29); libperfspy.so (whose dependencies' archives are
# not PIC) gets the shared ones bundled beside it with an $ORIGIN rpath
# (patchelf), as auditwheel does. The build fails if ldd shows any other
# library. The tag is manylinux_2_XX from the build machine's glibc
# (PEP 600: a glibc-2.XX-based system can run it).
#
# The wheel is a zip written here by hand (PEP 427: METADATA, WHEEL and a
# RECORD of sha256 digests), so no setuptools or wheel package is needed.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
WO=${WHEEL_O:-build-wheel}
DIST=${DIST:-dist}
PY=${PYTHON3:-$(command -v python3)}
MAKE=${MAKE:-make}
CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}

# The Makefile's own values, so that this script follows it (a branch
# that adds a pkg-config dependency to PKGS gets it linked statically).
mkvar() {
	"$MAKE" --no-print-directory -s -f Makefile -f - print-var VAR="$1" <<'EOF'
print-var:
	@echo $($(VAR))
EOF
}
version=$(mkvar VERSION)
pkgs=$(mkvar PKGS)

# The executable: each dependency's static archive where the compiler
# finds one (scripts/exe-libs.sh, as the Makefile's default build);
# glibc's own libraries (and any library without an archive) stay
# dynamic. A PIE executable can take Debian's archives (built -fPIE,
# local-exec TLS in libdw/libelf). --as-needed after our list: the
# Makefile's own trailing -ldl and -lpthread then add no DT_NEEDED (both
# are in glibc's libc since 2.34).
# shellcheck disable=SC2086 # pkgs is a word list
exe_libs="$(PKG_CONFIG=$PKG_CONFIG CC=$CC scripts/exe-libs.sh $pkgs) -static-libgcc -Wl,--as-needed"
# The shared library cannot take those archives: they are not -fPIC (ld:
# "relocation R_X86_64_TPOFF32 against global_error can not be used when
# making a shared object" for libdw.a). It links the shared libraries,
# which are then bundled below.
# shellcheck disable=SC2086
so_libs="$($PKG_CONFIG --libs $pkgs) -static-libgcc -Wl,--as-needed"

cflags=${WHEEL_CFLAGS:--O2 -g}
echo "wheel: building in $WO (perfspy: $exe_libs)"
rm -f "$WO/perfspy" "$WO/libperfspy.so.$version" "$WO/perfspy-dlfilter.so"
"$MAKE" --no-print-directory -j"$(nproc)" O="$WO" CFLAGS="$cflags" \
	EXE_PKG_LIBS="$exe_libs" "$WO/perfspy"
"$MAKE" --no-print-directory O="$WO" CFLAGS="$cflags" PKG_LIBS="$so_libs" \
	"$WO/libperfspy.so.$version"
# The perf dlfilter plugin, when the Makefile knows how to build it.
if "$MAKE" --no-print-directory -n O="$WO" "$WO/perfspy-dlfilter.so" >/dev/null 2>&1; then
	"$MAKE" --no-print-directory O="$WO" CFLAGS="$cflags" PKG_LIBS="$so_libs" \
		"$WO/perfspy-dlfilter.so"
fi

# glibc 2.XX of this machine: the manylinux tag (PEP 600).
glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
arch=$(uname -m)
tag="py3-none-manylinux_${glibc%%.*}_${glibc#*.}_${arch}"

stage=$WO/wheel
pkg=$stage/perfspy
libs=$pkg/perfspy.libs
rm -rf "$stage"
mkdir -p "$libs" "$stage/perfspy-$version.data/scripts" "$DIST"
cp python/perfspy/*.py python/perfspy/py.typed "$pkg/"
# Stripped: the debug info is the bulk of the files and an installed
# wheel has no use for it (the build tree keeps the unstripped ones).
exe=$stage/perfspy-$version.data/scripts/perfspy
strip -o "$exe" "$WO/perfspy"
strip --strip-unneeded -o "$pkg/libperfspy.so" "$WO/libperfspy.so.$version"
[ -e "$WO/perfspy-dlfilter.so" ] &&
	strip --strip-unneeded -o "$pkg/perfspy-dlfilter.so" "$WO/perfspy-dlfilter.so"

# glibc's own libraries: what every manylinux system has (PEP 599's list).
is_glibc() {
	case ${1##*/} in
	libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
		ld-linux-*.so.* | linux-vdso.so.*) return 0 ;;
	esac
	return 1
}

# Bundle the shared objects' other libraries (the whole closure, as ldd
# lists it) into perfspy/perfspy.libs, renamed libX-perfspy.so.N so that
# they never stand in for another copy a process has loaded (a Python
# process may have its own libdw or libz); $ORIGIN rpaths find them.
declare -A renamed=()
for so in "$pkg"/*.so; do
	while read -r name path; do
		is_glibc "$name" && continue
		[ -n "${renamed[$name]:-}" ] && continue
		[ -e "$path" ] || { echo "wheel: $so: $name not found" >&2; exit 1; }
		new="${name%%.so*}-perfspy.so${name#*.so}"
		renamed[$name]=$new
		cp -L "$path" "$libs/$new"
		chmod 644 "$libs/$new"
		strip --strip-unneeded "$libs/$new"
		patchelf --set-soname "$new" "$libs/$new"
	done < <(ldd "$so" | awk '$2 == "=>" {print $1, $3}')
done
for f in "$pkg"/*.so "$libs"/*; do
	[ -e "$f" ] || continue
	for old in "${!renamed[@]}"; do
		patchelf --replace-needed "$old" "${renamed[$old]}" "$f"
	done
	# shellcheck disable=SC2016 # $ORIGIN is for the dynamic loader
	case $f in
	"$libs"/*) patchelf --set-rpath '$ORIGIN' "$f" ;;
	*) patchelf --set-rpath '$ORIGIN/perfspy.libs' "$f" ;;
	esac
done
rmdir "$libs" 2>/dev/null || true

# Check: the executable needs glibc only; the shared objects glibc and
# what is bundled beside them.
bad=0
for b in "$exe" "$pkg"/*.so "$pkg"/perfspy.libs/*; do
	[ -e "$b" ] || continue
	while read -r name path; do
		is_glibc "$name" && continue
		case $b:$path in
		"$exe":*) ;;
		*:"$(cd "$pkg" && pwd)"/perfspy.libs/*) continue ;;
		esac
		echo "wheel: $b needs $name ($path): not glibc, not bundled" >&2
		bad=1
	done < <(ldd "$b" | awk '{print $1, ($2 == "=>" ? $3 : "")}')
done
[ $bad -eq 0 ] || exit 1

"$PY" - "$stage" "$DIST" "$version" "$tag" <<'EOF'
import base64, hashlib, os, sys, zipfile

stage, dist, version, tag = sys.argv[1:5]
info = "perfspy-%s.dist-info" % version
meta = {
    "METADATA": (
        "Metadata-Version: 2.1\n"
        "Name: perfspy\n"
        "Version: %s\n"
        "Summary: Linux perf samples as py-spy folded stacks, flame graphs and reports\n"
        "License: GPL-2.0-only\n"
        "Requires-Python: >=3.8\n"
        "Classifier: Operating System :: POSIX :: Linux\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Programming Language :: C\n"
        "\n"
        "perfspy reads Linux perf samples (perf.data files and pipes) and writes\n"
        "py-spy-format folded stacks. This wheel holds the perfspy command and\n"
        "the perfspy Python package (perfspy.read, perfspy.report, perfspy.merge).\n"
        % version),
    "WHEEL": (
        "Wheel-Version: 1.0\n"
        "Generator: perfspy scripts/build-wheel.sh\n"
        "Root-Is-Purelib: false\n"
        "Tag: %s\n" % tag),
}

files = []
for root, dirs, names in os.walk(stage):
    dirs.sort()
    for n in sorted(names):
        p = os.path.join(root, n)
        files.append(os.path.relpath(p, stage))

def digest(data):
    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + h.decode()

out = os.path.join(dist, "perfspy-%s-%s.whl" % (version, tag))
tmp = out + ".tmp"
record = []
# Fixed timestamps and modes: the same tree gives the same wheel bytes.
def add(z, name, data, mode):
    zi = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    zi.external_attr = (0o100000 | mode) << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(zi, data)
    record.append("%s,%s,%d" % (name, digest(data), len(data)))

with zipfile.ZipFile(tmp, "w") as z:
    for f in files:
        with open(os.path.join(stage, f), "rb") as fh:
            data = fh.read()
        exe = f.endswith(".so") or "/scripts/" in f
        add(z, f.replace(os.sep, "/"), data, 0o755 if exe else 0o644)
    for name, text in meta.items():
        add(z, "%s/%s" % (info, name), text.encode(), 0o644)
    rec = "\n".join(record + ["%s/RECORD,," % info]) + "\n"
    zi = zipfile.ZipInfo("%s/RECORD" % info, date_time=(2020, 1, 1, 0, 0, 0))
    zi.external_attr = (0o100644) << 16
    zi.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(zi, rec)
os.replace(tmp, out)
print("wheel: %s (%d bytes)" % (out, os.path.getsize(out)))
EOF
