# SPDX-License-Identifier: GPL-2.0
"""A stand-in for a CPU-bound training process, for `make demo`.

Named threads (the names are set with prctl(PR_SET_NAME), so perf sees them
as thread names) do different kinds of work for about DEMO_SECONDS (5 s):
  loader     tokenizing, json round trips and sorting (pure Python)
  forward    matrix products and a recursive reduction (pure Python)
  optimizer  ctypes calls into libc on big buffers: memset, memmove and
             qsort with libc's strcmp as comparator (native time, GIL
             released), plus qsort with a Python comparator (native code
             calling back into Python)
The main thread starts them and waits.  Run it under CPython 3.12+ with
`-X perf` so perf can name the Python trampolines.
"""

import ctypes
import ctypes.util
import json
import os
import random
import threading
import time

DURATION = float(os.environ.get("DEMO_SECONDS", "5"))
PR_SET_NAME = 15

libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def set_thread_name(name):
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


# ---- loader ---------------------------------------------------------------
def tokenize(text):
    return [w.strip(".,;:!?").lower() for w in text.split() if w]


def make_batch(rng, n):
    words = ["tensor", "grad", "loss", "epoch", "layer", "weight", "bias", "cuda"]
    return [" ".join(rng.choice(words) for _ in range(12)) for _ in range(n)]


def load_batch(rng):
    records = [{"id": i, "tokens": tokenize(line)}
               for i, line in enumerate(make_batch(rng, 200))]
    blob = json.dumps(records)
    back = json.loads(blob)
    back.sort(key=lambda r: (len(r["tokens"]), r["tokens"][0]))
    return len(back)


def loader(stop):
    set_thread_name("loader")
    rng = random.Random(1)
    n = 0
    while not stop.is_set():
        n += load_batch(rng)
    return n


# ---- forward --------------------------------------------------------------
def matmul(a, b):
    bt = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in bt] for row in a]


def reduce_tree(values):
    if len(values) <= 2:
        return sum(values)
    mid = len(values) // 2
    return reduce_tree(values[:mid]) + reduce_tree(values[mid:])


def forward_step(rng, size):
    a = [[rng.random() for _ in range(size)] for _ in range(size)]
    b = [[rng.random() for _ in range(size)] for _ in range(size)]
    c = matmul(a, b)
    return reduce_tree([x for row in c for x in row])


def forward(stop):
    set_thread_name("forward")
    rng = random.Random(2)
    acc = 0.0
    while not stop.is_set():
        acc += forward_step(rng, 24)
    return acc


# ---- optimizer (ctypes into libc) -----------------------------------------
CMPFUNC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def py_compare(a, b):
    x = ctypes.cast(a, ctypes.POINTER(ctypes.c_int)).contents.value
    y = ctypes.cast(b, ctypes.POINTER(ctypes.c_int)).contents.value
    return (x > y) - (x < y)


def zero_grads(buf, size):
    libc.memset(buf, 0, size)


def copy_params(dst, src, size):
    libc.memmove(dst, src, size)


def sort_keys(keys, n, width):
    # libc strcmp as the comparator: elements are NUL-terminated strings.
    libc.qsort(keys, n, width, libc.strcmp)


def sort_small(rng):
    arr = (ctypes.c_int * 2000)(*(rng.randrange(1 << 30) for _ in range(2000)))
    libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), CMPFUNC(py_compare))
    return arr[0]


def optimizer(stop):
    set_thread_name("optimizer")
    rng = random.Random(3)
    size = 64 << 20
    grads = ctypes.create_string_buffer(size)
    params = ctypes.create_string_buffer(size)
    width, n = 16, 1 << 16
    keys = ctypes.create_string_buffer(width * n)
    libc.qsort.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    libc.memmove.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    steps = 0
    while not stop.is_set():
        zero_grads(grads, size)
        copy_params(params, grads, size)
        for i in range(0, width * n, width):
            keys[i:i + 8] = b"%08x" % rng.randrange(1 << 32)
        sort_keys(keys, n, width)
        sort_small(rng)
        steps += 1
    return steps


def main():
    set_thread_name("train-main")
    stop = threading.Event()
    threads = [threading.Thread(target=f, args=(stop,), name=f.__name__)
               for f in (loader, forward, optimizer)]
    for t in threads:
        t.start()
    time.sleep(DURATION)
    stop.set()
    for t in threads:
        t.join()
    print("train_sim: %d threads ran %.1f s" % (len(threads), DURATION))


if __name__ == "__main__":
    main()
