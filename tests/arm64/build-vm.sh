#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Regenerates tests/fixtures/arm64/: perf.data files recorded on an arm64
# Debian bookworm guest (qemu-system-aarch64, TCG, -cpu max), the files they
# touched (a --symfs tree) and `perf script` output as the oracle.
# Not run by CI (it downloads ~300 MB of arm64 packages and takes ~20-40 min
# on 2 cores); `make check` only converts the committed fixtures
# (tests/e2e/run-arm64.sh).  docs/arm64.md §4 says what it records and why.
#
# Usage: tests/arm64/build-vm.sh            (as root; work dir $ARM64_WORK)
# Needs: debootstrap qemu-system-arm gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
#        binutils-aarch64-linux-gnu cpio xz-utils kmod
#
# How: `debootstrap --foreign` downloads and unpacks the arm64 packages
# (no chroot, so neither binfmt nor qemu-user is needed); the whole tree is
# the guest's initramfs, /init records the workloads and writes a gzipped tar
# of the results base64-encoded between two marker lines on the serial
# console, which this script decodes.  The workloads are cross-compiled here
# with the same flags as tests/e2e/lib.sh.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${ARM64_WORK:-/var/tmp/perfspy-arm64}
MIRROR=${ARM64_MIRROR:-http://deb.debian.org/debian}
CPU=${ARM64_CPU:-max,pauth=off}
OUT=$TOP/tests/fixtures/arm64
ROOT=$WORK/root
CROSS=aarch64-linux-gnu-

say() { printf '%s build-vm: %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { say "error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap)"
for t in debootstrap qemu-system-aarch64 ${CROSS}gcc ${CROSS}g++ ${CROSS}strip cpio xz depmod; do
	command -v "$t" >/dev/null || die "missing $t"
done
mkdir -p "$WORK"

# 1. arm64 packages, unpacked.  --foreign unpacks the required set; the
# --include'd packages are only downloaded, so unpack those too.
if [ ! -e "$WORK/stage1.done" ]; then
	say "debootstrap (arm64, bookworm) into $ROOT"
	rm -rf "$ROOT"
	debootstrap --arch=arm64 --foreign --variant=minbase \
		--include=linux-image-arm64,linux-perf,python3.11,busybox-static,kmod \
		bookworm "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
		{ tail -20 "$WORK/debootstrap.log"; die "debootstrap failed"; }
	# --keep-directory-symlink: /bin, /lib, /sbin are links into /usr
	# (merged /usr); a plain extract would replace them by directories.
	for deb in "$ROOT"/var/cache/apt/archives/*.deb; do
		dpkg-deb --fsys-tarfile "$deb" |
			tar -x --keep-directory-symlink -C "$ROOT" || die "cannot unpack $deb"
	done
	touch "$WORK/stage1.done"
fi
# debootstrap makes /proc a link to the host's /proc inside containers.
for d in proc sys dev tmp; do
	[ -L "$ROOT/$d" ] && rm -f "$ROOT/$d"
	mkdir -p "$ROOT/$d"
done
KIMG=$(find "$ROOT/boot" -name 'vmlinuz-*' | sort | tail -1)
[ -n "$KIMG" ] || die "no kernel in $ROOT/boot"
KVER=${KIMG##*/vmlinuz-}
say "kernel $KVER"
depmod -b "$ROOT" "$KVER"

# 2. the workloads, cross-compiled as tests/e2e/lib.sh builds them.
E2E=$ROOT/e2e
rm -rf "$E2E" && mkdir -p "$E2E"
FLAGS="-O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread -D_GNU_SOURCE -Wall"
SRC=$TOP/tests/e2e/src
# shellcheck disable=SC2086 # $FLAGS is a word list
(
	cd "$SRC"
	${CROSS}gcc $FLAGS -o "$E2E/chain" chain.c
	${CROSS}g++ $FLAGS -o "$E2E/cxx" cxx.cpp
	cd py
	${CROSS}gcc $FLAGS -shared -fPIC -o "$E2E/libwork.so" libwork.c
) || die "cross-compile failed"
cp "$SRC/py/workload.py" "$E2E/"

# 3. the guest's /init: record, script, pack, print, power off.
cat >"$ROOT/init" <<'EOF'
#!/bin/dash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t sysfs sys /sys
$bb mount -t tmpfs tmp /tmp
$bb mount -t devtmpfs dev /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mkdir -p /root /out
echo -1 >/proc/sys/kernel/perf_event_paranoid
echo 0 >/proc/sys/kernel/kptr_restrict
cd /e2e
log() { echo "ARM64: $*"; }
rec() {	# rec NAME MODE CMD...: perf record into /out/NAME-MODE.data
	n=$1 m=$2; shift 2
	# perf 6.1 asks for VG (perf reg 33) on SVE CPUs, which the kernel
	# refuses for cpu-clock: dwarf on cpu-clock names the base registers,
	# dwarf on cycles (mode "vg") keeps perf's own mask (34 registers).
	ev=cpu-clock
	case $m in
	fp) cg=-g ;;
	dwarf) cg="--call-graph dwarf,65528 --user-regs=$REGS" ;;
	vg) cg="--call-graph dwarf,65528" ev=cycles ;;
	esac
	# shellcheck disable=SC2086
	perf record -e $ev -F "${FREQ:-199}" $cg -o "/out/$n-$m.data" -- "$@" \
		>"/out/$n-$m.log" 2>&1
	log "perf record $n $m: $? $(tail -1 "/out/$n-$m.log")"
	# --no-inline: the symfs copies lose their debug info (and perf 6.1
	# died on the first unstripped frame without it)
	perf script --no-inline -F comm,tid,time,ip,sym,dso -i "/out/$n-$m.data" \
		>"/out/$n-$m.script" 2>"/out/$n-$m.script.err"
	log "perf script: $? $(grep -c '^[^[:space:]]' "/out/$n-$m.script") samples" \
		"$(tail -1 "/out/$n-$m.script.err")"
	perf buildid-list --with-hits -i "/out/$n-$m.data" 2>/dev/null >>/out/buildids
}
REGS=x0,x1,x2,x3,x4,x5,x6,x7,x8,x9,x10,x11,x12,x13,x14,x15,x16,x17,x18,x19,x20,x21,x22,x23,x24,x25,x26,x27,x28,x29,lr,sp,pc
uname -a >/out/uname
cat /proc/cpuinfo >/out/cpuinfo
perf --version >/out/perf-version
FREQ=199 rec chain fp ./chain 2
FREQ=199 rec cxx fp ./cxx 2
FREQ=49 rec chain dwarf ./chain 4
FREQ=49 rec cxx dwarf ./cxx 4
FREQ=49 rec python dwarf python3.11 workload.py /e2e/libwork.so 2 nofork
FREQ=49 rec chain vg ./chain 1
for f in /out/*.data; do perf evlist -v -i "$f" >"${f%.data}.evlist" 2>&1; done
# the files the samples touched, for --symfs
$bb awk '{print $2}' /out/buildids | sort -u | grep '^/' | grep -v '^/proc/' >/out/dsos
cat /out/dsos
# perf's build-id cache entry of the [vdso] image (perf keeps no file of it)
for d in /root/.debug/.build-id/*/*; do
	[ -e "$d/vdso" ] && echo "${d#/}/vdso"
done >/out/vdso
cd /
# shellcheck disable=SC2046 # one word per path
tar czhf /tmp/out.tgz out $(sed 's,^/,,' /out/dsos) $(cat /out/vdso) 2>/dev/null
echo "@@@ARM64-BEGIN@@@"
base64 /tmp/out.tgz
echo "@@@ARM64-END@@@"
sync
echo o >/proc/sysrq-trigger
$bb poweroff -f
EOF
chmod +x "$ROOT/init"

# 4. the initramfs: the tree less what the guest never reads.
say "initramfs"
(
	cd "$ROOT"
	find . -path ./boot -prune -o -path ./var/cache/apt -prune \
		-o -path ./usr/share/doc -prune -o -path ./usr/share/man -prune \
		-o -path ./usr/share/locale -prune -o -path ./usr/lib/modules -prune \
		-o -path ./lib/modules -prune -o -print |
		cpio -o -H newc --quiet
) | gzip -1 >"$WORK/initrd.gz"
ls -l "$WORK/initrd.gz"

# 5. boot.  The Image is gzipped; qemu loads that for arm64.
say "booting ($CPU); console in $WORK/console.log"
rm -f "$WORK/console.log"
timeout "${ARM64_TIMEOUT:-3600}" qemu-system-aarch64 -M virt -cpu "$CPU" -smp 2 -m 3072 \
	-kernel "$KIMG" -initrd "$WORK/initrd.gz" \
	-append "console=ttyAMA0 rdinit=/init loglevel=1 panic=-1" \
	-nographic -no-reboot -monitor none -serial "file:$WORK/console.log" ||
	say "qemu exited with $?"
grep '^ARM64:' "$WORK/console.log" || true
sed -n '/@@@ARM64-BEGIN@@@/,/@@@ARM64-END@@@/p' "$WORK/console.log" |
	sed '1d;$d' | tr -d '\r' | base64 -d >"$WORK/out.tgz" ||
	die "no results on the console (see $WORK/console.log)"
rm -rf "$WORK/res" && mkdir -p "$WORK/res"
tar xzf "$WORK/out.tgz" -C "$WORK/res"

# 6. the fixtures: recordings, perf script output, a symfs tree of the
# touched files with debug sections stripped (symtab and .eh_frame stay:
# docs/arm64.md §4).
say "fixtures"
R=$WORK/res
S=$WORK/fix
rm -rf "$S" && mkdir -p "$S/symfs"
cp "$R"/out/*.data "$R"/out/*.script "$R"/out/*.evlist "$R"/out/uname \
	"$R"/out/perf-version "$S/"
while read -r f; do
	[ -f "$R/$f" ] || continue
	mkdir -p "$S/symfs/$(dirname "$f")"
	${CROSS}strip --strip-debug -o "$S/symfs/$f" "$R/$f" 2>/dev/null || cp "$R/$f" "$S/symfs/$f"
done <"$R/out/dsos"
# the [vdso] image for --buildid-dir
while read -r f; do
	mkdir -p "$S/buildid/$(dirname "${f#root/.debug/}")"
	cp "$R/$f" "$S/buildid/${f#root/.debug/}"
done <"$R/out/vdso"
mkdir -p "$OUT"
tar cf - -C "$S" --sort=name --owner=0 --group=0 --mtime=@0 . | xz -9e >"$OUT/arm64.tar.xz"
ls -l "$OUT/arm64.tar.xz"
say "done"
