# SPDX-License-Identifier: GPL-2.0
"""Compare `go tool pprof -traces` output with folded stacks (run-pprof.sh).

usage: pprof_check.py FOLDED TRACES
Folded stacks are reduced to what -traces shows: the thread root as the
labels thread/tid, and each frame as its function name (the text before
its last " (", as perfspy's frame grammar splits it). Both sides are
summed per stack; prints the differences and exits 1 if there are any.
"""
import re
import sys
from collections import Counter


def func(frame):
    if frame.endswith(")") and " (" in frame:
        return frame[: frame.rindex(" (")]
    return frame


def folded(path):
    c = Counter()
    with open(path) as f:
        for line in f:
            stack, n = line.rstrip("\n").rsplit(" ", 1)
            frames = stack.split(";")
            labels = ()
            m = re.fullmatch(r"thread \((\d+)\)(?:: (.*))?", frames[0])
            if m:
                labels = (("thread", m.group(2) or ""), ("tid", m.group(1)))
                frames = frames[1:]
            c[(labels, tuple(func(x) for x in frames))] += int(n)
    return c


def traces(path):
    c = Counter()
    labels, frames, n = {}, [], None

    def flush():
        if n is not None:
            key = (tuple(sorted((k, labels.get(k, "")) for k in labels)),
                   tuple(reversed(frames)))
            c[key] += n

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("-----------+"):
                flush()
                labels, frames, n = {}, [], None
                continue
            m = re.fullmatch(r"\s*(\w+):  (.*)", line)
            if m and n is None:
                labels[m.group(1)] = m.group(2)
                continue
            m = re.fullmatch(r"\s+(\d+)   (.*)", line)
            if m and n is None:
                n = int(m.group(1))
                frames.append(m.group(2).removesuffix(" (inline)"))
                continue
            if n is not None and line.strip():
                # go tool pprof marks the inlined Lines of a Location
                frames.append(line.strip().removesuffix(" (inline)"))
    flush()
    # thread/tid both present or neither
    out = Counter()
    for (labels, fr), v in c.items():
        d = dict(labels)
        lab = (("thread", d["thread"]), ("tid", d["tid"])) if "tid" in d else ()
        out[(lab, fr)] += v
    return out


a, b = folded(sys.argv[1]), traces(sys.argv[2])
bad = 0
for k in sorted(set(a) | set(b), key=repr):
    if a[k] != b[k]:
        bad += 1
        if bad <= 5:
            print("differs: folded %d, pprof %d: %r" % (a[k], b[k], k))
print("%d stacks folded, %d in pprof, %d differ" % (len(a), len(b), bad))
sys.exit(1 if bad else 0)
