#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Alternating runs of perfspy binaries on one file (issue 16).

    bench/ab.py FILE RUNS NAME=BINARY [NAME=BINARY ...] [--peer]

Each round runs every binary once, `convert -q -i FILE` into a scratch file
(removed before each run), and with --peer also `perf report --stdio
--no-children -g folded` (the bench's peer, bench/run.sh) last. Round R
starts at the Rth binary and goes round from there: here the run right
after perf report's (which frees some 100-350 MB) is often 15-20% slower,
and in a fixed order the first binary always paid for it: two binaries on
the build recording, 21 rounds each way round, gave 188.5 against 160.6 ms
with the first one first, and 174.0 against 144.9 ms with the second one
first (2026-12-05).
This project's machines drift by a third within the hour, so a change is
measured against the binary before it in the same rounds, not against
yesterday's bench. Prints each one's median and fastest wall time, and
with --peer how many times faster than perf report each median is.
PERFSPY_* variables pass through (PERFSPY_BUILD_BEHIND=0 and the like).
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time


def usage():
    sys.exit('usage: ' + __doc__.split('\n\n')[1].strip())


def main(argv):
    peer = '--peer' in argv
    args = [a for a in argv if a != '--peer']
    if len(args) < 3 or not args[1].isdigit() or int(args[1]) < 1:
        usage()
    path, runs = args[0], int(args[1])
    bins = []
    for spec in args[2:]:
        name, sep, binary = spec.partition('=')
        if not sep or not name or not binary:
            usage()
        bins.append((name, binary))
    if not os.path.isfile(path):
        sys.exit('ab.py: %s: no such file' % path)
    perf = os.environ.get('PERF', 'perf')
    walls = {name: [] for name, _ in bins}
    if peer:
        walls['perf report'] = []
    with tempfile.TemporaryDirectory(prefix='perfspy-ab.') as tmp:
        out = os.path.join(tmp, 'out')
        for r in range(runs):
            turn = bins[r % len(bins):] + bins[:r % len(bins)]
            cmds = [(name, [binary, 'convert', '-q', '-i', path, '-o', out])
                    for name, binary in turn]
            if peer:
                cmds.append(('perf report', [perf, 'report', '-i', path, '--stdio',
                                             '--no-children', '-g', 'folded']))
            for name, cmd in cmds:
                if os.path.exists(out):
                    os.unlink(out)
                with open(out, 'wb') as sink:
                    t0 = time.perf_counter()
                    rc = subprocess.run(cmd, stdout=sink, stderr=subprocess.DEVNULL).returncode
                    walls[name].append(time.perf_counter() - t0)
                if rc:
                    sys.exit('ab.py: %s failed (exit %d, round %d)' % (name, rc, r + 1))
    print('%s, %d alternating runs, each binary first in turn' % (path, runs))
    for name, w in walls.items():
        print('%-14s median %7.1f ms   fastest %7.1f ms' %
              (name, statistics.median(w) * 1e3, min(w) * 1e3))
    if peer:
        pm = statistics.median(walls['perf report'])
        for name, _ in bins:
            print('%-14s %.2fx faster than perf report' %
                  (name, pm / statistics.median(walls[name])))


if __name__ == '__main__':
    main(sys.argv[1:])
