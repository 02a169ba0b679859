/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The frame grammar: the one set of rules by which every reader of
 * folded frame text (the SVG and speedscope writers, the report, the
 * py-spy readers, the merge) splits a frame into its parts and tells its
 * kind. Frame text is what the folder holds (docs/output.md; docs/pyspy-formats.md §1.2-1.6, §6):
 *
 *   Python   `name (file.py:line)`, `name (file)`, pseudo files such as
 *            `<frozen importlib._bootstrap>` (§1.11), or an unspliced
 *            perf-map name `py::qualname:file.py` (no file part)
 *   native   `func (file:line)`, `func (libname)`, `0x<hex> (libname)`,
 *            `[unknown]`
 *   kernel   `func ([kernel.kallsyms])` (stackcollapse-perf's `func_[k]`
 *            too)
 *   thread   every py-spy version's `--threads` root (§1.5):
 *            `thread (TID): NAME` (0.4.0+), `thread (TID)` (0.3.4+),
 *            `thread TID` (0.3.0-0.3.3), `thread TID ()` (0.2.x); TID is a
 *            decimal OS thread id or a 0x-hex pthread id
 *   process  `process PID:"cmdline"` (§1.6)
 *
 * Nothing here allocates, prints or keeps state; the parts point into
 * the text they were parsed from.
 */
#ifndef PERFSPY_FRAME_H
#define PERFSPY_FRAME_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

enum frame_kind {
	FRAME_NATIVE = 0,
	FRAME_PYTHON,
	FRAME_KERNEL,
	FRAME_THREAD,  /* a `thread ...` root */
	FRAME_PROCESS, /* a `process PID:"..."` root */
};

struct frame_parts {
	enum frame_kind kind;
	/* The name part: the text before ` (FILE)`, the whole text when
	 * there is no file part and for roots; `func_[k]` without `_[k]`. */
	const char *func;
	size_t func_len;
	/* Inside the parentheses that close the text, without `:LINE`;
	 * NULL when the text has no ` (...)` part. */
	const char *file;
	size_t file_len;
	long line;     /* 0 when absent; py-spy writes -1 for unknown lines */
	bool has_line; /* a `:LINE` was split off (even `:0`) */
	/* FRAME_THREAD: the id ("1234", "0x7F3A2B1C0700") and the name of
	 * `thread (TID): NAME` (NULL when the root has no name). */
	const char *tid;
	size_t tid_len;
	const char *thread_name;
	size_t thread_name_len;
};

/* Split @len bytes of frame text @s into @p. */
void frame_parse(const char *s, size_t len, struct frame_parts *p);

/*
 * The same, where files matching one of @py_globs (a NULL-terminated list
 * of fnmatch() patterns, or NULL) are Python files too: scripts without a
 * .py suffix, as `merge --python-file` names them.
 */
void frame_parse_globs(const char *s, size_t len, const char *const *py_globs,
		       struct frame_parts *p);

/* Just the kind. */
enum frame_kind frame_kind_of(const char *s, size_t len);

static inline bool frame_is_root(enum frame_kind k)
{
	return k == FRAME_THREAD || k == FRAME_PROCESS;
}

/* Is the id of thread root @p a decimal OS thread id (*@tid)? A 0x-hex
 * pthread id is not one (§1.5). */
bool frame_tid_decimal(const struct frame_parts *p, u64 *tid);

/*
 * The unnamed form of thread root @p, `thread (TID)`, as every reader
 * names a thread whatever version wrote it: frame_thread_text_len(@p)
 * bytes written to @buf (no NUL).
 */
static inline size_t frame_thread_text_len(const struct frame_parts *p)
{
	return p->tid_len + 9;
}
void frame_thread_text(const struct frame_parts *p, char *buf);

/* Where a `process PID:"` head ends in @s (just past the quote), or 0 if
 * @s does not start with one. The raw reader uses it to re-join a command
 * line that holds ';' (§1.6). */
size_t frame_process_head(const char *s, size_t len);

/*
 * Grouping by function (docs/output.md §7.1, the flame graph's and
 * speedscope's frames): a native frame with a source line,
 * `func (file.c:LINE)`, belongs to the group `func (file.c)`. Returns the
 * length of its first part in @s, `func (file.c` (the group's text is
 * that and a closing parenthesis), or 0 when the frame is its own group
 * (Python, kernel and roots, native frames without a line).
 */
size_t frame_group_prefix(const char *s, size_t len, const struct frame_parts *p);

/* Library families, one hue each in the flame graph (docs/output.md
 * §7.2). */
enum frame_lib {
	FLIB_OTHER = 0, /* the program itself and libraries not listed */
	FLIB_CRT,	/* libc, libm, ld.so, libstdc++, libgcc_s */
	FLIB_PYTHON,	/* libpython, the python executable */
	FLIB_TORCH,	/* libtorch*, libc10* */
	FLIB_CUDA,	/* libcuda, libcudart, libcublas, libnccl, libnv* */
	FLIB_MATH,	/* BLAS, LAPACK, OpenMP, oneDNN, NumPy's umath */
	FLIB_UNKNOWN,	/* no mapping or no name: `0x.. (?)`, `[unknown]` */
	FLIB_KERNEL,
	FLIB_NR
};

/* The family of a library file name (a path or a base name). */
enum frame_lib frame_lib_of(const char *lib, size_t len);
/* The family of a native or kernel frame from its text alone: its file
 * part when that names a library; a source file is FLIB_OTHER. */
enum frame_lib frame_lib_family(const struct frame_parts *p);

#endif
