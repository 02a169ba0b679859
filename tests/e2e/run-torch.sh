#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# e2e (issue 13): `perfspy report` on a real PyTorch CPU training loop
# (Debian's python3-torch on the system Python 3.11, src/py/torch_train.py)
# recorded with `perf record --call-graph dwarf`. Python 3.11 has no perf
# trampolines, so the stacks are native only. A user must see where the
# time goes in categories they know:
#   - no CUDA category has a sample (a CPU .item() is not a CUDA sync);
#   - "other native" is at most 20% of all samples;
#   - OpenMP/thread-pool wait and math kernels are categories with samples;
#   - unnamed libgomp code is one `LIB+0xOFF` frame per function;
#   - the total is perf's own sample count.
# TORCH_PY overrides the interpreter (default /usr/bin/python3);
# TORCH_E2E_SECONDS the training time (1.5 s, after a few seconds of import).
. "$(dirname "$0")/lib.sh"

need_perf
need_perfspy
need_python
scratch

TPY=${TORCH_PY:-/usr/bin/python3}
"$TPY" -c 'import torch' >/dev/null 2>&1 ||
	skip "no PyTorch for $TPY (apt-get install python3-torch; scripts/install-deps.sh)"

data=$SCRATCH/torch.data
"$PERF" record -q -F 499 --call-graph dwarf -o "$data" -- \
	"$TPY" "$E2E_SRC/py/torch_train.py" "${TORCH_E2E_SECONDS:-1.5}" \
	>"$SCRATCH/run.out" 2>"$SCRATCH/perf.log" ||
	die "perf record of the training loop failed: $(tail -3 "$SCRATCH/perf.log")"
say "workload: $(cat "$SCRATCH/run.out")"

"$PERFSPY" report -q -i "$data" --json --top 10 >"$SCRATCH/r.json" 2>"$SCRATCH/r.err" ||
	die "perfspy report failed: $(cat "$SCRATCH/r.err")"
"$PERFSPY" report -q -i "$data" --top 3 >"$SCRATCH/r.txt" || die "perfspy report (text) failed"
sed -n '/share   samples  category/,/^$/p' "$SCRATCH/r.txt"

# One line per check: "ok|FAIL text".
"$PY" - "$SCRATCH/r.json" >"$SCRATCH/checks" <<'PY' || die "cannot read the report JSON"
import json, sys
r = json.load(open(sys.argv[1]))
tot = r["samples"] or 1
cat = {c["name"]: c["samples"] for c in r["categories"]}
def share(name):
    return 100.0 * cat.get(name, 0) / tot
def check(ok, text):
    print(("ok " if ok else "FAIL ") + text)
for name in ("CUDA sync", "CUDA launch", "CUDA allocator"):
    check(cat.get(name, 0) == 0, "%s: %d samples on a CPU-only run (want 0)" % (name, cat.get(name, 0)))
check(share("other native") <= 20.0, "other native: %.1f%% (at most 20%%)" % share("other native"))
for name in ("OpenMP/thread-pool wait", "math kernels"):
    check(share(name) >= 1.0, "%s: %.1f%% (a category with samples)" % (name, share(name)))
PY
while IFS= read -r line; do
	case $line in
	ok*) pass "${line#ok }" ;;
	*) fail "${line#FAIL }" ;;
	esac
done <"$SCRATCH/checks"

# Unnamed libgomp code: one frame per function (LIB+0xOFF), no absolute
# addresses.
"$PERFSPY" convert -q -i "$data" >"$SCRATCH/folded" || die "perfspy convert failed"
n_abs=$(grep -Eo '(^|;)0x[0-9a-f]+ \(libgomp[^)]*\)' "$SCRATCH/folded" | sort -u | wc -l)
n_fn=$(grep -Eo 'libgomp[^ ;]*\+0x[0-9a-f]+ \(libgomp[^)]*\)' "$SCRATCH/folded" | sort -u | wc -l)
if [ "$n_abs" = 0 ] && [ "$n_fn" -gt 0 ]; then
	pass "unnamed libgomp code: $n_fn function frames (LIB+0xOFF), no absolute addresses"
else
	fail "unnamed libgomp code: $n_abs absolute address frames, $n_fn LIB+0xOFF frames"
	grep -Eo '(^|;)0x[0-9a-f]+ \(libgomp[^)]*\)' "$SCRATCH/folded" | sort -u | head -5 >&2
fi

# The same bytes from a second conversion: DSOs are opened on a thread
# of their own while the samples are read (docs/design.md §6.14), and
# which thread opens which must not show in the output.
"$PERFSPY" convert -q -i "$data" >"$SCRATCH/folded2" || die "perfspy convert (again) failed"
if cmp -s "$SCRATCH/folded" "$SCRATCH/folded2"; then
	pass "a second conversion gives the same $(wc -c <"$SCRATCH/folded") bytes"
else
	fail "a second conversion of the same file differs"
	diff "$SCRATCH/folded" "$SCRATCH/folded2" | head -6 >&2
fi

n_perf=$(perf_samples "$data")
n_json=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$SCRATCH/r.json")
if [ "$n_perf" = "$n_json" ]; then
	pass "samples: $n_json, as perf counts"
else
	fail "samples: report says $n_json, perf counts $n_perf"
fi
finish
