#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# debuginfod (issue 14): a binary profiled here without its debug info
# (strip --strip-debug keeps the symbol table, so functions are named but
# have no file:line) gains file:line only from a debuginfod server that
# has the debug file; never when $DEBUGINFOD_URLS is unset or with
# --no-debuginfod; with the server gone, conversion still finishes, with
# one warning, within the timeout. The server is elfutils' own
# (debuginfod -F DIR, Debian package debuginfod) on a free port, and the
# client talks to it over 127.0.0.1 only.
. "$(dirname "$0")/lib.sh"

need_perfspy
need_perf
command -v debuginfod >/dev/null 2>&1 || skip "debuginfod (the server) not installed"
scratch
src=$SCRATCH/dfd.c
cat >"$src" <<'C'
#include <stdio.h>
static volatile unsigned long sink;
__attribute__((noinline)) void dfd_spin(void)
{
	for (long i = 0; i < 300000000; i++)
		sink += i;
}
int main(void) { dfd_spin(); printf("%lu\n", sink); return 0; }
C
mkdir -p "$SCRATCH/srv" "$SCRATCH/bin" || die "mkdir"
# The server's copy has DWARF; the profiled copy has none.
(cd "$SCRATCH" && cc -O1 -g -fno-omit-frame-pointer -Wl,--build-id -o srv/dfd dfd.c) ||
	die "cc failed"
cp "$SCRATCH/srv/dfd" "$SCRATCH/bin/dfd" && strip --strip-debug "$SCRATCH/bin/dfd" || die "strip"
bid=$(readelf -n "$SCRATCH/bin/dfd" | awk '/Build ID/ {print $3}')
[ -n "$bid" ] || die "no build id in the test binary"
$PERF record -q -N -F 999 -g -o "$SCRATCH/dfd.data" -- "$SCRATCH/bin/dfd" >/dev/null 2>&1 ||
	die "perf record failed"

conv() { # conv OUT ERR [ARGS...]: convert with an empty build-id cache
	local out=$1 err=$2
	shift 2
	"$PERFSPY" convert -i "$SCRATCH/dfd.data" --buildid-dir "$SCRATCH/nocache" "$@" \
		>"$out" 2>"$err"
}

unset DEBUGINFOD_URLS
conv "$SCRATCH/plain" "$SCRATCH/plain.err" || die "convert failed: $(cat "$SCRATCH/plain.err")"
grep -q 'dfd_spin (dfd)' "$SCRATCH/plain" && pass "no server: dfd_spin named from the symbol table" ||
	fail "no server: no 'dfd_spin (dfd)' frame: $(head -2 "$SCRATCH/plain")"
grep -q 'dfd_spin (dfd.c:' "$SCRATCH/plain" && fail "no server: file:line without debug info?" ||
	pass "no server: no file:line (the profiled binary has no DWARF)"

# A free port: bind port 0 and read what the kernel chose.
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
debuginfod -F -p "$port" -d "$SCRATCH/srv.sqlite" -t 0 -g 0 "$SCRATCH/srv" \
	>"$SCRATCH/srv.log" 2>&1 &
srv=$!
stop_srv() { kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; }
trap 'stop_srv; cleanup_scratch' EXIT
url=http://127.0.0.1:$port
# Indexed when it answers for the build id (a scan takes a moment).
ok=0
for _ in $(seq 1 100); do
	if curl -sf -o /dev/null "$url/buildid/$bid/debuginfo"; then ok=1; break; fi
	sleep 0.2
done
[ "$ok" = 1 ] || die "debuginfod did not serve $bid: $(tail -5 "$SCRATCH/srv.log")"

export DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$SCRATCH/dcache DEBUGINFOD_TIMEOUT=5
conv "$SCRATCH/fetched" "$SCRATCH/fetched.err" || die "convert failed: $(cat "$SCRATCH/fetched.err")"
grep -q 'dfd_spin (dfd.c:[0-9]*)' "$SCRATCH/fetched" && pass "server: dfd_spin gains dfd.c:LINE" ||
	fail "server: no 'dfd_spin (dfd.c:N)' frame: $(head -3 "$SCRATCH/fetched"; cat "$SCRATCH/fetched.err")"
grep -q 'dfd_spin (dfd)' "$SCRATCH/fetched" && fail "server: some dfd_spin frames still lack a line" ||
	pass "server: every dfd_spin frame has its line"
grep -q 'debuginfod: .*dfd' "$SCRATCH/fetched.err" && pass "server: progress on stderr" ||
	fail "server: no debuginfod message on stderr: $(cat "$SCRATCH/fetched.err")"
[ "$(total "$SCRATCH/fetched")" = "$(total "$SCRATCH/plain")" ] &&
	pass "server: same total as without it" || fail "server: totals differ"
find "$SCRATCH/dcache" -name debuginfo | grep -q . && pass "server: debug file cached" ||
	fail "server: nothing in \$DEBUGINFOD_CACHE_PATH"

# The binary itself missing here (copied off another node's profile):
# the executable and its debug info both come from the server. Then the
# issue's whole path: pprof per "node", combined, read by go tool pprof.
mv "$SCRATCH/bin/dfd" "$SCRATCH/dfd.away" || die "mv"
DEBUGINFOD_URLS='' conv "$SCRATCH/gone" "$SCRATCH/gone.err" || die "convert (binary gone) failed"
grep -q 'dfd_spin' "$SCRATCH/gone" && fail "binary gone, no server: dfd_spin named anyway?" ||
	pass "binary gone, no server: no name for its frames"
DEBUGINFOD_CACHE_PATH=$SCRATCH/dcache4 conv "$SCRATCH/gone2" "$SCRATCH/gone2.err" ||
	die "convert (binary gone, server) failed"
grep -q 'dfd_spin (dfd.c:[0-9]*)' "$SCRATCH/gone2" &&
	pass "binary gone, server: executable and debug info fetched, dfd_spin (dfd.c:N)" ||
	fail "binary gone, server: no 'dfd_spin (dfd.c:N)': $(head -3 "$SCRATCH/gone2"; cat "$SCRATCH/gone2.err")"
if command -v go >/dev/null 2>&1; then
	DEBUGINFOD_CACHE_PATH=$SCRATCH/dcache4 conv "$SCRATCH/node1.pb.gz" "$SCRATCH/n1.err" \
		--format pprof --threads || die "convert to pprof failed"
	cp "$SCRATCH/node1.pb.gz" "$SCRATCH/node2.pb.gz"
	"$PERFSPY" combine --label-root host -o "$SCRATCH/job.pb.gz" "$SCRATCH"/node[12].pb.gz ||
		fail "combine failed"
	HOME=$SCRATCH PPROF_TMPDIR=$SCRATCH go tool pprof -symbolize=none -top "$SCRATCH/job.pb.gz" \
		>"$SCRATCH/job.top" 2>/dev/null || fail "go tool pprof cannot read the combined profile"
	t=$(sed -n 's/.* of \([0-9]*\) total.*/\1/p' "$SCRATCH/job.top")
	[ "$t" = $((2 * $(total "$SCRATCH/gone2"))) ] && grep -q ' dfd_spin$' "$SCRATCH/job.top" &&
		pass "two nodes' pprof combined: go tool pprof shows dfd_spin, total $t" ||
		fail "combined profile: total '$t', want $((2 * $(total "$SCRATCH/gone2"))): $(head -8 "$SCRATCH/job.top")"
fi
mv "$SCRATCH/dfd.away" "$SCRATCH/bin/dfd" || die "mv back"

DEBUGINFOD_CACHE_PATH=$SCRATCH/dcache2 conv "$SCRATCH/off" "$SCRATCH/off.err" --no-debuginfod ||
	die "convert --no-debuginfod failed"
grep -q 'dfd.c:' "$SCRATCH/off" && fail "--no-debuginfod: file:line fetched anyway" ||
	pass "--no-debuginfod: no file:line"
[ -e "$SCRATCH/dcache2" ] && fail "--no-debuginfod: the client ran (cache made)" ||
	pass "--no-debuginfod: the client never ran"

# Server gone: a fresh cache forces a query, which fails fast (connection
# refused) or after DEBUGINFOD_TIMEOUT; either way once.
stop_srv
t0=$(date +%s)
DEBUGINFOD_CACHE_PATH=$SCRATCH/dcache3 conv "$SCRATCH/down" "$SCRATCH/down.err" ||
	fail "server down: convert failed: $(cat "$SCRATCH/down.err")"
t1=$(date +%s)
n=$(grep -c 'warning: .*debuginfod' "$SCRATCH/down.err")
[ "$n" = 1 ] && pass "server down: one warning" ||
	fail "server down: $n debuginfod warnings: $(cat "$SCRATCH/down.err")"
[ $((t1 - t0)) -le 15 ] && pass "server down: finished in $((t1 - t0)) s (timeout 5 s)" ||
	fail "server down: took $((t1 - t0)) s"
cmp -s "$SCRATCH/down" "$SCRATCH/plain" && pass "server down: output as without a server" ||
	fail "server down: output differs from the plain conversion"

# A server that accepts and never answers: the query ends after
# DEBUGINFOD_TIMEOUT, once. (The kernel completes the TCP handshake from
# the listen backlog; nothing ever reads or writes.)
"$PY" -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
time.sleep(60)' >"$SCRATCH/mute.port" &
mute=$!
for _ in $(seq 1 50); do [ -s "$SCRATCH/mute.port" ] && break; sleep 0.1; done
t0=$(date +%s)
DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$SCRATCH/mute.port") DEBUGINFOD_TIMEOUT=2 \
	DEBUGINFOD_CACHE_PATH=$SCRATCH/dcache5 conv "$SCRATCH/mute" "$SCRATCH/mute.err" ||
	fail "silent server: convert failed"
t1=$(date +%s)
kill "$mute" 2>/dev/null
wait "$mute" 2>/dev/null
n=$(grep -c 'warning: .*debuginfod' "$SCRATCH/mute.err")
[ "$n" = 1 ] && pass "silent server: one warning ($(grep -o 'debuginfod: .*' "$SCRATCH/mute.err" | head -1))" ||
	fail "silent server: $n debuginfod warnings: $(cat "$SCRATCH/mute.err")"
[ $((t1 - t0)) -ge 2 ] && [ $((t1 - t0)) -le 12 ] &&
	pass "silent server: gave up after $((t1 - t0)) s (DEBUGINFOD_TIMEOUT=2)" ||
	fail "silent server: took $((t1 - t0)) s with DEBUGINFOD_TIMEOUT=2"
cmp -s "$SCRATCH/mute" "$SCRATCH/plain" && pass "silent server: output as without a server" ||
	fail "silent server: output differs"
finish
