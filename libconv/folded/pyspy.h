/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading py-spy captures into a folder (reference/pyspy-formats.md):
 * raw folded stacks in every variant py-spy has written (§1.2-§1.8, the
 * reader checklist in §6) and speedscope JSON (§2.1). Also the frame-text
 * classifier that the merge shares: which folded frames are Python
 * frames, native frames, or `thread`/`process` pseudo-frames.
 *
 * Invariants: a malformed line or sample costs that line or sample (it is
 * counted in pys_stats.bad), never the capture; no read goes past the
 * buffer; nothing prints (messages go to the log sink).
 */
#ifndef PERFSPY_PYSPY_H
#define PERFSPY_PYSPY_H

#include <stdbool.h>
#include <stddef.h>

#include "perfspy.h"
#include "common/util.h"

enum pys_kind {
	PYS_NATIVE = 0,	 /* anything else: `func (file:line)`, `func (lib)`, `0x.. (?)` */
	PYS_PYTHON = 1,	 /* `name (file.py[:line])`, `name (<frozen x>[:line])` */
	PYS_THREAD = 2,	 /* `thread (TID)[: NAME]` (and the pre-0.3.4 forms) */
	PYS_PROCESS = 3, /* `process PID:"cmdline"` */
};

/*
 * One frame's text split into its parts (pointers into the text). For
 * `NAME (FILE:LINE)` the FILE is the part inside the parentheses that
 * match the last ')' (so `f (a (1).py:3)` has FILE `a (1).py`), LINE the
 * digits after FILE's last ':' (pyspy-formats.md §6).
 */
struct pys_frame {
	enum pys_kind kind;
	const char *name; /* function name; for PYS_THREAD the thread name */
	size_t name_len;
	const char *file; /* NULL when the frame has no `(FILE...)` part */
	size_t file_len;
	long line;	  /* 0 when absent */
	bool has_line;
	const char *tid;  /* PYS_THREAD: "1234" or "0x7F.." */
	size_t tid_len;
};

/*
 * Classify @s (@len bytes). Python frames are those whose FILE ends in
 * ".py"/".pyw" or is a <pseudo file> (`<frozen ...>`, `<string>`,
 * `<stdin>`), as CPython names code objects; @extra, when not NULL, is a
 * NULL-terminated list of fnmatch() patterns for more Python files
 * (scripts without a .py suffix).
 */
void pys_parse_frame(const char *s, size_t len, const char *const *extra,
		     struct pys_frame *fr);

/* Does a `thread (...)` text parse as the decimal OS thread id *@tid? */
bool pys_tid_decimal(const struct pys_frame *fr, u64 *tid);

struct pys_stats {
	int format;	    /* enum perfspy_capture_format actually read */
	u64 samples;	    /* weight added */
	u64 stacks;	    /* lines / speedscope samples / evented intervals */
	u64 bad;	    /* malformed lines, samples or events skipped */
	u64 thread_samples; /* weight of stacks with a thread root */
	u64 native_samples; /* weight of stacks with a native frame after a Python frame */
};

/* Per-read state shared by the raw and speedscope readers. */
struct pys_reader {
	struct perfspy_folder *f;
	const struct log_sink *log;
	const char *name; /* for messages */
	struct pys_stats st;
	u32 *ids; /* the stack being built */
	size_t nr_ids, cap_ids;
	u8 *kinds; /* folder frame id -> enum pys_kind + 1, 0 = not yet */
	size_t nr_kinds, cap_kinds;
	bool full_filenames;
};

/* Add the frame text (or an interned frame) to the stack being built.
 * 0 or -ENOMEM. */
int pys_push(struct pys_reader *r, const char *s, size_t len);
int pys_push_id(struct pys_reader *r, u32 id);
/* enum pys_kind of a frame pushed before. */
int pys_kind(const struct pys_reader *r, u32 id);
/* Add the built stack with @weight, count it, and start a new one. */
int pys_commit(struct pys_reader *r, u64 weight);

int pys_read_raw(struct pys_reader *r, const char *buf, size_t len);
int pys_read_speedscope(struct pys_reader *r, const char *buf, size_t len);

#endif
