#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: `make wheel` and the installed wheel (issue 18). Builds the wheel,
# installs it with `pip install --no-index` into a fresh venv of every
# pyenv CPython 3.8..3.13 present (3.8 and 3.12 required), and checks in
# each: `perfspy --version` and `python -m perfspy --version`; `perfspy
# convert` of a chain recording byte-equal to the build tree's; the lines
# perfspy.read() yields (with and without options) equal to convert's
# output, so their totals equal the raw total; perfspy.report() equal to
# `report --json`; perfspy.merge() keeping perf's total; a bad file and a
# missing one raising perfspy.Error with the library's message. Then the
# installed files in a clean environment: ldd shows only glibc or the
# wheel's own bundled libraries, a Python with LD_LIBRARY_PATH cleared
# maps the bundled libdw and no system one, and the executable converts
# the recording in a chroot holding only it, glibc and the workload.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

PYENV=${PYENV_ROOT:-/root/.pyenv}/versions
WHEEL_O=$O/wheel
DIST=$O/dist

rm -f "$DIST"/perfspy-*.whl
if WHEEL_O=$WHEEL_O DIST=$DIST "$TOP/scripts/build-wheel.sh" >"$SCRATCH/wheel.log" 2>&1; then
	whl=$(find "$DIST" -maxdepth 1 -name 'perfspy-*.whl' | head -1)
	glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
	case ${whl##*/} in
	perfspy-*-py3-none-manylinux_${glibc/./_}_$(uname -m).whl)
		pass "make wheel: ${whl##*/} ($(stat -c %s "$whl") bytes)" ;;
	*) fail "wheel name ${whl:-none} lacks the tag manylinux_${glibc/./_}_$(uname -m)" ;;
	esac
else
	cat "$SCRATCH/wheel.log"
	die "scripts/build-wheel.sh failed"
fi

# The wheel's RECORD lists every file with its sha256 (PEP 427).
if "$PY" - "$whl" >"$SCRATCH/record.txt" 2>&1 <<'EOF'
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
rec = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")][0]
rows = {}
for line in z.read(rec).decode().splitlines():
    name, h, size = line.rsplit(",", 2)
    rows[name] = (h, size)
names = set(z.namelist())
assert set(rows) == names, (set(rows) ^ names)
for n in names - {rec}:
    d = z.read(n)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
    assert rows[n] == (want, str(len(d))), n
need = {"perfspy/__init__.py", "perfspy/__main__.py", "perfspy/py.typed",
        "perfspy/libperfspy.so"}
assert need <= names, need - names
assert any(n.endswith(".data/scripts/perfspy") for n in names)
print(len(names), "files")
EOF
then
	pass "RECORD: every file with its sha256 and size ($(cat "$SCRATCH/record.txt"))"
else
	fail "RECORD check: $(tail -3 "$SCRATCH/record.txt")"
fi

record chain fp
data=$REC
"$PERFSPY" convert -q -i "$data" -o "$SCRATCH/want.txt" || die "build tree convert failed"
"$PERFSPY" convert -q --threads --no-kernel -i "$data" -o "$SCRATCH/want-tn.txt" ||
	die "build tree convert --threads --no-kernel failed"
"$PERFSPY" report -q --json -i "$data" -o "$SCRATCH/want-report.json" ||
	die "build tree report --json failed"
# A capture to merge with: the recording's own stacks, folded (any raw
# capture does; the check is that merge keeps perf's total).
cp "$SCRATCH/want.txt" "$SCRATCH/capture.txt"
raw_total=$(total "$SCRATCH/want.txt")
[ "$raw_total" -gt 500 ] || die "recording too small: $raw_total samples"

# The Python side of the checks, run by each venv's interpreter.
cat >"$SCRATCH/check.py" <<'EOF'
import json, os, sys
import perfspy

data, want, want_tn, want_report, capture, total = sys.argv[1:7]
total = int(total)

def lines(stacks):
    return "".join("%s %d\n" % (";".join(f), n) for f, n in stacks)

def check(name, ok, detail=""):
    print(("ok    " if ok else "FAIL  ") + name + ("" if ok else ": " + detail))

got = lines(perfspy.read(data))
check("read() = convert output", got == open(want).read(),
      "%d vs %d bytes" % (len(got), len(open(want).read())))
n = sum(c for _, c in perfspy.read(data))
check("read() total %d = raw total %d" % (n, total), n == total)
got = lines(perfspy.read(data, threads=True, no_kernel=True))
check("read(threads, no_kernel) = convert --threads --no-kernel",
      got == open(want_tn).read())
roots = {f[0].split(")")[0] for f, _ in perfspy.read(data, threads=True)}
check("read(threads=True): thread roots", all(r.startswith("thread (") for r in roots),
      repr(sorted(roots)[:3]))
order = []
for f, _ in perfspy.read(data):
    names = [x.split(" (")[0] for x in f]
    if "main" in names and "level1" in names:
        order.append(names.index("main") < names.index("level1"))
check("frames root first (main before level1 in %d stacks)" % len(order),
      bool(order) and all(order), repr(order[:5]))
rep = perfspy.report(data)
check("report() = report --json", rep == json.load(open(want_report)))
check("report()['samples'] = raw total", rep.get("samples") == total, str(rep.get("samples")))
m = sum(c for _, c in perfspy.merge(data, capture))
check("merge() keeps perf's total", m == total, "%d vs %d" % (m, total))
try:
    perfspy.read(os.path.join(os.path.dirname(want), "bad.data"))
    check("bad file raises perfspy.Error", False, "no exception")
except perfspy.Error as e:
    check("bad file raises perfspy.Error (%s)" % e,
          e.code == -4000 and "not a perf.data file" in str(e) and "offset" in str(e), str(e))
try:
    list(perfspy.read(data, weight="bogus"))
    check("weight='bogus' raises ValueError", False, "no exception")
except ValueError:
    check("weight='bogus' raises ValueError", True)
try:
    perfspy.read(data + ".missing")
    check("missing file raises perfspy.Error", False, "no exception")
except perfspy.Error as e:
    check("missing file raises perfspy.Error (-ENOENT)", e.code == -2, str(e))
try:
    perfspy.read(data, event="no-such-event")
    check("unknown event raises perfspy.Error", False, "no exception")
except perfspy.Error as e:
    check("unknown event raises perfspy.Error", e.code == -4007, str(e))
EOF
# A perf.data header with a size no perf writes (reader.c checks it).
printf 'PERFILE2\001\000\000\000\000\000\000\000' >"$SCRATCH/bad.data"
head -c 200 /dev/zero >>"$SCRATCH/bad.data"

# run_checks VENV: the checks above in the venv; results become pass/fail.
run_checks() {
	local venv=$1 v=$2 line
	while IFS= read -r line; do
		case $line in
		"ok    "*) pass "$v: ${line#ok    }" ;;
		"FAIL  "*) fail "$v: ${line#FAIL  }" ;;
		*) say "        $line" ;;
		esac
	done < <(env -u LD_LIBRARY_PATH "$venv/bin/python" "$SCRATCH/check.py" "$data" \
		"$SCRATCH/want.txt" "$SCRATCH/want-tn.txt" "$SCRATCH/want-report.json" \
		"$SCRATCH/capture.txt" "$raw_total" 2>&1)
}

want_version=$("$PERFSPY" --version)
# The venvs, made and filled in parallel (pip's start-up is most of the
# time): `python -m venv --without-pip`, then that CPython's own pip
# installs into it (pip --python, pip >= 22.3), which skips ensurepip.
vers=()
have38=0 have312=0
for py in "$PYENV"/*/bin/python; do
	[ -x "$py" ] || continue
	v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
	case $v in 3.8 | 3.9 | 3.10 | 3.11 | 3.12 | 3.13) ;; *) continue ;; esac
	[ "$v" = 3.8 ] && have38=1
	[ "$v" = 3.12 ] && have312=1
	vers+=("$v")
	venv=$SCRATCH/venv-$v
	( "$py" -m venv --without-pip "$venv" &&
		PIP_DISABLE_PIP_VERSION_CHECK=1 "$py" -m pip --python "$venv/bin/python" \
			install -q --no-index "$whl" ) >"$SCRATCH/install-$v.log" 2>&1 &
done
wait
[ $have38 -eq 1 ] || fail "no pyenv CPython 3.8 under $PYENV"
[ $have312 -eq 1 ] || fail "no pyenv CPython 3.12 under $PYENV"
[ ${#vers[@]} -gt 0 ] || finish
for v in "${vers[@]}"; do
	venv=$SCRATCH/venv-$v
	if [ ! -x "$venv/bin/perfspy" ]; then
		fail "python $v: venv + pip install --no-index: $(tail -3 "$SCRATCH/install-$v.log")"
		continue
	fi
	got=$("$venv/bin/perfspy" --version 2>&1)
	if [ "$got" = "$want_version" ]; then
		pass "python $v: venv's perfspy --version: $got"
	else
		fail "python $v: venv's perfspy --version: '$got', want '$want_version'"
	fi
	got=$("$venv/bin/python" -m perfspy --version 2>&1)
	if [ "$got" = "$want_version" ]; then
		pass "python $v: python -m perfspy --version"
	else
		fail "python $v: python -m perfspy --version: '$got'"
	fi
	if "$venv/bin/perfspy" convert -q -i "$data" -o "$SCRATCH/got.txt" &&
		cmp -s "$SCRATCH/got.txt" "$SCRATCH/want.txt"; then
		pass "python $v: venv's perfspy convert = build tree's ($raw_total samples)"
	else
		fail "python $v: venv's perfspy convert differs from the build tree's"
	fi
	run_checks "$venv" "python $v"
	last_venv=$venv
done
[ -n "${last_venv:-}" ] || finish

# A clean environment. 1) ldd: the executable needs glibc only; the
# package's shared objects glibc or the wheel's own perfspy.libs.
venv=$last_venv
site=$("$venv/bin/python" -c 'import os, perfspy; print(os.path.dirname(perfspy.__file__))')
bad=
for b in "$venv/bin/perfspy" "$site"/*.so "$site"/perfspy.libs/*; do
	[ -e "$b" ] || continue
	while read -r name path; do
		case ${name##*/} in
		libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | \
			ld-linux-*.so.* | linux-vdso.so.*) continue ;;
		esac
		case $b:$path in
		"$venv/bin/perfspy":*) ;;
		*:"$site"/perfspy.libs/*) continue ;;
		esac
		bad="$bad ${b##*/}->$name($path)"
	done < <(env -u LD_LIBRARY_PATH ldd "$b" | awk '{print $1, ($2 == "=>" ? $3 : "")}')
done
if [ -z "$bad" ]; then
	pass "ldd: perfspy needs only glibc; the .so files only glibc and perfspy.libs"
	env -u LD_LIBRARY_PATH ldd "$venv/bin/perfspy" | sed 's/ (0x.*//; s/^/        /'
else
	fail "ldd: non-glibc libraries outside the wheel:$bad"
fi

# 2) Python with an empty environment: the libdw it maps is the bundled
# one, none from the system's library directories.
maps=$(env -i PATH=/usr/bin:/bin "$venv/bin/python" -c '
import perfspy, sys
n = sum(c for _, c in perfspy.read(sys.argv[1]))
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libdw" in l or "libelf" in l})
print(n, " ".join(libs))' "$data" 2>&1)
case $maps in
"$raw_total "*perfspy.libs/libdw-perfspy.so.1*)
	if [[ $maps == *" /usr/"* || $maps == *" /lib/"* ]]; then
		fail "env -i python: a system libdw/libelf is mapped: $maps"
	else
		pass "env -i python: perfspy.read total $raw_total with the bundled libdw/libelf only"
	fi ;;
*) fail "env -i python: got '$maps', want '$raw_total .../perfspy.libs/libdw-perfspy.so.1'" ;;
esac

# 3) The executable in a chroot holding only it, glibc, the workload (at
# its own path, for symbols) and the recording: no -dev package, no
# library directory, no /proc. Kernel frames need /proc/kallsyms, so
# the comparison is --no-kernel.
if [ "$(id -u)" -eq 0 ] && command -v chroot >/dev/null 2>&1; then
	root=$SCRATCH/root
	# Debian's merged-/usr layout, so that the paths perf recorded
	# (/usr/lib/x86_64-linux-gnu/libc.so.6) and ldd's (/lib/...) both hold.
	mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/data"
	ln -s usr/bin "$root/bin" && ln -s usr/lib "$root/lib" && ln -s usr/lib64 "$root/lib64"
	cp "$venv/bin/perfspy" "$root/usr/bin/"
	cp "$data" "$root/data/perf.data"
	# glibc at ldd's path and at its real one (perf recorded the latter),
	# with its separate debug info (libc6-dbg) by build-id when installed:
	# the build tree's output names libc and ld.so frames with it.
	for f in $(ldd "$venv/bin/perfspy" | awk '$2 == "=>" {print $3} $1 ~ /^\// {print $1}'); do
		for p in "$f" "$(readlink -f "$f")"; do
			mkdir -p "$root$(dirname "$p")" && cp -L "$f" "$root$p"
		done
		id=$(readelf -n "$f" 2>/dev/null | awk '/Build ID/ {print $3}')
		dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
		if [ -n "$id" ] && [ -e "$dbg" ]; then
			mkdir -p "$root$(dirname "$dbg")" && cp "$dbg" "$root$dbg"
		fi
	done
	mkdir -p "$root$E2E_BIN" && cp "$E2E_BIN/chain" "$root$E2E_BIN/"
	"$PERFSPY" convert -q --no-kernel -i "$data" -o "$SCRATCH/want-nk.txt"
	if env -i "$(command -v chroot)" "$root" /usr/bin/perfspy convert -q --no-kernel -i /data/perf.data \
		-o /data/out.txt >"$SCRATCH/chroot.log" 2>&1 &&
		cmp -s "$root/data/out.txt" "$SCRATCH/want-nk.txt"; then
		pass "chroot (only perfspy, glibc, the workload): convert --no-kernel = build tree's"
	else
		fail "chroot convert: $(head -c 300 "$SCRATCH/chroot.log"; diff "$root/data/out.txt" "$SCRATCH/want-nk.txt" 2>&1 | head -5)"
	fi
else
	say "  (not root: no chroot check)"
fi
finish
