/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Python source scanner (pyscan.c), libc only; never installed. It
 * turns a source file into a definition table: each def, async def, class
 * and `type` alias with its qualname, co_firstlineno and extent. Two
 * users: frames/python.c (qualname -> first line, for perf-map frames)
 * and folded/merge_frames.c (line -> enclosing definition, for py-spy
 * frames; docs/design.md §3.2), which is why it lives in common/.
 */
#ifndef PERFSPY_PYSCAN_H
#define PERFSPY_PYSCAN_H

#include <stddef.h>

/*
 * Scan Python source @src (@len bytes, any newline convention, need
 * not be NUL-terminated) and call @fn once per def, async def, class and
 * `type` alias in source order with its CPython qualname and
 * co_firstlineno. @fn returns 0 to go on, anything else to stop with that
 * value. Returns 0, @fn's value, -ENOMEM, or -EINVAL when the source is
 * nested too deeply to scan (entries reported so far stand). Exposed for
 * tests and tools.
 */
typedef int (*py_def_fn)(void *arg, const char *qualname, int line);
int py_scan_source(const char *src, size_t len, py_def_fn fn, void *arg);

/* Bytes a buffer given to py_scan_buffer() must have allocated past its
 * length (the scanner looks up to 2 bytes ahead without bound checks). */
#define PY_PAD 4

/* A definition table: qualname -> line (opaque). */
struct deftab;

/*
 * Scan @buf (@len bytes, PY_PAD more allocated; rewritten in place) into a
 * new raw, unsorted table in *@out, which the caller frees with
 * py_tab_free() even on error. Returns 0, -ENOMEM, or -EINVAL when the
 * source is nested too deeply (the table then holds what came before).
 */
int py_scan_buffer(char *buf, size_t len, struct deftab **out);

/*
 * In a raw table (not finalised: source order), the definitions whose
 * extents hold @line, innermost first, one per call: set *@pos to
 * SIZE_MAX for the first call, and pass it on unchanged. Each gives the
 * definition's co_firstlineno (a decorated one starts at its first
 * decorator) and its qualname in *@qualname (NUL-terminated, owned by @t);
 * 0 when none is left (module level). A definition extends to the line
 * before the first logical line indented no deeper than its header, or to
 * the end of the file. (A function's frame can be on the `def` line of a
 * function nested in it: the caller looks outward for its name.)
 */
int py_tab_enclosing(const struct deftab *t, int line, size_t *pos, const char **qualname);

/* Sort for py_tab_lookup(); a qualname defined twice keeps no line. */
void py_tab_finalize(struct deftab *t);

/* Line of qualname @q (@n bytes, no NUL needed) in a finalised table, 0
 * if absent or ambiguous. */
int py_tab_lookup(const struct deftab *t, const char *q, size_t n);

/* Heap bytes held by @t. */
size_t py_tab_bytes(const struct deftab *t);

/* Free @t; NULL is accepted. */
void py_tab_free(struct deftab *t);

#endif
