/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to reader.c and reader_feat.c; never installed. What the
 * container walk (reader.c) calls to create events and to decode the
 * feature sections and their pipe-mode records (reader_feat.c).
 */
#ifndef PERFSPY_READER_FEAT_H
#define PERFSPY_READER_FEAT_H

#include "reader.h"

/* Size of perf_event_attr version 0 (PERF_ATTR_SIZE_VER0). */
#define ATTR_VER0 64

/* perf's default name for an event nobody named (never NULL). */
const char *rd_default_name(struct rd *rd, const struct rd_evsel *ev);

/* Give every event that EVENT_DESC/EVENT_UPDATE did not name its default
 * name (again, once tracing data can name tracepoints). */
void rd_name_evsels(struct rd *rd);

/* Decode the payload of feature @bit (a feature section, or the body of
 * a pipe-mode HEADER_FEATURE record). 0, or -ENOMEM. */
int rd_process_feature(struct rd *rd, int bit, const u8 *p, size_t len);

/* File mode: the feature sections listed by the index at @index_off for
 * the set bits of @bits. 0, or -ENOMEM. */
int rd_read_features(struct rd *rd, const u64 bits[4], u64 index_off);

/* Tracing data (feature or pipe-mode record), taken once; an unreadable
 * blob only costs tracepoint names. 0, or -ENOMEM. */
int rd_parse_trace(struct rd *rd, const u8 *p, size_t len);

#endif
