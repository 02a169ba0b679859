// SPDX-License-Identifier: GPL-2.0
/*
 * Round-based time ordering (see order.h). Equal timestamps keep arrival
 * order, as perf's ordered_events queue does.
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
}

void ord_free(struct order *o)
{
	size_t i;

	for (i = 0; i < o->n; i++)
		if (o->heap[i].owned)
			free((void *)o->heap[i].hdr);
	free(o->heap);
	ord_init(o);
}

static bool ent_less(const struct ord_ent *a, const struct ord_ent *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

int ord_push(struct order *o, const struct rd_rec *rec, u64 time)
{
	struct ord_ent e = { time, o->seq++, rec->hdr, rec->offset, false };
	size_t i;
	int err;

	err = ensure_mem((void **)&o->heap, &o->cap, sizeof(*o->heap), o->n + 1);
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
	i = o->n++;
	while (i && ent_less(&e, &o->heap[(i - 1) / 2])) {
		o->heap[i] = o->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	o->heap[i] = e;
	return 0;
}

u64 ord_round(struct order *o)
{
	u64 limit = o->round_limit;

	o->round_limit = o->max_time;
	return limit;
}

/* perf's ordered_events flushes half its queue when memory runs short
 * (OE_FLUSH__HALF in tools/perf/util/ordered-events.c); copies are
 * bounded the same way. */
bool ord_over_budget(const struct order *o, u64 *limit)
{
	if (o->owned_bytes <= ORD_MAX_OWNED || !o->n)
		return false;
	*limit = o->heap[0].time + (o->max_time - o->heap[0].time) / 2;
	return true;
}

int ord_pop(struct order *o, u64 limit, struct ord_ent *out)
{
	struct ord_ent last;
	size_t i = 0, c;

	if (!o->n || o->heap[0].time > limit)
		return 0;
	*out = o->heap[0];
	last = o->heap[--o->n];
	for (;;) {
		c = 2 * i + 1;
		if (c >= o->n)
			break;
		if (c + 1 < o->n && ent_less(&o->heap[c + 1], &o->heap[c]))
			c++;
		if (!ent_less(&o->heap[c], &last))
			break;
		o->heap[i] = o->heap[c];
		i = c;
	}
	if (o->n)
		o->heap[i] = last;
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
	for (i = 0; i < o->n; i++)
		if (!o->heap[i].owned && o->heap[i].offset < m)
			m = o->heap[i].offset;
	return m;
}
