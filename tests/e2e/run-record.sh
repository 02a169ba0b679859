#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 9): `perfspy record`, live through libperf, on CPython 3.12 running
# src/py/workload.py (named threads, each a fixed Python chain ending in its
# own ctypes C function of libwork.so, built -O2 -fomit-frame-pointer).
#   launch     `record -- python3.12 workload.py`: PYTHONPERFSUPPORT=1 is
#              added, so every chain is whole: Python frames from the thread's
#              root down to the C function, the ctypes call under them
#   attach     --pid of a workload started with -X perf: the same chains, and
#              "writes a perf map" on stderr; --pid of one started without:
#              native frames only (the C function under PyCFuncPtr_call, no
#              workload.py frame) and the note with its three fixes
#   build ids  the files mapped before --pid carry their build ids (perf
#              script reads them; readelf's); a library replaced after it
#              was loaded carries the mapped build's: live, its frames come
#              from the mapped file (whole chains); converted after the
#              process ended, the new file is not used for them
#   container  --pid of a workload in its own mount and pid namespaces
#              (its /tmp a tmpfs, pid 1 there, its library and the library's
#              debug file in that /tmp): the perf map, the library and its
#              .gnu_debuglink found through /proc/PID/root, whole chains
#   -s         the forked child's chain is there with -s, absent without
#   Ctrl-C     SIGINT mid-recording: exit 0, output complete and valid, the
#              launched command ended
#   --save     the saved perf.data is read by perf script and perf report, and
#              perfspy convert -i gives the live output byte for byte
#   refusal    as `nobody`: perf_event_open refused (perf_event_paranoid 3 on
#              kernels that enforce it; a seccomp filter failing it with EPERM
#              as docker's default profile does; --pid of root's process):
#              one message naming perf_event_paranoid and CAP_PERFMON, exit 1,
#              no output file
# PY312 overrides the interpreter; REC_SECONDS the workload time (2 s).
. "$(dirname "$0")/lib.sh"

need_perfspy
scratch
chmod 755 "$SCRATCH" || die "chmod"

PYSRC=$E2E_SRC/py
WL=$PYSRC/workload.py
RUN_S=${REC_SECONDS:-2}
MIN_RATE=90	# share of C-leaf samples whose stack holds the whole chain

need_live_py312

(cd "$PYSRC" && ${CC:-cc} -O2 -g -fomit-frame-pointer -shared -fPIC \
	-o "$SCRATCH/libwork.so" libwork.c) || die "cannot build libwork.so"
LIB=$SCRATCH/libwork.so

# Line of `def NAME` in workload.py (perfspy names a Python frame by its
# function's first line).
# shellcheck disable=SC2317 # called through eval below
L() { grep -n "^ *def $1(" "$WL" | cut -d: -f1; }
for f in recurse rec_worker method deeper nested_worker produce consume \
	gen_worker main main_loop main_leaf spawn_child child_work child_leaf; do
	eval "L_$f=\$(L $f)"
	[ -n "$(eval echo "\$L_$f")" ] || die "no def $f in $WL"
done
# shellcheck disable=SC2046,SC2154 # eight words; L_* are set by eval above
rec8=$(printf 'recurse \\(workload\\.py:%s\\);' $(seq 8 | sed "s/.*/$L_recurse/"))
# The chain each C function must sit under (Python frames innermost-last,
# ctypes between them and the leaf). Native start-up frames (clone3,
# thread_run) may precede a thread's _bootstrap.
declare -A CHAIN=(
	[hash_rec]="w-rec;([^;]*;)*_bootstrap \(threading\.py:[0-9]+\);.*rec_worker \(workload\.py:$L_rec_worker\);${rec8}PyCFuncPtr_call .*;hash_rec \(libwork\.c:[0-9]+\)"
	[hash_nested]="w-nested;([^;]*;)*_bootstrap \(threading\.py:[0-9]+\);.*nested_worker \(workload\.py:$L_nested_worker\);method \(workload\.py:$L_method\);deeper \(workload\.py:$L_deeper\);PyCFuncPtr_call .*;hash_nested \(libwork\.c:[0-9]+\)"
	[hash_gen]="w-gen;([^;]*;)*_bootstrap \(threading\.py:[0-9]+\);.*gen_worker \(workload\.py:$L_gen_worker\);consume \(workload\.py:$L_consume\);produce \(workload\.py:$L_produce\);PyCFuncPtr_call .*;hash_gen \(libwork\.c:[0-9]+\)"
	[hash_main]="py-main;<module> \(workload\.py:1\);main \(workload\.py:$L_main\);main_loop \(workload\.py:$L_main_loop\);main_leaf \(workload\.py:$L_main_leaf\);PyCFuncPtr_call .*;hash_main \(libwork\.c:[0-9]+\)"
	[hash_child]="py-child;<module> \(workload\.py:1\);main \(workload\.py:$L_main\);spawn_child \(workload\.py:$L_spawn_child\);child_work \(workload\.py:$L_child_work\);child_leaf \(workload\.py:$L_child_leaf\);PyCFuncPtr_call .*;hash_child \(libwork\.c:[0-9]+\)"
)

# weight FILE ERE: samples of the lines matching ERE.
weight() { grep -E "$2" "$1" | awk '{ s += $NF } END { print s + 0 }'; }

# check_chains FILE WHAT LEAF...: every LEAF's samples (>= 1) mostly carry
# their whole chain under a `thread (TID): NAME` root.
check_chains() {
	local f=$1 what=$2 leaf all whole
	shift 2
	for leaf in "$@"; do
		all=$(weight "$f" ";$leaf \(libwork\.c:[0-9]+\) [0-9]+$")
		whole=$(weight "$f" "^thread \([0-9]+\): ${CHAIN[$leaf]} [0-9]+$")
		if [ "$all" -eq 0 ]; then
			fail "$what: no sample in $leaf"
		elif [ $((whole * 100)) -ge $((all * MIN_RATE)) ]; then
			pass "$what: $leaf under its whole Python chain in $whole of $all samples"
		else
			fail "$what: $leaf under its whole chain in only $whole of $all samples; e.g. $(grep ";$leaf " "$f" | grep -vE "${CHAIN[$leaf]}" | head -1)"
		fi
	done
}

# wait_line FILE TEXT: wait (10 s at most) until FILE holds TEXT.
wait_line() {
	local _
	for _ in $(seq 100); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

pids=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup_rec() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${paranoid_saved:-}" ] && echo "$paranoid_saved" >/proc/sys/kernel/perf_event_paranoid
	for p in "${pids[@]}"; do rm -f "/tmp/perf-$p.map"; done
	cleanup_scratch
}
trap cleanup_rec EXIT
trap 'exit 143' TERM INT

say "== launch: $PY12 workload.py (PYTHONPERFSUPPORT=1 added)"
out=$SCRATCH/launch.txt
if "$PERFSPY" record -t -f raw -o "$out" -- "$PY12" "$WL" "$LIB" "$RUN_S" nofork \
	>"$SCRATCH/launch.wl" 2>"$SCRATCH/launch.err"; then
	pass "launch: exit 0"
	pids+=("$(awk '$1 == "parent" { print $2 }' "$SCRATCH/launch.wl")")
	check_format "$out" "launch"
	check_chains "$out" launch hash_rec hash_nested hash_gen hash_main
	grep -q "samples in 4 threads" "$SCRATCH/launch.err" &&
		grep -qE "tid [0-9]+ w-rec +[0-9]+ samples +[0-9.]+ s on CPU" "$SCRATCH/launch.err" &&
		grep -q "requested 100 Hz per second on CPU" "$SCRATCH/launch.err" &&
		grep -q "lost records: 0" "$SCRATCH/launch.err" &&
		grep -q "wrote $out" "$SCRATCH/launch.err" &&
		pass "launch: summary (4 threads, per-thread rate, rates, lost, output)" ||
		fail "launch: summary: $(cat "$SCRATCH/launch.err")"
else
	fail "launch: exit $?: $(tail -3 "$SCRATCH/launch.err")"
fi

# attach TAG [PYFLAGS]: run the workload (6 s), record 2 s of it by --pid.
attach() {
	local tag=$1 wpid
	shift
	"$PY12" "$@" "$WL" "$LIB" 6 nofork >"$SCRATCH/$tag.wl" &
	wpid=$!
	pids+=("$wpid")
	wait_line "$SCRATCH/$tag.wl" "^parent" || { fail "$tag: workload did not start"; return 1; }
	sleep 0.5 # its threads are running
	if [ "$tag" = attach-noperf ]; then
		# An earlier process's map under this pid (pids wrap at
		# pid_max): written before the workload started, so neither
		# the note nor the library may take it for the workload's.
		printf '%x 1000 py::stale:/nowhere/stale.py\n' 4096 >"/tmp/perf-$wpid.map"
		touch -d '10 minutes ago' "/tmp/perf-$wpid.map"
	fi
	"$PERFSPY" record -p "$wpid" -d 2 -t -f raw -o "$SCRATCH/$tag.txt" 2>"$SCRATCH/$tag.err" ||
		{ fail "$tag: exit $?: $(tail -3 "$SCRATCH/$tag.err")"; return 1; }
	wait "$wpid"
	pass "$tag: exit 0"
	check_format "$SCRATCH/$tag.txt" "$tag"
	return 0
}

say "== attach: --pid of a workload started with -X perf"
if attach attach-perf -X perf; then
	check_chains "$SCRATCH/attach-perf.txt" attach-perf hash_rec hash_nested hash_gen hash_main
	grep -q "writes a perf map" "$SCRATCH/attach-perf.err" && ! grep -q "note:" "$SCRATCH/attach-perf.err" &&
		pass "attach-perf: says the target writes a perf map, no note" ||
		fail "attach-perf: stderr: $(cat "$SCRATCH/attach-perf.err")"
	# The target runs on after the 2 s: every thread has its CPU time,
	# and the kernel's cpu-clock gives about the requested rate per CPU
	# second (wide bounds: this checks the accounting, not the machine).
	all=$(sed -n "s/.*achieved \([0-9.]*\) Hz over all threads' CPU time.*/\1/p" "$SCRATCH/attach-perf.err")
	awk -v r="$all" 'BEGIN { exit !(r >= 50 && r <= 150) }' &&
		pass "attach-perf: rate per CPU second over all threads $all Hz (requested 100)" ||
		fail "attach-perf: rate: $(grep -A1 'rate:' "$SCRATCH/attach-perf.err")"
	d=$(grep -oE "recorded [0-9.]+ s" "$SCRATCH/attach-perf.err" | grep -oE "[0-9.]+")
	awk -v d="$d" 'BEGIN { exit !(d >= 1.9 && d <= 2.6) }' &&
		pass "attach-perf: -d 2 recorded ${d} s" || fail "attach-perf: -d 2 recorded '${d}' s"
fi

say "== attach: --pid of a workload started without -X perf"
if attach attach-noperf; then
	f=$SCRATCH/attach-noperf.txt
	nat=$(weight "$f" "PyCFuncPtr_call [^;]*;.*hash_(rec|nested|gen|main) \(libwork\.c:[0-9]+\) [0-9]+$")
	py=$(weight "$f" "\(workload\.py")
	[ "$nat" -gt 0 ] && [ "$py" -eq 0 ] &&
		pass "attach-noperf: native frames only ($nat samples in libwork under ctypes, none named in workload.py)" ||
		fail "attach-noperf: $nat native samples under ctypes, $py with Python frames"
	e=$SCRATCH/attach-noperf.err
	grep -q "note: pid [0-9]* (python3.12) writes no perf map" "$e" &&
		grep -q "native frames only" "$e" && grep -q -- "-X perf" "$e" &&
		grep -q "PYTHONPERFSUPPORT=1" "$e" && grep -q 'activate_stack_trampoline("perf")' "$e" &&
		grep -q "perfspy merge" "$e" &&
		pass "attach-noperf: the note (native frames only, three fixes, merge for <= 3.11)" ||
		fail "attach-noperf: stderr: $(cat "$e")"
	grep -q "perf-[0-9]*\.map is older than pid [0-9]*: an earlier process's" "$e" &&
		grep -q "perf-[0-9]*\.map: older than process [0-9]*: an earlier process's with that pid, not used" "$e" &&
		! grep -q "stale\.py" "$f" &&
		pass "attach-noperf: an earlier process's perf map under its pid is named as such and not used" ||
		fail "attach-noperf: stale map: $(cat "$e")"
fi

say "== attach: the build ids of the files mapped before it; a replaced library's is the mapped one's"
# libre.so is libwork.c linked with a build id of this run's own, so no
# build-id cache holds it; once the workload has loaded it, another build
# is moved over it (the mapping's file is then "(deleted)" and its path
# names the new one), as an upgrade during a training run does.
rand_id() { od -An -tx1 -N20 /dev/urandom | tr -d ' \n'; }
old_id=$(rand_id)
new_id=$(rand_id)
(cd "$PYSRC" && ${CC:-cc} -O2 -g -fomit-frame-pointer -shared -fPIC \
	-Wl,--build-id="0x$old_id" -o "$SCRATCH/libre.so" libwork.c) || die "cannot build libre.so"
"$PY12" -X perf "$WL" "$SCRATCH/libre.so" 6 nofork >"$SCRATCH/re.wl" &
wpid=$!
pids+=("$wpid")
if wait_line "$SCRATCH/re.wl" "^parent"; then
	sleep 0.5
	exe=$(readlink -f "/proc/$wpid/exe")
	(cd "$PYSRC" && ${CC:-cc} -O0 -g -shared -fPIC -Wl,--build-id="0x$new_id" \
		-o "$SCRATCH/libre.new" libwork.c) && mv -f "$SCRATCH/libre.new" "$SCRATCH/libre.so" ||
		die "cannot replace libre.so"
	if "$PERFSPY" record -p "$wpid" -d 2 -t -f raw --save "$SCRATCH/re.data" \
		-o "$SCRATCH/re.txt" 2>"$SCRATCH/re.err"; then
		wait "$wpid"
		# perf's reading of the synthesized records: "[start(len) @
		# pgoff <build id>]: perms path" (perf_event__fprintf_mmap2).
		"$PERF" script -i "$SCRATCH/re.data" --show-mmap-events 2>/dev/null |
			sed -n 's/.*PERF_RECORD_MMAP2 .* <\([0-9a-f]*\)>\]: [-rwxps]* \(.*\)$/\1 \2/p' |
			sort -u >"$SCRATCH/re.ids"
		good=0 bad=""
		while read -r id path; do
			case $path in *" (deleted)") continue ;; esac
			want=$(readelf -n "$path" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
			[ "$id" = "$want" ] && good=$((good + 1)) || bad+=" $path ($id, readelf: $want)"
		done <"$SCRATCH/re.ids"
		libc=$(grep -c ' /.*/libc\.so\.6$' "$SCRATCH/re.ids")
		py=$(grep -c " $exe\$" "$SCRATCH/re.ids")
		[ -z "$bad" ] && [ "$libc" -eq 1 ] && [ "$py" -eq 1 ] && [ "$good" -ge 4 ] &&
			pass "build ids: perf script reads one on each of $good files mapped before (python3.12, libc among them), each readelf's" ||
			fail "build ids: $good as readelf's, python $py, libc $libc;$bad"
		grep -qx "$old_id $SCRATCH/libre.so (deleted)" "$SCRATCH/re.ids" &&
			! grep -q "$new_id" "$SCRATCH/re.ids" &&
			pass "build ids: the replaced libre.so's mappings carry the mapped build's id, not the new file's" ||
			fail "build ids: libre.so: $(grep libre "$SCRATCH/re.ids")"
		# The new file at that path is another build (-O0: its symbols
		# and CFI would break the unwinds): the mapped one is read
		# through /proc/PID/map_files, so the chains are whole and
		# named as from the old build.
		! grep -q "build id differs" "$SCRATCH/re.err" &&
			pass "build ids: the new libre.so is not read for the mapped one" ||
			fail "build ids: $(grep -i "build id" "$SCRATCH/re.err" | head -2)"
		check_chains "$SCRATCH/re.txt" "build ids, replaced libre.so" hash_rec hash_nested hash_gen hash_main
		# Converted later, the mapped file is gone with the process:
		# its build id keeps the new file out, and says so.
		"$PERFSPY" convert -i "$SCRATCH/re.data" -f raw -o "$SCRATCH/re-later.txt" 2>"$SCRATCH/re-later.err"
		grep -q "libre\.so.*build id differs from the recorded one, not used" "$SCRATCH/re-later.err" &&
			! grep -qE ";hash_[a-z]+ \(libwork\.c:[0-9]+\) [0-9]+$" "$SCRATCH/re-later.txt" &&
			pass "build ids: converted after the process ended, the new libre.so is not taken for the mapped one" ||
			fail "build ids, later: $(grep -c "hash_" "$SCRATCH/re-later.txt") lines named from the new libre.so; $(grep -i "build id" "$SCRATCH/re-later.err" | head -2)"
	else
		fail "build ids: exit $?: $(tail -3 "$SCRATCH/re.err")"
	fi
else
	fail "build ids: workload did not start"
fi

say "== attach: a process in its own mount and pid namespaces, as in a container"
# The workload sees a /tmp of its own (a tmpfs) and is pid 1 there: it
# writes /tmp/perf-1.map and loads /tmp/libns.so, whose debug info is in
# /tmp/libns.so.debug by its .gnu_debuglink; none of them is a file of
# ours. The two files are read through fds 3 and 4, opened before the
# tmpfs hides $SCRATCH. Its build id is this run's own, so that no
# build-id cache holds it.
if ! command -v unshare >/dev/null; then
	fail "container: no unshare (util-linux)"
elif ! (cd "$PYSRC" && ${CC:-cc} -O2 -g -fomit-frame-pointer -shared -fPIC \
	-Wl,--build-id="0x$(rand_id)" -o "$SCRATCH/libns.so" libwork.c) ||
	! (cd "$SCRATCH" && objcopy --only-keep-debug libns.so libns.so.debug &&
	strip -g libns.so && objcopy --add-gnu-debuglink=libns.so.debug libns.so); then
	fail "container: cannot split libns.so's debug info"
else
	rm -f /tmp/libns.so /tmp/libns.so.debug
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare --mount --pid --fork --propagation private sh -c \
		'exec 3<"$1" 4<"$1.debug"; mount -t tmpfs none /tmp &&
		 cat <&3 >/tmp/libns.so && cat <&4 >/tmp/libns.so.debug &&
		 exec "$2" -X perf "$3" /tmp/libns.so 6 nofork' sh "$SCRATCH/libns.so" "$PY12" "$WL" \
		>"$SCRATCH/ns.wl" 2>"$SCRATCH/ns.wlerr" &
	up=$!
	pids+=("$up")
	if wait_line "$SCRATCH/ns.wl" "^parent 1$"; then
		sleep 0.5
		hp=$(pgrep -P "$up")
		pids+=("$hp")
		if "$PERFSPY" record -p "$hp" -d 2 -t -f raw -o "$SCRATCH/ns.txt" 2>"$SCRATCH/ns.err"; then
			wait "$up"
			grep -q "writes a perf map (/proc/$hp/root/tmp/perf-1\.map)" "$SCRATCH/ns.err" &&
				pass "container: pid $hp's perf map found in its own /tmp under its own pid (1)" ||
				fail "container: $(head -3 "$SCRATCH/ns.err")"
			check_chains "$SCRATCH/ns.txt" container hash_rec hash_nested hash_gen hash_main
		else
			fail "container: exit $?: $(tail -3 "$SCRATCH/ns.err")"
		fi
	else
		fail "container: workload did not start: $(cat "$SCRATCH/ns.wl" "$SCRATCH/ns.wlerr")"
	fi
fi

say "== -s: a forking workload"
if "$PERFSPY" record -s -t -f raw -o "$SCRATCH/sub.txt" -- "$PY12" "$WL" "$LIB" "$RUN_S" \
	>"$SCRATCH/sub.wl" 2>"$SCRATCH/sub.err"; then
	mapfile -t -O "${#pids[@]}" pids < <(awk '$1 == "parent" || $1 == "child" { print $2 }' "$SCRATCH/sub.wl")
	check_format "$SCRATCH/sub.txt" "-s"
	check_chains "$SCRATCH/sub.txt" "-s" hash_child hash_main
	grep -q "with subprocesses" "$SCRATCH/sub.err" && pass "-s: summary counts subprocesses" ||
		fail "-s: summary: $(cat "$SCRATCH/sub.err")"
else
	fail "-s: exit $?: $(tail -3 "$SCRATCH/sub.err")"
fi
if "$PERFSPY" record -q -t -f raw -o "$SCRATCH/nosub.txt" -- "$PY12" "$WL" "$LIB" "$RUN_S" \
	>"$SCRATCH/nosub.wl" 2>"$SCRATCH/nosub.err"; then
	mapfile -t -O "${#pids[@]}" pids < <(awk '$1 == "parent" || $1 == "child" { print $2 }' "$SCRATCH/nosub.wl")
	n=$(weight "$SCRATCH/nosub.txt" "hash_child")
	m=$(weight "$SCRATCH/nosub.txt" "hash_main")
	[ "$n" -eq 0 ] && [ "$m" -gt 0 ] && pass "no -s: the child's samples are left out ($m in hash_main)" ||
		fail "no -s: $n samples of the child, $m of the parent"
else
	fail "no -s: exit $?: $(tail -3 "$SCRATCH/nosub.err")"
fi

say "== Ctrl-C mid-recording"
"$PERFSPY" record -t -f raw -o "$SCRATCH/int.txt" -- "$PY12" "$WL" "$LIB" 60 nofork \
	>"$SCRATCH/int.wl" 2>"$SCRATCH/int.err" &
rp=$!
pids+=("$rp")
if wait_line "$SCRATCH/int.wl" "^parent"; then
	wpid=$(awk '$1 == "parent" { print $2 }' "$SCRATCH/int.wl")
	pids+=("$wpid")
	sleep 2
	t0=$(date +%s)
	kill -INT "$rp"
	wait "$rp"
	rc=$?
	t1=$(date +%s)
	[ "$rc" -eq 0 ] && pass "Ctrl-C: exit 0 after $((t1 - t0)) s" || fail "Ctrl-C: exit $rc: $(tail -3 "$SCRATCH/int.err")"
	[ -s "$SCRATCH/int.txt" ] && check_format "$SCRATCH/int.txt" "Ctrl-C" || fail "Ctrl-C: no output"
	check_chains "$SCRATCH/int.txt" "Ctrl-C" hash_main
	ls "$SCRATCH"/int.txt.*tmp* >/dev/null 2>&1 && fail "Ctrl-C: temporary file left" ||
		pass "Ctrl-C: no temporary file left"
	kill -0 "$wpid" 2>/dev/null && fail "Ctrl-C: the launched workload still runs" ||
		pass "Ctrl-C: the launched workload ended"
else
	fail "Ctrl-C: workload did not start: $(cat "$SCRATCH/int.err")"
fi

say "== --save: perf.data read back by perf and by perfspy convert"
if "$PERFSPY" record -f raw --save "$SCRATCH/saved.data" -o "$SCRATCH/live.txt" -- \
	"$PY12" "$WL" "$LIB" "$RUN_S" nofork >"$SCRATCH/save.wl" 2>"$SCRATCH/save.err"; then
	wpid=$(awk '$1 == "parent" { print $2 }' "$SCRATCH/save.wl")
	pids+=("$wpid")
	live=$(awk '{ s += $NF } END { print s + 0 }' "$SCRATCH/live.txt")
	if "$PERFSPY" convert -q -i "$SCRATCH/saved.data" --pid "$wpid" -f raw -o "$SCRATCH/conv.txt"; then
		cmp -s "$SCRATCH/live.txt" "$SCRATCH/conv.txt" &&
			pass "--save: perfspy convert -i gives the live output byte for byte ($live samples)" ||
			fail "--save: perfspy convert differs from the live output: $(diff "$SCRATCH/live.txt" "$SCRATCH/conv.txt" | head -4)"
	else
		fail "--save: perfspy convert -i failed"
	fi
	if command -v "$PERF" >/dev/null 2>&1; then
		"$PERF" script -i "$SCRATCH/saved.data" --pid "$wpid" -F tid,sym 2>"$SCRATCH/script.err" >"$SCRATCH/script.txt"
		nrec=$("$PERF" script -i "$SCRATCH/saved.data" --pid "$wpid" -F tid -G 2>/dev/null | grep -c '[0-9]')
		[ "$nrec" -eq "$live" ] && grep -q "hash_rec" "$SCRATCH/script.txt" &&
			grep -q "PyCFuncPtr_call" "$SCRATCH/script.txt" &&
			pass "--save: perf script -i reads it: $nrec samples of pid $wpid (= live), hash_rec under PyCFuncPtr_call" ||
			fail "--save: perf script: $nrec samples (live $live); $(head -2 "$SCRATCH/script.err")"
		"$PERF" report -i "$SCRATCH/saved.data" --stdio --sort sym 2>/dev/null | grep -q "hash_rec" &&
			pass "--save: perf report -i names hash_rec" || fail "--save: perf report -i"
	fi
else
	fail "--save: exit $?: $(tail -3 "$SCRATCH/save.err")"
fi

say "== -f pprof: go tool pprof reads it; its total is the saved recording's"
if ! command -v go >/dev/null 2>&1; then
	fail "-f pprof: no go (golang-go, make deps installs it)"
elif "$PERFSPY" record -q -f pprof --save "$SCRATCH/pp.data" -o "$SCRATCH/rec.pb.gz" -- \
	"$PY12" "$WL" "$LIB" "$RUN_S" nofork >"$SCRATCH/pp.wl" 2>"$SCRATCH/pp.err"; then
	wpid=$(awk '$1 == "parent" { print $2 }' "$SCRATCH/pp.wl")
	pids+=("$wpid")
	raw=$("$PERFSPY" convert -q -i "$SCRATCH/pp.data" --pid "$wpid" -f raw |
		awk '{ s += $NF } END { print s + 0 }')
	top=$(go tool pprof -top "$SCRATCH/rec.pb.gz" 2>/dev/null |
		sed -n 's/.* of \([0-9]*\) total.*/\1/p' | head -1)
	go tool pprof -traces "$SCRATCH/rec.pb.gz" >"$SCRATCH/pp.traces" 2>/dev/null
	[ -n "$top" ] && [ "$top" -gt 0 ] && [ "$top" = "$raw" ] &&
		pass "-f pprof: go tool pprof total $top = the saved recording's" ||
		fail "-f pprof: go tool pprof total '$top', saved recording $raw"
	grep -A40 "hash_rec" "$SCRATCH/pp.traces" | grep -q "rec_worker" &&
		pass "-f pprof: hash_rec under rec_worker in go tool pprof -traces" ||
		fail "-f pprof: no hash_rec under rec_worker: $(head -20 "$SCRATCH/pp.traces")"
else
	fail "-f pprof: exit $?: $(tail -3 "$SCRATCH/pp.err")"
fi

say "== refusal: an unprivileged user"
if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
	say "  (not root, or no nobody/setpriv: refusal checks not run)"
	[ "${CI:-}" = true ] && fail "refusal: CI runs as root with setpriv"
else
	cp "$PERFSPY" "$SCRATCH/perfspy-copy" && chmod 755 "$SCRATCH/perfspy-copy"
	mkdir -m 777 "$SCRATCH/rw"
	asnobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	# refused TAG CMD...: one message naming perf_event_paranoid and
	# CAP_PERFMON, exit 1, nothing written.
	refused() {
		local tag=$1 rc=0
		shift
		"$@" >"$SCRATCH/$tag.out" 2>"$SCRATCH/$tag.err" || rc=$?
		if [ "$rc" -eq 1 ] && grep -q "not allowed to sample" "$SCRATCH/$tag.err" &&
			grep -q "perf_event_paranoid" "$SCRATCH/$tag.err" &&
			grep -q "CAP_PERFMON" "$SCRATCH/$tag.err" &&
			[ -z "$(ls -A "$SCRATCH/rw")" ]; then
			pass "$tag: refused with the fix, exit 1, no output file"
		else
			fail "$tag: exit $rc, files: $(ls -A "$SCRATCH/rw"), stderr: $(head -3 "$SCRATCH/$tag.err")"
		fi
		rm -f "$SCRATCH"/rw/* "$SCRATCH"/rw/.??* 2>/dev/null
	}
	paranoid_saved=$(cat /proc/sys/kernel/perf_event_paranoid)
	echo 3 >/proc/sys/kernel/perf_event_paranoid
	rc=0
	asnobody "$SCRATCH/perfspy-copy" record -q -f raw -o "$SCRATCH/rw/p3.txt" \
		--save "$SCRATCH/rw/p3.data" -- /bin/true 2>"$SCRATCH/p3.err" || rc=$?
	if [ "$rc" -eq 0 ]; then
		say "  (this kernel does not enforce perf_event_paranoid 3: user-space sampling stays allowed)"
		rm -f "$SCRATCH"/rw/*
	else
		refused paranoid3 asnobody "$SCRATCH/perfspy-copy" record -f raw -o "$SCRATCH/rw/p3.txt" \
			--save "$SCRATCH/rw/p3.data" -- /bin/true
	fi
	echo "$paranoid_saved" >/proc/sys/kernel/perf_event_paranoid
	paranoid_saved=
	# A container without perf_event access: docker's default seccomp
	# profile fails perf_event_open with EPERM. The filter is installed
	# by Python (prctl PR_SET_SECCOMP; x86-64 syscall 298), then exec.
	cat >"$SCRATCH/noperf.py" <<'EOF'
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
def ins(code, jt, jf, k): return struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([
    ins(0x20, 0, 0, 4),                     # ld arch
    ins(0x15, 0, 3, 0xC000003E),            # jeq AUDIT_ARCH_X86_64
    ins(0x20, 0, 0, 0),                     # ld nr
    ins(0x15, 0, 1, 298),                   # jeq perf_event_open
    ins(0x06, 0, 0, 0x00050000 | 1),        # ret ERRNO(EPERM)
    ins(0x06, 0, 0, 0x7FFF0000),            # ret ALLOW
])
buf = ctypes.create_string_buffer(prog)
fprog = struct.pack("HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
fbuf = ctypes.create_string_buffer(fprog)
assert libc.prctl(38, 1, 0, 0, 0) == 0                      # NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.addressof(fbuf), 0, 0) == 0  # SECCOMP_MODE_FILTER
os.execv(sys.argv[1], sys.argv[1:])
EOF
	refused seccomp asnobody "$PY" "$SCRATCH/noperf.py" "$SCRATCH/perfspy-copy" record \
		-f raw -o "$SCRATCH/rw/sc.txt" --save "$SCRATCH/rw/sc.data" -- /bin/true
	sleep 30 &
	rootpid=$!
	pids+=("$rootpid")
	refused other-user asnobody "$SCRATCH/perfspy-copy" record -p "$rootpid" -d 1 \
		-f raw -o "$SCRATCH/rw/ou.txt"
	kill "$rootpid" 2>/dev/null
fi

finish
