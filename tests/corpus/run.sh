#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Corpus test: every perf.data in shared/corpus/perf_data_converter (perf
# 3.2-6.12, x86_64/i686/armv7, file and pipe mode, corrupt and empty files).
# MANIFEST.tsv gives perf 6.1's own sample count for each file
# (`perf report -D | grep -c PERF_RECORD_SAMPLE`); 0 means perf found none or
# rejected the file.
#   count > 0: `perfspy info --json` exits 0 and reports exactly that many
#              "samples";
#   count = 0: exit 1 with stderr naming the file, or exit 0 with 0 samples
#              (Intel PT pipe files, where perf 6.1 gives up at the AUX
#              trace: the samples an independent walk of the stream finds);
#   always:    `perfspy convert` exits 0 or 1 (1 naming the file), and
#              neither command crashes or runs past CORPUS_TIMEOUT (10 s);
#   exit 0:    info's per-event counts add up to its total, and convert
#              (first event by default, then --event NAME for each other
#              event) folds exactly that many samples; on single-event files
#              `convert --weight period` sums to the periods `perf script`
#              prints (when perf is installed).
# The corpus lives beside the clone (CI puts shared/ there): $PERFSPY_CORPUS,
# else $(git rev-parse --show-toplevel)/../shared, else /work/shared.
set -u
export LC_ALL=C
TOP=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case $O in /*) ;; *) O=$TOP/$O ;; esac
PERFSPY=${PERFSPY:-$O/perfspy}
PY=${PYTHON3:-$(command -v /usr/bin/python3 || command -v python3 || true)}
tmo=${CORPUS_TIMEOUT:-10}

corpus=${PERFSPY_CORPUS:-}
if [ -z "$corpus" ]; then
	root=$(git -C "$TOP" rev-parse --show-toplevel 2>/dev/null || echo "$TOP")
	for d in "$root/../shared/corpus/perf_data_converter" /work/shared/corpus/perf_data_converter; do
		[ -f "$d/MANIFEST.tsv" ] && { corpus=$d; break; }
	done
fi
if [ -z "$corpus" ] || [ ! -f "$corpus/MANIFEST.tsv" ]; then
	echo "SKIP: corpus not found (../shared/corpus/perf_data_converter beside the clone)"
	exit 77
fi
[ -x "$PERFSPY" ] || { echo "FAIL: $PERFSPY not built (run make)"; exit 1; }
[ -n "$PY" ] || { echo "FAIL: python3 not found"; exit 1; }
echo "corpus: $corpus"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/perfspy-corpus.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# verdict RC: "crash (signal N)", "timeout", "sanitizer error" or "".
# tests/run-tests.sh makes sanitizer reports exit 86.
verdict() {
	if [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; then
		echo "timeout after ${tmo}s"
	elif [ "$1" -eq 86 ]; then
		echo "sanitizer error (exit 86)"
	elif [ "$1" -ge 128 ]; then
		echo "crash (signal $(($1 - 128)))"
	fi
}

# aux_samples FILE: for a pipe-mode file holding AUXTRACE records (type
# 71), the number of SAMPLE records (type 9) in the stream; nothing for
# any other file. Record framing per perf's session.c (reader__read_event):
# a u64 magic and u64 header size, then records of u32 type, u16 misc,
# u16 size; an AUXTRACE record's trace bytes follow it (size at byte 8).
aux_samples() {
	"$PY" - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
if len(b) < 16 or b[:8] != b"PERFILE2":
    sys.exit(0)
pos = struct.unpack_from("<Q", b, 8)[0]
samples = aux = 0
while pos + 8 <= len(b):
    typ, misc, size = struct.unpack_from("<IHH", b, pos)
    if size < 8 or pos + size > len(b):
        break
    if typ == 9:
        samples += 1
    extra = 0
    if typ == 71 and size >= 16:
        aux += 1
        extra = struct.unpack_from("<Q", b, pos + 8)[0]
    pos += size + extra
if aux and pos == len(b):
    print(samples)
PY
}

nfiles=0 nagree=0 nconv=0 nperiod=0
# perf, when present, is the oracle for --weight period.
PERF=$(command -v "${PERF:-perf}" || true)
bad=()
while IFS=$'\t' read -r name want; do
	[ "$name" = file ] && continue
	[ -n "$name" ] || continue
	f=$corpus/$name
	nfiles=$((nfiles + 1))
	ok=1 why=
	# perf 6.1 stops at "bad event header size" right after the AUXTRACE
	# payload of an Intel PT pipe file, so it counts none of the samples
	# that follow. There, the oracle is an independent walk of the pipe
	# stream (aux_samples below): records framed by header.size, an
	# AUXTRACE's trace bytes (its u64 size field) skipped, SAMPLEs counted.
	if [ "$want" = 0 ] && aux=$(aux_samples "$f") && [ -n "$aux" ]; then
		echo "  note  $name: perf 6.1 stops at the AUX trace; walking the stream finds $aux samples"
		want=$aux
	fi

	# info --json
	rc=0
	timeout -k 2 "$tmo" "$PERFSPY" info --json "$f" >"$tmp/json" 2>"$tmp/err" || rc=$?
	got=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$tmp/json" 2>/dev/null)
	v=$(verdict $rc)
	if [ -n "$v" ]; then
		ok=0 why="info: $v"
	elif [ "$want" -gt 0 ]; then
		if [ $rc -ne 0 ]; then
			ok=0 why="info: exit $rc, want 0: $(head -c 160 "$tmp/err" | tr '\n' ' ')"
		elif [ "$got" != "$want" ]; then
			ok=0 why="info: ${got:-no} samples, perf counts $want"
		fi
	elif [ $rc -eq 1 ]; then
		grep -qF "$name" "$tmp/err" || { ok=0 why="info: exit 1 but stderr does not name the file"; }
	elif [ $rc -eq 0 ]; then
		[ "$got" = 0 ] || { ok=0 why="info: ${got:-no} samples where perf finds none"; }
	else
		ok=0 why="info: exit $rc"
	fi
	info="info rc=$rc samples=${got:--}"

	# convert: no crash, no hang; exit 1 names the file.  When it succeeds,
	# each event's fold holds as many samples as info counts for the event
	# (the default is the event with the most samples, the first of equals,
	# plus the same event on the other hybrid core PMUs, cpu_*/EVENT; a
	# stream's is its first event).
	rc=0
	timeout -k 2 "$tmo" "$PERFSPY" convert -q -i "$f" -o "$tmp/out" 2>"$tmp/err" || rc=$?
	v=$(verdict $rc)
	if [ -n "$v" ]; then
		ok=0 why="${why:+$why; }convert: $v"
	elif [ $rc -eq 1 ]; then
		grep -qF "$name" "$tmp/err" ||
			{ ok=0 why="${why:+$why; }convert: exit 1 but stderr does not name the file"; }
	elif [ $rc -ne 0 ]; then
		ok=0 why="${why:+$why; }convert: exit $rc"
	fi
	if [ $rc -eq 0 ]; then
		nconv=$((nconv + 1))
		"$PY" - "$tmp/json" >"$tmp/events" 2>/dev/null <<'PY'
import collections, json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
ev = j.get("events", [])
names = collections.Counter(e["name"] for e in ev)
if sum(e["samples"] for e in ev) != j["samples"]:
    print("SUM", sum(e["samples"] for e in ev), j["samples"])
def twin(name):  # cpu_core/cycles/ -> cycles/
    if name.startswith("cpu_") and "/" in name[4:]:
        rest = name[name.index("/", 4) + 1:]
        return rest if name.index("/", 4) > 4 and rest else None
    return None
best = 0
if not j.get("pipe_mode"):
    for i, e in enumerate(ev):
        if e["samples"] > ev[best]["samples"]:
            best = i
dflt = 0
for i, e in enumerate(ev):
    if i == best or (twin(ev[best]["name"]) and twin(e["name"]) == twin(ev[best]["name"])
                     and e["type"] == ev[best]["type"]):
        dflt += e["samples"]
if ev:
    print("default", dflt, ev[best]["name"])
for i, e in enumerate(ev):
    if names[e["name"]] == 1:
        print("event", e["samples"], e["name"])
PY
		while read -r kind n ename; do
			case $kind in
			SUM)
				ok=0 why="${why:+$why; }info: events sum to $n, samples is $ename"
				continue
				;;
			default) got=$(awk '{ s += $NF } END { printf "%d\n", s }' "$tmp/out") ;;
			event)
				[ "$n" -gt 0 ] || continue
				timeout -k 2 "$tmo" "$PERFSPY" convert -q -i "$f" --event "$ename" -o "$tmp/ev" 2>/dev/null &&
					got=$(awk '{ s += $NF } END { printf "%d\n", s }' "$tmp/ev") || got="exit $?"
				;;
			esac
			[ "$got" = "$n" ] ||
				{ ok=0 why="${why:+$why; }convert${kind/default/} $ename: $got samples, info counts $n"; }
		done <"$tmp/events"

		# --weight period against perf's periods, on single-event files
		# (hardware events in frequency mode: every period differs), when
		# perf script sees the same number of samples as the manifest.
		if [ -n "$PERF" ] && [ "$(grep -c "^event" "$tmp/events")" -eq 1 ] && [ "$want" -gt 0 ]; then
			read -r np psum < <(timeout -k 2 30 "$PERF" script -i "$f" -F period 2>/dev/null |
				awk 'NF { n++; s += $1 } END { printf "%d %.0f\n", n, s }')
			if [ "${np:-0}" = "$want" ]; then
				rc=0
				timeout -k 2 "$tmo" "$PERFSPY" convert -q --weight period -i "$f" -o "$tmp/period" 2>/dev/null || rc=$?
				got=$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$tmp/period")
				if [ $rc -ne 0 ] || [ "$got" != "$psum" ]; then
					ok=0 why="${why:+$why; }convert --weight period: exit $rc, total $got, perf's periods sum to $psum"
				else
					nperiod=$((nperiod + 1))
				fi
			fi
		fi
	fi
	conv="convert rc=$rc"
	[ $rc -eq 1 ] && conv="$conv ($(head -n 1 "$tmp/err" | sed "s|$corpus/||" | cut -c1-70))"

	if [ $ok -eq 1 ]; then
		nagree=$((nagree + 1))
		printf '  ok    %-34s perf=%-6s %s; %s\n' "$name" "$want" "$info" "$conv"
	else
		bad+=("$name")
		printf '  FAIL  %-34s perf=%-6s %s\n' "$name" "$want" "$why"
	fi
done <"$corpus/MANIFEST.tsv"

echo "corpus: $nagree/$nfiles files agree ($nconv converted with exit 0; --weight period = perf's periods on $nperiod)"
[ $nfiles -gt 0 ] && [ $nagree -eq $nfiles ]
