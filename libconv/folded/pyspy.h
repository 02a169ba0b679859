/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading py-spy captures into a folder (docs/pyspy-formats.md):
 * raw folded stacks in every variant py-spy has written (§1.2-§1.8, the
 * reader checklist in §6) and speedscope JSON (§2.1). Frames are told
 * apart by the frame grammar (common/frame.h), as everywhere else.
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
#include "common/frame.h"
#include "common/util.h"

/*
 * A frame's kind as the py-spy side (the readers' statistics, the merge)
 * counts it: the grammar's kind (common/frame.h), except that kernel
 * frames are native frames, and so is a Python frame without a file part
 * (an unspliced perf-map `py::` name): py-spy captures hold neither, and
 * the merge keys Python frames by their file and line.
 */
static inline enum frame_kind pys_kind_of(const struct frame_parts *p)
{
	if (p->kind == FRAME_KERNEL || (p->kind == FRAME_PYTHON && !p->file))
		return FRAME_NATIVE;
	return p->kind;
}

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
	u8 *kinds; /* folder frame id -> pys_kind_of() + 1, 0 = not yet */
	size_t nr_kinds, cap_kinds;
	bool full_filenames;
};

/* Add the frame text (or an interned frame) to the stack being built
 * (pyspy_stack.c). 0 or -ENOMEM. */
int pys_push(struct pys_reader *r, const char *s, size_t len);
int pys_push_id(struct pys_reader *r, u32 id);
/* pys_kind_of() a frame pushed before. */
int pys_kind(const struct pys_reader *r, u32 id);
/* Add the built stack with @weight, count it, and start a new one. */
int pys_commit(struct pys_reader *r, u64 weight);

int pys_read_raw(struct pys_reader *r, const char *buf, size_t len);
int pys_read_speedscope(struct pys_reader *r, const char *buf, size_t len);

#endif
