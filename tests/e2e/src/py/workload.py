# SPDX-License-Identifier: GPL-2.0
"""Workload of tests/e2e/run-python.sh (run with python3.12+ -X perf).

usage: workload.py LIBWORK.so SECONDS [nofork]

Every thread runs one fixed Python call chain that ends in its own C function
of libwork.so (called through ctypes, GIL released), so the test can expect
exact chains:
  w-rec      rec_worker -> recurse x8 -> hash_rec
  w-nested   nested_worker -> Outer.Inner.method -> Outer.Inner.deeper -> hash_nested
  w-gen      gen_worker -> consume -> produce (a generator) -> hash_gen
  py-main    <module> -> main -> main_loop -> main_leaf -> hash_main
  py-child   (forked) <module> -> main -> spawn_child -> child_work -> child_leaf -> hash_child
Thread names are set with threading.Thread(name=...) and copied to the OS
thread (prctl PR_SET_NAME) so that perf records them.  The child is forked
before any thread starts; the frames it inherits (<module>, main,
spawn_child) return through the parent's trampolines, which only the
parent's perf map names.  Def names are unique: the test finds their lines.
"""
import ctypes
import os
import sys
import threading
import time

PR_SET_NAME = 15
ITERS = 2000000         # one C call: a few ms
DEPTH = 8               # frames of recurse()

libc = ctypes.CDLL(None, use_errno=True)
lib = ctypes.CDLL(sys.argv[1])
for fn in ("hash_rec", "hash_nested", "hash_gen", "hash_main", "hash_child"):
    getattr(lib, fn).argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    getattr(lib, fn).restype = ctypes.c_uint64
SECONDS = float(sys.argv[2])
FORK = not (len(sys.argv) > 3 and sys.argv[3] == "nofork")


def set_os_name(name=None):
    name = name or threading.current_thread().name
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def recurse(n, deadline):
    if n > 1:
        return recurse(n - 1, deadline)
    h = 0
    while time.monotonic() < deadline:
        h ^= lib.hash_rec(h, ITERS)
    return h


def rec_worker(deadline):
    set_os_name()
    return recurse(DEPTH, deadline)


class Outer:
    class Inner:
        def method(self, deadline):
            h = 0
            while time.monotonic() < deadline:
                h ^= self.deeper(h)
            return h

        def deeper(self, h):
            return lib.hash_nested(h, ITERS)


def nested_worker(deadline):
    set_os_name()
    return Outer.Inner().method(deadline)


def produce(deadline):
    h = 0
    while time.monotonic() < deadline:
        h = lib.hash_gen(h, ITERS)
        yield h


def consume(deadline):
    total = 0
    for v in produce(deadline):
        total ^= v
    return total


def gen_worker(deadline):
    set_os_name()
    return consume(deadline)


def main_leaf(h):
    return lib.hash_main(h, ITERS)


def main_loop(deadline):
    h = 0
    while time.monotonic() < deadline:
        h = main_leaf(h)
    return h


def child_leaf(h):
    return lib.hash_child(h, ITERS)


def child_work(deadline):
    h = 0
    while time.monotonic() < deadline:
        h = child_leaf(h)
    return h


def spawn_child(deadline):
    pid = os.fork()
    if pid == 0:
        set_os_name("py-child")
        child_work(deadline)
        os._exit(0)
    return pid


def main():
    set_os_name("py-main")
    deadline = time.monotonic() + SECONDS
    child = spawn_child(deadline) if FORK else 0
    print("parent", os.getpid(), flush=True)
    if child:
        print("child", child, flush=True)
    threads = [threading.Thread(name=n, target=f, args=(deadline,))
               for n, f in (("w-rec", rec_worker), ("w-nested", nested_worker),
                            ("w-gen", gen_worker))]
    for t in threads:
        t.start()
    main_loop(deadline)
    for t in threads:
        t.join()
    if child:
        os.waitpid(child, 0)


main()
