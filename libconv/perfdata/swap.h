/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf.data of the other byte order (magic bytes "2ELIFREP"): converted
 * to native byte order up front, in place, in the reader's private copy
 * (rd->mem_owned), so the rest of the reader sees a native file.
 * Reference: docs/perf-data-format.md §1.1 ("Swapping"), perf's
 * perf_event__swap_ops[] and perf_event__attr_swap (tools/perf/util/
 * session.c) and perf_file_header__read (header.c).
 *
 * Only file layout is converted; pipe layout is refused by the reader.
 * Every write stays inside the copy: a lying size costs that record or
 * section (left partly swapped), never a write out of bounds.
 */
#ifndef PERFSPY_SWAP_H
#define PERFSPY_SWAP_H

#include "reader.h"

/* Make rd->mem a private writable copy (unmapping a file mapping) and
 * swap the file header, the attrs and their id arrays. 0 or -ENOMEM. */
int swap_file_head(struct rd *rd);

/* Swap the records in [@off, @end) of the copy. Needs the evsels and the
 * id table (built from the swapped attrs). 0, or -PERFSPY_E_UNSUPPORTED
 * for PERF_RECORD_COMPRESSED. */
int swap_records(struct rd *rd, u64 off, u64 end);

/* Swap the feature index at @index_off and the sections perfspy decodes. */
void swap_features(struct rd *rd, const u64 bits[4], u64 index_off);

#endif
