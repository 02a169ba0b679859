#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compare perfspy's folded output with `perf script` of the same recording.

usage: arm64_compare.py PERF_SCRIPT FOLDED

Both sides become user function chains, root first: perf script's callchain
lines (`\\tADDR SYM+OFF (DSO)`) minus kernel addresses, perfspy's frames
(`NAME (FILE)`, docs/output.md §3) minus `[kernel.kallsyms]` frames. Names
are reduced to what both print the same: C++ parameter lists, return types
and `+0x..` offsets dropped; an unknown symbol is "?". Prints one line:
`MATCHED TOTAL PERCENT`, the samples whose chain perfspy has too (a
multiset intersection), and on stderr the most common differences.
"""
import collections
import re
import sys


def base_name(sym):
    """`double ns::f<int>(int const*) const` -> `ns::f<int>`."""
    sym = re.sub(r" \[clone [^]]*\]$", "", sym.strip())
    depth, cut = 0, len(sym)
    for i, ch in enumerate(sym):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0 and not sym.startswith("(anonymous", i):
            cut = i
            break
    sym = sym[:cut]
    # a return type before the name (template instances): the last space
    # outside template brackets
    depth, space = 0, -1
    for i, ch in enumerate(sym):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == " " and depth == 0:
            space = i
    if space >= 0 and not sym[space + 1:].startswith("namespace"):
        rest = sym[space + 1:]
        if rest and "(anonymous" not in sym[:space + 1]:
            sym = rest
    return sym


def perf_chains(path):
    chains = collections.Counter()
    frames, addrs = None, []

    def flush():
        if frames is None:
            return
        # perf's arm64 -g quirk (docs/arm64.md §2.3): the caller it adds
        # from LR is LR - 1, compared with the next entry LR, so a leaf
        # whose caller the frame records have already gets that caller
        # twice. perfspy adds it once: drop perf's copy.
        if len(addrs) > 2 and addrs[1] + 1 == addrs[2]:
            del frames[1]
        chains[";".join(reversed(frames))] += 1

    with open(path, errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            if not line[0].isspace():
                flush()
                frames, addrs = [], []
                continue
            parts = line.strip().split(None, 1)
            if len(parts) < 2 or frames is None:
                continue
            addr, rest = parts
            if int(addr, 16) >= 1 << 63:
                continue  # kernel
            addrs.append(int(addr, 16))
            m = re.match(r"^(.*?)(\+0x[0-9a-f]+)? \((.*)\)$", rest)
            sym = m.group(1) if m else rest
            if m and m.group(3) == "[unknown]":
                addrs.pop()
                continue  # in no mapping: perfspy's `0xADDR (?)`
            frames.append("?" if sym == "[unknown]" else base_name(sym))
    flush()
    return chains


def perfspy_chains(path):
    chains = collections.Counter()
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            out = []
            for fr in stack.split(";"):
                name, sep, where = fr.rpartition(" (")
                if not sep:
                    continue
                # kernel frames; `0xADDR (?)`: a user pc in no mapping
                # (a sample during exec), where perf's unwinder prints none
                if where.startswith("[kernel.kallsyms]") or where == "?)":
                    continue
                # no symbol: `0xADDR` or `LIB+0xOFF` (docs/output.md §3)
                nosym = name.startswith("0x") or re.match(r"^\S+\+0x[0-9a-f]+$", name)
                out.append("?" if nosym else base_name(name))
            chains[";".join(out)] += int(count)
    return chains


def wild_eq(perf, ours):
    """perf's "?" (no symbol at the address) matches any name: perf names
    a return address by the address itself, perfspy by the call
    (address - 1), which differ after a call to a noreturn function that
    ends its function (docs/arm64.md §4)."""
    p, o = perf.split(";"), ours.split(";")
    return len(p) == len(o) and all(x == y or x == "?" for x, y in zip(p, o))


def main():
    a = perf_chains(sys.argv[1])
    b = perfspy_chains(sys.argv[2])
    total = sum(a.values())
    exact = a & b
    matched = sum(exact.values())
    a, b = a - exact, b - exact
    for chain in sorted(a):
        for other in sorted(b):
            if a[chain] and b[other] and wild_eq(chain, other):
                n = min(a[chain], b[other])
                matched += n
                a[chain] -= n
                b[other] -= n
    a, b = +a, +b
    print(matched, total, "%.2f" % (100.0 * matched / total if total else 0))
    for chain, n in (a - b).most_common(3):
        print("  perf only %d: %s" % (n, chain), file=sys.stderr)
    for chain, n in (b - a).most_common(3):
        print("  perfspy only %d: %s" % (n, chain), file=sys.stderr)


main()
