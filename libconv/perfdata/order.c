// SPDX-License-Identifier: GPL-2.0
/*
 * Round-based time ordering (see order.h). Equal timestamps keep arrival
 * order, as perf's ordered_events queue does.
 *
 * Why a sorted array and not a heap (docs/design.md §6.20): a round's
 * records are a few runs already in time order, one per CPU buffer perf
 * drained (perf_mmap__push in tools/perf/builtin-record.c writes each
 * ring buffer's records as they were written, oldest first). A binary
 * heap paid log2(queue) unpredictable comparisons and moves of 40-byte
 * entries per record: 10% of the converting thread on the system-wide
 * build profile (issue 16). Here a round's arrivals are split into those
 * runs, merged pairwise (a system-wide file on two CPUs: one or two
 * merges), and merged once into what the last flush left queued.
 */
#include "order.h"

#include <errno.h>
#include <stdlib.h>

/* Bytes of record copies (streams, decompressed data) the queue may hold
 * before it flushes early. */
#define ORD_MAX_OWNED (256u << 20)

void ord_init(struct order *o)
{
	memset(o, 0, sizeof(*o));
	o->max_owned = ORD_MAX_OWNED;
}

void ord_free(struct order *o)
{
	size_t i;

	for (i = o->head; i < o->n; i++)
		if (o->ents[i].owned)
			free((void *)o->ents[i].hdr);
	free(o->ents);
	free(o->tmp);
	ord_init(o);
}

int ord_push(struct order *o, const struct rd_rec *rec, u64 time)
{
	struct ord_ent e = { time, rec->hdr, rec->offset, rec->dig, false };
	int err;

	err = ensure_mem((void **)&o->ents, &o->cap, sizeof(*o->ents), o->n + 1);
	if (err)
		return err;
	if (rec->volatile_) {
		u16 size = hdr_size(rec->hdr);
		void *copy = malloc(size);

		if (!copy)
			return -ENOMEM;
		memcpy(copy, rec->hdr, size);
		e.hdr = copy;
		e.owned = true;
		o->owned_bytes += size;
	}
	if (time > o->max_time)
		o->max_time = time;
	o->ents[o->n++] = e;
	return 0;
}

u64 ord_round(struct order *o)
{
	u64 limit = o->round_limit;

	o->round_limit = o->max_time;
	return limit;
}

/* The end of the run of non-decreasing times that starts at @i. */
static size_t run_end(const struct ord_ent *v, size_t i, size_t n)
{
	while (i + 1 < n && v[i + 1].time >= v[i].time)
		i++;
	return i + 1;
}

/* Merge @a (@na entries) and @b (@nb), each in order, into @to; on equal
 * times @a's entry first: @a arrived earlier. */
static void merge(const struct ord_ent *a, size_t na, const struct ord_ent *b,
		  size_t nb, struct ord_ent *to)
{
	size_t i = 0, j = 0, k = 0;

	while (i < na && j < nb)
		to[k++] = b[j].time < a[i].time ? b[j++] : a[i++];
	while (i < na)
		to[k++] = a[i++];
	while (j < nb)
		to[k++] = b[j++];
}

/* One pass of a natural merge sort: each two neighbouring runs of @from
 * merged into @to. Returns the runs there were (1: @from was in order
 * and @to is its copy). */
static size_t merge_pass(const struct ord_ent *from, struct ord_ent *to, size_t n)
{
	size_t i = 0, mid, end, runs = 0;

	while (i < n) {
		mid = run_end(from, i, n);
		end = mid < n ? run_end(from, mid, n) : n;
		merge(from + i, mid - i, from + mid, end - mid, to + i);
		runs += 1 + (mid < n);
		i = end;
	}
	return runs;
}

/*
 * Sort the arrivals [sorted, n) and merge them into the ordered part. A
 * stable sort of the arrivals, then a merge that puts the queued records
 * first on equal times, gives (time, arrival) order: what the heap gave.
 */
static int settle(struct order *o)
{
	struct ord_ent *v, *w, *t;
	size_t p, a, i, j, k;

	if (o->sorted == o->n)
		return 0;
	/* What was popped goes: the queued part moves to the front. */
	if (o->head) {
		memmove(o->ents, o->ents + o->head, (o->n - o->head) * sizeof(*o->ents));
		o->sorted -= o->head;
		o->n -= o->head;
		o->head = 0;
	}
	p = o->sorted;
	a = o->n - p;
	v = o->ents + p;
	if (run_end(v, 0, a) < a) {
		if (ensure_mem((void **)&o->tmp, &o->cap_tmp, sizeof(*o->tmp), a))
			return -ENOMEM;
		/* Passes between the two arrays until one run is left;
		 * the sorted arrivals end in v or in o->tmp. */
		w = o->tmp;
		while (merge_pass(v, w, a) > 2) {
			t = v;
			v = w;
			w = t;
		}
		v = w;
	}
	if (p && v[0].time < o->ents[p - 1].time) {
		/* Merge from the back; queued records at or before the
		 * arrivals' first stay where they are. */
		if (v == o->ents + p) {
			if (ensure_mem((void **)&o->tmp, &o->cap_tmp, sizeof(*o->tmp), a))
				return -ENOMEM;
			memcpy(o->tmp, v, a * sizeof(*v));
			v = o->tmp;
		}
		i = p;
		j = a;
		k = p + a;
		while (j) {
			if (i && o->ents[i - 1].time > v[j - 1].time)
				o->ents[--k] = o->ents[--i];
			else
				o->ents[--k] = v[--j];
		}
	} else if (v != o->ents + p) {
		memcpy(o->ents + p, v, a * sizeof(*v));
	}
	o->sorted = o->n;
	return 0;
}

/* perf's ordered_events flushes half its queue when memory runs short
 * (OE_FLUSH__HALF in tools/perf/util/ordered-events.c); copies are
 * bounded the same way. */
int ord_over_budget(struct order *o, u64 *limit)
{
	int err;

	if (o->owned_bytes <= o->max_owned || o->head == o->n)
		return 0;
	if ((err = settle(o)))
		return err;
	*limit = o->ents[o->head].time + (o->max_time - o->ents[o->head].time) / 2;
	return 1;
}

int ord_pop(struct order *o, u64 limit, struct ord_ent *out)
{
	int err;

	if (o->head == o->n)
		return 0;
	if ((err = settle(o)))
		return err;
	if (o->ents[o->head].time > limit)
		return 0;
	*out = o->ents[o->head++];
	if (o->head == o->n)
		o->head = o->sorted = o->n = 0;
	if (out->time > o->flushed_upto)
		o->flushed_upto = out->time;
	return 1;
}

void ord_done(struct order *o, struct ord_ent *e)
{
	if (e->owned) {
		o->owned_bytes -= hdr_size(e->hdr);
		free((void *)e->hdr);
		e->owned = false;
	}
}

u64 ord_min_offset(const struct order *o)
{
	u64 m = UINT64_MAX;
	size_t i;

	/* Linear, but only called every few MB of input. */
	for (i = o->head; i < o->n; i++)
		if (!o->ents[i].owned && o->ents[i].offset < m)
			m = o->ents[i].offset;
	return m;
}
