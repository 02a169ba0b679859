# SPDX-License-Identifier: GPL-2.0
# The `train.py` the README's commands run (tests/e2e/run-readme.sh): a
# loader thread decompressing batches (native time in zlib under Python
# frames) and a main thread doing Python arithmetic, for $TRAIN_SECONDS
# seconds (default 2).
import os
import threading
import time
import zlib

SECONDS = float(os.environ.get("TRAIN_SECONDS", "2"))
BATCH = zlib.compress(os.urandom(1 << 16) * 8)


def decode(buf):
    return zlib.decompress(buf)


def load(stop):
    while not stop.is_set():
        decode(BATCH)


def step(x):
    s = 0
    for i in range(2000):
        s += (i * x) % 7
    return s


def main():
    stop = threading.Event()
    loader = threading.Thread(target=load, args=(stop,), name="loader")
    loader.start()
    end = time.monotonic() + SECONDS
    x = 0
    while time.monotonic() < end:
        x = step(x + 1)
    stop.set()
    loader.join()


if __name__ == "__main__":
    main()
