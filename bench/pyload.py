# SPDX-License-Identifier: GPL-2.0
"""Benchmark workload for --call-graph dwarf profiles (bench/run.sh,
BENCH_MODE=dwarf): three named threads with distinct Python call chains
(recursion, JSON, hashing, sorting) for argv[1] seconds."""
import hashlib
import json
import sys
import threading
import time


def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def descend(d, n):
    return leaf(n) if d == 0 else descend(d - 1, n)


def json_round(k):
    d = {"a": list(range(50 + k)), "b": {"c": "x" * 64}}
    for _ in range(50):
        json.loads(json.dumps(d))


def sort_work(k):
    data = [(i * 7919) % 1009 for i in range(2000 + k)]
    return sorted(data)


def worker(k, until):
    while time.time() < until:
        descend(4 + k * 3, 3000)
        json_round(k)
        hashlib.sha256(b"x" * 20000).hexdigest()
        sort_work(k)


def main():
    until = time.time() + float(sys.argv[1] if len(sys.argv) > 1 else 14)
    threads = [threading.Thread(target=worker, args=(k, until), name="bench-%d" % k)
               for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


main()
