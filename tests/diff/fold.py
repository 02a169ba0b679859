#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Normalizers for the differential test (tests/diff/run-native.sh).

  fold.py perf [--inline] [--tid] [--keep-tids FILE]
          < `perf script -F comm,tid,ip,sym,dso`
      perf's samples as folded stacks of function names: root first,
      ';'-joined, one count per sample.
  fold.py ours [--tid] [--keep-tids FILE] < perfspy raw output
      perfspy's stacks (with --threads if --tid) reduced to function names:
      the trailing " (...)" location group of every frame is removed.
  --keep-tids FILE keeps only the threads whose tids FILE lists (first
  word of each line).
  fold.py compare PERF OURS [--label L] [--worst N]
      agreement = sum over stacks of min(perf, ours) / perf samples.
      Prints "L: 99.87% of N samples agree" and the worst stacks; the last
      line is the rate as a plain number for the caller.

Both sides go through the same canonical(): "[unknown]" for unresolved
frames (perf's "[unknown]", our "0x7f12ab"), no symbol versions
("clock_gettime@@GLIBC_2.17"), no gcc clone suffixes (".constprop.0"), and
';' replaced by ':' as in our writer.

--inline: perf 6.1 expands inlined functions only for DWARF callchains
(`unwind_entry` -> `append_inlines` in util/machine.c), not for frame-pointer
ones, while perfspy expands them for every callchain.  For an fp recording
the oracle therefore expands each user frame with binutils'
`addr2line -i -f` (what perf itself runs for DWARF callchains), demangles
with `c++filt -p` (perf's style: no parameters, no return type), and keeps
perf's own symbol for the outermost (physical) function.  A return address
is looked up at ip-1 (the call instruction), the sample's first frame and
the first user frame after the kernel part at ip.

Written for this project (FlameGraph's stackcollapse-perf.pl is CDDL and is
not used).
"""

import collections
import re
import subprocess
import sys

CLONE_SUFFIX = re.compile(r'(\.(constprop|isra|part|cold|lto_priv|localalias)(\.\d+)?)+$')
SYMVER = re.compile(r'@@?[A-Za-z_][\w.]*$')
HEXADDR = re.compile(r'^0x[0-9a-fA-F]+$')
# perfspy's name for code without a symbol: its function's start as a
# file offset (`libgomp.so.1+0x1d2f0`); perf says [unknown].
FILEOFF = re.compile(r'^[^ ]+\+0x[0-9a-fA-F]+$')
THREAD_ROOT = re.compile(r'^thread \((\d+)\): ')


def split_group(text):
    """'name (a (b))' -> ('name', 'a (b)'): the trailing balanced
    parenthesized group, which may nest ("/tmp/x (deleted)"), and the text
    before it; (text, None) when there is none."""
    if not text.endswith(')'):
        return text, None
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ')':
            depth += 1
        elif text[i] == '(':
            depth -= 1
            if depth == 0:
                if i > 0 and text[i - 1] == ' ':
                    return text[:i - 1], text[i + 1:-1]
                return text, None
    return text, None


def canonical(name):
    name = name.strip()
    if not name or name == '[unknown]' or HEXADDR.match(name) or FILEOFF.match(name):
        return '[unknown]'
    name = SYMVER.sub('', name)
    name = CLONE_SUFFIX.sub('', name)
    return name.replace(';', ':')


class Inliner:
    """addr2line -i per DSO, one process per DSO, results cached."""

    def __init__(self):
        self.cache = {}

    def lookup(self, requests):
        """requests: {dso: set(addr)} -> fills self.cache[(dso, addr)]."""
        for dso, addrs in requests.items():
            addrs = sorted(a for a in addrs if (dso, a) not in self.cache)
            if not addrs:
                continue
            try:
                out = subprocess.run(
                    ['addr2line', '-i', '-f', '-a', '-e', dso],
                    input=''.join('%x\n' % a for a in addrs),
                    capture_output=True, text=True, check=False).stdout
            except OSError:
                out = ''
            blocks = self._parse(out)
            names = sorted({n for b in blocks.values() for n in b})
            demangled = self._demangle(names)
            for a in addrs:
                funcs = [demangled.get(n, n) for n in blocks.get(a, [])]
                self.cache[(dso, a)] = [f for f in funcs if f != '??']

    @staticmethod
    def _parse(out):
        blocks, cur, lines = {}, None, out.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if re.match(r'^0x[0-9a-f]+$', line):
                cur = int(line, 16)
                blocks[cur] = []
                i += 1
                continue
            if cur is not None:
                blocks[cur].append(line)
            i += 2          # function line, then file:line
        return blocks

    @staticmethod
    def _demangle(names):
        mangled = [n for n in names if n.startswith('_Z')]
        if not mangled:
            return {}
        try:
            out = subprocess.run(['c++filt', '-p'], input='\n'.join(mangled) + '\n',
                                 capture_output=True, text=True, check=False).stdout
        except OSError:
            return {}
        return dict(zip(mangled, out.splitlines()))


def perf_samples(stream):
    """Yield (tid, [(ip, sym, dso), ...] innermost first) per sample."""
    tid, frames = None, []
    for line in stream:
        line = line.rstrip('\n')
        if not line.strip():
            if tid is not None:
                yield tid, frames
            tid, frames = None, []
            continue
        if line[0] in ' \t':
            if tid is None:
                continue
            parts = line.strip().split(None, 1)
            ip = int(parts[0], 16)
            rest = parts[1] if len(parts) > 1 else '[unknown] ([unknown])'
            sym, dso = split_group(rest)
            frames.append((ip, sym, dso if dso is not None else '[unknown]'))
        else:
            if tid is not None:
                yield tid, frames
            toks = line.split()
            tid = next((t for t in reversed(toks) if t.isdigit()), '?')
            frames = []
    if tid is not None:
        yield tid, frames


def is_kernel(dso):
    return dso.startswith('[kernel') or dso.endswith('.ko') or '.ko.' in dso


def expandable(sym, dso):
    return (sym != '[unknown]' and dso.startswith('/') and not is_kernel(dso)
            and not dso.endswith(' (deleted)'))


def lookup_addr(frames, i):
    """ip-1 for return addresses; ip for the first frame of the sample and
    for the first user frame after kernel frames."""
    ip = frames[i][0]
    if i == 0 or is_kernel(frames[i - 1][2]):
        return ip
    return ip - 1


def cmd_perf(args):
    inline = '--inline' in args
    tid_root = '--tid' in args
    samples = list(perf_samples(sys.stdin))
    if '--keep-tids' in args:
        keep = read_tids(args[args.index('--keep-tids') + 1])
        samples = [(t, fr) for t, fr in samples if t in keep]
    inl = Inliner()
    if inline:
        req = collections.defaultdict(set)
        for _, frames in samples:
            for i, (ip, sym, dso) in enumerate(frames):
                if expandable(sym, dso):
                    req[dso].add(lookup_addr(frames, i))
        inl.lookup(req)
    counts = collections.Counter()
    for tid, frames in samples:
        names = []                       # innermost first
        for i, (ip, sym, dso) in enumerate(frames):
            if inline and expandable(sym, dso):
                chain = inl.cache.get((dso, lookup_addr(frames, i)), [])
                names.extend(chain[:-1])  # inlined ones; outermost = perf's sym
            names.append(sym)
        stack = [canonical(n) for n in reversed(names)]
        if tid_root:
            stack.insert(0, 'tid=%s' % tid)
        counts[';'.join(stack)] += 1
    write_counts(counts)


def read_tids(path):
    with open(path) as f:
        return {line.split()[0] for line in f if line.strip()}


def cmd_ours(args):
    tid_root = '--tid' in args
    keep = read_tids(args[args.index('--keep-tids') + 1]) if '--keep-tids' in args else None
    counts = collections.Counter()
    for line in sys.stdin:
        line = line.rstrip('\n')
        if not line:
            continue
        stack, _, n = line.rpartition(' ')
        root = None
        m = THREAD_ROOT.match(stack)
        if m:
            if keep is not None and m.group(1) not in keep:
                continue
            root = 'tid=%s' % m.group(1)
            stack = stack[m.end():]
            stack = stack.split(';', 1)[1] if ';' in stack else ''
        frames = [canonical(split_group(f)[0]) for f in stack.split(';')] if stack else []
        if tid_root:
            frames.insert(0, root or 'tid=?')
        counts[';'.join(frames)] += int(n)
    write_counts(counts)


def write_counts(counts):
    out = sys.stdout
    for stack in sorted(counts):
        out.write('%s %d\n' % (stack, counts[stack]))


def read_counts(path):
    counts = collections.Counter()
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip('\n').rpartition(' ')
            counts[stack] += int(n)
    return counts


def cmd_compare(args):
    label, worst = 'diff native', 8
    paths = []
    i = 0
    while i < len(args):
        if args[i] == '--label':
            label = args[i + 1]
            i += 2
        elif args[i] == '--worst':
            worst = int(args[i + 1])
            i += 2
        else:
            paths.append(args[i])
            i += 1
    perf, ours = read_counts(paths[0]), read_counts(paths[1])
    total = sum(perf.values())
    agree = sum(min(n, ours.get(s, 0)) for s, n in perf.items())
    rate = 100.0 * agree / total if total else 0.0
    print('%s: %.2f%% of %d samples agree (perfspy has %d samples)'
          % (label, rate, total, sum(ours.values())))
    diffs = sorted(((abs(perf.get(s, 0) - ours.get(s, 0)), s)
                    for s in set(perf) | set(ours)
                    if perf.get(s, 0) != ours.get(s, 0)), reverse=True)
    if diffs and worst:
        print('  worst differing stacks (perf count / perfspy count):')
        for _, s in diffs[:worst]:
            shown = s if len(s) <= 400 else s[:200] + ' ... ' + s[-190:]
            print('    %6d / %-6d %s' % (perf.get(s, 0), ours.get(s, 0), shown))
    print('%.4f' % rate)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == 'perf':
        cmd_perf(args)
    elif cmd == 'ours':
        cmd_ours(args)
    elif cmd == 'compare':
        cmd_compare(args)
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
