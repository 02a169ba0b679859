# SPDX-License-Identifier: GPL-2.0
"""A deep real profile for the browser test (tests/e2e/run-browser.sh,
issue 15): a Python recursion 150 frames deep whose leaf calls C math
functions (native frames in libm and the math module, sampled at several
source lines), run by the main thread and a worker thread that starts
later and recurses less deep. Run with `python3.12 -X perf`."""
import math
import sys
import threading
import time


def leaf():
    s = 0.0
    for i in range(1, 20000):
        s += math.sin(i) * math.sqrt(i)
    return s


def deep(n):
    if n == 0:
        return leaf()
    return deep(n - 1)


def worker(rounds):
    for _ in range(rounds):
        deep(100)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    t = threading.Thread(target=worker, args=(rounds,), name="worker")
    time.sleep(0.1)
    t.start()
    for _ in range(rounds):
        deep(150)
    t.join()


main()
