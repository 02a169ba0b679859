/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Python side of frame naming: CPython perf-map names
 * (`py::<qualname>:<filename>`, docs/cpython-perf.md §1.3)
 * rendered as py-spy 0.4.2 raw frames, `name (short_file:line)`
 * (docs/output.md, docs/pyspy-formats.md §1.2-1.4), and
 * the py-spy `--native` rule for which interpreter-internal native frames
 * to drop (docs/pyspy-formats.md §1.8 item 4).
 *
 * Line numbers: perf carries none (docs/cpython-perf.md §4), so a frame
 * gets the function's first line, as `py-spy --function` prints it
 * (co_firstlineno). It is found by reading the source file once and
 * scanning it for def/class/type statements, rebuilding qualnames the way
 * CPython's compiler does (compiler_set_qualname): `Outer.Inner.method`,
 * `outer.<locals>.inner`, a name declared `global` in its parent scope is
 * bare, a decorated definition starts at its first decorator.
 * Known limits, all of which give "no line" rather than a wrong one except
 * the first: a source file edited since the profile was taken gives the
 * lines of the file as it is now; non-UTF-8 sources with non-ASCII names,
 * identifiers that NFKC normalisation changes, and `global` statements that
 * follow a `:` on the same line are not modelled; PEP 695 TypeVar bound
 * evaluators have no line.
 *
 * Nothing here prints or exits; messages go to py_opts.log.
 */
#ifndef PERFSPY_PYTHON_H
#define PERFSPY_PYTHON_H

#include <stdbool.h>
#include <stddef.h>

#include "common/pyscan.h"
#include "common/util.h"

/* Rendering state and caches; one per conversion. Not thread-safe. */
struct py_ctx;

struct py_opts {
	/*
	 * Name style: false (default) prints co_name, the last component of
	 * the qualname (`forward`), as py-spy 0.4.2 does; true prints the
	 * whole qualname (`Linear.forward`, `outer.<locals>.inner`).
	 */
	bool qualname;
	/* Drop line numbers: `name (file)` (py-spy --nolineno). */
	bool no_lineno;
	/* Keep the file name as CPython recorded it (py-spy --full-filenames). */
	bool full_filenames;
	/*
	 * NULL, or a directory under which the recorded paths are looked up
	 * (profiles taken on another machine: /src/app.py is read as
	 * SOURCE_ROOT/src/app.py). When set, only that tree is consulted.
	 * Copied by py_ctx_new().
	 */
	const char *source_root;
	/* NULL, or where messages go; borrowed, must outlive the ctx. */
	const struct log_sink *log;
};

/*
 * Create a context. @opts may be NULL (all defaults). On success *@out
 * owns the new context; free it with py_ctx_free().
 * Returns 0 or -ENOMEM.
 */
int py_ctx_new(const struct py_opts *opts, struct py_ctx **out);

/* Free @ctx and every string it handed out. Accepts NULL. */
void py_ctx_free(struct py_ctx *ctx);

/*
 * If @jit_name is a CPython perf-map name "py::<qualname>:<filename>"
 * (split at the FIRST ':' after "py::", docs/cpython-perf.md §1.3),
 * render the py-spy frame text into *@out and return 1:
 *   name (short_file:line)   line known (the function's first line;
 *                            a module body is line 1)
 *   name (short_file)        no line: <lambda>, <genexpr>, ..., a qualname
 *                            defined twice in its file, no readable
 *                            source, or py_opts.no_lineno
 *   name                     empty filename
 * short_file is py-spy's rule (the file plus the enclosing directories that
 * hold an __init__.py) when the source exists here; otherwise the part
 * after the last /site-packages/ or /dist-packages/, else after
 * /lib/pythonX.Y/, else the basename. Pseudo files such as
 * `<frozen importlib._bootstrap>` or `<string>` are kept as they are.
 * The text may contain ';' (the folder sanitises frame text).
 *
 * *@out belongs to @ctx and stays valid until py_ctx_free(); the same input
 * always yields the same pointer (results are cached per distinct name).
 * Returns 1, 0 when @jit_name does not start with "py::" (*@out is not
 * touched), or -ENOMEM. Source files that cannot be read only cost their
 * line numbers (logged at debug level).
 */
int py_render(struct py_ctx *ctx, const char *jit_name, const char **out);

/*
 * Source @idx of those found for the files frames named so far (in order
 * of first sight): where it is read, owned by @ctx. NULL past the end.
 * For perfspy_merge_opts.sources (the merge resolves py-spy lines to
 * definitions in the same files).
 */
const char *py_ctx_source(const struct py_ctx *ctx, size_t idx);
/* Append the sources of @src that @dst lacks (the python sources of -j N
 * worker sessions, issue 16). 0 or -ENOMEM. */
int py_ctx_add_sources(struct py_ctx *dst, const struct py_ctx *src);

/*
 * Whether py-spy --native would drop this native frame as interpreter
 * internals (docs/pyspy-formats.md §1.8 item 4). True for every frame in the
 * python executable or libpython (including _PyEval_EvalFrameDefault,
 * whose place the Python frames take, and frames without a symbol), except
 * those whose first token (the name split on '_' and '.', empty parts
 * skipped) is one of time, sys, gc, os, unicode, thread, stringio, sre,
 * PyGilState, PyThread, lock (`time_sleep`, `lock_PyThread_acquire_lock`).
 * Also true for the process/thread root frames __libc_start_main,
 * __libc_start_call_main, _start, __clone, __clone3 (clone, clone3 as
 * DWARF names them) and start_thread when
 * they are in libc, libpthread or the dynamic loader.
 * @func is the symbol name (may be NULL), @dso_path the binary path (may be
 * NULL). Pure: no I/O, O(length of the strings).
 */
bool py_is_interpreter_frame(const char *func, const char *dso_path);

/*
 * Whether @dso_path (any directory, possibly with perf's " (deleted)"
 * suffix) is the interpreter: python, python3, python3.12, python3.13t,
 * ..., or libpython3.12.so, libpython3.12d.so.1.0, libpython3.so, ...
 * NULL gives false. Pure.
 */
bool py_is_interpreter_dso(const char *dso_path);

/* Whether @dso_path is libc, libpthread or the dynamic loader, where the
 * root frames py_is_interpreter_frame() names are. NULL gives false. */
bool py_is_libc_dso(const char *dso_path);

/* The source scanner itself (py_scan_source()) is common/pyscan.h's: the
 * merge reads sources too, and folded/ may not use frames/. */

#endif
