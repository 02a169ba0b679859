/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Time ordering of records. perf record drains per-CPU ring buffers one
 * after another, so file order is not time order; FINISHED_ROUND marks
 * the point where everything older than the previous round's newest
 * record has been written (docs/perf-data-format.md §1.7, the
 * comment above perf_event__process_finished_round in session.c).
 *
 * Records are queued in arrival order; at each round the caller pops
 * everything up to the previous round's maximum, oldest first, equal
 * times in arrival order. The queue is one array: a sorted part, popped
 * from its head, then the records that arrived since the last pop,
 * which the first pop sorts and merges in (docs/design.md §6.20).
 * Records whose view is volatile (streams, decompressed data) are
 * copied.
 */
#ifndef PERFSPY_ORDER_H
#define PERFSPY_ORDER_H

#include "reader.h"

struct ord_ent {
	u64 time;
	const struct perf_event_header *hdr;
	u64 offset;
	u32 dig;    /* rd_rec.dig */
	bool owned; /* a copy to free after delivery */
};

_Static_assert(sizeof(struct ord_ent) <= 32, "queue entries: 32 bytes");

struct order {
	struct ord_ent *ents; /* [head, sorted): in order; [sorted, n): arrivals */
	size_t head, sorted, n, cap;
	struct ord_ent *tmp;  /* the merge sort's other half */
	size_t cap_tmp;
	u64 max_time;	  /* newest time queued so far */
	u64 round_limit;  /* flush limit set by the last FINISHED_ROUND */
	u64 flushed_upto; /* time of the newest record delivered */
	size_t owned_bytes;
	size_t max_owned; /* budget of copies: ORD_MAX_OWNED (tests set less) */
};

void ord_init(struct order *o);
void ord_free(struct order *o);

/* Queue a record (copied when rec->volatile_). 0 or -ENOMEM. */
int ord_push(struct order *o, const struct rd_rec *rec, u64 time);

/* Records queued and not yet popped. */
static inline size_t ord_queued(const struct order *o)
{
	return o->n - o->head;
}

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
 * with *@limit the time to flush up to (half the queued span). -ENOMEM
 * if the queue could not be sorted to find its oldest record. */
int ord_over_budget(struct order *o, u64 *limit);

/* Pop the oldest record with time <= @limit into *@out; 1 if popped, 0
 * if none, -ENOMEM when the arrivals could not be sorted (the queue is
 * unchanged then). */
int ord_pop(struct order *o, u64 limit, struct ord_ent *out);

/* Free a delivered entry's copy, if any. */
void ord_done(struct order *o, struct ord_ent *e);

/* Oldest queued file offset (UINT64_MAX when empty). */
u64 ord_min_offset(const struct order *o);

#endif
