# SPDX-License-Identifier: GPL-2.0
"""Workload of tests/e2e/run-idle.sh (issue 10): threads whose time is known.

usage: idle.py LIBWORK.so SECONDS [THREADS [CYCLE_MS]]

Each of THREADS threads (2), all named idle-w, repeats a cycle of CYCLE_MS
(300 ms; shown here for 100 ms):
  40 ms on the CPU    idle_burn(): burn_cpu of libwork.so (ctypes, GIL
                      released) hashes until the thread's CPU clock has
                      advanced 40 ms, so preemption on a busy machine does
                      not cut it, and the GIL is taken back once per cycle
  40 ms asleep        idle_sleep(): time.sleep(0.04) (clock_nanosleep)
  20 ms on a futex    idle_lock(): LOCK.acquire(timeout=0.02) of a
                      threading.Lock the main thread holds all along
                      (which then waits in join(): not an idle-w thread)
Off-CPU by construction: sleep 40 %, futex 20 %, CPU 40 % of the threads'
time of the idle-w threads (the name is copied to the OS thread). Few
threads, each taking the GIL back three times a cycle, keep the GIL waits
that the construction does not count small; a long cycle keeps the share
of wake-up latency (a woken thread waiting for a CPU is still off it) small
on a busy machine.
"""
import ctypes
import sys
import threading
import time

PR_SET_NAME = 15
libc = ctypes.CDLL(None, use_errno=True)
lib = ctypes.CDLL(sys.argv[1])
lib.burn_cpu.argtypes = [ctypes.c_uint64]
lib.burn_cpu.restype = ctypes.c_uint64
SECONDS = float(sys.argv[2])
NTHREADS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
CYCLE = float(sys.argv[4]) / 1000.0 if len(sys.argv) > 4 else 0.3
LOCK = threading.Lock()


def idle_burn():
    return lib.burn_cpu(int(CYCLE * 0.4 * 1e9))


def idle_sleep():
    time.sleep(CYCLE * 0.4)


def idle_lock():
    # Held by the main thread: a timed futex wait.
    if LOCK.acquire(timeout=CYCLE * 0.2):
        LOCK.release()


def idle_worker(deadline):
    name = threading.current_thread().name
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)
    while time.monotonic() < deadline:
        idle_burn()
        idle_sleep()
        idle_lock()


def main():
    LOCK.acquire()
    deadline = time.monotonic() + SECONDS
    threads = [threading.Thread(target=idle_worker, args=(deadline,), name="idle-w")
               for _ in range(NTHREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


main()
