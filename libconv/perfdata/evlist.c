// SPDX-License-Identifier: GPL-2.0
/*
 * The event list (see evlist.h): evsels from attrs, where ids sit in
 * records, and the sample id -> evsel map (an htab, common/hash.h).
 * Layout facts: docs/perf-data-format.md §1.2.
 */
#include "evlist.h"

#include <errno.h>
#include <stdlib.h>

#include "common/hash.h"

/* Entry of the id table. */
struct id_ent {
	u64 hash;
	u64 id;
	u32 idx;
};

static bool id_eq(const void *ent, const void *key)
{
	return ((const struct id_ent *)ent)->id == *(const u64 *)key;
}

void rd_evlist_init(struct rd *rd)
{
	rd->same_sample_type = true;
	htab_init(&rd->ids, sizeof(struct id_ent), 64);
}

void rd_evlist_free(struct rd *rd)
{
	free(rd->evsels);
	rd->evsels = NULL;
	rd->nr_evsels = rd->cap_evsels = 0;
	htab_free(&rd->ids);
}

/* Where the id sits in samples and in sample_id trailers
 * (__perf_evsel__calc_id_pos/__calc_is_pos, tools/perf/util/evsel.c). */
static void evsel_calc_pos(struct rd_evsel *ev)
{
	u64 t = ev->attr.sample_type;
	int pos;

	if (t & PERF_SAMPLE_IDENTIFIER) {
		ev->id_pos = 0;
		ev->is_pos = 1;
	} else if (t & PERF_SAMPLE_ID) {
		pos = 0;
		pos += !!(t & PERF_SAMPLE_IP);
		pos += !!(t & PERF_SAMPLE_TID);
		pos += !!(t & PERF_SAMPLE_TIME);
		pos += !!(t & PERF_SAMPLE_ADDR);
		ev->id_pos = pos;
		pos = 1;
		pos += !!(t & PERF_SAMPLE_CPU);
		pos += !!(t & PERF_SAMPLE_STREAM_ID);
		ev->is_pos = pos;
	} else {
		ev->id_pos = -1;
		ev->is_pos = -1;
	}
	ev->id_hdr_size = 0;
	if (ev->attr.sample_id_all)
		ev->id_hdr_size = 8 * __builtin_popcountll(t &
			(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
			 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
			 PERF_SAMPLE_IDENTIFIER));
}

/* Add an evsel from @len attr bytes (copied zero-extended; a bigger attr
 * from a newer perf is cut, not rejected: docs/perf-data-format.md §1.2). */
int rd_add_evsel(struct rd *rd, const u8 *attr, size_t len)
{
	struct rd_evsel *ev;
	int err;

	err = ensure_mem((void **)&rd->evsels, &rd->cap_evsels,
			 sizeof(*rd->evsels), rd->nr_evsels + 1);
	if (err)
		return err;
	ev = &rd->evsels[rd->nr_evsels++];
	memset(ev, 0, sizeof(*ev));
	memcpy(&ev->attr, attr, len < sizeof(ev->attr) ? len : sizeof(ev->attr));
	evsel_calc_pos(ev);
	ev->name = "";
	if (rd->nr_evsels > 1 &&
	    ev->attr.sample_type != rd->evsels[0].attr.sample_type)
		rd->same_sample_type = false;
	return 0;
}

int rd_add_id(struct rd *rd, u64 id, u32 idx)
{
	u64 h = hash_mix(id);
	struct id_ent *e;

	if (!id)
		return 0; /* id 0 always means the first event */
	if (htab_reserve(&rd->ids))
		return -ENOMEM;
	e = htab_probe(&rd->ids, h, id_eq, &id);
	if (!htab_used(e)) {
		e->id = id;
		htab_claim(&rd->ids, e, h);
	}
	e->idx = idx;
	return 0;
}

struct rd_evsel *rd_evsel_by_id(struct rd *rd, u64 id)
{
	const struct id_ent *e;

	if (!id || !rd->ids.nr)
		return rd->nr_evsels ? &rd->evsels[0] : NULL;
	e = htab_find(&rd->ids, hash_mix(id), id_eq, &id);
	return e ? &rd->evsels[e->idx] : NULL;
}

/* Per evlist__event2evsel() (docs/perf-data-format.md §1.2). */
struct rd_evsel *rd_evsel_of(struct rd *rd, const struct perf_event_header *h)
{
	const struct rd_evsel *first;
	u16 size = hdr_size(h);
	u64 off;

	if (rd->nr_evsels <= 1)
		return rd->nr_evsels ? &rd->evsels[0] : NULL;
	first = &rd->evsels[0];
	if (hdr_type(h) == PERF_RECORD_SAMPLE) {
		if (first->id_pos < 0)
			return &rd->evsels[0];
		off = 8 + 8 * (u64)first->id_pos;
	} else {
		if (!first->attr.sample_id_all || first->is_pos < 0)
			return &rd->evsels[0];
		if ((u64)first->is_pos * 8 > (u64)size - 8)
			return NULL;
		off = size - 8 * (u64)first->is_pos;
	}
	if (off + 8 > size)
		return NULL;
	return rd_evsel_by_id(rd, get_u64((const u8 *)h + off));
}
