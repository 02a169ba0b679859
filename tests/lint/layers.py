#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check libconv's file-level dependencies (docs/design.md "Layout").

A file A imports B when A's object uses a symbol B's object defines (nm).
A header shared by the files of one module (merge.h) is not an import; a
call is. The check fails when
  - two or more files import each other, directly or around a cycle, or
  - a stage imports, or includes a header of, a stage it must not know:
      common/   libc only: nothing else in libconv
      perfdata/ common/
      frames/   common/, perfdata/
      folded/   common/
      session.c everything; nothing depends on it but the public API.
Usage: layers.py OBJDIR SRCDIR  (prints every offending edge; exit 1 if any)
"""
import os
import re
import subprocess
import sys

ALLOWED = {
    "common": {"common"},
    "perfdata": {"common", "perfdata"},
    "frames": {"common", "perfdata", "frames"},
    "folded": {"common", "folded"},
    "": {"", "common", "perfdata", "frames", "folded"},
}


def stage(path):
    d = os.path.dirname(path)
    return d if d in ALLOWED else ""


def nm(obj):
    out = subprocess.run(["nm", obj], check=True, capture_output=True,
                         text=True).stdout
    defs, undefs = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U":
            undefs.add(f[1])
        elif len(f) == 3 and f[1] in "TDBRVWtdbr" and f[1].isupper():
            defs.add(f[2])
    return defs, undefs


def main():
    objdir, srcdir = sys.argv[1], sys.argv[2]
    units = {}
    for root, _, files in os.walk(objdir):
        for f in files:
            if f.endswith(".o"):
                rel = os.path.relpath(os.path.join(root, f), objdir)[:-2]
                units[rel] = nm(os.path.join(root, f))
    if not units:
        print(f"no objects under {objdir}: build first")
        return 1
    definer = {}
    for u, (defs, _) in units.items():
        for s in defs:
            definer[s] = u
    edges = {u: set() for u in units}
    why = {}
    for u, (_, undefs) in units.items():
        for s in undefs:
            v = definer.get(s)
            if v and v != u:
                edges[u].add(v)
                why.setdefault((u, v), s)
    # Header includes, mapped to the unit of the same name (x.h -> x.c).
    inc = re.compile(r'^#include "([^"]+)"', re.M)
    for root, _, files in os.walk(srcdir):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.relpath(os.path.join(root, f), srcdir)
            u = path[:-2]
            text = open(os.path.join(root, f), encoding="utf-8").read()
            for h in inc.findall(text):
                if h == "perfspy.h":
                    continue
                hp = h if "/" in h else os.path.join(os.path.dirname(path), h)
                v = os.path.normpath(hp)[:-2]
                if stage(v + ".h") not in ALLOWED[stage(path)]:
                    print(f"layer: {path} includes {h} ({stage(v + '.h') or 'session'})")
                    bad[0] += 1
    for u in sorted(edges):
        for v in sorted(edges[u]):
            if stage(v) not in ALLOWED[stage(u)]:
                print(f"layer: {u} -> {v} ({why[(u, v)]})")
                bad[0] += 1
    # Cycles: Tarjan's strongly connected components.
    index, low, onstack, st, sccs = {}, {}, set(), [], []
    counter = [0]

    def visit(u):
        index[u] = low[u] = counter[0]
        counter[0] += 1
        st.append(u)
        onstack.add(u)
        for v in edges[u]:
            if v not in index:
                visit(v)
                low[u] = min(low[u], low[v])
            elif v in onstack:
                low[u] = min(low[u], index[v])
        if low[u] == index[u]:
            comp = []
            while True:
                w = st.pop()
                onstack.discard(w)
                comp.append(w)
                if w == u:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for u in sorted(edges):
        if u not in index:
            visit(u)
    for comp in sccs:
        members = set(comp)
        detail = "; ".join(f"{u} -> {v} ({why[(u, v)]})" for u in comp
                           for v in sorted(edges[u] & members))
        print(f"cycle: {' '.join(comp)}: {detail}")
        bad[0] += 1
    nedges = sum(len(e) for e in edges.values())
    print(f"{len(units)} files, {nedges} dependencies, {bad[0]} problems")
    return 1 if bad[0] else 0


bad = [0]
if __name__ == "__main__":
    sys.exit(main())
