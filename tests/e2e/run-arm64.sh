#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: recordings made on arm64 (tests/fixtures/arm64/, made by
# tests/arm64/build-vm.sh in an arm64 guest, docs/arm64.md §4) convert on
# this machine with --symfs to the user function chains `perf script`
# printed there: at least 99% of the samples for the C and C++ workloads,
# with frame pointers (-g, LR at the leaf: docs/arm64.md §2.3) and with
# DWARF (33 registers, and 34 with VG). No perf and no arm64 machine needed.
. "$(dirname "$0")/lib.sh"

need_perfspy
need_python
scratch

fix=$TOP/tests/fixtures/arm64/arm64.tar.xz
[ -f "$fix" ] || die "no $fix"
tar xJf "$fix" -C "$SCRATCH" || die "cannot unpack $fix"
cmp=$TOP/tests/e2e/src/arm64_compare.py

# check NAME MIN: convert NAME.data, compare with NAME.script.
check() {
	local name=$1 min=$2 out=$SCRATCH/$1.folded res
	[ -f "$SCRATCH/$name.data" ] || { fail "$name: not in the fixtures"; return; }
	convert "$out" -i "$SCRATCH/$name.data" --symfs "$SCRATCH/symfs" \
		--buildid-dir "$SCRATCH/buildid" || return
	res=$("$PY" "$cmp" "$SCRATCH/$name.script" "$out" 2>"$out.diff") ||
		{ fail "$name: compare failed: $(head -c 300 "$out.diff")"; return; }
	read -r matched total pct <<<"$res"
	say "  $name: $matched of $total samples with perf script's user chain ($pct%)"
	if [ "$total" -lt 20 ]; then
		fail "$name: only $total samples in perf script's output"
	elif awk -v p="$pct" -v m="$min" 'BEGIN { exit !(p >= m) }'; then
		pass "$name: $pct% >= $min%"
	else
		fail "$name: $pct% < $min%"
		cat "$out.diff"
	fi
}

check chain-fp 99
check cxx-fp 99
check chain-dwarf 99
check cxx-dwarf 99
check chain-vg 99

# Without HEADER_ARCH (its string blanked: perf writes it padded to 64
# bytes) the architecture comes from the ELF machine of the first user
# sample's binary (docs/arm64.md §1).
"$PY" - "$SCRATCH/chain-dwarf.data" "$SCRATCH/noarch-dwarf.data" <<'EOF' ||
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
i = d.find(struct.pack("<I", 64) + b"aarch64\0")
if i < 0:
    sys.exit("no HEADER_ARCH string")
d[i + 4:i + 11] = bytes(7)
open(sys.argv[2], "wb").write(d)
EOF
	fail "cannot blank HEADER_ARCH"
cp "$SCRATCH/chain-dwarf.script" "$SCRATCH/noarch-dwarf.script"
check noarch-dwarf 99

# The CPython 3.11 workload (no trampolines): libpython and ctypes native
# unwinding only; perf names PLT stubs (memset@plt), perfspy does not.
check python-dwarf 98

finish
