# SPDX-License-Identifier: GPL-2.0
"""Workload of tests/e2e/run-merge.sh (python3.12 -X perf, under perf record).

usage: workload.py LIBMERGE.so SECONDS OUTDIR

It carries its own py-spy: a sampler thread that reads sys._current_frames()
about every 10 ms and, at exit, writes what `py-spy record` would have
written for the same samples (docs/pyspy-formats.md §1.2-1.5, §2.1):
  OUTDIR/pyspy.txt        --format raw --threads --idle: `thread (TID): NAME`
                          root, then `co_name (short_file:CURRENT_LINE)` root
                          first, identical stacks summed (py-spy 0.4.2)
  OUTDIR/pyspy-qual.txt   the same with co_qualname names (py-spy 0.4.3+)
  OUTDIR/pyspy.json       --format speedscope: one sampled profile per
                          thread, `Thread TID "NAME"`, full file names,
                          weights 1/rate
TID is the OS thread id (threading.get_native_id), which perf also records.
Every thread is sampled, the sampler too (py-spy --idle keeps idle ones).

The workers call C functions of LIBMERGE.so through ctypes, each from one
known line (the `# @NAME` markers; run-merge.sh finds them with grep):
  w-run   run -> call_alpha -> alpha   and   run -> call_beta -> beta
  w-d0    disp_worker(0) -> dispatch, line @D0 -> delta
  w-d1    disp_worker(1) -> dispatch, line @D1 -> delta
  w-fwd   fwd_worker -> Linear.forward -> lin_k   (line @LIN)
          fwd_worker -> Attention.forward -> attn_k  (line @ATTN)
          fwd_worker -> Conv.forward, asleep at @CONV: py-spy (--idle)
          sees it, perf (CPU time) hardly ever
w-d0 and w-d1 have one Python skeleton and differ only in the line, so
only a thread-aware merge can put each thread's delta under its own line.
Linear.forward and Attention.forward share co_name and file: only a join
on the definition keeps lin_k under @LIN and attn_k under @ATTN, and only
the definition enclosing @CONV in the source (Conv.forward, which a perf
side without its samples does not know) keeps attn_k from Conv's line.
OS thread names are set (prctl) so that perf records them.
"""
import sys
import threading
import time
import os


class Sampler(threading.Thread):
    def __init__(self, outdir, interval=0.01):
        super().__init__(name="sampler", daemon=True)
        self.outdir = outdir
        self.interval = interval
        self.stop_evt = threading.Event()
        self.raw = {}       # stack text -> count (co_name)
        self.raw_q = {}     # stack text -> count (co_qualname)
        self.prof = {}      # (tid, name) -> list of frame-index lists
        self.frames = {}    # (name, file, line) -> index
        self.short = {}

    def short_name(self, path):
        # py-spy src/python_spy.rs shorten_filename: the file plus every
        # enclosing directory that holds an __init__.py.
        s = self.short.get(path)
        if s is None:
            d = os.path.dirname(path)
            while d and os.path.exists(os.path.join(d, "__init__.py")):
                d = os.path.dirname(d)
            s = path[len(d):].lstrip("/") if d else path
            self.short[path] = s
        return s

    def frame_text(self, name, path, line):
        f = self.short_name(path)
        return "%s (%s:%d)" % (name, f, line) if line else "%s (%s)" % (name, f)

    def sample(self):
        threads = {t.ident: t for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            t = threads.get(ident)
            if t is None:
                continue
            chain = []
            while frame is not None:
                co = frame.f_code
                chain.append((co.co_name, co.co_qualname, co.co_filename,
                              frame.f_lineno or 0))
                frame = frame.f_back
            chain.reverse()
            root = "thread (%d): %s" % (t.native_id, t.name)
            key = ";".join([root] + [self.frame_text(n, f, l) for n, _, f, l in chain])
            self.raw[key] = self.raw.get(key, 0) + 1
            key = ";".join([root] + [self.frame_text(q, f, l) for _, q, f, l in chain])
            self.raw_q[key] = self.raw_q.get(key, 0) + 1
            idx = []
            for n, _, f, l in chain:
                idx.append(self.frames.setdefault((n, f, l), len(self.frames)))
            self.prof.setdefault((t.native_id, t.name), []).append(idx)

    def run(self):
        set_os_name("sampler")
        nxt = time.monotonic()
        while not self.stop_evt.is_set():
            self.sample()
            nxt += self.interval
            delay = nxt - time.monotonic()
            if delay > 0:
                self.stop_evt.wait(delay)

    def write(self):
        for fname, counts in (("pyspy.txt", self.raw), ("pyspy-qual.txt", self.raw_q)):
            with open(os.path.join(self.outdir, fname), "w") as f:
                for stack, n in counts.items():
                    f.write("%s %d\n" % (stack, n))
        self.write_speedscope()

    def write_speedscope(self):
        import json
        profiles = []
        for (tid, name), samples in self.prof.items():
            profiles.append({
                "type": "sampled", "name": 'Thread %d "%s"' % (tid, name),
                "unit": "seconds", "startValue": 0.0,
                "endValue": len(samples) * self.interval,
                "samples": samples, "weights": [self.interval] * len(samples)})
        profiles.sort(key=lambda p: p["name"])
        frames = [None] * len(self.frames)
        for (n, f, l), i in self.frames.items():
            frames[i] = {"name": n, "file": f, "line": l or None, "col": None}
        doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
               "profiles": profiles, "shared": {"frames": frames},
               "activeProfileIndex": None, "exporter": "py-spy@0.4.2",
               "name": "py-spy profile"}
        with open(os.path.join(self.outdir, "pyspy.json"), "w") as f:
            f.write(json.dumps(doc, separators=(",", ":")) + "\n")


def set_os_name(name):
    import ctypes
    libc = ctypes.CDLL(None)
    libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)  # PR_SET_NAME


sampler = Sampler(sys.argv[3])
sampler.start()

import ctypes  # noqa: E402  (after the sampler starts: imports are sampled too)

lib = ctypes.CDLL(sys.argv[1])
for fn in ("alpha", "beta", "delta", "lin_k", "attn_k"):
    getattr(lib, fn).argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    getattr(lib, fn).restype = ctypes.c_uint64
ITERS = 1500000  # one C call: a few ms


def call_alpha(h):
    return lib.alpha(h, ITERS)  # @CALL_ALPHA


def call_beta(h):
    return lib.beta(h, ITERS)  # @CALL_BETA


def run(deadline):
    set_os_name("w-run")
    h = 0
    while time.monotonic() < deadline:
        h ^= call_alpha(h)  # @RUN_ALPHA
        h ^= call_beta(h)  # @RUN_BETA
    return h


def dispatch(which, h):
    if which == 0:
        return lib.delta(h, ITERS)  # @D0
    return lib.delta(h, ITERS)  # @D1


def disp_worker(which, deadline):
    set_os_name("w-d%d" % which)
    h = 0
    while time.monotonic() < deadline:
        h ^= dispatch(which, h)
    return h


class Linear:
    def forward(self, h):
        return lib.lin_k(h, ITERS)  # @LIN


class Attention:
    def forward(self, h):
        return lib.attn_k(h, ITERS)  # @ATTN


class Conv:
    def forward(self, h):  # @DEF_CONV
        time.sleep(0.002)  # @CONV
        return h


def fwd_worker(deadline):
    set_os_name("w-fwd")
    h = 0
    lin, attn, conv = Linear(), Attention(), Conv()
    while time.monotonic() < deadline:
        h ^= lin.forward(h)
        h ^= attn.forward(h)
        h ^= conv.forward(h)
    return h


def main():
    deadline = time.monotonic() + float(sys.argv[2])
    threads = [threading.Thread(name="w-run", target=run, args=(deadline,)),
               threading.Thread(name="w-d0", target=disp_worker, args=(0, deadline)),
               threading.Thread(name="w-d1", target=disp_worker, args=(1, deadline)),
               threading.Thread(name="w-fwd", target=fwd_worker, args=(deadline,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sampler.stop_evt.set()
    sampler.join()
    sampler.write()
    print("pid", os.getpid(), flush=True)


main()
