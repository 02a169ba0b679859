#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Collapse `perf script` text into folded stacks (stackcollapse-perf
semantics, as bench/collapse.awk): frames root first joined by ';', one line
per unique stack with its sample count, sorted.  --comm adds the command
name as the root frame.  Written for perfspy's benchmark; FlameGraph (CDDL)
is not used."""

import re
import sys

HEADER_COMM = re.compile(r'^(.*?)\s+\d+(?:/\d+)?\s')
FRAME = re.compile(r'^\s*[0-9a-f]+ (.*?)(?:\+0x[0-9a-f]+)? \([^()]*\)$')


def main():
    comm_root = '--comm' in sys.argv[1:]
    counts = {}
    comm, frames, insample = '', [], False
    for line in sys.stdin:
        line = line.rstrip('\n')
        if not line.strip():
            if frames:
                frames.reverse()
                if comm_root:
                    frames.insert(0, comm)
                key = ';'.join(frames)
                counts[key] = counts.get(key, 0) + 1
            frames, insample = [], False
            continue
        if line[0] not in ' \t':
            m = HEADER_COMM.match(line)
            comm = m.group(1) if m else line.split()[0]
            frames, insample = [], True
            continue
        if insample:
            m = FRAME.match(line)
            frames.append((m.group(1) if m else line.strip()).replace(';', ':'))
    if frames:
        frames.reverse()
        if comm_root:
            frames.insert(0, comm)
        key = ';'.join(frames)
        counts[key] = counts.get(key, 0) + 1
    out = sys.stdout
    for key in sorted(counts):
        out.write('%s %d\n' % (key, counts[key]))


if __name__ == '__main__':
    main()
