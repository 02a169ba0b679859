/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the flame graph, speedscope and report writers share: reading a
 * folded frame's text back into its parts and kind, a buffered output
 * sink with XML and JSON escaping, and a u32 -> u64 map.
 *
 * Frame text is what the folder holds (DESIGN.md "Output contract"):
 *   Python   `name (short_file:line)`, `name (file)`, pseudo files such as
 *            `<frozen importlib._bootstrap>`, or an unspliced perf-map
 *            name `py::qualname:file.py`
 *   native   `func (file:line)`, `func (libname)`, `0x<hex> (libname)`
 *   kernel   `func ([kernel.kallsyms])` (stackcollapse-perf's `func_[k]`
 *            too)
 *   roots    `thread (TID): NAME`, `thread (TID)`, `process PID:"cmd"`
 *            (reference/pyspy-formats.md §1.5-1.6)
 * Nothing here prints on its own or keeps global state.
 */
#ifndef PERFSPY_WRITE_H
#define PERFSPY_WRITE_H

#include <stdio.h>

#include "perfspy.h"
#include "util.h"

enum frame_kind {
	FRAME_NATIVE = 0,
	FRAME_PYTHON,
	FRAME_KERNEL,
	FRAME_THREAD,  /* `thread (TID)...` root */
	FRAME_PROCESS, /* `process PID:...` root */
};

struct frame_parts {
	enum frame_kind kind;
	const char *func; /* the name part (the whole text for roots) */
	size_t func_len;
	const char *file; /* inside the last "(...)" without ":LINE"; NULL if none */
	size_t file_len;
	unsigned long line; /* 0: none */
};

/* Split @len bytes of frame text @s into parts (pointers into @s). */
void frame_parse(const char *s, size_t len, struct frame_parts *p);

/* Just the kind. */
enum frame_kind frame_kind_of(const char *s, size_t len);

static inline bool frame_is_root(enum frame_kind k)
{
	return k == FRAME_THREAD || k == FRAME_PROCESS;
}

/*
 * Buffered writing to a FILE the caller owns: errors stick in ->err
 * (-EIO) and every later call is a no-op, so writers check once at the
 * end. Formatting whole documents through one stdio call per token was
 * the cost centre of the raw writer (see fold.c), hence the buffer.
 */
struct wout {
	FILE *out;
	char *buf;
	size_t len, cap;
	int err;
};

int wout_init(struct wout *w, FILE *out);     /* 0 or -ENOMEM */
int wout_finish(struct wout *w);	      /* flush, free; 0 or -EIO */
void wout_put(struct wout *w, const char *s, size_t n);
void wout_str(struct wout *w, const char *s);
void wout_fmt(struct wout *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void wout_u64(struct wout *w, u64 v);
/* @v / @div as a decimal with @digits (1..6) fraction digits, rounded
 * half up, in integer arithmetic so the bytes never depend on the libc's
 * float formatting. @div must be > 0. */
void wout_fixed(struct wout *w, u64 v, u64 div, unsigned digits);

/*
 * Escaped text. XML: & < > " ' as entities, characters XML 1.0 forbids
 * (controls other than tab, U+FFFE/U+FFFF) and malformed UTF-8 as U+FFFD.
 * JSON: the inside of a string literal (no quotes): " \ and controls
 * escaped, malformed UTF-8 as \ufffd (RFC 8259 §7 wants valid Unicode).
 */
void wout_xml(struct wout *w, const char *s, size_t n);
void wout_json(struct wout *w, const char *s, size_t n);

/* Length of the valid UTF-8 sequence at @s (1..4), 0 if malformed. */
size_t utf8_len(const unsigned char *s, size_t n);

/* Bytes taken by the first @chars characters of @s (a malformed byte
 * counts as one character). */
size_t utf8_prefix(const char *s, size_t n, size_t chars);

#endif
