#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Benchmark (issue 9): the cost of `perfspy record` on a busy Python process,
# against the same process unprofiled and against `perf record --call-graph
# dwarf` + `perfspy convert`.
#
# Target: bench/record_load.py under CPython 3.12 -X perf, REC_THREADS (16)
# threads calling bench/record_work.c through ctypes (GIL released), each
# counting its own work units. Each run starts a fresh target, waits 2 s,
# profiles it by --pid for REC_SECONDS (20), and lets it run 2 s more; the
# target's throughput is its unit count inside the profiled window (from its
# own 0.25 s progress lines). Per run:
#   throughput  units/s in the window; slowdown against the unprofiled run
#   rate        per thread: samples / CPU seconds the thread ran in the
#               window (/proc/PID/task/TID/schedstat); min and median over
#               the threads that ran 0.2 s or more, and over all threads'
#               CPU time (per thread it scatters when threads share a CPU:
#               see README)
#               (requested: REC_RATE, 99)
#   lost        samples the kernel dropped (ring buffer overflows)
#   CPU         the profiler's own user+sys time (GNU time), % of one core
#               over the window (it includes folding after the window when
#               perfspy lags); for perf, perf record + perfspy convert
#   peak RSS    the profiler's (for perf: the larger of perf record and
#               perfspy convert)
# Targets (issue 9): slowdown <= 3%, rate >= 99% of requested on every
# thread, 0 lost, perfspy CPU <= 10% of one core, peak RSS flat in duration.
# REC_LONG=1 adds perfspy record runs of 45 s and 180 s and compares their
# peak RSS (within 10%). The numbers need a quiet machine with at least
# REC_THREADS + 2 cores; on fewer cores the threads share them, so per-thread
# rates are per CPU second, and the slowdown includes the profiler's own CPU.
# Then issue 16's keep-up runs (keepup() below: 64 threads at 99 Hz, the
# arrival rate, lost samples, lag, the processing rate; MET/NOT MET).
# REC_PART=overhead runs only the table above, REC_PART=keepup only those.
# Usage: O=build bench/run-record.sh  (or `make bench-record`); run as root
# (or with perf_event_paranoid <= 1). PY312 overrides the interpreter.
BENCH_NAME=bench-record
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
BDIR=$O/bench/record
NT=${REC_THREADS:-16}
DUR=${REC_SECONDS:-20}
RATE=${REC_RATE:-99}
STACK=${REC_STACK:-65528}

need_tools
[ -x "$TIME" ] || die "$TIME (GNU time) missing: apt-get install time"
PY12=${PY312:-}
if [ -z "$PY12" ]; then
	for c in "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12 \
		/root/.pyenv/versions/3.12*/bin/python3.12 "$(command -v python3.12)"; do
		[ -x "$c" ] && { PY12=$c; break; }
	done
fi
[ -n "$PY12" ] || die "CPython 3.12 not found (set PY312)"
mkdir -p "$BDIR" || exit 1
cc -O2 -shared -fPIC -o "$BDIR/record_work.so" "$TOP/bench/record_work.c" || die "cc"

now() { date +%s.%N; }

# cpu_ticks PID: "TID NS" per thread: the scheduler's exact on-CPU time
# (/proc/PID/task/TID/schedstat, first field; proc(5)), which cpu-clock
# samples, unlike the tick-sampled utime/stime.
cpu_ticks() {
	# One awk for all threads: on a loaded machine one process per file
	# would spread the readings over seconds.
	awk '{ split(FILENAME, p, "/"); print p[5], $1 }' /proc/"$1"/task/*/schedstat 2>/dev/null
}

# units_at LOG T: the target's unit count at wall time T (interpolated).
units_at() {
	awk -v t="$2" '$1 != "thread" {
		if ($1 <= t) { t0 = $1; u0 = $2 }
		else if (!t1) { t1 = $1; u1 = $2 }
	} END {
		if (!t1 || t1 == t0) { print u0 + 0; exit }
		printf "%.1f\n", u0 + (u1 - u0) * (t - t0) / (t1 - t0)
	}' "$1"
}

# run TAG LABEL [SECONDS]: one run: TAG base is unprofiled, perf is perf
# record + perfspy convert, anything else perfspy record; leaves
# "$BDIR/TAG.*" and prints one table row.
run() {
	local tag=$1 label=$2 d=${3:-$DUR} log=$BDIR/$1.load tpid prof snap t0 u0 u1 tput cpu rss lost rates
	rm -f "$BDIR/$tag".*
	# The target runs until told to stop, after every measurement: a
	# profiler may take long to start or to finish folding.
	"$PY12" -X perf "$TOP/bench/record_load.py" "$BDIR/record_work.so" "$NT" \
		"$BDIR/$tag.stop" "$log" &
	tpid=$!
	until n=$(grep -sc . "$log"); [ "${n:-0}" -ge 2 ]; do sleep 0.1; done
	sleep 1 # every thread runs
	case $tag in
	base)
		;;
	perf)
		# perf says nothing when it starts sampling: its window (and so
		# its per-thread rate) includes its start-up, a few % at 20 s.
		$TIME -f "%U %S %M" -o "$BDIR/$tag.time1" "$PERF" record -q -F "$RATE" \
			--call-graph "dwarf,$STACK" -p "$tpid" -o "$BDIR/perf.data" -- sleep "$d" \
			>/dev/null 2>"$BDIR/$tag.err" &
		prof=$!
		;;
	*)
		$TIME -f "%U %S %M" -o "$BDIR/$tag.time1" "$PERFSPY" record -p "$tpid" -d "$d" \
			-r "$RATE" --stack-size "$STACK" -t -f raw -o "$BDIR/$tag.txt" 2>"$BDIR/$tag.err" &
		prof=$!
		# "sampling pid" is printed once the events are enabled, and
		# -d counts from there: the window starts with the sampling.
		until grep -q "sampling pid" "$BDIR/$tag.err" 2>/dev/null; do sleep 0.02; done
		;;
	esac
	cpu_ticks "$tpid" >"$BDIR/$tag.cpu0"
	t0=$(now)
	# Throughput and CPU are measured over the sampling window [t0, t0+d].
	(sleep "$d"; cpu_ticks "$tpid" >"$BDIR/$tag.cpu1") &
	snap=$!
	[ "$tag" = base ] || wait "$prof"
	wait "$snap"
	sleep 0.5 # a progress line past the window
	touch "$BDIR/$tag.stop"
	wait "$tpid"
	rm -f "/tmp/perf-$tpid.map" # the target's (-X perf)
	if [ "$tag" = perf ]; then
		$TIME -f "%U %S %M" -o "$BDIR/$tag.time2" "$PERFSPY" convert -q -i "$BDIR/perf.data" \
			--pid "$tpid" --threads -f raw -o "$BDIR/$tag.txt" 2>>"$BDIR/$tag.err"
		lost=$("$PERFSPY" info "$BDIR/perf.data" 2>/dev/null | awk '/^lost:/ { print $2 }')
	elif [ "$tag" != base ]; then
		lost=$(awk '/samples lost in/ { print $3 } /lost records: 0/ { print 0 }' "$BDIR/$tag.err")
	fi
	u0=$(units_at "$log" "$t0")
	u1=$(units_at "$log" "$(awk -v a="$t0" -v d="$d" 'BEGIN { printf "%.3f", a + d }')")
	tput=$(awk -v a="$u0" -v b="$u1" -v d="$d" 'BEGIN { printf "%.1f", (b - a) / d }')
	echo "$tput" >"$BDIR/$tag.tput"
	[ "$tag" = base ] && { printf '| %-22s | %9s | %8s | %22s | %6s | %12s | %9s |\n' \
		"$label" "$tput" "-" "-" "-" "-" "-"; return; }
	cpu=$(for f in "$BDIR/$tag.time"*; do tail -1 "$f"; done | awk -v w="$d" \
		'{ s += $1 + $2 } END { printf "%.1f%% (%.2f s)", 100 * s / w, s }')
	rss=$(for f in "$BDIR/$tag.time"*; do tail -1 "$f"; done |
		awk '$3 > m { m = $3 } END { printf "%.0f MB", m / 1024 }')
	# Per-thread rate: samples under `thread (TID): ...` / CPU s in the
	# window. perfspy measures its own exactly (schedstat read by the
	# capture thread as it enables and disables the events): take those;
	# the bench's window for perf starts and ends a bit off its sampling.
	if [ "$tag" != perf ]; then
		rates=$(sed -n "s/.*achieved \([0-9.]*\) Hz over all threads.*/\1/p;
			s/.*per thread: \([0-9.]*\) Hz (lowest) \/ \([0-9.]*\) Hz (median) over the \([0-9]*\).*/\1 \2 \3/p" \
			"$BDIR/$tag.err" | tr '\n' ' ' | awk 'NF == 4 { printf "%s / %s / %s (%s)", $2, $3, $1, $4 }
			NF != 4 { print "-" }')
	else
	rates=$(awk -v hz=1000000000 '
		FILENAME ~ /cpu0$/ { c0[$1] = $2; next }
		FILENAME ~ /cpu1$/ { c1[$1] = $2; next }
		match($0, /^thread \([0-9]+\)/) {
			tid = substr($0, 9, RLENGTH - 9); n[tid] += $NF
		}
		END {
			k = 0
			for (t in c1) if (t in c0 && t in n) {
				all_n += n[t]; all_c += (c1[t] - c0[t]) / hz
				if (c1[t] - c0[t] > 0.2 * hz)
					r[++k] = n[t] / ((c1[t] - c0[t]) / hz)
			}
			if (!k) { print "-"; exit }
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
				if (r[j] < r[i]) { x = r[i]; r[i] = r[j]; r[j] = x }
			printf "%.1f / %.1f / %.1f (%d)", r[1], r[int((k + 1) / 2)], all_n / all_c, k
		}' "$BDIR/$tag.cpu0" "$BDIR/$tag.cpu1" "$BDIR/$tag.txt")
	fi
	printf '| %-22s | %9s | %7s%% | %22s | %6s | %12s | %9s |\n' "$label" "$tput" \
		"$(awk -v b="$(cat "$BDIR/base.tput")" -v p="$tput" 'BEGIN { printf "%.1f", 100 * (b - p) / b }')" \
		"$rates" "${lost:-?}" "$cpu" "$rss"
}

# ---------------------------------------------------------------- issue 16
# keepup: does `perfspy record` keep up in real time with 99 Hz x 64 threads
# of DWARF stacks (docs/design.md §3.3, "Keeping up")? On a machine with a
# CPU per thread that is KU_NT * RATE samples a second (6,336), each with a
# stack dump of STACK bytes. A machine with fewer CPUs cannot produce that
# from 64 threads at 99 Hz: cpu-clock samples each thread per second of CPU
# time it gets, so the arrival rate is RATE x the CPUs the target keeps
# busy. Three measurements:
#   all CPUs   the target (KU_NT threads, bench/record_load.py, CPython 3.12
#              -X perf) on every CPU at RATE: the arrival rate this machine
#              really produces, and whether perfspy loses any of it
#   emulated   the same target pinned to the last CPU, sampled at
#              KU_NT * RATE Hz, so that one CPU produces the arrival rate of
#              KU_NT CPUs at RATE; perfspy on the other CPUs, as it would
#              find a CPU on a machine with more CPUs than busy threads
#              (only with 2 to KU_NT + 1 CPUs)
#   offline    `perfspy convert` of each run's --save stream from a pipe
#              (median of 3): the samples one CPU second of the session
#              folds, the processing rate to set against the arrival rate
# Per live run: arrival = (samples + lost) / sampling time; lag = how long
# after the end of sampling the last record was folded (perfspy -v);
# stall = the longest time between two passes of the capture thread over
# the ring buffers (-vv); perfspy CPU (user + sys) and the samples per
# CPU second it shows; slowdown of the target's own throughput against
# unprofiled runs of the same placement just before and after. MET when no
# run loses a sample, no lag passes 1 s and the offline processing rate
# reaches KU_NT * RATE; the verdict says how far live arrival went (the
# whole rate when the emulated run's arrival is at least 99% of it).
KU_NT=${REC_KEEPUP_THREADS:-64}
KU_DUR=${REC_KEEPUP_SECONDS:-10}
KU_NEED=$((KU_NT * RATE))

# ku_run TAG TARGET_CPUS PERFSPY_CPUS RATE: one run (TAG base*: unprofiled);
# leaves $BDIR/TAG.* and, for a live run, "samples lost secs lag stall cpu" in
# $BDIR/TAG.res.
ku_run() {
	local tag=$1 tcpus=$2 pcpus=$3 rate=$4 log=$BDIR/$1.load tpid prof ts u0 u1
	rm -f "$BDIR/$tag".*
	taskset -c "$tcpus" "$PY12" -X perf "$TOP/bench/record_load.py" \
		"$BDIR/record_work.so" "$KU_NT" "$BDIR/$tag.stop" "$log" &
	tpid=$!
	until n=$(grep -sc . "$log"); [ "${n:-0}" -ge 2 ]; do sleep 0.1; done
	sleep 1 # every thread runs
	case $tag in
	*base*)
		ts=$(now)
		sleep "$KU_DUR"
		;;
	*)
		# setsid: perfspy in a session of its own, as when started from
		# another terminal; with autogroup scheduling (sched(7)) a process
		# of the target's session shares the target's CPU share (and, pinned
		# away from it, gets a sliver of that group's weight: stalls of
		# seconds, measured).
		$TIME -f "%e %U %S %M" -o "$BDIR/$tag.time" setsid -w taskset -c "$pcpus" "$PERFSPY" record \
			-vv -p "$tpid" -d "$KU_DUR" -r "$rate" --stack-size "$STACK" -t -f raw \
			-o "$BDIR/$tag.txt" --save "$BDIR/$tag.data" 2>"$BDIR/$tag.err" &
		prof=$!
		until grep -q "sampling pid" "$BDIR/$tag.err" 2>/dev/null || ! kill -0 "$prof" 2>/dev/null; do
			sleep 0.02
		done
		ts=$(now)
		wait "$prof"
		;;
	esac
	sleep 0.5 # a progress line past the window
	touch "$BDIR/$tag.stop"
	wait "$tpid"
	u0=$(units_at "$log" "$ts")
	u1=$(units_at "$log" "$(awk -v a="$ts" -v d="$KU_DUR" 'BEGIN { printf "%.3f", a + d }')")
	awk -v a="$u0" -v b="$u1" -v d="$KU_DUR" 'BEGIN { printf "%.1f\n", (b - a) / d }' >"$BDIR/$tag.tput"
	case $tag in *base*) rm -f "/tmp/perf-$tpid.map"; return ;; esac
	awk '
		/: recorded [0-9.]+ s of pid/ { secs = $3; n = $(NF - 4) }
		/ samples lost in / { lost = $3 }
		/longest gap between passes/ { sub(/.*between passes /, ""); gap = $1 }
		/folded the last record/ { sub(/.*last record /, ""); lag = $1 > 0 ? $1 : 0 }
		END { printf "%d %d %s %.2f %.0f", n, lost, secs, lag, gap }' "$BDIR/$tag.err" >"$BDIR/$tag.res"
	tail -1 "$BDIR/$tag.time" | awk '{ printf " %.2f\n", $2 + $3 }' >>"$BDIR/$tag.res"
	# Offline, while the target's perf map still exists: the session's
	# CPU time on the same stream, from a pipe as the live session reads it.
	for _ in 1 2 3; do
		$TIME -f "%e %U %S" -o "$BDIR/$tag.off" -a "$PERFSPY" convert -q -f raw -i - \
			-o /dev/null <"$BDIR/$tag.data"
	done
	rm -f "/tmp/perf-$tpid.map"
}

# ku_row TAG LABEL BASE RATE: one table row of a live run.
ku_row() {
	read -r n lost secs lag gap cpu <"$BDIR/$1.res"
	awk -v label="$2" -v rate="$4" -v n="$n" -v lost="$lost" -v secs="$secs" -v lag="$lag" \
		-v gap="$gap" -v cpu="$cpu" -v b="$(cat "$BDIR/$3.tput" "$BDIR/$3_b.tput" |
			awk '{ s += $1 } END { print s / NR }')" -v p="$(cat "$BDIR/$1.tput")" 'BEGIN {
		printf "| %-30s | %7d Hz | %7.0f /s | %7.0f /s | %6d | %5.1f s | %6d ms | %6.2f s | %8.0f /s | %6.1f%% |\n",
			label, rate, (n + lost) / secs, n / secs, lost, lag, gap, cpu,
			(cpu > 0 ? n / cpu : 0), 100 * (b - p) / b }'
}

# ku_offline TAG: "samples wall cpu" of the median (by CPU) of 3 conversions.
ku_offline() {
	read -r n _ <"$BDIR/$1.res"
	grep -E '^[0-9.]+ [0-9.]+ [0-9.]+$' "$BDIR/$1.off" |
		awk '{ print $2 + $3, $1 }' | sort -n | sed -n 2p | awk -v n="$n" '{ print n, $2, $1 }'
}

keepup() {
	local ncpu last emu=0 met=1 rate_emu=$KU_NEED rows off worst arr=0 n lost secs lag
	ncpu=$(nproc)
	last=$((ncpu - 1))
	[ "$ncpu" -ge 2 ] && [ "$ncpu" -le $((KU_NT + 1)) ] && emu=1
	command -v taskset >/dev/null && command -v setsid >/dev/null ||
		die "taskset, setsid (util-linux) missing"
	echo
	echo "bench-record keep-up (issue 16): $KU_NT threads at $RATE Hz with $STACK-byte stack dumps need $KU_NEED samples/s on a machine with a CPU per thread; ${KU_DUR} s windows; $ncpu CPUs"
	# Unprofiled before and after each live run (the mean is the
	# baseline): on a shared machine the load moves between runs.
	ku_run kbase "0-$last" "0-$last" 0
	ku_run klive "0-$last" "0-$last" "$RATE"
	ku_run kbase_b "0-$last" "0-$last" 0
	if [ "$emu" = 1 ]; then
		ku_run kbase1 "$last" "0-$((last - 1))" 0
		ku_run kemu "$last" "0-$((last - 1))" "$rate_emu"
		ku_run kbase1_b "$last" "0-$((last - 1))" 0
	fi
	printf '| %-30s | %10s | %10s | %10s | %6s | %7s | %9s | %8s | %11s | %7s |\n' run rate arrival \
		received lost lag "stall" "perfspy CPU" "samples/CPU s" slowdown
	echo "|--------------------------------|------------|------------|------------|--------|---------|-----------|----------|-------------|---------|"
	ku_row klive "$KU_NT threads on $ncpu CPUs" kbase "$RATE"
	[ "$emu" = 1 ] && ku_row kemu "$KU_NT threads on 1 CPU (emulated)" kbase1 "$rate_emu"
	echo
	printf '| %-30s | %8s | %10s | %10s | %14s |\n' "offline: perfspy convert of" samples wall CPU "samples/CPU s"
	echo "|--------------------------------|----------|------------|------------|----------------|"
	rows="klive"
	[ "$emu" = 1 ] && rows="klive kemu"
	for t in $rows; do
		off=$(ku_offline "$t")
		# shellcheck disable=SC2086 # three fields
		set -- $off
		printf '| %-30s | %8d | %8.2f s | %8.2f s | %12.0f /s |\n' "$t's --save stream" "$1" "$2" "$3" \
			"$(awk -v n="$1" -v c="$3" 'BEGIN { print (c > 0 ? n / c : 0) }')"
	done
	# The processing rate: with two streams of the same workload, the
	# samples the larger one has more over the CPU time it takes more
	# (the session's start-up, symbol loading, taken out); else the
	# larger stream's samples over its whole CPU time.
	worst=$(for t in $rows; do ku_offline "$t"; done | sort -n | awk '
		{ n[NR] = $1; c[NR] = $3 }
		END {
			if (NR >= 2 && n[NR] >= 2 * n[1] && c[NR] > c[1]) {
				printf "%.0f steady state: %d - %d samples in %.2f - %.2f s of CPU",
					(n[NR] - n[1]) / (c[NR] - c[1]), n[NR], n[1], c[NR], c[1]
			} else {
				printf "%.0f with start-up", (c[NR] > 0 ? n[NR] / c[NR] : 0)
			}
		}')
	for t in $rows; do
		read -r n lost secs lag _ <"$BDIR/$t.res"
		[ "$lost" = 0 ] || met=0
		awk -v l="$lag" 'BEGIN { exit !(l > 1) }' && met=0
		arr=$(awk -v n="$n" -v l="$lost" -v s="$secs" -v m="${arr:-0}" \
			'BEGIN { a = (n + l) / s; printf "%.0f", (a > m ? a : m) }')
	done
	[ "${worst%% *}" -ge "$KU_NEED" ] || met=0
	echo
	echo "arrival needed: $KU_NEED samples/s; processing rate (offline, one CPU): ${worst%% *} samples/s (${worst#* })"
	# 99%: the kernel's sampling at KU_NEED Hz on one CPU delivers a
	# little less when other tasks take turns on that CPU (6,303-6,305 of
	# 6,336 measured here); below that the live rate was not reached.
	if [ "$met" = 1 ] && [ "$emu" = 1 ] && [ $((arr * 100)) -ge $((KU_NEED * 99)) ]; then
		echo "keep-up: MET (live: $arr samples/s arrived, >= 99% of $KU_NEED/s, emulated on one CPU; no lost samples, lag <= 1 s, processing rate >= $KU_NEED/s)"
	elif [ "$met" = 1 ] && [ "$arr" -lt "$KU_NEED" ]; then
		echo "keep-up: MET up to $arr samples/s live, the most this machine produced (no lost samples, lag <= 1 s); $KU_NEED/s only offline (processing rate >= $KU_NEED/s)"
	elif [ "$met" = 1 ]; then
		echo "keep-up: MET (no lost samples, lag <= 1 s, processing rate >= arrival rate)"
	else
		echo "keep-up: NOT MET (needs: no lost samples, lag <= 1 s, processing rate >= $KU_NEED/s)"
	fi
}

if [ "${REC_PART:-all}" = keepup ]; then
	keepup
	exit
fi
echo "bench-record: $NT threads, ${DUR} s windows at $RATE Hz, stack dumps of $STACK bytes; $(nproc) CPUs; $PY12"
printf '| %-22s | %9s | %8s | %22s | %6s | %12s | %9s |\n' "run" "units/s" "slowdown" \
	"Hz min/med/all" "lost" "profiler CPU" "peak RSS"
echo "|------------------------|-----------|----------|------------------------|--------|--------------|-----------|"
run base "unprofiled"
run perfspy "perfspy record -r $RATE"
run perf "perf record + convert"
if [ "${REC_LONG:-0}" = 1 ]; then
	run perfspy45 "perfspy record, 45 s" 45
	run perfspy180 "perfspy record, 180 s" 180
	awk -v a="$(tail -1 "$BDIR/perfspy45.time1" | awk '{ print $3 }')" \
		-v b="$(tail -1 "$BDIR/perfspy180.time1" | awk '{ print $3 }')" 'BEGIN {
		printf "peak RSS of perfspy record: 45 s %d KB, 180 s %d KB: %+.1f%% (target: within 10%%)\n",
			a, b, (b - a) / a * 100 }'
fi
[ "${REC_PART:-all}" = overhead ] || keepup
