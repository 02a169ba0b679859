/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to python.c and pyscan.c; never installed. The Python source
 * scanner (pyscan.c) turns a source file into a definition table,
 * qualname -> co_firstlineno, which python.c loads per file, keeps under
 * its memory budget and looks frame names up in.
 */
#ifndef PERFSPY_PYSCAN_H
#define PERFSPY_PYSCAN_H

#include "python.h"

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
