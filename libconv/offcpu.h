/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Off-CPU stretches for --idle (issue 10, docs/top.md §3): per thread, the
 * stack it left the CPU with (a sched:sched_switch sample at switch-out)
 * and when, until the thread is seen again (its switch-in, or any later
 * event of it); the stretch's length is the stack's weight, in whole
 * milliseconds with the remainder carried per thread, so that many short
 * waits still add up. On-CPU samples use the same carry (their period in
 * ns), so that a folder of an --idle conversion is milliseconds throughout.
 */
#ifndef PERFSPY_OFFCPU_H
#define PERFSPY_OFFCPU_H

#include "common/hash.h"
#include "common/util.h"

struct offcpu_thread {
	u32 tid;
	bool open;    /* off the CPU since @t_out with @ids */
	u64 t_out;
	u32 *ids;     /* folder frame ids, root first */
	u32 nr, cap;
	u64 carry_ns; /* below a millisecond, not yet weighed */
};

struct offcpu {
	struct idmap by_tid; /* tid -> index + 1 */
	struct offcpu_thread *thr;
	size_t nr, cap;
	u64 nr_open, nr_closed, nr_preempted;
};

void offcpu_free(struct offcpu *o);

/* Thread @tid's state, made on first sight; NULL on ENOMEM. */
struct offcpu_thread *offcpu_thread(struct offcpu *o, u32 tid);

/* Whole milliseconds of @ns more of @t's time; the rest is carried. */
u64 offcpu_ms(struct offcpu_thread *t, u64 ns);

/* @t left the CPU blocked at @time with the stack @ids[0..nr). */
int offcpu_out(struct offcpu *o, struct offcpu_thread *t, u64 time, const u32 *ids, u32 nr);

/* @t runs again at @time: 1 and its stretch's stack and milliseconds
 * (0 ms is possible: below a millisecond, carried), or 0 if it had none. */
int offcpu_in(struct offcpu *o, struct offcpu_thread *t, u64 time, u64 *ms);

#endif
