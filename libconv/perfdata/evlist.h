/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event list of a perf.data file: the evsels its attrs declare
 * (HEADER_ATTR records in pipe mode) and the sample id -> evsel map, the
 * way perf's evlist keeps them (tools/perf/util/evlist.c). reader.c fills
 * it; reader.c, swap.c and record.c look events up in it. Private to
 * perfdata/; never installed. The fields live in struct rd (reader.h).
 */
#ifndef PERFSPY_EVLIST_H
#define PERFSPY_EVLIST_H

#include "reader.h"

/* Set up the empty list (rd_init) and release it (rd_close). */
void rd_evlist_init(struct rd *rd);
void rd_evlist_free(struct rd *rd);

/* Add an evsel from @len attr bytes (zero-extended or cut). 0 or -ENOMEM. */
int rd_add_evsel(struct rd *rd, const u8 *attr, size_t len);

/* Map sample id @id to evsel index @idx (a repeated id takes the later
 * index; id 0 always means the first event). 0 or -ENOMEM. */
int rd_add_id(struct rd *rd, u64 id, u32 idx);

/* The evsel of sample id @id: the first one for id 0 or when no ids are
 * known, NULL for an unknown id. */
struct rd_evsel *rd_evsel_by_id(struct rd *rd, u64 id);

/* Evsel for a sample/non-sample record, per evlist__event2evsel()
 * (docs/perf-data-format.md §1.2). NULL if the id matches no event. */
struct rd_evsel *rd_evsel_of(struct rd *rd, const struct perf_event_header *h);

#endif
