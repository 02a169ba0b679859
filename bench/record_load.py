# SPDX-License-Identifier: GPL-2.0
"""bench/run-record.sh's target: NTHREADS CPU-bound threads (ctypes into
record_work.c's work_unit, GIL released), each counting its own work units.

usage: record_load.py LIB.so NTHREADS STOPFILE OUT

It runs until STOPFILE exists (the bench creates it once its measurements
are done, however long a profiler took to start or finish).

Every 0.25 s the main thread appends `WALLTIME TOTAL_UNITS` to OUT (wall
time from time.time(), so the bench can cut a window with `date +%s.%N`);
at the end `thread TID NAME UNITS CPU_SECONDS` per worker.
"""
import ctypes
import os
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
lib.work_unit.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
lib.work_unit.restype = ctypes.c_uint64
NTHREADS = int(sys.argv[2])
STOPFILE = sys.argv[3]
ROUNDS = 1000000
libc = ctypes.CDLL(None)
units = [0] * NTHREADS
info = [None] * NTHREADS
stop = threading.Event()


def inner_step(h):
    return lib.work_unit(h, ROUNDS)


def worker_loop(i):
    h = i
    while not stop.is_set():
        h = inner_step(h)
        units[i] += 1


def worker(i):
    libc.prctl(15, ctypes.c_char_p(b"busy-%d" % i), 0, 0, 0)
    worker_loop(i)
    info[i] = (threading.get_native_id(), "busy-%d" % i, time.thread_time())


def main():
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(NTHREADS)]
    for t in threads:
        t.start()
    with open(sys.argv[4], "w") as out:
        while not os.path.exists(STOPFILE):
            time.sleep(0.25)
            out.write("%.3f %d\n" % (time.time(), sum(units)))
            out.flush()
        stop.set()
        for t in threads:
            t.join()
        for i in range(NTHREADS):
            out.write("thread %d %s %d %.3f\n" % (info[i][0], info[i][1], units[i], info[i][2]))


main()
