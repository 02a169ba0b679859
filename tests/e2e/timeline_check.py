#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a perfspy speedscope file against speedscope's file-format rules
and, given `perf script -F tid,time --ns` output of the same recording,
check its time order (docs/output.md §8).

    timeline_check.py FILE.json PERF_SCRIPT.txt [--grouped|--lineno]

Prints `ok ...` / `FAIL ...` lines and a summary; exits 1 on a failure.
Rules taken from speedscope's file-format-schema.json (the npm package's
dist/release/file-format-schema.json): "$schema" constant, shared.frames
with a string "name" and optional "file" (string) and "line"/"col"
(numbers), profiles of type "sampled" with "unit" in ValueUnit, numbers
startValue/endValue, "samples" (lists of frame indices) and "weights" of
equal length.
"""
import json
import re
import sys
from collections import defaultdict

UNITS = {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
failed = 0


def check(cond, msg):
    global failed
    print(("ok " if cond else "FAIL ") + msg)
    if not cond:
        failed += 1
    return cond


def schema(doc):
    check(doc.get("$schema") == "https://www.speedscope.app/file-format-schema.json",
          "$schema is speedscope's")
    frames = doc["shared"]["frames"]
    bad = [f for f in frames if not isinstance(f.get("name"), str)
           or ("file" in f and not isinstance(f["file"], str))
           or ("line" in f and not isinstance(f["line"], int))]
    check(not bad, f"{len(frames)} frames: name string, file string, line number ({len(bad)} bad)")
    nf = len(frames)
    for p in doc["profiles"]:
        ok = (p.get("type") == "sampled" and p.get("unit") in UNITS
              and isinstance(p.get("startValue"), (int, float))
              and isinstance(p.get("endValue"), (int, float))
              and len(p["samples"]) == len(p["weights"])
              and all(isinstance(w, (int, float)) and w >= 0 for w in p["weights"])
              and all(isinstance(i, int) and 0 <= i < nf for s in p["samples"] for i in s))
        if not check(ok, f"profile '{p.get('name')}': sampled, unit, samples/weights, frame indices"):
            return False
    return True


def times(doc):
    """tid -> sorted sample times rebuilt from the file; and per-profile
    monotonicity and end checks."""
    out = defaultdict(list)
    mono = ends = True
    for p in doc["profiles"]:
        m = re.match(r"thread \((\d+)\)", p["name"])
        if not m:
            check(False, f"profile name names a thread: {p['name']}")
            continue
        t = p["startValue"]
        last = None
        for s, w in zip(p["samples"], p["weights"]):
            if s:
                if last is not None and t < last:
                    mono = False
                last = t
                out[int(m.group(1))].append(t)
            t += w
        if t != p["endValue"]:
            ends = False
    check(mono, "sample times increase within every profile")
    check(ends, "every profile's weights end at its endValue")
    return {k: sorted(v) for k, v in out.items()}


def perf_times(path):
    out = defaultdict(list)
    pat = re.compile(r"^\s*(\d+)\s+(\d+)\.(\d{9}):")
    for line in open(path, encoding="utf-8", errors="replace"):
        m = pat.match(line)
        if m:
            out[int(m.group(1))].append(int(m.group(2)) * 10**9 + int(m.group(3)))
    return {k: sorted(v) for k, v in out.items()}


def main():
    doc = json.load(open(sys.argv[1], encoding="utf-8"))
    mode = sys.argv[3] if len(sys.argv) > 3 else "--grouped"
    if not schema(doc):
        sys.exit(1)
    check(all(p["unit"] == "nanoseconds" for p in doc["profiles"]), "unit is nanoseconds")
    starts = {p["startValue"] for p in doc["profiles"]}
    check(len(starts) == 1, f"every profile starts at the same time ({len(starts)} distinct)")
    got = times(doc)
    want = perf_times(sys.argv[2])
    n_got = sum(len(v) for v in got.values())
    n_want = sum(len(v) for v in want.values())
    check(n_want > 0 and set(got) == set(want),
          f"threads: {len(got)} in the file, {len(want)} in perf script")
    diff = [t for t in want if got.get(t) != want[t]]
    check(not diff, f"{n_got} sample times equal perf script's {n_want}, thread by thread"
          + (f" (differ: {diff[:5]})" if diff else ""))
    if starts and want:
        check(min(starts) == min(min(v) for v in want.values()),
              "startValue is the first sample's time")
    # docs/output.md §7.1: native frames with a line only under --lineno.
    native_lines = [f for f in doc["shared"]["frames"]
                    if "line" in f and not f.get("file", "").endswith(".py")
                    and not f.get("file", "").startswith("<")]
    if mode == "--lineno":
        check(native_lines, f"--lineno: {len(native_lines)} native frames keep their line")
    else:
        check(not native_lines, "native frames are grouped by function: no line "
              + (f"(but: {native_lines[:3]})" if native_lines else ""))
        names = [(f["name"], f.get("file")) for f in doc["shared"]["frames"]]
        check(len(names) == len(set(names)), "one frame per function and file")
    print(f"{n_got} samples in {len(doc['profiles'])} profiles")
    sys.exit(1 if failed else 0)


main()
