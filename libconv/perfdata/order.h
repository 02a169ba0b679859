/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Time ordering of records. perf record drains per-CPU ring buffers one
 * after another, so file order is not time order; FINISHED_ROUND marks
 * the point where everything older than the previous round's newest
 * record has been written (docs/perf-data-format.md §1.7, the
 * comment above perf_event__process_finished_round in session.c).
 *
 * A min-heap keyed by (time, arrival) holds records; at each round the
 * caller pops everything up to the previous round's maximum. Records
 * whose view is volatile (streams, decompressed data) are copied.
 */
#ifndef PERFSPY_ORDER_H
#define PERFSPY_ORDER_H

#include "reader.h"

struct ord_ent {
	u64 time;
	u64 seq;
	const struct perf_event_header *hdr;
	u64 offset;
	bool owned; /* a copy to free after delivery */
};

struct order {
	struct ord_ent *heap;
	size_t n, cap;
	u64 seq;
	u64 max_time;	  /* newest time queued so far */
	u64 round_limit;  /* flush limit set by the last FINISHED_ROUND */
	u64 flushed_upto; /* time of the newest record delivered */
	size_t owned_bytes;
};

void ord_init(struct order *o);
void ord_free(struct order *o);

/* Queue a record (copied when rec->volatile_). 0 or -ENOMEM. */
int ord_push(struct order *o, const struct rd_rec *rec, u64 time);

/* At FINISHED_ROUND: returns the limit to flush up to and moves the
 * next limit to the newest time seen. */
u64 ord_round(struct order *o);

/* Whether a record of @time comes after a newer one was delivered (it
 * is still queued and delivered, but out of order). */
static inline bool ord_late(const struct order *o, u64 time)
{
	return time < o->flushed_upto;
}

/* After a push: true when the copies queued exceed the memory budget,
 * with *@limit the time to flush up to (half the queued span). */
bool ord_over_budget(const struct order *o, u64 *limit);

/* Pop the oldest record with time <= @limit into *@out; 1 if popped. */
int ord_pop(struct order *o, u64 limit, struct ord_ent *out);

/* Free a delivered entry's copy, if any. */
void ord_done(struct order *o, struct ord_ent *e);

/* Oldest queued file offset (UINT64_MAX when empty). */
u64 ord_min_offset(const struct order *o);

#endif
