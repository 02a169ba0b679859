#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e: the CLI's error contract.  Exit 0 ok, 1 error with a message on stderr
# naming the file (and the byte offset for bad input), 2 usage.  An output
# that cannot be written fails cleanly and never leaves a partial file.
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

record chain fp
data=$REC

# expect_exit WANT WHAT CMD...: run CMD, keep stderr in $SCRATCH/err.
expect_exit() {
	local want=$1 what=$2 rc=0
	shift 2
	"$@" >"$SCRATCH/stdout" 2>"$SCRATCH/err" || rc=$?
	if [ "$rc" -eq "$want" ]; then
		pass "$what: exit $rc"
		return 0
	fi
	fail "$what: exit $rc, want $want; stderr: $(head -c 300 "$SCRATCH/err")"
	return 1
}

# err_names WHAT STRING...: stderr mentions every STRING.
err_names() {
	local what=$1 s
	shift
	for s in "$@"; do
		if ! grep -qF -- "$s" "$SCRATCH/err"; then
			fail "$what: stderr does not mention '$s': $(head -c 300 "$SCRATCH/err")"
			return
		fi
	done
	pass "$what: stderr names $*"
}

# err_offset WHAT: stderr gives a byte offset ("offset 16", "byte 0x10", ...).
err_offset() {
	if grep -Eiq '(offset|byte|at)[ :=]*(0x[0-9a-f]+|[0-9]+)' "$SCRATCH/err"; then
		pass "$1: stderr gives a byte offset"
	else
		fail "$1: stderr gives no byte offset: $(head -c 300 "$SCRATCH/err")"
	fi
}

# Outputs go to $OUTD; at the end it must hold exactly the expected files.
OUTD=$SCRATCH/outdir
mkdir "$OUTD"

# Missing input.
missing=$SCRATCH/no-such.data
for cmd in convert info; do
	if [ $cmd = convert ]; then
		expect_exit 1 "convert missing file" "$PERFSPY" convert -i "$missing" -o "$OUTD/missing.out"
	else
		expect_exit 1 "info missing file" "$PERFSPY" info "$missing"
	fi
	err_names "$cmd missing file" "$missing"
done

# Garbage: wrong magic, a truncated header, an empty file.
yes 'this is not a perf.data file' | head -c 4096 >"$SCRATCH/garbage.data"
printf 'PERFILE2' >"$SCRATCH/short.data"
: >"$SCRATCH/empty.data"
for f in garbage short empty; do
	expect_exit 1 "convert $f file" "$PERFSPY" convert -i "$SCRATCH/$f.data" -o "$OUTD/$f.out" &&
		err_names "convert $f file" "$SCRATCH/$f.data" && err_offset "convert $f file"
	if [ -e "$OUTD/$f.out" ]; then
		fail "convert $f file: left an output file behind"
	else
		pass "convert $f file: no output file left"
	fi
	expect_exit 1 "info --json $f file" "$PERFSPY" info --json "$SCRATCH/$f.data" &&
		err_names "info $f file" "$SCRATCH/$f.data"
done
# Garbage on stdin.
expect_exit 1 "convert garbage on stdin" "$PERFSPY" convert -i - -o "$OUTD/stdin.out" <"$SCRATCH/garbage.data"

# A real file cut short in the middle of its data: an error or a partial
# result, never a crash.
size=$(stat -c %s "$data")
head -c $((size / 2 + 13)) "$data" >"$SCRATCH/cut.data"
rc=0
timeout 20 "$PERFSPY" convert -q -i "$SCRATCH/cut.data" -o "$OUTD/cut.out" 2>"$SCRATCH/err" || rc=$?
if [ "$rc" -le 1 ]; then
	pass "convert truncated perf.data: exit $rc"
	if [ "$rc" -eq 1 ] && [ -e "$OUTD/cut.out" ]; then
		fail "convert truncated perf.data: failed but left an output file"
	fi
else
	fail "convert truncated perf.data: exit $rc (crash, sanitizer report or timeout)"
fi

# Records overwritten with 0xff in the middle of the data: the same.
cp "$data" "$SCRATCH/corrupt.data"
head -c 256 /dev/zero | tr '\0' '\377' |
	dd of="$SCRATCH/corrupt.data" bs=1 seek=$((size / 2)) conv=notrunc status=none
for cmd in convert info; do
	rc=0
	if [ $cmd = convert ]; then
		timeout 20 "$PERFSPY" convert -q -i "$SCRATCH/corrupt.data" -o /dev/null 2>"$SCRATCH/err" || rc=$?
	else
		timeout 20 "$PERFSPY" info --json "$SCRATCH/corrupt.data" >/dev/null 2>"$SCRATCH/err" || rc=$?
	fi
	if [ "$rc" -le 1 ]; then
		pass "$cmd corrupted perf.data: exit $rc"
	else
		fail "$cmd corrupted perf.data: exit $rc (crash, sanitizer report or timeout)"
	fi
	[ "$rc" -eq 1 ] && err_names "$cmd corrupted perf.data" "$SCRATCH/corrupt.data"
done

# Output that cannot be written.
expect_exit 1 "-o into a missing directory" "$PERFSPY" convert -i "$data" -o "$OUTD/nodir/out" &&
	err_names "-o into a missing directory" "$OUTD/nodir/out"
touch "$OUTD/afile"
expect_exit 1 "-o below a regular file" "$PERFSPY" convert -i "$data" -o "$OUTD/afile/out"
if [ -w /dev/full ]; then
	expect_exit 1 "-o /dev/full (ENOSPC on write)" "$PERFSPY" convert -i "$data" -o /dev/full
	# shellcheck disable=SC2016 # $0 and $1 belong to the inner sh
	expect_exit 1 "stdout to /dev/full" sh -c '"$0" convert -i "$1" >/dev/full' "$PERFSPY" "$data"
fi
# An existing output is replaced only on success: a failed conversion keeps it.
echo keep >"$OUTD/keep.out"
expect_exit 1 "convert garbage onto an existing -o" "$PERFSPY" convert -i "$SCRATCH/garbage.data" -o "$OUTD/keep.out"
if [ "$(cat "$OUTD/keep.out" 2>/dev/null)" = keep ]; then
	pass "failed conversion left the existing output untouched"
else
	fail "failed conversion clobbered the existing output file"
fi

# Usage errors exit 2.
expect_exit 2 "no arguments" "$PERFSPY"
expect_exit 2 "unknown subcommand" "$PERFSPY" frobnicate
expect_exit 2 "unknown option" "$PERFSPY" convert --no-such-option -i "$data"
expect_exit 2 "bad --weight" "$PERFSPY" convert --weight bogus -i "$data" -o "$OUTD/w"
expect_exit 2 "--pid without a number" "$PERFSPY" convert --pid abc -i "$data" -o "$OUTD/p"
expect_exit 2 "-i without an argument" "$PERFSPY" convert -i

# err_lines WHAT N: stderr has exactly N lines (one cause, one line: issue 15).
err_lines() {
	local n
	n=$(wc -l <"$SCRATCH/err")
	if [ "$n" -eq "$2" ]; then
		pass "$1: $n line(s) on stderr"
	else
		fail "$1: $n lines on stderr, want $2: $(head -c 400 "$SCRATCH/err")"
	fi
}

# A usage error is one line pointing at the command's help, not the help.
for cmd in convert info report merge combine record; do
	expect_exit 2 "$cmd --bogus" "$PERFSPY" $cmd --bogus &&
		err_names "$cmd --bogus" "'--bogus'" "see 'perfspy $cmd --help'" &&
		err_lines "$cmd --bogus" 1
done
expect_exit 2 "--pid without its value" "$PERFSPY" convert -i "$data" --pid &&
	err_names "--pid without its value" "'--pid' needs a value" && err_lines "--pid without its value" 1
expect_exit 2 "two inputs" "$PERFSPY" convert -i "$data" "$data" && err_lines "two inputs" 1
expect_exit 2 "conflicting --python-only --keep-interpreter" \
	"$PERFSPY" convert -i "$data" --python-only --keep-interpreter -o "$OUTD/conflict" &&
	err_names "conflicting options" "--python-only" "--keep-interpreter" && err_lines "conflicting options" 1

# -i FILE and a positional FILE, in every command that reads one.
expect_exit 0 "info -i FILE" "$PERFSPY" info -i "$data"
cp "$SCRATCH/stdout" "$SCRATCH/info-i"
expect_exit 0 "info FILE" "$PERFSPY" info "$data"
if cmp -s "$SCRATCH/stdout" "$SCRATCH/info-i"; then
	pass "info -i FILE prints what info FILE prints"
else
	fail "info -i FILE and info FILE differ"
fi
expect_exit 0 "convert FILE" "$PERFSPY" convert -q "$data" -o "$SCRATCH/pos.txt"
expect_exit 0 "convert -i FILE" "$PERFSPY" convert -q -i "$data" -o "$SCRATCH/opt.txt"
if [ -s "$SCRATCH/pos.txt" ] && cmp -s "$SCRATCH/pos.txt" "$SCRATCH/opt.txt"; then
	pass "convert FILE writes what convert -i FILE writes"
else
	fail "convert FILE and convert -i FILE differ (or are empty)"
fi
expect_exit 0 "report FILE" "$PERFSPY" report -q "$data"
expect_exit 0 "combine -i FILE" "$PERFSPY" combine -q -i "$SCRATCH/opt.txt" -o "$SCRATCH/comb.txt"
if cmp -s "$SCRATCH/comb.txt" "$SCRATCH/opt.txt"; then
	pass "combine -i of one folded file gives it back"
else
	fail "combine -i of one folded file changed it"
fi

# One cause, one line.
expect_exit 1 "info missing file, once" "$PERFSPY" info "$missing" && err_lines "info missing file" 1
expect_exit 1 "convert --event nosuch" "$PERFSPY" convert -i "$data" --event nosuch -o "$OUTD/ev" &&
	err_names "convert --event nosuch" nosuch "events in this file:" && err_lines "convert --event nosuch" 1
"$PERFSPY" convert -v -i "$data" -o /dev/null 2>"$SCRATCH/err" || true
if grep -q 'perfspy: [a-z]*: perfspy:' "$SCRATCH/err"; then
	fail "a doubled 'perfspy:' prefix: $(grep -m1 'perfspy: [a-z]*: perfspy:' "$SCRATCH/err")"
else
	pass "no doubled 'perfspy: LEVEL: perfspy:' prefix under -v ($(wc -l <"$SCRATCH/err") lines)"
fi

# -v: one line per file looked for, found or not (binaries, debug files).
"$PERFSPY" convert -v -i "$data" -o /dev/null 2>"$SCRATCH/err" || true
if grep -Eq '^perfspy: info: [^ ]*/chain: binary [^ ]+: found$' "$SCRATCH/err" &&
	grep -Eq '^perfspy: info: [^ ]*libc\.so\.6: debug file [^ ]+: ' "$SCRATCH/err"; then
	pass "-v: names the chain binary found and libc's debug file lookups ($(grep -c ': binary \|: debug file ' "$SCRATCH/err") lookups)"
else
	fail "-v: no 'chain: binary PATH: found' or libc debug file line: $(head -c 400 "$SCRATCH/err")"
fi
"$PERFSPY" convert -i "$data" -o /dev/null 2>"$SCRATCH/err" || true
if grep -q ': binary \|: debug file ' "$SCRATCH/err"; then
	fail "without -v: lookups printed"
else
	pass "without -v: no lookup lines"
fi

# A filter matching nothing: exit 1, no output file, what the file holds.
pid=$("$PERFSPY" info --json "$data" | "$PY" -c 'import json,sys; t=json.load(sys.stdin)["thread_list"]; print(max(t, key=lambda x: x["samples"])["pid"])')
for cmd in convert report; do
	for flt in "--pid 2147483647" "--tid 2147483647" "--comm no-such-comm"; do
		# shellcheck disable=SC2086 # $flt is an option and its value
		expect_exit 1 "$cmd $flt" "$PERFSPY" $cmd -i "$data" $flt -o "$OUTD/none-$cmd" &&
			err_names "$cmd $flt" "no samples match" "samples by pid: $pid (" "by thread name: chain (" &&
			err_lines "$cmd $flt" 1
	done
done

expect_exit 1 "merge --pid 2147483647" "$PERFSPY" merge --pyspy "$SCRATCH/opt.txt" -i "$data" --pid 2147483647 -o "$OUTD/none-merge" &&
	err_names "merge --pid 2147483647" "no samples match" "samples by pid: $pid (" && err_lines "merge --pid 2147483647" 1
expect_exit 2 "merge --threads --no-threads" "$PERFSPY" merge --pyspy "$SCRATCH/opt.txt" -i "$data" --threads --no-threads &&
	err_lines "merge --threads --no-threads" 1

# Options for perf.data given with folded input: a warning naming them.
expect_exit 0 "convert folded --pid --threads" "$PERFSPY" convert -i "$SCRATCH/opt.txt" --pid 5 --threads -o "$SCRATCH/fold2.txt" &&
	err_names "convert folded --pid --threads" "folded stacks" "--pid" "--threads"
expect_exit 0 "convert missing --symfs" "$PERFSPY" convert -i "$data" --symfs "$SCRATCH/nodir" -o /dev/null &&
	err_names "convert missing --symfs" "--symfs $SCRATCH/nodir" "No such file"
for opt in --buildid-dir --perf-map-dir; do
	expect_exit 0 "info $opt missing" "$PERFSPY" info "$data" $opt "$SCRATCH/nodir" &&
		err_names "info $opt missing" "$opt $SCRATCH/nodir"
done

# Output files: 0666 & ~umask as any tool creates them; a symlink -o is
# written through, its target replaced (issue 15).
for mask in 022 002 077; do
	rm -f "$SCRATCH/mode.txt"
	(umask $mask && "$PERFSPY" convert -q -i "$data" -o "$SCRATCH/mode.txt")
	got=$(stat -c %a "$SCRATCH/mode.txt")
	want=$(printf '%o' $((0666 & ~0$mask)))
	if [ "$got" = "$want" ]; then
		pass "umask $mask: output mode $got"
	else
		fail "umask $mask: output mode $got, want $want"
	fi
done
mkdir "$SCRATCH/real"
echo old >"$SCRATCH/real/target.txt"
ln -s real/target.txt "$SCRATCH/link.txt"
expect_exit 0 "convert -o SYMLINK" "$PERFSPY" convert -q -i "$data" -o "$SCRATCH/link.txt"
if [ -L "$SCRATCH/link.txt" ] && cmp -s "$SCRATCH/real/target.txt" "$SCRATCH/opt.txt" &&
	[ "$(find "$SCRATCH/real" -type f | wc -l)" -eq 1 ]; then
	pass "-o SYMLINK: the link stays, its target holds the output, no temporary left"
else
	fail "-o SYMLINK: link $([ -L "$SCRATCH/link.txt" ] && echo kept || echo replaced), target: $(head -c 100 "$SCRATCH/real/target.txt")"
fi
# An existing file is swapped with the new one and unlinked, not renamed
# over (ext4 writes back a file renamed over another at once: docs/design.md
# §6.11): what rename() leaves is what stays. Its other names keep the old
# bytes, its mode is kept, no temporary is left, and the swap is what ran.
echo old >"$SCRATCH/real/swap.txt"
chmod 640 "$SCRATCH/real/swap.txt"
ln "$SCRATCH/real/swap.txt" "$SCRATCH/real/hard.txt"
if command -v strace >/dev/null; then
	# LeakSanitizer cannot run under ptrace (the ASan build's runs):
	# the leak check is the other runs' job.
	lsan_off="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
	ASAN_OPTIONS=$lsan_off strace -f -o "$SCRATCH/swap.strace" -e trace=rename,renameat,renameat2 \
		"$PERFSPY" convert -q -i "$data" -o "$SCRATCH/real/swap.txt" ||
		fail "convert -o EXISTING under strace"
	if grep -q 'RENAME_EXCHANGE) = 0' "$SCRATCH/swap.strace"; then
		pass "-o EXISTING: swapped in (renameat2 RENAME_EXCHANGE)"
	else
		fail "-o EXISTING: no RENAME_EXCHANGE: $(grep -i rename "$SCRATCH/swap.strace" | head -3)"
	fi
	rm -f "$SCRATCH/new.strace"
	ASAN_OPTIONS=$lsan_off strace -f -o "$SCRATCH/new.strace" -e trace=rename,renameat,renameat2 \
		"$PERFSPY" convert -q -i "$data" -o "$SCRATCH/real/fresh.txt" ||
		fail "convert -o NEW under strace"
	# strace -f splits a call another thread's syscall interrupts into
	# "rename(... <unfinished ...>" and "<... rename resumed>) = 0".
	if grep -qE '^[0-9]* *(rename\(.*|<\.\.\. rename resumed>.*)\) += 0' "$SCRATCH/new.strace" &&
		cmp -s "$SCRATCH/real/fresh.txt" "$SCRATCH/opt.txt"; then
		pass "-o NEW: renamed into place"
	else
		fail "-o NEW: $(grep -i rename "$SCRATCH/new.strace" | head -3)"
	fi
	rm -f "$SCRATCH/real/fresh.txt"
elif [ "${CI:-}" = true ]; then
	fail "strace missing under CI"
else
	"$PERFSPY" convert -q -i "$data" -o "$SCRATCH/real/swap.txt" || fail "convert -o EXISTING"
fi
if cmp -s "$SCRATCH/real/swap.txt" "$SCRATCH/opt.txt" &&
	[ "$(cat "$SCRATCH/real/hard.txt")" = old ] &&
	[ "$(stat -c %a "$SCRATCH/real/swap.txt")" = 640 ] &&
	[ "$(find "$SCRATCH/real" -type f | wc -l)" -eq 3 ]; then
	pass "-o EXISTING: replaced, its hard link keeps the old bytes, mode 640 kept, no temporary left"
else
	fail "-o EXISTING: $(ls -la "$SCRATCH/real")"
fi
rm -f "$SCRATCH/real/swap.txt" "$SCRATCH/real/hard.txt"
# A large output is written into blocks allocated ahead (cli.c prealloc):
# the file ends at its last byte, holds no more blocks than its bytes
# need, and has the bytes stdout gets. 60,000 folded stacks, 3.5 MB.
awk 'BEGIN { for (i = 0; i < 60000; i++)
	printf "main (big.c:1);work_%05d (big.c:%d);leaf_%03d (big.c:9) %d\n", i, i % 97, i % 211, i % 7 + 1 }' \
	>"$SCRATCH/big.txt"
"$PERFSPY" convert -q -i "$SCRATCH/big.txt" -o "$SCRATCH/big.out" ||
	fail "convert of 60,000 folded stacks"
"$PERFSPY" convert -q -i "$SCRATCH/big.txt" -o - >"$SCRATCH/big.stdout" ||
	fail "convert of 60,000 folded stacks to stdout"
size=$(stat -c %s "$SCRATCH/big.out")
blocks=$(stat -c '%b * %B' "$SCRATCH/big.out")
if [ "$size" -gt 2000000 ] && cmp -s "$SCRATCH/big.out" "$SCRATCH/big.stdout" &&
	[ $((blocks)) -le $((size + 1048576)) ] && [ -z "$(find "$SCRATCH" -name '.big.out.tmp*')" ]; then
	pass "-o of $size bytes: the bytes of stdout, $((blocks)) bytes allocated, no temporary left"
else
	fail "-o of $size bytes: $((blocks)) bytes allocated, $(cmp "$SCRATCH/big.out" "$SCRATCH/big.stdout" 2>&1)"
fi
rm -f "$SCRATCH/big.txt" "$SCRATCH/big.out" "$SCRATCH/big.stdout"
ln -s real/new.txt "$SCRATCH/dangling.txt"
expect_exit 0 "convert -o DANGLING-SYMLINK" "$PERFSPY" convert -q -i "$data" -o "$SCRATCH/dangling.txt"
if [ -L "$SCRATCH/dangling.txt" ] && cmp -s "$SCRATCH/real/new.txt" "$SCRATCH/opt.txt"; then
	pass "-o dangling symlink: creates its target"
else
	fail "-o dangling symlink: link $([ -L "$SCRATCH/dangling.txt" ] && echo kept || echo replaced)"
fi

# Success paths exit 0; -q keeps stderr empty.
expect_exit 0 "convert -q" "$PERFSPY" convert -q -i "$data" -o "$OUTD/ok.out"
if [ -s "$SCRATCH/err" ]; then
	fail "convert -q wrote to stderr: $(head -c 200 "$SCRATCH/err")"
else
	pass "convert -q: silent"
fi
expect_exit 0 "info" "$PERFSPY" info "$data"
expect_exit 0 "info --json" "$PERFSPY" info --json "$data"
if "$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$SCRATCH/stdout" 2>/dev/null; then
	pass "info --json prints valid JSON"
else
	fail "info --json output is not JSON: $(head -c 200 "$SCRATCH/stdout")"
fi

# A named pipe given by path is read whole, as stdin is: the CLI looks at its
# first bytes without closing it (closed and opened again, the pipe had no
# reader for a moment and its writer died of SIGPIPE past 64 KB).
[ "$(stat -c %s "$data")" -gt 65536 ] || fail "recording under 64 KB: the FIFO check proves nothing"
rm -f "$SCRATCH/fifo"
mkfifo "$SCRATCH/fifo" || die "mkfifo"
cat "$data" >"$SCRATCH/fifo" &
catpid=$!
"$PERFSPY" convert -q -j 1 -i "$SCRATCH/fifo" -o "$SCRATCH/fifo.txt" 2>"$SCRATCH/err" ||
	fail "convert from a FIFO failed: $(head -c 300 "$SCRATCH/err")"
if wait "$catpid"; then
	pass "the FIFO's writer wrote the whole recording"
else
	fail "the FIFO's writer failed (SIGPIPE: the reader went away)"
fi
"$PERFSPY" convert -q -j 1 -i "$data" -o "$SCRATCH/file.txt" || fail "convert $data failed"
if [ -s "$SCRATCH/file.txt" ] && cmp -s "$SCRATCH/file.txt" "$SCRATCH/fifo.txt"; then
	pass "convert from a FIFO by path: the file's output"
else
	fail "convert from a FIFO by path differs from the file's output"
fi

# Nothing but the expected files in the output directory: no partial outputs
# of failed runs, no temporary files.
want="afile keep.out ok.out"
[ -e "$OUTD/cut.out" ] && want="afile cut.out keep.out ok.out"
# shellcheck disable=SC2012 # names this test made itself
got=$(ls -A "$OUTD" | tr '\n' ' ' | sed 's/ $//')
if [ "$got" = "$want" ]; then
	pass "output directory holds only: $want"
else
	fail "output directory holds: $got (want: $want)"
fi
finish
