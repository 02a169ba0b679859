# SPDX-License-Identifier: GPL-2.0
"""perfspy from Python: perf.data samples as py-spy folded stacks.

A thin ctypes layer over libperfspy (include/perfspy.h); nothing is
compiled at install time. Stacks come root first, as py-spy's raw format
writes them::

    import collections, perfspy
    leaf = collections.Counter()
    for frames, count in perfspy.read("perf.data", python_only=True):
        leaf[frames[-1]] += count

Every failure raises :class:`perfspy.Error` with the library's message.
Library warnings go to the ``perfspy`` logger.
"""

import ctypes
import ctypes.util
import json
import logging
import os
from typing import (Any, Dict, Iterable, Iterator, List, Optional, Sequence,
                    Tuple, Union)

__all__ = ["Error", "read", "report", "merge", "version", "dlfilter_path",
           "library_path", "Stack"]

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
#: One folded stack: its frames (root first) and its count.
Stack = Tuple[List[str], int]

_log = logging.getLogger("perfspy")
_HERE = os.path.dirname(os.path.abspath(__file__))

# perfspy.h's enums (values pinned by the header).
_LOG_ERROR, _LOG_WARN = 0, 1
_WEIGHTS = {"samples": 0, "period": 1}
_CAPTURE_AUTO = 0
_ROOTS = {"keep": 0, "like-pyspy": 1, "like_pyspy": 1, "drop": 2}
_E_FORMAT = 4000


class Error(Exception):
    """A libperfspy failure.

    ``code`` is the library's negative error code (``-errno`` or
    ``-PERFSPY_E_*``), ``message`` its text with the library's last logged
    error, and ``path`` the input concerned, if any.
    """

    def __init__(self, code: int, message: str, path: Optional[str] = None):
        self.code = code
        self.message = message
        self.path = path
        super().__init__("%s: %s" % (path, message) if path else message)


# --- the library ------------------------------------------------------------

_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)
_PROGRESS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64,
                                ctypes.c_uint64)


class _OpenOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("log_fn", _LOG_FN),
                ("log_ctx", ctypes.c_void_p), ("log_level", ctypes.c_int),
                ("symfs", ctypes.c_char_p), ("buildid_dir", ctypes.c_char_p),
                ("kallsyms", ctypes.c_char_p), ("display_name", ctypes.c_char_p),
                ("perf_map_dir", ctypes.c_char_p)]


class _ConvertOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("event", ctypes.c_char_p),
                ("pid", ctypes.c_int), ("tid", ctypes.c_int),
                ("comm", ctypes.c_char_p), ("no_kernel", ctypes.c_bool),
                ("threads", ctypes.c_bool), ("weight", ctypes.c_int),
                ("progress_fn", _PROGRESS_FN), ("progress_ctx", ctypes.c_void_p),
                ("keep_interpreter", ctypes.c_bool),
                ("python_only", ctypes.c_bool), ("qualname", ctypes.c_bool),
                ("no_lineno", ctypes.c_bool), ("full_filenames", ctypes.c_bool)]


class _ReadOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("log_fn", _LOG_FN),
                ("log_ctx", ctypes.c_void_p), ("log_level", ctypes.c_int),
                ("display_name", ctypes.c_char_p), ("format", ctypes.c_int),
                ("full_filenames", ctypes.c_bool)]


class _MergeOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("log_fn", _LOG_FN),
                ("log_ctx", ctypes.c_void_p), ("log_level", ctypes.c_int),
                ("ignore_threads", ctypes.c_bool),
                ("no_native_join", ctypes.c_bool),
                ("thread_roots", ctypes.c_int), ("min_suffix", ctypes.c_uint32),
                ("python_files", ctypes.POINTER(ctypes.c_char_p)),
                ("unmatched", ctypes.c_void_p),
                ("log_level_set", ctypes.c_bool),
                ("sources", ctypes.POINTER(ctypes.c_char_p))]


class _ReportOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("rules", ctypes.c_char_p),
                ("rules_name", ctypes.c_char_p), ("log_fn", _LOG_FN),
                ("log_ctx", ctypes.c_void_p)]


class _ReportWriteOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("by", ctypes.c_int),
                ("top", ctypes.c_uint), ("json", ctypes.c_bool)]


def _opts(cls: Any, **kw: Any) -> Any:
    o = cls(**kw)
    o.sz = ctypes.sizeof(cls)
    return o


def library_path() -> str:
    """Where libperfspy is loaded from: $PERFSPY_LIBRARY, else the copy
    installed beside this package, else the system's libperfspy.so.0."""
    env = os.environ.get("PERFSPY_LIBRARY")
    if env:
        return env
    here = os.path.join(_HERE, "libperfspy.so")
    if os.path.exists(here):
        return here
    return ctypes.util.find_library("perfspy") or "libperfspy.so.0"


def dlfilter_path() -> Optional[str]:
    """The perf dlfilter plugin shipped with the wheel (for
    ``perf script --dlfilter``), or None if this build has none."""
    p = os.path.join(_HERE, "perfspy-dlfilter.so")
    return p if os.path.exists(p) else None


_lib: Any = None
_libc: Any = None


def _load() -> Any:
    global _lib, _libc
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    P, I, S, U64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64
    PP = ctypes.POINTER(ctypes.c_void_p)
    for name, res, args in [
            ("perfspy_strerror", I, [I, ctypes.c_char_p, ctypes.c_size_t]),
            ("perfspy_version_string", S, []),
            ("perfspy_session__open", I, [S, ctypes.POINTER(_OpenOpts), PP]),
            ("perfspy_session__close", None, [P]),
            ("perfspy_session__convert", I, [P, ctypes.POINTER(_ConvertOpts), P]),
            ("perfspy_folder__new", I, [PP]),
            ("perfspy_folder__free", None, [P]),
            ("perfspy_folder__total", U64, [P]),
            ("perfspy_folder__write", I, [P, P, P]),
            ("perfspy_folder__read_pyspy", I,
             [P, S, P, ctypes.c_size_t, ctypes.POINTER(_ReadOpts), P]),
            ("perfspy_merge", I, [P, P, ctypes.POINTER(_MergeOpts), P, P]),
            ("perfspy_report__new", I, [P, ctypes.POINTER(_ReportOpts), PP]),
            ("perfspy_report__free", None, [P]),
            ("perfspy_report__write", I,
             [P, P, ctypes.POINTER(_ReportWriteOpts)])]:
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    # PERFSPY_0.3: absent from an older library, which then merges without
    # the sources the perf maps name.
    if hasattr(lib, "perfspy_session__python_source"):
        lib.perfspy_session__python_source.restype = I
        lib.perfspy_session__python_source.argtypes = [P, ctypes.c_uint32,
                                                       ctypes.POINTER(S)]
    # The library writes to a stdio FILE; open_memstream(3) makes one that
    # fills memory, from the same glibc the library uses.
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    libc.open_memstream.restype = P
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.POINTER(ctypes.c_size_t)]
    libc.fclose.restype = I
    libc.fclose.argtypes = [P]
    libc.free.restype = None
    libc.free.argtypes = [P]
    _lib, _libc = lib, libc
    return lib


def version() -> str:
    """libperfspy's version, "MAJOR.MINOR.PATCH"."""
    return _load().perfspy_version_string().decode()


class _Log:
    """A log callback that keeps the last error for Error's message and
    hands warnings to the ``perfspy`` logger."""

    def __init__(self) -> None:
        self.last_error: Optional[str] = None
        self.last_warning: Optional[str] = None
        self.fn = _LOG_FN(self._cb)

    def _cb(self, ctx: Any, level: int, msg: bytes) -> None:
        text = msg.decode("utf-8", "replace") if msg else ""
        if level <= _LOG_ERROR:
            # Not logged: it becomes the message of the Error raised.
            self.last_error = text
        elif level == _LOG_WARN:
            self.last_warning = text
            _log.warning("%s", text)
        else:
            _log.debug("%s", text)

    def error(self, err: int, path: Optional[str] = None) -> Error:
        buf = ctypes.create_string_buffer(256)
        _load().perfspy_strerror(err, buf, len(buf))
        msg = buf.value.decode("utf-8", "replace")
        detail = self.last_error or self.last_warning
        if detail and path and detail.startswith(path + ": "):
            detail = detail[len(path) + 2:]
        if detail and detail not in msg:
            msg = "%s (%s)" % (msg, detail)
        return Error(err, msg, path)


def _b(s: Optional[Any]) -> Optional[bytes]:
    if s is None:
        return None
    s = os.fspath(s)
    return s if isinstance(s, bytes) else s.encode()


def _name(path: PathLike) -> str:
    p = os.fspath(path)
    return p.decode("utf-8", "replace") if isinstance(p, bytes) else p


class _Folder:
    def __init__(self) -> None:
        h = ctypes.c_void_p()
        err = _load().perfspy_folder__new(ctypes.byref(h))
        if err:
            raise _Log().error(err)
        self.h = h

    def __enter__(self) -> "_Folder":
        return self

    def __exit__(self, *exc: Any) -> None:
        _lib.perfspy_folder__free(self.h)
        self.h = None

    def total(self) -> int:
        return int(_lib.perfspy_folder__total(self.h))


def _to_memory(write: Any, log: _Log) -> bytes:
    """Run write(FILE *) against an open_memstream and return the bytes."""
    buf, size = ctypes.c_void_p(), ctypes.c_size_t()
    fp = _libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not fp:
        raise Error(-ctypes.get_errno() or -12, "open_memstream failed")
    err = write(fp)
    rc = _libc.fclose(fp)
    try:
        data = ctypes.string_at(buf, size.value) if buf.value else b""
    finally:
        _libc.free(buf)
    if err:
        raise log.error(err)
    if rc:
        raise Error(-5, "writing to memory failed")
    return data


def _is_perf_data(path: PathLike) -> bool:
    # perf.data starts with "PERFILE2" in either byte order (file and pipe
    # layouts; reference/perf-data-format.md §1); anything else is read as
    # folded stacks, as `perfspy convert -i` does.
    try:
        with open(path, "rb") as f:
            magic = f.read(8)
    except OSError as e:
        raise Error(-(e.errno or 5), e.strerror or str(e), _name(path)) from None
    return magic in (b"PERFILE2", b"2ELIFREP") or magic == b""


_CONVERT_KEYS = {"event", "pid", "tid", "comm", "no_kernel", "threads",
                 "weight", "keep_interpreter", "python_only", "qualname",
                 "nolineno", "no_lineno", "full_filenames", "symfs",
                 "buildid_dir", "perf_map_dir", "kallsyms"}


def _fill(f: _Folder, path: PathLike, opts: Dict[str, Any], log: _Log,
          sources: Optional[List[bytes]] = None) -> None:
    """Add the stacks of @path (perf.data, or folded text) to @f; append
    to @sources the Python sources the perf maps named (perf.data)."""
    unknown = set(opts) - _CONVERT_KEYS
    if unknown:
        raise TypeError("unknown option(s): %s" % ", ".join(sorted(unknown)))
    lib = _load()
    name = _name(path)
    if not _is_perf_data(path):
        ro = _opts(_ReadOpts, log_fn=log.fn, log_level=_LOG_WARN,
                   format=_CAPTURE_AUTO,
                   full_filenames=bool(opts.get("full_filenames")))
        err = lib.perfspy_folder__read_pyspy(f.h, _b(path), None, 0,
                                             ctypes.byref(ro), None)
        if err:
            raise log.error(err, name)
        return
    weight = opts.get("weight", "samples")
    if weight not in _WEIGHTS:
        raise ValueError("weight: expected 'samples' or 'period', got %r" % (weight,))
    oo = _opts(_OpenOpts, log_fn=log.fn, log_level=_LOG_WARN,
               symfs=_b(opts.get("symfs")),
               buildid_dir=_b(opts.get("buildid_dir")),
               kallsyms=_b(opts.get("kallsyms")),
               perf_map_dir=_b(opts.get("perf_map_dir")))
    co = _opts(_ConvertOpts, event=_b(opts.get("event")),
               pid=int(opts.get("pid") or 0), tid=int(opts.get("tid") or 0),
               comm=_b(opts.get("comm")),
               no_kernel=bool(opts.get("no_kernel")),
               threads=bool(opts.get("threads")), weight=_WEIGHTS[weight],
               keep_interpreter=bool(opts.get("keep_interpreter")),
               python_only=bool(opts.get("python_only")),
               qualname=bool(opts.get("qualname")),
               no_lineno=bool(opts.get("nolineno") or opts.get("no_lineno")),
               full_filenames=bool(opts.get("full_filenames")))
    s = ctypes.c_void_p()
    err = lib.perfspy_session__open(_b(path), ctypes.byref(oo), ctypes.byref(s))
    if err:
        raise log.error(err, name)
    try:
        err = lib.perfspy_session__convert(s, ctypes.byref(co), f.h)
        if err:
            raise log.error(err, name)
        src = ctypes.c_char_p()
        i = 0
        while (sources is not None and hasattr(lib, "perfspy_session__python_source")
               and not lib.perfspy_session__python_source(s, i, ctypes.byref(src))):
            sources.append(bytes(src.value or b""))
            i += 1
    finally:
        lib.perfspy_session__close(s)


def _stacks(f: _Folder, log: _Log) -> Iterator[Stack]:
    text = _to_memory(lambda fp: _lib.perfspy_folder__write(f.h, fp, None), log)
    return _parse(text)


def _parse(text: bytes) -> Iterator[Stack]:
    # perfspy_folder__write's raw form: `frame;...;frame COUNT\n`, root
    # first; frame text never holds ';' or a newline (perfspy.h,
    # perfspy_folder__add).
    for line in text.decode("utf-8", "surrogateescape").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            yield stack.split(";"), int(count)


def read(path: PathLike, *,
         threads: bool = False, pid: int = 0, tid: int = 0,
         comm: Optional[str] = None, event: Optional[str] = None,
         python_only: bool = False, no_kernel: bool = False,
         weight: str = "samples", qualname: bool = False,
         nolineno: bool = False, keep_interpreter: bool = False,
         full_filenames: bool = False, symfs: Optional[str] = None,
         buildid_dir: Optional[str] = None,
         perf_map_dir: Optional[str] = None,
         kallsyms: Optional[str] = None) -> Iterator[Stack]:
    """The folded stacks of a perf.data file, as ``(frames, count)``.

    ``frames`` is a list of frame strings, root first, exactly as
    ``perfspy convert`` writes them (``name (file:line)``); stacks come in
    the bytewise order of convert's lines and their counts add up to the
    samples kept (``weight="period"``: sample periods). A file that is not
    perf.data is read as folded stacks (py-spy ``--format raw``), to which
    the options do not apply.

    The options are ``perfspy convert``'s: ``threads`` (a ``thread (TID):
    NAME`` root frame), ``pid``/``tid``/``comm`` (keep one process, thread
    or thread name), ``event``, ``python_only``, ``no_kernel``, ``weight``
    ("samples" or "period"), ``qualname``, ``nolineno``,
    ``keep_interpreter``, ``full_filenames``, ``symfs``, ``buildid_dir``,
    ``perf_map_dir`` and ``kallsyms`` ("" disables kernel symbols).

    The file is converted before this returns (errors raise
    :class:`Error` here, not while iterating).
    """
    opts = dict(threads=threads, pid=pid, tid=tid, comm=comm, event=event,
                python_only=python_only, no_kernel=no_kernel, weight=weight,
                qualname=qualname, nolineno=nolineno,
                keep_interpreter=keep_interpreter,
                full_filenames=full_filenames, symfs=symfs,
                buildid_dir=buildid_dir, perf_map_dir=perf_map_dir,
                kallsyms=kallsyms)
    log = _Log()
    with _Folder() as f:
        _fill(f, path, opts, log)
        return _stacks(f, log)


def report(path: PathLike, *, rules: Optional[str] = None, top: int = 5,
           **options: Any) -> Dict[str, Any]:
    """Where the CPU goes: ``perfspy report --json`` as a dict.

    It holds ``"samples"`` (the total), ``"categories"`` (a list of dicts
    with ``"name"``, ``"samples"``, ``"share"``, ``"python"``, ``"native"``,
    ``"threads"``, ``"syscalls"``), ``"threads"`` and ``"python"`` rows;
    ``top`` entries per list. ``rules`` is rules text (see the README's
    `perfspy report`); None uses the built-in rules. Other keyword
    options are :func:`read`'s; ``threads`` defaults to True, since the
    report's thread rows come from the thread root frames.
    """
    options.setdefault("threads", True)
    log = _Log()
    lib = _load()
    with _Folder() as f:
        _fill(f, path, options, log)
        ro = _opts(_ReportOpts, rules=_b(rules),
                   rules_name=b"<rules>" if rules is not None else None,
                   log_fn=log.fn)
        r = ctypes.c_void_p()
        err = lib.perfspy_report__new(f.h, ctypes.byref(ro), ctypes.byref(r))
        if err:
            raise log.error(err)
        try:
            wo = _opts(_ReportWriteOpts, top=max(0, int(top)), json=True)
            text = _to_memory(lambda fp: lib.perfspy_report__write(
                r, fp, ctypes.byref(wo)), log)
        finally:
            lib.perfspy_report__free(r)
    result: Dict[str, Any] = json.loads(text.decode("utf-8", "surrogateescape"))
    return result


def merge(perf: PathLike, pyspy: Union[PathLike, Sequence[PathLike]], *,
          ignore_threads: bool = False, no_native_join: bool = False,
          thread_roots: Optional[str] = None, min_suffix: int = 0,
          python_files: Optional[Iterable[str]] = None,
          sources: Optional[Iterable[PathLike]] = None,
          **options: Any) -> Iterator[Stack]:
    """``perfspy merge``: py-spy's Python lines over perf's samples.

    ``perf`` is a perf.data file (converted with :func:`read`'s keyword
    options) or folded stacks; ``pyspy`` one py-spy capture (raw or
    speedscope) or a list of them. Returns ``(frames, count)`` like
    :func:`read`; the counts add up to perf's total. ``thread_roots`` is
    "keep", "like-pyspy" or "drop"; ``python_files`` fnmatch patterns of
    files that hold Python code without a .py suffix. ``sources``: Python
    source files or directories py-spy's file names are found under (as
    ``--source``); the sources perf.data's perf maps name are added. A
    py-spy line is joined on the definition enclosing it in its source.

    As the CLI does, perf.data is converted with thread roots (so that the
    merge matches per thread) and ``thread_roots`` defaults to
    "like-pyspy" for perf.data (those roots stay only if the captures have
    them), "keep" for folded input.
    """
    options.setdefault("threads", True)
    if thread_roots is None:
        thread_roots = "like-pyspy" if _is_perf_data(perf) else "keep"
    if thread_roots not in _ROOTS:
        raise ValueError("thread_roots: expected keep, like-pyspy or drop, got %r"
                         % (thread_roots,))
    captures = [pyspy] if isinstance(pyspy, (str, bytes, os.PathLike)) else list(pyspy)
    log = _Log()
    lib = _load()
    with _Folder() as pf, _Folder() as yf, _Folder() as out:
        for c in captures:
            ro = _opts(_ReadOpts, log_fn=log.fn, log_level=_LOG_WARN,
                       format=_CAPTURE_AUTO)
            err = lib.perfspy_folder__read_pyspy(yf.h, _b(c), None, 0,
                                                 ctypes.byref(ro), None)
            if err:
                raise log.error(err, _name(c))
        srcs: List[bytes] = [os.fsencode(p) for p in (sources or [])]
        _fill(pf, perf, options, log, srcs)
        sarr = (ctypes.c_char_p * (len(srcs) + 1))(*srcs, None)
        pats = [_b(p) for p in (python_files or [])]
        arr = (ctypes.c_char_p * (len(pats) + 1))(*pats, None)
        mo = _opts(_MergeOpts, log_fn=log.fn, log_level=_LOG_WARN,
                   ignore_threads=ignore_threads,
                   no_native_join=no_native_join,
                   thread_roots=_ROOTS[thread_roots],
                   min_suffix=int(min_suffix),
                   python_files=ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
                   if pats else None, log_level_set=True,
                   sources=ctypes.cast(sarr, ctypes.POINTER(ctypes.c_char_p))
                   if srcs else None)
        err = lib.perfspy_merge(pf.h, yf.h, ctypes.byref(mo), out.h, None)
        if err:
            raise log.error(err)
        return _stacks(out, log)
