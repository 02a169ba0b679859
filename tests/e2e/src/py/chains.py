# SPDX-License-Identifier: GPL-2.0
"""Measure full-Python-chain rates for tests/e2e/run-python.sh.

usage: chains.py SPEC folded FILE [STYLE]   perfspy convert --threads --no-kernel output
       chains.py SPEC perf FILE             perf script -F comm,tid,ip,sym,dso output

SPEC (written by the test) lists the expected chain of each C leaf:
  chain<TAB>C_FUNC<TAB>THREAD_NAME
  frame<TAB>CO_NAME<TAB>QUALNAME<TAB>FILE_PATH<TAB>FIRST_LINE  (root first)
STYLE names the perfspy options the folded file was made with: default,
qualname, nolineno, full (--full-filenames), keep (--keep-interpreter),
pyonly (--python-only).

A sample is a "C-leaf sample" when its innermost user frame is a C_FUNC of
libwork.so (for pyonly: when its Python frames end with a chain's last frame,
see below).  It has the full chain when its thread name is THREAD_NAME and
its Python frames, root first, are exactly the expected ones: the thread's
root Python frame first, nothing missing, nothing extra.  In the folded
styles other than keep the Python frames must also be contiguous (the
interpreter frames between them dropped).

Prints one line "csamples N full N anypy N frames N" (frames: sum of frames
per C-leaf sample, thread root and kernel excluded), then per chain
"chain C_FUNC csamples N full N", then up to 3 "miss COUNT STACK" lines.
"""
import os
import re
import sys

PYFRAME = re.compile(r"^.* \(([^()]*\.py|<[^<>]*>)(:\d+)?\)$")
CLEAF = re.compile(r"^(hash_\w+) \(libwork\.c(:\d+)?\)$")


def load_spec(path):
    chains = {}
    cur = None
    with open(path) as f:
        for line in f:
            w = line.rstrip("\n").split("\t")
            if not w[0]:
                continue
            if w[0] == "chain":
                cur = chains[w[1]] = {"thread": w[2], "frames": []}
            elif w[0] == "frame":
                cur["frames"].append({"name": w[1], "qual": w[2], "path": w[3],
                                      "line": w[4]})
    return chains


def render(fr, style):
    name = fr["qual"] if style == "qualname" else fr["name"]
    file = fr["path"] if style == "full" else os.path.basename(fr["path"])
    if style == "nolineno":
        return "%s (%s)" % (name, file)
    return "%s (%s:%s)" % (name, file, fr["line"])


def folded(chains, path, style):
    want = {c: [render(f, style) for f in v["frames"]] for c, v in chains.items()}
    # --python-only has no native leaf: a stack is "C-leaf" for chain c when
    # its innermost frame is the Python frame that calls c's C function.
    lastpy = {w[-1]: c for c, w in want.items()}
    res = {"csamples": 0, "full": 0, "anypy": 0, "frames": 0}
    per = {c: [0, 0] for c in chains}
    miss = []
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            n = int(n)
            frames = stack.split(";")
            root, frames = frames[0], frames[1:]
            if not root.startswith("thread (") or not frames:
                continue
            tname = root.split("): ", 1)[1] if "): " in root else ""
            if style == "pyonly":
                c = lastpy.get(frames[-1])
            else:
                m = CLEAF.match(frames[-1])
                c = m.group(1) if m else None
            if c not in chains:
                continue
            res["csamples"] += n
            res["frames"] += n * len(frames)
            per[c][0] += n
            idx = [i for i, fr in enumerate(frames) if PYFRAME.match(fr)]
            py = [frames[i] for i in idx]
            if py:
                res["anypy"] += n
            ok = tname == chains[c]["thread"] and py == want[c]
            if ok and style != "keep":
                ok = idx == list(range(idx[0], idx[0] + len(idx)))
            if style == "pyonly":
                ok = ok and len(py) == len(frames)
            if ok:
                res["full"] += n
                per[c][1] += n
            else:
                miss.append((n, line.rstrip("\n")))
    return res, per, miss


def perf(chains, path):
    want = {c: [(f["qual"], os.path.basename(f["path"])) for f in v["frames"]]
            for c, v in chains.items()}
    res = {"csamples": 0, "full": 0, "anypy": 0, "frames": 0}
    per = {c: [0, 0] for c in chains}
    miss = []

    def flush(comm, frames):
        user = [fr for fr in frames if fr[1] != "[kernel.kallsyms]"]
        if not user or os.path.basename(user[0][1]) != "libwork.so":
            return
        c = user[0][0]
        if c not in chains:
            return
        res["csamples"] += 1
        res["frames"] += len(user)
        per[c][0] += 1
        py = []
        for sym, _ in reversed(user):
            if sym.startswith("py::"):
                qual, _, file = sym[4:].partition(":")
                py.append((qual, os.path.basename(file)))
        if py:
            res["anypy"] += 1
        if comm == chains[c]["thread"] and py == want[c]:
            res["full"] += 1
            per[c][1] += 1
        elif len(miss) < 3:
            miss.append((1, comm + ";" + ";".join(s for s, _ in reversed(user))))

    comm, frames = None, []
    frame = re.compile(r"^\s+[0-9a-f]+ (.*) \((.*)\)$")
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            m = frame.match(line)
            if line[0] in " \t":
                if m:
                    frames.append((m.group(1).split("+0x")[0], m.group(2)))
                continue
            if comm is not None:
                flush(comm, frames)
            # "COMM TID": the comm may hold spaces, the tid is last.
            comm, frames = line.rsplit(None, 1)[0] if " " in line.strip() else line, []
    if comm is not None:
        flush(comm, frames)
    return res, per, miss


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    chains = load_spec(sys.argv[1])
    if sys.argv[2] == "perf":
        res, per, miss = perf(chains, sys.argv[3])
    else:
        style = sys.argv[4] if len(sys.argv) > 4 else "default"
        res, per, miss = folded(chains, sys.argv[3], style)
    print("csamples %(csamples)d full %(full)d anypy %(anypy)d frames %(frames)d" % res)
    for c in sorted(per):
        print("chain %s csamples %d full %d" % (c, per[c][0], per[c][1]))
    for n, s in sorted(miss, reverse=True)[:3]:
        print("miss %d %s" % (n, s))


main()
