#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 13): code without a symbol, and separate debug files.
# src/unnamed_lib.c is a shared library whose two busy functions (spin_a,
# spin_b) are static; src/unnamed_main.c calls it. Three copies of the
# library, each in its own directory (LD_LIBRARY_PATH picks one):
#   stripped/  strip --strip-all: spin_a and spin_b have no symbol. Each
#              must be exactly one frame `libunnamed.so+0xOFF (libunnamed.so)`,
#              OFF the file offset of its start (nm of the unstripped copy,
#              through the program headers), the same names in two
#              recordings (different load addresses);
#   linked/    symbols and DWARF moved to libunnamed.so.debug (objcopy
#              --only-keep-debug, --strip-debug --strip-unneeded,
#              --add-gnu-debuglink): the frames must have file:line from
#              the debug file and the inlined mix() under spin_a;
#   wrong/     like linked/, but the debug file is another build's: not
#              used (no names from it).
#   buildid/   one recording with the unstripped library (the reference),
#              converted again after the library there is stripped (no debug
#              link) and its debug file (objcopy --only-keep-debug) put at
#              SYMFS/usr/lib/debug/.build-id/xx/rest.debug: --symfs SYMFS must
#              give the reference's bytes (file:line, inlined mix()); without
#              it, no line of unnamed_lib.c (the control).
# Also: --nolineno drops native frames' lines.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

cc=${CC:-cc}
flags=(-O2 -g -fno-omit-frame-pointer -Wall)
lib=$SCRATCH/full/libunnamed.so
mkdir -p "$SCRATCH/full" "$SCRATCH/stripped" "$SCRATCH/linked" "$SCRATCH/wrong" "$SCRATCH/buildid" ||
	die "mkdir"
(cd "$E2E_SRC" && $cc "${flags[@]}" -shared -fPIC -o "$lib" unnamed_lib.c) ||
	die "cannot compile unnamed_lib.c"
(cd "$E2E_SRC" && $cc "${flags[@]}" -o "$SCRATCH/main" unnamed_main.c -L"$SCRATCH/full" -lunnamed) ||
	die "cannot compile unnamed_main.c"
strip --strip-all -o "$SCRATCH/stripped/libunnamed.so" "$lib" || die "strip failed"
objcopy --only-keep-debug "$lib" "$SCRATCH/linked/libunnamed.so.debug" || die "objcopy failed"
objcopy --strip-debug --strip-unneeded "$lib" "$SCRATCH/linked/libunnamed.so" || die "objcopy failed"
(cd "$SCRATCH/linked" && objcopy --add-gnu-debuglink=libunnamed.so.debug libunnamed.so) ||
	die "objcopy --add-gnu-debuglink failed"
# Another build (one constant changed) under the same debug link name.
sed 's/2654435761u/2654435769u/' "$E2E_SRC/unnamed_lib.c" >"$SCRATCH/other.c"
$cc "${flags[@]}" -shared -fPIC -o "$SCRATCH/other.so" "$SCRATCH/other.c" || die "cc other"
objcopy --only-keep-debug "$SCRATCH/other.so" "$SCRATCH/wrong/libunnamed.so.debug" || die "objcopy"
cp "$SCRATCH/linked/libunnamed.so" "$SCRATCH/wrong/" || die "cp"

# run DIR N: record main with DIR's library into $SCRATCH/DIR-N.data and
# convert it to $SCRATCH/DIR-N.txt.
run() {
	local d=$SCRATCH/$1-$2.data
	LD_LIBRARY_PATH=$SCRATCH/$1 "$PERF" record -q -N -F 999 -g -o "$d" -- "$SCRATCH/main" 0.6 \
		>/dev/null 2>"$d.log" || die "perf record ($1) failed: $(tail -2 "$d.log")"
	"$PERFSPY" convert -q -i "$d" >"$SCRATCH/$1-$2.txt" || die "perfspy convert ($1) failed"
}
run stripped 1
run stripped 2
run linked 1
run wrong 1

# The file offsets of spin_a and spin_b: symbol address -> PT_LOAD.
offs=$("$PY" - "$lib" <<'PY'
import re, subprocess, sys
lib = sys.argv[1]
syms = {}
for line in subprocess.run(["nm", "-S", lib], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if len(f) == 4 and f[3] in ("spin_a", "spin_b"):
        syms[f[3]] = (int(f[0], 16), int(f[1], 16))
loads = []
for line in subprocess.run(["readelf", "-lW", lib], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if f and f[0] == "LOAD":
        loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
for name in ("spin_a", "spin_b"):
    a, size = syms[name]
    for off, va, filesz in loads:
        if va <= a < va + filesz:
            print("%s %x %x" % (name, a - va + off, size))
PY
) || die "cannot read the library's symbols"
say "$offs"

# The library's frames in a converted file, one per line, with counts.
lib_frames() {
	grep -o 'libunnamed\.so[^;]*([^;]*libunnamed\.so)' "$1" | sort | uniq -c
}
lib_frames "$SCRATCH/stripped-1.txt" >"$SCRATCH/s1"
lib_frames "$SCRATCH/stripped-2.txt" >"$SCRATCH/s2"
cat "$SCRATCH/s1"
# Every +0x frame inside [start, start + size) of a spin function must be
# its start: one frame per function, in both recordings (other load
# addresses: ASLR).
while read -r name off size; do
	for k in 1 2; do
		if grep -q " libunnamed\.so+0x$off (libunnamed\.so)\$" "$SCRATCH/s$k"; then
			pass "stripped (recording $k): $name is libunnamed.so+0x$off"
		else
			fail "stripped (recording $k): no frame libunnamed.so+0x$off for $name"
		fi
		inside=$(grep -o '+0x[0-9a-f]*' "$SCRATCH/s$k" | while read -r o; do
			o=$((16#${o#+0x}))
			[ $o -ge $((16#$off)) ] && [ $o -lt $((16#$off + 16#$size)) ] && echo "$o"
		done | wc -l)
		if [ "$inside" = 1 ]; then
			pass "stripped (recording $k): one frame for all of $name"
		else
			fail "stripped (recording $k): $inside frames inside $name"
		fi
	done
done <<<"$offs"
# Code no symbol and no FDE covers (_init, the PLT) is an absolute
# address `0xADDR (libunnamed.so)`, as designed: a sample there (a page
# fault on the library's first instruction, now and then) is no failure.
# None may fall inside spin_a or spin_b: their file offsets, through the
# recording's maps as perf script shows them.
for k in 1 2; do
	inside=$("$PERF" script --show-mmap-events -i "$SCRATCH/stripped-$k.data" 2>/dev/null |
		"$PY" -c '
import re, sys
maps = []
for line in sys.stdin:
    m = re.search(r"PERF_RECORD_MMAP2? .*\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+) .*libunnamed\.so$", line.rstrip())
    if m:
        maps.append(tuple(int(x, 16) for x in m.groups()))
spins = [(int(o, 16), int(n, 16)) for o, n in (l.split()[1:3] for l in sys.argv[2].splitlines())]
n = 0
for line in open(sys.argv[1]):
    for a in re.findall(r"(?:^|;)0x([0-9a-f]+) \(libunnamed\.so\)", line):
        a = int(a, 16)
        for start, size, pgoff in maps:
            if start <= a < start + size:
                off = a - start + pgoff
                n += any(o <= off < o + z for o, z in spins)
print(n)' "$SCRATCH/stripped-$k.txt" "$offs")
	if [ "$inside" = 0 ]; then
		pass "stripped (recording $k): no absolute address inside spin_a or spin_b"
	else
		fail "stripped (recording $k): $inside absolute addresses inside spin_a or spin_b"
	fi
done

# Separate debug file through .gnu_debuglink: lines and inlined frames.
for want in 'spin_a (unnamed_lib.c:[0-9]*)' 'spin_b (unnamed_lib.c:[0-9]*)' \
	'spin_a (unnamed_lib.c:[0-9]*);mix (unnamed_lib.c:[0-9]*)'; do
	if grep -q "$want" "$SCRATCH/linked-1.txt"; then
		pass "debug link: ${want//\[0-9\]\*/N}"
	else
		fail "debug link: no ${want//\[0-9\]\*/N}: $(grep -o '[^;]*unnamed[^;]*' "$SCRATCH/linked-1.txt" | sort -u | head -3 | tr '\n' '|')"
	fi
done
# --nolineno: native frames lose their lines too (py-spy drops every
# frame's), so spin_a is one frame whatever line a sample hit.
"$PERFSPY" convert -q --nolineno -i "$SCRATCH/linked-1.data" >"$SCRATCH/nolineno.txt" ||
	die "convert --nolineno failed"
if grep -q 'unnamed_lib\.c:[0-9]' "$SCRATCH/nolineno.txt"; then
	fail "--nolineno: native frames keep lines: $(grep -o '[^;]*unnamed_lib\.c:[0-9]*)' "$SCRATCH/nolineno.txt" | head -1)"
elif grep -q 'spin_a (unnamed_lib\.c);mix (unnamed_lib\.c)' "$SCRATCH/nolineno.txt"; then
	pass "--nolineno: spin_a (unnamed_lib.c);mix (unnamed_lib.c)"
else
	fail "--nolineno: no spin_a (unnamed_lib.c);mix (unnamed_lib.c) frames"
fi
if grep -q 'spin_a\|unnamed_lib\.c' "$SCRATCH/wrong-1.txt"; then
	fail "debug link to another build: names taken from it"
else
	pass "debug link to another build: not used"
fi

# Separate debug file by build id (the -dbgsym layout), under --symfs.
bid=$(readelf -n "$lib" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
[ "${#bid}" -gt 2 ] || die "no build id in $lib"
cp "$lib" "$SCRATCH/buildid/" || die "cp"
run buildid 1
objcopy --strip-debug --strip-unneeded "$lib" "$SCRATCH/buildid/libunnamed.so" || die "objcopy"
if "$PERFSPY" convert -q -i "$SCRATCH/buildid-1.data" | grep -q 'unnamed_lib\.c'; then
	die "the stripped library still has lines (strip failed?)"
fi
dbg=$SCRATCH/symfs/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
mkdir -p "${dbg%/*}" && objcopy --only-keep-debug "$lib" "$dbg" || die "objcopy --only-keep-debug"
"$PERFSPY" convert -q -i "$SCRATCH/buildid-1.data" --symfs "$SCRATCH/symfs" >"$SCRATCH/bid-symfs.txt" ||
	die "perfspy convert --symfs failed"
if grep -q 'spin_a (unnamed_lib\.c:[0-9]*);mix (unnamed_lib\.c:[0-9]*)' "$SCRATCH/buildid-1.txt"; then
	pass "build-id debug file: the reference (unstripped) has spin_a;mix with lines"
else
	fail "build-id debug file: the reference has no spin_a (unnamed_lib.c:N);mix (unnamed_lib.c:N)"
fi
if cmp -s "$SCRATCH/buildid-1.txt" "$SCRATCH/bid-symfs.txt"; then
	pass "build-id debug file: $(grep -o '[^;]*(unnamed_lib\.c:[0-9]*)' "$SCRATCH/bid-symfs.txt" | sort -u | wc -l) frames with lines, same bytes as the unstripped library"
else
	fail "build-id debug file: output differs from the unstripped library's: $(diff "$SCRATCH/buildid-1.txt" "$SCRATCH/bid-symfs.txt" | grep -o '[^;]*unnamed[^;]*' | sort -u | head -4 | tr '\n' '|')"
fi
finish
